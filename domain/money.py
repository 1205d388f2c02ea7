"""Exact money (MONEY-1).

Amounts are :class:`decimal.Decimal` in the table currency, with a fixed number of minor-unit
digits (2 by default). Payouts that are not a whole number of minor units are rounded *down*, and
the rounding is returned so the caller can record it. Binary floats are refused outright.

>>> parse_money("10.50")
Decimal('10.50')
>>> pay(Decimal("5"), Ratio(3, 2))
Payout(amount=Decimal('7.50'), rounding=Decimal('0.00'))
>>> pay(Decimal("0.05"), Ratio(3, 2))
Payout(amount=Decimal('0.07'), rounding=Decimal('0.005'))
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal, InvalidOperation

from domain.errors import InvalidAmount

MINOR_DIGITS = 2
MAX_DECIMALS = MINOR_DIGITS
#: The text of an exact amount: ASCII digits, then an optional '.' and 1 to MINOR_DIGITS digits
#: (``str.isdigit`` and ``Decimal`` also take Arabic-Indic digits, ``1_000``, ``+10``, `` 10 ``).
_DECIMALS = rf"(\.[0-9]{{1,{MINOR_DIGITS}}})?"
_DECIMAL_TEXT = re.compile(rf"(0|[1-9][0-9]{{0,15}}){_DECIMALS}", re.ASCII)
#: A positive amount as a string (what the OpenAPI document states): no leading zero, at most
#: 16 digits before the point and MINOR_DIGITS after it, more than zero.
AMOUNT_PATTERN = (
    rf"^([1-9][0-9]{{0,15}}{_DECIMALS}|0\.([1-9][0-9]?|0[1-9]))$"
    if MINOR_DIGITS == 2
    else rf"^[1-9][0-9]{{0,15}}{_DECIMALS}$"
)
#: The largest integer amount: JSON's largest exact integer (2**53 - 1, 16 digits).
MAX_AMOUNT = 2**53 - 1
_QUANTUM = Decimal(1).scaleb(-MINOR_DIGITS)
ZERO = Decimal("0.00")


def quantum(minor_digits: int = MINOR_DIGITS) -> Decimal:
    return Decimal(1).scaleb(-minor_digits)


def parse_money(value: object, *, field: str = "amount", allow_zero: bool = False) -> Decimal:
    """Parse an amount from a Decimal, int or decimal string. Floats are refused (MONEY-1)."""
    if isinstance(value, bool | float):
        raise InvalidAmount(
            f"{field} must be an exact decimal (string or integer), not a float (MONEY-1)",
            rule="MONEY-1",
        )
    if isinstance(value, Decimal):
        amount = value
    elif isinstance(value, int):
        if abs(value) >= 10**16:
            raise InvalidAmount(f"{field} {value} is beyond any table limit")
        amount = Decimal(value)
    elif isinstance(value, str):
        if _DECIMAL_TEXT.fullmatch(value) is None:
            raise InvalidAmount(
                f"{field} {value[:40]!r} is not an exact amount: ASCII digits with an optional "
                f"'.' and at most {MAX_DECIMALS} decimals, the minor unit (no sign, space, '_', "
                "exponent or leading zero)",
                rule="MONEY-1",
            )
        try:
            amount = Decimal(value)
        except InvalidOperation:  # pragma: no cover (the pattern admits only decimals)
            raise InvalidAmount(f"{field} {value!r} is not a decimal number") from None
    else:
        raise InvalidAmount(
            f"{field} must be a decimal string or integer, got {type(value).__name__}"
        )
    if not amount.is_finite():
        raise InvalidAmount(f"{field} {value!r} is not a finite number")
    if amount < 0:
        raise InvalidAmount(f"{field} {value!r} is negative")
    if amount == 0 and not allow_zero:
        raise InvalidAmount(f"{field} must be greater than zero")
    if amount.adjusted() > 15:
        raise InvalidAmount(f"{field} {value!r} is beyond any table limit")
    if amount != amount.quantize(_QUANTUM, rounding=ROUND_DOWN):
        raise InvalidAmount(
            f"{field} {value!r} has more than {MINOR_DIGITS} decimal places (the minor unit)"
        )
    return amount.quantize(_QUANTUM)


def money_str(amount: Decimal) -> str:
    """Canonical string of an amount: fixed minor-unit digits, e.g. ``'10.00'``."""
    return str(amount.quantize(_QUANTUM))


@dataclass(frozen=True, slots=True)
class Ratio:
    """A payout ratio ``numerator:denominator`` (3:2, 1:1, 2:1, 50:1...)."""

    numerator: int
    denominator: int = 1

    def __str__(self) -> str:
        return f"{self.numerator}:{self.denominator}"

    @classmethod
    def parse(cls, text: str) -> Ratio:
        num, den = text.split(":")
        return cls(int(num), int(den))


@dataclass(frozen=True, slots=True)
class Payout:
    """Winnings on a stake (excluding the stake itself) and what rounding took off."""

    amount: Decimal
    rounding: Decimal


def pay(stake: Decimal, ratio: Ratio) -> Payout:
    """Winnings for ``stake`` at ``ratio``, rounded down to the minor unit (MONEY-1)."""
    exact = stake * ratio.numerator / ratio.denominator
    amount = exact.quantize(_QUANTUM, rounding=ROUND_DOWN)
    return Payout(amount, (exact - amount).normalize() if exact != amount else ZERO)


def half_down(stake: Decimal) -> Decimal:
    """Half a stake rounded down to the minor unit (INS-1, SURR-1).

    >>> half_down(Decimal("10.01"))
    Decimal('5.00')
    """
    return (stake / 2).quantize(_QUANTUM, rounding=ROUND_DOWN)
