"""The folded result of a stream: :class:`Message` (its parts are in ``_parts``).

Plain slotted dataclasses. The fold builds them; users read them, store them, turn them into
the next request with :meth:`Message.to_request`, and into JSON with :meth:`Message.to_dict`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, overload

from ._events import Event, event_from_dict, event_to_dict
from ._jsonform import (
    VERSION,
    block_back,
    block_dict,
    call_back,
    call_dict,
    check,
    citation_back,
    citation_dict,
    field_names,
    known,
    result_back,
    result_dict,
    step_back,
    step_dict,
    usage_back,
    usage_dict,
)
from ._parts import (
    Block,
    BlockKind,
    Citation,
    FinishReason,
    Step,
    StreamTiming,
    ToolCall,
    ToolResult,
    Usage,
)
from ._request import to_request
from ._types import ProviderName, RequestItems, RequestMessage, RequestProviderName

__all__ = [
    "Block",
    "BlockKind",
    "Citation",
    "FinishReason",
    "Message",
    "Step",
    "StreamTiming",
    "ToolCall",
    "ToolResult",
    "Usage",
]


class _ChoicesSlot:
    """Where :attr:`Message.choices` lives: outside the dataclass fields, because the list holds
    the message itself, and ``dataclasses.asdict``/``astuple`` would recurse into it forever."""

    __slots__ = ("_choices",)
    _choices: list[Message]

    def _keep_choices(self, choices: list[Message]) -> list[Message]:
        # Assigned here: mypy does not see a base's slot from a ``slots=True`` dataclass.
        self._choices = choices
        return choices


@dataclass(slots=True)
class Message(_ChoicesSlot):
    """The assistant message folded from a stream."""

    provider: str = ""
    id: str | None = None
    model: str | None = None
    role: str = "assistant"
    #: All text blocks joined in block order.
    text: str = ""
    blocks: list[Block] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_plan: str = ""
    #: Refusal blocks joined in block order (OpenAI ``refusal``).
    refusal: str = ""
    #: Reasoning text joined in block order (signatures kept on the blocks).
    reasoning: str = ""
    citations: list[Citation] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    #: Top-level steps, each with its nested ``children``.
    steps: list[Step] = field(default_factory=list)
    #: Retrieved sources. ``None`` when retrieval did not run, ``[]`` when it found nothing.
    sources: list[Any] | None = None
    #: Search queries the provider reported (``SourcesAdded.queries``).
    search_queries: list[Any] = field(default_factory=list)
    media: list[Any] = field(default_factory=list)
    finish_reason: FinishReason | None = None
    raw_finish_reason: str | None = None
    usage: Usage | None = None
    #: The terminal event was seen: the stream's outcome is decided. With several choices
    #: (OpenAI ``n>1``, Gemini candidates), every choice's message is complete only once they
    #: all ended.
    complete: bool = False
    #: For durable runs: the run's last status (``completed``, ``waiting``, …).
    status: str | None = None
    #: For a ``waiting`` run: the pending tool call (e.g. Clouisle ``ask_user``).
    pending_tool_call: ToolCall | None = None
    #: What the provider reported about the run or session rather than the reply, under its
    #: own names: the identifiers a caller needs to continue or resume (Onecortex
    #: ``sessionId``, ``versionNumber``; Clouisle ``conversation_id``, ``run_id``) and timings
    #: (Onecortex ``durationMs``, Clouisle ``elapsed_ms``), Anthropic's code execution
    #: ``container`` (its id goes in the next request), ``stop_sequence`` and ``stop_details``;
    #: Chat Completions ``created``, ``system_fingerprint``, ``service_tier``, ``moderation``;
    #: the Responses API's ``created_at``, ``service_tier``, ``tool_usage``…; Gemini
    #: ``promptFeedback`` (docs/fold.md).
    #: Keys absent from the stream are absent here; a later value replaces an earlier one.
    metadata: dict[str, Any] = field(default_factory=dict)
    #: Notices from the stream (context compression, output truncated, iteration cap).
    notices: list[Any] = field(default_factory=list)
    #: Protocol violations and mismatches recorded in non-strict mode.
    warnings: list[str] = field(default_factory=list)
    #: Choice index (OpenAI ``n>1``, Gemini candidate); every choice is in ``choices``.
    choice: int = 0
    #: The provider's error object, when the stream failed.
    error: Any = None
    #: When the stream's bytes and content came (``None`` for a :class:`Folder` fed events by
    #: hand). It describes the read, not the answer: two folds of the same bytes compare
    #: equal whatever their timing, and :meth:`to_dict` leaves it out.
    timing: StreamTiming | None = field(default=None, compare=False, repr=False)

    @property
    def choices(self) -> list[Message]:
        """One message per choice, in choice order (this message among them).

        Not a dataclass field, so ``dataclasses.asdict(message)`` gives this choice alone;
        take every choice with ``[asdict(c) for c in message.choices]``.
        """
        try:
            return self._choices
        except AttributeError:
            return self._keep_choices([self])

    @choices.setter
    def choices(self, value: list[Message]) -> None:
        self._keep_choices(value)

    def to_dict(self, *, raw: bool = False) -> dict[str, Any]:
        """The message as a JSON-compatible dict, ``{"type": "message", "v": 1, ...}``
        (docs/json.md); ``raw=True`` keeps the frames and provider objects."""
        return message_to_dict(self, raw=raw)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Message:
        """The message :meth:`to_dict` wrote."""
        return message_from_dict(d)

    @overload
    def to_request(self, provider: RequestProviderName) -> RequestMessage: ...
    @overload
    def to_request(self, provider: Literal["openai-responses"]) -> RequestItems: ...
    @overload
    def to_request(self, provider: ProviderName | None = None) -> Any: ...
    def to_request(self, provider: str | None = None) -> Any:
        """The assistant message in the shape ``provider``'s next request expects: one message
        (a dict), or for ``openai-responses`` the list of input items. Without ``provider``,
        the shape of the provider the message was folded from (``Message.provider``), known
        only at run time, so typed ``Any``; ``auto`` has no shape (``ValueError``)."""
        return to_request(self, provider or self.provider)


# -- as JSON (the schema is in docs/json.md) --------------------------------------------------

_SPECIAL = {
    "blocks",
    "tool_calls",
    "citations",
    "tool_results",
    "steps",
    "usage",
    "pending_tool_call",
    "notices",
    "timing",
}
_MESSAGE = tuple(n for n in field_names(Message) if n not in _SPECIAL)


def _one_message(m: Message, raw: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "message", "v": VERSION}
    for name in _MESSAGE:
        out[name] = getattr(m, name)
    out["blocks"] = [block_dict(b) for b in m.blocks]
    out["tool_calls"] = [call_dict(c) for c in m.tool_calls]
    out["citations"] = [citation_dict(c) for c in m.citations]
    out["tool_results"] = [result_dict(r) for r in m.tool_results]
    out["steps"] = [step_dict(s, raw) for s in m.steps]
    out["usage"] = usage_dict(m.usage)
    out["pending_tool_call"] = call_dict(m.pending_tool_call)
    out["notices"] = [event_to_dict(n, raw=raw) if isinstance(n, Event) else n for n in m.notices]
    return out


def message_to_dict(message: Message, *, raw: bool = False) -> dict[str, Any]:
    """``message`` as a JSON-compatible dict; with several choices, ``"choices"`` lists every
    choice's dict (this one's again among them, each without ``"choices"``), in choice
    order."""
    out = _one_message(message, raw)
    choices = message.choices
    if len(choices) > 1:
        out["choices"] = [dict(out) if c is message else _one_message(c, raw) for c in choices]
    return out


def _one_message_back(d: dict[str, Any]) -> Message:
    m = Message(**known(d, _MESSAGE))
    m.blocks = [block_back(b) for b in d.get("blocks", ())]
    m.tool_calls = [c for c in map(call_back, d.get("tool_calls", ())) if c is not None]
    # A block's call is the message's call with that block, as the fold builds them.
    by_block = {c.block: c for c in m.tool_calls if c.block is not None}
    for b in m.blocks:
        same = by_block.get(b.index)
        if b.tool_call is not None and same is not None and same == b.tool_call:
            b.tool_call = same
    m.citations = [citation_back(c) for c in d.get("citations", ())]
    m.tool_results = [result_back(r) for r in d.get("tool_results", ())]
    m.steps = [step_back(s) for s in d.get("steps", ())]
    m.usage = usage_back(d.get("usage"))
    m.pending_tool_call = call_back(d.get("pending_tool_call"))
    m.notices = [
        event_from_dict(n) if isinstance(n, dict) and "type" in n else n
        for n in d.get("notices", ())
    ]
    return m


def message_from_dict(d: dict[str, Any]) -> Message:
    """The message :func:`message_to_dict` wrote (with its choices)."""
    kind = check(d, "message")
    if kind != "message":
        raise ValueError(f"not a message dict: type {kind!r}")
    message = _one_message_back(d)
    if "choices" in d:
        choices = [
            message if c.get("choice", 0) == message.choice else _one_message_back(c)
            for c in d["choices"]
        ]
        for c in choices:
            c.choices = choices
    return message
