"""Cohere Chat v1 (``POST /v1/chat``, ``"stream": true``): JSON lines, not SSE.

Wire format (WIRE_FORMATS.md §2; cohere-python ``src/cohere/types/streamed_chat_response.py``):
one JSON object per line (``application/stream+json``), discriminated by ``event_type``::

    stream-start               {"generation_id"}
    search-queries-generation  {"search_queries": [{text, generation_id}]}
    search-results             {"search_results"?: [...], "documents"?: [...]}
    text-generation            {"text"}                      the visible tokens
    citation-generation        {"citations": [{start, end, text, document_ids}]}
    tool-calls-chunk           {"text"} (plan) | {"tool_call_delta": {index, name?, parameters?}}
    tool-calls-generation      {"text" (whole plan), "tool_calls": [{name, parameters: {…}}]}
    stream-end                 {"finish_reason", "response": {text, tool_calls?, citations?,
                                documents?, meta: {billed_units, tokens}, ...}}
    debug                      {"prompt"}

Frames are the parsed lines; ``raw`` on every event is that dict.

Blocks. v1 has no block boundaries: the text opens a ``text`` block at its first
``text-generation``; plan text (``tool-calls-chunk`` without ``tool_call_delta``) opens a
``tool_plan`` block; each ``tool_call_delta.index`` opens a ``tool_call`` block (v1 calls have
no id) whose ``parameters`` fragments are its deltas. ``tool-calls-generation`` closes the
calls streamed so far and adds the calls that were not streamed as whole calls; it never
duplicates one. ``stream-end`` closes whatever is still open.

Checks. ``stream-end`` carries the whole response: its text must equal the streamed text (or
the streamed plan, which a tool-calling turn returns as ``response.text``), and
``tool-calls-generation`` must agree with the streamed calls. A disagreement is a violation
(a warning, or ``ProtocolError`` with ``strict``). Whatever the response holds that the
stream did not deliver (text, calls, citations, documents) is emitted from it, so a stream
that skipped the intermediate events still folds to the whole answer.

Citations: ``start``/``end`` are character offsets into the reply text, end-exclusive in the
real stream (WIRE_FORMATS.md §2, §8.13); ``sources`` are the ``document_ids``. The message id
is the ``generation_id`` of ``stream-start``; the ``response_id`` of ``stream-end.response`` is
``metadata["response_id"]`` of the ``MessageEnd``.
Usage comes from ``response.meta`` (``tokens``; ``billed_units`` kept in ``Usage.raw``); streams
from before ``meta.tokens`` give the counts in ``response.token_count`` (``prompt_tokens``,
``response_tokens``, ``total_tokens``), read when ``meta.tokens`` is absent. ``billed_units``
(and ``token_count.billed_tokens``) are what is billed, not what was read or written: never
counted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, ClassVar

from .._errors import StreamError
from .._events import (
    BlockEnd,
    BlockStart,
    CitationAdded,
    Event,
    MessageEnd,
    Notice,
    SourcesAdded,
    UsageUpdate,
)
from .._parts import BlockKind, Citation, FinishReason, Usage
from ._fast import text_delta
from .base import Framing, Provider
from .cohere_v2 import count_of, usage_from_tokens

__all__ = ["FINISH_REASONS", "CohereV1"]

#: ``stream-end.finish_reason`` (or ``response.finish_reason``) -> normalized finish reason.
#: Sources: cohere-python ``src/cohere/types/chat_stream_end_event_finish_reason.py``
#: (COMPLETE, ERROR_LIMIT, MAX_TOKENS, ERROR, ERROR_TOXIC) and ``src/cohere/types/
#: finish_reason.py`` (adds STOP_SEQUENCE, USER_CANCEL, TIMEOUT), the type of
#: ``response.finish_reason``: when that is one of these values it is the reason read, else the
#: top-level one. ERROR (at either place) raises ``StreamError``; ERROR_LIMIT is the context
#: limit (the answer was cut: ``length``); ERROR_TOXIC is a blocked generation
#: (``content_filter``).
FINISH_REASONS: dict[str, FinishReason] = {
    "COMPLETE": "stop",
    "STOP_SEQUENCE": "stop",
    "MAX_TOKENS": "length",
    "ERROR_LIMIT": "length",
    "ERROR_TOXIC": "content_filter",
    "ERROR": "error",
    "TIMEOUT": "error",
    "USER_CANCEL": "other",
}

_Handler = Callable[[Any, dict[str, Any], list[Event]], None]


def _finish_reason(top: str | None, inner: Any) -> str | None:
    """The finish reason the server gave: ``stream-end.response.finish_reason`` when it is one
    of the known values, since it takes the wider ``FinishReason`` (``STOP_SEQUENCE``,
    ``USER_CANCEL``, ``TIMEOUT``) where the top-level ``finish_reason`` has only ``COMPLETE``,
    ``ERROR_LIMIT``, ``MAX_TOKENS``, ``ERROR`` and ``ERROR_TOXIC`` (WIRE_FORMATS.md §2); else
    the top-level value, else the response's whatever it is."""
    if inner is not None and inner.__class__ is not str:
        inner = str(inner)
    if inner and (not top or inner in FINISH_REASONS):
        return str(inner)
    return top or None


def _usage(response: dict[str, Any]) -> Usage | None:
    """The usage of ``stream-end.response``: ``meta.tokens``, else the older
    ``token_count``; ``None`` when it has neither (nor any ``meta``)."""
    # Any, not Any | None: each is read only once its type is checked (``__class__ is dict``).
    meta: Any = response.get("meta")
    token_count = response.get("token_count")
    if type(token_count) is not dict or (
        meta.__class__ is dict and meta.get("tokens").__class__ is dict
    ):
        return usage_from_tokens(meta) if meta else None
    input_tokens = count_of(token_count.get("prompt_tokens"))
    output_tokens = count_of(token_count.get("response_tokens"))
    total = count_of(token_count.get("total_tokens"))
    if total is None and input_tokens is not None and output_tokens is not None:
        total = input_tokens + output_tokens
    raw = {**meta, "token_count": token_count} if meta.__class__ is dict else token_count
    return Usage(
        input_tokens=input_tokens, output_tokens=output_tokens, total_tokens=total, raw=raw
    )


class CohereV1(Provider):
    """Cohere Chat v1 JSON-lines stream -> events."""

    name: ClassVar[str] = "cohere-v1"
    framing: ClassVar[Framing] = "jsonl"

    #: Event type -> handler, called as ``handler(self, …)`` (see the end of the module).
    _ON: ClassVar[dict[str, _Handler]]

    @classmethod
    def same_query(cls, a: Any, b: Any) -> bool:
        """One query is reported in ``search-queries-generation`` and again in each of its
        ``search-results`` (once per connector), where it may lack the ``generation_id``: the
        same text, and the same ``generation_id`` unless one of them lacks it."""
        if isinstance(a, dict) and isinstance(b, dict):
            text = a.get("text")
            if text is not None and text == b.get("text"):
                first, second = a.get("generation_id"), b.get("generation_id")
                return first is None or second is None or first == second
        return bool(a == b)

    def __init__(self, *, strict: bool = False) -> None:
        super().__init__(strict=strict)
        self._started = False
        self._next_block = 0
        self._kinds: dict[int, BlockKind] = {}
        self._open: set[int] = set()
        self._text: int | None = None
        self._text_parts: list[str] = []
        self._plan: int | None = None
        self._plan_parts: list[str] = []
        #: ``tool_call_delta.index`` -> block index, name and streamed parameter fragments.
        self._calls: dict[int, int] = {}
        #: The highest of those indices (-1: none): what a fragment without one continues.
        self._last_call = -1
        self._call_names: dict[int, str | None] = {}
        self._call_args: dict[int, list[str]] = {}
        self._generation_seen = False
        self._citations_seen = False
        self._sources_seen = False
        self._queries_seen = False

    # -- the frame loop ----------------------------------------------------------------------

    def handle(self, frame: Any, out: list[Event]) -> None:
        if frame.__class__ is not dict:
            raise self.protocol_error(
                f"line is a JSON {type(frame).__name__}, not an object", event=None, raw=frame
            )
        event_type = frame.get("event_type")
        if self.terminal_seen:
            self.violation("event after stream-end", out, event=event_type, raw=frame)
        if not self._started and event_type != "stream-start":
            self.violation("stream does not begin with stream-start", out, event=event_type)
            self._started = True
            self.start_message(out, frame)
        handler = self._ON.get(event_type) if event_type.__class__ is str else None
        if handler is None:
            self.unknown(event_type, out, frame)
            return
        try:
            handler(self, frame, out)
        except (KeyError, TypeError, AttributeError, IndexError) as exc:
            raise self.protocol_error(
                f"malformed payload ({exc.__class__.__name__}: {exc})", event=event_type, raw=frame
            ) from None

    # -- blocks ------------------------------------------------------------------------------

    def _open_block(self, kind: BlockKind, frame: Any, out: list[Event], **fields: Any) -> int:
        index = self._next_block
        self._next_block = index + 1
        self._kinds[index] = kind
        self._open.add(index)
        out.append(BlockStart(index=index, kind=kind, raw=frame, **fields))
        return index

    def _close(self, index: int | None, frame: Any, out: list[Event]) -> None:
        if index is not None and index in self._open:
            self._open.discard(index)
            out.append(BlockEnd(index=index, kind=self._kinds[index], raw=frame))

    def _close_plan(self, frame: Any, out: list[Event]) -> None:
        if self._plan is not None:
            self._close(self._plan, frame, out)
            self._plan = None

    def _whole_block(self, kind: BlockKind, text: str, frame: Any, out: list[Event]) -> int:
        index = self._open_block(kind, frame, out)
        out.append(text_delta(index, kind, text, 0, frame))
        self._close(index, frame, out)
        return index

    def _str(self, value: Any, event: str, frame: Any) -> str:
        if value.__class__ is str:
            return str(value)
        raise self.protocol_error(f"text is {type(value).__name__}", event=event, raw=frame)

    # -- one handler per event type -----------------------------------------------------------

    def _stream_start(self, p: dict[str, Any], out: list[Event]) -> None:
        if self._started:
            self.violation("second stream-start", out, event="stream-start", raw=p)
            return
        self._started = True
        self.start_message(out, p, id=p.get("generation_id"))

    def _search_queries(self, p: dict[str, Any], out: list[Event]) -> None:
        self._queries_seen = True
        out.append(Notice(kind="search_queries", data=p.get("search_queries"), raw=p))

    def _search_results(self, p: dict[str, Any], out: list[Event]) -> None:
        self._sources_seen = True
        results = p.get("search_results") or []
        queries = [r["search_query"] for r in results if r.get("search_query") is not None]
        documents = p.get("documents")
        if documents is not None and documents.__class__ is not list:
            raise TypeError(f"documents is {type(documents).__name__}, not a list")
        out.append(
            SourcesAdded(
                sources=documents if documents is not None else [],
                queries=queries or None,
                raw=p,
            )
        )

    def _text_generation(self, p: dict[str, Any], out: list[Event]) -> None:
        text = p["text"]
        if text.__class__ is not str:
            text = self._str(text, "text-generation", p)
        index = self._text
        if index is None:
            self._close_plan(p, out)
            index = self._text = self._open_block("text", p, out)
        self._text_parts.append(text)
        out.append(text_delta(index, "text", text, 0, p))

    def _citation_generation(self, p: dict[str, Any], out: list[Event]) -> None:
        self._citations_seen = True
        self._citations(p["citations"], p, out)

    def _citations(self, citations: list[Any], frame: Any, out: list[Event]) -> None:
        for c in citations:
            citation = Citation(
                start=c.get("start"),
                end=c.get("end"),
                text=c.get("text"),
                sources=list(c.get("document_ids") or []),
                block=self._text,
                raw=c,
            )
            out.append(CitationAdded(citation=citation, raw=frame))

    def _tool_calls_chunk(self, p: dict[str, Any], out: list[Event]) -> None:
        delta = p.get("tool_call_delta")
        if delta is None:
            text = p.get("text")
            if text is None:
                return
            if text.__class__ is not str:
                text = self._str(text, "tool-calls-chunk", p)
            index = self._plan
            if index is None:
                index = self._plan = self._open_block("tool_plan", p, out)
            self._plan_parts.append(text)
            out.append(text_delta(index, "tool_plan", text, 0, p))
            return
        position = delta.get("index")
        if position is None:
            # No index: a name starts a new call, anything else continues the latest one.
            last = self._last_call
            position = last + 1 if delta.get("name") is not None or last < 0 else last
        elif position.__class__ is not int:
            raise self.protocol_error(
                "tool_call_delta.index is not an integer", event="tool-calls-chunk"
            )
        block = self._calls.get(position)
        if block is None:
            self._close_plan(p, out)
            name = self.wire_str(delta.get("name"), "a tool call's name", out, p)
            block = self._open_block("tool_call", p, out, name=name)
            self._calls[position] = block
            self._last_call = max(self._last_call, position)
            self._call_names[position] = name
            self._call_args[position] = []
        elif block not in self._open:
            self.violation(f"tool call {position} already ended", out, event="tool-calls-chunk")
        fragment = delta.get("parameters")
        if fragment:
            if fragment.__class__ is not str:
                fragment = self._str(fragment, "tool-calls-chunk", p)
            self._call_args[position].append(fragment)
            out.append(text_delta(block, "tool_call", fragment, 0, p))

    def _tool_calls_generation(self, p: dict[str, Any], out: list[Event]) -> None:
        if self._generation_seen:
            self.violation("a second tool-calls-generation", out, event="tool-calls-generation")
            return
        self._generation_seen = True
        self._whole_calls(p.get("tool_calls") or [], p.get("text"), "tool-calls-generation", p, out)

    def _whole_calls(
        self, calls: list[Any], plan: Any, event: str, frame: Any, out: list[Event]
    ) -> None:
        """Reconcile whole calls (and the whole plan) with what the chunks streamed."""
        if isinstance(plan, str) and plan:
            if self._plan_parts:
                if "".join(self._plan_parts) != plan:
                    self.violation("tool plan differs from the streamed plan", out, event=event)
            elif self._text is None:
                self._plan_parts.append(plan)
                self._whole_block("tool_plan", plan, frame, out)
        self._close_plan(frame, out)
        for position, call in enumerate(calls):
            name = call.get("name")
            parameters = call.get("parameters")
            block = self._calls.get(position)
            if block is None:
                self._call_names[position] = name
                self._call_args[position] = []
                self._calls[position] = self._open_block(
                    "tool_call",
                    frame,
                    out,
                    name=name,
                    arguments=parameters if parameters is not None else {},
                    complete=True,
                )
                self._last_call = max(self._last_call, position)
                self._close(self._calls[position], frame, out)
                continue
            if block not in self._open:
                self.violation(f"tool call {position} already ended", out, event=event)
                continue
            self._check_call(position, name, parameters, event=event, frame=frame, out=out)
            self._close(block, frame, out)
        for position in self._calls:
            if position >= len(calls):
                self.violation(f"streamed tool call {position} is missing", out, event=event)

    def _check_call(
        self, position: int, name: Any, parameters: Any, *, event: str, frame: Any, out: list[Event]
    ) -> None:
        streamed_name = self._call_names.get(position)
        if streamed_name is not None and streamed_name != name:
            self.violation(
                f"tool call {position} is named {name!r} but streamed as {streamed_name!r}",
                out,
                event=event,
            )
        text = "".join(self._call_args[position])
        if not text.strip():
            # The chunks named the call but streamed no arguments: the whole call has them.
            if parameters:
                arguments = json.dumps(parameters, ensure_ascii=False)
                self._call_args[position].append(arguments)
                block = self._calls[position]
                out.append(text_delta(block, "tool_call", arguments, 0, frame))
            return
        try:
            streamed: Any = json.loads(text)
        except ValueError:
            streamed = text
        if parameters is not None and streamed != parameters:
            self.violation(
                f"tool call {position} parameters differ from the streamed arguments",
                out,
                event=event,
            )

    def _stream_end(self, p: dict[str, Any], out: list[Event]) -> None:
        self.terminal_seen = True
        response = p.get("response") or {}
        top = p.get("finish_reason")
        if top is not None and top.__class__ is not str:
            top = str(top)
        raw_reason = _finish_reason(top, response.get("finish_reason"))
        self._complete_from_response(response, p, out)
        for index in sorted(self._open):
            self._close(index, p, out)
        usage = _usage(response)
        if usage is not None:
            out.append(UsageUpdate(usage=usage, raw=p))
        if raw_reason == "ERROR" or top == "ERROR":
            detail = "" if raw_reason == "ERROR" else f" (response.finish_reason {raw_reason})"
            raise StreamError(
                f"the stream ended with finish_reason ERROR{detail}",
                code="ERROR",
                raw_finish_reason=raw_reason,
                provider=self.name,
                raw=p,
                position=self.position,
            )
        reason = FINISH_REASONS.get(raw_reason, "other") if raw_reason is not None else None
        response_id = response.get("response_id")
        out.append(
            MessageEnd(
                finish_reason=reason,
                raw_finish_reason=raw_reason,
                metadata={"response_id": response_id} if response_id else None,
                raw=p,
            )
        )

    def _complete_from_response(self, response: Any, p: dict[str, Any], out: list[Event]) -> None:
        """Check the streamed answer against ``response``; add what the stream left out."""
        text = response.get("text")
        calls = response.get("tool_calls")
        if calls and not self._generation_seen:
            self._whole_calls(calls, text if self._text is None else None, "stream-end", p, out)
        if isinstance(text, str):
            if self._text is not None:
                if "".join(self._text_parts) != text:
                    self.violation(
                        "response.text differs from the streamed text", out, event="stream-end"
                    )
            elif self._plan_parts:
                if "".join(self._plan_parts) != text:
                    self.violation(
                        "response.text differs from the streamed plan", out, event="stream-end"
                    )
            elif text and self._calls:
                self._plan_parts.append(text)
                self._whole_block("tool_plan", text, p, out)
            elif text:
                self._text = self._whole_block("text", text, p, out)
        if not self._citations_seen and response.get("citations"):
            self._citations(response["citations"], p, out)
        if not self._queries_seen and response.get("search_queries"):
            out.append(Notice(kind="search_queries", data=response["search_queries"], raw=p))
        documents = response.get("documents")
        if not self._sources_seen and documents is not None:
            if documents.__class__ is not list:
                raise TypeError(f"response.documents is {type(documents).__name__}, not a list")
            out.append(SourcesAdded(sources=documents, raw=p))

    def _debug(self, p: dict[str, Any], out: list[Event]) -> None:
        out.append(Notice(kind="debug", data=p.get("prompt"), raw=p))


#: Event type -> handler (the function, called with the provider): made once, not per stream.
CohereV1._ON = {
    "stream-start": CohereV1._stream_start,
    "search-queries-generation": CohereV1._search_queries,
    "search-results": CohereV1._search_results,
    "text-generation": CohereV1._text_generation,
    "citation-generation": CohereV1._citation_generation,
    "tool-calls-chunk": CohereV1._tool_calls_chunk,
    "tool-calls-generation": CohereV1._tool_calls_generation,
    "stream-end": CohereV1._stream_end,
    "debug": CohereV1._debug,
}
