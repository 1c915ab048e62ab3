"""``provider="auto"``: detection on every capture and hand-written stream, hand-over, errors."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfold as sf
from conftest import CAPTURE_PROVIDER, capture_files, capture_id, requires_captures
from streamfold._engine.pipeline import Pipeline
from streamfold._events import BlockDelta, Notice
from streamfold._providers import Provider, get_provider
from streamfold._providers.auto import MAX_UNDECIDED_FRAMES, AutoProvider, detect
from streamfold._read.framing import iter_json_lines, iter_sse
from streamfold._types import ProviderName

from . import test_clouisle, test_cohere_v1, test_cohere_v2, test_onecortex
from .sse_helpers import Run, named, run, split, sse

#: Hand-written streams of the providers this suite owns, with their provider.
HAND_WRITTEN: dict[str, tuple[bytes, ProviderName]] = {
    **{f"onecortex-{k}": (v, "onecortex") for k, v in test_onecortex.STREAMS.items()},
    **{f"clouisle-{k}": (v, "clouisle") for k, v in test_clouisle.STREAMS.items()},
    **{f"cohere-v2-{k}": (v, "cohere-v2") for k, v in test_cohere_v2.STREAMS.items()},
    **{f"cohere-v1-{k}": (v, "cohere-v1") for k, v in test_cohere_v1.STREAMS.items()},
}


def detected(data: bytes) -> str | None:
    """The first decision :func:`detect` makes on the frames of ``data``."""
    jsonl = data.lstrip()[:1] in (b"{", b"[")
    frames: list[Any] = list(iter_json_lines([data]) if jsonl else iter_sse([data]))
    flavour = None
    for frame in frames:
        found = detect(frame, jsonl=jsonl)
        if found == "chat":
            flavour = "openai"
        elif found is not None:
            return found
    return flavour


def assert_detection(event: Any, provider: ProviderName) -> None:
    assert isinstance(event, Notice)
    assert (event.kind, event.data) == ("provider_detected", provider)
    assert event.message is not None
    assert provider in event.message


def assert_hands_over(data: bytes | list[bytes], provider: ProviderName) -> Run:
    """``auto`` yields the detection notice, then exactly what ``provider`` yields."""
    auto = run(data, "auto")
    direct = run(data, provider)
    assert_detection(auto.events[0], provider)
    assert auto.events[1:] == direct.events
    assert auto.outcome()[1] == direct.outcome()[1]
    if direct.error is not None:
        assert auto.error is not None
        assert getattr(auto.error, "position", None) == getattr(direct.error, "position", None)
    return auto


@requires_captures
@pytest.mark.parametrize("path", capture_files(), ids=capture_id)
def test_detects_every_capture_from_its_first_frame(path: Path) -> None:
    assert detected(path.read_bytes()) == CAPTURE_PROVIDER[path.parent.name]


@requires_captures
@pytest.mark.parametrize("path", capture_files(), ids=capture_id)
def test_every_capture_through_auto_equals_its_provider(path: Path) -> None:
    provider = CAPTURE_PROVIDER[path.parent.name]
    pipeline = sf.Pipeline("auto")
    pipeline.feed(path.read_bytes())
    pipeline.close()
    assert isinstance(pipeline.provider, AutoProvider)
    assert pipeline.provider.chosen == provider
    assert_hands_over(path.read_bytes(), provider)


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_hand_written_streams_through_auto(name: str) -> None:
    data, provider = HAND_WRITTEN[name]
    assert detected(data) == provider
    assert_hands_over(data, provider)


def chunk(model: str | None, **delta: Any) -> sf.ServerSentEvent:
    payload: dict[str, Any] = {"object": "chat.completion.chunk", "choices": [{"delta": delta}]}
    if model is not None:
        payload["model"] = model
    return sf.ServerSentEvent(data=json.dumps(payload))


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("mistral-large-2512", "mistral"),
        ("magistral-medium-latest", "mistral"),
        ("codestral-latest", "mistral"),
        ("devstral-small-2505", "mistral"),
        ("ministral-8b-latest", "mistral"),
        ("pixtral-12b-2409", "mistral"),
        ("open-mistral-nemo", "mistral"),
        ("gpt-4o-2024-08-06", "openai"),
        ("openai/gpt-oss-120b", "openai"),
        ("mistralai/mistral-large", "openai"),  # an OpenAI-compatible router's name
        ("", "openai"),  # Azure's first chunk
    ],
)
def test_openai_or_mistral_by_model(model: str, provider: ProviderName) -> None:
    assert detect(chunk(model, content="x")) == provider


def test_mistral_by_its_shapes_when_no_model_is_named() -> None:
    assert detect(chunk(None, content="x")) == "chat"
    assert detect(chunk(None, content=[{"type": "text", "text": "x"}])) == "mistral"
    whole_call = {"id": "gS", "function": {"name": "f", "arguments": "{}"}}
    assert detect(chunk(None, tool_calls=[whole_call])) == "mistral"
    assert detect(chunk(None, tool_calls=[{**whole_call, "index": 0}])) == "chat"


def test_chat_chunks_without_a_model_are_openai() -> None:
    frame = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": "x"}}],
    }
    data = sse((None, frame), (None, "[DONE]"))
    pipeline = sf.Pipeline("auto")
    events = pipeline.feed(data) + pipeline.close()
    pipeline.raise_pending()
    assert isinstance(pipeline.provider, AutoProvider)
    assert pipeline.provider.chosen == "openai"
    assert_detection(events[0], "openai")


@pytest.mark.parametrize(
    ("frame", "provider"),
    [
        ({"v": 1, "type": "error", "code": "agent_error", "message": "x"}, "onecortex"),
        ({"type": "error", "error": {"type": "overloaded_error", "message": "x"}}, "anthropic"),
        (
            {"type": "error", "sequence_number": 2, "error": {"code": "q", "message": "x"}},
            "openai-responses",
        ),
        ({"error": {"message": "x", "type": "invalid_request_error"}}, "openai"),
        ({"code": "model_error", "message": "x"}, "clouisle"),
        ({"code": "model_error", "msg": "x"}, "clouisle"),
        (
            {"run_id": "r", "sequence": 3, "type": "error", "payload": {"code": "c", "msg": "x"}},
            "clouisle",
        ),
    ],
)
def test_error_events_decide_by_payload(frame: dict[str, Any], provider: ProviderName) -> None:
    assert detect(sf.ServerSentEvent(event="error", data=json.dumps(frame))) == provider


@pytest.mark.parametrize(
    ("payload", "provider"),
    [
        ({"error": {"code": 503, "message": "x", "status": "UNAVAILABLE"}}, "gemini"),
        ({"error": {"message": "x", "type": "server_error"}}, "openai"),
        ({"candidates": []}, "gemini"),
        ({"type": "message_start", "message": {"id": "m"}}, "anthropic"),
        ({"type": "message_start", "message_id": "m"}, "clouisle"),
        ({"type": "content-delta", "index": 0}, "cohere-v2"),
        ({"type": "response.created", "response": {}}, "openai-responses"),
        ({"v": 1, "type": "tool_result", "id": "c"}, "onecortex"),
        ({"type": "tool_result", "id": "c"}, "clouisle"),
        ({"type": "step_start", "name": "s"}, "onecortex"),
        ({"type": "ping"}, None),
        ({"hello": "world"}, None),
    ],
)
def test_unnamed_frames_decide_by_payload(
    payload: dict[str, Any], provider: ProviderName | None
) -> None:
    assert detect(sf.ServerSentEvent(data=json.dumps(payload))) == provider


def test_a_run_stream_opening_with_its_error_is_that_error_under_auto() -> None:
    # A resumed run stream can open with its error, the fields under the envelope's payload.
    envelope = {"run_id": "r", "sequence": 3, "type": "error"}
    stream = sse(("error", {**envelope, "payload": {"code": "quota", "msg": "out of credits"}}))
    result = run(stream, "auto")
    assert isinstance(result.error, sf.StreamError)
    assert (result.error.provider, result.error.code) == ("clouisle", "quota")
    assert result.error.message == "out of credits"


def test_done_and_non_json_decide_nothing() -> None:
    assert detect(sf.ServerSentEvent(data="[DONE]")) is None
    assert detect(sf.ServerSentEvent(event="mystery", data="{nope")) is None


def test_undecidable_stream_is_a_protocol_error() -> None:
    pings = sse(*[("ping", {"type": "ping"})] * MAX_UNDECIDED_FRAMES)
    result = run(pings + sse(("message_start", {"message_id": "m"})), "auto")
    assert isinstance(result.error, sf.ProtocolError)
    assert "cannot tell the provider" in str(result.error)
    assert result.error.provider == "auto"
    assert result.error.position == MAX_UNDECIDED_FRAMES - 1
    assert result.events == []
    short = run(sse(("mystery", {"a": 1})), "auto")
    assert isinstance(short.error, sf.ProtocolError)
    assert "cannot tell the provider from the first 1 frames" in str(short.error)


def test_json_lines_that_are_not_cohere_v1_are_a_protocol_error() -> None:
    result = run(b'{"answer": "whole reply"}\n', "auto")
    assert isinstance(result.error, sf.ProtocolError)
    assert "not Cohere v1 events" in str(result.error)


def test_leading_whitespace_before_json_lines() -> None:
    data = b"\n \r\n" + test_cohere_v1.TOOLS
    assert run(data, "auto").events[1:] == run(test_cohere_v1.TOOLS, "cohere-v1").events


def test_many_blank_reads_before_the_first_frame() -> None:
    """Keep-alive newlines before the first frame, read in many small pieces, then a stream:
    ``auto`` folds it as the named provider does. (Each read is looked at once: how the cost
    grows is measured in ``benches/test_hostile.py``, not timed here.)"""
    reads = [b"\n" * 100] * 2_000 + [test_cohere_v1.TOOLS]
    assert _without_detection(sf.fold(iter(reads), provider="auto")) == sf.fold(
        iter(reads), provider="cohere-v1"
    )


def test_blank_reads_before_the_first_frame_are_not_kept() -> None:
    """20 MiB of keep-alive newlines before the first frame: ``auto`` keeps none of them (it
    kept every blank read until the first frame told it the framing: memory without bound)."""
    pipeline = sf.Pipeline("auto")
    size = 1_024
    tracemalloc.start()
    try:
        for _ in range(20 * 1_024):
            pipeline.feed(b"\n" * size)  # a new object each time
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 256 * 1024, held
    events = pipeline.feed(test_cohere_v1.TOOLS) + pipeline.close()
    assert pipeline.pending is None
    assert events[1:] == run(test_cohere_v1.TOOLS, "cohere-v1").events


#: What may come before the first frame: blanks, a BOM, and a BOM's bytes where they do not
#: belong (inside a line, where SSE reads them as a field name and JSON lines refuse them).
_BLANK_PIECES = st.sampled_from([b"\n", b"\r\n", b"\r", b" ", b"\t", b"\xef\xbb\xbf", b"\xbb"])


@settings(max_examples=150)
@given(
    blanks=st.lists(_BLANK_PIECES, max_size=12),
    body=st.sampled_from(["cohere-v1", "openai", "none"]),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8),
)
def test_what_comes_before_the_first_frame_reads_as_under_the_named_provider(
    blanks: list[bytes], body: Literal["cohere-v1", "openai", "none"], cuts: list[int]
) -> None:
    """Whatever blanks precede the stream, and however the reads split them, ``auto`` reads
    the bytes as the provider it detects does when named: the same message or the same error
    (the blanks go to both framings' decoders until a byte tells which one it is)."""
    stream = {
        "cohere-v1": test_cohere_v1.TOOLS,
        "openai": sse((None, {"choices": [{"index": 0, "delta": {"content": "hi"}}]}))
        + sse((None, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
        + b"data: [DONE]\n\n",
        "none": b"",
    }[body]
    data = b"".join(blanks) + stream
    chunks = split(data, cuts)
    got = _fold(chunks, "auto")
    want = _fold(chunks, "openai" if body == "none" else body)  # no stream: read as SSE
    assert got[0] == want[0]
    if got[1] is not None and want[1] is not None:
        assert (got[1].text, got[1].complete) == (want[1].text, want[1].complete)


@pytest.mark.parametrize("data", [b"\xef\xbb\xbf", b"\xef\xbb\xbf\n\n", b"\xef\xbb\xbf\r\n "])
def test_blank_input_is_counted_once(data: bytes) -> None:
    """Input that ``auto`` held as blank to the end is fed to the decoder at close; its bytes
    are counted once (the error said twice as many as arrived)."""
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold([data], provider="auto")
    assert info.value.position == len(data)
    assert f"after {len(data)} bytes" in str(info.value)


def test_empty_stream_yields_nothing_and_is_incomplete() -> None:
    for data in (b"", b": keep-alive\n\n"):
        result = run(data, "auto")
        assert result.events == []
        assert isinstance(result.error, sf.IncompleteStreamError)


def test_replayed_frames_keep_their_positions() -> None:
    data = sse(
        ("ping", {"type": "ping"}),
        ("message_start", {"type": "message_start", "message": {"id": "m", "model": "c"}}),
        ("content_block_start", "{broken"),
    )
    result = run(data, "auto")
    assert isinstance(result.error, sf.ProtocolError)
    assert (result.error.provider, result.error.position) == ("anthropic", 2)
    delayed = sse(("ping", {}), ("ping", {}), *[(p["type"], p) for p in _onecortex_bad()])
    error = run(delayed, "auto").error
    assert isinstance(error, sf.ProtocolError)
    assert (error.provider, error.position) == ("onecortex", 3)


def _onecortex_bad() -> list[dict[str, Any]]:
    return [{"v": 1, "type": "text", "delta": "a"}, {"v": 1, "type": "text", "delta": 5}]


def test_strict_is_passed_on() -> None:
    stream = named({"v": 1, "type": "done", "result": ""}, {"v": 1, "type": "done"})
    assert run(stream, "auto").error is None
    result = run(stream, "auto", strict=True)
    assert isinstance(result.error, sf.ProtocolError)
    assert result.error.provider == "onecortex"


def test_state_is_the_chosen_providers() -> None:
    pipeline = sf.Pipeline("auto")
    pipeline.feed(test_clouisle.RUN)
    pipeline.close()
    provider = pipeline.provider
    assert isinstance(provider, AutoProvider)
    assert (provider.chosen, provider.sequence, provider.terminal_seen) == ("clouisle", 9, True)
    assert provider.provider is not None
    assert provider.position == provider.provider.position == 8


@given(name=st.sampled_from(sorted(HAND_WRITTEN)), data=st.data())
def test_chunking_invariant(name: str, data: st.DataObject) -> None:
    stream = HAND_WRITTEN[name][0]
    # Cut often near the start, where the framing is sniffed and frames are buffered.
    cuts = data.draw(
        st.lists(st.integers(0, min(len(stream), 64)), max_size=8)
        | st.lists(st.integers(0, len(stream)), max_size=40)
    )
    assert run(split(stream, cuts), "auto").outcome() == run(stream, "auto").outcome()


async def _chunks(data: bytes, size: int = 3) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


@pytest.mark.anyio
async def test_aevents_detects_too(anyio_backend: str) -> None:
    for data in (test_onecortex.FULL, test_cohere_v1.GROUNDED):
        got = [e async for e in sf.aevents(_chunks(data), "auto")]
        assert got == run(data, "auto").events
        assert_detection(got[0], "onecortex" if data is test_onecortex.FULL else "cohere-v1")


def _without_detection(message: Any) -> Any:
    """The message (and its choices) without the ``provider_detected`` notice of ``auto``."""
    if message is None:
        return None

    def plain(m: Any) -> Any:
        return replace(m, notices=[n for n in m.notices if n.kind != "provider_detected"])

    first = plain(message)
    first.choices = [first if c is message else plain(c) for c in message.choices]
    return first


def _fold(chunks: list[bytes], provider: ProviderName) -> tuple[str, Any]:
    try:
        return "ok", _without_detection(sf.fold(chunks, provider=provider))
    except sf.StreamfoldError as exc:
        return type(exc).__name__, _without_detection(getattr(exc, "partial", None))


@requires_captures
@pytest.mark.parametrize("path", capture_files(), ids=capture_id)
@settings(max_examples=5)  # 42 captures, each folded and decoded four times per example
@given(cuts=st.lists(st.integers(min_value=0, max_value=20_000), max_size=12))
def test_every_capture_folds_through_auto_as_through_its_provider(
    path: Path, cuts: list[int]
) -> None:
    """Once it has chosen, ``auto`` runs the chosen provider's own frame loop and the fold's
    direct text path: the message is the same, read whole or in pieces."""
    provider = CAPTURE_PROVIDER[path.parent.name]
    data = path.read_bytes()
    for chunks in ([data], split(data, cuts)):
        assert _fold(chunks, "auto") == _fold(chunks, provider)
        auto, direct = run(chunks, "auto"), run(chunks, provider)
        assert auto.events[1:] == direct.events
        assert auto.outcome()[1] == direct.outcome()[1]


def test_auto_runs_the_chosen_providers_own_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    from streamfold._providers.openai_chat import OpenAIChat

    calls: list[int] = []
    real = OpenAIChat.handle_frames

    def counted(self: OpenAIChat, frames: list[Any], out: list[Any]) -> None:
        calls.append(len(frames))
        real(self, frames, out)

    monkeypatch.setattr(OpenAIChat, "handle_frames", counted)
    frames = [
        {"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o", "choices": [c]}
        for c in (
            {"index": 0, "delta": {"role": "assistant", "content": ""}},
            *({"index": 0, "delta": {"content": f"w{k}"}} for k in range(6)),
            {"index": 0, "delta": {}, "finish_reason": "stop"},
        )
    ]
    data = b"".join(b"data: " + json.dumps(f).encode() + b"\n\n" for f in frames)
    # The pipeline alone: the fold hands the provider a read's frames in steps, to arm the
    # decoder's folding path between them.
    pipeline = Pipeline("auto")
    events = pipeline.feed(data) + pipeline.feed(b"data: [DONE]\n\n") + pipeline.close()
    assert "".join(e.text for e in events if isinstance(e, BlockDelta)) == "w0w1w2w3w4w5"
    # The frames after the one that decided, then the second read (and none at the end).
    assert [n for n in calls if n] == [len(frames) - 1, 1]


class CountingFrame:
    """A frame that counts how often its data is parsed (the Rust frame cannot be spied on).
    The providers' Rust template cut does not read it, so every frame takes the parsed path."""

    def __init__(self, frame: sf.ServerSentEvent) -> None:
        self.frame = frame
        self.event, self.data, self.id, self.retry = frame.event, frame.data, frame.id, frame.retry
        self.data_bytes = frame.data_bytes
        self.parses = 0

    def json(self) -> Any:
        self.parses += 1
        return self.frame.json()


def _events(provider: Provider, frames: list[Any]) -> list[Any]:
    out: list[Any] = []
    for position, frame in enumerate(frames):
        provider.position = position
        provider.handle(frame, out)
    return out


@requires_captures
@pytest.mark.parametrize(
    "path",
    [p for p in capture_files() if p.parent.name != "cohere_v1"],  # JSON lines: no parse
    ids=capture_id,
)
def test_the_deciding_frame_is_parsed_once(path: Path) -> None:
    # Detection parses the first frame; the chosen provider takes that parse over instead of
    # making its own (a parse is the costliest step of a frame on the slow path).
    frames = [CountingFrame(f) for f in iter_sse([path.read_bytes()])]
    auto = AutoProvider()
    try:
        events = _events(auto, frames)
    except sf.StreamfoldError:
        events = None
    assert frames[0].parses <= 1
    assert all(f.parses <= 1 for f in frames)
    # And the handed-over parse gives the events a parse of its own would.
    direct = get_provider(CAPTURE_PROVIDER[path.parent.name])
    try:
        expected = _events(direct, [CountingFrame(f) for f in iter_sse([path.read_bytes()])])
    except sf.StreamfoldError:
        expected = None
    assert (events is None) == (expected is None)
    if events is not None and expected is not None:
        assert events[1:] == expected


def test_a_handed_over_parse_serves_only_its_own_frame() -> None:
    frames = [CountingFrame(f) for f in iter_sse([sse((None, {"choices": []}))] * 2)]
    provider = get_provider("openai")
    provider.preparsed = (frames[0], {"choices": [], "marker": 1})
    assert provider.frame_json(frames[1]) == {"choices": []}  # another frame: parsed
    assert provider.preparsed is None  # and the hand-over is dropped
    assert frames[1].parses == 1
    provider.preparsed = (frames[0], {"marker": 1})
    assert provider.frame_json(frames[0]) == {"marker": 1}
    assert frames[0].parses == 0
    assert provider.frame_json(frames[0]) == {"choices": []}  # used once


@pytest.mark.parametrize("event", [[1], {"a": 1}])
@pytest.mark.parametrize("provider", ["auto", "clouisle", "openai"])
def test_an_envelope_event_that_is_a_list_or_object_is_not_a_type_error(
    event: Any, provider: ProviderName
) -> None:
    """A frame whose ``event`` field is a list or object (a workflow envelope's place for its
    event's name) raised ``TypeError: unhashable type`` from the detection: under ``auto``,
    and under a named provider too, whose failed stream is read by ``auto`` for a hint. Now
    the stream is read like any other frame no provider owns: a StreamfoldError."""
    body = sse(("node_start", {"event": event, "data": {}, "node_id": "n", "sequence": 1}))
    with pytest.raises(sf.StreamfoldError) as info:
        sf.fold([body], provider=provider)
    assert info.value.partial is not None
    assert detect(sf.SSEDecoder().feed(body)[0]) == "clouisle"  # by the event: line


# -- a whole JSON body, not a stream ------------------------------------------------------------

WHOLE_ANSWERS = {
    "openai": {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}],
    },
    "openai-responses": {"id": "resp_1", "object": "response", "output": [], "status": "completed"},
    "anthropic": {"id": "msg_1", "type": "message", "role": "assistant", "content": []},
    "gemini": {"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}]},
    "cohere-v2": {"id": "c", "message": {"role": "assistant"}, "finish_reason": "COMPLETE"},
    "cohere-v1": {"text": "hi", "generation_id": "g", "finish_reason": "COMPLETE"},
}
ERROR_BODIES = [
    ({"error": {"message": "Invalid API key", "type": "invalid_request_error"}}, "Invalid API key"),
    (
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        "Overloaded",
    ),
    (
        {"error": {"code": 400, "message": "API key not valid", "status": "INVALID_ARGUMENT"}},
        "API key not valid",
    ),
    ({"message": "invalid api token"}, "invalid api token"),
    ({"detail": "Not authenticated"}, "Not authenticated"),
]


def _bodies(payload: Any) -> list[list[bytes]]:
    """The body on one line and pretty-printed, each whole and a byte at a time."""
    out = []
    for text in (json.dumps(payload), json.dumps(payload, indent=2)):
        body = text.encode()
        out += [[body], [body[i : i + 1] for i in range(len(body))]]
    return out


@pytest.mark.parametrize("provider", sorted(WHOLE_ANSWERS))
def test_a_whole_answer_says_what_it_is_and_to_ask_for_a_stream(provider: str) -> None:
    texts = set()
    for chunks in _bodies(WHOLE_ANSWERS[provider]):
        with pytest.raises(sf.ProtocolError) as info:
            sf.fold(chunks, provider="auto")
        text = str(info.value)
        assert "the body is one JSON document" in text and "not a stream" in text
        assert '"stream": true' in text and f"provider={provider!r}" in text
        assert info.value.partial is not None
        texts.add(text)
    assert len(texts) == 1  # however the bytes came, one line or several


@pytest.mark.parametrize("provider", ["onecortex", "clouisle"])
def test_a_whole_agent_body_points_to_fold_json(provider: str) -> None:
    body = {"result": "hi", "events": []} if provider == "onecortex" else {"code": 0, "data": []}
    for chunks in _bodies(body):
        with pytest.raises(sf.ProtocolError, match=rf"sf.fold_json\(body, provider={provider!r}\)"):
            sf.fold(chunks, provider="auto")


@pytest.mark.parametrize(("body", "message"), ERROR_BODIES)
def test_an_error_object_is_a_stream_error_with_its_message(body: Any, message: str) -> None:
    for chunks in _bodies(body):
        with pytest.raises(sf.StreamError) as info:
            sf.fold(chunks, provider="auto")
        assert info.value.message == message
        assert info.value.retryable_without_duplicate
        with pytest.raises(sf.StreamError):
            list(sf.events(chunks, provider="auto"))


def test_json_lines_that_are_no_known_body_still_say_so() -> None:
    for chunks in _bodies({"foo": 1})[:2]:
        with pytest.raises(sf.ProtocolError, match="not Cohere v1 events"):
            sf.fold(chunks, provider="auto")


def test_a_cohere_v1_stream_still_reads_under_auto() -> None:
    body = test_cohere_v1.STREAMS[sorted(test_cohere_v1.STREAMS)[0]]
    assert sf.fold([body], provider="auto") == sf.fold([body], provider="auto")
    assert detected(body) == "cohere-v1"
