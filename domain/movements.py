"""The wallet movements a round's events imply, with their deterministic transaction ids, and
the book of the wallets one transaction touches.

One mapping for every kind of round (the classic ``Round`` and boundless ``Participation``):
a stake (``BetPlaced``, ``WagerAdded``, ``SeatBetMirrored``) is debited as
``<round>/<wager>/stake``; a settlement credits its payout as ``<round>/<wager>/<result>``
(a refund as a refund); a reversal (ERR-1) takes back ``<round>/<wager>/<reversed result>`` as
``<round>/<wager>/reverse``. The ids make every movement idempotent, so applying the same
events twice moves nothing twice. Each movement carries the rule ID of the round event it
books (a settlement's OUT-x, END-x, INS-1..., a double's DBL-1, a mirrored seat bet's DLX-2, a
reversal's ERR-1); a placed bet's stake cites the rule its kind of bet is placed under
(a main bet PHASE-1 or BDL-1, a bet behind DLX-5, a side bet its own: DLX-PAIR, L7-1, BDL-...).
A stake booked before stakes cited their rule holds ``rule: null``; verification reads it as
booked (``replays.verify``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from domain.game.wagers import bet_rule
from domain.wallet import Wallet

STAKE_EVENTS = frozenset({"BetPlaced", "WagerAdded", "SeatBetMirrored"})


def stake_rule(e: Any) -> str:
    """The rule a stake's debit cites: a consequence's own (a double's DBL-1, a split's
    SPLIT-1, an insurance's INS-1, a mirrored seat bet's DLX-2), or, for a bet a player
    placed, the rule of its kind of bet (``BetPlaced.BET_RULES``, ``domain.game.wagers``)."""
    rule = getattr(e, "rule", None)
    if rule is not None:
        return str(rule)
    return bet_rule(e.kind, type(e).BET_RULES)


def apply_movements(round_id: str, events: Iterable[Any], wallet: Callable[[str], Wallet]) -> None:
    """Apply to the players' wallets (``wallet(player)``) what ``events`` imply."""
    rid = round_id
    for e in events:
        name = type(e).__name__
        if name in STAKE_EVENTS:
            wallet(e.player).debit_stake(
                e.stake,
                round_id=rid,
                wager_id=e.wager_id,
                transaction_id=f"{rid}/{e.wager_id}/stake",
                rule=stake_rule(e),
            )
        elif name == "WagerSettled":
            tid = f"{rid}/{e.wager_id}/{e.result}"
            if e.result == "refund":
                wallet(e.player).credit_refund(
                    e.payout,
                    round_id=rid,
                    wager_id=e.wager_id,
                    transaction_id=tid,
                    reason=e.rule,
                    rule=e.rule,
                )
            elif Decimal(e.payout) > 0:
                wallet(e.player).credit_payout(
                    e.payout, round_id=rid, wager_id=e.wager_id, transaction_id=tid, rule=e.rule
                )
        elif name == "PaymentReversed":
            reversed_result = getattr(e, "reverses", None) or e.result
            wallet(e.player).reverse_payment(
                e.amount,
                round_id=rid,
                wager_id=e.wager_id,
                transaction_id=f"{rid}/{e.wager_id}/reverse",
                reversed_transaction_id=f"{rid}/{e.wager_id}/{reversed_result}",
                reason=e.rule,
                rule=e.rule,
            )


class WalletBook:
    """The wallets one transaction touches (each loaded once by ``wallet(player)``), and the
    movements its rounds' new events imply; saved in the same transaction as those events."""

    def __init__(self, wallet: Callable[[str], Wallet]) -> None:
        self._wallet = wallet
        self.touched: dict[str, tuple[Wallet, int]] = {}

    def get(self, player: str) -> Wallet:
        if player not in self.touched:
            w = self._wallet(player)
            self.touched[player] = (w, w.version)
        return self.touched[player][0]

    def balance(self, player: str) -> Decimal:
        return self.get(player).balance

    def apply(self, round_id: str, events: Iterable[Any]) -> None:
        """The movements of ``events`` of round ``round_id`` (idempotent by transaction id)."""
        apply_movements(round_id, events, self.get)

    def changed(self) -> list[Wallet]:
        """The wallets with movements to save."""
        return [w for w, _ in self.touched.values() if w.pending_events]

    def moved(self) -> list[tuple[str, Wallet]]:
        """(player, wallet) of every wallet that moved since it was first touched."""
        return [(p, w) for p, (w, version) in self.touched.items() if w.version != version]


__all__ = ["STAKE_EVENTS", "WalletBook", "apply_movements", "stake_rule"]
