"""Framing (issue 2): the SSE decoders on the 10,000-event streams, 16 KiB and 1-64 byte reads;
then framing plus JSON parsing of every payload."""

from __future__ import annotations

from typing import Any

import pytest

import peers
from harness import N_EVENTS, measure
from workloads import READS, stream

PROVIDERS = ("openai", "anthropic")


@pytest.mark.parametrize("impl", peers.framers(), ids=lambda i: i.name)
@pytest.mark.parametrize("reads", list(READS))
@pytest.mark.parametrize("provider", PROVIDERS)
def test_framing(benchmark: Any, provider: str, reads: str, impl: peers.Impl) -> None:
    s = stream(provider, N_EVENTS)
    chunks = READS[reads](s.data)
    expected_chars = peers.minimal_frames([s.data])[1]

    def check(result: tuple[int, int]) -> None:
        assert result == (s.events, expected_chars), (impl.name, result)

    measure(
        benchmark,
        impl,
        (chunks,),
        group=f"framing | {provider} stream | {reads} reads",
        check=check,
        primary=impl.name == "streamfold",
        events=s.events,
        bytes=s.size,
        reads=len(chunks),
    )


@pytest.mark.parametrize("impl", peers.framers_json(), ids=lambda i: i.name)
@pytest.mark.parametrize("reads", list(READS))
@pytest.mark.parametrize("provider", PROVIDERS)
def test_framing_json(benchmark: Any, provider: str, reads: str, impl: peers.Impl) -> None:
    s = stream(provider, N_EVENTS)
    chunks = READS[reads](s.data)

    def check(result: int) -> None:
        assert result == s.events, (impl.name, result)

    measure(
        benchmark,
        impl,
        (chunks,),
        group=f"framing+json | {provider} stream | {reads} reads",
        check=check,
        primary=impl.name == "streamfold",
        events=s.events,
        bytes=s.size,
    )
