"""The fold: provider-neutral events in, :class:`~streamfold.Message` out.

:class:`Folder` keeps mutable state per choice and per block and builds immutable-by-convention
``Message`` / ``Block`` / ``ToolCall`` objects only when asked (:meth:`Folder.snapshot`,
:meth:`Folder.result`). ``add`` is the hot path: one dict lookup on the event class, then a few
attribute stores; a block's text is kept as bytes in Rust (``TextBuffer``: an object per delta
would weigh several times the text) and made a ``str`` when a snapshot needs it.

Snapshots reuse what did not change: a block touched since the last snapshot is rebuilt whole
(its text made once into a new ``str``, its ``Block`` and ``ToolCall`` made
anew, so the cost is the size of that block, not of its new text); every other block, and the
whole message when nothing changed, is the object the previous snapshot returned. Objects handed out
are never mutated afterwards, so an old snapshot stays as it was; treat them as read-only, since
unchanged parts are shared between snapshots. The one exception is an open tool call's
``arguments_partial``: the accumulator's live partial value, extended in place (deep-copy it to
keep it).

The outcome is decided by the last event, never by the input running out: the fold is complete
when every choice that started got its ``MessageEnd`` and, when a durable run reported
``RunStatus``, a terminal ``RunStatus`` arrived; every choice's message is complete only then.
:meth:`Folder.result` raises
:class:`~streamfold.IncompleteStreamError` otherwise.
"""

from __future__ import annotations

import json
from bisect import insort
from collections.abc import Callable
from dataclasses import replace
from typing import Any, ClassVar, Literal

from .._core import JsonAccumulator, ReadClock, TextBuffer
from .._errors import (
    IdleTimeoutError,
    IncompleteJsonError,
    IncompleteStreamError,
    InvalidJsonError,
    ProtocolError,
    StreamError,
    StreamfoldError,
)
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
from .._message import (
    Block,
    BlockKind,
    Citation,
    FinishReason,
    Message,
    Step,
    StreamTiming,
    ToolCall,
    ToolResult,
    Usage,
)
from .._providers import check_provider_name, fold_rules
from .._types import ProviderName

__all__ = ["Folder"]


#: What ``Folder.delta_sink`` gives: a text block's ``TextBuffer``, or a tool call's ``(sink,
#: refused)``.
DeltaSink = (
    TextBuffer
    | tuple[JsonAccumulator | Callable[[str], None], Callable[[str, BaseException], None]]
)

#: The accumulator of tool-call arguments (a module attribute so tests can substitute it).
_JsonAccumulator: Any = JsonAccumulator

#: Finish reasons that mean "tool_calls" when the message holds complete tool calls that no
#: tool result answers (Gemini ends a tool turn with STOP, Responses with ``completed``).
#: Not for platforms that run their own tools (``MessageEnd.tools_run_by_platform``): a call
#: they report without a result was still run, and a client loop would run it again.
_TOOL_TURN_FINISHES = frozenset({"stop", "other"})

_OPEN_CALL_ERROR = "the stream ended before the call's arguments were complete"
#: A call still open at its message's terminal event: every provider module ends the calls
#: that have no close of their own before that event, so this one's close never came.
_CUT_CALL_ERROR = "the message ended before the call closed: its arguments may be cut short"
#: ``null`` parses, but no provider takes it back as a call's input: Anthropic ``input`` and
#: Cohere v1 ``parameters`` are objects, Gemini ``args`` a Struct, and every API declares a
#: tool's parameters as an object schema. ``arguments`` is ``None`` for it, so it is an error.
_NULL_ARGUMENTS_ERROR = "the arguments are JSON null, not an object"


def _whole_arguments(value: Any) -> tuple[Any, str, str | None]:
    """Arguments of a call that arrived whole: ``(arguments, arguments_json, error)``.

    A ``str`` is read as JSON text (Mistral may send the arguments as text or as an object);
    ``None`` means no arguments, ``{}``.
    """
    if value is None:
        return {}, "{}", None
    if isinstance(value, str):
        if not value.strip():
            return {}, value, None
        try:
            parsed = json.loads(value)
        except ValueError as exc:
            return None, value, f"invalid JSON arguments: {exc}"
        return parsed, value, None if parsed is not None else _NULL_ARGUMENTS_ERROR
    return value, json.dumps(value, ensure_ascii=False, default=str), None


class _Call:
    """A tool call being accumulated."""

    __slots__ = (
        "acc",
        "arguments",
        "arguments_json",
        "broken",
        "closed",
        "complete",
        "error",
        "extra",
        "id",
        "name",
        "partial",
        "position",
        "snap",
        "start_args",
    )

    def __init__(self, ev: BlockStart, position: int) -> None:
        self.position = position
        self.id = ev.id
        self.name = ev.name
        self.extra: dict[str, Any] = dict(ev.extra) if ev.extra else {}
        self.acc: Any = None
        #: The text, once the accumulator refused a fragment that can never be valid JSON.
        self.broken: list[str] | None = None
        self.start_args: Any = None
        self.arguments: Any = None
        self.arguments_json = ""
        self.closed = False
        self.complete = False
        self.error: str | None = None
        #: The best-effort value of a call cut short at the terminal event (else ``None``).
        self.partial: Any = None
        self.snap: ToolCall | None = None
        if ev.complete:
            self.arguments, self.arguments_json, self.error = _whole_arguments(ev.arguments)
            if ev.text and self.error is None:
                # The JSON text as sent (Mistral), rather than a re-serialization.
                self.arguments_json = ev.text
            # Closed by the stream like a streamed call at its end event, whatever its text:
            # ``error`` says why ``arguments`` is None.
            self.closed = True
            self.complete = True
        else:
            self.acc = _JsonAccumulator()
            # Anthropic opens tool_use with ``input: {}``; it stands when no fragment follows.
            self.start_args = ev.arguments
            if ev.text:
                try:
                    self.acc.push(ev.text)
                except InvalidJsonError as exc:
                    self.reject(ev.text, exc)

    def sink(self) -> Callable[[str], None] | None:
        """Where the call's argument fragments go (``None`` for a call that came whole)."""
        if self.broken is not None:
            return self.broken.append
        return None if self.acc is None else self.acc.push

    def reject(self, fragment: str, exc: InvalidJsonError) -> Callable[[str], None]:
        """The accumulator refused ``fragment``: the arguments can never be valid. Keep the
        text as streamed from here on; the error stands when the call closes."""
        text: str = self.acc.text
        if not text.endswith(fragment):
            text += fragment
        self.broken = [text]
        self.error = f"invalid JSON arguments: {exc}"
        return self.broken.append

    def close(self) -> None:
        """The call's end event: parse the accumulated text once. The call is closed
        (``complete``) even when its text is not valid: ``error`` then says why."""
        self.closed = True
        self.complete = True
        if self.broken is not None:
            self.arguments_json = "".join(self.broken)
            self.arguments = None
            return
        text: str = self.acc.text
        self.arguments_json = text
        if not text.strip():
            self.arguments = {} if self.start_args is None else self.start_args
            return
        self.arguments, self.error = self.parse()

    def cut(self) -> None:
        """The terminal event came while the call was open, so its close never came: it is
        incomplete whatever its text looks like (text that parses may still be a prefix of
        the arguments, and an empty text is not ``{}``). The text is kept as it arrived, with
        its best-effort value in ``partial``."""
        self.closed = True
        self.complete = False
        self.arguments = None
        if self.broken is not None:
            self.arguments_json = "".join(self.broken)  # ``error`` already says it is invalid
            return
        text: str = self.acc.text
        self.arguments_json = text
        try:
            self.partial = self.acc.partial()
        except ValueError:  # an integer over Python's digit limit
            self.partial = None
        error = self.parse()[1] if text.strip() else None
        self.error = error if error is not None else _CUT_CALL_ERROR

    def parse(self) -> tuple[Any, str | None]:
        """The accumulated text as ``(arguments, error)``: exactly one of them is ``None``."""
        try:
            value = self.acc.value()
        except IncompleteJsonError as exc:
            return None, f"incomplete JSON arguments: {exc}"
        except InvalidJsonError as exc:
            return None, f"invalid JSON arguments: {exc}"
        except ValueError as exc:  # an integer over Python's digit limit, as in json.loads
            return None, f"unreadable JSON arguments: {exc}"
        return value, None if value is not None else _NULL_ARGUMENTS_ERROR

    def snapshot(self, block: int) -> ToolCall:
        if self.closed:
            return ToolCall(
                index=self.position,
                id=self.id,
                name=self.name,
                arguments=self.arguments,
                arguments_json=self.arguments_json,
                complete=self.complete,
                error=self.error,
                block=block,
                extra=self.extra,
                arguments_partial=self.partial,
            )
        broken = self.broken
        error = self.error
        if broken is not None:
            if len(broken) > 1:
                broken[:] = ["".join(broken)]
            text, partial = broken[0], None
        else:
            # The accumulator's live partial value: it keeps growing in place while the call
            # is open (cost proportional to the new text), so it is shared, not copied.
            text = self.acc.text
            try:
                partial = self.acc.partial()
            except ValueError as exc:
                # An integer over Python's digit limit: no value can be read from the text,
                # now or once the call closes, and the call says so as the closed one will
                # (``parse``), rather than showing no arguments and no error.
                partial = None
                if error is None:
                    error = f"unreadable JSON arguments: {exc}"
        return ToolCall(
            index=self.position,
            id=self.id,
            name=self.name,
            arguments=None,
            arguments_json=text,
            complete=False,
            error=error,
            block=block,
            extra=self.extra,
            arguments_partial=partial,
        )


def _add_logprobs(b: _Block, logprobs: Any) -> None:
    """Add a delta's log-probabilities to its block's (``Block.extra["logprobs"]``): one list
    per block, in stream order, of what the provider sends per token or fragment.

    * OpenAI Chat ``choices[].logprobs`` ``{"content": [token…], "refusal": [token…]}``: the
      arrays are concatenated (WIRE_FORMATS §3), ``refusal`` first on a refusal block and
      ``content`` first on any other. Only one of them is filled in practice, and the
      provider sets them on the delta of the text they score, so each lands on its block;
    * a list (Responses ``output_text.delta.logprobs``: token entries) is concatenated too;
    * any other value (Cohere v2 ``{text?, token_ids, logprobs?}``, one per fragment, the
      list of them being Cohere's own non-streamed ``logprobs``) is one entry.

    Nothing is dropped: an unknown shape is kept as it came.
    """
    kept = b.logprobs
    if kept is None:
        kept = b.logprobs = []
    if logprobs.__class__ is dict and ("content" in logprobs or "refusal" in logprobs):
        keys = ("refusal", "content") if b.kind == "refusal" else ("content", "refusal")
        for key in keys:
            tokens = logprobs.get(key)
            if tokens.__class__ is list:
                kept.extend(tokens)
            elif tokens is not None:
                kept.append(tokens)
    elif logprobs.__class__ is list:
        kept.extend(logprobs)
    else:
        kept.append(logprobs)


class _Block:
    """A block being accumulated: its text, or a tool call's accumulator."""

    __slots__ = (
        "call",
        "choice",
        "citations",
        "clean",
        "complete",
        "data",
        "extra",
        "index",
        "kind",
        "logprobs",
        "push",
        "signature",
        "snap",
        "text_buffer",
    )

    def __init__(self, choice: int, index: int, kind: BlockKind) -> None:
        self.choice = choice
        self.index = index
        self.kind: BlockKind = kind
        #: The text so far, as bytes in Rust (not a ``str`` per delta), made a ``str`` once
        #: per snapshot; a character a host cut into UTF-16 halves is one character again.
        self.text_buffer = TextBuffer()
        #: Where a delta's text goes: ``text_buffer.append``, or the call's
        #: ``JsonAccumulator.push``.
        self.push: Callable[[str], None] = self.text_buffer.append
        self.signature: str | None = None
        self.data: Any = None
        self.extra: dict[str, Any] = {}
        #: The token log-probabilities of the block's deltas, in order (``_add_logprobs``);
        #: ``None`` while none came. A snapshot gets a copy under ``extra["logprobs"]``.
        self.logprobs: list[Any] | None = None
        self.citations: list[Citation] = []
        self.complete = False
        self.call: _Call | None = None
        #: No change since the last snapshot (else the block is in ``Folder._dirty``).
        self.clean = True
        self.snap: Block | None = None

    def __lt__(self, other: _Block) -> bool:
        return self.index < other.index

    def text(self) -> str:
        return self.text_buffer.text()

    def refresh(self) -> Block:
        call = self.call
        tool_call = None
        if call is not None:
            tool_call = call.snap = call.snapshot(self.index)
        text = self.text()
        if text and not self.complete and "\ud800" <= text[-1] <= "\udbff":
            # The first UTF-16 half of a character cut in two across deltas (a JavaScript
            # host): shown with its second half, so that a live view's text only grows by
            # appending and can be encoded. A half still alone when the block ends is kept.
            text = text[:-1]
        self.snap = Block(
            index=self.index,
            kind=self.kind,
            text=text,
            signature=self.signature,
            data=self.data,
            tool_call=tool_call,
            citations=list(self.citations),
            complete=self.complete,
            # A copy: the list grows after this snapshot, which must stay as it was.
            extra=self.extra
            if self.logprobs is None
            else {**self.extra, "logprobs": list(self.logprobs)},
        )
        self.clean = True
        return self.snap


class _Choice:
    """One choice (OpenAI ``n>1``, Gemini candidates; choice 0 elsewhere) being accumulated."""

    __slots__ = (
        "blocks",
        "calls",
        "changed",
        "citations",
        "ended",
        "finish",
        "id",
        "index",
        "joins",
        "joins_stale",
        "model",
        "order",
        "platform_tools",
        "raw_finish",
        "refused",
        "role",
    )

    def __init__(self, index: int) -> None:
        self.index = index
        self.id: str | None = None
        self.model: str | None = None
        self.role = "assistant"
        self.ended = False
        self.finish: FinishReason | None = None
        self.raw_finish: str | None = None
        #: The choice ended with ``MessageEnd.tools_run_by_platform``.
        self.platform_tools = False
        #: The choice holds a refusal block (OpenAI Chat ``delta.refusal``, a Responses
        #: ``refusal`` part): its ``stop`` reads ``refusal``.
        self.refused = False
        self.blocks: dict[int, _Block] = {}
        #: Blocks in block-index order.
        self.order: list[_Block] = []
        #: Tool calls (not server tools) in order of appearance.
        self.calls: list[_Call] = []
        self.citations: list[Citation] = []
        self.changed = True
        #: text, reasoning, tool_plan, refusal: joined at the last snapshot.
        self.joins: tuple[str, str, str, str] = ("", "", "", "")
        self.joins_stale = False

    def joined(self) -> tuple[str, str, str, str]:
        if self.joins_stale:
            parts: dict[str, list[str]] = {
                "text": [],
                "reasoning": [],
                "tool_plan": [],
                "refusal": [],
            }
            for b in self.order:
                bucket = parts.get(b.kind)
                if bucket is not None:
                    bucket.append(b.snap.text if b.snap is not None else b.text())
            self.joins = (
                "".join(parts["text"]),
                "".join(parts["reasoning"]),
                "".join(parts["tool_plan"]),
                "".join(parts["refusal"]),
            )
            self.joins_stale = False
        return self.joins


class _RunView:
    """Copies of the run-level lists, made once per change and shared by every snapshot."""

    __slots__ = (
        "media",
        "metadata",
        "notices",
        "queries",
        "sources",
        "steps",
        "tool_results",
        "warnings",
    )

    def __init__(self, folder: Folder) -> None:
        parts = folder._parts
        self.sources: list[Any] | None = None if folder._sources is None else list(folder._sources)
        self.metadata: dict[str, Any] = dict(folder._metadata)
        # Loops, not comprehensions: a comprehension makes a function object per call.
        steps: list[Step] = []
        if parts is None:
            self.tool_results: list[ToolResult] = []
            self.queries: list[Any] = []
            self.media: list[Any] = []
            self.notices: list[Any] = []
            self.warnings: list[str] = []
        else:
            self.tool_results = list(parts.tool_results)
            for step in parts.steps:
                steps.append(_copy_step(step))
            self.queries = list(parts.queries)
            self.media = list(parts.media)
            self.notices = list(parts.notices)
            self.warnings = list(parts.warnings)
        self.steps = steps


class _RunParts:
    """What a fold keeps of the run beside its choices: tool results, steps, search queries,
    media, notices and warnings, in the order they came."""

    __slots__ = ("media", "notices", "queries", "step_stack", "steps", "tool_results", "warnings")

    def __init__(self) -> None:
        self.tool_results: list[ToolResult] = []
        #: The top-level steps; ``step_stack`` the open ones, outermost first.
        self.steps: list[Step] = []
        self.step_stack: list[Step] = []
        self.queries: list[Any] = []
        self.media: list[Any] = []
        self.notices: list[Any] = []
        self.warnings: list[str] = []


def check_max_message_bytes(value: object) -> None:
    """``max_message_bytes`` is an int above 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"max_message_bytes must be an int > 0, got {value!r}")


def _copy_step(step: Step) -> Step:
    return replace(step, children=[_copy_step(c) for c in step.children])


_JOINED_KINDS = frozenset({"text", "reasoning", "tool_plan", "refusal"})

#: How many levels of nested steps a message keeps (``Step.depth`` below it): a step opened
#: deeper is kept beside its parent at the last level, with a warning.
MAX_STEP_DEPTH = 64


#: The most a fold keeps by default (``max_message_bytes``): characters of its blocks' text
#: and tool-call arguments. No real answer comes near it; a stream past it is a runaway
#: upstream or an attack, whose memory would otherwise grow without limit.
DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024 * 1024


class Folder:
    """Fold events into messages: ``add(event)`` each event, then ``result()``.

    ``provider`` names the provider for messages and errors (``Message.provider``, the default
    of ``Message.to_request``); left empty (or ``"auto"``), it is the one a
    ``Notice(kind="provider_detected")`` names (the first event of ``events(provider="auto")``).
    A name ``provider=`` does not know raises ``ValueError``, as it does for ``fold``.
    With ``strict=True`` a broken rule of the event contract (a delta for a block never
    started, a step ended that never started, a terminal event that states a whole text
    other than the joined one) raises :class:`ProtocolError`; by default
    it is recorded in ``Message.warnings``.

    Several choices (OpenAI ``n>1``, Gemini candidates) fold into one message each:
    :meth:`result` and :meth:`snapshot` return choice 0 and list every choice in
    ``.choices``; :meth:`results` returns the list.

    ``max_message_bytes`` caps what the fold keeps: once the text and tool-call arguments of
    its blocks (every choice's, counted in characters: bytes for ASCII) pass it, the event that
    brings them raises :class:`ProtocolError` with the partial message.
    """

    __slots__ = (
        "_choices",
        "_clock",
        "_dirty",
        "_dispatch",
        "_last",
        "_metadata",
        "_parts",
        "_pending",
        "_room",
        "_run_changed",
        "_run_seen",
        "_run_terminal",
        "_run_view",
        "_snap",
        "_sources",
        "_status",
        "_step_count",
        "_usage",
        "max_message_bytes",
        "provider",
        "strict",
    )

    #: Event class -> handler (the function, called with the folder): one table per class.
    _handlers: ClassVar[dict[type, Callable[[Any, Any], None]]]

    def __init__(
        self,
        provider: ProviderName | Literal[""] = "",
        *,
        strict: bool = False,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        if provider:
            check_provider_name(provider)
        check_max_message_bytes(max_message_bytes)
        self.provider: str = provider
        self.strict = strict
        self.max_message_bytes = max_message_bytes
        #: What may still be kept (``max_message_bytes`` less the text and arguments so far).
        self._room = max_message_bytes
        #: The arrival times of the reads (``FoldDriver``); none for a folder fed by hand.
        self._clock: ReadClock | None = None
        self._choices: dict[int, _Choice] = {}
        #: Blocks changed since the last snapshot.
        self._dirty: list[_Block] = []
        #: The block the last delta went to (``None``: none yet): deltas come in runs on one
        #: block.
        self._last: _Block | None = None
        self._usage: Usage | None = None
        #: The run-level parts (tool results, steps, media, notices, warnings…), made when the
        #: first of them comes: most streams have none, and an open stream keeps no empty lists.
        self._parts: _RunParts | None = None
        self._step_count = 0
        self._sources: list[Any] | None = None
        self._metadata: dict[str, Any] = {}
        self._status: str | None = None
        self._pending: ToolCall | None = None
        self._run_seen = False
        self._run_terminal = False
        self._run_changed = True
        self._run_view: _RunView | None = None
        self._snap: list[Message] | None = None
        #: Bound handlers, made only when ``dispatch`` is asked for.
        self._dispatch: dict[type, Callable[[Any], None]] | None = None

    # -- feeding ------------------------------------------------------------------------------

    def add(self, event: Event) -> None:
        """Fold one event in."""
        try:
            handler = self._handlers[event.__class__]
        except KeyError:
            handler = self._function_for(event.__class__)
        handler(self, event)

    @classmethod
    def _function_for(cls, event_class: type) -> Callable[[Any, Any], None]:
        """The (unbound) handler of an event class, kept in the class's table: the table is
        made once per class, not per fold (a stream of a few frames would spend more on
        binding every handler than on folding)."""
        table = cls._handlers
        for base in event_class.__mro__:
            handler = table.get(base)
            if handler is not None:
                break
        else:
            handler = table[Unknown]
        table[event_class] = handler
        return handler

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._handlers = _handler_table(cls)

    def text_buffer(self, choice: int, index: int) -> TextBuffer | None:
        """The text of block ``index`` of ``choice``: appending a text to it is folding a
        ``BlockDelta`` of that text, as long as no other event is folded in between (the
        caller's promise; ``fold`` lets go of it whenever it folds an event).

        Only for the block the last delta went to, when its text is plain text (not a tool
        call's JSON, not a closed block): every other case needs ``_on_delta`` in full.
        """
        b = self._last
        if b is None or b.index != index or b.choice != choice or b.push != b.text_buffer.append:
            return None
        # What ``_on_delta`` does besides the append, done once for the whole run of deltas.
        self._mark(b)
        return b.text_buffer

    def delta_sink(self, choice: int, index: int) -> DeltaSink | None:
        """Where the text of a ``BlockDelta`` to block ``index`` of ``choice`` (without log
        probabilities) goes, for the decoder's folding path: handing a text to it is folding
        such a delta, as long as no other event is folded in between (the caller's promise).

        A text block's ``TextBuffer`` (``text_buffer``); for a tool call, ``(sink, refused)``:
        its ``JsonAccumulator`` (or, for a call whose text is kept as it came, the ``push`` of
        that text), and what to call with a fragment and the error when the accumulator refused
        it (the call's text is then kept as it came, and the accumulator is no longer its sink).
        ``None`` for any other case, which needs ``_on_delta`` in full. What the path hands
        over is counted against ``max_message_bytes`` by the path itself, which takes no text
        past ``room`` and reports what it took (``took``).
        """
        buffer = self.text_buffer(choice, index)
        if buffer is not None:
            return buffer
        b = self._last
        if b is None:
            return None
        call = b.call
        if b.index != index or b.choice != choice or call is None or b.push != call.sink():
            return None
        self._mark(b)

        def refused(fragment: str, exc: BaseException) -> None:
            if not isinstance(exc, InvalidJsonError):
                raise exc
            b.push = call.reject(fragment, exc)

        # The accumulator itself, which the decoder pushes to without a Python call.
        return (b.push if call.broken is not None else call.acc), refused

    @property
    def room(self) -> int:
        """How many more characters of text and arguments the fold keeps
        (``max_message_bytes`` less what it holds)."""
        return self._room

    def took(self, characters: int) -> None:
        """Count text a direct path handed to a ``delta_sink`` against ``max_message_bytes``
        (it took none past ``room``)."""
        self._room -= characters

    # -- results ------------------------------------------------------------------------------

    @property
    def complete(self) -> bool:
        """Every started choice ended, and a durable run (if any) reached a terminal status."""
        choices = self._choices
        if not choices:
            return False
        for c in choices.values():
            if not c.ended:
                return False
        return self._run_terminal or not self._run_seen

    def snapshot(self) -> Message:
        """The message so far (choice 0; every choice in ``.choices``). Blocks not touched
        since the last snapshot are reused; a touched block is rebuilt whole (its text and an
        open call's ``arguments_json`` are new ``str`` of all of it), so the cost is the size
        of the changed blocks, not of the new text. Open tool calls show their best-effort
        arguments in ``ToolCall.partial_arguments()``, the one part kept up incrementally."""
        return self._build()[0]

    def result(self) -> Message:
        """The final message (choice 0; every choice in ``.choices``).

        Raises :class:`IncompleteStreamError` (with ``.partial``) when the terminal event has
        not been seen.
        """
        return self.results()[0]

    def results(self) -> list[Message]:
        """The final message of every choice, in choice order."""
        if not self.complete:
            name = self.provider or "stream"
            raise IncompleteStreamError(
                f"{name}: the events ended without the provider's terminal event; the answer "
                "may be cut short",
                provider=self.provider or None,
                partial=self.partial(),
            )
        return self._build()

    def partial(self) -> Message:
        """The message folded so far as the outcome of a stream that stopped here: open tool
        calls are marked incomplete (``arguments`` ``None``, ``error`` set, their text kept
        in ``arguments_json``), open blocks ``complete=False``."""
        return self._partials()[0]

    @property
    def produced_content(self) -> bool:
        """Some part of the answer exists: text, reasoning, a tool plan, a refusal, a tool call,
        a tool result or media. A retry would then show a second, different answer."""
        parts = self._parts
        if parts is not None and (parts.tool_results or parts.media):
            return True
        for c in self._choices.values():
            for b in c.order:
                if b.call is not None or b.data is not None:
                    return True
                if b.text_buffer:
                    return True
        return False

    def annotate_error(self, exc: StreamfoldError) -> StreamfoldError:
        """Give an error raised while reading the stream what the fold knows: ``.partial``
        (for every error that has it) and, for :class:`StreamError`,
        ``retryable_without_duplicate`` (true only when no content had been produced)."""
        if isinstance(exc, StreamError):
            partial = self._partials(error=exc)[0]
            exc.retryable_without_duplicate = not self.produced_content
            exc.partial = partial
        elif isinstance(exc, (IncompleteStreamError, ProtocolError, IdleTimeoutError)):
            exc.partial = self.partial()
        return exc

    # -- building messages --------------------------------------------------------------------

    def _refresh_dirty(self) -> None:
        dirty = self._dirty
        if not dirty:
            return
        choices = self._choices
        for b in dirty:
            b.refresh()
            c = choices[b.choice]
            c.changed = True
            if b.kind in _JOINED_KINDS:
                c.joins_stale = True
        dirty.clear()

    def _run(self) -> _RunView:
        view = self._run_view
        if view is None or self._run_changed:
            view = self._run_view = _RunView(self)
        return view

    def _build(self) -> list[Message]:
        self._refresh_dirty()
        snap = self._snap
        if snap is not None and not self._run_changed:
            for c in self._choices.values():
                if c.changed:
                    break
            else:
                self._time(snap)
                return snap
        run = self._run()
        self._run_changed = False
        choices = self._choices or {0: _Choice(0)}
        # One outcome for every choice: a choice's message is not complete while another
        # choice still streams (a live view of choice 0 must not read "done" before the end).
        complete = self.complete
        message = self._message
        messages: list[Message] = []
        for i in choices if len(choices) == 1 else sorted(choices):
            messages.append(message(choices[i], run, complete))
        for m in messages:
            m.choices = messages
        for c in choices.values():
            c.changed = False
        self._snap = messages
        self._time(messages)
        return messages

    def _time(self, messages: list[Message]) -> None:
        """The timing so far on each choice's message (a reused snapshot's too: the clock
        moved on since)."""
        clock = self._clock
        if clock is not None:
            timing = StreamTiming(*clock.times_so_far())
            for m in messages:
                m.timing = timing

    def _message(self, c: _Choice, run: _RunView, complete: bool) -> Message:
        text, reasoning, tool_plan, refusal = c.joined()
        blocks: list[Block] = []
        for b in c.order:
            blocks.append(b.snap if b.snap is not None else b.refresh())
        tool_calls: list[ToolCall] = []
        for call in c.calls:
            if call.snap is not None:
                tool_calls.append(call.snap)
        return Message(
            provider=self.provider,
            id=c.id,
            model=c.model,
            role=c.role,
            text=text,
            blocks=blocks,
            tool_calls=tool_calls,
            tool_plan=tool_plan,
            refusal=refusal,
            reasoning=reasoning,
            citations=list(c.citations),
            tool_results=run.tool_results,
            steps=run.steps,
            sources=run.sources,
            search_queries=run.queries,
            media=run.media,
            finish_reason=self._finish(c),
            raw_finish_reason=c.raw_finish,
            usage=self._usage,
            complete=complete,
            status=self._status,
            pending_tool_call=self._pending,
            metadata=run.metadata,
            notices=run.notices,
            warnings=run.warnings,
            choice=c.index,
        )

    def _finish(self, c: _Choice) -> FinishReason | None:
        """The choice's finish reason. A platform that runs its own tools asks the client for
        one thing only: an answer to the call its run waits on (Clouisle ``ask_user``). Read
        here rather than at the end, since ``waiting`` may come before or after the message
        ends, and a later status (``running``, ``run_end``) clears it.

        A ``stop`` of a choice that holds a refusal block is ``refusal``: OpenAI reports a
        refusal as content (Chat ``delta.refusal``, a Responses ``refusal`` part) and ends it
        with ``stop`` / ``completed``, where Anthropic says ``refusal``. The raw value stays in
        ``raw_finish_reason``."""
        finish = c.finish
        if finish == "stop":
            if c.platform_tools and self._pending is not None:
                return "tool_calls"
            if c.refused:
                return "refusal"
        return finish

    def _partials(self, error: StreamError | None = None) -> list[Message]:
        messages = self._build()
        out: list[Message] = []
        for m in messages:
            c = self._choices.get(m.choice)
            blocks = m.blocks
            calls = m.tool_calls
            if c is not None and any(not b.complete for b in c.order):
                blocks = []
                calls = []
                for b in c.order:
                    snap = b.snap
                    assert snap is not None
                    if not b.complete:
                        tool_call = snap.tool_call
                        if b.call is not None and not b.call.closed and tool_call is not None:
                            tool_call = replace(tool_call, error=_OPEN_CALL_ERROR)
                        snap = replace(snap, tool_call=tool_call)
                    blocks.append(snap)
                    if snap.tool_call is not None and b.kind == "tool_call":
                        calls.append(snap.tool_call)
            finish, raw_finish = _partial_finish(m, c, error)
            out.append(
                replace(
                    m,
                    blocks=blocks,
                    tool_calls=calls,
                    finish_reason=finish,
                    raw_finish_reason=raw_finish,
                    complete=False,
                    error=_error_object(error) if error is not None else None,
                )
            )
        for m in out:
            m.choices = out
        return out

    # -- event handlers -----------------------------------------------------------------------

    def _choice(self, index: int) -> _Choice:
        c = self._choices.get(index)
        if c is None:
            c = self._choices[index] = _Choice(index)
        return c

    def _too_large(self, event: Event | None) -> None:
        """The message passed ``max_message_bytes``: the fold stops there."""
        cap = self.max_message_bytes
        raise ProtocolError(
            f"{self.provider or 'fold'}: the message passed max_message_bytes ({cap}): its "
            f"blocks' text and tool-call arguments are over {cap} characters, which no real "
            "answer reaches; the fold stopped there (pass a larger max_message_bytes= to "
            "keep more)",
            provider=self.provider or None,
            event=event.type if event is not None else None,
            limit=cap,
            raw=event.raw if event is not None else None,
            partial=self.partial(),
        )

    def _run_parts(self) -> _RunParts:
        parts = self._parts
        if parts is None:
            parts = self._parts = _RunParts()
        return parts

    def _violation(self, message: str, event: Event) -> None:
        text = f"{self.provider or 'fold'}: {message} (event {event.type!r})"
        if self.strict:
            raise ProtocolError(
                text,
                provider=self.provider or None,
                event=event.type,
                raw=event.raw,
                partial=self.partial(),
            )
        self._run_parts().warnings.append(text)
        self._run_changed = True

    def _mark(self, b: _Block) -> None:
        if b.clean:
            b.clean = False
            self._dirty.append(b)

    def _open(self, choice: int, index: int, kind: BlockKind) -> _Block:
        c = self._choice(choice)
        b = _Block(choice, index, kind)
        c.blocks[index] = b
        if kind == "refusal":
            c.refused = True
        order = c.order
        if not order or order[-1].index < index:
            order.append(b)
        else:
            insort(order, b)
        self._mark(b)
        return b

    def _find(self, choice: int, index: int, event: Event) -> _Block | None:
        c = self._choices.get(choice)
        b = None if c is None else c.blocks.get(index)
        if b is None:
            self._violation(
                f"{event.type} for block {index} of choice {choice} never started", event
            )
        return b

    def _on_block_start(self, ev: BlockStart) -> None:
        c = self._choices.get(ev.choice)
        if c is not None and ev.index in c.blocks:
            b = c.blocks[ev.index]
            call = b.call
            if (
                ev.kind == "tool_call"
                and call is not None
                and call.position >= 0
                and fold_rules(self.provider).resends_call(call.id, ev)
            ):
                # A whole call sent again for its block: the call is updated in place.
                update = c.calls[call.position] = b.call = _Call(ev, call.position)
                b.complete = True
                b.push = self._stray(b, ev)
                if update.name is None:
                    update.name = call.name
                self._mark(b)
                return
            self._violation(f"block {ev.index} of choice {ev.choice} started twice", ev)
            return
        if ev.text:
            self._room -= len(ev.text)
            if self._room < 0:
                self._too_large(ev)
        kind = ev.kind
        b = self._open(ev.choice, ev.index, kind)
        b.data = ev.data
        if ev.extra:
            b.extra = dict(ev.extra)
        if kind == "tool_call":
            c = self._choices[ev.choice]
            call = b.call = _Call(ev, len(c.calls))
            c.calls.append(call)
            b.push = call.sink() or self._stray(b, ev)
        elif kind == "server_tool" and not ev.complete:
            # A provider-run tool whose input streams (Anthropic server_tool_use) gets a call
            # at its first fragment; one that only reports progress (web_search_call) never.
            b.push = self._server_input(b, ev)
        elif ev.complete:
            b.push = self._stray(b, ev)
            if ev.text:  # a block that arrived whole: its text is all of it
                b.text_buffer.append(ev.text)
        elif ev.text:
            b.text_buffer.append(ev.text)
        self._last = b

    def _server_input(self, b: _Block, start: BlockStart) -> Callable[[str], None]:
        def push(text: str) -> None:
            call = b.call = _Call(start, -1)
            b.push = call.acc.push
            call.acc.push(text)  # an InvalidJsonError here is handled like any other push

        return push

    def _stray(self, b: _Block, start: Event | None) -> Callable[[str], None]:
        """A delta after the block closed (or for a block that arrived whole): recorded, and
        for text blocks kept rather than lost. ``start`` is the event the warning names; for
        ``None`` (a block the stream closed), the block's ``BlockEnd``, made only if such a
        delta comes: every block closes, and almost none gets one."""

        def push(text: str) -> None:
            event = start
            if event is None:
                event = BlockEnd(index=b.index, kind=b.kind, choice=b.choice)
            self._violation(f"delta for closed block {b.index} of choice {b.choice}", event)
            if b.call is None and b.kind in _JOINED_KINDS:
                b.text_buffer.append(text)

        return push

    def _on_delta(self, ev: BlockDelta) -> None:
        b = self._last
        if b is None or b.index != ev.index or b.choice != ev.choice:
            found = self._find(ev.choice, ev.index, ev)
            # Not strict: open the block so no text is lost.
            b = self._last = (
                found if found is not None else self._open(ev.choice, ev.index, ev.kind)
            )
            if found is None and ev.kind in ("tool_call", "server_tool"):
                self._make_call(b, ev)
        if ev.logprobs is not None:
            _add_logprobs(b, ev.logprobs)
        self._room -= len(ev.text)
        if self._room < 0:
            self._too_large(ev)
        try:
            b.push(ev.text)
        except InvalidJsonError as exc:
            # The call's text can never be valid JSON (the Rust accumulator says so at once).
            call = b.call
            if call is None:
                raise
            b.push = call.reject(ev.text, exc)
        if b.clean:
            b.clean = False
            self._dirty.append(b)

    def _make_call(self, b: _Block, ev: BlockDelta) -> None:
        c = self._choices[ev.choice]
        call = b.call = _Call(
            BlockStart(index=ev.index, kind=ev.kind, choice=ev.choice), len(c.calls)
        )
        if ev.kind == "tool_call":
            c.calls.append(call)
        b.push = call.sink() or self._stray(b, ev)

    def _on_block_end(self, ev: BlockEnd) -> None:
        b = self._find(ev.choice, ev.index, ev)
        if b is None:
            return
        if ev.data is not None:
            b.data = ev.data  # the block's final payload (Responses ``output_item.done``)
            self._mark(b)
        if not b.complete:
            call = b.call
            if call is not None and not call.closed:
                call.close()
            self._close(b, complete=True)

    def _close(self, b: _Block, *, complete: bool) -> None:
        b.complete = complete
        b.push = self._stray(b, None)
        self._mark(b)

    def _end_open_block(self, b: _Block, ev: MessageEnd) -> None:
        """A block still open at its choice's terminal event. Text ends with the message. A
        call does not: providers whose calls have no close of their own (Chat Completions and
        Mistral at ``finish_reason``, Cohere v1 at ``stream-end``) end them before this event,
        and whole calls are ended at once, so a call open here is one whose close never came
        (Anthropic ``max_tokens`` before ``content_block_stop``, Cohere v2 ``MAX_TOKENS``
        before ``tool-call-end``, Onecortex ``done`` before ``tool_call_end``): cut short."""
        call = b.call
        if call is None or call.closed:
            self._close(b, complete=True)
            return
        call.cut()
        self._close(b, complete=False)
        what = "tool call" if b.kind == "tool_call" else f"{b.kind} call"
        label = f"{call.name!r}" + (f" (id {call.id!r})" if call.id is not None else "")
        self._run_parts().warnings.append(
            f"{self.provider or 'fold'}: {what} {label} in block {b.index} of choice "
            f"{b.choice} was still open at the terminal event (finish "
            f"{ev.raw_finish_reason!r}): marked incomplete, its arguments may be cut short"
        )
        self._run_changed = True

    def _on_signature(self, ev: SignatureDelta) -> None:
        b = self._find(ev.choice, ev.index, ev)
        if b is None:
            return
        b.signature = ev.signature
        self._mark(b)

    def _on_citation(self, ev: CitationAdded) -> None:
        c = self._choice(ev.choice)
        citation = ev.citation
        c.citations.append(citation)
        c.changed = True
        if citation.block is not None:
            b = c.blocks.get(citation.block)
            if b is not None:
                b.citations.append(citation)
                self._mark(b)

    def _on_usage(self, ev: UsageUpdate) -> None:
        # The provider's current total: replaced, never summed.
        self._usage = ev.usage
        self._run_changed = True

    def _on_message_start(self, ev: MessageStart) -> None:
        c = self._choice(ev.choice)
        if ev.continued and c.ended:
            # A durable run's next round: the message goes on and ends again with it.
            c.ended = False
            c.finish = None
            c.raw_finish = None
            c.platform_tools = False
        if ev.id is not None:
            c.id = ev.id
        if ev.model is not None:
            c.model = ev.model
        c.role = ev.role
        c.changed = True
        if ev.metadata:
            self._keep_metadata(ev.metadata)

    def _keep_metadata(self, values: dict[str, Any]) -> None:
        """Record run identifiers and timings; a ``None`` never erases a value (a resumed
        stream's later events may not repeat them)."""
        metadata = self._metadata
        for key, value in values.items():
            if value is not None and (key not in metadata or metadata[key] != value):
                metadata[key] = value
                self._run_changed = True

    def _on_message_delta(self, ev: MessageDelta) -> None:
        # Shown until MessageEnd sets the final one, and kept by a partial if it never comes.
        c = self._choice(ev.choice)
        if c.ended:
            self._violation(f"finish reason for choice {ev.choice} after its end", ev)
            return
        c.finish = ev.finish_reason
        c.raw_finish = ev.raw_finish_reason
        c.changed = True
        if ev.metadata:
            self._keep_metadata(ev.metadata)

    def _on_message_end(self, ev: MessageEnd) -> None:
        c = self._choice(ev.choice)
        if c.ended:
            self._violation(f"choice {ev.choice} ended twice", ev)
        c.ended = True
        for b in c.order:
            if not b.complete:
                self._end_open_block(b, ev)
        c.platform_tools = ev.tools_run_by_platform
        c.finish = self._tool_turn(c, ev)
        c.raw_finish = ev.raw_finish_reason
        c.changed = True
        if ev.metadata:
            self._keep_metadata(ev.metadata)
        if ev.data is not None:
            stated = fold_rules(self.provider).final_text(ev)
            if stated is not None:
                self._check_text(c, stated, ev)

    def _tool_turn(self, c: _Choice, ev: MessageEnd) -> FinishReason | None:
        """``ev``'s finish, made ``tool_calls`` when the turn ends asking for tools: it holds a
        complete call that no tool result in the stream answers. A platform that runs its own
        tools asks for none of them (see :meth:`_finish` for the one it waits on)."""
        finish = ev.finish_reason
        if finish not in _TOOL_TURN_FINISHES or not c.calls or ev.tools_run_by_platform:
            return finish
        parts = self._parts
        answered = {_id_key(r.call_id) for r in (parts.tool_results if parts else ())}
        if any(call.complete and _id_key(call.id) not in answered for call in c.calls):
            return "tool_calls"
        return finish

    def _check_text(self, c: _Choice, result: str, ev: MessageEnd) -> None:
        """The whole text the terminal event states (``Provider.final_text``) must equal the
        joined text."""
        self._refresh_dirty()
        text = c.joined()[0]
        if text != result:
            at = next(
                (i for i, (a, b) in enumerate(zip(text, result, strict=False)) if a != b),
                min(len(text), len(result)),
            )
            self._violation(
                f"the final result ({len(result)} characters) differs from the joined text "
                f"({len(text)} characters) from character {at}",
                ev,
            )

    def _on_step_start(self, ev: StepStart) -> None:
        parts = self._run_parts()
        stack = parts.step_stack
        depth = len(stack)
        if depth >= MAX_STEP_DEPTH:
            # Deeper steps are kept, as children of the deepest kept level: the tree has at
            # most MAX_STEP_DEPTH levels (3,000 nested steps made a RecursionError of the
            # fold, and of any repr, comparison or pickle of its message).
            if depth == MAX_STEP_DEPTH:
                self._violation(
                    f"step {ev.name or ev.id!r} opened {depth + 1} levels deep: kept at level "
                    f"{MAX_STEP_DEPTH}, beside its parent (steps nest at most "
                    f"{MAX_STEP_DEPTH} levels)",
                    ev,
                )
            depth = MAX_STEP_DEPTH - 1
            parent: Step | None = stack[depth - 1]
        else:
            parent = stack[-1] if stack else None
        step = Step(
            name=ev.name,
            order=self._step_count,
            id=ev.id,
            parent=None if parent is None else parent.order,
            depth=depth,
            raw=ev.raw,
        )
        self._step_count += 1
        (parts.steps if parent is None else parent.children).append(step)
        stack.append(step)
        self._run_changed = True

    def _on_step_end(self, ev: StepEnd) -> None:
        stack = self._run_parts().step_stack
        for pos in range(len(stack) - 1, -1, -1):
            s = stack[pos]
            if ev.id is not None and s.id is not None:
                if s.id == ev.id:
                    break
            elif ev.name is None or s.name == ev.name:
                break
        else:
            self._violation(f"step {ev.name or ev.id!r} ended but is not open", ev)
            return
        if pos != len(stack) - 1:
            inner = ", ".join(repr(s.name) for s in stack[pos + 1 :])
            self._violation(f"step {s.name!r} ended while {inner} still open", ev)
        s.complete = True
        del stack[pos:]
        self._run_changed = True

    def _on_tool_result(self, ev: ToolResultAdded) -> None:
        self._run_parts().tool_results.append(ev.result)
        self._run_changed = True

    def _on_sources(self, ev: SourcesAdded) -> None:
        # None (retrieval did not run) never erases sources; [] (found nothing) is kept.
        if ev.sources is not None:
            if self._sources is None:
                self._sources = list(ev.sources)
            else:
                self._sources.extend(ev.sources)
        if ev.queries:
            self._add_queries(ev.queries)
        self._run_changed = True

    def _on_media(self, ev: MediaAdded) -> None:
        self._run_parts().media.append(ev.media)
        self._run_changed = True

    def _on_run_status(self, ev: RunStatus) -> None:
        self._run_seen = True
        if ev.run_id is not None:
            # The run to reconnect to (Clouisle: "reuse the existing ... run_id").
            self._keep_metadata({"run_id": ev.run_id})
        self._status = ev.status
        if ev.terminal:
            self._run_terminal = True
        if ev.status == "waiting" and (
            ev.pending_tool_call_id is not None or ev.pending_tool_name is not None
        ):
            arguments, arguments_json, error = _whole_arguments(ev.pending_tool_input)
            self._pending = ToolCall(
                index=0,
                id=ev.pending_tool_call_id,
                name=ev.pending_tool_name,
                arguments=arguments,
                arguments_json=arguments_json,
                complete=True,  # the input arrived whole; ``error`` says when it is unusable
                error=error,
            )
        else:
            self._pending = None
        self._run_changed = True

    def _on_notice(self, ev: Notice) -> None:
        kind = ev.kind
        if kind == "warning":
            self._run_parts().warnings.append(ev.message or "warning")
        elif kind == "ping":
            return
        else:
            if kind == "provider_detected" and ev.data and self.provider in ("", "auto"):
                # ``provider="auto"``: the fold is named after the provider the stream turned
                # out to be (``Message.provider``, the default of ``to_request``).
                self.provider = str(ev.data)
            self._run_parts().notices.append(ev)
            if kind == "search_queries" and isinstance(ev.data, list):
                self._add_queries(ev.data)
        self._run_changed = True

    def _add_queries(self, queries: list[Any]) -> None:
        """Each search query once, as the provider tells one from another
        (``Provider.same_query``): a stream may report a query again, and a query only one
        of the reports carries must still be kept."""
        known = self._run_parts().queries
        same = fold_rules(self.provider).same_query
        for query in queries:
            if not any(same(query, seen) for seen in known):
                known.append(query)

    def _ignore(self, ev: Event) -> None:
        pass


#: Event class -> the name of its ``Folder`` handler.
_HANDLER_NAMES: dict[type, str] = {
    BlockDelta: "_on_delta",
    BlockStart: "_on_block_start",
    BlockEnd: "_on_block_end",
    SignatureDelta: "_on_signature",
    CitationAdded: "_on_citation",
    UsageUpdate: "_on_usage",
    MessageStart: "_on_message_start",
    MessageDelta: "_on_message_delta",
    MessageEnd: "_on_message_end",
    StepStart: "_on_step_start",
    StepEnd: "_on_step_end",
    ToolResultAdded: "_on_tool_result",
    SourcesAdded: "_on_sources",
    MediaAdded: "_on_media",
    RunStatus: "_on_run_status",
    Notice: "_on_notice",
    Unknown: "_ignore",
}


def _handler_table(cls: type[Folder]) -> dict[type, Callable[[Any, Any], None]]:
    """``cls``'s handlers by event class (a subclass's overrides included)."""
    return {event_class: getattr(cls, name) for event_class, name in _HANDLER_NAMES.items()}


Folder._handlers = _handler_table(Folder)


def _partial_finish(
    m: Message, c: _Choice | None, error: StreamError | None
) -> tuple[FinishReason | None, str | None]:
    """The finish of a partial message: what arrived (a ``MessageEnd``, or the finish a
    ``MessageDelta`` announced). A provider error ends a choice that had not ended: its
    finish is then ``error``, with the error's raw finish reason (Cohere ``ERROR``)."""
    if error is None:
        return m.finish_reason, m.raw_finish_reason
    if c is None or not c.ended:
        return "error", error.raw_finish_reason
    finish = m.finish_reason if m.finish_reason is not None or m.complete else "error"
    raw = m.raw_finish_reason
    return finish, raw if raw is not None else error.raw_finish_reason


def _error_object(exc: StreamError) -> Any:
    """The provider's error object for ``Message.error``: the ``error`` member of the error
    frame's payload when it is an object, else the payload itself, else code and message."""
    payload = exc.raw
    if payload is not None and not isinstance(payload, dict):
        try:
            payload = payload.json()  # a ServerSentEvent
        except (AttributeError, ValueError):
            payload = None
    if isinstance(payload, dict):
        error = payload.get("error")
        return error if isinstance(error, dict) else payload
    return {"code": exc.code, "message": exc.message}


def _id_key(value: Any) -> Any:
    """A call id as a set member: ids are kept as the stream sent them, and a stream may send
    a JSON list or object where a string belongs."""
    return repr(value) if isinstance(value, (list, dict)) else value
