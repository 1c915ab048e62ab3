//! One test per rule of WHATWG HTML §9.2.6 "Interpreting an event stream", the spec's own
//! examples, and property tests: any split of any byte string decodes as the whole does.

use proptest::prelude::*;

use super::*;

fn decode(input: &[u8]) -> Vec<Event> {
    decode_all(input, DEFAULT_MAX_EVENT_BYTES).0
}

fn ev(event: &str, data: &str, id: &str) -> Event {
    Event {
        event: event.into(),
        data: data.into(),
        id: id.into(),
        retry: None,
    }
}

fn msg(data: &str) -> Event {
    ev("message", data, "")
}

/// Feed the given chunks, one `feed` call each, then close.
fn decode_parts(parts: &[&[u8]]) -> Decoded {
    decode_chunks(parts.iter().copied(), DEFAULT_MAX_EVENT_BYTES)
}

fn events_of(d: &Decoded) -> Vec<Event> {
    d.frames.iter().filter_map(|f| f.clone().ok()).collect()
}

// ---- the spec's examples (§9.2.6) ----

#[test]
fn spec_example_stock_ticker() {
    let got = decode(b"data: YHOO\ndata: +2\ndata: 10\n\n");
    assert_eq!(got, vec![msg("YHOO\n+2\n10")]);
}

#[test]
fn spec_example_comment_ids_and_leading_space() {
    let input =
        b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n";
    let d = decode_parts(&[input]);
    assert_eq!(
        events_of(&d),
        vec![
            ev("message", "first event", "1"),
            ev("message", "second event", ""),
            ev("message", " third event", ""),
        ]
    );
    assert_eq!(d.last_event_id, "");
}

#[test]
fn spec_example_comment_ids_without_final_blank_line() {
    // "the end of the stream is not enough to trigger the dispatch of the last event"
    let d = decode_parts(&[b": test stream\n\ndata: first event\nid: 1\n\ndata:  third event\n"]);
    assert_eq!(events_of(&d), vec![ev("message", "first event", "1")]);
    assert!(d.dropped_partial);
}

#[test]
fn spec_example_empty_data_lines() {
    let d = decode_parts(&[b"data\n\ndata\ndata\n\ndata:"]);
    assert_eq!(events_of(&d), vec![msg(""), msg("\n")]);
    assert!(
        d.dropped_partial,
        "the last block is discarded, and that is reported"
    );
}

#[test]
fn spec_example_space_after_colon() {
    let got = decode(b"data:test\n\ndata: test\n\n");
    assert_eq!(got, vec![msg("test"), msg("test")]);
}

#[test]
fn spec_example_event_types() {
    let got = decode(
        b"event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n",
    );
    assert_eq!(
        got,
        vec![
            ev("add", "73857293", ""),
            ev("remove", "2153", ""),
            ev("add", "113411", ""),
        ]
    );
}

// ---- decoding: UTF-8 always, BOM ----

#[test]
fn invalid_utf8_becomes_replacement_characters() {
    let got = decode(b"data: \xFF\xE2\x82\n\n");
    assert_eq!(got[0].data, "\u{FFFD}\u{FFFD}");
    // A truncated sequence before an ASCII byte is one U+FFFD, and the ASCII byte survives.
    let got = decode(b"event: \xE2\x82x\ndata: a\xF0\x9F\n\n");
    assert_eq!(got, vec![ev("\u{FFFD}x", "a\u{FFFD}", "")]);
}

#[test]
fn multibyte_character_split_across_chunks_is_joined() {
    let bytes = "data: é😀\n\n".as_bytes();
    let parts: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(events_of(&decode_parts(&parts)), vec![msg("é😀")]);
}

#[test]
fn one_leading_bom_removed_even_split() {
    let d = decode_parts(&[b"\xEF", b"\xBB", b"\xBFdata: x\n\n"]);
    assert_eq!(events_of(&d), vec![msg("x")]);
    let d = decode_parts(&[b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\ndata: y\n\n"]);
    assert_eq!(
        events_of(&d),
        vec![msg("y")],
        "a second BOM is part of the field name, which is then unknown"
    );
}

#[test]
fn bom_only_at_stream_start() {
    let got = decode(b"data: a\n\n\xEF\xBB\xBFdata: b\n\n");
    assert_eq!(got, vec![msg("a")]);
}

#[test]
fn bom_prefix_that_is_not_a_bom_is_content() {
    // EF BB then 'd': the two bytes are an invalid sequence inside the field name.
    assert!(decode(b"\xEF\xBBdata: x\n\n").is_empty());
    // A stream of one or two BOM bytes only, then close: no panic, nothing dispatched.
    let d = decode_parts(&[b"\xEF", b"\xBB"]);
    assert!(d.frames.is_empty());
    assert!(!d.dropped_partial);
}

// ---- lines: CRLF, LF, CR ----

#[test]
fn line_endings_cr_lf_crlf() {
    let got = decode(b"data: a\r\rdata: b\r\n\r\ndata: c\n\ndata: d\r\n\n");
    assert_eq!(got, vec![msg("a"), msg("b"), msg("c"), msg("d")]);
}

#[test]
fn cr_at_chunk_end_resolved_against_next_chunk() {
    // CR then LF in the next chunk is one line ending, not two (which would dispatch).
    let d = decode_parts(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]);
    assert_eq!(events_of(&d), vec![msg("a\nb")]);
    // CR then something else: the CR alone ended the line.
    let d = decode_parts(&[b"data: a\r", b"\r", b"data: b\r", b"", b"\r"]);
    assert_eq!(events_of(&d), vec![msg("a"), msg("b")]);
}

#[test]
fn nothing_else_ends_a_line() {
    let got = decode("data: a\x0Bb\x0Cc\u{2028}d\u{85}e\0f\n\n".as_bytes());
    assert_eq!(got, vec![msg("a\x0Bb\x0Cc\u{2028}d\u{85}e\0f")]);
}

#[test]
fn whitespace_only_line_is_not_blank() {
    let got = decode(b"data: a\n \ndata: b\n\t\ndata: c\n\n");
    assert_eq!(got, vec![msg("a\nb\nc")]);
}

// ---- fields ----

#[test]
fn colon_first_is_a_comment() {
    let got = decode(b": data: no\n:\ndata: yes\n:comment\n\n");
    assert_eq!(got, vec![msg("yes")]);
}

#[test]
fn split_at_first_colon_only() {
    let got = decode(b"data: a:b: c\n\n");
    assert_eq!(got, vec![msg("a:b: c")]);
}

#[test]
fn exactly_one_leading_space_removed() {
    let got = decode(b"data:  two\ndata:\tt\ndata: \n\n");
    assert_eq!(got, vec![msg(" two\n\tt\n")]);
}

#[test]
fn line_without_colon_is_field_with_empty_value() {
    let got = decode(b"data\nevent\n\n");
    assert_eq!(
        got,
        vec![msg("")],
        "`event` alone sets the type to empty: message"
    );
}

#[test]
fn field_names_case_sensitive_and_unknown_ignored() {
    let got =
        decode(b"Data: no\nDATA: no\nfoo: bar\ndata : no\n data: no\nretries: 5\ndata: yes\n\n");
    assert_eq!(got, vec![msg("yes")]);
}

#[test]
fn event_sets_type_empty_means_message_and_type_resets() {
    let got = decode(b"event: add\ndata: 1\n\ndata: 2\n\nevent: x\nevent:\ndata: 3\n\n");
    assert_eq!(got, vec![ev("add", "1", ""), msg("2"), msg("3")]);
}

#[test]
fn data_appends_value_and_lf() {
    let got = decode(b"data: a\ndata:\ndata: b\n\n");
    assert_eq!(got, vec![msg("a\n\nb")]);
}

#[test]
fn id_persists_across_events_and_resets_with_empty_value() {
    let got = decode(b"id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n");
    assert_eq!(
        got,
        vec![ev("message", "a", "7"), ev("message", "b", "7"), msg("c")]
    );
}

#[test]
fn id_with_nul_ignored() {
    let got = decode(b"id: 1\ndata: a\n\nid: 2\0x\ndata: b\n\nid: \0\ndata: c\n\n");
    assert_eq!(got[1].id, "1");
    assert_eq!(got[2].id, "1");
}

#[test]
fn id_is_committed_at_blank_line_even_without_dispatch() {
    let mut dec = SseDecoder::default();
    dec.feed(b"id: 5\n", &mut |_| {});
    assert_eq!(
        dec.last_event_id(),
        "",
        "not committed before the blank line"
    );
    dec.feed(b"\n", &mut |_| {});
    assert_eq!(dec.last_event_id(), "5");
    let mut out = Vec::new();
    dec.feed(b"data: x\n\n", &mut |f| out.push(f.map(Event::from)));
    assert_eq!(out, vec![Ok(ev("message", "x", "5"))]);
    // An id in an unterminated block at EOF never takes effect.
    dec.feed(b"id: 9\n", &mut |_| {});
    dec.close(&mut |_| {});
    assert_eq!(dec.last_event_id(), "5");
}

#[test]
fn retry_only_ascii_digits() {
    let mut dec = SseDecoder::default();
    let mut events = Vec::new();
    dec.feed(b"retry: 1500\n\n", &mut |_| {});
    assert_eq!(dec.retry(), Some(1500));
    for bad in [
        &b"retry: -1\n"[..],
        b"retry: +1\n",
        b"retry:  20\n",
        b"retry: 20 \n",
        b"retry: 1a\n",
        b"retry: 1.5\n",
        b"retry:\n",
        b"retry\n",
        "retry: \u{0661}\n".as_bytes(), // ARABIC-INDIC DIGIT ONE is not an ASCII digit
        "retry: \u{FF11}\n".as_bytes(), // FULLWIDTH DIGIT ONE
    ] {
        dec.feed(bad, &mut |_| {});
        assert_eq!(
            dec.retry(),
            Some(1500),
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
    dec.feed(b"retry:0250\ndata: d\n\n", &mut |f| {
        events.push(f.unwrap().retry);
    });
    assert_eq!(dec.retry(), Some(250));
    assert_eq!(
        events,
        vec![Some(250)],
        "the event carries its own block's retry"
    );
    dec.feed(b"data: e\n\nretry: 99999999999999999999999\n", &mut |f| {
        events.push(f.unwrap().retry);
    });
    assert_eq!(
        events[1], None,
        "retry does not carry over to the next event"
    );
    assert_eq!(dec.retry(), Some(u64::MAX), "huge values saturate");
}

// ---- dispatch ----

#[test]
fn no_phantom_events() {
    let got = decode(b"id: 7\n\nretry: 10\n\nevent: x\n\n: c\n\n\n\n\nfoo: bar\n\ndata: d\n\n");
    assert_eq!(got, vec![ev("message", "d", "7")]);
}

#[test]
fn only_one_trailing_lf_removed() {
    let got = decode(b"data: a\ndata\ndata\n\n");
    assert_eq!(got, vec![msg("a\n\n")]);
}

#[test]
fn buffers_reset_between_events_but_id_does_not() {
    let got = decode(b"event: e\nid: 1\ndata: a\nretry: 5\n\ndata: b\n\n");
    assert_eq!(
        got,
        vec![
            Event {
                event: "e".into(),
                data: "a".into(),
                id: "1".into(),
                retry: Some(5)
            },
            ev("message", "b", "1"),
        ]
    );
}

#[test]
fn unterminated_event_dropped_and_reported() {
    for tail in [
        &b"data: b\n"[..],
        b"data: b",
        b"data",
        b"data:",
        b"data: b\r",
    ] {
        let d = decode_parts(&[b"data: a\n\n", tail]);
        assert_eq!(events_of(&d), vec![msg("a")], "{tail:?}");
        assert!(d.dropped_partial, "{tail:?}");
    }
    for tail in [
        &b""[..],
        b"event: x\n",
        b"id: 3",
        b": comment",
        b"dat",
        b"retry: 5\n",
    ] {
        let d = decode_parts(&[b"data: a\n\n", tail]);
        assert_eq!(events_of(&d), vec![msg("a")], "{tail:?}");
        assert!(
            !d.dropped_partial,
            "nothing that would dispatch was pending: {tail:?}"
        );
    }
}

#[test]
fn close_is_idempotent_and_feed_after_close_is_ignored() {
    let mut dec = SseDecoder::default();
    dec.feed(b"data: x", &mut |_| {});
    dec.close(&mut |_| {});
    assert!(dec.dropped_partial() && dec.is_closed());
    dec.close(&mut |_| {});
    assert!(dec.dropped_partial(), "a second close keeps the answer");
    let mut n = 0;
    dec.feed(b"\n\ndata: y\n\n", &mut |_| n += 1);
    assert_eq!(n, 0);
}

// ---- limits ----

#[test]
fn oversized_event_errors_in_order_and_recovers() {
    let d = decode_chunks(
        [&b"data: ok1\n\ndata: 0123456789abcdef\n\ndata: ok2\n\n"[..]],
        8,
    );
    assert_eq!(
        d.frames,
        vec![
            Ok(msg("ok1")),
            Err(SseError::EventTooLarge {
                limit: 8,
                offset: 25
            }),
            Ok(msg("ok2")),
        ]
    );
}

#[test]
fn limit_counts_the_dispatched_data_exactly() {
    // Exactly the limit, across several lines: fine.
    let (events, errors) = decode_all(b"data: abc\ndata: de\n\n", 6);
    assert_eq!((events, errors), (vec![msg("abc\nde")], vec![]));
    // One byte more: an error.
    let (events, errors) = decode_all(b"data: abc\ndata: def\n\n", 6);
    assert!(events.is_empty());
    assert_eq!(errors.len(), 1);
    // A full buffer followed by an empty data line would add a seventh byte (an LF).
    let (events, errors) = decode_all(b"data: abcdef\ndata\n\n", 6);
    assert!(events.is_empty());
    assert_eq!(errors.len(), 1);
}

#[test]
fn oversized_non_data_fields_error_too() {
    for input in [
        &b"event: 0123456789\ndata: x\n\n"[..],
        b"id: 0123456789\ndata: x\n\n",
    ] {
        let d = decode_chunks([input], 8);
        assert!(
            matches!(
                d.frames[..],
                [Err(SseError::EventTooLarge { limit: 8, .. })]
            ),
            "{d:?}"
        );
    }
}

#[test]
fn memory_stays_bounded_by_the_limit() {
    let mut dec = SseDecoder::new(1024);
    let chunk = vec![b'x'; 64 * 1024];
    let mut errors = 0;
    for prefix in [
        &b"data: "[..],
        b"event: ",
        b"id: ",
        b": ",
        b"unknown: ",
        b"xxxxxxxx",
    ] {
        dec.feed(prefix, &mut |f| errors += usize::from(f.is_err()));
        for _ in 0..64 {
            dec.feed(&chunk, &mut |f| errors += usize::from(f.is_err()));
            assert!(dec.data.capacity() <= 2048 && dec.value.capacity() <= 2048);
            assert!(dec.name.capacity() <= 16);
        }
        dec.feed(b"\n\n", &mut |_| {});
    }
    assert_eq!(errors, 3, "data, event and id overflow once each");
}

#[test]
fn error_offsets_count_bom_and_crlf() {
    let d = decode_chunks([&b"\xEF\xBB\xBF\r\ndata: 12345\r\n\r\n"[..]], 3);
    // BOM (3) + CRLF (2) + "data: " (6) + 3 bytes of room.
    assert_eq!(
        d.frames,
        vec![Err(SseError::EventTooLarge {
            limit: 3,
            offset: 14
        })]
    );
}

#[test]
fn position_counts_every_byte_fed() {
    let mut dec = SseDecoder::default();
    dec.feed(b"\xEF\xBB", &mut |_| {});
    assert_eq!(dec.position(), 2);
    dec.feed(b"\xBFdata: x\r", &mut |_| {});
    assert_eq!(dec.position(), 11);
    dec.feed(b"\n", &mut |_| {});
    assert_eq!(dec.position(), 12);
}

// ---- chunking invariance ----

#[test]
fn chunking_invariance_all_three_way_splits() {
    let input: &[u8] = b"\xEF\xBB\xBFevent: e\r\nid: 1\rdata: \xC3\xA9t\xC3\xA9\r\n\r\n: c\n\ndata\n\nretry: 7\ndata: \xF0\x9F\x98\x80 x\r";
    let whole = decode_parts(&[input]);
    for i in 0..=input.len() {
        for j in i..=input.len() {
            let split = decode_parts(&[&input[..i], &input[i..j], &input[j..]]);
            assert_eq!(split, whole, "split at {i},{j}");
        }
    }
}

/// Streams built from the pieces that matter to the grammar, so that random ones hit the rules.
fn sse_piece() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"data".to_vec()),
        Just(b"data:".to_vec()),
        Just(b"data: ".to_vec()),
        Just(b"event:".to_vec()),
        Just(b"id: ".to_vec()),
        Just(b"retry: ".to_vec()),
        Just(b":".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\n\n".to_vec()),
        Just(b" ".to_vec()),
        Just(b"\0".to_vec()),
        Just(BOM.to_vec()),
        Just("é😀".as_bytes().to_vec()),
        Just(b"\xF0\x9F".to_vec()),
        Just(b"\xFF".to_vec()),
        Just(b"12".to_vec()),
        "[a-z]{0,6}".prop_map(String::into_bytes),
        proptest::collection::vec(any::<u8>(), 0..8),
    ]
}

fn sse_stream() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(sse_piece(), 0..40).prop_map(|pieces| pieces.concat())
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
    fn any_split_decodes_like_the_whole(
        input in sse_stream(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
        limit in prop_oneof![Just(DEFAULT_MAX_EVENT_BYTES), 0usize..24],
    ) {
        let whole = decode_chunks([&input[..]], limit);
        let split = decode_chunks(cut(&input, &cuts), limit);
        prop_assert_eq!(split, whole);
    }

    #[test]
    fn byte_at_a_time_decodes_like_the_whole(input in sse_stream()) {
        let whole = decode_chunks([&input[..]], DEFAULT_MAX_EVENT_BYTES);
        let split = decode_chunks(input.chunks(1), DEFAULT_MAX_EVENT_BYTES);
        prop_assert_eq!(split, whole);
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_split_alike(
        input in proptest::collection::vec(any::<u8>(), 0..512),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let whole = decode_chunks([&input[..]], 64);
        let split = decode_chunks(cut(&input, &cuts), 64);
        prop_assert_eq!(split, whole);
    }
}

/// The fallback of `make fuzz` where cargo-fuzz cannot build: the same properties as the
/// `sse_split` fuzz target, on random inputs until `STREAMFOLD_FUZZ_SECONDS` (default 60) pass.
#[test]
#[ignore = "long-running: `make fuzz` runs it when cargo-fuzz cannot build"]
fn fuzz_sse_split_time_boxed() {
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
            sse_stream(),
            proptest::collection::vec(any::<u8>(), 0..2048)
        ],
        proptest::collection::vec(any::<usize>(), 0..16),
        prop_oneof![Just(DEFAULT_MAX_EVENT_BYTES), 0usize..64],
    );
    let mut rounds = 0u64;
    while Instant::now() < deadline {
        let result = runner.run(&strategy, |(input, cuts, limit)| {
            let whole = decode_chunks([&input[..]], limit);
            prop_assert_eq!(decode_chunks(cut(&input, &cuts), limit), whole);
            Ok(())
        });
        if let Err(e) = result {
            panic!("{e}");
        }
        rounds += 1;
    }
    eprintln!("fuzz_sse_split_time_boxed: {} cases", rounds * 256);
}

#[test]
fn whole_known_lines_and_split_ones_agree() {
    // The whole-line shortcut for `data:` / `event:` against the same lines cut mid-name,
    // mid-prefix and right after the colon (the general path).
    let input = b"event:a\ndata:x\nevent: b\ndata: y\ndata:\ndataz: no\nevents: no\ndata\n\n";
    let whole = decode(input);
    assert_eq!(whole, vec![ev("b", "x\ny\n\n", "")]);
    for cut in 0..input.len() {
        let (a, b) = input.split_at(cut);
        let split = decode_chunks([a, b], DEFAULT_MAX_EVENT_BYTES);
        let events: Vec<Event> = split.frames.into_iter().map(Result::unwrap).collect();
        assert_eq!(events, whole, "cut at {cut}");
    }
}

proptest! {
    #[test]
    fn line_end_search_matches_a_plain_scan(
        bytes in proptest::collection::vec(
            prop_oneof![Just(b'\r'), Just(b'\n'), Just(0x8a), Just(0x0b), any::<u8>()],
            0..150,
        ),
        start in 0usize..16,
    ) {
        let bytes = &bytes[start.min(bytes.len())..];
        let expected = bytes.iter().position(|&b| b == b'\r' || b == b'\n');
        prop_assert_eq!(find_line_end(bytes), expected);
    }

    /// At most one line end, anywhere: every block and word of the search, and its last
    /// overlapping one, are where it may be found or missed.
    #[test]
    fn line_end_search_finds_a_lone_line_end_anywhere(
        len in 0usize..150,
        at in 0usize..150,
        end in prop_oneof![Just(None), Just(Some(b'\r')), Just(Some(b'\n'))],
    ) {
        let mut bytes: Vec<u8> = (b'a'..=b'z').cycle().take(len).collect();
        let at = at % len.max(1);
        if let (Some(end), true) = (end, len > 0) {
            bytes[at] = end;
        }
        let expected = bytes.iter().position(|&b| b == b'\r' || b == b'\n');
        prop_assert_eq!(find_line_end(&bytes), expected);
    }
}

#[test]
fn event_type_resets_after_each_dispatch_even_when_repeated() {
    let input = b"event: a\ndata: 1\n\ndata: 2\n\nevent: a\ndata: 3\n\nevent:\ndata: 4\n\nevent: a\nevent: b\ndata: 5\n\nevent: \xffx\ndata: 6\n\n";
    let types: Vec<String> = decode(input).into_iter().map(|e| e.event).collect();
    assert_eq!(types, ["a", "message", "a", "message", "b", "\u{fffd}x"]);
}

#[test]
fn whole_blocks_agree_with_the_line_by_line_path() {
    // Blocks the shortcut takes, blocks it must leave (two data lines, `id`, `retry`, comments,
    // CR line ends, an empty data block) and blocks begun before it: every cut into two chunks
    // and byte by byte must decode as the whole does.
    let inputs: [&[u8]; 6] = [
        b"event: a\ndata: 1\n\ndata: 2\nevent: b\n\ndata:3\r\n\r\nevent:\ndata: 4\r\r",
        b"id: 7\ndata: x\n\nretry: 9\ndata: y\n\ndata: z\n\n: c\ndata: w\n\n",
        b"event: a\nevent: b\ndata: 1\n\ndata: 1\ndata: 2\n\ndata:\n\nevent: a\n\ndata: q\n\n",
        b"data: \xffbad\n\nevent: \xfe\ndata: v\n\nid: a\x00b\ndata: n\n\ndata: end\n",
        b"data: x\r\n\rdata: y\r\ndata: z\n\ndata\n\n",
        b"\xef\xbb\xbfdata: bom\n\nevent: e\r\ndata: f\r\n\r\n",
    ];
    // A long last event, so that the whole input and the longer pieces are long enough for
    // the shortcut to be tried at every block start (it skips reads of a few dozen bytes).
    let tail = [&b"data: "[..], &[b'p'; 80], b"\n\n"].concat();
    for input in inputs {
        let input = &[input, &tail[..]].concat()[..];
        let whole = decode_chunks([input], DEFAULT_MAX_EVENT_BYTES);
        for cut in 0..=input.len() {
            let (a, b) = input.split_at(cut);
            assert_eq!(
                decode_chunks([a, b], DEFAULT_MAX_EVENT_BYTES),
                whole,
                "cut at {cut}"
            );
        }
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(decode_chunks(bytes, DEFAULT_MAX_EVENT_BYTES), whole);
    }
    let first = decode(&[inputs[1], &tail[..]].concat());
    assert_eq!(first[0].id, "7");
    assert_eq!(first[1].retry, Some(9));
    assert_eq!(first[2].retry, None);
}

#[test]
fn whole_block_over_the_limit_is_reported_like_any_other() {
    let limit = 8;
    let pad = [b':'; 80];
    for input in [
        &b"data: 123456789\n\ndata: ok\n\n"[..],
        b"event: 123456789\ndata: x\n\ndata: ok\n\n",
    ] {
        let input = [input, b"\n", &pad, b"\n"].concat();
        let (events, errors) = decode_all(&input, limit);
        assert_eq!(
            events.iter().map(|e| e.data.as_str()).collect::<Vec<_>>(),
            ["ok"]
        );
        assert_eq!(errors.len(), 1, "{input:?}");
    }
}

// ---- chunks held by the caller (`hold_data`) ----

/// `decode_chunks`, but every chunk the decoder lets the caller hold is held, and put back
/// into its event's data at the offset given, as the Python binding does.
fn decode_chunks_holding(chunks: &[&[u8]], max_event_bytes: usize, min: usize) -> (Decoded, usize) {
    let mut dec = SseDecoder::new(max_event_bytes);
    let mut frames = Vec::new();
    let mut held: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut times_held = 0;
    let mut sink = |held: &mut Vec<(usize, Vec<u8>)>, f: Frame<'_>| {
        frames.push(f.map(|e| {
            let mut data = Vec::new();
            let mut from = 0;
            for (at, bytes) in held.drain(..) {
                data.extend_from_slice(&e.data[from..at]);
                data.extend_from_slice(&bytes);
                from = at;
            }
            data.extend_from_slice(&e.data[from..]);
            Event::from(EventRef { data: &data, ..e })
        }));
        held.clear(); // an error drops the block, and what was held of it
    };
    for chunk in chunks {
        if let Some(at) = dec.hold_data(chunk, min) {
            held.push((at, chunk.to_vec()));
            times_held += 1;
        } else {
            dec.feed(chunk, &mut |f| sink(&mut held, f));
        }
    }
    dec.close(&mut |f| sink(&mut held, f));
    let decoded = Decoded::closed(&dec, frames);
    (decoded, times_held)
}

#[test]
fn held_chunks_go_back_where_they_were() {
    let input = b"event: big\ndata: abcdefgh\ndata: ijkl\n\ndata: x\n\n";
    let parts: Vec<&[u8]> = input.chunks(2).collect();
    let (held, times) = decode_chunks_holding(&parts, DEFAULT_MAX_EVENT_BYTES, 1);
    assert!(times >= 3, "only {times} chunks held");
    assert_eq!(held, decode_chunks([&input[..]], DEFAULT_MAX_EVENT_BYTES));
    assert_eq!(
        events_of(&held),
        vec![ev("big", "abcdefgh\nijkl", ""), msg("x")]
    );
}

#[test]
fn nothing_is_held_outside_a_data_value_or_below_the_minimum() {
    let mut dec = SseDecoder::default();
    let mut sink = |_: Frame<'_>| {};
    assert_eq!(dec.hold_data(b"data", 0), None); // the BOM stage
    dec.feed(b"event: ", &mut sink);
    assert_eq!(dec.hold_data(b"abc", 0), None); // not data
    dec.feed(b"x\ndata:", &mut sink);
    assert_eq!(dec.hold_data(b"abc", 0), None); // the leading space is still to be removed
    dec.feed(b" ab", &mut sink);
    assert_eq!(dec.hold_data(b"cd", 3), None); // only 2 data bytes so far
    assert_eq!(dec.hold_data(b"c\nd", 0), None); // a line end
    assert_eq!(dec.hold_data(b"c\rd", 0), None);
    assert_eq!(dec.hold_data(b"", 0), None);
    assert_eq!(dec.hold_data(b"cd", 2), Some(2));
    assert_eq!(dec.position(), 19);
    dec.feed(b"ef\r", &mut sink);
    assert_eq!(dec.hold_data(b"gh", 0), None); // a CR waiting for its LF
}

#[test]
fn a_held_chunk_counts_toward_the_limit() {
    let input = b"data: 0123456789\n\ndata: ok\n\n";
    for limit in [4, 9, 10, 11] {
        let parts: Vec<&[u8]> = input.chunks(3).collect();
        let (held, _) = decode_chunks_holding(&parts, limit, 0);
        assert_eq!(held, decode_chunks([&input[..]], limit), "limit {limit}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn holding_chunks_decodes_like_the_whole(
        input in sse_stream(),
        cuts in proptest::collection::vec(any::<usize>(), 0..24),
        limit in prop_oneof![Just(DEFAULT_MAX_EVENT_BYTES), 0usize..24],
        min in 0usize..6,
    ) {
        let whole = decode_chunks([&input[..]], limit);
        let (held, _) = decode_chunks_holding(&cut(&input, &cuts), limit, min);
        prop_assert_eq!(held, whole);
    }

    #[test]
    fn holding_arbitrary_bytes_decodes_like_the_whole(
        input in proptest::collection::vec(any::<u8>(), 0..512),
        cuts in proptest::collection::vec(any::<usize>(), 0..16),
    ) {
        let whole = decode_chunks([&input[..]], 64);
        let (held, _) = decode_chunks_holding(&cut(&input, &cuts), 64, 0);
        prop_assert_eq!(held, whole);
    }
}

/// `decode_chunks`, but every chunk is first offered to `append_data`, as the Python binding
/// does, and fed only when refused. Also returns how many were taken that way.
fn decode_chunks_appending(chunks: &[&[u8]], max_event_bytes: usize) -> (Decoded, usize) {
    let mut dec = SseDecoder::new(max_event_bytes);
    let mut frames = Vec::new();
    let mut appended = 0;
    for chunk in chunks {
        if dec.append_data(chunk) {
            appended += 1;
        } else {
            dec.feed(chunk, &mut |f| frames.push(f.map(Event::from)));
        }
    }
    dec.close(&mut |f| frames.push(f.map(Event::from)));
    let decoded = Decoded::closed(&dec, frames);
    (decoded, appended)
}

#[test]
fn only_data_inside_a_data_value_is_appended() {
    let mut dec = SseDecoder::new(8);
    let mut sink = |_: Frame<'_>| {};
    assert!(!dec.append_data(b"data")); // the BOM stage
    dec.feed(b"event: ", &mut sink);
    assert!(!dec.append_data(b"abc")); // an event type, not data
    dec.feed(b"x\ndata:", &mut sink);
    assert!(!dec.append_data(b"abc")); // the leading space is still to be removed
    dec.feed(b" ab", &mut sink);
    assert!(!dec.append_data(b"c\nd")); // a line end
    assert!(!dec.append_data(b"c\rd"));
    assert!(!dec.append_data(b""));
    assert!(dec.append_data(b"cd"));
    assert_eq!(dec.position(), 19);
    assert!(!dec.append_data(b"efghi")); // 9 bytes: past the limit, which `feed` reports
    dec.feed(b"ef\r", &mut sink);
    assert!(!dec.append_data(b"gh")); // a CR waiting for its LF
}

#[test]
fn appended_chunks_decode_like_the_whole() {
    let input = b"event: e\ndata: abcdefgh\ndata: ijkl\n\ndata: x\n\n";
    let parts: Vec<&[u8]> = input.chunks(2).collect();
    let (appended, times) = decode_chunks_appending(&parts, DEFAULT_MAX_EVENT_BYTES);
    assert!(times >= 3, "only {times} chunks appended");
    assert_eq!(
        appended,
        decode_chunks([&input[..]], DEFAULT_MAX_EVENT_BYTES)
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn appending_chunks_decodes_like_the_whole(
        input in sse_stream(),
        cuts in proptest::collection::vec(any::<usize>(), 0..24),
        limit in prop_oneof![Just(DEFAULT_MAX_EVENT_BYTES), 0usize..24],
    ) {
        let whole = decode_chunks([&input[..]], limit);
        let (appended, _) = decode_chunks_appending(&cut(&input, &cuts), limit);
        prop_assert_eq!(appended, whole);
    }

    #[test]
    fn appending_arbitrary_bytes_decodes_like_the_whole(
        input in proptest::collection::vec(any::<u8>(), 0..512),
        cuts in proptest::collection::vec(any::<usize>(), 0..16),
    ) {
        let whole = decode_chunks([&input[..]], 64);
        let (appended, _) = decode_chunks_appending(&cut(&input, &cuts), 64);
        prop_assert_eq!(appended, whole);
    }
}
