"""boundless through the scaled design: one SharedHand per round, one Participation per player.

Rule-named tests (BDL-1..3, BDL-PAIR, BDL-BUST, BDL-TRIO, BDL-POKER, BDL-AVAIL, D9-D12, AUTO-1,
FUNDS-2, INS-1, ERR-1) played through ``RoundAudit``'s public commands on stacked test shoes,
plus the aggregate boundaries themselves and the bad-input list (a named domain error, nothing
recorded). ``tests/rules/test_boundless.py`` holds the older rule tests; they run through the
same path.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from domain.errors import RequestIdReused

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from roundkit import D, Kit, cards_to, dealer_cards, kinds, of, one, settled, settlement, stack

from domain.application import RoundAudit
from domain.boundless.participation import Participation, participation_id
from domain.boundless.service import Bet, Decision
from domain.boundless.shared import SharedHand
from domain.cards import parse_cards
from domain.errors import (
    HandComplete,
    IllegalAction,
    InvalidRequest,
    OutOfTurn,
    RoundClosed,
    SideBetUnavailable,
    UnknownPlayer,
    WrongOrder,
)
from domain.game import sequence as H
from domain.round import Round
from domain.rules import VARIANTS, get_rules

V = "boundless"
RULES = get_rules(V)


def shared(players: str, first: list[str], *, up: str, hole: str, draws=(), dealer_draws=(), **kw):
    order = stack(V, [first], up=up, hole=hole, draws=draws, dealer_draws=dealer_draws)
    kit = Kit(V, order, players={p: kw.get(p, "1000") for p in players})
    for p in players:
        kit.bet(p, kw.get("bet", 10))
    kit.close()
    return kit


def events_of(kit: Kit, aggregate: str) -> list[str]:
    """The event types of one aggregate kind (``SharedHand`` or ``Participation``)."""
    return [e["type"] for e in kit.events() if e["type"].startswith(aggregate + ".")]


# ------------------------------------------------------------------ aggregate boundaries
def test_bdl_1_one_shared_hand_per_round_and_one_participation_per_player():
    kit = shared("AB", ["10H", "7D"], up="9C", hole="8S", draws=["2C"])
    svc = kit.app.boundless
    assert isinstance(svc.shared(kit.rid), SharedHand)
    assert str(svc.shared(kit.rid).id) == kit.rid  # the round's id names the shared hand
    for player in "AB":
        p = svc.participation(kit.rid, player)
        assert p.id == participation_id(kit.rid, player)  # uuid5 of round id and player
        assert p.round_id == kit.rid


def test_bdl_1_a_round_refuses_shared_hand_rules():
    """BDL-1: a boundless round is a SharedHand and one Participation per player, never a
    Round; the Round aggregate refuses shared-hand rules (by variant or by key) and records
    nothing, while every other variant still opens one."""
    assert RULES.shared_hand
    for key in (V, RULES.key):
        with pytest.raises(InvalidRequest) as info:
            Round.start(table_id="t1", round_number=1, rules_key=key, shoe_id="s1")
        assert info.value.rule == "BDL-1"
        assert info.value.code == "invalid-request"
        assert "SharedHand with one Participation per player" in info.value.message
    others = [v for v in VARIANTS if not get_rules(v).shared_hand]
    assert others == ["deluxe", "multihand", "lucky7", "european"]
    for variant in others:
        rnd = Round.start(table_id="t1", round_number=1, rules_key=variant, shoe_id="s1")
        assert [type(e) for e in rnd.collect_events()] == [Round.Started]


def test_bdl_1_a_decision_writes_only_its_players_participation():
    kit = shared("AB", ["10H", "7D"], up="9C", hole="8S", draws=["2C"])
    version = kit.app.boundless.shared(kit.rid).version
    other = kit.app.boundless.participation(kit.rid, "B").version
    new = kit.decide("A", "stand")
    assert {e["type"].split(".")[0] for e in new[:2]} == {"Participation"}
    assert kit.app.boundless.participation(kit.rid, "B").version == other
    assert kit.app.boundless.shared(kit.rid).version == version  # read, never written
    new = kit.decide("B", "hit")  # B needs a card: now the dealer reveals it (BDL-2)
    assert kit.app.boundless.shared(kit.rid).version > version


def test_bdl_1_side_bet_only_players_have_no_hand_and_cannot_decide():
    kit = Kit(V, stack(V, [["10H", "7D"]], up="9C", hole="8S"), players=["A", "S"])
    kit.bet("A", 10)
    kit.side("S", "pair", 1)
    kit.close()
    assert [h["player"] for h in kit.view()["hands"]] == ["A"]
    kit.refused(UnknownPlayer, lambda: kit.decide("S", "stand"))


# --------------------------------------------------------------------------- BDL-2 / D9
def test_bdl_2_a_sequence_card_is_needed_only_when_some_hand_waits_for_it():
    order = stack(V, [["5H", "6D"]], up="9C", hole="8S")
    app = RoundAudit()
    for p in "AB":
        app.open_wallet(p, account_type="test")
        app.deposit(p, "100", transaction_id=f"d-{p}")
    sid = app.open_shoe(table_id="live", shoe_number=1, kind="live", decks=8, production=False)
    rid = app.start_round(table_id="live", round_number=1, variant=V, shoe_id=sid, production=False)
    app.place_bet(rid, player="A", amount="10")
    app.place_bet(rid, player="B", amount="10")
    app.close_betting(rid)
    for card in order:
        app.deal_card(rid, card)
    view = app.round_view(rid)
    assert view["card_needed"] is None  # everyone is deciding: the dealer reveals nothing
    with pytest.raises(WrongOrder):
        app.deal_card(rid, "2C")
    view = app.decide(rid, player="A", action="hit")
    assert view["card_needed"] == {"for": "sequence", "index": "0"}
    view = app.deal_card(rid, "2C")
    assert view["sequence"] == ["2C"]
    assert [h["cards"] for h in view["hands"] if h["player"] == "A"] == [["5H", "6D", "2C"]]
    view = app.decide(rid, player="B", action="hit")  # B takes 2C too: nothing to reveal
    assert view["card_needed"] is None
    assert [h["cards"] for h in view["hands"] if h["player"] == "B"] == [["5H", "6D", "2C"]]


def test_d9_hands_recomputed_from_the_sequence_and_the_decision_log_alone():
    kit = shared(
        "ABC", ["8H", "8D"], up="6C", hole="9S", draws=["3C", "9D", "KH", "2S"], dealer_draws=["5S"]
    )
    kit.decide("A", "split")
    kit.decide("B", "hit")
    kit.decide("C", "double")
    kit.decide("B", "stand")
    kit.decide("A", "hit")
    kit.decide("A", "stand")
    kit.decide("A", "stand")
    assert kit.phase == "settled"
    s = kit.app.boundless.shared(kit.rid)
    for p in kit.app.boundless.participations(kit.rid):
        assert p.state is not None
        replayed = H.replay(p.player, s.initial, s.sequence, p.log, RULES, played=s.played)
        assert replayed.hands == p.state.hands
        taken = H.consumed(p.state)
        assert taken == s.sequence[: len(taken)]  # a prefix of the sequence, in play order
    a = kit.app.boundless.participation(kit.rid, "A")
    assert [(h.id, [c.code for c in h.cards]) for h in a.hands] == [
        ("A.1", ["8H", "3C", "9D"]), ("A.2", ["8D", "KH"])
    ]  # fmt: skip


def test_d9_the_second_split_hand_waits_for_the_first_to_complete():
    kit = shared("A", ["8H", "8D"], up="6C", hole="9S", draws=["3C", "9D", "KH"])
    new = kit.decide("A", "split")
    assert cards_to(new, "A.1") == ["3C"]
    assert cards_to(new, "A.2") == []
    new = kit.decide("A", "hit")  # A.1 8,3,9 = 20: the next card goes to A.2 only after
    assert cards_to(new, "A.1") == ["9D"]
    assert cards_to(new, "A.2") == []
    new = kit.decide("A", "stand")
    assert cards_to(new, "A.2") == ["KH"]


# ---------------------------------------------------------------------------- BDL-3 / D10
def test_d10_the_dealer_completes_when_every_player_surrendered():
    kit = shared("AB", ["10H", "6D"], up="6C", hole="9S", dealer_draws=["KH"])
    kit.decide("A", "surrender")
    new = kit.decide("B", "surrender")
    assert dealer_cards(new) == ["KH"]  # 6,9 = 15 draws: Bust Bonus depends on it
    assert one(new, "DealerStood") == {"total": 25, "reason": "bust", "rule": "DEALER-1"}


def test_bdl_3_the_dealer_draws_after_the_last_hand_completes_not_before():
    kit = shared("AB", ["10H", "6D"], up="6C", hole="9S", dealer_draws=["KH"])
    new = kit.decide("A", "stand")
    assert "DealerTurnStarted" not in kinds(new)
    new = kit.decide("B", "stand")
    assert kinds(new)[2:] == [
        "DealerTurnStarted", "HoleCardRevealed", "CardDealt", "CardToDealer", "DealerStood",
        "WagerSettled", "WagerSettled", "RoundSettled",
    ]  # fmt: skip
    assert kit.phase == "settled"


# ------------------------------------------------------------------------------ side bets
def side_round(first: list[str], up: str, hole: str, kind: str, stake: object = 1, **kw):
    order = stack(V, [first], up=up, hole=hole, **kw)
    kit = Kit(V, order, players=["S"])
    kit.side("S", kind, stake)
    kit.close()
    return kit


@pytest.mark.parametrize(
    ("first", "pattern", "payout"),
    [
        (["8H", "8C"], "mixed_pair", "6.00"),  # same rank, different colour 5:1
        (["8H", "8D"], "coloured_pair", "11.00"),  # same colour, different suit 10:1
        (["8H", "8H"], "perfect_pair", "31.00"),  # same rank and suit 30:1
    ],
)
def test_bdl_pair_paid_on_the_shared_first_two_cards_in_a_round(first, pattern, payout):
    kit = side_round(first, "6C", "9S", "pair", dealer_draws=["KH"])
    s = settled(kit.events())["S:pair:S"]
    assert (s["result"], s["pattern"], s["payout"], s["rule"]) == (
        "win",
        pattern,
        payout,
        "BDL-PAIR",
    )


def test_d11_jack_and_queen_are_no_pair_in_a_round():
    kit = side_round(["JH", "QH"], "6C", "9S", "pair", dealer_draws=["KH"])
    s = settled(kit.events())["S:pair:S"]
    assert (s["result"], s["pattern"], s["payout"]) == ("lose", None, "0.00")


def test_d11_boundless_pair_has_no_suited_trips_row():
    kit = side_round(["9H", "9H"], "9H", "8S", "pair", dealer_draws=[])
    s = settled(kit.events())["S:pair:S"]
    assert s["pattern"] == "perfect_pair"  # not suited trips (deluxe only)


@pytest.mark.parametrize(
    ("hole", "dealer_draws", "pattern", "payout"),
    [
        ("9S", ["KH"], "three_cards", "2.00"),  # 6,9,K: 1:1
        ("5S", ["2H", "KH"], "four_cards", "3.00"),  # 6,5,2,K: 2:1
        ("5S", ["AH", "AD", "KH"], "five_cards", "10.00"),  # 6,5,A,A,K: 9:1
    ],
)
def test_bdl_bust_pays_by_the_cards_in_the_dealers_busting_hand(
    hole, dealer_draws, pattern, payout
):
    kit = side_round(["10H", "7D"], "6C", hole, "bust", dealer_draws=dealer_draws)
    s = settled(kit.events())["S:bust:S"]
    assert (s["pattern"], s["payout"], s["rule"]) == (pattern, payout, "BDL-BUST")


def test_bdl_bust_loses_when_the_dealer_stands():
    kit = side_round(["10H", "7D"], "10C", "8S", "bust")
    assert settled(kit.events())["S:bust:S"]["result"] == "lose"


@pytest.mark.parametrize(
    ("first", "up", "pattern", "payout"),
    [
        (["9H", "QD"], "AS", "total_19_20", "3.00"),  # A,9,Q = 20: 2:1
        (["7H", "7D"], "7C", "777_unsuited", "51.00"),  # 50:1
        (["6H", "8H"], "7H", "678_suited", "101.00"),  # 100:1
    ],
)
def test_bdl_trio_on_the_shared_first_two_and_the_dealers_first_card(first, up, pattern, payout):
    kit = side_round(first, up, "KC" if up != "AS" else "8C", "trio", dealer_draws=["2C", "KD"])
    if kit.phase == "insurance":
        kit.close_window()
    s = settled(kit.events())["S:trio:S"]
    assert (s["pattern"], s["payout"], s["rule"]) == (pattern, payout, "BDL-TRIO")


@pytest.mark.parametrize(
    ("first", "up", "pattern", "payout"),
    [
        (["5H", "6H"], "KC", "21_unsuited", "4.00"),  # 5,6,K = 21 not all one suit: 3:1
        (["5H", "6H"], "KH", "21_suited", "11.00"),  # all one suit: 10:1
    ],
)
def test_d12_21_is_suited_only_when_all_one_suit(first, up, pattern, payout):
    kit = side_round(first, up, "9S", "trio")
    s = settled(kit.events())["S:trio:S"]
    assert (s["pattern"], s["payout"]) == (pattern, payout)


@pytest.mark.parametrize(
    ("first", "up", "pattern", "payout"),
    [
        (["2C", "3H"], "AD", "straight", "11.00"),  # P16: A-2-3, ace low, 10:1
        (["QC", "KH"], "AD", "straight", "11.00"),  # Q-K-A, ace high
        (["2C", "9C"], "5C", "flush", "6.00"),  # 5:1
        (["9C", "9H"], "9D", "three_of_a_kind", "31.00"),  # 30:1
        (["9C", "9C"], "9C", "suited_trips", "101.00"),  # 100:1
    ],
)
def test_bdl_poker_on_the_shared_first_two_and_the_dealers_first_card(first, up, pattern, payout):
    kit = side_round(first, up, "8S", "poker", dealer_draws=["KD"])
    if kit.phase == "insurance":
        kit.close_window()
    s = settled(kit.events())["S:poker:S"]
    assert (s["pattern"], s["payout"], s["rule"]) == (pattern, payout, "BDL-POKER")


def test_bdl_poker_no_straight_around_the_corner():
    kit = side_round(["KC", "AH"], "2D", "8S", "poker", dealer_draws=["KD"])
    assert settled(kit.events())["S:poker:S"]["result"] == "lose"


# ------------------------------------------------------------------------------ BDL-AVAIL
def test_bdl_avail_a_side_bet_after_its_limit_is_refused_and_records_nothing():
    kit = Kit(V, ["10H"], players={"S": "100"}, shoe_round=41)
    err = kit.refused(SideBetUnavailable, lambda: kit.side("S", "pair", 1))
    assert err.rule == "BDL-AVAIL"
    assert kit.view()["wagers"] == []
    assert one(kit.side("S", "bust", 1), "BetPlaced")["kind"] == "bust"  # still offered at 41


def test_bdl_avail_batch_refuses_only_the_withdrawn_bet():
    kit = Kit(V, ["10H"], players={"S": "100", "T": "100"}, shoe_round=46)
    results = kit.app.boundless.place_bets(
        kit.rid, [Bet("S", "10"), Bet("S", "1", "trio"), Bet("T", "1", "pair")]
    )
    assert results[0] is None
    assert isinstance(results[1], SideBetUnavailable)
    assert isinstance(results[2], SideBetUnavailable)
    assert [w["wager_id"] for w in kit.view()["wagers"]] == ["S:main"]
    assert kit.balance("S") == D(90)
    assert kit.balance("T") == D(100)


# -------------------------------------------------------------------------------- AUTO-1
def test_auto_1_timed_out_players_are_played_by_the_system_and_others_are_not_waited_for():
    kit = shared("ABC", ["2H", "3D"], up="9C", hole="8S", draws=["4C", "3S"], dealer_draws=[])
    kit.decide("A", "stand")
    new = kit.timeout("B")  # 5: hit 4C (9), hit 3S (12), stand
    assert [(p["action"], p["total"]) for p in of(new, "AutoActed")] == [
        ("hit", 5), ("hit", 9), ("stand", 12)
    ]  # fmt: skip
    assert "DealerTurnStarted" not in kinds(new)  # C still decides
    new = kit.decide("C", "stand")
    assert kit.phase == "settled"


def test_auto_1_disconnect_then_play_starts_the_system_plays():
    order = stack(V, [["2H", "3D"]], up="9C", hole="8S", draws=["KC"])
    kit = Kit(V, order, players=["A", "B"])
    kit.bet("A", 10)
    kit.bet("B", 10)
    kit.disconnect("A")
    new = kit.close()
    assert [(p["hand"], p["action"]) for p in of(new, "AutoActed")] == [
        ("A", "hit"),
        ("A", "stand"),
    ]
    assert kit.options("B") == ["hit", "stand", "double", "surrender"]


# ------------------------------------------------------------------------------- INS-1
def test_ins_1_the_window_completes_when_every_seated_player_decided():
    kit = shared("ABC", ["10H", "9S"], up="AC", hole="7D")
    kit.decide("A", "insurance")
    kit.timeout("B")
    new = kit.decide("C", "no_insurance")
    assert kinds(new)[:3] == ["DecisionMade", "InsuranceWindowCompleted", "DealerChecked"]
    assert kit.phase == "playing"
    kit.refused(IllegalAction, lambda: kit.decide("B", "insurance"))


def test_ins_1_a_player_disconnected_before_the_window_is_declined_at_once():
    order = stack(V, [["10H", "9S"]], up="AC", hole="7D")
    kit = Kit(V, order, players=["A", "B"])
    kit.bet("A", 10)
    kit.bet("B", 10)
    kit.disconnect("A")
    kit.close()
    new = kit.decide("B", "no_insurance")
    assert "InsuranceWindowCompleted" in kinds(new)


# -------------------------------------------------------------------------------- ERR-1
def test_err_1_cancel_refunds_every_player_and_every_kind_of_stake():
    kit = Kit(V, stack(V, [["8H", "8D"]], up="AC", hole="9S", draws=["3C", "2D"]),
              players=["A", "B", "S"])  # fmt: skip
    kit.bet("A", 10)
    kit.bet("B", "12.50")
    kit.side("S", "poker", 2)
    kit.side("A", "pair", 1)
    kit.close()
    kit.decide("A", "insurance")
    kit.decide("B", "no_insurance")
    kit.decide("A", "split")
    kit.decide("B", "double")
    new = kit.cancel()
    assert kinds(new)[0] == "CancelRequested"
    assert kinds(new)[-1] == "RoundCancelled"
    refunds = {w: (p["result"], p["payout"], p["rule"]) for w, p in settled(new).items()}
    assert refunds == {
        "A:main": ("refund", "10.00", "ERR-1"),
        "A:pair:A": ("refund", "1.00", "ERR-1"),
        "A:insurance": ("refund", "5.00", "ERR-1"),
        "A.2:split": ("refund", "10.00", "ERR-1"),
        "B:main": ("refund", "12.50", "ERR-1"),
        "B:double": ("refund", "12.50", "ERR-1"),
        "S:poker:S": ("refund", "2.00", "ERR-1"),
    }
    assert kit.nets() == {"A": 0, "B": 0, "S": 0}
    assert kit.phase == "cancelled"
    kit.refused(RoundClosed, lambda: kit.decide("A", "hit"))


def test_err_1_cancel_in_batches_of_participations():
    order = stack(V, [["10H", "7D"]], up="9C", hole="8S")
    kit = Kit(V, order, players={f"P{i}": "50" for i in range(7)})
    kit.app.boundless.batch_size = 2
    for i in range(7):
        kit.bet(f"P{i}", 10)
    kit.close()
    kit.decide("P0", "stand")
    new = kit.cancel()
    assert len(of(new, "WagerSettled")) == 7
    assert all(n == 0 for n in kit.nets().values())


# ------------------------------------------------------------------------------ bad input
def test_bad_input_a_decision_for_a_player_not_in_the_round():
    kit = shared("A", ["10H", "7D"], up="9C", hole="8S")
    kit.fund("Z", 100)
    err = kit.refused(UnknownPlayer, lambda: kit.decide("Z", "stand"))
    assert err.code == "unknown-player"
    kit.refused(UnknownPlayer, lambda: kit.timeout("Z"))
    kit.refused(UnknownPlayer, lambda: kit.disconnect("Z"))
    kit.refused(UnknownPlayer, lambda: kit.decide("Z:x", "stand"))


def test_bad_input_a_decision_after_the_players_hand_is_complete():
    kit = shared("AB", ["10H", "7D"], up="9C", hole="8S")
    kit.decide("A", "stand")
    err = kit.refused(HandComplete, lambda: kit.decide("A", "hit"))
    assert err.code == "hand-complete"
    kit.refused(HandComplete, lambda: kit.decide("A", "stand", hand="A"))
    kit.refused(HandComplete, lambda: kit.timeout("A"))


def test_bad_input_in_a_batch_is_reported_in_place_and_the_rest_is_recorded():
    kit = shared("ABC", ["10H", "7D"], up="9C", hole="8S", draws=["2C"])
    kit.decide("A", "stand")
    before = len(kit.events())
    results = kit.app.boundless.decide_many(
        kit.rid,
        [
            Decision("A", "hit"),  # complete
            Decision("Z", "hit"),  # not in the round
            Decision("B", "stand"),
            Decision("C", "fold"),  # unknown action
        ],
    )
    assert [type(r).__name__ if r else None for r in results] == [
        "HandComplete", "UnknownPlayer", None, "IllegalAction"
    ]  # fmt: skip
    new = kit.events()[before:]
    assert [(p["player"], p["action"]) for p in of(new, "DecisionMade")] == [("B", "stand")]


def test_bad_input_a_decision_during_the_deal_is_out_of_turn():
    app = RoundAudit()
    app.open_wallet("A", account_type="test")
    app.deposit("A", "100", transaction_id="d-A")
    sid = app.open_shoe(table_id="live", shoe_number=1, kind="live", decks=8, production=False)
    rid = app.start_round(table_id="live", round_number=1, variant=V, shoe_id=sid, production=False)
    app.place_bet(rid, player="A", amount="10")
    app.close_betting(rid)
    app.deal_card(rid, "10H")  # the live deal has begun: no hand is open yet
    before = app.round_events(rid)
    with pytest.raises(OutOfTurn):
        app.decide(rid, player="A", action="stand")
    assert app.round_events(rid) == before


def test_bad_input_repeated_request_id_is_refused_and_records_once():
    """A request id names one input of the player's part: a second command bringing it is
    refused (request-id-reused), never dropped in silence; another player may use it."""
    kit = shared("AB", ["10H", "7D"], up="9C", hole="8S", draws=["2C"])
    kit.app.decide(kit.rid, player="A", action="hit", request_id="r-1")
    before = kit.events()
    with pytest.raises(RequestIdReused):
        kit.app.decide(kit.rid, player="A", action="hit", request_id="r-1")
    assert kit.events() == before
    assert isinstance(kit.app.boundless.participation(kit.rid, "A"), Participation)
    assert parse_cards(kit.hand("A")["cards"])[-1].code == "2C"


def test_bad_input_a_bet_behind_does_not_exist_in_boundless():
    kit = Kit(V, ["10H"], players=["A"])
    err = kit.refused(
        IllegalAction, lambda: kit.app.place_behind(kit.rid, player="A", seat=1, amount="10")
    )
    assert err.rule == "DLX-5"


# ------------------------------------------------------------------------------- FUNDS-2
def test_funds_2_split_without_balance_on_a_total_over_11_stands():
    kit = shared("A", ["9H", "9D"], up="9C", hole="8S", A=15)
    new = kit.decide("A", "split")
    conv = one(new, "DecisionConverted")
    assert (conv["requested"], conv["applied"], conv["needed"], conv["rule"]) == (
        "split", "stand", "10.00", "FUNDS-2"
    )  # fmt: skip
    assert settlement(new, "A:main")[0] == "win"  # 18 against 17
