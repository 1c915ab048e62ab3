"""The fold's rules on hand-written event sequences (no provider involved)."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from collections.abc import Iterable
from typing import Any, Literal

import pytest

import streamfold as sf
from streamfold._engine import folder as folder_module
from streamfold._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    CitationAdded,
    Event,
    MediaAdded,
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
from streamfold._message import Citation, Message, ToolResult, Usage
from streamfold._types import ProviderName


def feed(
    events: Iterable[Event], provider: ProviderName = "openai", *, strict: bool = False
) -> sf.Folder:
    folder = sf.Folder(provider, strict=strict)
    for event in events:
        folder.add(event)
    return folder


def fold(
    events: Iterable[Event], provider: ProviderName = "openai", *, strict: bool = False
) -> Message:
    return feed(events, provider, strict=strict).result()


def text_block(index: int, *pieces: str, choice: int = 0) -> list[Event]:
    return [
        BlockStart(index=index, kind="text", choice=choice),
        *(BlockDelta(index=index, kind="text", text=p, choice=choice) for p in pieces),
        BlockEnd(index=index, kind="text", choice=choice),
    ]


def call_block(index: int, *fragments: str, call_id: str = "c", name: str = "f") -> list[Event]:
    return [
        BlockStart(index=index, kind="tool_call", id=call_id, name=name),
        *(BlockDelta(index=index, kind="tool_call", text=f) for f in fragments),
        BlockEnd(index=index, kind="tool_call"),
    ]


def end(finish: Any = "stop", raw: str | None = "STOP", choice: int = 0) -> MessageEnd:
    return MessageEnd(finish_reason=finish, raw_finish_reason=raw, choice=choice)


# -- the outcome is decided by the last event --------------------------------------------------


def test_complete_message_with_its_terminal_event() -> None:
    m = fold([MessageStart(id="m1", model="x"), *text_block(0, "Hel", "lo"), end()])
    assert m.complete
    assert m.text == "Hello"
    assert (m.id, m.model, m.role, m.provider) == ("m1", "x", "assistant", "openai")
    assert m.finish_reason == "stop"
    assert m.raw_finish_reason == "STOP"
    assert m.choices == [m]


def test_a_delta_before_any_block_to_block_minus_one_of_choice_minus_one_is_kept() -> None:
    """No block is "the last one" before the first delta: a hand-fed delta whose index and
    choice are both -1 opens its block like any other."""
    message = fold(
        [
            MessageStart(id="m", model="x", choice=-1),
            BlockDelta(index=-1, kind="text", text="kept", choice=-1),
            end(choice=-1),
        ]
    )
    assert (message.text, message.choice, [b.index for b in message.blocks]) == ("kept", -1, [-1])


def test_no_events_is_incomplete() -> None:
    with pytest.raises(sf.IncompleteStreamError) as info:
        feed([]).result()
    assert isinstance(info.value.partial, Message)
    assert info.value.partial.text == ""
    assert not info.value.partial.complete


def test_input_ending_before_the_terminal_event_raises_with_the_partial() -> None:
    folder = feed(
        [
            MessageStart(),
            *text_block(0, "The answer is"),
            BlockStart(index=1, kind="tool_call", id="call_1", name="lookup"),
            BlockDelta(index=1, kind="tool_call", text='{"q": "weath'),
        ]
    )
    assert not folder.complete
    with pytest.raises(sf.IncompleteStreamError) as info:
        folder.result()
    partial = info.value.partial
    assert partial is not None
    assert partial.text == "The answer is"
    assert not partial.complete
    call = partial.tool_calls[0]
    assert call.complete is False
    assert call.arguments is None
    assert call.error is not None
    assert call.arguments_json == '{"q": "weath'
    assert call.partial_arguments() == {"q": "weath"}
    assert partial.blocks[1].tool_call is call
    assert partial.blocks[1].complete is False
    assert partial.blocks[0].complete is True


def test_an_open_call_whose_text_happens_to_be_valid_is_still_incomplete_at_eof() -> None:
    events = [MessageStart(), BlockStart(index=0, kind="tool_call", id="a", name="f")]
    events.append(BlockDelta(index=0, kind="tool_call", text="{}"))
    with pytest.raises(sf.IncompleteStreamError) as info:
        fold(events)
    assert info.value.partial is not None
    call = info.value.partial.tool_calls[0]
    assert (call.complete, call.arguments) == (False, None)
    assert call.error


def test_every_started_choice_must_end() -> None:
    events = [
        MessageStart(choice=0),
        MessageStart(choice=1),
        *text_block(0, "a"),
        *text_block(1, "b", choice=1),
        end(choice=0),
    ]
    with pytest.raises(sf.IncompleteStreamError) as info:
        fold(events)
    partial = info.value.partial
    assert partial is not None
    assert [c.text for c in partial.choices] == ["a", "b"]
    assert [c.finish_reason for c in partial.choices] == ["stop", None]
    assert fold([*events, end(choice=1)]).complete


def test_a_durable_run_needs_its_terminal_status() -> None:
    events = [
        RunStatus(status="running", run_id="run-1"),
        MessageStart(),
        *text_block(0, "done"),
        end(),
        RunStatus(status="completing", run_id="run-1"),
    ]
    folder = feed(events)
    assert not folder.complete
    with pytest.raises(sf.IncompleteStreamError) as info:
        folder.result()
    assert info.value.partial is not None
    assert info.value.partial.status == "completing"
    assert info.value.partial.text == "done"
    folder.add(RunStatus(status="completed", run_id="run-1", terminal=True))
    m = folder.result()
    assert m.complete
    assert m.status == "completed"


def test_length_finish_completes_normally() -> None:
    m = fold([MessageStart(), *text_block(0, '{"'), end("length", "MAX_TOKENS")])
    assert m.complete
    assert (m.finish_reason, m.raw_finish_reason) == ("length", "MAX_TOKENS")
    assert m.text == '{"'


def test_stream_error_gets_partial_and_retryable_when_nothing_was_produced() -> None:
    folder = feed([MessageStart(), BlockStart(index=0, kind="text")])
    error = sf.StreamError("Overloaded", code="overloaded_error", raw={"error": {"type": "x"}})
    folder.annotate_error(error)
    assert error.retryable_without_duplicate is True
    assert isinstance(error.partial, Message)
    assert error.partial.finish_reason == "error"
    assert error.partial.error == {"type": "x"}
    assert not error.partial.complete


@pytest.mark.parametrize(
    "events",
    [
        text_block(0, "x"),
        [BlockStart(index=0, kind="reasoning"), BlockDelta(index=0, kind="reasoning", text="t")],
        [BlockStart(index=0, kind="tool_plan"), BlockDelta(index=0, kind="tool_plan", text="p")],
        [BlockStart(index=0, kind="refusal"), BlockDelta(index=0, kind="refusal", text="no")],
        [BlockStart(index=0, kind="tool_call", id="c", name="f")],
        [BlockStart(index=0, kind="reasoning", complete=True, data={"data": "opaque"})],
        [ToolResultAdded(result=ToolResult(call_id="c", output="1"))],
    ],
    ids=["text", "reasoning", "tool_plan", "refusal", "tool_call", "redacted", "tool_result"],
)
def test_stream_error_after_content_is_not_retryable(events: list[Event]) -> None:
    folder = feed([MessageStart(), *events])
    error = sf.StreamError("boom", code="x")
    folder.annotate_error(error)
    assert error.retryable_without_duplicate is False
    assert error.partial is not None


def test_stream_error_partial_marks_open_calls_and_keeps_text() -> None:
    folder = feed(
        [
            MessageStart(),
            *text_block(0, "Let me check."),
            BlockStart(index=1, kind="tool_call", id="c1", name="f"),
            BlockDelta(index=1, kind="tool_call", text='{"a": 1'),
        ]
    )
    error = sf.StreamError("cut", code="api_error")
    folder.annotate_error(error)
    partial = error.partial
    assert partial is not None
    assert partial.text == "Let me check."
    assert partial.tool_calls[0].arguments is None
    assert partial.tool_calls[0].complete is False
    assert partial.tool_calls[0].error
    assert partial.error == {"code": "api_error", "message": "cut"}


def test_error_object_is_read_from_the_error_frame() -> None:
    frame = sf.ServerSentEvent(event="error", data='{"error": {"type": "api_error"}}')
    folder = feed([MessageStart()])
    error = sf.StreamError("Internal", code="api_error", raw=frame)
    folder.annotate_error(error)
    assert error.partial is not None
    assert error.partial.error == {"type": "api_error"}


def test_protocol_error_gets_the_partial() -> None:
    folder = feed([MessageStart(), *text_block(0, "so far")])
    error = sf.ProtocolError("bad bytes")
    folder.annotate_error(error)
    assert error.partial is not None
    assert error.partial.text == "so far"


# -- finish reasons ----------------------------------------------------------------------------


@pytest.mark.parametrize(("finish", "raw"), [("stop", "STOP"), ("other", "completed")])
def test_stop_with_complete_tool_calls_becomes_tool_calls(finish: Any, raw: str) -> None:
    m = fold([MessageStart(), *call_block(0, '{"x": 1}'), end(finish, raw)])
    assert m.finish_reason == "tool_calls"
    assert m.raw_finish_reason == raw


def test_calls_an_agent_already_ran_do_not_make_a_tool_turn() -> None:
    ran = ToolResultAdded(result=ToolResult(call_id="c1", output="42"))
    events = [MessageStart(), *call_block(0, "{}", call_id="c1"), ran, *text_block(1, "42")]
    assert fold([*events, end()]).finish_reason == "stop"
    more = [*events, *call_block(2, "{}", call_id="c2"), end()]
    assert fold(more).finish_reason == "tool_calls"


def platform_end(finish: Any = "stop", raw: str | None = "done", **fields: Any) -> MessageEnd:
    """The end of a message from a platform that runs its own tools (Onecortex, Clouisle)."""
    return MessageEnd(
        finish_reason=finish, raw_finish_reason=raw, tools_run_by_platform=True, **fields
    )


@pytest.mark.parametrize("finish", ["stop", "other"])
def test_a_platform_that_runs_its_tools_never_ends_in_a_tool_turn(finish: Any) -> None:
    # The call has no result in the stream, but the platform ran it: a client loop that saw
    # tool_calls would run it a second time.
    m = fold([MessageStart(), *call_block(0, "{}"), *text_block(1, "Done."), platform_end(finish)])
    assert (m.finish_reason, m.raw_finish_reason) == (finish, "done")
    assert [c.id for c in m.tool_calls] == ["c"]


def waiting_on(call_id: str = "call-1") -> RunStatus:
    return RunStatus(
        status="waiting",
        run_id="run-1",
        pending_tool_call_id=call_id,
        pending_tool_name="ask_user",
        pending_tool_input={"questions": ["Which city?"]},
    )


@pytest.mark.parametrize("waiting_first", [True, False])
def test_a_platform_run_waiting_on_a_call_is_a_tool_turn_until_it_moves_on(
    waiting_first: bool,
) -> None:
    # Clouisle's ask_user: the one call the client must answer, whichever of waiting and the
    # message's end comes first.
    ask = call_block(0, "{}", call_id="call-1", name="ask_user")
    ending = [waiting_on(), platform_end(raw="completed")]
    folder = feed(
        [RunStatus(status="running", run_id="run-1"), MessageStart(), *ask]
        + (ending if waiting_first else ending[::-1])
    )
    assert folder.snapshot().finish_reason == "tool_calls"
    with pytest.raises(sf.IncompleteStreamError) as info:
        folder.result()
    assert info.value.partial is not None
    assert info.value.partial.finish_reason == "tool_calls"
    folder.add(RunStatus(status="completed", run_id="run-1", terminal=True))
    m = folder.result()
    assert (m.finish_reason, m.pending_tool_call) == ("stop", None)


def test_a_platform_waiting_run_keeps_a_finish_other_than_stop() -> None:
    events = [RunStatus(status="running"), MessageStart(), waiting_on(), platform_end("other")]
    assert feed(events).snapshot().finish_reason == "other"


def test_metadata_from_start_end_and_run_status() -> None:
    folder = feed(
        [
            RunStatus(status="running", run_id="run-1"),
            MessageStart(id="m", metadata={"conversation_id": "conv-1", "run_id": None}),
            *text_block(0, "hi"),
        ]
    )
    before = folder.snapshot()
    assert before.metadata == {"run_id": "run-1", "conversation_id": "conv-1"}
    folder.add(platform_end(metadata={"elapsed_ms": 7, "conversation_id": None}))
    # A snapshot taken between events sees what the message's end brought.
    assert folder.snapshot().metadata == {
        "run_id": "run-1",
        "conversation_id": "conv-1",
        "elapsed_ms": 7,
    }
    # A later RunStatus without the id (a resumed stream) never erases it.
    folder.add(RunStatus(status="completed", terminal=True))
    m = folder.result()
    assert m.metadata == {"run_id": "run-1", "conversation_id": "conv-1", "elapsed_ms": 7}
    assert m.id == "m"
    # Snapshots handed out are never changed afterwards.
    assert before.metadata == {"run_id": "run-1", "conversation_id": "conv-1"}
    assert fold([MessageStart(), end()]).metadata == {}


def test_stop_without_tool_calls_stays_stop() -> None:
    assert fold([MessageStart(), *text_block(0, "hi"), end()]).finish_reason == "stop"


def test_length_with_tool_calls_stays_length() -> None:
    m = fold([MessageStart(), *call_block(0, '{"x": 1}'), end("length", "length")])
    assert m.finish_reason == "length"


def test_stop_with_only_a_truncated_call_is_not_tool_calls() -> None:
    events = [MessageStart(), BlockStart(index=0, kind="tool_call", id="c", name="f")]
    events += [BlockDelta(index=0, kind="tool_call", text='{"a": '), end()]
    m = fold(events)
    assert m.finish_reason == "stop"
    assert m.tool_calls[0].complete is False


def test_server_tools_do_not_make_a_tool_turn() -> None:
    events = [
        MessageStart(),
        BlockStart(index=0, kind="server_tool", id="s1", name="web_search"),
        BlockDelta(index=0, kind="server_tool", text='{"query": "news"}'),
        BlockEnd(index=0, kind="server_tool"),
        *text_block(1, "Here."),
        end("stop", "end_turn"),
    ]
    m = fold(events)
    assert m.finish_reason == "stop"
    assert m.tool_calls == []
    server = m.blocks[0].tool_call
    assert server is not None
    assert server.arguments == {"query": "news"}


# -- content -----------------------------------------------------------------------------------


def test_text_joins_text_blocks_in_block_order_and_keeps_reasoning_apart() -> None:
    events = [
        MessageStart(),
        BlockStart(index=2, kind="text"),
        BlockStart(index=0, kind="reasoning"),
        BlockStart(index=1, kind="text"),
        BlockDelta(index=2, kind="text", text="world"),
        BlockDelta(index=0, kind="reasoning", text="think "),
        BlockDelta(index=1, kind="text", text="hello "),
        BlockDelta(index=0, kind="reasoning", text="hard"),
        BlockEnd(index=0, kind="reasoning"),
        BlockEnd(index=1, kind="text"),
        BlockEnd(index=2, kind="text"),
        end(),
    ]
    m = fold(events)
    assert m.text == "hello world"
    assert m.reasoning == "think hard"
    assert [(b.index, b.kind, b.text) for b in m.blocks] == [
        (0, "reasoning", "think hard"),
        (1, "text", "hello "),
        (2, "text", "world"),
    ]
    assert all(b.complete for b in m.blocks)


def test_signature_replaces_and_redacted_blocks_are_kept() -> None:
    events = [
        MessageStart(),
        BlockStart(index=0, kind="reasoning"),
        BlockDelta(index=0, kind="reasoning", text="hmm"),
        SignatureDelta(index=0, signature="first"),
        SignatureDelta(index=0, signature="second"),
        BlockEnd(index=0, kind="reasoning"),
        BlockStart(index=1, kind="reasoning", complete=True, data={"type": "redacted_thinking"}),
        BlockEnd(index=1, kind="reasoning"),
        *text_block(2, "ok"),
        end(),
    ]
    m = fold(events)
    assert m.blocks[0].signature == "second"
    assert m.blocks[1].data == {"type": "redacted_thinking"}
    assert m.blocks[1].text == ""
    assert m.blocks[1].complete
    assert m.reasoning == "hmm"


def test_initial_text_of_a_block_start_is_kept() -> None:
    m = fold([MessageStart(), BlockStart(index=0, kind="text", text="Hi"), end()])
    assert m.text == "Hi"


def test_the_text_of_a_block_that_arrives_whole_is_kept() -> None:
    # ``complete`` says no deltas follow; the text the opening event carries is the block's.
    events = [
        MessageStart(),
        BlockStart(index=0, kind="text", complete=True, text="Hi"),
        BlockEnd(index=0, kind="text"),
        BlockStart(index=1, kind="reasoning", complete=True, text="hmm"),
        BlockEnd(index=1, kind="reasoning"),
        end(),
    ]
    folder = feed(events[:2])
    assert folder.snapshot().text == "Hi"
    m = fold(events)
    assert m.text == m.blocks[0].text == "Hi"
    assert m.reasoning == "hmm"
    assert m.warnings == []


def test_tool_plan_and_refusal() -> None:
    events = [
        MessageStart(),
        BlockStart(index=0, kind="tool_plan"),
        BlockDelta(index=0, kind="tool_plan", text="I will "),
        BlockDelta(index=0, kind="tool_plan", text="search."),
        BlockEnd(index=0, kind="tool_plan"),
        BlockStart(index=1, kind="refusal"),
        BlockDelta(index=1, kind="refusal", text="I can't."),
        end(),
    ]
    m = fold(events)
    assert m.tool_plan == "I will search."
    assert m.refusal == "I can't."
    assert m.text == ""
    assert m.blocks[1].kind == "refusal"


def refusal_events(finish: str = "stop", raw: str = "stop") -> list[Event]:
    return [
        MessageStart(),
        BlockStart(index=0, kind="refusal"),
        BlockDelta(index=0, kind="refusal", text="I can't."),
        BlockEnd(index=0, kind="refusal"),
        end(finish, raw),
    ]


def test_a_stop_with_a_refusal_block_is_a_refusal() -> None:
    # OpenAI reports a refusal as content and ends it with ``stop`` (Chat) or ``completed``
    # (Responses): normalized, that is ``refusal``, as Anthropic says it; the raw value stays.
    m = fold(refusal_events())
    assert (m.finish_reason, m.raw_finish_reason) == ("refusal", "stop")
    assert feed(refusal_events()).snapshot().finish_reason == "refusal"
    # A refusal cut by the token limit is cut first; a text answer's stop stays stop.
    assert fold(refusal_events("length", "length")).finish_reason == "length"
    assert fold([MessageStart(), *text_block(0, "ok"), end()]).finish_reason == "stop"


def test_tool_call_arguments_parsed_at_block_end() -> None:
    m = fold([MessageStart(), *call_block(0, '{"ci', 'ty": "Paris"', "}", call_id="call_1"), end()])
    call = m.tool_calls[0]
    assert (call.index, call.id, call.name, call.block) == (0, "call_1", "f", 0)
    assert call.arguments == {"city": "Paris"}
    assert call.arguments_json == '{"city": "Paris"}'
    assert call.complete is True
    assert call.error is None


def test_tool_call_arguments_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    real = folder_module._JsonAccumulator
    values: list[int] = []

    class Counting:
        def __init__(self) -> None:
            self._acc = real()

        def push(self, text: str) -> None:
            self._acc.push(text)

        @property
        def text(self) -> str:
            return str(self._acc.text)

        def value(self) -> Any:
            values.append(1)
            return self._acc.value()

        def partial(self) -> Any:
            return self._acc.partial()

    monkeypatch.setattr(folder_module, "_JsonAccumulator", Counting)
    fragments = ['{"a"', ": [1, ", "2, 3", "]}"]
    m = fold([MessageStart(), *call_block(0, *fragments), end()])
    assert m.tool_calls[0].arguments == {"a": [1, 2, 3]}
    assert values == [1]


def test_invalid_arguments_closed_by_the_stream() -> None:
    m = fold([MessageStart(), *call_block(0, '{"a": 1,,}'), end()])
    call = m.tool_calls[0]
    assert call.arguments is None
    assert call.error is not None
    assert "invalid" in call.error
    assert call.complete is True  # the stream closed it; its text is just not valid
    assert call.arguments_json == '{"a": 1,,}'


def test_truncated_arguments_closed_by_the_stream() -> None:
    m = fold([MessageStart(), *call_block(0, '{"a": [1'), end()])
    call = m.tool_calls[0]
    assert (call.arguments, call.complete) == (None, True)
    assert call.error is not None
    assert "incomplete" in call.error


def test_open_call_at_the_terminal_event_is_cut_whatever_its_text() -> None:
    # Valid JSON may be a prefix of the arguments ('{"x": 1}' of '{"x": 12}'): no close came.
    events = [
        MessageStart(),
        BlockStart(index=0, kind="tool_call", id="a", name="f"),
        BlockDelta(index=0, kind="tool_call", text='{"x": 1}'),
        BlockStart(index=1, kind="tool_call", id="b", name="g"),
        BlockDelta(index=1, kind="tool_call", text='{"lines": ["# TITLE'),
        end("length", "max_tokens"),
    ]
    m = fold(events)
    first, second = m.tool_calls
    assert (first.arguments, first.complete, first.arguments_json) == (None, False, '{"x": 1}')
    assert first.error is not None and "before the call closed" in first.error
    assert first.partial_arguments() == {"x": 1}
    assert (second.arguments, second.complete) == (None, False)
    assert second.error is not None and second.error.startswith("incomplete JSON arguments")
    assert second.arguments_json == '{"lines": ["# TITLE'
    assert second.partial_arguments() == {"lines": ["# TITLE"]}
    assert [b.complete for b in m.blocks] == [False, False]
    assert (m.complete, m.finish_reason, m.raw_finish_reason) == (True, "length", "max_tokens")
    assert len(m.warnings) == 2
    assert "'f' (id 'a') in block 0" in m.warnings[0]
    assert "'g' (id 'b') in block 1" in m.warnings[1]


@pytest.mark.parametrize("fragments", [(), ("",), ("  ",)])
def test_empty_argument_text_means_empty_object(fragments: tuple[str, ...]) -> None:
    call = fold([MessageStart(), *call_block(0, *fragments), end()]).tool_calls[0]
    assert call.arguments == {}
    assert call.complete is True
    assert call.error is None


def test_start_arguments_stand_when_no_fragment_follows() -> None:
    events = [
        MessageStart(),
        BlockStart(index=0, kind="tool_call", id="t", name="f", arguments={}),
        BlockDelta(index=0, kind="tool_call", text=""),
        BlockEnd(index=0, kind="tool_call"),
        end(),
    ]
    assert fold(events).tool_calls[0].arguments == {}


def test_whole_calls_are_taken_as_they_are() -> None:
    events = [
        MessageStart(),
        BlockStart(
            index=0, kind="tool_call", id="a", name="f", complete=True, arguments={"é": [1, 2]}
        ),
        BlockEnd(index=0, kind="tool_call"),
        BlockStart(
            index=1,
            kind="tool_call",
            id="b",
            name="g",
            complete=True,
            arguments={"location": "SF"},
            text='{"location":   "SF"}',
        ),
        BlockEnd(index=1, kind="tool_call"),
        BlockStart(index=2, kind="tool_call", id="c", name="h", complete=True),
        BlockEnd(index=2, kind="tool_call"),
        end(),
    ]
    a, b, c = fold(events).tool_calls
    assert (a.arguments, a.arguments_json, a.complete) == ({"é": [1, 2]}, '{"é": [1, 2]}', True)
    assert (b.arguments, b.arguments_json) == ({"location": "SF"}, '{"location":   "SF"}')
    assert (c.arguments, c.arguments_json) == ({}, "{}")
    assert [t.index for t in (a, b, c)] == [0, 1, 2]


def test_whole_call_extra_is_kept() -> None:
    events = [
        MessageStart(),
        BlockStart(
            index=0,
            kind="tool_call",
            name="get_country",
            complete=True,
            arguments={},
            extra={"thoughtSignature": "sig"},
        ),
        BlockEnd(index=0, kind="tool_call"),
        end(),
    ]
    call = fold(events).tool_calls[0]
    assert call.extra == {"thoughtSignature": "sig"}


def test_calls_interleaving_by_block_index() -> None:
    events = [
        MessageStart(),
        BlockStart(index=0, kind="tool_call", id="a", name="f"),
        BlockStart(index=1, kind="tool_call", id="b", name="g"),
        BlockDelta(index=0, kind="tool_call", text='{"x":'),
        BlockDelta(index=1, kind="tool_call", text='{"y":'),
        BlockDelta(index=0, kind="tool_call", text="1}"),
        BlockDelta(index=1, kind="tool_call", text="2}"),
        BlockEnd(index=0, kind="tool_call"),
        BlockEnd(index=1, kind="tool_call"),
        end("tool_calls", "tool_calls"),
    ]
    a, b = fold(events).tool_calls
    assert (a.id, a.arguments) == ("a", {"x": 1})
    assert (b.id, b.arguments) == ("b", {"y": 2})


def test_citations_go_on_the_message_and_the_block() -> None:
    cite = Citation(start=0, end=5, text="Hello", sources=[{"id": "doc"}], block=0)
    orphan = Citation(start=None, end=None, text="x", block=None)
    events = [MessageStart(), *text_block(0, "Hello")]
    events += [CitationAdded(citation=cite), CitationAdded(citation=orphan), end()]
    m = fold(events)
    assert m.citations == [cite, orphan]
    assert m.blocks[0].citations == [cite]


def test_last_usage_wins() -> None:
    first = Usage(input_tokens=10, output_tokens=1, raw={"n": 1})
    last = Usage(input_tokens=10, output_tokens=50, total_tokens=60, raw={"n": 2})
    m = fold(
        [
            MessageStart(),
            UsageUpdate(usage=first),
            *text_block(0, "a"),
            UsageUpdate(usage=last),
            end(),
        ]
    )
    assert m.usage is last
    assert m.usage.output_tokens == 50


# -- agent platforms ---------------------------------------------------------------------------


def test_tool_results_media_and_notices() -> None:
    result = ToolResult(call_id="call_1", output="1", is_error=False)
    failed = ToolResult(call_id="call_2", output="boom", is_error=True)
    events = [
        MessageStart(),
        *call_block(0, '{"text": "hello"}', call_id="call_1", name="word_count"),
        ToolResultAdded(result=result),
        ToolResultAdded(result=failed),
        MediaAdded(media={"type": "image", "url": "u"}),
        Notice(kind="ping"),
        Notice(kind="compression_start", data={"tokens": 1000}),
        Notice(kind="warning", message="something odd"),
        *text_block(1, "1 word"),
        end(),
    ]
    m = fold(events)
    assert m.tool_results == [result, failed]
    assert m.media == [{"type": "image", "url": "u"}]
    assert [n.kind for n in m.notices] == ["compression_start"]
    assert m.warnings == ["something odd"]


def test_steps_nest_with_order_parent_depth() -> None:
    events = [
        MessageStart(),
        StepStart(name="plan"),
        StepStart(name="search"),
        StepEnd(name="search"),
        StepStart(name="read"),
        StepEnd(name=None),
        StepEnd(name="plan"),
        StepStart(name="answer", id="s9"),
        StepEnd(name=None, id="s9"),
        *text_block(0, "ok"),
        end(),
    ]
    m = fold(events)
    plan, answer = m.steps
    assert (plan.name, plan.order, plan.parent, plan.depth, plan.complete) == (
        "plan",
        0,
        None,
        0,
        True,
    )
    search, read = plan.children
    assert (search.order, search.parent, search.depth, search.complete) == (1, 0, 1, True)
    assert (read.order, read.parent, read.depth, read.complete) == (2, 0, 1, True)
    assert (answer.order, answer.id, answer.complete) == (3, "s9", True)
    assert m.warnings == []


def test_step_never_ended_stays_incomplete_and_unknown_end_warns() -> None:
    events = [MessageStart(), StepStart(name="a"), StepEnd(name="zzz"), end()]
    m = fold(events)
    assert m.steps[0].complete is False
    assert len(m.warnings) == 1
    assert "zzz" in m.warnings[0]
    with pytest.raises(sf.ProtocolError):
        fold(events, strict=True)


def test_sources_none_versus_empty() -> None:
    base: list[Event] = [MessageStart(), *text_block(0, "x"), end()]
    assert fold(base).sources is None
    assert fold([SourcesAdded(sources=None), *base]).sources is None
    assert fold([SourcesAdded(sources=[]), *base]).sources == []
    both = [SourcesAdded(sources=[{"id": 1}], queries=["q"]), SourcesAdded(sources=None), *base]
    m = fold(both)
    assert m.sources == [{"id": 1}]
    assert m.search_queries == ["q"]


def test_search_query_notices_are_collected() -> None:
    events = [MessageStart(), Notice(kind="search_queries", data=[{"text": "q1"}]), end()]
    assert fold(events).search_queries == [{"text": "q1"}]


@pytest.mark.parametrize("provider", ["cohere-v1", ""])
def test_a_search_query_reported_twice_is_listed_once(provider: ProviderName) -> None:
    # Cohere v1 reports a query in search-queries-generation (a Notice) and again in each
    # search result (SourcesAdded.queries); a result's query may lack the generation_id. A
    # fold that knows its provider by name tells queries apart by that provider's rule
    # (Provider.same_query); one that knows none ("") by every provider's.
    q1 = {"text": "q1", "generation_id": "g"}
    q2 = {"text": "q2", "generation_id": "g"}
    events = [
        MessageStart(),
        Notice(kind="search_queries", data=[q1]),
        SourcesAdded(sources=[], queries=[q1, {"text": "q1"}, q2, q2]),
        SourcesAdded(sources=[], queries=[{"text": "q1", "generation_id": "other"}, "s", "s"]),
        end(),
    ]
    assert fold(events, provider).search_queries == [
        q1,
        q2,
        {"text": "q1", "generation_id": "other"},  # another generation's query
        "s",
    ]


def test_waiting_run_exposes_its_pending_call() -> None:
    waiting = RunStatus(
        status="waiting",
        run_id="run-123",
        pending_tool_call_id="call-123",
        pending_tool_name="ask_user",
        pending_tool_input={"questions": ["Which city?"]},
    )
    folder = feed([RunStatus(status="running", run_id="run-123"), MessageStart(), waiting])
    snap = folder.snapshot()
    assert snap.status == "waiting"
    pending = snap.pending_tool_call
    assert pending is not None
    assert (pending.id, pending.name) == ("call-123", "ask_user")
    assert pending.arguments == {"questions": ["Which city?"]}
    assert pending.complete
    with pytest.raises(sf.IncompleteStreamError) as info:
        folder.result()
    assert info.value.partial is not None
    assert info.value.partial.pending_tool_call == pending
    folder.add(RunStatus(status="running", run_id="run-123"))
    folder.add(end())
    folder.add(RunStatus(status="completed", terminal=True))
    m = folder.result()
    assert m.pending_tool_call is None
    assert m.status == "completed"


def test_onecortex_result_must_equal_the_joined_text() -> None:
    good = [MessageStart(), *text_block(0, "You said", ": hello")]
    done = MessageEnd(
        finish_reason="stop", raw_finish_reason="done", data={"result": "You said: hello"}
    )
    m = fold([*good, done], "onecortex")
    assert m.warnings == []
    bad = [*good, MessageEnd(finish_reason="stop", raw_finish_reason="done", data={"result": "X"})]
    m = fold(bad, "onecortex")
    assert len(m.warnings) == 1
    assert "differs" in m.warnings[0]
    with pytest.raises(sf.ProtocolError) as info:
        fold(bad, "onecortex", strict=True)
    assert info.value.partial is not None
    assert info.value.partial.text == "You said: hello"
    assert info.value.provider == "onecortex"


# -- several choices ---------------------------------------------------------------------------


def three_choices() -> list[Event]:
    events: list[Event] = [MessageStart(id="c", choice=i) for i in range(3)]
    for i in range(3):
        events += text_block(10 + i, f"answer {i}", choice=i)
    return [*events, end("length", "length", choice=1), end(choice=0), end(choice=2)]


def test_one_message_per_choice() -> None:
    events = three_choices()
    m = fold(events)
    assert m.choice == 0
    assert [c.choice for c in m.choices] == [0, 1, 2]
    assert [c.text for c in m.choices] == ["answer 0", "answer 1", "answer 2"]
    assert [c.finish_reason for c in m.choices] == ["stop", "length", "stop"]
    assert m.choices[0] is m
    assert all(c.choices is m.choices for c in m.choices)
    assert feed(events).results() == m.choices


def test_no_choice_reads_complete_while_another_still_streams() -> None:
    events = three_choices()
    folder = feed(events[:-1])  # choices 1 and 0 ended, choice 2 not yet
    snapshot = folder.snapshot()
    assert not folder.complete
    assert [c.complete for c in snapshot.choices] == [False, False, False]
    assert [c.finish_reason for c in snapshot.choices] == ["stop", "length", None]
    folder.add(events[-1])
    assert folder.complete
    assert [c.complete for c in folder.snapshot().choices] == [True, True, True]


def test_messages_compare_without_recursing_into_choices() -> None:
    events = [MessageStart(), *text_block(0, "x"), end()]
    assert fold(events) == fold(events)


def test_a_message_with_several_choices_converts_to_a_dict() -> None:
    # ``choices`` holds the message itself: as a field, ``asdict`` recursed into it forever.
    m = fold(three_choices())
    whole = dataclasses.asdict(m)
    assert "choices" not in whole and whole["text"] == "answer 0"
    assert [dataclasses.asdict(c)["text"] for c in m.choices] == [
        "answer 0",
        "answer 1",
        "answer 2",
    ]
    assert "answer 0" in dataclasses.astuple(m)
    copy_ = dataclasses.replace(m, text="other")
    assert copy_.choices == [copy_] and copy_.text == "other"


def test_several_choices_survive_pickle_and_deepcopy() -> None:
    m = fold(three_choices())
    for copied in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        assert [c.text for c in copied.choices] == ["answer 0", "answer 1", "answer 2"]
        assert copied.choices[0] is copied
        assert all(c.choices is copied.choices for c in copied.choices)


# -- contract violations -----------------------------------------------------------------------


def test_delta_for_a_block_never_started() -> None:
    events = [MessageStart(), BlockDelta(index=3, kind="text", text="lost?"), end()]
    m = fold(events)
    assert m.text == "lost?"
    assert len(m.warnings) == 1
    with pytest.raises(sf.ProtocolError) as info:
        fold(events, strict=True)
    assert info.value.event == "block_delta"


def test_block_started_twice_and_ended_unknown() -> None:
    events = [
        MessageStart(),
        *text_block(0, "a"),
        BlockStart(index=0, kind="text"),
        BlockEnd(index=7, kind="text"),
        end(),
    ]
    m = fold(events)
    assert m.text == "a"
    assert len(m.warnings) == 2


def test_delta_after_block_end_is_a_violation() -> None:
    events = [MessageStart(), *call_block(0, "{}"), BlockDelta(index=0, kind="tool_call", text="x")]
    m = fold([*events, end()])
    assert m.tool_calls[0].arguments == {}
    assert len(m.warnings) == 1
    with pytest.raises(sf.ProtocolError):
        fold(events, strict=True)


def test_unknown_events_and_event_subclasses() -> None:
    class LoudDelta(BlockDelta):
        pass

    events = [
        MessageStart(),
        Unknown(event_type="future-event"),
        BlockStart(index=0, kind="text"),
        LoudDelta(index=0, kind="text", text="sub"),
        end(),
    ]
    assert fold(events).text == "sub"


class RejectingAccumulator:
    """Behaves like the Rust ``JsonAccumulator`` on text that can never be valid: ``push``
    raises ``InvalidJsonError`` at the fragment bringing the bad character (keeping it in
    ``text``), and every later call raises the same error."""

    def __init__(self) -> None:
        self._text = ""
        self._error: sf.InvalidJsonError | None = None

    def push(self, fragment: str) -> None:
        if self._error is not None:
            raise self._error
        self._text += fragment
        if ",," in self._text:
            at = self._text.index(",,") + 1
            self._error = sf.InvalidJsonError(f"unexpected ',' at byte {at}", offset=at)
            raise self._error

    @property
    def text(self) -> str:
        return self._text

    def value(self) -> Any:
        if self._error is not None:
            raise self._error
        return json.loads(self._text)

    def partial(self) -> Any:
        if self._error is not None:
            raise self._error
        return None


@pytest.mark.parametrize("closed", [True, False])
def test_arguments_rejected_at_push_keep_folding(
    monkeypatch: pytest.MonkeyPatch, closed: bool
) -> None:
    monkeypatch.setattr(folder_module, "_JsonAccumulator", RejectingAccumulator)
    folder = feed(
        [
            MessageStart(),
            BlockStart(index=0, kind="tool_call", id="c", name="f"),
            BlockDelta(index=0, kind="tool_call", text='{"a": 1,'),
            BlockDelta(index=0, kind="tool_call", text=', "b"'),
            BlockDelta(index=0, kind="tool_call", text=": 2}"),
        ]
    )
    open_call = folder.snapshot().tool_calls[0]
    assert open_call.arguments_json == '{"a": 1,, "b": 2}'
    assert open_call.error is not None
    assert "invalid" in open_call.error
    assert open_call.partial_arguments() is None
    if closed:
        folder.add(BlockEnd(index=0, kind="tool_call"))
    folder.add(end())
    call = folder.result().tool_calls[0]
    assert call.arguments is None
    assert call.arguments_json == '{"a": 1,, "b": 2}'
    assert call.error is not None
    assert "invalid" in call.error
    assert call.complete is closed


def test_initial_text_rejected_at_push(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(folder_module, "_JsonAccumulator", RejectingAccumulator)
    events = [
        MessageStart(),
        BlockStart(index=0, kind="tool_call", id="c", name="f", text="[1,,"),
        BlockDelta(index=0, kind="tool_call", text="2]"),
        BlockEnd(index=0, kind="tool_call"),
        end(),
    ]
    call = fold(events).tool_calls[0]
    assert (call.arguments, call.arguments_json) == (None, "[1,,2]")
    assert call.error


def test_server_tool_input_rejected_at_push(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(folder_module, "_JsonAccumulator", RejectingAccumulator)
    events = [
        MessageStart(),
        BlockStart(index=0, kind="server_tool", id="s", name="web_search"),
        BlockDelta(index=0, kind="server_tool", text='{"q": 1,,'),
        BlockEnd(index=0, kind="server_tool"),
        end(),
    ]
    server = fold(events).blocks[0].tool_call
    assert server is not None
    assert server.arguments is None
    assert server.error


def test_a_folder_driven_by_hand_over_auto_events_learns_the_detected_provider() -> None:
    # `sf.Folder()` over `sf.events(chunks)` (provider "auto") is "the same fold driven by
    # hand": the first event names the provider, so the message can be sent back without
    # naming it again, and equals what `sf.fold` returns.
    body = (
        b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
        b'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    for folder in (sf.Folder(), sf.Folder("auto")):
        for event in sf.events([body]):
            folder.add(event)
            assert folder.snapshot().provider in ("", "auto", "openai")
        message = folder.result()
        assert message.provider == "openai"
        assert message == sf.fold([body])
        assert message.to_request() == {"role": "assistant", "content": "Hi"}
    # A provider the caller named stays.
    named = feed(
        [Notice(kind="provider_detected", data="openai"), MessageStart(), end()], "mistral"
    )
    assert named.result().provider == "mistral"


def test_a_folder_refuses_an_unknown_provider_name_as_fold_does() -> None:
    # `sf.Folder("nope")` was accepted silently, and every message and error then named "nope".
    with pytest.raises(ValueError, match="unknown provider 'nope'") as folder_error:
        sf.Folder("nope")  # type: ignore[arg-type]
    with pytest.raises(ValueError) as fold_error:
        sf.fold([b""], provider="nope")  # type: ignore[arg-type]
    assert str(folder_error.value) == str(fold_error.value)
    assert "anthropic" in str(folder_error.value)
    assert all(sf.Folder(name).provider == name for name in sf.PROVIDER_NAMES)


def test_a_folder_follows_the_fold_rules_of_its_provider() -> None:
    # The quirks of a provider's events (a whole text stated at the end, a call sent again
    # whole, one query reported in several forms) are its own rules (Provider.final_text,
    # resends_call, same_query): a folder named for another provider does not apply them, and
    # one that knows no provider ("", or "auto" before the stream told) applies every
    # provider's.
    stated = [
        MessageStart(),
        *text_block(0, "You said"),
        MessageEnd(finish_reason="stop", raw_finish_reason="done", data={"result": "X"}),
    ]
    call = BlockStart(index=0, kind="tool_call", id="c1", name="f", arguments={"a": 1})
    whole = BlockStart(
        index=0, kind="tool_call", id="c1", name="f", arguments={"a": 2}, complete=True
    )
    resent = [MessageStart(), call, whole, end()]
    unnamed: tuple[Literal[""], ProviderName] = ("", "auto")
    for provider in ("onecortex", *unnamed):
        folder = sf.Folder(provider)
        for event in stated:
            folder.add(event)
        assert "differs from the joined text" in folder.result().warnings[0], provider
    assert fold(stated, "openai").warnings == []
    for provider in ("clouisle", *unnamed):
        folder = sf.Folder(provider)
        for event in resent:
            folder.add(event)
        message = folder.result()
        assert message.tool_calls[0].arguments == {"a": 2}, provider
        assert message.warnings == [], provider
    other = fold(resent, "anthropic")
    assert other.tool_calls[0].complete is False  # the first call, never closed
    assert any("started twice" in warning for warning in other.warnings)
