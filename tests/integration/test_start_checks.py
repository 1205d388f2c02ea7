"""What ``start_round`` asks the store, on memory, SQLite and PostgreSQL.

A round's start no longer asks the store whether the round or its new shoe exists (the save of
a new aggregate conflicts when one does: ``AuditBase._save_new``), and a table that a round
asks for and that has no record is remembered absent by the repository
(``domain.store.Watched``: an id with no event in the log up to the mark), so a european
round's start reads no aggregate by its id. These tests hold it to what the queries it replaces
guaranteed:

* a round or shoe that exists is refused with the same answer as before, first, whatever else
  is wrong with the command (the checks' old order), and nothing of the refused start is
  recorded;
* a table another writer opens after the absence was remembered is seen by the next start
  (with the catch-up switched off the same start goes through: the scenario needs it), and a
  read that a catch-up overtook is not remembered;
* a start on a table with no record reads no aggregate by its id.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from eventsourcing.application import AggregateNotFoundError

from domain.application import RoundAudit
from domain.errors import AlreadyExists, WrongOrder
from domain.round import Round
from domain.shoe import Shoe
from domain.store import Watched
from domain.table import Table
from tests.integration.test_cache_current import calls_of, count_reads

EUROPEAN = {"variant": "european", "production": False}


def stored(app: RoundAudit, ident: UUID) -> int:
    """How many events the store holds of ``ident``."""
    return len(app.recorder.select_events(ident))


def test_a_round_started_twice_is_refused_as_before(app_on_every_store: RoundAudit) -> None:
    app = app_on_every_store
    rid = app.start_round(table_id="t", round_number=1, **EUROPEAN)
    before = (stored(app, UUID(rid)), stored(app, Shoe.create_id("t", 1)))
    with pytest.raises(AlreadyExists, match=r"^round 1 of table 't' already exists$"):
        app.start_round(table_id="t", round_number=1, **EUROPEAN)
    assert (stored(app, UUID(rid)), stored(app, Shoe.create_id("t", 1))) == before
    assert [
        r.originator_version for r in app._shoe_rounds.select_events(Shoe.create_id("t", 1))
    ] == [1]


def test_an_existing_round_is_told_before_what_else_is_wrong(
    app_on_every_store: RoundAudit,
) -> None:
    """The round's existence was checked first: a start of an existing round that another
    check would also refuse (here the shoe disagrees on production) still says it exists."""
    app = app_on_every_store
    shoe = app.open_shoe(table_id="t", shoe_number=1, kind="live", decks=8, production=False)
    app.start_round(
        table_id="t", round_number=1, variant="european", shoe_id=shoe, production=False
    )
    with pytest.raises(AlreadyExists, match=r"^round 1 of table 't' already exists$"):
        app.start_round(
            table_id="t", round_number=1, variant="european", shoe_id=shoe, production=True
        )
    with pytest.raises(WrongOrder, match="disagree"):  # a new round: the shoe's check answers
        app.start_round(
            table_id="t", round_number=2, variant="european", shoe_id=shoe, production=True
        )


def test_a_rounds_shoe_that_exists_is_refused_and_nothing_recorded(
    app_on_every_store: RoundAudit,
) -> None:
    """Shoe 3 of the table exists (opened by hand), round 3 does not: its start would make
    the same shoe id. Refused as before, with no round, index row or sealed seed behind."""
    app = app_on_every_store
    sid = app.open_shoe(table_id="t", shoe_number=3, kind="live", decks=8, production=False)
    assert UUID(sid) == Shoe.create_id("t", 3)
    shoe_events = stored(app, UUID(sid))
    for order in (None, ["AS", "KD", "9C", "7H", "5S", "4D", "3C", "2H"]):
        with pytest.raises(AlreadyExists, match=r"^shoe 3 of table 't' already exists$"):
            app.start_round(table_id="t", round_number=3, test_order=order, **EUROPEAN)
        assert stored(app, Round.create_id("t", 3)) == 0
        assert stored(app, UUID(sid)) == shoe_events
        assert app._shoe_rounds.select_events(UUID(sid)) == []
        assert app.vault.open(UUID(sid)) is None  # a live shoe: no seed, none sealed for it
    with pytest.raises(WrongOrder, match="live shoe"):  # the variant's check came first
        app.start_round(table_id="t", round_number=3, variant="deluxe", production=False)


def test_a_start_on_a_table_without_record_reads_no_aggregate(
    app_on_every_store: RoundAudit,
) -> None:
    app = app_on_every_store
    app.start_round(table_id="t", round_number=1, **EUROPEAN)  # the table asked for: absent
    tails, gets = count_reads(app)
    for n in (2, 3):
        app.start_round(table_id="t", round_number=n, **EUROPEAN)
    assert gets == []  # not the round, its shoe nor the table: none is asked for
    assert tails == [0, 0]


def test_a_table_another_writer_opens_is_seen_by_the_next_start(
    store_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    one, other = RoundAudit(env=store_env), RoundAudit(env=store_env)
    one.start_round(table_id="t", round_number=1, **EUROPEAN)  # table "t" remembered absent
    other.open_table("t", variant="deluxe", production=False)
    with pytest.raises(WrongOrder, match="is a deluxe table"):
        one.start_round(table_id="t", round_number=2, **EUROPEAN)
    # the scenario needs the catch-up: without it the absence would still be trusted
    one.start_round(table_id="u", round_number=1, **EUROPEAN)
    other.open_table("u", variant="deluxe", production=False)
    monkeypatch.setattr(Watched, "catch_up", lambda self: None)
    one.start_round(table_id="u", round_number=2, **EUROPEAN)
    one.close()
    other.close()


def test_an_absence_overtaken_by_a_catch_up_is_not_remembered(
    store_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read that found no table, overtaken (before it is remembered) by a catch-up passing
    another writer's opening of that table, is not remembered: the next start sees it."""
    one, other = RoundAudit(env=store_env), RoundAudit(env=store_env)
    real = Watched._reconstruct_aggregate
    overtaken: list[bool] = []

    def read_then_overtaken(self: Watched, ident: UUID, *args: Any) -> Any:
        try:
            return real(self, ident, *args)
        except AggregateNotFoundError:
            if self is one.repository and ident == Table.create_id("t") and not overtaken:
                overtaken.append(True)
                other.open_table("t", variant="deluxe", production=False)
                self.catch_up()  # as another thread of one would, before the read reports
            raise

    monkeypatch.setattr(Watched, "_reconstruct_aggregate", read_then_overtaken)
    one.start_round(table_id="t", round_number=1, **EUROPEAN)  # began before the table: fine
    assert overtaken == [True]
    with pytest.raises(WrongOrder, match="is a deluxe table"):
        one.start_round(table_id="t", round_number=2, **EUROPEAN)
    one.close()
    other.close()


def test_a_deluxe_start_reads_its_table_once_and_decides_on_it(
    app_on_every_store: RoundAudit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A start on a table with a record reads the table once (it asked the repository whether
    the table existed, then read it again), and the table it read decides: the variant and
    production checks refuse first, the seats open the round (DLX-1)."""
    app = app_on_every_store
    sid = app.open_shoe(table_id="dx", shoe_number=1, kind="live", decks=1, production=False)
    app.open_wallet("bob", account_type="test")
    app.deposit("bob", "100", transaction_id="d1")
    app.open_table("dx", production=False)
    app.sit("dx", player="bob", seat=3)
    table_id = Table.create_id("dx")
    asked = calls_of(monkeypatch, app.repository, "get")
    with pytest.raises(WrongOrder, match=r"^table 'dx' is a deluxe table, not a european one$"):
        app.start_round(table_id="dx", round_number=2, **EUROPEAN)
    assert asked.count(table_id) == 1
    asked.clear()
    rid = app.start_round(
        table_id="dx", round_number=1, variant="deluxe", shoe_id=sid, production=False
    )
    assert asked.count(table_id) == 1
    assert app.round(rid).seats == {"3": "bob"}
    assert app.table("dx").version == 3  # opened, bob seated, the round begun on it
