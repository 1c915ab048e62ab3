"""The rules of resumable streams, on plain byte iterables (no HTTP): the cursor, replays
dropped exactly, waits, budgets, what is never retried, and idle timeouts (sync and async)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

import streamfold as sf
from streamfold._resume import cursor as resume_cursor
from streamfold._resume import drivers as resumable
from streamfold._resume.cursor import _id_key, _make_cursor


def oc(kind: str, event_id: str | None = None, **payload: Any) -> bytes:
    """One Onecortex SSE event, with an ``id:`` line when given."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    data = json.dumps({"v": 1, "type": kind, **payload}, ensure_ascii=False)
    return f"{head}event: {kind}\ndata: {data}\n\n".encode()


TEXT = ["Un ", "deux ", "trois ", "quatre ", "cinq"]


def onecortex_events(ids: Sequence[str | None]) -> list[bytes]:
    """Five text events (ids as given), then ``done``."""
    events = [oc("text", i, delta=t) for i, t in zip(ids, TEXT, strict=True)]
    events.append(oc("done", None, result="".join(TEXT)))
    return events


def whole(events: list[bytes]) -> sf.Message:
    """The fold of the events sent in one piece over one connection."""
    return sf.fold([b"".join(events)], provider="onecortex")


class Server:
    """Connections scripted per attempt: the byte chunks each one delivers, then how it ends."""

    def __init__(self, script: Sequence[Sequence[bytes | BaseException]]) -> None:
        self.script = script
        self.cursors: list[sf.Cursor] = []

    def connect(self, cursor: sf.Cursor) -> Iterator[bytes]:
        self.cursors.append(cursor)
        return self._serve(self.script[cursor.attempt])

    @staticmethod
    def _serve(items: Sequence[bytes | BaseException]) -> Iterator[bytes]:
        for item in items:
            if isinstance(item, BaseException):
                raise item
            yield item

    async def aconnect(self, cursor: sf.Cursor) -> AsyncIterator[bytes]:
        self.cursors.append(cursor)
        for item in self.script[cursor.attempt]:
            if isinstance(item, BaseException):
                raise item
            await anyio.sleep(0)
            yield item


def fold(server: Server, **options: Any) -> sf.Message:
    options.setdefault("initial_delay", 0.001)
    return sf.fold_resumable(server.connect, provider="onecortex", **options)


DROP = ConnectionResetError("connection reset by peer")


# -- the cursor --------------------------------------------------------------------------------


def test_cursor_headers_and_params() -> None:
    assert _make_cursor(0, "", None, "clouisle") == sf.Cursor(0, "", None, "clouisle", {}, {})
    cursor = _make_cursor(2, "17", 41, "clouisle")
    assert cursor.headers == {"Last-Event-ID": "17"}
    assert cursor.params == {"after_sequence": 41}
    assert cursor.can_resume
    assert _make_cursor(1, "", 9, "openai-responses").params == {"starting_after": 9}
    assert _make_cursor(1, "a", 9, "anthropic").params == {}
    assert not _make_cursor(0, "", None, "openai").can_resume


def test_id_key() -> None:
    assert _id_key("17") == (("", ""), (17,))
    assert _id_key("evt_0042") == (("evt_", ""), (42,))
    assert _id_key("1700000000000-1") == (("", "-", ""), (1700000000000, 1))
    assert _id_key("abc") is None
    assert _id_key("") is None
    assert _id_key("x" + "7" * 31) is None  # a hash, not a counter
    assert _id_key("x²") is None  # only ASCII digits count (int("²") fails)


def _ordered(a: str, b: str) -> bool | None:
    """a < b by their keys; None when the ids do not compare."""
    ka, kb = _id_key(a), _id_key(b)
    if ka is None or kb is None or ka[0] != kb[0]:
        return None
    return ka[1] < kb[1]


def test_ids_of_one_shape_compare_in_natural_order() -> None:
    assert _ordered("evt_17", "evt_18") is True
    assert _ordered("evt_9", "evt_10") is True
    assert _ordered("1700000000000-0", "1700000000000-1") is True
    assert _ordered("1700000000000-1", "1700000000001-0") is True
    assert _ordered("1700000000001-0", "1700000000000-2") is False
    # Different shapes never compare: they fall back to the ids already seen.
    assert _ordered("evt_9", "run_10") is None
    assert _ordered("17", "1700000000000-0") is None
    assert _ordered("01ARZ3NDEKTSV4RRFFQ69G5FAV", "01ARZ3NDEKTSV4RRFFQ69G5FB0") is None
    assert (
        _ordered("550e8400-e29b-41d4-a716-446655440000", "6ba7b810-9dad-11d1-80b4-00c04fd430c8")
        is None
    )


#: Text between the numbers of an id: anything but ASCII digits (Unicode digits included).
_GLUE = st.text(st.characters(codec="utf-8", exclude_characters="0123456789\r\n"), max_size=4)


@st.composite
def _shapes(draw: st.DrawFn) -> tuple[list[str], int]:
    """An id's shape: the text around k numbers (never empty between two), and a zero pad."""
    k = draw(st.integers(1, 4))
    inner = [draw(_GLUE.filter(bool)) for _ in range(k - 1)]
    return [draw(_GLUE), *inner, draw(_GLUE)], draw(st.integers(0, 3))


def _render(shape: tuple[list[str], int], numbers: tuple[int, ...]) -> str:
    glue, pad = shape
    out = [glue[0]]
    for number, after in zip(numbers, glue[1:], strict=True):
        out += [str(number).zfill(pad), after]
    return "".join(out)


@given(data=st.data(), shape=_shapes())
def test_ids_of_one_shape_are_ordered_like_their_numbers(
    data: st.DataObject, shape: tuple[list[str], int]
) -> None:
    k = len(shape[0]) - 1
    numbers = st.tuples(*[st.integers(0, 10**15)] * k)
    a, b = data.draw(numbers), data.draw(numbers)
    id_a, id_b = _render(shape, a), _render(shape, b)
    key_a, key_b = _id_key(id_a), _id_key(id_b)
    assert key_a is not None and key_b is not None
    assert key_a[0] == key_b[0]
    assert key_a[1] == a and key_b[1] == b
    assert (key_a[1] < key_b[1]) == (a < b)


@given(one=_shapes(), other=_shapes(), a=st.lists(st.integers(0, 10**6), min_size=4, max_size=4))
def test_ids_of_different_shapes_never_compare(
    one: tuple[list[str], int], other: tuple[list[str], int], a: list[int]
) -> None:
    id_one = _render(one, tuple(a[: len(one[0]) - 1]))
    id_other = _render(other, tuple(a[: len(other[0]) - 1]))
    key_one, key_other = _id_key(id_one), _id_key(id_other)
    assert key_one is not None and key_other is not None
    assert (key_one[0] == key_other[0]) == (one[0] == other[0])


# -- replays dropped exactly -------------------------------------------------------------------


def test_numeric_ids_replayed_events_are_dropped() -> None:
    events = onecortex_events(["1", "2", "3", "4", "5"])
    server = Server([[events[0], events[1], events[2][:9], DROP], events[1:]])
    message = fold(server)
    assert message == whole(events)
    assert not message.warnings
    assert server.cursors[1].headers == {"Last-Event-ID": "2"}


def test_prefixed_ids_compare_by_their_number() -> None:
    ids = ["evt_8", "evt_9", "evt_10", "evt_11", "evt_12"]
    events = onecortex_events(ids)
    # The server replays from evt_9, i.e. one event more than needed.
    server = Server([[*events[:3], DROP], events[1:]])
    assert fold(server) == whole(events)
    assert server.cursors[1].last_event_id == "evt_10"


def test_opaque_ids_replays_are_recognised() -> None:
    ids = ["a9f", "x1c", "b07", "q2z", "k5e"]
    events = onecortex_events(ids)
    server = Server([[*events[:3], DROP], events[0:]])
    message = fold(server)
    assert message == whole(events)
    assert not message.warnings


REDIS_IDS = [
    "1700000000000-0",
    "1700000000000-1",
    "1700000000000-2",
    "1700000000001-0",
    "1700000000001-1",
]


@pytest.mark.parametrize("replayed_from", [0, 1, 2, 3])
def test_redis_stream_ids_replays_are_dropped(replayed_from: int) -> None:
    # ``<ms>-<seq>`` ids: the replay straddles a millisecond (cursor 1700000000001-0).
    events = onecortex_events(REDIS_IDS)
    server = Server([[*events[:4], DROP], events[replayed_from:]])
    message = fold(server)
    assert message == whole(events)
    assert not message.warnings
    assert server.cursors[1].last_event_id == "1700000000001-0"


def test_redis_stream_ids_end_to_end_chat_completions() -> None:
    # The QA reproduction: OpenAI chunks, Redis ids, the server replays its whole buffer.
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    words = [f"w{i} " for i in range(9)]
    chunks: list[dict[str, Any]] = [
        {**base, "choices": [{"index": 0, "delta": {"content": w}, "finish_reason": None}]}
        for w in words
    ]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    events = [
        f"id: {1700000000000 + i // 3}-{i % 3}\ndata: {json.dumps(c)}\n\n".encode()
        for i, c in enumerate(chunks)
    ]
    events.append(b"data: [DONE]\n\n")

    def connect(cursor: sf.Cursor) -> list[bytes]:
        return [b"".join(events[:5] if cursor.attempt == 0 else events)]

    message = sf.fold_resumable(connect, provider="openai", initial_delay=0)
    assert message.text == "".join(words)
    assert message.complete


def test_seen_ids_of_another_shape_are_dropped() -> None:
    # The cursor ("7") does not compare with the earlier ids: they are recognised as seen.
    events = onecortex_events(["run_1", "1700000000000-0", "evt_9", "7", "k5e"])
    server = Server([[*events[:4], DROP], events])
    message = fold(server)
    assert message == whole(events)
    assert not message.warnings


def test_new_ids_of_another_shape_are_kept() -> None:
    events = onecortex_events(["1", "2", "3", "step-4", "step-5"])
    server = Server([[*events[:3], DROP], events[2:]])
    assert fold(server) == whole(events)
    events = onecortex_events(["evt_1", "evt_2", "evt_3", "4", "x"])
    server = Server([[*events[:3], DROP], events[3:]])
    assert fold(server) == whole(events)


def test_ids_no_longer_remembered_are_dropped_by_their_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Only the last two ids are remembered: the older replays sort below the cursor.
    monkeypatch.setattr(resume_cursor, "_IDS_KEPT", 2)
    events = onecortex_events(["evt_1", "evt_2", "evt_3", "evt_4", "evt_5"])
    server = Server([[*events[:4], DROP], events])
    assert fold(server) == whole(events)


def test_frames_sharing_an_id_are_counted() -> None:
    # Only every other event has its own id: the others carry the previous one.
    ids = ["1", None, "3", None, "5"]
    events = onecortex_events(ids)
    # Cut after events 1 and 2 (both "1"); the server replays from the start.
    server = Server([[events[0], events[1], DROP], events])
    assert fold(server) == whole(events)
    # Cut after event 1 only; the server replays both frames of id 1.
    server = Server([[events[0], DROP], events])
    assert fold(server) == whole(events)
    # Cut after event 1; the server resumes correctly with event 2 (no id of its own).
    server = Server([[events[0], DROP], events[1:]])
    assert fold(server).text == "".join(TEXT)


def test_an_id_only_block_moves_the_cursor() -> None:
    events = onecortex_events([None] * 5)
    server = Server([[events[0], b"id: 7\n\n", DROP], events[1:]])
    assert fold(server).text == "".join(TEXT)
    assert server.cursors[1].last_event_id == "7"


def test_a_frame_cut_in_half_is_discarded_and_delivered_again() -> None:
    events = onecortex_events(["1", "2", "3", "4", "5"])
    half = events[2][: len(events[2]) // 2]
    server = Server([[events[0] + events[1] + half, DROP], events[2:]])
    assert fold(server) == whole(events)


def test_clouisle_sequences_replayed_are_dropped_before_the_provider() -> None:
    def ev(kind: str, seq: int, **payload: Any) -> bytes:
        body = json.dumps({"type": kind, "sequence": seq, "run_id": "r", **payload})
        return f"event: {kind}\ndata: {body}\n\n".encode()

    events = [
        ev("run_start", 1, status="running"),
        ev("content_delta", 2, delta="Grüezi "),
        ev("content_delta", 3, delta="mitenand"),
        ev("message_end", 4, status="completed"),
        ev("run_end", 5, status="completed"),
    ]
    server = Server([[*events[:3], DROP], events[1:]])
    message = sf.fold_resumable(server.connect, provider="clouisle", initial_delay=0.001)
    assert message == sf.fold([b"".join(events)], provider="clouisle")
    assert not message.warnings  # the provider would flag a replayed sequence
    assert server.cursors[1].params == {"after_sequence": 3}


def test_a_clouisle_workflow_stream_resumes_with_from_sequence() -> None:
    # "use from_sequence to resume reading": a workflow stream's reconnection asks with it (the
    # server replays buffered events only for from_sequence; after_sequence would be ignored
    # and the events sent during the drop lost).
    def ev(kind: str, seq: int, node_id: str | None = None, **data: Any) -> bytes:
        body = json.dumps(
            {"event": kind, "data": data, "node_id": node_id, "timestamp": "t", "sequence": seq}
        )
        return f"event: {kind}\ndata: {body}\n\n".encode()

    events = [
        ev("workflow_start", 1, workflow_id="wf", workflow_name="W", inputs={}),
        ev("node_start", 2, "answer", node_type="answer", node_label="Answer"),
        ev("token", 3, "answer", token="Grüezi "),
        ev("token", 4, "answer", token="mitenand"),
        ev("node_complete", 5, "answer", outputs={}, duration_ms=1),
        ev("workflow_complete", 6, outputs={}, duration_ms=2),
    ]
    server = Server([[*events[:3], DROP], events[3:]])
    message = sf.fold_resumable(server.connect, provider="clouisle", initial_delay=0.001)
    assert message == sf.fold([b"".join(events)], provider="clouisle")
    assert server.cursors[1].params == {"from_sequence": 3}
    server = Server([[*events[:3], DROP], events[3:]])
    auto = sf.fold_resumable(server.connect, provider="auto", initial_delay=0.001)
    assert (auto.text, server.cursors[1].params) == ("Grüezi mitenand", {"from_sequence": 3})


def test_json_lines_last_line_without_newline_is_a_whole_frame() -> None:
    lines = [
        {"event_type": "stream-start", "generation_id": "g", "is_finished": False},
        {"event_type": "text-generation", "text": "Hallo", "is_finished": False},
        {
            "event_type": "stream-end",
            "finish_reason": "COMPLETE",
            "is_finished": True,
            "response": {"text": "Hallo", "generation_id": "g"},
        },
    ]
    body = "\n".join(json.dumps(line) for line in lines).encode()  # no final newline
    message = sf.fold_resumable(lambda cursor: [body], provider="cohere-v1")
    assert message.complete
    assert message.text == "Hallo"


# -- what is never retried ---------------------------------------------------------------------


def test_a_stream_without_cursor_is_not_requested_again() -> None:
    events = onecortex_events([None] * 5)
    server = Server([[events[0], events[1], DROP]])
    with pytest.raises(sf.IncompleteStreamError) as info:
        fold(server)
    assert info.value.__cause__ is DROP
    assert info.value.partial is not None
    assert info.value.partial.text == "Un deux "
    assert len(server.cursors) == 1


def test_the_first_connection_failing_is_raised_as_it_is() -> None:
    server = Server([[ConnectionRefusedError("refused")]])
    with pytest.raises(ConnectionRefusedError):
        fold(server)
    assert len(server.cursors) == 1


def test_a_provider_error_in_the_stream_is_never_retried() -> None:
    events = [oc("text", "1", delta="Un "), oc("error", "2", code="agent_error", message="boom")]
    server = Server([events])
    with pytest.raises(sf.StreamError) as info:
        fold(server)
    assert info.value.code == "agent_error"
    assert info.value.partial is not None
    assert info.value.partial.text == "Un "
    assert len(server.cursors) == 1


def test_a_program_error_is_not_a_dropped_connection() -> None:
    events = onecortex_events(["1", "2", "3", "4", "5"])
    server = Server([[events[0], ValueError("a bug")]])
    with pytest.raises(ValueError, match="a bug"):
        fold(server)
    assert len(server.cursors) == 1


def test_after_the_terminal_event_a_failure_is_ignored() -> None:
    events = onecortex_events(["1", "2", "3", "4", "5"])
    server = Server([[*events, DROP]])
    assert fold(server) == whole(events)
    assert len(server.cursors) == 1


def test_max_reconnects_zero_never_reconnects() -> None:
    events = onecortex_events(["1", "2", "3", "4", "5"])
    server = Server([[events[0], DROP], events[1:]])
    with pytest.raises(sf.IncompleteStreamError, match="max_reconnects=0"):
        fold(server, max_reconnects=0)
    assert len(server.cursors) == 1


def test_a_retryable_status_on_reconnection_is_retried() -> None:
    events = onecortex_events(["1", "2", "3", "4", "5"])
    busy = sf.StreamError("busy", status=503, retry_after=0.0)
    server = Server([[events[0], DROP], [busy], events[1:]])
    assert fold(server).text == "".join(TEXT)
    assert [c.attempt for c in server.cursors] == [0, 1, 2]


@pytest.mark.parametrize("status", [409, 501, 529])
def test_a_reconnection_retries_what_sf_stream_retries(status: int) -> None:
    # One rule for every retry (``retry_kind``): Anthropic's 529 "overloaded", a conflict and
    # any other 5xx are worth another request on a reconnection as on a first request.
    events = onecortex_events(["1", "2", "3", "4", "5"])
    refused = sf.StreamError("later", status=status, retry_after=0.0)
    server = Server([[events[0], DROP], [refused], events[1:]])
    assert fold(server).text == "".join(TEXT)
    assert [c.attempt for c in server.cursors] == [0, 1, 2]


def test_a_final_status_on_reconnection_ends_incomplete() -> None:
    events = onecortex_events(["1", "2", "3", "4", "5"])
    gone = sf.StreamError("not found", status=404)
    server = Server([[events[0], DROP], [gone]])
    with pytest.raises(sf.IncompleteStreamError) as info:
        fold(server)
    assert info.value.__cause__ is gone


# -- waits and budgets -------------------------------------------------------------------------


def record(delays: list[float]) -> Callable[[sf.Cursor, float, BaseException | None], None]:
    def on_reconnect(cursor: sf.Cursor, delay: float, error: BaseException | None) -> None:
        delays.append(delay)

    return on_reconnect


def test_waits_honour_retry_double_and_are_capped() -> None:
    events = onecortex_events(["1", "2", "3", "4", "5"])
    first: list[bytes | BaseException] = [b"retry: 10\n\n", events[0], DROP]
    server = Server([first, [DROP], [DROP], [DROP], [DROP], events[1:]])
    delays: list[float] = []
    message = fold(server, max_delay=0.05, on_reconnect=record(delays))
    assert message.text == "".join(TEXT)
    bases = [0.01, 0.02, 0.04, 0.05, 0.05]
    assert len(delays) == len(bases)
    for delay, base in zip(delays, bases, strict=True):
        assert base <= delay <= min(0.05, base * 1.25) + 1e-9


def test_retry_after_on_reconnection_is_honoured() -> None:
    events = onecortex_events(["1", "2", "3", "4", "5"])
    busy = sf.StreamError("busy", status=429, retry_after=0.03)
    server = Server([[events[0], DROP], [busy], events[1:]])
    delays: list[float] = []
    fold(server, initial_delay=0.001, on_reconnect=record(delays))
    assert delays[1] >= 0.03


def test_progress_resets_the_budget_and_no_progress_exhausts_it() -> None:
    events = onecortex_events(["1", "2", "3", "4", "5"])
    # One new event per connection: five reconnections with max_reconnects=1 still finish.
    script: list[list[bytes | BaseException]] = [[events[i], DROP] for i in range(5)]
    script.append([events[5]])
    # Each reconnection replays everything already seen first.
    server = Server([[*events[:i], *conn] for i, conn in enumerate(script)])
    assert fold(server, max_reconnects=1).text == "".join(TEXT)
    # Replays only: no progress after the first connection.
    replay_only: list[bytes | BaseException] = [events[0], DROP]
    server = Server([replay_only] * 4)
    with pytest.raises(sf.IncompleteStreamError, match="gave up after 2 reconnections"):
        fold(server, max_reconnects=2)
    assert len(server.cursors) == 3


def test_on_reconnect_sees_the_next_cursor() -> None:
    events = onecortex_events(["1", "2", "3", "4", "5"])
    server = Server([[events[0], events[1], DROP], events[2:]])
    seen: list[tuple[sf.Cursor, BaseException | None]] = []

    def on_reconnect(cursor: sf.Cursor, delay: float, error: BaseException | None) -> None:
        seen.append((cursor, error))

    fold(server, on_reconnect=on_reconnect)
    assert len(seen) == 1
    cursor, error = seen[0]
    assert cursor.attempt == 1
    assert cursor.last_event_id == "2"
    assert error is DROP


# -- idle timeouts -----------------------------------------------------------------------------


def test_idle_timeout_on_a_plain_iterable_uses_a_reader_thread() -> None:
    events = onecortex_events(["1", "2", "3", "4", "5"])
    release = threading.Event()

    def stalled() -> Iterator[bytes]:
        yield events[0]
        release.wait(5)  # silent until released, long after the idle timeout
        yield events[1]

    attempts: list[sf.Cursor] = []

    def connect(cursor: sf.Cursor) -> Iterator[bytes]:
        attempts.append(cursor)
        return stalled() if cursor.attempt == 0 else iter(events[1:])

    started = time.monotonic()
    message = sf.fold_resumable(
        connect, provider="onecortex", idle_timeout=0.1, initial_delay=0.001
    )
    release.set()
    assert time.monotonic() - started < 2
    assert message.text == "".join(TEXT)
    assert len(attempts) == 2


def test_idle_timeout_counts_comments_as_life() -> None:
    events = onecortex_events(["1", "2", "3", "4", "5"])

    def slow() -> Iterator[bytes]:
        for event in events:
            for _ in range(2):
                time.sleep(0.03)
                yield b": ping\n\n"
            yield event

    message = sf.fold_resumable(lambda cursor: slow(), provider="onecortex", idle_timeout=0.1)
    assert message.text == "".join(TEXT)


def test_events_resumable_closes_the_connection_when_left_early() -> None:
    events = onecortex_events(["1", "2", "3", "4", "5"])
    closed: list[bool] = []

    def body() -> Iterator[bytes]:
        try:
            yield from events
        finally:
            closed.append(True)

    stream = sf.events_resumable(lambda cursor: body(), provider="onecortex")
    for event in stream:
        if isinstance(event, sf.BlockDelta):
            break
    stream.close()
    assert closed == [True]


# -- async, under asyncio and trio -------------------------------------------------------------


@pytest.mark.anyio
async def test_async_resume_drops_replays(anyio_backend: str) -> None:
    events = onecortex_events(["1", "2", "3", "4", "5"])
    server = Server([[events[0], events[1][:20], DROP], events])
    message = await sf.afold_resumable(server.aconnect, provider="onecortex", initial_delay=0.001)
    assert message.text == "".join(TEXT)
    assert not message.warnings
    assert server.cursors[1].headers == {"Last-Event-ID": "1"}


@pytest.mark.anyio
async def test_async_idle_timeout_uses_the_running_library(anyio_backend: str) -> None:
    events = onecortex_events(["1", "2", "3", "4", "5"])

    async def connect(cursor: sf.Cursor) -> AsyncIterator[bytes]:
        yield events[0] if cursor.attempt == 0 else b"".join(events[1:])
        if cursor.attempt == 0:
            await anyio.sleep(5)

    started = anyio.current_time()
    message = await sf.afold_resumable(
        connect, provider="onecortex", idle_timeout=0.1, initial_delay=0.001
    )
    assert anyio.current_time() - started < 2
    assert message.text == "".join(TEXT)


@pytest.mark.anyio
async def test_async_connect_may_be_a_coroutine_and_on_reconnect_async(
    anyio_backend: str,
) -> None:
    events = onecortex_events(["1", "2", "3", "4", "5"])
    server = Server([[events[0], DROP], events[1:]])
    calls: list[int] = []

    async def connect(cursor: sf.Cursor) -> AsyncIterator[bytes]:
        await anyio.sleep(0)
        return server.aconnect(cursor)

    async def on_reconnect(cursor: sf.Cursor, delay: float, error: BaseException | None) -> None:
        await anyio.sleep(0)
        calls.append(cursor.attempt)

    message = await sf.afold_resumable(
        connect, provider="onecortex", initial_delay=0.001, on_reconnect=on_reconnect
    )
    assert message.text == "".join(TEXT)
    assert calls == [1]


@pytest.mark.anyio
async def test_async_not_resumable_raises_with_partial(anyio_backend: str) -> None:
    events = onecortex_events([None] * 5)
    server = Server([[events[0], DROP]])
    with pytest.raises(sf.IncompleteStreamError) as info:
        await sf.afold_resumable(server.aconnect, provider="onecortex")
    assert info.value.partial is not None
    assert info.value.partial.text == "Un "
    assert len(server.cursors) == 1


def test_auto_detects_once_and_resumes_as_the_detected_provider() -> None:
    events = onecortex_events(["1", "2", "3", "4", "5"])
    server = Server([[events[0], events[1], DROP], events[1:]])
    message = sf.fold_resumable(server.connect, provider="auto", initial_delay=0.001)
    assert message == sf.fold([b"".join(events)], provider="auto")
    assert message.provider == "onecortex"
    assert [c.provider for c in server.cursors] == ["auto", "onecortex"]
    assert server.cursors[1].headers == {"Last-Event-ID": "2"}


# -- the asyncio timeout of Python 3.10 ---------------------------------------------------------


def test_the_python_3_10_timeout_gives_up_in_its_own_task() -> None:
    """``_within`` without ``asyncio.timeout`` (3.10) cancels the waiting task itself, not a
    task of wait_for's (where aiohttp's response context would be entered and broken): the
    awaitable runs in the caller's task, silence is ``IdleTimeoutError``, the task goes on
    uncancelled afterwards, and another cancellation stays a cancellation."""
    import asyncio

    async def which_task() -> Any:
        await asyncio.sleep(0)
        return asyncio.current_task()

    async def main() -> None:
        me = asyncio.current_task()
        assert await resumable._within_by_cancel(5, which_task()) is me
        with pytest.raises(resumable.IdleTimeoutError, match=r"no response for 0\.05 s"):
            await resumable._within_by_cancel(0.05, asyncio.sleep(10))
        await asyncio.sleep(0.1)  # not cancelled by a timer left behind
        waiting = asyncio.ensure_future(resumable._within_by_cancel(5, asyncio.sleep(10)))
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    asyncio.run(main())


def test_a_thousand_failures_in_a_row_give_up_without_overflow() -> None:
    """The backoff doubled with every failure: at the 1,025th in a row (``max_reconnects`` set
    high to keep a run's stream for hours) ``2 ** 1024`` met a float and the fold raised
    OverflowError instead of reconnecting."""
    first = onecortex_events(["1", "2", "3", "4", "5"])[0]

    def connect(cursor: sf.Cursor) -> Iterator[bytes]:
        if cursor.attempt == 0:
            yield first
        raise ConnectionResetError("reset")

    with pytest.raises(sf.ConnectionLostError, match="gave up after 1100 reconnections"):
        sf.fold_resumable(connect, provider="onecortex", max_reconnects=1100, initial_delay=0.0)
