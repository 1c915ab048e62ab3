"""The state machine of a resumable stream: where it is (:class:`Cursor`), which frames a
reconnection replays, and what ends it (reconnect after a wait, or give up with the error).
No I/O: the drivers in ``drivers`` feed it each connection's bytes."""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._core import ReadClock, ServerSentEvent, SSEDecoder
from .._engine.pipeline import Pipeline, check_max_event_bytes
from .._errors import (
    IdleTimeoutError,
    IncompleteStreamError,
    ProtocolError,
    StreamError,
    StreamfoldError,
)
from .._events import AnyEvent
from .._failures import ConnectionLostError, is_transport_error
from .._io.asynclib import backoff
from .._io.checks import retry_after_wait, retry_kind
from .._providers import Provider, get_provider
from .._read.jsonbody import json_body_frames

if TYPE_CHECKING:
    pass


__all__ = ["Cursor", "Resumer"]

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


class Resumer:
    """The state of a resumable stream across connections. I/O-free, shared by both façades."""

    # Slots: one Resumer per open stream, and past 30 attributes CPython gives an instance a
    # dict of its own (about 1.5 KiB) instead of values kept inline.
    __slots__ = (
        "after_id",
        "attempt",
        "before_id",
        "bytes_seen",
        "clock",
        "failures",
        "frames",
        "id_frames",
        "initial_delay",
        "last_event_id",
        "lead",
        "lead_after",
        "lead_before",
        "lead_over",
        "max_delay",
        "max_event_bytes",
        "max_reconnects",
        "pipeline",
        "produced",
        "progress",
        "provider",
        "replay_after",
        "replay_id",
        "replay_id_frames",
        "replay_same_id_dropped",
        "replay_seen",
        "replay_sequence",
        "replaying",
        "retry_ms",
        "seen_ids",
        "sequence_key",
        "strict",
        "tracking",
    )

    def __init__(
        self,
        provider: str | Provider,
        *,
        strict: bool,
        max_event_bytes: int,
        max_reconnects: int,
        initial_delay: float,
        max_delay: float,
        events_path: bool = False,
    ) -> None:
        if max_reconnects < 0:
            raise ValueError("max_reconnects must be >= 0")
        check_max_event_bytes(max_event_bytes)
        self.provider = (
            get_provider(provider, strict=strict) if isinstance(provider, str) else provider
        )
        self.strict = strict
        self.max_event_bytes = max_event_bytes
        #: The fold's clock, which each connection's pipeline marks its reads on.
        self.clock: ReadClock | None = None
        self.max_reconnects = max_reconnects
        #: Every frame goes through ``_keep``, which remembers what a reconnection would
        #: replay. A stream that never reconnects needs none of it: its reads take the
        #: events path (``Pipeline.arm_events``: text deltas made in Rust, no Python frame),
        #: when the driver allows it (``events_path``: no other thread reads its state).
        self.tracking = max_reconnects > 0 or not events_path
        self.initial_delay = initial_delay
        self.max_delay = max_delay
        self.attempt = 0
        #: Reconnections in a row that brought no new event.
        self.failures = 0
        self.last_event_id = ""
        #: How many processed frames carried ``last_event_id`` (ids may cover several frames).
        self.id_frames = 0
        #: The last ids processed, for replays whose id does not compare with the cursor's;
        #: made at the first id (most model streams send none, and a deque takes 760 bytes).
        self.seen_ids: deque[str] | None = None
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
        self.tracking = True  # the live stream that follows is a reconnection: it replays
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
        self.replay_seen = frozenset(self.seen_ids or ())
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
            frame_filter=self._keep if self.tracking else None,
        )
        self.pipeline.produced = self.produced
        self.pipeline.clock = self.clock
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
            self._remember_id(frame_id)
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

    def _remember_id(self, frame_id: str) -> None:
        if self.seen_ids is None:
            self.seen_ids = deque(maxlen=_IDS_KEPT)
        self.seen_ids.append(frame_id)

    def idle_error(
        self, idle_timeout: float, waiting_for: str, cause: BaseException | None = None
    ) -> IdleTimeoutError:
        """``IdleTimeoutError`` for a silence now: the provider, and where the stream stood."""
        self._settle()
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
                self._remember_id(last)
                self.after_id = _Run()

    def feed(self, chunk: bytes) -> list[AnyEvent]:
        pipeline = self.pipeline
        assert pipeline is not None
        self.bytes_seen += len(chunk)
        # A tracked stream's filter keeps the events path unarmed: every frame is kept here.
        events = pipeline.read_events(chunk)
        if self.tracking and pipeline.pending is None:
            self._after_chunks(pipeline)
        return events

    def take_pending(self) -> BaseException | None:
        """The error the last read left pending (``Pipeline.pending``), taken: a driver hands
        it to ``end`` once the read's events are given (``atimed_events`` raises it there)."""
        pipeline = self.pipeline
        if pipeline is None or pipeline.pending is None:
            return None
        error, pipeline.pending = pipeline.pending, None
        return error

    def _settle(self) -> None:
        """Count what the events path read (frames, the last SSE id) into the stream's
        state, which ``_keep`` keeps for every frame of a tracked stream."""
        pipeline = self.pipeline
        if self.tracking or pipeline is None:
            return
        pipeline.disarm()
        self._after_chunks(pipeline)
        self.frames = pipeline.frames_seen
        self.progress = self.frames > 0

    def end(self, error: BaseException | None, *, connected: bool) -> _Ending:
        """The connection ended (``error`` is None for a clean end of the body)."""
        self._settle()
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
