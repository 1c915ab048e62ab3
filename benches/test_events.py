"""``events()`` per provider (issue 4), beside the framer alone and the hand-rolled stacks; then
the real captures, per provider."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest

import peers
from harness import N_EVENTS, measure, skip_row
from workloads import READS, Capture, captures, stream

PROVIDERS = ("openai", "anthropic")


def _check_events(provider: str) -> Any:
    s = stream(provider, N_EVENTS)

    def check(result: Any) -> None:
        if isinstance(result, tuple):  # the framer alone: (events, characters)
            result = result[0]
        if isinstance(result, int):
            assert result == s.events
            return
        text = "".join(e.text for e in result if e.type == "block_delta" and e.kind == "text")
        args = "".join(e.text for e in result if e.type == "block_delta" and e.kind == "tool_call")
        assert text == s.text
        assert args == s.tool_arguments

    return check


@pytest.mark.parametrize(
    ("provider", "impl"),
    [
        pytest.param(provider, impl, id=f"{provider}-{impl.name}")
        for provider in PROVIDERS
        for impl in peers.events_impls(provider)
    ],
)
def test_events(benchmark: Any, provider: str, impl: peers.Impl) -> None:
    s = stream(provider, N_EVENTS)
    chunks = READS["16KiB"](s.data)
    measure(
        benchmark,
        impl,
        (chunks,),
        group=f"events | {provider} stream | 16KiB reads",
        check=_check_events(provider),
        primary=impl.name == "streamfold events()",
        events=s.events,
        bytes=s.size,
    )


def _by_provider() -> dict[str, list[Capture]]:
    out: dict[str, list[Capture]] = {}
    for c in captures():
        out.setdefault(c.provider, []).append(c)
    return out


CAPTURE_PROVIDERS = sorted(_by_provider()) or ["(no captures)"]


def _run_all(fn: Any, caps: list[Capture]) -> int:
    n = 0
    for c in caps:
        try:
            n += fn(c)
        except peers.sf.StreamfoldError:  # the error captures end in a StreamError by design
            n += 1
    return n


def _capture_impls(provider: str) -> list[peers.Impl]:
    sf = peers.sf

    def frames(c: Capture) -> int:
        if c.provider == "cohere-v1":
            return len(sf.JsonLinesDecoder().feed(c.data))
        dec = sf.SSEDecoder()
        return len(dec.feed(c.data)) + len(dec.close())

    def events(c: Capture) -> int:
        return sum(1 for _ in sf.events([c.data], provider=c.provider))

    def events_auto(c: Capture) -> int:
        return sum(1 for _ in sf.events([c.data]))  # the default: the provider detected

    def fold(c: Capture) -> int:
        sf.fold([c.data], provider=c.provider)
        return 1

    def httpx_sse_json(c: Capture) -> int:
        if c.provider == "cohere-v1":  # JSON lines: what a hand-rolled reader does
            return len([json.loads(line) for line in c.data.splitlines() if line.strip()])
        n = 0
        for ev in peers._httpx_sse_iter([c.data]):
            with contextlib.suppress(ValueError):  # [DONE] and other non-JSON payloads
                json.loads(ev.data)
            n += 1
        return n

    missing_events = peers.sf_missing(f"provider:{provider}")
    return [
        peers.Impl("streamfold framer only", frames, peers.sf_missing("SSEDecoder")),
        peers.Impl("streamfold events()", events, missing_events),
        peers.Impl("streamfold fold()", fold, missing_events or peers.sf_missing("fold")),
        peers.Impl("streamfold events(), provider auto", events_auto, missing_events),
        peers.Impl(
            "httpx-sse+json (json.loads per line for JSON lines)",
            httpx_sse_json,
            peers._module("httpx_sse"),
        ),
    ]


@pytest.mark.parametrize(
    "impl_index", [0, 1, 2, 3, 4], ids=["framer", "events", "fold", "auto", "httpx-sse+json"]
)
@pytest.mark.parametrize("provider", CAPTURE_PROVIDERS)
def test_captures(benchmark: Any, provider: str, impl_index: int) -> None:
    caps = _by_provider().get(provider, [])
    group = f"captures | {provider}"
    if not caps:
        skip_row(group, "all", "../shared/captures is not there")
    impl = _capture_impls(provider)[impl_index]
    frames = sum(_run_all(_capture_impls(provider)[0].fn, [c]) for c in caps)
    counted = peers.Impl(impl.name, lambda: _run_all(impl.fn, caps), impl.missing)
    measure(
        benchmark,
        counted,
        (),
        group=group,
        primary=impl_index == 1,
        events=frames,
        bytes=sum(len(c.data) for c in caps),
        captures=len(caps),
    )
