"""The goals the issues set, checked against one run's figures: met, not met, or not measured
(with what is missing). Nothing here is a test: a benchmark never fails a build."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Any

from report import (
    PER_EVENT_GOALS,
    PER_EVENT_KINDS,
    MiB,
    Tables,
    fmt_ratio,
    per_event_ratio,
    per_stream,
)


@dataclass(frozen=True)
class Verdict:
    issue: str
    goal: str
    measured: str
    status: str  # "met" | "not met" | "not measured" | "reported" (no goal: a figure beside one)


def _ratio(tables: Tables, group: str, impl: str) -> float | None:
    t = tables.timed.get(group)
    return t.speedup(impl) if t is not None else None


def _at_least(issue: str, goal: str, pairs: list[tuple[str, float | None]], need: float) -> Verdict:
    """Every named ratio must be >= need."""
    got = [(label, r) for label, r in pairs if r is not None]
    if not got:
        return Verdict(issue, goal, "not measured (see Not measured)", "not measured")
    text = ", ".join(f"{fmt_ratio(r)} ({label})" for label, r in got)
    missing = [label for label, r in pairs if r is None]
    if missing:
        text += "; not measured: " + ", ".join(missing)
    ok = all(r >= need for _l, r in got)
    return Verdict(
        issue,
        goal,
        text,
        "met" if ok and not missing else ("not met" if not ok else "not measured"),
    )


def _per_event(tables: Tables, state: list[dict[str, Any]]) -> list[Verdict]:
    """Issue 21: fold and afold against the minimal folds at one event per read, for every
    stream kind; events() from 50 events up; the captures' cost per event; state per stream."""
    v: list[Verdict] = []
    for n, needs in PER_EVENT_GOALS.items():
        for mode, need in zip(("sync", "asyncio"), needs, strict=True):
            pairs = [(kind, per_event_ratio(tables, kind, n, mode)) for kind in PER_EVENT_KINDS]
            name = "fold" if mode == "sync" else "afold"
            v.append(
                _at_least(
                    "21",
                    f"`{name}` ≥ {need:g}x the minimal fold, {n:,} events, one event per read",
                    pairs,
                    need,
                )
            )
    pairs = []
    for t in tables.area("per-event-events"):
        _, kind, n = t.group.split(" | ")
        if int(n) >= 50:
            other = next((c for c in t.cells.values() if not c.primary), None)
            pairs.append((f"{kind}, {int(n):,}", other.ratio if other else None))
    v.append(
        _at_least(
            "21",
            "`events()` ≥ 2x the minimal framer + orjson + match, from 50 events up",
            pairs,
            2.0,
        )
    )
    reference = tables.timed.get("per-event | openai-text | 10000 | sync")
    ref_cell = reference.primary if reference is not None else None
    ref_per = per_stream(ref_cell)
    worst: tuple[float, str] | None = None
    if ref_cell is not None and ref_per:
        each_ref = ref_per / ref_cell.extra["stream_events"]
        for t in tables.area("per-event-captures"):
            per = per_stream(t.primary)
            if t.primary is None or per is None:
                continue
            ratio = per / t.primary.extra["stream_events"] / each_ref
            if worst is None or ratio > worst[0]:
                worst = (ratio, t.group.split(" | ", 1)[1])
    v.append(
        Verdict(
            "21",
            "every capture's cost per event (one event per read) within 1.5x of the "
            "10,000-event stream's",
            "not measured"
            if worst is None
            else f"worst {worst[0]:.1f}x ({worst[1]}); see the captures table",
            "not measured" if worst is None else ("met" if worst[0] <= 1.5 else "not met"),
        )
    )
    sf_state = next(
        (r for r in state if r["impl"] == "streamfold" and "bytes_per_stream" in r), None
    )
    v.append(
        Verdict(
            "21",
            "state kept per open stream ≤ 8 KiB",
            "not measured"
            if sf_state is None
            else f"{sf_state['bytes_per_stream'] / 1024:.1f} KiB",
            "not measured"
            if sf_state is None
            else ("met" if sf_state["bytes_per_stream"] <= 8 * 1024 else "not met"),
        )
    )
    return v


def _big(tables: Tables, mode: str, size: int) -> dict[str, Any] | None:
    rows = tables.records.get(f"big-event | {mode}", [])
    return next(
        (r for r in rows if r["impl"] == "streamfold" and r["size"] == size and "seconds" in r),
        None,
    )


def _cold(r: dict[str, Any]) -> float:
    """The first run's time in its fresh process (older results only have the best run)."""
    return float(r.get("cold_seconds", r["seconds"]))


def _median(r: dict[str, Any]) -> float:
    """The median run's time (older results only have the best run)."""
    return float(r.get("median_seconds", r["seconds"]))


def _callgrind_linear(callgrind: list[dict[str, Any]]) -> Verdict | None:
    """The accumulator's instructions per fragment at 10 KB and 100 KB: a noise-free check."""
    rows = {
        r["workload"]: r for r in callgrind if r["impl"] == "sf-partial" and "instructions" in r
    }
    small = rows.get("partial-json 10 KB, 1-8 char fragments")
    big = rows.get("partial-json 100 KB, 1-8 char fragments")
    if small is None or big is None:
        return None
    growth = big["instructions"] / small["instructions"]
    norm = growth * small["units"] * 10 / big["units"]
    return Verdict(
        "3",
        "partial JSON linear, by instruction count (callgrind): 10x the length ≤ 12x the work",
        f"10→100 KB: {growth:.1f}x the instructions for {big['units'] / small['units']:.1f}x "
        f"the fragments ({norm:.1f}x for exactly 10x)",
        "met" if norm <= 12 else "not met",
    )


def evaluate(
    tables: Tables, ceiling: list[dict[str, Any]], callgrind: list[dict[str, Any]] | None = None
) -> list[Verdict]:
    v: list[Verdict] = []
    for reads, need in (("16KiB", 5.0), ("1-64B", 4.0)):
        groups = {p: f"framing | {p} stream | {reads} reads" for p in ("openai", "anthropic")}
        # Judged against whichever hand-written framer is faster on that stream and read size
        # (the smaller ratio): the shortcuts of `minimal` pay at 16 KiB reads, the plain one's
        # simpler reads can win at 1-64 B. Both ratios are shown.
        pairs: list[tuple[str, float | None]] = []
        shown: list[str] = []
        for p, g in groups.items():
            fast, plain = _ratio(tables, g, "minimal"), _ratio(tables, g, "minimal, plain")
            known = [r for r in (fast, plain) if r is not None]
            pairs.append((p, min(known) if known else None))
            shown += [
                f"{fmt_ratio(r)} vs {name} ({p})"
                for name, r in (("minimal", fast), ("plain", plain))
                if r is not None
            ]
        verdict = _at_least(
            "2",
            f"framer ≥ {need:g}x the minimal framer at {reads} reads (the faster of the two)",
            pairs,
            need,
        )
        if shown:
            verdict = replace(verdict, measured=f"{verdict.measured}; " + ", ".join(shown))
        if verdict.status == "not met":
            # Issue 21 withdrew these: a framer that hands Python one object per event is at
            # its floor there; the figures stay, as a table of today's must not slow down.
            verdict = replace(verdict, status="withdrawn (issue 21)")
        v.append(verdict)
    r4, r1 = _big(tables, "4 KiB reads", 16 * MiB), _big(tables, "fed at once", 16 * MiB)
    if r4 and r1:
        # The first run, as a one-off big event meets cold caches and fresh memory. Neither
        # read pattern copies the event now (fed at once it refers to the input, read in
        # pieces it keeps them), so fed at once is one scan of the input, and repeated runs
        # find that input in the cache: the best and median runs are shown, not judged.
        b4, b1 = float(r4["seconds"]), float(r1["seconds"])
        m4, m1 = _median(r4), _median(r1)
        c4, c1 = _cold(r4), _cold(r1)
        ratio = c4 / c1
        v.append(
            Verdict(
                "2",
                "16 MiB event in 4 KiB reads ≤ 1.5x the time fed at once",
                f"{ratio:.2f}x ({c4 * 1e3:.2f} ms vs {c1 * 1e3:.2f} ms, first runs; "
                f"best runs {b4 / b1:.2f}x, median runs {m4 / m1:.2f}x)",
                "met" if ratio <= 1.5 else "not met",
            )
        )
        # Below zero when the event is made of the input's own bytes (nothing made in the run).
        beyond = max(0.0, *((r["peak_bytes"] - r["retained_bytes"]) / r["size"] for r in (r4, r1)))
        v.append(
            Verdict(
                "2",
                "16 MiB event: peak memory beyond the event < 2x its size",
                f"{beyond:.2f}x (worst of the two read patterns)",
                "met" if beyond < 2 else "not met",
            )
        )
    else:
        for goal in (
            "16 MiB event in 4 KiB reads ≤ 1.5x the time fed at once",
            "16 MiB event: peak memory beyond the event < 2x its size",
        ):
            v.append(Verdict("2", goal, "not measured", "not measured"))

    # issue 3
    sizes: list[tuple[int, float]] = []
    for t in tables.area("partial-json"):
        c = next((c for c in t.cells.values() if c.primary and c.median), None)
        if c is not None and c.median is not None:
            sizes.append((int(c.extra["bytes"]), c.median))
    sizes.sort()
    if len(sizes) >= 2:
        steps = []
        worst = 0.0
        for (b1, t1), (b2, t2) in itertools.pairwise(sizes):
            # time growth for a 10x longer text, normalised to exactly 10x
            growth = (t2 / t1) * (10 * b1 / b2)
            worst = max(worst, growth)
            steps.append(f"{b1 // 1000}→{b2 // 1000} KB: {growth:.1f}x")
        v.append(
            Verdict(
                "3",
                "partial JSON linear: 10x the length ≤ 12x the time",
                "; ".join(steps),
                "met" if worst <= 12 else "not met",
            )
        )
    else:
        v.append(
            Verdict(
                "3",
                "partial JSON linear: 10x the length ≤ 12x the time",
                "not measured",
                "not measured",
            )
        )
    stable = _callgrind_linear(callgrind or [])
    if stable is not None:
        v.append(stable)
    v.append(
        _at_least(
            "3",
            "partial JSON ≥ 50x the jiter re-parse at 100 KB",
            [
                (
                    "100 KB",
                    _ratio(tables, "partial-json | 100 KB in 1-8 char fragments", "jiter re-parse"),
                )
            ],
            50.0,
        )
    )
    v.append(
        _at_least(
            "3",
            "value() of a finished 1 MB document no slower than json.loads",
            [("1 MB", _ratio(tables, "json-value | finished 1 MB document", "json.loads"))],
            1.0,
        )
    )

    # issue 4
    v.append(
        _at_least(
            "4",
            "events() on the OpenAI-style stream ≥ 2x minimal framer + orjson",
            [("openai", _ratio(tables, "events | openai stream | 16KiB reads", "minimal+orjson"))],
            2.0,
        )
    )

    # issue 5
    v.append(
        _at_least(
            "5",
            "fold ≥ 2x the minimal fold",
            [
                (p, _ratio(tables, f"fold | {p} stream | 16KiB reads", "minimal fold"))
                for p in ("openai", "anthropic")
            ],
            2.0,
        )
    )
    v.append(
        _at_least(
            "5",
            "fold ≥ 100x the OpenAI SDK's ChatCompletionStreamState",
            [
                (
                    "openai",
                    _ratio(
                        tables,
                        "fold | openai stream | 16KiB reads",
                        "openai ChatCompletionStreamState",
                    ),
                )
            ],
            100.0,
        )
    )
    v.append(
        _at_least(
            "5",
            "fold ≥ 30x the Anthropic SDK's accumulate_event",
            [
                (
                    "anthropic",
                    _ratio(
                        tables,
                        "fold | anthropic stream | 16KiB reads",
                        "anthropic accumulate_event",
                    ),
                )
            ],
            30.0,
        )
    )

    # issue 6
    load = next(
        (
            rows
            for g, rows in tables.records.items()
            if g.startswith("load | ") and "memory kept" not in g
        ),
        [],
    )
    runs = [r for r in load if "seconds" in r]
    if runs:
        exact = all(r["exact_streams"] == r["streams"] for r in runs)
        v.append(
            Verdict(
                "6",
                "no event lost or duplicated under load",
                f"{sum(r['exact_streams'] for r in runs):,} of "
                f"{sum(r['streams'] for r in runs):,} streams exact over {len(runs)} runs",
                "met" if exact else "not met",
            )
        )
        cpu: dict[str, list[float]] = {}
        for r in runs:
            cpu.setdefault(r["impl"], []).append(r["cpu_seconds"] / r["events"])
        if "streamfold" in cpu and "httpx-sse" in cpu:
            sf_cpu, peer = sorted(cpu["streamfold"]), sorted(cpu["httpx-sse"])
            a, b = sf_cpu[len(sf_cpu) // 2], peer[len(peer) // 2]
            v.append(
                Verdict(
                    "6",
                    "less client CPU per event than httpx-sse + json.loads + fold",
                    f"{a * 1e6:.1f} µs vs {b * 1e6:.1f} µs ({b / a:.2f}x)",
                    "met" if a < b else "not met",
                )
            )
        else:
            v.append(
                Verdict(
                    "6",
                    "less client CPU per event than httpx-sse + json.loads + fold",
                    "not measured",
                    "not measured",
                )
            )
    else:
        v.append(
            Verdict("6", "no event lost or duplicated under load", "not measured", "not measured")
        )
    state = tables.records.get("load | memory kept per open stream (no transport)", [])
    sf_state = next(
        (r for r in state if r["impl"] == "streamfold" and "bytes_per_stream" in r), None
    )
    if sf_state:
        per = sf_state["bytes_per_stream"]
        v.append(
            Verdict(
                "6",
                "under 16 KiB of streamfold state per open stream",
                f"{per / 1024:.1f} KiB",
                "met" if per < 16 * 1024 else "not met",
            )
        )
    else:
        v.append(
            Verdict(
                "6",
                "under 16 KiB of streamfold state per open stream",
                "not measured",
                "not measured",
            )
        )

    # issue 21: the workload services run
    v += _per_event(tables, state)

    # issue 8: every curve linear
    v.append(_linear(tables))
    v.append(_hostile_linear(tables))
    v += _writers(tables)
    v += _transport(tables)
    return v


def _writers(tables: Tables) -> list[Verdict]:
    """Issue 24: the Writer against a hand-written one, the relay's CPU per event."""
    hand = "hand-written dict + json.dumps"
    out = [
        _at_least(
            "24",
            "Writer ≥ 3x a hand-written Python writer (dict + json.dumps + f-string)",
            [
                (
                    f"{source} events",
                    _ratio(tables, f"writer | {source} events as openai chunks", hand),
                )
                for source in ("anthropic", "openai")
            ],
            3.0,
        )
    ]
    group = "relay | anthropic stream to openai chunks | one event per read"
    t = tables.timed.get(group)
    prim = t.primary if t is not None else None
    events = prim.extra.get("events") if prim is not None else None
    if prim is None or prim.median is None or not events:
        out.append(Verdict("24", "relay CPU per event reported", "not measured", "not measured"))
    else:
        out.append(
            Verdict(
                "24",
                "relay CPU per event reported (anthropic -> openai, one event per read)",
                f"{prim.median / events * 1e6:.2f} µs per event",
                "met",
            )
        )
    litellm = t.cell("LiteLLM CustomStreamWrapper") if t is not None else None
    ratio = litellm.ratio if litellm is not None else None
    out.append(
        Verdict(
            "24",
            "relay ≥ 20x less CPU than LiteLLM's CustomStreamWrapper for the same translation",
            "not measured (LiteLLM not installed?)" if ratio is None else f"{ratio:.1f}x",
            "not measured" if ratio is None else ("met" if ratio >= 20 else "not met"),
        )
    )
    return out


def _hostile_linear(tables: Tables) -> Verdict:
    """The input shapes that fuzzing found quadratic (``test_hostile.py``) stay linear."""
    goal = "hostile inputs linear (time per unit at the largest size ≤ 1.3x the next smaller)"
    notes = []
    ok = True
    for t in tables.area("hostile"):
        pts = sorted(
            (int(c.extra["n"]), c.median / c.extra["n"]) for c in t.cells.values() if c.median
        )
        if len(pts) >= 2:
            g = pts[-1][1] / pts[-2][1]
            ok &= g <= 1.3
            shape = t.group.split(" | ", 1)[-1].split(":", 1)[0]
            notes.append(f"{shape} {pts[-2][0]:,}→{pts[-1][0]:,}: {g:.2f}x")
    if not notes:
        return Verdict("8", goal, "not measured", "not measured")
    return Verdict("8", goal, "; ".join(notes), "met" if ok else "not met")


def _linear(tables: Tables) -> Verdict:
    goal = "every scale curve linear (cost per unit at the largest size ≤ 1.3x the next smaller)"
    notes = []
    ok = True
    per_impl: dict[str, list[tuple[int, float]]] = {}
    for t in tables.area("scale"):
        for c in t.cells.values():
            if c.median and c.primary:
                per_impl.setdefault(c.impl, []).append((int(c.extra["n"]), c.median / c.extra["n"]))
    for impl, pts in sorted(per_impl.items()):
        pts.sort()
        if len(pts) >= 2:
            g = pts[-1][1] / pts[-2][1]
            ok &= g <= 1.3
            notes.append(f"{impl} {pts[-2][0] // 1000}k→{pts[-1][0] // 1000}k events: {g:.2f}x")
    rows = [
        r
        for r in tables.records.get("big-event | 4 KiB reads", [])
        if r["impl"] == "streamfold" and "seconds" in r
    ]
    rows.sort(key=lambda r: r["size"])
    if len(rows) >= 2:
        a, b = rows[-2], rows[-1]
        g = (_cold(b) / b["size"]) / (_cold(a) / a["size"])
        ok &= g <= 1.3
        notes.append(f"one event {a['size'] // MiB}→{b['size'] // MiB} MiB: {g:.2f}x per byte")
    if not notes:
        return Verdict("8", goal, "not measured", "not measured")
    return Verdict("8", goal, "; ".join(notes), "met" if ok else "not met")


def _median_key(rows: list[dict[str, Any]], impl: str, key: str) -> float | None:
    values = [r[key] for r in rows if r["impl"] == impl and key in r]
    return sorted(values)[len(values) // 2] if values else None


def _transport_median(tables: Tables, prefix: str, impl: str, key: str) -> float | None:
    for group, rows in tables.records.items():
        if group.startswith(prefix):
            value = _median_key(rows, impl, key)
            if value is not None:
                return value
    return None


def _transport(tables: Tables) -> list[Verdict]:
    """Issue 23: sf.Client against httpx + httpx-sse and uvloop + aiohttp, in one run. The
    goals are checked on the paced streams (one event per read, the workload services run);
    the flood's ratios are reported beside them."""
    cpu = "transport | "
    out = []
    for kind, label in (("paced", "1,000 x 100, one event per read"), ("flood", "flood")):
        prefix = f"transport | {kind}:"
        ours = _transport_median(tables, prefix, "sf.Client", "cpu_us_per_event")
        for peer, need in (("httpx-sse", 10.0), ("aiohttp", 3.0)):
            theirs = _transport_median(tables, prefix, peer, "cpu_us_per_event")
            goal = f"sf.Client ≥ {need:g}x less client CPU per event than {peer}, {label}"
            if kind == "flood":
                goal += " (reported)"
            if ours is None or theirs is None:
                out.append(Verdict("23", goal, "not measured", "not measured"))
                continue
            ratio = theirs / ours
            status = "met" if ratio >= need else "not met"
            out.append(
                Verdict(
                    "23",
                    goal,
                    f"{ratio:.2f}x ({ours:.1f} µs vs {theirs:.1f} µs)",
                    status if kind == "paced" else "reported",
                )
            )
    floor = _transport_median(tables, "transport | paced:", "floor", "cpu_us_per_event")
    ours = _transport_median(tables, "transport | paced:", "sf.Client", "cpu_us_per_event")
    aio = _transport_median(tables, "transport | paced:", "aiohttp", "cpu_us_per_event")
    if floor is not None and ours is not None and aio is not None:
        out.append(
            Verdict(
                "23",
                "sf.Client's and aiohttp's CPU per event against the event loop's floor "
                "(a protocol that only counts each read's bytes), one event per read (reported)",
                f"{ours / floor:.2f}x and {aio / floor:.2f}x the floor ({floor:.1f} µs): 3x "
                f"less than aiohttp would be {aio / 3:.1f} µs",
                "reported",
            )
        )
    text = _transport_median(tables, "transport | paced:", "sf.Client-text", "cpu_us_per_event")
    if text is not None and aio is not None:
        out.append(
            Verdict(
                "23",
                "text_stream then fold() against aiohttp, one event per read (reported)",
                f"{aio / text:.2f}x ({text:.1f} µs vs {aio:.1f} µs)",
                "reported",
            )
        )
    short = []
    for group, rows in tables.records.items():
        if not group.startswith("transport | short:"):
            continue
        events = group.split(" streams of ", 1)[1].split(" ", 1)[0]
        ours = _median_key(rows, "sf.Client", "cpu_us_per_stream")
        theirs = _median_key(rows, "aiohttp", "cpu_us_per_stream")
        if ours is not None and theirs is not None:
            short.append(
                f"{events} events: {ours:.0f} µs vs {theirs:.0f} µs ({theirs / ours:.2f}x)"
            )
    if short:
        out.append(
            Verdict(
                "23",
                "short streams, one event per read: sf.Client's client CPU per stream against "
                "aiohttp's (reported)",
                "; ".join(short),
                "reported",
            )
        )
    mem_ours = _transport_median(tables, cpu, "sf.Client", "bytes_per_stream")
    mem_httpx = _transport_median(tables, cpu, "httpx", "bytes_per_stream")
    goal = "memory per open stream below httpx's, 10,000 open"
    if mem_ours is None or mem_httpx is None:
        out.append(Verdict("23", goal, "not measured", "not measured"))
    else:
        out.append(
            Verdict(
                "23",
                goal,
                f"{mem_ours / 1024:.1f} KiB vs {mem_httpx / 1024:.1f} KiB",
                "met" if mem_ours < mem_httpx else "not met",
            )
        )
    for spread in (False, True):
        # Exact groups: the burst group's name is the start of the spread one's.
        rows = next(
            (
                rows
                for group, rows in tables.records.items()
                if group.startswith("transport | server write") and ("spread" in group) == spread
            ),
            [],
        )
        p99_ours = _median_key(rows, "sf.Client", "p99_ms")
        p99_aio = _median_key(rows, "aiohttp", "p99_ms")
        goal = "latency p99 (server write -> event in Python) no worse than aiohttp's"
        if spread:
            goal += ", writes spread over each 50 ms (reported)"
        if p99_ours is None or p99_aio is None:
            out.append(Verdict("23", goal, "not measured", "not measured"))
            continue
        status = "met" if p99_ours <= p99_aio else "not met"
        out.append(
            Verdict(
                "23",
                goal,
                f"{p99_ours:.1f} ms vs {p99_aio:.1f} ms",
                "reported" if spread else status,
            )
        )
    return out
