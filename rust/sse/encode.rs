//! Writing `text/event-stream`: the inverse of the decoder, under the same WHATWG rules.
//!
//! An event is written as its `id`, `event` and `retry` fields, then one `data:` line per line
//! of the data, then a blank line. Data is split at every LF, CR and CRLF, since each is a
//! line end to the reader, which joins the `data:` lines with LF: the text decodes back the
//! same, its line ends as LF (a stream cannot carry a CR inside an event's data). A value
//! the reader would take differently is refused instead of written: an `id` holding LF, CR
//! (a line end) or NUL (the reader ignores such an id), an `event` holding LF or CR.
//!
//! Every line ends in LF and every value follows `": "`: the reader strips exactly one space
//! after the colon, so a value that starts with a space keeps it. An empty value is written
//! as the bare field name with a colon (`data:`), which reads the same.
//!
//! A comment (`: ping`, the keep-alive) holding line ends becomes one comment line per line:
//! each is skipped by the reader, as the one comment was meant to be.

/// Why a field could not be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodeError {
    /// The `id` holds LF or CR, which would end its line.
    IdLineBreak,
    /// The `id` holds NUL: the reader ignores such an id field.
    IdNul,
    /// The `event` holds LF or CR, which would end its line.
    EventLineBreak,
}

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EncodeError::IdLineBreak => {
                "an SSE id cannot hold a line break (LF or CR): it would end the id line"
            }
            EncodeError::IdNul => "an SSE id cannot hold NUL: readers ignore such an id",
            EncodeError::EventLineBreak => {
                "an SSE event name cannot hold a line break (LF or CR): it would end the line"
            }
        })
    }
}

impl std::error::Error for EncodeError {}

/// The optional fields of one event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fields<'a> {
    /// `event:`; `None` writes none (the reader then calls the event `"message"`).
    pub event: Option<&'a str>,
    /// `id:`; `None` writes none (the last id stays), `Some("")` resets the last id.
    pub id: Option<&'a str>,
    /// `retry:` in milliseconds.
    pub retry: Option<u64>,
}

fn has_line_break(text: &str) -> bool {
    text.bytes().any(|b| b == b'\n' || b == b'\r')
}

impl Fields<'_> {
    /// Refuse what the reader would take differently from what was asked.
    pub fn check(&self) -> Result<(), EncodeError> {
        if let Some(id) = self.id {
            if has_line_break(id) {
                return Err(EncodeError::IdLineBreak);
            }
            if id.as_bytes().contains(&0) {
                return Err(EncodeError::IdNul);
            }
        }
        if self.event.is_some_and(has_line_break) {
            return Err(EncodeError::EventLineBreak);
        }
        Ok(())
    }
}

/// Write `name: value\n`, or `name:\n` for an empty value.
fn field(out: &mut Vec<u8>, name: &[u8], value: &str) {
    out.extend_from_slice(name);
    out.push(b':');
    if !value.is_empty() {
        out.push(b' ');
        out.extend_from_slice(value.as_bytes());
    }
    out.push(b'\n');
}

/// Each line of `text`, split at LF, CR and CRLF (CRLF is one line end); an empty text is
/// one empty line, and a text ending in a line end has an empty last line.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let Some(offset) = memchr::memchr2(b'\n', b'\r', &bytes[start..]) else {
            done = true;
            return Some(&text[start..]);
        };
        let end = start + offset;
        let line = &text[start..end];
        let crlf = bytes[end] == b'\r' && bytes.get(end + 1) == Some(&b'\n');
        start = end + if crlf { 2 } else { 1 };
        Some(line)
    })
}

/// Append one event: its fields, its data lines and the blank line that dispatches it.
pub fn encode_event(out: &mut Vec<u8>, data: &str, fields: Fields<'_>) -> Result<(), EncodeError> {
    fields.check()?;
    out.reserve(data.len() + 16);
    if let Some(id) = fields.id {
        field(out, b"id", id);
    }
    if let Some(event) = fields.event {
        field(out, b"event", event);
    }
    if let Some(retry) = fields.retry {
        field(out, b"retry", &retry.to_string());
    }
    for line in lines(data) {
        field(out, b"data", line);
    }
    out.push(b'\n');
    Ok(())
}

/// Append a comment (one comment line per line of `text`) and a blank line, which the reader
/// skips: a keep-alive that dispatches nothing.
pub fn encode_comment(out: &mut Vec<u8>, text: &str) {
    for line in lines(text) {
        field(out, b"", line);
    }
    out.push(b'\n');
}

/// Append `text` as the inside of a JSON string (no quotes): `"`, `\` and the control
/// characters escaped, everything else as its UTF-8, as `json.dumps(..., ensure_ascii=False)`
/// would write it. The result has no line end, so it fits one `data:` line.
pub fn json_string_body(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if escape.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.extend_from_slice(escape);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::sse::{decode_chunks, Event, DEFAULT_MAX_EVENT_BYTES};

    fn encoded(data: &str, fields: Fields<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        encode_event(&mut out, data, fields).unwrap();
        out
    }

    #[test]
    fn data_lines_split_at_every_line_end() {
        let out = encoded("a\nb\rc\r\nd", Fields::default());
        assert_eq!(out, b"data: a\ndata: b\ndata: c\ndata: d\n\n");
    }

    #[test]
    fn empty_data_and_trailing_line_end() {
        assert_eq!(encoded("", Fields::default()), b"data:\n\n");
        assert_eq!(encoded("x\n", Fields::default()), b"data: x\ndata:\n\n");
    }

    #[test]
    fn fields_in_order() {
        let fields = Fields {
            event: Some("delta"),
            id: Some("7"),
            retry: Some(3000),
        };
        assert_eq!(
            encoded(" x", fields),
            b"id: 7\nevent: delta\nretry: 3000\ndata:  x\n\n"
        );
        let reset = Fields {
            id: Some(""),
            ..Fields::default()
        };
        assert_eq!(encoded("x", reset), b"id:\ndata: x\n\n");
    }

    #[test]
    fn refused_values() {
        let mut out = Vec::new();
        for (fields, err) in [
            (
                Fields {
                    id: Some("a\nb"),
                    ..Fields::default()
                },
                EncodeError::IdLineBreak,
            ),
            (
                Fields {
                    id: Some("a\rb"),
                    ..Fields::default()
                },
                EncodeError::IdLineBreak,
            ),
            (
                Fields {
                    id: Some("a\0b"),
                    ..Fields::default()
                },
                EncodeError::IdNul,
            ),
            (
                Fields {
                    event: Some("a\r\nb"),
                    ..Fields::default()
                },
                EncodeError::EventLineBreak,
            ),
        ] {
            assert_eq!(encode_event(&mut out, "x", fields), Err(err));
        }
        assert!(out.is_empty(), "nothing is written for a refused event");
    }

    #[test]
    fn comments() {
        let mut out = Vec::new();
        encode_comment(&mut out, "ping");
        encode_comment(&mut out, "");
        encode_comment(&mut out, "a\r\nb");
        assert_eq!(out, b": ping\n\n:\n\n: a\n: b\n\n");
    }

    #[test]
    fn json_string_body_escapes() {
        let mut out = Vec::new();
        json_string_body(&mut out, "a\"b\\c\nd\u{1}\u{7f}é😀");
        assert_eq!(out, "a\\\"b\\\\c\\nd\\u0001\u{7f}é😀".as_bytes());
    }

    /// One event to write: data, optional event name, id and retry, and how the reader
    /// should see it.
    #[derive(Debug, Clone)]
    struct Written {
        data: String,
        event: Option<String>,
        id: Option<String>,
        retry: Option<u64>,
    }

    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just('\n'),
                Just('\r'),
                Just(' '),
                Just(':'),
                Just('\u{feff}'),
                Just('é'),
                any::<char>(),
            ],
            0..12,
        )
        .prop_map(|chars| chars.into_iter().collect())
    }

    fn line_text() -> impl Strategy<Value = String> {
        text().prop_map(|t| t.replace(['\n', '\r', '\0'], ""))
    }

    fn written() -> impl Strategy<Value = Written> {
        (
            text(),
            proptest::option::of(line_text()),
            proptest::option::of(line_text()),
            proptest::option::of(any::<u64>()),
        )
            .prop_map(|(data, event, id, retry)| Written {
                data,
                event,
                id,
                retry,
            })
    }

    fn cut<'a>(input: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
        points.sort_unstable();
        let mut parts = Vec::new();
        let mut start = 0;
        for p in points {
            parts.push(&input[start..p]);
            start = p;
        }
        parts.push(&input[start..]);
        parts
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Decoding what was encoded, under any split, gives the events written, with their
        /// data's line ends as LF.
        #[test]
        fn decodes_back_under_any_split(
            events in proptest::collection::vec(written(), 0..6),
            comments in proptest::collection::vec(proptest::option::of(text()), 0..6),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
        ) {
            let mut out = Vec::new();
            let mut expected = Vec::new();
            let mut last_id = String::new();
            for (k, w) in events.iter().enumerate() {
                if let Some(Some(comment)) = comments.get(k) {
                    encode_comment(&mut out, comment);
                }
                let fields = Fields {
                    event: w.event.as_deref(),
                    id: w.id.as_deref(),
                    retry: w.retry,
                };
                encode_event(&mut out, &w.data, fields).unwrap();
                if let Some(id) = &w.id {
                    last_id.clone_from(id);
                }
                let event = match w.event.as_deref() {
                    None | Some("") => "message".to_owned(),
                    Some(name) => name.to_owned(),
                };
                expected.push(Event {
                    event,
                    data: w.data.replace("\r\n", "\n").replace('\r', "\n"),
                    id: last_id.clone(),
                    retry: w.retry,
                });
            }
            let decoded = decode_chunks(cut(&out, &cuts), DEFAULT_MAX_EVENT_BYTES);
            let got: Vec<Event> = decoded.frames.into_iter().map(Result::unwrap).collect();
            prop_assert_eq!(got, expected);
            prop_assert!(!decoded.dropped_partial);
        }

        #[test]
        fn json_string_body_parses_back(text in text()) {
            let mut out = vec![b'"'];
            json_string_body(&mut out, &text);
            out.push(b'"');
            prop_assert!(!out.contains(&b'\n') && !out.contains(&b'\r'));
            let back: String = serde_json_lite(&out);
            prop_assert_eq!(back, text);
        }
    }

    /// The text a JSON string literal written by `json_string_body` stands for (the escapes
    /// it writes, nothing more).
    fn serde_json_lite(literal: &[u8]) -> String {
        let inner = std::str::from_utf8(&literal[1..literal.len() - 1]).unwrap();
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                assert!(c != '"' && u32::from(c) >= 0x20, "unescaped {c:?}");
                out.push(c);
                continue;
            }
            match chars.next().unwrap() {
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).unwrap()).unwrap());
                }
                other => out.push(other),
            }
        }
        out
    }
}
