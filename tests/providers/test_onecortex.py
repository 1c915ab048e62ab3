"""Onecortex: hand-written streams covering every event and every rule of the seed's docs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfold as sf
from streamfold._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    MessageEnd,
    MessageStart,
    StepEnd,
    StepStart,
    ToolResultAdded,
    Unknown,
)
from streamfold._types import ProviderName

from .sse_helpers import (
    check_never_crashes,
    frames_of,
    mutated,
    named,
    payloads,
    reference_fold,
    run,
    split,
)

P: ProviderName = "onecortex"
PING = b": ping\n\n"


def e(event_type: str, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "type": event_type, **fields}


DONE = e("done", result="You said: hello", sessionId="01K", versionNumber=1, durationMs=212)

#: Every event type: nested steps, two calls whose arguments interleave by id, a failed tool.
FULL = (
    PING
    + named(
        e("step_start", name="classify"),
        e("step_start", name="lookup"),
        e("tool_call_start", id="call_1", name="word_count"),
        e("tool_call_start", id="call_2", name="echo"),
        e("tool_call_args", id="call_1", delta='{"text": '),
        e("tool_call_args", id="call_2", delta='{"s": "x"}'),
        e("tool_call_args", id="call_1", delta='"hello"}'),
        e("tool_call_end", id="call_2"),
        e("tool_call_end", id="call_1"),
        e("tool_result", id="call_1", output="1"),
        e("tool_result", id="call_2", output="boom", isError=True),
        e("step_end", name="lookup"),
        e("text", delta="You said"),
    )
    + PING
    + named(e("text", delta=": hello"), e("step_end", name="classify"), DONE)
)

FAILED = named(
    e("tool_call_start", id="call_1", name="word_count"),
    e("text", delta="Partial"),
    e("error", code="agent_error", message="ValueError: the agent was asked to raise"),
)

#: A framework that reports only ``done``: the reply is ``result`` alone.
DONE_ONLY = PING + named(DONE)

#: A call the agent ran without reporting its result, then text: the run finished all the same.
UNANSWERED_CALL = named(
    e("tool_call_start", id="call_1", name="lookup"),
    e("tool_call_args", id="call_1", delta="{}"),
    e("tool_call_end", id="call_1"),
    e("text", delta="All "),
    e("text", delta="done."),
    e("done", result="All done.", sessionId="S1"),
)

#: Steps and a call with its result, but the text only in ``result``; an empty text delta.
RESULT_AFTER_CALL = named(
    e("step_start", name="answer"),
    e("tool_call_start", id="call_1", name="word_count"),
    e("tool_call_end", id="call_1"),
    e("tool_result", id="call_1", output="2"),
    e("text", delta=""),
    e("step_end", name="answer"),
    e("done", result="Two words ✓", sessionId="01K", versionNumber=3, durationMs=9),
)

STREAMS = {
    "full": FULL,
    "failed": FAILED,
    "done_only": DONE_ONLY,
    "unanswered_call": UNANSWERED_CALL,
    "result_after_call": RESULT_AFTER_CALL,
}


def test_every_event_maps() -> None:
    result = run(FULL, P, strict=True)
    assert result.error is None
    assert result.events[0] == MessageStart()
    assert [type(x) for x in result.events if isinstance(x, (StepStart, StepEnd))] == [
        StepStart,
        StepStart,
        StepEnd,
        StepEnd,
    ]
    assert [s.name for s in result.of(StepStart)] == ["classify", "lookup"]
    assert [s.name for s in result.of(StepEnd)] == ["lookup", "classify"]
    folded = reference_fold(result.events)
    calls = folded.of_kind("tool_call")
    assert [(c.id, c.name, c.arguments(), c.closed) for c in calls] == [
        ("call_1", "word_count", {"text": "hello"}, True),
        ("call_2", "echo", {"s": "x"}, True),
    ]
    assert folded.texts("text") == ["You said: hello"]
    assert [(r.call_id, r.name, r.output, r.is_error) for r in folded.tool_results] == [
        ("call_1", "word_count", "1", False),
        ("call_2", "echo", "boom", True),
    ]
    assert folded.end_data == {
        "result": "You said: hello",
        "sessionId": "01K",
        "versionNumber": 1,
        "durationMs": 212,
    }
    assert (folded.finish_reason, folded.raw_finish_reason) == ("stop", "done")
    assert all(b.closed for b in folded.blocks.values())


def test_raw_is_the_frame() -> None:
    for event in run(FULL, P).events:
        assert isinstance(event.raw, sf.ServerSentEvent)
    (result,) = run(FULL, P).of(ToolResultAdded)[:1]
    assert result.raw.event == "tool_result"
    assert result.result.raw == e("tool_result", id="call_1", output="1")


def test_pings_are_invisible() -> None:
    without = FULL.replace(PING, b"")
    assert run(FULL, P).outcome() == run(without, P).outcome()


def test_text_runs_around_a_tool_call_are_separate_blocks() -> None:
    stream = named(
        e("text", delta="Let me count. "),
        e("tool_call_start", id="c", name="count"),
        e("tool_call_args", id="c", delta="{}"),
        e("tool_call_end", id="c"),
        e("text", delta="Done."),
        e("done", result="Let me count. Done."),
    )
    folded = reference_fold(run(stream, P, strict=True).events)
    assert [(b.kind, b.text) for b in folded.blocks.values()] == [
        ("text", "Let me count. "),
        ("tool_call", "{}"),
        ("text", "Done."),
    ]


def test_error_raises_after_the_events_before_it() -> None:
    result = run(FAILED, P, strict=True)  # a failed run may leave a call open
    assert isinstance(result.error, sf.StreamError)
    assert (result.error.code, result.error.message) == (
        "agent_error",
        "ValueError: the agent was asked to raise",
    )
    assert (result.error.provider, result.error.position) == (P, 2)
    assert result.error.retryable_without_duplicate is False
    assert [type(x) for x in result.events] == [
        MessageStart,
        BlockStart,
        BlockStart,
        BlockDelta,
    ]


def test_error_as_first_event_is_retryable() -> None:
    error = run(named(e("error", code="upstream_error", message="stopped")), P).error
    assert isinstance(error, sf.StreamError)
    assert error.retryable_without_duplicate is True


def test_unknown_event_and_unnamed_frames() -> None:
    stream = named(e("handoff", to="b")) + b'data: {"v": 1, "type": "text", "delta": "x"}\n\n'
    stream += named(e("done", result="x"))
    result = run(stream, P, strict=True)
    assert [u.event_type for u in result.of(Unknown)] == ["handoff"]
    assert reference_fold(result.events).texts("text") == ["x"]


RULES = [
    (
        named(
            e("tool_call_args", id="c", delta="{}"),
            e("tool_call_end", id="c"),
            e("done", result=""),
        ),
        "tool_call_args for tool call 'c' before its tool_call_start",
    ),
    (
        named(e("tool_call_end", id="c"), e("done", result="")),
        "tool_call_end for tool call 'c' before its tool_call_start",
    ),
    (
        named(e("tool_result", id="c", output="1"), e("done", result="")),
        "tool_result for tool call 'c' before its tool_call_start",
    ),
    (named(DONE, e("text", delta="late")), "event after the terminal event"),
    (named(DONE, DONE), "event after the terminal event"),
    (
        named({"v": 2, "type": "text", "delta": "a"}, {"v": 2, "type": "done", "result": "a"}),
        "event format version 2, expected 1",
    ),
    (
        named(e("tool_call_start", id="c", name="f"), e("done", result="")),
        "tool calls never ended: ['c']",
    ),
    (named(e("step_start", name="s"), e("done", result="")), "steps never ended: ['s']"),
    (
        named(e("step_end", name="s"), e("done", result="")),
        "step_end for step 's' that is not open",
    ),
    (named(e("done")), "done without result"),
    (
        named(
            e("tool_call_start", id="c", name="f"),
            e("tool_call_end", id="c"),
            e("tool_call_start", id="c", name="f"),
            e("tool_call_end", id="c"),
            e("done", result=""),
        ),
        "tool call id 'c' started twice",
    ),
    (
        named(
            e("tool_call_start", id="c", name="f"),
            e("tool_call_end", id="c"),
            e("tool_call_args", id="c", delta="{}"),
            e("done", result=""),
        ),
        "tool_call_args after tool_call_end",
    ),
    (
        named(
            e("tool_call_start", id="c", name="f"),
            e("tool_call_end", id="c"),
            e("tool_call_end", id="c"),
            e("done", result=""),
        ),
        "ended twice",
    ),
]


@pytest.mark.parametrize(("stream", "needle"), RULES)
def test_rules_warn_by_default_and_raise_when_strict(stream: bytes, needle: str) -> None:
    lenient = run(stream, P)
    assert lenient.error is None
    assert len(lenient.warnings) == 1, lenient.warnings
    assert needle in lenient.warnings[0]
    assert len(lenient.of(MessageEnd)) >= 1
    strict = run(stream, P, strict=True)
    assert isinstance(strict.error, sf.ProtocolError)
    assert needle in str(strict.error)
    assert strict.error.provider == P


def test_an_event_before_its_start_still_opens_the_call() -> None:
    stream = named(
        e("tool_call_args", id="c", delta='{"a": 1}'),
        e("tool_call_end", id="c"),
        e("done", result=""),
    )
    (call,) = reference_fold(run(stream, P).events).of_kind("tool_call")
    assert (call.id, call.name, call.arguments(), call.closed) == ("c", None, {"a": 1}, True)


@pytest.mark.parametrize(
    ("stream", "needle"),
    [
        (b"event: text\ndata: {oops\n\n", "not valid JSON"),
        (b'event: text\ndata: "hello"\n\n', "not a JSON object"),
        (named(e("text", delta=5)), "text delta is not a string"),
        (named(e("tool_call_args", delta="{}")), "malformed payload"),
        (named(e("tool_call_start", id=7, name="f")), "tool call id is not a string"),
    ],
)
def test_protocol_errors(stream: bytes, needle: str) -> None:
    error = run(stream, P).error
    assert isinstance(error, sf.ProtocolError)
    assert needle in str(error)
    assert (error.provider, error.position) == (P, 0)
    assert error.event is not None


@given(name=st.sampled_from(sorted(STREAMS)), data=st.data())
def test_chunking_invariant(name: str, data: st.DataObject) -> None:
    stream = STREAMS[name]
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=60))
    assert run(split(stream, cuts), P).outcome() == run(stream, P).outcome()


def test_single_bytes() -> None:
    assert run([FULL[i : i + 1] for i in range(len(FULL))], P).outcome() == run(FULL, P).outcome()


async def _chunks(data: bytes, size: int = 9) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


@pytest.mark.anyio
async def test_aevents_matches_events(anyio_backend: str) -> None:
    assert [x async for x in sf.aevents(_chunks(FULL), P)] == run(FULL, P).events
    collected: list[Any] = []
    with pytest.raises(sf.StreamError):
        async for event in sf.aevents(_chunks(FAILED), P):
            collected.append(event)
    assert collected == run(FAILED, P).events


# -- robustness -------------------------------------------------------------------------------

OC_KEYS = [
    "v", "type", "delta", "id", "name", "output", "isError", "result", "sessionId",
    "versionNumber", "durationMs", "code", "message",
]  # fmt: skip
OC_TYPES = [
    "text", "tool_call_start", "tool_call_args", "tool_call_end", "tool_result", "step_start",
    "step_end", "done", "error", "novel",
]  # fmt: skip


@settings(max_examples=50)
@given(st.lists(payloads(OC_TYPES, OC_KEYS), max_size=12), st.booleans())
def test_arbitrary_payloads_never_crash(frames: list[dict[str, Any]], strict: bool) -> None:
    check_never_crashes(named(*frames), P, strict=strict)


POOL = frames_of(
    FULL,
    FAILED,
    without=(
        b"done",
        b"error",
    ),
)


@given(st.lists(st.sampled_from(POOL), max_size=24), st.booleans())
def test_any_order_of_valid_frames_never_crashes(frames: list[bytes], strict: bool) -> None:
    check_never_crashes(b"" + b"".join(frames), P, strict=strict)


@given(name=st.sampled_from(sorted(STREAMS)), data=st.data(), strict=st.booleans())
def test_mutated_streams_never_crash(name: str, data: st.DataObject, strict: bool) -> None:
    check_never_crashes(data.draw(mutated(STREAMS[name])), P, strict=strict)


def test_text_after_done_is_not_part_of_the_answer() -> None:
    # The format says nothing follows the terminal event: a late delta is warned about and
    # dropped, so the complete message stays the one `done.result` vouched for.
    message = sf.fold([named(e("text", delta="You said: hello"), DONE, e("text", delta="X"))], P)
    assert message.complete
    assert message.text == "You said: hello"
    assert any("event after the terminal event" in w for w in message.warnings)
    with pytest.raises(sf.ProtocolError, match="event after the terminal event"):
        sf.fold(
            [named(e("text", delta="You said: hello"), DONE, e("text", delta="X"))], P, strict=True
        )


# -- done: the whole reply, the session, a finished run --------------------------------------


@pytest.mark.parametrize(
    ("stream", "text"), [(DONE_ONLY, "You said: hello"), (RESULT_AFTER_CALL, "Two words ✓")]
)
def test_a_run_whose_text_never_streamed_takes_it_from_done_result(
    stream: bytes, text: str
) -> None:
    result = run(stream, P, strict=True)
    assert result.error is None
    start, delta, close, end = result.events[-4:]
    assert isinstance(start, BlockStart) and start.kind == "text"
    assert delta == BlockDelta(index=start.index, kind="text", text=text)
    assert close == BlockEnd(index=start.index, kind="text")
    assert isinstance(end, MessageEnd)
    folded = reference_fold(result.events)
    assert "".join(folded.texts("text")) == text
    message = sf.fold([stream], P, strict=True)
    assert (message.text, message.warnings, message.complete) == (text, [], True)
    assert [b.kind for b in message.blocks if b.text] == ["text"]


def test_streamed_text_takes_nothing_from_done_result() -> None:
    # The same reply streamed and in result: one copy. A different result: the streamed text
    # stays, with the mismatch warning (ProtocolError when strict).
    assert [d.text for d in run(FULL, P).of(BlockDelta) if d.kind == "text"] == [
        "You said",
        ": hello",
    ]
    assert sf.fold([FULL], P).text == "You said: hello"
    other = named(e("text", delta="Streamed"), e("done", result="Other"))
    message = sf.fold([other], P)
    assert message.text == "Streamed"
    assert len(message.warnings) == 1 and "differs" in message.warnings[0]
    with pytest.raises(sf.ProtocolError, match="differs"):
        sf.fold([other], P, strict=True)


@pytest.mark.parametrize("done", [e("done", result=""), e("done", result=None), e("done")])
def test_an_empty_or_missing_result_adds_no_block(done: dict[str, Any]) -> None:
    events = run(named(done), P).events
    assert not [x for x in events if isinstance(x, BlockStart)]
    assert sf.fold([named(done)], P).text == ""


def test_done_session_fields_are_kept_in_the_message_metadata() -> None:
    (end,) = run(FULL, P).of(MessageEnd)
    assert end.metadata == {"sessionId": "01K", "versionNumber": 1, "durationMs": 212}
    message = sf.fold([FULL], P)
    assert message.metadata == {"sessionId": "01K", "versionNumber": 1, "durationMs": 212}
    assert message.id is None  # the session spans runs: it is not this reply's id
    assert sf.fold([UNANSWERED_CALL], P).metadata == {"sessionId": "S1"}
    assert run(named(e("done", result="")), P).of(MessageEnd)[0].metadata is None


def test_a_call_without_its_result_does_not_make_a_finished_run_a_tool_turn() -> None:
    # "done: The run finished": the platform ran the call; a client that saw tool_calls would
    # run it again.
    (end,) = run(UNANSWERED_CALL, P).of(MessageEnd)
    assert end.tools_run_by_platform
    message = sf.fold([UNANSWERED_CALL], P)
    assert (message.finish_reason, message.raw_finish_reason) == ("stop", "done")
    assert message.tool_results == []
    assert [(c.id, c.complete) for c in message.tool_calls] == [("call_1", True)]
    assert message.text == "All done."


@given(name=st.sampled_from(["done_only", "unanswered_call", "result_after_call"]), data=st.data())
def test_done_folds_the_same_however_the_stream_is_cut(name: str, data: st.DataObject) -> None:
    stream = STREAMS[name]
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=30))
    assert sf.fold(split(stream, cuts), P) == sf.fold([stream], P)


def nested_steps(depth: int) -> bytes:
    return named(
        *(e("step_start", name=f"s{i}") for i in range(depth)),
        e("text_delta", delta="hi"),
        *(e("step_end", name=f"s{i}") for i in reversed(range(depth))),
        e("done", result="hi"),
    )


def test_steps_nested_thousands_deep_fold_without_recursion_error() -> None:
    """3,000 nested ``step_start``s (200 KB) made ``fold`` raise RecursionError while copying
    the step tree into the message. Steps now nest at most ``MAX_STEP_DEPTH`` levels: deeper
    ones are kept beside their parent at the last level, with one warning; the message can be
    compared, printed and pickled."""
    import pickle

    from streamfold._engine.folder import MAX_STEP_DEPTH

    message = sf.fold([nested_steps(3000)], provider=P)
    assert (message.text, message.complete) == ("hi", True)
    level = message.steps
    for depth in range(MAX_STEP_DEPTH - 1):
        (step,) = level
        assert (step.name, step.depth, step.complete) == (f"s{depth}", depth, True)
        level = step.children
    # The last level: its own step and every deeper one, in order, beside one another.
    kept = level
    assert [s.name for s in kept] == [f"s{i}" for i in range(MAX_STEP_DEPTH - 1, 3000)]
    assert all(s.depth == MAX_STEP_DEPTH - 1 and not s.children for s in kept)
    (warning,) = message.warnings
    assert f"steps nest at most {MAX_STEP_DEPTH} levels" in warning
    assert pickle.loads(pickle.dumps(message)) == message and repr(message)
    with pytest.raises(sf.ProtocolError, match="levels deep") as info:
        sf.fold([nested_steps(3000)], provider=P, strict=True)
    assert info.value.partial is not None
    assert len(info.value.partial.steps) == 1


def test_steps_nested_to_the_limit_keep_their_tree() -> None:
    from streamfold._engine.folder import MAX_STEP_DEPTH

    message = sf.fold([nested_steps(MAX_STEP_DEPTH)], provider=P, strict=True)
    step, depth = message.steps[0], 0
    while step.children:
        (step,) = step.children
        depth += 1
    assert (depth, step.name, message.warnings) == (MAX_STEP_DEPTH - 1, f"s{depth}", [])


def test_step_end_closes_the_innermost_open_step_of_its_name() -> None:
    """``step_end`` closes the innermost open step of its name (found from the innermost:
    how the cost of nested steps grows is measured in ``benches/test_hostile.py``), and one
    without a name the innermost step."""
    events = [
        e("step_start", name="a"),
        e("step_start", name="b"),
        e("step_start", name="a"),
        e("step_end", name="a"),
        e("step_start", name="c"),
        e("step_end"),
        e("step_end", name="b"),
        e("step_end", name="a"),
    ]
    message = sf.fold([named(*events, e("done", result=""))], provider=P, strict=True)
    assert message.warnings == []
    (outer,) = message.steps
    assert [s.name for s in outer.children] == ["b"]
    assert [s.name for s in outer.children[0].children] == ["a", "c"]
    again = named(*events, e("step_end", name="b"), e("done", result=""))
    with pytest.raises(sf.ProtocolError, match="step_end for step 'b' that is not open"):
        sf.fold([again], provider=P, strict=True)
