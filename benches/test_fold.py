"""The fold (issue 5) against the SDK accumulators and the minimal fold; then the SDKs end to
end over an ``httpx.MockTransport`` against ``sf.fold`` over the same transport."""

from __future__ import annotations

import json
from typing import Any

import pytest

import peers
from harness import N_EVENTS, measure
from workloads import READS, stream

PROVIDERS = ("openai", "anthropic")


def _cases(rows: Any) -> list[Any]:
    return [
        pytest.param(provider, folder, id=f"{provider}-{folder.impl.name}")
        for provider in PROVIDERS
        for folder in rows(provider)
    ]


def _run(benchmark: Any, provider: str, folder: peers.Folder, group: str) -> None:
    s = stream(provider, N_EVENTS)
    chunks = READS["16KiB"](s.data)
    expected = {"text": s.text, "tool_calls": [(s.tool_name, json.loads(s.tool_arguments))]}

    def check(result: Any) -> None:
        got = folder.check(result)
        assert got == expected, folder.impl.name

    measure(
        benchmark,
        folder.impl,
        (chunks,),
        group=group.format(provider=provider),
        check=check,
        primary=folder.impl.name.startswith("streamfold"),
        events=s.events,
        bytes=s.size,
    )


@pytest.mark.parametrize(("provider", "folder"), _cases(peers.folders))
def test_fold(benchmark: Any, provider: str, folder: peers.Folder) -> None:
    _run(benchmark, provider, folder, "fold | {provider} stream | 16KiB reads")


@pytest.mark.parametrize(("provider", "folder"), _cases(peers.clients))
def test_client(benchmark: Any, provider: str, folder: peers.Folder) -> None:
    _run(benchmark, provider, folder, "client | {provider} stream | httpx.MockTransport")
