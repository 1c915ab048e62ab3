"""``sf.stream`` / ``sf.astream`` send a refused first request again (``max_retries``), as the
OpenAI and Anthropic SDKs do, and never once a byte of the stream was read.

Against the loopback server: the requests it saw are counted; the waits asked for are recorded
(the pause is replaced, so nothing here sleeps for real or measures time).
"""

from __future__ import annotations

import email.utils
import socket
import time
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest

import streamfold as sf
import streamfold._client.stream as sfhttp
from http_server import StreamServer, stream_server
from streamfold._client import retry
from streamfold._types import ProviderName

__all__ = ["stream_server"]

pytestmark = pytest.mark.filterwarnings(r"ignore:Async generator 'http(x|core)\.:ResourceWarning")

#: Small waits: a test that does sleep for real stays short.
FAST: dict[str, Any] = {"initial_delay": 0.01, "max_delay": 0.05}


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits ``stream`` / ``astream`` asked for between attempts (not slept)."""
    asked: list[float] = []
    real = retry.apause

    async def apause(seconds: float) -> None:
        asked.append(seconds)
        await real(0)

    monkeypatch.setattr(sfhttp, "pause", asked.append)
    monkeypatch.setattr(sfhttp, "apause", apause)
    return asked


def _rid(request: pytest.FixtureRequest) -> str:
    return f"retry-{request.node.name}"


async def _fold(
    kind: str, method: str, url: str, provider: ProviderName, **options: Any
) -> sf.Message:
    """Open and fold with ``sf.stream`` (``kind == "sync"``) or ``sf.astream``."""
    if kind == "sync":

        def run() -> sf.Message:
            with sf.stream(method, url, provider=provider, **options) as s:
                return s.fold()

        return run()
    async with sf.astream(method, url, provider=provider, **options) as s:
        return await s.fold()


def _kinds() -> list[Any]:
    return [
        pytest.param("sync", "asyncio", id="sync"),
        pytest.param("async", "asyncio", id="asyncio"),
        pytest.param("async", "trio", id="trio"),
    ]


def _expected(stream_server: StreamServer) -> sf.Message:
    body = httpx.get(stream_server.url("/stream/onecortex")).content
    return sf.fold([body], provider="onecortex")


@pytest.mark.anyio
@pytest.mark.parametrize(("kind", "anyio_backend"), _kinds())
async def test_429_with_retry_after_then_the_stream(
    kind: str, anyio_backend: str, stream_server: StreamServer, waits: list[float], request: Any
) -> None:
    rid = _rid(request)
    url = stream_server.url("/stream/onecortex", rid=rid, status=429, retry_after=7)
    message = await _fold(kind, "POST", url, "onecortex")
    assert message == _expected(stream_server)
    assert [seen.attempt for seen in stream_server.seen(rid)] == [0, 1]
    assert waits == [7.0]  # the server's Retry-After, not the backoff


@pytest.mark.anyio
@pytest.mark.parametrize(("kind", "anyio_backend"), _kinds())
async def test_503_twice_then_the_stream_backs_off_with_jitter(
    kind: str, anyio_backend: str, stream_server: StreamServer, waits: list[float], request: Any
) -> None:
    rid = _rid(request)
    url = stream_server.url("/stream/onecortex", rid=rid, status=503, on="0,1")
    message = await _fold(kind, "GET", url, "onecortex", initial_delay=0.5, max_delay=30)
    assert message.complete
    assert len(stream_server.seen(rid)) == 3
    first, second = waits
    assert 0.5 <= first <= 0.5 * 1.25
    assert 1.0 <= second <= 1.0 * 1.25


@pytest.mark.anyio
@pytest.mark.parametrize(("kind", "anyio_backend"), _kinds())
async def test_always_refused_raises_the_last_attempts_error_counting_the_others(
    kind: str, anyio_backend: str, stream_server: StreamServer, waits: list[float], request: Any
) -> None:
    rid = _rid(request)
    # The third answer's error body is cut: the error raised is that one, not the first.
    url = stream_server.url("/stream/onecortex", rid=rid, status=503, on="all", cut=20, cut_on=2)
    with pytest.raises(sf.StreamError) as info:
        await _fold(kind, "POST", url, "openai", **FAST)
    exc = info.value
    assert exc.status == 503
    assert "connection failed after 20 bytes" in str(exc)  # the third answer's
    assert exc.__cause__ is not None
    assert exc.attempts == 3
    assert len(stream_server.seen(rid)) == 3
    assert len(waits) == 2  # never a wait after the last attempt
    assert exc.partial is not None and exc.partial.text == ""
    notes = getattr(exc, "__notes__", None)
    if notes is not None:  # Python 3.11+
        assert notes == [
            "streamfold: request 3 of at most 3 (max_retries=2); "
            "the earlier 2 failed: HTTP 503, HTTP 503"
        ]


@pytest.mark.anyio
@pytest.mark.parametrize(("kind", "anyio_backend"), _kinds())
async def test_max_retries_zero_sends_once(
    kind: str, anyio_backend: str, stream_server: StreamServer, waits: list[float], request: Any
) -> None:
    rid = _rid(request)
    url = stream_server.url("/stream/onecortex", rid=rid, status=429, retry_after=0)
    with pytest.raises(sf.StreamError) as info:
        await _fold(kind, "GET", url, "onecortex", max_retries=0)
    assert info.value.attempts == 1
    assert not hasattr(info.value, "__notes__")
    assert len(stream_server.seen(rid)) == 1
    assert waits == []


@pytest.mark.parametrize(
    "case",
    [
        ("3", None, 30.0, 3.0),
        ("3", "250", 30.0, 0.25),  # retry-after-ms first, as the SDKs read it
        ("3600", None, 2.0, 2.0),  # capped by max_delay
        ("date-past", None, 30.0, 0.0),
        ("date-future", None, 1.5, 1.5),  # an HTTP date an hour ahead, capped
    ],
)
def test_retry_after_seconds_date_and_ms_capped_by_max_delay(
    stream_server: StreamServer,
    waits: list[float],
    request: Any,
    case: tuple[str, str | None, float, float],
) -> None:
    retry_after, retry_after_ms, max_delay, expected = case
    if retry_after == "date-past":
        retry_after = "Wed, 21 Oct 2015 07:28:00 GMT"
    elif retry_after == "date-future":
        retry_after = email.utils.formatdate(time.time() + 3600, usegmt=True)
    rid = _rid(request).replace("[", "-").replace("]", "")
    query: dict[str, Any] = {"rid": rid, "status": 429, "retry_after": retry_after}
    if retry_after_ms is not None:
        query["retry_after_ms"] = retry_after_ms
    url = stream_server.url("/stream/onecortex", **query)
    with sf.stream("GET", url, provider="onecortex", max_delay=max_delay) as s:
        assert s.fold().complete
    assert waits == [expected]
    assert len(stream_server.seen(rid)) == 2


@pytest.mark.parametrize(
    ("name", "header"),
    [
        *(("retry_after", h) for h in ["inf", "1e3", "1_0", "-5", "nan", "-1e9", "+5", "5.0"]),
        # retry-after-ms (no standard) is read as the SDKs read it, in plain decimals only.
        *(("retry_after_ms", h) for h in ["inf", "1e3", "1_0", "-5", "nan", "-1e9", "+5"]),
    ],
)
def test_retry_after_that_is_no_delay_seconds_is_ignored(
    stream_server: StreamServer, waits: list[float], request: Any, name: str, header: str
) -> None:
    # RFC 9110: delay-seconds is digits only. Anything else asks no wait: the documented
    # backoff applies (0.5 s, then 1 s), never three requests in a row with no wait.
    rid = _rid(request).replace("[", "-").replace("]", "")
    url = stream_server.url("/stream/onecortex", rid=rid, status=429, on="all", **{name: header})
    options: dict[str, Any] = {"provider": "onecortex", "initial_delay": 0.5, "max_delay": 30}
    with pytest.raises(sf.StreamError) as info, sf.stream("GET", url, **options) as s:
        s.fold()
    first, second = waits
    assert 0.5 <= first <= 0.5 * 1.25
    assert 1.0 <= second <= 1.0 * 1.25
    assert len(stream_server.seen(rid)) == 3
    assert info.value.retry_after is None
    assert info.value.retry_after_header == header  # the raw header is kept


@pytest.mark.parametrize("header", ["Fri, 01 Jan 2100 00:00:00 GMT", "9" * 400])
def test_retry_after_reported_is_the_wait_made(
    stream_server: StreamServer, waits: list[float], request: Any, header: str
) -> None:
    # A date in 2100 (or 400 digits) asks for a wait of centuries: what is waited and what
    # .retry_after reports is max_delay.
    rid = _rid(request).replace("[", "-").replace("]", "")[:40]
    url = stream_server.url("/stream/onecortex", rid=rid, status=429, on="all", retry_after=header)
    options: dict[str, Any] = {"provider": "onecortex", "max_delay": 2.5}
    with pytest.raises(sf.StreamError) as info, sf.stream("GET", url, **options) as s:
        s.fold()
    assert waits == [2.5, 2.5]
    assert info.value.retry_after == 2.5
    assert info.value.retry_after_header == header
    # A response read without sf.stream: capped by the default max_delay.
    with httpx.stream("GET", url) as response, pytest.raises(sf.StreamError) as direct:
        sf.fold(response, provider="onecortex")
    assert direct.value.retry_after == 30.0
    assert direct.value.retry_after_header == header


@pytest.mark.parametrize(
    "case",
    [
        ("POST", "onecortex", {}, 1),  # may have started a run: not sent again
        ("POST", "clouisle", {}, 1),
        ("POST", "auto", {}, 1),
        ("POST", "onecortex", {"Idempotency-Key": "k-1"}, 3),  # the caller says it is safe
        ("GET", "onecortex", {}, 3),  # idempotent method
        ("POST", "openai", {}, 3),  # a model API's POST, as the SDKs retry it
        ("POST", "anthropic", {}, 3),
    ],
)
def test_500_is_retried_only_where_sending_again_cannot_act_twice(
    stream_server: StreamServer,
    waits: list[float],
    case: tuple[str, ProviderName, dict[str, str], int],
) -> None:
    method, provider, headers, sent = case
    rid = f"r500-{method}-{provider}-{len(headers)}"
    url = stream_server.url("/stream/onecortex", rid=rid, status=500, on="all")
    with (
        pytest.raises(sf.StreamError) as info,
        sf.stream(method, url, provider=provider, headers=headers),
    ):
        pytest.fail("never opened")
    assert info.value.status == 500
    assert info.value.attempts == sent
    assert len(stream_server.seen(rid)) == sent
    assert len(waits) == sent - 1


@pytest.mark.parametrize(
    ("provider", "status", "should_retry", "sent"),
    [
        # A POST to an agent platform: only the statuses that say the request was not acted on.
        ("onecortex", 400, None, 1),  # the request itself is wrong
        ("onecortex", 401, None, 1),
        ("onecortex", 404, None, 1),
        ("onecortex", 408, None, 3),
        ("onecortex", 409, None, 3),
        ("onecortex", 425, None, 3),
        ("onecortex", 429, None, 3),
        ("onecortex", 503, None, 1),  # a 5xx: the agent run may have started behind a 503
        ("onecortex", 529, None, 1),
        ("onecortex", 503, "true", 3),  # x-should-retry, the SDKs' header, wins
        ("onecortex", 400, "true", 3),
        # A model API's POST is sent again when the API is unavailable or overloaded.
        ("anthropic", 503, None, 3),
        ("anthropic", 529, None, 3),  # Anthropic's overloaded
        ("anthropic", 503, "false", 1),  # x-should-retry, the SDKs' header, wins
    ],
)
@pytest.mark.usefixtures("waits")  # the pauses are recorded, not slept
def test_which_statuses_are_retried(
    stream_server: StreamServer,
    provider: ProviderName,
    status: int,
    should_retry: str | None,
    sent: int,
) -> None:
    rid = f"status-{provider}-{status}-{should_retry}"
    query: dict[str, Any] = {"rid": rid, "status": status, "on": "all"}
    if should_retry is not None:
        query["should_retry"] = should_retry
    url = stream_server.url("/stream/onecortex", **query)
    with pytest.raises(sf.StreamError) as info, sf.stream("POST", url, provider=provider):
        pytest.fail("never opened")
    assert info.value.status == status
    assert len(stream_server.seen(rid)) == sent


def _refused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # closed again: a connection to it is refused


@pytest.mark.anyio
@pytest.mark.parametrize(("kind", "anyio_backend"), _kinds())
async def test_a_refused_connection_is_retried_even_for_an_agent_post(
    kind: str, anyio_backend: str, waits: list[float]
) -> None:
    from streamfold import _transport

    url = f"http://127.0.0.1:{_refused_port()}/invoke"
    with pytest.raises(_transport.ConnectError) as info:  # the shared sf.Client's
        await _fold(kind, "POST", url, "onecortex", **FAST)
    assert getattr(info.value, "attempts", None) == 3  # the request never left: safe
    assert len(waits) == 2
    waits.clear()
    client = httpx.Client() if kind == "sync" else httpx.AsyncClient()
    with pytest.raises(httpx.ConnectError) as httpx_info:
        await _fold(kind, "POST", url, "onecortex", client=client, **FAST)
    assert getattr(httpx_info.value, "attempts", None) == 3  # the request never left: safe
    assert len(waits) == 2


@pytest.mark.anyio
@pytest.mark.parametrize(("kind", "anyio_backend"), _kinds())
@pytest.mark.parametrize(
    "fault", [{"cut": 30}, {"end": 30}, {"ctype": "text/html"}], ids=["cut", "end", "html"]
)
async def test_never_retried_once_the_stream_answered(
    kind: str, anyio_backend: str, stream_server: StreamServer, waits: list[float], fault: Any
) -> None:
    # A 200 whose body then breaks (or is no stream): sending the request again would make a
    # second answer. Only the resumable machinery (resume=True, with ids) may reconnect.
    rid = f"answered-{kind}-{anyio_backend}-{sorted(fault)[0]}"
    url = stream_server.url("/stream/onecortex", rid=rid, on="all", **fault)
    with pytest.raises((sf.IncompleteStreamError, sf.ProtocolError)):
        await _fold(kind, "GET", url, "onecortex", **FAST)
    assert len(stream_server.seen(rid)) == 1
    assert waits == []


def test_a_resumable_stream_retries_its_first_request_then_resumes(
    stream_server: StreamServer, waits: list[float]
) -> None:
    rid = "retry-then-resume"
    url = stream_server.url(
        "/stream/clouisle", rid=rid, status=503, status_on="0", cut=400, cut_on="1"
    )
    with sf.stream("GET", url, provider="clouisle", resume=True, **FAST) as s:
        message = s.fold()
    assert message.complete
    seen = stream_server.seen(rid)
    assert len(seen) == 3  # refused, cut after 400 bytes, resumed
    assert "after_sequence" not in seen[1].query
    assert "after_sequence" in seen[2].query


def _one_connection_client(kind: str) -> Any:
    limits = httpx.Limits(max_connections=1)
    timeout = httpx.Timeout(5, pool=5)
    if kind == "sync":
        return httpx.Client(limits=limits, timeout=timeout)
    return httpx.AsyncClient(limits=limits, timeout=timeout)


def test_ctrl_c_during_the_wait_leaves_no_response_open(
    stream_server: StreamServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(sfhttp, "pause", interrupted)
    rid = "retry-ctrl-c"
    url = stream_server.url("/stream/onecortex", rid=rid, status=429, on="all")
    with _one_connection_client("sync") as client:
        with (
            pytest.raises(KeyboardInterrupt),
            sf.stream("GET", url, provider="onecortex", client=client),
        ):
            pytest.fail("never opened")
        # The client's only connection is free: the refused response was closed before the wait.
        again = stream_server.url("/stream/onecortex")
        with client.stream("GET", again) as response:
            assert sf.fold(response, provider="onecortex").complete
    assert len(stream_server.seen(rid)) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("with_client", [True, False])
async def test_cancelled_during_the_wait_leaves_no_response_open(
    anyio_backend: str,
    stream_server: StreamServer,
    monkeypatch: pytest.MonkeyPatch,
    with_client: bool,
) -> None:
    waiting = anyio.Event()
    real = retry.apause

    async def apause(seconds: float) -> None:
        waiting.set()
        await real(60)  # cancelled long before

    monkeypatch.setattr(sfhttp, "apause", apause)
    rid = f"retry-cancel-{anyio_backend}-{with_client}"
    url = stream_server.url("/stream/onecortex", rid=rid, status=503, on="all")
    made: list[sf.AsyncEventStream] = []
    async with _one_connection_client("async") as client:

        async def open_it() -> None:
            stream = sf.astream(
                "GET", url, provider="onecortex", client=client if with_client else None
            )
            made.append(stream)
            async with stream:
                pytest.fail("never opened")

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(open_it)
            await waiting.wait()
            tasks.cancel_scope.cancel()
        assert len(stream_server.seen(rid)) == 1
        if with_client:
            # The only connection is free: the refused response was closed before the wait.
            async with client.stream("GET", stream_server.url("/stream/onecortex")) as response:
                assert (await sf.afold(response, provider="onecortex")).complete
        else:
            # The shared client stays open for other streams; nothing of this one is: no
            # response was kept, and the next stream through the same client reads.
            shared: Any = made[0]._client
            assert made[0].response is None and not shared.is_closed
            async with sf.astream(
                "GET", stream_server.url("/stream/onecortex"), provider="onecortex"
            ) as again:
                assert again._client is shared
                assert (await again.fold()).complete


def test_max_retries_is_checked() -> None:
    bad: list[Any] = [-1, 1.5, True, "2"]
    for value in bad:
        make: Callable[..., Any]
        for make in (sf.stream, sf.astream):
            with pytest.raises(ValueError, match="max_retries"):
                make("GET", "http://127.0.0.1:9/", provider="openai", max_retries=value)


def test_closed_from_another_thread_during_the_wait_sends_nothing_more(
    stream_server: StreamServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    rid = "retry-closed-while-waiting"
    url = stream_server.url("/stream/onecortex", rid=rid, status=429, on="all")
    stream = sf.stream("GET", url, provider="onecortex")
    monkeypatch.setattr(sfhttp, "pause", lambda seconds: stream.close())  # a "stop" button
    with pytest.raises(sf.StreamError) as info:
        stream.open()
    assert info.value.status == 429
    assert info.value.attempts == 1
    assert len(stream_server.seen(rid)) == 1


@pytest.mark.anyio
async def test_aclosed_from_another_task_during_the_wait_sends_nothing_more(
    anyio_backend: str, stream_server: StreamServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    rid = f"retry-aclosed-while-waiting-{anyio_backend}"
    url = stream_server.url("/stream/onecortex", rid=rid, status=429, on="all")
    stream = sf.astream("GET", url, provider="onecortex")

    async def stop(seconds: float) -> None:
        await stream.aclose()

    monkeypatch.setattr(sfhttp, "apause", stop)
    with pytest.raises(sf.StreamError) as info:
        await stream.open()
    assert info.value.attempts == 1
    assert len(stream_server.seen(rid)) == 1


def test_a_thousand_retries_do_not_overflow_the_backoff(
    stream_server: StreamServer, waits: list[float]
) -> None:
    """``initial_delay`` doubled for each retry: the 1,026th request's backoff computed
    ``2 ** 1024`` as a float and raised OverflowError instead of the last StreamError."""
    rid = "retry-overflow"
    url = stream_server.url("/stream/onecortex", rid=rid, status=503, on="all")
    with (
        pytest.raises(sf.StreamError) as info,
        sf.stream("GET", url, provider="onecortex", max_retries=1030, initial_delay=0.0),
    ):
        pytest.fail("never opened")
    assert info.value.attempts == 1031
    assert waits[-1] == 0
