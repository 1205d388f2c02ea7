"""The wallets of a boundless round's players, as the round index keeps them.

A round reads each player's wallet once, at its first use in the round, and keeps it in its
:class:`~domain.boundless.index.Tracked` state; the index brings it up to date from the
notification log before each command (``RoundIndex._apply``). This module owns how that first
read is made and what a failed transaction leaves: :class:`RoundWallets` gives a transaction
its :class:`~domain.movements.WalletBook`, brings a wallet this process already knew forward
from its last version (a finished round's copy, else the application's aggregate cache)
rather than rebuilding it from its first event, and forgets every wallet a transaction moved
but did not save.
"""

from __future__ import annotations

import copy
from typing import cast

from domain.boundless.index import RoundIndex, Tracked
from domain.errors import WalletNotFound, no_wallet
from domain.movements import WalletBook
from domain.store import project
from domain.wallet import Wallet


class RoundWallets(RoundIndex):
    """The players' wallets of the rounds in use (see the module docstring)."""

    def _book(self, t: Tracked) -> WalletBook:
        """The wallets of one transaction on round ``t``, from its cache of wallets."""
        return WalletBook(lambda player: self._wallet(t, player))

    def _wallet(self, t: Tracked, player: str) -> Wallet:
        """The player's wallet in round ``t``: kept for the round once read (the index brings
        it up to date from the log). On its first use in the round it is brought forward
        from the last version this process knew, its new events only, not rebuilt from its
        first event: from a finished round of this index (:meth:`_kept_wallet`), else from
        the application's aggregate cache (which fast-forwards the same way; it holds 1,000
        aggregates), else read whole. Either way it is as the store has it when read; a
        write another process made after that fails the save's version check, and the
        retry reads the wallet again."""
        w = t.wallets.get(player)
        if w is None:
            w = self._kept_wallet(t, player)
        if w is None:
            try:
                w = self.app._get(Wallet, Wallet.create_id(player), WalletNotFound, "wallet")
            except WalletNotFound:
                raise no_wallet(player) from None
        if player not in t.wallets:
            t.wallets[player] = w
            t.wallet_players[w.id] = player
        return w

    def _kept_wallet(self, t: Tracked, player: str) -> Wallet | None:
        """A copy of the player's wallet as a finished round of this index holds it (as the
        store had it at that round's end: no command of a finished round moves money, and a
        failed save discards what it moved), brought forward by the events recorded since.
        Only a round whose lock is free is read (no command half-way through), and the copy
        is constant-time (``Wallet.__deepcopy__``), so neither round sees the other's
        changes."""
        with self._rounds_lock:
            finished = [
                x
                for x in reversed(self._rounds.values())
                if x is not t and x.engine is not None and x.engine.shared.finished
            ]
        for other in finished:
            if not other.lock.acquire(blocking=False):
                continue
            try:
                kept = other.wallets.get(player)
                if kept is None:
                    continue
                w: Wallet = copy.deepcopy(kept)
            finally:
                other.lock.release()
            return cast(Wallet, project(w, self.app.events.get(w.id, gt=w.version)))
        return None

    def _discard(self, t: Tracked, book: WalletBook) -> None:
        """Forget every wallet of ``book`` that moved: its movements were not saved."""
        for player, w in book.moved():
            if t.wallets.get(player) is w:
                del t.wallets[player]


__all__ = ["RoundWallets"]
