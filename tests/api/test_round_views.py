"""The round views ``GET /rounds/{id}`` keeps (``api.roundviews``), attacked.

Two service processes on one store (two applications, each with its own cache): what one
records, the other's next read shows (the hole card hidden until the table turns it, then
shown); a kept view is checked against every key as an uncached read is (a player key of
another player: 403; a key revoked through the other process: 401); a kept answer is the very
bytes an uncached read sends.
"""

from __future__ import annotations

import re

from apikit import ADMIN_TOKEN, Api, check_problem, service_settings
from fastapi.testclient import TestClient

from api.main import create_app
from api.roundviews import RoundViews

HOLE = "QD"
ORDER = ["10H", "9S", "6D", HOLE, "5C", "3H", "JC", "AH", "2S"]


def _shows(card: str, text: str) -> bool:
    return re.search(rf"(?<![0-9A-Z]){card}(?![0-9A-Z])", text) is not None


def _views(client: TestClient) -> RoundViews:
    views: RoundViews = client.app.state.round_views  # type: ignore[attr-defined]
    return views


def test_a_kept_view_follows_every_process_and_never_shows_the_hole_card_early(
    store_url: str,
) -> None:
    settings = service_settings(store_url)
    with TestClient(create_app(settings)) as one, TestClient(create_app(settings)) as two:
        a, b = Api(one), Api(two)
        a.wallet("alice", deposit="100.00")
        rid = a.start("T1", "multihand", ORDER)
        first = b.request("GET", f"/rounds/{rid}")
        again = b.request("GET", f"/rounds/{rid}")
        assert first.status_code == again.status_code == 200
        assert again.content == first.content
        assert _views(two).hits >= 1  # the second read was answered from what was kept

        a.bet(rid, "alice", "10.00", 1)  # through the other process
        view = b.ok("GET", f"/rounds/{rid}")
        assert [w["player"] for w in view["wagers"]] == ["alice"]

        a.close(rid)  # deals 10H, 9S, 6D and the hole card face down
        for _ in range(2):  # a miss, then a hit: neither shows it
            r = b.request("GET", f"/rounds/{rid}")
            assert r.status_code == 200
            assert not _shows(HOLE, r.text), r.text
        assert b.ok("GET", f"/rounds/{rid}")["dealer"]["cards"][0] == "9S"

        a.decide(rid, "alice", "stand")  # the table turns QD
        turned = b.ok("GET", f"/rounds/{rid}")
        assert turned["phase"] == "settled"
        assert turned["dealer"]["cards"] == ["9S", HOLE]

    # an uncached read (a fresh process) sends the very bytes the kept view does
    with TestClient(create_app(settings)) as three, TestClient(create_app(settings)) as four:
        kept = Api(four)
        kept.request("GET", f"/rounds/{rid}")
        hit = kept.request("GET", f"/rounds/{rid}")
        assert _views(four).hits >= 1
        assert Api(three).request("GET", f"/rounds/{rid}").content == hit.content


def test_a_kept_view_is_checked_against_every_key(store_url: str) -> None:
    settings = service_settings(store_url)
    with TestClient(create_app(settings)) as one, TestClient(create_app(settings)) as two:
        a, b = Api(one), Api(two)
        a.wallet("ann", deposit="100.00")
        a.wallet("bob", deposit="100.00")
        rid = a.start("T1", "multihand", ORDER)
        ann = a.key("player", player="ann")
        bob = a.key("player", player="bob")
        other_table = a.key("investigator")
        a.ok(
            "POST", f"/rounds/{rid}/bets", key=ann,
            json={"player": "ann", "amount": "10.00", "spot": 1},
        )  # fmt: skip
        assert b.ok("GET", f"/rounds/{rid}", key=ann)["round_id"] == rid
        hits = _views(two).hits
        assert b.ok("GET", f"/rounds/{rid}", key=ann)["round_id"] == rid
        assert _views(two).hits == hits + 1  # the kept view, for ann
        # bob is not a player of the round: refused from the kept view too, nothing shown
        r = b.request("GET", f"/rounds/{rid}", key=bob)
        check_problem(r, 403, "forbidden")
        assert "ann" not in r.text
        assert _views(two).hits == hits + 2
        assert b.request("GET", f"/rounds/{rid}", key=other_table).status_code in (200, 403)
        # a key revoked through the other process: refused at once, kept view or not
        a.ok("DELETE", f"/api-keys/{ann.split('_')[1]}?reason=leaked", key=ADMIN_TOKEN)
        check_problem(b.request("GET", f"/rounds/{rid}", key=ann), 401, "unauthenticated")
        # no key at all
        check_problem(two.get(f"/rounds/{rid}"), 401, "unauthenticated")


def test_unknown_rounds_and_other_aggregates_are_not_kept(store_url: str) -> None:
    settings = service_settings(store_url)
    with TestClient(create_app(settings)) as one:
        a = Api(one)
        wallet = a.wallet("cy", deposit="10.00")
        missing = "00000000-0000-4000-8000-000000000000"
        for rid in (missing, wallet["wallet_id"]):
            for _ in range(2):
                a.problem("GET", f"/rounds/{rid}", 404, "round-not-found")
        assert _views(one).hits == 0
        feed = a.feed("T9")  # bound to another table: 403 whether the round exists or not
        check_problem(a.request("GET", f"/rounds/{missing}", key=feed), 403, "forbidden")
