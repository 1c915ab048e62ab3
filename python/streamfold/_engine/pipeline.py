"""bytes -> frames -> events: the one core behind ``events()``, ``aevents()`` and the fold.

``Pipeline.feed(chunk)`` makes one call into the Rust decoder per network chunk and runs the
provider over the frames it returns. Errors raised by the provider are not lost with the
events made before them: ``feed`` returns those events and keeps the error in ``pending``,
which the façades raise right after yielding them.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .._core import JsonLinesDecoder, NumberedCut, SSEDecoder, TemplateCut
from .._errors import (
    IncompleteStreamError,
    ProtocolError,
    StreamError,
    StreamfoldError,
    add_hint,
)
from .._events import (
    AnyEvent,
    BlockDelta,
    BlockEnd,
    BlockStart,
    Event,
    MediaAdded,
    MessageEnd,
    Notice,
    ToolResultAdded,
)
from .._failures import ConnectionLostError, as_connection_lost, is_transport_error
from .._providers import Provider, get_provider, provider_class
from .._providers._fast import TEXT_DELTA_BUILDER
from .._providers.auto import CHAT, detect_and_parse, whole_body_error
from .._types import ProviderName

if TYPE_CHECKING:
    from .folder import DeltaSink

__all__ = ["Pipeline"]

E = TypeVar("E", bound=StreamfoldError)

DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024

#: How much of the input is kept to tell, when a named provider fails on it, which provider's
#: format it is (``Pipeline.misread_hint``).
_PREFIX_BYTES = 4096
#: Events a provider makes only from a stream in its own format: content, or its end.
_READ = frozenset({BlockStart, BlockDelta, MessageEnd})
#: How ``Pipeline.misread_hint`` begins (the command line gives its own advice instead).
MISREAD_HINT = " (its first frames read as provider="
#: What a body that is one JSON array most likely is.
_JSON_ARRAY_HINT = (
    "a JSON array, as Gemini's streamGenerateContent answers without ?alt=sse: ask for alt=sse"
)
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
        "_byte_probe",
        "_cut_line",
        "_decoder",
        "_deferred",
        "_detected",
        "_max_event_bytes",
        "_prefix",
        "_probing",
        "_sniff",
        "_sniff_bom",
        "_sniff_errors",
        "_told",
        "bytes_seen",
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
        #: The first ``_PREFIX_BYTES`` of the input, in the pieces read: to tell a stream cut
        #: short from no stream at all (``not_a_stream``) and which provider's format it is
        #: (``misread_hint``). ``None`` once the provider has read content or a terminal event
        #: from the stream, which a misread stream never gives, so an open stream keeps no
        #: copy of it.
        self._prefix: list[bytes] | None = []
        #: Frames for which this returns False are skipped before the provider sees them
        #: (resumable streams drop the events a server replays after a reconnection).
        self.frame_filter = frame_filter
        #: The decoder's folding path is armed (``arm``): the chunks go to its
        #: ``feed_folding``, and the counts here lag until ``catch_up``.
        self._armed = False
        #: Told how many characters of text the folding path handed to the fold, before
        #: anything else is read (the fold's ``Folder.took``, for ``max_message_bytes``).
        self.on_folded: Callable[[int], None] | None = None
        #: Set by the fold: an SSE decoder returns each read's frames in steps (``resume``),
        #: so that the folding path can be armed between them.
        self.stepping = False
        named = self.provider.name != "auto"
        #: A named SSE provider's frames are read by auto-detection too (``_probe``) until
        #: one tells which provider's they are: another's makes a ``ProtocolError`` naming it
        #: at that frame, unless the named provider read the stream by then.
        self._probing = named and framing == "sse"
        #: ``(name, frame number)``: the other provider that frame read as.
        self._detected: tuple[str, int] | None = None
        #: The provider the misread hint last named (``detected_provider`` of its errors).
        self._told: str | None = None
        #: A named JSON-lines provider (Cohere v1): ``auto`` reads the same bytes until the
        #: provider reads the stream, so that a stream in another framing (SSE) is named
        #: whatever its first frame's size, and whatever the reads.
        self._byte_probe: Pipeline | None = (
            Pipeline("auto", max_event_bytes=max_event_bytes)
            if named and framing == "jsonl"
            else None
        )
        #: A framing error held until ``_byte_probe`` tells which provider the stream is, so
        #: that its text is the same however the bytes were split.
        self._deferred: ProtocolError | None = None

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
            self.pending = self._framing_error(refused)
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
        if isinstance(sink, list):
            decoder.arm(cut, event, sink, room=room, sequence=sequence)
        else:
            push, refused = sink
            decoder.arm(cut, event, push, refused, room=room, sequence=sequence)
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
        target = self.provider.folding_target()
        decoder = self._armable()
        if target is None or decoder is None or TEXT_DELTA_BUILDER is None or not self.produced:
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
        self._prefix = None
        self._probing = False

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
            self.pending = self._framing_error(frames)
        return out

    def disarm(self) -> None:
        if self._armed:
            self._armed = False
            self.catch_up()
            assert isinstance(self._decoder, SSEDecoder)
            self._decoder.disarm()

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[AnyEvent]:
        """Decode one chunk; returns its events. Check ``pending`` afterwards."""
        if self._armed:
            self.disarm()
        if chunk.__class__ is not bytes and not isinstance(chunk, (bytearray, memoryview)):
            raise TypeError(_not_bytes(chunk))
        seen = self.bytes_seen
        if seen < _PREFIX_BYTES and self._prefix is not None:
            self._prefix.append(bytes(chunk[: _PREFIX_BYTES - seen]))
        self.bytes_seen = seen + len(chunk)
        # list[Any]: the provider fills it as its list[Event], and every event a provider makes
        # is one of AnyEvent (the same in feed_folded, feed_frames, close and lost).
        out: list[Any] = []
        if self._byte_probe is not None:
            self._feed_probe(chunk)
            if self._deferred is not None:
                return out
        elif self._deferred is not None:
            # ``auto``, whose first JSON line did not parse: one JSON document on several
            # lines (a whole answer, an error object), told at the end if it is small.
            if self.bytes_seen > _PREFIX_BYTES:
                deferred, self._deferred = self._deferred, None
                self.pending = self._framing_error(deferred)
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
            if self.pending is None:
                self._framing_failed(exc)
            return out
        if frames:  # most small reads end no frame
            self._run(frames, out)
        return out

    def feed_frames(self, frames: list[Any]) -> list[AnyEvent]:
        """Run frames made elsewhere (the events of a JSON body, as the frames its stream would
        have sent: ``sf.fold_json``) through the provider, as ``feed`` runs the frames
        it decodes; returns their events. Check ``pending`` afterwards."""
        out: list[Any] = []
        self._prefix = None  # no bytes: nothing to tell another provider's format by
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
                    self.pending = self._framing_error(refused)
            self._sniff = None
        frames: list[Any] = []
        if self._byte_probe is not None:
            self._feed_probe(None)
        elif self._deferred is not None:
            self.pending = self._whole_body(self._deferred)
            self._deferred = None
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
                    self.pending = self._framing_error(exc)
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

    def _feed_probe(self, chunk: bytes | bytearray | memoryview | None) -> None:
        """Feed ``_byte_probe`` (``None``: the end of input); once it has told (a provider
        chosen, an error, the end), a ``_deferred`` framing error is raised with its hint."""
        probe = self._byte_probe
        assert probe is not None
        with contextlib.suppress(StreamfoldError):
            if chunk is None:
                probe.close()
            else:
                probe.feed(chunk)
        if chunk is not None and probe.provider_name == "auto" and probe.pending is None:
            return  # not told yet
        self._byte_probe = None
        told = probe.provider_name
        if told != "auto" and not self._same_format(told):
            self._detected = (told, -1)
        deferred, self._deferred = self._deferred, None
        if deferred is not None and self.pending is None:
            self.pending = self._framing_error(deferred)

    def _framing_failed(self, exc: ProtocolError) -> None:
        """The decoder refused the bytes: the error, now, or once ``_byte_probe`` has told
        which provider's stream it is (see ``_deferred``), or, for ``auto``'s first JSON
        line, once the input has ended or outgrown a small body (``_whole_body``)."""
        if self._byte_probe is not None:
            self._deferred = exc
            self._feed_probe(b"")  # the probe may have told already
        elif (
            self.provider.name == "auto"
            and not self.frames_seen
            and isinstance(self._decoder, JsonLinesDecoder)
            and self.bytes_seen <= _PREFIX_BYTES
        ):
            self._deferred = exc
        else:
            self.pending = self._framing_error(exc)

    def _whole_body(self, exc: ProtocolError) -> StreamfoldError:
        """The error of input that is one JSON document on several lines (a pretty-printed
        answer or error object): what it is (``whole_body_error``), else ``exc``'s."""
        body = b"".join(self._prefix or ()).removeprefix(b"\xef\xbb\xbf")
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        whole = whole_body_error(payload)
        if isinstance(whole, StreamError):
            whole.retryable_without_duplicate = not self.produced
        return whole if whole is not None else self._framing_error(exc)

    def _same_format(self, name: str) -> bool:
        found, named = provider_class(name), type(self.provider)
        return issubclass(found, named) or issubclass(named, found)  # Mistral reads as OpenAI

    def _probe(self, frames: list[Any]) -> int:
        """Auto-detection over the frames about to be read, while the named provider has not
        read the stream: how many of them to read now. A frame that tells the named
        provider's format ends the probing; one that tells another's sets ``_detected``, and
        only the frames up to it are read, so that the ``ProtocolError`` it makes comes at
        that frame however the bytes were split. Its parsed payload goes to the provider."""
        first = self.provider.position + 1
        for k, frame in enumerate(frames):
            found, parsed = detect_and_parse(frame, jsonl=False)
            if found is None:
                continue
            self._probing = False
            if found == CHAT:
                found = "openai"
            if k == 0 and parsed is not None:
                self.provider.preparsed = (frame, parsed)
            if self._same_format(found):
                return len(frames)
            self._detected = (found, first + k)
            return k + 1
        return len(frames)

    def _misread_error(self, frames: list[Any]) -> None:
        """The frame ``_detected`` names was read and the named provider read nothing of the
        stream: another provider's, said at once rather than at its end."""
        assert self._detected is not None
        name = self.provider_name
        frame = frames[-1]
        event = getattr(frame, "event", None)
        self.pending = self.hinted(
            ProtocolError(
                f"{name}: the frames are not {name}'s (event {event!r}, frame {self._detected[1]})",
                provider=name,
                event=event,
                position=self._detected[1],
                raw=frame,
            )
        )

    def _run(self, frames: list[Any], out: list[Event]) -> None:
        if self.pending is not None:
            return
        if self.frame_filter is not None:
            keep = self.frame_filter
            frames = [frame for frame in frames if keep(frame)]
        if self._probing and self._prefix is not None and frames:
            now = self._probe(frames)
            if now < len(frames):
                # Up to the frame that told another provider's format: the error comes there
                # (``_misread_error``) unless the named provider read the stream by then.
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
                self._add_misread_hint(exc)
            self.pending = exc
        self.frames_seen += len(frames)
        if not self.produced or self.pending is not None:
            self._note_content(out)
        if self._prefix is not None:
            read = False
            for event in out:  # a loop: a generator would be made on every read
                if event.__class__ in _READ:
                    read = True
                    break
            if read:
                self._prefix = None  # the provider reads this stream: nothing to explain
                self._byte_probe = None
                self._probing = False
            elif (
                self._detected is not None
                and 0 <= self._detected[1] <= provider.position
                and self.pending is None
            ):
                self._misread_error(frames)

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

    def _framing_error(self, exc: ProtocolError) -> ProtocolError:
        """The decoder's error (an event over the size limit, a JSON line that does not parse)
        named as every other error is: the provider, and the number of the frame it broke
        (``position`` stays the byte or line offset the decoder gave)."""
        name = self.provider_name
        exc.provider = exc.provider or name
        if not exc.message.startswith(f"{name}: "):
            hint = ""
            if not self.frames_seen and self._body_head().startswith(b"["):
                hint = f" ({_JSON_ARRAY_HINT})"
            exc.message = f"{name}: {exc.message} (frame {self.frames_seen}){hint}"
            exc.args = (exc.message, *exc.args[1:])
        self._add_misread_hint(exc)
        return exc

    def _body_head(self) -> bytes:
        """The first bytes of the input after a BOM and blanks (of those kept in ``_prefix``:
        none once the provider has read the stream)."""
        if not self._prefix:
            return b""
        return b"".join(self._prefix).removeprefix(b"\xef\xbb\xbf").lstrip()

    def misread_hint(self) -> str:
        """For a provider the caller named, when the stream failed: ``" (its first frames read
        as provider='gemini': ...)"`` when auto-detection reads the first bytes as another
        provider's format, else ``""``. A stream given the wrong ``provider=`` would otherwise
        read as one cut short, or as broken bytes."""
        provider = self.provider
        if provider.name == "auto" or not self._prefix:  # none kept, or the stream was read
            return ""
        detected = self._detected
        if detected is not None:
            if detected[1] > provider.position:
                return ""  # told by a frame after the one being read: not known yet there
            return self._hint(detected[0])
        if self.frames_seen or self._byte_probe is not None:
            # The frames read told nothing (or the bytes are still being read as auto's):
            # what later bytes would tell must not change the text of this error.
            return ""
        probe = Pipeline("auto", max_event_bytes=self._max_event_bytes)
        with contextlib.suppress(StreamfoldError):
            probe.feed(b"".join(self._prefix))
            probe.close()
        told = probe.provider_name
        if told == "auto" or self._same_format(told):
            return ""
        return self._hint(told)

    def _hint(self, detected: str) -> str:
        self._told = detected
        name = self.provider.name
        return (
            f"{MISREAD_HINT}{detected!r}: is provider={name!r} right? "
            f"provider={detected!r} or 'auto' reads it)"
        )

    def _add_misread_hint(self, exc: ProtocolError) -> None:
        self.hinted(exc)

    def hinted(self, exc: E) -> E:
        """``exc`` with the misread hint (when the first bytes tell another provider): at the
        end of its message, and as ``hint`` and ``detected_provider``."""
        hint = self.misread_hint()
        if hint:
            add_hint(exc, hint, self._told)
        return exc

    def raise_pending(self) -> None:
        if self.pending is not None:
            exc, self.pending = self.pending, None
            raise exc

    def not_a_stream(self) -> ProtocolError | None:
        """For input that ended without one frame: a ``ProtocolError`` when it does not begin
        as its framing does (a proxy's HTML error page, another provider's format), rather
        than a stream cut short; ``None`` when it may be a stream cut before its first frame
        (no byte, blanks, comments, a field begun)."""
        if self.frames_seen or self.dropped_partial or self.pending is not None:
            return None
        head = self._body_head()
        jsonl = isinstance(self._decoder, JsonLinesDecoder)
        starts = (b"{", b"[") if jsonl else (b"data", b"event", b"id", b"retry", b":")
        if not head or head.startswith(starts) or any(s.startswith(head) for s in starts):
            return None
        name = self.provider_name
        misread = self.misread_hint()
        hint = ""
        if head.startswith(b"<"):
            hint = ": HTML, a proxy's or gateway's error page?"
        elif not jsonl and head.startswith(b"{"):
            # The hint names the provider whose stream it is, when auto-detection tells.
            hint = (
                ": JSON lines" if misread else ": JSON lines (Cohere v1 is provider='cohere-v1')?"
            )
        elif head.startswith(b"["):
            hint = f": {_JSON_ARRAY_HINT}"
        error = ProtocolError(
            f"{name}: the input is not {'JSON lines' if jsonl else 'an event stream (SSE)'}: "
            f"{self.bytes_seen} bytes and not one frame, beginning {head[:40]!r}{hint}",
            provider=name,
            position=0,
        )
        return add_hint(error, misread, self._told) if misread else error

    def incomplete_error(self) -> StreamfoldError:
        """The error of input that ended before the provider's terminal event: a stream cut
        short, or (``not_a_stream``) no stream at all."""
        not_a_stream = self.not_a_stream()
        if not_a_stream is not None:
            return not_a_stream
        name = self.provider_name
        misread = self.misread_hint()
        message = (
            f"{name}: the stream ended after {self.bytes_seen} bytes without the provider's "
            f"terminal event; the answer may be cut short{misread}"
        )
        if self.dropped_partial:
            dropped = (
                "a last line without its newline, not JSON, was discarded at the end of input"
                if isinstance(self._decoder, JsonLinesDecoder)
                else "an event not terminated by a blank line was discarded at the end of "
                "input, as the SSE standard requires"
            )
            message = f"{message} ({dropped})"
        error = IncompleteStreamError(message, provider=name, position=self.bytes_seen)
        if misread:
            error.hint, error.detected_provider = misread, self._told
        return error
