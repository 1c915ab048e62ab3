"""The fold's direct text path changes no result: the decoder's (``SSEDecoder.arm``/
``feed_folding``, which folds text frames in Rust, given ``Folder.delta_sink``, and is armed
again within a read after each frame it hands back). Every stream folds to the same message,
or raises the same error with the same partial, as when every text delta is made into an event
and folded; and the path is taken."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import streamfold as sf
from conftest import CAPTURE_PROVIDER, capture_files, capture_id, requires_captures
from streamfold._engine.folder import Folder
from streamfold._engine.pipeline import Pipeline
from streamfold._events import BlockDelta
from streamfold._types import ProviderName

Outcome = tuple[str, Any]


def outcome(chunks: list[bytes], provider: ProviderName) -> Outcome:
    try:
        return "ok", sf.fold(chunks, provider=provider)
    except sf.StreamfoldError as exc:
        return repr(exc), getattr(exc, "partial", None)


def slow_outcome(
    monkeypatch: pytest.MonkeyPatch, chunks: list[bytes], provider: ProviderName
) -> Outcome:
    """The fold with the direct paths refused: every text delta is an event."""
    with monkeypatch.context() as m:
        m.setattr(Folder, "text_buffer", lambda self, choice, index: None)
        return outcome(chunks, provider)


def counting_appender(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the texts that went straight to their block: the frames the decoder's folding
    path read."""
    counts = [0]
    real_catch_up = Pipeline.catch_up

    def catch_up(self: Pipeline) -> None:
        before = self.frames_seen
        real_catch_up(self)
        counts[0] += self.frames_seen - before

    monkeypatch.setattr(Pipeline, "catch_up", catch_up)
    return counts


def split(data: bytes, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    out, at = [], 0
    while at < len(data):
        # Mostly a frame or two per read, as servers send them.
        step = rng.choice([1, 7, 64, 150, 300, 4096])
        out.append(data[at : at + step])
        at += step
    return out


#: How a test reads a stream: whole, in random pieces, or one event per read (as a model
#: server flushes each token: the reads the decoder's folding path takes whole).
READS = ("whole", "split", "per_event")


def read(data: bytes, how: str, seed: int) -> list[bytes]:
    if how == "whole":
        return [data]
    return split(data, seed) if how == "split" else per_frame(data)


# -- generated streams -------------------------------------------------------------------------


def _chat(
    delta: dict[str, Any], finish: str | None = None, logprobs: Any = None, **extra: Any
) -> str:
    choice = {"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish}
    body = {"id": "c1", "object": "chat.completion.chunk", "choices": [choice], **extra}
    return "data: " + json.dumps(body, separators=(",", ":"), ensure_ascii=False) + "\n\n"


#: Text bodies: plain, escaped, broken, multi-byte, empty.
TEXT = st.text(alphabet='ab é😀"\\\n\t\x01 ', max_size=6)

#: One step of an OpenAI stream after its first chunk.
OPENAI_STEP = st.one_of(
    st.tuples(st.just("text"), TEXT),
    st.tuples(st.just("logprobs"), TEXT),
    st.tuples(st.just("refusal"), TEXT),
    st.tuples(st.just("reasoning"), TEXT),
    st.tuples(st.just("call"), TEXT),
    st.tuples(st.just("args"), TEXT),
    st.tuples(st.just("raw"), st.sampled_from(["data: {nope\n\n", ": keep-alive\n\n", "\n"])),
    st.tuples(st.just("error"), st.just("")),
)


def openai_stream(steps: list[tuple[str, str]], finish: bool) -> bytes:
    parts = [_chat({"role": "assistant", "content": ""})]
    calls = 0
    for kind, text in steps:
        if kind in ("text", "refusal"):
            parts.append(_chat({"content" if kind == "text" else "refusal": text}))
        elif kind == "logprobs":
            # A text with its logprobs: never read by a template, so never taken by the
            # direct path, which would lose them.
            logprobs = {"content": [{"token": text, "logprob": -1.0}], "refusal": None}
            parts.append(_chat({"content": text}, logprobs=logprobs))
        elif kind == "reasoning":
            parts.append(_chat({"reasoning_content": text}))
        elif kind == "call":
            call = {"index": calls, "id": f"call_{calls}", "function": {"name": "f"}}
            calls += 1
            parts.append(_chat({"tool_calls": [{**call, "type": "function"}]}))
        elif kind == "args":
            fragment = {"index": max(calls - 1, 0), "function": {"arguments": text}}
            parts.append(_chat({"tool_calls": [fragment]}))
        elif kind == "error":
            parts.append(
                "data: " + json.dumps({"error": {"message": "overloaded", "code": 529}}) + "\n\n"
            )
        else:
            parts.append(text)
    if finish:
        parts.append(_chat({}, "stop"))
        parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def _anthropic(name: str, body: dict[str, Any], pad: str = "") -> str:
    data = json.dumps({"type": name, **body}, separators=(",", ":"), ensure_ascii=False)
    return f"event: {name}\ndata: {data[:-1]}{pad}}}\n\n"


ANTHROPIC_STEP = st.one_of(
    st.tuples(st.just("text"), TEXT),
    st.tuples(st.just("thinking"), TEXT),
    st.tuples(st.just("json"), TEXT),
    st.tuples(st.just("stop"), st.just("")),
    st.tuples(st.just("ping"), st.just("")),
    st.tuples(st.just("raw"), st.sampled_from(["event: content_block_delta\ndata: {x\n\n"])),
)


def anthropic_stream(steps: list[tuple[str, str]], finish: bool, pad: str) -> bytes:
    message = {"id": "m", "model": "c", "role": "assistant", "usage": {"input_tokens": 1}}
    parts = [_anthropic("message_start", {"message": message})]
    index, open_kind = -1, None
    for kind, text in steps:
        if kind in ("text", "thinking", "json"):
            block_type = {"text": "text", "thinking": "thinking", "json": "tool_use"}[kind]
            if open_kind != block_type:
                if open_kind is not None:
                    parts.append(_anthropic("content_block_stop", {"index": index}))
                index += 1
                block: dict[str, Any] = {"type": block_type}
                if block_type == "tool_use":
                    block.update(id=f"toolu_{index}", name="f", input={})
                else:
                    block[block_type] = ""
                parts.append(
                    _anthropic("content_block_start", {"index": index, "content_block": block})
                )
                open_kind = block_type
            field, delta_type = {
                "text": ("text", "text_delta"),
                "thinking": ("thinking", "thinking_delta"),
                "json": ("partial_json", "input_json_delta"),
            }[kind]
            delta = {"type": delta_type, field: text}
            parts.append(_anthropic("content_block_delta", {"index": index, "delta": delta}, pad))
        elif kind == "stop" and open_kind is not None:
            parts.append(_anthropic("content_block_stop", {"index": index}))
            open_kind = None
        elif kind == "ping":
            parts.append(_anthropic("ping", {}))
        elif kind == "raw":
            parts.append(text)
    if finish:
        if open_kind is not None:
            parts.append(_anthropic("content_block_stop", {"index": index}))
        parts.append(_anthropic("message_delta", {"delta": {"stop_reason": "end_turn"}}))
        parts.append(_anthropic("message_stop", {}))
    return "".join(parts).encode()


def _texts(n: int, rng: random.Random) -> Iterator[str]:
    for _ in range(n):
        yield rng.choice(["a", " word", " é", " 😀", ' "q"', "\\n", " b"])


@given(
    st.lists(OPENAI_STEP, max_size=30),
    st.booleans(),
    st.integers(0, 2**16),
    st.sampled_from(READS),
    st.sampled_from(["openai", "auto"]),
)
def test_openai_folds_alike(
    steps: list[tuple[str, str]], finish: bool, seed: int, reads: str, provider: ProviderName
) -> None:
    # Runs of plain text first, so templates are learned and the direct path is live. Read
    # whole, the events made before a text in the same read are folded first.
    rng = random.Random(seed)
    head = [("text", t) for t in _texts(rng.randint(0, 6), rng)]
    data = openai_stream(head + steps, finish)
    chunks = read(data, reads, seed)
    with pytest.MonkeyPatch.context() as m:
        assert outcome(chunks, provider) == slow_outcome(m, chunks, provider)
    status, message = outcome(chunks, provider)
    if status == "ok":
        # Every scored text's tokens are on its text block, in order: none lost to the path.
        want = [t for k, t in steps if k == "logprobs" and t]
        got = [e["token"] for b in message.blocks for e in b.extra.get("logprobs", [])]
        assert got == want


@given(
    steps=st.lists(ANTHROPIC_STEP, max_size=30),
    finish=st.booleans(),
    pad=st.sampled_from(["", "  "]),
    seed=st.integers(0, 2**16),
    reads=st.sampled_from(READS),
    provider=st.sampled_from(["anthropic", "auto"]),
)
def test_anthropic_folds_alike(
    *,
    steps: list[tuple[str, str]],
    finish: bool,
    pad: str,
    seed: int,
    reads: str,
    provider: ProviderName,
) -> None:
    rng = random.Random(seed)
    head = [("text", t) for t in _texts(rng.randint(0, 6), rng)]
    data = anthropic_stream(head + steps, finish, pad)
    chunks = read(data, reads, seed)
    with pytest.MonkeyPatch.context() as m:
        assert outcome(chunks, provider) == slow_outcome(m, chunks, provider)


@pytest.mark.parametrize("reads", READS)
@pytest.mark.parametrize("auto", [False, True], ids=["named", "auto"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_direct_path_is_taken(
    provider: ProviderName, auto: bool, reads: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    words = [f" w{i}" for i in range(200)]
    if provider == "openai":
        data = openai_stream([("text", w) for w in words], finish=True)
    else:
        data = anthropic_stream([("text", w) for w in words], finish=True, pad="")
    if auto:
        provider = "auto"
    reference = slow_outcome(monkeypatch, [data], provider)
    counts = counting_appender(monkeypatch)
    got = outcome(read(data, reads, 1), provider)
    assert got == reference
    assert got[1].text == "".join(words)
    # All but the deltas read before a template was learned went straight to the block.
    assert counts[0] > 150


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_decoder_folds_reads_of_one_event(
    provider: ProviderName, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One event per read: past the first deltas every text frame is folded in Rust (no
    appender is asked for it), and the counts the errors quote (frames, bytes) still add up."""
    words = [f" w{i}" for i in range(100)]
    if provider == "openai":
        data = openai_stream([("text", w) for w in words], finish=False)
    else:
        data = anthropic_stream([("text", w) for w in words], finish=False, pad="")
    chunks = per_frame(data)
    folded = [0]
    real_catch_up = Pipeline.catch_up

    def catch_up(self: Pipeline) -> None:
        before = self.frames_seen
        real_catch_up(self)
        folded[0] += self.frames_seen - before

    reference = slow_outcome(monkeypatch, chunks, provider)
    monkeypatch.setattr(Pipeline, "catch_up", catch_up)
    got = outcome(chunks, provider)
    assert folded[0] > 90
    # Cut before the terminal event: the same error (its byte count) and the same partial.
    assert got == reference
    assert got[0].startswith("IncompleteStreamError")
    assert f"after {len(data)} bytes" in got[0]
    assert got[1].text == "".join(words)


def per_frame(data: bytes) -> list[bytes]:
    return [frame + b"\n\n" for frame in data.split(b"\n\n") if frame]


@pytest.mark.parametrize("provider", ["openai", "auto"])
def test_text_after_another_block_goes_to_its_new_block(
    provider: ProviderName, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Text, a refusal, text again: the same template reads both runs of text, but the second
    run belongs to a new block, so the path armed for the first must not survive the events.
    Runs of 20: ``auto`` chooses the provider (and the path can be armed) at its 16th frame."""
    first = [("text", f" a{i}") for i in range(20)]
    second = [("text", f" b{i}") for i in range(20)]
    chunks = per_frame(openai_stream([*first, ("refusal", " no"), *second], finish=True))
    reference = slow_outcome(monkeypatch, chunks, provider)
    counts = counting_appender(monkeypatch)
    got = outcome(chunks, provider)
    assert got == reference
    texts = ["".join(t for _, t in first), " no", "".join(t for _, t in second)]
    assert [b.text for b in got[1].blocks] == texts
    assert counts[0] >= 20


@pytest.mark.parametrize("reads", READS)
@pytest.mark.parametrize("provider", ["openai", "anthropic", "auto"])
def test_events_make_every_delta(
    provider: ProviderName, reads: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``events()`` never uses a fold's sink: each text fragment is a ``BlockDelta``, made in
    Rust by the decoder's events path (``arm_events``) once a template reads it, the same
    event the provider makes, frame and all."""
    words = [f" w{i}" for i in range(50)]
    if provider == "anthropic":
        data = anthropic_stream([("text", w) for w in words], finish=True, pad="")
    else:
        data = openai_stream([("text", w) for w in words], finish=True)
    sinks = [0]
    monkeypatch.setattr(Folder, "text_buffer", lambda *_: sinks.__setitem__(0, 1))
    chunks = read(data, reads, 2)
    made = [0]
    real_catch_up = Pipeline.catch_up

    def catch_up(self: Pipeline) -> None:
        before = self.frames_seen
        real_catch_up(self)
        made[0] += self.frames_seen - before

    with monkeypatch.context() as m:
        m.setattr(Pipeline, "catch_up", catch_up)
        got = list(sf.events(chunks, provider=provider))
    if reads == "per_event":
        assert made[0] > 30  # all but the deltas before a template was learned (or auto chose)
    deltas = [e for e in got if isinstance(e, BlockDelta)]
    assert [d.text for d in deltas] == words
    assert sinks[0] == 0
    # The events and their frames are the provider's own: those of a provider that reads
    # every frame with no template.
    slow = Pipeline(provider)
    slow.provider.templates = False
    want = [e for c in chunks for e in slow.feed(c)] + slow.close()
    assert got == want
    assert [e.raw for e in got] == [e.raw for e in want]


@requires_captures
@pytest.mark.parametrize("path", capture_files(), ids=capture_id)
def test_captures_fold_alike(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    provider = CAPTURE_PROVIDER[path.parent.name]
    data = path.read_bytes()
    for chunks in ([data], split(data, 3)):
        assert outcome(chunks, provider) == slow_outcome(monkeypatch, chunks, provider)


@requires_captures
@pytest.mark.parametrize("whole", [False, True], ids=["reads", "whole"])
@pytest.mark.parametrize("provider", ["openai-responses", "auto"])
def test_the_direct_path_is_taken_on_responses(
    provider: ProviderName, whole: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 654 deltas of reasoning summary and text: those read by template go to their block.
    path = next(p for p in capture_files() if p.stem == "reasoning_summary")
    data = path.read_bytes()
    reference = slow_outcome(monkeypatch, [data], provider)
    counts = counting_appender(monkeypatch)
    got = outcome([data] if whole else split(data, 1), provider)
    assert got == reference
    assert counts[0] > 500


def _argument_stream(provider: ProviderName, fragments: list[str]) -> bytes:
    if provider == "openai":
        steps = [("call", ""), *(("args", f) for f in fragments)]
        return openai_stream(steps, finish=True)
    return anthropic_stream([("json", f) for f in fragments], finish=True, pad="")


@pytest.mark.parametrize("broken", [False, True], ids=["valid", "refused"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_decoder_folds_argument_fragments(
    provider: ProviderName, broken: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool call's argument fragments, one event per read, go from the decoder to the call's
    accumulator; one it refuses (text that can never be JSON) leaves the call's text whole
    and its error, exactly as when each fragment is an event."""
    fragments = ['{"path": "', *(f"a{i}/" for i in range(60)), '"}']
    if broken:
        fragments[30:30] = ['"}}', "x", "y"]  # the value closes, then bytes JSON never takes
    chunks = per_frame(_argument_stream(provider, fragments))
    reference = slow_outcome(monkeypatch, chunks, provider)
    counts = counting_appender(monkeypatch)
    got = outcome(chunks, provider)
    assert got == reference
    assert got[0] == "ok"
    (call,) = got[1].tool_calls
    assert call.arguments_json == "".join(fragments)
    assert (call.error is not None) == broken
    assert counts[0] > 20


def _folded_frames(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    folded = [0]
    real_catch_up = Pipeline.catch_up

    def catch_up(self: Pipeline) -> None:
        before = self.frames_seen
        real_catch_up(self)
        folded[0] += self.frames_seen - before

    monkeypatch.setattr(Pipeline, "catch_up", catch_up)
    return folded


@pytest.mark.parametrize("whole", [False, True], ids=["16KiB", "whole"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_decoder_folds_big_reads_too(provider: ProviderName, whole: bool) -> None:
    """Reads of many frames (16 KiB, or the whole stream as one): the decoder folds the text
    frames of every read, the first one too, since it hands the fold each frame it cannot
    fold (the first, before a template is learned) and the fold arms it again within the
    read."""
    words = [f" w{i}" for i in range(2000)]
    if provider == "openai":
        data = openai_stream([("text", w) for w in words], finish=True)
    else:
        data = anthropic_stream([("text", w) for w in words], finish=True, pad="")
    chunks = [data] if whole else [data[i : i + 16 * 1024] for i in range(0, len(data), 16 * 1024)]
    with pytest.MonkeyPatch.context() as m:
        folded = _folded_frames(m)
        message = sf.fold(chunks, provider=provider)
    assert message.text == "".join(words)
    # All but those read before a template was learned, and the rest of the step they came in.
    assert folded[0] >= len(words) - 8


@pytest.mark.parametrize("whole", [False, True], ids=["16KiB", "whole"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_decoder_arms_again_within_a_read(
    provider: ProviderName, whole: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A frame the path cannot fold every few text frames (Anthropic's ``ping``, an OpenAI
    text with log probabilities): in a read of many frames the fold handles it and arms the
    path again for the frames after it, so the text frames are all folded in Rust, and the
    message is the one every delta folded as an event makes."""
    steps: list[tuple[str, str]] = []
    for i in range(600):
        steps.append(("text", f" w{i}"))
        if i % 7 == 6:
            steps.append(("ping", "") if provider == "anthropic" else ("logprobs", f" s{i}"))
    if provider == "openai":
        data = openai_stream(steps, finish=True)
    else:
        data = anthropic_stream(steps, finish=True, pad="")
    chunks = [data] if whole else [data[i : i + 16 * 1024] for i in range(0, len(data), 16 * 1024)]
    reference = slow_outcome(monkeypatch, chunks, provider)
    with monkeypatch.context() as m:
        folded = _folded_frames(m)
        got = outcome(chunks, provider)
    assert got == reference
    assert got[0] == "ok"
    assert got[1].text == "".join(t for _, t in steps)
    assert folded[0] >= 600 - 8


def _responses_with_a_repeat(data: bytes) -> bytes:
    """The capture with one of its text deltas sent twice (the same ``sequence_number``), in
    the middle of a run of them."""
    frames = [f + b"\n\n" for f in data.split(b"\n\n") if f]
    deltas = [k for k, f in enumerate(frames) if b"event: response.output_text.delta" in f]
    k = deltas[len(deltas) // 2]
    return b"".join([*frames[: k + 1], frames[k], *frames[k + 1 :]])


@requires_captures
@pytest.mark.parametrize("reads", READS)
def test_the_decoder_checks_responses_numbers(reads: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenAI Responses' deltas are folded in Rust only while their ``sequence_number``
    increases from the provider's cursor, which the path moves on: a delta sent twice is the
    provider's to warn about, as when each delta is an event."""
    path = next(p for p in capture_files() if p.stem == "reasoning_summary")
    data = _responses_with_a_repeat(path.read_bytes())
    chunks = read(data, reads, 5)
    reference = slow_outcome(monkeypatch, chunks, "openai-responses")
    with monkeypatch.context() as m:
        folded = _folded_frames(m)
        got = outcome(chunks, "openai-responses")
    assert got == reference
    assert any("sequence_number" in w for w in got[1].warnings)
    assert folded[0] > 400
