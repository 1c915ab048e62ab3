"""pytest hooks of the benchmarks (the helpers they use live in ``harness``)."""

from __future__ import annotations

import pytest

from harness import PASS


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "once: a one-shot measurement (subprocess, memory), run in the first pass only"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if PASS == 0:
        return
    keep = [item for item in items if item.get_closest_marker("once") is None]
    dropped = [item for item in items if item.get_closest_marker("once") is not None]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
