"""Rendering an :class:`~streamfold._cli.inspect.Inspection`: the readable view and ``--json``.

The readable view has four parts: a header (source, provider, counts), the timeline (one line
per block, or per event with ``--events``), the folded message, then warnings and, with
``--timing``, the arrival analysis. Colour is applied only through :class:`Style`, which the
command line enables for a terminal alone (and never when ``NO_COLOR`` is set).

``inspect`` reads untrusted input (``curl -N … | streamfold inspect -``): every value of the
stream is printed through :func:`visible`, which escapes the characters a terminal acts on,
so a stream cannot set the window title, clear the screen or hide text; and which shows a
value of an unexpected type (a message id that is an object) as its ``repr``.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from collections.abc import Iterable
from typing import IO, Any, ClassVar

from .._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    CitationAdded,
    Event,
    MediaAdded,
    MessageDelta,
    MessageEnd,
    MessageStart,
    Notice,
    RunStatus,
    SignatureDelta,
    SourcesAdded,
    StepEnd,
    StepStart,
    ToolResultAdded,
    Unknown,
    UsageUpdate,
)
from .._message import Citation, Message, Step, ToolCall, Usage
from .inspect import BlockSummary, Entry, Inspection, Outcome
from .timing import TimingReport

__all__ = [
    "Style",
    "color_wanted",
    "message_json",
    "render_inspection",
    "render_json",
    "visible",
]

_PREVIEW = 56

#: What a terminal acts on rather than shows: the C0 and C1 controls and DEL (escape
#: sequences, bells, backspaces), and the marks and overrides that reorder bidirectional text.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: What ``json.dumps`` leaves raw of those (it escapes the C0 controls itself).
_JSON_CONTROL = re.compile("[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match[0]
    return _SHORT_ESCAPES.get(char) or f"\\u{ord(char):04x}"


def visible(value: object) -> str:
    """``value`` as text safe to print: every control character escaped as JSON escapes it
    (``\\u001b``), as the timeline's previews show it; a value that is no ``str`` as its
    ``repr``."""
    text = value if isinstance(value, str) else repr(value)
    return _CONTROL.sub(_escape, text)


def _joined(values: Iterable[object], sep: str = " ") -> str:
    """The values that are set, made :func:`visible` and joined."""
    return sep.join(visible(value) for value in values if value)


class Style:
    """ANSI styling that is a no-op when disabled."""

    _CODES: ClassVar[dict[str, str]] = {
        "bold": "1",
        "dim": "2",
        "red": "31",
        "green": "32",
        "yellow": "33",
        "cyan": "36",
    }

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles or not text:
            return text
        codes = ";".join(self._CODES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"


def color_wanted(choice: str, stream: IO[str]) -> bool:
    """``auto``: colour only for a terminal, and never when ``NO_COLOR`` is set (no-color.org)."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


# -- readable view ---------------------------------------------------------------------------


def render_inspection(inspection: Inspection, style: Style) -> str:
    lines: list[str] = []
    lines.extend(_header(inspection, style))
    lines.append("")
    lines.append(style("timeline", "bold"))
    entries = inspection.timeline.entries
    if not entries:
        lines.append("  (no events)")
    for entry in entries:
        lines.append("  " + _entry_line(entry, style, every=inspection.timeline.every_event))
    ending = _ending_line(inspection)
    if ending:
        lines.append("  " + style(visible(ending), "red"))
    if inspection.message is not None:
        lines.append("")
        lines.extend(_message_section(inspection, style))
    if inspection.warnings:
        lines.append("")
        lines.append(style(f"warnings ({len(inspection.warnings)})", "bold", "yellow"))
        lines.extend(f"  - {visible(w)}" for w in inspection.warnings)
    if inspection.timing is not None:
        lines.append("")
        lines.extend(_timing_section(inspection.timing, style))
    elif inspection.timing_note:
        lines.append("")
        lines.append(style("timing", "bold"))
        lines.append(f"  {visible(inspection.timing_note)}")
    return "\n".join(lines) + "\n"


def _ending_line(inspection: Inspection) -> str:
    """The last line of the timeline when no terminal event ended the stream."""
    error = inspection.error
    if inspection.outcome is Outcome.STREAM_ERROR and error is not None:
        code = getattr(error, "code", None)
        what = f"{code}: " if code not in (None, "") else ""
        message = getattr(error, "message", str(error))
        return f"✗ provider error   {what}{_cut(' '.join(str(message).split()), 80)}"
    if inspection.outcome is Outcome.INCOMPLETE:
        return f"✗ end of input     after {inspection.bytes_seen} bytes, no terminal event"
    if inspection.outcome is Outcome.PROTOCOL_ERROR and error is not None:
        return f"✗ protocol error   {_cut(' '.join(str(error).split()), 80)}"
    return ""


def _header(inspection: Inspection, style: Style) -> list[str]:
    how = "detected" if inspection.detected else "forced with --provider"
    if inspection.provider == "auto":
        how = "not detected: no frame was read whole"  # e.g. a first event over the limit
    provider = style(visible(inspection.provider), "bold", "cyan")
    return [
        f"{style('source', 'bold')}    {visible(inspection.source)}",
        f"{style('provider', 'bold')}  {provider} ({how})",
        f"{style('read', 'bold')}      {inspection.bytes_seen} bytes, "
        f"{inspection.frames_seen} frames, {inspection.events_seen} events",
    ]


def _t(entry: Entry) -> str:
    return f"{entry.t:8.3f}s" if entry.t is not None else ""


def _entry_line(entry: Entry, style: Style, *, every: bool) -> str:
    seq = style(f"#{entry.seq:<4}", "dim")
    t = _t(entry)
    prefix = f"{seq} {style(t, 'dim')} " if t else f"{seq} "
    block = entry.block
    if block is not None and not every:
        label = _block_label(block)
        return prefix + f"{style(f'{label:<16}', 'cyan')} {visible(_block_detail(block))}"
    event = entry.event
    index = getattr(event, "index", None)
    choice = getattr(event, "choice", 0)
    name = event.type if not isinstance(index, int) else f"{event.type}[{index}]"
    if choice:
        name = f"c{choice} {name}"
    repeat = f" (x{entry.repeat})" if entry.repeat > 1 else ""
    colour = "red" if isinstance(event, Unknown) else "green" if event.type == "message_end" else ""
    name = visible(name)
    styled = style(f"{name:<16}", colour) if colour else f"{name:<16}"
    return prefix + f"{styled} {visible(_event_detail(event))}{repeat}".rstrip()


def _block_label(block: BlockSummary) -> str:
    choice = f"c{block.choice} " if block.choice else ""
    return visible(f"{choice}{block.kind}[{block.index}]")


def _block_detail(block: BlockSummary) -> str:
    parts: list[str] = []
    if block.kind == "tool_call":
        parts.append(visible(block.name or "?") + (f" id={visible(block.id)}" if block.id else ""))
    elif block.name or block.id:
        parts.append(_joined((block.name, block.id)))
    if block.whole:
        parts.append("whole")
    if block.deltas:
        parts.append(f"{block.deltas} delta{'s' if block.deltas != 1 else ''}, {block.chars} chars")
    if block.signature:
        parts.append("signed")
    if not block.closed:
        parts.append("never closed")
    preview = block.preview
    if not preview and block.data is not None:
        preview = _compact(block.data)
    if preview:
        parts.append(_quote(preview))
    return " · ".join(parts)


def _event_detail(event: Event) -> str:
    if isinstance(event, BlockStart):
        bits = [event.kind, event.name or "", f"id={visible(event.id)}" if event.id else ""]
        if event.complete:
            bits.append("whole")
        payload = event.arguments if event.arguments is not None else event.data
        if payload is not None:
            bits.append(_compact(payload))
        if event.text:
            bits.append(_quote(event.text))
        return _joined(bits)
    if isinstance(event, BlockDelta):
        return f"{event.kind} {_quote(event.text)}"
    if isinstance(event, BlockEnd):
        return event.kind
    if isinstance(event, SignatureDelta):
        return f"signature ({len(event.signature)} chars)"
    if isinstance(event, MessageStart):
        bits = [
            f"id={visible(event.id)}" if event.id else "",
            f"model={visible(event.model)}" if event.model else "",
        ]
        if event.choice:
            bits.append(f"choice={visible(event.choice)}")
        return _joined(bits)
    if isinstance(event, (MessageDelta, MessageEnd)):
        choice = f"choice={event.choice} " if event.choice else ""
        return f"{choice}finish={event.finish_reason} (raw {event.raw_finish_reason!r})"
    if isinstance(event, UsageUpdate):
        return _usage_line(event.usage)
    if isinstance(event, CitationAdded):
        return _citation_line(event.citation)
    if isinstance(event, (StepStart, StepEnd)):
        return _joined((event.name, f"id={visible(event.id)}" if event.id else ""))
    if isinstance(event, ToolResultAdded):
        r = event.result
        flag = " error" if r.is_error else ""
        name = visible(r.name or "")
        return f"{name} call={visible(r.call_id)}{flag} → {_quote(_compact(r.output))}".strip()
    if isinstance(event, SourcesAdded):
        if event.sources is None:
            return "retrieval did not run"
        return f"{len(event.sources)} source(s)"
    if isinstance(event, MediaAdded):
        return _quote(_compact(event.media))
    if isinstance(event, RunStatus):
        bits = [event.status, "terminal" if event.terminal else ""]
        if event.pending_tool_name:
            bits.append(f"waiting on {visible(event.pending_tool_name)}")
        return _joined(bits)
    if isinstance(event, Notice):
        return _joined((event.kind, event.message or ""))
    if isinstance(event, Unknown):
        return f"type={event.event_type!r}"
    return ""


def _message_section(inspection: Inspection, style: Style) -> list[str]:
    message = inspection.message
    assert message is not None
    choices = message.choices if len(message.choices) > 1 else [message]
    lines: list[str] = []
    for m in choices:
        if lines:
            lines.append("")
        title = "message" if len(choices) == 1 else f"message, choice {m.choice}"
        lines.append(style(title, "bold"))
        lines.extend(_message_lines(m, inspection, style))
    return lines


def _message_lines(m: Message, inspection: Inspection, style: Style) -> list[str]:
    out: list[str] = []

    def field(name: str, value: str) -> None:
        out.append(f"  {name:<12} {value}")

    if m.complete:
        field("complete", style("yes", "green"))
    else:
        label = {
            Outcome.STREAM_ERROR: "no: the provider reported an error",
            Outcome.INCOMPLETE: "no: the stream ended early (partial message)",
            Outcome.PROTOCOL_ERROR: "no: protocol error (partial message)",
        }.get(inspection.outcome, "no")
        field("complete", style(label, "red"))
    raw = f" (raw {visible(repr(m.raw_finish_reason))})" if m.raw_finish_reason is not None else ""
    finish = visible(m.finish_reason or "— (no terminal event)")
    field("finish", f"{finish}{raw}")
    if m.id or m.model:
        field("id", _joined((m.id, m.model), " · "))
    field("usage", _usage_line(m.usage) if m.usage is not None else "not reported")
    if m.status:
        field("run status", visible(m.status))
    if m.error is not None:
        field("error", style(_compact(m.error, 200), "red"))
    if m.reasoning:
        out.append("  reasoning")
        out.extend(_indent(m.reasoning, 4, style, "dim"))
    if m.tool_plan:
        out.append("  tool plan")
        out.extend(_indent(m.tool_plan, 4, style))
    if m.refusal:
        out.append("  refusal")
        out.extend(_indent(m.refusal, 4, style, "yellow"))
    out.append("  text" + ("" if m.text else "         (none)"))
    if m.text:
        out.extend(_indent(m.text, 4, style))
    if m.tool_calls:
        out.append(f"  tool calls ({len(m.tool_calls)})")
        for call in m.tool_calls:
            out.extend(_tool_call_lines(call, style))
    if m.pending_tool_call is not None:
        out.append("  pending tool call (run waiting)")
        out.extend(_tool_call_lines(m.pending_tool_call, style))
    if m.citations:
        out.append(f"  citations ({len(m.citations)})")
        out.extend(f"    - {visible(_citation_line(c))}" for c in m.citations)
    if m.tool_results:
        out.append(f"  tool results ({len(m.tool_results)})")
        for r in m.tool_results:
            flag = style(" error", "red") if r.is_error else ""
            name = f"{visible(r.name)} " if r.name else ""
            out.append(f"    - {name}call={visible(r.call_id)}{flag}: {_quote(_compact(r.output))}")
    if m.steps:
        out.append("  steps")
        out.extend(_step_lines(m.steps, 4))
    if m.sources is not None:
        out.append(f"  sources ({len(m.sources)})")
        out.extend(f"    - {visible(_source_label(s))}" for s in m.sources[:10])
    if m.media:
        out.append(f"  media ({len(m.media)})")
        out.extend(f"    - {_compact(x)}" for x in m.media)
    # The detection is in the header already; pings and warnings are shown elsewhere.
    hidden = ("ping", "warning", "provider_detected")
    notices = [n for n in m.notices if getattr(n, "kind", "") not in hidden]
    if notices:
        out.append("  notices")
        out.extend(f"    - {visible(_event_detail(n))}" for n in notices if isinstance(n, Notice))
    return out


def _tool_call_lines(call: ToolCall, style: Style) -> list[str]:
    state = style("complete", "green") if call.complete else style("incomplete", "red")
    head = f"    [{visible(call.index)}] {style(visible(call.name or '?'), 'bold')}"
    if call.id:
        head += f" id={visible(call.id)}"
    lines = [f"{head} · {state}"]
    if call.arguments is not None:
        lines.append(f"        arguments {_compact(call.arguments, 400)}")
    else:
        lines.append(f"        arguments (unparsed) {_quote(call.arguments_json, 400)}")
    if call.error:
        lines.append(f"        {style(visible(call.error), 'red')}")
    return lines


def _step_lines(steps: Iterable[Step], indent: int) -> list[str]:
    out: list[str] = []
    for step in steps:
        done = "" if step.complete else " (open)"
        out.append(" " * indent + f"- {visible(step.name or step.id or '?')}{done}")
        out.extend(_step_lines(step.children, indent + 2))
    return out


def _timing_section(report: TimingReport, style: Style) -> list[str]:
    def secs(value: float | None) -> str:
        if value is None:
            return "—"
        return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"

    def rate(value: float | None, count: int) -> str:
        if count == 0:
            return "—"  # none to time, rather than "all at once"
        return "— (all at once)" if value is None else f"{value:.1f}/s"

    lines = [style("timing", "bold")]
    lines.append(
        f"  first byte {secs(report.time_to_first_byte)} · first event "
        f"{secs(report.time_to_first_event)} · first token {secs(report.time_to_first_token)}"
    )
    lines.append(
        f"  gaps between events: median {secs(report.gap_median)} · p99 {secs(report.gap_p99)}"
        f" · max {secs(report.gap_max)}"
    )
    lines.append(
        f"  {report.events} events ({rate(report.events_per_second, report.events)}) · "
        f"{report.tokens} tokens ({rate(report.tokens_per_second, report.tokens)}) · "
        f"{report.chunks} chunks, {report.bytes} bytes "
        f"over {report.duration:.3f} s"
    )
    if report.sparkline:
        lines.append(f"  arrivals   |{report.sparkline}| 0 → {report.duration:.2f} s")
    if report.diagnoses:
        for d in report.diagnoses:
            head = f"diagnosis ({d.kind}): "
            wrapped = textwrap.wrap(
                head + visible(d.message), width=98, initial_indent="  ", subsequent_indent="    "
            )
            wrapped[0] = (
                "  " + style(head.rstrip(), "bold", "yellow") + wrapped[0][2 + len(head) - 1 :]
            )
            lines.extend(wrapped)
    else:
        lines.append("  " + style("no transport problem seen", "green"))
    return lines


# -- small formatting helpers -------------------------------------------------------------


def _usage_line(usage: Usage | None) -> str:
    if usage is None:
        return "—"
    names = (
        ("input", usage.input_tokens),
        ("output", usage.output_tokens),
        ("total", usage.total_tokens),
        ("reasoning", usage.reasoning_tokens),
        ("cached", usage.cached_tokens),
    )
    shown = [f"{n} {visible(v)}" for n, v in names if v is not None]
    return " · ".join(shown) if shown else "reported without token counts"


def _citation_line(c: Citation) -> str:
    span = f"[{c.start}, {c.end})" if c.start is not None or c.end is not None else "[?]"
    block = f" block {c.block}" if c.block is not None else ""
    sources = ", ".join(_source_label(s) for s in c.sources[:4])
    more = f" +{len(c.sources) - 4}" if len(c.sources) > 4 else ""
    text = f" {_quote(c.text)}" if c.text else ""
    return f"{span}{block}{text}" + (f" ← {sources}{more}" if sources else "")


def _source_label(source: Any) -> str:
    if isinstance(source, dict):
        inner = source.get("document") or source.get("web") or {}
        inner = inner if isinstance(inner, dict) else {}
        for key in ("title", "url", "uri"):
            value = source.get(key) or inner.get(key)
            ident = source.get("id") or source.get("citation_id") or inner.get("id")
            if isinstance(value, str) and value:
                return f"{ident}: {value}" if ident and ident != value else value
        for key in ("id", "citation_id"):
            if isinstance(source.get(key), str):
                return str(source[key])
    return _compact(source, 80)


def _compact(value: Any, limit: int = _PREVIEW) -> str:
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = repr(value)
    return visible(_cut(" ".join(text.split()), limit))


def _quote(text: str, limit: int = _PREVIEW) -> str:
    return visible(json.dumps(_cut(text, limit), ensure_ascii=False))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _indent(text: str, width: int, style: Style, *styles: str) -> list[str]:
    pad = " " * width
    return [
        (pad + (style(visible(line), *styles) if styles else visible(line))).rstrip()
        for line in text.splitlines() or [""]
    ]


# -- JSON ------------------------------------------------------------------------------------


def message_json(m: Message) -> dict[str, Any]:
    """The folded message as plain JSON data (the shape ``--json`` prints)."""
    return {
        "provider": m.provider,
        "id": m.id,
        "model": m.model,
        "role": m.role,
        "text": m.text,
        "reasoning": m.reasoning,
        "tool_plan": m.tool_plan,
        "refusal": m.refusal,
        "tool_calls": [_tool_call_json(c) for c in m.tool_calls],
        "citations": [
            {"start": c.start, "end": c.end, "text": c.text, "sources": c.sources, "block": c.block}
            for c in m.citations
        ],
        "usage": _usage_json(m.usage),
        "finish_reason": m.finish_reason,
        "raw_finish_reason": m.raw_finish_reason,
        "complete": m.complete,
        "status": m.status,
        "metadata": m.metadata,
        "pending_tool_call": (
            _tool_call_json(m.pending_tool_call) if m.pending_tool_call is not None else None
        ),
        "tool_results": [
            {"call_id": r.call_id, "name": r.name, "output": r.output, "is_error": r.is_error}
            for r in m.tool_results
        ],
        "steps": [_step_json(s) for s in m.steps],
        "sources": m.sources,
        "media": m.media,
        "warnings": list(m.warnings),
        "error": m.error,
        "choice": m.choice,
    }


def _tool_call_json(c: ToolCall) -> dict[str, Any]:
    return {
        "index": c.index,
        "id": c.id,
        "name": c.name,
        "arguments": c.arguments,
        "arguments_json": c.arguments_json,
        "complete": c.complete,
        "error": c.error,
    }


def _usage_json(u: Usage | None) -> dict[str, Any] | None:
    if u is None:
        return None
    return {
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "total_tokens": u.total_tokens,
        "reasoning_tokens": u.reasoning_tokens,
        "cached_tokens": u.cached_tokens,
        "raw": u.raw,
    }


def _step_json(s: Step) -> dict[str, Any]:
    return {
        "name": s.name,
        "id": s.id,
        "order": s.order,
        "depth": s.depth,
        "complete": s.complete,
        "children": [_step_json(c) for c in s.children],
    }


def render_json(inspection: Inspection) -> str:
    """``--json``: the folded message plus how the stream ended, as one JSON object."""
    m = inspection.message
    data: dict[str, Any] = message_json(m) if m is not None else {"provider": inspection.provider}
    data["provider"] = inspection.provider
    data["provider_detected"] = inspection.detected
    data["outcome"] = inspection.outcome.label
    data["exit_code"] = inspection.exit_code
    if inspection.explanation:
        data["explanation"] = inspection.explanation
    if m is not None and len(m.choices) > 1:
        data["choices"] = [message_json(c) for c in m.choices]
    data["warnings"] = list(inspection.warnings)
    if inspection.timing is not None:
        data["timing"] = inspection.timing.to_json()
    elif inspection.timing_note:
        data["timing"] = {"note": inspection.timing_note}
    text = json.dumps(data, ensure_ascii=False, default=_json_default, indent=2)
    # Those can only be inside JSON strings, where their escape is the same text.
    return _JSON_CONTROL.sub(lambda m: f"\\u{ord(m[0]):04x}", text) + "\n"


def _json_default(value: Any) -> Any:
    for attr in ("model_dump", "to_dict", "_asdict"):
        method = getattr(value, attr, None)
        if callable(method):
            return method()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return repr(value)
