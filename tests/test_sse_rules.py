"""SSEDecoder, one test per rule of WHATWG HTML §9.2.6 "Interpreting an event stream", with the
spec's own examples, plus the limits streamfold adds (max_event_bytes, bounded memory)."""

from __future__ import annotations

import gc
import inspect
import json
import subprocess
import sys
import textwrap
import weakref
from collections.abc import Iterable, Sequence

import pytest

import streamfold as sf
from streamfold import ProtocolError, ServerSentEvent, SSEDecoder, StreamfoldError
from streamfold._types import ProviderName


def decode(*chunks: bytes, max_event_bytes: int | None = None) -> list[ServerSentEvent]:
    """Feed each chunk in its own call, then close."""
    dec = SSEDecoder() if max_event_bytes is None else SSEDecoder(max_event_bytes=max_event_bytes)
    out: list[ServerSentEvent] = []
    for chunk in chunks:
        out.extend(dec.feed(chunk))
    out.extend(dec.close())
    return out


def bytewise(stream: bytes) -> list[ServerSentEvent]:
    return decode(*(stream[i : i + 1] for i in range(len(stream))))


def triples(events: Iterable[ServerSentEvent]) -> list[tuple[str, str, str]]:
    return [(e.event, e.data, e.id) for e in events]


def datas(events: Sequence[ServerSentEvent]) -> list[str]:
    return [e.data for e in events]


# ---- the spec's examples ----


def test_spec_example_stock_ticker() -> None:
    stream = b"data: YHOO\ndata: +2\ndata: 10\n\n"
    for events in (decode(stream), bytewise(stream)):
        assert triples(events) == [("message", "YHOO\n+2\n10", "")]


def test_spec_example_comment_ids_and_leading_space() -> None:
    stream = (
        b": test stream\n\ndata: first event\nid: 1\n\n"
        b"data:second event\nid\n\ndata:  third event\n\n"
    )
    dec = SSEDecoder()
    events = dec.feed(stream)
    assert triples(events) == [
        ("message", "first event", "1"),
        ("message", "second event", ""),
        ("message", " third event", ""),
    ]
    assert dec.last_event_id == ""
    assert triples(bytewise(stream)) == triples(events)


def test_spec_example_last_block_needs_a_blank_line() -> None:
    dec = SSEDecoder()
    events = dec.feed(b": test stream\n\ndata: first event\nid: 1\n\ndata:  third event\n")
    assert triples(events) == [("message", "first event", "1")]
    assert dec.close() == []
    assert dec.dropped_partial is True
    assert dec.last_event_id == "1"


def test_spec_example_empty_data_fires_two_events() -> None:
    dec = SSEDecoder()
    events = dec.feed(b"data\n\ndata\ndata\n\ndata:")
    assert datas(events) == ["", "\n"]
    assert dec.close() == []
    assert dec.dropped_partial is True


def test_spec_example_space_after_colon_is_ignored() -> None:
    first, second = decode(b"data:test\n\ndata: test\n\n")
    assert first == second
    assert first.data == "test"


def test_spec_example_event_types() -> None:
    events = decode(
        b"event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n"
    )
    assert triples(events) == [
        ("add", "73857293", ""),
        ("remove", "2153", ""),
        ("add", "113411", ""),
    ]


# ---- UTF-8, always ----


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (b"\xff", "\ufffd"),
        (b"caf\xe9", "caf\ufffd"),  # Latin-1 is not honoured, whatever a charset says
        (b"\xe2\x82", "\ufffd"),  # a truncated sequence is one replacement
        (b"\xe2\x82x", "\ufffdx"),
        (b"\xed\xa0\x80", "\ufffd\ufffd\ufffd"),  # an encoded surrogate
        (b"\xf0\x80\x80\x80", "\ufffd" * 4),  # an overlong form
        (b"\xc3\xa9\xf0\x9f\x98\x80", "é😀"),
    ],
)
def test_invalid_utf8_becomes_replacement_character(raw: bytes, text: str) -> None:
    stream = b"data: " + raw + b"\n\n"
    assert datas(decode(stream)) == [text]
    assert datas(bytewise(stream)) == [text]
    assert [e.event for e in decode(b"event: " + raw + b"\ndata\n\n")] == [text]


def test_multibyte_characters_split_anywhere_are_reassembled() -> None:
    text = "é中😀ü" * 3
    stream = f"event: ü\nid: 中\ndata: {text}\n\n".encode()
    for cut in range(len(stream) + 1):
        events = decode(stream[:cut], stream[cut:])
        assert triples(events) == [("ü", text, "中")], cut
    assert triples(bytewise(stream)) == [("ü", text, "中")]


# ---- the byte order mark ----


@pytest.mark.parametrize("cuts", [(1, 2), (1, 3), (2, 3), (0, 1), (3, 3), (1, 1)])
def test_one_leading_bom_is_removed_even_split_across_chunks(cuts: tuple[int, int]) -> None:
    stream = b"\xef\xbb\xbfdata: x\n\n"
    a, b = cuts
    assert datas(decode(stream[:a], stream[a:b], stream[b:])) == ["x"]


def test_only_one_bom_and_only_at_the_start() -> None:
    # A second BOM becomes part of the field name, which is then unknown.
    assert decode(b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\n") == []
    assert datas(decode(b"data: a\n\n\xef\xbb\xbfdata: b\n\n")) == ["a"]
    assert datas(decode(b"data: \xef\xbb\xbfa\n\n")) == ["\ufeffa"]


def test_bytes_that_only_start_like_a_bom_are_content() -> None:
    assert decode(b"\xef", b"\xbbdata: x\n\n") == []
    dec = SSEDecoder()
    assert dec.feed(b"\xef\xbb") == []
    assert dec.close() == []
    assert dec.dropped_partial is False


# ---- lines ----


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"])
def test_lines_end_with_lf_cr_or_crlf(eol: bytes) -> None:
    stream = eol.join([b"event: e", b"data: a", b"data: b", b"", b"data: c", b"", b""])
    assert triples(decode(stream)) == [("e", "a\nb", ""), ("message", "c", "")]
    assert triples(bytewise(stream)) == [("e", "a\nb", ""), ("message", "c", "")]


def test_mixed_line_endings_in_one_stream() -> None:
    assert datas(decode(b"data: a\r\rdata: b\r\n\r\ndata: c\n\ndata: d\r\n\n")) == list("abcd")


def test_cr_at_the_end_of_a_chunk_is_resolved_against_the_next_byte() -> None:
    # CR then LF in the next chunk: one line end, so no blank line and no early dispatch.
    assert datas(decode(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n")) == ["a\nb"]
    # CR, an empty chunk, then LF: still one line end.
    assert datas(decode(b"data: a\r", b"", b"\ndata: b\r", b"", b"\n\r", b"", b"\n")) == ["a\nb"]
    # CR then anything else: the CR alone ended the line.
    assert datas(decode(b"data: a\r", b"\r", b"data: b\r", b"\r")) == ["a", "b"]
    # A CR that ends a blank line dispatches at once, without waiting for the next chunk.
    dec = SSEDecoder()
    assert datas(dec.feed(b"data: a\r\r")) == ["a"]


def test_nothing_else_ends_a_line() -> None:
    value = "a\x0bb\x0cc\u2028d\u2029e\x85f\x00g"
    assert datas(decode(f"data: {value}\n\n".encode())) == [value]


def test_whitespace_only_line_is_not_blank() -> None:
    assert datas(decode(b"data: a\n \ndata: b\n\t\ndata: c\n\n")) == ["a\nb\nc"]


# ---- fields ----


def test_a_line_starting_with_colon_is_a_comment() -> None:
    assert datas(decode(b": data: no\n:\n:data: no\ndata: yes\n:x\n\n")) == ["yes"]


def test_field_and_value_split_at_the_first_colon() -> None:
    assert datas(decode(b"data: a:b: c\n\n")) == ["a:b: c"]
    assert triples(decode(b"event:x:y\ndata\n\n")) == [("x:y", "", "")]


def test_exactly_one_leading_space_is_removed() -> None:
    assert datas(decode(b"data:  two\ndata:\ttab\ndata: \ndata:x\n\n")) == [" two\n\ttab\n\nx"]


def test_a_line_without_colon_is_a_field_with_empty_value() -> None:
    assert datas(decode(b"data\n\n")) == [""]
    assert triples(decode(b"event: x\nevent\ndata: d\n\n")) == [("message", "d", "")]
    assert [e.id for e in decode(b"id: 1\ndata\n\nid\ndata\n\n")] == ["1", ""]


def test_field_names_are_case_sensitive_and_unknown_fields_ignored() -> None:
    stream = (
        b"Data: no\nDATA: no\nEvent: no\nID: 1\nRetry: 5\nfoo: bar\ndata : no\n data: no\n"
        b"datas: no\ndata: yes\n\n"
    )
    dec = SSEDecoder()
    assert triples(dec.feed(stream)) == [("message", "yes", "")]
    assert dec.retry is None
    assert dec.last_event_id == ""


def test_event_sets_the_type_empty_means_message_and_it_resets() -> None:
    events = decode(b"event: add\ndata: 1\n\ndata: 2\n\nevent: x\nevent:\ndata: 3\n\n")
    assert [e.event for e in events] == ["add", "message", "message"]


def test_event_type_does_not_leak_from_a_block_without_data() -> None:
    assert [e.event for e in decode(b"event: lost\n\ndata: x\n\n")] == ["message"]


def test_data_appends_the_value_and_a_line_feed() -> None:
    assert datas(decode(b"data: a\ndata:\ndata: b\n\n")) == ["a\n\nb"]


def test_id_persists_across_events_and_an_empty_id_resets_it() -> None:
    events = decode(b"id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\nid:\ndata: d\n\n")
    assert [e.id for e in events] == ["7", "7", "", ""]


@pytest.mark.parametrize("value", [b"2\x00", b"\x00", b"a\x00b"])
def test_an_id_containing_nul_is_ignored(value: bytes) -> None:
    dec = SSEDecoder()
    events = dec.feed(b"id: 1\ndata: a\n\nid: " + value + b"\ndata: b\n\n")
    assert [e.id for e in events] == ["1", "1"]
    assert dec.last_event_id == "1"


def test_last_event_id_is_committed_at_each_blank_line_even_without_an_event() -> None:
    dec = SSEDecoder()
    dec.feed(b"id: 5\n")
    assert dec.last_event_id == "", "an id takes effect at the blank line that ends its block"
    dec.feed(b"\n")
    assert dec.last_event_id == "5"
    (event,) = dec.feed(b"data: x\n\n")
    assert event.id == "5"
    dec.feed(b"id: 9\n")
    dec.close()
    assert dec.last_event_id == "5", "an unterminated block never commits its id"


@pytest.mark.parametrize(
    "value",
    [b"-1", b"+1", b" 20", b"20 ", b"1a", b"1.5", b"", b"1e3", "\u0661".encode(), b"\xef\xbc\x91"],
)
def test_retry_counts_only_when_the_value_is_ascii_digits_alone(value: bytes) -> None:
    dec = SSEDecoder()
    dec.feed(b"retry: 1500\n\n")
    events = dec.feed(b"retry: " + value + b"\ndata: x\n\n")
    assert dec.retry == 1500
    assert events[0].retry is None


def test_retry_sets_the_reconnection_time_and_the_event_carries_its_own() -> None:
    dec = SSEDecoder()
    events = dec.feed(b"retry: 0250\ndata: a\n\ndata: b\n\nretry\n\n")
    assert dec.retry == 250
    assert [e.retry for e in events] == [250, None]


# ---- dispatch ----


@pytest.mark.parametrize(
    "block",
    [b"id: 7\n", b"retry: 10\n", b"event: x\n", b": comment\n", b"foo: bar\n", b"", b" \n"],
)
def test_no_phantom_events(block: bytes) -> None:
    dec = SSEDecoder()
    assert dec.feed(block + b"\n") == []
    assert dec.feed(b"\n\n\n") == []
    assert datas(dec.feed(b"data: d\n\n")) == ["d"]


def test_only_one_trailing_line_feed_is_removed() -> None:
    assert datas(decode(b"data: a\ndata\ndata\n\n")) == ["a\n\n"]


def test_dispatch_is_immediate_at_the_blank_line() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: a\n") == []
    assert datas(dec.feed(b"\n")) == ["a"]


# ---- end of input ----


@pytest.mark.parametrize("tail", [b"data: b\n", b"data: b", b"data", b"data:", b"data: b\r"])
def test_an_unterminated_event_is_discarded_and_reported(tail: bytes) -> None:
    dec = SSEDecoder()
    assert datas(dec.feed(b"data: a\n\n" + tail)) == ["a"]
    assert dec.dropped_partial is False, "only known after close()"
    assert dec.close() == []
    assert dec.dropped_partial is True


@pytest.mark.parametrize("tail", [b"", b"event: x\n", b"id: 3", b": c", b"dat", b"retry: 5\n"])
def test_nothing_is_reported_dropped_when_no_event_was_pending(tail: bytes) -> None:
    dec = SSEDecoder()
    dec.feed(b"data: a\n\n" + tail)
    dec.close()
    assert dec.dropped_partial is False


def test_close_twice_and_feed_after_close() -> None:
    dec = SSEDecoder()
    dec.feed(b"data: x")
    assert dec.close() == []
    assert dec.close() == []
    assert dec.dropped_partial is True, "a second close keeps the answer"
    with pytest.raises(ValueError, match=r"feed\(\) after close\(\)"):
        dec.feed(b"\n\n")


# ---- max_event_bytes ----


def test_oversized_event_raises_protocol_error_with_limit_offset_and_prior_events() -> None:
    dec = SSEDecoder(max_event_bytes=8)
    with pytest.raises(ProtocolError) as info:
        dec.feed(b"data: ok1\n\ndata: 0123456789abcdef\n\ndata: ok2\n\n")
    err = info.value
    assert isinstance(err, StreamfoldError)
    assert isinstance(err, ValueError)
    assert err.limit == 8
    # "data: ok1\n\n" is 11 bytes, "data: " 6 more, then 8 bytes fit: byte 25 is the first over.
    assert err.position == 25
    assert "max_event_bytes=8" in str(err)
    assert "25" in str(err)
    assert datas(err.events) == ["ok1"]
    # Nothing is lost: what followed the oversized event comes with the next call.
    assert datas(dec.feed(b"")) == ["ok2"]
    assert datas(dec.feed(b"data: ok3\n\n")) == ["ok3"]


def test_what_followed_an_oversized_event_comes_with_the_next_read_inside_a_payload() -> None:
    dec = SSEDecoder(max_event_bytes=8)
    with pytest.raises(ProtocolError):
        dec.feed(b"data: 0123456789abcdef\n\ndata: ok2\n\ndata: pa")
    # The next read only adds to the open payload, yet the event held back comes with it.
    assert datas(dec.feed(b"rt")) == ["ok2"]
    assert datas(dec.feed(b"\n\n")) == ["part"]


def test_every_oversized_event_is_raised_in_turn() -> None:
    dec = SSEDecoder(max_event_bytes=4)
    stream = b"data: a\n\ndata: 12345\n\ndata: b\n\nevent: 123456\ndata: c\n\ndata: d\n\n"
    with pytest.raises(ProtocolError) as first:
        dec.feed(stream)
    assert datas(first.value.events) == ["a"]
    with pytest.raises(ProtocolError) as second:
        dec.feed(b"data: e\n\n")
    assert datas(second.value.events) == ["b"]
    assert first.value.position is not None and second.value.position is not None
    assert second.value.position > first.value.position
    assert datas(dec.close()) == ["d", "e"]


def test_oversized_error_is_the_same_whatever_the_chunking() -> None:
    stream = b"data: ok\n\nid: 1\ndata: 0123456789\ndata: more\n\ndata: after\n\n"
    positions = set()
    for chunks in ([stream], [stream[i : i + 1] for i in range(len(stream))]):
        dec = SSEDecoder(max_event_bytes=8)
        events: list[ServerSentEvent] = []
        for chunk in chunks:
            try:
                events.extend(dec.feed(chunk))
            except ProtocolError as exc:
                events.extend(exc.events)
                positions.add(exc.position)
        events.extend(dec.close())
        assert triples(events) == [("message", "ok", ""), ("message", "after", "1")]
    assert len(positions) == 1


def test_an_event_exactly_at_the_limit_is_fine() -> None:
    assert datas(decode(b"data: abc\ndata: de\n\n", max_event_bytes=6)) == ["abc\nde"]
    with pytest.raises(ProtocolError):
        decode(b"data: abc\ndata: def\n\n", max_event_bytes=6)


def test_limit_counts_utf8_bytes_not_characters() -> None:
    assert datas(decode("data: 😀\n\n".encode(), max_event_bytes=4)) == ["😀"]
    with pytest.raises(ProtocolError):
        decode("data: 😀x\n\n".encode(), max_event_bytes=4)


def test_default_limit_is_16_mib_as_documented() -> None:
    assert SSEDecoder().max_event_bytes == 16 * 1024 * 1024
    default = inspect.signature(SSEDecoder).parameters["max_event_bytes"].default
    assert default == 16 * 1024 * 1024


_MEMORY_PROBE = textwrap.dedent(
    """
    import json, resource, sys
    from streamfold import ProtocolError, SSEDecoder

    def peak_bytes():
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024

    prefix = sys.argv[1].encode()
    limit = 256 * 1024
    chunk = b"x" * (1 << 20)
    dec = SSEDecoder(max_event_bytes=limit)
    dec.feed(b"data: warm up\\n\\n")
    base = peak_bytes()
    errors = 0
    dec.feed(prefix)
    for _ in range(96):
        try:
            dec.feed(chunk)
        except ProtocolError:
            errors += 1
    print(json.dumps({"growth": peak_bytes() - base, "errors": errors}))
    """
)


@pytest.mark.parametrize(("prefix", "errors"), [("data: ", 1), ("id: ", 1), (": ", 0)])
def test_memory_stays_bounded_by_the_limit_not_the_input(prefix: str, errors: int) -> None:
    # 96 MiB in one unterminated line against a 256 KiB limit. Rust's allocations are invisible
    # to tracemalloc, so the probe reads the peak resident size of a fresh interpreter.
    probe = subprocess.run(
        [sys.executable, "-c", _MEMORY_PROBE, prefix],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    report = json.loads(probe.stdout)
    assert report["errors"] == errors
    assert report["growth"] < 24 * 1024 * 1024, report


# ---- chunks and events as Python objects ----


def test_feed_takes_bytes_bytearray_and_memoryview() -> None:
    dec = SSEDecoder()
    assert datas(dec.feed(bytearray(b"data: a\n\n"))) == ["a"]
    assert datas(dec.feed(memoryview(b"xxdata: b\n\n")[2:])) == ["b"]
    assert datas(dec.feed(b"data: c\n\n")) == ["c"]


def test_a_str_chunk_is_refused_with_a_clear_type_error() -> None:
    dec = SSEDecoder()
    with pytest.raises(TypeError, match="bytes, not str"):
        dec.feed("data: x\n\n")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected bytes"):
        dec.feed(42)  # type: ignore[arg-type]
    assert datas(dec.feed(b"data: ok\n\n")) == ["ok"], "a refused chunk leaves no trace"


def test_feed_takes_its_chunk_by_position_or_by_name_and_nothing_else() -> None:
    # ``feed`` is called through CPython's calling convention directly (rust/python/fastcall.rs).
    dec = SSEDecoder()
    assert datas(dec.feed(b"data: a\n\n")) == ["a"]
    assert datas(dec.feed(chunk=b"data: b\n\n")) == ["b"]
    assert list(inspect.signature(SSEDecoder.feed).parameters) == ["self", "chunk"]
    one = "exactly one argument, chunk"
    with pytest.raises(TypeError, match=one):
        dec.feed()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=one):
        dec.feed(b"x", b"y")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=one):
        dec.feed(data=b"x")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=one):
        dec.feed(b"x", chunk=b"y")  # type: ignore[misc]
    with pytest.raises(TypeError):
        SSEDecoder.feed(object(), b"x")  # type: ignore[arg-type]
    assert datas(dec.feed(b"data: c\n\n")) == ["c"], "a refused call leaves no trace"


def test_server_sent_event_has_httpx_sse_attributes() -> None:
    (event,) = decode(b'event: delta\nid: 3\nretry: 10\ndata: {"a": [1, 2.5, null]}\n\n')
    assert event.event == "delta"
    assert event.data == '{"a": [1, 2.5, null]}'
    assert event.id == "3"
    assert event.retry == 10
    assert event.json() == {"a": [1, 2.5, None]}
    assert event.json() == json.loads(event.data)
    assert repr(event) == (
        "ServerSentEvent(event='delta', data='{\"a\": [1, 2.5, null]}', id='3', retry=10)"
    )


def test_server_sent_event_constructor_defaults_match_httpx_sse() -> None:
    event = ServerSentEvent()
    assert (event.event, event.data, event.id, event.retry) == ("message", "", "", None)
    assert ServerSentEvent(event="").event == "message"
    made = ServerSentEvent(event="x", data="d", id="1", retry=5)
    assert made == ServerSentEvent("x", "d", "1", 5)
    assert made != ServerSentEvent("x", "d", "1", None)
    assert hash(made) == hash(ServerSentEvent("x", "d", "1", 5))
    assert made != ("x", "d", "1", 5)
    assert sf.ServerSentEvent is ServerSentEvent


def test_json_of_non_json_data_is_a_protocol_error() -> None:
    (event,) = decode(b"event: delta\ndata: {not json\n\n")
    with pytest.raises(ProtocolError, match="delta") as info:
        event.json()
    assert info.value.event == "delta"


def test_events_are_immutable() -> None:
    (event,) = decode(b"data: x\n\n")
    with pytest.raises(AttributeError):
        event.data = "y"  # type: ignore[misc]


def test_repeated_types_and_ids_share_one_string() -> None:
    events = decode(b"event: delta\nid: 1\ndata: a\n\nevent: delta\ndata: b\n\n")
    assert events[0].event is events[1].event
    assert events[0].id is events[1].id


def test_data_is_decoded_once_and_json_reads_the_same_text() -> None:
    (event,) = decode(b'data: {"t": "caf\xc3\xa9 \xff"}\n\n')
    assert event.json() == {"t": "café \ufffd"}, "json() before data: same replacement"
    assert event.data == '{"t": "café \ufffd"}'
    assert event.data is event.data
    assert event == ServerSentEvent(data='{"t": "café \ufffd"}')
    assert hash(event) == hash(ServerSentEvent(data='{"t": "café \ufffd"}'))


@pytest.mark.parametrize("tail", [b"", "é".encode(), "中".encode(), "😀".encode(), b"\xff\xe2\x82"])
def test_large_data_decodes_exactly_like_small(tail: bytes) -> None:
    # Texts of 64 KiB and more are built by a different path; the result must not differ.
    for head in ("ab" * 40_000, "é" * 40_000, "中" * 30_000):
        raw = head.encode() + tail
        (event,) = decode(b"data: " + raw + b"\n\n")
        assert event.data == raw.decode("utf-8", "replace")


def test_events_outlive_their_decoder_and_batch() -> None:
    # The events of one feed share one buffer: each must keep it alive on its own, and read
    # only its own part of it.
    dec = SSEDecoder()
    kept = dec.feed(b"data: first\n\ndata: " + b"x" * 70_000 + b"\n\ndata: caf\xc3\xa9\n\n")
    del dec
    gc.collect()
    last = kept.pop()
    del kept[0]
    gc.collect()
    assert last.data == "café"
    assert last.data_bytes == "café".encode()
    assert kept[0].data == "x" * 70_000
    assert kept[0].data_bytes == b"x" * 70_000


def test_events_from_the_free_list_carry_only_their_own_values() -> None:
    dec = SSEDecoder()
    for round_ in range(3):
        batch = dec.feed(
            b"".join(b"event: t%d\nid: %d\ndata: %d\n\n" % (i, i, i * round_) for i in range(2000))
        )
        assert [(e.event, e.id, e.data) for e in batch] == [
            (f"t{i}", str(i), str(i * round_)) for i in range(2000)
        ]
        del batch


def test_a_list_feed_returns_is_the_callers_alone() -> None:
    # A read that ends no event gets the empty list the decoder made last time, when nobody else
    # holds it any more: one the caller kept, or filled, must never come back from a later call.
    dec = SSEDecoder()
    kept = dec.feed(b"data: a")  # inside a payload: no event
    filled: list[object] = dec.feed(b"b")  # type: ignore[assignment]  # a caller's own list
    filled.append("mine")
    again = dec.feed(b"c")
    bigger = dec.feed(b"x" * 5000)  # a read the decoder holds rather than copies
    assert len({id(kept), id(filled), id(again), id(bigger)}) == 4
    (event,) = dec.feed(b"\n\n")
    assert event.data == "abc" + "x" * 5000
    assert kept == again == bigger == [] and filled == ["mine"]
    for _ in range(3):  # dropped each time: the same list may come back, always empty
        assert dec.feed(b"data: more") == []
    mine: list[object] = dec.feed(b"data: more")  # type: ignore[assignment]
    mine.append("dropped")  # filled, then dropped by the caller
    del mine
    assert dec.feed(b"data: more") == []


def test_a_cycle_through_a_list_feed_returned_is_collected() -> None:
    # The decoder keeps the last empty list it returned: a caller who puts the decoder in that
    # list and drops both makes a cycle only the garbage collector can free.
    class Marker:
        pass

    dec = SSEDecoder()
    marker = Marker()
    alive = weakref.ref(marker)
    handed_out: list[object] = dec.feed(b"data: a")  # type: ignore[assignment]
    handed_out.extend([dec, marker])
    del handed_out
    del dec, marker
    gc.collect()
    assert alive() is None


def test_events_do_not_see_a_bytearray_changed_after_feed() -> None:
    # A `bytes` chunk is immutable and may be shared by the events cut from it; a bytearray
    # (or the object behind a memoryview) can change, so its bytes must have been copied.
    body = b"event: a\ndata: " + b"x" * 100 + b"\n\n"
    for as_view in (False, True):
        target = bytearray(body)
        (event,) = SSEDecoder().feed(memoryview(target) if as_view else target)
        target[20:30] = b"y" * 10
        assert event.data == "x" * 100
        assert event.event == "a"


@pytest.mark.parametrize("limit", [0, -1, -5])
def test_a_size_limit_below_one_is_a_value_error_naming_it(limit: int) -> None:
    # A limit of 0 was accepted and then refused every event as too large.
    must = rf"must be 1 or more, got {limit}\b"
    with pytest.raises(ValueError, match=rf"max_event_bytes {must}"):
        SSEDecoder(max_event_bytes=limit)
    with pytest.raises(ValueError, match=rf"max_line_bytes {must}"):
        sf.JsonLinesDecoder(max_line_bytes=limit)
    with pytest.raises(ValueError, match=rf"max_event_bytes {must}"):
        list(sf.iter_sse([b"data: {}\n\n"], max_event_bytes=limit))
    with pytest.raises(ValueError, match=rf"max_line_bytes {must}"):
        list(sf.iter_json_lines([b"{}\n"], max_line_bytes=limit))
    # fold/events name their own option, for JSON lines and ``auto`` too.
    cases: list[tuple[ProviderName, bytes]] = [
        ("openai", b"data: {}\n\n"),
        ("cohere-v1", b"{}\n"),
        ("auto", b"data: {}\n\n"),
        ("auto", b"{}\n"),
    ]
    for provider, body in cases:
        with pytest.raises(ValueError, match=rf"max_event_bytes {must}"):
            sf.fold([body], provider=provider, max_event_bytes=limit)
        with pytest.raises(ValueError, match=rf"max_event_bytes {must}"):
            list(sf.events([body], provider=provider, max_event_bytes=limit))
    # The HTTP and resumable forms refuse it before connecting.
    for make in (sf.stream, sf.astream):
        with pytest.raises(ValueError, match=rf"max_event_bytes {must}"):
            make("GET", "http://127.0.0.1:9/", provider="openai", max_event_bytes=limit)

    def connect(cursor: sf.Cursor) -> Iterable[bytes]:
        pytest.fail("connected with an invalid max_event_bytes")

    with pytest.raises(ValueError, match=rf"max_event_bytes {must}"):
        sf.fold_resumable(connect, "openai", max_event_bytes=limit)
    assert SSEDecoder(max_event_bytes=1).max_event_bytes == 1
    assert sf.JsonLinesDecoder(max_line_bytes=1).max_line_bytes == 1
    assert sf.JsonLinesDecoder().max_line_bytes == 16 * 2**20


@pytest.mark.parametrize("limit", [2**64, 2**70, 2**200])
def test_an_immense_size_limit_is_a_value_error_naming_it(limit: int) -> None:
    with pytest.raises(ValueError, match=rf"max_event_bytes is too large: {limit}"):
        SSEDecoder(max_event_bytes=limit)
    with pytest.raises(ValueError, match=rf"max_line_bytes is too large: {limit}"):
        sf.JsonLinesDecoder(max_line_bytes=limit)
    with pytest.raises(TypeError):
        SSEDecoder(max_event_bytes=None)  # type: ignore[arg-type]
