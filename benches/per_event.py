"""The workload services run (issue 21): each SSE event its own read, short streams, asyncio.

A model server flushes every token as its own write, so a client reads one event per read, and
most answers are short (a tool-call turn, a classification, a paragraph: 20 to 500 events).
This module makes those streams, as the lists of reads a client gets, and the hand-written
pure-Python folds they are measured against, sync and async (``minimal.py``'s approach:
``split(b"\\n\\n")`` on a remainder, ``bytes.decode``, ``orjson.loads``, a dictionary fold that
handles what the stream holds: text, tool-call arguments by index, finish reason, usage).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from minimal import MinimalSSE

#: The stream lengths of the table, in events (each one read).
SIZES = (5, 50, 500, 10_000)
#: The streams: OpenAI Chat text, Anthropic text, OpenAI Chat parallel tool calls.
KINDS = ("openai-text", "anthropic-text", "openai-tools")
PROVIDER = {"openai-text": "openai", "anthropic-text": "anthropic", "openai-tools": "openai"}

_WORDS = [
    "",
    "The",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "the",
    "lazy",
    "dog;",
    "naïve",
    "café",
    "déjà",
    "vu,",
    "Привет",
    "мир,",
    "你好世界",
    "😀",
    "and",
    "then",
    "it",
    "keeps",
    "on",
    "running",
    "far",
    "away",
]
_BASE = {
    "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
    "object": "chat.completion.chunk",
    "created": 1741569952,
    "model": "gpt-4o-2024-08-06",
    "system_fingerprint": "fp_eb9dce56a8",
}


def _dumps(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Reads:
    """One stream as a client reads it, and what its fold holds."""

    kind: str
    reads: list[bytes]
    text: str
    #: ``(name, arguments)`` of each tool call, in order.
    calls: list[tuple[str, Any]]
    finish: str

    @property
    def events(self) -> int:
        return len(self.reads)

    @property
    def size(self) -> int:
        return sum(map(len, self.reads))


def _word(i: int) -> str:
    return " " + _WORDS[i % len(_WORDS)]


def _chat(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    return f"data: {_dumps({**_BASE, 'choices': [choice]})}\n\n".encode()


def _chat_end(events: int, finish: str) -> list[bytes]:
    usage = {"prompt_tokens": 812, "completion_tokens": events, "total_tokens": 812 + events}
    return [
        _chat({}, finish),
        f"data: {_dumps({**_BASE, 'choices': [], 'usage': usage})}\n\n".encode(),
        b"data: [DONE]\n\n",
    ]


def openai_text(events: int) -> Reads:
    """A role chunk, ``events - 4`` text deltas, the finish chunk, the usage chunk, ``[DONE]``."""
    words = [_word(i) for i in range(max(1, events - 4))]
    reads = [_chat({"role": "assistant", "content": "", "refusal": None})]
    reads += [_chat({"content": w}) for w in words]
    reads += _chat_end(events, "stop")
    return Reads("openai-text", reads, "".join(words), [], "stop")


def anthropic_text(events: int) -> Reads:
    """``message_start``, a text block of ``events - 5`` deltas (at least one, so the smallest
    stream has 6 events), ``message_delta``, ``message_stop``."""

    def ev(name: str, body: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {_dumps({'type': name, **body})}\n\n".encode()

    message = {
        "id": "msg_0138UNF3YbNp49KkqZtUBWqz",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 506, "output_tokens": 1},
    }
    words = [_word(i) for i in range(max(1, events - 5))]
    block = {"type": "text", "text": ""}
    reads = [
        ev("message_start", {"message": message}),
        ev("content_block_start", {"index": 0, "content_block": block}),
    ]
    reads += [
        ev("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": w}})
        for w in words
    ]
    reads += [
        ev("content_block_stop", {"index": 0}),
        ev(
            "message_delta",
            {
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": events},
            },
        ),
        ev("message_stop", {}),
    ]
    return Reads("anthropic-text", reads, "".join(words), [], "end_turn")


def openai_tools(events: int) -> Reads:
    """Parallel tool calls (one, two or three by length), each opened by a chunk with its id
    and name, its arguments in fragments of a few characters; then finish, usage, ``[DONE]``."""
    n_calls = 1 if events < 10 else 2 if events < 50 else 3
    n_fragments = max(0, events - 4 - n_calls)
    names = ["get_weather", "search_docs", "write_file"][:n_calls]
    args = [
        {"city": "Paris", "days": 3, "units": "metric", "query": "x" * (events // 2 + i)}
        for i in range(n_calls)
    ]
    texts = [_dumps(a) for a in args]
    reads = [_chat({"role": "assistant", "content": None, "refusal": None})]
    per_call = [n_fragments // n_calls + (i < n_fragments % n_calls) for i in range(n_calls)]
    for i, (name, text, count) in enumerate(zip(names, texts, per_call, strict=True)):
        first = "" if count else text
        call = {
            "index": i,
            "id": f"call_{i}DdmO9pD3xa9XTPNJ32zg2hcA",
            "type": "function",
            "function": {"name": name, "arguments": first},
        }
        reads.append(_chat({"tool_calls": [call]}))
        cuts = [len(text) * k // count for k in range(count + 1)] if count else []
        for a, b in itertools.pairwise(cuts):
            fragment = {"index": i, "function": {"arguments": text[a:b]}}
            reads.append(_chat({"tool_calls": [fragment]}))
    reads += _chat_end(events, "tool_calls")
    calls = list(zip(names, args, strict=True))
    return Reads("openai-tools", reads, "", calls, "tool_calls")


MAKERS = {
    "openai-text": openai_text,
    "anthropic-text": anthropic_text,
    "openai-tools": openai_tools,
}


def reads(kind: str, events: int) -> Reads:
    return MAKERS[kind](events)


async def aiter_reads(chunks: Iterable[bytes]) -> AsyncIterator[bytes]:
    """The reads as an async generator, as an HTTP client's body iterator hands them out."""
    for chunk in chunks:
        yield chunk


# -- the hand-written folds ---------------------------------------------------------------------


def _openai_frame(data: str, state: dict[str, Any]) -> None:
    if data == "[DONE]":
        state["done"] = True
        return
    obj = orjson.loads(data)
    for choice in obj["choices"]:
        delta = choice["delta"]
        content = delta.get("content")
        if content:
            state["text"].append(content)
        tool_calls = delta.get("tool_calls")
        if tool_calls:
            calls = state["calls"]
            for tc in tool_calls:
                fn = tc.get("function") or {}
                call = calls.get(tc["index"])
                if call is None:
                    call = calls[tc["index"]] = {"id": tc.get("id"), "name": fn.get("name")}
                    call["args"] = []
                fragment = fn.get("arguments")
                if fragment:
                    call["args"].append(fragment)
        if choice.get("finish_reason"):
            state["finish"] = choice["finish_reason"]
    if obj.get("usage"):
        state["usage"] = obj["usage"]


def _anthropic_frame(event: str, data: str, state: dict[str, Any]) -> None:
    if event == "ping":
        return
    obj = orjson.loads(data)
    kind = obj["type"]
    if kind == "content_block_delta":
        delta = obj["delta"]
        parts = state["blocks"][obj["index"]]["parts"]
        if delta["type"] == "text_delta":
            parts.append(delta["text"])
        elif delta["type"] == "input_json_delta":
            parts.append(delta["partial_json"])
    elif kind == "content_block_start":
        state["blocks"][obj["index"]] = {**obj["content_block"], "parts": []}
    elif kind == "message_start":
        state["message"] = obj["message"]
        state["usage"].update(obj["message"].get("usage") or {})
    elif kind == "message_delta":
        state["finish"] = obj["delta"].get("stop_reason")
        state["usage"].update({k: v for k, v in obj.get("usage", {}).items() if v is not None})
    elif kind == "message_stop":
        state["done"] = True
    elif kind == "error":
        raise RuntimeError(obj["error"])


def _new_state() -> dict[str, Any]:
    return {
        "text": [],
        "calls": {},
        "blocks": {},
        "message": {},
        "usage": {},
        "finish": None,
        "done": False,
    }


def _openai_result(state: dict[str, Any]) -> dict[str, Any]:
    calls = state["calls"]
    tools = [
        (calls[i]["name"], orjson.loads("".join(calls[i]["args"]) or "{}")) for i in sorted(calls)
    ]
    return {"text": "".join(state["text"]), "calls": tools, "finish": state["finish"]}


def _anthropic_result(state: dict[str, Any]) -> dict[str, Any]:
    text, tools = [], []
    for index in sorted(state["blocks"]):
        block = state["blocks"][index]
        if block["type"] == "text":
            text.append("".join(block["parts"]))
        elif block["type"] == "tool_use":
            tools.append((block["name"], orjson.loads("".join(block["parts"]) or "{}")))
    return {"text": "".join(text), "calls": tools, "finish": state["finish"]}


# The loops are written out, not shared through a helper, as a careful programmer writes them:
# a call per read would be a cost the hand-written fold does not have.


def fold(kind: str, chunks: Iterator[bytes]) -> dict[str, Any]:
    dec = MinimalSSE()
    state = _new_state()
    if PROVIDER[kind] == "openai":
        for chunk in chunks:
            for _event, data in dec.feed(chunk):
                _openai_frame(data, state)
        return _openai_result(state)
    for chunk in chunks:
        for event, data in dec.feed(chunk):
            _anthropic_frame(event, data, state)
    return _anthropic_result(state)


async def afold(kind: str, chunks: AsyncIterator[bytes]) -> dict[str, Any]:
    dec = MinimalSSE()
    state = _new_state()
    if PROVIDER[kind] == "openai":
        async for chunk in chunks:
            for _event, data in dec.feed(chunk):
                _openai_frame(data, state)
        return _openai_result(state)
    async for chunk in chunks:
        for event, data in dec.feed(chunk):
            _anthropic_frame(event, data, state)
    return _anthropic_result(state)


def events(kind: str, chunks: Iterator[bytes]) -> int:
    """The minimal framer, ``orjson.loads`` of each payload and a ``match`` on its type into a
    small tuple per event: what a hand-written event loop does. Returns how many it made."""
    dec = MinimalSSE()
    loads = orjson.loads
    made = 0
    for chunk in chunks:
        for event, data in dec.feed(chunk):
            if data == "[DONE]":
                made += 1
                continue
            obj = loads(data)
            match event if event != "message" else "chunk":
                case "chunk":
                    choices = obj["choices"]
                    delta = choices[0]["delta"] if choices else {}
                    item: tuple[str, Any] = ("delta", delta.get("content") or delta)
                case "content_block_delta":
                    item = ("delta", obj["delta"])
                case "message_start" | "content_block_start" | "content_block_stop":
                    item = ("start", obj)
                case _:
                    item = ("other", obj)
            made += item is not None
    return made
