"""Run a stream's events through a writer and read the bytes back: what the writer tests and
the relay tests compare."""

from __future__ import annotations

from typing import Any

import streamfold as sf
from stream_cases import Case
from streamfold._types import ProviderName
from streamfold._writers import Writer


def events_until_error(case: Case) -> tuple[list[sf.Event], BaseException | None]:
    out: list[sf.Event] = []
    try:
        for event in sf.events([case.body], provider=case.provider):
            out.append(event)
    except sf.StreamfoldError as exc:
        return out, exc
    return out, None


def written(case: Case, target: str, *, split: bool = False) -> tuple[bytes, Writer]:
    events, exc = events_until_error(case)
    w = Writer(target, source=case.provider)
    parts = [w.write(e) for e in events]
    if isinstance(exc, sf.StreamError):
        parts.append(w.error(exc))
    parts.append(w.close())
    return b"".join(parts), w


def fold_bytes(body: bytes, provider: ProviderName) -> tuple[sf.Message, BaseException | None]:
    try:
        return sf.fold([body], provider=provider), None
    except sf.StreamfoldError as exc:
        partial = getattr(exc, "partial", None)
        assert isinstance(partial, sf.Message), repr(exc)
        return partial, exc


def usage_counts(u: sf.Usage | None, keys: tuple[str, ...]) -> dict[str, Any] | None:
    return None if u is None else {k: getattr(u, k) for k in keys}


FINISH_CLASS = {
    "stop": "stop",
    "tool_calls": "stop",
    "refusal": "stop",
    "other": "stop",
    "length": "length",
    "content_filter": "content_filter",
    "error": "error",
}


def summary(m: sf.Message, exc: BaseException | None, *, same: bool) -> dict[str, Any]:
    """The fields a written stream must keep: all of them for the same provider; across
    providers the text, tool calls and arguments, finish reason class and token counts."""
    outcome = None if exc is None else type(exc).__name__
    if outcome == "ProtocolError":
        # Bytes that break the source's format cannot be written: the copy stops there.
        outcome = "IncompleteStreamError"
    out: dict[str, Any] = {
        "text": m.text,
        "tool_calls": [(c.name, c.arguments) for c in m.tool_calls],
        "outcome": outcome,
        "usage": usage_counts(m.usage, ("input_tokens", "output_tokens")),
    }
    if isinstance(exc, sf.StreamError):
        out["error"] = exc.message
    if same:
        out |= {
            "id": m.id,
            "model": m.model,
            "reasoning": m.reasoning,
            "refusal": m.refusal,
            "tool_plan": m.tool_plan,
            "call_ids": [c.id for c in m.tool_calls],
            "calls_complete": [c.complete for c in m.tool_calls],
            "arguments_json": [c.arguments_json for c in m.tool_calls if c.complete],
            "finish_reason": m.finish_reason,
            "raw_finish_reason": m.raw_finish_reason,
            "usage": usage_counts(
                m.usage,
                (
                    "input_tokens",
                    "output_tokens",
                    "total_tokens",
                    "reasoning_tokens",
                    "cached_tokens",
                ),
            ),
            "complete": m.complete,
            "choices": len(m.choices),
            "choice_texts": [c.text for c in m.choices],
        }
        if isinstance(exc, sf.StreamError):
            out["error_code"] = exc.code
    # A finish announced before a cut (Anthropic message_delta) has no place in a format
    # whose finish is its terminal event, and an error decides the finish of some formats:
    # compared where the stream ended well.
    elif outcome is None:
        out["finish"] = None if m.finish_reason is None else FINISH_CLASS[m.finish_reason]
    return out
