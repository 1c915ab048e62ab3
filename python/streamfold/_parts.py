"""The parts of a folded message: usage, citations, tool calls, blocks, tool results, steps,
the stream's timing, and the normalized finish reasons and block kinds.

Plain slotted dataclasses, below both the events (which carry them) and :class:`Message`
(which holds them).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = [
    "Block",
    "BlockKind",
    "Citation",
    "FinishReason",
    "Step",
    "StreamTiming",
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
    """A grounded span. Offsets are as the provider defines them (the table in docs/fold.md)."""

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


@dataclass(frozen=True, slots=True)
class StreamTiming:
    """When the stream's bytes and content came, by the monotonic clock, in seconds from the
    moment the fold (or relay) began: the request was sent, for :func:`stream` and
    :func:`astream`; reading began, for a fold of a response or an iterable. ``None``: not
    yet, or never.

    Measured once per read, in Rust on the reads the fold handles there, so it is always on;
    reads of one event each give each event its own time."""

    #: The first bytes of the body.
    first_byte: float | None
    #: The first read that added to the answer: text, reasoning, a refusal, a tool plan or
    #: tool-call arguments.
    first_token: float | None
    #: The last read that added to the answer.
    last_token: float | None
    #: The longest wait between two reads that carried events (a keep-alive comment is
    #: none): 0 after the first such read.
    largest_gap: float | None
    #: Reads of the body so far.
    reads: int

    def to_dict(self) -> dict[str, Any]:
        """The timing as a JSON-compatible dict (the field names as keys)."""
        return asdict(self)
