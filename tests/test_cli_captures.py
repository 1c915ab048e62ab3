"""``streamfold inspect`` over every real capture in ../shared/captures (in-process, for speed).

The provider must be detected, the exit code must follow how the capture ended, and the raw
finish reason must be the provider's own value; no capture may hit an internal error.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import CAPTURE_PROVIDER, capture_files, capture_id, expected_for, requires_captures
from streamfold._cli.main import main


def expected_exit(expected: dict[str, object]) -> set[int]:
    if expected.get("error"):
        # An error event ends the stream (1); a fragment that starts mid-stream breaks the
        # format before its error event is reached (4).
        return {1, 4}
    if expected.get("terminal") == "eof" and not str(expected["capture"]).startswith("gemini"):
        return {3}  # no terminal event (Gemini's terminal is a finishReason, not an event)
    return {0}


def raw_finish(expected: dict[str, object]) -> object:
    message = expected.get("message")
    if isinstance(message, dict):
        return message.get("finish_reason")
    choices = expected.get("choices")
    assert isinstance(choices, list)
    return choices[0].get("finish_reason")


@requires_captures
@pytest.mark.parametrize("path", capture_files(), ids=capture_id)
def test_inspect_every_capture(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = expected_for(path)
    code = main(["inspect", str(path), "--json"])
    out, err = capsys.readouterr()
    assert code in expected_exit(expected), err
    assert "internal error" not in err
    data = json.loads(out)
    assert data["provider"] == CAPTURE_PROVIDER[path.parent.name]
    assert data["exit_code"] == code
    if code == 0:
        assert data["complete"] is True
        assert err == ""
        assert data["raw_finish_reason"] == raw_finish(expected)
    else:
        assert data["complete"] is False
        assert len(err.splitlines()) == 1


@requires_captures
@pytest.mark.parametrize("path", capture_files(), ids=capture_id)
def test_readable_view_of_every_capture(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["inspect", str(path), "--events", "--color", "never"])
    out, err = capsys.readouterr()
    assert code != 70, err
    assert out.startswith("source    ")
    assert "\ntimeline\n" in out
    assert "\nmessage" in out
