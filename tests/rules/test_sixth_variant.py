"""A sixth variant defined purely as a rules object, and the one policy it needs that the five
published variants do not have: H17, the dealer hits soft 17 (``dealer_hits_soft_17``; not in
the rule book: a setting of the variant, cited by the draw it makes).

``SIXTH``: 6 decks reshuffled every round (RNG), one box, dealer hits soft 17, no surrender,
peek. Nothing of the engine knows it: it is published for the test (``rules.registered``),
then played, settled and verified like any variant.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from uuid import UUID

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from roundkit import Kit, of, settled, stack

from cli.strategy import choose
from domain.application import RoundAudit
from domain.errors import IllegalAction
from domain.persistence import environment_for
from domain.rules import registered
from domain.rules.base import Rules
from domain.scoring import is_blackjack, score
from replays.verify import StoreVerifier

SIXTH = Rules(
    key="sixth/1",
    variant="sixth",
    dealing="rng",
    decks=6,
    reshuffle_every_round=True,
    burn_procedure=False,
    max_spots=1,
    max_spots_per_player=1,
    card_routing="in_turn",
    hole_card="peek",
    surrender="none",
    double="any_two",
    double_after_split=True,
    split_forbidden_values=frozenset(),
    split_aces="one_card",
    double_split_aces=False,
    insurance=True,
    insurance_with_blackjack=False,
    even_money=True,
    even_money_or_insurance_with_bj=False,
    dealer_bj_takes="peek",
    dealer_draws="always",
    end_when_all_blackjack=False,
    double_funds="refuse",
    split_funds="refuse",
    pre_decisions=False,
    dealer_hits_soft_17=True,  # H17
)


@pytest.fixture(autouse=True)
def sixth() -> Iterator[Rules]:
    with registered(SIXTH) as rules:
        yield rules


def dealer_draws(events: list[dict]) -> list[tuple[str, str]]:
    return [(p["card"], p["rule"]) for p in of(events, "CardToDealer") if p["rule"] != "PHASE-2"]


# ------------------------------------------------------------------------------------ H17
def test_h17_the_dealer_hits_soft_17():
    # box 10,8 = 18 stands; dealer 6 up, A in the hole: soft 17, hit (H17): 2 -> soft 19 stands
    kit = Kit("sixth", stack("sixth", [["10H", "8D"]], up="6C", hole="AS", dealer_draws=["2D"]))
    kit.bet("A", 10, 1)
    kit.close()
    new = kit.decide("A", "stand")
    assert dealer_draws(new) == [("2D", "H17")]
    assert settled(new)["1:main"]["result"] == "lose"  # 18 against 19
    assert of(new, "RoundSettled")[0]["dealer_total"] == 19


def test_h17_is_a_setting_the_published_variants_leave_off():
    # the same cards in multihand (DEALER-1: soft 17 stands): 18 beats 17
    kit = Kit(
        "multihand", stack("multihand", [["10H", "8D"]], up="6C", hole="AS", dealer_draws=["2D"])
    )
    kit.bet("A", 10, 1)
    kit.close()
    new = kit.decide("A", "stand")
    assert dealer_draws(new) == []
    assert settled(new)["1:main"]["result"] == "win"


def test_h17_a_hard_17_stands_and_a_soft_17_of_three_cards_is_hit():
    # dealer 10+7 = hard 17: stands (DEALER-1)
    kit = Kit("sixth", stack("sixth", [["10H", "8D"]], up="10C", hole="7S"))
    kit.bet("A", 10, 1)
    kit.close()
    assert dealer_draws(kit.decide("A", "stand")) == []
    # dealer 2 up, A hole = soft 13: draws 4 (DEALER-1) = soft 17: draws K (H17) = hard 17
    kit = Kit(
        "sixth",
        stack("sixth", [["10H", "8D"]], up="2C", hole="AS", dealer_draws=["4D", "KH"]),
        table="t2",
    )
    kit.bet("A", 10, 1)
    kit.close()
    new = kit.decide("A", "stand")
    assert dealer_draws(new) == [("4D", "DEALER-1"), ("KH", "H17")]
    assert settled(new)["1:main"]["result"] == "win"  # 18 against 17


def test_the_sixth_variant_refuses_what_its_rules_leave_out():
    kit = Kit("sixth", stack("sixth", [["10H", "6D"]], up="9C", hole="8S"))
    err = kit.refused(IllegalAction, lambda: kit.bet("A", 10, 2))  # one box
    assert "boxes/seats 1-1" in err.message
    kit.bet("A", 10, 1)
    kit.close()
    assert kit.view()["hands"][0]["options"] == ["hit", "stand", "double"]  # no surrender
    err = kit.refused(IllegalAction, lambda: kit.decide("A", "surrender"))
    assert err.rule == "SURR-1"


# ------------------------------------------------------- played, settled, verified (RNG)
def test_a_sixth_variant_defined_as_rules_is_played_settled_and_verified(tmp_path: Path):
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/sixth.db"))
    players = ("ann", "bob", "cid")
    for p in players:
        app.open_wallet(p)
        app.deposit(p, "500.00", transaction_id=f"dep-{p}")
    rounds = [
        app.start_round(table_id=f"six-{p}", round_number=n, variant="sixth")
        for n in range(1, 21)
        for p in players
    ]
    for rid in rounds:
        view = app.round_view(rid)
        player = view["table_id"].removeprefix("six-")
        app.place_bet(rid, player=player, amount="10.00", spot=1)
        view = app.close_betting(rid)
        for _ in range(30):
            if view["phase"] in ("settled", "cancelled"):
                break
            if view["phase"] == "insurance":
                view = app.close_insurance_window(rid)
                continue
            hand = next(h for h in view["hands"] if h["options"])
            action = choose(hand["options"], hand["cards"], view["dealer"]["cards"][0], "sixth")
            view = app.decide(rid, player=player, action=action, hand=hand["hand"])
        assert view["phase"] == "settled", view
        dealer = list(app.round(rid).dealer)
        s = score(dealer)
        if not is_blackjack(dealer, split=False):  # H17: never stands on a soft 17
            assert not (s.total == 17 and s.soft), [c.code for c in dealer]
            assert s.total >= 17
    verifier = StoreVerifier(app)
    for rid in rounds:
        verdict = verifier.verify(UUID(rid))
        assert verdict.ok, verdict.as_json()["discrepancies"][:2]
        assert {"reexecution", "shoe", "money"} <= set(verdict.checks)
        shoe = app.shoe(app.round(rid).shoe_id)
        assert shoe.kind == "rng"
        assert shoe.retired  # D3: one shoe per round, its seed revealed at the end
    staked = paid = Decimal(0)
    for rid in rounds:
        for e in app.round_events(rid):
            if e["type"] in ("Round.BetPlaced", "Round.WagerAdded"):
                staked += Decimal(e["payload"]["stake"])
            elif e["type"] == "Round.WagerSettled":
                paid += Decimal(e["payload"]["payout"])
    total = sum(app.balance(p) for p in players)
    assert total == Decimal("1500.00") - staked + paid  # money is conserved
    app.close()
