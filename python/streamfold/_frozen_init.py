"""A cheaper ``__init__`` for the frozen, slotted event dataclasses.

The ``__init__`` that ``dataclasses`` writes for a frozen class stores each field with
``object.__setattr__(self, name, value)``, to get past the frozen ``__setattr__``. That goes
through a slot wrapper which copies its arguments into a new tuple and then looks the field up
by name on the class: most of the cost of making an event, which was about 1.6 µs for a
``MessageStart``. Every provider makes a few such events per stream (start, block start and
end, usage, finish), and some make one per chunk (Gemini's cumulative usage), so on short
streams they are a good part of the whole: measured under callgrind (release build, one event
per read), the ``dataclasses`` ``__init__`` makes a 5-event fold 6-10% dearer (Anthropic
text 534,571 instructions against 485,691), a 500-event one 1.5-3%.

:func:`fast_init` gives the class an ``__init__`` that stores every field in one call into
Rust (``SlotBuilder.init``, which takes the keywords and the fields' defaults): the generic
attribute stores ``object.__setattr__`` makes, so the frozen ``__setattr__`` is skipped exactly
as before. Any call it does not take as it is (a positional argument, an unknown keyword, a
required one missing) goes to the ``dataclasses`` ``__init__``, which raises its own error.
The signature, ``__qualname__`` and the rest are the original's; nothing else about the class
changes (``__eq__``, ``__repr__``, ``__hash__``, ``replace``, pickling).

Only the simple case is rewritten: every field keyword-only and in ``__init__``, no default
factory, no ``__post_init__``, each field a slot. Anything else keeps the ``dataclasses``
``__init__`` (the tests check that every event class is in the simple case, so a field added
later cannot slip onto the slow path unnoticed).
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from typing import Any, TypeVar

from . import _core

__all__ = ["fast_init", "has_fast_init"]

T = TypeVar("T", bound=type)

#: Marks an ``__init__`` written here; it also keeps the one ``dataclasses`` wrote.
_ORIGINAL = "__dataclass_init__"


def fast_init(cls: T) -> T:
    """Give the frozen, slotted dataclass ``cls`` the one-call ``__init__`` (in
    place); returns ``cls`` unchanged when it is not the simple case."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen:
        return cls
    fields = dataclasses.fields(cls)
    if (
        hasattr(cls, "__post_init__")
        or any(not f.init or not f.kw_only for f in fields)
        or any(f.default_factory is not dataclasses.MISSING for f in fields)
    ):
        return cls
    if any(not isinstance(getattr(cls, f.name, None), types.MemberDescriptorType) for f in fields):
        return cls
    names = tuple(f.name for f in fields)
    defaults = {f.name: f.default for f in fields if f.default is not dataclasses.MISSING}
    fill = _core.SlotBuilder(cls, names, (), defaults).init
    original = cls.__dict__["__init__"]

    def __init__(self: Any, /, *args: Any, **kwargs: Any) -> None:
        if args or not fill(self, kwargs):
            original(self, *args, **kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__module__ = cls.__module__
    __init__.__doc__ = original.__doc__
    __init__.__annotations__ = dict(original.__annotations__)
    __init__.__signature__ = inspect.signature(original)  # type: ignore[attr-defined]
    setattr(__init__, _ORIGINAL, original)
    type.__setattr__(cls, "__init__", __init__)
    return cls


def has_fast_init(cls: type) -> bool:
    """Whether :func:`fast_init` rewrote ``cls.__init__``."""
    return hasattr(cls.__dict__.get("__init__"), _ORIGINAL)
