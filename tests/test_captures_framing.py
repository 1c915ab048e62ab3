"""Every recorded capture in ../shared/captures frames identically whole and split at random, and
into as many frames as its ``.expected.json`` says. Cohere v1 captures are JSON lines, whatever
their ``.sse`` name says."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from conftest import capture_files, capture_id, expected_for, requires_captures
from sse_reference import RefEvent, interpret
from streamfold import JsonLinesDecoder, SSEDecoder

CAPTURES = capture_files()
SSE_CAPTURES = [p for p in CAPTURES if p.parent.name != "cohere_v1"]
JSONL_CAPTURES = [p for p in CAPTURES if p.parent.name == "cohere_v1"]
SEEDS = range(5)


def random_split(data: bytes, rng: random.Random) -> list[bytes]:
    """Cuts of 1 to 64 bytes, with the odd large read, as a network would deliver them."""
    chunks, at = [], 0
    while at < len(data):
        size = rng.choice([rng.randint(1, 64), rng.randint(1, 64), rng.randint(1, 8192)])
        chunks.append(data[at : at + size])
        at += size
    return chunks


def decode_sse(chunks: list[bytes]) -> tuple[list[RefEvent], bool]:
    dec = SSEDecoder()
    events = [e for chunk in chunks for e in dec.feed(chunk)]
    events.extend(dec.close())
    return [RefEvent(e.event, e.data, e.id, e.retry) for e in events], dec.dropped_partial


def decode_jsonl(chunks: list[bytes]) -> list[Any]:
    dec = JsonLinesDecoder()
    values = [v for chunk in chunks for v in dec.feed(chunk)]
    values.extend(dec.close())
    return values


@requires_captures
def test_the_captures_are_all_found() -> None:
    assert len(SSE_CAPTURES) >= 30
    assert len(JSONL_CAPTURES) == 3


@requires_captures
@pytest.mark.parametrize("path", SSE_CAPTURES, ids=capture_id)
def test_sse_capture_frames_alike_whole_and_split(path: Path) -> None:
    data = path.read_bytes()
    expected = expected_for(path)["sse"]
    whole, dropped = decode_sse([data])
    assert len(whole) == expected["events"]
    assert dropped is expected["pending_at_eof"]
    assert whole == interpret(data).events, "the spec-text reference agrees"
    for seed in SEEDS:
        rng = random.Random(f"{capture_id(path)}/{seed}")
        assert decode_sse(random_split(data, rng)) == (whole, dropped), seed
    one_byte = [data[i : i + 1] for i in range(len(data))]
    assert decode_sse(one_byte) == (whole, dropped)


@requires_captures
@pytest.mark.parametrize("path", SSE_CAPTURES, ids=capture_id)
def test_sse_capture_events_carry_json(path: Path) -> None:
    events, _ = decode_sse([path.read_bytes()])
    for event in events:
        if event.data != "[DONE]":
            assert isinstance(json.loads(event.data), dict), event


@requires_captures
@pytest.mark.parametrize(
    "path",
    [p for p in SSE_CAPTURES if "pending_event_not_dispatched" in expected_for(p)["sse"]],
    ids=capture_id,
)
def test_the_event_left_pending_at_eof_is_the_one_expected(path: Path) -> None:
    data = path.read_bytes()
    pending = expected_for(path)["sse"]["pending_event_not_dispatched"]
    completed, dropped = decode_sse([data, b"\n\n"])
    assert not dropped
    assert (completed[-1].event, completed[-1].data) == (pending["event"], pending["data"])


@requires_captures
@pytest.mark.parametrize("path", JSONL_CAPTURES, ids=capture_id)
def test_cohere_v1_capture_is_json_lines_and_frames_alike(path: Path) -> None:
    data = path.read_bytes()
    expected = expected_for(path)["sse"]
    assert expected["framing"] == "ndjson"
    whole = decode_jsonl([data])
    assert len(whole) == expected["lines"]
    assert whole == [json.loads(line) for line in data.splitlines() if line.strip()]
    for seed in SEEDS:
        rng = random.Random(f"{capture_id(path)}/{seed}")
        assert decode_jsonl(random_split(data, rng)) == whole, seed
    assert decode_jsonl([data[i : i + 1] for i in range(len(data))]) == whole
