"""The cache after a save (``domain.store.keep_saved``), on memory, SQLite and PostgreSQL.

A committed save puts a copy of each aggregate it saved into the aggregate cache, so the next
command's ``get`` starts from it instead of reading back and applying the events this process
has just written. That is right only if the saved aggregate *is* what its stored events
rebuild: these tests compare, after every save of rounds of each variant, every aggregate the
save left in the cache with a rebuild from the store (the same class, version and state, down
to the types of the values), check that the cache is then used (no event read back), and that
another writer's events are still seen (the cache is fast-forwarded as before). A refused or
failed command leaving the cache as stored is ``test_cache_copies.py``'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

import domain.store
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.layered import LayeredMap
from domain.persistence import environment_for
from domain.rules import VARIANTS
from domain.store import project
from tests.pg import fresh_database


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str] | None]:
    """The environment of a fresh store (None: the in-memory store)."""
    if request.param == "memory":
        yield None
    elif request.param == "sqlite":
        yield environment_for(f"sqlite:///{tmp_path}/events.db")
    else:
        with fresh_database(request.getfixturevalue("postgres_url")) as url:
            yield environment_for(url)


def normal(value: Any) -> Any:
    """``value`` as nested tuples naming every type, so that equal means the same values of
    the same types (a list is not a tuple, an int is not a Decimal)."""
    kind = type(value).__name__
    if isinstance(value, dict):
        return (kind, sorted((repr(normal(k)), normal(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (kind, [normal(v) for v in value])
    if isinstance(value, (set, frozenset)):
        return (kind, sorted(repr(normal(v)) for v in value))
    if isinstance(value, LayeredMap):  # a wallet's persistent map: its entries, in order
        return (kind, [(normal(k), normal(v)) for k, v in value.items()])
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (kind, [(f.name, normal(getattr(value, f.name))) for f in dataclasses.fields(value)])
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return (kind, normal(vars(value)))
    if isinstance(value, Decimal):
        return (kind, str(value))
    return (kind, value)


def rebuilt(app: RoundAudit, ident: UUID) -> Any:
    return project(None, app.events.get(ident))


def test_normal_tells_types_and_values_apart() -> None:
    assert normal([1, Decimal("2.0")]) == normal([1, Decimal("2.0")])
    assert normal([1]) != normal((1,))
    assert normal({"a": 1}) != normal({"a": Decimal(1)})
    assert normal(Decimal("2.0")) != normal(Decimal("2.00"))


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_aggregate_a_save_leaves_in_the_cache_equals_its_rebuild(
    env: dict[str, str] | None, variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = RoundAudit(env=env)
    checked: dict[str, int] = {}
    real = domain.store.keep_saved

    def keep_and_compare(cache: Any, saved: Any, flat: Any, new: Any) -> None:
        real(cache, saved, flat, new)
        assert cache is app.repository.cache
        for ident in saved:
            try:
                kept: Any = cache.get(ident)
            except KeyError:
                continue
            assert kept is not saved[ident]  # a copy: the command's object is not cached
            fresh = rebuilt(app, ident)
            assert type(kept) is type(fresh)
            assert kept.version == fresh.version
            state = {k: v for k, v in vars(kept).items() if k != "_pending_events"}
            again = {k: v for k, v in vars(fresh).items() if k != "_pending_events"}
            assert normal(state) == normal(again), f"{type(kept).__name__} differs"
            assert kept.pending_events == []
            checked[type(kept).__name__] = checked.get(type(kept).__name__, 0) + 1

    monkeypatch.setattr(domain.store, "keep_saved", keep_and_compare)
    players = 3 if variant != "boundless" else 4
    report = simulate(app, variant=variant, rounds=4, players=players, table=f"kept-{variant}")
    assert report.rounds == 4
    expected = {"Round", "Shoe", "Wallet"} if variant != "boundless" else {"SharedHand", "Shoe"}
    if variant == "deluxe":
        expected.add("Table")
    assert expected <= set(checked), checked
    app.close()


def test_the_next_command_starts_from_the_saved_copy(env: dict[str, str] | None) -> None:
    app = RoundAudit(env=env)
    simulate(app, variant="european", rounds=1, players=2, table="kept-next")
    app.open_wallet("p", account_type="test")
    app.deposit("p", "5.00", transaction_id="d1")
    wid = app.wallet("p").id
    app.deposit("p", "7.00", transaction_id="d2")  # saved: the cache holds its copy
    assert app.repository.cache is not None
    kept: Any = app.repository.cache.get(wid)
    assert (kept.version, kept.balance) == (3, Decimal("12.00"))
    reads: list[Any] = []
    real = app.events.get

    def counting(originator_id: UUID, **kwargs: Any) -> Any:
        out = list(real(originator_id, **kwargs))
        reads.append((originator_id, kwargs.get("gt"), len(out)))
        return out

    app.events.get = counting  # type: ignore[method-assign]
    assert app.balance("p") == Decimal("12.00")
    assert reads == [(wid, 3, 0)]  # fast-forwarded from the saved version: nothing new
    app.close()


def test_another_writers_events_are_still_seen(tmp_path: Path) -> None:
    env = environment_for(f"sqlite:///{tmp_path}/events.db")
    one, two = RoundAudit(env=env), RoundAudit(env=env)
    one.open_wallet("p", account_type="test")
    one.deposit("p", "5.00", transaction_id="d1")  # one's cache: version 2
    two.deposit("p", "7.00", transaction_id="d2")  # another writer: version 3
    assert one.balance("p") == Decimal("12.00")
    one.deposit("p", "1.00", transaction_id="d3")  # written at version 4, not refused
    assert two.balance("p") == one.balance("p") == Decimal("13.00")
    assert two.wallet("p").version == 4
    one.close()
    two.close()
