"""Instructions per ``sf.fold`` of the short one-event-per-read streams of ``per_event.py``,
for one or more source trees (each a directory holding an importable ``streamfold`` with a
release ``_core``), counted under callgrind: figures that do not move with the machine's load.

    K=20 python benches/ab_callgrind.py A_DIR B_DIR

A child per tree makes 3 warm-up folds of each stream, then K measured ones with the cyclic
garbage collector off (it runs at allocation counts, which would make the figures jump by
whole collections), and callgrind closes a profile part at each ``time.sleep``. Per-fold
instructions are printed for each tree, and the last tree's as a ratio of the first's."""

import glob
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD = r"""
import gc, sys, time, json
import streamfold as sf, per_event
specs = json.loads(sys.argv[1]); K = int(sys.argv[2])
for kind, n in specs:
    reads = per_event.reads(kind, n).reads; prov = per_event.PROVIDER[kind]
    for _ in range(3): sf.fold(iter(reads), provider=prov)
    gc.collect(); gc.disable()
    time.sleep(0)
    for _ in range(K): sf.fold(iter(reads), provider=prov)
    time.sleep(0)
    gc.enable()
"""


def run(tree: str, specs: list[tuple[str, int]], k: int) -> dict[str, float]:
    out_dir = tempfile.mkdtemp()
    env = dict(os.environ, PYTHONPATH=f"{tree}:{HERE}")
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out_dir}/cg.out",
        "--dump-before=time_sleep",
        "--dump-instr=no",
        "--collect-systime=no",
        sys.executable,
        "-c",
        CHILD,
        json.dumps(specs),
        str(k),
    ]
    subprocess.run(command, env=env, check=True, capture_output=True)
    parts: dict[int, int] = {}
    for name in glob.glob(f"{out_dir}/cg.out*"):
        number = re.search(r"\.(\d+)$", name)
        if number is None:
            continue
        with open(name) as file:
            text = file.read()
        total = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.M)
        assert total is not None, name
        parts[int(number.group(1))] = int(total.group(1))
    # Part 2i+1 is stream i's warm-up, part 2i+2 its K measured folds.
    return {f"{kind} {n}": parts[2 * i + 2] / k for i, (kind, n) in enumerate(specs)}


def main() -> None:
    trees = sys.argv[1:]
    kinds = ("openai-text", "anthropic-text", "openai-tools")
    specs = [(kind, n) for kind in kinds for n in (0, 5, 50, 500)]
    k = int(os.environ.get("K", "20"))
    results = [run(tree, specs, k) for tree in trees]
    heads = "".join(f"{'Ir ' + str(i):>12}" for i in range(len(trees)))
    print(f"{'stream':<22}{heads}   ratio")
    for key in results[0]:
        counts = "".join(f"{r[key]:12.0f}" for r in results)
        ratio = f"  {results[-1][key] / results[0][key]:6.3f}" if len(results) > 1 else ""
        print(f"{key:<22}{counts}{ratio}")


if __name__ == "__main__":
    main()
