"""Rounds over HTTP: whole rounds with hand-worked money, refusals that record nothing,
idempotency, timers and supervisor actions.

Rounds are dealt from a test shoe (``test_order``) on a non-production table, so every card is
known. Deal order (RULES.md "Round phases"): first card to each box, lowest first, then the
dealer's first card; second card to each box, then the dealer's second. lucky7: the dealer's
first card is the covered one, the second the upcard; multihand: first card up, hole second.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import pytest
from apikit import Api, Json

from domain.round import Round
from domain.shoe import Shoe


def wagers(view: Json) -> dict[str, tuple[str, str, str | None]]:
    return {w["wager_id"]: (w["stake"], w["payout"], w["result"]) for w in view["wagers"]}


def types(events: list[Json]) -> list[str]:
    return [e["type"] for e in events]


# ------------------------------------------------------------------------- whole rounds
def test_lucky7_round_settles_with_exact_money(api: Api) -> None:
    api.wallet("alice", deposit="100.00")
    order = [
        "7H",  # box 1, first card: a 7 (L7-2)
        "10D",  # box 2
        "10S",  # dealer, covered
        "4S",  # box 1: 7+4 = 11
        "9C",  # box 2: 19
        "6H",  # dealer upcard: 6 (no insurance, no peek)
        "7C",  # box 1 doubles: 18 (first three cards 7,4,7: one leading 7)
        "8D",  # dealer 10+6 = 16 draws 8: 24, bust
    ]
    rid = api.start("L7", "lucky7", order)
    api.bet(rid, "alice", "10.00", 1)
    api.bet(rid, "alice", "1.00", 1, kind="lucky7")
    api.bet(rid, "alice", "20", 2)
    assert api.balance("alice") == "69.00"
    view = api.close(rid)
    assert view["phase"] == "playing"
    assert view["dealer"] == {"cards": ["6H"], "total": None}  # the covered card is hidden
    assert view["hands"][0]["options"] == ["hit", "stand", "double"]

    api.decide(rid, "alice", "double")
    assert api.balance("alice") == "59.00"
    view = api.decide(rid, "alice", "stand")  # box 2 stands on 19

    assert view["phase"] == "settled"
    assert view["dealer"] == {"cards": ["10S", "6H", "8D"], "total": 24}
    assert [(h["hand"], h["cards"], h["total"]) for h in view["hands"]] == [
        ("1", ["7H", "4S", "7C"], 18),
        ("2", ["10D", "9C"], 19),
    ]
    # Dealer busts: box 1 main and double win 1:1 (OUT-2), box 2 wins 1:1, Lucky 7 with one 7
    # pays 3:1 (D14): stake back plus 3.00.
    assert wagers(view) == {
        "1:main": ("10.00", "20.00", "win"),
        "1:double": ("10.00", "20.00", "win"),
        "2:main": ("20.00", "40.00", "win"),
        "1:lucky7:alice": ("1.00", "4.00", "win"),
    }
    # 100 - (10 + 1 + 20 + 10) + (20 + 20 + 40 + 4) = 143.00
    wallet = api.ok("GET", "/wallets/alice")
    assert wallet["balance"] == "143.00"
    stakes = [m["amount"] for m in wallet["movements"] if m["kind"] == "stake"]
    payouts = [m["amount"] for m in wallet["movements"] if m["kind"] == "payout"]
    assert sorted(stakes) == ["1.00", "10.00", "10.00", "20.00"]
    assert sorted(payouts) == ["20.00", "20.00", "4.00", "40.00"]
    assert all(m["round_id"] == rid for m in wallet["movements"] if m["kind"] != "deposit")

    events = api.events(rid)
    assert types(events)[0] == "Round.Started"
    assert types(events)[-1] == "Round.RoundSettled"
    assert [e["version"] for e in events] == list(range(1, len(events) + 1))
    settled = [e["payload"] for e in events if e["type"] == "Round.WagerSettled"]
    l7 = next(p for p in settled if p["kind"] == "lucky7")
    assert (l7["ratio"], l7["rule"]) == ("3:1", "L7-2")
    assert {e["kind"] for e in events} == {"input", "consequence"}
    # D3: the round's own shoe is retired once the round is over
    shoe = api.ok("GET", f"/shoes/{Shoe.create_id('L7', 1)}")
    assert shoe["retired"] is True
    assert shoe["test"] is True
    assert [d["card"] for d in shoe["drawn"]] == order


def test_multihand_round_with_insurance_and_a_blackjack_rounded_down(api: Api) -> None:
    api.wallet("bob", deposit="50.00")
    order = [
        "AS",  # box 1
        "9H",  # box 2
        "AD",  # dealer upcard: ace, so the insurance window opens (INS-1)
        "KH",  # box 1: blackjack
        "2C",  # box 2: 11
        "7S",  # dealer hole: A+7, no blackjack (D5 peek)
        "10S",  # box 2 doubles: 21
    ]
    rid = api.start("MH", "multihand", order)
    api.bet(rid, "bob", "5.05", 1)
    api.bet(rid, "bob", "10.00", 2)
    view = api.close(rid)
    assert view["phase"] == "insurance"
    assert {h["hand"]: h["options"] for h in view["hands"]} == {
        "1": ["even_money", "insurance", "no_insurance"],  # D16
        "2": ["insurance", "no_insurance"],
    }
    api.decide(rid, "bob", "no_insurance", hand="1")
    view = api.decide(rid, "bob", "insurance", hand="2", amount="5.00")  # half of 10.00
    assert view["phase"] == "playing"
    assert api.balance("bob") == "29.95"  # 50 - 5.05 - 10 - 5
    view = api.decide(rid, "bob", "double")

    assert view["phase"] == "settled"
    assert view["dealer"] == {"cards": ["AD", "7S"], "total": 18}  # soft 18 stands
    # BJ pays 3:2 on 5.05 = 7.575, rounded down to 7.57 (MONEY-1); 21 beats 18 on the main and
    # the double; the insurance loses (no dealer BJ).
    assert wagers(view) == {
        "1:main": ("5.05", "12.62", "blackjack"),
        "2:main": ("10.00", "20.00", "win"),
        "2:double": ("10.00", "20.00", "win"),
        "2:insurance": ("5.00", "0.00", "lose"),
    }
    # 50 - 5.05 - 10 - 5 - 10 + 12.62 + 20 + 20 = 72.57
    assert api.balance("bob") == "72.57"
    bj = next(
        e["payload"]
        for e in api.events(rid)
        if e["type"] == "Round.WagerSettled" and e["payload"]["wager_id"] == "1:main"
    )
    assert (bj["rule"], bj["ratio"], bj["rounding"]) == ("OUT-1", "3:2", "0.005")


# ----------------------------------------------------------------- refusals record nothing
NINE_UP = ["5H", "10C", "9S", "3C", "8C", "7D", "2D", "9C", "10H", "10D"]
"""multihand, two boxes: box 1 5+3 = 8, box 2 10+8 = 18, dealer 9 up (7 in the hole)."""


def two_player_round(api: Api, table: str = "T9") -> str:
    api.wallet("alice", deposit="100.00")
    api.wallet("bob", deposit="100.00")
    rid = api.start(table, "multihand", NINE_UP)
    api.bet(rid, "alice", "10.00", 1)
    api.bet(rid, "bob", "10.00", 2)
    return rid


def refused(
    api: Api,
    rid: str | None,
    method: str,
    url: str,
    status: int,
    code: str,
    players: tuple[str, ...] = ("alice", "bob"),
    **kw: Any,
) -> Json:
    """Send a command that must be refused; check the store is exactly as before."""
    before = api.snapshot(rid, *players)
    body = api.problem(method, url, status, code, **kw)
    assert api.snapshot(rid, *players) == before
    return body


def test_decision_out_of_turn_is_a_409(api: Api) -> None:
    rid = two_player_round(api)
    api.close(rid)
    body = refused(
        api,
        rid,
        "POST",
        f"/rounds/{rid}/decisions",
        409,
        "out-of-turn",
        json={"player": "bob", "action": "stand"},
    )
    assert "not hand 2's turn" in body["detail"]
    assert "hand 1 of alice is due" in body["detail"]


def test_double_on_three_cards_is_a_409_citing_dbl_1(api: Api) -> None:
    rid = two_player_round(api)
    api.close(rid)
    view = api.decide(rid, "alice", "hit")
    assert view["hands"][0]["cards"] == ["5H", "3C", "2D"]
    body = refused(
        api,
        rid,
        "POST",
        f"/rounds/{rid}/decisions",
        409,
        "illegal-action",
        json={"player": "alice", "action": "double"},
    )
    assert body["rule"] == "DBL-1"
    assert "double is not allowed on hand 1" in body["detail"]
    assert "open: hit, stand" in body["detail"]


def test_insurance_without_an_ace_up_is_a_409_citing_ins_1(api: Api) -> None:
    rid = two_player_round(api)
    api.close(rid)
    body = refused(
        api,
        rid,
        "POST",
        f"/rounds/{rid}/decisions",
        409,
        "illegal-action",
        json={"player": "alice", "action": "insurance", "amount": "5.00"},
    )
    assert body["rule"] == "INS-1"
    assert "insurance window" in body["detail"]


def test_bet_after_betting_closed_is_a_409(api: Api) -> None:
    rid = two_player_round(api)
    api.close(rid)
    body = refused(
        api,
        rid,
        "POST",
        f"/rounds/{rid}/bets",
        409,
        "betting-closed",
        json={"player": "alice", "amount": "5.00", "spot": 3},
    )
    assert "betting is closed" in body["detail"]


def test_bet_above_the_table_maximum_is_refused(api: Api) -> None:
    rid = two_player_round(api)
    body = refused(
        api,
        rid,
        "POST",
        f"/rounds/{rid}/bets",
        409,
        "bet-limit",
        json={"player": "alice", "amount": "5000.01", "spot": 3},
    )
    assert "5000.01" in body["detail"]
    assert "1.00-5000.00" in body["detail"]


def test_bet_beyond_the_balance_is_a_409(api: Api) -> None:
    rid = two_player_round(api)
    body = refused(
        api,
        rid,
        "POST",
        f"/rounds/{rid}/bets",
        409,
        "insufficient-funds",
        json={"player": "alice", "amount": "90.01", "spot": 3},
    )
    assert "90.01" in body["detail"]
    assert "90.00" in body["detail"]


@pytest.mark.parametrize("amount", [10.5, 0.01])
def test_float_money_in_a_bet_is_a_422_naming_money_1(api: Api, amount: float) -> None:
    rid = two_player_round(api)
    body = refused(
        api,
        rid,
        "POST",
        f"/rounds/{rid}/bets",
        422,
        "validation-error",
        json={"player": "alice", "amount": amount, "spot": 3},
    )
    assert body["rule"] == "MONEY-1"
    assert body["errors"][0]["loc"] == ["body", "amount"]
    assert "MONEY-1" in body["detail"]


def test_unknown_round_is_a_404(api: Api) -> None:
    api.wallet("alice", deposit="10.00")
    api.wallet("bob")
    missing = str(uuid4())
    body = api.problem("GET", f"/rounds/{missing}", 404, "round-not-found")
    assert missing in body["detail"]
    api.problem("GET", f"/rounds/{missing}/events", 404, "round-not-found")
    refused(
        api,
        None,
        "POST",
        f"/rounds/{missing}/bets",
        404,
        "round-not-found",
        json={"player": "alice", "amount": "5.00", "spot": 1},
    )


def test_a_malformed_round_id_is_a_422_naming_it(api: Api) -> None:
    body = api.problem("GET", "/rounds/not-a-uuid", 422, "invalid-id")
    assert body["field"] == "round_id"
    api.problem("GET", "/rounds/not-a-uuid/events", 422, "invalid-id")
    api.problem("POST", "/rounds/123/close-betting", 422, "invalid-id")
    # a shoe's id is not a round's
    rid = two_player_round(api)
    shoe_id = Shoe.create_id("T9", 1)
    api.problem("GET", f"/rounds/{shoe_id}", 404, "round-not-found")
    assert api.ok("GET", f"/rounds/{rid}")["round_id"] == rid


def test_a_test_shoe_on_a_production_table_is_refused_and_nothing_is_created(api: Api) -> None:
    api.table("PROD1", "lucky7", production=True)
    body = api.problem(
        "POST",
        "/rounds",
        409,
        "test-shoe-refused",
        json={
            "table_id": "PROD1",
            "round_number": 1,
            "variant": "lucky7",
            "test_order": NINE_UP,
        },  # the table's record says production; the request cannot say otherwise
    )
    assert "production" in body["detail"]
    api.problem("GET", f"/rounds/{Round.create_id('PROD1', 1)}", 404, "round-not-found")
    api.problem("GET", f"/shoes/{Shoe.create_id('PROD1', 1)}", 404, "shoe-not-found")


def test_a_malformed_card_in_a_test_order_is_refused(api: Api) -> None:
    api.table("T1", "multihand")
    body = api.problem(
        "POST",
        "/rounds",
        422,
        "invalid-value",
        json={
            "table_id": "T1",
            "round_number": 1,
            "variant": "multihand",
            "test_order": ["AS", "1X"],
        },
    )
    assert body["field"] == "test_order.1"
    api.problem("GET", f"/rounds/{Round.create_id('T1', 1)}", 404, "round-not-found")


def test_duplicate_round_is_a_409(api: Api) -> None:
    rid = two_player_round(api)
    events = api.events(rid)
    body = api.problem(
        "POST",
        "/rounds",
        409,
        "already-exists",
        json={"table_id": "T9", "round_number": 1, "variant": "multihand"},
    )
    assert "round 1 of table 'T9'" in body["detail"]
    assert api.events(rid) == events


def test_unknown_variant_is_refused(api: Api) -> None:
    body = api.problem(
        "POST",
        "/rounds",
        422,
        "validation-error",
        json={"table_id": "T1", "round_number": 1, "variant": "spanish21"},
    )
    assert "body.variant" in body["detail"]  # the published keys are an enum of the schema


def test_a_card_from_the_reader_on_a_test_shoe_round_is_refused(api: Api) -> None:
    rid = two_player_round(api)
    api.close(rid)
    api.decide(rid, "alice", "hit")  # the test shoe deals it; the round now waits for alice
    body = refused(
        api, rid, "POST", f"/rounds/{rid}/cards", 409, "wrong-order", json={"card": "AS"}
    )
    assert "needs no card" in body["detail"]


# --------------------------------------------------------------------------- idempotency
def test_the_same_request_id_twice_records_one_bet(api: Api) -> None:
    rid = two_player_round(api)
    bet = {"player": "alice", "amount": "7.00", "spot": 3, "request_id": "req-1"}
    first = api.ok("POST", f"/rounds/{rid}/bets", json=bet)
    events = api.events(rid)
    second = api.ok("POST", f"/rounds/{rid}/bets", json=bet)
    assert second == first
    assert api.events(rid) == events
    placed = [e for e in events if e["type"] == "Round.BetPlaced"]
    assert [e["payload"]["request_id"] for e in placed] == [None, None, "req-1"]
    assert api.balance("alice") == "83.00"  # 100 - 10 - 7, once


def test_the_idempotency_key_header_is_a_request_id(api: Api) -> None:
    rid = two_player_round(api)
    bet = {"player": "bob", "amount": "3.00", "spot": 4}
    for _ in range(3):
        api.ok("POST", f"/rounds/{rid}/bets", json=bet, headers={"Idempotency-Key": "k-9"})
    placed = [e for e in api.events(rid) if e["type"] == "Round.BetPlaced"]
    assert [e["payload"]["request_id"] for e in placed] == [None, None, "k-9"]
    assert api.balance("bob") == "87.00"
    # the same key in the body is another request (another body): refused, nothing recorded
    api.problem(
        "POST",
        f"/rounds/{rid}/bets",
        422,
        "idempotency-key-reused",
        json={**bet, "request_id": "k-9"},
    )
    assert api.balance("bob") == "87.00"
    # ... and on close-betting and decisions
    for _ in range(2):
        api.ok("POST", f"/rounds/{rid}/close-betting", headers={"Idempotency-Key": "close-1"})
        api.ok(
            "POST",
            f"/rounds/{rid}/decisions",
            json={"player": "alice", "action": "hit"},
            headers={"Idempotency-Key": "hit-1"},
        )
    hits = [e for e in api.events(rid) if e["type"] == "Round.DecisionMade"]
    assert len(hits) == 1


def test_the_body_request_id_is_recorded_and_the_header_is_the_key(api: Api) -> None:
    rid = two_player_round(api)
    bet = {"player": "alice", "amount": "5.00", "spot": 3, "request_id": "a"}
    first = api.request("POST", f"/rounds/{rid}/bets", json=bet, headers={"Idempotency-Key": "b"})
    again = api.request("POST", f"/rounds/{rid}/bets", json=bet, headers={"Idempotency-Key": "b"})
    assert (first.status_code, again.content) == (200, first.content)
    placed = [e for e in api.events(rid) if e["type"] == "Round.BetPlaced"]
    assert placed[-1]["payload"]["request_id"] == "a"


# --------------------------------------------------------------- timers and supervisors
def test_a_timeout_lets_the_system_play_the_hand(api: Api) -> None:
    rid = two_player_round(api)
    api.close(rid)
    # AUTO-1: box 1 (8) hits to 10 (2D), hits to 19 (9C), then stands
    view = api.ok("POST", f"/rounds/{rid}/timeouts", json={"player": "alice"})
    hand = view["hands"][0]
    assert (hand["cards"], hand["finished"], hand["finish_reason"]) == (
        ["5H", "3C", "2D", "9C"],
        True,
        "auto",
    )
    auto = [e["payload"] for e in api.events(rid) if e["type"] == "Round.AutoActed"]
    assert [(p["action"], p["rule"]) for p in auto] == [
        ("hit", "AUTO-1"),
        ("hit", "AUTO-1"),
        ("stand", "AUTO-1"),
    ]


def test_a_disconnected_player_is_played_by_the_system(api: Api) -> None:
    rid = two_player_round(api)
    api.close(rid)
    api.ok("POST", f"/rounds/{rid}/disconnections", json={"player": "bob"})  # DISC-1
    view = api.decide(rid, "alice", "stand")
    # bob's 18 stands automatically (AUTO-1); dealer 9+7 = 16 draws 2D: 18. Alice's 8 loses
    # (OUT-3), bob's 18 pushes (OUT-4).
    assert view["phase"] == "settled"
    assert view["dealer"]["cards"] == ["9S", "7D", "2D"]
    assert view["hands"][1]["finish_reason"] == "auto"
    assert wagers(view) == {
        "1:main": ("10.00", "0.00", "lose"),
        "2:main": ("10.00", "10.00", "push"),
    }
    assert api.balance("alice") == "90.00"
    assert api.balance("bob") == "100.00"


def test_closing_the_insurance_window_declines_for_everyone(api: Api) -> None:
    api.wallet("alice", deposit="20.00")
    rid = api.start("INS", "multihand", ["10H", "AC", "7H", "9D", "8S"])
    api.bet(rid, "alice", "10.00", 1)
    assert api.close(rid)["phase"] == "insurance"
    view = api.ok("POST", f"/rounds/{rid}/insurance-window/close")
    # dealer A+9 = soft 20, no BJ: play goes on; alice stands on 17 and loses
    assert view["phase"] == "playing"
    view = api.decide(rid, "alice", "stand")
    assert view["phase"] == "settled"
    assert api.balance("alice") == "10.00"
    refused(
        api,
        rid,
        "POST",
        f"/rounds/{rid}/insurance-window/close",
        409,
        "round-closed",
        players=("alice",),
    )


def test_pause_refuses_commands_until_resumed(api: Api) -> None:
    rid = two_player_round(api)
    who = {"reason": "card-reader-fault", "supervisor": "sup-1"}
    assert api.ok("POST", f"/rounds/{rid}/pause", json=who)["paused"] is True
    body = refused(api, rid, "POST", f"/rounds/{rid}/close-betting", 409, "round-closed")
    assert body["rule"] == "ERR-1"
    assert "paused" in body["detail"]
    assert api.ok("POST", f"/rounds/{rid}/resume", json=who)["paused"] is False
    assert api.close(rid)["phase"] == "playing"


def test_cancel_refunds_every_stake(api: Api) -> None:
    rid = two_player_round(api)
    api.close(rid)
    api.decide(rid, "alice", "hit")
    view = api.ok(
        "POST", f"/rounds/{rid}/cancel", json={"reason": "dealer-error", "supervisor": "sup-1"}
    )
    assert view["phase"] == "cancelled"
    assert {w["result"] for w in view["wagers"]} == {"refund"}
    assert api.balance("alice") == "100.00"
    assert api.balance("bob") == "100.00"
    body = refused(
        api,
        rid,
        "POST",
        f"/rounds/{rid}/cancel",
        409,
        "round-closed",
        json={"reason": "again", "supervisor": "sup-1"},
    )
    assert "cancelled" in body["detail"]


def test_a_supervisor_action_needs_a_reason(api: Api) -> None:
    rid = two_player_round(api)
    body = refused(
        api,
        rid,
        "POST",
        f"/rounds/{rid}/pause",
        422,
        "invalid-value",
        json={"reason": " ", "supervisor": "sup-1"},
    )
    assert body["field"] == "reason"
    assert "ERR-1" in body["detail"]


def test_cancel_after_even_money_reverses_it_and_every_wallet_ends_where_it_started(
    api: Api,
) -> None:
    api.wallet("alice", deposit="100.00")
    # box 1 A+K (BJ) and box 2 9+5 against the dealer's ace (hole 7)
    rid = api.start("EVEN", "multihand", ["AS", "9C", "AD", "KH", "5C", "7S", "5D"])
    api.bet(rid, "alice", "10.00", 1)
    api.bet(rid, "alice", "10.00", 2)
    api.close(rid)
    api.decide(rid, "alice", "even_money", hand="1")  # EVEN-1: 1:1 at once
    api.decide(rid, "alice", "no_insurance", hand="2")
    assert api.balance("alice") == "100.00"  # 100 - 10 - 10 + 20
    view = api.ok(
        "POST", f"/rounds/{rid}/cancel", json={"reason": "shoe-fault", "supervisor": "sup-2"}
    )
    assert view["phase"] == "cancelled"
    wallet = api.ok("GET", "/wallets/alice")
    assert wallet["balance"] == "100.00"
    assert [(m["kind"], m["amount"]) for m in wallet["movements"]] == [
        ("deposit", "100.00"),
        ("stake", "10.00"),
        ("stake", "10.00"),
        ("payout", "20.00"),
        ("reversal", "20.00"),  # ERR-1: a cancelled round pays nothing
        ("refund", "10.00"),
        ("refund", "10.00"),
    ]


SENT_AT = "2026-12-01T10:00:00Z"


def sent(name: str) -> Json:
    return {"request_id": f"req-{name}", "client_time": SENT_AT}


def recorded(api: Api, rid: str, event: str) -> list[tuple[Any, Any]]:
    return [
        (e["payload"]["request_id"], e["payload"]["client_time"])
        for e in api.events(rid)
        if e["type"] == event
    ]


def test_timers_supervisors_and_disconnections_record_request_id_and_client_time(
    api: Api,
) -> None:
    """Issue 14: every input accepts and records a request id and a client time."""
    rid = two_player_round(api)
    who = {"reason": "card-reader-fault", "supervisor": "sup-1"}
    api.ok("POST", f"/rounds/{rid}/pause", json={**who, **sent("pause")})
    api.ok("POST", f"/rounds/{rid}/resume", json={**who, **sent("resume")})
    api.ok("POST", f"/rounds/{rid}/close-betting", json=sent("close"))
    api.ok("POST", f"/rounds/{rid}/disconnections", json={"player": "bob", **sent("gone")})
    api.ok("POST", f"/rounds/{rid}/timeouts", json={"player": "alice", **sent("late")})
    for event, name in (
        ("Round.Paused", "pause"),
        ("Round.Resumed", "resume"),
        ("Round.BettingClosed", "close"),
        ("Round.PlayerDisconnected", "gone"),
        ("Round.DecisionTimedOut", "late"),
    ):
        ((request_id, client_time),) = recorded(api, rid, event)
        assert request_id == f"req-{name}", event
        assert client_time is not None, event
        assert client_time.startswith("2026-12-01T10:00:00"), event


def test_the_insurance_window_close_records_its_request_id_and_client_time(api: Api) -> None:
    api.wallet("alice", deposit="20.00")
    rid = api.start("INS2", "multihand", ["10H", "AC", "7H", "9D", "8S"])
    api.bet(rid, "alice", "10.00", 1)
    api.close(rid)
    api.ok("POST", f"/rounds/{rid}/insurance-window/close", json=sent("window"))
    ((request_id, client_time),) = recorded(api, rid, "Round.InsuranceWindowClosed")
    assert request_id == "req-window"
    assert client_time is not None
    assert client_time.startswith("2026-12-01T10:00:00")


def test_a_cancel_sent_with_only_an_idempotency_key_records_it_as_its_request_id(
    api: Api,
) -> None:
    rid = two_player_round(api)
    api.ok(
        "POST",
        f"/rounds/{rid}/cancel",
        json={"reason": "table-closed", "supervisor": "sup-1"},
        headers={"Idempotency-Key": "cancel-1"},
    )
    assert recorded(api, rid, "Round.CancelRequested") == [("cancel-1", None)]
