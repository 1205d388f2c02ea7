"""The interval an observed RTP should fall in, from the bet's exact mean and variance.

An observation is ``observed = 1 + net / handle`` over a set of wagers of one bet type, where
``handle`` is the sum of the initial stakes ``w_i`` and ``net`` what the wagers (with their
doubles and splits) won or lost. If each initial unit returns ``R_i`` with mean ``rtp`` and
variance ``sigma^2`` (``domain.rtp.report.theory``), then

    observed = sum(w_i R_i) / sum(w_i),   E[observed] = rtp.

Rounds are independent (a fresh shuffle, or cards of one shoe that no strategy here uses),
but the wagers of one round are not: they share the dealer's hand, and in boundless every
player shares the initial hand too. The bound that holds whatever that correlation is treats
the wagers of one round as one: with ``W_r`` the initial stakes of round ``r``,

    Var(observed) <= sigma^2 * sum_r W_r^2 / (sum_r W_r)^2,

an equality when one wager per round is observed. The interval is the normal (central limit)
interval ``rtp +/- z * sd`` for 99% (z = 2.5758) and 99.9% (z = 3.2905). ``effective_n`` =
``(sum W_r)^2 / sum W_r^2`` is the number of equal, independent rounds the sample is worth;
for bets paying hundreds to one the normal interval needs many of them to mean much.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, localcontext

Z = {"99%": Decimal("2.5758293035489"), "99.9%": Decimal("3.2905267314919")}


@dataclass(frozen=True, slots=True)
class Interval:
    level: str
    low: Decimal
    high: Decimal

    def contains(self, value: Decimal) -> bool:
        return self.low <= value <= self.high


def standard_deviation(variance: Decimal, handle: int, square_sum: int) -> Decimal:
    """The bound on the standard deviation of an observed RTP (module docstring); ``handle``
    and ``square_sum`` in the same (minor) units: sum of W_r and sum of W_r^2.

    >>> standard_deviation(Decimal(4), 100, 100)  # 100 rounds of one unit (cents ignored)
    Decimal('0.2')
    """
    if handle <= 0:
        raise ValueError("no handle: no observed RTP")
    with localcontext() as ctx:
        ctx.prec = 28
        return (variance * Decimal(square_sum) / (Decimal(handle) ** 2)).sqrt()


def intervals(rtp: Decimal, variance: Decimal, handle: int, square_sum: int) -> list[Interval]:
    sd = standard_deviation(variance, handle, square_sum)
    q = Decimal("0.000001")
    return [
        Interval(level, (rtp - z * sd).quantize(q), (rtp + z * sd).quantize(q))
        for level, z in Z.items()
    ]


def effective_n(handle: int, square_sum: int) -> Decimal:
    """How many equal, independent rounds the sample is worth.

    >>> effective_n(300, 30000)  # three rounds of 100
    Decimal('3')
    """
    return (Decimal(handle) ** 2 / Decimal(square_sum)).quantize(Decimal("0.01")).normalize()


__all__ = ["Interval", "Z", "effective_n", "intervals", "standard_deviation"]
