//! Incremental decoder for `text/event-stream`, following the WHATWG HTML rules for
//! "interpreting an event stream" exactly.
//!
//! The decoder is fed arbitrary byte chunks and hands each dispatched event to a sink as
//! borrowed slices, so the caller (the Python binding) builds its objects straight from the
//! decoder's buffers. Field values are streamed into their destination buffer as they arrive:
//! there is no line buffer, so a 16 MiB `data:` line costs one 16 MiB buffer, not two.
//!
//! Bytes are decoded as UTF-8 per field value rather than per stream. That is the same as
//! decoding the stream first: every byte the line and field syntax looks at (CR, LF, `:`, space)
//! is ASCII, and an ASCII byte never continues a multi-byte sequence, so a split there cannot
//! change how the bytes around it decode (invalid sequences become U+FFFD either way).

use std::borrow::Cow;

pub mod encode;

/// UTF-8 decoding with U+FFFD for invalid sequences, as the WHATWG "UTF-8 decode" does.
/// Valid text (nearly all of it) takes the fast validating path; `from_utf8_lossy` alone walks
/// byte by byte.
pub fn decode_lossy(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Default cap on one event's data (and on any single field value): 16 MiB.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];
/// The longest field name the spec knows (`event`, `retry`); longer names are ignored early.
const MAX_KNOWN_FIELD_NAME: usize = 5;
/// A data buffer larger than this is freed after its event rather than kept for reuse.
const KEEP_DATA_CAPACITY: usize = 1 << 20;

/// One dispatched event, borrowing the decoder's buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventRef<'a> {
    /// The event type; `"message"` when the stream named none.
    pub event: &'a str,
    /// The data as received: UTF-8, except where the stream was not. Decode it with
    /// [`decode_lossy`] (invalid bytes become U+FFFD, as the spec says) when it is
    /// needed as text: the binding does so lazily, and parses JSON straight from these bytes.
    pub data: &'a [u8],
    /// The last event id at the time of dispatch (persists across events).
    pub id: &'a str,
    /// The `retry` field given inside this event's block, if any.
    pub retry: Option<u64>,
}

/// An owned event, for tests and for callers that keep events around.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub event: String,
    pub data: String,
    pub id: String,
    pub retry: Option<u64>,
}

impl From<EventRef<'_>> for Event {
    fn from(e: EventRef<'_>) -> Self {
        Event {
            event: e.event.to_owned(),
            data: decode_lossy(e.data).into_owned(),
            id: e.id.to_owned(),
            retry: e.retry,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SseError {
    /// An event's data (or one field value) grew past the configured limit. `offset` is the
    /// stream offset of the first byte beyond it; the event is dropped and decoding resumes
    /// with the next one.
    EventTooLarge { limit: usize, offset: u64 },
}

impl std::fmt::Display for SseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SseError::EventTooLarge { limit, offset } => write!(
                f,
                "event larger than max_event_bytes={limit} at byte offset {offset}; \
                 the rest of this event is discarded"
            ),
        }
    }
}

impl std::error::Error for SseError {}

/// What a decoder hands its sink, in stream order: an event, or an error where it happened.
pub type Frame<'a> = Result<EventRef<'a>, SseError>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Data,
    Event,
    Id,
    Retry,
    Ignored,
}

impl Field {
    fn from_name(name: &[u8]) -> Field {
        match name {
            b"data" => Field::Data,
            b"event" => Field::Event,
            b"id" => Field::Id,
            b"retry" => Field::Retry,
            _ => Field::Ignored,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineState {
    /// Nothing of the current line seen yet.
    Start,
    /// Reading the field name (before any colon); `name` holds what came so far.
    Name,
    /// Just after the colon: one leading space is still to be removed.
    AfterColon(Field),
    /// Reading the field value.
    Value(Field),
    /// A comment, or a field we will ignore whatever its value: skip to the line end.
    Discard,
}

#[derive(Debug)]
pub struct SseDecoder {
    max_event_bytes: usize,
    line: LineState,
    name: Vec<u8>,
    /// The value of an `event`, `id` or `retry` line (data goes straight to `data`).
    value: Vec<u8>,
    data: Vec<u8>,
    /// Data bytes of this block that the caller holds instead of `data` (see
    /// [`SseDecoder::hold_data`]): they count toward the limit like the others.
    held: usize,
    /// Any `data` field seen in this block: the spec's "data buffer is not empty".
    has_data: bool,
    event_type: EventType,
    /// The spec's "last event ID buffer": set by `id:` lines, committed at each blank line.
    id_buffer: String,
    /// The spec's "last event ID string": what events carry and reconnection would send.
    last_event_id: String,
    /// `retry` given within the current block.
    block_retry: Option<u64>,
    /// The reconnection time: the last valid `retry` of the whole stream.
    retry: Option<u64>,
    /// The current event overflowed: drop it at the next blank line.
    oversized: bool,
    /// The previous chunk ended with CR: an LF at the start of the next one is part of it.
    pending_cr: bool,
    stage: Stage,
    /// The first bytes, while they may still be a byte order mark.
    bom_held: Vec<u8>,
    /// Stream offset of the next byte to process, for error positions.
    offset: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Still looking at the first bytes for a byte order mark.
    Start,
    Body,
    /// `close()` was called; whether an unterminated event was discarded then.
    Closed {
        dropped_partial: bool,
    },
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_EVENT_BYTES)
    }
}

impl SseDecoder {
    pub fn new(max_event_bytes: usize) -> Self {
        SseDecoder {
            max_event_bytes,
            line: LineState::Start,
            name: Vec::with_capacity(MAX_KNOWN_FIELD_NAME),
            value: Vec::new(),
            data: Vec::new(),
            held: 0,
            has_data: false,
            event_type: EventType::default(),
            id_buffer: String::new(),
            last_event_id: String::new(),
            block_retry: None,
            retry: None,
            oversized: false,
            pending_cr: false,
            stage: Stage::Start,
            bom_held: Vec::with_capacity(BOM.len()),
            offset: 0,
        }
    }

    /// The last event id committed by a blank line (an `id:` of an unfinished block does not
    /// count yet).
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// The reconnection time in milliseconds: the last valid `retry` field of the stream.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    pub fn max_event_bytes(&self) -> usize {
        self.max_event_bytes
    }

    /// Whether `close()` discarded an event that was not terminated by a blank line.
    pub fn dropped_partial(&self) -> bool {
        matches!(
            self.stage,
            Stage::Closed {
                dropped_partial: true
            }
        )
    }

    /// Bytes fed so far.
    pub fn position(&self) -> u64 {
        self.offset + self.bom_held.len() as u64
    }

    pub fn is_closed(&self) -> bool {
        matches!(self.stage, Stage::Closed { .. })
    }

    /// Feed one chunk; every event it completes, and every error, goes to `sink` in stream
    /// order. An oversized event is reported where it overflowed and dropped; decoding
    /// resumes with the next event. Feeding a closed decoder does nothing.
    pub fn feed<F: FnMut(Frame<'_>)>(&mut self, chunk: &[u8], sink: &mut F) {
        match self.stage {
            Stage::Start => {
                let rest = self.strip_bom(chunk, sink);
                self.feed_body(rest, sink);
            }
            Stage::Body => self.feed_body(chunk, sink),
            Stage::Closed { .. } => {}
        }
    }

    /// Take a whole chunk as data without copying it, when the decoder is inside a `data:`
    /// line's value holding at least `min` data bytes and `chunk` holds no line end: then every
    /// byte of it is data, which `feed` would only append to its buffer. The caller keeps the
    /// chunk instead and puts it back into the event's data at the returned offset of the
    /// data buffer, when the next event is dispatched (the one this block makes); an error
    /// reported in between drops the block, and the chunk with it.
    ///
    /// `None` (nothing done: feed the chunk) when any of that does not hold, or when the chunk
    /// would take the event past the limit (`feed` then reports it where it happens).
    /// A big event read in small pieces is then found by one scan per piece and copied never.
    pub fn hold_data(&mut self, chunk: &[u8], min: usize) -> Option<usize> {
        if self.data.len() + self.held < min || !self.all_data(chunk) {
            return None;
        }
        self.held += chunk.len();
        self.offset += chunk.len() as u64;
        Some(self.data.len())
    }

    /// Feed a chunk that holds only data: inside a `data:` line's value, no line end in it,
    /// within the limit. Then it is appended to the data buffer and `true` returned; else
    /// nothing is done (`false`: feed the chunk).
    ///
    /// This is what [`SseDecoder::feed`] would do with such a chunk, minus the steps that find
    /// it out one by one. Small reads are mostly such chunks (a 1-64 byte read usually falls
    /// inside a payload of a few hundred bytes), and for them those steps were a good part of
    /// the cost of a read.
    pub fn append_data(&mut self, chunk: &[u8]) -> bool {
        if !self.all_data(chunk) {
            return false;
        }
        self.data.extend_from_slice(chunk);
        self.offset += chunk.len() as u64;
        true
    }

    /// Whether every byte of `chunk` is data of the open `data:` line, which holds it all
    /// within the limit: nothing in it can end the line, dispatch, or overflow.
    fn all_data(&self, chunk: &[u8]) -> bool {
        self.stage == Stage::Body
            && self.line == LineState::Value(Field::Data)
            && !self.oversized
            && !self.pending_cr
            && !chunk.is_empty()
            && self.data.len() + self.held + chunk.len() <= self.max_event_bytes
            && find_line_end(chunk).is_none()
    }

    /// End of input. Per the spec an event not closed by a blank line is discarded; whether that
    /// happened is reported by [`SseDecoder::dropped_partial`]. Nothing is ever dispatched here
    /// (the sink is for symmetry with the JSON-lines decoder). Closing twice does nothing.
    pub fn close<F: FnMut(Frame<'_>)>(&mut self, sink: &mut F) {
        if self.is_closed() {
            return;
        }
        if self.stage == Stage::Start {
            self.stage = Stage::Body;
            // 1 or 2 bytes of a would-be BOM are ordinary (invalid) content after all.
            let held = std::mem::take(&mut self.bom_held);
            self.feed_body(&held, sink);
        }
        let data_line_open = match self.line {
            LineState::AfterColon(Field::Data) | LineState::Value(Field::Data) => true,
            LineState::Name => self.name == b"data",
            _ => false,
        };
        let dropped_partial = !self.oversized && (self.has_data || data_line_open);
        self.reset_block();
        self.line = LineState::Start;
        self.name.clear();
        self.value = Vec::new();
        self.data = Vec::new();
        self.stage = Stage::Closed { dropped_partial };
    }

    /// Holds back the first bytes until they are known to be, or not to be, a BOM.
    fn strip_bom<'c, F: FnMut(Frame<'_>)>(&mut self, chunk: &'c [u8], sink: &mut F) -> &'c [u8] {
        let mut used = 0;
        while self.bom_held.len() < BOM.len() && used < chunk.len() {
            self.bom_held.push(chunk[used]);
            used += 1;
            if self.bom_held[..] != BOM[..self.bom_held.len()] {
                self.stage = Stage::Body;
                let held = std::mem::take(&mut self.bom_held);
                self.feed_body(&held, sink);
                return &chunk[used..];
            }
        }
        if self.bom_held.len() == BOM.len() {
            self.stage = Stage::Body;
            self.bom_held.clear();
            self.offset += BOM.len() as u64;
        }
        &chunk[used..]
    }

    fn feed_body<F: FnMut(Frame<'_>)>(&mut self, mut chunk: &[u8], sink: &mut F) {
        if self.pending_cr && !chunk.is_empty() {
            self.pending_cr = false;
            if let Some((&b'\n', tail)) = chunk.split_first() {
                chunk = tail;
                self.offset += 1;
            }
        }
        loop {
            if let Some(taken) = self.whole_block(chunk, sink) {
                chunk = &chunk[taken..];
                continue;
            }
            let Some(end) = find_line_end(chunk) else {
                break;
            };
            // The lines nearly every stream is made of, `data: …` and `event: …` seen whole,
            // skip the field-name buffer: the name is known from the prefix.
            let skip = match (self.line, known_field(&chunk[..end])) {
                (LineState::Start, Some((field, len))) => {
                    self.line = LineState::AfterColon(field);
                    len
                }
                _ => 0,
            };
            self.offset += skip as u64;
            self.line_content(&chunk[skip..end], sink);
            self.offset += (end - skip) as u64;
            self.line_end(sink);
            let terminator = if chunk[end] == b'\r' {
                match chunk.get(end + 1) {
                    Some(b'\n') => 2,
                    Some(_) => 1,
                    None => {
                        self.pending_cr = true;
                        1
                    }
                }
            } else {
                1
            };
            self.offset += terminator as u64;
            chunk = &chunk[end + terminator..];
        }
        self.line_content(chunk, sink);
        self.offset += chunk.len() as u64;
    }

    /// Bytes of the current line (no line terminator among them), starting at `self.offset`.
    fn line_content<F: FnMut(Frame<'_>)>(&mut self, mut bytes: &[u8], sink: &mut F) {
        let mut at = self.offset;
        while !bytes.is_empty() {
            match self.line {
                LineState::Start | LineState::Name => {
                    let colon = memchr::memchr(b':', bytes);
                    if colon == Some(0) && self.line == LineState::Start {
                        self.line = LineState::Discard; // a comment
                        return;
                    }
                    let name = &bytes[..colon.unwrap_or(bytes.len())];
                    if self.name.len() + name.len() > MAX_KNOWN_FIELD_NAME {
                        // No field the spec knows has a name this long.
                        self.line = LineState::Discard;
                        return;
                    }
                    self.name.extend_from_slice(name);
                    let Some(colon) = colon else {
                        self.line = LineState::Name;
                        return;
                    };
                    self.line = match Field::from_name(&self.name) {
                        Field::Ignored => LineState::Discard,
                        field => LineState::AfterColon(field),
                    };
                    bytes = &bytes[colon + 1..];
                    at += colon as u64 + 1;
                }
                LineState::AfterColon(field) => {
                    if bytes[0] == b' ' {
                        bytes = &bytes[1..];
                        at += 1;
                    }
                    self.line = LineState::Value(field);
                }
                LineState::Value(field) => {
                    self.append_value(field, bytes, at, sink);
                    return;
                }
                LineState::Discard => return,
            }
        }
    }

    /// `at` is the stream offset of `bytes[0]`.
    fn append_value<F: FnMut(Frame<'_>)>(
        &mut self,
        field: Field,
        bytes: &[u8],
        at: u64,
        sink: &mut F,
    ) {
        if self.oversized {
            self.line = LineState::Discard;
            return;
        }
        let (buffer, held) = if field == Field::Data {
            (&mut self.data, self.held)
        } else {
            (&mut self.value, 0)
        };
        let room = self.max_event_bytes.saturating_sub(buffer.len() + held);
        if bytes.len() > room {
            self.overflow(at + room as u64, sink);
            return;
        }
        buffer.extend_from_slice(bytes);
    }

    /// The current event broke the limit at stream offset `offset`: report it, drop the event.
    #[cold]
    fn overflow<F: FnMut(Frame<'_>)>(&mut self, offset: u64, sink: &mut F) {
        sink(Err(SseError::EventTooLarge {
            limit: self.max_event_bytes,
            offset,
        }));
        self.oversized = true;
        self.line = LineState::Discard;
        // Release the memory, not just the length: the limit bounds what the decoder holds.
        self.data = Vec::new();
        self.held = 0;
        self.value = Vec::new();
    }

    fn line_end<F: FnMut(Frame<'_>)>(&mut self, sink: &mut F) {
        let state = std::mem::replace(&mut self.line, LineState::Start);
        match state {
            LineState::Start => self.dispatch(sink),
            LineState::Name => {
                // A line without a colon: the whole line is the name, the value is empty.
                let field = Field::from_name(&self.name);
                self.value.clear();
                self.apply(field, sink);
            }
            LineState::AfterColon(field) | LineState::Value(field) => self.apply(field, sink),
            LineState::Discard => {}
        }
        self.name.clear();
        self.value.clear();
    }

    fn apply<F: FnMut(Frame<'_>)>(&mut self, field: Field, sink: &mut F) {
        match field {
            Field::Data => {
                self.has_data = true;
                if self.oversized {
                    return;
                }
                // The LF ends up inside the data unless it is the last one, which dispatch
                // removes: only a full buffer followed by more data breaks the limit.
                if self.data.len() + self.held > self.max_event_bytes {
                    self.overflow(self.offset, sink);
                } else {
                    self.data.push(b'\n');
                }
            }
            Field::Event => self.event_type.set(&self.value),
            Field::Id => {
                if !self.value.contains(&0) {
                    self.id_buffer.clear();
                    self.id_buffer.push_str(&decode_lossy(&self.value));
                }
            }
            Field::Retry => {
                if !self.value.is_empty() && self.value.iter().all(u8::is_ascii_digit) {
                    let ms = self.value.iter().fold(0u64, |acc, d| {
                        acc.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                    });
                    self.retry = Some(ms);
                    self.block_retry = Some(ms);
                }
            }
            Field::Ignored => {}
        }
    }

    /// A block that lies whole in `chunk`, made of one `data:` line and at most one `event:`
    /// line (either order) and ended by a blank line: how nearly every provider sends its
    /// events. It is dispatched straight from the chunk, its data never copied into the data
    /// buffer. Returns the bytes it took, or `None`, having changed nothing, for any other
    /// shape (or a CR at the chunk's end), which the line-by-line path then reads.
    fn whole_block<F: FnMut(Frame<'_>)>(&mut self, chunk: &[u8], sink: &mut F) -> Option<usize> {
        // A few dozen bytes rarely hold a whole block: small reads would mostly scan in vain.
        if chunk.len() < SHORT_SCAN
            || self.line != LineState::Start
            || self.has_data
            || self.oversized
        {
            return None;
        }
        let (mut at, mut data, mut event) = (0, None, None);
        loop {
            let rest = &chunk[at..];
            // The blank line that ends a block is found without a scan.
            let end = if matches!(rest.first(), Some(b'\n' | b'\r')) {
                0
            } else {
                find_line_end(rest)?
            };
            let next = at
                + end
                + match rest.get(end..=end + 1) {
                    Some(b"\r\n") => 2,
                    Some(_) => 1,
                    None if rest[end] == b'\n' => 1,
                    None => return None, // a CR last: the next chunk may hold its LF
                };
            let line = &rest[..end];
            if line.is_empty() {
                let data = data?;
                if let Some(name) = event {
                    self.event_type.set(name);
                }
                self.dispatch_with(Some(data), sink);
                self.offset += next as u64;
                return Some(next);
            }
            let (field, prefix) = known_field(line)?;
            let mut value = &line[prefix..];
            if let Some(tail) = value.strip_prefix(b" ") {
                value = tail;
            }
            if value.len() > self.max_event_bytes {
                return None; // the line-by-line path reports it where it overflows
            }
            let slot = if field == Field::Data {
                &mut data
            } else {
                &mut event
            };
            if slot.replace(value).is_some() {
                return None; // a second line of the same field
            }
            at = next;
        }
    }

    fn dispatch<F: FnMut(Frame<'_>)>(&mut self, sink: &mut F) {
        self.dispatch_with(None, sink);
    }

    /// The spec's dispatch at a blank line. The event's data is `whole` when the block was
    /// read whole from the chunk (see `whole_block`), else the data buffer.
    fn dispatch_with<F: FnMut(Frame<'_>)>(&mut self, whole: Option<&[u8]>, sink: &mut F) {
        // Step 1: the last event id is committed at every blank line, dispatch or not.
        if self.last_event_id != self.id_buffer {
            self.last_event_id.clone_from(&self.id_buffer);
        }
        let data = match whole {
            Some(data) => Some(data),
            None if self.has_data && !self.oversized => {
                if self.data.last() == Some(&b'\n') {
                    self.data.pop();
                }
                Some(&self.data[..])
            }
            None => None,
        };
        if let Some(data) = data {
            sink(Ok(EventRef {
                event: self.event_type.name(),
                data,
                id: &self.last_event_id,
                retry: self.block_retry,
            }));
        }
        self.reset_block();
    }

    fn reset_block(&mut self) {
        self.data.clear();
        if self.data.capacity() > KEEP_DATA_CAPACITY {
            // Do not keep a huge buffer alive after one big event.
            self.data = Vec::new();
        }
        self.held = 0;
        self.has_data = false;
        self.event_type.reset();
        self.block_retry = None;
        self.oversized = false;
    }
}

/// The spec's "event type buffer". Its text is kept when the buffer is reset, so that the next
/// block naming the same type (the usual case) costs a compare, not a decode.
#[derive(Debug, Default)]
struct EventType {
    text: String,
    set: bool,
}

impl EventType {
    /// "Set the event type buffer to the field value."
    fn set(&mut self, value: &[u8]) {
        if value != self.text.as_bytes() {
            self.text.clear();
            self.text.push_str(&decode_lossy(value));
        }
        self.set = !self.text.is_empty();
    }

    fn reset(&mut self) {
        self.set = false;
    }

    /// The type an event dispatched now has: `message` when the buffer is empty.
    fn name(&self) -> &str {
        if self.set {
            &self.text
        } else {
            "message"
        }
    }
}

/// The field of a line that starts with `data:` or `event:`, and the length of that prefix.
fn known_field(line: &[u8]) -> Option<(Field, usize)> {
    if line.starts_with(b"data:") {
        Some((Field::Data, 5))
    } else if line.starts_with(b"event:") {
        Some((Field::Event, 6))
    } else {
        None
    }
}

/// Below this many bytes a word-at-a-time scan beats `memchr2`, whose setup dominates there
/// (reads of a few dozen bytes are common: proxies and slow token streams deliver them).
const SHORT_SCAN: usize = 64;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The index of the first CR or LF in `bytes`.
///
/// Short inputs are the common case (reads of a few dozen bytes, or the rest of a line), and
/// for them every step counts: 16 bytes at a time with SSE2, then 8 with a word, the last block
/// or word overlapping the one before it rather than finishing byte by byte.
fn find_line_end(bytes: &[u8]) -> Option<usize> {
    let len = bytes.len();
    if len >= SHORT_SCAN {
        memchr::memchr2(b'\r', b'\n', bytes)
    } else if len >= 16 {
        find_line_end_16(bytes)
    } else if len >= 8 {
        // The second word overlaps the first: a line end found there lies past the first
        // word, which had none.
        line_end_in_word(bytes, 0).or_else(|| line_end_in_word(bytes, len - 8))
    } else {
        bytes.iter().position(|&b| b == b'\r' || b == b'\n')
    }
}

/// [`find_line_end`] for 16 bytes or more: blocks of 16, the last one ending at the end.
#[cfg(target_arch = "x86_64")]
fn find_line_end_16(bytes: &[u8]) -> Option<usize> {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    // One bit per byte that is CR or LF, lowest bit first.
    let hits = |block: &[u8; 16]| -> u32 {
        // SAFETY: SSE2 is part of the x86-64 baseline; the load reads the 16 bytes of `block`.
        #[allow(unused_unsafe)]
        unsafe {
            let v = _mm_loadu_si128(block.as_ptr().cast());
            #[allow(clippy::cast_possible_wrap)]
            let (lf, cr) = (_mm_set1_epi8(b'\n' as i8), _mm_set1_epi8(b'\r' as i8));
            // 16 bits, one per byte: the cast keeps them all.
            #[allow(clippy::cast_sign_loss)]
            let mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, lf), _mm_cmpeq_epi8(v, cr)))
                as u32;
            mask
        }
    };
    let last = bytes.len().checked_sub(16)?;
    let mut at = 0;
    while at < last {
        let block = bytes[at..].first_chunk::<16>()?;
        let mask = hits(block);
        if mask != 0 {
            return Some(at + mask.trailing_zeros() as usize);
        }
        at += 16;
    }
    // Overlapping the blocks before it, which held no line end.
    let mask = hits(bytes[last..].first_chunk::<16>()?);
    (mask != 0).then(|| last + mask.trailing_zeros() as usize)
}

#[cfg(not(target_arch = "x86_64"))]
fn find_line_end_16(bytes: &[u8]) -> Option<usize> {
    let last = bytes.len().checked_sub(8)?;
    let mut at = 0;
    while at < last {
        if let Some(found) = line_end_in_word(bytes, at) {
            return Some(found);
        }
        at += 8;
    }
    line_end_in_word(bytes, last)
}

/// The first CR or LF among the 8 bytes at `at`, as an index into `bytes`.
#[inline]
fn line_end_in_word(bytes: &[u8], at: usize) -> Option<usize> {
    let word = bytes.get(at..)?.first_chunk::<8>()?;
    let w = u64::from_le_bytes(*word);
    // A byte of `w ^ pattern` is zero where `w` has that byte. The classic zero-byte test may
    // also flag bytes above a real zero (borrows), never below: the lowest flag is exact, and
    // that is the one we take.
    let (lf, cr) = (w ^ (ONES * u64::from(b'\n')), w ^ (ONES * u64::from(b'\r')));
    let found = ((lf.wrapping_sub(ONES) & !lf) | (cr.wrapping_sub(ONES) & !cr)) & HIGH;
    (found != 0).then(|| at + (found.trailing_zeros() / 8) as usize)
}

/// Everything a stream decodes to, in owned form (tests, fuzzing, the Rust bench).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// Events and errors in stream order.
    pub frames: Vec<Result<Event, SseError>>,
    pub dropped_partial: bool,
    pub last_event_id: String,
    pub retry: Option<u64>,
}

impl Decoded {
    /// The outcome of a closed decoder whose sink collected `frames`.
    pub fn closed(dec: &SseDecoder, frames: Vec<Result<Event, SseError>>) -> Self {
        Decoded {
            frames,
            dropped_partial: dec.dropped_partial(),
            last_event_id: dec.last_event_id().to_owned(),
            retry: dec.retry(),
        }
    }
}

/// Decode a stream given as consecutive chunks, then close it.
pub fn decode_chunks<'a, I>(chunks: I, max_event_bytes: usize) -> Decoded
where
    I: IntoIterator<Item = &'a [u8]>,
{
    let mut dec = SseDecoder::new(max_event_bytes);
    let mut frames = Vec::new();
    let mut sink = |f: Frame<'_>| frames.push(f.map(Event::from));
    for chunk in chunks {
        dec.feed(chunk, &mut sink);
    }
    dec.close(&mut sink);
    Decoded::closed(&dec, frames)
}

/// Decode a whole stream at once into owned events and errors.
pub fn decode_all(input: &[u8], max_event_bytes: usize) -> (Vec<Event>, Vec<SseError>) {
    let mut events = Vec::new();
    let mut errors = Vec::new();
    for frame in decode_chunks([input], max_event_bytes).frames {
        match frame {
            Ok(e) => events.push(e),
            Err(e) => errors.push(e),
        }
    }
    (events, errors)
}

#[cfg(test)]
mod tests;
