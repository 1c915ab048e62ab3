"""The documented public API as a user's program writes it, for ``mypy --strict`` (``make lint``).

Never run, only type-checked: every usage the README and docs/ show must pass without a cast or
a ``# type: ignore``, under mypy --strict and pyright alike, and the main results must have
useful types (``assert_type``), not
``Any``. ``StreamfoldError.partial`` stays ``Any`` on purpose: it is the ``Message`` of a fold
and ``None`` for ``sf.events``, and ``except IncompleteStreamError as err: err.partial.text``
is the documented use.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import httpx
import httpx2
import requests
from typing_extensions import assert_never, assert_type

import streamfold as sf
from streamfold._message import FinishReason


def render(text: str) -> None:
    print(text)


def folding(chunks: list[bytes], url: str, body: dict[str, Any], h: dict[str, str]) -> None:
    history: list[dict[str, Any]] = []
    with httpx.Client() as client, client.stream("POST", url, json=body, headers=h) as response:
        message = sf.fold(response, provider="anthropic")
    assert_type(message, sf.Message)
    assert_type(message.text, str)
    assert_type(message.reasoning, str)
    assert_type(message.tool_calls, list[sf.ToolCall])
    assert_type(message.finish_reason, FinishReason | None)
    assert_type(message.usage, sf.Usage | None)
    assert_type(message.choices, list[sf.Message])
    assert_type(message.blocks, list[sf.Block])
    assert_type(message.citations, list[sf.Citation])
    assert_type(message.tool_results, list[sf.ToolResult])
    assert_type(message.steps, list[sf.Step])
    history.append(message.to_request())
    assert_type(message.to_request("anthropic"), dict[str, Any])
    assert_type(message.to_request("openai-responses"), list[dict[str, Any]])
    next_turn = [*history, message.to_request("openai")]
    print(next_turn)
    for call in message.tool_calls:
        assert_type(call.arguments_json, str)
        assert_type(call.complete, bool)
        print(call.name, call.arguments, call.partial_arguments())
    if message.usage is not None:
        assert_type(message.usage.total_tokens, int | None)

    with requests.post(url, json=body, headers=h, stream=True) as rresponse:
        assert_type(sf.fold(rresponse, provider="openai"), sf.Message)
    assert_type(sf.fold(chunks), sf.Message)
    assert_type(sf.fold(iter(chunks), "gemini", strict=True, max_event_bytes=2**20), sf.Message)


def matching_events(chunks: Iterator[bytes]) -> None:
    for event in sf.events(chunks, provider="cohere-v2"):
        assert_type(event, sf.AnyEvent)
        match event:
            case sf.BlockDelta(kind="text", text=text):
                assert_type(text, str)
                render(text)
            case sf.BlockEnd(kind="tool_call", index=i):
                assert_type(i, int)
            case sf.MessageEnd(finish_reason=reason):
                assert_type(reason, FinishReason | None)
            case sf.Notice(kind="provider_detected", data=name):
                print(name)
            case sf.CitationAdded(citation=citation):
                assert_type(citation, sf.Citation)
            case sf.UsageUpdate(usage=usage):
                assert_type(usage, sf.Usage)
            case sf.ToolResultAdded(result=result):
                assert_type(result, sf.ToolResult)
            case sf.RunStatus(status=status, terminal=terminal):
                assert_type(status, str)
                assert_type(terminal, bool)
            case _:
                print(event.type, event.raw)


def describe(event: sf.AnyEvent) -> str:
    """A match over every event class: a new class in ``AnyEvent`` fails ``assert_never``."""
    match event:
        case sf.MessageStart(id=message_id):
            return f"start {message_id}"
        case sf.BlockStart() | sf.BlockDelta() | sf.SignatureDelta() | sf.BlockEnd():
            return f"block {event.index}"
        case sf.CitationAdded() | sf.UsageUpdate() | sf.MessageDelta() | sf.MessageEnd():
            return event.type
        case sf.StepStart() | sf.StepEnd() | sf.ToolResultAdded() | sf.SourcesAdded():
            return event.type
        case sf.MediaAdded() | sf.RunStatus() | sf.Notice() | sf.Unknown():
            return event.type
        case _:
            assert_never(event)


def provider_names(chunks: list[bytes], name: str) -> None:
    provider: sf.ProviderName = "openai-chat"
    assert_type(sf.fold(chunks, provider=provider), sf.Message)
    for known in sf.PROVIDER_NAMES:
        assert_type(known, sf.ProviderName)
        print(sf.fold(chunks, provider=known), sf.Folder(known))
    if name in ("anthropic", "gemini"):
        print(describe(next(sf.events(chunks, provider="anthropic"))))


def folding_by_hand(chunks: list[bytes]) -> None:
    folder = sf.Folder("anthropic")
    for event in sf.events(chunks, provider="anthropic"):
        folder.add(event)
        assert_type(folder.snapshot(), sf.Message)
    assert_type(folder.result(), sf.Message)
    assert_type(folder.results(), list[sf.Message])
    auto = sf.Folder()
    for event in sf.events(chunks):
        auto.add(event)


def errors(chunks: list[bytes]) -> None:
    try:
        sf.fold(chunks, provider="openai")
    except sf.ConnectionLostError as err:
        assert_type(err.partial, sf.Message | None)  # None from sf.events, which folds nothing
        if err.partial is not None:
            print(err.partial.text, err.__cause__)
    except sf.IncompleteStreamError as err:
        if err.partial is not None:
            print(err.partial.text, err.partial.tool_calls, err.provider, err.position)
    except sf.StreamError as err:
        assert_type(err.code, str | int | None)
        assert_type(err.message, str)
        assert_type(err.event, str | None)
        assert_type(err.status, int | None)
        assert_type(err.retry_after, float | None)
        assert_type(err.retryable_without_duplicate, bool)
        print(err.raw, err.partial.finish_reason if err.partial else None)
    except sf.ProtocolError as err:
        assert_type(err.provider, str | None)
        assert_type(err.position, int | None)
        print(err.partial, err.events, err.event)
    except sf.StreamfoldError as err:
        print(err, err.partial)
    acc = sf.JsonAccumulator()
    try:
        acc.value()
    except (sf.IncompleteJsonError, sf.InvalidJsonError) as err:
        print(err.offset, err.expected, err.partial)


def streams(url: str, body: dict[str, Any], h: dict[str, str]) -> None:
    with sf.stream("POST", url, provider="anthropic", json=body, headers=h) as s:
        assert_type(s, sf.EventStream)
        for event in s:
            assert_type(event, sf.AnyEvent)
            assert_type(s.snapshot(), sf.Message)
        assert_type(s.fold(), sf.Message)
    for event in sf.stream("GET", url, provider="clouisle", resume=True, idle_timeout=30):
        print(event)
    with sf.stream("POST", url, provider="anthropic", json=body) as s:
        for text in s.text_stream:
            assert_type(text, str)
    try:
        with sf.stream("POST", url, provider="openai", json=body, max_retries=4) as s:
            s.fold()
    except sf.StreamError as err:
        assert_type(err.attempts, int)


def resumable(client: httpx.Client, run_stream_url: str) -> None:
    def connect(cursor: sf.Cursor) -> contextlib.AbstractContextManager[httpx.Response]:
        return client.stream("GET", run_stream_url, params=cursor.params, headers=cursor.headers)

    def log(cursor: sf.Cursor, delay: float, error: Exception | None) -> None:
        print(cursor.attempt, cursor.can_resume, delay, error)

    message = sf.fold_resumable(
        connect, provider="clouisle", max_reconnects=5, idle_timeout=60, on_reconnect=log
    )
    assert_type(message, sf.Message)

    def remember(cursor: sf.Cursor, delay: float, error: Exception | None) -> str:
        note = f"reconnecting after {error!r} in {delay} s"
        print(note)
        return note  # a callback's return value is ignored, whatever its type

    for event in sf.events_resumable(connect, provider="clouisle", on_reconnect=remember):
        assert_type(event, sf.AnyEvent)


def catching_up(client: httpx.Client, run_url: str, answer: bytes) -> None:
    body = client.get(f"{run_url}/events", params={"after_sequence": 0}).json()
    assert_type(sf.fold_json(body, provider="clouisle"), sf.Message)
    assert_type(sf.fold_json(answer, "onecortex", strict=True), sf.Message)
    for event in sf.events_json(body, provider="clouisle"):
        assert_type(event, sf.AnyEvent)

    def connect(cursor: sf.Cursor) -> contextlib.AbstractContextManager[httpx.Response]:
        return client.stream("GET", f"{run_url}/stream", params=cursor.params)

    message = sf.fold_resumable(connect, provider="clouisle", catch_up=body)
    assert_type(message, sf.Message)
    for event in sf.events_resumable(connect, provider="clouisle", catch_up=answer):
        assert_type(event, sf.AnyEvent)


async def asynchronous(
    achunks: AsyncIterator[bytes],
    url: str,
    body: dict[str, Any],
    my_async_client: httpx.AsyncClient,
) -> None:
    assert_type(await sf.afold(achunks, provider="gemini"), sf.Message)
    async for event in sf.aevents(achunks, provider="gemini"):
        assert_type(event, sf.AnyEvent)
    async with httpx.AsyncClient() as client, client.stream("POST", url, json=body) as response:
        assert_type(await sf.afold(response, provider="openai"), sf.Message)
    async with aiohttp.ClientSession() as session, session.post(url, json=body) as aresponse:
        assert_type(await sf.afold(aresponse, provider="cohere-v2"), sf.Message)
    async with sf.astream(
        "POST", url, provider="openai", json=body, client=my_async_client, max_retries=0
    ) as s:
        assert_type(s, sf.AsyncEventStream)
        async for event in s:
            assert_type(event, sf.AnyEvent)
        async for text in s.text_stream:
            assert_type(text, str)
        assert_type(await s.fold(), sf.Message)

    def connect(cursor: sf.Cursor) -> Any:
        return session.get(url, headers=cursor.headers, params=cursor.params)

    async def log(cursor: sf.Cursor, delay: float, error: Exception | None) -> None:
        print(cursor, delay, error)

    message = await sf.afold_resumable(connect, provider="clouisle", on_reconnect=log)
    assert_type(message, sf.Message)
    catch_up = {"code": 0, "data": [], "msg": "success"}
    message = await sf.afold_resumable(connect, provider="clouisle", catch_up=catch_up)
    assert_type(message, sf.Message)
    async for event in sf.aevents_resumable(connect, provider="clouisle", on_reconnect=print):
        assert_type(event, sf.AnyEvent)


def framing(chunks: list[bytes], fragments: list[str]) -> None:
    dec = sf.SSEDecoder(max_event_bytes=16 * 2**20)
    for chunk in chunks:
        for ev in dec.feed(chunk):
            assert_type(ev, sf.ServerSentEvent)
            assert_type(ev.data, str)
            print(ev.event, ev.id, ev.retry, ev.json())
    assert_type(dec.close(), list[sf.ServerSentEvent])
    assert_type(dec.dropped_partial, bool)
    for sse in sf.iter_sse(chunks):
        assert_type(sse, sf.ServerSentEvent)
    for line in sf.iter_json_lines(chunks):
        print(line)
    acc = sf.JsonAccumulator()
    for fragment in fragments:
        acc.push(fragment)
        print(acc.partial())
    value, changes = acc.partial_with_changes()
    assert_type(changes, list[sf.JsonChange])
    for change in changes:
        print(change.path, change.kind, change.text, value)
    assert_type(acc.is_complete, bool)
    print(acc.value())


async def mistakes_mypy_catches(response: httpx.Response, session: aiohttp.ClientSession) -> None:
    # Each is a TypeError at run time; strict mode (warn_unused_ignores) fails if the API's
    # types ever stop telling them apart.
    sf.fold(response.iter_text(), provider="openai")  # type: ignore[arg-type]
    sf.fold([b""], provider="opena1")  # type: ignore[arg-type]
    sf.fold(b"data: {}\n\n", provider="openai")  # type: ignore[arg-type]
    await sf.afold(response.iter_bytes(), provider="openai")  # type: ignore[arg-type]
    async with session.get("http://127.0.0.1/") as aresponse:
        sf.fold(aresponse, provider="openai")  # type: ignore[arg-type]
    for _ in sf.events(response.aiter_bytes()):  # type: ignore[arg-type]
        pass


async def sdk_clients(
    url: str, body: dict[str, Any], sdk_client: httpx2.Client, sdk_async: httpx2.AsyncClient
) -> None:
    """``sf.stream`` / ``sf.astream`` with the OpenAI and Anthropic SDKs' own httpx2 clients."""
    with sf.stream("POST", url, provider="openai", json=body, client=sdk_client) as s:
        assert_type(s.fold(), sf.Message)
    async with sf.astream("POST", url, provider="openai", json=body, client=sdk_async) as a:
        assert_type(await a.fold(), sf.Message)
