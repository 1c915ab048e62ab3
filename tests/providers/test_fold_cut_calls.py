"""How a tool call ends, across providers: whole streams and the same bytes split anywhere,
through ``sf.fold`` and through ``sf.events`` into a public ``Folder``.

* A call still open at its message's terminal event (Anthropic ``max_tokens`` before
  ``content_block_stop``, Cohere v2 ``MAX_TOKENS`` before ``tool-call-end``, Onecortex ``done``
  before ``tool_call_end``, Responses ``incomplete`` before ``output_item.done``) is cut short:
  ``complete=False``, ``arguments`` None, ``error`` set, the text that arrived kept, a warning
  naming its block, ``to_request`` refusing it. Whatever its text: ``{"path": "/tmp"}`` may be a
  prefix of the real arguments, and no text is not ``{}``. The message stays complete, with the
  finish reason the provider gave. Providers with no close of their own (Chat Completions and
  Mistral at ``finish_reason``) close their calls there: those stay whole.
* ``null`` arguments parse, but no provider takes null as a call's input: an error.
* A finish reason that arrived before the terminal event (Anthropic ``message_delta``) stays
  in the partial message of a stream cut before ``message_stop``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import streamfold as sf
from streamfold._events import MessageDelta
from streamfold._message import Message
from streamfold._types import ProviderName

from .helpers import CAPTURES, random_splits, run, split_at, sse

requires_captures = pytest.mark.skipif(
    not (CAPTURES / "anthropic").is_dir(), reason="../shared/captures is absent"
)


def named(kind: str, **payload: Any) -> tuple[str, dict[str, Any]]:
    """An SSE frame named by its type, the type repeated in the payload."""
    return kind, {"type": kind, **payload}


# -- one stream builder per provider: a call with these argument fragments, then the end --------


def anthropic(fragments: list[str], *, close: bool, stop: str = "max_tokens") -> bytes:
    message = {"id": "m", "role": "assistant", "model": "c", "content": [], "usage": {}}
    frames = [
        named("message_start", message={**message, "usage": {"input_tokens": 3}}),
        named(
            "content_block_start",
            index=0,
            content_block={"type": "tool_use", "id": "tu1", "name": "delete_files", "input": {}},
        ),
        *(
            named(
                "content_block_delta",
                index=0,
                delta={"type": "input_json_delta", "partial_json": text},
            )
            for text in fragments
        ),
    ]
    if close:
        frames.append(named("content_block_stop", index=0))
    frames.append(named("message_delta", delta={"stop_reason": stop}, usage={"output_tokens": 9}))
    frames.append(named("message_stop"))
    return sse(*frames)


def cohere_v2(fragments: list[str], *, close: bool, stop: str = "MAX_TOKENS") -> bytes:
    call = {"id": "x", "type": "function", "function": {"name": "delete_files", "arguments": ""}}
    frames = [
        named("message-start", id="m", delta={"message": {"role": "assistant"}}),
        named("tool-call-start", index=0, delta={"message": {"tool_calls": call}}),
        *(
            named(
                "tool-call-delta",
                index=0,
                delta={"message": {"tool_calls": {"function": {"arguments": text}}}},
            )
            for text in fragments
        ),
    ]
    if close:
        frames.append(named("tool-call-end", index=0))
    frames.append(named("message-end", delta={"finish_reason": stop, "usage": {}}))
    return sse(*frames, "[DONE]")


def onecortex(fragments: list[str], *, close: bool) -> bytes:
    def frame(kind: str, **payload: Any) -> tuple[str, dict[str, Any]]:
        return kind, {"v": 1, "type": kind, **payload}

    frames = [
        frame("tool_call_start", id="c1", name="delete_files"),
        *(frame("tool_call_args", id="c1", delta=text) for text in fragments),
    ]
    if close:
        frames.append(frame("tool_call_end", id="c1"))
    frames.append(frame("done", result="", sessionId="s", versionNumber=1, durationMs=5))
    return sse(*frames)


RESPONSE = {"id": "resp_1", "model": "gpt-4o", "status": "in_progress", "output": []}
ITEM = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "delete_files"}


def responses(fragments: list[str], *, close: bool) -> bytes:
    frames = [
        named("response.created", response=RESPONSE),
        named("response.output_item.added", output_index=0, item={**ITEM, "arguments": ""}),
        *(
            named(
                "response.function_call_arguments.delta",
                item_id="fc_1",
                output_index=0,
                delta=text,
            )
            for text in fragments
        ),
    ]
    whole = "".join(fragments)
    if close:
        frames.append(
            named(
                "response.output_item.done",
                output_index=0,
                item={**ITEM, "arguments": whole, "status": "completed"},
            )
        )
        frames.append(named("response.completed", response={**RESPONSE, "status": "completed"}))
    else:
        incomplete = {
            **RESPONSE,
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
        }
        frames.append(named("response.incomplete", response=incomplete))
    return sse(*frames)


def openai_chat(fragments: list[str], *, close: bool = True, finish: str = "length") -> bytes:
    """Chat Completions has no close of its own for a call: ``finish_reason`` closes it
    (``close`` is ignored)."""
    first = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "delete_files"}}
    chunks = [{"index": 0, "delta": {"role": "assistant", "tool_calls": [first]}}]
    for text in fragments:
        call = {"index": 0, "function": {"arguments": text}}
        chunks.append({"index": 0, "delta": {"tool_calls": [call]}})
    chunks.append({"index": 0, "delta": {}, "finish_reason": finish})
    body = [{"id": "c", "model": "gpt-4o", "choices": [choice]} for choice in chunks]
    return sse(*body, "[DONE]")


#: provider -> (stream builder, the finish the provider gives a cut, sends calls back).
CUT_STREAMS: dict[ProviderName, tuple[Callable[..., bytes], tuple[str, str], bool]] = {
    "anthropic": (anthropic, ("length", "max_tokens"), True),
    "cohere-v2": (cohere_v2, ("length", "MAX_TOKENS"), True),
    "onecortex": (onecortex, ("stop", "done"), False),
    "openai-responses": (responses, ("length", "max_output_tokens"), True),
}

#: No text; an unterminated prefix; text that is one complete value though the call is open.
FRAGMENTS = [[], ['{"path": "/tm'], ['{"path": ', '"/tmp"}'], ["", '{"n": 1', "2}"]]


def events_folded(chunks: list[bytes], provider: ProviderName) -> Message:
    """``sf.events`` into a public ``Folder``: the same outcome as ``sf.fold``."""
    folder = sf.Folder(provider)
    try:
        for event in sf.events(chunks, provider=provider):
            folder.add(event)
    except sf.IncompleteStreamError:
        pass
    return folder.result() if folder.complete else folder.partial()


def check_cut(m: Message, provider: ProviderName, fragments: list[str]) -> None:
    _, finish, sends_calls = CUT_STREAMS[provider]
    assert m.complete, "the terminal event came: the message is whole"
    assert (m.finish_reason, m.raw_finish_reason) == finish
    (call,) = m.tool_calls
    assert (call.complete, call.arguments) == (False, None)
    assert call.arguments_json == "".join(fragments)
    assert call.error
    block = m.blocks[call.block or 0]
    assert block.kind == "tool_call" and block.complete is False
    assert [w for w in m.warnings if f"'delete_files' (id {call.id!r}) in block" in w], m.warnings
    shapes: list[ProviderName] = ["openai", "anthropic", "gemini", "cohere-v1"]
    for shape in shapes + ([provider] * sends_calls):
        with pytest.raises(ValueError, match="no valid arguments"):
            m.to_request(shape)


@pytest.mark.parametrize("provider", sorted(CUT_STREAMS))
@pytest.mark.parametrize("fragments", FRAGMENTS, ids=["none", "prefix", "valid", "split"])
def test_call_open_at_the_terminal_event_is_cut(
    provider: ProviderName, fragments: list[str]
) -> None:
    stream = CUT_STREAMS[provider][0](fragments, close=False)
    check_cut(sf.fold([stream], provider=provider), provider, fragments)
    check_cut(events_folded([stream], provider), provider, fragments)


@pytest.mark.parametrize("provider", ["anthropic", "cohere-v2", "openai-responses"])
def test_a_call_cut_by_the_token_limit_breaks_no_rule(provider: ProviderName) -> None:
    # The provider cut the answer where it stood: strict mode does not refuse the stream, and
    # the one warning is the fold's, naming the cut call.
    stream = CUT_STREAMS[provider][0](['{"path": "/tm'], close=False)
    m = sf.fold([stream], provider=provider, strict=True)
    check_cut(m, provider, ['{"path": "/tm'])
    assert len(m.warnings) == 1


@pytest.mark.parametrize("provider", sorted(CUT_STREAMS))
def test_cut_call_keeps_its_best_effort_value(provider: ProviderName) -> None:
    stream = CUT_STREAMS[provider][0](['{"path": "/tmp", "n": [1, 2'], close=False)
    (call,) = sf.fold([stream], provider=provider).tool_calls
    assert call.partial_arguments() == {"path": "/tmp", "n": [1]}
    assert call.error is not None and call.error.startswith("incomplete JSON arguments")


@pytest.mark.parametrize("provider", sorted(CUT_STREAMS))
def test_closed_call_with_the_same_text_is_whole(provider: ProviderName) -> None:
    # The control: the same call with its close is whole, and the message asks for tools.
    stream = CUT_STREAMS[provider][0](['{"path": ', '"/tmp"}'], close=True)
    m = sf.fold([stream], provider=provider)
    (call,) = m.tool_calls
    assert (call.complete, call.arguments, call.error) == (True, {"path": "/tmp"}, None)
    assert not [w for w in m.warnings if "still open at the terminal event" in w]


@given(st.data())
def test_cut_call_whatever_the_chunking(data: st.DataObject) -> None:
    provider = data.draw(st.sampled_from(sorted(CUT_STREAMS)))
    fragments = data.draw(st.sampled_from(FRAGMENTS))
    stream = CUT_STREAMS[provider][0](fragments, close=False)
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=40))
    chunks = split_at(stream, cuts)
    check_cut(sf.fold(chunks, provider=provider), provider, fragments)
    check_cut(events_folded(chunks, provider), provider, fragments)


@pytest.mark.parametrize("provider", ["openai", "mistral"])
def test_chat_completions_calls_close_at_finish_reason(provider: ProviderName) -> None:
    # No close of their own: finish_reason ends the call, so valid text there is whole.
    m = sf.fold([openai_chat(['{"path": ', '"/tmp"}'])], provider=provider)
    (call,) = m.tool_calls
    assert (call.complete, call.arguments, m.finish_reason) == (True, {"path": "/tmp"}, "length")
    assert m.warnings == []


def test_anthropic_server_tool_open_at_max_tokens_is_cut() -> None:
    block = {"type": "server_tool_use", "id": "srv1", "name": "web_search", "input": {}}
    stream = sse(
        named("message_start", message={"id": "m", "role": "assistant", "content": []}),
        named("content_block_start", index=0, content_block=block),
        named(
            "content_block_delta",
            index=0,
            delta={"type": "input_json_delta", "partial_json": '{"query": "x"}'},
        ),
        named("message_delta", delta={"stop_reason": "max_tokens"}),
        named("message_stop"),
    )
    m = sf.fold([stream], provider="anthropic")
    call = m.blocks[0].tool_call
    assert call is not None and (call.complete, call.arguments) == (False, None)
    assert call.arguments_json == '{"query": "x"}'
    assert m.blocks[0].complete is False
    assert any("server_tool call 'web_search'" in w for w in m.warnings)


# -- null arguments --------------------------------------------------------------------------


def clouisle(text: str) -> bytes:
    return sse(
        ("message_start", {"conversation_id": "c", "message_id": "m"}),
        ("tool_call", {"id": "tc-1", "name": "delete_files", "arguments": text}),
        ("message_end", {"status": "completed"}),
    )


#: provider -> a stream whose one call is closed with the given argument text.
CLOSED_STREAMS: dict[ProviderName, Callable[[str], bytes]] = {
    "anthropic": lambda text: anthropic([text], close=True, stop="tool_use"),
    "cohere-v2": lambda text: cohere_v2([text], close=True, stop="TOOL_CALL"),
    "onecortex": lambda text: onecortex([text], close=True),
    "openai-responses": lambda text: responses([text], close=True),
    "openai": lambda text: openai_chat([text], close=True, finish="tool_calls"),
    "mistral": lambda text: openai_chat([text], close=True, finish="tool_calls"),
    "clouisle": clouisle,
}


def check_null(m: Message) -> None:
    (call,) = m.tool_calls
    assert (call.complete, call.arguments, call.arguments_json) == (True, None, "null")
    assert call.error is not None and "null" in call.error
    shapes: list[ProviderName] = ["openai", "anthropic", "gemini", "cohere-v1", "cohere-v2"]
    for shape in shapes:
        with pytest.raises(ValueError, match="JSON null"):
            m.to_request(shape)


@pytest.mark.parametrize("provider", sorted(CLOSED_STREAMS))
def test_null_arguments_are_an_error_that_to_request_agrees_with(provider: ProviderName) -> None:
    stream = CLOSED_STREAMS[provider]("null")
    check_null(sf.fold([stream], provider=provider))
    check_null(events_folded([stream], provider))


@given(st.data())
def test_null_arguments_whatever_the_chunking(data: st.DataObject) -> None:
    provider = data.draw(st.sampled_from(sorted(CLOSED_STREAMS)))
    stream = CLOSED_STREAMS[provider]("null")
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=40))
    check_null(sf.fold(split_at(stream, cuts), provider=provider))


@pytest.mark.parametrize("provider", sorted(CLOSED_STREAMS))
@pytest.mark.parametrize("text", ["{}", '{"a": null}', "[null]"])
def test_other_values_with_null_inside_are_whole(provider: ProviderName, text: str) -> None:
    (call,) = sf.fold([CLOSED_STREAMS[provider](text)], provider=provider).tool_calls
    assert (call.complete, call.arguments, call.error) == (True, json.loads(text), None)


def test_whole_call_and_pending_call_with_null_text() -> None:
    folder = sf.Folder("clouisle")
    folder.add(sf.MessageStart())
    whole = sf.BlockStart(
        index=0, kind="tool_call", id="a", name="f", arguments="null", complete=True
    )
    folder.add(whole)
    folder.add(sf.BlockEnd(index=0, kind="tool_call"))
    folder.add(sf.RunStatus(status="waiting", pending_tool_name="ask", pending_tool_input="null"))
    m = folder.snapshot()
    for call in [*m.tool_calls, m.pending_tool_call]:
        assert call is not None and call.arguments is None
        assert call.error is not None and "null" in call.error
    with pytest.raises(ValueError, match="JSON null"):
        m.to_request("openai")
    # No input at all stays "no arguments": {}.
    folder.add(sf.RunStatus(status="waiting", pending_tool_name="ask", pending_tool_input=None))
    pending = folder.snapshot().pending_tool_call
    assert pending is not None and (pending.complete, pending.arguments) == (True, {})


@pytest.mark.parametrize("text", ["null", "{not json", '{"a": 1'])
def test_closed_calls_with_bad_text_are_complete_whole_or_streamed(text: str) -> None:
    # One rule for ``complete``: the stream closed the call. A call that arrived whole (or a
    # pending ask_user input) was closed by the stream, as a streamed call closed by its end
    # event is: both are complete, with ``error`` saying why ``arguments`` is None.
    streamed = sf.fold([CLOSED_STREAMS["onecortex"](text)], provider="onecortex").tool_calls[0]
    folder = sf.Folder("clouisle")
    folder.add(sf.MessageStart())
    folder.add(
        sf.BlockStart(index=0, kind="tool_call", id="a", name="f", arguments=text, complete=True)
    )
    folder.add(sf.BlockEnd(index=0, kind="tool_call"))
    folder.add(sf.RunStatus(status="waiting", pending_tool_name="ask", pending_tool_input=text))
    m = folder.snapshot()
    for call in [streamed, *m.tool_calls, m.pending_tool_call]:
        assert call is not None
        assert (call.complete, call.arguments, call.arguments_json) == (True, None, text)
        assert call.error is not None
    with pytest.raises(ValueError, match="cannot be sent back"):
        m.to_request("openai")


# -- a finish reason that arrived before the terminal event ----------------------------------


def anthropic_cut_after_message_delta(stop: str) -> bytes:
    # Everything up to message_stop, which never comes.
    return anthropic(['{"path": "/tm'], close=False, stop=stop).rsplit(b"event: message_stop", 1)[0]


def check_announced(m: Message, stop: str, finish: str) -> None:
    assert not m.complete
    assert (m.finish_reason, m.raw_finish_reason) == (finish, stop)
    assert m.usage is not None and m.usage.output_tokens == 9
    (call,) = m.tool_calls
    assert (call.complete, call.arguments) == (False, None)


@pytest.mark.parametrize(("stop", "finish"), [("max_tokens", "length"), ("tool_use", "tool_calls")])
def test_partial_keeps_the_finish_announced_before_the_cut(stop: str, finish: str) -> None:
    stream = anthropic_cut_after_message_delta(stop)
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold([stream], provider="anthropic")
    assert info.value.partial is not None
    check_announced(info.value.partial, stop, finish)
    check_announced(events_folded([stream], "anthropic"), stop, finish)
    announced = run(stream, "anthropic").of(MessageDelta)
    assert [(e.finish_reason, e.raw_finish_reason) for e in announced] == [(finish, stop)]


@given(st.data())
def test_announced_finish_whatever_the_chunking(data: st.DataObject) -> None:
    stream = anthropic_cut_after_message_delta("max_tokens")
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=40))
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold(split_at(stream, cuts), provider="anthropic")
    assert info.value.partial is not None
    check_announced(info.value.partial, "max_tokens", "length")


def test_the_terminal_event_sets_the_final_finish() -> None:
    folder = sf.Folder("anthropic")
    folder.add(sf.MessageStart())
    folder.add(MessageDelta(finish_reason="length", raw_finish_reason="max_tokens"))
    assert folder.snapshot().finish_reason == "length"
    folder.add(sf.MessageEnd(finish_reason="stop", raw_finish_reason="end_turn"))
    m = folder.result()
    assert (m.complete, m.finish_reason, m.raw_finish_reason) == (True, "stop", "end_turn")


def test_a_provider_error_after_the_announced_finish_ends_in_error() -> None:
    # The error is how the message ended: its partial says so, not the earlier announcement.
    folder = sf.Folder("anthropic")
    folder.add(sf.MessageStart())
    folder.add(MessageDelta(finish_reason="length", raw_finish_reason="max_tokens"))
    error = sf.StreamError("Overloaded", code="overloaded_error")
    folder.annotate_error(error)
    assert error.partial is not None
    assert (error.partial.finish_reason, error.partial.raw_finish_reason) == ("error", None)


@requires_captures
@pytest.mark.parametrize("seed", range(5))
def test_capture_cut_before_message_stop_keeps_max_tokens(seed: int) -> None:
    # The capture's last event, message_stop, is never dispatched (no blank line after it).
    path = CAPTURES / "anthropic" / "max_tokens_partial_tool_json.sse"
    data = path.read_bytes()
    chunks = [data] if seed == 0 else random_splits(data, seed)
    with pytest.raises(sf.IncompleteStreamError) as info:
        sf.fold(chunks, provider="anthropic")
    partial = info.value.partial
    assert partial is not None
    assert (partial.finish_reason, partial.raw_finish_reason) == ("length", "max_tokens")
    assert partial.usage is not None and partial.usage.output_tokens == 124
    folded = events_folded(chunks, "anthropic")
    assert (folded.finish_reason, folded.raw_finish_reason) == ("length", "max_tokens")
