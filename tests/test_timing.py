"""Arrival-time analysis and the recording format (streamfold._cli.timing)."""

from __future__ import annotations

import io
import os

import pytest

from streamfold._cli.timing import (
    BURST_MIN_EVENTS,
    IDLE_TIMEOUT_S,
    Arrival,
    RecordingError,
    RecordingWriter,
    analyze,
    is_recording,
    parse_recording,
    read_live,
    sparkline,
)


def kinds(report: object) -> list[str]:
    return [d.kind for d in getattr(report, "diagnoses")]  # noqa: B009


def steady(n: int, start: float, step: float) -> list[float]:
    return [round(start + i * step, 6) for i in range(n)]


def test_burst_at_the_end_is_diagnosed() -> None:
    events = [6.8 + i * 0.0005 for i in range(20)]
    report = analyze(events, [100] * 20, events, events[2:], end=6.82)
    assert kinds(report) == ["burst"]
    message = report.diagnoses[0].message
    assert "nothing for 6.80 s" in message
    assert "20 of 20 events" in message
    assert "proxy" in message and "compression" in message and "curl -N" in message


def test_burst_after_an_early_first_chunk_counts_the_wait_from_it() -> None:
    # A proxy flushed the first small write at once, then held the rest.
    events = [0.2] + [5.0 + i * 0.001 for i in range(19)]
    report = analyze(events, [50] * 20, events, events[1:])
    assert kinds(report) == ["burst"]
    assert "nothing for 4.80 s" in report.diagnoses[0].message
    assert "19 of 20 events" in report.diagnoses[0].message


def test_steady_stream_has_no_diagnosis() -> None:
    events = steady(40, 0.4, 0.05)
    report = analyze(events, [80] * 40, events, events[1:], end=events[-1])
    assert report.diagnoses == []
    assert report.gap_median == pytest.approx(0.05)
    assert report.gap_max == pytest.approx(0.05)
    assert report.events_per_second == pytest.approx(20.0)
    assert report.tokens_per_second == pytest.approx(20.0)
    assert report.time_to_first_byte == pytest.approx(0.4)
    assert report.time_to_first_token == pytest.approx(0.45)


def test_slow_first_token_then_steady_tokens_is_not_a_burst() -> None:
    # A reasoning model thinks for 8 s, then streams for 2 s: no buffering.
    events = steady(40, 8.0, 0.05)
    assert analyze(events, [80] * 40, events, events).diagnoses == []


def test_short_streams_are_never_called_a_burst() -> None:
    events = [7.0 + i * 0.001 for i in range(BURST_MIN_EVENTS - 1)]
    assert analyze(events, [10] * len(events), events, events).diagnoses == []


def test_stall_longer_than_an_idle_timeout() -> None:
    chunks = [0.3, 0.4, 0.5, 0.5 + IDLE_TIMEOUT_S + 12, 43.0]
    report = analyze(chunks, [10] * 5, chunks, chunks)
    assert kinds(report) == ["stall"]
    assert report.longest_idle == pytest.approx(IDLE_TIMEOUT_S + 12)
    assert report.longest_idle_at == pytest.approx(0.5)
    assert "from 0.50 s to 42.50 s" in report.diagnoses[0].message
    assert "keep-alives" in report.diagnoses[0].message


def test_stall_that_ended_the_stream_names_the_idle_timeout_cut() -> None:
    chunks = [0.3, 0.4, 0.5]
    report = analyze(chunks, [10] * 3, chunks, chunks, end=60.5, complete=False)
    assert kinds(report) == ["stall"]
    assert "connection closed without the terminal event" in report.diagnoses[0].message


def test_a_file_read_at_once_is_not_live() -> None:
    report = analyze([0.001], [4000], [0.001] * 12, [0.001] * 10, end=0.001)
    assert kinds(report) == ["not_live"]
    assert report.events_per_second is None


def test_p99_is_an_observed_gap() -> None:
    events = [0.0]
    for i in range(200):
        events.append(events[-1] + (2.0 if i == 100 else 0.01))
    report = analyze(events, [1] * len(events), events, events)
    assert report.gap_max == pytest.approx(2.0)
    assert report.gap_p99 == pytest.approx(0.01)
    assert report.gap_median == pytest.approx(0.01)


def test_sparkline_marks_empty_slices_and_peaks() -> None:
    line = sparkline([0.0, 0.0, 9.99], 10.0, width=10)
    assert len(line) == 10
    assert line[0] == "█"
    assert line[-1] == "▄"
    assert set(line[1:-1]) == {"·"}
    assert sparkline([], 1.0) == ""


def test_recording_round_trip() -> None:
    buf = io.BytesIO()
    writer = RecordingWriter(buf, source="stdin")
    writer.add(Arrival(0.25, b"data: {}\n\n"))
    writer.add(Arrival(1.5, b"\x00\xff binary \xe2\x82"))
    writer.end(1.75)
    data = buf.getvalue()
    assert is_recording(data)
    recording = parse_recording(data)
    assert recording.arrivals == [
        Arrival(0.25, b"data: {}\n\n"),
        Arrival(1.5, b"\x00\xff binary \xe2\x82"),
    ]
    assert recording.end == 1.75
    assert recording.live
    assert recording.header["source"] == "stdin"


def test_plain_streams_are_not_recordings() -> None:
    assert not is_recording(b'data: {"streamfold_recording": 1}\n\n')
    assert not is_recording(b'{"event_type":"stream-start"}\n')
    assert not is_recording(b"")
    assert is_recording(b'\n{"x": 0, "streamfold_recording": 1}\n')


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"streamfold_recording": 1}\n{"t": 0.1}\n', "line 2: 'b64'"),
        (b'{"streamfold_recording": 1}\n{"t": "x", "b64": ""}\n', "line 2: 't'"),
        (b'{"streamfold_recording": 1}\n{"t": 0.1, "b64": "!!"}\n', "not valid base64"),
        (b'{"streamfold_recording": 1}\nnot json\n', "line 2: not JSON"),
        (b'{"streamfold_recording": 2}\n', "unsupported recording version"),
        (
            b'{"streamfold_recording": 1}\n{"t": 2, "b64": ""}\n{"t": 1, "b64": ""}\n',
            "backwards",
        ),
        (b'{"streamfold_recording": 1}\n{"t": 1, "end": true}\n{"t": 2, "b64": ""}\n', "after"),
    ],
)
def test_broken_recordings_say_which_line(body: bytes, message: str) -> None:
    with pytest.raises(RecordingError, match=message):
        parse_recording(body)


def test_read_live_times_each_chunk_and_reports_the_end() -> None:
    read_fd, write_fd = os.pipe()
    ticks = iter([10.0, 10.5, 11.25, 12.0])
    os.write(write_fd, b"first")
    os.close(write_fd)
    arrivals = list(read_live(read_fd, clock=lambda: next(ticks)))
    os.close(read_fd)
    assert arrivals == [Arrival(0.5, b"first"), Arrival(1.25, b"")]
