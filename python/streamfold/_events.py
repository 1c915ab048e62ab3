"""The provider-neutral event vocabulary.

Block-structured, like Cohere v2 and Anthropic: a block opens (:class:`BlockStart`) with its
index and kind, receives deltas (:class:`BlockDelta`), and closes (:class:`BlockEnd`).
Message-level events carry the id, model, usage and finish; agent-level events carry steps,
tool results, sources, media, run status and notices. Unknown provider events become
:class:`Unknown`; nothing unknown ever raises.

Every event keeps the frame it came from in ``raw``: the ``ServerSentEvent`` for SSE streams,
the parsed line for JSON-lines streams. Events are frozen and slotted: cheap to make and safe
to share. ``choice`` is the OpenAI choice index (``n>1``) or the Gemini candidate index; 0
everywhere else.

Block indices are unique within a choice, numbered from 0 in each (a choice of an ``n>1``
stream is numbered as a stream of it alone would be), and are what deltas refer to. Providers
that key tool calls some other way (OpenAI ``tool_calls[].index``, an id, an output index) are
mapped to block indices by the provider module, in order of appearance.

What providers promise and the fold relies on:

* Every choice (OpenAI ``n>1``, Gemini candidates) opens with a ``MessageStart(choice=i)``;
  every other provider sends one ``MessageStart`` (choice 0), synthesized if the wire has
  none. A
  Clouisle durable run may hold several rounds (a tool turn, then the answer): each further
  round sends ``MessageStart(continued=True)``, which continues the same message (reopening
  it if its round had ended), so one run folds into one message.
* ``MessageDelta`` carries a finish reason sent before the terminal event (Anthropic
  ``message_delta``, a Chat Completions ``finish_reason``, a Gemini candidate's
  ``finishReason``); the fold shows it until ``MessageEnd`` replaces it.
* ``MessageEnd`` is the provider's terminal event for its choice (OpenAI and Mistral:
  ``[DONE]``, which ends every choice that finished; Anthropic: ``message_stop``, with the
  ``stop_reason`` of the preceding ``message_delta``; Cohere v2 ``message-end``; Cohere v1
  ``stream-end``; Responses ``response.completed``/``incomplete``; Gemini the end of the
  stream, which ends every candidate that sent its ``finishReason``; Onecortex ``done``;
  Clouisle ``message_end`` (each round's, in a durable run: a further round reopens the
  message; ``run_end`` when the last round sent none), a workflow stream's
  ``workflow_complete``). Its ``finish_reason`` is already normalized by the provider's own
  mapping table; the fold only turns ``stop`` into ``tool_calls`` when the message holds tool
  calls no result answers, and for a platform that runs its own tools
  (``tools_run_by_platform``) only while its run waits on a ``pending_tool_call``, and
  otherwise into ``refusal`` when the message holds a refusal block (OpenAI). A message is
  complete when each choice that started has ended, and, when a durable run reported
  ``RunStatus`` (Clouisle: run events, a frame with a ``run_id``, a workflow stream), a
  ``RunStatus(terminal=True)`` was seen.
* Provider errors (error events, Cohere ``ERROR`` finish, Responses ``failed``, Gemini error
  chunk, Onecortex/Clouisle ``error``, Clouisle ``workflow_error``) are raised as
  ``StreamError``, not emitted as events.
* ``UsageUpdate.usage`` is the provider's current total, already merged (Anthropic's
  ``message_delta`` over ``message_start``); the fold keeps the last one.
* Tool-call ``BlockDelta`` texts are fragments of the arguments' JSON text; a call that arrives
  whole has ``BlockStart(kind="tool_call", complete=True, arguments=<parsed>)`` and a
  ``BlockEnd`` right after.
* A provider whose calls have no close of their own ends them with ``BlockEnd`` before its
  ``MessageEnd`` (Chat Completions and Mistral at ``finish_reason``, Cohere v1 at
  ``stream-end``). A call still open at ``MessageEnd`` is one whose close never came (a token
  limit inside the call): the fold marks it incomplete, whatever its text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeAlias, get_args

from ._frozen_init import fast_init
from ._jsonform import (
    VERSION,
    check,
    citation_back,
    citation_dict,
    field_names,
    frame_from_json,
    frame_to_json,
    result_back,
    result_dict,
    usage_back,
    usage_dict,
)
from ._parts import BlockKind, Citation, FinishReason, ToolResult, Usage

__all__ = [
    "EVENT_CLASSES",
    "AnyEvent",
    "BlockDelta",
    "BlockEnd",
    "BlockStart",
    "CitationAdded",
    "Event",
    "MediaAdded",
    "MessageDelta",
    "MessageEnd",
    "MessageStart",
    "Notice",
    "RunStatus",
    "SignatureDelta",
    "SourcesAdded",
    "StepEnd",
    "StepStart",
    "ToolResultAdded",
    "Unknown",
    "UsageUpdate",
    "event_from_dict",
    "event_to_dict",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Base of every event."""

    #: Short name of the event class, for logs and ``match`` on strings.
    type: ClassVar[str] = "event"
    #: The frame the event came from.
    raw: Any = field(default=None, repr=False, compare=False)

    def to_dict(self, *, raw: bool = False) -> dict[str, Any]:
        """The event as a JSON-compatible dict, ``{"type": ..., "v": 1, ...}``
        (docs/json.md); ``raw=True`` keeps the frame. ``sf.event_from_dict`` reads it back."""
        return event_to_dict(self, raw=raw)


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageStart(Event):
    """A message (or one choice of it) begins."""

    type: ClassVar[str] = "message_start"
    id: str | None = None
    model: str | None = None
    role: str = "assistant"
    choice: int = 0
    #: Run or session identifiers the opening frame carries (Clouisle ``conversation_id``,
    #: ``run_id``), for ``Message.metadata``; ``None`` when there are none.
    metadata: dict[str, Any] | None = None
    #: A further round of the same message (a Clouisle durable run's next round): its blocks
    #: follow the earlier rounds' blocks, and a ``MessageEnd`` of an earlier round is undone
    #: (the message ends again with its last round). ``id``, when set, replaces the id.
    continued: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockStart(Event):
    """A block opens.

    For a tool call, ``id`` and ``name`` are set. When a provider sends the call whole
    (Mistral, Gemini, Clouisle), ``arguments`` holds the parsed arguments and ``complete`` is
    true; no deltas follow. Blocks that arrive complete (Anthropic ``redacted_thinking``, server
    tool results) carry their payload in ``data`` and are closed at once. A provider-run tool
    call (Anthropic ``server_tool_use``) is a ``server_tool`` block whose deltas, like a tool
    call's, are fragments of its input's JSON text. A whole call's ``BlockStart`` sent again
    for the index of a call with the same ``id`` updates that call in place (Clouisle reports
    a call as it starts, then again with its whole arguments); any other repeat is a
    violation.
    """

    type: ClassVar[str] = "block_start"
    index: int
    kind: BlockKind
    choice: int = 0
    id: str | None = None
    name: str | None = None
    arguments: Any = None
    #: The block arrived whole: no deltas will follow (a BlockEnd still does).
    complete: bool = False
    data: Any = None
    #: Initial text, when the opening frame already carries some.
    text: str = ""
    #: Provider extras needed later (e.g. Gemini ``thoughtSignature`` on a call).
    extra: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockDelta(Event):
    """Text appended to a block: visible text, reasoning, tool-plan, refusal, or a fragment of
    a tool call's JSON arguments."""

    type: ClassVar[str] = "block_delta"
    index: int
    kind: BlockKind
    text: str
    choice: int = 0
    #: Token log-probabilities of this delta's text as the provider sent them (OpenAI Chat
    #: ``choices[].logprobs``, Responses ``output_text.delta.logprobs``, Cohere v2
    #: ``content-delta.logprobs``); ``None`` when absent.
    logprobs: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SignatureDelta(Event):
    """A reasoning block's signature. It replaces any earlier one (Anthropic ``signature_delta``,
    Gemini ``thoughtSignature``)."""

    type: ClassVar[str] = "signature"
    index: int
    signature: str
    choice: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockEnd(Event):
    """A block closes; a tool call's arguments are complete."""

    type: ClassVar[str] = "block_end"
    index: int
    kind: BlockKind
    choice: int = 0
    #: The block's final payload when the provider sends one at its close (Responses
    #: ``output_item.done`` item: reasoning summary and encrypted content, a built-in tool's
    #: action); it replaces ``BlockStart.data``.
    data: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CitationAdded(Event):
    """A citation attached to ``citation.block``."""

    type: ClassVar[str] = "citation"
    citation: Citation
    choice: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageUpdate(Event):
    """The usage so far. Always the provider's current total: a later update replaces it."""

    type: ClassVar[str] = "usage"
    usage: Usage


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageDelta(Event):
    """The provider announced how the message will finish before its terminal event
    (Anthropic ``message_delta`` ahead of ``message_stop``, a Chat Completions choice's
    ``finish_reason`` ahead of ``[DONE]``, a Gemini candidate's ``finishReason`` ahead of
    the stream's end; Clouisle ``output_truncated`` / ``iteration_cap_reached``). It ends
    nothing: ``MessageEnd`` still does, with its own finish reason. A stream cut between the
    two keeps this one in its partial message, since it did arrive. A ``finish_reason`` of
    ``None`` withdraws an earlier announcement (Clouisle: model output after
    ``output_truncated`` is a later turn, so the truncation no longer decides the finish)."""

    type: ClassVar[str] = "message_delta"
    finish_reason: FinishReason | None
    raw_finish_reason: str | None
    choice: int = 0
    #: The provider's delta as sent (Anthropic ``stop_reason``, ``stop_sequence``…).
    data: Any = None
    #: What the delta says about the message rather than the reply (Anthropic
    #: ``stop_sequence``, ``stop_details``, ``container``), for ``Message.metadata``, so that a
    #: stream cut before the terminal event keeps it with the finish; ``None`` when nothing.
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageEnd(Event):
    """The message (or one choice) finished: the provider's terminal event for it."""

    type: ClassVar[str] = "message_end"
    finish_reason: FinishReason | None
    raw_finish_reason: str | None
    choice: int = 0
    #: Extra terminal payload (Onecortex ``done.result``, Clouisle ``elapsed_ms``/``status``…).
    data: Any = None
    #: Run or session identifiers and timings the terminal frame carries (Onecortex
    #: ``sessionId``, ``versionNumber``, ``durationMs``; Clouisle ``elapsed_ms``…), for
    #: ``Message.metadata``; ``None`` when there are none.
    metadata: dict[str, Any] | None = None
    #: The platform ran the message's tool calls itself (Onecortex, Clouisle): a call with no
    #: result in the stream was still run, so the fold never turns this finish into
    #: ``tool_calls`` on that ground (only a run waiting on a ``pending_tool_call`` asks the
    #: client to act).
    tools_run_by_platform: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class StepStart(Event):
    """A named stage of an agent run begins. Steps nest."""

    type: ClassVar[str] = "step_start"
    name: str | None
    id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StepEnd(Event):
    """The innermost open step (or the one with ``name``/``id``) ends."""

    type: ClassVar[str] = "step_end"
    name: str | None
    id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultAdded(Event):
    """An agent platform ran a tool and reports its output."""

    type: ClassVar[str] = "tool_result"
    result: ToolResult


@dataclass(frozen=True, slots=True, kw_only=True)
class SourcesAdded(Event):
    """Retrieved sources (RAG contexts, Cohere v1 search results/documents).

    ``sources`` is ``None`` when retrieval did not run and ``[]`` when it found nothing.
    ``queries`` carries search queries when the provider reports them.
    """

    type: ClassVar[str] = "sources"
    sources: list[Any] | None
    queries: list[Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MediaAdded(Event):
    """A media result (image, video) produced for the UI."""

    type: ClassVar[str] = "media"
    media: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStatus(Event):
    """A durable run's status changed. ``terminal`` is true for the run's final status."""

    type: ClassVar[str] = "run_status"
    status: str
    run_id: str | None = None
    sequence: int | None = None
    terminal: bool = False
    #: For a ``waiting`` run: the pending tool call's id, name and input.
    pending_tool_call_id: str | None = None
    pending_tool_name: str | None = None
    pending_tool_input: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice(Event):
    """Something worth knowing that is not content.

    ``kind`` is one of: ``ping``, ``compression_start``, ``compression_end``,
    ``output_truncated``, ``iteration_cap_reached``, ``input_accepted``, ``debug``,
    ``warning`` (a protocol violation recorded in non-strict mode), ``search_queries``,
    ``tool_progress`` (a provider-run tool's status: Responses ``web_search_call.searching``…),
    ``logprobs`` (log-probabilities that came without text: ``data`` holds them),
    ``rag_start`` (Clouisle retrieval began), ``provider_detected`` (``provider="auto"``: the
    first event; ``data`` is the chosen provider's name), ``finish_message`` (Gemini's
    ``finishMessage``, the explanation of a finish such as ``MALFORMED_FUNCTION_CALL``), and
    a Clouisle workflow stream's ``node_skip``, ``node_error``, ``output``, ``progress``,
    ``status``, ``iteration_start``, ``iteration_complete``.
    """

    type: ClassVar[str] = "notice"
    kind: str
    message: str | None = None
    data: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Unknown(Event):
    """An event type the provider module does not know. Never an error."""

    type: ClassVar[str] = "unknown"
    event_type: str | None


#: Every event a stream yields: the closed union of the event classes, so that a ``match``
#: over it can be checked exhaustive (``case _: assert_never(event)``). ``Event`` is their
#: base, for ``isinstance`` and for code that takes any of them.
AnyEvent: TypeAlias = (
    MessageStart
    | BlockStart
    | BlockDelta
    | SignatureDelta
    | BlockEnd
    | CitationAdded
    | UsageUpdate
    | MessageDelta
    | MessageEnd
    | StepStart
    | StepEnd
    | ToolResultAdded
    | SourcesAdded
    | MediaAdded
    | RunStatus
    | Notice
    | Unknown
)

# Every event class: the cheaper ``__init__`` (see ``_frozen_init``), same behaviour.
for _cls in (Event, *get_args(AnyEvent)):
    fast_init(_cls)
del _cls  # pyright: ignore[reportPossiblyUnboundVariable]


# -- as JSON (the schema is in docs/json.md) --------------------------------------------------

EVENT_CLASSES: tuple[type[Event], ...] = (
    Event,
    MessageStart,
    BlockStart,
    BlockDelta,
    SignatureDelta,
    BlockEnd,
    CitationAdded,
    UsageUpdate,
    MessageDelta,
    MessageEnd,
    StepStart,
    StepEnd,
    ToolResultAdded,
    SourcesAdded,
    MediaAdded,
    RunStatus,
    Notice,
    Unknown,
)
_BY_TYPE: dict[str, type[Event]] = {cls.type: cls for cls in EVENT_CLASSES}
_EVENT_FIELDS: dict[type[Event], tuple[str, ...]] = {cls: field_names(cls) for cls in EVENT_CLASSES}


def event_to_dict(event: Event, *, raw: bool = False) -> dict[str, Any]:
    """``event`` as a JSON-compatible dict (see the module docstring)."""
    cls = event.__class__
    out: dict[str, Any] = {"type": cls.type, "v": VERSION}
    for name in _EVENT_FIELDS[cls]:
        out[name] = getattr(event, name)
    if cls is UsageUpdate:
        out["usage"] = usage_dict(out["usage"])
    elif cls is CitationAdded:
        out["citation"] = citation_dict(out["citation"])
    elif cls is ToolResultAdded:
        out["result"] = result_dict(out["result"])
    if raw:
        out["raw"] = frame_to_json(event.raw)
    return out


def event_from_dict(d: dict[str, Any]) -> Event:
    """The event :func:`event_to_dict` wrote."""
    kind = check(d, "event")
    cls = _BY_TYPE.get(kind)
    if cls is None:
        raise ValueError(f"unknown event type {kind!r}")
    kwargs = {name: d[name] for name in _EVENT_FIELDS[cls] if name in d}
    if cls is UsageUpdate:
        kwargs["usage"] = usage_back(kwargs.get("usage"))
    elif cls is CitationAdded:
        kwargs["citation"] = citation_back(kwargs["citation"])
    elif cls is ToolResultAdded:
        kwargs["result"] = result_back(kwargs["result"])
    frame = frame_from_json(d.get("raw"))
    if frame is not None:
        kwargs["raw"] = frame
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a required field missing
        raise ValueError(f"{kind} event dict: {exc}") from None
