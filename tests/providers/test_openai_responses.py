"""OpenAI Responses (``provider="openai-responses"``): captures, hand-written streams, rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import streamfold as sf
from streamfold._engine.pipeline import Pipeline
from streamfold._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    CitationAdded,
    MessageEnd,
    MessageStart,
    Notice,
    SignatureDelta,
    UsageUpdate,
)
from streamfold._types import ProviderName

from .helpers import accumulate, captures, check_capture, run, split_at, sse
from .helpers import expected as expected_fold
from .test_chunk_template import responses_alike

P: ProviderName = "openai-responses"
CAPTURES = captures("openai_responses")
requires_captures = pytest.mark.skipif(not CAPTURES, reason="../shared/captures is absent")

USAGE = {
    "input_tokens": 20,
    "input_tokens_details": {"cached_tokens": 4},
    "output_tokens": 9,
    "output_tokens_details": {"reasoning_tokens": 3},
    "total_tokens": 29,
}


class Seq:
    """Builds events, numbering them when ``numbered`` (2025-H2 streams) and not otherwise."""

    def __init__(self, numbered: bool = True) -> None:
        self.numbered = numbered
        self.n = 0

    def __call__(self, name: str, **payload: Any) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {"type": name, **payload}
        if self.numbered:
            body["sequence_number"] = self.n
            self.n += 1
        return (name, body)


def response(status: str = "in_progress", **extra: Any) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "model": "gpt-x",
        "status": status,
        "output": [],
        "usage": None,
        **extra,
    }


def text_stream(
    e: Seq, *deltas: str, terminal: str = "response.completed", **terminal_response: Any
) -> bytes:
    status = {"response.completed": "completed", "response.incomplete": "incomplete"}[terminal]
    return sse(
        e("response.created", response=response()),
        e("response.in_progress", response=response()),
        e(
            "response.output_item.added",
            output_index=0,
            item={
                "type": "message",
                "id": "msg_1",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            },
        ),
        e(
            "response.content_part.added",
            item_id="msg_1",
            output_index=0,
            content_index=0,
            part={"type": "output_text", "text": "", "annotations": []},
        ),
        *(
            e(
                "response.output_text.delta",
                item_id="msg_1",
                output_index=0,
                content_index=0,
                delta=d,
                logprobs=[],
            )
            for d in deltas
        ),
        e(
            "response.output_text.done",
            item_id="msg_1",
            output_index=0,
            content_index=0,
            text="".join(deltas),
        ),
        e(
            "response.content_part.done",
            item_id="msg_1",
            output_index=0,
            content_index=0,
            part={"type": "output_text", "text": "".join(deltas)},
        ),
        e(
            "response.output_item.done",
            output_index=0,
            item={"type": "message", "id": "msg_1", "status": "completed"},
        ),
        e(terminal, response=response(status, usage=USAGE, **terminal_response)),
    )


BASIC = text_stream(Seq(), "The capital", " is Paris.")


# -- captures ---------------------------------------------------------------------------------


@requires_captures
@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_capture_matches_expected(path: Path) -> None:
    check_capture(path, P)


STREAMS = [p.read_bytes() for p in CAPTURES] + [BASIC]


@given(st.data())
def test_chunking_invariance(data: st.DataObject) -> None:
    stream = data.draw(st.sampled_from(STREAMS))
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=60))
    whole = run(stream, P)
    split = run(split_at(stream, cuts), P)
    assert split.events == whole.events
    assert repr(split.error) == repr(whole.error)


@requires_captures
@pytest.mark.parametrize(
    "path", [p for p in CAPTURES if p.stat().st_size < 20_000], ids=lambda p: p.stem
)
def test_capture_single_byte_reads(path: Path) -> None:
    data = path.read_bytes()
    pieces = run([data[i : i + 1] for i in range(len(data))], P)
    whole = run(data, P)
    assert pieces.events == whole.events
    assert repr(pieces.error) == repr(whole.error)


# -- hand-written streams ---------------------------------------------------------------------


@pytest.mark.parametrize("numbered", [True, False], ids=["sequence_number", "none"])
def test_text_stream_with_or_without_sequence_numbers(numbered: bool) -> None:
    stream = text_stream(Seq(numbered), "The capital", " is Paris.")
    pipeline = Pipeline(P)
    events = pipeline.feed(stream) + pipeline.close()
    assert pipeline.provider.sequence == (9 if numbered else None)
    assert pipeline.provider.terminal_seen
    folded = accumulate(events)
    blocks = folded.choice(0).ordered()
    assert [(b.kind, b.text, b.ended) for b in blocks] == [("text", "The capital is Paris.", True)]
    assert blocks[0].extra == {"item_id": "msg_1"}
    start = next(e for e in events if isinstance(e, MessageStart))
    assert (start.id, start.model) == ("resp_1", "gpt-x")
    end = next(e for e in events if isinstance(e, MessageEnd))
    assert (end.finish_reason, end.raw_finish_reason) == ("stop", "completed")
    usage = folded.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (20, 9, 29)
    assert (usage.cached_tokens, usage.reasoning_tokens) == (4, 3)
    assert not [e for e in events if isinstance(e, Notice)]


def test_incomplete_max_output_tokens_is_length() -> None:
    stream = text_stream(
        Seq(),
        "Par",
        terminal="response.incomplete",
        incomplete_details={"reason": "max_output_tokens"},
    )
    end = run(stream, P).of(MessageEnd)[0]
    assert (end.finish_reason, end.raw_finish_reason) == ("length", "max_output_tokens")


def test_incomplete_content_filter() -> None:
    stream = text_stream(
        Seq(), "x", terminal="response.incomplete", incomplete_details={"reason": "content_filter"}
    )
    assert run(stream, P).of(MessageEnd)[0].finish_reason == "content_filter"


#: A value for each ``RESPONSE_METADATA`` field, as the final response sends it.
RESPONSE_FIELDS: dict[str, Any] = {
    "created_at": 1764500140,
    "completed_at": 1764500142,
    "service_tier": "default",
    "conversation": {"id": "conv_1"},
    "moderation": {"input": {"type": "error", "code": "x", "message": "y"}, "output": None},
    "tool_usage": {"web_search": {"num_requests": 2}},
    "prompt_cache_diagnostics": {"type": "cache_hit", "comparison_reusable_tokens": 9},
}


@pytest.mark.parametrize("key", sorted(RESPONSE_FIELDS))
def test_final_response_fields_are_in_the_message_metadata(key: str) -> None:
    # As the SDK's final Response has them; the request's settings it echoes are not kept.
    stream = text_stream(Seq(), "Hi", **{key: RESPONSE_FIELDS[key]}, temperature=1.0)
    message = sf.fold([stream], provider=P)
    assert message.metadata == {key: RESPONSE_FIELDS[key]}
    assert message.to_request() == sf.fold([text_stream(Seq(), "Hi")], provider=P).to_request()


def test_created_response_fields_are_kept_and_the_final_ones_replace_them() -> None:
    # response.created echoes the requested tier ("auto"); the final response names the one
    # that served it. A stream cut after response.created keeps what it said.
    e = Seq()
    created = e("response.created", response=response(created_at=7, service_tier="auto"))
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold([sse(created)], provider=P)
    assert info.value.partial is not None
    assert info.value.partial.metadata == {"created_at": 7, "service_tier": "auto"}
    stream = sse(
        created,
        e("response.completed", response=response("completed", service_tier="default")),
    )
    message = sf.fold([stream], provider=P)
    assert message.metadata == {"created_at": 7, "service_tier": "default"}


def test_function_call_uses_call_id_and_keeps_the_item_id() -> None:
    e = Seq(numbered=False)
    item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "get_capital",
        "arguments": "",
        "status": "in_progress",
    }
    stream = sse(
        e("response.created", response=response()),
        e("response.output_item.added", output_index=0, item=item),
        e("response.function_call_arguments.delta", item_id="fc_1", output_index=0, delta='{"c'),
        e(
            "response.function_call_arguments.delta",
            item_id="fc_1",
            output_index=0,
            delta='ountry":"France"}',
        ),
        e(
            "response.function_call_arguments.done",
            item_id="fc_1",
            output_index=0,
            arguments='{"country":"France"}',
        ),
        e(
            "response.output_item.done",
            output_index=0,
            item={**item, "arguments": '{"country":"France"}', "status": "completed"},
        ),
        e("response.completed", response=response("completed", usage=USAGE)),
    )
    result = run(stream, P, strict=True)
    assert result.error is None
    block = accumulate(result.events).choice(0).ordered()[0]
    assert (block.kind, block.id, block.name, block.text) == (
        "tool_call",
        "call_1",
        "get_capital",
        '{"country":"France"}',
    )
    assert block.extra == {"item_id": "fc_1"}
    assert block.data["status"] == "completed"  # the final item rides on the BlockEnd


def test_reasoning_summary_parts_and_encrypted_content() -> None:
    e = Seq()
    item = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "enc0"}
    stream = sse(
        e("response.created", response=response()),
        e("response.output_item.added", output_index=0, item=item),
        e(
            "response.reasoning_summary_part.added",
            item_id="rs_1",
            output_index=0,
            summary_index=0,
            part={"type": "summary_text", "text": ""},
        ),
        e(
            "response.reasoning_summary_text.delta",
            item_id="rs_1",
            output_index=0,
            summary_index=0,
            delta="**One**",
        ),
        e(
            "response.reasoning_summary_part.done",
            item_id="rs_1",
            output_index=0,
            summary_index=0,
            part={"type": "summary_text", "text": "**One**"},
        ),
        e(
            "response.reasoning_summary_part.added",
            item_id="rs_1",
            output_index=0,
            summary_index=1,
            part={"type": "summary_text", "text": ""},
        ),
        e(
            "response.reasoning_summary_text.delta",
            item_id="rs_1",
            output_index=0,
            summary_index=1,
            delta="**Two**",
        ),
        e(
            "response.output_item.done",
            output_index=0,
            item={
                **item,
                "encrypted_content": "enc1",
                "summary": [{"type": "summary_text", "text": "**One**"}],
            },
        ),
        e("response.completed", response=response("completed", usage=USAGE)),
    )
    result = run(stream, P)
    assert [s.signature for s in result.of(SignatureDelta)] == ["enc0", "enc1"]
    block = accumulate(result.events).choice(0).ordered()[0]
    assert (block.kind, block.text, block.signature) == ("reasoning", "**One**\n\n**Two**", "enc1")
    assert block.extra == {"item_id": "rs_1"}


def test_refusal_part() -> None:
    e = Seq()
    stream = sse(
        e("response.created", response=response()),
        e(
            "response.output_item.added",
            output_index=0,
            item={"type": "message", "id": "msg_1", "content": []},
        ),
        e(
            "response.content_part.added",
            item_id="msg_1",
            output_index=0,
            content_index=0,
            part={"type": "refusal", "refusal": ""},
        ),
        e(
            "response.refusal.delta",
            item_id="msg_1",
            output_index=0,
            content_index=0,
            delta="I can't",
        ),
        e(
            "response.refusal.done",
            item_id="msg_1",
            output_index=0,
            content_index=0,
            refusal="I can't",
        ),
        e(
            "response.content_part.done",
            item_id="msg_1",
            output_index=0,
            content_index=0,
            part={"type": "refusal", "refusal": "I can't"},
        ),
        e("response.output_item.done", output_index=0, item={"type": "message", "id": "msg_1"}),
        e("response.completed", response=response("completed")),
    )
    blocks = accumulate(run(stream, P).events).choice(0).ordered()
    assert [(b.kind, b.text) for b in blocks] == [("refusal", "I can't")]
    message = sf.fold([stream], provider=P)
    assert (message.refusal, message.finish_reason) == ("I can't", "refusal")
    assert message.raw_finish_reason == "completed"


def test_annotations_are_code_point_citations_and_tools_report_progress() -> None:
    e = Seq()
    annotation = {
        "type": "url_citation",
        "start_index": 4,
        "end_index": 9,
        "url": "https://a",
        "title": "A — b",
    }
    call = {"type": "web_search_call", "id": "ws_1", "status": "in_progress"}
    stream = sse(
        e("response.created", response=response()),
        e("response.output_item.added", output_index=0, item=call),
        e("response.web_search_call.in_progress", output_index=0, item_id="ws_1"),
        e("response.web_search_call.searching", output_index=0, item_id="ws_1"),
        e("response.web_search_call.completed", output_index=0, item_id="ws_1"),
        e(
            "response.output_item.done",
            output_index=0,
            item={**call, "status": "completed", "action": {"query": "q"}},
        ),
        e(
            "response.output_item.added",
            output_index=1,
            item={"type": "message", "id": "msg_1", "content": []},
        ),
        e(
            "response.content_part.added",
            item_id="msg_1",
            output_index=1,
            content_index=0,
            part={"type": "output_text", "text": ""},
        ),
        e(
            "response.output_text.delta",
            item_id="msg_1",
            output_index=1,
            content_index=0,
            delta="Caf\u00e9\u2019s news",
        ),
        e(
            "response.output_text.annotation.added",
            item_id="msg_1",
            output_index=1,
            content_index=0,
            annotation_index=0,
            annotation=annotation,
        ),
        e("response.content_part.done", item_id="msg_1", output_index=1, content_index=0),
        e("response.output_item.done", output_index=1, item={"type": "message", "id": "msg_1"}),
        e("response.completed", response=response("completed")),
    )
    result = run(stream, P, strict=True)
    assert result.error is None
    progress = [n.message for n in result.of(Notice) if n.kind == "tool_progress"]
    assert progress == [
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
    ]
    tool, text = accumulate(result.events).choice(0).ordered()
    assert (tool.kind, tool.name, tool.data["action"]) == (
        "server_tool",
        "web_search_call",
        {"query": "q"},
    )
    citation = result.of(CitationAdded)[0].citation
    assert (citation.start, citation.end, citation.block, citation.sources) == (
        4,
        9,
        text.index,
        [annotation],
    )
    assert text.text[citation.start : citation.end] == "\u2019s ne"  # code points


@pytest.mark.parametrize(
    "payload",
    [
        {"type": "error", "code": "server_error", "message": "boom", "param": None},
        {
            "type": "error",
            "error": {
                "type": "server_error",
                "code": "server_error",
                "message": "boom",
                "param": None,
            },
        },
    ],
    ids=["flat", "nested"],
)
def test_error_event_in_both_shapes(payload: dict[str, Any]) -> None:
    stream = text_stream(Seq(numbered=False), "half")
    stream = stream[: stream.index(b"event: response.output_text.done")] + sse(("error", payload))
    seen = []
    with pytest.raises(sf.StreamError) as info:
        for event in sf.events([stream], provider=P):
            seen.append(event)
    assert (info.value.code, info.value.message) == ("server_error", "boom")
    assert [e.text for e in seen if isinstance(e, BlockDelta)] == ["half"]
    assert info.value.retryable_without_duplicate is False


def test_failed_response_raises_with_its_error() -> None:
    e = Seq()
    stream = sse(
        e("response.created", response=response()),
        e(
            "response.failed",
            response=response(
                "failed", error={"code": "rate_limit_exceeded", "message": "slow down"}
            ),
        ),
    )
    result = run(stream, P)
    assert isinstance(result.error, sf.StreamError)
    assert (result.error.code, result.error.message) == ("rate_limit_exceeded", "slow down")
    assert result.error.retryable_without_duplicate is True
    assert result.of(MessageEnd) == []


def test_unknown_event_is_unknown() -> None:
    e = Seq(numbered=False)
    stream = sse(
        e("response.created", response=response()),
        e("response.brand_new", x=1),
        e("response.completed", response=response("completed")),
    )
    assert run(stream, P).unknown == ["response.brand_new"]


def test_delta_for_an_item_never_added_is_a_protocol_error() -> None:
    e = Seq()
    stream = sse(
        e("response.created", response=response()),
        e("response.output_text.delta", item_id="m", output_index=3, content_index=0, delta="x"),
    )
    result = run(stream, P)
    assert isinstance(result.error, sf.ProtocolError)
    assert (result.error.provider, result.error.event, result.error.position) == (
        P,
        "response.output_text.delta",
        1,
    )


def test_non_json_payload_is_a_protocol_error() -> None:
    result = run(sse(("response.created", "nope")), P)
    assert isinstance(result.error, sf.ProtocolError)
    assert result.error.event == "response.created" and result.error.position == 0


AFTER_TERMINAL = BASIC + sse(("response.in_progress", {"type": "response.in_progress"}))
BACKWARDS = BASIC.replace(b'"sequence_number": 8', b'"sequence_number": 3')
_E = Seq(numbered=False)
_MSG = {"type": "message", "id": "m", "role": "assistant", "content": []}
#: A content part added after its item was done: the terminal event closes no such part.
UNCLOSED = sse(
    _E("response.created", response=response()),
    _E("response.output_item.added", output_index=0, item=_MSG),
    _E("response.output_item.done", output_index=0, item=_MSG),
    _E(
        "response.content_part.added",
        item_id="m",
        output_index=0,
        content_index=0,
        part={"type": "output_text", "text": "late"},
    ),
    _E("response.completed", response=response("completed")),
)


@pytest.mark.parametrize(
    ("stream", "rule"),
    [
        (AFTER_TERMINAL, "after the terminal event"),
        (BACKWARDS, "sequence_number 3 after 7"),
        (UNCLOSED, "never closed"),
    ],
)
def test_ordering_rules_warn_by_default_and_raise_when_strict(stream: bytes, rule: str) -> None:
    lenient = run(stream, P)
    assert lenient.error is None
    assert len(lenient.warnings) == 1 and rule in lenient.warnings[0]
    strict = run(stream, P, strict=True)
    assert isinstance(strict.error, sf.ProtocolError) and rule in str(strict.error)


def test_events_keep_their_frame() -> None:
    result = run(BASIC, P)
    assert all(isinstance(e.raw, sf.ServerSentEvent) for e in result.events)
    assert [type(e) for e in result.events].count(BlockStart) == 1
    assert [type(e) for e in result.events].count(BlockEnd) == 1
    assert len(result.of(UsageUpdate)) == 1


@pytest.mark.anyio
async def test_aevents_under_asyncio_and_trio(anyio_backend: str) -> None:
    async def reads() -> Any:
        for i in range(0, len(BASIC), 13):
            yield BASIC[i : i + 13]

    events = [e async for e in sf.aevents(reads(), provider=P)]
    assert events == run(BASIC, P).events


# -- text sent only in the closing events ------------------------------------------------------

MESSAGE = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
CALL = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}


def done_only_stream(
    text: str, arguments: str, carriers: set[str], *, deltas: bool = False
) -> bytes:
    """A message part and a function call whose text comes only from the closing events in
    ``carriers`` (``done``: ``output_text.done``/``function_call_arguments.done``; ``part``:
    ``content_part.done``; ``item``: ``output_item.done``), or also as deltas."""
    e = Seq()
    at = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    frames = [
        e("response.created", response=response()),
        e("response.output_item.added", output_index=0, item=MESSAGE),
        e("response.content_part.added", **at, part={"type": "output_text", "text": ""}),
    ]
    if deltas:
        frames.append(e("response.output_text.delta", **at, delta=text, logprobs=[]))
    if "done" in carriers:
        frames.append(e("response.output_text.done", **at, text=text))
    part = {"type": "output_text", "text": text if "part" in carriers else ""}
    frames.append(e("response.content_part.done", **at, part=part))
    content = [{"type": "output_text", "text": text}] if "item" in carriers else []
    frames.append(
        e("response.output_item.done", output_index=0, item={**MESSAGE, "content": content})
    )
    frames.append(e("response.output_item.added", output_index=1, item=CALL))
    if deltas:
        frames.append(e("response.function_call_arguments.delta", output_index=1, delta=arguments))
    if "done" in carriers:
        frames.append(
            e("response.function_call_arguments.done", output_index=1, arguments=arguments)
        )
    final = {**CALL, "arguments": arguments if "item" in carriers else ""}
    frames.append(e("response.output_item.done", output_index=1, item=final))
    frames.append(e("response.completed", response=response("completed", usage=USAGE)))
    return sse(*frames)


@pytest.mark.parametrize(
    "carriers", [{"done"}, {"part"}, {"item"}, {"done", "part", "item"}], ids=sorted
)
def test_text_and_arguments_sent_only_in_the_closing_events(carriers: set[str]) -> None:
    # A server may stream nothing and send the whole text in the closing events: the message
    # must not fold to an empty answer (the arguments ride only on `.done` and the item).
    message = sf.fold([done_only_stream("Full text", '{"city": "Paris"}', carriers)], P)
    assert message.complete and message.warnings == []
    assert message.text == ("Full text" if carriers & {"done", "part", "item"} else "")
    expected = {"city": "Paris"} if carriers & {"done", "item"} else {}
    assert message.tool_calls[0].arguments == expected


@given(
    st.text(min_size=1, max_size=20),
    st.sets(st.sampled_from(["done", "part", "item"])),
    st.booleans(),
    st.data(),
)
def test_closing_events_never_repeat_text_the_deltas_gave(
    text: str, carriers: set[str], deltas: bool, data: st.DataObject
) -> None:
    json_text = '{"q": ' + json.dumps(text) + "}"
    body = done_only_stream(text, json_text, carriers, deltas=deltas)
    message = sf.fold(split_at(body, data.draw(st.lists(st.integers(0, len(body))))), P)
    has_text = deltas or bool(carriers)
    assert message.text == (text if has_text else "")
    has_arguments = deltas or bool(carriers & {"done", "item"})
    assert message.tool_calls[0].arguments_json == (json_text if has_arguments else "")


def test_a_delta_after_its_part_closed_empty_is_still_late() -> None:
    # A part closed with no text stays open for its item's text, but not for deltas.
    e = Seq()
    at = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    body = sse(
        e("response.created", response=response()),
        e("response.output_item.added", output_index=0, item=MESSAGE),
        e("response.content_part.added", **at, part={"type": "output_text", "text": ""}),
        e("response.content_part.done", **at, part={"type": "output_text", "text": ""}),
        e("response.output_text.delta", **at, delta="late", logprobs=[]),
        e("response.output_item.done", output_index=0, item=MESSAGE),
        e("response.completed", response=response("completed", usage=USAGE)),
    )
    message = sf.fold([body], P)
    assert message.text == ""
    assert any("after its end" in w for w in message.warnings)
    with pytest.raises(sf.ProtocolError, match="after its end"):
        sf.fold([body], P, strict=True)


# -- reasoning text sent only in the closing events -------------------------------------------

REASONING = {"type": "reasoning", "id": "rs_1", "summary": []}

#: One reasoning part: its deltas (none: the text comes only from ``carriers``, if any) and
#: the closing events that carry its whole text (``done``: ``reasoning_summary_text.done`` /
#: ``reasoning_text.done``; ``part``: ``reasoning_summary_part.done`` / ``content_part.done``;
#: ``item``: the entry in ``output_item.done``'s ``summary`` / ``content`` list).
Part = tuple[list[str], str, set[str]]


def reasoning_stream(parts: list[Part], *, raw: bool = False, item_done: bool = True) -> bytes:
    """A reasoning item (output 0) made of ``parts`` (summary parts; raw reasoning-text content
    parts when ``raw``), then a message (output 1) answering "Answer." by deltas."""
    e = Seq()
    number = "content_index" if raw else "summary_index"
    frames = [
        e("response.created", response=response()),
        e("response.output_item.added", output_index=0, item=REASONING),
    ]
    for index, (deltas, text, carriers) in enumerate(parts):
        at = {"item_id": "rs_1", "output_index": 0, number: index}
        kind = "reasoning_text" if raw else "summary_text"
        added = "response.content_part.added" if raw else "response.reasoning_summary_part.added"
        frames.append(e(added, **at, part={"type": kind, "text": ""}))
        delta = "response.reasoning_text.delta" if raw else "response.reasoning_summary_text.delta"
        frames += [e(delta, **at, delta=d) for d in deltas]
        if "done" in carriers:
            done = "response.reasoning_text.done" if raw else "response.reasoning_summary_text.done"
            frames.append(e(done, **at, text=text))
        part_done = "response.content_part.done" if raw else "response.reasoning_summary_part.done"
        part = {"type": kind, "text": text if "part" in carriers else ""}
        frames.append(e(part_done, **at, part=part))
    listed = [
        {"type": "reasoning_text" if raw else "summary_text", "text": t if "item" in c else ""}
        for _, t, c in parts
    ]
    final = {**REASONING, ("content" if raw else "summary"): listed}
    if item_done:
        frames.append(e("response.output_item.done", output_index=0, item=final))
    at = {"item_id": "msg_1", "output_index": 1, "content_index": 0}
    frames += [
        e("response.output_item.added", output_index=1, item=MESSAGE),
        e("response.content_part.added", **at, part={"type": "output_text", "text": ""}),
        e("response.output_text.delta", **at, delta="Answer.", logprobs=[]),
        e("response.content_part.done", **at, part={"type": "output_text", "text": "Answer."}),
        e("response.output_item.done", output_index=1, item=MESSAGE),
        e("response.completed", response=response("completed", usage=USAGE)),
    ]
    return sse(*frames)


def expected_reasoning(parts: list[Part], *, raw: bool = False) -> str:
    """Each part's text once when its deltas or any carrier gave it, in order, joined as the
    delta path joins parts: summary parts by a blank line, raw text parts by nothing."""
    texts = ["".join(d) if d else (t if c else "") for d, t, c in parts]
    return ("" if raw else "\n\n").join(texts)


def reasoning_of_events(body: bytes | list[bytes]) -> str:
    """The reasoning block's text as the events deliver it, in their order."""
    blocks = accumulate(run(body, P, strict=True).events).choice(0).ordered()
    return next(b.text for b in blocks if b.kind == "reasoning")


CARRIER_SETS = [{"done"}, {"part"}, {"item"}, {"done", "part", "item"}]


@pytest.mark.parametrize("raw", [False, True], ids=["summary", "reasoning_text"])
@pytest.mark.parametrize("carriers", CARRIER_SETS, ids="+".join)
def test_reasoning_parts_sent_only_in_the_closing_events(carriers: set[str], raw: bool) -> None:
    # A server that streams no reasoning deltas must not fold to an empty reasoning block: each
    # part takes its whole text from whichever carrier comes first, once.
    parts: list[Part] = [([], "**One**", carriers), ([], "**Two**", carriers)]
    body = reasoning_stream(parts, raw=raw)
    message = sf.fold([body], P, strict=True)
    want = "**One**\n\n**Two**" if not raw else "**One****Two**"
    assert message.complete and message.warnings == []
    assert (message.reasoning, message.text) == (want, "Answer.")
    assert reasoning_of_events(body) == want


@pytest.mark.parametrize("raw", [False, True], ids=["summary", "reasoning_text"])
@pytest.mark.parametrize("carriers", CARRIER_SETS, ids="+".join)
def test_reasoning_closing_events_add_nothing_after_deltas(carriers: set[str], raw: bool) -> None:
    parts: list[Part] = [(["**On", "e**"], "**One**", carriers), (["**Two**"], "**Two**", carriers)]
    body = reasoning_stream(parts, raw=raw)
    want = "**One**\n\n**Two**" if not raw else "**One****Two**"
    assert sf.fold([body], P, strict=True).reasoning == want
    assert reasoning_of_events(body) == want


def test_reasoning_parts_mixed_keep_their_order() -> None:
    # Part 0's text comes only with the item, after parts 1 and 2 began: their text (deltas,
    # a `.done`) is held back until then so that it lands after part 0's; part 3 has no text
    # anywhere (an empty paragraph, as the delta path would make it).
    parts: list[Part] = [
        ([], "zero", {"item"}),
        (["on", "e"], "one", {"done", "part", "item"}),
        ([], "two", {"part"}),
        ([], "three", set()),
        (["fo", "ur"], "four", set()),
    ]
    body = reasoning_stream(parts)
    assert expected_reasoning(parts) == "zero\n\none\n\ntwo\n\n\n\nfour"
    assert sf.fold([body], P, strict=True).reasoning == expected_reasoning(parts)
    assert reasoning_of_events(body) == expected_reasoning(parts)
    # Nothing of parts 1-4 went out before part 0's text arrived with the item.
    events = run(body, P).events
    first = next(e for e in events if isinstance(e, BlockDelta) and e.kind == "reasoning")
    assert first.text == "zero" and first.raw.event == "response.output_item.done"


def test_held_reasoning_goes_out_at_the_terminal_event_without_its_item() -> None:
    # No output_item.done for the reasoning item: the waiting part stays empty and what was
    # held goes out at the terminal event, which closes the item's block.
    parts: list[Part] = [([], "zero", {"item"}), (["one"], "one", set())]
    body = reasoning_stream(parts, item_done=False)
    message = sf.fold([body], P, strict=True)
    assert message.reasoning == "\n\none"
    assert message.warnings == []
    events = run(body, P).events
    assert isinstance(events[-1], MessageEnd)  # released before the end, not after it
    assert accumulate(events).choice(0).ordered()[0].text == "\n\none"


def test_held_reasoning_joins_the_partial_message_when_the_stream_breaks() -> None:
    parts: list[Part] = [([], "zero", {"item"}), (["one"], "one", set())]
    body = reasoning_stream(parts)
    cut = body[: body.index(b"event: response.output_item.done")]
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold([cut], P)
    assert info.value.partial is not None
    assert info.value.partial.reasoning == "\n\none"


def test_reasoning_parts_announced_only_by_their_item() -> None:
    # No summary_part.added at all: the item's summary list is every part, in order.
    e = Seq()
    summary = [{"type": "summary_text", "text": t} for t in ("A", "B")]
    body = sse(
        e("response.created", response=response()),
        e("response.output_item.added", output_index=0, item=REASONING),
        e("response.output_item.done", output_index=0, item={**REASONING, "summary": summary}),
        e("response.completed", response=response("completed", usage=USAGE)),
    )
    assert sf.fold([body], P, strict=True).reasoning == "A\n\nB"


def test_reasoning_capture_parts_join_as_before() -> None:
    # The delta path is unchanged: every capture part arrives by deltas, the carriers add
    # nothing, and the parts are joined by a blank line (as the expected fold says).
    path = next((p for p in CAPTURES if p.stem == "reasoning_summary"), None)
    if path is None:
        pytest.skip("../shared/captures is absent")
    parts = expected_fold(path)["message"]["blocks"][0]["summary_parts"]
    assert sf.fold([path.read_bytes()], P).reasoning == "\n\n".join(parts)


#: A part: no deltas half the time (then its text comes only from its carriers, if any).
PART = st.tuples(
    st.one_of(st.just([]), st.lists(st.text(min_size=1, max_size=4), min_size=1, max_size=10)),
    st.text(min_size=1, max_size=12),
    st.sets(st.sampled_from(["done", "part", "item"])),
)


@given(st.lists(PART, min_size=1, max_size=4), st.booleans(), st.data())
def test_reasoning_parts_any_carriers_any_chunks(
    drawn: list[Part], raw: bool, data: st.DataObject
) -> None:
    # Any texts, any subset of carriers per part, deltas or none per part (a part with deltas
    # has their text in its carriers too), the bytes cut anywhere: each part's text once, in
    # order; the templated reading gives the events of a parse of every payload.
    parts: list[Part] = [(d, "".join(d) if d else t, c) for d, t, c in drawn]
    body = reasoning_stream(parts, raw=raw)
    chunks = split_at(body, data.draw(st.lists(st.integers(0, len(body)), max_size=30)))
    message = sf.fold(chunks, P, strict=True)
    assert message.reasoning == expected_reasoning(parts, raw=raw)
    assert message.text == "Answer."
    assert reasoning_of_events(chunks) == expected_reasoning(parts, raw=raw)
    responses_alike(chunks)


@given(st.lists(st.integers(0, 4000), max_size=30))
def test_logprobs_fold_onto_the_text_block(cuts: list[int]) -> None:
    # ``output_text.delta.logprobs`` (token entries) are concatenated on the text block
    # (``Block.extra["logprobs"]``), after enough plain deltas for a template to be learned:
    # a scored delta never takes the fold's direct text path, which would lose them.
    words = [f"w{k}" for k in range(8)] + ["Foo", "!", "plain", " end"]
    scored = {"Foo": ["Foo"], "!": ["!"], " end": [" e", "nd"]}
    frames = []
    for raw in text_stream(Seq(), *words).decode().split("\n\n"):
        frame = raw
        head, _, payload = raw.rpartition("data: ")
        if payload:
            body = json.loads(payload)
            tokens = scored.get(body.get("delta"), [])
            if body["type"] == "response.output_text.delta" and tokens:
                body["logprobs"] = [
                    {"token": t, "logprob": -0.5, "top_logprobs": []} for t in tokens
                ]
            frame = head + "data: " + json.dumps(body)
        frames.append(frame)
    data = "\n\n".join(frames).encode()
    for pieces in ([data], split_at(data, cuts)):
        message = sf.fold(pieces, provider=P, strict=True)
        assert message.text == "".join(words)
        (block,) = message.blocks
        assert [t["token"] for t in block.extra["logprobs"]] == ["Foo", "!", " e", "nd"]


def test_held_reasoning_keeps_its_logprobs() -> None:
    # Raw reasoning-text deltas (open models) carry logprobs. Part 1's deltas are held back
    # while part 0 waits for its text from the item; released, they keep their logprobs.
    parts: list[Part] = [([], "zero", {"item"}), (["on", "e"], "one", set())]
    frames = reasoning_stream(parts, raw=True).decode().split("\n\n")
    for position, raw in enumerate(frames):
        head, _, payload = raw.rpartition("data: ")
        if payload and json.loads(payload)["type"] == "response.reasoning_text.delta":
            body = json.loads(payload)
            body["logprobs"] = [{"token": body["delta"], "logprob": -0.25, "top_logprobs": []}]
            frames[position] = head + "data: " + json.dumps(body)
    message = sf.fold(["\n\n".join(frames).encode()], P, strict=True)
    assert message.reasoning == "zeroone"
    block = next(b for b in message.blocks if b.kind == "reasoning")
    assert [t["token"] for t in block.extra["logprobs"]] == ["on", "e"]


def phased_message(e: Seq, at: int, phase: str, text: str) -> list[tuple[str, dict[str, Any]]]:
    item = {"type": "message", "id": f"msg_{at}", "role": "assistant", "phase": phase}
    where = {"item_id": f"msg_{at}", "output_index": at, "content_index": 0}
    return [
        e("response.output_item.added", output_index=at, item={**item, "content": []}),
        e("response.content_part.added", **where, part={"type": "output_text", "text": ""}),
        e("response.output_text.delta", **where, delta=text),
        e("response.output_item.done", output_index=at, item={**item, "status": "completed"}),
    ]


def test_message_phase_is_sent_back_with_each_message() -> None:
    # openai-python ResponseOutputMessage.phase: "For models like gpt-5.3-codex and beyond,
    # when sending follow-up requests, preserve and resend phase on all assistant messages".
    e = Seq()
    stream = sse(
        e("response.created", response=response()),
        *phased_message(e, 0, "commentary", "Looking at the files."),
        *phased_message(e, 1, "final_answer", "Done."),
        e("response.completed", response=response("completed", usage=USAGE)),
    )
    message = sf.fold([stream], provider="openai-responses", strict=True)
    assert [b.extra.get("phase") for b in message.blocks] == ["commentary", "final_answer"]
    items = message.to_request()
    assert [(i["id"], i["phase"], i["content"][0]["text"]) for i in items] == [
        ("msg_0", "commentary", "Looking at the files."),
        ("msg_1", "final_answer", "Done."),
    ]
    assert "phase" not in sf.fold([BASIC], provider="openai-responses").to_request()[0]


# -- items that get no output_item.done (mcp_list_tools) --------------------------------------

MCP_TOOLS = {
    "type": "mcp_list_tools",
    "id": "mcpl_1",
    "server_label": "deepwiki",
    "tools": [],
}
MCP_LISTED = {**MCP_TOOLS, "tools": [{"name": "ask_question", "input_schema": {}}]}


def mcp_stream(*, output: bool = True, call: bool = False) -> bytes:
    """An MCP tool listing (output 0) whose item gets no ``output_item.done``, as OpenAI
    sends it, then the answer (output 1); with ``call``, a function call (output 2) that is
    never done either, its arguments only in the final ``response.output``."""
    e = Seq()
    function = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f"}
    final = [MCP_LISTED, {**MESSAGE_DONE}] + ([{**function, "arguments": '{"a": 1}'}] * call)
    frames = [
        e("response.created", response=response()),
        e("response.output_item.added", output_index=0, item=MCP_TOOLS),
        e("response.mcp_list_tools.in_progress", item_id="mcpl_1", output_index=0),
        e("response.mcp_list_tools.completed", item_id="mcpl_1", output_index=0),
        *answer_frames(e, 1),
    ]
    if call:
        frames.append(
            e("response.output_item.added", output_index=2, item={**function, "arguments": ""})
        )
    frames.append(
        e("response.completed", response=response("completed", output=final if output else []))
    )
    return sse(*frames)


MESSAGE_DONE = {
    "type": "message",
    "id": "msg_1",
    "status": "completed",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
}


def answer_frames(e: Seq, index: int) -> list[tuple[str, dict[str, Any]]]:
    at = {"item_id": "msg_1", "output_index": index, "content_index": 0}
    return [
        e("response.output_item.added", output_index=index, item={**MESSAGE_DONE, "content": []}),
        e("response.content_part.added", **at, part={"type": "output_text", "text": ""}),
        e("response.output_text.delta", **at, delta="Done.", logprobs=[]),
        e("response.content_part.done", **at, part={"type": "output_text", "text": "Done."}),
        e("response.output_item.done", output_index=index, item=MESSAGE_DONE),
    ]


@pytest.mark.parametrize("output", [True, False], ids=["final-output", "no-output"])
def test_completed_closes_items_never_done_and_strict_accepts_it(output: bool) -> None:
    stream = mcp_stream(output=output)
    message = sf.fold([stream], P, strict=True)
    assert message.complete and message.finish_reason == "stop"
    assert message.text == "Done."
    assert message.warnings == []
    ends = [e for e in run(stream, P).events if isinstance(e, BlockEnd)]
    listing = next(e for e in ends if e.kind == "server_tool")
    # The final form of the item, where the finished response gives it.
    assert listing.data == (MCP_LISTED if output else None)
    assert isinstance(run(stream, P).events[-1], MessageEnd)


def test_completed_gives_a_call_never_done_its_final_arguments() -> None:
    message = sf.fold([mcp_stream(call=True)], P, strict=True)
    assert [(c.id, c.name, c.arguments, c.complete) for c in message.tool_calls] == [
        ("call_1", "f", {"a": 1}, True)
    ]


def test_incomplete_response_leaves_items_never_done_open() -> None:
    # Cut by the token limit: what was not done stays incomplete, as before.
    stream = mcp_stream(call=True).replace(
        b'"status": "completed", "output"', b'"status": "incomplete", "output"'
    )
    stream = stream.replace(b"event: response.completed", b"event: response.incomplete")
    stream = stream.replace(b'"type": "response.completed"', b'"type": "response.incomplete"')
    message = sf.fold([stream], P)
    assert message.finish_reason == "other"
    assert [c.complete for c in message.tool_calls] == [False]
