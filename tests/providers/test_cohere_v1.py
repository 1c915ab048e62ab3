"""Cohere Chat v1 (JSON lines): hand-written streams from the seed and WIRE_FORMATS.md §2, and
every capture."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfold as sf
from conftest import CAPTURES, expected_for, requires_captures
from streamfold._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    MessageEnd,
    MessageStart,
    Notice,
    SourcesAdded,
    Unknown,
    UsageUpdate,
)
from streamfold._providers.cohere_v1 import FINISH_REASONS
from streamfold._types import ProviderName

from .sse_helpers import (
    bytewise,
    check_never_crashes,
    frames_of,
    jsonl,
    mutated,
    payloads,
    reference_fold,
    run,
    split,
)

P: ProviderName = "cohere-v1"
CAPTURE_FILES = sorted((CAPTURES / "cohere_v1").glob("*.sse")) if CAPTURES.is_dir() else []

META = {
    "api_version": {"version": "1"},
    "billed_units": {"input_tokens": 7, "output_tokens": 5},
    "tokens": {"input_tokens": 69, "output_tokens": 6},
}


def ev(event_type: str, **fields: Any) -> dict[str, Any]:
    return {"is_finished": event_type == "stream-end", "event_type": event_type, **fields}


def stream_end(reason: str = "COMPLETE", **response: Any) -> dict[str, Any]:
    return ev("stream-end", finish_reason=reason, response={"meta": META, **response})


def chunk(**delta: Any) -> dict[str, Any]:
    return ev("tool-calls-chunk", tool_call_delta=delta)


START = ev("stream-start", generation_id="gen-1")

GROUNDED = jsonl(
    START,
    ev("search-queries-generation", search_queries=[{"text": "magic 3", "generation_id": "g"}]),
    ev(
        "search-results",
        search_results=[{"search_query": {"text": "magic 3"}, "document_ids": ["d1"]}],
        documents=[{"id": "d1", "output": "5"}],
    ),
    ev("text-generation", text="It is "),
    ev("text-generation", text="5."),
    ev(
        "citation-generation",
        citations=[{"start": 6, "end": 7, "text": "5", "document_ids": ["d1"]}],
    ),
    stream_end(text="It is 5."),
)

#: Plan chunks, then two calls whose argument fragments interleave by index.
TOOLS = jsonl(
    START,
    ev("tool-calls-chunk", text="I will"),
    ev("tool-calls-chunk", text=" look."),
    chunk(index=0, name="get_time"),
    chunk(index=1, name="get_weather"),
    chunk(index=0, parameters='{"city": '),
    chunk(index=1, parameters='{"city": "Oslo"}'),
    chunk(index=0, parameters='"Tokyo"}'),
    ev(
        "tool-calls-generation",
        text="I will look.",
        tool_calls=[
            {"name": "get_time", "parameters": {"city": "Tokyo"}},
            {"name": "get_weather", "parameters": {"city": "Oslo"}},
        ],
    ),
    stream_end(text="I will look.", tool_calls=[{"name": "get_time", "parameters": {}}]),
)

ERROR = jsonl(START, ev("text-generation", text="Hal"), stream_end("ERROR", text="Hal"))

WEATHER = {"text": "weather paris", "generation_id": "g1"}
HUMIDITY = {"text": "paris humidity", "generation_id": "g1"}
FORECAST = {"text": "paris forecast"}

#: A connector search: every query is in ``search-queries-generation`` and again in each
#: ``search-results`` entry for it (one per connector); ``paris humidity`` found nothing, so
#: only the generation names it, and ``paris forecast`` only a result (without its
#: generation_id).
CONNECTOR = jsonl(
    ev("stream-start", generation_id="g1"),
    ev("search-queries-generation", search_queries=[WEATHER, HUMIDITY]),
    ev(
        "search-results",
        search_results=[
            {"search_query": WEATHER, "connector": {"id": "web-search"}, "document_ids": ["d1"]},
            {"search_query": WEATHER, "connector": {"id": "news"}, "document_ids": ["d2"]},
            {"search_query": FORECAST, "connector": {"id": "web-search"}, "document_ids": ["d3"]},
        ],
        documents=[{"id": "d1", "snippet": "Sunny"}, {"id": "d2"}, {"id": "d3"}],
    ),
    ev("text-generation", text="It is sunny."),
    stream_end(text="It is sunny."),
)

STREAMS = {"grounded": GROUNDED, "tools": TOOLS, "error": ERROR, "connector": CONNECTOR}


def test_response_id_is_in_the_message_metadata() -> None:
    # stream-end.response.response_id names the response (the message id is the
    # generation_id of stream-start, as before).
    stream = jsonl(
        START,
        ev("text-generation", text="Hi"),
        stream_end(text="Hi", generation_id="gen-1", response_id="resp-9"),
    )
    message = sf.fold([stream], provider=P)
    assert (message.id, message.metadata) == ("gen-1", {"response_id": "resp-9"})
    assert message.to_request() == {"role": "CHATBOT", "message": "Hi"}


def test_grounded_answer() -> None:
    result = run(GROUNDED, P, strict=True)
    assert result.error is None
    assert result.events[0] == MessageStart(id="gen-1")
    (queries,) = [n for n in result.of(Notice) if n.kind == "search_queries"]
    assert queries.data == [{"text": "magic 3", "generation_id": "g"}]
    (sources,) = result.of(SourcesAdded)
    assert sources.sources == [{"id": "d1", "output": "5"}]
    assert sources.queries == [{"text": "magic 3"}]
    folded = reference_fold(result.events)
    assert [(b.kind, b.text, b.closed) for b in folded.blocks.values()] == [
        ("text", "It is 5.", True)
    ]
    (cite,) = folded.citations
    assert (cite.start, cite.end, cite.text, cite.sources, cite.block) == (6, 7, "5", ["d1"], 0)
    assert "It is 5."[cite.start : cite.end] == cite.text
    assert folded.usage == sf.Usage(69, 6, 75, raw=META)
    assert (folded.finish_reason, folded.raw_finish_reason) == ("stop", "COMPLETE")


def test_grounded_query_is_listed_once() -> None:
    # The generation's query has a generation_id, the result's the same text without one.
    assert sf.fold([GROUNDED], provider=P).search_queries == [
        {"text": "magic 3", "generation_id": "g"}
    ]


def test_connector_queries_are_listed_once_and_none_is_lost() -> None:
    message = sf.fold([CONNECTOR], provider=P)
    assert message.search_queries == [WEATHER, HUMIDITY, FORECAST]
    assert [d["id"] for d in message.sources or []] == ["d1", "d2", "d3"]


@given(data=st.data())
def test_connector_queries_are_listed_once_in_any_chunking(data: st.DataObject) -> None:
    cuts = data.draw(st.lists(st.integers(0, len(CONNECTOR)), max_size=40))
    message = sf.fold(split(CONNECTOR, cuts), provider=P)
    assert message.search_queries == [WEATHER, HUMIDITY, FORECAST]


def test_stream_end_queries_already_reported_by_the_results_are_not_repeated() -> None:
    # No search-queries-generation: the results name the query, then the stream-end response.
    stream = jsonl(
        START,
        ev("search-results", search_results=[{"search_query": WEATHER}], documents=[]),
        stream_end(text="Hi.", search_queries=[WEATHER, HUMIDITY]),
    )
    assert sf.fold([stream], provider=P).search_queries == [WEATHER, HUMIDITY]


def test_every_event_keeps_its_line_as_raw() -> None:
    lines = [json.loads(line) for line in GROUNDED.splitlines()]
    for event in run(GROUNDED, P).events:
        assert event.raw in lines


def test_tool_calls_stream_by_index_and_are_not_duplicated() -> None:
    result = run(TOOLS, P, strict=True)
    assert result.error is None
    folded = reference_fold(result.events)
    assert [(b.kind, b.id) for b in folded.blocks.values()] == [
        ("tool_plan", None),
        ("tool_call", None),
        ("tool_call", None),
    ]
    assert folded.blocks[0].text == "I will look."
    time, weather = folded.of_kind("tool_call")
    assert (time.name, time.arguments()) == ("get_time", {"city": "Tokyo"})
    assert (weather.name, weather.arguments()) == ("get_weather", {"city": "Oslo"})
    assert all(b.closed for b in folded.blocks.values())
    # tool-calls-generation closes the streamed calls: it adds none of its own.
    generation = json.loads(TOOLS.splitlines()[-2])
    assert [type(e) for e in result.events if e.raw == generation] == [BlockEnd, BlockEnd]


def test_whole_calls_not_streamed_come_from_tool_calls_generation() -> None:
    stream = jsonl(
        START,
        ev(
            "tool-calls-generation",
            text="Plan.",
            tool_calls=[{"name": "f", "parameters": {"a": 1}}],
        ),
        stream_end(text="Plan."),
    )
    result = run(stream, P, strict=True)
    folded = reference_fold(result.events)
    assert [(b.kind, b.text) for b in folded.of_kind("tool_plan")] == [("tool_plan", "Plan.")]
    (call,) = folded.of_kind("tool_call")
    assert (call.whole, call.name, call.arguments(), call.closed) == (True, "f", {"a": 1}, True)


def test_arguments_missing_from_the_chunks_come_from_the_generation() -> None:
    stream = jsonl(
        START,
        chunk(index=0, name="f"),
        ev("tool-calls-generation", tool_calls=[{"name": "f", "parameters": {"a": 1}}]),
        stream_end(),
    )
    (call,) = reference_fold(run(stream, P, strict=True).events).of_kind("tool_call")
    assert (call.whole, call.arguments()) == (False, {"a": 1})


def test_lazy_stream_folds_from_the_stream_end_response() -> None:
    stream = jsonl(
        START,
        stream_end(
            text="Hi.",
            citations=[{"start": 0, "end": 2, "text": "Hi", "document_ids": ["x"]}],
            documents=[{"id": "x"}],
            search_queries=[{"text": "q"}],
        ),
    )
    result = run(stream, P, strict=True)
    folded = reference_fold(result.events)
    assert folded.texts("text") == ["Hi."]
    assert [(c.text, c.block) for c in folded.citations] == [("Hi", 0)]
    assert result.of(SourcesAdded)[0].sources == [{"id": "x"}]
    assert [n.data for n in result.of(Notice)] == [[{"text": "q"}]]
    tools = jsonl(START, stream_end(text="Plan.", tool_calls=[{"name": "f", "parameters": None}]))
    folded = reference_fold(run(tools, P, strict=True).events)
    assert folded.texts("tool_plan") == ["Plan."]
    assert [(b.name, b.arguments()) for b in folded.of_kind("tool_call")] == [("f", {})]


@pytest.mark.parametrize(
    ("stream", "needle"),
    [
        (
            jsonl(START, ev("text-generation", text="a"), stream_end(text="b")),
            "response.text differs from the streamed text",
        ),
        (
            jsonl(
                START,
                chunk(index=0, name="f"),
                chunk(index=0, parameters='{"a": 2}'),
                ev("tool-calls-generation", tool_calls=[{"name": "f", "parameters": {"a": 1}}]),
                stream_end(),
            ),
            "parameters differ",
        ),
        (
            jsonl(
                START,
                chunk(index=0, name="g"),
                ev("tool-calls-generation", tool_calls=[{"name": "f", "parameters": {}}]),
                stream_end(),
            ),
            "named 'f' but streamed as 'g'",
        ),
        (
            jsonl(
                START,
                ev("tool-calls-chunk", text="Plan"),
                ev("tool-calls-generation", text="Other", tool_calls=[]),
                stream_end(),
            ),
            "tool plan differs",
        ),
        (jsonl(START, stream_end(), ev("text-generation", text="late")), "after stream-end"),
        (jsonl(ev("text-generation", text="x"), stream_end()), "does not begin with stream-start"),
    ],
)
def test_disagreements_warn_by_default_and_raise_when_strict(stream: bytes, needle: str) -> None:
    lenient = run(stream, P)
    assert lenient.error is None
    assert len(lenient.warnings) == 1
    assert needle in lenient.warnings[0]
    strict = run(stream, P, strict=True)
    assert isinstance(strict.error, sf.ProtocolError)
    assert needle in str(strict.error)
    assert strict.error.provider == P


def test_error_finish_raises_after_the_events_before_it() -> None:
    result = run(ERROR, P)
    assert isinstance(result.error, sf.StreamError)
    assert (result.error.code, result.error.provider, result.error.position) == ("ERROR", P, 2)
    assert [type(e) for e in result.events] == [
        MessageStart,
        BlockStart,
        BlockDelta,
        BlockEnd,
        UsageUpdate,
    ]


@pytest.mark.parametrize(("raw", "normalized"), sorted(FINISH_REASONS.items()))
def test_finish_reasons(raw: str, normalized: str) -> None:
    result = run(jsonl(START, stream_end(raw)), P)
    if raw == "ERROR":
        assert isinstance(result.error, sf.StreamError)
        return
    (ended,) = result.of(MessageEnd)
    assert (ended.finish_reason, ended.raw_finish_reason) == (normalized, raw)


def test_finish_reason_falls_back_to_the_response() -> None:
    end = ev("stream-end", response={"finish_reason": "MAX_TOKENS", "meta": META})
    (ended,) = run(jsonl(START, end), P).of(MessageEnd)
    assert (ended.finish_reason, ended.raw_finish_reason) == ("length", "MAX_TOKENS")


def test_debug_and_unknown_events() -> None:
    stream = jsonl(START, ev("debug", prompt="<p>"), ev("novel-event", x=1), stream_end())
    result = run(stream, P, strict=True)
    assert [(n.kind, n.data) for n in result.of(Notice)] == [("debug", "<p>")]
    assert [(u.event_type, u.raw) for u in result.of(Unknown)] == [
        ("novel-event", ev("novel-event", x=1))
    ]


@pytest.mark.parametrize(
    ("stream", "needle"),
    [
        (b'{"event_type": "stream-start"}\n[1, 2]\n', "not an object"),
        (b'{"event_type": "stream-start"}\n{"event_type": "text-generation"}\n', "malformed"),
        (jsonl(START, ev("text-generation", text=3)), "text is int"),
        (b'{"event_type": "stream-start"}\n{not json}\n', ""),
    ],
)
def test_protocol_errors(stream: bytes, needle: str) -> None:
    result = run(stream, P)
    assert isinstance(result.error, sf.ProtocolError)
    assert needle in str(result.error)
    assert result.error.provider == P


# -- captures ---------------------------------------------------------------------------------


@requires_captures
@pytest.mark.parametrize("path", CAPTURE_FILES, ids=lambda p: p.stem)
def test_capture_matches_its_expected_fold(path: Path) -> None:
    expected = expected_for(path)
    message = expected["message"]
    result = run(path.read_bytes(), P, strict=True)
    assert result.error is None
    folded = reference_fold(result.events)
    assert not folded.unknown
    assert result.events[0] == MessageStart(id=expected["generation_id"])
    blocks = [b for b in folded.blocks.values() if b.kind != "tool_plan"]
    assert len(blocks) == len(message["blocks"])
    for got, want in zip(blocks, message["blocks"], strict=True):
        if want["type"] == "tool_call":
            assert (got.kind, got.id, got.name) == ("tool_call", None, want["name"])
            assert got.text == want["arguments_raw"]
            assert got.arguments() == want["arguments"]
        else:
            assert (got.kind, got.text) == ("text", want["text"])
        assert got.closed
    assert "".join(folded.texts("tool_plan")) == (message["tool_plan"] or "")
    assert [(c.start, c.end, c.text, c.sources) for c in folded.citations] == [
        (c["start"], c["end"], c["text"], c["document_ids"]) for c in message["citations"]
    ]
    sources = result.of(SourcesAdded)
    assert [s.sources for s in sources] == (
        [] if expected["documents"] is None else [expected["documents"]]
    )
    assert folded.raw_finish_reason == message["finish_reason"]
    assert folded.usage is not None
    assert folded.usage.raw["billed_units"] == expected["usage"]["billed_units"]
    tokens = expected["usage"]["tokens"]
    assert (folded.usage.input_tokens, folded.usage.output_tokens) == (
        tokens["input_tokens"],
        tokens["output_tokens"],
    )


@requires_captures
@pytest.mark.parametrize("path", CAPTURE_FILES, ids=lambda p: p.stem)
def test_capture_is_chunking_invariant_down_to_single_bytes(path: Path) -> None:
    data = path.read_bytes()
    assert run(bytewise(data), P).outcome() == run(data, P).outcome()


@given(name=st.sampled_from(sorted(STREAMS)), data=st.data())
def test_hand_written_streams_are_chunking_invariant(name: str, data: st.DataObject) -> None:
    stream = STREAMS[name]
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=40))
    assert run(split(stream, cuts), P).outcome() == run(stream, P).outcome()


@requires_captures
@given(data=st.data())
def test_captures_are_chunking_invariant(data: st.DataObject) -> None:
    stream = data.draw(st.sampled_from(CAPTURE_FILES)).read_bytes()
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=60))
    assert run(split(stream, cuts), P).outcome() == run(stream, P).outcome()


async def _chunks(data: bytes, size: int = 5) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


@pytest.mark.anyio
async def test_aevents_matches_events(anyio_backend: str) -> None:
    got = [e async for e in sf.aevents(_chunks(TOOLS), P)]
    assert got == run(TOOLS, P).events
    collected: list[Any] = []
    with pytest.raises(sf.StreamError):
        async for event in sf.aevents(_chunks(ERROR), P):
            collected.append(event)
    assert collected == run(ERROR, P).events


# -- robustness -------------------------------------------------------------------------------

V1_KEYS = [
    "event_type", "generation_id", "search_queries", "search_results", "search_query",
    "documents", "document_ids", "text", "citations", "start", "end", "tool_call_delta", "index",
    "name", "parameters", "tool_calls", "finish_reason", "response", "meta", "tokens",
    "input_tokens", "output_tokens", "prompt", "id",
]  # fmt: skip
V1_TYPES = [
    "stream-start", "search-queries-generation", "search-results", "text-generation",
    "citation-generation", "tool-calls-chunk", "tool-calls-generation", "stream-end", "debug",
    "novel",
]  # fmt: skip


@settings(max_examples=50)
@given(st.lists(payloads(V1_TYPES, V1_KEYS, type_key="event_type"), max_size=12), st.booleans())
def test_arbitrary_payloads_never_crash(frames: list[dict[str, Any]], strict: bool) -> None:
    check_never_crashes(jsonl(START, *frames), P, strict=strict)


POOL = frames_of(
    GROUNDED,
    TOOLS,
    ERROR,
    without=(
        b"stream-start",
        b"stream-end",
    ),
)


@given(st.lists(st.sampled_from(POOL), max_size=24), st.booleans())
def test_any_order_of_valid_frames_never_crashes(frames: list[bytes], strict: bool) -> None:
    check_never_crashes(jsonl(START) + b"".join(frames), P, strict=strict)


@given(name=st.sampled_from(sorted(STREAMS)), data=st.data(), strict=st.booleans())
def test_mutated_streams_never_crash(name: str, data: st.DataObject, strict: bool) -> None:
    check_never_crashes(data.draw(mutated(STREAMS[name])), P, strict=strict)


def test_a_lone_surrogate_escape_in_a_line_does_not_end_the_stream() -> None:
    halves = ["Hi \ud83d", "\ude00!"]  # an emoji cut between its UTF-16 halves
    stream = jsonl(START, *(ev("text-generation", text=t) for t in halves), stream_end())
    for pieces in ([stream], bytewise(stream)):
        result = run(pieces, P)
        assert result.error is None
        assert [e.text for e in result.of(BlockDelta)] == halves


@pytest.mark.parametrize(
    ("top", "inner", "normalized", "raw"),
    [
        # The top level has only COMPLETE, ERROR_LIMIT, MAX_TOKENS, ERROR, ERROR_TOXIC; the
        # response's own finish_reason is the wider FinishReason, and says more.
        ("COMPLETE", "STOP_SEQUENCE", "stop", "STOP_SEQUENCE"),
        ("COMPLETE", "USER_CANCEL", "other", "USER_CANCEL"),
        ("COMPLETE", "TIMEOUT", "error", "TIMEOUT"),
        ("MAX_TOKENS", "MAX_TOKENS", "length", "MAX_TOKENS"),
        ("ERROR_LIMIT", "ERROR_LIMIT", "length", "ERROR_LIMIT"),
        ("ERROR_TOXIC", "ERROR_TOXIC", "content_filter", "ERROR_TOXIC"),
        ("COMPLETE", "MAX_TOKENS", "length", "MAX_TOKENS"),
        # A value nobody documents does not hide the top-level one.
        ("COMPLETE", "SOMETHING_NEW", "stop", "COMPLETE"),
        ("COMPLETE", None, "stop", "COMPLETE"),
        (None, "SOMETHING_NEW", "other", "SOMETHING_NEW"),
    ],
)
def test_the_response_finish_reason_is_read_when_it_says_more(
    top: str | None, inner: str | None, normalized: str, raw: str
) -> None:
    response: dict[str, Any] = {"text": "Hal", "meta": META}
    if inner is not None:
        response["finish_reason"] = inner
    end = ev("stream-end", response=response)
    if top is not None:
        end["finish_reason"] = top
    stream = jsonl(START, ev("text-generation", text="Hal"), end)
    (ended,) = run(stream, P).of(MessageEnd)
    assert (ended.finish_reason, ended.raw_finish_reason) == (normalized, raw)
    folded = sf.fold([stream], provider=P)
    assert (folded.finish_reason, folded.raw_finish_reason) == (normalized, raw)


def test_an_error_finish_at_the_top_raises_with_the_response_reason() -> None:
    end = ev("stream-end", finish_reason="ERROR", response={"finish_reason": "TIMEOUT"})
    stream = jsonl(START, ev("text-generation", text="Hal"), end)
    with pytest.raises(sf.StreamError, match=r"ERROR \(response\.finish_reason TIMEOUT\)") as info:
        sf.fold([stream], provider=P)
    assert (info.value.code, info.value.raw_finish_reason) == ("ERROR", "TIMEOUT")
    assert info.value.partial is not None
    assert info.value.partial.text == "Hal"
    assert info.value.partial.raw_finish_reason == "TIMEOUT"


# -- streams from before meta.tokens: response.token_count -------------------------------------

OLD_META = {
    "api_version": {"version": "1"},
    "billed_units": {"input_tokens": 7, "output_tokens": 5},
}
TOKEN_COUNT = {"prompt_tokens": 69, "response_tokens": 6, "total_tokens": 75, "billed_tokens": 12}


def old_stream(**response: Any) -> bytes:
    end = ev("stream-end", finish_reason="COMPLETE", response={"text": "Hi", **response})
    return jsonl(START, ev("text-generation", text="Hi"), end)


def test_token_count_is_the_usage_when_meta_has_no_tokens() -> None:
    message = sf.fold([old_stream(meta=OLD_META, token_count=TOKEN_COUNT)], provider=P)
    usage = message.usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (69, 6, 75)
    assert usage.raw == {**OLD_META, "token_count": TOKEN_COUNT}  # billed_units kept, not read


def test_token_count_without_meta_and_without_a_total() -> None:
    counts = {"prompt_tokens": 3, "response_tokens": 2}
    usage = sf.fold([old_stream(token_count=counts)], provider=P).usage
    assert usage == sf.Usage(3, 2, 5, raw=counts)


def test_meta_tokens_win_over_token_count() -> None:
    usage = sf.fold([old_stream(meta=META, token_count=TOKEN_COUNT)], provider=P).usage
    assert usage == sf.Usage(69, 6, 75, raw=META)


def test_billed_units_alone_are_never_counted() -> None:
    usage = sf.fold([old_stream(meta=OLD_META)], provider=P).usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (None, None, None)
