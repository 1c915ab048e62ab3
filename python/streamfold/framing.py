"""Framing façades: iterate the frames of any byte iterable, sync or async.

One core, two façades: both wrap the same Rust decoder and only the transport read is awaited,
so nothing here is asyncio-specific and trio works the same.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import Any

from ._core import JsonLinesDecoder, ServerSentEvent, SSEDecoder

__all__ = ["aiter_json_lines", "aiter_sse", "iter_json_lines", "iter_sse"]

_Chunk = bytes | bytearray | memoryview


def _refuse_str(chunks: object) -> None:
    if isinstance(chunks, str):
        raise TypeError(
            "expected an iterable of bytes, got str: pass the raw response bytes "
            "(httpx: response.iter_bytes())"
        )


def iter_sse(
    chunks: Iterable[_Chunk], *, max_event_bytes: int = 16 * 1024 * 1024
) -> Iterator[ServerSentEvent]:
    """Yield the server-sent events of a byte iterable, one decoder call per chunk."""
    _refuse_str(chunks)
    decoder = SSEDecoder(max_event_bytes=max_event_bytes)
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.close()


async def aiter_sse(
    chunks: AsyncIterable[_Chunk], *, max_event_bytes: int = 16 * 1024 * 1024
) -> AsyncIterator[ServerSentEvent]:
    """Async twin of :func:`iter_sse`, for any async iterable of bytes (asyncio or trio)."""
    _refuse_str(chunks)
    decoder = SSEDecoder(max_event_bytes=max_event_bytes)
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.close():
        yield event


def iter_json_lines(
    chunks: Iterable[_Chunk], *, max_line_bytes: int = 16 * 1024 * 1024
) -> Iterator[Any]:
    """Yield the parsed value of every non-blank line of a newline-delimited JSON stream."""
    _refuse_str(chunks)
    decoder = JsonLinesDecoder(max_line_bytes=max_line_bytes)
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.close()


async def aiter_json_lines(
    chunks: AsyncIterable[_Chunk], *, max_line_bytes: int = 16 * 1024 * 1024
) -> AsyncIterator[Any]:
    """Async twin of :func:`iter_json_lines`."""
    _refuse_str(chunks)
    decoder = JsonLinesDecoder(max_line_bytes=max_line_bytes)
    async for chunk in chunks:
        for value in decoder.feed(chunk):
            yield value
    for value in decoder.close():
        yield value
