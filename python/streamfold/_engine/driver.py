"""The one fold driver: what ``sf.fold``/``afold``, ``fold_json``, ``fold_resumable``, the
streams of ``sf.stream`` and the relays fold with.

A :class:`FoldDriver` folds events into a :class:`~streamfold.Folder` (one dict lookup per
event), arms the pipeline's folding path after each read it handled, and decides the outcome:
the message, or the error with everything the fold knows (the partial message, the frame's
position, the provider the stream turned out to be).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, cast

from .._core import ReadClock
from .._errors import ProtocolError, StreamfoldError
from .._events import Event
from .._message import Message, StreamTiming
from .._types import ProviderName
from .folder import Folder
from .pipeline import Pipeline

__all__ = ["FeedFolding", "FoldDriver"]

#: ``SSEDecoder.feed_folding``: the frames it did not fold (empty: all), ``None`` for a chunk
#: that is not ``bytes``; raises ``ProtocolError`` as ``feed`` does.
FeedFolding = Callable[[Any], "list[Any] | None"]


class FoldDriver:
    """``Folder.add`` inlined over a batch of events: one dict lookup per event.

    After each step of a read it handled (``step``), it arms the decoder's folding path where
    the provider names a target (``Provider.folding_target``): the frames after it that are
    that target's text are then folded in Rust with no Python frame or event at all, which is
    the whole cost of most reads of a stream read one event at a time. The decoder returns
    the other frames one step at a time (``SSEDecoder.resume``), so the path is armed again
    within a read as soon as the frame it could not fold is folded.

    ``direct=False`` leaves the provider making every event (a relay writes each one).
    Without a pipeline (``fold_resumable``, ``sf.stream``'s streams: their events come from a
    pipeline of their own), it folds the events it is given and decides the outcome the same
    way.

    The fold's clock (``Message.timing``) is the folder's, made here unless given (``clock``:
    one started when the request was sent): the pipeline marks each read's arrival on it, the
    decoder each read it folds, and this driver what each batch of events added.
    """

    __slots__ = (
        "_clock",
        "_dispatch",
        "_folder",
        "_folding",
        "_pipeline",
        "_resolve",
        "_resume",
        "_stepping",
    )

    def __init__(
        self,
        folder: Folder,
        pipeline: Pipeline | None = None,
        *,
        direct: bool = True,
        clock: ReadClock | None = None,
    ) -> None:
        self._folder = folder
        if clock is not None:
            folder._clock = clock
        elif folder._clock is None:
            folder._clock = ReadClock()
        self._clock = folder._clock
        # What the fold holds so far is not what the next read adds.
        self._clock.follow(folder.room)
        if pipeline is not None:
            pipeline.clock = self._clock
        # The class's table of handler functions: nothing is bound per fold.
        self._dispatch = folder._handlers
        self._resolve = folder._function_for
        self._pipeline = pipeline
        self._stepping = False
        #: The folding path armed for the next pushed read (``push``).
        self._folding: FeedFolding | None = None
        #: The SSE decoder's ``resume``, once the pipeline has its decoder.
        self._resume: Callable[[], list[Any] | None] | None = None
        if pipeline is not None and direct:
            pipeline.on_folded = folder.took
            # A provider that never names a target reads each read's frames in one batch.
            self._stepping = pipeline.stepping = pipeline.provider.names_folding_targets

    @classmethod
    def over(
        cls,
        pipeline: Pipeline,
        *,
        strict: bool,
        max_message_bytes: int | None = None,
        direct: bool = True,
        clock: ReadClock | None = None,
    ) -> FoldDriver:
        """A driver of a new fold of ``pipeline``'s events, named as its provider."""
        # The name the pipeline's provider instance was made under: one of ProviderName.
        name = cast("ProviderName", pipeline.provider.name)
        if max_message_bytes is None:
            folder = Folder(name, strict=strict)
        else:
            folder = Folder(name, strict=strict, max_message_bytes=max_message_bytes)
        return cls(folder, pipeline, direct=direct, clock=clock)

    @property
    def folder(self) -> Folder:
        return self._folder

    def timing(self) -> StreamTiming:
        """The fold's timing so far (what ``Message.timing`` will say)."""
        return StreamTiming(*self._clock.times_so_far())

    def step(self, chunk: Any, frames: list[Any] | ProtocolError | None) -> FeedFolding | None:
        """Fold one read: ``chunk`` through the pipeline, or (``frames``) what the folding
        path returned for it, then the rest of the read, step by step. Returns the folding
        path to use for the next read, if armed."""
        pipeline = cast("Pipeline", self._pipeline)
        events = pipeline.feed(chunk) if frames is None else pipeline.feed_folded(frames)
        provider = pipeline.provider
        folder = self._folder
        while True:
            if events:
                self(events)
            if pipeline.pending is not None:
                pipeline.raise_pending()
            folding = None
            target = provider.folding_target()
            if target is not None:
                cut, event, choice, block, _kind = target
                sink = folder.delta_sink(choice, block)
                if sink is not None:
                    folding = pipeline.arm(cut, event, sink, folder.room)
            if not self._stepping:
                return folding
            resume = self._resume
            if resume is None:
                resume = self._resume = pipeline.resumer()
                if resume is None:
                    # JSON lines are read whole; with no decoder yet (blanks), nothing is.
                    self._stepping = pipeline.decoder is None
                    return folding
            try:
                rest: list[Any] | ProtocolError | None = resume()
            except ProtocolError as exc:
                rest = exc
            if not rest:  # the read is all folded
                return folding
            events = pipeline.feed_folded(rest)

    def push(self, chunk: bytes, marks: Sequence[tuple[int, float]]) -> None:
        """Fold the reads a source handed over in one batch (a native response, from the event
        loop's drain), each as the loops of ``fold`` and ``afold`` fold a read they pull:
        ``marks`` says where each read ends in ``chunk`` and when it came (``ReadClock.pin``),
        so that the fold's timing counts the connection's reads. One call per batch, the
        reads looped over here."""
        pin = self._clock.pin
        step = self.step
        start = 0
        for end, at in marks:
            piece = chunk[start:end]
            start = end
            pin(at)
            folding = self._folding
            frames: list[Any] | ProtocolError | None = None
            if folding is not None:
                try:
                    frames = folding(piece)
                except ProtocolError as exc:
                    frames = exc
                if frames is not None and not frames:
                    continue
            self._folding = step(piece, frames)

    def __call__(self, events: Sequence[Event]) -> None:
        if not events:
            return
        dispatch = self._dispatch
        folder = self._folder
        for event in events:
            try:
                handler = dispatch[event.__class__]
            except KeyError:
                handler = self._resolve(event.__class__)
            handler(folder, event)
        self._clock.handled(folder._room)

    def add(self, event: Event) -> None:
        """Fold one event (the drivers that get their events one at a time)."""
        self((event,))

    def failure(
        self, exc: Exception, run: Callable[[Sequence[Event]], None] | None = None
    ) -> BaseException | None:
        """What the fold raises for ``exc``, with the partial message; ``None`` when the
        message stands (the connection failed after the terminal event). ``run`` folds the
        events the provider still held (this driver, unless a relay also writes them).

        A failure of the byte source (the HTTP adapters' ``ConnectionLostError``, or a
        client's own exception from a plain iterable such as ``response.iter_bytes()``) is a
        lost connection: what the provider still holds is folded first (``Pipeline.lost``),
        so the partial has every byte that arrived, as a clean end at that byte would.
        """
        pipeline = cast("Pipeline", self._pipeline)
        fold = self if run is None else run
        lost = pipeline.source_failed(exc)
        if lost is not None:
            # A rule the fold breaks on these closing events (strict) is not what ended the
            # stream: the caller gets the lost connection, with whatever was folded.
            with contextlib.suppress(StreamfoldError):
                fold(pipeline.lost())
            if self._folder.complete:
                fold([pipeline.late_loss(lost)])
                return None
            exc = lost
        elif not isinstance(exc, StreamfoldError):
            return exc  # a bug, not the stream's: raised as it is
        self.annotate(exc)
        return exc

    def annotate(self, exc: StreamfoldError) -> None:
        """Give ``exc`` what the fold knows: the partial message (``Folder.annotate_error``)
        and, for a rule the fold itself checks, the position of the frame being handled."""
        folder = self._folder
        pipeline = self._pipeline
        if pipeline is not None:
            folder.provider = pipeline.provider_name
        folder.annotate_error(exc)
        if pipeline is not None and isinstance(exc, ProtocolError) and exc.position is None:
            exc.position = pipeline.provider.position

    def result(self) -> Message:
        """The folded message; ``IncompleteStreamError`` (with the partial) when the stream
        ended before its terminal event."""
        folder = self._folder
        pipeline = self._pipeline
        if pipeline is not None:
            folder.provider = pipeline.provider_name
            if not folder.complete:
                exc = pipeline.incomplete_error()
                folder.annotate_error(exc)
                raise exc
        return folder.result()
