"""``ServerSentEvent.json()`` reads every payload ``json.loads`` reads, with the same value:
the SDKs parse with ``json.loads``, so a stream they accept must not abort here. jiter parses
first; lone surrogate escapes (a server that cuts its text by UTF-16 units sends ``"\\ud83d"``
when a token ends inside an emoji) and nesting deeper than 200 fall back to ``json.loads``."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import streamfold as sf
from streamfold import ProtocolError, ServerSentEvent, SSEDecoder


def one_event(data: str, event: str = "delta") -> ServerSentEvent:
    (frame,) = SSEDecoder().feed(f"event: {event}\ndata: {data}\n\n".encode())
    return frame


@pytest.mark.parametrize(
    "data",
    [
        '{"t": "Hi \\ud83d"}',  # a lone high surrogate, the end of a text cut inside an emoji
        '{"t": "\\ude00!"}',  # the lone low surrogate that follows it
        '"\\ud83d\\ude00"',  # a valid pair: one character
        '["\\udbff", "\\udc00\\udc00", "\\ud83dx", "\\ud83d\\u00e9"]',
        '{"\\ud800": 1}',  # in a key
        "[" * 300 + "]" * 300,  # deeper than jiter's limit
    ],
)
def test_json_reads_what_json_loads_reads(data: str) -> None:
    assert one_event(data).json() == json.loads(data)


def test_lone_surrogates_are_kept_not_replaced() -> None:
    assert one_event('{"t": "Hi \\ud83d"}').json() == {"t": "Hi \ud83d"}
    assert one_event('"\\ude00!"').json() == "\ude00!"


@pytest.mark.parametrize(
    "data",
    ['"\\ud83"', '"\\uZZZZ"', '"\\x"', '"\\ud83d', '{"t": "\\ud83d"', "[" * 300, "", "[DONE]"],
)
def test_invalid_json_is_still_a_protocol_error(data: str) -> None:
    with pytest.raises(ProtocolError, match=r'data of event "delta" is not valid JSON: .* at byte'):
        one_event(data).json()


def test_a_payload_made_by_the_constructor_falls_back_too() -> None:
    assert ServerSentEvent(data='["\\ud83d"]').json() == ["\ud83d"]


#: Pieces of JSON text around escapes: valid and lone surrogates, broken escapes, structure.
PIECES = st.sampled_from(
    [
        "a",
        " ",
        "é",
        "😀",
        '"',
        "\\",
        "u",
        "d83d",
        "\\ud83d",
        "\\ude00",
        "\\udbff",
        "\\udc00",
        "\\u00e9",
        "\\u12",
        '\\"',
        "\\n",
        "\\\\",
        "\\x",
        ",",
        ":",
        "1",
        "[",
        "]",
        "{",
        "}",
    ]
)


@st.composite
def json_ish(draw: st.DrawFn) -> str:
    """Text that is often, not always, JSON: a string, array or object around random pieces."""
    body = "".join(draw(st.lists(PIECES, max_size=12)))
    shape = draw(st.sampled_from(['"@"', '["@", 1]', '{"k": "@"}', '{"@": ["@"]}', "@"]))
    return shape.replace("@", body)


@given(json_ish())
@example('"\\ud83d"')
@example('"\\ude00\\ud83d"')
@example('"\\ud83d\\u12"')
def test_json_agrees_with_json_loads(data: str) -> None:
    frame = one_event(data)
    try:
        want: Any = json.loads(frame.data)
    except ValueError:
        with pytest.raises(ProtocolError):
            frame.json()
        return
    assert frame.json() == want


@pytest.mark.parametrize(
    ("data", "pos"),
    [("", 0), ("{oops", 1), ("[DONE]", 1), ('{"é": 1,\n "a": ]', 15)],
)
def test_not_json_is_also_the_json_decode_error_httpx_sse_raises(data: str, pos: int) -> None:
    # Code written for httpx-sse catches `json.JSONDecodeError` around `sse.json()`; it moves
    # over unchanged: the ProtocolError is also that error, placed as json.loads places it.
    body = "".join(f"data: {line}\n" for line in data.split("\n")) + "\n"
    (decoded,) = SSEDecoder().feed(body.encode())
    for ev in (decoded, ServerSentEvent(event="delta", data=data)):
        with pytest.raises(json.JSONDecodeError) as info:
            ev.json()
        error = info.value
        # Exported, so code can catch the one error `json()` raises by its own name.
        assert type(error) is sf.InvalidEventJsonError
        assert "InvalidEventJsonError" in sf.__all__
        assert isinstance(error, ProtocolError) and error.event == ev.event
        assert (error.doc, error.pos) == (data, pos)
        with pytest.raises(json.JSONDecodeError) as want:
            json.loads(data)
        assert (error.lineno, error.colno) == (want.value.lineno, want.value.colno)
        assert str(error).startswith(f"data of event {ev.event!r}".replace("'", '"'))
        copied = pickle.loads(pickle.dumps(error))
        assert type(copied) is type(error)
        assert (str(copied), copied.doc, copied.pos, copied.event) == (
            str(error),
            data,
            pos,
            ev.event,
        )
