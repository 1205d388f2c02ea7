"""The aggregate cache's copies (``domain.store.fork``), on SQLite and PostgreSQL.

A command works on a copy of the cached aggregate: one level deep for the aggregates whose
state is flat (``domain.services.base.FLAT_AGGREGATES``), so what the copy shares must never
change in place. These tests hold every aggregate a round of each variant leaves to that shape,
and show that a command refused half-way (after it changed some of its aggregates) or whose
commit fails leaves the cached aggregates as the store has them: the next command, in the same
application, sees the stored state and records what a fresh application would.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

import pytest
from roundkit import Kit

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.errors import InsufficientFunds
from domain.movements import WalletBook
from domain.rules import VARIANTS
from domain.services.base import FLAT_AGGREGATES
from domain.shoe import Shoe
from domain.wallet import Wallet

ATOMIC = (str, int, bool, type(None), Decimal, UUID, datetime)
CARDS = ["10H", "9S", "7D", "8C", "5H", "4S", "3D", "2C", "6H", "KD"]


def _atomic(value: object) -> bool:
    if isinstance(value, tuple):
        return all(_atomic(v) for v in value)
    return isinstance(value, ATOMIC)


def _frozen(value: object) -> bool:
    params = getattr(type(value), "__dataclass_params__", None)
    return dataclasses.is_dataclass(value) and params is not None and params.frozen


def _shallow_safe(name: str, value: object) -> bool:
    """What a one-level copy may share: atomic values, containers of them (the copy gets its
    own container), the game core's frozen state."""
    if name == "_pending_events":
        return isinstance(value, list)
    if isinstance(value, (list, set)):
        return all(_atomic(v) for v in value)
    if isinstance(value, dict):
        return all(_atomic(k) and _atomic(v) for k, v in value.items())
    return _atomic(value) or _frozen(value)


def _originators(app: RoundAudit) -> Iterator[UUID]:
    seen: set[UUID] = set()
    position = 0
    while page := app.recorder.select_notifications(position, 1000, inclusive_of_start=False):
        for n in page:
            if n.originator_id not in seen:
                seen.add(n.originator_id)
                yield n.originator_id
        position = page[-1].id


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_flat_aggregate_of_a_round_shares_only_what_never_changes(
    store_env: dict[str, str], variant: str
) -> None:
    app = RoundAudit(env=store_env)
    simulate(app, variant=variant, rounds=3, players=3, table=f"flat-{variant}")
    checked: set[str] = set()
    for ident in _originators(app):
        agg = app.repository.get(ident, deepcopy_from_cache=False)
        if not isinstance(agg, FLAT_AGGREGATES):
            continue
        checked.add(type(agg).__name__)
        wrong = {k: type(v) for k, v in agg.__dict__.items() if not _shallow_safe(k, v)}
        assert wrong == {}, f"{type(agg).__name__} shares mutable state with its copies"
        copy = app._get(type(agg), ident, LookupError, "x")
        assert copy is not agg
        assert copy.__dict__ == agg.__dict__
        shared = [k for k, v in copy.__dict__.items() if isinstance(v, (list, dict, set))]
        assert all(copy.__dict__[k] is not agg.__dict__[k] for k in shared)
    assert (
        {"Participation", "SharedHand", "Shoe"} <= checked
        if variant == "boundless"
        else {
            "Round",
            "Shoe",
        }
        <= checked
    )
    if variant == "deluxe":
        assert "Table" in checked
    app.close()


def _stored(store_env: dict[str, str], kit: Kit, players: list[str]) -> dict[str, Any]:
    """What a fresh application (no cache) reads of the kit's round, shoe and wallets."""
    fresh = RoundAudit(env=store_env)
    try:
        return _state(fresh, kit, players)
    finally:
        fresh.close()


def _state(app: RoundAudit, kit: Kit, players: list[str]) -> dict[str, Any]:
    rnd = app.round(kit.rid)
    shoe = app.shoe(rnd.shoe_id)
    wallets = {p: app.wallet(p) for p in players}
    return {
        "round": (rnd.version, rnd.view(), len(rnd.pending_events)),
        "shoe": (shoe.version, [(d.position, d.card) for d in shoe.drawn]),
        "wallets": {p: (w.version, w.balance, w.movements) for p, w in wallets.items()},
    }


def _kit(store_env: dict[str, str]) -> tuple[Kit, list[str]]:
    players = ["A", "B"]
    kit = Kit("multihand", CARDS, players=players, app=RoundAudit(env=store_env))
    kit.bet("A", 10, spot=1)
    kit.bet("B", 20, spot=2)
    return kit, players


def test_a_command_refused_half_way_leaves_the_cache_as_stored(
    store_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    kit, players = _kit(store_env)
    app = kit.app
    before = _state(app, kit, players)
    assert before == _stored(store_env, kit, players)
    real = WalletBook.apply

    def refuse(self: WalletBook, round_id: str, events: Any) -> None:
        real(self, round_id, events)  # the round, the shoe and the wallets have moved
        raise InsufficientFunds("refused half-way, after the aggregates changed")

    monkeypatch.setattr(WalletBook, "apply", refuse)
    with pytest.raises(InsufficientFunds):
        app.close_betting(kit.rid)
    monkeypatch.setattr(WalletBook, "apply", real)
    assert _state(app, kit, players) == before == _stored(store_env, kit, players)
    app.close_betting(kit.rid)  # the next command sees the stored state
    after = _state(app, kit, players)
    assert after == _stored(store_env, kit, players)
    assert after["round"][1]["phase"] != before["round"][1]["phase"]
    assert after["shoe"][0] > before["shoe"][0]
    app.close()


def test_a_command_whose_commit_fails_leaves_the_cache_as_stored(
    store_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    kit, players = _kit(store_env)
    app = kit.app
    before = _state(app, kit, players)

    def fail(*_: Any, **__: Any) -> Any:
        raise OSError("disk full")

    with monkeypatch.context() as m:
        m.setattr(app.events, "put", fail)
        with pytest.raises(OSError, match="disk full"):
            app.close_betting(kit.rid)
    assert _state(app, kit, players) == before == _stored(store_env, kit, players)
    app.close_betting(kit.rid)
    assert _state(app, kit, players) == _stored(store_env, kit, players) != before
    app.close()


def test_a_copy_changed_and_dropped_never_reaches_the_cache(store_env: dict[str, str]) -> None:
    app = RoundAudit(env=store_env)
    sid = app.open_shoe(table_id="c-1", shoe_number=1, kind="rng", decks=1, production=False)
    shoe = app.shoe(sid)
    shoe.draw(seed=app._sealed_seed(shoe), round_id=None)
    assert len(shoe.drawn) == 1
    assert shoe.pending_events
    again = app.shoe(sid)  # the first copy was never saved
    assert (again.version, list(again.drawn), again.pending_events) == (1, [], [])
    app.open_wallet("w", account_type="test")
    app.deposit("w", "5.00", transaction_id="d1")
    w = app.wallet("w")
    w.deposit("7.00", transaction_id="d2")
    w.credit_payout("3.00", round_id="r", wager_id="x", transaction_id="p1")
    fresh = app.wallet("w")
    assert (fresh.balance, fresh.has_transaction("d2"), fresh.movement("p1")) == (
        Decimal("5.00"),
        False,
        None,
    )
    assert [m["transaction_id"] for m in fresh.movements] == ["d1"]
    assert isinstance(fresh, Wallet)
    assert isinstance(again, Shoe)
    app.close()
