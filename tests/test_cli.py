"""The ``streamfold`` command, run as users run it: ``python -m streamfold`` in a subprocess."""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from streamfold._cli.demo import EXAMPLES, Example, examples_dir
from streamfold._cli.inspect import Outcome

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES_DIR = ROOT / "python" / "streamfold" / "examples"
BY_FILE = {example.file: example for example in EXAMPLES}


def env(**extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "STREAMFOLD_DEBUG")}
    out["PYTHONIOENCODING"] = "utf-8"
    out.update(extra)
    return out


def streamfold(
    *args: str, stdin: bytes | None = None, **extra_env: str
) -> subprocess.CompletedProcess[str]:
    raw = subprocess.run(
        [sys.executable, "-m", "streamfold", *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        cwd=ROOT,
        env=env(**extra_env),
        timeout=120,
        check=False,
    )
    result = subprocess.CompletedProcess(
        raw.args, raw.returncode, raw.stdout.decode("utf-8"), raw.stderr.decode("utf-8")
    )
    assert "Traceback" not in result.stderr, result.stderr
    assert "Traceback" not in result.stdout
    return result


def inspect_json(*args: str, stdin: bytes | None = None) -> tuple[int, dict[str, Any], str]:
    result = streamfold("inspect", *args, "--json", stdin=stdin)
    data: dict[str, Any] = json.loads(result.stdout)
    return result.returncode, data, result.stderr


def example(name: str) -> str:
    return f"examples/{name}"


# -- the shipped examples --------------------------------------------------------------------


def test_examples_folder_is_the_package_data_and_fully_catalogued() -> None:
    link = ROOT / "examples"
    assert link.is_symlink()
    assert link.resolve() == EXAMPLES_DIR.resolve()
    shipped = {p.name for p in EXAMPLES_DIR.iterdir() if p.suffix in (".sse", ".jsonl")}
    assert shipped == set(BY_FILE)
    # The package's own examples: the repository's folder under an editable install, a copy
    # of it inside a wheel (the suite also runs against the built wheel).
    installed = Path(str(examples_dir()))
    assert {p.name: p.read_bytes() for p in installed.iterdir() if p.is_file()} == {
        p.name: p.read_bytes() for p in EXAMPLES_DIR.iterdir() if p.is_file()
    }
    providers = {e.provider for e in EXAMPLES}
    assert providers >= {
        "openai",
        "mistral",
        "cohere-v2",
        "cohere-v1",
        "anthropic",
        "openai-responses",
        "gemini",
        "onecortex",
        "clouisle",
    }


@pytest.mark.parametrize("ex", EXAMPLES, ids=lambda e: e.file)
def test_inspect_every_example(ex: Example) -> None:
    result = streamfold("inspect", example(ex.file), *(["--timing"] if ex.timing else []))
    assert result.returncode == ex.outcome.exit_code, result.stderr
    assert f"provider  {ex.provider} (detected)" in result.stdout
    assert "timeline" in result.stdout
    assert "message" in result.stdout
    assert "\x1b[" not in result.stdout  # not a terminal: no colour
    if ex.outcome is Outcome.COMPLETE:
        assert result.stderr == ""
        assert "complete     yes" in result.stdout
    else:
        # One line of explanation; the partial message is still shown.
        assert len(result.stderr.splitlines()) == 1
        assert result.stderr.startswith("streamfold: ")
        assert "complete     no" in result.stdout


@pytest.mark.parametrize("ex", EXAMPLES, ids=lambda e: e.file)
def test_json_shape_on_every_example(ex: Example) -> None:
    code, data, _ = inspect_json(example(ex.file))
    assert code == ex.outcome.exit_code
    for key in (
        "provider",
        "text",
        "reasoning",
        "tool_calls",
        "citations",
        "usage",
        "finish_reason",
        "raw_finish_reason",
        "complete",
    ):
        assert key in data
    assert data["provider"] == ex.provider
    assert data["provider_detected"] is True
    assert data["complete"] is (ex.outcome is Outcome.COMPLETE)
    assert data["outcome"] == ex.outcome.label
    assert data["exit_code"] == ex.outcome.exit_code
    for call in data["tool_calls"]:
        assert set(call) >= {"id", "name", "arguments"}


def test_json_parallel_tool_calls() -> None:
    code, data, _ = inspect_json(example("openai_parallel_tools.sse"))
    assert code == 0
    assert data["finish_reason"] == "tool_calls"
    assert data["raw_finish_reason"] == "tool_calls"
    calls = [(c["id"], c["name"], c["arguments"], c["complete"]) for c in data["tool_calls"]]
    assert calls == [
        ("call_sfWeatherParis01", "get_weather", {"city": "Paris", "unit": "celsius"}, True),
        ("call_sfTimeTokyo02", "get_local_time", {"timezone": "Asia/Tokyo"}, True),
    ]
    assert data["usage"]["input_tokens"] == 96
    assert data["usage"]["output_tokens"] == 44
    assert data["text"] == ""


def test_json_citations_usage_and_truncation() -> None:
    _, cited, _ = inspect_json(example("cohere_v2_citations.sse"))
    text = cited["text"]
    assert text == "The Utrecht store expects the delivery on Tuesday at 9 am."
    [citation] = cited["citations"]
    assert text[citation["start"] : citation["end"]] == citation["text"] == "Tuesday at 9 am"
    assert citation["sources"][0]["id"] == "doc_0"
    assert cited["usage"]["input_tokens"] == 812  # tokens, not billed units
    code, cut, _ = inspect_json(example("cohere_v2_max_tokens.sse"))
    assert code == 0
    assert cut["complete"] is True
    assert (cut["finish_reason"], cut["raw_finish_reason"]) == ("length", "MAX_TOKENS")


def test_json_reasoning_and_agent_runs() -> None:
    _, thinking, _ = inspect_json(example("anthropic_thinking.sse"))
    assert thinking["reasoning"] == "27 is 3 cubed, so its cube root is exactly 3."
    assert thinking["text"].startswith("The cube root of 27 is **3**")
    assert thinking["usage"]["output_tokens"] == 61
    _, agent, _ = inspect_json(example("onecortex_agent.sse"))
    assert agent["text"] == "The sentence has 4 words."
    assert agent["tool_results"] == [
        {"call_id": "call_1", "name": "word_count", "output": "4", "is_error": False}
    ]
    assert [s["name"] for s in agent["steps"]] == ["count"]
    assert agent["warnings"] == []
    _, clouisle, _ = inspect_json(example("clouisle_agent.sse"))
    assert clouisle["sources"][0]["citation_id"] == "kb-42"
    assert any("sandbox_status" in w for w in clouisle["warnings"])


def test_stream_error_exits_1_with_the_partial_message() -> None:
    result = streamfold("inspect", example("anthropic_overloaded_error.sse"))
    assert result.returncode == 1
    assert "overloaded_error" in result.stderr and "Overloaded" in result.stderr
    assert "Here is a summary of the quarterly report: revenue grew" in result.stdout
    assert "✗ provider error" in result.stdout
    code, data, _ = inspect_json(example("anthropic_overloaded_error.sse"))
    assert code == 1
    assert data["complete"] is False
    assert data["error"]["type"] == "overloaded_error"
    assert data["text"] == "Here is a summary of the quarterly report: revenue grew"


def test_cut_connection_exits_3_and_is_never_a_short_answer() -> None:
    result = streamfold("inspect", example("openai_cut_connection.sse"))
    assert result.returncode == 3
    assert "without its terminal event" in result.stderr
    assert "The three largest moons of Jupiter are Ganymede, Callisto and" in result.stdout
    assert "partial event was dropped" in result.stdout
    code, data, _ = inspect_json(example("openai_cut_connection.sse"))
    assert code == 3
    assert data["complete"] is False
    assert data["finish_reason"] is None
    assert any("partial event was dropped" in w for w in data["warnings"])


def test_a_stream_cut_inside_a_tool_call_marks_it_incomplete(tmp_path: Path) -> None:
    body = (EXAMPLES_DIR / "openai_parallel_tools.sse").read_bytes()
    cut = body[: body.index(b"Asia/")]
    cut = cut[: cut.rindex(b"\n\n") + 2]
    path = tmp_path / "cut.sse"
    path.write_bytes(cut)
    code, data, err = inspect_json(str(path))
    assert code == 3
    assert "2 tool call(s)" in err
    first, second = data["tool_calls"]
    assert first["arguments_json"] == '{"city": "Paris", "unit": "celsius"}'
    assert (second["name"], second["arguments_json"]) == ("get_local_time", '{"timez')
    assert second["complete"] is False
    assert second["arguments"] is None
    assert second["error"]
    shown = streamfold("inspect", str(path)).stdout
    assert "[1] get_local_time id=call_sfTimeTokyo02 · incomplete" in shown
    assert 'arguments (unparsed) "{\\"timez"' in shown


def test_warnings_for_onecortex_mismatch_and_protocol_violations(tmp_path: Path) -> None:
    body = (EXAMPLES_DIR / "onecortex_agent.sse").read_text()
    mismatch = tmp_path / "mismatch.sse"
    mismatch.write_text(body.replace('"result":"The sentence has 4 words."', '"result":"Four."'))
    result = streamfold("inspect", str(mismatch))
    assert result.returncode == 0
    warnings = result.stdout[result.stdout.index("warnings (1)") :]
    assert "onecortex: the final result (5 characters) differs from the joined text" in warnings
    late = tmp_path / "late.sse"
    late.write_text(body + 'event: text\ndata: {"v":1,"type":"text","delta":" late"}\n\n')
    result = streamfold("inspect", str(late))
    assert result.returncode == 0
    assert "event after the terminal event" in result.stdout
    strict = streamfold("inspect", str(late), "--strict")
    assert strict.returncode == 4
    assert "event after the terminal event" in strict.stderr


def test_events_lists_every_delta() -> None:
    compact = streamfold("inspect", example("mistral_text.sse")).stdout
    every = streamfold("inspect", example("mistral_text.sse"), "--events").stdout
    assert "14 deltas" in compact
    assert "block_delta" not in compact
    assert every.count("block_delta[0]") == 14
    assert '" Meaux"' in every


def test_forced_provider_is_shown_as_forced() -> None:
    result = streamfold("inspect", example("mistral_text.sse"), "--provider", "openai")
    assert result.returncode == 0
    assert "provider  openai (forced with --provider)" in result.stdout


# -- stdin -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["cohere_v1_tool_call.jsonl", "gemini_thinking.sse", "openai_cut_connection.sse"]
)
def test_stdin_gives_the_same_fold_as_the_file(name: str) -> None:
    body = (EXAMPLES_DIR / name).read_bytes()
    code_file, from_file, _ = inspect_json(example(name))
    code_stdin, from_stdin, _ = inspect_json("-", stdin=body)
    assert code_stdin == code_file
    for key in ("provider", "text", "reasoning", "tool_calls", "finish_reason", "complete"):
        assert from_stdin[key] == from_file[key]


def test_stdin_timing_of_a_file_piped_at_once() -> None:
    body = (EXAMPLES_DIR / "openai_parallel_tools.sse").read_bytes()
    code, data, _ = inspect_json("-", "--timing", stdin=body)
    assert code == 0
    timing = data["timing"]
    assert timing["bytes"] == len(body)
    assert timing["events"] > 0
    assert "burst" not in [d["kind"] for d in timing["diagnoses"]]


# -- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "empty input"),
        (b"<!doctype html><html><body>502 Bad Gateway</body></html>\n", "not a stream"),
        (gzip.compress(b"data: {}\n\n"), "gzip"),
        (b'{"error": {"message": "Invalid API key"}}\n', "error response body"),
        (b'data: {"foo": 1}\n\ndata: {"bar": 2}\n\n', "cannot detect the provider"),
    ],
    ids=["empty", "html", "gzip", "error-body", "undetectable"],
)
def test_not_a_stream_is_a_clear_error(tmp_path: Path, body: bytes, message: str) -> None:
    path = tmp_path / "body.bin"
    path.write_bytes(body)
    result = streamfold("inspect", str(path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert message in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_wrong_provider_forced_says_so_and_suggests_the_right_one() -> None:
    result = streamfold("inspect", example("cohere_v2_citations.sse"), "--provider", "anthropic")
    assert result.returncode == 2
    assert "--provider anthropic does not match this stream" in result.stderr
    assert "try --provider cohere-v2" in result.stderr
    assert result.stdout == ""


def test_json_lines_forced_on_sse_is_a_clear_error() -> None:
    result = streamfold("inspect", example("anthropic_thinking.sse"), "--provider", "cohere-v1")
    assert result.returncode == 2
    assert "--provider cohere-v1 does not match this stream" in result.stderr
    assert "try --provider anthropic" in result.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full and sh")
@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("inspect examples/anthropic_thinking.sse >/dev/full", "No space left on device"),
        ("inspect examples/anthropic_thinking.sse --json >/dev/full", "No space left on device"),
        ("demo >/dev/full", "No space left on device"),
        ("inspect examples/anthropic_thinking.sse >&-", "standard output is closed"),
        ("demo >&-", "standard output is closed"),
    ],
)
def test_output_that_cannot_be_written_is_said_plainly(command: str, reason: str) -> None:
    # A full disk or a closed stdout is the environment, not a bug in streamfold: exit 2 with
    # the reason, not "internal error: OSError" / "AttributeError" (exit 70).
    result = subprocess.run(
        ["sh", "-c", f'"$0" -m streamfold {command}', sys.executable],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=ROOT,
        env=env(),
        timeout=120,
        check=False,
    )
    err = result.stderr.decode("utf-8")
    assert result.returncode == 2, err
    # Nothing else on stderr: no traceback, no "Exception ignored" from the flush at exit.
    assert err == f"streamfold: cannot write the output: {reason}\n"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("source", ["file", "stdin", "recording"])
def test_save_to_a_full_disk_is_said_plainly(source: str, tmp_path: Path) -> None:
    body = (EXAMPLES_DIR / "mistral_text.sse").read_bytes()
    if source == "recording":
        path = tmp_path / "run.rec"
        write_recording(path, body, [0.1, 0.2], 0.3)
        args, stdin = [str(path)], None
    else:
        args, stdin = ([example("mistral_text.sse")], None) if source == "file" else (["-"], body)
    result = streamfold("inspect", *args, "--save", "/dev/full", stdin=stdin)
    assert result.returncode == 2, result.stderr
    # Not "internal error: OSError" (exit 70), nor "cannot read stdin".
    assert result.stderr == "streamfold: --save /dev/full: cannot write: No space left on device\n"


def test_unreadable_input_and_bad_usage() -> None:
    missing = streamfold("inspect", "no/such/file.sse")
    assert missing.returncode == 2
    assert "cannot read no/such/file.sse" in missing.stderr
    unknown = streamfold("inspect", example("mistral_text.sse"), "--provider", "nope")
    assert unknown.returncode == 2
    assert "invalid choice" in unknown.stderr
    bare = streamfold()
    assert bare.returncode == 2


def test_broken_recording_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    path.write_text('{"streamfold_recording": 1}\n{"t": 0.5, "b64": "%%%"}\n')
    result = streamfold("inspect", str(path), "--timing")
    assert result.returncode == 2
    assert "looks like a streamfold recording, but line 2" in result.stderr


@pytest.mark.parametrize("provider", ["auto", "openai", "cohere-v1"])
def test_a_first_event_over_the_size_limit_is_a_protocol_error(
    tmp_path: Path, provider: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # An SSE event (or JSON line) of 17 MiB, first in the stream: the input is a stream whose
    # event breaks the limit (exit 4, saying so), not "no server-sent event" or "--provider
    # openai does not match this stream" (exit 2).
    from streamfold._cli.main import main

    big = b"a" * (17 * 2**20)
    path = tmp_path / "big.sse"
    path.write_bytes(
        b'{"text": "' + big + b'"}\n' if provider == "cohere-v1" else b"data: " + big + b"\n\n"
    )
    code = main(["inspect", str(path), "--provider", provider, "--color", "never"])
    out, err = capsys.readouterr()
    assert code == 4, err
    assert err.startswith("streamfold: protocol error: ")
    assert "larger than max_event_bytes=16777216" in err or "longer than max_line_bytes" in err
    assert "✗ protocol error" in out
    if provider == "auto":  # nothing was read whole to detect a provider from
        assert "\nprovider  auto (not detected: no frame was read whole)\n" in out


def test_protocol_error_partway_exits_4(tmp_path: Path) -> None:
    body = (EXAMPLES_DIR / "mistral_text.sse").read_bytes()
    frames = body.split(b"\n\n")
    frames.insert(5, b"data: {not json")
    path = tmp_path / "broken.sse"
    path.write_bytes(b"\n\n".join(frames))
    result = streamfold("inspect", str(path))
    assert result.returncode == 4
    assert result.stderr.startswith("streamfold: protocol error: ")
    assert "✗ protocol error" in result.stdout


def test_help_documents_the_exit_codes() -> None:
    result = streamfold("inspect", "--help")
    assert result.returncode == 0
    for line in ("0    the stream completed", "1    the provider reported an error", "3    "):
        assert line in result.stdout


# -- timing ----------------------------------------------------------------------------------


def write_recording(path: Path, body: bytes, times: list[float], end: float) -> None:
    size = -(-len(body) // len(times))
    lines = [json.dumps({"streamfold_recording": 1, "source": "test", "live": True})]
    for i, t in enumerate(times):
        chunk = body[i * size : (i + 1) * size]
        lines.append(json.dumps({"t": t, "b64": base64.b64encode(chunk).decode()}))
    lines.append(json.dumps({"t": end, "end": True}))
    path.write_text("\n".join(lines) + "\n")


def test_timing_on_the_shipped_burst_recording() -> None:
    result = streamfold("inspect", example("mistral_buffered.recording.jsonl"), "--timing")
    assert result.returncode == 0
    assert "diagnosis (burst)" in result.stdout
    assert "nothing for 6.84 s" in result.stdout
    assert "buffering reverse proxy" in result.stdout
    assert "first byte 6.84 s" in result.stdout
    code, data, _ = inspect_json(example("mistral_buffered.recording.jsonl"), "--timing")
    assert code == 0
    timing = data["timing"]
    assert [d["kind"] for d in timing["diagnoses"]] == ["burst"]
    assert timing["time_to_first_byte"] == pytest.approx(6.842)
    assert timing["sparkline"].endswith("█")
    assert data["text"] == "Three French cheeses: Comté, Roquefort and Brie de Meaux."


def test_timing_on_steady_arrivals_has_no_burst(tmp_path: Path) -> None:
    body = (EXAMPLES_DIR / "mistral_text.sse").read_bytes()
    times = [round(0.35 + 0.08 * i, 3) for i in range(17)]
    path = tmp_path / "steady.jsonl"
    write_recording(path, body, times, end=times[-1] + 0.01)
    result = streamfold("inspect", str(path), "--timing")
    assert result.returncode == 0
    assert "diagnosis" not in result.stdout
    assert "no transport problem seen" in result.stdout
    _, data, _ = inspect_json(str(path), "--timing")
    timing = data["timing"]
    assert timing["diagnoses"] == []
    assert timing["time_to_first_byte"] == pytest.approx(0.35)
    assert timing["events_per_second"] > 5
    assert timing["gap_max"] == pytest.approx(0.08, abs=1e-6)


def test_timing_of_a_stream_without_text_shows_no_token_rate(tmp_path: Path) -> None:
    # Tool calls only: no token to time, which is not "all at once".
    body = (EXAMPLES_DIR / "openai_parallel_tools.sse").read_bytes()
    path = tmp_path / "tools.jsonl"
    write_recording(path, body, [0.1, 0.2, 0.3, 0.4], end=0.5)
    result = streamfold("inspect", str(path), "--timing", "--color", "never")
    assert result.returncode == 0
    line = next(line for line in result.stdout.splitlines() if " events (" in line)
    assert " · 0 tokens (—) · " in line
    assert "all at once" not in line


def test_timing_on_a_stall_that_cut_the_stream(tmp_path: Path) -> None:
    body = (EXAMPLES_DIR / "openai_cut_connection.sse").read_bytes()
    times = [0.4, 0.5, 0.6, 0.7]
    path = tmp_path / "stall.jsonl"
    write_recording(path, body, times, end=30.7 + 0.2)
    code, data, err = inspect_json(str(path), "--timing")
    assert code == 3
    [diagnosis] = data["timing"]["diagnoses"]
    assert diagnosis["kind"] == "stall"
    assert "idle timeout" in diagnosis["message"]
    assert "without its terminal event" in err


def test_timing_on_a_plain_file_explains_why_there_is_none() -> None:
    result = streamfold("inspect", example("mistral_text.sse"), "--timing")
    assert result.returncode == 0
    assert "no arrival times" in result.stdout
    assert "--save" in result.stdout


WRITER = textwrap.dedent(
    """
    import sys, time
    body = open(sys.argv[1], "rb").read()
    parts = body.split(b"\\n\\n")
    time.sleep(0.3)
    for i, part in enumerate(parts):
        sys.stdout.buffer.write(part + (b"\\n\\n" if i < len(parts) - 1 else b""))
        sys.stdout.buffer.flush()
        time.sleep(float(sys.argv[2]))
    """
)


def test_save_live_stdin_then_replay_with_the_same_timing(tmp_path: Path) -> None:
    saved = tmp_path / "live.recording.jsonl"
    source = EXAMPLES_DIR / "mistral_text.sse"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(source), "0.06"], stdout=subprocess.PIPE
    )
    assert writer.stdout is not None
    live = subprocess.run(
        [sys.executable, "-m", "streamfold", "inspect", "-", "--timing", "--json", "--save", saved],
        stdin=writer.stdout,
        capture_output=True,
        cwd=ROOT,
        env=env(),
        timeout=120,
        check=False,
    )
    writer.stdout.close()
    assert writer.wait(timeout=60) == 0
    assert live.returncode == 0, live.stderr
    live_data = json.loads(live.stdout)
    live_timing = live_data["timing"]
    # Seventeen frames written 60 ms apart arrive as separate, spaced chunks (some may
    # coalesce while the reader starts up on a busy machine).
    assert live_timing["chunks"] >= 3
    assert live_timing["gap_max"] >= 0.04
    assert live_timing["diagnoses"] == []

    recording = saved.read_text().splitlines()
    header = json.loads(recording[0])
    assert header["streamfold_recording"] == 1
    assert header["live"] is True
    assert json.loads(recording[-1])["end"] is True
    chunks = [json.loads(line) for line in recording[1:-1]]
    assert b"".join(base64.b64decode(c["b64"]) for c in chunks) == source.read_bytes()
    times = [c["t"] for c in chunks]
    assert times == sorted(times)

    code, replay, _ = inspect_json(str(saved), "--timing")
    assert code == 0
    assert replay["text"] == live_data["text"]
    for key in ("chunks", "bytes", "events", "time_to_first_byte", "gap_max", "gap_median"):
        assert replay["timing"][key] == pytest.approx(live_timing[key], abs=2e-6)


@pytest.mark.skipif(sys.platform == "win32", reason="sends SIGINT")
def test_ctrl_c_on_a_live_stream_inspects_what_arrived(tmp_path: Path) -> None:
    # `curl -N ... | streamfold inspect -`, stopped with Ctrl-C after the first frames: what
    # arrived is shown, with the exit code of a stream cut before its terminal event (3); 130
    # is for an interrupt before any input. --help and docs/cli.md say so.
    saved = tmp_path / "live.rec"
    frame = b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"Bonjour"}}]}'
    live = subprocess.Popen(
        [sys.executable, "-m", "streamfold", "inspect", "-", "--save", str(saved)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=env(),
    )
    assert live.stdin is not None
    try:
        live.stdin.write(frame + b"\n\n")
        live.stdin.flush()
        for _ in range(1200):  # until the chunk is read (--save writes it at once)
            if saved.exists() and len(saved.read_text().splitlines()) >= 2:
                break
            time.sleep(0.05)
        live.send_signal(signal.SIGINT)
        out, err = live.communicate(timeout=60)
    finally:
        live.kill()
        live.stdin.close()
    assert live.returncode == 3, err
    assert b"interrupted: inspecting what arrived so far" in err
    assert b"Traceback" not in err
    assert b"Bonjour" in out

    usage = streamfold("inspect", "--help").stdout
    assert "130  interrupted (Ctrl-C) before any input arrived" in usage
    manual = " ".join((ROOT / "docs" / "cli.md").read_text("utf-8").split())
    assert "130 interrupted (Ctrl-C) before any input arrived" in manual
    assert "a stream stopped before its terminal event exits 3" in manual


def test_save_refuses_to_overwrite_its_input(tmp_path: Path) -> None:
    path = tmp_path / "s.sse"
    path.write_bytes((EXAMPLES_DIR / "mistral_text.sse").read_bytes())
    result = streamfold("inspect", str(path), "--save", str(path))
    assert result.returncode == 2
    assert "that is the input file" in result.stderr
    assert path.read_bytes() == (EXAMPLES_DIR / "mistral_text.sse").read_bytes()


# -- colour ----------------------------------------------------------------------------------


def run_on_tty(*args: str, **extra_env: str) -> str:
    pty = pytest.importorskip("pty")
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "streamfold", *args],
            stdout=follower,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=env(**extra_env),
            timeout=120,
            check=False,
        )
        os.close(follower)
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(leader)
    assert proc.returncode == 0, proc.stderr
    return out.decode("utf-8", "replace")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_colour_only_on_a_terminal_and_never_with_no_color() -> None:
    args = ("inspect", example("mistral_text.sse"))
    assert "\x1b[" in run_on_tty(*args)
    assert "\x1b[" not in run_on_tty(*args, NO_COLOR="1")
    assert "\x1b[" in streamfold(*args, "--color", "always").stdout


# -- demo ------------------------------------------------------------------------------------


def test_demo_runs_every_example_and_ends_with_the_summary() -> None:
    result = streamfold("demo")
    assert result.returncode == 0, result.stdout[-3000:]
    summary = result.stdout[result.stdout.rindex("\nsummary\n") :]
    for ex in EXAMPLES:
        line = next(line for line in summary.splitlines() if ex.file in line)
        assert line.startswith("✓"), line
        assert ex.provider in line
    assert "Every example behaved as expected" in result.stdout
    assert "\x1b[" not in result.stdout


def test_the_manual_lists_every_exit_code_the_command_uses() -> None:
    from streamfold._cli import main as cli

    manual = " ".join((ROOT / "docs" / "cli.md").read_text("utf-8").split())
    sentence = re.split(r"Exit codes[^:.]*:", manual, maxsplit=1)[1].split(".", 1)[0]
    documented = {int(n) for n in re.findall(r"\b(\d+) [a-z]", sentence)}
    used = {int(n) for n in re.findall(r"^  (\d+) ", cli._EXIT_CODES, re.MULTILINE)}
    assert documented == used


def test_a_whole_stream_of_another_provider_is_not_called_a_cut_connection() -> None:
    # Read as openai, an Anthropic stream has a usage openai can read but no terminal event:
    # the wrong --provider, not a dropped connection.
    result = streamfold("inspect", example("anthropic_thinking.sse"), "--provider", "openai")
    assert result.returncode == 2
    assert "--provider openai does not match this stream" in result.stderr
    assert "try --provider anthropic" in result.stderr
    assert "connection was cut" not in result.stderr
    assert "its first frames read as" not in result.stderr  # the library's own advice, once


def test_demo_exit_codes_are_documented_and_kept(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # `streamfold demo --help` lists its own exit codes (0 is "all as expected", not the
    # examples' own codes), and 1 names the example that did not behave as catalogued.
    from streamfold._cli import demo as cli_demo
    from streamfold._cli.main import main

    usage = streamfold("demo", "--help").stdout
    assert "exit codes:" in usage
    assert "0    every example behaved as its catalogue says" in usage
    assert "1    some example did not" in usage
    wrong = cli_demo.Example("mistral_text.sse", "mistral", Outcome.INCOMPLETE, "catalogued wrong")
    monkeypatch.setattr(cli_demo, "EXAMPLES", (BY_FILE["openai_parallel_tools.sse"], wrong))
    assert main(["demo", "--color", "never"]) == 1
    assert capsys.readouterr().out.endswith("not as expected: mistral_text.sse\n")


# -- hostile input ---------------------------------------------------------------------------


def _chat(delta: dict[str, Any], finish: str | None = None, **top: Any) -> bytes:
    chunk = {"id": "c", "object": "chat.completion.chunk", "model": "m", **top}
    chunk["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def _chat_stream(**top: Any) -> bytes:
    return _chat({"content": "hi"}, **top) + _chat({}, "stop") + b"data: [DONE]\n\n"


def _recording(*records: bytes) -> bytes:
    return b'{"streamfold_recording": 1, "source": "stdin"}\n' + b"".join(records)


#: Input a hostile upstream (or a doctored file) can send, and the provider to read it as.
HOSTILE: dict[str, tuple[bytes, str]] = {
    "message id an object": (_chat_stream(id={"x": 1}), "auto"),
    "message id a list": (_chat_stream(id=[1]), "auto"),
    "message id a number": (_chat_stream(id=5), "auto"),
    "model a float": (_chat_stream(model=1.5), "auto"),
    "cohere v1 event_type an object": (
        b'{"event_type": {"a": 1}, "is_finished": false}\n'
        b'{"event_type": "stream-start", "generation_id": "g", "is_finished": false}\n',
        "cohere-v1",
    ),
    "recording with a huge integer time": (
        _recording(b'{"t": ' + b"9" * 400 + b', "b64": ""}\n'),
        "auto",
    ),
    "recording with 100,000 nested brackets": (_recording(b"[" * 100_000 + b"\n"), "auto"),
    "recording header with 100,000 nested brackets": (
        b'{"streamfold_recording": ' + b"[" * 100_000 + b"\n",
        "auto",
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE))
@pytest.mark.parametrize("mode", ["text", "json"])
def test_hostile_input_never_exits_as_an_internal_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, mode: str
) -> None:
    # Each of these exited 70, "internal error, please report it".
    from streamfold._cli.main import main

    data, provider = HOSTILE[name]
    path = tmp_path / "input"
    path.write_bytes(data)
    extra = ["--json"] if mode == "json" else ["--color", "never"]
    code = main(["inspect", str(path), "--provider", provider, *extra])
    out, err = capsys.readouterr()
    assert "internal error" not in err
    assert code in (0, 2, 3, 4), (code, err)
    if code:
        assert err.startswith("streamfold: ")  # a message says what is wrong
    else:
        assert out


#: Terminal control sequences a stream can carry: a window title, a cleared screen, colours
#: and hidden text, a bell, DEL, a C1 CSI, a right-to-left override.
ATTACKS = ["\x1b]0;pwned\x07", "\x1b[2J", "\x1b[8m", "\x1b[31m", "\x07", "\x7f", "\x9b", "\u202e"]
#: Where each goes: the message id, the model, the text, a tool call's name and id, the
#: arguments, a warning (an unknown event's type), the provider's error message.
_PAYLOAD = "".join(ATTACKS)


def _attack_stream() -> bytes:
    function = {"name": "f" + _PAYLOAD, "arguments": json.dumps({"a": _PAYLOAD})}
    call = {"index": 0, "id": "call" + _PAYLOAD, "function": function}
    return (
        _chat({"content": "hi" + _PAYLOAD}, id="id" + _PAYLOAD, model="m" + _PAYLOAD)
        + _chat({"tool_calls": [call]})
        + f"event: x{_PAYLOAD}\ndata: {{}}\n\n".encode()
        + b"data: "
        + json.dumps({"error": {"message": "boom" + _PAYLOAD, "type": "server_error"}}).encode()
        + b"\n\n"
    )


@pytest.mark.parametrize(
    "options", [["--color", "never"], ["--color", "always"], ["--events"], ["--json"]]
)
def test_inspect_escapes_every_control_character_it_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str]
) -> None:
    # inspect reads untrusted input (curl -N ... | streamfold inspect -): a server could set
    # the terminal's title, clear the screen or hide text through it.
    from streamfold._cli.main import main

    path = tmp_path / "attack.sse"
    path.write_bytes(_attack_stream())
    code = main(["inspect", str(path), "--provider", "openai", *options])
    out, err = capsys.readouterr()
    assert code == 1  # the provider's error, after the content
    for stream in (out, err):
        own = re.sub(r"\x1b\[[0-9;]*m", "", stream) if "always" in options else stream
        raw = [hex(ord(c)) for c in own if c != "\n" and (ord(c) < 32 or 0x7F <= ord(c) <= 0x9F)]
        assert raw == []
        assert "\u202e" not in stream
        for attack in ATTACKS:
            # With colour on, inspect's own red is the same sequence as that attack.
            if not (attack == "\x1b[31m" and "always" in options):
                assert attack not in stream
    # Shown visibly, escaped as JSON escapes them: the message id, the error message.
    assert "\\u001b]0;pwned\\u0007" in out
    assert "boom\\u001b]0;pwned" in err
