"""Events and messages as JSON dicts (docs/json.md): event.to_dict() / sf.event_from_dict and
message.to_dict() / sf.Message.from_dict round trip exactly, through json.dumps, for every
event class and for the message of every capture and example stream."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

import streamfold as sf
from stream_cases import CASES, Case
from streamfold._events import EVENT_CLASSES
from streamfold._jsonform import VERSION
from streamfold._message import Message

SSE = sf.ServerSentEvent("content-delta", '{"x": 1}', "4", 100)

#: One event of every class, with its fields set away from their defaults.
SAMPLES: list[sf.Event] = [
    sf.Event(raw=SSE),
    sf.MessageStart(id="m1", model="x", choice=1, metadata={"run_id": "r"}, continued=True),
    sf.BlockStart(
        index=2,
        kind="tool_call",
        id="c",
        name="f",
        arguments={"a": [1, 2.5, None, True]},
        complete=True,
        data={"d": 1},
        text="t",
        extra={"thoughtSignature": "sig"},
        raw=SSE,
    ),
    sf.BlockDelta(index=0, kind="text", text="héllo\n😀", choice=2, logprobs=[{"t": -0.5}]),
    sf.SignatureDelta(index=1, signature="abc", choice=0),
    sf.BlockEnd(index=3, kind="reasoning", data={"summary": []}),
    sf.CitationAdded(
        citation=sf.Citation(
            start=1, end=5, text="abcd", sources=[{"id": 1}], block=0, raw={"r": 1}
        )
    ),
    sf.UsageUpdate(usage=sf.Usage(1, 2, 3, 4, 5, raw={"prompt_tokens": 1})),
    sf.MessageDelta(
        finish_reason="length", raw_finish_reason="max_tokens", data={"s": 1}, metadata={"m": 2}
    ),
    sf.MessageEnd(
        finish_reason="stop",
        raw_finish_reason="end_turn",
        choice=1,
        data=[1],
        metadata={"k": "v"},
        tools_run_by_platform=True,
    ),
    sf.StepStart(name="search", id="s1"),
    sf.StepEnd(name=None, id="s1"),
    sf.ToolResultAdded(result=sf.ToolResult("c", {"out": 1}, True, "f", raw={"x": 1})),
    sf.SourcesAdded(sources=[{"url": "u"}], queries=["q"]),
    sf.MediaAdded(media={"type": "image", "url": "u"}),
    sf.RunStatus(
        status="waiting",
        run_id="r",
        sequence=3,
        terminal=False,
        pending_tool_call_id="p",
        pending_tool_name="ask_user",
        pending_tool_input={"q": "?"},
    ),
    sf.Notice(kind="warning", message="m", data={"d": None}, raw={"line": 1}),
    sf.Unknown(event_type="mystery", raw=SSE),
]


def through_json(d: dict[str, Any]) -> Any:
    return json.loads(json.dumps(d))


def test_the_samples_cover_every_event_class() -> None:
    assert {type(e) for e in SAMPLES} == set(EVENT_CLASSES)
    assert {e.type for e in SAMPLES} == {cls.type for cls in EVENT_CLASSES}


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.type)
def test_every_event_class_round_trips(event: sf.Event) -> None:
    d = event.to_dict()
    assert d["type"] == event.type
    assert d["v"] == VERSION
    assert "raw" not in d
    back = sf.event_from_dict(through_json(d))
    assert type(back) is type(event)
    assert back == event
    assert back.raw is None
    # With raw=True the frame comes back too.
    full = sf.event_from_dict(through_json(event.to_dict(raw=True)))
    assert full == event
    assert full.raw == event.raw


def test_a_frame_that_is_a_json_line_round_trips() -> None:
    event = sf.MessageStart(id="g", raw={"event_type": "stream-start", "generation_id": "g"})
    back = sf.event_from_dict(through_json(event.to_dict(raw=True)))
    assert back.raw == event.raw


def events_of(case: Case) -> list[sf.Event]:
    out: list[sf.Event] = []
    try:
        for event in sf.events([case.body], provider=case.provider):
            out.append(event)
    except sf.StreamfoldError:
        pass
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_event_of_every_stream_round_trips(case: Case) -> None:
    for event in events_of(case):
        d = through_json(event.to_dict(raw=True))
        back = sf.event_from_dict(d)
        assert back == event
        assert back.raw == event.raw


def without_frames(m: Message) -> Message:
    """``m`` with the frames ``to_dict()`` leaves out (``Step.raw``) set to ``None``."""

    def strip(step: sf.Step) -> sf.Step:
        return dataclasses.replace(step, raw=None, children=[strip(c) for c in step.children])

    return dataclasses.replace(m, steps=[strip(s) for s in m.steps])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_the_message_of_every_stream_round_trips(case: Case) -> None:
    message, _ = case.fold()
    full = Message.from_dict(through_json(message.to_dict(raw=True)))
    assert full == message
    assert full.choices == message.choices
    assert full.choices[message.choice] is full
    for got, want in zip(full.notices, message.notices, strict=True):
        assert got.raw == want.raw
    assert [s.raw for s in full.steps] == [s.raw for s in message.steps]
    # Without raw, everything but the frames comes back.
    d = message.to_dict()
    assert Message.from_dict(through_json(d)) == without_frames(message)
    # A block's call is the message's call, as in a folded message.
    for block, was in zip(full.blocks, message.blocks, strict=True):
        shared = any(was.tool_call is c for c in message.tool_calls)
        assert any(block.tool_call is c for c in full.tool_calls) == shared


def test_several_choices_come_back_as_choices() -> None:
    found = [c for c in CASES if c.id == "openai_chat/n3_choices"]
    if not found:
        pytest.skip("../shared/captures is not present beside the project")
    case = found[0]
    message, _ = case.fold()
    assert len(message.choices) == 3
    d = through_json(message.to_dict())
    assert [c["choice"] for c in d["choices"]] == [0, 1, 2]
    back = Message.from_dict(d)
    assert [c.text for c in back.choices] == [c.text for c in message.choices]
    assert all(c.choices is back.choices for c in back.choices)


@pytest.mark.parametrize(
    ("d", "error", "match"),
    [
        ({"type": "nope", "v": 1}, ValueError, "unknown event type"),
        ({"type": "block_delta", "v": 2}, ValueError, "version 2"),
        ({"v": 1}, ValueError, "without a 'type'"),
        ({"type": "block_delta", "v": 1, "index": 0}, ValueError, "block_delta"),
        ([], TypeError, "expected a dict"),
    ],
)
def test_what_is_not_an_event_dict_is_refused(d: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        sf.event_from_dict(d)


def test_unknown_keys_are_ignored() -> None:
    d = {"type": "block_delta", "v": 1, "index": 0, "kind": "text", "text": "x", "later": 1}
    assert sf.event_from_dict(d) == sf.BlockDelta(index=0, kind="text", text="x")


def test_a_message_dict_must_be_a_message() -> None:
    with pytest.raises(ValueError, match="not a message"):
        Message.from_dict({"type": "block_delta", "v": 1})
