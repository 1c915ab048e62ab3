//! When the parts of a stream arrived: the first byte, the first and the last read that added
//! to the answer, and the longest wait between two reads that carried events.
//!
//! A fold reads its stream in two places, the Python path (a read whose frames the provider
//! handles) and the decoder's folding path (a read whose text is folded in Rust), so both
//! mark their reads on one [`ReadTimes`]. A read is marked when it arrives and when it was
//! handled; the folding path does both at once, since it handles a read within a microsecond
//! of getting it.

use std::sync::OnceLock;
use std::time::Instant;

/// `at` in seconds of one clock for the whole process (from its first call), so that times
/// taken in different places (the transport's reads, a fold's clock) can be compared.
#[must_use]
pub fn epoch_seconds(at: Instant) -> f64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    at.saturating_duration_since(*EPOCH.get_or_init(Instant::now))
        .as_secs_f64()
}

/// The arrival times a fold has seen, in seconds since the fold started.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadTimes {
    pub first_byte: Option<f64>,
    pub first_token: Option<f64>,
    pub last_token: Option<f64>,
    /// The longest wait between two reads that carried events: 0 after the first.
    pub largest_gap: Option<f64>,
    pub reads: u64,
    /// The arrival of the read being handled (the last one that arrived).
    current: Option<f64>,
    /// The arrival of the last read that carried an event.
    last_event: Option<f64>,
    /// The characters the fold may still keep, as it last said (`handled`) less what the
    /// folding path took since: a read that lowers it added to the answer.
    room: i64,
}

impl ReadTimes {
    /// No read yet, for a fold that may keep `room` more characters.
    #[must_use]
    pub fn new(room: i64) -> Self {
        ReadTimes {
            first_byte: None,
            first_token: None,
            last_token: None,
            largest_gap: None,
            reads: 0,
            current: None,
            last_event: None,
            room,
        }
    }

    /// The fold may keep `room` more characters, as it says when it starts on these times.
    pub fn follow(&mut self, room: i64) {
        self.room = room;
    }

    /// A read arrived at `at`.
    pub fn arrive(&mut self, at: f64) {
        self.first_byte.get_or_insert(at);
        self.current = Some(at);
        self.reads += 1;
    }

    /// The read that arrived last carried events (`events`; none for a comment or a piece of
    /// an event), and the fold may now keep `room` more characters: less than before means
    /// the read added text, reasoning or arguments to the answer.
    pub fn handled(&mut self, events: bool, room: i64) {
        let content = room < self.room;
        self.room = room;
        self.mark(events, content);
    }

    /// A read the folding path handled whole at `at`: it carried events (`events`), and
    /// `characters` of text went to the fold.
    pub fn folded(&mut self, at: f64, events: bool, characters: u64) {
        self.arrive(at);
        self.room = self
            .room
            .saturating_sub(i64::try_from(characters).unwrap_or(i64::MAX));
        self.mark(events, characters > 0);
    }

    fn mark(&mut self, events: bool, content: bool) {
        let Some(at) = self.current else {
            return;
        };
        // The same read handled in two parts (folded, then its other frames) is one read.
        if events && self.last_event != Some(at) {
            let gap = self.last_event.map_or(0.0, |previous| at - previous);
            if self.largest_gap.is_none_or(|longest| gap > longest) {
                self.largest_gap = Some(gap);
            }
            self.last_event = Some(at);
        }
        if content {
            self.first_token.get_or_insert(at);
            self.last_token = Some(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_read_in_both_paths() {
        let mut times = ReadTimes::new(100);
        // The role chunk: events, no text.
        times.arrive(0.010);
        times.handled(true, 100);
        // A keep-alive comment: no event.
        times.arrive(0.030);
        times.handled(false, 100);
        // Text through Python, then through the folding path.
        times.arrive(0.050);
        times.handled(true, 95);
        times.folded(0.120, true, 3);
        // The finish chunk, after the folded text: the room the fold gives counts that text.
        times.arrive(0.130);
        times.handled(true, 92);
        assert_eq!(times.first_byte, Some(0.010));
        assert_eq!(times.first_token, Some(0.050));
        assert_eq!(times.last_token, Some(0.120));
        // 0.050 -> 0.120; the comment at 0.030 carried no event, so 0.010 -> 0.050 is one gap.
        assert!(times
            .largest_gap
            .is_some_and(|gap| (gap - 0.070).abs() < 1e-12));
        assert_eq!(times.reads, 5);
    }

    #[test]
    fn nothing_read() {
        let times = ReadTimes::new(0);
        assert_eq!(
            (
                times.first_byte,
                times.first_token,
                times.last_token,
                times.largest_gap,
                times.reads
            ),
            (None, None, None, None, 0)
        );
    }

    #[test]
    fn one_read_handled_in_two_parts() {
        let mut times = ReadTimes::new(10);
        times.folded(0.005, true, 2);
        // The rest of the same read, handled by Python: the same arrival, no gap.
        times.handled(true, 6);
        assert_eq!(times.first_token, Some(0.005));
        assert_eq!(times.last_token, Some(0.005));
        assert_eq!(times.largest_gap, Some(0.0));
        assert_eq!(times.reads, 1);
    }
}
