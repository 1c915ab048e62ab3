"""Anthropic ``to_request()`` from real and hand-written streams: the exact next-turn body.

The Messages API takes the assistant turn back as its content blocks
(https://docs.anthropic.com/en/api/messages): ``text {text, citations?}``, ``thinking
{thinking, signature}``, ``redacted_thinking {data}``, ``tool_use {id, name, input}``, and the
server-side tool blocks as the response gave them (``server_tool_use``, ``mcp_tool_use`` with
``server_name``, ``web_search_tool_result``, ``mcp_tool_result``, ...), a result naming its use
by ``tool_use_id``. Web search citations must go back with their ``encrypted_index``
(https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/web-search-tool). Empty text
blocks are rejected, so none is sent.

The captures are checked against ``sdk_content``: the content the Anthropic SDK accumulates
from the same events (``lib/streaming/_messages.py``: a block starts as ``content_block``,
text/thinking deltas append, ``signature_delta`` replaces, ``citations_delta`` appends the
citation, ``input_json_delta`` text is parsed at the end), which is what a caller would send
back, less empty text blocks and empty citation lists.
"""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import streamfold as sf
from conftest import CAPTURES, expected_for, requires_captures
from sse_reference import interpret
from streamfold._types import ProviderName

P: ProviderName = "anthropic"

#: The anthropic captures that end with ``message_stop`` (the others have no whole message).
CAPTURE_FILES = (
    [
        path
        for path in sorted((CAPTURES / "anthropic").glob("*.sse"))
        if expected_for(path)["terminal"] == "message_stop"
    ]
    if CAPTURES.is_dir()
    else []
)


def frame(payload: dict[str, Any]) -> str:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n"


def stream(*blocks: list[dict[str, Any]], stop_reason: str = "end_turn") -> bytes:
    """A whole Messages stream whose content blocks are ``blocks`` (numbered in order)."""
    start: dict[str, Any] = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [],
            "usage": {"input_tokens": 3, "output_tokens": 1},
        },
    }
    payloads: list[dict[str, Any]] = [start]
    for index, block in enumerate(blocks):
        payloads.extend({**payload, "index": index} for payload in block)
    payloads.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason},
            "usage": {"output_tokens": 9},
        }
    )
    payloads.append({"type": "message_stop"})
    return "".join(map(frame, payloads)).encode()


def block(content_block: dict[str, Any], *deltas: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "content_block": content_block},
        *({"type": "content_block_delta", "delta": delta} for delta in deltas),
        {"type": "content_block_stop"},
    ]


def text(*pieces: str, citations: tuple[dict[str, Any], ...] = ()) -> list[dict[str, Any]]:
    """A text block: its pieces, each citation after the first piece (as the API streams)."""
    deltas: list[dict[str, Any]] = [{"type": "text_delta", "text": pieces[0]}] if pieces else []
    deltas += [{"type": "citations_delta", "citation": c} for c in citations]
    deltas += [{"type": "text_delta", "text": p} for p in pieces[1:]]
    start: dict[str, Any] = {"type": "text", "text": ""}
    if citations:
        start["citations"] = []
    return block(start, *deltas)


def json_input(*fragments: str) -> list[dict[str, Any]]:
    return [{"type": "input_json_delta", "partial_json": f} for f in ("", *fragments)]


SEARCH_CITATION = {
    "type": "web_search_result_location",
    "cited_text": "Paris is sunny today.",
    "url": "https://example.com/weather",
    "title": "Weather",
    "encrypted_index": "EpABCioIBhgCIiQ0",
}
DOCUMENT_CITATION = {
    "type": "char_location",
    "cited_text": "sunny",
    "document_index": 0,
    "document_title": "Report",
    "start_char_index": 9,
    "end_char_index": 14,
}
#: Document citations of documents given by Files API id: the response models carry
#: ``file_id``, the request's ``TextCitationParam`` types have no such field.
FILE_CITATIONS = (
    {**DOCUMENT_CITATION, "file_id": "file_011CNha8iCJcU1wXNR6q4V8w"},
    {
        "type": "page_location",
        "cited_text": "Revenue grew.",
        "document_index": 1,
        "document_title": None,
        "start_page_number": 2,
        "end_page_number": 3,
        "file_id": "file_022",
    },
    {
        "type": "content_block_location",
        "cited_text": "A block.",
        "document_index": 2,
        "document_title": "Notes",
        "start_block_index": 0,
        "end_block_index": 1,
        "file_id": "file_033",
    },
    {
        "type": "search_result_location",
        "cited_text": "From a result.",
        "search_result_index": 0,
        "source": "https://example.com/kb",
        "title": "KB",
        "start_block_index": 0,
        "end_block_index": 1,
    },
)
#: A citation type the request tables do not know: sent back as it came.
FUTURE_CITATION = {"type": "audio_location", "cited_text": "hi", "file_id": "file_044"}
SEARCH_RESULT = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": [
        {
            "type": "web_search_result",
            "title": "Weather",
            "url": "https://example.com/weather",
            "encrypted_content": "EqgfCioIARgB",
            "page_age": None,
        }
    ],
}
CODE_RESULT = {
    "type": "code_execution_tool_result",
    "tool_use_id": "srvtoolu_2",
    "content": {
        "type": "code_execution_result",
        "stdout": "2\n",
        "stderr": "",
        "return_code": 0,
        "content": [],
    },
}
MCP_RESULT = {
    "type": "mcp_tool_result",
    "tool_use_id": "mcptoolu_1",
    "is_error": False,
    "content": [{"type": "text", "text": "1"}],
}
MCP_WHOLE_INPUT = {
    "type": "mcp_tool_use",
    "id": "mcptoolu_2",
    "name": "ping",
    "server_name": "other-server",
    "input": {"host": "a"},
}

#: name -> (stream, the exact request body ``to_request()`` must give).
CASES: dict[str, tuple[bytes, dict[str, Any]]] = {
    "text_with_citations": (
        stream(
            text("It is ", "sunny", citations=(SEARCH_CITATION, DOCUMENT_CITATION)),
            text(" in Paris."),
            text(),  # empty: left out
        ),
        {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": "It is sunny",
                    "citations": [SEARCH_CITATION, DOCUMENT_CITATION],
                },
                {"type": "text", "text": " in Paris."},
            ],
        },
    ),
    "citations_without_response_only_fields": (
        stream(text("Revenue ", "grew", citations=(*FILE_CITATIONS, FUTURE_CITATION))),
        {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": "Revenue grew",
                    "citations": [
                        *({k: v for k, v in c.items() if k != "file_id"} for c in FILE_CITATIONS),
                        FUTURE_CITATION,
                    ],
                },
            ],
        },
    ),
    "thinking_signature": (
        stream(
            block(
                {"type": "thinking", "thinking": "", "signature": ""},
                {"type": "thinking_delta", "thinking": "Let me "},
                {"type": "thinking_delta", "thinking": "think."},
                {"type": "signature_delta", "signature": "ErUBCkYIBhgCIkA"},
            ),
            text("Done."),
        ),
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Let me think.", "signature": "ErUBCkYIBhgCIkA"},
                {"type": "text", "text": "Done."},
            ],
        },
    ),
    "redacted_thinking": (
        stream(
            block({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}),
            text("Hi."),
        ),
        {
            "role": "assistant",
            "content": [
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
                {"type": "text", "text": "Hi."},
            ],
        },
    ),
    "server_tool_use_web_search": (
        stream(
            block(
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
                *json_input('{"query": ', '"paris weather"}'),
            ),
            block(SEARCH_RESULT),
            block(
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_2",
                    "name": "code_execution",
                    "input": {},
                },
                *json_input('{"code": "print(1+1)"}'),
            ),
            block(CODE_RESULT),
            text("Sunny", citations=(SEARCH_CITATION,)),
        ),
        {
            "role": "assistant",
            "content": [
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_1",
                    "name": "web_search",
                    "input": {"query": "paris weather"},
                },
                SEARCH_RESULT,
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_2",
                    "name": "code_execution",
                    "input": {"code": "print(1+1)"},
                },
                CODE_RESULT,
                {"type": "text", "text": "Sunny", "citations": [SEARCH_CITATION]},
            ],
        },
    ),
    "mcp_tool_use": (
        stream(
            block(
                {
                    "type": "mcp_tool_use",
                    "id": "mcptoolu_1",
                    "name": "echo",
                    "server_name": "my-server",
                    "input": {},
                },
                *json_input('{"x": ', "1}"),
            ),
            block(MCP_RESULT),
            block(MCP_WHOLE_INPUT),  # its input came whole at the start: no delta
            text("Echoed."),
        ),
        {
            "role": "assistant",
            "content": [
                {
                    "type": "mcp_tool_use",
                    "id": "mcptoolu_1",
                    "name": "echo",
                    "server_name": "my-server",
                    "input": {"x": 1},
                },
                MCP_RESULT,
                MCP_WHOLE_INPUT,
                {"type": "text", "text": "Echoed."},
            ],
        },
    ),
    "tool_use": (
        stream(
            text("Checking."),
            block(
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
                *json_input('{"location": ', '"SF", "unit": "c"}'),
            ),
            block({"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}}),
            stop_reason="tool_use",
        ),
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"location": "SF", "unit": "c"},
                },
                {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}},
            ],
        },
    ),
}


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(data)}), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_hand_written_stream_gives_the_exact_request(name: str) -> None:
    body, want = CASES[name]
    assert sf.fold([body], provider=P).to_request() == want


@given(name=st.sampled_from(sorted(CASES)), data=st.data())
def test_hand_written_stream_split_anywhere_gives_the_exact_request(
    name: str, data: st.DataObject
) -> None:
    body, want = CASES[name]
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=40))
    assert sf.fold(split_at(body, cuts), provider=P).to_request() == want


def test_every_tool_result_refers_to_a_use_sent_back() -> None:
    # The fault this guards against: an mcp_tool_result naming an id no block carries.
    for body, _ in CASES.values():
        content = sf.fold([body], provider=P).to_request()["content"]
        uses = {c["id"] for c in content if c["type"].endswith("tool_use")}
        results = [c["tool_use_id"] for c in content if c["type"].endswith("_tool_result")]
        assert set(results) <= uses


# -- captures ------------------------------------------------------------------------------------


def sdk_content(body: bytes) -> list[dict[str, Any]]:
    """The next-turn content, built as the SDK accumulates the stream (module docstring)."""
    content: list[dict[str, Any]] = []
    inputs: dict[int, str] = {}
    for event in interpret(body).events:
        payload = json.loads(event.data)
        kind = payload.get("type")
        if kind == "content_block_start":
            content.append(copy.deepcopy(payload["content_block"]))
        elif kind == "content_block_delta":
            index, delta = payload["index"], payload["delta"]
            target = content[index]
            if delta["type"] == "text_delta":
                target["text"] += delta["text"]
            elif delta["type"] == "thinking_delta":
                target["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                target["signature"] = delta["signature"]
            elif delta["type"] == "citations_delta":
                target.setdefault("citations", []).append(delta["citation"])
            elif delta["type"] == "input_json_delta":
                inputs[index] = inputs.get(index, "") + delta["partial_json"]
    for index, text in inputs.items():
        if text:
            content[index]["input"] = json.loads(text)
    out = []
    for item in content:
        if item["type"] == "text":
            if not item["text"]:
                continue
            if not item.get("citations"):
                item.pop("citations", None)
        out.append(item)
    return out


@requires_captures
@pytest.mark.parametrize("path", CAPTURE_FILES, ids=lambda p: p.stem)
def test_capture_gives_the_content_the_sdk_would_send_back(path: Path) -> None:
    body = path.read_bytes()
    assert sf.fold([body], provider=P).to_request() == {
        "role": "assistant",
        "content": sdk_content(body),
    }


@requires_captures
@given(data=st.data())
def test_capture_split_anywhere_gives_the_same_request(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(CAPTURE_FILES))
    body = path.read_bytes()
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=60))
    want = {"role": "assistant", "content": sdk_content(body)}
    assert sf.fold(split_at(body, cuts), provider=P).to_request() == want


@requires_captures
def test_web_search_capture_sends_back_citations_and_tool_blocks() -> None:
    body = (CAPTURES / "anthropic" / "web_search_citations.sse").read_bytes()
    content = sf.fold([body], provider=P).to_request()["content"]
    types = [c["type"] for c in content]
    assert types[:5] == [
        "server_tool_use",
        "web_search_tool_result",
        "text",
        "server_tool_use",
        "web_search_tool_result",
    ]
    assert content[0]["input"] == {"query": "top world news today"}
    assert content[1]["tool_use_id"] == content[0]["id"]
    cited = [c for c in content if c["type"] == "text" and "citations" in c]
    assert cited, "the capture's cited text blocks"
    for item in cited:
        for citation in item["citations"]:
            assert citation["type"] == "web_search_result_location"
            assert citation["encrypted_index"]
    # Block 6 (QA's example): both citations of the stream, as delivered.
    streamed = [
        json.loads(e.data)["delta"]["citation"]
        for e in interpret(body).events
        if '"citations_delta"' in e.data and json.loads(e.data)["index"] == 6
    ]
    assert len(streamed) == 2
    folded = sf.fold([body], provider=P).blocks[6]
    assert next(c for c in content if c.get("text") == folded.text)["citations"] == streamed


@requires_captures
@pytest.mark.parametrize(
    ("stem", "kind"),
    [("thinking_signature", "thinking"), ("redacted_thinking", "redacted_thinking")],
)
def test_capture_thinking_blocks_keep_their_signature_or_data(stem: str, kind: str) -> None:
    body = (CAPTURES / "anthropic" / f"{stem}.sse").read_bytes()
    content = sf.fold([body], provider=P).to_request()["content"]
    thinking = [c for c in content if c["type"] == kind]
    assert thinking
    field = "signature" if kind == "thinking" else "data"
    assert all(isinstance(c[field], str) and c[field] for c in thinking)
