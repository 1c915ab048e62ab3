"""A small real HTTP server for the transport tests and the load benchmark.

``start_server()`` runs an ``aiohttp.web`` application on 127.0.0.1 (a free port) in a
background thread with its own event loop and returns a :class:`StreamServer` whose
``base_url`` the clients use. ``stream_server`` is the pytest fixture (one server per session).

Endpoints (GET or POST):

``/capture/{folder}/{name}``  a capture of ``../shared/captures`` (its recorded content type)
``/example/{file}``           a stream of the bundled ``examples/`` (``anthropic_thinking.sse``;
                              ``.jsonl`` as JSON lines)
``/stream/{name}``            a hand-written stream of :data:`STREAMS` (Onecortex with SSE ids,
                              Clouisle with run sequences, OpenAI Responses with
                              ``sequence_number``, Cohere v1 JSON lines)
``/run/{name}/events``        a Clouisle run's JSON catch-up (``clouisle-run``; ``…@M``: a
                              run still going, buffered up to sequence M), ``after_sequence=``
``/run/{name}/stream``        that run's stream (``/stream/{name}``, resumable the same way)
``/generate``                 a generated stream: ``provider=openai|anthropic``, ``n=`` events
                              (text deltas), ``delta=`` the text of each
``/html``                     a 200 HTML page (a proxy's login page, say)
``/redirect``                 a 307 to ``to=`` (``status=``: another redirect status)
``/ids``                      an Onecortex stream of text events ``t0 ``, ``t1 ``, … whose SSE
                              ids are ``spec=``: one per event, ``-`` for none (``spec=1,-,3``:
                              ``t1`` has no ``id:`` line), then ``done`` (id ``N+1``)

Faults, as query parameters, applied to the connections whose number (0 for the first request
of a ``rid``, 1 for the next, …) is listed in ``on=`` (default ``0``; ``all`` for every one;
``<fault>_on=`` for one fault, e.g. ``cut=400&status=503&status_on=1``):

``cut=N``           close the connection after N body bytes (``cut=utf8``: inside the first
                    multi-byte UTF-8 character), without ending the chunked body
                    (``midchunk=1``: inside one chunk declared for the whole body)
``end=N``           end the body cleanly after N bytes (a clean EOF before the terminal event)
``stall=S``         stop sending for S seconds after ``stall_at=N`` bytes (default 0)
``head_stall=S``    send nothing, not even the status line, for S seconds
``drip=1``          send one byte per write
``status=429``      answer with that status and a JSON error body (``retry_after=`` adds the
                    header, ``retry_after_ms=`` the ``retry-after-ms`` one,
                    ``should_retry=true|false`` the SDKs' ``x-should-retry``, ``pad=N`` pads
                    the body with N bytes, ``cut=N`` closes the connection after N bytes of it,
                    ``stall=S`` stops for S seconds after ``stall_at=N`` bytes of it)
``ctype=T``         answer with content type T
``gzip=1``          ``Content-Encoding: gzip``, flushed per event so it still streams
                    (``gzip=bad``: bytes that are not gzip follow the first event)
``br=1``            ``Content-Encoding: br`` (brotli), flushed per event likewise
``event_delay=S``   sleep S seconds between events (slow streams, leak tests)
``chunk=N``         write N bytes at a time instead of one write per event
``length=1``        a body framed by ``Content-Length`` rather than chunked (no gzip)
``ids=redis``       SSE ids in the style of Redis stream entries (every connection): ``id: 1``
                    becomes ``1700000000000-0``, then ``…000-1``, ``…000-2``, ``…001-0``, …
                    (``ids=unicode``: ``évt-1``, ``évt-2``, …)

Resumption: ``Last-Event-ID`` (by SSE id), ``after_sequence`` (Clouisle) and ``starting_after``
(OpenAI Responses) are honoured, with ``replay=K`` events before the cursor sent again;
``resume=0`` ignores them (the whole stream again); ``resume=next`` sends on from the first
event after the cursor that has an ``id:`` line of its own (events without one skipped).
``cuts=N0,N1,…``: close connection ``i`` after ``Ni`` body bytes (``-``: not cut), as ``cut``.
``rid=`` names a logical stream: the server counts its connections and records when a client
went away (:meth:`StreamServer.wait_disconnect`).

For a load run (``benches/``)::

    server = start_server()
    try:
        url = server.url("/generate", provider="openai", n=1000)   # 1,000 text deltas
        ...  # open many streams on url
    finally:
        server.stop()

Requests are recorded in ``server.requests`` (``start_server(record=False)``: only those
with a ``rid``), so a long load run does not grow the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import re
import socket
import threading
import zlib
from collections.abc import AsyncGenerator, AsyncIterable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
from aiohttp import web
from multidict import CIMultiDict

from streamfold._types import ProviderName

#: ../shared/captures beside the project root, when present (never copied into the project).
CAPTURES = Path(__file__).resolve().parents[1].parent / "shared" / "captures"
#: The example streams shipped in the package (``streamfold demo``).
EXAMPLES = Path(__file__).resolve().parents[1] / "python" / "streamfold" / "examples"

SSE = "text/event-stream"
NDJSON = "application/stream+json"


# -- hand-written streams ------------------------------------------------------------------


def _sse(event: str | None, payload: Any, *, event_id: str | None = None) -> str:
    lines = []
    if event_id is not None:
        lines.append(f"id: {event_id}")
    if event is not None:
        lines.append(f"event: {event}")
    data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
    lines.append(f"data: {data}")
    return "\n".join(lines) + "\n\n"


def _onecortex() -> str:
    """An Onecortex run with an SSE id on every event, pings, and multi-byte text."""
    text = ["Ça fait ", "deux mots ", "— ", "🎉 ", "exactement, ", "ñandú."]
    events: list[tuple[str, dict[str, Any]]] = [
        ("step_start", {"name": "answer"}),
        ("tool_call_start", {"id": "call_1", "name": "word_count"}),
        ("tool_call_args", {"id": "call_1", "delta": '{"text": "héllo'}),
        ("tool_call_args", {"id": "call_1", "delta": ' wörld 🌍"}'}),
        ("tool_call_end", {"id": "call_1"}),
        ("tool_result", {"id": "call_1", "output": "2"}),
        *[("text", {"delta": piece}) for piece in text],
        ("step_end", {"name": "answer"}),
        (
            "done",
            {"result": "".join(text), "sessionId": "01K0", "versionNumber": 1, "durationMs": 212},
        ),
    ]
    out = ["retry: 20\n\n"]
    for number, (kind, payload) in enumerate(events, start=1):
        if number in (3, 8):
            out.append(": ping\n\n")
        out.append(_sse(kind, {"v": 1, "type": kind, **payload}, event_id=str(number)))
    return "".join(out)


def _clouisle() -> str:
    """A Clouisle durable run with a sequence on every run-scoped event."""
    run = {"run_id": "run-1", "round_id": "r-1", "message_id": "m-1"}
    events: list[tuple[str, dict[str, Any]]] = [
        ("run_start", {"status": "running"}),
        ("message_start", {"conversation_id": "c-1"}),
        ("reasoning_start", {}),
        ("reasoning_delta", {"delta": "L'utilisateur veut "}),
        ("reasoning_delta", {"delta": "la météo ☀️."}),
        ("reasoning_end", {}),
        ("tool_call", {"id": "call-1", "name": "weather", "arguments": {"city": "Zürich"}}),
        ("tool_result", {"id": "call-1", "name": "weather", "result": "21 °C, sunny"}),
        ("content_delta", {"delta": "À Zürich "}),
        ("content_delta", {"delta": "il fait 21 °C "}),
        ("content_delta", {"delta": "et du soleil ☀️."}),
        (
            "message_end",
            {
                "usage": {"input_tokens": 120, "output_tokens": 24},
                "elapsed_ms": 840,
                "status": "completed",
            },
        ),
        ("run_end", {"status": "completed"}),
    ]
    out = []
    for sequence, (kind, payload) in enumerate(events, start=1):
        body = {"type": kind, "sequence": sequence, **run, **payload}
        out.append(_sse(kind, body))
    return "".join(out)


def clouisle_run_events() -> list[dict[str, Any]]:
    """A Clouisle durable run as the platform buffers it: each event the envelope ``{run_id,
    sequence, timestamp, round_id, message_id, type, payload}``, the event's own fields in
    ``payload`` (``AgentRunStream.publish``): retrieval, reasoning, text, a tool call and its
    result, more text, the usage and the run's end."""
    events: list[tuple[str, str | None, dict[str, Any]]] = [
        ("run_start", None, {"status": "running", "run_id": "run-7"}),
        ("message_start", "m-7", {"conversation_id": "c-7", "message_id": "m-7"}),
        ("rag_start", "m-7", {}),
        ("rag_context", "m-7", {"contexts": [{"citation_id": "s1", "content": "Föhn."}]}),
        ("reasoning_start", "m-7", {}),
        ("reasoning_delta", "m-7", {"delta": "Il faut la météo "}),
        ("reasoning_delta", "m-7", {"delta": "de Zürich ☁️."}),
        ("reasoning_end", "m-7", {}),
        ("content_delta", "m-7", {"delta": "Je regarde. "}),
        (
            "tool_call",
            "m-7",
            {"tool_call_id": "call-1", "tool_name": "weather", "arguments": {"city": "Zürich"}},
        ),
        (
            "tool_result",
            "m-7",
            {
                "tool_call_id": "call-1",
                "tool_name": "weather",
                "result": "21 °C",
                "is_error": False,
            },
        ),
        ("content_delta", "m-7", {"delta": "À Zürich il fait "}),
        ("content_delta", "m-7", {"delta": "21 °C [[cite:s1]] 🌤️."}),
        (
            "message_end",
            None,
            {
                "usage": {"prompt_tokens": 120, "completion_tokens": 24, "total_tokens": 144},
                "elapsed_ms": 840,
                "status": "completed",
            },
        ),
        ("run_end", None, {"status": "completed", "message_id": "m-7"}),
    ]
    return [
        {
            "run_id": "run-7",
            "sequence": sequence,
            "timestamp": f"2026-05-01T10:00:{sequence:02d}+00:00",
            "round_id": "rnd-1",
            "message_id": message_id,
            "type": kind,
            "payload": payload,
        }
        for sequence, (kind, message_id, payload) in enumerate(events, start=1)
    ]


def _clouisle_run() -> str:
    """The run of :func:`clouisle_run_events` as its stream sends it (``sse_events``)."""
    return "".join(_sse(event["type"], event) for event in clouisle_run_events())


def _openai_responses() -> str:
    """An OpenAI Responses stream with ``sequence_number`` (resumable with starting_after)."""
    response = {"id": "resp_1", "object": "response", "model": "gpt-4.1", "status": "in_progress"}
    item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress"}
    deltas = ["Bonjour ", "le ", "monde ", "— ", "ça ", "va ", "? 🙂"]
    text = "".join(deltas)
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.in_progress", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
        {
            "type": "response.content_part.added",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []},
        },
        *[
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": d,
            }
            for d in deltas
        ],
        {
            "type": "response.output_text.done",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "text": text,
        },
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {
                **item,
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            },
        },
        {
            "type": "response.completed",
            "response": {
                **response,
                "status": "completed",
                "usage": {"input_tokens": 9, "output_tokens": 8, "total_tokens": 17},
            },
        },
    ]
    return "".join(_sse(e["type"], {**e, "sequence_number": n}) for n, e in enumerate(events))


def _cohere_v1() -> str:
    lines: list[dict[str, Any]] = [
        {"is_finished": False, "event_type": "stream-start", "generation_id": "g-1"},
        {"is_finished": False, "event_type": "text-generation", "text": "Grüße "},
        {"is_finished": False, "event_type": "text-generation", "text": "aus Köln 🍺"},
        {
            "is_finished": True,
            "event_type": "stream-end",
            "finish_reason": "COMPLETE",
            "response": {
                "response_id": "r-1",
                "generation_id": "g-1",
                "text": "Grüße aus Köln 🍺",
                "finish_reason": "COMPLETE",
                "meta": {"billed_units": {"input_tokens": 5, "output_tokens": 6}},
            },
        },
    ]
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def _chat_without_model() -> str:
    """Chat Completions chunks that name no model: ``auto`` cannot tell OpenAI from Mistral,
    so it holds the frames until the stream decides, or ends (then it is OpenAI)."""
    chunks: list[Any] = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": piece}}]}
        for piece in ("Hel", "lo, ", "wor", "ld!")
    ]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return "".join(_sse(None, chunk) for chunk in chunks) + _sse(None, "[DONE]")


def _openai_with_usage() -> str:
    """Chat Completions with ``include_usage``: the usage chunk comes after the finish."""
    head = {"id": "chatcmpl-u", "object": "chat.completion.chunk", "model": "gpt-4o"}
    chunks: list[Any] = [
        {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": piece}}]}
        for piece in ("Hel", "lo!")
    ]
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    chunks.append({**head, "choices": [], "usage": usage})
    return "".join(_sse(None, chunk) for chunk in chunks) + _sse(None, "[DONE]")


#: name -> (provider, content type, body)
STREAMS: dict[str, tuple[ProviderName, str, bytes]] = {
    "onecortex": ("onecortex", SSE, _onecortex().encode()),
    "clouisle": ("clouisle", SSE, _clouisle().encode()),
    "clouisle-run": ("clouisle", SSE, _clouisle_run().encode()),
    "openai-responses": ("openai-responses", SSE, _openai_responses().encode()),
    "cohere-v1": ("cohere-v1", NDJSON, _cohere_v1().encode()),
    "chat-no-model": ("auto", SSE, _chat_without_model().encode()),
    "openai-usage": ("openai", SSE, _openai_with_usage().encode()),
}


@functools.lru_cache(maxsize=16)
def generated_stream(provider: ProviderName, n: int, delta: str = "tok ") -> bytes:
    """A stream of ``n`` text-delta events plus its envelope, for load runs."""
    out: list[str] = []
    if provider == "anthropic":
        out.append(
            _sse(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_gen",
                        "type": "message",
                        "role": "assistant",
                        "model": "claude-gen",
                        "content": [],
                        "usage": {"input_tokens": 10, "output_tokens": 1},
                    },
                },
            )
        )
        out.append(
            _sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        )
        piece = json.dumps(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": delta},
            },
            ensure_ascii=False,
        )
        out.extend(_sse("content_block_delta", piece) for _ in range(n))
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
        out.append(
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": n},
                },
            )
        )
        out.append(_sse("message_stop", {"type": "message_stop"}))
        return "".join(out).encode()
    if provider != "openai":
        raise ValueError(f"no generated stream for {provider!r}")
    head = {
        "id": "chatcmpl-gen",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-gen",
    }
    first = {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
    out.append(_sse(None, first))
    piece = json.dumps(
        {**head, "choices": [{"index": 0, "delta": {"content": delta}, "finish_reason": None}]},
        ensure_ascii=False,
    )
    out.extend(_sse(None, piece) for _ in range(n))
    last = {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    out.append(_sse(None, last))
    out.append(_sse(None, "[DONE]"))
    return "".join(out).encode()


# -- events of a body, for resumption -------------------------------------------------------

_BLOCK_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


@dataclass
class _Block:
    data: bytes
    event_id: str | None = None
    sequence: int | None = None


def split_events(body: bytes, content_type: str) -> list[_Block]:
    """The body cut after each SSE event (or JSON line), with its id and sequence."""
    blocks: list[_Block] = []
    if content_type != SSE:
        blocks.extend(_Block(line) for line in body.splitlines(keepends=True))
        return blocks
    start = 0
    for match in _BLOCK_END.finditer(body):
        blocks.append(_Block(body[start : match.end()]))
        start = match.end()
    if start < len(body):
        blocks.append(_Block(body[start:]))
    return blocks


def _describe(block: _Block) -> _Block:
    """Fill in the block's id and sequence (only for resumed requests: it costs)."""
    for line in block.data.decode("utf-8", errors="replace").splitlines():
        if line.startswith("id:"):
            block.event_id = line[3:].removeprefix(" ")
        elif line.startswith("data:"):
            with contextlib.suppress(ValueError):
                payload = json.loads(line[5:])
                if isinstance(payload, dict):
                    seq = payload.get("sequence", payload.get("sequence_number"))
                    if isinstance(seq, int):
                        block.sequence = seq
    return block


def _resume_index(request: web.Request, blocks: list[_Block]) -> int:
    """Index of the first event after the client's cursor (0 without one)."""
    if request.query.get("resume") == "0":
        return 0
    last_id = request.headers.get("Last-Event-ID")
    if not last_id and not {"after_sequence", "starting_after"} & set(request.query):
        return 0
    for block in blocks:
        _describe(block)
    for name in ("after_sequence", "starting_after"):
        value = request.query.get(name)
        if value is not None:
            after = int(value)
            for i, block in enumerate(blocks):
                if block.sequence is not None and block.sequence > after:
                    return i
            return len(blocks)
    if last_id:
        for i, block in enumerate(blocks):
            if block.event_id == last_id:
                if request.query.get("resume") == "next":
                    later = [j for j in range(i + 1, len(blocks)) if blocks[j].event_id]
                    return later[0] if later else len(blocks)
                return i + 1
    return 0


def id_stream(spec: str) -> bytes:
    """``/ids``: text events ``t0 ``, ``t1 ``, … with the SSE ids of ``spec``, then done
    (with an id: a server resuming from the next id sends it)."""
    ids = spec.split(",")
    texts = [f"t{i} " for i in range(len(ids))]
    out = [
        _sse("text", {"v": 1, "type": "text", "delta": text}, event_id=None if i == "-" else i)
        for i, text in zip(ids, texts, strict=True)
    ]
    done = {"v": 1, "type": "done", "result": "".join(texts), "sessionId": "s"}
    out.append(_sse("done", done, event_id=str(len(ids) + 1)))
    return "".join(out).encode()


# -- the server -----------------------------------------------------------------------------


class _Gzip:
    """A gzip body flushed after each write, so that it still streams."""

    def __init__(self) -> None:
        self._z = zlib.compressobj(wbits=31)

    def flushed(self, data: bytes) -> bytes:
        return self._z.compress(data) + self._z.flush(zlib.Z_SYNC_FLUSH)

    def finish(self) -> bytes:
        return self._z.flush()


class _Brotli:
    """A brotli body flushed after each write."""

    def __init__(self) -> None:
        import brotli  # type: ignore[import-untyped]  # (ships no type information)

        self._c = brotli.Compressor()

    def flushed(self, data: bytes) -> bytes:
        return bytes(self._c.process(data) + self._c.flush())

    def finish(self) -> bytes:
        return bytes(self._c.finish())


_COMPRESSORS: dict[str, type[_Gzip | _Brotli]] = {"gzip": _Gzip, "br": _Brotli}


@dataclass
class Seen:
    """One request as the server saw it."""

    path: str
    query: dict[str, str]
    #: Looked up in any case, as HTTP names are (the native client sends them lower-cased).
    headers: CIMultiDict[str]
    attempt: int
    method: str = "GET"


@dataclass
class StreamServer:
    """A running server: ``base_url``, what it saw, and ``stop()``."""

    base_url: str
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    requests: list[Seen] = field(default_factory=list)
    _attempts: dict[str, int] = field(default_factory=dict)
    _gone: dict[str, threading.Event] = field(default_factory=dict)
    _finished: dict[str, threading.Event] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: Any = None
    #: Record every request (else only those with a ``rid``).
    record: bool = True

    def url(self, path: str, **query: Any) -> str:
        from urllib.parse import urlencode

        return f"{self.base_url}{path}" + (f"?{urlencode(query)}" if query else "")

    def seen(self, rid: str) -> list[Seen]:
        with self._lock:
            return [r for r in self.requests if r.query.get("rid") == rid]

    def _event(self, table: dict[str, threading.Event], rid: str) -> threading.Event:
        with self._lock:
            return table.setdefault(rid, threading.Event())

    def wait_disconnect(self, rid: str, timeout: float = 5.0) -> bool:
        """True once the server noticed the client of ``rid`` went away mid-body."""
        return self._event(self._gone, rid).wait(timeout)

    def wait_finished(self, rid: str, timeout: float = 5.0) -> bool:
        """True once a handler for ``rid`` has returned (whatever the outcome)."""
        return self._event(self._finished, rid).wait(timeout)

    def stop(self) -> None:
        if self._stop is not None:
            asyncio.run_coroutine_threadsafe(self._stop(), self.loop).result(10)
            self._stop = None
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    # -- handlers --------------------------------------------------------------------------

    def _attempt(self, request: web.Request) -> int:
        rid = request.query.get("rid", "")
        with self._lock:
            # Without a rid every request is a first connection.
            attempt = self._attempts.get(rid, 0) if rid else 0
            if rid:
                self._attempts[rid] = attempt + 1
            if rid or self.record:
                self.requests.append(
                    Seen(
                        request.path,
                        dict(request.query),
                        CIMultiDict(request.headers),
                        attempt,
                        request.method,
                    )
                )
        return attempt

    async def capture(self, request: web.Request) -> web.StreamResponse:
        folder, name = request.match_info["folder"], request.match_info["name"]
        path = CAPTURES / folder / f"{name}.sse"
        if not path.is_file() or ".." in folder or ".." in name:
            raise web.HTTPNotFound()
        content_type = NDJSON if folder == "cohere_v1" else SSE
        return await self._serve(request, path.read_bytes(), content_type)

    async def example(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["file"]
        path = EXAMPLES / name
        if "/" in name or ".." in name or not path.is_file() or "recording" in name:
            raise web.HTTPNotFound()
        content_type = NDJSON if name.endswith(".jsonl") else SSE
        return await self._serve(request, path.read_bytes(), content_type)

    async def stream(self, request: web.Request) -> web.StreamResponse:
        found = STREAMS.get(request.match_info["name"])
        if found is None:
            raise web.HTTPNotFound()
        _, content_type, body = found
        return await self._serve(request, body, content_type)

    async def run_events(self, request: web.Request) -> web.StreamResponse:
        """A Clouisle run's catch-up, ``…/chat/runs/{run_id}/events?after_sequence=N``: the
        buffered events with a sequence above N, as ``{"code": 0, "data": [...], "msg"}``.
        ``clouisle-run@M``: a run still going, its events buffered up to sequence M."""
        name, _, upto = request.match_info["name"].partition("@")
        if name != "clouisle-run":
            raise web.HTTPNotFound()
        self._attempt(request)
        after = max(int(request.query.get("after_sequence", "0")), 0)
        last = int(upto) if upto else None
        data = [
            event
            for event in clouisle_run_events()
            if event["sequence"] > after and (last is None or event["sequence"] <= last)
        ]
        return web.json_response({"code": 0, "data": data, "msg": "success"})

    async def run_stream(self, request: web.Request) -> web.StreamResponse:
        """The run's stream, ``…/chat/runs/{run_id}/stream?after_sequence=N`` (the whole run,
        whatever its catch-up had buffered yet)."""
        found = STREAMS.get(request.match_info["name"].partition("@")[0])
        if found is None:
            raise web.HTTPNotFound()
        _, content_type, body = found
        return await self._serve(request, body, content_type)

    async def generate(self, request: web.Request) -> web.StreamResponse:
        body = generated_stream(
            request.query.get("provider", "openai"),
            int(request.query.get("n", "100")),
            request.query.get("delta", "tok "),
        )
        return await self._serve(request, body, SSE)

    async def ids(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, id_stream(request.query["spec"]), SSE)

    async def redirect(self, request: web.Request) -> web.StreamResponse:
        """``/redirect?to=URL``: a 307 to URL (``status=`` another redirect status)."""
        self._attempt(request)
        status = int(request.query.get("status", "307"))
        return web.Response(status=status, headers={"Location": request.query["to"]})

    async def html(self, request: web.Request) -> web.StreamResponse:
        self._attempt(request)
        return web.Response(
            text="<!doctype html><html><body>Please log in</body></html>",
            content_type="text/html",
        )

    async def _serve(
        self, request: web.Request, body: bytes, content_type: str
    ) -> web.StreamResponse:
        attempt = self._attempt(request)
        rid = request.query.get("rid", "")
        try:
            return await self._respond(request, body, content_type, attempt, rid)
        finally:
            self._event(self._finished, rid).set()

    async def _respond(
        self, request: web.Request, body: bytes, content_type: str, attempt: int, rid: str
    ) -> web.StreamResponse:
        q = request.query
        fault = {k: v for k, v in q.items() if _applies(q, k, attempt)}
        # Accept the request, then send nothing for S seconds.
        if "head_stall" in fault and not await _sleep_while_connected(
            request, float(fault["head_stall"])
        ):
            self._event(self._gone, rid).set()
            return web.Response()
        if "status" in fault:
            status = int(fault["status"])
            headers = {"Retry-After": fault["retry_after"]} if "retry_after" in fault else {}
            if "retry_after_ms" in fault:
                headers["retry-after-ms"] = fault["retry_after_ms"]
            if "should_retry" in fault:
                headers["x-should-retry"] = fault["should_retry"]
            error = {
                "error": {
                    "message": f"injected HTTP {status}",
                    "type": "rate_limit_error" if status == 429 else "server_error",
                    "code": "rate_limited" if status == 429 else "internal_error",
                }
            }
            if "pad" in fault:
                error["error"]["padding"] = "x" * int(fault["pad"])
            if "cut" not in fault and "stall" not in fault:
                return web.json_response(error, status=status, headers=headers)
            # The error body cut after N bytes (chunked, never ended): a proxy dying mid-reply;
            # or stalled after them for S seconds (``stall=S``), then sent whole.
            response = web.StreamResponse(
                status=status, headers={**headers, "Content-Type": "application/json"}
            )
            await response.prepare(request)
            encoded = json.dumps(error).encode()
            split = int(fault.get("cut", fault.get("stall_at", "0")))
            await response.write(encoded[:split])
            if "cut" in fault:
                await _close_abruptly(request)
                return response
            if not await _sleep_while_connected(request, float(fault["stall"])):
                self._event(self._gone, rid).set()
                return response
            await response.write(encoded[split:])
            await response.write_eof()
            return response
        if q.get("ids") == "redis":
            body = redis_ids(body)
        elif q.get("ids") == "unicode":  # ids a browser's EventSource sends back in UTF-8
            body = _NUMERIC_ID.sub(lambda m: "id: évt-".encode() + m[1], body)
        blocks = split_events(body, content_type)
        start = _resume_index(request, blocks)
        if start > 0:
            start = max(0, start - int(q.get("replay", "0")))
        response = web.StreamResponse(
            headers={"Content-Type": fault.get("ctype", content_type), "Cache-Control": "no-cache"}
        )
        encoding = (
            "gzip"
            if fault.get("gzip") in ("1", "bad")
            else "br"
            if fault.get("br") == "1"
            else None
        )
        if encoding is not None:
            response.headers["Content-Encoding"] = encoding
        if q.get("length") == "1":  # a Content-Length body instead of a chunked one
            response.content_length = sum(len(b.data) for b in blocks[start:])
        await response.prepare(request)
        pieces = [b.data for b in blocks[start:]]
        if "chunk" in q:  # writes of N bytes instead of one write per event
            size = int(q["chunk"])
            joined = b"".join(pieces)
            pieces = [joined[i : i + size] for i in range(0, len(joined), size)]
        cut = _cut_offset(fault.get("cut"), b"".join(pieces))
        cuts = q.get("cuts", "").split(",")
        if attempt < len(cuts) and cuts[attempt] not in ("", "-"):
            cut = int(cuts[attempt])
        end = int(fault["end"]) if "end" in fault else None
        stall = float(fault.get("stall", "0"))
        stall_at = int(fault.get("stall_at", "0"))
        drip = fault.get("drip") == "1"
        delay = float(q.get("event_delay", "0"))
        compressor = None if encoding is None else _COMPRESSORS[encoding]()
        if cut is not None and q.get("midchunk") == "1" and request.transport is not None:
            # One chunk declared for the whole body, the connection closed inside it.
            joined = b"".join(pieces)
            request.transport.write(b"%x\r\n" % len(joined) + joined[:cut])
            await _close_abruptly(request)
            return response
        sent = 0
        try:
            for piece in pieces:
                for part in _split_piece(piece, sent, drip, cut, end, stall_at if stall else None):
                    if stall and sent == stall_at:
                        if not await _sleep_while_connected(request, stall):
                            self._event(self._gone, rid).set()
                            return response
                        stall = 0
                    if cut is not None and sent >= cut:
                        await _close_abruptly(request)
                        return response
                    if end is not None and sent >= end:
                        await response.write_eof()
                        return response
                    data = part
                    if compressor is not None:
                        data = compressor.flushed(part)
                    await response.write(data)
                    sent += len(part)
                if fault.get("gzip") == "bad":  # the body's encoding breaks after one event
                    await response.write(b"this is not gzip" * 8)
                    await response.write_eof()
                    return response
                if delay and not await _sleep_while_connected(request, delay):
                    self._event(self._gone, rid).set()
                    return response
            if cut is not None and sent >= cut:
                await _close_abruptly(request)
                return response
            if compressor is not None:
                await response.write(compressor.finish())
            await response.write_eof()
        except (ConnectionError, asyncio.CancelledError):
            self._event(self._gone, rid).set()
            raise
        return response


_NUMERIC_ID = re.compile(rb"^id: ?([0-9]+)$", re.MULTILINE)


def redis_ids(body: bytes) -> bytes:
    """Numeric SSE ids ``1, 2, 3, …`` as Redis stream ids: three entries per millisecond."""

    def redis(match: re.Match[bytes]) -> bytes:
        n = int(match[1]) - 1
        return b"id: %d-%d" % (1_700_000_000_000 + n // 3, n % 3)

    return _NUMERIC_ID.sub(redis, body)


_FAULTS = frozenset(
    {
        "cut",
        "end",
        "stall",
        "stall_at",
        "drip",
        "status",
        "retry_after",
        "retry_after_ms",
        "should_retry",
        "pad",
        "ctype",
        "gzip",
        "br",
        "head_stall",
    }
)


def _applies(query: Any, key: str, attempt: int) -> bool:
    """Whether fault ``key`` applies to connection number ``attempt``."""
    if key not in _FAULTS:
        return False
    on = query.get(f"{key}_on", query.get("on", "0"))
    return bool(on == "all" or str(attempt) in on.split(","))


def _cut_offset(value: str | None, body: bytes) -> int | None:
    if value is None:
        return None
    if value == "utf8":
        for i, byte in enumerate(body):
            if byte >= 0xC0:  # the lead byte of a multi-byte character
                return i + 1
        raise ValueError("cut=utf8 on a body without multi-byte characters")
    return int(value)


def _split_piece(piece: bytes, sent: int, drip: bool, *marks: int | None) -> Iterator[bytes]:
    """The piece in writes: byte by byte when dripping, else split at the fault offsets."""
    if drip:
        for i in range(len(piece)):
            yield piece[i : i + 1]
        return
    cuts = sorted({m - sent for m in marks if m is not None and sent < m < sent + len(piece)})
    start = 0
    for c in cuts:
        yield piece[start:c]
        start = c
    yield piece[start:]


async def _sleep_while_connected(request: web.Request, seconds: float) -> bool:
    """Sleep; False as soon as the client is gone."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        transport = request.transport
        if transport is None or transport.is_closing():
            return False
        left = deadline - loop.time()
        if left <= 0:
            return True
        await asyncio.sleep(min(left, 0.01))


async def _close_abruptly(request: web.Request) -> None:
    """End the connection mid-body: what a proxy timeout or a crash looks like."""
    transport = request.transport
    if transport is not None:
        transport.close()
    await asyncio.sleep(0)


def start_server(*, record: bool = True) -> StreamServer:
    """Start the server in a background thread; returns once it accepts connections."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box: dict[str, Any] = {}

    async def setup() -> None:
        app = web.Application()
        server = box["server"]
        for method in ("GET", "POST"):
            app.router.add_route(method, "/capture/{folder}/{name}", server.capture)
            app.router.add_route(method, "/example/{file}", server.example)
            # An SDK's client with base_url=/example/<file> (it appends /chat/completions,
            # /v1/messages…) gets the example too.
            app.router.add_route(method, "/example/{file}/{endpoint:.+}", server.example)
            app.router.add_route(method, "/stream/{name}", server.stream)
            app.router.add_route(method, "/run/{name}/events", server.run_events)
            app.router.add_route(method, "/run/{name}/stream", server.run_stream)
            app.router.add_route(method, "/generate", server.generate)
            app.router.add_route(method, "/html", server.html)
            app.router.add_route(method, "/ids", server.ids)
            app.router.add_route(method, "/redirect", server.redirect)
        runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.5, access_log=None)
        await runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        site = web.SockSite(runner, sock)
        await site.start()
        port = sock.getsockname()[1]
        server.base_url = f"http://127.0.0.1:{port}"
        server._stop = runner.cleanup

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(setup())
        except BaseException as exc:
            box["error"] = exc
            loop.close()
            ready.set()
            return
        ready.set()
        loop.run_forever()
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()

    thread = threading.Thread(target=run, name="stream-server", daemon=True)
    box["server"] = StreamServer("", loop, thread, record=record)
    thread.start()
    ready.wait(10)
    if "error" in box:
        raise RuntimeError("the test server did not start") from box["error"]
    server: StreamServer = box["server"]
    return server


@pytest.fixture(scope="module")
def stream_server() -> Iterator[StreamServer]:
    """A server for the test module, stopped after it."""
    server = start_server()
    try:
        yield server
    finally:
        server.stop()


# -- the clients under test ----------------------------------------------------------------
#
# Every transport test runs through each of these: httpx sync, httpx async (under asyncio and
# under trio) and aiohttp (asyncio only: aiohttp does not run under trio). The tests are async
# so that one body serves all four; the sync client simply blocks (the server has its own
# thread and loop).

#: client kind -> the anyio backend its tests run under.
CLIENT_BACKENDS = {
    "httpx-sync": "asyncio",
    "httpx-async-asyncio": "asyncio",
    "httpx-async-trio": "trio",
    "aiohttp": "asyncio",
    "requests": "asyncio",
    "native-sync": "asyncio",
    "native-async-asyncio": "asyncio",
    "native-async-trio": "trio",
}


#: Events read, and the error that stopped the reading (``None``: none).
Drained = tuple[list[Any], Exception | None]


class Client:
    """One HTTP client stack: fold / events / resumable fold of a URL."""

    kind = ""

    async def fold(self, url: str, provider: ProviderName, **options: Any) -> Any:
        raise NotImplementedError

    async def events(self, url: str, provider: ProviderName) -> list[Any]:
        raise NotImplementedError

    async def fold_resumable(
        self, url: str, provider: ProviderName, query: dict[str, Any], **options: Any
    ) -> Any:
        raise NotImplementedError

    async def read_then_leave(
        self, url: str, provider: ProviderName, n: int, *, raise_: bool
    ) -> int:
        """Read ``n`` events, then break out of the loop (or raise in it); events read."""
        raise NotImplementedError

    async def events_until_error(self, url: str, provider: ProviderName) -> Drained:
        """The events read, and the error that ended them (``None``: the stream ended)."""
        raise NotImplementedError

    async def fold_body(self, url: str, provider: ProviderName) -> Any:
        """``fold`` of the client's own iterator of the body bytes (``iter_bytes()``…), not
        of the response: streamfold sees only the bytes, and the client's exceptions."""
        raise NotImplementedError

    async def events_of_body_until_error(self, url: str, provider: ProviderName) -> Drained:
        """``events_until_error`` over the client's own iterator of the body bytes."""
        raise NotImplementedError


def drain(events: Iterable[Any]) -> Drained:
    """Every event up to the error that ends them: a list() of them loses them all."""
    import streamfold as sf

    seen: list[Any] = []
    try:
        for event in events:
            seen.append(event)
    except sf.StreamfoldError as exc:
        return seen, exc
    return seen, None


async def adrain(events: AsyncIterable[Any]) -> Drained:
    """Async twin of :func:`drain`."""
    import streamfold as sf

    seen: list[Any] = []
    try:
        async for event in events:
            seen.append(event)
    except sf.StreamfoldError as exc:
        return seen, exc
    return seen, None


class _Leave(Exception):
    """Raised in a caller's loop by the leak tests."""


class HttpxSync(Client):
    kind = "httpx-sync"

    async def fold(self, url: str, provider: ProviderName, **options: Any) -> Any:
        import httpx

        import streamfold as sf

        with httpx.Client() as client, client.stream("GET", url) as response:
            return sf.fold(response, provider=provider, **options)

    async def events(self, url: str, provider: ProviderName) -> list[Any]:
        import httpx

        import streamfold as sf

        with httpx.Client() as client, client.stream("GET", url) as response:
            return list(sf.events(response, provider=provider))

    async def events_until_error(self, url: str, provider: ProviderName) -> Drained:
        import httpx

        import streamfold as sf

        with httpx.Client() as client, client.stream("GET", url) as response:
            return drain(sf.events(response, provider=provider))

    async def fold_body(self, url: str, provider: ProviderName) -> Any:
        import httpx

        import streamfold as sf

        with httpx.Client() as client, client.stream("GET", url) as response:
            return sf.fold(response.iter_bytes(), provider=provider)

    async def events_of_body_until_error(self, url: str, provider: ProviderName) -> Drained:
        import httpx

        import streamfold as sf

        with httpx.Client() as client, client.stream("GET", url) as response:
            return drain(sf.events(response.iter_bytes(), provider=provider))

    async def fold_resumable(
        self, url: str, provider: ProviderName, query: dict[str, Any], **options: Any
    ) -> Any:
        import httpx

        import streamfold as sf

        with httpx.Client() as client:

            def connect(cursor: sf.Cursor) -> Any:
                params = {**query, **cursor.params}
                return client.stream("GET", url, params=params, headers=cursor.headers)

            return sf.fold_resumable(connect, provider=provider, **options)

    async def read_then_leave(
        self, url: str, provider: ProviderName, n: int, *, raise_: bool
    ) -> int:
        import httpx

        import streamfold as sf

        seen = 0
        with httpx.Client() as client:
            response = client.send(client.build_request("GET", url), stream=True)
            with contextlib.suppress(_Leave):
                for _ in sf.events(response, provider=provider):
                    seen += 1
                    if seen == n:
                        if raise_:
                            raise _Leave
                        break
            assert response.is_closed
        return seen


class HttpxAsync(Client):
    def __init__(self, kind: str) -> None:
        self.kind = kind

    async def fold(self, url: str, provider: ProviderName, **options: Any) -> Any:
        import httpx

        import streamfold as sf

        async with httpx.AsyncClient() as client, client.stream("GET", url) as response:
            return await sf.afold(response, provider=provider, **options)

    async def events(self, url: str, provider: ProviderName) -> list[Any]:
        import httpx

        import streamfold as sf

        async with httpx.AsyncClient() as client, client.stream("GET", url) as response:
            return [event async for event in sf.aevents(response, provider=provider)]

    async def events_until_error(self, url: str, provider: ProviderName) -> Drained:
        import httpx

        import streamfold as sf

        async with httpx.AsyncClient() as client, client.stream("GET", url) as response:
            return await adrain(sf.aevents(response, provider=provider))

    async def fold_body(self, url: str, provider: ProviderName) -> Any:
        import httpx

        import streamfold as sf

        async with httpx.AsyncClient() as client, client.stream("GET", url) as response:
            return await sf.afold(response.aiter_bytes(), provider=provider)

    async def events_of_body_until_error(self, url: str, provider: ProviderName) -> Drained:
        import httpx

        import streamfold as sf

        async with httpx.AsyncClient() as client, client.stream("GET", url) as response:
            return await adrain(sf.aevents(response.aiter_bytes(), provider=provider))

    async def fold_resumable(
        self, url: str, provider: ProviderName, query: dict[str, Any], **options: Any
    ) -> Any:
        import httpx

        import streamfold as sf

        async with httpx.AsyncClient() as client:

            def connect(cursor: sf.Cursor) -> Any:
                params = {**query, **cursor.params}
                return client.stream("GET", url, params=params, headers=cursor.headers)

            return await sf.afold_resumable(connect, provider=provider, **options)

    async def read_then_leave(
        self, url: str, provider: ProviderName, n: int, *, raise_: bool
    ) -> int:
        import httpx

        import streamfold as sf

        seen = 0
        async with httpx.AsyncClient() as client:
            response = await client.send(client.build_request("GET", url), stream=True)
            events = cast("AsyncGenerator[Any, None]", sf.aevents(response, provider=provider))
            with contextlib.suppress(_Leave):
                async with contextlib.aclosing(events):
                    async for _ in events:
                        seen += 1
                        if seen == n:
                            if raise_:
                                raise _Leave
                            break
            assert response.is_closed
        return seen


class Aiohttp(Client):
    kind = "aiohttp"

    async def fold(self, url: str, provider: ProviderName, **options: Any) -> Any:
        import aiohttp

        import streamfold as sf

        async with aiohttp.ClientSession() as session, session.get(url) as response:
            return await sf.afold(response, provider=provider, **options)

    async def events(self, url: str, provider: ProviderName) -> list[Any]:
        import aiohttp

        import streamfold as sf

        async with aiohttp.ClientSession() as session, session.get(url) as response:
            return [event async for event in sf.aevents(response, provider=provider)]

    async def events_until_error(self, url: str, provider: ProviderName) -> Drained:
        import aiohttp

        import streamfold as sf

        async with aiohttp.ClientSession() as session, session.get(url) as response:
            return await adrain(sf.aevents(response, provider=provider))

    async def fold_body(self, url: str, provider: ProviderName) -> Any:
        import aiohttp

        import streamfold as sf

        async with aiohttp.ClientSession() as session, session.get(url) as response:
            return await sf.afold(response.content.iter_any(), provider=provider)

    async def events_of_body_until_error(self, url: str, provider: ProviderName) -> Drained:
        import aiohttp

        import streamfold as sf

        async with aiohttp.ClientSession() as session, session.get(url) as response:
            return await adrain(sf.aevents(response.content.iter_any(), provider=provider))

    async def fold_resumable(
        self, url: str, provider: ProviderName, query: dict[str, Any], **options: Any
    ) -> Any:
        import aiohttp

        import streamfold as sf

        async with aiohttp.ClientSession() as session:

            def connect(cursor: sf.Cursor) -> Any:
                params = {k: str(v) for k, v in {**query, **cursor.params}.items()}
                return session.get(url, params=params, headers=cursor.headers)

            return await sf.afold_resumable(connect, provider=provider, **options)

    async def read_then_leave(
        self, url: str, provider: ProviderName, n: int, *, raise_: bool
    ) -> int:
        import aiohttp

        import streamfold as sf

        seen = 0
        async with aiohttp.ClientSession() as session:
            response = await session.get(url)
            events = cast("AsyncGenerator[Any, None]", sf.aevents(response, provider=provider))
            with contextlib.suppress(_Leave):
                async with contextlib.aclosing(events):
                    async for _ in events:
                        seen += 1
                        if seen == n:
                            if raise_:
                                raise _Leave
                            break
            assert response.closed
        return seen


class Requests(Client):
    """requests, sync only: a ``Session`` and ``stream=True``, as its users stream."""

    kind = "requests"

    async def fold(self, url: str, provider: ProviderName, **options: Any) -> Any:
        import requests

        import streamfold as sf

        with requests.Session() as session, session.get(url, stream=True) as response:
            return sf.fold(response, provider=provider, **options)

    async def events(self, url: str, provider: ProviderName) -> list[Any]:
        import requests

        import streamfold as sf

        with requests.Session() as session, session.get(url, stream=True) as response:
            return list(sf.events(response, provider=provider))

    async def events_until_error(self, url: str, provider: ProviderName) -> Drained:
        import requests

        import streamfold as sf

        with requests.Session() as session, session.get(url, stream=True) as response:
            return drain(sf.events(response, provider=provider))

    async def fold_body(self, url: str, provider: ProviderName) -> Any:
        import requests

        import streamfold as sf

        with requests.Session() as session, session.get(url, stream=True) as response:
            return sf.fold(response.iter_content(chunk_size=None), provider=provider)

    async def events_of_body_until_error(self, url: str, provider: ProviderName) -> Drained:
        import requests

        import streamfold as sf

        with requests.Session() as session, session.get(url, stream=True) as response:
            return drain(sf.events(response.iter_content(chunk_size=None), provider=provider))

    async def fold_resumable(
        self, url: str, provider: ProviderName, query: dict[str, Any], **options: Any
    ) -> Any:
        import requests

        import streamfold as sf

        with requests.Session() as session:

            def connect(cursor: sf.Cursor) -> Any:
                params = {**query, **cursor.params}
                return session.get(url, params=params, headers=cursor.headers, stream=True)

            return sf.fold_resumable(connect, provider=provider, **options)

    async def read_then_leave(
        self, url: str, provider: ProviderName, n: int, *, raise_: bool
    ) -> int:
        import requests

        import streamfold as sf

        seen = 0
        with requests.Session() as session:
            response = session.get(url, stream=True)
            with contextlib.suppress(_Leave):
                for _ in sf.events(response, provider=provider):
                    seen += 1
                    if seen == n:
                        if raise_:
                            raise _Leave
                        break
            # Closed: the connection is released, its socket no longer readable.
            assert response.raw.closed
        return seen


class NativeSync(Client):
    """``sf.Client`` read with the sync API: its reads wait in the core without the GIL."""

    kind = "native-sync"

    async def fold(self, url: str, provider: ProviderName, **options: Any) -> Any:
        import streamfold as sf

        with sf.Client() as client, client.stream("GET", url) as response:
            return sf.fold(response, provider=provider, **options)

    async def events(self, url: str, provider: ProviderName) -> list[Any]:
        import streamfold as sf

        with sf.Client() as client, client.stream("GET", url) as response:
            return list(sf.events(response, provider=provider))

    async def events_until_error(self, url: str, provider: ProviderName) -> Drained:
        import streamfold as sf

        with sf.Client() as client, client.stream("GET", url) as response:
            return drain(sf.events(response, provider=provider))

    async def fold_body(self, url: str, provider: ProviderName) -> Any:
        import streamfold as sf

        with sf.Client() as client, client.stream("GET", url) as response:
            return sf.fold(response.iter_bytes(), provider=provider)

    async def events_of_body_until_error(self, url: str, provider: ProviderName) -> Drained:
        import streamfold as sf

        with sf.Client() as client, client.stream("GET", url) as response:
            return drain(sf.events(response.iter_bytes(), provider=provider))

    async def fold_resumable(
        self, url: str, provider: ProviderName, query: dict[str, Any], **options: Any
    ) -> Any:
        import streamfold as sf

        with sf.Client() as client:

            def connect(cursor: sf.Cursor) -> Any:
                params = {**query, **cursor.params}
                return client.stream("GET", url, params=params, headers=cursor.headers)

            return sf.fold_resumable(connect, provider=provider, **options)

    async def read_then_leave(
        self, url: str, provider: ProviderName, n: int, *, raise_: bool
    ) -> int:
        import streamfold as sf

        seen = 0
        with sf.Client() as client:
            opening = client.stream("GET", url)
            response = opening.__enter__()
            with contextlib.suppress(_Leave):
                for _ in sf.events(response, provider=provider):
                    seen += 1
                    if seen == n:
                        if raise_:
                            raise _Leave
                        break
            assert response.is_closed
        return seen


class NativeAsync(Client):
    """``sf.Client`` read with the async API, under asyncio or trio."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    async def fold(self, url: str, provider: ProviderName, **options: Any) -> Any:
        import streamfold as sf

        async with sf.Client() as client, client.stream("GET", url) as response:
            return await sf.afold(response, provider=provider, **options)

    async def events(self, url: str, provider: ProviderName) -> list[Any]:
        import streamfold as sf

        async with sf.Client() as client, client.stream("GET", url) as response:
            return [event async for event in sf.aevents(response, provider=provider)]

    async def events_until_error(self, url: str, provider: ProviderName) -> Drained:
        import streamfold as sf

        async with sf.Client() as client, client.stream("GET", url) as response:
            return await adrain(sf.aevents(response, provider=provider))

    async def fold_body(self, url: str, provider: ProviderName) -> Any:
        import streamfold as sf

        async with sf.Client() as client, client.stream("GET", url) as response:
            return await sf.afold(response.aiter_bytes(), provider=provider)

    async def events_of_body_until_error(self, url: str, provider: ProviderName) -> Drained:
        import streamfold as sf

        async with sf.Client() as client, client.stream("GET", url) as response:
            return await adrain(sf.aevents(response.aiter_bytes(), provider=provider))

    async def fold_resumable(
        self, url: str, provider: ProviderName, query: dict[str, Any], **options: Any
    ) -> Any:
        import streamfold as sf

        async with sf.Client() as client:

            def connect(cursor: sf.Cursor) -> Any:
                params = {**query, **cursor.params}
                return client.stream("GET", url, params=params, headers=cursor.headers)

            return await sf.afold_resumable(connect, provider=provider, **options)

    async def read_then_leave(
        self, url: str, provider: ProviderName, n: int, *, raise_: bool
    ) -> int:
        import streamfold as sf

        seen = 0
        async with sf.Client() as client:
            response = await client.stream("GET", url).__aenter__()
            events = cast("AsyncGenerator[Any, None]", sf.aevents(response, provider=provider))
            with contextlib.suppress(_Leave):
                async with contextlib.aclosing(events):
                    async for _ in events:
                        seen += 1
                        if seen == n:
                            if raise_:
                                raise _Leave
                            break
            assert response.is_closed
        return seen


def make_client(kind: str) -> Client:
    if kind == "native-sync":
        return NativeSync()
    if kind.startswith("native-async"):
        return NativeAsync(kind)
    if kind == "httpx-sync":
        return HttpxSync()
    if kind.startswith("httpx-async"):
        return HttpxAsync(kind)
    if kind == "aiohttp":
        return Aiohttp()
    if kind == "requests":
        return Requests()
    raise ValueError(kind)
