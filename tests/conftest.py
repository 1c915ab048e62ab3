"""Shared fixtures: the async backends (asyncio and trio) and the shared captures."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from streamfold._types import ProviderName

settings.register_profile(
    "default", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("ci", max_examples=300, deadline=None)
settings.register_profile("thorough", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

#: ../shared/captures beside the project root, when present (never copied into the project).
CAPTURES = Path(__file__).resolve().parents[1].parent / "shared" / "captures"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def capture_files() -> list[Path]:
    """Every ``.sse`` capture, sorted; empty when the shared folder is absent."""
    if not CAPTURES.is_dir():
        return []
    return sorted(CAPTURES.glob("*/*.sse"))


def capture_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def expected_for(path: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(path.with_suffix(".expected.json").read_text("utf-8"))
    return result


#: Capture folder name -> streamfold provider name.
CAPTURE_PROVIDER: dict[str, ProviderName] = {
    "anthropic": "anthropic",
    "cohere_v1": "cohere-v1",
    "cohere_v2": "cohere-v2",
    "gemini": "gemini",
    "mistral": "mistral",
    "openai_chat": "openai",
    "openai_responses": "openai-responses",
}

requires_captures = pytest.mark.skipif(
    not CAPTURES.is_dir(), reason="../shared/captures is not present beside the project"
)
