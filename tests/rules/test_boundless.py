"""boundless (RULES.md "Variant parameters", boundless column; BDL-1..3, D9, D10, BDL-AVAIL,
FUNDS-2) through whole rounds: one shared initial hand, a per-player card sequence, the dealer
always completes, side bets withdrawn late in the shoe, a double or split without balance
hits at 11 or less and stands otherwise."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from roundkit import (
    D,
    Kit,
    cards_to,
    dealer_cards,
    kinds,
    of,
    one,
    settled,
    settlement,
    stack,
    stood,
)

from domain.errors import IllegalAction, SideBetUnavailable
from domain.rules import get_rules

V = "boundless"


def shared(
    players: str, first: list[str], *, up: str, hole: str, draws=(), dealer_draws=(), **kw
) -> Kit:
    """Each player of ``players`` bets 10.00 on the shared hand ``first``; betting closed."""
    order = stack(V, [first], up=up, hole=hole, draws=draws, dealer_draws=dealer_draws)
    kit = Kit(V, order, players={p: kw.get(p, "1000") for p in players})
    for p in players:
        kit.bet(p, kw.get("bet", 10))
    kit.close()
    return kit


def test_boundless_rules_object_table_row():
    r = get_rules(V)
    assert (r.decks, r.reshuffle_every_round, r.burn_procedure, r.hole_card) == (
        8, False, True, "peek"
    )  # fmt: skip
    assert (r.max_spots, r.max_spots_per_player, r.card_routing) == (0, 1, "per_player_sequence")
    assert (r.surrender, r.double, r.split_aces) == ("not_vs_ace_or_ten", "any_two", "one_card")
    assert (r.insurance, r.insurance_with_blackjack, r.even_money) == (True, True, False)
    assert r.dealer_draws == "always"
    assert (r.double_funds, r.split_funds) == (
        "hit_if_11_or_less_else_stand", "hit_if_11_or_less_else_stand"
    )  # fmt: skip
    assert dict(r.side_bet_round_limits) == {"pair": 40, "bust": 45, "trio": 45, "poker": 45}


# ------------------------------------------------------------------------------ BDL-1
def test_bdl_1_any_number_of_players_share_one_initial_hand():
    players = "ABCDEFGHIJ"
    kit = Kit(V, ["10H", "9S", "7D", "8C"], players=list(players))
    for p in players:
        kit.bet(p, 10)
    new = kit.close()
    assert [p["hand"] for p in of(new, "HandOpened")] == list(players)
    shared_cards = [p["card"] for p in of(new, "CardToHand") if p["hand"] == "shared"]
    assert shared_cards == ["10H", "7D"]
    assert len(of(new, "CardDealt")) == 4  # one shared hand: 4 cards for 10 players
    assert all(h["cards"] == ["10H", "7D"] for h in kit.view()["hands"])


def test_bdl_1_each_player_own_stakes_and_decisions():
    kit = shared(
        "ABC", ["8H", "8D"], up="6C", hole="9S", draws=["3C"], dealer_draws=["5S"], bet="12.50"
    )
    kit.decide("A", "stand")
    kit.decide("B", "hit")  # 19
    kit.decide("B", "stand")
    new = kit.decide("C", "surrender")  # dealer 6,9,5 = 20
    assert {w: (p["result"], p["payout"]) for w, p in settled(new).items()} == {
        "A:main": ("lose", "0.00"), "B:main": ("lose", "0.00"), "C:main": ("surrender", "6.25")
    }  # fmt: skip
    assert kit.nets() == {"A": D("-12.50"), "B": D("-12.50"), "C": D("-6.25")}


def test_bdl_1_side_bets_without_a_main_bet():
    kit = Kit(V, stack(V, [["8H", "8D"]], up="6C", hole="9S", dealer_draws=["KH"]), players=["S"])
    kit.side("S", "bust", 2)
    kit.side("S", "pair", 1)
    new = kit.close()
    assert "HandOpened" not in kinds(new)  # not a seated player
    assert dealer_cards(new) == ["6C", "9S", "KH"]  # D10: the dealer completes for Bust Bonus
    s = settled(new)
    assert (s["S:bust:S"]["pattern"], s["S:bust:S"]["payout"]) == ("three_cards", "4.00")
    assert (s["S:pair:S"]["pattern"], s["S:pair:S"]["payout"]) == ("coloured_pair", "11.00")
    assert kit.net("S") == D(12)


def test_bdl_1_one_main_bet_per_player():
    kit = Kit(V, ["10H"], players=["A"])
    kit.bet("A", 10)
    kit.refused(IllegalAction, lambda: kit.bet("A", 10))


# ----------------------------------------------------------------------- BDL-2 and D9
def test_bdl_2_each_player_takes_cards_from_the_sequence_from_its_first_card():
    kit = shared("AB", ["5H", "6D"], up="9C", hole="8S", draws=["2C", "KH"])
    new = kit.decide("B", "hit")  # B's first card of the sequence: 2C
    assert [(p["hand"], p["card"], p["rule"]) for p in of(new, "CardToHand")] == [
        ("sequence", "2C", "BDL-2"), ("B", "2C", "BDL-2")
    ]  # fmt: skip
    new = kit.decide("A", "hit")  # A also starts at the first card: 2C, not dealt again
    assert "CardDealt" not in kinds(new)
    assert cards_to(new, "A") == ["2C"]
    new = kit.decide("A", "hit")  # A's second: KH, newly revealed
    assert kinds(new)[:4] == ["DecisionMade", "HandHit", "CardDealt", "CardToHand"]
    assert cards_to(new, "A") == ["KH"]
    assert stood(new)["A"] == ("bust", 23, "SCORE-2")
    new = kit.decide("B", "stand")  # B: 13; dealer 17 (no more cards: the shoe has none)
    assert kit.view()["sequence"] == ["2C", "KH"]
    assert kit.drawn() == kit.cards
    assert settlement(new, "B:main")[0] == "lose"


def test_bdl_2_the_dealer_reveals_until_no_hand_needs_another_card():
    kit = shared("AB", ["10H", "2D"], up="9C", hole="8S", draws=["3C", "4D"], dealer_draws=[])
    kit.decide("A", "hit")  # 15
    kit.decide("A", "hit")  # 19
    kit.decide("A", "stand")
    new = kit.decide("B", "hit")  # 15 from 3C: already revealed
    assert "CardDealt" not in kinds(new)
    new = kit.decide("B", "stand")
    assert kit.drawn() == kit.cards
    assert settlement(new, "A:main")[0] == "win"  # 19 vs 17
    assert settlement(new, "B:main")[0] == "lose"


def test_d9_a_split_takes_the_next_unconsumed_card_first_hand_to_completion_then_second():
    kit = shared(
        "ABC", ["8H", "8D"], up="6C", hole="9S", draws=["3C", "9D", "KH"], dealer_draws=["5S"]
    )
    new = kit.decide("A", "split")
    assert [(p["hand"], p["card"], p["rule"]) for p in of(new, "CardToHand")] == [
        ("sequence", "3C", "BDL-2"), ("A.1", "3C", "D9")
    ]  # fmt: skip
    new = kit.decide("B", "hit")  # B's own first card of the sequence
    assert cards_to(new, "B") == ["3C"]
    new = kit.decide("C", "double")
    assert cards_to(new, "C") == ["3C"]
    kit.decide("B", "stand")
    new = kit.decide("A", "double")  # A.1: 8,3 + 9D; then A.2: 8 + KH
    assert cards_to(new, "A.1") == ["9D"]
    assert cards_to(new, "A.2") == ["KH"]
    assert [p["rule"] for p in of(new, "CardToHand") if p["hand"].startswith("A")] == ["D9", "D9"]
    new = kit.decide("A", "stand")  # dealer 6,9,5 = 20
    assert {w: p["result"] for w, p in settled(new).items()} == {
        "A:main": "push", "A.1:double": "push", "A.2:split": "lose", "B:main": "lose",
        "C:main": "lose", "C:double": "lose",
    }  # fmt: skip
    assert kit.nets() == {"A": D(-10), "B": D(-10), "C": D(-20)}
    assert kit.view()["sequence"] == ["3C", "9D", "KH"]


def test_d9_split_aces_one_card_each_from_the_players_sequence():
    kit = shared("AB", ["AH", "AD"], up="6C", hole="10S", draws=["9C", "KH"], dealer_draws=["2S"])
    kit.decide("A", "split")  # A.1: A,9; A.2: A,K (21, not BJ)
    new = kit.decide("B", "hit")  # B: A,A,9 = 21
    assert cards_to(new, "B") == ["9C"]
    ev = kit.events()
    assert settlement(ev, "A:main") == ("win", "1:1", "20.00", "10.00", "OUT-2")
    assert settlement(ev, "A.2:split") == ("win", "1:1", "20.00", "10.00", "OUT-2")
    assert settlement(ev, "B:main") == ("win", "1:1", "20.00", "10.00", "OUT-2")


# ----------------------------------------------------------------------- BDL-3 and D10
def test_bdl_3_d10_the_dealer_completes_even_when_every_hand_is_bust():
    order = stack(V, [["10H", "6D"]], up="6C", hole="9S", draws=["KD"], dealer_draws=["2H"])
    kit = Kit(V, order, players=["A", "S"])
    kit.bet("A", 10)
    kit.side("S", "bust", 2)
    kit.close()
    new = kit.decide("A", "hit")
    assert stood(new)["A"] == ("bust", 26, "SCORE-2")
    assert kinds(new)[-7:] == [
        "HoleCardRevealed", "CardDealt", "CardToDealer", "DealerStood", "WagerSettled",
        "WagerSettled", "RoundSettled",
    ]  # fmt: skip
    assert one(new, "DealerStood") == {"total": 17, "reason": "stands", "rule": "DEALER-1"}
    assert kit.nets() == {"A": D(-10), "S": D(-2)}


def test_bdl_3_d10_the_dealer_completes_after_a_surrender():
    kit = shared("A", ["10H", "6D"], up="6C", hole="9S", dealer_draws=["KH"])
    new = kit.decide("A", "surrender")
    assert dealer_cards(new) == ["KH"]
    assert settlement(new, "A:main") == ("surrender", None, "5.00", "-5.00", "SURR-1")


def test_bdl_3_but_not_past_a_dealer_blackjack_end_1():
    order = stack(V, [["10H", "6D"]], up="AC", hole="KS")
    kit = Kit(V, [*order, "2C"], players=["A", "S"])
    kit.bet("A", 10)
    kit.side("S", "bust", 2)
    kit.close()
    new = kit.close_window()
    assert one(new, "HoleCardRevealed")["rule"] == "END-1"
    assert "CardDealt" not in kinds(new)
    assert settlement(new, "A:main") == ("lose", None, "0.00", "-10.00", "OUT-1")
    assert settled(new)["S:bust:S"]["result"] == "lose"


# ---------------------------------------------------------------------------- BDL-AVAIL
@pytest.mark.parametrize(
    ("bet", "last_round"), [("pair", 40), ("bust", 45), ("trio", 45), ("poker", 45)]
)
def test_bdl_avail_side_bet_withdrawn_after_its_round_of_the_shoe(bet, last_round):
    kit = Kit(V, ["10H"], players=["S"], shoe_round=last_round)
    assert one(kit.side("S", bet, 1), "BetPlaced")["kind"] == bet
    late = Kit(V, ["10H"], players=["S"], shoe_round=last_round + 1)
    err = late.refused(SideBetUnavailable, lambda: late.side("S", bet, 1))
    assert err.rule == "BDL-AVAIL"


def test_bdl_avail_main_bet_still_taken_late_in_the_shoe():
    kit = Kit(V, ["10H"], players=["A"], shoe_round=200)
    assert one(kit.bet("A", 10), "BetPlaced")["wager_id"] == "A:main"


# ----------------------------------------------------------------------------- FUNDS-2
@pytest.mark.parametrize(
    ("first", "applied"),
    [
        (["5H", "6D"], "hit"),
        (["2H", "3D"], "hit"),
        (["9H", "3D"], "stand"),
        (["AH", "7D"], "stand"),  # soft 18
    ],
)
def test_funds_2_boundless_double_without_balance_hits_11_or_less_else_stands(first, applied):
    kit = shared("A", first, up="9C", hole="8S", draws=["KD"], dealer_draws=[], A=15)
    new = kit.decide("A", "double")
    conv = one(new, "DecisionConverted")
    assert (conv["requested"], conv["applied"], conv["rule"]) == ("double", applied, "FUNDS-2")
    assert "WagerAdded" not in kinds(new)
    if applied == "hit":
        assert cards_to(new, "A") == ["KD"]
    else:
        assert stood(new)["A"][0::2] == ("funds", "FUNDS-2")


def test_funds_2_boundless_split_without_balance():
    kit = shared("A", ["5H", "5D"], up="9C", hole="8S", draws=["2D"], A=15)
    new = kit.decide("A", "split")
    assert one(new, "DecisionConverted")["applied"] == "hit"
    assert cards_to(new, "A") == ["2D"]
    assert kit.options("A") == ["hit", "stand"]
    kit2 = shared("A", ["9H", "9D"], up="9C", hole="8S", A=15)
    new = kit2.decide("A", "split")
    assert one(new, "DecisionConverted")["applied"] == "stand"
    assert settlement(new, "A:main") == ("win", "1:1", "20.00", "10.00", "OUT-2")


# ----------------------------------------------------------------- surrender, insurance
@pytest.mark.parametrize("up", ["10C", "KD"])
def test_boundless_no_surrender_against_a_ten(up):
    kit = shared("A", ["10H", "6D"], up=up, hole="8S")
    assert "surrender" not in kit.options("A")
    kit.refused(IllegalAction, lambda: kit.decide("A", "surrender"))


def test_boundless_insurance_even_with_blackjack_no_even_money():
    kit = shared("AB", ["AH", "KD"], up="AC", hole="QS")
    assert kit.options("A") == ["insurance", "no_insurance"]
    kit.refused(IllegalAction, lambda: kit.decide("A", "even_money"))
    kit.decide("A", "insurance")
    new = kit.decide("B", "no_insurance")
    assert settlement(new, "A:insurance") == ("win", "2:1", "15.00", "10.00", "INS-1")
    assert settlement(new, "A:main")[0] == "push"
    assert settlement(new, "B:main")[0] == "push"
    assert kit.nets() == {"A": D(10), "B": D(0)}
