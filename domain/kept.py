"""Shared immutable values, kept in bounded tables: one home for "make it once, hand out the
same object while it is kept".

A boundless round holds thousands of players' states, each naming the same few amounts, the
same actor, the round's id; the projections name the same few ids for every event of a batch.
A value made once and handed out again (a ``Decimal``, a string, a dict nobody changes) costs
its memory once and its making once. :class:`KeptValues` is that table: ``values.kept(key,
source)`` gives the value kept under ``key``, or makes it from ``source`` and keeps it. When
the table is full it is emptied and starts again (what it handed out stays shared by whoever
holds it; the values made next are shared from then on), so a service that runs for months
keeps sharing its current values, not only its first ones, and never holds more than
``most`` of them.

Only values nobody changes may be kept: strings, numbers, ``Decimal``s, and dicts every
reader copies before changing (a wallet's actors: ``domain.wallet_checks.copy_movement``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
S = TypeVar("S")
V = TypeVar("V")


class KeptValues(Generic[K, S, V]):
    """At most ``most`` values, each made by ``make`` from its source the first time its key
    is asked for (:attr:`kept`; see the module docstring).

    >>> from decimal import Decimal
    >>> amounts = KeptValues(Decimal, most=2)
    >>> amounts.kept("1.50", "1.50") is amounts.kept("1.50", "1.50")
    True
    >>> _ = amounts.kept("2.00", "2.00"); _ = amounts.kept("3.00", "3.00")  # full: emptied
    >>> len(amounts)
    1
    """

    __slots__ = ("_table", "kept")

    def __init__(self, make: Callable[[S], V], *, most: int) -> None:
        if most < 1:
            raise ValueError("most must be at least 1")
        table: dict[K, V] = {}
        lookup = table.get

        def kept(key: K, source: S) -> V:
            """The value kept under ``key``; made from ``source`` (and kept) if there is none.
            A function of its own, not a method: the memos it serves are asked millions of
            times, and a call through ``__call__`` cost twice a plain function's."""
            value = lookup(key)
            if value is None:
                if len(table) >= most:
                    table.clear()
                value = table[key] = make(source)
            return value

        self._table = table
        #: the value kept under a key, or made from its source and kept (see above)
        self.kept: Callable[[K, S], V] = kept

    def __len__(self) -> int:
        return len(self._table)

    def clear(self) -> None:
        """Forget every value (those handed out stay as they are)."""
        self._table.clear()


__all__ = ["KeptValues"]
