"""Immutable state: how the core's state objects change (by being replaced).

Every state object of the core (hands, wagers, the dealer's hand, a round's, a shared hand's,
a participation's) is a frozen, slotted dataclass that never changes in place; its
``__deepcopy__`` returns itself, so an aggregate's copy (the application's cache copies
aggregates for each command) shares it. :func:`replace` makes the changed copy: the same result
as :func:`dataclasses.replace` (``__post_init__`` derives what it derives) without its checks,
which cost more than the change on the hot paths (a boundless round folds hundreds of thousands
of facts).

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
from typing import Any, TypeVar

T = TypeVar("T")
_FIELDS: dict[type, tuple[str, ...]] = {}


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of the frozen dataclass ``obj`` with ``changes``."""
    cls = type(obj)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(obj) if f.init)  # type: ignore[arg-type]
    new = object.__new__(cls)
    put = object.__setattr__
    for name in names:
        put(new, name, changes[name] if name in changes else getattr(obj, name))
    post = getattr(cls, "__post_init__", None)
    if post is not None:
        post(new)
    return new


__all__ = ["replace"]
