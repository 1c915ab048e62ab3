"""Payloads with fields of the wrong JSON type: every provider answers with a ``StreamfoldError``
(a ``ProtocolError`` naming provider, event and frame), never a ``TypeError`` from inside the
provider or the fold, and the fold's error carries the partial message.

Each stream is read under its own provider and under ``auto``, whole and one byte at a time.
"""

from __future__ import annotations

from typing import Any

import pytest

import streamfold as sf
from streamfold._types import ProviderName

from .helpers import sse


def ev(name: str, **payload: Any) -> tuple[str, dict[str, Any]]:
    return (name, {"type": name, **payload})


ANTHROPIC_START = ev("message_start", message={"id": "msg_1", "role": "assistant"})
ANTHROPIC_TEXT_START = ev(
    "content_block_start", index=0, content_block={"type": "text", "text": ""}
)

CO1_START = b'{"is_finished":false,"event_type":"stream-start","generation_id":"g"}\n'

#: (provider, stream, the word the error names): each is refused as a ProtocolError.
CASES: list[tuple[str, bytes, str]] = [
    # A delta whose own "type", or "index", is a list.
    (
        "anthropic",
        sse(
            ANTHROPIC_START,
            ANTHROPIC_TEXT_START,
            ev("content_block_delta", index=0, delta={"type": ["text_delta"], "text": "x"}),
        ),
        "content_block_delta",
    ),
    (
        "anthropic",
        sse(
            ANTHROPIC_START,
            ANTHROPIC_TEXT_START,
            ev("content_block_delta", index=[0], delta={"type": "text_delta", "text": "x"}),
        ),
        "content_block_delta",
    ),
    # A block's opening text or signature that is not a string.
    (
        "anthropic",
        sse(
            ANTHROPIC_START,
            ev("content_block_start", index=0, content_block={"type": "text", "text": [1]}),
        ),
        "content_block.text",
    ),
    (
        "anthropic",
        sse(
            ANTHROPIC_START,
            ev(
                "content_block_start",
                index=0,
                content_block={"type": "thinking", "thinking": "", "signature": 5},
            ),
        ),
        "content_block.signature",
    ),
    # Chat chunks whose choices, or a delta's tool_calls, are a number: auto, reading them to
    # tell OpenAI from Mistral, raised TypeError.
    ("openai", sse({"id": "c", "choices": -1}), "choices"),
    (
        "openai",
        sse({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": 7}}]}),
        "tool_calls",
    ),
    # Sources and search queries that are not lists (the fold iterated them).
    (
        "clouisle",
        sse(
            ("message_start", {"conversation_id": "conv-1", "message_id": "msg-1"}),
            ("rag_start", {"query": "weather"}),
            ("rag_context", {"contexts": 0}),
        ),
        "sources",
    ),
    (
        "gemini",
        sse(
            {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": "Hi"}]},
                        "groundingMetadata": {"webSearchQueries": 5, "groundingChunks": [{}]},
                    }
                ],
                "modelVersion": "gemini-2.5-flash",
            }
        ),
        "webSearchQueries",
    ),
    (
        "gemini",
        sse(
            {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": "Hi"}]},
                        "groundingMetadata": {"groundingChunks": "abc"},
                    }
                ],
                "modelVersion": "gemini-2.5-flash",
            }
        ),
        "groundingChunks",
    ),
    # Cohere v1 documents that are not a list.
    (
        "cohere-v1",
        CO1_START + b'{"is_finished":false,"event_type":"search-results","documents":1e308}\n',
        "documents",
    ),
    (
        "cohere-v1",
        CO1_START + b'{"is_finished":true,"event_type":"stream-end","finish_reason":"COMPLETE",'
        b'"response":{"text":"","documents":{"id":"d"}}}\n',
        "documents",
    ),
]


@pytest.mark.parametrize("kind", [["message_start"], {"a": 1}])
def test_unnamed_frame_whose_type_is_not_a_string_is_unknown(kind: Any) -> None:
    """Anthropic reads an unnamed frame's event from its ``type``: a list or an object there
    names no event (the frame is Unknown), it does not break the reading."""
    stream = sse(ANTHROPIC_START, {"type": kind})
    events = list(sf.events([stream + sse(ev("message_stop"))], provider="anthropic"))
    assert [e.event_type for e in events if isinstance(e, sf.Unknown)] == ["message"]
    error = _fold_error([stream], "anthropic")
    assert isinstance(error, sf.IncompleteStreamError)
    assert error.partial is not None


@pytest.mark.parametrize("kind", [["content_delta"], {"a": 1}, 5])
def test_clouisle_unnamed_frame_whose_type_is_not_a_string_is_unknown(kind: Any) -> None:
    """Clouisle reads an unnamed frame's event from its ``type`` too: a list or an object
    there raised TypeError (unhashable type) from inside the provider, from ``sf.fold`` and
    from ``sf.fold_json`` on a catch-up holding such an event. Now the frame is Unknown."""
    start = ("message_start", {"message_id": "m"})
    end = [("content_delta", {"delta": "hi"}), ("message_end", {})]
    events = list(sf.events([sse(start, {"type": kind}, *end)], provider="clouisle"))
    assert [e.event_type for e in events if isinstance(e, sf.Unknown)] == ["message"]
    assert sf.fold([sse(start, {"type": kind}, *end)], provider="clouisle").text == "hi"
    error = _fold_error([sse(start, {"type": kind})], "clouisle")
    assert isinstance(error, sf.IncompleteStreamError)
    assert error.partial is not None
    items = [
        {"sequence": 1, "type": "message_start", "payload": {"message_id": "m"}},
        {"sequence": 2, "type": kind, "payload": {}},
        {"sequence": 3, "type": "content_delta", "payload": {"delta": "hi"}},
        {"sequence": 4, "type": "message_end", "payload": {}},
    ]
    assert sf.fold_json({"code": 0, "data": items}, "clouisle").text == "hi"


def _ids() -> list[str]:
    return [f"{provider}-{i}" for i, (provider, _, _) in enumerate(CASES)]


def _fold_error(chunks: list[bytes], provider: ProviderName) -> sf.StreamfoldError:
    with pytest.raises(sf.StreamfoldError) as info:
        sf.fold(chunks, provider=provider)
    return info.value


@pytest.mark.parametrize(("provider", "stream", "names"), CASES, ids=_ids())
@pytest.mark.parametrize("read_as", ["own", "auto"])
def test_wrong_typed_field_is_a_protocol_error(
    provider: ProviderName, stream: bytes, names: str, read_as: str
) -> None:
    name = provider if read_as == "own" else "auto"
    for chunks in ([stream], [stream[i : i + 1] for i in range(len(stream))]):
        error = _fold_error(chunks, name)
        assert isinstance(error, sf.ProtocolError), repr(error)
        assert error.provider == provider
        assert names in error.message
        assert error.partial is not None
        with pytest.raises(sf.ProtocolError):
            list(sf.events(chunks, provider=name))


def test_mistral_whole_call_with_number_arguments_is_judged_by_the_fold() -> None:
    """A Mistral call whose ``arguments`` is a JSON number: its text is the number's JSON, the
    fold judges it (not an object: no arguments), as for OpenAI."""
    call = {"id": "call_1", "function": {"name": "f", "arguments": 5}, "index": 0}
    stream = sse(
        {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        "[DONE]",
    )
    for provider in ("mistral", "openai"):
        message = sf.fold([stream], provider=provider)
        (tool_call,) = message.tool_calls
        assert tool_call.arguments_json == "5"
        assert tool_call.name == "f"


@pytest.mark.parametrize("call_id", [[1], {"a": 1}])
@pytest.mark.parametrize("provider", ["openai", "mistral", "auto", "openai-responses"])
def test_call_id_that_is_a_list_or_object_does_not_break_the_finish(
    call_id: Any, provider: ProviderName
) -> None:
    """A turn that ends with ``stop`` while holding a call is a tool turn unless a result answers
    the call; the fold looked the call's id up in a set, so an id sent as a JSON list or object
    raised TypeError. An id that is not a string is dropped with a warning (the documented
    type holds: ``tests/providers/test_wire_types.py``)."""
    if provider == "openai-responses":
        item = {"type": "function_call", "id": "fc_1", "call_id": call_id, "name": "f"}
        stream = sse(
            ev("response.created", response={"id": "resp_1", "status": "in_progress"}),
            ev("response.output_item.added", output_index=0, item=item),
            ev("response.output_item.done", output_index=0, item={**item, "arguments": "{}"}),
            ev("response.completed", response={"id": "resp_1", "status": "completed"}),
        )
    else:
        call = {"index": 0, "id": call_id, "function": {"name": "f", "arguments": "{}"}}
        stream = sse(
            {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
            {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            "[DONE]",
        )
    message = sf.fold([stream], provider=provider)
    assert message.finish_reason == "tool_calls"
    assert message.tool_calls[0].id is None
    assert [w for w in message.warnings if "a tool call's id is a JSON" in w]
