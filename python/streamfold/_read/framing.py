"""Framing façades: iterate the frames of any byte iterable, sync or async.

One core, two façades: both wrap the same Rust decoder and only the transport read is awaited,
so nothing here is asyncio-specific and trio works the same.

When the decoder raises :class:`~streamfold.ProtocolError` (an event over
``max_event_bytes``, a JSON line that does not parse), the frames that came before it are
yielded first and then the error is raised; they also stay in its ``events``.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from typing import Any, TypeVar

from .._core import JsonLinesDecoder, ServerSentEvent, SSEDecoder
from .._errors import ProtocolError
from .._io.detect import as_requests
from .._io.source import refuse_str
from .._io.sync import requests_body

__all__ = ["aiter_json_lines", "aiter_sse", "iter_json_lines", "iter_sse"]

_Chunk = bytes | bytearray | memoryview
_A = TypeVar("_A")
_T = TypeVar("_T")


def _refuse_str(chunks: object, *, asynchronous: bool = False) -> None:
    """Refuse what is not an iterable of bytes chunks, saying what to pass instead."""
    refuse_str(chunks)
    protocol = "__aiter__" if asynchronous else "__iter__"
    if not hasattr(chunks, protocol):
        method = "aiter_bytes()" if asynchronous else "iter_bytes()"
        raise TypeError(
            f"expected {'an async' if asynchronous else 'an'} iterable of bytes chunks, got "
            f"{type(chunks).__module__}.{type(chunks).__qualname__}: pass the response's "
            f"bytes (httpx: response.{method}); sf.events and sf.fold also take the response"
        )


def _reads(chunks: Iterable[_Chunk]) -> Iterable[_Chunk]:
    """The chunks to feed. A ``requests.Response`` iterates in blocks of 128 bytes, each
    awaited whole (``iter_content(128)``): an event followed by a pause (a model thinking, a
    ping) would wait for bytes that come later. Its body is read as ``sf.events`` reads it,
    each read handed over as it arrives."""

    if as_requests(chunks) is not None:
        return _requests_errors(requests_body(chunks))
    return chunks


def _requests_errors(body: Iterator[bytes]) -> Iterator[bytes]:
    """``body`` (urllib3's reads) raising what iterating the ``requests.Response`` raises:
    requests' own exceptions (``ChunkedEncodingError`` for a connection cut mid-body, …), so
    that ``except requests.RequestException`` still catches them. The mapping is requests'
    ``iter_content``'s."""
    import requests.exceptions as requests_errors
    from urllib3 import exceptions as urllib3_errors

    try:
        yield from body
    except urllib3_errors.ProtocolError as exc:
        raise requests_errors.ChunkedEncodingError(exc) from exc
    except urllib3_errors.DecodeError as exc:
        raise requests_errors.ContentDecodingError(exc) from exc
    except urllib3_errors.ReadTimeoutError as exc:
        raise requests_errors.ConnectionError(exc) from exc
    except urllib3_errors.SSLError as exc:
        raise requests_errors.SSLError(exc) from exc


def _frames(step: Callable[[_A], list[_T]], arg: _A) -> tuple[list[_T], ProtocolError | None]:
    """One decoder call: its frames, and the error to raise once they are delivered."""
    try:
        return step(arg), None
    except ProtocolError as exc:
        return list(exc.events), exc


def iter_sse(
    chunks: Iterable[_Chunk], *, max_event_bytes: int = 16 * 1024 * 1024
) -> Iterator[ServerSentEvent]:
    """Yield the server-sent events of a byte iterable, one decoder call per chunk."""
    _refuse_str(chunks)
    decoder = SSEDecoder(max_event_bytes=max_event_bytes)
    for chunk in _reads(chunks):
        events, error = _frames(decoder.feed, chunk)
        yield from events
        if error is not None:
            raise error
    events, error = _frames(SSEDecoder.close, decoder)
    yield from events
    if error is not None:
        raise error


async def aiter_sse(
    chunks: AsyncIterable[_Chunk], *, max_event_bytes: int = 16 * 1024 * 1024
) -> AsyncIterator[ServerSentEvent]:
    """Async twin of :func:`iter_sse`, for any async iterable of bytes (asyncio or trio)."""
    _refuse_str(chunks, asynchronous=True)
    decoder = SSEDecoder(max_event_bytes=max_event_bytes)
    async for chunk in chunks:
        events, error = _frames(decoder.feed, chunk)
        for event in events:
            yield event
        if error is not None:
            raise error
    events, error = _frames(SSEDecoder.close, decoder)
    for event in events:
        yield event
    if error is not None:
        raise error


def iter_json_lines(
    chunks: Iterable[_Chunk], *, max_line_bytes: int = 16 * 1024 * 1024
) -> Iterator[Any]:
    """Yield the parsed value of every non-blank line of a newline-delimited JSON stream."""
    _refuse_str(chunks)
    decoder = JsonLinesDecoder(max_line_bytes=max_line_bytes)
    for chunk in _reads(chunks):
        values, error = _frames(decoder.feed, chunk)
        yield from values
        if error is not None:
            raise error
    values, error = _frames(JsonLinesDecoder.close, decoder)
    yield from values
    if error is not None:
        raise error


async def aiter_json_lines(
    chunks: AsyncIterable[_Chunk], *, max_line_bytes: int = 16 * 1024 * 1024
) -> AsyncIterator[Any]:
    """Async twin of :func:`iter_json_lines`."""
    _refuse_str(chunks, asynchronous=True)
    decoder = JsonLinesDecoder(max_line_bytes=max_line_bytes)
    async for chunk in chunks:
        values, error = _frames(decoder.feed, chunk)
        for value in values:
            yield value
        if error is not None:
            raise error
    values, error = _frames(JsonLinesDecoder.close, decoder)
    for value in values:
        yield value
    if error is not None:
        raise error
