"""The events of an ``sf.astream`` whose body comes from ``sf.Client`` and is read once: no
reconnection (``resume=False``) and no idle timer, as ``sf.astream`` reads by default.

``atimed_events`` serves every stream: a generator around the connection's byte iterator
around the response's read, each of them resumed for every read, and each an object that the
garbage collector walks for as long as the stream is open. A stream that is never reconnected
needs none of that machinery: this one object reads the connection itself and hands each read
to the same ``Resumer`` core (``feed``, then ``end`` once the body ends or fails), so every
rule the core applies (an incomplete stream, a lost connection with its partial, a body that
is no stream) holds unchanged. The tests hold the two paths to the same events and errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._failures import as_connection_lost
from .._resume.cursor import Resumer

if TYPE_CHECKING:
    from .._core import ReadClock
    from .._events import AnyEvent
    from .._transport import Response

__all__ = ["NativeEvents"]

_NO_EVENTS: list[Any] = []


class NativeEvents:
    """``async for event in NativeEvents(response, ...)``: the events of ``response``'s body,
    then ``StopAsyncIteration`` or the error that ended the stream (raised after the events
    the end still gave, as ``atimed_events`` raises it)."""

    __slots__ = (
        "_at",
        "_connected",
        "_core",
        "_error",
        "_events",
        "_finished",
        "_response",
        "_seen",
        "_try_read",
        "ag_running",
    )

    def __init__(
        self,
        response: Response,
        provider: str,
        *,
        strict: bool,
        max_event_bytes: int,
        clock: ReadClock | None,
    ) -> None:
        core = Resumer(
            provider,
            strict=strict,
            max_event_bytes=max_event_bytes,
            max_reconnects=0,
            initial_delay=0.0,
            max_delay=0.0,
            events_path=True,
        )
        core.clock = clock
        core.start()
        self._core = core
        self._response = response
        self._try_read = response.try_read
        #: The events of the last read, given up to ``_at``.
        self._events: list[AnyEvent] = _NO_EVENTS
        self._at = 0
        self._seen = 0
        self._connected = False
        #: The body ended: the events left are the end's, then ``_error`` (if any) is raised.
        self._finished = False
        self._error: BaseException | None = None
        #: A read is being awaited (an async generator's flag of that name, which
        #: ``AsyncEventStream.aclose`` reads: another task closing the stream then closes the
        #: response, which ends that read).
        self.ag_running = False

    def __aiter__(self) -> NativeEvents:
        return self

    async def __anext__(self) -> AnyEvent:
        # One frame per event: a read is awaited right here (``wait_read`` is the loop's wait
        # itself), and only when the last read's events are all given.
        at = self._at
        while at >= len(self._events):
            if self._finished:
                error, self._error = self._error, None
                if error is not None:
                    raise error
                raise StopAsyncIteration
            at = 0
            error = self._core.take_pending()
            if error is None:
                try:
                    chunk = self._try_read()
                    if chunk is None:
                        self.ag_running = True
                        try:
                            chunk = await self._response.wait_read()
                        finally:
                            self.ag_running = False
                    if chunk:
                        self._connected = True
                        self._seen += len(chunk)
                        self._events = self._core.feed(chunk)
                        continue
                except Exception as exc:
                    error = self._failed(exc)
            self._end(error)
        self._at = at + 1
        return self._events[at]

    def _failed(self, exc: Exception) -> Exception:
        """``exc`` as the stream's error: a failing connection is a lost one (as the
        connection's byte iterator raises it for ``atimed_events``)."""
        return as_connection_lost(exc, self._core.name, self._seen) or exc

    def _end(self, error: BaseException | None) -> None:
        ending = self._core.end(error, connected=self._connected)
        # No reconnection is ever made (``max_reconnects=0``): the end is final.
        assert ending.delay is None
        self._finished = True
        self._events = ending.events
        self._error = ending.error

    async def aclose(self) -> None:
        """Nothing to close: the response is the stream's, closed with it."""
