"""The public entry points: ``events`` / ``aevents``.

Both façades drive the same :class:`~streamfold.Pipeline`; only the read of the
transport differs, and nothing here is asyncio-specific, so trio works the same.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from .._engine.pipeline import DEFAULT_MAX_EVENT_BYTES, Pipeline
from .._events import AnyEvent
from .._io.source import AsyncChunks, Chunks, async_byte_chunks, sync_byte_chunks
from .._types import ProviderName

__all__ = ["aevents", "events"]


def events(
    chunks: Chunks,
    provider: ProviderName = "auto",
    *,
    strict: bool = False,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
) -> Iterator[AnyEvent]:
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
            read_events = pipeline.read_events
            for chunk in byte_iter:
                yield from read_events(chunk)
                pipeline.raise_pending()
            yield from pipeline.close()
            pipeline.raise_pending()
            _check_terminal(pipeline)
    except Exception as exc:
        last, error = _ending(pipeline, exc)
        yield from last
        if error is not None:
            raise error from error.__cause__  # a lost connection: the client's error


async def aevents(
    chunks: AsyncChunks,
    provider: ProviderName = "auto",
    *,
    strict: bool = False,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
) -> AsyncIterator[AnyEvent]:
    """Async twin of :func:`events` (asyncio and trio alike)."""
    pipeline = Pipeline(provider, strict=strict, max_event_bytes=max_event_bytes)
    try:
        async with async_byte_chunks(chunks, pipeline.provider.name) as byte_iter:
            read_events = pipeline.read_events
            async for chunk in byte_iter:
                for event in read_events(chunk):
                    yield event
                pipeline.raise_pending()
            for event in pipeline.close():
                yield event
            pipeline.raise_pending()
            _check_terminal(pipeline)
    except Exception as exc:
        last, error = _ending(pipeline, exc)
        for event in last:
            yield event
        if error is not None:
            raise error from error.__cause__


def _ending(pipeline: Pipeline, exc: Exception) -> tuple[list[AnyEvent], Exception | None]:
    """The last events and the error to raise after them, when ``exc`` ended the input.

    A lost connection (``Pipeline.source_failed``) first gives the events the provider makes at
    the end of input (a cut call's arguments, frames ``auto`` still held), as a clean end does.
    After the terminal event it ended nothing that mattered: the events end normally, a warning
    last (as ``fold`` returns the message). Any other error is raised as it is.
    """
    lost = pipeline.source_failed(exc)
    if lost is None:
        return [], exc
    events = pipeline.lost()
    if not pipeline.provider.terminal_seen:
        return events, lost
    events.append(pipeline.late_loss(lost))
    return events, None


def _check_terminal(pipeline: Pipeline) -> None:
    if not pipeline.provider.terminal_seen:
        raise pipeline.incomplete_error()
