"""The event store, for real, on SQLite and PostgreSQL (``store_env`` runs each test on both).

What this pins: values come back with their exact types through ``OrjsonTranscoder``; the
notification log is ordered and gap-free for successful saves; optimistic concurrency refuses
the second writer and leaves nothing half-applied, also when several aggregates are saved at
once; SQLite files are in WAL mode; and ``environment_for`` refuses malformed URLs.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4, uuid5

import orjson
import psycopg
import pytest
from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import Aggregate, event
from eventsourcing.persistence import (
    DatetimeAsISO,
    DecimalAsStr,
    IntegrityError,
    JSONTranscoder,
    PersistenceError,
    RecordConflictError,
    Transcoding,
    TranscodingNotRegisteredError,
    UUIDAsHex,
)
from eventsourcing.utils import resolve_topic
from pg import fresh_database, libpq_url

from domain.persistence import (
    DEFAULT_DATABASE_URL,
    DatabaseURLError,
    OrjsonTranscoder,
    environment_for,
    redact_url,
    sqlite_path,
)

# --------------------------------------------------------------------------------------------
# A small aggregate with every awkward type the model stores
# --------------------------------------------------------------------------------------------

TABLE_NS = UUID("6f1c1f4e-4a53-4c39-9d43-0d1b2c3e4f50")
PARIS_SUMMER = timezone(timedelta(hours=2), "CEST")
UNICODE_NOTE = 'Crème brûlée ♠♥♦♣ 🂡 中文 \u2028 tab\t nul\x00 "quoted" \\ end'


class Ledger(Aggregate):
    @event("Opened")
    def __init__(
        self,
        *,
        amount: Decimal,
        ref: UUID,
        opened_at: datetime,
        details: dict[str, Any],
        note: str,
    ) -> None:
        self.amount = amount
        self.ref = ref
        self.opened_at = opened_at
        self.details = details
        self.note = note
        self.deltas: list[Decimal] = []

    @event("Adjusted")
    def adjust(self, delta: Decimal, by: str = "") -> None:
        self.amount += delta
        self.deltas.append(delta)


class StoreApp(Application[UUID]):
    """A plain application on whatever store the environment names."""


def open_ledger(amount: str = "10.50", note: str = UNICODE_NOTE) -> Ledger:
    return Ledger(
        amount=Decimal(amount),
        ref=uuid5(TABLE_NS, "table-7/round-42"),
        opened_at=datetime(2024, 7, 14, 21, 30, 5, 123456, tzinfo=PARIS_SUMMER),
        details={
            "limits": {"min": Decimal("5.00"), "max": Decimal("1E+3")},
            "seats": [1, 2, 3],
            "players": [{"id": uuid4(), "stake": Decimal("0.10")}, {"id": uuid4(), "stake": None}],
            "deadline": datetime(2024, 7, 14, 19, 31, tzinfo=UTC),
            "naive": datetime(2024, 7, 14, 12, 0),  # noqa: DTZ001 (naive on purpose)
            "flags": {"insured": False, "ratio": 1.5, "big": 2**62},
            "pair": (Decimal("2.5"), "AS"),
            "empty": {"list": [], "dict": {}},
        },
        note=note,
    )


@pytest.fixture
def apps(store_env: dict[str, str]) -> Iterator[list[StoreApp]]:
    """Open applications on the store of this test; call ``new()`` for another one."""
    opened: list[StoreApp] = []
    yield opened
    for app in opened:
        app.close()


def new(apps: list[StoreApp], env: dict[str, str]) -> StoreApp:
    app = StoreApp(env=env)
    apps.append(app)
    return app


def assert_same_value(actual: Any, expected: Any, path: str = "$") -> None:
    """Equal values of exactly equal types, recursively (``1 == 1.0 == True`` is not enough)."""
    assert type(actual) is type(expected), f"{path}: {type(actual)} != {type(expected)}"
    if isinstance(expected, dict):
        assert list(actual) == list(expected) or set(actual) == set(expected), path
        for key in expected:
            assert_same_value(actual[key], expected[key], f"{path}.{key}")
    elif isinstance(expected, list):
        assert len(actual) == len(expected), path
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_same_value(a, e, f"{path}[{i}]")
    elif isinstance(expected, Decimal):
        assert actual.as_tuple() == expected.as_tuple(), f"{path}: {actual!r} != {expected!r}"
    elif isinstance(expected, datetime):
        assert actual == expected, path
        assert actual.utcoffset() == expected.utcoffset(), path
        assert (actual.tzinfo is None) == (expected.tzinfo is None), path
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


def as_stored(value: Any) -> Any:
    """``value`` as it reads back: tuples become lists (documented in OrjsonTranscoder)."""
    if isinstance(value, dict):
        return {k: as_stored(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [as_stored(v) for v in value]
    return value


def notification_ids(app: StoreApp) -> list[int]:
    return [n.id for n in app.recorder.select_notifications(start=1, limit=10_000)]


# --------------------------------------------------------------------------------------------
# Round trips on both stores
# --------------------------------------------------------------------------------------------


class TestRoundTrip:
    def test_values_come_back_with_their_exact_types(
        self, apps: list[StoreApp], store_env: dict[str, str]
    ) -> None:
        writer = new(apps, store_env)
        ledger = open_ledger()
        ledger.adjust(Decimal("-0.50"), by="dealer ♦")
        writer.save(ledger)
        writer.close()

        reader = new(apps, store_env)  # a new instance on the same store
        copy: Ledger = reader.repository.get(ledger.id)

        assert isinstance(copy, Ledger)
        assert copy.version == 2
        assert_same_value(copy.amount, Decimal("10.00"))
        assert_same_value(copy.deltas, [Decimal("-0.50")])
        assert_same_value(copy.ref, ledger.ref)
        assert_same_value(copy.opened_at, ledger.opened_at)
        assert copy.opened_at.utcoffset() == timedelta(hours=2)
        assert_same_value(copy.details, as_stored(ledger.details))
        assert_same_value(copy.note, UNICODE_NOTE)
        assert_same_value(copy.created_on, ledger.created_on)
        assert_same_value(copy.modified_on, ledger.modified_on)
        assert copy.created_on.tzinfo is not None

    def test_decimal_exponent_survives(
        self, apps: list[StoreApp], store_env: dict[str, str]
    ) -> None:
        app = new(apps, store_env)
        amounts = ["10.50", "10.5", "0.00", "1E+3", "-0", "123456789012345678901234567890.01"]
        ids = []
        for amount in amounts:
            ledger = open_ledger(amount)
            app.save(ledger)
            ids.append(ledger.id)

        reader = new(apps, store_env)
        for ident, amount in zip(ids, amounts, strict=True):
            assert_same_value(reader.repository.get(ident).amount, Decimal(amount))

    def test_stored_state_is_canonical_json_with_tagged_types(
        self, apps: list[StoreApp], store_env: dict[str, str]
    ) -> None:
        app = new(apps, store_env)
        ledger = open_ledger()
        app.save(ledger)

        (stored,) = app.recorder.select_events(ledger.id)
        state = bytes(stored.state)
        assert state == orjson.dumps(orjson.loads(state), option=orjson.OPT_SORT_KEYS)
        assert b'{"_data_":"10.50","_type_":"decimal_str"}' in state
        assert f'{{"_data_":"{ledger.ref.hex}","_type_":"uuid_hex"}}'.encode() in state
        assert b'"2024-07-14T21:30:05.123456+02:00"' in state
        # The stdlib transcoder reads what we wrote (same tags), should we ever go back.
        stdlib = JSONTranscoder()
        for transcoding in (UUIDAsHex(), DecimalAsStr(), DatetimeAsISO()):
            stdlib.register(transcoding)
        assert stdlib.decode(state) == OrjsonTranscoder().decode(state)


class TestNotificationLog:
    def test_ids_are_gap_free_and_in_save_order(
        self, apps: list[StoreApp], store_env: dict[str, str]
    ) -> None:
        app = new(apps, store_env)
        expected: list[tuple[UUID, int]] = []
        ledgers = []
        for i in range(12):
            ledger = open_ledger(f"{i}.00")
            app.save(ledger)
            ledgers.append(ledger)
            expected.append((ledger.id, 1))
        for i, ledger in enumerate(ledgers):
            ledger.adjust(Decimal(i))
            app.save(ledger)
            expected.append((ledger.id, 2))
        # Several events of one aggregate and several aggregates in one save are consecutive.
        a, b = ledgers[0], ledgers[1]
        a.adjust(Decimal(1))
        a.adjust(Decimal(2))
        b.adjust(Decimal(3))
        app.save(a, b)
        expected += [(a.id, 3), (a.id, 4), (b.id, 3)]

        reader = new(apps, store_env)
        notifications = reader.recorder.select_notifications(start=1, limit=1000)
        assert [n.id for n in notifications] == list(range(1, len(expected) + 1))
        assert [(n.originator_id, n.originator_version) for n in notifications] == expected
        assert reader.recorder.max_notification_id() == len(expected)
        # Paging gives the same sequence.
        paged = [
            n.id
            for start in range(1, len(expected) + 1, 5)
            for n in reader.notification_log.select(start=start, limit=5)
        ]
        assert paged == list(range(1, len(expected) + 1))


class TestOptimisticConcurrency:
    def test_second_writer_of_the_same_version_is_refused(
        self, apps: list[StoreApp], store_env: dict[str, str]
    ) -> None:
        setup = new(apps, store_env)
        ledger = open_ledger("100.00")
        setup.save(ledger)

        first, second = new(apps, store_env), new(apps, store_env)
        mine: Ledger = first.repository.get(ledger.id)
        theirs: Ledger = second.repository.get(ledger.id)
        mine.adjust(Decimal("-10.00"), by="first")
        theirs.adjust(Decimal("-99.00"), by="second")
        theirs.adjust(Decimal("-1.00"), by="second")

        first.save(mine)
        with pytest.raises(IntegrityError) as refused:
            second.save(theirs)
        assert isinstance(refused.value, RecordConflictError)

        reader = new(apps, store_env)
        reloaded: Ledger = reader.repository.get(ledger.id)
        assert reloaded.version == 2
        assert_same_value(reloaded.deltas, [Decimal("-10.00")])
        assert_same_value(reloaded.amount, Decimal("90.00"))
        assert [e.originator_version for e in reader.events.get(ledger.id)] == [1, 2]
        assert notification_ids(reader) == [1, 2]

    @pytest.mark.parametrize(
        "conflicting_first", [False, True], ids=["new-then-stale", "stale-then-new"]
    )
    def test_multi_aggregate_save_with_one_conflict_records_nothing(
        self, apps: list[StoreApp], store_env: dict[str, str], conflicting_first: bool
    ) -> None:
        setup = new(apps, store_env)
        existing = open_ledger("50.00")
        setup.save(existing)
        stale: Ledger = new(apps, store_env).repository.get(existing.id)

        winner: Ledger = setup.repository.get(existing.id)
        winner.adjust(Decimal("5.00"), by="winner")
        setup.save(winner)
        before = notification_ids(setup)

        loser = new(apps, store_env)
        fresh = open_ledger("7.00")
        fresh.adjust(Decimal("1.00"))
        stale.adjust(Decimal("-50.00"), by="loser")
        batch = (stale, fresh) if conflicting_first else (fresh, stale)
        with pytest.raises(IntegrityError):
            loser.save(*batch)

        reader = new(apps, store_env)
        with pytest.raises(AggregateNotFoundError):
            reader.repository.get(fresh.id)
        assert list(reader.events.get(fresh.id)) == []
        reloaded: Ledger = reader.repository.get(existing.id)
        assert reloaded.version == 2
        assert_same_value(reloaded.deltas, [Decimal("5.00")])
        assert notification_ids(reader) == before

        # The store is still usable, and later ids keep increasing. (PostgreSQL sequences are
        # not transactional, so the refused batch may leave a gap in the ids; SQLite's does
        # not. Readers must follow order, not count on contiguous ids after a conflict.)
        later = open_ledger("1.00")
        reader.save(later)
        ids = notification_ids(reader)
        assert ids[:-1] == before
        assert ids[-1] > before[-1]


class TestCreateTable:
    def test_workers_started_with_create_table_n_use_the_existing_tables(
        self, apps: list[StoreApp], store_url: str
    ) -> None:
        first = new(apps, environment_for(store_url))
        ledger = open_ledger()
        first.save(ledger)

        worker = new(apps, environment_for(store_url, create_table=False))
        copy: Ledger = worker.repository.get(ledger.id)
        copy.adjust(Decimal("1.00"))
        worker.save(copy)
        assert notification_ids(worker) == [1, 2]

    def test_create_table_n_on_an_empty_store_does_not_create_them(
        self, apps: list[StoreApp], store_url: str
    ) -> None:
        worker = new(apps, environment_for(store_url, create_table=False))
        with pytest.raises(PersistenceError):
            worker.save(open_ledger())


# --------------------------------------------------------------------------------------------
# Store-specific behaviour
# --------------------------------------------------------------------------------------------


class TestSQLite:
    def test_file_database_is_in_wal_mode(self, tmp_path: Path) -> None:
        url = f"sqlite:///{tmp_path}/audit.db"
        path = sqlite_path(url)
        assert path == tmp_path / "audit.db"
        app = StoreApp(env=environment_for(url))
        try:
            app.save(open_ledger())
        finally:
            app.close()

        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"

    def test_relative_path_is_relative_to_the_working_directory(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        url = "sqlite:///nested/folder/events.db"
        path = sqlite_path(url)
        assert path == Path("nested/folder/events.db")
        path.parent.mkdir(parents=True)  # the caller's job, not the domain's
        app = StoreApp(env=environment_for(url))
        try:
            app.save(open_ledger())
        finally:
            app.close()
        assert (tmp_path / "nested/folder/events.db").is_file()

    def test_in_memory_store_is_shared_by_one_environment_only(self) -> None:
        env = environment_for("sqlite:///:memory:")
        writer, reader = StoreApp(env=env), StoreApp(env=env)
        other = StoreApp(env=environment_for("sqlite:///:memory:"))
        try:
            ledger = open_ledger()
            writer.save(ledger)
            assert_same_value(reader.repository.get(ledger.id).amount, Decimal("10.50"))
            with pytest.raises(AggregateNotFoundError):
                other.repository.get(ledger.id)
        finally:
            for app in (writer, reader, other):
                app.close()


@pytest.mark.postgres
class TestPostgres:
    def test_schema_parameter_puts_the_tables_in_that_schema(self, postgres_url: str) -> None:
        with fresh_database(postgres_url) as url:
            with psycopg.connect(libpq_url(url), autocommit=True) as conn:
                conn.execute("CREATE SCHEMA audit")
            app = StoreApp(env=environment_for(f"{url}?schema=audit"))
            try:
                ledger = open_ledger()
                app.save(ledger)
                assert_same_value(app.repository.get(ledger.id).amount, Decimal("10.50"))
            finally:
                app.close()
            with psycopg.connect(libpq_url(url)) as conn:
                tables = conn.execute(
                    "SELECT table_schema FROM information_schema.tables "
                    "WHERE table_name = 'storeapp_events'"
                ).fetchall()
            assert tables == [("audit",)]

    def test_db_functions_stay_off_whatever_the_process_environment(
        self, postgres_url: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """POSTGRES_ENABLE_DB_FUNCTIONS stays off (DESIGN.md: a tailing reader missed events).

        The library always creates its insert function; only this flag decides whether saves
        use it (without the table lock) instead of ``LOCK TABLE ... IN EXCLUSIVE MODE``.
        """
        monkeypatch.setenv("POSTGRES_ENABLE_DB_FUNCTIONS", "y")
        with fresh_database(postgres_url) as url:
            app = StoreApp(env=environment_for(url))
            try:
                app.save(open_ledger())
                datastore = app.factory.datastore  # type: ignore[attr-defined]
                assert datastore.enable_db_functions is False
            finally:
                app.close()


# --------------------------------------------------------------------------------------------
# environment_for and friends (no database)
# --------------------------------------------------------------------------------------------


class TestEnvironmentFor:
    def test_default_url_is_a_relative_sqlite_file(self) -> None:
        env = environment_for(DEFAULT_DATABASE_URL)
        assert env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite"
        assert env["SQLITE_DBNAME"] == "data/roundaudit.db"
        assert int(env["SQLITE_LOCK_TIMEOUT"]) > 0
        assert sqlite_path(DEFAULT_DATABASE_URL) == Path("data/roundaudit.db")

    def test_transcoder_topic_resolves_to_the_orjson_transcoder(self) -> None:
        for url in (DEFAULT_DATABASE_URL, "postgresql://u:p@h/db"):
            assert resolve_topic(environment_for(url)["TRANSCODER_TOPIC"]) is OrjsonTranscoder

    def test_create_table_flag(self) -> None:
        assert environment_for("sqlite:///x.db")["CREATE_TABLE"] == "y"
        assert environment_for("sqlite:///x.db", create_table=False)["CREATE_TABLE"] == "n"

    def test_sqlite_paths(self) -> None:
        assert environment_for("sqlite:////abs/x.db")["SQLITE_DBNAME"] == "/abs/x.db"
        assert environment_for("sqlite:///my%20data/x.db")["SQLITE_DBNAME"] == "my data/x.db"
        assert environment_for("sqlite:///x.db?timeout=30")["SQLITE_LOCK_TIMEOUT"] == "30"
        assert environment_for("SQLite:///x.db")["PERSISTENCE_MODULE"] == "eventsourcing.sqlite"

    def test_in_memory_sqlite_uses_a_named_shared_cache(self) -> None:
        one = environment_for("sqlite:///:memory:")["SQLITE_DBNAME"]
        two = environment_for("sqlite:///:memory:")["SQLITE_DBNAME"]
        assert one.startswith("file:")
        assert one.endswith("?mode=memory&cache=shared")
        assert one != two
        named = environment_for("sqlite:///:memory:?name=replay-1")["SQLITE_DBNAME"]
        assert named == "file:replay-1?mode=memory&cache=shared"
        assert sqlite_path("sqlite:///:memory:") is None

    def test_postgres_url(self) -> None:
        env = environment_for("postgres://a%40b:p%3Aw%2Fd@DB.example:6000/round%20audit")
        assert env["PERSISTENCE_MODULE"] == "eventsourcing.postgres"
        assert env["POSTGRES_USER"] == "a@b"
        assert env["POSTGRES_PASSWORD"] == "p:w/d"
        assert env["POSTGRES_HOST"] == "db.example"
        assert env["POSTGRES_PORT"] == "6000"
        assert env["POSTGRES_DBNAME"] == "round audit"
        assert env["POSTGRES_ENABLE_DB_FUNCTIONS"] == "n"
        assert "POSTGRES_SCHEMA" not in env
        assert int(env["POSTGRES_POOL_SIZE"]) >= 1

    def test_postgres_defaults_and_options(self) -> None:
        env = environment_for(
            "postgresql://audit@/roundaudit?host=/run/postgresql&schema=audit_v1"
            "&pool_size=3&max_overflow=0&connect_timeout=4"
        )
        assert env["POSTGRES_HOST"] == "/run/postgresql"
        assert env["POSTGRES_PORT"] == "5432"
        assert env["POSTGRES_PASSWORD"] == ""
        assert env["POSTGRES_SCHEMA"] == "audit_v1"
        assert env["POSTGRES_POOL_SIZE"] == "3"
        assert env["POSTGRES_MAX_OVERFLOW"] == "0"
        assert env["POSTGRES_CONNECT_TIMEOUT"] == "4"
        assert sqlite_path("postgresql://audit@h/roundaudit") is None

    @pytest.mark.parametrize(
        ("url", "problem"),
        [
            ("", "empty"),
            ("   ", "empty"),
            (" sqlite:///x.db", "whitespace"),
            ("data/roundaudit.db", "scheme '(none)'"),
            ("mysql://root@localhost/db", "scheme 'mysql'"),
            ("http://example.com/x.db", "scheme 'http'"),
            ("sqlite://host/x.db", "has a host"),
            ("sqlite:", "names no file"),
            ("sqlite://", "names no file"),
            ("sqlite:///", "names no file"),
            ("sqlite:///data/", "names a folder"),
            ("sqlite:///file:x.db?mode=ro", "not a file: URI"),
            ("sqlite:///x.db?mode=ro", "unknown parameter 'mode'"),
            ("sqlite:///x.db?timeout=soon", "'timeout' must be an integer"),
            ("sqlite:///x.db?timeout=0", "'timeout' must be an integer"),
            ("sqlite:///x.db?timeout=1&timeout=2", "given twice"),
            ("sqlite:///x.db#frag", "fragment"),
            ("sqlite:///:memory:?name=bad%20name", "in-memory SQLite name"),
            ("sqlite:///:memory:?timeout=5", "unknown parameter 'timeout'"),
            ("postgresql://u:p@h:port/db", "invalid port"),
            ("postgresql://u:p@h:99999/db", "invalid port"),
            ("postgresql://u:p@/db", "names no host"),
            ("postgresql://h/db", "names no user"),
            ("postgresql://u:p@h", "exactly one database"),
            ("postgresql://u:p@h/", "exactly one database"),
            ("postgresql://u:p@h/a/b", "exactly one database"),
            ("postgresql://u:p@h/db?schema=Audit", "lower-case identifier"),
            ("postgresql://u:p@h/db?schema=a;drop", "lower-case identifier"),
            ("postgresql://u:p@h/db?schema=", "lower-case identifier"),
            ("postgresql://u:p@h/db?sslmode=require", "unknown parameter 'sslmode'"),
            ("postgresql://u:p@h/db?pool_size=0", "'pool_size' must be an integer"),
            ("postgresql://u:p@h/db?host=/tmp", "host twice"),
            ("postgresql://u:p@h/db?schema", "malformed query"),
        ],
    )
    def test_malformed_urls_are_refused_with_the_reason(self, url: str, problem: str) -> None:
        with pytest.raises(DatabaseURLError, match=None) as refused:
            environment_for(url)
        assert isinstance(refused.value, ValueError)
        assert problem in str(refused.value)

    def test_errors_never_show_the_password(self) -> None:
        for url in ("postgresql://u:hunter2@h:bad/db", "postgresql://u:hunter2@h/db?x=1"):
            with pytest.raises(DatabaseURLError) as refused:
                environment_for(url)
            assert "hunter2" not in str(refused.value)
            assert "***" in str(refused.value)

    def test_redact_url(self) -> None:
        assert redact_url("postgresql://u:pw@h/db") == "postgresql://u:***@h/db"
        assert redact_url("postgresql://u@h/db") == "postgresql://u@h/db"


# --------------------------------------------------------------------------------------------
# OrjsonTranscoder (no database)
# --------------------------------------------------------------------------------------------


class Chip:
    def __init__(self, colour: str, owner: UUID) -> None:
        self.colour = colour
        self.owner = owner

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Chip) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]


class ChipAsDict(Transcoding):
    type = Chip
    name = "chip"

    def encode(self, obj: Chip) -> dict[str, Any]:
        return {"colour": obj.colour, "owner": obj.owner}

    def decode(self, data: dict[str, Any]) -> Chip:
        assert isinstance(data["owner"], UUID)
        return Chip(data["colour"], data["owner"])


class TestOrjsonTranscoder:
    def test_round_trip_and_canonical_bytes(self) -> None:
        transcoder = OrjsonTranscoder()
        state = open_ledger().details | {"note": UNICODE_NOTE}
        encoded = transcoder.encode(state)
        assert_same_value(transcoder.decode(encoded), as_stored(state))
        reordered = dict(reversed(list(state.items())))
        assert transcoder.encode(reordered) == encoded

    def test_reads_what_the_stdlib_transcoder_wrote(self) -> None:
        stdlib = JSONTranscoder()
        for transcoding in (UUIDAsHex(), DecimalAsStr(), DatetimeAsISO()):
            stdlib.register(transcoding)
        state = as_stored(open_ledger().details)
        assert_same_value(OrjsonTranscoder().decode(stdlib.encode(state)), state)
        assert_same_value(stdlib.decode(OrjsonTranscoder().encode(state)), state)

    def test_does_not_modify_its_input(self) -> None:
        ref = uuid4()
        state: dict[str, Any] = {"a": [ref, (ref,)], "b": {"c": ref}}
        OrjsonTranscoder().encode(state)
        assert state == {"a": [ref, (ref,)], "b": {"c": ref}}
        assert type(state["a"][1]) is tuple

    @pytest.mark.parametrize(
        ("state", "error"),
        [
            ({1: "int key"}, TypeError),
            ({"x": {2: "nested int key"}}, TypeError),
            ({"x": float("nan")}, ValueError),
            ({"x": [float("inf")]}, ValueError),
            ({"x": 2**64}, TypeError),
            ({"x": {1, 2}}, TranscodingNotRegisteredError),
            ({"x": b"bytes"}, TranscodingNotRegisteredError),
            ({"x": Chip("red", uuid4())}, TranscodingNotRegisteredError),
        ],
    )
    def test_refuses_what_would_not_come_back_the_same(
        self, state: dict[Any, Any], error: type[Exception]
    ) -> None:
        with pytest.raises(error):
            OrjsonTranscoder().encode(state)

    def test_unknown_tag_on_read_is_an_error(self) -> None:
        with pytest.raises(TranscodingNotRegisteredError):
            OrjsonTranscoder().decode(b'{"x":{"_data_":"1","_type_":"martian"}}')

    def test_registered_transcodings_nest(self) -> None:
        transcoder = OrjsonTranscoder()
        transcoder.register(ChipAsDict())
        state = {"stack": [Chip("red", uuid4()), Chip("black", uuid4())]}
        encoded = transcoder.encode(state)
        assert b'"_type_":"chip"' in encoded
        assert b'"_type_":"uuid_hex"' in encoded
        assert transcoder.decode(encoded) == state

    def test_non_json_top_levels(self) -> None:
        transcoder = OrjsonTranscoder()
        for value in (Decimal("1.10"), [uuid4(), 1], "text", 3, None):
            assert_same_value(transcoder.decode(transcoder.encode(value)), value)
        assert json.loads(transcoder.encode([1, "a"])) == [1, "a"]
