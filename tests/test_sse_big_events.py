"""Big events read in pieces. Once an event's data passes 64 KiB, a `bytes` chunk that is all
data (no line end in it) is kept by the event rather than copied into the decoder's buffer.
These tests make such events (with the grammar's line ends, multi-byte characters cut
anywhere, invalid bytes, more lines after the big one) and check them against the reference
decoder, whatever the chunking, and that nothing is kept once it is no longer needed."""

from __future__ import annotations

import itertools
import json
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_reference import RefEvent, interpret
from streamfold import ProtocolError, ServerSentEvent, SSEDecoder

HELD_FROM = 64 * 1024  # the size from which the decoder holds chunks (rust/python/sse.rs)
EOL = st.sampled_from([b"\n", b"\r", b"\r\n"])
TEXT = st.sampled_from(["ab", "é", "中", "😀", " :", "\x00", "\ufeff"]).map(str.encode)
RAW = st.sampled_from([b"\xff", b"\xe2\x82", b"\xf0\x9f"])


@st.composite
def big_value(draw: st.DrawFn) -> bytes:
    """70-150 KB: a pattern of text repeated, with a few odd bytes, so that every chunk
    boundary lands somewhere different in it."""
    unit = b"".join(draw(st.lists(st.one_of(TEXT, TEXT, RAW), min_size=1, max_size=6)))
    size = draw(st.integers(HELD_FROM + 1000, 150_000))
    return (unit * (size // len(unit) + 1))[:size]


@st.composite
def big_block(draw: st.DrawFn) -> bytes:
    lines = []
    if draw(st.booleans()):
        lines.append(b"event: big" + draw(EOL))
    lines.append(b"data: " + draw(big_value()) + draw(EOL))
    for _ in range(draw(st.integers(0, 2))):
        value = draw(st.sampled_from([b"", b"tail", b"x" * 40]))
        lines.append(draw(st.sampled_from([b"data: ", b"data:", b"id: 7\n: c\ndata: "])) + value)
        lines[-1] += draw(EOL)
    return b"".join(lines) + draw(EOL)


@st.composite
def big_stream(draw: st.DrawFn) -> bytes:
    small = st.sampled_from([b"data: a\n\n", b"event: x\ndata: b\r\n\r\n", b": ping\n\n", b""])
    parts = []
    for _ in range(draw(st.integers(1, 2))):
        parts += [draw(small), draw(big_block()), draw(small)]
    if draw(st.booleans()):  # an unterminated big event at the end
        parts.append(b"data: " + draw(big_value()))
    return b"".join(parts)


def cut(stream: bytes, sizes: list[int]) -> list[bytes]:
    chunks: list[bytes] = []
    at = 0
    for size in itertools.cycle(sizes):
        if at >= len(stream):
            return chunks
        chunks.append(stream[at : at + size])
        at += size
    raise AssertionError("unreachable")


def decode(chunks: list[bytes], **kwargs: int) -> tuple[list[ServerSentEvent], SSEDecoder]:
    dec = SSEDecoder(**kwargs)
    events: list[ServerSentEvent] = []
    for chunk in chunks:
        events += dec.feed(chunk)
    events += dec.close()
    return events, dec


@settings(max_examples=60, deadline=None)
@given(big_stream(), st.lists(st.integers(1, 9000), min_size=1, max_size=6))
def test_big_events_in_any_chunks_match_the_reference(stream: bytes, sizes: list[int]) -> None:
    events, dec = decode(cut(stream, sizes))
    ref = interpret(stream)
    assert [RefEvent(e.event, e.data, e.id, e.retry) for e in events] == ref.events
    assert (dec.last_event_id, dec.retry, dec.dropped_partial) == (
        ref.last_event_id,
        ref.retry,
        ref.dropped_partial,
    )
    whole, _ = decode([stream])
    assert [e.data_bytes for e in events] == [e.data_bytes for e in whole]


def test_a_held_event_reads_like_any_other() -> None:
    doc = {"text": "é中😀" * 30_000, "n": 1}
    payload = json.dumps(doc, ensure_ascii=False).encode()
    stream = b"event: big\ndata: " + payload + b"\n\ndata: next\n\n"
    events, _ = decode(cut(stream, [4096]))
    (whole, following), _ = decode([stream])
    big = events[0]
    assert big.json() == doc
    assert big.data_bytes == payload
    assert big.data == payload.decode()
    assert big == whole and hash(big) == hash(whole)
    assert repr(big) == repr(whole)
    assert events[1] == following


def test_bytearray_and_memoryview_chunks_are_copied_and_agree() -> None:
    stream = b"data: " + b"0123456789" * 20_000 + b"\n\n"
    chunks = cut(stream, [4096])
    events, _ = decode(chunks)
    arrays = [bytearray(c) for c in chunks]
    dec = SSEDecoder()
    got = [e for a in arrays for e in dec.feed(a)] + dec.close()
    for a in arrays:
        a[:] = b"!" * len(a)  # changing them afterwards changes nothing
    assert [e.data for e in got] == [e.data for e in events]


def test_held_chunks_are_released_with_their_event() -> None:
    chunk = b"y" * 4096
    before = sys.getrefcount(chunk)
    dec = SSEDecoder()
    dec.feed(b"data: " + b"x" * HELD_FROM)
    for _ in range(3):
        assert dec.feed(chunk) == []
    assert sys.getrefcount(chunk) == before + 3  # held, not copied
    (event,) = dec.feed(b"\n\n")
    assert len(event.data_bytes) == HELD_FROM + 3 * 4096
    assert sys.getrefcount(chunk) == before + 3
    del event
    assert sys.getrefcount(chunk) == before


@pytest.mark.parametrize("how", ["close", "limit"])
def test_held_chunks_of_a_dropped_event_are_released(how: str) -> None:
    chunk = b"y" * 4096
    before = sys.getrefcount(chunk)
    dec = SSEDecoder(max_event_bytes=HELD_FROM + 3 * 4096)
    dec.feed(b"data: " + b"x" * HELD_FROM)
    dec.feed(chunk)
    dec.feed(chunk)
    assert sys.getrefcount(chunk) == before + 2
    if how == "close":
        assert dec.close() == []
        assert dec.dropped_partial
    else:
        dec.feed(chunk)  # exactly at the limit: still held
        with pytest.raises(ProtocolError) as err:
            dec.feed(chunk)
        assert err.value.position == 6 + HELD_FROM + 3 * 4096
        assert dec.feed(b"\n\ndata: ok\n\n")[0].data == "ok"
    assert sys.getrefcount(chunk) == before


def test_over_the_limit_while_holding_is_reported_where_it_happens() -> None:
    stream = b"data: first\n\n" + b"data: " + b"z" * 150_000 + b"\n\ndata: after\n\n"
    limit = 100_000
    positions, after = [], []
    for chunks in ([stream], cut(stream, [4096]), cut(stream, [1, 9000, 333])):
        dec = SSEDecoder(max_event_bytes=limit)
        got: list[str] = []
        for chunk in chunks:
            try:
                got += [e.data for e in dec.feed(chunk)]
            except ProtocolError as err:
                positions.append(err.position)
                got += [e.data for e in err.events]
        got += [e.data for e in dec.close()]  # what followed the error in its chunk
        after.append(got)
    assert positions == [13 + 6 + limit] * 3
    assert after == [["first", "after"]] * 3


def test_small_reads_of_a_big_event_are_copied_not_kept() -> None:
    # Keeping a few-byte read would cost more than its bytes (a `bytes` header each).
    chunk = b"y" * 100
    before = sys.getrefcount(chunk)
    dec = SSEDecoder()
    dec.feed(b"data: " + b"x" * HELD_FROM)
    dec.feed(chunk)
    assert sys.getrefcount(chunk) == before
    (event,) = dec.feed(b"\n\n")
    assert event.data_bytes == b"x" * HELD_FROM + chunk
