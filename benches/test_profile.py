"""Where the time goes (issue 8): the Python-facing path run in cumulative stages on the same
stream, so each stage's cost is the difference to the one before. ``run.py`` puts the Rust-only
ceiling (``cargo bench --bench ceiling``) beneath it."""

from __future__ import annotations

from typing import Any

import pytest

import peers
from harness import N_EVENTS, measure
from workloads import READS, stream


def _feed_only(chunks: list[bytes]) -> int:
    dec = peers.sf.SSEDecoder()
    n = 0
    for chunk in chunks:
        n += len(dec.feed(chunk))
    return n + len(dec.close())


def _events(provider: str) -> Any:
    def run(chunks: list[bytes]) -> int:
        return sum(1 for _ in peers.sf.events(chunks, provider=provider))

    return run


def _fold(provider: str) -> Any:
    def run(chunks: list[bytes]) -> Any:
        return peers.sf.fold(chunks, provider=provider)

    return run


#: stage -> the stage it adds to (the report's "stage cost" is the difference).
PARENT = {"1": "0b", "2": "1", "3": "1", "4": "3", "5": "4"}


def stages(provider: str) -> list[peers.Impl]:
    framing = peers.sf_missing("SSEDecoder")
    return [
        peers.Impl("1 framing: SSEDecoder.feed -> event objects", _feed_only, framing),
        peers.Impl("2 = 1 + reading .event and .data (a str per event)", peers.sf_frames, framing),
        peers.Impl("3 = 1 + ServerSentEvent.json() (no .data)", peers.sf_frames_json, framing),
        peers.Impl(
            "4 = 3 + provider mapping: events()",
            _events(provider),
            peers.sf_missing(f"provider:{provider}"),
        ),
        peers.Impl("5 = 4 + folding: fold()", _fold(provider), peers.sf_missing("fold")),
    ]


@pytest.mark.parametrize(
    ("provider", "impl"),
    [
        pytest.param(provider, impl, id=f"{provider}-{impl.name[0]}")
        for provider in ("openai", "anthropic")
        for impl in stages(provider)
    ],
)
def test_stage(benchmark: Any, provider: str, impl: peers.Impl) -> None:
    s = stream(provider, N_EVENTS)
    chunks = READS["16KiB"](s.data)
    measure(
        benchmark,
        impl,
        (chunks,),
        group=f"profile | {provider} stream | 16KiB reads",
        primary=impl.name.startswith("5"),
        events=s.events,
        bytes=s.size,
        stage=impl.name[0],
        parent=PARENT[impl.name[0]],
    )
