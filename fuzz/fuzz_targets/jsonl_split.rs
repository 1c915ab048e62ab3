//! Arbitrary bytes in arbitrary splits: the JSON-lines splitter never panics, and any split
//! gives exactly the lines (and errors) of the whole stream.
#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use streamfold::jsonl::{split_chunks, JsonLinesError, DEFAULT_MAX_LINE_BYTES};

#[derive(Debug, Arbitrary)]
struct Input {
    cuts: Vec<u16>,
    limit: Option<u8>,
    stream: Vec<u8>,
}

fuzz_target!(|input: Input| {
    let stream = &input.stream[..];
    let limit = input.limit.map_or(DEFAULT_MAX_LINE_BYTES, usize::from);
    let whole = split_chunks([stream], limit);

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
    assert_eq!(split_chunks(parts, limit), whole);

    let mut last_line = 0;
    for frame in &whole {
        let (line, offset) = match frame {
            Ok(l) => {
                assert!(!l.bytes.contains(&b'\n'));
                assert!(l.bytes.len() <= limit);
                let end = l.offset as usize + l.bytes.len();
                assert_eq!(&stream[l.offset as usize..end], &l.bytes[..]);
                (l.number, l.offset)
            }
            Err(JsonLinesError::LineTooLong { line, offset, .. }) => (*line, *offset),
        };
        assert!(line > last_line);
        assert!(offset <= stream.len() as u64);
        last_line = line;
    }
});
