"""RoundAudit's players: wallets (the cashier's deposits and withdrawals, balances) and the
deluxe table's seats (DLX-1: sit, leave)."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from eventsourcing.application import AggregateNotFoundError

from domain.errors import AlreadyExists, TableNotFound, WalletNotFound, no_wallet
from domain.events import SYSTEM, copied
from domain.services.base import AuditBase, Json, check_id
from domain.table import Table
from domain.wallet import Wallet


class Players(AuditBase):
    """Wallets and seats."""

    # ------------------------------------------------------------------ wallets
    def wallet(self, player_id: str) -> Wallet:
        check_id(player_id, "player_id")
        return self._get(
            Wallet, Wallet.create_id(player_id), WalletNotFound, f"wallet of {player_id!r}"
        )

    def player_wallet(self, player: str) -> Wallet:
        """The wallet of a player a command names in its body (a bet's, a seat's): none is a
        409 ``unknown-player`` (:func:`~domain.errors.no_wallet`), not a 404, which is about
        the resource the request addresses."""
        try:
            return self.wallet(player)
        except WalletNotFound:
            raise no_wallet(player) from None

    def open_wallet(
        self,
        player_id: str,
        *,
        account_type: str = "real",
        currency: str = "EUR",
        actor: Mapping[str, str] = SYSTEM,
    ) -> str:
        check_id(player_id, "player_id")
        wid = Wallet.create_id(player_id)
        try:
            self.repository.get(wid)
        except AggregateNotFoundError:
            pass
        else:
            raise AlreadyExists(f"player {player_id!r} already has a wallet")
        w = Wallet.open(
            player_id,
            currency=currency,
            account_type=account_type,  # type: ignore[arg-type]
            actor=dict(actor),
        )
        self._save_new(w, what=f"the wallet of player {player_id!r}")
        return str(w.id)

    def deposit(
        self,
        player_id: str,
        amount: object,
        *,
        transaction_id: str,
        actor: Mapping[str, str] = SYSTEM,
    ) -> Decimal:
        def run() -> Decimal:
            w = self.wallet(player_id)
            w.deposit(amount, transaction_id=transaction_id, actor=dict(actor))
            self.save(w)
            return w.balance

        return self._retry(run)

    def withdraw(
        self,
        player_id: str,
        amount: object,
        *,
        transaction_id: str,
        actor: Mapping[str, str] = SYSTEM,
    ) -> Decimal:
        def run() -> Decimal:
            w = self.wallet(player_id)
            w.withdraw(amount, transaction_id=transaction_id, actor=dict(actor))
            self.save(w)
            return w.balance

        return self._retry(run)

    def balance(self, player_id: str) -> Decimal:
        return self.wallet(player_id).balance

    # ------------------------------------------------------------------- tables
    def table(self, table_id: str) -> Table:
        check_id(table_id, "table_id")
        return self._get(Table, Table.create_id(table_id), TableNotFound, f"table {table_id!r}")

    def open_table(
        self,
        table_id: str,
        *,
        variant: str = "deluxe",
        production: bool = True,
        actor: Mapping[str, str] = SYSTEM,
    ) -> Json:
        """Record a table: its variant and whether it is a production table (``domain.table``)."""
        check_id(table_id, "table_id")  # no '#': round ids are TABLE#NUMBER
        if Table.create_id(table_id) in self.repository:
            raise AlreadyExists(f"table {table_id!r} already exists")
        t = Table.open(table_id=table_id, variant=variant, production=production, actor=dict(actor))
        self._save_new(t, what=f"table {table_id!r}")
        return t.view()

    def sit(
        self,
        table_id: str,
        *,
        player: str,
        seat: int,
        request_id: str | None = None,
        actor: Mapping[str, str] | None = None,
    ) -> Json:
        def run() -> Json:
            t = self.table(table_id)
            w = self.player_wallet(player)
            t.sit(
                player=player,
                seat=seat,
                account_type=w.account_type,
                balance=w.balance,
                actor=copied(actor),
                request_id=request_id,
            )
            self.save(t)
            return t.view()

        return self._retry(run)

    def leave(
        self, table_id: str, *, player: str, seat: int, actor: Mapping[str, str] | None = None
    ) -> Json:
        def run() -> Json:
            t = self.table(table_id)
            t.leave(player=player, seat=seat, actor=copied(actor))
            self.save(t)
            return t.view()

        return self._retry(run)


__all__ = ["Players"]
