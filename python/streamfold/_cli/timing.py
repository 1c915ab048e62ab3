"""Arrival times of a stream: recording them, saving them, and reading what they say.

A stream that "does not stream" is usually not the provider's fault: something on the path
(a buffering reverse proxy, gzip on the event stream, a serverless platform that builds the
whole response) holds the frames and lets them go at once, at the end. A stream that stalls
longer than a gateway's idle timeout gets cut in a way that looks like a model problem. Both
show in the arrival times of the chunks, which is what this module records and analyses.

Recording format (``--save FILE``), JSON lines, UTF-8:

* line 1, the header: ``{"streamfold_recording": 1, "source": "stdin", "live": true,
  "started": "<ISO 8601 UTC>"}`` (``streamfold_recording`` is the format version; other keys
  are informative);
* one line per chunk read: ``{"t": <seconds since reading started>, "b64": "<base64 bytes>"}``;
* optionally a last line ``{"t": <seconds>, "end": true}``: when end of input was seen.

A file is recognised as a recording when its first line is a JSON object with the
``streamfold_recording`` key, so ``streamfold inspect FILE`` reads both plain streams and
recordings.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import math
import os
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import IO, Any

__all__ = [
    "BURST_MIN_EVENTS",
    "BURST_MIN_WAIT_S",
    "IDLE_TIMEOUT_S",
    "RECORDING_KEY",
    "Arrival",
    "Diagnosis",
    "Recording",
    "RecordingError",
    "RecordingWriter",
    "TimingReport",
    "analyze",
    "is_recording",
    "parse_recording",
    "read_live",
    "sparkline",
]

#: Header key (and format version) of a recording.
RECORDING_KEY = "streamfold_recording"
RECORDING_VERSION = 1

#: A typical idle timeout of a gateway or load balancer in front of a streaming service.
IDLE_TIMEOUT_S = 30.0
#: Shorter streams are too short to call a burst.
BURST_MIN_EVENTS = 8
#: A burst only counts when the client waited at least this long for it.
BURST_MIN_WAIT_S = 1.0
#: The share of events that must arrive in the final burst.
BURST_SHARE = 0.9
#: The burst must be this short: faster than any model generates, a buffer being flushed.
BURST_MAX_SPAN_S = 0.5
#: Events this close together belong to the same flush.
_BURST_JOIN_S = 0.05

_SPARK_LEVELS = "▁▂▃▄▅▆▇█"
_SPARK_EMPTY = "·"
_READ_SIZE = 65536


class RecordingError(ValueError):
    """A file looked like a recording but one of its lines is not a valid record."""


@dataclass(frozen=True, slots=True)
class Arrival:
    """One chunk as it was read: ``t`` seconds after reading started."""

    t: float
    data: bytes


@dataclass(slots=True)
class Recording:
    """The chunks of a stream with their arrival times."""

    arrivals: list[Arrival]
    #: When end of input was seen (``None`` when unknown).
    end: float | None = None
    header: dict[str, Any] = field(default_factory=dict)

    @property
    def live(self) -> bool:
        """The times are real arrival times, not a file read at once."""
        return bool(self.header.get("live", True))

    @property
    def data(self) -> bytes:
        return b"".join(a.data for a in self.arrivals)


def is_recording(data: bytes) -> bool:
    """Whether ``data`` starts with a recording header line."""
    head = data.lstrip(b" \t\r\n\xef\xbb\xbf")
    if not head.startswith(b"{"):
        return False
    first = head.split(b"\n", 1)[0]
    try:
        value = json.loads(first)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and RECORDING_KEY in value


def parse_recording(data: bytes) -> Recording:
    """Read a recording made by :class:`RecordingWriter` (see the module docstring)."""
    lines = data.lstrip(b"\xef\xbb\xbf").splitlines()
    records = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]
    if not records:
        raise RecordingError("empty recording")
    header = _json_line(records[0][1], records[0][0])
    if not isinstance(header, dict) or RECORDING_KEY not in header:
        raise RecordingError(f"line 1: not a recording header (no {RECORDING_KEY!r} key)")
    version = header[RECORDING_KEY]
    if version != RECORDING_VERSION:
        raise RecordingError(f"line 1: unsupported recording version {version!r}")
    arrivals: list[Arrival] = []
    end: float | None = None
    for number, line in records[1:]:
        record = _json_line(line, number)
        if not isinstance(record, dict):
            raise RecordingError(f"line {number}: expected a JSON object")
        t = _seconds(record.get("t"))
        if t is None:
            raise RecordingError(f"line {number}: 't' must be a number of seconds")
        if end is not None:
            raise RecordingError(f"line {number}: a record after the end record")
        if record.get("end") is True:
            end = t
            continue
        b64 = record.get("b64")
        if not isinstance(b64, str):
            raise RecordingError(f"line {number}: 'b64' must be a base64 string")
        try:
            chunk = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            raise RecordingError(f"line {number}: 'b64' is not valid base64") from None
        if arrivals and t < arrivals[-1].t:
            raise RecordingError(f"line {number}: times must not go backwards")
        arrivals.append(Arrival(t, chunk))
    return Recording(arrivals, end, header)


def _seconds(value: Any) -> float | None:
    """A record's ``t`` as a finite float, or None (not a number; an integer too large for a
    float, which ``float()`` refuses with OverflowError)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        seconds = float(value)
    except OverflowError:
        return None
    return seconds if math.isfinite(seconds) else None


def _json_line(line: bytes, number: int) -> Any:
    try:
        return json.loads(line)
    except ValueError as exc:
        raise RecordingError(f"line {number}: not JSON ({exc})") from None
    except RecursionError:
        # json.loads recurses per nesting level: 100,000 brackets exhaust the stack.
        raise RecordingError(f"line {number}: JSON nested too deeply to read") from None


class RecordingWriter:
    """Writes a recording as the chunks arrive, so an interrupted run keeps what it read."""

    def __init__(self, fp: IO[bytes], *, source: str, live: bool = True) -> None:
        self._fp = fp
        header = {
            RECORDING_KEY: RECORDING_VERSION,
            "source": source,
            "live": live,
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        self._write(header)

    def add(self, arrival: Arrival) -> None:
        record = {"t": round(arrival.t, 6), "b64": base64.b64encode(arrival.data).decode("ascii")}
        self._write(record)

    def end(self, t: float) -> None:
        self._write({"t": round(t, 6), "end": True})

    def _write(self, record: dict[str, Any]) -> None:
        self._fp.write(json.dumps(record, separators=(",", ":")).encode("utf-8") + b"\n")
        self._fp.flush()


def read_live(
    fd: int, *, clock: Callable[[], float] = time.monotonic, start: float | None = None
) -> Iterator[Arrival]:
    """Read ``fd`` until end of input, timing every chunk as the OS hands it over.

    ``os.read`` returns as soon as any bytes are available, so each chunk's time is its
    arrival time, not the time a buffered reader filled its buffer. The last item has empty
    ``data``: end of input, and when it was seen.
    """
    t0 = clock() if start is None else start
    while True:
        data = os.read(fd, _READ_SIZE)
        yield Arrival(clock() - t0, data)
        if not data:
            return


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """A finding about the transport: ``kind`` is ``burst``, ``stall`` or ``not_live``."""

    kind: str
    message: str


@dataclass(slots=True)
class TimingReport:
    """What the arrival times say. Times are seconds since reading started."""

    chunks: int
    bytes: int
    events: int
    tokens: int
    duration: float
    time_to_first_byte: float | None
    time_to_first_event: float | None
    time_to_first_token: float | None
    gap_median: float | None
    gap_p99: float | None
    gap_max: float | None
    events_per_second: float | None
    tokens_per_second: float | None
    #: The longest time without a byte (start -> first chunk, between chunks, last -> end).
    longest_idle: float
    longest_idle_at: float
    sparkline: str
    diagnoses: list[Diagnosis]

    def to_json(self) -> dict[str, Any]:
        return {
            "chunks": self.chunks,
            "bytes": self.bytes,
            "events": self.events,
            "tokens": self.tokens,
            "duration": self.duration,
            "time_to_first_byte": self.time_to_first_byte,
            "time_to_first_event": self.time_to_first_event,
            "time_to_first_token": self.time_to_first_token,
            "gap_median": self.gap_median,
            "gap_p99": self.gap_p99,
            "gap_max": self.gap_max,
            "events_per_second": self.events_per_second,
            "tokens_per_second": self.tokens_per_second,
            "longest_idle": self.longest_idle,
            "longest_idle_at": self.longest_idle_at,
            "sparkline": self.sparkline,
            "diagnoses": [{"kind": d.kind, "message": d.message} for d in self.diagnoses],
        }


def analyze(
    chunk_times: Sequence[float],
    chunk_sizes: Sequence[int],
    event_times: Sequence[float],
    token_times: Sequence[float],
    *,
    end: float | None = None,
    complete: bool = True,
    width: int = 48,
) -> TimingReport:
    """Analyse arrival times: chunks as read, and the time each event/token became available.

    ``event_times`` and ``token_times`` are the arrival times of the chunks that completed each
    event (resp. text delta), in order. ``complete`` says whether the stream reached its
    terminal event; it only changes the wording of a stall that ended the stream.
    """
    last_chunk = chunk_times[-1] if chunk_times else 0.0
    duration = max(end if end is not None else last_chunk, last_chunk)
    gaps = [b - a for a, b in itertools.pairwise(event_times)]
    idle, idle_at = _longest_idle(chunk_times, duration)
    report = TimingReport(
        chunks=len(chunk_times),
        bytes=sum(chunk_sizes),
        events=len(event_times),
        tokens=len(token_times),
        duration=duration,
        time_to_first_byte=chunk_times[0] if chunk_times else None,
        time_to_first_event=event_times[0] if event_times else None,
        time_to_first_token=token_times[0] if token_times else None,
        gap_median=statistics.median(gaps) if gaps else None,
        gap_p99=_percentile(gaps, 0.99) if gaps else None,
        gap_max=max(gaps) if gaps else None,
        events_per_second=_rate(event_times),
        tokens_per_second=_rate(token_times),
        longest_idle=idle,
        longest_idle_at=idle_at,
        sparkline=sparkline(event_times or chunk_times, duration, width=width),
        diagnoses=[],
    )
    report.diagnoses = _diagnose(report, event_times, chunk_times, complete=complete)
    return report


def _longest_idle(chunk_times: Sequence[float], duration: float) -> tuple[float, float]:
    points = [0.0, *chunk_times, duration]
    best, at = 0.0, 0.0
    for a, b in itertools.pairwise(points):
        if b - a > best:
            best, at = b - a, a
    return best, at


def _percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile: an observed value, never an interpolation."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


def _rate(times: Sequence[float]) -> float | None:
    """Items per second between the first and the last item; ``None`` when they share a time."""
    if len(times) < 2 or times[-1] <= times[0]:
        return None
    return (len(times) - 1) / (times[-1] - times[0])


def sparkline(times: Sequence[float], duration: float, *, width: int = 48) -> str:
    """Arrivals per time slice over ``[0, duration]``; ``·`` marks a slice with none."""
    if not times:
        return ""
    if duration <= 0:
        return _SPARK_LEVELS[-1]
    counts = [0] * width
    for t in times:
        counts[min(width - 1, max(0, int(t / duration * width)))] += 1
    peak = max(counts)
    return "".join(
        _SPARK_LEVELS[max(0, math.ceil(c / peak * len(_SPARK_LEVELS)) - 1)] if c else _SPARK_EMPTY
        for c in counts
    )


def _diagnose(
    report: TimingReport,
    event_times: Sequence[float],
    chunk_times: Sequence[float],
    *,
    complete: bool,
) -> list[Diagnosis]:
    found: list[Diagnosis] = []
    if chunk_times and report.duration < 0.05 and len(chunk_times) <= 2:
        found.append(
            Diagnosis(
                "not_live",
                f"everything arrived at once, {_ms(report.duration)} after reading started: "
                "a saved file rather than a live stream? Pipe the live response "
                "(`curl -N ... | streamfold inspect - --timing`) to see its timing",
            )
        )
        return found
    burst = _burst(event_times)
    if burst is not None:
        wait, span, count = burst
        found.append(
            Diagnosis(
                "burst",
                f"nothing for {wait:.2f} s, then {count} of {len(event_times)} events arrived "
                f"within {_ms(span)} at the end: the stream was buffered on its way to you, "
                "by a buffering reverse proxy (turn buffering off for this route, e.g. nginx "
                "`proxy_buffering off` or `X-Accel-Buffering: no`), by gzip/compression on the "
                "event stream, or by a serverless platform that builds the whole response "
                "first. Bisect the path: run `curl -N` against the provider from the host of "
                "your service; if frames arrive one by one there, the buffering is in your stack",
            )
        )
    if report.longest_idle >= IDLE_TIMEOUT_S:
        start = report.longest_idle_at
        trailing = math.isclose(start + report.longest_idle, report.duration) and bool(chunk_times)
        where = (
            "before the first byte"
            if not chunk_times or start == 0.0
            else f"from {start:.2f} s to {start + report.longest_idle:.2f} s"
        )
        message = (
            f"stalled: no bytes for {report.longest_idle:.1f} s ({where}), longer than a "
            f"typical {IDLE_TIMEOUT_S:.0f} s idle timeout of a gateway or load balancer"
        )
        if trailing and not complete:
            message += (
                ", and then the connection closed without the terminal event: an idle "
                "timeout on the path cut the stream, which looks like a model problem but is not"
            )
        else:
            message += (
                ": a proxy on the path may cut such a connection; raise its idle timeout or "
                "have the server send keep-alives (SSE comments such as `: ping`)"
            )
        found.append(Diagnosis("stall", message))
    return found


def _burst(event_times: Sequence[float]) -> tuple[float, float, int] | None:
    """``(wait, span, count)`` when most events arrived in one short burst after a long wait."""
    n = len(event_times)
    if n < BURST_MIN_EVENTS:
        return None
    i = n - math.ceil(BURST_SHARE * n)
    # Events just before the candidate belong to the same flush: count them in.
    while i > 0 and event_times[i] - event_times[i - 1] <= _BURST_JOIN_S:
        i -= 1
    start = event_times[i]
    span = event_times[-1] - start
    wait = start - (event_times[i - 1] if i > 0 else 0.0)
    if wait < BURST_MIN_WAIT_S or span > BURST_MAX_SPAN_S or span > 0.1 * wait:
        return None
    return wait, span, n - i


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"
