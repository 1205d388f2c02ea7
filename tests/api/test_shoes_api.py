"""Shoes over HTTP, and a live-dealt round: burn (SHOE-2), card reader input, card accounting
(SHOE-3), cut card (SHOE-1), retirement, RNG commitments."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from apikit import Api, Json

from domain.application import RoundAudit
from domain.shoe import Shoe
from domain.shuffle import matches_commitment


def open_shoe(
    api: Api, table: str, number: int = 1, *, production: bool = True, **fields: Any
) -> Json:
    """A shoe of deluxe table ``table`` (opened when new: production unless told)."""
    api.table(table, "deluxe", production=production)
    body = {"table_id": table, "shoe_number": number, "kind": "live", "decks": 8, **fields}
    return api.ok("POST", "/shoes", 201, json=body)


def live_round(api: Api, table: str, shoe_id: str, player: str = "carol") -> str:
    api.seat(table, player)
    view = api.ok(
        "POST",
        "/rounds",
        201,
        json={"table_id": table, "round_number": 1, "variant": "deluxe", "shoe_id": shoe_id},
    )
    rid: str = view["round_id"]
    api.bet(rid, player, "10.00", 1)
    assert api.close(rid)["card_needed"] == {"for": "1"}
    return rid


def card(api: Api, rid: str, code: str) -> Json:
    return api.ok("POST", f"/rounds/{rid}/cards", json={"card": code})


def state(api: Api, rid: str, shoe_id: str) -> Json:
    return {
        "events": api.events(rid),
        "round": api.ok("GET", f"/rounds/{rid}"),
        "shoe": api.ok("GET", f"/shoes/{shoe_id}"),
        "carol": api.ok("GET", "/wallets/carol"),
    }


def test_a_live_deluxe_round_from_burn_to_retirement(api: Api) -> None:
    api.wallet("carol", deposit="50.00", account_type="real")
    shoe = open_shoe(api, "LIVE1", burn_procedure=True)
    sid = shoe["shoe_id"]
    assert (shoe["kind"], shoe["position"], shoe["retired"]) == ("live", 0, False)

    burned = api.ok("POST", f"/shoes/{sid}/burn", json={"card": "3H", "cards": ["2C", "4D", "5S"]})
    assert (burned["shown"], burned["burned"]) == ("3H", ["2C", "4D", "5S"])
    assert burned["shoe"]["position"] == 4

    rid = live_round(api, "LIVE1", sid)
    card(api, rid, "9H")  # seat 1
    card(api, rid, "7S")  # dealer upcard
    card(api, rid, "2D")  # seat 1: 11
    view = card(api, rid, "10C")  # dealer hole: 17
    assert view["phase"] == "playing"
    assert view["dealer"]["cards"] == ["7S"]
    assert view["hands"][0]["options"] == ["hit", "stand", "double", "surrender"]
    view = api.decide(rid, "carol", "double")
    assert view["card_needed"] == {"for": "1"}
    view = card(api, rid, "10H")  # 21; the dealer reveals 17 and stands (DEALER-1)
    assert view["phase"] == "settled"
    assert view["dealer"] == {"cards": ["7S", "10C"], "total": 17}
    # main 10 and double 10 win 1:1: 50 - 20 + 40 = 70.00
    assert api.balance("carol") == "70.00"

    shoe = api.ok("GET", f"/shoes/{sid}")
    assert [(d["card"], d["purpose"]) for d in shoe["drawn"]][:4] == [
        ("3H", "burn-shown"),
        ("2C", "burn"),
        ("4D", "burn"),
        ("5S", "burn"),
    ]
    assert [d["card"] for d in shoe["drawn"][4:]] == ["9H", "7S", "2D", "10C", "10H"]

    shoe = api.ok("POST", f"/shoes/{sid}/cut-card", json={"round_id": rid})
    assert shoe["last_round"] is True
    shoe = api.ok("POST", f"/shoes/{sid}/retire")
    assert shoe["retired"] is True
    body = api.problem(
        "POST",
        "/rounds",
        409,
        "wrong-order",
        json={"table_id": "LIVE1", "round_number": 2, "variant": "deluxe", "shoe_id": sid},
    )
    assert "retired" in body["detail"]


def test_a_malformed_card_code_is_refused_and_records_nothing(api: Api) -> None:
    api.wallet("carol", deposit="50.00", account_type="real")
    sid = open_shoe(api, "LIVE2")["shoe_id"]
    rid = live_round(api, "LIVE2", sid)
    card(api, rid, "9H")
    for bad in ("ZZ", "9X", "9", "9h"):
        before = state(api, rid, sid)
        body = api.problem("POST", f"/rounds/{rid}/cards", 422, "invalid-value", json={"card": bad})
        assert "CARD-1" in body["detail"]
        assert state(api, rid, sid) == before
    assert card(api, rid, "7S")["dealer"]["cards"] == ["7S"]


def test_a_card_beyond_the_decks_is_refused_by_card_accounting(api: Api) -> None:
    api.wallet("carol", deposit="50.00", account_type="real")
    sid = open_shoe(api, "LIVE3", decks=1)["shoe_id"]
    rid = live_round(api, "LIVE3", sid)
    card(api, rid, "AS")
    before = state(api, rid, sid)
    body = api.problem("POST", f"/rounds/{rid}/cards", 409, "card-accounting", json={"card": "AS"})
    assert "AS" in body["detail"]
    assert state(api, rid, sid) == before


def test_a_card_when_the_round_needs_none_is_refused(api: Api) -> None:
    api.wallet("carol", deposit="50.00", account_type="real")
    sid = open_shoe(api, "LIVE4")["shoe_id"]
    api.seat("LIVE4", "carol")
    view = api.ok(
        "POST",
        "/rounds",
        201,
        json={"table_id": "LIVE4", "round_number": 1, "variant": "deluxe", "shoe_id": sid},
    )
    rid = view["round_id"]
    before = state(api, rid, sid)
    body = api.problem("POST", f"/rounds/{rid}/cards", 409, "wrong-order", json={"card": "AS"})
    assert "needs no card" in body["detail"]
    assert state(api, rid, sid) == before


def test_a_test_shoe_on_a_production_table_is_refused(api: Api) -> None:
    api.table("PROD", production=True)
    body = api.problem(
        "POST",
        "/shoes",
        409,
        "test-shoe-refused",
        json={"table_id": "PROD", "shoe_number": 1, "kind": "test", "decks": 1, "order": ["AS"]},
    )
    assert "production" in body["detail"]
    api.problem("GET", f"/shoes/{Shoe.create_id('PROD', 1)}", 404, "shoe-not-found")
    # the same shoe opens on a test table (production comes from the table, never the body)
    api.table("TEST", production=False)
    shoe = api.ok(
        "POST",
        "/shoes",
        201,
        json={"table_id": "TEST", "shoe_number": 1, "kind": "test", "decks": 1, "order": ["AS"]},
    )
    assert shoe["test"] is True
    body = api.problem(
        "POST",
        "/shoes",
        422,
        "validation-error",
        json={
            "table_id": "PROD",
            "shoe_number": 2,
            "kind": "live",
            "decks": 8,
            "production": False,
        },
    )
    assert "production" in body["detail"]  # a body cannot say what the table is


def test_an_rng_shoe_commits_to_its_seed_and_reveals_it_on_retirement(api: Api) -> None:
    shoe = open_shoe(api, "RNG1", kind="rng", decks=6)
    assert shoe["revealed_seed"] is None
    assert len(shoe["commitment"]) == 64
    body = api.problem("POST", f"/shoes/{shoe['shoe_id']}/cut-card", 409, "wrong-order")
    assert body["rule"] == "SHOE-1"
    retired = api.ok("POST", f"/shoes/{shoe['shoe_id']}/retire")
    assert retired["retired"] is True
    assert matches_commitment(shoe["commitment"], bytes.fromhex(retired["revealed_seed"]))
    body = api.problem("POST", f"/shoes/{shoe['shoe_id']}/retire", 409, "shoe-retired")
    assert "retired" in body["detail"]


def test_shoe_refusals(api: Api) -> None:
    open_shoe(api, "S1", burn_procedure=True)
    body = api.problem(
        "POST",
        "/shoes",
        409,
        "already-exists",
        json={"table_id": "S1", "shoe_number": 1, "kind": "live", "decks": 8},
    )
    assert "shoe 1 of table 'S1'" in body["detail"]
    api.problem("GET", "/shoes/not-a-uuid", 422, "invalid-id")
    api.problem("GET", "/shoes/00000000-0000-0000-0000-000000000000", 404, "shoe-not-found")
    api.problem(
        "POST",
        "/shoes",
        422,
        "validation-error",
        json={"table_id": "S2", "shoe_number": 1, "kind": "magic", "decks": 8},
    )
    api.table("S2")
    api.problem(
        "POST",
        "/shoes",
        422,
        "validation-error",
        json={"table_id": "S2", "shoe_number": 1, "kind": "live", "decks": 0},
    )


def test_a_burn_with_the_wrong_count_is_refused(api: Api) -> None:
    sid = open_shoe(api, "B1", burn_procedure=True)["shoe_id"]
    before = api.ok("GET", f"/shoes/{sid}")
    body = api.problem(
        "POST", f"/shoes/{sid}/burn", 409, "wrong-burn-count", json={"card": "3H", "cards": ["2C"]}
    )
    assert body["rule"] == "SHOE-2"
    assert "3H burns 3" in body["detail"]
    assert api.ok("GET", f"/shoes/{sid}") == before


def test_burn_cards_cut_card_and_retirement_record_request_id_and_client_time(
    api: Api, audit: RoundAudit
) -> None:
    """Issue 14: a shoe's inputs sent over HTTP record the body's request id and client time
    (a card from the reader records its own in the shoe's CardDrawn too)."""
    at = "2026-12-01T10:00:00Z"
    api.wallet("carol", deposit="50.00", account_type="real")
    sid = open_shoe(api, "LIVE7", burn_procedure=True)["shoe_id"]
    api.ok(
        "POST",
        f"/shoes/{sid}/burn",
        json={"card": "2H", "cards": ["2C", "4D"], "request_id": "burn-1", "client_time": at},
    )
    rid = live_round(api, "LIVE7", sid)
    api.ok(
        "POST", f"/rounds/{rid}/cards", json={"card": "9H", "request_id": "c-1", "client_time": at}
    )
    api.ok(
        "POST",
        f"/shoes/{sid}/cut-card",
        json={"round_id": rid, "request_id": "cut-1", "client_time": at},
    )
    api.ok("POST", f"/rounds/{rid}/cancel", json={"reason": "table-closed"})
    api.ok("POST", f"/shoes/{sid}/retire", json={"request_id": "retire-1", "client_time": at})
    got = [
        (type(e).__name__, e.request_id, e.client_time is not None)
        for e in audit.events.get(UUID(sid))
        if hasattr(e, "request_id")
    ]
    assert ("BurnCardShown", "burn-1", True) in got
    assert got.count(("CardBurned", "burn-1", True)) == 2
    assert ("CardDrawn", "c-1", True) in got
    assert ("CutCardCameOut", "cut-1", True) in got
    assert ("Retired", "retire-1", True) in got
