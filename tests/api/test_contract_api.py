"""Issue 12, the command contract, through HTTP: one regression test per defect found against
the service before it (ids, exact values, sizes, idempotency), each failing on that code.

Idempotency: a repeat answers the first answer byte for byte, whatever happened since; a key
reused for another request is 422 ``idempotency-key-reused``; a request id names one input of
its round (409 ``request-id-reused``), so no command is ever silently dropped; a repeat never
moves a shoe (SHOE-3).
"""

from __future__ import annotations

from typing import Any

import pytest
from apikit import Api, check_problem
from test_shoes_api import live_round, open_shoe

from api.params import encode_cursor
from domain.application import RoundAudit

ORDER = ["10H", "9C", "7D", "8S", "5C", "6H", "2D", "3S", "4C", "KD", "QH", "JS"]


def stored_events(audit: RoundAudit) -> int:
    """Events of the store, API keys' own left out (the helpers issue keys on first use)."""
    notes = audit.recorder.select_notifications(start=1, limit=1_000_000)
    return sum(not n.topic.startswith("domain.keys") for n in notes)


def post(api: Api, url: str, body: Any = None, key: str | None = None, **kw: Any) -> Any:
    headers = {"Idempotency-Key": key} if key is not None else {}
    return api.request("POST", url, json=body, headers=headers, **kw)


# ------------------------------------------------------------------------------ ids
@pytest.mark.parametrize(
    "bad", ["alice😀", "алиса", "ali\u200bce", "a\x00b", "a\nb", "a/b", "a b", "x" * 65, ""]
)
def test_an_id_outside_the_grammar_is_422_invalid_id_and_records_nothing(
    api: Api, audit: RoundAudit, bad: str
) -> None:
    before = stored_events(audit)
    body = api.problem("POST", "/wallets", 422, "invalid-id", json={"player_id": bad})
    assert body["field"] == "player_id"
    assert stored_events(audit) == before
    # a retry is not "already exists": nothing was recorded the first time
    api.problem("POST", "/wallets", 422, "invalid-id", json={"player_id": bad})
    body = api.problem(
        "POST", "/tables", 422, "invalid-id", json={"table_id": bad, "variant": "deluxe"}
    )
    assert body["field"] == "table_id"
    assert stored_events(audit) == before


def test_ids_of_the_grammar_are_recorded_and_read_back(api: Api) -> None:
    for player in ("a-b_C9", "x" * 64):
        created = api.ok("POST", "/wallets", 201, json={"player_id": player})
        r = api.request("GET", created["player_id"] and f"/wallets/{player}")
        assert r.status_code == 200
    table = api.ok("POST", "/tables", 201, json={"table_id": "t.1:a-b", "variant": "deluxe"})
    assert api.ok("GET", "/tables/t.1:a-b") == table
    api.problem("POST", "/tables", 422, "invalid-id", json={"table_id": "T#1"})


def test_a_path_id_outside_the_grammar_is_422_naming_it(api: Api) -> None:
    body = check_problem(api.request("GET", "/wallets/a%20b"), 422, "invalid-id")
    assert body["field"] == "player_id"
    body = api.problem("POST", "/rounds/not-a-round/bets", 422, "invalid-id", json={})
    assert body["field"] == "round_id"
    body = api.problem("GET", "/shoes/x", 422, "invalid-id")
    assert body["field"] == "shoe_id"


def test_a_round_id_is_its_uuid_or_table_hash_number(api: Api) -> None:
    api.wallet("alice", deposit="50.00")
    rid = api.start("T1", "lucky7", ORDER)
    assert api.ok("GET", "/rounds/T1%231") == api.ok("GET", f"/rounds/{rid}")


# ------------------------------------------------------------------------------ values
@pytest.mark.parametrize(
    ("field", "value"),
    [("round_number", "7"), ("round_number", True), ("round_number", 1.5)],
)
def test_no_value_is_coerced(api: Api, field: str, value: Any) -> None:
    api.table("T1", "lucky7")
    body = {"table_id": "T1", "round_number": 1, "variant": "lucky7", field: value}
    api.problem("POST", "/rounds", 422, "validation-error", json=body)


def test_yes_is_not_a_boolean(api: Api) -> None:
    api.problem(
        "POST",
        "/tables",
        422,
        "validation-error",
        json={"table_id": "T2", "variant": "deluxe", "production": "yes"},
    )


def test_a_repeated_json_key_is_refused(api: Api, audit: RoundAudit) -> None:
    api.wallet("alice")
    before = stored_events(audit)
    body = api.problem(
        "POST",
        "/wallets/alice/deposits",
        422,
        "malformed-json",
        content=b'{"amount": "1.00", "amount": "100.00", "transaction_id": "d1"}',
        headers={"content-type": "application/json"},
    )
    assert "amount" in body["detail"]
    assert stored_events(audit) == before


@pytest.mark.parametrize("card", ["as", "10h", "TH", " AS", "A S", "1H", "11S"])
def test_only_canonical_card_codes(api: Api, card: str) -> None:
    api.wallet("carol", deposit="50.00", account_type="real")
    sid = open_shoe(api, "LV1")["shoe_id"]
    rid = live_round(api, "LV1", sid)
    body = api.problem("POST", f"/rounds/{rid}/cards", 422, "invalid-value", json={"card": card})
    assert body["field"] == "card"
    assert body["rule"] == "CARD-1"


@pytest.mark.parametrize(
    "when",
    [
        "yesterday",
        "2024-05-01 12:00:00",
        "2024-05-01T12:00:00",
        "8160-12-30T23:27:60.8893242+21:56",  # a leap second is 23:59:60 UTC only (schemathesis)
        "2024-05-01T12:30:60Z",
    ],
)
def test_client_time_is_rfc_3339_with_an_offset(api: Api, when: str) -> None:
    api.wallet("alice", deposit="50.00")
    rid = api.start("T1", "lucky7", ORDER)
    body = api.problem(
        "POST",
        f"/rounds/{rid}/bets",
        422,
        "invalid-value",
        json={"player": "alice", "amount": "10", "spot": 1, "client_time": when},
    )
    assert body["field"] == "client_time"
    ok = {"player": "alice", "amount": "10", "spot": 1, "client_time": "2024-05-01T12:00:00+02:00"}
    api.ok("POST", f"/rounds/{rid}/bets", json=ok)


@pytest.mark.parametrize("when", ["2016-12-31T23:59:60Z", "2017-01-01T00:59:60.5+01:00"])
def test_a_leap_second_at_the_end_of_a_utc_day_is_a_client_time(api: Api, when: str) -> None:
    api.wallet("alice", deposit="50.00")
    rid = api.start("T1", "lucky7", ORDER)
    ok = {"player": "alice", "amount": "10", "spot": 1, "client_time": when}
    api.ok("POST", f"/rounds/{rid}/bets", json=ok)


# ------------------------------------------------------------------------------ sizes
def test_a_text_field_holds_at_most_1000_characters(api: Api, audit: RoundAudit) -> None:
    api.wallet("alice", deposit="50.00")
    rid = api.start("T1", "lucky7", ORDER)
    before = stored_events(audit)
    body = api.problem(
        "POST", f"/rounds/{rid}/pause", 422, "invalid-value", json={"reason": "x" * 1001}
    )
    assert body["field"] == "reason"
    assert stored_events(audit) == before
    api.ok("POST", f"/rounds/{rid}/pause", json={"reason": "x" * 1000})


def test_a_body_over_1_mib_is_413_before_it_is_read(api: Api, audit: RoundAudit) -> None:
    api.wallet("alice", deposit="50.00")
    rid = api.start("T1", "lucky7", ORDER)
    before = stored_events(audit)
    big = b'{"reason": "' + b"x" * (50 * 1024 * 1024) + b'"}'
    r = api.request(
        "POST", f"/rounds/{rid}/pause", content=big, headers={"content-type": "application/json"}
    )
    check_problem(r, 413, "payload-too-large")

    def chunks() -> Any:  # no Content-Length: counted as it streams
        yield b'{"reason": "'
        for _ in range(60):
            yield b"x" * (1024 * 1024)
        yield b'"}'

    r = api.request(
        "POST",
        f"/rounds/{rid}/pause",
        content=chunks(),
        headers={"content-type": "application/json"},
    )
    check_problem(r, 413, "payload-too-large")
    assert stored_events(audit) == before
    assert api.ok("GET", f"/rounds/{rid}")["paused"] is False


def test_batch_routes_take_up_to_8_mib(api: Api) -> None:
    rid = api.start("B1", "boundless", ORDER)
    item = {"player": "p1", "amount": "10.00", "request_id": "r" * 64}
    many = {"bets": [item] * 5000}  # about 0.4 MiB: fine; the limit is the size, not the count
    r = api.request("POST", f"/rounds/{rid}/bets/batch", json=many)
    assert r.status_code == 200, r.text[:300]
    over = b'{"bets": [' + b'{"player": "p1", "amount": "1"},' * 300_000 + b"]}"
    r = api.request(
        "POST",
        f"/rounds/{rid}/bets/batch",
        content=over,
        headers={"content-type": "application/json"},
    )
    check_problem(r, 413, "payload-too-large")


# ------------------------------------------------------------------------------ idempotency
def test_a_request_id_reused_for_another_bet_is_refused_not_dropped(api: Api) -> None:
    """Before: 200, and player B's bet was silently not placed."""
    for p in ("alice", "bob"):
        api.wallet(p, deposit="50.00")
    rid = api.start("T1", "multihand", ORDER)
    url = f"/rounds/{rid}/bets"
    api.ok("POST", url, json={"player": "alice", "amount": "10", "spot": 1, "request_id": "r1"})
    body = api.problem(
        "POST",
        url,
        422,
        "idempotency-key-reused",
        json={"player": "bob", "amount": "10", "spot": 2, "request_id": "r1"},
    )
    assert "r1" in body["detail"]
    wagers = api.ok("GET", f"/rounds/{rid}")["wagers"]
    assert [w["player"] for w in wagers] == ["alice"]
    # another API key (bob's own) bringing the round's request id: refused too, not dropped
    bob = api.key("player", player="bob")
    body = api.problem(
        "POST",
        url,
        409,
        "request-id-reused",
        key=bob,
        json={"player": "bob", "amount": "10", "spot": 2, "request_id": "r1"},
    )
    second = {"player": "bob", "amount": "10", "spot": 2, "request_id": "r2"}
    api.ok("POST", url, key=bob, json=second)
    assert len(api.ok("GET", f"/rounds/{rid}")["wagers"]) == 2


def test_close_betting_with_a_bets_key_does_not_pass_for_a_repeat(api: Api) -> None:
    api.wallet("alice", deposit="50.00")
    rid = api.start("T1", "multihand", ORDER)
    api.ok(
        "POST",
        f"/rounds/{rid}/bets",
        json={"player": "alice", "amount": "10", "spot": 1, "request_id": "k1"},
    )
    api.problem(
        "POST",
        f"/rounds/{rid}/close-betting",
        422,
        "idempotency-key-reused",
        json={"request_id": "k1"},
    )
    assert api.ok("GET", f"/rounds/{rid}")["phase"] == "betting"
    closed = api.ok("POST", f"/rounds/{rid}/close-betting", json={"request_id": "k2"})
    assert closed["phase"] != "betting"


def test_a_live_card_sent_again_never_moves_the_shoe(api: Api, audit: RoundAudit) -> None:
    """SHOE-3: before, the repeat drew a phantom card and the round failed verification."""
    api.wallet("carol", deposit="50.00", account_type="real")
    sid = open_shoe(api, "LV2")["shoe_id"]
    rid = live_round(api, "LV2", sid)
    first = post(api, f"/rounds/{rid}/cards", {"card": "10H", "request_id": "c1"})
    assert first.status_code == 200
    shoe = api.ok("GET", f"/shoes/{sid}")
    again = post(api, f"/rounds/{rid}/cards", {"card": "10H", "request_id": "c1"})
    assert again.content == first.content
    assert again.headers["idempotent-replayed"] == "true"
    # the same request id for another card, under another key: refused, the shoe unmoved
    other = api.key("table-feed", tables=("LV2",))
    r = api.request(
        "POST",
        f"/rounds/{rid}/cards",
        key=other,
        headers={"Idempotency-Key": "z"},
        json={"card": "9C", "request_id": "c1"},
    )
    check_problem(r, 409, "request-id-reused")
    assert api.ok("GET", f"/shoes/{sid}") == shoe
    for c in ("9C", "7D", "8S"):
        post(api, f"/rounds/{rid}/cards", {"card": c})
    verdict = api.ok("GET", f"/rounds/{rid}/verification", key=api.key("investigator"))
    assert [d for d in verdict["discrepancies"] if d["check"] == "shoe"] == []


def test_repeating_the_command_that_settled_a_round_answers_its_first_answer(api: Api) -> None:
    api.wallet("alice", deposit="50.00")
    rid = api.start("T1", "lucky7", ORDER)
    api.bet(rid, "alice", "10.00", 1)
    api.close(rid)
    first = post(api, f"/rounds/{rid}/decisions", {"player": "alice", "action": "stand"}, key="s1")
    assert first.status_code == 200
    assert first.json()["phase"] == "settled"
    again = post(api, f"/rounds/{rid}/decisions", {"player": "alice", "action": "stand"}, key="s1")
    assert (again.status_code, again.content) == (200, first.content)


@pytest.mark.parametrize("verb", ["pause", "cancel"])
def test_supervisor_actions_are_idempotent(api: Api, audit: RoundAudit, verb: str) -> None:
    api.wallet("alice", deposit="50.00")
    rid = api.start("T1", "lucky7", ORDER)
    api.bet(rid, "alice", "10.00", 1)
    first = post(api, f"/rounds/{rid}/{verb}", {"reason": "dealer-error"}, key=f"{verb}-1")
    assert first.status_code == 200, first.text
    before = stored_events(audit)
    again = post(api, f"/rounds/{rid}/{verb}", {"reason": "dealer-error"}, key=f"{verb}-1")
    assert (again.status_code, again.content) == (200, first.content)
    assert stored_events(audit) == before


def test_creates_burns_and_retire_are_idempotent(api: Api, audit: RoundAudit) -> None:
    api.table("S9", "deluxe")
    body = {"table_id": "S9", "shoe_number": 1, "kind": "live", "decks": 8, "burn_procedure": True}
    first = post(api, "/shoes", body, key="open-1")
    assert first.status_code == 201
    again = post(api, "/shoes", body, key="open-1")
    assert (again.status_code, again.content) == (201, first.content)
    assert again.headers["location"] == first.headers["location"]
    sid = first.json()["shoe_id"]
    burn = {"card": "3H", "cards": ["2C", "4D", "5S"]}
    b1 = post(api, f"/shoes/{sid}/burn", burn, key="burn-1")
    before = stored_events(audit)
    b2 = post(api, f"/shoes/{sid}/burn", burn, key="burn-1")
    assert (b2.status_code, b2.content) == (b1.status_code, b1.content)
    r1 = post(api, f"/shoes/{sid}/retire", key="retire-1")
    r2 = post(api, f"/shoes/{sid}/retire", key="retire-1")
    assert (r2.status_code, r2.content) == (r1.status_code, r1.content)
    assert stored_events(audit) == before + 1


def test_a_refusal_is_the_keys_answer_for_good(api: Api) -> None:
    """As Stripe does for non-5xx results: a refused command recorded nothing, and its key
    answers that refusal even once the command would pass."""
    api.wallet("alice", deposit="5.00")
    url = "/wallets/alice/withdrawals"
    first = post(api, url, {"amount": "10.00", "transaction_id": "w1"}, key="w-1")
    check_problem(first, 409, "insufficient-funds")
    api.ok("POST", "/wallets/alice/deposits", json={"amount": "10.00", "transaction_id": "d2"})
    again = post(api, url, {"amount": "10.00", "transaction_id": "w1"}, key="w-1")
    assert (again.status_code, again.content) == (409, first.content)
    assert api.balance("alice") == "15.00"
    # a malformed request never ran: nothing is stored for its key
    check_problem(
        post(api, url, {"amount": 1.5, "transaction_id": "w9"}, key="w-9"), 422, "validation-error"
    )
    assert post(api, url, {"amount": "1.00", "transaction_id": "w9"}, key="w-9").status_code == 200


def test_keys_are_scoped_to_the_api_key(api: Api) -> None:
    api.wallet("alice")
    a = api.key("cashier")
    b = api.key("admin", tables=())  # the admin key: another scope
    url = "/wallets/alice/deposits"
    r1 = api.request(
        "POST",
        url,
        key=a,
        headers={"Idempotency-Key": "same"},
        json={"amount": "1.00", "transaction_id": "t1"},
    )
    r2 = api.request(
        "POST",
        url,
        key=b,
        headers={"Idempotency-Key": "same"},
        json={"amount": "2.00", "transaction_id": "t2"},
    )
    assert (r1.status_code, r2.status_code) == (200, 200)
    assert api.balance("alice") == "3.00"


def test_a_created_key_replays_its_token_to_its_creator_only(api: Api, audit: RoundAudit) -> None:
    body = {"role": "cashier", "label": "till-1"}
    first = (
        post(api, "/api-keys", body, key="new-key", key_=None)
        if False
        else api.request(
            "POST", "/api-keys", json=body, headers={"Idempotency-Key": "new-key"}, key=api.admin
        )
    )
    again = api.request(
        "POST", "/api-keys", json=body, headers={"Idempotency-Key": "new-key"}, key=api.admin
    )
    assert (again.status_code, again.content) == (201, first.content)
    token = first.json()["token"]
    # the store keeps the answer sealed: the token is nowhere in the record
    rows = audit.idempotency.table.select_events(
        __import__("domain.idempotency", fromlist=["record_id"]).record_id(
            __import__("domain.keys", fromlist=["parse_token"]).parse_token(api.admin)[0],
            "new-key",
        )
    )
    assert rows
    assert all(token.encode() not in r.state for r in rows)


def test_a_json_number_means_what_its_text_says(api: Api) -> None:
    """JSON Schema's integers: 10, 10.0 and 1e1 are the integer ten (exactly, from the text);
    10.5 or 10.000000000000001 are not integers, and money refuses them (MONEY-1)."""
    api.wallet("alice")
    url = "/wallets/alice/deposits"
    for i, text in enumerate([b"10", b"10.0", b"1e1"]):
        body = b'{"amount": ' + text + b', "transaction_id": "t' + str(i).encode() + b'"}'
        r = api.request("POST", url, content=body, headers={"content-type": "application/json"})
        assert r.status_code == 200, r.text
    assert api.balance("alice") == "30.00"
    for text in (b"10.5", b"10.000000000000001", b"9007199254740991.4"):
        body = b'{"amount": ' + text + b', "transaction_id": "tx"}'
        r = api.request("POST", url, content=body, headers={"content-type": "application/json"})
        assert check_problem(r, 422, "validation-error")["rule"] == "MONEY-1"
    assert api.balance("alice") == "30.00"


def test_an_rng_round_on_a_shoe_number_taken_is_409_not_500(api: Api) -> None:
    """Found by schemathesis: the new shoe's seed was sealed before the shoe was found taken."""
    api.table("E1", "european")
    api.ok(
        "POST",
        "/shoes",
        201,
        key=api.admin,
        json={"table_id": "E1", "shoe_number": 7, "kind": "rng", "decks": 6},
    )
    body = {"table_id": "E1", "round_number": 7, "variant": "european"}
    api.problem("POST", "/rounds", 409, "already-exists", json=body, key=api.admin)


# ------------------------------------------------------------------------------ whole numbers
#: Larger than any store's integer (SQLite and PostgreSQL: 2**63 - 1) and than JSON's exact ones.
HUGE = 58907956996935871618875392  # the value the contract run sent to GET /feed (a 500 then)


def _integer_parameters(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for path, item in doc["paths"].items():
        for method, op in item.items():
            for param in op.get("parameters", []):
                schema = param.get("schema", {})
                options = schema.get("anyOf", [schema])
                for option in options:
                    if option.get("type") == "integer":
                        found.append((f"{method.upper()} {path}", param["name"], option))
    return found


def test_every_integer_parameter_states_its_bounds(api: Api) -> None:
    """A whole number the schema allows must be one the store can hold: the OpenAPI document
    bounds every integer query or path parameter, so the contract run never sends one that
    overflows a store (SQLite raises OverflowError past 2**63 - 1)."""
    doc = api.request("GET", "/openapi.json").json()
    found = _integer_parameters(doc)
    assert found, "the routes take integer parameters; the walk over the document found none"
    for where, name, schema in found:
        assert "maximum" in schema, f"{where}: `{name}` has no maximum"
        assert schema["maximum"] <= 2**53 - 1, f"{where}: `{name}` allows {schema['maximum']}"


@pytest.mark.parametrize(
    "url",
    [
        f"/feed?after={HUGE}",
        f"/rounds?table=T1&number={HUGE}",
        f"/merkle/consistency?first=1&second={HUGE}",
        f"/merkle/consistency?first={HUGE}&second=1",
        f"/rounds/00000000-0000-4000-8000-000000000000/proof?checkpoint={HUGE}",
    ],
)
def test_a_whole_number_beyond_the_wire_is_422_not_500(api: Api, url: str) -> None:
    api.problem("GET", url, 422, "validation-error")


def test_a_cursor_with_a_time_beyond_any_store_is_422_invalid_cursor(api: Api) -> None:
    forged = encode_cursor(HUGE, "00000000-0000-4000-8000-000000000000")
    api.problem("GET", f"/rounds?cursor={forged}", 422, "invalid-cursor")
