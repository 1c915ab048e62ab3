"""Helpers for the Cohere, Onecortex, Clouisle and auto provider tests: build streams, run them,
and fold events with a small, obviously-correct reference (independent of ``sf.fold``).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

import streamfold as sf
from streamfold._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    CitationAdded,
    Event,
    MessageEnd,
    Notice,
    ToolResultAdded,
    Unknown,
    UsageUpdate,
)
from streamfold._types import ProviderName


def sse(*frames: tuple[str | None, Any]) -> bytes:
    """SSE bytes: one ``(event name or None, payload)`` per frame; a ``str`` payload is sent
    as it is, anything else as compact JSON."""
    parts = []
    for name, payload in frames:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        head = f"event: {name}\n" if name is not None else ""
        parts.append(f"{head}data: {data}\n\n")
    return "".join(parts).encode()


def named(*frames: dict[str, Any], key: str = "type") -> bytes:
    """SSE bytes for payloads named by their own ``type`` (as Cohere v2 and Onecortex send)."""
    return sse(*((str(p[key]), p) for p in frames))


def jsonl(*lines: Any) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


@dataclass
class Run:
    """What ``sf.events`` produced: the events, then the error it raised (if any)."""

    events: list[Event]
    error: sf.StreamfoldError | None

    def outcome(self) -> tuple[list[Event], tuple[str, str] | None]:
        """Comparable form: events (``raw`` excluded by their ``__eq__``) and the error."""
        err = None if self.error is None else (type(self.error).__name__, str(self.error))
        return self.events, err

    def of(self, cls: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, cls)]

    @property
    def warnings(self) -> list[str]:
        return [
            e.message or "" for e in self.events if isinstance(e, Notice) and e.kind == "warning"
        ]


def run(chunks: bytes | list[bytes], provider: ProviderName, *, strict: bool = False) -> Run:
    events: list[Event] = []
    try:
        for event in sf.events(
            [chunks] if isinstance(chunks, bytes) else chunks, provider, strict=strict
        ):
            events.append(event)
    except sf.StreamfoldError as exc:
        return Run(events, exc)
    return Run(events, None)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c for c in cuts if 0 < c < len(data)})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def cuts_for(data: bytes) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(min_value=0, max_value=len(data)), max_size=40)


@dataclass
class RefBlock:
    kind: str
    text: str = ""
    id: str | None = None
    name: str | None = None
    whole_arguments: Any = None
    whole: bool = False
    closed: bool = False

    def arguments(self) -> Any:
        """A tool call's arguments: whole, or the joined fragments parsed once ("" -> {})."""
        if self.whole:
            return self.whole_arguments
        return json.loads(self.text) if self.text.strip() else {}


@dataclass
class Folded:
    blocks: dict[int, RefBlock] = field(default_factory=dict)
    citations: list[sf.Citation] = field(default_factory=list)
    usage: sf.Usage | None = None
    finish_reason: str | None = None
    raw_finish_reason: str | None = None
    end_data: Any = None
    ends: int = 0
    tool_results: list[sf.ToolResult] = field(default_factory=list)
    unknown: list[str | None] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[RefBlock]:
        return [b for _, b in sorted(self.blocks.items()) if b.kind == kind]

    def texts(self, kind: str) -> list[str]:
        return [b.text for b in self.of_kind(kind)]


def reference_fold(events: list[Event]) -> Folded:
    """Fold events, asserting the block discipline the real fold relies on."""
    f = Folded()
    for e in events:
        if isinstance(e, BlockStart):
            known = f.blocks.get(e.index)
            if known is not None:
                # Only a whole call sent again for its closed block (Clouisle's update).
                assert known.kind == e.kind == "tool_call", f"block {e.index} started twice"
                assert e.complete and known.closed and e.id is not None and e.id == known.id
                known.whole, known.whole_arguments, known.text = True, e.arguments, e.text
                continue
            f.blocks[e.index] = RefBlock(
                kind=e.kind,
                text=e.text,
                id=e.id,
                name=e.name,
                whole_arguments=e.arguments,
                whole=e.complete,
            )
        elif isinstance(e, BlockDelta):
            block = f.blocks[e.index]
            assert not block.closed, f"delta for closed block {e.index}"
            assert not block.whole, f"delta for whole block {e.index}"
            assert block.kind == e.kind
            block.text += e.text
        elif isinstance(e, BlockEnd):
            block = f.blocks[e.index]
            assert not block.closed, f"block {e.index} closed twice"
            assert block.kind == e.kind
            block.closed = True
        elif isinstance(e, CitationAdded):
            f.citations.append(e.citation)
        elif isinstance(e, UsageUpdate):
            f.usage = e.usage
        elif isinstance(e, MessageEnd):
            f.ends += 1
            f.finish_reason = e.finish_reason
            f.raw_finish_reason = e.raw_finish_reason
            f.end_data = e.data
        elif isinstance(e, ToolResultAdded):
            f.tool_results.append(e.result)
        elif isinstance(e, Unknown):
            f.unknown.append(e.event_type)
    return f


def json_values(keys: list[str]) -> st.SearchStrategy[Any]:
    """Arbitrary JSON values whose objects use the provider's own field names."""
    scalars = st.none() | st.booleans() | st.integers(-2, 3) | st.text(max_size=4)
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(keys), inner, max_size=4)
        ),
        max_leaves=12,
    )


def payloads(
    types: list[str], keys: list[str], *, type_key: str = "type"
) -> st.SearchStrategy[Any]:
    """Event payloads of the provider's event types with arbitrary (often malformed) fields."""
    return st.builds(
        lambda t, fields: {**fields, type_key: t},
        st.sampled_from(types),
        st.dictionaries(st.sampled_from(keys), json_values(keys), max_size=5),
    )


def check_never_crashes(data: bytes, provider: ProviderName, *, strict: bool) -> None:
    """Only ``StreamfoldError`` may escape; a strict run without error is well-formed."""
    result = run(data, provider, strict=strict)
    assert all(isinstance(e, Event) for e in result.events)
    if strict and result.error is None:
        reference_fold(result.events)


def frames_of(*streams: bytes, without: tuple[bytes, ...] = ()) -> list[bytes]:
    """The frames (SSE events or JSON lines) of streams, each as complete bytes, deduplicated,
    leaving out those containing any of ``without``."""
    found: dict[bytes, None] = {}
    for data in streams:
        sep = b"\n" if data.lstrip()[:1] == b"{" else b"\n\n"
        for piece in data.split(sep):
            if piece.strip() and not any(w in piece for w in without):
                found[piece + sep] = None
    return list(found)


def frame_list(data: bytes) -> list[bytes]:
    """The frames of one stream in order, each as complete bytes."""
    sep = b"\n" if data.lstrip()[:1] == b"{" else b"\n\n"
    return [piece + sep for piece in data.split(sep) if piece.strip()]


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with one frame dropped, duplicated elsewhere, or moved elsewhere."""
    frames = frame_list(data)
    i = draw(st.integers(0, len(frames) - 1))
    j = draw(st.integers(0, len(frames)))
    how = draw(st.sampled_from(["drop", "duplicate", "move"]))
    frame = frames[i]
    if how != "duplicate":
        del frames[i]
    if how != "drop":
        frames.insert(min(j, len(frames)), frame)
    return b"".join(frames)
