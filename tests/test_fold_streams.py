"""``sf.fold`` / ``sf.afold`` on hand-written byte streams of every provider, whole and split.

The streams follow the seeds and ../shared/providers/WIRE_FORMATS.md; each checks one rule of
the fold end to end (terminal event, errors, finish reasons, tool calls, agent events).
"""

from __future__ import annotations

import itertools
import json
import pickle
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import streamfold as sf
from streamfold._message import Message
from streamfold._types import ProviderName


def sse(*events: tuple[str | None, Any], done: bool = False, crlf: bool = False) -> bytes:
    """SSE frames: ``(event name or None, payload)``; payloads that are not str are JSON."""
    nl = "\r\n" if crlf else "\n"
    out = []
    for name, payload in events:
        data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
        head = f"event: {name}{nl}" if name else ""
        out.append(f"{head}data: {data}{nl}{nl}")
    if done:
        out.append(f"data: [DONE]{nl}{nl}")
    return "".join(out).encode()


def lines(*payloads: Any) -> bytes:
    return "".join(json.dumps(p) + "\n" for p in payloads).encode()


@dataclass
class Case:
    provider: ProviderName
    body: bytes
    check: Callable[[Any], None]
    #: The error ``fold`` raises, or ``None`` when it returns a message.
    raises: type[sf.StreamfoldError] | None = None


CASES: dict[str, Case] = {}


def case(
    name: str, provider: ProviderName, body: bytes, raises: type[sf.StreamfoldError] | None = None
) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    def register(check: Callable[[Any], None]) -> Callable[[Any], None]:
        CASES[name] = Case(provider, body, check, raises)
        return check

    return register


# -- OpenAI Chat Completions -------------------------------------------------------------------


def chunk(*choices: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "model": "gpt-4o", "choices": list(choices), **top}


def choice(index: int = 0, finish: str | None = None, **delta: Any) -> dict[str, Any]:
    return {"index": index, "delta": delta, "finish_reason": finish}


OPENAI_TEXT = [
    (None, chunk(choice(role="assistant", content=""))),
    (None, chunk(choice(content="Hel"))),
    (None, chunk(choice(content="lo ✓"))),
    (None, chunk(choice(finish="stop"))),
    (None, chunk(usage={"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7})),
]


@case("openai_text", "openai", sse(*OPENAI_TEXT, done=True))
def _openai_text(m: Message) -> None:
    assert (m.text, m.id, m.model) == ("Hello ✓", "chatcmpl-1", "gpt-4o")
    assert (m.finish_reason, m.raw_finish_reason) == ("stop", "stop")
    assert m.usage is not None
    assert (m.usage.input_tokens, m.usage.output_tokens, m.usage.total_tokens) == (5, 2, 7)


@case("openai_finish_without_done", "openai", sse(*OPENAI_TEXT[:4]))
def _openai_no_done(m: Message) -> None:
    assert m.complete
    assert m.text == "Hello ✓"
    assert [w for w in m.warnings if "without [DONE]" in w] == [m.warnings[-1]]


@case("openai_done_without_finish", "openai", sse(*OPENAI_TEXT[:3], done=True))
def _openai_no_finish(m: Message) -> None:
    # The host ended the stream (Snowflake Cortex sends no finish_reason): not a cut.
    assert m.complete
    assert m.text == "Hello ✓"
    assert m.finish_reason is None
    assert [w for w in m.warnings if "the host sent none" in w] == m.warnings


@case("openai_cut", "openai", sse(*OPENAI_TEXT[:2]), sf.IncompleteStreamError)
def _openai_cut(e: sf.IncompleteStreamError) -> None:
    assert e.partial is not None
    assert e.partial.text == "Hel"
    assert not e.partial.complete


def tool(index: int, arguments: str, call_id: str | None = None, name: str | None = None) -> Any:
    entry: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id is not None:
        entry["id"] = call_id
        entry["type"] = "function"
        entry["function"]["name"] = name
    return entry


OPENAI_TOOLS = [
    (None, chunk(choice(role="assistant", content=None, tool_calls=[tool(0, "", "call_A", "f")]))),
    (None, chunk(choice(tool_calls=[tool(0, '{"ci')]))),
    (None, chunk(choice(tool_calls=[tool(1, "", "call_B", "g")]))),
    (None, chunk(choice(tool_calls=[tool(1, '{"n": 1}')]))),
    (None, chunk(choice(tool_calls=[tool(0, 'ty": "Oslo"}')]))),
    (None, chunk(choice(finish="tool_calls"))),
]


@case("openai_parallel_tools", "openai", sse(*OPENAI_TOOLS, done=True))
def _openai_tools(m: Message) -> None:
    assert [(c.id, c.name, c.arguments) for c in m.tool_calls] == [
        ("call_A", "f", {"city": "Oslo"}),
        ("call_B", "g", {"n": 1}),
    ]
    assert m.tool_calls[0].arguments_json == '{"city": "Oslo"}'
    assert m.finish_reason == "tool_calls"
    assert m.to_request("openai")["tool_calls"][1]["function"]["arguments"] == '{"n": 1}'


@case("openai_tool_cut", "openai", sse(*OPENAI_TOOLS[:2]), sf.IncompleteStreamError)
def _openai_tool_cut(e: sf.IncompleteStreamError) -> None:
    assert e.partial is not None
    call = e.partial.tool_calls[0]
    assert (call.arguments, call.complete, call.arguments_json) == (None, False, '{"ci')
    assert call.error


@case(
    "openai_length",
    "openai",
    sse((None, chunk(choice(content='{"'))), (None, chunk(choice(finish="length"))), done=True),
)
def _openai_length(m: Message) -> None:
    assert (m.finish_reason, m.text, m.complete) == ("length", '{"', True)


@case(
    "openai_error_after_text",
    "openai",
    sse(*OPENAI_TEXT[:2], (None, {"error": {"message": "Token limit", "code": 400}}), done=True),
    sf.StreamError,
)
def _openai_error(e: sf.StreamError) -> None:
    assert (e.message, e.code) == ("Token limit", 400)
    assert e.retryable_without_duplicate is False
    assert e.partial is not None
    assert e.partial.text == "Hel"
    assert e.partial.error == {"message": "Token limit", "code": 400}


@case(
    "openai_error_first",
    "openai",
    sse(("error", {"error": {"message": "busy", "type": "server_error"}})),
    sf.StreamError,
)
def _openai_error_first(e: sf.StreamError) -> None:
    assert e.retryable_without_duplicate is True
    assert e.partial is not None
    assert e.partial.text == ""


@case(
    "openai_n2",
    "openai",
    sse(
        (None, chunk(choice(0, role="assistant", content=""), choice(1, role="assistant"))),
        (None, chunk(choice(1, content="B"))),
        (None, chunk(choice(0, content="A"))),
        (None, chunk(choice(1, finish="length"))),
        (None, chunk(choice(0, finish="stop"))),
        done=True,
    ),
)
def _openai_n2(m: Message) -> None:
    assert [(c.choice, c.text, c.finish_reason) for c in m.choices] == [
        (0, "A", "stop"),
        (1, "B", "length"),
    ]
    assert m is m.choices[0]


@case(
    "mistral_whole_call",
    "mistral",
    sse(
        (None, chunk(choice(role="assistant", content=""))),
        (
            None,
            chunk(
                choice(
                    finish="tool_calls",
                    content=None,
                    tool_calls=[
                        {"id": "a1", "function": {"name": "weather", "arguments": '{"loc": "SF"}'}},
                        {"id": "a2", "function": {"name": "time", "arguments": {"tz": "PST"}}},
                    ],
                ),
                usage={"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
            ),
        ),
        done=True,
    ),
)
def _mistral(m: Message) -> None:
    assert [(c.id, c.arguments, c.arguments_json) for c in m.tool_calls] == [
        ("a1", {"loc": "SF"}, '{"loc": "SF"}'),
        ("a2", {"tz": "PST"}, '{"tz": "PST"}'),
    ]
    assert all(c.complete for c in m.tool_calls)
    assert m.finish_reason == "tool_calls"
    assert m.usage is not None
    assert m.usage.total_tokens == 12


# -- Cohere v2 -----------------------------------------------------------------------------------


def cohere(kind: str, **payload: Any) -> tuple[str, dict[str, Any]]:
    return kind, {"type": kind, **payload}


def message(**m: Any) -> dict[str, Any]:
    return {"message": m}


COHERE_START = cohere("message-start", id="c1a", delta=message(role="assistant"))
COHERE_TOOLS = [
    COHERE_START,
    cohere("tool-plan-delta", delta=message(tool_plan="I will ")),
    cohere("tool-plan-delta", delta=message(tool_plan="check.")),
    cohere(
        "tool-call-start",
        index=0,
        delta=message(
            tool_calls={
                "id": "t0",
                "type": "function",
                "function": {"name": "get_time", "arguments": ""},
            }
        ),
    ),
    cohere(
        "tool-call-delta",
        index=0,
        delta=message(tool_calls={"function": {"arguments": '{\n "tz": '}}),
    ),
    cohere(
        "tool-call-delta",
        index=0,
        delta=message(tool_calls={"function": {"arguments": '"UTC"\n}'}}),
    ),
    cohere("tool-call-end", index=0),
    cohere(
        "tool-call-start",
        index=1,
        delta=message(
            tool_calls={
                "id": "t1",
                "type": "function",
                "function": {"name": "now", "arguments": ""},
            }
        ),
    ),
    cohere("tool-call-end", index=1),
]


@case(
    "cohere_v2_tools",
    "cohere-v2",
    sse(
        *COHERE_TOOLS,
        cohere(
            "message-end",
            delta={
                "finish_reason": "TOOL_CALL",
                "usage": {
                    "billed_units": {"input_tokens": 5, "output_tokens": 9},
                    "tokens": {"input_tokens": 800, "output_tokens": 30},
                },
            },
        ),
        done=True,
    ),
)
def _cohere_tools(m: Message) -> None:
    assert m.tool_plan == "I will check."
    assert [(c.id, c.arguments) for c in m.tool_calls] == [("t0", {"tz": "UTC"}), ("t1", {})]
    assert (m.finish_reason, m.raw_finish_reason) == ("tool_calls", "TOOL_CALL")
    assert m.usage is not None
    assert (m.usage.input_tokens, m.usage.output_tokens) == (800, 30)
    assert m.usage.raw["billed_units"] == {"input_tokens": 5, "output_tokens": 9}
    assert m.to_request("cohere-v2")["tool_plan"] == "I will check."


@case("cohere_v2_cut_before_message_end", "cohere-v2", sse(*COHERE_TOOLS), sf.IncompleteStreamError)
def _cohere_cut(e: sf.IncompleteStreamError) -> None:
    assert e.partial is not None
    assert e.partial.tool_plan == "I will check."
    assert [c.arguments for c in e.partial.tool_calls] == [{"tz": "UTC"}, {}]


COHERE_TEXT = [
    COHERE_START,
    cohere("content-start", index=0, delta=message(content={"type": "text", "text": ""})),
    cohere("content-delta", index=0, delta=message(content={"text": "The value "})),
    cohere("content-delta", index=0, delta=message(content={"text": "is 5."})),
    cohere(
        "citation-start",
        index=0,
        delta=message(
            citations={
                "start": 13,
                "end": 14,
                "text": "5",
                "sources": [{"type": "tool", "id": "m:0"}],
            }
        ),
    ),
    cohere("citation-end", index=0),
    cohere("content-end", index=0),
]


@case(
    "cohere_v2_max_tokens",
    "cohere-v2",
    sse(*COHERE_TEXT, cohere("message-end", delta={"finish_reason": "MAX_TOKENS"}), done=True),
)
def _cohere_length(m: Message) -> None:
    assert m.text == "The value is 5."
    assert (m.finish_reason, m.raw_finish_reason, m.complete) == ("length", "MAX_TOKENS", True)
    (citation,) = m.citations
    assert m.text[citation.start : citation.end] == citation.text == "5"
    assert m.blocks[0].citations == [citation]


@case(
    "cohere_v2_error_finish",
    "cohere-v2",
    sse(
        COHERE_START,
        cohere("tool-plan-delta", delta=message(tool_plan="I will inspect.")),
        cohere(
            "message-end",
            delta={
                "finish_reason": "ERROR",
                "usage": {},
                "error": "invalid tool generation",
                "error_type": "INVALID_TOOL_GENERATION",
            },
        ),
        done=True,
    ),
    sf.StreamError,
)
def _cohere_error(e: sf.StreamError) -> None:
    assert e.code == "INVALID_TOOL_GENERATION"
    assert e.retryable_without_duplicate is False  # the plan was shown
    assert e.partial is not None
    assert e.partial.tool_plan == "I will inspect."
    assert e.partial.finish_reason == "error"


# -- Cohere v1 (JSON lines) ------------------------------------------------------------------------


@case(
    "cohere_v1_text",
    "cohere-v1",
    lines(
        {"is_finished": False, "event_type": "stream-start", "generation_id": "g1"},
        {"is_finished": False, "event_type": "text-generation", "text": "Arr"},
        {"is_finished": False, "event_type": "text-generation", "text": "r!"},
        {
            "is_finished": True,
            "event_type": "stream-end",
            "finish_reason": "COMPLETE",
            "response": {
                "text": "Arrr!",
                "generation_id": "g1",
                "meta": {"tokens": {"input_tokens": 7, "output_tokens": 2}},
            },
        },
    ),
)
def _cohere_v1(m: Message) -> None:
    assert (m.text, m.finish_reason, m.raw_finish_reason) == ("Arrr!", "stop", "COMPLETE")
    assert m.to_request("cohere-v1") == {"role": "CHATBOT", "message": "Arrr!"}


@case(
    "cohere_v1_cut",
    "cohere-v1",
    lines(
        {"is_finished": False, "event_type": "stream-start", "generation_id": "g1"},
        {"is_finished": False, "event_type": "text-generation", "text": "Arr"},
    ),
    sf.IncompleteStreamError,
)
def _cohere_v1_cut(e: sf.IncompleteStreamError) -> None:
    assert e.partial is not None
    assert e.partial.text == "Arr"


# -- Anthropic -------------------------------------------------------------------------------------


def anth(kind: str, **payload: Any) -> tuple[str, dict[str, Any]]:
    return kind, {"type": kind, **payload}


ANTHROPIC_START = anth(
    "message_start",
    message={
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [],
        "usage": {"input_tokens": 10, "output_tokens": 1},
    },
)
ANTHROPIC_TOOL = [
    ANTHROPIC_START,
    anth(
        "content_block_start",
        index=0,
        content_block={"type": "thinking", "thinking": "", "signature": ""},
    ),
    anth("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": "Weather?"}),
    anth("content_block_delta", index=0, delta={"type": "signature_delta", "signature": "EqQB"}),
    anth("content_block_stop", index=0),
    ("ping", {"type": "ping"}),
    anth("content_block_start", index=1, content_block={"type": "text", "text": ""}),
    anth("content_block_delta", index=1, delta={"type": "text_delta", "text": "Checking 🥁"}),
    anth("content_block_stop", index=1),
    anth(
        "content_block_start",
        index=2,
        content_block={"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
    ),
    anth("content_block_delta", index=2, delta={"type": "input_json_delta", "partial_json": ""}),
    anth(
        "content_block_delta",
        index=2,
        delta={"type": "input_json_delta", "partial_json": '{"location": "SF'},
    ),
]


@case(
    "anthropic_tool_use",
    "anthropic",
    sse(
        *ANTHROPIC_TOOL,
        anth(
            "content_block_delta", index=2, delta={"type": "input_json_delta", "partial_json": '"}'}
        ),
        anth("content_block_stop", index=2),
        anth("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 40}),
        anth("message_stop"),
    ),
)
def _anthropic_tool(m: Message) -> None:
    assert (m.reasoning, m.text) == ("Weather?", "Checking 🥁")
    assert m.blocks[0].signature == "EqQB"
    assert m.tool_calls[0].arguments == {"location": "SF"}
    assert (m.finish_reason, m.raw_finish_reason) == ("tool_calls", "tool_use")
    assert m.usage is not None
    assert (m.usage.input_tokens, m.usage.output_tokens) == (10, 40)
    assert m.to_request("anthropic")["content"][0] == {
        "type": "thinking",
        "thinking": "Weather?",
        "signature": "EqQB",
    }


@case(
    "anthropic_max_tokens_inside_json",
    "anthropic",
    sse(
        *ANTHROPIC_TOOL,
        anth("message_delta", delta={"stop_reason": "max_tokens"}, usage={"output_tokens": 64}),
        anth("message_stop"),
    ),
)
def _anthropic_max_tokens(m: Message) -> None:
    assert m.complete
    assert (m.finish_reason, m.raw_finish_reason) == ("length", "max_tokens")
    call = m.tool_calls[0]
    assert (call.arguments, call.complete, call.arguments_json) == (None, False, '{"location": "SF')
    assert call.error


@case("anthropic_cut", "anthropic", sse(*ANTHROPIC_TOOL), sf.IncompleteStreamError)
def _anthropic_cut(e: sf.IncompleteStreamError) -> None:
    assert e.partial is not None
    assert e.partial.text == "Checking 🥁"
    assert e.partial.tool_calls[0].complete is False
    assert e.partial.usage is not None


@case(
    "anthropic_error_event",
    "anthropic",
    sse(
        *ANTHROPIC_TOOL[:8],
        (
            "error",
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        ),
    ),
    sf.StreamError,
)
def _anthropic_error(e: sf.StreamError) -> None:
    assert (e.code, e.message) == ("overloaded_error", "Overloaded")
    assert e.retryable_without_duplicate is False
    assert e.partial is not None
    assert e.partial.text == "Checking 🥁"
    assert e.partial.error == {"type": "overloaded_error", "message": "Overloaded"}


@case(
    "anthropic_error_before_content",
    "anthropic",
    sse(
        ANTHROPIC_START,
        (
            "error",
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        ),
    ),
    sf.StreamError,
)
def _anthropic_error_first(e: sf.StreamError) -> None:
    assert e.retryable_without_duplicate is True


# -- OpenAI Responses ------------------------------------------------------------------------------


def resp(kind: str, **payload: Any) -> tuple[str, dict[str, Any]]:
    return kind, {"type": kind, **payload}


RESPONSE = {"id": "resp_1", "model": "gpt-4o", "status": "in_progress", "output": []}
RESPONSES_CALL = [
    resp("response.created", response=RESPONSE),
    resp(
        "response.output_item.added",
        output_index=0,
        item={
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "get_capital",
            "arguments": "",
        },
    ),
    resp(
        "response.function_call_arguments.delta", item_id="fc_1", output_index=0, delta='{"country"'
    ),
    resp(
        "response.function_call_arguments.delta", item_id="fc_1", output_index=0, delta=':"France"}'
    ),
    resp(
        "response.function_call_arguments.done",
        item_id="fc_1",
        output_index=0,
        arguments='{"country":"France"}',
    ),
    resp(
        "response.output_item.done",
        output_index=0,
        item={
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "get_capital",
            "arguments": '{"country":"France"}',
        },
    ),
]
USAGE = {"input_tokens": 20, "output_tokens": 5, "total_tokens": 25}


@case(
    "responses_completed_with_call",
    "openai-responses",
    sse(
        *RESPONSES_CALL,
        resp("response.completed", response={**RESPONSE, "status": "completed", "usage": USAGE}),
    ),
)
def _responses_call(m: Message) -> None:
    assert (m.finish_reason, m.raw_finish_reason) == ("tool_calls", "completed")
    (call,) = m.tool_calls
    assert (call.id, call.arguments) == ("call_1", {"country": "France"})
    item = m.to_request("openai-responses")[0]
    assert (item["type"], item["call_id"], item["arguments"]) == (
        "function_call",
        "call_1",
        '{"country":"France"}',
    )


@case(
    "responses_incomplete_max_output_tokens",
    "openai-responses",
    sse(
        resp("response.created", response=RESPONSE),
        resp(
            "response.output_item.added",
            output_index=0,
            item={"type": "message", "id": "msg_1", "role": "assistant", "content": []},
        ),
        resp(
            "response.content_part.added",
            item_id="msg_1",
            output_index=0,
            content_index=0,
            part={"type": "output_text", "text": ""},
        ),
        resp(
            "response.output_text.delta",
            item_id="msg_1",
            output_index=0,
            content_index=0,
            delta="Par",
        ),
        resp(
            "response.incomplete",
            response={
                **RESPONSE,
                "status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"},
            },
        ),
    ),
)
def _responses_incomplete(m: Message) -> None:
    assert (m.text, m.finish_reason, m.complete) == ("Par", "length", True)


@case(
    "responses_failed",
    "openai-responses",
    sse(
        resp("response.created", response=RESPONSE),
        resp(
            "response.failed",
            response={
                **RESPONSE,
                "status": "failed",
                "error": {"code": "server_error", "message": "oops"},
            },
        ),
    ),
    sf.StreamError,
)
def _responses_failed(e: sf.StreamError) -> None:
    assert e.code == "server_error"
    assert e.retryable_without_duplicate is True


# -- Gemini ----------------------------------------------------------------------------------------


def gchunk(*parts: dict[str, Any], finish: str | None = None, **top: Any) -> tuple[None, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    body = {"candidates": [candidate], "modelVersion": "gemini-3-pro", "responseId": "r1", **top}
    return None, body


GEMINI_USAGE = {"promptTokenCount": 9, "candidatesTokenCount": 5, "totalTokenCount": 30}
GEMINI_TOOL = [
    gchunk({"text": "**Plan**", "thought": True}),
    gchunk({"text": "Let me "}),
    gchunk({"text": "check."}),
    gchunk(
        {"functionCall": {"name": "get_country", "args": {"q": "é"}}, "thoughtSignature": "c2ln"}
    ),
]


@case(
    "gemini_tool_call_stop",
    "gemini",
    sse(*GEMINI_TOOL, gchunk({"text": ""}, finish="STOP", usageMetadata=GEMINI_USAGE), crlf=True),
)
def _gemini_tool(m: Message) -> None:
    assert (m.reasoning, m.text) == ("**Plan**", "Let me check.")
    (call,) = m.tool_calls
    assert (call.name, call.arguments, call.complete) == ("get_country", {"q": "é"}, True)
    assert (m.finish_reason, m.raw_finish_reason) == ("tool_calls", "STOP")
    assert m.usage is not None
    assert m.usage.raw == GEMINI_USAGE
    parts = m.to_request("gemini")["parts"]
    assert parts[-1]["thoughtSignature"] == "c2ln"
    assert parts[-1]["functionCall"] == {"name": "get_country", "args": {"q": "é"}}


@case(
    "gemini_max_tokens",
    "gemini",
    sse(gchunk({"text": "The capital"}), gchunk({"text": " is"}, finish="MAX_TOKENS"), crlf=True),
)
def _gemini_length(m: Message) -> None:
    assert (m.text, m.finish_reason, m.raw_finish_reason) == (
        "The capital is",
        "length",
        "MAX_TOKENS",
    )


@case("gemini_safety", "gemini", sse(gchunk({"text": "I"}, finish="SAFETY"), crlf=True))
def _gemini_safety(m: Message) -> None:
    assert (m.finish_reason, m.raw_finish_reason) == ("content_filter", "SAFETY")


@case("gemini_cut", "gemini", sse(*GEMINI_TOOL[:3], crlf=True), sf.IncompleteStreamError)
def _gemini_cut(e: sf.IncompleteStreamError) -> None:
    assert e.partial is not None
    assert e.partial.text == "Let me check."


@case(
    "gemini_error_chunk",
    "gemini",
    sse(
        *GEMINI_TOOL[:2],
        (None, {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}),
        crlf=True,
    ),
    sf.StreamError,
)
def _gemini_error(e: sf.StreamError) -> None:
    assert e.message == "overloaded"
    assert e.retryable_without_duplicate is False
    assert e.partial is not None
    assert e.partial.text == "Let me "


# -- Onecortex -------------------------------------------------------------------------------------


def oc(kind: str, **payload: Any) -> tuple[str, dict[str, Any]]:
    return kind, {"v": 1, "type": kind, **payload}


ONECORTEX = [
    oc("step_start", name="classify"),
    oc("tool_call_start", id="call_1", name="word_count"),
    oc("tool_call_args", id="call_1", delta='{"text": '),
    oc("tool_call_args", id="call_1", delta='"hello"}'),
    oc("tool_call_end", id="call_1"),
    oc("tool_result", id="call_1", output="1"),
    oc("text", delta="You said"),
    oc("text", delta=": hello"),
    oc("step_end", name="classify"),
]


def with_ping(body: bytes) -> bytes:
    return b": ping\n\n" + body


@case(
    "onecortex_done",
    "onecortex",
    with_ping(
        sse(
            *ONECORTEX,
            oc("done", result="You said: hello", sessionId="01K", versionNumber=1, durationMs=212),
        )
    ),
)
def _onecortex(m: Message) -> None:
    assert m.text == "You said: hello"
    assert m.warnings == []
    assert m.tool_calls[0].arguments == {"text": "hello"}
    assert [(r.call_id, r.output) for r in m.tool_results] == [("call_1", "1")]
    assert [(s.name, s.complete) for s in m.steps] == [("classify", True)]
    assert m.finish_reason == "stop"  # the agent ran its call: the turn asks for nothing
    assert m.raw_finish_reason == "done"
    assert m.to_request("onecortex") == {"role": "assistant", "content": "You said: hello"}
    assert m.metadata == {"sessionId": "01K", "versionNumber": 1, "durationMs": 212}


@case(
    "onecortex_done_only",
    "onecortex",
    with_ping(sse(oc("done", result="The whole reply ✓", sessionId="S1", durationMs=5))),
)
def _onecortex_done_only(m: Message) -> None:
    # "result is always present, and is the whole reply": a run that streamed no text.
    assert (m.text, m.warnings, m.complete, m.finish_reason) == (
        "The whole reply ✓",
        [],
        True,
        "stop",
    )
    assert m.metadata == {"sessionId": "S1", "durationMs": 5}


@case(
    "onecortex_call_without_result",
    "onecortex",
    sse(*ONECORTEX[:5], *ONECORTEX[6:], oc("done", result="You said: hello")),
)
def _onecortex_unanswered(m: Message) -> None:
    # The platform ran the call ("done: The run finished"): the run asks nothing of the client.
    assert m.tool_results == []
    assert m.tool_calls[0].complete
    assert (m.finish_reason, m.raw_finish_reason) == ("stop", "done")
    assert (m.text, m.warnings) == ("You said: hello", [])


@case(
    "onecortex_result_mismatch",
    "onecortex",
    sse(*ONECORTEX, oc("done", result="You said: HELLO")),
)
def _onecortex_mismatch(m: Message) -> None:
    assert m.complete
    assert any("differs" in w for w in m.warnings)


@case(
    "onecortex_error",
    "onecortex",
    sse(*ONECORTEX[:7], oc("error", code="agent_error", message="ValueError: raised")),
    sf.StreamError,
)
def _onecortex_error(e: sf.StreamError) -> None:
    assert e.code == "agent_error"
    assert e.retryable_without_duplicate is False
    assert e.partial is not None
    assert e.partial.text == "You said"
    assert e.partial.steps[0].complete is False


# -- Clouisle --------------------------------------------------------------------------------------


CLOUISLE = [
    ("run_start", {"status": "running", "run_id": "run-1", "sequence": 1}),
    ("message_start", {"conversation_id": "conv-1", "message_id": "msg-1", "sequence": 2}),
    ("rag_start", {"sequence": 3}),
    ("rag_context", {"contexts": [], "sequence": 4}),
    ("reasoning_start", {"sequence": 5}),
    ("reasoning_delta", {"delta": "Look it up.", "sequence": 6}),
    ("reasoning_end", {"sequence": 7}),
    ("tool_call", {"id": "call-1", "name": "search", "arguments": {"q": "x"}, "sequence": 8}),
    ("tool_result", {"id": "call-1", "name": "search", "result": "found", "sequence": 9}),
    ("media_result", {"type": "image", "url": "https://x/y.png", "sequence": 10}),
    ("content_delta", {"delta": "Here ", "sequence": 11}),
    ("content_delta", {"delta": "it is.", "sequence": 12}),
    ("output_truncated", {"sequence": 13}),
    (
        "message_end",
        {"usage": {"input_tokens": 3, "output_tokens": 4}, "elapsed_ms": 9, "sequence": 14},
    ),
]


@case(
    "clouisle_run",
    "clouisle",
    sse(*CLOUISLE, ("run_end", {"status": "completed", "message_id": "msg-1", "sequence": 15})),
)
def _clouisle(m: Message) -> None:
    assert (m.text, m.reasoning) == ("Here it is.", "Look it up.")
    assert m.sources == []
    assert m.tool_calls[0].arguments == {"q": "x"}
    assert [r.output for r in m.tool_results] == ["found"]
    assert len(m.media) == 1
    assert m.finish_reason == "length"  # output_truncated came before message_end
    assert m.status == "completed"
    assert m.complete
    assert m.metadata == {"run_id": "run-1", "conversation_id": "conv-1", "elapsed_ms": 9}


@case(
    "clouisle_call_without_result",
    "clouisle",
    sse(*CLOUISLE[:8], *CLOUISLE[9:], ("run_end", {"status": "completed", "sequence": 15})),
)
def _clouisle_unanswered(m: Message) -> None:
    assert (m.tool_results, m.tool_calls[0].complete) == ([], True)
    assert (m.finish_reason, m.status) == ("length", "completed")  # not tool_calls


@case(
    "clouisle_call_without_result_completed",
    "clouisle",
    sse(
        ("message_start", {"message_id": "m", "conversation_id": "conv-2"}),
        ("tool_call", {"id": "t1", "name": "search", "arguments": {}}),
        ("content_delta", {"delta": "Done."}),
        ("message_end", {"status": "completed", "elapsed_ms": 4}),
    ),
)
def _clouisle_unanswered_completed(m: Message) -> None:
    assert (m.finish_reason, m.raw_finish_reason, m.text) == ("stop", "completed", "Done.")
    assert m.metadata == {"conversation_id": "conv-2", "elapsed_ms": 4}


@case(
    "clouisle_waiting_on_its_call",
    "clouisle",
    sse(
        *CLOUISLE[:2],
        ("tool_call", {"id": "call-123", "name": "ask_user", "arguments": {}, "sequence": 3}),
        ("message_end", {"status": "completed", "sequence": 4}),
        (
            "run_status",
            {
                "status": "waiting",
                "run_id": "run-1",
                "pending_tool_call_id": "call-123",
                "pending_tool_name": "ask_user",
                "sequence": 5,
            },
        ),
    ),
    sf.IncompleteStreamError,
)
def _clouisle_waiting_on_call(e: sf.IncompleteStreamError) -> None:
    # The one call the client must act on: the question the run waits for.
    assert e.partial is not None
    assert (e.partial.status, e.partial.finish_reason) == ("waiting", "tool_calls")
    assert e.partial.metadata == {"run_id": "run-1", "conversation_id": "conv-1"}


@case("clouisle_run_not_ended", "clouisle", sse(*CLOUISLE), sf.IncompleteStreamError)
def _clouisle_open_run(e: sf.IncompleteStreamError) -> None:
    assert e.partial is not None
    assert e.partial.text == "Here it is."
    assert e.partial.status == "running"


@case(
    "clouisle_waiting",
    "clouisle",
    sse(
        *CLOUISLE[:2],
        (
            "run_status",
            {
                "status": "waiting",
                "run_id": "run-1",
                "pending_tool_call_id": "call-123",
                "pending_tool_name": "ask_user",
                "pending_tool_input": {"questions": ["Which?"]},
                "sequence": 3,
            },
        ),
    ),
    sf.IncompleteStreamError,
)
def _clouisle_waiting(e: sf.IncompleteStreamError) -> None:
    assert e.partial is not None
    pending = e.partial.pending_tool_call
    assert e.partial.status == "waiting"
    assert pending is not None
    assert (pending.id, pending.name, pending.arguments) == (
        "call-123",
        "ask_user",
        {"questions": ["Which?"]},
    )


@case(
    "clouisle_no_retrieval",
    "clouisle",
    sse(
        ("message_start", {"message_id": "m"}),
        ("rag_context", {"contexts": None}),
        ("content_delta", {"delta": "Hi"}),
        ("message_end", {"elapsed_ms": 3}),
    ),
)
def _clouisle_no_rag(m: Message) -> None:
    assert m.sources is None
    assert (m.text, m.finish_reason, m.complete) == ("Hi", "stop", True)


@case(
    "clouisle_error",
    "clouisle",
    sse(
        ("message_start", {"message_id": "m"}),
        ("error", {"code": "quota", "message": "no credits"}),
    ),
    sf.StreamError,
)
def _clouisle_error(e: sf.StreamError) -> None:
    assert (e.code, e.retryable_without_duplicate) == ("quota", True)


# -- running the cases -----------------------------------------------------------------------------


def outcome(run: Callable[[], Message]) -> tuple[Any, ...]:
    """What a fold gave: the message, or the error's type, text, position, code and partial."""
    try:
        return ("ok", run())
    except sf.StreamfoldError as exc:
        return (
            type(exc),
            str(exc),
            getattr(exc, "position", None),
            getattr(exc, "code", None),
            getattr(exc, "retryable_without_duplicate", None),
            getattr(exc, "partial", None),
        )


def run_case(c: Case, chunks: list[bytes]) -> Any:
    if c.raises is None:
        return sf.fold(chunks, provider=c.provider)
    with pytest.raises(c.raises) as info:
        sf.fold(chunks, provider=c.provider)
    return info.value


@pytest.mark.parametrize("name", sorted(CASES))
def test_whole(name: str) -> None:
    c = CASES[name]
    c.check(run_case(c, [c.body]))


@pytest.mark.parametrize("name", sorted(CASES))
def test_byte_by_byte(name: str) -> None:
    c = CASES[name]
    c.check(run_case(c, [c.body[i : i + 1] for i in range(len(c.body))]))


@given(data=st.data())
def test_any_split_gives_the_one_shot_outcome(data: st.DataObject) -> None:
    # Error texts included, and under another provider's name too (its error says which
    # provider the frames read as, whatever the reads: a Cohere v2 stream read as cohere-v1
    # named cohere-v2 fed whole, and nothing fed a byte at a time).
    name = data.draw(st.sampled_from(sorted(CASES)))
    c = CASES[name]
    provider = data.draw(st.sampled_from([c.provider, *WHOLE.values(), "cohere-v1", "auto"]))
    cuts = sorted(data.draw(st.sets(st.integers(0, len(c.body)), max_size=12)))
    bounds = [0, *cuts, len(c.body)]
    chunks = [c.body[a:b] for a, b in itertools.pairwise(bounds)]
    whole = outcome(lambda: sf.fold([c.body], provider=provider))
    split = outcome(lambda: sf.fold(chunks, provider=provider))
    assert split == whole


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("provider", ["cohere-v1", "cohere-v2", "openai", "anthropic"])
def test_byte_by_byte_gives_the_one_shot_error_under_any_provider(
    name: str, provider: ProviderName
) -> None:
    body = CASES[name].body
    whole = outcome(lambda: sf.fold([body], provider=provider))
    pieces = outcome(
        lambda: sf.fold([body[i : i + 1] for i in range(len(body))], provider=provider)
    )
    assert pieces == whole


async def agen(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for piece in chunks:
        yield piece


@pytest.mark.anyio
@pytest.mark.parametrize("name", sorted(CASES))
async def test_afold_matches_fold(name: str) -> None:
    c = CASES[name]
    chunks = [c.body[i : i + 7] for i in range(0, len(c.body), 7)]
    result: Any
    try:
        result = await sf.afold(agen(chunks), provider=c.provider)
        got: tuple[Any, ...] = ("ok", result)
    except sf.StreamfoldError as exc:
        result = exc
        got = (
            type(exc),
            str(exc),
            getattr(exc, "position", None),
            getattr(exc, "code", None),
            getattr(exc, "retryable_without_duplicate", None),
            getattr(exc, "partial", None),
        )
    assert got == outcome(lambda: sf.fold(chunks, provider=c.provider))
    c.check(result)


def test_auto_detects_and_names_the_provider() -> None:
    m = sf.fold([CASES["anthropic_tool_use"].body])
    assert m.provider == "anthropic"
    assert m.to_request()["content"][-1]["type"] == "tool_use"


def test_protocol_error_carries_the_partial() -> None:
    body = sse(*OPENAI_TEXT[:2]) + b"data: {not json\n\n"
    with pytest.raises(sf.ProtocolError) as info:
        sf.fold([body], provider="openai")
    assert info.value.partial is not None
    assert info.value.partial.text == "Hel"
    assert info.value.provider == "openai"


@pytest.mark.parametrize("provider", ["openai", "auto"])
def test_an_event_over_the_limit_names_provider_and_frame(provider: ProviderName) -> None:
    # The decoder knows only bytes; the pipeline names the provider (the detected one for
    # auto) and the number of the frame the oversized event would have been.
    body = sse(*OPENAI_TEXT[:2]) + b"data: " + b"x" * 2000 + b"\n\n"
    for run in (
        lambda: sf.fold([body], provider=provider, max_event_bytes=1000),
        lambda: list(sf.events([body], provider=provider, max_event_bytes=1000)),
    ):
        with pytest.raises(sf.ProtocolError) as info:
            run()
        assert info.value.provider == "openai"
        assert str(info.value).startswith("openai: event larger than max_event_bytes=1000")
        assert str(info.value).endswith("(frame 2)")
        assert info.value.message == str(info.value)
        assert info.value.limit == 1000
        assert info.value.position == len(sse(*OPENAI_TEXT[:2])) + 6 + 1000
    with pytest.raises(sf.ProtocolError) as info:
        sf.fold([body], provider=provider, max_event_bytes=1000)
    assert info.value.partial is not None
    assert info.value.partial.text == "Hel"


def test_a_json_line_that_does_not_parse_names_the_provider() -> None:
    body = b'{"event_type":"stream-start","generation_id":"g"}\n{not json\n'
    with pytest.raises(sf.ProtocolError) as info:
        sf.fold([body], provider="cohere-v1")
    assert str(info.value).startswith("cohere-v1: line 2 is not JSON")
    assert info.value.provider == "cohere-v1"


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c.raises is sf.StreamError))
def test_a_stream_error_says_which_provider_what_and_where(name: str) -> None:
    # A logged `str(err)` must say more than the provider's bare message ("Overloaded"):
    # which provider, its code, the event and the frame, as a ProtocolError does. The
    # provider's own text stays in `.message`.
    c = CASES[name]
    errors: list[sf.StreamError] = []
    for run in (
        lambda: sf.fold([c.body], provider=c.provider),
        lambda: list(sf.events([c.body], provider=c.provider)),
        lambda: sf.fold([c.body]),
    ):
        with pytest.raises(sf.StreamError) as info:
            run()
        errors.append(info.value)
    for e in errors:
        text = str(e)
        assert e.provider is not None and text.startswith(f"{e.provider}: "), text
        assert e.message in text and e.message != text
        if e.code is not None:
            assert str(e.code) in text
        assert text.endswith(f"frame {e.position})"), text
        assert e.event is not None and f"event {e.event!r}" in text
        copied = pickle.loads(pickle.dumps(e))
        assert (str(copied), repr(copied), copied.message) == (text, repr(e), e.message)
        assert copied.event == e.event


def test_a_stream_error_names_the_event_it_came_in() -> None:
    with pytest.raises(sf.StreamError) as info:
        sf.fold([CASES["anthropic_error_event"].body], provider="anthropic")
    assert info.value.event == "error"
    assert str(info.value) == (
        "anthropic: the provider reported an error overloaded_error inside the stream: "
        "Overloaded (event 'error', frame 8)"
    )


#: Whole streams of each format, and the name auto-detection gives them.
WHOLE: dict[str, ProviderName] = {
    "openai_text": "openai",
    "anthropic_tool_use": "anthropic",
    "gemini_tool_call_stop": "gemini",
    "cohere_v2_tools": "cohere-v2",
    "responses_completed_with_call": "openai-responses",
    "onecortex_done": "onecortex",
    "clouisle_run": "clouisle",
}
#: Names that read the same format (Mistral is OpenAI's with extras).
SAME_FORMAT = {"openai": {"openai", "openai-chat", "mistral"}}


@pytest.mark.parametrize("name", sorted(WHOLE))
def test_a_stream_read_as_another_provider_says_which_it_reads_as(name: str) -> None:
    # A whole stream given the wrong `provider=` must not read as a stream cut short (a
    # caller would retry, or blame the network): the error names the format its frames
    # have, as `streamfold inspect` does.
    body, actual = CASES[name].body, WHOLE[name]
    for wrong in (
        "openai",
        "anthropic",
        "gemini",
        "cohere-v2",
        "cohere-v1",
        "openai-responses",
        "onecortex",
        "clouisle",
    ):
        if wrong in SAME_FORMAT.get(actual, {actual}):
            continue
        with pytest.raises(sf.ProtocolError) as folded:
            sf.fold([body], provider=wrong)
        with pytest.raises(sf.ProtocolError) as listed:
            list(sf.events([body], provider=wrong))
        for info in (folded, listed):
            text = str(info.value)
            assert f"read as provider={actual!r}" in text, (wrong, text)
            assert f"provider={wrong!r}" in text and f"provider={actual!r}" in text


def test_an_open_stream_its_provider_reads_keeps_no_copy_of_its_first_bytes() -> None:
    # The first bytes are kept only to explain a misread stream; an open stream the provider
    # reads must not carry them (streamfold's state per open stream stays small).
    from streamfold._engine.pipeline import Pipeline

    pipeline = Pipeline("openai")
    pipeline.feed(sse(*OPENAI_TEXT[:2]))
    assert pipeline._diagnosis._prefix == []
    misread = Pipeline("openai")
    misread.feed(CASES["anthropic_tool_use"].body[:300])
    assert misread._diagnosis._prefix


@pytest.mark.parametrize(
    ("name", "provider"),
    [
        ("openai_cut", "openai"),
        ("openai_cut", "openai-chat"),
        ("openai_cut", "mistral"),
        ("openai_tool_cut", "openai"),
        ("anthropic_cut", "anthropic"),
        ("gemini_cut", "gemini"),
        ("cohere_v2_cut_before_message_end", "cohere-v2"),
        ("cohere_v1_cut", "cohere-v1"),
        ("clouisle_run_not_ended", "clouisle"),
        ("openai_cut", "auto"),
    ],
)
def test_a_stream_cut_short_with_the_right_provider_has_no_such_hint(
    name: str, provider: ProviderName
) -> None:
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold([CASES[name].body], provider=provider)
    assert "read as provider" not in str(info.value)


def test_strict_fold_raises_on_the_onecortex_mismatch() -> None:
    with pytest.raises(sf.ProtocolError) as info:
        sf.fold([CASES["onecortex_result_mismatch"].body], provider="onecortex", strict=True)
    assert info.value.partial is not None
    assert info.value.partial.text == "You said: hello"
    assert info.value.position is not None


def test_str_is_refused() -> None:
    with pytest.raises(TypeError):
        sf.fold("data: x\n\n", provider="openai")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_a_sync_iterable_given_to_the_async_fold_says_so() -> None:
    with pytest.raises(TypeError, match=r"async iterable .* got builtins.list: .*sync twins"):
        await sf.afold([sse(*OPENAI_TEXT)], provider="openai")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"async iterable .* got builtins.tuple"):
        async for _ in sf.aevents((sse(*OPENAI_TEXT),), provider="openai"):  # type: ignore[arg-type]
            pass
    with pytest.raises(TypeError, match=r"HTTP response \(httpx.Response"):
        await sf.afold(42, provider="openai")  # type: ignore[arg-type]


# -- a character split into its two UTF-16 halves across deltas ---------------------------------


def _utf16_pieces(text: str, cuts: list[int]) -> list[str]:
    """``text`` cut at UTF-16 unit boundaries, as a JavaScript server cuts it: a cut inside an
    astral character leaves each half a lone surrogate."""
    units = text.encode("utf-16-le")
    bounds = sorted({0, len(units), *(2 * c for c in cuts if 0 < 2 * c < len(units))})
    return [units[a:b].decode("utf-16-le", "surrogatepass") for a, b in itertools.pairwise(bounds)]


def _escaped(payload: Any) -> str:
    """JSON as such servers write it: every character beyond ASCII escaped, halves included."""
    return json.dumps(payload, ensure_ascii=True)


def _openai_pieces(pieces: list[str]) -> bytes:
    frames = [(None, _escaped(chunk(choice(content=p)))) for p in pieces]
    return sse(*frames, (None, chunk(choice(finish="stop"))), done=True)


def _anthropic_pieces(pieces: list[str]) -> bytes:
    deltas = [
        (
            "content_block_delta",
            _escaped(
                anth("content_block_delta", index=0, delta={"type": "text_delta", "text": p})[1]
            ),
        )
        for p in pieces
    ]
    return sse(
        ANTHROPIC_START,
        anth("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        *deltas,
        anth("content_block_stop", index=0),
        anth("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 3}),
        anth("message_stop"),
    )


def test_a_character_split_in_two_deltas_folds_to_one() -> None:
    body = _openai_pieces(["a\ud83d", "\ude00b", "\ud83d"])
    message = sf.fold([body], provider="openai")
    # The pair is one character again; the last half stays as it came (as json.loads gives).
    assert message.text == "a\U0001f600b\ud83d"
    assert message.blocks[0].text == message.text
    # events() gives the deltas as they came: each half alone.
    deltas = [e.text for e in sf.events([body], provider="openai") if isinstance(e, sf.BlockDelta)]
    assert deltas == ["a\ud83d", "\ude00b", "\ud83d"]


@given(
    text=st.text(
        st.characters(codec="utf-8")
        | st.sampled_from(["\U0001f600", "\U0001f9e1", "\U00010348", "é", "✓"]),
        max_size=40,
    ),
    cuts=st.lists(st.integers(0, 90), max_size=30),
    provider=st.sampled_from(["openai", "anthropic"]),
    split=st.integers(1, 64),
)
def test_text_cut_by_utf16_units_folds_back_to_the_text(
    text: str, cuts: list[int], provider: ProviderName, split: int
) -> None:
    pieces = [p for p in _utf16_pieces(text, cuts) if p]
    make = _openai_pieces if provider == "openai" else _anthropic_pieces
    body = make(pieces)
    reads = [body[i : i + split] for i in range(0, len(body), split)]
    message = sf.fold(reads, provider=provider)
    assert message.text == text
    message.text.encode()  # no half is left over


# -- how input that is not a whole stream ends ---------------------------------------------------

V1_CUT = (
    b'{"is_finished":false,"event_type":"stream-start","generation_id":"g"}\n'
    b'{"is_finished":false,"event_type":"text-generation","text":"Hi"}\n'
    b'{"is_finished":false,"event_type":"text-generation","text":"the'
)


@given(cuts=st.lists(st.integers(1, len(V1_CUT) - 1), max_size=8))
def test_a_json_line_cut_by_the_end_of_input_is_an_incomplete_stream(cuts: list[int]) -> None:
    # Only the last line, without its newline, is cut: a dropped connection, not broken JSON.
    bounds = [0, *sorted(set(cuts)), len(V1_CUT)]
    reads = [V1_CUT[a:b] for a, b in itertools.pairwise(bounds)]
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold(reads, provider="cohere-v1")
    assert info.value.partial is not None
    assert info.value.partial.text == "Hi"
    assert "last line without its newline" in str(info.value)
    with pytest.raises(sf.IncompleteStreamError) as raised:
        list(sf.events(reads, provider="cohere-v1"))
    assert str(raised.value) == str(info.value)  # events() says what fold() says


def test_events_and_fold_say_alike_that_an_unterminated_event_was_discarded() -> None:
    body = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\ndata: {"id'
    with pytest.raises(sf.IncompleteStreamError) as folded:
        sf.fold([body], provider="openai")
    with pytest.raises(sf.IncompleteStreamError) as raised:
        list(sf.events([body], provider="openai"))
    assert "not terminated by a blank line" in str(folded.value)
    assert str(raised.value) == str(folded.value)


def test_a_broken_json_line_with_its_newline_is_still_a_protocol_error() -> None:
    with pytest.raises(sf.ProtocolError, match="line 3 is not JSON"):
        sf.fold([V1_CUT + b"\n"], provider="cohere-v1")


HTML_PAGE = b"<html>\n<body>502 Bad Gateway</body>\n</html>\n"


@pytest.mark.parametrize("provider", ["auto", "openai", "cohere-v2", "anthropic", "cohere-v1"])
def test_an_html_page_is_not_a_stream_cut_short(provider: ProviderName) -> None:
    # JSON lines refuse its first line as they read it; an SSE provider finds no frame.
    said = "line 1 is not JSON" if provider == "cohere-v1" else r"not an event stream.*HTML"
    with pytest.raises(sf.ProtocolError, match=said):
        sf.fold([HTML_PAGE], provider=provider)
    with pytest.raises(sf.ProtocolError):
        list(sf.events([HTML_PAGE[:5], HTML_PAGE[5:]], provider=provider))


def test_json_lines_given_to_an_sse_provider_say_so() -> None:
    body = V1_CUT.rsplit(b"\n", 1)[0] + b"\n"
    with pytest.raises(sf.ProtocolError, match=r"JSON lines .*cohere-v1"):
        sf.fold([body], provider="cohere-v2")


@pytest.mark.parametrize(
    "body",
    [b"", b"\n\n  \n", b": keep-alive\n\n", b"\xef\xbb\xbf: hi\n\n", b"dat", b"event: message-st"],
)
def test_a_stream_cut_before_its_first_frame_is_still_incomplete(body: bytes) -> None:
    with pytest.raises(sf.IncompleteStreamError):
        sf.fold([body], provider="cohere-v2")


def test_a_provider_that_is_no_name_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="provider must be a provider's name"):
        sf.fold([b"data: {}\n\n"], provider=None)  # type: ignore[arg-type]
