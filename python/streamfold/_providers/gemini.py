"""Google Gemini ``models/{model}:streamGenerateContent?alt=sse`` (and Vertex AI).

Wire format (WIRE_FORMATS.md §6; js-genai ``GenerateContentResponse``): data-only SSE with CRLF
separators and no terminator; every data is a whole ``GenerateContentResponse``::

    data: {"candidates": [{"content": {"role": "model", "parts": [{"text": "The"}]},
           "index": 0}], "usageMetadata": {...}, "modelVersion": "…", "responseId": "…"}
    data: {"candidates": [{"content": {"parts": [{"text": " end."}]}, "finishReason": "STOP",
           "groundingMetadata": {...}}], "usageMetadata": {...}}

Gemini has no block boundaries; they are made here, per candidate (``choice`` = candidate
``index``):

* consecutive text parts are one ``text`` block, consecutive ``thought: true`` parts one
  ``reasoning`` block; a part of another kind closes the block and opens the next;
* a ``thoughtSignature`` -> ``SignatureDelta`` on the block of its part, also on an empty text
  part (Gemini 3 puts it on ``{"text": "", "thoughtSignature": …}`` in the last chunk; a block is
  opened for it if none of that kind is open), so it survives to be sent back;
* ``functionCall`` arrives whole: ``BlockStart(kind="tool_call", complete=True,
  arguments=args, extra={"thoughtSignature": …})`` and ``BlockEnd``. Vertex AI
  ``streamFunctionCallArguments`` streams a call instead: ``{"name", "willContinue": true}``
  opens it, ``{"partialArgs": [{"jsonPath", "stringValue"|"numberValue"|"boolValue"|
  "nullValue", "willContinue"}], "willContinue": true}`` add to it (``stringValue`` pieces of
  one path concatenate; a part of ``{"willContinue": true}`` alone only says more is coming)
  and ``{}`` closes it, as does a last piece without ``willContinue``; the arguments
  assembled from the paths are sent as one ``BlockDelta`` (their JSON text) right before the
  ``BlockEnd``. A call that never closes (``finishReason``
  such as ``MAX_TOKENS`` inside it, a text part or another call before its ``{}``, an error
  chunk, the end of input or a lost connection) sends instead the JSON text of what arrived
  left open (no closing brace, the string being streamed unquoted) and no ``BlockEnd``: the
  fold reports it ``complete=False`` with that text, never as ``{}`` nor as whole. The text
  is sent only then, not piece by piece: pieces are values at JSON paths, which may arrive
  out of document order (a later piece can add to an earlier object, array or string), so no
  prefix of the text is final before the call ends;
* ``executableCode`` / ``codeExecutionResult`` -> complete ``server_tool`` blocks with the part
  in ``data``; ``inlineData`` / ``fileData`` -> ``MediaAdded`` (the media object, for the UI)
  and a complete ``other`` block (``name`` the part's key, ``data`` the part as received) in
  its place among the blocks, so that the turn goes back with it where it was;
* ``finishReason`` -> ``BlockEnd`` of the open blocks, then ``MessageDelta`` with the finish;
  the ``MessageEnd`` of every finished candidate comes at the end of input (Gemini has no
  terminal marker: the stream's end is its end), or before an error chunk, in candidate
  order. With several candidates one may start after another finished, and usage may follow
  a finish, so the message ends with the stream (a live fold never reads complete, then
  incomplete again). A prompt blocked before any candidate (``promptFeedback.blockReason``)
  -> ``MessageEnd(content_filter)`` at once.

Grounding: ``groundingMetadata.groundingChunks`` -> ``SourcesAdded`` (new chunks only, with
``webSearchQueries``), each ``groundingSupports`` entry -> ``CitationAdded`` once, whose
``start``/``end`` are ``segment.startIndex``/``endIndex``: **UTF-8 byte offsets** into the
candidate's text joined over all its text blocks (verified 8/8 on a capture); ``startIndex``
is absent for 0 (proto3 JSON). ``citationMetadata.citations`` (recitation) -> ``CitationAdded``
with ``startIndex``/``endIndex`` as given. Citations attach to the candidate's latest text
block.

``usageMetadata`` is a cumulative snapshot on (almost) every chunk: each new one replaces the
last (``UsageUpdate``), never summed. ``Usage.input_tokens`` = prompt + tool-use prompt tokens,
``output_tokens`` = candidates + thoughts (as OpenAI counts reasoning in its output),
``reasoning_tokens`` = thoughts, ``cached_tokens`` = cached content; ``total_tokens`` as sent.
A ``{"error": {...}}`` chunk raises ``StreamError``.

``promptFeedback`` (the prompt's ``safetyRatings``; for a blocked prompt its ``blockReason``
and ``blockReasonMessage``) and Vertex AI's ``createTime`` (``CHUNK_METADATA``) are
``metadata`` of the ``MessageStart`` (as far as they came) and ``MessageEnd`` (the latest).
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any, ClassVar

from .._errors import ProtocolError, StreamError
from .._events import (
    BlockEnd,
    BlockStart,
    CitationAdded,
    Event,
    MediaAdded,
    MessageDelta,
    MessageEnd,
    Notice,
    SignatureDelta,
    SourcesAdded,
    Unknown,
    UsageUpdate,
)
from .._parts import BlockKind, Citation, FinishReason, Usage
from ._fast import text_delta
from .base import ID, NAME, Provider, end_finished

__all__ = ["FINISH_REASONS", "Gemini", "usage_from_gemini"]

#: ``candidates[].finishReason`` -> normalized finish reason. Sources: the Gemini API and
#: Vertex AI ``FinishReason`` enum references, and vercel/ai
#: ``packages/google/src/map-google-generative-ai-finish-reason.ts`` (safety-like reasons ->
#: content filter, ``MALFORMED_FUNCTION_CALL`` -> error). Gemini has no tool-call reason: calls
#: end with ``STOP``.
#: Top-level ``GenerateContentResponse`` fields kept in ``Message.metadata`` under their own
#: names (the latest non-empty value), beside ``responseId`` (``id``), ``modelVersion``
#: (``model``) and ``usageMetadata`` (``Usage.raw``): ``promptFeedback`` (the prompt's
#: ``safetyRatings``; a blocked prompt's ``blockReason`` and ``blockReasonMessage``) and
#: Vertex AI's ``createTime``.
CHUNK_METADATA = ("promptFeedback", "createTime")

FINISH_REASONS: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MODEL_ARMOR": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "TOO_MANY_TOOL_CALLS": "error",
    "LANGUAGE": "other",
    "OTHER": "other",
    "IMAGE_OTHER": "other",
    "NO_IMAGE": "other",
    "FINISH_REASON_UNSPECIFIED": "other",
}

#: Parts that are provider-run tools, kept whole in a ``server_tool`` block.
SERVER_TOOL_PARTS = ("executableCode", "codeExecutionResult")
#: Parts that are media results.
MEDIA_PARTS = ("inlineData", "fileData")
#: Usage counts that make a ``usageMetadata`` worth an event (Vertex partial chunks carry only
#: ``trafficType``).
_COUNTS = ("promptTokenCount", "candidatesTokenCount", "totalTokenCount")

_PATH_STEP = re.compile(
    r"\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]"
)
#: In a quoted member name of a partialArgs path: an escape, or a bare ``"`` (a single-quoted
#: name may hold one), rewritten to make the name a JSON string literal.
_NAME_ESCAPE = re.compile(r'\\(.)|"', re.DOTALL)
#: How many steps a partialArgs path may have: the arguments are nested that deep, and their
#: JSON text is written by recursion (a 1 MB path of ``.a`` steps raised RecursionError).
MAX_PATH_STEPS = 128


def _int(value: Any) -> int | None:
    return value if value.__class__ is int else None


def _add(a: int | None, b: int | None) -> int | None:
    """The sum of the counts given; ``None`` when neither is (once per chunk: no list)."""
    if a is None:
        return b
    return a if b is None else a + b


def usage_from_gemini(usage: dict[str, Any]) -> Usage:
    """``usageMetadata`` -> :class:`Usage` (see the module docstring for the sums)."""
    prompt = _int(usage.get("promptTokenCount"))
    tool_prompt = _int(usage.get("toolUsePromptTokenCount"))
    candidates = _int(usage.get("candidatesTokenCount"))
    thoughts = _int(usage.get("thoughtsTokenCount"))
    return Usage(
        input_tokens=_add(prompt, tool_prompt),
        output_tokens=_add(candidates, thoughts),
        total_tokens=_int(usage.get("totalTokenCount")),
        reasoning_tokens=thoughts,
        cached_tokens=_int(usage.get("cachedContentTokenCount")),
        raw=usage,
    )


class _Candidate:
    """What is open in one candidate."""

    __slots__ = (
        "args",
        "call",
        "citations",
        "closed",
        "cursor",
        "cut",
        "ended",
        "finish",
        "index",
        "last_text",
        "next_block",
        "prose",
        "prose_kind",
        "sources",
        "string",
    )

    def __init__(self, index: int) -> None:
        self.index = index
        #: Block indices are numbered per candidate, from 0, as a stream of it alone.
        self.next_block = 0
        self.prose = -1
        self.prose_kind: BlockKind | None = None
        #: The Vertex call being streamed (-1: none) and its arguments so far.
        self.call = -1
        self.args: dict[str, Any] = {}
        #: The string value being streamed into ``args`` (its path and its pieces), joined
        #: into ``args`` by ``settle``: joining piece by piece cost time quadratic in its length.
        self.string: tuple[list[str | int], list[str]] | None = None
        #: Where the last partialArgs value went, and whether that string is still streaming:
        #: what stays open in the text of a call cut before its end.
        self.cursor: tuple[list[str | int], bool] = ([], False)
        #: A streamed call was cut before its ``{}`` (by a text part or a new call): its late
        #: pieces are dropped with a warning, not read as a call that never began.
        self.cut = False
        self.last_text: int | None = None
        #: Grounding already reported: chunks, and supports/citations by key.
        self.sources = 0
        self.citations: set[Any] = set()
        #: The candidate's ``finishReason`` came (its blocks are closed).
        self.ended = False
        #: ``(normalized, raw, frame)`` of that ``finishReason``.
        self.finish: tuple[FinishReason, str, Any] | None = None
        #: Its ``MessageEnd`` was sent (``_end_candidates``).
        self.closed = False

    def settle(self) -> None:
        """Put the string being streamed into ``args`` whole, before ``args`` is read or
        another value is placed."""
        string = self.string
        if string is not None:
            self.string = None
            path, pieces = string
            if len(pieces) > 1:
                _set(self.args, path, "".join(pieces))


class Gemini(Provider):
    """Gemini ``streamGenerateContent?alt=sse`` stream -> events."""

    name: ClassVar[str] = "gemini"

    def __init__(self, *, strict: bool = False) -> None:
        super().__init__(strict=strict)
        self._candidates: dict[int, _Candidate] = {}
        #: How many of them have no ``finishReason`` yet: the outcome is decided at 0.
        self._unfinished = 0
        #: Those that finished and whose ``MessageEnd`` waits (``end_finished``).
        self._finished: list[int] = []
        self._next_block = 0
        self._usage: Any = None
        #: The chunks' ``CHUNK_METADATA`` so far, for ``MessageStart`` / ``MessageEnd``.
        self._metadata: dict[str, Any] = {}

    # -- the frame loop ----------------------------------------------------------------------

    def handle(self, frame: Any, out: list[Event]) -> None:
        try:
            chunk = self.json_object(frame, blank_is_keepalive=True)
        except ProtocolError:
            if self.done_marker(frame, out):
                return
            raise
        if chunk is None:
            return
        if self.done_seen:
            self.violation("data after [DONE]", out, event=frame.event, raw=frame)
        metadata = self._metadata
        for key in CHUNK_METADATA:
            value = chunk.get(key)
            if value and metadata.get(key) != value:
                metadata[key] = value
        if "error" in chunk:
            self._error(chunk["error"], frame, out)
        try:
            finished: list[tuple[_Candidate, str, Any]] | None = None
            for candidate in chunk.get("candidates") or ():
                state, reason = self._candidate(candidate, chunk, frame, out)
                if reason is not None:
                    if finished is None:
                        finished = []
                    finished.append((state, reason, candidate.get("finishMessage")))
            usage = chunk.get("usageMetadata")
            if type(usage) is dict and usage != self._usage:
                self._usage = usage
                for key in _COUNTS:  # a loop: ``any`` would make a generator per chunk
                    if key in usage:
                        out.append(UsageUpdate(usage=usage_from_gemini(usage), raw=frame))
                        break
            if finished is not None:
                for state, reason, message in finished:
                    self._finish(state, reason, frame, out, message)
            elif not self._candidates:
                feedback = chunk.get("promptFeedback")
                if type(feedback) is dict and feedback.get("blockReason"):
                    self._blocked(feedback["blockReason"], chunk, frame, out)
        except (AttributeError, TypeError, KeyError) as exc:
            raise self.protocol_error(
                f"malformed chunk ({exc.__class__.__name__}: {exc})", event=frame.event, raw=frame
            ) from None

    # -- one candidate ----------------------------------------------------------------------

    def _candidate(
        self, candidate: dict[str, Any], chunk: dict[str, Any], frame: Any, out: list[Event]
    ) -> tuple[_Candidate, str | None]:
        index = candidate.get("index", 0)
        state = self._candidates.get(index)
        if state is None:
            if index.__class__ is not int:
                raise self.protocol_error(
                    f"candidate index is {index!r}", event=frame.event, raw=frame
                )
            state = _Candidate(index)
            self._candidates[index] = state
            self._unfinished += 1
            # A candidate that starts after the others finished undecides the outcome.
            self.terminal_seen = False
            self.start_message(
                out,
                frame,
                id=chunk.get("responseId"),
                model=chunk.get("modelVersion"),
                choice=index,
                metadata=dict(self._metadata) or None,
            )
        content = candidate.get("content")
        parts = content.get("parts") if type(content) is dict else None
        if parts:
            if state.ended:
                self.violation(
                    f"content for candidate {index} after its finishReason",
                    out,
                    event=frame.event,
                    raw=frame,
                )
            else:
                for part in parts:
                    self._part(state, part, frame, out)
        grounding = candidate.get("groundingMetadata")
        if grounding:
            self._grounding(state, grounding, frame, out)
        recitations = candidate.get("citationMetadata")
        if recitations:
            self._recitations(state, recitations, frame, out)
        reason = candidate.get("finishReason")
        return state, (str(reason) if reason is not None else None)

    def _part(self, state: _Candidate, part: dict[str, Any], frame: Any, out: list[Event]) -> None:
        signature = part.get("thoughtSignature")
        text = part.get("text")
        if text is not None:
            if text.__class__ is not str:
                raise self.protocol_error(
                    f"part text is {type(text).__name__}", event=frame.event, raw=frame
                )
            kind: BlockKind = "reasoning" if part.get("thought") else "text"
            if text:
                self._text(state, kind, text, frame, out)
            if signature:
                if state.prose_kind != kind:
                    self._open_prose(state, kind, frame, out)
                out.append(
                    SignatureDelta(
                        index=state.prose, signature=signature, choice=state.index, raw=frame
                    )
                )
            return
        call = part.get("functionCall")
        if call is not None:
            self._function_call(state, call, signature, frame, out)
            return
        for key in SERVER_TOOL_PARTS:
            if key in part:
                self._whole_part(state, "server_tool", part, frame, out, key=key)
                return
        for key in MEDIA_PARTS:
            if key in part:
                # For the UI (``Message.media``), and a block in its place in the turn, with
                # the part as received (an image model's ``thoughtSignature`` included), so
                # that ``to_request`` sends it back where it was.
                out.append(MediaAdded(media=part[key], raw=frame))
                self._whole_part(state, "other", part, frame, out, key=key)
                return
        keys = [key for key in part if key != "thoughtSignature"]
        out.append(Unknown(event_type=f"part.{keys[0] if keys else None}", raw=frame))

    # -- blocks ------------------------------------------------------------------------------

    def _whole_part(
        self,
        state: _Candidate,
        kind: BlockKind,
        part: dict[str, Any],
        frame: Any,
        out: list[Event],
        *,
        key: str,
    ) -> None:
        """A part kept whole in a block of its own, closed at once: ``name`` its key, ``data``
        the part as received."""
        self._close_prose(state, frame, out)
        block = self._new_block(state)
        out.append(
            BlockStart(
                index=block,
                kind=kind,
                name=key,
                complete=True,
                data=part,
                choice=state.index,
                raw=frame,
            )
        )
        out.append(BlockEnd(index=block, kind=kind, choice=state.index, raw=frame))

    def _new_block(self, state: _Candidate) -> int:
        self._next_block += 1  # blocks opened over all candidates
        block = state.next_block
        state.next_block = block + 1
        return block

    def _open_prose(self, state: _Candidate, kind: BlockKind, frame: Any, out: list[Event]) -> None:
        self._close_prose(state, frame, out)
        state.prose = self._new_block(state)
        state.prose_kind = kind
        if kind == "text":
            state.last_text = state.prose
        out.append(BlockStart(index=state.prose, kind=kind, choice=state.index, raw=frame))

    def _close_prose(self, state: _Candidate, frame: Any, out: list[Event]) -> None:
        if state.prose_kind is not None:
            out.append(
                BlockEnd(index=state.prose, kind=state.prose_kind, choice=state.index, raw=frame)
            )
            state.prose = -1
            state.prose_kind = None

    def _text(
        self, state: _Candidate, kind: BlockKind, text: str, frame: Any, out: list[Event]
    ) -> None:
        if state.call >= 0:
            # Only ``{}`` finishes a streamed call: a text part before it means the call's
            # arguments stopped short, so it is cut (kept open, ``complete=False``) as at a
            # ``finishReason`` inside it, never passed off as whole. Cut first, so that the
            # strict error's partial keeps the arguments that arrived.
            self._cut_call(state, frame, out)
            state.cut = True
            self.violation(
                "text inside a streamed function call (no closing functionCall {})",
                out,
                event=frame.event,
                raw=frame,
            )
        if state.prose_kind != kind:
            self._open_prose(state, kind, frame, out)
        out.append(text_delta(state.prose, kind, text, state.index, frame))

    def _function_call(
        self,
        state: _Candidate,
        call: dict[str, Any],
        signature: Any,
        frame: Any,
        out: list[Event],
    ) -> None:
        partial = call.get("partialArgs")
        if state.call >= 0:  # a Vertex call is streaming
            if partial or not call.get("name"):
                if partial:
                    self._partial_args(state, partial, frame)
                if signature:
                    out.append(
                        SignatureDelta(
                            index=state.call, signature=signature, choice=state.index, raw=frame
                        )
                    )
                # ``willContinue``: more is coming (Vertex sends ``{"willContinue": true}``
                # alone between the pieces of nested arguments). Without it the call ends:
                # at ``{}``, or at its last piece when no ``{}`` follows (as vercel/ai reads
                # it); a ``{}`` after that is a stray one.
                if not call.get("willContinue"):
                    self._end_call(state, frame, out)
                return
            # The same for a new call: the open one never got its ``{}``.
            self._cut_call(state, frame, out)
            state.cut = True
            self.violation(
                "a function call starts before the streamed one closed",
                out,
                event=frame.event,
                raw=frame,
            )
            self._function_call(state, call, signature, frame, out)
            return
        if partial or (not call.get("name") and not call.get("args")):
            if not call:
                return  # a stray closing ``{}``
            if state.cut:
                self.violation(
                    "functionCall arguments for a streamed call already cut short (dropped)",
                    out,
                    event=frame.event,
                    raw=frame,
                )
                return
            raise self.protocol_error(
                "functionCall arguments for a call that was never started",
                event=frame.event,
                raw=frame,
            )
        self._close_prose(state, frame, out)
        block = self._new_block(state)
        extra = {"thoughtSignature": signature} if signature else None
        if call.get("willContinue"):
            state.call = block
            state.args = {}
            state.string = None
            state.cursor = ([], False)
            out.append(
                BlockStart(
                    index=block,
                    kind="tool_call",
                    id=self.wire_str(call.get("id"), ID, out, frame),
                    name=self.wire_str(call.get("name"), NAME, out, frame),
                    extra=extra,
                    choice=state.index,
                    raw=frame,
                )
            )
            return
        args = call.get("args")
        out.append(
            BlockStart(
                index=block,
                kind="tool_call",
                id=self.wire_str(call.get("id"), ID, out, frame),
                name=self.wire_str(call.get("name"), NAME, out, frame),
                arguments=args if args is not None else {},
                complete=True,
                extra=extra,
                choice=state.index,
                raw=frame,
            )
        )
        out.append(BlockEnd(index=block, kind="tool_call", choice=state.index, raw=frame))

    def _partial_args(self, state: _Candidate, partial: list[Any], frame: Any) -> None:
        for arg in partial:
            path = self._path(arg.get("jsonPath"), frame)
            if "stringValue" in arg:
                value: Any = arg["stringValue"]
                string = state.string
                if string is not None and value.__class__ is str and string[0] == path:
                    string[1].append(value)  # the next piece of the string being streamed
                    state.cursor = (path, bool(arg.get("willContinue")))
                    continue
                state.settle()
                previous = _get(state.args, path)
                if previous.__class__ is str:
                    value = previous + value
                _set(state.args, path, value)
                if value.__class__ is str:
                    state.string = (path, [value])
                state.cursor = (path, value.__class__ is str and bool(arg.get("willContinue")))
                continue
            state.settle()
            if "numberValue" in arg:
                value = arg["numberValue"]
            elif "boolValue" in arg:
                value = arg["boolValue"]
            elif "nullValue" in arg:
                value = None
            else:
                continue
            _set(state.args, path, value)
            state.cursor = (path, value.__class__ is str and bool(arg.get("willContinue")))

    def _path(self, path: Any, frame: Any) -> list[str | int]:
        """``$.a.b[0]`` -> ``["a", "b", 0]``."""
        if path.__class__ is not str or not path.startswith("$"):
            raise self.protocol_error(
                f"partialArgs jsonPath {path!r} is not a JSON path", event=frame.event, raw=frame
            )
        steps: list[str | int] = []
        position = 1
        while position < len(path):
            match = _PATH_STEP.match(path, position)
            if match is None:
                raise self.protocol_error(
                    f"partialArgs jsonPath {path!r} is not understood",
                    event=frame.event,
                    raw=frame,
                )
            name, number, single, double = match.groups()
            if len(steps) == MAX_PATH_STEPS:
                raise self.protocol_error(
                    f"partialArgs jsonPath has more than {MAX_PATH_STEPS} steps",
                    event=frame.event,
                    raw=frame,
                )
            step: str | int | None = name
            if number is not None:
                # Python's int digit limit (4300) refuses what no list could be indexed with.
                step = int(number) if len(number) < 20 else None
            elif name is None:
                step = _member_name(single if single is not None else double)
            if step is None:
                raise self.protocol_error(
                    f"partialArgs jsonPath {path[:200]!r} has a step that is not understood "
                    f"({match.group()[:80]!r})",
                    event=frame.event,
                    raw=frame,
                )
            steps.append(step)
            position = match.end()
        return steps

    def _end_call(self, state: _Candidate, frame: Any, out: list[Event]) -> None:
        block, state.call = state.call, -1
        state.settle()
        arguments = json.dumps(state.args, ensure_ascii=False)
        state.args = {}
        out.append(text_delta(block, "tool_call", arguments, state.index, frame))
        out.append(BlockEnd(index=block, kind="tool_call", choice=state.index, raw=frame))

    def _cut_call(self, state: _Candidate, frame: Any, out: list[Event]) -> None:
        """The streamed call ends without its closing ``{}``: its arguments so far go out as
        JSON text left open and the block is not ended, so that the fold reports the call
        incomplete (``error`` set, the text in ``arguments_json``) instead of whole."""
        if state.call < 0:
            return
        block, state.call = state.call, -1
        state.settle()
        path, streaming = state.cursor
        arguments = _open_json(state.args, path, streaming)
        state.args = {}
        state.cursor = ([], False)
        out.append(text_delta(block, "tool_call", arguments, state.index, frame))

    def finish(self, out: list[Event]) -> None:
        # End of input inside a streamed call: keep what arrived for the partial message.
        for state in self._candidates.values():
            self._cut_call(state, None, out)
        self._end_candidates(None, out)

    def _end_candidates(self, frame: Any, out: list[Event]) -> None:
        """``MessageEnd`` for every candidate that got its ``finishReason`` and has none yet
        (``end_finished``): at the end of input, before an error chunk.

        A candidate's ``finishReason`` does not end the stream: with several candidates, one
        may start after the others finished. Ended at its ``finishReason``, a fold would read
        complete, then incomplete when that candidate starts. So the ``finishReason`` ends
        the candidate's blocks and announces its finish (``MessageDelta``); the message ends
        with the stream."""
        end_finished(self._candidates, self._finished, frame, out, metadata=self._metadata)

    # -- grounding --------------------------------------------------------------------------

    def _grounding(
        self, state: _Candidate, grounding: dict[str, Any], frame: Any, out: list[Event]
    ) -> None:
        chunks = grounding.get("groundingChunks") or []
        queries = grounding.get("webSearchQueries")
        for name, value in (("groundingChunks", chunks), ("webSearchQueries", queries)):
            if value is not None and value.__class__ is not list:
                raise TypeError(f"{name} is a JSON {type(value).__name__}, not a list")
        if len(chunks) > state.sources:
            out.append(SourcesAdded(sources=chunks[state.sources :], queries=queries, raw=frame))
            state.sources = len(chunks)
        for support in grounding.get("groundingSupports") or ():
            segment = support.get("segment") or {}
            indices = support.get("groundingChunkIndices") or []
            key = ("support", segment.get("startIndex", 0), segment.get("endIndex"), *indices)
            if key in state.citations:
                continue
            state.citations.add(key)
            citation = Citation(
                start=segment.get("startIndex", 0),
                end=segment.get("endIndex"),
                text=segment.get("text"),
                sources=[chunks[i] for i in indices if i.__class__ is int and 0 <= i < len(chunks)],
                block=state.last_text,
                raw=support,
            )
            out.append(CitationAdded(citation=citation, choice=state.index, raw=frame))

    def _recitations(
        self, state: _Candidate, metadata: dict[str, Any], frame: Any, out: list[Event]
    ) -> None:
        for entry in metadata.get("citations") or metadata.get("citationSources") or ():
            key = (
                "recitation",
                entry.get("startIndex", 0),
                entry.get("endIndex"),
                entry.get("uri"),
            )
            if key in state.citations:
                continue
            state.citations.add(key)
            citation = Citation(
                start=entry.get("startIndex", 0),
                end=entry.get("endIndex"),
                sources=[entry],
                block=state.last_text,
                raw=entry,
            )
            out.append(CitationAdded(citation=citation, choice=state.index, raw=frame))

    # -- end, errors ------------------------------------------------------------------------

    def _finish(
        self, state: _Candidate, reason: str, frame: Any, out: list[Event], message: Any = None
    ) -> None:
        if state.ended:
            return  # the same finishReason again
        finish_reason = FINISH_REASONS.get(reason, "other")
        if state.call >= 0:
            self._cut_call(state, frame, out)
            # At the token limit a cut call is the expected truncation, not a broken rule.
            if finish_reason != "length":
                self.violation(
                    "finishReason while a streamed function call is open",
                    out,
                    event=frame.event,
                    raw=frame,
                )
        self._close_prose(state, frame, out)
        state.ended = True
        if message and message.__class__ is str:
            # ``finishMessage`` is the only explanation Gemini gives of a finish such as
            # ``MALFORMED_FUNCTION_CALL`` ("Malformed function call: …"): kept as a notice.
            out.append(
                Notice(
                    kind="finish_message",
                    message=message,
                    data={"choice": state.index, "finish_reason": reason},
                    raw=frame,
                )
            )
        state.finish = (finish_reason, reason, frame)
        self._finished.append(state.index)
        # The message ends with the stream (``_end_candidates``); its finish is known now.
        out.append(
            MessageDelta(
                finish_reason=finish_reason,
                raw_finish_reason=reason,
                choice=state.index,
                raw=frame,
            )
        )
        # The outcome is decided unless a candidate starts later: a cut here is no loss.
        self._unfinished -= 1
        self.terminal_seen = not self._unfinished

    def _blocked(self, reason: Any, chunk: dict[str, Any], frame: Any, out: list[Event]) -> None:
        state = _Candidate(0)
        self._candidates[0] = state
        self.start_message(
            out,
            frame,
            id=chunk.get("responseId"),
            model=chunk.get("modelVersion"),
            metadata=dict(self._metadata) or None,
        )
        state.ended = state.closed = True
        self.terminal_seen = True
        out.append(
            MessageEnd(
                finish_reason="content_filter",
                raw_finish_reason=str(reason),
                data=chunk.get("promptFeedback"),
                metadata=dict(self._metadata) or None,
                raw=frame,
            )
        )

    def _error(self, error: Any, frame: Any, out: list[Event]) -> None:
        if error.__class__ is not dict:
            error = {"message": str(error)}
        code = error.get("status")
        if code is None:
            code = error.get("code")
        message = error.get("message")
        for state in self._candidates.values():
            self._cut_call(state, frame, out)  # the error's partial keeps what arrived
        self._end_candidates(frame, out)  # a candidate that finished keeps its finish
        self.terminal_seen = True
        raise StreamError(
            str(message) if message is not None else "error chunk",
            code=code,
            provider=self.name,
            raw=frame,
            position=self.position,
        )


#: How many list elements a partialArgs path may skip (elements that come out of order).
MAX_INDEX_SKIP = 64


def _member_name(quoted: str) -> str | None:
    """The member name inside ``['…']`` or ``["…"]`` of a path, its escapes read as in JSON
    (plus ``\\'``, which a single-quoted name needs), or ``None`` when an escape is not one."""

    def literal(match: re.Match[str]) -> str:
        escaped = match.group(1)
        if escaped is None:
            return '\\"'  # a bare double quote, in a single-quoted name
        return "'" if escaped == "'" else match.group()

    try:
        name = json.loads('"' + _NAME_ESCAPE.sub(literal, quoted) + '"')
    except ValueError:
        return None
    return name if name.__class__ is str else None


def _get(root: Any, path: list[str | int]) -> Any:
    node = root
    for step in path:
        if type(step) is int:
            if node.__class__ is not list or not 0 <= step < len(node):
                return None
            node = node[step]
        else:
            if node.__class__ is not dict:
                return None
            node = node.get(step)
    return node


def _open_json(args: dict[str, Any], path: list[str | int], streaming: bool) -> str:
    """JSON text of a call's arguments left open as a cut stream leaves it: the containers
    down ``path`` (where the last value went) unclosed and, if ``streaming``, the string at
    ``path`` unquoted. The root object always stays open, so the text never reads as a
    complete value."""
    if not path:  # nothing placed yet
        return json.dumps(args, ensure_ascii=False)[:-1]
    return _open_value(args, path, streaming)


def _open_value(node: Any, path: list[str | int], streaming: bool) -> str:
    """``node`` as JSON text, open along ``path`` while it leads through the last member of
    each level. A level it leaves through an earlier member (values that came out of order)
    stays open with its members whole."""
    if not path:
        text = json.dumps(node, ensure_ascii=False)
        return text[:-1] if streaming and node.__class__ is str else text
    step, rest = path[0], path[1:]
    if node.__class__ is dict and node and step == next(reversed(node)):
        whole = [
            f"{json.dumps(k, ensure_ascii=False)}: {json.dumps(v, ensure_ascii=False)}"
            for k, v in itertools.islice(node.items(), len(node) - 1)
        ]
        last = f"{json.dumps(step, ensure_ascii=False)}: {_open_value(node[step], rest, streaming)}"
        return "{" + ", ".join([*whole, last])
    if node.__class__ is list and node and step == len(node) - 1:
        whole = [json.dumps(v, ensure_ascii=False) for v in node[:-1]]
        return "[" + ", ".join([*whole, _open_value(node[-1], rest, streaming)])
    text = json.dumps(node, ensure_ascii=False)
    return text[:-1] if node.__class__ in (dict, list) else text


def _set(root: dict[str, Any], path: list[str | int], value: Any) -> None:
    """Set ``value`` at ``path``, making the dicts and lists on the way."""
    if not path:
        return
    node: Any = root
    for step, following in itertools.pairwise(path):
        child_default: Any = [] if following.__class__ is int else {}
        if type(step) is int:
            _fill_to(node, step)
            if node[step] is None:
                node[step] = child_default
            node = node[step]
        else:
            node = node.setdefault(step, child_default)
    last = path[-1]
    if type(last) is int:
        _fill_to(node, last)
    node[last] = value


def _json_type(value: Any) -> str:
    return {dict: "object", str: "string", bool: "boolean"}.get(
        value.__class__, "null" if value is None else "number"
    )


def _fill_to(node: Any, index: int) -> None:
    """Make ``index`` a place in the list ``node``, holding ``None`` until its value comes.

    Elements may come out of order (``[1]`` before ``[0]``), so an index past the end leaves
    places for those skipped; at most ``MAX_INDEX_SKIP`` of them, so that the memory a chunk
    costs stays in proportion to its size (a 100-byte chunk naming ``$.a[1000000000]`` made
    a list of a billion nulls). A ``node`` that is not a list (an earlier path made an object
    there) is refused: an object took the index as an integer key, and the arguments' JSON
    text then had ``"0"`` where the calls said ``[0]``."""
    if node.__class__ is not list:
        raise TypeError(f"partialArgs index [{index}] into a JSON {_json_type(node)}, not a list")
    missing = index + 1 - len(node)
    if missing > MAX_INDEX_SKIP + 1:
        raise TypeError(
            f"partialArgs index [{index}] skips {missing - 1} elements of a list of "
            f"{len(node)} (at most {MAX_INDEX_SKIP} may come out of order)"
        )
    if missing > 0:
        node.extend([None] * missing)
