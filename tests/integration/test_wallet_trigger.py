"""A deposit's and a withdrawal's events made the short way (``domain.recorder.trigger``, as the
library rebuilds stored ones) are the events the library's ``@event`` methods make: the same
bytes stored, the same wallet read back, the same refusals, on every store."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import eventsourcing.domain as domain_module
import pytest

import domain.recorder as recorder
from domain.application import RoundAudit
from domain.errors import DomainError, DuplicateTransaction, InsufficientFunds
from domain.persistence import environment_for
from domain.wallet import Wallet

FIXED_TIME = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def _movements(app: RoundAudit) -> list[Any]:
    """Deposits, withdrawals, a repeat and the refusals of one wallet; what each answered."""
    app.open_wallet("p1", account_type="test")
    out: list[Any] = [
        app.deposit("p1", "100.00", transaction_id="d1"),
        app.deposit("p1", 5, transaction_id="d2"),
        app.withdraw("p1", "30.50", transaction_id="w1"),
        app.deposit("p1", "100.00", transaction_id="d1"),  # a repeat: nothing recorded
        app.withdraw("p1", "30.50", transaction_id="w1"),
    ]
    refusals: tuple[Callable[[], object], ...] = (
        lambda: app.withdraw("p1", "1000.00", transaction_id="w2"),
        lambda: app.deposit("p1", "1.00", transaction_id="w1"),
        lambda: app.withdraw("p1", "1.00", transaction_id="d2"),
    )
    for bad in refusals:
        with pytest.raises((InsufficientFunds, DuplicateTransaction)) as refused:
            bad()
        out.append((type(refused.value).__name__, str(refused.value), refused.value.rule))
    return out


def _stored(
    env: dict[str, str], movements: Callable[[RoundAudit], list[Any]], player: str
) -> tuple[list[Any], list[tuple[Any, ...]], dict[str, Any]]:
    """What ``movements`` answered on a fresh app at ``env``, the rows stored, and the wallet
    of ``player`` read back from the store."""
    app = RoundAudit(env=env)
    answers = movements(app)
    rows = [
        (n.originator_id, n.originator_version, n.topic, bytes(n.state))
        for n in app.recorder.select_notifications(1, 10_000)
    ]
    app.close()
    again = RoundAudit(env=env)  # read back from the store
    wallet = again.wallet(player)
    state = {
        "balance": wallet.balance,
        "version": wallet.version,
        "deposits": wallet._deposits,
        "applied": [wallet.has_transaction(t) for t in ("d1", "d2", "w1", "w2")],
        "movements": wallet.movements,
        "reversible": {
            m.transaction_id: wallet._remaining(m)
            for m in wallet._movements.values()
            if m.kind == "payout"
        },
    }
    again.close()
    return answers, rows, state


def _both_ways(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    movements: Callable[[RoundAudit], list[Any]],
    player: str,
) -> tuple[list[tuple[Any, ...]], Any, Any]:
    """``movements`` stored the short way (``recorder.trigger``), then the library's way: the
    ``@event`` methods ``trigger`` took the short way for, and what each way stored."""
    monkeypatch.setattr(domain_module, "datetime_now_with_tzinfo", lambda: FIXED_TIME)
    taken: list[tuple[Any, ...]] = []
    real = recorder._decorated_as_stored

    def seen(*args: Any) -> Any:
        found = real(*args)
        if found is not None:
            taken.append(args)
        return found

    monkeypatch.setattr(recorder, "_decorated_as_stored", seen)
    ours = _stored(environment_for(f"sqlite:///{tmp_path}/ours.db"), movements, player)
    monkeypatch.setattr(recorder, "_decorated_as_stored", lambda *args: None)
    theirs = _stored(environment_for(f"sqlite:///{tmp_path}/theirs.db"), movements, player)
    return taken, ours, theirs


def test_a_wallets_movements_are_stored_byte_for_byte_as_the_library_makes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken, ours, theirs = _both_ways(tmp_path, monkeypatch, _movements, "p1")
    assert (Wallet, "_deposited") in taken
    assert (Wallet, "_withdrawn") in taken
    assert ours == theirs
    answers, rows, state = ours
    assert (
        answers[:5]
        == [Decimal("100.00"), Decimal("105.00"), Decimal("74.50")] + [Decimal("74.50")] * 2
    )
    assert [a[0] for a in answers[5:]] == [
        "InsufficientFunds",
        "DuplicateTransaction",
        "DuplicateTransaction",
    ]
    assert "withdrawal 1000.00 exceeds the balance 74.50 of player 'p1'" in answers[5][1]
    assert len(rows) == 4  # opened, two deposits, one withdrawal
    assert state["balance"] == Decimal("74.50")
    assert state["applied"] == [True, True, True, False]


def test_a_wallets_movements_read_back_the_same_on_every_store(
    app_on_every_store: RoundAudit,
) -> None:
    app = app_on_every_store
    answers = _movements(app)
    assert answers[2] == Decimal("74.50")
    wallet = app.wallet("p1")
    assert wallet.balance == Decimal("74.50")
    assert wallet.version == 4
    events: list[Any] = list(app.events.get(wallet.id))
    rebuilt = None
    for e in events:
        rebuilt = e.mutate(rebuilt)
    assert isinstance(rebuilt, Wallet)
    assert rebuilt.balance == wallet.balance
    assert rebuilt.version == wallet.version
    assert [type(e).__name__ for e in events] == ["Opened", "Deposited", "Deposited", "Withdrawn"]
    assert [e.balance_after for e in events[1:]] == ["100.00", "105.00", "74.50"]


def _round_movements(app: RoundAudit) -> list[Any]:
    """A wallet's stakes, payouts, a refund and reversals (a repeat and the refusals included)
    saved through ``app``; what each answered."""
    wallet = app.open_wallet("p2", account_type="test")
    app.deposit("p2", "50.00", transaction_id="d1")
    wallet = app.wallet("p2")
    rid = "round-1"
    out: list[Any] = [
        wallet.debit_stake("10.00", rid, "w1", "s1", rule="OUT-2"),
        wallet.debit_stake("5.00", rid, None, "s2", actor={"kind": "player", "id": "p2"}),
        wallet.credit_payout("20.00", rid, "w1", "p1", rule="OUT-2"),
        wallet.credit_payout(0, rid, None, "p0"),
        wallet.credit_refund("5.00", rid, None, "r1", "cancelled"),
        wallet.reverse_payment("7.50", rid, "w1", "v1", "p1", "cancelled"),
        wallet.reverse_payment("12.50", rid, "w1", "v2", "p1", "cancelled", rule=None),
        wallet.debit_stake("10.00", rid, "w1", "s1", rule="OUT-2"),  # a repeat
    ]
    refusals: tuple[Callable[[], object], ...] = (
        lambda: wallet.debit_stake("1000.00", rid, "w2", "s3", rule="INS-1"),
        lambda: wallet.credit_payout("1.00", rid, "w1", "s1"),
        lambda: wallet.reverse_payment("0.01", rid, "w1", "v3", "p1", "cancelled"),
        lambda: wallet.reverse_payment("1.00", rid, "w2", "v4", "p0", "cancelled"),
    )
    for bad in refusals:
        version = wallet.version
        with pytest.raises(DomainError) as refused:
            bad()
        assert wallet.version == version  # nothing recorded
        out.append((type(refused.value).__name__, str(refused.value), refused.value.rule))
    out.append((wallet.balance, wallet.version, wallet.movements))
    app.save(wallet)
    return out


def test_a_wallets_round_movements_are_stored_byte_for_byte_as_the_library_makes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken, ours, theirs = _both_ways(tmp_path, monkeypatch, _round_movements, "p2")
    for name in ("_stake_debited", "_payout_credited", "_refund_credited", "_payment_reversed"):
        assert (Wallet, name) in taken
    assert ours == theirs
    answers, rows, state = ours
    assert answers[:8] == [True] * 7 + [False]
    assert [a[0] for a in answers[8:12]] == [
        "InsufficientFunds",
        "DuplicateTransaction",
        "InvalidReversal",
        "InvalidReversal",
    ]
    assert answers[8][2] == "INS-1"
    assert len(rows) == 9  # opened, a deposit, seven movements
    assert (state["balance"], state["version"], state["movements"]) == answers[12]
    assert state["balance"] == Decimal("40.00")
    assert [m["kind"] for m in state["movements"][1:]] == [
        "stake",
        "stake",
        "payout",
        "payout",
        "refund",
        "reversal",
        "reversal",
    ]
    assert state["reversible"] == {"p1": Decimal("0.00"), "p0": Decimal("0.00")}


def test_a_wallets_round_movements_read_back_the_same_on_every_store(
    app_on_every_store: RoundAudit,
) -> None:
    app = app_on_every_store
    answers = _round_movements(app)
    wallet = app.wallet("p2")
    assert (wallet.balance, wallet.version, wallet.movements) == answers[-1]
    events: list[Any] = list(app.events.get(wallet.id))
    rebuilt = None
    for e in events:
        rebuilt = e.mutate(rebuilt)
    assert isinstance(rebuilt, Wallet)
    assert (rebuilt.balance, rebuilt.version, rebuilt.movements) == answers[-1]
    assert [e.balance_after for e in events[2:]] == [
        "40.00",
        "35.00",
        "55.00",
        "55.00",
        "60.00",
        "52.50",
        "40.00",
    ]
