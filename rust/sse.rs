//! Incremental decoder for `text/event-stream`, following the WHATWG HTML rules for
//! "interpreting an event stream" exactly.
//!
//! The decoder is fed arbitrary byte chunks and hands each dispatched event to a sink as
//! borrowed slices, so the caller (the Python binding) builds its objects straight from the
//! decoder's buffers. Field values are streamed into their destination buffer as they arrive:
//! there is no line buffer, so a 16 MiB `data:` line costs one 16 MiB buffer, not two.

use std::borrow::Cow;

/// Default cap on one event's data (and on any single field value): 16 MiB.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];
/// The longest field name the spec knows (`event`, `retry`); longer names are ignored early.
const MAX_KNOWN_FIELD_NAME: usize = 5;

/// One dispatched event, borrowing the decoder's buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventRef<'a> {
    /// The event type; `"message"` when the stream named none.
    pub event: &'a str,
    pub data: &'a str,
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
            data: e.data.to_owned(),
            id: e.id.to_owned(),
            retry: e.retry,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseError {
    /// An event's data (or one field value) grew past the configured limit.
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
    /// Reading the field name (before any colon).
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
    value: Vec<u8>,
    data: Vec<u8>,
    /// Any `data` field seen in this block (an empty `data:` line still makes an event).
    has_data: bool,
    event_type: String,
    last_event_id: String,
    /// `retry` given within the current block.
    block_retry: Option<u64>,
    /// The reconnection time: the last valid `retry` of the whole stream.
    retry: Option<u64>,
    /// The current event overflowed: drop it at the next blank line.
    oversized: bool,
    /// The previous chunk ended with CR: an LF at the start of the next one is part of it.
    pending_cr: bool,
    /// Still looking at the first bytes for a byte order mark.
    bom_checking: bool,
    bom_held: Vec<u8>,
    /// Bytes consumed so far, for error positions.
    offset: u64,
    /// After `close()`: whether an unterminated event was discarded.
    dropped_partial: bool,
    closed: bool,
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
            name: Vec::new(),
            value: Vec::new(),
            data: Vec::new(),
            has_data: false,
            event_type: String::new(),
            last_event_id: String::new(),
            block_retry: None,
            retry: None,
            oversized: false,
            pending_cr: false,
            bom_checking: true,
            bom_held: Vec::with_capacity(3),
            offset: 0,
            dropped_partial: false,
            closed: false,
        }
    }

    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    pub fn max_event_bytes(&self) -> usize {
        self.max_event_bytes
    }

    /// Whether `close()` discarded an event that was not terminated by a blank line.
    pub fn dropped_partial(&self) -> bool {
        self.dropped_partial
    }

    /// Bytes fed so far.
    pub fn position(&self) -> u64 {
        self.offset
    }

    /// Feed one chunk; every event completed by it goes to `sink`, in order. On an oversized
    /// event the events before it have been delivered, the error is returned, and decoding
    /// resumes at the next event (the oversized one is dropped).
    pub fn feed<F: FnMut(EventRef<'_>)>(&mut self, chunk: &[u8], sink: &mut F) -> Result<(), SseError> {
        let mut first_error = None;
        let mut rest = chunk;
        if self.bom_checking {
            rest = self.strip_bom(rest, sink, &mut first_error);
        }
        self.feed_body(rest, sink, &mut first_error);
        first_error.map_or(Ok(()), Err)
    }

    /// End of input. Per the spec an event not closed by a blank line is discarded; whether that
    /// happened is reported by [`SseDecoder::dropped_partial`]. Returns the events dispatched
    /// while flushing (always none for SSE, kept for symmetry with the JSON-lines decoder).
    pub fn close<F: FnMut(EventRef<'_>)>(&mut self, sink: &mut F) -> Result<(), SseError> {
        let mut first_error = None;
        if self.bom_checking {
            self.bom_checking = false;
            // 1 or 2 bytes of a would-be BOM are ordinary (invalid) content after all.
            let held = std::mem::take(&mut self.bom_held);
            self.feed_body(&held, sink, &mut first_error);
        }
        let data_line_open = match self.line {
            LineState::AfterColon(Field::Data) | LineState::Value(Field::Data) => true,
            LineState::Name => self.name == b"data",
            _ => false,
        };
        self.dropped_partial = self.has_data || data_line_open;
        self.reset_block();
        self.line = LineState::Start;
        self.name.clear();
        self.value.clear();
        self.closed = true;
        first_error.map_or(Ok(()), Err)
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    fn strip_bom<'c, F: FnMut(EventRef<'_>)>(
        &mut self,
        chunk: &'c [u8],
        sink: &mut F,
        err: &mut Option<SseError>,
    ) -> &'c [u8] {
        let mut used = 0;
        while self.bom_held.len() < 3 && used < chunk.len() {
            self.bom_held.push(chunk[used]);
            used += 1;
            if self.bom_held[..] != BOM[..self.bom_held.len()] {
                // Not a BOM: what we held is ordinary content.
                self.bom_checking = false;
                let held = std::mem::take(&mut self.bom_held);
                self.feed_body(&held, sink, err);
                return &chunk[used..];
            }
        }
        if self.bom_held.len() == 3 {
            self.bom_checking = false;
            self.bom_held.clear();
            self.offset += 3;
        }
        // Otherwise the chunk ended inside what may still be a BOM: the held bytes are counted
        // once they are dropped or processed.
        &chunk[used..]
    }

    fn feed_body<F: FnMut(EventRef<'_>)>(&mut self, mut chunk: &[u8], sink: &mut F, err: &mut Option<SseError>) {
        if self.pending_cr && !chunk.is_empty() {
            self.pending_cr = false;
            if let Some((&b'\n', tail)) = chunk.split_first() {
                chunk = tail;
                self.offset += 1;
            }
        }
        while !chunk.is_empty() {
            match memchr::memchr2(b'\r', b'\n', chunk) {
                Some(end) => {
                    self.line_content(&chunk[..end], err);
                    self.offset += end as u64;
                    let mut consumed = end + 1;
                    if chunk[end] == b'\r' {
                        match chunk.get(end + 1) {
                            Some(b'\n') => consumed += 1,
                            Some(_) => {}
                            None => self.pending_cr = true,
                        }
                    }
                    self.offset += (consumed - end) as u64;
                    self.line_end(sink);
                    chunk = &chunk[consumed..];
                }
                None => {
                    self.line_content(chunk, err);
                    self.offset += chunk.len() as u64;
                    chunk = &[];
                }
            }
        }
    }

    /// Bytes of the current line (no line terminator among them).
    fn line_content(&mut self, mut bytes: &[u8], err: &mut Option<SseError>) {
        let (start, len) = (self.offset, bytes.len());
        while !bytes.is_empty() {
            match self.line {
                LineState::Start | LineState::Name => {
                    if let Some(colon) = memchr::memchr(b':', bytes) {
                        if self.line == LineState::Start && colon == 0 {
                            self.line = LineState::Discard; // a comment
                            return;
                        }
                        self.name.extend_from_slice(&bytes[..colon]);
                        let field = Field::from_name(&self.name);
                        self.line = if field == Field::Ignored {
                            LineState::Discard
                        } else {
                            LineState::AfterColon(field)
                        };
                        bytes = &bytes[colon + 1..];
                    } else {
                        self.name.extend_from_slice(bytes);
                        // No known field name is this long: nothing on this line can matter.
                        self.line = if self.name.len() > MAX_KNOWN_FIELD_NAME {
                            LineState::Discard
                        } else {
                            LineState::Name
                        };
                        return;
                    }
                }
                LineState::AfterColon(field) => {
                    if bytes[0] == b' ' {
                        bytes = &bytes[1..];
                    }
                    self.line = LineState::Value(field);
                }
                LineState::Value(field) => {
                    let at = start + (len - bytes.len()) as u64;
                    self.append_value(field, bytes, at, err);
                    return;
                }
                LineState::Discard => return,
            }
        }
    }

    /// `at` is the stream offset of `bytes[0]`.
    fn append_value(&mut self, field: Field, bytes: &[u8], at: u64, err: &mut Option<SseError>) {
        match field {
            Field::Data => {
                if self.oversized {
                    return;
                }
                if self.data.len() + bytes.len() > self.max_event_bytes {
                    self.overflow(at, self.data.len(), err);
                    return;
                }
                self.data.extend_from_slice(bytes);
            }
            Field::Event | Field::Id | Field::Retry => {
                if self.value.len() + bytes.len() > self.max_event_bytes {
                    self.overflow(at, self.value.len(), err);
                    self.value.clear();
                    self.line = LineState::Discard;
                    return;
                }
                self.value.extend_from_slice(bytes);
            }
            Field::Ignored => {}
        }
    }

    #[cold]
    fn overflow(&mut self, at: u64, held: usize, err: &mut Option<SseError>) {
        // The offset of the first byte beyond the limit.
        let offset = at + (self.max_event_bytes.saturating_sub(held)) as u64;
        if err.is_none() {
            *err = Some(SseError::EventTooLarge {
                limit: self.max_event_bytes,
                offset,
            });
        }
        self.oversized = true;
        self.data = Vec::new(); // release the memory, not just the length
    }

    fn line_end<F: FnMut(EventRef<'_>)>(&mut self, sink: &mut F) {
        let state = std::mem::replace(&mut self.line, LineState::Start);
        match state {
            LineState::Start => self.dispatch(sink),
            LineState::Name => {
                let field = Field::from_name(&self.name);
                self.value.clear();
                self.apply(field);
            }
            LineState::AfterColon(field) | LineState::Value(field) => self.apply(field),
            LineState::Discard => {}
        }
        self.name.clear();
        self.value.clear();
    }

    fn apply(&mut self, field: Field) {
        match field {
            Field::Data => {
                self.has_data = true;
                if !self.oversized {
                    self.data.push(b'\n');
                }
            }
            Field::Event => self.event_type = String::from_utf8_lossy(&self.value).into_owned(),
            Field::Id => {
                if !self.value.contains(&0) {
                    self.last_event_id = String::from_utf8_lossy(&self.value).into_owned();
                }
            }
            Field::Retry => {
                if !self.value.is_empty() && self.value.iter().all(u8::is_ascii_digit) {
                    let ms = self
                        .value
                        .iter()
                        .fold(0u64, |acc, d| acc.saturating_mul(10).saturating_add(u64::from(d - b'0')));
                    self.retry = Some(ms);
                    self.block_retry = Some(ms);
                }
            }
            Field::Ignored => {}
        }
    }

    fn dispatch<F: FnMut(EventRef<'_>)>(&mut self, sink: &mut F) {
        // The last event id is committed at every blank line; it lives in `last_event_id`
        // already, so there is nothing more to do for it here.
        if self.has_data && !self.oversized {
            if self.data.last() == Some(&b'\n') {
                self.data.pop();
            }
            let data: Cow<'_, str> = String::from_utf8_lossy(&self.data);
            let event = if self.event_type.is_empty() {
                "message"
            } else {
                self.event_type.as_str()
            };
            sink(EventRef {
                event,
                data: &data,
                id: &self.last_event_id,
                retry: self.block_retry,
            });
        }
        self.reset_block();
    }

    fn reset_block(&mut self) {
        self.data.clear();
        if self.data.capacity() > 1 << 20 {
            // Do not keep a huge buffer alive after one big event.
            self.data = Vec::new();
        }
        self.has_data = false;
        self.event_type.clear();
        self.block_retry = None;
        self.oversized = false;
    }
}

/// Decode a whole stream at once into owned events (tests, fuzzing, the Rust bench).
pub fn decode_all(input: &[u8], max_event_bytes: usize) -> (Vec<Event>, Vec<SseError>) {
    let mut dec = SseDecoder::new(max_event_bytes);
    let mut out = Vec::new();
    let mut errors = Vec::new();
    if let Err(e) = dec.feed(input, &mut |e| out.push(Event::from(e))) {
        errors.push(e);
    }
    if let Err(e) = dec.close(&mut |e| out.push(Event::from(e))) {
        errors.push(e);
    }
    (out, errors)
}

#[cfg(test)]
mod tests;
