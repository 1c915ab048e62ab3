"""sf.relay / sf.arelay: one provider's stream read, folded and written in another's format.

The bytes relayed are what sf.Writer writes for the stream's events, read one event per read;
``.message`` is what sf.fold returns; an upstream failure is written as the target's error and
then raised as fold raises it; closing the relay closes the upstream. The example app
(docs/examples/relay_app.py) runs under uvicorn on loopback, read by httpx, with its upstream
on the test server.
"""

from __future__ import annotations

import importlib.util
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

import streamfold as sf
from http_server import StreamServer, split_events, stream_server
from stream_cases import CASES, Case
from streamfold._types import ProviderName
from streamfold._writers import Writer
from writer_roundtrip import events_until_error, written

__all__ = ["stream_server"]

TARGETS: tuple[ProviderName, ...] = (
    "openai",
    "anthropic",
    "gemini",
    "cohere-v2",
    "openai-responses",
    "mistral",
)
ROOT = Path(__file__).resolve().parents[1]


def reads(case: Case) -> list[bytes]:
    """The stream one event per read (the reads services see)."""
    content_type = "application/x-ndjson" if case.provider == "cohere-v1" else "text/event-stream"
    return [b.data for b in split_events(case.body, content_type)] or [case.body]


def relayed(case: Case, to: str) -> tuple[bytes, sf.Relay, BaseException | None]:
    r = sf.relay(reads(case), provider=case.provider, to=to)
    out = b""
    try:
        for chunk in r:
            assert chunk, "no empty writes"
            out += chunk
    except sf.StreamfoldError as exc:
        return out, r, exc
    return out, r, None


@pytest.mark.parametrize("to", TARGETS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_relay_writes_what_the_writer_writes_and_folds_what_fold_folds(
    case: Case, to: ProviderName
) -> None:
    out, r, exc = relayed(case, to)
    want, want_exc = case.fold()
    assert type(exc) is type(want_exc)
    assert r.message == want
    assert r.error is exc
    if exc is None or isinstance(exc, sf.StreamError):
        assert out == written(case, to)[0]
        return
    # A cut or broken upstream: the events' bytes, then the target's error for the failure.
    events, _ = events_until_error(case)
    w = Writer(to, source=case.provider)
    assert out == b"".join(w.write(e) for e in events) + w.error(exc)
    with pytest.raises(sf.StreamError) as info:
        sf.fold([out], provider=to)
    assert info.value.message == str(exc)


def test_to_defaults_to_the_detected_source_format() -> None:
    (case,) = [c for c in CASES if c.id == "example/anthropic_thinking.sse"]
    r = sf.relay(reads(case))
    out = b"".join(r)
    assert r.writer is not None and r.writer.name == "anthropic"
    assert sf.fold([out], provider="anthropic").blocks[0].signature  # its own: kept
    assert r.message == sf.fold([case.body])


def test_an_unknown_target_is_refused_before_reading() -> None:
    def never() -> Iterator[bytes]:
        raise AssertionError("read")
        yield b""

    with pytest.raises(ValueError, match="no writer"):
        sf.relay(never(), provider="openai", to="nope")


def test_an_upstream_failure_is_written_then_raised() -> None:
    (case,) = [c for c in CASES if c.id == "example/anthropic_overloaded_error.sse"]
    r = sf.relay(reads(case), provider="anthropic", to="openai")
    got: list[bytes] = []
    with pytest.raises(sf.StreamError, match="Overloaded") as info:
        for chunk in r:
            got.append(chunk)
    assert b'"error":{"message":"Overloaded","type":"overloaded_error"' in got[-1]
    message = r.message
    assert message is info.value.partial
    assert message is not None
    assert message.text.startswith("Here is a summary of the quarterly report:")


def test_a_lost_connection_is_written_as_an_error_then_raised() -> None:
    def cut() -> Iterator[bytes]:
        yield b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
        raise httpx.RemoteProtocolError("peer closed connection")

    r = sf.relay(cut(), provider="openai", to="anthropic")
    out = b""
    with pytest.raises(sf.ConnectionLostError):
        for chunk in r:
            out += chunk
    with pytest.raises(sf.StreamError, match="peer closed") as info:
        sf.fold([out], provider="anthropic")
    assert info.value.partial is not None
    assert info.value.partial.text == "Hi"


def test_closing_the_relay_closes_the_upstream() -> None:
    closed: list[bool] = []

    def upstream() -> Iterator[bytes]:
        try:
            for _ in range(1000):
                yield b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
        finally:
            closed.append(True)

    with sf.relay(upstream(), provider="openai", to="gemini") as r:
        assert next(r).startswith(b"data: ")
        assert not closed
    assert closed == [True]


@pytest.mark.anyio
@pytest.mark.parametrize("to", ["openai", "anthropic"])
async def test_arelay_is_relay(to: str) -> None:
    for case in CASES:

        async def chunks(case: Case = case) -> AsyncIterator[bytes]:
            for read in reads(case):
                yield read

        r = sf.arelay(chunks(), provider=case.provider, to=to)
        out = b""
        exc: BaseException | None = None
        try:
            async for chunk in r:
                out += chunk
        except sf.StreamfoldError as e:
            exc = e
        want_out, want_relay, want_exc = relayed(case, to)
        assert out == want_out
        assert r.message == want_relay.message
        assert type(exc) is type(want_exc)


@pytest.mark.anyio
async def test_closing_the_async_relay_closes_the_upstream() -> None:
    closed: list[bool] = []

    async def upstream() -> AsyncIterator[bytes]:
        try:
            for _ in range(1000):
                yield b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
        finally:
            closed.append(True)

    async with sf.arelay(upstream(), provider="openai", to="anthropic") as r:
        assert (await r.__anext__()).startswith(b"event: message_start")
    assert closed == [True]


@pytest.mark.anyio
async def test_relay_of_an_http_response(stream_server: StreamServer) -> None:
    url = stream_server.url("/example/gemini_thinking.sse")
    async with httpx.AsyncClient() as client, client.stream("GET", url) as response:
        r = sf.arelay(response, provider="gemini", to="openai-responses")
        out = b"".join([chunk async for chunk in r])
    m = sf.fold([out], provider="openai-responses")
    message = r.message
    assert message is not None and m.usage is not None and message.usage is not None
    assert (m.text, m.reasoning) == (message.text, message.reasoning)
    assert (m.usage.input_tokens, m.usage.output_tokens) == (
        message.usage.input_tokens,
        message.usage.output_tokens,
    )
    assert m.text == "Water boils at 100 °C (212 °F) at sea level."
    with httpx.Client() as sync_client, sync_client.stream("GET", url) as sync_response:
        sync = sf.relay(sync_response, provider="gemini", to="openai-responses")
        assert b"".join(sync) == out


@pytest.mark.anyio
async def test_relay_through_the_native_client(stream_server: StreamServer) -> None:
    # The upstream read by sf.Client, sync and async: the same bytes written, the same fold.
    url = stream_server.url("/example/gemini_thinking.sse")
    with httpx.Client() as reference_client, reference_client.stream("GET", url) as reference:
        expected = b"".join(sf.relay(reference, provider="gemini", to="openai-responses"))
    with sf.Client() as client:
        with client.stream("GET", url) as response:
            sync = sf.relay(response, provider="gemini", to="openai-responses")
            assert b"".join(sync) == expected
        async with client.stream("GET", url) as aresponse:
            r = sf.arelay(aresponse, provider="gemini", to="openai-responses")
            assert b"".join([chunk async for chunk in r]) == expected
    assert sync.message is not None and r.message is not None
    assert sync.message.text == r.message.text == "Water boils at 100 °C (212 °F) at sea level."


# -- the example app under uvicorn -------------------------------------------------------


def load_app_module() -> Any:
    spec = importlib.util.spec_from_file_location("relay_app", ROOT / "docs/examples/relay_app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Uvicorn:
    """The app under a real uvicorn server on a loopback port, in a thread."""

    def __init__(self, app: Any) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]})

    def __enter__(self) -> Uvicorn:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


@pytest.fixture(scope="module")
def relay_server(stream_server: StreamServer) -> Iterator[tuple[Uvicorn, Any]]:
    module = load_app_module()
    app = module.make_app(stream_server.url("/example/anthropic_thinking.sse"))
    with Uvicorn(app) as server:
        yield server, app


def test_example_app_serves_openai_chunks_from_an_anthropic_stream(
    relay_server: tuple[Uvicorn, Any],
) -> None:
    server, app = relay_server
    with (
        httpx.Client() as client,
        client.stream(
            "POST", f"{server.url}/v1/chat/completions", json={"messages": []}
        ) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        message = sf.fold(response, provider="openai")
    want = sf.fold([(ROOT / "examples/anthropic_thinking.sse").read_bytes()], provider="anthropic")
    assert (message.text, message.reasoning, message.finish_reason) == (
        want.text,
        want.reasoning,
        want.finish_reason,
    )
    assert message.usage is not None and want.usage is not None
    assert (message.usage.input_tokens, message.usage.output_tokens) == (
        want.usage.input_tokens,
        want.usage.output_tokens,
    )
    deadline = time.monotonic() + 5
    while not app.state.messages and time.monotonic() < deadline:
        time.sleep(0.01)
    assert app.state.messages[-1] == want


def test_example_app_closes_the_upstream_when_the_client_goes_away(
    stream_server: StreamServer,
) -> None:
    module = load_app_module()
    rid = "relay-disconnect"
    # The upstream sends its first events, then stalls for 30 s.
    url = stream_server.url("/example/anthropic_thinking.sse", rid=rid, stall=30, stall_at=600)
    with Uvicorn(module.make_app(url)) as server:
        with (
            httpx.Client() as client,
            client.stream("POST", f"{server.url}/v1/chat/completions", json={}) as response,
        ):
            first = next(response.iter_bytes())
            assert first.startswith(b"data: ")
        # The client is gone: the upstream's server sees its connection closed, while the
        # app (and its upstream client) still runs.
        assert stream_server.wait_disconnect(rid, timeout=10)


def test_example_app_writes_an_upstream_error_as_an_openai_error(
    stream_server: StreamServer,
) -> None:
    module = load_app_module()
    url = stream_server.url("/example/anthropic_overloaded_error.sse")
    with (
        Uvicorn(module.make_app(url)) as server,
        httpx.Client() as client,
        client.stream("POST", f"{server.url}/v1/chat/completions", json={}) as response,
        pytest.raises(sf.StreamError, match="Overloaded") as info,
    ):
        sf.fold(response, provider="openai")
    assert info.value.code == "overloaded_error"


class FakeClock:
    """A clock read once at the start and once per upstream read: each read ``step`` later."""

    def __init__(self, steps: list[float]) -> None:
        self.steps = iter(steps)
        self.now = 0.0

    def __call__(self) -> float:
        self.now += next(self.steps)
        return self.now


def test_timing_of_the_upstream() -> None:
    reads = [
        b'data: {"id":"c","choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n',
        b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n',
        b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"lo"}}]}\n\n',
        b'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
        b"data: [DONE]\n\n",
    ]
    # Start at 0; reads at 0.5, 0.75 (first token), 3.75 (last token, after a 3 s gap),
    # 4.0 and 4.25.
    clock = FakeClock([0.0, 0.5, 0.25, 3.0, 0.25, 0.25])
    r = sf.relay(reads, provider="openai", to="anthropic", clock=clock)
    assert r.timing == sf.StreamTiming(None, None, None, None, 0)
    b"".join(r)
    assert r.timing == sf.StreamTiming(
        first_byte=0.5, first_token=0.75, last_token=3.75, largest_gap=3.0, reads=5
    )


@pytest.mark.anyio
async def test_timing_of_the_async_relay() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'

    r = sf.arelay(chunks(), provider="openai", clock=FakeClock([1.0, 2.0]))
    with pytest.raises(sf.IncompleteStreamError):
        async for _ in r:
            pass
    assert r.timing == sf.StreamTiming(2.0, 2.0, 2.0, 0.0, 1)


def test_a_detected_format_without_a_writer_asks_for_to() -> None:
    (case,) = [c for c in CASES if c.id == "example/clouisle_agent.sse"]
    with pytest.raises(ValueError, match="'clouisle', which has no writer: name the format"):
        b"".join(sf.relay(reads(case)))
    with pytest.raises(ValueError, match="no writer for provider 'clouisle'"):
        sf.relay(reads(case), provider="clouisle")
    r = sf.relay(reads(case), to="openai")
    assert sf.fold([b"".join(r)], provider="openai").text == sf.fold([case.body]).text


def test_an_unknown_provider_is_refused_as_fold_refuses_it() -> None:
    with pytest.raises(ValueError, match="unknown provider 'nope'"):
        sf.relay([], provider="nope")  # type: ignore[arg-type]
