"""The one constructor of the event a stream makes by the thousand.

A frozen dataclass's ``__init__`` sets every field through ``object.__setattr__`` after parsing
keyword arguments; for ``BlockDelta`` that is most of the Python time a provider spends per
text fragment. ``text_delta`` builds the same object in one call into Rust
(``_core.SlotBuilder.build``: the slots stored as ``object.__setattr__`` stores them), and the
decoder's events path (``SSEDecoder.arm_events``) makes its deltas with the same builder. It is
used only when ``BlockDelta``'s fields are exactly the ones it sets (checked at import);
otherwise ``text_delta`` is the ordinary constructor, so a field added later can never be left
unset.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from .._core import SlotBuilder
from .._events import BlockDelta
from .._parts import BlockKind

__all__ = ["TEXT_DELTA_BUILDER", "text_delta"]

_FIELDS = ("raw", "index", "kind", "text", "choice", "logprobs")

TextDelta = Callable[[int, BlockKind, str, int, Any], BlockDelta]


def _builder() -> SlotBuilder | None:
    """``SlotBuilder`` of ``BlockDelta`` from ``(index, kind, text, choice, raw)``, when
    ``BlockDelta``'s fields are exactly those it sets (and ``logprobs``, ``None``)."""
    if tuple(f.name for f in dataclasses.fields(BlockDelta)) != _FIELDS:
        return None
    if getattr(BlockDelta, "__post_init__", None) is not None:
        return None
    return SlotBuilder(
        BlockDelta, ("index", "kind", "text", "choice", "raw"), (("logprobs", None),)
    )


#: What makes a text delta in one call into Rust, for ``text_delta`` and the decoder's
#: events path; ``None`` when the fields do not allow it.
TEXT_DELTA_BUILDER: SlotBuilder | None = _builder()


def _keywords(index: int, kind: BlockKind, text: str, choice: int, raw: Any) -> BlockDelta:
    return BlockDelta(index=index, kind=kind, text=text, choice=choice, raw=raw)


#: ``text_delta(index, kind, text, choice, raw)`` == ``BlockDelta(index=…, kind=…, text=…,
#: choice=…, raw=…)``.
text_delta: TextDelta = _keywords if TEXT_DELTA_BUILDER is None else TEXT_DELTA_BUILDER.build
