"""One construction of a settlement's payload (domain.game.settlement) for both kinds of round."""

from __future__ import annotations

import dataclasses
import doctest
from decimal import Decimal
from types import SimpleNamespace

import domain.game.settlement as settlement
from domain.boundless.participation import Participation
from domain.money import Ratio
from domain.round import Round

BASE = {"originator_id", "originator_version", "timestamp", "originator_topic"}


def test_doctests() -> None:
    assert doctest.testmod(settlement).failed == 0


def fields(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)} - BASE  # type: ignore[arg-type]


def test_both_aggregates_record_exactly_these_fields() -> None:
    w = SimpleNamespace(id="2:pair:ana", kind="pair", hand=None, stake=Decimal("5"))
    made = settlement.wager_settled_fields(
        w, "ana", "win", Ratio(11, 1), Decimal("60"), Decimal("0"), "DLX-PAIR", "suited", {}
    )
    # ``actor``: every consequence's, declared by domain.events.Derived, set by
    # Decision.consequence (the system)
    assert {*made, "actor"} == fields(Round.WagerSettled) == fields(Participation.WagerSettled)
    assert (made["stake"], made["payout"], made["net"]) == ("5.00", "60.00", "55.00")
    assert (made["ratio"], made["pattern"], made["rule"]) == (
        str(Ratio(11, 1)),
        "suited",
        "DLX-PAIR",
    )


def test_a_refund_nets_zero_and_a_loss_nets_minus_the_stake() -> None:
    w = SimpleNamespace(id="1:main", kind="main", hand="1", stake=Decimal("7.25"))
    refund = settlement.wager_settled_fields(
        w, "bo", "refund", None, Decimal("7.25"), Decimal(0), "ERR-1"
    )
    lose = settlement.wager_settled_fields(w, "bo", "lose", None, Decimal("0"), Decimal(0), "OUT-1")
    assert (refund["net"], lose["net"], lose["payout"]) == ("0.00", "-7.25", "0.00")
