"""bytes -> frames -> events: the one core behind ``events()``, ``aevents()`` and the fold.

``Pipeline.feed(chunk)`` makes one call into the Rust decoder per network chunk and runs the
provider over the frames it returns. Errors raised by the provider are not lost with the
events made before them: ``feed`` returns those events and keeps the error in ``pending``,
which the façades raise right after yielding them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .._core import (
    JsonLinesDecoder,
    NumberedCut,
    ReadClock,
    SSEDecoder,
    TemplateCut,
    TextBuffer,
)
from .._errors import ProtocolError, StreamError, StreamfoldError
from .._events import (
    AnyEvent,
    BlockDelta,
    BlockEnd,
    BlockStart,
    Event,
    MediaAdded,
    Notice,
    ToolResultAdded,
)
from .._failures import ConnectionLostError, as_connection_lost, is_transport_error
from .._providers import Provider, get_provider
from .._providers._fast import TEXT_DELTA_BUILDER
from .._types import ProviderName
from .diagnosis import Diagnosis

if TYPE_CHECKING:
    from .folder import DeltaSink

__all__ = ["Pipeline"]

E = TypeVar("E", bound=StreamfoldError)

DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024

#: Block kinds whose deltas feed a call (the fold makes the call at its first delta).
_CALL_KINDS = frozenset({"tool_call", "server_tool"})
#: What ``auto`` skips to find the first byte that tells its framing: blanks and a BOM.
_BLANKS = b" \t\r\n\xef\xbb\xbf"


def _not_bytes(chunk: object) -> str:
    if isinstance(chunk, str):
        return "expected bytes, got str: pass the raw response bytes (httpx: iter_bytes())"
    hint = (
        " (iterating over a bytes object gives ints: wrap a whole body as [body])"
        if isinstance(chunk, int)
        else ""
    )
    return (
        f"chunks must be bytes, bytearray or memoryview, got {type(chunk).__name__}{hint}: "
        "pass an iterable of the raw response bytes (httpx: iter_bytes())"
    )


def produces_content(event: Event) -> bool:
    """The rule of what gives the answer content, read from one event: it adds text,
    reasoning, a plan or a refusal that is not empty, a tool call, a block's payload, a tool
    result or media. (The decoder folds text in Rust only after a first delta of that block
    went through the provider as an event, so ``produced`` is set by then.) After content, a
    retry would show a second, different answer, so a ``StreamError`` is not
    ``retryable_without_duplicate``. ``Folder.produced_content`` is the same rule read from a
    fold's state, for a ``Folder`` fed events by hand; tests/test_retryable_agreement.py holds
    the two to one answer on every stream."""
    cls = event.__class__
    if cls is BlockDelta:
        return bool(event.text) or event.kind in _CALL_KINDS  # type: ignore[attr-defined]
    if cls is BlockStart:
        return (
            event.kind == "tool_call"  # type: ignore[attr-defined]
            or event.data is not None  # type: ignore[attr-defined]
            or bool(event.text)  # type: ignore[attr-defined]
        )
    if cls is BlockEnd:
        return event.data is not None  # type: ignore[attr-defined]
    return cls is ToolResultAdded or cls is MediaAdded


def check_max_event_bytes(limit: int) -> None:
    """Raise the ``ValueError`` the decoders give for a limit below 1 (or immense), naming
    ``max_event_bytes``: for the forms that make their decoders later (``auto``, each
    connection of a resumable stream)."""
    if not (type(limit) is int and 0 < limit < 2**63):
        SSEDecoder(max_event_bytes=limit)


class Pipeline:
    """Feed bytes, get events. Synchronous and I/O-free."""

    __slots__ = (
        "_armed",
        "_cut_line",
        "_decoder",
        "_diagnosis",
        "_max_event_bytes",
        "_reading",
        "_sniff",
        "_sniff_bom",
        "_sniff_errors",
        "bytes_seen",
        "clock",
        "closed",
        "frame_filter",
        "frames_seen",
        "on_folded",
        "pending",
        "produced",
        "provider",
        "stepping",
    )

    def __init__(
        self,
        provider: ProviderName | Provider = "auto",
        *,
        strict: bool = False,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        frame_filter: Callable[[Any], bool] | None = None,
    ) -> None:
        if not isinstance(provider, (str, Provider)):
            raise TypeError(
                f"provider must be a provider's name such as 'openai' (or 'auto'), got {provider!r}"
            )
        self.provider = (
            get_provider(provider, strict=strict) if isinstance(provider, str) else provider
        )
        framing = getattr(self.provider, "framing", "sse")
        if framing != "sse":
            # A JSON-lines decoder would name the limit max_line_bytes, and ``auto`` makes its
            # decoders only once bytes arrive.
            check_max_event_bytes(max_event_bytes)
        self._max_event_bytes = max_event_bytes
        self._decoder: SSEDecoder | JsonLinesDecoder | None = None
        #: For ``auto``, while only blanks have come: both decoders, each fed every blank
        #: read (nothing kept but a partial line, so keep-alive blanks cost no memory), and
        #: whether any blank was not ASCII whitespace (a BOM's bytes).
        self._sniff: tuple[SSEDecoder, JsonLinesDecoder] | None = None
        self._sniff_bom = False
        #: What each of those decoders refused among the blanks (JSON lines: a BOM's bytes
        #: inside a line; either: a line over the size limit), raised if the stream turns out
        #: to be in its framing.
        self._sniff_errors: list[ProtocolError | None] = [None, None]
        if framing == "sse":
            self._decoder = SSEDecoder(max_event_bytes=max_event_bytes)
        elif framing == "jsonl":
            self._decoder = JsonLinesDecoder(max_line_bytes=max_event_bytes)
        #: The error to raise once the events returned with it have been delivered.
        self.pending: StreamfoldError | None = None
        self.bytes_seen = 0
        self.frames_seen = 0
        #: Some event made so far gave the answer content (:func:`produces_content`): a
        #: ``StreamError`` is then not ``retryable_without_duplicate``. A resumable stream
        #: carries it over to the pipeline of its next connection.
        self.produced = False
        self.closed = False
        #: The last JSON line, without its newline, did not parse: cut by the end of input.
        self._cut_line = False
        #: Frames for which this returns False are skipped before the provider sees them
        #: (resumable streams drop the events a server replays after a reconnection).
        self.frame_filter = frame_filter
        #: The decoder's folding path is armed (``arm``): the chunks go to its
        #: ``feed_folding``, and the counts here lag until ``catch_up``.
        self._armed = False
        #: ``read_events``' events path, armed after each read run in Python.
        self._reading: Callable[[Any], tuple[list[AnyEvent], list[Any]] | None] | None = None
        #: Told how many characters of text the folding path handed to the fold, before
        #: anything else is read (the fold's ``Folder.took``, for ``max_message_bytes``).
        self.on_folded: Callable[[int], None] | None = None
        #: The fold's clock (``FoldDriver``): each read's arrival is marked on it, here or,
        #: for a read the folding path takes, by the decoder.
        self.clock: ReadClock | None = None
        #: Set by the fold: an SSE decoder returns each read's frames in steps (``resume``),
        #: so that the folding path can be armed between them.
        self.stepping = False
        named = self.provider.name != "auto"
        #: The first bytes, kept until the provider reads the stream, to explain a stream that
        #: is not what it was said to be. A named JSON-lines provider's bytes are read as
        #: ``auto``'s too, so that a stream in another framing is named whatever the reads.
        self._diagnosis = Diagnosis(
            probing=named and framing == "sse",
            byte_probe=self.auto_reader() if named and framing == "jsonl" else None,
        )

    @property
    def decoder(self) -> SSEDecoder | JsonLinesDecoder | None:
        return self._decoder

    def _choose_framing(self, chunk: bytes) -> bool:
        """For ``auto``: JSON lines start with ``{``/``[``, anything else is SSE. False while
        only blanks have come; they go to both decoders, which keep nothing of them but a
        partial line, so a long run of keep-alive blanks costs linear time and no memory."""
        stripped = chunk.lstrip(_BLANKS)
        sniff = self._sniff
        if not stripped:
            if sniff is None:
                sniff = self._sniff = (
                    SSEDecoder(max_event_bytes=self._max_event_bytes),
                    JsonLinesDecoder(max_line_bytes=self._max_event_bytes),
                )
            self._sniff_bom = self._sniff_bom or bool(chunk.strip())
            errors = self._sniff_errors
            decoders: tuple[SSEDecoder | JsonLinesDecoder, ...] = sniff
            for i, decoder in enumerate(decoders):
                if errors[i] is None:
                    try:
                        decoder.feed(chunk)  # blanks end no frame
                    except ProtocolError as exc:
                        errors[i] = exc
            return False
        self._sniff = None
        jsonl = stripped[:1] in (b"{", b"[")
        if jsonl:
            self._decoder = (
                sniff[1]
                if sniff is not None
                else JsonLinesDecoder(max_line_bytes=self._max_event_bytes)
            )
            set_framing = getattr(self.provider, "set_framing", None)
            if set_framing is not None:
                set_framing("jsonl")
        else:
            self._decoder = (
                sniff[0] if sniff is not None else SSEDecoder(max_event_bytes=self._max_event_bytes)
            )
        refused = self._sniff_errors[jsonl]
        if refused is not None:
            self.pending = self._diagnosis.framing_error(refused, self)
            return False
        return True

    # -- the fold's path: text read by the decoder straight into the fold ----------------------

    def arm(
        self, cut: TemplateCut | NumberedCut, event: str, sink: DeltaSink, room: int
    ) -> Callable[[Any], list[Any] | None] | None:
        """Arm the decoder's folding path (``SSEDecoder.arm``): the texts of the frames of type
        ``event`` whose data ``cut`` reads go to ``sink`` (``Folder.delta_sink``) from Rust,
        with no frame or event made. Returns the decoder's ``feed_folding``, which the fold
        calls instead of ``feed`` and whose other frames go to ``feed_folded``; ``None`` when
        the path cannot be armed (no SSE decoder, an error pending, a resumable stream's
        filter). A text that would take the fold past ``room`` characters is not folded there:
        its frame is returned, so the fold raises its limit's error as it would anyway;
        ``on_folded`` is told what the path took.

        The caller (``fold``) promises what ``Provider.folding_target`` says: ``sink`` is where
        those frames' deltas would be folded, and nothing else is folded until the decoder
        returns a frame."""
        decoder = self._armable()
        if decoder is None:
            return None
        sequence = self.provider.sequence
        clock = self.clock
        if isinstance(sink, TextBuffer):
            decoder.arm(cut, event, sink, room=room, sequence=sequence, clock=clock)
        else:
            push, refused = sink
            decoder.arm(cut, event, push, refused, room=room, sequence=sequence, clock=clock)
        self._mark_armed()
        return decoder.feed_folding

    def arm_events(self) -> Callable[[Any], tuple[list[AnyEvent], list[Any]] | None] | None:
        """The events path (``SSEDecoder.arm_events``), where the provider names a target
        (``Provider.folding_target``): the frames of that target's text deltas become their
        ``BlockDelta`` in Rust, with no Python frame run for them. Returns the decoder's
        ``feed_events``, whose other frames go to ``feed_folded``; ``None`` when the path
        cannot be armed (see ``arm``)."""
        # The events' ``produced`` is read from the events (``_note_content``): the Rust-made
        # deltas are only ever text after some, so the path waits for the first.
        decoder = self._armable()
        if decoder is None or TEXT_DELTA_BUILDER is None or not self.produced:
            return None
        target = self.provider.folding_target()
        if target is None:
            return None
        cut, event, choice, block, kind = target
        decoder.arm_events(
            cut, event, TEXT_DELTA_BUILDER, (block, kind, choice), sequence=self.provider.sequence
        )
        self._mark_armed()
        return decoder.feed_events

    def events_step(
        self, chunk: Any, read: tuple[list[AnyEvent], list[Any]] | ProtocolError | None
    ) -> list[AnyEvent]:
        """``events``' read of one chunk: ``chunk`` through ``feed``, or (``read``) what the
        events path returned for it: its events, then those of the frames it did not read.
        Check ``pending`` afterwards, then arm again (``arm_events``)."""
        if read is None:
            return self.feed(chunk)
        if isinstance(read, ProtocolError):
            assert isinstance(self._decoder, SSEDecoder)
            # list[Any]: the events the Rust path made, each one of AnyEvent (as in feed).
            made: list[Any] = self._decoder.take_events()
            return made + self.feed_folded(read)
        made, frames = read
        return made + self.feed_folded(frames) if frames else made

    def read_events(self, chunk: Any) -> list[AnyEvent]:
        """One chunk's events, on the events path wherever it can be armed (``arm_events``):
        the read whole in Rust when it holds only the deltas the path makes, else those
        deltas and the rest of its frames in Python (``events_step``), after which the path
        is armed again. Check ``pending`` afterwards."""
        reading = self._reading
        if reading is None:
            events = self.feed(chunk)
        else:
            read: tuple[list[AnyEvent], list[Any]] | ProtocolError | None
            try:
                read = reading(chunk)
            except ProtocolError as exc:
                read = exc
            if read is not None and self.clock is not None:
                self.clock.arrive()  # (a read the path refused is marked by ``feed``)
            if isinstance(read, tuple) and not read[1]:
                return read[0]
            events = self.events_step(chunk, read)
        if self.pending is None:
            self._reading = self.arm_events()
        return events

    def _armable(self) -> SSEDecoder | None:
        """The SSE decoder, when its folding path may be armed: no error pending, and no
        filter dropping frames (a resumable stream's replays) that the path would not see."""
        decoder = self._decoder
        if (
            not isinstance(decoder, SSEDecoder)
            or self.pending is not None
            or self.frame_filter is not None
        ):
            return None
        return decoder

    def _mark_armed(self) -> None:
        self._armed = True
        # The provider reads this stream: no other provider's format to tell, nothing to
        # explain.
        self._diagnosis.settle()

    def catch_up(self) -> None:
        """Count what the folding path read since the last call: its bytes, and its frames
        (numbered as if the provider had handled them, so errors name the right frame); and
        the provider's cursor moves to the last number read (OpenAI Responses)."""
        decoder = self._decoder
        assert isinstance(decoder, SSEDecoder)
        frames, read, characters, sequence = decoder.take_folded()
        if sequence is not None:
            self.provider.sequence = sequence
        self.bytes_seen += read
        if characters and self.on_folded is not None:
            self.on_folded(characters)
        if frames:
            self.frames_seen += frames
            self.provider.position += frames

    def resumer(self) -> Callable[[], list[Any] | None] | None:
        """With ``stepping``: the SSE decoder's ``resume``, which returns the next frames of
        the read it stopped in (raising ``ProtocolError`` as ``feed`` does), for
        ``feed_folded``, and ``None`` once that read is all returned. ``None`` before the
        decoder is chosen (``auto``), and for JSON lines, whose reads are never stepped."""
        decoder = self._decoder
        if not isinstance(decoder, SSEDecoder):
            return None
        resume: Callable[[], list[Any] | None] = decoder.resume
        return resume

    def feed_folded(self, frames: list[Any] | ProtocolError) -> list[AnyEvent]:
        """What ``feed`` does with a chunk's frames, for the frames ``feed_folding`` returned
        (or its error, with the frames before it): the decoder has disarmed itself."""
        self._armed = False
        self.catch_up()
        out: list[Any] = []
        if not isinstance(frames, ProtocolError):
            self._run(frames, out)
            return out
        self._run(frames.events, out)
        if self.pending is None:
            self.pending = self._diagnosis.framing_error(frames, self)
        return out

    def disarm(self) -> None:
        self._reading = None
        if self._armed:
            self._armed = False
            self.catch_up()
            assert isinstance(self._decoder, SSEDecoder)
            self._decoder.disarm()

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[AnyEvent]:
        """Decode one chunk; returns its events. Check ``pending`` afterwards."""
        clock = self.clock
        if clock is not None:
            clock.arrive()
        if self._armed:
            self.disarm()
        if chunk.__class__ is not bytes and not isinstance(chunk, (bytearray, memoryview)):
            raise TypeError(_not_bytes(chunk))
        seen = self.bytes_seen
        self.bytes_seen = seen + len(chunk)
        # list[Any]: the provider fills it as its list[Event], and every event a provider makes
        # is one of AnyEvent (the same in feed_folded, feed_frames, close and lost).
        out: list[Any] = []
        diagnosis = self._diagnosis
        if diagnosis.open and diagnosis.hold(chunk, seen, self):
            return out
        if self._decoder is None and not self._choose_framing(bytes(chunk)):
            return out
        decoder = self._decoder
        assert decoder is not None
        try:
            if self.stepping and isinstance(decoder, SSEDecoder):
                frames = decoder.feed_stepping(chunk)
            else:
                frames = decoder.feed(chunk)
        except ProtocolError as exc:
            self._run(exc.events, out)
            if self.pending is None and not self._diagnosis.defer(exc, self):
                self.pending = self._diagnosis.framing_error(exc, self)
            return out
        if frames:  # most small reads end no frame
            self._run(frames, out)
        return out

    def feed_frames(self, frames: list[Any]) -> list[AnyEvent]:
        """Run frames made elsewhere (the events of a JSON body, as the frames its stream would
        have sent: ``sf.fold_json``) through the provider, as ``feed`` runs the frames
        it decodes; returns their events. Check ``pending`` afterwards."""
        out: list[Any] = []
        self._diagnosis.settle()  # no bytes: nothing to tell another provider's format by
        self._run(frames, out)
        return out

    def close(self, *, finish: bool = True) -> list[AnyEvent]:
        """End of input: flush the decoder and let the provider check the ending.

        ``finish=False`` only flushes the decoder: the provider is not told the input ended
        (a resumable stream whose connection dropped continues on a new pipeline).
        """
        out: list[Any] = []
        if self.closed:
            return out
        self.disarm()
        self.closed = True
        if self._decoder is None and self._sniff is not None:
            # Blanks alone: read as SSE when a BOM's bytes came (the stream said something),
            # else there was no stream at all.
            if self._sniff_bom:
                self._decoder = self._sniff[0]
                refused = self._sniff_errors[0]
                if refused is not None:
                    self.pending = self._diagnosis.framing_error(refused, self)
            self._sniff = None
        frames: list[Any] = []
        self._diagnosis.close(self)
        if self._decoder is not None and self.pending is None:
            try:
                frames = self._decoder.close()
            except ProtocolError as exc:
                frames = exc.events
                self._run(frames, out)
                frames = []
                if self.pending is not None:
                    pass  # never hide an earlier error behind this one
                elif isinstance(self._decoder, JsonLinesDecoder):
                    # Only the last line, which has no newline, is read at close: one that is
                    # not JSON was cut by the end of input (a dropped connection), not broken
                    # by the server. Dropped, as SSE drops an unterminated event: the stream
                    # then ends without its terminal event, which says what happened.
                    self._cut_line = True
                else:
                    self.pending = self._diagnosis.framing_error(exc, self)
        self._run(frames, out)
        if self.pending is None and finish:
            try:
                self.provider.finish(out)
            except StreamfoldError as exc:
                self.pending = exc
            if not self.produced or self.pending is not None:
                self._note_content(out)
        return out

    def lost(self) -> list[AnyEvent]:
        """The connection failed mid-body (``ConnectionLostError``): the events the provider
        makes at the end of input, for the partial message.

        A provider may hold what arrived until the input ends (Gemini a streamed call's
        arguments, ``auto`` the frames it has not yet placed); without ``finish`` a lost
        connection would report less than a clean end at the same byte. Unlike ``close``, the
        decoder is not flushed: its unfinished frame was cut by the failure (a JSON line then
        reads as broken JSON), so it is dropped, as a resumable stream drops it. An error
        ``finish`` raises is not kept: the lost connection is why the stream ended, and it is
        what the caller gets; the events made before that error are kept.
        """
        out: list[Any] = []
        if self.closed:
            return out
        self.disarm()
        self.closed = True
        if self.pending is None:
            with contextlib.suppress(StreamfoldError):
                self.provider.finish(out)
        return out

    def source_failed(self, exc: BaseException) -> ConnectionLostError | None:
        """``exc``, raised by the byte source mid-body, as the lost connection it means (the
        adapters' ``ConnectionLostError``, or a client's own exception from a plain iterable
        such as ``response.iter_bytes()``); ``None`` for any other error (a bug, or the
        stream's own error), which is raised as it is. Then call ``lost``."""
        self.disarm()
        if isinstance(exc, StreamfoldError) and not is_transport_error(exc):
            return None
        return as_connection_lost(exc, self.provider_name, self.bytes_seen)

    def late_loss(self, lost: ConnectionLostError) -> Notice:
        """The warning of a connection that failed after the terminal event: the outcome was
        decided, so the message stands (as a resumable stream ends there too)."""
        cause = lost.__cause__ if lost.__cause__ is not None else lost
        return Notice(
            kind="warning",
            message=f"{self.provider_name}: the connection failed after the terminal event "
            f"({type(cause).__name__}: {cause}); the message was already complete",
        )

    @property
    def provider_name(self) -> str:
        """The provider's name; for ``auto``, the one it detected."""
        return self.provider.concrete_name

    @property
    def dropped_partial(self) -> bool:
        """An unterminated SSE event, or a last JSON line cut short, was discarded at the end
        of input."""
        dec = self._decoder
        return self._cut_line or bool(
            isinstance(dec, SSEDecoder) and self.closed and dec.dropped_partial
        )

    def _run(self, frames: list[Any], out: list[Event]) -> None:
        if self.pending is not None:
            return
        if self.frame_filter is not None:
            keep = self.frame_filter
            frames = [frame for frame in frames if keep(frame)]
        if self._diagnosis.probing and frames:
            now = self._diagnosis.probe(frames, self)
            if now < len(frames):
                # Up to the frame that told another provider's format: the error comes there
                # (``Diagnosis.read``) unless the named provider read the stream by then.
                self._read(frames[:now], out)
                self._read(frames[now:], out)
                return
        self._read(frames, out)

    def _read(self, frames: list[Any], out: list[Event]) -> None:
        """The named provider reads ``frames``: the events go to ``out``, an error to
        ``pending``."""
        if self.pending is not None:
            return
        provider = self.provider
        handle = provider.handle
        # A provider may run this loop itself, reading its commonest frames inline
        # (``handle_frames``: the same numbering, the same events, fewer calls per frame).
        handle_frames = getattr(provider, "handle_frames", None)
        first = provider.position + 1
        try:
            if handle_frames is not None:
                handle_frames(frames, out)
            else:
                # The frame's number is stored straight from the counter: one store per frame
                # instead of a load, an add and a store. A provider never moves its own
                # position (``auto`` replays its buffer and ends on the current frame's number).
                for provider.position, frame in enumerate(frames, first):
                    handle(frame, out)
        except StreamfoldError as exc:
            if isinstance(exc, ProtocolError):
                self._diagnosis.hinted(exc, self)
            self.pending = exc
        self.frames_seen += len(frames)
        if not self.produced or self.pending is not None:
            self._note_content(out)
        if self._diagnosis.open:
            self._diagnosis.read(frames, out, self)

    def _note_content(self, out: list[Event]) -> None:
        """Whether ``out`` gave the answer content (:func:`produces_content`); a provider's
        ``StreamError`` pending after it is then retryable by that rule, whatever the provider
        guessed from its own state."""
        if not self.produced:
            for event in out:  # a loop: a generator would be made on every read
                if produces_content(event):
                    self.produced = True
                    break
        pending = self.pending
        if isinstance(pending, StreamError) and pending.status is None:
            pending.retryable_without_duplicate = not self.produced

    def hinted(self, exc: E) -> E:
        """``exc`` with the misread hint (``Diagnosis.hinted``), when the first bytes tell
        another provider's format."""
        return self._diagnosis.hinted(exc, self)

    def raise_pending(self) -> None:
        if self.pending is not None:
            exc, self.pending = self.pending, None
            raise exc

    def not_a_stream(self) -> ProtocolError | None:
        """For input that ended without one frame: the ``ProtocolError`` of input that is no
        stream at all (``Diagnosis.not_a_stream``), else ``None``."""
        return self._diagnosis.not_a_stream(self)

    def incomplete_error(self) -> StreamfoldError:
        """The error of input that ended before the provider's terminal event: a stream cut
        short, or no stream at all (``Diagnosis.incomplete_error``)."""
        return self._diagnosis.incomplete_error(self)

    def auto_reader(self) -> Pipeline:
        """A pipeline that reads the same bytes with auto-detection: how the diagnosis tells
        which provider's format they are."""
        return Pipeline("auto", max_event_bytes=self._max_event_bytes)
