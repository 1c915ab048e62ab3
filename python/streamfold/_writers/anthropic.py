"""Anthropic Messages events (``event: <type>`` + ``data: {"type": <type>, ...}``).

``message_start`` carries the id, model and the usage known at the start (the writer holds it
until the first event that is not a ``UsageUpdate``, which is where Anthropic's own first usage
comes from); each block is ``content_block_start`` / ``content_block_delta`` /
``content_block_stop`` under its own index, numbered from 0 in order of appearance: ``text``
(``text_delta``), ``thinking`` (``thinking_delta``; ``signature_delta`` only from an Anthropic
source), ``tool_use`` with ``input: {}`` then ``input_json_delta`` fragments (a call that came
whole is one fragment). ``message_delta`` (the ``stop_reason`` and the latest usage) and
``message_stop`` are written by ``close()`` after a ``MessageEnd``, so that an error the
source reports after it is still written as one; a stream cut after a ``MessageDelta`` gets
its ``message_delta`` (it arrived) and no ``message_stop``. An error is ``event: error`` with
``{"type": "error", "error": {"type", "message"}}``.

From an Anthropic source the blocks only Anthropic has (``redacted_thinking``, server tools
and their results, other block types) are written back verbatim; from any other source they
are dropped, as are citations, refusals, tool plans and choices other than 0.
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
from .._providers.anthropic import STOP_REASONS
from .base import Writer, arguments_text, sse_named

__all__ = ["AnthropicWriter", "anthropic_usage"]

_DELTA = b"event: content_block_delta\ndata: "
_DELTA_TYPES = {"text": ("text_delta", "text"), "reasoning": ("thinking_delta", "thinking")}


def anthropic_usage(u: Usage) -> dict[str, Any]:
    """:class:`Usage` -> Anthropic ``usage``: its ``input_tokens`` leave out the cached
    prompt tokens (``cache_read_input_tokens``), which the reader adds back."""
    out: dict[str, Any] = {}
    if u.input_tokens is not None:
        out["input_tokens"] = u.input_tokens - (u.cached_tokens or 0)
    if u.cached_tokens is not None:
        out["cache_read_input_tokens"] = u.cached_tokens
    out["output_tokens"] = u.output_tokens or 0
    if u.reasoning_tokens is not None:
        out["output_tokens_details"] = {"reasoning_tokens": u.reasoning_tokens}
    return out


class AnthropicWriter(Writer):
    name = "anthropic"
    finish_values: ClassVar[dict[FinishReason, str]] = {
        "stop": "end_turn",
        "length": "max_tokens",
        "tool_calls": "tool_use",
        "refusal": "refusal",
        "content_filter": "refusal",
        "error": "end_turn",
        "other": "end_turn",
    }
    own_finish_values: ClassVar[dict[str, FinishReason]] = STOP_REASONS

    def __init__(self, provider: str | None = None, *, source: str | None = None) -> None:
        super().__init__(provider, source=source)
        self._start: MessageStart | None = None
        #: source block index -> (index written, kind).
        self._blocks: dict[int, tuple[int, str]] = {}
        #: source block index -> (head, tail) of its text deltas.
        self._templates: dict[int, tuple[bytes, bytes]] = {}
        self._stop_reason: str | None = None
        self._delta_data: Any = None
        self._stopped = False

    def _opening(self) -> bytes:
        """The held ``message_start``, once."""
        start, self._start = self._start, None
        if start is None:
            return b""
        message: dict[str, Any] = {
            "id": start.id,
            "type": "message",
            "role": start.role or "assistant",
            "model": start.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
        }
        if self.usage is not None:
            message["usage"] = anthropic_usage(self.usage)
        return sse_named("message_start", {"type": "message_start", "message": message})

    def message_start(self, ev: MessageStart) -> bytes:
        if ev.choice != 0 or ev.continued:
            return self.drop("message_start:choice" if ev.choice else "message_start:continued")
        self._start = ev
        return b""

    def usage_update(self, ev: UsageUpdate) -> bytes:
        self.usage = ev.usage
        return b""

    def block_start(self, ev: BlockStart) -> bytes:
        out = self._opening()
        if ev.choice != 0:
            return out + self.drop("block:choice")
        index = len(self._blocks)
        block: dict[str, Any]
        fragment = None
        if ev.kind == "text":
            block = {"type": "text", "text": ""}
        elif ev.kind == "reasoning" and not ev.complete:
            block = {"type": "thinking", "thinking": "", "signature": ""}
        elif ev.kind == "tool_call":
            block = {"type": "tool_use", "id": ev.id, "name": ev.name, "input": {}}
            if self.keep_opaque and ev.extra:
                block |= ev.extra
            if ev.complete:
                fragment = arguments_text(ev.arguments)
        elif self.keep_opaque and isinstance(ev.data, dict) and "type" in ev.data:
            # A block only Anthropic has, from Anthropic: back as it came.
            block = ev.data
        else:
            return out + self.drop(f"block:{ev.kind}")
        self._blocks[ev.index] = (index, ev.kind)
        out += sse_named(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": block},
        )
        kinds = _DELTA_TYPES.get(ev.kind)
        if kinds is not None and block["type"] in ("text", "thinking"):
            head = b'%s{"type":"content_block_delta","index":%d,"delta":{"type":"%s","%s":"' % (
                _DELTA,
                index,
                kinds[0].encode(),
                kinds[1].encode(),
            )
            self._templates[ev.index] = (head, b'"}}\n\n')
            if ev.text:
                out += json_frame(head, ev.text, b'"}}\n\n')
        elif fragment is not None:
            out += self._json_delta(index, fragment)
        return out

    def _json_delta(self, index: int, fragment: str) -> bytes:
        delta = {"type": "input_json_delta", "partial_json": fragment}
        return sse_named(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        )

    def block_delta(self, ev: BlockDelta) -> bytes:
        found = self._templates.get(ev.index)
        if found is not None and ev.choice == 0:
            return json_frame(found[0], ev.text, found[1])
        block = self._blocks.get(ev.index) if ev.choice == 0 else None
        if block is None or block[1] not in ("tool_call", "server_tool"):
            return self.drop(f"block_delta:{ev.kind}")
        return self._json_delta(block[0], ev.text)

    def signature(self, ev: SignatureDelta) -> bytes:
        block = self._blocks.get(ev.index) if ev.choice == 0 else None
        if not self.keep_opaque or block is None or block[1] != "reasoning":
            return self.drop("signature")
        delta = {"type": "signature_delta", "signature": ev.signature}
        return sse_named(
            "content_block_delta",
            {"type": "content_block_delta", "index": block[0], "delta": delta},
        )

    def block_end(self, ev: BlockEnd) -> bytes:
        block = self._blocks.get(ev.index) if ev.choice == 0 else None
        if block is None:
            return b""
        self._templates.pop(ev.index, None)
        return sse_named("content_block_stop", {"type": "content_block_stop", "index": block[0]})

    def message_delta(self, ev: MessageDelta) -> bytes:
        if ev.choice != 0:
            return self.drop("message_delta:choice")
        self._stop_reason = (
            None
            if ev.finish_reason is None
            else self.finish_value(ev.finish_reason, ev.raw_finish_reason)
        )
        self._delta_data = ev.data
        return b""

    def _message_delta(self) -> bytes:
        if self._stop_reason is None:
            return b""
        delta: dict[str, Any] = {"stop_reason": self._stop_reason, "stop_sequence": None}
        if self.keep_opaque and isinstance(self._delta_data, dict):
            delta |= self._delta_data
        self._stop_reason = None
        body: dict[str, Any] = {"type": "message_delta", "delta": delta}
        if self.usage is not None:
            body["usage"] = anthropic_usage(self.usage)
        return sse_named("message_delta", body)

    def message_end(self, ev: MessageEnd) -> bytes:
        if ev.choice != 0:
            return self.drop("message_end:choice")
        if self.ended:
            return b""
        out = self._opening()
        if ev.finish_reason is not None or self._stop_reason is None:
            self._stop_reason = self.finish_value(ev.finish_reason or "stop", ev.raw_finish_reason)
        if self.keep_opaque and isinstance(ev.data, dict):
            self._delta_data = ev.data
        self.ended = True
        return out

    def close(self) -> bytes:
        # The terminal waits for the close: an error the source reports after its message
        # ended (OpenRouter sends one before its ``[DONE]``) is still written as one.
        out = self._opening() + self._message_delta()
        if self.ended and not self.failed and not self._stopped:
            self._stopped = True
            out += b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
        return out

    def closed_terminal(self) -> bool:
        return self._stopped

    def write_error(self, code: str | int | None, message: str) -> bytes:
        error = {"type": code if code is not None else "api_error", "message": message}
        out = self._opening() + self._message_delta()
        return out + sse_named("error", {"type": "error", "error": error})

    _dispatch: ClassVar = {
        MessageStart: message_start,
        UsageUpdate: usage_update,
        BlockStart: block_start,
        BlockDelta: block_delta,
        SignatureDelta: signature,
        BlockEnd: block_end,
        MessageDelta: message_delta,
        MessageEnd: message_end,
    }
