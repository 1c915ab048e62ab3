"""Waiting for native streams in an event loop, asyncio (any loop: uvloop, Windows' proactor)
or trio, with nothing loop-specific in Rust.

Each running loop has one hub: a socket pair whose write end the core writes a byte to when
any of the loop's streams has something new. When the socket is readable the hub drains (the
ids of every stream ready at that moment) and wakes the tasks waiting on those streams: one
wake-up of the loop however many streams and TCP reads there were. Under asyncio the drain is
a reader callback of the loop's (``loop.add_reader``: no task, no future, no change to the
loop's selector per wake-up); where the loop has no readers (Windows' proactor), and under
trio, a pump task waits for the socket instead. The reader stays as long as the hub (whose
loop closes it); a pump runs only while some task waits or a stream is open.
"""

from __future__ import annotations

import socket
import sys
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from .._core import NativeHub

__all__ = ["Hub", "current_hub"]

_RECV = 4096


class Hub:
    """The wake-ups of one event loop."""

    def __init__(self, library: str, loop: Any = None) -> None:
        self._library = library
        #: The asyncio loop this hub belongs to (one hub per loop), whose futures its tasks
        #: wait on; held weakly, so that a loop nobody runs any more is collected and its
        #: hub closed with it (``current_hub``): a hub holding its loop would keep both, and
        #: the hub's two descriptors, for good.
        self._loop: Callable[[], Any] = weakref.ref(loop) if loop is not None else _no_loop
        self._reader, writer = socket.socketpair()
        self._reader.setblocking(False)
        try:
            # The core owns a duplicate of the write end, so it can never write to a
            # descriptor number that was closed and reused.
            self.native = NativeHub(writer.dup().detach())
        finally:
            writer.close()
        #: stream id -> (what to ask when the core names it, the future its task awaits: an
        #: asyncio one, or a ``_TrioWaiter``).
        self._waiters: dict[int, tuple[Callable[[], Any], Any]] = {}
        self._running = False
        #: The asyncio pump task (a reference: the loop holds only a weak one), where the loop
        #: cannot call a reader back.
        self._pump: Any = None
        #: The asyncio loop calls ``_readable`` back.
        self._reading = False
        self._closed = False
        #: Streams open on this hub: the pump keeps running while there is one, rather than
        #: being started again after every drain that left no task waiting.
        self._open = 0

    def attach(self) -> None:
        self._open += 1

    def detach(self, stream_id: int) -> None:
        """Stream ``stream_id`` closed. The waiter of a task cancelled while it waited goes
        with it; a task still waiting (the stream closed from another one) is woken by the
        core's last word on the stream, as ever."""
        self._open -= 1
        entry = self._waiters.get(stream_id)
        if entry is not None and entry[1].done():
            del self._waiters[stream_id]

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._stop_reading()
            self.native.close()
            self._reader.close()

    def wait(self, stream_id: int, poll: Callable[[], Any]) -> Awaitable[Any]:
        """The first value other than None that ``poll()`` returns, asked in the pump each
        time the core names stream ``stream_id`` (what ``poll`` raises is raised here). The
        pump reads for the task: a task is woken only with something in hand, never for a
        notification whose bytes it already took.

        Under asyncio this is the loop's future itself, with no coroutine around it: a read
        that waits resumes one frame fewer per event. A waiter whose task was cancelled stays
        until the pump next names its stream (``_dispatch`` passes over a done future
        without asking ``poll``), the stream waits again, or it closes (``detach``)."""
        if self._library == "trio":
            return self._wait_trio(stream_id, poll)
        future = self._loop().create_future()
        self._waiters[stream_id] = (poll, future)
        if not self._running:
            self._start_reading()
        return future  # type: ignore[no-any-return]

    def _start_reading(self) -> None:
        loop = self._loop()
        self._running = True
        try:
            loop.add_reader(self._reader.fileno(), self._readable)
            self._reading = True
        except NotImplementedError:  # a loop without readers: Windows' proactor
            self._pump = loop.create_task(self._pump_asyncio(loop))

    async def _wait_trio(self, stream_id: int, poll: Callable[[], Any]) -> Any:
        import trio

        waiter = _TrioWaiter(trio.Event())
        entry = (poll, waiter)
        self._waiters[stream_id] = entry
        if not self._running:
            self._running = True
            trio.lowlevel.spawn_system_task(self._pump_trio)
        try:
            await waiter.event.wait()
        finally:
            if self._waiters.get(stream_id) is entry:
                del self._waiters[stream_id]
        if waiter.error is not None:
            raise waiter.error
        return waiter.value

    def _dispatch(self) -> None:
        waiters = self._waiters
        for stream_id in self.native.drain():
            entry = waiters.get(stream_id)
            if entry is None:
                continue
            poll, future = entry
            if future.done():  # its task was cancelled: what it would read stays unread
                del waiters[stream_id]
                continue
            try:
                value = poll()
            except Exception as exc:  # the waiting task's to raise
                del waiters[stream_id]
                future.set_exception(exc)
                continue
            if value is not None:
                del waiters[stream_id]
                future.set_result(value)

    def _readable(self) -> None:
        """The loop's reader callback: drain. The reader stays while the hub is open: an idle
        one costs the loop nothing, and taking it away and back for every stream opened
        one after another costs two ``epoll_ctl`` calls each (about 5 µs)."""
        self._drain_socket()
        self._dispatch()
        if self._closed:
            self._stop_reading()

    def _stop_reading(self) -> None:
        if self._reading:
            self._reading = False
            self._running = False
            loop = self._loop()
            if loop is not None and not loop.is_closed():
                loop.remove_reader(self._reader.fileno())

    async def _pump_asyncio(self, loop: Any) -> None:
        try:
            while (self._waiters or self._open) and not self._closed:
                await loop.sock_recv(self._reader, _RECV)
                self._drain_socket()
                self._dispatch()
        finally:
            self._running = False

    async def _pump_trio(self) -> None:
        import trio

        try:
            while (self._waiters or self._open) and not self._closed:
                await trio.lowlevel.wait_readable(self._reader)
                self._drain_socket()
                self._dispatch()
        except trio.Cancelled:
            pass  # the run ends: its waiters are cancelled with it
        finally:
            self._running = False

    def _drain_socket(self) -> None:
        try:
            while len(self._reader.recv(_RECV)) == _RECV:
                pass
        except (BlockingIOError, InterruptedError):
            pass


def _no_loop() -> None:
    """A trio hub's loop: none."""


class _TrioWaiter:
    """What ``_dispatch`` hands a trio task its read through: an asyncio future's three
    methods over a ``trio.Event``."""

    __slots__ = ("error", "event", "value")

    def __init__(self, event: Any) -> None:
        self.event = event
        self.value: Any = None
        self.error: BaseException | None = None

    def done(self) -> bool:
        return bool(self.event.is_set())

    def set_result(self, value: Any) -> None:
        self.value = value
        self.event.set()

    def set_exception(self, error: BaseException) -> None:
        self.error = error
        self.event.set()


def _library() -> str:
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_task()
        except RuntimeError:
            pass
        else:
            return "trio"
    return "asyncio"


_asyncio_hubs: weakref.WeakKeyDictionary[Any, Hub] = weakref.WeakKeyDictionary()
#: The hub ``current_hub`` last gave under asyncio (a list: no ``global`` statement).
_last_hub: list[Hub] = []
#: trio's ``RunVar`` holding each run's hub, made on first use (trio is imported only then).
_trio_hub: list[Any] = []


def current_hub() -> Hub:
    """The running loop's hub, made on first use and closed with the loop."""
    if _library() == "trio":
        import trio

        if not _trio_hub:
            _trio_hub.append(trio.lowlevel.RunVar("streamfold_hub"))
        try:
            hub: Hub = _trio_hub[0].get()
        except LookupError:
            hub = Hub("trio")
            _trio_hub[0].set(hub)
        return hub
    import asyncio

    loop = asyncio.get_running_loop()
    if _last_hub:
        # A request per stream asks this: the loop of the last answer is nearly always the
        # one running, and is told without making a weak reference to look it up.
        last = _last_hub[0]
        if not last._closed and last._loop() is loop:
            return last
    found = _asyncio_hubs.get(loop)
    if found is None or found._closed:
        found = Hub("asyncio", loop)
        _asyncio_hubs[loop] = found
        weakref.finalize(loop, found.close)
    _last_hub[:] = [found]
    return found
