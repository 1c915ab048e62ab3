"""``sf.stream`` / ``sf.astream`` iterated: a stream that never reconnects reads on the events
path (text deltas made in Rust, ``Pipeline.arm_events``); one that may reconnect runs every
frame through its cursor in Python. The two give the same events, the same text and the same
message, on every capture and hand-written stream, a read per event or in odd-sized writes."""

from __future__ import annotations

from typing import Any

import pytest

import streamfold as sf
from conftest import CAPTURE_PROVIDER, capture_files
from http_server import STREAMS, StreamServer, generated_stream, stream_server
from streamfold._engine.pipeline import Pipeline
from streamfold._types import ProviderName

__all__ = ["stream_server"]  # the fixture, imported for the tests below

#: The tracked path: ``resume=True`` with reconnections allowed keeps its cursor per frame.
TRACKED = {"resume": True, "max_reconnects": 1}
UNTRACKED = {"resume": False}

CAPTURES = capture_files()
#: A read per event (the server writes each on its own), or writes of 7 bytes.
WRITES: list[dict[str, Any]] = [{}, {"chunk": 7}]


def _read(url: str, provider: ProviderName, options: dict[str, Any]) -> tuple[Any, ...]:
    """Events, text, and the message or the error (with its partial) of a sync stream."""
    events: list[Any] = []
    with sf.stream("GET", url, provider=provider, client=sf.Client(), **options) as s:
        try:
            for event in s:
                events.append(event)
        except sf.StreamfoldError as exc:
            return events, type(exc).__name__, str(exc), getattr(exc, "partial", None)
        message = s.fold()
    return events, "ok", message, message.timing is not None and message.timing.reads > 0


async def _aread(url: str, provider: ProviderName, options: dict[str, Any]) -> tuple[Any, ...]:
    events: list[Any] = []
    client = sf.Client()
    async with sf.astream("GET", url, provider=provider, client=client, **options) as s:
        try:
            async for event in s:
                events.append(event)
        except sf.StreamfoldError as exc:
            return events, type(exc).__name__, str(exc), getattr(exc, "partial", None)
        message = await s.fold()
    return events, "ok", message, message.timing is not None and message.timing.reads > 0


def _cases() -> list[tuple[str, ProviderName, bytes]]:
    cases = [(f"/stream/{name}", STREAMS[name][0], STREAMS[name][2]) for name in sorted(STREAMS)]
    cases += [
        (f"/capture/{p.parent.name}/{p.stem}", CAPTURE_PROVIDER[p.parent.name], p.read_bytes())
        for p in CAPTURES
    ]
    return cases


CASES = _cases()
IDS = [path.split("/", 2)[2] for path, _, _ in CASES]


def _events_of(body: bytes, provider: ProviderName) -> list[Any]:
    """``sf.events`` of the whole body, up to its error if it has one."""
    events: list[Any] = []
    try:
        for event in sf.events([body], provider=provider):
            events.append(event)
    except sf.StreamfoldError:
        pass
    return events


@pytest.mark.parametrize("writes", WRITES, ids=["per-event", "chunk7"])
@pytest.mark.parametrize(("path", "provider", "body"), CASES, ids=IDS)
def test_sync_stream_reads_the_same_on_both_paths(
    stream_server: StreamServer,
    path: str,
    provider: ProviderName,
    body: bytes,
    writes: dict[str, Any],
) -> None:
    url = stream_server.url(path, **writes)
    fast = _read(url, provider, UNTRACKED)
    assert fast == _read(url, provider, TRACKED)
    assert fast[0] == _events_of(body, provider)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize(("path", "provider", "body"), CASES, ids=IDS)
async def test_async_stream_reads_the_same_on_both_paths(
    stream_server: StreamServer, path: str, provider: ProviderName, body: bytes
) -> None:
    url = stream_server.url(path)
    fast = await _aread(url, provider, UNTRACKED)
    assert fast == await _aread(url, provider, TRACKED)
    assert fast[0] == _events_of(body, provider)


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often the events path was armed, and how many frames the provider ran in Python."""
    seen = {"armed": 0, "python_frames": 0}
    arm_events = Pipeline.arm_events
    read = Pipeline._read

    def counting_arm(self: Pipeline) -> Any:
        armed = arm_events(self)
        seen["armed"] += armed is not None
        return armed

    def counting_read(self: Pipeline, frames: list[Any], out: list[Any]) -> None:
        seen["python_frames"] += len(frames)
        read(self, frames, out)

    monkeypatch.setattr(Pipeline, "arm_events", counting_arm)
    monkeypatch.setattr(Pipeline, "_read", counting_read)
    return seen


@pytest.mark.parametrize("options", [UNTRACKED, TRACKED], ids=["untracked", "tracked"])
def test_only_a_stream_that_cannot_reconnect_reads_deltas_in_rust(
    stream_server: StreamServer, paths: dict[str, int], options: dict[str, Any]
) -> None:
    # The path is armed once the provider knows the text's chunk (its first deltas): the
    # server pauses after four events, so that the reads before the path is armed cannot hold
    # the whole stream however fast the server writes.
    first_four = len(b"".join(generated_stream("openai", 200).split(b"\n\n", 4)[:4])) + 8
    url = stream_server.url("/generate", provider="openai", n=200, stall=0.2, stall_at=first_four)
    events, outcome, message, _ = _read(url, "openai", options)
    assert outcome == "ok" and message.complete
    deltas = sum(isinstance(event, sf.BlockDelta) for event in events)
    assert deltas == 200
    if options is UNTRACKED:
        assert paths["armed"] >= 1
        assert paths["python_frames"] < 10  # the role chunk, the first deltas, the end
    else:
        assert paths["armed"] == 0
        assert paths["python_frames"] >= 200


async def _silence(url: str) -> tuple[sf.ConnectionLostError, sf.IdleTimeoutError]:
    """The error of a stream that falls silent, and the silence's, which it was caused by."""
    async with sf.astream("GET", url, provider="openai", client=sf.Client(), idle_timeout=0.3) as s:
        with pytest.raises(sf.ConnectionLostError) as raised:
            async for _ in s:
                pass
    silence = raised.value.__cause__
    assert isinstance(silence, sf.IdleTimeoutError)
    return raised.value, silence


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_idle_timeout_counts_the_frames_the_events_path_read(
    stream_server: StreamServer,
) -> None:
    """The silence's error says where the stream stood, frames read in Rust included: every
    frame the bytes before the stall hold."""
    query = {"provider": "openai", "n": 50}
    with sf.Client() as client, client.stream("GET", stream_server.url("/generate", **query)) as r:
        whole = r.read()
    lost, silence = await _silence(stream_server.url("/generate", **query, stall=3, stall_at=2000))
    assert silence.position == lost.position == 2000
    assert silence.frames == whole[:2000].count(b"\n\n") > 10
    assert lost.partial is not None and lost.partial.text


#: What a server does to a stream's body: nothing; cut the connection before the first byte,
#: mid-event, mid-character, inside one chunk; end the body early; drip it a byte at a time;
#: gzip it, or break its gzip; send it as an HTML page.
FAULTS: list[dict[str, Any]] = [
    {},
    {"cut": 0},
    {"cut": 30},
    {"cut": "utf8"},
    {"cut": 200, "midchunk": 1},
    {"end": 200},
    {"drip": 1},
    {"gzip": 1},
    {"gzip": "bad"},
    {"ctype": "text/html"},
]
FAULT_IDS = ["whole", "cut-0", "cut-30", "cut-utf8", "cut-midchunk", "end", "drip", "gzip"]
FAULT_IDS += ["gzip-bad", "html"]


async def _aread_outcome(url: str, provider: ProviderName, **options: Any) -> tuple[Any, ...]:
    """``_aread``, an error before the first event included, and the class of what read the
    body."""
    events: list[Any] = []
    reader = None
    try:
        async with sf.astream("GET", url, provider=provider, client=sf.Client(), **options) as s:
            async for event in s:
                reader = type(s._iterator).__name__
                events.append(event)
            message = await s.fold()
    except sf.StreamfoldError as exc:
        cause = exc.__cause__
        return (
            reader,
            events,
            type(exc).__name__,
            str(exc),
            getattr(exc, "position", None),
            getattr(exc, "partial", None),
            None if cause is None else type(cause).__name__,
        )
    return reader, events, "ok", message


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("fault", FAULTS, ids=FAULT_IDS)
@pytest.mark.parametrize("name", ["onecortex", "openai-usage", "clouisle"])
async def test_a_body_read_once_ends_as_the_resumable_path_ends_it(
    stream_server: StreamServer, name: str, fault: dict[str, Any]
) -> None:
    """``sf.astream`` over ``sf.Client`` with nothing to resume and no idle timer reads the
    body straight from the connection (``NativeEvents``); with an idle timer it runs the
    generic driver (``atimed_events``). The same faults end both the same way: the same
    events, then the same error, position, partial message and cause."""
    provider, _, _ = STREAMS[name]
    url = stream_server.url(f"/stream/{name}", **fault)
    direct = await _aread_outcome(url, provider)
    generic = await _aread_outcome(url, provider, idle_timeout=30)
    assert direct[1:] == generic[1:]
    if direct[1]:  # an event came: it was read on each stream's own path
        assert (direct[0], generic[0]) == ("NativeEvents", "async_generator")
