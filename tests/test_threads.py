"""Decoders under threads: one decoder per thread works as alone; one decoder shared by threads
serialises whole `feed` calls (no crash, no torn state), with or without the GIL."""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from streamfold import JsonLinesDecoder, ProtocolError, ServerSentEvent, SSEDecoder

THREADS = 8


@contextmanager
def busy_switching() -> Iterator[None]:
    """Switch threads as often as the interpreter allows, to make races likely."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def run_threads(target: Callable[[int], Any]) -> list[Any]:
    barrier = threading.Barrier(THREADS)
    results: list[Any] = [None] * THREADS
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            barrier.wait()
            results[n] = target(n)
        except BaseException as exc:  # reported to the test below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
    with busy_switching():
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    return results


def stream_for(n: int, events: int = 300) -> bytes:
    return "".join(
        f"event: t{n}\nid: {n}-{i}\ndata: {n}-{i} é😀\ndata: {'x' * (i % 50)}\n\n"
        for i in range(events)
    ).encode()


def split_randomly(data: bytes, rng: random.Random) -> list[bytes]:
    chunks, at = [], 0
    while at < len(data):
        size = rng.randint(1, 97)
        chunks.append(data[at : at + size])
        at += size
    return chunks


def test_one_decoder_per_thread_decodes_as_alone() -> None:
    expected = {}
    for n in range(THREADS):
        dec = SSEDecoder()
        expected[n] = dec.feed(stream_for(n)) + dec.close()

    def work(n: int) -> list[ServerSentEvent]:
        dec = SSEDecoder()
        out: list[ServerSentEvent] = []
        for chunk in split_randomly(stream_for(n), random.Random(n)):
            out.extend(dec.feed(chunk))
        return out + dec.close()

    results = run_threads(work)
    for n in range(THREADS):
        assert results[n] == expected[n]
        assert len(results[n]) == 300


def test_one_decoder_shared_by_threads_serialises_whole_feeds() -> None:
    dec = SSEDecoder()

    def work(n: int) -> list[ServerSentEvent]:
        out: list[ServerSentEvent] = []
        for i in range(400):
            # Each chunk is whole events, so whichever order the threads run in, every feed
            # must return exactly its own events, intact, with the id committed with them.
            out.extend(dec.feed(f"id: {n}.{i}\ndata: {n}.{i}\n\n: ping\n\n".encode()))
            _ = dec.last_event_id, dec.position, dec.retry
        return out

    results = run_threads(work)
    for n, events in enumerate(results):
        assert [e.data for e in events] == [f"{n}.{i}" for i in range(400)]
        assert all(e.id == e.data for e in events)
    per_feed = len(b"id: 0.0\ndata: 0.0\n\n: ping\n\n")
    assert dec.position >= THREADS * 400 * per_feed
    assert dec.close() == []
    assert dec.dropped_partial is False


def test_one_decoder_shared_by_threads_fed_torn_chunks_does_not_crash() -> None:
    # Threads feeding halves of events into one decoder make a nonsense stream; what matters
    # is that every call completes, every byte is counted, and the events are well formed.
    dec = SSEDecoder(max_event_bytes=4096)
    fed = [0] * THREADS

    def work(n: int) -> int:
        events = 0
        for chunk in split_randomly(stream_for(n, 100), random.Random(100 + n)):
            try:
                events += len(dec.feed(chunk))
            except ProtocolError as exc:  # a torn stream may well hold an oversized event
                events += len(exc.events)
            fed[n] += len(chunk)
        return events

    counts = run_threads(work)
    assert dec.position == sum(fed)
    assert sum(counts) > 0
    dec.close()
    with pytest.raises(ValueError, match="after close"):
        dec.feed(b"data: late\n\n")


def test_json_lines_decoder_shared_by_threads() -> None:
    dec = JsonLinesDecoder()

    def work(n: int) -> list[Any]:
        out: list[Any] = []
        for i in range(500):
            out.extend(dec.feed(f'{{"t": {n}, "i": {i}}}\n'.encode()))
        return out

    results = run_threads(work)
    for n, values in enumerate(results):
        assert values == [{"t": n, "i": i} for i in range(500)]
    assert dec.close() == []


def test_threads_reading_one_event_get_one_string() -> None:
    # `data` is made on first access; threads racing for it must all get the same `str`.
    for _ in range(20):
        (event,) = SSEDecoder().feed("data: ∂ata shared by every thread 😀\n\n".encode())

        def read(_n: int, event: ServerSentEvent = event) -> str:
            return event.data

        results = run_threads(read)
        assert results[0] == "∂ata shared by every thread 😀"
        assert all(r is results[0] for r in results)
