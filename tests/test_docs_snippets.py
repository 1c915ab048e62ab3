"""Every ```python snippet of the README and docs/ runs as written, and does what its text says.

Each snippet is taken from the Markdown as it stands and run statement by statement (top-level
``await`` and ``async with`` included) against the loopback server (tests/http_server.py)
serving the bundled example streams. The names a snippet leaves to the reader (``url``,
``body``, ``response``, ``render``, ``history``…) are given by its entry in :data:`SNIPPETS`,
which also checks the outcome. A snippet added to the docs without an entry fails
:func:`test_every_snippet_has_an_entry`: a doc change cannot silently stop running.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import copy
import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
import requests

import streamfold as sf
from http_server import EXAMPLES, STREAMS, StreamServer, stream_server
from streamfold._types import ProviderName

__all__ = ["stream_server"]  # the fixture, imported for the tests below

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


@dataclass
class Snippet:
    doc: str  # path relative to the project root
    line: int  # line of the first statement in the Markdown file
    code: str

    @property
    def key(self) -> tuple[str, str]:
        return self.doc, self.code.splitlines()[0]


def snippets() -> list[Snippet]:
    found = []
    for doc in DOCS:
        text = doc.read_text("utf-8")
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start(1)) + 1
            found.append(Snippet(str(doc.relative_to(ROOT)), line, match.group(1)))
    return found


@dataclass
class Run:
    """What a snippet is run with: its free names, per-statement changes, and its checks."""

    names: dict[str, Any] = field(default_factory=dict)
    #: Statement number -> names (re)bound just before it runs (one ``url`` per provider).
    before: dict[int, dict[str, Any]] = field(default_factory=dict)
    #: Statement number -> a check of the namespace right after it ran.
    after: dict[int, Callable[[dict[str, Any]], None]] = field(default_factory=dict)
    #: The check of the namespace once the whole snippet ran.
    check: Callable[[dict[str, Any]], None] = lambda ns: None


def example(name: str) -> bytes:
    return (EXAMPLES / name).read_bytes()


def folded(name: str, provider: ProviderName) -> sf.Message:
    return sf.fold([example(name)], provider=provider)


async def opened(stack: contextlib.AsyncExitStack, url: str) -> httpx.Response:
    """A sync httpx response, opened for the snippet and closed after it."""
    client = stack.enter_context(httpx.Client())
    return stack.enter_context(client.stream("GET", url))


def complete_from(provider: ProviderName, name: str) -> Callable[[dict[str, Any]], None]:
    def check(ns: dict[str, Any]) -> None:
        message = ns["message"]
        assert isinstance(message, sf.Message)
        assert message.complete
        assert message.provider == provider
        assert message.text == folded(name, provider).text

    return check


# -- one entry per snippet -------------------------------------------------------------------


async def readme_fold(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    def check(ns: dict[str, Any]) -> None:
        complete_from("anthropic", "anthropic_thinking.sse")(ns)
        message = ns["message"]
        assert message.reasoning
        assert ns["history"] == [message.to_request()]
        assert ns["history"][0]["role"] == "assistant"
        assert ns["history"][0]["content"][0]["type"] == "thinking"  # the signature kept

    url = server.url("/example/anthropic_thinking.sse")
    return Run(
        {"url": url, "body": {"max_tokens": 64}, "h": {"x-api-key": "k"}, "history": []},
        check=check,
    )


async def readme_stream(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    url = server.url("/example/anthropic_thinking.sse")
    return Run(
        {"url": url, "body": {"max_tokens": 64}, "h": {"x-api-key": "k"}},
        check=complete_from("anthropic", "anthropic_thinking.sse"),
    )


async def http_md_native(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    def check(ns: dict[str, Any]) -> None:
        complete_from("anthropic", "anthropic_thinking.sse")(ns)
        assert ns["client"].is_closed
        sent = [r for r in server.requests if r.path == "/example/anthropic_thinking.sse"]
        assert sent[-1].headers["x-api-key"] == "k"  # the client's default header

    url = server.url("/example/anthropic_thinking.sse")
    return Run({"url": url, "body": {"max_tokens": 64}, "key": "k"}, check=check)


async def readme_sdks(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    # The official SDKs' raw streamed responses, each SDK pointed at an example stream (its
    # client appends /chat/completions or /v1/messages to base_url; the server serves both).
    import anthropic
    import openai

    openai_client = openai.OpenAI(
        api_key="k", base_url=server.url("/example/openai_parallel_tools.sse"), max_retries=0
    )
    stack.callback(openai_client.close)
    anthropic_client = anthropic.Anthropic(
        api_key="k", base_url=server.url("/example/anthropic_thinking.sse"), max_retries=0
    )
    stack.callback(anthropic_client.close)

    def check(ns: dict[str, Any]) -> None:
        paths = [r.path for r in server.requests if r.path.startswith("/example/")]
        assert "/example/openai_parallel_tools.sse/chat/completions" in paths
        assert "/example/anthropic_thinking.sse/v1/messages" in paths

    return Run(
        {
            "openai_client": openai_client,
            "anthropic_client": anthropic_client,
            "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
        },
        before={0: {"model": "gpt-4o"}, 1: {"model": "claude-haiku-4-5"}},
        after={
            0: complete_from("openai", "openai_parallel_tools.sse"),
            1: complete_from("anthropic", "anthropic_thinking.sse"),
        },
        check=check,
    )


async def readme_events(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    rendered: list[str] = []
    response = await opened(stack, server.url("/example/cohere_v2_citations.sse"))

    def check(ns: dict[str, Any]) -> None:
        message = folded("cohere_v2_citations.sse", "cohere-v2")
        assert "".join(rendered) == message.text
        assert ns["reason"] == message.finish_reason == "stop"

    return Run({"response": response, "render": rendered.append}, check=check)


async def readme_aiohttp(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    url = server.url("/example/cohere_v2_citations.sse")
    return Run(
        {"url": url, "body": {"stream": True}},
        check=complete_from("cohere-v2", "cohere_v2_citations.sse"),
    )


async def readme_folder(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    shown: list[sf.Message] = []
    response = await opened(stack, server.url("/example/anthropic_thinking.sse"))

    def check(ns: dict[str, Any]) -> None:
        complete_from("anthropic", "anthropic_thinking.sse")(ns)
        assert ns["message"] == folded("anthropic_thinking.sse", "anthropic")
        assert not shown[0].complete  # a snapshot per event, the first one of an open message
        assert [m.text for m in shown] == sorted((m.text for m in shown), key=len)  # it grows
        assert shown[-1].text == ns["message"].text

    return Run({"response": response, "show": shown.append}, check=check)


async def readme_errors(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    # Anthropic's in-stream `event: error` (overloaded) after some text: the StreamError branch.
    logged: list[tuple[Any, ...]] = []
    response = await opened(stack, server.url("/example/anthropic_overloaded_error.sse"))

    def check(ns: dict[str, Any]) -> None:
        assert logged == [("anthropic", "overloaded_error", "Overloaded", False)]
        message = ns["message"]
        assert isinstance(message, sf.Message)
        assert not message.complete
        assert message.finish_reason == "error"
        assert message.text.startswith("Here is a summary of the quarterly report:")

    def log(*args: Any) -> None:
        logged.append(args)

    return Run({"response": response, "log": log}, check=check)


async def events_md(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    rendered: list[str] = []
    cited: list[tuple[Any, ...]] = []

    def check(ns: dict[str, Any]) -> None:
        message = folded("cohere_v2_citations.sse", "cohere-v2")
        assert "".join(rendered) == message.text
        assert cited == [(c.start, c.end, c.sources) for c in message.citations]
        assert cited

    return Run(
        {
            "url": server.url("/example/cohere_v2_citations.sse"),
            "body": {"stream": True},
            "render": rendered.append,
            "cite": lambda *citation: cited.append(citation),
        },
        check=check,
    )


async def framing_md(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    # Cut inside an event: the unterminated last event is discarded, and reported.
    body = example("anthropic_thinking.sse")
    cut = body.index(b"\n\n", len(body) // 2) - 5
    response = await opened(stack, server.url("/example/anthropic_thinking.sse", end=cut))

    def check(ns: dict[str, Any]) -> None:
        assert ns["dec"].dropped_partial is True
        assert ns["ev"].json()["type"]  # the last complete event, parsed

    return Run({"response": response}, check=check)


async def partial_json_md(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    fragments = ['{"path": "a.t', 'xt", "lines": [1, 2', "]}"]

    def check(ns: dict[str, Any]) -> None:
        acc = ns["acc"]
        assert acc.is_complete
        assert acc.value() == json.loads("".join(fragments))
        assert ns["preview"] == acc.value()

    return Run({"fragments": fragments}, check=check)


async def fold_md(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    sync = await opened(stack, server.url("/example/anthropic_thinking.sse"))
    client = await stack.enter_async_context(httpx.AsyncClient())
    gemini = await stack.enter_async_context(
        client.stream("GET", server.url("/example/gemini_thinking.sse"))
    )
    history = [{"role": "user", "parts": [{"text": "Why is the sky blue?"}]}]
    tool_results: list[Any] = []

    def check(ns: dict[str, Any]) -> None:
        message = ns["message"]
        assert ns["next_turn"] == [*history, message.to_request()]
        assert ns["next_turn"][-1]["role"] == "model"

    return Run(
        {"history": history, "tool_results": tool_results},
        before={1: {"response": sync}, 2: {"response": gemini}},
        after={
            1: complete_from("anthropic", "anthropic_thinking.sse"),
            2: complete_from("gemini", "gemini_thinking.sse"),
        },
        check=check,
    )


async def fold_md_timing(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    response = await opened(stack, server.url("/generate", provider="openai", n=20))

    def check(ns: dict[str, Any]) -> None:
        t = ns["t"]
        assert isinstance(t, sf.StreamTiming) and t is ns["message"].timing
        assert t.reads >= 1 and t.first_byte is not None and t.first_token is not None
        assert t.first_byte <= t.first_token <= ns["t"].last_token

    return Run({"response": response}, check=check)


async def http_md_responses(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    # Statement number -> what it folds (statement 2 makes aiohttp's timeout).
    cases: dict[int, tuple[ProviderName, str]] = {
        0: ("anthropic", "anthropic_thinking.sse"),
        1: ("openai", "openai_parallel_tools.sse"),
        3: ("cohere-v2", "cohere_v2_citations.sse"),
        4: ("openai", "openai_parallel_tools.sse"),
    }
    return Run(
        {"body": {"stream": True}, "h": {"authorization": "Bearer k"}},
        before={i: {"url": server.url(f"/example/{name}")} for i, (_, name) in cases.items()},
        after={i: complete_from(*case) for i, case in cases.items()},
    )


async def http_md_stream(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    seen: list[tuple[sf.Event, sf.Message]] = []
    my_async_client = await stack.enter_async_context(httpx.AsyncClient())

    def render(event: sf.Event, snapshot: sf.Message) -> None:
        seen.append((event, copy.deepcopy(snapshot)))

    def check_sync(ns: dict[str, Any]) -> None:
        complete_from("anthropic", "anthropic_thinking.sse")(ns)
        assert isinstance(seen[-1][0], sf.MessageEnd)  # each event went through the loop
        assert seen[-1][1].text == ns["message"].text  # and into the fold it snapshots
        assert not seen[0][1].complete

    return Run(
        {"body": {"stream": True}, "h": {}, "render": render, "my_async_client": my_async_client},
        before={
            0: {"url": server.url("/example/anthropic_thinking.sse")},
            1: {"url": server.url("/example/openai_parallel_tools.sse")},
        },
        after={0: check_sync, 1: complete_from("openai", "openai_parallel_tools.sse")},
        check=lambda ns: assert_open(my_async_client),
    )


def assert_open(client: httpx.AsyncClient) -> None:
    assert not client.is_closed  # a client= you pass stays open


async def http_md_resumable(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    def check(ns: dict[str, Any]) -> None:
        ns["client"].close()  # the snippet's own client, made for the process
        message = ns["message"]
        assert message.complete
        assert message.provider == "clouisle"
        assert message.text == "À Zürich il fait 21 °C et du soleil ☀️."
        assert message.metadata["run_id"] == "run-1"

    return Run({"run_stream_url": server.url("/stream/clouisle")}, check=check)


async def http_md_catch_up(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    # A run still going: its catch-up holds the events up to sequence 6.
    run_url = server.url("/run/clouisle-run@6")

    def check(ns: dict[str, Any]) -> None:
        ns["client"].close()  # the snippet's own client
        assert ns["caught_up"]["data"][-1]["sequence"] == 6
        assert ns["message"] == sf.fold([STREAMS["clouisle-run"][2]], provider="clouisle")
        assert not ns["message"].warnings  # nothing of the catch-up came twice
        streams = [r for r in server.requests if r.path == "/run/clouisle-run@6/stream"]
        assert [r.query for r in streams] == [{"after_sequence": "6"}]

    return Run({"run_url": run_url}, check=check)


async def http_md_retries(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    # Overloaded twice (Anthropic's 529, asking for no wait), then the stream.
    url = server.url(
        "/example/anthropic_thinking.sse", rid="docs-retries", status=529, on="0,1", retry_after=0
    )

    def check(ns: dict[str, Any]) -> None:
        complete_from("anthropic", "anthropic_thinking.sse")(ns)
        assert len(server.seen("docs-retries")) == 3

    return Run({"url": url, "body": {"stream": True}}, check=check)


async def http_md_retry_resumable(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    # The run stream refuses the first request (503, no wait asked), then streams.
    client = stack.enter_context(httpx.Client())
    url = server.url("/stream/clouisle")
    faults: dict[str, str | int] = {"rid": "docs-retry-resumable", "status": 503, "retry_after": 0}

    def connect(cursor: sf.Cursor) -> Any:
        # httpx 0.28 replaces the URL's query with params=: every parameter goes in params.
        params = {**faults, **cursor.params}
        return client.stream("GET", url, params=params, headers=cursor.headers)

    def check(ns: dict[str, Any]) -> None:
        assert ns["message"].complete
        assert ns["message"].provider == "clouisle"
        assert ns["attempt"] == 1
        assert len(server.seen("docs-retry-resumable")) == 2

    return Run({"connect": connect}, check=check)


async def serving_md_writer(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    response = await opened(stack, server.url("/example/anthropic_thinking.sse"))
    want = folded("anthropic_thinking.sse", "anthropic")

    def check(ns: dict[str, Any]) -> None:
        message = ns["message"]
        assert (message.text, message.reasoning, message.usage.output_tokens) == (
            want.text,
            want.reasoning,
            want.usage.output_tokens if want.usage else None,
        )
        assert ns["body"].endswith(b"data: [DONE]\n\n")
        assert ns["w"].dropped_by["signature"] == 1  # not Anthropic's place: dropped

    return Run({"response": response}, check=check)


async def serving_md_relay(server: StreamServer, stack: contextlib.AsyncExitStack) -> Run:
    import io

    response = await opened(stack, server.url("/example/anthropic_thinking.sse"))
    downstream = io.BytesIO()

    def check(ns: dict[str, Any]) -> None:
        assert ns["relay"].message == folded("anthropic_thinking.sse", "anthropic")
        assert sf.fold([downstream.getvalue()], provider="openai").text == ns["relay"].message.text

    return Run({"response": response, "downstream": downstream}, check=check)


SNIPPETS: dict[tuple[str, str], Callable[..., Any]] = {
    ("README.md", "import streamfold as sf"): readme_stream,
    ("README.md", "import httpx"): readme_fold,
    ("README.md", "with openai_client.chat.completions.with_streaming_response.create("): (
        readme_sdks
    ),
    ("README.md", 'for event in sf.events(response.iter_bytes(), provider="cohere-v2"):'): (
        readme_events
    ),
    (
        "README.md",
        "timeout = aiohttp.ClientTimeout(total=None, sock_connect=5, sock_read=600)",
    ): readme_aiohttp,
    ("README.md", 'folder = sf.Folder("anthropic")'): readme_folder,
    ("README.md", "try:"): readme_errors,
    (
        "docs/events.md",
        "async with httpx.AsyncClient(timeout=httpx.Timeout(600, connect=5)) as client:",
    ): events_md,
    ("docs/framing.md", "dec = sf.SSEDecoder(max_event_bytes=16 * 2**20)"): framing_md,
    ("docs/partial-json.md", "acc = sf.JsonAccumulator()"): partial_json_md,
    ("docs/fold.md", "import streamfold as sf"): fold_md,
    ("docs/fold.md", 'message = sf.fold(response, provider="openai")'): fold_md_timing,
    (
        "docs/http.md",
        "with httpx.Client(timeout=httpx.Timeout(600, connect=5)) as client:  # 600 s read, 5 s "
        "connect",
    ): http_md_responses,
    (
        "docs/http.md",
        'client = sf.Client(headers={"x-api-key": key})         # one per process: it pools '
        "connections",
    ): http_md_native,
    (
        "docs/http.md",
        'with sf.stream("POST", url, provider="anthropic", json=body, headers=h) as s:',
    ): http_md_stream,
    (
        "docs/http.md",
        "client = httpx.Client(timeout=httpx.Timeout(600, connect=5))   # as sf.stream's client",
    ): http_md_resumable,
    (
        "docs/http.md",
        "client = httpx.Client(timeout=httpx.Timeout(600, connect=5))   # a run's catch-up, then "
        "its stream",
    ): http_md_catch_up,
    (
        "docs/http.md",
        'with sf.stream("POST", url, provider="anthropic", json=body, max_retries=4) as s:',
    ): http_md_retries,
    ("docs/http.md", "import time"): http_md_retry_resumable,
    ("docs/serving.md", 'w = sf.Writer("openai", source="anthropic")'): serving_md_writer,
    ("docs/serving.md", 'relay = sf.relay(response, provider="anthropic", to="openai")'): (
        serving_md_relay
    ),
}


def test_every_snippet_has_an_entry() -> None:
    found = [s.key for s in snippets()]
    assert len(found) == len(set(found)), "two snippets of one file begin alike"
    assert sorted(found) == sorted(SNIPPETS)


async def run_snippet(snippet: Snippet, server: StreamServer) -> None:
    tree = ast.parse(snippet.code)
    ast.increment_lineno(tree, snippet.line - 1)  # tracebacks point into the Markdown
    names: dict[str, Any] = {
        "__name__": "snippet",
        "sf": sf,
        "httpx": httpx,
        "aiohttp": aiohttp,
        "requests": requests,
    }
    async with contextlib.AsyncExitStack() as stack:
        run: Run = await SNIPPETS[snippet.key](server, stack)
        names.update(run.names)
        for number, statement in enumerate(tree.body):
            names.update(run.before.get(number, {}))
            code = compile(
                ast.Module([statement], type_ignores=[]),
                str(ROOT / snippet.doc),
                "exec",
                flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
            )
            if code.co_flags & inspect.CO_COROUTINE:
                await eval(code, names)
            else:
                exec(code, names)
            if number in run.after:
                run.after[number](names)
        run.check(names)


@pytest.mark.parametrize("snippet", snippets(), ids=lambda s: f"{s.doc}:{s.line}")
def test_snippet_runs_as_written(snippet: Snippet, stream_server: StreamServer) -> None:
    asyncio.run(run_snippet(snippet, stream_server))
