"""One measurement in a fresh process: time and peak memory of one implementation on one big
input. Run by ``test_large_events.py`` and ``test_scale.py`` (never imported by them), so
one run's heap cannot flatter or spoil the next, and a quadratic peer can be stopped.

    python benches/memory.py big IMPL SIZE MODE      # one event of SIZE bytes; MODE reads4k|once
    python benches/memory.py stream IMPL TOTAL        # a TOTAL-byte stream in 16 KiB reads

Prints one JSON object: seconds (best of the runs made; also their median and the first,
cold, run), peak_bytes (resident-set growth
during the first run, the result included), retained_bytes (what the returned result itself
holds), events.

Peak memory is the kernel's high-water mark (VmHWM), reset just before the run through
``/proc/self/clear_refs``, so the input's own construction does not hide the run's peak;
``tracemalloc`` would miss the Rust side's allocations.
"""

from __future__ import annotations

import gc
import json
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import minimal
import peers
import workloads


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _peak_after(run: Callable[[], Any]) -> tuple[Any, int, float]:
    gc.collect()
    can_reset = _reset_peak()
    before_rss = _status("VmRSS")
    before_max = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - start
    if can_reset:
        peak = _status("VmHWM") - before_rss
    else:  # only growth past the earlier high-water mark is visible
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before_max
    return result, peak, seconds


def _big_impls(size: int) -> dict[str, Callable[[Iterable[bytes]], list[Any]]]:
    """Each returns the list of events (all kept, as a caller would hold its event)."""

    def sf(chunks: Iterable[bytes]) -> list[Any]:
        dec = peers.sf.SSEDecoder(max_event_bytes=2 * size)
        out: list[Any] = []
        for c in chunks:
            out += dec.feed(c)
        out += dec.close()
        return out

    def mini(chunks: Iterable[bytes]) -> list[Any]:
        return minimal.frames(chunks)

    return {
        "streamfold": sf,
        "minimal": mini,
        "httpx-sse": lambda chunks: list(peers._httpx_sse_iter(chunks)),
        "openai-sdk": lambda chunks: _sdk_events("openai", chunks),
        "anthropic-sdk": lambda chunks: _sdk_events("anthropic", chunks),
        "sseclient-py": _sseclient_events,
    }


def _sdk_events(module: str, chunks: Iterable[bytes]) -> list[Any]:
    decoder = __import__(f"{module}._streaming", fromlist=["SSEDecoder"]).SSEDecoder
    return list(decoder().iter_bytes(iter(chunks)))


def _sseclient_events(chunks: Iterable[bytes]) -> list[Any]:
    from sseclient import SSEClient

    return list(SSEClient(iter(chunks)).events())


def _retained(events: list[Any]) -> int:
    """Bytes the returned event's data holds: a Python ``str`` as ``sys.getsizeof`` says; the
    streamfold event keeps the UTF-8 bytes in Rust (its ``data`` makes a ``str`` on access)."""
    total = 0
    for ev in events:
        if isinstance(ev, tuple):
            total += sys.getsizeof(ev[1])
        elif type(ev).__module__.startswith("streamfold"):
            total += len(ev.data.encode())
        else:
            total += sys.getsizeof(ev.data)
    return total


def big(impl: str, size: int, mode: str) -> dict[str, Any]:
    data = workloads.big_event(size)
    fn = _big_impls(size)[impl]
    fn([b"data: warm-up\n\n"])  # imports (an SDK takes seconds) are not part of the run

    # The reads are made before the run, as the one whole input is: cutting 16 MiB into
    # 4,096 new `bytes` takes longer than streamfold's decoding of them, and is the reader's
    # cost, not the decoder's. They exist before the peak is reset, so they do not count in
    # it either (the input fed at once does not).
    reads = list(workloads.iter_reads(data, 4096)) if mode == "reads4k" else [data]

    def once() -> list[Any]:
        return fn(iter(reads))

    events, peak, first = _peak_after(once)
    assert len(events) == 1, (impl, len(events))
    retained = _retained(events)
    del events
    times = [first]
    # Up to a second of runs: a ~1 ms run (streamfold's) is repeated often enough for its best
    # and median to settle; a slow peer's gets a few.
    while sum(times) < 1.0 and len(times) < 51:
        start = time.perf_counter()
        once()
        times.append(time.perf_counter() - start)
    return {
        "seconds": min(times),
        "median_seconds": statistics.median(times),
        "cold_seconds": first,
        "runs": len(times),
        "peak_bytes": peak,
        "retained_bytes": retained,
        "events": 1,
    }


def _stream_impls() -> dict[str, Callable[[Iterable[bytes]], Any]]:
    sf = peers.sf

    def frames(chunks: Iterable[bytes]) -> int:
        dec = sf.SSEDecoder()
        n = 0
        for c in chunks:
            n += len(dec.feed(c))
        return n + len(dec.close())

    def events(chunks: Iterable[bytes]) -> int:
        return sum(1 for _ in sf.events(chunks, provider="openai"))

    def mini_frames(chunks: Iterable[bytes]) -> int:
        dec = minimal.MinimalSSE()
        return sum(len(dec.feed(c)) for c in chunks)

    return {
        "streamfold SSEDecoder": frames,
        "streamfold events()": events,
        "streamfold fold()": lambda chunks: sf.fold(chunks, provider="openai"),
        "minimal framer": mini_frames,
        "minimal fold": minimal.fold_openai,
    }


def stream(impl: str, total: int) -> dict[str, Any]:
    fn = _stream_impls()[impl]
    # The reads are made on the fly: the input never exists whole, so the peak is the
    # implementation's (plus one 16 KiB read).
    result, peak, seconds = _peak_after(lambda: fn(workloads.repeated_stream(total)))
    return {
        "seconds": seconds,
        "peak_bytes": peak,
        "stream_bytes": total,
        "result_type": type(result).__name__,
    }


def main(argv: list[str]) -> None:
    kind = argv[0]
    if kind == "big":
        out = big(argv[1], int(argv[2]), argv[3])
    elif kind == "stream":
        out = stream(argv[1], int(argv[2]))
    else:
        raise SystemExit(__doc__)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
