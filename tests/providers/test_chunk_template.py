"""The unparsed reading of common chunks (``providers/_chunk_template.py``) never changes a
result: every stream gives the same events, or the same error, with templates as without."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import streamfold as sf
from providers.chunk_template_reference import template_text
from streamfold._core import SSEDecoder
from streamfold._engine.pipeline import Pipeline
from streamfold._providers._chunk_template import ChunkTemplate, NumberedTemplate, decode_body
from streamfold._providers.anthropic import Anthropic
from streamfold._providers.base import Provider
from streamfold._providers.openai_chat import Mistral, OpenAIChat
from streamfold._providers.openai_responses import LEARN_AFTER, OpenAIResponses

from .helpers import Run, captures


def _run(stream: bytes, provider: Provider) -> Run:
    pipeline = Pipeline(provider)
    events = pipeline.feed(stream)
    if pipeline.pending is None:
        events += pipeline.close()
    error = pipeline.pending
    return Run(events, error)


def both(stream: bytes, make: type[Provider]) -> tuple[Run, Run]:
    """The stream read with templates, and read with every payload parsed."""
    fast = make()
    slow = make()
    slow.templates = False  # the slow run never learns a template
    return _run(stream, fast), _run(stream, slow)


def assert_same(fast: Run, slow: Run) -> None:
    assert fast.events == slow.events
    assert repr(fast.error) == repr(slow.error)


#: Characters that make JSON string bodies valid, escaped, broken or structural.
BODY = st.text(alphabet='ab é😀"\\,}]:{nu0/\t\n\x01', min_size=0, max_size=10)


def test_decode_body() -> None:
    assert decode_body("plain text é") == "plain text é"
    assert decode_body('say \\"hi\\"\\n') == 'say "hi"\n'
    assert decode_body("") is None
    assert decode_body('a"b') is None  # an unescaped quote ends the string
    assert decode_body("tab\there") is None  # raw control characters are not JSON
    assert decode_body("odd\\") is None  # escapes the closing quote
    assert decode_body("\\u00e9") is None  # left to the parser


def _openai(body: str, *, padding: str | None = None, key: str = "content") -> str:
    """A Chat Completions payload whose varying string body is ``body``, inserted raw."""
    delta = (
        '{"content":"@"}'
        if key == "content"
        else '{"tool_calls":[{"index":0,"function":{"arguments":"@"}}]}'
    )
    tail = "" if padding is None else f',"obfuscation":"{padding}"'
    payload = (
        '{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
        f'"delta":{delta},"logprobs":null,"finish_reason":null}}]{tail}}}'
    )
    return payload.replace("@", body)


def _frames(*payloads: str) -> bytes:
    return "".join(f"data: {p}\n\n" for p in payloads).encode()


START = '{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}'
CALL = (
    '{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
    '"function":{"name":"f","arguments":""}}]}}]}'
)

ANTHROPIC_START = (
    'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"c",'
    '"role":"assistant","usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
    "event: content_block_start\n"
    'data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'
    "\n\n"
)


@given(st.lists(BODY, min_size=1, max_size=12), st.sampled_from([None, "Ab9", ""]))
def test_openai_text_bodies_read_alike(bodies: list[str], padding: str | None) -> None:
    payloads = [_openai(b, padding=padding) for b in ["learn", "again", *bodies]]
    fast, slow = both(_frames(START, *payloads, "[DONE]"), OpenAIChat)
    assert_same(fast, slow)


@given(st.lists(BODY, min_size=1, max_size=12))
def test_openai_argument_bodies_read_alike(bodies: list[str]) -> None:
    payloads = [_openai(b, key="arguments") for b in ["learn", "again", *bodies]]
    fast, slow = both(_frames(START, CALL, *payloads, "[DONE]"), OpenAIChat)
    assert_same(fast, slow)


@given(st.lists(st.text(alphabet='aZ9_-"\\ }', max_size=5), min_size=1, max_size=8))
def test_padding_values_read_alike(paddings: list[str]) -> None:
    payloads = [_openai("word", padding=p) for p in ["Ab1", "Cd2", *paddings]]
    fast, slow = both(_frames(START, *payloads), OpenAIChat)
    assert_same(fast, slow)


@given(st.lists(st.tuples(BODY, st.text(" \t", max_size=4)), min_size=1, max_size=12))
def test_anthropic_bodies_and_padding_read_alike(items: list[tuple[str, str]]) -> None:
    deltas = "".join(
        "event: content_block_delta\n"
        'data: {"type":"content_block_delta","index":0,'
        f'"delta":{{"type":"text_delta","text":"{body}"}}{spaces}}}\n\n'
        for body, spaces in [("learn", "   "), ("again", " "), ("third", ""), *items]
    )
    fast, slow = both((ANTHROPIC_START + deltas).encode(), Anthropic)
    assert_same(fast, slow)


@given(st.lists(BODY, min_size=1, max_size=12))
def test_learning_from_escaped_bodies_reads_alike(bodies: list[str]) -> None:
    # Argument fragments with quotes from the start: the template is learned from one.
    first = ['{\\"ci', 'ty\\":', ' \\"Pa\\\\ris']
    payloads = [_openai(b, key="arguments") for b in [*first, *bodies]]
    fast, slow = both(_frames(START, CALL, *payloads, "[DONE]"), OpenAIChat)
    assert_same(fast, slow)


def test_a_template_is_learned_from_an_escaped_fragment() -> None:
    # Tool-call arguments are JSON inside JSON: nearly every fragment holds a quote. The
    # template is learned from such a fragment and reads the next ones without a parse.
    stream = _frames(START, CALL, _openai('{\\"city\\": \\"', key="arguments"))
    provider = OpenAIChat()
    _run(stream, provider)
    template = provider._template
    assert isinstance(template, ChunkTemplate) and template.block >= 0
    later = SSEDecoder().feed(_frames(_openai('Paris\\"}', key="arguments")))[0]
    assert template.cut(later) == 'Paris"}'


def test_templates_are_used() -> None:
    stream = _frames(START, *(_openai(f"w{i}") for i in range(4)))
    provider = OpenAIChat()
    _run(stream, provider)
    template = provider._template
    assert isinstance(template, ChunkTemplate)
    assert template_text(template, _openai("new words")) == "new words"
    assert (
        template_text(template, _openai('a","x":"b')) is None
    )  # structure, not text: parsed instead


def test_mistral_padding_is_learned() -> None:
    chunk = {"id": "m", "choices": [{"index": 0, "delta": {"content": "@"}}], "p": "abc"}
    payloads = [json.dumps(chunk, separators=(",", ":")).replace("@", w) for w in "xyz"]
    provider = Mistral()
    _run(_frames(START, *payloads), provider)
    template = provider._template
    assert template is not None
    other: dict[str, Any] = {**chunk, "p": "abcdefgh"}
    assert (
        template_text(template, json.dumps(other, separators=(",", ":")).replace("@", "ok")) == "ok"
    )


@pytest.mark.parametrize("make", [OpenAIChat, Mistral])
def test_a_template_never_outlives_a_finished_choice(make: type[Provider]) -> None:
    payloads = [_openai(w) for w in ("a", "b", "c")]
    finish = '{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}'
    fast, slow = both(_frames(START, *payloads, finish, _openai("late"), "[DONE]"), make)
    assert_same(fast, slow)
    assert len(fast.warnings) == 1
    assert fast.error is None
    assert "late" not in "".join(e.text for e in fast.of(sf.BlockDelta))


def test_a_new_call_on_the_same_index_takes_the_fragments() -> None:
    second = CALL.replace("call_1", "call_2").replace('"name":"f"', '"name":"g"')
    payloads = [_openai(b, key="arguments") for b in ("a", "b", "c")]
    stream = _frames(START, CALL, *payloads, second, *payloads, "[DONE]")
    fast, slow = both(stream, OpenAIChat)
    assert_same(fast, slow)
    texts: dict[int, str] = {}
    for event in fast.of(sf.BlockDelta):
        texts[event.index] = texts.get(event.index, "") + event.text
    assert list(texts.values()) == ["abc", "abc"]


def _qwen(body: str, *, index: int = 0, call_id: str = "", name: str = "") -> str:
    """An argument fragment as Alibaba Qwen/DashScope sends it (``"id": ""``, ``"name": ""``
    after the first), its body inserted raw."""
    entry = (
        f'{{"index":{index},"id":"{call_id}","type":"function",'
        f'"function":{{"name":"{name}","arguments":"@"}}}}'
    )
    return (
        _openai("@", key="arguments")
        .replace('{"index":0,"function":{"arguments":"@"}}', entry)
        .replace("@", body)
    )


@pytest.mark.parametrize("make", [OpenAIChat, Mistral])
@given(bodies=st.lists(BODY, min_size=1, max_size=12))
def test_empty_id_fragments_read_alike(make: type[Provider], bodies: list[str]) -> None:
    payloads = [_qwen(b) for b in ["learn", "again", *bodies]]
    fast, slow = both(_frames(START, CALL, *payloads, "[DONE]"), make)
    assert_same(fast, slow)
    assert len(fast.of(sf.BlockStart)) == 1


def test_a_template_is_learned_from_empty_id_fragments_and_a_new_id_does_not_fit() -> None:
    provider = OpenAIChat()
    _run(_frames(START, CALL, _qwen("a"), _qwen("b")), provider)
    template = provider._template
    assert isinstance(template, ChunkTemplate) and template.block >= 0
    later, new_call = SSEDecoder().feed(_frames(_qwen("c"), _qwen("c", call_id="call_2")))
    assert template.cut(later) == "c"
    assert template.cut(new_call) is None and template.read(new_call.data_bytes) is None


@pytest.mark.parametrize("make", [OpenAIChat, Mistral])
def test_interleaved_empty_id_calls_and_a_reused_index_read_alike(make: type[Provider]) -> None:
    second = _qwen("", index=1, call_id="call_2", name="g")
    third = _qwen('{\\"x\\":', call_id="call_3", name="h")  # a new call on index 0
    fragments = [_qwen(f"a{k}", index=k % 2) for k in range(12)]
    finish = '{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}'
    stream = _frames(START, CALL, second, *fragments, third, *fragments[:4], finish, "[DONE]")
    fast, slow = both(stream, make)
    assert_same(fast, slow)
    assert fast.error is None and fast.warnings == []
    if make is Mistral:
        return  # Mistral keeps an index's fragments for its first call: checked above alike
    texts: dict[int, str] = {}
    for event in fast.of(sf.BlockDelta):
        texts[event.index] = texts.get(event.index, "") + event.text
    assert list(texts.values()) == ["a0a2a4a6a8a10", "a1a3a5a7a9a11a1a3", '{"x":a0a2']


@pytest.mark.parametrize(("make", "calls"), [(OpenAIChat, 1), (Mistral, 4)])
def test_fragments_that_repeat_an_id_read_alike(make: type[Provider], calls: int) -> None:
    # Mistral takes every entry with an id for a new call: a template learned from one would
    # add the next ones to the first call. OpenAI continues the call: one call either way.
    payloads = [_qwen(b, call_id="call_1") for b in ["{", "a", "b", "c"]]
    fast, slow = both(_frames(START, *payloads, "[DONE]"), make)
    assert_same(fast, slow)
    assert len(fast.of(sf.BlockStart)) == calls


def _learned(padding: str | None) -> ChunkTemplate:
    provider = OpenAIChat()
    _run(_frames(START, *(_openai(f"w{i}", padding=padding) for i in range(3))), provider)
    template = provider._template
    assert isinstance(template, ChunkTemplate)
    return template


def _text_and_read(template: ChunkTemplate, frame: Any) -> tuple[str | None, str | None, bool]:
    """``text`` of the frame's ``str``, ``read`` of its bytes, and whether those are UTF-8:
    ``read`` answers as ``text`` does, or leaves invalid UTF-8 to the parser (``None``)."""
    want = template_text(template, frame.data)
    got = template.read(frame.data_bytes)
    try:
        frame.data_bytes.decode()
    except UnicodeDecodeError:
        assert got in (None, want)
        return want, got, False
    assert got == want
    return want, got, True


#: Payload bytes around a body: valid UTF-8, broken sequences, and the template's own bytes.
RAW_BODY = st.lists(
    st.one_of(
        BODY.map(str.encode),
        st.sampled_from([b"\xff", b"\xc3", b"\xe2\x80", b"\xed\xa0\x80", b"\xe2\x80\xa8"]),
    ),
    max_size=4,
).map(b"".join)


@given(RAW_BODY, st.sampled_from([None, "Ab9", "é1", "a\xff"]))
def test_reading_bytes_agrees_with_reading_text(body: bytes, padding: str | None) -> None:
    """``read`` (the payload's bytes) and ``cut`` (the frame, in Rust) answer as ``text`` does
    on the decoded payload, or leave the payload to the parser (``None``) when its bytes are
    not valid UTF-8; ``cut`` answers as ``text`` does for plain bodies and for escaped ones
    without a ``\\u`` escape, and may leave the rest to the parser."""
    template = _learned(None if padding is None else "Xy1")
    payload = _openai("@", padding=padding).encode().replace(b"@", body)
    if padding == "a\xff":
        payload = payload.replace("a\xff".encode(), b"a\xff")
    frames = SSEDecoder().feed(b"data: " + payload + b"\n\n")
    assert len(frames) == 1
    frame = frames[0]
    want, got, _valid = _text_and_read(template, frame)
    cut = template.cut
    assert cut(frame) in (None, want)
    # Plain means the body on the wire has no escape (``\\/`` decodes to a plain ``/``).
    plain = want is not None and b"\\" not in body and '"' not in want and want.isprintable()
    if plain and got is not None:
        assert cut(frame) == want
    # Escaped bodies (tool-call arguments are JSON inside JSON) are decoded in Rust too,
    # except ``\\u`` escapes, which are left to the parser.
    if got is not None and b"\\" in body and b"\\u" not in body:
        assert cut(frame) == want


def _anthropic(body: str, spaces: str) -> str:
    delta = f'{{"type":"text_delta","text":"{body}"}}'
    return f'{{"type":"content_block_delta","index":0,"delta":{delta}{spaces}}}'


@given(RAW_BODY, st.text(" ", max_size=4), st.sampled_from(["", "x", "}"]))
def test_padded_templates_read_in_rust_as_in_python(body: bytes, spaces: str, tail: str) -> None:
    """Anthropic pads its JSON with spaces before the last brace: its template is read by the
    Rust cut too, with the answers of ``text`` (or ``None`` where it leaves it to ``read``)."""
    provider = Anthropic()
    learn = "".join(
        f"event: content_block_delta\ndata: {_anthropic(w, '   ')}\n\n" for w in ("a", "b", "c")
    )
    _run((ANTHROPIC_START + learn).encode(), provider)
    template = provider._template
    assert isinstance(template, ChunkTemplate)
    payload = _anthropic("@", spaces).encode().replace(b"@", body) + tail.encode()
    (frame,) = SSEDecoder().feed(b"event: content_block_delta\ndata: " + payload + b"\n\n")
    want, _got, valid = _text_and_read(template, frame)
    if not valid:
        assert template.cut(frame) in (None, want)
        return
    # The cut answers whenever ``read`` does, except for ``\\u`` escapes (left to the parser).
    assert template.cut(frame) == (None if b"\\u" in body else want)


#: Padding values: alphanumeric in several scripts, or not (quotes, spaces, invalid UTF-8).
PADDING = st.lists(
    st.one_of(
        st.text(alphabet='aZ9_-"\\ }é²\u3000', max_size=4).map(str.encode),
        st.sampled_from([b"\xff", b"\xc3"]),
    ),
    max_size=3,
).map(b"".join)


@given(PADDING, st.sampled_from(["word", 'say \\"hi\\"', "é😀"]))
def test_padding_values_are_cut_in_rust_as_read_in_python(padding: bytes, body: str) -> None:
    """OpenAI's ``obfuscation`` (Mistral's ``p``) is on nearly every real chunk: the Rust cut
    reads those templates too, and answers exactly as ``read`` does."""
    template = _learned("Xy1")
    payload = _openai(body, padding="@").encode().replace(b"@", padding)
    (frame,) = SSEDecoder().feed(b"data: " + payload + b"\n\n")
    _want, got, _valid = _text_and_read(template, frame)
    assert template.cut(frame) == got


def test_a_padding_value_template_is_cut_in_rust() -> None:
    template = _learned("Xy1")
    (frame,) = SSEDecoder().feed(b"data: " + _openai("next", padding="Q7").encode() + b"\n\n")
    assert template.cut(frame) == "next"
    (frame,) = SSEDecoder().feed(b"data: " + _openai("next", padding="Q 7").encode() + b"\n\n")
    assert template.cut(frame) is None


def _chunk(delta: str, *, choice: int = 0) -> str:
    """A Chat Completions payload of one choice with the raw JSON ``delta``."""
    return (
        f'{{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{{"index":{choice},'
        f'"delta":{delta},"logprobs":null,"finish_reason":null}}]}}'
    )


#: One text delta: its choice, its field (Groq and OpenRouter say ``reasoning``, DeepSeek and
#: vLLM ``reasoning_content``) and its raw body.
PIECE = st.tuples(
    st.integers(0, 2), st.sampled_from(["content", "reasoning", "reasoning_content"]), BODY
)


@given(st.lists(PIECE, min_size=1, max_size=24), st.booleans())
def test_interleaved_choices_and_text_kinds_read_alike(
    pieces: list[tuple[int, str, str]], channel: bool
) -> None:
    """``n>1`` choices interleave their chunks, and reasoning models send reasoning deltas
    (Groq with a constant ``channel`` beside them): each gets its template, and the events are
    those of a parse of every chunk."""
    extra = ',"channel":"analysis"' if channel else ""
    warm_up = [(c, key, w) for c in range(3) for key in ("content", "reasoning") for w in "ab"]
    payloads = [
        _chunk(f'{{"{key}":"{body}"{extra}}}', choice=c) for c, key, body in warm_up + pieces
    ]
    fast, slow = both(_frames(*payloads, "[DONE]"), OpenAIChat)
    assert_same(fast, slow)


@given(
    st.lists(
        st.tuples(st.sampled_from(["one", "both", "other"]), BODY, st.booleans()),
        min_size=1,
        max_size=16,
    )
)
def test_reasoning_under_both_names_reads_alike(pieces: list[tuple[str, str, bool]]) -> None:
    """vLLM fills ``reasoning`` and ``reasoning_content`` alike in one delta. A template learned
    from one name must not fit such a chunk (it would read one of them, or both), and none is
    learned from it: the events are those of a parse of every chunk, the text read once."""
    warm_up = [_chunk(f'{{"reasoning":"{w}"}}') for w in ("a", "b", "c")]
    payloads = []
    for how, body, first in pieces:
        if how == "one":
            delta = f'{{"reasoning":"{body}"}}'
        elif how == "other":
            delta = f'{{"reasoning_content":"{body}"}}'
        else:
            pair = [f'"reasoning":"{body}"', f'"reasoning_content":"{body}"']
            delta = "{" + ",".join(pair if first else pair[::-1]) + "}"
        payloads.append(_chunk(delta))
    fast, slow = both(_frames(*warm_up, *payloads, "[DONE]"), OpenAIChat)
    assert_same(fast, slow)


def test_a_both_names_chunk_teaches_no_template() -> None:
    payloads = [_chunk(f'{{"reasoning":"r{k}","reasoning_content":"r{k}"}}') for k in range(6)]
    provider = OpenAIChat()
    run = _run(_frames(*payloads), provider)
    assert provider._template is None
    assert "".join(d.text for d in run.of(sf.BlockDelta)) == "".join(f"r{k}" for k in range(6))


def test_interleaved_choices_each_keep_their_template() -> None:
    # Three choices, round robin: three templates, learned once each, not one relearned for
    # every chunk (which cost more than parsing them all).
    payloads = [_chunk(f'{{"content":"w{k}"}}', choice=k % 3) for k in range(60)]
    provider = OpenAIChat()
    run = _run(_frames(*payloads), provider)
    assert provider._misses == 3
    assert {t.state.index for t in [provider._template, *provider._spares] if t} == {0, 1, 2}
    texts = ["".join(e.text for e in run.of(sf.BlockDelta) if e.choice == c) for c in range(3)]
    assert texts == ["".join(f"w{k}" for k in range(c, 60, 3)) for c in range(3)]


def test_reasoning_deltas_are_read_by_template() -> None:
    payloads = [_chunk(f'{{"reasoning":"r{k}","channel":"analysis"}}') for k in range(10)]
    provider = OpenAIChat()
    run = _run(_frames(*payloads), provider)
    template = provider._template
    assert template is not None and template.kind == "reasoning"
    assert provider._misses == 1  # learned once, then every chunk read by it
    deltas = run.of(sf.BlockDelta)
    assert [(d.kind, d.text) for d in deltas] == [("reasoning", f"r{k}") for k in range(10)]


def test_a_block_is_not_learned_from_its_first_chunk() -> None:
    # The chunk that opens a block often carries more (``role``) and a short stream would not
    # repay the learning: only a chunk for an already open block is learned from.
    first = '{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}'
    provider = OpenAIChat()
    _run(_frames(first), provider)
    assert provider._misses == 0 and provider._template is None
    _run(_frames(_chunk('{"content":" there"}')), provider)
    assert provider._misses == 1 and provider._template is not None


def test_interleaved_tool_calls_read_alike() -> None:
    second = CALL.replace("call_1", "call_2").replace('"index":0,"id"', '"index":1,"id"')
    fragments = [
        _chunk(f'{{"tool_calls":[{{"index":{k % 2},"function":{{"arguments":"a{k}"}}}}]}}')
        for k in range(12)
    ]
    fast, slow = both(_frames(START, CALL, second, *fragments, "[DONE]"), OpenAIChat)
    assert_same(fast, slow)
    texts: dict[int, str] = {}
    for event in fast.of(sf.BlockDelta):
        texts[event.index] = texts.get(event.index, "") + event.text
    assert list(texts.values()) == ["a0a2a4a6a8a10", "a1a3a5a7a9a11"]


def test_an_anthropic_template_waits_for_a_blocks_third_delta() -> None:
    # Many blocks have one to three deltas (text between web search citations): learning
    # from the first would cost more than it saves.
    def deltas(index: int, words: str) -> str:
        return "".join(
            "event: content_block_delta\n"
            f'data: {{"type":"content_block_delta","index":{index},'
            f'"delta":{{"type":"text_delta","text":"{w}"}}}}\n\n'
            for w in words
        )

    def start(index: int) -> str:
        return ANTHROPIC_START.split("event: content_block_start")[1].replace(
            '"index":0', f'"index":{index}'
        )

    provider = Anthropic()
    stream = ANTHROPIC_START + deltas(0, "ab")
    for index in (1, 2):
        stream += f"event: content_block_start{start(index)}" + deltas(index, "xy")
    _run(stream.encode(), provider)
    assert provider._learns == 0 and provider._template is None
    _run(deltas(2, "z").encode(), provider)
    assert provider._learns == 1 and provider._template is not None


# -- OpenAI Responses: a number (sequence_number) besides the text ------------------------------


def _run_cursors(chunks: list[bytes], provider: Provider) -> tuple[Run, list[int | None]]:
    """The events and error of the chunks fed one by one, and the provider's resume cursor
    (``sequence``) after each chunk and at the end."""
    pipeline = Pipeline(provider)
    events: list[Any] = []
    cursors: list[int | None] = []
    for chunk in chunks:
        events += pipeline.feed(chunk)
        cursors.append(provider.sequence)
        if pipeline.pending is not None:
            break
    if pipeline.pending is None:
        events += pipeline.close()
    cursors.append(provider.sequence)
    return Run(events, pipeline.pending), cursors


def responses_alike(chunks: list[bytes], *, strict: bool = False) -> OpenAIResponses:
    """Read the chunks with templates and with every payload parsed: the same events, the same
    error, the same cursor after every chunk. Returns the templated provider."""
    fast = OpenAIResponses(strict=strict)
    slow = OpenAIResponses(strict=strict)
    slow.templates = False
    fast_run, fast_cursors = _run_cursors(chunks, fast)
    slow_run, slow_cursors = _run_cursors(chunks, slow)
    assert_same(fast_run, slow_run)
    assert fast_cursors == slow_cursors
    assert slow._learns == 0 and slow._template is None
    return fast


def _pieces(data: bytes, how: str, seed: int = 0) -> list[bytes]:
    if how == "whole":
        return [data]
    if how == "bytes":
        return [data[k : k + 1] for k in range(len(data))]
    rng = random.Random(seed)
    out, at = [], 0
    while at < len(data):
        step = rng.choice([1, 2, 3, 7, 64, 150, 300, 4096])
        out.append(data[at : at + step])
        at += step
    return out


RESPONSES_CAPTURES = captures("openai_responses")


@pytest.mark.skipif(not RESPONSES_CAPTURES, reason="../shared/captures is absent")
@pytest.mark.parametrize("path", RESPONSES_CAPTURES, ids=lambda p: p.stem)
@pytest.mark.parametrize("how", ["whole", "random", "bytes"])
def test_responses_captures_read_alike(path: Path, how: str) -> None:
    data = path.read_bytes()
    for seed in range(3 if how == "random" else 1):
        for strict in (False, True):
            responses_alike(_pieces(data, how, seed), strict=strict)


def _counting(provider: OpenAIResponses) -> list[int]:
    """Counts the frames the provider parses (``handle``) rather than reads by template."""
    count = [0]
    handle = provider.handle

    def counted(frame: Any, out: list[Any]) -> None:
        count[0] += 1
        handle(frame, out)

    provider.handle = counted  # type: ignore[method-assign]
    return count


@pytest.mark.skipif(not RESPONSES_CAPTURES, reason="../shared/captures is absent")
@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        # 676 frames, 654 deltas: 22 other frames, ``LEARN_AFTER`` deltas to learn from in each
        # of the two blocks, and the first delta of each of the 3 later summary parts
        # (``summary_index`` changes), from which the template is learned again.
        ("reasoning_summary", 22 + 2 * LEARN_AFTER + 3),
        # 185 frames, 121 deltas of one text part between searches and citations.
        ("web_search_url_citations", 64 + LEARN_AFTER),
        # 7 and 5 deltas: fewer than a learn repays, so every frame is parsed.
        ("text_basic", 8 + 7),
        ("function_call", 6 + 5),
    ],
)
def test_responses_deltas_are_read_by_template(name: str, parsed: int) -> None:
    path = next(p for p in RESPONSES_CAPTURES if p.stem == name)
    provider = OpenAIResponses()
    count = _counting(provider)
    run = _run(path.read_bytes(), provider)
    assert run.error is None
    assert count[0] == parsed


def _written(text: str) -> str:
    """``text`` as JSON writes it between the quotes, non-ASCII raw."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


#: Text as JSON writes it: mostly printable text (quotes and backslashes escaped), which a
#: template reads; any characters (control characters escaped as ``\\u``), and non-ASCII as
#: ``\\u`` escapes (surrogate pairs beyond the BMP), which are left to the parser.
PRINTABLE = st.characters(codec="utf-8", categories=("L", "N", "P", "S", "Zs"))
TEXT_BODY = st.one_of(
    st.text(PRINTABLE, min_size=1, max_size=12).map(_written),
    st.text(PRINTABLE, min_size=1, max_size=12).map(_written),
    st.text(max_size=12).map(_written),
    st.text(max_size=6).map(lambda t: json.dumps(t)[1:-1]),
)

#: Bodies inserted raw: escapes JSON allows but ``json.dumps`` does not write (``\\/``, a lone
#: surrogate), U+2028 and other characters ``isprintable`` refuses, and what breaks the string
#: or the payload (a bare quote, a control character, a lone backslash, structure).
RAW_TOKENS = st.sampled_from(
    [
        "a", "b", " ", "é", "😀", "\u2028", "\u00ad", "\x7f", "\t", "\x01", '"', "\\", '\\"',
        "\\\\", "\\n", "\\/", "\\u00e9", "\\ud83d\\ude00", "\\ud800", "\\u2028", "\\u0000",
        ",", "}", "{", ":", "[", "0", "u", '","logprobs":[],"obfuscation":"', '","x":"',
    ]
)  # fmt: skip
RAW_BODY_TEXT = st.lists(RAW_TOKENS, max_size=8).map("".join)

#: How a delta numbers itself: the same or a lower number than the last (a violation), a
#: jump, none, or something that is not a plain non-negative integer (the common case, the
#: next number, is a step of its own).
NUMBERING = st.sampled_from(
    [
        "same", "back", "jump", "missing", "same", "back", "0", "007", "00", "-1", "-0", "1.5",
        "2e3", "1E2", "true", "null", '"9"', " 5", "99999999999999999999999",
        "18446744073709551615", "18446744073709551616",
    ]
)  # fmt: skip

#: One field of a delta changed from the learned one (raw JSON text; ``type`` "" drops it;
#: ``event`` is the SSE event name, which the payload's ``type`` overrides).
DELTA_FIELD = st.sampled_from(
    [
        ("type", ""),
        ("type", "response.refusal.delta"),
        ("type", "response.reasoning_summary_text.delta"),
        ("type", "response.output_text.done"),
        ("type", "response.unknown.delta"),
        ("event", "message"),
        ("event", "response.refusal.delta"),
        ("item_id", "msg_2"),
        ("output_index", "0"),
        ("output_index", "7"),
        ("output_index", '"1"'),
        ("output_index", "1.0"),
        ("content_index", "1"),
        ("content_index", "null"),
        ("logprobs", '[{"token":"a","logprob":-0.5}]'),
        ("logprobs", "null"),
        ("logprobs", "{}"),
        ("obfuscation", ""),
        ("obfuscation", "Zz9"),
        ("obfuscation", "a b"),
        ("obfuscation", "é²"),
        ("obfuscation", '\\"'),
        ("tail", "  "),
        ("tail", ',"extra":1'),
        ("tail", "}"),
    ]
)

#: Events between the deltas: a second ``content_part.added`` for the same index (a new block
#: takes the text), the part or item done, a second summary part, a summary part's whole text
#: (which fills it when it got no delta, or holds back later parts' text), the reasoning item
#: done with its summary list (which fills and releases), the terminal event.
STRUCTURE = st.sampled_from(
    [
        "part_added",
        "part_done",
        "item_done",
        "summary_part",
        "summary_done",
        "reasoning_done",
        "completed",
    ]
)

#: One step: ``("delta", body, numbering, changed fields)`` or ``(event, "", numbering, {})``.
ResponsesStep = tuple[str, str, str, dict[str, str]]


#: What a step does: mostly a plain delta (any text); else one thing changed (the number, a
#: field, an event between deltas, a body inserted raw, often invalid), or several at once.
STEP_KINDS = st.sampled_from(
    ["plain"] * 10 + ["number"] * 3 + ["field"] * 3 + ["event"] * 2 + ["raw", "mixed"]
)


@st.composite
def responses_step(draw: st.DrawFn) -> ResponsesStep:
    kind = draw(STEP_KINDS)
    if kind == "event":
        return (draw(STRUCTURE), "", "next", {})
    if kind == "raw":
        return ("delta", draw(RAW_BODY_TEXT), "next", {})
    body = draw(TEXT_BODY)
    if kind == "plain":
        return ("delta", body, "next", {})
    if kind == "number":
        return ("delta", body, draw(NUMBERING), {})
    if kind == "field":
        return ("delta", body, "next", dict([draw(DELTA_FIELD)]))
    return ("delta", body, draw(NUMBERING), dict(draw(st.lists(DELTA_FIELD, max_size=3))))


class _Numbers:
    """The raw ``sequence_number`` text of each event (``None``: the field is absent)."""

    def __init__(self, numbered: bool) -> None:
        self.numbered = numbered
        self.n = 0

    def __call__(self, numbering: str = "next") -> str | None:
        if not self.numbered or numbering == "missing":
            return None
        if numbering in ("next", "jump"):
            self.n += 1 if numbering == "next" else 1000
            return str(self.n)
        if numbering in ("same", "back"):
            return str(self.n if numbering == "same" else self.n - 3)
        return numbering


def _responses_event(name: str, number: str | None, fields: str, *, type_: str = "") -> str:
    """An event named ``name`` whose payload's ``type`` is ``type_`` (``name`` when empty,
    none when ``"-"``)."""
    kind = name if type_ == "" else type_
    head = "" if type_ == "-" else f'"type":"{kind}",'
    numbered = "" if number is None else f'"sequence_number":{number},'
    return f"event: {name}\ndata: {{{head}{numbered}{fields}}}\n\n"


def _responses_delta(number: str | None, body: str, changed: dict[str, str]) -> str:
    def field(key: str, default: str) -> str:
        return changed.get(key, default)

    fields = (
        f'"item_id":"{field("item_id", "msg_1")}","output_index":{field("output_index", "1")},'
        f'"content_index":{field("content_index", "0")},"delta":"{body}",'
        f'"logprobs":{field("logprobs", "[]")},"obfuscation":"{field("obfuscation", "uGUW")}"'
        + field("tail", "")
    )
    type_ = field("type", "response.output_text.delta") or "-"
    return _responses_event(
        field("event", "response.output_text.delta"), number, fields, type_=type_
    )


_STRUCTURE_FIELDS = {
    "part_added": (
        "response.content_part.added",
        '"item_id":"msg_1","output_index":1,"content_index":0,'
        '"part":{"type":"output_text","annotations":[],"text":""}',
    ),
    "part_done": (
        "response.content_part.done",
        '"item_id":"msg_1","output_index":1,"content_index":0,"part":{"type":"output_text"}',
    ),
    "item_done": (
        "response.output_item.done",
        '"output_index":1,"item":{"id":"msg_1","type":"message","status":"completed"}',
    ),
    "summary_part": (
        "response.reasoning_summary_part.added",
        '"item_id":"rs_1","output_index":0,"summary_index":1,"part":{"type":"summary_text"}',
    ),
    "summary_done": (
        "response.reasoning_summary_text.done",
        '"item_id":"rs_1","output_index":0,"summary_index":1,"text":"held"',
    ),
    "reasoning_done": (
        "response.output_item.done",
        '"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":['
        '{"type":"summary_text","text":"first"},{"type":"summary_text","text":"second"}]}',
    ),
    "completed": (
        "response.completed",
        '"response":{"id":"resp_1","model":"m","status":"completed","output":[]}',
    ),
}


def responses_stream(
    steps: list[ResponsesStep], *, numbered: bool = True, end: bool = True, **every: str
) -> bytes:
    """A Responses stream: a reasoning item (output 0) and a message (output 1) whose text
    part gets three plain deltas (a template is learned from them), then ``steps``. ``every``
    changes a field of every delta (as a step's changed fields do)."""
    number = _Numbers(numbered)
    created = '"response":{"id":"resp_1","model":"m","status":"in_progress"}'
    part_added = _STRUCTURE_FIELDS["part_added"][1]
    out = [
        _responses_event("response.created", number(), created),
        _responses_event(
            "response.output_item.added",
            number(),
            '"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}',
        ),
        _responses_event("response.reasoning_summary_part.added", number(), '"output_index":0'),
        _responses_event(
            "response.output_item.added",
            number(),
            '"output_index":1,"item":{"id":"msg_1","type":"message","role":"assistant"}',
        ),
        _responses_event("response.content_part.added", number(), part_added),
    ]
    out += [_responses_delta(number(), word, every) for word in ("The", " first", " words")]
    for what, body, numbering, changed in steps:
        if what == "delta":
            out.append(_responses_delta(number(numbering), body, {**every, **changed}))
        else:
            name, fields = _STRUCTURE_FIELDS[what]
            out.append(_responses_event(name, number(numbering), fields))
    if end:
        name, fields = _STRUCTURE_FIELDS["completed"]
        out.append(_responses_event(name, number(), fields))
    return "".join(out).encode()


#: A stream's shape: numbered or not (older streams), ended or not, strict or not, and a field
#: every delta has changed (none; no ``type``, so the event name decides; logprobs).
STREAM_SHAPE = st.fixed_dictionaries(
    {
        "numbered": st.booleans(),
        "end": st.booleans(),
        "strict": st.booleans(),
        "every": st.sampled_from(
            [{}, {}, {}, {}, {"type": ""}, {"logprobs": '[{"token":"a","logprob":-0.5}]'}]
        ),
    }
)


@given(
    st.lists(responses_step(), min_size=4, max_size=32),
    STREAM_SHAPE,
    st.tuples(st.sampled_from(["whole", "random", "bytes"]), st.integers(0, 2**16)),
)
def test_responses_deltas_read_alike(
    steps: list[ResponsesStep], shape: dict[str, Any], split: tuple[str, int]
) -> None:
    """Whatever the deltas hold (any text, numbers that are not plain non-negative integers or
    do not increase, other fields changed) and whatever comes between them, the templated read
    gives the events, error and resume cursor of a parse of every payload, in any pieces."""
    data = responses_stream(steps, numbered=shape["numbered"], end=shape["end"], **shape["every"])
    responses_alike(_pieces(data, *split), strict=shape["strict"])


def test_responses_plain_deltas_take_the_template() -> None:
    # The generated stream's plain deltas are read by the template (the test above compares
    # such reads, not only parses).
    steps: list[ResponsesStep] = [("delta", f"w{k}", "next", {}) for k in range(20)]
    for numbered in (True, False):
        provider = OpenAIResponses()
        count = _counting(provider)
        data = responses_stream(steps, numbered=numbered, end=True)
        run = _run(data, provider)
        # Five events before the deltas, the deltas to learn from, the terminal event.
        assert count[0] == 5 + LEARN_AFTER + 1
        assert "".join(e.text for e in run.of(sf.BlockDelta)) == "The first words" + "".join(
            f"w{k}" for k in range(20)
        )
        assert provider.sequence == (5 + 3 + 20 + 1 if numbered else None)  # numbered from 1


@pytest.mark.parametrize(
    "odd",
    [
        ("delta", "x", "same", {}),
        ("delta", "x", "back", {}),
        ("completed", "", "next", {}),
        ("part_done", "", "next", {}),
        ("item_done", "", "next", {}),
    ],
    ids=["same-number", "lower-number", "after-terminal", "part-closed", "item-closed"],
)
@pytest.mark.parametrize("strict", [False, True])
def test_responses_rules_hold_for_templated_deltas(odd: ResponsesStep, strict: bool) -> None:
    # Each rule the parse applies to a delta (the number increases, nothing after the terminal
    # event, no text for a closed block) holds for a delta the template would read.
    learn: list[ResponsesStep] = [("delta", f"a{k}", "next", {}) for k in range(LEARN_AFTER)]
    steps: list[ResponsesStep] = [*learn, odd, ("delta", "b", "next", {})]
    data = responses_stream(steps, end=False)
    provider = responses_alike([data], strict=strict)
    assert provider._template is not None
    run = _run(data, OpenAIResponses(strict=strict))
    assert run.warnings or run.error


def test_responses_logprobs_deltas_keep_their_logprobs() -> None:
    # A delta with logprobs is a BlockDelta carrying them: never learned from, so a template
    # never reads the next one (which has the same shape) as a plain text.
    logprobs = '[{"token":"a","logprob":-0.5}]'
    steps: list[ResponsesStep] = [("delta", f"w{k}", "next", {}) for k in range(5)]
    provider = responses_alike([responses_stream(steps, logprobs=logprobs)])
    assert provider._template is None
    run = _run(responses_stream(steps, logprobs=logprobs), OpenAIResponses())
    assert [e.logprobs for e in run.of(sf.BlockDelta)] == [json.loads(logprobs)] * 8


def test_responses_untyped_deltas_follow_their_event_name() -> None:
    # Without a payload ``type`` the SSE event name decides, which a template does not compare:
    # such deltas are never learned from.
    steps: list[ResponsesStep] = [
        *[("delta", f"w{k}", "next", {}) for k in range(5)],
        ("delta", "x", "next", {"event": "response.unknown"}),
    ]
    provider = responses_alike([responses_stream(steps, type="")])
    assert provider._template is None and provider._learns == 0


_DELTA = (
    '{"type":"response.output_text.delta","sequence_number":401,"item_id":"msg_1",'
    '"output_index":1,"content_index":0,"delta":"I\'m","logprobs":[],"obfuscation":"uGUW"}'
)


def _learn_numbered(data: str) -> NumberedTemplate | None:
    chunk = json.loads(data)

    def expected(probe: str) -> dict[str, Any]:
        return {**chunk, "delta": probe}

    return NumberedTemplate.learn(
        data,
        chunk,
        number_key="sequence_number",
        key="delta",
        text=chunk["delta"],
        expected=expected,
        block=3,
    )


def _frame(data: str) -> Any:
    (frame,) = SSEDecoder().feed(f"event: x\ndata: {data}\n\n".encode())
    return frame


def test_a_numbered_template_cuts_number_and_text() -> None:
    template = _learn_numbered(_DELTA)
    assert template is not None and template.block == 3
    assert template.prefix.endswith('"sequence_number":')
    assert template.middle is not None and template.middle.startswith(',"item_id"')
    later = _DELTA.replace("401", "402").replace("I'm", 'say \\"hi\\" é').replace("uGUW", "Q")
    assert template.cut(_frame(later)) == (402, 'say "hi" é')
    big = _DELTA.replace("401", str(2**64 - 1))
    assert template.cut(_frame(big)) == (2**64 - 1, "I'm")


@pytest.mark.parametrize(
    "number", ["0401", "00", "-1", "-0", "1.0", "1e3", "true", '"402"', str(2**64), "4 "]
)
def test_a_numbered_template_refuses_other_numbers(number: str) -> None:
    template = _learn_numbered(_DELTA)
    assert template is not None
    other = _DELTA.replace("401", number)
    assert template.cut(_frame(other)) is None


def test_a_numbered_template_without_a_number() -> None:
    # Older streams have no sequence_number: the template is the single-slot one.
    data = _DELTA.replace('"sequence_number":401,', "")
    template = _learn_numbered(data)
    assert template is not None and template.middle is None
    assert template.cut(_frame(data.replace("I'm", "next"))) == (None, "next")
    assert template.cut(_frame(_DELTA)) is None


@pytest.mark.parametrize(
    "data",
    [
        # The number after the text: only a number before it is a slot.
        '{"type":"response.output_text.delta","delta":"I\'m","sequence_number":401}',
        # Not a plain non-negative integer: no template (each delta changes it anyway).
        _DELTA.replace("401", "-401"),
        _DELTA.replace("401", "401.0"),
        _DELTA.replace("401", '"401"'),
        # Twice: which one is the slot is not clear, and the later one counts.
        _DELTA.replace('"logprobs"', '"sequence_number":401,"logprobs"'),
        _DELTA.replace("401", "5").replace('"logprobs"', '"sequence_number":401,"logprobs"'),
    ],
)
def test_numbered_templates_are_not_learned_from(data: str) -> None:
    assert _learn_numbered(data) is None


def test_a_spaced_numbered_template() -> None:
    data = json.dumps(json.loads(_DELTA))  # ", " and ": " separators
    template = _learn_numbered(data)
    assert template is not None
    assert template.cut(_frame(data.replace("401", "9000").replace("I'm", "ok"))) == (9000, "ok")


def test_a_new_part_on_the_same_index_takes_the_deltas() -> None:
    # A second content_part.added for a content index opens a new block for its deltas: the
    # template learned for the old block must not send them there.
    steps: list[ResponsesStep] = [
        ("delta", "a", "next", {}),
        ("part_added", "", "next", {}),
        *[("delta", w, "next", {}) for w in "bcdefghijk"],
    ]
    data = responses_stream(steps, numbered=True, end=True)
    provider = responses_alike([data])
    assert provider._template is not None and provider._template.block == 2
    texts: dict[int, str] = {}
    for event in _run(data, OpenAIResponses()).of(sf.BlockDelta):
        texts[event.index] = texts.get(event.index, "") + event.text
    assert texts == {1: "The first wordsa", 2: "bcdefghijk"}


def test_responses_templated_reasoning_deltas_feed_the_latest_part() -> None:
    # Reasoning deltas without a summary_index: a template learned in one summary part must not
    # read the next part's deltas, which the parse counts as that part's text (a part with no
    # text holds back the parts after it, so the two readings would part ways).
    reasoning = {"output_index": "0", "type": "response.reasoning_summary_text.delta"}
    steps: list[ResponsesStep] = [
        *[("delta", f"r{k}", "next", reasoning) for k in range(LEARN_AFTER + 1)],
        ("summary_part", "", "next", {}),
        *[("delta", "x", "next", reasoning) for _ in range(3)],
        ("summary_part", "", "next", {}),
        ("delta", "y", "next", reasoning),
    ]
    data = responses_stream(steps, numbered=True, end=True)
    responses_alike([data])
    texts: dict[int, str] = {}
    for event in _run(data, OpenAIResponses()).of(sf.BlockDelta):
        texts[event.index] = texts.get(event.index, "") + event.text
    reasoning_text = "".join(f"r{k}" for k in range(LEARN_AFTER + 1)) + "\n\nxxx\n\ny"
    assert texts == {0: reasoning_text, 1: "The first words"}


#: Chunks the learners are asked about: the text at a path, the rest of the chunk around it
#: (other strings that may hold the same text, padding values, numbers), written compactly or
#: with spaces, with the Anthropic-style padded end or not.
LEARN_TEXT = st.text(alphabet='ab é😀"\\\n\t\x01\u2028 ', min_size=0, max_size=6)
LEARN_OTHER = st.one_of(LEARN_TEXT, st.integers(-3, 3), st.none(), st.booleans())


@given(
    text=LEARN_TEXT,
    other=LEARN_OTHER,
    padding=st.sampled_from([None, "obfuscation", "p"]),
    padding_value=st.sampled_from(["Ab9", "", "é1", "x y", "@"]),
    spaced=st.booleans(),
    padded_end=st.booleans(),
    shape=st.sampled_from(["openai-text", "openai-call", "anthropic"]),
)
def test_the_rust_learner_finds_the_python_learners_cut(
    *,
    text: str,
    other: Any,
    padding: str | None,
    padding_value: str,
    spaced: bool,
    padded_end: bool,
    shape: str,
) -> None:
    """``learn_cut`` (Rust, what the providers use) proves the cut ``_learn_cut`` (``json.loads``
    and dictionary compares) proves, or refuses where that one refuses: never another cut."""
    from streamfold._core import learn_cut
    from streamfold._providers._chunk_template import PADDING_KEYS, _learn_cut

    if padding_value == "@":
        padding_value = text  # the padding holds the same string as the text
    path: tuple[str | int, ...]
    if shape == "openai-text":
        path = ("choices", 0, "delta", "content")
        chunk: dict[str, Any] = {
            "id": "c",
            "other": other,
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
        }
    elif shape == "openai-call":
        path = ("choices", 0, "delta", "tool_calls", 0, "function", "arguments")
        call = {"index": 0, "function": {"arguments": text}, "other": other}
        chunk = {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}
    else:
        path = ("delta", "text")
        chunk = {"type": "content_block_delta", "index": 0, "delta": {"type": "t", "text": text}}
        chunk["other"] = other
    if padding is not None:
        chunk[padding] = padding_value
    separators = (", ", ": ") if spaced else (",", ":")
    data = json.dumps(chunk, separators=separators, ensure_ascii=False)
    if padded_end:
        data = data[:-1] + "  }"

    def expected(probe: str) -> dict[str, Any]:
        replaced = json.loads(json.dumps(chunk))
        node = replaced
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = probe
        return dict(replaced)

    want = _learn_cut(data, chunk, key=str(path[-1]), text=text, expected=expected)
    got = learn_cut(data.encode("utf-8", "surrogatepass"), path, text, PADDING_KEYS)
    assert got is None or got == want
    if want is not None and other.__class__ is not str:
        # Nothing else in the chunk can be mistaken for the text: the Rust learner finds it.
        assert got == want
