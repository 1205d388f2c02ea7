"""Domain errors: every refusal the model can give, each with a stable code.

A command that raises one of these has recorded nothing. The web layer maps the ``code`` to an
RFC 9457 problem type and the class to an HTTP status.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class DomainError(Exception):
    """Base of every refusal. ``code`` is stable and machine-readable; the message names the
    problem in words; ``rule`` is the rule ID from RULES.md when a rule caused the refusal;
    ``setting`` names the setting behind it (``rules-key:setting``) when one did (D18)."""

    code = "domain-error"
    status = 422

    def __init__(
        self, message: str, *, rule: str | None = None, setting: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.rule = rule
        self.setting = setting

    def extensions(self) -> dict[str, Any]:
        """Members a problem document adds for this refusal (beyond ``code`` and ``rule``)."""
        return {}


class InvalidId(DomainError):
    """An identifier outside the grammar of ``domain.ids`` (it names the field)."""

    code = "invalid-id"

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field

    def extensions(self) -> dict[str, Any]:
        return {"field": self.field}


class InvalidValue(DomainError):
    """A value that is not exact: a time without its offset, text too long (it names the
    field)."""

    code = "invalid-value"

    def __init__(self, message: str, *, field: str, rule: str | None = None) -> None:
        super().__init__(message, rule=rule)
        self.field = field

    def extensions(self) -> dict[str, Any]:
        return {"field": self.field}


class RequestIdReused(DomainError):
    """A command brought a request id its scope (a round; a boundless player's part) already
    recorded: a request id names one input, so the command is refused, never dropped."""

    code = "request-id-reused"
    status = 409


def refuse_reused(request_id: str | None, seen: object, scope: str | Callable[[], str]) -> None:
    """A request id names one input of its scope: :class:`RequestIdReused` when ``seen`` (the
    ids the scope recorded) holds it. (A repeat of the very same HTTP request is answered
    before it reaches the model, by its idempotency record: ``api.idempotency``.) ``scope``
    names the scope, or is called to name it (only for a refusal: every input is checked)."""
    if request_id is not None and request_id in seen:  # type: ignore[operator]
        where = scope() if callable(scope) else scope
        raise RequestIdReused(
            f"request id {request_id!r} is already recorded in {where}: a request id names one "
            "input, so this command was not recorded (send a new request id, or repeat the "
            "first request with its Idempotency-Key for its answer)"
        )


class InvalidCard(DomainError):
    code = "invalid-card"


class InvalidAmount(DomainError):
    code = "invalid-amount"


class NotFound(DomainError):
    code = "not-found"
    status = 404


class ShoeNotFound(NotFound):
    code = "shoe-not-found"


class WalletNotFound(NotFound):
    code = "wallet-not-found"


class RoundNotFound(NotFound):
    code = "round-not-found"


class TableNotFound(NotFound):
    code = "table-not-found"


class Conflict(DomainError):
    """The command is well formed but the aggregate is not in a state that allows it."""

    code = "conflict"
    status = 409


class WrongOrder(Conflict):
    code = "wrong-order"


class ConcurrentUpdate(Conflict):
    """Another writer kept changing the same records while a command was retried."""

    code = "concurrent-update"


MAX_TEXT: int = 1000
"""Most characters of a text field (a reason, a label in words)."""


def check_text(value: object, field: str, *, required: bool = False) -> str | None:
    """A text field: at most :data:`MAX_TEXT` characters, no control character (C0, DEL, C1);
    None allowed unless ``required``.

    >>> check_text("x" * 1001, "reason")
    Traceback (most recent call last):
    ...
    domain.errors.InvalidValue: reason is 1001 characters long: text fields hold at most 1000
    """
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise InvalidValue(f"{field} must be text, not {type(value).__name__}", field=field)
    if len(value) > MAX_TEXT:
        raise InvalidValue(
            f"{field} is {len(value)} characters long: text fields hold at most {MAX_TEXT}",
            field=field,
        )
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value):
        raise InvalidValue(f"{field} holds a control character", field=field)
    return value


def require_reason(reason: str) -> None:
    """A supervisor's pause, resume or cancel names its reason code (ERR-1), printable text of
    at most :data:`MAX_TEXT` characters."""
    if not isinstance(reason, str) or not reason.strip():
        raise WrongOrder("a reason code is required (ERR-1)", rule="ERR-1")
    check_text(reason, "reason")


class ShoeInUse(Conflict):
    """Retiring a shoe that a round in play draws from (its seed would tell that round's
    coming cards, and the round could draw no more)."""

    code = "shoe-in-use"


class ShoeExhausted(Conflict):
    code = "shoe-exhausted"


class CardAccountingError(Conflict):
    code = "card-accounting"


class ProductionRefusesTestShoe(Conflict):
    code = "test-shoe-refused"


class InsufficientFunds(Conflict):
    code = "insufficient-funds"


class DepositLimitReached(Conflict):
    """A deposit that would take a wallet's deposits, over its whole life, beyond
    ``domain.wallet_checks.WALLET_DEPOSIT_LIMIT`` (every figure derived from the wallet must
    stay within the stores' 64-bit integers of minor units)."""

    code = "deposit-limit-reached"


class AccountTypeRefused(Conflict):
    """A real account at a test table, where stacked shoes are allowed
    (``domain.wallet.check_money_kind``)."""

    code = "account-type-refused"


class DuplicateTransaction(Conflict):
    code = "duplicate-transaction"


class AlreadyExists(Conflict):
    code = "already-exists"


class IllegalAction(Conflict):
    """A player decision that the rules do not allow at this moment."""

    code = "illegal-action"


class OutOfTurn(IllegalAction):
    code = "out-of-turn"


class BettingClosed(Conflict):
    code = "betting-closed"


class BetLimit(Conflict):
    """A stake outside the round's table limits (its rules: the state of the resource, not the
    form of the request, so a 409)."""

    code = "bet-limit"


class RoundClosed(Conflict):
    code = "round-closed"


class UnknownRules(DomainError):
    code = "unknown-rules"


class UnknownPlayer(Conflict):
    """A player the round does not know (no bet in it): the round's state, a 409."""

    code = "unknown-player"


class PlayerNotInRound(NotFound):
    """A read of a player's part of a round the player had no bet in."""

    code = "player-not-in-round"


class SideBetUnavailable(Conflict):
    code = "side-bet-unavailable"


def no_wallet(player: str) -> UnknownPlayer:
    """The refusal of a command naming a player that has no wallet."""
    return UnknownPlayer(f"player {player!r} has no wallet: open it first (POST /wallets)")


class InvalidWalletRequest(DomainError):
    """A wallet command with a malformed argument other than an amount (currency, account
    type, empty id, malformed actor)."""

    code = "invalid-wallet-request"


class InvalidReversal(Conflict):
    """ERR-1 reversal of something that is not a payout of the same round and wager, or of more
    than remains of it."""

    code = "invalid-reversal"


class ShoeRetired(WrongOrder):
    """A command on a shoe that has been retired (SHOE-1: after the last round it is reshuffled)."""

    code = "shoe-retired"


class InvalidSeed(DomainError):
    """An RNG shoe's seed is missing, malformed or does not match the shoe's commitment; or a
    seed was given to a shoe that has none."""

    code = "invalid-seed"


class WrongBurnCount(Conflict):
    """SHOE-2: the burned cards given do not number the shown card's value (a rule refuses the
    cards: 409)."""

    code = "wrong-burn-count"


class InvalidShoe(Conflict):
    """A shoe's opening parameters do not fit together (its kind, decks, cut card, order...):
    a 409, as the request's form is fine."""

    code = "invalid-shoe"


class InvalidRequest(DomainError):
    """A command's arguments are malformed (an unusable id, a number out of range)."""

    code = "invalid-request"


class HandComplete(IllegalAction):
    """A decision for a hand (or a player) whose hands are all complete."""

    code = "hand-complete"
