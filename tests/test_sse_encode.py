"""sf.encode_sse, sf.encode_sse_comment and ServerSentEvent.encode: what the event-stream
rules let a writer say, written so that sf.SSEDecoder reads it back the same under any split."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

import streamfold as sf
from streamfold import ServerSentEvent, SSEDecoder


def decode(chunks: list[bytes]) -> list[ServerSentEvent]:
    dec = SSEDecoder()
    out: list[ServerSentEvent] = []
    for chunk in chunks:
        out += dec.feed(chunk)
    out += dec.close()
    assert not dec.dropped_partial
    return out


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted(c % (len(data) + 1) for c in cuts)
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


def test_data_line_ends_become_data_lines() -> None:
    assert sf.encode_sse("a\nb\rc\r\nd") == b"data: a\ndata: b\ndata: c\ndata: d\n\n"
    assert decode([sf.encode_sse("a\nb\rc\r\nd")])[0].data == "a\nb\nc\nd"


def test_empty_data_is_one_empty_data_line_and_still_dispatches() -> None:
    assert sf.encode_sse("") == b"data:\n\n"
    assert decode([sf.encode_sse("")]) == [ServerSentEvent(data="")]


def test_a_leading_space_survives_the_one_space_the_reader_strips() -> None:
    assert decode([sf.encode_sse("  x")])[0].data == "  x"


def test_fields() -> None:
    out = sf.encode_sse("{}", event="delta", id="7", retry=3000)
    assert out == b"id: 7\nevent: delta\nretry: 3000\ndata: {}\n\n"
    assert decode([out]) == [ServerSentEvent("delta", "{}", "7", 3000)]
    # An empty id is written: it resets the reader's last event id.
    assert decode([sf.encode_sse("a", id="1"), sf.encode_sse("b", id="")])[1].id == ""


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"id": "a\nb"}, "line break"),
        ({"id": "a\rb"}, "line break"),
        ({"id": "a\x00b"}, "NUL"),
        ({"event": "a\nb"}, "line break"),
        ({"event": "a\r"}, "line break"),
        ({"retry": -1}, "milliseconds"),
        ({"retry": 2**64}, "milliseconds"),
    ],
)
def test_what_a_reader_would_take_differently_is_refused(
    kwargs: dict[str, object], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        sf.encode_sse("x", **kwargs)  # type: ignore[arg-type]


def test_retry_must_be_an_int() -> None:
    with pytest.raises(TypeError, match="int"):
        sf.encode_sse("x", retry=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="int"):
        sf.encode_sse("x", retry=True)


def test_lone_surrogate_data_is_refused_as_a_value_error() -> None:
    # UTF-8 cannot carry it; UnicodeEncodeError is a ValueError.
    with pytest.raises(ValueError):
        sf.encode_sse("\ud83d")


def test_comments_are_keep_alives_that_dispatch_nothing() -> None:
    assert sf.encode_sse_comment("ping") == b": ping\n\n"
    assert sf.encode_sse_comment("") == b":\n\n"
    # A comment holding line ends is one comment line per line: all of it stays a comment.
    assert sf.encode_sse_comment("a\r\nb\nc") == b": a\n: b\n: c\n\n"
    stream = sf.encode_sse_comment("x\ndata: injected") + sf.encode_sse("real")
    assert decode([stream]) == [ServerSentEvent(data="real")]


def test_server_sent_event_encode() -> None:
    assert ServerSentEvent(data="x").encode() == b"data: x\n\n"
    event = ServerSentEvent("content-delta", "a\nb", "9", 10)
    assert event.encode() == b"id: 9\nevent: content-delta\nretry: 10\ndata: a\ndata: b\n\n"
    assert decode([event.encode()]) == [event]
    with pytest.raises(ValueError, match="line break"):
        ServerSentEvent("a\nb", "x").encode()


def test_decoded_events_encode_back_to_the_same_events() -> None:
    stream = b": hi\r\nevent: e\r\nid: 3\r\ndata: a\r\ndata:  b\r\n\r\ndata: c\n\n"
    events = decode([stream])
    assert decode([b"".join(e.encode() for e in events)]) == events


line_text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\r\n\x00"))
any_text = st.text(
    st.one_of(
        st.sampled_from(["\n", "\r", " ", ":", "\ufeff"]),
        st.characters(exclude_categories=["Cs"]),
    )
)


@dataclass
class Written:
    data: str
    event: str | None
    id: str | None
    retry: int | None
    comment: str | None


written = st.builds(
    Written,
    data=any_text,
    event=st.none() | line_text,
    id=st.none() | line_text,
    retry=st.none() | st.integers(0, 2**64 - 1),
    comment=st.none() | any_text,
)


@given(st.lists(written, max_size=6), st.lists(st.integers(0, 10**6), max_size=12))
def test_decode_of_encode_is_the_events_under_any_split(
    events: list[Written], cuts: list[int]
) -> None:
    stream = b""
    expected = []
    last_id = ""
    for w in events:
        if w.comment is not None:
            stream += sf.encode_sse_comment(w.comment)
        stream += sf.encode_sse(w.data, event=w.event, id=w.id, retry=w.retry)
        last_id = last_id if w.id is None else w.id
        data = w.data.replace("\r\n", "\n").replace("\r", "\n")
        expected.append(ServerSentEvent(w.event or "message", data, last_id, w.retry))
    assert decode(split(stream, cuts)) == expected
    assert decode([stream[i : i + 1] for i in range(len(stream))]) == expected
