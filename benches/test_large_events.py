"""One big event (issues 2 and 8): 1, 4, 16 and 64 MiB of data in one SSE event, read in 4 KiB
chunks and fed at once. Each cell runs in a fresh process (``memory.py``) for a clean peak
memory figure and so that a quadratic decoder can be stopped at ``TIMEOUT`` seconds; a larger
size is not tried for a decoder that ran out of time on a smaller one."""

from __future__ import annotations

import pytest

from harness import QUICK, record, skip_row
from peers import framers
from subproc import run_child

MiB = 1024 * 1024
SIZES = (1 * MiB, 4 * MiB) if QUICK else (1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB)
TIMEOUT = 10.0 if QUICK else 30.0
# The plain framer re-splits its whole remainder on every read: quadratic on one big event,
# as the peers are; those already show that.
IMPLS = [i for i in framers() if i.name != "minimal, plain"]
MODES = ("reads4k", "once")
_timed_out: dict[tuple[str, str], int] = {}
_seconds: dict[tuple[str, str], list[float]] = {}


@pytest.mark.once
@pytest.mark.parametrize(
    ("size", "mode", "impl"),
    [
        pytest.param(size, mode, impl, id=f"{size // MiB}MiB-{mode}-{impl.name}")
        for size in SIZES
        for mode in MODES
        for impl in IMPLS
    ],
)
def test_big_event(size: int, mode: str, impl: object) -> None:
    name = impl.name  # type: ignore[attr-defined]
    group = f"big-event | {'4 KiB reads' if mode == 'reads4k' else 'fed at once'}"
    extra = {"size": size, "bytes": size, "events": 1, "primary": name == "streamfold"}
    if impl.missing:  # type: ignore[attr-defined]
        skip_row(group, name, impl.missing, **extra)  # type: ignore[attr-defined]
    if (name, mode) in _timed_out:
        skip_row(
            group,
            name,
            f"not run: took over {TIMEOUT:.0f} s at {_timed_out[(name, mode)] // MiB} MiB",
            **extra,
        )
    history = _seconds.get((name, mode), [])
    if len(history) >= 2 and history[-2] > 0:
        # the growth seen over the last step, assumed to continue
        predicted = history[-1] * history[-1] / history[-2]
        if predicted > TIMEOUT:
            skip_row(
                group,
                name,
                f"not run: predicted {predicted:,.0f} s from the smaller sizes",
                predicted_seconds=predicted,
                **extra,
            )
    result = run_child(["big", name, str(size), mode], TIMEOUT)
    if result is None:
        _timed_out[(name, mode)] = size
        record(group, name, timeout=TIMEOUT, **extra)
        return
    _seconds.setdefault((name, mode), []).append(float(result["seconds"]))
    record(group, name, **{**extra, **result})
