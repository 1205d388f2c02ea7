"""Domain errors: every refusal the model can give, each with a stable code.

A command that raises one of these has recorded nothing. The web layer maps the ``code`` to an
RFC 9457 problem type and the class to an HTTP status.
"""

from __future__ import annotations


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


def require_reason(reason: str) -> None:
    """A supervisor's pause, resume or cancel names its reason code (ERR-1)."""
    if not reason or not reason.strip():
        raise WrongOrder("a reason code is required (ERR-1)", rule="ERR-1")


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


class BetLimit(DomainError):
    code = "bet-limit"


class RoundClosed(Conflict):
    code = "round-closed"


class UnknownRules(DomainError):
    code = "unknown-rules"


class UnknownPlayer(DomainError):
    code = "unknown-player"


class SideBetUnavailable(Conflict):
    code = "side-bet-unavailable"


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


class WrongBurnCount(DomainError):
    """SHOE-2: the burned cards given do not number the shown card's value."""

    code = "wrong-burn-count"


class InvalidShoe(DomainError):
    """A shoe's opening parameters are not acceptable (kind, decks, cut card, commitment...)."""

    code = "invalid-shoe"


class InvalidRequest(DomainError):
    """A command's arguments are malformed (an unusable id, a number out of range)."""

    code = "invalid-request"


class HandComplete(IllegalAction):
    """A decision for a hand (or a player) whose hands are all complete."""

    code = "hand-complete"
