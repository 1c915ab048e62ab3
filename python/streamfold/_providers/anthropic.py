"""Anthropic Messages (``POST /v1/messages``, ``"stream": true``): named SSE events.

Wire format (WIRE_FORMATS.md §5; anthropic-sdk-python ``_streaming.py``,
``types/raw_message_stream_event.py``, ``lib/streaming/_messages.py``)::

    event: message_start        {"message": {"id", "model", "role", "usage": {...}}}
    event: content_block_start  {"index", "content_block": {"type": "text"|"thinking"|...}}
    event: ping                 {}                                   (anywhere)
    event: content_block_delta  {"index", "delta": {"type": "text_delta", "text"}}
                                      ... thinking_delta{thinking}, signature_delta{signature},
                                      input_json_delta{partial_json}, citations_delta{citation}
    event: content_block_stop   {"index"}
    event: message_delta        {"delta": {"stop_reason", "stop_sequence", ...}, "usage": {...}}
    event: message_stop         {}
    event: error                {"error": {"type", "message"}}       (mid-stream, then EOF)

The JSON is padded with spaces before its closing brace; it is parsed, never compared. The
``event:`` name is authoritative, as in the SDK; the payload ``type`` is the fallback for a
frame without one. Block indices are the wire's ``index``.

Blocks (``content_block.type`` -> kind):

* ``text`` -> ``text``; ``thinking`` -> ``reasoning`` (``signature_delta`` -> ``SignatureDelta``,
  which replaces the signature); ``tool_use`` -> ``tool_call`` whose ``input_json_delta``
  fragments are ``BlockDelta`` texts (its ``input`` from the start, ``{}``, is in
  ``BlockStart.arguments`` for a call that gets no fragment; its ``caller`` and
  ``toolset_name``, when sent, in ``extra``);
* ``server_tool_use`` / ``mcp_tool_use`` -> ``server_tool`` with ``id``/``name``; its input
  streams as ``input_json_delta`` like a tool call's (as captured), so it is not complete at
  start. ``data`` is the content block;
* blocks that arrive whole: ``redacted_thinking`` -> ``reasoning`` and every ``*_tool_result``
  (``web_search_tool_result``…) -> ``server_tool``, both ``BlockStart(complete=True,
  data=<content block>)`` and ``BlockEnd`` at once; their ``content_block_stop`` makes no event;
* any other block type -> ``other`` with ``data``. A ``compaction`` block (server-side
  compaction, beta) gets its summary as one ``compaction_delta`` whose fields (``content``,
  ``encrypted_content``) replace the block's, as the SDK's beta accumulator does: its
  ``BlockEnd`` carries the block so completed in ``data``, which must go back verbatim. A
  ``fallback`` block (beta model fallback: ``{from: {model}, to: {model}, trigger}``) marks where
  another model takes over: ``MessageStart(model=to.model, continued=True)`` before it, so the
  message's ``model`` is the one that served it, as the SDK relabels it and as the non-streamed
  response reports it.

``citations_delta`` -> ``CitationAdded``. Anthropic citations carry no offsets into the answer:
the cited span is the whole text block, so ``start``/``end`` are ``None``, ``text`` is
``cited_text`` and ``sources`` holds the citation object (its url/title, or document index and
character/page/block range). Usage: ``message_start.message.usage`` is the first total;
``message_delta.usage`` is cumulative and merged over it field by field (non-null values
replace), each giving a ``UsageUpdate`` of the merged total. ``Usage.input_tokens`` counts every
prompt token: ``input_tokens`` plus cache creation and cache reads (the latter are also
``cached_tokens``). ``message_delta``'s ``stop_reason`` -> ``MessageDelta`` (after its
``UsageUpdate``), so a stream cut before ``message_stop`` keeps it in its partial message.
``message_stop`` is the terminal event: ``MessageEnd`` with that ``stop_reason``. A code
execution ``container``, the ``stop_sequence`` that fired and a refusal's ``stop_details``
(``message_start.message`` or ``message_delta.delta``, when not null) are that key of the
``MessageStart`` / ``MessageDelta`` / ``MessageEnd`` ``metadata`` (``METADATA_KEYS``): a
stream cut after ``message_delta`` keeps them with its finish.

Speed: ``content_block_delta`` payloads of one block are read by string comparison once one of
them has been parsed (``_chunk_template``), with the same result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from .._errors import ProtocolError, StreamError
from .._events import (
    BlockEnd,
    BlockStart,
    CitationAdded,
    Event,
    MessageDelta,
    MessageEnd,
    MessageStart,
    Notice,
    SignatureDelta,
    Unknown,
    UsageUpdate,
)
from .._parts import BlockKind, Citation, FinishReason, Usage
from ._chunk_template import ChunkTemplate
from ._fast import text_delta
from .base import FoldingTarget, Provider, present

__all__ = ["BLOCK_KINDS", "STOP_REASONS", "Anthropic", "usage_from_anthropic"]

#: ``message_delta.delta.stop_reason`` -> normalized finish reason. Source: anthropic-sdk-python
#: ``types/stop_reason.py`` (end_turn, max_tokens, stop_sequence, tool_use, pause_turn, refusal,
#: model_context_window_exceeded). ``pause_turn`` (a server tool loop paused; send the message
#: back to continue) has no neutral equivalent.
STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "refusal",
    "pause_turn": "other",
}

#: ``content_block.type`` -> block kind, for blocks that stream.
BLOCK_KINDS: dict[str, BlockKind] = {
    "text": "text",
    "thinking": "reasoning",
    "tool_use": "tool_call",
    "server_tool_use": "server_tool",
    "mcp_tool_use": "server_tool",
}

#: ``delta.type`` -> the field holding its text.
TEXT_DELTAS: dict[str, str] = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "input_json_delta": "partial_json",
}

#: A block's chunk template is learned from its third delta parsed in a row (see
#: ``Anthropic._parsed_block``).
LEARN_AFTER = 3

#: ``tool_use`` fields kept in ``ToolCall.extra`` and sent back by ``to_request``
#: (anthropic-sdk-python ``types/tool_use_block_param.py``).
_CALL_EXTRAS = ("caller", "toolset_name")

#: Usage counters ``message_delta`` may update.
_COUNTERS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")

_Handler = Callable[[Any, dict[str, Any], Any, list[Event]], None]


def _int(value: Any) -> int | None:
    return value if value.__class__ is int else None


def usage_from_anthropic(usage: dict[str, Any]) -> Usage:
    """Anthropic ``usage`` -> :class:`Usage`.

    ``input_tokens`` here counts every prompt token (Anthropic's ``input_tokens`` excludes the
    cached ones); ``output_tokens`` already includes thinking.
    """
    # Loops, not comprehensions: a comprehension makes a function object per call.
    input_tokens: int | None = None
    counts: list[int | None] = []
    for key in _COUNTERS:
        count = _int(usage.get(key))
        counts.append(count)
        if count is not None:
            input_tokens = count if input_tokens is None else input_tokens + count
    output_tokens = _int(usage.get("output_tokens"))
    details = usage.get("output_tokens_details")
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=(
            input_tokens + output_tokens
            if input_tokens is not None and output_tokens is not None
            else None
        ),
        reasoning_tokens=(_int(details.get("reasoning_tokens")) if type(details) is dict else None),
        cached_tokens=counts[2],
        raw=usage,
    )


#: ``message_start.message`` / ``message_delta.delta`` fields kept in ``Message.metadata``, as
#: the SDK's final message has them: the code execution ``container`` (``{id, expires_at}``:
#: the next request passes its id to keep its files), ``stop_sequence`` (which of the request's
#: ``stop_sequences`` ended the answer, when ``stop_reason`` is ``stop_sequence``) and
#: ``stop_details`` (why a ``refusal`` stopped: ``{type, category, explanation}``).
METADATA_KEYS = ("container", "stop_sequence", "stop_details")


def _metadata(payload: dict[str, Any]) -> dict[str, Any] | None:
    """The ``METADATA_KEYS`` the message or its ``message_delta`` sent non-null, or ``None``."""
    return present(payload, METADATA_KEYS)


def _citation(citation: dict[str, Any], block: int) -> Citation:
    return Citation(
        start=None,
        end=None,
        text=citation.get("cited_text"),
        sources=[citation],
        block=block,
        raw=citation,
    )


class Anthropic(Provider):
    """Anthropic Messages stream -> events."""

    name: ClassVar[str] = "anthropic"

    #: Event type -> handler, called as ``handler(self, …)`` (see the end of the module).
    _ON: ClassVar[dict[str, _Handler]]

    def __init__(self, *, strict: bool = False) -> None:
        super().__init__(strict=strict)
        self._started = False
        #: Open blocks: index -> kind. Blocks that arrived whole are in ``_whole`` until their
        #: ``content_block_stop``; closed blocks are in ``_closed``.
        self._open: dict[int, BlockKind] = {}
        self._whole: set[int] = set()
        self._closed: set[int] = set()
        #: ``other`` blocks: index -> the content block as it stands (its start, with the
        #: fields of any ``compaction_delta`` since); ``_updated``: those a delta changed.
        self._payloads: dict[int, dict[str, Any]] = {}
        self._updated: set[int] = set()
        self._usage: dict[str, Any] = {}
        self._template: ChunkTemplate | None = None
        self._learns = 0
        #: The block of the last delta parsed, and how many of its deltas were parsed in a
        #: row: a template is learned at a block's third, since many blocks (between web
        #: search citations, say) have only one to three deltas, which would not repay it.
        self._parsed_block: Any = None
        self._parsed_run = 0
        self._stop: dict[str, Any] = {}

    # -- the frame loop ----------------------------------------------------------------------

    def folding_target(self) -> FoldingTarget | None:
        """The fragments the template reads, while its block is open (what ``handle_frames``
        checks for each such frame)."""
        template = self._template
        if template is None or self.terminal_seen:
            return None
        kind = self._open.get(template.block)
        if kind is None:
            return None
        return template.cutter, "content_block_delta", 0, template.block, kind

    def handle_frames(self, frames: list[Any], out: list[Event]) -> None:
        """The pipeline's loop over one chunk's frames: number each and ``handle`` it, but read
        the commonest frame (a plain text fragment that the Rust cut reads) right here: a Python
        call per frame is a good part of its whole cost. This does exactly what ``handle`` does
        for such a frame; every other frame goes to ``handle``."""
        handle = self.handle
        first = self.position + 1
        for self.position, frame in enumerate(frames, first):
            template = self._template
            if template is not None and frame.event == "content_block_delta":
                cut = template.cut
                text = cut(frame)
                if text is not None:
                    block = template.block
                    kind = self._open.get(block)
                    if kind is not None and not self.terminal_seen:
                        out.append(text_delta(block, kind, text, 0, frame))
                        continue
            handle(frame, out)

    def handle(self, frame: Any, out: list[Event]) -> None:
        event = frame.event
        template = self._template
        if template is not None and event == "content_block_delta":
            # A fragment read without a JSON parse (see ``_chunk_template``).
            cut = template.cut
            text = cut(frame)
            if text is None:
                text = template.read(frame.data_bytes)
            if text is not None:
                kind = self._open.get(template.block)
                if kind is not None and not self.terminal_seen:
                    out.append(text_delta(template.block, kind, text, 0, frame))
                    return
        try:
            payload = self.json_object(frame)
        except ProtocolError:
            if self.done_marker(frame, out):
                # What follows is read by this method, which warns: no template reads it.
                self._template = None
                self._learns = 256
                return
            raise
        if event == "message":
            event = payload.get("type")
            if type(event) is not str:  # a list or an object cannot name an event
                event = frame.event
        if self.done_seen:
            self.violation("event after [DONE]", out, event=event, raw=frame)
        # The hot path: a text, thinking or input fragment for an open block.
        if event == "content_block_delta":
            delta: Any = payload.get("delta")
            delta_type: Any = delta.get("type") if delta.__class__ is dict else None
            field = TEXT_DELTAS.get(delta_type) if delta_type.__class__ is str else None
            if field is not None:
                index: Any = payload.get("index")
                kind = self._open.get(index) if index.__class__ is int else None
                text = delta.get(field)
                if kind is not None and text and text.__class__ is str and not self.terminal_seen:
                    out.append(text_delta(index, kind, text, 0, frame))
                    if self._learns < 256 and len(payload) == 3 and len(delta) == 2:
                        if index == self._parsed_block:
                            self._parsed_run += 1
                            if self._parsed_run >= LEARN_AFTER:
                                self._learn(frame, payload, field, text, index)
                        else:
                            self._parsed_block, self._parsed_run = index, 1
                    return
        handler = self._ON.get(event)
        if handler is None:
            self.unknown(event, out, frame)
            return
        if self.terminal_seen and event != "ping":
            self.violation("event after message_stop", out, event=event, raw=frame)
            return
        try:
            handler(self, payload, frame, out)
        except (AttributeError, TypeError, KeyError) as exc:
            raise self.protocol_error(
                f"malformed payload ({exc.__class__.__name__}: {exc})", event=event, raw=frame
            ) from None

    def _learn(
        self, frame: Any, payload: dict[str, Any], field: str, text: str, index: int
    ) -> None:
        if not self.templates:
            return
        self._learns += 1
        template = ChunkTemplate.learn(frame, path=("delta", field), text=text, block=index)
        if template is not None:
            self._template = template

    # -- message -----------------------------------------------------------------------------

    def _ensure_started(self, frame: Any, out: list[Event], event: str) -> None:
        if not self._started:
            self._started = True
            self.violation("stream does not begin with message_start", out, event=event)
            self.start_message(out, frame)

    def _message_start(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        if self._started:
            self.violation("second message_start", out, event="message_start", raw=frame)
            return
        self._started = True
        message = p["message"]
        self.start_message(
            out,
            frame,
            id=message.get("id"),
            model=message.get("model"),
            role=message.get("role") or "assistant",
            metadata=_metadata(message),
        )
        usage = message.get("usage")
        if usage.__class__ is dict:
            self._usage = dict(usage)
            out.append(UsageUpdate(usage=usage_from_anthropic(self._usage), raw=frame))

    def _message_delta(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self._ensure_started(frame, out, "message_delta")
        delta = p.get("delta")
        if type(delta) is dict:
            self._stop = delta
        usage = p.get("usage")
        if type(usage) is dict:
            # Cumulative: non-null values replace those of message_start (the SDK's rule).
            merged = dict(self._usage)
            for key, value in usage.items():
                if value is not None:
                    merged[key] = value
            self._usage = merged
            out.append(UsageUpdate(usage=usage_from_anthropic(merged), raw=frame))
        raw_reason = delta.get("stop_reason") if type(delta) is dict else None
        if type(raw_reason) is str:
            # Known now, though message_stop ends the message: a stream cut before it keeps it.
            out.append(
                MessageDelta(
                    finish_reason=STOP_REASONS.get(raw_reason, "other"),
                    raw_finish_reason=raw_reason,
                    data=self._stop,
                    metadata=_metadata(self._stop),
                    raw=frame,
                )
            )

    def _message_stop(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self._ensure_started(frame, out, "message_stop")
        raw_reason = self._stop.get("stop_reason")
        if self._open and raw_reason not in ("max_tokens", "model_context_window_exceeded"):
            blocks = ", ".join(f"{i} ({kind})" for i, kind in sorted(self._open.items()))
            self.violation(f"blocks never closed: {blocks}", out, event="message_stop", raw=frame)
        self.terminal_seen = True
        out.append(
            MessageEnd(
                finish_reason=(
                    STOP_REASONS.get(raw_reason, "other") if raw_reason is not None else None
                ),
                raw_finish_reason=raw_reason,
                data=self._stop or None,
                metadata=_metadata(self._stop),
                raw=frame,
            )
        )

    def _ping(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        out.append(Notice(kind="ping", raw=frame))

    def _error(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        error = p.get("error")
        if type(error) is not dict:
            error = p
        message = error.get("message")
        self.terminal_seen = True
        raise StreamError(
            str(message) if message is not None else "error event",
            code=error.get("type"),
            provider=self.name,
            raw=frame,
            position=self.position,
        )

    # -- blocks ------------------------------------------------------------------------------

    def _block_start(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self._ensure_started(frame, out, "content_block_start")
        index = p["index"]
        if index.__class__ is not int:
            raise self.protocol_error(
                f"block index is {index!r}", event="content_block_start", raw=frame
            )
        if index in self._open or index in self._closed:
            self.violation(
                f"block {index} started twice", out, event="content_block_start", raw=frame
            )
            return
        block = p["content_block"]
        block_type = block.get("type")
        kind = BLOCK_KINDS.get(block_type)
        if kind is None and (
            block_type == "redacted_thinking"
            or (block_type.__class__ is str and block_type.endswith("_tool_result"))
        ):
            whole: BlockKind = "reasoning" if block_type == "redacted_thinking" else "server_tool"
            out.append(
                BlockStart(
                    index=index,
                    kind=whole,
                    id=block.get("tool_use_id"),
                    complete=True,
                    data=block,
                    raw=frame,
                )
            )
            out.append(BlockEnd(index=index, kind=whole, raw=frame))
            self._whole.add(index)
            self._closed.add(index)
            return
        if kind is None:
            kind = "other"
        self._open[index] = kind
        if kind == "tool_call":
            # Programmatic tool calling: who made the call (``caller``, e.g. code execution)
            # and a toolset member's ``toolset_name`` go back with it (ToolUseBlockParam).
            extra = {key: block[key] for key in _CALL_EXTRAS if block.get(key) is not None}
            out.append(
                BlockStart(
                    index=index,
                    kind=kind,
                    id=self.wire_str(block.get("id"), "a tool call's id", out, frame),
                    name=self.wire_str(block.get("name"), "a tool call's name", out, frame),
                    arguments=block.get("input"),
                    extra=extra or None,
                    raw=frame,
                )
            )
            return
        if kind in ("server_tool", "other"):
            if kind == "other":
                self._payloads[index] = block
                to = block.get("to") if block_type == "fallback" else None
                model = to.get("model") if type(to) is dict else None
                if model.__class__ is str:
                    # The model the content after this block comes from serves the message.
                    out.append(MessageStart(model=model, continued=True, raw=frame))
            out.append(
                BlockStart(
                    index=index,
                    kind=kind,
                    id=self.wire_str(block.get("id"), "a block's id", out, frame),
                    name=self.wire_str(block.get("name"), "a block's name", out, frame),
                    data=block,
                    raw=frame,
                )
            )
            return
        out.append(BlockStart(index=index, kind=kind, raw=frame))
        field = "text" if kind == "text" else "thinking"
        initial = block.get(field)
        signature = block.get("signature")
        for name, value in ((field, initial), ("signature", signature)):
            if value is not None and value.__class__ is not str:
                raise self.protocol_error(
                    f"content_block.{name} is {type(value).__name__}",
                    event="content_block_start",
                    raw=frame,
                )
        if initial:
            out.append(text_delta(index, kind, initial, 0, frame))
        if signature:
            out.append(SignatureDelta(index=index, signature=signature, raw=frame))
        for citation in block.get("citations") or ():
            out.append(CitationAdded(citation=_citation(citation, index), raw=frame))

    def _kind_of(self, index: Any, frame: Any, out: list[Event], event: str) -> BlockKind | None:
        """The open block's kind; ``None`` (after a violation) for a block already closed."""
        kind = self._open.get(index)
        if kind is not None:
            return kind
        if index in self._closed:
            self.violation(f"{event} for block {index} after its end", out, event=event, raw=frame)
            return None
        raise self.protocol_error(f"block {index!r} was never started", event=event, raw=frame)

    def _block_delta(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        index = p["index"]
        kind = self._kind_of(index, frame, out, "content_block_delta")
        if kind is None:
            return
        delta = p["delta"]
        delta_type = delta.get("type")
        field = TEXT_DELTAS.get(delta_type)
        if field is not None:
            text = delta.get(field)
            if text.__class__ is not str:
                raise self.protocol_error(
                    f"{delta_type}.{field} is {type(text).__name__}",
                    event="content_block_delta",
                    raw=frame,
                )
            if text:  # the first input_json_delta is often ""
                out.append(text_delta(index, kind, text, 0, frame))
        elif delta_type == "signature_delta":
            out.append(SignatureDelta(index=index, signature=delta["signature"], raw=frame))
        elif delta_type == "citations_delta":
            out.append(CitationAdded(citation=_citation(delta["citation"], index), raw=frame))
        elif delta_type == "compaction_delta" and index in self._payloads:
            # The block's fields as this delta sends them (the SDK replaces both content and
            # encrypted_content); BlockEnd hands the block on.
            fields = {key: value for key, value in delta.items() if key != "type"}
            self._payloads[index] = {**self._payloads[index], **fields}
            self._updated.add(index)
        else:
            out.append(Unknown(event_type=f"content_block_delta.{delta_type}", raw=frame))

    def _block_stop(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        index = p["index"]
        if index in self._whole:
            self._whole.discard(index)  # closed at its start
            return
        kind = self._open.pop(index, None)
        if kind is None:
            if index in self._closed:
                self.violation(
                    f"block {index} stopped twice", out, event="content_block_stop", raw=frame
                )
                return
            raise self.protocol_error(
                f"block {index!r} was never started", event="content_block_stop", raw=frame
            )
        self._closed.add(index)
        payload = self._payloads.pop(index, None)
        data = payload if index in self._updated else None
        out.append(BlockEnd(index=index, kind=kind, data=data, raw=frame))


#: Event type -> handler (the function, called with the provider): made once, not per stream.
Anthropic._ON = {
    "message_start": Anthropic._message_start,
    "content_block_start": Anthropic._block_start,
    "content_block_delta": Anthropic._block_delta,
    "content_block_stop": Anthropic._block_stop,
    "message_delta": Anthropic._message_delta,
    "message_stop": Anthropic._message_stop,
    "ping": Anthropic._ping,
    "error": Anthropic._error,
}
