"""Mistral chat completions (``provider="mistral"``): captures, the seed's stream, whole calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import streamfold as sf
from streamfold._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    MessageDelta,
    MessageEnd,
    UsageUpdate,
)
from streamfold._providers.openai_chat import MISTRAL_FINISH_REASONS

from .helpers import accumulate, captures, check_capture, run, split_at, sse

CAPTURES = captures("mistral")
requires_captures = pytest.mark.skipif(not CAPTURES, reason="../shared/captures is absent")


def chunk(*choices: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {
        "id": "cmpl-8a1c",
        "object": "chat.completion.chunk",
        "created": 1786500000,
        "model": "mistral-large-2512",
        **top,
        "choices": list(choices),
    }


def choice(finish: str | None = None, index: int = 0, **delta: Any) -> dict[str, Any]:
    return {"index": index, "delta": delta, "finish_reason": finish}


#: The seed's first example: text deltas, usage on the finishing chunk, [DONE].
SEED_TEXT = sse(
    chunk(choice(role="assistant", content="")),
    chunk(choice(content="Com")),
    chunk(choice(content="té")),
    chunk(
        choice(content="", finish="stop"),
        usage={"prompt_tokens": 14, "completion_tokens": 31, "total_tokens": 45},
    ),
    "[DONE]",
)

#: The seed's second example: a call streamed in fragments keyed by ``index``.
SEED_TOOL = sse(
    {
        "choices": [
            choice(
                tool_calls=[
                    {
                        "index": 0,
                        "id": "D681PevKs",
                        "type": "function",
                        "function": {"name": "retrieve_payment_status", "arguments": ""},
                    }
                ]
            )
        ]
    },
    {"choices": [choice(tool_calls=[{"index": 0, "function": {"arguments": '{"transaction'}}])]},
    {"choices": [choice(tool_calls=[{"index": 0, "function": {"arguments": '_id": "T1001"}'}}])]},
    {"choices": [choice(finish="tool_calls")]},
    "[DONE]",
)


@requires_captures
@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_capture_matches_expected(path: Path) -> None:
    check_capture(path, "mistral")


STREAMS = [p.read_bytes() for p in CAPTURES] + [SEED_TEXT, SEED_TOOL]


@given(st.data())
def test_chunking_invariance(data: st.DataObject) -> None:
    stream = data.draw(st.sampled_from(STREAMS))
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=60))
    whole = run(stream, "mistral")
    split = run(split_at(stream, cuts), "mistral")
    assert split.events == whole.events
    assert repr(split.error) == repr(whole.error)


@pytest.mark.parametrize("stream", [SEED_TEXT, SEED_TOOL], ids=["text", "tool"])
def test_seed_streams_single_byte_reads(stream: bytes) -> None:
    assert (
        run([stream[i : i + 1] for i in range(len(stream))], "mistral").events
        == run(stream, "mistral").events
    )


def test_seed_text_stream() -> None:
    result = run(SEED_TEXT, "mistral")
    folded = accumulate(result.events)
    assert [(b.kind, b.text) for b in folded.choice(0).ordered()] == [("text", "Comté")]
    assert folded.choice(0).raw_finish_reason == "stop"
    assert folded.usage.raw == {"prompt_tokens": 14, "completion_tokens": 31, "total_tokens": 45}
    names = [type(e).__name__ for e in result.events]
    assert names.index("UsageUpdate") < names.index("MessageEnd")


def test_created_is_in_the_message_metadata_and_the_padding_is_not() -> None:
    # Mistral's chunks carry ``created`` (as the SDK's CompletionChunk) and a padding field
    # ``p`` (as captured in mistral/text_basic), which is noise.
    head = {"id": "m1", "object": "chat.completion.chunk", "created": 1757759492, "model": "m"}
    stream = sse(
        {**head, "choices": [{"index": 0, "delta": {"content": "Hi"}}], "p": "abcdef"},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        "[DONE]",
    )
    message = sf.fold([stream], provider="mistral")
    assert (message.text, message.metadata) == ("Hi", {"created": 1757759492})


def test_seed_tool_call_in_fragments() -> None:
    result = run(SEED_TOOL, "mistral")
    assert result.error is None and result.warnings == []
    blocks = accumulate(result.events).choice(0).ordered()
    assert [(b.id, b.name, b.text, b.ended) for b in blocks] == [
        ("D681PevKs", "retrieve_payment_status", '{"transaction_id": "T1001"}', True)
    ]


def test_whole_calls_without_index_are_separate_calls() -> None:
    calls = [
        {"id": "a1", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}},
        {"id": "b2", "function": {"name": "weather", "arguments": {"city": "Lyon"}}},
        {"id": "c3", "index": 0, "function": {"name": "time", "arguments": "{}"}},
    ]
    stream = sse(
        chunk(
            choice(content=None, tool_calls=calls, finish="tool_calls"),
            usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
        ),
        "[DONE]",
    )
    result = run(stream, "mistral")
    starts = result.of(BlockStart)
    assert [(s.id, s.name, s.arguments, s.complete) for s in starts] == [
        ("a1", "weather", {"city": "Paris"}, True),
        ("b2", "weather", {"city": "Lyon"}, True),
        ("c3", "time", {}, True),
    ]
    assert [s.text for s in starts] == ['{"city": "Paris"}', '{"city": "Lyon"}', "{}"]
    assert result.of(BlockDelta) == []
    # A whole call is closed right after its start.
    names = [type(e).__name__ for e in result.events]
    assert names[1:7] == ["BlockStart", "BlockEnd"] * 3
    assert result.of(MessageEnd)[0].finish_reason == "tool_calls"


def test_empty_ids_on_fragments_continue_the_call() -> None:
    # OpenAI-compatible hosts (Alibaba Qwen/DashScope) send "id": "" and "name": "" on every
    # fragment after the first: no id, so not a new call.
    def entry(arguments: str, id: str = "", name: str = "") -> dict[str, Any]:
        function = {"name": name, "arguments": arguments}
        return {"index": 0, "id": id, "type": "function", "function": function}

    stream = sse(
        chunk(choice(tool_calls=[entry("", "call_1", "get_weather")])),
        chunk(choice(tool_calls=[entry('{"city": ')])),
        chunk(choice(tool_calls=[entry('"Paris"}')])),
        chunk(choice(finish="tool_calls")),
        "[DONE]",
    )
    result = run(stream, "mistral")
    assert result.error is None and result.warnings == []
    assert run([stream[i : i + 7] for i in range(0, len(stream), 7)], "mistral") == result
    message = sf.fold([stream], provider="mistral")
    assert [(c.id, c.name, c.arguments, c.complete) for c in message.tool_calls] == [
        ("call_1", "get_weather", {"city": "Paris"}, True)
    ]


def test_unparseable_whole_arguments_are_kept_as_text() -> None:
    calls = [{"id": "x1", "function": {"name": "f", "arguments": '{"a": '}}]
    result = run(
        sse(chunk(choice(tool_calls=calls)), chunk(choice(finish="tool_calls"))), "mistral"
    )
    blocks = accumulate(result.events).choice(0).ordered()
    assert [(b.complete_at_start, b.text, b.ended) for b in blocks] == [(False, '{"a": ', True)]
    assert blocks[0].parsed_arguments() is None  # the fold reports it


def test_content_chunks_thinking_then_text() -> None:
    stream = sse(
        chunk(choice(role="assistant", content="")),
        chunk(choice(content=[{"type": "thinking", "thinking": [{"type": "text", "text": "Ok"}]}])),
        chunk(
            choice(content=[{"type": "thinking", "thinking": [{"type": "text", "text": ", so"}]}])
        ),
        chunk(choice(content="Answer")),
        chunk(choice(content=[{"type": "text", "text": " here"}])),
        chunk(choice(content=[{"type": "image_url", "image_url": "x"}])),
        chunk(choice(content="", finish="stop")),
    )
    result = run(stream, "mistral")
    blocks = accumulate(result.events).choice(0).ordered()
    assert [(b.kind, b.text) for b in blocks] == [("reasoning", "Ok, so"), ("text", "Answer here")]
    assert result.unknown == ["content.image_url"]
    assert [e.kind for e in result.of(BlockEnd)] == ["reasoning", "text"]


@pytest.mark.parametrize("raw", [*MISTRAL_FINISH_REASONS, "whatever"])
def test_finish_reason_table(raw: str) -> None:
    result = run(sse(chunk(choice(content="a")), chunk(choice(finish=raw))), "mistral")
    end = result.of(MessageEnd)[0]
    assert (end.raw_finish_reason, end.finish_reason) == (
        raw,
        MISTRAL_FINISH_REASONS.get(raw, "other"),
    )


def test_usage_without_include_usage_rides_on_the_finish_chunk() -> None:
    result = run(SEED_TEXT, "mistral")
    updates = result.of(UsageUpdate)
    assert len(updates) == 1 and updates[0].usage.total_tokens == 45
    assert updates[0].raw is result.of(MessageDelta)[0].raw


def test_non_json_payload_is_a_protocol_error() -> None:
    result = run(sse(chunk(choice(content="a")), "data that is not json"), "mistral")
    assert isinstance(result.error, sf.ProtocolError)
    assert result.error.provider == "mistral" and result.error.position == 1


@pytest.mark.anyio
async def test_aevents_under_asyncio_and_trio(anyio_backend: str) -> None:
    async def reads() -> Any:
        for i in range(0, len(SEED_TOOL), 5):
            yield SEED_TOOL[i : i + 5]

    events = [e async for e in sf.aevents(reads(), provider="mistral")]
    assert events == run(SEED_TOOL, "mistral").events


#: Reference chunks (mistralai ``ReferenceChunk``): one before any text, one after "Paris", one
#: after the second text delta (the template path has learned the text chunks by then).
REFERENCES = sse(
    chunk(choice(role="assistant", content=[{"type": "reference", "reference_ids": [9]}])),
    chunk(choice(content=[{"type": "text", "text": "Paris"}])),
    chunk(choice(content=[{"type": "reference", "reference_ids": [0, 2]}])),
    *(chunk(choice(content=word)) for word in (" is", " the", " capital", ".")),
    chunk(choice(content=[{"type": "reference", "reference_ids": [1]}])),
    chunk(choice(finish="stop", content="")),
    "[DONE]",
)


@given(cuts=st.lists(st.integers(0, len(REFERENCES)), max_size=20))
def test_reference_chunks_are_citations_of_the_open_text_block(cuts: list[int]) -> None:
    reads = split_at(REFERENCES, cuts)
    result = run(reads, "mistral", strict=True)
    assert result.error is None and result.unknown == []
    message = sf.fold(reads, provider="mistral", strict=True)
    assert message.text == "Paris is the capital."
    assert [(c.block, c.sources, c.start, c.end) for c in message.citations] == [
        (None, [9], None, None),
        (0, [0, 2], None, None),
        (0, [1], None, None),
    ]
    assert [c.sources for c in message.blocks[0].citations] == [[0, 2], [1]]
