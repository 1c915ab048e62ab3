"""Turn saved benchmark results into tables, plots and the text of BENCHMARKS.md."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MiB = 1024 * 1024


# ---------------------------------------------------------------------------------------------
# tables


@dataclass
class Cell:
    impl: str
    primary: bool = False
    median: float | None = None  # seconds: the median over passes of each pass's median
    per_pass: dict[int, float] = field(default_factory=dict)
    rounds: int = 0
    ratio: float | None = None  # this implementation's time / the primary's, median over passes
    ratio_range: tuple[float, float] | None = None  # lowest and highest per-pass ratio
    extra: dict[str, Any] = field(default_factory=dict)
    skipped: str | None = None


@dataclass
class Table:
    group: str
    cells: dict[str, Cell] = field(default_factory=dict)

    @property
    def primary(self) -> Cell | None:
        return next((c for c in self.cells.values() if c.primary and c.median), None)

    def cell(self, impl: str) -> Cell | None:
        return self.cells.get(impl)

    def speedup(self, impl: str) -> float | None:
        """How many times faster the primary (streamfold) row is than ``impl``."""
        c = self.cells.get(impl)
        return c.ratio if c is not None else None


@dataclass
class Tables:
    timed: dict[str, Table]
    records: dict[str, list[dict[str, Any]]]

    @classmethod
    def build(cls, passes: list[dict[str, Any]], records: list[dict[str, Any]]) -> Tables:
        timed: dict[str, Table] = {}
        for k, run in enumerate(passes):
            for b in run.get("benchmarks", []):
                info = b.get("extra_info", {})
                group = b.get("group") or "?"
                table = timed.setdefault(group, Table(group))
                impl = info.get("impl", b["name"])
                cell = table.cells.setdefault(impl, Cell(impl))
                cell.primary = bool(info.get("primary"))
                cell.per_pass[k] = b["stats"]["median"]
                cell.rounds += int(b["stats"]["rounds"])
                cell.extra = {**info, **cell.extra}
        by_group: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in records:
            by_group[row["group"]].append(row)
            if "skipped" in row and _is_timed_area(row["group"]):
                table = timed.setdefault(row["group"], Table(row["group"]))
                cell = table.cells.setdefault(row["impl"], Cell(row["impl"]))
                if not cell.per_pass:
                    cell.skipped = row["skipped"]
                    cell.primary = bool(row.get("primary"))
                    cell.extra = {k: v for k, v in row.items() if k not in ("group", "impl")}
        for table in timed.values():
            for cell in table.cells.values():
                if cell.per_pass:
                    cell.median = statistics.median(cell.per_pass.values())
                    cell.skipped = None
            prim = next((c for c in table.cells.values() if c.primary and c.per_pass), None)
            if prim is None:
                continue
            for cell in table.cells.values():
                ratios = [
                    t / prim.per_pass[k] for k, t in cell.per_pass.items() if k in prim.per_pass
                ]
                if ratios:
                    cell.ratio = statistics.median(ratios)
                    cell.ratio_range = (min(ratios), max(ratios))
        return cls(timed, dict(by_group))

    def area(self, prefix: str) -> list[Table]:
        return [t for g, t in self.timed.items() if g.split(" | ")[0] == prefix]

    def rows(self, prefix: str) -> dict[str, list[dict[str, Any]]]:
        return {g: rows for g, rows in self.records.items() if g.split(" | ")[0] == prefix}


_SIDE_ONLY = ("big-event", "stream-memory", "load")


def _is_timed_area(group: str) -> bool:
    return group.split(" | ", maxsplit=1)[0] not in _SIDE_ONLY


# ---------------------------------------------------------------------------------------------
# formatting


def fmt_time(s: float | None) -> str:
    if s is None:
        return "—"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} µs"


def fmt_rate(x: float | None, unit: str = "") -> str:
    if x is None:
        return "—"
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= div:
            return f"{x / div:.2f}{suffix}{unit}"
    return f"{x:.0f}{unit}"


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "—"
    if abs(n) >= MiB:
        return f"{n / MiB:.1f} MiB"
    if abs(n) >= 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n:.0f} B"


def fmt_ratio(r: float | None) -> str:
    if r is None:
        return "—"
    if r >= 100:
        return f"{r:,.0f}x"
    if r >= 10:
        return f"{r:.1f}x"
    return f"{r:.2f}x"


def _md_table(header: list[str], rows: Iterable[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def timed_table(table: Table, *, unit: str = "events") -> str:
    """One comparison table: median, rates, and how many times faster streamfold is."""
    header = [
        "implementation",
        "median",
        f"{unit}/s",
        "MB/s",
        "streamfold is … faster (range over passes)",
    ]
    rows = []
    for cell in table.cells.values():
        name = f"**{cell.impl}**" if cell.primary else cell.impl
        if cell.median is None:
            rows.append([name, "not run", "", "", cell.skipped or ""])
            continue
        count = cell.extra.get(unit)
        rate = count / cell.median if count else None
        nbytes = cell.extra.get("bytes")
        mbps = f"{nbytes / cell.median / 1e6:,.1f}" if nbytes else "—"
        if cell.primary:
            speed = "(baseline)"
        elif cell.impl.startswith("streamfold") and cell.ratio is not None:
            speed = f"(takes {cell.ratio:.2f}x the baseline's time)"
        else:
            speed = fmt_ratio(cell.ratio)
            if cell.ratio_range and len(cell.per_pass) > 1:
                lo, hi = cell.ratio_range
                speed += f" ({fmt_ratio(lo)[:-1]}-{fmt_ratio(hi)[:-1]})"
        rows.append([name, fmt_time(cell.median), fmt_rate(rate), mbps, speed])
    return _md_table(header, rows)


# ---------------------------------------------------------------------------------------------
# plots


def plots(tables: Tables, folder: Path) -> dict[str, Path]:
    """Small PNGs of the scale curves; returns name -> path of those written."""
    try:
        import matplotlib
        import matplotlib.ticker

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return {}
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}

    def save(fig: Any, name: str) -> None:
        path = folder / f"{name}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written[name] = path

    # events/s against events per stream: a flat line is a linear cost
    series: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for table in tables.area("scale"):
        for cell in table.cells.values():
            n = cell.extra.get("n")
            if cell.median and n:
                series[cell.impl].append((int(n), cell.extra["events"] / cell.median))
    if series:
        fig, ax = plt.subplots(figsize=(6, 3.6))
        for impl, pts in sorted(series.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=impl)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("events in the stream")
        ax.set_ylabel("events per second (median)")
        ax.set_title("OpenAI-style stream, 16 KiB reads: flat = linear", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        save(fig, "scale_events")

    # one big event: seconds and peak memory against its size
    by_impl: dict[str, list[tuple[int, float, float]]]
    for mode, label in (("4 KiB reads", "big_event_4k"), ("fed at once", "big_event_once")):
        rows = tables.records.get(f"big-event | {mode}", [])
        by_impl = defaultdict(list)
        for r in rows:
            if "seconds" in r:
                cold = r.get("cold_seconds", r["seconds"])
                by_impl[r["impl"]].append((r["size"], cold, r["peak_bytes"]))
        if not by_impl:
            continue
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.4))
        for impl, big in sorted(by_impl.items()):
            big.sort()
            xs = [p[0] / MiB for p in big]
            ax1.plot(xs, [p[1] for p in big], marker="o", label=impl)
            ax2.plot(xs, [p[2] / MiB for p in big], marker="o", label=impl)
        for ax in (ax1, ax2):
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
            ax.set_xlabel("event size (MiB)")
            ax.grid(True, which="both", alpha=0.3)
        ax1.set_ylabel("seconds")
        ax2.set_ylabel("peak memory growth (MiB)")
        ax1.set_title(f"one event, {mode}: time (cold run)", fontsize=9)
        ax2.set_title("peak memory", fontsize=9)
        ax2.legend(fontsize=7)
        save(fig, label)

    # partial JSON: seconds against document size
    by_impl2: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for table in tables.area("partial-json"):
        for cell in table.cells.values():
            size = cell.extra.get("bytes")
            if cell.median and size:
                by_impl2[cell.impl].append((int(size), cell.median))
    if by_impl2:
        fig, ax = plt.subplots(figsize=(6, 3.6))
        for impl, pts in sorted(by_impl2.items()):
            pts.sort()
            ax.plot([p[0] / 1000 for p in pts], [p[1] for p in pts], marker="o", label=impl)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arguments (KB), 1-8 char fragments, preview after each")
        ax.set_ylabel("seconds (median)")
        ax.set_title("partial JSON: total time vs document size", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        save(fig, "partial_json")
    return written


# ---------------------------------------------------------------------------------------------
# the report


REPRO = {
    "per-event": "python benches/run.py --only per-event",
    "framing": "python benches/run.py --only framing",
    "framing+json": "python benches/run.py --only framing",
    "events": "python benches/run.py --only events",
    "captures": "python benches/run.py --only events",
    "fold": "python benches/run.py --only fold",
    "client": "python benches/run.py --only fold",
    "partial-json": "python benches/run.py --only partial-json",
    "json-value": "python benches/run.py --only partial-json",
    "profile": "python benches/run.py --only profile",
    "scale": "python benches/run.py --only scale",
    "stream-memory": "python benches/run.py --only scale",
    "hostile": "python benches/run.py --only hostile",
    "big-event": "python benches/run.py --only large-events",
    "load": "python benches/run.py --only load",
    "transport": "python benches/run.py --only transport",
    "writer": "python benches/run.py --only writers",
    "relay": "python benches/run.py --only writers",
}


def _repro(area: str) -> str:
    return (
        f"Reproduce: `{REPRO[area]}` (with the bench environment: `make bench` installs it; "
        "`.venv/bin/python` then runs it)."
    )


def _section_timed(tables: Tables, area: str, title: str, intro: str, unit: str = "events") -> str:
    found = tables.area(area)
    if not found:
        return ""
    out = [f"### {title}", "", intro, "", _repro(area), ""]
    for t in found:
        out += [f"**{t.group.split(' | ', 1)[-1]}**", "", timed_table(t, unit=unit), ""]
    return "\n".join(out)


#: The goals of issue 21, minimal time / streamfold time, by stream length: (sync, asyncio).
PER_EVENT_GOALS = {5: (1.0, 1.0), 50: (2.5, 2.0), 500: (4.0, 2.5), 10_000: (4.0, 2.5)}
PER_EVENT_KINDS = {
    "openai-text": "OpenAI Chat, text",
    "anthropic-text": "Anthropic, text",
    "openai-tools": "OpenAI Chat, parallel tool calls",
}


def per_stream(cell: Cell | None) -> float | None:
    """Seconds per stream of a cell that timed a batch of ``streams`` streams per call."""
    if cell is None or cell.median is None:
        return None
    return cell.median / cell.extra.get("streams", 1)


def per_event_ratio(tables: Tables, kind: str, n: int, mode: str) -> float | None:
    """minimal time / streamfold time on one row of the headline table (same run)."""
    t = tables.timed.get(f"per-event | {kind} | {n} | {mode}")
    if t is None:
        return None
    other = next((c for c in t.cells.values() if not c.primary), None)
    return other.ratio if other is not None else None


def _section_per_event(tables: Tables) -> str:
    found = tables.area("per-event")
    if not found:
        return ""
    sizes = sorted({int(t.group.split(" | ")[2]) for t in found})
    rows = []
    for kind, label in PER_EVENT_KINDS.items():
        for n in sizes:
            cells: list[str] = [label, f"{n:,}"]
            for mode in ("sync", "asyncio"):
                t = tables.timed.get(f"per-event | {kind} | {n} | {mode}")
                if t is None:
                    cells += ["—", "—", "—"]
                    continue
                sf_cell = t.primary
                other = next((c for c in t.cells.values() if not c.primary), None)
                ratio = per_event_ratio(tables, kind, n, mode)
                need = PER_EVENT_GOALS.get(n, (None, None))[mode == "asyncio"]
                mark = "" if need is None or ratio is None or ratio >= need else " (goal "
                mark += f"{need:g}x)" if mark else ""
                cells += [
                    fmt_time(per_stream(sf_cell)),
                    fmt_time(per_stream(other)),
                    f"**{fmt_ratio(ratio)}**{mark}",
                ]
            rows.append(cells)
    head = [
        "stream",
        "events",
        "`sf.fold`",
        "minimal",
        "minimal / fold",
        "`sf.afold`",
        "minimal async",
        "minimal / afold",
    ]
    out = [
        "### One event per read: the workload services run",
        "",
        "Each SSE event its own read, as a model server that flushes every token makes them; "
        "streams of 5 to 10,000 events; sync over a list iterator, asyncio over an async "
        "generator (one event loop, the streams folded one after the other). The minimal "
        "folds (`benches/per_event.py`) handle what the stream holds: text, tool-call "
        "arguments by index, finish reason, usage. Times are per stream; the ratio is the "
        "median over passes of minimal time / streamfold time in the same pass (above 1: "
        "streamfold is faster). The 'OpenAI Chat' 5-event stream has one text delta; the "
        "Anthropic one has 6 events (message_start, block start, one delta, block stop, "
        "message_delta, message_stop).",
        "",
        _repro("per-event"),
        "",
        _md_table(head, rows),
        "",
    ]
    events_rows = []
    for t in tables.area("per-event-events"):
        _, kind, n = t.group.split(" | ")
        sf_cell = t.primary
        other = next((c for c in t.cells.values() if not c.primary), None)
        events_rows.append(
            [
                PER_EVENT_KINDS.get(kind, kind),
                f"{int(n):,}",
                fmt_time(per_stream(sf_cell)),
                fmt_time(per_stream(other)),
                f"**{fmt_ratio(other.ratio if other else None)}**",
            ]
        )
    if events_rows:
        out += [
            "**`sf.events()` at one event per read**, against the minimal framer + `orjson` "
            "+ a `match` on the event type making one small tuple per event (goal: at least "
            "2x from 50 events up):",
            "",
            _md_table(
                ["stream", "events", "`sf.events`", "minimal", "minimal / events"], events_rows
            ),
            "",
        ]
    reference = tables.timed.get("per-event | openai-text | 10000 | sync")
    ref_cell = reference.primary if reference is not None else None
    ref = (
        per_stream(ref_cell) / ref_cell.extra["stream_events"]
        if ref_cell is not None and per_stream(ref_cell)
        else None
    )
    capture_rows = []
    for t in tables.area("per-event-captures"):
        c = t.primary
        per = per_stream(c)
        if c is None or per is None:
            continue
        each = per / c.extra["stream_events"]
        capture_rows.append(
            [
                t.group.split(" | ", 1)[1],
                str(c.extra["stream_events"]),
                fmt_time(per),
                fmt_time(each),
                fmt_ratio(each / ref) if ref else "—",
            ]
        )
    if capture_rows:
        out += [
            "**The recorded captures at one event per read** (`../shared/captures`): the cost "
            "per event of `sf.fold`, against that of the 10,000-event OpenAI Chat stream "
            f"above ({fmt_time(ref)} per event); goal: within 1.5x.",
            "",
            _md_table(
                ["capture", "events", "per stream", "per event", "vs 10,000-event stream"],
                capture_rows,
            ),
            "",
        ]
    fixed_rows = []
    for t in tables.area("per-event-fixed"):
        c = t.primary
        fixed_rows.append([t.group.split(" | ", 2)[2], fmt_time(per_stream(c))])
    if fixed_rows:
        out += [
            "**The fixed cost of a stream** (`sf.fold` of an OpenAI Chat stream, one event per "
            "read): `empty` is a finish chunk and `[DONE]`, `5 events` the stream above.",
            "",
            _md_table(["stream", "per stream"], fixed_rows),
            "",
        ]
    return "\n".join(out)


def _section_big(tables: Tables) -> str:
    rows4 = tables.records.get("big-event | 4 KiB reads", [])
    rows1 = tables.records.get("big-event | fed at once", [])
    if not rows4 and not rows1:
        return ""
    impls: list[str] = []
    for r in rows4 + rows1:
        if r["impl"] not in impls:
            impls.append(r["impl"])
    sizes = sorted({r["size"] for r in rows4 + rows1})

    def find(rows: list[dict[str, Any]], impl: str, size: int) -> dict[str, Any] | None:
        return next((r for r in rows if r["impl"] == impl and r["size"] == size), None)

    def cell(r: dict[str, Any] | None) -> str:
        if r is None:
            return "—"
        if "skipped" in r:
            return (
                "not run"
                if "predicted" not in r.get("skipped", "")
                else "not run (predicted " + f"{r.get('predicted_seconds', 0):,.0f} s)"
            )
        if "timeout" in r:
            return f"> {r['timeout']:.0f} s (stopped)"
        # Below zero when the event's bytes were not made in the run: they are the input's.
        beyond = max(0.0, (r["peak_bytes"] - r["retained_bytes"]) / r["size"])
        cold = r.get("cold_seconds", r["seconds"])
        return (
            f"{fmt_time(r['seconds'])} (cold {fmt_time(cold)}), peak "
            f"{fmt_bytes(r['peak_bytes'])} ({beyond:+.1f}x)"
        )

    header = ["implementation", *[f"{s // MiB} MiB" for s in sizes]]
    out = [
        "### One big event",
        "",
        "One SSE event of 1-64 MiB (a JSON document: base64-like text with one emoji, so a "
        "`str` of it takes 4 bytes per character), read in 4 KiB chunks (cut before the run, "
        "as the input fed at once is made before it) and fed at once. Each "
        "cell is a fresh process: time is the best of the runs made in about a second (up to "
        "51), and in brackets the first "
        "run's (cold: every page of memory new to the process, as for a one-off big event; "
        "the plots and the verdict use it); peak is the growth of the "
        "resident set (VmHWM reset before the run) with the returned event held; in brackets "
        "the peak beyond the returned event's own data, in multiples of the event size "
        "(streamfold keeps the UTF-8 bytes; a Python `str` of this text takes 4 bytes per "
        "character; streamfold's event is made of the input's own bytes, which exist before "
        "the run, so its peak is only the list of them). A decoder whose run passed the time "
        "limit is not tried on larger events.",
        "",
        _repro("big-event"),
        "",
    ]
    for mode, rows in (("4 KiB reads", rows4), ("fed at once", rows1)):
        out += [f"**{mode}**", ""]
        out.append(
            _md_table(header, ([i, *[cell(find(rows, i, s)) for s in sizes]] for i in impls))
        )
        out.append("")
    return "\n".join(out)


def _section_profile(tables: Tables, ceiling: list[dict[str, Any]]) -> str:
    out = [
        "### The ceiling and where the time goes",
        "",
        "The Rust-only benchmark (`cargo bench --bench ceiling -- target/bench-data`, "
        "`rust/benches/ceiling.rs`) runs the framer and the JSON accumulator on the same bytes "
        "with no Python object made, beside a plain `memchr` scan for the blank lines that end "
        "events. Below it, the Python-facing path in stages on the same stream, each built on "
        "the one it names: a stage's cost is the difference to that one (noise can make a "
        "small difference negative).",
        "",
        _repro("profile") + " The Rust figures alone: `cargo bench --bench ceiling -- "
        "target/bench-data` after `python benches/workloads.py target/bench-data`.",
        "",
    ]
    if ceiling:
        rows = []
        for r in ceiling:
            rate = r["bytes"] / r["seconds"] / 1e6
            per = r["seconds"] * 1e9 / r["events"] if r["events"] else 0
            rows.append(
                [
                    r["group"].replace(" | ", ", "),
                    r["name"],
                    fmt_time(r["seconds"]),
                    f"{rate:,.0f}",
                    f"{per:,.1f}" if r["events"] > 1 else "—",
                ]
            )
        out += [
            "**Rust only** (median of repeated runs)",
            "",
            _md_table(["input", "what", "time", "MB/s", "ns per event / fragment"], rows),
            "",
        ]
    else:
        out += ["The Rust ceiling was not run (`cargo` missing or `--no-ceiling`).", ""]
    json_rows = []
    for table in tables.area("partial-json"):
        cell = table.primary
        if cell is None or cell.median is None:
            continue
        kb = int(cell.extra.get("size", 0)) // 1000
        rust = next(
            (
                r
                for r in ceiling
                if r["group"] == f"partial-json | {kb} KB" and r["name"].endswith("1-8B pushes")
            ),
            None,
        )
        if rust is None:
            continue
        json_rows.append(
            [
                f"{kb:,} KB",
                fmt_time(rust["seconds"]),
                fmt_time(cell.median),
                f"{cell.median / rust['seconds']:.1f}x",
            ]
        )
    if json_rows:
        out += [
            "**JSON accumulator: Rust only vs from Python** (the same texts in 1-8 byte or "
            "character fragments; Rust: "
            "`Accumulator::push` only; Python: `push()` plus a `partial()` preview after every "
            "fragment, building Python objects)",
            "",
            _md_table(
                ["arguments", "Rust only", "Python, with previews", "Python / Rust"], json_rows
            ),
            "",
        ]
    for table in tables.area("profile"):
        provider = table.group.split(" | ")[1].split()[0]
        rust = {r["name"]: r for r in ceiling if r["group"] == f"framing | {provider} stream"}
        rows = []
        prev: float | None = None
        for key, label in (
            ("memchr scan (whole input)", "0a Rust only: memchr scan for blank lines"),
            ("SseDecoder, 16KiB reads", "0b Rust only: SseDecoder, no Python objects"),
        ):
            found = rust.get(key)
            if found:
                per = found["seconds"] * 1e9 / found["events"]
                rows.append([label, f"{per:,.0f}", fmt_rate(1e9 / per), "", ""])
                prev = per if key.startswith("SseDecoder") else prev
        rust_framer = prev
        per_stage: dict[str, float] = {"0b": prev} if prev is not None else {}
        last = None
        for cell in table.cells.values():
            if cell.median is None:
                rows.append([cell.impl, "not run", "", "", cell.skipped or ""])
                continue
            per = cell.median * 1e9 / cell.extra["events"]
            parent = per_stage.get(str(cell.extra.get("parent")))
            share = f"the Rust framer is {rust_framer / per:.0%} of this" if rust_framer else ""
            delta = f"{per - parent:+,.0f}" if parent is not None else ""
            if parent is not None and per < parent:
                # this stage does not go through the one it names: it has a faster path
                delta = ""
                share = f"cheaper than stage {cell.extra.get('parent')}: takes its own faster path"
            rows.append([cell.impl, f"{per:,.0f}", fmt_rate(1e9 / per), delta, share])
            per_stage[str(cell.extra.get("stage"))] = per
            last = per
        out += [
            f"**{table.group.split(' | ', 1)[1]}**",
            "",
            _md_table(["stage", "ns/event", "events/s", "stage cost (ns/event)", "note"], rows),
            "",
        ]
        if all(k in per_stage for k in ("0b", "1", "3", "4", "5")):
            chain = [
                ("framing in Rust", per_stage["0b"]),
                ("making the event objects", per_stage["1"]),
                ("JSON to Python objects", per_stage["3"]),
                ("provider mapping", per_stage["4"]),
                ("folding", per_stage["5"]),
            ]
            # A stage cheaper than the one before it took a faster path of its own: merge the
            # two, so every share is a real cost.
            kept: list[tuple[str, float]] = []
            for label, cumulative in chain:
                name = label
                while len(kept) > 1 and cumulative < kept[-1][1]:
                    name = f"{kept.pop()[0]} + {name}"
                kept.append((name, cumulative))
            parts = [
                (label, cumulative - (kept[i - 1][1] if i else 0.0))
                for i, (label, cumulative) in enumerate(kept)
            ]
            total = per_stage["5"]
            text = "; ".join(f"{name} {ns:,.0f} ns ({ns / total:.0%})" for name, ns in parts)
            out += [
                f"Where the {total:,.0f} ns/event of `fold()` go: {text}. Making a `str` of "
                f"each event's data (stage 2) costs {per_stage.get('2', 0) - per_stage['1']:,.0f}"
                " ns/event on top of stage 1 for callers that read `.data`.",
                "",
            ]
        elif rust_framer and last:
            out += [
                f"The Rust framer alone is {rust_framer:,.0f} ns/event; the last stage "
                f"measured is {last:,.0f} ns/event.",
                "",
            ]
    return "\n".join(out)


def _section_scale(tables: Tables, plot_links: dict[str, str]) -> str:
    found = sorted(
        tables.area("scale"),
        key=lambda t: int(next(iter(t.cells.values())).extra.get("n", 0)) if t.cells else 0,
    )
    out = ["### Scale", "", _repro("scale"), ""]
    if found:
        counts = [int(next(iter(t.cells.values())).extra.get("n", 0)) for t in found]
        impls: list[str] = []
        for t in found:
            for c in t.cells:
                if c not in impls:
                    impls.append(c)
        rows = []
        for impl in impls:
            row = [impl]
            for t in found:
                cell = t.cells.get(impl)
                if cell is None or cell.median is None:
                    row.append("not run" if cell is None else f"not run: {cell.skipped}")
                else:
                    ev = cell.extra["events"]
                    per = cell.median * 1e9 / ev
                    row.append(f"{fmt_rate(ev / cell.median)} ({per:,.0f} ns/event)")
            rows.append(row)
        out += [
            "Events per second (and time per event) on the OpenAI-style stream at each length, "
            "16 KiB reads. Linear means the time per event stays flat.",
            "",
            _md_table(["implementation", *[f"{n:,} events" for n in counts]], rows),
            "",
        ]
    if "scale_events" in plot_links:
        out += [f"![time vs events]({plot_links['scale_events']})", ""]
    mem = tables.records
    for group, rows_ in mem.items():
        if not group.startswith("stream-memory"):
            continue
        table_rows = []
        for r in rows_:
            if "skipped" in r:
                table_rows.append([r["impl"], "not run", r["skipped"]])
            elif "timeout" in r:
                table_rows.append([r["impl"], f"> {r['timeout']:.0f} s", ""])
            else:
                table_rows.append([r["impl"], fmt_bytes(r["peak_bytes"]), fmt_time(r["seconds"])])
        out += [
            f"**Peak memory, {group.split(' | ', 1)[1]}** (made on the fly, never held whole; "
            "a fresh process per row; growth of the resident set during the run)",
            "",
            _md_table(["implementation", "peak memory growth", "time"], table_rows),
            "",
        ]
    for key, alt in (
        ("big_event_4k", "one big event, 4 KiB reads"),
        ("big_event_once", "one big event, fed at once"),
        ("partial_json", "partial JSON"),
    ):
        if key in plot_links:
            out += [f"![{alt}]({plot_links[key]})", ""]
    return "\n".join(out)


def _section_load(tables: Tables) -> str:
    out = []
    for group, rows in tables.records.items():
        if not group.startswith("load | ") or "memory kept" in group:
            continue
        by_impl: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            by_impl[r["impl"]].append(r)
        table_rows = []
        for impl, rs in by_impl.items():
            runs = [r for r in rs if "seconds" in r]
            if not runs:
                table_rows.append([impl, "not run", "", "", "", rs[0].get("skipped", "")])
                continue
            ev = runs[0]["events"]
            wall = statistics.median(r["seconds"] for r in runs)
            cpu = statistics.median(r["cpu_seconds"] for r in runs)
            peak = statistics.median(r["peak_bytes"] for r in runs)
            exact = all(r["exact_streams"] == r["streams"] for r in runs)
            table_rows.append(
                [
                    impl,
                    fmt_rate(ev / wall),
                    f"{cpu * 1e6 / ev:,.1f} µs",
                    fmt_bytes(peak / runs[0]["streams"]),
                    "yes" if exact else "NO",
                    f"{len(runs)} runs",
                ]
            )
        out += [
            f"**{group.split(' | ', 1)[1]}**",
            "",
            _md_table(
                [
                    "client stack",
                    "events/s",
                    "client CPU per event",
                    "peak memory per stream",
                    "every stream exact",
                    "note",
                ],
                table_rows,
            ),
            "",
        ]
    state = tables.records.get("load | memory kept per open stream (no transport)", [])
    if state:
        rows2 = [
            [r["impl"], "not run" if "skipped" in r else fmt_bytes(r["bytes_per_stream"])]
            for r in state
        ]
        out += [
            "**Memory kept per open stream by the library itself** (pipeline + fold state "
            "after the first 16 KiB read of the 10,000-event stream, no transport; resident-set "
            "growth / streams, 10,000 held, after one stream read first)",
            "",
            _md_table(["stack", "bytes per open stream"], rows2),
            "",
        ]
    if not out:
        return ""
    return "\n".join(
        [
            "### Load",
            "",
            "Concurrent streams through one `httpx.AsyncClient` against the project's test server "
            "(`tests/http_server.py`, aiohttp, in its own process on 127.0.0.1), the same stream "
            "for each: 100 text deltas with multi-byte text. streamfold: `sf.afold(response."
            "aiter_bytes(), provider='openai')`; the peer: `httpx_sse.aconnect_sse` + `json.loads` "
            "+ a minimal fold. Client CPU is the client process's CPU time (the server runs "
            "elsewhere); peak memory is the client's resident-set growth divided by the streams. "
            "'Every stream exact' means each stream's folded text equals the text sent: no event "
            "lost or duplicated. Runs interleaved, median shown.",
            "",
            _repro("load"),
            "",
            *out,
        ]
    )


def _median_of(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if key in r]
    return statistics.median(values) if values else None


def _section_transport(tables: Tables) -> str:
    """Issue 23: the native client under load, each measurement a fresh client process."""
    out: list[str] = []
    for group, rows in tables.records.items():
        if not group.startswith("transport | "):
            continue
        by_impl: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            by_impl[r["impl"]].append(r)
        table_rows = []
        for impl, rs in by_impl.items():
            skipped = next((r["skipped"] for r in rs if "skipped" in r), None)
            if skipped is not None:
                table_rows.append([impl, "not run", skipped])
                continue
            if "cpu_us_per_event" in rs[0]:
                cell = f"{_median_of(rs, 'cpu_us_per_event'):.1f} µs CPU per event"
                exact = all(r["exact_streams"] == r["streams"] for r in rs)
                note = f"{len(rs)} runs; every stream exact: {'yes' if exact else 'NO'}"
                if group.startswith("transport | short") and "cpu_us_per_stream" in rs[0]:
                    note = f"{cell}; {note}"
                    cell = f"{_median_of(rs, 'cpu_us_per_stream'):.0f} µs CPU per stream"
            elif "bytes_per_stream" in rs[0]:
                cell = fmt_bytes(_median_of(rs, "bytes_per_stream") or 0.0)
                note = f"{rs[0]['open']:,} streams open"
                tracked = _median_of(rs, "tracked_per_stream")
                if tracked is not None:
                    note += f"; {tracked:.0f} objects tracked by the garbage collector per stream"
            else:
                cell = (
                    f"p50 {_median_of(rs, 'p50_ms'):.2f} ms, p99 {_median_of(rs, 'p99_ms'):.1f} ms"
                )
                note = f"{rs[0]['events']:,} events"
            table_rows.append([impl, cell, note])
        out += [
            f"**{group.split(' | ', 1)[1]}**",
            "",
            _md_table(["client stack", "measured", "note"], table_rows),
            "",
        ]
    if not out:
        return ""
    return "\n".join(
        [
            "### Native client (sf.Client) under load",
            "",
            "A server in its own process (`benches/transport.py server`) writes each event of "
            "each stream on its own, as a model server does; each measurement runs in a fresh "
            "client process. `sf.Client`: `sf.astream(...).fold()`; `sf.Client-afold`: "
            "`sf.afold(response)`; `sf.Client-aevents`: `sf.aevents` over its response; "
            "`sf.Client-bytes`: its bytes into the minimal fold; `httpx-sse`: httpx + httpx-sse "
            "+ `json.loads` + a minimal fold; `aiohttp`: uvloop + aiohttp + orjson + a minimal "
            "fold; `floor`: an `asyncio.Protocol` on uvloop that writes the request and counts "
            "each read's bytes (no HTTP parsed, nothing folded; 'exact': every stream's byte "
            "count the first stream's), the least a client on an event loop can spend. CPU is "
            "the client process's (tokio's threads included); memory is its "
            "resident-set growth divided by the open streams; latency is from the server's "
            "write to the event in Python, every stream writing at the same moments. The short "
            "streams' CPU is per stream: the request, the connection's reads, the fold's set-up "
            "and its events, all of which a per-event figure of 100-event streams spreads thin.",
            "",
            _repro("transport"),
            "",
            *out,
        ]
    )


def _section_callgrind(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[r["workload"]].append(r)
    table = []
    for workload, rs in by.items():
        sf = next((r for r in rs if r["impl"].startswith("sf-")), None)
        for r in rs:
            if "instructions" not in r:
                table.append([workload, r["impl"], "failed", "", ""])
                continue
            ratio = ""
            if sf is not None and r is not sf and "instructions" in sf:
                ratio = fmt_ratio(r["instructions"] / sf["instructions"])
            table.append(
                [
                    workload,
                    r["impl"],
                    f"{r['instructions']:,}",
                    f"{r['per_unit']:,.0f}",
                    ratio or "(baseline)" if r is sf else ratio,
                ]
            )
    return "\n".join(
        [
            "### Instruction counts (callgrind)",
            "",
            "Instructions executed for one call on the same inputs, under `valgrind "
            "--tool=callgrind` (start-up, imports and the warm-up call excluded): these do not "
            "move with the machine's load. Fewer instructions is not always less time "
            "(memory-bound code runs more instructions per cycle), which is why the wall-clock "
            "tables are there too.",
            "",
            "Reproduce: `python benches/callgrind.py` (writes the inputs to target/bench-data if "
            "they are missing).",
            "",
            _md_table(
                [
                    "workload",
                    "implementation",
                    "instructions",
                    "per event / fragment",
                    "minimal / streamfold",
                ],
                table,
            ),
            "",
        ]
    )


def _section_skips(tables: Tables) -> str:
    seen = set()
    rows = []
    for t in tables.timed.values():
        for c in t.cells.values():
            if c.median is None and c.skipped and (t.group, c.impl) not in seen:
                seen.add((t.group, c.impl))
                rows.append([t.group, c.impl, c.skipped])
    for group, rs in tables.records.items():
        for r in rs:
            if "skipped" in r and (group, r["impl"]) not in seen and not _is_timed_area(group):
                seen.add((group, r["impl"]))
                rows.append([group, r["impl"], r["skipped"]])
    if not rows:
        return ""
    rows = [[r[0].replace(" | ", ", "), *r[1:]] for r in rows]
    return "\n".join(
        [
            "### Not measured",
            "",
            _md_table(["table", "implementation", "why"], rows),
            "",
        ]
    )


def render(
    results: Any,
    tables: Tables,
    verdicts: list[Any],
    plot_paths: dict[str, Path],
    base: Path,
) -> str:
    meta = results.meta
    links = {}
    for name, path in plot_paths.items():
        try:
            links[name] = str(path.resolve().relative_to(base.resolve()))
        except ValueError:
            links[name] = str(path)
    peers = meta.get("peers", {})
    load_before = meta.get("load_before") or []
    load_after = meta.get("load_after") or []
    env_rows = [
        ["date", meta.get("date", "?")],
        ["CPU", f"{meta.get('cpu', '?')} ({meta.get('cores', '?')} logical cores)"],
        ["memory", meta.get("memory", "?")],
        ["OS", meta.get("os", "?")],
        ["Python", meta.get("python", "?")],
        [
            "streamfold",
            f"{meta.get('streamfold', '?')} (git {meta.get('git', '?')}), build: "
            f"{meta.get('streamfold_build', '?')}; JsonAccumulator: "
            f"{meta.get('accumulator', '?')}",
        ],
        ["Rust", meta.get("rustc", "?")],
        [
            "machine load (1-min average) before / after",
            f"{load_before[0] if load_before else '?':.2f} / "
            f"{load_after[0] if load_after else '?':.2f}"
            if load_before and load_after
            else "?",
        ],
        [
            "passes",
            f"{meta.get('passes', '?')} interleaved"
            + (" (quick smoke run: small inputs)" if meta.get("quick") else ""),
        ],
        ["total time", f"{meta.get('duration_s', 0) / 60:.0f} min"],
    ]
    peer_rows = [[name, v] for name, v in peers.items()]
    status_mark = {"met": "met", "not met": "**not met**", "not measured": "not measured"}
    goal_rows = [
        [v.issue, v.goal, v.measured, status_mark.get(v.status, v.status)] for v in verdicts
    ]
    parts = [
        "# Benchmarks",
        "",
        "Written by `make bench` (`benches/run.py`); do not edit by hand. Every figure below was "
        "measured in the run described here, streamfold and its peers side by side on the same "
        "bytes. Each implementation's result is checked against the workload before it is "
        "timed (the same events, the same text and tool arguments), so a wrong answer cannot "
        "pass for a fast one.",
        "",
        "Reproduce everything: `make bench` (sets up `.venv` with the peers, builds the release "
        "extension, runs `benches/run.py`). Each table names the command that reproduces it.",
        "",
        "## Goals",
        "",
        "The targets the issues set, against this run.",
        "",
        _md_table(["issue", "goal", "measured", "status"], goal_rows),
        "",
        "## Machine and versions",
        "",
        _md_table(["", ""], env_rows),
        "",
        _md_table(["peer", "version"], peer_rows),
        "",
        "## Method",
        "",
        "- Workloads come from `benches/workloads.py` (seeded; `python benches/workloads.py "
        "DIR` writes them): 10,000-event OpenAI Chat Completions and Anthropic Messages "
        "streams with mixed ASCII and multi-byte text (about one word in five is accented, "
        "Cyrillic, CJK or an emoji) ending in one tool call whose arguments arrive in "
        "fragments; tool-call arguments of 1 KB to 1 MB; one event of 1-64 MiB; streams of "
        "1k/10k/100k events; and the recorded captures of `../shared/captures` when present.",
        "- Reads: `16KiB` is fixed 16 KiB chunks; `1-64B` is random 1 to 64 byte chunks "
        "(seeded), the worst case a slow network or a proxy produces.",
        "- Timings: pytest-benchmark, one warm-up/checking call then at least one timed call per "
        "pass (about 1 s of calls), garbage collector on, as in an application. A table's "
        "figure is the median over passes of each pass's median; 'streamfold is … faster' is "
        "the median over passes of (peer time / streamfold time) in the same pass. On a shared "
        "machine the wall-clock figures move by tens of percent from run to run; the ratios "
        "move less, and the callgrind counts not at all.",
        "- `minimal` is the hand-written pure-Python pipeline of `benches/minimal.py`: "
        '`split(b"\\n\\n")` with a remainder buffer and `bytes.decode`, handling only what '
        "these streams use (LF line ends, `event:` and `data:`), plus `orjson.loads` and a "
        "dictionary fold: the best a careful Python programmer does without a library. It "
        "decodes each read once and has a shortcut for one-line blocks; `minimal, plain` (in "
        "the framing tables only) is the same framer without them, each block decoded and "
        "split into lines. Each framing goal is judged against whichever of the two is "
        "faster on that stream and read size.",
        "- Peers are used as their users use them: httpx-sse's line and event decoders over an "
        "incremental UTF-8 decoder (what `EventSource.iter_sse` does); the OpenAI and Anthropic "
        "SDKs' `SSEDecoder.iter_bytes`; sseclient-py's `SSEClient(chunks).events()`; the OpenAI "
        "SDK's `ChatCompletionStreamState` fed `ChatCompletionChunk`s built as its `Stream` "
        "builds them; the Anthropic SDK's `accumulate_event` fed the decoded events; LiteLLM's "
        "`stream_chunk_builder` over the parsed chunks; LangChain's `AIMessageChunk` made per "
        "delta and summed with `+`; the SDK clients end to end over `httpx.MockTransport` "
        "(`client.chat.completions.stream()`, `client.messages.stream()`; these SDK versions "
        "ship on `httpx2`, so their mock transport is `httpx2.MockTransport`). LiteLLM is "
        "imported with `LITELLM_LOCAL_MODEL_COST_MAP=True` so that it makes no network call.",
        "- Memory figures come from fresh processes (`benches/memory.py`, `benches/load.py`): "
        "the growth of the resident set with the kernel's high-water mark reset before the "
        "run, which sees the Rust side's allocations too (`tracemalloc` would not).",
        "",
        "## Results",
        "",
        _section_per_event(tables),
        _section_timed(
            tables,
            "framing",
            "Framing",
            "SSE decoding alone: bytes in, events with their `event` and `data` read "
            "out. The goal (issue 2): at least 5x the minimal framer at 16 KiB reads "
            "and 4x at 1-64 byte reads.",
        ),
        _section_timed(
            tables,
            "framing+json",
            "Framing + JSON",
            "Decoding plus parsing every payload into Python objects (`[DONE]` "
            "excepted); streamfold parses in Rust (`ServerSentEvent.json()`).",
        ),
        _section_timed(
            tables,
            "events",
            "Provider events: `events()`",
            "`sf.events(chunks, provider=...)` (framing, JSON, provider mapping to "
            "the unified events) beside streamfold's framer alone and the usual "
            "hand-rolled stacks. The goal (issue 4): `events()` on the OpenAI-style "
            "stream at least 2x the minimal framer + `orjson.loads`.",
        ),
        _section_timed(
            tables,
            "captures",
            "Real captures",
            "The recorded streams of `../shared/captures`, all of a provider's "
            "captures in one call, each fed whole. They are small (a few KB), so "
            "per-call overhead weighs more than on the generated streams. The error "
            "captures end in a `StreamError` by design; that is counted as done.",
        ),
        _section_timed(
            tables,
            "fold",
            "Fold: the final message",
            "From bytes to the final assistant message (text, tool calls with parsed "
            "arguments, finish reason, usage). Goals (issue 5): at least 2x the "
            "minimal fold, 100x the OpenAI SDK's `ChatCompletionStreamState`, 30x "
            "the Anthropic SDK's `accumulate_event`.",
        ),
        _section_timed(
            tables,
            "client",
            "SDK clients end to end",
            "The whole request over `httpx.MockTransport` serving the stream in 16 "
            "KiB chunks: the SDK's own streaming helper against `sf.fold` over "
            "`response.iter_bytes()` of a plain `httpx.Client`.",
        ),
        _section_timed(
            tables,
            "partial-json",
            "Partial JSON",
            "Tool-call arguments pushed in 1-8 character fragments with a preview "
            "after every fragment (`JsonAccumulator.push` + `partial()`; the peers "
            "re-parse the whole buffer each time, as the SDKs do), then the final "
            "value. Goals (issue 3): linear in the length, at least 50x the jiter "
            "re-parse at 100 KB. Cells a quadratic peer would take too long for are "
            "not run; the prediction is given.",
            unit="fragments",
        ),
        _section_timed(
            tables,
            "json-value",
            "`value()` of a finished document",
            "A finished 1 MB document: `JsonAccumulator.value()` (fresh accumulator "
            "each round, text pushed in 4 KiB pieces beforehand) against "
            "`json.loads` and `orjson.loads` of the same text. Goal (issue 3): no "
            "slower than `json.loads`.",
            unit="bytes",
        ),
        _section_big(tables),
        _section_scale(tables, links),
        _section_timed(
            tables,
            "hostile",
            "Hostile inputs",
            "Input shapes that once cost quadratic time, found by fuzzing, at growing sizes; "
            "the first row of each table is the baseline. Linear means the time per unit "
            "(read, piece) stays flat: the goal (issue 8, as for the scale curves) is at most "
            "1.3x the time per unit at the largest size against the next smaller.",
            unit="units",
        ),
        _section_timed(
            tables,
            "writer",
            "Writers",
            '`sf.Writer("openai")` writing a stream\'s events as Chat Completions chunks, '
            "beside a hand-written Python writer (the chunk `dict`, `json.dumps`, "
            '`f"data: ...\\n\\n"`) for the same events. Goal (issue 24): at least 3x.',
        ),
        _section_timed(
            tables,
            "relay",
            "Relay",
            "`sf.relay` reading an Anthropic stream one event per read and writing it as "
            "Chat Completions chunks (parse, fold, write), beside a hand-written stack "
            "(lines, `json.loads`, the hand-written writer) and LiteLLM's proxy path (its "
            "Anthropic chunk parser, `CustomStreamWrapper`, `model_dump_json` per chunk). Goal "
            "(issue 24): CPU per event reported, and 20x less than LiteLLM.",
        ),
        _section_profile(tables, results.ceiling),
        _section_load(tables),
        _section_transport(tables),
        _section_callgrind(results.callgrind)
        or (
            "### Instruction counts (callgrind)\n\nNot available in this run: "
            + (results.callgrind_error.strip().replace("\n", " ") or "not run")
            + "\n"
        ),
        _section_skips(tables),
    ]
    text = "\n".join(p for p in parts if p is not None)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.rstrip() + "\n"
