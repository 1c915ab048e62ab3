"""The workload services run (issue 21): each SSE event its own read, streams of 5 to 10,000
events, sync over a list iterator and asyncio over an async generator, against the
hand-written folds of ``per_event.py`` in the same run; ``events()`` against the minimal
framer + ``orjson`` + a ``match``; the real captures read one event per read; the fixed cost
of a stream.

Short streams take microseconds, so each timed call folds a batch of streams one after the
other (the same batch for every implementation of a table): ``streams`` in the extra info,
by which the report divides.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import pytest

import per_event
from harness import QUICK, measure
from peers import SF_IMPORT_ERROR, Impl, sf
from workloads import captures

SIZES = (5, 50, 500) if QUICK else per_event.SIZES
#: Events folded per timed call: a batch of short streams, one long one.
EVENTS_PER_CALL = 2_000


def _batch(events: int) -> int:
    return max(1, EVENTS_PER_CALL // events)


def _expected(r: per_event.Reads) -> dict[str, Any]:
    return {"text": r.text, "calls": r.calls, "finish": r.finish}


def _of_message(m: Any) -> dict[str, Any]:
    calls = [(c.name, c.arguments) for c in m.tool_calls]
    return {"text": m.text, "calls": calls, "finish": m.raw_finish_reason}


_LOOP = asyncio.new_event_loop()


def _sync_impls(kind: str, batch: int) -> list[tuple[Impl, Callable[[Any], dict[str, Any]]]]:
    provider = per_event.PROVIDER[kind]

    def streamfold(reads: list[bytes]) -> Any:
        for _ in range(batch):
            message = sf.fold(iter(reads), provider=provider)
        return message

    def minimal(reads: list[bytes]) -> Any:
        for _ in range(batch):
            result = per_event.fold(kind, iter(reads))
        return result

    return [
        (Impl("streamfold fold()", streamfold, SF_IMPORT_ERROR or None), _of_message),
        (Impl("minimal fold", minimal), dict),
    ]


def _async_impls(kind: str, batch: int) -> list[tuple[Impl, Callable[[Any], dict[str, Any]]]]:
    provider = per_event.PROVIDER[kind]
    aiter_reads = per_event.aiter_reads

    async def streamfold_batch(reads: list[bytes]) -> Any:
        for _ in range(batch):
            message = await sf.afold(aiter_reads(reads), provider=provider)
        return message

    async def minimal_batch(reads: list[bytes]) -> Any:
        for _ in range(batch):
            result = await per_event.afold(kind, aiter_reads(reads))
        return result

    return [
        (
            Impl(
                "streamfold afold()",
                lambda reads: _LOOP.run_until_complete(streamfold_batch(reads)),
                SF_IMPORT_ERROR or None,
            ),
            _of_message,
        ),
        (
            Impl("minimal afold", lambda reads: _LOOP.run_until_complete(minimal_batch(reads))),
            dict,
        ),
    ]


def _cases(impls: Callable[[str, int], list[Any]]) -> list[Any]:
    return [
        pytest.param(kind, n, k, id=f"{kind}-{n}-{'sf' if k == 0 else 'minimal'}")
        for kind in per_event.KINDS
        for n in SIZES
        for k in (0, 1)
    ]


def _run(benchmark: Any, kind: str, n: int, k: int, mode: str) -> None:
    r = per_event.reads(kind, n)
    batch = _batch(r.events)
    impls = (_sync_impls if mode == "sync" else _async_impls)(kind, batch)
    impl, view = impls[k]
    want = _expected(r)

    def check(result: Any) -> None:
        assert view(result) == want, impl.name

    measure(
        benchmark,
        impl,
        (r.reads,),
        group=f"per-event | {kind} | {n} | {mode}",
        check=check,
        primary=k == 0,
        events=r.events * batch,
        bytes=r.size * batch,
        streams=batch,
        stream_events=r.events,
    )


@pytest.mark.parametrize(("kind", "n", "k"), _cases(_sync_impls))
def test_fold_per_event(benchmark: Any, kind: str, n: int, k: int) -> None:
    _run(benchmark, kind, n, k, "sync")


@pytest.mark.parametrize(("kind", "n", "k"), _cases(_async_impls))
def test_afold_per_event(benchmark: Any, kind: str, n: int, k: int) -> None:
    _run(benchmark, kind, n, k, "asyncio")


@pytest.mark.parametrize(
    ("kind", "n", "k"),
    [
        pytest.param(kind, n, k, id=f"{kind}-{n}-{'sf' if k == 0 else 'minimal'}")
        for kind in ("openai-text", "anthropic-text")
        for n in SIZES
        for k in (0, 1)
    ],
)
def test_events_per_event(benchmark: Any, kind: str, n: int, k: int) -> None:
    r = per_event.reads(kind, n)
    batch = _batch(r.events)
    provider = per_event.PROVIDER[kind]

    def streamfold(reads: list[bytes]) -> int:
        for _ in range(batch):
            made = 0
            for _event in sf.events(iter(reads), provider=provider):
                made += 1
        return made

    def minimal(reads: list[bytes]) -> int:
        for _ in range(batch):
            made = per_event.events(kind, iter(reads))
        return made

    impl = Impl("streamfold events()", streamfold, SF_IMPORT_ERROR or None) if k == 0 else None
    impl = impl or Impl("minimal framer + orjson + match", minimal)

    def check(result: Any) -> None:
        assert result > 0, impl.name

    measure(
        benchmark,
        impl,
        (r.reads,),
        group=f"per-event-events | {kind} | {n}",
        check=check,
        primary=k == 0,
        events=r.events * batch,
        bytes=r.size * batch,
        streams=batch,
        stream_events=r.events,
    )


#: An SSE event and the blank line that ends it: the read a server's flush makes.
_EVENT = re.compile(rb".*?(?:\r\n\r\n|\n\n|\r\r|\r\n\n|\n\r\n|$)", re.DOTALL)


def one_event_per_read(data: bytes, provider: str = "") -> list[bytes]:
    """The reads of a server that flushes each event: an SSE event with its blank line, or
    a JSON line (Cohere v1)."""
    if provider == "cohere-v1":
        return data.splitlines(keepends=True)
    return [m.group() for m in _EVENT.finditer(data) if m.group()]


@pytest.mark.parametrize("capture", captures(), ids=lambda c: c.name)
def test_captures_per_event(benchmark: Any, capture: Any) -> None:
    reads = one_event_per_read(capture.data, capture.provider)
    assert b"".join(reads) == capture.data
    batch = _batch(len(reads))

    def fold(chunks: Any) -> Any:
        # A capture of an error folds to its error, with the partial message.
        try:
            return sf.fold(chunks, provider=capture.provider)
        except sf.StreamfoldError as exc:
            return repr(exc), exc.partial

    expected = fold([capture.data]) if sf is not None else None

    def streamfold(chunks: list[bytes]) -> Any:
        for _ in range(batch):
            message = fold(iter(chunks))
        return message

    def check(result: Any) -> None:
        assert result == expected

    measure(
        benchmark,
        Impl("streamfold fold()", streamfold, SF_IMPORT_ERROR or None),
        (reads,),
        group=f"per-event-captures | {capture.name}",
        check=check,
        primary=True,
        events=len(reads) * batch,
        bytes=len(capture.data) * batch,
        streams=batch,
        stream_events=len(reads),
        provider=capture.provider,
    )


#: The smallest streams: no content at all, and five events.
FIXED = {
    "empty": [
        per_event._chat({}, "stop"),
        b"data: [DONE]\n\n",
    ],
    "5 events": per_event.openai_text(5).reads,
}


@pytest.mark.parametrize("name", list(FIXED))
def test_fixed_cost(benchmark: Any, name: str) -> None:
    reads = FIXED[name]
    batch = 400

    def streamfold(chunks: list[bytes]) -> Any:
        for _ in range(batch):
            message = sf.fold(iter(chunks), provider="openai")
        return message

    def check(result: Any) -> None:
        assert result.complete

    measure(
        benchmark,
        Impl("streamfold fold()", streamfold, SF_IMPORT_ERROR or None),
        (reads,),
        group=f"per-event-fixed | openai | {name}",
        check=check,
        primary=True,
        events=len(reads) * batch,
        streams=batch,
        stream_events=len(reads),
    )
