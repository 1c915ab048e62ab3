"""``Message.to_request(provider)`` against each provider's documented request shape."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterable
from typing import Literal

import pytest

import streamfold as sf
from conftest import CAPTURES, requires_captures
from streamfold._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    CitationAdded,
    Event,
    MessageEnd,
    MessageStart,
    SignatureDelta,
)
from streamfold._message import BlockKind, Citation, Message
from streamfold._request import REQUEST_PROVIDERS
from streamfold._types import ProviderName


def fold(events: Iterable[Event], provider: ProviderName | Literal[""] = "") -> Message:
    folder = sf.Folder(provider)
    for event in [MessageStart(), *events, MessageEnd(finish_reason="stop", raw_finish_reason="x")]:
        folder.add(event)
    return folder.result()


def block(index: int, kind: BlockKind, *pieces: str, **start: object) -> list[Event]:
    return [
        BlockStart(index=index, kind=kind, **start),  # type: ignore[arg-type]
        *(BlockDelta(index=index, kind=kind, text=p) for p in pieces),
        BlockEnd(index=index, kind=kind),
    ]


def call(index: int, call_id: str, name: str, *fragments: str, **start: object) -> list[Event]:
    return block(index, "tool_call", *fragments, id=call_id, name=name, **start)


TEXT = fold(block(0, "text", "Hello ", "there."))
CALLS = fold(
    [
        *block(0, "tool_plan", "I will look it up."),
        *call(1, "call_1", "get_weather", '{"city": ', '"Paris"}'),
        *call(2, "call_2", "get_time"),
    ]
)


def test_every_provider_gives_json_serializable_output() -> None:
    for provider in REQUEST_PROVIDERS:
        json.dumps(TEXT.to_request(provider))
        json.dumps(CALLS.to_request(provider))


def test_default_provider_is_the_messages_own() -> None:
    assert fold(block(0, "text", "x"), provider="openai").to_request() == {
        "role": "assistant",
        "content": "x",
    }


@pytest.mark.parametrize("name", ["auto", "", "cohere", "OPENAI"])
def test_unknown_provider(name: str) -> None:
    with pytest.raises(ValueError, match="no request shape"):
        TEXT.to_request(name)  # type: ignore[call-overload]


def test_a_call_without_valid_arguments_cannot_be_sent_back() -> None:
    broken = fold(call(0, "c", "f", '{"a": '))
    for provider in REQUEST_PROVIDERS:
        if provider in ("onecortex", "clouisle"):
            continue
        with pytest.raises(ValueError, match="no valid arguments"):
            broken.to_request(provider)


# -- OpenAI Chat Completions / Mistral ----------------------------------------------------------
# https://platform.openai.com/docs/api-reference/chat/create (assistant message: content,
# refusal, tool_calls[{id, type: "function", function: {name, arguments}}]); arguments is a
# string of JSON.


@pytest.mark.parametrize("provider", ["openai", "openai-chat"])
def test_openai_text(provider: ProviderName) -> None:
    assert TEXT.to_request(provider) == {"role": "assistant", "content": "Hello there."}


def test_openai_tool_calls_keep_the_streamed_json_text() -> None:
    assert CALLS.to_request("openai") == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "get_time", "arguments": "{}"},
            },
        ],
    }


def test_openai_refusal() -> None:
    m = fold(block(0, "refusal", "I'm sorry, ", "I can't."))
    assert m.to_request("openai") == {
        "role": "assistant",
        "content": None,
        "refusal": "I'm sorry, I can't.",
    }


def test_mistral() -> None:
    # https://docs.mistral.ai/api/#tag/chat (AssistantMessage {role, content, tool_calls})
    request = CALLS.to_request("mistral")
    assert request["role"] == "assistant"
    assert request["content"] == ""
    assert request["tool_calls"][0] == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    assert TEXT.to_request("mistral") == {"role": "assistant", "content": "Hello there."}


def test_mistral_reasoning_goes_back_as_thinking_chunks() -> None:
    # AssistantMessage.content: str | list[ContentChunk]; a ThinkChunk is {type: "thinking",
    # thinking: [TextChunk], closed}. The reasoning is sent back, in order, beside the text.
    m = fold([*block(0, "reasoning", "Okay, ", "2 + 2."), *block(1, "text", "4.")])
    assert m.to_request("mistral") == {
        "role": "assistant",
        "content": [
            {
                "type": "thinking",
                "thinking": [{"type": "text", "text": "Okay, 2 + 2."}],
                "closed": True,
            },
            {"type": "text", "text": "4."},
        ],
    }


@requires_captures
def test_mistral_capture_reasoning_round_trip() -> None:
    path = CAPTURES / "mistral" / "magistral_thinking_chunks.sse"
    m = sf.fold([path.read_bytes()], provider="mistral")
    thinking, text = m.to_request()["content"]
    assert thinking["thinking"] == [{"type": "text", "text": m.reasoning}]
    assert text == {"type": "text", "text": m.text}


# -- Cohere --------------------------------------------------------------------------------------


def test_cohere_v2_tool_turn() -> None:
    # https://docs.cohere.com/docs/tool-use-overview: messages.append({"role": "assistant",
    # "tool_plan": ..., "tool_calls": ...}); tool_calls[{id, type: "function", function:
    # {name, arguments: JSON text}}].
    assert CALLS.to_request("cohere-v2") == {
        "role": "assistant",
        "tool_plan": "I will look it up.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "get_time", "arguments": "{}"},
            },
        ],
    }


def test_cohere_v2_text_and_reasoning() -> None:
    assert TEXT.to_request("cohere-v2") == {"role": "assistant", "content": "Hello there."}
    m = fold([*block(0, "reasoning", "2 + 2 = 4"), *block(1, "text", "4.")])
    assert m.to_request("cohere-v2") == {
        "role": "assistant",
        "content": [{"type": "thinking", "thinking": "2 + 2 = 4"}, {"type": "text", "text": "4."}],
    }


def test_cohere_v2_citations_go_back_as_received() -> None:
    # AssistantMessage.citations: the Citation objects of the answer, as citation-start gave
    # them (https://docs.cohere.com/reference/chat, messages: AssistantMessage).
    sources = [{"type": "tool", "id": "t:0", "tool_output": {"x": 1}}]
    wire = {"start": 0, "end": 5, "text": "Hello", "sources": sources, "type": "TEXT_CONTENT"}
    cited = Citation(start=0, end=5, text="Hello", sources=sources, block=0, raw=wire)
    m = fold([*block(0, "text", "Hello ", "there."), CitationAdded(citation=cited)])
    assert m.to_request("cohere-v2") == {
        "role": "assistant",
        "content": "Hello there.",
        "citations": [wire],
    }
    # A citation made by hand, with no wire object, is left out.
    bare = fold([*block(0, "text", "Hi"), CitationAdded(citation=Citation(start=0, end=2))])
    assert bare.to_request("cohere-v2") == {"role": "assistant", "content": "Hi"}


@requires_captures
def test_cohere_v2_capture_citations_round_trip() -> None:
    path = CAPTURES / "cohere_v2" / "citation_tool_source.sse"
    m = sf.fold([path.read_bytes()], provider="cohere-v2")
    sent = m.to_request()
    assert sent["citations"] == [c.raw for c in m.citations]
    assert [(c["start"], c["end"], c["text"]) for c in sent["citations"]] == [(34, 35, "5")]


def test_cohere_v1_chat_history_entry() -> None:
    # https://docs.cohere.com/v1/reference/chat: chat_history ChatMessage {role: "CHATBOT",
    # message, tool_calls[{name, parameters: object}]}.
    assert CALLS.to_request("cohere-v1") == {
        "role": "CHATBOT",
        "message": "I will look it up.",
        "tool_calls": [
            {"name": "get_weather", "parameters": {"city": "Paris"}},
            {"name": "get_time", "parameters": {}},
        ],
    }
    assert TEXT.to_request("cohere-v1") == {"role": "CHATBOT", "message": "Hello there."}


# -- Anthropic -----------------------------------------------------------------------------------


def test_anthropic_blocks_in_order_with_signatures() -> None:
    # https://docs.anthropic.com/en/api/messages: content [{type: "thinking", thinking,
    # signature}, {type: "redacted_thinking", data}, {type: "text", text}, {type: "tool_use",
    # id, name, input}]; thinking blocks go back unchanged (extended-thinking guide).
    redacted = {"type": "redacted_thinking", "data": "EqkECkYI"}
    m = fold(
        [
            BlockStart(index=0, kind="reasoning"),
            BlockDelta(index=0, kind="reasoning", text="Let me think."),
            SignatureDelta(index=0, signature="sig-1"),
            BlockEnd(index=0, kind="reasoning"),
            *block(1, "reasoning", complete=True, data=redacted),
            *block(2, "text", "Checking."),
            *block(3, "text"),  # empty: the API rejects empty text blocks
            *call(4, "toolu_1", "get_weather", '{"location": "SF"}', arguments={}),
        ]
    )
    assert m.to_request("anthropic") == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Let me think.", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "EqkECkYI"},
            {"type": "text", "text": "Checking."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {"location": "SF"},
            },
        ],
    }


def test_anthropic_server_tools_go_back_as_they_came() -> None:
    result = {"type": "web_search_tool_result", "tool_use_id": "srv_1", "content": [{"url": "u"}]}
    start = {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}
    m = fold(
        [
            *block(
                0, "server_tool", '{"query": "news"}', id="srv_1", name="web_search", data=start
            ),
            *block(1, "server_tool", complete=True, id="srv_1", data=result),
            *block(2, "text", "Top story."),
        ]
    )
    assert m.to_request("anthropic")["content"] == [
        {
            "type": "server_tool_use",
            "id": "srv_1",
            "name": "web_search",
            "input": {"query": "news"},
        },
        result,
        {"type": "text", "text": "Top story."},
    ]


# -- OpenAI Responses ----------------------------------------------------------------------------


def test_openai_responses_input_items() -> None:
    # https://platform.openai.com/docs/api-reference/responses/create: input items reasoning
    # {type, id, summary[{type: "summary_text", text}], encrypted_content}, message {type, id,
    # role, status, content[{type: "output_text", text, annotations}]}, function_call {type,
    # id, call_id, name, arguments}.
    m = fold(
        [
            BlockStart(index=0, kind="reasoning", extra={"item_id": "rs_1"}),
            BlockDelta(index=0, kind="reasoning", text="**Plan**"),
            SignatureDelta(index=0, signature="gAAAA"),
            BlockEnd(index=0, kind="reasoning"),
            *block(1, "text", "Calling.", extra={"item_id": "msg_1"}),
            *call(2, "call_9", "get_capital", '{"country":"France"}', extra={"item_id": "fc_1"}),
        ]
    )
    assert m.to_request("openai-responses") == [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "**Plan**"}],
            "encrypted_content": "gAAAA",
        },
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_1",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Calling.", "annotations": []}],
        },
        {
            "type": "function_call",
            "call_id": "call_9",
            "name": "get_capital",
            "arguments": '{"country":"France"}',
            "id": "fc_1",
        },
    ]


def _done_annotations(data: bytes) -> list[list[object]]:
    """The annotations of every ``output_text`` part of the ``output_item.done`` messages."""
    out = []
    for line in data.decode().splitlines():
        if line.startswith("data: "):
            payload = json.loads(line[6:])
            item = payload.get("item") or {}
            if payload.get("type") == "response.output_item.done" and item["type"] == "message":
                out += [p["annotations"] for p in item["content"] if p["type"] == "output_text"]
    return out


@requires_captures
@pytest.mark.parametrize("seed", range(4))
def test_openai_responses_annotations_go_back_as_received(seed: int) -> None:
    # The url_citation annotations of the stream, as ``output_item.done`` lists them: the next
    # turn sends the output_text parts with them, not with ``"annotations": []``.
    data = (CAPTURES / "openai_responses" / "web_search_url_citations.sse").read_bytes()
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(data)), 40)) if seed else []
    pieces = [data[a:b] for a, b in itertools.pairwise([0, *cuts, len(data)])]
    items = sf.fold(pieces, provider="openai-responses").to_request()
    sent = [p["annotations"] for i in items if i["type"] == "message" for p in i["content"]]
    assert sent == _done_annotations(data)
    assert len(sent[0]) == 12


def test_openai_responses_annotations_stay_on_their_part() -> None:
    first = {"type": "url_citation", "start_index": 0, "end_index": 2, "url": "u", "title": "t"}
    second = {"type": "file_citation", "index": 1, "file_id": "file_1", "filename": "f.pdf"}
    cite = [
        CitationAdded(citation=Citation(0, 2, sources=[first], block=0, raw=first)),
        CitationAdded(citation=Citation(1, None, sources=[second], block=1, raw=second)),
        # Built by hand, with no annotation object: nothing the API would take.
        CitationAdded(citation=Citation(0, 1, sources=["doc"], block=1)),
    ]
    m = fold(
        [
            *block(0, "text", "Hi", extra={"item_id": "msg_1"}),
            *block(1, "text", "Yo", extra={"item_id": "msg_1"}),
            *cite,
        ]
    )
    (item,) = m.to_request("openai-responses")
    assert item["content"] == [
        {"type": "output_text", "text": "Hi", "annotations": [first]},
        {"type": "output_text", "text": "Yo", "annotations": [second]},
    ]


def test_openai_responses_final_items_are_sent_as_they_came() -> None:
    final = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "a"}, {"type": "summary_text", "text": "b"}],
    }
    web = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    m = fold(
        [
            BlockStart(index=0, kind="reasoning", extra={"item_id": "rs_1"}),
            BlockDelta(index=0, kind="reasoning", text="a\n\nb"),
            BlockEnd(index=0, kind="reasoning", data=final),
            BlockStart(index=1, kind="server_tool", id="ws_1", name="web_search_call", data=web),
            BlockEnd(index=1, kind="server_tool", data=web),
            *block(2, "text", "Hi", extra={"item_id": "msg_1"}),
            *block(3, "refusal", "No", extra={"item_id": "msg_1"}),
        ]
    )
    items = m.to_request("openai-responses")
    assert items[0] is final
    assert items[1] == web
    assert m.blocks[1].tool_call is None  # a progress-only server tool has no call
    assert items[2]["content"] == [
        {"type": "output_text", "text": "Hi", "annotations": []},
        {"type": "refusal", "refusal": "No"},
    ]
    assert len(items) == 3


# -- Gemini --------------------------------------------------------------------------------------


def test_gemini_parts_keep_thought_signatures() -> None:
    # https://ai.google.dev/api/caching#Content: {role: "model", parts: [{text}, {text,
    # thought: true}, {functionCall: {name, args}}]}; thought signatures go back on the part
    # they came with (https://ai.google.dev/gemini-api/docs/thought-signatures).
    m = fold(
        [
            *block(0, "reasoning", "**Thinking**"),
            BlockStart(index=1, kind="text"),
            BlockDelta(index=1, kind="text", text="There are 3."),
            SignatureDelta(index=1, signature="sig-text"),
            BlockEnd(index=1, kind="text"),
            *block(
                2,
                "tool_call",
                name="get_country",
                complete=True,
                arguments={},
                extra={"thoughtSignature": "sig-call"},
            ),
            *block(3, "tool_call", name="read_screen", complete=True, arguments={"id": "A"}),
        ]
    )
    assert m.to_request("gemini") == {
        "role": "model",
        "parts": [
            {"text": "**Thinking**", "thought": True},
            {"text": "There are 3.", "thoughtSignature": "sig-text"},
            {"functionCall": {"name": "get_country", "args": {}}, "thoughtSignature": "sig-call"},
            {"functionCall": {"name": "read_screen", "args": {"id": "A"}}},
        ],
    }


def test_gemini_signature_on_an_empty_part_is_kept() -> None:
    m = fold([*block(0, "text"), SignatureDelta(index=0, signature="s")])
    assert m.to_request("gemini") == {
        "role": "model",
        "parts": [{"text": "", "thoughtSignature": "s"}],
    }


# -- agent platforms -----------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["onecortex", "clouisle"])
def test_agent_platforms_plain_turn(provider: ProviderName) -> None:
    assert CALLS.to_request(provider) == {"role": "assistant", "content": ""}
    assert TEXT.to_request(provider) == {"role": "assistant", "content": "Hello there."}


def test_a_message_that_does_not_name_its_provider_says_what_to_pass() -> None:
    # A Folder made without a provider folds messages with provider "": to_request() says
    # to name it rather than "no request shape for provider ''".
    message = sf.Message(text="x")
    with pytest.raises(ValueError, match=r"does not name its provider.*to_request\('openai'\)"):
        message.to_request()
    assert message.to_request("openai") == {"role": "assistant", "content": "x"}


# -- across providers ----------------------------------------------------------------------------


def _anthropic_turn() -> Message:
    redacted = {"type": "redacted_thinking", "data": "EqkECkYI"}
    search = {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}
    cited = {"type": "web_search_result_location", "cited_text": "c", "encrypted_index": "EnC"}
    return fold(
        [
            *block(0, "reasoning", "Let me think."),
            SignatureDelta(index=0, signature="anthropic-sig"),
            *block(1, "reasoning", complete=True, data=redacted),
            *block(2, "server_tool", "{}", id="srv_1", name="web_search", data=search),
            BlockStart(index=3, kind="text"),
            BlockDelta(index=3, kind="text", text="Sunny."),
            CitationAdded(citation=Citation(0, 6, text="c", block=3, raw=cited)),
            BlockEnd(index=3, kind="text"),
            *call(4, "toolu_1", "get_weather", '{"city": "SF"}'),
        ],
        provider="anthropic",
    )


def _gemini_turn() -> Message:
    code = {"executableCode": {"language": "PYTHON", "code": "1+1"}, "thoughtSignature": "g0"}
    return fold(
        [
            *block(0, "reasoning", "**Thinking**"),
            SignatureDelta(index=0, signature="gemini-sig"),
            *block(1, "server_tool", complete=True, data=code),
            *block(
                2,
                "tool_call",
                name="get_weather",
                complete=True,
                arguments={"city": "SF"},
                extra={"thoughtSignature": "gemini-call-sig"},
            ),
            *block(3, "text", "Sunny."),
        ],
        provider="gemini",
    )


def _responses_turn() -> Message:
    final = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA"}
    web = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    cited = {"type": "url_citation", "url": "https://e.com", "start_index": 0, "end_index": 1}
    return fold(
        [
            BlockStart(index=0, kind="reasoning", extra={"item_id": "rs_1"}),
            BlockDelta(index=0, kind="reasoning", text="Plan."),
            SignatureDelta(index=0, signature="gAAAA"),
            BlockEnd(index=0, kind="reasoning", data=final),
            BlockStart(index=1, kind="server_tool", id="ws_1", name="web_search_call", data=web),
            BlockEnd(index=1, kind="server_tool", data=web),
            BlockStart(index=2, kind="text", extra={"item_id": "msg_1"}),
            BlockDelta(index=2, kind="text", text="Sunny."),
            CitationAdded(citation=Citation(0, 1, text="S", block=2, raw=cited)),
            BlockEnd(index=2, kind="text"),
            *call(3, "call_1", "get_weather", '{"city": "SF"}', extra={"item_id": "fc_1"}),
        ],
        provider="openai-responses",
    )


#: Texts only the provider that made them can read: signatures, encrypted reasoning, its
#: payloads' and citations' own fields, its item ids.
_OWN_SECRETS = {
    "anthropic": ["anthropic-sig", "EqkECkYI", "srv_1", "EnC", "web_search_result_location"],
    "gemini": ["gemini-sig", "gemini-call-sig", "executableCode", '"g0"'],
    "openai-responses": ["gAAAA", "ws_1", "url_citation", "rs_1", "msg_1", "fc_1"],
}
_TURNS = {"anthropic": _anthropic_turn, "gemini": _gemini_turn, "openai-responses": _responses_turn}


@pytest.mark.parametrize("source", sorted(_TURNS))
@pytest.mark.parametrize("target", REQUEST_PROVIDERS)
def test_signatures_and_payloads_go_only_to_their_own_provider(
    source: str, target: ProviderName
) -> None:
    # An Anthropic thinking signature sent as Gemini's thoughtSignature (or as Responses'
    # encrypted_content) is refused, or worse, read as Gemini's own.
    message = _TURNS[source]()
    sent = json.dumps(message.to_request(target))
    assert "Sunny." in sent  # the answer goes, to every provider
    assert "get_weather" in sent or target in ("onecortex", "clouisle")
    if target != source:  # (what goes back to the source itself: the test below)
        assert [secret for secret in _OWN_SECRETS[source] if secret in sent] == []


def test_each_provider_keeps_its_own_signatures() -> None:
    anthropic = _anthropic_turn().to_request("anthropic")["content"]
    assert anthropic[0] == {
        "type": "thinking",
        "thinking": "Let me think.",
        "signature": "anthropic-sig",
    }
    assert anthropic[1] == {"type": "redacted_thinking", "data": "EqkECkYI"}
    assert anthropic[3]["citations"][0]["encrypted_index"] == "EnC"
    gemini = _gemini_turn().to_request("gemini")["parts"]
    assert gemini[0]["thoughtSignature"] == "gemini-sig"
    assert gemini[1]["thoughtSignature"] == "g0"
    assert gemini[2]["thoughtSignature"] == "gemini-call-sig"
    responses = _responses_turn().to_request("openai-responses")
    assert responses[0]["encrypted_content"] == "gAAAA"
    assert responses[2]["id"] == "msg_1"
    assert responses[2]["content"][0]["annotations"][0]["type"] == "url_citation"


def test_another_providers_reasoning_goes_as_what_the_target_takes() -> None:
    # Anthropic refuses a thinking block without its signature: another provider's reasoning
    # is left out there; Gemini takes a thought part with no signature.
    assert [c["type"] for c in _gemini_turn().to_request("anthropic")["content"]] == [
        "tool_use",
        "text",
    ]
    parts = _anthropic_turn().to_request("gemini")["parts"]
    assert parts[0] == {"text": "Let me think.", "thought": True}
    assert [item["type"] for item in _anthropic_turn().to_request("openai-responses")] == [
        "message",
        "function_call",
    ]
