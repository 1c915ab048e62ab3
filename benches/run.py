"""Run every benchmark and write BENCHMARKS.md (what ``make bench`` does).

    python benches/run.py                        # everything, 3 interleaved passes
    python benches/run.py --only framing fold    # some areas; writes target/bench-results/
    python benches/run.py --quick                # smoke run: small inputs, one pass
    python benches/run.py --report-only          # rewrite the report from saved results

Each pass runs the whole pytest-benchmark suite once (every implementation of a table right
after the others), so a table's figures come from the same minutes of the machine's life;
medians are taken over the passes, and each ratio is the median of the per-pass ratios.
One-shot measurements (subprocess timings, peak memory, the load run) run in the first pass.
Then the Rust-only ceiling (``cargo bench --bench ceiling``) and the instruction counts under
callgrind (``benches/callgrind.py``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import goals  # noqa: E402
import report  # noqa: E402

AREAS = {
    "per-event": ["test_per_event.py"],
    "framing": ["test_framing.py"],
    "events": ["test_events.py"],
    "fold": ["test_fold.py"],
    "partial-json": ["test_partial_json.py"],
    "profile": ["test_profile.py"],
    "scale": ["test_scale.py"],
    "hostile": ["test_hostile.py"],
    "large-events": ["test_large_events.py"],
    "load": ["test_load.py"],
    "writers": ["test_writers.py"],
    "transport": ["test_transport.py"],
}


@dataclass
class Results:
    """Everything one run measured, as saved under the results folder."""

    passes: list[dict[str, Any]] = field(default_factory=list)  # pytest-benchmark JSON
    records: list[dict[str, Any]] = field(default_factory=list)  # side channel rows
    ceiling: list[dict[str, Any]] = field(default_factory=list)
    callgrind: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    callgrind_error: str = ""

    @classmethod
    def load(cls, folder: Path) -> Results:
        r = cls()
        for p in sorted(folder.glob("pass-*.json")):
            r.passes.append(json.loads(p.read_text()))
        for p in sorted(folder.glob("records-*.jsonl")):
            r.records += [json.loads(line) for line in p.read_text().splitlines() if line]
        for name in ("ceiling", "callgrind"):
            p = folder / f"{name}.json"
            if p.exists():
                setattr(r, name, json.loads(p.read_text()))
        error = folder / "callgrind-error.txt"
        if error.exists():
            r.callgrind_error = error.read_text()
        meta = folder / "meta.json"
        if meta.exists():
            r.meta = json.loads(meta.read_text())
        return r


def _run(cmd: list[str], *, env: dict[str, str] | None = None, log: Path | None = None) -> int:
    print("$", " ".join(cmd), flush=True)
    if log is None:
        return subprocess.run(cmd, env=env, cwd=ROOT, check=False).returncode
    with log.open("w") as f:
        proc = subprocess.run(
            cmd, env=env, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, check=False
        )
    tail = log.read_text().strip().splitlines()[-1:] or [""]
    print("  ", tail[0], f"(log: {log.relative_to(ROOT)})", flush=True)
    return proc.returncode


def run_passes(out: Path, areas: Iterable[str], passes: int, quick: bool) -> None:
    files = [str(HERE / f) for a in areas for f in AREAS[a]]
    for k in range(passes):
        env = {
            **os.environ,
            "SF_BENCH_PASS": str(k),
            "SF_BENCH_RECORDS": str(out / f"records-{k}.jsonl"),
            "SF_BENCH_QUICK": "1" if quick else "0",
            "PYTHONHASHSEED": "0",
        }
        (out / f"records-{k}.jsonl").unlink(missing_ok=True)
        started = time.perf_counter()
        print(f"pass {k + 1}/{passes}", flush=True)
        _run(
            [
                sys.executable,
                "-m",
                "pytest",
                *files,
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "no:warnings",
                "-o",
                "addopts=",
                "--rootdir",
                str(HERE),
                f"--benchmark-json={out / f'pass-{k}.json'}",
                "--benchmark-columns=median,rounds",
                "--benchmark-sort=name",
            ],
            env=env,
            log=out / f"pass-{k}.log",
        )
        print(f"  pass {k + 1} took {time.perf_counter() - started:.0f} s", flush=True)


def run_ceiling(out: Path, data: Path) -> None:
    if shutil.which("cargo") is None:
        print("cargo not found: the Rust ceiling is skipped", flush=True)
        return
    log = out / "ceiling.log"
    rc = _run(["cargo", "bench", "--bench", "ceiling", "--", str(data)], log=log)
    rows = [
        json.loads(line.split(" ", 1)[1])
        for line in log.read_text().splitlines()
        if line.startswith("CEILING ")
    ]
    if rc != 0 or not rows:
        print(f"cargo bench failed (see {log})", flush=True)
        return
    (out / "ceiling.json").write_text(json.dumps(rows, indent=1))


def run_callgrind(out: Path, data: Path) -> None:
    if shutil.which("valgrind") is None:
        print("valgrind not found: instruction counts are skipped", flush=True)
        return
    log = out / "callgrind.log"
    _run(
        [
            sys.executable,
            str(HERE / "callgrind.py"),
            "--data",
            str(data),
            "--json",
            str(out / "callgrind.json"),
        ],
        log=log,
    )
    if not (out / "callgrind.json").exists():
        tail = [ln for ln in log.read_text().splitlines() if not ln.startswith("==")][-3:]
        (out / "callgrind-error.txt").write_text("\n".join(tail))
        print(f"callgrind failed (see {log})", flush=True)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        return ""


def collect_meta(started: float, quick: bool, passes: int, areas: list[str]) -> dict[str, Any]:
    import peers

    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    sf = peers.sf
    accumulator = "not present"
    if sf is not None and hasattr(sf, "JsonAccumulator"):
        native = getattr(sf._core, "JsonAccumulator", None) is sf.JsonAccumulator
        accumulator = "native (Rust)" if native else "pure-Python stand-in"
    return {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "duration_s": time.perf_counter() - started,
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory": mem,
        "os": f"{platform.system()} {platform.release()}",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "streamfold": getattr(sf, "__version__", "not importable"),
        "streamfold_build": os.environ.get("SF_BENCH_BUILD", "as installed"),
        "accumulator": accumulator,
        "git": (_git("rev-parse", "--short", "HEAD") or "?")
        + (
            " (with uncommitted changes)"
            if _git("status", "--porcelain", "--untracked-files=no")
            else ""
        ),
        "rustc": subprocess.run(
            ["rustc", "--version"], capture_output=True, text=True, check=False
        ).stdout.strip()
        if shutil.which("rustc")
        else "",
        "peers": {d: peers.version(d) for d in peers.PEER_DISTRIBUTIONS},
        "load_before": os.getloadavg(),
        "load_after": os.getloadavg(),
        "quick": quick,
        "passes": passes,
        "areas": areas,
        "sf_import_error": peers.SF_IMPORT_ERROR,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the benchmarks and write BENCHMARKS.md")
    parser.add_argument("--only", nargs="+", choices=sorted(AREAS), help="run only these areas")
    parser.add_argument("--passes", type=int, default=None, help="interleaved passes (3)")
    parser.add_argument("--quick", action="store_true", help="small inputs, one pass (smoke)")
    parser.add_argument("--no-ceiling", action="store_true", help="skip cargo bench")
    parser.add_argument("--no-callgrind", action="store_true", help="skip the callgrind counts")
    parser.add_argument("--results", type=Path, default=None, help="results folder")
    parser.add_argument("--output", type=Path, default=None, help="the report (BENCHMARKS.md)")
    parser.add_argument("--report-only", action="store_true", help="only rewrite the report")
    args = parser.parse_args()

    full = not args.only and not args.quick
    out = args.results or ROOT / "target" / ("bench-results" if full else "bench-results-partial")
    output = args.output or (ROOT / "BENCHMARKS.md" if full else out / "BENCHMARKS.md")
    areas = args.only or list(AREAS)
    passes = args.passes or (1 if args.quick else 3)
    data = ROOT / "target" / "bench-data"

    if not args.report_only:
        started = time.perf_counter()
        load_before = os.getloadavg()
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        import workloads

        workloads.write_all(data)
        run_passes(out, areas, passes, args.quick)
        if not args.no_ceiling and (full or "profile" in areas):
            run_ceiling(out, data)
        if not args.no_callgrind and full:
            run_callgrind(out, data)
        meta = collect_meta(started, args.quick, passes, areas)
        meta["load_before"] = load_before
        (out / "meta.json").write_text(json.dumps(meta, indent=1))

    results = Results.load(out)
    tables = report.Tables.build(results.passes, results.records)
    plots = report.plots(tables, output.parent / "benches" / "plots" if full else out / "plots")
    verdicts = goals.evaluate(tables, results.ceiling, results.callgrind)
    text = report.render(results, tables, verdicts, plots, output.parent)
    output.write_text(text, encoding="utf-8")
    print(f"wrote {output}")
    for v in verdicts:
        print(f"  {v.status:<8} {v.goal}: {v.measured}")


if __name__ == "__main__":
    main()
