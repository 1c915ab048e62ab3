"""Instruction counts under ``valgrind --tool=callgrind``: figures that stay put however busy
the machine is, for the headline workloads, streamfold against the minimal pure-Python
pipelines.

    python benches/callgrind.py [--data DIR] [--json OUT] [--only NAME ...]

One child interpreter runs under callgrind; for each (workload, implementation) it makes a
warm-up call and then one measured call, and callgrind closes a profile part around the
measured call (``--dump-before=time_sleep``), so each figure is one call's instructions, free
of start-up, imports and first-call costs. Inputs are the files ``benches/workloads.py DIR``
writes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_DATA = ROOT / "target" / "bench-data"

#: name -> (input file, reads, [(implementation, description)...]); the first is streamfold.
WORKLOADS: dict[str, tuple[str, str, list[str]]] = {
    "framing openai 16KiB": ("openai.sse", "16KiB", ["sf-frames", "minimal-frames"]),
    "framing openai 1-64B": ("openai.sse", "1-64B", ["sf-frames", "minimal-frames"]),
    "framing anthropic 16KiB": ("anthropic.sse", "16KiB", ["sf-frames", "minimal-frames"]),
    "framing+json openai 16KiB": ("openai.sse", "16KiB", ["sf-frames-json", "minimal-orjson"]),
    "events openai 16KiB": ("openai.sse", "16KiB", ["sf-events-openai", "minimal-orjson"]),
    "fold openai 16KiB": ("openai.sse", "16KiB", ["sf-fold-openai", "minimal-fold-openai"]),
    "fold anthropic 16KiB": (
        "anthropic.sse",
        "16KiB",
        ["sf-fold-anthropic", "minimal-fold-anthropic"],
    ),
    "partial-json 10 KB, 1-8 char fragments": (
        "args-10000.json",
        "fragments",
        ["sf-partial", "jiter-reparse"],
    ),
    # streamfold only: the re-parse would take minutes under valgrind; this row shows the
    # accumulator's cost per fragment staying flat from 10 KB to 100 KB
    "partial-json 100 KB, 1-8 char fragments": ("args-100000.json", "fragments", ["sf-partial"]),
}


def _impl(name: str) -> Callable[[Any], Any]:
    sys.path.insert(0, str(HERE))
    import minimal
    import peers

    table: dict[str, Callable[[Any], Any]] = {
        "sf-frames": peers.sf_frames,
        "minimal-frames": peers.minimal_frames,
        "sf-frames-json": peers.sf_frames_json,
        "minimal-orjson": peers.minimal_frames_orjson,
        "sf-events-openai": peers.sf_events("openai"),
        "sf-fold-openai": peers.sf_fold("openai"),
        "sf-fold-anthropic": peers.sf_fold("anthropic"),
        "minimal-fold-openai": minimal.fold_openai,
        "minimal-fold-anthropic": minimal.fold_anthropic,
        "sf-partial": peers.sf_partial,
        "jiter-reparse": peers.jiter_reparse,
    }
    return table[name]


def _inputs(path: Path, reads: str) -> Any:
    sys.path.insert(0, str(HERE))
    import workloads

    if reads == "fragments":
        return workloads.fragments(path.read_text(encoding="utf-8"), 1, 8)
    data = path.read_bytes()
    return workloads.READS[reads](data)


def _plan(only: list[str] | None) -> list[tuple[str, str, str, str]]:
    """(workload, implementation, input file, reads) in the order they run."""
    return [
        (name, impl, file, reads)
        for name, (file, reads, impls) in WORKLOADS.items()
        if not only or name in only
        for impl in impls
    ]


def child(data: Path, only: list[str] | None) -> None:
    """Warm up, then run each implementation once, between ``time.sleep(0)`` calls: callgrind
    (``--dump-before=time_sleep``) closes a part at each, so part 2k+2 is exactly run k."""
    for _name, impl, file, reads in _plan(only):
        fn = _impl(impl)
        args = _inputs(data / file, reads)
        fn(args)  # warm-up: imports inside the implementation, caches
        time.sleep(0)
        fn(args)
        time.sleep(0)


_PART = re.compile(rb"^part:\s*(\d+)", re.MULTILINE)
_TOTALS = re.compile(rb"^(?:totals|summary):\s*(\d+)", re.MULTILINE)


def _units(path: Path, reads: str) -> int:
    """Events in a stream, or fragments of a JSON text: what the per-unit figure divides by."""
    if reads == "fragments":
        return len(_inputs(path, reads))
    return path.read_bytes().count(b"\n\n")


def measure(data: Path, only: list[str] | None = None) -> list[dict[str, Any]]:
    plan = _plan(only)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            "--dump-before=time_sleep",
            "--dump-instr=no",
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            str(data),
            *(only or []),
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        proc = subprocess.run(cmd, capture_output=True, env=env, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr.decode()[-3000:]}")
        parts: dict[int, int] = {}
        for f in Path(tmp).glob("callgrind.out*"):
            text = f.read_bytes()
            part, total = _PART.search(text), _TOTALS.search(text)
            if part and total:
                parts[int(part.group(1))] = int(total.group(1))
    print(f"callgrind: {time.perf_counter() - start:.0f} s under valgrind", flush=True)
    rows = []
    for k, (name, impl, file, reads) in enumerate(plan):
        ins = parts[2 * k + 2]
        units = _units(data / file, reads)
        rows.append(
            {
                "workload": name,
                "impl": impl,
                "instructions": ins,
                "units": units,
                "per_unit": ins / units,
            }
        )
        print(f"{name:<40} {impl:<24} {ins:>15,} instr  {ins / units:>10,.0f}/unit", flush=True)
    return rows


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(Path(sys.argv[2]), sys.argv[3:] or None)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    if not (args.data / "openai.sse").exists():
        sys.path.insert(0, str(HERE))
        import workloads

        workloads.write_all(args.data)
    rows = measure(args.data, args.only)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
