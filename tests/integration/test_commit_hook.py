"""The commit hook (``domain.commits``) and the leaf of every transaction
(``domain.commit_leaf``), on SQLite, PostgreSQL and the in-memory store: every stored event is
in exactly one leaf with the SHA-256 of its stored bytes, leaves follow commit order, a
writer's failure records nothing, and a second kind of row passed through ``app.save(...,
**kwargs)`` commits or rolls back with the events (the interface issue 12 builds on)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest
from eventsourcing.persistence import IntegrityError, ProgrammingError, StoredEvent
from storekit import FailingWriter, WriterRefused

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.commit_leaf import (
    BACKFILL,
    COMMIT,
    LEAF_TOPIC,
    LEAVES_ID,
    PURPOSE,
    leaf_bytes,
    parse_leaf,
)
from domain.commits import CommittedEvent, CommitTransaction, HookedPostgresApplicationRecorder
from domain.ids import stable_id
from domain.leaf_writer import MerkleLeafWriter
from domain.persistence import environment_for
from domain.wallet import Wallet


@pytest.fixture
def app(app_on_every_store: RoundAudit) -> RoundAudit:
    """The in-memory store, SQLite and PostgreSQL (``tests/conftest.py``)."""
    return app_on_every_store


def all_notifications(app: RoundAudit) -> list[Any]:
    out: list[Any] = []
    while True:
        page = app.recorder.select_notifications(
            start=out[-1].id if out else 0, limit=500, inclusive_of_start=False
        )
        if not page:
            return out
        out += page


def leaves(app: RoundAudit) -> list[StoredEvent]:
    return list(app.commit_table(PURPOSE).select_events(LEAVES_ID))


def test_every_event_is_in_exactly_one_leaf_with_the_hash_of_its_bytes(app: RoundAudit) -> None:
    simulate(app, variant="european", rounds=2, players=2)
    simulate(app, variant="boundless", rounds=1, players=3)
    rows = leaves(app)
    assert [r.originator_version for r in rows] == list(range(1, len(rows) + 1))
    assert {r.topic for r in rows} == {LEAF_TOPIC}
    listed = [e for r in rows for e in parse_leaf(bytes(r.state)).entries]
    assert all(parse_leaf(bytes(r.state)).kind == COMMIT for r in rows)
    stored = all_notifications(app)
    assert len(listed) == len(stored) > 100
    for entry, n in zip(listed, stored, strict=True):
        assert entry.notification_id == n.id
        assert entry.key == (UUID(str(n.originator_id)), n.originator_version)
        assert entry.topic == n.topic
        assert entry.sha256 == hashlib.sha256(n.state).hexdigest()
    # one leaf per transaction: a round's command, its shoe's cards and its wallets together
    assert any(
        {e.topic.rpartition(".")[2] for e in parse_leaf(bytes(r.state)).entries}
        >= {"CardDrawn", "CardDealt"}
        for r in rows
    )


def test_a_failing_writer_records_nothing(app: RoundAudit) -> None:
    app.install_commit_writer(FailingWriter())
    app.open_wallet("p1")
    before_events, before_leaves = len(all_notifications(app)), len(leaves(app))
    wallet = app.wallet("p1")
    wallet.deposit("10.00", transaction_id="d1")
    with pytest.raises(WriterRefused, match="the writer refuses"):
        app.save(wallet, fail=True)
    assert len(all_notifications(app)) == before_events
    assert len(leaves(app)) == before_leaves
    assert app.balance("p1") == 0
    wallet = app.wallet("p1")  # the same command again, when nothing refuses
    wallet.deposit("10.00", transaction_id="d1")
    app.save(wallet)
    assert app.balance("p1") == 10
    assert len(leaves(app)) == before_leaves + 1


IDEMPOTENCY = "idempotency_test"


class RecordWriter:
    """A second kind of row, as issue 12 will add (a request fingerprint and its response),
    passed through ``app.save(..., record=(key, bytes))``."""

    purposes = (IDEMPOTENCY,)

    def write(
        self, tx: CommitTransaction, events: Sequence[CommittedEvent], kwargs: Mapping[str, Any]
    ) -> None:
        given = kwargs.get("record")
        if given is None:
            return
        key, response = given
        tx.insert(IDEMPOTENCY, [StoredEvent(stable_id("request", key), 1, "test:record", response)])


def test_a_second_kind_of_row_commits_and_rolls_back_with_the_events(app: RoundAudit) -> None:
    app.install_commit_writer(RecordWriter())
    app.open_wallet("p1")
    w = app.wallet("p1")
    w.deposit("10.00", transaction_id="d1")
    app.save(w, record=("r1", b"first response"))
    table = app.commit_table(IDEMPOTENCY)
    assert table.select_events(stable_id("request", "r1"))[0].state == b"first response"
    # the same request again: its row conflicts, so the new events are not recorded either
    w = app.wallet("p1")
    w.deposit("5.00", transaction_id="d2")
    events_before, leaves_before = len(all_notifications(app)), len(leaves(app))
    with pytest.raises(IntegrityError):
        app.save(w, record=("r1", b"second response"))
    assert len(all_notifications(app)) == events_before
    assert len(leaves(app)) == leaves_before
    assert app.balance("p1") == 10
    assert table.select_events(stable_id("request", "r1"))[0].state == b"first response"
    # a save with no events reaches the writers too
    app.save(record=("r2", b"refused: nothing recorded"))
    assert table.select_events(stable_id("request", "r2"))


def test_concurrent_writers_keep_leaves_in_commit_order(store_env: dict[str, str]) -> None:
    """Several applications (connections) deposit at once: leaves are numbered without gaps and
    their notification ids only grow, and every event is in one of them."""
    first = RoundAudit(env=store_env)
    players = [f"p{i}" for i in range(4)]
    for p in players:
        first.open_wallet(p)
    apps = [RoundAudit(env={**store_env, "CREATE_TABLE": "n"}) for _ in players]
    errors: list[BaseException] = []

    def deposits(a: RoundAudit, player: str) -> None:
        try:
            for i in range(25):
                a.deposit(player, "1.00", transaction_id=f"{player}-{i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=deposits, args=(a, p)) for a, p in zip(apps, players, strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    rows = leaves(first)
    ids = [e.notification_id for r in rows for e in parse_leaf(bytes(r.state)).entries]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert ids == [n.id for n in all_notifications(first)]
    assert all(first.balance(p) == 25 for p in players)
    for a in (first, *apps):
        a.close()


def test_a_store_written_before_seal_at_commit_is_backfilled_once(
    store_env: dict[str, str],
) -> None:
    """Events recorded without the hook (as before this change) are sealed in backfill leaves
    by the first transaction that finds no leaf of this format, before its own leaf."""
    plain = RoundAudit(env=store_env)
    # the recorder as it was: no leaf (the other writers, the shoes' seeds among them, stay)
    plain.commit_hook._writers[:] = [
        w for w in plain.commit_hook._writers if not isinstance(w, MerkleLeafWriter)
    ]
    simulate(plain, variant="european", rounds=1, players=2)
    old = all_notifications(plain)
    assert not leaves(plain)
    plain.close()
    app = RoundAudit(env=store_env)
    app.open_wallet("late")
    rows = leaves(app)
    parsed = [parse_leaf(bytes(r.state)) for r in rows]
    assert [p.kind for p in parsed] == [BACKFILL] * (len(parsed) - 1) + [COMMIT]
    backfilled = [e.notification_id for p in parsed[:-1] for e in p.entries]
    assert backfilled == [n.id for n in old]
    assert parsed[-1].entries[0].originator_id == Wallet.create_id("late")
    app.open_wallet("later")  # no second backfill
    assert parse_leaf(bytes(leaves(app)[-1].state)).kind == COMMIT
    assert len(leaves(app)) == len(rows) + 1
    app.close()


def test_postgres_db_functions_are_refused() -> None:
    class Datastore:
        enable_db_functions = True

    with pytest.raises(ProgrammingError, match="drops the table lock"):
        HookedPostgresApplicationRecorder(Datastore())


def test_the_leaf_format_refuses_what_it_cannot_represent() -> None:
    event = CommittedEvent(1, uuid4(), 1, "a\nb", b"{}")
    with pytest.raises(ValueError, match="cannot be sealed"):
        leaf_bytes(COMMIT, [event])
    good = leaf_bytes(COMMIT, [CommittedEvent(1, uuid4(), 1, "t", b"{}")])
    for bad in (good.replace(b" 1 ", b" 01 ", 1), good[:-1], b"{}", good.replace(b"commit", b"x")):
        with pytest.raises(ValueError):
            parse_leaf(bad)


def test_every_store_gets_the_hook_whatever_its_environment(tmp_path: Path) -> None:
    env = environment_for(f"sqlite:///{tmp_path}/x.db")
    env["APPLICATION_RECORDER_TOPIC"] = "eventsourcing.sqlite:SQLiteApplicationRecorder"
    app = RoundAudit(env=env)
    app.open_wallet("p")
    assert len(leaves(app)) == 1
    app.close()
