"""A persistent (never changed in place) map whose copy is free and whose writes stay cheap as it
grows: what a wallet keeps of its movements (``domain.wallet``).

A :class:`LayeredMap` is a small dict of its newest entries (``top``, at most :data:`TOP`) over a
tuple of frozen *levels*, oldest first, whose sizes fall like a binary counter's digits. Setting
a key returns a new map: a copy of ``top`` with the key, and when ``top`` is full it becomes a
level, merged with the newer levels no larger than it. Nothing is ever changed in place, so
every copy of a wallet shares the whole map with the cached wallet (copying it costs nothing),
and no reader can see a half-made change. A lookup reads ``top`` and then at most about
``log2(n / TOP)`` levels; a write copies at most ``TOP`` entries plus, amortised, ``log2(n)``
entries of merges (a merge of the two largest levels is rare but ``O(n)``).

Iteration yields each key once, in the order it was first set, with its latest value.

>>> m = LayeredMap[str, int]()
>>> for i in range(100):
...     m = m.set(f"k{i}", i)
>>> n = m.set("k5", -5)
>>> (m.get("k5"), n.get("k5"), n.get("nope"), len(n), "k99" in n)
(5, -5, None, 100, True)
>>> list(n.items())[:3], [len(level) for level in n.levels], len(n.top)
([('k0', 0), ('k1', 1), ('k2', 2)], [64, 32], 5)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import islice
from typing import Any, Generic, TypeVar, cast

from eventsourcing.persistence import Transcoding

K = TypeVar("K")
V = TypeVar("V")
#: The most entries a map keeps outside its frozen levels.
TOP = 32
_MISSING = object()


class LayeredMap(Generic[K, V]):
    """A persistent map (see the module docstring)."""

    __slots__ = ("_len", "levels", "top")

    def __init__(
        self, levels: tuple[Mapping[K, V], ...] = (), top: Mapping[K, V] | None = None
    ) -> None:
        self.levels = levels
        self.top: Mapping[K, V] = {} if top is None else top
        keys: set[K] = set()
        for part in (*levels, self.top):
            keys.update(part)
        self._len = len(keys)

    def get(self, key: K, default: V | None = None) -> V | None:
        found = self._find(key)
        return default if found is _MISSING else found  # type: ignore[return-value]

    def _find(self, key: K) -> object:
        top = self.top
        if key in top:
            return top[key]
        for level in reversed(self.levels):
            if key in level:
                return level[key]
        return _MISSING

    def __contains__(self, key: object) -> bool:
        return key in self.top or any(key in level for level in self.levels)

    def __len__(self) -> int:
        return self._len

    def set(self, key: K, value: V) -> LayeredMap[K, V]:
        """The map with ``key`` set to ``value`` (this one unchanged)."""
        new = key not in self
        top = dict(self.top)
        top[key] = value
        levels = self.levels
        if len(top) >= TOP:
            stack = list(levels)
            level: dict[K, V] = top
            while stack and len(stack[-1]) <= len(level):
                level = {**stack.pop(), **level}
            stack.append(level)
            levels, top = tuple(stack), {}
        out: LayeredMap[K, V] = object.__new__(LayeredMap)
        out.levels, out.top, out._len = levels, top, self._len + new
        return out

    def items(self) -> Iterator[tuple[K, V]]:
        """Every key once, in the order first set, with its latest value."""
        seen: set[K] = set()
        for part in (*self.levels, self.top):
            for key in part:
                if key not in seen:
                    seen.add(key)
                    yield key, self[key]

    def values(self) -> Iterator[V]:
        return (v for _, v in self.items())

    def newest(self, n: int) -> list[V]:
        """The values of the ``n`` keys first set last, in the order first set (what
        ``list(self.values())[-n:]`` gives), reading only those entries and not the whole map:
        the parts are walked newest first, and a key is counted where it was first set, the
        newest part that holds it with no older part holding it too."""
        if n <= 0:
            return []
        parts = (*self.levels, self.top)
        if self._len == sum(map(len, parts)):
            # No key is in two parts (a wallet's transaction ids are set once): each value is
            # where its key was set, so the newest are the parts' values read from the end.
            out: list[V] = []
            for part in reversed(parts):
                out.extend(islice(reversed(cast("dict[K, V]", part).values()), n - len(out)))
                if len(out) == n:
                    break
            out.reverse()
            return out
        picked: list[K] = []
        for index in range(len(parts) - 1, -1, -1):
            older = parts[:index]
            for key in reversed(cast("dict[K, V]", parts[index])):  # dicts: no copy
                if not any(key in part for part in older):
                    picked.append(key)
                    if len(picked) == n:
                        return [self[key] for key in reversed(picked)]
        return [self[key] for key in reversed(picked)]

    def window(self, start: int, stop: int) -> list[V]:
        """The values of the keys at positions ``start`` to ``stop`` (excluded) in the order
        first set: ``list(self.values())[start:stop]``, reading up to ``stop`` entries."""
        return list(islice(self.values(), max(start, 0), max(stop, 0)))

    def __getitem__(self, key: K) -> V:
        found = self._find(key)
        if found is _MISSING:
            raise KeyError(key)
        return found  # type: ignore[return-value]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LayeredMap):
            return NotImplemented
        return dict(self.items()) == dict(other.items())

    __hash__ = None  # type: ignore[assignment]

    def __deepcopy__(self, memo: dict[int, Any]) -> LayeredMap[K, V]:
        return self  # never changed in place: every copy may share it

    def __repr__(self) -> str:
        return f"LayeredMap({dict(self.items())!r})"


class LayeredMapAsDict(Transcoding):
    """A snapshot's encoding of a :class:`LayeredMap`: its entries as ``[key, value]`` pairs, in
    order (a transcoder that sorts keys would lose the order of a JSON object). Register it on
    the transcoder of an application that snapshots wallets.

    >>> t = LayeredMapAsDict()
    >>> m = LayeredMap().set("b", 1).set("a", 2)
    >>> list(t.decode(t.encode(m)).items())
    [('b', 1), ('a', 2)]
    """

    type = LayeredMap
    name = "layered_map"

    def encode(self, obj: LayeredMap[Any, Any]) -> list[list[Any]]:
        return [[k, v] for k, v in obj.items()]

    def decode(self, data: list[list[Any]]) -> LayeredMap[Any, Any]:
        entries = dict(data)
        return LayeredMap((), entries) if len(entries) < TOP else LayeredMap((entries,), {})


__all__ = ["TOP", "LayeredMap", "LayeredMapAsDict"]
