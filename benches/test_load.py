"""The load run (issue 6): 1,000 concurrent streams through ``httpx.AsyncClient`` against the
test server, streamfold against httpx-sse + ``json.loads`` + a minimal fold, interleaved;
then the memory each library keeps per open stream. See ``load.py``."""

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
ROUNDS = 1 if QUICK else 3
SERVER = HERE.parent / "tests" / "http_server.py"
GROUP = f"load | {STREAMS:,} concurrent streams x {EVENTS} events"
#: Pipelines held for the state measurement: enough that memory the allocator already had
#: (freed by the imports and the warm-up) is a small part of the growth it measures.
HELD = 1_000 if QUICK else 10_000


def _run(args: list[str], timeout: float = 600.0) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, str(HERE / "load.py"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"load.py {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    if not SERVER.exists():
        skip_row(GROUP, "all", "tests/http_server.py has not landed yet (issue 6)")
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "load.py"), "server"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the test server did not start: {url!r}")
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.mark.once
def test_load(server_url: str) -> None:
    impls = {"streamfold": peers.sf_missing("fold"), "httpx-sse": peers._module("httpx_sse")}
    for name, missing in impls.items():
        if missing:
            record(GROUP, name, skipped=missing, primary=name == "streamfold")
    runnable = [name for name, missing in impls.items() if not missing]
    for _ in range(ROUNDS):
        for name in runnable:  # interleaved
            result = _run(["client", name, server_url, str(STREAMS), str(EVENTS)])
            record(GROUP, name, primary=name == "streamfold", **result)
            assert result["exact_streams"] == STREAMS, (name, result)


@pytest.mark.once
@pytest.mark.parametrize("impl", ["streamfold", "minimal"])
def test_state_per_stream(impl: str) -> None:
    group = "load | memory kept per open stream (no transport)"
    if impl == "streamfold" and peers.sf_missing("fold"):
        skip_row(group, impl, str(peers.sf_missing("fold")))
    result = _run(["state", impl, str(HELD)])
    record(group, impl, primary=impl == "streamfold", **result)
