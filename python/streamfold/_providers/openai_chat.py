"""OpenAI Chat Completions chunks (``openai``, ``openai-chat``) and Mistral (``mistral``).

Wire format (WIRE_FORMATS.md §3, §3b; openai-python ``types/chat/chat_completion_chunk.py``,
mistralai ``models/deltamessage.py``): data-only SSE, every data a ``chat.completion.chunk``,
the stream closed by ``data: [DONE]``::

    data: {"id", "model", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
           "logprobs": null, "finish_reason": null}], "usage": null}
    data: {"choices": [{"index": 0, "delta": {"content": "Hel"}, ...}]}
    data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_…",
           "function": {"name": "f", "arguments": ""}}]}}]}
    data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
           "function": {"arguments": "{\\"ci"}}]}}]}
    data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    data: {"choices": [], "usage": {"prompt_tokens": 14, ...}}      (include_usage)
    data: [DONE]

How each part maps to events:

* the first chunk of a choice -> ``MessageStart(choice=i)``; choices of ``n>1`` interleave;
* ``delta.content`` / ``delta.refusal`` / ``delta.reasoning`` (``reasoning_content``;
  OpenAI-compatible hosts) -> a text / refusal / reasoning block. A delta that carries the same
  text as both ``reasoning_content`` and ``reasoning`` (vLLM fills both names) adds it once
  (``ALIASES``). Such a block stays open while
  deltas of its kind follow and closes when another kind starts. Empty or null values (the first
  delta carries ``role`` and ``content: ""`` or ``null``) make no event and no block;
* ``delta.tool_calls[k]`` -> a ``tool_call`` block keyed by ``(choice, k.index)``; the indices
  may start above 0, be sparse and interleave. ``id`` and ``name`` come on the first fragment
  only; an entry whose ``id`` differs from the call its index points at starts a new call
  (hosts that reuse index 0). An empty ``id`` or ``name`` is none: Alibaba Qwen/DashScope and
  other hosts send ``"id": ""`` and ``"name": ""`` on every later fragment of a call.
  Argument fragments become ``BlockDelta`` texts;
* ``delta.annotations`` (search models' ``url_citation``s, OpenRouter's web plugin) ->
  ``CitationAdded`` on the choice's latest text block, offsets in code points into its content;
* ``delta.audio`` (audio output) -> one ``other`` block whose text is the transcript and whose
  ``data`` is ``{"type": "audio", "id", "data", "transcript", "expires_at"}``, strings joined;
* ``choices[].logprobs`` -> ``BlockDelta.logprobs`` of the delta made from the same choice
  (a ``Notice(kind="logprobs")`` when the chunk carried no text);
* ``finish_reason`` -> ``BlockEnd`` for the choice's open blocks, then ``MessageDelta`` with the
  finish; the ``MessageEnd`` of every finished choice comes at ``[DONE]`` (or at the end of
  input, or before an in-stream error), in choice order: with ``n>1`` a choice may start after
  another finished, and the usage chunk follows the finishes, so the message ends with the
  stream (a live fold never reads complete, then incomplete again);
* ``usage`` (non-null) -> ``UsageUpdate``, before the ``MessageDelta`` of the same chunk (Mistral
  and OpenRouter put usage on the finishing chunk; OpenAI on a last chunk with ``choices: []``;
  Groq's older streams in ``x_groq.usage`` of the finishing chunk, read when there is no
  top-level ``usage``).
  Azure's first chunk also has ``choices: []`` but no usage: it makes no event;
* a top-level ``error`` in a data payload (OpenAI, OpenRouter) or an ``event: error`` frame
  (Groq) -> ``StreamError`` after the usage of the same chunk;
* ``[DONE]`` is ordinary data, recognised only when it fails to parse as JSON;
* top-level ``created``, ``system_fingerprint``, ``service_tier``, ``moderation`` and Azure's
  ``prompt_filter_results`` (``CHUNK_METADATA``) -> ``metadata`` of the ``MessageStart`` (as
  far as they came) and ``MessageEnd`` (their latest non-empty values).

Mistral differs (``Mistral``): a tool call arrives whole in one delta, often without ``index``
(the SDK defaults it to 0), so every entry that carries an ``id`` is a new call; its
``arguments`` may be an object or JSON text. A whole call whose arguments parse to an object
becomes ``BlockStart(complete=True, arguments=…, text=<the JSON text>)`` and ``BlockEnd``; text
that does not parse (yet) is streamed as fragments, so the fold reports it if it never becomes
valid. ``delta.content`` may be a list of chunks: ``{"type": "text"}`` and
``{"type": "thinking", "thinking": [{"type": "text", "text": …}]}`` (a reasoning block), and
``{"type": "reference", "reference_ids": [...]}`` -> ``CitationAdded`` on the open text block,
without offsets (Mistral gives none).

The stream's outcome is decided when every choice that started has a ``finish_reason``
(``terminal_seen``): a cut after that, before ``[DONE]``, still ends the messages, with a
warning.

Speed: once a chunk of one text (or one argument fragment) has been parsed, the next chunks of
the same shape are read by string comparison instead of a JSON parse (``_chunk_template``);
the result is the same, as the tests check against a parse of every chunk.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from .._errors import ProtocolError, StreamError
from .._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    CitationAdded,
    Event,
    MessageDelta,
    Notice,
    Unknown,
    UsageUpdate,
)
from .._parts import BlockKind, Citation, FinishReason, Usage
from ._chunk_template import ChunkTemplate
from ._fast import text_delta
from .base import ID, NAME, FoldingTarget, Provider, end_finished

__all__ = ["FINISH_REASONS", "MISTRAL_FINISH_REASONS", "Mistral", "OpenAIChat", "usage_from_openai"]

#: ``choices[].finish_reason`` -> normalized finish reason. Source: openai-python
#: ``types/chat/chat_completion_chunk.py`` (``Literal["stop", "length", "tool_calls",
#: "content_filter", "function_call"]``); ``function_call`` is the deprecated form of
#: ``tool_calls``. Anything else (an OpenAI-compatible host's own value) is ``other``.
FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
    "function_call": "tool_calls",
}

#: Mistral's finish reasons. Source: mistralai ``models/completionresponsestreamchoice.py``
#: (``stop | length | error | tool_calls``) and vercel/ai ``map-mistral-finish-reason.ts``
#: (``model_length`` -> length).
MISTRAL_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "model_length": "length",
    "tool_calls": "tool_calls",
    "error": "error",
}

#: Top-level chunk fields kept in ``Message.metadata`` (the latest non-empty value), as the
#: SDK's final ``ChatCompletion`` has them (openai-python ``ChatCompletionChunk``): ``created``
#: (Unix seconds), ``system_fingerprint`` (the backend configuration, for determinism with
#: ``seed``), ``service_tier`` (the tier that served the request), ``moderation`` (moderated
#: completions: ``{input, output}`` results, on their own chunk); and Azure's
#: ``prompt_filter_results`` (its content filter's verdict on the prompt, on a first chunk
#: with ``choices: []``). Azure's first chunk has ``created: 0``: empty values are skipped.
CHUNK_METADATA = (
    "created",
    "system_fingerprint",
    "service_tier",
    "moderation",
    "prompt_filter_results",
)

#: ``delta`` keys that carry text, in the order they are read, and the block kind they feed.
#: ``reasoning`` (Groq, OpenRouter) and ``reasoning_content`` (DeepSeek, vLLM) are
#: OpenAI-compatible extensions.
TEXT_FIELDS: tuple[tuple[str, BlockKind], ...] = (
    ("reasoning_content", "reasoning"),
    ("reasoning", "reasoning"),
    ("content", "text"),
    ("refusal", "refusal"),
)

#: Second names of one text, each -> the name read before it. vLLM (0.11-0.12) fills both
#: ``reasoning`` and its deprecated alias ``reasoning_content`` with the same text in one delta
#: (for clients of either name): read twice, the reasoning would be doubled. An alias equal to
#: the name read before it is skipped. Two different non-empty values are not an alias pair
#: but two texts: both are kept, in ``TEXT_FIELDS`` order (nothing is lost), with a warning
#: (strict mode refuses the stream), since which of them the host meant cannot be known.
ALIASES: dict[str, str] = {"reasoning": "reasoning_content"}

#: How many chunk templates are kept besides the first one tried.
SPARE_TEMPLATES = 4

#: The keys a tool-call argument fragment may have for a template to be learned from it.
CALL_FRAGMENT_KEYS = frozenset(("index", "function", "id", "type"))

#: Kinds of Mistral ``content`` chunks that carry text.
CHUNK_KINDS: dict[str, BlockKind] = {"text": "text", "thinking": "reasoning"}


def _given(value: Any) -> Any:
    """``value``, or ``None`` for ``""``. OpenAI-compatible hosts (Alibaba Qwen/DashScope…)
    send ``"id": ""`` and ``"name": ""`` on every continuation fragment of a tool call: taken
    at face value, each such fragment would differ from the call's id and start a new call."""
    return None if value == "" else value


def _int(value: Any) -> int | None:
    return value if value.__class__ is int else None


def usage_from_openai(usage: dict[str, Any]) -> Usage:
    """Chat Completions ``usage`` -> :class:`Usage` (``prompt_tokens`` include cached ones;
    ``completion_tokens`` include reasoning ones, as OpenAI counts them)."""
    prompt_details = usage.get("prompt_tokens_details")
    completion_details = usage.get("completion_tokens_details")
    return Usage(
        input_tokens=_int(usage.get("prompt_tokens")),
        output_tokens=_int(usage.get("completion_tokens")),
        total_tokens=_int(usage.get("total_tokens")),
        reasoning_tokens=(
            _int(completion_details.get("reasoning_tokens"))
            if type(completion_details) is dict
            else None
        ),
        cached_tokens=(
            _int(prompt_details.get("cached_tokens")) if type(prompt_details) is dict else None
        ),
        raw=usage,
    )


def _chunk_usage(chunk: dict[str, Any]) -> tuple[Any, str]:
    """The chunk's usage and where it was: top-level ``usage``, else Groq's legacy
    ``x_groq.usage`` (Groq put the usage of a stream there, on its last chunk, before it took
    up ``stream_options.include_usage``; the same counters, plus ``queue_time``,
    ``prompt_time``, ``completion_time``, ``total_time``). A top-level ``usage`` wins when both
    are there."""
    usage = chunk.get("usage")
    if not usage:
        groq = chunk.get("x_groq")
        if type(groq) is dict:
            legacy = groq.get("usage")
            if legacy:
                return legacy, "x_groq.usage"
    return usage, "usage"


def _logprobs(choice: dict[str, Any]) -> Any:
    """The choice's log-probabilities, or ``None`` when it has none (``{"content": []}``)."""
    logprobs = choice.get("logprobs")
    if not logprobs or (logprobs.__class__ is dict and not any(logprobs.values())):
        return None
    return logprobs


def _one_text(delta: dict[str, Any]) -> tuple[str, BlockKind, str] | None:
    """``(key, kind, text)`` when exactly one of the ``TEXT_FIELDS`` of ``delta`` holds text
    (the others absent, null or empty), as a string. A delta with both ``ALIASES`` filled is
    never one text: a template cut around one of them would hold the other's value fixed and
    fit only chunks that repeat it, so such chunks are always parsed (``_delta``)."""
    found = None
    for key, kind in TEXT_FIELDS:
        value = delta.get(key)
        if value:
            if found is not None or value.__class__ is not str:
                return None
            found = key, kind, value
    return found


def _continued_block(state: _Choice, call: Any) -> int | None:
    """The open block of the call a ``tool_calls`` entry only continues, if it is a plain
    argument fragment: ``index``, string ``arguments`` and otherwise at most an empty ``id`` and
    ``name`` and a ``type`` (Qwen/DashScope's fragments), all of which ``_tool_call`` ignores
    for a known call. A template learned from it then reads as ``_tool_call`` does; any other
    entry (an id, which may start a new call) is never learned."""
    if call.__class__ is not dict or not call.keys() <= CALL_FRAGMENT_KEYS or "index" not in call:
        return None
    function = call.get("function")
    if (
        function.__class__ is not dict
        or not function.keys() <= {"arguments", "name"}
        or function.get("arguments").__class__ is not str
        or function.get("name", "") != ""
        or call.get("id", "") != ""
    ):
        return None
    known = state.calls.get(call["index"])
    if known is None or known[0] not in state.open_calls:
        return None
    return known[0]


def _error_parts(error: Any) -> tuple[str, str | int | None]:
    """``(message, code)`` of an error object (``{"message", "code"|"type"}`` or a string)."""
    if error.__class__ is dict:
        code = error.get("code")
        if code is None:
            code = error.get("type")
        message = error.get("message")
        return (str(message) if message is not None else json.dumps(error)), code
    return str(error), None


class _Choice:
    """What is open in one choice."""

    __slots__ = (
        "audio",
        "audio_block",
        "calls",
        "closed",
        "ended",
        "finish",
        "index",
        "last_call",
        "last_text",
        "next_block",
        "open_calls",
        "prose",
        "prose_kind",
    )

    def __init__(self, index: int) -> None:
        self.index = index
        #: Block indices are numbered per choice, from 0, as a stream of this choice alone.
        self.next_block = 0
        #: The open text, refusal or reasoning block (-1: none) and its kind.
        self.prose = -1
        self.prose_kind: BlockKind | None = None
        #: The latest text block (-1: none yet): what ``delta.annotations`` cite.
        self.last_text = -1
        #: ``delta.audio`` so far (``{"type": "audio", "id", "data", "transcript",
        #: "expires_at"}``) and its block (-1: none).
        self.audio: dict[str, Any] = {}
        self.audio_block = -1
        #: Tool-call key (``tool_calls[].index``, else ``id``) -> (block index, call id).
        self.calls: dict[Any, tuple[int, Any]] = {}
        #: Open tool-call blocks, in the order they opened (a dict: a fragment's block is
        #: looked up in it, which a list of thousands of open calls made quadratic).
        self.open_calls: dict[int, None] = {}
        self.last_call = -1
        #: The choice's ``finish_reason`` came (its blocks are closed).
        self.ended = False
        #: ``(normalized, raw, frame)`` of that ``finish_reason`` (``(None, None, frame)``:
        #: the stream ended with none).
        self.finish: tuple[FinishReason | None, str | None, Any] | None = None
        #: Its ``MessageEnd`` was sent (``_end_choices``).
        self.closed = False


class OpenAIChat(Provider):
    """OpenAI Chat Completions stream -> events."""

    name: ClassVar[str] = "openai"
    finish_reasons: ClassVar[dict[str, FinishReason]] = FINISH_REASONS

    def __init__(self, *, strict: bool = False) -> None:
        super().__init__(strict=strict)
        self._choices: dict[int, _Choice] = {}
        #: How many of them have no ``finish_reason`` yet: the outcome is decided at 0.
        self._unfinished = 0
        #: Those that finished and whose ``MessageEnd`` waits (``end_finished``).
        self._finished: list[int] = []
        self._done = False
        #: The chunk template tried first: the one that read or was learned last.
        self._template: ChunkTemplate | None = None
        #: The others still in use, tried in turn when it does not fit: the chunks of ``n>1``
        #: choices, and of tool calls streamed side by side, interleave.
        self._spares: list[ChunkTemplate] = []
        #: Templates learned; a stream whose chunks never repeat stops trying after 64.
        self._misses = 0
        #: The chunks' ``CHUNK_METADATA`` so far, for ``MessageStart`` / ``MessageEnd``.
        self._metadata: dict[str, Any] = {}

    # -- the frame loop ----------------------------------------------------------------------

    def handle_frames(self, frames: list[Any], out: list[Event]) -> None:
        """The pipeline's loop over one chunk's frames: number each and ``handle`` it, but read
        the commonest frame (a plain text fragment for the open text block, which the Rust cut
        reads) right here: a Python call per frame is a good part of its whole cost. This does
        exactly what ``handle`` does for such a frame; every other frame goes to ``handle``."""
        handle = self.handle
        first = self.position + 1
        for self.position, frame in enumerate(frames, first):
            template = self._template
            if template is not None and template.block < 0:
                current = template.state
                kind = template.kind
                if current.prose_kind == kind:
                    cut = template.cut
                    text = cut(frame)
                    if text is not None and frame.event == "message":
                        out.append(text_delta(current.prose, kind, text, current.index, frame))
                        continue
            handle(frame, out)

    def folding_target(self) -> FoldingTarget | None:
        """The fragments the first template reads: text while its choice's open block is of
        its kind, arguments while its call's choice has not finished (what ``handle`` checks
        for each such frame)."""
        template = self._template
        if template is None:
            return None
        current = template.state
        if template.block >= 0:
            if current.ended:
                return None
            return template.cutter, "message", current.index, template.block, "tool_call"
        if current.prose_kind != template.kind:
            return None
        return template.cutter, "message", current.index, current.prose, template.kind

    def handle(self, frame: Any, out: list[Event]) -> None:
        found = self._read_templated(frame) if self._template is not None else None
        if found is not None and frame.event == "message":
            # The common chunk, read without a JSON parse (see ``_chunk_template``).
            template, text = found
            current = template.state
            block = template.block
            if block < 0:
                if current.prose_kind == template.kind:
                    out.append(text_delta(current.prose, template.kind, text, current.index, frame))
                    return
            elif not current.ended:
                out.append(text_delta(block, "tool_call", text, current.index, frame))
                return
        if frame.data.startswith("[DONE]"):  # ordinary data, never parsed
            self._done_marker(frame, out)
            return
        try:
            chunk = self.frame_json(frame)
        except ProtocolError as exc:
            if not frame.data.strip():
                return  # an empty data line: a keep-alive, not a chunk
            raise self.protocol_error(exc.message, event=frame.event, raw=frame) from None
        if self._done:
            self.violation("data after [DONE]", out, event=frame.event, raw=frame)
        if chunk.__class__ is not dict:
            raise self.protocol_error("data is not a JSON object", event=frame.event, raw=frame)
        metadata = self._metadata
        for key in CHUNK_METADATA:
            value = chunk.get(key)
            if value and metadata.get(key) != value:
                metadata[key] = value
        if frame.event == "error" or chunk.get("error"):
            self._error(chunk, frame, out)
        choices = chunk.get("choices")
        finished: list[tuple[_Choice, Any]] | None = None
        if choices:
            if choices.__class__ is not list:
                raise self.protocol_error("choices is not a list", event=frame.event, raw=frame)
            states = self._choices
            for choice in choices:
                try:
                    index = choice.get("index", 0)
                    state = states.get(index)
                    if state is None:
                        state = self._start(index, chunk, frame, out)
                    delta = choice.get("delta")
                    if delta:
                        content = delta.get("content")
                        # The common chunk: one text fragment for the open text block.
                        if (
                            state.prose_kind == "text"
                            and content
                            and len(delta) == 1
                            and content.__class__ is str
                        ):
                            logprobs = _logprobs(choice) if choice.get("logprobs") else None
                            if self._misses < 64:
                                self._learn(chunk, choice, state, delta, frame)
                            out.append(
                                BlockDelta(
                                    index=state.prose,
                                    kind="text",
                                    text=content,
                                    choice=index,
                                    raw=frame,
                                    logprobs=logprobs,
                                )
                                if logprobs
                                else text_delta(state.prose, "text", content, index, frame)
                            )
                        else:
                            open_kind = state.prose_kind
                            self._delta(state, delta, choice, frame, out)
                            if self._misses < 64 and state.prose_kind == open_kind:
                                self._learn(chunk, choice, state, delta, frame)
                    elif _logprobs(choice) is not None:
                        self._logprobs_alone(state, choice, frame, out)
                    reason = choice.get("finish_reason")
                    if reason is not None:
                        if finished is None:
                            finished = []
                        finished.append((state, reason))
                except (AttributeError, TypeError, KeyError) as exc:
                    raise self.protocol_error(
                        f"malformed choice ({exc.__class__.__name__}: {exc})",
                        event=frame.event,
                        raw=frame,
                    ) from None
        usage, where = _chunk_usage(chunk)
        if usage:
            if usage.__class__ is not dict:
                raise self.protocol_error(f"{where} is not an object", event=frame.event, raw=frame)
            out.append(UsageUpdate(usage=usage_from_openai(usage), raw=frame))
        if finished is not None:
            for state, reason in finished:
                self._finish(state, reason, frame, out)

    def _learn(
        self,
        chunk: dict[str, Any],
        choice: dict[str, Any],
        state: _Choice,
        delta: dict[str, Any],
        frame: Any,
    ) -> None:
        """Learn the template of this chunk if it is a common one: one choice whose ``delta``
        holds one text (content, reasoning or refusal, beside any constant fields such as
        Groq's ``channel``) or one argument fragment of an open call, nothing else
        (``_chunk_template``). Called once the chunk is handled, and only when its block was
        already open: a block's first chunk often differs (``role``), and a stream of a few
        chunks would not repay the learning."""
        if (
            not self.templates
            or len(chunk["choices"]) != 1
            or choice.get("finish_reason") is not None
            or _logprobs(choice) is not None
            or _chunk_usage(chunk)[0]
            or chunk.get("error")
            or frame.event != "message"
            or self._done
            or delta.__class__ is not dict
            or delta.get("annotations")
        ):
            return
        calls = delta.get("tool_calls")
        kind: BlockKind
        if not calls and not delta.get("function_call"):
            prose = _one_text(delta)
            if prose is None or state.prose_kind != prose[1]:
                return
            key, kind, text = prose
            block = -1
            path: tuple[str | int, ...] = ("choices", 0, "delta", key)
        elif len(delta) == 1 and type(calls) is list and len(calls) == 1:
            call = calls[0]
            continued = _continued_block(state, call)
            if continued is None:
                return
            kind, text, block = "tool_call", call["function"]["arguments"], continued
            path = ("choices", 0, "delta", "tool_calls", 0, "function", "arguments")
        else:
            return
        self._misses += 1
        template = ChunkTemplate.learn(
            frame, path=path, text=text, state=state, block=block, kind=kind
        )
        if template is not None:
            self._keep(template)

    def _keep(self, template: ChunkTemplate) -> None:
        """Make a new template the first one tried. It replaces any other for the same target
        (whose chunks changed shape: a host that varies ``created``, say); the rest stay, up
        to ``SPARE_TEMPLATES``."""
        target = (template.state, template.block, template.kind)
        spares = [
            t
            for t in (self._template, *self._spares)
            if t is not None and (t.state, t.block, t.kind) != target
        ]
        self._template = template
        self._spares = spares[:SPARE_TEMPLATES]

    def _read_templated(self, frame: Any) -> tuple[ChunkTemplate, str] | None:
        """The template the frame fits and its text, if any: the first one, then the spares.
        A spare that fits changes places with the first."""
        template = self._template
        if template is None:
            return None
        cut = template.cut
        text = cut(frame)
        if text is None:
            text = template.read(frame.data_bytes)
        if text is not None:
            return template, text
        spares = self._spares
        for k, spare in enumerate(spares):
            # The Rust cut alone: a frame it does not answer is parsed, which is always right
            # and, for the few frames that fit no template, cheaper than a second reader.
            cut = spare.cut
            text = cut(frame)
            if text is not None:
                spares[k] = template
                self._template = spare
                return spare, text
        return None

    def _forget_call_templates(self) -> None:
        """A new tool call may take over the ``tool_calls[].index`` a template points at."""
        kept = [t for t in (self._template, *self._spares) if t is not None and t.block < 0]
        self._template = kept[0] if kept else None
        self._spares = kept[1:]

    def finish(self, out: list[Event]) -> None:
        """End of input after every choice finished but before ``[DONE]``.

        The answer itself is whole: completion is read from ``finish_reason``, as Mistral's
        guide says to. But OpenAI sends the ``include_usage`` chunk after it, and OpenRouter
        its in-stream error: a cut there loses them without a trace, so it is said.
        """
        self._end_choices(None, out)
        if self.terminal_seen and not self._done:
            self.violation(
                "the stream ended after finish_reason without [DONE]: a usage chunk or an "
                "error sent after the finish may be missing",
                out,
                event=None,
            )

    def _done_marker(self, frame: Any, out: list[Event]) -> None:
        """``[DONE]``: the end of the data; what comes after it breaks the order. Every
        choice that finished ends here (``_end_choices``)."""
        self._template = None
        self._spares = []
        if self._done:
            self.violation("second [DONE]", out, event=frame.event, raw=frame)
        self._done = True
        if not self.terminal_seen and self._choices:
            self._end_unfinished(frame, out)
        self._end_choices(frame, out)

    def _end_unfinished(self, frame: Any, out: list[Event]) -> None:
        """``[DONE]`` before some choice's ``finish_reason``: hosts that never send one
        (Snowflake Cortex) end their streams so. The connection was not cut, the host ended
        the stream: the choice ends here with no finish reason, and a warning says the host
        sent none (strict mode refuses the stream)."""
        unfinished = [state for state in self._choices.values() if not state.ended]
        numbers = ", ".join(str(state.index) for state in unfinished)
        self.violation(
            f"[DONE] before a finish_reason for choice {numbers}: the host sent none, so the "
            "answer's end is not known to be the model's",
            out,
            event=frame.event,
            raw=frame,
        )
        for state in unfinished:
            self._close_blocks(state, frame, out)
            state.finish = (None, None, frame)
            self._finished.append(state.index)
        self._unfinished = 0
        self.terminal_seen = True

    def _end_choices(self, frame: Any, out: list[Event]) -> None:
        """``MessageEnd`` for every choice that got its ``finish_reason`` and has none yet
        (``end_finished``): at ``[DONE]``, at the end of input, before an in-stream error.

        A choice's ``finish_reason`` does not end the stream: the ``include_usage`` chunk and
        OpenRouter's error come after it, and with ``n>1`` a choice may start after the others
        finished (its first chunk can follow choice 0's finish). Ended at its
        ``finish_reason``, a fold would read complete, then incomplete when that choice
        starts, then complete again, and its usage would come after its end. So the
        ``finish_reason`` chunk ends the choice's blocks and announces the finish
        (``MessageDelta``); the message ends with the stream."""
        end_finished(self._choices, self._finished, frame, out, metadata=self._metadata)

    # -- message, blocks ---------------------------------------------------------------------

    def _start(self, index: Any, chunk: dict[str, Any], frame: Any, out: list[Event]) -> _Choice:
        if index.__class__ is not int:
            raise self.protocol_error(
                f"choice index is {index!r}, not an integer", event=frame.event, raw=frame
            )
        state = _Choice(index)
        self._choices[index] = state
        self._unfinished += 1
        # A choice that starts after the others finished undecides the outcome (n>1).
        self.terminal_seen = False
        self.start_message(
            out,
            frame,
            id=chunk.get("id") or None,
            model=chunk.get("model") or None,
            choice=index,
            metadata=dict(self._metadata) or None,
        )
        return state

    def _open(
        self, state: _Choice, kind: BlockKind, frame: Any, out: list[Event], **fields: Any
    ) -> int:
        block = state.next_block
        state.next_block = block + 1
        if kind == "tool_call":
            self._forget_call_templates()
        out.append(BlockStart(index=block, kind=kind, choice=state.index, raw=frame, **fields))
        return block

    def _close_prose(self, state: _Choice, frame: Any, out: list[Event]) -> None:
        if state.prose_kind is not None:
            out.append(
                BlockEnd(index=state.prose, kind=state.prose_kind, choice=state.index, raw=frame)
            )
            state.prose = -1
            state.prose_kind = None

    def _text(
        self,
        state: _Choice,
        kind: BlockKind,
        text: str,
        frame: Any,
        out: list[Event],
        *,
        logprobs: Any = None,
    ) -> None:
        if state.prose_kind != kind:
            self._close_prose(state, frame, out)
            state.prose = self._open(state, kind, frame, out)
            state.prose_kind = kind
            if kind == "text":
                state.last_text = state.prose
        out.append(
            BlockDelta(
                index=state.prose,
                kind=kind,
                text=text,
                choice=state.index,
                raw=frame,
                logprobs=logprobs,
            )
        )

    # -- one choice's delta ------------------------------------------------------------------

    def _delta(
        self,
        state: _Choice,
        delta: dict[str, Any],
        choice: dict[str, Any],
        frame: Any,
        out: list[Event],
    ) -> None:
        if delta.__class__ is not dict:
            raise self.protocol_error("delta is not an object", event=frame.event, raw=frame)
        if state.ended and self._has_content(delta):
            self.violation(
                f"delta for choice {state.index} after its finish_reason",
                out,
                event=frame.event,
                raw=frame,
            )
            return
        logprobs = _logprobs(choice)
        made = len(out)
        for key, kind in TEXT_FIELDS:
            value = delta.get(key)
            if not value:
                continue  # absent, null or "": the first delta's placeholders
            alias = ALIASES.get(key)
            if alias is not None:
                first = delta.get(alias)
                if first:
                    if first == value:
                        continue  # the same text under its second name: read once
                    self.violation(
                        f"delta.{alias} and delta.{key} differ; both are kept",
                        out,
                        event=frame.event,
                        raw=frame,
                    )
            if value.__class__ is str:
                self._text(state, kind, value, frame, out, logprobs=logprobs)
                logprobs = None
            elif value.__class__ is list and key == "content":
                self._content_chunks(state, value, frame, out)
            else:
                raise self.protocol_error(
                    f"delta.{key} is {type(value).__name__}", event=frame.event, raw=frame
                )
        tool_calls = delta.get("tool_calls")
        if tool_calls:
            if tool_calls.__class__ is not list:
                raise self.protocol_error(
                    "delta.tool_calls is not a list", event=frame.event, raw=frame
                )
            self._close_prose(state, frame, out)
            for call in tool_calls:
                if call.__class__ is not dict:
                    raise self.protocol_error(
                        "a tool_calls entry is not an object", event=frame.event, raw=frame
                    )
                self._tool_call(state, call, frame, out)
        function_call = delta.get("function_call")
        if function_call:
            # The deprecated single-call form: one call per choice, under a key of its own
            # so it never merges with ``tool_calls``.
            self._close_prose(state, frame, out)
            call = {"index": "function_call", "function": function_call}
            self._tool_call(state, call, frame, out)
        if logprobs is not None and len(out) == made:
            self._logprobs_alone(state, choice, frame, out)
        annotations = delta.get("annotations")
        if annotations:
            self._annotations(state, annotations, frame, out)
        audio = delta.get("audio")
        if audio:
            self._audio(state, audio, frame, out)

    def _audio(self, state: _Choice, audio: Any, frame: Any, out: list[Event]) -> None:
        """``delta.audio`` (audio output, ``modalities: ["text", "audio"]``): pieces with an
        ``id``, base64 ``data`` and ``transcript`` text, the last one only ``expires_at``. One
        ``other`` block per choice whose text is the transcript (its ``BlockDelta``s) and whose
        ``data`` is the audio as the SDK accumulates it, strings joined; its ``BlockEnd`` at
        the finish (again for a piece after it) carries it. ``to_request`` sends its ``id``."""
        if audio.__class__ is not dict:
            raise self.protocol_error("delta.audio is not an object", event=frame.event, raw=frame)
        kept = state.audio
        if state.audio_block < 0:
            self._close_prose(state, frame, out)
            kept["type"] = "audio"
            state.audio_block = self._open(state, "other", frame, out, data=dict(kept))
        for key, value in audio.items():
            if value is None:
                continue
            if key in ("data", "transcript") and value.__class__ is str:
                kept[key] = kept.get(key, "") + value
            else:
                kept[key] = value
        transcript = audio.get("transcript")
        if transcript and transcript.__class__ is str:
            out.append(
                BlockDelta(
                    index=state.audio_block,
                    kind="other",
                    text=transcript,
                    choice=state.index,
                    raw=frame,
                )
            )
        if state.ended:  # a piece after the finish (its expiry): the block's data again
            self._end_audio(state, frame, out)

    def _end_audio(self, state: _Choice, frame: Any, out: list[Event]) -> None:
        if state.audio_block >= 0:
            out.append(
                BlockEnd(
                    index=state.audio_block,
                    kind="other",
                    choice=state.index,
                    data=dict(state.audio),
                    raw=frame,
                )
            )

    def _annotations(self, state: _Choice, annotations: Any, frame: Any, out: list[Event]) -> None:
        """``delta.annotations`` (search models' web citations; OpenRouter's web plugin):
        ``{"type": "url_citation", "url_citation": {"url", "title", "start_index",
        "end_index"}}``, the offsets in code points into the choice's content, as in the
        non-streamed ``message.annotations``. Each is a ``CitationAdded`` on the latest text
        block (``None`` before any text), with the annotation as its source."""
        if annotations.__class__ is not list:
            raise self.protocol_error(
                "delta.annotations is not a list", event=frame.event, raw=frame
            )
        for annotation in annotations:
            if annotation.__class__ is not dict:
                raise self.protocol_error(
                    "a delta.annotations entry is not an object", event=frame.event, raw=frame
                )
            span = annotation.get(annotation.get("type"))
            if span.__class__ is not dict:
                span = annotation
            citation = Citation(
                start=_int(span.get("start_index")),
                end=_int(span.get("end_index")),
                text=None,
                sources=[annotation],
                block=state.last_text if state.last_text >= 0 else None,
                raw=annotation,
            )
            out.append(CitationAdded(citation=citation, choice=state.index, raw=frame))

    @staticmethod
    def _has_content(delta: dict[str, Any]) -> bool:
        return any(delta.get(key) for key, _ in TEXT_FIELDS) or bool(delta.get("tool_calls"))

    def _logprobs_alone(
        self, state: _Choice, choice: dict[str, Any], frame: Any, out: list[Event]
    ) -> None:
        out.append(
            Notice(
                kind="logprobs",
                data={"choice": state.index, "logprobs": choice.get("logprobs")},
                raw=frame,
            )
        )

    def _content_chunks(
        self, state: _Choice, chunks: list[Any], frame: Any, out: list[Event]
    ) -> None:
        """Mistral ``content`` as a list: ``text``, ``thinking`` and ``reference`` chunks."""
        for chunk in chunks:
            chunk_type: Any = chunk.get("type") if chunk.__class__ is dict else None
            kind = CHUNK_KINDS.get(chunk_type)
            if chunk_type == "reference":
                self._reference(state, chunk, frame, out)
                continue
            if kind is None:
                out.append(Unknown(event_type=f"content.{chunk_type}", raw=frame))
                continue
            if kind == "text":
                text = chunk.get("text")
                if text:
                    self._text(state, "text", str(text), frame, out)
                continue
            thinking = chunk.get("thinking")
            pieces = thinking if thinking.__class__ is list else [thinking]
            for piece in pieces:
                text = piece.get("text") if piece.__class__ is dict else piece
                if text and text.__class__ is str:
                    self._text(state, "reasoning", text, frame, out)

    def _reference(
        self, state: _Choice, chunk: dict[str, Any], frame: Any, out: list[Event]
    ) -> None:
        """``{"type": "reference", "reference_ids": [...]}`` (mistralai ``ReferenceChunk``): the
        text before it in the open text block cites those references. Mistral gives no
        offsets, so the citation has none (``start``/``end`` ``None``, as an Anthropic citation
        that covers its block); ``block`` is the open text block (``None`` before any text)."""
        ids = chunk.get("reference_ids")
        block = state.prose if state.prose_kind == "text" else None
        citation = Citation(
            start=None,
            end=None,
            sources=list(ids) if type(ids) is list else [],
            block=block,
            raw=chunk,
        )
        out.append(CitationAdded(citation=citation, choice=state.index, raw=frame))

    def _tool_call(
        self, state: _Choice, call: dict[str, Any], frame: Any, out: list[Event]
    ) -> None:
        """One ``tool_calls`` entry, keyed by ``index`` (else ``id``)."""
        call_id = _given(call.get("id"))
        if call_id is not None and call_id.__class__ is not str:
            call_id = self.wire_str(call_id, ID, out, frame)
        key = call.get("index")
        if key is None:
            key = call_id
        function = call.get("function") or {}
        name = _given(function.get("name"))
        if name is not None and name.__class__ is not str:
            name = self.wire_str(name, NAME, out, frame)
        arguments = function.get("arguments")
        known = state.calls.get(key) if key is not None else None
        if known is not None and (call_id is None or call_id == known[1]):
            block = known[0]
        elif known is None and call_id is None and name is None:
            if key is None and state.last_call >= 0:
                block = state.last_call  # no index, no id: continues the latest call
            else:
                raise self.protocol_error(
                    f"tool call fragment for index {key!r}, which was never started "
                    "(no id, no name)",
                    event=frame.event,
                    raw=frame,
                )
        else:
            # The deprecated form goes back as ``function_call``, not as a tool call with no id.
            extra = {"function_call": True} if key == "function_call" else None
            block = self._open(state, "tool_call", frame, out, id=call_id, name=name, extra=extra)
            state.calls[key if key is not None else ("block", block)] = (block, call_id)
            state.open_calls[block] = None
            state.last_call = block
        if block not in state.open_calls:
            self.violation(
                f"tool call fragment for block {block}, which already ended",
                out,
                event=frame.event,
                raw=frame,
            )
            return
        if arguments:
            if arguments.__class__ is not str:
                # A host that sends the arguments as an object: its JSON text is the fragment.
                arguments = json.dumps(arguments, ensure_ascii=False)
            out.append(
                BlockDelta(
                    index=block, kind="tool_call", text=arguments, choice=state.index, raw=frame
                )
            )

    # -- end of a choice, errors ---------------------------------------------------------------

    def _finish(self, state: _Choice, reason: Any, frame: Any, out: list[Event]) -> None:
        if state.ended:
            # OpenRouter repeats the finishing chunk (empty delta); content was checked above.
            return
        self._close_blocks(state, frame, out)
        self._unfinished -= 1
        raw_reason = reason if reason.__class__ is str else str(reason)
        finish = self.finish_reasons.get(raw_reason, "other")
        state.finish = (finish, raw_reason, frame)
        self._finished.append(state.index)
        # The message ends with the stream (``_end_choices``); its finish is known now.
        out.append(
            MessageDelta(
                finish_reason=finish, raw_finish_reason=raw_reason, choice=state.index, raw=frame
            )
        )
        if self._done:
            self._end_choices(frame, out)  # a choice after ``[DONE]`` (a violation): ends now
        # The outcome is decided: whatever comes before [DONE] is kept, a cut is no loss.
        self.terminal_seen = not self._unfinished

    def _close_blocks(self, state: _Choice, frame: Any, out: list[Event]) -> None:
        """End the choice's open blocks: it has ended."""
        self._close_prose(state, frame, out)
        self._end_audio(state, frame, out)
        for block in state.open_calls:
            out.append(BlockEnd(index=block, kind="tool_call", choice=state.index, raw=frame))
        state.open_calls.clear()
        state.ended = True

    def _error(self, chunk: dict[str, Any], frame: Any, out: list[Event]) -> None:
        """An error in the stream: keep the usage of the same chunk, then raise."""
        usage = _chunk_usage(chunk)[0]
        if usage and usage.__class__ is dict:
            out.append(UsageUpdate(usage=usage_from_openai(usage), raw=frame))
        error = chunk.get("error")
        if error is None:
            error = chunk  # an ``event: error`` whose data is the error object itself
        message, code = _error_parts(error)
        self.terminal_seen = True
        self._end_choices(frame, out)  # a choice that finished keeps its finish
        raise StreamError(
            message,
            code=code,
            provider=self.name,
            raw=frame,
            position=self.position,
        )


class Mistral(OpenAIChat):
    """Mistral chat completions stream -> events (whole tool calls, content chunks)."""

    name: ClassVar[str] = "mistral"
    finish_reasons: ClassVar[dict[str, FinishReason]] = MISTRAL_FINISH_REASONS

    def _tool_call(
        self, state: _Choice, call: dict[str, Any], frame: Any, out: list[Event]
    ) -> None:
        call_id = _given(call.get("id"))
        if call_id is not None and call_id.__class__ is not str:
            call_id = self.wire_str(call_id, ID, out, frame)
        if call_id is None or call_id == "null":  # no id, or the SDK's default one
            # A fragment of a call streamed OpenAI-style (the seed's example, Qwen's "id": "").
            super()._tool_call(state, {**call, "id": None}, frame, out)
            return
        function = call.get("function") or {}
        arguments = function.get("arguments")
        parsed: Any = None
        if arguments.__class__ is dict or arguments.__class__ is list:
            parsed, arguments = arguments, json.dumps(arguments, ensure_ascii=False)
        elif arguments and arguments.__class__ is str:
            try:
                parsed = json.loads(arguments)
            except ValueError:
                parsed = None
        if parsed.__class__ is dict or parsed.__class__ is list:
            block = self._open(
                state,
                "tool_call",
                frame,
                out,
                id=call_id,
                name=self.wire_str(function.get("name"), NAME, out, frame),
                arguments=parsed,
                complete=True,
                text=arguments,
            )
            out.append(BlockEnd(index=block, kind="tool_call", choice=state.index, raw=frame))
            state.last_call = -1
            return
        # Not (yet) a whole JSON value: stream it; the fold judges the text at the end.
        if arguments and arguments.__class__ is not str:
            # A number or a boolean: its JSON text is the fragment, as OpenAI's reading does.
            arguments = json.dumps(arguments, ensure_ascii=False)
        key = call.get("index")
        if key is not None and key in state.calls:
            key = None  # every entry with an id is a new call, whatever its index
        name = self.wire_str(function.get("name"), NAME, out, frame)
        block = self._open(state, "tool_call", frame, out, id=call_id, name=name)
        state.calls[key if key is not None else ("id", call_id, block)] = (block, call_id)
        state.open_calls[block] = None
        state.last_call = block
        if arguments:
            out.append(
                BlockDelta(
                    index=block, kind="tool_call", text=arguments, choice=state.index, raw=frame
                )
            )
