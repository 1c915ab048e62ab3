"""iter_sse / aiter_sse and their JSON-lines twins: any (async) iterable of bytes, sync and under
asyncio and trio alike."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

import anyio
import pytest

import streamfold as sf
from streamfold import ProtocolError, ServerSentEvent
from streamfold._types import ProviderName

SSE = "event: greet\ndata: héllo\n\ndata: 😀\nid: 7\n\n: comment\n\ndata: tail\n\n".encode()
SSE_EVENTS = [("greet", "héllo", ""), ("message", "😀", "7"), ("message", "tail", "7")]
JSONL = '{"a": 1}\r\n\n["é", 2]\n"last"'.encode()
JSONL_VALUES = [{"a": 1}, ["é", 2], "last"]


def triples(events: Iterable[ServerSentEvent]) -> list[tuple[str, str, str]]:
    return [(e.event, e.data, e.id) for e in events]


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


class Chunks:
    """An async iterable of chunks that suspends before each, as a network read would.

    A class rather than an async generator: the tests that raise leave it unfinished, and an
    abandoned async generator is finalized by the event loop (trio warns about it).
    """

    def __init__(self, chunks: Iterable[Any]) -> None:
        self._chunks = iter(chunks)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self

    async def __anext__(self) -> Any:
        await anyio.sleep(0)
        try:
            return next(self._chunks)
        except StopIteration:
            raise StopAsyncIteration from None


def gen(chunks: Iterable[Any]) -> Iterator[Any]:
    yield from chunks


# ---- sync ----


@pytest.mark.parametrize("chunks", [[SSE], bytewise(SSE), [SSE[:5], b"", SSE[5:]]])
def test_iter_sse_over_lists_and_generators(chunks: list[bytes]) -> None:
    assert triples(sf.iter_sse(chunks)) == SSE_EVENTS
    assert triples(sf.iter_sse(gen(chunks))) == SSE_EVENTS


def test_iter_sse_takes_bytearray_and_memoryview_chunks() -> None:
    chunks: list[bytes | bytearray | memoryview] = [
        bytearray(SSE[:10]),
        memoryview(SSE)[10:20],
        SSE[20:],
    ]
    assert triples(sf.iter_sse(chunks)) == SSE_EVENTS


def test_iter_sse_is_lazy() -> None:
    fed: list[bytes] = []

    def source() -> Iterator[bytes]:
        for chunk in (b"data: 1\n\n", b"data: 2\n\n"):
            fed.append(chunk)
            yield chunk

    events = sf.iter_sse(source())
    assert next(events).data == "1"
    assert len(fed) == 1


def test_iter_sse_refuses_str() -> None:
    with pytest.raises(TypeError, match="bytes, not str"):
        list(sf.iter_sse(["data: x\n\n"]))  # type: ignore[list-item]
    with pytest.raises(TypeError, match="got str"):
        list(sf.iter_sse("data: x\n\n"))  # type: ignore[arg-type]


def test_iter_sse_yields_the_events_before_an_error_then_raises() -> None:
    seen: list[str] = []
    with pytest.raises(ProtocolError) as info:
        for event in sf.iter_sse([b"data: ok\n\ndata: 0123456789\n\n"], max_event_bytes=4):
            seen.append(event.data)
    assert seen == ["ok"]
    assert info.value.limit == 4


def test_iter_json_lines() -> None:
    assert list(sf.iter_json_lines([JSONL])) == JSONL_VALUES
    assert list(sf.iter_json_lines(gen(bytewise(JSONL)))) == JSONL_VALUES


def test_iter_json_lines_refuses_str_and_reports_bad_lines_after_good_ones() -> None:
    with pytest.raises(TypeError, match="bytes, not str"):
        list(sf.iter_json_lines(["1\n"]))  # type: ignore[list-item]
    with pytest.raises(TypeError, match="got str"):
        list(sf.iter_json_lines("1\n"))  # type: ignore[arg-type]
    seen: list[Any] = []
    with pytest.raises(ProtocolError) as info:
        for value in sf.iter_json_lines([b"1\n2\n{oops\n3\n"]):
            seen.append(value)
    assert seen == [1, 2]
    assert info.value.line == 3


def test_iter_json_lines_error_at_close_comes_after_the_values() -> None:
    seen: list[Any] = []
    with pytest.raises(ProtocolError):
        for value in sf.iter_json_lines([b"1\n", b"{"]):
            seen.append(value)
    assert seen == [1]


# ---- async, under asyncio and trio ----


@pytest.mark.anyio
@pytest.mark.parametrize("split", [False, True])
async def test_aiter_sse(split: bool) -> None:
    chunks = bytewise(SSE) if split else [SSE]
    assert triples([e async for e in sf.aiter_sse(Chunks(chunks))]) == SSE_EVENTS


@pytest.mark.anyio
async def test_aiter_sse_refuses_str() -> None:
    with pytest.raises(TypeError, match="bytes, not str"):
        [e async for e in sf.aiter_sse(Chunks(["data: x\n\n"]))]


@pytest.mark.anyio
async def test_aiter_sse_yields_the_events_before_an_error_then_raises() -> None:
    seen: list[str] = []
    with pytest.raises(ProtocolError):
        async for event in sf.aiter_sse(
            Chunks([b"data: ok\n\ndata: 123456\n\n"]), max_event_bytes=4
        ):
            seen.append(event.data)
    assert seen == ["ok"]


@pytest.mark.anyio
@pytest.mark.parametrize("split", [False, True])
async def test_aiter_json_lines(split: bool) -> None:
    chunks = bytewise(JSONL) if split else [JSONL]
    assert [v async for v in sf.aiter_json_lines(Chunks(chunks))] == JSONL_VALUES


@pytest.mark.anyio
async def test_aiter_json_lines_refuses_str_and_reports_bad_lines() -> None:
    with pytest.raises(TypeError, match="bytes, not str"):
        [v async for v in sf.aiter_json_lines(Chunks(["1\n"]))]
    seen: list[Any] = []
    with pytest.raises(ProtocolError) as info:
        async for value in sf.aiter_json_lines(Chunks([b"1\n", b"nope\n"])):
            seen.append(value)
    assert seen == [1]
    assert info.value.line == 2


@pytest.mark.anyio
async def test_aiter_sse_interleaves_with_other_tasks() -> None:
    # Two streams decoded concurrently in one task group: nothing blocks, nothing mixes.
    results: dict[str, list[str]] = {}

    async def consume(name: str) -> None:
        body = b"".join(f"data: {name}{i}\n\n".encode() for i in range(20))
        results[name] = [e.data async for e in sf.aiter_sse(Chunks(bytewise(body)))]

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume, "a")
        tg.start_soon(consume, "b")
    assert results == {name: [f"{name}{i}" for i in range(20)] for name in "ab"}


@pytest.mark.parametrize("provider", ["auto", "openai", "cohere-v1"])
@pytest.mark.parametrize(
    "chunks",
    [list(b"data: x\n\n"), [b"\n", 5], [None]],
    ids=["iterated-bytes", "int-later", "none"],
)
def test_events_and_fold_say_which_chunk_is_not_bytes(provider: ProviderName, chunks: Any) -> None:
    # `sf.fold(iter(body))` iterates ints: the error says what arrived and what to pass,
    # not "'int' object is not subscriptable" from deep inside.
    for run in (
        lambda: sf.fold(chunks, provider=provider),
        lambda: list(sf.events(chunks, provider=provider)),
    ):
        with pytest.raises(TypeError, match=r"chunks must be bytes.*got (int|NoneType)"):
            run()


class _Response:
    """Stands for an HTTP response object: not itself an iterable of bytes."""

    def iter_bytes(self) -> Iterator[bytes]:
        yield b"data: x\n\n"


@pytest.mark.parametrize("iterate", [sf.iter_sse, sf.iter_json_lines])
def test_framing_iterators_say_what_to_pass_for_a_body_or_a_response(iterate: Any) -> None:
    with pytest.raises(TypeError, match=r"got bytes: wrap a whole body as \[body\]"):
        list(iterate(b"data: x\n\n"))
    with pytest.raises(TypeError, match=r"got .*_Response.*iter_bytes\(\)"):
        list(iterate(_Response()))


@pytest.mark.anyio
async def test_async_framing_iterators_say_what_to_pass() -> None:
    for iterate in (sf.aiter_sse, sf.aiter_json_lines):
        with pytest.raises(TypeError, match=r"got .*_Response.*aiter_bytes\(\)"):
            async for _ in iterate(_Response()):  # type: ignore[arg-type]
                pass
