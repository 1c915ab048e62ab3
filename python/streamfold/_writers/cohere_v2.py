"""Cohere Chat v2 events (``event: <type>`` + ``data: {"type": <type>, ...}``, then
``data: [DONE]``).

``message-start`` carries the id; a text or reasoning block is ``content-start`` (``{"type":
"text"}`` or ``{"type": "thinking"}``), ``content-delta``, ``content-end`` under its content
index; a tool call is ``tool-call-start`` (id and name), ``tool-call-delta`` argument fragments
and ``tool-call-end`` under its tool-call index (the two are separate sequences on Cohere's
wire, each numbered from 0 in order of appearance); the tool plan is ``tool-plan-delta``.
``message-end`` (finish reason and usage) and ``[DONE]`` are written by ``close()`` after a
``MessageEnd``, so an error the source reports after it is still written: as Cohere reports
one, a ``message-end`` with ``finish_reason: "ERROR"``, ``error`` and ``error_type``.

Usage is ``{"tokens": {"input_tokens", "output_tokens"}, "cached_tokens"}``; from a Cohere
source its own usage object (with ``billed_units``) goes back as it came. Citations,
refusals and choices other than 0 are dropped.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .._core import json_frame
from .._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    MessageDelta,
    MessageEnd,
    MessageStart,
    UsageUpdate,
)
from .._parts import FinishReason, Usage
from .._providers.cohere_v2 import FINISH_REASONS
from .base import Writer, arguments_text, sse_named

__all__ = ["CohereV2Writer", "cohere_usage"]

_DONE = b"data: [DONE]\n\n"
_CONTENT = {"text": "text", "reasoning": "thinking"}


def cohere_usage(u: Usage) -> dict[str, Any]:
    tokens: dict[str, Any] = {}
    if u.input_tokens is not None:
        tokens["input_tokens"] = u.input_tokens
    if u.output_tokens is not None:
        tokens["output_tokens"] = u.output_tokens
    out: dict[str, Any] = {"tokens": tokens}
    if u.cached_tokens is not None:
        out["cached_tokens"] = u.cached_tokens
    return out


class CohereV2Writer(Writer):
    name = "cohere-v2"
    finish_values: ClassVar[dict[FinishReason, str]] = {
        "stop": "COMPLETE",
        "length": "MAX_TOKENS",
        "tool_calls": "TOOL_CALL",
        "content_filter": "ERROR_TOXIC",
        # ``ERROR`` is Cohere's in-stream error, which a finish alone is not.
        "error": "TIMEOUT",
        "refusal": "COMPLETE",
        "other": "COMPLETE",
    }
    own_finish_values: ClassVar[dict[str, FinishReason]] = {
        k: v for k, v in FINISH_REASONS.items() if k != "ERROR"
    }

    def __init__(self, provider: str | None = None, *, source: str | None = None) -> None:
        super().__init__(provider, source=source)
        #: block -> ("content" | "call" | "plan", index written)
        self._blocks: dict[int, tuple[str, int]] = {}
        self._contents = 0
        self._calls = 0
        self._templates: dict[int, tuple[bytes, bytes]] = {}
        self._finish: str | None = None
        self._done = False

    def message_start(self, ev: MessageStart) -> bytes:
        if ev.choice != 0 or ev.continued:
            return self.drop("message_start:choice" if ev.choice else "message_start:continued")
        message = {
            "role": ev.role or "assistant",
            "content": [],
            "tool_plan": "",
            "tool_calls": [],
            "citations": [],
        }
        body: dict[str, Any] = {"type": "message-start"}
        if ev.id is not None:
            body["id"] = ev.id
        body["delta"] = {"message": message}
        return sse_named("message-start", body)

    def block_start(self, ev: BlockStart) -> bytes:
        if ev.choice != 0:
            return self.drop("block:choice")
        content = _CONTENT.get(ev.kind)
        if content is not None:
            index = self._contents
            self._contents += 1
            self._blocks[ev.index] = ("content", index)
            head = (
                b'event: content-delta\ndata: {"type":"content-delta","index":%d,'
                b'"delta":{"message":{"content":{"%s":"' % (index, content.encode())
            )
            self._templates[ev.index] = (head, b'"}}}}\n\n')
            start = {"type": content, content: ""}
            out = sse_named(
                "content-start",
                {"type": "content-start", "index": index, "delta": {"message": {"content": start}}},
            )
            return out + (self._text(ev.index, ev.text) if ev.text else b"")
        if ev.kind == "tool_plan":
            self._blocks[ev.index] = ("plan", 0)
            self._templates[ev.index] = (
                b'event: tool-plan-delta\ndata: {"type":"tool-plan-delta",'
                b'"delta":{"message":{"tool_plan":"',
                b'"}}}\n\n',
            )
            return self._text(ev.index, ev.text) if ev.text else b""
        if ev.kind == "tool_call":
            index = self._calls
            self._calls += 1
            self._blocks[ev.index] = ("call", index)
            call = {
                "id": ev.id,
                "type": "function",
                "function": {"name": ev.name, "arguments": ""},
            }
            out = sse_named(
                "tool-call-start",
                {
                    "type": "tool-call-start",
                    "index": index,
                    "delta": {"message": {"tool_calls": call}},
                },
            )
            if ev.complete:
                out += self._call_delta(index, arguments_text(ev.arguments))
            return out
        return self.drop(f"block:{ev.kind}")

    def _text(self, block: int, text: str) -> bytes:
        head, tail = self._templates[block]
        return json_frame(head, text, tail)

    def _call_delta(self, index: int, fragment: str) -> bytes:
        delta = {"message": {"tool_calls": {"function": {"arguments": fragment}}}}
        return sse_named(
            "tool-call-delta", {"type": "tool-call-delta", "index": index, "delta": delta}
        )

    def block_delta(self, ev: BlockDelta) -> bytes:
        found = self._templates.get(ev.index) if ev.choice == 0 else None
        if found is not None:
            return json_frame(found[0], ev.text, found[1])
        block = self._blocks.get(ev.index) if ev.choice == 0 else None
        if block is None or block[0] != "call":
            return self.drop(f"block_delta:{ev.kind}")
        return self._call_delta(block[1], ev.text)

    def block_end(self, ev: BlockEnd) -> bytes:
        block = self._blocks.get(ev.index) if ev.choice == 0 else None
        self._templates.pop(ev.index, None)
        if block is None or block[0] == "plan":
            return b""
        name = "content-end" if block[0] == "content" else "tool-call-end"
        return sse_named(name, {"type": name, "index": block[1]})

    def usage_update(self, ev: UsageUpdate) -> bytes:
        self.usage = ev.usage
        return b""

    def message_delta(self, ev: MessageDelta) -> bytes:
        if ev.choice == 0 and ev.finish_reason is not None:
            self._finish = self.finish_value(ev.finish_reason, ev.raw_finish_reason)
        return b""

    def message_end(self, ev: MessageEnd) -> bytes:
        if ev.choice != 0:
            return self.drop("message_end:choice")
        if ev.finish_reason is not None or self._finish is None:
            self._finish = self.finish_value(ev.finish_reason or "stop", ev.raw_finish_reason)
        self.ended = True
        return b""

    def _usage(self) -> dict[str, Any]:
        u = self.usage
        if u is None:
            return {}
        if self.keep_opaque and isinstance(u.raw, dict):
            return u.raw
        return cohere_usage(u)

    def _end(self, delta: dict[str, Any]) -> bytes:
        self._done = True
        return sse_named("message-end", {"type": "message-end", "delta": delta}) + _DONE

    def close(self) -> bytes:
        if self._done or not self.ended or self.failed:
            return b""
        return self._end({"finish_reason": self._finish, "usage": self._usage()})

    def closed_terminal(self) -> bool:
        return self._done

    def write_error(self, code: str | int | None, message: str) -> bytes:
        delta: dict[str, Any] = {"finish_reason": "ERROR", "usage": self._usage(), "error": message}
        if code is not None and code != "ERROR":
            delta["error_type"] = code
        return self._end(delta)

    _dispatch: ClassVar = {
        MessageStart: message_start,
        BlockStart: block_start,
        BlockDelta: block_delta,
        BlockEnd: block_end,
        UsageUpdate: usage_update,
        MessageDelta: message_delta,
        MessageEnd: message_end,
    }
