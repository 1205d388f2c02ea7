"""Who may do what, held to the permission table of docs/api.md, route by route.

* The table in docs/api.md is the code's table (``domain.access.PERMISSIONS`` through each
  route's declared action, ``api.auth.route_table``): every route is in it, with the same cell
  for every role.
* The walk: every route, sent by every role (each key bound to the scenario's table ``T1`` or
  player ``p1``), by keys bound to another table (``T2``) or player (``p2``), by a revoked
  key and without a key, gets what the table says: 401 ``unauthenticated`` without a usable
  key, 403 ``forbidden`` where the cell refuses, anything but those where it allows. After
  each refusal the store holds exactly the events it held before. On SQLite and PostgreSQL.
* A bound key's 403 says the same for a resource outside its binding as for one that does not
  exist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apikit import ADMIN_TOKEN, Api, Json, bearer, check_problem, service_settings
from fastapi.testclient import TestClient

from api.auth import PUBLIC, route_table
from api.main import create_app
from domain.access import PERMISSIONS, Role
from domain.application import RoundAudit
from domain.keys import ApiKey
from domain.shoe import Shoe

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
ROLES = [r.value for r in Role]
#: Routes of the docs page itself (not in the table: they serve the page, not the API).
PAGE = {
    ("GET", "/docs"),
    ("GET", "/docs/assets/{name}"),
    ("GET", "/openapi.json"),
    ("GET", "/ui"),
    ("GET", "/ui/"),
    ("GET", "/ui/assets/{name}"),
    ("GET", "/ui/cards/{name}"),
}
ORDER = ["10H", "9S", "6D", "KC", "8D", "2C", "5S", "4H", "3D", "7C"]


def _path(path: str) -> str:
    return re.sub(r"\{(\w+):\w+\}", r"{\1}", path)


def documented() -> dict[tuple[str, str], dict[str, str]]:
    """The permission table of docs/api.md: (method, path) -> {role: cell}."""
    text = DOC.read_text(encoding="utf-8")
    block = text.split("<!-- permission-table: start -->")[1].split("<!-- permission-table: end")[0]
    lines = [ln.strip() for ln in block.strip().splitlines()]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == ["route", *ROLES], header
    table: dict[tuple[str, str], dict[str, str]] = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        method, path = cells[0].strip("`").split(" ", 1)
        assert (method, path) not in table, f"{method} {path} twice in docs/api.md"
        table[(method, path)] = dict(zip(ROLES, cells[1:], strict=True))
    return table


def in_code(web: Any) -> dict[tuple[str, str], dict[str, str]]:
    """The same table from the code: each route's action, its row of PERMISSIONS."""
    table: dict[tuple[str, str], dict[str, str]] = {}
    for method, path, action in route_table(web):
        if (method, path) in PAGE:
            continue
        if action is None:
            assert (method, path) in PUBLIC, f"{method} {path} declares no action"
            table[(method, _path(path))] = dict.fromkeys(ROLES, "public")
        else:
            row = PERMISSIONS[action]
            table[(method, _path(path))] = {
                r: (row[Role(r)].value if Role(r) in row else "-") for r in ROLES
            }
    return table


def test_the_documented_permission_table_is_the_codes() -> None:
    web = create_app(service_settings("sqlite:///:memory:"))
    assert documented() == in_code(web)


# ------------------------------------------------------------------------------ the walk
@dataclass(frozen=True)
class Caller:
    """Who sends a request in the walk: a key of ``role`` bound as ``binding`` says."""

    name: str
    role: str | None  # None: no usable key (missing or revoked)
    token: str | None
    mine: bool  # bound to the scenario's table / player (or not bound at all)


@dataclass
class Scenario:
    api: Api
    audit: RoundAudit
    round_id: str
    shoe_id: str
    victim_key: str
    callers: list[Caller]
    n: int = 0

    def fresh(self) -> int:
        self.n += 1
        return self.n


def build(api: Api, audit: RoundAudit) -> Scenario:
    """A test table T1 (multihand) with players p1, p2 (play money), a round in betting
    with p1's bet, a live shoe; T2 another table; a key of every role."""
    api.table("T1", "multihand")
    api.table("T2", "multihand")
    for p in ("p1", "p2"):
        api.wallet(p, deposit="100.00")
    rid = api.start("T1", "multihand", ORDER)
    api.bet(rid, "p1", "5.00", 1)
    shoe = api.ok(
        "POST",
        "/shoes",
        201,
        json={
            "table_id": "T1",
            "shoe_number": 90,
            "kind": "live",
            "decks": 8,
            "burn_procedure": True,
        },
    )
    victim = api.ok("POST", "/api-keys", 201, json={"role": "reporting"}, key=ADMIN_TOKEN)
    revoked = api.ok("POST", "/api-keys", 201, json={"role": "admin"}, key=ADMIN_TOKEN)
    api.ok("DELETE", f"/api-keys/{revoked['key']['key_id']}", key=ADMIN_TOKEN)

    def token(role: str, *, tables: tuple[str, ...] = (), player: str | None = None) -> str:
        return api.key(role, tables=tables, player=player)

    callers = [
        Caller("no key", None, None, True),
        Caller("revoked admin", None, revoked["token"], True),
        Caller("admin", "admin", ADMIN_TOKEN, True),
        Caller("table-feed T1", "table-feed", token("table-feed", tables=("T1",)), True),
        Caller("table-feed T2", "table-feed", token("table-feed", tables=("T2",)), False),
        Caller("supervisor T1", "supervisor", token("supervisor", tables=("T1",)), True),
        Caller("supervisor T2", "supervisor", token("supervisor", tables=("T2",)), False),
        Caller("cashier", "cashier", token("cashier"), True),
        Caller("investigator", "investigator", token("investigator"), True),
        Caller("compliance", "compliance", token("compliance"), True),
        Caller("reporting", "reporting", token("reporting"), True),
        Caller("player p1", "player", token("player", player="p1"), True),
        Caller("player p2", "player", token("player", player="p2"), False),
    ]
    return Scenario(api, audit, rid, shoe["shoe_id"], victim["key"]["key_id"], callers)


def request_of(s: Scenario, method: str, path: str) -> tuple[str, Json | None]:
    """A well-formed request for the route, on the scenario's resources (so that a refusal
    by scope is a refusal by scope, never a malformed body)."""
    n = s.fresh()
    url = (
        _path(path)
        .replace("{round_id}", s.round_id)
        .replace("{shoe_id}", s.shoe_id)
        .replace("{player_id}", "p1")
        .replace("{table_id}", "T1")
        .replace("{key_id}", s.victim_key)
        .replace("{key}", "multihand")
        .replace("{name}", "docs-init.js")
        .replace("{rule_id}", "AUTO-1")
    )
    last = path.rsplit("/", 1)[-1]
    bodies: dict[tuple[str, str], Json] = {
        ("POST", "/api-keys"): {"role": "reporting", "label": f"walk {n}"},
        ("POST", "/wallets"): {"player_id": f"w{n}", "account_type": "test"},
        ("POST", "/tables"): {"table_id": f"N{n}", "variant": "multihand", "production": False},
        ("POST", "/shoes"): {"table_id": "T1", "shoe_number": 100 + n, "kind": "live", "decks": 8},
        ("POST", "/rounds"): {
            "table_id": "T1",
            "round_number": 100 + n,
            "variant": "multihand",
            "test_order": ORDER,
        },
    }
    if (method, path) in bodies:
        return url, bodies[(method, path)]
    by_last: dict[str, Json] = {
        "deposits": {"amount": "1", "transaction_id": f"t{n}"},
        "withdrawals": {"amount": "1", "transaction_id": f"t{n}"},
        "seats": {"player": "p1", "seat": 1},
        "leave": {"player": "p1", "seat": 1},
        "burn": {"card": "2H", "cards": ["3C", "4D"]},
        "cut-card": {},
        "bets": {"player": "p1", "amount": "1.00", "spot": 2},
        "cards": {"card": "AS"},
        "decisions": {"player": "p1", "action": "stand"},
        "preselections": {"player": "p1", "action": "stand"},
        "timeouts": {"player": "p1"},
        "disconnections": {"player": "p1"},
        "pause": {"reason": "walk"},
        "resume": {"reason": "walk"},
        "cancel": {"reason": "walk"},
    }
    if path.endswith("/bets/batch"):
        return url, {"bets": [{"player": "p1", "amount": "1.00"}]}
    if path.endswith("/decisions/batch"):
        return url, {"decisions": [{"player": "p1", "action": "stand"}]}
    if path == "/merkle/consistency":
        return url + "?first=1&second=1", None
    queries = {
        "/rounds": "?table=T1&player=p1",  # a bound key's search names its own binding
        "/reports/daily": "?from=2026-01-01&to=2026-12-31",
    }
    if method == "GET" and path in queries:
        return url + queries[path], None
    return url, by_last.get(last) if method == "POST" else None


def expected(cell: str, caller: Caller, s: Scenario) -> int | None:
    """401 or 403 when the caller must be refused, None when it is allowed."""
    if cell == "public":
        return None
    if caller.role is None:
        return 401
    if cell == "-":
        return 403
    if cell in ("own tables", "self"):
        return None if caller.mine else 403
    if cell == "settled":
        return 403  # the scenario's round is in play
    assert cell == "all", cell
    return None


def send(s: Scenario, caller: Caller, method: str, url: str, body: Json | None) -> Any:
    headers = bearer(caller.token) if caller.token else {}
    return s.api.raw.request(method, url, json=body, headers=headers)


def events_now(audit: RoundAudit) -> int | None:
    return audit.recorder.max_notification_id()


def test_every_route_with_every_role_gets_the_documented_answer(store_url: str) -> None:
    with TestClient(create_app(service_settings(store_url))) as client:
        api = Api(client)
        audit: RoundAudit = client.app.state.audit  # type: ignore[attr-defined]
        s = build(api, audit)
        table = documented()
        cases = [
            (m, p, caller, expected(table[(m, _path(p))][caller.role or "admin"], caller, s))
            for m, p, _ in route_table(client.app)
            if (m, p) not in PAGE
            for caller in s.callers
        ]
        refusals = [c for c in cases if c[3] is not None]
        allowed = [c for c in cases if c[3] is None]
        assert len(refusals) > 200
        assert len(allowed) > 100
        for method, path, caller, status in refusals:  # on the untouched scenario first
            url, body = request_of(s, method, path)
            before = events_now(audit)
            r = send(s, caller, method, url, body)
            code = "unauthenticated" if status == 401 else "forbidden"
            assert r.status_code == status, (caller.name, method, url, r.status_code, r.text)
            check_problem(r, status, code, url)
            if status == 401:
                assert r.headers["www-authenticate"].startswith("Bearer")
            assert events_now(audit) == before, (caller.name, method, url, "recorded events")
        for method, path, caller, _ in allowed:
            url, body = request_of(s, method, path)
            r = send(s, caller, method, url, body)
            assert r.status_code not in (401, 403), (caller.name, method, url, r.text)
            if r.status_code >= 400:
                assert r.json()["code"] not in ("forbidden", "unauthenticated")


def test_a_bound_keys_403_does_not_tell_whether_the_resource_exists(api: Api) -> None:
    api.wallet("p1", deposit="10.00")
    rid = api.start("T1", "multihand", ORDER)
    api.table("T2", "multihand")
    other_feed = api.feed("T2")
    other_player = api.key("player", player="p2")
    sid = api.ok(
        "POST", "/shoes", 201, json={"table_id": "T1", "shoe_number": 7, "kind": "live", "decks": 8}
    )["shoe_id"]
    missing_round = "5b0c8f86-0c8a-4b36-9a55-3a9d4b1d5e10"
    pairs = [
        (
            other_feed,
            "POST",
            f"/rounds/{rid}/close-betting",
            f"/rounds/{missing_round}/close-betting",
        ),
        (other_feed, "GET", f"/rounds/{rid}", f"/rounds/{missing_round}"),
        (other_feed, "GET", f"/shoes/{sid}", f"/shoes/{Shoe.create_id('T1', 8)}"),
        (other_feed, "POST", f"/shoes/{sid}/retire", f"/shoes/{Shoe.create_id('T1', 8)}/retire"),
        (other_feed, "GET", "/tables/T1", "/tables/NOPE"),
        (other_player, "GET", "/wallets/p1", "/wallets/nobody"),
        (other_player, "GET", f"/rounds/{rid}", f"/rounds/{missing_round}"),
    ]
    for token, method, exists, missing in pairs:
        a = check_problem(api.request(method, exists, key=token), 403, "forbidden")
        b = check_problem(api.request(method, missing, key=token), 403, "forbidden")
        a.pop("instance"), b.pop("instance")
        assert a == b, (exists, missing)
    # an unbound key with the right learns the truth: 404
    api.problem("GET", f"/rounds/{missing_round}", 404, "round-not-found")


def test_a_key_issued_and_revoked_records_request_id_and_client_time(
    api: Api, audit: RoundAudit
) -> None:
    """Issue 14: key events record the request id (body or Idempotency-Key header) and the
    client time (body; on the DELETE, the ``client_time`` query parameter)."""
    at = "2026-12-01T10:00:00Z"
    made = api.ok(
        "POST",
        "/api-keys",
        201,
        json={"role": "reporting", "request_id": "key-1", "client_time": at},
        key=ADMIN_TOKEN,
    )
    key_id = made["key"]["key_id"]
    api.ok(
        "DELETE",
        f"/api-keys/{key_id}",
        params={"reason": "rotated", "client_time": at},
        headers={"Idempotency-Key": "revoke-1"},
        key=ADMIN_TOKEN,
    )
    issued, revoked = (
        e for e in audit.events.get(ApiKey.create_id(key_id)) if hasattr(e, "request_id")
    )
    assert (issued.request_id, revoked.request_id) == ("key-1", "revoke-1")
    assert issued.client_time is not None
    assert issued.client_time.startswith("2026-12-01T10:00:00")
    assert revoked.client_time is not None
    assert revoked.client_time.startswith("2026-12-01T10:00:00")
