use super::*;

fn decode(input: &[u8]) -> Vec<Event> {
    decode_all(input, DEFAULT_MAX_EVENT_BYTES).0
}

fn ev(event: &str, data: &str, id: &str) -> Event {
    Event { event: event.into(), data: data.into(), id: id.into(), retry: None }
}

#[test]
fn spec_example_stock_ticker() {
    let got = decode(b"data: YHOO\ndata: +2\ndata: 10\n\n");
    assert_eq!(got, vec![ev("message", "YHOO\n+2\n10", "")]);
}

#[test]
fn spec_example_comment_and_ids() {
    let got = decode(b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n");
    assert_eq!(
        got,
        vec![ev("message", "first event", "1"), ev("message", "second event", ""), ev("message", " third event", "")]
    );
}

#[test]
fn spec_example_empty_data_lines() {
    let got = decode(b"data\n\ndata\ndata\n\ndata:");
    assert_eq!(got, vec![ev("message", "", ""), ev("message", "\n", "")]);
}

#[test]
fn spec_example_space_after_colon() {
    let got = decode(b"data:test\n\ndata: test\n\n");
    assert_eq!(got, vec![ev("message", "test", ""), ev("message", "test", "")]);
}

#[test]
fn line_endings_cr_lf_crlf_split_cr() {
    let whole = decode(b"data: a\r\rdata: b\r\n\r\ndata: c\n\n");
    assert_eq!(whole, vec![ev("message", "a", ""), ev("message", "b", ""), ev("message", "c", "")]);
    let mut dec = SseDecoder::default();
    let mut out = Vec::new();
    for part in [&b"data: a\r"[..], b"\ndata: b\r", b"\n\r", b"\n"] {
        dec.feed(part, &mut |e| out.push(Event::from(e))).unwrap();
    }
    assert_eq!(out, vec![ev("message", "a\nb", "")]);
}

#[test]
fn bom_removed_once_even_split() {
    let mut dec = SseDecoder::default();
    let mut out = Vec::new();
    for part in [&b"\xEF"[..], b"\xBB", b"\xBFdata: x\n\n\xEF\xBB\xBFdata: y\n\n"] {
        dec.feed(part, &mut |e| out.push(Event::from(e))).unwrap();
    }
    assert_eq!(out[0], ev("message", "x", ""));
    assert_eq!(out.len(), 1, "a second BOM makes the field name unknown: {out:?}");
}

#[test]
fn no_phantom_events_and_id_persists() {
    let got = decode(b"id: 7\n\nretry: 10\n\nevent: x\n\n: c\n\ndata: d\n\n");
    assert_eq!(got, vec![ev("message", "d", "7")]);
}

#[test]
fn id_with_nul_ignored() {
    let got = decode(b"id: 1\ndata: a\n\nid: 2\0x\ndata: b\n\n");
    assert_eq!(got[1].id, "1");
}

#[test]
fn retry_only_ascii_digits() {
    let mut dec = SseDecoder::default();
    dec.feed(b"retry: 1500\n\nretry: -1\n\nretry:  20\n\nretry: 1a\n\n", &mut |_| {}).unwrap();
    assert_eq!(dec.retry(), Some(1500));
}

#[test]
fn event_type_and_reset() {
    let got = decode(b"event: add\ndata: 1\n\ndata: 2\n\nevent:\ndata: 3\n\n");
    assert_eq!(got, vec![ev("add", "1", ""), ev("message", "2", ""), ev("message", "3", "")]);
}

#[test]
fn field_names_case_sensitive_and_unknown_ignored() {
    let got = decode(b"Data: no\nfoo: bar\ndata: yes\n\n");
    assert_eq!(got, vec![ev("message", "yes", "")]);
}

#[test]
fn whitespace_line_is_not_blank() {
    let got = decode(b"data: a\n \ndata: b\n\n");
    assert_eq!(got, vec![ev("message", "a\nb", "")]);
}

#[test]
fn unterminated_event_dropped_and_reported() {
    let mut dec = SseDecoder::default();
    let mut out = Vec::new();
    dec.feed(b"data: a\n\ndata: b\n", &mut |e| out.push(Event::from(e))).unwrap();
    dec.close(&mut |e| out.push(Event::from(e))).unwrap();
    assert_eq!(out.len(), 1);
    assert!(dec.dropped_partial());
}

#[test]
fn invalid_utf8_replaced_and_split_char_joined() {
    let got = decode(b"data: \xFF\xE2\x82\n\n");
    assert_eq!(got[0].data, "\u{FFFD}\u{FFFD}");
    let mut dec = SseDecoder::default();
    let mut out = Vec::new();
    let bytes = "data: 😀\n\n".as_bytes();
    for b in bytes {
        dec.feed(std::slice::from_ref(b), &mut |e| out.push(Event::from(e))).unwrap();
    }
    assert_eq!(out[0].data, "😀");
}

#[test]
fn oversized_event_errors_and_recovers() {
    let (events, errors) = decode_all(b"data: 0123456789abcdef\n\ndata: ok\n\n", 8);
    assert_eq!(events, vec![ev("message", "ok", "")]);
    assert!(matches!(errors[0], SseError::EventTooLarge { limit: 8, offset: 14 }), "{errors:?}");
}

#[test]
fn chunking_invariance_all_two_way_splits() {
    let input: &[u8] = b"\xEF\xBB\xBFevent: e\r\nid: 1\rdata: \xC3\xA9t\xC3\xA9\r\n\r\n: c\n\ndata\n\ndata: x\r";
    let whole = decode(input);
    for i in 0..=input.len() {
        for j in i..=input.len() {
            let mut dec = SseDecoder::default();
            let mut out = Vec::new();
            for part in [&input[..i], &input[i..j], &input[j..]] {
                dec.feed(part, &mut |e| out.push(Event::from(e))).unwrap();
            }
            dec.close(&mut |e| out.push(Event::from(e))).unwrap();
            assert_eq!(out, whole, "split at {i},{j}");
        }
    }
}
