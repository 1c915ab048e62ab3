"""The folded result of a stream: :class:`Message` and its parts.

These are plain slotted dataclasses. The fold builds them; users read them, store them, and
turn them into the next request with :meth:`Message.to_request`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, overload

from ._types import ProviderName, RequestItems, RequestMessage, RequestProviderName

__all__ = [
    "Block",
    "BlockKind",
    "Citation",
    "FinishReason",
    "Message",
    "Step",
    "ToolCall",
    "ToolResult",
    "Usage",
]

#: Normalized finish reasons; the provider's own value is kept in ``raw_finish_reason``.
FinishReason = Literal[
    "stop", "length", "tool_calls", "content_filter", "refusal", "error", "other"
]

#: Block kinds. ``server_tool`` is a provider-run tool (Anthropic web search, Responses
#: ``web_search_call``) whose payload is kept in ``Block.data``.
BlockKind = Literal[
    "text", "reasoning", "tool_call", "tool_plan", "refusal", "server_tool", "other"
]


@dataclass(slots=True)
class Usage:
    """Token usage. Cumulative reports replace earlier ones; they are never summed."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    #: The provider's own usage object, unchanged (Cohere's billed units live here).
    raw: Any = None


@dataclass(slots=True)
class Citation:
    """A grounded span. Offsets are as the provider defines them (see the README table)."""

    start: int | None
    end: int | None
    text: str | None = None
    sources: list[Any] = field(default_factory=list)
    #: Index of the block the citation belongs to.
    block: int | None = None
    raw: Any = None


@dataclass(slots=True)
class ToolCall:
    """One tool call the model asked for."""

    #: Position of the call among the message's tool calls (0, 1, …), in order of appearance.
    index: int
    id: str | None
    name: str | None
    #: Parsed arguments; ``None`` when ``arguments_json`` is not one complete valid value, or is
    #: ``null`` (no provider takes it as a call's input), or the call is incomplete.
    arguments: Any
    #: The arguments as JSON text, exactly as streamed (re-serialized for whole-call providers).
    arguments_json: str
    #: The call was closed by the stream: its end event, or the close a provider with none of
    #: its own sends at its terminal event. ``False`` while open, and for a call still open at
    #: the terminal event (cut short, e.g. by a token limit).
    complete: bool
    #: Why ``arguments`` is ``None``: invalid or truncated JSON, a provider error.
    error: str | None = None
    #: Index of the block this call occupies.
    block: int | None = None
    #: Provider extras needed to send the call back (e.g. Gemini ``thoughtSignature``).
    extra: dict[str, Any] = field(default_factory=dict)
    #: While the call is open, or when it was cut short: the best-effort value of the
    #: arguments so far (``JsonAccumulator.partial``); ``None`` once the call has closed.
    arguments_partial: Any = field(default=None, repr=False)

    def partial_arguments(self) -> Any:
        """Best-effort arguments while the call is open (see ``JsonAccumulator.partial``)."""
        return self.arguments if self.arguments_partial is None else self.arguments_partial


@dataclass(slots=True)
class Block:
    """One content block, in stream order."""

    index: int
    kind: BlockKind
    #: Text of text, reasoning, tool-plan and refusal blocks.
    text: str = ""
    #: Reasoning signature (Anthropic ``signature``, Gemini ``thoughtSignature``).
    signature: str | None = None
    #: Payload of blocks that arrive whole (redacted thinking ``data``, server tools).
    data: Any = None
    tool_call: ToolCall | None = None
    citations: list[Citation] = field(default_factory=list)
    complete: bool = False
    #: Provider extras needed to send the block back (``BlockStart.extra``: Responses item ids,
    #: encrypted reasoning, ...), and ``"logprobs"``: the log-probabilities of the block's
    #: deltas, concatenated in stream order (see docs/fold.md).
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ToolResult:
    """The output of a tool run by an agent platform."""

    call_id: str | None
    output: Any
    is_error: bool = False
    name: str | None = None
    raw: Any = None


@dataclass(slots=True)
class Step:
    """A named stage of an agent run; steps nest."""

    name: str | None
    #: Order in which the step started, over the whole run (0, 1, …).
    order: int
    id: str | None = None
    #: ``order`` of the enclosing step, if any.
    parent: int | None = None
    depth: int = 0
    complete: bool = False
    children: list[Step] = field(default_factory=list)
    raw: Any = None


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
        from .jsonform import message_to_dict

        return message_to_dict(self, raw=raw)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Message:
        """The message :meth:`to_dict` wrote."""
        from .jsonform import message_from_dict

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
        from .request import to_request

        return to_request(self, provider or self.provider)
