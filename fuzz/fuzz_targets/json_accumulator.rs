//! JSON texts in arbitrary splits: the accumulator never panics, and any split gives the
//! verdict, error offset and events of the one-shot scan, which agree with the slow
//! recursive-descent reference.
#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use streamfold::json::record::Recorder;
use streamfold::json::reference::{Reference, Verdict};
use streamfold::json::{Accumulator, Scanner};

/// Pieces of JSON, so that most inputs get past the first byte.
const TOKENS: &[&str] = &[
    "{", "}", "[", "]", ":", ",", "\"", " ", "\n", "\\", "\\n", "\\u", "\\ud83d", "\\ude00", "0",
    "1", "9", "-", "+", ".", "e", "E", "a", "f", "true", "false", "null", "NaN", "Infinity", "tr",
    "é", "😀", "\u{1}", "\"k\":", "x",
];

#[derive(Debug, Arbitrary)]
struct Input {
    cuts: Vec<u16>,
    /// Build the text from [`TOKENS`] rather than take `raw`.
    tokens: Option<Vec<u8>>,
    raw: String,
}

fuzz_target!(|input: Input| {
    let text = match &input.tokens {
        Some(picks) => picks
            .iter()
            .map(|&p| TOKENS[usize::from(p) % TOKENS.len()])
            .collect(),
        None => input.raw.clone(),
    };

    let mut whole = Scanner::new();
    let mut whole_events = Recorder::default();
    let _ = whole.feed(&text, &mut whole_events);
    let verdict = Verdict::of(&whole.status());
    assert_eq!(verdict, Reference::verdict(&text), "{text:?}");

    let mut points: Vec<usize> = input
        .cuts
        .iter()
        .map(|&c| {
            let mut c = usize::from(c) % (text.len() + 1);
            while !text.is_char_boundary(c) {
                c -= 1;
            }
            c
        })
        .collect();
    points.sort_unstable();
    points.push(text.len());

    let mut acc = Accumulator::new();
    let mut split = Scanner::new();
    let mut split_events = Recorder::default();
    let mut start = 0;
    for p in points {
        let piece = &text[start..p];
        start = p;
        let pushed = acc.push(piece);
        let fed = split.feed(piece, &mut split_events);
        assert_eq!(pushed, fed);
        if let Err(e) = pushed {
            assert!(e.is_invalid());
            assert!(e.offset < acc.text().len());
            assert_eq!(acc.push("]"), Err(e));
            break;
        }
    }
    assert_eq!(Verdict::of(&acc.status()), verdict, "{text:?}");
    assert_eq!(acc.is_complete(), verdict == Verdict::Complete);
    if !matches!(verdict, Verdict::Invalid(_)) {
        assert_eq!(split_events, whole_events, "{text:?}");
    }
});
