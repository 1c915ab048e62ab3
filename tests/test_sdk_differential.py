"""Differential test: ``sf.fold`` against the official SDKs' own stream accumulators.

openai-python's ``ChatCompletionStreamState`` (what ``client.chat.completions.stream`` folds
with) and ``ResponseStreamState`` (``client.responses.stream``), and anthropic-sdk-python's
``accumulate_event`` (``MessageStream.get_final_message()``), are fed the JSON of every SSE
frame, no HTTP, as their ``Stream`` classes would feed them. The same bytes, cut at random
places, go to ``sf.fold``. Compared: text, refusal, reasoning (Anthropic: its signatures),
tool calls (id, name, parsed arguments), the legacy ``function_call``, logprob tokens,
citations and annotations, audio, blocks kept as received, the container, the stop sequence
and a refusal's stop details, Chat Completions' created, system_fingerprint, service_tier and
moderation, Responses' created_at, completed_at and service_tier, message phases,
the raw finish / stop reason, the raw usage, id and model; per choice for ``n>1``.

Inputs: every capture of those providers in ``../shared/captures``, and generated valid
streams (multi-byte text split anywhere, parallel tool calls whose arguments are split at
random places and may interleave, ``n>1``, refusals, usage chunks, legacy ``function_call``, search
annotations, audio output, thinking with signatures, redacted thinking, citations, a code
execution container, pings, padded JSON, reasoning summaries, message phases, streams whose
text only the ``.done`` events carry), and Anthropic's beta compaction and fallback blocks
against the SDK's beta accumulator.

Where the two differ on purpose, the comparison leaves it out (each with its reason):

* a tool call cut short (Anthropic ``max_tokens`` before ``content_block_stop``): the SDK keeps
  jiter's partial parse as the input; streamfold marks the call incomplete (``arguments`` is
  ``None``, ``partial_arguments()`` the best-effort value, with an unfinished string's prefix);
* the SDK needs the choices of ``n>1`` (and the calls of one choice) to start in index order
  (it indexes its snapshot by position, and raises ``IndexError`` otherwise), and a
  ``tool_calls`` ``type`` never null (its delta merge replaces ``type`` even with null, and
  then fails an assertion); the generated streams keep to that, streamfold takes both;
* ``get_final_completion()`` raises ``LengthFinishReasonError`` for any ``length`` finish, so
  the Chat Completions snapshot (``current_completion_snapshot``) is compared;
* logprobs on a chunk without text: the SDK appends them to the choice, streamfold keeps them
  as a ``Notice(kind="logprobs")`` (docs/fold.md); the generated streams send none;
* Anthropic ``message_delta`` usage: the SDK updates only the counters it models and keeps
  ``message_start``'s other fields (``service_tier``, the ``cache_creation`` breakdown);
  streamfold takes every non-null field of the later, cumulative report. Only the counters
  are generated there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamfold as sf
from conftest import CAPTURES, requires_captures
from streamfold._message import Message
from streamfold._types import ProviderName

try:
    import httpx2
    from anthropic.lib.streaming._beta_messages import accumulate_event as beta_accumulate
    from anthropic.lib.streaming._messages import accumulate_event
    from openai._models import construct_type
    from openai._types import omit
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.lib.streaming.responses import ResponseStreamState
    from openai.types.chat import ChatCompletionChunk
    from openai.types.responses import ResponseStreamEvent
except ImportError as exc:  # pragma: no cover - requirements/test.txt installs both SDKs
    pytest.skip(
        f"the official SDKs are needed ({exc}): pip install -r requirements/test.txt",
        allow_module_level=True,
    )

#: Bounded and derandomized: the same examples on every run, a second or two in all.
DIFFERENTIAL = settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# -- driving the SDK accumulators -------------------------------------------------------------


def frames(raw: bytes) -> list[sf.ServerSentEvent]:
    decoder = sf.SSEDecoder()
    return [*decoder.feed(raw), *decoder.close()]


def sdk_chat(raw: bytes) -> Any:
    """The snapshot ``ChatCompletionStreamState`` builds; ``None`` when the SDK's ``Stream``
    would raise ``APIError`` (a data payload with a truthy ``error``)."""
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for frame in frames(raw):
        if frame.data.startswith("[DONE]"):
            break
        data = json.loads(frame.data)
        if isinstance(data, dict) and data.get("error"):
            return None
        chunk = cast(ChatCompletionChunk, construct_type(type_=ChatCompletionChunk, value=data))
        if chunk.object == "chat.completion.chunk":  # the stream helper skips Azure's first
            state.handle_chunk(chunk)
    return state.current_completion_snapshot


def sdk_anthropic(raw: bytes, *, beta: bool = False) -> Any:
    """The message ``accumulate_event`` builds; ``None`` on ``event: error`` (the SDK raises)."""
    snapshot: Any = None
    buffers: dict[int, bytes] = {}
    for frame in frames(raw):
        if frame.event == "ping" or not frame.data:
            continue
        if frame.event == "error":
            return None
        data = json.loads(frame.data)
        if snapshot is None and data.get("type") != "message_start":
            continue  # MessageStream passes such events through without accumulating
        if beta:
            snapshot = beta_accumulate(
                event=data,
                current_snapshot=snapshot,
                json_bufs=buffers,
                request_headers=httpx2.Headers(),
            )
        else:
            snapshot = accumulate_event(event=data, current_snapshot=snapshot, json_bufs=buffers)
    return snapshot


def sdk_responses(raw: bytes) -> Any:
    """The completed response ``ResponseStreamState`` builds (the terminal event's response
    for ``incomplete``); ``None`` for an ``error`` event (the SDK raises)."""
    state: ResponseStreamState[Any] = ResponseStreamState(input_tools=omit, text_format=omit)
    last: Any = None
    for frame in frames(raw):
        data = json.loads(frame.data)
        if data.get("type") == "error" or data.get("error"):
            return None
        last = construct_type(type_=ResponseStreamEvent, value=data)
        state.handle_event(last)
    if last is not None and last.type == "response.incomplete":
        return last.response
    return state._completed_response


def fold(
    raw: bytes, provider: ProviderName, cuts: list[int]
) -> tuple[Message, BaseException | None]:
    bounds = [0, *sorted(cuts), len(raw)]
    chunks = [raw[a:b] for a, b in pairwise(bounds)]
    try:
        return sf.fold(chunks, provider=provider), None
    except sf.StreamfoldError as exc:
        assert isinstance(exc.partial, Message), exc
        return exc.partial, exc


# -- what is compared -------------------------------------------------------------------------


def parsed(text: str | None) -> Any:
    """A call's argument text as a client reads it: empty means ``{}``."""
    return json.loads(text) if text else {}


def sf_call(call: sf.ToolCall) -> tuple[Any, ...]:
    return (call.id, call.name, call.arguments if call.complete else ("cut", call.arguments))


def chat_from_sdk(completion: Any) -> dict[str, Any]:
    choices = []
    for choice in sorted(completion.choices, key=lambda c: c.index):
        m = choice.message
        extra = m.model_extra or {}
        logprobs = choice.logprobs
        legacy = m.function_call
        choices.append(
            {
                "text": m.content or "",
                "refusal": m.refusal or "",
                "reasoning": extra.get("reasoning_content") or "",
                "calls": [
                    (t.id, t.function.name, parsed(t.function.arguments))
                    for t in m.tool_calls or []
                ],
                "function_call": (legacy.name, parsed(legacy.arguments)) if legacy else None,
                "logprobs": [t.token for t in (logprobs and logprobs.content) or []],
                "refusal_logprobs": [t.token for t in (logprobs and logprobs.refusal) or []],
                "annotations": [a.to_dict() for a in m.annotations or []],
                "audio": m.audio and {"type": "audio", **m.audio.to_dict()},
                "finish": choice.finish_reason,
            }
        )
    usage = completion.usage.to_dict() if completion.usage else None
    moderation = completion.moderation and completion.moderation.to_dict()
    return {
        "id": completion.id,
        "model": completion.model,
        "usage": usage,
        "choices": choices,
        "top": (completion.created, completion.system_fingerprint, completion.service_tier),
        "moderation": moderation,
    }


def chat_from_sf(message: Message) -> dict[str, Any]:
    choices = []
    for c in message.choices:
        legacy = [t for t in c.tool_calls if t.extra.get("function_call")]
        choices.append(
            {
                "text": c.text,
                "refusal": c.refusal,
                "reasoning": c.reasoning,
                "calls": [sf_call(t) for t in c.tool_calls if t not in legacy],
                "function_call": (legacy[0].name, legacy[0].arguments) if legacy else None,
                "logprobs": [
                    e["token"]
                    for b in c.blocks
                    if b.kind == "text"
                    for e in b.extra.get("logprobs", [])
                ],
                "refusal_logprobs": [
                    e["token"]
                    for b in c.blocks
                    if b.kind == "refusal"
                    for e in b.extra.get("logprobs", [])
                ],
                "annotations": [cite.raw for cite in c.citations],
                "audio": next((b.data for b in c.blocks if b.kind == "other"), None),
                "finish": c.raw_finish_reason,
            }
        )
    usage = message.usage.raw if message.usage else None
    top = [message.metadata.get(k) for k in ("created", "system_fingerprint", "service_tier")]
    return {
        "id": message.id,
        "model": message.model,
        "usage": usage,
        "choices": choices,
        "top": tuple(top),
        "moderation": message.metadata.get("moderation"),
    }


def anthropic_from_sdk(message: Any) -> dict[str, Any]:
    blocks = message.content
    return {
        "id": message.id,
        "model": message.model,
        "usage": message.usage.to_dict(),
        "text": "".join(b.text for b in blocks if b.type == "text"),
        "reasoning": "".join(b.thinking for b in blocks if b.type == "thinking"),
        "signatures": [b.signature for b in blocks if b.type == "thinking"],
        "redacted": [b.data for b in blocks if b.type == "redacted_thinking"],
        "calls": [(b.id, b.name, b.input) for b in blocks if b.type == "tool_use"],
        "callers": [b.caller and b.caller.to_dict() for b in blocks if b.type == "tool_use"],
        "citations": [[c.to_dict() for c in b.citations or []] for b in blocks if b.type == "text"],
        "finish": message.stop_reason,
        "container": message.container and message.container.to_dict(mode="json"),
        "stop_sequence": message.stop_sequence,
        "stop_details": message.stop_details and message.stop_details.to_dict(),
        "blocks": [b.to_dict() for b in blocks if b.type not in SF_BLOCK_TYPES],
    }


#: Anthropic block types compared field by field; any other goes back as the SDK holds it.
SF_BLOCK_TYPES = frozenset({"text", "thinking", "redacted_thinking", "tool_use"})


def payloads(message: Message) -> list[dict[str, Any]]:
    """The blocks kept as received (server tools with the input that streamed, ``other``)."""
    out = []
    for b in message.blocks:
        if b.kind in ("server_tool", "other") and isinstance(b.data, dict):
            call = b.tool_call
            out.append(b.data if call is None else {**b.data, "input": call.arguments})
    return out


def anthropic_from_sf(message: Message) -> dict[str, Any]:
    blocks = message.blocks
    return {
        "id": message.id,
        "model": message.model,
        "usage": message.usage.raw if message.usage else None,
        "text": message.text,
        "reasoning": message.reasoning,
        "signatures": [b.signature or "" for b in blocks if b.kind == "reasoning" and not b.data],
        "redacted": [b.data["data"] for b in blocks if b.kind == "reasoning" and b.data],
        "calls": [sf_call(t) for t in message.tool_calls],
        "callers": [t.extra.get("caller") for t in message.tool_calls],
        "citations": [[c.raw for c in b.citations] for b in blocks if b.kind == "text"],
        "finish": message.raw_finish_reason,
        "container": message.metadata.get("container"),
        "stop_sequence": message.metadata.get("stop_sequence"),
        "stop_details": message.metadata.get("stop_details"),
        "blocks": payloads(message),
    }


def responses_from_sdk(response: Any) -> dict[str, Any]:
    text, refusal, reasoning, calls, phases, cited = [], [], [], [], [], []
    for item in response.output:
        if item.type == "message":
            phases.append(item.phase)
            cited += [
                a.to_dict() for c in item.content if c.type == "output_text" for a in c.annotations
            ]
            text += [c.text for c in item.content if c.type == "output_text"]
            refusal += [c.refusal for c in item.content if c.type == "refusal"]
        elif item.type == "reasoning":
            reasoning.append("\n\n".join(s.text for s in item.summary))
        elif item.type == "function_call":
            calls.append((item.call_id, item.name, parsed(item.arguments)))
    details = response.incomplete_details
    return {
        "id": response.id,
        "model": response.model,
        "usage": response.usage.to_dict() if response.usage else None,
        "text": "".join(text),
        "refusal": "".join(refusal),
        "reasoning": "".join(r for r in reasoning if r),
        "calls": calls,
        "phases": phases,
        "citations": cited,
        "finish": details.reason if details else response.status,
        "top": (response.created_at, response.completed_at, response.service_tier),
    }


def responses_from_sf(message: Message) -> dict[str, Any]:
    return {
        "id": message.id,
        "model": message.model,
        "usage": message.usage.raw if message.usage else None,
        "text": message.text,
        "refusal": message.refusal,
        "reasoning": message.reasoning,
        "calls": [sf_call(t) for t in message.tool_calls],
        "phases": [i.get("phase") for i in message.to_request() if i["type"] == "message"],
        "citations": [c.raw for c in message.citations],
        "finish": message.raw_finish_reason,
        "top": tuple(
            message.metadata.get(k) for k in ("created_at", "completed_at", "service_tier")
        ),
    }


# -- captures ---------------------------------------------------------------------------------

Compare = tuple[
    ProviderName, Callable[[bytes], Any], Callable[[Any], Any], Callable[[Message], Any]
]
PROVIDERS: dict[str, Compare] = {
    "openai_chat": ("openai", sdk_chat, chat_from_sdk, chat_from_sf),
    "anthropic": ("anthropic", sdk_anthropic, anthropic_from_sdk, anthropic_from_sf),
    "openai_responses": ("openai-responses", sdk_responses, responses_from_sdk, responses_from_sf),
}


def captured() -> Iterator[Path]:
    for folder in PROVIDERS:
        yield from sorted((CAPTURES / folder).glob("*.sse"))


#: A capture that begins mid-block, which no accumulator can take.
FRAGMENTS = {"error_api_error_fragment"}


@requires_captures
@pytest.mark.parametrize(
    "path",
    [p for p in captured() if p.stem not in FRAGMENTS],
    ids=lambda p: f"{p.parent.name}/{p.stem}",
)
def test_capture_folds_as_the_sdk_accumulates_it(path: Path) -> None:
    provider, sdk, from_sdk, from_sf = PROVIDERS[path.parent.name]
    raw = path.read_bytes()
    message, error = fold(raw, provider, [])
    expected = sdk(raw)
    if expected is None:  # the SDK raises on the provider's in-stream error
        assert isinstance(error, sf.StreamError), error
        return
    want, got = from_sdk(expected), from_sf(message)
    if isinstance(error, sf.IncompleteStreamError):
        # Anthropic max_tokens inside a tool call, message_stop never terminated: the call was
        # cut short (the SDK keeps jiter's partial parse of its input).
        cut = [c for c in message.tool_calls if not c.complete]
        assert cut and all(c.arguments is None and c.error for c in cut)
        want["calls"] = [(i, n, ("cut", None)) for i, n, _ in want["calls"]]
    else:
        assert error is None, error
    assert got == want


# -- generated streams ------------------------------------------------------------------------

CHARS = st.one_of(
    st.sampled_from(list('ab z.,\n\t"\\/{}[]:')),
    st.sampled_from(list("é°\u2019—中文😀🥁\u2028\x00\x7f")),
    st.characters(codec="utf-8"),
)
TEXT = st.text(CHARS, max_size=24)
NONEMPTY = st.text(CHARS, min_size=1, max_size=24)
ID = st.text(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=3, max_size=10
)
LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
ARGUMENTS = st.dictionaries(
    st.text(CHARS, max_size=6),
    st.recursive(
        LEAF,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
        max_leaves=6,
    ),
    max_size=4,
)


def pieces(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut at random character positions (pieces may be empty)."""
    if not text:
        return [""]
    count = draw(st.integers(0, min(5, len(text) - 1)))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), min_size=count, max_size=count)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in pairwise(bounds)]


def json_text(draw: st.DrawFn, value: Any) -> str:
    return json.dumps(
        value, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 2]))
    )


def interleave(draw: st.DrawFn, sequences: list[list[Any]]) -> list[Any]:
    """The items of every sequence, each sequence in its order, interleaved at random."""
    at = [0] * len(sequences)
    out = []
    while live := [k for k, s in enumerate(sequences) if at[k] < len(s)]:
        k = draw(st.sampled_from(live))
        out.append(sequences[k][at[k]])
        at[k] += 1
    return out


def cuts_of(data: st.DataObject, raw: bytes) -> list[int]:
    return data.draw(st.lists(st.integers(0, len(raw)), max_size=6))


def chat_tool_calls(draw: st.DrawFn, nulls: bool) -> list[dict[str, Any]]:
    """Deltas of one to three parallel calls, fragments maybe interleaved, several a delta."""
    per_call = []
    for t in range(draw(st.integers(1, 3))):
        fragments = pieces(
            draw, json_text(draw, draw(ARGUMENTS)) if draw(st.integers(0, 7)) else ""
        )
        first = fragments.pop(0) if draw(st.booleans()) else ""
        head = {
            "index": t,
            "id": f"call_{draw(ID)}",
            "type": "function",
            "function": {
                "name": draw(st.sampled_from(["get_weather", "f", "lookup_ü"])),
                "arguments": first,
            },
        }
        rest: list[dict[str, Any]] = [{"index": t, "function": {"arguments": f}} for f in fragments]
        if nulls:  # every field present, null when unset (as Azure sends them)
            rest = [{**f, "id": None, "function": {"name": None, **f["function"]}} for f in rest]
        per_call.append([head, *rest])
    # The SDK inserts each call at its index: calls start in index order.
    order = [c[0] for c in per_call] + (
        interleave(draw, [c[1:] for c in per_call])
        if draw(st.booleans())
        else [f for c in per_call for f in c[1:]]
    )
    deltas = []
    while order:
        size = draw(st.integers(1, min(3, len(order))))
        deltas.append({"tool_calls": order[:size]})
        order = order[size:]
    return deltas


@st.composite
def chat_streams(draw: st.DrawFn) -> bytes:
    cid, model = f"chatcmpl-{draw(ID)}", draw(st.sampled_from(["gpt-4o", "gpt-4o-mini"]))
    usage_mode = draw(st.sampled_from(["chunk", "finish", "none", "absent"]))
    with_logprobs, nulls = draw(st.booleans()), draw(st.booleans())
    created, tier = draw(st.integers(1, 2**31)), draw(st.sampled_from([None, "default", "flex"]))

    def chunk(choices: list[dict[str, Any]]) -> dict[str, Any]:
        c = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model}
        c |= {"system_fingerprint": "fp_1", "choices": choices}
        if tier is not None:
            c["service_tier"] = tier
        return c if usage_mode == "absent" else {**c, "usage": None}

    def logprobs(key: str, text: str) -> dict[str, Any] | None:
        if not (with_logprobs and text):
            return None
        token = {"token": text, "logprob": -0.5, "bytes": list(text.encode()), "top_logprobs": []}
        return {"content": None, "refusal": None, key: [token]}

    per_choice = []
    for i in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(
                ["text", "refusal", "tools", "text+tools", "reasoning", "legacy", "audio"]
            )
        )
        first: dict[str, Any] = {"role": "assistant", "content": draw(st.sampled_from(["", None]))}
        if kind == "refusal":
            first["refusal"] = ""
        deltas: list[tuple[dict[str, Any], Any]] = [(first, None)]
        if kind == "reasoning":  # an OpenAI-compatible host's reasoning_content
            deltas += [({"reasoning_content": p}, None) for p in pieces(draw, draw(NONEMPTY))]
        if kind in ("text", "text+tools", "reasoning"):
            deltas += [({"content": p}, logprobs("content", p)) for p in pieces(draw, draw(TEXT))]
        if kind == "refusal":
            deltas += [
                ({"refusal": p}, logprobs("refusal", p)) for p in pieces(draw, draw(NONEMPTY))
            ]
        if kind == "legacy":
            deltas.append(({"function_call": {"name": "legacy_fn", "arguments": ""}}, None))
            text = json_text(draw, draw(ARGUMENTS))
            deltas += [({"function_call": {"arguments": p}}, None) for p in pieces(draw, text)]
        if kind in ("text", "text+tools", "reasoning") and draw(st.booleans()):
            # A search model's web citations, in one chunk (the SDK's delta merge raises on a
            # second: annotations carry no index).
            url = f"https://example.com/{draw(ID)}"
            span = {"url": url, "title": draw(TEXT), "start_index": 0, "end_index": 1}
            deltas.append(({"annotations": [{"type": "url_citation", "url_citation": span}]}, None))
        if kind in ("tools", "text+tools"):
            deltas += [(d, None) for d in chat_tool_calls(draw, nulls)]
        if kind == "audio":  # audio output: id, transcript and base64 data pieces, then expiry
            transcript = [{"transcript": p} for p in pieces(draw, draw(NONEMPTY))]
            sound = [{"data": p} for p in pieces(draw, draw(ID))]
            audio = [{"id": f"audio_{draw(ID)}"}, *interleave(draw, [transcript, sound])]
            audio.append({"expires_at": 9})
            deltas += [({"audio": a}, None) for a in audio]
        if nulls:
            empty = {"content": None, "function_call": None, "refusal": None, "role": None}
            deltas = [({**empty, "tool_calls": None, **d}, lp) for d, lp in deltas]
        finish = {"tools": "tool_calls", "text+tools": "tool_calls", "legacy": "function_call"}
        reason = draw(st.sampled_from([finish.get(kind, "stop"), "length", "content_filter"]))
        sequence = [
            chunk([{"index": i, "delta": d, "logprobs": lp, "finish_reason": None}])
            for d, lp in deltas
        ]
        sequence.append(
            chunk([{"index": i, "delta": {}, "logprobs": None, "finish_reason": reason}])
        )
        per_choice.append(sequence)
    # The SDK appends a choice to its snapshot where it first appears: in index order.
    out = [s[0] for s in per_choice] + interleave(draw, [s[1:] for s in per_choice])
    if draw(st.booleans()):  # moderated completions: the results on a chunk of their own
        flags = {"categories": {"hate": False}, "category_scores": {"hate": 0.01}}
        result = {**flags, "category_applied_input_types": {"hate": ["text"]}, "flagged": False}
        result |= {"model": "omni-moderation-latest", "type": "moderation_result"}
        verdict: dict[str, Any] = {"type": "moderation_results", "model": "omni-moderation-latest"}
        verdict |= {"results": [result]}
        # Before the finishes: the SDK sets its usage from every chunk, null included.
        out.insert(
            len(per_choice), {**chunk([]), "moderation": {"input": verdict, "output": verdict}}
        )
    usage = {
        "prompt_tokens": draw(st.integers(0, 99)),
        "completion_tokens": draw(st.integers(0, 99)),
        "total_tokens": 198,
        "prompt_tokens_details": {"cached_tokens": draw(st.integers(0, 9))},
        "completion_tokens_details": {"reasoning_tokens": draw(st.integers(0, 9))},
    }
    if usage_mode == "chunk":  # include_usage: a last chunk with no choices
        out.append({**chunk([]), "usage": usage})
    elif usage_mode == "finish":  # on the last finishing chunk (Mistral, OpenRouter)
        out[-1] = {**out[-1], "usage": usage}
    body = "".join(f"data: {json.dumps(c, ensure_ascii=draw(st.booleans()))}\n\n" for c in out)
    return (body + "data: [DONE]\n\n").encode()


CITATIONS = st.one_of(
    st.builds(
        lambda text, start: {
            "type": "char_location",
            "cited_text": text,
            "document_index": 0,
            "document_title": "Doc",
            "start_char_index": start,
            "end_char_index": start + len(text),
        },
        TEXT,
        st.integers(0, 99),
    ),
    st.builds(
        lambda text, key: {
            "type": "web_search_result_location",
            "cited_text": text,
            "url": f"https://example.com/{key}",
            "title": "T",
            "encrypted_index": f"Eo{key}",
        },
        TEXT,
        ID,
    ),
)


def anthropic_block(draw: st.DrawFn, index: int, kind: str) -> list[dict[str, Any]]:
    def delta(body: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": index, "delta": body}

    if kind == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        citations = [
            delta({"type": "citations_delta", "citation": c})
            for c in draw(st.lists(CITATIONS, max_size=2))
        ]
        texts = [delta({"type": "text_delta", "text": p}) for p in pieces(draw, draw(TEXT))]
        body = interleave(draw, [citations, texts])
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        body = [delta({"type": "thinking_delta", "thinking": p}) for p in pieces(draw, draw(TEXT))]
        body += [
            delta({"type": "signature_delta", "signature": f"Sig{draw(ID)}{n}"})
            for n in range(draw(st.integers(1, 2)))
        ]
    elif kind == "redacted_thinking":
        start, body = {"type": "redacted_thinking", "data": f"EmwK{draw(ID)}"}, []
    else:
        name = draw(st.sampled_from(["get_weather", "make_file"]))
        start = {"type": "tool_use", "id": f"toolu_{draw(ID)}{index}", "name": name, "input": {}}
        if draw(st.booleans()):  # programmatic tool calling: a call made by code execution
            start["caller"] = {"type": "code_execution_20250825", "tool_id": f"srvtoolu_{index}"}
        text = json_text(draw, draw(ARGUMENTS)) if draw(st.integers(0, 5)) else ""
        fragments = ["", *pieces(draw, text)] if draw(st.booleans()) else pieces(draw, text)
        body = [delta({"type": "input_json_delta", "partial_json": p}) for p in fragments]
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *body,
        {"type": "content_block_stop", "index": index},
    ]


@st.composite
def anthropic_streams(draw: st.DrawFn) -> bytes:
    usage = {
        "input_tokens": draw(st.integers(1, 999)),
        "cache_creation_input_tokens": draw(st.sampled_from([0, 5, None])),
        "cache_read_input_tokens": draw(st.sampled_from([0, 7, None])),
        "output_tokens": draw(st.integers(1, 5)),
        "service_tier": "standard",
    }
    message: dict[str, Any] = {"id": f"msg_{draw(ID)}", "type": "message", "role": "assistant"}
    message |= {"model": "claude-x", "content": [], "stop_reason": None, "stop_sequence": None}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**message, "usage": usage}}
    ]
    kinds = draw(
        st.lists(
            st.sampled_from(["text", "thinking", "redacted_thinking", "tool_use"]),
            min_size=1,
            max_size=4,
        )
    )
    kinds.sort(key=lambda k: k not in ("thinking", "redacted_thinking"))  # thinking comes first
    for index, kind in enumerate(kinds):
        events += anthropic_block(draw, index, kind)
    stop = draw(
        st.sampled_from(
            ["tool_use", "end_turn", "max_tokens", "stop_sequence", "refusal", "pause_turn"]
        )
    )
    final: dict[str, Any] = {"output_tokens": draw(st.integers(1, 999))}
    for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        final[key] = draw(st.one_of(st.none(), st.integers(0, 99), st.just(...)))
    final = {k: v for k, v in final.items() if v is not ...}
    delta: dict[str, Any] = {"stop_reason": stop}
    delta["stop_sequence"] = "##" if stop == "stop_sequence" else None
    if stop == "refusal" and draw(st.booleans()):
        delta["stop_details"] = {"type": "refusal", "category": "cyber", "explanation": "No."}
    if draw(st.booleans()):  # code execution's container
        delta["container"] = {"id": f"container_{draw(ID)}", "expires_at": "2026-12-01T00:00:00Z"}
    events.append({"type": "message_delta", "delta": delta, "usage": final})
    events.append({"type": "message_stop"})
    pad = " " * draw(st.integers(0, 9))  # Anthropic pads its JSON before the closing brace
    body = ""
    for event in events:
        if draw(st.integers(0, 5)) == 0:
            body += 'event: ping\ndata: {"type": "ping"}\n\n'
        data = json.dumps(event, ensure_ascii=draw(st.booleans()))
        body += f"event: {event['type']}\ndata: {data[:-1]}{pad}}}\n\n"
    return body.encode()


def responses_item(
    draw: st.DrawFn, at: int, kind: str, deltas: bool
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The events of one output item and the item as ``output_item.done`` reports it."""
    where = {"output_index": at}
    events: list[dict[str, Any]] = []
    if kind == "reasoning":
        item_id = f"rs_{draw(ID)}{at}"
        added: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": []}
        summary = []
        for n in range(draw(st.integers(0, 2))):
            text = draw(NONEMPTY)
            part = {"item_id": item_id, **where, "summary_index": n}
            events.append(
                {
                    "type": "response.reasoning_summary_part.added",
                    **part,
                    "part": {"type": "summary_text", "text": ""},
                }
            )
            if deltas:
                events += [
                    {"type": "response.reasoning_summary_text.delta", **part, "delta": p}
                    for p in pieces(draw, text)
                ]
            events.append({"type": "response.reasoning_summary_text.done", **part, "text": text})
            events.append(
                {
                    "type": "response.reasoning_summary_part.done",
                    **part,
                    "part": {"type": "summary_text", "text": text},
                }
            )
            summary.append({"type": "summary_text", "text": text})
        done: dict[str, Any] = {**added, "summary": summary, "encrypted_content": f"gAAA{draw(ID)}"}
    elif kind in ("message", "refusal"):
        item_id = f"msg_{draw(ID)}{at}"
        added = {
            "phase": draw(st.sampled_from([None, "commentary", "final_answer"])),
            "id": item_id,
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        text = draw(TEXT if kind == "message" else NONEMPTY)
        part = {"item_id": item_id, **where, "content_index": 0}
        if kind == "message":
            empty: dict[str, Any] = {
                "type": "output_text",
                "text": "",
                "annotations": [],
                "logprobs": [],
            }
            whole, names = {**empty, "text": text}, ("response.output_text", "text")
        else:
            empty = {"type": "refusal", "refusal": ""}
            whole, names = {**empty, "refusal": text}, ("response.refusal", "refusal")
        events.append({"type": "response.content_part.added", **part, "part": empty})
        if deltas:
            events += [
                {"type": f"{names[0]}.delta", **part, "delta": p} for p in pieces(draw, text)
            ]
        events.append({"type": f"{names[0]}.done", **part, names[1]: text})
        if kind == "message":  # url citations, code-point offsets into the part's text
            cited = [
                {"type": "url_citation", "start_index": 0, "end_index": len(text)}
                | {"url": f"https://example.com/{draw(ID)}", "title": draw(TEXT)}
                for _ in range(draw(st.integers(0, 2)))
            ]
            events += [
                {"type": "response.output_text.annotation.added", **part}
                | {"annotation_index": n, "annotation": a}
                for n, a in enumerate(cited)
            ]
            whole["annotations"] = cited
        events.append({"type": "response.content_part.done", **part, "part": whole})
        done = {**added, "status": "completed", "content": [whole]}
    else:
        item_id = f"fc_{draw(ID)}{at}"
        name, arguments = (
            draw(st.sampled_from(["get_weather", "f"])),
            json_text(draw, draw(ARGUMENTS)),
        )
        added = {
            "id": item_id,
            "type": "function_call",
            "call_id": f"call_{draw(ID)}{at}",
            "name": name,
            "arguments": "",
            "status": "in_progress",
        }
        if deltas:
            events += [
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item_id,
                    **where,
                    "delta": p,
                }
                for p in pieces(draw, arguments)
            ]
        events.append(
            {
                "type": "response.function_call_arguments.done",
                "item_id": item_id,
                **where,
                "arguments": arguments,
            }
        )
        done = {**added, "arguments": arguments, "status": "completed"}
    return [
        {"type": "response.output_item.added", **where, "item": added},
        *events,
        {"type": "response.output_item.done", **where, "item": done},
    ], done


@st.composite
def responses_streams(draw: st.DrawFn) -> bytes:
    deltas = draw(st.integers(0, 4)) > 0  # else only the .done events carry the text
    response: dict[str, Any] = {"id": f"resp_{draw(ID)}", "object": "response", "created_at": 1}
    response |= {"model": "gpt-5-mini", "status": "in_progress", "output": [], "usage": None}
    response |= {
        "error": None,
        "incomplete_details": None,
        "tools": [],
        "parallel_tool_calls": True,
    }
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.in_progress", "response": response},
    ]
    kinds = draw(
        st.lists(
            st.sampled_from(["reasoning", "message", "refusal", "function_call"]),
            min_size=1,
            max_size=4,
        )
    )
    kinds.sort(key=lambda k: k != "reasoning")
    output = []
    for at, kind in enumerate(kinds):
        item_events, item = responses_item(draw, at, kind, deltas)
        events += item_events
        output.append(item)
    usage = {
        "input_tokens": draw(st.integers(1, 99)),
        "input_tokens_details": {"cached_tokens": draw(st.integers(0, 9))},
        "output_tokens": draw(st.integers(1, 99)),
        "output_tokens_details": {"reasoning_tokens": draw(st.integers(0, 9))},
        "total_tokens": 198,
    }
    status = draw(st.sampled_from(["completed", "incomplete"]))
    final = {**response, "status": status, "output": output, "usage": usage}
    final["service_tier"] = draw(st.sampled_from([None, "default", "flex"]))
    if status == "completed":
        final["completed_at"] = draw(st.integers(1, 2**31))
    if status == "incomplete":
        final["incomplete_details"] = {
            "reason": draw(st.sampled_from(["max_output_tokens", "content_filter"]))
        }
    events.append({"type": f"response.{status}", "response": final})
    numbered = draw(st.booleans())  # sequence_number is absent from the early streams
    ascii_only = draw(st.booleans())
    body = ""
    for n, event in enumerate(events):
        data = json.dumps(
            {**event, "sequence_number": n} if numbered else event, ensure_ascii=ascii_only
        )
        body += f"event: {event['type']}\ndata: {data}\n\n"
    return body.encode()


def check_generated(raw: bytes, folder: str, cuts: list[int]) -> None:
    provider, sdk, from_sdk, from_sf = PROVIDERS[folder]
    message, error = fold(raw, provider, cuts)
    assert error is None, error
    assert message.complete
    assert from_sf(message) == from_sdk(sdk(raw))


@DIFFERENTIAL
@given(st.data())
def test_generated_chat_completions_fold_as_the_sdk_accumulates_them(data: st.DataObject) -> None:
    raw = data.draw(chat_streams())
    check_generated(raw, "openai_chat", cuts_of(data, raw))


@DIFFERENTIAL
@given(st.data())
def test_generated_anthropic_streams_fold_as_the_sdk_accumulates_them(data: st.DataObject) -> None:
    raw = data.draw(anthropic_streams())
    check_generated(raw, "anthropic", cuts_of(data, raw))


@DIFFERENTIAL
@given(st.data())
def test_generated_responses_streams_fold_as_the_sdk_accumulates_them(data: st.DataObject) -> None:
    raw = data.draw(responses_streams())
    check_generated(raw, "openai_responses", cuts_of(data, raw))


# -- Anthropic beta blocks, against the SDK's beta accumulator ---------------------------------


def anthropic_sse(*events: dict[str, Any]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


BETA_START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    },
}
BETA_TEXT: list[dict[str, Any]] = [
    {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}},
    {"type": "content_block_stop", "index": 1},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}},
    {"type": "message_stop"},
]
BETA_BLOCKS: dict[str, list[dict[str, Any]]] = {
    "compaction": [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "compaction", "content": None},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {
                "type": "compaction_delta",
                "content": "Earlier: …",
                "encrypted_content": "Eo8C",
            },
        },
        {"type": "content_block_stop", "index": 0},
    ],
    "fallback": [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {
                "type": "fallback",
                "from": {"model": "claude-x"},
                "to": {"model": "claude-y-1"},
                "trigger": {"type": "refusal"},
            },
        },
        {"type": "content_block_stop", "index": 0},
    ],
}


@pytest.mark.parametrize("name", sorted(BETA_BLOCKS))
def test_anthropic_beta_blocks_fold_as_the_beta_sdk_accumulates_them(name: str) -> None:
    raw = anthropic_sse(BETA_START, *BETA_BLOCKS[name], *BETA_TEXT)
    message, error = fold(raw, "anthropic", [])
    assert error is None, error
    want = anthropic_from_sdk(sdk_anthropic(raw, beta=True))
    want["blocks"] = [{k: v for k, v in b.items() if v is not None} for b in want["blocks"]]
    got = anthropic_from_sf(message)
    got["blocks"] = [{k: v for k, v in b.items() if v is not None} for b in got["blocks"]]
    assert got == want
