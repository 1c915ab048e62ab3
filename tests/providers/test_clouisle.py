"""Clouisle: hand-written agent and durable-run streams covering every event of the seed."""

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
    MediaAdded,
    MessageEnd,
    MessageStart,
    Notice,
    RunStatus,
    SourcesAdded,
    Unknown,
    UsageUpdate,
)
from streamfold._providers.clouisle import WORKFLOW_EVENTS
from streamfold._types import ProviderName

from .sse_helpers import (
    check_never_crashes,
    frame_list,
    frames_of,
    mutated,
    payloads,
    reference_fold,
    run,
    split,
    sse,
)

P: ProviderName = "clouisle"

AGENT = sse(
    ("message_start", {"conversation_id": "conv-1", "message_id": "msg-1"}),
    ("rag_start", {"query": "weather"}),
    ("rag_context", {"contexts": [{"citation_id": "s1", "content": "Sunny."}]}),
    ("reasoning_start", {}),
    ("reasoning_delta", {"delta": "Think"}),
    ("reasoning_delta", {"content": "ing."}),
    ("reasoning_end", {}),
    ("compression_start", {"before_tokens": 9000}),
    ("compression_end", {"after_tokens": 3000}),
    ("content_delta", {"delta": "Looking. "}),
    ("tool_call", {"id": "t1", "name": "search", "arguments": {"q": "x"}}),
    ("tool_result", {"id": "t1", "name": "search", "result": {"hits": 1}}),
    ("tool_call", {"id": "t2", "name": "fetch", "arguments": '{"url": "u"}'}),
    ("tool_result", {"tool_call_id": "t2", "output": "page", "is_error": True}),
    ("media_result", {"kind": "image", "url": "https://x/y.png"}),
    ("content_delta", {"text": "Found it [[cite:s1]]"}),
    ("iteration_cap_reached", {"cap": 5}),
    (
        "message_end",
        {
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            "elapsed_ms": 1200,
            "status": "completed",
        },
    ),
)

ASK = {"questions": [{"id": "q1", "text": "Which city?"}]}


def run_event(event_type: str, sequence: int, **fields: Any) -> tuple[str, dict[str, Any]]:
    return event_type, {"run_id": "run-123", "sequence": sequence, "type": event_type, **fields}


RUN = sse(
    run_event("run_start", 1, status="running"),
    run_event("message_start", 2, message_id="msg-456", conversation_id="conv-1"),
    run_event("content_delta", 3, delta="Which city?"),
    run_event(
        "run_status",
        4,
        status="waiting",
        pending_tool_call_id="call-123",
        pending_tool_name="ask_user",
        pending_tool_input=ASK,
    ),
    run_event("input_accepted", 5, kind="answer", content="Oslo"),
    run_event("run_status", 6, status="running"),
    run_event("content_delta", 7, delta=" Oslo."),
    run_event(
        "message_end",
        8,
        usage={"input_tokens": 20, "output_tokens": 4},
        elapsed_ms=900,
        status="completed",
    ),
    run_event("run_end", 9, status="completed", message_id="msg-456"),
)

FAILED = sse(
    ("message_start", {"message_id": "m"}),
    ("content_delta", {"delta": "Half"}),
    ("error", {"code": "model_error", "message": "upstream timed out"}),
)

#: A run that stops at ask_user: the call, the message's end, then waiting on it; after the
#: answer the run completes (a call without a ``tool_result`` all along).
ASKING = [
    run_event("run_start", 1, status="running"),
    run_event("message_start", 2, message_id="msg-7", conversation_id="conv-1"),
    run_event("tool_call", 3, id="call-123", name="ask_user", arguments=ASK),
    run_event("message_end", 4, elapsed_ms=31, status="completed"),
    run_event(
        "run_status",
        5,
        status="waiting",
        pending_tool_call_id="call-123",
        pending_tool_name="ask_user",
        pending_tool_input=ASK,
    ),
]
ASKED = sse(*ASKING, run_event("run_end", 6, status="completed"))

STREAMS = {"agent": AGENT, "run": RUN, "failed": FAILED, "asked": ASKED}


def test_agent_events_map() -> None:
    result = run(AGENT, P, strict=True)
    assert result.error is None
    assert result.events[0] == MessageStart(id="msg-1", metadata={"conversation_id": "conv-1"})
    assert [n.kind for n in result.of(Notice)] == [
        "rag_start",
        "compression_start",
        "compression_end",
        "iteration_cap_reached",
    ]
    assert result.of(Notice)[1].data == {"before_tokens": 9000}
    assert [s.sources for s in result.of(SourcesAdded)] == [
        [{"citation_id": "s1", "content": "Sunny."}]
    ]
    assert [m.media for m in result.of(MediaAdded)] == [{"kind": "image", "url": "https://x/y.png"}]
    folded = reference_fold(result.events)
    assert [(b.kind, b.text) for b in folded.blocks.values() if b.kind != "tool_call"] == [
        ("reasoning", "Thinking."),
        ("text", "Looking. "),
        ("text", "Found it [[cite:s1]]"),
    ]
    search, fetch = folded.of_kind("tool_call")
    assert (search.id, search.name, search.whole, search.arguments()) == (
        "t1",
        "search",
        True,
        {"q": "x"},
    )
    assert (fetch.id, fetch.name, fetch.whole, fetch.text) == ("t2", "fetch", False, '{"url": "u"}')
    assert all(b.closed for b in folded.blocks.values())
    assert [(r.call_id, r.name, r.output, r.is_error) for r in folded.tool_results] == [
        ("t1", "search", {"hits": 1}, False),
        ("t2", "fetch", "page", True),
    ]
    assert folded.usage == sf.Usage(
        10, 5, 15, raw={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    )
    # The run ended at its tool iteration cap, not with the model's own answer.
    assert (folded.finish_reason, folded.raw_finish_reason) == ("other", "completed")
    assert folded.end_data == {"elapsed_ms": 1200, "status": "completed"}


def test_raw_is_the_frame() -> None:
    for event in run(AGENT, P).events:
        assert isinstance(event.raw, sf.ServerSentEvent)


@pytest.mark.parametrize(
    ("payload", "sources"),
    [
        ({"contexts": None}, None),  # retrieval did not run
        ({"contexts": []}, []),  # retrieval found nothing
        ({}, None),
        ({"sources": [{"id": "a"}]}, [{"id": "a"}]),
    ],
)
def test_rag_context_keeps_none_apart_from_empty(payload: dict[str, Any], sources: Any) -> None:
    (added,) = run(sse(("rag_context", payload)), P).of(SourcesAdded)
    assert added.sources == sources


def test_output_truncated_makes_the_finish_length() -> None:
    stream = sse(
        ("content_delta", {"delta": "Cut"}),
        ("output_truncated", {"max_tokens": 3}),
        ("message_end", {"status": "completed"}),
    )
    result = run(stream, P, strict=True)
    (ended,) = result.of(MessageEnd)
    assert (ended.finish_reason, ended.raw_finish_reason) == ("length", "completed")
    assert [n.kind for n in result.of(Notice)] == ["output_truncated"]


def test_output_truncated_gives_a_cut_stream_its_finish() -> None:
    # "Reached the maximum output Token" is known before message_end: a stream that breaks
    # between the two still says why its text stops (finish length), as an Anthropic
    # message_delta does.
    stream = sse(("content_delta", {"delta": "Cut"}), ("output_truncated", {"max_tokens": 3}))
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold([stream], P)
    partial = info.value.partial
    assert partial is not None
    assert (partial.text, partial.complete) == ("Cut", False)
    assert (partial.finish_reason, partial.raw_finish_reason) == ("length", "output_truncated")
    ended = sf.fold([stream + sse(("message_end", {"status": "completed"}))], P, strict=True)
    assert (ended.finish_reason, ended.raw_finish_reason) == ("length", "completed")


def test_message_start_is_synthesized_before_the_first_agent_event() -> None:
    result = run(sse(("content_delta", {"delta": "x", "message_id": "m9"})), P)
    assert result.events[0] == MessageStart(id="m9")


def test_error_raises_after_the_events_before_it() -> None:
    result = run(FAILED, P)
    assert isinstance(result.error, sf.StreamError)
    error = result.error
    assert (error.code, error.message, error.provider, error.position) == (
        "model_error",
        "upstream timed out",
        P,
        2,
    )
    assert [type(x) for x in result.events] == [MessageStart, BlockStart, BlockDelta]


@pytest.mark.parametrize(
    "payload",
    [
        {"code": "run_failed", "msg": "model timed out"},  # as the platform sends it
        {"code": "run_failed", "message": "model timed out"},
        {"code": "run_failed", "error": "model timed out"},
    ],
)
def test_the_error_message_is_read_from_msg_too(payload: dict[str, Any]) -> None:
    stream = sse(
        run_event("run_start", 1, status="running"),
        run_event("content_delta", 2, delta="Half"),
        run_event("error", 3, **payload),
    )
    with pytest.raises(sf.StreamError) as info:
        sf.fold([stream], P)
    assert (info.value.code, info.value.message) == ("run_failed", "model timed out")
    assert info.value.partial is not None and info.value.partial.text == "Half"


def test_durable_run() -> None:
    pipeline = sf.Pipeline(P, strict=True)
    events: list[Any] = []
    terminal_after: list[bool] = []
    for line in RUN.split(b"\n\n")[:-1]:
        events.extend(pipeline.feed(line + b"\n\n"))
        pipeline.raise_pending()
        terminal_after.append(pipeline.provider.terminal_seen)
    events.extend(pipeline.close())
    pipeline.raise_pending()
    # The message ended at frame 8, but the run is decided only by run_end.
    assert terminal_after == [False] * 8 + [True]
    assert pipeline.provider.sequence == 9
    statuses = [e for e in events if isinstance(e, RunStatus)]
    assert [(s.status, s.sequence, s.terminal) for s in statuses] == [
        ("running", 1, False),
        ("waiting", 4, False),
        ("running", 6, False),
        ("completed", 9, True),
    ]
    waiting = statuses[1]
    assert (waiting.pending_tool_call_id, waiting.pending_tool_name) == ("call-123", "ask_user")
    assert waiting.pending_tool_input == ASK
    assert all(s.run_id == "run-123" for s in statuses)
    assert isinstance(events[0], RunStatus)  # run events alone do not start the message
    assert events[1] == MessageStart(
        id="msg-456", metadata={"conversation_id": "conv-1", "run_id": "run-123"}
    )
    (accepted,) = [e for e in events if isinstance(e, Notice)]
    assert (accepted.kind, accepted.data["content"]) == ("input_accepted", "Oslo")
    folded = reference_fold(events)
    assert folded.texts("text") == ["Which city? Oslo."]
    assert folded.usage == sf.Usage(20, 4, 24, raw={"input_tokens": 20, "output_tokens": 4})
    assert (folded.ends, folded.finish_reason) == (1, "stop")


@pytest.mark.parametrize(
    ("status", "finish"),
    [("stopped", "other"), ("failed", "error"), ("interrupted", "error"), ("completed", "stop")],
)
def test_run_end_ends_a_message_that_never_ended(status: str, finish: str) -> None:
    stream = sse(
        run_event("run_start", 1, status="running"),
        run_event("content_delta", 2, delta="Hal"),
        run_event("run_end", 3, status=status),
    )
    result = run(stream, P, strict=True)
    assert result.error is None
    (ended,) = result.of(MessageEnd)
    assert (ended.finish_reason, ended.raw_finish_reason) == (finish, status)
    assert result.events[-1] == ended
    assert result.of(RunStatus)[-1].terminal


def test_a_resumed_run_stream_with_only_run_events_starts_no_message() -> None:
    stream = sse(
        run_event("run_status", 7, status="completing"), run_event("run_end", 8, status="completed")
    )
    result = run(stream, P, strict=True)
    assert [type(x) for x in result.events] == [RunStatus, RunStatus]


def test_replayed_duplicates_are_dropped() -> None:
    stream = sse(
        run_event("content_delta", 1, delta="a"),
        run_event("content_delta", 2, delta="b"),
        run_event("content_delta", 2, delta="b"),
        run_event("content_delta", 1, delta="a"),
        run_event("content_delta", 3, delta="c"),
    )
    lenient = run(stream, P)
    assert reference_fold(lenient.events).texts("text") == ["abc"]
    assert len(lenient.warnings) == 2
    assert "sequence 2 is not above 2" in lenient.warnings[0]
    strict = run(stream, P, strict=True)
    assert isinstance(strict.error, sf.ProtocolError)


@pytest.mark.parametrize(
    ("stream", "needle"),
    [
        (
            sse(
                run_event("run_end", 1, status="completed"), run_event("run_status", 2, status="x")
            ),
            "event after run_end",
        ),
        (
            sse(("message_end", {}), ("content_delta", {"delta": "late"})),
            "event after message_end",
        ),
        (sse(run_event("run_end", 1, status="done")), "run_end with status 'done'"),
        (
            sse(("reasoning_start", {}), ("reasoning_start", {}), ("reasoning_end", {})),
            "reasoning_start while reasoning is open",
        ),
        (sse(("reasoning_start", {}), ("message_end", {})), "reasoning never ended"),
        (
            sse(("message_start", {"message_id": "a"}), ("message_start", {"message_id": "b"})),
            "a second message_start",
        ),
    ],
)
def test_rules_warn_by_default_and_raise_when_strict(stream: bytes, needle: str) -> None:
    lenient = run(stream, P)
    if b"message_end" in stream or b"run_end" in stream:
        assert lenient.error is None
    else:  # the rule is only a warning, but the stream still lacks its terminal event
        assert isinstance(lenient.error, sf.IncompleteStreamError)
    assert len(lenient.warnings) == 1, lenient.warnings
    assert needle in lenient.warnings[0]
    strict = run(stream, P, strict=True)
    assert isinstance(strict.error, sf.ProtocolError)
    assert needle in str(strict.error)


def test_run_events_after_message_end_are_fine() -> None:
    stream = sse(("message_end", {"status": "completed"}), ("run_end", {"status": "completed"}))
    assert run(stream, P, strict=True).error is None


def test_event_type_falls_back_to_the_payload_type() -> None:
    stream = sse((None, {"type": "content_delta", "delta": "x"}), (None, {"type": "message_end"}))
    folded = reference_fold(run(stream, P, strict=True).events)
    assert (folded.texts("text"), folded.ends) == (["x"], 1)


def test_unknown_events_survive() -> None:
    result = run(sse(("node_started", {"node": "n1"})), P, strict=True)
    assert [(u.event_type, u.raw.data) for u in result.of(Unknown)] == [
        ("node_started", '{"node": "n1"}')
    ]


def test_tool_call_arguments_alternates() -> None:
    stream = sse(
        ("tool_call", {"tool_call_id": "a", "tool_name": "f", "args": {"x": 1}}),
        ("tool_call", {"id": "b", "name": "g"}),
        ("tool_call", {"id": "c", "name": "h", "input": "{not json"}),
    )
    folded = reference_fold(run(stream, P).events)
    a, b, c = folded.of_kind("tool_call")
    assert (a.id, a.name, a.arguments()) == ("a", "f", {"x": 1})
    assert (b.whole, b.arguments()) == (True, {})
    assert (c.whole, c.text) == (False, "{not json")  # the fold reports the invalid JSON


@pytest.mark.parametrize(
    ("stream", "needle"),
    [
        (sse(("reasoning_delta", {"delta": "x"})), "reasoning_delta without reasoning_start"),
        (sse(("reasoning_end", {})), "reasoning_end without reasoning_start"),
        (sse(("content_delta", {})), "content text is not a string"),
        (
            sse(("reasoning_start", {}), ("reasoning_delta", {"delta": 1})),
            "reasoning text is not a string",
        ),
        (
            sse(("token", {"event": "token", "data": {"token": None}, "sequence": 1})),
            "the node's text is not a string",
        ),
        (sse(("content_delta", "{nope")), "not valid JSON"),
        (sse(("content_delta", "[1]")), "not a JSON object"),
    ],
)
def test_protocol_errors(stream: bytes, needle: str) -> None:
    error = run(stream, P).error
    assert isinstance(error, sf.ProtocolError)
    assert needle in str(error)
    assert (error.provider, error.position) == (P, stream.count(b"\n\n") - 1)
    # The frame that broke the format: it was None for a text that is not a string.
    assert isinstance(error.raw, sf.ServerSentEvent) and error.event == error.raw.event


def test_the_text_block_closes_before_usage_and_end() -> None:
    kinds = [type(x) for x in run(AGENT, P).events][-3:]
    assert kinds == [BlockEnd, UsageUpdate, MessageEnd]


@given(name=st.sampled_from(sorted(STREAMS)), data=st.data())
def test_chunking_invariant(name: str, data: st.DataObject) -> None:
    stream = STREAMS[name]
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=60))
    assert run(split(stream, cuts), P).outcome() == run(stream, P).outcome()


def test_single_bytes() -> None:
    assert run([RUN[i : i + 1] for i in range(len(RUN))], P).outcome() == run(RUN, P).outcome()


async def _chunks(data: bytes, size: int = 11) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


@pytest.mark.anyio
async def test_aevents_matches_events(anyio_backend: str) -> None:
    assert [x async for x in sf.aevents(_chunks(AGENT), P)] == run(AGENT, P).events
    collected: list[Any] = []
    with pytest.raises(sf.StreamError):
        async for event in sf.aevents(_chunks(FAILED), P):
            collected.append(event)
    assert collected == run(FAILED, P).events


# -- robustness -------------------------------------------------------------------------------

CL_KEYS = [
    "type", "message_id", "conversation_id", "contexts", "sources", "delta", "content", "text",
    "id", "tool_call_id", "name", "tool_name", "arguments", "args", "input", "result", "output",
    "is_error", "usage", "input_tokens", "prompt_tokens", "elapsed_ms", "status", "code",
    "message", "run_id", "sequence", "pending_tool_call_id", "pending_tool_name",
    "pending_tool_input",
]  # fmt: skip
CL_TYPES = [
    "message_start", "rag_start", "rag_context", "reasoning_start", "reasoning_delta",
    "reasoning_end", "content_delta", "tool_call", "tool_result", "media_result",
    "compression_start", "compression_end", "output_truncated", "iteration_cap_reached",
    "message_end", "error", "run_start", "run_status", "input_accepted", "run_end", "novel",
]  # fmt: skip


@settings(max_examples=50)
@given(st.lists(payloads(CL_TYPES, CL_KEYS), max_size=12), st.booleans())
def test_arbitrary_payloads_never_crash(frames: list[dict[str, Any]], strict: bool) -> None:
    check_never_crashes(sse(*((str(f["type"]), f) for f in frames)), P, strict=strict)


POOL = frames_of(
    AGENT,
    RUN,
    FAILED,
    without=(
        b"message_end",
        b"run_end",
        b"error",
    ),
)


@given(st.lists(st.sampled_from(POOL), max_size=24), st.booleans())
def test_any_order_of_valid_frames_never_crashes(frames: list[bytes], strict: bool) -> None:
    check_never_crashes(b"" + b"".join(frames), P, strict=strict)


@given(name=st.sampled_from(sorted(STREAMS)), data=st.data(), strict=st.booleans())
def test_mutated_streams_never_crash(name: str, data: st.DataObject, strict: bool) -> None:
    check_never_crashes(data.draw(mutated(STREAMS[name])), P, strict=strict)


# -- identifiers and tool turns ---------------------------------------------------------------


def test_conversation_and_run_ids_reach_the_message_metadata() -> None:
    # "On reconnect, reuse the existing conversation_id / run_id": the fold keeps them.
    result = run(RUN, P, strict=True)
    (start,) = result.of(MessageStart)
    assert start.metadata == {"conversation_id": "conv-1", "run_id": "run-123"}
    (end,) = result.of(MessageEnd)
    assert end.metadata == {"run_id": "run-123", "elapsed_ms": 900}
    message = sf.fold([RUN], P)
    assert message.metadata == {"conversation_id": "conv-1", "run_id": "run-123", "elapsed_ms": 900}
    assert message.id == "msg-456"
    agent = sf.fold([AGENT], P)
    assert agent.metadata == {"conversation_id": "conv-1", "elapsed_ms": 1200}


def test_a_resumed_stream_of_run_events_keeps_the_run_id() -> None:
    stream = sse(
        run_event("run_status", 7, status="completing"), run_event("run_end", 8, status="completed")
    )
    folder = sf.Folder(P)
    for event in sf.events([stream], P):
        folder.add(event)
    assert folder.snapshot().metadata == {"run_id": "run-123"}


def test_a_call_without_its_result_in_a_finished_run_is_no_tool_turn() -> None:
    stream = sse(
        ("message_start", {"message_id": "m"}),
        ("tool_call", {"id": "t1", "name": "search", "arguments": {"q": "x"}}),
        ("content_delta", {"delta": "Found."}),
        ("message_end", {"status": "completed"}),
    )
    (end,) = run(stream, P, strict=True).of(MessageEnd)
    assert end.tools_run_by_platform
    message = sf.fold([stream], P)
    assert (message.finish_reason, message.raw_finish_reason) == ("stop", "completed")
    assert [c.id for c in message.tool_calls] == ["t1"]


def test_a_run_waiting_on_ask_user_asks_the_client_until_it_completes() -> None:
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold([sse(*ASKING)], P)
    partial = info.value.partial
    assert partial is not None
    assert (partial.status, partial.finish_reason) == ("waiting", "tool_calls")
    assert partial.pending_tool_call is not None
    assert partial.pending_tool_call.name == "ask_user"
    assert partial.metadata == {"conversation_id": "conv-1", "run_id": "run-123", "elapsed_ms": 31}
    done = sf.fold([ASKED], P)
    assert (done.status, done.finish_reason, done.pending_tool_call) == ("completed", "stop", None)


# -- durable runs of several rounds -----------------------------------------------------------


def scoped(
    event_type: str, sequence: int, round_id: str | None, message_id: str | None, **fields: Any
) -> tuple[str, dict[str, Any]]:
    """A run-scoped event with the seed's whole envelope: "run_id, sequence, timestamp,
    round_id, message_id, and type"."""
    envelope = {
        "run_id": "run-123",
        "sequence": sequence,
        "timestamp": f"2026-05-01T10:00:{sequence:02d}Z",
        "round_id": round_id,
        "message_id": message_id,
        "type": event_type,
    }
    return event_type, {**envelope, **fields}


def asked_and_waiting(sequence: int) -> list[tuple[str, dict[str, Any]]]:
    """The agent's ask_user call at ``sequence`` and, at the next, the run waiting on it."""
    return [
        scoped(
            "tool_call",
            sequence,
            "rnd-1",
            "msg-7",
            tool_call_id="call-123",
            tool_name="ask_user",
            arguments=ASK,
        ),
        scoped(
            "run_status",
            sequence + 1,
            "rnd-1",
            "msg-7",
            status="waiting",
            pending_tool_call_id="call-123",
            pending_tool_name="ask_user",
            pending_tool_input=ASK,
        ),
    ]


#: An agent that calls a tool, then answers: two rounds, each its own message_start and
#: message_end, with a new round_id and message_id; one run_end.
TWO_ROUNDS = [
    scoped("run_start", 1, None, None, status="running"),
    scoped("message_start", 2, "rnd-1", "msg-1", conversation_id="conv-1"),
    scoped("reasoning_start", 3, "rnd-1", "msg-1"),
    scoped("reasoning_delta", 4, "rnd-1", "msg-1", delta="Need the forecast."),
    scoped("reasoning_end", 5, "rnd-1", "msg-1"),
    scoped("content_delta", 6, "rnd-1", "msg-1", delta="Checking."),
    scoped(
        "tool_call",
        7,
        "rnd-1",
        "msg-1",
        tool_call_id="t1",
        tool_name="weather",
        arguments={"city": "Oslo"},
    ),
    scoped(
        "tool_result",
        8,
        "rnd-1",
        "msg-1",
        tool_call_id="t1",
        tool_name="weather",
        result='{"sky": "clear"}',
        is_error=False,
    ),
    scoped(
        "message_end",
        9,
        "rnd-1",
        "msg-1",
        usage={"prompt_tokens": 30, "completion_tokens": 9},
        elapsed_ms=400,
    ),
    scoped("message_start", 10, "rnd-2", "msg-2", conversation_id="conv-1"),
    scoped("content_delta", 11, "rnd-2", "msg-2", delta="Clear skies "),
    scoped("content_delta", 12, "rnd-2", "msg-2", delta="in Oslo."),
    scoped(
        "message_end",
        13,
        "rnd-2",
        "msg-2",
        usage={"prompt_tokens": 52, "completion_tokens": 6},
        elapsed_ms=700,
    ),
    scoped("run_end", 14, "rnd-2", "msg-2", status="completed"),
]


@pytest.mark.parametrize("run_start", [True, False], ids=["run_start", "resumed-past-it"])
def test_every_cut_of_a_run_is_incomplete_for_events_and_fold_alike(run_start: bool) -> None:
    # A stream resumed past run_start still carries run_id on every frame: a run, which ends
    # at run_end. sf.events said so (IncompleteStreamError for a cut between the rounds),
    # but sf.fold returned the tool turn's "Checking." as a complete answer.
    frames = TWO_ROUNDS if run_start else TWO_ROUNDS[1:]
    for cut in range(1, len(frames)):
        stream = sse(*frames[:cut])
        assert isinstance(run(stream, P).error, sf.IncompleteStreamError), cut
        with pytest.raises(sf.IncompleteStreamError) as info:
            sf.fold([stream], P)
        partial = info.value.partial
        assert partial is not None and not partial.complete, cut
        assert partial.status == "running", cut
    message = sf.fold([sse(*frames)], P, strict=True)
    assert (message.text, message.complete, message.status) == (
        "Checking.Clear skies in Oslo.",
        True,
        "completed",
    )


def test_a_run_known_by_run_id_completes_once_at_run_end() -> None:
    folder = sf.Folder(P)
    seen = []
    for event in sf.events([sse(*TWO_ROUNDS[1:])], P, strict=True):
        folder.add(event)
        seen.append(folder.snapshot().complete)
    assert seen[-1] and not any(seen[:-1]), seen
    (running,) = run(sse(*TWO_ROUNDS[1:3]), P).of(RunStatus)
    assert (running.status, running.run_id, running.sequence) == ("running", "run-123", 2)


def _without(frames: list[tuple[str, dict[str, Any]]], *kinds: str) -> list[Any]:
    kept = [f for f in frames if f[0] not in kinds or f[1]["sequence"] > 10]
    return [(name, {**p, "sequence": n}) for n, (name, p) in enumerate(kept, 1)]


@pytest.mark.parametrize(
    "frames",
    [
        TWO_ROUNDS,
        # The first round's message_end left out: the second message_start alone starts it.
        _without(TWO_ROUNDS, "message_end"),
        # No second message_start: after message_end the next agent event starts the round.
        [f for f in TWO_ROUNDS if f[1]["sequence"] != 10],
        # Neither: the new round_id and message_id alone start it.
        [f for f in TWO_ROUNDS if f[1]["sequence"] not in (9, 10)],
    ],
    ids=["message_end-and-start", "message_start", "message_end", "round_id"],
)
def test_a_run_of_several_rounds_folds_into_one_message(frames: list[Any]) -> None:
    stream = sse(*frames)
    result = run(stream, P, strict=True)
    assert result.error is None
    assert result.warnings == []
    starts = result.of(MessageStart)
    assert [(s.id, s.continued) for s in starts] == [("msg-1", False), ("msg-2", True)]
    message = sf.fold([stream], P, strict=True)
    assert (message.complete, message.status, message.warnings) == (True, "completed", [])
    assert [(b.kind, b.text) for b in message.blocks] == [
        ("reasoning", "Need the forecast."),
        ("text", "Checking."),
        ("tool_call", ""),
        ("text", "Clear skies in Oslo."),
    ]
    assert message.text == "Checking.Clear skies in Oslo."
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("t1", "weather", {"city": "Oslo"})
    ]
    assert [(r.call_id, r.output) for r in message.tool_results] == [("t1", '{"sky": "clear"}')]
    # The message the run ended with; the last usage report (never summed).
    assert message.id == "msg-2"
    assert (message.finish_reason, message.raw_finish_reason) == ("stop", None)
    if any(f[0] == "message_end" and f[1]["sequence"] < 10 for f in frames):
        assert message.usage is not None and message.usage.output_tokens == 6


def test_a_run_cut_in_its_second_round_has_no_finish_yet() -> None:
    # The first round ended with "stop"; the run went on. Cut in the second round, the
    # partial must not claim the answer stopped normally.
    stream = sse(*TWO_ROUNDS[:11])
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold([stream], P, strict=True)
    partial = info.value.partial
    assert partial is not None
    assert (partial.complete, partial.finish_reason, partial.raw_finish_reason) == (
        False,
        None,
        None,
    )
    assert partial.text == "Checking.Clear skies "
    folder = sf.Folder(P)
    finishes = []
    for event in run(stream, P).events:
        folder.add(event)
        if isinstance(event, (MessageEnd, MessageStart)):
            finishes.append(folder.snapshot().finish_reason)
    # The first round's end shows "stop", as it was; the second round takes it back.
    assert finishes == [None, "stop", None]


def test_output_truncated_in_an_earlier_round_does_not_end_the_run() -> None:
    # The tool turn hit the output limit; the answer of the next round did not.
    truncated = scoped("output_truncated", 9, "rnd-1", "msg-1")
    frames = [
        (n, {**p, "sequence": i})
        for i, (n, p) in enumerate([*TWO_ROUNDS[:8], truncated, *TWO_ROUNDS[8:]], 1)
    ]
    message = sf.fold([sse(*frames)], P, strict=True)
    assert (message.finish_reason, message.raw_finish_reason) == ("stop", None)
    assert [n.kind for n in message.notices] == ["output_truncated"]
    cut = sse(*frames[:9])
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold([cut], P)
    assert info.value.partial is not None
    assert info.value.partial.finish_reason == "length"


def test_a_run_resumed_after_ask_user_repeats_message_start() -> None:
    # The run waits on ask_user without ending its message; once answered it starts again
    # (run_start), reports the answer as the call's tool_result and repeats message_start
    # with the same message_id.
    frames = [
        scoped("run_start", 1, None, None, status="running"),
        scoped("message_start", 2, "rnd-1", "msg-7", conversation_id="conv-1"),
        scoped("content_delta", 3, "rnd-1", "msg-7", delta="Let me ask."),
        *asked_and_waiting(4),
        scoped("run_start", 6, None, None, status="running"),
        scoped(
            "tool_result",
            7,
            "rnd-1",
            "msg-7",
            tool_call_id="call-123",
            tool_name="ask_user",
            result='{"q1": "Oslo"}',
        ),
        scoped("message_start", 8, "rnd-1", "msg-7", conversation_id="conv-1"),
        scoped("content_delta", 9, "rnd-1", "msg-7", delta="Oslo it is."),
        scoped(
            "message_end", 10, "rnd-1", "msg-7", usage={"prompt_tokens": 40, "completion_tokens": 8}
        ),
        scoped("run_end", 11, "rnd-1", "msg-7", status="completed"),
    ]
    result = run(sse(*frames), P, strict=True)
    assert (result.error, result.warnings) == (None, [])
    message = sf.fold([sse(*frames)], P, strict=True)
    assert [(b.kind, b.text) for b in message.blocks if b.kind == "text"] == [
        ("text", "Let me ask."),
        ("text", "Oslo it is."),
    ]
    assert (message.id, message.finish_reason, message.complete) == ("msg-7", "stop", True)
    assert (message.status, message.pending_tool_call) == ("completed", None)
    assert [r.output for r in message.tool_results] == ['{"q1": "Oslo"}']


def test_outside_a_run_a_stream_is_still_one_message() -> None:
    # A plain agent stream (no run events, no run_id): a second message is still a violation.
    stream = sse(
        ("message_start", {"message_id": "a"}),
        ("message_end", {}),
        ("message_start", {"message_id": "b"}),
        ("message_end", {}),
    )
    assert isinstance(run(stream, P, strict=True).error, sf.ProtocolError)


# -- iteration cap ----------------------------------------------------------------------------

#: An agent stopped by its tool iteration cap: the platform ends the run with its own closing
#: text in ``iteration_cap_reached.content``, then message_end (usage only) and run_end.
CAPPED = [
    scoped("run_start", 1, None, None, status="running"),
    scoped("message_start", 2, "rnd-1", "msg-9", conversation_id="conv-1"),
    scoped("content_delta", 3, "rnd-1", "msg-9", delta="Searching."),
    scoped(
        "tool_call",
        4,
        "rnd-1",
        "msg-9",
        tool_call_id="t1",
        tool_name="search",
        arguments={"q": "x"},
    ),
    scoped(
        "tool_result", 5, "rnd-1", "msg-9", tool_call_id="t1", tool_name="search", result="nothing"
    ),
    scoped(
        "iteration_cap_reached",
        6,
        "rnd-1",
        "msg-9",
        content="I reached the maximum number of tool calls.",
    ),
    scoped("message_end", 7, "rnd-1", "msg-9", usage={"prompt_tokens": 9, "completion_tokens": 3}),
    scoped("run_end", 8, "rnd-1", "msg-9", status="completed"),
]


def test_the_iteration_cap_is_the_finish_reason() -> None:
    result = run(sse(*CAPPED), P, strict=True)
    assert (result.error, result.warnings) == (None, [])
    (ended,) = result.of(MessageEnd)
    assert (ended.finish_reason, ended.raw_finish_reason) == ("other", "iteration_cap_reached")
    message = sf.fold([sse(*CAPPED)], P, strict=True)
    # The run did end (complete), but not with the model's own answer: "other", and why.
    assert (message.complete, message.finish_reason, message.raw_finish_reason) == (
        True,
        "other",
        "iteration_cap_reached",
    )
    assert [n.kind for n in message.notices] == ["iteration_cap_reached"]
    assert message.warnings == []
    # The platform's closing text is shown, as a text block of its own.
    assert [b.text for b in message.blocks if b.kind == "text"] == [
        "Searching.",
        "I reached the maximum number of tool calls.",
    ]


def test_the_iteration_cap_survives_a_cut_and_a_run_end_without_message_end() -> None:
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold([sse(*CAPPED[:6])], P)
    partial = info.value.partial
    assert partial is not None
    assert (partial.finish_reason, partial.raw_finish_reason) == ("other", "iteration_cap_reached")
    ended = sf.fold([sse(*CAPPED[:6], CAPPED[7])], P, strict=True)
    assert (ended.finish_reason, ended.raw_finish_reason, ended.complete) == (
        "other",
        "completed",
        True,
    )
    # A stopped or failed run keeps its own finish.
    failed = sse(*CAPPED[:6], scoped("run_end", 8, "rnd-1", "msg-9", status="failed"))
    assert sf.fold([failed], P).finish_reason == "error"


# -- the run stream's envelope ----------------------------------------------------------------


def enveloped(
    event_type: str, sequence: int, message_id: str | None, payload: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """A run event with the envelope fields at the top and the event's own in ``payload``."""
    return event_type, {
        "run_id": "run-123",
        "sequence": sequence,
        "timestamp": "2026-05-01T10:00:00Z",
        "round_id": "rnd-1",
        "message_id": message_id,
        "type": event_type,
        "payload": payload,
    }


def test_run_events_with_their_fields_under_payload() -> None:
    stream = sse(
        enveloped("run_start", 1, None, {"status": "running", "run_id": "run-123"}),
        enveloped(
            "message_start", 2, "msg-5", {"conversation_id": "conv-1", "message_id": "msg-5"}
        ),
        enveloped("content_delta", 3, "msg-5", {"delta": "Looking."}),
        enveloped(
            "tool_call",
            4,
            "msg-5",
            {"tool_call_id": "t1", "tool_name": "search", "arguments": {"q": "x"}},
        ),
        enveloped(
            "tool_result",
            5,
            "msg-5",
            {"tool_call_id": "t1", "tool_name": "search", "result": "hit", "is_error": False},
        ),
        enveloped("content_delta", 6, "msg-5", {"delta": "Found."}),
        enveloped("message_end", 7, None, {"usage": {"prompt_tokens": 4, "completion_tokens": 2}}),
        enveloped("run_end", 8, None, {"status": "completed", "message_id": "msg-5"}),
    )
    pipeline = sf.Pipeline(P, strict=True)
    pipeline.feed(stream)
    assert pipeline.provider.sequence == 8
    message = sf.fold([stream], P, strict=True)
    assert (message.text, message.id, message.complete, message.warnings) == (
        "Looking.Found.",
        "msg-5",
        True,
        [],
    )
    assert [(c.id, c.arguments) for c in message.tool_calls] == [("t1", {"q": "x"})]
    assert [(r.call_id, r.output) for r in message.tool_results] == [("t1", "hit")]
    assert message.usage is not None and message.usage.total_tokens == 6
    assert message.metadata == {"conversation_id": "conv-1", "run_id": "run-123"}


# -- a call reported again --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "whole"),
    [({}, {"q": "oslo"}), ('{"q": "os', '{"q": "oslo"}'), ({}, '{"q": "oslo"}')],
    ids=["objects", "texts", "object-then-text"],
)
def test_a_call_reported_again_with_its_whole_arguments_is_one_call(first: Any, whole: Any) -> None:
    # The platform sends tool_call as the model starts the call, with the arguments it has
    # so far, and again with the whole arguments once they changed; then the result.
    stream = sse(
        scoped("message_start", 1, "rnd-1", "msg-1", conversation_id="conv-1"),
        scoped(
            "tool_call",
            2,
            "rnd-1",
            "msg-1",
            tool_call_id="t1",
            tool_name="search",
            tool_display_name="Search",
            arguments=first,
        ),
        scoped(
            "tool_call",
            3,
            "rnd-1",
            "msg-1",
            tool_call_id="t1",
            tool_name="search",
            tool_display_name="Search",
            arguments=whole,
        ),
        scoped(
            "tool_result", 4, "rnd-1", "msg-1", tool_call_id="t1", tool_name="search", result="hit"
        ),
        scoped("content_delta", 5, "rnd-1", "msg-1", delta="Found it."),
        scoped("message_end", 6, "rnd-1", "msg-1", usage={}),
        scoped("run_end", 7, "rnd-1", "msg-1", status="completed"),
    )
    result = run(stream, P, strict=True)
    assert (result.error, result.warnings) == (None, [])
    message = sf.fold([stream], P, strict=True)
    assert [(c.id, c.name, c.arguments, c.complete, c.index) for c in message.tool_calls] == [
        ("t1", "search", {"q": "oslo"}, True, 0)
    ]
    assert [b.kind for b in message.blocks] == ["tool_call", "text"]
    assert message.blocks[0].tool_call == message.tool_calls[0]
    # A live view shows the first report until the second replaces it.
    folder = sf.Folder(P)
    seen = []
    for event in result.events:
        folder.add(event)
        calls = folder.snapshot().tool_calls
        if calls:
            seen.append(calls[0].arguments_json)
    assert seen[0] != seen[-1] and "oslo" in seen[-1]


# -- workflow streams -------------------------------------------------------------------------


def wf(event_type: str, sequence: int, node_id: str | None = None, **data: Any) -> tuple[str, Any]:
    """A workflow stream event as the run stream sends it: the event's fields in ``data``."""
    return event_type, {
        "event": event_type,
        "data": data,
        "node_id": node_id,
        "timestamp": f"2026-05-01T10:00:{sequence:02d}",
        "sequence": sequence,
    }


#: "run start, node start/output/skipped, run complete": an LLM node streams its answer
#: through the answer node; a branch not taken is skipped.
WORKFLOW = [
    wf("workflow_start", 1, workflow_id="wf-1", workflow_name="Orders", inputs={"q": "A-1"}),
    wf("node_start", 2, "start", node_type="start", node_label="Start", is_streaming=False),
    wf("node_complete", 3, "start", outputs={"q": "A-1"}, duration_ms=1, node_type="start"),
    wf("node_skip", 4, "refund", reason="branch_not_taken", node_type="llm", node_label="Refund"),
    wf("node_start", 5, "answer", node_type="answer", node_label="Answer", is_streaming=True),
    wf("token", 6, "answer", token="Order A-1 "),
    wf("token", 7, "answer", token="has shipped."),
    wf("output", 8, "answer", output="Order A-1 has shipped.", name="answer"),
    wf(
        "node_complete",
        9,
        "answer",
        outputs={"answer": "Order A-1 has shipped."},
        duration_ms=40,
        node_type="answer",
        is_streaming=True,
    ),
    wf("workflow_complete", 10, outputs={"answer": "Order A-1 has shipped."}, duration_ms=52),
]


def test_a_workflow_stream_folds() -> None:
    stream = sse(*WORKFLOW)
    result = run(stream, P, strict=True)
    assert (result.error, result.warnings) == (None, [])
    message = sf.fold([stream], P, strict=True)
    assert (message.text, message.complete, message.finish_reason, message.status) == (
        "Order A-1 has shipped.",
        True,
        "stop",
        "completed",
    )
    assert [(s.name, s.id, s.complete) for s in message.steps] == [
        ("Start", "start", True),
        ("Answer", "answer", True),
    ]
    assert [(n.kind, n.data.get("node_id")) for n in message.notices] == [
        ("node_skip", "refund"),
        ("output", "answer"),
    ]
    assert message.metadata == {"workflow_id": "wf-1", "workflow_name": "Orders", "duration_ms": 52}
    (end,) = result.of(MessageEnd)
    assert end.data == {"outputs": {"answer": "Order A-1 has shipped."}, "duration_ms": 52}
    pipeline = sf.Pipeline(P)
    pipeline.feed(stream)
    assert pipeline.provider.sequence == 10  # resume with from_sequence=10


def test_a_workflow_stream_cut_or_failed() -> None:
    with pytest.raises(sf.IncompleteStreamError) as cut:
        sf.fold([sse(*WORKFLOW[:6])], P)
    assert cut.value.partial is not None
    assert (cut.value.partial.text, cut.value.partial.complete) == ("Order A-1 ", False)
    failed = sse(
        *WORKFLOW[:6],
        wf("node_error", 7, "answer", error="model unavailable"),
        wf("workflow_error", 8, "answer", error="Node answer failed: model unavailable"),
    )
    with pytest.raises(sf.StreamError) as info:
        sf.fold([failed], P)
    error = info.value
    assert (error.code, error.message) == (
        "workflow_error",
        "Node answer failed: model unavailable",
    )
    assert error.partial is not None and error.partial.text == "Order A-1 "
    assert [n.message for n in error.partial.notices] == [None, "model unavailable"]


@pytest.mark.parametrize(
    "error",
    [
        {"message": "timed out after 300 s", "type": "timeout"},
        {"code": 504, "msg": "timed out after 300 s"},
    ],
    ids=["message", "msg"],
)
def test_a_workflow_error_object_gives_its_reason(error: dict[str, Any]) -> None:
    # The error as an object: its message was lost to the placeholder "the workflow run
    # failed" (and the node's notice had none), only .raw held it.
    failed = sse(
        *WORKFLOW[:6],
        wf("node_error", 7, "answer", error=error),
        wf("workflow_error", 8, "answer", error=error),
    )
    with pytest.raises(sf.StreamError) as info:
        sf.fold([failed], P)
    assert (info.value.code, info.value.message) == ("workflow_error", "timed out after 300 s")
    partial = info.value.partial
    assert partial is not None and partial.text == "Order A-1 "
    assert [n.message for n in partial.notices if n.kind == "node_error"] == [
        "timed out after 300 s"
    ]


def test_an_error_event_with_an_error_object_gives_its_reason() -> None:
    stream = sse(
        ("content_delta", {"delta": "x"}),
        ("error", {"error": {"code": "rate_limited", "msg": "slow down"}}),
    )
    with pytest.raises(sf.StreamError) as info:
        sf.fold([stream], P)
    assert info.value.message == "slow down"


@pytest.mark.parametrize("event_lines", [True, False], ids=["event-lines", "data-only"])
def test_a_workflow_stream_is_detected(event_lines: bool) -> None:
    # The event's name is in the envelope's ``event``: a stream without ``event:`` lines is
    # the same stream (provider="clouisle" read it; auto could not tell the provider).
    frames = WORKFLOW if event_lines else [(None, payload) for _, payload in WORKFLOW]
    message = sf.fold([sse(*frames)], "auto", strict=True)
    assert (message.provider, message.text, message.complete) == (
        "clouisle",
        "Order A-1 has shipped.",
        True,
    )
    alone = sf.fold([sse(*frames)], P, strict=True)
    assert (message.blocks, message.steps, message.status) == (
        alone.blocks,
        alone.steps,
        "completed",
    )


@pytest.mark.parametrize("first", ["debug", "token"])
def test_a_resumed_workflow_stream_is_detected_by_its_envelope(first: str) -> None:
    # from_sequence resumes mid-run: the first events may be names other streams use
    # (``debug`` is a Cohere v2 name; ``token``, more than auto waits for, is no provider's).
    if first == "debug":
        opening = [wf("debug", 5, "answer", message="x")]
    else:
        opening = [wf("token", n, "answer", token=f"{n} ") for n in range(1, 21)]
    stream = sse(*opening, *WORKFLOW[6:])
    message = sf.fold([stream], "auto")
    assert (message.provider, message.complete) == ("clouisle", True)
    assert message.text == sf.fold([stream], P).text


WF_KEYS = ["token", "chunk", "error", "outputs", "duration_ms", "node_label", "workflow_id"]


@settings(max_examples=50)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(sorted(WORKFLOW_EVENTS)),
            st.one_of(st.none(), st.text(max_size=3)),
            payloads(CL_TYPES, WF_KEYS),
        ),
        max_size=12,
    ),
    st.booleans(),
)
def test_arbitrary_workflow_events_never_crash(
    frames: list[tuple[str, str | None, dict[str, Any]]], strict: bool
) -> None:
    stream = sse(*(wf(name, n, node, **data) for n, (name, node, data) in enumerate(frames, 1)))
    check_never_crashes(stream, P, strict=strict)


@given(data=st.data(), strict=st.booleans())
def test_mutated_workflow_streams_never_crash(data: st.DataObject, strict: bool) -> None:
    check_never_crashes(data.draw(mutated(sse(*WORKFLOW))), P, strict=strict)


def test_after_message_end_only_a_run_goes_on() -> None:
    # Outside a run, anything but run events after message_end breaks the rule (strict
    # raises); in a run, an error or an unknown event after a round's end is no round and
    # no violation.
    ended = sse(("message_start", {"message_id": "m"}), ("message_end", {}))
    for late in (("node_update", {"x": 1}), ("error", {"code": "c", "msg": "late"})):
        lenient = run(ended + sse(late), P)
        assert [w.split(" (")[0] for w in lenient.warnings] == ["clouisle: event after message_end"]
        assert isinstance(run(ended + sse(late), P, strict=True).error, sf.ProtocolError)
    in_run = sse(*TWO_ROUNDS[:9])
    unknown = run(in_run + sse(scoped("node_update", 10, "rnd-1", "msg-1")), P, strict=True)
    assert (unknown.warnings, [type(e) for e in unknown.events][-1]) == ([], Unknown)
    failed = run(
        in_run + sse(scoped("error", 10, "rnd-1", "msg-1", code="c", msg="x")), P, strict=True
    )
    assert isinstance(failed.error, sf.StreamError) and failed.warnings == []
    assert len(failed.of(MessageStart)) == 1


def test_usage_as_the_platform_reports_it() -> None:
    usage = {
        "prompt_tokens": 120,
        "completion_tokens": 30,
        "total_tokens": 150,
        "cache_read_tokens": 80,
        "cache_creation_tokens": 0,
        "total_input_tokens": 200,
    }
    stream = sse(("content_delta", {"delta": "x"}), ("message_end", {"usage": usage}))
    # Input counts the cached prompt tokens too, as for every provider (Anthropic's are summed):
    # the platform's prompt_tokens and total_tokens leave them out, its total_input_tokens not.
    assert sf.fold([stream], P).usage == sf.Usage(200, 30, 230, cached_tokens=80, raw=usage)
    plain = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    stream = sse(("content_delta", {"delta": "x"}), ("message_end", {"usage": plain}))
    assert sf.fold([stream], P).usage == sf.Usage(12, 3, 15, raw=plain)


def test_the_elapsed_time_as_the_platform_reports_it() -> None:
    # "message_end: Token usage, elapsed time, and termination status": the platform sends
    # the elapsed time in a timing object, with the message's version.
    timing = {"first_token_ms": 310, "duration_ms": 2400, "tokens_per_second": 12.5}
    stream = sse(
        ("message_start", {"conversation_id": "conv-1", "message_id": "m"}),
        ("content_delta", {"delta": "x"}),
        (
            "message_end",
            {
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                "timing": timing,
                "version_number": 1,
                "version_count": 1,
            },
        ),
    )
    assert sf.fold([stream], P).metadata == {
        "conversation_id": "conv-1",
        "timing": timing,
        "version_number": 1,
        "version_count": 1,
    }


def test_output_truncated_then_a_later_turn_in_one_round() -> None:
    # A tool turn hit the output limit; its calls ran and the next model turn answered in
    # full: the truncation does not make the message's finish "length".
    stream = sse(
        ("message_start", {"message_id": "m"}),
        ("reasoning_start", {}),
        ("reasoning_delta", {"delta": "Plan"}),
        ("reasoning_end", {}),
        ("output_truncated", {}),
        ("tool_call", {"tool_call_id": "t1", "tool_name": "search", "arguments": {}}),
        ("tool_result", {"tool_call_id": "t1", "tool_name": "search", "result": "{}"}),
        ("content_delta", {"delta": "Answer."}),
        ("message_end", {"usage": {}}),
    )
    message = sf.fold([stream], P, strict=True)
    assert (message.finish_reason, message.raw_finish_reason) == ("stop", None)
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold([stream[: stream.index(b"event: content_delta")]], P)
    assert info.value.partial is not None
    assert info.value.partial.finish_reason == "length"  # cut before the next turn
    cut = stream[: stream.index(b"event: message_end")]
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold([cut], P)
    assert info.value.partial is not None
    assert info.value.partial.finish_reason is None  # the next turn began
    # Text right after the truncation is the next turn too.
    again = sse(
        ("content_delta", {"delta": "Cut"}),
        ("output_truncated", {}),
        ("reasoning_start", {}),
        ("reasoning_end", {}),
        ("message_end", {}),
    )
    assert sf.fold([again], P).finish_reason == "stop"


def test_workflow_tokens_numbered_by_their_node_are_kept() -> None:
    # The answer node publishes its tokens through a stream manager of its own, whose
    # sequence starts at 1 again: they are no replays, and none may be dropped.
    frames = [
        wf("workflow_start", 1, workflow_id="wf-1", workflow_name="Orders", inputs={}),
        wf("node_start", 2, "answer", node_type="answer", node_label="Answer"),
        wf("token", 1, "answer", token="Order A-1 "),
        wf("token", 2, "answer", token="has shipped."),
        wf("node_complete", 3, "answer", outputs={}, duration_ms=4),
        wf("workflow_complete", 4, outputs={}, duration_ms=5),
    ]
    result = run(sse(*frames), P, strict=True)
    assert (result.error, result.warnings) == (None, [])
    assert sf.fold([sse(*frames)], P, strict=True).text == "Order A-1 has shipped."


@given(
    name=st.sampled_from(["two_rounds", "capped", "resumed"]), data=st.data(), strict=st.booleans()
)
def test_mutated_multi_round_runs_never_crash(name: str, data: st.DataObject, strict: bool) -> None:
    frames = {"two_rounds": TWO_ROUNDS, "capped": CAPPED, "resumed": [*TWO_ROUNDS[:5], *ASKING]}
    check_never_crashes(data.draw(mutated(sse(*frames[name]))), P, strict=strict)


@given(st.lists(st.sampled_from(frame_list(sse(*TWO_ROUNDS, *CAPPED))), max_size=24), st.booleans())
def test_any_order_of_round_frames_never_crashes(frames: list[bytes], strict: bool) -> None:
    check_never_crashes(b"".join(frames), P, strict=strict)


def test_the_envelope_sequence_wins_over_the_event_s_own() -> None:
    # input_accepted's payload numbers the input ("sequence": 1); the event's place in the
    # run is the envelope's sequence. Neither is a replay.
    stream = sse(
        enveloped("run_start", 1, None, {"status": "running", "run_id": "run-123"}),
        enveloped("message_start", 2, "msg-5", {"conversation_id": "c", "message_id": "msg-5"}),
        enveloped("content_delta", 3, "msg-5", {"delta": "Hi"}),
        enveloped("input_accepted", 4, None, {"kind": "steer", "content": "x", "sequence": 1}),
        enveloped("content_delta", 5, "msg-5", {"delta": "!"}),
        enveloped("message_end", 6, None, {"usage": {}}),
        enveloped("run_end", 7, None, {"status": "completed", "message_id": "msg-5"}),
    )
    result = run(stream, P, strict=True)
    assert (result.error, result.warnings) == (None, [])
    assert [n.kind for n in result.of(Notice)] == ["input_accepted"]
    assert sf.fold([stream], P, strict=True).text == "Hi!"


def test_retrieval_reported_again_after_a_resume_is_kept_once() -> None:
    # Each pass of a run (the first, and the one resumed after ask_user) reports its
    # retrieval before message_start: the same sources, kept once.
    contexts = [{"citation_id": "s1", "content": "Sunny."}]
    frames = [
        scoped("run_start", 1, None, None, status="running"),
        scoped("rag_start", 2, None, None),
        scoped("rag_context", 3, None, None, contexts=contexts, query="weather"),
        scoped("message_start", 4, "rnd-1", "msg-7", conversation_id="conv-1"),
        *asked_and_waiting(5),
        scoped("run_start", 7, None, None, status="running"),
        scoped("tool_result", 8, "rnd-1", "msg-7", tool_call_id="call-123", result="Oslo"),
        scoped("rag_start", 9, None, None),
        scoped("rag_context", 10, None, None, contexts=contexts, query="weather"),
        scoped("message_start", 11, "rnd-1", "msg-7", conversation_id="conv-1"),
        scoped("content_delta", 12, "rnd-1", "msg-7", delta="Sunny [[cite:s1]]."),
        scoped("message_end", 13, "rnd-1", "msg-7", usage={}),
        scoped("run_end", 14, "rnd-1", "msg-7", status="completed"),
    ]
    message = sf.fold([sse(*frames)], P, strict=True)
    assert (message.sources, message.warnings) == (contexts, [])
    # Other sources are added; an empty retrieval stays [] rather than None.
    more = [{"citation_id": "s2"}]
    other = [*frames[:9], scoped("rag_context", 10, None, None, contexts=more), *frames[10:]]
    assert sf.fold([sse(*other)], P).sources == [*contexts, *more]


@pytest.mark.parametrize("kind", [["content_delta"], {"a": 1}])
@pytest.mark.parametrize("provider", ["clouisle", "auto"])
def test_an_unnamed_frame_whose_type_is_a_list_or_object_is_unknown(
    kind: Any, provider: ProviderName
) -> None:
    """A frame without an ``event:`` line names its event in ``type``; a list or an object
    there raised ``TypeError: unhashable type`` out of ``fold`` (also under
    ``provider="anthropic"``, whose failed stream ``auto`` reads for a hint). Now it is an
    ``Unknown`` event, as in the other providers, and the stream folds on."""
    body = sse(
        ("message_start", {"message_id": "m"}),
        (None, {"type": kind, "delta": "x"}),
        ("content_delta", {"delta": "Hi"}),
        ("message_end", {"status": "completed"}),
    )
    message = sf.fold([body], provider=provider)
    assert (message.text, message.complete) == ("Hi", True)
    unknown = [e for e in sf.events([body], provider=provider) if isinstance(e, Unknown)]
    assert [e.event_type for e in unknown] == ["message"]
    with pytest.raises(sf.StreamfoldError) as info:
        sf.fold([body], provider="anthropic")
    assert info.value.partial is not None


def test_a_run_message_end_in_a_resumed_workflow_stream_is_not_its_end() -> None:
    """A workflow stream read from past its start (``workflow_start`` announces the run) and
    an agent ``message_end`` of the run (``run_id`` set): the provider rightly did not take it
    for the stream's end, so ``events`` raised IncompleteStreamError where the stream stops,
    but ``fold`` returned the message complete, since no RunStatus told it of a run. Now
    both report the cut; the workflow's own end still completes the message."""
    head = [
        wf("node_start", 5, "answer", node_type="answer", node_label="Answer"),
        wf("token", 6, "answer", token="Order A-1 "),
        run_event("message_end", 7, message_id="m", usage={"prompt_tokens": 3}),
    ]
    cut = sse(*head)
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold([cut], provider=P)
    assert info.value.partial is not None
    assert info.value.partial.text == "Order A-1 "
    with pytest.raises(sf.IncompleteStreamError):
        list(sf.events([cut], provider=P))
    whole = sse(*head, wf("workflow_complete", 8, outputs={"answer": "Order A-1"}))
    message = sf.fold([whole], provider=P)
    assert (message.text, message.complete, message.status) == ("Order A-1 ", True, "completed")
    assert [type(e).__name__ for e in sf.events([whole], provider=P)][-1] == "RunStatus"


def run_status_after_workflow_complete() -> bytes:
    return sse(
        wf("workflow_start", 1, workflow_id="wf-1"),
        wf("token", 2, "answer", token="Done."),
        wf("workflow_complete", 3, outputs={"answer": "Done."}),
        run_event("run_status", 4, status="waiting"),
    )


def test_a_run_status_after_workflow_complete_does_not_undecide_the_stream() -> None:
    """``workflow_complete`` ends the workflow run (a terminal RunStatus, which the fold keeps).
    A ``run_status`` after it made the provider take the stream for undecided again, so
    ``events`` raised IncompleteStreamError at the end while ``fold`` returned the message
    complete. Now the end stands for both, and what came after is recorded."""
    body = run_status_after_workflow_complete()
    message = sf.fold([body], provider=P)
    assert (message.text, message.complete) == ("Done.", True)
    events = list(sf.events([body], provider=P))
    assert [e.terminal for e in events if isinstance(e, RunStatus)] == [False, True, False]


def test_a_run_status_after_workflow_complete_is_recorded() -> None:
    """The message stays complete, but the status it reads ("waiting") is one the finished
    workflow cannot have: a warning said nothing of it (strict: nothing raised)."""
    body = run_status_after_workflow_complete()
    message = sf.fold([body], provider=P)
    assert message.complete
    assert [w for w in message.warnings if "run_status after workflow_complete" in w] != []
    with pytest.raises(sf.ProtocolError, match="run_status after workflow_complete") as info:
        sf.fold([body], provider=P, strict=True)
    assert info.value.partial is not None and info.value.partial.text == "Done."
    # A status a finished run has is no news.
    ended = body.replace(b'"status": "waiting"', b'"status": "completed"')
    assert ended != body
    assert sf.fold([ended], provider=P, strict=True).warnings == []
    # Nor is a status that is no string a crash (unhashable: no lookup among the final ones).
    odd = body.replace(b'"status": "waiting"', b'"status": ["waiting"]')
    assert odd != body
    assert len(sf.fold([odd], provider=P).warnings) == 1
