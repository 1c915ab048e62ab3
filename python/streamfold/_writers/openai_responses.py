"""OpenAI Responses events (``event: <type>`` + ``data: {"type": <type>, ...}``).

``response.created`` carries the id and model. Each block is an output item under its own
``output_index`` (numbered from 0 in order of appearance): a text or refusal block is a
``message`` item with one content part (``response.output_text.delta`` /
``response.refusal.delta``), reasoning a ``reasoning`` item with one summary part
(``response.reasoning_summary_text.delta``), a tool call a ``function_call`` item whose
``call_id`` is the call's id, with ``response.function_call_arguments.delta`` fragments. A
block's end is its ``.done`` events and ``response.output_item.done`` with the whole item.

The terminal is written by ``close()`` after a ``MessageEnd``: ``response.completed``, or
``response.incomplete`` with ``incomplete_details.reason`` (``max_output_tokens``,
``content_filter``) for a finish the Responses API reports so, with the usage and the output
items. An error is the ``error`` event (``{"type": "error", "code", "message", "param"}``)
followed by ``response.failed``.

From a Responses source the item ids and a reasoning item's ``encrypted_content`` (its
``SignatureDelta``) go back as they came; from any other source item ids are made up
(``msg_0``, ``rs_1``, ``fc_2``: the format requires them) and no encrypted reasoning is
written. Citations, tool plans and choices other than 0 are dropped.
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
    SignatureDelta,
    UsageUpdate,
)
from .._parts import FinishReason, Usage
from .base import Writer, arguments_text, sse_named

__all__ = ["OpenAIResponsesWriter", "responses_usage"]

#: Normalized finish -> ``incomplete_details.reason`` (others are ``response.completed``).
_INCOMPLETE: dict[str, str] = {"length": "max_output_tokens", "content_filter": "content_filter"}


def responses_usage(u: Usage) -> dict[str, Any]:
    out: dict[str, Any] = {"input_tokens": u.input_tokens or 0}
    if u.cached_tokens is not None:
        out["input_tokens_details"] = {"cached_tokens": u.cached_tokens}
    out["output_tokens"] = u.output_tokens or 0
    if u.reasoning_tokens is not None:
        out["output_tokens_details"] = {"reasoning_tokens": u.reasoning_tokens}
    out["total_tokens"] = (
        u.total_tokens
        if u.total_tokens is not None
        else (u.input_tokens or 0) + (u.output_tokens or 0)
    )
    return out


class _Item:
    __slots__ = ("item", "kind", "output_index", "signature", "texts")

    def __init__(self, item: dict[str, Any], kind: str, output_index: int) -> None:
        self.item = item
        self.kind = kind
        self.output_index = output_index
        self.texts: list[str] = []
        self.signature: str | None = None


class OpenAIResponsesWriter(Writer):
    name = "openai-responses"
    finish_values: ClassVar[dict[FinishReason, str]] = {
        "stop": "completed",
        "tool_calls": "completed",
        "refusal": "completed",
        "error": "completed",
        "other": "completed",
        "length": "max_output_tokens",
        "content_filter": "content_filter",
    }

    def __init__(self, provider: str | None = None, *, source: str | None = None) -> None:
        super().__init__(provider, source=source)
        self._response: dict[str, Any] = {}
        self._items: dict[int, _Item] = {}
        self._output: list[dict[str, Any]] = []
        self._templates: dict[int, tuple[bytes, bytes]] = {}
        self._finish: FinishReason | None = None
        self._done = False

    def _event(self, name: str, body: dict[str, Any]) -> bytes:
        return sse_named(name, {"type": name, **body})

    def message_start(self, ev: MessageStart) -> bytes:
        if ev.choice != 0 or ev.continued:
            return self.drop("message_start:choice" if ev.choice else "message_start:continued")
        self._response = {
            "id": ev.id,
            "object": "response",
            "created_at": (ev.metadata or {}).get("created_at", 0),
            "status": "in_progress",
            "model": ev.model,
            "output": [],
        }
        return self._event("response.created", {"response": self._response})

    def _item_id(self, ev: BlockStart, prefix: str) -> str:
        given = (ev.extra or {}).get("item_id") if self.keep_opaque else None
        return given if isinstance(given, str) else f"{prefix}_{len(self._items)}"

    def block_start(self, ev: BlockStart) -> bytes:
        if ev.choice != 0:
            return self.drop("block:choice")
        n = len(self._items)
        kind = ev.kind
        item: dict[str, Any]
        extra: tuple[dict[str, Any], bytes] | None
        if kind in ("text", "refusal"):
            item = {
                "id": self._item_id(ev, "msg"),
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            }
            part = (
                {"type": "output_text", "text": "", "annotations": []}
                if kind == "text"
                else {"type": "refusal", "refusal": ""}
            )
            delta_name = (
                "response.output_text.delta" if kind == "text" else "response.refusal.delta"
            )
            extra = (
                {"part": part, "content_index": 0},
                b',"content_index":0,"delta":"',
            )
        elif kind == "reasoning":
            item = {"id": self._item_id(ev, "rs"), "type": "reasoning", "summary": []}
            delta_name = "response.reasoning_summary_text.delta"
            extra = (
                {"part": {"type": "summary_text", "text": ""}, "summary_index": 0},
                b',"summary_index":0,"delta":"',
            )
        elif kind == "tool_call":
            item = {
                "id": self._item_id(ev, "fc"),
                "type": "function_call",
                "status": "in_progress",
                "arguments": "",
                "call_id": ev.id,
                "name": ev.name,
            }
            delta_name = "response.function_call_arguments.delta"
            extra = None
        else:
            return self.drop(f"block:{kind}")
        state = self._items[ev.index] = _Item(item, kind, n)
        out = self._event("response.output_item.added", {"output_index": n, "item": item})
        head = b'event: %s\ndata: {"type":"%s","item_id":%s,"output_index":%d' % (
            delta_name.encode(),
            delta_name.encode(),
            _quoted(item["id"]),
            n,
        )
        if extra is not None:
            body, middle = extra
            added = (
                "response.content_part.added"
                if kind != "reasoning"
                else "response.reasoning_summary_part.added"
            )
            out += self._event(added, {"item_id": item["id"], "output_index": n, **body})
            self._templates[ev.index] = (head + middle, b'"}\n\n')
            if ev.text:
                state.texts.append(ev.text)
                out += json_frame(head + middle, ev.text, b'"}\n\n')
        else:
            self._templates[ev.index] = (head + b',"delta":"', b'"}\n\n')
            if ev.complete:
                text = arguments_text(ev.arguments)
                state.texts.append(text)
                out += json_frame(head + b',"delta":"', text, b'"}\n\n')
        return out

    def block_delta(self, ev: BlockDelta) -> bytes:
        found = self._templates.get(ev.index) if ev.choice == 0 else None
        if found is None:
            return self.drop(f"block_delta:{ev.kind}")
        self._items[ev.index].texts.append(ev.text)
        return json_frame(found[0], ev.text, found[1])

    def signature(self, ev: SignatureDelta) -> bytes:
        state = self._items.get(ev.index) if ev.choice == 0 else None
        if not self.keep_opaque or state is None or state.kind != "reasoning":
            return self.drop("signature")
        state.signature = ev.signature
        return b""

    def block_end(self, ev: BlockEnd) -> bytes:
        state = self._items.get(ev.index) if ev.choice == 0 else None
        if state is None or self._templates.pop(ev.index, None) is None:
            return b""
        text = "".join(state.texts)
        item = dict(state.item)
        n = state.output_index
        ids = {"item_id": item["id"], "output_index": n}
        out = b""
        if state.kind in ("text", "refusal"):
            key = "text" if state.kind == "text" else "refusal"
            part = (
                {"type": "output_text", "text": text, "annotations": []}
                if key == "text"
                else {"type": "refusal", "refusal": text}
            )
            done = "response.output_text.done" if key == "text" else "response.refusal.done"
            out += self._event(done, {**ids, "content_index": 0, key: text})
            out += self._event(
                "response.content_part.done", {**ids, "content_index": 0, "part": part}
            )
            item["status"] = "completed"
            item["content"] = [part]
        elif state.kind == "reasoning":
            part = {"type": "summary_text", "text": text}
            out += self._event(
                "response.reasoning_summary_text.done", {**ids, "summary_index": 0, "text": text}
            )
            out += self._event(
                "response.reasoning_summary_part.done", {**ids, "summary_index": 0, "part": part}
            )
            item["summary"] = [part] if text else []
            if state.signature is not None:
                item["encrypted_content"] = state.signature
        else:
            out += self._event("response.function_call_arguments.done", {**ids, "arguments": text})
            item["status"] = "completed"
            item["arguments"] = text
        self._output.append(item)
        return out + self._event("response.output_item.done", {"output_index": n, "item": item})

    def usage_update(self, ev: UsageUpdate) -> bytes:
        self.usage = ev.usage
        return b""

    def message_delta(self, ev: MessageDelta) -> bytes:
        if ev.choice == 0:
            self._finish = ev.finish_reason
        return b""

    def message_end(self, ev: MessageEnd) -> bytes:
        if ev.choice != 0:
            return self.drop("message_end:choice")
        if ev.finish_reason is not None:
            self._finish = ev.finish_reason
        self.ended = True
        return b""

    def _final(self, status: str) -> dict[str, Any]:
        response = {**self._response, "status": status, "output": self._output}
        if self.usage is not None:
            response["usage"] = responses_usage(self.usage)
        return response

    def close(self) -> bytes:
        if self._done or not self.ended or self.failed:
            return b""
        self._done = True
        reason = _INCOMPLETE.get(self._finish or "stop")
        if reason is None:
            return self._event("response.completed", {"response": self._final("completed")})
        response = self._final("incomplete")
        response["incomplete_details"] = {"reason": reason}
        return self._event("response.incomplete", {"response": response})

    def closed_terminal(self) -> bool:
        return self._done

    def write_error(self, code: str | int | None, message: str) -> bytes:
        self._done = True
        error = {"code": code, "message": message}
        response = self._final("failed")
        response["error"] = error
        return self._event("error", {**error, "param": None}) + self._event(
            "response.failed", {"response": response}
        )

    _dispatch: ClassVar = {
        MessageStart: message_start,
        BlockStart: block_start,
        BlockDelta: block_delta,
        SignatureDelta: signature,
        BlockEnd: block_end,
        UsageUpdate: usage_update,
        MessageDelta: message_delta,
        MessageEnd: message_end,
    }


def _quoted(text: str) -> bytes:
    return json_frame(b'"', text, b'"')
