"""``sf.Client``, the native HTTP client, against real servers on loopback: TLS with a CA the
test makes (trustme), HTTP/2 (hypercorn), a CONNECT proxy, bad requests refused before anything
is sent, connections closed when the caller leaves, no descriptor leaked over thousands of
cut streams, one client shared by threads. The fault matrix (cuts, stalls, drips, statuses,
gzip, resume) runs through it in test_http_adapters.py and test_resumable_http.py."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import ssl
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
import trustme

import streamfold as sf
from http_server import StreamServer, generated_stream, stream_server
from streamfold import _transport

__all__ = ["stream_server"]

N_EVENTS = 40
BODY = generated_stream("openai", N_EVENTS)
EXPECTED = sf.fold([BODY], provider="openai")


# -- an HTTPS server speaking HTTP/2 and HTTP/1.1 (hypercorn), with a CA of the test's ------


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """ASGI: the generated OpenAI stream, one event per write; records the HTTP version."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream")],
        }
    )
    for block in BODY.split(b"\n\n")[:-1]:
        await send({"type": "http.response.body", "body": block + b"\n\n", "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


@dataclass
class TlsServer:
    url: str
    ca: trustme.CA
    ca_file: Path
    client_cert: trustme.LeafCert
    stop: threading.Event = field(default_factory=threading.Event)


@contextlib.contextmanager
def _tls_server(tmp: Path, *, require_client_cert: bool = False) -> Iterator[TlsServer]:
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    ca_file = tmp / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    cert_file, key_file = tmp / "server.pem", tmp / "server.key"
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.certfile, config.keyfile = str(cert_file), str(key_file)
    config.alpn_protocols = ["h2", "http/1.1"]
    config.accesslog = config.errorlog = None
    if require_client_cert:
        config.ca_certs = str(ca_file)
        config.verify_mode = ssl.CERT_REQUIRED
    server = TlsServer(f"https://127.0.0.1:{port}/stream", ca, ca_file, ca.issue_cert("client"))
    started = threading.Event()

    def run() -> None:
        async def main() -> None:
            done = asyncio.Event()
            loop = asyncio.get_running_loop()
            threading.Thread(
                target=lambda: (server.stop.wait(), loop.call_soon_threadsafe(done.set)),
                daemon=True,
            ).start()
            loop.call_soon(started.set)
            await serve(_app, config, shutdown_trigger=done.wait)  # type: ignore[arg-type]

        asyncio.run(main())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    started.wait(10)
    _wait_listening(port)
    try:
        yield server
    finally:
        server.stop.set()
        thread.join(10)


def _wait_listening(port: int) -> None:
    for _ in range(500):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        threading.Event().wait(0.01)
    raise AssertionError(f"nothing listens on {port}")


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsServer]:
    with _tls_server(tmp_path_factory.mktemp("tls")) as server:
        yield server


def _fold_with(client: sf.Client, url: str) -> tuple[sf.Message, str]:
    with client.stream("GET", url) as response:
        version = response.http_version
        return sf.fold(response, provider="openai"), version


def test_https_with_a_ca_bundle_speaks_http2(tls_server: TlsServer) -> None:
    with sf.Client(verify=tls_server.ca_file) as client:
        message, version = _fold_with(client, tls_server.url)
    assert version == "HTTP/2"  # by ALPN
    assert message == EXPECTED


def test_https_http1_when_http2_is_off(tls_server: TlsServer) -> None:
    with sf.Client(verify=tls_server.ca_file, http2=False) as client:
        message, version = _fold_with(client, tls_server.url)
    assert version == "HTTP/1.1"
    assert message == EXPECTED


def test_an_unknown_ca_is_refused_by_the_system_trust_store(tls_server: TlsServer) -> None:
    with sf.Client() as client, pytest.raises(_transport.ConnectError, match=r"(?i)certificate"):
        _fold_with(client, tls_server.url)


def test_verify_false_accepts_any_certificate(tls_server: TlsServer) -> None:
    with sf.Client(verify=False) as client:
        message, _ = _fold_with(client, tls_server.url)
    assert message == EXPECTED


def test_an_unreadable_ca_bundle_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(_transport.HTTPError, match="verify="):
        sf.Client(verify=tmp_path / "missing.pem")
    empty = tmp_path / "empty.pem"
    empty.write_text("no certificate here")
    with pytest.raises(ValueError, match="no PEM certificate"):
        sf.Client(verify=empty)


def test_a_client_certificate_is_sent_when_the_server_asks(tmp_path: Path) -> None:
    with _tls_server(tmp_path, require_client_cert=True) as server:
        pem = tmp_path / "client.pem"
        pem.write_bytes(
            server.client_cert.private_key_pem.bytes()
            + b"".join(blob.bytes() for blob in server.client_cert.cert_chain_pems)
        )
        with sf.Client(verify=server.ca_file, cert=pem) as client:
            message, _ = _fold_with(client, server.url)
        assert message == EXPECTED
        with sf.Client(verify=server.ca_file) as client, pytest.raises(_transport.NetworkError):
            _fold_with(client, server.url)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_http2_streams_share_a_connection_concurrently(
    anyio_backend: str, tls_server: TlsServer
) -> None:
    results: list[sf.Message] = []
    async with sf.Client(verify=tls_server.ca_file) as client:

        async def one() -> None:
            async with sf.astream("GET", tls_server.url, provider="openai", client=client) as s:
                assert s.response is not None and s.response.http_version == "HTTP/2"
                results.append(await s.fold())

        async with anyio.create_task_group() as tasks:
            for _ in range(20):
                tasks.start_soon(one)
    assert results == [EXPECTED] * 20


# -- a CONNECT proxy -------------------------------------------------------------------------


@dataclass
class Proxy:
    url: str
    tunnels: list[str] = field(default_factory=list)


@contextlib.contextmanager
def _connect_proxy() -> Iterator[Proxy]:
    """A CONNECT-only HTTP proxy: each tunnel's target is recorded."""
    listener = socket.create_server(("127.0.0.1", 0))
    proxy = Proxy(f"http://127.0.0.1:{listener.getsockname()[1]}")
    stopping = threading.Event()

    def pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def handle(conn: socket.socket) -> None:
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            method, target, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
            if method != "CONNECT":
                conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
                return
            proxy.tunnels.append(target)
            host, port = target.rsplit(":", 1)
            with socket.create_connection((host, int(port))) as upstream:
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                back = threading.Thread(target=pipe, args=(upstream, conn), daemon=True)
                back.start()
                pipe(conn, upstream)
                back.join(10)

    listener.settimeout(0.05)  # closing a listener does not wake its accept(): polled

    def accept() -> None:
        while not stopping.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        stopping.set()
        thread.join(10)
        listener.close()


def test_https_through_a_connect_proxy(tls_server: TlsServer) -> None:
    with (
        _connect_proxy() as proxy,
        sf.Client(verify=tls_server.ca_file, proxy=proxy.url) as client,
    ):
        message, _ = _fold_with(client, tls_server.url)
    assert message == EXPECTED
    assert proxy.tunnels == [tls_server.url.split("/")[2]]


def test_the_proxy_comes_from_the_environment(
    tls_server: TlsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _connect_proxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        with sf.Client(verify=tls_server.ca_file) as client:
            message, _ = _fold_with(client, tls_server.url)
        assert proxy.tunnels == [tls_server.url.split("/")[2]]
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        with sf.Client(verify=tls_server.ca_file) as client:
            again, _ = _fold_with(client, tls_server.url)
        assert len(proxy.tunnels) == 1  # NO_PROXY: straight to the server
    assert message == again == EXPECTED


# -- requests refused before anything is sent -----------------------------------------------


@pytest.mark.parametrize(
    ("url", "error", "match"),
    [
        ("ftp://127.0.0.1/x", _transport.UnsupportedProtocol, "scheme"),
        ("http://", _transport.InvalidURL, "host"),
        ("not a url", _transport.InvalidURL, "invalid URL"),
        ("http://exa mple.com/", _transport.InvalidURL, "invalid URL"),
    ],
)
def test_a_bad_url_is_refused(url: str, error: type[Exception], match: str) -> None:
    with sf.Client() as client, pytest.raises(error, match=match) as info:
        client.stream("GET", url).__enter__()
    assert isinstance(info.value, ValueError)
    assert not isinstance(info.value, OSError)  # not a failed connection: never retried


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Evil": "a\r\nInjected: yes"},
        {"X-Evil": "a\nb"},
        {"X-Evil": "a\rb"},
        {"Bad Name": "x"},
        {"X-Nul": "a\0b"},
    ],
)
def test_a_header_with_cr_or_lf_is_refused_before_sending(
    stream_server: StreamServer, headers: dict[str, str], request: pytest.FixtureRequest
) -> None:
    rid = f"refused-header-{request.node.callspec.id}"
    url = stream_server.url("/stream/onecortex", rid=rid)
    with (
        pytest.raises(_transport.LocalProtocolError, match="not sent"),
        sf.stream("GET", url, provider="onecortex", headers=headers) as s,
    ):
        s.fold()
    with pytest.raises(_transport.LocalProtocolError):
        sf.Client(headers=headers)  # a default header is checked when the client is made
    assert stream_server.seen(rid) == []


def test_a_body_that_cannot_be_sent_is_refused(stream_server: StreamServer) -> None:
    rid = "refused-body"
    url = stream_server.url("/stream/onecortex", rid=rid)
    with sf.Client() as client:
        with pytest.raises(_transport.LocalProtocolError, match="content="):
            client.stream("POST", url, content=iter([b"a"])).__enter__()
        with pytest.raises(_transport.LocalProtocolError, match="one body"):
            client.stream("POST", url, json={}, content=b"x").__enter__()
        with pytest.raises(ValueError, match="JSON"):
            client.stream("POST", url, json={"x": float("nan")}).__enter__()
        with pytest.raises(TypeError, match="unexpected keyword"):
            client.stream("POST", url, files={"a": b""}).__enter__()
    assert stream_server.seen(rid) == []


def test_a_closed_client_refuses_requests(stream_server: StreamServer) -> None:
    client = sf.Client()
    client.close()
    with pytest.raises(RuntimeError, match="closed"):
        client.stream("GET", stream_server.url("/stream/onecortex")).__enter__()


# -- redirects (the credential rule across origins runs in test_http_adapters.py) -----------


def test_a_redirect_is_followed_only_when_asked(stream_server: StreamServer) -> None:
    rid = "redirect-asked"
    target = stream_server.url("/stream/onecortex", rid=rid)
    url = stream_server.url("/redirect", to=target)
    with sf.Client() as client:
        with client.stream("GET", url) as response:
            assert response.status_code == 307
            assert response.headers["location"] == target
        assert stream_server.seen(rid) == []
        with client.stream("GET", url, follow_redirects=True) as response:
            assert response.status_code == 200
            assert sf.fold(response.iter_bytes(), provider="onecortex").complete
    assert len(stream_server.seen(rid)) == 1
    # sf.stream checks the status before the body: an unfollowed redirect is no stream.
    with pytest.raises(sf.StreamError) as info, sf.stream("GET", url, provider="onecortex") as s:
        s.fold()
    assert info.value.status == 307
    assert len(stream_server.seen(rid)) == 1


@pytest.mark.parametrize(
    ("status", "sent"), [(301, "GET"), (302, "GET"), (303, "GET"), (307, "POST"), (308, "POST")]
)
def test_a_redirected_post_keeps_its_body_only_on_307_and_308(
    stream_server: StreamServer, status: int, sent: str
) -> None:
    # As httpx and browsers: 303, and 301/302 after a POST, become a GET without a body.
    rid = f"redirect-post-{status}"
    target = stream_server.url("/stream/onecortex", rid=rid)
    url = stream_server.url("/redirect", to=target, status=status)
    with (
        sf.Client(follow_redirects=True) as client,
        client.stream("POST", url, json={"q": 1}) as response,
    ):
        assert response.status_code == 200
        assert sf.fold(response.iter_bytes(), provider="onecortex").complete
    (hop,) = stream_server.seen(rid)
    assert hop.method == sent
    if sent == "POST":
        assert hop.headers["content-type"] == "application/json"
        assert int(hop.headers["content-length"]) > 0
    else:
        assert "content-type" not in hop.headers
        assert hop.headers.get("content-length", "0") == "0"


def test_redirects_past_max_redirects_are_a_clear_error(stream_server: StreamServer) -> None:
    three_hops = stream_server.url("/redirect", to="/redirect?to=/redirect%3Fto%3D/html")
    with (
        sf.Client(follow_redirects=True, max_redirects=2) as client,
        pytest.raises(_transport.TooManyRedirects, match="more than 2 redirects"),
    ):
        client.stream("GET", three_hops).__enter__()
    with (
        sf.Client(follow_redirects=True, max_redirects=3) as client,
        client.stream("GET", three_hops) as response,
    ):
        assert response.status_code == 200
        assert b"Please log in" in response.read()


def test_json_and_headers_are_sent(stream_server: StreamServer) -> None:
    rid = "native-post"
    url = stream_server.url("/stream/onecortex", rid=rid)
    with (
        sf.Client(headers={"X-Default": "d", "X-Over": "client"}) as client,
        sf.stream(
            "POST",
            url,
            provider="onecortex",
            client=client,
            json={"q": "é"},
            headers={"X-Over": "request"},
            params={"extra": "1"},
        ) as s,
    ):
        assert s.fold().complete
    (seen,) = stream_server.seen(rid)
    assert seen.headers["X-Default"] == "d"
    assert seen.headers.getall("X-Over") == ["request"]
    assert seen.headers["Content-Type"] == "application/json"
    assert seen.headers["Accept"] == "text/event-stream"
    assert seen.query["extra"] == "1" and seen.query["rid"] == rid


# -- reads: coalesced, closed at once when the caller leaves --------------------------------


def _wait_complete(response: Any) -> None:
    for _ in range(1000):
        if response.complete:
            return
        threading.Event().wait(0.005)
    raise AssertionError("the body never arrived whole")


def test_an_open_stream_holds_nothing_of_its_head(stream_server: StreamServer) -> None:
    # The head is handed to Python once; from then on the core keeps none of it (nor the
    # response's headers, whose bytes held hyper's first read buffer) while the body streams.
    url = stream_server.url("/generate", provider="openai", n=5)
    with sf.Client() as client, client.stream("GET", url) as response:
        assert response.status_code == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        with pytest.raises(_transport.StreamClosed, match="taken already"):
            response._native.try_head()
        assert response.read() == generated_stream("openai", 5)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_an_async_open_stream_holds_nothing_of_its_head(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    url = stream_server.url("/generate", provider="openai", n=5)
    async with sf.Client() as client, client.stream("GET", url) as response:
        assert response.headers["cache-control"] == "no-cache"
        with pytest.raises(_transport.StreamClosed, match="taken already"):
            response._native.try_head()
        assert await response.aread() == generated_stream("openai", 5)


def test_response_headers_are_a_case_insensitive_mapping_keeping_repeats() -> None:
    from streamfold._transport._headers import Headers

    plain = Headers([("content-type", "text/event-stream"), ("x-id", "1")])
    assert plain["Content-Type"] == "text/event-stream"
    assert "X-ID" in plain and "nope" not in plain
    assert list(plain) == ["content-type", "x-id"] and len(plain) == 2
    assert plain.get_list("x-id") == ["1"] and plain.get_list("nope") == []
    assert plain.multi_items() == [("content-type", "text/event-stream"), ("x-id", "1")]
    repeated = Headers([("set-cookie", "a=1"), ("Vary", "x"), ("set-cookie", "b=2")])
    assert repeated["set-cookie"] == "a=1, b=2"
    assert repeated.get_list("Set-Cookie") == ["a=1", "b=2"]
    assert repeated.multi_items() == [("set-cookie", "a=1"), ("Vary", "x"), ("set-cookie", "b=2")]
    assert repeated["vary"] == "x" and len(repeated) == 2
    cased = Headers([("Vary", "x")])
    assert cased.multi_items() == [("Vary", "x")] and cased["vary"] == "x"
    assert repr(cased) == "Headers([('Vary', 'x')])"


def test_a_read_returns_everything_that_arrived(stream_server: StreamServer) -> None:
    # The server writes each event on its own (a TCP write each): once they are all here, one
    # read hands them over together, not one call per TCP read.
    url = stream_server.url("/generate", provider="openai", n=200)
    with sf.Client() as client, client.stream("GET", url) as response:
        _wait_complete(response)
        chunks = list(response.iter_bytes())
    assert chunks == [generated_stream("openai", 200)]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_an_async_read_returns_everything_that_arrived(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    url = stream_server.url("/generate", provider="openai", n=200)
    async with sf.Client() as client, client.stream("GET", url) as response:
        while not response.complete:
            await anyio.sleep(0.005)
        chunks = [chunk async for chunk in response.aiter_bytes()]
    assert chunks == [generated_stream("openai", 200)]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_cancelling_the_task_closes_the_connection(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    rid = f"native-cancel-{anyio_backend}"
    url = stream_server.url("/stream/onecortex", rid=rid, stall=30, stall_at=200)
    reading = anyio.Event()

    async def read() -> None:
        async with sf.astream("GET", url, provider="onecortex") as s:
            async for _ in s:
                reading.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read)
        await reading.wait()
        tasks.cancel_scope.cancel()
    assert await anyio.to_thread.run_sync(stream_server.wait_disconnect, rid, 2.0)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_read_cancelled_while_it_waits_loses_nothing_and_leaves_no_waiter(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    # The asyncio wait is the loop's future itself: the pump must pass over a cancelled one
    # without taking the bytes it would have read, and the stream's close forget it.
    from streamfold._transport._wake import current_hub

    url = stream_server.url("/generate", provider="openai", n=3, event_delay=0.3)
    async with sf.Client() as client:
        async with client.stream("GET", url) as response:
            chunks = [await response.aread_chunk()]
            with anyio.move_on_after(0.05) as scope:
                await response.aread_chunk()
            assert scope.cancelled_caught
            await anyio.sleep(0.4)  # the next event comes while no task waits for it
            chunks += [chunk async for chunk in response.aiter_bytes()]
        assert b"".join(chunks) == generated_stream("openai", 3)
        async with client.stream("GET", url) as response:
            await response.aread_chunk()
            with anyio.move_on_after(0.05) as scope:
                await response.aread_chunk()
            assert scope.cancelled_caught
        assert current_hub()._waiters == {}


def test_close_from_another_thread_ends_a_blocked_read(stream_server: StreamServer) -> None:
    rid = "native-close-thread"
    url = stream_server.url("/stream/onecortex", rid=rid, stall=30, stall_at=200)
    with sf.Client() as client, client.stream("GET", url) as response:
        reads = response.iter_bytes()
        next(reads)
        threading.Timer(0.05, response.close).start()
        with pytest.raises(_transport.StreamClosed):
            for _ in reads:  # the rest of the 200 bytes, then the stall
                pass
    assert stream_server.wait_disconnect(rid, 2.0)


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd" if sys.platform == "linux" else "/dev/fd"))


def test_two_thousand_cut_streams_leak_no_descriptor(stream_server: StreamServer) -> None:
    url = stream_server.url("/stream/onecortex", cut=120, on="all")
    client = sf.Client()
    with pytest.raises(sf.ConnectionLostError):
        sf.stream("GET", url, provider="onecortex", client=client).fold()
    before = _open_descriptors()
    for i in range(2000):
        with pytest.raises(sf.ConnectionLostError) as info:
            if i % 2:
                sf.stream("GET", url, provider="onecortex", client=client).fold()
            else:
                with client.stream("GET", url) as response:
                    sf.fold(response, provider="onecortex")
        assert info.value.partial is not None
    client.close()
    assert _open_descriptors() <= before


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_async_cut_streams_leak_no_descriptor(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    url = stream_server.url("/stream/onecortex", cut=120, on="all")
    async with sf.Client() as client:
        with pytest.raises(sf.ConnectionLostError):
            await sf.astream("GET", url, provider="onecortex", client=client).fold()
        before = _open_descriptors()
        for _ in range(300):
            with pytest.raises(sf.ConnectionLostError):
                await sf.astream("GET", url, provider="onecortex", client=client).fold()
        assert _open_descriptors() <= before


@pytest.mark.parametrize("library", ["asyncio", "trio"])
def test_event_loops_that_end_leave_no_descriptor(
    library: str, stream_server: StreamServer
) -> None:
    # Each event loop has a hub (a socket pair): a service or a test suite that runs one loop
    # per job (asyncio.run, trio.run) gets the hub's descriptors back when its loop ends.
    import gc

    import trio

    url = stream_server.url("/generate", provider="openai", n=5)
    expected = sf.fold([generated_stream("openai", 5)], provider="openai")

    async def one() -> sf.Message:
        async with sf.astream("GET", url, provider="openai") as s:
            return await s.fold()

    def run() -> sf.Message:
        return asyncio.run(one()) if library == "asyncio" else trio.run(one)

    assert run() == expected
    gc.collect()
    before = _open_descriptors()
    for _ in range(30):
        assert run() == expected
    gc.collect()
    # A hub kept would be two descriptors a loop, 60 here; the shared client's pool may hold a
    # connection or two more than it did (a stream's connection goes back to it in the
    # background, and the next request may open another meanwhile).
    assert _open_descriptors() <= before + 4


def test_threads_share_one_client(stream_server: StreamServer) -> None:
    url = stream_server.url("/generate", provider="openai", n=N_EVENTS)
    results: list[sf.Message] = []
    failures: list[BaseException] = []
    with sf.Client() as client:

        def work() -> None:
            try:
                for _ in range(10):
                    with sf.stream("GET", url, provider="openai", client=client) as s:
                        results.append(s.fold())
            except BaseException as exc:  # handed to the test thread
                failures.append(exc)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert failures == []
    assert results == [EXPECTED] * 80


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_many_concurrent_async_streams(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    url = stream_server.url("/generate", provider="openai", n=N_EVENTS)
    results: list[sf.Message] = []

    async def one() -> None:
        async with sf.astream("GET", url, provider="openai") as s:
            results.append(await s.fold())

    async with anyio.create_task_group() as tasks:
        for _ in range(100):
            tasks.start_soon(one)
    assert results == [EXPECTED] * 100


# -- the fold of a native stream runs in the event loop's drain ------------------------------


@pytest.fixture
def wakes(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often a task waited on the hub, and how many reads were folded from the drain (a
    batch's marks: a read each)."""
    from streamfold._engine.driver import FoldDriver
    from streamfold._transport import _wake

    counts = {"waits": 0, "pushes": 0}
    wait, push = _wake.Hub.wait, FoldDriver.push

    async def counting_wait(self: Any, stream_id: int, poll: Any) -> Any:
        counts["waits"] += 1
        return await wait(self, stream_id, poll)

    def counting_push(self: Any, chunk: bytes, marks: list[tuple[int, float]]) -> None:
        counts["pushes"] += len(marks)  # the reads handed over in the batch
        push(self, chunk, marks)

    monkeypatch.setattr(_wake.Hub, "wait", counting_wait)
    monkeypatch.setattr(FoldDriver, "push", counting_push)
    return counts


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("how", ["afold", "astream"])
async def test_a_native_fold_wakes_its_task_at_the_end_only(
    anyio_backend: str, how: str, stream_server: StreamServer, wakes: dict[str, int]
) -> None:
    # An event every 10 ms: a read each. Nothing of a fold is seen before its end, so the core
    # hands the body over in batches (this one whole, at its end), folded where the loop
    # drains the hub, each of the connection's reads with the time it came (the fold's
    # timing); the task that awaits the fold was woken per read before.
    url = stream_server.url("/generate", provider="openai", n=20, event_delay=0.01)
    async with sf.Client() as client:
        if how == "afold":
            async with client.stream("GET", url) as response:
                message = await sf.afold(response, provider="openai")
        else:
            async with sf.astream("GET", url, provider="openai", client=client) as s:
                message = await s.fold()
            assert s.snapshot() == message
    assert message == sf.fold([generated_stream("openai", 20)], provider="openai")
    assert message.timing is not None
    assert wakes["pushes"] == message.timing.reads >= 20, wakes
    # The head, then the end.
    assert wakes["waits"] <= 4, wakes


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_native_fold_cut_mid_stream_has_the_partial(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    body = generated_stream("openai", 20)
    url = stream_server.url("/generate", provider="openai", n=20, cut=len(body) // 2)
    with pytest.raises(sf.ConnectionLostError) as info:
        async with sf.astream("GET", url, provider="openai") as s:
            await s.fold()
    with pytest.raises(sf.IncompleteStreamError) as cut_here:
        sf.fold([body[: len(body) // 2]], provider="openai")
    partial = info.value.partial
    assert partial is not None and partial.text
    assert cut_here.value.partial is not None
    assert partial.text == cut_here.value.partial.text  # every byte that arrived, folded
    assert s.snapshot().text == partial.text


def test_a_sync_stream_folds_its_body_as_sf_fold_does(
    stream_server: StreamServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ``sf.stream(...).fold()`` with nothing read yet and nothing to resume folds the body as
    # ``sf.fold(response)`` does, its text in Rust: no event is made and folded one by one.
    from streamfold._engine.driver import FoldDriver

    url = stream_server.url("/generate", provider="openai", n=50, event_delay=0.001)
    expected = sf.fold([generated_stream("openai", 50)], provider="openai")
    added: list[Any] = []
    add = FoldDriver.add

    def counting_add(self: FoldDriver, event: Any) -> None:
        added.append(event)
        add(self, event)

    monkeypatch.setattr(FoldDriver, "add", counting_add)
    with sf.Client() as client:
        with sf.stream("GET", url, provider="openai", client=client) as s:
            message = s.fold()
        assert message == expected
        assert s.snapshot() == message
        assert message.timing is not None and message.timing.reads >= 50
        assert added == []
        # Read first, then folded: the events path, and the same message.
        with sf.stream("GET", url, provider="openai", client=client) as s:
            first = next(iter(s))
            assert s.fold() == expected
        assert added[0] is first and len(added) > 50


def test_a_fold_closed_from_another_thread_ends_with_its_partial(
    stream_server: StreamServer,
) -> None:
    # close() from another thread while fold() waits on a silent server: the read ends at
    # once, and fold() says the stream ended short, with what came.
    rid = "fold-closed-from-a-thread"
    url = stream_server.url("/stream/onecortex", rid=rid, stall=5, stall_at=400)
    s = sf.stream("GET", url, provider="onecortex")
    s.open()
    timer = threading.Timer(0.2, s.close)
    timer.start()
    with pytest.raises(sf.IncompleteStreamError) as info:
        s.fold()
    timer.join()
    assert info.value.partial is not None
    assert stream_server.wait_disconnect(rid, 2.0)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_fold_closed_from_another_task_ends_with_its_partial(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    rid = f"fold-closed-from-a-task-{anyio_backend}"
    url = stream_server.url("/stream/onecortex", rid=rid, stall=5, stall_at=400)
    with anyio.fail_after(3):
        async with (
            sf.astream("GET", url, provider="onecortex") as s,
            anyio.create_task_group() as tasks,
        ):

            async def close_soon() -> None:
                await anyio.sleep(0.2)
                await s.aclose()

            tasks.start_soon(close_soon)
            with pytest.raises(sf.IncompleteStreamError) as info:
                await s.fold()
    assert info.value.partial is not None
    assert await anyio.to_thread.run_sync(stream_server.wait_disconnect, rid, 2.0)


def test_a_stall_in_the_body_is_a_read_timeout(stream_server: StreamServer) -> None:
    # One timer serves the whole body (each read moves its deadline on): a silence as long as
    # the timeout still ends the read, with every byte before it, and the connection.
    rid = "native-body-stall"
    url = stream_server.url("/stream/onecortex", rid=rid, stall=30, stall_at=200)
    got = b""
    with (
        sf.Client(timeout=0.3) as client,
        client.stream("GET", url) as response,
        pytest.raises(_transport.ReadTimeout, match="read timeout") as info,
    ):
        for chunk in response.iter_bytes():
            got += chunk
    assert len(got) == 200
    assert info.value.timeout == pytest.approx(0.3)
    assert stream_server.wait_disconnect(rid)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_an_async_stall_in_the_body_is_a_read_timeout(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    url = stream_server.url("/stream/onecortex", stall=30, stall_at=200)
    got = b""
    async with sf.Client(timeout=0.3) as client, client.stream("GET", url) as response:
        with pytest.raises(_transport.ReadTimeout):
            async for chunk in response.aiter_bytes():
                got += chunk
    assert len(got) == 200


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_slow_steady_body_outlasts_its_read_timeout(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    # An event every 50 ms for a second, a read timeout of 0.4 s: the body takes longer than
    # the timeout, each read does not; the timer set for the first read's deadline is moved on
    # when it fires, not taken for a silence.
    url = stream_server.url("/generate", provider="openai", n=20, event_delay=0.05)
    async with sf.Client(timeout=0.4) as client, client.stream("GET", url) as response:
        message = await sf.afold(response, provider="openai")
    assert message == sf.fold([generated_stream("openai", 20)], provider="openai")
    with sf.Client(timeout=0.4) as client, client.stream("GET", url) as response:
        assert response.read() == generated_stream("openai", 20)


@pytest.mark.parametrize("timeout", [0.0, -1.0, float("nan")])
def test_a_timeout_must_be_positive(timeout: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        sf.Client(connect_timeout=timeout)


def test_a_huge_timeout_is_no_limit(stream_server: StreamServer) -> None:
    # Duration::from_secs_f64 panics past its range: such a timeout is no limit instead.
    url = stream_server.url("/stream/onecortex")
    with (
        sf.Client(timeout=1e300, connect_timeout=float("inf")) as client,
        client.stream("GET", url) as response,
    ):
        assert sf.fold(response, provider="onecortex").complete


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_native_fold_of_a_long_stream_comes_in_batches(
    anyio_backend: str, stream_server: StreamServer, wakes: dict[str, int]
) -> None:
    # Past 64 KiB waiting the fold is fed (and, past 256 KiB, the core stops reading until it
    # is): a long body is folded in batches with bounded memory, never waiting on itself.
    body = generated_stream("openai", 5_000)
    assert len(body) > 3 * 256 * 1024
    url = stream_server.url("/generate", provider="openai", n=5_000)
    async with sf.Client() as client, client.stream("GET", url) as response:
        message = await sf.afold(response, provider="openai")
    assert message == sf.fold([body], provider="openai")
    assert wakes["pushes"] >= len(body) // (256 * 1024)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_task_is_woken_only_with_something_to_read(
    anyio_backend: str, stream_server: StreamServer, wakes: dict[str, int]
) -> None:
    # A notification whose bytes the task already took (it read them without waiting) woke
    # it for nothing: the pump now reads for the task, and wakes it only with bytes in hand.
    url = stream_server.url("/generate", provider="openai", n=30, event_delay=0.002)
    chunks = 0

    async def one() -> None:
        nonlocal chunks
        async with sf.Client() as client, client.stream("GET", url) as response:
            async for _ in response.aiter_bytes():
                chunks += 1

    async with anyio.create_task_group() as tasks:
        for _ in range(50):
            tasks.start_soon(one)
    heads = 50
    assert wakes["waits"] <= chunks + heads, (wakes, chunks)


@pytest.mark.parametrize("readers", [True, False])
def test_an_asyncio_loop_drains_the_hub_with_or_without_readers(
    readers: bool, stream_server: StreamServer
) -> None:
    # asyncio drains the hub in a reader callback of the loop; a loop that has no readers
    # (Windows' proactor) is drained by a pump task instead.
    url = stream_server.url("/generate", provider="openai", n=20, event_delay=0.002)

    from streamfold._transport._wake import current_hub

    async def main() -> list[Any]:
        if not readers:

            def no_readers(*args: Any) -> None:
                raise NotImplementedError

            asyncio.get_running_loop().add_reader = no_readers  # type: ignore[method-assign,assignment]
        async with sf.Client() as client:

            async def one() -> Any:
                async with sf.astream("GET", url, provider="openai", client=client) as s:
                    return await s.fold()

            messages = await asyncio.gather(*(one() for _ in range(5)))
            async with client.stream("GET", url) as response:
                chunks = [chunk async for chunk in response.aiter_bytes()]
        assert (current_hub()._pump is None) is readers  # which of the two drained it
        return [*messages, b"".join(chunks)]

    *messages, body = asyncio.run(main())
    expected = sf.fold([generated_stream("openai", 20)], provider="openai")
    assert messages == [expected] * 5
    assert body == generated_stream("openai", 20)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX only")
def test_a_forked_child_streams_through_a_client_of_its_parent(stream_server: StreamServer) -> None:
    # The child has the parent's memory but not its threads: the tokio runtime and the pooled
    # connections are the parent's. The child starts a runtime and a pool of its own.
    import signal
    import warnings

    url = stream_server.url("/stream/onecortex")
    with sf.Client() as client:
        with client.stream("GET", url) as response:  # the runtime and a pooled connection
            expected = sf.fold(response, provider="onecortex")
        with warnings.catch_warnings():
            # 3.12+ warns that forking a threaded process may deadlock: what this checks.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: no pytest from here, only an exit status
            code = 1
            try:
                signal.alarm(20)  # a deadlock ends the child instead of the test run
                with client.stream("GET", url) as response:
                    code = 0 if sf.fold(response, provider="onecortex") == expected else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        # and the parent's client still works
        with client.stream("GET", url) as response:
            assert sf.fold(response, provider="onecortex") == expected
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
