"""Wallets over HTTP: opening, cashier movements, idempotency and refusals."""

from __future__ import annotations

import pytest
from apikit import Api

from domain.application import RoundAudit
from tests.integration.test_cache_current import calls_of


def test_open_wallet_answers_201_with_an_empty_wallet(api: Api) -> None:
    r = api.client.post("/wallets", json={"player_id": "alice", "currency": "GBP"})
    assert r.status_code == 201
    assert r.headers["location"] == "/wallets/alice"
    body = r.json()
    assert body["player_id"] == "alice"
    assert body["balance"] == "0.00"
    assert body["currency"] == "GBP"
    assert body["account_type"] == "real"
    assert body["movements"] == []


def test_duplicate_wallet_is_a_409_and_changes_nothing(api: Api) -> None:
    before = api.wallet("alice", deposit="25.00")
    body = api.problem("POST", "/wallets", 409, "already-exists", json={"player_id": "alice"})
    assert "alice" in body["detail"]
    assert "already has a wallet" in body["detail"]
    assert api.ok("GET", "/wallets/alice") == before


def test_deposits_and_withdrawals_move_the_balance_exactly(api: Api) -> None:
    api.wallet("alice")
    api.ok("POST", "/wallets/alice/deposits", json={"amount": "100.10", "transaction_id": "d1"})
    api.ok("POST", "/wallets/alice/deposits", json={"amount": 5, "transaction_id": "d2"})
    body = api.ok(
        "POST", "/wallets/alice/withdrawals", json={"amount": "0.30", "transaction_id": "w1"}
    )
    assert body["balance"] == "104.80"
    kinds = [(m["kind"], m["amount"], m["balance_after"]) for m in body["movements"]]
    assert kinds == [
        ("deposit", "100.10", "100.10"),
        ("deposit", "5.00", "105.10"),
        ("withdrawal", "0.30", "104.80"),
    ]


def test_a_repeated_deposit_is_recorded_once(api: Api) -> None:
    api.wallet("alice")
    for _ in range(2):
        api.ok("POST", "/wallets/alice/deposits", json={"amount": "10.00", "transaction_id": "d1"})
    # with an Idempotency-Key header, the header is the request's key (the body keeps its id)
    for _ in range(2):
        api.ok(
            "POST",
            "/wallets/alice/deposits",
            json={"amount": "1.00", "transaction_id": "d2"},
            headers={"Idempotency-Key": "k-d2"},
        )
    body = api.ok("GET", "/wallets/alice")
    assert body["balance"] == "11.00"
    assert [m["transaction_id"] for m in body["movements"]] == ["d1", "d2"]


def test_reusing_a_transaction_id_for_another_amount_is_refused(api: Api) -> None:
    api.wallet("alice")
    api.ok("POST", "/wallets/alice/deposits", json={"amount": "10.00", "transaction_id": "d1"})
    before = api.ok("GET", "/wallets/alice")
    # the same key (the transaction id) for another body: 422, as the Idempotency-Key draft says
    api.problem(
        "POST",
        "/wallets/alice/deposits",
        422,
        "idempotency-key-reused",
        json={"amount": "11.00", "transaction_id": "d1"},
    )
    # under another idempotency key, the wallet itself refuses the transaction id
    body = api.problem(
        "POST",
        "/wallets/alice/deposits",
        409,
        "duplicate-transaction",
        json={"amount": "11.00", "transaction_id": "d1"},
        headers={"Idempotency-Key": "another"},
    )
    assert "d1" in body["detail"]
    assert api.ok("GET", "/wallets/alice") == before


def test_a_deposit_needs_a_transaction_id(api: Api) -> None:
    api.wallet("alice")
    body = api.problem(
        "POST",
        "/wallets/alice/deposits",
        422,
        "validation-error",
        json={"amount": "1.00"},
        headers={"Idempotency-Key": "k1"},
    )
    assert "transaction_id" in body["detail"]
    assert api.balance("alice") == "0.00"


def test_the_header_key_and_the_transaction_id_are_both_kept(api: Api) -> None:
    """The header is the request's idempotency key; the body's transaction id is the
    movement's: neither can make the other drop a command."""
    api.wallet("alice")
    api.ok(
        "POST",
        "/wallets/alice/deposits",
        json={"amount": "1.00", "transaction_id": "a"},
        headers={"Idempotency-Key": "b"},
    )
    body = api.ok(
        "POST",
        "/wallets/alice/deposits",
        json={"amount": "2.00", "transaction_id": "b"},
        headers={"Idempotency-Key": "a"},
    )
    assert body["balance"] == "3.00"
    assert [m["transaction_id"] for m in body["movements"]] == ["a", "b"]


@pytest.mark.parametrize("amount", [10.5, 0.25, 1e-1])
def test_float_money_is_a_422_naming_money_1(api: Api, amount: float) -> None:
    api.wallet("alice", deposit="20.00")
    before = api.ok("GET", "/wallets/alice")
    body = api.problem(
        "POST",
        "/wallets/alice/deposits",
        422,
        "validation-error",
        json={"amount": amount, "transaction_id": "f1"},
    )
    assert body["rule"] == "MONEY-1"
    assert "body.amount" in body["detail"]
    assert "MONEY-1" in body["detail"]
    assert api.ok("GET", "/wallets/alice") == before


@pytest.mark.parametrize(
    "amount", ["abc", "-5", "0", "0.00", "1.001", "1_000", "١٠", "+10", " 10 ", "010", "1e3"]
)
def test_inexact_amounts_are_refused_naming_money_1(api: Api, amount: str) -> None:
    """Issue 12: only ASCII digits with at most the minor unit's decimals (no '_', Arabic
    digits, sign, spaces, leading zero or exponent), and more than zero."""
    api.wallet("alice")
    body = api.problem(
        "POST",
        "/wallets/alice/deposits",
        422,
        "validation-error",
        json={"amount": amount, "transaction_id": "x"},
    )
    assert body["rule"] == "MONEY-1"
    assert "body.amount" in body["detail"]
    assert api.balance("alice") == "0.00"


def test_withdrawal_beyond_the_balance_is_a_409(api: Api) -> None:
    api.wallet("alice", deposit="5.00")
    before = api.ok("GET", "/wallets/alice")
    body = api.problem(
        "POST",
        "/wallets/alice/withdrawals",
        409,
        "insufficient-funds",
        json={"amount": "5.01", "transaction_id": "w1"},
    )
    assert "5.01" in body["detail"]
    assert api.ok("GET", "/wallets/alice") == before


def test_unknown_wallet_is_a_404(api: Api) -> None:
    body = api.problem("GET", "/wallets/nobody", 404, "wallet-not-found")
    assert "nobody" in body["detail"]
    api.problem(
        "POST",
        "/wallets/nobody/deposits",
        404,
        "wallet-not-found",
        json={"amount": "1.00", "transaction_id": "d"},
    )


def test_bad_wallet_parameters_are_422(api: Api) -> None:
    body = api.problem(
        "POST", "/wallets", 422, "validation-error", json={"player_id": "a", "currency": "eur"}
    )
    assert "currency" in body["detail"]
    api.problem(
        "POST", "/wallets", 422, "validation-error", json={"player_id": "a", "account_type": "vip"}
    )
    api.problem("GET", "/wallets/a", 404, "wallet-not-found")


@pytest.mark.parametrize("verb", ["deposits", "withdrawals"])
def test_a_movement_answers_the_wallet_its_transaction_committed_read_once(
    api: Api, audit: RoundAudit, monkeypatch: pytest.MonkeyPatch, verb: str
) -> None:
    api.wallet("alice", deposit="50.00")
    reads = calls_of(monkeypatch, audit, "wallet")
    body = api.ok("POST", f"/wallets/alice/{verb}", json={"amount": "2.50", "transaction_id": "m"})
    assert reads == ["alice"]  # the command's own read: the answer is what it committed
    monkeypatch.undo()
    assert body == api.ok("GET", "/wallets/alice")
    assert body["balance"] == ("52.50" if verb == "deposits" else "47.50")
    assert body["movements"][-1]["transaction_id"] == "m"


def test_a_movement_the_wallet_already_holds_answers_the_wallet_under_a_new_key(
    api: Api,
) -> None:
    """Under another Idempotency-Key, the same transaction id and amount record nothing (the
    wallet's own idempotency): the answer is then the wallet read after it."""
    api.wallet("alice")
    move = {"amount": "10.00", "transaction_id": "d1"}
    first = api.ok("POST", "/wallets/alice/deposits", json=move, headers={"Idempotency-Key": "k1"})
    again = api.client.post("/wallets/alice/deposits", json=move, headers={"Idempotency-Key": "k2"})
    assert again.status_code == 200
    assert "Idempotent-Replayed" not in again.headers
    assert again.json() == first == api.ok("GET", "/wallets/alice")
    assert first["balance"] == "10.00"
    assert len(first["movements"]) == 1


def test_deposits_beyond_the_wallet_limit_are_refused_and_the_ledger_stays_readable(
    api: Api,
) -> None:
    """The attack a contract run found: twelve deposits of 9999999999999999.99 to one player
    overflowed the payouts ledger's 64-bit cents, after which its every batch failed and each
    read of the player's history answered 500. Each such deposit is now a 409 naming the
    limit, nothing is recorded, and the player's history and wallet stay readable."""
    api.wallet("alice")
    history = api.ok("GET", "/players/alice/rounds")
    for i in range(12):
        body = api.problem(
            "POST",
            "/wallets/alice/deposits",
            409,
            "deposit-limit-reached",
            json={"amount": "9999999999999999.99", "transaction_id": f"t{i}"},
        )
        assert "WALLET_DEPOSIT_LIMIT" in body["detail"]
        assert "nothing was recorded" in body["detail"]
    wallet = api.ok("GET", "/wallets/alice")
    assert wallet["balance"] == "0.00"
    assert wallet["movements"] == []
    # the largest amount the limit leaves is taken, and the ledger projects it
    api.ok(
        "POST",
        "/wallets/alice/deposits",
        json={"amount": "1000000000000000.00", "transaction_id": "all"},
    )
    after = api.ok("GET", "/players/alice/rounds")
    assert after["rounds"] == history["rounds"] == []
    assert after["projection"]["lag"] == 0
    api.problem(
        "POST",
        "/wallets/alice/deposits",
        409,
        "deposit-limit-reached",
        json={"amount": "0.01", "transaction_id": "one-more"},
    )


def test_a_wallets_view_shows_its_latest_movements_and_the_pages_show_them_all(api: Api) -> None:
    """A command's answer shows the latest VIEW_MOVEMENTS movements and the count, never the
    whole history (its cost would grow with the wallet); the pages give every movement once,
    in recorded order, and the last page says there is no next."""
    from api.routes.wallets import VIEW_MOVEMENTS

    api.wallet("alice")
    tids = [f"d{i:03}" for i in range(VIEW_MOVEMENTS + 13)]
    for i, tid in enumerate(tids):
        last = api.ok(
            "POST", "/wallets/alice/deposits", json={"amount": f"{i + 1}.00", "transaction_id": tid}
        )
    assert last["movement_count"] == len(tids)
    assert [m["transaction_id"] for m in last["movements"]] == tids[-VIEW_MOVEMENTS:]
    assert last["balance"] == f"{sum(range(1, len(tids) + 1))}.00"
    assert api.ok("GET", "/wallets/alice") == last

    seen: list[str] = []
    path: str | None = "/wallets/alice/movements?limit=17"
    pages = 0
    while path is not None:
        page = api.ok("GET", path)
        assert page["movement_count"] == len(tids)
        assert page["offset"] == len(seen)
        seen += [m["transaction_id"] for m in page["movements"]]
        path = page["next"]
        pages += 1
    assert seen == tids
    assert pages == -(-len(tids) // 17)
    first = api.ok("GET", "/wallets/alice/movements")
    assert [m["transaction_id"] for m in first["movements"]] == tids  # default page: 100
    assert first["movements"][0]["balance_after"] == "1.00"
    beyond = api.ok("GET", f"/wallets/alice/movements?offset={len(tids) + 5}")
    assert beyond["movements"] == []
    assert beyond["next"] is None


@pytest.mark.parametrize(
    ("query", "field"),
    [("limit=0", "limit"), ("limit=501", "limit"), ("offset=-1", "offset"), ("limit=x", "limit")],
)
def test_a_bad_movements_page_is_a_422_naming_the_parameter(
    api: Api, query: str, field: str
) -> None:
    api.wallet("alice", deposit="5.00")
    body = api.problem("GET", f"/wallets/alice/movements?{query}", 422, "validation-error")
    assert [e["loc"] for e in body["errors"]] == [["query", field]]


def test_a_missing_wallets_movements_are_a_404(api: Api) -> None:
    api.problem("GET", "/wallets/nobody/movements", 404, "wallet-not-found")


@pytest.mark.parametrize("verb", ["deposits", "withdrawals"])
def test_a_movements_answer_is_the_wallets_view_byte_for_byte(
    api: Api, audit: RoundAudit, verb: str
) -> None:
    """A deposit's or withdrawal's answer (its movements rendered once per process and spliced
    in, ``wallet_answer``) is byte for byte ``orjson`` of the wallet's view as it was made
    before (``wallet_view``: the movements copied and rendered for each answer), across the
    view's window of movements, and its replay is the same bytes."""
    import orjson

    from api.routes.wallets import VIEW_MOVEMENTS, wallet_view

    api.wallet("alice", deposit="500.00")
    for i in range(VIEW_MOVEMENTS + 5):
        body = {"amount": f"0.{i % 90 + 10}", "transaction_id": f"{verb}-{i}"}
        r = api.client.post(f"/wallets/alice/{verb}", json=body)
        assert r.status_code == 200, r.text
        expected = orjson.dumps(wallet_view(audit.wallet("alice")), option=orjson.OPT_NON_STR_KEYS)
        assert r.content == expected
        again = api.client.post(f"/wallets/alice/{verb}", json=body)
        assert again.headers["idempotent-replayed"] == "true"
        assert again.content == expected
