"""Gemini ``streamGenerateContent?alt=sse`` (``provider="gemini"``): captures, hand-written
streams, block making, Vertex streamed arguments, rules."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
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
    MediaAdded,
    MessageEnd,
    MessageStart,
    SignatureDelta,
    SourcesAdded,
    UsageUpdate,
)
from streamfold._failures import ConnectionLostError, connection_lost
from streamfold._providers.gemini import FINISH_REASONS
from streamfold._types import ProviderName

from .helpers import CAPTURES as CAPTURE_ROOT
from .helpers import (
    LATE_SECOND_CHOICE,
    accumulate,
    captures,
    check_capture,
    expected,
    live_completeness,
    message_events,
    run,
    split_at,
    sse,
)

CAPTURES = captures("gemini")
requires_captures = pytest.mark.skipif(not CAPTURES, reason="../shared/captures is absent")


def chunk(
    *parts: dict[str, Any], finish: str | None = None, usage: Any = None, **candidate: Any
) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, **candidate}
    if finish:
        cand["finishReason"] = finish
    body: dict[str, Any] = {"candidates": [cand], "modelVersion": "gemini-x", "responseId": "r1"}
    if usage is not None:
        body["usageMetadata"] = usage
    return body


def gsse(*frames: Any) -> bytes:
    return sse(*frames, crlf=True)


BASIC = gsse(
    chunk({"text": "The"}, usage={"promptTokenCount": 15}),
    chunk(
        {"text": " capital"},
        usage={"promptTokenCount": 15, "candidatesTokenCount": 2, "totalTokenCount": 17},
    ),
    chunk(
        {"text": " is Paris.\n"},
        finish="STOP",
        usage={
            "promptTokenCount": 13,
            "candidatesTokenCount": 8,
            "totalTokenCount": 21,
            "thoughtsTokenCount": 5,
            "toolUsePromptTokenCount": 2,
            "cachedContentTokenCount": 4,
        },
    ),
)


# -- captures ---------------------------------------------------------------------------------


@requires_captures
@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_capture_matches_expected(path: Path) -> None:
    check_capture(path, "gemini")


@requires_captures
def test_grounding_supports_are_utf8_byte_offsets() -> None:
    path = CAPTURE_ROOT / "gemini" / "web_search_grounding.sse"
    result = run(path.read_bytes(), "gemini")
    want = expected(path)["grounding_metadata"]
    citations = [e.citation for e in result.of(CitationAdded)]
    assert [(c.start, c.end, c.text) for c in citations] == [
        (s["startIndex"], s["endIndex"], s["text"]) for s in want["groundingSupports"]
    ]
    text = accumulate(result.events).choice(0).ordered()[0].text.encode("utf-8")
    for c in citations:
        assert c.start is not None and c.end is not None
        assert text[c.start : c.end].decode("utf-8") == c.text
    sources = result.of(SourcesAdded)
    assert len(sources) == 1
    assert [s.get("web", s).get("title") for s in sources[0].sources] == [
        c["title"] for c in want["groundingChunks"]
    ]
    assert sources[0].queries == want["webSearchQueries"]


STREAMS = [p.read_bytes() for p in CAPTURES] + [BASIC]


@given(st.data())
def test_chunking_invariance(data: st.DataObject) -> None:
    stream = data.draw(
        st.sampled_from([*STREAMS, CUT_BY_MAX_TOKENS, CUT_BY_EOF, CUT_BY_TEXT, CUT_BY_CALL])
    )
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=60))
    whole = run(stream, "gemini")
    split = run(split_at(stream, cuts), "gemini")
    assert split.events == whole.events
    assert repr(split.error) == repr(whole.error)


def losing(pieces: list[bytes], at: int) -> Iterator[bytes]:
    """``pieces``, then the connection fails (as the HTTP adapters report it) after ``at``."""
    yield from pieces
    raise connection_lost("gemini", at, ConnectionResetError("reset by peer"))


@given(st.data())
def test_connection_lost_anywhere_folds_like_a_clean_end_there(data: st.DataObject) -> None:
    # A stream whose connection fails at any byte, read in any pieces, gives the events and the
    # partial of a clean end at that byte: what the provider held is handed over (``finish``).
    stream = data.draw(st.sampled_from([*STREAMS, CUT_BY_TEXT, CUT_BY_EOF]))
    provider: ProviderName = data.draw(st.sampled_from(["gemini", "auto"]))
    at = data.draw(st.integers(0, len(stream) - 1))
    cuts = data.draw(st.lists(st.integers(0, at), max_size=20))
    clean = run(stream[:at], provider)
    whole: Any
    try:
        whole = sf.fold([stream[:at]], provider=provider)
    except (sf.IncompleteStreamError, sf.ProtocolError) as exc:
        whole = exc
    # Read as the HTTP clients are: each piece as it arrives (``run`` would list them).
    events: list[Any] = []
    if isinstance(whole, sf.Message):
        # The terminal event had arrived: the lost connection ends nothing that mattered, and
        # says so last.
        events.extend(sf.events(losing(split_at(stream[:at], cuts), at), provider=provider))
        assert events[:-1] == clean.events
        assert "after the terminal event" in events[-1].message
        message = sf.fold(losing(split_at(stream[:at], cuts), at), provider=provider)
        assert message.warnings[:-1] == whole.warnings
        assert "after the terminal event" in message.warnings[-1]
        assert dataclasses.replace(message, warnings=whole.warnings) == whole
        return
    with pytest.raises(ConnectionLostError):
        events.extend(sf.events(losing(split_at(stream[:at], cuts), at), provider=provider))
    assert events == clean.events
    with pytest.raises(ConnectionLostError) as info:
        sf.fold(losing(split_at(stream[:at], cuts), at), provider=provider)
    assert info.value.partial == whole.partial


@requires_captures
@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_capture_single_byte_reads_split_crlf(path: Path) -> None:
    data = path.read_bytes()
    assert b"\r\n\r\n" in data
    pieces = run([data[i : i + 1] for i in range(len(data))], "gemini")
    assert pieces.events == run(data, "gemini").events


# -- blocks -------------------------------------------------------------------------------------


def test_consecutive_text_parts_are_one_block_and_usage_replaces() -> None:
    result = run(BASIC, "gemini")
    assert result.error is None and result.warnings == []
    folded = accumulate(result.events)
    assert [(b.kind, b.text) for b in folded.choice(0).ordered()] == [
        ("text", "The capital is Paris.\n")
    ]
    start = result.of(MessageStart)[0]
    assert (start.id, start.model, start.choice) == ("r1", "gemini-x", 0)
    # The first usage has only the prompt count; every snapshot replaces the last.
    updates = [u.usage for u in result.of(UsageUpdate)]
    assert [u.input_tokens for u in updates] == [15, 15, 15]
    last = folded.usage
    assert (last.input_tokens, last.output_tokens, last.total_tokens) == (15, 13, 21)
    assert (last.reasoning_tokens, last.cached_tokens) == (5, 4)
    end = result.of(MessageEnd)[0]
    assert (end.finish_reason, end.raw_finish_reason) == ("stop", "STOP")
    names = [type(e).__name__ for e in result.events]
    assert names[-4:] == ["UsageUpdate", "BlockEnd", "MessageDelta", "MessageEnd"]


def test_thought_parts_then_text_switch_blocks() -> None:
    stream = gsse(
        chunk({"text": "**Plan**", "thought": True}),
        chunk({"text": " more", "thought": True}),
        chunk({"text": "Answer", "thoughtSignature": "sig1"}),
        chunk({"text": " done."}),
        chunk({"text": "again?", "thought": True}, finish="STOP"),
    )
    result = run(stream, "gemini")
    blocks = accumulate(result.events).choice(0).ordered()
    assert [(b.kind, b.text, b.signature) for b in blocks] == [
        ("reasoning", "**Plan** more", None),
        ("text", "Answer done.", "sig1"),
        ("reasoning", "again?", None),
    ]
    assert all(b.ended for b in blocks)


def test_signature_on_an_empty_text_part_is_kept() -> None:
    stream = gsse(
        chunk({"text": "Hi"}), chunk({"text": "", "thoughtSignature": "sig"}, finish="STOP")
    )
    result = run(stream, "gemini")
    assert [s.signature for s in result.of(SignatureDelta)] == ["sig"]
    blocks = accumulate(result.events).choice(0).ordered()
    assert [(b.kind, b.text, b.signature) for b in blocks] == [("text", "Hi", "sig")]


def test_signature_on_an_empty_text_part_after_a_call_opens_a_block_for_it() -> None:
    stream = gsse(
        chunk({"functionCall": {"name": "f", "args": {}}}),
        chunk({"text": "", "thoughtSignature": "sig"}, finish="STOP"),
    )
    blocks = accumulate(run(stream, "gemini").events).choice(0).ordered()
    assert [(b.kind, b.text, b.signature) for b in blocks] == [
        ("tool_call", "", None),
        ("text", "", "sig"),
    ]


def test_empty_text_part_without_signature_makes_nothing() -> None:
    stream = gsse(
        chunk({"functionCall": {"name": "f", "args": {"a": 1}}}), chunk({"text": ""}, finish="STOP")
    )
    result = run(stream, "gemini")
    assert len(result.of(BlockStart)) == 1


def test_whole_function_calls_with_signature() -> None:
    stream = gsse(
        chunk({"text": "Let me look."}),
        chunk(
            {"functionCall": {"name": "get_country", "args": {}}, "thoughtSignature": "s"},
            {"functionCall": {"name": "get_city", "args": {"q": "x"}, "id": "fc1"}},
        ),
        chunk({"text": ""}, finish="STOP"),
    )
    result = run(stream, "gemini")
    starts = [s for s in result.of(BlockStart) if s.kind == "tool_call"]
    assert [(s.id, s.name, s.arguments, s.complete, s.extra) for s in starts] == [
        (None, "get_country", {}, True, {"thoughtSignature": "s"}),
        ("fc1", "get_city", {"q": "x"}, True, None),
    ]
    names = [type(e).__name__ for e in result.events]
    assert names[1:8] == [
        "BlockStart",
        "BlockDelta",
        "BlockEnd",
        "BlockStart",
        "BlockEnd",
        "BlockStart",
        "BlockEnd",
    ]
    assert result.of(MessageEnd)[0].finish_reason == "stop"


def test_vertex_partial_args_stream_nested_paths() -> None:
    def partial(*args: dict[str, Any]) -> dict[str, Any]:
        return {"functionCall": {"partialArgs": list(args), "willContinue": True}}

    stream = gsse(
        chunk({"functionCall": {"name": "write", "willContinue": True}, "thoughtSignature": "s"}),
        chunk(partial({"jsonPath": "$.path", "stringValue": "a/", "willContinue": True})),
        chunk(
            partial(
                {"jsonPath": "$.path", "stringValue": "b.txt"},
                {"jsonPath": "$.opts.mode", "numberValue": 420},
                {"jsonPath": "$.opts.force", "boolValue": True},
                {"jsonPath": "$.lines[1]", "stringValue": "two"},
                {"jsonPath": "$.lines[0]", "stringValue": "one"},
                {"jsonPath": "$['odd key']", "nullValue": None},
            )
        ),
        chunk({"functionCall": {}}),
        chunk({"text": ""}, finish="STOP"),
    )
    result = run(stream, "gemini", strict=True)
    assert result.error is None
    block = accumulate(result.events).choice(0).ordered()[0]
    assert (block.kind, block.name, block.ended) == ("tool_call", "write", True)
    assert block.extra == {"thoughtSignature": "s"}
    assert json.loads(block.text) == {
        "path": "a/b.txt",
        "opts": {"mode": 420, "force": True},
        "lines": ["one", "two"],
        "odd key": None,
    }


def test_partial_args_without_an_open_call_is_a_protocol_error() -> None:
    stream = gsse(
        chunk({"functionCall": {"partialArgs": [{"jsonPath": "$.a", "stringValue": "x"}]}})
    )
    result = run(stream, "gemini")
    assert isinstance(result.error, sf.ProtocolError) and "never started" in str(result.error)


# -- a streamed call that never closes -----------------------------------------------------------


def opened(name: str = "search") -> dict[str, Any]:
    return chunk({"functionCall": {"name": name, "willContinue": True}})


def args(*partial: dict[str, Any]) -> dict[str, Any]:
    return chunk({"functionCall": {"partialArgs": list(partial), "willContinue": True}})


def closed() -> dict[str, Any]:
    return chunk({"functionCall": {}})


PAR = {"jsonPath": "$.query", "stringValue": "weather in Par", "willContinue": True}
#: The call's text as a cut leaves it: the root and the string being streamed left open.
PAR_TEXT = '{"query": "weather in Par'
#: A call cut by the token limit, and the same stream cut by the input ending.
CUT_BY_MAX_TOKENS = gsse(opened(), args(PAR), chunk(finish="MAX_TOKENS"))
CUT_BY_EOF = gsse(opened(), args(PAR))


@pytest.mark.parametrize("strict", [False, True])
def test_call_cut_by_max_tokens_is_incomplete_and_keeps_what_arrived(strict: bool) -> None:
    message = sf.fold([CUT_BY_MAX_TOKENS], provider="gemini", strict=strict)
    assert (message.finish_reason, message.complete) == ("length", True)
    # The fold names the cut call; the provider itself reports no broken rule at the limit.
    (warning,) = message.warnings
    assert "tool call 'search' in block 0" in warning and "'MAX_TOKENS'" in warning
    (call,) = message.tool_calls
    assert (call.name, call.complete, call.arguments) == ("search", False, None)
    assert call.arguments_json == PAR_TEXT
    assert call.error is not None and call.error.startswith("incomplete JSON arguments")
    assert message.blocks[0].complete is False
    with pytest.raises(ValueError, match="no valid arguments"):
        message.to_request()


def test_call_cut_by_max_tokens_events_have_no_block_end() -> None:
    result = run(CUT_BY_MAX_TOKENS, "gemini")
    assert [type(e).__name__ for e in result.events[1:]] == [
        "BlockStart",
        "BlockDelta",
        "MessageDelta",
        "MessageEnd",
    ]
    assert result.of(BlockDelta)[0].text == PAR_TEXT


def test_call_cut_by_stop_is_incomplete_and_warns() -> None:
    stream = gsse(opened(), args(PAR), chunk({"text": ""}, finish="STOP"))
    message = sf.fold([stream], provider="gemini")
    (call,) = message.tool_calls
    assert (call.complete, call.arguments, call.arguments_json) == (False, None, PAR_TEXT)
    # No complete call: the turn does not ask for tools.
    assert message.finish_reason == "stop"
    assert any("streamed function call is open" in w for w in message.warnings)
    with pytest.raises(sf.ProtocolError) as info:
        sf.fold([stream], provider="gemini", strict=True)
    assert "streamed function call is open" in str(info.value)


#: A text part, and another call, before the streamed call's closing ``{}``: the call was not
#: finished, so it is cut as a ``finishReason`` inside it cuts it.
CUT_BY_TEXT = gsse(opened(), args(PAR), chunk({"text": "Let me check."}), chunk(finish="STOP"))
CUT_BY_CALL = gsse(
    opened(),
    args(PAR),
    chunk({"functionCall": {"name": "lookup", "args": {"id": 1}}}),
    chunk(finish="STOP"),
)
INSIDE = {
    "text": (CUT_BY_TEXT, "text inside a streamed function call"),
    "call": (CUT_BY_CALL, "a function call starts before the streamed one closed"),
}


@pytest.mark.parametrize("case", list(INSIDE))
def test_part_inside_a_streamed_call_cuts_it_with_a_warning(case: str) -> None:
    stream, warning = INSIDE[case]
    message = sf.fold([stream], provider="gemini")
    assert message.complete
    cut = message.tool_calls[0]
    assert (cut.name, cut.complete, cut.arguments, cut.arguments_json) == (
        "search",
        False,
        None,
        PAR_TEXT,
    )
    assert cut.error is not None and cut.error.startswith("incomplete JSON arguments")
    assert message.blocks[0].complete is False
    assert [w for w in message.warnings if warning in w]
    with pytest.raises(ValueError, match="no valid arguments"):
        message.to_request()
    if case == "text":
        assert message.text == "Let me check."
    else:
        whole = message.tool_calls[1]
        assert (whole.name, whole.complete, whole.arguments) == ("lookup", True, {"id": 1})


@pytest.mark.parametrize("case", list(INSIDE))
def test_part_inside_a_streamed_call_events(case: str) -> None:
    stream, _ = INSIDE[case]
    result = run(stream, "gemini")
    # The cut call's text goes out before the part that cut it, and its block never ends.
    assert [type(e).__name__ for e in result.events[1:5]] == [
        "BlockStart",
        "BlockDelta",
        "Notice",
        "BlockStart",
    ]
    assert result.of(BlockDelta)[0].text == PAR_TEXT
    assert 0 not in [e.index for e in result.of(BlockEnd)]


@pytest.mark.parametrize("case", list(INSIDE))
def test_part_inside_a_streamed_call_strict_raises_with_what_arrived(case: str) -> None:
    stream, warning = INSIDE[case]
    with pytest.raises(sf.ProtocolError) as info:
        sf.fold([stream], provider="gemini", strict=True)
    assert warning in str(info.value)
    partial = info.value.partial
    assert partial is not None
    (call,) = partial.tool_calls
    assert (call.complete, call.arguments, call.arguments_json) == (False, None, PAR_TEXT)


def test_pieces_after_a_cut_are_dropped_with_a_warning() -> None:
    # The call was cut by a text part; its later pieces (and its late ``{}``) belong to a call
    # already reported incomplete: dropped with a warning, the stream read on.
    stream = gsse(
        opened(),
        args(PAR),
        chunk({"text": "Let me check."}),
        args(PAR),
        chunk({"functionCall": {}}),
        chunk({"text": " Done."}, finish="STOP"),
    )
    message = sf.fold([stream], provider="gemini")
    assert message.complete and message.text == "Let me check. Done."
    (cut,) = message.tool_calls
    assert (cut.complete, cut.arguments_json) == (False, PAR_TEXT)
    assert [w for w in message.warnings if "already cut short (dropped)" in w]
    with pytest.raises(sf.ProtocolError):
        sf.fold([stream], provider="gemini", strict=True)


def test_pieces_for_a_call_never_begun_are_still_a_protocol_error() -> None:
    with pytest.raises(sf.ProtocolError, match="never started"):
        sf.fold([gsse(args(PAR), chunk(finish="STOP"))], provider="gemini")


def test_input_ending_inside_a_call_keeps_what_arrived_in_the_partial() -> None:
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold([CUT_BY_EOF], provider="gemini")
    partial = info.value.partial
    assert partial is not None and partial.complete is False
    (call,) = partial.tool_calls
    assert (call.complete, call.arguments, call.arguments_json) == (False, None, PAR_TEXT)
    assert call.partial_arguments() == {"query": "weather in Par"}
    assert call.error == "the stream ended before the call's arguments were complete"


def test_error_chunk_inside_a_call_keeps_what_arrived_in_the_partial() -> None:
    stream = gsse(opened(), args(PAR), {"error": {"code": 503, "message": "overloaded"}})
    with pytest.raises(sf.StreamError) as info:
        sf.fold([stream], provider="gemini")
    partial = info.value.partial
    assert partial is not None
    (call,) = partial.tool_calls
    assert (call.complete, call.arguments_json) == (False, PAR_TEXT)
    assert call.partial_arguments() == {"query": "weather in Par"}


def test_closed_streamed_call_then_finish_is_unchanged() -> None:
    stream = gsse(opened(), args(PAR), args({"jsonPath": "$.query", "stringValue": "is"}), closed())
    message = sf.fold([stream + gsse(chunk(finish="MAX_TOKENS"))], provider="gemini")
    (call,) = message.tool_calls
    assert (call.complete, call.error, call.arguments) == (
        True,
        None,
        {"query": "weather in Paris"},
    )
    assert call.arguments_json == '{"query": "weather in Paris"}'
    stop = sf.fold([stream + gsse(chunk(finish="STOP"))], provider="gemini", strict=True)
    assert (stop.finish_reason, stop.tool_calls[0].complete) == ("tool_calls", True)
    assert stop.to_request()["parts"][0]["functionCall"]["args"] == {"query": "weather in Paris"}


def test_parallel_streamed_calls_one_open_at_finish() -> None:
    stream = gsse(
        opened("read_screen"),
        args({"jsonPath": "$.id", "stringValue": "A"}),
        closed(),
        opened("write"),
        args(
            {"jsonPath": "$.path", "stringValue": "a.txt"},
            {"jsonPath": "$.opts.mode", "numberValue": 420},
            {"jsonPath": "$.opts.body", "stringValue": "hel", "willContinue": True},
        ),
        chunk(finish="MAX_TOKENS"),
    )
    message = sf.fold([stream], provider="gemini")
    first, second = message.tool_calls
    assert (first.name, first.complete, first.arguments) == ("read_screen", True, {"id": "A"})
    assert (second.name, second.complete, second.arguments) == ("write", False, None)
    assert second.arguments_json == '{"path": "a.txt", "opts": {"mode": 420, "body": "hel'
    assert message.finish_reason == "length"
    with pytest.raises(ValueError, match="no valid arguments"):
        message.to_request()


@pytest.mark.parametrize(
    ("partial", "text"),
    [
        ((), "{"),  # opened, nothing arrived
        (({"jsonPath": "$.q", "stringValue": "done"},), '{"q": "done"'),
        (({"jsonPath": "$.n", "numberValue": 1.5},), '{"n": 1.5'),
        (
            ({"jsonPath": "$.lines[0]", "stringValue": "on", "willContinue": True},),
            '{"lines": ["on',
        ),
        (  # written out of order: the members below the open level are whole
            (
                {"jsonPath": "$.lines[1]", "stringValue": "two"},
                {"jsonPath": "$.lines[0]", "stringValue": "o", "willContinue": True},
            ),
            '{"lines": ["o", "two"',
        ),
        (
            (
                {"jsonPath": "$.a.b", "stringValue": "x"},
                {"jsonPath": "$.c", "boolValue": True},
                {"jsonPath": "$.a.d", "stringValue": "y", "willContinue": True},
            ),
            '{"a": {"b": "x", "d": "y"}, "c": true',
        ),
    ],
)
def test_cut_call_text_is_never_complete_json(partial: tuple[Any, ...], text: str) -> None:
    stream = gsse(opened(), *([args(*partial)] if partial else []), chunk(finish="MAX_TOKENS"))
    (call,) = sf.fold([stream], provider="gemini").tool_calls
    assert (call.complete, call.arguments, call.arguments_json) == (False, None, text)


def test_server_tool_and_media_parts() -> None:
    code = {"executableCode": {"language": "PYTHON", "code": "print(1)"}}
    outcome = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}}
    image = {"inlineData": {"mimeType": "image/png", "data": "iVBO"}}
    stream = gsse(chunk(code, outcome, image, {"futurePart": {}}, finish="STOP"))
    result = run(stream, "gemini")
    starts = result.of(BlockStart)
    assert [(s.kind, s.name, s.complete, s.data) for s in starts] == [
        ("server_tool", "executableCode", True, code),
        ("server_tool", "codeExecutionResult", True, outcome),
        ("other", "inlineData", True, image),
    ]
    assert [m.media for m in result.of(MediaAdded)] == [image["inlineData"]]
    assert result.unknown == ["part.futurePart"]


def test_code_execution_parts_go_back_in_the_turn() -> None:
    # The model's executableCode and codeExecutionResult parts belong to its turn: the next
    # request sends them back where they were, as received (Content.parts).
    code = {"executableCode": {"language": "PYTHON", "code": "print(1)"}}
    outcome = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}}
    stream = gsse(
        chunk({"text": "Running."}, code, outcome, {"text": "It printed 1."}, finish="STOP")
    )
    message = sf.fold([stream], provider="gemini", strict=True)
    assert message.to_request() == {
        "role": "model",
        "parts": [{"text": "Running."}, code, outcome, {"text": "It printed 1."}],
    }


def test_media_parts_go_back_in_the_turn_where_they_were() -> None:
    # An image model's turn: text, an image, more text, a file. The media parts are in
    # Message.media for the UI, and the next request sends them back as parts in their place,
    # as received (the image's thoughtSignature included: Gemini checks it).
    image = {
        "inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="},
        "thoughtSignature": "sig-image",
    }
    video = {"fileData": {"mimeType": "video/mp4", "fileUri": "gs://bucket/clip.mp4"}}
    stream = gsse(
        chunk({"text": "Here is "}, {"text": "the cat:"}),
        chunk(image, {"text": "And "}),
        chunk({"text": "a clip."}, video, finish="STOP"),
    )
    message = sf.fold([stream], provider="gemini", strict=True)
    assert message.text == "Here is the cat:And a clip."
    assert message.media == [image["inlineData"], video["fileData"]]
    assert [(b.kind, b.text) for b in message.blocks] == [
        ("text", "Here is the cat:"),
        ("other", ""),
        ("text", "And a clip."),
        ("other", ""),
    ]
    assert message.to_request() == {
        "role": "model",
        "parts": [{"text": "Here is the cat:"}, image, {"text": "And a clip."}, video],
    }


@pytest.mark.parametrize("raw", [*FINISH_REASONS, "SOMETHING_NEW"])
def test_finish_reason_table(raw: str) -> None:
    end = run(gsse(chunk({"text": "x"}, finish=raw)), "gemini").of(MessageEnd)[0]
    assert (end.raw_finish_reason, end.finish_reason) == (raw, FINISH_REASONS.get(raw, "other"))


@pytest.mark.parametrize("raw", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII"])
def test_safety_like_reasons_are_content_filter(raw: str) -> None:
    assert FINISH_REASONS[raw] == "content_filter"
    assert FINISH_REASONS["MAX_TOKENS"] == "length"


def test_prompt_blocked_before_any_candidate() -> None:
    stream = gsse(
        {
            "promptFeedback": {"blockReason": "SAFETY"},
            "usageMetadata": {"promptTokenCount": 3, "totalTokenCount": 3},
        }
    )
    result = run(stream, "gemini")
    end = result.of(MessageEnd)[0]
    assert (end.finish_reason, end.raw_finish_reason) == ("content_filter", "SAFETY")
    assert len(result.of(MessageStart)) == 1


def test_blocked_prompt_feedback_is_in_the_message_metadata() -> None:
    # A blocked prompt's promptFeedback says why (blockReasonMessage) and how it was rated.
    feedback = {
        "blockReason": "PROHIBITED_CONTENT",
        "blockReasonMessage": "The prompt was blocked.",
        "safetyRatings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "LOW"}],
    }
    message = sf.fold([gsse({"promptFeedback": feedback})], provider="gemini")
    assert (message.finish_reason, message.raw_finish_reason) == (
        "content_filter",
        "PROHIBITED_CONTENT",
    )
    assert message.metadata == {"promptFeedback": feedback}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("promptFeedback", {"safetyRatings": [{"category": "X", "probability": "NEGLIGIBLE"}]}),
        ("createTime", "2026-11-30T23:00:00.123456Z"),  # Vertex AI
    ],
)
def test_top_level_response_fields_are_in_the_message_metadata(key: str, value: Any) -> None:
    # On the first chunk only (as Gemini sends promptFeedback): kept to the end, also when the
    # stream is cut after it.
    first = {**chunk({"text": "Hi"}), key: value}
    message = sf.fold([gsse(first, chunk({"text": "!"}, finish="STOP"))], provider="gemini")
    assert message.metadata == {key: value}
    assert message.to_request() == {"role": "model", "parts": [{"text": "Hi!"}]}
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold([gsse(first)], provider="gemini")
    assert info.value.partial is not None and info.value.partial.metadata == {key: value}


def test_recitation_citations() -> None:
    cited = {"startIndex": 0, "endIndex": 5, "uri": "https://x"}
    stream = gsse(
        chunk({"text": "Hello"}, citationMetadata={"citations": [cited]}),
        chunk({"text": "!"}, citationMetadata={"citations": [cited]}, finish="STOP"),
    )
    citations = [e.citation for e in run(stream, "gemini").of(CitationAdded)]
    assert [(c.start, c.end, c.sources, c.block) for c in citations] == [(0, 5, [cited], 0)]


def test_several_candidates_are_choices() -> None:
    stream = gsse(
        {
            "candidates": [
                {"index": 0, "content": {"parts": [{"text": "A"}]}},
                {"index": 1, "content": {"parts": [{"text": "B"}]}, "finishReason": "STOP"},
            ]
        },
        {
            "candidates": [
                {"index": 0, "content": {"parts": [{"text": "a"}]}, "finishReason": "MAX_TOKENS"}
            ]
        },
    )
    folded = accumulate(run(stream, "gemini").events)
    assert [b.text for b in folded.choice(0).ordered()] == ["Aa"]
    assert [b.text for b in folded.choice(1).ordered()] == ["B"]
    assert (folded.choice(0).finish_reason, folded.choice(1).finish_reason) == ("length", "stop")


#: Two candidates where candidate 1's first part comes after candidate 0 finished, then a
#: usage-only chunk: Gemini has no terminal marker, the stream's end is its end.
LATE_CANDIDATE = gsse(
    {"candidates": [{"index": 0, "content": {"parts": [{"text": "Hi"}]}}]},
    {"candidates": [{"index": 0, "content": {"parts": [{"text": "!"}]}, "finishReason": "STOP"}]},
    {"candidates": [{"index": 1, "content": {"parts": [{"text": "Hello"}]}}]},
    {
        "candidates": [
            {"index": 1, "content": {"parts": [{"text": " there"}]}, "finishReason": "MAX_TOKENS"}
        ]
    },
    {"usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 4, "totalTokenCount": 7}},
)


def test_a_finish_reason_announces_and_the_end_of_input_ends_every_candidate() -> None:
    result = run(LATE_CANDIDATE, "gemini")
    assert result.error is None and result.warnings == []
    names = [(type(e).__name__, getattr(e, "choice", None)) for e in result.events]
    assert message_events(result) == LATE_SECOND_CHOICE
    assert names.index(("UsageUpdate", None)) < names.index(("MessageEnd", 0))
    ends = result.of(MessageEnd)
    assert [(e.finish_reason, e.raw_finish_reason) for e in ends] == [
        ("stop", "STOP"),
        ("length", "MAX_TOKENS"),
    ]


def test_complete_is_monotonic_and_only_true_at_the_end_of_the_stream() -> None:
    # A live view folds event by event: candidate 0 finished before candidate 1 started. No
    # message may read complete before the last event (it read True, then False).
    events, seen, folder = live_completeness(LATE_CANDIDATE, "gemini")
    assert all(not any(flags) for flags in seen[:-1]), seen
    assert all(seen[-1]) and isinstance(events[-1], MessageEnd)
    result = folder.result()
    assert [c.text for c in result.choices] == ["Hi!", "Hello there"]
    assert [c.finish_reason for c in result.choices] == ["stop", "length"]
    assert result.usage is not None and result.usage.total_tokens == 7


def test_a_cut_after_a_late_candidate_started_is_incomplete() -> None:
    # Candidate 0 finished, candidate 1 started, then the input ended: sf.events (which
    # decides by the provider's terminal_seen) raised nothing, while sf.fold raised.
    cut = LATE_CANDIDATE[: LATE_CANDIDATE.index(b"data", LATE_CANDIDATE.index(b"Hello"))]
    result = run(cut, "gemini")
    assert isinstance(result.error, sf.IncompleteStreamError)
    assert [e.choice for e in result.of(MessageStart)] == [0, 1]
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold([cut], provider="gemini")
    assert info.value.partial is not None and info.value.partial.choices[1].text == "Hello"


def test_a_live_view_shows_a_candidate_finish_before_the_end() -> None:
    folder = sf.Folder("gemini")
    pipeline = Pipeline("gemini")  # the stream goes on: its input has not ended
    finished = LATE_CANDIDATE.index(b"Hello")
    for event in pipeline.feed(LATE_CANDIDATE[:finished]):
        folder.add(event)
    snapshot = folder.snapshot()
    assert (snapshot.finish_reason, snapshot.raw_finish_reason) == ("stop", "STOP")
    assert not snapshot.complete and not folder.complete


def test_an_error_after_a_candidate_finished_keeps_that_finish_in_the_partial() -> None:
    stream = gsse(
        {"candidates": [{"index": 0, "content": {"parts": [{"text": "x"}]}}]},
        {"candidates": [{"index": 0, "finishReason": "STOP"}, {"index": 1}]},
        {"error": {"code": 500, "message": "late failure", "status": "INTERNAL"}},
    )
    with pytest.raises(sf.StreamError) as info:
        sf.fold([stream], provider="gemini")
    partial = info.value.partial
    assert partial is not None and not partial.complete
    assert (partial.text, partial.finish_reason, partial.raw_finish_reason) == ("x", "stop", "STOP")
    assert partial.choices[1].finish_reason == "error"


def test_each_candidate_numbers_its_blocks_from_zero() -> None:
    # Candidate 1's message is the one a stream of candidate 1 alone folds to.
    call = {"functionCall": {"name": "f", "args": {"x": 1}}}
    stream = gsse(
        {
            "candidates": [
                {"index": 0, "content": {"parts": [{"text": "A"}]}},
                {"index": 1, "content": {"parts": [{"text": "B"}, call]}, "finishReason": "STOP"},
            ]
        },
        {
            "candidates": [
                {"index": 0, "content": {"parts": [{"text": "a"}]}, "finishReason": "STOP"}
            ]
        },
    )
    alone = gsse(
        {
            "candidates": [
                {"index": 0, "content": {"parts": [{"text": "B"}, call]}, "finishReason": "STOP"}
            ]
        }
    )
    second = sf.fold([stream], provider="gemini", strict=True).choices[1]
    expected = sf.fold([alone], provider="gemini", strict=True)
    assert [(b.index, b.kind) for b in second.blocks] == [(0, "text"), (1, "tool_call")]
    assert [(b.index, b.kind) for b in expected.blocks] == [(0, "text"), (1, "tool_call")]
    (tool_call,) = second.tool_calls
    assert tool_call.block == 1 and second.blocks[1].tool_call == tool_call


# -- errors and rules -----------------------------------------------------------------------------


def test_error_chunk_raises_after_the_events_before_it() -> None:
    stream = gsse(
        chunk({"text": "Par"}),
        {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}},
    )
    seen = []
    with pytest.raises(sf.StreamError) as info:
        for event in sf.events([stream], provider="gemini"):
            seen.append(event)
    assert [e.text for e in seen if isinstance(e, BlockDelta)] == ["Par"]
    assert (info.value.code, info.value.message) == ("UNAVAILABLE", "overloaded")
    assert info.value.retryable_without_duplicate is False


def test_non_json_payload_is_a_protocol_error() -> None:
    result = run(gsse(chunk({"text": "a"}), "{truncated"), "gemini")
    assert isinstance(result.error, sf.ProtocolError)
    assert (result.error.provider, result.error.position) == ("gemini", 1)


def test_content_after_finish_warns_or_raises_when_strict() -> None:
    stream = gsse(
        chunk({"text": "a"}, finish="STOP"),
        chunk({"text": "late"}),
        {"usageMetadata": {"promptTokenCount": 1, "totalTokenCount": 2}},
    )
    lenient = run(stream, "gemini")
    assert len(lenient.warnings) == 1 and "after its finishReason" in lenient.warnings[0]
    assert "late" not in "".join(e.text for e in lenient.of(BlockDelta))
    assert len(lenient.of(UsageUpdate)) == 1  # a usage-only chunk after the end is fine
    strict = run(stream, "gemini", strict=True)
    assert isinstance(strict.error, sf.ProtocolError)


def test_every_event_keeps_its_frame() -> None:
    result = run(BASIC, "gemini")
    assert all(isinstance(e.raw, sf.ServerSentEvent) for e in result.events)
    assert len(result.of(BlockEnd)) == 1


@pytest.mark.anyio
async def test_aevents_under_asyncio_and_trio(anyio_backend: str) -> None:
    async def reads() -> Any:
        for i in range(0, len(BASIC), 9):
            yield BASIC[i : i + 9]

    events = [e async for e in sf.aevents(reads(), provider="gemini")]
    assert events == run(BASIC, "gemini").events


def test_finish_message_is_kept_as_a_notice() -> None:
    # The one explanation of MALFORMED_FUNCTION_CALL; the same stream split anywhere gives it.
    body = {
        "candidates": [
            {
                "content": {"role": "model", "parts": []},
                "finishReason": "MALFORMED_FUNCTION_CALL",
                "finishMessage": "Malformed function call: print(default_api.x(a=1",
                "index": 0,
            }
        ]
    }
    stream = b"data: " + json.dumps(body).encode() + b"\r\n\r\n"
    for reads in ([stream], split_at(stream, range(0, len(stream), 7))):
        message = sf.fold(reads, provider="gemini")
        assert message.finish_reason == "error"
        (notice,) = message.notices
        assert notice.kind == "finish_message"
        assert notice.message == "Malformed function call: print(default_api.x(a=1"
        assert notice.data == {"choice": 0, "finish_reason": "MALFORMED_FUNCTION_CALL"}


def test_partial_args_index_far_past_the_list_is_refused_not_allocated() -> None:
    """A streamed call's ``jsonPath`` may name list elements out of order, but a 100-byte chunk
    naming ``$.a[1000000000]`` padded the list with a billion nulls (gigabytes, minutes). An
    index more than ``MAX_INDEX_SKIP`` past the list's end is a ProtocolError."""
    from streamfold._providers.gemini import MAX_INDEX_SKIP

    def stream(index: int) -> bytes:
        return gsse(
            chunk({"functionCall": {"name": "f", "willContinue": True}}),
            chunk(
                {
                    "functionCall": {
                        "partialArgs": [{"jsonPath": f"$.a[{index}]", "numberValue": 1}],
                        "willContinue": True,
                    }
                }
            ),
            chunk({"functionCall": {}}),
            chunk({"text": ""}, finish="STOP"),
        )

    message = sf.fold([stream(MAX_INDEX_SKIP)], provider="gemini")
    assert message.tool_calls[0].arguments == {"a": [None] * MAX_INDEX_SKIP + [1]}
    with pytest.raises(sf.ProtocolError, match="skips"):
        sf.fold([stream(10**9)], provider="gemini")


def one_path_call(path: str) -> bytes:
    """A streamed call with one ``partialArgs`` value at ``path``, closed, then ``STOP``."""
    return gsse(
        chunk({"functionCall": {"name": "f", "willContinue": True}}),
        chunk(
            {
                "functionCall": {
                    "partialArgs": [{"jsonPath": path, "stringValue": "v"}],
                    "willContinue": True,
                }
            }
        ),
        chunk({"functionCall": {}}),
        chunk({"text": ""}, finish="STOP"),
    )


@pytest.mark.parametrize(
    "path",
    [
        "$.a[" + "9" * 5000 + "]",  # int() refused it: ValueError (Python's digit limit)
        "$['\\x']",  # not an escape: json.JSONDecodeError
        '$["\\u12"]',  # a cut \\u escape: json.JSONDecodeError
        "$" + ".a" * 5000,  # RecursionError writing the arguments' JSON text
        "$.a" + "[0]" * 5000,
    ],
    ids=["huge-index", "bad-escape", "cut-u-escape", "deep-names", "deep-indices"],
)
@pytest.mark.parametrize("provider", ["gemini", "auto"])
@pytest.mark.parametrize("cut", [False, True])
def test_partial_args_path_it_cannot_read_is_a_protocol_error(
    path: str, provider: ProviderName, cut: bool
) -> None:
    """A ``jsonPath`` whose index no list could have, whose quoted name has a broken escape,
    or with thousands of steps raised ValueError, JSONDecodeError or RecursionError out of
    ``fold`` (also at a cut, where the open arguments are written out). Now each is a
    ProtocolError naming the frame, with the partial message."""
    stream = one_path_call(path)
    reads = [stream[: stream.index(b"\r\n\r\n", 200) + 4]] if cut else [stream]
    with pytest.raises(sf.ProtocolError, match="partialArgs jsonPath") as info:
        sf.fold(reads, provider=provider)
    assert (info.value.provider, info.value.position) == ("gemini", 1)
    assert info.value.partial is not None
    assert info.value.partial.tool_calls[0].name == "f"
    with pytest.raises(sf.ProtocolError, match="partialArgs jsonPath"):
        list(sf.events(reads, provider=provider))


@pytest.mark.parametrize("second", ["$.a[0]", "$[0]"])
def test_partial_args_index_into_an_object_is_a_protocol_error(second: str) -> None:
    """``$.a.b`` made ``a`` an object; ``$.a[0]`` then indexed it. The object took ``0`` as an
    integer key and the call closed whole with ``{"a": {"b": 1, "0": 2}}``, arguments the
    model never sent. Now the chunk is a ProtocolError."""
    stream = gsse(
        chunk({"functionCall": {"name": "f", "willContinue": True}}),
        args({"jsonPath": "$.a.b", "numberValue": 1}, {"jsonPath": second, "numberValue": 2}),
        closed(),
        chunk({"text": ""}, finish="STOP"),
    )
    with pytest.raises(sf.ProtocolError, match=r"index \[0\] into a JSON object") as info:
        sf.fold([stream], provider="gemini")
    assert (info.value.provider, info.value.position) == ("gemini", 1)


def test_partial_args_quoted_names_read_their_escapes() -> None:
    """Quoted member names are read as JSONPath writes them: JSON escapes, and in a
    single-quoted name ``\\'`` and a bare ``"``."""
    stream = gsse(
        chunk({"functionCall": {"name": "f", "willContinue": True}}),
        args(
            {"jsonPath": "$['it\\'s']", "numberValue": 1},
            {"jsonPath": "$['say \"hi\"']", "numberValue": 2},
            {"jsonPath": '$["tab\\there \\u00e9"]', "numberValue": 3},
            {"jsonPath": "$.b[0]['x']", "numberValue": 4},
        ),
        closed(),
        chunk({"text": ""}, finish="STOP"),
    )
    message = sf.fold([stream], provider="gemini", strict=True)
    assert message.tool_calls[0].arguments == {
        "it's": 1,
        'say "hi"': 2,
        "tab\there \u00e9": 3,
        "b": [{"x": 4}],
    }


def test_long_streamed_string_argument_in_many_pieces() -> None:
    """A string argument streamed in many ``partialArgs`` pieces (a file a call writes) is
    the pieces joined, in order. (They are joined once, not each onto the whole string so
    far: how the cost grows is measured in ``benches/test_hostile.py``, not timed here.)"""
    pieces = [f"{i:04d}" * 50 for i in range(2_000)]
    chunks = [
        gsse(chunk({"functionCall": {"name": "write", "willContinue": True}})),
        *(
            gsse(
                chunk(
                    {
                        "functionCall": {
                            "partialArgs": [
                                {"jsonPath": "$.code", "stringValue": p, "willContinue": True}
                            ],
                            "willContinue": True,
                        }
                    }
                )
            )
            for p in pieces
        ),
        gsse(chunk({"functionCall": {}}), chunk({"text": ""}, finish="STOP")),
    ]
    message = sf.fold(chunks, provider="gemini")
    assert message.tool_calls[0].arguments == {"code": "".join(pieces)}


#: ``streamGenerateContent`` without ``?alt=sse``: one JSON array, streamed.
JSON_ARRAY_BODY = (
    b'[{"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"}}]}\n,\r\n'
    b'{"candidates":[{"content":{"parts":[{"text":"!"}],"role":"model"},'
    b'"finishReason":"STOP"}]}\n]'
)


@pytest.mark.parametrize("provider", ["gemini", "auto"])
def test_a_json_array_body_says_to_ask_for_alt_sse(provider: ProviderName) -> None:
    """Without ``?alt=sse`` Gemini answers one JSON array: the error says what to change, not
    only that the bytes are not SSE (or not JSON lines, under ``auto``)."""
    with pytest.raises(sf.ProtocolError, match=r"a JSON array, .* ask for alt=sse"):
        sf.fold([JSON_ARRAY_BODY], provider=provider)


# -- willContinue: a part that only says more is coming, a last piece that ends the call -------

ITEM_0 = {"jsonPath": "$.items[0].name", "stringValue": "a", "willContinue": True}
ITEM_0_END = {"jsonPath": "$.items[0].name", "stringValue": "b"}
ITEM_1 = {"jsonPath": "$.items[1].name", "stringValue": "c"}
MORE = chunk({"functionCall": {"willContinue": True}})
#: Vertex's shape between the array items of nested arguments, and its end without ``{}``.
NESTED = [opened("order"), args(ITEM_0), MORE, args(ITEM_0_END), MORE, args(ITEM_1)]
NESTED_ARGS = {"items": [{"name": "ab"}, {"name": "c"}]}


def last_piece(*partial: dict[str, Any]) -> dict[str, Any]:
    return chunk({"functionCall": {"partialArgs": list(partial)}})


@pytest.mark.parametrize("closing", ["last-piece", "empty-call"])
def test_a_part_that_only_continues_keeps_the_call_open(closing: str) -> None:
    frames = NESTED[:-1]
    if closing == "last-piece":
        frames = [*frames, last_piece(ITEM_1)]
    else:
        frames = [*frames, args(ITEM_1), closed()]
    stream = gsse(*frames, chunk(finish="STOP"))
    message = sf.fold([stream], provider="gemini", strict=True)
    assert [(c.name, c.arguments, c.complete) for c in message.tool_calls] == [
        ("order", NESTED_ARGS, True)
    ]
    assert (message.finish_reason, message.raw_finish_reason) == ("tool_calls", "STOP")
    assert message.warnings == []


def test_a_last_piece_without_will_continue_ends_the_call_before_another() -> None:
    stream = gsse(
        opened("a"),
        last_piece({"jsonPath": "$.x", "numberValue": 1}),
        opened("b"),
        last_piece({"jsonPath": "$.y", "stringValue": "z"}),
        closed(),  # a stray one after the call ended: nothing
        chunk(finish="STOP"),
    )
    message = sf.fold([stream], provider="gemini", strict=True)
    assert [(c.name, c.arguments) for c in message.tool_calls] == [
        ("a", {"x": 1}),
        ("b", {"y": "z"}),
    ]
    assert message.finish_reason == "tool_calls"


def test_a_continuing_part_keeps_its_signature() -> None:
    more = chunk({"functionCall": {"willContinue": True}, "thoughtSignature": "sig"})
    stream = gsse(opened("f"), args(PAR), more, closed(), chunk(finish="STOP"))
    result = run(stream, "gemini", strict=True)
    assert result.error is None
    assert [e.signature for e in result.of(SignatureDelta)] == ["sig"]


@given(st.data())
def test_nested_pieces_any_split(data: st.DataObject) -> None:
    stream = gsse(*NESTED, chunk(finish="STOP"))
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=30))
    whole = run(stream, "gemini")
    split = run(split_at(stream, cuts), "gemini")
    assert split.events == whole.events and whole.error is None
