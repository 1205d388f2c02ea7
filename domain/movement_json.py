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


class RenderedMovements:
    """Movements' JSON bytes, each rendered once (see the module docstring)."""

    __slots__ = ("_kept", "_lock", "limit")

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = max(4, limit)
        self._kept: dict[int, tuple[Any, bytes]] = {}
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
        """``orjson.dumps(list(movements))``, each movement rendered once while kept (a kept
        one found here as :meth:`one` finds it, without a call of it for each: an answer's
        50 movements are nearly all kept), in one list comprehension (no ``append`` call a
        movement). The brackets go on the first and last movements' bytes before the one
        join: ``b"[" + b",".join(parts) + b"]"`` copied the whole array (some 12 kB an
        answer) twice more."""
        get, one = self._kept.get, self.one
        parts = [
            hit[1] if (hit := get(id(m))) is not None and hit[0] is m else one(m) for m in movements
        ]
        if not parts:
            return b"[]"
        parts[0] = b"[" + parts[0]
        parts[-1] += b"]"
        return b",".join(parts)

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
