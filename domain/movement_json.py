"""A wallet movement's JSON, rendered once per process: what a wallet's view sends of its latest
movements (:meth:`MovementsJson.recent_movements_json`, a query of ``domain.wallet.Wallet``:
every deposit's and withdrawal's answer, kept in its idempotency record and sent).

Each answer lists the wallet's latest 50 movements, and consecutive answers of a wallet share
49 of them: copying and rendering all 50 again for every command was about a tenth of a
deposit's CPU under the HTTP benchmark (docs/performance-history.md). :class:`RenderedMovements`
renders a movement with ``orjson`` the first time it is asked for and keeps the bytes, keyed by
the identity of the wallet's own record of the movement (``domain.wallet_checks.KeptMovement``,
which ``orjson`` renders as the query's dict of it, or a dict; never changed once recorded: a
change of a wallet makes a new record, and a record built by an attempt that did not commit is
another object with its own bytes). The entry holds the record itself, so its
identity cannot be reused while the entry lives. The table is bounded (:data:`LIMIT` entries,
the oldest quarter forgotten when it is full): a forgotten movement is rendered again.

The array it gives is byte for byte ``orjson.dumps`` of the same movements as a list: orjson
writes a list as ``[``, its items' own bytes joined by ``,``, and ``]``.

A wallet's next answer is its previous one with the oldest movement gone (or none, while it
holds fewer than 50) and the new one last: :meth:`RenderedMovements.array` keeps the last
array it made ending with each movement (at most :data:`ARRAYS` of them, by the identity of
that last movement: about one a wallet), and an array whose movements but its last are the
tail of a kept array's (the very objects, compared by identity while the kept array holds
them) is made of that array's movements' bytes from the first movement it keeps, then its
new movement's: the same bytes, without a look-up a movement.

>>> m1 = {"kind": "deposit", "amount": "1.00", "actor": {"kind": "system", "id": "s"}}
>>> m2 = {"kind": "stake", "amount": "0.50", "rule": None, "actor": {"kind": "system", "id": "s"}}
>>> rendered = RenderedMovements()
>>> rendered.array([m1, m2]) == orjson.dumps([m1, m2]) and rendered.array([]) == b"[]"
True
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from itertools import islice
from typing import Any, Final

import orjson

from domain.layered import LayeredMap

#: The most movements whose bytes are kept (about 300 bytes each, copied exact from orjson's
#: 4 KiB+ buffer: some 10 MB at most; 130 MB with orjson's own bytes).
LIMIT: Final = 32_768
#: The most arrays kept for their next answer (:meth:`RenderedMovements.array`; about 3 kB
#: each for 50 movements, whose bytes the table of movements holds too: some 3 MB at most, 16
#: MB if the table has forgotten every one of them).
ARRAYS: Final = 1024

#: A kept array: its movements (held, so that their identities stay theirs), their ids, and
#: each movement's bytes.
_Array = tuple[Sequence[Any], list[int], list[bytes]]


class RenderedMovements:
    """Movements' JSON bytes, each rendered once (see the module docstring)."""

    __slots__ = ("_arrays", "_kept", "_lock", "arrays", "limit")

    def __init__(self, limit: int = LIMIT, arrays: int = ARRAYS) -> None:
        self.limit = max(4, limit)
        self.arrays = max(4, arrays)
        self._kept: dict[int, tuple[Any, bytes]] = {}
        #: the last array made ending with each movement, by that movement's id
        self._arrays: dict[int, _Array] = {}
        self._lock = threading.Lock()

    def one(self, movement: Any) -> bytes:
        """``orjson.dumps(movement)``, rendered once while kept."""
        hit = self._kept.get(id(movement))
        if hit is not None and hit[0] is movement:
            return hit[1]
        # orjson's bytes hold the 4 KiB+ buffer they were written in: the exact copy is kept
        data = memoryview(orjson.dumps(movement)).tobytes()
        with self._lock:
            kept = self._kept
            if len(kept) >= self.limit:
                for key in list(islice(kept, self.limit // 4)):  # the oldest quarter
                    del kept[key]
            kept[id(movement)] = (movement, data)
        return data

    def array(self, movements: Sequence[Any]) -> bytes:
        """``orjson.dumps(list(movements))``: a kept array's movements' bytes and the new last
        movement's when the others are that array's tail (:meth:`_next`), else each
        movement's bytes found or rendered (:meth:`_parts`), joined (:meth:`_joined`); the
        parts are kept for the next array (see the module docstring)."""
        if not movements:
            return b"[]"
        ids = list(map(id, movements))
        parts = self._next(movements, ids) or self._parts(movements)
        self._keep(movements, ids, parts)
        return self._joined(parts)

    def _next(self, movements: Sequence[Any], ids: list[int]) -> list[bytes] | None:
        """The movements' bytes taken from the kept array that ends with the movement before
        the last one, when every movement but the last is the tail of that array's, the same
        objects (their ids, compared while that array holds its movements: no other object
        has one of them then), and the last one's; None otherwise."""
        if len(ids) < 2:
            return None
        kept = self._arrays.get(ids[-2])
        if kept is None:
            return None
        _, kept_ids, parts = kept
        dropped = len(kept_ids) - len(ids) + 1  # the kept array's first movements not here
        if dropped < 0 or kept_ids[dropped:] != ids[:-1]:
            return None
        return [*parts[dropped:], self.one(movements[-1])]

    def _keep(self, movements: Sequence[Any], ids: list[int], parts: list[bytes]) -> None:
        """Keep ``parts`` as the array ending with its last movement, in place of the array it
        was made from (the one ending with the movement before), the oldest quarter of the
        kept arrays forgotten when there are :attr:`arrays` of them."""
        with self._lock:
            arrays = self._arrays
            if len(ids) >= 2:
                arrays.pop(ids[-2], None)
            if len(arrays) >= self.arrays:
                for key in list(islice(arrays, self.arrays // 4)):  # the oldest quarter
                    del arrays[key]
            arrays[ids[-1]] = (list(movements), ids, parts)

    def _parts(self, movements: Sequence[Any]) -> list[bytes]:
        """Each movement's bytes, rendered once while kept (a kept one found here as
        :meth:`one` finds it, without a call of it for each: an answer's 50 movements are
        nearly all kept), in one list comprehension (no ``append`` call a movement)."""
        get, one = self._kept.get, self.one
        return [
            hit[1] if (hit := get(id(m))) is not None and hit[0] is m else one(m) for m in movements
        ]

    @staticmethod
    def _joined(parts: list[bytes]) -> bytes:
        """The array of the movements' bytes ``parts`` (not empty). The brackets go on the
        first and last movements' bytes before the one join: ``b"[" + b",".join(parts) +
        b"]"`` copied the whole array (some 12 kB an answer) twice more."""
        ends = parts.copy()
        ends[0] = b"[" + ends[0]
        ends[-1] += b"]"
        return b",".join(ends)

    def __len__(self) -> int:
        return len(self._kept)


#: The process's table (:class:`MovementsJson`).
RENDERED: Final = RenderedMovements()


class MovementsJson:
    """The wallet's query of its movements' JSON (a base of ``domain.wallet.Wallet``, whose
    ``_movements`` maps each transaction id to the wallet's own record of its movement: a
    record set once and never changed, a change of the wallet making a new one)."""

    _movements: LayeredMap[str, Any]

    def recent_movements_json(self, n: int) -> bytes:
        """The JSON array of ``recent_movements(n)`` (``orjson.dumps`` of it, byte for byte),
        each movement rendered once per process (:data:`RENDERED`): what a command's answer
        sends of them, without copying or rendering them again."""
        return RENDERED.array(self._movements.newest(n))


__all__ = ["LIMIT", "RENDERED", "MovementsJson", "RenderedMovements"]
