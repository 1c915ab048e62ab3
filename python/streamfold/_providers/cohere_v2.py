"""Cohere Chat v2 (``POST /v2/chat``, ``"stream": true``): typed SSE events.

Wire format (WIRE_FORMATS.md §1; cohere-python ``src/cohere/v2/types/v2chat_stream_response.py``)::

    event: message-start    {"id", "delta": {"message": {"role": "assistant", ...}}}
    event: content-start    {"index", "delta": {"message": {"content": {"type": "text"|…}}}}
    event: content-delta    {"index", "delta": {"message": {"content": {"text"|"thinking": "…"}}},
                             "logprobs"?: {"text"?, "token_ids", "logprobs"?}}
    event: content-end      {"index"}
    event: tool-plan-delta  {"delta": {"message": {"tool_plan": "…"}}}          (no index)
    event: tool-call-start  {"index", "delta": {"message": {"tool_calls": {id, function: {name}}}}}
    event: tool-call-delta  {"index", "delta": {"message": {"tool_calls": {function: {arguments}}}}}
    event: tool-call-end    {"index"}
    event: citation-start   {"index", "delta": {"message": {"citations": {start, end, …}}}}
    event: citation-end     {"index"}
    event: message-end      {"delta": {"finish_reason", "usage", "error"?, "error_type"?}}
    event: debug            {"prompt"}
    data: [DONE]                                   (after message-end; ordinary data, ignored)

The payload ``type`` is authoritative (the SDK ignores the ``event:`` name); the ``event:`` name
is the fallback. ``tool_calls`` and ``citations`` inside deltas are single objects, not lists.

Block indices. Content indices, tool-call indices and citation indices are three separate
sequences on the wire; each content block, tool call and tool plan becomes its own block,
numbered 0, 1, … in order of appearance. The tool plan has no start or end event: its block
(kind ``tool_plan``) opens at the first ``tool-plan-delta`` and closes when another block
opens or at ``message-end``.

Citations. A citation becomes ``CitationAdded`` at ``citation-start`` (``citation-end`` only
closes the span). ``start``/``end`` are character offsets into the text of the block cited,
end-exclusive (``end - start == len(text)`` in every capture). The block is picked as:
``content_index`` when the citation carries it; else by its ``type``: ``PLAN`` -> the latest
tool-plan block, ``THINKING_CONTENT`` -> the latest reasoning block, ``TEXT_CONTENT`` or no
type (2024-25 streams) -> the latest text block (citations arrive after the text they cite).

Log-probabilities. A ``content-delta``'s ``logprobs`` (the fragment's tokens, sent when the
request asks for them) is its ``BlockDelta.logprobs``, as delivered.

Usage. ``message-end.delta.usage.tokens`` gives the token counts; ``billed_units`` (a different,
smaller number) stays in ``Usage.raw`` and is never used as a fallback (as vercel/ai decided in
@ai-sdk/cohere 3.0.76). Errors: ``finish_reason: "ERROR"`` carries ``error`` and ``error_type``
and raises ``StreamError`` (code = ``error_type``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from .._errors import StreamError
from .._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    CitationAdded,
    Event,
    MessageEnd,
    Notice,
    UsageUpdate,
)
from .._parts import BlockKind, Citation, FinishReason, Usage
from ._fast import text_delta
from .base import Provider

__all__ = ["FINISH_REASONS", "CohereV2", "usage_from_tokens"]

#: ``message-end.delta.finish_reason`` -> normalized finish reason.
#: Sources: cohere-python ``src/cohere/types/chat_finish_reason.py`` (v2 ``ChatFinishReason``:
#: COMPLETE, STOP_SEQUENCE, MAX_TOKENS, TOOL_CALL, ERROR, TIMEOUT); the v1 ``FinishReason``
#: values (``src/cohere/types/finish_reason.py``) are accepted too, in case v2 reuses them.
#: ERROR never reaches a ``MessageEnd``: it raises ``StreamError``. TIMEOUT is a failure that
#: carries no error message, so it ends the message with ``error`` rather than raising.
FINISH_REASONS: dict[str, FinishReason] = {
    "COMPLETE": "stop",
    "STOP_SEQUENCE": "stop",
    "MAX_TOKENS": "length",
    "TOOL_CALL": "tool_calls",
    "ERROR": "error",
    "TIMEOUT": "error",
    "ERROR_LIMIT": "length",
    "ERROR_TOXIC": "content_filter",
    "USER_CANCEL": "other",
}

#: Finish reasons that cut the answer short where it stood: a block left open by them was cut,
#: not forgotten (the fold marks such a call incomplete), so it breaks no ordering rule.
CUT_SHORT = frozenset({"MAX_TOKENS", "TIMEOUT"})

#: ``content-start`` content ``type`` -> block kind.
CONTENT_KINDS: dict[str, BlockKind] = {"text": "text", "thinking": "reasoning"}

#: Citation ``type`` -> kind of the block it cites (cohere-python ``citation_type.py``).
CITATION_KINDS: dict[str, BlockKind] = {
    "TEXT_CONTENT": "text",
    "THINKING_CONTENT": "reasoning",
    "PLAN": "tool_plan",
}

_Handler = Callable[[Any, dict[str, Any], Any, list[Event]], None]


def count_of(value: Any) -> int | None:
    """A token count: integers on the wire, floats in the SDK models."""
    if value.__class__ is int:
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def usage_from_tokens(usage: Any) -> Usage:
    """Cohere usage (v2 ``usage``, v1 ``meta``) -> :class:`Usage`; the object itself is ``raw``."""
    tokens = usage.get("tokens") if isinstance(usage, dict) else None
    if not isinstance(tokens, dict):
        tokens = {}
    input_tokens = count_of(tokens.get("input_tokens"))
    output_tokens = count_of(tokens.get("output_tokens"))
    total = (
        input_tokens + output_tokens
        if input_tokens is not None and output_tokens is not None
        else None
    )
    cached = count_of(usage.get("cached_tokens")) if isinstance(usage, dict) else None
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=total,
        cached_tokens=cached,
        raw=usage,
    )


class CohereV2(Provider):
    """Cohere Chat v2 stream -> events."""

    name: ClassVar[str] = "cohere-v2"

    #: Event type -> handler, called as ``handler(self, …)`` (see the end of the module).
    _ON: ClassVar[dict[str, _Handler]]

    def __init__(self, *, strict: bool = False) -> None:
        super().__init__(strict=strict)
        self._started = False
        self._next_block = 0
        #: content index -> block index; tool-call index -> block index.
        self._content: dict[int, int] = {}
        self._calls: dict[int, int] = {}
        #: block index -> kind, for every block; the blocks still open.
        self._kinds: dict[int, BlockKind] = {}
        self._open: set[int] = set()
        self._plan: int | None = None
        #: Latest block of each kind, for citations without ``content_index``.
        self._latest: dict[BlockKind, int] = {}

    # -- the frame loop ----------------------------------------------------------------------

    def handle(self, frame: Any, out: list[Event]) -> None:
        if frame.data == "[DONE]":
            return
        payload = self.json_object(frame)
        event_type = payload.get("type")
        if type(event_type) is not str:
            event_type = frame.event
        if self.terminal_seen:
            self.violation("event after message-end", out, event=event_type, raw=frame)
        if not self._started and event_type != "message-start":
            self.violation("stream does not begin with message-start", out, event=event_type)
            self._started = True
            self.start_message(out, frame)
        handler = self._ON.get(event_type)
        if handler is None:
            self.unknown(event_type, out, frame)
            return
        try:
            handler(self, payload, frame, out)
        except (KeyError, TypeError, AttributeError, IndexError) as exc:
            raise self.protocol_error(
                f"malformed payload ({exc.__class__.__name__}: {exc})", event=event_type, raw=frame
            ) from None

    # -- blocks ------------------------------------------------------------------------------

    def _open_block(self, kind: BlockKind, frame: Any, out: list[Event], **fields: Any) -> int:
        self._close_plan(frame, out)
        index = self._next_block
        self._next_block = index + 1
        self._kinds[index] = kind
        self._open.add(index)
        self._latest[kind] = index
        out.append(BlockStart(index=index, kind=kind, raw=frame, **fields))
        return index

    def _close(self, index: int, frame: Any, out: list[Event]) -> None:
        self._open.discard(index)
        out.append(BlockEnd(index=index, kind=self._kinds[index], raw=frame))

    def _close_plan(self, frame: Any, out: list[Event]) -> None:
        if self._plan is not None:
            index, self._plan = self._plan, None
            self._close(index, frame, out)

    def _block_for(
        self, table: dict[int, int], index: int, what: str, event: str, out: list[Event]
    ) -> int:
        block = table.get(index)
        if block is None:
            raise self.protocol_error(f"{what} {index} was never started", event=event)
        if block not in self._open:
            self.violation(f"{what} {index} already ended", out, event=event)
        return block

    def _text(self, value: Any, event: str, frame: Any) -> str:
        if value.__class__ is str:
            return str(value)
        raise self.protocol_error(f"text is {type(value).__name__}", event=event, raw=frame)

    def _unclosed(self, out: list[Event], where: str) -> None:
        blocks = ", ".join(f"{i} ({self._kinds[i]})" for i in sorted(self._open))
        self.violation(f"blocks never closed at {where}: {blocks}", out, event="message-end")

    # -- one handler per event type -----------------------------------------------------------

    def _message_start(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        if self._started:
            self.violation("second message-start", out, event="message-start", raw=frame)
            return
        self._started = True
        message = (p.get("delta") or {}).get("message") or {}
        self.start_message(out, frame, id=p.get("id"), role=message.get("role") or "assistant")

    def _content_start(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        position = p["index"]
        if position in self._content and self._content[position] in self._open:
            self.violation(f"content {position} started twice", out, event="content-start")
        content = p["delta"]["message"]["content"]
        kind = CONTENT_KINDS.get(content.get("type"), "other")
        index = self._open_block(kind, frame, out)
        self._content[position] = index
        initial = content.get("text") or content.get("thinking")
        if initial:
            text = self._text(initial, "content-start", frame)
            out.append(text_delta(index, kind, text, 0, frame))

    def _content_delta(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        index = self._block_for(self._content, p["index"], "content", "content-delta", out)
        content = p["delta"]["message"]["content"]
        text = content.get("text")
        if text is None:
            text = content.get("thinking")
        if text.__class__ is not str:
            text = self._text(text, "content-delta", frame)
        logprobs = p.get("logprobs")
        if logprobs:
            # Requested with ``logprobs: true``: they belong to this fragment's tokens.
            out.append(
                BlockDelta(
                    index=index, kind=self._kinds[index], text=text, raw=frame, logprobs=logprobs
                )
            )
            return
        out.append(text_delta(index, self._kinds[index], text, 0, frame))

    def _content_end(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        index = self._block_for(self._content, p["index"], "content", "content-end", out)
        if index in self._open:
            self._close(index, frame, out)

    def _tool_plan_delta(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        text = p["delta"]["message"]["tool_plan"]
        if text.__class__ is not str:
            text = self._text(text, "tool-plan-delta", frame)
        index = self._plan
        if index is None:
            index = self._open_block("tool_plan", frame, out)
            self._plan = index
        out.append(text_delta(index, "tool_plan", text, 0, frame))

    def _tool_call_start(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        call = p["delta"]["message"]["tool_calls"]
        if call.__class__ is not dict:
            raise self.protocol_error("tool_calls is not an object", event="tool-call-start")
        position = p["index"]
        if position in self._calls and self._calls[position] in self._open:
            self.violation(f"tool call {position} started twice", out, event="tool-call-start")
        function = call.get("function") or {}
        index = self._open_block(
            "tool_call",
            frame,
            out,
            id=self.wire_str(call.get("id"), "a tool call's id", out, frame),
            name=self.wire_str(function.get("name"), "a tool call's name", out, frame),
        )
        self._calls[position] = index
        arguments = function.get("arguments")
        if arguments:
            text = self._text(arguments, "tool-call-start", frame)
            out.append(text_delta(index, "tool_call", text, 0, frame))

    def _tool_call_delta(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        index = self._block_for(self._calls, p["index"], "tool call", "tool-call-delta", out)
        text = p["delta"]["message"]["tool_calls"]["function"]["arguments"]
        if text.__class__ is not str:
            text = self._text(text, "tool-call-delta", frame)
        out.append(text_delta(index, "tool_call", text, 0, frame))

    def _tool_call_end(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        index = self._block_for(self._calls, p["index"], "tool call", "tool-call-end", out)
        if index in self._open:
            self._close(index, frame, out)

    def _citation_start(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        c = p["delta"]["message"]["citations"]
        if c.__class__ is not dict:
            raise self.protocol_error("citations is not an object", event="citation-start")
        block = self._content.get(c["content_index"]) if "content_index" in c else None
        if block is None:
            block = self._latest.get(CITATION_KINDS.get(c.get("type") or "", "text"))
        citation = Citation(
            start=c.get("start"),
            end=c.get("end"),
            text=c.get("text"),
            sources=c.get("sources") or [],
            block=block,
            raw=c,
        )
        out.append(CitationAdded(citation=citation, raw=frame))

    def _citation_end(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        """Closes the cited span; the citation was complete at ``citation-start``."""

    def _message_end(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self.terminal_seen = True
        delta = p.get("delta") or {}
        raw_reason = delta.get("finish_reason")
        if raw_reason is not None and raw_reason.__class__ is not str:
            raw_reason = str(raw_reason)
        usage = delta.get("usage")
        if usage:
            out.append(UsageUpdate(usage=usage_from_tokens(usage), raw=frame))
        if raw_reason == "ERROR" or delta.get("error"):
            raise StreamError(
                str(delta.get("error") or "the stream ended with finish_reason ERROR"),
                code=delta.get("error_type") or raw_reason,
                raw_finish_reason=raw_reason,
                provider=self.name,
                raw=frame,
                position=self.position,
            )
        self._close_plan(frame, out)
        if self._open and raw_reason not in CUT_SHORT:
            self._unclosed(out, "message-end")
        reason = FINISH_REASONS.get(raw_reason, "other") if raw_reason is not None else None
        out.append(MessageEnd(finish_reason=reason, raw_finish_reason=raw_reason, raw=frame))

    def _debug(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        out.append(Notice(kind="debug", data=p.get("prompt"), raw=frame))


#: Event type -> handler (the function, called with the provider): made once, not per stream.
CohereV2._ON = {
    "message-start": CohereV2._message_start,
    "content-start": CohereV2._content_start,
    "content-delta": CohereV2._content_delta,
    "content-end": CohereV2._content_end,
    "tool-plan-delta": CohereV2._tool_plan_delta,
    "tool-call-start": CohereV2._tool_call_start,
    "tool-call-delta": CohereV2._tool_call_delta,
    "tool-call-end": CohereV2._tool_call_end,
    "citation-start": CohereV2._citation_start,
    "citation-end": CohereV2._citation_end,
    "message-end": CohereV2._message_end,
    "debug": CohereV2._debug,
}
