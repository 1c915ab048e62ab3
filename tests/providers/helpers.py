"""Shared helpers of the provider tests: run a stream, accumulate its events, compare with a
capture's ``.expected.json``.

``accumulate`` is a tiny event-level fold written for the tests only, independent of
``streamfold._read.fold``: it joins the texts per block and records what each event type says, so a
test can check what a provider emitted without trusting another module.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import streamfold as sf
from streamfold._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    CitationAdded,
    Event,
    MessageDelta,
    MessageEnd,
    MessageStart,
    Notice,
    SignatureDelta,
    Unknown,
    UsageUpdate,
)
from streamfold._types import ProviderName

CAPTURES = Path(__file__).resolve().parents[2].parent / "shared" / "captures"


def captures(folder: str) -> list[Path]:
    """The ``.sse`` captures of one provider folder, sorted; empty when absent."""
    directory = CAPTURES / folder
    return sorted(directory.glob("*.sse")) if directory.is_dir() else []


def expected(path: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(path.with_suffix(".expected.json").read_text("utf-8"))
    return result


def sse(*frames: Any, crlf: bool = False) -> bytes:
    """SSE bytes: a ``str`` is a data payload; ``(event, payload)`` names the event; a payload
    that is not a string is JSON-encoded."""
    end = "\r\n" if crlf else "\n"
    out = []
    for frame in frames:
        event, data = frame if isinstance(frame, tuple) else (None, frame)
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        head = f"event: {event}{end}" if event else ""
        out.append(f"{head}data: {text}{end}{end}")
    return "".join(out).encode("utf-8")


@dataclass
class Run:
    """The events of one stream and the error that ended it, if any."""

    events: list[sf.AnyEvent]
    error: Exception | None = None

    def of(self, cls: type[Any]) -> list[Any]:
        return [event for event in self.events if isinstance(event, cls)]

    @property
    def warnings(self) -> list[str]:
        return [str(e.message) for e in self.of(Notice) if e.kind == "warning"]

    @property
    def unknown(self) -> list[str | None]:
        return [event.event_type for event in self.of(Unknown)]


def run(data: bytes | Iterable[bytes], provider: ProviderName, *, strict: bool = False) -> Run:
    """Every event of the stream; a ``StreamfoldError`` is caught and kept in ``error``."""
    chunks = [data] if isinstance(data, bytes) else list(data)
    events: list[sf.AnyEvent] = []
    try:
        for event in sf.events(chunks, provider=provider, strict=strict):
            events.append(event)
    except sf.StreamfoldError as exc:
        return Run(events, exc)
    return Run(events)


#: The message events of a two-choice stream whose choice 1 starts after choice 0 finished,
#: when each finish is announced where it arrives and the messages end with the stream.
LATE_SECOND_CHOICE = [
    ("MessageStart", 0),
    ("MessageDelta", 0),
    ("MessageStart", 1),
    ("MessageDelta", 1),
    ("MessageEnd", 0),
    ("MessageEnd", 1),
]


def message_events(result: Run) -> list[tuple[str, int]]:
    """``(class name, choice)`` of each ``MessageStart``/``MessageDelta``/``MessageEnd``."""
    kinds = (MessageStart, MessageDelta, MessageEnd)
    return [(type(e).__name__, e.choice) for e in result.events if isinstance(e, kinds)]


def live_completeness(
    data: bytes, provider: ProviderName
) -> tuple[list[sf.AnyEvent], list[tuple[bool, ...]], sf.Folder]:
    """Fold the stream's events one by one as a live view does: the events, and after each
    ``(folder.complete, snapshot.complete, *each choice's complete)``; the folder last."""
    folder = sf.Folder(provider)
    seen: list[tuple[bool, ...]] = []
    events = list(sf.events([data], provider=provider))
    for event in events:
        folder.add(event)
        snapshot = folder.snapshot()
        seen.append((folder.complete, snapshot.complete, *(c.complete for c in snapshot.choices)))
    return events, seen, folder


def random_splits(data: bytes, seed: int, max_piece: int = 64) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    position = 0
    while position < len(data):
        size = rng.randint(1, max_piece)
        out.append(data[position : position + size])
        position += size
    return out


def split_at(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(data)}), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


@dataclass
class Block:
    index: int
    kind: str
    choice: int
    text: str = ""
    id: str | None = None
    name: str | None = None
    arguments: Any = None
    complete_at_start: bool = False
    ended: bool = False
    signature: str | None = None
    signatures: int = 0
    data: Any = None
    extra: dict[str, Any] | None = None
    citations: list[Any] = field(default_factory=list)
    logprobs: list[Any] = field(default_factory=list)

    @property
    def arguments_text(self) -> str:
        return self.text

    def parsed_arguments(self) -> Any:
        """What the fold should make of the call: whole arguments, else the joined text."""
        if self.complete_at_start:
            return self.arguments
        text = self.text or "{}"
        try:
            return json.loads(text)
        except ValueError:
            return None


@dataclass
class Choice:
    index: int
    id: str | None = None
    model: str | None = None
    blocks: dict[int, Block] = field(default_factory=dict)
    finish_reason: str | None = None
    raw_finish_reason: str | None = None
    end_data: Any = None
    ended: bool = False

    def ordered(self) -> list[Block]:
        return [self.blocks[i] for i in sorted(self.blocks)]


@dataclass
class Folded:
    choices: dict[int, Choice] = field(default_factory=dict)
    usage: Any = None
    usages: int = 0
    notices: list[Notice] = field(default_factory=list)
    other: list[Event] = field(default_factory=list)

    def choice(self, index: int = 0) -> Choice:
        return self.choices[index]


def accumulate(events: Iterable[Event]) -> Folded:
    """Fold events per choice and block, checking the vocabulary's promises as it goes."""
    folded = Folded()
    choices = folded.choices

    def block_of(event: Any) -> Block:
        state = choices[event.choice]
        block = state.blocks[event.index]
        assert not block.ended, f"{event!r} after the block ended"
        return block

    for event in events:
        if isinstance(event, MessageStart):
            assert event.choice not in choices, f"second MessageStart for choice {event.choice}"
            choices[event.choice] = Choice(event.choice, event.id, event.model)
            continue
        if isinstance(event, (BlockStart, BlockDelta, SignatureDelta, BlockEnd, MessageEnd)):
            assert event.choice in choices, f"{event!r} before its MessageStart"
        if isinstance(event, BlockStart):
            blocks = choices[event.choice].blocks
            assert event.index not in blocks, f"block {event.index} started twice"
            blocks[event.index] = Block(
                event.index,
                event.kind,
                event.choice,
                text=event.text,
                id=event.id,
                name=event.name,
                arguments=event.arguments,
                complete_at_start=event.complete,
                data=event.data,
                extra=event.extra,
            )
        elif isinstance(event, BlockDelta):
            block = block_of(event)
            assert event.kind == block.kind
            assert not block.complete_at_start, "delta for a block that arrived whole"
            block.text += event.text
            if event.logprobs is not None:
                block.logprobs.append(event.logprobs)
        elif isinstance(event, SignatureDelta):
            block = block_of(event)
            block.signature = event.signature
            block.signatures += 1
        elif isinstance(event, BlockEnd):
            block = block_of(event)
            assert event.kind == block.kind
            block.ended = True
            if event.data is not None:
                block.data = event.data
        elif isinstance(event, CitationAdded):
            state = choices[event.choice]
            target = event.citation.block
            assert target is not None and target in state.blocks, "citation without its block"
            state.blocks[target].citations.append(event.citation)
        elif isinstance(event, UsageUpdate):
            folded.usage = event.usage
            folded.usages += 1
        elif isinstance(event, MessageEnd):
            state = choices[event.choice]
            assert not state.ended, "second MessageEnd"
            state.ended = True
            state.finish_reason = event.finish_reason
            state.raw_finish_reason = event.raw_finish_reason
            state.end_data = event.data
        elif isinstance(event, Notice):
            folded.notices.append(event)
        else:
            folded.other.append(event)
    return folded


def assert_blocks_match(blocks: list[Block], wanted: list[dict[str, Any]]) -> None:
    """Compare the blocks of a choice with the ``blocks`` of an ``.expected.json``."""
    assert len(blocks) == len(wanted), [(b.kind, b.text[:30]) for b in blocks]
    for block, want in zip(blocks, wanted, strict=True):
        kind = want["type"]
        if kind in ("text", "refusal"):
            assert block.kind == kind
            assert block.text == want["text"]
        elif kind == "thinking":
            assert block.kind == "reasoning"
            assert block.text == want["text"]
        elif kind == "redacted_thinking":
            assert block.kind == "reasoning" and block.complete_at_start
            assert block.data["data"] == want["data"]
        elif kind in ("tool_call", "server_tool_call"):
            assert block.kind == ("tool_call" if kind == "tool_call" else "server_tool")
            assert block.id == want["id"]
            assert block.name == want["name"]
            if want.get("arguments_raw") is not None:
                assert block.arguments_text == want["arguments_raw"]
            if want.get("arguments_valid_json", True):
                assert block.parsed_arguments() == want["arguments"]
            else:
                assert block.parsed_arguments() is None
            assert block.ended == want["complete"]
        elif kind == "other":
            assert block.kind == "server_tool"
            raw_type = want["raw_type"]
            assert raw_type in (block.name, (block.data or {}).get("type"))
        else:
            raise AssertionError(f"unexpected block type {kind!r} in expected.json")
        if "signature" in want:
            signature = block.signature
            if block.kind == "tool_call" and signature is None:
                signature = (block.extra or {}).get("thoughtSignature")
            assert signature == want["signature"]


def check_capture(path: Path, provider: ProviderName) -> Run:
    """Map a capture through ``sf.events`` and check it against its ``.expected.json``: no
    ``Unknown`` and no warning, ``raw`` the frame on every event, per choice the blocks (text,
    tool call ids/names/arguments, signatures, citations), the raw finish reason, the usage
    object and the error."""
    want = expected(path)
    result = run(path.read_bytes(), provider)
    assert result.unknown == []
    assert result.warnings == []
    for event in result.events:
        assert isinstance(event.raw, sf.ServerSentEvent), event
    folded = accumulate(result.events)
    wanted = {c["index"]: c for c in want["choices"]} if "choices" in want else {0: want["message"]}
    assert sorted(folded.choices) == sorted(wanted)
    error = want.get("error")
    for index, choice_want in wanted.items():
        choice = folded.choice(index)
        assert choice.id == want["response_id"]
        assert choice.model == want["model"]
        assert_blocks_match(choice.ordered(), choice_want["blocks"])
        raw_finish = choice_want["finish_reason"]
        if error is not None and raw_finish == "failed":
            assert not choice.ended  # Responses: ``failed`` raises instead
        elif want["sse"].get("pending_at_eof"):
            # The terminal event is not terminated by a blank line, so never dispatched: the
            # stop reason is known (message_delta) but the message did not end.
            assert not choice.ended
        else:
            assert choice.raw_finish_reason == raw_finish
            assert choice.ended == (raw_finish is not None)
        for block, block_want in zip(choice.ordered(), choice_want["blocks"], strict=True):
            if "citations" in block_want:  # Anthropic
                assert [c.text for c in block.citations] == [
                    c["cited_text"] for c in block_want["citations"]
                ]
                assert [c.sources for c in block.citations] == [
                    [c] for c in block_want["citations"]
                ]
            elif "annotations" in block_want:  # Responses: code-point offsets
                assert [(c.start, c.end) for c in block.citations] == [
                    (a["start_index"], a["end_index"]) for a in block_want["annotations"]
                ]
            elif "grounding_metadata" not in want:  # Gemini grounding: its own test
                assert block.citations == []
    if want["usage"] is None:
        assert folded.usage is None
    else:
        assert folded.usage is not None and folded.usage.raw == want["usage"]
    if error is None and want["sse"].get("pending_at_eof"):
        # The terminal event never arrived: ``events()`` says so after the last event.
        assert isinstance(result.error, sf.IncompleteStreamError), result.error
    elif error is None:
        assert result.error is None
    else:
        assert isinstance(result.error, sf.StreamError), result.error
        assert result.error.message == error["message"]
        assert result.error.code in (error.get("code"), error.get("status"), error.get("type"))
        assert isinstance(result.error.raw, sf.ServerSentEvent)
    return result
