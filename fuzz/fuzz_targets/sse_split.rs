//! Arbitrary bytes in arbitrary splits: the SSE decoder never panics, and any split decodes
//! exactly as the whole stream does (events, errors and their offsets, the final state).
#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use streamfold::sse::{decode_chunks, DEFAULT_MAX_EVENT_BYTES};

#[derive(Debug, Arbitrary)]
struct Input {
    /// Cut points, taken modulo the stream length.
    cuts: Vec<u16>,
    /// A small `max_event_bytes`, to reach the limit; none means the default.
    limit: Option<u8>,
    stream: Vec<u8>,
}

fuzz_target!(|input: Input| {
    let stream = &input.stream[..];
    let limit = input.limit.map_or(DEFAULT_MAX_EVENT_BYTES, usize::from);
    let whole = decode_chunks([stream], limit);

    let mut points: Vec<usize> = input
        .cuts
        .iter()
        .map(|&c| usize::from(c) % (stream.len() + 1))
        .collect();
    points.sort_unstable();
    let mut parts = Vec::with_capacity(points.len() + 1);
    let mut start = 0;
    for p in points {
        parts.push(&stream[start..p]);
        start = p;
    }
    parts.push(&stream[start..]);
    let split = decode_chunks(parts, limit);
    assert_eq!(split, whole);

    for frame in &whole.frames {
        match frame {
            Ok(event) => {
                assert!(event.data.chars().count() <= limit);
                assert!(!event.id.contains('\0'));
                assert!(!event.event.is_empty());
            }
            Err(streamfold::sse::SseError::EventTooLarge { offset, .. }) => {
                assert!(*offset <= stream.len() as u64);
            }
        }
    }
});
