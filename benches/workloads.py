"""The benchmark inputs, generated from a fixed seed so every run measures the same bytes.

Run as a script to write them to a folder (the Rust ceiling bench and the callgrind children
read the same files)::

    python benches/workloads.py target/bench-data

Streams carry mixed ASCII and multi-byte text (accents, Cyrillic, CJK, emoji), as real model
output does, and end with one tool call whose arguments arrive in small fragments.
"""

from __future__ import annotations

import functools
import itertools
import json
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

SEED = 20250501

#: Where the recorded captures live when the shared folder is beside the project.
CAPTURES = Path(__file__).resolve().parents[1].parent / "shared" / "captures"

_SENTENCE = (
    "the model streams tokens to the client while the server keeps the connection open and "
    "every delta carries a few characters of the answer so parsers must be fast and exact"
)
_WORDS_ASCII = _SENTENCE.split(" ")
_WORDS_MULTI = [
    "naïve",
    "café",
    "über",
    "déjà",
    "данные",
    "поток",
    "日本語",
    "東京",
    "数据流",
    "한국어",
    "🙂",
    "🚀",
    "✓",
    "€42",
    "ñandú",
    "Ωmega",
]

_JSON = {"separators": (",", ":"), "ensure_ascii": False}


def _dumps(obj: object) -> str:
    return json.dumps(obj, **_JSON)  # type: ignore[arg-type]


def _text_deltas(rng: random.Random, count: int) -> list[str]:
    """``count`` token-sized deltas: 1-4 words, about one word in five multi-byte."""
    out = []
    for _ in range(count):
        words = [
            rng.choice(_WORDS_MULTI) if rng.random() < 0.2 else rng.choice(_WORDS_ASCII)
            for _ in range(rng.randint(1, 4))
        ]
        out.append(" " + " ".join(words))
    return out


def tool_arguments(size: int, seed: int = SEED) -> str:
    """A JSON object of about ``size`` bytes shaped like a ``write_file`` call: nested keys,
    numbers, literals, and a long string with escapes and multi-byte text."""
    rng = random.Random(seed + size)
    lines: list[str] = []
    total = 0
    while total < size * 0.8:
        words = [
            rng.choice(_WORDS_MULTI) if rng.random() < 0.15 else rng.choice(_WORDS_ASCII)
            for _ in range(rng.randint(3, 10))
        ]
        line = '    "' + " ".join(words) + '",\t# ok\\'
        lines.append(line)
        total += len(line.encode()) + 4
    doc: dict[str, object] = {
        "path": "src/generated/module.py",
        "mode": "overwrite",
        "options": {"create_dirs": True, "backup": False, "mode": 420, "encoding": "utf-8"},
        "content": "\n".join(lines),
        "checks": [],
    }
    checks: list[object] = []
    doc["checks"] = checks
    length = len(_dumps(doc).encode())
    while length < size:
        check = {"line": rng.randint(1, 10**6), "score": round(rng.random(), 6), "ok": True}
        checks.append(check)
        length += len(_dumps(check)) + 1
    return _dumps(doc)


def fragments(text: str, lo: int, hi: int, seed: int = SEED) -> list[str]:
    """Split ``text`` into pieces of ``lo``..``hi`` characters, as providers stream arguments."""
    rng = random.Random(seed ^ len(text))
    out = []
    i = 0
    while i < len(text):
        n = rng.randint(lo, hi)
        out.append(text[i : i + n])
        i += n
    return out


@dataclass(frozen=True)
class Stream:
    """One generated response body and what a correct fold of it must contain."""

    name: str
    provider: str
    data: bytes
    events: int  # SSE events a conforming decoder dispatches (pings and [DONE] included)
    text: str
    tool_name: str
    tool_arguments: str
    finish_reason: str
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.data)


def _split_tool_args(rng: random.Random, args: str, count: int) -> list[str]:
    """Split ``args`` into exactly ``count`` non-empty fragments (or fewer if too short)."""
    count = max(1, min(count, len(args)))
    cuts = sorted(rng.sample(range(1, len(args)), count - 1)) if count > 1 else []
    bounds = [0, *cuts, len(args)]
    return [args[a:b] for a, b in itertools.pairwise(bounds)]


@functools.cache
def openai_stream(n_events: int = 10_000, seed: int = SEED) -> Stream:
    """An OpenAI Chat Completions stream of exactly ``n_events`` SSE events: a role chunk,
    text deltas, one tool call streamed in fragments, the finish chunk, the usage chunk,
    ``[DONE]``. The last 5% of events carry the tool-call fragments."""
    rng = random.Random(seed + n_events)
    base = {
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion.chunk",
        "created": 1741569952,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_eb9dce56a8",
    }
    n_tool = max(2, n_events // 20)
    n_text = n_events - n_tool - 4
    deltas = _text_deltas(rng, n_text)
    args = tool_arguments(max(200, n_tool * 8), seed)
    arg_frags = _split_tool_args(rng, args, n_tool - 1)

    def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        body = {**base, "choices": [choice]}
        return b"data: " + _dumps(body).encode() + b"\n\n"

    parts = [chunk({"role": "assistant", "content": "", "refusal": None})]
    parts.extend(chunk({"content": d}) for d in deltas)
    call = {
        "index": 0,
        "id": "call_DdmO9pD3xa9XTPNJ32zg2hcA",
        "type": "function",
        "function": {"name": "write_file", "arguments": ""},
    }
    parts.append(chunk({"tool_calls": [call]}))
    parts.extend(
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in arg_frags
    )
    parts.append(chunk({}, "tool_calls"))
    usage = {
        "prompt_tokens": 812,
        "completion_tokens": n_events,
        "total_tokens": 812 + n_events,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }
    parts.append(b"data: " + _dumps({**base, "choices": [], "usage": usage}).encode() + b"\n\n")
    parts.append(b"data: [DONE]\n\n")
    events = len(parts)
    return Stream(
        name=f"openai-{n_events}",
        provider="openai",
        data=b"".join(parts),
        events=events,
        text="".join(deltas),
        tool_name="write_file",
        tool_arguments="".join(arg_frags),
        finish_reason="tool_calls",
        extra={"usage": usage},
    )


@functools.cache
def anthropic_stream(n_events: int = 10_000, seed: int = SEED) -> Stream:
    """An Anthropic Messages stream of exactly ``n_events`` SSE events: message_start, a text
    block (with a ping inside), a tool_use block whose input arrives as ``input_json_delta``
    fragments, message_delta, message_stop."""
    rng = random.Random(seed + n_events + 1)
    n_tool = max(2, n_events // 20)
    n_text = n_events - n_tool - 8
    deltas = _text_deltas(rng, n_text)
    args = tool_arguments(max(200, n_tool * 8), seed)
    arg_frags = _split_tool_args(rng, args, n_tool)

    def ev(name: str, body: dict[str, object]) -> bytes:
        return f"event: {name}\ndata: {_dumps({'type': name, **body})}\n\n".encode()

    message: dict[str, object] = {
        "id": "msg_0138UNF3YbNp49KkqZtUBWqz",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 506,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 1,
        },
    }
    parts = [
        ev("message_start", {"message": message}),
        ev("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        ev("ping", {}),
    ]
    parts.extend(
        ev("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": d}})
        for d in deltas
    )
    parts.append(ev("content_block_stop", {"index": 0}))
    block = {"type": "tool_use", "id": "toolu_014x5X91kx3fvdhpLvwXZWE2", "name": "write_file"}
    parts.append(ev("content_block_start", {"index": 1, "content_block": {**block, "input": {}}}))
    parts.extend(
        ev(
            "content_block_delta",
            {"index": 1, "delta": {"type": "input_json_delta", "partial_json": f}},
        )
        for f in arg_frags
    )
    parts.append(ev("content_block_stop", {"index": 1}))
    parts.append(
        ev(
            "message_delta",
            {
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": n_events},
            },
        )
    )
    parts.append(ev("message_stop", {}))
    # Pad to exactly n_events with pings spread through the text block, as the API does.
    while len(parts) < n_events:
        parts.insert(rng.randint(3, len(parts) - 5), ev("ping", {}))
    return Stream(
        name=f"anthropic-{n_events}",
        provider="anthropic",
        data=b"".join(parts),
        events=len(parts),
        text="".join(deltas),
        tool_name="write_file",
        tool_arguments="".join(arg_frags),
        finish_reason="tool_use",
    )


def stream(provider: str, n_events: int = 10_000) -> Stream:
    if provider == "openai":
        return openai_stream(n_events)
    if provider == "anthropic":
        return anthropic_stream(n_events)
    raise ValueError(provider)


# ---------------------------------------------------------------------------------------------
# reads


def fixed_reads(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@functools.cache
def _random_reads_cached(data: bytes, lo: int, hi: int, seed: int) -> tuple[bytes, ...]:
    rng = random.Random(seed)
    out = []
    i = 0
    while i < len(data):
        n = rng.randint(lo, hi)
        out.append(data[i : i + n])
        i += n
    return tuple(out)


def random_reads(data: bytes, lo: int = 1, hi: int = 64, seed: int = SEED) -> list[bytes]:
    return list(_random_reads_cached(data, lo, hi, seed))


READS = {"16KiB": lambda d: fixed_reads(d, 16 * 1024), "1-64B": random_reads}


# ---------------------------------------------------------------------------------------------
# one big event


def big_event_payload(size: int) -> bytes:
    """``size`` bytes of JSON text: a base64-like image with a caption holding one emoji, so
    a decoder that builds a ``str`` pays for four bytes per character (as real payloads do)."""
    head = b'{"type":"image","caption":"chart \xf0\x9f\x93\x88","data":"'
    tail = b'"}'
    body_len = size - len(head) - len(tail)
    unit = b"iVBORw0KGgoAAAANSUhEUgAAAoAAAAHgCAYAAAA10dzkAAAAOXRFWHRTb2Z0d2FyZQBNYXRwbG90bGli"
    body = (unit * (body_len // len(unit) + 1))[:body_len]
    return head + body + tail


def big_event(size: int) -> bytes:
    """One SSE event whose data is ``size`` bytes."""
    return b"event: tool_result\ndata: " + big_event_payload(size) + b"\n\n"


def iter_reads(data: bytes, size: int) -> Iterator[bytes]:
    """Reads made on the fly, so the input is held once (for peak-memory runs)."""
    view = memoryview(data)
    for i in range(0, len(data), size):
        yield bytes(view[i : i + size])


def repeated_stream(total_bytes: int, read_size: int = 16 * 1024) -> Iterator[bytes]:
    """About ``total_bytes`` of an OpenAI stream made on the fly in ``read_size`` reads: the
    10,000-event body's text chunks repeated, then its tool call, finish, usage and [DONE]."""
    src = openai_stream(10_000)
    body = src.data
    marker = body.find(b'"tool_calls"')
    cut = body.rfind(b"\n\n", 0, marker) + 2
    text_part, tail = body[:cut], body[cut:]
    first_end = text_part.find(b"\n\n") + 2
    head, middle = text_part[:first_end], text_part[first_end:]
    pending = bytearray(head)
    produced = 0
    while produced + len(tail) < total_bytes:
        pending += middle
        produced += len(middle)
        while len(pending) >= read_size:
            yield bytes(pending[:read_size])
            del pending[:read_size]
    pending += tail
    while pending:
        yield bytes(pending[:read_size])
        del pending[:read_size]


# ---------------------------------------------------------------------------------------------
# captures


@dataclass(frozen=True)
class Capture:
    provider: str  # streamfold's provider name
    name: str
    data: bytes


_CAPTURE_PROVIDERS = {
    "openai_chat": "openai",
    "mistral": "mistral",
    "anthropic": "anthropic",
    "cohere_v2": "cohere-v2",
    "cohere_v1": "cohere-v1",
    "openai_responses": "openai-responses",
    "gemini": "gemini",
}


def captures() -> list[Capture]:
    """Every recorded capture, or ``[]`` when ``../shared/captures`` is not there."""
    if not CAPTURES.is_dir():
        return []
    out = []
    for path in sorted(CAPTURES.glob("*/*.sse")):
        provider = _CAPTURE_PROVIDERS.get(path.parent.name)
        if provider is not None:
            out.append(Capture(provider, f"{path.parent.name}/{path.stem}", path.read_bytes()))
    return out


# ---------------------------------------------------------------------------------------------


def write_all(folder: Path) -> None:
    """Write the streams the Rust ceiling bench and the callgrind runs read."""
    folder.mkdir(parents=True, exist_ok=True)
    for provider in ("openai", "anthropic"):
        s = stream(provider)
        (folder / f"{provider}.sse").write_bytes(s.data)
    for size in (1_000, 10_000, 100_000, 1_000_000):
        (folder / f"args-{size}.json").write_text(tool_arguments(size), encoding="utf-8")
    (folder / "big-16MiB.sse").write_bytes(big_event(16 * 1024 * 1024))


if __name__ == "__main__":
    write_all(Path(sys.argv[1] if len(sys.argv) > 1 else "target/bench-data"))
