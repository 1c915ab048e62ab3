"""Cohere Chat v2: hand-written streams from the seed and WIRE_FORMATS.md §1, and every capture."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfold as sf
from conftest import CAPTURES, expected_for, requires_captures
from streamfold._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    CitationAdded,
    MessageEnd,
    MessageStart,
    Notice,
    Unknown,
    UsageUpdate,
)
from streamfold._providers.cohere_v2 import FINISH_REASONS
from streamfold._types import ProviderName

from .sse_helpers import (
    bytewise,
    check_never_crashes,
    frames_of,
    mutated,
    named,
    payloads,
    reference_fold,
    run,
    split,
)

P: ProviderName = "cohere-v2"
CAPTURE_FILES = sorted((CAPTURES / "cohere_v2").glob("*.sse")) if CAPTURES.is_dir() else []


def start(id_: str = "c1a") -> dict[str, Any]:
    return {"type": "message-start", "id": id_, "delta": {"message": {"role": "assistant"}}}


def content_start(index: int, kind: str = "text") -> dict[str, Any]:
    return {
        "type": "content-start",
        "index": index,
        "delta": {"message": {"content": {"type": kind, kind: ""}}},
    }


def content_delta(index: int, text: str, key: str = "text") -> dict[str, Any]:
    return {"type": "content-delta", "index": index, "delta": {"message": {"content": {key: text}}}}


def plan(text: str) -> dict[str, Any]:
    return {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": text}}}


def call_start(index: int, call_id: str, name: str) -> dict[str, Any]:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
    return {"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls": call}}}


def call_delta(index: int, fragment: str) -> dict[str, Any]:
    calls = {"function": {"arguments": fragment}}
    return {"type": "tool-call-delta", "index": index, "delta": {"message": {"tool_calls": calls}}}


def citation(index: int, **fields: Any) -> dict[str, Any]:
    return {"type": "citation-start", "index": index, "delta": {"message": {"citations": fields}}}


def end(kind: str, index: int) -> dict[str, Any]:
    return {"type": kind, "index": index}


def message_end(reason: str = "COMPLETE", **delta: Any) -> dict[str, Any]:
    usage = {"billed_units": {"input_tokens": 12, "output_tokens": 30}}
    usage["tokens"] = {"input_tokens": 812, "output_tokens": 34}
    return {"type": "message-end", "delta": {"finish_reason": reason, "usage": usage, **delta}}


DONE = b"data: [DONE]\n\n"

#: The seed's single-turn text answer.
TEXT = (
    named(
        start(),
        content_start(0),
        content_delta(0, "The Utrecht"),
        content_delta(0, " store expects"),
        end("content-end", 0),
        message_end(),
    )
    + DONE
)

#: A tool turn: plan, then two calls; content, tool-call and citation indices all start at 0.
TOOLS = (
    named(
        start(),
        plan("I will look"),
        plan(" it up."),
        call_start(0, "get_time_1", "get_time"),
        call_delta(0, '{"location":'),
        call_delta(0, ' "Tokyo"}'),
        end("tool-call-end", 0),
        call_start(1, "get_weather_2", "get_weather"),
        end("tool-call-end", 1),
        message_end("TOOL_CALL"),
    )
    + DONE
)

#: Reasoning, then a grounded answer; citations with and without content_index / type.
GROUNDED = (
    named(
        start(),
        content_start(0, "thinking"),
        content_delta(0, "Sum it.", key="thinking"),
        end("content-end", 0),
        content_start(1),
        content_delta(1, "It is 4."),
        citation(0, start=6, end=7, text="4", sources=[{"type": "tool", "id": "t:0"}]),
        end("citation-end", 0),
        citation(1, start=0, end=3, text="Sum", sources=[], type="THINKING_CONTENT"),
        end("citation-end", 1),
        citation(2, start=0, end=2, text="It", sources=[], content_index=1),
        end("citation-end", 2),
        end("content-end", 1),
        message_end(),
    )
    + DONE
)

ERROR = (
    named(
        start(),
        plan("I will first inspect the tables."),
        {
            "type": "message-end",
            "delta": {
                "finish_reason": "ERROR",
                "usage": {},
                "error": "your request resulted in an invalid tool generation",
                "error_type": "INVALID_TOOL_GENERATION",
            },
        },
    )
    + DONE
)

#: ``logprobs: true`` (WIRE_FORMATS.md §1: ``content-delta … logprobs?``, SDK ``logprob_item.py``
#: ``{text?, token_ids, logprobs?}``): each fragment carries its tokens' log-probabilities; a
#: fragment without them (and one with ``null``) has none.
HI_LOGPROBS = {"text": "Hi", "token_ids": [123], "logprobs": [-0.01]}
THERE_LOGPROBS = {"text": " there", "token_ids": [456, 789], "logprobs": [-0.5, -1.25]}
THINK_LOGPROBS = {"token_ids": [42], "logprobs": [-2.0]}
LOGPROBS = (
    named(
        start(),
        content_start(0, "thinking"),
        {**content_delta(0, "Hm.", key="thinking"), "logprobs": THINK_LOGPROBS},
        end("content-end", 0),
        content_start(1),
        {**content_delta(1, "Hi"), "logprobs": HI_LOGPROBS},
        {**content_delta(1, " there"), "logprobs": THERE_LOGPROBS},
        content_delta(1, "!"),
        {**content_delta(1, "?"), "logprobs": None},
        end("content-end", 1),
        message_end(),
    )
    + DONE
)

STREAMS = {
    "text": TEXT,
    "tools": TOOLS,
    "grounded": GROUNDED,
    "error": ERROR,
    "logprobs": LOGPROBS,
}


# -- the seed's streams ----------------------------------------------------------------------


def test_text_answer_maps_to_one_text_block() -> None:
    result = run(TEXT, P)
    assert result.error is None
    assert result.events == [
        MessageStart(id="c1a", role="assistant"),
        BlockStart(index=0, kind="text"),
        BlockDelta(index=0, kind="text", text="The Utrecht"),
        BlockDelta(index=0, kind="text", text=" store expects"),
        BlockEnd(index=0, kind="text"),
        UsageUpdate(usage=sf.Usage(812, 34, 846, raw=message_end()["delta"]["usage"])),
        MessageEnd(finish_reason="stop", raw_finish_reason="COMPLETE"),
    ]


LOGPROBS_DELTAS = [
    BlockDelta(index=0, kind="reasoning", text="Hm.", logprobs=THINK_LOGPROBS),
    BlockDelta(index=1, kind="text", text="Hi", logprobs=HI_LOGPROBS),
    BlockDelta(index=1, kind="text", text=" there", logprobs=THERE_LOGPROBS),
    BlockDelta(index=1, kind="text", text="!"),
    BlockDelta(index=1, kind="text", text="?"),
]


def test_content_delta_logprobs_are_the_deltas_logprobs() -> None:
    result = run(LOGPROBS, P, strict=True)
    assert result.error is None
    deltas = result.of(BlockDelta)
    assert deltas == LOGPROBS_DELTAS
    # ``BlockDelta.__eq__`` compares logprobs, but say it outright: as delivered, or None.
    assert [d.logprobs for d in deltas] == [THINK_LOGPROBS, HI_LOGPROBS, THERE_LOGPROBS, None, None]
    assert sf.fold([LOGPROBS], provider=P).text == "Hi there!?"


@given(data=st.data())
def test_logprobs_survive_any_chunking(data: st.DataObject) -> None:
    cuts = data.draw(st.lists(st.integers(0, len(LOGPROBS)), max_size=40))
    assert run(split(LOGPROBS, cuts), P).of(BlockDelta) == LOGPROBS_DELTAS


@given(data=st.data())
def test_logprobs_fold_onto_their_blocks(data: st.DataObject) -> None:
    # One ``{text?, token_ids, logprobs?}`` item per scored fragment, on the fragment's block
    # (Cohere's own non-streamed ``logprobs`` is the list of them); a fragment without none.
    cuts = data.draw(st.lists(st.integers(0, len(LOGPROBS)), max_size=40))
    for chunks in ([LOGPROBS], split(LOGPROBS, cuts)):
        message = sf.fold(chunks, provider=P, strict=True)
        assert [(b.kind, b.extra.get("logprobs")) for b in message.blocks] == [
            ("reasoning", [THINK_LOGPROBS]),
            ("text", [HI_LOGPROBS, THERE_LOGPROBS]),
        ]


def test_every_event_keeps_its_frame_as_raw() -> None:
    result = run(GROUNDED, P)
    for event in result.events:
        assert isinstance(event.raw, sf.ServerSentEvent)
        assert json.loads(event.raw.data)["type"] == event.raw.event


def test_tool_plan_and_calls_get_their_own_blocks() -> None:
    result = run(TOOLS, P)
    assert result.error is None
    folded = reference_fold(result.events)
    assert [(i, b.kind) for i, b in folded.blocks.items()] == [
        (0, "tool_plan"),
        (1, "tool_call"),
        (2, "tool_call"),
    ]
    assert folded.blocks[0].text == "I will look it up."
    assert all(b.closed for b in folded.blocks.values())
    first, second = folded.of_kind("tool_call")
    assert (first.id, first.name, first.arguments()) == (
        "get_time_1",
        "get_time",
        {"location": "Tokyo"},
    )
    assert (second.id, second.name, second.text) == ("get_weather_2", "get_weather", "")
    assert (folded.finish_reason, folded.raw_finish_reason) == ("tool_calls", "TOOL_CALL")
    # The plan block closes when the first call opens, not at the end.
    plan_end = result.events.index(BlockEnd(index=0, kind="tool_plan"))
    assert result.events[plan_end + 1] == BlockStart(
        index=1, kind="tool_call", id="get_time_1", name="get_time"
    )


def test_thinking_is_reasoning_and_citations_attach_to_the_block_they_cover() -> None:
    result = run(GROUNDED, P)
    assert result.error is None
    folded = reference_fold(result.events)
    assert [(b.kind, b.text) for b in folded.blocks.values()] == [
        ("reasoning", "Sum it."),
        ("text", "It is 4."),
    ]
    by_text = {c.text: c for c in folded.citations}
    assert by_text["4"].block == 1  # no type, no content_index: the latest text block
    assert by_text["Sum"].block == 0  # THINKING_CONTENT: the latest reasoning block
    assert by_text["It"].block == 1  # content_index 1 -> block 1
    four = by_text["4"]
    assert (four.start, four.end, four.sources) == (6, 7, [{"type": "tool", "id": "t:0"}])
    assert "It is 4."[four.start : four.end] == four.text  # end-exclusive characters


def test_plan_citation_attaches_to_the_plan_block() -> None:
    stream = named(
        start(),
        plan("Use the tool."),
        citation(0, start=4, end=8, text="the ", sources=[], type="PLAN"),
        end("citation-end", 0),
        call_start(0, "c", "f"),
        end("tool-call-end", 0),
        message_end("TOOL_CALL"),
    )
    (added,) = run(stream, P).of(CitationAdded)
    assert added.citation.block == 0


def test_index_sequences_are_separate() -> None:
    # content 0, tool call 0 and citation 0 are three different things.
    stream = named(
        start(),
        content_start(0),
        content_delta(0, "a"),
        end("content-end", 0),
        call_start(0, "c0", "f"),
        call_delta(0, "{}"),
        end("tool-call-end", 0),
        message_end("TOOL_CALL"),
    )
    folded = reference_fold(run(stream, P).events)
    assert [(b.kind, b.text) for b in folded.blocks.values()] == [
        ("text", "a"),
        ("tool_call", "{}"),
    ]


def test_error_finish_raises_after_the_events_before_it() -> None:
    result = run(ERROR, P)
    assert isinstance(result.error, sf.StreamError)
    assert result.error.code == "INVALID_TOOL_GENERATION"
    assert result.error.message == "your request resulted in an invalid tool generation"
    assert result.error.provider == P
    assert result.error.position == 2
    assert result.error.retryable_without_duplicate is False  # a plan was already shown
    assert [type(e).__name__ for e in result.events] == ["MessageStart", "BlockStart", "BlockDelta"]
    assert not result.of(MessageEnd)


def test_error_before_any_block_is_retryable() -> None:
    stream = named(
        start(), {"type": "message-end", "delta": {"finish_reason": "ERROR", "error": "boom"}}
    )
    error = run(stream, P).error
    assert isinstance(error, sf.StreamError)
    assert (error.code, error.retryable_without_duplicate) == ("ERROR", True)


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("COMPLETE", "stop"),
        ("STOP_SEQUENCE", "stop"),
        ("MAX_TOKENS", "length"),
        ("TOOL_CALL", "tool_calls"),
        ("TIMEOUT", "error"),
        ("USER_CANCEL", "other"),
        ("ERROR_TOXIC", "content_filter"),
        ("SOMETHING_NEW", "other"),
    ],
)
def test_finish_reasons(raw: str, normalized: str) -> None:
    (ended,) = run(named(start(), message_end(raw)), P).of(MessageEnd)
    assert (ended.finish_reason, ended.raw_finish_reason) == (normalized, raw)
    assert FINISH_REASONS.get(raw, "other") == normalized


def test_usage_counts_tokens_never_billed_units() -> None:
    only_billed = {
        "type": "message-end",
        "delta": {"finish_reason": "COMPLETE", "usage": {"billed_units": {"input_tokens": 3}}},
    }
    (update,) = run(named(start(), only_billed), P).of(UsageUpdate)
    assert (update.usage.input_tokens, update.usage.output_tokens) == (None, None)
    assert update.usage.raw == {"billed_units": {"input_tokens": 3}}
    cached = message_end()
    cached["delta"]["usage"]["cached_tokens"] = 700
    (update,) = run(named(start(), cached), P).of(UsageUpdate)
    assert (update.usage.input_tokens, update.usage.cached_tokens) == (812, 700)


def test_debug_is_a_notice_and_unknown_types_survive() -> None:
    stream = named(
        start(),
        {"type": "debug", "prompt": "<prompt>"},
        {"type": "citation-magic", "x": 1},
        message_end(),
    )
    result = run(stream, P, strict=True)
    assert result.error is None
    (debug,) = [e for e in result.of(Notice) if e.kind == "debug"]
    assert debug.data == "<prompt>"
    (unknown,) = result.of(Unknown)
    assert unknown.event_type == "citation-magic"
    assert json.loads(unknown.raw.data) == {"type": "citation-magic", "x": 1}


def test_event_name_is_the_fallback_when_the_payload_has_no_type() -> None:
    payload = {"index": 0, "delta": {"message": {"content": {"type": "text"}}}}
    stream = (
        named(start()) + b"event: content-start\ndata: " + json.dumps(payload).encode() + b"\n\n"
    )
    assert run(stream, P).of(BlockStart) == [BlockStart(index=0, kind="text")]


def test_done_after_message_end_is_ordinary_data() -> None:
    result = run(TEXT, P, strict=True)
    assert result.error is None
    assert not result.warnings


# -- protocol errors and ordering rules -------------------------------------------------------


@pytest.mark.parametrize(
    ("stream", "needle"),
    [
        (b"event: content-delta\ndata: {not json\n\n", "not valid JSON"),
        (b"event: message-start\ndata: [1, 2]\n\n", "not a JSON object"),
        (named(start(), content_delta(0, "x")), "content 0 was never started"),
        (named(start(), end("content-end", 3)), "content 3 was never started"),
        (named(start(), call_delta(0, "{")), "tool call 0 was never started"),
        (named(start(), end("tool-call-end", 0)), "tool call 0 was never started"),
        (named(start(), {"type": "content-start", "index": 0}), "malformed payload"),
        (
            named(
                start(),
                {"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": [{}]}}},
            ),
            "not an object",
        ),
        (
            named(
                start(),
                content_start(0),
                {**content_delta(0, "x"), "delta": {"message": {"content": {"text": 5}}}},
            ),
            "text is int",
        ),
    ],
)
def test_protocol_errors_name_provider_event_and_position(stream: bytes, needle: str) -> None:
    result = run(stream, P)
    assert isinstance(result.error, sf.ProtocolError), result.error
    assert needle in str(result.error)
    assert result.error.provider == P
    assert result.error.position is not None
    assert f"frame {result.error.position}" in str(result.error)
    assert result.error.event is not None


def test_position_counts_frames() -> None:
    stream = named(start(), content_start(0), content_delta(0, "a"), content_delta(7, "b"))
    error = run(stream, P).error
    assert isinstance(error, sf.ProtocolError)
    assert (error.position, error.event) == (3, "content-delta")


def _violations() -> list[bytes]:
    return [
        named(start(), message_end(), content_start(0)),  # after the terminal event
        named(start(), content_start(0), message_end()),  # a block never closed
        named(content_start(0), end("content-end", 0), message_end()),  # no message-start
        named(start(), start(), message_end()),  # two message-starts
    ]


@pytest.mark.parametrize("stream", _violations())
def test_ordering_rules_warn_by_default_and_raise_when_strict(stream: bytes) -> None:
    lenient = run(stream, P)
    assert lenient.error is None
    assert len(lenient.warnings) == 1
    assert lenient.warnings[0].startswith(f"{P}: ")
    assert len(lenient.of(MessageStart)) == 1
    strict = run(stream, P, strict=True)
    assert isinstance(strict.error, sf.ProtocolError)
    assert strict.error.provider == P


# -- captures ---------------------------------------------------------------------------------


def _expected_citations(message: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(c["start"], c["end"], c["text"], c["sources"]) for c in message["citations"]]


@requires_captures
@pytest.mark.parametrize("path", CAPTURE_FILES, ids=lambda p: p.stem)
def test_capture_matches_its_expected_fold(path: Path) -> None:
    expected = expected_for(path)
    message = expected["message"]
    result = run(path.read_bytes(), P, strict=True)
    folded = reference_fold(result.events)
    assert not folded.unknown
    assert result.of(MessageStart)[0].id == expected["response_id"]
    blocks = [b for b in folded.blocks.values() if b.kind != "tool_plan"]
    assert len(blocks) == len(message["blocks"])
    for got, want in zip(blocks, message["blocks"], strict=True):
        if want["type"] == "tool_call":
            assert got.kind == "tool_call"
            assert (got.id, got.name, got.text) == (want["id"], want["name"], want["arguments_raw"])
            assert got.arguments() == want["arguments"]
            assert got.closed is want["complete"]
        else:
            assert got.kind == {"text": "text", "thinking": "reasoning"}[want["type"]]
            assert got.text == want["text"]
    assert "".join(folded.texts("tool_plan")) == (message["tool_plan"] or "")
    assert [(c.start, c.end, c.text, c.sources) for c in folded.citations] == _expected_citations(
        message
    )
    if expected["error"] is None:
        assert result.error is None
        assert folded.raw_finish_reason == message["finish_reason"]
        assert folded.finish_reason == FINISH_REASONS[message["finish_reason"]]
        assert folded.usage is not None
        assert folded.usage.raw == expected["usage"]
        tokens = expected["usage"]["tokens"]
        assert (folded.usage.input_tokens, folded.usage.output_tokens) == (
            tokens["input_tokens"],
            tokens["output_tokens"],
        )
        assert folded.usage.cached_tokens == expected["usage"].get("cached_tokens")
    else:
        assert isinstance(result.error, sf.StreamError)
        assert result.error.message == expected["error"]["message"]
        assert result.error.code == expected["error"]["error_type"]
        assert folded.ends == 0


@requires_captures
@pytest.mark.parametrize("path", CAPTURE_FILES, ids=lambda p: p.stem)
def test_capture_is_chunking_invariant_down_to_single_bytes(path: Path) -> None:
    data = path.read_bytes()
    assert run(bytewise(data), P).outcome() == run(data, P).outcome()


@given(name=st.sampled_from(sorted(STREAMS)), data=st.data())
def test_hand_written_streams_are_chunking_invariant(name: str, data: st.DataObject) -> None:
    stream = STREAMS[name]
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=40))
    assert run(split(stream, cuts), P).outcome() == run(stream, P).outcome()


@requires_captures
@given(data=st.data())
def test_captures_are_chunking_invariant(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(CAPTURE_FILES))
    stream = path.read_bytes()
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=60))
    assert run(split(stream, cuts), P).outcome() == run(stream, P).outcome()


# -- async ------------------------------------------------------------------------------------


async def _chunks(data: bytes, size: int = 7) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


@pytest.mark.anyio
async def test_aevents_matches_events(anyio_backend: str) -> None:
    got = [e async for e in sf.aevents(_chunks(GROUNDED), P)]
    assert got == run(GROUNDED, P).events
    collected: list[Any] = []
    with pytest.raises(sf.StreamError):
        async for event in sf.aevents(_chunks(ERROR), P):
            collected.append(event)
    assert collected == run(ERROR, P).events


# -- robustness -------------------------------------------------------------------------------

V2_KEYS = [
    "type", "index", "id", "delta", "message", "content", "text", "thinking", "role",
    "tool_plan", "tool_calls", "function", "name", "arguments", "citations", "start", "end",
    "sources", "content_index", "finish_reason", "usage", "tokens", "input_tokens",
    "output_tokens", "cached_tokens", "error", "error_type", "prompt",
]  # fmt: skip
V2_TYPES = [
    "message-start", "content-start", "content-delta", "content-end", "tool-plan-delta",
    "tool-call-start", "tool-call-delta", "tool-call-end", "citation-start", "citation-end",
    "message-end", "debug", "novel",
]  # fmt: skip


@settings(max_examples=50)
@given(st.lists(payloads(V2_TYPES, V2_KEYS), max_size=12), st.booleans())
def test_arbitrary_payloads_never_crash(frames: list[dict[str, Any]], strict: bool) -> None:
    check_never_crashes(named(start(), *frames), P, strict=strict)


POOL = frames_of(
    TEXT,
    TOOLS,
    GROUNDED,
    ERROR,
    without=(
        b"message-start",
        b"message-end",
        b"[DONE]",
    ),
)


@given(st.lists(st.sampled_from(POOL), max_size=24), st.booleans())
def test_any_order_of_valid_frames_never_crashes(frames: list[bytes], strict: bool) -> None:
    check_never_crashes(named(start()) + b"".join(frames), P, strict=strict)


@given(name=st.sampled_from(sorted(STREAMS)), data=st.data(), strict=st.booleans())
def test_mutated_streams_never_crash(name: str, data: st.DataObject, strict: bool) -> None:
    check_never_crashes(data.draw(mutated(STREAMS[name])), P, strict=strict)
