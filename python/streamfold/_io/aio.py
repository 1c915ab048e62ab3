"""The async adapters: an httpx (or httpx2) response of an async client, an aiohttp response;
asyncio and trio alike (aiohttp is asyncio-only)."""

from __future__ import annotations

import contextlib
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
)
from typing import TYPE_CHECKING, Any

from .._failures import connection_lost, is_transport_error
from .checks import (
    EXCERPT_BYTES,
    MAX_ERROR_BODY,
    aread_bounded,
    check_head,
    content_type_error,
    status_error,
)
from .detect import (
    as_aiohttp,
    as_httpx,
    as_native,
    as_requests,
    httpx_module,
    not_a_response,
)

if TYPE_CHECKING:
    pass


async def _aguard(chunks: AsyncIterator[bytes], provider: str) -> AsyncGenerator[bytes]:
    """Async twin of :func:`_guard`."""
    seen = 0
    try:
        async for chunk in chunks:
            seen += len(chunk)
            yield chunk
    except Exception as exc:
        if is_transport_error(exc):
            raise connection_lost(provider, seen, exc) from exc
        raise
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


# -- async: httpx.Response from httpx.AsyncClient, aiohttp.ClientResponse -------------------


async def acheck_response(response: Any, provider: str) -> None:
    """Async twin of :func:`check_response`, for httpx and aiohttp responses."""
    aiohttp_response = as_aiohttp(response)
    if aiohttp_response is not None:
        status = aiohttp_response.status
        content_type = aiohttp_response.headers.get("Content-Type")
    else:
        status = response.status_code
        content_type = response.headers.get("content-type")
    is_error, bad_type = check_head(provider, status, content_type)
    if not (is_error or bad_type):
        return
    try:
        chunks = (
            _aiter_aiohttp(aiohttp_response)
            if aiohttp_response is not None
            else response.aiter_bytes()
        )
        limit = MAX_ERROR_BODY if is_error else EXCERPT_BYTES
        try:
            body, truncated, failure = await aread_bounded(chunks, limit)
        finally:
            # Read only in part: closed here, not left to the collector (which trio warns of).
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                await aclose()
        if is_error:
            reason = (
                aiohttp_response.reason if aiohttp_response is not None else response.reason_phrase
            )
            raise status_error(
                provider,
                status,
                reason=reason,
                headers=response.headers,
                body=body,
                truncated=truncated,
                failure=failure,
            )
        raise content_type_error(provider, content_type or "", body, status) from failure
    finally:
        await _aclose_response(response, complete=False)


async def _aclose_response(response: Any, *, complete: bool) -> None:
    aiohttp_response = as_aiohttp(response)
    if aiohttp_response is None:
        # An httpx response read already is closed already, and may be an httpx.Client's,
        # whose aclose() raises RuntimeError (see close_sync).
        if not response.is_closed:
            await response.aclose()
    elif complete:
        # Whole body read: the connection goes back to the pool.
        aiohttp_response.release()
    else:
        # Body not read to the end: the connection cannot be reused; close it so the server
        # sees the client go away.
        aiohttp_response.close()


async def _aiter_aiohttp(response: Any) -> AsyncGenerator[bytes]:
    if response.content.at_eof():
        # Read already (``await response.read()``, ``.text()``): aiohttp keeps the body, and
        # ``read()`` gives it again (as httpx's iter_bytes() and requests' iter_content() do).
        body = await response.read()
        if body:
            yield body
        return
    async for chunk in response.content.iter_any():
        yield chunk


@contextlib.asynccontextmanager
async def async_response_chunks(source: Any, provider: str) -> AsyncIterator[AsyncIterator[bytes]]:
    """Async twin of :func:`sync_response_chunks` for httpx (``AsyncClient``) and aiohttp."""
    chunks: AsyncGenerator[bytes] | NativeBody
    if as_requests(source) is not None:
        raise TypeError(
            "a requests.Response is read synchronously: use sf.events / sf.fold "
            "(or httpx.AsyncClient / aiohttp for async code)"
        )
    if as_aiohttp(source) is not None:
        await acheck_response(source, provider)
        chunks = _aguard(_aiter_aiohttp(source), provider)
    elif as_native(source) is not None:
        if not source.opened_async:
            raise TypeError(
                "this sf.Client response was opened with `with`: read it with sf.events / "
                "sf.fold (or open it with `async with`)"
            )
        await acheck_response(source, provider)
        chunks = NativeBody(source, provider)
    else:
        response = as_httpx(source)
        if response is None:
            raise not_a_response(source, asynchronous=True)
        httpx = httpx_module(response)
        if (
            isinstance(response.stream, httpx.SyncByteStream)
            and not isinstance(response.stream, httpx.AsyncByteStream)
            and not response.is_stream_consumed  # read already: its body is in memory
        ):
            raise TypeError(
                "this httpx.Response comes from httpx.Client: use sf.events / sf.fold "
                "(or read it with httpx.AsyncClient)"
            )
        await acheck_response(response, provider)
        chunks = _aguard(response.aiter_bytes(), provider)
    complete = False
    try:
        yield chunks
        complete = True
    finally:
        try:
            await chunks.aclose()
        finally:
            await _aclose_response(source, complete=complete and _at_eof(source))


class NativeBody:
    """An ``sf.Client`` response's body for the async API, a connection failing mid-body
    raised as ``ConnectionLostError`` (as ``_aguard``): iterated a read at a time, or pumped
    (``pump(feed)``: the body handed to ``feed`` from the event loop's drain, the task woken
    only at the end; ``afold`` folds so). ``async_byte_chunks`` takes one as it is: the body
    of a response whose head its opener checked and which its opener closes (``sf.astream``)."""

    __slots__ = ("_provider", "_response", "_seen")

    def __init__(self, response: Any, provider: str) -> None:
        self._response = response
        self._provider = provider
        self._seen = 0

    def __aiter__(self) -> NativeBody:
        return self

    async def __anext__(self) -> bytes:
        # ``try_read``, then the loop's own wait (not ``aread_chunk``): a read per event then
        # resumes one coroutine fewer.
        response = self._response
        try:
            chunk: bytes | None = response.try_read()
            if chunk is None:
                chunk = await response.wait_read()
        except Exception as exc:
            if is_transport_error(exc):
                raise connection_lost(self._provider, self._seen, exc) from exc
            raise
        if not chunk:
            raise StopAsyncIteration
        self._seen += len(chunk)
        return chunk

    async def pump(self, feed: Callable[[bytes, list[tuple[int, float]]], object]) -> None:
        def counted(chunk: bytes, marks: list[tuple[int, float]]) -> None:
            self._seen += len(chunk)
            feed(chunk, marks)

        try:
            await self._response.apump(counted)
        except Exception as exc:
            if is_transport_error(exc):
                raise connection_lost(self._provider, self._seen, exc) from exc
            raise

    async def aclose(self) -> None:
        """The response is closed by whoever opened the body (``async_response_chunks``)."""


def _at_eof(response: Any) -> bool:
    aiohttp_response = as_aiohttp(response)
    if aiohttp_response is None:
        return True
    return bool(aiohttp_response.content.at_eof())
