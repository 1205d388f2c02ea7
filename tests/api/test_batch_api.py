"""Batch commands of boundless rounds over HTTP (``api/routes/batches.py``):
``POST /rounds/{id}/bets/batch`` and ``POST /rounds/{id}/decisions/batch``.

One boundless round of 30 funded players is played in batches from a test shoe: per-item
results (accepted, or the RFC 9457 problem that refused the item), balances that move only for
accepted items, in-order application, idempotent repeats, the round view after each batch, and
a settled round that verifies by re-execution. Then the whole-request refusals: malformed
bodies, a round that is not boundless, unknown, paused or settled, and a store that keeps
conflicting; each records nothing.

Boundless deal order: the shared hand's first card, the dealer's upcard, the shared hand's
second card, the dealer's second card; then the sequence cards in the order the players' hands
demand them (BDL-2, D9) and the dealer's draws.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

import pytest
from apikit import Api, Json, check_problem
from eventsourcing.persistence import IntegrityError
from fastapi.testclient import TestClient

from api.schemas import MAX_BATCH
from domain.application import RoundAudit
from domain.boundless.service import BoundlessService
from domain.errors import IllegalAction
from replays.verify import StoreVerifier

ORDER = [
    "8H",  # shared hand, first card
    "6C",  # dealer's upcard: a 6, no insurance window
    "8D",  # shared hand: 8-8 = 16, every option open (split, double, hit, stand, surrender)
    "9S",  # dealer's second card: 15, draws
    "5C",  # sequence 0: hits and doubles make 21; each split's first hand 13
    "10D",  # sequence 1: a split's first hand that hits busts; a second hand that waited, 18
    "3S",  # sequence 2: the second hand of a split whose first hand took sequence 1: 11
    "7H",  # dealer: 15 + 7 = 22, bust (BDL-3: the dealer completes whatever the players did)
]
PLAYERS = [f"P{i:02d}" for i in range(1, 31)]
POOR = "P29"  # funded with 5.00 only


def batch(api: Api, rid: str, what: str, items: list[Json], status: int = 200) -> Json:
    """POST a batch of ``what`` (``bets`` or ``decisions``) and return the answer."""
    return api.ok("POST", f"/rounds/{rid}/{what}/batch", status, json={what: items})


def refusals(answer: Json) -> dict[int, tuple[str, int, str | None]]:
    """The refused items: index -> (code, status, rule); every result checked for shape."""
    out = {}
    for i, result in enumerate(answer["results"]):
        assert result["index"] == i
        if result["ok"]:
            assert set(result) == {"index", "ok"}
            continue
        p = result["problem"]
        assert p["type"] == f"urn:roundaudit:problem:{p['code']}"
        assert p["title"]
        assert p["detail"]
        assert p["instance"].startswith("/rounds/")
        assert p["instance"].endswith("/batch")
        out[i] = (p["code"], p["status"], p.get("rule"))
    assert answer["refused"] == len(out)
    assert answer["accepted"] == len(answer["results"]) - len(out)
    return out


def balances(api: Api, players: list[str] = PLAYERS) -> dict[str, str]:
    return {p: api.balance(p) for p in players}


def hands(view: Json) -> dict[str, Json]:
    return {h["hand"]: h for h in view["hands"]}


def one_player_round(api: Api, table: str = "BDL-small") -> str:
    """A boundless round in betting, with one funded player, alice."""
    if api.client.get("/wallets/alice").status_code == 404:
        api.wallet("alice", deposit="100.00")
    return api.start(table, "boundless", ORDER)


# ------------------------------------------------------------------------ a whole round
def test_thirty_players_bet_and_decide_in_batches_and_the_round_verifies(
    api: Api, audit: RoundAudit
) -> None:
    for p in PLAYERS:
        api.wallet(p, deposit="5.00" if p == POOR else "100.00")
    rid = api.start("BDL1", "boundless", ORDER)

    # --- one batch of bets: each item (bet, expected refusal) in the order sent
    items: list[tuple[Json, tuple[str, int, str | None] | None]] = [
        ({"player": p, "amount": "10.00"}, None) for p in PLAYERS[:27]
    ]
    items += [
        ({"player": "P01", "kind": "pair", "amount": "1.00"}, None),  # side bets (BDL-1)
        ({"player": "P04", "kind": "bust", "amount": 1}, None),  # integer money
        ({"player": "P28", "kind": "bust", "amount": "5.00"}, None),  # a side bet only
        ({"player": "P01", "amount": "10.00"}, ("illegal-action", 409, "BDL-1")),  # 2nd main
        ({"player": POOR, "amount": "10.00"}, ("insufficient-funds", 409, None)),
        ({"player": POOR, "kind": "pair", "amount": "5.00"}, None),  # fits: balance 0 after
        ({"player": POOR, "kind": "trio", "amount": "1.00"}, ("insufficient-funds", 409, None)),
        ({"player": "P30", "kind": "lucky7", "amount": "1.00"}, ("illegal-action", 409, None)),
        ({"player": "P30", "amount": "0.50"}, ("bet-limit", 409, None)),  # min 1.00
        ({"player": "P30", "amount": "10", "client_time": "2024-05-01T12:00:00Z"}, None),
        ({"player": "ghost", "amount": "10.00"}, ("unknown-player", 409, None)),
    ]
    bets = [{**bet, "request_id": f"bet-{i}"} for i, (bet, _) in enumerate(items)]
    expected = {i: refusal for i, (_, refusal) in enumerate(items) if refusal is not None}
    answer = batch(api, rid, "bets", bets)
    assert refusals(answer) == expected
    assert answer["accepted"] == 32
    assert answer["round"]["phase"] == "betting"
    assert len(answer["round"]["wagers"]) == 32

    after_bets = dict.fromkeys(PLAYERS, "90.00")
    after_bets |= {"P01": "89.00", "P04": "89.00", "P28": "95.00", POOR: "0.00"}
    assert balances(api) == after_bets
    placed = [e for e in api.events(rid) if e["type"] == "Participation.BetPlaced"]
    assert len(placed) == 32
    p30 = next(e["payload"] for e in placed if e["payload"]["player"] == "P30")
    sent = next(b for b in bets if b["player"] == "P30" and "client_time" in b)
    assert (p30["request_id"], p30["client_time"]) == (sent["request_id"], sent["client_time"])

    # --- the same batch again under its Idempotency-Key: the first answer, byte for byte
    events = api.events(rid)
    keyed = api.client.post(
        f"/rounds/{rid}/bets/batch", json={"bets": bets}, headers={"Idempotency-Key": "b1"}
    )
    replay = api.client.post(
        f"/rounds/{rid}/bets/batch", json={"bets": bets}, headers={"Idempotency-Key": "b1"}
    )
    assert replay.content == keyed.content
    assert replay.headers["idempotent-replayed"] == "true"
    # without a key, an item whose request id its player recorded is refused, never dropped
    reused = {i: ("request-id-reused", 409, None) for i in range(len(bets)) if i not in expected}
    assert refusals(keyed.json()) == expected | reused
    assert api.events(rid) == events
    assert balances(api) == after_bets

    view = api.close(rid)
    assert view["phase"] == "playing"
    assert hands(view)["P01"]["options"] == ["hit", "stand", "double", "split", "surrender"]

    # --- bets after betting closed: each refused, nothing recorded
    events = api.events(rid)
    late = batch(api, rid, "bets", [{"player": "P01", "kind": "bust", "amount": "1.00"}] * 2)
    assert refusals(late) == {0: ("betting-closed", 409, None), 1: ("betting-closed", 409, None)}
    assert api.events(rid) == events
    assert balances(api) == after_bets

    # --- the first decision window: every player at once
    actions = dict.fromkeys(PLAYERS[0:6], "split")
    actions |= dict.fromkeys(PLAYERS[6:12], "double")
    actions |= dict.fromkeys(PLAYERS[12:18], "hit")
    actions |= dict.fromkeys(PLAYERS[18:24], "stand")
    actions |= {"P25": "surrender", "P26": "surrender", "P27": "timeout", "P30": "stand"}
    wave: list[tuple[Json, tuple[str, int, str | None] | None]] = [
        ({"player": "P19", "action": "insurance"}, ("illegal-action", 409, "INS-1")),
    ]
    wave += [({"player": p, "action": a}, None) for p, a in actions.items()]
    wave += [
        ({"player": "P13", "action": "hit"}, ("out-of-turn", 409, None)),  # card not revealed
        ({"player": "P21", "action": "hit"}, ("hand-complete", 409, None)),  # stood already
        ({"player": "P28", "action": "stand"}, ("unknown-player", 409, None)),  # side bet only
        ({"player": "nobody", "action": "stand"}, ("unknown-player", 409, None)),  # no bet
        ({"player": "P30", "action": "stand", "hand": "P30.2"}, ("illegal-action", 409, None)),
    ]
    decisions = [{**d, "request_id": f"w1-{i}"} for i, (d, _) in enumerate(wave)]
    expected = {i: refusal for i, (_, refusal) in enumerate(wave) if refusal is not None}
    answer = batch(api, rid, "decisions", decisions)
    assert refusals(answer) == expected
    assert answer["accepted"] == 28
    view = answer["round"]
    assert view["sequence"] == ["5C"]  # the dealer revealed what the hands needed (BDL-2)
    table = hands(view)
    assert table["P01.1"]["cards"] == ["8H", "5C"]
    assert table["P01.1"]["options"] == ["hit", "stand", "double"]
    assert table["P01.2"]["cards"] == ["8D"]  # waits for the first split hand (D9)
    assert table["P07"]["cards"] == ["8H", "8D", "5C"]
    assert table["P07"]["doubled"] is True
    assert (table["P13"]["total"], table["P13"]["finish_reason"]) == (21, "21")  # HAND-1
    assert table["P19"]["finish_reason"] == "stand"
    assert table["P25"]["surrendered"] is True
    assert table["P27"]["finish_reason"] == "auto"  # AUTO-1 stands on 16
    assert [h for h, v in table.items() if v["options"]] == [f"P0{i}.1" for i in range(1, 7)]
    after_wave = dict(after_bets)
    after_wave |= {p: "79.00" if p in ("P01", "P04") else "80.00" for p in PLAYERS[0:12]}
    assert balances(api) == after_wave

    # --- the same window again: recorded once
    events = api.events(rid)
    again = batch(api, rid, "decisions", decisions)
    assert set(refusals(again)) == set(range(len(decisions)))  # every one refused, none recorded
    assert {r[0] for i, r in refusals(again).items() if i not in expected} == {"request-id-reused"}
    assert api.events(rid) == events
    assert balances(api) == after_wave

    # --- the split hands, then the second hands, in two more windows
    second = {"P01": "stand", "P02": "stand", "P03": "hit", "P04": "double", "P05": "stand"}
    second["P06"] = "stand"
    answer = batch(api, rid, "decisions", [{"player": p, "action": a} for p, a in second.items()])
    assert refusals(answer) == {}
    view = answer["round"]
    assert view["sequence"] == ["5C", "10D", "3S"]
    assert hands(view)["P03.1"]["bust"] is True
    due = [h for h in view["hands"] if h["options"]]
    assert [h["hand"] for h in due] == [f"P0{i}.2" for i in range(1, 7)]
    answer = batch(api, rid, "decisions", [{"player": h["player"], "action": "stand"} for h in due])
    assert refusals(answer) == {}
    view = answer["round"]
    assert view["phase"] == "settled"
    assert view["dealer"] == {"cards": ["6C", "9S", "7H"], "total": 22}

    final = dict.fromkeys(PLAYERS, "110.00")  # a main bet of 10 wins 10 against a dealer bust
    final |= dict.fromkeys(PLAYERS[0:12], "120.00")  # splits and doubles: 20 on two stakes
    final |= {
        "P01": "130.00",  # 120 + the pair 8H 8D (coloured pair, 10:1) on 1.00: 11.00 back
        "P03": "100.00",  # first split hand busts: one stake lost, one won
        "P04": "91.00",  # busts a doubled split hand (20 lost), wins 10, bust bonus 1:1 on 1
        "P25": "95.00",  # surrendered: half back
        "P26": "95.00",
        "P28": "105.00",  # bust bonus only: 3-card dealer bust pays 1:1 on 5
        POOR: "55.00",  # a pair without a main bet (BDL-1): 10:1 on 5.00, 55.00 back
    }
    assert balances(api) == final

    verdict = StoreVerifier(audit).verify(UUID(rid))
    assert verdict.ok, verdict.as_json()

    # --- a settled round takes no more batches: the whole request is refused
    events = api.events(rid)
    for what, item in (("bets", {"player": "P01", "amount": "1"}), ("decisions", DECISION)):
        url = f"/rounds/{rid}/{what}/batch"
        check_problem(api.client.post(url, json={what: [item]}), 409, "round-closed", url)
    assert api.events(rid) == events


# ----------------------------------------------------------------------- malformed bodies
BET = {"player": "alice", "amount": "10.00"}
DECISION = {"player": "alice", "action": "stand"}


@pytest.mark.parametrize(
    ("what", "items", "says"),
    [
        ("bets", [], "at least 1"),
        ("bets", [BET] * (MAX_BATCH + 1), f"at most {MAX_BATCH}"),
        ("bets", [BET, {"player": "alice", "amount": 10.5}], "MONEY-1"),
        ("bets", [BET, {"amount": "10.00"}], "bets.1.player"),
        ("bets", [{**BET, "spot": 1}], "bets.0.spot"),  # no seats in boundless (BDL-1)
        ("decisions", [], "at least 1"),
        ("decisions", [DECISION] * (MAX_BATCH + 1), f"at most {MAX_BATCH}"),
        ("decisions", [{"player": "alice", "action": "insurance", "amount": 5.5}], "MONEY-1"),
        ("decisions", [DECISION, {"action": "stand"}], "decisions.1.player"),
        ("decisions", [{**DECISION, "colour": "red"}], "decisions.0.colour"),
    ],
    ids=[
        "bets-empty",
        "bets-too-many",
        "bets-float",
        "bets-no-player",
        "bets-unknown-field",
        "decisions-empty",
        "decisions-too-many",
        "decisions-float",
        "decisions-no-player",
        "decisions-unknown-field",
    ],
)
def test_a_malformed_batch_is_refused_whole_and_records_nothing(
    api: Api, what: str, items: list[Json], says: str
) -> None:
    rid = one_player_round(api)
    if what == "decisions":
        batch(api, rid, "bets", [BET])
        api.close(rid)
    before = api.snapshot(rid, "alice")
    url = f"/rounds/{rid}/{what}/batch"
    body = check_problem(api.client.post(url, json={what: items}), 422, "validation-error", url)
    assert says in body["detail"]
    if says == "MONEY-1":
        assert body["rule"] == "MONEY-1"
    assert api.snapshot(rid, "alice") == before


def test_a_body_without_the_list_is_refused(api: Api) -> None:
    rid = one_player_round(api)
    url = f"/rounds/{rid}/bets/batch"
    check_problem(api.client.post(url, json=[BET]), 422, "validation-error", url)
    check_problem(api.client.post(url, json={"decisions": [DECISION]}), 422, "validation-error")


# ------------------------------------------------------------------------ which rounds
@pytest.mark.parametrize("what", ["bets", "decisions"])
def test_a_round_that_is_not_boundless_takes_no_batch(api: Api, what: str) -> None:
    api.wallet("alice", deposit="100.00")
    rid = api.start("EU1", "european", ["10H", "9S", "8C", "KD"])
    before = api.snapshot(rid, "alice")
    url = f"/rounds/{rid}/{what}/batch"
    item = BET if what == "bets" else DECISION
    body = check_problem(api.client.post(url, json={what: [item]}), 409, "batch-unsupported", url)
    assert body["rule"] == "BDL-1"
    assert "boundless" in body["detail"]
    assert "european" in body["detail"]
    assert api.snapshot(rid, "alice") == before


@pytest.mark.parametrize("what", ["bets", "decisions"])
def test_an_unknown_round_is_a_404_and_a_malformed_id_a_422(api: Api, what: str) -> None:
    url = f"/rounds/{uuid4()}/{what}/batch"
    item = BET if what == "bets" else DECISION
    check_problem(api.client.post(url, json={what: [item]}), 404, "round-not-found", url)
    url = f"/rounds/not-a-round/{what}/batch"
    body = check_problem(api.client.post(url, json={what: [item]}), 422, "invalid-id", url)
    assert body["field"] == "round_id"


def test_a_wallet_id_is_not_a_round(api: Api, audit: RoundAudit) -> None:
    api.wallet("alice")
    wallet_id = audit.wallet("alice").id
    url = f"/rounds/{wallet_id}/bets/batch"
    check_problem(api.client.post(url, json={"bets": [BET]}), 404, "round-not-found", url)


@pytest.mark.parametrize("what", ["bets", "decisions"])
def test_a_paused_round_refuses_the_whole_batch(api: Api, what: str) -> None:
    rid = one_player_round(api)
    if what == "decisions":
        batch(api, rid, "bets", [BET])
        api.close(rid)
    api.ok("POST", f"/rounds/{rid}/pause", json={"reason": "R1", "supervisor": "sup"})
    before = api.snapshot(rid, "alice")
    url = f"/rounds/{rid}/{what}/batch"
    item = BET if what == "bets" else DECISION
    body = check_problem(api.client.post(url, json={what: [item]}), 409, "round-closed", url)
    assert "paused" in body["detail"]
    assert api.snapshot(rid, "alice") == before


# ----------------------------------------------------------------------- small batches
def test_a_batch_of_one_refused_decision_is_a_result_not_a_problem(api: Api) -> None:
    rid = one_player_round(api)
    batch(api, rid, "bets", [BET])
    api.close(rid)
    answer = batch(api, rid, "decisions", [{"player": "alice", "action": "insurance"}])
    assert refusals(answer) == {0: ("illegal-action", 409, "INS-1")}
    answer = batch(api, rid, "decisions", [DECISION])
    assert refusals(answer) == {}
    assert answer["round"]["phase"] == "settled"


def test_a_lone_decision_the_service_raises_is_listed(
    api: Api, audit: RoundAudit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``decide_many`` raises (instead of listing) the refusal of a lone decision whose hand
    took a revealed card first (a race with another process); the route lists it."""
    rid = one_player_round(api)
    batch(api, rid, "bets", [BET])
    api.close(rid)

    def refuse(round_id: Any, decisions: Any, **_: Any) -> Any:
        raise IllegalAction("hit is not allowed on hand alice now", rule="HAND-1")

    monkeypatch.setattr(audit.boundless, "decide_many", refuse)
    answer = batch(api, rid, "decisions", [{"player": "alice", "action": "hit"}])
    assert refusals(answer) == {0: ("illegal-action", 409, "HAND-1")}


# ------------------------------------------------------------------ whole-batch failures
@pytest.mark.parametrize("what", ["bets", "decisions"])
def test_a_store_that_keeps_conflicting_refuses_the_whole_batch_and_records_nothing(
    api: Api, audit: RoundAudit, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    """Every save conflicts (another writer, always first): after the service's retries the
    request is a 409 concurrent-update, as a single command's; nothing is recorded, and the
    same batch succeeds once the store lets it."""
    api.wallet("bob", deposit="100.00")
    rid = one_player_round(api)
    if what == "decisions":
        batch(api, rid, "bets", [BET, {"player": "bob", "amount": "10.00"}])
        api.close(rid)
    if what == "bets":
        items = [BET, {"player": "bob", "amount": "5", "kind": "pair"}]
    else:
        items = [DECISION, {"player": "bob", "action": "hit"}]
    before = api.snapshot(rid, "alice", "bob")

    def conflict(self: BoundlessService, *objs: Any) -> Any:
        raise IntegrityError("another writer got there first")

    with monkeypatch.context() as m:
        m.setattr(BoundlessService, "_record", conflict)
        for sent in (items, items[:1]):  # a batch of one too: still the request's problem
            url = f"/rounds/{rid}/{what}/batch"
            r = api.client.post(url, json={what: sent})
            check_problem(r, 409, "concurrent-update", url)
    assert api.snapshot(rid, "alice", "bob") == before
    assert refusals(batch(api, rid, what, items)) == {}


def test_decisions_recorded_before_the_round_cannot_move_on_answer_its_problem(api: Api) -> None:
    """As the single /decisions route: the decisions are recorded, then the test shoe has no
    card for the hit (SHOE-3); the answer is that problem, and a repeat records nothing."""
    api.wallet("bob", deposit="100.00")
    rid = api.start("BDL-short", "boundless", ORDER[:4])  # the initial deal only
    api.wallet("alice", deposit="100.00")
    batch(api, rid, "bets", [BET, {"player": "bob", "amount": "10.00"}])
    api.close(rid)
    before = len(api.events(rid))
    url = f"/rounds/{rid}/decisions/batch"
    sent = {
        "decisions": [
            {"player": "alice", "action": "hit", "request_id": "a1"},
            {"player": "bob", "action": "stand", "request_id": "b1"},
        ]
    }
    body = check_problem(api.client.post(url, json=sent), 409, "shoe-exhausted", url)
    assert body["rule"] == "SHOE-3"
    recorded = api.events(rid)
    decided = [e["payload"]["player"] for e in recorded if e["type"].endswith("DecisionMade")]
    assert sorted(decided) == ["alice", "bob"]
    assert len(recorded) > before
    check_problem(api.client.post(url, json=sent), 409, "shoe-exhausted", url)
    assert api.events(rid) == recorded


def test_openapi_describes_the_batch_routes(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    for what in ("bets", "decisions"):
        post = doc["paths"][f"/rounds/{{round_id}}/{what}/batch"]["post"]
        assert str(MAX_BATCH) in post["summary"]
    amount = doc["components"]["schemas"]["BatchBet"]["properties"]["amount"]
    assert "MONEY-1" in amount["description"]
    bets = doc["components"]["schemas"]["BetBatch"]["properties"]["bets"]
    assert (bets["minItems"], bets["maxItems"]) == (1, MAX_BATCH)


# ---------------------------------------------------------- one player's command, one player
def test_a_single_bet_or_decision_answers_the_players_own_hands_whatever_the_round_size(
    api: Api,
) -> None:
    """A boundless round's single command (``POST .../bets``, ``/decisions``, ``/timeouts``)
    answers the round's head and shared cards with the acting player's hands and wagers only
    (``Engine.player_view``): with thousands of players the whole round in each answer made
    every command, and its stored idempotent answer, cost as much as the round. Each answer
    equals the whole round (``GET /rounds/{id}``) cut down to that player."""
    players = PLAYERS[:6]
    for p in players:
        api.wallet(p, deposit="100.00")
    rid = api.start("BDL-own", "boundless", ORDER)

    def own(whole: Json, player: str) -> Json:
        return {
            **whole,
            "hands": [h for h in whole["hands"] if h["player"] == player],
            "wagers": [w for w in whole["wagers"] if w["player"] == player],
        }

    for p in players:
        answer = api.ok("POST", f"/rounds/{rid}/bets", json={"player": p, "amount": "10.00"})
        assert {w["player"] for w in answer["wagers"]} == {p}
        assert answer == own(api.ok("GET", f"/rounds/{rid}"), p)
    api.ok("POST", f"/rounds/{rid}/close-betting")
    whole = api.ok("GET", f"/rounds/{rid}")
    assert len(whole["hands"]) == len(players)
    for i, p in enumerate(players):
        hand = next(h for h in whole["hands"] if h["player"] == p)
        if i == 0:
            answer = api.ok(
                "POST", f"/rounds/{rid}/timeouts", json={"player": p, "hand": hand["hand"]}
            )
        else:
            answer = api.decide(rid, p, "stand", hand=hand["hand"])
        assert [h["player"] for h in answer["hands"]] == [p]
        assert answer == own(api.ok("GET", f"/rounds/{rid}"), p)
    final = api.ok("GET", f"/rounds/{rid}")
    assert final["phase"] == "settled"
    assert {h["player"] for h in final["hands"]} == set(players)


def test_a_batch_answers_the_round_with_its_own_players_hands(api: Api) -> None:
    """A batch's ``round`` is the round's head with the hands and wagers of the batch's
    players, in the round's order (``GuardedAudit.batch_view``), equal to ``GET /rounds/{id}``
    cut down to them: the whole round of thousands of players in each answer made a batch cost
    as much as the round."""
    players = PLAYERS[:8]
    for p in players:
        api.wallet(p, deposit="100.00")
    rid = api.start("BDL-batch-own", "boundless", ORDER)

    def mine(whole: Json, who: set[str]) -> Json:
        return {
            **whole,
            "hands": [h for h in whole["hands"] if h["player"] in who],
            "wagers": [w for w in whole["wagers"] if w["player"] in who],
        }

    first, second = players[:3], players[3:]
    for group in (second, first):  # the answer keeps the round's order, not the batch's
        answer = batch(api, rid, "bets", [{"player": p, "amount": "10.00"} for p in group])
        assert answer["accepted"] == len(group)
        assert answer["round"] == mine(api.ok("GET", f"/rounds/{rid}"), set(group))
    api.ok("POST", f"/rounds/{rid}/close-betting")
    deciding = [players[1], players[6]]
    answer = batch(
        api, rid, "decisions", [{"player": p, "action": "stand"} for p in reversed(deciding)]
    )
    assert answer["accepted"] == 2
    assert [h["player"] for h in answer["round"]["hands"]] == sorted(
        deciding, key=lambda p: (p not in second, players.index(p))
    )
    assert answer["round"] == mine(api.ok("GET", f"/rounds/{rid}"), set(deciding))
