"""``streamfold demo``: ``inspect`` over the example streams shipped in ``streamfold/examples``.

The examples were written for this project (not recorded from anyone's account), one per
provider, plus the endings that matter: a parallel tool-call turn, an answer truncated at the
token limit, an error inside a 200 response, a cut connection, and a recording whose arrival
times show a buffering proxy. Each example states what ``inspect`` must conclude; the demo
ends with a summary table and fails (exit 1) when an example did not behave as stated.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

from .inspect import Inspection, Outcome, inspect_stream
from .render import Style, render_inspection
from .timing import Arrival, Recording, is_recording, parse_recording

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

__all__ = ["EXAMPLES", "Example", "examples_dir", "load_example", "run_demo", "summarize"]


@dataclass(frozen=True, slots=True)
class Example:
    """One shipped stream and what ``inspect`` should make of it."""

    file: str
    #: The provider auto-detection must choose.
    provider: str
    outcome: Outcome
    shows: str
    timing: bool = False


EXAMPLES: tuple[Example, ...] = (
    Example(
        "openai_parallel_tools.sse",
        "openai",
        Outcome.COMPLETE,
        "parallel tool calls; usage chunk, choices: []",
    ),
    Example(
        "mistral_text.sse",
        "mistral",
        Outcome.COMPLETE,
        "role-only first delta; usage on finish chunk",
    ),
    Example(
        "cohere_v2_citations.sse",
        "cohere-v2",
        Outcome.COMPLETE,
        "citation after the text it cites",
    ),
    Example(
        "cohere_v2_max_tokens.sse",
        "cohere-v2",
        Outcome.COMPLETE,
        "truncated: MAX_TOKENS is finish 'length'",
    ),
    Example(
        "cohere_v1_tool_call.jsonl",
        "cohere-v1",
        Outcome.COMPLETE,
        "JSON lines; tool plan, streamed arguments",
    ),
    Example(
        "anthropic_thinking.sse",
        "anthropic",
        Outcome.COMPLETE,
        "signed thinking, ping, padded JSON",
    ),
    Example(
        "anthropic_overloaded_error.sse",
        "anthropic",
        Outcome.STREAM_ERROR,
        "error inside a 200 response, after text",
    ),
    Example(
        "openai_responses_function_call.sse",
        "openai-responses",
        Outcome.COMPLETE,
        "reasoning summary; a call keyed by call_id",
    ),
    Example(
        "gemini_thinking.sse",
        "gemini",
        Outcome.COMPLETE,
        "CRLF framing, thought part, cumulative usage",
    ),
    Example(
        "onecortex_agent.sse",
        "onecortex",
        Outcome.COMPLETE,
        "agent run: step, tool, result, done.result",
    ),
    Example(
        "clouisle_agent.sse",
        "clouisle",
        Outcome.COMPLETE,
        "retrieval, reasoning, tool; unknown event",
    ),
    Example(
        "openai_cut_connection.sse",
        "openai",
        Outcome.INCOMPLETE,
        "dropped mid-event: not a short answer",
    ),
    Example(
        "mistral_buffered.recording.jsonl",
        "mistral",
        Outcome.COMPLETE,
        "whole stream in one burst at the end",
        timing=True,
    ),
)


def examples_dir() -> Traversable:
    """The examples folder inside the installed package."""
    return resources.files("streamfold").joinpath("examples")


def load_example(name: str) -> Recording:
    data = examples_dir().joinpath(name).read_bytes()
    if is_recording(data):
        return parse_recording(data)
    return Recording([Arrival(0.0, data)], end=0.0, header={"live": False})


def summarize(inspection: Inspection) -> str:
    """A few words on what an inspection found, for the summary table."""
    m = inspection.message
    outcome = inspection.outcome
    if outcome is Outcome.STREAM_ERROR:
        code = getattr(inspection.error, "code", None)
        words = [f"stream error {code}" if code else "stream error"]
    elif outcome is Outcome.INCOMPLETE:
        words = ["cut: no terminal event"]
    elif outcome is not Outcome.COMPLETE:
        words = [outcome.label.replace("_", " ")]
    else:
        words = [f"finish {m.finish_reason}" if m is not None else "complete"]
    if m is not None:
        if m.tool_calls:
            words.append(f"{len(m.tool_calls)} tool call{'s' * (len(m.tool_calls) != 1)}")
        if m.citations:
            words.append(f"{len(m.citations)} citation{'s' * (len(m.citations) != 1)}")
    if inspection.warnings:
        words.append(f"{len(inspection.warnings)} warning{'s' * (len(inspection.warnings) != 1)}")
    if inspection.timing is not None:
        words.extend(d.kind for d in inspection.timing.diagnoses)
    return ", ".join(words)


def run_demo(out: SupportsWrite[str], style: Style) -> int:
    """Inspect every example, then print the summary; 0 when all behaved as stated."""
    where = examples_dir()
    out.write(
        style("streamfold demo", "bold") + f": {len(EXAMPLES)} example streams shipped in {where}\n"
        "Each is run through `streamfold inspect` (provider auto-detected).\n"
    )
    rows: list[tuple[Example, Inspection | str, bool]] = []
    for number, example in enumerate(EXAMPLES, 1):
        rule = f"── {number}/{len(EXAMPLES)} {example.file}: {example.shows} "
        out.write("\n" + style(rule + "─" * max(3, 96 - len(rule)), "bold") + "\n")
        try:
            inspection = inspect_stream(
                load_example(example.file),
                source=f"examples/{example.file}",
                timing=example.timing,
            )
        except Exception as exc:  # one broken example must not hide the others
            failure = f"internal error: {type(exc).__name__}: {exc}"
            out.write(style(f"  {failure}", "red") + "\n")
            rows.append((example, failure, False))
            continue
        ok = _as_expected(example, inspection)
        rows.append((example, inspection, ok))
        if inspection.outcome is Outcome.BAD_INPUT:
            out.write(f"  {inspection.explanation}\n")
        else:
            out.write(render_inspection(inspection, style))
        if inspection.explanation and inspection.outcome is not Outcome.BAD_INPUT:
            out.write(style(f"  → exit {inspection.exit_code}: {inspection.explanation}", "dim"))
            out.write("\n")
    out.write("\n" + _summary(rows, style))
    failed = [example.file for example, _, ok in rows if not ok]
    if failed:
        out.write(style(f"\nnot as expected: {', '.join(failed)}\n", "red"))
        return 1
    out.write(
        "\nEvery example behaved as expected. Try: "
        "streamfold inspect <file> [--events] [--json] [--timing]\n"
    )
    return 0


def _as_expected(example: Example, inspection: Inspection) -> bool:
    if inspection.outcome is not example.outcome or inspection.provider != example.provider:
        return False
    if example.timing:
        report = inspection.timing
        return report is not None and any(d.kind == "burst" for d in report.diagnoses)
    return True


def _summary(rows: list[tuple[Example, Inspection | str, bool]], style: Style) -> str:
    header = ("example", "provider", "exit", "result", "shows")
    table = [
        (
            example.file,
            inspection.provider,
            str(inspection.exit_code),
            summarize(inspection),
            example.shows,
        )
        if isinstance(inspection, Inspection)
        else (example.file, "?", "-", _cut(inspection, 40), example.shows)
        for example, inspection, _ in rows
    ]
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(4)]

    def line(cells: tuple[str, ...]) -> str:
        return (
            "  ".join(c.ljust(w) for c, w in zip(cells[:4], widths, strict=True)) + "  " + cells[4]
        )

    lines = [style("summary", "bold"), "  " + style(line(header), "dim")]
    for (_, _, ok), cells in zip(rows, table, strict=True):
        mark = style("✓", "green") if ok else style("✗", "red")
        lines.append(f"{mark} {line(cells)}")
    return "\n".join(lines) + "\n"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
