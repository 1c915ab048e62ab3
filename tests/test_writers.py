"""sf.Writer: events back to each provider's wire format.

For every capture and example stream, ``fold(write(events(stream)))`` with the same provider
equals ``fold(stream)`` on what the format carries (text, reasoning, refusals, tool plan, tool
calls with ids and argument text, finish reason and the provider's own value, usage, id,
model, choices, outcome and error); written for another provider, the text, tool calls and
arguments, finish reason class, usage and outcome survive, save what the target cannot say
(listed in ``expected_across``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import streamfold as sf
from stream_cases import CASES, Case
from streamfold._types import ProviderName
from streamfold._writers import WRITERS
from writer_roundtrip import events_until_error, fold_bytes, summary, written

TARGETS: tuple[ProviderName, ...] = (
    "openai",
    "mistral",
    "anthropic",
    "gemini",
    "cohere-v2",
    "openai-responses",
)
#: Formats whose calls arrive whole: a call cut before its end cannot be sent.
WHOLE_CALLS = frozenset({"mistral", "gemini"})
#: Formats whose usage comes only with their terminal event (or, for Responses, not with its
#: failure either): a stream cut before it, or failed, has no place for it.
USAGE_AT_END = {
    "cohere-v2": ("IncompleteStreamError",),
    "openai-responses": ("IncompleteStreamError", "StreamError"),
}


def case(name: str) -> Case:
    found = [c for c in CASES if c.id == name]
    if not found:
        pytest.skip(f"{name} is not present")
    return found[0]


SAME = [c for c in CASES if c.provider in TARGETS]


@pytest.mark.parametrize("case", SAME, ids=lambda c: c.id)
def test_written_for_the_same_provider_folds_the_same(case: Case) -> None:
    want = summary(*case.fold(), same=True)
    body, _ = written(case, case.provider)
    got = summary(*fold_bytes(body, case.provider), same=True)
    assert got == want


def expected_across(c: Case, target: str) -> dict[str, Any]:
    message, exc = c.fold()
    want = summary(message, exc, same=False)
    if target in WHOLE_CALLS:
        want["tool_calls"] = [
            (call.name, call.arguments) for call in message.tool_calls if call.complete
        ]
    if want["outcome"] in USAGE_AT_END.get(target, ()):
        want["usage"] = None
    return want


ACROSS = [(c, t) for c in CASES for t in TARGETS if t != c.provider]


@pytest.mark.parametrize(("case", "target"), ACROSS, ids=lambda x: getattr(x, "id", x))
def test_written_for_another_provider_keeps_what_it_can_say(
    case: Case, target: ProviderName
) -> None:
    body, _ = written(case, target)
    assert summary(*fold_bytes(body, target), same=False) == expected_across(case, target)


@pytest.mark.parametrize(("case", "target"), ACROSS[::7], ids=lambda x: getattr(x, "id", x))
def test_what_is_written_reads_without_warnings_in_any_split(
    case: Case, target: ProviderName
) -> None:
    body, _ = written(case, target)
    whole = fold_bytes(body, target)
    assert whole[0].warnings == []
    bytewise = [body[i : i + 1] for i in range(len(body))]
    split: tuple[Any, BaseException | None]
    try:
        split = sf.fold(bytewise, provider=target), None
    except sf.StreamfoldError as exc:
        split = getattr(exc, "partial", None), exc
    assert split[0] == whole[0]
    assert type(split[1]) is type(whole[1])


def test_writer_of_a_provider() -> None:
    for name in TARGETS:
        w = sf.Writer(name)
        assert isinstance(w, sf.Writer)
        assert type(w) is WRITERS[name]
    assert type(sf.Writer("openai-chat")) is type(sf.Writer("openai"))
    with pytest.raises(ValueError, match="no writer for provider 'nope'"):
        sf.Writer("nope")
    with pytest.raises(TypeError, match="name the provider"):
        sf.Writer()


def test_parallel_calls_keep_their_indices_and_fragments() -> None:
    c = case("example/openai_parallel_tools.sse")
    events, _ = events_until_error(c)
    fragments = [e.text for e in events if isinstance(e, sf.BlockDelta)]
    for target in ("openai", "anthropic", "cohere-v2", "openai-responses"):
        body, _ = written(c, target)
        got = [e for e in sf.events([body], provider=target) if isinstance(e, sf.BlockDelta)]
        assert [e.text for e in got] == fragments, target  # streamed as the same fragments
        m = sf.fold([body], provider=target)
        assert [(t.index, t.name) for t in m.tool_calls] == [
            (0, "get_weather"),
            (1, "get_local_time"),
        ]
    # OpenAI's own indices: each fragment under its call's tool_calls[].index.
    body, _ = written(c, "openai")
    indices = [
        json.loads(line[6:])["choices"][0]["delta"]["tool_calls"][0]["index"]
        for line in body.decode().split("\n\n")
        if '"tool_calls":[' in line
    ]
    assert indices == [0] * 5 + [1] * 4


@pytest.mark.parametrize(
    ("target", "raw"),
    [
        ("openai", "length"),
        ("mistral", "length"),
        ("anthropic", "max_tokens"),
        ("gemini", "MAX_TOKENS"),
        ("openai-responses", "max_output_tokens"),
    ],
)
def test_finish_reasons_are_the_targets_own(target: ProviderName, raw: str) -> None:
    body, _ = written(case("example/cohere_v2_max_tokens.sse"), target)
    m = sf.fold([body], provider=target)
    assert (m.finish_reason, m.raw_finish_reason) == ("length", raw)


@pytest.mark.parametrize("target", TARGETS)
def test_an_in_stream_error_is_the_targets_error(target: ProviderName) -> None:
    c = case("example/anthropic_overloaded_error.sse")
    _, source_error = c.fold()
    assert isinstance(source_error, sf.StreamError)
    body, _ = written(c, target)
    with pytest.raises(sf.StreamError) as info:
        sf.fold([body], provider=target)
    assert info.value.message == source_error.message
    assert info.value.code == source_error.code
    assert info.value.partial is not None
    assert source_error.partial is not None
    assert info.value.partial.text == source_error.partial.text


def test_an_error_that_is_not_a_stream_error_is_written_with_its_text() -> None:
    w = sf.Writer("anthropic")
    w.write(sf.MessageStart(id="m", model="x"))
    body = w.error(ConnectionResetError("upstream reset")) + w.close()
    with pytest.raises(sf.StreamError, match="upstream reset") as info:
        sf.fold([body], provider="anthropic")
    assert info.value.code == "api_error"
    assert w.error(ValueError("second")) == b""  # one error, once


def test_a_cut_stream_stays_cut() -> None:
    c = case("example/openai_cut_connection.sse")
    for target in TARGETS:
        body, _ = written(c, target)
        with pytest.raises(sf.IncompleteStreamError):
            sf.fold([body], provider=target)


def test_no_signature_is_written_for_another_provider() -> None:
    c = case("example/anthropic_thinking.sse")
    signature = b"EqQBCkYIBRgCKkBsfDemoSignatureOnlyForTheExampleStream=="
    assert signature in c.body
    for target in ("gemini", "openai-responses", "openai", "cohere-v2", "mistral"):
        body, w = written(c, target)
        assert signature not in body, target
        assert w.dropped_by.get("signature") == 1, target
        assert w.dropped >= 1
    # The same provider gets its signature back; with no source named, none is written.
    body, w = written(c, "anthropic")
    assert sf.fold([body], provider="anthropic").blocks[0].signature == signature.decode()
    unnamed = sf.Writer("anthropic")
    events, _ = events_until_error(c)
    assert signature not in unnamed.write_all(events) + unnamed.close()
    assert unnamed.dropped_by == {"signature": 1, "notice": 1}


def test_gemini_thought_signatures_go_back_to_gemini_only() -> None:
    c = case("example/gemini_thinking.sse")
    body, _ = written(c, "gemini")
    signatures = [b.signature for b in sf.fold([body], provider="gemini").blocks]
    assert signatures == [b.signature for b in sf.fold([c.body], provider="gemini").blocks]
    assert signatures[-1] == "CiQBVKhcDemoThoughtSignatureForTheExample=="
    body, w = written(c, "anthropic")
    assert b"CiQBVKhcDemoThoughtSignatureForTheExample" not in body
    assert w.dropped_by["signature"] == 1


def test_what_the_target_cannot_say_is_counted() -> None:
    w = sf.Writer("openai")
    for event in [
        sf.MessageStart(id="c", model="m"),
        sf.StepStart(name="plan"),
        sf.BlockStart(index=0, kind="tool_plan"),
        sf.BlockDelta(index=0, kind="tool_plan", text="I will"),
        sf.Notice(kind="ping"),
    ]:
        w.write(event)
    assert w.dropped == 4
    assert w.dropped_by == {
        "step_start": 1,
        "block:tool_plan": 1,
        "block_delta:tool_plan": 1,
        "notice": 1,
    }


def test_writing_for_a_writer_of_another_name_is_refused() -> None:
    from streamfold._writers.anthropic import AnthropicWriter

    with pytest.raises(ValueError, match="writes 'anthropic', not 'gemini'"):
        AnthropicWriter("gemini")


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_every_writer_writes_its_own_error(name: str) -> None:
    # The base's write_error only raises: each writer the factory makes must define its own.
    cls = WRITERS[name]
    assert cls.write_error is not sf.Writer.write_error
    written_error = cls(name).write_error("overloaded", "try later")
    assert b"try later" in written_error
