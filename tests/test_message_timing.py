"""``Message.timing``: when a stream's bytes and content came, measured as the fold reads it.

The streams here are paced with real sleeps, and every assertion is an ordering or a lower
bound that the pacing forces (a read cannot come before the sleep that precedes it), so a
slow machine cannot fail them. Both places a fold reads are covered: reads the provider
handles in Python, and text reads the decoder folds in Rust.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

import streamfold as sf
from http_server import StreamServer, id_stream, stream_server

__all__ = ["stream_server"]

STALL = 0.25


def chat(content: str | None = None, finish: str | None = None) -> bytes:
    delta = "{}" if content is None else '{"content":"' + content + '"}'
    reason = "null" if finish is None else f'"{finish}"'
    return (
        b'data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
        b'"delta":' + delta.encode() + b',"finish_reason":' + reason.encode() + b"}]}\n\n"
    )


#: A role chunk, 30 text deltas (the folding path takes them after the first few), a stall
#: split by a keep-alive comment, one more text delta, the finish, ``[DONE]``.
HEAD = [chat(None)] + [chat(f"w{i} ") for i in range(30)]
LAST_TEXT = chat("end")
TAIL = [chat(finish="stop"), b"data: [DONE]\n\n"]
COMMENT = b": keep-alive\n\n"


def paced() -> Iterator[bytes]:
    time.sleep(0.05)
    yield from HEAD
    time.sleep(STALL / 2)
    yield COMMENT  # a read without an event: not the end of the wait between events
    time.sleep(STALL / 2)
    yield LAST_TEXT
    time.sleep(0.05)
    yield from TAIL


async def apaced() -> AsyncIterator[bytes]:
    for chunk in paced_plan():
        if isinstance(chunk, float):
            await sleep(chunk)
        else:
            yield chunk


def paced_plan() -> list[bytes | float]:
    return [0.05, *HEAD, STALL / 2, COMMENT, STALL / 2, LAST_TEXT, 0.05, *TAIL]


async def sleep(seconds: float) -> None:
    # anyio picks the running library's sleep (asyncio or trio).
    import anyio

    await anyio.sleep(seconds)


def check_paced(timing: sf.StreamTiming | None) -> None:
    assert timing is not None
    assert timing.reads == len(HEAD) + 1 + 1 + len(TAIL)
    assert timing.first_byte is not None and timing.first_byte >= 0.05
    assert timing.first_token is not None and timing.first_byte <= timing.first_token
    # The text after the stall was folded in Rust: its read is the last token's.
    assert timing.last_token is not None and timing.last_token >= 0.05 + STALL
    assert timing.first_token < STALL
    # The comment halfway through did not end the wait: the gap is the whole stall.
    assert timing.largest_gap is not None and timing.largest_gap >= STALL


def test_fold_times_its_reads() -> None:
    message = sf.fold(paced(), provider="openai")
    assert message.text.endswith("w29 end")
    check_paced(message.timing)


@pytest.mark.anyio
async def test_afold_times_its_reads() -> None:
    message = await sf.afold(apaced(), provider="openai")
    check_paced(message.timing)


def test_auto_detection_and_json_lines_are_timed() -> None:
    lines = [
        b'{"is_finished":false,"event_type":"stream-start","generation_id":"g"}\n',
        b'{"is_finished":false,"event_type":"text-generation","text":"Hi"}\n',
        b'{"is_finished":true,"event_type":"stream-end","finish_reason":"COMPLETE",'
        b'"response":{"text":"Hi","generation_id":"g"}}\n',
    ]

    def reads() -> Iterator[bytes]:
        for line in lines:
            time.sleep(0.02)
            yield line

    timing = sf.fold(reads(), provider="auto").timing
    assert timing is not None and timing.reads == 3
    assert timing.first_byte is not None and timing.first_byte >= 0.02
    assert timing.first_token is not None and timing.first_token >= 0.04
    assert timing.largest_gap is not None and timing.largest_gap >= 0.02


def test_timing_is_not_part_of_the_message() -> None:
    # Two folds of the same bytes are equal however their reads were timed; the JSON form
    # and the repr leave the timing out; a pickle keeps it.
    fast = sf.fold([*HEAD, LAST_TEXT, *TAIL], provider="openai")
    slow = sf.fold(paced(), provider="openai")
    assert fast.timing != slow.timing
    assert fast == slow
    assert "timing" not in fast.to_dict()
    assert "timing" not in repr(fast)
    assert sf.Message.from_dict(slow.to_dict()).timing is None
    assert pickle.loads(pickle.dumps(slow)).timing == slow.timing
    assert slow.timing is not None
    assert slow.timing.to_dict() == {
        "first_byte": slow.timing.first_byte,
        "first_token": slow.timing.first_token,
        "last_token": slow.timing.last_token,
        "largest_gap": slow.timing.largest_gap,
        "reads": slow.timing.reads,
    }


def test_a_stream_with_no_content_and_a_folder_fed_by_hand() -> None:
    with pytest.raises(sf.IncompleteStreamError) as caught:
        sf.fold([chat(None)], provider="openai")
    partial = caught.value.partial
    assert partial is not None and partial.timing is not None
    assert partial.timing.reads == 1 and partial.timing.first_token is None
    assert partial.timing.largest_gap == 0.0  # one read with events: no wait between two
    folder = sf.Folder("openai")
    for event in sf.events([*HEAD, *TAIL], provider="openai"):
        folder.add(event)
    assert folder.result().timing is None


def test_a_body_folded_whole_has_no_reads() -> None:
    # fold_json reads no stream: a timing with no read in it.
    timing = sf.fold_json('{"result": "Hi", "events": []}', "onecortex").timing
    assert timing == sf.StreamTiming(None, None, None, None, 0)


def test_snapshots_show_the_timing_so_far(stream_server: StreamServer) -> None:
    url = stream_server.url("/generate", provider="openai", n=30, event_delay=0.005)
    seen: list[sf.StreamTiming] = []
    with sf.stream("GET", url, provider="openai") as s:
        for _ in s:
            timing = s.snapshot().timing
            assert timing is not None
            seen.append(timing)
        final = s.fold().timing
    assert final is not None
    reads = [t.reads for t in seen]
    assert reads == sorted(reads) and reads[0] < reads[-1] <= final.reads
    assert seen[0].first_byte == final.first_byte


def test_stream_times_from_the_request(stream_server: StreamServer) -> None:
    # The server waits before its head: the first byte comes after that wait, since the
    # clock starts when the request is sent. Native client and httpx alike.
    url = stream_server.url("/generate", provider="anthropic", n=20, head_stall=STALL)
    with sf.stream("GET", url, provider="anthropic") as s:
        native = s.fold()
    with httpx.Client() as client, sf.stream("GET", url, provider="anthropic", client=client) as s:
        through_httpx = s.fold()
    for message in (native, through_httpx):
        timing = message.timing
        assert timing is not None and timing.reads >= 1
        assert timing.first_byte is not None and timing.first_byte >= STALL
        assert timing.first_token is not None and timing.last_token is not None
        assert timing.first_byte <= timing.first_token <= timing.last_token
    assert native == through_httpx


@pytest.mark.anyio
async def test_astream_times_a_stall_in_the_body(stream_server: StreamServer) -> None:
    url = stream_server.url("/generate", provider="openai", n=40, stall=STALL, stall_at=2000)
    async with sf.astream("GET", url, provider="openai") as s:
        folded = await s.fold()  # the native client's pump
    async with sf.astream("GET", url, provider="openai") as s:
        async for _ in s:  # event by event
            pass
        iterated = await s.fold()
    # The server's stall is measured across the network: the read before it may come a few
    # milliseconds after the server's write, and it may hold only part of an event.
    # The pump hands the body over in batches, each read still timed on its own.
    assert folded.timing is not None and folded.timing.reads >= 2
    for message in (folded, iterated):
        timing = message.timing
        assert timing is not None
        assert timing.largest_gap is not None and timing.largest_gap >= 0.8 * STALL
        assert timing.last_token is not None and timing.last_token >= 0.8 * STALL


def test_fold_resumable_times_every_connection(stream_server: StreamServer) -> None:
    # A cut, a reconnection after a pause: the reads of both connections are on one clock,
    # and the wait between them is the stream's longest.
    body = id_stream("1,2,3,4")
    query = {"spec": "1,2,3,4", "rid": "timing-resume", "cuts": body.index(b"id: 3")}
    with httpx.Client() as client:

        def connect(cursor: sf.Cursor) -> Any:
            url = stream_server.url("/ids", **query)
            return client.stream("GET", url, headers=cursor.headers)

        message = sf.fold_resumable(connect, provider="onecortex", initial_delay=STALL)
    timing = message.timing
    assert message.text == "t0 t1 t2 t3 "
    assert timing is not None and timing.reads >= 2
    assert timing.first_token is not None and timing.last_token is not None
    assert timing.last_token - timing.first_token >= STALL
    assert timing.largest_gap is not None and timing.largest_gap >= STALL
