"""The load run (issue 6): many concurrent streams through ``httpx.AsyncClient`` against the
project's test server (``tests/http_server.py``), each folded into its message.

    python benches/load.py server                       # start the server; prints its URL
    python benches/load.py client IMPL URL STREAMS EVENTS
    python benches/load.py state IMPL STREAMS           # memory of STREAMS open pipelines

The server runs in its own process so the client's CPU time is the client's alone. Each client
run is a fresh process that prints one JSON object: wall seconds, CPU seconds, events, peak
memory while every stream is open, and whether every stream's text came out exact (no event
lost or duplicated).

IMPL is ``streamfold`` (``sf.afold`` over ``response.aiter_bytes()``) or ``httpx-sse``
(``httpx_sse.aconnect_sse`` + ``json.loads`` + the minimal fold's logic).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import resource
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

DELTA = "tök🙂 "


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _rss() -> int:
    return _status("VmRSS")


def _reset_peak() -> bool:
    """Reset the kernel's high-water mark (VmHWM), so the peak is this run's."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def serve() -> None:
    sys.path.insert(0, str(HERE.parent / "tests"))
    import http_server

    server = http_server.start_server()
    print(server.base_url, flush=True)
    threading.Event().wait()


async def _sf_one(client: Any, url: str) -> str:
    import streamfold as sf

    async with client.stream("GET", url) as response:
        message = await sf.afold(response.aiter_bytes(), provider="openai")
    return str(message.text)


async def _peer_one(client: Any, url: str) -> str:
    from httpx_sse import aconnect_sse

    text: list[str] = []
    finish = None
    async with aconnect_sse(client, "GET", url) as source:
        async for ev in source.aiter_sse():
            if ev.data == "[DONE]":
                break
            obj = json.loads(ev.data)
            for choice in obj["choices"]:
                content = choice["delta"].get("content")
                if content:
                    text.append(content)
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
    if finish is None:
        raise RuntimeError("stream ended without a finish_reason")
    return "".join(text)


IMPLS: dict[str, Callable[[Any, str], Any]] = {"streamfold": _sf_one, "httpx-sse": _peer_one}


async def _client(impl: str, url: str, streams: int, events: int) -> dict[str, Any]:
    import httpx

    one = IMPLS[impl]
    stream_url = f"{url}/generate?provider=openai&n={events}&delta={DELTA}"
    limits = httpx.Limits(max_connections=streams, max_keepalive_connections=streams)
    timeout = httpx.Timeout(120.0)
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
        # one warm-up stream, so imports and the first connection are not timed
        await one(client, stream_url)
        gc.collect()
        can_reset = _reset_peak()
        base_rss = _rss()
        cpu0 = time.process_time()
        wall0 = time.perf_counter()
        results = await asyncio.gather(*(one(client, stream_url) for _ in range(streams)))
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
    expected = DELTA * events
    exact = sum(1 for r in results if r == expected)
    if can_reset:
        peak = _status("VmHWM") - base_rss
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base_rss
    return {
        "streams": streams,
        "events": streams * (events + 3),
        "seconds": wall,
        "cpu_seconds": cpu,
        "exact_streams": exact,
        "peak_bytes": max(0, peak),
    }


def state(impl: str, streams: int) -> dict[str, Any]:
    """Memory of ``streams`` pipelines each holding an open stream after its first 16 KiB
    read, without any transport: what the library itself keeps per stream."""
    import minimal
    import workloads

    body = workloads.openai_stream(10_000).data
    first = body[: 16 * 1024]
    if impl == "streamfold":
        import streamfold as sf

        def one() -> Any:
            pipeline = sf.Pipeline("openai")
            folder = sf.Folder("openai")
            for ev in pipeline.feed(first):
                folder.add(ev)
            return pipeline, folder
    else:

        def one() -> Any:
            dec = minimal.MinimalSSE()
            text = [
                json.loads(d)["choices"][0]["delta"].get("content") or ""
                for _e, d in dec.feed(first)
            ]
            return dec, text

    # A stream read before the count: what the first one costs once per process (the
    # provider's module, caches filled on first use) is not state kept per stream.
    keep: list[Any] = [one()]
    gc.collect()
    base = _rss()
    keep.extend(one() for _ in range(streams))
    gc.collect()
    grown = _rss() - base
    return {"streams": streams, "bytes_per_stream": grown / streams, "kept": len(keep)}


def main(argv: list[str]) -> None:
    kind = argv[0]
    if kind == "server":
        serve()
        return
    if kind == "client":
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 8192)), hard))
        out = asyncio.run(_client(argv[1], argv[2], int(argv[3]), int(argv[4])))
    elif kind == "state":
        out = state(argv[1], int(argv[2]))
    else:
        raise SystemExit(__doc__)
    out["pid"] = os.getpid()
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
