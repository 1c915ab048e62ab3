"""OpenAI Chat Completions (``provider="openai"``): captures, hand-written streams, rules."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import streamfold as sf
from streamfold._engine.pipeline import Pipeline
from streamfold._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    MessageDelta,
    MessageEnd,
    MessageStart,
    Notice,
    UsageUpdate,
)
from streamfold._providers._fast import text_delta
from streamfold._providers.openai_chat import FINISH_REASONS, OpenAIChat
from streamfold._types import ProviderName

from .helpers import (
    LATE_SECOND_CHOICE,
    accumulate,
    captures,
    check_capture,
    expected,
    live_completeness,
    message_events,
    run,
    split_at,
    sse,
)

CAPTURES = captures("openai_chat")
requires_captures = pytest.mark.skipif(not CAPTURES, reason="../shared/captures is absent")


def chunk(*choices: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gpt-x",
        **top,
        "choices": list(choices),
    }


def choice(
    index: int = 0, finish: str | None = None, logprobs: Any = None, **delta: Any
) -> dict[str, Any]:
    return {"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": finish}


def call(
    index: int, arguments: str, id: str | None = None, name: str | None = None
) -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    entry: dict[str, Any] = {"index": index, "function": function}
    if id is not None:
        entry.update(id=id, type="function")
    return entry


BASIC = sse(
    chunk(choice(role="assistant", content="", refusal=None)),
    chunk(choice(content="Hel")),
    chunk(choice(content="lo")),
    chunk(choice(finish="stop")),
    chunk(
        usage={
            "prompt_tokens": 5,
            "completion_tokens": 2,
            "total_tokens": 7,
            "prompt_tokens_details": {"cached_tokens": 3},
            "completion_tokens_details": {"reasoning_tokens": 1},
        }
    ),
    "[DONE]",
)


# -- captures ---------------------------------------------------------------------------------


@requires_captures
@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_capture_matches_expected(path: Path) -> None:
    result = check_capture(path, "openai")
    if path.stem == "logprobs":
        block = accumulate(result.events).choice(0).ordered()[0]
        tokens = [t["token"] for lp in block.logprobs for t in lp["content"]]
        assert tokens == expected(path)["choices"][0]["logprobs_content_tokens"]


@requires_captures
@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_capture_single_byte_reads(path: Path) -> None:
    data = path.read_bytes()
    whole = run(data, "openai")
    pieces = run([data[i : i + 1] for i in range(len(data))], "openai")
    assert pieces.events == whole.events
    assert repr(pieces.error) == repr(whole.error)


STREAMS = [p.read_bytes() for p in CAPTURES] + [BASIC]


@given(st.data())
def test_chunking_invariance(data: st.DataObject) -> None:
    stream = data.draw(st.sampled_from(STREAMS))
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=60))
    whole = run(stream, "openai")
    split = run(split_at(stream, cuts), "openai")
    assert split.events == whole.events
    assert repr(split.error) == repr(whole.error)


# -- text, role, usage ------------------------------------------------------------------------


def test_first_delta_role_and_empty_content_make_no_block() -> None:
    result = run(BASIC, "openai")
    assert result.error is None
    kinds = [type(e).__name__ for e in result.events]
    assert kinds == [
        "MessageStart",
        "BlockStart",
        "BlockDelta",
        "BlockDelta",
        "BlockEnd",
        "MessageDelta",
        "UsageUpdate",
        "MessageEnd",
    ]
    start = result.of(MessageStart)[0]
    assert (start.id, start.model, start.role, start.choice) == (
        "chatcmpl-1",
        "gpt-x",
        "assistant",
        0,
    )
    assert [e.text for e in result.of(BlockDelta)] == ["Hel", "lo"]
    end = result.of(MessageEnd)[0]
    assert (end.finish_reason, end.raw_finish_reason) == ("stop", "stop")
    assert end.raw.data == "[DONE]"
    usage = result.of(UsageUpdate)[0].usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (5, 2, 7)
    assert (usage.cached_tokens, usage.reasoning_tokens) == (3, 1)
    assert usage.raw["prompt_tokens"] == 5


def test_null_content_first_delta_never_appends_none() -> None:
    result = run(
        sse(
            chunk(choice(role="assistant", content=None)),
            chunk(choice(content="x")),
            chunk(choice(finish="stop")),
            "[DONE]",
        ),
        "openai",
    )
    block = accumulate(result.events).choice(0).ordered()
    assert [(b.kind, b.text) for b in block] == [("text", "x")]


def test_every_event_keeps_its_frame() -> None:
    result = run(BASIC, "openai")
    assert all(isinstance(e.raw, sf.ServerSentEvent) for e in result.events)
    assert result.of(UsageUpdate)[0].raw.data.startswith('{"id"')


def test_azure_first_chunk_with_empty_choices_is_not_usage() -> None:
    azure = {
        "choices": [],
        "created": 0,
        "id": "",
        "model": "",
        "object": "",
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}],
    }
    result = run(
        sse(azure, chunk(choice(content="hi")), chunk(choice(finish="stop")), "[DONE]"), "openai"
    )
    assert result.of(UsageUpdate) == []
    assert result.of(MessageStart)[0].id == "chatcmpl-1"
    assert type(result.events[0]) is MessageStart


#: Top-level fields every OpenAI chunk repeats (include_usage_tool_call capture).
TOP = {"created": 1764500140, "system_fingerprint": "fp_b547601dbd", "service_tier": "default"}


def top_level_stream(**last: Any) -> bytes:
    return sse(
        chunk(choice(role="assistant", content=""), **TOP),
        chunk(choice(content="Hi"), **TOP),
        chunk(choice(finish="stop"), **TOP),
        chunk(usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}, **last),
        "[DONE]",
    )


@pytest.mark.parametrize("key", ["created", "system_fingerprint", "service_tier"])
def test_top_level_chunk_fields_are_in_the_message_metadata(key: str) -> None:
    # As the SDK's final ChatCompletion has them (created, system_fingerprint, service_tier).
    message = sf.fold([top_level_stream(**TOP)], provider="openai")
    assert message.metadata[key] == TOP[key]
    assert message.to_request() == {"role": "assistant", "content": "Hi"}
    # Known from the first chunk: the MessageStart has it, a stream cut after it keeps it.
    assert run(top_level_stream(), "openai").of(MessageStart)[0].metadata == TOP
    cut = top_level_stream()[: top_level_stream().index(b"Hi")]
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold([cut], provider="openai")
    assert info.value.partial is not None and info.value.partial.metadata[key] == TOP[key]


def test_a_later_chunk_without_the_fields_does_not_erase_them() -> None:
    # Azure's first chunk has ``created: 0``; a usage chunk may lack them: never erased.
    assert sf.fold([top_level_stream()], provider="openai").metadata == TOP
    assert sf.fold([BASIC], provider="openai").metadata == {}


def test_moderation_chunk_is_in_the_message_metadata() -> None:
    # Moderated completions: the moderation results come on a chunk of their own.
    results = {"type": "moderation_results", "model": "omni-moderation-latest", "results": []}
    moderation = {"input": results, "output": results}
    message = sf.fold([top_level_stream(moderation=moderation)], provider="openai")
    assert message.metadata["moderation"] == moderation
    assert message.to_request() == {"role": "assistant", "content": "Hi"}


def test_azure_prompt_filter_results_are_in_the_message_metadata() -> None:
    verdict = [{"prompt_index": 0, "content_filter_results": {"hate": {"filtered": False}}}]
    azure = {"choices": [], "created": 0, "id": "", "model": "", "object": ""}
    stream = sse(
        {**azure, "prompt_filter_results": verdict},
        chunk(choice(content="hi"), created=1774963235),
        chunk(choice(finish="stop"), created=1774963235),
        "[DONE]",
    )
    message = sf.fold([stream], provider="openai")
    assert message.metadata == {"prompt_filter_results": verdict, "created": 1774963235}


#: Groq's usage as its older streams send it (in ``x_groq`` of the finishing chunk), with the
#: timings Groq adds to the OpenAI counters.
GROQ_USAGE = {
    "queue_time": 0.02,
    "prompt_tokens": 41,
    "prompt_time": 0.003,
    "completion_tokens": 9,
    "completion_time": 0.008,
    "total_tokens": 50,
    "total_time": 0.011,
}


def groq_stream(**top: Any) -> bytes:
    """A Groq-style stream (WIRE_FORMATS §3 ``x_groq``): ``x_groq.id`` on the first chunk, the
    usage in ``x_groq.usage`` of the finishing chunk, no ``include_usage`` chunk."""
    first = chunk(choice(role="assistant", content=""), x_groq={"id": "req_01abc"})
    finishing = chunk(choice(finish="stop"), x_groq={"id": "req_01abc", "usage": GROQ_USAGE}, **top)
    return sse(
        first, chunk(choice(content="Hi")), chunk(choice(content=" there")), finishing, "[DONE]"
    )


def test_groq_usage_in_x_groq_is_read() -> None:
    result = run(groq_stream(), "openai")
    assert result.error is None and result.warnings == []
    assert [e.usage.raw for e in result.of(UsageUpdate)] == [GROQ_USAGE]
    message = sf.fold([groq_stream()], provider="openai")
    assert message.text == "Hi there"
    assert message.usage is not None
    assert (message.usage.input_tokens, message.usage.output_tokens) == (41, 9)
    assert message.usage.total_tokens == 50
    assert message.usage.raw == GROQ_USAGE


def test_a_top_level_usage_wins_over_x_groq() -> None:
    top = {"prompt_tokens": 40, "completion_tokens": 10, "total_tokens": 50}
    message = sf.fold([groq_stream(usage=top)], provider="openai")
    assert message.usage is not None and message.usage.raw == top
    # A null top-level ``usage`` (OpenAI's "all other chunks") does not hide Groq's.
    message = sf.fold([groq_stream(usage=None)], provider="openai")
    assert message.usage is not None and message.usage.raw == GROQ_USAGE


def test_an_x_groq_usage_that_is_not_an_object_is_a_protocol_error() -> None:
    bad = sse(chunk(choice(content="a")), chunk(choice(finish="stop"), x_groq={"usage": [1]}))
    result = run(bad, "openai")
    assert isinstance(result.error, sf.ProtocolError)
    assert "x_groq.usage is not an object" in str(result.error)
    assert result.error.provider == "openai" and result.error.position == 1


def test_usage_chunk_comes_before_the_finish_of_the_same_chunk() -> None:
    final = chunk(
        choice(finish="length"),
        usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    )
    result = run(sse(chunk(choice(content="a")), final, "[DONE]"), "openai")
    names = [type(e).__name__ for e in result.events]
    assert names[-4:] == ["UsageUpdate", "BlockEnd", "MessageDelta", "MessageEnd"]
    assert result.of(MessageDelta)[0].finish_reason == "length"
    assert result.of(MessageEnd)[0].finish_reason == "length"


@pytest.mark.parametrize("raw", [*FINISH_REASONS, "something_new"])
def test_finish_reason_table(raw: str) -> None:
    result = run(sse(chunk(choice(content="a")), chunk(choice(finish=raw)), "[DONE]"), "openai")
    end = result.of(MessageEnd)[0]
    assert end.raw_finish_reason == raw
    assert end.finish_reason == FINISH_REASONS.get(raw, "other")


def test_refusal_and_logprobs_deltas() -> None:
    lp = {"content": None, "refusal": [{"token": "I'm", "logprob": -0.1}]}
    stream = sse(
        chunk(choice(role="assistant", content=None, refusal="")),
        chunk(choice(refusal="I'm", logprobs=lp)),
        chunk(choice(refusal=" sorry")),
        chunk(choice(finish="stop")),
        "[DONE]",
    )
    result = run(stream, "openai")
    blocks = accumulate(result.events).choice(0).ordered()
    assert [(b.kind, b.text) for b in blocks] == [("refusal", "I'm sorry")]
    assert blocks[0].logprobs == [lp]


def test_a_refusal_finishes_as_refusal_with_the_raw_stop_kept() -> None:
    # OpenAI has no finish_reason for a refusal: the choice streams ``delta.refusal`` and ends
    # with ``stop``. Normalized it is ``refusal`` (DESIGN), the raw ``stop`` is kept.
    stream = sse(
        chunk(choice(role="assistant", content=None, refusal="")),
        chunk(choice(refusal="I'm sorry")),
        chunk(choice(finish="stop")),
        "[DONE]",
    )
    message = sf.fold([stream], provider="openai")
    assert (message.refusal, message.text) == ("I'm sorry", "")
    assert (message.finish_reason, message.raw_finish_reason) == ("refusal", "stop")


@requires_captures
def test_the_refusal_capture_finishes_as_refusal() -> None:
    path = next(p for p in CAPTURES if p.stem == "refusal")
    message = sf.fold([path.read_bytes()], provider="openai")
    assert message.raw_finish_reason == expected(path)["choices"][0]["finish_reason"] == "stop"
    assert message.finish_reason == "refusal"


def test_text_logprobs_ride_on_the_delta() -> None:
    lp = {"content": [{"token": "Foo", "logprob": -0.5, "bytes": [70, 111, 111]}]}
    result = run(
        sse(chunk(choice(content="Foo", logprobs=lp)), chunk(choice(finish="stop"))), "openai"
    )
    assert [e.logprobs for e in result.of(BlockDelta)] == [lp]


def _token(text: str) -> dict[str, Any]:
    return {"token": text, "logprob": -0.5, "bytes": list(text.encode()), "top_logprobs": []}


#: Plain chunks (a template is learned, the fold's direct path is live), then scored ones, a
#: plain one, a scored one, then a refusal scored under ``logprobs.refusal``.
SCORED = sse(
    chunk(choice(role="assistant", content="")),
    *(chunk(choice(content=w)) for w in ("a", "b", "c", "d")),
    *(
        chunk(choice(content=w, logprobs={"content": [_token(w)], "refusal": None}))
        for w in ("Foo", "!", " é")
    ),
    chunk(choice(content="plain")),
    chunk(choice(content=" end", logprobs={"content": [_token(" e"), _token("nd")]})),
    chunk(choice(refusal="No", logprobs={"content": None, "refusal": [_token("No")]})),
    chunk(choice(refusal=".", logprobs={"content": None, "refusal": [_token(".")]})),
    chunk(choice(finish="stop")),
    "[DONE]",
)


@given(st.lists(st.integers(0, len(SCORED)), max_size=40))
def test_logprobs_are_concatenated_on_the_block_they_score(cuts: list[int]) -> None:
    # WIRE_FORMATS §3: "Logprobs per chunk ... concatenate the arrays": ``content`` ones on the
    # text block, ``refusal`` ones on the refusal block (``Block.extra["logprobs"]``).
    for pieces in ([SCORED], split_at(SCORED, cuts)):
        message = sf.fold(pieces, provider="openai", strict=True)
        tokens = [(b.kind, [t["token"] for t in b.extra["logprobs"]]) for b in message.blocks]
        assert tokens == [("text", ["Foo", "!", " é", " e", "nd"]), ("refusal", ["No", "."])]
        assert message.text == "abcdFoo! éplain end" and message.refusal == "No."


def test_a_partial_keeps_the_logprobs_it_had() -> None:
    # A snapshot is never changed afterwards: the logprobs list it got stays as it was.
    folder = sf.Folder("openai")
    first = BlockDelta(index=0, kind="text", text="a", logprobs={"content": [_token("a")]})
    second = BlockDelta(index=0, kind="text", text="b", logprobs={"content": [_token("b")]})
    for event in (MessageStart(), BlockStart(index=0, kind="text"), first):
        folder.add(event)
    before = folder.partial()
    folder.add(second)
    after = folder.partial()
    assert [t["token"] for t in before.blocks[0].extra["logprobs"]] == ["a"]
    assert [t["token"] for t in after.blocks[0].extra["logprobs"]] == ["a", "b"]


def test_logprobs_without_text_are_a_notice() -> None:
    lp = {"content": [{"token": "", "logprob": 0.0}]}
    result = run(
        sse(chunk(choice(content="", logprobs=lp)), chunk(choice(finish="stop"))), "openai"
    )
    notices = [n for n in result.of(Notice) if n.kind == "logprobs"]
    assert [n.data for n in notices] == [{"choice": 0, "logprobs": lp}]


def test_reasoning_extensions_open_a_reasoning_block_then_text() -> None:
    stream = sse(
        chunk(choice(role="assistant", content="")),
        chunk(choice(reasoning_content="think")),
        chunk(choice(reasoning=" more", channel="analysis")),
        chunk(choice(content="answer")),
        chunk(choice(finish="stop")),
    )
    blocks = accumulate(run(stream, "openai").events).choice(0).ordered()
    assert [(b.kind, b.text, b.ended) for b in blocks] == [
        ("reasoning", "think more", True),
        ("text", "answer", True),
    ]


#: vLLM (0.11-0.12) fills ``reasoning`` and its deprecated alias ``reasoning_content`` alike.
BOTH_ALIASES = sse(
    chunk(choice(role="assistant", content="")),
    chunk(choice(reasoning="Think", reasoning_content="Think")),
    chunk(choice(reasoning="ing", reasoning_content="ing")),
    chunk(choice(reasoning_content=".", reasoning=".")),
    chunk(choice(reasoning="", reasoning_content=" More")),
    chunk(choice(reasoning=" still", reasoning_content=None)),
    chunk(choice(content="Hi")),
    chunk(choice(finish="stop")),
    "[DONE]",
)


@given(st.lists(st.integers(0, len(BOTH_ALIASES)), max_size=30))
def test_reasoning_under_both_names_is_read_once(cuts: list[int]) -> None:
    pieces = split_at(BOTH_ALIASES, cuts)
    result = run(pieces, "openai", strict=True)
    assert result.error is None and result.warnings == []
    blocks = accumulate(result.events).choice(0).ordered()
    assert [(b.kind, b.text) for b in blocks] == [
        ("reasoning", "Thinking. More still"),
        ("text", "Hi"),
    ]
    message = sf.fold(pieces, provider="openai")
    assert (message.reasoning, message.text, message.warnings) == ("Thinking. More still", "Hi", [])


def test_reasoning_names_that_differ_keep_both_texts_and_warn() -> None:
    # Not an alias pair: which one the host meant is unknown, so nothing is dropped.
    stream = sse(
        chunk(choice(role="assistant", content="")),
        chunk(choice(reasoning_content="A", reasoning="B")),
        chunk(choice(finish="stop")),
        "[DONE]",
    )
    message = sf.fold([stream], provider="openai")
    assert message.reasoning == "AB"
    assert len(message.warnings) == 1 and "differ" in message.warnings[0]
    with pytest.raises(sf.ProtocolError, match="differ"):
        sf.fold([stream], provider="openai", strict=True)


# -- tool calls -------------------------------------------------------------------------------


def test_tool_calls_sparse_indices_above_zero_interleaved() -> None:
    stream = sse(
        chunk(choice(role="assistant", content=None, tool_calls=[call(3, "", "call_a", "f")])),
        chunk(choice(tool_calls=[call(7, '{"y"', "call_b", "g")])),
        chunk(choice(tool_calls=[call(3, '{"x": 1')])),
        chunk(choice(tool_calls=[call(7, ": 2}"), call(3, "}")])),
        chunk(choice(finish="tool_calls")),
        "[DONE]",
    )
    result = run(stream, "openai")
    assert result.error is None and result.warnings == []
    blocks = accumulate(result.events).choice(0).ordered()
    assert [(b.kind, b.id, b.name, b.text, b.ended) for b in blocks] == [
        ("tool_call", "call_a", "f", '{"x": 1}', True),
        ("tool_call", "call_b", "g", '{"y": 2}', True),
    ]
    assert result.of(MessageEnd)[0].finish_reason == "tool_calls"


def test_text_then_tool_call_closes_the_text_block() -> None:
    stream = sse(
        chunk(choice(content="Let me check.")),
        chunk(choice(tool_calls=[call(0, "{}", "call_1", "lookup")])),
        chunk(choice(finish="tool_calls")),
        "[DONE]",
    )
    result = run(stream, "openai")
    names = [(type(e).__name__, getattr(e, "index", None)) for e in result.events]
    assert names == [
        ("MessageStart", None),
        ("BlockStart", 0),
        ("BlockDelta", 0),
        ("BlockEnd", 0),
        ("BlockStart", 1),
        ("BlockDelta", 1),
        ("BlockEnd", 1),
        ("MessageDelta", None),
        ("MessageEnd", None),
    ]


def test_a_new_id_on_a_reused_index_is_a_new_call() -> None:
    stream = sse(
        chunk(choice(tool_calls=[call(0, '{"a": 1}', "call_1", "f")])),
        chunk(choice(tool_calls=[call(0, '{"b": 2}', "call_2", "f")])),
        chunk(choice(finish="tool_calls")),
    )
    blocks = accumulate(run(stream, "openai").events).choice(0).ordered()
    assert [(b.id, b.text) for b in blocks] == [("call_1", '{"a": 1}'), ("call_2", '{"b": 2}')]


@pytest.mark.parametrize(
    "fragments",
    [
        ['{"q": "xy\ud800"}'],  # a lone surrogate inside one fragment
        ['{"q": "x\ud800', 'y"}'],  # half of a pair that the next fragment does not complete
        ['{"q": "x', '\ud800y"}'],
    ],
    ids=["inside", "unpaired-half", "at-start"],
)
@pytest.mark.parametrize("how", ["fold", "events"])
def test_arguments_with_a_lone_surrogate_keep_their_text(fragments: list[str], how: str) -> None:
    """Argument fragments that hold a lone surrogate (escaped on the wire, so the chunk is
    valid JSON) can never make valid arguments. The call's ``arguments_json`` showed the text
    garbled: the part before the surrogate twice (``{"q": "xy{"q": "xy\\ud800"}``), or the
    unpaired half dropped (``{"q": "xy"}``). Now it is the fragments joined, with the error."""
    stream = sse(
        json.dumps(chunk(choice(tool_calls=[call(0, "", "call_1", "f")]))),
        *(json.dumps(chunk(choice(tool_calls=[call(0, f)]))) for f in fragments),
        chunk(choice(finish="tool_calls")),
        "[DONE]",
    )
    if how == "fold":
        message = sf.fold([stream], provider="openai")
    else:
        folder = sf.Folder("openai")
        for event in sf.events([stream], provider="openai"):
            folder.add(event)
        message = folder.result()
    (tool_call,) = message.tool_calls
    assert tool_call.arguments_json == "".join(fragments)
    assert tool_call.arguments is None
    assert tool_call.error is not None and "lone surrogate U+D800" in tool_call.error


def qwen_call(index: int, arguments: str, id: str = "", name: str = "") -> dict[str, Any]:
    """A tool-call entry as Alibaba Qwen/DashScope streams it: every fragment after the first
    carries ``"id": ""`` and ``"name": ""``."""
    function = {"name": name, "arguments": arguments}
    return {"index": index, "id": id, "type": "function", "function": function}


#: Two calls streamed side by side, their fragments interleaved, every later one with an empty
#: id and name; the first arguments fragment is empty, as DashScope sends it.
QWEN_PARALLEL = sse(
    chunk(choice(role="assistant", content="")),
    chunk(choice(tool_calls=[qwen_call(0, "", "call_a", "get_weather")])),
    chunk(choice(tool_calls=[qwen_call(0, '{"city": ')])),
    chunk(choice(tool_calls=[qwen_call(1, '{"tz": "', "call_b", "get_time")])),
    chunk(choice(tool_calls=[qwen_call(0, '"Paris"')])),
    chunk(choice(tool_calls=[qwen_call(1, "CET")])),
    chunk(choice(tool_calls=[qwen_call(1, '"}'), qwen_call(0, "}")])),
    *(chunk(choice(tool_calls=[qwen_call(1, "")])) for _ in range(2)),
    chunk(choice(finish="tool_calls")),
    "[DONE]",
)


def test_empty_id_and_name_on_fragments_continue_the_call() -> None:
    stream = sse(
        chunk(choice(role="assistant", content="")),
        chunk(choice(tool_calls=[qwen_call(0, "", "call_1", "get_weather")])),
        chunk(choice(tool_calls=[qwen_call(0, '{"city": ')])),
        chunk(choice(tool_calls=[qwen_call(0, '"Paris"}')])),
        chunk(choice(finish="tool_calls")),
        "[DONE]",
    )
    result = run(stream, "openai")
    assert result.error is None and result.warnings == []
    assert [(s.id, s.name) for s in result.of(BlockStart)] == [("call_1", "get_weather")]
    message = sf.fold([stream], provider="openai")
    assert [(c.id, c.name, c.arguments, c.complete) for c in message.tool_calls] == [
        ("call_1", "get_weather", {"city": "Paris"}, True)
    ]


@given(st.lists(st.integers(0, len(QWEN_PARALLEL)), max_size=40))
def test_qwen_parallel_calls_with_empty_ids_fold_alike_in_any_pieces(cuts: list[int]) -> None:
    pieces = split_at(QWEN_PARALLEL, cuts)
    result = run(pieces, "openai")
    assert result.error is None and result.warnings == []
    assert result.events == run(QWEN_PARALLEL, "openai").events
    message = sf.fold(pieces, provider="openai")
    assert [(c.id, c.name, c.arguments, c.complete) for c in message.tool_calls] == [
        ("call_a", "get_weather", {"city": "Paris"}, True),
        ("call_b", "get_time", {"tz": "CET"}, True),
    ]
    assert message.finish_reason == "tool_calls"


def test_a_new_id_after_empty_id_fragments_is_still_a_new_call() -> None:
    stream = sse(
        chunk(choice(tool_calls=[qwen_call(0, "", "call_1", "f")])),
        *(chunk(choice(tool_calls=[qwen_call(0, part)])) for part in ('{"a"', ": 1}")),
        chunk(choice(tool_calls=[qwen_call(0, "", "call_2", "g")])),
        *(chunk(choice(tool_calls=[qwen_call(0, part)])) for part in ('{"b"', ": 2}")),
        chunk(choice(finish="tool_calls")),
    )
    message = sf.fold([stream], provider="openai")
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("call_1", "f", {"a": 1}),
        ("call_2", "g", {"b": 2}),
    ]


def test_an_empty_id_never_names_a_call_and_never_starts_one_alone() -> None:
    # A call whose first fragment has an empty id is a call without one (not id "").
    named = sse(chunk(choice(tool_calls=[qwen_call(0, "{}", name="f")])))
    assert [(s.id, s.name) for s in run(named, "openai").of(BlockStart)] == [(None, "f")]
    # Empty id and name at an index never started: a fragment of nothing, as with no id.
    orphan = run(sse(chunk(choice(tool_calls=[qwen_call(2, '{"a"')]))), "openai")
    assert isinstance(orphan.error, sf.ProtocolError)
    assert "never started" in str(orphan.error)


def test_deprecated_function_call_delta() -> None:
    stream = sse(
        chunk(choice(function_call={"name": "f", "arguments": ""})),
        chunk(choice(function_call={"arguments": '{"q": 1}'})),
        chunk(choice(finish="function_call")),
    )
    result = run(stream, "openai")
    blocks = accumulate(result.events).choice(0).ordered()
    assert [(b.kind, b.name, b.text) for b in blocks] == [("tool_call", "f", '{"q": 1}')]
    assert result.of(MessageEnd)[0].finish_reason == "tool_calls"
    # Sent back in its own (deprecated) shape: a tool call needs an id this call never had.
    # https://platform.openai.com/docs/api-reference/chat/create (assistant function_call)
    message = sf.fold([stream], provider="openai")
    assert message.to_request() == {
        "role": "assistant",
        "content": None,
        "function_call": {"name": "f", "arguments": '{"q": 1}'},
    }


def test_fragment_for_a_call_never_started_is_a_protocol_error() -> None:
    stream = sse(chunk(choice(content="x")), chunk(choice(tool_calls=[call(2, '{"a"')])))
    result = run(stream, "openai")
    assert isinstance(result.error, sf.ProtocolError)
    assert result.error.provider == "openai"
    assert result.error.position == 1
    assert "never started" in str(result.error)
    assert [e.text for e in result.of(BlockDelta)] == ["x"]  # what came before was yielded


# -- several choices ----------------------------------------------------------------------------


def test_n_choices_interleave_and_end_separately() -> None:
    stream = sse(
        chunk(choice(0, role="assistant", content=""), choice(1, role="assistant", content="")),
        chunk(choice(1, content="B")),
        chunk(choice(0, content="A")),
        chunk(choice(1, finish="stop")),
        chunk(choice(0, content="a")),
        chunk(choice(0, finish="length")),
        "[DONE]",
    )
    result = run(stream, "openai")
    assert [e.choice for e in result.of(MessageStart)] == [0, 1]
    folded = accumulate(result.events)
    assert [b.text for b in folded.choice(0).ordered()] == ["Aa"]
    assert [b.text for b in folded.choice(1).ordered()] == ["B"]
    assert (folded.choice(0).raw_finish_reason, folded.choice(1).raw_finish_reason) == (
        "length",
        "stop",
    )


def test_each_choice_folds_as_a_stream_of_that_choice_alone() -> None:
    # n>1: choice 1's message is the one a stream of choice 1 alone folds to, its block
    # indices included (0, 1, … within the choice), so ``blocks[call.block]`` is the call's.
    def frames(only: int | None) -> bytes:
        picks = [
            choice(1, role="assistant", tool_calls=[call(0, "", id="call_b", name="f")]),
            choice(0, role="assistant", content="Hi"),
            choice(1, tool_calls=[call(0, '{"a": 1}')]),
            choice(1, tool_calls=[call(1, "{}", id="call_c", name="g")]),
            choice(0, finish="stop"),
            choice(1, finish="tool_calls"),
        ]
        return sse(*(chunk(c) for c in picks if only in (None, c["index"])), "[DONE]")

    both = sf.fold([frames(None)], provider="openai", strict=True)
    for index, message in enumerate(both.choices):
        alone = sf.fold([frames(index)], provider="openai", strict=True)
        assert [(b.index, b.kind) for b in message.blocks] == [
            (b.index, b.kind) for b in alone.blocks
        ]
        assert message.tool_calls == alone.tool_calls
        for tool_call in message.tool_calls:
            assert tool_call.block is not None
            assert message.blocks[tool_call.block].tool_call == tool_call
    assert [(b.index, b.kind) for b in both.choices[1].blocks] == [
        (0, "tool_call"),
        (1, "tool_call"),
    ]


#: n=2 where choice 1's first chunk comes after choice 0 finished (a short choice 0), then
#: OpenAI's include_usage chunk.
LATE_CHOICE = sse(
    chunk(choice(0, role="assistant", content="Hi")),
    chunk(choice(0, finish="stop")),
    chunk(choice(1, role="assistant", content="Hello")),
    chunk(choice(1, content=" there")),
    chunk(choice(1, finish="length")),
    chunk(usage={"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}),
    "[DONE]",
)


def test_a_finish_reason_announces_and_done_ends_every_choice() -> None:
    result = run(LATE_CHOICE, "openai")
    names = [(type(e).__name__, getattr(e, "choice", None)) for e in result.events]
    # Each choice's finish is announced at its chunk; the messages end with the stream.
    assert message_events(result) == LATE_SECOND_CHOICE
    assert names.index(("UsageUpdate", None)) < names.index(("MessageEnd", 0))
    ends = result.of(MessageEnd)
    assert [(e.finish_reason, e.raw_finish_reason) for e in ends] == [
        ("stop", "stop"),
        ("length", "length"),
    ]
    assert all(e.raw.data == "[DONE]" for e in ends)


@pytest.mark.parametrize("cut_done", [False, True], ids=["done", "no-done"])
def test_complete_is_monotonic_and_only_true_at_the_end_of_the_stream(cut_done: bool) -> None:
    # A live view folds event by event: choice 0 finished before choice 1 started, and the
    # usage came after both finishes. Neither the folder, nor any choice's message, may read
    # complete before the last event (it read True, then False when choice 1 started).
    data = LATE_CHOICE[: -len(b"data: [DONE]\n\n")] if cut_done else LATE_CHOICE
    events, seen, folder = live_completeness(data, "openai")
    # It turns True once, at the last MessageEnd, after every part of the answer and usage
    # (only the no-[DONE] warning follows it), and stays True.
    done = next(i for i, flags in enumerate(seen) if any(flags))
    assert all(not any(flags) for flags in seen[:done]), seen
    assert all(all(flags) for flags in seen[done:]), seen
    ends = [i for i, e in enumerate(events) if isinstance(e, MessageEnd)]
    assert done == ends[-1]
    assert all(isinstance(e, Notice) for e in events[done + 1 :])
    assert len(events[done + 1 :]) == (1 if cut_done else 0)
    result = folder.result()
    assert [c.text for c in result.choices] == ["Hi", "Hello there"]
    assert [c.finish_reason for c in result.choices] == ["stop", "length"]
    assert result.usage is not None and result.usage.total_tokens == 7


def test_a_cut_after_a_late_choice_started_is_incomplete() -> None:
    # Choice 0 finished, choice 1 started, then the input ended: sf.events (which decides by
    # the provider's terminal_seen) raised nothing, only warned of a missing [DONE], while
    # sf.fold raised.
    cut = LATE_CHOICE[: LATE_CHOICE.index(b"data", LATE_CHOICE.index(b"Hello"))]
    result = run(cut, "openai")
    assert isinstance(result.error, sf.IncompleteStreamError)
    assert result.warnings == []
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold([cut], provider="openai")
    assert info.value.partial is not None and info.value.partial.choices[1].text == "Hello"


def test_a_live_view_shows_a_finish_before_the_end() -> None:
    folder = sf.Folder("openai")
    pipeline = Pipeline("openai")  # the stream goes on: its input has not ended
    first, finished = LATE_CHOICE.index(b"data", 10), LATE_CHOICE.index(b"Hello")
    for event in pipeline.feed(LATE_CHOICE[:first]):
        folder.add(event)
    assert folder.snapshot().finish_reason is None
    for event in pipeline.feed(LATE_CHOICE[first:finished]):
        folder.add(event)
    snapshot = folder.snapshot()
    assert (snapshot.finish_reason, snapshot.raw_finish_reason) == ("stop", "stop")
    assert not snapshot.complete and not folder.complete


def test_an_error_after_a_finish_keeps_that_finish_in_the_partial() -> None:
    stream = sse(
        chunk(choice(content="x")),
        chunk(choice(finish="stop")),
        {"error": {"message": "late failure", "code": 500}},
    )
    with pytest.raises(sf.StreamError) as info:
        sf.fold([stream], provider="openai")
    partial = info.value.partial
    assert partial is not None and not partial.complete
    assert (partial.text, partial.finish_reason, partial.raw_finish_reason) == ("x", "stop", "stop")


def test_terminal_seen_only_when_every_choice_ended() -> None:
    pipeline = Pipeline("openai")
    pipeline.feed(sse(chunk(choice(0, content="a"), choice(1, content="b"))))
    pipeline.feed(sse(chunk(choice(0, finish="stop"))))
    assert not pipeline.provider.terminal_seen
    pipeline.feed(sse(chunk(choice(1, finish="stop"))))
    assert pipeline.provider.terminal_seen


# -- errors -------------------------------------------------------------------------------------


def test_error_in_data_payload_raises_after_the_events_before_it() -> None:
    stream = sse(
        chunk(choice(content="partial")),
        {"error": {"message": "server overloaded", "type": "server_error", "code": None}},
    )
    seen: list[Any] = []
    with pytest.raises(sf.StreamError) as info:
        for event in sf.events([stream], provider="openai"):
            seen.append(event)
    assert [e.text for e in seen if isinstance(e, BlockDelta)] == ["partial"]
    assert info.value.message == "server overloaded"
    assert info.value.code == "server_error"
    assert info.value.provider == "openai"
    assert info.value.retryable_without_duplicate is False
    assert isinstance(info.value.raw, sf.ServerSentEvent)


def test_event_error_frame_before_any_content_is_retryable() -> None:
    stream = sse(("error", {"error": {"message": "bad", "code": "tool_use_failed"}}))
    result = run(stream, "openai")
    assert isinstance(result.error, sf.StreamError)
    assert result.error.code == "tool_use_failed"
    assert result.error.retryable_without_duplicate is True


def test_error_chunk_keeps_its_usage() -> None:
    stream = sse(
        chunk(
            choice(content="x"),
            error={"code": 400, "message": "Token limit"},
            usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
        )
    )
    result = run(stream, "openai")
    assert result.of(UsageUpdate)[0].usage.total_tokens == 3
    assert isinstance(result.error, sf.StreamError) and result.error.code == 400


def test_non_json_payload_is_a_protocol_error() -> None:
    result = run(sse(chunk(choice(content="x")), "{not json"), "openai")
    assert isinstance(result.error, sf.ProtocolError)
    assert result.error.provider == "openai"
    assert result.error.event == "message"
    assert result.error.position == 1
    assert "not valid JSON" in str(result.error)


def test_done_is_ordinary_data() -> None:
    result = run(sse(chunk(choice(content="x")), chunk(choice(finish="stop")), "[DONE]"), "openai")
    assert result.error is None and result.warnings == []


# -- ordering rules -----------------------------------------------------------------------------


AFTER_DONE = sse(
    chunk(choice(content="x")),
    chunk(choice(finish="stop")),
    "[DONE]",
    chunk(usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}),
)
AFTER_FINISH = sse(
    chunk(choice(content="x")),
    chunk(choice(finish="stop")),
    chunk(choice(content="late")),
    "[DONE]",
)


@pytest.mark.parametrize(
    ("stream", "rule"), [(AFTER_DONE, "after [DONE]"), (AFTER_FINISH, "after its finish_reason")]
)
def test_ordering_rules_warn_by_default_and_raise_when_strict(stream: bytes, rule: str) -> None:
    lenient = run(stream, "openai")
    assert lenient.error is None
    assert len(lenient.warnings) == 1 and rule in lenient.warnings[0]
    assert "late" not in "".join(e.text for e in lenient.of(BlockDelta))
    strict = run(stream, "openai", strict=True)
    assert isinstance(strict.error, sf.ProtocolError) and rule in str(strict.error)


# -- the end of the stream ---------------------------------------------------------------------

CUT_BEFORE_DONE = sse(chunk(choice(content="x")), chunk(choice(finish="stop")))


def test_a_cut_after_finish_reason_is_complete_and_says_done_is_missing() -> None:
    # Completion is read from finish_reason (Mistral's guide), but what follows it (OpenAI's
    # include_usage chunk, OpenRouter's error) may be lost: the user is told.
    lenient = run(CUT_BEFORE_DONE, "openai")
    assert lenient.error is None
    assert len(lenient.warnings) == 1
    assert "without [DONE]" in lenient.warnings[0] and "event" not in lenient.warnings[0]
    message = sf.fold([CUT_BEFORE_DONE], provider="openai")
    assert message.complete and message.text == "x" and message.finish_reason == "stop"
    assert len(message.warnings) == 1 and "without [DONE]" in message.warnings[0]
    strict = run(CUT_BEFORE_DONE, "openai", strict=True)
    assert isinstance(strict.error, sf.ProtocolError) and "without [DONE]" in str(strict.error)


def test_a_stream_cut_before_any_finish_says_nothing_of_done() -> None:
    # Still an incomplete stream: the missing finish is the error, not the missing [DONE].
    with pytest.raises(sf.IncompleteStreamError) as caught:
        sf.fold([sse(chunk(choice(content="x")))], provider="openai")
    assert caught.value.partial is not None
    assert not any("[DONE]" in w for w in caught.value.partial.warnings)


#: The captures that end well: a finish, then ``[DONE]`` (not Groq's error frame, nor
#: OpenRouter's error chunk, which raise before the end).
ENDING_WELL = [
    p
    for p in (*CAPTURES, *captures("mistral"))
    if p.read_bytes().endswith(b"data: [DONE]\n\n") and expected(p)["error"] is None
]


@pytest.mark.parametrize("path", ENDING_WELL, ids=lambda p: p.stem)
def test_every_capture_cut_just_before_done_folds_the_same_with_one_warning(path: Path) -> None:
    data = path.read_bytes()
    provider: ProviderName = "mistral" if path.parent.name == "mistral" else "openai"
    whole = sf.fold([data], provider=provider)
    cut = sf.fold([data[: -len(b"data: [DONE]\n\n")]], provider=provider)
    assert [w for w in cut.warnings if w not in whole.warnings] == [
        f"{provider}: the stream ended after finish_reason without [DONE]: a usage chunk or "
        f"an error sent after the finish may be missing (frame {data.count(b'data:') - 2})"
    ]
    assert dataclasses.replace(cut, warnings=whole.warnings) == whole


def test_repeated_empty_finishing_chunk_is_not_a_violation() -> None:
    stream = sse(
        chunk(choice(content="x")),
        chunk(choice(finish="length")),
        chunk(choice(role="assistant", content="", finish="length")),
        "[DONE]",
    )
    result = run(stream, "openai", strict=True)
    assert result.error is None
    assert len(result.of(MessageEnd)) == 1


def test_blocks_are_closed_before_the_message_end() -> None:
    result = run(BASIC, "openai")
    ends = [i for i, e in enumerate(result.events) if isinstance(e, BlockEnd)]
    assert ends and ends[-1] < result.events.index(result.of(MessageEnd)[0])
    assert result.of(BlockStart)[0].kind == "text"


# -- async --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_aevents_under_asyncio_and_trio(anyio_backend: str) -> None:
    async def reads() -> Any:
        for i in range(0, len(BASIC), 7):
            yield BASIC[i : i + 7]

    events = [e async for e in sf.aevents(reads(), provider="openai")]
    assert events == run(BASIC, "openai").events


# -- the unparsed fast path for the common chunk ------------------------------------------------


#: An emoji cut between its UTF-16 halves (a server splitting text by UTF-16 units): each
#: chunk holds a lone surrogate escape, which json.loads (what the SDKs use) accepts.
SPLIT_EMOJI = [
    '{"choices":[{"index":0,"delta":{"content":"Hi \\ud83d"}}]}',
    '{"choices":[{"index":0,"delta":{"content":"\\ude00!"}}]}',
    '{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}',
]


@given(st.lists(st.integers(0, 300), max_size=20))
def test_a_lone_surrogate_escape_does_not_abort_the_stream(cuts: list[int]) -> None:
    stream = sse(*SPLIT_EMOJI, "[DONE]")
    pieces = split_at(stream, cuts)
    wanted = [json.loads(c)["choices"][0]["delta"].get("content") for c in SPLIT_EMOJI[:2]]
    result = run(pieces, "openai")
    assert result.error is None
    assert [e.text for e in result.of(BlockDelta)] == wanted == ["Hi \ud83d", "\ude00!"]
    # The fold makes the two halves one character again (its own tests are in
    # test_fold_streams.py).
    assert sf.fold(pieces, provider="openai").text == "Hi \U0001f600!"


def test_text_delta_builds_the_same_event_as_the_constructor() -> None:
    fast = text_delta(3, "text", "hé", 1, "frame")
    slow = BlockDelta(index=3, kind="text", text="hé", choice=1, raw="frame")
    assert fast == slow and type(fast) is BlockDelta
    for field in dataclasses.fields(BlockDelta):
        assert getattr(fast, field.name) == getattr(slow, field.name)


def _chunk_bytes(text: str, padding: str | None, ascii_only: bool, spaced: bool) -> bytes:
    body = chunk(choice(content=text))
    if padding is not None:
        body["obfuscation"] = padding
    separators = (", ", ": ") if spaced else (",", ":")
    data = json.dumps(body, ensure_ascii=ascii_only, separators=separators)
    return f"data: {data}\n\n".encode()


@given(
    texts=st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=30),
    paddings=st.lists(st.text("abcXYZ019", max_size=6) | st.none(), min_size=30, max_size=30),
    ascii_only=st.booleans(),
    spaced=st.booleans(),
)
def test_fast_path_never_changes_the_text(
    texts: list[str], paddings: list[str | None], ascii_only: bool, spaced: bool
) -> None:
    stream = sse(chunk(choice(role="assistant", content="")))
    stream += b"".join(
        _chunk_bytes(text, paddings[i], ascii_only, spaced) for i, text in enumerate(texts)
    )
    stream += sse(chunk(choice(finish="stop")), "[DONE]")
    result = run(stream, "openai")
    assert result.error is None and result.warnings == []
    assert [e.text for e in result.of(BlockDelta)] == texts
    assert all(e.raw.data.startswith("{") for e in result.of(BlockDelta))


def test_fast_path_is_taken_for_repeated_chunks_and_left_for_others() -> None:
    pipeline = Pipeline("openai")
    events = pipeline.feed(sse(*(chunk(choice(content=f"w{i} ")) for i in range(5))))
    provider = pipeline.provider
    assert isinstance(provider, OpenAIChat) and provider._template is not None
    # The same prefix, but an escaped quote, then a finish: both go through the parser.
    events += pipeline.feed(sse(chunk(choice(content='say "hi"')), chunk(choice(finish="stop"))))
    assert [e.text for e in events if isinstance(e, BlockDelta)] == [
        "w0 ",
        "w1 ",
        "w2 ",
        "w3 ",
        "w4 ",
        'say "hi"',
    ]
    assert [e.finish_reason for e in events if isinstance(e, MessageDelta)] == ["stop"]


def test_fast_path_rejects_a_raw_control_character() -> None:
    good = sse(*(chunk(choice(content="ok")) for _ in range(3)))
    bad = _chunk_bytes("tab", None, False, False).replace(b'"tab"', b'"t\tb"')
    result = run(good + bad, "openai")
    assert isinstance(result.error, sf.ProtocolError)
    assert [e.text for e in result.of(BlockDelta)] == ["ok"] * 3


def url_citation(start: int, end: int, url: str) -> dict[str, Any]:
    span = {"url": url, "title": "T", "start_index": start, "end_index": end}
    return {"type": "url_citation", "url_citation": span}


def test_delta_annotations_are_citations_of_the_text() -> None:
    # Search models (gpt-4o-mini-search-preview) send their web citations as
    # delta.annotations, here on the finishing chunk; offsets are code points into the content.
    first, second = url_citation(7, 13, "https://a.example"), url_citation(0, 5, "https://b")
    stream = sse(
        chunk(choice(role="assistant", content="")),
        chunk(choice(content="Hello, 上海乐高乐园 world.")),
        chunk(choice(annotations=[first])),
        chunk(choice(finish="stop", annotations=[second])),
        "[DONE]",
    )
    message = sf.fold([stream], provider="openai", strict=True)
    assert [(c.start, c.end, c.block, c.sources) for c in message.citations] == [
        (7, 13, 0, [first]),
        (0, 5, 0, [second]),
    ]
    assert message.text[7:13] == "上海乐高乐园"
    assert message.blocks[0].citations == message.citations
    assert message.to_request() == {"role": "assistant", "content": "Hello, 上海乐高乐园 world."}


def test_annotations_before_any_text_cite_no_block_and_bad_ones_are_protocol_errors() -> None:
    early = url_citation(0, 2, "https://a")
    stream = sse(
        chunk(choice(role="assistant", annotations=[early])),
        chunk(choice(content="Hi", finish="stop")),
        "[DONE]",
    )
    assert [(c.block, c.raw) for c in sf.fold([stream], provider="openai").citations] == [
        (None, early)
    ]
    for bad in ({"type": "url_citation"}, ["not an object"]):
        result = run(sse(chunk(choice(role="assistant", annotations=bad)), "[DONE]"), "openai")
        assert isinstance(result.error, sf.ProtocolError), bad
        assert "annotations" in str(result.error)


def test_audio_output_keeps_transcript_data_and_id_for_the_next_turn() -> None:
    # modalities ["text", "audio"]: the answer streams as delta.audio pieces (id, transcript,
    # base64 data; the last one only expires_at), content stays null (openai-python
    # ChoiceDeltaAudio); the next request refers to it as audio {id}.
    stream = sse(
        chunk(choice(role="assistant", content=None, audio={"id": "audio_1", "transcript": "Hel"})),
        chunk(choice(audio={"transcript": "lo ✓"})),
        chunk(choice(audio={"data": "UklG"})),
        chunk(choice(audio={"data": "Rg=="})),
        chunk(choice(finish="stop")),
        chunk(choice(audio={"expires_at": 1735000000})),
        "[DONE]",
    )
    message = sf.fold([stream], provider="openai", strict=True)
    assert message.warnings == [] and message.text == ""
    (block,) = message.blocks
    assert (block.kind, block.text, block.complete) == ("other", "Hello ✓", True)
    assert block.data == {
        "type": "audio",
        "id": "audio_1",
        "transcript": "Hello ✓",
        "data": "UklGRg==",
        "expires_at": 1735000000,
    }
    assert message.to_request() == {
        "role": "assistant",
        "content": None,
        "audio": {"id": "audio_1"},
    }
    result = run(sse(chunk(choice(role="assistant", audio="UklG")), "[DONE]"), "openai")
    assert isinstance(result.error, sf.ProtocolError)
    assert "delta.audio" in str(result.error)


# -- a host that sends no finish_reason (Snowflake Cortex) ------------------------------------

NO_FINISH = sse(
    chunk(choice(role="assistant", content="Hel")),
    chunk(choice(content="lo")),
    chunk(choice(tool_calls=[call(0, '{"a": ', id="call_1", name="f")])),
    chunk(choice(tool_calls=[call(0, "1}")])),
    chunk(usage={"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}),
    "[DONE]",
)


def test_done_without_finish_reason_reports_the_message_with_a_warning() -> None:
    message = sf.fold([NO_FINISH], provider="openai")
    assert message.complete
    assert (message.finish_reason, message.raw_finish_reason) == (None, None)
    assert message.text == "Hello"
    assert [(c.name, c.arguments, c.complete) for c in message.tool_calls] == [
        ("f", {"a": 1}, True)
    ]
    assert message.usage is not None and message.usage.total_tokens == 5
    assert len(message.warnings) == 1
    assert "[DONE] before a finish_reason for choice 0: the host sent none" in (message.warnings[0])


def test_done_without_finish_reason_closes_every_choice_once() -> None:
    stream = sse(
        chunk(choice(0, content="a"), choice(1, content="b")),
        chunk(choice(0, finish="stop")),
        "[DONE]",
    )
    result = run(stream, "openai")
    assert result.error is None
    ends = result.of(MessageEnd)
    assert [(e.choice, e.finish_reason) for e in ends] == [(0, "stop"), (1, None)]
    assert [w for w in result.warnings if "choice 1" in w]
    assert not [w for w in result.warnings if "choice 0" in w]


def test_done_without_finish_reason_strict_raises() -> None:
    with pytest.raises(sf.ProtocolError, match="sent none") as info:
        sf.fold([NO_FINISH], provider="openai", strict=True)
    assert info.value.partial is not None and info.value.partial.text == "Hello"


def test_no_finish_reason_and_no_done_is_still_a_stream_cut_short() -> None:
    with pytest.raises(sf.IncompleteStreamError):
        sf.fold([NO_FINISH.removesuffix(b"data: [DONE]\n\n")], provider="openai")
