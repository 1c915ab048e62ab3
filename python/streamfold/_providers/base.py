"""What every provider module implements.

A provider turns frames (``ServerSentEvent`` for SSE providers, parsed values for JSON-lines
providers) into events of :mod:`streamfold._events`. It is fed one frame at a time and appends
the events it makes to ``out``: no generator and no list per frame on the hot path.

Rules every provider follows:

* An unknown event type becomes ``Unknown``; it never raises.
* A provider error inside the stream raises :class:`~streamfold.StreamError` after the
  events before it have been appended to ``out`` (the pipeline yields them first).
* A payload that is not JSON, or a delta for a block never opened, raises
  :class:`~streamfold.ProtocolError` naming provider, event type and frame position.
* Ordering rules (nothing after the terminal event, blocks closed, the provider's own rules)
  raise in ``strict`` mode and are otherwise recorded as ``Notice(kind="warning")`` events.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, overload

from .._core import NumberedCut, ServerSentEvent, TemplateCut
from .._errors import ProtocolError
from .._events import BlockStart, Event, MessageEnd, MessageStart, Notice, Unknown
from .._parts import BlockKind, FinishReason

__all__ = [
    "ID",
    "NAME",
    "Finishing",
    "FoldRules",
    "FoldingTarget",
    "Framing",
    "Provider",
    "body_error",
    "end_finished",
    "event_frame",
    "json_kind",
]

#: What ``Provider.wire_str`` calls a tool call's id and name in its warnings.
ID = "a tool call's id"
NAME = "a tool call's name"

#: ``"auto"``: the pipeline decides from the first bytes (``{``/``[``: JSON lines, else SSE).
Framing = Literal["sse", "jsonl", "auto"]

#: ``(cut, event, choice, block, kind)``: see ``Provider.folding_target``.
FoldingTarget = tuple[TemplateCut | NumberedCut, str, int, int, BlockKind]


class Provider(ABC):
    """Base class of the provider modules."""

    #: The provider's name as users pass it (``"cohere-v2"``).
    name: ClassVar[str] = ""
    #: How the bytes are framed.
    framing: ClassVar[Framing] = "sse"
    #: Whether ``folding_target`` may name a target (the class defines it): the fold then
    #: reads each read's frames in steps, to arm the decoder's folding path between them.
    names_folding_targets: ClassVar[bool] = False

    if TYPE_CHECKING:
        # An instance attribute (set in ``__init__``), declared to the type checkers as a
        # property: ``auto`` makes it a property that reads its chosen provider's, and
        # pyright does not let a property override a declared variable.
        @property
        def sequence(self) -> int | None: ...
        @sequence.setter
        def sequence(self, value: int | None) -> None: ...

    def __init__(self, *, strict: bool = False) -> None:
        self.strict = strict
        #: 0-based number of the frame being handled, for error messages.
        self.position = -1
        #: The terminal event has been seen: the stream's outcome is decided.
        self.terminal_seen = False
        #: The provider's resume cursor (Clouisle ``sequence``, Responses ``sequence_number``).
        self.sequence = None
        #: Whether the provider may learn chunk templates (``_chunk_template``) to read its
        #: commonest payloads without a parse. Off, every payload is parsed: the slow, plainly
        #: correct reading that the tests compare the templated one with.
        self.templates = True
        #: ``(frame, payload)``: a frame whose data was already parsed (by ``auto``, to detect
        #: the provider), handed over so that its JSON is not parsed twice. Used once.
        self.preparsed: tuple[Any, Any] | None = None
        #: ``data: [DONE]`` came (``done_marker``).
        self.done_seen = False

    @property
    def resume_param(self) -> str | None:
        """The query parameter a reconnection sends ``sequence`` in, when it is not the
        provider's usual one (Clouisle workflow streams: ``from_sequence``); ``None`` else."""
        return None

    def body_frames(self, body: Any) -> list[Any]:
        """The frames the stream would have sent for ``body``, the parsed JSON of the
        provider's non-streaming form of the same events (:func:`streamfold.fold_json`), so
        that ``handle`` reads them as it reads the stream. A provider without such a form
        raises ``ValueError``."""
        raise ValueError(
            f"provider {self.name!r} has no JSON form of its events that streamfold reads "
            "(fold_json reads provider='clouisle' and provider='onecortex')"
        )

    @property
    def concrete_name(self) -> str:
        """The name of the provider whose format is read: ``name``, except for ``auto``, which
        gives the provider it detected (``auto`` until then)."""
        return self.name

    @abstractmethod
    def handle(self, frame: Any, out: list[Event]) -> None:
        """Map one frame to events appended to ``out``."""

    def finish(self, out: list[Event]) -> None:
        """End of input: append any closing events, check end-of-stream rules.

        Nothing by default: most providers decide everything at their terminal event.
        """
        return

    # -- helpers for the provider modules ---------------------------------------------------

    def folding_target(self) -> FoldingTarget | None:
        """Where the decoder's folding path may put text now (``SSEDecoder.arm``): ``(cut,
        event, choice, block, kind)`` when every frame of type ``event`` whose data ``cut``
        reads is, as long as no other frame comes, exactly a ``BlockDelta`` of that block, of
        that choice and kind, with the text the cut reads, the frame as ``raw`` and nothing
        else; ``None`` when no frame is sure to be. Asked by ``fold`` and ``events`` after each
        batch of frames the provider handled."""
        return None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.names_folding_targets = cls.folding_target is not Provider.folding_target

    # -- the fold's rules: how this provider's events fold where the event contract alone does
    # not say. Class methods: a ``Folder`` fed by hand knows its provider by name only.

    @classmethod
    def final_text(cls, end: MessageEnd) -> str | None:
        """The whole text of the message as the terminal event ``end`` states it in its
        ``data`` (asked only when there is one), which the fold checks against the text it
        joined; ``None`` when the provider states none."""
        return None

    @classmethod
    def resends_call(cls, call_id: Any, start: BlockStart) -> bool:
        """Whether ``start``, a ``tool_call`` block start for a block whose call (of id
        ``call_id``) was started already, sends that call again whole, to replace it in
        place; otherwise the block started twice, which breaks the event contract."""
        return False

    @classmethod
    def same_query(cls, a: Any, b: Any) -> bool:
        """Whether two search queries the stream reports are one (the message lists each
        once): when they are equal, unless the provider reports one query in several forms."""
        return bool(a == b)

    @overload
    def json_object(self, frame: Any) -> dict[str, Any]: ...
    @overload
    def json_object(self, frame: Any, *, blank_is_keepalive: bool) -> dict[str, Any] | None: ...

    def json_object(self, frame: Any, *, blank_is_keepalive: bool = False) -> dict[str, Any] | None:
        """The frame's data parsed as a JSON object, or a ``ProtocolError`` naming provider,
        event and frame position. With ``blank_is_keepalive``, whitespace-only data is a
        keep-alive some hosts send: ``None``, not an error."""
        try:
            # ``frame_json`` inlined for the usual frame (nothing preparsed): a Python call
            # less per frame.
            payload = frame.json() if self.preparsed is None else self.frame_json(frame)
        except ProtocolError as exc:
            if blank_is_keepalive and not frame.data.strip():
                return None
            raise self.protocol_error(exc.message, event=frame.event, raw=frame) from None
        if payload.__class__ is not dict:
            raise self.protocol_error("data is not a JSON object", event=frame.event, raw=frame)
        result: dict[str, Any] = payload
        return result

    def done_marker(self, frame: Any, out: list[Event]) -> bool:
        """Whether ``frame`` is ``data: [DONE]``, the Chat Completions end marker, which hosts
        imitating another format add to it too (OpenRouter after a Responses stream's
        ``response.completed``): the end of the data, never an error. Called for a frame whose
        data did not parse, so a stream without one pays nothing for it. The outcome is still
        the terminal event's: a ``[DONE]`` before it ends a stream cut short."""
        if frame.data != "[DONE]":
            return False
        if self.done_seen:
            self.violation("second [DONE]", out, event=frame.event, raw=frame)
        self.done_seen = True
        return True

    def frame_json(self, frame: Any) -> Any:
        """``frame.json()``, unless ``preparsed`` holds this frame's payload already."""
        preparsed = self.preparsed
        if preparsed is not None:
            self.preparsed = None
            if preparsed[0] is frame:
                return preparsed[1]
        return frame.json()

    def protocol_error(self, message: str, *, event: str | None, raw: Any = None) -> ProtocolError:
        return ProtocolError(
            f"{self.name}: {message} ({self._where(event)})",
            provider=self.name,
            event=event,
            position=self.position,
            raw=raw,
        )

    def _where(self, event: str | None) -> str:
        """Where a message points: the event type when there is one, and the frame."""
        frame = f"frame {self.position}"
        return frame if event is None else f"event {event!r}, {frame}"

    def start_message(
        self,
        out: list[Event],
        raw: Any,
        *,
        id: Any = None,
        model: Any = None,
        role: Any = "assistant",
        **fields: Any,
    ) -> None:
        """Append the ``MessageStart`` of ``fields``; an ``id``, ``model`` or ``role`` that is
        not a string, as the documented types are, is dropped with a warning (strict mode:
        ``ProtocolError``): a host's ``{"id": {…}}`` would otherwise reach the message."""
        if id is not None and id.__class__ is not str:
            id = self._wrong_type("the message id", id, None, out, raw)
        if model is not None and model.__class__ is not str:
            model = self._wrong_type("the model", model, None, out, raw)
        if role.__class__ is not str:
            role = self._wrong_type("the role", role, "assistant", out, raw)
        out.append(MessageStart(id=id, model=model, role=role, raw=raw, **fields))

    def unknown(self, event_type: Any, out: list[Event], raw: Any) -> None:
        """Append ``Unknown(event_type)``; a name that is not a string (a JSON object where
        the event's name goes) is dropped with a warning (strict mode: ``ProtocolError``)."""
        if event_type is not None and event_type.__class__ is not str:
            event_type = self._wrong_type("the event type", event_type, None, out, raw)
        out.append(Unknown(event_type=event_type, raw=raw))

    def wire_str(self, value: Any, what: str, out: list[Event], raw: Any) -> str | None:
        """``value`` if it is a string or ``None``; any other JSON value (where a string is
        documented: a tool call's id or name) is dropped with a warning (strict mode:
        ``ProtocolError``)."""
        if value is None or value.__class__ is str:
            checked: str | None = value
            return checked
        self._wrong_type(what, value, None, out, raw)
        return None

    def _wrong_type(self, what: str, value: Any, default: Any, out: list[Event], raw: Any) -> Any:
        event = getattr(raw, "event", None)
        if event.__class__ is not str:
            event = None
        self.violation(
            f"{what} is a JSON {json_kind(value)}, not a string: dropped", out, event=event, raw=raw
        )
        return default

    def violation(
        self, message: str, out: list[Event], *, event: str | None, raw: Any = None
    ) -> None:
        """An ordering rule was broken: raise in strict mode, else record a warning event."""
        if self.strict:
            raise self.protocol_error(message, event=event, raw=raw)
        out.append(
            Notice(
                kind="warning",
                message=f"{self.name}: {message} ({self._where(event)})",
                raw=raw,
            )
        )


def event_frame(item: dict[str, Any]) -> ServerSentEvent:
    """The SSE frame a stream sends for the event object ``item``: named by its ``type``
    (``message`` when it has none), its data the object as JSON. A non-streaming body's
    events become the frames of their stream this way (``Provider.body_frames``).

    The data is ASCII JSON (``\\uXXXX`` escapes), as a stream may send it: a string holding a
    lone surrogate (``"\\ud800"``, which JSON allows) is read back as the stream's is, where
    UTF-8 data could not hold it."""
    kind = item.get("type")
    return ServerSentEvent(
        event=kind if kind.__class__ is str and kind else "message",
        data=json.dumps(item),
    )


def json_kind(value: Any) -> str:
    """What JSON value ``value`` is, for messages: ``object``, ``array``, ``string``, …"""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "null" if value is None else type(value).__name__


def body_error(provider: str, message: str, *, position: int | None = None) -> ProtocolError:
    """A JSON body that is not the provider's non-streaming form: where it broke."""
    where = "" if position is None else f" (event {position} of the body)"
    return ProtocolError(f"{provider}: {message}{where}", provider=provider, position=position)


def present(mapping: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any] | None:
    """The ``keys`` that ``mapping`` holds with a non-null value, or ``None`` when there are
    none (metadata read from a frame). A loop, not a comprehension: on Python 3.11 a
    comprehension makes a function object at every call, and this runs on every stream."""
    found: dict[str, Any] = {}
    for key in keys:
        value = mapping.get(key)
        if value is not None:
            found[key] = value
    return found or None


class FoldRules(Protocol):
    """The fold's rules of a provider (``Provider.final_text``, ``resends_call``,
    ``same_query``): a provider class, or ``registry.fold_rules``'s for a fold that does not
    know its provider."""

    def final_text(self, end: MessageEnd) -> str | None: ...
    def resends_call(self, call_id: Any, start: BlockStart) -> bool: ...
    def same_query(self, a: Any, b: Any) -> bool: ...


class Finishing(Protocol):
    """A choice whose ``MessageEnd`` waits for the stream's end (``end_finished``)."""

    @property
    def finish(self) -> tuple[FinishReason | None, str | None, Any] | None:
        """``(normalized, raw, frame)`` of its finish reason, once it came (``None`` for both
        when the stream ended without one)."""

    #: Its ``MessageEnd`` was sent.
    closed: bool


def end_finished(
    choices: Mapping[int, Finishing],
    finished: list[int],
    frame: Any,
    out: list[Event],
    *,
    metadata: dict[str, Any] | None = None,
) -> None:
    """``MessageEnd`` for every choice that got its finish reason and has none yet, in choice
    order, with ``frame`` as its ``raw`` (``None``: the frame of its finish reason).
    ``finished`` lists those choices (the provider appends each as it finishes); it is
    emptied, so that each call costs what it ends, not the number of choices.

    For a provider whose choices (OpenAI ``n>1``, Gemini candidates) finish one by one in a
    stream that ends later: a choice's finish does not end the stream, since another choice
    may start after it (a fold ended there would read complete, then incomplete). The finish
    is announced where it arrives (``MessageDelta``) and the messages end with the stream.
    ``metadata`` (the stream's own, e.g. Chat Completions ``system_fingerprint``) goes on each
    ``MessageEnd``."""
    if not finished:
        return
    ended = sorted(finished)
    finished.clear()
    for index in ended:
        state = choices[index]
        finish = state.finish
        if finish is not None and not state.closed:
            state.closed = True
            out.append(
                MessageEnd(
                    finish_reason=finish[0],
                    raw_finish_reason=finish[1],
                    choice=index,
                    metadata=dict(metadata) if metadata else None,
                    raw=frame if frame is not None else finish[2],
                )
            )
