"""A cheaper constructor for the one event a stream makes by the thousand.

A frozen dataclass's ``__init__`` sets every field through ``object.__setattr__`` after parsing
keyword arguments; for ``BlockDelta`` that is most of the Python time a provider spends per
text fragment. ``text_delta`` builds the same object by setting its slots directly (in one call
into Rust, ``_core.SlotBuilder``, when the extension has it). It is used
only when ``BlockDelta``'s fields are exactly the ones it sets (checked at import); otherwise it
falls back to the ordinary constructor, so a field added later can never be left unset.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from .. import _core
from .._events import BlockDelta
from .._parts import BlockKind

__all__ = ["TEXT_DELTA_BUILDER", "text_delta"]

_FIELDS = ("raw", "index", "kind", "text", "choice", "logprobs")

TextDelta = Callable[[int, BlockKind, str, int, Any], BlockDelta]

#: ``None`` with an extension built before it existed (the pure-Python stores below are used).
SlotBuilder: Any = getattr(_core, "SlotBuilder", None)


def _builder() -> Any:
    """``SlotBuilder`` of ``BlockDelta`` from ``(index, kind, text, choice, raw)``, when
    ``BlockDelta``'s fields are exactly those it sets (and ``logprobs``, ``None``)."""
    if tuple(f.name for f in dataclasses.fields(BlockDelta)) != _FIELDS:
        return None
    if getattr(BlockDelta, "__post_init__", None) is not None or SlotBuilder is None:
        return None
    return SlotBuilder(
        BlockDelta, ("index", "kind", "text", "choice", "raw"), (("logprobs", None),)
    )


#: What makes a text delta in one call into Rust, for ``text_delta`` and the decoder's
#: events path (``SSEDecoder.arm_events``); ``None`` when the fields do not allow it.
TEXT_DELTA_BUILDER: Any = _builder()


def _slot_setter() -> TextDelta | None:
    if tuple(f.name for f in dataclasses.fields(BlockDelta)) != _FIELDS:
        return None
    if getattr(BlockDelta, "__post_init__", None) is not None:
        return None
    if TEXT_DELTA_BUILDER is not None:
        # The same stores made in Rust, one call per event instead of one per field.
        built: TextDelta = TEXT_DELTA_BUILDER.build
        return built
    new = object.__new__
    # The slot descriptors' setters skip the frozen ``__setattr__``.
    setters = {name: getattr(BlockDelta, name).__set__ for name in _FIELDS}
    set_raw, set_index, set_kind, set_text, set_choice, set_logprobs = (
        setters[name] for name in _FIELDS
    )

    def text_delta(index: int, kind: BlockKind, text: str, choice: int, raw: Any) -> BlockDelta:
        event: BlockDelta = new(BlockDelta)
        set_raw(event, raw)
        set_index(event, index)
        set_kind(event, kind)
        set_text(event, text)
        set_choice(event, choice)
        set_logprobs(event, None)
        return event

    return text_delta


def _keywords(index: int, kind: BlockKind, text: str, choice: int, raw: Any) -> BlockDelta:
    return BlockDelta(index=index, kind=kind, text=text, choice=choice, raw=raw)


#: ``text_delta(index, kind, text, choice, raw)`` == ``BlockDelta(index=…, kind=…, text=…,
#: choice=…, raw=…)``.
text_delta: TextDelta = _slot_setter() or _keywords
