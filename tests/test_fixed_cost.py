"""The fixed cost of a stream: what ``fold`` / ``events`` make once per call, whatever its
length. Many services make many short calls (classification, routing, tool calls), where this
is most of the time; these tests pin the structure that keeps it small, and that the shortcuts
behave exactly as the general path does. No timings: each test checks what is made."""

from __future__ import annotations

import gc
import types
from pathlib import Path
from typing import Any

import pytest

import streamfold as sf
from streamfold import source
from streamfold.events import BlockDelta, BlockStart, MessageEnd, MessageStart, Notice
from streamfold.folder import Folder
from streamfold.providers import PROVIDER_NAMES, get_provider

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


def test_folder_dispatch_still_gives_bound_handlers() -> None:
    folder = Folder("anthropic")
    dispatch = folder.dispatch
    dispatch[MessageStart](MessageStart(id="m"))
    dispatch[BlockStart](BlockStart(index=0, kind="text"))
    folder.handler_for(BlockDelta)(BlockDelta(index=0, kind="text", text="Hi"))
    folder.add(MessageEnd(finish_reason="stop", raw_finish_reason="stop"))
    assert folder.result().text == "Hi"
    assert folder.result().id == "m"


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

    def opened(source: Any, provider: str) -> Any:
        raise AssertionError("a list or tuple went through the general source path")

    monkeypatch.setattr(source, "_opened_chunks", opened)
    for chunks in ([TINY], (TINY[:100], TINY[100:])):
        assert sf.fold(chunks, provider="anthropic").text == "Hi"
        assert [e.type for e in sf.events(chunks, provider="anthropic")][-1] == "message_end"


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
        sf.fold(TINY, provider="anthropic")
    with pytest.raises(TypeError, match="expected bytes, got str"):
        sf.fold([TINY.decode()], provider="anthropic")
    assert closed == [True]
