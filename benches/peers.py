"""Every implementation the benchmarks time, streamfold and its peers, behind one shape.

An :class:`Impl` is a callable over the list of reads of one stream (or the fragments of one
JSON text) plus ``missing``: why it cannot run here (a peer not installed, a streamfold feature
not landed yet). Each adapter does what that library's own users do, from the bytes to the
result, and its result is checked against the workload before anything is timed.
"""

from __future__ import annotations

import codecs
import contextlib
import importlib.metadata
import importlib.util
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import minimal

# LiteLLM otherwise fetches a price list from the network when imported.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_TELEMETRY", "False")

#: streamfold, or None when it cannot be imported (every streamfold row is then skipped).
sf: Any
try:
    import streamfold as _streamfold

    sf = _streamfold
    SF_IMPORT_ERROR = ""
except ImportError as exc:
    sf = None
    SF_IMPORT_ERROR = f"streamfold is not importable: {exc}"


@dataclass(frozen=True)
class Impl:
    name: str
    fn: Callable[..., Any]
    missing: str | None = None


def _absent(name: str, reason: str) -> Impl:
    def unavailable(*_args: object) -> None:
        raise RuntimeError(reason)

    return Impl(name, unavailable, reason)


def _module(name: str) -> str | None:
    """Why the module cannot be imported, or None when it can."""
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        found = None
    return None if found is not None else f"{name} is not installed"


def version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


PEER_DISTRIBUTIONS = (
    "httpx",
    "httpx-sse",
    "sseclient-py",
    "openai",
    "anthropic",
    "litellm",
    "langchain-core",
    "jiter",
    "partial-json-parser",
    "orjson",
    "pytest-benchmark",
)


# ---------------------------------------------------------------------------------------------
# what streamfold has landed


def sf_missing(feature: str) -> str | None:
    """Why a streamfold feature is not usable yet, naming the issue that brings it."""
    if sf is None:
        return SF_IMPORT_ERROR
    if feature == "JsonAccumulator":
        if not hasattr(sf, "JsonAccumulator"):
            return "sf.JsonAccumulator has not landed yet (issue 3)"
        if getattr(sf._core, "JsonAccumulator", None) is not sf.JsonAccumulator:
            return "sf.JsonAccumulator is the pure-Python stand-in; the Rust one has not landed"
    if feature in ("fold",) and not hasattr(sf, "fold"):
        return "sf.fold has not landed yet (issue 5)"
    if feature.startswith("provider:"):
        name = feature.split(":", 1)[1]
        from streamfold._providers.registry import _REGISTRY

        module = _REGISTRY.get(name, ("?", ""))[0]
        if importlib.util.find_spec(f"streamfold._providers.{module}") is None:
            return f"the {name!r} provider has not landed yet (issue 4)"
    return None


# ---------------------------------------------------------------------------------------------
# framing: reads -> (events, characters of data)


def _count(events: Iterable[Any]) -> tuple[int, int]:
    n = chars = 0
    for ev in events:
        n += 1
        chars += len(ev.data)
    return n, chars


def sf_frames(chunks: list[bytes]) -> tuple[int, int]:
    dec = sf.SSEDecoder(max_event_bytes=1 << 30)
    n = chars = 0
    for chunk in chunks:
        for ev in dec.feed(chunk):
            n += 1
            chars += len(ev.data)
    for ev in dec.close():
        n += 1
        chars += len(ev.data)
    return n, chars


def _hand_frames(
    dec: minimal.MinimalSSE | minimal.PlainSSE, chunks: list[bytes]
) -> tuple[int, int]:
    n = chars = 0
    for chunk in chunks:
        for _event, data in dec.feed(chunk):
            n += 1
            chars += len(data)
    return n, chars


def minimal_frames(chunks: list[bytes]) -> tuple[int, int]:
    return _hand_frames(minimal.MinimalSSE(), chunks)


def plain_frames(chunks: list[bytes]) -> tuple[int, int]:
    return _hand_frames(minimal.PlainSSE(), chunks)


def _httpx_sse_iter(chunks: Iterable[bytes]) -> Iterator[Any]:
    """What ``httpx_sse.EventSource.iter_sse`` does over ``response.iter_text()``."""
    from httpx_sse._decoders import SSEDecoder, SSELineDecoder

    text = codecs.getincrementaldecoder("utf-8")(errors="replace")
    lines = SSELineDecoder()
    sse = SSEDecoder()
    for chunk in chunks:
        for line in lines.decode(text.decode(chunk)):
            ev = sse.decode(line)
            if ev is not None:
                yield ev
    for line in lines.decode(text.decode(b"", final=True)) + lines.flush():
        ev = sse.decode(line)
        if ev is not None:
            yield ev


def httpx_sse_frames(chunks: list[bytes]) -> tuple[int, int]:
    return _count(_httpx_sse_iter(chunks))


def openai_frames(chunks: list[bytes]) -> tuple[int, int]:
    from openai._streaming import SSEDecoder

    return _count(SSEDecoder().iter_bytes(iter(chunks)))


def anthropic_frames(chunks: list[bytes]) -> tuple[int, int]:
    from anthropic._streaming import SSEDecoder

    return _count(SSEDecoder().iter_bytes(iter(chunks)))


def sseclient_frames(chunks: list[bytes]) -> tuple[int, int]:
    from sseclient import SSEClient

    return _count(SSEClient(iter(chunks)).events())


def framers() -> list[Impl]:
    return [
        Impl("streamfold", sf_frames, sf_missing("SSEDecoder")),
        Impl("minimal", minimal_frames),
        Impl("minimal, plain", plain_frames),
        Impl("httpx-sse", httpx_sse_frames, _module("httpx_sse")),
        Impl("openai-sdk", openai_frames, _module("openai")),
        Impl("anthropic-sdk", anthropic_frames, _module("anthropic")),
        Impl("sseclient-py", sseclient_frames, _module("sseclient")),
    ]


# ---------------------------------------------------------------------------------------------
# framing + JSON: reads -> parsed payloads


def sf_frames_json(chunks: list[bytes]) -> int:
    dec = sf.SSEDecoder()
    n = 0
    for chunk in chunks:
        for ev in dec.feed(chunk):
            try:
                ev.json()
            except ValueError:  # the one ``[DONE]``
                if ev.data != "[DONE]":
                    raise
            n += 1
    return n + len(dec.close())


def minimal_frames_orjson(chunks: list[bytes]) -> int:
    return len(minimal.frames_json(chunks))


def minimal_frames_json(chunks: list[bytes]) -> int:
    dec = minimal.MinimalSSE()
    loads = json.loads
    n = 0
    for chunk in chunks:
        for _event, data in dec.feed(chunk):
            if data != "[DONE]":
                loads(data)
            n += 1
    return n


def httpx_sse_json(chunks: list[bytes]) -> int:
    loads = json.loads
    n = 0
    for ev in _httpx_sse_iter(chunks):
        if ev.data != "[DONE]":
            loads(ev.data)
        n += 1
    return n


def openai_json(chunks: list[bytes]) -> int:
    from openai._streaming import SSEDecoder

    n = 0
    for ev in SSEDecoder().iter_bytes(iter(chunks)):
        if ev.data != "[DONE]":
            ev.json()
        n += 1
    return n


def framers_json() -> list[Impl]:
    return [
        Impl("streamfold", sf_frames_json, sf_missing("SSEDecoder")),
        Impl("minimal+orjson", minimal_frames_orjson, _module("orjson")),
        Impl("minimal+json", minimal_frames_json),
        Impl("httpx-sse+json", httpx_sse_json, _module("httpx_sse")),
        Impl("openai-sdk+json", openai_json, _module("openai")),
    ]


# ---------------------------------------------------------------------------------------------
# events(): reads -> provider-neutral events


def sf_events(provider: str) -> Callable[[list[bytes]], list[Any]]:
    def run(chunks: list[bytes]) -> list[Any]:
        return list(sf.events(chunks, provider=provider))

    return run


def events_impls(provider: str) -> list[Impl]:
    """``events()`` beside the stages it is built on and the usual hand-rolled stacks."""
    return [
        Impl("streamfold events()", sf_events(provider), sf_missing(f"provider:{provider}")),
        Impl("streamfold SSEDecoder only", sf_frames, sf_missing("SSEDecoder")),
        Impl("streamfold SSEDecoder+json()", sf_frames_json, sf_missing("SSEDecoder")),
        Impl("minimal+orjson", minimal_frames_orjson, _module("orjson")),
        Impl("httpx-sse+json", httpx_sse_json, _module("httpx_sse")),
    ]


# ---------------------------------------------------------------------------------------------
# fold: reads -> the final message, normalised for checking to
#   {"text": str, "tool_calls": [(name, arguments-as-parsed)], "finish_reason": str}


def sf_fold(provider: str) -> Callable[[list[bytes]], Any]:
    def run(chunks: list[bytes]) -> Any:
        return sf.fold(chunks, provider=provider)

    return run


def check_sf_message(msg: Any) -> dict[str, Any]:
    return {
        "text": msg.text,
        "tool_calls": [(tc.name, tc.arguments) for tc in msg.tool_calls],
    }


def check_minimal(msg: dict[str, Any]) -> dict[str, Any]:
    return {
        "text": msg["text"],
        "tool_calls": [(tc["name"], tc["arguments"]) for tc in msg["tool_calls"]],
    }


def openai_stream_state(chunks: list[bytes]) -> Any:
    """The OpenAI SDK's own path: its SSE decoder, ``json``, ``construct_type`` into
    ``ChatCompletionChunk`` (what ``Stream`` does), then ``ChatCompletionStreamState``."""
    from openai._models import construct_type
    from openai._streaming import SSEDecoder
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state: Any = ChatCompletionStreamState()
    for ev in SSEDecoder().iter_bytes(iter(chunks)):
        if ev.data.startswith("[DONE]"):
            break
        chunk = construct_type(type_=ChatCompletionChunk, value=ev.json())
        for _ in state.handle_chunk(chunk):
            pass
    return state.get_final_completion()


def check_openai_completion(c: Any) -> dict[str, Any]:
    msg = c.choices[0].message
    return {
        "text": msg.content,
        "tool_calls": [
            (tc.function.name, json.loads(tc.function.arguments)) for tc in msg.tool_calls or []
        ],
    }


def anthropic_accumulate(chunks: list[bytes]) -> Any:
    """The Anthropic SDK's path: its SSE decoder, ``json``, then ``accumulate_event`` (which
    builds the typed event from the dict, as ``MessageStream`` does)."""
    from anthropic._streaming import SSEDecoder
    from anthropic.lib.streaming._messages import accumulate_event

    snapshot = None
    bufs: dict[int, bytes] = {}
    for ev in SSEDecoder().iter_bytes(iter(chunks)):
        if ev.event == "ping":
            continue
        snapshot = accumulate_event(event=ev.json(), current_snapshot=snapshot, json_bufs=bufs)
    return snapshot


def check_anthropic_message(m: Any) -> dict[str, Any]:
    text = "".join(b.text for b in m.content if b.type == "text")
    tools = [(b.name, b.input) for b in m.content if b.type == "tool_use"]
    return {"text": text, "tool_calls": tools}


def litellm_builder(chunks: list[bytes]) -> Any:
    """LiteLLM's ``stream_chunk_builder`` over the parsed chunks (framed by the minimal framer
    with ``json.loads``, so its cost is the builder's)."""
    import litellm

    parsed = [json.loads(d) for _e, d in minimal.frames(chunks) if d != "[DONE]"]
    return litellm.stream_chunk_builder(parsed)


def check_litellm(r: Any) -> dict[str, Any]:
    msg = r.choices[0].message
    return {
        "text": msg.content,
        "tool_calls": [
            (tc.function.name, json.loads(tc.function.arguments)) for tc in msg.tool_calls or []
        ],
    }


def langchain_chunks(chunks: list[bytes]) -> Any:
    """LangChain's way: each chunk made an ``AIMessageChunk`` (as langchain-openai converts a
    delta) and the chunks summed with ``+``."""
    from langchain_core.messages import AIMessageChunk
    from langchain_core.messages.tool import tool_call_chunk

    total: Any = None
    for _event, data in minimal.frames(chunks):
        if data == "[DONE]":
            continue
        obj = json.loads(data)
        if not obj["choices"]:
            continue
        delta = obj["choices"][0]["delta"]
        tool_chunks = [
            tool_call_chunk(
                name=(tc.get("function") or {}).get("name"),
                args=(tc.get("function") or {}).get("arguments"),
                id=tc.get("id"),
                index=tc.get("index"),
            )
            for tc in delta.get("tool_calls") or ()
        ]
        piece = AIMessageChunk(
            content=delta.get("content") or "", tool_call_chunks=tool_chunks, id=obj["id"]
        )
        total = piece if total is None else total + piece
    return total


def check_langchain(m: Any) -> dict[str, Any]:
    return {"text": m.content, "tool_calls": [(tc["name"], tc["args"]) for tc in m.tool_calls]}


@dataclass(frozen=True)
class Folder:
    impl: Impl
    check: Callable[[Any], dict[str, Any]]


def folders(provider: str) -> list[Folder]:
    rows = [
        Folder(
            Impl("streamfold fold()", sf_fold(provider), sf_missing("fold")),
            check_sf_message,
        ),
        Folder(Impl("minimal fold", minimal.FOLDS[provider], _module("orjson")), check_minimal),
    ]
    if provider == "openai":
        rows += [
            Folder(
                Impl("openai ChatCompletionStreamState", openai_stream_state, _module("openai")),
                check_openai_completion,
            ),
            Folder(
                Impl("litellm stream_chunk_builder", litellm_builder, _module("litellm")),
                check_litellm,
            ),
            Folder(
                Impl("langchain AIMessageChunk +", langchain_chunks, _module("langchain_core")),
                check_langchain,
            ),
        ]
    else:
        rows.append(
            Folder(
                Impl("anthropic accumulate_event", anthropic_accumulate, _module("anthropic")),
                check_anthropic_message,
            )
        )
    return rows


# ---------------------------------------------------------------------------------------------
# the SDKs end to end over an httpx.MockTransport: request, stream, final message


def _transport(chunks: list[bytes], httpx_module: str = "httpx") -> Any:
    httpx = importlib.import_module(httpx_module)

    def handler(request: Any) -> Any:
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=iter(chunks)
        )

    return httpx.MockTransport(handler)


def sf_over_httpx(provider: str) -> Callable[[list[bytes]], Any]:
    def run(chunks: list[bytes]) -> Any:
        import httpx

        with (
            httpx.Client(transport=_transport(chunks)) as client,
            client.stream("POST", "http://bench.invalid/v1/stream", json={}) as response,
        ):
            return sf.fold(response.iter_bytes(), provider=provider)

    return run


def _sdk_httpx() -> str:
    """Recent OpenAI and Anthropic SDKs ship on httpx2, a fork of httpx with the same API."""
    return "httpx2" if importlib.util.find_spec("httpx2") else "httpx"


def openai_client_stream(chunks: list[bytes]) -> Any:
    from openai import OpenAI

    httpx_module = _sdk_httpx()
    httpx: Any = importlib.import_module(httpx_module)
    client = OpenAI(
        api_key="bench",
        base_url="http://bench.invalid/v1",
        http_client=httpx.Client(transport=_transport(chunks, httpx_module)),
        max_retries=0,
    )
    with client.chat.completions.stream(
        model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        for _ in stream:
            pass
        return stream.get_final_completion()


def anthropic_client_stream(chunks: list[bytes]) -> Any:
    from anthropic import Anthropic

    httpx_module = _sdk_httpx()
    httpx: Any = importlib.import_module(httpx_module)
    client = Anthropic(
        api_key="bench",
        base_url="http://bench.invalid",
        http_client=httpx.Client(transport=_transport(chunks, httpx_module)),
        max_retries=0,
    )
    with client.messages.stream(
        model="claude-sonnet-4-20250514",
        max_tokens=1024,
        messages=[{"role": "user", "content": "hi"}],
    ) as stream:
        for _ in stream:
            pass
        return stream.get_final_message()


def clients(provider: str) -> list[Folder]:
    rows = [
        Folder(
            Impl("streamfold fold() over httpx", sf_over_httpx(provider), sf_missing("fold")),
            check_sf_message,
        )
    ]
    if provider == "openai":
        rows.append(
            Folder(
                Impl(
                    "openai client.chat.completions.stream()",
                    openai_client_stream,
                    _module("openai"),
                ),
                check_openai_completion,
            )
        )
    else:
        rows.append(
            Folder(
                Impl(
                    "anthropic client.messages.stream()",
                    anthropic_client_stream,
                    _module("anthropic"),
                ),
                check_anthropic_message,
            )
        )
    return rows


# ---------------------------------------------------------------------------------------------
# partial JSON: fragments -> a preview after every fragment, and the final value


def sf_partial(frags: list[str]) -> Any:
    acc = sf.JsonAccumulator()
    for f in frags:
        acc.push(f)
        acc.partial()
    return acc.value()


def jiter_reparse(frags: list[str]) -> Any:
    """What the OpenAI and Anthropic SDKs do: re-parse the whole buffer after every fragment."""
    from jiter import from_json

    buf = b""
    value = None
    for f in frags:
        buf += f.encode()
        value = from_json(buf, partial_mode="trailing-strings")
    return value


def partial_json_parser(frags: list[str]) -> Any:
    from partial_json_parser import loads

    buf = ""
    value = None
    for f in frags:
        buf += f
        value = loads(buf)
    return value


def json_attempts(frags: list[str]) -> Any:
    """``json.loads`` tried after every fragment; only the last attempt succeeds."""
    buf = ""
    value = None
    for f in frags:
        buf += f
        with contextlib.suppress(ValueError):
            value = json.loads(buf)
    return value


def partial_parsers() -> list[Impl]:
    return [
        Impl("streamfold JsonAccumulator", sf_partial, sf_missing("JsonAccumulator")),
        Impl("jiter re-parse", jiter_reparse, _module("jiter")),
        Impl("partial-json-parser", partial_json_parser, _module("partial_json_parser")),
        Impl("json.loads attempts", json_attempts),
    ]
