"""Resumable streams: reconnect a dropped stream without duplicating or losing an event.

::

    client = httpx.Client(timeout=httpx.Timeout(600, connect=5))  # not httpx's 5 s read timeout

    def connect(cursor: sf.Cursor):
        return client.send(
            client.build_request("GET", run_url, params=cursor.params, headers=cursor.headers),
            stream=True,
        )

    message = sf.fold_resumable(connect, provider="clouisle", max_reconnects=5)

``connect(cursor)`` is called for every connection, the first included (``cursor.attempt`` is
0 then). It returns the bytes of one connection: an iterable of bytes, an HTTP response
(httpx, aiohttp; checked as in ``sf.fold``), or a context manager giving either
(``client.stream(...)``). The async forms also take an awaitable or an async context manager
(``session.get(...)``).

The rules:

* A connection that ends or fails before the provider's terminal event is reconnected only when
  the stream can resume: it sent an SSE ``id`` or a provider sequence (Clouisle ``sequence``,
  OpenAI Responses ``sequence_number``). A stream that cannot resume is never requested again
  (that would make the model write a second answer): ``IncompleteStreamError``.
* Events replayed by the server that were already processed (sequence, or SSE id, at or below
  the cursor) are dropped; a frame cut in half by the drop is discarded (each connection gets
  a new decoder, while the provider, which holds the open blocks, carries on).
* Waits honour the stream's ``retry:`` field (else ``initial_delay``), double with every
  reconnection that made no progress, are capped at ``max_delay``, and get up to 25 % jitter.
  A connection that delivered a new event resets the budget: ``max_reconnects`` counts
  reconnections in a row without progress, then ``IncompleteStreamError``.
* After the terminal event there is never a reconnection (a connection failing after it ends
  the stream normally).
* ``catch_up=``: the events so far, read as JSON first (a Clouisle run's catch-up,
  ``…/chat/runs/{run_id}/events``), count as the first connection: the live stream is asked
  only for what follows them, and not at all when the run ended in them.
* ``idle_timeout``: a connection that delivers no byte for that many seconds (comments and
  pings count as life) is a dropped connection. For an httpx response it becomes the
  response's read timeout; for any other sync iterable the reads move to a helper thread; the
  async forms use the running library's own timeout (asyncio or trio).
* An HTTP error on a reconnection: a status worth another request (``retry_kind``, the rule
  of ``sf.stream``'s retries: 408, 409, 425, 429 and every 5xx) counts as a failed attempt
  (waiting at least ``Retry-After``); any other status ends the stream with
  ``IncompleteStreamError`` caused by the ``StreamError``. The first connection's errors
  are raised as they are.
"""

from __future__ import annotations

import contextlib
import functools
import queue
import sys
import threading
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Iterator,
)
from typing import TYPE_CHECKING, Any

from .._core import ReadClock
from .._engine.driver import FoldDriver
from .._engine.folder import DEFAULT_MAX_MESSAGE_BYTES, Folder
from .._engine.pipeline import DEFAULT_MAX_EVENT_BYTES
from .._errors import (
    IdleTimeoutError,
    StreamfoldError,
)
from .._events import AnyEvent
from .._failures import client_error, is_read_timeout
from .._io.asynclib import async_library, sleep
from .._io.detect import as_native, httpx_module, is_response
from .._io.source import async_byte_chunks, looks_like_response, sync_byte_chunks
from .._types import ProviderName
from .cursor import Cursor, Resumer

if TYPE_CHECKING:
    from .._message import Message

__all__ = [
    "Cursor",
    "IdleTimeoutError",
    "aevents_resumable",
    "afold_resumable",
    "atimed_events",
    "events_resumable",
    "fold_resumable",
    "timed_events",
]

# -- sync ----------------------------------------------------------------------------------


def _enter_sync(source: Any, stack: contextlib.ExitStack) -> Any:
    if (
        not looks_like_response(source)
        and not isinstance(source, Iterable)
        and hasattr(source, "__enter__")
    ):
        return stack.enter_context(source)
    return source


def _apply_httpx_idle_timeout(source: Any, idle_timeout: float) -> bool:
    """Make ``idle_timeout`` the read timeout of an httpx response not yet read (httpcore
    takes it from the request's ``timeout`` extension when the body is first read)."""
    if as_native(source) is not None:
        # Its reads wait in the core, bounded by the request's read timeout: ``sf.stream``
        # made it at most ``idle_timeout`` (``_client.stream``'s ``_timed``).
        return source.read_timeout is not None and source.read_timeout <= idle_timeout
    if httpx_module(source) is None or source.is_stream_consumed:
        return False
    timeouts = source.request.extensions.get("timeout")
    if not isinstance(timeouts, dict):
        return False
    read = timeouts.get("read")
    timeouts["read"] = idle_timeout if read is None else min(read, idle_timeout)
    return True


class _ThreadedReader:
    """Reads a byte source in a helper thread so a silent connection can be given up.

    The thread owns the source from open to close; a read left behind (given up, or the caller
    left the loop: a ``break``, an exception, Ctrl-C) finishes (and its source is closed) in
    the background when the blocked read returns. For a ``requests`` response that is at once:
    its socket is shut down for reading (urllib3's ``HTTPResponse.shutdown``, made for this),
    so the blocked read ends and the connection is released, rather than staying open until
    the server sends again.
    """

    _DONE = object()

    def __init__(
        self,
        source: Any,
        provider: str,
        idle_timeout: float,
        silence: Callable[[], IdleTimeoutError],
    ) -> None:
        self._source = source
        self._provider = provider
        self._idle_timeout = idle_timeout
        #: Makes the error of a silence (``Resumer.idle_error``: where the stream stood).
        self._silence = silence
        self._queue: queue.Queue[tuple[object, Any]] = queue.Queue(maxsize=16)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="streamfold-reader", daemon=True)
        self._thread.start()

    def _put(self, item: tuple[object, Any]) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
            except queue.Full:
                continue
            return True
        return False

    def _run(self) -> None:
        try:
            with sync_byte_chunks(self._source, self._provider) as chunks:
                for chunk in chunks:
                    if not self._put((None, chunk)):
                        return
            self._put((self._DONE, None))
        except BaseException as exc:  # handed to the reading thread, never lost
            self._put((exc, None))

    def __iter__(self) -> Iterator[bytes]:
        while True:
            try:
                kind, chunk = self._queue.get(timeout=self._idle_timeout)
            except queue.Empty:
                raise self._silence() from None
            if kind is None:
                yield chunk
            elif kind is self._DONE:
                return
            else:
                assert isinstance(kind, BaseException)
                raise kind

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            # A read may be blocked on a silent server, whether given up or left by the caller.
            _interrupt_read(self._source)


def _interrupt_read(source: Any) -> None:
    """End a read blocked on ``source`` from another thread, where the client allows it:
    urllib3 2.3+ (under ``requests``) shuts the socket down for reading. Best effort: a
    connection already released, or an older urllib3, is left to finish by itself."""
    shutdown = getattr(getattr(source, "raw", None), "shutdown", None)
    if callable(shutdown):
        with contextlib.suppress(ValueError, RuntimeError, OSError):
            shutdown()


def events_resumable(
    connect: Callable[[Cursor], Any],
    provider: ProviderName = "auto",
    *,
    strict: bool = False,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    max_reconnects: int = 5,
    idle_timeout: float | None = None,
    initial_delay: float = 0.5,
    max_delay: float = 30.0,
    on_reconnect: Callable[[Cursor, float, Exception | None], object] | None = None,
    catch_up: object = None,
) -> Generator[AnyEvent]:
    """The events of a stream that survives dropped connections (see the module docs).

    ``on_reconnect(cursor, delay, error)`` is called before each wait, with the cursor the
    next ``connect`` will get and the error that ended the connection (None for a clean end).
    Raises ``IncompleteStreamError`` when the stream cannot be completed; ``fold_resumable``
    fills its ``.partial``.

    ``catch_up``: the events so far in the provider's non-streaming form (a Clouisle run's
    ``GET …/chat/runs/{run_id}/events?after_sequence=0``, parsed or as bytes; see
    :func:`~streamfold.fold_json`). They are taken first, as the stream's first connection;
    ``connect`` is then called only if the run has not ended in them, with the cursor of their
    highest sequence (``after_sequence``), and the live stream goes on from there: its events
    at or below that sequence, if the server sends any again, are dropped.
    """
    return timed_events(
        connect,
        provider,
        strict=strict,
        max_event_bytes=max_event_bytes,
        max_reconnects=max_reconnects,
        idle_timeout=idle_timeout,
        initial_delay=initial_delay,
        max_delay=max_delay,
        on_reconnect=on_reconnect,
        catch_up=catch_up,
        clock=None,
    )


def timed_events(
    connect: Callable[[Cursor], Any],
    provider: ProviderName,
    *,
    strict: bool,
    max_event_bytes: int,
    max_reconnects: int,
    idle_timeout: float | None,
    initial_delay: float,
    max_delay: float,
    on_reconnect: Callable[[Cursor, float, Exception | None], object] | None,
    catch_up: object,
    clock: ReadClock | None,
) -> Generator[AnyEvent]:
    """:func:`events_resumable`, each read's arrival marked on ``clock`` (a fold's)."""
    core = Resumer(
        provider,
        strict=strict,
        max_event_bytes=max_event_bytes,
        max_reconnects=max_reconnects,
        initial_delay=initial_delay,
        max_delay=max_delay,
        # Not with ``idle_timeout``: the silence may be told by the reader's thread
        # (``_ThreadedReader``), which must find the state as the frames left it.
        events_path=idle_timeout is None,
    )
    core.clock = clock
    if catch_up is not None:
        ending = core.catch_up(catch_up)
        yield from ending.events
        if ending.error is not None:
            raise ending.error
        if ending.delay is None:
            return
    while True:
        error: Exception | None = None
        connected = False
        waiting_for = "response"
        try:
            with contextlib.ExitStack() as stack:
                source = _enter_sync(connect(core.cursor()), stack)
                chunks: Iterable[bytes]
                if idle_timeout is not None and not _apply_httpx_idle_timeout(source, idle_timeout):
                    reader = _ThreadedReader(
                        source,
                        core.name,
                        idle_timeout,
                        functools.partial(core.idle_error, idle_timeout, "bytes"),
                    )
                    stack.callback(reader.close)
                    chunks = reader
                else:
                    chunks = stack.enter_context(sync_byte_chunks(source, core.name))
                waiting_for = "bytes"
                pipeline = core.start()
                for chunk in chunks:
                    connected = True
                    events = core.feed(chunk)
                    yield from events
                    pipeline.raise_pending()
        except Exception as exc:
            error = exc
            if idle_timeout is not None and is_read_timeout(exc, idle_timeout):
                error = core.idle_error(idle_timeout, waiting_for, client_error(exc))
        ending = core.end(error, connected=connected)
        yield from ending.events
        if ending.error is not None:
            raise ending.error
        if ending.delay is None:
            return
        if on_reconnect is not None:
            on_reconnect(core.cursor(), ending.delay, error)
        time.sleep(ending.delay)


def fold_resumable(
    connect: Callable[[Cursor], Any],
    provider: ProviderName = "auto",
    *,
    strict: bool = False,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    max_reconnects: int = 5,
    idle_timeout: float | None = None,
    initial_delay: float = 0.5,
    max_delay: float = 30.0,
    on_reconnect: Callable[[Cursor, float, Exception | None], object] | None = None,
    catch_up: object = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> Message:
    """The folded message of a resumable stream (options as :func:`events_resumable`).

    Errors carry ``.partial``, the message folded so far: ``IncompleteStreamError`` when the
    stream could not be completed, ``StreamError`` for a provider error, ``ProtocolError``
    past ``max_message_bytes`` (what the fold keeps; see :class:`Folder`).
    """
    folder = Folder(provider, strict=strict, max_message_bytes=max_message_bytes)
    clock = ReadClock()
    events = timed_events(
        connect,
        provider,
        strict=strict,
        max_event_bytes=max_event_bytes,
        max_reconnects=max_reconnects,
        idle_timeout=idle_timeout,
        initial_delay=initial_delay,
        max_delay=max_delay,
        on_reconnect=on_reconnect,
        catch_up=catch_up,
        clock=clock,
    )
    driver = FoldDriver(folder, clock=clock)
    try:
        for event in events:
            driver.add(event)
    except StreamfoldError as exc:
        driver.annotate(exc)
        raise
    finally:
        events.close()
    return driver.result()


# -- async (asyncio and trio) --------------------------------------------------------------


async def _next_chunk(
    chunks: AsyncIterator[bytes], idle_timeout: float | None, core: Resumer
) -> bytes:
    """The next chunk, or ``IdleTimeoutError`` after ``idle_timeout`` s of silence."""
    chunk: bytes = await _within(idle_timeout, chunks.__anext__(), waiting_for="bytes", core=core)
    return chunk


async def _within(
    idle_timeout: float | None,
    awaitable: Awaitable[Any],
    *,
    waiting_for: str = "response",
    core: Resumer,
) -> Any:
    """``await awaitable``, or ``IdleTimeoutError`` after ``idle_timeout`` s: the wait for a
    chunk (``waiting_for="bytes"``), and the wait for a response's head or its error body (a
    server that accepts and sends nothing is silent too). ``core`` says where the stream
    stood, for the error's message."""
    if idle_timeout is None:
        return await awaitable
    limit: float = idle_timeout

    def silence() -> IdleTimeoutError:
        return core.idle_error(limit, waiting_for)

    if async_library() == "trio":
        import trio

        with trio.move_on_after(idle_timeout):
            return await awaitable
        raise silence()
    import asyncio

    if sys.version_info >= (3, 11):
        timeout = asyncio.timeout(idle_timeout)  # in this task: a context entered stays ours
        try:
            async with timeout:
                return await awaitable
        except TimeoutError:
            if timeout.expired():
                raise silence() from None
            raise
    return await _within_by_cancel(idle_timeout, awaitable, silence)


async def _within_by_cancel(
    idle_timeout: float,
    awaitable: Awaitable[Any],
    silence: Callable[[], IdleTimeoutError] | None = None,
) -> Any:
    """``_within`` on asyncio without ``asyncio.timeout`` (Python 3.10): wait_for would run
    the awaitable in a task of its own, so the response's context would be entered there, and
    cancelling that task half-way leaves aiohttp's connection broken for the next attempt.
    This task is cancelled instead, and the cancellation told apart from any other."""
    import asyncio

    task = asyncio.current_task()
    assert task is not None
    fired = False

    def expire() -> None:
        nonlocal fired
        fired = True
        task.cancel()

    handle = asyncio.get_running_loop().call_later(idle_timeout, expire)
    try:
        result = await awaitable
    except asyncio.CancelledError:
        if fired:
            if silence is None:
                error = IdleTimeoutError.silence("streamfold", idle_timeout, waiting_for="response")
                raise error from None
            raise silence() from None
        raise
    finally:
        handle.cancel()
    if fired:  # it fired as the awaitable finished: take the cancellation it sent
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(0)
    return result


async def _open_async(
    connect: Callable[[Cursor], Any], core: Resumer, stack: contextlib.AsyncExitStack
) -> AsyncIterator[bytes]:
    """One connection's bytes: the request made, its head checked (an error body read)."""
    source = await _enter_async(connect(core.cursor()), stack)
    chunks: AsyncIterator[bytes] = await stack.enter_async_context(
        async_byte_chunks(source, core.name)
    )
    return chunks


async def _enter_async(source: Any, stack: contextlib.AsyncExitStack) -> Any:
    if is_response(source):
        return source
    if hasattr(source, "__aenter__"):
        return await stack.enter_async_context(source)
    if isinstance(source, Awaitable) and not isinstance(source, AsyncIterable):
        return await source
    return source


def aevents_resumable(
    connect: Callable[[Cursor], Any],
    provider: ProviderName = "auto",
    *,
    strict: bool = False,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    max_reconnects: int = 5,
    idle_timeout: float | None = None,
    initial_delay: float = 0.5,
    max_delay: float = 30.0,
    on_reconnect: Callable[[Cursor, float, Exception | None], object] | None = None,
    catch_up: object = None,
) -> AsyncGenerator[AnyEvent]:
    """Async twin of :func:`events_resumable` (asyncio and trio). ``connect`` may return an
    async iterable of bytes, a response, an awaitable of either, or an async context manager;
    ``on_reconnect`` may be a coroutine function."""
    return atimed_events(
        connect,
        provider,
        strict=strict,
        max_event_bytes=max_event_bytes,
        max_reconnects=max_reconnects,
        idle_timeout=idle_timeout,
        initial_delay=initial_delay,
        max_delay=max_delay,
        on_reconnect=on_reconnect,
        catch_up=catch_up,
        clock=None,
    )


async def atimed_events(
    connect: Callable[[Cursor], Any],
    provider: ProviderName,
    *,
    strict: bool,
    max_event_bytes: int,
    max_reconnects: int,
    idle_timeout: float | None,
    initial_delay: float,
    max_delay: float,
    on_reconnect: Callable[[Cursor, float, Exception | None], object] | None,
    catch_up: object,
    clock: ReadClock | None,
) -> AsyncGenerator[AnyEvent]:
    """:func:`aevents_resumable`, each read's arrival marked on ``clock`` (a fold's)."""
    core = Resumer(
        provider,
        strict=strict,
        max_event_bytes=max_event_bytes,
        max_reconnects=max_reconnects,
        initial_delay=initial_delay,
        max_delay=max_delay,
        events_path=True,
    )
    core.clock = clock
    if catch_up is not None:
        ending = core.catch_up(catch_up)
        for event in ending.events:
            yield event
        if ending.error is not None:
            raise ending.error
        if ending.delay is None:
            return
    while True:
        error: Exception | None = None
        connected = False
        waiting_for = "response"
        try:
            async with contextlib.AsyncExitStack() as stack:
                chunks = await _within(idle_timeout, _open_async(connect, core, stack), core=core)
                waiting_for = "bytes"
                pipeline = core.start()
                while True:
                    try:
                        chunk = await (
                            chunks.__anext__()
                            if idle_timeout is None
                            else _next_chunk(chunks, idle_timeout, core)
                        )
                    except StopAsyncIteration:
                        break
                    connected = True
                    for event in core.feed(chunk):
                        yield event
                    pipeline.raise_pending()
        except Exception as exc:
            error = exc
            if idle_timeout is not None and is_read_timeout(exc, idle_timeout):
                # httpx's own read timeout (``sf.astream`` sets it to idle_timeout) may fire
                # before ours: the same silence.
                error = core.idle_error(idle_timeout, waiting_for, client_error(exc))
        ending = core.end(error, connected=connected)
        for event in ending.events:
            yield event
        if ending.error is not None:
            raise ending.error
        if ending.delay is None:
            return
        if on_reconnect is not None:
            result = on_reconnect(core.cursor(), ending.delay, error)
            if isinstance(result, Awaitable):
                await result
        await sleep(ending.delay)


async def afold_resumable(
    connect: Callable[[Cursor], Any],
    provider: ProviderName = "auto",
    *,
    strict: bool = False,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    max_reconnects: int = 5,
    idle_timeout: float | None = None,
    initial_delay: float = 0.5,
    max_delay: float = 30.0,
    on_reconnect: Callable[[Cursor, float, Exception | None], object] | None = None,
    catch_up: object = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> Message:
    """Async twin of :func:`fold_resumable`."""
    folder = Folder(provider, strict=strict, max_message_bytes=max_message_bytes)
    clock = ReadClock()
    events = atimed_events(
        connect,
        provider,
        strict=strict,
        max_event_bytes=max_event_bytes,
        max_reconnects=max_reconnects,
        idle_timeout=idle_timeout,
        initial_delay=initial_delay,
        max_delay=max_delay,
        on_reconnect=on_reconnect,
        catch_up=catch_up,
        clock=clock,
    )
    driver = FoldDriver(folder, clock=clock)
    try:
        async for event in events:
            driver.add(event)
    except StreamfoldError as exc:
        driver.annotate(exc)
        raise
    finally:
        await events.aclose()
    return driver.result()
