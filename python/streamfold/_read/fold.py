"""The public fold: ``fold`` / ``afold`` turn a byte stream into the final :class:`Message`.

Both read their source and hand each read to the one fold driver (``_engine.driver``);
only the read of the transport differs, and nothing here is asyncio-specific, so trio works
the same.

The outcome is decided by the provider's terminal event, never by the input running out:

* input that ends before it raises :class:`IncompleteStreamError` with ``.partial``;
* a provider error inside the stream raises :class:`StreamError` with ``.partial`` and
  ``retryable_without_duplicate`` (true only when no part of the answer had been produced);
* broken bytes raise :class:`ProtocolError` with ``.partial``.

Several choices (OpenAI ``n>1``): the returned message is choice 0, and ``message.choices``
lists the message of every choice in choice order.
"""

from __future__ import annotations

from typing import Any

from .._engine.driver import FoldDriver
from .._engine.folder import DEFAULT_MAX_MESSAGE_BYTES, Folder
from .._engine.pipeline import DEFAULT_MAX_EVENT_BYTES, Pipeline
from .._errors import ProtocolError
from .._io.source import AsyncChunks, Chunks, async_byte_chunks, sync_byte_chunks
from .._message import Message
from .._types import ProviderName

__all__ = ["afold", "afold_into", "fold", "fold_into"]


def fold(
    chunks: Chunks,
    provider: ProviderName = "auto",
    *,
    strict: bool = False,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> Message:
    """Fold a whole stream into its final message.

    ``chunks`` is any iterable of bytes (a list, a file, ``httpx.Response.iter_bytes()``) or a
    response object of a supported HTTP client. Returns choice 0; every choice is in
    ``.choices``. ``max_message_bytes`` caps what the fold keeps (see :class:`Folder`; 256 MiB
    by default): past it, :class:`ProtocolError` with the partial message.
    """
    pipeline = Pipeline(provider, strict=strict, max_event_bytes=max_event_bytes)
    run = FoldDriver.over(pipeline, strict=strict, max_message_bytes=max_message_bytes)
    return _fold(chunks, pipeline, run)


def fold_into(
    chunks: Chunks,
    folder: Folder,
    *,
    provider: ProviderName,
    strict: bool,
    max_event_bytes: int,
) -> Message:
    """:func:`fold` into ``folder`` (a stream's own, which ``snapshot()`` reads meanwhile)."""
    pipeline = Pipeline(provider, strict=strict, max_event_bytes=max_event_bytes)
    return _fold(chunks, pipeline, FoldDriver(folder, pipeline))


def _fold(chunks: Chunks, pipeline: Pipeline, run: FoldDriver) -> Message:
    try:
        with sync_byte_chunks(chunks, pipeline.provider.name) as byte_iter:
            step = run.step
            folding = None
            for chunk in byte_iter:
                frames = None
                if folding is not None:
                    # The read the fold exists for: text frames folded in Rust, one call.
                    try:
                        frames = folding(chunk)
                    except ProtocolError as exc:
                        frames = exc
                    if frames is not None and not frames:
                        continue
                folding = step(chunk, frames)
            run(pipeline.close())
            pipeline.raise_pending()
    except Exception as exc:
        failure = run.failure(exc)
        if failure is not None:  # else the connection failed after the terminal event
            raise failure from failure.__cause__  # a lost connection: the client's error
    return run.result()


async def afold(
    chunks: AsyncChunks,
    provider: ProviderName = "auto",
    *,
    strict: bool = False,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> Message:
    """Async twin of :func:`fold` (asyncio and trio alike)."""
    pipeline = Pipeline(provider, strict=strict, max_event_bytes=max_event_bytes)
    run = FoldDriver.over(pipeline, strict=strict, max_message_bytes=max_message_bytes)
    return await _afold(chunks, pipeline, run)


async def afold_into(
    chunks: AsyncChunks,
    folder: Folder,
    *,
    provider: ProviderName,
    strict: bool,
    max_event_bytes: int,
) -> Message:
    """:func:`afold` into ``folder`` (a stream's own, which ``snapshot()`` reads meanwhile)."""
    pipeline = Pipeline(provider, strict=strict, max_event_bytes=max_event_bytes)
    return await _afold(chunks, pipeline, FoldDriver(folder, pipeline))


async def _afold(chunks: AsyncChunks, pipeline: Pipeline, run: FoldDriver) -> Message:
    try:
        async with async_byte_chunks(chunks, pipeline.provider.name) as byte_iter:
            pump = getattr(byte_iter, "pump", None)
            pulled = byte_iter
            if pump is not None:
                # A native response: its body is folded where the event loop drains it, with
                # no task switch per read.
                await pump(run.push)
                pulled = _NO_CHUNKS
            step = run.step
            folding = None
            async for chunk in pulled:
                frames = None
                if folding is not None:
                    try:
                        frames = folding(chunk)
                    except ProtocolError as exc:
                        frames = exc
                    if frames is not None and not frames:
                        continue
                folding = step(chunk, frames)
            run(pipeline.close())
            pipeline.raise_pending()
    except Exception as exc:
        failure = run.failure(exc)
        if failure is not None:  # else the connection failed after the terminal event
            raise failure from failure.__cause__  # a lost connection: the client's error
    return run.result()


class _NoChunks:
    """An empty async iterator: what is left of a body pumped whole."""

    def __aiter__(self) -> _NoChunks:
        return self

    async def __anext__(self) -> bytes:
        raise StopAsyncIteration


_NO_CHUNKS: Any = _NoChunks()
