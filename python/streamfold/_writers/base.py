"""What every writer shares: the dispatch from event class to handler, the count of what the
target cannot express, JSON and SSE framing, and the rule for provider-opaque values.

A writer is fed the events of one stream in order (``write``) and returns, for each, the bytes
its provider would have sent for it: often ``b""`` (an event the target says nothing for, or
one it says later, such as a finish held for the terminal event). ``close()`` returns what is
still held. A terminal event is written only for a ``MessageEnd``, and an in-stream error only
for ``error()``: a writer never makes a cut stream look finished, or a failed one look cut.

What the target cannot express is dropped and counted (``dropped``, ``dropped_by``), never
invented. Values that mean something only to the provider that made them (Anthropic thinking
signatures, Gemini ``thoughtSignature``, Responses ``encrypted_content`` and item ids) are
written only when ``source`` names the writer's own provider: a signature is proof of a
provider's own reasoning, and another provider would refuse the next request that carried it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from .._errors import StreamError
from .._events import Event
from .._parts import FinishReason, Usage

__all__ = ["WRITERS", "Writer", "arguments_text", "dumps", "sse_data", "sse_named"]

_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_ASCII = json.JSONEncoder(separators=(",", ":"))


def dumps(value: Any) -> bytes:
    """``value`` as compact JSON in UTF-8 (a lone surrogate, which UTF-8 cannot carry, is
    written as its ``\\u`` escape)."""
    text = _COMPACT.encode(value)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return _ASCII.encode(value).encode()


def arguments_text(value: Any) -> str:
    """A whole call's arguments as the JSON text the fold would make of them (its
    ``arguments_json``): a ``str`` is already that text (Mistral may send either)."""
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def sse_data(value: Any) -> bytes:
    """``data: <json>`` and the blank line: JSON text holds no line end, so it is one line."""
    return b"data: " + dumps(value) + b"\n\n"


def sse_named(event: str, value: Any) -> bytes:
    """``event: <name>``, ``data: <json>`` and the blank line."""
    return b"event: " + event.encode() + b"\ndata: " + dumps(value) + b"\n\n"


#: The registry ``Writer(provider)`` reads: provider name -> writer class.
WRITERS: dict[str, type[Writer]] = {}


class Writer:
    """Events to a provider's wire format: ``sf.Writer(provider)`` makes the writer of
    ``provider``; ``write(event)`` returns the bytes for one event, ``close()`` the rest.

    ``source`` names the provider the events were read from, when known: provider-opaque
    values (signatures, encrypted reasoning) are written only when it is the writer's own.
    """

    #: The provider this writer writes (its ``provider=`` name).
    name: ClassVar[str] = ""
    #: Other names the registry knows the writer by.
    aliases: ClassVar[tuple[str, ...]] = ()
    #: Normalized finish reason -> the target's own value.
    finish_values: ClassVar[dict[FinishReason, str]] = {}
    #: The target's own values, which a source's raw finish reason may already be.
    own_finish_values: ClassVar[dict[str, FinishReason]] = {}
    #: Event class -> handler, filled by each writer's ``handlers``.
    _dispatch: ClassVar[dict[type[Event], Callable[[Any, Any], bytes]]] = {}

    def __new__(cls, provider: str | None = None, *, source: str | None = None) -> Writer:
        if cls is not Writer:
            return object.__new__(cls)
        if provider is None:
            raise TypeError("Writer(provider): name the provider to write")
        target = WRITERS.get(provider)
        if target is None:
            raise ValueError(
                f"no writer for provider {provider!r}; writers: {', '.join(sorted(WRITERS))}"
            )
        return object.__new__(target)

    def __init__(self, provider: str | None = None, *, source: str | None = None) -> None:
        if provider is not None and WRITERS.get(provider) is not type(self):
            raise ValueError(f"{type(self).__name__} writes {self.name!r}, not {provider!r}")
        #: The provider the events come from, when known.
        self.source = source
        #: Provider-opaque values are written (the events come from this same provider).
        self.keep_opaque = source is not None and WRITERS.get(source) is type(self)
        #: How many events (or parts of events) the target could not express.
        self.dropped = 0
        #: The same, by what was dropped (an event type, or ``"<type>:<part>"``).
        self.dropped_by: dict[str, int] = {}
        #: A terminal event was written.
        self.ended = False
        #: An in-stream error was written.
        self.failed = False
        #: The latest usage seen (every provider reports a running total).
        self.usage: Usage | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.name:
            for name in (cls.name, *cls.aliases):
                WRITERS[name] = cls

    def write(self, event: Event) -> bytes:
        """The bytes the provider would have sent for ``event`` (often ``b""``)."""
        handler = self._dispatch.get(event.__class__)
        if handler is None:
            return self.drop(event.type)
        return handler(self, event)

    def write_all(self, events: Iterable[Event]) -> bytes:
        """The bytes for every event of ``events``, joined."""
        write = self.write
        return b"".join([write(e) for e in events])

    def close(self) -> bytes:
        """What is still held (nothing is invented: a stream that did not end stays cut)."""
        return b""

    def error(self, exc: BaseException) -> bytes:
        """The target's in-stream error for ``exc`` (a ``StreamError`` keeps its code and
        message; anything else is written with no code and its text). Written once, and not
        after the target's terminal event."""
        if self.failed or self.closed_terminal():
            return b""
        self.failed = True
        if isinstance(exc, StreamError):
            code = exc.code
            message = exc.message
        else:
            code, message = None, str(exc) or type(exc).__name__
        return self.write_error(code, message)

    def closed_terminal(self) -> bool:
        """The terminal event is out: nothing can follow it."""
        return self.ended

    def write_error(self, code: str | int | None, message: str) -> bytes:
        """The target's in-stream error, and whatever must precede it. Every writer defines
        it (``Writer(provider)`` always makes one of them); the base is no ABC so that
        ``Writer(provider)`` type-checks as the factory it is."""
        raise NotImplementedError(f"{type(self).__name__} writes no error")

    # -- helpers for the writers ---------------------------------------------------------

    def drop(self, what: str) -> bytes:
        self.dropped += 1
        self.dropped_by[what] = self.dropped_by.get(what, 0) + 1
        return b""

    def finish_value(self, reason: FinishReason | None, raw: str | None) -> str:
        """The target's finish value: the source's own value when the target has it with the
        same meaning, else the target's value for the normalized reason."""
        if raw is not None and self.own_finish_values.get(raw) == reason:
            return raw
        return self.finish_values.get(reason or "stop", self.finish_values["stop"])
