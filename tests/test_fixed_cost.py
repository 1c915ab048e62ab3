"""The fixed cost of a stream: what ``fold`` / ``events`` make once per call, whatever its
length. Many services make many short calls (classification, routing, tool calls), where this
is most of the time; these tests pin the structure that keeps it small, and that the shortcuts
behave exactly as the general path does. No timings: each test checks what is made."""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import streamfold as sf
from streamfold._engine.folder import Folder
from streamfold._events import BlockDelta, BlockStart, MessageEnd, MessageStart, Notice
from streamfold._io import source
from streamfold._providers import PROVIDER_NAMES, get_provider
from streamfold._types import ProviderName

STREAMFOLD = str(Path(sf.__file__).parent)

TINY = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message",'
    b'"role":"assistant","model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":5,'
    b'"output_tokens":1}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"text_delta","text":"Hi"}}\n\n'
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
    b'"usage":{"output_tokens":2}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)


def _bound_to(obj: object) -> list[Any]:
    """Bound methods (and ``functools.partial`` of them) that ``obj`` holds, directly or in a
    container it holds: made per instance, they are the per-stream cost these tests keep out."""
    found: list[Any] = []
    seen: set[int] = set()
    todo: list[Any] = [obj]
    for _depth in range(3):
        nxt: list[Any] = []
        for item in todo:
            for ref in gc.get_referents(item):
                if id(ref) in seen or isinstance(ref, type):
                    continue
                seen.add(id(ref))
                target = getattr(ref, "func", ref)  # a partial's function
                if isinstance(target, types.MethodType) and target.__self__ is obj:
                    found.append(ref)
                elif isinstance(ref, (dict, list, tuple, set)) or hasattr(ref, "__dict__"):
                    nxt.append(ref)
        todo = nxt
    return found


def test_a_folder_binds_no_handler_per_instance() -> None:
    assert _bound_to(Folder("anthropic")) == []


@pytest.mark.parametrize("name", [n for n in PROVIDER_NAMES if n != "auto"])
def test_a_provider_binds_no_handler_per_instance(name: str) -> None:
    assert _bound_to(get_provider(name)) == []


def test_a_folder_subclass_overrides_a_handler() -> None:
    class Loud(Folder):
        def _on_delta(self, ev: BlockDelta) -> None:
            Folder._on_delta(self, BlockDelta(index=ev.index, kind=ev.kind, text=ev.text.upper()))

    class Subnotice(Notice):
        pass

    for folder in (Loud("anthropic"), Folder("anthropic")):
        folder.add(MessageStart())
        folder.add(BlockStart(index=0, kind="text"))
        folder.add(BlockDelta(index=0, kind="text", text="hi"))
        folder.add(Subnotice(kind="warning", message="w"))  # a subclass gets its base's
        folder.add(MessageEnd(finish_reason="stop", raw_finish_reason="stop"))
        loud = isinstance(folder, Loud)
        assert folder.result().text == ("HI" if loud else "hi")
        assert folder.result().warnings == ["w"]
    assert Folder._handlers[BlockDelta] is Folder._on_delta  # the base's table is untouched


def test_a_list_or_tuple_source_needs_no_context_manager(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A list or tuple is iterated as it is: nothing to check, open or close."""

    def opened(source: Any, provider: ProviderName) -> Any:
        raise AssertionError("a list or tuple went through the general source path")

    monkeypatch.setattr(source, "_opened_chunks", opened)
    for chunks in ([TINY], (TINY[:100], TINY[100:])):
        assert sf.fold(chunks, provider="anthropic").text == "Hi"
        assert [e.type for e in sf.events(chunks, provider="anthropic")][-1] == "message_end"


def test_a_builtin_iterator_or_generator_needs_no_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """``iter(reads)``, a generator and an async generator are the language's own: not a
    response, so nothing is probed; a generator the caller stops early is still closed."""

    def opened(*_: Any) -> Any:
        raise AssertionError("a builtin iterator went through the general source path")

    monkeypatch.setattr(source, "_opened_chunks", opened)
    monkeypatch.setattr(source, "_opened_async_chunks", opened)
    closed: list[str] = []

    def gen() -> Any:
        try:
            yield TINY[:50]
            yield TINY[50:]
        finally:
            closed.append("sync")

    async def agen() -> Any:
        try:
            yield TINY[:50]
            yield TINY[50:]
        finally:
            closed.append("async")

    assert sf.fold(iter([TINY[:10], TINY[10:]]), provider="anthropic").text == "Hi"
    for event in sf.events(gen(), provider="anthropic"):
        if event.type == "block_start":
            break  # the caller stops early: the generator is closed at once
    assert closed == ["sync"]

    async def main() -> str:
        return (await sf.afold(agen(), provider="anthropic")).text

    assert asyncio.run(main()) == "Hi"
    assert closed == ["sync", "async"]


def test_other_sources_still_go_through_the_general_path(tmp_path: Path) -> None:
    closed: list[bool] = []

    def gen() -> Any:
        try:
            yield TINY[:50]
            yield TINY[50:]
        finally:
            closed.append(True)

    assert sf.fold(gen(), provider="anthropic").text == "Hi"

    class Chunks(list[bytes]):
        pass

    assert sf.fold(Chunks([TINY]), provider="anthropic").text == "Hi"
    path = tmp_path / "tiny.sse"
    path.write_bytes(TINY)
    with path.open("rb") as f:
        assert sf.fold(f, provider="anthropic").text == "Hi"
    with pytest.raises(TypeError, match="wrap a whole body"):
        sf.fold(TINY, provider="anthropic")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected bytes, got str"):
        sf.fold([TINY.decode()], provider="anthropic")  # type: ignore[list-item]
    assert closed == [True]


def _sse(*frames: tuple[str | None, Any]) -> bytes:
    out = []
    for name, payload in frames:
        head = f"event: {name}\n" if name else ""
        data = payload
        if name and name.startswith("response.") and isinstance(payload, dict):
            data = {"type": name, **payload}  # Responses payloads name their type too
        out.append(f"{head}data: {data if isinstance(data, str) else json.dumps(data)}\n\n")
    return "".join(out).encode()


def _chat(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c",
        "model": "g",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


#: One short answer ("Hi") per provider, as a classification or routing call gets.
SHORT: dict[ProviderName, bytes] = {
    "anthropic": TINY,
    "openai": _sse(
        (None, _chat({"role": "assistant", "content": ""})),
        (None, _chat({"content": "Hi"})),
        (None, _chat({}, "stop")),
        (None, "[DONE]"),
    ),
    "gemini": _sse(
        (None, {"candidates": [{"content": {"parts": [{"text": "H"}], "role": "model"}}]}),
        (
            None,
            {
                "candidates": [
                    {"content": {"parts": [{"text": "i"}], "role": "model"}, "finishReason": "STOP"}
                ],
                "usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 2},
            },
        ),
    ),
    "cohere-v2": _sse(
        ("message-start", {"id": "m", "delta": {"message": {"role": "assistant"}}}),
        (
            "content-start",
            {"index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}},
        ),
        ("content-delta", {"index": 0, "delta": {"message": {"content": {"text": "Hi"}}}}),
        ("content-end", {"index": 0}),
        ("message-end", {"delta": {"finish_reason": "COMPLETE"}}),
    ),
    "openai-responses": _sse(
        ("response.created", {"response": {"id": "r", "status": "in_progress", "output": []}}),
        (
            "response.output_item.added",
            {
                "output_index": 0,
                "item": {"id": "i", "type": "message", "role": "assistant", "content": []},
            },
        ),
        (
            "response.content_part.added",
            {
                "item_id": "i",
                "output_index": 0,
                "content_index": 0,
                "part": {"type": "output_text", "text": ""},
            },
        ),
        (
            "response.output_text.delta",
            {"item_id": "i", "output_index": 0, "content_index": 0, "delta": "Hi"},
        ),
        (
            "response.output_item.done",
            {
                "output_index": 0,
                "item": {
                    "id": "i",
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Hi"}],
                },
            },
        ),
        ("response.completed", {"response": {"id": "r", "status": "completed", "output": []}}),
    ),
    "clouisle": _sse(
        ("message_start", {"conversation_id": "c", "message_id": "m"}),
        ("content_delta", {"delta": "Hi"}),
        ("message_end", {"usage": {"input_tokens": 1, "output_tokens": 1}, "status": "completed"}),
    ),
}


@pytest.mark.parametrize("name", sorted(SHORT))
def test_a_short_stream_runs_no_comprehension(name: ProviderName) -> None:
    """A comprehension or generator expression makes a function object (and a generator) at
    each call: on a stream of a few frames, every one is a cost the whole call pays. The
    fold and the events of a short answer run none of them."""
    chunks = [SHORT[name]]
    sf.fold(chunks, provider=name)  # first use: imports, templates
    made: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        code = frame.f_code
        if (
            event == "call"
            and code.co_name.startswith("<")
            and code.co_filename.startswith(STREAMFOLD)
        ):
            made.append(f"{Path(code.co_filename).name}:{code.co_firstlineno} {code.co_name}")

    sys.setprofile(profile)
    try:
        message = sf.fold(chunks, provider=name)
        events = list(sf.events(chunks, provider=name))
    finally:
        sys.setprofile(None)
    assert made == []
    assert message.text == "Hi"
    assert message.finish_reason == "stop"
    assert message.complete
    assert events[-1].type == "message_end"


@pytest.mark.parametrize("strict", [False, True])
def test_closing_a_block_makes_no_event_until_a_stray_delta(
    monkeypatch: pytest.MonkeyPatch, strict: bool
) -> None:
    """Every block closes, almost none gets a delta after: the ``BlockEnd`` a stray delta's
    warning names is made only when one comes, and reads as before."""
    from streamfold._engine import folder as folder_module
    from streamfold._errors import ProtocolError
    from streamfold._events import BlockEnd

    made: list[BlockEnd] = []

    def counting(**fields: Any) -> BlockEnd:
        event = BlockEnd(**fields)
        made.append(event)
        return event

    monkeypatch.setattr(folder_module, "BlockEnd", counting)
    folder = Folder("anthropic", strict=strict)
    folder.add(MessageStart())
    folder.add(BlockStart(index=0, kind="text"))
    folder.add(BlockDelta(index=0, kind="text", text="Hi"))
    folder.add(BlockEnd(index=0, kind="text"))
    assert made == []
    late = BlockDelta(index=0, kind="text", text="!")
    if strict:
        with pytest.raises(ProtocolError) as info:
            folder.add(late)
        assert info.value.event == "block_end"
        assert "delta for closed block 0 of choice 0 (event 'block_end')" in str(info.value)
        return
    folder.add(late)
    folder.add(MessageEnd(finish_reason="stop", raw_finish_reason="stop"))
    assert [(e.index, e.kind, e.choice) for e in made] == [(0, "text", 0)]
    message = folder.result()
    assert message.text == "Hi!"  # kept rather than lost
    assert message.warnings == [
        "anthropic: delta for closed block 0 of choice 0 (event 'block_end')"
    ]


def test_a_frame_is_parsed_without_the_preparsed_detour(monkeypatch: pytest.MonkeyPatch) -> None:
    """``json_object`` parses a frame itself unless a payload was handed over (``auto``): one
    Python call less per frame. A handed-over payload is still used once."""
    from streamfold._core import SSEDecoder

    frame, other = SSEDecoder().feed(b'data: {"a": 1}\n\ndata: {"b": 2}\n\n')
    provider = get_provider("anthropic")

    def detour(frame: Any) -> Any:
        raise AssertionError("frame_json called with nothing preparsed")

    monkeypatch.setattr(provider, "frame_json", detour)
    assert provider.json_object(frame) == {"a": 1}
    monkeypatch.undo()
    provider.preparsed = (other, {"b": "preparsed"})
    assert provider.json_object(other) == {"b": "preparsed"}
    assert provider.preparsed is None
    assert provider.json_object(other) == {"b": 2}
