"""The exception tree: one root, leaves that also subclass what users already catch.

Messages say where: the provider, the event and its position in the stream.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TypeVar

from ._core import register_errors, register_transport_errors

if TYPE_CHECKING:
    from ._message import Message

__all__ = [
    "ConnectionLostError",
    "IdleTimeoutError",
    "IncompleteJsonError",
    "IncompleteStreamError",
    "InvalidEventJsonError",
    "InvalidJsonError",
    "ProtocolError",
    "StreamError",
    "StreamfoldError",
    "add_hint",
]


class StreamfoldError(Exception):
    """Root of every error streamfold raises.

    ``partial`` is the message folded so far when the error comes from a fold, else ``None``
    (``sf.events``, ``JsonAccumulator``), so ``except StreamfoldError as err: err.partial``
    holds for every error.
    """

    #: The ``Message`` folded so far; ``None`` when nothing was folded (``sf.events``,
    #: ``JsonAccumulator``). A fold's errors always have one.
    partial: Message | None = None
    #: How many requests ``sf.stream`` / ``sf.astream`` made before raising this error when
    #: opening the stream: 1, plus the retries of a refused first request (``max_retries``).
    attempts: int = 1
    #: The provider the stream's first bytes read as, when that is not the one named
    #: (``provider="gemini"`` given an OpenAI stream): the message then ends with :attr:`hint`.
    detected_provider: str | None = None
    #: The advice the message ends with for a stream read as the wrong provider (``" (its
    #: first frames read as provider='openai': ...)"``), or ``None``.
    hint: str | None = None


class ProtocolError(StreamfoldError, ValueError):
    """The bytes break the provider's format.

    Raised for a data payload that is not JSON, a delta for a block never started, an event
    larger than ``max_event_bytes``, a JSON line that does not parse, or (with ``strict=True``)
    a broken ordering rule. ``events`` holds whatever was decoded from the same chunk before the
    error, so nothing the stream delivered is lost.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        event: str | None = None,
        position: int | None = None,
        line: int | None = None,
        limit: int | None = None,
        events: list[Any] | None = None,
        raw: Any = None,
        partial: Message | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.event = event
        self.position = position
        self.line = line
        self.limit = limit
        self.events: list[Any] = list(events) if events is not None else []
        self.raw = raw
        self.partial = partial


class InvalidEventJsonError(json.JSONDecodeError, ProtocolError):
    """``ServerSentEvent.json()`` on data that is not JSON: a :class:`ProtocolError`, and also
    the ``json.JSONDecodeError`` that httpx-sse's ``json()`` raises, so code written to catch
    that moves over unchanged. ``doc`` is the data; ``pos`` (characters), ``lineno`` and
    ``colno`` place the error as ``json.loads`` does; ``byte`` is its UTF-8 offset."""

    def __init__(self, message: str, *, doc: str = "", byte: int = 0, **kwargs: Any) -> None:
        ProtocolError.__init__(self, message, **kwargs)
        # ``json.JSONDecodeError``'s own attributes (its ``__init__`` would replace the message).
        pos = len(doc.encode("utf-8", "surrogatepass")[:byte].decode("utf-8", "ignore"))
        self.msg = message
        self.doc = doc
        self.pos = pos
        self.byte = byte
        self.lineno = doc.count("\n", 0, pos) + 1
        self.colno = pos - doc.rfind("\n", 0, pos)

    def __reduce__(self) -> tuple[Any, ...]:
        # ``json.JSONDecodeError.__reduce__`` would call ``cls(msg, doc, pos)``.
        return (self.__class__, (self.message,), self.__dict__)


class IncompleteStreamError(StreamfoldError):
    """The input ended without the provider's terminal event.

    ``partial`` is the message folded so far (open tool calls marked incomplete). A dropped
    connection must never look like a short answer.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        partial: Message | None = None,
        position: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.partial = partial
        self.position = position


class ConnectionLostError(IncompleteStreamError):
    """The connection failed while the body was being read (its ``__cause__`` is the client's
    own exception). A subclass of ``IncompleteStreamError``: the answer is cut short."""


class IdleTimeoutError(StreamfoldError, TimeoutError):
    """No byte arrived for ``idle_timeout`` seconds: the connection is treated as dropped.

    A resumable stream reconnects after it (then, if it gives up, it is the ``__cause__`` of
    ``IncompleteStreamError``); on a first connection that sent no byte of its body, or no
    response head, it is raised as it is (``__cause__``: the client's own timeout, when it
    had one). Also a ``TimeoutError``, so ``except TimeoutError`` catches it.

    The message names the provider and where the stream stood: ``position`` (bytes of the
    stream received before the silence, over all its connections), ``frames`` (its frames
    received), ``last_event_id`` (``""`` when it sent none) and ``connection`` (1 for the
    first). ``waiting_for`` is ``"response"`` (no response head came) or ``"bytes"``.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        idle_timeout: float | None = None,
        waiting_for: str = "bytes",
        position: int = 0,
        frames: int = 0,
        last_event_id: str = "",
        connection: int = 1,
        partial: Message | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.idle_timeout = idle_timeout
        self.waiting_for = waiting_for
        self.position = position
        self.frames = frames
        self.last_event_id = last_event_id
        self.connection = connection
        self.partial = partial

    @classmethod
    def silence(
        cls,
        provider: str,
        idle_timeout: float,
        *,
        waiting_for: str = "bytes",
        position: int = 0,
        frames: int = 0,
        last_event_id: str = "",
        connection: int = 1,
    ) -> IdleTimeoutError:
        """The error for ``idle_timeout`` s of silence, its message saying where."""
        silent = "no response" if waiting_for == "response" else "no bytes"
        where = f"after {position} bytes and {frames} frames of the stream"
        if last_event_id:
            where += f" (last event id {last_event_id!r})"
        return cls(
            f"{provider}: {silent} for {idle_timeout} s (idle_timeout) on connection "
            f"{connection}, {where}",
            provider=provider,
            idle_timeout=idle_timeout,
            waiting_for=waiting_for,
            position=position,
            frames=frames,
            last_event_id=last_event_id,
            connection=connection,
        )


class StreamError(StreamfoldError):
    """The provider reported an error: inside the stream after a 200, or as an HTTP error status.

    ``retryable_without_duplicate`` is true only when nothing of the answer had been produced,
    so retrying cannot show the user a second, different answer.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str | int | None = None,
        provider: str | None = None,
        raw: Any = None,
        partial: Message | None = None,
        status: int | None = None,
        retryable_without_duplicate: bool = False,
        position: int | None = None,
        raw_finish_reason: str | None = None,
        retry_after: float | None = None,
        event: str | None = None,
        retry_after_header: str | None = None,
    ) -> None:
        if event is None:
            event = _event_of(raw)
        super().__init__(_described(message, provider, code, event, position))
        #: The provider's own error message (``str(err)`` adds the provider, the code, the
        #: event and the frame).
        self.message = message
        #: The type of the event the error came in (SSE ``event``, Cohere v1 ``event_type``).
        self.event = event
        self.code = code
        self.provider = provider
        self.raw = raw
        self.partial = partial
        self.status = status
        self.retryable_without_duplicate = retryable_without_duplicate
        self.position = position
        #: The provider's finish value when the error came as a finish (Cohere ``ERROR``,
        #: Responses ``failed``); the partial message carries it too.
        self.raw_finish_reason = raw_finish_reason
        #: For an HTTP error status: the wait the server's ``retry-after-ms`` or
        #: ``Retry-After`` asks, in seconds, capped by ``max_delay`` (``sf.stream``'s or the
        #: resumable fold's; 30 s where none applies): the wait made, when one was. None when
        #: neither header says a valid wait (RFC 9110: digits or an HTTP date).
        self.retry_after = retry_after
        #: The raw header ``retry_after`` was read from, as the server sent it (the
        #: ``retry-after-ms`` value when that header was taken), also when it was not valid.
        self.retry_after_header = retry_after_header


def _event_of(raw: Any) -> str | None:
    """The type of the frame ``raw``: an SSE event's name, a JSON line's ``event_type``."""
    event = raw.get("event_type") if isinstance(raw, dict) else getattr(raw, "event", None)
    return event if isinstance(event, str) else None


def _described(
    message: str,
    provider: str | None,
    code: str | int | None,
    event: str | None,
    position: int | None,
) -> str:
    """What ``str()`` of a provider's in-stream error says: which provider, its code, and
    where (as a ``ProtocolError`` does). A message that already names its provider (an HTTP
    error status) is kept as it is."""
    if provider is None or message.startswith(f"{provider}: "):
        return message
    code_text = f" {code}" if code not in (None, "") else ""
    where = [f"event {event!r}"] if event is not None else []
    if position is not None:
        where.append(f"frame {position}")
    suffix = f" ({', '.join(where)})" if where else ""
    return (
        f"{provider}: the provider reported an error{code_text} inside the stream: "
        f"{message}{suffix}"
    )


class _JsonError(StreamfoldError, ValueError):
    def __init__(self, message: str, *, offset: int = 0, expected: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.expected = expected


class IncompleteJsonError(_JsonError):
    """The JSON text is a valid prefix but not yet a complete value (the empty text included)."""


class InvalidJsonError(_JsonError):
    """The JSON text can never become valid; ``offset`` is the first bad byte."""


_E = TypeVar("_E", bound=StreamfoldError)


def add_hint(exc: _E, hint: str, detected: str | None) -> _E:
    """End ``exc``'s message with ``hint`` (a stream read as the wrong provider) and say so in
    its attributes, ``hint`` and ``detected_provider``, which the CLI reads."""
    message = getattr(exc, "message", None)
    if isinstance(message, str):
        exc.message = message + hint  # type: ignore[attr-defined]
    exc.args = (str(exc.args[0]) + hint, *exc.args[1:]) if exc.args else (hint,)
    exc.hint = hint
    exc.detected_provider = detected
    return exc


# -- the native HTTP client's (sf.Client): named and nested as httpx's are, so code that tells
# them apart by kind reads the same, and builtin kinds too: a failed connection is an OSError
# (a timeout a TimeoutError), a request refused before it is sent a ValueError. Here, at the
# bottom, so that the adapters and the resumable drivers can tell them apart; raised by the
# core (rust/python/client.rs).


class HTTPError(Exception):
    """Any error of the native client."""


class InvalidURL(HTTPError, ValueError):
    """The URL does not parse or has no host: nothing was sent."""


class UnsupportedProtocol(HTTPError, ValueError):
    """A URL scheme other than http and https: nothing was sent."""


class LocalProtocolError(HTTPError, ValueError):
    """A request HTTP cannot carry (a header with CR or LF, a bad method, a body that is not
    bytes): nothing was sent."""


class ClientConfigError(HTTPError, ValueError):
    """The client's settings: an unreadable CA bundle or certificate, a bad proxy URL."""


class TooManyRedirects(HTTPError):
    """More redirects than ``max_redirects``."""


class TransportError(HTTPError, OSError):
    """The connection failed."""


class NetworkError(TransportError):
    """The connection failed after it was made."""


class ConnectError(NetworkError):
    """The connection could not be made (refused, DNS, TLS): the request was not sent."""


class ReadError(NetworkError):
    """The connection failed while the response was read (or awaited): the request may have
    arrived."""


class RemoteProtocolError(NetworkError):
    """The server broke HTTP."""


class StreamClosed(ReadError):
    """The response was closed (by ``close()``, maybe from another thread) while it was read."""


class DecodingError(TransportError):
    """The body's content encoding (gzip, br) broke."""


class TimeoutException(TransportError, TimeoutError):
    """A wait took longer than its timeout."""

    #: The timeout that fired, in seconds.
    timeout: float | None = None


class ConnectTimeout(TimeoutException):
    """Connecting took longer than ``connect_timeout``: the request was not sent."""


class ReadTimeout(TimeoutException):
    """Nothing arrived for the read timeout (the response's head, or the body's next bytes)."""


class PoolTimeout(TimeoutException):
    """Never raised (the pool does not limit connections); here for code that names it."""


# The core raises these classes: it is handed them once, here, and never looks one up by name.
register_errors(ProtocolError, InvalidEventJsonError, InvalidJsonError, IncompleteJsonError)
# In the order of the core's kinds of transport error (rust/transport/error.rs, Kind).
register_transport_errors(
    InvalidURL,
    UnsupportedProtocol,
    LocalProtocolError,
    ClientConfigError,
    ConnectError,
    ConnectTimeout,
    ReadTimeout,
    ReadError,
    DecodingError,
    TooManyRedirects,
    StreamClosed,
)
