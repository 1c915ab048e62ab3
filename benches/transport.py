"""The native client's load run (issue 23): many concurrent streams from a server in its own
process that writes each event on its own, the client's CPU per event, its memory per open
stream and the latency from the server's write to the event in Python.

    python benches/transport.py server                        # prints its URL
    python benches/transport.py cpu IMPL URL STREAMS EVENTS [INTERVAL]  # paced: s apart
    python benches/transport.py memory IMPL URL STREAMS       # STREAMS held open
    python benches/transport.py latency IMPL URL STREAMS EVENTS [spread]

Each client run is a fresh process printing one JSON object. CPU is ``time.process_time()``
of the client process: it counts every thread's, tokio's included.

IMPL: ``sf.Client`` (``sf.astream(...).fold()``; in latency its ``text_stream``; asyncio),
``sf.Client-text`` (cpu: ``text_stream``, then ``fold()``), ``sf.Client-uvloop``
(``sf.Client`` on uvloop), ``sf.Client-afold`` (``sf.afold`` of its response),
``sf.Client-aevents`` (``sf.aevents`` of its response, read by read), ``sf.Client-bytes``
(latency: the transport alone into aiohttp's minimal fold), ``httpx-sse`` (httpx + httpx-sse
+ ``json.loads`` + a minimal fold), ``aiohttp`` (uvloop + aiohttp + orjson + a minimal fold),
``httpx`` (memory only: ``sf.astream`` with an ``httpx.AsyncClient``), ``floor`` (cpu: the
floor of any client on an event loop, an ``asyncio.Protocol`` on uvloop that writes the request
and counts each read's bytes, with no HTTP parsed and nothing folded).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DELTA = "tok "


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


# -- the server: /gen?n=&interval= writes each event on its own; delta= the server's clock ----


def serve() -> None:
    from aiohttp import web

    async def gen(request: web.Request) -> web.StreamResponse:
        n = int(request.query.get("n", "100"))
        interval = float(request.query.get("interval", "0"))
        stamp = request.query.get("stamp") == "1"
        hold = float(request.query.get("hold", "0"))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        head = {"id": "c", "object": "chat.completion.chunk", "model": "m"}
        if hold:  # one event, then silence: an open stream
            await response.write(_chunk(head, {"role": "assistant", "content": ""}, None))
            await asyncio.sleep(hold)
            return response
        await response.write(_chunk(head, {"role": "assistant", "content": ""}, None))
        start = int(request.query.get("at", "0"))  # the clock time to begin at (ns)
        if start:
            await asyncio.sleep(max(0.0, (start - time.time_ns()) / 1e9))
        for _ in range(n):
            if interval:
                await asyncio.sleep(interval)
            text = f"{time.time_ns()} " if stamp else DELTA
            await response.write(_chunk(head, {"content": text}, None))
        await response.write(_chunk(head, {}, "stop"))
        await response.write(b"data: [DONE]\n\n")
        return response

    app = web.Application()
    app.router.add_get("/gen", gen)
    _raise_nofile()

    async def main() -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=4096)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        print(f"http://127.0.0.1:{port}", flush=True)
        await asyncio.Event().wait()

    try:
        import uvloop

        uvloop.run(main())
    except ImportError:
        asyncio.run(main())


def _chunk(head: dict[str, Any], delta: dict[str, Any], finish: str | None) -> bytes:
    body = {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _raise_nofile() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 65536)), hard))


# -- the minimal folds the peers run ---------------------------------------------------------


class _MinimalFold:
    """Split on blank lines, parse each ``data:`` payload, keep text and finish reason."""

    __slots__ = ("buf", "finish", "loads", "text")

    def __init__(self, loads: Any) -> None:
        self.buf = b""
        self.text: list[str] = []
        self.finish: str | None = None
        self.loads = loads

    def feed(self, chunk: bytes) -> None:
        buf = self.buf + chunk
        *blocks, self.buf = buf.split(b"\n\n")
        for block in blocks:
            for line in block.split(b"\n"):
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    continue
                for choice in self.loads(data)["choices"]:
                    content = choice["delta"].get("content")
                    if content:
                        self.text.append(content)
                    if choice.get("finish_reason"):
                        self.finish = choice["finish_reason"]


async def _sf_fold(client: Any, url: str) -> str:
    import streamfold as sf

    async with sf.astream("GET", url, provider="openai", client=client) as s:
        message = await s.fold()
    return str(message.text)


async def _sf_text(client: Any, url: str) -> str:
    # What a chat front end or a relay does: the text as it comes, then the message.
    import streamfold as sf

    async with sf.astream("GET", url, provider="openai", client=client) as s:
        text = [piece async for piece in s.text_stream]
        await s.fold()
    return "".join(text)


async def _sf_afold(client: Any, url: str) -> str:
    import streamfold as sf

    async with client.stream("GET", url) as response:
        message = await sf.afold(response, provider="openai")
    return str(message.text)


async def _sf_aevents(client: Any, url: str) -> str:
    # Read by read: the task woken for each read that arrives (no batching).
    import streamfold as sf

    text: list[str] = []
    async with client.stream("GET", url) as response:
        async for event in sf.aevents(response, provider="openai"):
            if isinstance(event, sf.BlockDelta):
                text.append(event.text)
    return "".join(text)


async def _httpx_sse_fold(client: Any, url: str) -> str:
    from httpx_sse import aconnect_sse

    text: list[str] = []
    finish = None
    async with aconnect_sse(client, "GET", url) as source:
        async for ev in source.aiter_sse():
            if ev.data == "[DONE]":
                break
            for choice in json.loads(ev.data)["choices"]:
                content = choice["delta"].get("content")
                if content:
                    text.append(content)
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
    if finish is None:
        raise RuntimeError("no finish_reason")
    return "".join(text)


async def _aiohttp_fold(session: Any, url: str) -> str:
    import orjson

    fold = _MinimalFold(orjson.loads)
    async with session.get(url) as response:
        async for chunk in response.content.iter_any():
            fold.feed(chunk)
    if fold.finish is None:
        raise RuntimeError("no finish_reason")
    return "".join(fold.text)


class _CountingProtocol(asyncio.Protocol):
    """The request written, each read's bytes counted, the connection closed at the chunked
    body's last chunk: what an event loop costs a client before any HTTP or SSE code runs."""

    END = b"0\r\n\r\n"

    def __init__(self, request: bytes, done: asyncio.Future[int]) -> None:
        self.request = request
        self.done = done
        self.received = 0
        self.last = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        self.received += len(data)
        if len(data) < len(self.END):  # the end may come split across reads
            data = self.last[-len(self.END) :] + data
        self.last = data
        if data.endswith(self.END) and self.transport is not None:
            self.transport.close()
            if not self.done.done():
                self.done.set_result(self.received)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_exception(exc or ConnectionError("closed before the body's end"))


#: The bytes of the floor's first stream (the warm-up): each later one must match them.
_FLOOR_BYTES: list[int] = []


async def _floor(client: Any, url: str) -> str:
    from urllib.parse import parse_qs, urlsplit

    parts = urlsplit(url)
    request = (f"GET {parts.path}?{parts.query} HTTP/1.1\r\nHost: {parts.netloc}\r\n\r\n").encode()
    loop = asyncio.get_running_loop()
    done: asyncio.Future[int] = loop.create_future()
    await loop.create_connection(
        lambda: _CountingProtocol(request, done), parts.hostname, parts.port
    )
    received = await done
    if not _FLOOR_BYTES:
        _FLOOR_BYTES.append(received)
    if received != _FLOOR_BYTES[0]:
        raise RuntimeError(f"{received} bytes where the first stream had {_FLOOR_BYTES[0]}")
    # Counted, not parsed: the same byte count as the warm-up's stream stands for its text.
    return DELTA * int(parse_qs(parts.query)["n"][0])


def _make_client(impl: str, streams: int) -> Any:
    if impl == "floor":
        return None
    if impl.startswith("sf.Client"):
        import streamfold as sf

        return sf.Client()
    if impl in ("httpx-sse", "httpx"):
        import httpx

        limits = httpx.Limits(max_connections=streams, max_keepalive_connections=streams)
        return httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(600.0))
    import aiohttp

    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=600)
    )


def _run(impl: str, main: Any) -> Any:
    _raise_nofile()
    if impl in ("aiohttp", "sf.Client-uvloop", "floor"):
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)


FOLDS = {
    "sf.Client": _sf_fold,
    "sf.Client-afold": _sf_afold,
    "sf.Client-aevents": _sf_aevents,
    "sf.Client-uvloop": _sf_fold,
    "sf.Client-text": _sf_text,
    "httpx-sse": _httpx_sse_fold,
    "aiohttp": _aiohttp_fold,
    "floor": _floor,
}


def _io_cpu() -> float:
    """CPU seconds of the process's threads other than the main one (tokio's for sf.Client;
    0 where ``/proc`` has no per-thread times)."""
    total = 0
    tasks = Path("/proc/self/task")
    if not tasks.exists():
        return 0.0
    for task in tasks.iterdir():
        if int(task.name) == os.getpid():
            continue
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


async def _cpu(
    impl: str, url: str, streams: int, events: int, interval: float = 0.0
) -> dict[str, Any]:
    """The client's CPU for ``streams`` concurrent streams of ``events`` deltas: written as
    fast as the server can (``interval`` 0: reads coalesce under load), or one every
    ``interval`` seconds, as a model server flushes its tokens (each event its own read)."""
    one = FOLDS[impl]
    stream_url = f"{url}/gen?n={events}&interval={interval}"
    client = _make_client(impl, streams)
    try:
        await one(client, stream_url)  # warm-up: imports, the first connection
        gc.collect()
        cpu0 = time.process_time()
        io0 = _io_cpu()
        wall0 = time.perf_counter()
        results = await asyncio.gather(*(one(client, stream_url) for _ in range(streams)))
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
        io = _io_cpu() - io0
    finally:
        await _close(client)
    total = streams * (events + 3)  # the role chunk, the deltas, the finish, [DONE]
    return {
        "streams": streams,
        "events": total,
        "seconds": wall,
        "cpu_seconds": cpu,
        "interval": interval,
        "cpu_us_per_event": cpu / total * 1e6,
        "cpu_us_per_stream": cpu / streams * 1e6,
        "other_threads_us_per_event": io / total * 1e6,
        "exact_streams": sum(1 for text in results if text == DELTA * events),
    }


async def _close(client: Any) -> None:
    close = getattr(client, "aclose", None) or getattr(client, "close", None)
    if close is not None:
        result = close()
        if asyncio.iscoroutine(result):
            await result


async def _memory(impl: str, url: str, streams: int) -> dict[str, Any]:
    """RSS growth while ``streams`` streams are open, each after its first event, and the
    objects the garbage collector tracks for them."""
    stream_url = f"{url}/gen?hold=600"
    client = _make_client(impl, streams)
    opened: list[Any] = []
    started = asyncio.Event()
    release = asyncio.Event()
    ready = 0

    async def hold() -> None:
        # The same stream either way (sf.astream, its fold state): only the transport differs.
        nonlocal ready
        import streamfold as sf

        async with sf.astream("GET", stream_url, provider="openai", client=client) as s:
            await s.__anext__()
            opened.append(s)
            ready += 1
            if ready == streams:
                started.set()
            await release.wait()

    try:
        await _hold_one(impl, client, stream_url)  # warm-up
        gc.collect()
        base = _rss()
        base_tracked = len(gc.get_objects())
        tasks = [asyncio.ensure_future(hold()) for _ in range(streams)]
        await asyncio.wait_for(started.wait(), 300)
        gc.collect()
        grown = _rss() - base
        # What each full collection walks, per open stream: its pauses grow with it.
        tracked = len(gc.get_objects()) - base_tracked
        release.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        await _close(client)
    return {
        "streams": streams,
        "bytes_per_stream": grown / streams,
        "tracked_per_stream": tracked / streams,
        "open": len(opened),
    }


async def _hold_one(impl: str, client: Any, url: str) -> None:
    import streamfold as sf

    async with sf.astream("GET", url, provider="openai", client=client) as s:
        await s.__anext__()


async def _latency(
    impl: str, url: str, streams: int, events: int, *, spread: bool = False
) -> dict[str, Any]:
    """From the server's write (its clock in each delta) to the text in Python, once every
    stream is open: all begin two seconds on, so opening them (the same for both) is not
    measured as the first events' delay. At one moment, so that every 50 ms begins with a
    burst of an event from each stream; ``spread``: the streams' starts spread evenly over
    the 50 ms, as independent requests' tokens are."""
    at = time.time_ns() + 2_000_000_000
    interval_ns = 50_000_000
    offsets = [k * interval_ns // streams if spread else 0 for k in range(streams)]
    urls = [
        f"{url}/gen?n={events}&interval={interval_ns / 1e9}&stamp=1&at={at + offset}"
        for offset in offsets
    ]
    client = _make_client(impl, streams)
    delays: list[int] = []

    async def sf_one(stream_url: str) -> None:
        import streamfold as sf

        async with sf.astream("GET", stream_url, provider="openai", client=client) as s:
            async for text in s.text_stream:
                delays.append(time.time_ns() - int(text))

    async def aiohttp_one(stream_url: str) -> None:
        import orjson

        fold = _MinimalFold(orjson.loads)
        async with client.get(stream_url) as response:
            async for chunk in response.content.iter_any():
                seen = len(fold.text)
                fold.feed(chunk)
                now = time.time_ns()
                delays.extend(now - int(text) for text in fold.text[seen:])

    async def sf_bytes_one(stream_url: str) -> None:
        # The transport alone: sf.Client's bytes into the same minimal fold as aiohttp's.
        import orjson

        fold = _MinimalFold(orjson.loads)
        async with client.stream("GET", stream_url) as response:
            async for chunk in response.aiter_bytes():
                seen = len(fold.text)
                fold.feed(chunk)
                now = time.time_ns()
                delays.extend(now - int(text) for text in fold.text[seen:])

    async def sf_events_one(stream_url: str) -> None:
        # sf.aevents over an sf.Client response: no sf.astream machinery.
        import streamfold as sf

        async with client.stream("GET", stream_url) as response:
            async for event in sf.aevents(response, provider="openai"):
                text = getattr(event, "text", "")
                if text and isinstance(event, sf.BlockDelta):
                    delays.append(time.time_ns() - int(text))

    one = {
        "sf.Client": sf_one,
        "sf.Client-aevents": sf_events_one,
        "sf.Client-uvloop": sf_one,
        "sf.Client-bytes": sf_bytes_one,
        "aiohttp": aiohttp_one,
    }[impl]
    cpu0 = time.process_time()
    io0 = _io_cpu()
    try:
        await asyncio.gather(*(one(u) for u in urls))
    finally:
        await _close(client)
    cpu = time.process_time() - cpu0
    io = _io_cpu() - io0
    delays.sort()
    return {
        "streams": streams,
        "events": len(delays),
        "cpu_seconds": cpu,
        "other_threads_cpu_seconds": io,
        "p50_ms": delays[len(delays) // 2] / 1e6,
        "p99_ms": delays[int(len(delays) * 0.99)] / 1e6,
    }


def main(argv: list[str]) -> None:
    kind = argv[0]
    if kind == "server":
        serve()
        return
    impl, url = argv[1], argv[2]
    if kind == "cpu":
        interval = float(argv[5]) if len(argv) > 5 else 0.0
        out = _run(impl, _cpu(impl, url, int(argv[3]), int(argv[4]), interval))
    elif kind == "memory":
        out = _run(impl, _memory(impl, url, int(argv[3])))
    elif kind == "latency":
        spread = argv[5:] == ["spread"]
        out = _run(impl, _latency(impl, url, int(argv[3]), int(argv[4]), spread=spread))
    else:
        raise SystemExit(__doc__)
    out["pid"] = os.getpid()
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
