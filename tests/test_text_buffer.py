"""``TextBuffer``, where a fold keeps a text block's text: its fragments in order, made one
``str`` where a character a host cut into two UTF-16 halves (one per fragment) is one
character again, as joining the fragments and repairing the pairs would give."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamfold._core import TextBuffer


def reference(fragments: list[str]) -> str:
    """The fragments joined, each high surrogate directly followed by a low one made the
    character they form (the UTF-16 round trip); a lone surrogate stays."""
    joined = "".join(fragments)
    return joined.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


#: Characters of every width, and the halves of an emoji on their own.
characters = st.one_of(
    st.characters(codec="utf-8"),
    st.sampled_from(["\ud83d", "\ude00", "\udbff", "\udc00", "é", "字", "😀"]),
)


@given(st.lists(st.text(alphabet=characters, max_size=6), max_size=12))
def test_text_is_the_fragments_joined_with_split_pairs_repaired(fragments: list[str]) -> None:
    buffer = TextBuffer()
    for fragment in fragments:
        buffer.append(fragment)
    assert buffer.text() == reference(fragments)
    assert bool(buffer) == any(fragments)
    assert len(buffer) == len("".join(fragments).encode("utf-8", "surrogatepass"))


def test_an_emoji_cut_in_two_is_one_character_and_a_lone_half_stays() -> None:
    buffer = TextBuffer()
    for fragment in ["Hi ", "\ud83d", "\ude00", "!", "\ud83d"]:
        buffer.append(fragment)
    assert buffer.text() == "Hi 😀!\ud83d"
    assert buffer.text() == buffer.text()  # reading takes nothing away


def test_only_text_is_taken() -> None:
    buffer = TextBuffer()
    with pytest.raises(TypeError):
        buffer.append(b"bytes")  # type: ignore[arg-type]
    assert not buffer
    assert buffer.text() == ""
