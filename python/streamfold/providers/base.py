"""What every provider module implements.

A provider turns frames (``ServerSentEvent`` for SSE providers, parsed values for JSON-lines
providers) into events of :mod:`streamfold.events`. It is fed one frame at a time and appends
the events it makes to ``out``: no generator and no list per frame on the hot path.

Rules every provider follows:

* An unknown event type becomes ``Unknown``; it never raises.
* A provider error inside the stream raises :class:`~streamfold.errors.StreamError` after the
  events before it have been appended to ``out`` (the pipeline yields them first).
* A payload that is not JSON, or a delta for a block never opened, raises
  :class:`~streamfold.errors.ProtocolError` naming provider, event type and frame position.
* Ordering rules (nothing after the terminal event, blocks closed, the provider's own rules)
  raise in ``strict`` mode and are otherwise recorded as ``Notice(kind="warning")`` events.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal

from ..errors import ProtocolError
from ..events import Event, Notice

__all__ = ["Framing", "Provider"]

#: ``"auto"``: the pipeline decides from the first bytes (``{``/``[``: JSON lines, else SSE).
Framing = Literal["sse", "jsonl", "auto"]


class Provider(ABC):
    """Base class of the provider modules."""

    #: The provider's name as users pass it (``"cohere-v2"``).
    name: ClassVar[str] = ""
    #: How the bytes are framed.
    framing: ClassVar[Framing] = "sse"

    def __init__(self, *, strict: bool = False) -> None:
        self.strict = strict
        #: 0-based number of the frame being handled, for error messages.
        self.position = -1
        #: The terminal event has been seen: the stream's outcome is decided.
        self.terminal_seen = False
        #: The provider's resume cursor (Clouisle ``sequence``, Responses ``sequence_number``).
        self.sequence: int | None = None

    @abstractmethod
    def handle(self, frame: Any, out: list[Event]) -> None:
        """Map one frame to events appended to ``out``."""

    def finish(self, out: list[Event]) -> None:
        """End of input: append any closing events, check end-of-stream rules.

        Nothing by default: most providers decide everything at their terminal event.
        """
        return

    # -- helpers for the provider modules ---------------------------------------------------

    def protocol_error(self, message: str, *, event: str | None, raw: Any = None) -> ProtocolError:
        return ProtocolError(
            f"{self.name}: {message} (event {event!r}, frame {self.position})",
            provider=self.name,
            event=event,
            position=self.position,
            raw=raw,
        )

    def violation(
        self, message: str, out: list[Event], *, event: str | None, raw: Any = None
    ) -> None:
        """An ordering rule was broken: raise in strict mode, else record a warning event."""
        if self.strict:
            raise self.protocol_error(message, event=event, raw=raw)
        out.append(
            Notice(
                kind="warning",
                message=f"{self.name}: {message} (event {event!r}, frame {self.position})",
                raw=raw,
            )
        )
