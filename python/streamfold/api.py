"""The public entry points: ``events`` / ``aevents``.

Both façades drive the same :class:`~streamfold.pipeline.Pipeline`; only the read of the
transport differs, and nothing here is asyncio-specific, so trio works the same.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import Any

from ._transport import ConnectionLostError, as_connection_lost, lost_after_the_end
from .errors import StreamfoldError
from .events import Event, Notice
from .pipeline import DEFAULT_MAX_EVENT_BYTES, Pipeline
from .source import async_byte_chunks, sync_byte_chunks

__all__ = ["aevents", "events"]


def events(
    chunks: Iterable[bytes] | Any,
    provider: str = "auto",
    *,
    strict: bool = False,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
) -> Iterator[Event]:
    """Yield the provider-neutral events of a stream.

    ``chunks`` is any iterable of bytes (a list, a file, ``httpx.Response.iter_bytes()``) or a
    response object of a supported HTTP client. A provider error inside the stream is raised
    as ``StreamError`` after every event before it has been yielded; input that ends before the
    provider's terminal event raises ``IncompleteStreamError`` after the last event, so a
    dropped connection never passes for a short answer.
    """
    pipeline = Pipeline(provider, strict=strict, max_event_bytes=max_event_bytes)
    try:
        with sync_byte_chunks(chunks, pipeline.provider.name) as byte_iter:
            for chunk in byte_iter:
                yield from pipeline.feed(chunk)
                pipeline.raise_pending()
            yield from pipeline.close()
            pipeline.raise_pending()
            _check_terminal(pipeline)
    except Exception as exc:
        lost = _lost(pipeline, exc)
        if lost is None:
            raise
        # The events the provider makes at the end of input (a cut call's arguments, frames
        # ``auto`` still held) come before the error, as they do at a clean end.
        yield from pipeline.lost()
        if pipeline.provider.terminal_seen:
            yield _late_loss(pipeline, lost)
            return
        if lost is exc:
            raise
        raise lost from exc


async def aevents(
    chunks: AsyncIterable[bytes] | Any,
    provider: str = "auto",
    *,
    strict: bool = False,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
) -> AsyncIterator[Event]:
    """Async twin of :func:`events` (asyncio and trio alike)."""
    pipeline = Pipeline(provider, strict=strict, max_event_bytes=max_event_bytes)
    try:
        async with async_byte_chunks(chunks, pipeline.provider.name) as byte_iter:
            async for chunk in byte_iter:
                for event in pipeline.feed(chunk):
                    yield event
                pipeline.raise_pending()
            for event in pipeline.close():
                yield event
            pipeline.raise_pending()
            _check_terminal(pipeline)
    except Exception as exc:
        lost = _lost(pipeline, exc)
        if lost is None:
            raise
        for event in pipeline.lost():  # as in ``events``
            yield event
        if pipeline.provider.terminal_seen:
            yield _late_loss(pipeline, lost)
            return
        if lost is exc:
            raise
        raise lost from exc


def _lost(pipeline: Pipeline, exc: Exception) -> ConnectionLostError | None:
    """``exc`` as a lost connection (a plain iterable raises its client's own exception),
    or ``None`` for any other error, raised as it is."""
    if isinstance(exc, StreamfoldError) and not isinstance(exc, ConnectionLostError):
        return None
    name = getattr(pipeline.provider, "chosen", None) or pipeline.provider.name
    return as_connection_lost(exc, name, pipeline.bytes_seen)


def _late_loss(pipeline: Pipeline, lost: ConnectionLostError) -> Notice:
    """The connection failed after the terminal event: the stream's outcome was decided, so
    the events end normally, with this warning last (as ``fold`` returns the message)."""
    name = getattr(pipeline.provider, "chosen", None) or pipeline.provider.name
    return Notice(kind="warning", message=lost_after_the_end(name, lost))


def _check_terminal(pipeline: Pipeline) -> None:
    if not pipeline.provider.terminal_seen:
        raise pipeline.incomplete_error()
