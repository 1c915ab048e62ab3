"""How cost grows with the work (issue 8): the OpenAI-style stream at 1k, 10k and 100k events
(16 KiB reads), and the peak memory of a 100 MB stream."""

from __future__ import annotations

import json
from typing import Any

import pytest

import minimal
import peers
from harness import QUICK, measure, record, skip_row
from subproc import run_child
from workloads import READS, stream

COUNTS = (1_000, 10_000) if QUICK else (1_000, 10_000, 100_000)
STREAM_BYTES = 10_000_000 if QUICK else 100_000_000


def _impls() -> list[peers.Impl]:
    sf = peers.sf

    def sf_events(chunks: list[bytes]) -> int:
        return sum(1 for _ in sf.events(chunks, provider="openai"))

    def sf_fold(chunks: list[bytes]) -> Any:
        return sf.fold(chunks, provider="openai")

    return [
        peers.Impl("streamfold SSEDecoder", peers.sf_frames, peers.sf_missing("SSEDecoder")),
        peers.Impl("streamfold events()", sf_events, peers.sf_missing("provider:openai")),
        peers.Impl("streamfold fold()", sf_fold, peers.sf_missing("fold")),
        peers.Impl("minimal framer", peers.minimal_frames),
        peers.Impl("minimal fold", minimal.fold_openai),
    ]


@pytest.mark.parametrize(
    ("n", "impl"),
    [pytest.param(n, impl, id=f"{n}-{impl.name}") for n in COUNTS for impl in _impls()],
)
def test_scale(benchmark: Any, n: int, impl: peers.Impl) -> None:
    s = stream("openai", n)
    chunks = READS["16KiB"](s.data)
    expected_args = json.loads(s.tool_arguments)

    def check(result: Any) -> None:
        if isinstance(result, tuple):
            assert result[0] == s.events
        elif isinstance(result, dict):
            assert result["text"] == s.text
            assert result["tool_calls"][0]["arguments"] == expected_args
        elif not isinstance(result, int):
            assert result.text == s.text
            assert result.tool_calls[0].arguments == expected_args

    measure(
        benchmark,
        impl,
        (chunks,),
        group=f"scale | {n:,} events",
        check=check,
        primary=impl.name.startswith("streamfold"),
        events=s.events,
        bytes=s.size,
        n=n,
    )


STREAM_IMPLS = [
    ("streamfold SSEDecoder", "SSEDecoder"),
    ("streamfold events()", "provider:openai"),
    ("streamfold fold()", "fold"),
    ("minimal framer", None),
    ("minimal fold", None),
]


@pytest.mark.once
@pytest.mark.parametrize(("name", "feature"), STREAM_IMPLS, ids=[n for n, _ in STREAM_IMPLS])
def test_stream_memory(name: str, feature: str | None) -> None:
    group = f"stream-memory | {STREAM_BYTES // 1_000_000} MB stream, 16 KiB reads"
    extra = {"bytes": STREAM_BYTES, "primary": name.startswith("streamfold")}
    missing = peers.sf_missing(feature) if feature else None
    if missing:
        skip_row(group, name, missing, **extra)
    result = run_child(["stream", name, str(STREAM_BYTES)], 300.0)
    if result is None:
        record(group, name, timeout=300.0, **extra)
        return
    record(group, name, **{**extra, **result})
