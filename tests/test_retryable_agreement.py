"""``StreamError.retryable_without_duplicate`` is one answer per stream: ``sf.events`` (the
provider's error, as the pipeline leaves it) says what ``sf.fold`` (the folder's view of the
same events) says, wherever in the stream the error comes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import streamfold as sf
from conftest import CAPTURE_PROVIDER, capture_files, capture_id, requires_captures
from providers.sse_helpers import jsonl, named, sse
from streamfold._types import ProviderName

#: provider -> an in-stream error frame it reports as ``StreamError``.
ERRORS: dict[str, bytes] = {
    "anthropic": sse(("error", {"type": "error", "error": {"type": "api_error", "message": "x"}})),
    "openai": sse((None, {"error": {"message": "x", "type": "server_error"}})),
    "mistral": sse((None, {"error": {"message": "x", "type": "server_error"}})),
    "cohere-v2": named({"type": "message-end", "delta": {"finish_reason": "ERROR", "error": "x"}}),
    "cohere-v1": jsonl(
        {"is_finished": True, "event_type": "stream-end", "finish_reason": "ERROR", "response": {}}
    ),
    "openai-responses": sse(
        ("error", {"type": "error", "code": "server_error", "message": "x", "sequence_number": 1e9})
    ),
    "gemini": sse((None, {"error": {"code": 500, "message": "x", "status": "INTERNAL"}})),
    "clouisle": sse(("error", {"code": "model_error", "message": "x"})),
    "onecortex": named({"v": 1, "type": "error", "code": "agent_error", "message": "x"}),
}


def frames(body: bytes, provider: ProviderName) -> list[bytes]:
    if provider == "cohere-v1":
        return [line + b"\n" for line in body.split(b"\n") if line.strip()]
    body = body.replace(b"\r\n", b"\n")
    return [frame + b"\n\n" for frame in body.split(b"\n\n") if frame.strip()]


def verdicts(chunks: list[bytes], provider: ProviderName) -> tuple[object, object]:
    """``retryable_without_duplicate`` from ``sf.events`` and from ``sf.fold`` (the error's
    type name when it is not a ``StreamError``)."""
    found: list[object] = []
    for read in (lambda: list(sf.events(chunks, provider)), lambda: sf.fold(chunks, provider)):
        try:
            read()
        except sf.StreamError as exc:
            found.append(exc.retryable_without_duplicate)
        except sf.StreamfoldError as exc:
            found.append(type(exc).__name__)
        else:
            found.append(None)
    return found[0], found[1]


def prefixes(count: int) -> list[int]:
    """The first frames one by one (where content begins), then a few further cuts."""
    return sorted({*range(min(count, 25) + 1), count // 3, count // 2, count})


def check(body: bytes, provider: ProviderName) -> None:
    parts = frames(body, provider)
    for k in prefixes(len(parts)):
        chunks = [*parts[:k], ERRORS[provider]]
        from_events, from_fold = verdicts(chunks, provider)
        assert from_events == from_fold, (k, parts[k - 1][:120] if k else b"")


@requires_captures
@pytest.mark.parametrize("path", capture_files(), ids=capture_id)
def test_events_and_fold_agree_on_every_capture(path: Path) -> None:
    check(path.read_bytes(), CAPTURE_PROVIDER[path.parent.name])


#: Agent streams whose answer includes what is not a block: a tool's result, media.
AGENT_STREAMS: dict[str, tuple[ProviderName, bytes]] = {
    "clouisle-tool-result": (
        "clouisle",
        sse(
            ("message_start", {"message_id": "m"}),
            ("tool_result", {"id": "t1", "name": "search", "result": {"hits": 1}}),
        ),
    ),
    "clouisle-media": (
        "clouisle",
        sse(
            ("message_start", {"message_id": "m"}),
            ("media_result", {"kind": "image", "url": "https://x/y.png"}),
        ),
    ),
    "empty-text-block": (
        "anthropic",
        sse(
            (
                "message_start",
                {"type": "message_start", "message": {"id": "m", "role": "assistant"}},
            ),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
        ),
    ),
}


@pytest.mark.parametrize("name", list(AGENT_STREAMS))
def test_events_and_fold_agree_after_results_media_and_empty_blocks(name: str) -> None:
    provider, body = AGENT_STREAMS[name]
    check(body, provider)
    from_events, from_fold = verdicts([body, ERRORS[provider]], provider)
    assert from_events == from_fold == (name == "empty-text-block")


def test_a_resumed_stream_remembers_the_content_of_earlier_connections() -> None:
    # The text came on the first connection; the error on the second, which has a pipeline of
    # its own: the error is still not retryable, from events_resumable as from fold_resumable.
    text = b'id: 1\nevent: text\ndata: {"v":1,"type":"text","delta":"Un "}\n\n'
    error = named({"v": 1, "type": "error", "code": "agent_error", "message": "x"})
    script: list[list[bytes | BaseException]] = [[text, ConnectionResetError("reset")], [error]]

    def connect(cursor: sf.Cursor) -> Iterator[bytes]:
        for item in script[cursor.attempt]:
            if isinstance(item, BaseException):
                raise item
            yield item

    with pytest.raises(sf.StreamError) as from_events:
        list(sf.events_resumable(connect, provider="onecortex", initial_delay=0.001))
    with pytest.raises(sf.StreamError) as from_fold:
        sf.fold_resumable(connect, provider="onecortex", initial_delay=0.001)
    assert from_fold.value.partial is not None
    assert from_fold.value.partial.text == "Un "
    assert from_events.value.retryable_without_duplicate is False
    assert from_fold.value.retryable_without_duplicate is False
