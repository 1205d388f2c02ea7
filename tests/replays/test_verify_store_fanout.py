"""``verify --all --workers N`` sends the store's rounds out before its driver reads the log
(``replays.distributed.verify_store``), and still prints the single-process report: the same
rounds in the same order, the same verdicts, a failing log's block before the rounds, the same
summary line and exit code, on SQLite and PostgreSQL.

One store per database kind for the module: simulated rounds of every variant, sealed with a
checkpoint, then tampered with as an insider would: every record of one round deleted (only
the log knows that round: it comes last), one event rewritten together with its leaf (its
checkpoint no longer holds: the log fails as a whole too).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest
from pg import fresh_database
from storekit import Store, sealed_rounds, verify_report

from cli.main import main
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from domain.rules import VARIANTS

ROUNDS_PER_VARIANT = 5

Tampered = tuple[str, Path, list[str], UUID, UUID]


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ],
)
def tampered(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Tampered]:
    """(url, operator key, every round simulated, the round whose records were all deleted,
    the round whose event and leaf were rewritten)."""
    folder = tmp_path_factory.mktemp("store-fanout")
    key = folder / "key.pem"

    def make(url: str) -> Tampered:
        classic = [v for v in VARIANTS if v != "boundless"]
        rounds = sealed_rounds(url, key, classic, ROUNDS_PER_VARIANT)
        store = Store(url, key, capsys=None)  # type: ignore[arg-type]
        gone, rewritten = UUID(rounds[2]), UUID(rounds[-3])
        store.delete(gone)  # every record of the round: only the log knows it
        assert store.rows(gone) == []
        _version, _topic, state = store.rows(rewritten)[1]
        store.rewrite_with_leaf(rewritten, 2, state.replace(b"2", b"3", 1))
        return url, key, rounds, gone, rewritten

    if request.param == "sqlite":
        yield make(f"sqlite:///{folder}/events.db")
        return
    with fresh_database(request.getfixturevalue("postgres_url")) as url:
        yield make(url)


def _verify(url: str, key: Path, report: Path, *extra: str) -> tuple[int, str, dict[str, Any]]:
    return verify_report(url, key, report, "--state", "none", *extra)


def test_two_workers_print_the_report_of_one_process(tampered: Tampered, tmp_path: Path) -> None:
    """The whole printed report is the single-process run's, line for line: the failing log's
    block first, then the failing rounds in the same order (the round only the log knows
    last), the summary line; the JSON report and the exit code alike."""
    url, key, rounds, gone, rewritten = tampered
    code1, out1, one = _verify(url, key, tmp_path / "one.json", "--all")
    code2, out2, two = _verify(url, key, tmp_path / "two.json", "--all", "--workers", "2")
    assert one["rounds"][-1]["round_id"] == str(gone)  # the log's own round comes last
    assert {r["round_id"] for r in one["rounds"] if not r["ok"]} >= {str(gone), str(rewritten)}
    assert len(one["rounds"]) == len(rounds)
    assert out1.startswith("FAIL merkle log\n")
    assert code1 == 1
    assert (code2, out2) == (code1, out1)
    assert two == one


@pytest.mark.parametrize(
    ("since", "until"),
    [("2000-01-01", None), ("2999-01-01", None), ("2000-01-01", "2000-01-02")],
    ids=["every-round", "future", "past-day"],
)
def test_two_workers_with_a_date_range_print_the_report_of_one_process(
    tampered: Tampered, tmp_path: Path, since: str, until: str | None
) -> None:
    """``--since``/``--until`` on the fan-out: the rounds of the range, and the round whose
    start is unknown (its records deleted: only the log knows it), the single run's report."""
    url, key, _rounds, gone, _rewritten = tampered
    dates = ["--since", since, *(["--until", until] if until else [])]
    code1, out1, one = _verify(url, key, tmp_path / "one.json", *dates)
    code2, out2, two = _verify(url, key, tmp_path / "two.json", *dates, "--workers", "2")
    assert str(gone) in [r["round_id"] for r in one["rounds"]]
    if since != "2000-01-01" or until:  # no round started in the range: the log's own alone
        assert [r["round_id"] for r in one["rounds"]] == [str(gone)]
    assert (code2, out2) == (code1, out1)
    assert two == one


def test_a_deferred_verifier_lists_the_stores_rounds_then_the_logs(tampered: Tampered) -> None:
    """``StoreVerifier(deferred=True)`` (the fan-out's driver) reads no log until asked:
    the store's rounds listed without it, then the rounds only the log knows, together the
    list of :meth:`StoreVerifier.round_ids`, with a date range too."""
    from datetime import UTC, datetime

    from replays.verify import StoreVerifier

    url, _key, _rounds, gone, _rewritten = tampered
    app = RoundAudit(env=environment_for(url, create_table=False))
    try:
        for since, until in (
            (None, None),
            (datetime(2000, 1, 1, tzinfo=UTC), None),
            (datetime(2999, 1, 1, tzinfo=UTC), None),
        ):
            whole = StoreVerifier(app).round_ids(since=since, until=until)
            deferred = StoreVerifier(app, deferred=True)
            assert deferred.reader.log is None
            listed, seen = deferred.store_round_ids(since=since, until=until)
            assert deferred.reader.log is None  # the store's list needed no log
            assert gone not in seen
            assert deferred.log_round_ids(seen) == [gone]
            assert deferred.reader.log is deferred.log
            assert [*listed, gone] == whole
    finally:
        app.close()


def _one_process(url: str) -> tuple[Any, list[Any]]:
    from replays.verify import StoreVerifier

    app = RoundAudit(env=environment_for(url, create_table=False))
    try:
        driver = StoreVerifier(app)
        return driver, [v.as_json() for v in driver.verify_many(driver.round_ids())]
    finally:
        app.close()


@contextlib.contextmanager
def _thread_cluster(workers: int = 1) -> Iterator[Any]:
    """A client of a local cluster whose workers are threads of this process (a test's
    patches reach them)."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        yield client


def _log_variables(client: Any) -> list[str]:
    return list(
        client.run_on_scheduler(
            lambda dask_scheduler: [
                k for k in dask_scheduler.extensions["variables"].variables if "verify-log" in k
            ]
        )
    )


def test_the_ranges_go_out_before_the_driver_reads_the_log(
    tampered: Tampered, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``verify_store``: a worker reads its first rounds ahead before the driver reads the log
    (the driver's read made to wait for it), ``on_log`` is given the driver's log and the
    number of rounds before the first verdict, and the verdicts are one process's, in order,
    the log's own round last; no published log is left."""
    import threading

    from replays.bundle import StoreReader
    from replays.distributed import verify_store
    from replays.log import MerkleLog
    from replays.verify import StoreVerifier

    url, _key, rounds, gone, _rewritten = tampered
    single, expected = _one_process(url)
    read = threading.Event()
    real_read, real_refresh = StoreReader.read_ahead, MerkleLog.refresh
    order: list[str] = []

    def read_ahead(self: StoreReader, round_ids: Any) -> None:
        real_read(self, round_ids)
        if self.log is None and list(round_ids) and not read.is_set():  # a worker's first
            order.append("worker read ahead")
            read.set()

    def refresh(self: MerkleLog) -> MerkleLog:
        if threading.current_thread() is threading.main_thread():
            read.wait(timeout=30)
            order.append("driver read the log")
        return real_refresh(self)

    monkeypatch.setattr(StoreReader, "read_ahead", read_ahead)
    monkeypatch.setattr(MerkleLog, "refresh", refresh)
    app = RoundAudit(env=environment_for(url, create_table=False))
    told: list[tuple[int, int]] = []
    got: list[Any] = []
    try:
        driver = StoreVerifier(app, policy=single.policy, deferred=True)
        with _thread_cluster() as client:
            for v in verify_store(
                url,
                driver,
                client=client,
                on_log=lambda log, n: told.append((log.size, n)),
            ):
                assert told, "the log was given before the first verdict"
                got.append(v.as_json())
            assert _log_variables(client) == []
    finally:
        app.close()
    assert order[:2] == ["worker read ahead", "driver read the log"]
    assert told == [(single.log.size, len(rounds))]
    assert got == expected
    assert got[-1]["round_id"] == str(gone)


def test_a_log_the_driver_cannot_read_fails_the_run_and_the_waiting_ranges(
    tampered: Tampered,
) -> None:
    """A driver whose log cannot be read (its state file is none: ``StateError``) raises that
    before any verdict; the ranges it had sent out are told their log will not come (the
    run's variable holds None: no range waits for it)."""
    from distributed import Variable

    from replays.distributed import verify_store
    from replays.logstate import StateError
    from replays.verify import StoreVerifier

    url, _key, _rounds, _gone, _rewritten = tampered
    app = RoundAudit(env=environment_for(url, create_table=False))
    try:

        def unreadable() -> Any:
            raise StateError("no state here")

        driver = StoreVerifier(app, later=unreadable)
        with _thread_cluster() as client:
            with pytest.raises(StateError, match="no state here"):
                next(verify_store(url, driver, client=client))
            [name] = _log_variables(client)
            assert Variable(name, client=client).get(timeout=5) is None
    finally:
        app.close()


def test_a_worker_told_the_log_will_not_come_fails_its_range() -> None:
    """:meth:`LogToCome.abandon`: a range waiting for the log raises at once."""
    from replays.distributed import LogToCome, _app, _log_to_come

    to_come = LogToCome.of_run(uuid4().hex)

    def waits(name: str, url: str) -> None:
        _log_to_come(_app(url), name)

    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(__import__("tempfile").TemporaryDirectory()))
        url = f"sqlite:///{folder}/events.db"
        RoundAudit(env=environment_for(url)).close()
        client = stack.enter_context(_thread_cluster())
        waiting = client.submit(waits, to_come.name, url, pure=False)
        to_come.abandon(client)
        with pytest.raises(RuntimeError, match="will not come"):
            waiting.result(timeout=60)


def test_a_state_path_shipped_as_the_log_to_come_is_read_through(tmp_path: Path) -> None:
    """A local cluster's driver whose state holds its log ships that state's path under the
    log's key: the worker reads the log through it (``replays.logstate.read_log``: the kept
    tree, no leaf read whole), the driver's very log."""
    from replays.distributed import LogToCome, _app, _log_to_come
    from replays.logstate import StatefulLog
    from replays.verify import StoreVerifier

    url = f"sqlite:///{tmp_path}/events.db"  # a state is saved only of a log found sound
    state = tmp_path / "state.sqlite"
    app = RoundAudit(env=environment_for(url))
    try:
        simulate(app, variant="european", rounds=3)
        driver = StoreVerifier(app, state=state, reread=True)
        assert driver.log.size > 0
    finally:
        app.close()
    to_come = LogToCome.of_run(uuid4().hex)

    def made_here(name: str, url: str, policy: Any) -> tuple[bool, int, bytes, int]:
        log = _log_to_come(_app(url), name, policy)
        return isinstance(log, StatefulLog), log.size, log.tree.root(), len(log.kinds.new)

    with _thread_cluster() as client:
        published = to_come.publish(client, str(state))
        try:
            through, size, root, read_whole = client.submit(
                made_here, to_come.name, url, driver.policy, pure=False
            ).result(timeout=60)
        finally:
            published.delete()
    assert through
    assert (size, root, read_whole) == (driver.log.size, driver.log.tree.root(), 0)


def test_a_bad_state_file_is_the_same_error_with_workers(tmp_path: Path) -> None:
    """A state file that is none: the fan-out's driver finds it only after sending its rounds
    out, and says the same error, with the same exit code, as the single-process run."""
    url = f"sqlite:///{tmp_path}/events.db"
    app = RoundAudit(env=environment_for(url))
    try:
        simulate(app, variant="european", rounds=2)
    finally:
        app.close()
    bad = tmp_path / "not-a-state"
    bad.write_bytes(b"this is no SQLite file" * 100)
    said = []
    for extra in ([], ["--workers", "1"]):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(
                ["--database-url", url, "verify", "--all", "--no-progress",
                 "--state", str(bad), *extra]
            )  # fmt: skip
        said.append((code, err.getvalue().strip().splitlines()[-1]))
    assert said[0][0] == 2
    assert "is not a verifier state file" in said[0][1]
    assert said[1] == said[0]


def test_a_log_read_through_a_state_is_shipped_to_a_running_cluster(tmp_path: Path) -> None:
    """``verify --all --scheduler URL`` with a verifier state: the driver's log is read through
    that state (a ``StatefulLog``, its file's views and locks: nothing a pickle takes), and a
    running cluster's workers cannot read that file, so the driver ships the log itself: the
    same leaves, up to its size, and its findings. Every run, the state's first and the runs
    after it (the state then holding the log), gives one process's verdicts."""
    from replays.distributed import verify_store
    from replays.logstate import StatefulLog
    from replays.verify import StoreVerifier

    url = f"sqlite:///{tmp_path}/events.db"
    state = tmp_path / "state.sqlite"
    app = RoundAudit(env=environment_for(url))
    try:
        simulate(app, variant="european", rounds=4)
    finally:
        app.close()
    _, alone = _one_process(url)
    through = []
    with _thread_cluster(workers=2) as client:
        for _ in range(2):  # the second run's log read through the state the first one saved
            reader = RoundAudit(env=environment_for(url, create_table=False))
            try:
                driver = StoreVerifier(reader, state=state, deferred=True)
                verdicts = list(verify_store(url, driver, client=client, state=state))
                through.append(isinstance(driver.log, StatefulLog))
            finally:
                reader.close()
            assert [v.as_json() for v in verdicts] == alone
    assert through == [False, True]


def test_a_plain_copy_of_a_stateful_log_finds_a_store_changed_under_it(tmp_path: Path) -> None:
    """``MerkleLog.plain`` of a log read through a verifier's state: the same leaves and root
    while the store holds them; its last leaf row deleted after the read, the copy is shorter
    and says so as a finding (no round passes on it), the state's own findings carried."""
    import sqlite3

    from domain.commit_leaf import LEAVES_ID
    from replays.log import MerkleLog
    from replays.logstate import StatefulLog
    from replays.verify import StoreVerifier

    url = f"sqlite:///{tmp_path}/events.db"
    state = tmp_path / "state.sqlite"
    app = RoundAudit(env=environment_for(url))
    try:
        simulate(app, variant="european", rounds=3)
        StoreVerifier(app, state=state).log  # noqa: B018 - the state saved
        log = StoreVerifier(app, state=state).log
        assert isinstance(log, StatefulLog)
        copy = log.plain()
        assert type(copy) is MerkleLog
        assert copy is not log
        assert (copy.size, copy.tree.root(), copy.findings) == (
            log.size,
            log.tree.root(),
            log.findings,
        )
        assert copy.plain() is copy
        table = log.table.events_table_name  # type: ignore[attr-defined]
        with sqlite3.connect(tmp_path / "events.db") as db:
            db.execute(
                f"DELETE FROM {table} WHERE originator_version = "
                f"(SELECT max(originator_version) FROM {table} WHERE originator_id = ?) "
                "AND originator_id = ?",
                (LEAVES_ID.hex, LEAVES_ID.hex),
            )
        changed = log.plain()
        assert changed.size == log.size - 1
        assert [f[0] for f in changed.findings] == [*(f[0] for f in log.findings), "fork"]
        assert "changed during the run" in changed.findings[-1][2]
    finally:
        app.close()
