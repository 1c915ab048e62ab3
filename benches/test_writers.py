"""Writers and the relay (issue 24): sf.Writer beside a hand-written Python writer (the
provider's chunk ``dict``, ``json.dumps``, ``f"data: {...}\\n\\n"``) for the same events; the
relay's CPU per event at one event per read (an Anthropic stream written as OpenAI chunks),
beside a hand-written stack (lines, ``json.loads``, the hand-written writer) and LiteLLM's
``CustomStreamWrapper`` doing the same translation."""

from __future__ import annotations

import json
from typing import Any

import pytest

import peers
from harness import N_EVENTS, measure
from workloads import stream

sf = peers.sf


class HandWrittenOpenAI:
    """What a service writes by hand: one Chat Completions chunk dict per event."""

    def __init__(self) -> None:
        self.id: str | None = None
        self.model: str | None = None
        self.calls: dict[int, int] = {}

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(body)}\n\n".encode()

    def write(self, e: Any) -> bytes:
        t = e.type
        if t == "block_delta":
            if e.kind == "tool_call":
                call = {"index": self.calls[e.index], "function": {"arguments": e.text}}
                return self.chunk({"tool_calls": [call]})
            return self.chunk({"content": e.text})
        if t == "block_start" and e.kind == "tool_call":
            self.calls[e.index] = len(self.calls)
            fn = {"name": e.name, "arguments": ""}
            call = {"index": self.calls[e.index], "id": e.id, "type": "function", "function": fn}
            return self.chunk({"tool_calls": [call]})
        if t == "message_start":
            self.id, self.model = e.id, e.model
            return self.chunk({"role": "assistant", "content": ""})
        if t == "message_end":
            return self.chunk({}, "stop") + b"data: [DONE]\n\n"
        return b""


def _events(provider: str) -> list[Any]:
    return list(sf.events([stream(provider, N_EVENTS).data], provider=provider))


def _check(source: str) -> Any:
    want = sf.fold([stream(source, N_EVENTS).data], provider=source)

    def check(out: bytes) -> None:
        got = sf.fold([out], provider="openai")
        assert got.text == want.text
        assert [c.arguments for c in got.tool_calls] == [c.arguments for c in want.tool_calls]

    return check


def _writer_impls() -> list[peers.Impl]:
    def streamfold(events: list[Any]) -> bytes:
        w = sf.Writer("openai")
        write = w.write
        out: bytes = b"".join([write(e) for e in events]) + w.close()
        return out

    def hand(events: list[Any]) -> bytes:
        w = HandWrittenOpenAI()
        return b"".join([w.write(e) for e in events])

    return [
        peers.Impl("streamfold Writer", streamfold, peers.sf_missing("Writer")),
        peers.Impl("hand-written dict + json.dumps", hand),
    ]


@pytest.mark.parametrize("source", ["anthropic", "openai"])
@pytest.mark.parametrize("impl_index", [0, 1], ids=["streamfold", "hand-written"])
def test_writer(benchmark: Any, source: str, impl_index: int) -> None:
    events = _events(source)
    impl = _writer_impls()[impl_index]
    measure(
        benchmark,
        impl,
        (events,),
        group=f"writer | {source} events as openai chunks",
        check=_check(source),
        primary=impl_index == 0,
        events=len(events),
    )


def _relay_impls() -> list[peers.Impl]:
    def streamfold(reads: list[bytes]) -> bytes:
        return b"".join(sf.relay(reads, provider="anthropic", to="openai"))

    def hand(reads: list[bytes]) -> bytes:
        # An SSE reader by lines, json.loads, and the hand-written writer above.
        out = []
        w = HandWrittenOpenAI()
        calls: dict[int, str] = {}
        for read in reads:
            for line in read.decode().split("\n"):
                if not line.startswith("data:"):
                    continue
                p = json.loads(line[5:])
                t = p.get("type")
                if t == "message_start":
                    m = p["message"]
                    out.append(w.write(sf.MessageStart(id=m["id"], model=m["model"])))
                elif t == "content_block_start":
                    block = p["content_block"]
                    if block["type"] == "tool_use":
                        calls[p["index"]] = block["id"]
                        out.append(
                            w.write(
                                sf.BlockStart(
                                    index=p["index"],
                                    kind="tool_call",
                                    id=block["id"],
                                    name=block["name"],
                                )
                            )
                        )
                elif t == "content_block_delta":
                    d = p["delta"]
                    kind = "tool_call" if d["type"] == "input_json_delta" else "text"
                    text = d.get("partial_json", d.get("text", ""))
                    out.append(w.write(sf.BlockDelta(index=p["index"], kind=kind, text=text)))
                elif t == "message_stop":
                    out.append(w.write(sf.MessageEnd(finish_reason="stop", raw_finish_reason=None)))
        return b"".join(out)

    def litellm(reads: list[bytes]) -> bytes:
        # LiteLLM's proxy path: its Anthropic chunk parser over the lines (as httpx's
        # iter_lines gives them), CustomStreamWrapper to OpenAI chunks, each dumped as the
        # proxy dumps it.
        import datetime
        import uuid

        from litellm.litellm_core_utils.litellm_logging import Logging
        from litellm.litellm_core_utils.streaming_handler import CustomStreamWrapper
        from litellm.llms.anthropic.chat.handler import ModelResponseIterator

        lines = (line for read in reads for line in read.decode().split("\n") if line)
        logging_obj = Logging(
            model="claude-sonnet-4-5",
            messages=[],
            stream=True,
            call_type="completion",
            start_time=datetime.datetime.now(),
            litellm_call_id=str(uuid.uuid4()),
            function_id="bench",
        )
        wrapper = CustomStreamWrapper(
            completion_stream=ModelResponseIterator(lines, sync_stream=True),
            model="claude-sonnet-4-5",
            logging_obj=logging_obj,
            custom_llm_provider="anthropic",
        )
        out = [
            f"data: {c.model_dump_json(exclude_none=True, exclude_unset=True)}\n\n".encode()
            for c in wrapper
        ]
        return b"".join(out) + b"data: [DONE]\n\n"

    return [
        peers.Impl("streamfold relay", streamfold, peers.sf_missing("relay")),
        peers.Impl("hand-written: lines + json.loads + dict + json.dumps", hand),
        peers.Impl("LiteLLM CustomStreamWrapper", litellm, peers._module("litellm")),
    ]


def _reads(provider: str) -> list[bytes]:
    """One event per read, as a service reads a live stream."""
    data = stream(provider, N_EVENTS).data
    return [block + b"\n\n" for block in data.split(b"\n\n") if block]


@pytest.mark.parametrize("impl_index", [0, 1, 2], ids=["streamfold", "hand-written", "litellm"])
def test_relay(benchmark: Any, impl_index: int) -> None:
    reads = _reads("anthropic")
    impl = _relay_impls()[impl_index]
    measure(
        benchmark,
        impl,
        (reads,),
        group="relay | anthropic stream to openai chunks | one event per read",
        check=_check("anthropic"),
        primary=impl_index == 0,
        events=len(reads),
    )
