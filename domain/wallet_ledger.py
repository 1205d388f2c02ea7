"""The read side of a wallet's ledger: the queries of its movements and transaction ids.

:class:`LedgerQueries` is a base of ``domain.wallet.Wallet``, whose ``_movements`` maps each
transaction id to the wallet's own record of its movement, in the order recorded, and whose
``_opening`` is the opening's transaction id (every other transaction id applied is a
movement's). Every movement
a query gives is a copy (:func:`domain.wallet_checks.copy_movement`): changing it changes
nothing of the wallet. The wallet itself owns the commands and the events that change them.
"""

from __future__ import annotations

from domain.layered import LayeredMap
from domain.wallet_checks import KeptMovement, Movement, copy_movement


class LedgerQueries:
    """A wallet's queries of its movements (see the module docstring)."""

    _movements: LayeredMap[str, KeptMovement]
    _opening: str

    @property
    def movements(self) -> list[Movement]:
        """Every movement in the order it was recorded (copies: changing them changes nothing)."""
        return [copy_movement(m) for m in self._movements.values()]

    @property
    def movement_count(self) -> int:
        return len(self._movements)

    def recent_movements(self, n: int) -> list[Movement]:
        """The latest ``n`` movements, oldest first (copies), without walking the history."""
        return [copy_movement(m) for m in self._movements.newest(n)]

    def movements_window(self, offset: int, limit: int) -> list[Movement]:
        """Up to ``limit`` movements from position ``offset``, in recorded order (copies)."""
        return [copy_movement(m) for m in self._movements.window(offset, offset + limit)]

    def movement(self, transaction_id: str) -> Movement | None:
        """The movement recorded under ``transaction_id``, if any (a copy)."""
        found = self._movements.get(transaction_id)
        return None if found is None else copy_movement(found)

    def has_transaction(self, transaction_id: str) -> bool:
        return transaction_id == self._opening or transaction_id in self._movements


__all__ = ["LedgerQueries"]
