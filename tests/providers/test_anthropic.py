"""Anthropic Messages (``provider="anthropic"``): captures, hand-written streams, rules."""

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
    CitationAdded,
    MessageEnd,
    MessageStart,
    Notice,
    SignatureDelta,
    UsageUpdate,
)
from streamfold._providers.anthropic import STOP_REASONS

from .helpers import CAPTURES as CAPTURE_ROOT
from .helpers import accumulate, captures, check_capture, expected, run, split_at, sse

CAPTURES = captures("anthropic")
FRAGMENT = "error_api_error_fragment"
requires_captures = pytest.mark.skipif(not CAPTURES, reason="../shared/captures is absent")


def ev(name: str, **payload: Any) -> tuple[str, dict[str, Any]]:
    return (name, {"type": name, **payload})


START = ev(
    "message_start",
    message={
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 10,
            "cache_creation_input_tokens": 2,
            "cache_read_input_tokens": 5,
            "output_tokens": 1,
            "service_tier": "standard",
        },
    },
)


def text_block(index: int, *texts: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ev("content_block_start", index=index, content_block={"type": "text", "text": ""}),
        *(
            ev("content_block_delta", index=index, delta={"type": "text_delta", "text": t})
            for t in texts
        ),
        ev("content_block_stop", index=index),
    ]


def end(reason: str = "end_turn", **usage: Any) -> list[tuple[str, dict[str, Any]]]:
    return [
        ev(
            "message_delta",
            delta={"stop_reason": reason, "stop_sequence": None},
            usage={"output_tokens": 7, **usage},
        ),
        ev("message_stop"),
    ]


BASIC = sse(START, ("ping", {"type": "ping"}), *text_block(0, "Hi", " there"), *end())


# -- captures ---------------------------------------------------------------------------------


@requires_captures
@pytest.mark.parametrize("path", [p for p in CAPTURES if p.stem != FRAGMENT], ids=lambda p: p.stem)
def test_capture_matches_expected(path: Path) -> None:
    result = check_capture(path, "anthropic")
    pings = [n for n in result.of(Notice) if n.kind == "ping"]
    assert len(pings) == expected(path)["pings"]


@requires_captures
def test_error_fragment_begins_mid_block_so_it_is_a_protocol_error() -> None:
    result = run((CAPTURE_ROOT / "anthropic" / f"{FRAGMENT}.sse").read_bytes(), "anthropic")
    assert isinstance(result.error, sf.ProtocolError)
    assert result.error.event == "content_block_delta" and result.error.position == 0
    assert "never started" in str(result.error)


@requires_captures
def test_error_fragment_after_its_missing_start_raises_the_stream_error() -> None:
    path = CAPTURE_ROOT / "anthropic" / f"{FRAGMENT}.sse"
    prefix = sse(
        START, ev("content_block_start", index=0, content_block={"type": "text", "text": ""})
    )
    result = run(prefix + path.read_bytes(), "anthropic")
    want = expected(path)
    assert isinstance(result.error, sf.StreamError)
    assert result.error.code == want["error"]["type"]
    assert result.error.message == want["error"]["message"]
    blocks = accumulate(result.events).choice(0).ordered()
    assert [(b.text, b.ended) for b in blocks] == [(want["message"]["blocks"][0]["text"], False)]
    assert result.of(MessageEnd) == []


@requires_captures
def test_truncated_tool_json_leaves_the_call_open_and_no_message_end() -> None:
    path = CAPTURE_ROOT / "anthropic" / "max_tokens_partial_tool_json.sse"
    result = run(path.read_bytes(), "anthropic")
    # The final message_stop is not terminated by a blank line: never dispatched.
    assert result.of(MessageEnd) == []
    tool = accumulate(result.events).choice(0).ordered()[1]
    assert tool.kind == "tool_call" and not tool.ended


STREAMS = [p.read_bytes() for p in CAPTURES] + [BASIC]


@given(st.data())
def test_chunking_invariance(data: st.DataObject) -> None:
    stream = data.draw(st.sampled_from(STREAMS))
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=60))
    whole = run(stream, "anthropic")
    split = run(split_at(stream, cuts), "anthropic")
    assert split.events == whole.events
    assert repr(split.error) == repr(whole.error)


@requires_captures
@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_capture_single_byte_reads(path: Path) -> None:
    data = path.read_bytes()
    pieces = run([data[i : i + 1] for i in range(len(data))], "anthropic")
    whole = run(data, "anthropic")
    assert pieces.events == whole.events
    assert repr(pieces.error) == repr(whole.error)


# -- hand-written streams ---------------------------------------------------------------------


def test_basic_stream_and_padded_json() -> None:
    padded = BASIC.replace(b'"index": 0}', b'"index": 0          }')
    assert padded != BASIC
    result = run(padded, "anthropic")
    assert result.error is None and result.warnings == []
    start = result.of(MessageStart)[0]
    assert (start.id, start.model, start.role) == ("msg_1", "claude-x", "assistant")
    assert [e.text for e in result.of(BlockDelta)] == ["Hi", " there"]
    end_event = result.of(MessageEnd)[0]
    assert (end_event.finish_reason, end_event.raw_finish_reason) == ("stop", "end_turn")
    assert end_event.data == {"stop_reason": "end_turn", "stop_sequence": None}
    assert isinstance(end_event.raw, sf.ServerSentEvent) and end_event.raw.event == "message_stop"


def test_ping_anywhere_is_a_notice() -> None:
    ping = ("ping", {"type": "ping"})
    stream = sse(ping, START, ping, *text_block(0, "a"), ping, *end(), ping)
    result = run(stream, "anthropic", strict=True)
    assert result.error is None
    assert [n.kind for n in result.of(Notice)] == ["ping"] * 4


def test_usage_is_merged_field_by_field() -> None:
    stream = sse(
        START,
        *text_block(0, "x"),
        *end(
            input_tokens=None, cache_read_input_tokens=9, server_tool_use={"web_search_requests": 1}
        ),
    )
    updates = run(stream, "anthropic").of(UsageUpdate)
    first, merged = updates[0].usage, updates[1].usage
    assert (first.input_tokens, first.output_tokens, first.cached_tokens) == (17, 1, 5)
    assert merged.raw == {
        "input_tokens": 10,
        "cache_creation_input_tokens": 2,
        "cache_read_input_tokens": 9,
        "output_tokens": 7,
        "service_tier": "standard",
        "server_tool_use": {"web_search_requests": 1},
    }
    assert (merged.input_tokens, merged.output_tokens, merged.total_tokens) == (21, 7, 28)
    assert merged.cached_tokens == 9


def test_thinking_signature_replaces() -> None:
    stream = sse(
        START,
        ev(
            "content_block_start",
            index=0,
            content_block={"type": "thinking", "thinking": "", "signature": ""},
        ),
        ev("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": "hm"}),
        ev("content_block_delta", index=0, delta={"type": "signature_delta", "signature": "s1"}),
        ev("content_block_delta", index=0, delta={"type": "signature_delta", "signature": "s2"}),
        ev("content_block_stop", index=0),
        *end(),
    )
    result = run(stream, "anthropic")
    assert [e.signature for e in result.of(SignatureDelta)] == ["s1", "s2"]
    block = accumulate(result.events).choice(0).ordered()[0]
    assert (block.kind, block.text, block.signature) == ("reasoning", "hm", "s2")


def test_tool_use_fragments_and_empty_first_fragment() -> None:
    stream = sse(
        START,
        ev(
            "content_block_start",
            index=1,
            content_block={"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
        ),
        ev("content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": ""}),
        ev(
            "content_block_delta",
            index=1,
            delta={"type": "input_json_delta", "partial_json": '{"a": '},
        ),
        ev(
            "content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": "1}"}
        ),
        ev("content_block_stop", index=1),
        ev(
            "content_block_start",
            index=2,
            content_block={"type": "tool_use", "id": "toolu_2", "name": "g", "input": {}},
        ),
        ev("content_block_stop", index=2),
        *end("tool_use"),
    )
    result = run(stream, "anthropic")
    blocks = accumulate(result.events).choice(0).ordered()
    assert [(b.id, b.name, b.text, b.arguments) for b in blocks] == [
        ("toolu_1", "f", '{"a": 1}', {}),
        ("toolu_2", "g", "", {}),
    ]
    assert result.of(MessageEnd)[0].finish_reason == "tool_calls"


def test_redacted_thinking_and_tool_results_are_complete_at_start() -> None:
    result_block = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [{"type": "web_search_result", "url": "https://a"}],
    }
    stream = sse(
        START,
        ev(
            "content_block_start",
            index=0,
            content_block={"type": "redacted_thinking", "data": "EqkE"},
        ),
        ("ping", {"type": "ping"}),
        ev("content_block_stop", index=0),
        ev(
            "content_block_start",
            index=1,
            content_block={
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {},
            },
        ),
        ev(
            "content_block_delta",
            index=1,
            delta={"type": "input_json_delta", "partial_json": '{"query": "x"}'},
        ),
        ev("content_block_stop", index=1),
        ev("content_block_start", index=2, content_block=result_block),
        ev("content_block_stop", index=2),
        *end(),
    )
    result = run(stream, "anthropic", strict=True)
    assert result.error is None
    starts = result.of(BlockStart)
    assert [(s.kind, s.complete) for s in starts] == [
        ("reasoning", True),
        ("server_tool", False),
        ("server_tool", True),
    ]
    assert starts[0].data == {"type": "redacted_thinking", "data": "EqkE"}
    assert starts[2].data == result_block and starts[2].id == "srvtoolu_1"
    names = [type(e).__name__ for e in result.events]
    # Whole blocks end right after their start; their content_block_stop makes no event.
    assert names[2:4] == ["BlockStart", "BlockEnd"]
    assert len(result.of(BlockEnd)) == 3
    tool = accumulate(result.events).choice(0).ordered()[1]
    assert (tool.id, tool.name, tool.text) == ("srvtoolu_1", "web_search", '{"query": "x"}')


def test_citations_delta() -> None:
    citation = {
        "type": "char_location",
        "cited_text": "the sky is blue",
        "document_index": 0,
        "document_title": "Doc",
        "start_char_index": 10,
        "end_char_index": 25,
    }
    stream = sse(
        START,
        ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        ev("content_block_delta", index=0, delta={"type": "citations_delta", "citation": citation}),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "Blue."}),
        ev("content_block_stop", index=0),
        *end(),
    )
    added = run(stream, "anthropic").of(CitationAdded)
    assert len(added) == 1
    c = added[0].citation
    assert (c.start, c.end, c.text, c.block, c.sources) == (
        None,
        None,
        "the sky is blue",
        0,
        [citation],
    )


@pytest.mark.parametrize("raw", [*STOP_REASONS, "brand_new"])
def test_stop_reason_table(raw: str) -> None:
    end_event = run(sse(START, *text_block(0, "a"), *end(raw)), "anthropic").of(MessageEnd)[0]
    assert (end_event.raw_finish_reason, end_event.finish_reason) == (
        raw,
        STOP_REASONS.get(raw, "other"),
    )


def test_error_event_mid_stream_raises_after_the_events_before_it() -> None:
    error = ev(
        "error", error={"details": None, "type": "overloaded_error", "message": "Overloaded"}
    )
    stream = sse(
        START,
        ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hal"}),
        error,
    )
    seen = []
    with pytest.raises(sf.StreamError) as info:
        for event in sf.events([stream], provider="anthropic"):
            seen.append(event)
    assert [e.text for e in seen if isinstance(e, BlockDelta)] == ["Hal"]
    assert (info.value.code, info.value.message) == ("overloaded_error", "Overloaded")
    assert info.value.retryable_without_duplicate is False


def test_unknown_event_and_delta_types_are_unknown() -> None:
    stream = sse(
        START,
        ("brand_new_event", {"type": "brand_new_event"}),
        ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        ev("content_block_delta", index=0, delta={"type": "future_delta", "x": 1}),
        ev("content_block_stop", index=0),
        *end(),
    )
    result = run(stream, "anthropic")
    assert result.unknown == ["brand_new_event", "content_block_delta.future_delta"]
    assert result.error is None


def test_non_json_payload_is_a_protocol_error() -> None:
    result = run(sse(START, ("content_block_start", "{oops")), "anthropic")
    assert isinstance(result.error, sf.ProtocolError)
    assert (result.error.provider, result.error.event, result.error.position) == (
        "anthropic",
        "content_block_start",
        1,
    )


AFTER_STOP = sse(START, *text_block(0, "a"), *end(), *text_block(1, "late"))
UNCLOSED = sse(
    START, ev("content_block_start", index=0, content_block={"type": "text", "text": ""}), *end()
)
DELTA_AFTER_END = sse(
    START,
    *text_block(0, "a"),
    ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "b"}),
    *end(),
)


@pytest.mark.parametrize(
    ("stream", "rule"),
    [
        (AFTER_STOP, "after message_stop"),
        (UNCLOSED, "never closed"),
        (DELTA_AFTER_END, "after its end"),
    ],
)
def test_ordering_rules_warn_by_default_and_raise_when_strict(stream: bytes, rule: str) -> None:
    lenient = run(stream, "anthropic")
    assert lenient.error is None
    assert len(lenient.warnings) >= 1 and rule in lenient.warnings[0]
    strict = run(stream, "anthropic", strict=True)
    assert isinstance(strict.error, sf.ProtocolError) and rule in str(strict.error)


def test_delta_for_a_block_never_opened_is_a_protocol_error() -> None:
    stream = sse(
        START, ev("content_block_delta", index=4, delta={"type": "text_delta", "text": "x"})
    )
    result = run(stream, "anthropic")
    assert isinstance(result.error, sf.ProtocolError) and "never started" in str(result.error)
    assert len(result.of(MessageStart)) == 1


@pytest.mark.anyio
async def test_aevents_under_asyncio_and_trio(anyio_backend: str) -> None:
    async def reads() -> Any:
        for i in range(0, len(BASIC), 11):
            yield BASIC[i : i + 11]

    events = [e async for e in sf.aevents(reads(), provider="anthropic")]
    assert events == run(BASIC, "anthropic").events


def test_compaction_delta_completes_the_compaction_block_sent_back() -> None:
    # Server-side compaction (beta): the block starts with content null and gets its summary
    # and encrypted_content in one compaction_delta (anthropic-sdk-python
    # lib/streaming/_beta_messages.py accumulate_event); the block must go back verbatim.
    stream = sse(
        START,
        ev("content_block_start", index=0, content_block={"type": "compaction", "content": None}),
        ev(
            "content_block_delta",
            index=0,
            delta={
                "type": "compaction_delta",
                "content": "Summary of the turns before.",
                "encrypted_content": "Eo8Cenc",
            },
        ),
        ev("content_block_stop", index=0),
        *text_block(1, "Hi"),
        *end(),
    )
    result = run(stream, "anthropic", strict=True)
    assert result.error is None and result.unknown == []
    compacted = {
        "type": "compaction",
        "content": "Summary of the turns before.",
        "encrypted_content": "Eo8Cenc",
    }
    assert result.of(BlockEnd)[0].data == compacted
    message = sf.fold([stream], provider="anthropic")
    assert message.blocks[0].data == compacted
    assert message.to_request()["content"] == [compacted, {"type": "text", "text": "Hi"}]


def test_fallback_block_relabels_the_model_that_served_the_message() -> None:
    # Model fallback (beta): a fallback block marks where the next model takes over; the
    # message's model is that one (anthropic-sdk-python _beta_messages.py accumulate_event
    # sets snapshot.model = content_block.to.model, as the non-streamed response reports).
    fallback = {
        "type": "fallback",
        "from": {"model": "claude-x"},
        "to": {"model": "claude-y-20260101"},
        "trigger": {"type": "refusal"},
    }
    stream = sse(
        START,
        ev("content_block_start", index=0, content_block=fallback),
        ev("content_block_stop", index=0),
        *text_block(1, "Sure."),
        *end(),
    )
    result = run(stream, "anthropic", strict=True)
    assert result.error is None and result.unknown == []
    message = sf.fold([stream], provider="anthropic")
    assert (message.id, message.model, message.text) == ("msg_1", "claude-y-20260101", "Sure.")
    assert message.complete and message.warnings == []
    assert message.to_request()["content"] == [fallback, {"type": "text", "text": "Sure."}]


def test_code_execution_container_is_in_the_message_metadata() -> None:
    # message_delta.delta.container (code execution): the next request passes its id to keep
    # the container's files; the SDK keeps it as message.container.
    container = {"id": "container_011", "expires_at": "2026-12-01T00:00:00Z"}
    stream = sse(
        START,
        *text_block(0, "Done."),
        ev(
            "message_delta",
            delta={"stop_reason": "end_turn", "stop_sequence": None, "container": container},
            usage={"output_tokens": 7},
        ),
        ev("message_stop"),
    )
    assert sf.fold([stream], provider="anthropic").metadata == {"container": container}
    assert sf.fold([BASIC], provider="anthropic").metadata == {}


def test_stop_sequence_that_fired_is_in_the_message_metadata() -> None:
    # message_delta.delta.stop_sequence: which of the request's stop_sequences ended the
    # answer (the SDK's message.stop_sequence); null elsewhere, and then absent.
    stream = sse(
        START,
        *text_block(0, "1, 2, 3"),
        ev(
            "message_delta",
            delta={"stop_reason": "stop_sequence", "stop_sequence": "\n4"},
            usage={"output_tokens": 7},
        ),
        ev("message_stop"),
    )
    message = sf.fold([stream], provider="anthropic")
    assert message.raw_finish_reason == "stop_sequence"
    assert message.metadata == {"stop_sequence": "\n4"}
    assert message.to_request() == sf.fold([BASIC], provider="anthropic").to_request() | {
        "content": [{"type": "text", "text": "1, 2, 3"}]
    }


def test_a_stream_cut_after_message_delta_keeps_its_stop_sequence_and_container() -> None:
    # The partial message keeps the finish message_delta announced (MessageDelta), and with it
    # what the same delta said: the stop sequence, the container whose id the retry needs.
    container = {"id": "container_011", "expires_at": "2026-12-01T00:00:00Z"}
    delta = {"stop_reason": "stop_sequence", "stop_sequence": "END", "container": container}
    stream = sse(START, *text_block(0, "1, 2"), ev("message_delta", delta=delta, usage={}))
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold([stream], provider="anthropic")
    partial = info.value.partial
    assert partial is not None and partial.raw_finish_reason == "stop_sequence"
    assert partial.metadata == {"stop_sequence": "END", "container": container}


def test_refusal_stop_details_are_in_the_message_metadata() -> None:
    # A refusal's message_delta.delta.stop_details (its category and explanation), as the
    # SDK's message.stop_details.
    details = {"type": "refusal", "category": "cyber", "explanation": "Not helping with that."}
    stream = sse(
        START,
        ev(
            "message_delta",
            delta={"stop_reason": "refusal", "stop_sequence": None, "stop_details": details},
            usage={"output_tokens": 1},
        ),
        ev("message_stop"),
    )
    message = sf.fold([stream], provider="anthropic")
    assert (message.finish_reason, message.metadata) == ("refusal", {"stop_details": details})


def test_tool_use_caller_goes_back_with_the_call() -> None:
    # Programmatic tool calling: a tool_use made by code execution names its caller, which the
    # assistant turn sent back must keep (anthropic-sdk-python ToolUseBlockParam.caller).
    caller = {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}
    stream = sse(
        START,
        ev(
            "content_block_start",
            index=0,
            content_block={
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {},
                "caller": caller,
            },
        ),
        ev(
            "content_block_delta",
            index=0,
            delta={"type": "input_json_delta", "partial_json": '{"city": "Oslo"}'},
        ),
        ev("content_block_stop", index=0),
        *end("tool_use"),
    )
    message = sf.fold([stream], provider="anthropic", strict=True)
    assert message.tool_calls[0].extra == {"caller": caller}
    assert message.to_request()["content"] == [
        {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "get_weather",
            "input": {"city": "Oslo"},
            "caller": caller,
        }
    ]
