"""What a wallet's commands check and record: the shape of a movement, the fingerprint that
makes a transaction id idempotent, the checks of every argument, and of a reversal (ERR-1: only
(part of) a payout of the same round and wager, never more than remains of it). The
:class:`~domain.wallet.Wallet` aggregate holds the events and the commands."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Literal, TypedDict, get_args

from domain.errors import InvalidReversal, InvalidWalletRequest
from domain.events import ActorKind
from domain.money import money_str

AccountType = Literal["real", "test", "fun"]
"""``test`` and play-for-fun (``fun``) accounts exist but may not take seats (DLX-1)."""

MovementKind = Literal["deposit", "withdrawal", "stake", "payout", "refund", "reversal"]

ACCOUNT_TYPES: frozenset[str] = frozenset(get_args(AccountType))
ACTOR_KINDS: frozenset[str] = frozenset(get_args(ActorKind))
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


def fingerprint(
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


def text(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidWalletRequest(f"{field} must be a non-empty string, got {value!r}")
    return value


def optional_text(value: object, field: str) -> str | None:
    return None if value is None else text(value, field)


def check_actor(value: object) -> dict[str, str]:
    if (
        not isinstance(value, dict)
        or set(value) != {"kind", "id"}
        or value["kind"] not in ACTOR_KINDS
        or not isinstance(value["id"], str)
    ):
        raise InvalidWalletRequest(
            f"actor must be {{'kind': one of {sorted(ACTOR_KINDS)}, 'id': str}}, got {value!r}"
        )
    return {"kind": value["kind"], "id": value["id"]}


def copy_movement(movement: Movement) -> Movement:
    copied = movement.copy()
    copied["actor"] = dict(movement["actor"])
    return copied


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
    payout: Movement | None,
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
    paid_round, paid_wager = payout["round_id"], payout["wager_id"]
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
    "ACTOR_KINDS",
    "DEFAULT_CURRENCY",
    "AccountType",
    "Movement",
    "MovementKind",
    "check_actor",
    "check_opening",
    "check_reversal",
    "copy_movement",
    "fingerprint",
    "optional_text",
    "round_ids",
    "text",
]
