"""Chunking invariance against the reference: random streams built from the pieces of the SSE
grammar, cut at random (down to single bytes), decode exactly as the spec-text reference
decoder in ``tests/sse_reference.py`` decodes them whole."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from hypothesis import example, given
from hypothesis import strategies as st

from sse_reference import RefEvent, RefResult, interpret
from streamfold import SSEDecoder

EOL = st.sampled_from([b"\n", b"\r", b"\r\n"])
NAMES = st.sampled_from(
    [b"data", b"data", b"data", b"event", b"id", b"retry", b"Data", b"foo", b"dat", b"data "]
)
VALUE_TEXT = st.text(
    alphabet=st.sampled_from(list("ab :0123456789-é中😀\x00\t\ufeff")),
    max_size=8,
).map(lambda s: s.encode())
RAW_BYTES = st.sampled_from([b"\xff", b"\xe2\x82", b"\xf0\x9f", b"\xed\xa0\x80", b"\xef\xbb\xbf"])
DIGITS = st.integers(0, 10**25).map(lambda n: str(n).encode())
VALUE = st.one_of(DIGITS, st.lists(st.one_of(VALUE_TEXT, RAW_BYTES), max_size=3).map(b"".join))
SEPARATOR = st.sampled_from([b":", b": ", b": ", b":  ", b""])


@st.composite
def field_line(draw: st.DrawFn) -> bytes:
    name = draw(NAMES)
    separator = draw(SEPARATOR)
    value = draw(VALUE) if separator else b""
    return name + separator + value + draw(EOL)


@st.composite
def comment_line(draw: st.DrawFn) -> bytes:
    return b":" + draw(VALUE) + draw(EOL)


@st.composite
def block(draw: st.DrawFn) -> bytes:
    """Lines, usually ended by a blank line: what one event looks like, give or take."""
    lines = draw(st.lists(st.one_of(field_line(), field_line(), comment_line()), max_size=5))
    ending = draw(st.sampled_from([b"\n", b"\r", b"\r\n", b"\n", b""]))
    return b"".join(lines) + ending


@st.composite
def sse_stream(draw: st.DrawFn) -> bytes:
    bom = draw(st.sampled_from([b"", b"", b"\xef\xbb\xbf", b"\xef\xbb"]))
    blocks = draw(st.lists(block(), max_size=8))
    tail = draw(st.one_of(st.just(b""), VALUE, field_line()))
    return bom + b"".join(blocks) + tail


@st.composite
def stream_and_cuts(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    stream = draw(sse_stream())
    if draw(st.booleans()):
        return stream, [stream[i : i + 1] for i in range(len(stream))]
    cuts = sorted(draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    bounds = [0, *cuts, len(stream)]
    return stream, [stream[a:b] for a, b in itertools.pairwise(bounds)]


@dataclass
class Outcome:
    events: list[RefEvent]
    last_event_id: str
    retry: int | None
    dropped_partial: bool


def run_streamfold(chunks: list[bytes]) -> Outcome:
    dec = SSEDecoder()
    events = []
    for chunk in chunks:
        events.extend(dec.feed(chunk))
    events.extend(dec.close())
    return Outcome(
        [RefEvent(e.event, e.data, e.id, e.retry) for e in events],
        dec.last_event_id,
        dec.retry,
        dec.dropped_partial,
    )


def expected(stream: bytes) -> Outcome:
    ref: RefResult = interpret(stream)
    return Outcome(ref.events, ref.last_event_id, ref.retry, ref.dropped_partial)


@given(stream_and_cuts())
@example((b"data: a\r\n\n", [b"data: a\r", b"\n\n"]))
@example((b"\xef\xbb\xbfdata: x\n\n", [b"\xef", b"\xbb", b"\xbfdata: x\n\n"]))
@example((b"id: 1\0\ndata\n\nretry: 99\n\n", [b"id: 1\0\ndata\n\nretry: 99\n\n"]))
@example((b"retry: 123456789012345678901234\n\n", [b"retry: 1234567890", b"12345678901234\n\n"]))
def test_random_streams_in_random_chunks_match_the_reference(
    case: tuple[bytes, list[bytes]],
) -> None:
    stream, chunks = case
    assert b"".join(chunks) == stream
    assert run_streamfold(chunks) == expected(stream)


@given(st.binary(max_size=200), st.lists(st.integers(0, 200), max_size=8))
def test_arbitrary_bytes_match_the_reference(data: bytes, cuts: list[int]) -> None:
    points = sorted(min(c, len(data)) for c in cuts)
    bounds = [0, *points, len(data)]
    chunks = [data[a:b] for a, b in itertools.pairwise(bounds)]
    assert run_streamfold(chunks) == expected(data)


def test_reference_reproduces_the_spec_examples() -> None:
    # The reference itself is checked against the spec's own examples.
    ref = interpret(
        b": test stream\n\ndata: first event\nid: 1\n\n"
        b"data:second event\nid\n\ndata:  third event\n\n"
    )
    assert [(e.data, e.id) for e in ref.events] == [
        ("first event", "1"),
        ("second event", ""),
        (" third event", ""),
    ]
    ref = interpret(b"data\n\ndata\ndata\n\ndata:")
    assert [e.data for e in ref.events] == ["", "\n"]
    assert ref.dropped_partial
    assert [e.data for e in interpret(b"data: YHOO\ndata: +2\ndata: 10\n\n").events] == [
        "YHOO\n+2\n10"
    ]
