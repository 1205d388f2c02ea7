"""``domain.game.state.replace``: the same copies as ``dataclasses.replace``, for every state
class of the core (slotted, inherited slots, a class without slots, derived fields); and
``fast_init``: the same instances as each frozen dataclass's own ``__init__``."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from dataclasses import MISSING, dataclass, field
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

import domain.game
from domain.cards import Card
from domain.game.hands import Hand
from domain.game.state import DATACLASS_INITS, replace
from domain.scoring import score

_CODES = {f"{r}{s}" for r in ("A", "2", "5", "7", "9", "10", "K") for s in "SHDC"}


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


# ------------------------------------------------------------------------------ fast_init
FAST = sorted(DATACLASS_INITS, key=lambda c: f"{c.__module__}.{c.__qualname__}")


def _built(cls: type, init: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    obj = object.__new__(cls)
    init(obj, *args, **kwargs)
    return obj


def _call(cls: type, values: dict[str, Any], *, defaults: bool) -> tuple[list[Any], dict[str, Any]]:
    """Positional arguments for the positional fields, keywords for the keyword-only ones;
    ``defaults``: leave out every field that has a default or a default factory."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        has_default = f.default is not MISSING or f.default_factory is not MISSING
        if not f.init or (defaults and has_default):
            continue
        if f.kw_only or kwargs:
            kwargs[f.name] = values[f.name]
        else:
            args.append(values[f.name])
    return args, kwargs


def test_the_hot_core_classes_are_made_by_fast_init() -> None:
    names = {c.__qualname__ for c in FAST}
    assert {"Hand", "Wager", "PlayerState", "PlayerHands", "Take", "Entry", "Step"} <= names
    assert all(c in STATE_CLASSES for c in FAST)


@pytest.mark.parametrize("cls", FAST, ids=lambda c: c.__qualname__)
def test_fast_init_has_the_dataclass_signature(cls: type) -> None:
    """The same parameters in the same order and kinds; the same default objects (a default
    factory: a default both ways, the factory called when the argument is left out)."""
    mine = inspect.signature(cls.__init__).parameters
    theirs = inspect.signature(DATACLASS_INITS[cls]).parameters
    assert [(p.name, p.kind) for p in mine.values()] == [(p.name, p.kind) for p in theirs.values()]
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for name, p in theirs.items():
        if name == "self":
            continue
        if fields[name].default is not MISSING:
            assert mine[name].default is p.default
        else:
            assert (mine[name].default is inspect.Parameter.empty) == (
                p.default is inspect.Parameter.empty
            )


@pytest.mark.parametrize("cls", FAST, ids=lambda c: c.__qualname__)
@pytest.mark.parametrize("defaults", [False, True], ids=["every-field", "defaults"])
def test_fast_init_makes_what_the_dataclass_makes(cls: type, defaults: bool) -> None:
    """Every field (derived ones included) the same object both ways, given every field or
    only the required ones; a default factory's value made afresh for each instance."""
    if hasattr(cls, "__post_init__"):
        pytest.skip("__post_init__ needs real values: the Hand test below")
    values = {f.name: ("value", i) for i, f in enumerate(dataclasses.fields(cls))}
    args, kwargs = _call(cls, values, defaults=defaults)
    mine = _built(cls, cls.__init__, args, kwargs)
    theirs = _built(cls, DATACLASS_INITS[cls], args, kwargs)
    for f in dataclasses.fields(cls):
        got, want = getattr(mine, f.name), getattr(theirs, f.name)
        if defaults and f.default_factory is not MISSING:
            assert got == want
            assert got is not want  # each instance its own
            assert got is not getattr(cls(*args, **kwargs), f.name)
        else:
            assert got is want, f.name
    assert mine == theirs
    with pytest.raises(dataclasses.FrozenInstanceError):
        mine.__setattr__(dataclasses.fields(cls)[0].name, 0)


@given(
    cards=st.lists(st.sampled_from(sorted(_CODES)), max_size=6),
    flags=st.lists(st.booleans(), min_size=8, max_size=8),
    actions=st.integers(0, 5),
)
def test_fast_init_of_a_hand_derives_its_score(
    cards: list[str], flags: list[bool], actions: int
) -> None:
    """``Hand``'s ``__post_init__`` runs: the score of its cards, as the dataclass's own
    ``__init__`` derives it, every field equal."""
    parsed = tuple(Card.parse(c) for c in cards)
    args = ["1.2", "ana", "3", parsed, *flags[:5], "stand" if flags[5] else None, actions]
    kwargs = {"owed": flags[6], "owed_rule": "D9", "auto": flags[7]}
    mine = Hand(*args, **kwargs)  # type: ignore[arg-type]
    theirs = _built(Hand, DATACLASS_INITS[Hand], args, kwargs)
    assert _fields(mine) == _fields(theirs)
    assert mine.score == theirs.score == score(parsed)
