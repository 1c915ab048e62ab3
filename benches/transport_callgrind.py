"""Instructions per event of a client process reading paced streams (issue 23), counted under
callgrind: the whole process, tokio's threads included, so figures that do not move with the
machine's load, for the native client's read paths and for aiohttp on the same asyncio loop.

    python benches/transport_callgrind.py [MODE ...]     # default: every mode

The server (``transport.py server``) runs in its own process, outside valgrind, and writes
each of a stream's events 0.1 s apart, so every event is its own read. A client process runs
``FEW`` and then ``MANY`` concurrent streams; the difference of the two totals, divided by the
difference in events, is the cost of one event with start-up and set-up taken out.

MODE: ``text`` (``sf.astream(...).text_stream``), ``events`` (``async for`` over
``sf.astream``), ``fold`` (``sf.astream(...).fold()``), ``aevents`` (``sf.aevents`` of an
``sf.Client`` response), ``bytes`` (``sf.Client``'s ``aiter_bytes`` alone), ``aiohttp``
(aiohttp's ``iter_any`` alone), ``aiohttp-fold`` (aiohttp into the minimal orjson fold).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
EVENTS = 100  # deltas per stream; the server adds the role chunk, the finish and [DONE]
FEW, MANY = 5, 25
MODES = ("text", "events", "fold", "aevents", "bytes", "aiohttp", "aiohttp-fold")

CHILD = r"""
import asyncio, sys
import streamfold as sf
from transport import _MinimalFold, _close
url, mode, count = sys.argv[1], sys.argv[2], int(sys.argv[3])

async def text(client):
    async with sf.astream("GET", url, provider="openai", client=client) as s:
        return sum([1 async for _ in s.text_stream])

async def events(client):
    async with sf.astream("GET", url, provider="openai", client=client) as s:
        return sum([1 async for _ in s])

async def fold(client):
    async with sf.astream("GET", url, provider="openai", client=client) as s:
        return len((await s.fold()).text)

async def aevents(client):
    async with client.stream("GET", url) as response:
        return sum([1 async for _ in sf.aevents(response, provider="openai")])

async def bytes_(client):
    async with client.stream("GET", url) as response:
        return sum([1 async for _ in response.aiter_bytes()])

async def aiohttp_(session):
    async with session.get(url) as response:
        return sum([1 async for _ in response.content.iter_any()])

async def aiohttp_fold(session):
    import orjson
    minimal = _MinimalFold(orjson.loads)
    async with session.get(url) as response:
        async for chunk in response.content.iter_any():
            minimal.feed(chunk)
    return len(minimal.text)

async def main():
    if mode.startswith("aiohttp"):
        import aiohttp
        client = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    else:
        client = sf.Client()
    one = {"text": text, "events": events, "fold": fold, "aevents": aevents, "bytes": bytes_,
           "aiohttp": aiohttp_, "aiohttp-fold": aiohttp_fold}[mode]
    await one(client)  # warm-up: imports, the first connection
    counts = await asyncio.gather(*(one(client) for _ in range(count)))
    await _close(client)
    assert all(counts), counts

asyncio.run(main())
"""


def instructions(url: str, mode: str, count: int) -> int:
    out = Path(tempfile.mkdtemp()) / "cg.out"
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        "--dump-instr=no",
        "--collect-systime=no",
        sys.executable,
        "-c",
        CHILD,
        url,
        mode,
        str(count),
    ]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), *sys.path]))
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=1800)
    total = re.search(r"^(?:summary|totals):\s+(\d+)", out.read_text(), re.M)
    assert total is not None, out
    return int(total.group(1))


def main() -> None:
    modes = sys.argv[1:] or list(MODES)
    unknown = set(modes) - set(MODES)
    if unknown:
        raise SystemExit(f"unknown modes {sorted(unknown)}; modes: {', '.join(MODES)}")
    server = subprocess.Popen(
        [sys.executable, str(HERE / "transport.py"), "server"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        base = server.stdout.readline().strip()
        url = f"{base}/gen?n={EVENTS}&interval=0.1"
        print(f"{'mode':<14}{'Ir per event':>14}")
        for mode in modes:
            few = instructions(url, mode, FEW)
            many = instructions(url, mode, MANY)
            per_event = (many - few) / ((MANY - FEW) * (EVENTS + 3))
            print(f"{mode:<14}{per_event:14,.0f}", flush=True)
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
