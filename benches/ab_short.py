"""A/B timing of ``sf.fold`` on short streams read one event per read, for two source trees of
the package measured in turns, so that both see the same load on a shared machine.

    python benches/ab_short.py A_DIR B_DIR [--rounds 7] [--sizes 0 5 50 500]

``A_DIR`` and ``B_DIR`` each hold an importable ``streamfold`` package (a checkout's ``python``
directory, with its built ``_core``). Each round runs one child interpreter per tree, in
turn; a child times ``sf.fold(iter(reads), provider=...)`` on ``per_event.reads(kind, n)``
and prints µs per fold (the best of several repeats). The table shows each tree's best round
and B's time as a ratio of A's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
KINDS = ("openai-text", "anthropic-text", "openai-tools")

CHILD = r"""
import json, sys, timeit
import streamfold as sf
import per_event

sizes = json.loads(sys.argv[1])
out = {}
for kind in per_event.KINDS:
    provider = per_event.PROVIDER[kind]
    for n in sizes:
        reads = per_event.reads(kind, n).reads
        def run(reads=reads, provider=provider):
            try:
                sf.fold(iter(reads), provider=provider)
            except sf.IncompleteStreamError:
                pass  # an empty stream: the fold's fixed cost, then its error
        number = max(1, 20_000 // (n + 10))
        best = min(timeit.repeat(run, number=number, repeat=5)) / number
        out[f"{kind} {n}"] = best * 1e6
print(json.dumps({"file": sf.__file__, "us": out}))
"""


def child(tree: Path, sizes: list[int]) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), str(HERE)]))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(sizes)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout)
    if not result["file"].startswith(str(tree)):
        raise SystemExit(f"{tree}: imported {result['file']} instead")
    found: dict[str, float] = result["us"]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 5, 50, 500])
    args = parser.parse_args()
    trees = [args.a.resolve(), args.b.resolve()]
    best: list[dict[str, float]] = [{}, {}]
    for _round in range(args.rounds):
        for i, tree in enumerate(trees):
            for key, us in child(tree, args.sizes).items():
                best[i][key] = min(us, best[i].get(key, us))
    print(f"{'stream':<22} {'A µs':>9} {'B µs':>9} {'B/A':>6}")
    for kind in KINDS:
        for n in args.sizes:
            key = f"{kind} {n}"
            a, b = best[0][key], best[1][key]
            print(f"{key:<22} {a:9.1f} {b:9.1f} {b / a:6.2f}")


if __name__ == "__main__":
    main()
