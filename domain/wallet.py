"""The player's wallet: one event-sourced ledger of money per player.

The :class:`Wallet` aggregate owns a player's balance and every movement of money in and out of
it: cashier deposits and withdrawals, and the round-linked movements (stake debits, payouts,
refunds and reversals) that the round asks for. It does not decide what a round pays: the caller
works the amount out under the rules and the wallet records it, tied to its round and wager.

Invariants:

* **Money is exact** (MONEY-1): every amount is a :class:`decimal.Decimal` with two minor-unit
  digits, parsed by :func:`domain.money.parse_money`; floats are refused. Events store amounts
  as decimal strings (``"10.00"``).
* **The balance never goes negative except through a recorded reversal.** A withdrawal or a
  stake beyond the balance is refused (:class:`~domain.errors.InsufficientFunds`) and records
  nothing. Only :meth:`Wallet.reverse_payment` (ERR-1: a cancelled round pays nothing, so a
  payment already made in it is taken back) may take the balance below zero, and the movement
  that does so is recorded like any other.
* **Every movement is idempotent by transaction id.** The wallet remembers each transaction id
  it has applied with a fingerprint of its parameters (kind, amount, round, wager, and for a
  reversal the payment reversed). Repeating a command with the same id and parameters records
  nothing and returns ``False``; the same id with other parameters raises
  :class:`~domain.errors.DuplicateTransaction`.
* **The balance is the sum of the movements.** Each movement records ``balance_after``; the
  balance equals deposits - withdrawals - stakes + payouts + refunds - reversals.
* **A reversal undoes (part of) a payout of the same round and wager**, never more than what
  remains of that payout.

Commands validate and raise domain errors before any event is triggered; the ``@event`` bodies
only apply state, so old wallets stay readable whatever the checks become.

Event kinds (see :mod:`domain.events`): opening, deposits and withdrawals are *inputs* (cashier
facts, with ``client_time`` and ``request_id``); the round-linked movements are *consequences*
of round events and carry ``rule``, the rule ID that decided them when there is one (``None``
for a plain bet's stake).
"""

from __future__ import annotations

import json
import re
import uuid
from decimal import Decimal
from typing import Literal, TypedDict, get_args

from eventsourcing.domain import Aggregate, event

from domain.errors import (
    AccountTypeRefused,
    DuplicateTransaction,
    InsufficientFunds,
    InvalidReversal,
    InvalidWalletRequest,
)
from domain.events import SYSTEM, ActorKind, Consequence, Input
from domain.ids import stable_id
from domain.money import ZERO, money_str, parse_money

AccountType = Literal["real", "test", "fun"]
"""``test`` and play-for-fun (``fun``) accounts exist but may not take seats (DLX-1)."""

MovementKind = Literal["deposit", "withdrawal", "stake", "payout", "refund", "reversal"]

ACCOUNT_TYPES: frozenset[str] = frozenset(get_args(AccountType))
#: Account types that hold play money (test and play-for-fun accounts).
PLAY_MONEY: frozenset[str] = frozenset({"test", "fun"})
ACTOR_KINDS: frozenset[str] = frozenset(get_args(ActorKind))
ACTOR_FIELDS: frozenset[str] = frozenset({"kind", "id", "key", "role"})
DEFAULT_CURRENCY = "EUR"


class Movement(TypedDict):
    """One movement of money, as plain JSON-ready values."""

    kind: MovementKind
    transaction_id: str
    amount: str
    balance_after: str
    round_id: str | None
    wager_id: str | None
    rule: str | None
    reason: str | None
    reversed_transaction_id: str | None
    actor: dict[str, str]


def _fingerprint(
    kind: str,
    amount: Decimal,
    round_id: str | None = None,
    wager_id: str | None = None,
    reversed_transaction_id: str | None = None,
) -> str:
    """What makes two uses of a transaction id the same movement (a JSON string, so that it
    survives a snapshot unchanged)."""
    return json.dumps(
        [kind, money_str(amount), round_id, wager_id, reversed_transaction_id],
        separators=(",", ":"),
    )


def _text(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidWalletRequest(f"{field} must be a non-empty string, got {value!r}")
    return value


def _optional_text(value: object, field: str) -> str | None:
    return None if value is None else _text(value, field)


def _check_actor(value: object) -> dict[str, str]:
    """``{"kind", "id"}``, and the API key that sent the command (``key``, ``role``) when a
    key did (domain.access.Principal.actor)."""
    if (
        not isinstance(value, dict)
        or not {"kind", "id"} <= set(value) <= ACTOR_FIELDS
        or value["kind"] not in ACTOR_KINDS
        or not all(isinstance(v, str) for v in value.values())
    ):
        raise InvalidWalletRequest(
            f"actor must be {{'kind': one of {sorted(ACTOR_KINDS)}, 'id': str}} (and the "
            f"sending key's 'key' and 'role'), got {value!r}"
        )
    return {k: value[k] for k in ("kind", "id", "key", "role") if k in value}


def check_money_kind(account_type: str, *, production: bool, player: str) -> None:
    """Play money never meets a stacked deck with real money on it: a test table (not
    production, the only kind that allows test shoes and test orders) takes test and
    play-for-fun accounts only. A production table takes every kind (play-money accounts bet
    behind and on side bets there, but never sit, DLX-1), and reports keep their wagers apart
    (``projections.feed``). Raises :class:`~domain.errors.AccountTypeRefused` before anything
    is recorded.

    >>> check_money_kind("real", production=True, player="ann")
    >>> check_money_kind("fun", production=False, player="ann")
    >>> check_money_kind("real", production=False, player="ann")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    domain.errors.AccountTypeRefused: ann holds a real account: a test table ...
    """
    if not production and account_type not in PLAY_MONEY:
        raise AccountTypeRefused(
            f"{player} holds a {account_type} account: a test table (not production; stacked "
            "shoes allowed) takes test and play-for-fun accounts only"
        )


def _copy(movement: Movement) -> Movement:
    copied = movement.copy()
    copied["actor"] = dict(movement["actor"])
    return copied


class Wallet(Aggregate):
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
        player_id = _text(player_id, "player_id")
        if ":" in player_id:
            raise InvalidWalletRequest(f"player_id {player_id!r} must not contain ':'")
        if not isinstance(currency, str) or not re.fullmatch(r"[A-Z]{3}", currency):
            raise InvalidWalletRequest(
                f"currency must be a 3-letter ISO 4217 code in capitals, got {currency!r}"
            )
        if account_type not in ACCOUNT_TYPES:
            raise InvalidWalletRequest(
                f"account_type must be one of {sorted(ACCOUNT_TYPES)}, got {account_type!r}"
            )
        tid = f"open:{player_id}" if transaction_id is None else transaction_id
        return cls(
            player_id=player_id,
            currency=currency,
            account_type=account_type,
            actor=_check_actor(actor),
            transaction_id=_text(tid, "transaction_id"),
            client_time=_optional_text(client_time, "client_time"),
            request_id=_optional_text(request_id, "request_id"),
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
        self.currency = currency
        self.account_type = account_type
        self._balance = ZERO
        self._movements: list[Movement] = []
        # Transaction id -> fingerprint; the opening's id is taken too, so it cannot be reused.
        self._transactions: dict[str, str] = {transaction_id: _fingerprint("open", ZERO)}
        # Transaction id -> position in self._movements.
        self._index: dict[str, int] = {}
        # Payout transaction id -> amount of it not yet reversed.
        self._reversible: dict[str, Decimal] = {}

    def __deepcopy__(self, memo: dict[int, object]) -> Wallet:
        """A copy whose changes never reach this wallet, made without copying every movement:
        the containers are new, the movements in them are shared, since a recorded movement is
        never changed in place (``movements`` hands out copies). The repository's aggregate
        cache copies a wallet on every ``get``; a deep copy of a long history made that cost
        grow with the wallet's age (see docs/operations.md)."""
        clone = object.__new__(type(self))
        memo[id(self)] = clone
        clone.__dict__.update(self.__dict__)
        clone._pending_events = list(self._pending_events)
        clone._movements = list(self._movements)
        clone._transactions = dict(self._transactions)
        clone._index = dict(self._index)
        clone._reversible = dict(self._reversible)
        return clone

    # -------------------------------------------------------------------------------- queries

    @property
    def balance(self) -> Decimal:
        return self._balance

    @property
    def movements(self) -> list[Movement]:
        """Every movement in the order it was recorded (copies: changing them changes nothing)."""
        return [_copy(m) for m in self._movements]

    def movement(self, transaction_id: str) -> Movement | None:
        """The movement recorded under ``transaction_id``, if any (a copy)."""
        position = self._index.get(transaction_id)
        return None if position is None else _copy(self._movements[position])

    def has_transaction(self, transaction_id: str) -> bool:
        return transaction_id in self._transactions

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
        tid = _text(transaction_id, "transaction_id")
        if self._seen(tid, _fingerprint("deposit", value)):
            return False
        self._deposited(
            amount=money_str(value),
            balance_after=money_str(self._balance + value),
            transaction_id=tid,
            actor=_check_actor(actor),
            client_time=_optional_text(client_time, "client_time"),
            request_id=_optional_text(request_id, "request_id"),
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
        tid = _text(transaction_id, "transaction_id")
        if self._seen(tid, _fingerprint("withdrawal", value)):
            return False
        checked_actor = _check_actor(actor)
        if value > self._balance:
            raise InsufficientFunds(
                f"withdrawal {money_str(value)} exceeds the balance {money_str(self._balance)} "
                f"of player {self.player_id!r}"
            )
        self._withdrawn(
            amount=money_str(value),
            balance_after=money_str(self._balance - value),
            transaction_id=tid,
            actor=checked_actor,
            client_time=_optional_text(client_time, "client_time"),
            request_id=_optional_text(request_id, "request_id"),
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
        tid, rid, wid = self._round_ids(transaction_id, round_id, wager_id)
        if self._seen(tid, _fingerprint("stake", value, rid, wid)):
            return False
        checked_rule = _optional_text(rule, "rule")
        checked_actor = _check_actor(actor)
        if value > self._balance:
            raise InsufficientFunds(
                f"stake {money_str(value)} exceeds the balance {money_str(self._balance)} "
                f"of player {self.player_id!r}",
                rule=checked_rule,
            )
        self._stake_debited(
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
        tid, rid, wid = self._round_ids(transaction_id, round_id, wager_id)
        if self._seen(tid, _fingerprint("payout", value, rid, wid)):
            return False
        self._payout_credited(
            amount=money_str(value),
            balance_after=money_str(self._balance + value),
            round_id=rid,
            wager_id=wid,
            transaction_id=tid,
            rule=_optional_text(rule, "rule"),
            actor=_check_actor(actor),
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
        tid, rid, wid = self._round_ids(transaction_id, round_id, wager_id)
        if self._seen(tid, _fingerprint("refund", value, rid, wid)):
            return False
        self._refund_credited(
            amount=money_str(value),
            balance_after=money_str(self._balance + value),
            round_id=rid,
            wager_id=wid,
            transaction_id=tid,
            reason=_text(reason, "reason"),
            rule=_optional_text(rule, "rule"),
            actor=_check_actor(actor),
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
        tid, rid, wid = self._round_ids(transaction_id, round_id, wager_id)
        reversed_tid = _text(reversed_transaction_id, "reversed_transaction_id")
        if self._seen(tid, _fingerprint("reversal", value, rid, wid, reversed_tid)):
            return False
        checked_reason = _text(reason, "reason")
        checked_rule = _optional_text(rule, "rule")
        checked_actor = _check_actor(actor)
        remaining = self._reversible.get(reversed_tid)
        if remaining is None:
            raise InvalidReversal(
                f"transaction {reversed_tid!r} is not a payout of player {self.player_id!r}",
                rule=checked_rule,
            )
        payout = self._movements[self._index[reversed_tid]]
        paid_round, paid_wager = payout["round_id"], payout["wager_id"]
        if (paid_round, paid_wager) != (rid, wid):
            raise InvalidReversal(
                f"payout {reversed_tid!r} belongs to round {paid_round!r} wager {paid_wager!r}, "
                f"not round {rid!r} wager {wid!r}",
                rule=checked_rule,
            )
        if value > remaining:
            raise InvalidReversal(
                f"reversal {money_str(value)} exceeds the {money_str(remaining)} of payout "
                f"{reversed_tid!r} not yet reversed",
                rule=checked_rule,
            )
        self._payment_reversed(
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

    # ------------------------------------------------------------------------ command helpers

    def _seen(self, transaction_id: str, fingerprint: str) -> bool:
        """True if this exact movement was already applied; raises on a conflicting reuse."""
        known = self._transactions.get(transaction_id)
        if known is None:
            return False
        if known != fingerprint:
            raise DuplicateTransaction(
                f"transaction id {transaction_id!r} was already used for a different movement "
                f"({known}) in the wallet of player {self.player_id!r}"
            )
        return True

    @staticmethod
    def _round_ids(
        transaction_id: str, round_id: str, wager_id: str | None
    ) -> tuple[str, str, str | None]:
        return (
            _text(transaction_id, "transaction_id"),
            _text(round_id, "round_id"),
            _optional_text(wager_id, "wager_id"),
        )

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
        self._transactions[transaction_id] = _fingerprint(
            kind, value, round_id, wager_id, reversed_transaction_id
        )
        self._index[transaction_id] = len(self._movements)
        self._movements.append(
            Movement(
                kind=kind,
                transaction_id=transaction_id,
                amount=amount,
                balance_after=balance_after,
                round_id=round_id,
                wager_id=wager_id,
                rule=rule,
                reason=reason,
                reversed_transaction_id=reversed_transaction_id,
                actor=dict(actor),
            )
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
        self._reversible[transaction_id] = Decimal(amount)

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
        self._reversible[reversed_transaction_id] -= Decimal(amount)
