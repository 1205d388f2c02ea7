"""Immutable state: how the core's state objects change (by being replaced).

Every state object of the core (hands, wagers, the dealer's hand, a round's, a shared hand's,
a participation's) is a frozen dataclass that never changes in place, slotted except a round's
table (``RoundBase`` and its classes, whose many fields a copy takes at once from the instance's
``__dict__``: :func:`_dict_replacer`); its ``__deepcopy__`` returns itself, so an aggregate's
copy (the application's cache copies aggregates for each command) shares it. :func:`replace`
makes the changed copy: the same result as :func:`dataclasses.replace` (``__post_init__``
derives what it derives) without its checks, which cost more than the change on the hot paths
(a boundless round folds hundreds of thousands of facts). A class whose ``__post_init__``
derives its non-init fields from a few fields only names them in ``DERIVED_FROM`` (a class
attribute): a copy that changes none of them keeps the derived values instead of deriving them
again (a hand's score, when only its flags change).

:func:`fast_init` gives such a class an ``__init__`` that writes each field through its slot's
own descriptor (or, for a class without slots, straight into the instance's ``__dict__``)
instead of the frozen dataclass's ``object.__setattr__`` a field: the same signature, defaults,
default factories and ``__post_init__``, a third to three fifths of the cost of making one (the
core makes a hand, a wager, a step or a command for nearly every fact it decides).

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
from types import MemberDescriptorType
from typing import Any, TypeVar, cast

T = TypeVar("T")
C = TypeVar("C", bound=type)
_REPLACERS: dict[type, Callable[[Any, dict[str, Any]], Any]] = {}


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of the frozen dataclass ``obj`` with ``changes``."""
    make = _REPLACERS.get(type(obj))
    if make is None:
        make = _REPLACERS[type(obj)] = _replacer(type(obj))
    return make(obj, changes)  # type: ignore[no-any-return]  # T: what ``make`` copies


def _replacer(cls: type) -> Callable[[Any, dict[str, Any]], Any]:
    """The copy-with-changes of one class, its fields unrolled (a loop over the fields with
    ``getattr`` costs twice as much, and the core replaces hundreds of thousands of states
    to verify one boundless round). Each field is written through its slot's own descriptor
    (``member_descriptor.__set__``, what ``object.__setattr__`` finds after looking the name
    up on the class: a third cheaper a copy); a field without a slot (a class that is not
    slotted) through ``object.__setattr__``."""
    fields = dataclasses.fields(cls)
    names = [f.name for f in fields if f.init]
    post = getattr(cls, "__post_init__", None)
    scope: dict[str, Any] = {"new_": object.__new__, "cls": cls, "post": post}
    sources: tuple[str, ...] | None = getattr(cls, "DERIVED_FROM", None)
    if all(_slot(cls, f.name) is None for f in fields):
        return _dict_replacer(cls, post, sources)
    setters: dict[str, str] = {}
    for i, f in enumerate(fields):
        slot = _slot(cls, f.name)
        setters[f.name] = setter = f"set{i}"
        scope[setter] = slot.__set__ if slot is not None else _setattr(f.name)
    lines = ["def make(obj, changes):", "    new = new_(cls)"]
    lines += [
        f"    {setters[n]}(new, changes[{n!r}] if {n!r} in changes else obj.{n})" for n in names
    ]
    if post is not None and sources is not None:
        # ``__post_init__`` derives the fields not passed to ``__init__`` from ``sources``
        # alone: when none of those changes, the copy keeps the derived values
        derived = [f.name for f in fields if not f.init]
        lines.append(f"    if {' or '.join(f'{n!r} in changes' for n in sources)}:")
        lines.append("        post(new)")
        lines.append("    else:")
        lines += [f"        {setters[n]}(new, obj.{n})" for n in derived]
    elif post is not None:
        lines.append("    post(new)")
    lines.append("    return new")
    exec("\n".join(lines), scope)  # noqa: S102 - generated from the class's own field names
    return cast(Callable[[Any, dict[str, Any]], Any], scope["make"])


def _dict_replacer(
    cls: type, post: Any, sources: tuple[str, ...] | None
) -> Callable[[Any, dict[str, Any]], Any]:
    """The copy-with-changes of a class whose fields all live in the instance's ``__dict__``
    (no slots): the original's dict copied, then the changes, each in one call in C however
    many fields the class has (a slotted copy sets each field through its own descriptor,
    which for a round's table of 21 fields cost three times as much). ``__post_init__`` runs
    as in :func:`_replacer` (only when a field of ``DERIVED_FROM`` changes, when the class
    names them). As in :func:`_replacer`, the changes are not checked against the fields (the
    core names them in its code; the tests copy every field of every class both ways)."""
    new_ = object.__new__
    keeps = frozenset(sources) if sources is not None else None

    def make(obj: Any, changes: dict[str, Any]) -> Any:
        new: Any = new_(cls)
        values = new.__dict__
        values.update(obj.__dict__)
        values.update(changes)
        if post is not None and (keeps is None or not keeps.isdisjoint(changes)):
            post(new)
        return new

    return make


#: The frozen dataclass's own ``__init__`` of each class :func:`fast_init` gave another (the
#: tests make every such class both ways and compare).
DATACLASS_INITS: dict[type, Callable[..., None]] = {}


def fast_init(cls: C) -> C:
    """Give the frozen dataclass ``cls`` an ``__init__`` equivalent to its own (the same
    parameters, in the same order, keyword-only where the dataclass's are; each default and
    default factory; non-init fields with a default set; then ``__post_init__``) that stores
    each field as :func:`replace` does: through the slot's descriptor, or, without a slot,
    into the instance's ``__dict__``. Used as a decorator above ``@dataclass(frozen=True...)``.

    >>> from dataclasses import dataclass, field
    >>> @fast_init
    ... @dataclass(frozen=True, slots=True)
    ... class P:
    ...     x: int
    ...     y: list[int] = field(default_factory=list)
    ...     z: int = field(default=3, kw_only=True)
    >>> P(1), P(1, [2], z=4)
    (P(x=1, y=[], z=3), P(x=1, y=[2], z=4))
    """
    if not dataclasses.is_dataclass(cls) or not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        raise TypeError(f"{cls.__name__} is not a frozen dataclass")
    missing = dataclasses.MISSING
    scope: dict[str, Any] = {"MISSING": missing, "post": getattr(cls, "__post_init__", None)}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    fetch = False
    for i, f in enumerate(dataclasses.fields(cls)):
        slot = _slot(cls, f.name)
        if slot is not None:
            scope[f"set{i}"] = slot.__set__
            store = f"set{i}(self, {{}})"
        else:  # the instance's dict, fetched once (below)
            store = f"values[{f.name!r}] = {{}}"
            fetch = True
        if f.default is not missing:
            scope[f"default{i}"] = f.default
        if f.default_factory is not missing:
            scope[f"factory{i}"] = f.default_factory
        if not f.init:
            if f.default is not missing:
                body.append("    " + store.format(f"default{i}"))
            elif f.default_factory is not missing:
                body.append("    " + store.format(f"factory{i}()"))
            continue
        if f.default is not missing:
            param = f"{f.name}=default{i}"
        elif f.default_factory is not missing:
            param = f"{f.name}=MISSING"
            body.append(f"    if {f.name} is MISSING:")
            body.append(f"        {f.name} = factory{i}()")
        else:
            param = f.name
        (keyword if f.kw_only else positional).append(param)
        body.append("    " + store.format(f.name))
    if scope["post"] is not None:
        body.append("    post(self)")
    params = ["self", *positional, *(["*", *keyword] if keyword else [])]
    if fetch:
        body.insert(0, "    values = self.__dict__")
    lines = [f"def __init__({', '.join(params)}):", *(body or ["    pass"])]
    exec("\n".join(lines), scope)  # noqa: S102 - generated from the class's own field names
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    DATACLASS_INITS[cls] = cls.__init__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls


def _slot(cls: type, name: str) -> Any:
    """The slot descriptor that holds ``name`` on ``cls``'s instances, or None."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            found = klass.__dict__[name]
            return found if type(found) is MemberDescriptorType else None
    return None


def _setattr(name: str) -> Callable[[Any, Any], None]:
    def put(obj: Any, value: Any) -> None:
        object.__setattr__(obj, name, value)

    return put


__all__ = ["DATACLASS_INITS", "fast_init", "replace"]
