"""The non-streaming form of the same events: ``fold_json`` / ``events_json`` give what ``fold``
/ ``events`` give for the equivalent stream, and a Clouisle catch-up continues with the live
stream from its highest sequence (``fold_resumable(..., catch_up=body)``), against the loopback
server with httpx."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import streamfold as sf
from http_server import STREAMS, StreamServer, clouisle_run_events, stream_server
from streamfold._types import ProviderName

__all__ = ["stream_server"]  # the fixture, imported for the tests below

#: Reconnection delays short enough for a test.
INITIAL_DELAY, MAX_DELAY = 0.005, 0.05


def sse(items: list[dict[str, Any]]) -> bytes:
    """The stream of ``items`` as Clouisle's ``sse_events`` and Onecortex send it: each event
    named by its ``type``, the object as its data."""
    return "".join(
        f"event: {item['type']}\ndata: {json.dumps(item, ensure_ascii=False)}\n\n" for item in items
    ).encode()


def catch_up(items: list[dict[str, Any]]) -> dict[str, Any]:
    """Clouisle's answer to ``GET …/chat/runs/{run_id}/events``."""
    return {"code": 0, "data": items, "msg": "success"}


def outcome(call: Any) -> tuple[Any, ...]:
    """A comparable summary of a fold: the message, or the error's type, text and partial."""
    try:
        return ("ok", call())
    except sf.StreamfoldError as exc:
        return (type(exc).__name__, str(exc), exc.partial)


def events_outcome(events: Any) -> tuple[list[sf.Event], tuple[str, str] | None]:
    out: list[sf.Event] = []
    try:
        for event in events:
            out.append(event)
    except sf.StreamfoldError as exc:
        return out, (type(exc).__name__, str(exc))
    return out, None


RUN = clouisle_run_events()


def run_with(*changes: tuple[int, str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The run with the events at those positions replaced (type and payload)."""
    items = [dict(item) for item in RUN]
    for position, kind, payload in changes:
        items[position] = {**items[position], "type": kind, "payload": payload}
    return items


# -- Clouisle: the catch-up folds as its stream does -------------------------------------------


@pytest.mark.parametrize("strict", [False, True])
def test_a_catch_up_folds_to_the_message_of_its_stream(strict: bool) -> None:
    stream = sf.fold([sse(RUN)], "clouisle", strict=strict)
    message = sf.fold_json(catch_up(RUN), "clouisle", strict=strict)
    assert message == stream
    # What the comparison covers, spelled out: a whole run, folded as the stream folds.
    assert (message.complete, message.finish_reason, message.status) == (True, "stop", "completed")
    assert message.text == "Je regarde. À Zürich il fait 21 °C [[cite:s1]] 🌤️."
    assert message.reasoning == "Il faut la météo de Zürich ☁️."
    assert [b.kind for b in message.blocks] == ["reasoning", "text", "tool_call", "text"]
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("call-1", "weather", {"city": "Zürich"})
    ]
    assert [(r.call_id, r.output) for r in message.tool_results] == [("call-1", "21 °C")]
    assert message.usage is not None and message.usage.total_tokens == 144
    assert message.sources == [{"citation_id": "s1", "content": "Föhn."}]
    assert message.metadata == {"run_id": "run-7", "conversation_id": "c-7", "elapsed_ms": 840}
    assert message.warnings == []


@pytest.mark.parametrize(
    "form",
    [
        catch_up,
        lambda items: items,
        lambda items: json.dumps(catch_up(items)).encode(),
        lambda items: json.dumps(catch_up(items), ensure_ascii=False),
    ],
    ids=["object", "data-list", "bytes", "text"],
)
def test_the_body_may_be_parsed_or_its_bytes_or_text(form: Any) -> None:
    assert sf.fold_json(form(RUN), "clouisle") == sf.fold([sse(RUN)], "clouisle")


def test_events_json_yields_the_events_of_the_stream() -> None:
    stream = events_outcome(sf.events([sse(RUN)], "clouisle"))
    assert events_outcome(sf.events_json(catch_up(RUN), "clouisle")) == stream
    assert stream[1] is None


@pytest.mark.parametrize("cut", [0, 1, 2, 5, 9, 12, 13, 14])
def test_a_run_not_yet_ended_is_incomplete_with_the_stream_s_partial(cut: int) -> None:
    items = RUN[:cut]
    expected = outcome(lambda: sf.fold([sse(items)], "clouisle"))
    got = outcome(lambda: sf.fold_json(catch_up(items), "clouisle"))
    assert expected[0] == got[0] == "IncompleteStreamError"
    assert got[2] == expected[2]  # the partial message
    if cut:
        # Where to go on from: the highest sequence of the catch-up.
        assert f"after_sequence={cut}" in got[1]
    with pytest.raises(sf.IncompleteStreamError):
        list(sf.events_json(catch_up(items), "clouisle"))


@pytest.mark.parametrize("at", [1, 8, 10, 13])
def test_an_error_event_raises_the_stream_s_error_with_its_partial(at: int) -> None:
    items = run_with((at, "error", {"code": "model_error", "msg": "upstream timed out"}))[: at + 1]
    expected = outcome(lambda: sf.fold([sse(items)], "clouisle"))
    got = outcome(lambda: sf.fold_json(catch_up(items), "clouisle"))
    assert got[0] == expected[0] == "StreamError"
    assert got == expected
    with pytest.raises(sf.StreamError) as caught:
        sf.fold_json(catch_up(items), "clouisle")
    error = caught.value
    assert (error.code, error.message, error.event) == (
        "model_error",
        "upstream timed out",
        "error",
    )
    assert error.retryable_without_duplicate is (at == 1)


def test_an_error_answer_is_a_stream_error() -> None:
    # BusinessError -> {"code", "msg", "data"} (an unknown run, another user's run).
    body = {"code": 4000, "msg": "Run not found", "data": None}
    with pytest.raises(sf.StreamError) as caught:
        sf.fold_json(body, "clouisle")
    assert (caught.value.code, caught.value.message, caught.value.provider) == (
        4000,
        "Run not found",
        "clouisle",
    )
    assert caught.value.partial is not None and caught.value.partial.text == ""


@pytest.mark.parametrize(
    ("body", "needle", "position"),
    [
        (b"<html>502 Bad Gateway</html>", "the body is not JSON", 0),
        ("", "the body is not JSON", 0),
        ({"code": 0, "msg": "success"}, "no 'data' list of run events (its keys: code, msg)", None),
        ({"code": 0, "data": {"sequence": 1}}, "no 'data' list", None),
        ("42", "a JSON number, not the platform's", None),
        (
            [RUN[0], "run_end"],
            "a run event is a JSON string, not an object (event 1 of the body)",
            1,
        ),
        ([RUN[0], None], "a run event is a JSON null", 1),
        (
            [RUN[0], {**RUN[8], "sequence": 2, "payload": {"delta": 5}}],
            "clouisle: ",
            1,
        ),
    ],
)
def test_a_body_that_is_not_the_catch_up_is_a_protocol_error(
    body: Any, needle: str, position: int | None
) -> None:
    with pytest.raises(sf.ProtocolError) as caught:
        sf.fold_json(body, "clouisle")
    assert needle in str(caught.value)
    assert caught.value.provider == "clouisle"
    assert caught.value.position == position
    assert caught.value.partial is not None


@pytest.mark.parametrize("provider", ["openai", "anthropic", "auto"])
def test_a_provider_without_a_json_form_is_refused(provider: ProviderName) -> None:
    with pytest.raises(ValueError, match="fold_json reads provider='clouisle' or 'onecortex'"):
        sf.fold_json(catch_up(RUN), provider)


def test_a_response_object_is_refused_with_what_to_pass(stream_server: StreamServer) -> None:
    response = httpx.get(stream_server.url("/run/clouisle-run/events"))
    with pytest.raises(TypeError, match=r"httpx\.Response \(pass response\.json\(\) or"):
        sf.fold_json(response, "clouisle")
    assert sf.fold_json(response.content, "clouisle") == sf.fold([sse(RUN)], "clouisle")


def test_duplicates_in_a_catch_up_are_dropped_as_in_the_stream() -> None:
    items = [*RUN[:9], RUN[8], *RUN[9:]]  # a content_delta served twice
    assert sf.fold_json(catch_up(items), "clouisle") == sf.fold([sse(items)], "clouisle")
    assert sf.fold_json(catch_up(items), "clouisle").text == sf.fold([sse(RUN)], "clouisle").text


def test_a_lone_surrogate_reads_as_in_the_stream() -> None:
    # JSON allows "\ud800" alone; the stream's SSE data carries it escaped and folds to that
    # code point. The body's events were re-encoded as UTF-8 frames, where it cannot stand: the
    # text became three U+FFFD ('a\ufffd\ufffd\ufffdb').
    item = {**RUN[8], "payload": {"delta": "a\ud800b\U0001f600"}}
    items = [*RUN[:8], item, *RUN[9:]]
    stream = "".join(
        f"event: {i['type']}\ndata: {json.dumps(i)}\n\n" for i in items
    ).encode()  # ASCII JSON, as a server may send it
    expected = sf.fold([stream], "clouisle")
    assert "a\ud800b\U0001f600" in expected.text
    body = json.dumps(catch_up(items))
    assert sf.fold_json(body, "clouisle") == expected
    assert sf.fold_json(json.loads(body), "clouisle") == expected
    answer = '{"result": "a\\ud800b", "events": []}'
    oc_stream = b'data: {"v": 1, "type": "done", "result": "a\\ud800b"}\n\n'
    assert sf.fold_json(answer, "onecortex").text == "a\ud800b"
    assert sf.fold_json(answer, "onecortex") == sf.fold([oc_stream], "onecortex")


@pytest.mark.parametrize("provider", ["clouisle", "onecortex"])
@pytest.mark.parametrize("form", ["bytes", "parsed"])
def test_a_body_nested_too_deeply_is_a_protocol_error(provider: ProviderName, form: str) -> None:
    # The stream's parser refuses such data (ProtocolError, recursion limit exceeded); the
    # body raised RecursionError from json.loads (bytes) or json.dumps (parsed).
    depth = 100_000
    if form == "bytes":
        body: Any = b'{"result": ' + b"[" * depth + b"]" * depth + b"}"
        if provider == "clouisle":
            body = b'{"code": 0, "data": [{"p": ' + b"[" * depth + b"]" * depth + b"}]}"
    else:
        nested: Any = []
        for _ in range(depth):
            nested = [nested]
        body = {"result": nested} if provider == "onecortex" else catch_up([{"p": nested}])
    with pytest.raises(sf.ProtocolError, match="nested too deeply") as caught:
        sf.fold_json(body, provider)
    assert caught.value.provider == provider
    assert caught.value.partial is not None
    with pytest.raises(sf.ProtocolError, match="nested too deeply"):
        list(sf.events_json(body, provider))


@pytest.mark.parametrize("form", ["bytes", "text"])
def test_a_body_with_a_utf8_bom_is_read(form: str) -> None:
    # httpx's response.json() (json.loads of the bytes) skips a UTF-8 BOM; the body's bytes
    # were decoded with it kept, a ProtocolError ('Unexpected UTF-8 BOM').
    body = "\ufeff" + json.dumps(catch_up(RUN), ensure_ascii=False)
    given: Any = body.encode() if form == "bytes" else body
    assert sf.fold_json(given, "clouisle") == sf.fold([sse(RUN)], "clouisle")
    assert sf.fold_json("\ufeff" + '{"result": "hé"}', "onecortex").text == "hé"


# -- Onecortex: a JSON caller's answer ---------------------------------------------------------


def oc(event_type: str, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "type": event_type, **fields}


TOOLS = [
    oc("step_start", name="classify"),
    oc("tool_call_start", id="call_1", name="word_count"),
    oc("tool_call_args", id="call_1", delta='{"text": '),
    oc("tool_call_args", id="call_1", delta='"héllo"}'),
    oc("tool_call_end", id="call_1"),
    oc("tool_result", id="call_1", output="1"),
    oc("step_end", name="classify"),
]
TEXT = [oc("text", delta="You said: "), oc("text", delta="héllo 👋")]
RESULT = "You said: héllo 👋"
SESSION = {"sessionId": "01K", "versionNumber": 3, "durationMs": 212}


@pytest.mark.parametrize("session", [{}, SESSION], ids=["bare", "session-fields"])
def test_a_json_answer_folds_to_the_message_of_its_stream(session: dict[str, Any]) -> None:
    stream = sse([*TOOLS, *TEXT, oc("done", result=RESULT, **session)])
    answer = {"result": RESULT, "events": TOOLS, **session}
    message = sf.fold_json(answer, "onecortex", strict=True)
    assert message == sf.fold([stream], "onecortex", strict=True)
    assert (message.text, message.complete, message.finish_reason) == (RESULT, True, "stop")
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("call_1", "word_count", {"text": "héllo"})
    ]
    assert [(r.call_id, r.output, r.name) for r in message.tool_results] == [
        ("call_1", "1", "word_count")
    ]
    assert [s.name for s in message.steps] == ["classify"]
    assert [b.kind for b in message.blocks] == ["tool_call", "text"]
    assert message.metadata == session
    answer_events = events_outcome(sf.events_json(answer, "onecortex"))
    stream_events = events_outcome(sf.events([stream], "onecortex"))
    assert answer_events[1] is stream_events[1] is None
    # The same events, but for the text: whole in the answer, in two deltas on the stream.
    assert without_text(answer_events[0]) == without_text(stream_events[0])


def without_text(events: list[sf.Event]) -> list[sf.Event]:
    return [
        e
        for e in events
        if not isinstance(e, (sf.BlockStart, sf.BlockDelta, sf.BlockEnd)) or e.kind != "text"
    ]


@pytest.mark.parametrize(
    "answer",
    [{"result": RESULT}, {"result": RESULT, "events": []}, {"result": RESULT, "events": None}],
    ids=["no-events", "empty-events", "null-events"],
)
def test_a_json_answer_of_text_alone(answer: dict[str, Any]) -> None:
    stream = sse([*TEXT, oc("done", result=RESULT)])
    assert sf.fold_json(answer, "onecortex") == sf.fold([stream], "onecortex")


def test_an_error_among_the_answer_s_events_is_the_stream_s_error() -> None:
    failed = [*TOOLS[:3], oc("error", code="agent_error", message="ValueError: boom")]
    expected = outcome(lambda: sf.fold([sse(failed)], "onecortex"))
    got = outcome(lambda: sf.fold_json({"events": failed}, "onecortex"))
    assert got[0] == "StreamError"
    assert got == expected


@pytest.mark.parametrize(
    ("body", "needle", "position"),
    [
        ({"events": TOOLS}, "no 'result' and no terminal event (its keys: events)", None),
        ({"code": "agent_error", "message": "boom"}, "no 'result'", None),
        ([oc("done", result="x")], "a JSON array, not an object with 'result'", None),
        ({"result": "x", "events": {"type": "text"}}, "'events' is a JSON object", None),
        (
            {"result": "x", "events": [TOOLS[0], 7]},
            "an event is a JSON number, not an object (event 1",
            1,
        ),
        ({"result": "x", "events": [{"v": 1, "type": "tool_call_start", "id": 5}]}, "id", 0),
    ],
)
def test_a_body_that_is_not_a_json_answer_is_a_protocol_error(
    body: Any, needle: str, position: int | None
) -> None:
    with pytest.raises(sf.ProtocolError) as caught:
        sf.fold_json(body, "onecortex")
    assert needle in str(caught.value)
    assert (caught.value.provider, caught.value.position) == ("onecortex", position)
    assert caught.value.partial is not None


# -- the catch-up, then the live stream, over HTTP --------------------------------------------


def whole_run() -> sf.Message:
    return sf.fold([STREAMS["clouisle-run"][2]], "clouisle")


def get_catch_up(server: StreamServer, upto: int | None = None) -> Any:
    """The run's catch-up from the server, the run buffered up to sequence ``upto``."""
    name = "clouisle-run" if upto is None else f"clouisle-run@{upto}"
    response = httpx.get(server.url(f"/run/{name}/events", after_sequence=0))
    response.raise_for_status()
    return response.json()


def test_a_catch_up_read_over_http_folds_as_the_stream_does(stream_server: StreamServer) -> None:
    with httpx.Client() as client:
        with client.stream("GET", stream_server.url("/run/clouisle-run/stream")) as response:
            streamed = sf.fold(response, "clouisle")
        caught_up = sf.fold_json(
            client.get(stream_server.url("/run/clouisle-run/events")).json(), "clouisle"
        )
    assert caught_up == streamed == whole_run()


@pytest.mark.parametrize("replay", [0, 3])
@pytest.mark.parametrize("upto", [1, 6, 9, 14])
def test_a_catch_up_continues_with_the_live_stream_without_duplicates(
    stream_server: StreamServer, request: pytest.FixtureRequest, upto: int, replay: int
) -> None:
    rid = request.node.nodeid
    body = get_catch_up(stream_server, upto=upto)
    assert [e["sequence"] for e in body["data"]] == list(range(1, upto + 1))
    cursors: list[sf.Cursor] = []
    with httpx.Client(timeout=httpx.Timeout(10, connect=5)) as client:

        def connect(cursor: sf.Cursor) -> httpx.Response:
            cursors.append(cursor)
            url = stream_server.url("/run/clouisle-run/stream")
            params: dict[str, Any] = {"rid": rid, "replay": replay, **cursor.params}
            return client.send(client.build_request("GET", url, params=params), stream=True)

        message = sf.fold_resumable(
            connect, "clouisle", catch_up=body, initial_delay=INITIAL_DELAY, max_delay=MAX_DELAY
        )
    assert message == whole_run()
    assert not message.warnings  # nothing the catch-up gave reached the provider again
    assert [(c.attempt, c.params) for c in cursors] == [(1, {"after_sequence": upto})]
    seen = stream_server.seen(rid)
    assert [s.query["after_sequence"] for s in seen] == [str(upto)]


def test_a_catch_up_that_holds_the_whole_run_needs_no_stream(stream_server: StreamServer) -> None:
    def connect(cursor: sf.Cursor) -> Any:
        raise AssertionError(f"the live stream was requested: {cursor}")

    body = get_catch_up(stream_server)
    assert sf.fold_resumable(connect, "clouisle", catch_up=body) == whole_run()
    events = list(sf.events_resumable(connect, "clouisle", catch_up=body))
    assert events == list(sf.events([STREAMS["clouisle-run"][2]], "clouisle"))


def test_a_catch_up_continued_and_cut_again_resumes_once_more(
    stream_server: StreamServer, request: pytest.FixtureRequest
) -> None:
    rid = request.node.nodeid
    body = get_catch_up(stream_server, upto=4)
    with httpx.Client(timeout=httpx.Timeout(10, connect=5)) as client:

        def connect(cursor: sf.Cursor) -> httpx.Response:
            url = stream_server.url("/run/clouisle-run/stream")
            params = {"rid": rid, "cut": 700, "replay": 1, **cursor.params}
            return client.send(client.build_request("GET", url, params=params), stream=True)

        assert (
            sf.fold_resumable(
                connect, "clouisle", catch_up=body, initial_delay=INITIAL_DELAY, max_delay=MAX_DELAY
            )
            == whole_run()
        )
    after = [int(s.query["after_sequence"]) for s in stream_server.seen(rid)]
    assert len(after) == 2 and after[0] == 4 and after[1] > 4


@pytest.mark.anyio
async def test_afold_resumable_continues_a_catch_up(
    stream_server: StreamServer, request: pytest.FixtureRequest
) -> None:
    rid = request.node.nodeid
    body = get_catch_up(stream_server, upto=7)
    async with httpx.AsyncClient(timeout=httpx.Timeout(10, connect=5)) as client:

        async def connect(cursor: sf.Cursor) -> httpx.Response:
            url = stream_server.url("/run/clouisle-run/stream")
            params = {"rid": rid, **cursor.params}
            return await client.send(client.build_request("GET", url, params=params), stream=True)

        message = await sf.afold_resumable(
            connect, "clouisle", catch_up=body, initial_delay=INITIAL_DELAY, max_delay=MAX_DELAY
        )
    assert message == whole_run()
    assert [s.query["after_sequence"] for s in stream_server.seen(rid)] == ["7"]


def test_an_error_in_the_catch_up_ends_there_with_its_partial() -> None:
    items = run_with((9, "error", {"code": "model_error", "msg": "upstream timed out"}))[:10]

    def connect(cursor: sf.Cursor) -> Any:
        raise AssertionError("the live stream was requested after an error")

    with pytest.raises(sf.StreamError) as caught:
        sf.fold_resumable(connect, "clouisle", catch_up=catch_up(items))
    expected = outcome(lambda: sf.fold([sse(items)], "clouisle"))
    assert (type(caught.value).__name__, str(caught.value), caught.value.partial) == expected


def test_a_catch_up_without_sequences_is_not_continued() -> None:
    items = [{k: v for k, v in item.items() if k != "sequence"} for item in RUN[:5]]

    def connect(cursor: sf.Cursor) -> Any:
        raise AssertionError("a stream that cannot resume was requested")

    with pytest.raises(sf.IncompleteStreamError, match="carry no sequence number") as caught:
        sf.fold_resumable(connect, "clouisle", catch_up=catch_up(items))
    # Retrieval, then a reasoning block opened: what the five events gave.
    assert caught.value.partial is not None
    assert caught.value.partial.sources == [{"citation_id": "s1", "content": "Föhn."}]
    assert [b.kind for b in caught.value.partial.blocks] == ["reasoning"]


def test_an_empty_catch_up_continues_from_the_start(
    stream_server: StreamServer, request: pytest.FixtureRequest
) -> None:
    # A run queued and not yet started has no event to catch up on.
    rid = request.node.nodeid
    with httpx.Client(timeout=httpx.Timeout(10, connect=5)) as client:

        def connect(cursor: sf.Cursor) -> httpx.Response:
            url = stream_server.url("/run/clouisle-run/stream")
            params = {"rid": rid, **cursor.params}
            return client.send(client.build_request("GET", url, params=params), stream=True)

        message = sf.fold_resumable(
            connect,
            "clouisle",
            catch_up=catch_up([]),
            initial_delay=INITIAL_DELAY,
            max_delay=MAX_DELAY,
        )
    assert message == whole_run()
    assert "after_sequence" not in stream_server.seen(rid)[0].query


def test_a_silent_live_stream_after_a_catch_up_says_where_the_run_stood(
    stream_server: StreamServer, request: pytest.FixtureRequest
) -> None:
    rid = request.node.nodeid
    body = get_catch_up(stream_server, upto=6)
    with httpx.Client(timeout=httpx.Timeout(10, connect=5)) as client:

        def connect(cursor: sf.Cursor) -> httpx.Response:
            url = stream_server.url("/run/clouisle-run/stream")
            params = {"rid": rid, "stall": 5, **cursor.params}
            return client.send(client.build_request("GET", url, params=params), stream=True)

        with pytest.raises(sf.IncompleteStreamError) as caught:
            sf.fold_resumable(
                connect, "clouisle", catch_up=body, max_reconnects=0, idle_timeout=0.2
            )
    silence = caught.value.__cause__
    assert isinstance(silence, sf.IdleTimeoutError)
    # The catch-up's 6 events, each counted once; the live stream sent nothing.
    assert (silence.frames, silence.position, silence.connection) == (6, 0, 2)
    assert caught.value.partial is not None
    assert caught.value.partial.reasoning == "Il faut la météo "
