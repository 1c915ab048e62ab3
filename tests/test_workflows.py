"""The GitHub workflows, which cannot run here: their YAML parses, and they build and test
what the README promises (every system, CPython 3.10-3.14 and 3.14t, every wheel target)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

WORKFLOWS = Path(__file__).resolve().parents[1] / ".github" / "workflows"
PYTHONS = ["3.10", "3.11", "3.12", "3.13", "3.14", "3.14t"]


def load(name: str) -> dict[str, Any]:
    data = yaml.safe_load((WORKFLOWS / name).read_text("utf-8"))
    assert isinstance(data, dict)
    # YAML 1.1 reads the key `on` as True.
    assert "on" in data or True in data
    for job in data["jobs"].values():
        assert job["runs-on"] and job["steps"], job
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), step
    return data


def test_ci_lints_and_tests_every_system_and_python() -> None:
    jobs = load("ci.yml")["jobs"]
    assert any("make lint" in step.get("run", "") for step in jobs["lint"]["steps"])
    matrix = jobs["test"]["strategy"]["matrix"]
    assert matrix["os"] == ["ubuntu-latest", "macos-latest", "windows-latest"]
    assert matrix["python"] == PYTHONS
    runs = " ".join(step.get("run", "") for step in jobs["test"]["steps"])
    assert "tests/test_threads.py" in runs and "_is_gil_enabled" in runs


def test_release_builds_every_wheel_and_publishes_by_trusted_publishing() -> None:
    jobs = load("release.yml")["jobs"]
    linux = {(p["target"], p["manylinux"]) for p in jobs["linux"]["strategy"]["matrix"]["platform"]}
    assert linux == {
        ("x86_64", "2014"),
        ("aarch64", "2014"),
        ("x86_64", "musllinux_1_2"),
        ("aarch64", "musllinux_1_2"),
    }
    macos = {p["target"] for p in jobs["macos"]["strategy"]["matrix"]["platform"]}
    assert macos == {"x86_64", "aarch64"}
    for name in ("linux", "macos", "windows"):
        (build,) = [s for s in jobs[name]["steps"] if s.get("uses", "").startswith("PyO3/")]
        assert build["with"]["args"].split()[-len(PYTHONS) :] == PYTHONS
        assert "--features" not in build["with"]["args"]  # per-version wheels, not abi3
    assert jobs["sdist"]["steps"][-2]["with"]["command"] == "sdist"
    publish = jobs["publish"]
    assert publish["permissions"]["id-token"] == "write"
    assert set(publish["needs"]) == {"linux", "macos", "windows", "sdist"}
    assert publish["steps"][-1]["uses"] == "pypa/gh-action-pypi-publish@release/v1"
    assert "password" not in publish["steps"][-1].get("with", {})
