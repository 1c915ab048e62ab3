"""Telling a failed connection from a failed program, for the HTTP adapters and resumption.

Client libraries are only looked up in ``sys.modules``: an exception cannot come from a library
that was never imported, and importing one here would defeat lazy imports.
"""

from __future__ import annotations

import sys

from ..errors import ConnectionLostError, IdleTimeoutError, StreamfoldError

__all__ = ["ConnectionLostError", "as_connection_lost", "is_transport_error"]

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
