"""``data: [DONE]`` in the formats that compatible hosts imitate: the Chat Completions end
marker, which OpenRouter (and other hosts) add after an OpenAI Responses stream's
``response.completed``, an Anthropic stream's ``message_stop`` or a Gemini stream's last
chunk. It is the end of the data, never a ``ProtocolError``; the outcome stays the terminal
event's."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import streamfold as sf
from streamfold._types import ProviderName

from . import test_anthropic, test_gemini, test_openai_responses
from .helpers import run, split_at

DONE = b"data: [DONE]\n\n"

#: provider -> a whole stream of it and its text.
STREAMS: dict[ProviderName, tuple[bytes, str | None]] = {
    "openai-responses": (test_openai_responses.BASIC, "The capital is Paris."),
    "anthropic": (test_anthropic.BASIC, "Hi there"),
    "gemini": (test_gemini.BASIC, sf.fold([test_gemini.BASIC], provider="gemini").text),
}


@pytest.mark.parametrize("provider", sorted(STREAMS))
@pytest.mark.parametrize("strict", [False, True], ids=["lenient", "strict"])
def test_done_after_the_terminal_event_ends_the_stream(
    provider: ProviderName, strict: bool
) -> None:
    stream, text = STREAMS[provider]
    message = sf.fold([stream + DONE], provider=provider, strict=strict)
    assert message.complete
    assert message.text == text
    assert message == sf.fold([stream], provider=provider, strict=strict)
    assert run(stream + DONE, provider, strict=strict).warnings == []


@pytest.mark.parametrize("provider", sorted(STREAMS))
def test_done_is_read_under_auto(provider: ProviderName) -> None:
    stream, text = STREAMS[provider]
    message = sf.fold([stream + DONE], provider="auto")
    assert message.complete and message.text == text


# Gemini has no terminal event of its own: its finishReason decides.
@pytest.mark.parametrize("provider", ["anthropic", "openai-responses"])
def test_done_before_the_terminal_event_is_a_stream_cut_short(provider: ProviderName) -> None:
    stream, _ = STREAMS[provider]
    cut = stream[: stream.rindex(b"data: ")]  # the terminal event's data line dropped
    with pytest.raises(sf.IncompleteStreamError):
        sf.fold([cut + DONE], provider=provider)


@pytest.mark.parametrize("provider", sorted(STREAMS))
def test_data_after_done_and_a_second_done_warn(provider: ProviderName) -> None:
    stream, _ = STREAMS[provider]
    result = run(stream + DONE + DONE, provider)
    assert result.error is None
    assert any("second [DONE]" in w for w in result.warnings)
    with pytest.raises(sf.ProtocolError, match=r"second \[DONE\]"):
        sf.fold([stream + DONE + DONE], provider=provider, strict=True)


@pytest.mark.parametrize("provider", sorted(STREAMS))
def test_an_event_after_done_warns(provider: ProviderName) -> None:
    stream, _ = STREAMS[provider]
    last = stream[stream.rindex(b"data: ", 0, len(stream) - 1) :]
    result = run(stream + DONE + last, provider)
    assert any("after [DONE]" in w for w in result.warnings), result.warnings


@given(st.data())
def test_done_marker_any_split(data: st.DataObject) -> None:
    provider = data.draw(st.sampled_from(sorted(STREAMS)))
    stream = STREAMS[provider][0] + DONE
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=40))
    whole = run(stream, provider)
    split = run(split_at(stream, cuts), provider)
    assert split.events == whole.events
    assert whole.error is None and split.error is None
