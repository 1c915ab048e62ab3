"""Fields documented as strings (``Message.id``, ``model``, ``role``, ``Unknown.event_type``, a
tool call's ``id`` and ``name``) that arrive as another JSON value: dropped with a warning, in
every provider (``strict=True``: ``ProtocolError``), never passed through to the message."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

import streamfold as sf
from streamfold._events import Unknown
from streamfold._types import ProviderName

from .helpers import run, sse

WRONG = [{"x": 1}, 5, [1], 1.5, True]


def ev(name: str, **payload: Any) -> tuple[str, dict[str, Any]]:
    return (name, {"type": name, **payload})


def lines(*payloads: Any) -> bytes:
    return "".join(json.dumps(p) + "\n" for p in payloads).encode()


def openai(id: Any, model: Any) -> bytes:
    return sse(
        {"id": id, "model": model, "choices": [{"index": 0, "delta": {"content": "hi"}}]},
        {"id": id, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        "[DONE]",
    )


def anthropic(id: Any, model: Any) -> bytes:
    return sse(
        ev("message_start", message={"id": id, "model": model, "role": "assistant"}),
        ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "hi"}),
        ev("content_block_stop", index=0),
        ev("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 1}),
        ev("message_stop"),
    )


def responses(id: Any, model: Any) -> bytes:
    at = {"item_id": "m", "output_index": 0, "content_index": 0}
    message = {"type": "message", "id": "m", "role": "assistant", "content": []}
    return sse(
        ev("response.created", response={"id": id, "model": model, "status": "in_progress"}),
        ev("response.output_item.added", output_index=0, item=message),
        ev("response.content_part.added", **at, part={"type": "output_text", "text": ""}),
        ev("response.output_text.delta", **at, delta="hi"),
        ev("response.content_part.done", **at, part={"type": "output_text", "text": "hi"}),
        ev("response.output_item.done", output_index=0, item=message),
        ev("response.completed", response={"id": id, "model": model, "status": "completed"}),
    )


def gemini(id: Any, model: Any) -> bytes:
    candidate = {"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}
    return sse({"candidates": [candidate], "responseId": id, "modelVersion": model})


def cohere_v2(id: Any, model: Any) -> bytes:
    content = {"message": {"content": {"type": "text", "text": ""}}}
    return sse(
        ev("message-start", id=id, delta={"message": {"role": "assistant"}}),
        ev("content-start", index=0, delta=content),
        ev("content-delta", index=0, delta={"message": {"content": {"text": "hi"}}}),
        ev("content-end", index=0),
        ev("message-end", delta={"finish_reason": "COMPLETE", "usage": {}}),
        "[DONE]",
    )


def cohere_v1(id: Any, model: Any) -> bytes:
    def line(event_type: str, **fields: Any) -> dict[str, Any]:
        return {"is_finished": event_type == "stream-end", "event_type": event_type, **fields}

    return lines(
        line("stream-start", generation_id=id),
        line("text-generation", text="hi"),
        line("stream-end", finish_reason="COMPLETE", response={"text": "hi"}),
    )


def clouisle(id: Any, model: Any) -> bytes:
    return sse(
        ("message_start", {"conversation_id": "c", "message_id": id}),
        ("content_delta", {"delta": "hi"}),
        ("message_end", {"message_id": "m"}),
    )


#: provider -> the stream of "hi" with the message id and model given (those it has).
STREAMS: dict[ProviderName, Callable[[Any, Any], bytes]] = {
    "openai": openai,
    "mistral": openai,
    "anthropic": anthropic,
    "openai-responses": responses,
    "gemini": gemini,
    "cohere-v2": cohere_v2,
    "cohere-v1": cohere_v1,
    "clouisle": clouisle,
}
#: Those whose stream names a model.
WITH_MODEL: set[ProviderName] = {"openai", "mistral", "anthropic", "openai-responses", "gemini"}


@pytest.mark.parametrize("provider", sorted(STREAMS))
@pytest.mark.parametrize("value", WRONG, ids=lambda v: type(v).__name__)
def test_a_message_id_that_is_not_a_string_is_dropped_with_a_warning(
    provider: ProviderName, value: Any
) -> None:
    stream = STREAMS[provider](value, "m-1")
    message = sf.fold([stream], provider=provider)
    assert message.id is None
    assert message.text == "hi" and message.complete
    assert [w for w in message.warnings if "the message id is a JSON" in w], message.warnings
    with pytest.raises(sf.ProtocolError, match="the message id is a JSON"):
        sf.fold([stream], provider=provider, strict=True)


@pytest.mark.parametrize("provider", sorted(WITH_MODEL))
@pytest.mark.parametrize("value", WRONG, ids=lambda v: type(v).__name__)
def test_a_model_that_is_not_a_string_is_dropped_with_a_warning(
    provider: ProviderName, value: Any
) -> None:
    stream = STREAMS[provider]("id-1", value)
    message = sf.fold([stream], provider=provider)
    assert (message.id, message.model) == ("id-1", None)
    assert [w for w in message.warnings if "the model is a JSON" in w], message.warnings
    with pytest.raises(sf.ProtocolError, match="the model is a JSON"):
        sf.fold([stream], provider=provider, strict=True)


@pytest.mark.parametrize("provider", sorted(STREAMS))
def test_string_fields_pass_without_a_warning(provider: ProviderName) -> None:
    message = sf.fold([STREAMS[provider]("id-1", "m-1")], provider=provider, strict=True)
    assert message.id == "id-1" and message.warnings == []
    if provider in WITH_MODEL:
        assert message.model == "m-1"


def test_an_anthropic_role_that_is_not_a_string_is_the_default_with_a_warning() -> None:
    stream = anthropic("id-1", "m").replace(b'"role": "assistant"', b'"role": ["assistant"]')
    message = sf.fold([stream], provider="anthropic")
    assert message.role == "assistant"
    assert [w for w in message.warnings if "the role is a JSON array" in w]


UNKNOWN_TYPES: dict[ProviderName, bytes] = {
    "cohere-v1": lines(
        {"is_finished": False, "event_type": "stream-start", "generation_id": "g"},
        {"is_finished": False, "event_type": {"x": 1}},
    ),
    "onecortex": sse(("text", {"v": 1, "type": "text", "delta": "hi"}), {"v": 1, "type": [2]}),
}


@pytest.mark.parametrize("provider", sorted(UNKNOWN_TYPES))
def test_an_event_type_that_is_not_a_string_is_dropped_with_a_warning(
    provider: ProviderName,
) -> None:
    stream = UNKNOWN_TYPES[provider]
    result = run(stream, provider)
    unknown = result.of(Unknown)
    assert [e.event_type for e in unknown] == [None]
    assert [w for w in result.warnings if "the event type is a JSON" in w], result.warnings
    strict = run(stream, provider, strict=True)
    assert isinstance(strict.error, sf.ProtocolError)
    assert "the event type is a JSON" in str(strict.error)


def _chat_call(id: Any, name: Any) -> bytes:
    call = {"index": 0, "id": id, "function": {"name": name, "arguments": "{}"}}
    return sse(
        {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        "[DONE]",
    )


def _anthropic_call(id: Any, name: Any) -> bytes:
    block = {"type": "tool_use", "id": id, "name": name, "input": {}}
    return sse(
        ev("message_start", message={"id": "m", "role": "assistant"}),
        ev("content_block_start", index=0, content_block=block),
        ev("content_block_stop", index=0),
        ev("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 1}),
        ev("message_stop"),
    )


def _responses_call(id: Any, name: Any) -> bytes:
    item = {"type": "function_call", "id": "fc", "call_id": id, "name": name, "arguments": ""}
    done = {**item, "arguments": "{}"}
    return sse(
        ev("response.created", response={"id": "r", "status": "in_progress"}),
        ev("response.output_item.added", output_index=0, item=item),
        ev("response.output_item.done", output_index=0, item=done),
        ev("response.completed", response={"id": "r", "status": "completed"}),
    )


def _gemini_call(id: Any, name: Any) -> bytes:
    part = {"functionCall": {"id": id, "name": name, "args": {}}}
    candidate = {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}
    return sse({"candidates": [candidate]})


def _cohere_v2_call(id: Any, name: Any) -> bytes:
    call = {"id": id, "type": "function", "function": {"name": name, "arguments": ""}}
    return sse(
        ev("message-start", id="m", delta={"message": {"role": "assistant"}}),
        ev("tool-call-start", index=0, delta={"message": {"tool_calls": call}}),
        ev(
            "tool-call-delta",
            index=0,
            delta={"message": {"tool_calls": {"function": {"arguments": "{}"}}}},
        ),
        ev("tool-call-end", index=0),
        ev("message-end", delta={"finish_reason": "TOOL_CALL", "usage": {}}),
        "[DONE]",
    )


def _clouisle_call(id: Any, name: Any) -> bytes:
    return sse(
        ("message_start", {"message_id": "m"}),
        ("tool_call", {"id": id, "name": name, "arguments": {}}),
        ("message_end", {"message_id": "m"}),
    )


CALLS: dict[ProviderName, Callable[[Any, Any], bytes]] = {
    "openai": _chat_call,
    "mistral": _chat_call,
    "anthropic": _anthropic_call,
    "openai-responses": _responses_call,
    "gemini": _gemini_call,
    "cohere-v2": _cohere_v2_call,
    "clouisle": _clouisle_call,
}


@pytest.mark.parametrize("provider", sorted(CALLS))
@pytest.mark.parametrize("field", ["id", "name"])
@pytest.mark.parametrize("value", [{"x": 1}, [1], 7], ids=lambda v: type(v).__name__)
def test_a_tool_call_id_or_name_that_is_not_a_string_is_dropped(
    provider: ProviderName, field: str, value: Any
) -> None:
    given = {"id": "call_1", "name": "f", field: value}
    stream = CALLS[provider](given["id"], given["name"])
    message = sf.fold([stream], provider=provider)
    (call,) = message.tool_calls
    assert getattr(call, field) is None
    other = "name" if field == "id" else "id"
    assert getattr(call, other) == given[other]
    assert [w for w in message.warnings if f"a tool call's {field} is a JSON" in w]
    with pytest.raises(sf.ProtocolError, match=f"a tool call's {field} is a JSON"):
        sf.fold([stream], provider=provider, strict=True)


def test_cohere_v1_tool_call_name_that_is_not_a_string_is_dropped() -> None:
    def line(event_type: str, **fields: Any) -> dict[str, Any]:
        return {"is_finished": event_type == "stream-end", "event_type": event_type, **fields}

    stream = lines(
        line("stream-start", generation_id="g"),
        line("tool-calls-chunk", tool_call_delta={"index": 0, "name": {"x": 1}}),
        line("tool-calls-chunk", tool_call_delta={"index": 0, "parameters": "{}"}),
        line("stream-end", finish_reason="COMPLETE", response={"text": ""}),
    )
    message = sf.fold([stream], provider="cohere-v1")
    assert [c.name for c in message.tool_calls] == [None]
    assert [w for w in message.warnings if "a tool call's name is a JSON object" in w]
