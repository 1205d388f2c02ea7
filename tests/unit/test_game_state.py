"""``domain.game.state.replace``: the same copies as ``dataclasses.replace``, for every state
class of the core (slotted, inherited slots, a class without slots, derived fields)."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest

import domain.game
from domain.cards import Card
from domain.game.hands import Hand
from domain.game.state import replace


def _state_classes() -> list[type]:
    found: dict[str, type] = {}
    for info in pkgutil.iter_modules(domain.game.__path__):
        module = importlib.import_module(f"domain.game.{info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and dataclasses.is_dataclass(value)
                and value.__module__ == module.__name__
                and value.__dataclass_params__.frozen  # type: ignore[attr-defined]
            ):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[k] for k in sorted(found)]


STATE_CLASSES = _state_classes()


def _fields(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def test_the_core_has_slotted_state_classes() -> None:
    assert Hand in STATE_CLASSES
    assert any("__slots__" in vars(c) for c in STATE_CLASSES)


@pytest.mark.parametrize("cls", STATE_CLASSES, ids=lambda c: c.__qualname__)
def test_every_core_class_copies_every_field(cls: type) -> None:
    """Each init field changed alone ends up in the copy, every other field (derived ones
    included) is the original's; the copy is as frozen as the original."""
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    # an instance built without __init__ (the fields' values do not matter to a copy)
    obj: Any = object.__new__(cls)
    for i, f in enumerate(dataclasses.fields(cls)):
        object.__setattr__(obj, f.name, ("value", i))
    derived_from = getattr(cls, "DERIVED_FROM", None)
    for name in names:
        if derived_from is None and hasattr(cls, "__post_init__"):
            continue  # __post_init__ needs real values: covered by the Hand tests
        if derived_from is not None and name in derived_from:
            continue
        copy = replace(obj, **{name: ("changed", name)})
        want = {**_fields(obj), name: ("changed", name)}
        assert _fields(copy) == want
        assert type(copy) is cls
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(copy, name, 1)


def test_hand_same_as_dataclasses_replace() -> None:
    h = Hand("1", "p", "p", (Card.parse("8H"), Card.parse("3D")))
    for changes in (
        {"owed": True, "actions": 1},
        {"cards": (*h.cards, Card.parse("10S"))},
        {"finished": True, "finish_reason": "HAND-1"},
        {},
    ):
        mine, theirs = replace(h, **changes), dataclasses.replace(h, **changes)
        assert mine == theirs
        assert _fields(mine) == _fields(theirs)  # the score too (compare=False)
    assert replace(h, owed=True).score is h.score  # kept: its cards did not change


@dataclass(frozen=True, slots=True)
class _Base:
    a: int
    b: str = "b"


@dataclass(frozen=True, slots=True)
class _Child(_Base):
    c: tuple[int, ...] = ()
    total: int = field(init=False, default=0)
    DERIVED_FROM: ClassVar[tuple[str, ...]] = ("c",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "total", self.a + sum(self.c))


@dataclass(frozen=True)
class _NoSlots:
    a: int
    b: Any = None


@pytest.mark.parametrize(
    ("obj", "changes"),
    [
        (_Child(1, "x", (2, 3)), {"a": 5}),  # a base's slot; total kept (DERIVED_FROM: c)
        (_Child(1, "x", (2, 3)), {"c": (4,), "b": "y"}),
        (_Child(1), {}),
        (_NoSlots(1), {"b": None}),
        (_NoSlots(1, 2), {"a": 3}),
    ],
)
def test_inherited_slots_and_classes_without_slots(obj: Any, changes: dict[str, Any]) -> None:
    mine = replace(obj, **changes)
    theirs = dataclasses.replace(obj, **changes)
    if isinstance(obj, _Child) and "c" not in changes:
        assert mine.total == obj.total  # kept as the docstring says
        assert _fields(mine) == {**_fields(obj), **changes}
    else:
        assert _fields(mine) == _fields(theirs)
    with pytest.raises(dataclasses.FrozenInstanceError):
        mine.a = 9
