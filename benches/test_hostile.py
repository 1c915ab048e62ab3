"""Input shapes that once cost quadratic time (found by fuzzing), timed at growing sizes: the
time per unit must stay flat (the goal is in ``goals.py``, beside the scale curves). Tests
check what these inputs fold to; how their cost grows is measured here, never in a test.

* ``auto`` and many blank reads before the first frame (keep-alive newlines): each read was
  added to all the blanks so far and the whole re-scanned.
* A Gemini string argument streamed in many ``partialArgs`` pieces: each piece was added to
  the whole string so far.
* Onecortex steps nested many deep: each ``step_end`` searched (and copied) the open steps
  from the outermost.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import peers
from harness import QUICK, measure

BLANK_READS = (1_000, 10_000) if QUICK else (1_000, 10_000, 100_000)
BLANK = b"\n" * 100
#: The stream after the blanks: one OpenAI chunk and the end.
TAIL = (
    b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)

PIECES = (250, 1_000) if QUICK else (1_000, 4_000, 16_000)

STEPS = (500, 2_000) if QUICK else (2_000, 8_000, 32_000)
PIECE_CHARS = 1_000


def _gemini_frame(part: dict[str, Any], finish: str | None = None) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}}
    if finish:
        candidate["finishReason"] = finish
    return b"data: " + json.dumps({"candidates": [candidate]}).encode() + b"\r\n\r\n"


def gemini_argument_in_pieces(pieces: int) -> list[bytes]:
    """One Vertex streamed call whose one string argument comes in ``pieces`` pieces."""
    piece = {"jsonPath": "$.code", "stringValue": "x" * PIECE_CHARS, "willContinue": True}
    middle = _gemini_frame({"functionCall": {"partialArgs": [piece], "willContinue": True}})
    return [
        _gemini_frame({"functionCall": {"name": "write", "willContinue": True}}),
        *([middle] * pieces),
        _gemini_frame({"functionCall": {}}),
        _gemini_frame({"text": ""}, finish="STOP"),
    ]


@pytest.mark.parametrize("reads", BLANK_READS, ids=[f"{n}-reads" for n in BLANK_READS])
def test_blank_reads_before_the_first_frame(benchmark: Any, reads: int) -> None:
    sf = peers.sf
    chunks = [BLANK] * reads + [TAIL]

    def auto(chunks: list[bytes]) -> Any:
        return sf.fold(chunks, provider="auto")

    def check(message: Any) -> None:
        assert message.complete and message.text == "hi"

    measure(
        benchmark,
        peers.Impl(
            f"streamfold fold(), auto: {reads:,} blank reads", auto, peers.sf_missing("fold")
        ),
        (chunks,),
        group="hostile | auto: 100-byte blank reads before the first frame",
        check=check,
        primary=reads == BLANK_READS[0],
        n=reads,
        units=reads,
        bytes=reads * len(BLANK) + len(TAIL),
    )


@pytest.mark.parametrize("pieces", PIECES, ids=[f"{n}-pieces" for n in PIECES])
def test_gemini_argument_in_pieces(benchmark: Any, pieces: int) -> None:
    sf = peers.sf
    chunks = gemini_argument_in_pieces(pieces)

    def gemini(chunks: list[bytes]) -> Any:
        return sf.fold(chunks, provider="gemini")

    def check(message: Any) -> None:
        assert len(message.tool_calls[0].arguments["code"]) == pieces * PIECE_CHARS

    measure(
        benchmark,
        peers.Impl(
            f"streamfold fold(), gemini: {pieces:,} pieces", gemini, peers.sf_missing("fold")
        ),
        (chunks,),
        group="hostile | gemini: one string argument in 1,000-character partialArgs pieces",
        check=check,
        primary=pieces == PIECES[0],
        n=pieces,
        units=pieces,
        bytes=sum(map(len, chunks)),
    )


def onecortex_nested_steps(steps: int) -> list[bytes]:
    """One Onecortex run whose ``steps`` steps nest, each inside the one before."""

    def event(event_type: str, **fields: Any) -> bytes:
        payload = json.dumps({"v": 1, "type": event_type, **fields})
        return f"event: {event_type}\ndata: {payload}\n\n".encode()

    return [
        *(event("step_start", name=f"s{i}") for i in range(steps)),
        event("text_delta", delta="hi"),
        *(event("step_end", name=f"s{i}") for i in reversed(range(steps))),
        event("done", result="hi"),
    ]


@pytest.mark.parametrize("steps", STEPS, ids=[f"{n}-steps" for n in STEPS])
def test_onecortex_nested_steps(benchmark: Any, steps: int) -> None:
    sf = peers.sf
    chunks = onecortex_nested_steps(steps)

    def onecortex(chunks: list[bytes]) -> Any:
        return sf.fold(chunks, provider="onecortex")

    def check(message: Any) -> None:
        assert message.complete and message.text == "hi" and message.steps[0].complete

    measure(
        benchmark,
        peers.Impl(
            f"streamfold fold(), onecortex: {steps:,} nested steps",
            onecortex,
            peers.sf_missing("fold"),
        ),
        (chunks,),
        group="hostile | onecortex: steps nested one inside the other",
        check=check,
        primary=steps == STEPS[0],
        n=steps,
        units=steps,
        bytes=sum(map(len, chunks)),
    )
