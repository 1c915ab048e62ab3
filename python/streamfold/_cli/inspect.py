"""``streamfold inspect``: one pass over a stream gives the timeline, the fold and the timing.

The chunks go through one :class:`~streamfold.Pipeline`; every event it returns goes
both to a :class:`~streamfold.Folder` and to the compact :class:`Timeline`, stamped with
the arrival time of the chunk that completed it. What ended the stream decides the outcome
(and the exit code, see :class:`Outcome`).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from .._engine.folder import Folder
from .._engine.pipeline import Pipeline
from .._errors import IncompleteStreamError, ProtocolError, StreamError, StreamfoldError
from .._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    Event,
    MessageStart,
    Notice,
    SignatureDelta,
    Unknown,
    UsageUpdate,
)
from .._message import Message
from .._types import ProviderName
from .timing import Arrival, Recording, TimingReport, analyze

__all__ = [
    "BlockSummary",
    "Entry",
    "Inspection",
    "Outcome",
    "Timeline",
    "inspect_stream",
]

#: Kinds of delta that count as tokens for the timing (text-like output, not tool JSON).
_TOKEN_KINDS = frozenset({"text", "reasoning", "refusal", "tool_plan"})
_PREVIEW_CHARS = 160


class Outcome(enum.Enum):
    """How the stream ended, with the exit code ``streamfold inspect`` returns for it."""

    COMPLETE = ("complete", 0)
    STREAM_ERROR = ("stream_error", 1)
    BAD_INPUT = ("bad_input", 2)
    INCOMPLETE = ("incomplete", 3)
    PROTOCOL_ERROR = ("protocol_error", 4)

    @property
    def label(self) -> str:
        return self.value[0]

    @property
    def exit_code(self) -> int:
        return self.value[1]


@dataclass(slots=True)
class BlockSummary:
    """One block of the timeline: its deltas collapsed into counts and a preview."""

    choice: int
    index: int
    kind: str
    id: str | None = None
    name: str | None = None
    deltas: int = 0
    chars: int = 0
    preview: str = ""
    signature: bool = False
    #: The block arrived whole (no deltas follow).
    whole: bool = False
    closed: bool = False
    data: Any = None

    def add_text(self, text: str) -> None:
        self.chars += len(text)
        if len(self.preview) < _PREVIEW_CHARS:
            self.preview += text[: _PREVIEW_CHARS - len(self.preview)]


@dataclass(slots=True)
class Entry:
    """One line of the timeline: a block, or an event (``repeat`` collapses repeated ones)."""

    seq: int
    t: float | None
    event: Event
    block: BlockSummary | None = None
    repeat: int = 1


class Timeline:
    """Events as lines: one per block (not per delta), unless ``every_event``."""

    #: Event types that collapse into the previous line of the same type.
    _COLLAPSE = ("usage", "ping")

    def __init__(self, *, every_event: bool = False) -> None:
        self.every_event = every_event
        self.entries: list[Entry] = []
        self._open: dict[tuple[int, int], BlockSummary] = {}

    def add(self, seq: int, t: float | None, event: Event) -> None:
        if isinstance(event, BlockStart):
            block = BlockSummary(
                choice=event.choice,
                index=event.index,
                kind=event.kind,
                id=event.id,
                name=event.name,
                whole=event.complete,
                data=event.data if event.data is not None else event.arguments,
            )
            if event.text:
                block.add_text(event.text)
            self._open[(event.choice, event.index)] = block
            self.entries.append(Entry(seq, t, event, block))
            return
        if isinstance(event, (BlockDelta, SignatureDelta, BlockEnd)):
            found = self._open.get((event.choice, event.index))
            if found is None:
                # The provider checks this; a block without a start still gets a line.
                kind = getattr(event, "kind", "other")
                found = BlockSummary(choice=event.choice, index=event.index, kind=kind)
                self._open[(event.choice, event.index)] = found
                self.entries.append(Entry(seq, t, event, found))
            block = found
            if isinstance(event, BlockDelta):
                block.deltas += 1
                block.add_text(event.text)
            elif isinstance(event, SignatureDelta):
                block.signature = True
            else:
                block.closed = True
            if self.every_event:
                self.entries.append(Entry(seq, t, event, block))
            return
        if not self.every_event and isinstance(event, Notice) and event.kind == "provider_detected":
            return  # the header shows the detected provider
        key = _collapse_key(event)
        last = self.entries[-1] if self.entries else None
        if (
            not self.every_event
            and key is not None
            and last is not None
            and _collapse_key(last.event) == key
        ):
            last.repeat += 1
            last.event = event
            return
        self.entries.append(Entry(seq, t, event))


def _collapse_key(event: Event) -> str | None:
    if isinstance(event, UsageUpdate):
        return "usage"
    if isinstance(event, Notice) and event.kind == "ping":
        return "ping"
    return None


@dataclass(slots=True)
class Inspection:
    """Everything ``inspect`` found in one pass."""

    source: str
    requested_provider: str
    provider: str
    outcome: Outcome
    message: Message | None
    timeline: Timeline
    #: The one-line explanation when the outcome is not ``COMPLETE``.
    explanation: str | None = None
    error: StreamfoldError | None = None
    warnings: list[str] = field(default_factory=list)
    bytes_seen: int = 0
    frames_seen: int = 0
    events_seen: int = 0
    dropped_partial: bool = False
    timing: TimingReport | None = None
    #: Why no timing report could be made although one was asked for.
    timing_note: str | None = None

    @property
    def detected(self) -> bool:
        return self.requested_provider == "auto"

    @property
    def exit_code(self) -> int:
        return self.outcome.exit_code


def inspect_stream(
    recording: Recording,
    *,
    source: str,
    provider: str = "auto",
    strict: bool = False,
    every_event: bool = False,
    timing: bool = False,
) -> Inspection:
    """Run the stream through a Pipeline and a Folder once; classify how it ended."""
    data = recording.data
    bad = _not_a_stream(data)
    if bad is not None:
        return _bad_input(source, provider, bad, Timeline(every_event=every_event))
    run = _Run(provider, strict=strict, every_event=every_event, stamp=recording.live)
    run.feed_all(recording.arrivals)
    inspection = run.finish(source)
    if timing:
        _add_timing(inspection, recording, run)
    if provider != "auto" and _looks_like_wrong_provider(inspection, run):
        return _wrong_provider(inspection, recording, strict=strict)
    if (
        inspection.frames_seen == 0
        and inspection.outcome is not Outcome.COMPLETE
        and not _too_large(inspection.error)
    ):
        inspection.outcome = Outcome.BAD_INPUT
        inspection.explanation = (
            f"not a stream: no server-sent event or JSON line in {len(data)} bytes "
            f"(it starts with {_head(data)})"
        )
    return inspection


class _Run:
    """The single pass: pipeline -> (folder, timeline), with arrival times per event."""

    def __init__(
        self, provider: str, *, strict: bool, every_event: bool, stamp: bool = False
    ) -> None:
        self.requested = provider
        #: Show arrival times on the timeline (only when they are real).
        self.stamp = stamp
        # A name from the command line, checked by the Pipeline as any ``provider=``.
        self.pipeline = Pipeline(cast("ProviderName", provider), strict=strict)
        self.folder = Folder(cast("ProviderName", self.pipeline.provider.name), strict=strict)
        #: An error raised by the fold itself (strict mode), not by the pipeline.
        self.fold_error: StreamfoldError | None = None
        self.timeline = Timeline(every_event=every_event)
        self.event_times: list[float] = []
        self.token_times: list[float] = []
        self.recognized = 0
        self.unknown: dict[str, int] = {}
        self.notices: list[str] = []
        self.seq = 0

    def feed_all(self, arrivals: Iterable[Arrival]) -> None:
        pipeline = self.pipeline
        last_t = 0.0
        try:
            for arrival in arrivals:
                last_t = arrival.t
                self._take(pipeline.feed(arrival.data), arrival.t)
                if pipeline.pending is not None:
                    return
            self._take(pipeline.close(), last_t)
        except StreamfoldError as exc:
            self.fold_error = exc

    def _take(self, events: Sequence[Event], t: float) -> None:
        folder = self.folder
        if folder.provider == "auto" and events:
            # Name the detected provider in the fold's warnings, not "auto".
            folder.provider = self.pipeline.provider.concrete_name
        for event in events:
            self.timeline.add(self.seq, t if self.stamp else None, event)
            self.seq += 1
            self.event_times.append(t)
            if isinstance(event, BlockDelta) and event.kind in _TOKEN_KINDS and event.text:
                self.token_times.append(t)
            if isinstance(event, Unknown):
                # Any JSON value a hostile stream put there (a dict is no key): counted by text.
                kind = event.event_type
                name = kind if isinstance(kind, str) and kind else repr(kind) if kind else "?"
                self.unknown[name] = self.unknown.get(name, 0) + 1
            elif isinstance(event, Notice):
                if event.kind == "warning" and event.message:
                    self.notices.append(str(event.message))
            elif not isinstance(event, MessageStart):
                self.recognized += 1
            self.folder.add(event)

    def finish(self, source: str) -> Inspection:
        pipeline, folder = self.pipeline, self.folder
        name = pipeline.provider.concrete_name
        folder.provider = name
        error = self.fold_error or pipeline.pending
        pipeline.pending = None
        if error is None and not folder.complete:
            error = pipeline.incomplete_error()
        if error is None:
            message = folder.result()
        else:
            folder.annotate_error(error)
            partial = getattr(error, "partial", None)
            message = partial if isinstance(partial, Message) else folder.partial()
        outcome, explanation = _classify(error, name, self, message)
        inspection = Inspection(
            source=source,
            requested_provider=self.requested,
            provider=name,
            outcome=outcome,
            message=message,
            timeline=self.timeline,
            explanation=explanation,
            error=error,
            bytes_seen=pipeline.bytes_seen,
            frames_seen=pipeline.frames_seen,
            events_seen=self.seq,
            dropped_partial=pipeline.dropped_partial,
        )
        inspection.warnings = self._warnings(message, inspection.dropped_partial)
        return inspection

    def _warnings(self, message: Message | None, dropped_partial: bool) -> list[str]:
        found: list[str] = []
        for name, count in self.unknown.items():
            times = f" ({count} times)" if count > 1 else ""
            found.append(f"unknown event {name!r}{times}: passed through as an Unknown event")
        found.extend(self.notices)
        if message is not None:
            found.extend(str(w) for w in message.warnings)
        if dropped_partial:
            found.append(
                "the input ended inside an event (no blank line after it): "
                "that partial event was dropped"
            )
        return list(dict.fromkeys(found))


def _classify(
    error: StreamfoldError | None, provider: str, run: _Run, message: Message | None
) -> tuple[Outcome, str | None]:
    if error is None:
        return Outcome.COMPLETE, None
    produced = _produced(message)
    if isinstance(error, StreamError):
        code = f" {error.code}" if error.code not in (None, "") else ""
        return (
            Outcome.STREAM_ERROR,
            f"{provider}: the provider reported an error{code} inside the stream: "
            f"{_one_line(error.message, error)} (after {produced}; HTTP status was already 200)",
        )
    if isinstance(error, IncompleteStreamError):
        return (
            Outcome.INCOMPLETE,
            f"{provider}: the stream ended without its terminal event after {produced}: "
            "the connection was cut or the input truncated; this is not a short answer",
        )
    if isinstance(error, ProtocolError):
        if _too_large(error):
            # An event (or JSON line) over the size limit: a stream, whatever its provider.
            return Outcome.PROTOCOL_ERROR, _protocol_explanation(error)
        if provider == "auto":
            why = _one_line(str(error), error).removeprefix("auto: ")
            why = why.replace("pass provider= explicitly", "pass --provider NAME")
            return Outcome.BAD_INPUT, f"cannot detect the provider: {why}"
        if run.recognized == 0 and run.requested != "auto":
            return Outcome.BAD_INPUT, f"not a {provider} stream: {_one_line(str(error), error)}"
        return Outcome.PROTOCOL_ERROR, _protocol_explanation(error)
    return Outcome.BAD_INPUT, f"{type(error).__name__}: {_one_line(str(error), error)}"


def _protocol_explanation(error: StreamfoldError) -> str:
    return f"protocol error: {_one_line(str(error), error).removeprefix('auto: ')}"


def _too_large(error: StreamfoldError | None) -> bool:
    """An event or JSON line over ``max_event_bytes``: the input is a stream (its framing was
    read), even when the oversized frame was its first."""
    return isinstance(error, ProtocolError) and error.limit is not None


def _produced(message: Message | None) -> str:
    if message is None:
        return "nothing"
    parts = []
    if message.text:
        parts.append(f"{len(message.text)} chars of text")
    if message.reasoning:
        parts.append(f"{len(message.reasoning)} chars of reasoning")
    if message.tool_calls:
        parts.append(f"{len(message.tool_calls)} tool call(s)")
    return ", ".join(parts) if parts else "no content"


def _one_line(text: str, error: BaseException | None = None) -> str:
    """``text`` on one line, without the library's advice on a misread stream (the command
    gives its own, ``--provider``)."""
    hint = getattr(error, "hint", None)
    if hint:
        text = text.replace(hint, "")
    return " ".join(text.split())


def _add_timing(inspection: Inspection, recording: Recording, run: _Run) -> None:
    if not recording.live:
        inspection.timing_note = (
            f"no arrival times: {inspection.source} is a plain file, read at once. Pipe a live "
            "response (`curl -N ... | streamfold inspect - --timing`) or inspect a recording "
            "made with --save"
        )
        return
    inspection.timing = analyze(
        [a.t for a in recording.arrivals],
        [len(a.data) for a in recording.arrivals],
        run.event_times,
        run.token_times,
        end=recording.end,
        complete=inspection.outcome is Outcome.COMPLETE,
    )


def _not_a_stream(data: bytes) -> str | None:
    if not data.strip():
        return "empty input: nothing to inspect" if not data else "only whitespace: no stream"
    if data[:2] == b"\x1f\x8b":
        return (
            "the input is gzip-compressed: decompress it first (`curl --compressed`, `gunzip`); "
            "compression on an event stream also delays every event"
        )
    return _error_body(data)


def _error_body(data: bytes) -> str | None:
    """A saved HTTP error response (one JSON object with an error) is not a stream."""
    if not data.lstrip().startswith(b"{") or len(data) > 1 << 20:
        return None
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):  # nested past the stack: no error body either
        return None
    if not isinstance(body, dict) or "event_type" in body:
        return None
    error = body.get("error", body.get("detail"))
    if error is None:
        return None
    message = error.get("message", error) if isinstance(error, dict) else error
    return (
        "this is an error response body, not a stream: "
        f"{_one_line(str(message))[:200]} (the request failed before streaming began)"
    )


def _bad_input(source: str, provider: str, why: str, timeline: Timeline) -> Inspection:
    return Inspection(
        source=source,
        requested_provider=provider,
        provider=provider,
        outcome=Outcome.BAD_INPUT,
        message=None,
        timeline=timeline,
        explanation=why,
    )


def _looks_like_wrong_provider(inspection: Inspection, run: _Run) -> bool:
    if inspection.outcome is Outcome.COMPLETE:
        return False
    if inspection.outcome is Outcome.BAD_INPUT:
        return True
    if getattr(inspection.error, "detected_provider", None) is not None:
        return True  # the fold found the stream is another provider's
    if inspection.frames_seen == 0:
        return False
    # A stream cut right after its start also has nothing recognised; unknown events do not.
    return run.recognized == 0 and bool(run.unknown)


def _wrong_provider(inspection: Inspection, recording: Recording, *, strict: bool) -> Inspection:
    forced = inspection.requested_provider
    guess = _Run("auto", strict=strict, every_event=False)
    try:
        guess.feed_all(recording.arrivals)
        detected = guess.finish(inspection.source)
    except StreamfoldError:
        detected = None
    if detected is not None and detected.provider == forced:
        # Auto-detection agrees with --provider: the stream is broken, not misread.
        if isinstance(inspection.error, ProtocolError):
            inspection.outcome = Outcome.PROTOCOL_ERROR
            inspection.explanation = _protocol_explanation(inspection.error)
        return inspection
    hint = ""
    if detected is not None and detected.provider not in ("auto", forced) and guess.recognized:
        hint = (
            f"; auto-detection says {detected.provider}: "
            f"try --provider {detected.provider} (or --provider auto)"
        )
    why = inspection.explanation or "nothing in it was recognised"
    if inspection.outcome is Outcome.INCOMPLETE:
        # Not a cut connection: the stream is another provider's, so none of its frames
        # could be this provider's terminal event.
        why = f"no {forced} terminal event in its {inspection.frames_seen} frames"
    if why.startswith(f"not a {forced} stream: "):
        why = why[len(f"not a {forced} stream: ") :]
    inspection.outcome = Outcome.BAD_INPUT
    inspection.explanation = f"--provider {forced} does not match this stream ({why}){hint}"
    return inspection


def _head(data: bytes) -> str:
    text = data.lstrip()[:40].decode("utf-8", "replace")
    return repr(text + ("…" if len(data.lstrip()) > 40 else ""))
