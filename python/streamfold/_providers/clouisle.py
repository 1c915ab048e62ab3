"""Clouisle agents: agent SSE events and durable run events.

Wire format (Clouisle "SSE Streaming Events", the seed ``004``). The event type is the SSE
``event:`` name, else the payload ``type``. Run-scoped events carry the envelope ``run_id``,
``sequence``, ``timestamp``, ``round_id``, ``message_id``, ``type``; the event's own fields
sit beside it (as the seed's examples show them) or in a ``payload`` object (as the run
stream's buffer stores them): both are read, the envelope's non-null values winning. The
docs name the events but not every payload field; these fields are read, with the obvious
alternates, and everything else stays in ``raw``::

    message_start          conversation_id, message_id
    rag_start              retrieval starts                     -> Notice("rag_start")
    rag_context            contexts (null: retrieval did not run, []: found nothing)
    reasoning_start/_end   a reasoning block opens / closes
    reasoning_delta        delta | content | text
    content_delta          delta | content | text               the visible text
    tool_call              id, name, arguments (object or JSON text) | args | input: whole
    tool_result            id, name, result | output, is_error | isError
    media_result           an image/video for the UI            -> MediaAdded(payload)
    compression_start/_end, output_truncated, input_accepted -> Notice
    iteration_cap_reached  content (the platform's closing text) -> Notice, text block
    message_end            usage, elapsed_ms | timing, status, version_number/_count
    error                  code, message | msg | error (a string, or an object's
                           message | msg)                        -> StreamError
    run_start, run_status  run_id, sequence, status (+ pending_tool_call_id,
                           pending_tool_name, pending_tool_input while waiting on ask_user)
    run_end                status: completed | stopped | failed | interrupted

Workflow streams (``GET …/workflows/runs/{run_id}/stream``, the Webhook's ``stream_url``)
send ``{"event", "data", "node_id", "timestamp", "sequence"}``, the event's fields in
``data``::

    workflow_start         workflow_id, workflow_name    -> MessageStart, RunStatus("running")
    node_start             node_type, node_label         -> StepStart(node_label, id=node_id)
    node_complete          outputs, duration_ms          -> StepEnd
    node_error             error (a string, or an object's message | msg) -> Notice, StepEnd
    node_skip, output, progress, status, iteration_start/_complete, debug -> Notice
    token / chunk          token / chunk: a node's text  -> text, one block per node
    workflow_complete      outputs, duration_ms          -> MessageEnd(stop, data), RunStatus
    workflow_error         error (as node_error)         -> StreamError("workflow_error")

A failed, cancelled or timed-out workflow ends with ``workflow_error``. A workflow stream
resumes with ``from_sequence`` (``resume_param``), so ``Cursor.params`` carries it. Its
sequences are not unique (a streaming node numbers its tokens with a counter of its own, from
1): ``sequence`` keeps the highest, and no event is taken for a replay by its number.

Blocks. Text runs and reasoning are blocks in stream order; a text run ends when another block
opens (text after it starts a new block). A ``tool_call`` arrives whole: with object arguments
it is ``BlockStart(complete=True, arguments=…)``; with JSON text the text is one
``BlockDelta`` so the fold parses it (and reports it if invalid). Either way a ``BlockEnd``
follows at once. The platform reports a call as the model starts it (with the arguments it
has so far) and again once its whole arguments differ: a ``tool_call`` whose id was seen is
a whole ``BlockStart`` for that call's block, which the fold takes as the call's update.

Messages and runs. ``MessageStart`` comes from ``message_start`` (its ``message_id``), or is
synthesized before the first agent event; run events alone never start a message (a resumed
run stream may carry only run events). A durable run (run events, or frames with a
``run_id``) may hold several rounds: a tool turn, then the answer; a run resumed after
``ask_user`` repeats ``message_start``. A further ``message_start``, an agent event after a
``message_end``, or a new ``round_id``/``message_id`` begins a round: the open text block is
closed and ``MessageStart(continued=True)`` continues the same message (the fold reopens it
if the round had ended), so one run is one message and no rule is broken. Outside a run, a
second message or an event after ``message_end`` is a violation.

``message_end`` -> ``MessageEnd`` (``length`` when ``output_truncated`` came earlier in its
round with no text or reasoning after it (that would be a later model turn), ``other`` when
``iteration_cap_reached`` did: "Reached the Agent's tool iteration cap", so the run ended
without the model's own answer. Either also sends ``MessageDelta`` with that
finish at once, so a stream cut before the end keeps it; without a ``status`` in the end, the
raw finish reason is that event's name. The cap's ``content``, the platform's closing text,
is a text block of its own; ``data`` = ``{elapsed_ms, status}``). Run events ->
``RunStatus``; ``run_end`` is ``terminal`` and, when the message never ended, also ends it
with the run's status. The identifiers a caller needs to reconnect ("reuse the existing
conversation_id / run_id") go to ``Message.metadata``: ``conversation_id`` and ``run_id`` of
the frame that starts the message and of ``message_end`` (``MessageStart``/``MessageEnd``
``metadata``, with ``END_FIELDS``: ``elapsed_ms``, ``timing``, ``version_number``,
``version_count``), and every ``RunStatus.run_id``. The platform runs the tools itself, so
``MessageEnd.tools_run_by_platform`` is set: only a run ``waiting`` on its
``pending_tool_call`` (``ask_user``) asks the client to act. ``sequence`` is tracked in
``self.sequence`` (the highest seen: resume with ``after_sequence=provider.sequence``); an
event whose sequence is not above it is a replayed duplicate: a violation, and it is dropped.
A run known only by its frames' ``run_id`` (no ``run_start`` seen: a stream resumed past it)
gets a ``RunStatus("running")`` at its first such frame, so that the fold, like the stream's
outcome, waits for ``run_end``: a stream cut between two rounds is not a short answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from .._errors import StreamError
from .._events import (
    BlockEnd,
    BlockStart,
    Event,
    MediaAdded,
    MessageDelta,
    MessageEnd,
    Notice,
    RunStatus,
    SourcesAdded,
    StepEnd,
    StepStart,
    ToolResultAdded,
    UsageUpdate,
)
from .._parts import BlockKind, FinishReason, ToolResult, Usage
from ._fast import text_delta
from .base import ID, NAME, Provider, body_error, event_frame, json_kind, present

__all__ = ["FINISH_REASONS", "RUN_EVENTS", "TERMINAL_RUN_STATUSES", "WORKFLOW_EVENTS", "Clouisle"]

#: ``message_end.status`` / ``run_end.status`` -> normalized finish reason. The docs list the
#: terminal run states "completed / stopped / failed / interrupted: finished normally,
#: stopped, failed, or lost with its worker". A missing status is a normal end; any other
#: value is ``other``. ``output_truncated`` earlier in the round ("Reached the maximum output
#: Token") makes a normal end ``length``; ``iteration_cap_reached`` ("Reached the Agent's tool
#: iteration cap") makes it ``other``.
FINISH_REASONS: dict[str, FinishReason] = {
    "completed": "stop",
    "stopped": "other",
    "failed": "error",
    "interrupted": "error",
}

#: Terminal states of a durable run (``run_end.status``).
TERMINAL_RUN_STATUSES = frozenset({"completed", "stopped", "failed", "interrupted"})


def _terminal(status: Any) -> bool:
    """A run's final status (a list or an object is none, and unhashable)."""
    return status.__class__ is str and status in TERMINAL_RUN_STATUSES


#: Identifiers of the conversation and run, kept in ``Message.metadata`` (run-scoped events
#: carry ``run_id`` on every frame; ``message_start`` carries ``conversation_id``).
ID_FIELDS = ("conversation_id", "run_id")

#: What ``message_end`` reports about the run rather than the reply, kept in
#: ``Message.metadata``: the elapsed time (``elapsed_ms``, or the platform's ``timing``
#: object ``{first_token_ms, duration_ms, tokens_per_second}``) and the message's version.
END_FIELDS = (*ID_FIELDS, "elapsed_ms", "timing", "version_number", "version_count")

#: Run-scoped events that may follow ``message_end``.
RUN_EVENTS = frozenset({"run_start", "run_status", "input_accepted", "run_end"})

#: Events that only become a ``Notice`` of the same kind.
NOTICES = (
    "rag_start",
    "compression_start",
    "compression_end",
    "output_truncated",
    "iteration_cap_reached",
    "input_accepted",
)

#: Workflow stream events that only become a ``Notice`` of the same kind.
WORKFLOW_NOTICES = (
    "node_skip",
    "output",
    "progress",
    "status",
    "iteration_start",
    "iteration_complete",
    "debug",
)

#: Workflow stream events (Clouisle ``StreamEventType``), each as its own kind.
WORKFLOW_EVENTS = frozenset(
    {
        "workflow_start",
        "workflow_complete",
        "workflow_error",
        "node_start",
        "node_complete",
        "node_error",
        "token",
        "chunk",
        *WORKFLOW_NOTICES,
    }
)

_Handler = Callable[[Any, dict[str, Any], Any, list[Event]], None]


def _count(value: Any) -> int | None:
    if value.__class__ is int:
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _first(p: dict[str, Any], *keys: str) -> Any:
    """The first of ``keys`` present with a non-null value."""
    for key in keys:
        value = p.get(key)
        if value is not None:
            return value
    return None


def _error_text(error: Any) -> Any:
    """The reason an ``error`` field gives: the string itself, or an object's ``message`` /
    ``msg`` (the platform's ``{code, msg}``); ``None`` otherwise."""
    if isinstance(error, str):
        return error or None
    if isinstance(error, dict):
        return _first(error, "message", "msg")
    return None


def usage_from(usage: dict[str, Any]) -> Usage:
    """``message_end.usage`` -> :class:`Usage` (input/prompt, output/completion token names;
    cached/cache_read). The platform sends ``{prompt_tokens, completion_tokens, total_tokens,
    cache_read_tokens, cache_creation_tokens, total_input_tokens}``; all of it stays in
    ``raw``.

    ``input_tokens`` counts every prompt token, cached ones included, as for the other
    providers (``cached_tokens`` is the part of it read from the cache): the platform's
    ``total_input_tokens`` when it sends one, since its ``prompt_tokens`` and ``total_tokens``
    leave the cache out, as Anthropic's usage does. ``total_tokens`` is then input plus output.
    """
    output_tokens = _count(_first(usage, "output_tokens", "completion_tokens"))
    input_tokens = _count(usage.get("total_input_tokens"))
    if input_tokens is not None:
        total = input_tokens + output_tokens if output_tokens is not None else None
    else:
        input_tokens = _count(_first(usage, "input_tokens", "prompt_tokens"))
        total = _count(usage.get("total_tokens"))
        if total is None and input_tokens is not None and output_tokens is not None:
            total = input_tokens + output_tokens
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=total,
        reasoning_tokens=_count(usage.get("reasoning_tokens")),
        # The platform reports the cache reads as cache_read_tokens.
        cached_tokens=_count(_first(usage, "cached_tokens", "cache_read_tokens")),
        raw=usage,
    )


class Clouisle(Provider):
    """Clouisle agent / durable-run stream -> events."""

    name: ClassVar[str] = "clouisle"

    #: Event type -> handler, called as ``handler(self, …)`` (see the end of the module).
    _ON: ClassVar[dict[str, _Handler]]

    @classmethod
    def resends_call(cls, call_id: Any, start: BlockStart) -> bool:
        """A call is sent again with its whole arguments once they are known (the block of
        that id, complete): the call is updated in place."""
        return start.complete and start.id is not None and start.id == call_id

    def __init__(self, *, strict: bool = False) -> None:
        super().__init__(strict=strict)
        self._started = False
        self._message_id: Any = None
        self._round_id: Any = None
        self._message_ended = False
        self._in_run = False
        self._run_ended = False
        #: The finish an earlier event decided for a normal end: ``output_truncated``
        #: (``length``) or ``iteration_cap_reached`` (``other``), with that event's name.
        self._limit: tuple[FinishReason, str] | None = None
        self._next_block = 0
        self._text: int | None = None
        self._reasoning: int | None = None
        self._call_names: dict[Any, Any] = {}
        #: Block index of each call id reported so far (a call re-sent is an update).
        self._call_blocks: dict[Any, int] = {}
        #: The source lists ``rag_context`` reported (one reported again is not added twice).
        self._sources: list[list[Any]] = []
        #: A workflow stream (its events came in ``data``).
        self._workflow = False
        #: A ``RunStatus`` was sent: the fold knows the stream is a run's.
        self._announced = False
        #: A terminal ``RunStatus`` was sent (run_end, workflow_complete): the fold's run has
        #: ended for good, so no later status undecides the stream's outcome here either.
        self._ended = False
        #: The workflow node whose tokens the open text block holds.
        self._text_node: Any = None

    # -- the frame loop ----------------------------------------------------------------------

    def handle(self, frame: Any, out: list[Event]) -> None:
        payload = self.json_object(frame)
        inner = payload.get("payload")
        if type(inner) is dict and ("sequence" in payload or "run_id" in payload):
            # A run event as the run stream sends it: the envelope (run_id, sequence,
            # timestamp, round_id, message_id, type) with the event's own fields in
            # ``payload``. Read as one object: the envelope's values win where it has one
            # (input_accepted's own "sequence" numbers the input, not the event).
            merged = dict(inner)
            for key, value in payload.items():
                if value is not None and key != "payload":
                    merged[key] = value
            payload = merged
        elif "sequence" in payload and payload.get("data").__class__ is dict:
            named = payload.get("event")
            if named.__class__ is str:
                self._workflow = True
                # A workflow stream event: {"event", "data", "node_id", "timestamp",
                # "sequence"}, its fields in ``data``.
                payload = {
                    **payload["data"],
                    "node_id": payload.get("node_id"),
                    "sequence": payload["sequence"],
                    "timestamp": payload.get("timestamp"),
                    "type": named,
                }
        event_type = frame.event
        if event_type == "message":
            event_type = payload.get("type")
            if type(event_type) is not str:
                # A "type" that names no event (a list, an object, a number): the frame is
                # Unknown, named as it came, as Anthropic reads such a frame.
                event_type = frame.event
        sequence = payload.get("sequence")
        if type(sequence) is int and self._workflow:
            # Workflow nodes that stream (answer, LLM) number their events with their own
            # counter, from 1 again: a workflow sequence is no replay marker. The highest is
            # kept for from_sequence.
            if self.sequence is None or sequence > self.sequence:
                self.sequence = sequence
        elif type(sequence) is int:
            if self.sequence is not None and sequence <= self.sequence:
                self.violation(
                    f"sequence {sequence} is not above {self.sequence}: a replayed duplicate, "
                    "dropped",
                    out,
                    event=event_type,
                    raw=frame,
                )
                return
            self.sequence = sequence
        if payload.get("run_id") is not None and not self._in_run:
            self._in_run = True  # run-scoped events carry their run's id
            if event_type not in RUN_EVENTS and not self._workflow:
                # A run known by its frames' run_id alone (a stream resumed past run_start):
                # the fold learns of it, so that, like ``terminal_seen``, it ends the message
                # only at run_end, not at a round's message_end.
                out.append(self._status(payload, frame, "running", terminal=False))
        handler = self._ON.get(event_type) if event_type.__class__ is str else None
        if self._run_ended:
            self.violation("event after run_end", out, event=event_type, raw=frame)
        elif event_type not in RUN_EVENTS:
            if not self._in_run:
                if self._message_ended:
                    self.violation("event after message_end", out, event=event_type, raw=frame)
            elif (
                handler is not None
                and event_type != "error"
                and self._started
                and self._next_round(payload, event_type)
            ):
                self._new_round(payload, frame, out)
        if handler is None:
            self.unknown(event_type, out, frame)
            return
        try:
            handler(self, payload, frame, out)
        except (KeyError, TypeError, AttributeError, IndexError) as exc:
            raise self.protocol_error(
                f"malformed payload ({exc.__class__.__name__}: {exc})", event=event_type, raw=frame
            ) from None

    # -- message, rounds and blocks ------------------------------------------------------------

    def _next_round(self, p: dict[str, Any], event_type: str) -> bool:
        """Whether this agent event of a durable run begins a further round: it follows the
        previous round's ``message_end``, or it is a ``message_start`` (the run resuming after
        ``ask_user`` repeats it), or its ``round_id`` / ``message_id`` is a new one."""
        round_id = p.get("round_id")
        known_round = self._round_id
        if round_id is not None:
            self._round_id = round_id
        if self._message_ended or event_type == "message_start":
            return True
        if round_id is not None and known_round is not None and round_id != known_round:
            return True
        message_id = p.get("message_id")
        return message_id is not None and self._message_id not in (None, message_id)

    def _new_round(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        """Continue the message with a further round: the rounds' blocks follow each other in
        one message, which ends with its last round (or the run's end)."""
        if self._text is not None:
            out.append(BlockEnd(index=self._text, kind="text", raw=frame))
            self._text = None
        if self._reasoning is not None:
            self.violation("reasoning never ended", out, event=p.get("type"), raw=frame)
            out.append(BlockEnd(index=self._reasoning, kind="reasoning", raw=frame))
            self._reasoning = None
        self._message_ended = False
        # What ended the previous round's model turn does not end this one.
        self._limit = None
        message_id = p.get("message_id")
        if message_id is not None:
            self._message_id = message_id
        metadata = present(p, ID_FIELDS)
        self.start_message(out, frame, id=message_id, metadata=metadata, continued=True)

    def _start(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        """Synthesize ``MessageStart`` before the first agent event that is not message_start."""
        if not self._started:
            self._started = True
            self._message_id = p.get("message_id")
            if self._round_id is None:
                self._round_id = p.get("round_id")
            metadata = present(p, ID_FIELDS)
            self.start_message(out, frame, id=self._message_id, metadata=metadata)

    def _open(self, kind: BlockKind, frame: Any, out: list[Event], **fields: Any) -> int:
        if self._text is not None:
            out.append(BlockEnd(index=self._text, kind="text", raw=frame))
            self._text = None
        index = self._next_block
        self._next_block = index + 1
        out.append(BlockStart(index=index, kind=kind, raw=frame, **fields))
        return index

    @staticmethod
    def _text_of(p: dict[str, Any]) -> Any:
        text = p.get("delta")
        if text is None:
            text = p.get("content")
            if text is None:
                text = p.get("text")
        return text

    # -- one handler per event type -----------------------------------------------------------

    def _message_start(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        if not self._started:
            self._start(p, frame, out)
        elif not self._in_run and p.get("message_id") not in (None, self._message_id):
            # Outside a durable run a stream is one message; in a run a further
            # message_start is a new round (see handle).
            self.violation("a second message_start", out, event="message_start", raw=frame)

    def _rag_context(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self._start(p, frame, out)
        sources = p["contexts"] if "contexts" in p else p.get("sources")
        if sources is not None and sources.__class__ is not list:
            raise TypeError(f"the sources are a JSON {type(sources).__name__}, not a list")
        if sources and sources in self._sources:
            # A run resumed after ask_user reports its retrieval again: the same sources.
            return
        if sources:
            self._sources.append(sources)
        out.append(SourcesAdded(sources=sources, raw=frame))

    def _reasoning_start(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self._start(p, frame, out)
        self._next_turn(frame, out)
        if self._reasoning is not None:
            self.violation("reasoning_start while reasoning is open", out, event="reasoning_start")
            out.append(BlockEnd(index=self._reasoning, kind="reasoning", raw=frame))
        self._reasoning = self._open("reasoning", frame, out)

    def _reasoning_delta(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        index = self._reasoning
        if index is None:
            raise self.protocol_error(
                "reasoning_delta without reasoning_start", event="reasoning_delta", raw=frame
            )
        text = self._text_of(p)
        if text.__class__ is not str:
            raise self.protocol_error(
                "reasoning text is not a string", event="reasoning_delta", raw=frame
            )
        out.append(text_delta(index, "reasoning", text, 0, frame))

    def _reasoning_end(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        index = self._reasoning
        if index is None:
            raise self.protocol_error(
                "reasoning_end without reasoning_start", event="reasoning_end", raw=frame
            )
        self._reasoning = None
        out.append(BlockEnd(index=index, kind="reasoning", raw=frame))

    def _content_delta(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        text = self._text_of(p)
        if text.__class__ is not str:
            raise self.protocol_error(
                "content text is not a string", event="content_delta", raw=frame
            )
        if self._limit is not None:
            self._next_turn(frame, out)
        self._append_text(p, text, frame, out)

    def _append_text(self, p: dict[str, Any], text: str, frame: Any, out: list[Event]) -> None:
        """``text`` onto the open text run, opening one (and the message) when none is."""
        index = self._text
        if index is None:
            self._start(p, frame, out)
            index = self._text = self._next_block
            self._next_block = index + 1
            out.append(BlockStart(index=index, kind="text", raw=frame))
        out.append(text_delta(index, "text", text, 0, frame))

    def _tool_call(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self._start(p, frame, out)
        call_id = self.wire_str(_first(p, "id", "tool_call_id", "call_id"), ID, out, frame)
        name = self.wire_str(_first(p, "name", "tool_name"), NAME, out, frame)
        arguments = _first(p, "arguments", "args", "input")
        known = self._call_blocks.get(call_id) if call_id.__class__ is str else None
        if known is not None:
            # The platform reports a call as the model starts it (its arguments so far) and
            # again with its whole arguments when they changed: the call is updated, not a
            # second call.
            if name is None:
                name = self._call_names.get(call_id)
            self._call_names[call_id] = name
            out.append(
                BlockStart(
                    index=known,
                    kind="tool_call",
                    id=call_id,
                    name=name,
                    arguments=arguments,
                    complete=True,
                    text=arguments if isinstance(arguments, str) else "",
                    raw=frame,
                )
            )
            return
        self._call_names[call_id] = name
        if isinstance(arguments, str):
            index = self._open("tool_call", frame, out, id=call_id, name=name)
            out.append(text_delta(index, "tool_call", arguments, 0, frame))
        else:
            index = self._open(
                "tool_call",
                frame,
                out,
                id=call_id,
                name=name,
                arguments=arguments if arguments is not None else {},
                complete=True,
            )
        if call_id.__class__ is str:
            self._call_blocks[call_id] = index
        out.append(BlockEnd(index=index, kind="tool_call", raw=frame))

    def _tool_result(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self._start(p, frame, out)
        call_id = _first(p, "id", "tool_call_id", "call_id")
        result = ToolResult(
            call_id=call_id,
            output=p["result"] if "result" in p else p.get("output"),
            is_error=bool(p.get("is_error") or p.get("isError")),
            name=_first(p, "name", "tool_name") or self._call_names.get(call_id),
            raw=p,
        )
        out.append(ToolResultAdded(result=result, raw=frame))

    def _media_result(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self._start(p, frame, out)
        out.append(MediaAdded(media=p, raw=frame))

    def _output_truncated(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self._notice("output_truncated", p, frame, out)
        self._set_limit("length", "output_truncated", frame, out)

    def _iteration_cap(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        """The agent reached its tool iteration cap: the run ends without the model's own
        final answer. Finish ``other`` (raw ``iteration_cap_reached`` unless the end names a
        status); the platform's closing text (``content``) is shown as a text block."""
        self._notice("iteration_cap_reached", p, frame, out)
        content = p.get("content")
        if content.__class__ is str and content:
            index = self._open("text", frame, out)
            self._text = index
            out.append(text_delta(index, "text", content, 0, frame))
        self._set_limit("other", "iteration_cap_reached", frame, out)

    def _next_turn(self, frame: Any, out: list[Event]) -> None:
        """Model output after ``output_truncated``: the platform sends it at the end of a
        model turn, so this is a later turn (the run went on after the truncated tool turn),
        and the truncation no longer decides how the message ends."""
        if self._limit is not None and self._limit[1] == "output_truncated":
            self._limit = None
            if not self._message_ended:
                out.append(MessageDelta(finish_reason=None, raw_finish_reason=None, raw=frame))

    def _set_limit(self, reason: FinishReason, name: str, frame: Any, out: list[Event]) -> None:
        self._limit = (reason, name)
        if not self._message_ended:
            # The finish is known now: a stream cut before message_end keeps it.
            out.append(MessageDelta(finish_reason=reason, raw_finish_reason=name, raw=frame))

    def _notice(self, kind: str, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        if kind not in RUN_EVENTS:
            self._start(p, frame, out)
        out.append(Notice(kind=kind, message=p.get("message"), data=p, raw=frame))

    def _end_message(
        self,
        status: Any,
        data: Any,
        frame: Any,
        out: list[Event],
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self._message_ended = True
        if self._text is not None:
            out.append(BlockEnd(index=self._text, kind="text", raw=frame))
            self._text = None
        if self._reasoning is not None:
            self.violation("reasoning never ended", out, event="message_end")
        reason: FinishReason = "stop" if status is None else FINISH_REASONS.get(status, "other")
        raw_reason = status if status is None or isinstance(status, str) else str(status)
        limit = self._limit
        if reason == "stop" and limit is not None:
            reason = limit[0]
            if raw_reason is None:
                raw_reason = limit[1]
        out.append(
            MessageEnd(
                finish_reason=reason,
                raw_finish_reason=raw_reason,
                data=data,
                metadata=metadata,
                # The agent runs its tools; a call without a result still asks nothing.
                tools_run_by_platform=True,
                raw=frame,
            )
        )

    def _message_end(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self._start(p, frame, out)
        if not self._in_run:
            self.terminal_seen = True
        elif not self._announced:
            # In a run (its frames carry run_id) that no RunStatus announced (a workflow
            # stream's, resumed past its start): the message_end is a round's, not the
            # stream's end. The fold hears of the run first, or it would read the message
            # complete where ``events`` reports the stream cut short.
            out.append(self._status(p, frame, "running", terminal=False))
        if self._text is not None:
            out.append(BlockEnd(index=self._text, kind="text", raw=frame))
            self._text = None
        usage = p.get("usage")
        if isinstance(usage, dict) and usage:
            out.append(UsageUpdate(usage=usage_from(usage), raw=frame))
        status = p.get("status")
        data = {"elapsed_ms": p.get("elapsed_ms"), "status": status}
        self._end_message(status, data, frame, out, present(p, END_FIELDS))

    def _error(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self.terminal_seen = True
        # The platform sends {"code", "msg"}; "message" and a string "error" are read too.
        message = _first(p, "message", "msg")
        if message is None:
            message = _error_text(p.get("error"))
        raise StreamError(
            str(message or "the agent run failed"),
            code=p.get("code"),
            provider=self.name,
            raw=frame,
            position=self.position,
        )

    # -- the catch-up: the same events as JSON -------------------------------------------------

    def body_frames(self, body: Any) -> list[Any]:
        """The run events of a catch-up, ``GET …/chat/runs/{run_id}/events?after_sequence=N``,
        as the frames ``GET …/chat/runs/{run_id}/stream?after_sequence=N`` sends for them.

        The server answers ``{"code": 0, "data": [event, …], "msg": …}``, each event the run
        buffer's object ``{run_id, sequence, timestamp, round_id, message_id, type, payload}``
        with a sequence above ``N``; the stream sends the same objects, each as ``event:
        <type>`` with the object as its data. ``body`` is that object, or its ``data`` list.
        An error answer (``code`` other than 0: ``{code, msg, data}``) is a ``StreamError``."""
        name = self.name
        items: Any
        if body.__class__ is dict:
            code = body.get("code")
            items = body.get("data")
            if code is not None and code != 0:
                message = _first(body, "msg", "message")
                raise StreamError(
                    str(message or "the catch-up request failed"),
                    code=code,
                    provider=name,
                    raw=body,
                )
            if items.__class__ is not list:
                keys = ", ".join(map(str, list(body)[:8]))
                raise body_error(
                    name,
                    f"the catch-up body has no 'data' list of run events (its keys: {keys})",
                )
        elif body.__class__ is list:
            items = body
        else:
            raise body_error(
                name,
                f"the catch-up body is a JSON {json_kind(body)}, not the platform's "
                "{code, data, msg} object or its data list",
            )
        frames: list[Any] = []
        for position, item in enumerate(items):
            if item.__class__ is not dict:
                raise body_error(
                    name,
                    f"a run event is a JSON {json_kind(item)}, not an object",
                    position=position,
                )
            frames.append(event_frame(item))
        return frames

    # -- workflow streams -------------------------------------------------------------------

    @property
    def resume_param(self) -> str | None:
        """A workflow stream resumes with ``from_sequence`` (a run stream: ``after_sequence``)."""
        return "from_sequence" if self._workflow else None

    def _workflow_start(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        if not self._started:
            self._started = True
            metadata = present(p, ("workflow_id", "workflow_name"))
            self.start_message(out, frame, metadata=metadata)
        out.append(self._status(p, frame, "running", terminal=False))

    def _node_name(self, p: dict[str, Any]) -> Any:
        return _first(p, "node_label", "node_type", "node_id")

    def _node_start(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self._start(p, frame, out)
        out.append(StepStart(name=self._node_name(p), id=p.get("node_id"), raw=frame))

    def _node_complete(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self._start(p, frame, out)
        out.append(StepEnd(name=self._node_name(p), id=p.get("node_id"), raw=frame))

    def _node_error(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        # A node's failure need not fail the workflow (an error branch may follow); a
        # failed workflow ends with workflow_error.
        self._start(p, frame, out)
        message = _error_text(p.get("error"))
        if message is None:
            message = _first(p, "message", "msg")
        out.append(
            Notice(
                kind="node_error",
                message=message if message is None else str(message),
                data=p,
                raw=frame,
            )
        )
        out.append(StepEnd(name=self._node_name(p), id=p.get("node_id"), raw=frame))

    def _token(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        """``token`` (an LLM or answer node's text) and ``chunk``: text, one block per node."""
        text = p.get("token") if "token" in p else p.get("chunk")
        if type(text) is not str:
            raise self.protocol_error(
                "the node's text is not a string", event=p.get("type"), raw=frame
            )
        node = p.get("node_id")
        if self._text is not None and node != self._text_node:
            out.append(BlockEnd(index=self._text, kind="text", raw=frame))
            self._text = None
        self._text_node = node
        self._append_text(p, text, frame, out)

    def _workflow_complete(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self._start(p, frame, out)
        self.terminal_seen = True
        self._message_ended = True
        if self._text is not None:
            out.append(BlockEnd(index=self._text, kind="text", raw=frame))
            self._text = None
        data = {"outputs": p.get("outputs"), "duration_ms": p.get("duration_ms")}
        out.append(
            MessageEnd(
                finish_reason="stop",
                raw_finish_reason="workflow_complete",
                data=data,
                metadata=present(p, ("duration_ms",)),
                tools_run_by_platform=True,
                raw=frame,
            )
        )
        out.append(self._status(p, frame, "completed", terminal=True))

    def _workflow_error(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self.terminal_seen = True
        # A failure, a cancel or a timeout: the reason as a string or an object's message.
        message = _error_text(p.get("error"))
        if message is None:
            message = _first(p, "message", "msg")
        raise StreamError(
            str(message or "the workflow run failed"),
            code="workflow_error",
            provider=self.name,
            raw=frame,
            position=self.position,
        )

    def _run_start(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self._run_status(p, frame, out, default="running")

    def _run_status(
        self, p: dict[str, Any], frame: Any, out: list[Event], default: str = "unknown"
    ) -> None:
        self._in_run = True
        if not self._ended:
            self.terminal_seen = False
        elif not self._run_ended and not _terminal(p.get("status")):
            # After workflow_complete (after run_end, "event after run_end" said it already):
            # the message stays complete, and the status it now reads ("waiting"…) is one a
            # finished run cannot have.
            name = "run_start" if default == "running" else "run_status"
            self.violation(f"{name} after workflow_complete", out, event=name, raw=frame)
        out.append(self._status(p, frame, str(p.get("status") or default), terminal=False))

    def _run_end(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self._in_run = True
        self._run_ended = True
        self.terminal_seen = True
        status = p.get("status")
        if status not in TERMINAL_RUN_STATUSES:
            self.violation(f"run_end with status {status!r}", out, event="run_end", raw=frame)
        out.append(self._status(p, frame, str(status), terminal=True))
        if self._started and not self._message_ended:
            self._end_message(status, {"status": status}, frame, out)

    def _status(self, p: dict[str, Any], frame: Any, status: str, *, terminal: bool) -> RunStatus:
        self._announced = True
        if terminal:
            self._ended = True
        sequence = p.get("sequence")
        return RunStatus(
            status=status,
            run_id=p.get("run_id"),
            sequence=sequence if sequence.__class__ is int else None,
            terminal=terminal,
            pending_tool_call_id=p.get("pending_tool_call_id"),
            pending_tool_name=p.get("pending_tool_name"),
            pending_tool_input=p.get("pending_tool_input"),
            raw=frame,
        )


def _notice_handler(kind: str) -> _Handler:
    """The handler of a notice event ``kind`` (``Clouisle._notice`` with its kind)."""

    def handler(self: Clouisle, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self._notice(kind, p, frame, out)

    return handler


#: Event type -> handler (the function, called with the provider): made once, not per stream.
Clouisle._ON = {
    "message_start": Clouisle._message_start,
    "rag_context": Clouisle._rag_context,
    "reasoning_start": Clouisle._reasoning_start,
    "reasoning_delta": Clouisle._reasoning_delta,
    "reasoning_end": Clouisle._reasoning_end,
    "content_delta": Clouisle._content_delta,
    "tool_call": Clouisle._tool_call,
    "tool_result": Clouisle._tool_result,
    "media_result": Clouisle._media_result,
    "output_truncated": Clouisle._output_truncated,
    "iteration_cap_reached": Clouisle._iteration_cap,
    "message_end": Clouisle._message_end,
    "error": Clouisle._error,
    "run_start": Clouisle._run_start,
    "run_status": Clouisle._run_status,
    "run_end": Clouisle._run_end,
    # workflow streams
    "workflow_start": Clouisle._workflow_start,
    "node_start": Clouisle._node_start,
    "node_complete": Clouisle._node_complete,
    "node_error": Clouisle._node_error,
    "token": Clouisle._token,
    "chunk": Clouisle._token,
    "workflow_complete": Clouisle._workflow_complete,
    "workflow_error": Clouisle._workflow_error,
}
for _kind in (*NOTICES, *WORKFLOW_NOTICES):
    Clouisle._ON.setdefault(_kind, _notice_handler(_kind))
