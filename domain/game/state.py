"""Immutable state: how the core's state objects change (by being replaced).

Every state object of the core (hands, wagers, the dealer's hand, a round's, a shared hand's,
a participation's) is a frozen, slotted dataclass that never changes in place; its
``__deepcopy__`` returns itself, so an aggregate's copy (the application's cache copies
aggregates for each command) shares it. :func:`replace` makes the changed copy: the same result
as :func:`dataclasses.replace` (``__post_init__`` derives what it derives) without its checks,
which cost more than the change on the hot paths (a boundless round folds hundreds of thousands
of facts). A class whose ``__post_init__`` derives its non-init fields from a few fields only
names them in ``DERIVED_FROM`` (a class attribute): a copy that changes none of them keeps the
derived values instead of deriving them again (a hand's score, when only its flags change).

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True, slots=True)
... class P:
...     x: int
...     y: int = 0
>>> replace(P(1, 2), y=3)
P(x=1, y=3)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar, cast

T = TypeVar("T")
_REPLACERS: dict[type, Callable[[Any, dict[str, Any]], Any]] = {}


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of the frozen dataclass ``obj`` with ``changes``."""
    cls = type(obj)
    make = _REPLACERS.get(cls)
    if make is None:
        make = _REPLACERS[cls] = _replacer(cls)
    return cast(T, make(obj, changes))


def _replacer(cls: type) -> Callable[[Any, dict[str, Any]], Any]:
    """The copy-with-changes of one class, its fields unrolled (a loop over the fields with
    ``getattr`` costs twice as much, and the core replaces hundreds of thousands of states
    to verify one boundless round)."""
    fields = dataclasses.fields(cls)
    names = [f.name for f in fields if f.init]
    post = getattr(cls, "__post_init__", None)
    lines = ["def make(obj, changes):", "    new = new_(cls)"]
    lines += [
        f"    put(new, {n!r}, changes[{n!r}] if {n!r} in changes else obj.{n})" for n in names
    ]
    sources: tuple[str, ...] | None = getattr(cls, "DERIVED_FROM", None)
    if post is not None and sources is not None:
        # ``__post_init__`` derives the fields not passed to ``__init__`` from ``sources``
        # alone: when none of those changes, the copy keeps the derived values
        derived = [f.name for f in fields if not f.init]
        lines.append(f"    if {' or '.join(f'{n!r} in changes' for n in sources)}:")
        lines.append("        post(new)")
        lines.append("    else:")
        lines += [f"        put(new, {n!r}, obj.{n})" for n in derived]
    elif post is not None:
        lines.append("    post(new)")
    lines.append("    return new")
    scope: dict[str, Any] = {"new_": object.__new__, "cls": cls, "put": object.__setattr__}
    scope["post"] = post
    exec("\n".join(lines), scope)  # noqa: S102 - generated from the class's own field names
    return cast(Callable[[Any, dict[str, Any]], Any], scope["make"])


__all__ = ["replace"]
