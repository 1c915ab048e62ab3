"""Relaying a stream: read one provider's stream, write it in another's format as it comes.

``relay(source, provider=..., to=...)`` is an iterator of the bytes to write downstream, one
``bytes`` per upstream read that made any; ``arelay`` is its async twin (asyncio and trio
alike). The upstream is read as ``fold`` reads it (any iterable of bytes, or an HTTP
client's response, opened and closed by the same adapters) and folded on the way: once the
iteration ends, ``.message`` is the message ``fold`` would have returned.

Failures: whatever ends the upstream badly (a provider error inside the stream, a cut
connection, input that ends before the terminal event, bytes that break the format) is
written downstream as the target's in-stream error, so the client sees an error rather than a
stream that merely stops, and then raised from the iteration as ``fold`` raises it (with
``.partial``); ``.message`` is then that partial. Closing the relay early (``close()`` /
``aclose()``, leaving its ``with`` block, or the downstream client going away) closes the
upstream at once.

Timing: ``.timing`` is the fold's :class:`~streamfold.StreamTiming` of the upstream as the
relay read it (``.message.timing`` once it ended), by the monotonic clock (``clock=`` takes
another): seconds from the relay's making to the first bytes, to the first and the last read
that added to the answer, and the longest wait between two reads that carried events. One
clock reading per upstream read, cheap enough to be always on.

One driver (:class:`_Core`) does the work; the two shells only read the transport.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Callable, Generator, Sequence
from types import TracebackType

from ._core import ReadClock
from ._engine.driver import FoldDriver
from ._engine.pipeline import DEFAULT_MAX_EVENT_BYTES, Pipeline
from ._events import Event
from ._io.source import AsyncChunks, Chunks, async_byte_chunks, sync_byte_chunks
from ._message import Message, StreamTiming
from ._types import ProviderName
from ._writers import Writer

__all__ = ["AsyncRelay", "Relay", "arelay", "relay"]


class _Core:
    """Pipeline, folder and writer of one relayed stream."""

    __slots__ = (
        "carry",
        "driver",
        "error",
        "folder",
        "message",
        "pipeline",
        "to",
        "writer",
    )

    def __init__(
        self,
        provider: ProviderName,
        to: str | None,
        strict: bool,
        max_event_bytes: int,
        clock: Callable[[], float],
    ) -> None:
        self.pipeline = Pipeline(provider, strict=strict, max_event_bytes=max_event_bytes)
        if to is not None or provider != "auto":
            Writer(to or provider)  # a format with no writer is refused before any read
        # The fold's clock, reading ``clock`` unless it is the monotonic clock the fold reads.
        own = None if clock is time.monotonic else clock
        self.driver = FoldDriver.over(
            self.pipeline,
            strict=strict,
            direct=False,
            clock=ReadClock(own),
        )
        self.folder = self.driver.folder
        self.to = to
        #: Made at the first events: with ``provider="auto"`` the source is known only then.
        self.writer: Writer | None = None
        self.message: Message | None = None
        self.error: BaseException | None = None
        #: Bytes of events made before an error the pipeline raises after them.
        self.carry = b""

    @property
    def name(self) -> str:
        return self.pipeline.provider.name

    def _writer(self) -> Writer:
        writer = self.writer
        if writer is None:
            source = self.pipeline.provider_name
            try:
                writer = Writer(self.to or source, source=source)
            except ValueError:
                raise ValueError(
                    f"the stream is {source!r}, which has no writer: name the format to write "
                    "with to="
                ) from None
            self.writer = writer
        return writer

    def run(self, events: Sequence[Event]) -> bytes:
        """Fold and write ``events``."""
        if not events:
            return b""
        self.driver(events)
        return self._writer().write_all(events)

    def feed(self, chunk: bytes) -> bytes:
        pipeline = self.pipeline
        out = self.run(pipeline.feed(chunk))
        if pipeline.pending is not None:
            self.carry = out  # written before the error
            pipeline.raise_pending()
        return out

    def end(self) -> bytes:
        """The upstream ended: the last events, then the message (or the failure)."""
        pipeline = self.pipeline
        out = self.carry = self.run(pipeline.close())
        pipeline.raise_pending()
        message = self.driver.result()
        self.message = message
        return out + self._writer().close()

    def fail(self, exc: Exception) -> tuple[bytes, BaseException | None]:
        """The bytes to write for ``exc`` and what to raise (``None``: the message stands,
        as when the connection fails after the terminal event)."""
        written = [self.carry]

        def run(events: Sequence[Event]) -> None:
            written.append(self.run(events))

        failure = self.driver.failure(exc, run)
        if self.writer is None and (self.to is None and failure is exc):
            return b"", exc  # no writer could be made for the detected format: nothing to write
        writer = self._writer()
        if failure is None:
            self.message = self.folder.result()
            return b"".join(written) + writer.close(), None
        self.error = failure
        partial = getattr(failure, "partial", None)
        self.message = partial if isinstance(partial, Message) else None
        written.append(writer.error(failure))
        return b"".join(written), failure


class _Shell:
    """What both shells show: the message, the writer and the error once known."""

    _core: _Core

    @property
    def message(self) -> Message | None:
        """The folded message once the relay ended (the partial one after a failure)."""
        return self._core.message

    @property
    def error(self) -> BaseException | None:
        """What the iteration raised, if the upstream failed."""
        return self._core.error

    @property
    def writer(self) -> Writer | None:
        """The writer (its ``dropped`` counts what the target could not say)."""
        return self._core.writer

    @property
    def timing(self) -> StreamTiming:
        """When the upstream's bytes and content came (see the module docstring)."""
        return self._core.driver.timing()


class Relay(_Shell):
    """The sync relay: iterate for the bytes to write downstream."""

    def __init__(self, source: Chunks, core: _Core) -> None:
        self._core = core
        self._run = self._drive(source)

    def _drive(self, source: Chunks) -> Generator[bytes, None, None]:
        core = self._core
        try:
            with sync_byte_chunks(source, core.name) as chunks:
                for chunk in chunks:
                    out = core.feed(chunk)
                    if out:
                        yield out
                out = core.end()
        except Exception as exc:
            out, failure = core.fail(exc)
            if out:
                yield out
            if failure is not None:
                raise failure from failure.__cause__
            return
        if out:
            yield out

    def __iter__(self) -> Relay:
        return self

    def __next__(self) -> bytes:
        return next(self._run)

    def close(self) -> None:
        """Stop reading: the upstream is closed."""
        self._run.close()

    def __enter__(self) -> Relay:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncRelay(_Shell):
    """The async relay (asyncio and trio): ``async for`` the bytes to write downstream."""

    def __init__(self, source: AsyncChunks, core: _Core) -> None:
        self._core = core
        self._run = self._drive(source)

    async def _drive(self, source: AsyncChunks) -> AsyncGenerator[bytes, None]:
        core = self._core
        try:
            async with async_byte_chunks(source, core.name) as chunks:
                async for chunk in chunks:
                    out = core.feed(chunk)
                    if out:
                        yield out
                out = core.end()
        except Exception as exc:
            out, failure = core.fail(exc)
            if out:
                yield out
            if failure is not None:
                raise failure from failure.__cause__
            return
        if out:
            yield out

    def __aiter__(self) -> AsyncRelay:
        return self

    async def __anext__(self) -> bytes:
        return await self._run.__anext__()

    async def aclose(self) -> None:
        """Stop reading: the upstream is closed."""
        await self._run.aclose()

    async def __aenter__(self) -> AsyncRelay:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def relay(
    source: Chunks,
    provider: ProviderName = "auto",
    *,
    to: str | None = None,
    strict: bool = False,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    clock: Callable[[], float] = time.monotonic,
) -> Relay:
    """The bytes of ``source`` (a ``provider`` stream) written as a ``to`` stream (default:
    the source's own format), as an iterator; ``.message`` is the fold once it ends."""
    return Relay(source, _Core(provider, to, strict, max_event_bytes, clock))


def arelay(
    source: AsyncChunks,
    provider: ProviderName = "auto",
    *,
    to: str | None = None,
    strict: bool = False,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    clock: Callable[[], float] = time.monotonic,
) -> AsyncRelay:
    """Async twin of :func:`relay` (asyncio and trio alike)."""
    return AsyncRelay(source, _Core(provider, to, strict, max_event_bytes, clock))
