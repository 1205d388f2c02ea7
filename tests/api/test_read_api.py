"""The read side over HTTP (issue 16): searches, histories, a round's players, dispute timelines
and player replays, the reporting feed, daily reports (JSON, CSV, Parquet), projection
positions, the rule book; each with its refusals. Expected values come from the rounds'
recorded events (through the application, or the routes that serve them), never from
constants.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

import pyarrow.parquet as pq
import pytest
from apikit import Api, check_problem, service_settings
from fastapi.testclient import TestClient

from api.main import create_app
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.boundless.participation import participation_id
from domain.round import Round

Json = dict[str, Any]
ORDER = ["10H", "9S", "6D", "KC", "8D", "2C", "5S", "4H", "3D", "7C"]


def app_of(api: Api) -> RoundAudit:
    audit: RoundAudit = api.raw.app.state.audit  # type: ignore[attr-defined]
    return audit


def _uuid(rid: str | UUID) -> UUID:
    return rid if isinstance(rid, UUID) else UUID(rid)


def joined(audit: RoundAudit, rid: str | UUID) -> list[str]:
    """A boundless round's players, in id order, from their participations."""
    return sorted(p.player for p in audit.boundless.participations(_uuid(rid)))


def settled_wagers(audit: RoundAudit, rid: str | UUID) -> list[Any]:
    """Every WagerSettled of a round, from its recorded events (boundless: every player's)."""
    events = list(audit.events.get(_uuid(rid)))
    if type(events[0]).__qualname__.startswith("SharedHand"):
        for player in joined(audit, rid):
            events += list(audit.events.get(participation_id(_uuid(rid), player)))
    return [e for e in events if type(e).__name__ == "WagerSettled"]


@pytest.fixture
def filled(api: Api) -> Api:
    """Two tables of simulated rounds (multihand, deluxe), one boundless table."""
    audit = app_of(api)
    simulate(audit, variant="multihand", rounds=3, players=2, table="mh")
    simulate(audit, variant="deluxe", rounds=2, players=3, table="dx")
    simulate(audit, variant="boundless", rounds=1, players=30, table="bl")
    return api


# ------------------------------------------------------------------------------ search
def test_search_finds_rounds_by_table_variant_state_and_number(filled: Api) -> None:
    api = filled
    audit = app_of(api)
    page = api.ok("GET", "/rounds?limit=500")
    rounds = page["rounds"]
    assert len(rounds) == 6
    assert page["projection"]["lag"] == 0
    assert page["next"] is None
    started = [r["started_at"] for r in rounds]
    assert started == sorted(started, reverse=True)  # newest first
    for r in rounds:
        view = audit.round_view(r["round_id"]) if not r["boundless"] else None
        if view is not None:
            assert (r["table_id"], r["round_number"], r["variant"]) == (
                view["table_id"],
                view["round_number"],
                view["variant"],
            )
        assert r["state"] == "settled"
    mh = api.ok("GET", "/rounds?table=mh")["rounds"]
    assert {r["round_number"] for r in mh} == {1, 2, 3}
    assert {r["table_id"] for r in mh} == {"mh"}
    one = api.ok("GET", "/rounds?table=dx&number=2")["rounds"]
    assert [r["round_id"] for r in one] == [str(Round.create_id("dx", 2))]
    boundless = api.ok("GET", "/rounds?variant=boundless")["rounds"]
    assert [r["players"] for r in boundless] == [len(joined(audit, Round.create_id("bl", 1)))]
    assert api.ok("GET", "/rounds?state=betting")["rounds"] == []
    both = api.ok("GET", "/rounds?variant=deluxe&variant=boundless")["rounds"]
    assert {r["variant"] for r in both} == {"deluxe", "boundless"}


def test_search_pages_with_a_cursor_and_a_time_range(filled: Api) -> None:
    api = filled
    everything = api.ok("GET", "/rounds?limit=500")["rounds"]
    seen: list[str] = []
    url = "/rounds?limit=2"
    while True:
        page = api.ok("GET", url)
        seen += [r["round_id"] for r in page["rounds"]]
        if page["next"] is None:
            break
        url = f"/rounds?limit=2&cursor={page['next']}"
    assert seen == [r["round_id"] for r in everything]
    # a time range: from the third newest round's start (inclusive) to after the newest
    third = datetime.fromisoformat(everything[2]["started_at"])
    later = datetime.now(UTC) + timedelta(minutes=1)
    found = api.ok(
        "GET",
        "/rounds",
        params={"from": third.isoformat(), "to": later.isoformat(), "limit": 500},
    )["rounds"]
    assert [r["round_id"] for r in found] == [r["round_id"] for r in everything[:3]]


def test_search_by_player_lists_the_rounds_they_bet_in(filled: Api) -> None:
    api = filled
    audit = app_of(api)
    player = "dx-bot01"
    found = api.ok("GET", f"/rounds?player={player}")["rounds"]
    expected = [
        str(Round.create_id("dx", n))
        for n in (2, 1)
        if player
        in {
            e.player
            for e in audit.events.get(Round.create_id("dx", n))
            if type(e).__name__ == "BetPlaced"
        }
    ]
    assert [r["round_id"] for r in found] == expected
    assert expected


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("table=not%20an%20id", "invalid-id"),
        ("player=" + "x" * 65, "invalid-id"),
        ("variant=poker", "invalid-query"),
        ("state=lost", "validation-error"),
        ("limit=0", "validation-error"),
        ("limit=501", "validation-error"),
        ("from=2026-01-01T00:00:00", "validation-error"),  # no time zone
        ("from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", "invalid-query"),
        ("cursor=bm9wZQ", "invalid-cursor"),
        ("tabel=T1", "unknown-parameter"),
    ],
)
def test_a_malformed_search_is_a_422_naming_the_problem(api: Api, query: str, code: str) -> None:
    api.problem("GET", f"/rounds?{query}", 422, code)


def test_bound_keys_search_inside_their_binding_only(filled: Api) -> None:
    api = filled
    feed = api.key("table-feed", tables=("mh",))
    mine = api.ok("GET", "/rounds", key=feed)["rounds"]
    assert {r["table_id"] for r in mine} == {"mh"}
    assert len(mine) == 3
    check_problem(api.request("GET", "/rounds?table=dx", key=feed), 403, "forbidden")
    player = api.key("player", player="mh-bot02")
    own = api.ok("GET", "/rounds", key=player)["rounds"]
    assert own
    assert {r["table_id"] for r in own} == {"mh"}
    check_problem(api.request("GET", "/rounds?player=mh-bot01", key=player), 403, "forbidden")
    for role in ("cashier", "reporting"):
        check_problem(api.request("GET", "/rounds", key=api.key(role)), 403, "forbidden")


# ------------------------------------------------------------------------------ history
def test_a_players_history_carries_their_money_from_the_ledger(filled: Api) -> None:
    api = filled
    audit = app_of(api)
    player = "mh-bot01"
    doc = api.ok("GET", f"/players/{player}/rounds")
    assert doc["player"] == player
    played = [
        n
        for n in (3, 2, 1)
        if any(
            type(e).__name__ == "BetPlaced" and e.player == player
            for e in audit.events.get(Round.create_id("mh", n))
        )
    ]
    assert played
    assert [r["round_number"] for r in doc["rounds"]] == played
    for r in doc["rounds"]:
        settled = [
            e
            for e in audit.events.get(_uuid(r["round_id"]))
            if type(e).__name__ == "WagerSettled" and e.player == player
        ]
        net = sum((Decimal(e.net) for e in settled), Decimal(0))
        staked = sum((Decimal(e.stake) for e in settled), Decimal(0))
        assert Decimal(r["money"]["net"]) == net
        assert Decimal(r["money"]["staked"]) == staked
    self_key = api.key("player", player=player)
    assert api.ok("GET", f"/players/{player}/rounds", key=self_key)["rounds"] == doc["rounds"]
    check_problem(api.request("GET", "/players/mh-bot02/rounds", key=self_key), 403, "forbidden")
    api.problem("GET", "/players/a!b/rounds", 422, "invalid-id")


# ------------------------------------------------------------------------------ players
def test_one_player_among_a_boundless_rounds_players_by_prefix(filled: Api) -> None:
    api = filled
    rid = str(Round.create_id("bl", 1))
    everyone = joined(app_of(api), rid)
    wanted = [p for p in everyone if p.startswith("bl-bot2")]
    assert len(wanted) >= 4
    doc = api.ok("GET", f"/rounds/{rid}/players?prefix=bl-bot2&limit=3")
    assert doc["total"] == len(everyone)
    assert doc["players"] == wanted[:3]
    rest = api.ok("GET", f"/rounds/{rid}/players?prefix=bl-bot2&cursor={doc['next']}")
    assert rest["players"] == wanted[3:]
    assert rest["next"] is None
    exact = api.ok("GET", f"/rounds/{rid}/players?prefix={everyone[0]}")["players"]
    assert exact == [everyone[0]]
    api.problem("GET", f"/rounds/{rid}/players?prefix=a%20b", 422, "invalid-query")
    bad = check_problem(api.request("GET", "/rounds/T1%23x/players"), 422, "invalid-id")
    assert bad["field"] == "round_id"
    check_problem(
        api.request("GET", f"/rounds/{rid}/players", key=api.key("player", player=everyone[0])),
        403,
        "forbidden",
    )


# ------------------------------------------------------------------------------ disputes
def test_the_dispute_timeline_over_http_is_the_projections(filled: Api) -> None:
    from projections.dispute import timeline

    api = filled
    audit = app_of(api)
    rid = str(Round.create_id("dx", 1))
    player = "dx-bot01"
    doc = api.ok("GET", f"/rounds/{rid}/players/{player}/timeline")
    assert doc == timeline(audit, rid, player).as_json()
    assert (
        api.ok(
            "GET", f"/rounds/{rid}/players/{player}/timeline", key=api.key("player", player=player)
        )
        == doc
    )
    other = api.key("player", player="dx-bot02")
    check_problem(
        api.request("GET", f"/rounds/{rid}/players/{player}/timeline", key=other),
        403,
        "forbidden",
    )
    api.problem("GET", f"/rounds/{rid}/players/nobody/timeline", 404, "player-not-in-round")
    check_problem(
        api.request(
            "GET", f"/rounds/{rid}/players/nobody/timeline", key=api.key("player", player="nobody")
        ),
        403,
        "forbidden",
    )


def test_a_boundless_players_replay_leaves_the_others_out(filled: Api) -> None:
    api = filled
    audit = app_of(api)
    rid = Round.create_id("bl", 1)
    player = joined(audit, rid)[0]
    doc = api.ok("GET", f"/rounds/{rid}/players/{player}/replay")
    full = api.ok("GET", f"/rounds/{rid}/replay")
    own = list(audit.events.get(participation_id(rid, player)))
    shared = list(audit.events.get(rid))
    assert len(doc["steps"]) == len(own) + len(shared)
    assert {s["owner"] for s in doc["steps"]} == {"shared", player}
    by_position = {s["position"]: s for s in full["steps"]}
    for step in doc["steps"]:  # each step at its place in the round's merged log
        assert by_position[step["position"]]["event"] == step["event"]
        assert {h["player"] for h in step["view"]["hands"]} <= {player}
        assert set(step["balances"]) <= {player}
    last = doc["steps"][-1]["view"]
    assert {w["wager_id"] for w in last["wagers"]} == {
        e.wager_id for e in own if type(e).__name__ == "WagerSettled"
    }


def test_a_classic_players_replay_hides_the_others_balances(filled: Api) -> None:
    api = filled
    rid = Round.create_id("dx", 1)
    player = "dx-bot01"
    doc = api.ok(
        "GET", f"/rounds/{rid}/players/{player}/replay", key=api.key("player", player=player)
    )
    full = api.ok("GET", f"/rounds/{rid}/replay")
    assert [s["event"] for s in doc["steps"]] == [s["event"] for s in full["steps"]]
    others = 0
    for step in doc["steps"]:
        assert set(step["balances"]) <= {player}
        payload = step["payload"]
        assert "others_balance" not in payload
        if payload.get("player") not in (None, player) and "balance_seen" in payload:
            assert payload["balance_seen"] is None
            assert "balance seen" not in step["summary"]
            others += 1
    assert others > 0
    check_problem(
        api.request(
            "GET", f"/rounds/{rid}/players/{player}/replay", key=api.key("player", player="x9")
        ),
        403,
        "forbidden",
    )


def test_the_hole_card_stays_hidden_in_a_players_timeline_and_replay(api: Api) -> None:
    api.wallet("p1", deposit="100.00")
    rid = api.start("T1", "multihand", ORDER)
    api.bet(rid, "p1", "5.00", 1)
    api.close(rid)  # dealt: 10H to box 1, 9S up, 6D to box 1, KC face down
    hole = "KC"
    for url in (f"/rounds/{rid}/players/p1/timeline", f"/rounds/{rid}/players/p1/replay"):
        for key in (None, api.key("player", player="p1")):
            r = api.request("GET", url, key=key)
            assert r.status_code == 200, r.text
            assert hole not in r.text, url
    steps = api.ok("GET", f"/rounds/{rid}/players/p1/replay")["steps"]
    hidden = [s for s in steps if (s["payload"] or {}).get("redacted")]
    assert len(hidden) == 2  # the CardDealt and the CardToDealer of the hole card


# ------------------------------------------------------------------------------ reporting
def test_the_feed_pages_from_a_cursor_in_order(filled: Api) -> None:
    api = filled
    audit = app_of(api)
    reporting = api.key("reporting")
    first = api.ok("GET", "/feed?limit=10", key=reporting)
    assert [e["seq"] for e in first["entries"]] == list(range(1, 11))
    rest = api.ok("GET", f"/feed?after={first['next']}&limit=5000", key=reporting)
    entries = first["entries"] + rest["entries"]
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    settled = sum(
        len(settled_wagers(audit, r["round_id"]))
        for r in api.ok("GET", "/rounds?limit=500")["rounds"]
    )
    assert len(entries) == settled
    again = api.ok("GET", f"/feed?after={rest['next']}", key=reporting)
    assert again["entries"] == []
    assert again["next"] == rest["next"]
    # the same entries, streamed as NDJSON
    r = api.request(
        "GET", "/feed?after=0", key=reporting, headers={"Accept": "application/x-ndjson"}
    )
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/x-ndjson")
    lines = [ln for ln in r.text.splitlines() if ln]
    import orjson

    assert [orjson.loads(ln) for ln in lines] == entries
    api.problem("GET", "/feed?after=-1", 422, "validation-error", key=reporting)
    api.problem("GET", "/feed?limit=5001", 422, "invalid-query", key=reporting)
    api.problem(
        "GET", "/feed", 406, "not-acceptable", key=reporting, headers={"Accept": "text/html"}
    )
    check_problem(
        api.request("GET", "/feed", key=api.key("player", player="mh-bot01")), 403, "forbidden"
    )


def test_daily_reports_as_json_csv_and_parquet_agree(filled: Api) -> None:
    from projections.feed import daily
    from projections.runner import ProjectionRunner
    from projections.store import ProjectionStore

    api = filled
    audit = app_of(api)
    reporting = api.key("reporting")
    today = datetime.now(UTC).date()
    params = {"from": str(today - timedelta(days=1)), "to": str(today + timedelta(days=1))}
    # a round of play money on a test table: reported only with include_test
    api.wallet("p1", deposit="100.00")
    rid = api.start("T1", "multihand", ORDER)
    api.bet(rid, "p1", "5.00", 1)
    api.close(rid)
    api.decide(rid, "p1", "stand")
    url = api.raw.app.state.settings.database_url  # type: ignore[attr-defined]
    with ProjectionStore.open(url) as store:
        from projections import make

        ProjectionRunner(audit, store, make(["feed"])).catch_up()
        with store.read() as tx:
            span = (today - timedelta(days=1), today + timedelta(days=1))
            real = daily(tx, *span)
            rows = daily(tx, *span, include_test=True)
    assert len(rows) > len(real) > 0

    def shown(rows: Any) -> list[tuple[Any, ...]]:
        return [(r.table_id, r.kind, r.account_type, str(r.handle), str(r.payouts)) for r in rows]

    def got(doc: Json) -> list[tuple[Any, ...]]:
        return [
            (r["table_id"], r["kind"], r["account_type"], r["handle"], r["payouts"])
            for r in doc["rows"]
        ]

    doc = api.ok("GET", "/reports/daily", params=params, key=reporting)
    assert got(doc) == shown(real)
    test = api.ok("GET", "/reports/daily", params={**params, "include_test": "true"}, key=reporting)
    assert got(test) == shown(rows)
    as_csv = api.request(
        "GET",
        "/reports/daily",
        params={**params, "include_test": "true", "format": "csv"},
        key=reporting,
    )
    assert as_csv.status_code == 200
    assert as_csv.headers["content-type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(as_csv.text)))
    assert [(r["table_id"], r["handle"]) for r in table] == [
        (r["table_id"], r["handle"]) for r in test["rows"]
    ]
    by_accept = api.request(
        "GET",
        "/reports/daily",
        params={**params, "include_test": "true"},
        key=reporting,
        headers={"Accept": "application/vnd.apache.parquet"},
    )
    assert by_accept.status_code == 200
    parquet = pq.read_table(io.BytesIO(by_accept.content)).to_pylist()
    assert [(r["table_id"], str(r["handle"])) for r in parquet] == [
        (r["table_id"], r["handle"]) for r in test["rows"]
    ]
    api.problem(
        "GET", "/reports/daily?from=2026-02-01&to=2026-01-01", 422, "invalid-query", key=reporting
    )
    api.problem(
        "GET", "/reports/daily?from=2024-01-01&to=2026-01-01", 422, "invalid-query", key=reporting
    )
    api.problem("GET", "/reports/daily?from=2026-01-01", 422, "validation-error", key=reporting)
    api.problem(
        "GET",
        "/reports/daily?from=2026-01-01&to=2026-01-02&format=xls",
        422,
        "validation-error",
        key=reporting,
    )


def test_projection_positions_and_lag(filled: Api) -> None:
    api = filled
    reporting = api.key("reporting")
    api.ok("GET", "/rounds")  # catches the round index up
    doc = api.ok("GET", "/projections", key=reporting)
    names = {p["name"]: p for p in doc["projections"]}
    assert set(names) == {"hand_scores", "ledger", "feed", "observed_rtp", "rounds"}
    assert names["rounds"]["lag"] == 0
    assert names["rounds"]["position"] == doc["head"]
    assert names["hand_scores"]["position"] is None  # never read over HTTP: never run
    assert names["hand_scores"]["lag"] == doc["head"]


def test_a_read_answers_at_once_without_waiting_when_told_so(tmp_path: Any) -> None:
    settings = service_settings(f"sqlite:///{tmp_path}/lazy.db", read_wait=0.0)
    with TestClient(create_app(settings)) as client:
        api = Api(client)
        simulate(app_of(api), variant="european", rounds=2, players=1, table="eu")
        page = api.ok("GET", "/rounds")
        assert page["rounds"] == []
        assert page["projection"]["lag"] == page["projection"]["head"] > 0


# ------------------------------------------------------------------------------ rule book
def test_the_rule_book_serves_every_rule_text(api: Api) -> None:
    from domain.rulebook import shipped

    doc = api.ok("GET", "/rulebook", key=api.key("player", player="p1"))
    assert doc == shipped()
    one = api.ok("GET", "/rulebook/AUTO-1")
    assert one == shipped()["rules"]["AUTO-1"]
    assert "11 or less" in one["text"]
    api.problem("GET", "/rulebook/NOPE-9", 404, "rule-not-found")
    check_problem(api.raw.get("/rulebook"), 401, "unauthenticated")
