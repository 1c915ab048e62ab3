"""``sf.stream`` / ``sf.astream``: make a streamed request and read it as events, text or a
folded message, retried and resumed by the rules of their docstrings."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Generator,
    Iterator,
)
from typing import TYPE_CHECKING, Any

from .._core import ReadClock
from .._engine.driver import FoldDriver
from .._engine.folder import DEFAULT_MAX_MESSAGE_BYTES, Folder, check_max_message_bytes
from .._engine.pipeline import DEFAULT_MAX_EVENT_BYTES, check_max_event_bytes
from .._errors import IdleTimeoutError, StreamError, StreamfoldError
from .._events import BlockDelta, BlockStart
from .._failures import is_read_timeout
from .._io.aio import NativeBody, acheck_response
from .._io.asynclib import backoff
from .._io.checks import retry_after_wait, retry_kind
from .._io.sync import check_response
from .._providers import check_provider_name
from .._read.fold import afold_into, fold_into
from .._resume.drivers import atimed_events, timed_events
from .._transport import Client as NativeClient
from .._transport import Response as NativeResponse
from .._transport import shared_client
from .._types import ProviderName
from .native_events import NativeEvents
from .request import (
    aopen_stream,
    check_client,
    client_module,
    merge_cursor,
    names_header,
    open_stream,
    with_stream_headers,
)
from .retry import (
    IDEMPOTENT_METHODS,
    RUN_STARTING_PROVIDERS,
    apause,
    count_attempts,
    pause,
)

if TYPE_CHECKING:
    from types import TracebackType

    import httpx
    import httpx2

    from .._events import AnyEvent, Event
    from .._message import Message
    from .._resume.drivers import Cursor


class _StreamBase:
    """What the sync and async streams share: options, the fold, the response."""

    def __init__(
        self,
        method: str,
        url: Any,
        *,
        provider: ProviderName,
        client: Any,
        strict: bool,
        max_event_bytes: int,
        resume: bool,
        max_reconnects: int,
        idle_timeout: float | None,
        initial_delay: float,
        max_delay: float,
        max_retries: int,
        max_message_bytes: int,
        request_kwargs: dict[str, Any],
    ) -> None:
        # Without a client, the shared sf.Client makes the request: nothing else is needed.
        client = shared_client() if client is None else client
        check_provider_name(provider)
        check_max_event_bytes(max_event_bytes)
        check_max_message_bytes(max_message_bytes)
        self._max_message_bytes = max_message_bytes
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be an int >= 0, got {max_retries!r}")
        self._max_retries = max_retries
        #: The earlier attempts of the first request that were refused (then retried).
        self._refused: list[Exception] = []
        self.method = method
        self.url = url
        self.provider: ProviderName = provider
        self._client = client
        self._strict = strict
        self._max_event_bytes = max_event_bytes
        self._resume = resume
        self._resume_options: dict[str, Any] = {
            "max_reconnects": max_reconnects,
            "idle_timeout": idle_timeout,
            "initial_delay": initial_delay,
            "max_delay": max_delay,
        }
        self._request_kwargs = with_stream_headers(request_kwargs, provider)
        self._driver: FoldDriver | None = None
        #: The fold's clock, started when the first request is sent (``Message.timing``).
        self._clock: ReadClock | None = None
        #: The response of the first request (``None`` until the stream is opened).
        self.response: httpx.Response | None = None
        self._closed = False
        self._entered = False
        #: The error that ended the stream, raised again by ``fold()``.
        self._error: StreamfoldError | None = None
        #: The response being read (the first one, or a reconnection's).
        self._current: httpx.Response | None = None
        #: ``close()`` came from another thread (task) while it was reading: the read it ended
        #: ends the loop, not as an error.
        self._closed_elsewhere = False

    def _options(self) -> dict[str, Any]:
        # One path with or without resume: without it, no reconnection, but the same rules
        # (an incomplete stream raises while iterating; idle_timeout applies).
        options = dict(self._resume_options)
        if not self._resume:
            options["max_reconnects"] = 0
        options.update(
            provider=self.provider,
            strict=self._strict,
            max_event_bytes=self._max_event_bytes,
            on_reconnect=self._before_reconnect,
            catch_up=None,
        )
        return options

    def _before_reconnect(self, cursor: Cursor, delay: float, error: Exception | None) -> None:
        self._check_open()

    def _check_open(self) -> None:
        """Before a reconnection, again after its delay and once its response is known
        (``close()`` may come in either, and the response it would end is not known to it
        yet): the stream was closed while it read, so none is made or read."""
        if self._closed_elsewhere:
            raise _Closed

    def _timed(self, client: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        """``kwargs`` with a read timeout of at most ``idle_timeout``: a server that accepts
        the request and sends nothing, not even its status line, is silent too (the body's
        reads are bounded by the resumable machinery)."""
        idle = self._resume_options["idle_timeout"]
        if idle is None:
            return kwargs
        if client.__class__ is NativeClient:
            # The native read timeout bounds the head and each read alike.
            read = kwargs.get("timeout", client.timeout)
            return {**kwargs, "timeout": idle if read is None else min(read, idle)}
        httpx = client_module(client)  # an httpx2 client compares only httpx2's Timeout

        try:
            base = httpx.Timeout(kwargs.get("timeout", client.timeout))
        except (TypeError, ValueError):  # httpx's USE_CLIENT_DEFAULT
            base = client.timeout
        read = idle if base.read is None else min(base.read, idle)
        timeout = httpx.Timeout(connect=base.connect, read=read, write=base.write, pool=base.pool)
        return {**kwargs, "timeout": timeout}

    def _silent(self, exc: Exception) -> Exception:
        """``exc``, raised while the first request waited for its response's head: httpx's
        read timeout, which ``_timed`` bounds by ``idle_timeout``, is that silence, raised as
        ``IdleTimeoutError`` (as a reconnection's is), caused by httpx's exception. A shorter
        read timeout of the caller's own (``timeout=``) fired first: that one stays httpx's."""
        idle = self._resume_options["idle_timeout"]
        if idle is None or not is_read_timeout(exc, idle):
            return exc
        name = self.provider
        error = IdleTimeoutError.silence(name, idle, waiting_for="response")
        error.__cause__ = exc
        return error

    def _opening_failed(self, exc: BaseException) -> BaseException:
        """What ``open()`` raises for ``exc``: a silent server as ``IdleTimeoutError``; a
        ``StreamfoldError`` carries ``.partial`` (the empty message) as every error of a fold,
        and the count of requests made (``attempts``)."""
        if isinstance(exc, Exception):
            exc = self._silent(exc)
            count_attempts(exc, self._refused, self._max_retries)
        if isinstance(exc, StreamfoldError):
            self._annotate(exc)
        return exc

    def _repeatable(self, request_kwargs: dict[str, Any]) -> bool:
        """Sending the request again cannot act twice where the first one may have acted: an
        idempotent method (RFC 9110: GET, HEAD, PUT, DELETE…), a request carrying an
        ``Idempotency-Key`` (the caller says the server deduplicates it), or a model API,
        whose POST only asks for an answer (the OpenAI and Anthropic SDKs retry its 5xx).
        Not a POST to an agent platform (``clouisle``, ``onecortex``; ``auto`` may be one),
        which starts a run whose tools act: a 500 there may come after the run started."""
        if str(self.method).upper() in IDEMPOTENT_METHODS:
            return True
        if self.provider not in RUN_STARTING_PROVIDERS:
            return True
        return names_header(request_kwargs.get("headers"), "idempotency-key") or (
            names_header(getattr(self._client, "headers", None), "idempotency-key")
        )

    def _retry_delay(self, exc: Exception, response: httpx.Response | None) -> float | None:
        """How long to wait before sending the first request again after ``exc`` (None: raise
        it). Only the first request, before a byte of its stream was read, gets here."""
        # Raised or waited, its retry_after is capped by this stream's max_delay.
        retry_after_wait(exc, float(self._resume_options["max_delay"]))
        if len(self._refused) >= self._max_retries or self._closed:
            return None
        if not self._retryable(exc, response):
            return None
        self._refused.append(exc)
        options = self._resume_options
        max_delay = float(options["max_delay"])
        retry_after = retry_after_wait(exc, max_delay)
        if retry_after is not None:
            return retry_after
        return backoff(float(options["initial_delay"]), len(self._refused), max_delay)

    def _retryable(self, exc: Exception, response: httpx.Response | None) -> bool:
        httpx = client_module(self._client)  # an httpx2 client raises httpx2's exceptions
        if isinstance(exc, StreamError) and exc.status is not None:
            # The SDKs' header: the server's own word on whether to retry wins.
            verdict = response.headers.get("x-should-retry", "") if response is not None else ""
            if verdict.lower() in ("true", "false"):
                return verdict.lower() == "true"
            kind = retry_kind(exc.status)
            return kind == "refused" or (
                kind == "failed" and self._repeatable(self._request_kwargs)
            )
        if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)):
            return True  # the request was never sent
        if isinstance(exc, httpx.TimeoutException):
            # The server has the request and may be working on it, and the wait took the whole
            # timeout (or idle_timeout) already: another request would wait as long again.
            return False
        if isinstance(exc, (httpx.RemoteProtocolError, httpx.NetworkError)):
            # The connection failed before a response came: the request may have arrived.
            return self._repeatable(self._request_kwargs)
        return False

    def _read_once(self) -> NativeResponse | None:
        """The response, when it is ``sf.Client``'s and its body is read once, with nothing
        to resume and no idle timer: then the body is read straight from the connection."""
        response: Any = self.response
        if (
            isinstance(response, NativeResponse)
            and not self._resume
            and self._resume_options["idle_timeout"] is None
        ):
            return response
        return None

    @property
    def _fold(self) -> FoldDriver:
        driver = self._driver
        if driver is None:
            folder = Folder(
                self.provider, strict=self._strict, max_message_bytes=self._max_message_bytes
            )
            driver = self._driver = FoldDriver(folder, clock=self._clock)
        return driver

    def _start_clock(self) -> None:
        """The request is being sent: the times of the stream count from now."""
        clock = self._clock = ReadClock()
        if self._driver is not None:  # a snapshot was taken before the stream opened
            self._driver = FoldDriver(self._driver.folder, clock=clock)

    @property
    def folder(self) -> Folder:
        """The fold of the events read so far."""
        return self._fold.folder

    def snapshot(self) -> Message:
        """The message folded from the events read so far (for live UIs)."""
        return self.folder.snapshot()

    def _result(self) -> Message:
        if self._error is not None:
            # The stream ended with this error: fold() says so again, rather than that the
            # events merely stopped before the terminal event.
            raise self._error
        return self._fold.result()

    def _annotate(self, exc: StreamfoldError) -> None:
        self._error = exc
        if getattr(exc, "partial", None) is None:
            self._fold.annotate(exc)

    @property
    def status_code(self) -> int | None:
        return self.response.status_code if self.response is not None else None

    @property
    def headers(self) -> httpx.Headers | None:
        return self.response.headers if self.response is not None else None


class EventStream(_StreamBase):
    """A streamed HTTP request: iterate its events, fold its message. Made by :func:`stream`.

    ::

        with sf.stream("POST", url, provider="anthropic", json=body, headers=h) as s:
            for event in s:          # the events; each one also goes into the fold
                ...
            message = s.fold()       # the final message (reads whatever is left first)

    Entering the ``with`` sends the request and checks the status and content type, so HTTP
    errors raise there. Leaving it closes the response (and the client, when ``stream`` made
    one). Iterating without ``with`` opens the stream on first use and closes it at the end.
    A stream that ends (or whose connection fails) before the provider's terminal event raises
    ``IncompleteStreamError`` while iterating, with ``.partial``.
    """

    def __init__(self, method: str, url: Any, **options: Any) -> None:
        super().__init__(method, url, **options)
        check_client(self._client, asynchronous=False)
        #: The first request's context manager, entered: closed with the stream.
        self._opened: contextlib.AbstractContextManager[Any] | None = None
        self._iterator: Iterator[AnyEvent] | None = None

    def __enter__(self) -> EventStream:
        self._entered = True
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def open(self) -> None:
        """Send the request; raise ``StreamError`` / ``ProtocolError`` before any event."""
        if self.response is not None:
            return
        if self._closed:
            raise RuntimeError("this stream is closed")
        self._start_clock()
        try:
            self.response = self._send(self._request_kwargs)
        except BaseException as exc:
            self.close()
            error = self._opening_failed(exc)
            if error is exc:
                raise
            raise error from exc

    def _send(self, kwargs: dict[str, Any]) -> httpx.Response:
        client = self._client
        while True:
            response: httpx.Response | None = None
            try:
                # The stream: closed with the stream (``close``).
                manager = open_stream(client, self.method, self.url, self._timed(client, kwargs))
                opened: httpx.Response = manager.__enter__()
                self._opened = manager
                response = opened
                try:
                    check_response(opened, self.provider)
                except BaseException:
                    # The refused response (its error body read) is closed: nothing stays
                    # open during the wait, whatever ends it.
                    self._close_opened()
                    raise
                return opened
            except Exception as exc:
                delay = self._retry_delay(exc, response)
                if delay is None:
                    raise
            pause(delay)
            if self._closed:  # close() came during the wait: no further request
                raise self._refused.pop()

    def _connect(self, cursor: Cursor) -> Any:
        if cursor.attempt == 0 and self.response is not None:
            self._current = self.response
            return self.response
        self._check_open()
        kwargs = merge_cursor(self.url, self._request_kwargs, cursor, self._client)
        assert self._client is not None
        return self._tracked(
            open_stream(self._client, self.method, self.url, self._timed(self._client, kwargs))
        )

    @contextlib.contextmanager
    def _tracked(
        self, manager: contextlib.AbstractContextManager[httpx.Response]
    ) -> Generator[httpx.Response]:
        with manager as response:
            self._current = response
            self._check_open()  # close() came while the request was made: it did not see it
            yield response

    def _make_iterator(self) -> Iterator[AnyEvent]:
        self.open()
        return timed_events(self._connect, clock=self._clock, **self._options())

    def events(self) -> Iterator[AnyEvent]:
        """The events not yet read (one shared iterator: a second call continues).

        Nothing once the stream is closed or read to the end.
        """
        if self._closed:
            return
        if self._iterator is None:
            self._iterator = self._make_iterator()
        iterator = self._iterator
        add = self._fold.add  # the request is sent: the fold's driver stays
        try:
            for event in iterator:
                add(event)
                yield event
        except Exception as exc:
            if self._closed_elsewhere:
                # Another thread closed the stream while this one read: the read it ended
                # ends the loop, as a close() between two events would.
                self.close()
                return
            if self._closed:
                # Another thread is closing the stream, running its generator to its end: the
                # next event was asked for meanwhile ("generator already executing").
                return
            if isinstance(exc, StreamfoldError):
                self._annotate(exc)
            self.close()
            raise
        except GeneratorExit:
            # The caller stopped iterating: inside ``with`` it may go on reading (``fold()``);
            # without it nobody else will close the response.
            if not self._entered:
                self.close()
            raise
        except BaseException:
            self.close()
            raise
        else:
            self.close()

    def __iter__(self) -> Iterator[AnyEvent]:
        return self.events()

    @property
    def text_stream(self) -> Iterator[str]:
        """The answer's text as it arrives, piece by piece: the text blocks of choice 0 (no
        reasoning, tool calls or refusals), so the pieces join to ``Message.text``. Every event
        is folded meanwhile: ``fold()`` afterwards returns the whole message (as the Anthropic
        SDK's ``stream.text_stream`` and ``get_final_message()``). Shares the iterator of
        ``events()``: the events read by one are not seen by the other."""
        return _texts(self.events())

    def fold(self) -> Message:
        """Read the rest of the stream and return the final message.

        Raises what :func:`streamfold._read.fold` raises: ``IncompleteStreamError`` when the
        terminal event never came, ``StreamError`` for a provider error (both with
        ``.partial``).
        """
        if self._iterator is None and not self._closed:
            self.open()
            response = self._read_once()
            if response is not None:
                # Nothing read yet, nothing to resume: the body is folded read by read as
                # ``sf.fold`` folds it, its text in Rust, with no event made for it.
                return self._fold_native(response)
        for _ in self.events():
            pass
        return self._result()

    def _fold_native(self, response: NativeResponse) -> Message:
        # A close() from another thread closes the response (``_close_opened``), which ends
        # a read blocked on it.
        try:
            return fold_into(
                response,
                self.folder,
                provider=self.provider,
                strict=self._strict,
                max_event_bytes=self._max_event_bytes,
            )
        except StreamfoldError as exc:
            self._error = exc
            raise
        finally:
            self.close()

    def close(self) -> None:
        """Close the response (and the temporary client). Safe to call twice, and from
        another thread while one reads: its read is ended and its loop ends."""
        self._closed = True
        iterator = self._iterator
        try:
            running = getattr(iterator, "gi_running", False)
            if not running:
                close = getattr(iterator, "close", None)
                try:
                    if close is not None:
                        close()
                except ValueError:
                    # Another thread asked for its next event just now: it runs.
                    running = getattr(iterator, "gi_running", False)
                    if not running:
                        raise
            if running:
                # Another thread is inside the iterator, blocked in a read: a generator cannot
                # be closed from outside while it runs, and closing a socket does not wake a
                # read blocked on it; shutting it down does.
                self._closed_elsewhere = True
                _shutdown_read(self._current)
        finally:
            self._close_opened()

    def _close_opened(self) -> None:
        manager, self._opened = self._opened, None
        if manager is not None:
            manager.__exit__(None, None, None)


class AsyncEventStream(_StreamBase):
    """Async twin of :class:`EventStream`, made by :func:`astream` (asyncio and trio)::

    async with sf.astream("POST", url, provider="openai", json=body) as s:
        async for event in s:
            ...
        message = await s.fold()

    Use it with ``async with`` (or call ``aclose()``): a stream left before its end is closed
    there, since nothing can await a close when an abandoned object is collected. Read to its
    end, it closes itself.
    """

    def __init__(self, method: str, url: Any, **options: Any) -> None:
        super().__init__(method, url, **options)
        check_client(self._client, asynchronous=True)
        #: The first request's context manager, entered: closed with the stream.
        self._opened: contextlib.AbstractAsyncContextManager[Any] | None = None
        self._iterator: AsyncIterator[AnyEvent] | None = None

    async def __aenter__(self) -> AsyncEventStream:
        self._entered = True
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def open(self) -> None:
        """Send the request; raise ``StreamError`` / ``ProtocolError`` before any event."""
        if self.response is not None:
            return
        if self._closed:
            raise RuntimeError("this stream is closed")
        self._start_clock()
        try:
            self.response = await self._send(self._request_kwargs)
        except BaseException as exc:
            await self.aclose()
            error = self._opening_failed(exc)
            if error is exc:
                raise
            raise error from exc

    async def _send(self, kwargs: dict[str, Any]) -> httpx.Response:
        client = self._client
        while True:
            response: httpx.Response | None = None
            try:
                manager = aopen_stream(client, self.method, self.url, self._timed(client, kwargs))
                opened: httpx.Response = await manager.__aenter__()
                self._opened = manager
                response = opened
                try:
                    await acheck_response(opened, self.provider)
                except BaseException:
                    await self._close_opened()  # the refused response, before any other
                    raise
                return opened
            except Exception as exc:
                delay = self._retry_delay(exc, response)
                if delay is None:
                    raise
            await apause(delay)
            if self._closed:
                raise self._refused.pop()

    def _connect(self, cursor: Cursor) -> Any:
        if cursor.attempt == 0 and self.response is not None:
            self._current = self.response
            return self.response
        self._check_open()
        kwargs = merge_cursor(self.url, self._request_kwargs, cursor, self._client)
        assert self._client is not None
        return self._tracked(
            aopen_stream(self._client, self.method, self.url, self._timed(self._client, kwargs))
        )

    @contextlib.asynccontextmanager
    async def _tracked(
        self, manager: contextlib.AbstractAsyncContextManager[httpx.Response]
    ) -> AsyncGenerator[httpx.Response]:
        async with manager as response:
            self._current = response
            self._check_open()  # aclose() came while the request was made: it did not see it
            yield response

    async def _make_iterator(self) -> AsyncIterator[AnyEvent]:
        await self.open()
        response = self._read_once()
        if response is not None:
            self._current = self.response
            return NativeEvents(
                response,
                self.provider,
                strict=self._strict,
                max_event_bytes=self._max_event_bytes,
                clock=self._clock,
            )
        return atimed_events(self._connect, clock=self._clock, **self._options())

    def events(self) -> AsyncIterator[AnyEvent]:
        """The events not yet read (the stream itself: a second loop continues).

        Nothing once the stream is closed or read to the end.
        """
        return self

    def __aiter__(self) -> AsyncIterator[AnyEvent]:
        return self

    async def __anext__(self) -> AnyEvent:
        # A class, not an async generator: leaving ``async for`` early abandons nothing that
        # the event loop would have to finalize (trio warns about abandoned generators).
        if self._closed:
            raise StopAsyncIteration
        if self._iterator is None:
            self._iterator = await self._make_iterator()
        try:
            event = await self._iterator.__anext__()
        except StopAsyncIteration:
            await self.aclose()
            raise
        except Exception as exc:
            if self._closed_elsewhere:
                # Another task closed the stream while this one read (see EventStream).
                await self.aclose()
                raise StopAsyncIteration from None
            if isinstance(exc, StreamfoldError):
                self._annotate(exc)
            await self.aclose()
            raise
        except BaseException:
            await self.aclose()
            raise
        self._fold.add(event)
        return event

    @property
    def text_stream(self) -> AsyncIterator[str]:
        """The answer's text as it arrives (see ``EventStream.text_stream``)."""
        return _AsyncTexts(self)

    async def fold(self) -> Message:
        """Read the rest of the stream and return the final message (see ``EventStream``)."""
        if self._iterator is None and not self._closed:
            await self.open()
            response = self._read_once()
            if response is not None:
                # Nothing read yet, nothing to resume: the body is folded where the event
                # loop drains it, this task woken once, at the end (``afold_into``).
                return await self._fold_native(response)
        async for _ in self:
            pass
        return self._result()

    async def _fold_native(self, response: NativeResponse) -> Message:
        try:
            return await afold_into(
                NativeBody(response, self.provider),  # its head checked when it was opened
                self.folder,
                provider=self.provider,
                strict=self._strict,
                max_event_bytes=self._max_event_bytes,
            )
        except StreamfoldError as exc:
            self._error = exc
            raise
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Close the response (and the temporary client). Safe to call twice, and from
        another task while one reads: its read is ended and its loop ends."""
        self._closed = True
        iterator = self._iterator
        try:
            if getattr(iterator, "ag_running", False):
                # Another task is inside the iterator, awaiting a read: an async generator
                # cannot be closed while it runs; closing the response ends that read.
                self._closed_elsewhere = True
                current = self._current
                if current is not None:
                    await current.aclose()
            else:
                aclose = getattr(iterator, "aclose", None)
                if aclose is not None:
                    await aclose()
        finally:
            await self._close_opened()

    async def _close_opened(self) -> None:
        manager, self._opened = self._opened, None
        if manager is not None:
            await manager.__aexit__(None, None, None)


class _Closed(Exception):
    """Raised into the resumable machinery when ``close()`` ended its connection."""


def _shutdown_read(response: httpx.Response | NativeResponse | None) -> None:
    """End a read blocked on ``response``'s connection in another thread: its socket (httpx's
    ``network_stream`` extension) is shut down, which wakes the read; best effort."""
    if response is None:
        return
    if response.__class__ is NativeResponse:
        response.close()  # wakes the blocked read
        return
    network_stream = response.extensions.get("network_stream")
    get_extra_info = getattr(network_stream, "get_extra_info", None)
    sock = get_extra_info("socket") if get_extra_info is not None else None
    shutdown = getattr(sock, "shutdown", None)
    if shutdown is not None:
        with contextlib.suppress(OSError, ValueError):
            shutdown(socket.SHUT_RDWR)


def _text_of(event: Event) -> str:
    """The answer text an event adds: a text block's delta, or the text its start carries
    (choice 0, the one ``fold()`` returns). Run on every event: its classes are read once."""
    if isinstance(event, (BlockDelta, BlockStart)) and event.kind == "text" and event.choice == 0:
        return event.text
    return ""


def _texts(events: Iterator[AnyEvent]) -> Generator[str]:
    for event in events:
        text = _text_of(event)
        if text:
            yield text


class _AsyncTexts:
    """``AsyncEventStream.text_stream``: a class, not an async generator, for the reason
    ``AsyncEventStream.__anext__`` gives (leaving the loop early abandons nothing)."""

    __slots__ = ("_stream",)

    def __init__(self, stream: AsyncEventStream) -> None:
        self._stream = stream

    def __aiter__(self) -> _AsyncTexts:
        return self

    async def __anext__(self) -> str:
        while True:
            text = _text_of(await self._stream.__anext__())
            if text:
                return text


def stream(
    method: str,
    url: Any,
    *,
    provider: ProviderName,
    client: httpx.Client | httpx2.Client | NativeClient | None = None,
    strict: bool = False,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    resume: bool = False,
    max_reconnects: int = 5,
    idle_timeout: float | None = None,
    initial_delay: float = 0.5,
    max_delay: float = 30.0,
    max_retries: int = 2,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    **request_kwargs: Any,
) -> EventStream:
    """Make a streamed request and read it as events or a folded message.

    ``client`` is an :class:`streamfold.Client` (the native client), an ``httpx.Client`` or an
    httpx2 one; without it, the shared ``sf.Client`` makes the request (600 s read timeout,
    5 s connect). ``request_kwargs`` go to the client's ``stream`` (``json=``, ``headers=``,
    ``params=``, ``timeout=``…).

    ``resume=True`` makes the stream resumable (see :func:`streamfold.events_resumable`): when
    the connection drops after the stream sent an SSE ``id`` or a provider sequence, the same
    request is sent again with ``Last-Event-ID`` / ``after_sequence`` / ``starting_after``.
    Use it for endpoints that resume that way (a Clouisle run stream, SSE endpoints honouring
    ``Last-Event-ID``); OpenAI Responses resumes on a different URL, so use
    :func:`streamfold.fold_resumable` with your own ``connect`` there. A stream that never sent
    an id or a sequence is never re-requested. ``max_reconnects``, ``idle_timeout``,
    ``initial_delay`` and ``max_delay`` are those of :func:`streamfold.events_resumable`;
    ``idle_timeout`` also bounds the wait for the first response's head (``IdleTimeoutError``,
    caused by httpx's ``ReadTimeout``).

    ``max_retries`` (2, as the OpenAI and Anthropic SDKs): a first request refused before any
    byte of its stream (408, 409, 425, 429, or a connection that could not be made) is sent
    again up to that many times, after ``retry-after-ms`` / ``Retry-After`` (capped by
    ``max_delay``), else ``initial_delay`` doubled each time with jitter. A 5xx (503 and 529
    included, or a connection lost before the response) is sent again only when doing so
    cannot act twice: an idempotent method, an ``Idempotency-Key`` header, or a model API;
    not a POST to an agent platform (``clouisle``, ``onecortex``, ``auto``). A server's
    ``x-should-retry``
    decides. Timeouts are not retried. The error finally raised is the last attempt's, its
    ``attempts`` the number of requests made. Once the stream answered, nothing is sent again
    except by ``resume=True``.

    ``max_message_bytes`` caps what the stream's fold keeps (``fold()``, ``snapshot()``; see
    :class:`streamfold.Folder`, 256 MiB by default): past it, ``ProtocolError`` with the
    partial message.
    """
    return EventStream(
        method,
        url,
        provider=provider,
        client=client,
        strict=strict,
        max_event_bytes=max_event_bytes,
        resume=resume,
        max_reconnects=max_reconnects,
        idle_timeout=idle_timeout,
        initial_delay=initial_delay,
        max_delay=max_delay,
        max_retries=max_retries,
        max_message_bytes=max_message_bytes,
        request_kwargs=request_kwargs,
    )


def astream(
    method: str,
    url: Any,
    *,
    provider: ProviderName,
    client: httpx.AsyncClient | httpx2.AsyncClient | NativeClient | None = None,
    strict: bool = False,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    resume: bool = False,
    max_reconnects: int = 5,
    idle_timeout: float | None = None,
    initial_delay: float = 0.5,
    max_delay: float = 30.0,
    max_retries: int = 2,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    **request_kwargs: Any,
) -> AsyncEventStream:
    """Async twin of :func:`stream` (asyncio and trio): an ``sf.Client``, an
    ``httpx.AsyncClient`` or an httpx2 one, or the shared ``sf.Client``."""
    return AsyncEventStream(
        method,
        url,
        provider=provider,
        client=client,
        strict=strict,
        max_event_bytes=max_event_bytes,
        resume=resume,
        max_reconnects=max_reconnects,
        idle_timeout=idle_timeout,
        initial_delay=initial_delay,
        max_delay=max_delay,
        max_retries=max_retries,
        max_message_bytes=max_message_bytes,
        request_kwargs=request_kwargs,
    )
