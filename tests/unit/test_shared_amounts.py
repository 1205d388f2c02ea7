"""A fact's stake and payout are kept as one shared ``Decimal`` a text
(``domain.game.wagers.money_value``): the same values, of the same exponent, as ``Decimal`` of
the text, and one object for every wager that names the same text, in a boundless
participation's state and a classic round's alike (docs/performance-history.md ``bwmem``)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from domain.game import player as P
from domain.game.wagers import money_value


def _bet(player: str, stake: str) -> P.PlayerState:
    s = P.joined(
        {
            "rules_key": "boundless",
            "round_id": "r",
            "table_id": "t",
            "round_number": 1,
            "player": player,
            "shoe_round": 1,
        }
    )
    f = {"wager_id": f"{player}:main", "kind": "main", "stake": stake, "request_id": None}
    s = P.evolve(s, "BetPlaced", f)
    settled = {"wager_id": f"{player}:main", "result": "win", "payout": "20.00"}
    return P.evolve(s, "WagerSettled", settled)


def test_two_players_wagers_share_one_value_of_each_text() -> None:
    a, b = _bet("ann", "10.00"), _bet("bob", "10.00")
    wa, wb = a.wagers["ann:main"], b.wagers["bob:main"]
    assert (wa.stake, wa.payout, wa.settled) == (Decimal("10.00"), Decimal("20.00"), True)
    assert wa.stake is wb.stake
    assert wa.payout is wb.payout


@pytest.mark.parametrize("text", ["10.00", "10.0", "10", "0.00", "1.50", "-0.00"])
def test_a_shared_value_is_the_texts_own_decimal(text: str) -> None:
    value = money_value(text)
    assert value == Decimal(text)
    assert value.as_tuple() == Decimal(text).as_tuple()  # the exponent too (what money_str says)
    assert money_value(text) is value
