"""The payload of a ``WagerSettled`` event, one construction for every kind of round.

A classic ``Round`` and a boundless ``Participation`` record a settlement with the same fields
(each aggregate declares its own ``WagerSettled`` class, under its own topic); this module owns
how those fields are derived from the wager and the outcome, so the two cannot drift apart: the
stake, payout and net as money strings, the ratio as text, the rounding the payout absorbed.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Protocol

from domain.money import Ratio, money_str


class SettledWager(Protocol):
    """What a settlement reads of a wager (both aggregates' wager states have it)."""

    @property
    def id(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def hand(self) -> str | None: ...

    @property
    def stake(self) -> Decimal: ...


def wager_settled_fields(
    w: SettledWager,
    player: str,
    result: str,
    ratio: Ratio | None,
    payout: Decimal,
    rounding: Decimal,
    rule: str,
    pattern: str | None = None,
    paytable: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The ``WagerSettled`` fields of ``w`` settled as ``result`` paying ``payout`` (stake
    included) under ``rule``.

    >>> from types import SimpleNamespace as W
    >>> f = wager_settled_fields(W(id="1:main", kind="main", hand="1", stake=Decimal("10")),
    ...                          "ana", "win", None, Decimal("20"), Decimal("0"), "OUT-2")
    >>> (f["stake"], f["payout"], f["net"], f["ratio"])
    ('10.00', '20.00', '10.00', None)
    """
    return {
        "wager_id": w.id,
        "player": player,
        "kind": w.kind,
        "hand": w.hand,
        "stake": money_str(w.stake),
        "result": result,
        "ratio": str(ratio) if ratio is not None else None,
        "payout": money_str(payout),
        "net": money_str(payout - w.stake),
        "rounding": str(rounding),
        "pattern": pattern,
        "paytable": paytable,
        "rule": rule,
    }


__all__ = ["SettledWager", "wager_settled_fields"]
