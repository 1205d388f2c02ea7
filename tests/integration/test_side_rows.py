"""Rows written with a new shoe or round, in the transaction that records it
(``domain.side_rows``), and saves of new aggregates that never answer success with nothing
recorded (``AuditBase._save_new``), on the in-memory store, SQLite and PostgreSQL.

The attacks: a round whose save fails must leave no sealed seed and no index row behind (a
seed without its shoe would make the same round impossible to start again); a second writer
that starts the same round, opens the same wallet, or races the table a round is started on
must be told, never acknowledged with nothing (or someone else's record) behind the answer."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from uuid import UUID, uuid4

import pytest
from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import ProgrammingError

from domain.application import RoundAudit
from domain.commits import CommittedEvent, CommitTransaction
from domain.errors import AlreadyExists, ConcurrentUpdate, RoundNotFound
from domain.round import Round
from domain.shoe import Shoe
from domain.side_rows import KWARG, SealedSeed, SideRows
from domain.vault import SeedKeyRing
from domain.wallet import Wallet


@pytest.fixture
def app(app_on_every_store: RoundAudit) -> RoundAudit:
    """The in-memory store, SQLite and PostgreSQL (``tests/conftest.py``)."""
    return app_on_every_store


@pytest.fixture
def two(store_env: dict[str, str]) -> Iterator[tuple[RoundAudit, RoundAudit]]:
    """Two applications on one store (SQLite, PostgreSQL): two service processes."""
    first, second = RoundAudit(env=store_env), RoundAudit(env=store_env)
    yield first, second
    first.close()
    second.close()


def indexed(app: RoundAudit, shoe_id: UUID) -> list[UUID]:
    """The rounds the shoe -> rounds index holds for ``shoe_id``."""
    return [UUID(bytes=bytes(s.state)) for s in app._shoe_rounds.select_events(shoe_id)]


class FailingDisk:
    """A commit writer that aborts every transaction carrying side rows (a full disk)."""

    purposes: tuple[str, ...] = ()

    def write(
        self, tx: CommitTransaction, events: Sequence[CommittedEvent], kwargs: Mapping[str, Any]
    ) -> None:
        if KWARG in kwargs:
            raise OSError("disk full")


def live_shoe(app: RoundAudit, table: str = "live-1") -> str:
    return app.open_shoe(table_id=table, shoe_number=1, kind="live", decks=8, production=False)


# ----------------------------------------------------------------- one transaction
def test_an_rng_round_records_its_shoe_seed_and_index_row_together(app: RoundAudit) -> None:
    rid = UUID(app.start_round(table_id="eu-1", round_number=1, variant="european"))
    shoe_id = Shoe.create_id("eu-1", 1)
    assert app.shoe(shoe_id).kind == "rng"
    assert app.vault.open(shoe_id) is not None  # SHOE-3: its sealed seed, openable
    assert indexed(app, shoe_id) == [rid]
    assert app.rounds_in_play(app.shoe(shoe_id)) == [rid]


def test_a_round_whose_save_fails_leaves_no_seed_and_no_index_row(app: RoundAudit) -> None:
    """Nothing half-done: the seed and the index row roll back with the round and its shoe,
    so the same round can be started once the fault is gone."""
    disk = FailingDisk()
    app.install_commit_writer(disk)
    with pytest.raises(OSError, match="disk full"):
        app.start_round(table_id="eu-1", round_number=1, variant="european")
    shoe_id = Shoe.create_id("eu-1", 1)
    assert shoe_id not in app.repository
    assert Round.create_id("eu-1", 1) not in app.repository
    assert app.vault.open(shoe_id) is None
    assert shoe_id not in app._opened_seeds
    assert indexed(app, shoe_id) == []
    app.commit_hook._writers.remove(disk)
    rid = app.start_round(table_id="eu-1", round_number=1, variant="european")
    assert indexed(app, shoe_id) == [UUID(rid)]
    assert app.vault.open(shoe_id) is not None


def test_an_rng_shoe_whose_save_fails_leaves_no_seed(app: RoundAudit) -> None:
    """Nor does the process keep the seed of a shoe that was never recorded; once the save
    commits, the seed it keeps is the one the vault's row opens to."""
    disk = FailingDisk()
    app.install_commit_writer(disk)
    with pytest.raises(OSError, match="disk full"):
        app.open_shoe(table_id="t", shoe_number=1, kind="rng", decks=8, production=True)
    assert app.vault.open(Shoe.create_id("t", 1)) is None
    assert Shoe.create_id("t", 1) not in app._opened_seeds
    app.commit_hook._writers.remove(disk)
    sid = app.open_shoe(table_id="t", shoe_number=1, kind="rng", decks=8, production=True)
    assert app.vault.open(UUID(sid)) is not None
    assert app._opened_seeds[UUID(sid)] == app.vault.open(UUID(sid))


def test_a_new_shoe_keeps_the_seed_its_save_sealed_without_decrypting_it(
    app: RoundAudit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new rng shoe's seed travels beside its save (``SealedSeed``, never shown by repr)
    and is kept once the save commits: neither the save nor the commands after it open the
    row; the kept seed is the one the row seals (a fresh process opens the same)."""
    opened: list[UUID] = []
    ring_open = SeedKeyRing.open

    def counted(ring: SeedKeyRing, shoe_id: UUID, state: bytes) -> bytes:
        opened.append(shoe_id)
        return ring_open(ring, shoe_id, state)

    monkeypatch.setattr(SeedKeyRing, "open", counted)
    sid = UUID(app.open_shoe(table_id="t", shoe_number=1, kind="rng", decks=1, production=True,
                             burn_procedure=True))  # fmt: skip
    rid = UUID(app.start_round(table_id="eu-1", round_number=1, variant="european"))
    app.burn(str(sid))
    assert opened == []
    kept = app._opened_seeds[sid]
    assert app.vault.open(sid) == kept  # the row, decrypted
    assert opened == [sid]
    shoe_of_round = UUID(app.round(str(rid)).shoe_id)
    assert app._opened_seeds[shoe_of_round] == app.vault.open(shoe_of_round)
    sealed = SealedSeed(app.vault.sealed_row(sid, kept), kept)
    assert kept.hex() not in repr(SideRows(sealed_seeds=(sealed,)))


def test_side_rows_without_events_are_refused(app: RoundAudit) -> None:
    shoe_id, round_id = uuid4(), uuid4()
    with pytest.raises(ProgrammingError, match="only with the events"):
        app.save(**SideRows(shoe_rounds=((shoe_id, round_id),)).save_kwargs())
    assert indexed(app, shoe_id) == []
    wallet = Wallet.open("p")
    with pytest.raises(ProgrammingError, match="must be SideRows"):
        app.save(wallet, **{KWARG: "rows"})
    assert wallet.id not in app.repository  # the events rolled back with the refusal


def test_rounds_on_one_live_shoe_are_indexed_in_order(app: RoundAudit) -> None:
    shoe = live_shoe(app)
    start = {"table_id": "live-1", "variant": "european", "shoe_id": shoe, "production": False}
    rids = [UUID(app.start_round(**start, round_number=n)) for n in (1, 2, 3)]
    assert indexed(app, UUID(shoe)) == rids
    versions = [s.originator_version for s in app._shoe_rounds.select_events(UUID(shoe))]
    assert versions == [1, 2, 3]


# ------------------------------------------------------------------- two writers
def test_the_same_round_started_by_two_writers_is_refused_not_acknowledged(
    two: tuple[RoundAudit, RoundAudit], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second writer passed its existence check before the first committed (the race is
    forced by hiding the first's round from the check): its save conflicts, and it answers
    already-exists instead of returning the id of a round it did not record."""
    first, second = two
    shoe = live_shoe(first)
    start = {"table_id": "live-1", "round_number": 1, "variant": "european", "shoe_id": shoe}
    rid = first.start_round(**start, production=False)
    recorded = list(first.events.get(UUID(rid)))
    real_contains = type(second.repository).__contains__
    monkeypatch.setattr(
        type(second.repository),
        "__contains__",
        lambda repo, ident: False if ident == UUID(rid) else real_contains(repo, ident),
    )
    with pytest.raises(AlreadyExists, match="round 1 of table 'live-1' already exists"):
        second.start_round(**start, production=False)
    monkeypatch.undo()
    assert indexed(first, UUID(shoe)) == [UUID(rid)]  # one index row: the first writer's
    assert list(first.events.get(UUID(rid))) == recorded  # nothing added to the round


def test_the_same_wallet_opened_by_two_writers_keeps_the_first(
    two: tuple[RoundAudit, RoundAudit], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = two
    first.open_wallet("p", account_type="real")
    real_get = second.repository.get

    def blind_get(aggregate_id: UUID, *args: Any, **kwargs: Any) -> Any:
        if aggregate_id == Wallet.create_id("p"):
            raise AggregateNotFoundError(aggregate_id)
        return real_get(aggregate_id, *args, **kwargs)

    monkeypatch.setattr(second.repository, "get", blind_get)
    with pytest.raises(AlreadyExists, match="wallet of player 'p' already exists"):
        second.open_wallet("p", account_type="fun")
    monkeypatch.undo()
    assert second.wallet("p").account_type == "real"


def test_a_round_started_while_its_table_changes_records_nothing_and_says_so(
    two: tuple[RoundAudit, RoundAudit], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deluxe round's first save also changes its table (DLX-1: the seats of the round).
    Another writer seats a player between the read and the save: the save conflicts on the
    table. The command answers concurrent-update with nothing recorded (no round, no index
    row), and the same command sent again starts the round."""
    first, second = two
    for player in ("rae", "sam"):
        first.open_wallet(player)
        first.deposit(player, "100", transaction_id=f"dep-{player}")
    first.open_table("prod", production=True)
    first.sit("prod", player="rae", seat=1)
    shoe = first.open_shoe(table_id="prod", shoe_number=1, kind="live", decks=8, production=True)
    real_save: Callable[..., Any] = second.save
    raced: list[bool] = []

    def save_after_a_rival(*objs: Any, **kwargs: Any) -> Any:
        if not raced:
            raced.append(True)
            first.sit("prod", player="sam", seat=2)
        return real_save(*objs, **kwargs)

    monkeypatch.setattr(second, "save", save_after_a_rival)
    start = {"table_id": "prod", "round_number": 1, "variant": "deluxe", "shoe_id": shoe}
    with pytest.raises(ConcurrentUpdate, match="nothing was recorded"):
        second.start_round(**start)
    with pytest.raises(RoundNotFound):
        first.round(Round.create_id("prod", 1))
    assert indexed(first, UUID(shoe)) == []
    rid = second.start_round(**start)
    assert first.round(rid).id == UUID(rid)
    assert indexed(first, UUID(shoe)) == [UUID(rid)]
    assert set(first.table("prod").seats.values()) == {"rae", "sam"}


# ------------------------------------------------------------------ boundless starts
def test_a_boundless_round_records_where_it_starts_in_its_own_transaction(
    app: RoundAudit,
) -> None:
    """The round index and the verifier read a boundless round from its start position: it is
    the notification id of the shared hand's first event, written by that event's transaction
    (no process can stop between the two)."""
    shoe = live_shoe(app, "bl-1")
    start = {"table_id": "bl-1", "variant": "boundless", "shoe_id": shoe, "production": False}
    rid = UUID(app.start_round(**start, round_number=1))
    first = [
        n
        for n in app.recorder.select_notifications(start=1, limit=100)
        if n.originator_id == rid and n.originator_version == 1
    ]
    assert [app.boundless.start_position(rid)] == [n.id for n in first]
    assert indexed(app, UUID(shoe)) == [rid]


def test_a_boundless_round_whose_save_fails_leaves_no_start_position(app: RoundAudit) -> None:
    shoe = live_shoe(app, "bl-1")
    start = {"table_id": "bl-1", "variant": "boundless", "shoe_id": shoe, "production": False}
    disk = FailingDisk()
    app.install_commit_writer(disk)
    rid = Round.create_id("bl-1", 1)
    with pytest.raises(OSError, match="disk full"):
        app.start_round(**start, round_number=1)
    assert app.boundless.start_position(rid) is None
    assert indexed(app, UUID(shoe)) == []
    app.commit_hook._writers.remove(disk)
    assert UUID(app.start_round(**start, round_number=1)) == rid
    assert app.boundless.start_position(rid) is not None
    assert indexed(app, UUID(shoe)) == [rid]


def test_a_start_position_for_a_round_not_in_the_save_is_refused(app: RoundAudit) -> None:
    wallet = Wallet.open("p")
    with pytest.raises(ProgrammingError, match="first event is not in this save"):
        app.save(wallet, **SideRows(boundless_starts=(uuid4(),)).save_kwargs())
    assert wallet.id not in app.repository
