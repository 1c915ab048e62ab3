//! The scanner against a slow, obviously correct recursive-descent reference, and property
//! tests: any split of any text gives the one-shot verdict, error offset and events.

use proptest::prelude::*;

use super::record::{Event, Recorder};
use super::reference::{Reference, Verdict};
use super::*;

// ---- helpers ----

/// Feed `text` split at the given byte positions (moved to character boundaries).
fn feed_split(text: &str, cuts: &[usize]) -> (Verdict, Recorder) {
    let mut bounds: Vec<usize> = cuts
        .iter()
        .map(|&c| {
            let mut c = c % (text.len() + 1);
            while !text.is_char_boundary(c) {
                c -= 1;
            }
            c
        })
        .collect();
    bounds.push(0);
    bounds.push(text.len());
    bounds.sort_unstable();
    bounds.dedup();
    let mut scanner = Scanner::new();
    let mut rec = Recorder::default();
    for w in bounds.windows(2) {
        if scanner.feed(&text[w[0]..w[1]], &mut rec).is_err() {
            break;
        }
    }
    (Verdict::of(&scanner.status()), rec)
}

fn scan(text: &str) -> Verdict {
    feed_split(text, &[]).0
}

fn events(text: &str) -> Vec<Event> {
    let mut scanner = Scanner::new();
    let mut rec = Recorder::default();
    scanner.feed(text, &mut rec).unwrap();
    scanner.finish(&mut rec).unwrap();
    rec.events
}

fn error(text: &str) -> JsonError {
    let mut acc = Accumulator::new();
    let _ = acc.push(text);
    acc.status().unwrap_err()
}

// ---- examples ----

#[test]
fn complete_values() {
    for text in [
        "0",
        "-0",
        "12",
        "1.5",
        "-1e5",
        "1E+2",
        "2e-3",
        "true",
        "false",
        "null",
        "NaN",
        "Infinity",
        "-Infinity",
        "\"\"",
        "\"a\\u00e9\"",
        "[]",
        "{}",
        " [1, {\"a\": [null]}]\n\t\r ",
        "{\"a\":1,\"a\":2}",
    ] {
        assert_eq!(scan(text), Verdict::Complete, "{text:?}");
        assert_eq!(Reference::verdict(text), Verdict::Complete, "{text:?}");
    }
}

#[test]
fn incomplete_prefixes() {
    for text in [
        "",
        "  ",
        "[",
        "{",
        "{\"a\"",
        "{\"a\":",
        "[1,",
        "\"abc",
        "\"\\",
        "\"\\u12",
        "-",
        "1.",
        "1e",
        "1e+",
        "tru",
        "-Inf",
        "[1",
        "{\"a\":1",
        "{\"a\":1,",
    ] {
        assert_eq!(scan(text), Verdict::Incomplete, "{text:?}");
        assert_eq!(Reference::verdict(text), Verdict::Incomplete, "{text:?}");
    }
}

#[test]
fn invalid_at_the_first_bad_byte() {
    for (text, at) in [
        ("x", 0),
        ("[1 2]", 3),
        ("01", 1),
        ("[01]", 2),
        ("{1:2}", 1),
        ("{\"a\" 1}", 5),
        ("[1,]", 3),
        ("{\"a\":1,}", 7),
        ("{,}", 1),
        ("[,1]", 1),
        ("tRue", 1),
        ("\"\\x\"", 2),
        ("\"\\u12g4\"", 5),
        ("\"a\nb\"", 2),
        ("1 2", 2),
        ("{} {}", 3),
        ("-a", 1),
        ("1.e5", 2),
        ("1e+x", 3),
        ("+1", 0),
        ("nan", 1),
        ("-infinity", 1),
        ("[1}", 2),
        ("{\"a\":1]", 6),
        ("\u{feff}1", 0),
        ("é", 0),
        ("[é]", 1),
        ("\u{a0}1", 0),
    ] {
        assert_eq!(scan(text), Verdict::Invalid(at), "{text:?}");
        assert_eq!(Reference::verdict(text), Verdict::Invalid(at), "{text:?}");
    }
}

#[test]
fn errors_say_what_was_expected() {
    let e = error("{\"a\" 1}");
    assert_eq!(e.kind, ErrorKind::Unexpected { found: '1' });
    assert_eq!(e.expected, "':'");
    assert_eq!(
        e.to_string(),
        "invalid JSON at byte 5: found '1', expected ':'"
    );
    assert_eq!(error("[1 2]").expected, "',' or ']'");
    assert_eq!(error("[1,").expected, "a value");
    assert_eq!(error("[").expected, "a value or ']'");
    assert_eq!(error("{").expected, "a string key or '}'");
    assert_eq!(error("").expected, "a value");
    assert_eq!(error("[é]").kind, ErrorKind::Unexpected { found: 'é' });
    let incomplete = error("{\"a\":");
    assert_eq!(incomplete.kind, ErrorKind::Incomplete);
    assert_eq!(incomplete.offset, 5);
    assert!(!incomplete.is_invalid());
    assert_eq!(
        incomplete.to_string(),
        "incomplete JSON: the text ends after 5 bytes, expected a value"
    );
    assert_eq!(error("\"a\u{1}\"").offset, 2);
}

#[test]
fn nesting_is_limited() {
    let deep_ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
    assert_eq!(scan(&deep_ok), Verdict::Complete);
    let too_deep = "[".repeat(MAX_DEPTH + 1);
    assert_eq!(scan(&too_deep), Verdict::Invalid(MAX_DEPTH));
    assert_eq!(Reference::verdict(&too_deep), Verdict::Invalid(MAX_DEPTH));
    assert_eq!(error(&too_deep).kind, ErrorKind::TooDeep);
    assert!(error(&too_deep).expected.contains(&MAX_DEPTH.to_string()));
}

#[test]
fn after_an_error_everything_is_refused() {
    let mut acc = Accumulator::new();
    acc.push("[1,").unwrap();
    let e = acc.push("]x").unwrap_err();
    assert_eq!(e.offset, 3);
    assert_eq!(acc.text(), "[1,]x");
    assert_eq!(acc.push("2]").unwrap_err(), e);
    assert_eq!(acc.text(), "[1,]x2]"); // kept, as everything the stream delivered
    assert_eq!(acc.status().unwrap_err(), e);
    assert!(!acc.is_complete());
}

#[test]
fn top_level_numbers_are_complete_but_may_grow() {
    let mut acc = Accumulator::new();
    acc.push("12").unwrap();
    assert!(acc.is_complete());
    acc.push("3").unwrap();
    assert!(acc.is_complete());
    acc.push(".").unwrap();
    assert!(!acc.is_complete());
    acc.push("5 ").unwrap();
    assert!(acc.is_complete());
}

#[test]
fn events_decode_the_structure() {
    use Event::*;
    assert_eq!(
        events("{\"k\\n\": [1, \"a\\u00e9\\ud83d\\ude00\", -Infinity, 2.5e3], \"b\": null}"),
        vec![
            BeginObject,
            BeginKey,
            Text("k\n".into()),
            EndKey,
            BeginArray,
            Number {
                text: "1".into(),
                end: true
            },
            BeginString,
            Text("a".into()),
            CodeUnit(0xe9),
            CodeUnit(0xd83d),
            CodeUnit(0xde00),
            EndString,
            Literal(super::Literal::NegInfinity),
            Number {
                text: "2.5e3".into(),
                end: true
            },
            EndArray,
            BeginKey,
            Text("b".into()),
            EndKey,
            Literal(super::Literal::Null),
            EndObject,
        ]
    );
    assert_eq!(
        events("-12"),
        vec![Number {
            text: "-12".into(),
            end: true
        }]
    );
}

#[test]
fn a_minus_at_the_end_of_a_fragment_waits_for_what_follows() {
    for (text, cut) in [
        ("[-Infinity]", 2),
        ("[-Inf", 2),
        ("[-1]", 2),
        ("[-", 2),
        ("[1e-5]", 4),
    ] {
        let (_, rec) = feed_split(text, &[cut]);
        assert_eq!(rec, feed_split(text, &[]).1, "{text:?}");
    }
}

#[test]
fn a_split_minus_becomes_negative_infinity() {
    let (verdict, rec) = feed_split("[-Infinity]", &[2]);
    assert_eq!(verdict, Verdict::Complete);
    assert_eq!(rec.events, events("[-Infinity]"));
}

#[test]
fn string_runs_are_reported_per_fragment_without_copies_of_the_past() {
    let mut scanner = Scanner::new();
    let mut rec = Recorder::default();
    scanner.feed("\"ab", &mut rec).unwrap();
    assert_eq!(
        rec.events,
        vec![Event::BeginString, Event::Text("ab".into())]
    );
    rec.events.clear();
    scanner.feed("cd\"", &mut rec).unwrap();
    assert_eq!(rec.events, vec![Event::Text("cd".into()), Event::EndString]);
}

// ---- properties ----

fn ws() -> impl Strategy<Value = String> {
    "[ \t\n\r]{0,2}"
}

fn json_string() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            "[a-z0-9 ]{1,4}",
            "[é中😀\u{7f}\u{2028}]",
            Just("\\\"".to_owned()),
            Just("\\\\".to_owned()),
            "\\\\[/bfnrt]",
            "\\\\u[0-9a-fA-F]{4}",
            "\\\\u[dD][89abAB][0-9a-f]{2}\\\\u[dD][c-fC-F][0-9a-f]{2}",
        ],
        0..5,
    )
    .prop_map(|parts| format!("\"{}\"", parts.concat()))
}

fn json_scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        "-?(0|[1-9][0-9]{0,25})(\\.[0-9]{1,6})?([eE][+-]?[0-9]{1,3})?",
        Just("true".to_owned()),
        Just("false".to_owned()),
        Just("null".to_owned()),
        Just("NaN".to_owned()),
        Just("Infinity".to_owned()),
        Just("-Infinity".to_owned()),
        json_string(),
    ]
}

fn json_text() -> impl Strategy<Value = String> {
    let leaf = json_scalar();
    let value = leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec((ws(), inner.clone(), ws()), 0..6).prop_map(|items| {
                let items: Vec<String> = items
                    .into_iter()
                    .map(|(a, v, b)| format!("{a}{v}{b}"))
                    .collect();
                format!("[{}]", items.join(","))
            }),
            prop::collection::vec((ws(), json_string(), ws(), inner, ws()), 0..6).prop_map(
                |members| {
                    let members: Vec<String> = members
                        .into_iter()
                        .map(|(a, k, b, v, c)| format!("{a}{k}{b}:{c}{v}"))
                        .collect();
                    format!("{{{}}}", members.join(","))
                }
            ),
        ]
    });
    (ws(), value, ws()).prop_map(|(a, v, b)| format!("{a}{v}{b}"))
}

const ALPHABET: &[char] = &[
    '{', '}', '[', ']', ':', ',', '"', '\\', ' ', '\n', '-', '+', '.', 'e', 'E', '0', '1', '9',
    't', 'f', 'n', 'u', 'l', 'N', 'I', 'a', 'x', 'é', '\u{1}', '\u{1f}', '/', 'b', 'r',
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn any_split_gives_the_one_shot_verdict_and_events(
        text in json_text(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        prop_assert_eq!(Reference::verdict(&text), Verdict::Complete);
        let (one_verdict, one) = feed_split(&text, &[]);
        let (verdict, split) = feed_split(&text, &cuts);
        prop_assert_eq!(&one_verdict, &Verdict::Complete);
        prop_assert_eq!(verdict, one_verdict);
        prop_assert_eq!(split, one);
    }

    #[test]
    fn every_prefix_is_a_valid_prefix(text in json_text()) {
        for end in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
            let prefix = &text[..end];
            prop_assert_eq!(scan(prefix), Reference::verdict(prefix), "{:?}", prefix);
        }
    }

    #[test]
    fn edits_are_caught_at_the_reference_offset(
        text in json_text(),
        at in any::<usize>(),
        replace in any::<bool>(),
        pick in 0..ALPHABET.len(),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let mut at = at % (text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let mut edited = text[..at].to_owned();
        edited.push(ALPHABET[pick]);
        let rest = &text[at..];
        let skip = if replace { rest.chars().next().map_or(0, char::len_utf8) } else { 0 };
        edited.push_str(&rest[skip..]);
        let reference = Reference::verdict(&edited);
        prop_assert_eq!(scan(&edited), reference.clone(), "{:?}", edited);
        let (verdict, events) = feed_split(&edited, &cuts);
        if !matches!(verdict, Verdict::Invalid(_)) {
            prop_assert_eq!(events, feed_split(&edited, &[]).1, "{:?}", edited);
        }
        prop_assert_eq!(verdict, reference, "{:?}", edited);
    }
}

/// The fallback of `make fuzz` where cargo-fuzz cannot build: the properties of the
/// `json_accumulator` fuzz target on random texts until `STREAMFOLD_FUZZ_SECONDS` (default 60)
/// pass.
#[test]
#[ignore = "long-running: `make fuzz` runs it when cargo-fuzz cannot build"]
fn fuzz_json_accumulator_time_boxed() {
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
    let texts = prop_oneof![
        json_text(),
        prop::collection::vec(prop::sample::select(ALPHABET), 0..64)
            .prop_map(|chars| chars.into_iter().collect::<String>()),
        (
            json_text(),
            any::<prop::sample::Index>(),
            prop::sample::select(ALPHABET)
        )
            .prop_map(|(text, at, c)| {
                let mut at = at.index(text.len() + 1);
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                format!("{}{c}{}", &text[..at], &text[at..])
            }),
    ];
    let strategy = (texts, prop::collection::vec(any::<usize>(), 0..16));
    let mut rounds = 0u64;
    while Instant::now() < deadline {
        let result = runner.run(&strategy, |(text, cuts)| {
            let (whole, whole_events) = feed_split(&text, &[]);
            prop_assert_eq!(&whole, &Reference::verdict(&text), "{:?}", text);
            let (verdict, events) = feed_split(&text, &cuts);
            prop_assert_eq!(&verdict, &whole, "{:?}", text);
            if !matches!(verdict, Verdict::Invalid(_)) {
                prop_assert_eq!(events, whole_events, "{:?}", text);
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{e}");
        }
        rounds += 1;
    }
    eprintln!("fuzz_json_accumulator_time_boxed: {} cases", rounds * 256);
}
