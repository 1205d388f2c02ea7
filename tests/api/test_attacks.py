"""The attacks of issue 11, each replayed through HTTP against the service, each refused.

Tried as an attacker on the network would (and as an insider with a key of the wrong kind):

* without a key: money in and out of any wallet, bets and decisions as anyone, supervisor
  actions, live cards: 401, nothing recorded;
* a stacked deck paying a real wallet: the request cannot say "not production", a production
  table refuses a test order, and a test table refuses a real account's bet;
* the hole card and the undealt cards of a test shoe read mid-round from any route;
* retiring the RNG shoe of a round in play to learn its seed;
* the seed table read directly: only ciphertexts;
* a player key acting as another player or reading another's wallet; a revoked key, in another
  service process; the actor an event records.
"""

from __future__ import annotations

import base64
import hashlib
import re
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
import pytest
from apikit import ADMIN_TOKEN, Api, Json, bearer, check_problem, service_settings
from fastapi.testclient import TestClient

from api.main import create_app
from api.settings import Settings
from domain.application import RoundAudit
from domain.persistence import sqlite_path
from domain.vault import MAGIC
from replays.export import read_export, verify_export

#: multihand, one box: 10H (box) 9S (dealer up) 6D (box) QD (the hole card, face down), then
#: the cards the round may still ask for; JC, AH and 2S stay in the shoe unless asked for.
HOLE = "QD"
UNDEALT = ("JC", "AH", "2S")
ORDER = ["10H", "9S", "6D", HOLE, "5C", "3H", *UNDEALT]


def strings(doc: Any) -> Iterator[str]:
    """Every string of a JSON document, the decoded stored bytes of export lines included."""
    if isinstance(doc, str):
        yield doc
    elif isinstance(doc, dict):
        for k, v in doc.items():
            yield str(k)
            if k == "state" and isinstance(v, str):
                yield base64.b64decode(v).decode("utf-8", "replace")
            else:
                yield from strings(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from strings(v)


def documents(r: Any) -> list[Any]:
    if r.headers["content-type"].startswith("application/x-ndjson"):
        return [orjson.loads(line) for line in r.content.splitlines() if line.strip()]
    return [r.json()]


def shown(cards: Iterable[str], r: Any) -> set[str]:
    """Which of ``cards`` a response shows anywhere (a whole word: 'QD', not 'QDx')."""
    found: set[str] = set()
    for doc in documents(r):
        for text in strings(doc):
            for card in cards:
                if re.search(rf"(?<![0-9A-Z]){card}(?![0-9A-Z])", text):
                    found.add(card)
    return found


def events_now(client: TestClient) -> int | None:
    audit: RoundAudit = client.app.state.audit  # type: ignore[attr-defined]
    return audit.recorder.max_notification_id()


# ------------------------------------------------------------------------- no key at all
def test_without_a_key_nothing_can_be_done_and_nothing_is_recorded(
    api: Api, client: TestClient
) -> None:
    api.wallet("alice", deposit="100.00")
    rid = api.start("T1", "multihand", ORDER)
    api.bet(rid, "alice", "10.00", 1)
    attacks: list[tuple[str, str, Json | None]] = [
        ("POST", "/wallets/alice/deposits", {"amount": "1000000", "transaction_id": "x1"}),
        ("POST", "/wallets/alice/withdrawals", {"amount": "100", "transaction_id": "x2"}),
        ("POST", f"/rounds/{rid}/bets", {"player": "alice", "amount": "50", "spot": 2}),
        ("POST", f"/rounds/{rid}/decisions", {"player": "alice", "action": "stand"}),
        ("POST", f"/rounds/{rid}/pause", {"reason": "x", "supervisor": "me"}),
        ("POST", f"/rounds/{rid}/cancel", {"reason": "x", "supervisor": "me"}),
        ("POST", f"/rounds/{rid}/cards", {"card": "AS"}),
        ("POST", "/api-keys", {"role": "admin"}),
        ("GET", "/wallets/alice", None),
        ("GET", f"/rounds/{rid}/events", None),
    ]
    for headers in ({}, {"Authorization": "Bearer rak_0000000000000000_" + "A" * 43}, bearer("x")):
        for method, url, body in attacks:
            before = events_now(client)
            r = client.request(method, url, json=body, headers=headers)
            check_problem(r, 401, "unauthenticated", url)
            assert events_now(client) == before
    assert api.balance("alice") == "90.00"


# ------------------------------------------------------------------------- stacked decks
def test_a_stacked_deck_never_pays_a_real_wallet(api: Api, client: TestClient) -> None:
    """The attack: a round started with production false and a stacked test order paid a
    real wallet 100.00 -> 9,763.00 in five rounds. Every way in is closed now."""
    api.table("PROD", "multihand", production=True)
    api.wallet("mark", deposit="100.00", account_type="real")
    feed = api.feed("PROD")
    start = {"table_id": "PROD", "variant": "multihand", "test_order": ORDER}
    before = events_now(client)
    for n in range(1, 6):
        # the request cannot say "not production": the table's record says it
        body = api.problem(
            "POST", "/rounds", 422, "validation-error", key=feed,
            json={**start, "round_number": n, "production": False},
        )  # fmt: skip
        assert "production" in body["detail"]
        # and a production table refuses a test order
        api.problem(
            "POST", "/rounds", 409, "test-shoe-refused", key=feed, json={**start, "round_number": n}
        )
    assert events_now(client) == before
    # a test table deals the stacked deck, but to play money only
    rid = api.start("TEST", "multihand", ORDER)
    before = events_now(client)
    body = api.problem(
        "POST", f"/rounds/{rid}/bets", 409, "account-type-refused",
        json={"player": "mark", "amount": "100.00", "spot": 1},
    )  # fmt: skip
    assert "real account" in body["detail"]
    assert events_now(client) == before
    # nor can an admin open a test shoe on the production table, or change what it is
    api.problem(
        "POST", "/shoes", 409, "test-shoe-refused",
        json={"table_id": "PROD", "shoe_number": 9, "kind": "test", "decks": 6, "order": ORDER},
    )  # fmt: skip
    api.problem(
        "POST", "/tables", 409, "already-exists",
        json={"table_id": "PROD", "variant": "multihand", "production": False},
    )  # fmt: skip
    assert api.balance("mark") == "100.00"


# ------------------------------------------------------------------------- hidden cards
READS = ("", "/events", "/replay", "/export", "/verification", "/proof")


def reads(api: Api, rid: str, shoe_id: str) -> list[Any]:
    out = [api.request("GET", f"/rounds/{rid}{suffix}", key=ADMIN_TOKEN) for suffix in READS]
    out.append(api.request("GET", f"/shoes/{shoe_id}", key=ADMIN_TOKEN))
    return out


def test_no_route_shows_the_hole_card_or_an_undealt_card_before_the_table_does(api: Api) -> None:
    api.wallet("alice", deposit="100.00")
    rid = api.start("T1", "multihand", ORDER)
    api.bet(rid, "alice", "10.00", 1)
    answers = [api.request("POST", f"/rounds/{rid}/close-betting")]
    events = api.ok("GET", f"/rounds/{rid}/events", key=ADMIN_TOKEN)["events"]
    shoe_id = events[0]["payload"]["shoe_id"]
    answers += reads(api, rid, shoe_id)
    for r in answers:
        assert r.status_code in (200, 409), r.text  # the proof: 409, not sealed yet
        assert shown([HOLE, *UNDEALT], r) == set(), (r.url, r.text[:400])
    # what is hidden says so
    dealt = [e for e in api.events(rid) if e["type"] in ("Round.CardDealt", "Round.CardToDealer")]
    assert [e.get("redacted") for e in dealt] == [None, None, None, None, ["card"], ["card"]]
    export = read_export_text(api.request("GET", f"/rounds/{rid}/export", key=ADMIN_TOKEN).text)
    assert export[0]["redacted"] >= 3  # the hole card twice, its shoe draw, the test order
    # the table shows them: the box stands, the dealer turns QD (19) and draws nothing more
    view = api.decide(rid, "alice", "stand")
    assert view["phase"] == "settled"
    assert view["dealer"]["cards"] == ["9S", HOLE]
    after = reads(api, rid, shoe_id)
    assert HOLE in shown([HOLE], after[0])  # the view
    assert HOLE in shown([HOLE], after[1])  # the events
    assert set(UNDEALT) <= shown(UNDEALT, after[3])  # the export: the shoe's order
    lines = after[3].content.splitlines()
    assert "redacted" not in orjson.loads(lines[0])
    assert verify_export(read_export(lines)).ok


def read_export_text(text: str) -> list[Json]:
    return [orjson.loads(line) for line in text.splitlines() if line.strip()]


def test_a_live_shoe_hides_the_hole_card_while_the_round_is_in_play(api: Api) -> None:
    api.table("LIVE", "deluxe", production=True)
    api.wallet("carol", deposit="50.00", account_type="real")
    sid = api.ok(
        "POST",
        "/shoes",
        201,
        json={"table_id": "LIVE", "shoe_number": 1, "kind": "live", "decks": 8},
    )["shoe_id"]
    api.seat("LIVE", "carol")
    rid = api.ok(
        "POST", "/rounds", 201,
        json={"table_id": "LIVE", "round_number": 1, "variant": "deluxe", "shoe_id": sid},
    )["round_id"]  # fmt: skip
    api.bet(rid, "carol", "10.00", 1)
    api.close(rid)
    for card in ("9H", "7S", "2D", HOLE):  # seat, dealer up, seat, dealer hole
        api.ok("POST", f"/rounds/{rid}/cards", json={"card": card})
    shoe = api.ok("GET", f"/shoes/{sid}")
    assert [d["card"] for d in shoe["drawn"]] == ["9H", "7S", "2D", None]
    assert shoe["drawn"][3]["redacted"] == ["card"]
    for r in reads(api, rid, sid):
        assert shown([HOLE], r) == set(), r.url
    # a shoe in use by a round in play is not retired
    api.problem("POST", f"/shoes/{sid}/retire", 409, "shoe-in-use")
    api.decide(rid, "carol", "stand")  # 11 stands; the dealer turns QD: 17
    assert api.ok("GET", f"/shoes/{sid}")["drawn"][3]["card"] == HOLE


def test_boundless_batch_answers_and_views_hide_the_hole_card(api: Api) -> None:
    players = ["b1", "b2", "b3"]
    for p in players:
        api.wallet(p, deposit="50.00")
    order = ["10H", "9S", "6D", HOLE, "5C", "3H", *UNDEALT]  # shared, up, shared, hole, ...
    rid = api.start("BX", "boundless", order)
    bets = api.ok(
        "POST", f"/rounds/{rid}/bets/batch",
        json={"bets": [{"player": p, "amount": "5.00"} for p in players]},
    )  # fmt: skip
    assert bets["accepted"] == 3
    answers = [api.request("POST", f"/rounds/{rid}/close-betting")]
    answers.append(
        api.request(
            "POST",
            f"/rounds/{rid}/decisions/batch",
            json={"decisions": [{"player": "b1", "action": "stand"}]},
        )
    )
    events = api.ok("GET", f"/rounds/{rid}/events", key=ADMIN_TOKEN)["events"]
    answers += reads(api, rid, events[0]["payload"]["shoe_id"])
    for r in answers:
        assert r.status_code in (200, 409), r.text
        assert shown([HOLE, *UNDEALT], r) == set(), (r.url, r.text[:300])
    final = api.ok(
        "POST", f"/rounds/{rid}/decisions/batch",
        json={"decisions": [{"player": p, "action": "stand"} for p in ("b2", "b3")]},
    )["round"]  # fmt: skip
    assert final["phase"] == "settled"
    assert HOLE in final["dealer"]["cards"]


# ------------------------------------------------------------------------- seeds
def rng_round(api: Api, table: str = "RNG") -> tuple[str, str, str]:
    """A production multihand round (a fresh RNG shoe, D3) still in play once betting closed
    (a round that the deal already ended, a dealer blackjack say, is played again with the
    next number); returns (round id, shoe id, commitment)."""
    api.table(table, "multihand", production=True)
    api.wallet("rita", deposit="1000.00", account_type="real")
    for number in range(1, 30):
        rid = api.ok(
            "POST", "/rounds", 201,
            json={"table_id": table, "round_number": number, "variant": "multihand"},
        )["round_id"]  # fmt: skip
        api.bet(rid, "rita", "10.00", 1)
        if api.close(rid)["phase"] in ("settled", "cancelled"):
            continue
        events = api.ok("GET", f"/rounds/{rid}/events", key=ADMIN_TOKEN)["events"]
        shoe_id = events[0]["payload"]["shoe_id"]
        return rid, shoe_id, api.ok("GET", f"/shoes/{shoe_id}")["commitment"]
    raise AssertionError("no round stayed in play in 29 deals")


def finish(api: Api, rid: str) -> Json:
    """Play the round out: decline insurance (an RNG shoe may show an ace), then stand."""
    view = api.ok("GET", f"/rounds/{rid}")
    while view["phase"] not in ("settled", "cancelled"):
        hand = next(h for h in view["hands"] if h["options"])
        action = next(
            a for a in ("stand", "no_insurance", *hand["options"]) if a in hand["options"]
        )
        view = api.decide(rid, hand["player"], action, hand=hand["hand"])
    return view


def test_retiring_the_rng_shoe_of_a_round_in_play_is_refused_and_reveals_nothing(
    api: Api, client: TestClient
) -> None:
    rid, shoe_id, _ = rng_round(api)
    before = events_now(client)
    body = api.problem("POST", f"/shoes/{shoe_id}/retire", 409, "shoe-in-use", key=ADMIN_TOKEN)
    assert body["rule"] == "SHOE-1"
    assert events_now(client) == before
    assert api.ok("GET", f"/shoes/{shoe_id}")["revealed_seed"] is None
    # the round is not wedged: it plays on, and its end retires the shoe and reveals the seed
    assert finish(api, rid)["phase"] == "settled"
    shoe = api.ok("GET", f"/shoes/{shoe_id}")
    assert shoe["retired"]
    assert shoe["revealed_seed"]
    assert api.ok("GET", f"/rounds/{rid}/verification")["ok"] is True


def test_a_shoe_a_round_was_started_on_is_in_use_before_its_first_card(api: Api) -> None:
    api.table("LV", "deluxe", production=True)
    api.wallet("carol", deposit="50.00", account_type="real")
    sid = api.ok(
        "POST", "/shoes", 201, json={"table_id": "LV", "shoe_number": 1, "kind": "live", "decks": 8}
    )["shoe_id"]
    api.seat("LV", "carol")
    rid = api.ok(
        "POST", "/rounds", 201,
        json={"table_id": "LV", "round_number": 1, "variant": "deluxe", "shoe_id": sid},
    )["round_id"]  # fmt: skip
    api.problem("POST", f"/shoes/{sid}/retire", 409, "shoe-in-use")
    api.ok(
        "POST", f"/rounds/{rid}/cancel", json={"reason": "test"}
    )  # no bet yet: nothing to refund
    assert api.ok("POST", f"/shoes/{sid}/retire")["retired"] is True


def vault_rows(settings: Settings) -> list[bytes]:
    path = sqlite_path(settings.database_url)
    assert path is not None
    conn = sqlite3.connect(path)
    try:
        return [bytes(r[0]) for r in conn.execute("SELECT state FROM stored_sealed_seeds")]
    finally:
        conn.close()


def _opens_to(settings: Settings, shoe_id: str, row: bytes) -> bool:
    """Whether ``row`` is the sealed seed of ``shoe_id`` (its additional data is the shoe)."""
    from domain.vault import SeedVaultError

    ring = settings.seed_key
    if ring is None:  # the test service: the process's own key
        from domain.vault import ephemeral_ring

        ring = ephemeral_ring()
    try:
        ring.open(UUID(shoe_id), row)
    except SeedVaultError:
        return False
    return True


def test_the_seed_table_holds_no_plaintext_seed(api: Api, settings: Settings) -> None:
    rid, shoe_id, commitment = rng_round(api)
    rows = vault_rows(settings)
    assert rows
    row = next(r for r in rows if _opens_to(settings, shoe_id, r))
    assert row.startswith(MAGIC)
    assert len(row) == 72
    # no 32 bytes of the row are the seed (its SHA-256 would be the commitment)
    windows = {row[i : i + 32] for i in range(len(row) - 31)}
    assert all(hashlib.sha256(w).hexdigest() != commitment for w in windows)
    finish(api, rid)
    seed = bytes.fromhex(api.ok("GET", f"/shoes/{shoe_id}")["revealed_seed"])
    assert hashlib.sha256(seed).hexdigest() == commitment
    assert all(seed not in r for r in vault_rows(settings))


# ------------------------------------------------------------------------- players
def test_a_player_key_acts_and_reads_as_its_own_player_only(api: Api, client: TestClient) -> None:
    api.wallet("ann", deposit="100.00")
    api.wallet("bob", deposit="100.00")
    ann = api.key("player", player="ann")
    rid = api.start("T1", "multihand", ORDER)
    before = events_now(client)
    for body in (
        {"player": "bob", "amount": "10.00", "spot": 1},
        {"player": "bob", "amount": "10.00", "spot": 2},
    ):
        check_problem(
            api.request("POST", f"/rounds/{rid}/bets", key=ann, json=body), 403, "forbidden"
        )
    check_problem(api.request("GET", "/wallets/bob", key=ann), 403, "forbidden")
    check_problem(api.request("GET", "/wallets/bob/movements", key=ann), 403, "forbidden")
    check_problem(api.request("GET", f"/rounds/{rid}", key=ann), 403, "forbidden")  # not its round
    assert events_now(client) == before
    view = api.ok(
        "POST", f"/rounds/{rid}/bets", key=ann, json={"player": "ann", "amount": "10.00", "spot": 1}
    )
    assert view["wagers"][0]["player"] == "ann"
    assert api.ok("GET", f"/rounds/{rid}", key=ann)["round_id"] == rid
    assert api.ok("GET", "/wallets/ann", key=ann)["balance"] == "90.00"
    placed = next(e for e in api.events(rid) if e["type"] == "Round.BetPlaced")
    key_id = ann.split("_")[1]
    assert placed["payload"]["actor"] == {
        "kind": "player",
        "id": "ann",
        "key": key_id,
        "role": "player",
    }


def test_the_actor_of_every_command_names_the_key_that_sent_it(api: Api) -> None:
    api.wallet("alice", deposit="100.00")
    rid = api.start("T1", "multihand", ORDER)
    api.bet(rid, "alice", "10.00", 1)
    api.close(rid)
    api.ok("POST", f"/rounds/{rid}/pause", json={"reason": "camera", "supervisor": "sue"})
    feed = api.feed("T1").split("_")[1]
    sup = api.key("supervisor", tables=("T1",)).split("_")[1]
    events = {e["type"]: e["payload"] for e in api.events(rid)}
    assert events["Round.Started"]["actor"] == {
        "kind": "system", "id": "roundaudit", "key": feed, "role": "table-feed"
    }  # fmt: skip
    assert events["Round.BetPlaced"]["actor"] == {
        "kind": "player", "id": "alice", "key": feed, "role": "table-feed"
    }  # fmt: skip
    assert events["Round.BettingClosed"]["actor"]["key"] == feed
    assert events["Round.Paused"]["actor"] == {
        "kind": "supervisor", "id": "sue", "key": sup, "role": "supervisor"
    }  # fmt: skip
    deposit = api.ok("GET", "/wallets/alice")["movements"][0]
    cashier = api.key("cashier").split("_")[1]
    assert deposit["actor"] == {
        "kind": "system",
        "id": "roundaudit",
        "key": cashier,
        "role": "cashier",
    }


# ------------------------------------------------------------------------- revocation
def test_a_revoked_key_is_refused_at_once_by_every_service_process(store_url: str) -> None:
    """Two service processes on one store (here: two applications): a key revoked through one
    is refused by the other on its very next request."""
    settings = service_settings(store_url)
    with TestClient(create_app(settings)) as one, TestClient(create_app(settings)) as two:
        api_one, api_two = Api(one), Api(two)
        token = api_one.key("investigator")
        assert api_two.ok("GET", "/rules", key=token)["rules"]
        key_id = token.split("_")[1]
        api_one.ok("DELETE", f"/api-keys/{key_id}?reason=leaked", key=ADMIN_TOKEN)
        check_problem(api_two.request("GET", "/rules", key=token), 401, "unauthenticated")
        check_problem(api_one.request("GET", "/rules", key=token), 401, "unauthenticated")
        listed = {k["key_id"]: k for k in api_two.ok("GET", "/api-keys", key=ADMIN_TOKEN)["keys"]}
        assert listed[key_id]["revoked"] is True
        assert listed[key_id]["revoke_reason"] == "leaked"


def test_keys_are_listed_without_secrets_and_a_secret_is_answered_once(api: Api) -> None:
    made = api.ok(
        "POST", "/api-keys", 201, json={"role": "table-feed", "tables": ["T1"], "label": "studio-1"}
    )
    token = made["token"]
    assert re.fullmatch(r"rak_[0-9a-f]{16}_[A-Za-z0-9_-]{43}", token)
    listing = api.request("GET", "/api-keys", key=ADMIN_TOKEN)
    assert token.split("_", 2)[2] not in listing.text
    assert "secret" not in listing.text
    entry = next(k for k in listing.json()["keys"] if k["key_id"] == made["key"]["key_id"])
    assert (entry["role"], entry["tables"], entry["label"]) == ("table-feed", ["T1"], "studio-1")
    for bad in (
        {"role": "table-feed"},  # a feed needs its tables
        {"role": "player"},  # a player key needs its player
        {"role": "cashier", "tables": ["T1"]},  # a cashier is not bound
        {"role": "root"},
    ):
        r = api.request("POST", "/api-keys", key=ADMIN_TOKEN, json=bad)
        assert r.status_code == 422, (bad, r.text)


# ------------------------------------------------------------------------- transport
def test_another_host_is_refused_and_every_answer_has_the_security_headers(
    client: TestClient, api: Api
) -> None:
    r = client.get("/health", headers={"Host": "attacker.example"})
    check_problem(r, 400, "invalid-host", "/health")
    for r in (client.get("/health"), api.request("GET", "/rules"), client.get("/nowhere")):
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["x-frame-options"] == "DENY"
        assert r.headers["referrer-policy"] == "no-referrer"
        assert r.headers["cache-control"] == "no-store"
        assert r.headers["content-security-policy"].startswith("default-src 'none'")
    preflight = client.options(
        "/rules",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"},
    )
    assert "access-control-allow-origin" not in preflight.headers
    r = api.request("GET", "/rules", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in r.headers


def test_cors_only_for_the_configured_origins(tmp_path: Path) -> None:
    settings = service_settings(
        f"sqlite:///{tmp_path}/cors.db", cors_origins=("https://ops.example",)
    )
    with TestClient(create_app(settings)) as c:
        api = Api(c)
        ok = api.request("GET", "/rules", headers={"Origin": "https://ops.example"})
        assert ok.headers["access-control-allow-origin"] == "https://ops.example"
        other = api.request("GET", "/rules", headers={"Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers


# ------------------------------------------------------------------------- the first key
def test_a_first_admin_key_is_generated_and_shown_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = service_settings(
        f"sqlite:///{tmp_path}/first.db", admin_key=None, generate_admin_key=True
    )
    with TestClient(create_app(settings)):
        pass
    printed = re.findall(r"rak_[0-9a-f]{16}_[A-Za-z0-9_-]{43}", capsys.readouterr().err)
    assert len(printed) == 1
    with TestClient(create_app(settings)) as c:  # a restart: the store has a usable admin key
        assert c.get("/api-keys", headers=bearer(printed[0])).status_code == 200
    assert not re.findall(r"rak_", capsys.readouterr().err)


def test_the_admin_key_setting_takes_a_file_and_a_revoked_one_stops_the_service(
    tmp_path: Path,
) -> None:
    from api.settings import SettingsError, admin_key_setting
    from domain.keys import AdminKeyUnusable, new_token

    token = new_token()
    (tmp_path / "admin.key").write_text(f"# the first admin key\n{token}\n")
    assert admin_key_setting(f"@{tmp_path / 'admin.key'}") == token
    with pytest.raises(SettingsError, match="cannot read"):
        admin_key_setting(f"@{tmp_path / 'missing'}")
    url = f"sqlite:///{tmp_path}/env.db"
    with TestClient(create_app(service_settings(url, admin_key=token))) as c:
        key_id = token.split("_")[1]
        assert c.delete(f"/api-keys/{key_id}", headers=bearer(token)).status_code == 200
    with (
        pytest.raises(AdminKeyUnusable, match="revoked"),
        TestClient(create_app(service_settings(url, admin_key=token))),
    ):
        pass


def test_a_round_id_of_another_kind_is_not_a_way_around_the_binding(api: Api) -> None:
    """A table feed bound to T2 names T1's round by its TABLE#NUMBER form on the audit routes,
    and a shoe by a round's id: refused all the same."""
    api.wallet("alice", deposit="10.00")
    rid = api.start("T1", "multihand", ORDER)
    api.table("T2", "multihand")
    other = api.feed("T2")
    for url in (f"/rounds/{rid}", f"/shoes/{rid}", f"/rounds/{UUID(rid)}/events"):
        check_problem(api.request("GET", url, key=other), 403, "forbidden")


def test_a_refused_burn_does_not_name_the_card_the_shoe_would_deal(api: Api) -> None:
    """An RNG shoe's next card is not dealt yet: a wrong guess is refused without naming it."""
    refused: list[tuple[str, str]] = []
    for attempt in range(4):  # a shoe deals AS first once in 52: then another table's shoe
        table = f"RB{attempt}"
        api.table(table, "deluxe", production=True)
        shoe = {"table_id": table, "shoe_number": 1, "kind": "rng", "decks": 8,
                "burn_procedure": True}  # fmt: skip
        sid = api.ok("POST", "/shoes", 201, json=shoe)["shoe_id"]
        burned = False
        for guess in ("AS", "KD"):
            r = api.request("POST", f"/shoes/{sid}/burn", json={"card": guess})
            if r.status_code != 409:  # the guess was the first card: the burn is done
                assert r.status_code == 200, r.text
                burned = True
                break
            refused.append((guess, r.json()["detail"]))
        if refused:
            break
    assert refused  # a first guess refused on one of the shoes
    for guess, detail in refused:  # the only card a refusal names is the one guessed
        assert set(re.findall(r"(?<![0-9A-Z])(?:10|[2-9AJQK])[SHDC](?![0-9A-Z])", detail)) == {
            guess
        }
    if not burned:
        assert api.ok("POST", f"/shoes/{sid}/burn", json={})["shown"]  # the burn shows it
