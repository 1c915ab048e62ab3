"""Events and messages as JSON-compatible dicts, and back (the schema is in docs/json.md).

``event_to_dict(event)`` gives ``{"type": <Event.type>, "v": 1, <field>: <value>, ...}``;
``message_to_dict(message)`` gives ``{"type": "message", "v": 1, ...}``. Every value is
made of ``dict`` (``str`` keys), ``list``, ``str``, ``int``, ``float``, ``bool`` and ``None``,
so ``json.dumps`` takes it. The parts of a message and of events (``Usage``, ``Citation``,
``ToolCall``, ``Block``, ``ToolResult``, ``Step``) are nested dicts of their fields.

The frames (``Event.raw``, the frame an event came from, and ``Step.raw``, the frame that
opened a step) are left out unless ``raw=True``: they repeat what the other fields say and are
most of the size. With ``raw=True`` a frame that is a ``ServerSentEvent`` is written as
``{"sse": {"event", "data", "id", "retry"}}`` and any other frame (a JSON-lines line) as
``{"json": value}``. The provider objects the parts keep in their own ``raw`` (``Usage.raw``,
``Citation.raw``, ``ToolResult.raw``) are data, not frames: always written, as they are.

Reading back takes what this writes: a ``v`` above :data:`VERSION` or an unknown ``type`` is
a ``ValueError``; keys it does not know are ignored, so a reader of version 1 reads what a
later minor addition writes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ._core import ServerSentEvent
from ._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    CitationAdded,
    Event,
    MediaAdded,
    MessageDelta,
    MessageEnd,
    MessageStart,
    Notice,
    RunStatus,
    SignatureDelta,
    SourcesAdded,
    StepEnd,
    StepStart,
    ToolResultAdded,
    Unknown,
    UsageUpdate,
)
from .message import Block, Citation, Message, Step, ToolCall, ToolResult, Usage

__all__ = ["VERSION", "event_from_dict", "event_to_dict", "message_from_dict", "message_to_dict"]

#: The schema's version, written as ``"v"`` in every event and message dict.
VERSION = 1

EVENT_CLASSES: tuple[type[Event], ...] = (
    Event,
    MessageStart,
    BlockStart,
    BlockDelta,
    SignatureDelta,
    BlockEnd,
    CitationAdded,
    UsageUpdate,
    MessageDelta,
    MessageEnd,
    StepStart,
    StepEnd,
    ToolResultAdded,
    SourcesAdded,
    MediaAdded,
    RunStatus,
    Notice,
    Unknown,
)
_BY_TYPE: dict[str, type[Event]] = {cls.type: cls for cls in EVENT_CLASSES}


def _names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.name != "raw")


_EVENT_FIELDS: dict[type[Event], tuple[str, ...]] = {cls: _names(cls) for cls in EVENT_CLASSES}


# -- parts ------------------------------------------------------------------------------------


def _frame_to_json(frame: Any) -> Any:
    if frame is None:
        return None
    if isinstance(frame, ServerSentEvent):
        return {
            "sse": {"event": frame.event, "data": frame.data, "id": frame.id, "retry": frame.retry}
        }
    return {"json": frame}


def _frame_from_json(value: Any) -> Any:
    if value is None:
        return None
    if "sse" in value:
        sse = value["sse"]
        return ServerSentEvent(sse.get("event"), sse.get("data"), sse.get("id"), sse.get("retry"))
    return value.get("json")


def _plain(obj: Any, names: tuple[str, ...]) -> dict[str, Any]:
    out = {name: getattr(obj, name) for name in names}
    out["raw"] = obj.raw
    return out


_USAGE = _names(Usage)
_CITATION = _names(Citation)
_RESULT = _names(ToolResult)
_CALL = _names(ToolCall)
_BLOCK = tuple(n for n in _names(Block) if n not in ("tool_call", "citations"))
_STEP = tuple(n for n in _names(Step) if n != "children")


def _usage(u: Usage | None) -> dict[str, Any] | None:
    return None if u is None else _plain(u, _USAGE)


def _usage_back(d: dict[str, Any] | None) -> Usage | None:
    return None if d is None else Usage(**_known(d, _USAGE, raw=True))


def _citation(c: Citation) -> dict[str, Any]:
    return _plain(c, _CITATION)


def _citation_back(d: dict[str, Any]) -> Citation:
    return Citation(**_known(d, _CITATION, raw=True))


def _result(r: ToolResult) -> dict[str, Any]:
    return _plain(r, _RESULT)


def _result_back(d: dict[str, Any]) -> ToolResult:
    return ToolResult(**_known(d, _RESULT, raw=True))


def _call(c: ToolCall | None) -> dict[str, Any] | None:
    return None if c is None else {name: getattr(c, name) for name in _CALL}


def _call_back(d: dict[str, Any] | None) -> ToolCall | None:
    return None if d is None else ToolCall(**_known(d, _CALL))


def _known(d: dict[str, Any], names: tuple[str, ...], *, raw: bool = False) -> dict[str, Any]:
    out = {name: d[name] for name in names if name in d}
    if raw and "raw" in d:
        out["raw"] = d["raw"]
    return out


def _step(s: Step, raw: bool) -> dict[str, Any]:
    out = {name: getattr(s, name) for name in _STEP}
    out["children"] = [_step(child, raw) for child in s.children]
    if raw:
        out["raw"] = _frame_to_json(s.raw)
    return out


def _step_back(d: dict[str, Any]) -> Step:
    step = Step(**_known(d, _STEP))
    step.children = [_step_back(child) for child in d.get("children", ())]
    step.raw = _frame_from_json(d.get("raw"))
    return step


def _block(b: Block) -> dict[str, Any]:
    out = {name: getattr(b, name) for name in _BLOCK}
    out["tool_call"] = _call(b.tool_call)
    out["citations"] = [_citation(c) for c in b.citations]
    return out


def _block_back(d: dict[str, Any]) -> Block:
    return Block(
        **_known(d, _BLOCK),
        tool_call=_call_back(d.get("tool_call")),
        citations=[_citation_back(c) for c in d.get("citations", ())],
    )


def _check(d: dict[str, Any], what: str) -> str:
    if not isinstance(d, dict):
        raise TypeError(f"expected a dict, got {type(d).__name__}")
    version = d.get("v", VERSION)
    if not isinstance(version, int) or version > VERSION:
        raise ValueError(f"{what} dict of schema version {version!r}: this reads {VERSION}")
    kind = d.get("type")
    if not isinstance(kind, str):
        raise ValueError(f"{what} dict without a 'type'")
    return kind


# -- events -----------------------------------------------------------------------------------


def event_to_dict(event: Event, *, raw: bool = False) -> dict[str, Any]:
    """``event`` as a JSON-compatible dict (see the module docstring)."""
    cls = event.__class__
    out: dict[str, Any] = {"type": cls.type, "v": VERSION}
    for name in _EVENT_FIELDS[cls]:
        out[name] = getattr(event, name)
    if cls is UsageUpdate:
        out["usage"] = _usage(out["usage"])
    elif cls is CitationAdded:
        out["citation"] = _citation(out["citation"])
    elif cls is ToolResultAdded:
        out["result"] = _result(out["result"])
    if raw:
        out["raw"] = _frame_to_json(event.raw)
    return out


def event_from_dict(d: dict[str, Any]) -> Event:
    """The event :func:`event_to_dict` wrote."""
    kind = _check(d, "event")
    cls = _BY_TYPE.get(kind)
    if cls is None:
        raise ValueError(f"unknown event type {kind!r}")
    kwargs = {name: d[name] for name in _EVENT_FIELDS[cls] if name in d}
    if cls is UsageUpdate:
        kwargs["usage"] = _usage_back(kwargs.get("usage"))
    elif cls is CitationAdded:
        kwargs["citation"] = _citation_back(kwargs["citation"])
    elif cls is ToolResultAdded:
        kwargs["result"] = _result_back(kwargs["result"])
    frame = _frame_from_json(d.get("raw"))
    if frame is not None:
        kwargs["raw"] = frame
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a required field missing
        raise ValueError(f"{kind} event dict: {exc}") from None


# -- messages ---------------------------------------------------------------------------------

_SPECIAL = {
    "blocks",
    "tool_calls",
    "citations",
    "tool_results",
    "steps",
    "usage",
    "pending_tool_call",
    "notices",
}
_MESSAGE = tuple(n for n in _names(Message) if n not in _SPECIAL)


def _one_message(m: Message, raw: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "message", "v": VERSION}
    for name in _MESSAGE:
        out[name] = getattr(m, name)
    out["blocks"] = [_block(b) for b in m.blocks]
    out["tool_calls"] = [_call(c) for c in m.tool_calls]
    out["citations"] = [_citation(c) for c in m.citations]
    out["tool_results"] = [_result(r) for r in m.tool_results]
    out["steps"] = [_step(s, raw) for s in m.steps]
    out["usage"] = _usage(m.usage)
    out["pending_tool_call"] = _call(m.pending_tool_call)
    out["notices"] = [event_to_dict(n, raw=raw) if isinstance(n, Event) else n for n in m.notices]
    return out


def message_to_dict(message: Message, *, raw: bool = False) -> dict[str, Any]:
    """``message`` as a JSON-compatible dict; with several choices, ``"choices"`` lists every
    choice's dict (this one's again among them, each without ``"choices"``), in choice
    order."""
    out = _one_message(message, raw)
    choices = message.choices
    if len(choices) > 1:
        out["choices"] = [dict(out) if c is message else _one_message(c, raw) for c in choices]
    return out


def _one_message_back(d: dict[str, Any]) -> Message:
    m = Message(**_known(d, _MESSAGE))
    m.blocks = [_block_back(b) for b in d.get("blocks", ())]
    m.tool_calls = [c for c in map(_call_back, d.get("tool_calls", ())) if c is not None]
    # A block's call is the message's call with that block, as the fold builds them.
    by_block = {c.block: c for c in m.tool_calls if c.block is not None}
    for b in m.blocks:
        same = by_block.get(b.index)
        if b.tool_call is not None and same is not None and same == b.tool_call:
            b.tool_call = same
    m.citations = [_citation_back(c) for c in d.get("citations", ())]
    m.tool_results = [_result_back(r) for r in d.get("tool_results", ())]
    m.steps = [_step_back(s) for s in d.get("steps", ())]
    m.usage = _usage_back(d.get("usage"))
    m.pending_tool_call = _call_back(d.get("pending_tool_call"))
    m.notices = [
        event_from_dict(n) if isinstance(n, dict) and "type" in n else n
        for n in d.get("notices", ())
    ]
    return m


def message_from_dict(d: dict[str, Any]) -> Message:
    """The message :func:`message_to_dict` wrote (with its choices)."""
    kind = _check(d, "message")
    if kind != "message":
        raise ValueError(f"not a message dict: type {kind!r}")
    message = _one_message_back(d)
    if "choices" in d:
        choices = [
            message if c.get("choice", 0) == message.choice else _one_message_back(c)
            for c in d["choices"]
        ]
        for c in choices:
            c.choices = choices
    return message
