"""Google Gemini ``streamGenerateContent?alt=sse`` chunks (``data: <GenerateContentResponse>``
with CRLF line ends, as Gemini sends them; no terminator: the stream's end is its end).

Each text or reasoning delta is a chunk of one part (``{"text"}``, or ``{"text", "thought":
true}``) of candidate ``choice``; consecutive parts of a kind are one block to a reader, as
in Gemini's own stream. Gemini has no streamed tool-call arguments: a call is held until its
``BlockEnd`` and written whole as a ``functionCall`` part with its parsed ``args`` (a call
that never closed, or whose arguments are not one JSON object, cannot be written and is
dropped). The finish (``finishReason``, with the latest ``usageMetadata``) is written at the
candidate's ``MessageEnd``: Gemini has no other terminal, so a finish announced before a cut
(Anthropic ``message_delta``) is not written for the cut stream. An error is a
``{"error": {"code", "message", "status"}}`` chunk.

From a Gemini source its ``thoughtSignature`` goes back on the parts (an empty text part for a
block's signature, the call's part for a call's); from any other source no signature is
written: another provider's signature is no Gemini ``thoughtSignature``.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from .._core import json_frame
from .._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    MessageDelta,
    MessageEnd,
    MessageStart,
    SignatureDelta,
    UsageUpdate,
)
from .._parts import FinishReason, Usage
from .._providers.gemini import FINISH_REASONS
from .base import Writer, arguments_text, dumps

__all__ = ["GeminiWriter", "gemini_usage"]

_MARK = "\x00"
_MARK_JSON = b"\\u0000"


def gemini_usage(u: Usage) -> dict[str, Any]:
    """:class:`Usage` -> ``usageMetadata`` (``candidatesTokenCount`` leaves out the thoughts,
    which the reader adds back)."""
    out: dict[str, Any] = {}
    if u.input_tokens is not None:
        out["promptTokenCount"] = u.input_tokens
    if u.output_tokens is not None:
        out["candidatesTokenCount"] = u.output_tokens - (u.reasoning_tokens or 0)
    if u.reasoning_tokens is not None:
        out["thoughtsTokenCount"] = u.reasoning_tokens
    if u.cached_tokens is not None:
        out["cachedContentTokenCount"] = u.cached_tokens
    total = u.total_tokens
    if total is None and u.input_tokens is not None and u.output_tokens is not None:
        total = u.input_tokens + u.output_tokens
    if total is not None:
        out["totalTokenCount"] = total
    return out


def _frame(value: Any) -> bytes:
    return b"data: " + dumps(value) + b"\r\n\r\n"


class GeminiWriter(Writer):
    name = "gemini"
    finish_values: ClassVar[dict[FinishReason, str]] = {
        "stop": "STOP",
        "tool_calls": "STOP",  # Gemini ends a turn of calls with STOP
        "length": "MAX_TOKENS",
        "content_filter": "SAFETY",
        "refusal": "SAFETY",
        "error": "OTHER",
        "other": "OTHER",
    }
    own_finish_values: ClassVar[dict[str, FinishReason]] = FINISH_REASONS

    def __init__(self, provider: str | None = None, *, source: str | None = None) -> None:
        super().__init__(provider, source=source)
        self._id: str | None = None
        self._model: str | None = None
        #: (choice, block) -> kind of the text and reasoning blocks written.
        self._kinds: dict[tuple[int, int], str] = {}
        #: (choice, kind) -> (head, tail) of its text chunks.
        self._templates: dict[tuple[int, str], tuple[bytes, bytes]] = {}
        #: (choice, block) -> (id, name, fragments, extra) of a call held for its end.
        self._calls: dict[tuple[int, int], tuple[str | None, str | None, list[str], Any]] = {}
        self._finish: dict[int, str] = {}
        self._ended_choices: set[int] = set()

    def _chunk(self, choice: int, candidate: dict[str, Any], **top: Any) -> dict[str, Any]:
        if choice:
            candidate["index"] = choice
        out: dict[str, Any] = {"candidates": [candidate], **top}
        if self._model is not None:
            out["modelVersion"] = self._model
        if self._id is not None:
            out["responseId"] = self._id
        return out

    def _parts(self, choice: int, parts: list[dict[str, Any]]) -> bytes:
        return _frame(self._chunk(choice, {"content": {"parts": parts, "role": "model"}}))

    def message_start(self, ev: MessageStart) -> bytes:
        if ev.continued:
            return self.drop("message_start:continued")
        if self._id is None:
            self._id = ev.id
        if self._model is None:
            self._model = ev.model
        return b""

    def _template(self, choice: int, kind: str) -> tuple[bytes, bytes]:
        found = self._templates.get((choice, kind))
        if found is None:
            part: dict[str, Any] = {"text": _MARK}
            if kind == "reasoning":
                part["thought"] = True
            frame = self._parts(choice, [part])
            cut = frame.index(_MARK_JSON)
            found = self._templates[choice, kind] = (frame[:cut], frame[cut + len(_MARK_JSON) :])
        return found

    def block_start(self, ev: BlockStart) -> bytes:
        if ev.kind == "tool_call":
            fragments = [arguments_text(ev.arguments)] if ev.complete else []
            self._calls[ev.choice, ev.index] = (ev.id, ev.name, fragments, ev.extra)
            return b""
        if ev.kind not in ("text", "reasoning"):
            return self.drop(f"block:{ev.kind}")
        self._kinds[ev.choice, ev.index] = ev.kind
        if ev.text:
            head, tail = self._template(ev.choice, ev.kind)
            return json_frame(head, ev.text, tail)
        return b""

    def block_delta(self, ev: BlockDelta) -> bytes:
        kind = self._kinds.get((ev.choice, ev.index))
        if kind is not None:
            head, tail = self._template(ev.choice, kind)
            return json_frame(head, ev.text, tail)
        call = self._calls.get((ev.choice, ev.index))
        if call is None:
            return self.drop(f"block_delta:{ev.kind}")
        call[2].append(ev.text)
        return b""

    def signature(self, ev: SignatureDelta) -> bytes:
        kind = self._kinds.get((ev.choice, ev.index))
        if not self.keep_opaque or kind is None:
            return self.drop("signature")
        part: dict[str, Any] = {"text": "", "thoughtSignature": ev.signature}
        if kind == "reasoning":
            part["thought"] = True
        return self._parts(ev.choice, [part])

    def block_end(self, ev: BlockEnd) -> bytes:
        call = self._calls.pop((ev.choice, ev.index), None)
        if call is None:
            return b""
        call_id, name, fragments, extra = call
        text = "".join(fragments)
        try:
            args = json.loads(text) if text.strip() else {}
        except ValueError:
            args = None
        if not isinstance(args, dict):
            return self.drop("tool_call:arguments")  # Gemini's args are one JSON object
        function: dict[str, Any] = {"name": name, "args": args}
        if call_id is not None:
            function["id"] = call_id
        part: dict[str, Any] = {"functionCall": function}
        if self.keep_opaque and extra and "thoughtSignature" in extra:
            part["thoughtSignature"] = extra["thoughtSignature"]
        return self._parts(ev.choice, [part])

    def usage_update(self, ev: UsageUpdate) -> bytes:
        self.usage = ev.usage
        return b""

    def message_delta(self, ev: MessageDelta) -> bytes:
        if ev.finish_reason is None:
            self._finish.pop(ev.choice, None)
        else:
            self._finish[ev.choice] = self.finish_value(ev.finish_reason, ev.raw_finish_reason)
        return b""

    def message_end(self, ev: MessageEnd) -> bytes:
        if ev.choice in self._ended_choices:
            return b""
        self._ended_choices.add(ev.choice)
        self.ended = True
        finish = (
            self.finish_value(ev.finish_reason, ev.raw_finish_reason)
            if ev.finish_reason is not None
            else self._finish.get(ev.choice, "STOP")
        )
        top = {} if self.usage is None else {"usageMetadata": gemini_usage(self.usage)}
        self.usage = None
        return _frame(self._chunk(ev.choice, {"finishReason": finish}, **top))

    def close(self) -> bytes:
        for _ in self._calls:
            self.drop("tool_call:unfinished")  # a whole-call format cannot send half a call
        self._calls.clear()
        return b"" if self.ended else self._held_usage()

    def _held_usage(self) -> bytes:
        """The usage of a stream that did not end well: it arrived, so it is written (a chunk
        of no candidate, which ends nothing)."""
        if self.usage is None:
            return b""
        usage, self.usage = self.usage, None
        top: dict[str, Any] = {"usageMetadata": gemini_usage(usage)}
        if self._model is not None:
            top["modelVersion"] = self._model
        if self._id is not None:
            top["responseId"] = self._id
        return _frame(top)

    def closed_terminal(self) -> bool:
        return False  # the stream's end is its terminal: an error can still follow a finish

    def write_error(self, code: str | int | None, message: str) -> bytes:
        error: dict[str, Any] = {"message": message}
        if isinstance(code, int):
            error["code"] = code
        elif code is not None:
            error["status"] = code
        return self._held_usage() + _frame({"error": error})

    _dispatch: ClassVar = {
        MessageStart: message_start,
        BlockStart: block_start,
        BlockDelta: block_delta,
        SignatureDelta: signature,
        BlockEnd: block_end,
        UsageUpdate: usage_update,
        MessageDelta: message_delta,
        MessageEnd: message_end,
    }
