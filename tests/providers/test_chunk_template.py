"""The unparsed reading of common chunks (``providers/_chunk_template.py``) never changes a
result: every stream gives the same events, or the same error, with templates as without."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import streamfold as sf
from streamfold._core import SSEDecoder
from streamfold.pipeline import Pipeline
from streamfold.providers._chunk_template import ChunkTemplate, decode_body
from streamfold.providers.anthropic import Anthropic
from streamfold.providers.base import Provider
from streamfold.providers.openai_chat import Mistral, OpenAIChat

from .helpers import Run


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
    assert template.text(_openai("new words")) == "new words"
    assert template.text(_openai('a","x":"b')) is None  # structure, not text: parsed instead


def test_mistral_padding_is_learned() -> None:
    chunk = {"id": "m", "choices": [{"index": 0, "delta": {"content": "@"}}], "p": "abc"}
    payloads = [json.dumps(chunk, separators=(",", ":")).replace("@", w) for w in "xyz"]
    provider = Mistral()
    _run(_frames(START, *payloads), provider)
    template = provider._template
    assert template is not None
    other: dict[str, Any] = {**chunk, "p": "abcdefgh"}
    assert template.text(json.dumps(other, separators=(",", ":")).replace("@", "ok")) == "ok"


@pytest.mark.parametrize("make", [OpenAIChat, Mistral])
def test_a_template_never_outlives_a_finished_choice(make: type[Provider]) -> None:
    payloads = [_openai(w) for w in ("a", "b", "c")]
    finish = '{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}'
    fast, slow = both(_frames(START, *payloads, finish, _openai("late")), make)
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
    stream = _frames(START, CALL, second, *fragments, third, *fragments[:4], "[DONE]")
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
    want = template.text(frame.data)
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
