"""``Folder.snapshot()``: incremental, never mutating what it handed out, partial arguments."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

import streamfold as sf
from streamfold._engine import folder as folder_module
from streamfold._events import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    Event,
    MessageEnd,
    MessageStart,
    SignatureDelta,
    ToolResultAdded,
    UsageUpdate,
)
from streamfold._message import Block, ToolResult, Usage
from streamfold._types import ProviderName
from test_fold_streams import CASES, _anthropic_pieces, _openai_pieces, _utf16_pieces


def test_unchanged_blocks_are_reused_and_changed_ones_rebuilt() -> None:
    f = sf.Folder("openai")
    f.add(MessageStart())
    for i in range(5):
        f.add(BlockStart(index=i, kind="text"))
        f.add(BlockDelta(index=i, kind="text", text=f"block {i}. "))
    first = f.snapshot()
    f.add(BlockDelta(index=3, kind="text", text="more"))
    second = f.snapshot()
    assert [a is b for a, b in zip(first.blocks, second.blocks, strict=True)] == [
        True,
        True,
        True,
        False,
        True,
    ]
    assert second.blocks[3].text == "block 3. more"
    assert second.text == "block 0. block 1. block 2. block 3. moreblock 4. "
    # What was handed out never changes afterwards.
    assert first.blocks[3].text == "block 3. "
    assert first.text == "block 0. block 1. block 2. block 3. block 4. "


def test_snapshot_without_changes_is_the_same_object() -> None:
    f = sf.Folder()
    f.add(MessageStart())
    f.add(BlockStart(index=0, kind="text", text="x"))
    snap = f.snapshot()
    assert f.snapshot() is snap
    f.add(UsageUpdate(usage=Usage(output_tokens=3)))
    again = f.snapshot()
    assert again is not snap
    assert again.usage is not None
    assert again.usage.output_tokens == 3
    assert again.blocks[0] is snap.blocks[0]
    assert snap.usage is None


def test_snapshot_rebuilds_only_changed_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    real = folder_module._Block.refresh

    def counting(self: folder_module._Block) -> Block:
        built.append(self.index)
        return real(self)

    monkeypatch.setattr(folder_module._Block, "refresh", counting)
    f = sf.Folder()
    f.add(MessageStart())
    for i in range(100):
        f.add(BlockStart(index=i, kind="text", text="x"))
    f.snapshot()
    assert sorted(built) == list(range(100))
    built.clear()
    f.add(BlockDelta(index=42, kind="text", text="y"))
    f.add(BlockDelta(index=42, kind="text", text="z"))
    f.add(SignatureDelta(index=7, signature="s"))
    snap = f.snapshot()
    assert sorted(built) == [7, 42]
    assert snap.blocks[42].text == "xyz"
    assert snap.blocks[7].signature == "s"
    built.clear()
    f.snapshot()
    assert built == []


def test_run_level_lists_are_copied_once_and_not_shared_with_the_folder() -> None:
    f = sf.Folder()
    f.add(MessageStart())
    f.add(ToolResultAdded(result=ToolResult(call_id="a", output="1")))
    first = f.snapshot()
    f.add(ToolResultAdded(result=ToolResult(call_id="b", output="2")))
    second = f.snapshot()
    assert [r.call_id for r in first.tool_results] == ["a"]
    assert [r.call_id for r in second.tool_results] == ["a", "b"]


def test_open_tool_call_exposes_partial_arguments() -> None:
    f = sf.Folder()
    f.add(MessageStart())
    f.add(BlockStart(index=0, kind="tool_call", id="c", name="write_file"))
    f.add(BlockDelta(index=0, kind="tool_call", text='{"path": "a.txt", "content": "Hel'))
    call = f.snapshot().tool_calls[0]
    assert call.complete is False
    assert call.arguments is None
    assert call.arguments_json == '{"path": "a.txt", "content": "Hel'
    assert call.partial_arguments() == {"path": "a.txt", "content": "Hel"}
    f.add(BlockDelta(index=0, kind="tool_call", text='lo"}'))
    assert f.snapshot().tool_calls[0].partial_arguments() == {"path": "a.txt", "content": "Hello"}
    f.add(BlockEnd(index=0, kind="tool_call"))
    done = f.snapshot().tool_calls[0]
    assert done.complete is True
    assert done.arguments == {"path": "a.txt", "content": "Hello"}
    assert done.arguments_partial is None
    assert done.partial_arguments() == done.arguments
    # the snapshot taken while open is unchanged
    assert call.arguments is None


def test_snapshot_of_a_finished_message_equals_the_result() -> None:
    f = sf.Folder("openai")
    f.add(MessageStart(id="m"))
    f.add(BlockStart(index=0, kind="text"))
    f.add(BlockDelta(index=0, kind="text", text="done"))
    f.snapshot()
    f.add(BlockEnd(index=0, kind="text"))
    f.add(MessageEnd(finish_reason="stop", raw_finish_reason="stop"))
    snap = f.snapshot()
    assert snap.complete
    assert snap == f.result()
    assert snap.blocks[0].complete


def test_snapshot_before_any_event() -> None:
    snap = sf.Folder().snapshot()
    assert snap.text == ""
    assert snap.blocks == []
    assert not snap.complete


def _digest(m: sf.Message) -> tuple[object, ...]:
    return (
        m.text,
        m.reasoning,
        m.tool_plan,
        m.finish_reason,
        m.complete,
        [
            (
                b.index,
                b.kind,
                b.text,
                b.complete,
                b.signature,
                None if b.tool_call is None else (b.tool_call.arguments_json, b.tool_call.complete),
            )
            for b in m.blocks
        ],
        [r.call_id for r in m.tool_results],
        [(c.text, c.block) for c in m.citations],
    )


@given(data=st.data())
def test_snapshots_anywhere_change_nothing(data: st.DataObject) -> None:
    """Snapshots taken at any points neither change the result nor change afterwards."""
    name = data.draw(st.sampled_from(sorted(CASES)))
    case = CASES[name]
    events = list(_events(case.body, case.provider))
    points = data.draw(st.sets(st.integers(0, len(events)), max_size=8))
    plain = sf.Folder(case.provider)
    watched = sf.Folder(case.provider)
    taken: list[tuple[sf.Message, tuple[object, ...]]] = []
    for i, event in enumerate(events):
        if i in points:
            snap = watched.snapshot()
            taken.append((snap, _digest(snap)))
        plain.add(event)
        watched.add(event)
    assert _digest(watched.snapshot()) == _digest(plain.snapshot())
    assert watched.complete == plain.complete
    if plain.complete:
        assert watched.results() == plain.results()
    else:
        assert _digest(watched.partial()) == _digest(plain.partial())
    for snap, digest in taken:
        assert _digest(snap) == digest


def _events(body: bytes, provider: ProviderName) -> list[Event]:
    """The events of a stream up to its end or its error."""
    out: list[Event] = []
    with contextlib.suppress(sf.StreamfoldError):
        for event in sf.events([body], provider=provider):
            out.append(event)
    return out


def test_a_character_split_between_deltas_is_shown_whole_while_the_block_is_open() -> None:
    """A JavaScript host may cut an emoji into its UTF-16 halves across two deltas. A live
    view shows the first half only with the second: text only grows by appending, and every
    snapshot's text can be encoded (a UI sends it on as UTF-8)."""
    f = sf.Folder("openai")
    f.add(MessageStart())
    f.add(BlockStart(index=0, kind="text"))
    f.add(BlockDelta(index=0, kind="text", text="a\ud83d"))
    first = f.snapshot()
    assert first.text == first.blocks[0].text == "a"
    f.add(BlockDelta(index=0, kind="text", text="\ude00b"))
    second = f.snapshot()
    assert second.text == second.blocks[0].text == "a\U0001f600b"
    f.add(BlockDelta(index=0, kind="text", text="\ud83d"))
    third = f.snapshot()
    assert third.text == "a\U0001f600b"
    for snap in (first, second, third):
        snap.text.encode()
    # A half still alone when the block ends is kept as it came (as json.loads gives it).
    f.add(BlockEnd(index=0, kind="text"))
    f.add(MessageEnd(finish_reason="stop", raw_finish_reason="stop"))
    assert f.snapshot().text == "a\U0001f600b\ud83d"
    assert f.snapshot() == f.result()


@given(
    text=st.text(
        st.characters(codec="utf-8") | st.sampled_from(["\U0001f600", "\U00010348", "é"]),
        max_size=30,
    ),
    cuts=st.lists(st.integers(0, 70), max_size=20),
    provider=st.sampled_from(["openai", "anthropic"]),
)
def test_snapshot_text_only_grows_when_characters_are_cut_in_utf16_halves(
    text: str, cuts: list[int], provider: ProviderName
) -> None:
    pieces = [p for p in _utf16_pieces(text, cuts) if p]
    body = (_openai_pieces if provider == "openai" else _anthropic_pieces)(pieces)
    f = sf.Folder(provider)
    shown = ""
    for event in sf.events([body], provider=provider):
        f.add(event)
        snap = f.snapshot()
        assert snap.text.startswith(shown)
        snap.text.encode()
        shown = snap.text
    assert shown == text == f.result().text


def test_a_snapshot_rebuilds_a_changed_block_whole_and_only_partial_arguments_live() -> None:
    # What docs/fold.md "Live UIs: snapshots" states about the cost of a snapshot: a changed
    # block's text and an open call's arguments_json are new strings of all of it (a cost of
    # the block's size), a single text block's string is shared with Message.text, and
    # partial_arguments() is the one value extended in place.
    f = sf.Folder("anthropic")
    f.add(MessageStart())
    f.add(BlockStart(index=0, kind="text"))
    f.add(BlockDelta(index=0, kind="text", text="Hello"))
    f.add(BlockStart(index=1, kind="tool_call", id="c", name="f"))
    f.add(BlockDelta(index=1, kind="tool_call", text='{"q": "a'))
    first = f.snapshot()
    f.add(BlockDelta(index=0, kind="text", text=", world"))
    second = f.snapshot()
    assert (first.blocks[0].text, second.blocks[0].text) == ("Hello", "Hello, world")
    assert second.text is second.blocks[0].text  # one text block: shared, not joined again
    assert second.blocks[1] is first.blocks[1]  # untouched: the same object
    f.add(BlockDelta(index=1, kind="tool_call", text='bc", "n": 1'))
    third = f.snapshot()
    assert third.blocks[0] is second.blocks[0]
    old_call, new_call = first.tool_calls[0], third.tool_calls[0]
    assert (old_call.arguments_json, new_call.arguments_json) == ('{"q": "a', '{"q": "abc", "n": 1')
    live = new_call.partial_arguments()
    assert old_call.partial_arguments() is live  # the accumulator's object, grown in place
    assert live == {"q": "abc"}  # `"n": 1` may still grow: left out


def test_open_call_with_an_integer_past_the_digit_limit_says_so() -> None:
    # No value of these arguments can be read (Python's int digit limit, as json.loads): the
    # open call's snapshot said nothing (no arguments, no error) where the closed call says
    # why; now both give the same error.
    import sys

    digits = "1" * (sys.get_int_max_str_digits() + 1)
    f = sf.Folder()
    f.add(MessageStart())
    f.add(BlockStart(index=0, kind="tool_call", id="c", name="count"))
    f.add(BlockDelta(index=0, kind="tool_call", text='{"n": ' + digits + ", "))
    open_call = f.snapshot().tool_calls[0]
    assert open_call.complete is False
    assert open_call.arguments is None
    assert open_call.partial_arguments() is None
    assert open_call.error is not None
    assert open_call.error.startswith("unreadable JSON arguments: ")
    assert "digits" in open_call.error
    f.add(BlockDelta(index=0, kind="tool_call", text='"m": 1}'))
    assert f.snapshot().tool_calls[0].error == open_call.error
    f.add(BlockEnd(index=0, kind="tool_call"))
    closed = f.snapshot().tool_calls[0]
    assert (closed.complete, closed.arguments) == (True, None)
    assert closed.error == open_call.error
