"""A streamed response of the native client, read sync (the wait without the GIL) or async
(the wait in the loop's hub). Each read returns every byte that arrived since the last one."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from ._headers import Headers

#: The batch a pumped body is handed over in (the core caps it at its own, the same).
LAZY_BATCH = 64 * 1024

if TYPE_CHECKING:
    from .._core import NativeStream
    from ._wake import Hub

__all__ = ["Response"]


class Response:
    """The status, headers and body of a native request (``Client.stream``)."""

    #: Read by streamfold's adapters as a response that reads itself (``_io.detect``).
    streamfold_native = True

    __slots__ = (
        "_hub",
        "_native",
        "extensions",
        "headers",
        "http_version",
        "is_closed",
        "opened_async",
        "read_timeout",
        "reason_phrase",
        "status_code",
        "try_read",
        "url",
    )

    def __init__(
        self,
        native: NativeStream,
        head: tuple[Any, ...],
        hub: Hub | None,
        read_timeout: float | None,
    ) -> None:
        status, reason, version, raw_headers, url = head
        self._native = native
        self._hub = hub
        #: The next read if one has come (``b""`` at the end), else None: it never waits.
        #: The core's own method, with no Python frame around it (read once per event).
        self.try_read: Callable[[], bytes | None] = native.try_read
        self.status_code: int = status
        self.reason_phrase: str = reason
        self.http_version: str = version
        self.headers = Headers(raw_headers)
        self.url: str = url
        self.extensions: dict[str, Any] = {}
        self.is_closed = False
        #: The longest wait of each read, in seconds (None: no limit).
        self.read_timeout = read_timeout
        #: Opened with ``async with`` (read in the loop), else with ``with`` (read blocking).
        self.opened_async = hub is not None

    def __repr__(self) -> str:
        return f"<sf.Client response [{self.status_code} {self.reason_phrase}]>"

    @property
    def stream_id(self) -> int:
        return int(self._native.id)

    # -- sync --

    def iter_bytes(self) -> Iterator[bytes]:
        """The decoded body, a chunk per read: everything that arrived since the last one."""
        read = self._native.read
        while chunk := read():
            yield chunk

    def read(self) -> bytes:
        return b"".join(self.iter_bytes())

    def close(self) -> None:
        """Close the connection at once (safe from another thread, and twice)."""
        if not self.is_closed:
            self.is_closed = True
            self._native.close()
            hub = self._hub
            if hub is not None:
                self._hub = None
                hub.detach(self._native.id)

    # -- async --

    async def aread_chunk(self) -> bytes:
        """The next read (``b""`` at the end), waiting in the running loop."""
        chunk = self.try_read()
        if chunk is None:
            chunk = await self.wait_read()
        return chunk

    def wait_read(self) -> Awaitable[bytes]:
        """The next read once it comes (``b""`` at the end), for when ``try_read`` had none:
        the running loop's wait itself (``Hub.wait``), which a body read once per event
        awaits with no coroutine of this class's between."""
        hub = self._hub
        if hub is None:
            raise RuntimeError("this response was opened by the sync API: read it with it")
        native = self._native
        return hub.wait(native.id, native.try_read)

    async def apump(self, feed: Callable[[bytes, list[tuple[int, float]]], object]) -> None:
        """Hand the body to ``feed`` from the loop's drain, until it ends: the calling task
        sleeps meanwhile and is woken once, at the end (or when the connection fails or
        ``feed`` raises, which this then raises). Nothing of the body is seen before its end,
        so the core hands it over in batches of up to 64 KiB rather than read by read, a call
        of ``feed`` each; with each batch, ``[(end, at)]``: where each read of the connection
        ends in it and when it came (epoch seconds, ``ReadClock.pin``), so that the fold's
        timing is the connection's."""
        native = self._native
        hub = self._hub
        if hub is None:
            raise RuntimeError("this response was opened by the sync API: read it with it")
        stream_id = native.id
        failure: list[BaseException] = []

        def feeder() -> bool:
            try:
                while (read := native.try_read_marked()) is not None:
                    chunk, marks = read
                    if not chunk:
                        return True
                    feed(chunk, marks)
            except BaseException as exc:  # raised in the task, not in the pump
                failure.append(exc)
                return True
            return False

        native.set_batch(LAZY_BATCH)
        if not feeder():  # what came before the batching was asked for
            await hub.wait(stream_id, lambda: True if feeder() else None)
        if failure:
            raise failure[0]

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        while chunk := await self.aread_chunk():
            yield chunk

    async def aread(self) -> bytes:
        parts = []
        while chunk := await self.aread_chunk():
            parts.append(chunk)
        return b"".join(parts)

    async def aclose(self) -> None:
        self.close()

    @property
    def complete(self) -> bool:
        """The whole body has arrived (some of it may not have been read yet)."""
        return bool(self._native.complete())
