"""OpenAI Chat Completions chunks (``data: <chunk>``, ``data: [DONE]``), and Mistral's.

Every chunk is ``{"id", "object": "chat.completion.chunk", "created", "model", "choices":
[{"index", "delta", "finish_reason"}]}`` with the id, model and ``created`` of the
``MessageStart``. Text, reasoning (``delta.reasoning_content``, as DeepSeek, vLLM and
OpenRouter send it) and refusals are ``delta`` fields; a tool call is
``delta.tool_calls[{"index", "id", "type", "function": {"name", "arguments"}}]`` opened with
its id and name, then argument fragments under the same ``index`` (the call's position in its
choice, so parallel calls keep theirs).

A choice's ``finish_reason`` chunk is written at its ``MessageEnd``, with the finish a
``MessageDelta`` announced: a lenient reader (ours, the SDKs) takes a stream that stops after
a ``finish_reason`` as finished, which a source cut between the two was not. The usage (one
chunk with ``"choices": []``, as ``stream_options.include_usage`` asks) and ``[DONE]`` (which
ends every choice) are written by ``close()``: an error the source reports after its last
choice ended (OpenRouter sends one before ``[DONE]``) is still written as one, as
``data: {"error": {"message", "type", "code"}}`` (OpenRouter's and Groq's form).

Mistral differs where its stream does: a tool call is sent whole, with its arguments, in one
delta when it closes (a call cut before its close cannot be sent, and is dropped); reasoning
is a ``thinking`` content chunk; usage rides on the chunk with the finish reason.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .._core import json_frame
from .._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    MessageDelta,
    MessageEnd,
    MessageStart,
    UsageUpdate,
)
from .._parts import FinishReason, Usage
from .._providers.openai_chat import FINISH_REASONS, MISTRAL_FINISH_REASONS
from .base import Writer, arguments_text, sse_data

__all__ = ["MistralWriter", "OpenAIChatWriter", "openai_usage"]

_DONE = b"data: [DONE]\n\n"
#: Block kind -> the delta field its text goes in.
_FIELDS = {"text": "content", "reasoning": "reasoning_content", "refusal": "refusal"}
#: Stands for a text in a chunk written once, then cut out to make a template.
_MARK = "\x00"
_MARK_JSON = b"\\u0000"


def openai_usage(u: Usage) -> dict[str, Any]:
    """:class:`Usage` -> Chat Completions ``usage`` (the counts the reader reads back)."""
    out: dict[str, Any] = {
        "prompt_tokens": u.input_tokens or 0,
        "completion_tokens": u.output_tokens or 0,
        "total_tokens": (
            u.total_tokens
            if u.total_tokens is not None
            else (u.input_tokens or 0) + (u.output_tokens or 0)
        ),
    }
    if u.cached_tokens is not None:
        out["prompt_tokens_details"] = {"cached_tokens": u.cached_tokens}
    if u.reasoning_tokens is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": u.reasoning_tokens}
    return out


def template(frame: bytes) -> tuple[bytes, bytes]:
    """The bytes before and after the one text ``_MARK`` stood for in ``frame``."""
    cut = frame.index(_MARK_JSON)
    return frame[:cut], frame[cut + len(_MARK_JSON) :]


class _Choice:
    __slots__ = ("calls", "finish", "finished")

    def __init__(self) -> None:
        #: block index -> position of the call in the choice (``tool_calls[].index``).
        self.calls: dict[int, int] = {}
        #: The finish a ``MessageDelta`` announced, for the terminal event.
        self.finish: str | None = None
        self.finished = False


class OpenAIChatWriter(Writer):
    name = "openai"
    aliases: ClassVar[tuple[str, ...]] = ("openai-chat",)
    finish_values: ClassVar[dict[FinishReason, str]] = {
        "stop": "stop",
        "length": "length",
        "tool_calls": "tool_calls",
        "content_filter": "content_filter",
        # A refusal is a ``refusal`` delta ending in ``stop``; the fold reads it back so.
        "refusal": "stop",
        "error": "stop",
        "other": "stop",
    }
    own_finish_values: ClassVar[dict[str, FinishReason]] = FINISH_REASONS

    def __init__(self, provider: str | None = None, *, source: str | None = None) -> None:
        super().__init__(provider, source=source)
        self._id: str | None = None
        self._model: str | None = None
        self._created = 0
        self._choices: dict[int, _Choice] = {}
        #: (choice, block) -> (head, tail) of that block's text chunks.
        self._templates: dict[tuple[int, int], tuple[bytes, bytes]] = {}
        self._done = False

    def _chunk_dict(self, choice: int, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            "choices": [{"index": choice, "delta": delta, "finish_reason": finish}],
        }

    def _chunk(self, choice: int, delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse_data(self._chunk_dict(choice, delta, finish))

    def _choice(self, n: int) -> _Choice:
        c = self._choices.get(n)
        if c is None:
            c = self._choices[n] = _Choice()
        return c

    def message_start(self, ev: MessageStart) -> bytes:
        if ev.continued:
            return self.drop("message_start:continued")
        if self._id is None:
            self._id = ev.id
        if self._model is None:
            self._model = ev.model
        created = (ev.metadata or {}).get("created")
        if created.__class__ is int:
            self._created = created
        self._choice(ev.choice)
        return self._chunk(ev.choice, {"role": ev.role or "assistant", "content": ""})

    def _text_delta(self, kind: str) -> dict[str, Any] | None:
        field = _FIELDS.get(kind)
        return None if field is None else {field: _MARK}

    def block_start(self, ev: BlockStart) -> bytes:
        c = self._choice(ev.choice)
        if ev.kind == "tool_call":
            position = c.calls[ev.index] = len(c.calls)
            return self._call_start(ev, position)
        delta = self._text_delta(ev.kind)
        if delta is None:
            return self.drop(f"block:{ev.kind}")
        self._templates[ev.choice, ev.index] = template(self._chunk(ev.choice, delta))
        return self._text(ev.choice, ev.index, ev.text) if ev.text else b""

    def _call_start(self, ev: BlockStart, position: int) -> bytes:
        call = {
            "index": position,
            "id": ev.id,
            "type": "function",
            "function": {
                "name": ev.name,
                "arguments": arguments_text(ev.arguments) if ev.complete else "",
            },
        }
        return self._chunk(ev.choice, {"tool_calls": [call]})

    def _text(self, choice: int, index: int, text: str) -> bytes:
        head, tail = self._templates[choice, index]
        return json_frame(head, text, tail)

    def block_delta(self, ev: BlockDelta) -> bytes:
        found = self._templates.get((ev.choice, ev.index))
        if found is not None:
            return json_frame(found[0], ev.text, found[1])
        position = self._choice(ev.choice).calls.get(ev.index)
        if position is None:
            return self.drop(f"block_delta:{ev.kind}")
        return self._call_delta(ev, position)

    def _call_delta(self, ev: BlockDelta, position: int) -> bytes:
        call = {"index": position, "function": {"arguments": ev.text}}
        return self._chunk(ev.choice, {"tool_calls": [call]})

    def block_end(self, ev: BlockEnd) -> bytes:
        self._templates.pop((ev.choice, ev.index), None)
        return b""

    def usage_update(self, ev: UsageUpdate) -> bytes:
        self.usage = ev.usage
        return b""

    def message_delta(self, ev: MessageDelta) -> bytes:
        c = self._choice(ev.choice)
        c.finish = (
            None
            if ev.finish_reason is None
            else self.finish_value(ev.finish_reason, ev.raw_finish_reason)
        )
        return b""

    def message_end(self, ev: MessageEnd) -> bytes:
        c = self._choice(ev.choice)
        if c.finished:
            return b""
        c.finished = True
        self.ended = True
        finish = (
            self.finish_value(ev.finish_reason, ev.raw_finish_reason)
            if ev.finish_reason is not None
            else c.finish or "stop"
        )
        return self._finish_chunk(ev.choice, finish)

    def _finish_chunk(self, choice: int, finish: str) -> bytes:
        return self._chunk(choice, {}, finish)

    def close(self) -> bytes:
        if self._done:
            return b""
        out = self._held_usage()
        if self.ended and not self.failed:
            self._done = True
            out += _DONE
        return out

    def _held_usage(self) -> bytes:
        """The usage seen, in a chunk of no choice (which ends nothing)."""
        if self.usage is None:
            return b""
        usage, self.usage = self.usage, None
        return sse_data(
            {
                "id": self._id,
                "object": "chat.completion.chunk",
                "created": self._created,
                "model": self._model,
                "choices": [],
                "usage": openai_usage(usage),
            }
        )

    def closed_terminal(self) -> bool:
        return self._done

    def write_error(self, code: str | int | None, message: str) -> bytes:
        error: dict[str, Any] = {"message": message, "type": code, "code": code}
        return self._held_usage() + sse_data({"error": error})

    _dispatch: ClassVar = {
        MessageStart: message_start,
        BlockStart: block_start,
        BlockDelta: block_delta,
        BlockEnd: block_end,
        UsageUpdate: usage_update,
        MessageDelta: message_delta,
        MessageEnd: message_end,
    }


class MistralWriter(OpenAIChatWriter):
    name = "mistral"
    aliases = ()
    finish_values: ClassVar[dict[FinishReason, str]] = {
        **OpenAIChatWriter.finish_values,
        "content_filter": "stop",
        "error": "error",
    }
    own_finish_values: ClassVar[dict[str, FinishReason]] = MISTRAL_FINISH_REASONS

    def __init__(self, provider: str | None = None, *, source: str | None = None) -> None:
        super().__init__(provider, source=source)
        #: (choice, block) -> the call's id, name and argument fragments, sent whole at its end.
        self._pending: dict[tuple[int, int], tuple[str | None, str | None, list[str]]] = {}

    def _text_delta(self, kind: str) -> dict[str, Any] | None:
        if kind == "reasoning":
            return {
                "content": [{"type": "thinking", "thinking": [{"type": "text", "text": _MARK}]}]
            }
        if kind == "refusal":
            return None
        return super()._text_delta(kind)

    def _call_start(self, ev: BlockStart, position: int) -> bytes:
        fragments = [arguments_text(ev.arguments)] if ev.complete else []
        self._pending[ev.choice, ev.index] = (ev.id, ev.name, fragments)
        return b""

    def _call_delta(self, ev: BlockDelta, position: int) -> bytes:
        pending = self._pending.get((ev.choice, ev.index))
        if pending is None:
            return self.drop("block_delta:tool_call")
        pending[2].append(ev.text)
        return b""

    def block_end(self, ev: BlockEnd) -> bytes:
        pending = self._pending.pop((ev.choice, ev.index), None)
        if pending is None:
            return super().block_end(ev)
        call_id, name, fragments = pending
        call = {
            "id": call_id,
            "type": "function",
            "index": self._choice(ev.choice).calls[ev.index],
            "function": {"name": name, "arguments": "".join(fragments)},
        }
        return self._chunk(ev.choice, {"content": "", "tool_calls": [call]})

    def _finish_chunk(self, choice: int, finish: str) -> bytes:
        chunk = self._chunk_dict(choice, {"content": ""}, finish)
        if self.usage is not None:
            chunk["usage"] = openai_usage(self.usage)
            self.usage = None
        return sse_data(chunk)

    def close(self) -> bytes:
        for _ in self._pending:
            self.drop("tool_call:unfinished")  # a whole-call format cannot send half a call
        self._pending.clear()
        return super().close()

    _dispatch: ClassVar = {**OpenAIChatWriter._dispatch, BlockEnd: block_end}
