"""JsonAccumulator against json.loads and the slow reference of ``partial_reference``: random
documents pushed in random fragments, with the partial view and its changes checked after
every fragment, and broken documents caught at their first bad byte."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import streamfold as sf
from partial_reference import (
    MAX_DEPTH,
    byte_offset,
    first_invalid,
    read,
    reference_changes,
    reference_partial,
)

# ---- equality that tells 1 from 1.0, -0.0 from 0.0, and NaN from nothing ----


def same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def changes_of(acc: sf.JsonAccumulator) -> tuple[Any, list[tuple[Any, str, str | None]]]:
    value, changes = acc.partial_with_changes()
    return value, [(c.path, c.kind, c.text) for c in changes]


# ---- documents: values with raw number texts, escapes and duplicate keys ----


@dataclass(frozen=True)
class Raw:
    """JSON text used as is (numbers of every shape, hand-made escapes)."""

    text: str


@dataclass(frozen=True)
class Obj:
    """An object as its members, duplicate keys allowed."""

    members: tuple[tuple[str, Any], ...]


raw_numbers = st.from_regex(
    r"\A-?(0|[1-9][0-9]{0,30})(\.[0-9]{1,12})?([eE][+-]?[0-9]{1,3})?\Z"
).map(Raw)
raw_strings = st.lists(
    st.sampled_from(
        [
            "a",
            "\\n",
            "\\t",
            "\\/",
            "\\\\",
            '\\"',
            "\\b",
            "\\f",
            "\\r",
            "\\u00e9",
            "\\u00E9",
            "\\u0000",
            "\\ud83d\\ude00",
            "\\uD83D\\uDE00",
            "\\ud800",
            "\\udfff",
            "\\ud800\\ud800",
            "\\ud83da",
            "\\ud83d\\n",
            "é",
            "😀",
            "\x7f",
        ]
    ),
    max_size=8,
).map(lambda parts: Raw('"' + "".join(parts) + '"'))
no_surrogates = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(),
    raw_numbers,
    no_surrogates,
    raw_strings,
)
documents = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.lists(
            st.tuples(st.one_of(no_surrogates, st.sampled_from(["a", "b", "a"])), inner),
            max_size=5,
        ).map(lambda m: Obj(tuple(m))),
    ),
    max_leaves=25,
)


def dump(value: Any, *, ascii_only: bool, indent: int | None, level: int = 0) -> str:
    def inner(v: Any) -> str:
        return dump(v, ascii_only=ascii_only, indent=indent, level=level + 1)

    if isinstance(value, Raw):
        return value.text
    if isinstance(value, (list, Obj)):
        if isinstance(value, list):
            opener, closer = "[", "]"
            parts = [inner(v) for v in value]
        else:
            opener, closer = "{", "}"
            colon = ": " if indent is not None else ":"
            parts = [
                json.dumps(k, ensure_ascii=ascii_only) + colon + inner(v) for k, v in value.members
            ]
        if not parts:
            return opener + closer
        if indent is None:
            return opener + ",".join(parts) + closer
        pad, outer = "\n" + " " * (indent * (level + 1)), "\n" + " " * (indent * level)
        return opener + pad + ("," + pad).join(parts) + outer + closer
    return json.dumps(value, ensure_ascii=ascii_only)


@st.composite
def texts(draw: st.DrawFn) -> str:
    value = draw(documents)
    text = dump(
        value,
        ascii_only=draw(st.booleans()),
        indent=draw(st.sampled_from([None, None, 2, 0])),
    )
    return draw(st.sampled_from(["", " ", "\n"])) + text + draw(st.sampled_from(["", " \n", "\t"]))


@st.composite
def split(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=40))))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


# ---- the differential test ----


@given(data=st.data())
def test_partial_and_changes_follow_the_reference_and_value_is_json_loads(
    data: st.DataObject,
) -> None:
    text = data.draw(texts())
    expected = json.loads(text)
    assert same(reference_partial(text + " "), expected)  # the reference reads what json reads
    acc = sf.JsonAccumulator()
    pushed = ""
    seen = 0  # what the previous partial call had seen
    for fragment in data.draw(split(text)):
        acc.push(fragment)
        pushed += fragment
        assert acc.text == pushed
        assert acc.is_complete == read(pushed).complete
        if data.draw(st.booleans()):
            value, changes = changes_of(acc)
            assert changes == reference_changes(pushed, seen, len(pushed))
        else:
            value = acc.partial()
        seen = len(pushed)
        assert same(value, reference_partial(pushed)), (pushed, value)
    assert acc.is_complete
    assert same(acc.value(), expected)
    assert same(acc.value(), expected)  # parsing again gives the same
    assert same(acc.partial(), reference_partial(text))


@given(text=texts())
def test_every_prefix_is_incomplete_until_complete(text: str) -> None:
    for end in range(len(text) + 1):
        acc = sf.JsonAccumulator()
        acc.push(text[:end])
        if read(text[:end]).complete:
            assert acc.is_complete
            continue
        assert not acc.is_complete
        with pytest.raises(sf.IncompleteJsonError) as info:
            acc.value()
        assert info.value.offset == len(text[:end].encode())
        assert info.value.expected


_EDITS = list('{}[]:,"\\ \n-+.eE019tfnulraINx/bé\x01\x1f')


@given(data=st.data())
def test_invalid_text_is_caught_at_its_first_bad_byte(data: st.DataObject) -> None:
    text = data.draw(texts())
    at = data.draw(st.integers(0, len(text)))
    drop = data.draw(st.integers(0, 1))
    edited = text[:at] + data.draw(st.sampled_from(_EDITS)) + text[at + drop :]
    bad = first_invalid(edited)
    acc = sf.JsonAccumulator()
    pushed = ""
    error: sf.InvalidJsonError | None = None
    for fragment in data.draw(split(edited)):
        if error is None:
            try:
                acc.push(fragment)
            except sf.InvalidJsonError as e:
                error = e
                pushed += fragment
                assert bad is not None and bad < len(pushed), "raised too early"
            else:
                pushed += fragment
                assert bad is None or bad >= len(pushed), "missed the bad byte"
                acc.partial()
        else:
            with pytest.raises(sf.InvalidJsonError) as again:
                acc.push(fragment)
            pushed += fragment
            assert again.value.offset == error.offset
            assert acc.text == pushed  # every fragment kept, the later ones too
    if bad is None:
        assert error is None
        assert acc.is_complete == read(edited).complete
        if acc.is_complete:
            assert same(acc.value(), json.loads(edited))
        return
    assert error is not None
    assert error.offset == byte_offset(edited, bad)
    assert error.expected
    assert isinstance(error, ValueError)
    assert isinstance(error, sf.StreamfoldError)
    assert not acc.is_complete
    for call in (acc.value, acc.partial, acc.partial_with_changes):
        with pytest.raises(sf.InvalidJsonError) as later:
            call()
        assert later.value.offset == error.offset


# ---- examples ----


def test_empty_text_is_incomplete() -> None:
    acc = sf.JsonAccumulator()
    assert acc.text == ""
    assert not acc.is_complete
    assert acc.partial() is None
    with pytest.raises(sf.IncompleteJsonError) as info:
        acc.value()
    assert (info.value.offset, info.value.expected) == (0, "a value")
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, sf.StreamfoldError)


def test_error_says_where_and_what_was_expected() -> None:
    acc = sf.JsonAccumulator()
    acc.push('{"city": "Zürich"')
    with pytest.raises(sf.InvalidJsonError) as info:
        acc.push(' "country": 1}')
    assert info.value.offset == len('{"city": "Zürich" '.encode())
    assert info.value.expected == "',' or '}'"
    assert "byte 19" in str(info.value)
    assert acc.text == '{"city": "Zürich" "country": 1}'


@pytest.mark.parametrize(
    "text",
    [
        '"\\ud800"',
        '["\\udc00\\ud800", "\\ud83d\\ude00", "\\ud83dx", "a\\udfff"]',
        '{"\\ud800": "\\ud800\\ud800"}',
    ],
)
def test_lone_surrogate_escapes_are_kept_as_json_loads_does(text: str) -> None:
    acc = sf.JsonAccumulator()
    acc.push(text)
    assert same(acc.value(), json.loads(text))
    assert same(acc.partial(), json.loads(text))


def test_nesting_beyond_jiter_limit_matches_json_loads() -> None:
    text = "[" * 300 + '{"a": 1.5}' + "]" * 300
    acc = sf.JsonAccumulator()
    acc.push(text)
    assert acc.value() == json.loads(text)


def test_nesting_is_limited() -> None:
    acc = sf.JsonAccumulator()
    acc.push("[" * MAX_DEPTH)
    with pytest.raises(sf.InvalidJsonError) as info:
        acc.push("[")
    assert info.value.offset == MAX_DEPTH
    assert "512" in info.value.expected


def test_big_integers() -> None:
    text = '{"n": -' + "9" * 500 + ', "m": 18446744073709551616}'
    acc = sf.JsonAccumulator()
    acc.push(text)
    assert acc.value() == json.loads(text)
    assert acc.partial() == json.loads(text)


def test_integers_beyond_pythons_digit_limit_raise_like_json_loads() -> None:
    text = "[" + "1" * 5000 + "]"
    with pytest.raises(ValueError, match="digits"):
        json.loads(text)
    acc = sf.JsonAccumulator()
    acc.push(text)
    assert acc.is_complete
    with pytest.raises(ValueError, match="digits"):
        acc.value()
    with pytest.raises(ValueError, match="digits"):
        acc.partial()


@pytest.mark.parametrize(
    "number",
    [
        "1.7976931348623157e308",
        "1.7976931348623159e308",
        "2.2250738585072011e-308",
        "4.9e-324",
        "2.4703282292062327e-324",
        "2.4703282292062328e-324",
        "1e-400",
        "-1e-400",
        "1e400",
        "1e99999999999999999999",
        "0.30000000000000004",
        "123456789012345678901234567890e-10",
        "9007199254740993",
        "9007199254740993.0",
        "-0",
        "-0.0",
        "0E-0",
        "1E+2",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775809",
        "1" + "0" * 400 + ".5",
    ],
)
def test_number_edges_like_json_loads(number: str) -> None:
    text = f'{{"n": [{number}]}}'
    acc = sf.JsonAccumulator()
    acc.push(text)
    assert same(acc.value(), json.loads(text))
    assert same(acc.partial(), json.loads(text))


def test_non_finite_numbers_like_json_loads() -> None:
    acc = sf.JsonAccumulator()
    for fragment in ["[Na", "N, -", "Infinity, Infini", "ty, 1e400, -0.0, -0]"]:
        acc.push(fragment)
    value = acc.value()
    assert same(value, json.loads(acc.text))
    assert math.isnan(value[0])
    assert value[1:4] == [-math.inf, math.inf, math.inf]


def test_top_level_number_is_complete_but_shown_only_once_it_ended() -> None:
    acc = sf.JsonAccumulator()
    acc.push("12")
    assert acc.is_complete
    assert acc.value() == 12
    assert acc.partial() is None
    acc.push("3")
    assert acc.value() == 123
    acc.push(" ")
    assert acc.partial() == 123


def test_trailing_whitespace_only() -> None:
    acc = sf.JsonAccumulator()
    acc.push('{"a": 1} \n\t\r ')
    assert acc.is_complete
    with pytest.raises(sf.InvalidJsonError) as info:
        acc.push("x")
    assert info.value.offset == 13


def test_the_partial_value_is_live_and_strings_stay_immutable() -> None:
    acc = sf.JsonAccumulator()
    acc.push('{"path": "a.txt", "content": "ab')
    view = acc.partial()
    kept = view["content"]
    assert view == {"path": "a.txt", "content": "ab"}
    acc.push("cd")
    assert acc.partial() is view
    assert view["content"] == "abcd"
    assert kept == "ab"  # the string we held was not extended in place
    acc.push('", "n": [1')
    assert acc.partial() is view
    assert view == {"path": "a.txt", "content": "abcd", "n": []}
    acc.push("]}")
    assert acc.partial() == {"path": "a.txt", "content": "abcd", "n": [1]}
    assert acc.value() == view
    assert acc.value() is not view


def test_a_growing_root_string() -> None:
    acc = sf.JsonAccumulator()
    parts = ['"', "ab", "c\\", "u00e9", "\\ud83d", "\\ude00", '"']
    seen = []
    for p in parts:
        acc.push(p)
        seen.append(acc.partial())
    assert seen == ["", "ab", "abc", "abcé", "abcé", "abcé😀", "abcé😀"]


def test_duplicate_keys_last_wins_in_first_position() -> None:
    acc = sf.JsonAccumulator()
    acc.push('{"a": 1, "b": 2, "a": ')
    assert acc.partial() == {"a": 1, "b": 2}
    acc.push("3")
    assert acc.partial() == {"a": 1, "b": 2}
    acc.push("}")
    assert list(acc.partial().items()) == [("a", 3), ("b", 2)]
    assert list(acc.value().items()) == [("a", 3), ("b", 2)]


def test_modifying_the_partial_value_raises_instead_of_crashing() -> None:
    acc = sf.JsonAccumulator()
    acc.push('{"a": "x')
    del acc.partial()["a"]
    acc.push("y")
    with pytest.raises(RuntimeError, match="modified"):
        acc.partial()


def test_changes_report_what_a_view_needs() -> None:
    acc = sf.JsonAccumulator()
    acc.push('{"file": "a.py", "body": "def')
    value, changes = changes_of(acc)
    assert changes == [
        ((), "set", None),
        (("file",), "set", None),
        (("file",), "completed", None),
        (("body",), "set", None),
    ]
    assert value == {"file": "a.py", "body": "def"}
    acc.push(" f():")
    assert changes_of(acc)[1] == [(("body",), "grew", " f():")]
    assert changes_of(acc)[1] == []
    acc.push('\\n", "tags": ["x", 2')
    assert changes_of(acc)[1] == [
        (("body",), "grew", "\n"),
        (("body",), "completed", None),
        (("tags",), "set", None),
        (("tags", 0), "set", None),
        (("tags", 0), "completed", None),
    ]
    acc.push("]}")
    assert changes_of(acc)[1] == [
        (("tags", 1), "set", None),
        (("tags", 1), "completed", None),
        (("tags",), "completed", None),
        ((), "completed", None),
    ]


def test_json_change_value_object() -> None:
    change = sf.JsonChange(("a", 0), "grew", "xy")
    assert (change.path, change.kind, change.text) == (("a", 0), "grew", "xy")
    assert change == sf.JsonChange(("a", 0), "grew", "xy")
    assert change != sf.JsonChange(("a", 0), "grew", "x")
    assert change != sf.JsonChange(("a",), "grew", "xy")
    assert sf.JsonChange((), "set") != sf.JsonChange((), "completed")
    assert hash(change) == hash(sf.JsonChange(("a", 0), "grew", "xy"))
    assert len({change, sf.JsonChange(("a", 0), "grew", "xy"), sf.JsonChange((), "set")}) == 2
    assert repr(change) == "JsonChange(path=('a', 0), kind='grew', text='xy')"
    assert repr(sf.JsonChange((), "set")) == "JsonChange(path=(), kind='set')"
    with pytest.raises(ValueError, match="kind"):
        sf.JsonChange((), "changed")


def test_a_surrogate_pair_split_between_fragments_is_joined() -> None:
    acc = sf.JsonAccumulator()
    acc.push('["a\ud83d')
    assert acc.text == '["a'
    assert acc.partial() == ["a"]
    acc.push('\ude00b"]')
    assert acc.text == '["a😀b"]'
    assert acc.value() == ["a😀b"]


@pytest.mark.parametrize(
    ("fragments", "offset"),
    [
        (['"a\ud800b"'], 2),
        (['"a\udc00'], 2),
        (['"a\ud83d', 'b"'], 2),
        (["[1, \ud83d"], 4),
        (['{"a": 1}\ud83d'], 8),
    ],
)
def test_lone_surrogate_characters_are_invalid(fragments: list[str], offset: int) -> None:
    acc = sf.JsonAccumulator()
    with pytest.raises(sf.InvalidJsonError) as info:
        for fragment in fragments:
            acc.push(fragment)
    assert info.value.offset == offset
    assert "surrogate" in str(info.value)
    # The text keeps the fragment that broke it, whole (it kept only what came before the
    # surrogate, and dropped a pair's waiting first half).
    assert acc.text == "".join(fragments)
    # Later fragments are refused, and kept after it (one with a surrogate of its own too).
    with pytest.raises(sf.InvalidJsonError):
        acc.push("]")
    with pytest.raises(sf.InvalidJsonError):
        acc.push("\udfff, 2")
    assert acc.text == "".join(fragments) + "]\udfff, 2"


def test_fragments_after_an_invalid_one_are_kept_in_the_text() -> None:
    acc = sf.JsonAccumulator()
    acc.push('{"a": 1')
    with pytest.raises(sf.InvalidJsonError) as first:
        acc.push(' x "b"')
    for fragment in [": 2", "}", "\ud83d", "\ude00", "é"]:
        with pytest.raises(sf.InvalidJsonError) as again:
            acc.push(fragment)
        assert again.value.offset == first.value.offset
    assert acc.text == '{"a": 1 x "b": 2}\ud83d\ude00é'
    assert not acc.is_complete


#: 20,000 accumulators holding a small object each, their partial views read.
_MANY_SMALL = """
import resource, sys
import streamfold as sf
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kept = []
for i in range(20_000):
    acc = sf.JsonAccumulator()
    acc.push('{"id": %d, "unit": "c"}' % i)
    acc.partial()
    kept.append(acc)
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(grown if sys.platform.startswith("linux") else grown // 1024)  # KiB
"""


def test_many_small_accumulators_take_little_memory() -> None:
    # Measured in a process of its own (the peak resident size grows with what it holds):
    # 20,000 small calls took 144 MiB when each accumulator reserved 6 KiB up front.
    out = subprocess.run(
        [sys.executable, "-c", _MANY_SMALL], capture_output=True, text=True, check=True
    )
    assert int(out.stdout) < 64 * 1024  # 29 MiB now, 144 MiB then


def test_memory_held_grows_with_the_input_not_up_front() -> None:
    # A fold keeps one accumulator per tool call: 21,000 small calls took 173 MiB when each
    # reserved a 6 KiB key cache at creation.
    empty = sys.getsizeof(sf.JsonAccumulator())
    assert empty < 1024
    small = sf.JsonAccumulator()
    small.push('{"city": "Paris", "unit": "c"}')
    assert small.partial() == {"city": "Paris", "unit": "c"}
    assert sys.getsizeof(small) < empty + 1024
    # Many distinct keys: the cache grows to its full size, and the text with them.
    big = sf.JsonAccumulator()
    big.push("{" + ", ".join(f'"key{i}": {i}' for i in range(1000)) + "}")
    assert big.partial()["key999"] == 999
    assert sys.getsizeof(big) > sys.getsizeof(small) + 6 * 1024


def test_push_takes_str_only() -> None:
    acc = sf.JsonAccumulator()
    with pytest.raises(TypeError):
        acc.push(b"{}")  # type: ignore[arg-type]


def test_repr() -> None:
    acc = sf.JsonAccumulator()
    acc.push("[1")
    assert repr(acc) == "<JsonAccumulator 2 bytes, incomplete>"
    acc.push("]")
    assert repr(acc) == "<JsonAccumulator 3 bytes, complete>"
