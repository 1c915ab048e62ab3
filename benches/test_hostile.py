"""Input shapes that once cost quadratic time (found by fuzzing), timed at growing sizes: the
time per unit must stay flat (the goal is in ``goals.py``, beside the scale curves). Tests
check what these inputs fold to; how their cost grows is measured here, never in a test.

* ``auto`` and many blank reads before the first frame (keep-alive newlines): each read was
  added to all the blanks so far and the whole re-scanned.
* A Gemini string argument streamed in many ``partialArgs`` pieces: each piece was added to
  the whole string so far.
* Onecortex steps nested many deep: each ``step_end`` searched (and copied) the open steps
  from the outermost.
* Many tool calls open at once, for every provider with indices (OpenAI Chat and Mistral
  ``tool_calls[].index``, Anthropic block ``index``, Responses ``output_index``, Cohere v2
  ``index``, Cohere v1 ``tool_call_delta.index`` or none): each fragment was looked up in a
  list of the open calls (OpenAI Chat), a fragment without an index searched every call
  (Cohere v1).
* Many choices (OpenAI ``n>1``) and candidates (Gemini): each finish scanned every choice.
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


CALLS = (500, 2_000) if QUICK else (2_000, 8_000, 32_000)


def _frame(payload: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + json.dumps(payload) + "\n\n").encode()


def _named(name: str, **payload: Any) -> bytes:
    return _frame({"type": name, **payload}, name)


def _chat_call(i: int, arguments: str = "{}", **fields: Any) -> bytes:
    entry = {"index": i, "function": {"arguments": arguments}, **fields}
    return _frame({"choices": [{"index": 0, "delta": {"tool_calls": [entry]}}]})


def chat_open_calls(n: int) -> list[bytes]:
    """``n`` tool calls opened one after another, then a fragment for each."""
    return [
        _frame({"choices": [{"index": 0, "delta": {"role": "assistant"}}]}),
        *(_chat_call(i, "", id=f"call_{i}", type="function") for i in range(n)),
        *(_chat_call(i) for i in range(n)),
        _frame({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        b"data: [DONE]\n\n",
    ]


def anthropic_open_calls(n: int) -> list[bytes]:
    use = {"type": "tool_use", "name": "f", "input": {}}
    delta = {"type": "input_json_delta", "partial_json": "{}"}
    return [
        _named("message_start", message={"id": "m", "role": "assistant", "content": []}),
        *(
            _named("content_block_start", index=i, content_block={**use, "id": f"t{i}"})
            for i in range(n)
        ),
        *(_named("content_block_delta", index=i, delta=delta) for i in range(n)),
        *(_named("content_block_stop", index=i) for i in range(n)),
        _named("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 1}),
        _named("message_stop"),
    ]


def responses_open_calls(n: int) -> list[bytes]:
    def item(i: int, arguments: str = "") -> dict[str, Any]:
        call = {"type": "function_call", "id": f"fc{i}", "call_id": f"c{i}", "name": "f"}
        return {**call, "arguments": arguments}

    return [
        _named("response.created", response={"id": "r", "status": "in_progress"}),
        *(_named("response.output_item.added", output_index=i, item=item(i)) for i in range(n)),
        *(
            _named("response.function_call_arguments.delta", output_index=i, delta="{}")
            for i in range(n)
        ),
        *(
            _named("response.output_item.done", output_index=i, item=item(i, "{}"))
            for i in range(n)
        ),
        _named("response.completed", response={"id": "r", "status": "completed"}),
    ]


def cohere_v2_open_calls(n: int) -> list[bytes]:
    def start(i: int) -> dict[str, Any]:
        call = {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": ""}}
        return {"message": {"tool_calls": call}}

    args = {"message": {"tool_calls": {"function": {"arguments": "{}"}}}}
    return [
        _named("message-start", id="m", delta={"message": {"role": "assistant"}}),
        *(_named("tool-call-start", index=i, delta=start(i)) for i in range(n)),
        *(_named("tool-call-delta", index=i, delta=args) for i in range(n)),
        *(_named("tool-call-end", index=i) for i in range(n)),
        _named("message-end", delta={"finish_reason": "TOOL_CALL", "usage": {}}),
        b"data: [DONE]\n\n",
    ]


def _line(event_type: str, **fields: Any) -> bytes:
    payload = {"is_finished": event_type == "stream-end", "event_type": event_type, **fields}
    return (json.dumps(payload) + "\n").encode()


def cohere_v1_open_calls(n: int) -> list[bytes]:
    return [
        _line("stream-start", generation_id="g"),
        *(_line("tool-calls-chunk", tool_call_delta={"index": i, "name": "f"}) for i in range(n)),
        *(
            _line("tool-calls-chunk", tool_call_delta={"index": i, "parameters": "{}"})
            for i in range(n)
        ),
        _line("stream-end", finish_reason="COMPLETE", response={"text": ""}),
    ]


def cohere_v1_calls_without_index(n: int) -> list[bytes]:
    """``n`` calls whose fragments carry no index: a name starts the next call."""
    delta = {"name": "f", "parameters": "{}"}
    return [
        _line("stream-start", generation_id="g"),
        *(_line("tool-calls-chunk", tool_call_delta=delta) for _ in range(n)),
        _line("stream-end", finish_reason="COMPLETE", response={"text": ""}),
    ]


def chat_choices(n: int) -> list[bytes]:
    """``n`` choices (``n>1``): each starts, then each finishes."""
    return [
        *(_frame({"choices": [{"index": i, "delta": {"content": "x"}}]}) for i in range(n)),
        *(
            _frame({"choices": [{"index": i, "delta": {}, "finish_reason": "stop"}]})
            for i in range(n)
        ),
        b"data: [DONE]\n\n",
    ]


def gemini_candidates(n: int) -> list[bytes]:
    def candidate(i: int, **fields: Any) -> bytes:
        content = {"role": "model", "parts": [{"text": "x"}]}
        return _frame({"candidates": [{"index": i, "content": content, **fields}]})

    return [
        *(candidate(i) for i in range(n)),
        *(candidate(i, finishReason="STOP") for i in range(n)),
    ]


#: (provider, shape, what the fold holds: "calls" or "choices") of each hostile shape.
INDEXED = {
    "openai open calls": ("openai", chat_open_calls, "calls"),
    "mistral open calls": ("mistral", chat_open_calls, "calls"),
    "anthropic open blocks": ("anthropic", anthropic_open_calls, "calls"),
    "openai-responses open items": ("openai-responses", responses_open_calls, "calls"),
    "cohere-v2 open calls": ("cohere-v2", cohere_v2_open_calls, "calls"),
    "cohere-v1 open calls": ("cohere-v1", cohere_v1_open_calls, "calls"),
    "cohere-v1 calls without index": ("cohere-v1", cohere_v1_calls_without_index, "calls"),
    "openai choices": ("openai", chat_choices, "choices"),
    "gemini candidates": ("gemini", gemini_candidates, "choices"),
}


@pytest.mark.parametrize("shape", sorted(INDEXED))
@pytest.mark.parametrize("n", CALLS, ids=[f"{n}-units" for n in CALLS])
def test_many_indices(benchmark: Any, shape: str, n: int) -> None:
    sf = peers.sf
    provider, make, holds = INDEXED[shape]
    chunks = make(n)

    def fold(chunks: list[bytes]) -> Any:
        return sf.fold(chunks, provider=provider)

    def check(message: Any) -> None:
        assert message.complete
        if holds == "calls":
            assert len(message.tool_calls) == n
            assert all(call.arguments == {} for call in message.tool_calls)
        else:
            assert len(message.choices) == n

    measure(
        benchmark,
        peers.Impl(f"streamfold fold(), {shape}: {n:,}", fold, peers.sf_missing("fold")),
        (chunks,),
        group=f"hostile | {shape}: {holds} open at once",
        check=check,
        primary=n == CALLS[0],
        n=n,
        units=n,
        bytes=sum(map(len, chunks)),
    )
