"""Partial JSON (issue 3): tool-call arguments of 1 KB .. 1 MB pushed in 1-8 character
fragments with a preview after every fragment; then ``value()`` of a finished 1 MB document.

The re-parsing peers are quadratic: a cell is not run when the cell one size smaller
predicts (by the square of the size ratio) that it would take longer than ``LIMIT`` seconds;
the report says so and gives the prediction.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import peers
from harness import PASS, QUICK, measure, skip_row
from workloads import fragments, tool_arguments

SIZES = (1_000, 10_000, 100_000) if QUICK else (1_000, 10_000, 100_000, 1_000_000)
# The slowest cells run in the first pass only; later passes repeat the affordable ones.
LIMIT = 5.0 if QUICK else (30.0 if PASS == 0 else 8.0)
#: (impl, size) -> seconds of the checking call, to predict the next size.
_seen: dict[tuple[str, int], float] = {}


def _label(size: int) -> str:
    return f"{size // 1000} KB" if size < 1_000_000 else f"{size // 1_000_000} MB"


@pytest.mark.parametrize(
    ("size", "impl"),
    [
        pytest.param(size, impl, id=f"{_label(size)}-{impl.name}")
        for size in SIZES
        for impl in peers.partial_parsers()
    ],
)
def test_partial_json(benchmark: Any, size: int, impl: peers.Impl) -> None:
    doc = tool_arguments(size)
    frags = fragments(doc, 1, 8)
    expected = json.loads(doc)
    group = f"partial-json | {_label(size)} in 1-8 char fragments"
    extra: dict[str, Any] = {"bytes": len(doc.encode()), "fragments": len(frags), "size": size}
    smaller = [s for s in SIZES if s < size]
    if smaller and not impl.missing:
        prev = smaller[-1]
        took = _seen.get((impl.name, prev))
        if took is None:
            skip_row(group, impl.name, f"not run: the {_label(prev)} cell was not run", **extra)
        predicted = took * (size / prev) ** 2
        if predicted > LIMIT:
            skip_row(
                group,
                impl.name,
                f"not run: predicted {predicted:,.0f} s from the {_label(prev)} run "
                f"({took:.2f} s, quadratic)",
                predicted_seconds=predicted,
                **extra,
            )

    def check(result: Any) -> None:
        assert result == expected, impl.name

    measure(
        benchmark,
        impl,
        (frags,),
        group=group,
        check=check,
        primary=impl.name.startswith("streamfold"),
        budget=min(LIMIT, 2.0),
        **extra,
    )
    _seen[(impl.name, size)] = benchmark.extra_info["first_call_seconds"]


def _value_impls() -> list[peers.Impl]:
    def sf_value(acc: Any) -> Any:
        return acc.value()

    import orjson

    return [
        peers.Impl(
            "streamfold JsonAccumulator.value()",
            sf_value,
            peers.sf_missing("JsonAccumulator"),
        ),
        peers.Impl("json.loads", json.loads),
        peers.Impl("orjson.loads", orjson.loads),
    ]


@pytest.mark.parametrize("impl", _value_impls(), ids=lambda i: i.name)
def test_value_1mb(benchmark: Any, impl: peers.Impl) -> None:
    doc = tool_arguments(1_000_000)
    expected = json.loads(doc)

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        if impl.name.startswith("streamfold"):
            acc = peers.sf.JsonAccumulator()
            for f in fragments(doc, 4096, 4096):
                acc.push(f)
            return (acc,), {}
        return (doc,), {}

    def check(result: Any) -> None:
        assert result == expected

    measure(
        benchmark,
        impl,
        (),
        group="json-value | finished 1 MB document",
        check=check,
        primary=impl.name.startswith("streamfold"),
        setup=setup,
        bytes=len(doc.encode()),
    )
