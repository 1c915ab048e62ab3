"""The JSON form's shared pieces (the schema is in docs/json.md): the version, the frames, and
the parts of messages and events; ``_events`` and ``_message`` build their dicts on them.

``event.to_dict()`` gives ``{"type": <Event.type>, "v": 1, <field>: <value>, ...}``;
``message.to_dict()`` gives ``{"type": "message", "v": 1, ...}``. Every value is
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
from ._parts import Block, Citation, Step, ToolCall, ToolResult, Usage

__all__ = [
    "VERSION",
    "block_back",
    "block_dict",
    "call_back",
    "call_dict",
    "check",
    "citation_back",
    "citation_dict",
    "field_names",
    "frame_from_json",
    "frame_to_json",
    "known",
    "result_back",
    "result_dict",
    "step_back",
    "step_dict",
    "usage_back",
    "usage_dict",
]

#: The schema's version, written as ``"v"`` in every event and message dict.
VERSION = 1


def field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.name != "raw")


# -- parts ------------------------------------------------------------------------------------


def frame_to_json(frame: Any) -> Any:
    if frame is None:
        return None
    if isinstance(frame, ServerSentEvent):
        return {
            "sse": {"event": frame.event, "data": frame.data, "id": frame.id, "retry": frame.retry}
        }
    return {"json": frame}


def frame_from_json(value: Any) -> Any:
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


_USAGE = field_names(Usage)
_CITATION = field_names(Citation)
_RESULT = field_names(ToolResult)
_CALL = field_names(ToolCall)
_BLOCK = tuple(n for n in field_names(Block) if n not in ("tool_call", "citations"))
_STEP = tuple(n for n in field_names(Step) if n != "children")


def usage_dict(u: Usage | None) -> dict[str, Any] | None:
    return None if u is None else _plain(u, _USAGE)


def usage_back(d: dict[str, Any] | None) -> Usage | None:
    return None if d is None else Usage(**known(d, _USAGE, raw=True))


def citation_dict(c: Citation) -> dict[str, Any]:
    return _plain(c, _CITATION)


def citation_back(d: dict[str, Any]) -> Citation:
    return Citation(**known(d, _CITATION, raw=True))


def result_dict(r: ToolResult) -> dict[str, Any]:
    return _plain(r, _RESULT)


def result_back(d: dict[str, Any]) -> ToolResult:
    return ToolResult(**known(d, _RESULT, raw=True))


def call_dict(c: ToolCall | None) -> dict[str, Any] | None:
    return None if c is None else {name: getattr(c, name) for name in _CALL}


def call_back(d: dict[str, Any] | None) -> ToolCall | None:
    return None if d is None else ToolCall(**known(d, _CALL))


def known(d: dict[str, Any], names: tuple[str, ...], *, raw: bool = False) -> dict[str, Any]:
    out = {name: d[name] for name in names if name in d}
    if raw and "raw" in d:
        out["raw"] = d["raw"]
    return out


def step_dict(s: Step, raw: bool) -> dict[str, Any]:
    out = {name: getattr(s, name) for name in _STEP}
    out["children"] = [step_dict(child, raw) for child in s.children]
    if raw:
        out["raw"] = frame_to_json(s.raw)
    return out


def step_back(d: dict[str, Any]) -> Step:
    step = Step(**known(d, _STEP))
    step.children = [step_back(child) for child in d.get("children", ())]
    step.raw = frame_from_json(d.get("raw"))
    return step


def block_dict(b: Block) -> dict[str, Any]:
    out = {name: getattr(b, name) for name in _BLOCK}
    out["tool_call"] = call_dict(b.tool_call)
    out["citations"] = [citation_dict(c) for c in b.citations]
    return out


def block_back(d: dict[str, Any]) -> Block:
    return Block(
        **known(d, _BLOCK),
        tool_call=call_back(d.get("tool_call")),
        citations=[citation_back(c) for c in d.get("citations", ())],
    )


def check(d: dict[str, Any], what: str) -> str:
    if not isinstance(d, dict):
        raise TypeError(f"expected a dict, got {type(d).__name__}")
    version = d.get("v", VERSION)
    if not isinstance(version, int) or version > VERSION:
        raise ValueError(f"{what} dict of schema version {version!r}: this reads {VERSION}")
    kind = d.get("type")
    if not isinstance(kind, str):
        raise ValueError(f"{what} dict without a 'type'")
    return kind
