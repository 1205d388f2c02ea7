"""PostgreSQL's group commit in one pipeline (``domain.commits.HookedPostgresApplicationRecorder``).

A group of saves is sent as the table lock, NOTIFY and each save's insert, then (with the ids
they got) every save's writers' rows and the COMMIT: two round trips for the group. It stores
exactly the rows the savepoint-per-save path stores, and when the database refuses one of its
statements (an event at a version taken, a writer's row under a key taken, which the database
reports only with the COMMIT) nothing of the group is stored by it and the group is committed
again with a savepoint per save: the conflict is its save's alone.

Rows are inserted by ``domain.pg_group.insert_rows`` (plain parameters up to ``VALUES_ROWS``
rows, the library's composite array beyond): the same rows, order and notification ids as the
library's own statement, and a conflicting row refuses the whole statement.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from uuid import NAMESPACE_URL, uuid5

import psycopg
import pytest
from eventsourcing.persistence import IntegrityError, StoredEvent
from eventsourcing.postgres import PostgresAggregateRecorder, PostgresApplicationRecorder
from storekit import FailingWriter, WriterRefused

import domain.commits
from domain.application import RoundAudit
from domain.commit_leaf import LEAVES_ID, PURPOSE, parse_leaf
from domain.commits import CommittedEvent, CommitTransaction, HookedPostgresApplicationRecorder
from domain.errors import WalletNotFound
from domain.group_commit import Pending
from domain.persistence import environment_for
from domain.pg_group import VALUES_ROWS, commit_with_savepoints, insert_rows
from domain.wallet import Wallet

pytestmark = pytest.mark.postgres

CLAIMS = "claims"


class ClaimWriter:
    """Writes one row per save under the key the save names (``claim=...``): a second save
    naming the same key is refused by the table's primary key, at the COMMIT."""

    purposes: tuple[str, ...] = (CLAIMS,)

    def write(
        self, tx: CommitTransaction, events: Sequence[CommittedEvent], kwargs: Mapping[str, Any]
    ) -> None:
        claim = kwargs.get("claim")
        if claim is not None:
            key = uuid5(NAMESPACE_URL, str(claim))
            tx.insert(CLAIMS, [StoredEvent(key, 1, "claim", str(len(events)).encode())])


@pytest.fixture
def apps(postgres_url: str) -> Iterator[Callable[[], RoundAudit]]:
    from pg import fresh_database

    opened: list[RoundAudit] = []
    with_dbs: list[Any] = []

    def make() -> RoundAudit:
        ctx = fresh_database(postgres_url)
        url = ctx.__enter__()
        with_dbs.append(ctx)
        app = RoundAudit(env=environment_for(url))
        app.install_commit_writer(ClaimWriter())
        app.install_commit_writer(FailingWriter())
        opened.append(app)
        return app

    yield make
    for app in opened:
        app.close()
    for ctx in reversed(with_dbs):
        ctx.__exit__(None, None, None)


def _recorder(app: RoundAudit) -> HookedPostgresApplicationRecorder:
    recorder = app.recorder
    assert isinstance(recorder, HookedPostgresApplicationRecorder)
    return recorder


def _opening(app: RoundAudit, player: str) -> list[StoredEvent]:
    wallet = Wallet.open(player, account_type="test")
    return [app.mapper.to_stored_event(e) for e in wallet.collect_events()]


def _batch(app: RoundAudit, saves: list[tuple[str, dict[str, Any]]]) -> list[Pending]:
    return [Pending(_opening(app, player), kwargs) for player, kwargs in saves]


def _rows(app: RoundAudit) -> dict[str, Any]:
    """Everything the group stored: the log, the leaves (their entries) and the claims."""
    notes = app.recorder.select_notifications(0, 1000, inclusive_of_start=False)
    leaves = [
        [(e.notification_id, e.originator_id, e.version, e.sha256) for e in parse_leaf(
            bytes(r.state)).entries]
        for r in app.commit_table(PURPOSE).select_events(LEAVES_ID)
    ]  # fmt: skip
    claims = app.commit_table(CLAIMS)
    return {
        "log": [(n.originator_id, n.originator_version, n.topic, n.state) for n in notes],
        "leaves": leaves,
        "claims": {
            k: [bytes(r.state) for r in claims.select_events(uuid5(NAMESPACE_URL, k))]
            for k in ("a", "b", "c")
        },
    }


def _count(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(HookedPostgresApplicationRecorder, name)

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(HookedPostgresApplicationRecorder, name, counting)
    return calls


def _fallbacks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the groups committed again with a savepoint per save."""
    calls: list[int] = []

    def counting(*args: Any) -> None:
        calls.append(1)
        commit_with_savepoints(*args)

    monkeypatch.setattr(domain.commits, "commit_with_savepoints", counting)
    return calls


def test_a_group_is_pipelined_and_stores_what_savepoints_store(
    apps: Callable[[], RoundAudit], monkeypatch: pytest.MonkeyPatch
) -> None:
    saves = [("ann", {"claim": "a"}), ("bob", {}), ("cat", {"claim": "c"})]
    piped, saved = apps(), apps()
    fallbacks = _fallbacks(monkeypatch)
    batch = _batch(piped, saves)
    _recorder(piped)._commit_group(batch)
    assert fallbacks == []  # nothing refused: the pipeline committed the group
    assert all(item.error is None for item in batch)
    ids = [i for item in batch for i in item.ids or ()]
    assert ids == sorted(ids)
    assert len(ids) == len(saves)

    reference = [Pending(item.events, item.kwargs) for item in batch]  # the same events
    recorder = _recorder(saved)
    commit_with_savepoints(recorder, reference, [], recorder._write_in)
    assert [item.ids for item in reference] == [item.ids for item in batch]
    assert _rows(piped) == _rows(saved)
    for player in ("ann", "bob", "cat"):
        assert piped.balance(player) == 0


def test_an_event_conflict_in_a_pipelined_group_is_its_save_alone(
    apps: Callable[[], RoundAudit], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = apps()
    app.open_wallet("bob", account_type="test")  # bob's opening: its version 1 is taken
    before = _rows(app)
    fallbacks = _fallbacks(monkeypatch)
    batch = _batch(app, [("ann", {"claim": "a"}), ("bob", {"claim": "b"}), ("cat", {})])
    _recorder(app)._commit_group(batch)
    assert len(fallbacks) == 1
    assert isinstance(batch[1].error, IntegrityError)
    assert batch[1].ids is None
    assert batch[0].error is None
    assert batch[2].error is None
    after = _rows(app)
    assert len(after["log"]) == len(before["log"]) + 2  # ann's and cat's, once each
    assert after["claims"] == {"a": [after["claims"]["a"][0]], "b": [], "c": []}
    assert len(after["leaves"]) == len(before["leaves"]) + 2
    assert app.balance("ann") == 0
    assert app.balance("cat") == 0


def test_a_writer_conflict_refused_at_the_commit_is_its_save_alone(
    apps: Callable[[], RoundAudit], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = apps()
    fallbacks = _fallbacks(monkeypatch)
    batch = _batch(app, [("ann", {"claim": "a"}), ("bob", {"claim": "a"}), ("cat", {})])
    _recorder(app)._commit_group(batch)
    assert len(fallbacks) == 1  # the pipeline's COMMIT was refused: nothing of it stored
    assert batch[0].error is None
    assert batch[2].error is None
    assert isinstance(batch[1].error, IntegrityError)
    rows = _rows(app)
    assert [o for o, *_ in rows["log"]] == [batch[0].events[0].originator_id,
                                           batch[2].events[0].originator_id]  # fmt: skip
    assert len(rows["claims"]["a"]) == 1
    assert len(rows["leaves"]) == 2
    with pytest.raises(WalletNotFound):
        app.balance("bob")


def test_a_writer_that_raises_fails_its_save_alone(
    apps: Callable[[], RoundAudit], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = apps()
    alone = _count(monkeypatch, "_commit_alone")
    batch = _batch(app, [("ann", {}), ("bob", {"fail": True}), ("cat", {})])
    _recorder(app)._commit_group(batch)
    assert len(alone) == 3  # raised before the COMMIT was sent: each save on its own
    assert isinstance(batch[1].error, WriterRefused)
    assert batch[0].error is None
    assert batch[2].error is None
    assert len(_rows(app)["log"]) == 2


def test_no_event_saves_in_a_group_run_their_writers(apps: Callable[[], RoundAudit]) -> None:
    app = apps()
    batch = [Pending([], {"claim": "b"}), *_batch(app, [("ann", {"claim": "a"})])]
    _recorder(app)._commit_group(batch)
    assert batch[0].error is None
    assert batch[0].ids is None
    assert batch[1].error is None
    assert batch[1].ids
    rows = _rows(app)
    assert len(rows["claims"]["a"]) == 1
    assert len(rows["claims"]["b"]) == 1
    assert len(rows["leaves"]) == 1


def _events(n: int, tag: str) -> list[StoredEvent]:
    """``n`` events of two streams, interleaved, with states of different lengths."""
    streams = [uuid5(NAMESPACE_URL, f"{tag}-{s}") for s in (0, 1)]
    return [
        StoredEvent(streams[i % 2], i // 2 + 1, f"topic.{tag}.{i}", bytes([i % 256]) * (i * 7))
        for i in range(n)
    ]


def _log(app: RoundAudit) -> list[tuple[Any, ...]]:
    notes = app.recorder.select_notifications(0, 1000, inclusive_of_start=False)
    return [(n.id, n.originator_id, n.originator_version, n.topic, bytes(n.state)) for n in notes]


@pytest.mark.parametrize("sizes", [(1, 2, 1), (3, VALUES_ROWS, VALUES_ROWS + 1, 1)])
def test_events_are_stored_as_the_librarys_statement_stores_them(
    apps: Callable[[], RoundAudit], sizes: tuple[int, ...]
) -> None:
    """Saves of 1, 2, 3 and ``VALUES_ROWS`` events (plain parameters) and of one more (the
    library's composite array), alone and grouped: the same log and notification ids as the
    library's own insert of the same events."""
    ours, library = apps(), apps()
    saves = [_events(n, f"s{k}") for k, n in enumerate(sizes)]
    got = [_recorder(ours).insert_events(events) for events in saves[:2]]  # each alone
    batch = [Pending(events, {}) for events in saves[2:]]
    _recorder(ours)._commit_group(batch)  # a group, in one pipeline
    got += [item.ids for item in batch]
    expected = []
    recorder = _recorder(library)
    for events in saves:
        with recorder.datastore.transaction(commit=True) as curs:
            PostgresApplicationRecorder._insert_stored_events(recorder, curs, events)
            expected.append(recorder._fetch_ids_after_insert_events(curs, events))
    assert got == expected
    assert _log(ours) == _log(library)
    assert len(_log(ours)) == sum(sizes)


@pytest.mark.parametrize("n", [1, 4, VALUES_ROWS + 2])
def test_a_writers_rows_are_stored_as_the_librarys_statement_stores_them(
    apps: Callable[[], RoundAudit], n: int
) -> None:
    ours, library = apps(), apps()
    rows = _events(n, "claims")
    _recorder(ours).transact(lambda tx: tx.insert(CLAIMS, rows))
    table = library.commit_table(CLAIMS)
    assert isinstance(table, PostgresAggregateRecorder)
    with table.datastore.transaction(commit=True) as curs:
        PostgresAggregateRecorder._insert_stored_events(table, curs, rows)
    for stream in {r.originator_id for r in rows}:
        mine = ours.commit_table(CLAIMS).select_events(stream)
        theirs = table.select_events(stream)
        assert [(r.originator_version, r.topic, bytes(r.state)) for r in mine] == [
            (r.originator_version, r.topic, bytes(r.state)) for r in theirs
        ]
        assert len(mine) == len([r for r in rows if r.originator_id == stream])


@pytest.mark.parametrize("n", [3, VALUES_ROWS + 1])
def test_a_conflicting_row_refuses_the_whole_statement(
    apps: Callable[[], RoundAudit], n: int
) -> None:
    app = apps()
    recorder = _recorder(app)
    rows = _events(n, "dup")
    recorder.insert_events(rows[-1:])  # the last row's stream and version are taken
    before = _log(app)
    refused = (IntegrityError, psycopg.IntegrityError)
    with pytest.raises(refused), recorder.datastore.transaction(commit=True) as curs:
        insert_rows(curs, recorder, rows, ids=True)
    assert _log(app) == before
    with pytest.raises(IntegrityError):
        recorder.insert_events(rows)
    assert _log(app) == before


# ------------------------------------------------------------------ libpq's own calls
def _leaf_rows(app: RoundAudit) -> list[tuple[int, str, bytes]]:
    return [
        (r.originator_version, r.topic, bytes(r.state))
        for r in app.commit_table(PURPOSE).select_events(LEAVES_ID)
    ]


def _writer_reads(tx: CommitTransaction, last_of: Any) -> Any:
    """What a writer reads in its transaction: the last leaf, another id's last row (none),
    and the log by pages, bounded and not."""
    return (
        tx.last(PURPOSE, last_of),
        tx.last(PURPOSE, uuid5(NAMESPACE_URL, "nobody")),
        tx.events(after=0, before=None, limit=1000),
        tx.events(after=1, before=3, limit=1000),
        tx.events(after=0, before=None, limit=2),
    )


def test_a_writers_reads_in_the_pipeline_are_the_cursors(
    apps: Callable[[], RoundAudit],
) -> None:
    """A writer's ``last`` and ``events`` in a group's pipeline (libpq's own calls, binary
    rows) read what they read through psycopg's cursor (``_PgTx``, the savepoint path and
    ``transact``); its ``append`` and ``insert`` store the same rows."""
    app = apps()
    recorder = _recorder(app)
    for player in ("ann", "bob", "cat"):
        app.open_wallet(player, account_type="test")
    seen: dict[str, Any] = {}

    class Reader:
        purposes: tuple[str, ...] = ()

        def write(self, tx: Any, events: Sequence[CommittedEvent], kwargs: Any) -> None:
            if kwargs.get("read"):
                seen[kwargs["read"]] = _writer_reads(tx, LEAVES_ID)

    recorder.install(Reader(), {})
    batch = _batch(app, [("dan", {"read": "pipelined"}), ("eve", {"claim": "a"})])
    recorder._commit_group(batch)
    assert all(item.error is None for item in batch)
    by_cursor = recorder.transact(lambda tx: _writer_reads(tx, LEAVES_ID))
    pipelined = seen["pipelined"]
    assert pipelined[0] is not None
    # dan's own leaf, appended by the leaf writer (installed first) in the same transaction
    assert (pipelined[0].originator_version, pipelined[0].state) == (4, _leaf_rows(app)[3][2])
    assert pipelined[1] is None
    # the group's events are inserted before its writers run: the cursor reads the same log
    log = by_cursor[2]
    assert pipelined[2] == log[: len(pipelined[2])]
    assert [e.notification_id for e in pipelined[2]] == [1, 2, 3, 4, 5]  # the group's too
    assert pipelined[3] == by_cursor[3]
    assert pipelined[4] == by_cursor[4]
    assert all(isinstance(e, CommittedEvent) for e in pipelined[2])
    assert len(_leaf_rows(app)) == 5


def test_a_group_commits_after_its_statements_were_deallocated(
    apps: Callable[[], RoundAudit], monkeypatch: pytest.MonkeyPatch
) -> None:
    """psycopg deallocates every statement of a session when it sees a ROLLBACK there (the
    savepoint path's ``ROLLBACK TO``): a group whose statements are gone is committed on its
    connection all the same, its statements prepared again, with the rows the savepoint
    path stores."""
    from domain import pg_group

    piped, saved = apps(), apps()
    recorder = _recorder(piped)
    zed = _opening(piped, "zed")
    assert recorder.insert_events(zed)  # the statements prepared
    fallbacks = _fallbacks(monkeypatch)
    dropped = 0
    for conn, names in list(pg_group.PREPARED.items()):
        if names and not conn.closed:
            conn.pgconn.exec_(b"DEALLOCATE ALL")  # idle in the pool here
            dropped += 1
    assert dropped >= 1
    batch = _batch(piped, [("ann", {"claim": "a"}), ("bob", {}), ("cat", {"claim": "c"})])
    recorder._commit_group(batch)
    assert fallbacks == []
    assert all(item.error is None and item.ids for item in batch)
    alone = _opening(piped, "dan")
    assert recorder.insert_events(alone, claim="b")

    reference = _recorder(saved)
    reference.insert_events(zed)
    ref = [Pending(item.events, item.kwargs) for item in batch]
    commit_with_savepoints(reference, ref, [], reference._write_in)
    reference.insert_events(alone, claim="b")
    assert _rows(piped) == _rows(saved)
    assert _leaf_rows(piped) == _leaf_rows(saved)


def test_a_lost_connection_is_retried_as_before(
    apps: Callable[[], RoundAudit], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every pooled connection lost before a group (the pipeline's first statement fails):
    each save is committed alone, retried on a new connection, and stored once; so is a
    save alone; nothing is stored twice."""
    app = apps()
    recorder = _recorder(app)
    app.open_wallet("zed", account_type="test")  # pooled connections, statements prepared
    pool = recorder.datastore.pool
    alone = _count(monkeypatch, "_commit_alone")
    _terminate_others(pool)
    batch = _batch(app, [("ann", {"claim": "a"}), ("bob", {}), ("cat", {"claim": "c"})])
    recorder._commit_group(batch)
    assert len(alone) == 3  # failed before its COMMIT was sent: each save alone
    assert all(item.error is None and item.ids for item in batch)
    _terminate_others(pool)
    assert recorder.insert_events(_opening(app, "dan"), claim="b")
    rows = _rows(app)
    assert len(rows["log"]) == 5
    assert {k: len(v) for k, v in rows["claims"].items()} == {"a": 1, "b": 1, "c": 1}
    assert len(_leaf_rows(app)) == 5
    for player in ("ann", "bob", "cat", "dan"):
        assert app.balance(player) == 0


def test_a_save_commits_when_one_of_its_statements_was_deallocated(
    apps: Callable[[], RoundAudit], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One statement gone, the others held (the leaf's, prepared and run before it in the
    same pipeline): the save is committed on its connection, the missing one prepared again,
    the others not (which the server would refuse: they exist)."""
    app = apps()
    recorder = _recorder(app)
    with recorder.datastore.get_connection() as held:

        @contextlib.contextmanager
        def the_same() -> Iterator[Any]:
            yield held

        monkeypatch.setattr(recorder.datastore, "get_connection", the_same)
        assert recorder.insert_events(_opening(app, "ann"), claim="a")  # all prepared
        found = held.pgconn.exec_(
            b"SELECT name FROM pg_prepared_statements WHERE statement LIKE '%claims%'"
        )
        assert found.ntuples == 1
        held.pgconn.exec_(b"DEALLOCATE " + bytes(found.get_value(0, 0) or b""))
        assert recorder.insert_events(_opening(app, "bob"), claim="b")
        monkeypatch.undo()
    rows = _rows(app)
    assert len(rows["log"]) == 2
    assert {k: len(v) for k, v in rows["claims"].items()} == {"a": 1, "b": 1, "c": 0}
    assert len(_leaf_rows(app)) == 2


def _terminate_others(pool: Any) -> None:
    """Terminate every other backend of the pool's database (a server's restart, say)."""
    with psycopg.connect(pool.conninfo, **{**pool.kwargs, "autocommit": True}) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


def test_a_store_of_text_originator_ids_is_refused_by_the_pipeline() -> None:
    """The pipeline sends originator ids as binary UUIDs: a datastore whose ids are text
    (the library's ``originator_id_type``, which no store URL of ours sets) is refused
    before anything is sent, not written wrongly."""
    from types import SimpleNamespace

    from eventsourcing.persistence import ProgrammingError

    from domain.pg_group import Pipe

    with pytest.raises(ProgrammingError, match="uuid"):
        Pipe(SimpleNamespace(pgconn=None), SimpleNamespace(originator_id_type="text"))


def test_a_save_alone_without_events_writes_its_rows_once(apps: Callable[[], RoundAudit]) -> None:
    """A save with no events (an idempotency refusal's record, say) alone: its writers' rows
    in one transaction without the table's lock; the same key again is refused with the
    library's ``IntegrityError`` and nothing of it is stored."""
    app = apps()
    recorder = _recorder(app)
    assert recorder.insert_events([], claim="a") is None
    with pytest.raises(IntegrityError):
        recorder.insert_events([], claim="a")
    rows = _rows(app)
    assert rows["log"] == []
    assert rows["claims"] == {"a": [b"0"], "b": [], "c": []}
    assert _leaf_rows(app) == []
