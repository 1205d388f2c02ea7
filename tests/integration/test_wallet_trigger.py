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
from domain.errors import DuplicateTransaction, InsufficientFunds
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


def _stored(env: dict[str, str]) -> tuple[list[Any], list[tuple[Any, ...]], dict[str, Any]]:
    app = RoundAudit(env=env)
    answers = _movements(app)
    rows = [
        (n.originator_id, n.originator_version, n.topic, bytes(n.state))
        for n in app.recorder.select_notifications(1, 10_000)
    ]
    app.close()
    again = RoundAudit(env=env)  # read back from the store
    wallet = again.wallet("p1")
    state = {
        "balance": wallet.balance,
        "version": wallet.version,
        "deposits": wallet._deposits,
        "applied": [wallet.has_transaction(t) for t in ("d1", "d2", "w1", "w2")],
    }
    again.close()
    return answers, rows, state


def test_a_wallets_movements_are_stored_byte_for_byte_as_the_library_makes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(domain_module, "datetime_now_with_tzinfo", lambda: FIXED_TIME)
    taken: list[tuple[Any, ...]] = []
    real = recorder._decorated_as_stored

    def seen(*args: Any) -> Any:
        found = real(*args)
        if found is not None:
            taken.append(args)
        return found

    monkeypatch.setattr(recorder, "_decorated_as_stored", seen)
    ours = _stored(environment_for(f"sqlite:///{tmp_path}/ours.db"))
    assert (Wallet, "_deposited") in taken
    assert (Wallet, "_withdrawn") in taken
    monkeypatch.setattr(recorder, "_decorated_as_stored", lambda *args: None)
    theirs = _stored(environment_for(f"sqlite:///{tmp_path}/theirs.db"))
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
