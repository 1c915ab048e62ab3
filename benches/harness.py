"""Shared machinery of the benchmarks: one ``measure`` that checks an implementation's result,
then times it with pytest-benchmark; a side channel for figures pytest-benchmark does not
hold (peak memory, subprocess runs, skip reasons), read back by ``benches/run.py``.

Environment:
  SF_BENCH_QUICK=1      small workloads, short budgets (a smoke run of every benchmark)
  SF_BENCH_RECORDS=path where the side-channel rows go (JSON lines)
  SF_BENCH_PASS=k       which interleaved pass this is; ``once`` benchmarks run in pass 0 only
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pytest

from peers import Impl

QUICK = os.environ.get("SF_BENCH_QUICK") == "1"
PASS = int(os.environ.get("SF_BENCH_PASS", "0"))
#: The headline stream length (events); the quick smoke run uses a tenth.
N_EVENTS = 1_000 if QUICK else 10_000
#: Seconds of timed calls per benchmark and pass (at least one call is always made).
BUDGET = 0.2 if QUICK else 1.0


def record(group: str, impl: str, **fields: Any) -> None:
    """Append one side-channel row for the report."""
    path = os.environ.get("SF_BENCH_RECORDS")
    if not path:
        return
    row = {"group": group, "impl": impl, "pass": PASS, **fields}
    with Path(path).open("a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


def measure(
    benchmark: Any,
    impl: Impl,
    args: tuple[Any, ...],
    *,
    group: str,
    check: Callable[[Any], None] | None = None,
    primary: bool = False,
    budget: float = BUDGET,
    setup: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]] | None = None,
    **extra: Any,
) -> Any:
    """Check ``impl`` once on ``args`` (this first call is also the warm-up), then time it.

    ``extra`` goes into the benchmark's ``extra_info`` (``events``, ``bytes``, sizes), which
    the report turns into rates. ``setup`` makes fresh arguments for every timed call.
    """
    benchmark.group = group
    benchmark.extra_info.update(impl=impl.name, primary=primary, **extra)
    if impl.missing:
        record(group, impl.name, skipped=impl.missing, primary=primary, **extra)
        pytest.skip(impl.missing)
    call_args = setup()[0] if setup else args
    start = time.perf_counter()
    result = impl.fn(*call_args)
    first = time.perf_counter() - start
    benchmark.extra_info["first_call_seconds"] = first
    if check is not None:
        check(result)
    rounds = max(1, min(300, int(budget / max(first, 1e-9))))
    if setup is not None:
        benchmark.pedantic(impl.fn, setup=setup, rounds=rounds, iterations=1)
    else:
        benchmark.pedantic(impl.fn, args=args, rounds=rounds, iterations=1)
    return result


def skip_row(group: str, impl: str, reason: str, **extra: Any) -> NoReturn:
    """Record why a cell was not measured, then skip it."""
    record(group, impl, skipped=reason, **extra)
    pytest.skip(reason)
