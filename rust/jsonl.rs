//! Incremental splitter for newline-delimited JSON (Cohere v1 chat streams).
//!
//! Lines end with LF (a CR before it is dropped); whitespace-only lines are skipped. Each
//! complete line goes to a sink with its 1-based line number and the byte offset of its start;
//! parsing the JSON is the caller's job, so the binding can build Python objects directly.

pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonLinesError {
    LineTooLong { limit: usize, line: u64, offset: u64 },
}

impl std::fmt::Display for JsonLinesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonLinesError::LineTooLong { limit, line, offset } => write!(
                f,
                "line {line} longer than max_line_bytes={limit} (starts at byte offset {offset})"
            ),
        }
    }
}

impl std::error::Error for JsonLinesError {}

/// A complete, non-blank line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line<'a> {
    pub bytes: &'a [u8],
    /// 1-based line number in the stream.
    pub number: u64,
    /// Byte offset of the line's first byte.
    pub offset: u64,
}

#[derive(Debug)]
pub struct JsonLinesDecoder {
    max_line_bytes: usize,
    buf: Vec<u8>,
    line_number: u64,
    line_start: u64,
    /// The current line overflowed: skip to its end.
    skipping: bool,
}

impl Default for JsonLinesDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LINE_BYTES)
    }
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

impl JsonLinesDecoder {
    pub fn new(max_line_bytes: usize) -> Self {
        JsonLinesDecoder {
            max_line_bytes,
            buf: Vec::new(),
            line_number: 1,
            line_start: 0,
            skipping: false,
        }
    }

    /// Feed one chunk; each completed non-blank line goes to `sink`. The sink may stop the
    /// feed by returning an error, which is passed through.
    pub fn feed<E, F>(&mut self, mut chunk: &[u8], sink: &mut F) -> Result<(), E>
    where
        F: FnMut(Line<'_>) -> Result<(), E>,
        E: From<JsonLinesError>,
    {
        while let Some(nl) = memchr::memchr(b'\n', chunk) {
            let (head, tail) = (&chunk[..nl], &chunk[nl + 1..]);
            let line_len = (self.buf.len() + nl) as u64;
            let result = if self.skipping {
                Ok(())
            } else if self.buf.is_empty() {
                self.emit(head, sink)
            } else {
                self.buf.extend_from_slice(head);
                let buf = std::mem::take(&mut self.buf);
                let r = self.emit(&buf, sink);
                self.buf = buf;
                self.buf.clear();
                r
            };
            self.skipping = false;
            self.line_number += 1;
            self.line_start += line_len + 1;
            chunk = tail;
            result?;
        }
        if !self.skipping {
            if self.buf.len() + chunk.len() > self.max_line_bytes {
                let err = JsonLinesError::LineTooLong {
                    limit: self.max_line_bytes,
                    line: self.line_number,
                    offset: self.line_start,
                };
                self.skipping = true;
                self.buf = Vec::new();
                return Err(err.into());
            }
            self.buf.extend_from_slice(chunk);
        }
        Ok(())
    }

    /// End of input: a last line without a newline is still a line.
    pub fn close<E, F>(&mut self, sink: &mut F) -> Result<(), E>
    where
        F: FnMut(Line<'_>) -> Result<(), E>,
    {
        let buf = std::mem::take(&mut self.buf);
        let skipping = std::mem::replace(&mut self.skipping, false);
        if skipping {
            return Ok(());
        }
        self.emit(&buf, sink)
    }

    fn emit<E, F>(&self, line: &[u8], sink: &mut F) -> Result<(), E>
    where
        F: FnMut(Line<'_>) -> Result<(), E>,
    {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if is_blank(line) {
            return Ok(());
        }
        sink(Line {
            bytes: line,
            number: self.line_number,
            offset: self.line_start,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(parts: &[&[u8]]) -> Vec<(String, u64)> {
        let mut dec = JsonLinesDecoder::default();
        let mut out = Vec::new();
        let mut sink = |l: Line<'_>| -> Result<(), JsonLinesError> {
            out.push((String::from_utf8_lossy(l.bytes).into_owned(), l.number));
            Ok(())
        };
        for p in parts {
            dec.feed(p, &mut sink).unwrap();
        }
        dec.close(&mut sink).unwrap();
        out
    }

    #[test]
    fn splits_skips_blank_and_crlf() {
        let got = lines(&[b"{\"a\":1}\r\n\n  \n{\"b\"", b":2}\n{\"c\":3}"]);
        assert_eq!(got, vec![("{\"a\":1}".into(), 1), ("{\"b\":2}".into(), 4), ("{\"c\":3}".into(), 5)]);
    }

    #[test]
    fn chunking_invariance() {
        let input: &[u8] = b"{\"x\": \"\xC3\xA9\"}\r\n\r\n[1,2]\n3";
        let whole = lines(&[input]);
        for i in 0..=input.len() {
            assert_eq!(lines(&[&input[..i], &input[i..]]), whole, "split at {i}");
        }
    }

    #[test]
    fn overlong_line_errors_then_recovers() {
        let mut dec = JsonLinesDecoder::new(4);
        let mut out = Vec::new();
        let mut sink = |l: Line<'_>| -> Result<(), JsonLinesError> {
            out.push(l.bytes.to_vec());
            Ok(())
        };
        let err = dec.feed(b"123456", &mut sink).unwrap_err();
        assert_eq!(err, JsonLinesError::LineTooLong { limit: 4, line: 1, offset: 0 });
        dec.feed(b"78\n12\n", &mut sink).unwrap();
        assert_eq!(out, vec![b"12".to_vec()]);
    }
}
