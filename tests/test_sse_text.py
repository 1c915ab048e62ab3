"""`ServerSentEvent.data` as text: streamfold builds the `str` from the UTF-8 bytes itself
(`rust/python/text.rs`), so it must equal CPython's `bytes.decode("utf-8", "replace")` exactly,
in the canonical (narrowest) PEP 393 kind, for any bytes."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamfold import SSEDecoder
from streamfold._core import _bench_str_from_utf8

#: Characters of every PEP 393 width (ASCII, Latin-1, BMP, astral) and of every UTF-8 length.
WIDE = ["\x00", "\x7f", "\x80", "\xe9", "\xff", "\u0100", "\u03a9", "\u07ff", "\u0800"]
WIDE += ["\u65e5", "\ud7ff", "\ue000", "\uffff", "\U00010000", "\U0001f642", "\U0010ffff"]
#: Lengths around the decoder's blocks (16 bytes, 8 near the end, 255 blocks per count).
LENGTHS = [0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 255, 256, 257, 4079, 4080, 4081]


def via_event(payload: bytes) -> str:
    """The `data` of one event whose data line is `payload` (no CR or LF in it)."""
    [event] = SSEDecoder().feed(b"data: " + payload + b"\n\n")
    return event.data


def assert_same_str(got: str, payload: bytes) -> None:
    expected = payload.decode("utf-8", "replace")
    assert got == expected
    if len(expected) <= 1 and expected <= "\xff":
        assert got is expected  # CPython's cached strings, as `bytes.decode` gives
        return
    # Equal strings of different kinds differ in size: a kind wider than the widest
    # character needs is not canonical, and CPython's own code relies on it being so.
    assert sys.getsizeof(got) == sys.getsizeof(expected)


def no_newlines(payload: bytes) -> bytes:
    return payload.replace(b"\r", b"").replace(b"\n", b"")


@given(st.binary(max_size=600))
def test_any_bytes_decode_as_cpython_does(payload: bytes) -> None:
    payload = no_newlines(payload)
    assert_same_str(via_event(payload), payload)


@given(st.text(max_size=300))
def test_any_text_round_trips(text: str) -> None:
    payload = no_newlines(text.encode("utf-8", "surrogatepass"))
    assert_same_str(via_event(payload), payload)


utf8ish = st.sampled_from(
    [
        b"a",
        b"{",
        b"\x80",
        b"\xbf",
        b"\xc3",
        b"\xc3\xa9",
        b"\xce\xa9",
        b"\xe6\x97\xa5",
        b"\xed",
        b"\xf0\x9f\x99\x82",
        b"\xf4\x90",
        b"\xe0\x80",
        b"\xf0",
        b"\xff",
        b"\xc0\xaf",
    ]
)


@given(st.lists(st.one_of(utf8ish, st.binary(max_size=40)), max_size=60))
def test_fragments_of_utf8_decode_as_cpython_does(parts: list[bytes]) -> None:
    payload = no_newlines(b"".join(parts))
    assert_same_str(via_event(payload), payload)
    assert_same_str(_bench_str_from_utf8(payload), payload)


@given(
    st.lists(
        st.tuples(st.sampled_from(LENGTHS[:14]), st.sampled_from(WIDE), st.integers(0, 3)),
        max_size=8,
    )
)
def test_runs_of_ascii_between_wide_characters(runs: list[tuple[int, str, int]]) -> None:
    text = "".join("x" * n + wide * count for n, wide, count in runs)
    payload = text.encode()
    assert_same_str(_bench_str_from_utf8(payload), payload)


@pytest.mark.parametrize("wide", WIDE)
def test_every_width_at_every_block_position(wide: str) -> None:
    for before in LENGTHS:
        for after in LENGTHS[:12]:
            payload = ("a" * before + wide + "b" * after).encode()
            assert_same_str(_bench_str_from_utf8(payload), payload)
            damaged = payload[: len(payload) - 1 - after]  # the wide character cut short
            assert_same_str(_bench_str_from_utf8(damaged), damaged)


@pytest.mark.parametrize(
    "bad",
    [
        b"\x80",
        b"\xc0\x80",
        b"\xc1\xbf",
        b"\xc2",
        b"\xe0\x80\x80",
        b"\xe0\x9f\xbf",
        b"\xed\xa0\x80",
        b"\xe1\x80",
        b"\xf0\x80\x80\x80",
        b"\xf4\x90\x80\x80",
        b"\xf5\x80",
        b"\xff",
        b"\xfe\xfe",
    ],
)
def test_invalid_sequences_become_replacement_characters(bad: bytes) -> None:
    for payload in [bad, b"caf\xc3\xa9 " * 5 + bad + b" and more text", b"x" * 16 + bad]:
        assert_same_str(via_event(payload), payload)
        assert_same_str(_bench_str_from_utf8(payload), payload)


@given(st.binary(max_size=300))
def test_bench_helper_matches_cpython(payload: bytes) -> None:
    ours = _bench_str_from_utf8(payload, repeat=3)
    assert_same_str(ours, payload)
    assert _bench_str_from_utf8(payload, cpython=True) == ours


def test_long_text() -> None:
    for text in ["\xe9" * 70_000, "a" * 70_000 + "\u65e5", "\U0001f642" * 20_000 + "z"]:
        payload = text.encode()
        assert_same_str(via_event(payload), payload)
