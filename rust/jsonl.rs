//! Incremental splitter for newline-delimited JSON (Cohere v1 chat streams).
//!
//! Lines end with LF (a CR before it is dropped); whitespace-only lines are skipped, and one
//! UTF-8 byte order mark at the start of the stream is removed (as `json.loads` does for bytes).
//! Each complete line goes to a sink with its 1-based line number and the byte offset of its
//! start; parsing the JSON is the caller's job, so the binding can build Python objects directly.

pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

const BOM: &[u8] = b"\xEF\xBB\xBF";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonLinesError {
    /// A line grew past the limit; it is skipped up to its end and splitting resumes after it.
    LineTooLong {
        limit: usize,
        line: u64,
        offset: u64,
    },
}

impl std::fmt::Display for JsonLinesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonLinesError::LineTooLong {
                limit,
                line,
                offset,
            } => write!(
                f,
                "line {line} longer than max_line_bytes={limit} (it starts at byte offset \
                 {offset}); the line is skipped"
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

/// What a decoder hands its sink, in stream order.
pub type Frame<'a> = Result<Line<'a>, JsonLinesError>;

#[derive(Debug)]
pub struct JsonLinesDecoder {
    max_line_bytes: usize,
    /// The start of the current line, when it began in an earlier chunk.
    buf: Vec<u8>,
    line_number: u64,
    line_start: u64,
    /// The current line overflowed: skip to its end.
    skipping: bool,
    closed: bool,
}

impl Default for JsonLinesDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LINE_BYTES)
    }
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

impl JsonLinesDecoder {
    pub fn new(max_line_bytes: usize) -> Self {
        JsonLinesDecoder {
            max_line_bytes,
            buf: Vec::new(),
            line_number: 1,
            line_start: 0,
            skipping: false,
            closed: false,
        }
    }

    pub fn max_line_bytes(&self) -> usize {
        self.max_line_bytes
    }

    /// Bytes fed so far.
    pub fn position(&self) -> u64 {
        self.line_start + self.buf.len() as u64
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Feed one chunk; each completed non-blank line, and each error, goes to `sink` in stream
    /// order. Feeding a closed decoder does nothing.
    pub fn feed<F: FnMut(Frame<'_>)>(&mut self, mut chunk: &[u8], sink: &mut F) {
        if self.closed {
            return;
        }
        while let Some(nl) = memchr::memchr(b'\n', chunk) {
            let head = &chunk[..nl];
            let line_len = self.buf.len() + nl;
            if !self.skipping {
                // The limit is on the line, not its end: the CR of a CRLF is not counted.
                let cr = head.last().or(self.buf.last()) == Some(&b'\r');
                if line_len - usize::from(cr) > self.max_line_bytes {
                    self.too_long(sink);
                } else if self.buf.is_empty() {
                    self.emit(head, sink);
                } else {
                    let mut buf = std::mem::take(&mut self.buf);
                    buf.extend_from_slice(head);
                    self.emit(&buf, sink);
                    buf.clear();
                    self.buf = buf;
                }
            }
            self.buf.clear();
            self.skipping = false;
            self.line_number += 1;
            self.line_start += line_len as u64 + 1;
            chunk = &chunk[nl + 1..];
        }
        if self.skipping {
            // Count the skipped bytes without keeping them.
            self.line_start += chunk.len() as u64;
        } else if self.buf.len() + chunk.len()
            - usize::from(chunk.last().or(self.buf.last()) == Some(&b'\r'))
            > self.max_line_bytes
        {
            // A last CR may be the start of a CRLF, which the limit does not count.
            self.too_long(sink);
            self.line_start += (self.buf.len() + chunk.len()) as u64;
            self.buf = Vec::new();
        } else {
            self.buf.extend_from_slice(chunk);
        }
    }

    /// End of input: a last line without a newline is still a line. Closing twice does nothing.
    pub fn close<F: FnMut(Frame<'_>)>(&mut self, sink: &mut F) {
        if self.closed {
            return;
        }
        self.closed = true;
        let buf = std::mem::take(&mut self.buf);
        if !self.skipping {
            self.emit(&buf, sink);
        }
    }

    #[cold]
    fn too_long<F: FnMut(Frame<'_>)>(&mut self, sink: &mut F) {
        self.skipping = true;
        sink(Err(JsonLinesError::LineTooLong {
            limit: self.max_line_bytes,
            line: self.line_number,
            offset: self.line_start,
        }));
    }

    fn emit<F: FnMut(Frame<'_>)>(&self, line: &[u8], sink: &mut F) {
        let mut line = line.strip_suffix(b"\r").unwrap_or(line);
        let mut offset = self.line_start;
        if offset == 0 {
            if let Some(rest) = line.strip_prefix(BOM) {
                line = rest;
                offset = BOM.len() as u64;
            }
        }
        if is_blank(line) {
            return;
        }
        sink(Ok(Line {
            bytes: line,
            number: self.line_number,
            offset,
        }));
    }
}

/// An owned line, for tests and fuzzing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedLine {
    pub bytes: Vec<u8>,
    pub number: u64,
    pub offset: u64,
}

/// Split a stream given as consecutive chunks, then close it.
pub fn split_chunks<'a, I>(
    chunks: I,
    max_line_bytes: usize,
) -> Vec<Result<OwnedLine, JsonLinesError>>
where
    I: IntoIterator<Item = &'a [u8]>,
{
    let mut dec = JsonLinesDecoder::new(max_line_bytes);
    let mut out = Vec::new();
    let mut sink = |f: Frame<'_>| {
        out.push(f.map(|l| OwnedLine {
            bytes: l.bytes.to_vec(),
            number: l.number,
            offset: l.offset,
        }));
    };
    for chunk in chunks {
        dec.feed(chunk, &mut sink);
    }
    dec.close(&mut sink);
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn lines(parts: &[&[u8]]) -> Vec<(String, u64)> {
        split_chunks(parts.iter().copied(), DEFAULT_MAX_LINE_BYTES)
            .into_iter()
            .map(|l| {
                let l = l.unwrap();
                (String::from_utf8_lossy(&l.bytes).into_owned(), l.number)
            })
            .collect()
    }

    #[test]
    fn splits_on_lf_skips_blank_and_accepts_crlf() {
        let got = lines(&[b"{\"a\":1}\r\n\n  \n\t\r\n{\"b\"", b":2}\n{\"c\":3}"]);
        assert_eq!(
            got,
            vec![
                ("{\"a\":1}".into(), 1),
                ("{\"b\":2}".into(), 5),
                ("{\"c\":3}".into(), 6)
            ]
        );
    }

    #[test]
    fn cr_alone_does_not_end_a_line() {
        assert_eq!(lines(&[b"1\r2\n"]), vec![("1\r2".into(), 1)]);
    }

    #[test]
    fn last_line_without_newline_is_a_line() {
        assert_eq!(lines(&[b"1\n2"]), vec![("1".into(), 1), ("2".into(), 2)]);
        assert_eq!(lines(&[b"1\n2\r"]), vec![("1".into(), 1), ("2".into(), 2)]);
    }

    #[test]
    fn leading_bom_removed_once() {
        let got = split_chunks([&b"\xEF\xBB"[..], b"\xBF{}\n\xEF\xBB\xBF[]"], 100);
        assert_eq!(
            got,
            vec![
                Ok(OwnedLine {
                    bytes: b"{}".to_vec(),
                    number: 1,
                    offset: 3
                }),
                Ok(OwnedLine {
                    bytes: b"\xEF\xBB\xBF[]".to_vec(),
                    number: 2,
                    offset: 6
                }),
            ]
        );
    }

    #[test]
    fn offsets_are_line_starts() {
        let got = split_chunks([&b"1\r\n\n22\n333"[..]], 100);
        let offsets: Vec<u64> = got.iter().map(|l| l.as_ref().unwrap().offset).collect();
        assert_eq!(offsets, vec![0, 4, 7]);
    }

    #[test]
    fn overlong_line_errors_in_order_then_recovers() {
        for parts in [
            vec![&b"12\n123456\n78\n"[..]],
            vec![b"12\n123", b"456", b"\n78\n"],
            vec![b"12\n123456", b"\n78\n"],
        ] {
            let got = split_chunks(parts.iter().copied(), 4);
            assert_eq!(
                got,
                vec![
                    Ok(OwnedLine {
                        bytes: b"12".to_vec(),
                        number: 1,
                        offset: 0
                    }),
                    Err(JsonLinesError::LineTooLong {
                        limit: 4,
                        line: 2,
                        offset: 3
                    }),
                    Ok(OwnedLine {
                        bytes: b"78".to_vec(),
                        number: 3,
                        offset: 10
                    }),
                ],
                "{parts:?}"
            );
        }
    }

    #[test]
    fn the_cr_of_a_crlf_is_not_counted_against_the_limit() {
        let fits = |parts: &[&[u8]]| {
            split_chunks(parts.iter().copied(), 4)
                .iter()
                .map(Result::is_ok)
                .collect::<Vec<_>>()
        };
        for parts in [
            &[&b"1234\r\n"[..]][..],
            &[b"1234\r", b"\n"],
            &[b"1234", b"\r\n"],
        ] {
            assert_eq!(fits(parts), vec![true], "{parts:?}");
        }
        for parts in [
            &[&b"12345\r\n"[..]][..],
            &[b"1234\r", b"5\n"],
            &[b"1234\r5\n"],
        ] {
            assert_eq!(fits(parts), vec![false], "{parts:?}");
        }
    }

    #[test]
    fn memory_stays_bounded_by_the_limit() {
        let mut dec = JsonLinesDecoder::new(1024);
        let chunk = vec![b'x'; 64 * 1024];
        let mut errors = 0;
        for _ in 0..64 {
            dec.feed(&chunk, &mut |f| errors += usize::from(f.is_err()));
            assert!(dec.buf.capacity() <= 2048);
        }
        assert_eq!(errors, 1);
        assert_eq!(dec.position(), 64 * 64 * 1024);
    }

    #[test]
    fn close_is_idempotent_and_feed_after_close_is_ignored() {
        let mut dec = JsonLinesDecoder::default();
        let mut n = 0;
        dec.feed(b"1", &mut |_| n += 1);
        dec.close(&mut |_| n += 1);
        dec.close(&mut |_| n += 1);
        dec.feed(b"2\n", &mut |_| n += 1);
        assert_eq!(n, 1);
    }

    fn piece() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            Just(b"\n".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(b"\r".to_vec()),
            Just(b" ".to_vec()),
            Just(BOM.to_vec()),
            Just(b"{\"a\": [1, 2]}".to_vec()),
            Just("\"é😀\"".as_bytes().to_vec()),
            proptest::collection::vec(any::<u8>(), 0..6),
        ]
    }

    /// Cut `input` at the given points (taken modulo its length, sorted).
    fn cut<'a>(input: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
        points.sort_unstable();
        let mut parts = Vec::with_capacity(points.len() + 1);
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

        #[test]
        fn any_split_splits_like_the_whole(
            pieces in proptest::collection::vec(piece(), 0..30),
            cuts in proptest::collection::vec(any::<usize>(), 0..10),
            limit in prop_oneof![Just(DEFAULT_MAX_LINE_BYTES), 0usize..20],
        ) {
            let input = pieces.concat();
            let whole = split_chunks([&input[..]], limit);
            prop_assert_eq!(split_chunks(cut(&input, &cuts), limit), whole);
        }
    }

    /// The fallback of `make fuzz` where cargo-fuzz cannot build: the `jsonl_split` property
    /// on random inputs until `STREAMFOLD_FUZZ_SECONDS` (default 60) pass.
    #[test]
    #[ignore = "long-running: `make fuzz` runs it when cargo-fuzz cannot build"]
    fn fuzz_jsonl_split_time_boxed() {
        use proptest::test_runner::{Config, TestRunner};
        use std::time::{Duration, Instant};

        let seconds = std::env::var("STREAMFOLD_FUZZ_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(60);
        let deadline = Instant::now() + Duration::from_secs(seconds);
        let mut runner = TestRunner::new(Config {
            cases: 256,
            failure_persistence: None,
            ..Config::default()
        });
        let strategy = (
            prop_oneof![
                proptest::collection::vec(piece(), 0..60).prop_map(|p| p.concat()),
                proptest::collection::vec(any::<u8>(), 0..2048),
            ],
            proptest::collection::vec(any::<usize>(), 0..16),
            prop_oneof![Just(DEFAULT_MAX_LINE_BYTES), 0usize..64],
        );
        while Instant::now() < deadline {
            let result = runner.run(&strategy, |(input, cuts, limit)| {
                let whole = split_chunks([&input[..]], limit);
                prop_assert_eq!(split_chunks(cut(&input, &cuts), limit), whole);
                Ok(())
            });
            if let Err(e) = result {
                panic!("{e}");
            }
        }
    }
}
