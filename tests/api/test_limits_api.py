"""D18 over HTTP: a bet outside its limits is an RFC 9457 problem naming the limit and the
setting (``setting`` extension: ``rules-key:setting``); nothing is recorded."""

from __future__ import annotations

from apikit import Api, check_problem


def test_d18_the_problem_names_the_setting(api: Api) -> None:
    api.wallet("alice", "100.00")
    rid = api.start("t-limits", "european", ["10H", "9S", "6D", "8D"])
    before = api.snapshot(rid, "alice")
    r = api.client.post(
        f"/rounds/{rid}/bets", json={"player": "alice", "amount": "0.99", "spot": 1}
    )
    body = check_problem(r, 409, "bet-limit", f"/rounds/{rid}/bets")  # a rule refuses: 409
    assert body["setting"] == "european/1:min_bet"
    assert "below the minimum 1.00" in body["detail"]
    assert api.snapshot(rid, "alice") == before
