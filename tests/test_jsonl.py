"""JsonLinesDecoder: newline-delimited JSON (Cohere v1 chat streams), fed in any chunks."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamfold import JsonLinesDecoder, ProtocolError, StreamfoldError


def decode(*chunks: bytes, max_line_bytes: int | None = None) -> list[Any]:
    dec = (
        JsonLinesDecoder()
        if max_line_bytes is None
        else JsonLinesDecoder(max_line_bytes=max_line_bytes)
    )
    out: list[Any] = []
    for chunk in chunks:
        out.extend(dec.feed(chunk))
    out.extend(dec.close())
    return out


def test_each_line_is_one_json_value() -> None:
    stream = b'{"a": 1}\n[1, "two", null]\n"text"\n3.5\ntrue\n'
    assert decode(stream) == [{"a": 1}, [1, "two", None], "text", 3.5, True]


def test_values_parse_as_json_loads_does() -> None:
    big = 2**80
    (value,) = decode(f'{{"big": {big}, "u": "\\u00e9\\ud83d\\ude00", "e": 1e3}}\n'.encode())
    assert value == {"big": big, "u": "é😀", "e": 1000.0}
    (nan, inf) = decode(b"NaN\nInfinity\n")
    assert math.isnan(nan)
    assert inf == math.inf
    assert decode(b'{"k": 1, "k": 2}\n') == [{"k": 2}], "the last duplicate key wins"


def test_lone_surrogate_escapes_are_kept_as_json_loads_keeps_them() -> None:
    # A server that cuts its text by UTF-16 units ends a piece inside an emoji: jiter refuses
    # the lone half, json.loads (what the SDKs use) keeps it; the line after is still read.
    lines = [b'{"text": "Hi \\ud83d"}', b'{"text": "\\ude00!"}', b'["\\udbff\\udbff"]']
    stream = b"\n".join(lines) + b"\n"
    assert decode(stream) == [json.loads(line) for line in lines]
    assert decode(stream)[0] == {"text": "Hi \ud83d"}


def test_blank_and_whitespace_only_lines_are_skipped() -> None:
    assert decode(b"\n\n1\n   \n\t\n\r\n2\n\n") == [1, 2]


def test_crlf_is_accepted() -> None:
    assert decode(b'{"a": 1}\r\n{"b": 2}\r\n') == [{"a": 1}, {"b": 2}]


def test_a_last_line_without_newline_is_parsed_at_close() -> None:
    dec = JsonLinesDecoder()
    assert dec.feed(b"1\n2") == [1]
    assert dec.close() == [2]
    assert dec.close() == []


def test_a_leading_byte_order_mark_is_removed() -> None:
    assert decode(b"\xef\xbb", b"\xbf[1]\n[2]\n") == [[1], [2]]


def test_lines_split_anywhere_decode_alike() -> None:
    stream = '{"text": "é中😀"}\r\n\n[1, 2]\n"x"'.encode()
    whole = decode(stream)
    assert whole == [{"text": "é中😀"}, [1, 2], "x"]
    for i, j in itertools.combinations(range(len(stream) + 1), 2):
        assert decode(stream[:i], stream[i:j], stream[j:]) == whole, (i, j)


def test_a_line_that_is_not_json_raises_with_its_line_number_and_offset() -> None:
    dec = JsonLinesDecoder()
    with pytest.raises(ProtocolError) as info:
        dec.feed(b'{"ok": 1}\n\n{"broken": \n{"after": 2}\n')
    err = info.value
    assert isinstance(err, StreamfoldError)
    assert isinstance(err, ValueError)
    assert err.line == 3
    assert "line 3" in str(err)
    # The line starts at byte 11; the parser gives up at its end, 11 bytes in.
    assert err.position == 11 + len(b'{"broken": ')
    assert err.events == [{"ok": 1}]
    # The lines after the bad one are not lost: they come with the next call.
    assert dec.feed(b'{"later": 3}\n') == [{"after": 2}, {"later": 3}]


def test_bad_json_at_close_raises_too() -> None:
    dec = JsonLinesDecoder()
    assert dec.feed(b"1\n{") == [1]
    with pytest.raises(ProtocolError) as info:
        dec.close()
    assert info.value.line == 2
    assert info.value.events == []


@pytest.mark.parametrize(
    "line", [b"{", b"nope", b"1 2", b'{"a": 1} x', b"[1,]", b'"\xff"', b"\xef\xbb\xbf1"]
)
def test_invalid_lines_are_protocol_errors(line: bytes) -> None:
    # A byte order mark is only removed at the very start of the stream.
    with pytest.raises(ProtocolError):
        decode(b"0\n" + line + b"\n")


def test_max_line_bytes_raises_and_skips_only_that_line() -> None:
    for chunks in ([b"12\n123456\n78\n"], [b"12\n123", b"456", b"\n78\n"]):
        dec = JsonLinesDecoder(max_line_bytes=4)
        values: list[Any] = []
        errors: list[ProtocolError] = []
        for chunk in chunks:
            try:
                values.extend(dec.feed(chunk))
            except ProtocolError as exc:
                values.extend(exc.events)
                errors.append(exc)
        values.extend(dec.close())
        assert values == [12, 78]
        assert [(e.line, e.position, e.limit) for e in errors] == [(2, 3, 4)]


def test_str_chunks_are_refused_and_feed_after_close_is_an_error() -> None:
    dec = JsonLinesDecoder()
    with pytest.raises(TypeError, match="bytes, not str"):
        dec.feed("1\n")  # type: ignore[arg-type]
    assert dec.feed(bytearray(b"1\n")) == [1]
    assert dec.feed(memoryview(b"2\n")) == [2]
    dec.close()
    with pytest.raises(ValueError, match=r"feed\(\) after close\(\)"):
        dec.feed(b"3\n")


def test_position_and_limit_are_visible() -> None:
    dec = JsonLinesDecoder(max_line_bytes=100)
    dec.feed(b"1\n22")
    assert dec.position == 4
    assert dec.max_line_bytes == 100
    assert JsonLinesDecoder().max_line_bytes == 16 * 1024 * 1024


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(
    st.lists(st.tuples(JSON_VALUES, st.sampled_from(["\n", "\r\n", "\n\n", "\n  \n"]))),
    st.lists(st.integers(0, 10_000), max_size=10),
    st.booleans(),
)
def test_random_values_in_random_chunks_round_trip(
    lines: list[tuple[Any, str]], cuts: list[int], ascii_only: bool
) -> None:
    stream = "".join(json.dumps(v, ensure_ascii=ascii_only) + eol for v, eol in lines).encode()
    points = sorted(min(c, len(stream)) for c in cuts)
    chunks = [stream[a:b] for a, b in itertools.pairwise([0, *points, len(stream)])]
    assert decode(*chunks) == [v for v, _ in lines]


@pytest.mark.parametrize("end", [b"\n", b"\r\n"])
def test_the_limit_is_on_the_line_whatever_ends_it(end: bytes) -> None:
    """A line of exactly ``max_line_bytes`` passes with a CRLF end as with an LF one (the CR
    was counted), in one read or split at the CR; one byte more fails both ways."""
    line = b'{"a": 12345}'
    for cut in range(len(line) + len(end) + 1):
        data = line + end
        dec = JsonLinesDecoder(max_line_bytes=len(line))
        assert [*dec.feed(data[:cut]), *dec.feed(data[cut:]), *dec.close()] == [{"a": 12345}]
        dec = JsonLinesDecoder(max_line_bytes=len(line) - 1)
        with pytest.raises(ProtocolError, match="longer than max_line_bytes"):
            dec.feed(data[:cut])
            dec.feed(data[cut:])
