"""The HTTP client adapters against a real server: httpx sync, httpx async (asyncio and trio) and
aiohttp (asyncio only), each fault through each client."""

from __future__ import annotations

import json
import pickle
import re
import subprocess
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

import streamfold as sf
from conftest import CAPTURE_PROVIDER, capture_files, capture_id, requires_captures
from conftest import CAPTURES as CAPTURE_ROOT
from http_server import (
    CLIENT_BACKENDS,
    STREAMS,
    Client,
    StreamServer,
    make_client,
    stream_server,
)
from streamfold._events import BlockDelta
from streamfold._failures import ConnectionLostError
from streamfold._io.checks import MAX_ERROR_BODY, error_fields, retry_after
from streamfold._types import ProviderName

__all__ = ["stream_server"]  # the fixture, imported for the tests below

# httpx's async streams nest async generators it never closes; under trio, leaving a body
# before its end (an error event, a break) makes trio warn about them when they are collected
# (encode/httpx#3686, unfixed in httpx 0.28). streamfold closes the response and its own
# generators; these warnings are httpx's alone.
pytestmark = pytest.mark.filterwarnings(r"ignore:Async generator 'http(x|core)\.:ResourceWarning")


@pytest.fixture(params=list(CLIENT_BACKENDS))
def client_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(client_kind: str) -> str:
    return CLIENT_BACKENDS[client_kind]


@pytest.fixture
def client(client_kind: str) -> Client:
    return make_client(client_kind)


async def outcome(coro: Any) -> tuple[Any, ...]:
    """A comparable summary of a fold: the message, or the error with its partial."""
    try:
        return ("ok", await coro)
    except sf.StreamfoldError as exc:
        return (type(exc).__name__, getattr(exc, "code", None), getattr(exc, "partial", None))


def fold_bytes(body: bytes, provider: ProviderName) -> tuple[Any, ...]:
    try:
        return ("ok", sf.fold([body], provider=provider))
    except sf.StreamfoldError as exc:
        return (type(exc).__name__, getattr(exc, "code", None), getattr(exc, "partial", None))


# -- nothing imported unless used ------------------------------------------------------------


def test_import_streamfold_imports_no_http_client() -> None:
    code = (
        "import sys, streamfold\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('httpx', 'aiohttp', 'anyio', 'trio', 'sniffio', 'httpcore'))\n"
        "print(loaded)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


# -- whole streams -----------------------------------------------------------------------------

CAPTURES = capture_files()
#: Each capture through one of the clients, in turn (all of them through each would add
#: nothing the faults below do not already cover, and cost a hundred more requests).
CAPTURE_CASES = [
    (list(CLIENT_BACKENDS)[i % len(CLIENT_BACKENDS)], p) for i, p in enumerate(CAPTURES)
]


@requires_captures
@pytest.mark.anyio
@pytest.mark.parametrize(
    ("client_kind", "path"), CAPTURE_CASES, ids=[f"{k}-{capture_id(p)}" for k, p in CAPTURE_CASES]
)
async def test_capture_through_http_folds_like_its_bytes(
    client: Client, stream_server: StreamServer, path: Path
) -> None:
    provider = CAPTURE_PROVIDER[path.parent.name]
    url = stream_server.url(f"/capture/{path.parent.name}/{path.stem}")
    expected = fold_bytes(path.read_bytes(), provider)
    assert await outcome(client.fold(url, provider)) == expected


@pytest.mark.anyio
@pytest.mark.parametrize("name", sorted(STREAMS))
async def test_hand_written_stream_folds_complete(
    client: Client, stream_server: StreamServer, name: str
) -> None:
    provider, _, body = STREAMS[name]
    message = await client.fold(stream_server.url(f"/stream/{name}"), provider)
    assert message.complete
    assert message == sf.fold([body], provider=provider)
    assert message.text  # every hand-written stream writes some text


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["onecortex", "cohere-v1"])
async def test_drip_one_byte_per_write(
    client: Client, stream_server: StreamServer, name: str
) -> None:
    provider, _, body = STREAMS[name]
    url = stream_server.url(f"/stream/{name}", drip=1)
    assert await client.fold(url, provider) == sf.fold([body], provider=provider)


@pytest.mark.anyio
async def test_events_through_http_equal_events_of_bytes(
    client: Client, stream_server: StreamServer
) -> None:
    provider, _, body = STREAMS["clouisle"]
    events = await client.events(stream_server.url("/stream/clouisle"), provider)
    assert events == list(sf.events([body], provider=provider))


@pytest.mark.anyio
@pytest.mark.parametrize("encoding", ["gzip", "br"])
@pytest.mark.parametrize("name", ["onecortex", "cohere-v1"])
async def test_a_compressed_body_is_decompressed_by_the_client(
    client: Client, stream_server: StreamServer, name: str, encoding: str
) -> None:
    provider, _, body = STREAMS[name]
    url = stream_server.url(f"/stream/{name}", **{encoding: 1})
    assert await client.fold(url, provider) == sf.fold([body], provider=provider)


@pytest.mark.anyio
async def test_a_body_whose_content_encoding_breaks_is_a_lost_connection_with_the_partial(
    client: Client, stream_server: StreamServer
) -> None:
    # Bytes that are not gzip after the first event of a gzip body: each client's decoding
    # error (httpx DecodingError, urllib3 DecodeError, aiohttp ClientPayloadError, requests
    # ContentDecodingError) is the same typed failure, with the events that came before it.
    provider, _, body = STREAMS["onecortex"]
    url = stream_server.url("/stream/onecortex", gzip="bad")
    with pytest.raises(ConnectionLostError) as info:
        await client.fold(url, provider)
    first = body[: body.index(b"\n\n") + 2]
    assert info.value.partial == fold_bytes(first, provider)[2]
    assert info.value.__cause__ is not None


@pytest.mark.anyio
async def test_auto_accepts_json_lines_and_sse(client: Client, stream_server: StreamServer) -> None:
    for name in ("cohere-v1", "onecortex"):
        provider, _, body = STREAMS[name]
        message = await client.fold(stream_server.url(f"/stream/{name}"), "auto")
        assert message.text == sf.fold([body], provider=provider).text


@pytest.mark.anyio
@pytest.mark.parametrize(
    "ctype", ["application/stream+json", "application/x-ndjson", "application/json; charset=utf-8"]
)
async def test_cohere_v1_json_lines_content_types(
    client: Client, stream_server: StreamServer, ctype: str
) -> None:
    url = stream_server.url("/stream/cohere-v1", ctype=ctype)
    assert (await client.fold(url, "cohere-v1")).complete


# -- errors before the stream ----------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("status", [429, 500])
async def test_error_status_raises_stream_error_with_the_parsed_body(
    client: Client, stream_server: StreamServer, status: int
) -> None:
    url = stream_server.url("/stream/onecortex", status=status, retry_after=7)
    with pytest.raises(sf.StreamError) as info:
        await client.fold(url, "onecortex")
    exc = info.value
    assert exc.status == status
    assert exc.code == ("rate_limited" if status == 429 else "internal_error")
    # The provider's own text, as for an error inside the stream; str() adds the context.
    assert exc.message == f"injected HTTP {status}"
    assert str(exc).startswith(f"onecortex: HTTP {status} ")
    assert str(exc).endswith(f" before the stream: injected HTTP {status}")
    copied = pickle.loads(pickle.dumps(exc))
    assert (str(copied), copied.message, copied.status) == (str(exc), exc.message, status)
    assert isinstance(exc.raw, dict)
    assert exc.raw["error"]["message"] == f"injected HTTP {status}"
    assert exc.retryable_without_duplicate is True
    assert exc.retry_after == 7.0
    assert exc.provider == "onecortex"


@pytest.mark.anyio
async def test_error_status_retry_after_ms_is_read_first(
    client: Client, stream_server: StreamServer
) -> None:
    # OpenAI (and Azure) send retry-after-ms, which the OpenAI and Anthropic SDKs read before
    # Retry-After: a caller waiting `retry_after` must not wait 7 s when 1.5 s was asked.
    url = stream_server.url("/stream/onecortex", status=429, retry_after=7, retry_after_ms=1500)
    with pytest.raises(sf.StreamError) as info:
        await client.fold(url, "onecortex")
    assert info.value.retry_after == 1.5


@pytest.mark.anyio
@pytest.mark.parametrize("status", [503, 529])
async def test_error_status_whose_body_is_cut_is_still_a_stream_error(
    client: Client, stream_server: StreamServer, status: int
) -> None:
    # An overloaded server (or a proxy) that drops the connection inside its error body: the
    # status and Retry-After are what tells the caller to retry later, not a lost connection
    # "before the provider's terminal event" that has no status.
    url = stream_server.url("/stream/onecortex", status=status, retry_after=7, cut=20)
    with pytest.raises(sf.StreamError) as info:
        await client.fold(url, "onecortex")
    exc = info.value
    assert exc.status == status
    assert exc.code == status
    assert exc.retry_after == 7.0
    assert exc.retryable_without_duplicate is True
    assert str(exc).startswith(f"onecortex: HTTP {status}")
    assert "connection" in str(exc)  # says the body was cut short
    assert "connection" not in exc.message  # which is the body's own text
    assert exc.raw == '{"error": {"message"'
    assert exc.__cause__ is not None  # the client's exception


@pytest.mark.anyio
async def test_error_status_events_never_parse_the_body(
    client: Client, stream_server: StreamServer
) -> None:
    with pytest.raises(sf.StreamError) as info:
        await client.events(stream_server.url("/stream/clouisle", status=500), "clouisle")
    assert info.value.status == 500


@pytest.mark.anyio
async def test_wrong_content_type_raises_protocol_error_with_an_excerpt(
    client: Client, stream_server: StreamServer
) -> None:
    with pytest.raises(sf.ProtocolError) as info:
        await client.fold(stream_server.url("/html"), "openai")
    exc = info.value
    assert "text/html" in exc.message
    assert "text/event-stream" in exc.message
    assert "Please log in" in exc.message
    assert exc.raw.startswith("<!doctype html>")
    assert exc.provider == "openai"


@pytest.mark.anyio
async def test_sse_served_to_cohere_v1_is_a_protocol_error(
    client: Client, stream_server: StreamServer
) -> None:
    url = stream_server.url("/stream/onecortex")
    with pytest.raises(sf.ProtocolError) as info:
        await client.fold(url, "cohere-v1")
    assert "application/stream+json" in info.value.message
    assert "event: " in info.value.raw


@pytest.mark.anyio
async def test_json_served_to_gemini_hints_at_alt_sse(
    client: Client, stream_server: StreamServer
) -> None:
    url = stream_server.url("/stream/cohere-v1", ctype="application/json")
    with pytest.raises(sf.ProtocolError, match=r"alt=sse"):
        await client.fold(url, "gemini")


# -- the connection ends or fails mid-body -----------------------------------------------------


@pytest.mark.anyio
async def test_clean_eof_before_the_terminal_event_is_incomplete(
    client: Client, stream_server: StreamServer
) -> None:
    provider, _, body = STREAMS["onecortex"]
    full = sf.fold([body], provider=provider)
    with pytest.raises(sf.IncompleteStreamError) as info:
        await client.fold(stream_server.url("/stream/onecortex", end=len(body) - 40), provider)
    partial = info.value.partial
    assert partial is not None
    assert not partial.complete
    assert partial.text == full.text  # everything but the terminal event arrived


@pytest.mark.anyio
@pytest.mark.parametrize("cut", ["utf8", "700"])
async def test_cut_connection_is_incomplete_with_the_partial(
    client: Client, stream_server: StreamServer, cut: str
) -> None:
    provider, _, body = STREAMS["onecortex"]
    full = sf.fold([body], provider=provider)
    with pytest.raises(sf.IncompleteStreamError) as info:
        await client.fold(stream_server.url("/stream/onecortex", cut=cut), provider)
    exc = info.value
    assert exc.partial is not None
    assert not exc.partial.complete
    assert full.text.startswith(exc.partial.text)
    # The client's own exception says what happened to the connection.
    assert exc.__cause__ is not None
    assert "connection" in exc.message


#: A Vertex capture whose calls stream their arguments (``partialArgs``), and a cut inside
#: its first ``read_screen`` call: after the piece ``"A"`` (still streaming), in the middle of
#: the next frame.
VERTEX = ("gemini", "vertex_partial_args_parallel")


def vertex_cut() -> tuple[bytes, int]:
    folder, name = VERTEX
    body = (CAPTURE_ROOT / folder / f"{name}.sse").read_bytes()
    cut = body.index(b'"stringValue":""', body.index(b'"stringValue":"A"'))
    return body, cut


def bytes_until_error(body: bytes, provider: ProviderName) -> tuple[list[Any], Any]:
    """The events of ``body`` read whole, and the error ending them (a clean end of input)."""
    seen: list[Any] = []
    try:
        for event in sf.events([body], provider=provider):
            seen.append(event)
    except sf.StreamfoldError as exc:
        return seen, exc
    return seen, None


@pytest.mark.anyio
async def test_connection_lost_inside_one_big_chunk_keeps_what_came(
    client: Client, stream_server: StreamServer
) -> None:
    # A proxy that sends the body as one chunk, cut inside it: the bytes of that chunk that
    # came are the partial's (requests' iter_content lost them: it reads a chunk whole).
    provider, _, body = STREAMS["onecortex"]
    url = stream_server.url("/stream/onecortex", cut=700, midchunk=1)
    with pytest.raises(ConnectionLostError) as info:
        await client.fold(url, provider)
    expected = fold_bytes(body[:700], provider)[2]
    assert expected.blocks  # the call had begun by then
    assert info.value.partial == expected


@requires_captures
@pytest.mark.anyio
@pytest.mark.parametrize("provider", ["gemini", "auto"])
async def test_connection_lost_inside_a_streamed_call_keeps_its_arguments(
    client: Client, stream_server: StreamServer, provider: ProviderName
) -> None:
    # The provider holds a streamed call's arguments until the call ends; a lost connection
    # ends the input as a clean end would, so the partial is the one of the bytes that arrived.
    body, cut = vertex_cut()
    url = stream_server.url("/capture/{}/{}".format(*VERTEX), cut=cut)
    with pytest.raises(sf.IncompleteStreamError) as info:
        await client.fold(url, provider)
    exc = info.value
    assert exc.__cause__ is not None and "connection" in exc.message  # a lost connection
    partial = exc.partial
    assert partial is not None and not partial.complete
    theme, screen = partial.tool_calls
    assert (theme.name, theme.complete) == ("read_theme", True)
    assert (screen.name, screen.complete, screen.arguments) == ("read_screen", False, None)
    assert screen.arguments_json == '{"id": "A'
    assert screen.error == "the stream ended before the call's arguments were complete"
    assert partial == fold_bytes(body[:cut], provider)[2]


@requires_captures
@pytest.mark.anyio
async def test_connection_lost_events_end_like_a_clean_end(
    client: Client, stream_server: StreamServer
) -> None:
    body, cut = vertex_cut()
    url = stream_server.url("/capture/{}/{}".format(*VERTEX), cut=cut)
    events, error = await client.events_until_error(url, "gemini")
    assert isinstance(error, sf.IncompleteStreamError) and error.__cause__ is not None
    clean, _ = bytes_until_error(body[:cut], "gemini")
    assert events == clean
    assert isinstance(events[-1], BlockDelta) and events[-1].text == '{"id": "A'


@pytest.mark.anyio
async def test_connection_lost_before_auto_decides_keeps_the_held_frames(
    client: Client, stream_server: StreamServer
) -> None:
    # ``auto`` holds Chat Completions chunks that name no model until it can tell OpenAI from
    # Mistral: at the end of input it replays them as OpenAI, also when the connection drops.
    _, _, body = STREAMS["chat-no-model"]
    cut = body.index(b"wor") + 1
    url = stream_server.url("/stream/chat-no-model", cut=cut)
    with pytest.raises(sf.IncompleteStreamError) as info:
        await client.fold(url, "auto")
    partial = info.value.partial
    assert info.value.__cause__ is not None
    assert partial is not None and partial.text == "Hello, "
    assert partial == fold_bytes(body[:cut], "auto")[2]
    events, error = await client.events_until_error(url, "auto")
    assert isinstance(error, sf.IncompleteStreamError)
    assert events == bytes_until_error(body[:cut], "auto")[0]


@pytest.mark.anyio
async def test_the_clients_own_byte_iterator_cut_is_a_lost_connection_with_the_partial(
    client: Client, stream_server: StreamServer
) -> None:
    # `sf.fold(response.iter_bytes())`: streamfold sees only bytes, and the client's own
    # exception when the connection drops. It becomes ConnectionLostError with the partial
    # (the client's exception as its cause), never a bare httpx/aiohttp/requests error.
    provider, _, body = STREAMS["onecortex"]
    cut = 700
    url = stream_server.url("/stream/onecortex", cut=cut)
    with pytest.raises(ConnectionLostError) as info:
        await client.fold_body(url, provider)
    error = info.value
    assert error.__cause__ is not None and not isinstance(error.__cause__, sf.StreamfoldError)
    assert error.provider == provider and error.position == cut
    assert error.partial is not None and error.partial.text
    assert error.partial == fold_bytes(body[:cut], provider)[2]
    events, lost = await client.events_of_body_until_error(url, provider)
    assert isinstance(lost, ConnectionLostError) and lost.__cause__ is not None
    assert events == bytes_until_error(body[:cut], provider)[0]


@pytest.mark.anyio
@pytest.mark.parametrize("through", ["response", "iterator"])
async def test_a_connection_lost_after_the_terminal_event_keeps_the_message(
    client: Client, stream_server: StreamServer, through: str
) -> None:
    # The finish came; the usage chunk and [DONE] did not. The answer is decided (a resumable
    # stream ends there too): the message stands, and says what was lost.
    provider, _, body = STREAMS["openai-usage"]
    cut = body.index(b'"choices": []')
    cut = body.rindex(b"data:", 0, cut)
    url = stream_server.url("/stream/openai-usage", cut=cut)
    fold = client.fold if through == "response" else client.fold_body
    message = await fold(url, provider)
    assert message.complete and message.text == "Hello!" and message.finish_reason == "stop"
    assert message.usage is None
    assert [w.split(" (")[0] for w in message.warnings] == [
        "openai: the stream ended after finish_reason without [DONE]: a usage chunk or an "
        "error sent after the finish may be missing",
        "openai: the connection failed after the terminal event",
    ]
    drain = (
        client.events_until_error if through == "response" else client.events_of_body_until_error
    )
    events, error = await drain(url, provider)
    assert error is None
    last = events[-1]
    assert isinstance(last, sf.Notice) and "after the terminal event" in (last.message or "")
    assert isinstance(events[-3], sf.MessageEnd)


@requires_captures
def test_stream_connection_lost_inside_a_streamed_call(stream_server: StreamServer) -> None:
    body, cut = vertex_cut()
    url = stream_server.url("/capture/{}/{}".format(*VERTEX), cut=cut)
    with (
        sf.stream("GET", url, provider="gemini") as s,
        pytest.raises(sf.IncompleteStreamError) as info,
    ):
        s.fold()
    partial = info.value.partial
    assert partial is not None
    assert partial.tool_calls[-1].arguments_json == '{"id": "A'
    assert partial == fold_bytes(body[:cut], "gemini")[2]


# -- no leaked connections -------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["break", "raise"])
async def test_leaving_the_loop_closes_the_connection(
    client: Client, stream_server: StreamServer, how: str, request: pytest.FixtureRequest
) -> None:
    rid = f"leave-{request.node.callspec.id}"
    url = stream_server.url("/generate", n=3000, event_delay=0.002, rid=rid)
    seen = await client.read_then_leave(url, "openai", 5, raise_=how == "raise")
    assert seen == 5
    assert await anyio.to_thread.run_sync(stream_server.wait_disconnect, rid)


# -- sf.stream / sf.astream ------------------------------------------------------------------


def test_stream_events_then_fold(stream_server: StreamServer) -> None:
    provider, _, body = STREAMS["onecortex"]
    with sf.stream("GET", stream_server.url("/stream/onecortex"), provider=provider) as s:
        assert s.status_code == 200
        first = [event for _, event in zip(range(3), s, strict=False)]
        message = s.fold()  # reads the rest; the events read above are folded too
    assert [type(e) for e in first] == [sf.MessageStart, sf.StepStart, sf.BlockStart]
    assert message == sf.fold([body], provider=provider)
    assert s.response is not None
    assert s.response.is_closed


def test_stream_snapshot_follows_the_events(stream_server: StreamServer) -> None:
    texts = []
    with sf.stream("GET", stream_server.url("/stream/clouisle"), provider="clouisle") as s:
        for event in s:
            if isinstance(event, sf.BlockDelta) and event.kind == "text":
                texts.append(s.snapshot().text)
        final = s.fold()
    assert texts[-1] == final.text
    assert all(final.text.startswith(t) for t in texts)
    assert len(set(texts)) == len(texts)


@pytest.mark.parametrize(
    ("example", "error"),
    [
        ("anthropic_overloaded_error.sse", sf.StreamError),
        ("openai_cut_connection.sse", sf.IncompleteStreamError),
    ],
)
def test_stream_fold_after_the_loop_raised_raises_that_error_again(
    stream_server: StreamServer, example: str, error: type[sf.StreamfoldError]
) -> None:
    # A loop that caught the stream's error, then asks for the message: fold() raises that
    # error again. It raised IncompleteStreamError ("the events ended without the provider's
    # terminal event"), which turned a provider's overloaded_error into a cut stream.
    provider = cast("ProviderName", example.split("_", maxsplit=1)[0])
    with sf.stream("GET", stream_server.url(f"/example/{example}"), provider=provider) as s:
        with pytest.raises(error) as first:
            for _ in s:
                pass
        with pytest.raises(error) as again:
            s.fold()
    assert again.value is first.value
    assert again.value.partial is not None


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_astream_fold_after_the_loop_raised_raises_that_error_again(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    url = stream_server.url("/example/anthropic_overloaded_error.sse")
    async with sf.astream("GET", url, provider="anthropic") as s:
        with pytest.raises(sf.StreamError) as first:
            async for _ in s:
                pass
        with pytest.raises(sf.StreamError) as again:
            await s.fold()
    assert again.value is first.value
    assert again.value.code == "overloaded_error"


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_temporary_clients_share_one_ssl_context(
    anyio_backend: str, stream_server: StreamServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each temporary client made its own SSL context (certifi's CA bundle loaded: 20-30 ms of
    # CPU, blocking the event loop for astream) on every stream opened without client=.
    import ssl

    made: list[ssl.SSLContext] = []
    create = ssl.create_default_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        made.append(create(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(ssl, "create_default_context", counting)
    provider, _, body = STREAMS["onecortex"]
    url = stream_server.url("/stream/onecortex")
    expected = sf.fold([body], provider=provider)
    for _ in range(3):
        with sf.stream("GET", url, provider=provider) as s:
            assert s.fold() == expected
        async with sf.astream("GET", url, provider=provider) as a:
            assert await a.fold() == expected
    assert len(made) <= 1  # none when an earlier test made the shared one


@pytest.mark.parametrize(
    ("example", "provider"),
    [
        ("anthropic_thinking.sse", "anthropic"),
        ("clouisle_agent.sse", "clouisle"),
        ("openai_parallel_tools.sse", "openai"),
        ("cohere_v2_citations.sse", "cohere-v2"),
    ],
)
def test_stream_text_stream_joins_to_the_folded_text(
    stream_server: StreamServer, example: str, provider: ProviderName
) -> None:
    url = stream_server.url(f"/example/{example}", drip=1)
    with sf.stream("GET", url, provider=provider) as s:
        pieces = list(s.text_stream)
        message = s.fold()
    assert message.complete
    assert "".join(pieces) == message.text
    assert all(pieces)
    assert not message.text or len(pieces) > 1


def test_stream_text_stream_left_early_then_fold(stream_server: StreamServer) -> None:
    url = stream_server.url("/generate", provider="anthropic", n=50, delta="héllo ")
    with sf.stream("GET", url, provider="anthropic") as s:
        first = next(iter(s.text_stream))
        message = s.fold()
    assert first == "héllo "
    assert message.text == "héllo " * 50


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_astream_text_stream(anyio_backend: str, stream_server: StreamServer) -> None:
    url = stream_server.url("/example/gemini_thinking.sse", drip=1)
    async with sf.astream("GET", url, provider="gemini") as s:
        pieces = [piece async for piece in s.text_stream]
        message = await s.fold()
    assert "".join(pieces) == message.text
    assert message.reasoning and message.reasoning not in "".join(pieces)
    # Left early (no generator left for trio to finalize: warnings are errors here).
    rid = f"text-stream-{anyio_backend}"
    url = stream_server.url("/generate", provider="openai", n=3000, event_delay=0.002, rid=rid)
    async with sf.astream("GET", url, provider="openai") as s:
        async for piece in s.text_stream:
            assert piece == "tok "
            break
    assert await anyio.to_thread.run_sync(stream_server.wait_disconnect, rid, 2.0)


#: The first connection stalls mid-body; or it is cut and its reconnection stalls. Then: the
#: events read before the silence, and the connections made.
CLOSE_DURING_A_READ: dict[str, tuple[dict[str, Any], int, int]] = {
    "first": ({"stall": 5, "stall_at": 400}, 4, 1),
    "reconnection": (
        {"cut": 300, "cut_on": "0", "stall": 5, "stall_at": 20, "stall_on": "1"},
        3,
        2,
    ),
}


@pytest.mark.parametrize("which", list(CLOSE_DURING_A_READ))
def test_stream_close_from_another_thread_ends_the_read(
    stream_server: StreamServer, which: str
) -> None:
    # A "stop" from another thread while the reading one is blocked: close() raised
    # ValueError ("generator already executing") and the read went on until the server spoke
    # again, then ended in ConnectionLostError. Now the read ends and the loop with it.
    import threading
    import time

    rid = f"close-from-thread-{which}"
    fault, before, connections = CLOSE_DURING_A_READ[which]
    url = stream_server.url("/stream/onecortex", rid=rid, **fault)
    s = sf.stream("GET", url, provider="onecortex", resume=True, initial_delay=0.005)
    s.open()
    events: list[sf.Event] = []
    failures: list[BaseException] = []

    def read() -> None:
        try:
            for event in s:
                events.append(event)
        except BaseException as exc:  # reported by the test
            failures.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    # Until the silence: every event before it read, every connection made (the close is
    # then seen wherever the reader stands: in the read, or just before it).
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (
        len(events) < before or len(stream_server.seen(rid)) < connections
    ):
        time.sleep(0.002)
    s.close()
    reader.join(10)
    assert not reader.is_alive()
    assert not failures
    assert len(events) == before  # nothing after the close, no error
    assert stream_server.wait_disconnect(rid, 2.0)  # left during the silence
    assert len(stream_server.seen(rid)) == connections


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize(
    ("which", "resume"),
    [("first", True), ("reconnection", True), ("first", False)],
    ids=["first", "reconnection", "first-read-once"],
)
async def test_astream_aclose_from_another_task_ends_the_read(
    anyio_backend: str, stream_server: StreamServer, which: str, resume: bool
) -> None:
    # aclose() from another task raised RuntimeError ("asynchronous generator is already
    # running") and the reading task ended in ConnectionLostError. Without resume the body is
    # read straight from the connection (``NativeEvents``): the close must end that read too.
    rid = f"aclose-from-task-{which}-{resume}-{anyio_backend}"
    fault, before, connections = CLOSE_DURING_A_READ[which]
    url = stream_server.url("/stream/onecortex", rid=rid, **fault)
    events: list[sf.Event] = []
    options: dict[str, Any] = {"resume": True, "initial_delay": 0.005} if resume else {}
    async with sf.astream("GET", url, provider="onecortex", **options) as s:

        async def read() -> None:
            async for event in s:
                events.append(event)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(read)
                while len(events) < before or len(stream_server.seen(rid)) < connections:
                    await anyio.sleep(0.002)  # until the silence (see the sync test)
                reader = type(s._iterator).__name__
                await s.aclose()
    assert reader == ("async_generator" if resume else "NativeEvents")
    assert len(events) == before
    assert await anyio.to_thread.run_sync(stream_server.wait_disconnect, rid, 2.0)
    assert len(stream_server.seen(rid)) == connections


def test_stream_close_from_another_thread_between_two_events(
    stream_server: StreamServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # close() from another thread while the reading one was between two events: close() ran
    # the stream's generator to close it, and the reader asking for its next event meanwhile
    # got ValueError ("generator already executing"). Now its loop ends, as for a close()
    # that came during a read.
    import threading

    from streamfold._io import sync as http

    url = stream_server.url("/stream/onecortex")
    closing, tried = threading.Event(), threading.Event()
    close_sync = http.close_sync

    def slow_close(response: Any) -> None:  # the closer, inside the generator's cleanup
        closing.set()
        tried.wait(5)
        close_sync(response)

    monkeypatch.setattr(http, "close_sync", slow_close)
    s = sf.stream("GET", url, provider="onecortex")
    events: list[sf.Event] = []
    failures: list[BaseException] = []

    def close() -> None:
        try:
            s.close()
        except BaseException as exc:  # reported by the test
            failures.append(exc)

    closer = threading.Thread(target=close)
    try:
        for event in s:
            events.append(event)
            if len(events) == 2:
                closer.start()
                assert closing.wait(5)
    finally:
        tried.set()
        closer.join(5)
    assert not closer.is_alive()
    assert not failures
    assert len(events) == 2


def test_stream_close_from_another_thread_during_the_reconnection_delay(
    stream_server: StreamServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # close() from another thread while the reading one waited out the delay before a
    # reconnection: the reconnection was made anyway (with the caller's client) and the
    # stream read on to its end. Now the loop ends there, without another request.
    import threading
    import types

    import httpx

    from streamfold._resume import drivers as resumable

    rid = "close-in-delay"
    url = stream_server.url("/stream/onecortex", rid=rid, cut=300, cut_on="0")
    with httpx.Client() as client:
        s = sf.stream("GET", url, provider="onecortex", client=client, resume=True)

        def sleep(delay: float) -> None:  # the reader's delay: another thread closes now
            closer = threading.Thread(target=s.close)
            closer.start()
            closer.join()

        monkeypatch.setattr(resumable, "time", types.SimpleNamespace(sleep=sleep))
        events = list(s)
    assert events
    assert not isinstance(events[-1], sf.MessageEnd)
    assert len(stream_server.seen(rid)) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_astream_aclose_during_the_reconnection_delay(
    anyio_backend: str, stream_server: StreamServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The async twin: aclose() while the reading task waited before a reconnection.
    import httpx

    from streamfold._resume import drivers as resumable

    rid = f"aclose-in-delay-{anyio_backend}"
    url = stream_server.url("/stream/onecortex", rid=rid, cut=300, cut_on="0")
    async with httpx.AsyncClient() as client:
        s = sf.astream("GET", url, provider="onecortex", client=client, resume=True)

        async def sleep(delay: float) -> None:
            await s.aclose()  # as another task would, while this one is in the delay

        monkeypatch.setattr(resumable, "sleep", sleep)
        events = [event async for event in s]
    assert events
    assert not isinstance(events[-1], sf.MessageEnd)
    assert len(stream_server.seen(rid)) == 1


def test_stream_close_from_another_thread_while_a_reconnection_is_made(
    stream_server: StreamServer,
) -> None:
    # close() from another thread while the reading one sent a reconnection's request: close()
    # shut down the response it knew (the first, ended already), and the reconnection's
    # response was then read to its end. Now the loop ends once that response is known.
    import contextlib
    import threading
    from collections.abc import Iterator

    import httpx

    rid = "close-in-reconnection"
    url = stream_server.url("/stream/onecortex", rid=rid, cut=300, cut_on="0")
    requests_made: list[str] = []

    class ClosingClient(httpx.Client):
        @contextlib.contextmanager
        def stream(self, *args: Any, **kwargs: Any) -> Iterator[httpx.Response]:
            requests_made.append("request")
            if len(requests_made) == 2:  # the reconnection: another thread closes now
                closer = threading.Thread(target=s.close)
                closer.start()
                closer.join()
            with super().stream(*args, **kwargs) as response:
                yield response

    with ClosingClient() as client:
        s = sf.stream(
            "GET", url, provider="onecortex", client=client, resume=True, initial_delay=0.001
        )
        events = list(s)
    assert len(events) == len(sf.Pipeline("onecortex").feed(STREAMS["onecortex"][2][:300]))
    assert len(requests_made) == 2


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_astream_aclose_while_a_reconnection_is_made(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    # The async twin: aclose() while the reading task awaited a reconnection's response.
    import contextlib
    from collections.abc import AsyncIterator

    import httpx

    rid = f"aclose-in-reconnection-{anyio_backend}"
    url = stream_server.url("/stream/onecortex", rid=rid, cut=300, cut_on="0")
    requests_made: list[str] = []

    class ClosingClient(httpx.AsyncClient):
        @contextlib.asynccontextmanager
        async def stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[httpx.Response]:
            requests_made.append("request")
            if len(requests_made) == 2:
                await s.aclose()  # as another task would, while this one awaits the response
            async with super().stream(*args, **kwargs) as response:
                yield response

    async with ClosingClient() as client:
        s = sf.astream(
            "GET", url, provider="onecortex", client=client, resume=True, initial_delay=0.001
        )
        events = [event async for event in s]
    assert len(events) == len(sf.Pipeline("onecortex").feed(STREAMS["onecortex"][2][:300]))
    assert len(requests_made) == 2


def test_stream_raises_http_errors_when_entered(stream_server: StreamServer) -> None:
    url = stream_server.url("/stream/onecortex", status=429, rid="entered-429", on="all")
    stream = sf.stream("GET", url, provider="onecortex", initial_delay=0.01, max_delay=0.02)
    with pytest.raises(sf.StreamError) as info, stream:
        pytest.fail("the with-block must not run")
    assert info.value.status == 429
    assert info.value.attempts == 3  # the first request and max_retries=2 more
    assert len(stream_server.seen("entered-429")) == 3
    assert stream.response is None


def test_stream_without_with_closes_at_the_end(stream_server: StreamServer) -> None:
    events = list(sf.stream("GET", stream_server.url("/stream/cohere-v1"), provider="cohere-v1"))
    assert isinstance(events[-1], sf.MessageEnd)


def test_stream_break_without_with_closes_the_connection(stream_server: StreamServer) -> None:
    rid = "stream-break"
    url = stream_server.url("/generate", n=3000, event_delay=0.002, rid=rid)
    for count, _ in enumerate(sf.stream("GET", url, provider="openai"), start=1):
        if count == 3:
            break
    assert stream_server.wait_disconnect(rid)


def test_stream_incomplete_fold_has_the_partial(stream_server: StreamServer) -> None:
    body = STREAMS["clouisle"][2]
    url = stream_server.url("/stream/clouisle", cut=body.index(b"event: tool_result"))
    with (
        pytest.raises(sf.IncompleteStreamError) as info,
        sf.stream("GET", url, provider="clouisle") as s,
    ):
        s.fold()
    assert info.value.partial is not None
    assert info.value.partial.tool_calls


def test_stream_resume_reconnects_with_the_cursor(stream_server: StreamServer) -> None:
    provider, _, body = STREAMS["clouisle"]
    rid = "stream-resume"
    url = stream_server.url("/stream/clouisle")
    with sf.stream(
        "GET", url, provider=provider, resume=True, params={"rid": rid, "cut": "utf8", "replay": 2}
    ) as s:
        message = s.fold()
    assert message == sf.fold([body], provider=provider)
    seen = stream_server.seen(rid)
    assert len(seen) == 2
    assert "after_sequence" not in seen[0].query
    assert seen[1].query["after_sequence"] == str(message_sequence_before_cut(body))
    assert seen[1].query["rid"] == rid  # the request's own parameters are kept


def test_stream_resume_sends_a_non_ascii_last_event_id(stream_server: StreamServer) -> None:
    # An SSE id is any text; it goes back in UTF-8 (as EventSource sends it), where httpx
    # refused the header ("'ascii' codec can't encode") and the stream died reconnecting.
    provider, _, body = STREAMS["onecortex"]
    rid = "stream-resume-unicode-id"
    params = {"rid": rid, "ids": "unicode", "cut": 400, "replay": 1}
    url = stream_server.url("/stream/onecortex")
    with sf.stream(
        "GET", url, provider=provider, resume=True, initial_delay=0.005, params=params
    ) as s:
        message = s.fold()
    unicode_ids = re.sub(rb"(?m)^id: ", "id: évt-".encode(), body)
    assert message == sf.fold([unicode_ids], provider=provider)
    seen = stream_server.seen(rid)
    assert len(seen) == 2
    assert seen[1].headers["Last-Event-ID"].startswith("évt-")


def stream_headers(seen: Any) -> dict[str, str]:
    """The request's ``Accept`` and ``Cache-Control`` as the server saw them."""
    return {
        k.lower(): v for k, v in seen.headers.items() if k.lower() in ("accept", "cache-control")
    }


# What the server saw, for the headers given: httpx-sse's `Accept: text/event-stream` and
# `Cache-Control: no-store` unless `headers=` names them (in any case); Cohere v1 (JSON lines)
# and `auto` keep httpx's `Accept: */*`.
STREAM_HEADER_CASES: list[tuple[str, Any, dict[str, str]]] = [
    ("onecortex", None, {"accept": "text/event-stream", "cache-control": "no-store"}),
    (
        "onecortex",
        {"ACCEPT": "application/x-mine"},
        {"accept": "application/x-mine", "cache-control": "no-store"},
    ),
    (
        "onecortex",
        [("cache-control", "max-age=0")],
        {"accept": "text/event-stream", "cache-control": "max-age=0"},
    ),
    ("cohere-v1", None, {"accept": "*/*", "cache-control": "no-store"}),
    ("auto", {"X-Other": "1"}, {"accept": "*/*", "cache-control": "no-store"}),
]


@pytest.mark.parametrize(("provider", "headers", "expected"), STREAM_HEADER_CASES)
def test_stream_sends_the_sse_request_headers(
    stream_server: StreamServer, provider: ProviderName, headers: Any, expected: dict[str, str]
) -> None:
    # sf.stream sent neither header, where httpx-sse's connect_sse sends both.
    rid = f"stream-headers-{provider}-{headers!r}"
    name = "cohere-v1" if provider == "cohere-v1" else "onecortex"
    options = {} if headers is None else {"headers": headers}
    # Onecortex is cut once: the reconnection sends the headers too.
    params = {"rid": rid, "cut": 400} if name == "onecortex" else {"rid": rid}
    url = stream_server.url(f"/stream/{name}")
    with sf.stream(
        "GET", url, provider=provider, resume=True, initial_delay=0.005, params=params, **options
    ) as s:
        message = s.fold()
    assert message == sf.fold([STREAMS[name][2]], provider=provider)
    seen = stream_server.seen(rid)
    assert len(seen) == (2 if name == "onecortex" else 1)
    assert [stream_headers(request) for request in seen] == [expected] * len(seen)


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.anyio
@pytest.mark.parametrize(("provider", "headers", "expected"), STREAM_HEADER_CASES)
async def test_astream_sends_the_sse_request_headers(
    anyio_backend: str,
    stream_server: StreamServer,
    provider: ProviderName,
    headers: Any,
    expected: dict[str, str],
) -> None:
    rid = f"astream-headers-{anyio_backend}-{provider}-{headers!r}"
    name = "cohere-v1" if provider == "cohere-v1" else "onecortex"
    options = {} if headers is None else {"headers": headers}
    # Onecortex is cut once: the reconnection sends the headers too.
    params = {"rid": rid, "cut": 400} if name == "onecortex" else {"rid": rid}
    url = stream_server.url(f"/stream/{name}")
    async with sf.astream(
        "GET", url, provider=provider, resume=True, initial_delay=0.005, params=params, **options
    ) as s:
        message = await s.fold()
    assert message == sf.fold([STREAMS[name][2]], provider=provider)
    seen = stream_server.seen(rid)
    assert len(seen) == (2 if name == "onecortex" else 1)
    assert [stream_headers(request) for request in seen] == [expected] * len(seen)


def message_sequence_before_cut(body: bytes) -> int:
    """The sequence of the last event wholly before the first multi-byte character."""
    first_multibyte = next(i for i, b in enumerate(body) if b >= 0xC0)
    whole = body[:first_multibyte].rsplit(b"\n\n", 1)[0]
    last = whole.rsplit(b"data: ", 1)[1]
    return int(json.loads(last)["sequence"])


@pytest.mark.anyio
async def test_astream_events_then_fold(anyio_backend: str, stream_server: StreamServer) -> None:
    provider, _, body = STREAMS["openai-responses"]
    url = stream_server.url("/stream/openai-responses")
    async with sf.astream("GET", url, provider=provider) as s:
        kinds = []
        async for event in s:
            kinds.append(type(event))
            if len(kinds) == 2:
                break
        message = await s.fold()
    assert kinds[0] is sf.MessageStart
    assert message == sf.fold([body], provider=provider)


@pytest.mark.anyio
async def test_astream_with_a_given_client_and_resume(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    import httpx

    provider, _, body = STREAMS["onecortex"]
    async with httpx.AsyncClient() as http:
        url = stream_server.url("/stream/onecortex")
        async with sf.astream(
            "GET", url, provider=provider, client=http, resume=True, params={"cut": 500}
        ) as s:
            message = await s.fold()
        assert not http.is_closed  # a given client is the caller's to close
    assert message == sf.fold([body], provider=provider)


@pytest.mark.anyio
async def test_astream_raises_http_errors_when_entered(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    with pytest.raises(sf.StreamError) as info:
        async with sf.astream(
            "GET",
            stream_server.url("/stream/onecortex", status=503),
            provider="openai",
            max_retries=0,
        ):
            pytest.fail("the with-block must not run")
    assert info.value.status == 503


def test_stream_rejects_an_unknown_provider() -> None:
    with pytest.raises(ValueError, match="unknown provider"):
        sf.stream("GET", "http://127.0.0.1:9/", provider="nope")  # type: ignore[arg-type]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_other_kind_of_client_says_which_function_takes_it(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    # It failed at the request with "'_AsyncGeneratorContextManager' object does not support
    # the context manager protocol".
    import httpx

    url = stream_server.url("/stream/onecortex", rid="wrong-client")
    async with httpx.AsyncClient() as async_client:
        with pytest.raises(TypeError, match=r"use sf\.astream"):
            sf.stream("GET", url, provider="onecortex", client=async_client)  # type: ignore[arg-type]
    with httpx.Client() as sync_client:
        with pytest.raises(TypeError, match=r"use sf\.stream"):
            sf.astream("GET", url, provider="onecortex", client=sync_client)  # type: ignore[arg-type]
        # The right kinds still stream.
        with sf.stream("GET", url, provider="onecortex", client=sync_client) as s:
            assert s.fold().complete
    assert len(stream_server.seen("wrong-client")) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_stream_needs_no_httpx(
    anyio_backend: str, stream_server: StreamServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # sf.stream without client= raised ModuleNotFoundError (pip install streamfold[httpx]);
    # the shared sf.Client makes the request now.
    monkeypatch.setitem(sys.modules, "httpx", None)  # `import httpx` fails as if not installed
    provider, _, body = STREAMS["onecortex"]
    url = stream_server.url("/stream/onecortex")
    expected = sf.fold([body], provider=provider)
    with sf.stream("GET", url, provider=provider) as s:
        assert s.fold() == expected
    async with sf.astream("GET", url, provider=provider) as a:
        assert await a.fold() == expected


# -- the wrong response for the API --------------------------------------------------------------


@pytest.mark.anyio
async def test_async_response_to_sync_api_is_a_type_error(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    import httpx

    async with (
        httpx.AsyncClient() as http,
        http.stream("GET", stream_server.url("/stream/onecortex")) as response,
    ):
        with pytest.raises(TypeError, match="AsyncClient"):
            sf.fold(response, provider="onecortex")


@pytest.mark.anyio
async def test_sync_response_to_async_api_is_a_type_error(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    import httpx

    with (
        httpx.Client() as http,
        http.stream("GET", stream_server.url("/stream/onecortex")) as response,
        pytest.raises(TypeError, match=r"httpx\.Client"),
    ):
        await sf.afold(response, provider="onecortex")


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_aiohttp_response_to_sync_api_is_a_type_error(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    import aiohttp

    async with (
        aiohttp.ClientSession() as session,
        session.get(stream_server.url("/stream/onecortex")) as response,
    ):
        with pytest.raises(TypeError, match="aevents"):
            sf.fold(response, provider="onecortex")  # type: ignore[arg-type]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_requests_response_to_async_api_is_a_type_error(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    import requests

    with requests.get(stream_server.url("/stream/onecortex"), stream=True) as response:
        with pytest.raises(TypeError, match=r"requests\.Response is read synchronously"):
            await sf.afold(response, provider="onecortex")  # type: ignore[arg-type]
        assert response.raw.closed is False  # refused before anything was read or closed


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_aiohttp_response_already_read_folds_its_body(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    # As an httpx response after read() and a requests response after .content: the body the
    # client kept is the stream, not an empty one ("ended after 0 bytes", incomplete).
    import aiohttp

    provider, _, body = STREAMS["clouisle"]
    url = stream_server.url("/stream/clouisle")
    async with aiohttp.ClientSession() as session:
        async with session.get(url) as response:
            assert await response.read() == body
            message = await sf.afold(response, provider=provider)
            assert message == sf.fold([body], provider=provider)
        async with session.get(url) as response:
            assert await response.text() == body.decode()
            events = [event async for event in sf.aevents(response, provider=provider)]
            assert events == list(sf.events([body], provider=provider))


@pytest.mark.parametrize("cut", [None, 500])
def test_requests_content_length_body_streams(stream_server: StreamServer, cut: int | None) -> None:
    # A body framed by Content-Length (not chunked) is read as it arrives, as httpx and aiohttp
    # read it: the first events come while the server is still silent (here for 5 s), not
    # once the whole body is in. Cut short, it is a lost connection with the partial.
    import requests

    rid = f"requests-content-length-{cut}"
    query: dict[str, Any] = {"rid": rid, "length": 1, "stall": 5, "stall_at": 600}
    if cut is not None:
        query.update(cut=cut, stall=0)
    provider, _, body = STREAMS["onecortex"]
    with requests.get(stream_server.url("/stream/onecortex", **query), stream=True) as response:
        if cut is None:
            for _ in sf.events(response, provider=provider):
                assert not stream_server.wait_finished(rid, 0)  # the server is still sending
                break
            assert stream_server.wait_disconnect(rid, 2.0)
        else:
            with pytest.raises(sf.IncompleteStreamError) as info:
                sf.fold(response, provider=provider)
            assert isinstance(info.value, ConnectionLostError)
            assert info.value.partial == fold_bytes(body[:cut], provider)[2]


@pytest.mark.parametrize("name", ["onecortex", "cohere-v1"])
def test_iter_sse_of_a_requests_response_hands_over_each_read(
    stream_server: StreamServer, name: str
) -> None:
    # A requests.Response is iterable: 128-byte blocks, each awaited whole. A first frame
    # followed by a silence (a model thinking) came only once the silence ended; now it comes
    # at once, and leaving during the silence is seen by the server.
    import requests

    body = STREAMS[name][2]
    jsonl = name == "cohere-v1"
    first = body.index(b"\n" if jsonl else b"\n\n", 20) + (1 if jsonl else 2)
    assert first % 128
    rid = f"iter-frames-requests-{name}"
    url = stream_server.url(f"/stream/{name}", stall=3, stall_at=first, length=1, rid=rid)
    with requests.get(url, stream=True) as response:
        frames = sf.iter_json_lines(response) if jsonl else sf.iter_sse(response)
        frame = next(iter(frames))
        assert frame
    assert stream_server.wait_disconnect(rid, 2.0)  # left during the silence


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        ({"cut": 300}, "ChunkedEncodingError"),
        ({"cut": 300, "length": 1}, "ChunkedEncodingError"),
        ({"gzip": "bad"}, "ContentDecodingError"),
    ],
)
@pytest.mark.parametrize("name", ["onecortex", "cohere-v1"])
def test_iter_sse_of_a_requests_response_raises_requests_errors(
    stream_server: StreamServer, name: str, fault: dict[str, Any], error: str
) -> None:
    # Reading the body with urllib3's read1 let urllib3's own exceptions out
    # (urllib3.exceptions.ProtocolError for a connection cut mid-body), which
    # `except requests.RequestException` does not catch; iterating the response raised
    # requests' exceptions, as it does again.
    import requests

    jsonl = name == "cohere-v1"
    with requests.get(stream_server.url(f"/stream/{name}", **fault), stream=True) as response:
        frames = sf.iter_json_lines(response) if jsonl else sf.iter_sse(response)
        with pytest.raises(requests.RequestException) as caught:
            for _ in frames:
                pass
    assert type(caught.value).__name__ == error


def test_requests_response_read_without_stream_folds_too(stream_server: StreamServer) -> None:
    # Without `stream=True` requests has read the whole body already: the same message.
    import requests

    url = stream_server.url("/stream/onecortex")
    with requests.get(url, stream=True) as streamed:
        expected = sf.fold(streamed, provider="onecortex")
    with requests.get(url) as whole:
        assert sf.fold(whole, provider="onecortex") == expected
    assert expected.complete


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_an_async_client_response_read_already_folds_with_the_sync_api(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    # `await client.get(url)` has the whole body in memory, so sf.fold/sf.events read it;
    # closing it raised httpx's RuntimeError ("Attempted to call an sync close on an async
    # stream"), also over the StreamError of an error status.
    import httpx

    provider, _, body = STREAMS["onecortex"]
    async with httpx.AsyncClient() as client:
        whole = await client.get(stream_server.url("/stream/onecortex"))
        assert sf.fold(whole, provider=provider) == sf.fold([body], provider=provider)
        assert [type(e) for e in sf.events(whole, provider=provider)][-1] is sf.MessageEnd
        refused = await client.get(stream_server.url("/stream/onecortex", status=429))
        with pytest.raises(sf.StreamError) as info:
            sf.fold(refused, provider=provider)
    assert info.value.status == 429


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_client_response_read_already_folds_with_the_async_api(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    # The reverse of the test above: `client.get(url)` (httpx.Client) has the body in memory;
    # sf.afold refused it ("this httpx.Response comes from httpx.Client: use sf.events").
    import httpx

    provider, _, body = STREAMS["onecortex"]
    with httpx.Client() as client:
        whole = client.get(stream_server.url("/stream/onecortex"))
        refused = client.get(stream_server.url("/stream/onecortex", status=503))
    assert await sf.afold(whole, provider=provider) == sf.fold([body], provider=provider)
    assert [type(e) async for e in sf.aevents(whole, provider=provider)][-1] is sf.MessageEnd
    with pytest.raises(sf.StreamError) as info:
        await sf.afold(refused, provider=provider)
    assert info.value.status == 503


def test_non_response_object_is_a_type_error() -> None:
    import httpx

    with pytest.raises(TypeError, match="expected an iterable of bytes"), httpx.Client() as http:
        sf.fold(http, provider="openai")  # type: ignore[arg-type]


def test_an_async_iterable_given_to_a_sync_api_names_the_async_twin() -> None:
    async def chunks() -> AsyncGenerator[bytes, None]:
        yield b"data: {}\n\n"

    for run in (
        lambda source: sf.fold(source, provider="openai"),
        lambda source: list(sf.events(source, provider="openai")),
    ):
        source = chunks()
        with pytest.raises(TypeError, match=r"async_generator.*async twins \(aevents, afold"):
            run(source)
        anyio.run(source.aclose)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_request_of_the_other_kind_names_the_right_twin(
    anyio_backend: str, stream_server: StreamServer
) -> None:
    # A connect returning an AsyncClient's stream() or an aiohttp request to a sync function
    # said only "expected an iterable of bytes chunks" (aiohttp's, iterable, failed deep in
    # the decoder: "object of type '_asyncio.Future' has no len()"); an httpx.Client's
    # stream() to an async function said "expected an iterable", the wrong kind.
    import aiohttp
    import httpx

    url = stream_server.url("/stream/onecortex")
    async with httpx.AsyncClient() as async_client, aiohttp.ClientSession() as session:
        requests = [session.get(url), session.get(url)]  # closed below: never sent
        with pytest.raises(TypeError, match=r"read by the async twins"):
            sf.fold_resumable(lambda cursor: async_client.stream("GET", url), provider="onecortex")
        with pytest.raises(TypeError, match=r"read by the async twins"):
            sf.fold_resumable(lambda cursor: requests[0], provider="onecortex")
        with pytest.raises(TypeError, match=r"read by the async twins"):
            sf.fold(requests[1], provider="onecortex")
        for request in requests:
            request.close()
    with httpx.Client() as client:
        with pytest.raises(TypeError, match=r"pass this to their sync twins"):
            await sf.afold_resumable(lambda cursor: client.stream("GET", url), provider="onecortex")
        # The right twins read them.
        message = sf.fold_resumable(lambda cursor: client.stream("GET", url), provider="onecortex")
    assert message.complete


# -- error bodies --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code", "message"),
    [
        (  # OpenAI, Mistral
            {"error": {"message": "Rate limit", "type": "requests", "code": "rate_limit_exceeded"}},
            "rate_limit_exceeded",
            "Rate limit",
        ),
        (  # Anthropic
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            "overloaded_error",
            "Overloaded",
        ),
        (  # Gemini without alt=sse: a one-element array
            [{"error": {"code": 429, "message": "Quota", "status": "RESOURCE_EXHAUSTED"}}],
            "RESOURCE_EXHAUSTED",
            "Quota",
        ),
        ({"message": "invalid api token"}, None, "invalid api token"),  # Cohere
        ({"detail": "Run not found"}, None, "Run not found"),  # FastAPI-style
        ({"error": "bad request", "code": "E1"}, "E1", "bad request"),
        ({"error": {"code": 503, "message": "down"}}, 503, "down"),
        ("plain text", None, None),
    ],
)
def test_error_fields_of_the_common_error_bodies(body: Any, code: Any, message: Any) -> None:
    assert error_fields(body) == (code, message)


def test_retry_after_seconds_and_http_date() -> None:
    assert retry_after("3") == 3.0
    assert retry_after(" 007 ") == 7.0
    assert retry_after("-1") is None  # no delay-seconds (digits only): no wait asked
    assert retry_after("\uff17") is None  # a digit, but not an ASCII one
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
    assert retry_after("soon") is None
    assert retry_after(None) is None


def test_error_body_is_read_bounded(stream_server: StreamServer) -> None:
    import httpx

    url = stream_server.url("/stream/onecortex", status=500, pad=MAX_ERROR_BODY * 4)
    with httpx.Client() as http, http.stream("GET", url) as response:
        with pytest.raises(sf.StreamError) as info:
            sf.fold(response, provider="onecortex")
        assert response.is_closed
    exc = info.value
    assert isinstance(exc.raw, str)  # cut JSON is kept as text
    assert len(exc.raw.encode()) == MAX_ERROR_BODY
    assert "error body cut" in str(exc)  # the context, not the body's own text


def test_requests_error_body_with_a_content_length_is_read_bounded(
    stream_server: StreamServer,
) -> None:
    # A Content-Length error body (aiohttp's json_response, most frameworks') is not read
    # whole to keep 64 KiB of it (requests' iter_content(None) read it in one piece).
    import requests

    url = stream_server.url("/stream/onecortex", status=500, pad=MAX_ERROR_BODY * 64)
    with requests.get(url, stream=True) as response:
        assert response.headers["Content-Length"]
        with pytest.raises(sf.StreamError) as info:
            sf.fold(response, provider="onecortex")
        assert response.raw.tell() < MAX_ERROR_BODY * 8  # bytes taken off the wire
    assert len(info.value.raw.encode()) == MAX_ERROR_BODY


def test_requests_response_whose_raw_is_a_plain_file_folds() -> None:
    # Transport adapters (requests-file, test doubles) give requests a plain file as `raw`:
    # its read1 takes no decode_content; it is read as requests reads it.
    import io

    import requests

    provider, content_type, body = STREAMS["onecortex"]
    response = requests.Response()
    response.status_code = 200
    response.headers["Content-Type"] = content_type
    response.raw = io.BufferedReader(io.BytesIO(body))
    assert sf.fold(response, provider=provider) == sf.fold([body], provider=provider)


# -- redirects ----------------------------------------------------------------------------------

#: A credential in each of the headers providers take one in, and one named like them.
CREDENTIALS = {
    "Authorization": "Bearer sk-secret",
    "x-api-key": "sk-ant-secret",
    "api-key": "azure-secret",
    "x-goog-api-key": "gemini-secret",
    "X-Auth-Token": "token-secret",
    "Cookie": "session=secret",
}


def _other_origin(url: str) -> str:
    """The same server under another origin (another host name)."""
    return url.replace("http://127.0.0.1:", "http://localhost:", 1)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("where", ["kwargs", "client"])
async def test_a_redirect_to_another_origin_gets_no_credential(
    stream_server: StreamServer, kind: str, where: str, request: pytest.FixtureRequest
) -> None:
    # httpx drops Authorization on a cross-origin redirect, and sent x-api-key (Anthropic),
    # api-key (Azure) and x-goog-api-key (Gemini) on to the host the redirect named. The first
    # connection is cut, so the reconnection (resume=True) is redirected too.
    import httpx

    rid = re.sub(r"\W", "-", request.node.name)
    target = _other_origin(stream_server.url("/stream/onecortex", rid=rid, cut=400))
    url = stream_server.url("/redirect", to=target)
    headers = {**CREDENTIALS, "X-Trace": "kept"}
    options: dict[str, Any] = {"provider": "onecortex", "resume": True, "initial_delay": 0.001}
    client_options: dict[str, Any] = {"headers": headers, "follow_redirects": True}
    if kind == "sync":
        with httpx.Client(**client_options) as client:
            if where == "client":
                options["client"] = client
            else:
                options.update(client_options)
            with sf.stream("GET", url, **options) as s:
                message = s.fold()
    else:
        async with httpx.AsyncClient(**client_options) as aclient:
            if where == "client":
                options["client"] = aclient
            else:
                options.update(client_options)
            async with sf.astream("GET", url, **options) as s:
                message = await s.fold()
    assert message.complete
    seen = stream_server.seen(rid)
    assert len(seen) == 2  # the first connection and the reconnection, both redirected
    for hop in seen:
        sent = {name.lower() for name in hop.headers}
        assert sent.isdisjoint(name.lower() for name in CREDENTIALS), hop.headers
        assert hop.headers["X-Trace"] == "kept"
    assert seen[1].headers["Last-Event-ID"]


def test_a_redirect_within_the_origin_keeps_the_credentials(stream_server: StreamServer) -> None:
    rid = "redirect-same-origin"
    url = stream_server.url("/redirect", to=stream_server.url("/stream/onecortex", rid=rid))
    with sf.stream(
        "GET", url, provider="onecortex", headers=CREDENTIALS, follow_redirects=True
    ) as s:
        assert s.fold().complete
    (hop,) = stream_server.seen(rid)
    kept = {k: v for k, v in CREDENTIALS.items() if k != "Cookie"}  # httpx's cookie jar's
    assert {k: hop.headers[k] for k in kept} == kept


def test_redirects_are_bounded_as_httpx_bounds_them(stream_server: StreamServer) -> None:
    import httpx

    loop = stream_server.url("/redirect", to="/redirect?to=/redirect%3Fto%3D/html")
    with (
        httpx.Client(follow_redirects=True, max_redirects=1) as client,
        pytest.raises(httpx.TooManyRedirects),
        sf.stream("GET", loop, provider="onecortex", client=client) as s,
    ):
        s.fold()
