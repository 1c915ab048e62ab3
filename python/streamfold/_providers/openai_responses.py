"""OpenAI Responses (``POST /v1/responses``, ``"stream": true``): typed SSE events.

Wire format (WIRE_FORMATS.md §4; openai-python ``types/responses/response_stream_event.py``)::

    event: response.created                {"response": {"id", "model", "status", ...}}
    event: response.in_progress            {"response": {...}}
    event: response.output_item.added      {"output_index", "item": {"type", "id", ...}}
    event: response.content_part.added     {"output_index", "content_index", "part": {"type"}}
    event: response.output_text.delta      {"output_index", "content_index", "delta", "logprobs"}
    event: response.output_text.annotation.added  {..., "annotation": {"type": "url_citation"}}
    event: response.content_part.done      {"output_index", "content_index", "part"}
    event: response.output_item.done       {"output_index", "item"}
    event: response.completed              {"response": {"status", "usage", "output", ...}}

Every payload repeats its ``type``, the authoritative name here (the ``event:`` name is the
fallback); ``sequence_number`` (+1 per event) is optional: when present it is kept in
``self.sequence``, the resume cursor.

Output items (by ``output_index``) -> blocks, numbered in order of appearance:

* ``message`` -> one block per content part: ``output_text`` -> ``text``, ``refusal`` ->
  ``refusal`` (``response.output_text.delta`` / ``response.refusal.delta``); the item's
  ``phase`` (``commentary`` / ``final_answer``) in each part's ``extra["phase"]``;
* ``function_call`` -> ``tool_call`` whose ``id`` is the item's ``call_id`` (the id a tool
  result must quote; the item ``id`` is kept in ``extra["item_id"]``), arguments streamed by
  ``response.function_call_arguments.delta``; ``custom_tool_call`` likewise, with its free-text
  input as the fragments and ``extra["custom"] = True``;
* ``reasoning`` -> ``reasoning``: the summary parts' text (``reasoning_summary_text.delta``),
  parts after the first separated by a blank line, or the raw reasoning text
  (``reasoning_text.delta``, its content parts joined as they come); ``encrypted_content`` ->
  ``SignatureDelta``;
* any other item (``web_search_call``, ``file_search_call``, ``code_interpreter_call``,
  ``image_generation_call``, ``mcp_call``…) -> ``server_tool`` with the item in ``data``; their
  progress events (``response.web_search_call.searching``…) -> ``Notice(kind="tool_progress")``.

``response.output_item.done`` closes the item's blocks with ``BlockEnd(data=<final item>)``.
A block whose deltas never came takes its whole text from the closing events that repeat it
(``output_text.done``/``refusal.done``, ``content_part.done``'s part, the function call's
``arguments.done``, the item in ``output_item.done``), so a server that streams no deltas does
not fold to an empty answer; a part closed empty waits for its item's text. When deltas came,
those events add nothing. A reasoning block applies this per summary part (and per raw
reasoning-text part): ``reasoning_summary_text.done``, ``reasoning_summary_part.done``,
``reasoning_text.done``, and the item's ``summary``/``content`` lists. A part that ended with
no text can get it only from its item's ``output_item.done``, after later parts began: the
later parts' text is held back until then (or the end of the stream), so that the parts keep
their order in the block's text.
Annotations -> ``CitationAdded``: ``start``/``end`` are ``start_index``/``end_index``,
code-point offsets into the text part (verified on a capture with curly quotes and dashes); the
annotation is the source. The stream ends with exactly one of ``response.completed`` (finish
``stop``), ``response.incomplete`` (``incomplete_details.reason``: ``max_output_tokens`` ->
``length``, ``content_filter``) or ``response.failed`` (``StreamError`` with
``response.error``); usage comes only there. The ``error`` event raises ``StreamError`` in both
shapes: the documented flat ``{code, message}`` and the real nested ``{error: {...}}``.
The response's own fields that the SDK's final ``Response`` has and the answer does not
(``RESPONSE_METADATA``: ``created_at``, ``completed_at``, ``service_tier``, ``conversation``,
``moderation``, ``tool_usage``, ``prompt_cache_diagnostics``) are ``metadata`` of the
``MessageStart`` (``response.created``) and the ``MessageEnd`` (the final response, whose
``service_tier`` is the tier that served it where ``response.created`` echoes the request's).

Speed: the deltas of one block are read by string comparison once a few of them have been
parsed (``_chunk_template.NumberedTemplate``: they differ in their text, ``sequence_number``
and padding value), with the same result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from .._errors import ProtocolError, StreamError
from .._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    CitationAdded,
    Event,
    MessageEnd,
    Notice,
    SignatureDelta,
    UsageUpdate,
)
from .._parts import BlockKind, Citation, FinishReason, Usage
from ._chunk_template import NumberedTemplate
from ._fast import text_delta
from .base import ID, NAME, FoldingTarget, Provider, present

__all__ = ["INCOMPLETE_REASONS", "OpenAIResponses", "usage_from_responses"]

#: ``response.incomplete`` ``incomplete_details.reason`` -> normalized finish reason. Source:
#: openai-python ``types/responses/response.py`` (``IncompleteDetails.reason:
#: Literal["max_output_tokens", "content_filter"]``). ``response.completed`` is ``stop``.
#: Fields of the ``response`` object kept in ``Message.metadata`` (openai-python
#: ``types/responses/response.py``): when it was created and completed (Unix seconds), the
#: ``service_tier`` that served it, the ``conversation`` (``{id}``) it was added to, the
#: ``moderation`` results of moderated completions, the hosted tools' ``tool_usage`` and the
#: ``prompt_cache_diagnostics`` asked for. The request's settings it echoes are left out.
RESPONSE_METADATA = (
    "created_at",
    "completed_at",
    "service_tier",
    "conversation",
    "moderation",
    "tool_usage",
    "prompt_cache_diagnostics",
)


def _response_metadata(response: dict[str, Any]) -> dict[str, Any] | None:
    """The ``RESPONSE_METADATA`` the response has non-null, or ``None``."""
    return present(response, RESPONSE_METADATA)


INCOMPLETE_REASONS: dict[str, FinishReason] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}

#: ``message`` content part ``type`` -> block kind.
PART_KINDS: dict[str, BlockKind] = {"output_text": "text", "refusal": "refusal"}

#: Delta events -> the kind of block they feed (``None``: the item's own block).
DELTA_EVENTS: dict[str, str] = {
    "response.output_text.delta": "part",
    "response.refusal.delta": "part",
    "response.function_call_arguments.delta": "item",
    "response.custom_tool_call_input.delta": "item",
    "response.reasoning_summary_text.delta": "item",
    "response.reasoning_text.delta": "item",
    "response.code_interpreter_call_code.delta": "item",
    "response.mcp_call_arguments.delta": "item",
}

#: Events whose content is already carried by the deltas (or is a status with no event).
SILENT_EVENTS = frozenset(
    {
        "response.in_progress",
        "response.queued",
        "response.code_interpreter_call_code.done",
        "response.mcp_call_arguments.done",
    }
)

#: ``.done`` events that repeat a block's whole text, and the payload key holding it: the text
#: or arguments of a block whose deltas never came (a server may send only these) is taken
#: from here, or from the item in ``output_item.done``.
DONE_TEXT: dict[str, tuple[str, str]] = {
    "response.output_text.done": ("part", "text"),
    "response.refusal.done": ("part", "refusal"),
    "response.function_call_arguments.done": ("item", "arguments"),
    "response.custom_tool_call_input.done": ("item", "input"),
}

#: Reasoning events -> the series of the reasoning item's parts they address and the payload
#: key of the part's number: summary parts (``summary_index``) or raw reasoning-text content
#: parts (``content_index``). Other deltas sent to a reasoning item feed its latest part.
REASONING_SERIES: dict[str, tuple[str, str]] = {
    "response.reasoning_summary_text.delta": ("summary", "summary_index"),
    "response.reasoning_summary_text.done": ("summary", "summary_index"),
    "response.reasoning_summary_part.added": ("summary", "summary_index"),
    "response.reasoning_summary_part.done": ("summary", "summary_index"),
    "response.reasoning_text.delta": ("content", "content_index"),
    "response.reasoning_text.done": ("content", "content_index"),
    "response.content_part.added": ("content", "content_index"),
    "response.content_part.done": ("content", "content_index"),
}

#: The events that close one reasoning part with its whole text, and where the text is:
#: ``text`` of the payload, or of its ``part``.
REASONING_DONE: dict[str, str] = {
    "response.reasoning_summary_text.done": "text",
    "response.reasoning_summary_part.done": "part",
    "response.reasoning_text.done": "text",
}

#: What goes between a summary part and the one before it: a blank line, as the delta path
#: has always joined them (the capture ``reasoning_summary`` folds to its parts joined so).
#: Raw reasoning-text parts follow each other with nothing between.
SUMMARY_SEPARATOR = "\n\n"

#: Prefixes of the progress events of provider-run tools.
PROGRESS_PREFIXES = (
    "response.web_search_call.",
    "response.file_search_call.",
    "response.code_interpreter_call.",
    "response.image_generation_call.",
    "response.mcp_call.",
    "response.mcp_list_tools.",
    "response.computer_call.",
    "response.shell_call.",
    "response.local_shell_call.",
)

#: A block's chunk template is learned from its eighth delta parsed in a row. A learn costs
#: about what parsing 5-7 deltas does and pays back after about 10 read by template: learning
#: at the third delta made the short captures (5-7 deltas) 9-16% dearer, learning at the eighth
#: costs the long ones about 2% (callgrind, ``events()`` on the Responses captures).
LEARN_AFTER = 8

_Handler = Callable[[Any, dict[str, Any], Any, list[Event]], None]


def _int(value: Any) -> int | None:
    return value if value.__class__ is int else None


def usage_from_responses(usage: dict[str, Any]) -> Usage:
    """Responses ``usage`` -> :class:`Usage` (input includes cached, output includes reasoning)."""
    input_details = usage.get("input_tokens_details")
    output_details = usage.get("output_tokens_details")
    return Usage(
        input_tokens=_int(usage.get("input_tokens")),
        output_tokens=_int(usage.get("output_tokens")),
        total_tokens=_int(usage.get("total_tokens")),
        reasoning_tokens=(
            _int(output_details.get("reasoning_tokens")) if type(output_details) is dict else None
        ),
        cached_tokens=(
            _int(input_details.get("cached_tokens")) if type(input_details) is dict else None
        ),
        raw=usage,
    )


def _event_name(p: dict[str, Any], frame: Any) -> str:
    """The payload's ``type``, else the ``event:`` name (as ``handle`` decides)."""
    event = p.get("type")
    return event if type(event) is str else str(frame.event)


def _part_text(part: Any, kind: BlockKind) -> Any:
    """The whole text a finished content part carries (``refusal`` for a refusal part)."""
    return part.get("refusal" if kind == "refusal" else "text") if part.__class__ is dict else None


class _Part:
    """One part of a reasoning block: a summary part or a raw reasoning-text part."""

    __slots__ = ("fed", "held", "logprobs", "separator")

    def __init__(self, separator: str) -> None:
        #: Emitted before the part's text (after the parts before it).
        self.separator = separator
        #: The part received text: a delta, or its whole text from a closing event (once).
        self.fed = False
        #: Its text not emitted yet, while an earlier part waits for its text.
        self.held: list[str] = []
        #: The log-probabilities of the held deltas, concatenated in order.
        self.logprobs: list[Any] = []


class _Reasoning:
    """The parts of a reasoning item's one block, in the order they began."""

    __slots__ = ("latest", "parts", "summaries", "wait")

    def __init__(self) -> None:
        self.parts: list[_Part] = []
        #: ``(series, number)`` -> position in ``parts`` of the latest part so numbered.
        self.latest: dict[tuple[str, int], int] = {}
        #: Summary parts begun so far (the first has no separator).
        self.summaries = 0
        #: -1 while the text goes straight to the block; else the first part whose text is not
        #: emitted: it ended with none, and the text of the parts after it is ``held``.
        self.wait = -1


class _Item:
    """One output item and its blocks."""

    __slots__ = ("block", "done", "item_type", "kind", "parts", "phase", "reasoning")

    def __init__(self, item_type: str) -> None:
        self.item_type = item_type
        #: The item's own block (-1 for a message, whose blocks are its parts).
        self.block = -1
        self.kind: BlockKind = "other"
        #: content_index -> (block index, kind), for message parts.
        self.parts: dict[int, tuple[int, BlockKind]] = {}
        #: A reasoning item's parts.
        self.reasoning: _Reasoning | None = None
        self.done = False
        #: A message's ``phase`` (``commentary`` / ``final_answer``), to be sent back.
        self.phase: str | None = None


class OpenAIResponses(Provider):
    """OpenAI Responses stream -> events."""

    name: ClassVar[str] = "openai-responses"

    #: Event type -> handler, called as ``handler(self, …)`` (see the end of the module).
    _ON: ClassVar[dict[str, _Handler]]

    def __init__(self, *, strict: bool = False) -> None:
        super().__init__(strict=strict)
        self._started = False
        self._items: dict[int, _Item] = {}
        #: Open blocks: index -> kind.
        self._open: dict[int, BlockKind] = {}
        self._next_block = 0
        #: The chunk template of the deltas of one block; learned at most 256 times.
        self._template: NumberedTemplate | None = None
        #: The ``event:`` name of the frame it was learned from: the frames the decoder's
        #: folding path reads with it (``folding_target``).
        self._template_event = "message"
        self._learns = 0
        #: The block of the last delta parsed, and how many of its deltas were parsed in a row.
        self._parsed_block = -1
        self._parsed_run = 0
        #: Blocks that received text (a delta, or the text their opening event carried).
        self._fed: set[int] = set()
        #: Parts closed by ``content_part.done`` with no text yet: left open for the text the
        #: item's ``output_item.done`` may still carry, and closed there (or at the end).
        self._empty_done: set[int] = set()

    # -- the frame loop ----------------------------------------------------------------------

    def folding_target(self) -> FoldingTarget | None:
        """The deltas the template reads, while its block is open and numbered on from the
        cursor (what ``handle_frames`` checks for each such frame; the decoder checks the
        numbers)."""
        template = self._template
        if template is None or self.terminal_seen:
            return None
        kind = self._open.get(template.block)
        if kind is None:
            return None
        return template.cutter, self._template_event, 0, template.block, kind

    def handle_frames(self, frames: list[Any], out: list[Event]) -> None:
        """The pipeline's loop over one chunk's frames: number each and ``handle`` it, but read
        a delta that the template's Rust cut reads right here, without a parse. That does what
        ``handle`` does for the payload: the sequence check and cursor, then the text for the
        template's block. Whatever would not simply be that (a number that does not increase,
        a closed block, anything after the terminal event) goes to ``handle``."""
        handle = self.handle
        first = self.position + 1
        for self.position, frame in enumerate(frames, first):
            template = self._template
            if template is not None:
                cut = template.cut
                found = cut(frame)
                if found is not None:
                    number, text = found
                    block = template.block
                    kind = self._open.get(block)
                    if kind is not None and not self.terminal_seen:
                        sequence = self.sequence
                        if number is None or sequence is None or number > sequence:
                            if number is not None:
                                self.sequence = number
                            out.append(text_delta(block, kind, text, 0, frame))
                            continue
            handle(frame, out)

    def handle(self, frame: Any, out: list[Event]) -> None:
        try:
            payload = self.json_object(frame)
        except ProtocolError:
            if self.done_marker(frame, out):
                # What follows is read by this method, which warns: no template reads it.
                self._template = None
                self._learns = 256
                return
            raise
        event = payload.get("type")
        if type(event) is not str:
            event = frame.event
        if self.done_seen:
            self.violation("event after [DONE]", out, event=event, raw=frame)
        sequence = payload.get("sequence_number")
        if type(sequence) is int:
            if self.sequence is not None and sequence <= self.sequence:
                self.violation(
                    f"sequence_number {sequence} after {self.sequence}", out, event=event, raw=frame
                )
            self.sequence = sequence
        if self.terminal_seen:
            self.violation("event after the terminal event", out, event=event, raw=frame)
            return
        try:
            target = DELTA_EVENTS.get(event)
            if target is not None:
                self._delta(payload, target, event, frame, out)
                return
            if not self._started and event not in ("error", "response.created"):
                self.violation("stream does not begin with response.created", out, event=event)
                self._start(payload.get("response"), frame, out)
            handler = self._ON.get(event)
            if handler is not None:
                handler(self, payload, frame, out)
            elif event in SILENT_EVENTS:
                pass
            elif event.startswith(PROGRESS_PREFIXES):
                out.append(Notice(kind="tool_progress", message=event, data=payload, raw=frame))
            else:
                self.unknown(event, out, frame)
        except (AttributeError, TypeError, KeyError) as exc:
            raise self.protocol_error(
                f"malformed payload ({exc.__class__.__name__}: {exc})", event=event, raw=frame
            ) from None

    # -- response ----------------------------------------------------------------------------

    def _start(self, response: Any, frame: Any, out: list[Event]) -> None:
        self._started = True
        if response.__class__ is not dict:
            response = {}
        self.start_message(
            out,
            frame,
            id=response.get("id"),
            model=response.get("model"),
            metadata=_response_metadata(response),
        )

    def _created(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        if self._started:
            self.violation("second response.created", out, event="response.created", raw=frame)
            return
        self._start(p.get("response"), frame, out)

    def _completed(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        response = p["response"]
        status = response.get("status")
        usage = response.get("usage")
        if usage.__class__ is dict:
            out.append(UsageUpdate(usage=usage_from_responses(usage), raw=frame))
        if p["type"] == "response.completed" and status in ("completed", None):
            self._end_items(response, frame, out)
        self._release_all(frame, out)
        for block in sorted(self._empty_done):
            self._close(block, frame, out)  # its item's text never came: it stays empty
        self._empty_done.clear()
        reason: FinishReason = "stop"
        raw_reason = status if status.__class__ is str else p["type"].removeprefix("response.")
        if p["type"] == "response.incomplete" or status == "incomplete":
            details = response.get("incomplete_details")
            cause = details.get("reason") if type(details) is dict else None
            raw_reason = cause if type(cause) is str else "incomplete"
            reason = INCOMPLETE_REASONS.get(raw_reason, "other")
        elif self._open:
            blocks = ", ".join(f"{i} ({kind})" for i, kind in sorted(self._open.items()))
            self.violation(f"blocks never closed: {blocks}", out, event=p["type"], raw=frame)
        self.terminal_seen = True
        out.append(
            MessageEnd(
                finish_reason=reason,
                raw_finish_reason=raw_reason,
                metadata=_response_metadata(response),
                raw=frame,
            )
        )

    def finish(self, out: list[Event]) -> None:
        # End of input without the terminal event: the held reasoning text joins the partial
        # message (the parts it waited for stay empty).
        self._release_all(None, out)

    def _raise(self, error: Any, frame: Any, raw_finish_reason: str | None = None) -> None:
        if error.__class__ is not dict:
            error = {"message": str(error)}
        code = error.get("code")
        if code is None:
            code = error.get("type")
        message = error.get("message")
        self.terminal_seen = True
        raise StreamError(
            str(message) if message is not None else "the response failed",
            code=code,
            provider=self.name,
            raw=frame,
            position=self.position,
            raw_finish_reason=raw_finish_reason,
        )

    def _failed(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self._release_all(frame, out)  # the held reasoning text belongs to the partial message
        response = p.get("response")
        error = response.get("error") if type(response) is dict else None
        self._raise(error or {"message": "the response failed", "code": "failed"}, frame, "failed")

    def _error(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self._release_all(frame, out)  # the held reasoning text belongs to the partial message
        nested = p.get("error")
        self._raise(nested if nested.__class__ is dict else p, frame)

    # -- blocks ------------------------------------------------------------------------------

    def _open_block(self, kind: BlockKind, frame: Any, out: list[Event], **fields: Any) -> int:
        # A new block may take over the content part a template's deltas went to (a second
        # ``content_part.added`` for the same index): the template is learned again.
        self._template = None
        block = self._next_block
        self._next_block = block + 1
        self._open[block] = kind
        out.append(BlockStart(index=block, kind=kind, raw=frame, **fields))
        return block

    def _close(self, block: int, frame: Any, out: list[Event], data: Any = None) -> None:
        kind = self._open.pop(block, None)
        if kind is not None:
            out.append(BlockEnd(index=block, kind=kind, data=data, raw=frame))

    def _item(self, p: dict[str, Any], event: str, frame: Any) -> _Item:
        item = self._items.get(p["output_index"])
        if item is None:
            raise self.protocol_error(
                f"output item {p['output_index']!r} was never added", event=event, raw=frame
            )
        return item

    def _item_added(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        output_index = p["output_index"]
        item = p["item"]
        item_type = item.get("type")
        if output_index in self._items:
            self.violation(
                f"output item {output_index} added twice",
                out,
                event="response.output_item.added",
                raw=frame,
            )
            return
        state = _Item(item_type)
        self._items[output_index] = state
        item_id = item.get("id")
        if item_type == "message":
            phase = item.get("phase")
            state.phase = phase if phase.__class__ is str else None
            return  # its blocks are its content parts
        if item_type in ("function_call", "custom_tool_call"):
            extra: dict[str, Any] = {"item_id": item_id}
            if item_type == "custom_tool_call":
                extra["custom"] = True
            call_id = self.wire_str(item.get("call_id"), ID, out, frame)
            name = self.wire_str(item.get("name"), NAME, out, frame)
            state.kind = "tool_call"
            state.block = self._open_block(
                "tool_call", frame, out, id=call_id, name=name, extra=extra
            )
            initial = item.get("arguments") or item.get("input")
            if initial and initial.__class__ is str:
                self._fed.add(state.block)
                out.append(text_delta(state.block, "tool_call", initial, 0, frame))
            return
        if item_type == "reasoning":
            state.kind = "reasoning"
            state.reasoning = _Reasoning()
            state.block = self._open_block("reasoning", frame, out, extra={"item_id": item_id})
            encrypted = item.get("encrypted_content")
            if encrypted:
                out.append(SignatureDelta(index=state.block, signature=encrypted, raw=frame))
            return
        state.kind = "server_tool"
        state.block = self._open_block(
            "server_tool", frame, out, id=item_id, name=item_type, data=item
        )

    def _item_done(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        state = self._item(p, "response.output_item.done", frame)
        if state.done:
            self.violation(
                f"output item {p['output_index']} done twice",
                out,
                event="response.output_item.done",
                raw=frame,
            )
            return
        self._end_item(state, p.get("item"), frame, out)

    def _end_items(self, response: dict[str, Any], frame: Any, out: list[Event]) -> None:
        """``response.completed`` ends the items that got no ``output_item.done``, with their
        final form from ``response.output`` where it has one. OpenAI sends none for some
        items (``mcp_list_tools``): the finished response closes what is open."""
        output = response.get("output")
        if type(output) is not list:
            output = []
        for output_index, state in self._items.items():
            if not state.done:
                at = output_index if output_index.__class__ is int else -1
                item = output[at] if 0 <= at < len(output) else None
                if type(item) is not dict or item.get("type") != state.item_type:
                    item = None
                self._end_item(state, item, frame, out)

    def _end_item(self, state: _Item, item: Any, frame: Any, out: list[Event]) -> None:
        """The item is finished (``item``: its final form, if known): its blocks close."""
        state.done = True
        if item.__class__ is dict:
            self._fill_from_item(state, item, frame, out)
        for block, _kind in state.parts.values():
            self._empty_done.discard(block)
            self._close(block, frame, out)
        if state.reasoning is not None and state.block in self._open:
            # No part's text can come after its item: whatever was held goes out, in order.
            self._release(state, frame, out, end=True)
        if state.block >= 0:
            if state.kind == "reasoning" and item.__class__ is dict:
                encrypted = item.get("encrypted_content")
                if encrypted:
                    out.append(SignatureDelta(index=state.block, signature=encrypted, raw=frame))
            self._close(state.block, frame, out, data=item)

    def _done_text(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        """``output_text.done``, ``refusal.done``, ``function_call_arguments.done``…: the
        block's whole text again. Nothing new when its deltas came; the whole text when none
        did, so that a server sending only these events does not fold to an empty answer."""
        event = p["type"]
        target, key = DONE_TEXT[event]
        state = self._items.get(p["output_index"])
        if state is None:
            return  # an item never added: its deltas would have said so already
        if target == "part":
            part = state.parts.get(p.get("content_index", 0))
            block = part[0] if part is not None else -1
        else:
            block = state.block
        self._fill(block, p.get(key), frame, out)

    def _fill_from_item(
        self, state: _Item, item: dict[str, Any], frame: Any, out: list[Event]
    ) -> None:
        """``output_item.done``: the text of blocks that got none, from the finished item."""
        if state.item_type == "message":
            content = item.get("content")
            if type(content) is not list:
                return
            for index, (block, kind) in state.parts.items():
                if 0 <= index < len(content):
                    self._fill(block, _part_text(content[index], kind), frame, out)
        elif state.item_type == "function_call":
            self._fill(state.block, item.get("arguments"), frame, out)
        elif state.item_type == "custom_tool_call":
            self._fill(state.block, item.get("input"), frame, out)
        elif state.reasoning is not None:
            self._fill_reasoning_from_item(state, item, frame, out)

    def _fill(self, block: int, text: Any, frame: Any, out: list[Event]) -> None:
        """The whole ``text`` of an open ``block`` that received none, as its one delta."""
        kind = self._open.get(block)
        if kind is None or block in self._fed or text.__class__ is not str or not text:
            return
        self._fed.add(block)
        out.append(text_delta(block, kind, text, 0, frame))

    def _part_added(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        state = self._item(p, "response.content_part.added", frame)
        if state.reasoning is not None:
            self._reasoning_part_added(state, p, frame, out)  # a part of its one block
            return
        if state.item_type != "message":
            return
        part: Any = p.get("part") or {}
        kind: BlockKind = PART_KINDS.get(part.get("type"), "other")
        content_index = p["content_index"]
        extra: dict[str, Any] = {"item_id": p.get("item_id")}
        if state.phase is not None:
            extra["phase"] = state.phase
        block = self._open_block(kind, frame, out, extra=extra)
        state.parts[content_index] = (block, kind)
        initial = part.get("text") or part.get("refusal")
        if initial and initial.__class__ is str:
            self._fed.add(block)
            out.append(text_delta(block, kind, initial, 0, frame))

    def _part_done(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        state = self._item(p, "response.content_part.done", frame)
        if state.reasoning is not None:
            self._reasoning_done(p, frame, out)
            return
        part = state.parts.get(p["content_index"])
        if part is not None:
            block, kind = part
            self._fill(block, _part_text(p.get("part"), kind), frame, out)
            if block in self._fed or block not in self._open:
                self._close(block, frame, out)
            else:
                self._empty_done.add(block)

    def _summary_part_added(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        state = self._item(p, "response.reasoning_summary_part.added", frame)
        if state.reasoning is not None:
            self._reasoning_part_added(state, p, frame, out)

    # -- reasoning parts ---------------------------------------------------------------------

    def _reasoning_part_added(
        self, state: _Item, p: dict[str, Any], frame: Any, out: list[Event]
    ) -> None:
        """``reasoning_summary_part.added`` / ``content_part.added``: a new part begins (a
        second one with the same number is a new part too, as the delta path always made it);
        text it already carries is its first delta."""
        reasoning = state.reasoning
        if reasoning is None or state.block not in self._open:
            return
        series, key = REASONING_SERIES[_event_name(p, frame)]
        number = p.get(key)
        if type(number) is not int:  # numbered as they come
            summary = series == "summary"
            number = reasoning.summaries if summary else len(reasoning.parts) - reasoning.summaries
        index = self._new_reasoning_part(state, series, number, frame, out)
        part = p.get("part")
        initial = part.get("text") if type(part) is dict else None
        if initial and initial.__class__ is str:
            reasoning.parts[index].fed = True
            self._reasoning_text(state, index, initial, frame, out)

    def _new_reasoning_part(
        self, state: _Item, series: str, number: int, frame: Any, out: list[Event]
    ) -> int:
        """Begin a part of the reasoning block; its position in the block's parts."""
        reasoning = state.reasoning
        assert reasoning is not None
        separator = ""
        if series == "summary":
            separator = SUMMARY_SEPARATOR if reasoning.summaries else ""
            reasoning.summaries += 1
        template = self._template
        if template is not None and template.block == state.block:
            # A templated delta is not parsed, so it cannot say which part it feeds: only the
            # deltas of a part already fed (the one a template was learned in) may be read so.
            self._template = None
        parts = reasoning.parts
        if reasoning.wait < 0 and parts and not parts[-1].fed:
            # The part before ended with no text: its item's `output_item.done` may still carry
            # it, and it must come before this part's text. Hold that text back until then.
            reasoning.wait = len(parts) - 1
        parts.append(_Part(separator))
        reasoning.latest[(series, number)] = len(parts) - 1
        if reasoning.wait < 0 and separator:
            out.append(text_delta(state.block, "reasoning", separator, 0, frame))
        return len(parts) - 1

    def _reasoning_part(
        self, state: _Item, event: str, p: dict[str, Any], frame: Any, out: list[Event]
    ) -> int:
        """The part an event for the reasoning block addresses: by its number, begun when new;
        else (no number, or an event of no series) the latest part."""
        reasoning = state.reasoning
        assert reasoning is not None
        series_key = REASONING_SERIES.get(event)
        if series_key is not None:
            series, key = series_key
            number = p.get(key)
            if type(number) is int:
                found = reasoning.latest.get((series, number))
                if found is not None:
                    return found
                return self._new_reasoning_part(state, series, number, frame, out)
        if reasoning.parts:
            return len(reasoning.parts) - 1
        series = series_key[0] if series_key is not None else "summary"
        return self._new_reasoning_part(state, series, 0, frame, out)

    def _reasoning_text(
        self,
        state: _Item,
        index: int,
        text: str,
        frame: Any,
        out: list[Event],
        *,
        logprobs: Any = None,
    ) -> None:
        """Text for part ``index`` of the (open) reasoning block: emitted, or held (with its
        log-probabilities) while an earlier part waits for its text."""
        reasoning = state.reasoning
        assert reasoning is not None
        if 0 <= reasoning.wait <= index:
            part = reasoning.parts[index]
            part.held.append(text)
            if logprobs:
                part.logprobs.extend(logprobs if logprobs.__class__ is list else [logprobs])
            self._release(state, frame, out)
        elif logprobs:
            out.append(
                BlockDelta(
                    index=state.block, kind="reasoning", text=text, raw=frame, logprobs=logprobs
                )
            )
        else:
            out.append(text_delta(state.block, "reasoning", text, 0, frame))

    def _fill_part(self, state: _Item, index: int, text: Any, frame: Any, out: list[Event]) -> None:
        """The whole ``text`` of a reasoning part that received none, once."""
        reasoning = state.reasoning
        assert reasoning is not None
        part = reasoning.parts[index]
        if part.fed or text.__class__ is not str or not text:
            return
        part.fed = True
        self._reasoning_text(state, index, text, frame, out)

    def _reasoning_done(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        """``reasoning_summary_text.done``, ``reasoning_summary_part.done``,
        ``reasoning_text.done``, a reasoning item's ``content_part.done``: the part's whole
        text, taken only when its deltas never came."""
        event = _event_name(p, frame)
        state = self._items.get(p["output_index"])
        if state is None or state.reasoning is None or state.block not in self._open:
            return  # an item never added, or not reasoning, or closed: nothing to fill
        if REASONING_DONE.get(event, "part") == "text":
            text = p.get("text")
        else:
            part = p.get("part")
            text = part.get("text") if type(part) is dict else None
        index = self._reasoning_part(state, event, p, frame, out)
        self._fill_part(state, index, text, frame, out)

    def _fill_reasoning_from_item(
        self, state: _Item, item: dict[str, Any], frame: Any, out: list[Event]
    ) -> None:
        """``output_item.done`` of a reasoning item: the text of every part that got none,
        from its ``summary`` and ``content`` lists (parts never announced are added after the
        others, summary first)."""
        reasoning = state.reasoning
        if reasoning is None or state.block not in self._open:
            return
        for series in ("summary", "content"):
            entries = item.get(series)
            if type(entries) is not list:
                continue
            for number, entry in enumerate(entries):
                text = entry.get("text") if entry.__class__ is dict else None
                found = reasoning.latest.get((series, number))
                if found is None:
                    found = self._new_reasoning_part(state, series, number, frame, out)
                self._fill_part(state, found, text, frame, out)

    def _release(self, state: _Item, frame: Any, out: list[Event], *, end: bool = False) -> None:
        """Emit held text in part order, up to the first part still waiting for its text (past
        every part when ``end``: no text can come for them any more)."""
        reasoning = state.reasoning
        if reasoning is None:
            return
        parts = reasoning.parts
        while reasoning.wait >= 0:
            part = parts[reasoning.wait]
            last = reasoning.wait == len(parts) - 1
            if not (part.fed or last or end):
                return
            if part.held:
                text = "".join(part.held)
                if part.logprobs:
                    out.append(
                        BlockDelta(
                            index=state.block,
                            kind="reasoning",
                            text=text,
                            raw=frame,
                            logprobs=part.logprobs,
                        )
                    )
                    part.logprobs = []
                else:
                    out.append(text_delta(state.block, "reasoning", text, 0, frame))
                part.held.clear()
            if last:
                reasoning.wait = -1  # nothing after it: its text goes straight to the block
                return
            reasoning.wait += 1
            separator = parts[reasoning.wait].separator
            if separator:
                out.append(text_delta(state.block, "reasoning", separator, 0, frame))

    def _release_all(self, frame: Any, out: list[Event]) -> None:
        """The stream ends: no reasoning part waits any longer."""
        for state in self._items.values():
            reasoning = state.reasoning
            if reasoning is not None and reasoning.wait >= 0 and state.block in self._open:
                self._release(state, frame, out, end=True)

    def _delta(
        self, p: dict[str, Any], target: str, event: str, frame: Any, out: list[Event]
    ) -> None:
        state = self._items.get(p["output_index"])
        if state is None:
            raise self.protocol_error(
                f"delta for output item {p['output_index']!r}, which was never added",
                event=event,
                raw=frame,
            )
        if target == "part" and state.item_type == "message":
            content_index = p.get("content_index", 0)
            part = state.parts.get(content_index)
            if part is None:
                if state.done:
                    block = -1
                else:
                    self.violation(
                        f"delta for content part {content_index} before content_part.added",
                        out,
                        event=event,
                        raw=frame,
                    )
                    kind: BlockKind = "refusal" if event == "response.refusal.delta" else "text"
                    part = (self._open_block(kind, frame, out), kind)
                    state.parts[content_index] = part
                    block = part[0]
            else:
                block = part[0]
        else:
            block = state.block
        kind_now = self._open.get(block)
        if kind_now is None or block in self._empty_done:
            self.violation(f"delta for block {block} after its end", out, event=event, raw=frame)
            return
        text = p["delta"]
        if text.__class__ is not str:
            raise self.protocol_error(
                f"delta is {type(text).__name__}, not text", event=event, raw=frame
            )
        if not text:
            return
        self._fed.add(block)
        if state.reasoning is not None and block == state.block:
            index = self._reasoning_part(state, event, p, frame, out)
            state.reasoning.parts[index].fed = True
            if state.reasoning.wait >= 0:
                # Held back (and never learned from: a templated read would not hold it).
                self._reasoning_text(state, index, text, frame, out, logprobs=p.get("logprobs"))
                return
        logprobs = p.get("logprobs")
        if logprobs:
            out.append(
                BlockDelta(index=block, kind=kind_now, text=text, raw=frame, logprobs=logprobs)
            )
            return
        out.append(text_delta(block, kind_now, text, 0, frame))
        if self._learns < 256 and self.templates:
            if block == self._parsed_block:
                self._parsed_run += 1
                if self._parsed_run >= LEARN_AFTER and p.get("type") == event:
                    self._learn(p, block, text, frame)
            else:
                self._parsed_block, self._parsed_run = block, 1

    def _learn(self, p: dict[str, Any], block: int, text: str, frame: Any) -> None:
        """Learn the template of a delta just read as a plain text for ``block``, whose payload
        names its own ``type`` (else the ``event:`` name would decide, which the template does
        not compare)."""
        self._learns += 1

        def expected(probe: str) -> dict[str, Any]:
            return {**p, "delta": probe}

        template = NumberedTemplate.learn(
            frame.data,
            p,
            number_key="sequence_number",
            key="delta",
            text=text,
            expected=expected,
            block=block,
        )
        if template is not None:
            self._template = template
            self._template_event = frame.event

    def _annotation(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        state = self._item(p, "response.output_text.annotation.added", frame)
        part = state.parts.get(p.get("content_index", 0))
        annotation = p["annotation"]
        start = annotation.get("start_index")
        if start is None:
            start = annotation.get("index")  # file citations mark one position
        citation = Citation(
            start=start,
            end=annotation.get("end_index"),
            text=None,
            sources=[annotation],
            block=part[0] if part is not None else None,
            raw=annotation,
        )
        out.append(CitationAdded(citation=citation, raw=frame))


#: Event type -> handler (the function, called with the provider): made once, not per stream.
OpenAIResponses._ON = {
    "response.created": OpenAIResponses._created,
    "response.output_item.added": OpenAIResponses._item_added,
    "response.output_item.done": OpenAIResponses._item_done,
    "response.content_part.added": OpenAIResponses._part_added,
    "response.content_part.done": OpenAIResponses._part_done,
    **dict.fromkeys(DONE_TEXT, OpenAIResponses._done_text),
    **dict.fromkeys(REASONING_DONE, OpenAIResponses._reasoning_done),
    "response.reasoning_summary_part.added": OpenAIResponses._summary_part_added,
    "response.output_text.annotation.added": OpenAIResponses._annotation,
    "response.completed": OpenAIResponses._completed,
    "response.incomplete": OpenAIResponses._completed,
    "response.failed": OpenAIResponses._failed,
    "error": OpenAIResponses._error,
}
