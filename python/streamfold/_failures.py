"""Telling a failed connection from a failed program, for the pipeline, the HTTP adapters and
resumption.

Client libraries are only looked up in ``sys.modules``: an exception cannot come from a library
that was never imported, and importing one here would defeat lazy imports.
"""

from __future__ import annotations

import sys
from typing import Any

from ._errors import ConnectionLostError, IdleTimeoutError, ReadTimeout, StreamfoldError

__all__ = [
    "HTTPX_MODULES",
    "ConnectionLostError",
    "as_connection_lost",
    "client_error",
    "is_read_timeout",
    "is_transport_error",
]

#: The modules whose ``Response`` is read as httpx's: httpx, and httpx2, the httpx the OpenAI
#: and Anthropic SDKs make their requests with (their ``response.http_response``). Both have
#: the same response, stream and exception classes.
HTTPX_MODULES = ("httpx", "httpx2")

#: module -> exception classes meaning "the connection failed". A body whose content encoding
#: (gzip, br) breaks mid-way counts too: the bytes stop making sense where the transport
#: failed to carry them, and aiohttp (ClientPayloadError) and requests (ContentDecodingError,
#: an OSError) already report it so.
_TRANSPORT_ERRORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("httpx", ("TransportError", "DecodingError")),
    # The httpx the OpenAI and Anthropic SDKs read with: their `response.iter_bytes()`.
    ("httpx2", ("TransportError", "DecodingError")),
    # Read straight from a requests response's urllib3 body (requests wraps these itself).
    ("urllib3.exceptions", ("ProtocolError", "ReadTimeoutError", "SSLError", "DecodeError")),
    ("aiohttp", ("ClientConnectionError", "ClientPayloadError")),
    ("asyncio", ("TimeoutError", "IncompleteReadError")),
    ("trio", ("BrokenResourceError",)),
    ("anyio", ("BrokenResourceError", "EndOfStream")),
)


def is_transport_error(exc: BaseException) -> bool:
    """A failure of the connection rather than of the program or of the stream's content."""
    if isinstance(exc, (ConnectionLostError, IdleTimeoutError)):
        return True
    if isinstance(exc, StreamfoldError):
        return False
    if isinstance(exc, (OSError, EOFError, TimeoutError)):
        return True
    for module_name, names in _TRANSPORT_ERRORS:
        module = sys.modules.get(module_name)
        if module is None:
            continue
        types = tuple(t for t in (getattr(module, n, None) for n in names) if isinstance(t, type))
        if types and isinstance(exc, types):
            return True
    return False


def connection_lost(provider: str, position: int, exc: BaseException) -> ConnectionLostError:
    error = ConnectionLostError(
        f"{provider}: the connection failed after {position} bytes of the body, before the "
        f"provider's terminal event: {type(exc).__name__}: {exc}",
        provider=provider,
        position=position,
    )
    error.__cause__ = exc
    return error


def as_connection_lost(
    exc: BaseException, provider: str, position: int
) -> ConnectionLostError | None:
    """``exc`` as the ``ConnectionLostError`` it means, or ``None`` when it is no transport
    failure. A plain iterable of bytes (``response.iter_bytes()``) raises its client's own
    exception (``httpx.ReadError``…); the HTTP adapters have already made it ours."""
    if isinstance(exc, ConnectionLostError):
        return exc
    if is_transport_error(exc):
        return connection_lost(provider, position, exc)
    return None


def client_error(exc: BaseException) -> BaseException:
    """The client's own exception behind ``exc`` (the adapters wrap it in
    ``ConnectionLostError``)."""
    if isinstance(exc, ConnectionLostError) and exc.__cause__ is not None:
        return exc.__cause__
    return exc


def is_read_timeout(exc: BaseException, idle_timeout: float) -> bool:
    """``exc`` is httpx's read timeout that ``idle_timeout`` set (``_apply_httpx_idle_timeout``,
    ``sf.stream``'s requests): a silence of ``idle_timeout`` s. Another read timeout, the
    caller's own, is not said to be ``idle_timeout``: it stays httpx's, as ``sf.stream`` keeps
    it on the first request. A shorter one (httpx's default is 5 s) fired before
    ``idle_timeout``; a longer one bounded a wait that ``idle_timeout`` does not (a response's
    head, with the sync forms' own ``connect``)."""
    error: Any = client_error(exc)  # an httpx or httpx2 ReadTimeout, once checked
    if isinstance(error, ReadTimeout):  # sf.Client's: it carries the timeout that fired
        return error.timeout is None or error.timeout == idle_timeout
    if not any(
        isinstance(error, module.ReadTimeout)
        for module in map(sys.modules.get, HTTPX_MODULES)
        if module is not None
    ):
        return False
    try:
        timeouts = error.request.extensions.get("timeout")
    except RuntimeError:  # no request attached: nothing says it was another timeout
        return True
    read = timeouts.get("read") if isinstance(timeouts, dict) else None
    return not isinstance(read, (int, float)) or read == idle_timeout
