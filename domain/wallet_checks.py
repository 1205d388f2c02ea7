"""What a wallet's commands check and record: the shape of a movement (the query's
:class:`Movement` and the wallet's own compact record of it, :class:`KeptMovement`), the
fingerprint that makes a transaction id idempotent, the checks of every argument and of the
funds a debit needs, and of a reversal (ERR-1: only
(part of) a payout of the same round and wager, never more than remains of it). The
:class:`~domain.wallet.Wallet` aggregate holds the events and the commands."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from itertools import repeat
from typing import Any, Final, Literal, TypedDict, get_args

from eventsourcing.persistence import Transcoding

from domain.errors import (
    AccountTypeRefused,
    DepositLimitReached,
    DuplicateTransaction,
    InsufficientFunds,
    InvalidReversal,
    InvalidWalletRequest,
)
from domain.events import ActorKind
from domain.kept import KeptValues
from domain.money import ZERO, money_str

AccountType = Literal["real", "test", "fun"]
"""``test`` and play-for-fun (``fun``) accounts exist but may not take seats (DLX-1)."""

MovementKind = Literal["deposit", "withdrawal", "stake", "payout", "refund", "reversal"]

ACCOUNT_TYPES: frozenset[str] = frozenset(get_args(AccountType))
#: Account types that hold play money (test and play-for-fun accounts).
PLAY_MONEY: frozenset[str] = frozenset({"test", "fun"})
ACTOR_KINDS: frozenset[str] = frozenset(get_args(ActorKind))
ACTOR_FIELDS: frozenset[str] = frozenset({"kind", "id", "key", "role"})
#: The order of an actor's fields as :func:`check_actor` returns them.
_ACTOR_ORDER: Final = ("kind", "id", "key", "role")
#: The field orders of an actor that :func:`check_actor` returns as they are (a copy).
_IN_ACTOR_ORDER: Final = frozenset(
    {("kind", "id"), ("kind", "id", "key"), ("kind", "id", "role"), _ACTOR_ORDER}
)
DEFAULT_CURRENCY = "EUR"
#: The most a wallet may ever receive from the cashier, its deposits summed over its whole life
#: (the rule book is silent; a setting of the service, docs/api.md "The deposit limit"). A
#: deposit beyond it is refused before anything is recorded (``DepositLimitReached``, 409). Why
#: a limit: the projections and reports keep money as 64-bit integers of minor units (at most
#: about 9.2 * 10**16 currency units), and the balance, the withdrawals and the sums of a
#: player's rows are bounded by the deposits plus what the tables pay (D18 limits every stake);
#: without it, a cashier key's few deposits of 16 digits overflowed the payouts ledger, which
#: then refused every later batch (each read of a player's history answered 500). 10**15 units
#: leaves 90 times the deposits' room for the rest.
WALLET_DEPOSIT_LIMIT = Decimal(10**15).quantize(Decimal("0.01"))


def check_deposit_limit(player_id: str, deposits: Decimal, amount: Decimal) -> None:
    """Refuse a deposit of ``amount`` to a wallet that has taken ``deposits`` over its life
    when the two pass :data:`WALLET_DEPOSIT_LIMIT`."""
    if deposits + amount > WALLET_DEPOSIT_LIMIT:
        raise DepositLimitReached(
            f"deposit {money_str(amount)} refused: the wallet of {player_id} has taken "
            f"{money_str(deposits)} in deposits, and a wallet takes at most "
            f"{money_str(WALLET_DEPOSIT_LIMIT)} over its life (setting WALLET_DEPOSIT_LIMIT); "
            "nothing was recorded"
        )


def check_funds(
    what: str, player_id: str, value: Decimal, balance: Decimal, rule: str | None = None
) -> None:
    """Refuse a debit (``what``: a withdrawal, a stake citing ``rule``) of ``value`` beyond the
    wallet's ``balance``; nothing is recorded."""
    if value > balance:
        raise InsufficientFunds(
            f"{what} {money_str(value)} exceeds the balance {money_str(balance)} "
            f"of player {player_id!r}",
            rule=rule,
        )


class Movement(TypedDict):
    """One movement of money, as plain JSON-ready values (what the wallet's queries give)."""

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


@dataclass(slots=True)
class KeptMovement:
    """The wallet's own record of one movement: the fields of a :class:`Movement`, in its order,
    in a slotted record (about 120 bytes against a dict's 280: a boundless round keeps every
    player's wallet, docs/performance-history.md ``bwmem``). Never changed once recorded (the
    wallet records a new one; :data:`domain.movement_json.RENDERED` keys its bytes by the
    record's identity). ``orjson`` renders it as the object of :func:`copy_movement`'s
    answer, byte for byte (a dataclass: its fields in this order). Its :meth:`fingerprint`
    is what the wallet checks a repeated transaction id against: not kept a movement."""

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

    def fingerprint(self) -> str:
        """The movement's :func:`fingerprint`, as its command had it."""
        amount = Decimal(self.amount)
        return fingerprint(
            self.kind, amount, self.round_id, self.wager_id, self.reversed_transaction_id
        )


class KeptMovementAsDict(Transcoding):
    """A snapshot's encoding of a :class:`KeptMovement` (its fields by name). Register it, with
    ``domain.layered.LayeredMapAsDict``, on the transcoder of an application that snapshots
    wallets."""

    type = KeptMovement
    name = "kept_movement"

    def encode(self, obj: KeptMovement) -> dict[str, Any]:
        return dict(copy_movement(obj))

    def decode(self, data: dict[str, Any]) -> KeptMovement:
        return KeptMovement(**data)


def fingerprint(
    kind: str,
    amount: Decimal,
    round_id: str | None = None,
    wager_id: str | None = None,
    reversed_transaction_id: str | None = None,
) -> str:
    """What makes two uses of a transaction id the same movement (a JSON string). Made only
    when a transaction id is used again (:func:`already_applied`), from the movement kept."""
    return json.dumps(
        [kind, money_str(amount), round_id, wager_id, reversed_transaction_id],
        separators=(",", ":"),
    )


def text(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidWalletRequest(f"{field} must be a non-empty string, got {value!r}")
    return value


def optional_text(value: object, field: str) -> str | None:
    return None if value is None else text(value, field)


def check_actor(value: object) -> dict[str, str]:
    """``{"kind", "id"}``, and the API key that sent the command (``key``, ``role``) when a
    key did (domain.access.Principal.actor)."""
    if (
        not isinstance(value, dict)
        or not {"kind", "id"} <= set(value) <= ACTOR_FIELDS
        or value["kind"] not in ACTOR_KINDS
        or not all(map(isinstance, value.values(), repeat(str)))
    ):
        raise InvalidWalletRequest(
            f"actor must be {{'kind': one of {sorted(ACTOR_KINDS)}, 'id': str}} (and the "
            f"sending key's 'key' and 'role'), got {value!r}"
        )
    if type(value) is dict and tuple(value) in _IN_ACTOR_ORDER:
        # its fields in the order returned already (every command's actor,
        # ``domain.access.Principal.actor``): a copy, without a comprehension's frame
        return dict(value)
    return {k: value[k] for k in _ACTOR_ORDER if k in value}


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


def copy_movement(m: KeptMovement) -> Movement:
    """The query's answer for a kept movement: a dict of its own, its actor a copy."""
    return {
        "kind": m.kind,
        "transaction_id": m.transaction_id,
        "amount": m.amount,
        "balance_after": m.balance_after,
        "round_id": m.round_id,
        "wager_id": m.wager_id,
        "rule": m.rule,
        "reason": m.reason,
        "reversed_transaction_id": m.reversed_transaction_id,
        "actor": dict(m.actor),
    }


#: The actors of recorded movements, one dict each (:func:`kept_actor`), at most
#: :data:`ACTORS_KEPT` of them (a few hundred bytes each).
ACTORS_KEPT: Final = 4096
_ACTORS: KeptValues[tuple[tuple[str, str], ...], dict[str, str], dict[str, str]] = KeptValues(
    dict, most=ACTORS_KEPT
)


def kept_actor(actor: dict[str, str]) -> dict[str, str]:
    """The actor a wallet records in a movement: one dict for every movement of the same actor
    (the same items in the same order; the system's for every stake, payout and refund), never
    changed (each query copies it: :func:`copy_movement`); :data:`ACTORS_KEPT` at most kept
    (``domain.kept``). A boundless round's wallets held a copy a movement: about 1 KB a player
    of its recording's memory (docs/performance-history.md, ``bmemr``)."""
    try:
        return _ACTORS.kept(tuple(actor.items()), actor)
    except TypeError:  # an unhashable value: not shared
        return dict(actor)


#: The texts of movements' amounts and of wallets' currencies and account types, one string
#: each (:func:`kept_text`), at most :data:`TEXTS_KEPT` of them.
TEXTS_KEPT: Final = 4096
_TEXTS: KeptValues[str, str, str] = KeptValues(str, most=TEXTS_KEPT)


def kept_text(text: str) -> str:
    """The text a wallet keeps of a movement's amount (or its currency, its account type): one
    string for every movement of the same amount (a round's stakes and payouts are a few
    amounts said again and again; about 55 bytes each), :data:`TEXTS_KEPT` at most kept
    (``domain.kept``). Not a balance: those differ wallet by wallet."""
    return _TEXTS.kept(text, text)


def check_opening(player_id: object, currency: object, account_type: object) -> str:
    """A wallet opens for a usable player id, in an ISO 4217 currency, as a known account type
    (``test`` and ``fun`` accounts may not take seats, DLX-1); returns the player id."""
    player = text(player_id, "player_id")
    if ":" in player:
        raise InvalidWalletRequest(f"player_id {player!r} must not contain ':'")
    if not isinstance(currency, str) or not re.fullmatch(r"[A-Z]{3}", currency):
        raise InvalidWalletRequest(
            f"currency must be a 3-letter ISO 4217 code in capitals, got {currency!r}"
        )
    if account_type not in ACCOUNT_TYPES:
        raise InvalidWalletRequest(
            f"account_type must be one of {sorted(ACCOUNT_TYPES)}, got {account_type!r}"
        )
    return player


def round_ids(
    transaction_id: str, round_id: str, wager_id: str | None
) -> tuple[str, str, str | None]:
    """A round-linked movement's transaction, round and wager ids, checked."""
    return (
        text(transaction_id, "transaction_id"),
        text(round_id, "round_id"),
        optional_text(wager_id, "wager_id"),
    )


def check_reversal(
    remaining: Decimal | None,
    payout: KeptMovement | None,
    *,
    player: str,
    reversed_tid: str,
    round_id: str,
    wager_id: str | None,
    amount: Decimal,
    rule: str | None,
) -> None:
    """ERR-1: a reversal takes back (part of) a payout of the same round and wager, at most
    what remains of it unreversed (``remaining``: None when ``reversed_tid`` is no payout)."""
    if remaining is None or payout is None:
        raise InvalidReversal(
            f"transaction {reversed_tid!r} is not a payout of player {player!r}", rule=rule
        )
    paid_round, paid_wager = payout.round_id, payout.wager_id
    if (paid_round, paid_wager) != (round_id, wager_id):
        raise InvalidReversal(
            f"payout {reversed_tid!r} belongs to round {paid_round!r} wager {paid_wager!r}, "
            f"not round {round_id!r} wager {wager_id!r}",
            rule=rule,
        )
    if amount > remaining:
        raise InvalidReversal(
            f"reversal {money_str(amount)} exceeds the {money_str(remaining)} of payout "
            f"{reversed_tid!r} not yet reversed",
            rule=rule,
        )


__all__ = [
    "ACCOUNT_TYPES",
    "ACTORS_KEPT",
    "ACTOR_FIELDS",
    "ACTOR_KINDS",
    "DEFAULT_CURRENCY",
    "PLAY_MONEY",
    "AccountType",
    "KeptMovement",
    "KeptMovementAsDict",
    "Movement",
    "MovementKind",
    "already_applied",
    "check_actor",
    "check_money_kind",
    "check_opening",
    "check_reversal",
    "copy_movement",
    "fingerprint",
    "kept_actor",
    "kept_text",
    "optional_text",
    "round_ids",
    "text",
]


def already_applied(
    kept: KeptMovement | None,
    opening: bool,
    player_id: str,
    transaction_id: str,
    kind: str,
    amount: Decimal,
    round_id: str | None = None,
    wager_id: str | None = None,
    reversed_transaction_id: str | None = None,
) -> bool:
    """Whether this exact movement was already applied to the wallet of ``player_id``: its
    transaction id is the one of ``kept`` (the movement recorded under it, if any) or of the
    wallet's opening (``opening``), with the same :func:`fingerprint`;
    :class:`DuplicateTransaction` for the same id used for a different movement (the opening's
    id is taken too: it is no movement). The fingerprints are made only for an id used again."""
    if kept is not None:
        known = kept.fingerprint()
    elif opening:
        known = fingerprint("open", ZERO)
    else:
        return False
    if known != fingerprint(kind, amount, round_id, wager_id, reversed_transaction_id):
        raise DuplicateTransaction(
            f"transaction id {transaction_id!r} was already used for a different movement "
            f"({known}) in the wallet of player {player_id!r}"
        )
    return True
