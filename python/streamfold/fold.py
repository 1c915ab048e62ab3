"""The public fold: ``fold`` / ``afold`` turn a byte stream into the final :class:`Message`.

Both façades drive one :class:`~streamfold.pipeline.Pipeline` (bytes -> frames -> events) into
one :class:`~streamfold.folder.Folder`; only the read of the transport differs, and nothing
here is asyncio-specific, so trio works the same.

The outcome is decided by the provider's terminal event, never by the input running out:

* input that ends before it raises :class:`IncompleteStreamError` with ``.partial``;
* a provider error inside the stream raises :class:`StreamError` with ``.partial`` and
  ``retryable_without_duplicate`` (true only when no part of the answer had been produced);
* broken bytes raise :class:`ProtocolError` with ``.partial``.

Several choices (OpenAI ``n>1``): the returned message is choice 0, and ``message.choices``
lists the message of every choice in choice order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, cast

from ._events import Event
from ._types import ProviderName
from .errors import ProtocolError, StreamfoldError
from .folder import DEFAULT_MAX_MESSAGE_BYTES, Folder
from .message import Message
from .pipeline import DEFAULT_MAX_EVENT_BYTES, Pipeline
from .source import AsyncChunks, Chunks, async_byte_chunks, sync_byte_chunks

__all__ = ["afold", "fold"]


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
    folder = Folder(_name(pipeline), strict=strict, max_message_bytes=max_message_bytes)
    run = _Runner(folder, pipeline)
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
        failure = _failure(run, folder, pipeline, exc)
        if failure is not None:  # else the connection failed after the terminal event
            raise failure from failure.__cause__  # a lost connection: the client's error
    return _result(folder, pipeline)


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
    folder = Folder(_name(pipeline), strict=strict, max_message_bytes=max_message_bytes)
    run = _Runner(folder, pipeline)
    try:
        async with async_byte_chunks(chunks, pipeline.provider.name) as byte_iter:
            step = run.step
            folding = None
            async for chunk in byte_iter:
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
        failure = _failure(run, folder, pipeline, exc)
        if failure is not None:  # else the connection failed after the terminal event
            raise failure from failure.__cause__  # a lost connection: the client's error
    return _result(folder, pipeline)


#: ``SSEDecoder.feed_folding``: the frames it did not fold (empty: all), ``None`` for a chunk
#: that is not ``bytes``; raises ``ProtocolError`` as ``feed`` does.
FeedFolding = Callable[[Any], "list[Any] | None"]


class _Runner:
    """``Folder.add`` inlined over a batch of events: one dict lookup per event.

    It also hands the provider the folder's direct text sink (``Provider.text_sink``): a plain
    text delta then goes straight into its block, with no event made. Any folded event may
    change where text goes, so each batch of events drops the provider's appender first.

    After each read it handled (``step``), it arms the decoder's folding path where the
    provider names a target (``Provider.folding_target``): the reads after it that hold only
    that target's text frames are then folded in Rust with no Python frame or event at all,
    which is the whole cost of most reads of a stream read one event at a time.
    """

    __slots__ = ("_dispatch", "_folder", "_pipeline", "_provider", "_resolve")

    def __init__(self, folder: Folder, pipeline: Pipeline) -> None:
        self._folder = folder
        # The class's table of handler functions: nothing is bound per fold.
        self._dispatch = folder._handlers
        self._resolve = folder._function_for
        self._pipeline = pipeline
        pipeline.on_folded = folder.took
        provider = self._provider = pipeline.provider
        provider.text_sink = folder.text_appender
        provider.text_flush = self.flush

    def step(self, chunk: Any, frames: list[Any] | ProtocolError | None) -> FeedFolding | None:
        """Fold one read: ``chunk`` through the pipeline, or (``frames``) what the folding
        path returned for it. Returns the folding path to use for the next read, if armed."""
        pipeline = self._pipeline
        events = pipeline.feed(chunk) if frames is None else pipeline.feed_folded(frames)
        if events:  # with the direct text sink, most reads fold to none
            self(events)
        if pipeline.pending is not None:
            pipeline.raise_pending()
        target = self._provider.folding_target()
        if target is None:
            return None
        cut, event, choice, block, _kind = target
        folder = self._folder
        sink = folder.delta_sink(choice, block)
        return None if sink is None else pipeline.arm(cut, event, sink, folder.room)

    def flush(self, events: list[Event]) -> None:
        """Fold ``events`` now and empty the list (``Provider.text_flush``): the provider is
        in the middle of a batch and wants the direct text path for what follows."""
        self(events)
        events.clear()

    def __call__(self, events: Sequence[Event]) -> None:
        if not events:
            return
        self._provider.text_direct = None
        dispatch = self._dispatch
        folder = self._folder
        for event in events:
            try:
                handler = dispatch[event.__class__]
            except KeyError:
                handler = self._resolve(event.__class__)
            handler(folder, event)


def _failure(
    run: _Runner, folder: Folder, pipeline: Pipeline, exc: Exception
) -> BaseException | None:
    """What ``fold`` raises for ``exc``, with the partial message; ``None`` when the message
    stands (the connection failed after the terminal event).

    A failure of the byte source (the HTTP adapters' ``ConnectionLostError``, or a client's own
    exception from a plain iterable such as ``response.iter_bytes()``) is a lost connection:
    what the provider still holds is folded first (``Pipeline.lost``), so the partial has
    every byte that arrived, as a clean end at that byte would.
    """
    lost = pipeline.source_failed(exc)
    if lost is not None:
        # A rule the fold breaks on these closing events (strict) is not what ended the
        # stream: the caller gets the lost connection, with whatever was folded.
        with contextlib.suppress(StreamfoldError):
            run(pipeline.lost())
        if folder.complete:
            run([pipeline.late_loss(lost)])
            return None
        exc = lost
    elif not isinstance(exc, StreamfoldError):
        return exc  # a bug, not the stream's: raised as it is
    _settle(folder, pipeline)
    _annotate(folder, pipeline, exc)
    return exc


def _name(pipeline: Pipeline) -> ProviderName:
    # The name the pipeline's provider instance was made under: one of ProviderName.
    return cast("ProviderName", pipeline.provider.name)


def _settle(folder: Folder, pipeline: Pipeline) -> None:
    folder.provider = pipeline.provider_name


def _annotate(folder: Folder, pipeline: Pipeline, exc: StreamfoldError) -> None:
    folder.annotate_error(exc)
    # A rule the fold itself checks names the frame being handled, like the providers do.
    if isinstance(exc, ProtocolError) and exc.position is None:
        exc.position = pipeline.provider.position


def _result(folder: Folder, pipeline: Pipeline) -> Message:
    _settle(folder, pipeline)
    if not folder.complete:
        exc = pipeline.incomplete_error()
        folder.annotate_error(exc)
        raise exc
    return folder.result()
