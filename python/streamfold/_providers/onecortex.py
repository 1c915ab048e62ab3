"""Onecortex agent runs (``POST /invoke`` with ``"stream": true``): SSE events of format ``v: 1``.

Wire format (docs.onecortex.io "Streaming and events", the seed ``002``): each event is one SSE
frame named by its type, with single-line JSON data carrying ``v`` (``1``) and ``type``::

    event: text             {"delta"}                       a piece of the reply
    event: tool_call_start  {"id", "name"}                  a tool call begins
    event: tool_call_args   {"id", "delta"}                 a piece of its JSON arguments
    event: tool_call_end    {"id"}                          the arguments are complete
    event: tool_result      {"id", "output", "isError"?}    the tool's output (a string)
    event: step_start       {"name"}                        a named stage begins; steps nest
    event: step_end         {"name"}
    event: done             {"result", "sessionId", "versionNumber", "durationMs"}
    event: error            {"code", "message"}
    : ping                                                  a comment; never reaches a provider

Mapping. The reply text runs form ``text`` blocks (a run ends when a tool call starts); each
tool call is a ``tool_call`` block keyed by its ``id`` (argument fragments of several calls may
interleave); ``tool_result`` -> ``ToolResultAdded``; ``step_*`` -> ``StepStart``/``StepEnd``;
``done`` -> ``MessageEnd`` whose ``data`` is ``{result, sessionId, versionNumber, durationMs}``
(the fold compares ``result``, the whole reply, with the joined text) and whose ``metadata``
holds the session fields present (``Message.metadata``); ``error`` -> ``StreamError``. There is
no message-start on the wire: ``MessageStart`` is synthesized before the first event.

``result`` "is always present, and is the whole reply": a run whose text never streamed (no
``text`` event with any text) takes it from ``result``, as one text block opened, filled and
closed just before ``MessageEnd``; a run whose text streamed takes nothing from it (the fold
reports a difference). The platform runs the tools itself (``done``: "The run finished"), so
``MessageEnd.tools_run_by_platform`` is set: a call without a ``tool_result`` does not make
the finish ``tool_calls``.

The rules of the docs are checked: exactly one terminal event, last; ``tool_call_start``
before anything else about its ``id``; ``v`` is ``1``; calls and steps closed at ``done`` (a
failed run may leave them open). A broken rule raises ``ProtocolError`` with ``strict``, else
it is a warning and the event is still mapped (an event about an unknown id opens its call).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from .._errors import StreamError
from .._events import (
    BlockEnd,
    BlockStart,
    Event,
    MessageEnd,
    StepEnd,
    StepStart,
    ToolResultAdded,
)
from .._parts import FinishReason, ToolResult
from ._fast import text_delta
from .base import Provider, body_error, event_frame, json_kind

__all__ = ["FINISH_REASONS", "Onecortex"]

#: Terminal event -> normalized finish reason (docs: "Every run ends in ``done`` or
#: ``error``"). ``error`` raises ``StreamError`` instead of ending the message.
FINISH_REASONS: dict[str, FinishReason] = {"done": "stop", "error": "error"}

#: The terminal events: "Every run ends in ``done`` or ``error``".
TERMINAL_EVENTS = frozenset(FINISH_REASONS)

#: The fields of ``done`` kept in ``MessageEnd.data``.
DONE_FIELDS = ("result", "sessionId", "versionNumber", "durationMs")

#: The fields of ``done`` about the session rather than the reply: ``MessageEnd.metadata``.
SESSION_FIELDS = ("sessionId", "versionNumber", "durationMs")

FORMAT_VERSION = 1

_Handler = Callable[[Any, dict[str, Any], Any, list[Event]], None]


class Onecortex(Provider):
    """Onecortex run stream -> events."""

    name: ClassVar[str] = "onecortex"

    #: Event type -> handler, called as ``handler(self, …)`` (see the end of the module).
    _ON: ClassVar[dict[str, _Handler]]

    def __init__(self, *, strict: bool = False) -> None:
        super().__init__(strict=strict)
        self._started = False
        self._version_checked = False
        self._next_block = 0
        self._text: int | None = None
        #: Some text streamed in ``text`` events: ``done.result`` then adds nothing.
        self._text_streamed = False
        #: tool call id -> block index and name; the call blocks still open.
        self._calls: dict[str, int] = {}
        self._names: dict[str, str | None] = {}
        self._open: set[int] = set()
        #: Names of the open steps, innermost last.
        self._steps: list[str | None] = []

    @classmethod
    def final_text(cls, end: MessageEnd) -> str | None:
        """``done.result`` is the whole reply: the fold checks that it equals the joined
        text."""
        data = end.data
        if isinstance(data, dict):
            result = data.get("result")
            if isinstance(result, str):
                return result
        return None

    # -- the frame loop ----------------------------------------------------------------------

    def handle(self, frame: Any, out: list[Event]) -> None:
        payload = self.json_object(frame)
        event_type = frame.event
        if event_type == "message":
            event_type = payload.get("type")
        if payload.get("v") != FORMAT_VERSION and not self._version_checked:
            self._version_checked = True
            self.violation(
                f"event format version {payload.get('v')!r}, expected {FORMAT_VERSION}",
                out,
                event=event_type,
                raw=frame,
            )
        if self.terminal_seen:
            # "Exactly one terminal event, last": what follows is not part of the answer
            # (appending it would change a message already complete), so it is dropped.
            self.violation("event after the terminal event", out, event=event_type, raw=frame)
            return
        if not self._started:
            self._started = True
            self.start_message(out, frame)
        handler = self._ON.get(event_type) if type(event_type) is str else None
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

    def _close_text(self, frame: Any, out: list[Event]) -> None:
        if self._text is not None:
            out.append(BlockEnd(index=self._text, kind="text", raw=frame))
            self._text = None

    def _open_call(
        self, call_id: str, name: str | None, event: str, frame: Any, out: list[Event]
    ) -> int:
        self._close_text(frame, out)
        index = self._next_block
        self._next_block = index + 1
        self._calls[call_id] = index
        self._names[call_id] = name
        self._open.add(index)
        out.append(BlockStart(index=index, kind="tool_call", id=call_id, name=name, raw=frame))
        return index

    def _call(self, call_id: Any, event: str, frame: Any, out: list[Event]) -> int:
        """The block of call ``call_id``; an unknown id breaks a rule and opens the call."""
        index = self._calls.get(call_id)
        if index is None:
            if call_id.__class__ is not str:
                raise self.protocol_error("tool call id is not a string", event=event, raw=frame)
            self.violation(
                f"{event} for tool call {call_id!r} before its tool_call_start", out, event=event
            )
            index = self._open_call(call_id, None, event, frame, out)
        return index

    # -- one handler per event type -----------------------------------------------------------

    def _text_delta(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        text = p["delta"]
        if text.__class__ is not str:
            raise self.protocol_error("text delta is not a string", event="text", raw=frame)
        index = self._text
        if index is None:
            index = self._text = self._next_block
            self._next_block = index + 1
            out.append(BlockStart(index=index, kind="text", raw=frame))
        if text:
            self._text_streamed = True
        out.append(text_delta(index, "text", text, 0, frame))

    def _tool_call_start(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        call_id = p["id"]
        if call_id.__class__ is not str:
            raise self.protocol_error("tool call id is not a string", event="tool_call_start")
        if call_id in self._calls:
            self.violation(f"tool call id {call_id!r} started twice", out, event="tool_call_start")
        self._open_call(call_id, p.get("name"), "tool_call_start", frame, out)

    def _tool_call_args(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        index = self._call(p["id"], "tool_call_args", frame, out)
        text = p["delta"]
        if text.__class__ is not str:
            raise self.protocol_error("arguments delta is not a string", event="tool_call_args")
        if index not in self._open:
            self.violation(
                f"tool_call_args after tool_call_end for {p['id']!r}", out, event="tool_call_args"
            )
        out.append(text_delta(index, "tool_call", text, 0, frame))

    def _tool_call_end(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        index = self._call(p["id"], "tool_call_end", frame, out)
        if index not in self._open:
            self.violation(f"tool call {p['id']!r} ended twice", out, event="tool_call_end")
            return
        self._open.discard(index)
        out.append(BlockEnd(index=index, kind="tool_call", raw=frame))

    def _tool_result(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        call_id = p["id"]
        if call_id not in self._calls:
            self.violation(
                f"tool_result for tool call {call_id!r} before its tool_call_start",
                out,
                event="tool_result",
            )
        result = ToolResult(
            call_id=call_id,
            output=p.get("output"),
            is_error=bool(p.get("isError")),
            name=self._names.get(call_id),
            raw=p,
        )
        out.append(ToolResultAdded(result=result, raw=frame))

    def _step_start(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        name = p.get("name")
        self._steps.append(name)
        out.append(StepStart(name=name, id=p.get("id"), raw=frame))

    def _step_end(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        name = p.get("name")
        steps = self._steps
        # The innermost open step of that name, looked for from the innermost: steps close in
        # the reverse of their order, so that is the last one at once. (A search from the
        # outermost, and a reversed copy of the list, cost every end the whole depth: a
        # stream of nested steps took time quadratic in their number.)
        for pos in range(len(steps) - 1, -1, -1):
            if steps[pos] == name:
                del steps[pos]
                break
        else:
            if name is None and steps:
                steps.pop()
            else:
                self.violation(
                    f"step_end for step {name!r} that is not open", out, event="step_end"
                )
        out.append(StepEnd(name=name, id=p.get("id"), raw=frame))

    def _done(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self.terminal_seen = True
        self._close_text(frame, out)
        if "result" not in p:
            self.violation("done without result", out, event="done", raw=frame)
        elif not self._text_streamed:
            self._text_from_result(p["result"], frame, out)
        if self._open:
            ids = [i for i, b in self._calls.items() if b in self._open]
            self.violation(f"tool calls never ended: {ids}", out, event="done")
        if self._steps:
            self.violation(f"steps never ended: {self._steps}", out, event="done")
        data = {key: p.get(key) for key in DONE_FIELDS}
        session = {key: p[key] for key in SESSION_FIELDS if p.get(key) is not None}
        out.append(
            MessageEnd(
                finish_reason=FINISH_REASONS["done"],
                raw_finish_reason="done",
                data=data,
                metadata=session or None,
                # "done: The run finished": the agent ran its calls, none waits on the client.
                tools_run_by_platform=True,
                raw=frame,
            )
        )

    def _text_from_result(self, result: Any, frame: Any, out: list[Event]) -> None:
        """The whole reply from ``done.result`` for a run whose text never streamed (a
        framework that reports only ``done``), so the message is not empty. Once: ``done`` is
        the last event."""
        if result.__class__ is not str or not result:
            return
        index = self._next_block
        self._next_block = index + 1
        out.append(BlockStart(index=index, kind="text", raw=frame))
        out.append(text_delta(index, "text", result, 0, frame))
        out.append(BlockEnd(index=index, kind="text", raw=frame))

    def _error(self, p: dict[str, Any], frame: Any, out: list[Event]) -> None:
        self.terminal_seen = True
        raise StreamError(
            str(p.get("message") or "the agent run failed"),
            code=p.get("code"),
            provider=self.name,
            raw=frame,
            position=self.position,
        )

    # -- a JSON caller's answer: the same events ----------------------------------------------

    def body_frames(self, body: Any) -> list[Any]:
        """A JSON caller's answer, as the frames of the run's stream.

        The docs: "A JSON caller gets the tool calls, results and steps in ``events``, and the
        text whole in ``result``". Each of ``events`` is an event object as the stream sends it
        (``{"v": 1, "type": …}``), read as that event's frame; ``result`` then ends the run as
        ``done`` does on the stream ("``result`` is always present, and is the whole reply"),
        with ``sessionId``, ``versionNumber`` and ``durationMs`` when the body carries them. An
        event list that holds its own terminal event (``done``, ``error``) ends there instead.
        Where the text stood among the calls is not in the body: it is one text block after them.
        """
        name = self.name
        if body.__class__ is not dict:
            raise body_error(
                name, f"the JSON answer is a JSON {json_kind(body)}, not an object with 'result'"
            )
        items = body.get("events")
        if items is None:
            items = []
        elif items.__class__ is not list:
            raise body_error(
                name, f"the answer's 'events' is a JSON {json_kind(items)}, not an array"
            )
        frames: list[Any] = []
        ended = False
        for position, item in enumerate(items):
            if item.__class__ is not dict:
                raise body_error(
                    name, f"an event is a JSON {json_kind(item)}, not an object", position=position
                )
            kind = item.get("type")
            ended = ended or (kind.__class__ is str and kind in TERMINAL_EVENTS)
            frames.append(event_frame(item))
        if not ended:
            if "result" not in body:
                keys = ", ".join(map(str, list(body)[:8]))
                raise body_error(
                    name,
                    f"the JSON answer has no 'result' and no terminal event (its keys: {keys})",
                )
            done: dict[str, Any] = {"v": FORMAT_VERSION, "type": "done", "result": body["result"]}
            for key in SESSION_FIELDS:
                if key in body:
                    done[key] = body[key]
            frames.append(event_frame(done))
        return frames


#: Event type -> handler (the function, called with the provider): made once, not per stream.
Onecortex._ON = {
    "text": Onecortex._text_delta,
    "tool_call_start": Onecortex._tool_call_start,
    "tool_call_args": Onecortex._tool_call_args,
    "tool_call_end": Onecortex._tool_call_end,
    "tool_result": Onecortex._tool_result,
    "step_start": Onecortex._step_start,
    "step_end": Onecortex._step_end,
    "done": Onecortex._done,
    "error": Onecortex._error,
}
