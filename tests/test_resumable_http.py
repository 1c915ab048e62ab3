"""Resumable streams against a real server, through httpx sync, httpx async (asyncio and trio)
and aiohttp (asyncio only): the folded message after resumption equals the uninterrupted one,
and a stream that cannot resume is never requested again."""

from __future__ import annotations

import contextlib
import re
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfold as sf
from conftest import CAPTURES, requires_captures
from http_server import (
    CLIENT_BACKENDS,
    STREAMS,
    Client,
    StreamServer,
    generated_stream,
    id_stream,
    make_client,
    redis_ids,
    stream_server,
)
from streamfold._types import ProviderName

__all__ = ["stream_server"]  # the fixture, imported for the tests below

# See test_http_adapters.py: httpx leaves its own async generators to the collector when a
# body is left early, and trio warns about them (encode/httpx#3686).
pytestmark = pytest.mark.filterwarnings(r"ignore:Async generator 'http(x|core)\.:ResourceWarning")

FAST = {"initial_delay": 0.005, "max_delay": 0.05}


@pytest.fixture(params=list(CLIENT_BACKENDS))
def client_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(client_kind: str) -> str:
    return CLIENT_BACKENDS[client_kind]


@pytest.fixture
def client(client_kind: str) -> Client:
    return make_client(client_kind)


@pytest.fixture
def rid(request: pytest.FixtureRequest) -> str:
    return str(request.node.nodeid)


def whole(name: str, ids: str | None = None) -> sf.Message:
    provider, _, body = STREAMS[name]
    if ids == "redis":
        body = redis_ids(body)
    return sf.fold([body], provider=provider)


#: name -> (stream, faults, resume options, connections the server must see; 0: more than
#: max_reconnects + 1, i.e. progress reset the budget)
SCENARIOS: dict[str, tuple[ProviderName, dict[str, Any], dict[str, Any], int]] = {
    "last-event-id": ("onecortex", {"cut": 400, "replay": 2}, {}, 2),
    "last-event-id-utf8": ("onecortex", {"cut": "utf8", "replay": 1}, {}, 2),
    "last-event-id-clean-eof": ("onecortex", {"end": 520, "replay": 3}, {}, 2),
    "server-ignores-cursor": ("onecortex", {"cut": 700, "resume": 0}, {}, 2),
    # Ids ``<ms>-<seq>``: the replayed events straddle a millisecond (cursor …001-0).
    "redis-ids": ("onecortex", {"cut": 560, "replay": 2, "ids": "redis"}, {}, 2),
    "redis-ids-server-ignores-cursor": (
        "onecortex",
        {"cut": 700, "resume": 0, "ids": "redis"},
        {},
        2,
    ),
    "drip-then-cut": ("onecortex", {"drip": 1, "cut": 333, "replay": 1}, {}, 2),
    "after-sequence-utf8": ("clouisle", {"cut": "utf8", "replay": 3}, {}, 2),
    "after-sequence-cut-every-time": (
        "clouisle",
        {"cut": 650, "on": "all", "replay": 1},
        {"max_reconnects": 1},  # each connection brings news, which resets the budget
        0,
    ),
    "starting-after": ("openai-responses", {"cut": 900, "replay": 2}, {}, 2),
    "stall-idle-timeout": (
        "onecortex",
        {"stall": 5, "stall_at": 600, "replay": 1},
        {"idle_timeout": 0.3},
        2,
    ),
    "503-on-reconnect": (
        "clouisle",
        {"cut": 500, "status": 503, "status_on": 1, "retry_after": 0},
        {},
        3,
    ),
}


#: The stream -> the metadata its fold keeps (see http_server's streams).
RUN_METADATA: dict[str, dict[str, Any]] = {
    "onecortex": {"sessionId": "01K0", "versionNumber": 1, "durationMs": 212},
    "clouisle": {"run_id": "run-1", "conversation_id": "c-1", "elapsed_ms": 840},
}


@pytest.mark.anyio
@pytest.mark.parametrize("scenario", list(SCENARIOS))
async def test_resumed_fold_equals_the_uninterrupted_one(
    client: Client, stream_server: StreamServer, rid: str, scenario: str
) -> None:
    name, faults, options, connections = SCENARIOS[scenario]
    provider = STREAMS[name][0]
    url = stream_server.url(f"/stream/{name}")
    message = await client.fold_resumable(url, provider, {"rid": rid, **faults}, **FAST, **options)
    assert message == whole(name, faults.get("ids"))
    assert not message.warnings  # no replayed event reached the provider
    # The ids a caller reconnects with survive the reconnections.
    assert message.metadata == RUN_METADATA.get(name, message.metadata)
    seen = stream_server.seen(rid)
    if connections:
        assert len(seen) == connections
    else:
        assert len(seen) > options["max_reconnects"] + 1
    first, second = seen[0], seen[1]
    assert "Last-Event-ID" not in first.headers
    assert not {"after_sequence", "starting_after"} & set(first.query)
    if name == "onecortex":
        shape = r"[0-9]+-[0-9]+" if faults.get("ids") == "redis" else r"[0-9]+"
        assert re.fullmatch(shape, second.headers["Last-Event-ID"])
    elif name == "clouisle":
        assert int(second.query["after_sequence"]) > 0
    else:
        assert int(second.query["starting_after"]) > 0


@requires_captures
@pytest.mark.anyio
async def test_resumed_capture_with_sequence_numbers(
    client: Client, stream_server: StreamServer, rid: str
) -> None:
    path = CAPTURES / "openai_responses" / "reasoning_summary.sse"
    body = path.read_bytes()
    url = stream_server.url("/capture/openai_responses/reasoning_summary")
    query = {"rid": rid, "cut": len(body) // 2, "replay": 4}
    message = await client.fold_resumable(url, "openai-responses", query, **FAST)
    assert message == sf.fold([body], provider="openai-responses")
    assert len(stream_server.seen(rid)) == 2


@pytest.mark.anyio
@pytest.mark.parametrize("cut", ["utf8", "middle"])
async def test_a_stream_without_id_or_sequence_is_never_requested_again(
    client: Client, stream_server: StreamServer, rid: str, cut: str
) -> None:
    body = generated_stream("openai", 40, "héllo ")
    offset = "utf8" if cut == "utf8" else len(body) // 2
    url = stream_server.url("/generate")
    query = {"rid": rid, "n": 40, "delta": "héllo ", "cut": offset}
    with pytest.raises(sf.IncompleteStreamError) as info:
        await client.fold_resumable(url, "openai", query, **FAST)
    exc = info.value
    assert "cannot be resumed" in exc.message
    assert exc.partial is not None
    assert not exc.partial.complete
    full = sf.fold([body], provider="openai")
    assert full.text.startswith(exc.partial.text)
    assert exc.__cause__ is not None  # the client's own error about the connection
    assert len(stream_server.seen(rid)) == 1


@pytest.mark.anyio
async def test_json_lines_cut_mid_line_are_not_requested_again(
    client: Client, stream_server: StreamServer, rid: str
) -> None:
    body = STREAMS["cohere-v1"][2]
    url = stream_server.url("/stream/cohere-v1")
    query = {"rid": rid, "end": body.index(b"aus") + 2}
    with pytest.raises(sf.IncompleteStreamError) as info:
        await client.fold_resumable(url, "cohere-v1", query, **FAST)
    assert info.value.partial is not None
    assert info.value.partial.text == "Grüße "
    assert len(stream_server.seen(rid)) == 1


@pytest.mark.anyio
async def test_gives_up_after_max_reconnects_without_progress(
    client: Client, stream_server: StreamServer, rid: str
) -> None:
    # Every connection is cut after 300 bytes and replays from the start: after the first,
    # none brings a new event.
    url = stream_server.url("/stream/onecortex")
    query = {"rid": rid, "cut": 300, "on": "all", "resume": 0}
    with pytest.raises(sf.IncompleteStreamError) as info:
        await client.fold_resumable(url, "onecortex", query, max_reconnects=2, **FAST)
    exc = info.value
    assert "gave up after 2 reconnections" in exc.message
    assert exc.partial is not None
    assert exc.partial.tool_calls  # what arrived is kept
    assert len(stream_server.seen(rid)) == 3


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["onecortex", "clouisle"])
async def test_never_reconnects_after_the_terminal_event(
    client: Client, stream_server: StreamServer, rid: str, name: str
) -> None:
    # The connection fails after the whole body, before the chunked encoding's end.
    provider, _, body = STREAMS[name]
    url = stream_server.url(f"/stream/{name}")
    message = await client.fold_resumable(url, provider, {"rid": rid, "cut": len(body)}, **FAST)
    assert message == whole(name)
    assert len(stream_server.seen(rid)) == 1


@pytest.mark.anyio
async def test_a_reconnection_refused_for_good_is_incomplete(
    client: Client, stream_server: StreamServer, rid: str
) -> None:
    url = stream_server.url("/stream/clouisle")
    query = {"rid": rid, "cut": 500, "status": 404, "status_on": 1}
    with pytest.raises(sf.IncompleteStreamError) as info:
        await client.fold_resumable(url, "clouisle", query, **FAST)
    cause = info.value.__cause__
    assert isinstance(cause, sf.StreamError)
    assert cause.status == 404
    assert info.value.partial is not None
    assert len(stream_server.seen(rid)) == 2


@pytest.mark.anyio
async def test_idle_timeout_on_a_stream_that_cannot_resume(
    client: Client, stream_server: StreamServer, rid: str
) -> None:
    url = stream_server.url("/generate")
    query = {"rid": rid, "n": 20, "stall": 5, "stall_at": 400}
    started = anyio.current_time()
    with pytest.raises(sf.IncompleteStreamError) as info:
        await client.fold_resumable(url, "openai", query, idle_timeout=0.3, **FAST)
    assert anyio.current_time() - started < 3  # not the server's 5 s stall
    assert isinstance(info.value.__cause__, (sf.IdleTimeoutError, TimeoutError))
    assert len(stream_server.seen(rid)) == 1
    # The given-up connection is closed: the server sees the client leave, before its 5 s
    # stall ends (requests has no read timeout to set once the request is made: its socket is
    # shut down under the blocked read).
    assert await anyio.to_thread.run_sync(stream_server.wait_disconnect, rid, 2.0)


#: A reconnection the server accepts and answers nothing (no status line) for 5 s.
HEAD_STALL = {"cut": 400, "head_stall": 5, "head_stall_on": "1"}


@pytest.mark.anyio
@pytest.mark.parametrize("client_kind", ["httpx-async-asyncio", "httpx-async-trio", "aiohttp"])
async def test_idle_timeout_covers_a_reconnection_that_never_answers(
    client: Client, stream_server: StreamServer, rid: str
) -> None:
    # Silence before the response's head is silence too: that attempt is given up and the
    # next one finishes the stream (the sync forms take the client's own timeout there). The
    # bound is a second, well under the 5 s stall: 0.3 s was shorter than the first
    # connection's head once, under the whole suite's load on two cores.
    url = stream_server.url("/stream/onecortex")
    query = {"rid": rid, **HEAD_STALL}
    message = await client.fold_resumable(url, "onecortex", query, idle_timeout=1.0, **FAST)
    assert message == whole("onecortex")
    assert len(stream_server.seen(rid)) == 3
    assert await anyio.to_thread.run_sync(stream_server.wait_disconnect, rid, 2.0)


@pytest.mark.anyio
@pytest.mark.parametrize("client_kind", ["httpx-async-asyncio", "httpx-async-trio", "aiohttp"])
async def test_idle_timeout_covers_a_refused_reconnection_whose_error_body_stalls(
    client: Client, stream_server: StreamServer, rid: str
) -> None:
    # A 503 whose body stops after 10 bytes: the silence is given up like any other, and the
    # next attempt finishes the stream.
    url = stream_server.url("/stream/onecortex")
    query = {"rid": rid, "cut": 400, "status": 503, "stall": 5, "stall_at": 10, "on": "1"}
    query["cut_on"] = "0"
    message = await client.fold_resumable(url, "onecortex", query, idle_timeout=0.3, **FAST)
    assert message == whole("onecortex")
    assert len(stream_server.seen(rid)) == 3
    assert stream_server.wait_disconnect(rid, 0)  # left during the stall, not after it


@pytest.mark.anyio
async def test_idle_timeout_before_the_first_byte_is_a_streamfold_error(
    client: Client, stream_server: StreamServer, rid: str
) -> None:
    # A first connection whose body sends nothing is raised as it is (nothing to resume, no
    # partial): it was a TimeoutError only, which `except sf.StreamfoldError` let through.
    url = stream_server.url("/stream/onecortex")
    query = {"rid": rid, "stall": 5, "stall_at": 0}
    with pytest.raises(sf.StreamfoldError) as info:
        await client.fold_resumable(url, "onecortex", query, idle_timeout=0.3, **FAST)
    assert type(info.value) is sf.IdleTimeoutError
    assert isinstance(info.value, TimeoutError)  # `except TimeoutError` still catches it
    assert str(info.value).startswith("onecortex: no bytes for 0.3 s (idle_timeout)")
    assert isinstance(info.value.partial, sf.Message)
    assert len(stream_server.seen(rid)) == 1


def test_stream_idle_timeout_before_the_first_byte_is_a_streamfold_error(
    stream_server: StreamServer, rid: str
) -> None:
    params = {"rid": rid, "stall": 5, "stall_at": 0}
    url = stream_server.url("/stream/onecortex")
    with (
        pytest.raises(sf.StreamfoldError) as info,
        sf.stream("GET", url, provider="onecortex", params=params, idle_timeout=0.3) as s,
    ):
        s.fold()
    assert type(info.value) is sf.IdleTimeoutError
    assert isinstance(info.value, TimeoutError)
    assert str(info.value).startswith("onecortex: no bytes for 0.3 s (idle_timeout)")
    assert isinstance(info.value.partial, sf.Message)


def test_stream_idle_timeout_covers_a_reconnection_that_never_answers(
    stream_server: StreamServer, rid: str
) -> None:
    params = {"rid": rid, **HEAD_STALL}
    url = stream_server.url("/stream/onecortex")
    options: dict[str, Any] = {"resume": True, "idle_timeout": 0.3, "initial_delay": 0.005}
    with sf.stream("GET", url, provider="onecortex", params=params, **options) as s:
        assert s.fold() == whole("onecortex")
    assert len(stream_server.seen(rid)) == 3


def check_no_response(error: BaseException, provider: ProviderName) -> None:
    """``error`` is the silence of a first request that never got its response's head."""
    assert type(error) is sf.IdleTimeoutError
    assert isinstance(error, TimeoutError)
    assert str(error).startswith(f"{provider}: no response for 0.3 s (idle_timeout)")
    assert "on connection 1, after 0 bytes and 0 frames" in str(error)
    assert (error.provider, error.waiting_for, error.position, error.connection) == (
        provider,
        "response",
        0,
        1,
    )
    assert isinstance(error.partial, sf.Message)
    assert error.partial.text == ""


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_astream_idle_timeout_covers_a_first_request_that_never_answers(
    anyio_backend: str, stream_server: StreamServer, rid: str
) -> None:
    # The first request too: nothing for idle_timeout is an IdleTimeoutError, as it is on a
    # reconnection (it was httpx's ReadTimeout, which `except sf.StreamfoldError` and
    # `except TimeoutError` let through), with the client's exception as its cause (the
    # shared sf.Client's read timeout here).
    from streamfold import _transport

    params = {"rid": rid, "head_stall": 5}
    url = stream_server.url("/stream/onecortex")
    with pytest.raises(sf.StreamfoldError) as info:
        async with sf.astream(
            "GET", url, provider="onecortex", params=params, idle_timeout=0.3
        ) as s:
            await s.fold()
    check_no_response(info.value, "onecortex")
    assert isinstance(info.value.__cause__, _transport.ReadTimeout)
    assert await anyio.to_thread.run_sync(stream_server.wait_disconnect, rid, 2.0)


@pytest.mark.parametrize("client_of", ["native", "httpx"])
@pytest.mark.parametrize("enter", ["with", "fold"])
def test_stream_idle_timeout_covers_a_first_request_that_never_answers(
    stream_server: StreamServer, rid: str, enter: str, client_of: str
) -> None:
    import httpx

    from streamfold import _transport

    params = {"rid": rid, "head_stall": 5}
    url = stream_server.url("/stream/onecortex")
    with contextlib.ExitStack() as stack:
        client = stack.enter_context(httpx.Client()) if client_of == "httpx" else None
        stream = sf.stream(
            "GET", url, provider="onecortex", params=params, idle_timeout=0.3, client=client
        )
        with pytest.raises(sf.StreamfoldError) as info:
            if enter == "with":
                with stream:
                    pass
            else:
                stream.fold()
    check_no_response(info.value, "onecortex")
    expected = httpx.ReadTimeout if client_of == "httpx" else _transport.ReadTimeout
    assert isinstance(info.value.__cause__, expected)
    assert stream_server.wait_disconnect(rid, 2.0)


def test_stream_own_shorter_read_timeout_stays_httpx_read_timeout(
    stream_server: StreamServer, rid: str
) -> None:
    # The caller's own read timeout, shorter than idle_timeout, fired: not idle_timeout's
    # silence, so not reported as "no response for 5 s (idle_timeout)".
    import httpx

    params = {"rid": rid, "head_stall": 5}
    url = stream_server.url("/stream/onecortex")
    timeout = httpx.Timeout(5.0, read=0.3)
    with (
        httpx.Client() as client,
        pytest.raises(httpx.ReadTimeout),
        sf.stream(
            "GET",
            url,
            provider="onecortex",
            params=params,
            idle_timeout=5,
            timeout=timeout,
            client=client,
        ),
    ):
        pass
    assert stream_server.wait_disconnect(rid, 2.0)


def test_native_own_shorter_read_timeout_stays_the_clients(
    stream_server: StreamServer, rid: str
) -> None:
    from streamfold import _transport

    params = {"rid": rid, "head_stall": 5}
    url = stream_server.url("/stream/onecortex")
    with (
        pytest.raises(_transport.ReadTimeout) as info,
        sf.stream("GET", url, provider="onecortex", params=params, idle_timeout=5, timeout=0.3),
    ):
        pass
    assert not isinstance(info.value, sf.StreamfoldError)
    assert stream_server.wait_disconnect(rid, 2.0)


@pytest.mark.anyio
@pytest.mark.parametrize("client_kind", ["httpx-async-asyncio", "httpx-async-trio", "aiohttp"])
async def test_idle_timeout_covers_a_first_connection_that_never_answers(
    client: Client, stream_server: StreamServer, rid: str
) -> None:
    url = stream_server.url("/stream/onecortex")
    with pytest.raises(sf.StreamfoldError) as info:
        await client.fold_resumable(
            url, "onecortex", {"rid": rid, "head_stall": 5}, idle_timeout=0.3, **FAST
        )
    check_no_response(info.value, "onecortex")
    assert len(stream_server.seen(rid)) == 1
    assert await anyio.to_thread.run_sync(stream_server.wait_disconnect, rid, 2.0)


#: A stream that sends its first 600 bytes (some events, with SSE ids), then nothing.
STALL_AT_600 = {"stall": 5, "stall_at": 600}


def check_silence_after_600_bytes(error: BaseException, provider: ProviderName) -> None:
    """``error`` gave up a stream silent after its first 600 bytes: the message says so."""
    assert isinstance(error, sf.IncompleteStreamError)
    assert "sent nothing for 0.3 s (idle_timeout)" in str(error)
    assert isinstance(error.partial, sf.Message)
    assert error.partial.blocks  # what came before the silence is kept
    cause = error.__cause__
    assert isinstance(cause, sf.IdleTimeoutError)
    assert (cause.provider, cause.waiting_for, cause.position) == (provider, "bytes", 600)
    assert cause.frames > 0
    assert cause.last_event_id
    assert str(cause).startswith(f"{provider}: no bytes for 0.3 s (idle_timeout) on connection 1")
    assert f"after 600 bytes and {cause.frames} frames of the stream" in str(cause)
    assert f"(last event id {cause.last_event_id!r})" in str(cause)


@pytest.mark.anyio
async def test_idle_timeout_says_where_the_stream_stood(
    client: Client, stream_server: StreamServer, rid: str
) -> None:
    url = stream_server.url("/stream/onecortex")
    query = {"rid": rid, **STALL_AT_600}
    with pytest.raises(sf.IncompleteStreamError) as info:
        await client.fold_resumable(
            url, "onecortex", query, idle_timeout=0.3, max_reconnects=0, **FAST
        )
    check_silence_after_600_bytes(info.value, "onecortex")


def test_stream_idle_timeout_says_where_the_stream_stood(
    stream_server: StreamServer, rid: str
) -> None:
    url = stream_server.url("/stream/onecortex")
    params = {"rid": rid, **STALL_AT_600}
    with (
        pytest.raises(sf.IncompleteStreamError) as info,
        sf.stream("GET", url, provider="onecortex", params=params, idle_timeout=0.3) as s,
    ):
        s.fold()
    check_silence_after_600_bytes(info.value, "onecortex")


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_astream_idle_timeout_says_where_the_stream_stood(
    anyio_backend: str, stream_server: StreamServer, rid: str
) -> None:
    url = stream_server.url("/stream/onecortex")
    params = {"rid": rid, **STALL_AT_600}
    with pytest.raises(sf.IncompleteStreamError) as info:
        async with sf.astream(
            "GET", url, provider="onecortex", params=params, idle_timeout=0.3
        ) as s:
            await s.fold()
    check_silence_after_600_bytes(info.value, "onecortex")


def check_client_read_timeout(error: BaseException) -> None:
    """``error`` gave up a stream after the client's own read timeout (0.3 s, shorter than
    ``idle_timeout=60``) fired: it says the connection failed, caused by httpx's timeout, and
    claims no silence of 60 s."""
    import httpx

    assert isinstance(error, sf.ConnectionLostError)
    assert "idle_timeout" not in str(error)
    cause = error.__cause__
    assert isinstance(cause, sf.ConnectionLostError | httpx.ReadTimeout)
    if isinstance(cause, sf.ConnectionLostError):
        cause = cause.__cause__
    assert isinstance(cause, httpx.ReadTimeout)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("form", ["sync", "async", "astream"])
async def test_a_shorter_read_timeout_of_the_client_is_not_said_to_be_idle_timeout(
    anyio_backend: str, stream_server: StreamServer, rid: str, form: str
) -> None:
    # A client timeout of 0.3 s (httpx's default is 5 s) fired during a silence with
    # idle_timeout=60: the error said 'no bytes for 60 s (idle_timeout)' (an IdleTimeoutError
    # as cause). As on sf.stream's first request, httpx's ReadTimeout now stays the cause.
    import httpx

    url = stream_server.url("/stream/onecortex")
    params: dict[str, Any] = {"rid": rid, **STALL_AT_600}
    options: dict[str, Any] = {"idle_timeout": 60, "max_reconnects": 0}
    with pytest.raises(sf.IncompleteStreamError) as info:
        if form == "sync":
            with httpx.Client(timeout=0.3) as sync_client:
                sf.fold_resumable(
                    lambda cursor: sync_client.stream("GET", url, params=params),
                    "onecortex",
                    **options,
                )
        elif form == "async":
            async with httpx.AsyncClient(timeout=0.3) as async_client:
                await sf.afold_resumable(
                    lambda cursor: async_client.stream("GET", url, params=params),
                    "onecortex",
                    **options,
                )
        else:
            async with (
                httpx.AsyncClient(timeout=0.3) as async_client,
                sf.astream(
                    "GET",
                    url,
                    provider="onecortex",
                    client=async_client,
                    params=params,
                    idle_timeout=60,
                ) as s,
            ):
                await s.fold()
    check_client_read_timeout(info.value)


def test_a_longer_read_timeout_of_the_client_on_a_response_head_is_not_idle_timeout(
    stream_server: StreamServer, rid: str
) -> None:
    # The sync forms with your own connect wait for a response's head as long as your client
    # says (0.5 s here): its ReadTimeout was said to be 'no response for 0.3 s (idle_timeout)'.
    import httpx

    url = stream_server.url("/stream/onecortex")
    params: dict[str, Any] = {"rid": rid, "head_stall": 5}
    with httpx.Client(timeout=0.5) as client, pytest.raises(httpx.ReadTimeout):
        sf.fold_resumable(
            lambda cursor: client.stream("GET", url, params=params),
            "onecortex",
            idle_timeout=0.3,
        )


@pytest.mark.parametrize("leave", ["break", "raise"])
def test_leaving_early_during_a_silence_closes_a_requests_connection(
    stream_server: StreamServer, rid: str, leave: str
) -> None:
    # With idle_timeout a requests body is read in a helper thread; the caller leaving while
    # that read waits on a silent server must close the connection then, not when the server
    # next sends (here after 5 s).
    import requests

    url = stream_server.url("/stream/onecortex")
    query: dict[str, Any] = {"rid": rid, "stall": 5, "stall_at": 200}
    with requests.Session() as session:

        def connect(cursor: sf.Cursor) -> Any:
            return session.get(url, params=query, headers=cursor.headers, stream=True)

        events = sf.events_resumable(connect, provider="onecortex", idle_timeout=30)
        with pytest.raises(KeyboardInterrupt) if leave == "raise" else contextlib.nullcontext():
            for _ in events:
                if leave == "raise":
                    raise KeyboardInterrupt
                break
        events.close()
        assert stream_server.wait_disconnect(rid, 2.0)


@pytest.mark.anyio
async def test_pings_keep_a_slow_stream_alive(
    client: Client, stream_server: StreamServer, rid: str
) -> None:
    # 60 ms between events with a 300 ms idle timeout: slow is not dead.
    url = stream_server.url("/stream/onecortex")
    query = {"rid": rid, "event_delay": 0.06}
    message = await client.fold_resumable(url, "onecortex", query, idle_timeout=0.3, **FAST)
    assert message == whole("onecortex")
    assert len(stream_server.seen(rid)) == 1


# -- sf.stream(resume=True) ----------------------------------------------------------------


def test_stream_resume_survives_a_stall(stream_server: StreamServer) -> None:
    rid = "stream-resume-stall"
    url = stream_server.url("/stream/onecortex")
    params = {"rid": rid, "stall": 5, "stall_at": 500}
    with sf.stream(
        "GET",
        url,
        provider="onecortex",
        resume=True,
        idle_timeout=0.3,
        initial_delay=0.005,
        params=params,
    ) as s:
        message = s.fold()
    assert message == whole("onecortex")
    assert len(stream_server.seen(rid)) == 2


def test_stream_without_resume_raises_while_iterating(stream_server: StreamServer) -> None:
    rid = "stream-no-resume"
    url = stream_server.url("/stream/onecortex", rid=rid, cut=500)
    events: list[sf.Event] = []
    with (
        pytest.raises(sf.IncompleteStreamError) as info,
        sf.stream("GET", url, provider="onecortex") as s,
    ):
        events.extend(s)
    assert events
    assert info.value.partial is not None
    assert "reconnecting is off" in info.value.message
    assert len(stream_server.seen(rid)) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("fault", ["cut", "stall"])
async def test_a_lost_connection_given_up_is_a_connection_lost_error(
    client: Client, stream_server: StreamServer, rid: str, fault: str
) -> None:
    # The connection fails mid-body (cut, or silent past idle_timeout) and the stream cannot
    # resume: ConnectionLostError, as sf.fold(response) raises for the same failure; it was a
    # plain IncompleteStreamError, which `except sf.ConnectionLostError` let through.
    url = stream_server.url("/generate")
    query: dict[str, Any] = {"rid": rid, "n": 20}
    options: dict[str, Any] = dict(FAST)
    if fault == "cut":
        query["cut"] = 400
    else:
        query.update(stall=5, stall_at=400)
        options["idle_timeout"] = 0.3
    with pytest.raises(sf.ConnectionLostError) as info:
        await client.fold_resumable(url, "openai", query, **options)
    assert info.value.partial is not None
    assert info.value.__cause__ is not None
    assert len(stream_server.seen(rid)) == 1


@pytest.mark.anyio
async def test_a_clean_end_given_up_is_not_a_connection_lost_error(
    client: Client, stream_server: StreamServer, rid: str
) -> None:
    url = stream_server.url("/generate")
    query = {"rid": rid, "n": 20, "end": 400}
    with pytest.raises(sf.IncompleteStreamError) as info:
        await client.fold_resumable(url, "openai", query, **FAST)
    assert not isinstance(info.value, sf.ConnectionLostError)
    assert info.value.__cause__ is None


@pytest.mark.parametrize("resume", [False, True])
def test_stream_connection_cut_is_a_connection_lost_error(
    stream_server: StreamServer, rid: str, resume: bool
) -> None:
    url = stream_server.url("/generate", rid=rid, n=20, cut=400)
    with (
        pytest.raises(sf.ConnectionLostError) as info,
        sf.stream("GET", url, provider="openai", resume=resume) as s,
    ):
        s.fold()
    assert info.value.partial is not None
    assert len(stream_server.seen(rid)) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_astream_connection_cut_is_a_connection_lost_error(
    anyio_backend: str, stream_server: StreamServer, rid: str
) -> None:
    url = stream_server.url("/generate", rid=rid, n=20, cut=400)
    with pytest.raises(sf.ConnectionLostError) as info:
        async with sf.astream("GET", url, provider="openai") as s:
            await s.fold()
    assert info.value.partial is not None


@pytest.mark.anyio
async def test_another_providers_stream_is_named_not_passed_off_as_cut(
    client: Client, stream_server: StreamServer, rid: str
) -> None:
    # An Anthropic stream read as OpenAI: a ProtocolError at its first frame says which
    # provider its frames read as, as sf.fold's does (it once said only that the connection
    # ended and could not be resumed, as for a stream cut short), and nothing is requested
    # again.
    url = stream_server.url("/generate")
    query = {"rid": rid, "provider": "anthropic", "n": 5}
    with pytest.raises(sf.ProtocolError) as info:
        await client.fold_resumable(url, "openai", query, **FAST)
    assert "provider='anthropic' or 'auto' reads it" in str(info.value)
    assert len(stream_server.seen(rid)) == 1


@pytest.mark.anyio
async def test_a_body_that_is_no_stream_is_a_protocol_error(
    client: Client, stream_server: StreamServer, rid: str
) -> None:
    # JSON lines served as text/event-stream: not one SSE frame. sf.fold raises ProtocolError
    # ("not an event stream"); the resumable forms raised IncompleteStreamError.
    url = stream_server.url("/stream/cohere-v1")
    query = {"rid": rid, "ctype": "text/event-stream"}
    with pytest.raises(sf.ProtocolError) as info:
        await client.fold_resumable(url, "openai", query, **FAST)
    assert "not an event stream" in str(info.value)
    assert "cohere-v1" in str(info.value)
    assert len(stream_server.seen(rid)) == 1


def test_stream_names_another_providers_stream(stream_server: StreamServer, rid: str) -> None:
    url = stream_server.url("/generate", rid=rid, provider="anthropic", n=5)
    with (
        pytest.raises(sf.ProtocolError) as info,
        sf.stream("GET", url, provider="gemini") as s,
    ):
        s.fold()
    assert "provider='anthropic' or 'auto' reads it" in str(info.value)
    assert info.value.partial is not None


# -- events without an id of their own ------------------------------------------------------

#: How a server answers ``Last-Event-ID``: ``resume=`` of http_server (``0``: the whole
#: stream again; ``after``: what follows the event with that id; ``next``: from the next
#: event with an ``id:`` line of its own).
REPLAYS = ["0", "after", "next"]


@pytest.mark.anyio
@pytest.mark.parametrize("replay", REPLAYS)
async def test_an_event_without_an_id_is_not_duplicated_by_a_resume(
    client: Client, stream_server: StreamServer, rid: str, replay: str
) -> None:
    # id: 1 t0, then t1 with no id, then a cut: Last-Event-ID: 1, and a server resuming
    # after id 1 sends t1 again (which the fold returned twice: "t0 t1 t1 t2").
    body = id_stream("1,-,3")
    query = {"spec": "1,-,3", "rid": rid, "cuts": body.index(b"id: 3"), "resume": replay}
    url = stream_server.url("/ids")
    message = await client.fold_resumable(url, "onecortex", query, **FAST)
    assert message.text == "t0 t1 t2 "
    assert message.complete
    assert [seen.headers.get("Last-Event-ID") for seen in stream_server.seen(rid)] == [None, "1"]


@st.composite
def _id_streams(draw: st.DrawFn) -> tuple[str, list[int]]:
    """An id spec (some events without an id, at least one with) and the connections' cuts,
    the first after the first event with an id (before it the stream cannot resume)."""
    has_id = draw(st.lists(st.booleans(), min_size=1, max_size=10))
    if not any(has_id):
        has_id[draw(st.integers(0, len(has_id) - 1))] = True
    spec = ",".join(str(i + 1) if h else "-" for i, h in enumerate(has_id))
    body = id_stream(spec)
    first_id = body.index(b"\n\n", body.index(b"id: ")) + 2
    first = draw(st.integers(first_id, len(body) - 1))
    later = draw(st.lists(st.integers(0, len(body) - 1), max_size=3))
    return spec, [first, *later]


_resumes = iter(range(10**9))


@settings(max_examples=60)
@given(stream=_id_streams(), replay=st.sampled_from(REPLAYS))
def test_resume_with_events_without_ids_neither_duplicates_nor_loses(
    stream_server: StreamServer, stream: tuple[str, list[int]], replay: str
) -> None:
    spec, cuts = stream
    ids = spec.split(",")
    query = {
        "spec": spec,
        "rid": f"ids-{next(_resumes)}",
        "cuts": ",".join(map(str, cuts)),
        "resume": replay,
    }
    with httpx.Client() as client:

        def connect(cursor: sf.Cursor) -> Any:
            url = stream_server.url("/ids", **query)
            return client.stream("GET", url, headers=cursor.headers)

        message = sf.fold_resumable(connect, provider="onecortex", initial_delay=0.005)
    assert message.complete
    tokens = [int(token[1:]) for token in message.text.split()]
    assert tokens == sorted(set(tokens))  # in order, none twice
    if replay == "next":
        # The server skips what follows the cursor up to its next id: only those may miss.
        assert {i for i, event_id in enumerate(ids) if event_id != "-"} <= set(tokens)
    else:
        assert tokens == list(range(len(ids)))


@pytest.mark.anyio
@pytest.mark.parametrize("event_id", ["a\x0bb", "\x01", "7\x7f", "x\x1b[2J"])
async def test_an_id_no_header_can_carry_ends_the_stream_at_once(
    client: Client, stream_server: StreamServer, rid: str, event_id: str
) -> None:
    # aiohttp raised its plain ValueError building the reconnection, losing the partial;
    # httpx made five reconnection attempts that never sent a request.
    spec = f"{event_id},-,3"
    body = id_stream(spec)
    query = {"spec": spec, "rid": rid, "cuts": body.index(b"id: 3")}
    with pytest.raises(sf.ConnectionLostError) as info:
        await client.fold_resumable(stream_server.url("/ids"), "onecortex", query, **FAST)
    assert "control character" in str(info.value)
    assert repr(event_id) in str(info.value)
    assert info.value.partial is not None and info.value.partial.text == "t0 t1 "
    assert len(stream_server.seen(rid)) == 1  # never requested again
