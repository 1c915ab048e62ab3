"""Run one ``benches/memory.py`` measurement in a fresh interpreter, with a time limit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

_SCRIPT = Path(__file__).resolve().parent / "memory.py"


def run_child(args: list[str], timeout: float) -> dict[str, Any] | None:
    """The child's JSON result, or None when it ran past ``timeout`` seconds (it is killed)."""
    try:
        proc = subprocess.run(
            [sys.executable, str(_SCRIPT), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        raise RuntimeError(f"memory.py {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result
