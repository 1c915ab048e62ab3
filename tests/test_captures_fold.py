"""Every recorded capture in ../shared/captures folds to its ``.expected.json``.

Compared: the text of every block, reasoning and signatures, redacted blocks, refusals, tool
calls (id, name, arguments, the streamed text, complete), server tools, the tool plan,
citations, the OpenAI logprob tokens, the provider's raw finish reason, the provider's raw
usage, the error and the terminal event. A capture whose expected terminal is ``eof``
(Anthropic ``message_stop`` not dispatched) must raise ``IncompleteStreamError``; one that ends
in a provider error must raise ``StreamError``; in both the ``.partial`` is compared instead.
Gemini has no terminator: its ``eof`` with a ``finishReason`` is a complete stream. OpenAI
choices are compared per choice.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from pathlib import Path
from typing import Any

import pytest

import streamfold as sf
from conftest import CAPTURE_PROVIDER, capture_files, capture_id, expected_for, requires_captures
from streamfold._message import Block, Message
from streamfold._types import ProviderName

CAPTURES = capture_files()
#: Kinds that appear as blocks in the expected files (the tool plan is a field there).
COMPARED_KINDS = frozenset({"text", "reasoning", "refusal", "tool_call", "server_tool", "other"})


def is_fragment(expected: dict[str, Any]) -> bool:
    blocks = expected.get("message", {}).get("blocks", [])
    return any("fragment" in str(b.get("note", "")) for b in blocks)


def outcome_kind(path: Path, expected: dict[str, Any]) -> type[sf.StreamfoldError] | None:
    """The error the fold must raise for this capture, or ``None`` for a complete message."""
    if expected["error"] is not None:
        return sf.StreamError
    if expected["terminal"] == "eof" and path.parent.name != "gemini":
        return sf.IncompleteStreamError
    return None


def fold_capture(path: Path, chunks: list[bytes]) -> tuple[Message, BaseException | None]:
    provider = CAPTURE_PROVIDER[path.parent.name]
    try:
        return sf.fold(chunks, provider=provider), None
    except sf.StreamfoldError as exc:
        partial = getattr(exc, "partial", None)
        assert isinstance(partial, Message), f"{type(exc).__name__} without a partial: {exc}"
        return partial, exc


def compared_blocks(message: Message) -> list[Block]:
    return [b for b in message.blocks if b.kind in COMPARED_KINDS]


def check_block(got: Block, want: dict[str, Any], where: str) -> None:
    kind = want["type"]
    if kind == "text":
        assert got.kind == "text", where
        assert got.text == want["text"], where
    elif kind == "thinking":
        assert got.kind == "reasoning", where
        assert got.text == want["text"], where
    elif kind == "redacted_thinking":
        assert got.kind == "reasoning", where
        assert got.text == "", where
        data = got.data.get("data") if isinstance(got.data, dict) else got.data
        assert data == want["data"], where
    elif kind == "refusal":
        assert got.kind == "refusal", where
        assert got.text == want["text"], where
    elif kind in ("tool_call", "server_tool_call"):
        assert got.kind == ("tool_call" if kind == "tool_call" else "server_tool"), where
        call = got.tool_call
        assert call is not None, where
        assert (call.id, call.name) == (want["id"], want["name"]), where
        assert call.arguments == want["arguments"], where
        if want.get("arguments_raw") is not None:
            assert call.arguments_json == want["arguments_raw"], where
        if want.get("arguments_valid_json") is False:
            assert call.error, where
        assert call.complete is want["complete"], where
    elif kind == "other":
        assert got.kind in ("server_tool", "other"), where
        data = got.data
        assert isinstance(data, dict), where
        assert data.get("type") == want["raw_type"], where
    else:  # pragma: no cover - a new kind in the expected files
        pytest.fail(f"{where}: unknown expected block type {kind!r}")
    if "signature" in want:
        signature = got.signature
        if signature is None and got.tool_call is not None:
            signature = got.tool_call.extra.get("thoughtSignature")
        assert signature == want["signature"], where


def check_message(
    message: Message, want: dict[str, Any], where: str, *, ended: bool, failed: bool = False
) -> None:
    blocks = compared_blocks(message)
    wanted = want["blocks"]
    assert len(blocks) == len(wanted), (
        f"{where}: {[b.kind for b in blocks]} vs {[w['type'] for w in wanted]}"
    )
    for i, (got, block) in enumerate(zip(blocks, wanted, strict=True)):
        check_block(got, block, f"{where} block {i}")
    if ended or (failed and want["finish_reason"] is not None):
        # A failure that came as a finish (Cohere ERROR, Responses failed) keeps its value.
        assert message.raw_finish_reason == want["finish_reason"], where
    else:
        # The terminal event never came (or was an error raised instead): the raw finish
        # reason the expected file read from the wire is not known to the partial.
        assert message.raw_finish_reason in (None, want["finish_reason"]), where
    text_blocks = [b["text"] for b in wanted if b["type"] == "text"]
    assert message.text == "".join(text_blocks), where
    if "tool_plan" in want:
        assert message.tool_plan == (want["tool_plan"] or ""), where
    # OpenAI Chat ``choices[].logprobs``: the ``content`` arrays of the chunks, concatenated
    # on the text block they score (WIRE_FORMATS §3). A capture without them has none.
    got_tokens = [
        entry["token"]
        for b in message.blocks
        if b.kind == "text"
        for entry in b.extra.get("logprobs", [])
    ]
    assert got_tokens == want.get("logprobs_content_tokens", []), where
    if want.get("citations"):
        got_citations = [(c.start, c.end, c.text) for c in message.citations]
        assert got_citations == [(c["start"], c["end"], c["text"]) for c in want["citations"]]


def check_usage(message: Message, want: Any, where: str) -> None:
    if not want:
        assert message.usage is None or not message.usage.raw, where
        return
    assert message.usage is not None, where
    raw = message.usage.raw
    # Cohere v1 ``meta`` also carries api_version and warnings: compare what is expected.
    assert {k: raw.get(k) for k in want} == want, where


def check(path: Path, chunks: list[bytes]) -> None:
    expected = expected_for(path)
    where = capture_id(path)
    if is_fragment(expected):
        check_fragment(path, chunks, expected)
        return
    message, error = fold_capture(path, chunks)
    must_raise = outcome_kind(path, expected)
    if must_raise is None:
        assert error is None, f"{where}: {error!r}"
        assert message.complete, where
    else:
        assert isinstance(error, must_raise), f"{where}: {error!r}"
        assert not message.complete, where
    if isinstance(error, sf.StreamError):
        check_error(error, expected["error"], where)
        assert message.finish_reason is not None, where
        assert message.error is not None, where
    if "choices" in expected:
        assert [c.choice for c in message.choices] == [c["index"] for c in expected["choices"]]
        for got, want in zip(message.choices, expected["choices"], strict=True):
            check_message(got, want, f"{where} choice {want['index']}", ended=got.complete)
    else:
        check_message(
            message,
            expected["message"],
            where,
            ended=error is None,
            failed=isinstance(error, sf.StreamError) and error.raw_finish_reason is not None,
        )
    ids = {expected.get("response_id"), expected.get("generation_id")}
    assert message.id in ids, where
    if expected.get("model"):
        assert message.model == expected["model"], where
    check_usage(message, expected["usage"], where)


def check_error(error: sf.StreamError, want: dict[str, Any], where: str) -> None:
    assert error.message == want["message"], where
    codes = {want.get(k) for k in ("code", "type", "error_type")} - {None}
    assert error.code in codes, where
    produced = error.partial is not None and bool(
        error.partial.text or error.partial.reasoning or error.partial.tool_plan
    )
    assert error.retryable_without_duplicate is not produced, where


def check_fragment(path: Path, chunks: list[bytes], expected: dict[str, Any]) -> None:
    """A stream excerpt that begins mid-block: as it is, a delta for a block never started is
    a ``ProtocolError``; behind the message_start and content_block_start it lacks, its error
    event folds to a ``StreamError`` keeping the excerpt's text."""
    provider = CAPTURE_PROVIDER[path.parent.name]
    with pytest.raises(sf.ProtocolError):
        sf.fold(chunks, provider=provider)
    head = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_x",'
        b'"role":"assistant","model":"m","usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"text","text":""}}\n\n'
    )
    with pytest.raises(sf.StreamError) as info:
        sf.fold([head, *chunks], provider=provider)
    check_error(info.value, expected["error"], capture_id(path))
    assert info.value.partial is not None
    assert info.value.partial.text == expected["message"]["blocks"][0]["text"]
    assert info.value.retryable_without_duplicate is False


@requires_captures
@pytest.mark.parametrize("path", CAPTURES, ids=capture_id)
def test_capture_whole(path: Path) -> None:
    check(path, [path.read_bytes()])


@requires_captures
@pytest.mark.parametrize("path", CAPTURES, ids=capture_id)
def test_capture_split_at_random(path: Path) -> None:
    body = path.read_bytes()
    rng = random.Random(path.name)
    for _ in range(3):
        cuts = sorted(rng.sample(range(1, len(body)), min(len(body) - 1, rng.randint(1, 40))))
        bounds = [0, *cuts, len(body)]
        check(path, [body[a:b] for a, b in itertools.pairwise(bounds)])


@requires_captures
def test_every_capture_is_covered() -> None:
    assert len(CAPTURES) == 42
    assert {p.parent.name for p in CAPTURES} == set(CAPTURE_PROVIDER)


@requires_captures
@pytest.mark.parametrize(
    ("capture", "shape"),
    [
        ("anthropic/thinking_signature", "anthropic"),
        ("anthropic/redacted_thinking", "anthropic"),
        ("openai_chat/parallel_tool_calls", "openai"),
        ("cohere_v2/parallel_tool_calls", "cohere-v2"),
        ("openai_responses/function_call", "openai-responses"),
        ("openai_responses/reasoning_summary", "openai-responses"),
        ("gemini/tool_call_thought_signature", "gemini"),
    ],
)
def test_capture_to_request(capture: str, shape: str) -> None:
    path = next(p for p in CAPTURES if capture_id(p) == capture)
    message, error = fold_capture(path, [path.read_bytes()])
    assert error is None
    request = message.to_request()
    if shape == "anthropic":
        for block, part in zip(compared_blocks(message), request["content"], strict=True):
            if block.kind == "reasoning" and block.text:
                assert part == {
                    "type": "thinking",
                    "thinking": block.text,
                    "signature": block.signature,
                }
            elif block.kind == "reasoning":
                assert part["type"] == "redacted_thinking"
                assert part["data"]
    elif shape in ("openai", "cohere-v2"):
        assert [c["id"] for c in request["tool_calls"]] == [c.id for c in message.tool_calls]
        for sent, call in zip(request["tool_calls"], message.tool_calls, strict=True):
            assert sent["function"]["arguments"] == call.arguments_json
    elif shape == "openai-responses":
        types = [item["type"] for item in request]
        if message.tool_calls:
            assert types == ["function_call"]
            assert request[0]["call_id"] == message.tool_calls[0].id
        else:
            assert types == ["reasoning", "message"]
            assert request[0]["id"].startswith("rs_")
    else:
        (part,) = request["parts"]
        assert part["functionCall"]["name"] == "get_country"
        assert part["thoughtSignature"]


@requires_captures
def test_citation_offsets_as_documented() -> None:
    """docs/fold.md: Gemini UTF-8 bytes into the joined text; Cohere v2 characters into the
    cited block, end-exclusive; Cohere v1 characters into the reply text; Responses code
    points into the text part."""
    by_id = {capture_id(p): p for p in CAPTURES}

    def folded(name: str) -> Message:
        path = by_id[name]
        message, error = fold_capture(path, [path.read_bytes()])
        assert error is None
        return message

    gemini = folded("gemini/web_search_grounding")
    assert len(gemini.citations) == 8
    raw_text = gemini.text.encode()
    for c in gemini.citations:
        assert c.start is not None
        assert c.end is not None
        assert raw_text[c.start : c.end].decode() == c.text
    assert any(len(c.text or "") != c.end - c.start for c in gemini.citations if c.end and c.start)

    v2 = folded("cohere_v2/citation_tool_source")
    (c2,) = v2.citations
    assert c2.block is not None
    assert v2.blocks[c2.block].text[c2.start : c2.end] == c2.text == "5"

    v1 = folded("cohere_v1/citations_search_results")
    (c1,) = v1.citations
    assert v1.text[c1.start : c1.end] == c1.text == "5"

    responses = folded("openai_responses/web_search_url_citations")
    assert responses.citations
    for c in responses.citations:
        assert c.block is not None
        block = responses.blocks[c.block]
        assert c.start is not None
        assert c.end is not None
        assert 0 <= c.start <= c.end <= len(block.text)


def folded_from_events(
    chunks: list[bytes], provider: ProviderName
) -> tuple[Message, type[BaseException] | None]:
    """The message a ``Folder`` makes of ``sf.events``: what a caller folding the events
    itself gets (with the error's ``.partial`` when the stream failed)."""
    folder = sf.Folder(provider)
    try:
        for event in sf.events(chunks, provider=provider):
            folder.add(event)
        return folder.result(), None
    except sf.StreamfoldError as exc:
        if getattr(exc, "partial", None) is None:
            folder.annotate_error(exc)
        partial = getattr(exc, "partial", None)
        assert isinstance(partial, Message)
        return partial, type(exc)


def comparable(message: Message) -> list[Message]:
    """Every choice, without the notice ``auto`` adds when it detects the provider."""
    out = []
    for choice in message.choices or [message]:
        notices = [n for n in choice.notices if n.kind != "provider_detected"]
        out.append(dataclasses.replace(choice, notices=notices))
    return out


@requires_captures
@pytest.mark.parametrize("path", CAPTURES, ids=capture_id)
def test_fold_equals_folding_the_events_and_auto(path: Path) -> None:
    provider = CAPTURE_PROVIDER[path.parent.name]
    body = path.read_bytes()
    rng = random.Random(path.name)
    cuts = sorted(rng.sample(range(1, len(body)), min(len(body) - 1, 25)))
    reads = [body[a:b] for a, b in itertools.pairwise([0, *cuts, len(body)])]
    folded, error = fold_capture(path, [body])
    want = comparable(folded)
    for chunks in ([body], reads):
        got, raised = folded_from_events(chunks, provider)
        assert raised is (type(error) if error is not None else None)
        assert comparable(got) == want
        detected, auto_error = fold_capture_as(chunks, "auto")
        assert type(auto_error) is type(error)
        assert comparable(detected) == want


def fold_capture_as(
    chunks: list[bytes], provider: ProviderName
) -> tuple[Message, BaseException | None]:
    try:
        return sf.fold(chunks, provider=provider), None
    except sf.StreamfoldError as exc:
        partial = getattr(exc, "partial", None)
        assert isinstance(partial, Message)
        return partial, exc
