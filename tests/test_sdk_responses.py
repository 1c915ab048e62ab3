"""The official SDKs' raw streamed responses, read by streamfold as they are.

openai and anthropic make their requests with ``httpx2`` (not ``httpx``): their
``with_streaming_response`` gives a response whose ``http_response`` is an ``httpx2.Response``
and whose ``iter_bytes()`` raises ``httpx2``'s transport errors. Each SDK is pointed at the
loopback server (``/example/<file>``: its client appends ``/chat/completions`` or
``/v1/messages``) and a cut is the server's ``cut=N`` fault, sent as ``extra_query``.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import pytest

import streamfold as sf
from http_server import EXAMPLES, StreamServer, stream_server
from streamfold._types import ProviderName

__all__ = ["stream_server"]

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")

MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
OPENAI_FILE = "openai_parallel_tools.sse"
ANTHROPIC_FILE = "anthropic_thinking.sse"


def whole(name: str, provider: ProviderName) -> sf.Message:
    return sf.fold([(EXAMPLES / name).read_bytes()], provider=provider)


def open_openai(client: Any, **extra: Any) -> Any:
    return client.chat.completions.with_streaming_response.create(
        model="gpt-4o", messages=MESSAGES, stream=True, **extra
    )


def open_anthropic(client: Any, **extra: Any) -> Any:
    return client.messages.with_streaming_response.create(
        model="claude-haiku-4-5", max_tokens=1024, messages=MESSAGES, stream=True, **extra
    )


SDKS = {
    "openai": (OPENAI_FILE, open_openai, "OpenAI", "AsyncOpenAI"),
    "anthropic": (ANTHROPIC_FILE, open_anthropic, "Anthropic", "AsyncAnthropic"),
}


def client_of(server: StreamServer, provider: ProviderName, *, asynchronous: bool = False) -> Any:
    name, _, sync_class, async_class = SDKS[provider]
    module = openai if provider == "openai" else anthropic
    cls = getattr(module, async_class if asynchronous else sync_class)
    return cls(api_key="k", base_url=server.url(f"/example/{name}"), max_retries=0)


@pytest.mark.parametrize("provider", list(SDKS))
def test_an_sdk_http_response_folds(stream_server: StreamServer, provider: ProviderName) -> None:
    # `response.http_response` is an httpx2.Response: it was a TypeError ("expected an
    # iterable of bytes or a response"), so users had to know to pass iter_bytes().
    name, open_stream, _, _ = SDKS[provider]
    with client_of(stream_server, provider) as client, open_stream(client) as response:
        assert isinstance(response.http_response, httpx2.Response)
        message = sf.fold(response.http_response, provider=provider)
    assert message == whole(name, provider)
    assert message.complete


@pytest.mark.parametrize("provider", list(SDKS))
def test_a_cut_sdk_body_is_connection_lost_with_the_partial(
    stream_server: StreamServer, provider: ProviderName
) -> None:
    # A cut while the SDK's body is read raised httpx2's own RemoteProtocolError, which no
    # `except sf.StreamfoldError` caught and which carried no partial message.
    name, open_stream, _, _ = SDKS[provider]
    extra = {"extra_query": {"cut": 700}}
    for source in ("iter_bytes", "http_response"):
        with (
            client_of(stream_server, provider) as client,
            open_stream(client, **extra) as response,
            pytest.raises(sf.ConnectionLostError) as info,
        ):
            chunks = response.iter_bytes() if source == "iter_bytes" else response.http_response
            sf.fold(chunks, provider=provider)
        assert isinstance(info.value.__cause__, httpx2.TransportError), source
        assert isinstance(info.value.partial, sf.Message)
        assert not info.value.partial.complete
        assert info.value.partial.id == whole(name, provider).id


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("provider", list(SDKS))
@pytest.mark.anyio
async def test_an_async_sdk_http_response_folds(
    stream_server: StreamServer, provider: ProviderName, anyio_backend: str
) -> None:
    name, open_stream, _, _ = SDKS[provider]
    client = client_of(stream_server, provider, asynchronous=True)
    async with client, open_stream(client) as response:
        message = await sf.afold(response.http_response, provider=provider)
    assert message == whole(name, provider)


@pytest.mark.parametrize("provider", list(SDKS))
@pytest.mark.anyio
async def test_a_cut_async_sdk_body_is_connection_lost(
    stream_server: StreamServer, provider: ProviderName
) -> None:
    _, open_stream, _, _ = SDKS[provider]
    client = client_of(stream_server, provider, asynchronous=True)
    async with client, open_stream(client, extra_query={"cut": 700}) as response:
        with pytest.raises(sf.ConnectionLostError) as info:
            await sf.afold(response.iter_bytes(), provider=provider)
    assert isinstance(info.value.__cause__, httpx2.TransportError)
    assert isinstance(info.value.partial, sf.Message)


def test_the_sync_api_refuses_an_async_sdk_response(stream_server: StreamServer) -> None:
    # The async-only check reads the response's own module's stream classes (httpx2's here).
    async def main() -> None:
        client = client_of(stream_server, "openai", asynchronous=True)
        async with client, open_openai(client) as response:
            with pytest.raises(TypeError, match="AsyncClient"):
                sf.fold(response.http_response, provider="openai")

    anyio.run(main)


def test_an_httpx2_read_timeout_set_by_idle_timeout_is_that_silence() -> None:
    # A resumable fold over an SDK's response: httpx2's read timeout that idle_timeout set is
    # the same silence as httpx's (IdleTimeoutError, then a reconnection), not a program error.
    from streamfold._failures import is_read_timeout

    request = httpx2.Request("GET", "http://127.0.0.1/", extensions={"timeout": {"read": 0.5}})
    assert is_read_timeout(httpx2.ReadTimeout("silent", request=request), 0.5)
    assert not is_read_timeout(httpx2.ReadTimeout("the caller's own", request=request), 9.0)
    assert not is_read_timeout(httpx2.ConnectTimeout("no connection", request=request), 0.5)


# -- sf.stream / sf.astream with the SDKs' own client (an httpx2 client) --------------------


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.anyio
async def test_stream_with_an_httpx2_client_bounds_its_reads_by_idle_timeout(
    stream_server: StreamServer, anyio_backend: str
) -> None:
    """``idle_timeout`` makes the request's read timeout: built from httpx's ``Timeout``, an
    httpx2 client refused it (TypeError: '<' not supported between 'int' and 'Timeout')."""
    url = stream_server.url("/stream/onecortex")
    with (
        httpx2.Client() as client,
        sf.stream("GET", url, provider="onecortex", client=client, idle_timeout=30) as s,
    ):
        message = s.fold()
    assert message.complete
    async with (
        httpx2.AsyncClient() as aclient,
        sf.astream("GET", url, provider="onecortex", client=aclient, idle_timeout=30) as a,
    ):
        assert (await a.fold()) == message


def test_stream_with_an_httpx2_client_retries_a_refused_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A connection an httpx2 client could not make is ``httpx2.ConnectError``: sent again as
    httpx's is (it was raised at the first attempt)."""
    import socket

    import streamfold._client.stream as sfhttp

    waits: list[float] = []
    monkeypatch.setattr(sfhttp, "pause", waits.append)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: a connection to it is refused
    with (
        httpx2.Client() as client,
        pytest.raises(httpx2.ConnectError) as info,
        sf.stream("POST", f"http://127.0.0.1:{port}/invoke", provider="onecortex", client=client),
    ):
        pytest.fail("never opened")
    assert getattr(info.value, "attempts", None) == 3
    assert len(waits) == 2


def test_stream_with_an_httpx2_client_resumes_after_a_non_ascii_event_id(
    stream_server: StreamServer,
) -> None:
    """The reconnection sends ``Last-Event-ID: évt-…`` in UTF-8. Its headers were httpx's
    ``Headers``, which an httpx2 client reads as a plain mapping and encodes in ASCII: the
    stream died reconnecting with UnicodeEncodeError."""
    rid = "httpx2-resume-unicode-id"
    params = {"rid": rid, "ids": "unicode", "cut": 400, "replay": 1}
    url = stream_server.url("/stream/onecortex")
    with (
        httpx2.Client() as client,
        sf.stream(
            "GET",
            url,
            provider="onecortex",
            client=client,
            resume=True,
            initial_delay=0.005,
            params=params,
        ) as s,
    ):
        message = s.fold()
    assert message.complete
    seen = stream_server.seen(rid)
    assert len(seen) == 2
    assert seen[1].headers["Last-Event-ID"].startswith("évt-")


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.anyio
async def test_stream_with_an_httpx2_client_needs_no_httpx(
    stream_server: StreamServer, anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """openai 3.x and anthropic 2.x install httpx2 without httpx: given their client,
    sf.stream raised ModuleNotFoundError (install httpx), though httpx made no request."""
    monkeypatch.setitem(sys.modules, "httpx", None)  # ``import httpx`` raises ImportError
    rid = f"httpx2-alone-{anyio_backend}"
    url = stream_server.url("/stream/onecortex")
    params = {"rid": rid, "ids": "unicode", "cut": 400, "replay": 1}
    options: dict[str, Any] = {"resume": True, "idle_timeout": 30, "initial_delay": 0.005}
    with (
        httpx2.Client() as client,
        sf.stream("GET", url, provider="onecortex", client=client, params=params, **options) as s,
    ):
        message = s.fold()
    assert message.complete
    assert len(stream_server.seen(rid)) == 2  # resumed once
    async with (
        httpx2.AsyncClient() as aclient,
        sf.astream("GET", url, provider="onecortex", client=aclient, params=params, **options) as a,
    ):
        assert (await a.fold()) == message
    # Without a client, the shared sf.Client makes the request: httpx is not needed either.
    with sf.stream("GET", url, provider="onecortex", params=params, **options) as s:
        assert s.fold() == message
