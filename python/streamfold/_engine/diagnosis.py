"""What a pipeline says about a stream that is not what it was said to be.

A stream given the wrong ``provider=`` would otherwise read as one cut short, or as broken
bytes; a proxy's HTML page or a JSON body would read as an event stream that never began. To
tell them apart, a :class:`Diagnosis` keeps the first bytes of the input and reads them with
auto-detection, until the provider has read the stream (content or its end, which a misread
stream never gives); from then on it keeps nothing. It makes the texts of the errors that
depend on what it kept: the misread hint, ``not_a_stream``, a framing error's, and the error of
a stream that ended before its terminal event. Those texts are the same however the bytes were
split.

The pipeline holds one and calls it; the diagnosis reads the pipeline it is handed (its
counters, provider and decoder) and keeps no reference to it. It changes the pipeline in one
way only: a framing error it held back (see :meth:`Diagnosis.hold`) becomes the pipeline's
``pending`` once it can be told.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any, TypeVar

from .._core import JsonLinesDecoder
from .._errors import (
    IncompleteStreamError,
    ProtocolError,
    StreamError,
    StreamfoldError,
    add_hint,
)
from .._events import BlockDelta, BlockStart, Event, MessageEnd
from .._providers import provider_class
from .._providers.auto import CHAT, detect_and_parse, whole_body_error

if TYPE_CHECKING:
    from .pipeline import Pipeline

__all__ = ["MISREAD_HINT", "Diagnosis"]

E = TypeVar("E", bound=StreamfoldError)

#: How much of the input is kept to tell, when a named provider fails on it, which provider's
#: format it is (``Diagnosis.misread_hint``).
_PREFIX_BYTES = 4096
#: Events a provider makes only from a stream in its own format: content, or its end.
_READ = frozenset({BlockStart, BlockDelta, MessageEnd})
#: How ``Diagnosis.misread_hint`` begins (the command line gives its own advice instead).
MISREAD_HINT = " (its first frames read as provider="
#: What a body that is one JSON array most likely is.
_JSON_ARRAY_HINT = (
    "a JSON array, as Gemini's streamGenerateContent answers without ?alt=sse: ask for alt=sse"
)


class Diagnosis:
    """The first bytes of a pipeline's input and what auto-detection reads in them, kept
    while ``open`` (until the provider reads the stream), and the error texts made of them."""

    __slots__ = ("_byte_probe", "_deferred", "_detected", "_prefix", "open", "probing", "told")

    def __init__(self, *, probing: bool, byte_probe: Pipeline | None) -> None:
        #: The provider has not read the stream yet: the first bytes are kept and watched.
        self.open = True
        #: The first ``_PREFIX_BYTES`` of the input, in the pieces read: to tell a stream cut
        #: short from no stream at all (``not_a_stream``) and which provider's format it is
        #: (``misread_hint``).
        self._prefix: list[bytes] = []
        #: A named SSE provider's frames are read by auto-detection too (``probe``) until one
        #: tells which provider's they are: another's makes a ``ProtocolError`` naming it at
        #: that frame, unless the named provider read the stream by then.
        self.probing = probing
        #: ``(name, frame number)``: the other provider that frame read as.
        self._detected: tuple[str, int] | None = None
        #: The provider the misread hint last named (``detected_provider`` of its errors).
        self.told: str | None = None
        #: A named JSON-lines provider (Cohere v1): ``auto`` reads the same bytes until the
        #: provider reads the stream, so that a stream in another framing (SSE) is named
        #: whatever its first frame's size, and whatever the reads.
        self._byte_probe = byte_probe
        #: A framing error held until ``_byte_probe`` tells which provider the stream is (or,
        #: for ``auto``'s first JSON line, until the input ends or outgrows a small body), so
        #: that its text is the same however the bytes were split.
        self._deferred: ProtocolError | None = None

    def settle(self) -> None:
        """The provider reads this stream: nothing to explain, nothing kept."""
        self.open = False
        self.probing = False
        self._prefix = []
        self._byte_probe = None
        self._detected = None

    # -- watching the input -------------------------------------------------------------------

    def hold(self, chunk: bytes | bytearray | memoryview, seen: int, pipeline: Pipeline) -> bool:
        """Keep what ``chunk`` (read after ``seen`` bytes; ``pipeline.bytes_seen`` counts it
        already) adds to the first bytes, and feed the byte probe. True when the chunk must
        not reach the decoder: a framing error is held until it can be told."""
        if seen < _PREFIX_BYTES:
            self._prefix.append(bytes(chunk[: _PREFIX_BYTES - seen]))
        if self._byte_probe is not None:
            self._feed_probe(chunk, pipeline)
            return self._deferred is not None
        if self._deferred is not None:
            # ``auto``, whose first JSON line did not parse: one JSON document on several
            # lines (a whole answer, an error object), told at the end if it is small.
            if pipeline.bytes_seen > _PREFIX_BYTES:
                deferred, self._deferred = self._deferred, None
                pipeline.pending = self.framing_error(deferred, pipeline)
            return True
        return False

    def defer(self, exc: ProtocolError, pipeline: Pipeline) -> bool:
        """The decoder refused the bytes: True when the error is held (see ``_deferred``),
        to be told once ``_byte_probe`` has told which provider's stream it is, or, for
        ``auto``'s first JSON line, once the input has ended or outgrown a small body
        (``_whole_body``)."""
        if self._byte_probe is not None:
            self._deferred = exc
            self._feed_probe(b"", pipeline)  # the probe may have told already
            return True
        if (
            pipeline.provider.name == "auto"
            and not pipeline.frames_seen
            and isinstance(pipeline.decoder, JsonLinesDecoder)
            and pipeline.bytes_seen <= _PREFIX_BYTES
        ):
            self._deferred = exc
            return True
        return False

    def close(self, pipeline: Pipeline) -> None:
        """The end of input: a held framing error is told now."""
        if self._byte_probe is not None:
            self._feed_probe(None, pipeline)
        elif self._deferred is not None:
            pipeline.pending = self._whole_body(self._deferred, pipeline)
            self._deferred = None

    def _feed_probe(self, chunk: bytes | bytearray | memoryview | None, pipeline: Pipeline) -> None:
        """Feed ``_byte_probe`` (``None``: the end of input); once it has told (a provider
        chosen, an error, the end), a ``_deferred`` framing error is told with its hint."""
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
        if told != "auto" and not _same_format(pipeline, told):
            self._detected = (told, -1)
        deferred, self._deferred = self._deferred, None
        if deferred is not None and pipeline.pending is None:
            pipeline.pending = self.framing_error(deferred, pipeline)

    def _whole_body(self, exc: ProtocolError, pipeline: Pipeline) -> StreamfoldError:
        """The error of input that is one JSON document on several lines (a pretty-printed
        answer or error object): what it is (``whole_body_error``), else ``exc``'s."""
        body = b"".join(self._prefix).removeprefix(b"\xef\xbb\xbf")
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        whole = whole_body_error(payload)
        if isinstance(whole, StreamError):
            whole.retryable_without_duplicate = not pipeline.produced
        return whole if whole is not None else self.framing_error(exc, pipeline)

    # -- watching the frames ------------------------------------------------------------------

    def probe(self, frames: list[Any], pipeline: Pipeline) -> int:
        """Auto-detection over the frames about to be read, while the named provider has not
        read the stream: how many of them to read now. A frame that tells the named
        provider's format ends the probing; one that tells another's sets ``_detected``, and
        only the frames up to it are read, so that the ``ProtocolError`` it makes comes at
        that frame however the bytes were split. Its parsed payload goes to the provider."""
        provider = pipeline.provider
        first = provider.position + 1
        for k, frame in enumerate(frames):
            found, parsed = detect_and_parse(frame, jsonl=False)
            if found is None:
                continue
            self.probing = False
            if found == CHAT:
                found = "openai"
            if k == 0 and parsed is not None:
                provider.preparsed = (frame, parsed)
            if _same_format(pipeline, found):
                return len(frames)
            self._detected = (found, first + k)
            return k + 1
        return len(frames)

    def read(self, frames: list[Any], out: list[Event], pipeline: Pipeline) -> None:
        """The provider read ``frames`` into ``out``: when it read the stream, nothing is left
        to explain (``settle``); when the frame ``_detected`` names was among them and the
        provider read nothing of the stream, the stream is another provider's, said at once
        rather than at its end."""
        for event in out:  # a loop: a generator would be made on every read
            if event.__class__ in _READ:
                self.settle()
                return
        detected = self._detected
        if (
            detected is not None
            and 0 <= detected[1] <= pipeline.provider.position
            and pipeline.pending is None
        ):
            name = pipeline.provider_name
            frame = frames[-1]
            kind = getattr(frame, "event", None)
            pipeline.pending = self.hinted(
                ProtocolError(
                    f"{name}: the frames are not {name}'s (event {kind!r}, frame {detected[1]})",
                    provider=name,
                    event=kind,
                    position=detected[1],
                    raw=frame,
                ),
                pipeline,
            )

    # -- the errors' texts --------------------------------------------------------------------

    def framing_error(self, exc: ProtocolError, pipeline: Pipeline) -> ProtocolError:
        """The decoder's error (an event over the size limit, a JSON line that does not parse)
        named as every other error is: the provider, and the number of the frame it broke
        (``position`` stays the byte or line offset the decoder gave)."""
        name = pipeline.provider_name
        exc.provider = exc.provider or name
        if not exc.message.startswith(f"{name}: "):
            hint = ""
            if not pipeline.frames_seen and self._body_head().startswith(b"["):
                hint = f" ({_JSON_ARRAY_HINT})"
            exc.message = f"{name}: {exc.message} (frame {pipeline.frames_seen}){hint}"
            exc.args = (exc.message, *exc.args[1:])
        return self.hinted(exc, pipeline)

    def _body_head(self) -> bytes:
        """The first bytes of the input after a BOM and blanks (of those kept: none once the
        provider has read the stream)."""
        return b"".join(self._prefix).removeprefix(b"\xef\xbb\xbf").lstrip()

    def misread_hint(self, pipeline: Pipeline) -> str:
        """For a provider the caller named, when the stream failed: ``" (its first frames read
        as provider='gemini': ...)"`` when auto-detection reads the first bytes as another
        provider's format, else ``""``."""
        provider = pipeline.provider
        if provider.name == "auto" or not self._prefix:  # none kept, or the stream was read
            return ""
        detected = self._detected
        if detected is not None:
            if detected[1] > provider.position:
                return ""  # told by a frame after the one being read: not known yet there
            return self._hint(detected[0], pipeline)
        if pipeline.frames_seen or self._byte_probe is not None:
            # The frames read told nothing (or the bytes are still being read as auto's):
            # what later bytes would tell must not change the text of this error.
            return ""
        probe = pipeline.auto_reader()
        with contextlib.suppress(StreamfoldError):
            probe.feed(b"".join(self._prefix))
            probe.close()
        told = probe.provider_name
        if told == "auto" or _same_format(pipeline, told):
            return ""
        return self._hint(told, pipeline)

    def _hint(self, detected: str, pipeline: Pipeline) -> str:
        self.told = detected
        name = pipeline.provider.name
        return (
            f"{MISREAD_HINT}{detected!r}: is provider={name!r} right? "
            f"provider={detected!r} or 'auto' reads it)"
        )

    def hinted(self, exc: E, pipeline: Pipeline) -> E:
        """``exc`` with the misread hint (when the first bytes tell another provider): at the
        end of its message, and as ``hint`` and ``detected_provider``."""
        hint = self.misread_hint(pipeline)
        if hint:
            add_hint(exc, hint, self.told)
        return exc

    def not_a_stream(self, pipeline: Pipeline) -> ProtocolError | None:
        """For input that ended without one frame: a ``ProtocolError`` when it does not begin
        as its framing does (a proxy's HTML error page, another provider's format), rather
        than a stream cut short; ``None`` when it may be a stream cut before its first frame
        (no byte, blanks, comments, a field begun)."""
        if pipeline.frames_seen or pipeline.dropped_partial or pipeline.pending is not None:
            return None
        head = self._body_head()
        jsonl = isinstance(pipeline.decoder, JsonLinesDecoder)
        starts = (b"{", b"[") if jsonl else (b"data", b"event", b"id", b"retry", b":")
        if not head or head.startswith(starts) or any(s.startswith(head) for s in starts):
            return None
        name = pipeline.provider_name
        misread = self.misread_hint(pipeline)
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
            f"{pipeline.bytes_seen} bytes and not one frame, beginning {head[:40]!r}{hint}",
            provider=name,
            position=0,
        )
        return add_hint(error, misread, self.told) if misread else error

    def incomplete_error(self, pipeline: Pipeline) -> StreamfoldError:
        """The error of input that ended before the provider's terminal event: a stream cut
        short, or (``not_a_stream``) no stream at all."""
        not_a_stream = self.not_a_stream(pipeline)
        if not_a_stream is not None:
            return not_a_stream
        name = pipeline.provider_name
        misread = self.misread_hint(pipeline)
        message = (
            f"{name}: the stream ended after {pipeline.bytes_seen} bytes without the "
            f"provider's terminal event; the answer may be cut short{misread}"
        )
        if pipeline.dropped_partial:
            dropped = (
                "a last line without its newline, not JSON, was discarded at the end of input"
                if isinstance(pipeline.decoder, JsonLinesDecoder)
                else "an event not terminated by a blank line was discarded at the end of "
                "input, as the SSE standard requires"
            )
            message = f"{message} ({dropped})"
        error = IncompleteStreamError(message, provider=name, position=pipeline.bytes_seen)
        if misread:
            error.hint, error.detected_provider = misread, self.told
        return error


def _same_format(pipeline: Pipeline, name: str) -> bool:
    found, named = provider_class(name), type(pipeline.provider)
    return issubclass(found, named) or issubclass(named, found)  # Mistral reads as OpenAI
