"""The events' cheaper ``__init__`` (``_frozen_init``) against the one ``dataclasses`` wrote.

The original is kept on the new function, so every comparison here is between the two
constructors of the same class: same fields stored, same signature, same errors.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamfold import _events as events_module
from streamfold._events import EVENT_CLASSES
from streamfold._frozen_init import fast_init, has_fast_init

values = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=5),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.builds(object),
)


def init_of(cls: type) -> Any:
    return cls.__dict__["__init__"]


def original_init(cls: type) -> Any:
    return init_of(cls).__dataclass_init__


def build_original(cls: type, kwargs: dict[str, Any]) -> Any:
    obj: Any = object.__new__(cls)
    original_init(cls)(obj, **kwargs)
    return obj


def stored(obj: Any) -> list[Any]:
    """Every field, ``raw`` included (which ``==`` leaves out)."""
    return [getattr(obj, f.name) for f in dataclasses.fields(obj)]


@pytest.mark.parametrize("cls", EVENT_CLASSES, ids=lambda c: c.__name__)
def test_every_event_class_has_the_fast_init(cls: type) -> None:
    # A field added later with a default factory (or a __post_init__) would silently keep
    # the slow constructor; this says so instead.
    assert has_fast_init(cls)


@pytest.mark.parametrize("cls", EVENT_CLASSES, ids=lambda c: c.__name__)
def test_signature_and_names_are_the_dataclass_ones(cls: type) -> None:
    assert inspect.signature(init_of(cls)) == inspect.signature(original_init(cls))
    assert inspect.signature(cls) == inspect.signature(original_init(cls)).replace(
        parameters=list(inspect.signature(original_init(cls)).parameters.values())[1:]
    )
    assert init_of(cls).__qualname__ == original_init(cls).__qualname__
    assert init_of(cls).__module__ == original_init(cls).__module__


@pytest.mark.parametrize("cls", EVENT_CLASSES, ids=lambda c: c.__name__)
@given(data=st.data())
def test_same_fields_stored(cls: type, data: st.DataObject) -> None:
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        required = f.default is dataclasses.MISSING
        if required or data.draw(st.booleans()):
            kwargs[f.name] = data.draw(values)
    fast = cls(**kwargs)
    slow = build_original(cls, kwargs)
    assert type(fast) is cls
    assert stored(fast) == stored(slow)
    for f in dataclasses.fields(cls):  # the very objects, not equal copies
        assert getattr(fast, f.name) is getattr(slow, f.name)
    assert fast == slow
    assert repr(fast) == repr(slow)


@pytest.mark.parametrize("cls", EVENT_CLASSES, ids=lambda c: c.__name__)
def test_same_errors(cls: type) -> None:
    required = {f.name: None for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING}
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((), {**required, "no_such_field": 1}),
        ((1,), required),
    ]
    if required:
        calls.append(((), {}))
    for args, kwargs in calls:
        with pytest.raises(TypeError) as fast:
            cls(*args, **kwargs)
        with pytest.raises(TypeError) as slow:
            original_init(cls)(object.__new__(cls), *args, **kwargs)
        assert str(fast.value) == str(slow.value)


def test_events_stay_frozen() -> None:
    start = events_module.MessageStart(id="a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        start.id = "b"  # type: ignore[misc]
    assert dataclasses.replace(start, id="b").id == "b"
    assert has_fast_init(type(dataclasses.replace(start, id="b")))


def test_classes_outside_the_simple_case_are_left_alone() -> None:
    @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    class WithFactory:
        items: list[int] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    class WithPostInit:
        a: int = 0

        def __post_init__(self) -> None:
            pass

    @dataclasses.dataclass(frozen=True, slots=True)
    class Positional:
        a: int

    @dataclasses.dataclass(slots=True, kw_only=True)
    class NotFrozen:
        a: int

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class NoSlots:
        a: int

    for cls in (WithFactory, WithPostInit, Positional, NotFrozen, NoSlots):
        before = init_of(cls)
        assert fast_init(cls) is cls
        assert init_of(cls) is before
        assert not has_fast_init(cls)


def test_a_simple_class_of_its_own() -> None:
    @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    class Point:
        x: int
        y: int = 2

    fast_init(Point)
    assert has_fast_init(Point)
    assert (Point(x=1).x, Point(x=1).y, Point(x=1, y=5).y) == (1, 2, 5)


@pytest.mark.parametrize("cls", EVENT_CLASSES, ids=lambda c: c.__name__)
def test_every_field_is_stored_in_one_call(cls: type) -> None:
    """The ``__init__`` stores all fields through one ``SlotBuilder.init`` call into Rust, not
    one slot ``__set__`` call per field: calling an event class is most of a short stream's
    cost of making its few events. No source is compiled for it (no ``exec``)."""
    from streamfold._core import SlotBuilder

    init = init_of(cls)
    cells = dict(zip(init.__code__.co_freevars, init.__closure__, strict=True))
    fill = cells["fill"].cell_contents
    assert isinstance(fill.__self__, SlotBuilder)
    assert fill.__name__ == "init"
    assert init.__code__.co_filename.endswith("_frozen_init.py")


def test_init_stores_nothing_for_a_call_it_does_not_take() -> None:
    """``SlotBuilder.init`` answers ``False`` and stores nothing when the keywords name another
    field or lack a required one: the dataclass's own ``__init__`` then raises its error."""
    from streamfold._core import SlotBuilder
    from streamfold._events import MessageStart

    fields = [f.name for f in dataclasses.fields(MessageStart)]
    builder = SlotBuilder(MessageStart, fields, (), {n: None for n in fields if n != "id"})
    for kwargs in ({}, {"id": "a", "no_such_field": 1}):
        event: Any = object.__new__(MessageStart)
        assert builder.init(event, kwargs) is False
        assert not [n for n in fields if hasattr(event, n)]
    event = object.__new__(MessageStart)
    assert builder.init(event, {"id": "a"}) is True
    assert event.id == "a"
    assert all(getattr(event, n) is None for n in fields if n != "id")
    # A keyword that is not the interned field name, but equal to it.
    event = object.__new__(MessageStart)
    assert builder.init(event, {"".join(["i", "d"]): "b"}) is True
    assert event.id == "b"


def test_fill_stores_like_the_setters_and_checks_its_count() -> None:
    from streamfold._core import SlotBuilder
    from streamfold._events import MessageStart

    fields = [f.name for f in dataclasses.fields(MessageStart)]
    event: Any = object.__new__(MessageStart)
    values = [object() for _ in fields]
    SlotBuilder(MessageStart, fields, ()).fill(event, *values)
    assert all(getattr(event, name) is value for name, value in zip(fields, values, strict=True))
    with pytest.raises(TypeError, match=f"expected {len(fields)} values, got 1"):
        SlotBuilder(MessageStart, fields, ()).fill(event, 1)
    with pytest.raises(AttributeError):
        SlotBuilder(MessageStart, ["nope"], ()).fill(event, 1)
