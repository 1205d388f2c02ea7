"""The dispute timeline settles the three classic complaints, each reproduced on a test shoe.

* "I pressed stand and it hit": the player's DecisionMade says stand, with its actor and the
  options open, and it led to a HandStood and no card; a hit on the other box led to a card.
* "I was disconnected and the system played my hand": PlayerDisconnected, then AutoActed under
  AUTO-1 with the card each hit led to, and the AUTO-1 stand.
* "My double became a hit" (deluxe FUNDS-1): DecisionMade double with the balance seen,
  DecisionConverted under FUNDS-1, and the card the hit took.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from roundkit import Kit, stack

from domain.errors import RoundNotFound, UnknownPlayer
from projections.dispute import Timeline, TimelineEntry, format_timeline, timeline


def only(t: Timeline, event: str, **where: object) -> TimelineEntry:
    found = t.find(event, **where)
    assert len(found) == 1, f"expected one {event} {where}, got {[e.detail for e in found]}"
    return found[0]


def test_i_pressed_stand_and_it_hit() -> None:
    # box 1: 10+6 = 16 (stands), box 2: 10+2 = 12 (hits a 5), dealer 9 + 8 = 17
    cards = stack("multihand", [["10H", "6C"], ["10S", "2H"]], up="9D", hole="8S", draws=["5D"])
    kit = Kit("multihand", cards, players={"alice": "100"})
    kit.bet("alice", 10, spot=1)
    kit.bet("alice", 10, spot=2)
    kit.close()
    kit.decide("alice", "stand", hand="1")
    kit.decide("alice", "hit", hand="2")
    kit.decide("alice", "stand", hand="2")
    assert kit.phase == "settled"

    t = timeline(kit.app, kit.rid, "alice")
    stand = only(t, "DecisionMade", hand="1")
    assert stand.actor == {"kind": "player", "id": "alice"}
    assert stand.kind == "input"
    assert stand.action == "stand"
    assert stand.options == ["hit", "stand", "double"]  # hit was open; stand was taken
    assert stand.balance_seen == Decimal("80.00")  # after both stakes
    assert stand.balance_after == Decimal("80.00")  # a stand moves no money
    assert stand.cards_led_to == []  # no card followed the stand on box 1
    stood = only(t, "HandStood", hand="1")
    assert (stood.caused_by, stood.detail, stood.rule) == (
        stand.seq,
        "hand 1 stands (stand) at 16",
        "PHASE-4",
    )
    assert stood.actor["kind"] == "system"
    assert any("HandStood" in x for x in stand.led_to)
    assert [e.card for e in t.find("CardToHand", hand="1")] == ["10H", "6C"]  # the deal only
    assert all(e.seq < stand.seq for e in t.find("CardToHand", hand="1"))

    # the contrast: a hit is recorded as a hit and leads to a card
    hit = only(t, "DecisionMade", hand="2", action="hit")
    assert hit.options == ["hit", "stand", "double"]
    assert hit.cards_led_to == ["5D"]
    card = only(t, "CardToHand", hand="2", card="5D")
    assert (card.rule, card.total, card.caused_by) == ("PHASE-4", 17, hit.seq)
    assert card.shoe_position == 6

    text = format_timeline(t)
    assert "alice chose stand on hand 1; open: hit, stand, double" in text
    assert "led to card(s) 5D" in text
    settled = t.find("WagerSettled")
    assert {e.wager_id: e.result for e in settled} == {
        "1:main": "lose",
        "2:main": "push",
    }


def test_i_was_disconnected_and_the_system_played_my_hand() -> None:
    # 5+4 = 9 against a ten up (no BJ: 7 in the hole); AUTO-1 hits to 11, to 19, then stands
    cards = stack("multihand", [["5H", "4D"]], up="10S", hole="7C", draws=["2S", "8D"])
    kit = Kit("multihand", cards, players={"bob": "50"})
    kit.bet("bob", 10, spot=1)
    kit.close()
    kit.disconnect("bob")
    assert kit.phase == "settled"

    t = timeline(kit.app, kit.rid, "bob")
    gone = only(t, "PlayerDisconnected")
    assert gone.actor == {"kind": "system", "id": "roundaudit"}
    assert gone.rule == "DISC-1"
    assert t.find("DecisionMade") == []  # bob decided nothing
    auto = t.find("AutoActed")
    assert [(a.action, a.total, a.rule, a.actor["kind"]) for a in auto] == [
        ("hit", 9, "AUTO-1", "system"),
        ("hit", 11, "AUTO-1", "system"),
        ("stand", 19, "AUTO-1", "system"),
    ]
    assert [a.cards_led_to for a in auto] == [["2S"], ["8D"], []]
    assert all(a.caused_by == gone.seq for a in auto)  # all in answer to the disconnection
    assert [(c.card, c.rule) for c in t.find("CardToHand")][2:] == [
        ("2S", "AUTO-1"),
        ("8D", "AUTO-1"),
    ]
    stood = only(t, "HandStood")
    assert (stood.rule, stood.total, stood.detail) == ("AUTO-1", 19, "hand 1 stands (auto) at 19")
    win = only(t, "WagerSettled")
    assert win.balance_after == Decimal("60.00")  # 50 - 10 + 20
    text = format_timeline(t)
    assert "bob disconnected" in text
    assert "rule AUTO-1" in text


def test_my_double_became_a_hit_deluxe_funds_1() -> None:
    # 6+5 = 11 against a 6; 15 deposited, 10 staked: 5 left, the double needs 10 (FUNDS-1)
    cards = stack("deluxe", [["6C", "5S"]], up="6D", hole="10H", draws=["9H"], dealer_draws=["7C"])
    kit = Kit("deluxe", cards, players={"carol": "15"})
    kit.bet("carol", 10, spot=1)
    kit.close()
    kit.decide("carol", "double")
    kit.decide("carol", "stand")
    assert kit.phase == "settled"

    t = timeline(kit.app, kit.rid, "carol")
    bet = only(t, "BetPlaced")
    assert (bet.balance_seen, bet.balance_after) == (Decimal("15.00"), Decimal("5.00"))
    double = only(t, "DecisionMade", action="double")
    assert double.actor == {"kind": "player", "id": "carol"}
    assert "double" in (double.options or [])
    assert double.balance_seen == Decimal("5.00")
    assert double.amount == Decimal("10.00")  # what the double needed
    assert double.balance_after == Decimal("5.00")  # nothing was debited
    converted = only(t, "DecisionConverted")
    assert converted.rule == "FUNDS-1"
    assert converted.caused_by == double.seq
    assert converted.action == "hit"
    assert (converted.balance_seen, converted.amount) == (Decimal("5.00"), Decimal("10.00"))
    assert converted.detail == "double on hand 1 became hit: needed 10.00, balance 5.00"
    assert double.cards_led_to == ["9H"]
    card = only(t, "CardToHand", card="9H")
    assert (card.rule, card.total) == ("FUNDS-1", 20)
    assert t.find("WagerAdded") == []  # no double stake
    assert t.find("HandDoubled") == []
    win = only(t, "WagerSettled")
    assert (win.result, win.amount) == ("win", Decimal("20.00"))
    text = format_timeline(t)
    assert "balance seen 5.00, after 5.00" in text
    assert "rule FUNDS-1" in text


def test_bets_behind_see_the_seat_hand_and_their_own_money() -> None:
    cards = stack("deluxe", [["6C", "5S"]], up="6D", hole="10H", draws=["9H"], dealer_draws=["7C"])
    kit = Kit("deluxe", cards, players={"seat": "100", "back": "100"})
    kit.bet("seat", 10, spot=1)
    kit.run(
        lambda: kit.app.place_behind(kit.rid, player="back", seat=1, amount="5", follow_double=True)
    )
    kit.close()
    kit.decide("seat", "double")
    t = timeline(kit.app, kit.rid, "back")
    double = only(t, "DecisionMade", action="double")
    assert double.scope == "hand"  # the seat player's decision, on the hand back rides on
    assert double.balance_seen == Decimal("95.00")  # back's balance, as the double saw it
    followed = only(t, "BehindFollowed")
    assert followed.scope == "player"
    assert followed.rule == "DLX-7"
    added = only(t, "WagerAdded")
    assert (added.balance_seen, added.balance_after) == (Decimal("95.00"), Decimal("90.00"))
    assert json.loads(json.dumps(t.as_json()))["player"] == "back"


def test_unknown_round_or_player_is_refused() -> None:
    cards = stack("multihand", [["10H", "6C"]], up="9D", hole="8S")
    kit = Kit("multihand", cards, players={"alice": "100"})
    kit.bet("alice", 10, spot=1)
    with pytest.raises(UnknownPlayer):
        timeline(kit.app, kit.rid, "mallory")
    with pytest.raises(RoundNotFound):
        timeline(kit.app, "not-a-uuid", "alice")
    with pytest.raises(RoundNotFound):
        timeline(kit.app, "00000000-0000-0000-0000-000000000000", "alice")


def test_boundless_merges_the_shared_hand_with_the_players_own_events() -> None:
    # a shared 6+5 = 11; p1 has 5 left after a 10 bet, so the double is a hit (FUNDS-2)
    deck = stack("boundless", [["6H", "5C"]], up="9S", hole="8D", draws=["9C"])
    kit = Kit("boundless", deck, players={"p1": "15", "p2": "100"})
    kit.bet("p1", 10)
    kit.bet("p2", 10)
    kit.close()
    kit.decide("p1", "double")
    kit.decide("p2", "stand")
    kit.decide("p1", "stand")
    assert kit.phase == "settled"

    t = timeline(kit.app, kit.rid, "p1")
    assert [e.seq for e in t.entries] == sorted(e.seq for e in t.entries)
    assert t.entries[0].event == "Started"
    assert t.find("DecisionMade", player="p2") == []  # another player's decisions stay out
    double = only(t, "DecisionMade", action="double")
    assert (double.balance_seen, double.amount) == (Decimal("5.00"), Decimal("10.00"))
    converted = only(t, "DecisionConverted")
    assert (converted.rule, converted.action, converted.caused_by) == ("FUNDS-2", "hit", double.seq)
    assert double.cards_led_to == ["9C"]
    opened = only(t, "HandOpened")
    assert (opened.rule, opened.detail) == ("BDL-1", "hand p1 of p1 on p1: 6H 5C = 11")
    assert [e.card for e in t.find("CardToDealer")] == ["9S", None]  # the hole card face down
    win = only(t, "WagerSettled")
    assert (win.result, win.balance_after) == ("win", Decimal("25.00"))
    with pytest.raises(UnknownPlayer):
        timeline(kit.app, kit.rid, "p3")
