"""The sync adapters: an httpx (or httpx2) response of a sync client, a requests response.

``sf.events(response, provider=...)`` and ``sf.fold(response, ...)`` accept an ``httpx.Response``
(from ``httpx.Client`` or ``httpx.AsyncClient``, for the async forms; an ``httpx2.Response``,
as the OpenAI and Anthropic SDKs' ``response.http_response``, alike), an
``aiohttp.ClientResponse`` (async forms) or a ``requests.Response`` (sync forms; open it with
``stream=True``, or requests reads the whole body before returning) directly. Before a byte of
the body is parsed:

* a status outside 2xx raises :class:`~streamfold.StreamError` with ``status``, the
  provider's ``code`` and ``message`` and the parsed error body in ``raw`` (the body is read,
  at most :data:`MAX_ERROR_BODY` bytes, and never parsed as events);
* a content type the provider does not stream raises :class:`~streamfold.ProtocolError`
  with an excerpt of the body (``text/event-stream`` for SSE providers; ``cohere-v1`` streams
  JSON lines: ``application/stream+json``, ``application/x-ndjson``, ``application/ndjson``,
  ``application/jsonl``, ``application/x-jsonlines`` or ``application/json``; ``auto``
  accepts any of them; a missing ``Content-Type`` is accepted). To skip the checks, pass
  the bytes instead of the response (``response.iter_bytes()``).

The response is closed when the iteration ends, when the caller stops early and when the
caller's loop raises: no connection is leaked. Bodies are read decoded (gzip and friends
undone by the client). A connection that fails while the body is read raises
``IncompleteStreamError`` (``ConnectionLostError``; the client's exception is its
``__cause__``), so ``sf.fold`` gives it ``.partial``; :mod:`streamfold._resume.drivers` reconnects.

None of httpx, aiohttp and requests is imported by ``import streamfold``: a response is
recognised only when its client's module is already loaded (``pip install streamfold[httpx]`` /
``streamfold[aiohttp]`` / ``streamfold[requests]``). aiohttp is asyncio-only; everything for
httpx works under asyncio and trio alike.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import (
    Callable,
    Generator,
    Iterator,
)
from typing import TYPE_CHECKING, Any

from .._failures import connection_lost, is_transport_error
from .checks import (
    EXCERPT_BYTES,
    MAX_ERROR_BODY,
    check_head,
    content_type_error,
    read_bounded,
    status_error,
)
from .detect import (
    as_aiohttp,
    as_httpx,
    as_native,
    as_requests,
    httpx_is_async_only,
    not_a_response,
)

if TYPE_CHECKING:
    import httpx


# -- sync: httpx.Response from httpx.Client --------------------------------------------------


def check_response(response: httpx.Response, provider: str) -> None:
    """Raise ``StreamError`` / ``ProtocolError`` for a response that is not the stream.

    Reads (and closes) the response only when it raises.
    """
    _check_sync(response, provider, response.reason_phrase, response.iter_bytes)


def check_requests_response(response: Any, provider: str) -> None:
    """:func:`check_response` for a ``requests.Response``."""
    _check_sync(response, provider, response.reason, lambda: requests_body(response))


def _check_sync(
    response: Any, provider: str, reason: str | None, body: Callable[[], Iterator[bytes]]
) -> None:
    """:func:`check_response` for a sync client's response (``status_code``, ``headers`` and
    ``close()`` are alike in httpx and requests; its ``reason`` and ``body`` reader differ)."""
    status = response.status_code
    is_error, bad_type = check_head(provider, status, response.headers.get("content-type"))
    if not (is_error or bad_type):
        return
    try:
        if is_error:
            text, truncated, failure = read_bounded(body(), MAX_ERROR_BODY)
            raise status_error(
                provider,
                status,
                reason=reason,
                headers=response.headers,
                body=text,
                truncated=truncated,
                failure=failure,
            )
        text, _, failure = read_bounded(body(), EXCERPT_BYTES)
        content_type = response.headers.get("content-type", "")
        raise content_type_error(provider, content_type, text, status) from failure
    finally:
        close_sync(response)


def close_sync(response: Any) -> None:
    """Close a sync client's response. An httpx response read already is closed already,
    and may be an ``AsyncClient``'s (its body in memory, so the sync API reads it), whose
    sync ``close()`` raises ``RuntimeError``."""
    if getattr(response, "is_closed", False) is not True:
        response.close()


@contextlib.contextmanager
def _closing_body(
    body: Iterator[bytes], response: Any, provider: str
) -> Generator[Iterator[bytes]]:
    """``body`` with connection failures reported (``_guard``), the response closed on exit."""
    chunks = _guard(body, provider)
    try:
        yield chunks
    finally:
        try:
            chunks.close()
        finally:
            close_sync(response)


@contextlib.contextmanager
def sync_response_chunks(source: Any, provider: str) -> Generator[Iterator[bytes]]:
    """The decoded body of a sync HTTP response as an iterator of bytes, checked first and
    closed on exit (end of body, early exit, exception in the caller's loop)."""
    if as_native(source) is not None:
        if source.opened_async:
            raise TypeError(
                "this sf.Client response was opened with `async with`: read it with "
                "sf.aevents / sf.afold (or open it with `with`)"
            )
        _check_sync(source, provider, source.reason_phrase, source.iter_bytes)
        with _closing_body(source.iter_bytes(), source, provider) as chunks:
            yield chunks
        return
    requests_response = as_requests(source)
    if requests_response is not None:
        check_requests_response(requests_response, provider)
        body = requests_body(requests_response)
        with _closing_body(body, requests_response, provider) as chunks:
            yield chunks
        return
    response = as_httpx(source)
    if response is None:
        if as_aiohttp(source) is not None:
            raise TypeError(
                "an aiohttp.ClientResponse is read asynchronously: use sf.aevents / sf.afold"
            )
        raise not_a_response(source)
    if httpx_is_async_only(response):
        raise TypeError(
            "this httpx.Response comes from httpx.AsyncClient: use sf.aevents / sf.afold "
            "(or read it with httpx.Client)"
        )
    check_response(response, provider)
    with _closing_body(response.iter_bytes(), response, provider) as chunks:
        yield chunks


#: The most one read of a requests body hands over.
_REQUESTS_READ = 64 * 1024


def requests_body(response: Any) -> Iterator[bytes]:
    """A ``requests.Response`` body, each read as it arrives, decoded (gzip undone).

    ``iter_content(chunk_size=None)`` reads a body framed by ``Content-Length`` or by the
    connection's end whole before the first byte is handed over (urllib3's ``read()`` with no
    size), so no event would come before the last, and a connection cut inside it loses every
    byte; a chunked body it reads a whole HTTP chunk at a time, losing the bytes of a chunk
    that the connection cut. urllib3 2's ``read1()`` gives what has arrived. Its connection
    failures are urllib3's, which ``_guard`` reports too; requests raises its own as
    ``OSError``s (urllib3 1.x, without ``read1``, is read with ``iter_content``).
    """
    raw = response.raw
    urllib3_response = sys.modules.get("urllib3.response")
    read1 = getattr(raw, "read1", None)
    if (
        read1 is None
        # Not urllib3's (a transport adapter's file or BytesIO): its read1 takes no options.
        or urllib3_response is None
        or not isinstance(raw, urllib3_response.HTTPResponse)
        or getattr(response, "_content", False) is not False  # read already: requests has it
        or getattr(response, "_content_consumed", False)
    ):
        return response.iter_content(chunk_size=None)  # type: ignore[no-any-return]

    def reads() -> Generator[bytes]:
        while True:
            chunk = read1(_REQUESTS_READ, decode_content=True)
            if not chunk:
                # Read to the end, as iter_content marks it (a body left before its end is
                # then closed by response.close(), not handed back to the pool unread).
                response._content_consumed = True
                return
            yield chunk

    return reads()


def _guard(chunks: Iterator[bytes], provider: str) -> Generator[bytes]:
    """The body, with a connection failing mid-body raised as ``ConnectionLostError``."""
    seen = 0
    try:
        for chunk in chunks:
            seen += len(chunk)
            yield chunk
    except Exception as exc:
        if is_transport_error(exc):
            raise connection_lost(provider, seen, exc) from exc
        raise
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
