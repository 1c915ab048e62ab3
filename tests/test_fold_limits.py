"""``max_message_bytes``: what a fold keeps is capped, past which it raises ``ProtocolError``
with the partial message (an endless answer would take the memory)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest

import streamfold as sf
from http_server import StreamServer, generated_stream, stream_server
from streamfold._engine.folder import DEFAULT_MAX_MESSAGE_BYTES

__all__ = ["stream_server"]

pytestmark = pytest.mark.filterwarnings(r"ignore:Async generator 'http(x|core)\.:ResourceWarning")


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    payload = {
        "id": "c",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def text_stream(n: int) -> list[bytes]:
    """``n`` text deltas of 10 characters, one read each, then the end."""
    return [*(_chunk({"content": "0123456789"}) for _ in range(n)), _chunk({}, "stop")]


def argument_stream(n: int) -> list[bytes]:
    """One tool call whose arguments come in ``n`` fragments of 10 characters."""
    start = {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f"}}]}
    first = {"tool_calls": [{"index": 0, "function": {"arguments": '{"a": "'}}]}
    piece = {"tool_calls": [{"index": 0, "function": {"arguments": "x" * 10}}]}
    return [_chunk(start), _chunk(first), *(_chunk(piece) for _ in range(n))]


STREAMS = {"text": text_stream, "arguments": argument_stream}


def _check(error: sf.ProtocolError, kind: str, limit: int) -> None:
    assert error.limit == limit
    assert "max_message_bytes" in str(error)
    assert error.provider == "openai"
    partial = error.partial
    assert partial is not None
    held = partial.text if kind == "text" else partial.tool_calls[0].arguments_json
    assert limit - 10 < len(held) <= limit  # everything up to the cap, nothing past it


@pytest.mark.parametrize("kind", list(STREAMS))
@pytest.mark.parametrize("reads", ["one per event", "whole"])
def test_fold_past_max_message_bytes_raises_with_the_partial(kind: str, reads: str) -> None:
    chunks = STREAMS[kind](500)
    if reads == "whole":
        chunks = [b"".join(chunks)]
    with pytest.raises(sf.ProtocolError) as info:
        sf.fold(chunks, provider="openai", max_message_bytes=1000)
    _check(info.value, kind, 1000)


def test_a_message_within_the_cap_folds() -> None:
    message = sf.fold(text_stream(100), provider="openai", max_message_bytes=1000)
    assert message.complete and len(message.text) == 1000


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("kind", list(STREAMS))
async def test_afold_past_max_message_bytes(anyio_backend: str, kind: str) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for chunk in STREAMS[kind](500):
            yield chunk
            await anyio.sleep(0)

    with pytest.raises(sf.ProtocolError) as info:
        await sf.afold(chunks(), provider="openai", max_message_bytes=1000)
    _check(info.value, kind, 1000)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_stream_fold_past_max_message_bytes(
    anyio_backend: str, kind: str, stream_server: StreamServer
) -> None:
    url = stream_server.url("/generate", provider="openai", n=500, delta="0123456789")
    with pytest.raises(sf.ProtocolError) as info:
        if kind == "sync":
            with sf.stream("GET", url, provider="openai", max_message_bytes=1000) as s:
                s.fold()
        else:
            async with sf.astream("GET", url, provider="openai", max_message_bytes=1000) as a:
                await a.fold()
    _check(info.value, "text", 1000)


def test_fold_resumable_past_max_message_bytes(stream_server: StreamServer) -> None:
    url = stream_server.url("/generate", provider="openai", n=500, delta="0123456789")
    with httpx.Client() as client, pytest.raises(sf.ProtocolError) as info:
        sf.fold_resumable(
            lambda cursor: client.stream("GET", url), provider="openai", max_message_bytes=1000
        )
    _check(info.value, "text", 1000)


def test_the_default_is_far_past_a_real_answer() -> None:
    assert DEFAULT_MAX_MESSAGE_BYTES == 256 * 2**20
    assert sf.Folder().max_message_bytes == DEFAULT_MAX_MESSAGE_BYTES
    body = generated_stream("anthropic", 2000, "tok ")
    assert sf.fold([body], provider="anthropic").complete


@pytest.mark.parametrize("value", [0, -1, True, 1.5, "10"])
def test_max_message_bytes_is_checked(value: Any) -> None:
    with pytest.raises(ValueError, match="max_message_bytes"):
        sf.fold([b""], provider="openai", max_message_bytes=value)
    with pytest.raises(ValueError, match="max_message_bytes"):
        sf.stream("GET", "http://127.0.0.1:9", provider="openai", max_message_bytes=value)
