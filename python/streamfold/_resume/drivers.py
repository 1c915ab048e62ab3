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
* An HTTP error on a reconnection: 408, 425, 429, 500, 502, 503 and 504 count as a failed
  attempt (waiting at least ``Retry-After``); any other status (501, 529…) ends the stream
  with ``IncompleteStreamError`` caused by the ``StreamError``. The first connection's errors
  are raised as they are.
"""

from __future__ import annotations

import contextlib
import functools
import queue
import re
import sys
import threading
import time
from collections import deque
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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._core import ServerSentEvent, SSEDecoder
from .._engine.driver import FoldDriver
from .._engine.folder import DEFAULT_MAX_MESSAGE_BYTES, Folder
from .._engine.pipeline import DEFAULT_MAX_EVENT_BYTES, Pipeline, check_max_event_bytes
from .._errors import (
    IdleTimeoutError,
    IncompleteStreamError,
    ProtocolError,
    StreamError,
    StreamfoldError,
)
from .._events import AnyEvent
from .._io.asynclib import async_library, backoff, sleep
from .._io.checks import retry_after_wait, retry_kind
from .._io.detect import httpx_module, is_response
from .._io.failures import ConnectionLostError, client_error, is_read_timeout, is_transport_error
from .._io.source import async_byte_chunks, looks_like_response, sync_byte_chunks
from .._providers import Provider, get_provider
from .._read.jsonbody import json_body_frames
from .._types import ProviderName

if TYPE_CHECKING:
    from .._message import Message

__all__ = [
    "Cursor",
    "IdleTimeoutError",
    "aevents_resumable",
    "afold_resumable",
    "events_resumable",
    "fold_resumable",
]

#: The resume parameter each provider's servers take, and the payload key it counts.
_SEQUENCE_PARAMS: dict[str, tuple[str, str]] = {
    "clouisle": ("after_sequence", "sequence"),
    "openai-responses": ("starting_after", "sequence_number"),
}
#: SSE ids remembered to recognise replays whose id does not compare with the cursor's.
_IDS_KEPT = 1024
#: Fingerprints kept of the frames without an ``id:`` of their own, after the last id (and
#: before the first): past them, replays of such frames are recognised by their count alone.
_FINGERPRINTS_KEPT = 1024
#: A run of digits longer than this is a hash, not a counter.
_MAX_ID_DIGITS = 30
_DIGIT_RUN = re.compile(r"[0-9]+")
#: What no header value may hold (an SSE id has no CR, LF or NUL already).
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


@dataclass(frozen=True)
class Cursor:
    """Where a stream stands; ``connect(cursor)`` uses it to ask for the rest.

    ``headers`` and ``params`` are ready to send: ``Last-Event-ID`` once the stream sent an SSE
    id, ``after_sequence`` (Clouisle; ``from_sequence`` for a Clouisle workflow stream) or
    ``starting_after`` (OpenAI Responses) once it sent a sequence number. Both are empty on the
    first connection. (httpx 0.28 and later replace the
    URL's query string with ``params=``: pass every query parameter in ``params``.)
    """

    #: 0 for the first connection, then 1, 2, …
    attempt: int = 0
    #: The last SSE ``id`` the stream sent ("" when none).
    last_event_id: str = ""
    #: The provider's sequence number of the last event processed, when it has one.
    sequence: int | None = None
    #: The provider the stream is parsed as.
    provider: str = "auto"
    headers: dict[str, str] = field(default_factory=dict)
    params: dict[str, int] = field(default_factory=dict)

    @property
    def can_resume(self) -> bool:
        """The stream told us where it stands: a reconnection can ask for the rest only."""
        return _sendable_id(self.last_event_id) or self.sequence is not None


def _sendable_id(event_id: str) -> bool:
    """Whether ``event_id`` can go in a ``Last-Event-ID`` header: not empty, and no control
    character (RFC 9110 section 5.5 allows none but HTAB; clients refuse them, or never send
    the request)."""
    return bool(event_id) and not _CONTROL.search(event_id)


def _make_cursor(
    attempt: int,
    last_event_id: str,
    sequence: int | None,
    provider: str,
    param: str | None = None,
) -> Cursor:
    """``param``: the provider's resume parameter for this stream when it is not the usual
    one (``Provider.resume_param``: Clouisle workflow streams take ``from_sequence``)."""
    headers = {"Last-Event-ID": last_event_id} if _sendable_id(last_event_id) else {}
    params: dict[str, int] = {}
    if sequence is not None and provider in _SEQUENCE_PARAMS:
        params[param or _SEQUENCE_PARAMS[provider][0]] = sequence
    return Cursor(attempt, last_event_id, sequence, provider, headers, params)


def _id_key(value: str) -> tuple[tuple[str, ...], tuple[int, ...]] | None:
    """An SSE id's shape and numbers: ``"17-1"`` -> ``(("", "-", ""), (17, 1))``.

    The shape is the id around its runs of (ASCII) digits. Ids of the same shape are ordered by
    their numbers, left to right (``evt_9`` < ``evt_10``, ``5-9`` < ``6-0``); ids of different
    shapes do not compare. None for an id without digits, or with a run too long to be a counter.
    """
    numbers = _DIGIT_RUN.findall(value)
    if not numbers or any(len(run) > _MAX_ID_DIGITS for run in numbers):
        return None
    return tuple(_DIGIT_RUN.split(value)), tuple(int(run) for run in numbers)


def _fingerprint(frame: Any) -> int:
    return hash((frame.event, frame.data)) if isinstance(frame, ServerSentEvent) else 0


@dataclass
class _Run:
    """A run of frames without an ``id:`` of their own: how many, and the fingerprints of the
    first ``_FINGERPRINTS_KEPT`` (bounded memory, however long the run)."""

    count: int = 0
    marks: list[int] = field(default_factory=list)

    def add(self, frame: Any) -> None:
        self.count += 1
        if len(self.marks) < _FINGERPRINTS_KEPT:
            self.marks.append(_fingerprint(frame))

    def matches(self, at: int, mark: int) -> bool:
        """Whether a frame with fingerprint ``mark`` can be this run's frame number ``at``."""
        if at >= self.count:
            return False
        return at >= len(self.marks) or self.marks[at] == mark

    def copy(self) -> _Run:
        return _Run(self.count, list(self.marks))


@dataclass
class _Ending:
    """What to do after a connection ended: yield ``events``, then raise or wait and retry."""

    events: list[AnyEvent]
    error: BaseException | None = None
    delay: float | None = None


class _Resumer:
    """The state of a resumable stream across connections. I/O-free, shared by both façades."""

    def __init__(
        self,
        provider: str | Provider,
        *,
        strict: bool,
        max_event_bytes: int,
        max_reconnects: int,
        initial_delay: float,
        max_delay: float,
    ) -> None:
        if max_reconnects < 0:
            raise ValueError("max_reconnects must be >= 0")
        check_max_event_bytes(max_event_bytes)
        self.provider = (
            get_provider(provider, strict=strict) if isinstance(provider, str) else provider
        )
        self.strict = strict
        self.max_event_bytes = max_event_bytes
        self.max_reconnects = max_reconnects
        self.initial_delay = initial_delay
        self.max_delay = max_delay
        self.attempt = 0
        #: Reconnections in a row that brought no new event.
        self.failures = 0
        self.last_event_id = ""
        #: How many processed frames carried ``last_event_id`` (ids may cover several frames).
        self.id_frames = 0
        #: The last ids processed, for replays whose id does not compare with the cursor's.
        self.seen_ids: deque[str] = deque(maxlen=_IDS_KEPT)
        #: The frames processed after the one that brought ``last_event_id`` (frames with no
        #: ``id:`` of their own): how many, and the fingerprints of the first of them. A
        #: server resuming after that id sends exactly these again first.
        self.after_id: _Run = _Run()
        #: The same for the frames before the stream's first id: a server that ignores
        #: ``Last-Event-ID`` sends them again first.
        self.before_id: _Run = _Run()
        self.retry_ms: int | None = None
        self.bytes_seen = 0
        #: Frames received over all connections (replays dropped), for error messages.
        self.frames = 0
        #: Some connection's events gave the answer content (``Pipeline.produced``).
        self.produced = False
        self.pipeline: Pipeline | None = None
        # Per connection: the replay check and whether a new frame arrived.
        self.progress = False
        self.replaying = False
        self.replay_sequence: int | None = None
        self.replay_id = ""
        self.replay_id_frames = 0
        self.replay_same_id_dropped = 0
        self.replay_seen: frozenset[str] = frozenset()
        self.sequence_key: str | None = None
        # The frames without an id at the start of a reconnection: ``lead`` seen so far, and
        # whether they may still be the ones after the cursor's id (the server resumed after
        # it) or those before the first id (it sent the whole stream again). ``lead_over``:
        # a frame with an id has come.
        self.lead = 0
        self.lead_after = False
        self.lead_before = False
        self.lead_over = False
        self.replay_after: _Run = self.after_id

    @property
    def name(self) -> str:
        return self.provider.concrete_name

    def cursor(self) -> Cursor:
        provider = self.provider
        return _make_cursor(
            self.attempt, self.last_event_id, provider.sequence, self.name, provider.resume_param
        )

    # -- the catch-up: the events so far, as JSON ---------------------------------------------

    def catch_up(self, body: object) -> _Ending:
        """Take the events of ``body`` (the provider's non-streaming form of them: a Clouisle
        catch-up) as the stream's first connection: their events, then ``delay=0`` to go on
        with the live stream from their highest sequence, or the end (the run ended in them).
        """
        pipeline = self.start()
        self.pipeline = None
        frames = json_body_frames(body, self.provider)
        events = pipeline.feed_frames(frames)  # through its filter, which counts them
        self.produced = pipeline.produced
        pending = pipeline.pending
        if pending is not None:
            return _Ending(events, pending)
        if self.provider.terminal_seen:
            return self._finish(events)
        if frames and self.provider.sequence is None:
            why = (
                f"the catch-up's {len(frames)} events carry no sequence number, so its live "
                "stream cannot be asked for the events after them (it would repeat them); it "
                "was not requested"
            )
            return self._finish(events, self._give_up(why, None))
        self.attempt = 1  # the live stream continues the catch-up, as a reconnection does
        return _Ending(events, delay=0.0)

    # -- one connection --------------------------------------------------------------------

    def start(self) -> Pipeline:
        """A fresh pipeline (new decoder) over the surviving provider."""
        self.progress = False
        self.replaying = self.attempt > 0
        self.replay_sequence = self.provider.sequence
        self.replay_id = self.last_event_id
        self.replay_id_frames = self.id_frames
        self.replay_same_id_dropped = 0
        self.replay_seen = frozenset(self.seen_ids)
        self.replay_after = self.after_id.copy()
        self.lead = 0
        self.lead_after = self.lead_before = True
        self.lead_over = False
        params = _SEQUENCE_PARAMS.get(self.name)
        self.sequence_key = params[1] if params is not None else None
        self.pipeline = Pipeline(
            self.provider,
            strict=self.strict,
            max_event_bytes=self.max_event_bytes,
            frame_filter=self._keep,
        )
        self.pipeline.produced = self.produced
        return self.pipeline

    def _frame_sequence(self, frame: Any) -> int | None:
        key = self.sequence_key
        if key is None:
            return None
        payload: Any = frame
        if isinstance(frame, ServerSentEvent):
            if not frame.data.startswith("{"):
                return None
            try:
                payload = frame.json()
            except ValueError:
                return None  # the provider reports it
        value = payload.get(key) if isinstance(payload, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def _is_replay(self, frame: Any, frame_id: str) -> bool | None:
        """True: already processed; False: new; None: cannot tell."""
        if self.replay_sequence is not None:
            sequence = self._frame_sequence(frame)
            if sequence is not None:
                return sequence <= self.replay_sequence
        if not frame_id:
            if not self.replay_id or self.lead_over:
                return None
            return self._is_lead_replay(frame)
        self.lead_over = True
        if not self.replay_id:
            return None
        if frame_id == self.replay_id:
            if self.replay_same_id_dropped < self.replay_id_frames:
                self.replay_same_id_dropped += 1
                return True
            return False
        if frame_id in self.replay_seen:
            return True
        # Not among the last ids processed: older than them if it sorts below the cursor.
        mine, theirs = _id_key(self.replay_id), _id_key(frame_id)
        if mine is not None and theirs is not None and mine[0] == theirs[0]:
            return theirs[1] < mine[1]
        return False

    def _is_lead_replay(self, frame: Any) -> bool:
        """Whether a frame without an id, before any frame with one on this reconnection, was
        processed already: it is the next of the frames after the cursor's id (a server
        resuming after it), or of those before the first id (a server sending everything
        again), matched by count and, for the first of them, by content. False once it is
        neither: a server resuming from the next event with an id sends none of them."""
        at = self.lead
        self.lead += 1
        mark = _fingerprint(frame)
        self.lead_after = self.lead_after and self.replay_after.matches(at, mark)
        self.lead_before = self.lead_before and self.before_id.matches(at, mark)
        return self.lead_after or self.lead_before

    def _keep(self, frame: Any) -> bool:
        frame_id = frame.id if isinstance(frame, ServerSentEvent) else ""
        if self.replaying:
            replay = self._is_replay(frame, frame_id)
            if replay:
                return False
            if replay is False:
                self.replaying = False
        if frame_id and frame_id != self.last_event_id:
            self.last_event_id = frame_id
            self.id_frames = 1
            self.seen_ids.append(frame_id)
            self.after_id = _Run()
        elif frame_id or self.last_event_id:
            # The id again, or none on a reconnection (its decoder is new): the frame comes
            # after the one that brought the stream's last id.
            self.id_frames += 1
            self.after_id.add(frame)
        elif isinstance(frame, ServerSentEvent):
            self.before_id.add(frame)
        self.progress = True
        self.frames += 1
        return True

    def idle_error(
        self, idle_timeout: float, waiting_for: str, cause: BaseException | None = None
    ) -> IdleTimeoutError:
        """``IdleTimeoutError`` for a silence now: the provider, and where the stream stood."""
        error = IdleTimeoutError.silence(
            self.name,
            idle_timeout,
            waiting_for=waiting_for,
            position=self.bytes_seen,
            frames=self.frames,
            last_event_id=self.last_event_id,
            connection=self.attempt + 1,
        )
        error.__cause__ = cause
        return error

    def _after_chunks(self, pipeline: Pipeline) -> None:
        decoder = pipeline.decoder
        if isinstance(decoder, SSEDecoder):
            if decoder.retry is not None:
                self.retry_ms = decoder.retry
            # An ``id:`` line with no data still moves the stream's last event id (WHATWG).
            last = decoder.last_event_id
            if last and last != self.last_event_id and not self.replaying:
                self.last_event_id = last
                self.id_frames = 0
                self.seen_ids.append(last)
                self.after_id = _Run()

    def feed(self, chunk: bytes) -> list[AnyEvent]:
        assert self.pipeline is not None
        self.bytes_seen += len(chunk)
        events = self.pipeline.feed(chunk)
        if self.pipeline.pending is None:
            self._after_chunks(self.pipeline)
        return events

    def end(self, error: BaseException | None, *, connected: bool) -> _Ending:
        """The connection ended (``error`` is None for a clean end of the body)."""
        pipeline, self.pipeline = self.pipeline, None
        events: list[AnyEvent] = []
        if error is not None and not self._retryable(error, connected=connected):
            if isinstance(error, StreamError) and error.status is not None and self.attempt > 0:
                return _Ending(events, self._give_up(f"the reconnection failed: {error}", error))
            return _Ending(events, error)
        if pipeline is not None and error is None:
            # A clean end: a last JSON line without its newline is still a whole frame.
            flushed = pipeline.close(finish=False)
            pending = pipeline.pending
            if pending is None:
                events.extend(flushed)
                self._after_chunks(pipeline)
            elif not isinstance(pending, ProtocolError) or self.provider.terminal_seen:
                events.extend(flushed)
                return _Ending(events, pending)
            # else: the last frame was cut in half by the drop; it is discarded.
        if pipeline is not None:
            self.produced = pipeline.produced
        if self.provider.terminal_seen:
            return self._finish(events)
        if pipeline is not None and self.progress:
            self.failures = 0
        # As sf.fold says it: a first body that is no stream at all (an HTML page, JSON lines
        # read as SSE) is a ProtocolError, and another provider's stream is named, rather
        # than either passing for a stream cut short.
        if pipeline is not None:
            not_a_stream = pipeline.not_a_stream() if error is None and self.attempt == 0 else None
            if not_a_stream is not None:
                return self._finish(events, not_a_stream)
        cursor = self.cursor()
        if not cursor.can_resume:
            why = (
                _how_it_ended(error)
            ) + " before the terminal event and the stream cannot be resumed (it sent no SSE id"
            why += " and no sequence number); it was not requested again"
            if cursor.last_event_id:
                why = (
                    f"{_how_it_ended(error)} before the terminal event and the stream cannot "
                    f"be resumed: its last SSE id {cursor.last_event_id!r} holds a control "
                    "character, which no Last-Event-ID header can carry (and it sent no "
                    "sequence number); it was not requested again"
                )
            return self._finish(events, self._give_up(why, error, pipeline))
        if self.failures >= self.max_reconnects:
            why = f"gave up after {self.failures} reconnections without a new event"
            if self.max_reconnects == 0:
                why = (
                    _how_it_ended(error)
                ) + " before the terminal event and reconnecting is off (max_reconnects=0)"
            return self._finish(events, self._give_up(why, error, pipeline))
        self.failures += 1
        self.attempt += 1
        return _Ending(events, delay=self._delay(error))

    def _retryable(self, error: BaseException, *, connected: bool) -> bool:
        if isinstance(error, StreamError):
            # A reconnection resumes the same stream: any status worth another request is.
            return (
                error.status is not None
                and retry_kind(error.status) is not None
                and self.attempt > 0
            )
        if not is_transport_error(error):
            return False
        # The first request failing before its first byte is raised as it is: nothing was
        # received, so there is nothing to resume and nothing to report as partial.
        return connected or self.attempt > 0

    def _delay(self, error: BaseException | None) -> float:
        base = self.retry_ms / 1000 if self.retry_ms is not None else self.initial_delay
        delay = backoff(base, self.failures, self.max_delay)
        retry_after = retry_after_wait(error, self.max_delay)
        if retry_after is not None:
            delay = max(delay, retry_after)
        return float(delay)

    def _finish(self, events: list[AnyEvent], error: BaseException | None = None) -> _Ending:
        """Let the provider close what it holds; ``error`` (if any) wins over its complaints."""
        out: list[Any] = []  # the provider's list[Event], of AnyEvent (as in Pipeline.feed)
        try:
            self.provider.finish(out)
        except StreamfoldError as exc:
            if error is None:
                error = exc
        events.extend(out)
        return _Ending(events, error)

    def _give_up(
        self, why: str, cause: BaseException | None, pipeline: Pipeline | None = None
    ) -> IncompleteStreamError:
        name = self.name
        # The last connection failed (a transport error, a silence past idle_timeout): a
        # ConnectionLostError, as sf.fold gives for the same failure; a clean end of the body
        # or a refused reconnection stays a plain IncompleteStreamError.
        lost = cause is not None and is_transport_error(cause)
        kind = ConnectionLostError if lost else IncompleteStreamError
        exc = kind(
            f"{name}: the stream is incomplete after {self.bytes_seen} bytes and "
            f"{self.attempt + 1} connection(s): {why}",
            provider=name,
            position=self.bytes_seen,
        )
        if isinstance(cause, ConnectionLostError) and cause.__cause__ is not None:
            cause = cause.__cause__
        exc.__cause__ = cause
        # Another provider's stream is named, rather than passing for one cut short.
        return exc if pipeline is None else pipeline.hinted(exc)


def _how_it_ended(error: BaseException | None) -> str:
    if error is None:
        return "the connection ended"
    if isinstance(error, IdleTimeoutError):
        return f"the connection sent nothing for {error.idle_timeout} s (idle_timeout)"
    return "the connection failed"


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
        #: Makes the error of a silence (``_Resumer.idle_error``: where the stream stood).
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
    core = _Resumer(
        provider,
        strict=strict,
        max_event_bytes=max_event_bytes,
        max_reconnects=max_reconnects,
        initial_delay=initial_delay,
        max_delay=max_delay,
    )
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
    events = events_resumable(
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
    )
    driver = FoldDriver(folder)
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
    chunks: AsyncIterator[bytes], idle_timeout: float | None, core: _Resumer
) -> bytes:
    """The next chunk, or ``IdleTimeoutError`` after ``idle_timeout`` s of silence."""
    chunk: bytes = await _within(idle_timeout, chunks.__anext__(), waiting_for="bytes", core=core)
    return chunk


async def _within(
    idle_timeout: float | None,
    awaitable: Awaitable[Any],
    *,
    waiting_for: str = "response",
    core: _Resumer,
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
    connect: Callable[[Cursor], Any], core: _Resumer, stack: contextlib.AsyncExitStack
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


async def aevents_resumable(
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
    core = _Resumer(
        provider,
        strict=strict,
        max_event_bytes=max_event_bytes,
        max_reconnects=max_reconnects,
        initial_delay=initial_delay,
        max_delay=max_delay,
    )
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
                        chunk = await _next_chunk(chunks, idle_timeout, core)
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
    events = aevents_resumable(
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
    )
    driver = FoldDriver(folder)
    try:
        async for event in events:
            driver.add(event)
    except StreamfoldError as exc:
        driver.annotate(exc)
        raise
    finally:
        await events.aclose()
    return driver.result()
