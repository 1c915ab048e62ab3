"""The native client under load (issue 23): client CPU per event of ``sf.Client`` against
httpx + httpx-sse + ``json.loads`` + a minimal fold and uvloop + aiohttp + orjson + a minimal
fold; memory per open stream against httpx; latency from the server's write to the event in
Python against aiohttp. The server runs in its own process (``transport.py server``), writing
each event on its own; each measurement is a fresh client process. See ``transport.py``.

CPU is measured twice: paced, each stream's events 50 ms apart as a model server flushes its
tokens, so that every event is its own read (the workload services run, and the goals'); and
flooded, every event written as fast as the server can, where reads coalesce under load.
Paced, ``floor`` is what the event loop alone costs a client (``transport.py``): the least any
client on it can spend per event. Short streams (5 and 20 events, paced) are measured per
stream, since their connection and set-up weigh as much as their events."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import peers
from harness import QUICK, record, skip_row

HERE = Path(__file__).resolve().parent
STREAMS = 100 if QUICK else 1_000
EVENTS = 20 if QUICK else 100
OPEN_STREAMS = 1_000 if QUICK else 10_000
ROUNDS = 1 if QUICK else 3
#: Seconds between a paced stream's events.
INTERVAL = 0.05
PACED_GROUP = (
    f"transport | paced: {STREAMS:,} concurrent streams x {EVENTS} events, one every "
    f"{INTERVAL * 1000:.0f} ms (one event per read), CPU per event"
)
CPU_GROUP = (
    f"transport | flood: {STREAMS:,} concurrent streams x {EVENTS} events, written as fast "
    "as the server can (reads coalesce), CPU per event"
)
#: The deltas of the short streams most requests are (a tool call, a classification, a
#: one-line answer): with the role chunk, the finish and ``[DONE]``, 5 and 20 events.
SHORT_DELTAS = (2, 17)


def short_group(deltas: int) -> str:
    return (
        f"transport | short: {STREAMS:,} concurrent streams of {deltas + 3} events, one every "
        f"{INTERVAL * 1000:.0f} ms (one event per read), CPU per stream"
    )


MEMORY_GROUP = f"transport | memory per open stream, {OPEN_STREAMS:,} open"
LATENCY_GROUP = f"transport | server write -> event in Python, {STREAMS:,} streams"
LATENCY_SPREAD_GROUP = (
    f"transport | server write -> event in Python, {STREAMS:,} streams, their writes spread "
    f"over each {INTERVAL * 1000:.0f} ms"
)


def _run(args: list[str], timeout: float = 900.0) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, str(HERE / "transport.py"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"transport.py {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "transport.py"), "server"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the server did not start: {url!r}")
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


def _missing(impl: str) -> str | None:
    needs = {
        "sf.Client": [],
        "sf.Client-afold": [],
        "sf.Client-aevents": [],
        "sf.Client-text": [],
        "sf.Client-uvloop": ["uvloop"],
        "sf.Client-bytes": ["orjson"],
        "httpx-sse": ["httpx", "httpx_sse"],
        "aiohttp": ["aiohttp", "uvloop", "orjson"],
        "httpx": ["httpx"],
        "floor": ["uvloop"],
    }[impl]
    for module in needs:
        missing = peers._module(module)
        if missing:
            return missing
    return None


def _cpu_rows(
    server_url: str, group: str, impls: list[str], interval: float, events: int = EVENTS
) -> None:
    runnable = []
    for impl in impls:
        missing = _missing(impl)
        if missing:
            record(group, impl, skipped=missing, primary=impl.startswith("sf.Client"))
        else:
            runnable.append(impl)
    args = [server_url, str(STREAMS), str(events), str(interval)]
    for _ in range(ROUNDS):
        for impl in runnable:  # interleaved
            result = _run(["cpu", impl, *args])
            record(group, impl, primary=impl == "sf.Client", **result)
            assert result["exact_streams"] == STREAMS, (impl, result)


@pytest.mark.once
def test_cpu_per_event_paced(server_url: str) -> None:
    impls = ["sf.Client", "sf.Client-text", "sf.Client-uvloop", "httpx-sse", "aiohttp", "floor"]
    _cpu_rows(server_url, PACED_GROUP, impls, INTERVAL)


@pytest.mark.once
@pytest.mark.parametrize("deltas", SHORT_DELTAS)
def test_cpu_per_short_stream(server_url: str, deltas: int) -> None:
    # What a stream costs whole, connection and fold set-up included: on streams this short
    # they weigh as much as the events, which the per-event tables above spread thin.
    impls = ["sf.Client", "sf.Client-afold", "httpx-sse", "aiohttp", "floor"]
    _cpu_rows(server_url, short_group(deltas), impls, INTERVAL, events=deltas)


@pytest.mark.once
def test_cpu_per_event_flood(server_url: str) -> None:
    _cpu_rows(server_url, CPU_GROUP, ["sf.Client", "sf.Client-afold", "httpx-sse", "aiohttp"], 0)


@pytest.mark.once
@pytest.mark.parametrize("impl", ["sf.Client", "httpx"])
def test_memory_per_open_stream(server_url: str, impl: str) -> None:
    missing = _missing(impl)
    if missing:
        skip_row(MEMORY_GROUP, impl, missing)
    result = _run(["memory", impl, server_url, str(OPEN_STREAMS)])
    record(MEMORY_GROUP, impl, primary=impl == "sf.Client", **result)
    assert result["open"] == OPEN_STREAMS


@pytest.mark.once
@pytest.mark.parametrize("spread", [False, True], ids=["burst", "spread"])
@pytest.mark.parametrize("impl", ["sf.Client", "sf.Client-aevents", "sf.Client-bytes", "aiohttp"])
def test_latency(server_url: str, impl: str, spread: bool) -> None:
    # Burst: every stream writes at the same moments, each 50 ms beginning with an event from
    # each (a test of CPU per event as much as of delay). Spread: the streams' writes spread
    # over the 50 ms, as independent requests' tokens come.
    group = LATENCY_SPREAD_GROUP if spread else LATENCY_GROUP
    missing = _missing(impl)
    if missing:
        skip_row(group, impl, missing)
    args = ["latency", impl, server_url, str(STREAMS), str(EVENTS)]
    result = _run([*args, "spread"] if spread else args)
    record(group, impl, primary=impl == "sf.Client", **result)
    assert result["events"] == STREAMS * EVENTS
