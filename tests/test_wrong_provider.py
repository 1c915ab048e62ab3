"""A stream given the wrong ``provider=``: a ``ProtocolError`` naming the provider its frames
read as, raised at the frame that tells it (not a stream cut short at its end), whatever the
size of that frame and however the bytes were split; and a provider name that is a near miss
gets a "did you mean"."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import streamfold as sf
from streamfold._types import ProviderName
from test_fold_streams import CASES


def gemini_big_first_frame(size: int = 20_000) -> bytes:
    """A Gemini stream whose first frame is over 4 KB: a large ``thoughtSignature``."""
    part = {"text": "Hi", "thoughtSignature": "A" * size}
    first = {"candidates": [{"content": {"role": "model", "parts": [part]}}]}
    last = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "!"}]}, "finishReason": "STOP"}
        ]
    }
    return b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in (first, last))


#: (stream, the provider it is) for the misread streams below.
STREAMS: dict[str, tuple[bytes, ProviderName]] = {
    "anthropic": (CASES["anthropic_tool_use"].body, "anthropic"),
    "openai": (CASES["openai_text"].body, "openai"),
    "gemini-big-frame": (gemini_big_first_frame(), "gemini"),
    "cohere-v2": (CASES["cohere_v2_tools"].body, "cohere-v2"),
    "cohere-v1": (CASES["cohere_v1_text"].body, "cohere-v1"),
    "responses": (CASES["responses_completed_with_call"].body, "openai-responses"),
}
#: (stream, the provider named) pairs that misread it.
PAIRS: list[tuple[str, ProviderName]] = [
    (key, wrong)
    for key, (_, actual) in STREAMS.items()
    for wrong in ("openai", "anthropic", "gemini", "cohere-v2", "cohere-v1", "openai-responses")
    if wrong != actual
]


def _error(chunks: list[bytes], provider: ProviderName) -> sf.StreamfoldError:
    with pytest.raises(sf.StreamfoldError) as info:
        list(sf.events(chunks, provider=provider))
    return info.value


@pytest.mark.parametrize(("key", "wrong"), PAIRS, ids=[f"{k}-as-{w}" for k, w in PAIRS])
def test_another_providers_stream_is_a_protocol_error_naming_it(
    key: str, wrong: ProviderName
) -> None:
    body, actual = STREAMS[key]
    error = _error([body], wrong)
    assert isinstance(error, sf.ProtocolError), repr(error)
    assert f"read as provider={actual!r}" in str(error)
    assert f"is provider={wrong!r} right?" in str(error)
    assert error.provider == wrong


@pytest.mark.parametrize(("key", "wrong"), PAIRS, ids=[f"{k}-as-{w}" for k, w in PAIRS])
def test_the_error_text_does_not_depend_on_the_split(key: str, wrong: ProviderName) -> None:
    body = STREAMS[key][0]
    whole = _error([body], wrong)
    pieces = _error([body[i : i + 1] for i in range(len(body))], wrong)
    assert str(pieces) == str(whole)
    assert type(pieces) is type(whole)
    assert getattr(pieces, "position", None) == getattr(whole, "position", None)


@given(st.data())
def test_the_error_text_does_not_depend_on_any_split(data: st.DataObject) -> None:
    key, wrong = data.draw(st.sampled_from(PAIRS))
    body = STREAMS[key][0]
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(body) - 1), max_size=30))))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert str(_error(chunks, wrong)) == str(_error([body], wrong))


def test_the_error_comes_at_the_frame_that_tells_not_at_the_end() -> None:
    body = CASES["anthropic_tool_use"].body
    frames = [block + b"\n\n" for block in body.split(b"\n\n") if block]

    def endless() -> Iterator[bytes]:
        yield frames[0]
        while True:  # a live stream that is not over: the error must not wait for its end
            yield b": keep-alive\n\n"

    with pytest.raises(sf.ProtocolError, match="read as provider='anthropic'") as info:
        sf.fold(endless(), provider="openai")
    assert info.value.position == 0
    assert info.value.partial is not None


def test_a_gemini_first_frame_over_4_kb_is_still_named() -> None:
    body = gemini_big_first_frame(100_000)
    for wrong in ("openai", "anthropic", "cohere-v1"):
        error = _error([body], wrong)
        assert isinstance(error, sf.ProtocolError)
        assert "read as provider='gemini'" in str(error), (wrong, str(error))


def test_the_right_provider_reads_as_before() -> None:
    for key, (body, actual) in STREAMS.items():
        named, auto = sf.fold([body], provider=actual), sf.fold([body], provider="auto")
        assert named.warnings == [] and named.complete, key
        assert (named.text, named.tool_calls) == (auto.text, auto.tool_calls), key


@pytest.mark.parametrize(
    ("name", "meant"),
    [
        ("Anthropic", "anthropic"),
        ("openai_responses", "openai-responses"),
        ("OpenAI-Chat", "openai-chat"),
        ("cohere_v1", "cohere-v1"),
        ("antropic", "anthropic"),
        ("gemni", "gemini"),
    ],
)
def test_a_near_miss_name_gets_a_did_you_mean(name: str, meant: str) -> None:
    with pytest.raises(ValueError, match=rf"did you mean {meant!r}\?") as info:
        sf.fold([b""], provider=name)  # type: ignore[arg-type]  # not a provider's name
    assert "expected one of" in str(info.value)


@pytest.mark.parametrize("name", ["xyz", "", "http"])
def test_a_name_close_to_none_gets_no_guess(name: Any) -> None:
    with pytest.raises(ValueError, match="unknown provider") as info:
        sf.fold([b""], provider=name)
    assert "did you mean" not in str(info.value)
