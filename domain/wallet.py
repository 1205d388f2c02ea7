"""The player's wallet: one event-sourced ledger of money per player.

The :class:`Wallet` aggregate owns a player's balance and every movement of money in and out of
it: cashier deposits and withdrawals, and the round-linked movements (stake debits, payouts,
refunds, reversals) the round asks for; the caller works a payout out under the rules.

Invariants:

* **Money is exact** (MONEY-1): amounts are :class:`decimal.Decimal` with two minor-unit digits
  (:func:`domain.money.parse_money`, floats refused), stored as decimal strings (``"10.00"``).
* **The balance never goes negative except through a recorded reversal.** A withdrawal or a
  stake beyond the balance is refused (:class:`~domain.errors.InsufficientFunds`) and records
  nothing. Only :meth:`Wallet.reverse_payment` (ERR-1: a cancelled round pays nothing, so a
  payment already made in it is taken back) may take the balance below zero, and the movement
  that does so is recorded like any other.
* **Every movement is idempotent by transaction id.** The wallet remembers each transaction id
  it has applied with its movement, whose parameters (kind, amount, round, wager, and for a
  reversal the payment reversed) make its fingerprint. Repeating a command with the same id
  and parameters records nothing and returns ``False``; the same id with other parameters
  raises :class:`~domain.errors.DuplicateTransaction`.
* **The balance is the sum of the movements.** Each movement records ``balance_after``; the
  balance equals deposits - withdrawals - stakes + payouts + refunds - reversals.
* **A reversal undoes (part of) a payout of the same round and wager**, never more than what
  remains of that payout.
* **Deposits over the wallet's life stay within** ``wallet_checks.WALLET_DEPOSIT_LIMIT``.

Commands validate and raise domain errors before any event is triggered; the ``@event`` bodies only
apply state, so old wallets stay readable whatever the checks become. Every movement's
event is made by :func:`domain.recorder.trigger` (the same events, for less); the queries of the
movements are in :class:`domain.wallet_ledger.LedgerQueries`. Event
kinds (:mod:`domain.events`): opening, deposits and withdrawals are *inputs* (cashier facts, with
``client_time`` and ``request_id``); the round-linked movements are *consequences* of round events
and carry ``rule``, the rule ID of the wager they move money for (a stake: the rule its kind of bet
is placed under, ``domain.movements.stake_rule``; ``None`` before stakes cited it).
"""

from __future__ import annotations

import uuid
from decimal import Decimal

from eventsourcing.domain import Aggregate, event

from domain.events import SYSTEM, Consequence, Input
from domain.ids import stable_id
from domain.layered import LayeredMap
from domain.money import ZERO, money_str, parse_money
from domain.movement_json import MovementsJson
from domain.recorder import trigger
from domain.wallet_checks import (
    DEFAULT_CURRENCY,
    AccountType,
    KeptMovement,
    Movement,
    MovementKind,
    already_applied,
    check_actor,
    check_deposit_limit,
    check_funds,
    check_money_kind,
    check_opening,
    check_reversal,
    kept_actor,
    kept_text,
    optional_text,
    round_ids,
    text,
)
from domain.wallet_ledger import LedgerQueries

#: Every wallet's map of reversed payouts until its first reversal: one for all (a persistent
#: map is never changed in place), not about 120 bytes a wallet.
_NONE_REVERSED: LayeredMap[str, Decimal] = LayeredMap()


class Wallet(MovementsJson, LedgerQueries, Aggregate):
    """A player's balance and the ledger of its movements (see the module docstring)."""

    # ----------------------------------------------------------------------------------- events

    class Opened(Aggregate.Created, Input):
        player_id: str
        currency: str
        account_type: str
        actor: dict[str, str]
        transaction_id: str
        client_time: str | None
        request_id: str | None

    class Deposited(Aggregate.Event, Input):
        amount: str
        balance_after: str
        transaction_id: str
        actor: dict[str, str]
        client_time: str | None
        request_id: str | None

    class Withdrawn(Aggregate.Event, Input):
        amount: str
        balance_after: str
        transaction_id: str
        actor: dict[str, str]
        client_time: str | None
        request_id: str | None

    class StakeDebited(Aggregate.Event, Consequence):
        amount: str
        balance_after: str
        round_id: str
        wager_id: str | None
        transaction_id: str
        rule: str | None
        actor: dict[str, str]

    class PayoutCredited(Aggregate.Event, Consequence):
        amount: str
        balance_after: str
        round_id: str
        wager_id: str | None
        transaction_id: str
        rule: str | None
        actor: dict[str, str]

    class RefundCredited(Aggregate.Event, Consequence):
        amount: str
        balance_after: str
        round_id: str
        wager_id: str | None
        transaction_id: str
        reason: str
        rule: str | None
        actor: dict[str, str]

    class PaymentReversed(Aggregate.Event, Consequence):
        amount: str
        balance_after: str
        round_id: str
        wager_id: str | None
        transaction_id: str
        reversed_transaction_id: str
        reason: str
        rule: str | None
        actor: dict[str, str]

    # ------------------------------------------------------------------------------ identity

    @staticmethod
    def create_id(player_id: str) -> uuid.UUID:
        """The wallet id is deterministic, one wallet per player: uuid5 of the roundaudit
        namespace and ``wallet:<player_id>`` (:func:`domain.ids.stable_id`).

        >>> Wallet.create_id("alice") == stable_id("wallet", "alice") != Wallet.create_id("bob")
        True
        """
        return stable_id("wallet", player_id)

    @classmethod
    def open(
        cls,
        player_id: str,
        *,
        currency: str = DEFAULT_CURRENCY,
        account_type: AccountType = "real",
        actor: dict[str, str] = SYSTEM,
        transaction_id: str | None = None,
        client_time: str | None = None,
        request_id: str | None = None,
    ) -> Wallet:
        """Open the wallet of ``player_id`` with a zero balance (the creating command)."""
        player_id = check_opening(player_id, currency, account_type)
        tid = f"open:{player_id}" if transaction_id is None else transaction_id
        return cls(
            player_id=player_id,
            currency=currency,
            account_type=account_type,
            actor=check_actor(actor),
            transaction_id=text(tid, "transaction_id"),
            client_time=optional_text(client_time, "client_time"),
            request_id=optional_text(request_id, "request_id"),
        )

    @event(Opened)
    def __init__(
        self,
        *,
        player_id: str,
        currency: str,
        account_type: str,
        actor: dict[str, str],
        transaction_id: str,
        client_time: str | None,
        request_id: str | None,
    ) -> None:
        self.player_id = player_id
        self.currency = kept_text(currency)
        self.account_type = kept_text(account_type)
        self._balance = ZERO
        self._deposits = ZERO  # over the wallet's life (wallet_checks.WALLET_DEPOSIT_LIMIT)
        # The opening's transaction id: taken, so it cannot be reused (``_seen``).
        self._opening = transaction_id
        # Transaction id -> its movement, in the order recorded (each transaction id applied
        # but the opening's; its fingerprint is the movement's own, ``_seen``).
        self._movements: LayeredMap[str, KeptMovement] = LayeredMap()
        # Payout transaction id -> how much of it reversals took back (only payouts reversed:
        # what remains of a payout is its amount less this, ``_remaining``).
        self._reversed: LayeredMap[str, Decimal] = _NONE_REVERSED

    def __deepcopy__(self, memo: dict[int, object]) -> Wallet:
        """A copy whose changes never reach this wallet, made in constant time whatever the
        wallet's age: what it knows of its movements is kept in persistent maps
        (``domain.layered``: never changed in place, a change makes a new map), so the copy
        shares them, and only the list of pending events is new. The repository's aggregate
        cache copies a wallet for every command; copying its history made a deposit and a
        balance check cost more as the wallet aged (docs/performance-history.md)."""
        clone = object.__new__(type(self))
        memo[id(self)] = clone
        clone.__dict__.update(self.__dict__)
        clone._pending_events = list(self._pending_events)
        return clone

    # -------------------------------------------------------------------------------- queries
    # (the movements': domain.wallet_ledger.LedgerQueries)

    @property
    def balance(self) -> Decimal:
        return self._balance

    def can_afford(self, amount: object) -> bool:
        """Whether ``amount`` (zero allowed) can be debited without refusal."""
        return parse_money(amount, allow_zero=True) <= self._balance

    # ------------------------------------------------------------------------------- commands

    def deposit(
        self,
        amount: object,
        transaction_id: str,
        *,
        actor: dict[str, str] = SYSTEM,
        client_time: str | None = None,
        request_id: str | None = None,
    ) -> bool:
        """Credit a cashier deposit. Returns ``False`` if ``transaction_id`` was already applied
        with the same parameters (nothing recorded), ``True`` when recorded."""
        value = parse_money(amount)
        tid = text(transaction_id, "transaction_id")
        if self._seen(tid, "deposit", value):
            return False
        check_deposit_limit(self.player_id, self._deposits, value)
        trigger(
            self,
            "_deposited",
            amount=money_str(value),
            balance_after=money_str(self._balance + value),
            transaction_id=tid,
            actor=check_actor(actor),
            client_time=optional_text(client_time, "client_time"),
            request_id=optional_text(request_id, "request_id"),
        )
        return True

    def withdraw(
        self,
        amount: object,
        transaction_id: str,
        *,
        actor: dict[str, str] = SYSTEM,
        client_time: str | None = None,
        request_id: str | None = None,
    ) -> bool:
        """Pay out to the cashier; refused beyond the balance (InsufficientFunds)."""
        value = parse_money(amount)
        tid = text(transaction_id, "transaction_id")
        if self._seen(tid, "withdrawal", value):
            return False
        checked_actor = check_actor(actor)
        check_funds("withdrawal", self.player_id, value, self._balance)
        trigger(
            self,
            "_withdrawn",
            amount=money_str(value),
            balance_after=money_str(self._balance - value),
            transaction_id=tid,
            actor=checked_actor,
            client_time=optional_text(client_time, "client_time"),
            request_id=optional_text(request_id, "request_id"),
        )
        return True

    def debit_stake(
        self,
        amount: object,
        round_id: str,
        wager_id: str | None,
        transaction_id: str,
        *,
        rule: str | None = None,
        actor: dict[str, str] = SYSTEM,
    ) -> bool:
        """Take a stake (main bet, side bet, insurance, double, split, bet behind) for a wager
        of a round. A stake larger than the balance raises InsufficientFunds (carrying ``rule``,
        e.g. ``"INS-1"``) and records nothing."""
        value = parse_money(amount)
        tid, rid, wid = round_ids(transaction_id, round_id, wager_id)
        if self._seen(tid, "stake", value, rid, wid):
            return False
        checked_rule = optional_text(rule, "rule")
        checked_actor = check_actor(actor)
        check_funds("stake", self.player_id, value, self._balance, checked_rule)
        trigger(
            self,
            "_stake_debited",
            amount=money_str(value),
            balance_after=money_str(self._balance - value),
            round_id=rid,
            wager_id=wid,
            transaction_id=tid,
            rule=checked_rule,
            actor=checked_actor,
        )
        return True

    def credit_payout(
        self,
        amount: object,
        round_id: str,
        wager_id: str | None,
        transaction_id: str,
        *,
        rule: str | None = None,
        actor: dict[str, str] = SYSTEM,
    ) -> bool:
        """Credit what a settled wager returns to the player (stake + winnings, the stake on a
        push, or zero: a zero payout is recorded too). The caller decides the amount."""
        value = parse_money(amount, allow_zero=True)
        tid, rid, wid = round_ids(transaction_id, round_id, wager_id)
        if self._seen(tid, "payout", value, rid, wid):
            return False
        trigger(
            self,
            "_payout_credited",
            amount=money_str(value),
            balance_after=money_str(self._balance + value),
            round_id=rid,
            wager_id=wid,
            transaction_id=tid,
            rule=optional_text(rule, "rule"),
            actor=check_actor(actor),
        )
        return True

    def credit_refund(
        self,
        amount: object,
        round_id: str,
        wager_id: str | None,
        transaction_id: str,
        reason: str,
        *,
        rule: str | None = "ERR-1",
        actor: dict[str, str] = SYSTEM,
    ) -> bool:
        """Give a stake back: every stake of a cancelled round (ERR-1), bets on a seat whose
        player was removed (pass ``rule="DLX-3"``)."""
        value = parse_money(amount)
        tid, rid, wid = round_ids(transaction_id, round_id, wager_id)
        if self._seen(tid, "refund", value, rid, wid):
            return False
        trigger(
            self,
            "_refund_credited",
            amount=money_str(value),
            balance_after=money_str(self._balance + value),
            round_id=rid,
            wager_id=wid,
            transaction_id=tid,
            reason=text(reason, "reason"),
            rule=optional_text(rule, "rule"),
            actor=check_actor(actor),
        )
        return True

    def reverse_payment(
        self,
        amount: object,
        round_id: str,
        wager_id: str | None,
        transaction_id: str,
        reversed_transaction_id: str,
        reason: str,
        *,
        rule: str | None = "ERR-1",
        actor: dict[str, str] = SYSTEM,
    ) -> bool:
        """Take back (part of) a payout already made in a cancelled round (ERR-1: e.g. even
        money), so that the wallet ends where it started. The payout must be of the same round
        and wager, and at most what remains of it unreversed. This is the only movement that
        may take the balance below zero; it is recorded like any other."""
        value = parse_money(amount)
        tid, rid, wid = round_ids(transaction_id, round_id, wager_id)
        reversed_tid = text(reversed_transaction_id, "reversed_transaction_id")
        if self._seen(tid, "reversal", value, rid, wid, reversed_tid):
            return False
        checked_reason = text(reason, "reason")
        checked_rule = optional_text(rule, "rule")
        checked_actor = check_actor(actor)
        payout = self._movements.get(reversed_tid)
        if payout is not None and payout.kind != "payout":
            payout = None
        check_reversal(
            None if payout is None else self._remaining(payout),
            payout,
            player=self.player_id,
            reversed_tid=reversed_tid,
            round_id=rid,
            wager_id=wid,
            amount=value,
            rule=checked_rule,
        )
        trigger(
            self,
            "_payment_reversed",
            amount=money_str(value),
            balance_after=money_str(self._balance - value),
            round_id=rid,
            wager_id=wid,
            transaction_id=tid,
            reversed_transaction_id=reversed_tid,
            reason=checked_reason,
            rule=checked_rule,
            actor=checked_actor,
        )
        return True

    def _seen(self, tid: str, kind: MovementKind, amount: Decimal, *ids: str | None) -> bool:
        """Whether the movement was applied (``ids``: its round, wager and payout reversed)."""
        kept = self._movements.get(tid)
        return already_applied(kept, tid == self._opening, self.player_id, tid, kind, amount, *ids)

    def _remaining(self, payout: KeptMovement) -> Decimal:
        """What remains of ``payout`` not yet reversed (ERR-1)."""
        return Decimal(payout.amount) - self._taken_back(payout.transaction_id)

    def _taken_back(self, payout_transaction_id: str) -> Decimal:
        """How much of a payout reversals took back (zero for one never reversed)."""
        taken = self._reversed.get(payout_transaction_id)
        return ZERO if taken is None else taken

    # -------------------------------------------------------------- event bodies (state only)

    def _record(
        self,
        kind: MovementKind,
        amount: str,
        balance_after: str,
        transaction_id: str,
        actor: dict[str, str],
        *,
        sign: int,
        round_id: str | None = None,
        wager_id: str | None = None,
        rule: str | None = None,
        reason: str | None = None,
        reversed_transaction_id: str | None = None,
    ) -> None:
        value = Decimal(amount)
        self._balance += value if sign > 0 else -value
        self._movements = self._movements.set(
            transaction_id,
            KeptMovement(
                kind,
                transaction_id,
                kept_text(amount),
                balance_after,
                round_id,
                wager_id,
                rule,
                reason,
                reversed_transaction_id,
                kept_actor(actor),
            ),
        )

    @event(Deposited)
    def _deposited(
        self,
        *,
        amount: str,
        balance_after: str,
        transaction_id: str,
        actor: dict[str, str],
        client_time: str | None,
        request_id: str | None,
    ) -> None:
        self._deposits += Decimal(amount)
        self._record("deposit", amount, balance_after, transaction_id, actor, sign=1)

    @event(Withdrawn)
    def _withdrawn(
        self,
        *,
        amount: str,
        balance_after: str,
        transaction_id: str,
        actor: dict[str, str],
        client_time: str | None,
        request_id: str | None,
    ) -> None:
        self._record("withdrawal", amount, balance_after, transaction_id, actor, sign=-1)

    @event(StakeDebited)
    def _stake_debited(
        self,
        *,
        amount: str,
        balance_after: str,
        round_id: str,
        wager_id: str | None,
        transaction_id: str,
        rule: str | None,
        actor: dict[str, str],
    ) -> None:
        self._record(
            "stake",
            amount,
            balance_after,
            transaction_id,
            actor,
            sign=-1,
            round_id=round_id,
            wager_id=wager_id,
            rule=rule,
        )

    @event(PayoutCredited)
    def _payout_credited(
        self,
        *,
        amount: str,
        balance_after: str,
        round_id: str,
        wager_id: str | None,
        transaction_id: str,
        rule: str | None,
        actor: dict[str, str],
    ) -> None:
        self._record(
            "payout",
            amount,
            balance_after,
            transaction_id,
            actor,
            sign=1,
            round_id=round_id,
            wager_id=wager_id,
            rule=rule,
        )

    @event(RefundCredited)
    def _refund_credited(
        self,
        *,
        amount: str,
        balance_after: str,
        round_id: str,
        wager_id: str | None,
        transaction_id: str,
        reason: str,
        rule: str | None,
        actor: dict[str, str],
    ) -> None:
        self._record(
            "refund",
            amount,
            balance_after,
            transaction_id,
            actor,
            sign=1,
            round_id=round_id,
            wager_id=wager_id,
            rule=rule,
            reason=reason,
        )

    @event(PaymentReversed)
    def _payment_reversed(
        self,
        *,
        amount: str,
        balance_after: str,
        round_id: str,
        wager_id: str | None,
        transaction_id: str,
        reversed_transaction_id: str,
        reason: str,
        rule: str | None,
        actor: dict[str, str],
    ) -> None:
        self._record(
            "reversal",
            amount,
            balance_after,
            transaction_id,
            actor,
            sign=-1,
            round_id=round_id,
            wager_id=wager_id,
            rule=rule,
            reason=reason,
            reversed_transaction_id=reversed_transaction_id,
        )
        taken = self._taken_back(reversed_transaction_id) + Decimal(amount)
        self._reversed = self._reversed.set(reversed_transaction_id, taken)


__all__ = ["AccountType", "Movement", "Wallet", "check_money_kind"]
