"""The decoder's stepping calls (``SSEDecoder.feed_stepping``, ``feed_folding``, ``resume``),
which the fold reads each read with so that it can arm the folding path between a read's
frames: however a read is stepped, and whatever comes between the steps (a new read, the end
of input), the frames and errors come in the order and with the content ``feed`` gives."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from streamfold import ProtocolError, SSEDecoder

#: Events of a few shapes: plain, named, with an id, multi-line, empty, over the size limit.
EVENT = st.one_of(
    st.text(alphabet="ab é😀{}", max_size=8).map(lambda t: f"data: {t}\n\n"),
    st.text(alphabet="xy", min_size=1, max_size=3).map(lambda t: f"event: {t}\ndata: 1\n\n"),
    st.just("id: 7\ndata: two\ndata: lines\n\n"),
    st.just(": a comment\n\n"),
    st.just("data:\n\n"),
    st.just("data: " + "z" * 80 + "\n\n"),  # over the limit below: an error in its place
)

LIMIT = 64


def _item(frame: Any) -> tuple[str, str, str]:
    return (frame.event, frame.data, frame.id)


def _reads(data: bytes, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    out, at = [], 0
    while at < len(data):
        step = rng.choice([1, 5, 40, 300, 5000])
        out.append(data[at : at + step])
        at += step
    return out


def _fed(reads: list[bytes]) -> list[Any]:
    decoder = SSEDecoder(max_event_bytes=LIMIT)
    items: list[Any] = []
    for chunk in [*reads, *[None] * 40]:  # errors held back come from later calls
        try:
            frames = decoder.close() if chunk is None else decoder.feed(chunk)
        except ProtocolError as exc:
            items += [_item(f) for f in exc.events]
            items.append("error")
            continue
        items += [_item(f) for f in frames]
    return items


def _stepped(reads: list[bytes], seed: int) -> list[Any]:
    """Each read stepped with ``resume``, but sometimes only partly (the next read, or the
    end, comes while frames still wait)."""
    rng = random.Random(seed)
    decoder = SSEDecoder(max_event_bytes=LIMIT)
    items: list[Any] = []

    def step(chunk: bytes | None) -> Callable[[], list[Any] | None]:
        if chunk is None:
            return decoder.close
        return lambda: decoder.feed_stepping(chunk)

    for chunk in [*reads, *[None] * 40]:
        call = step(chunk)
        while True:
            try:
                frames = call()
            except ProtocolError as exc:
                frames = exc.events
                items += [_item(f) for f in frames]
                items.append("error")
            else:
                if frames is None:
                    break
                items += [_item(f) for f in frames]
            if chunk is None or rng.random() < 0.2:
                break
            call = decoder.resume
    assert decoder.resume() is None  # close returned what was left
    return items


@given(st.lists(EVENT, max_size=30), st.integers(0, 2**16))
def test_stepping_gives_the_frames_feed_gives(events: list[str], seed: int) -> None:
    data = "".join(events).encode()
    reads = _reads(data, seed)
    assert _stepped(reads, seed) == _fed(reads)


def test_unarmed_steps_grow() -> None:
    """Unarmed, a step makes 1 frame, then 2, 4, ...: a read the fold cannot arm in costs a
    few calls, not one per frame."""
    decoder = SSEDecoder()
    frames = decoder.feed_stepping(b"".join(b"data: %d\n\n" % i for i in range(20)))
    sizes = [len(frames)]
    while (more := decoder.resume()) is not None:
        sizes.append(len(more))
    assert sizes == [1, 2, 4, 8, 5]


def test_a_stopped_read_goes_on_before_the_next() -> None:
    decoder = SSEDecoder()
    first = decoder.feed_stepping(b"data: 0\n\ndata: 1\n\ndata: 2\n\n")
    # The next read's frames come after the ones still waiting.
    rest = decoder.feed_stepping(b"data: 3\n\n")
    more = decoder.resume()
    assert more is not None
    tail = decoder.close()
    assert [f.data for f in [*first, *rest, *more, *tail]] == ["0", "1", "2", "3"]
