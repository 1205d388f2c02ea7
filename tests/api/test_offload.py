"""Where the key check and a kept round view run (``api.offload``): on the event loop for a
file SQLite store, in the thread pool for every other store; a single command's key check in
the command's own trip (``api.hotpath``), except on PostgreSQL, where the key's version is
read on the loop and a key kept at it checked there (``api.auth.authorize_loop``); the
answers, refusals and the revocation by another process are the same either way.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from apikit import ADMIN_TOKEN, Api, check_problem, service_settings
from fastapi.testclient import TestClient

import api.offload
import api.routes.rounds
import api.versions
from api.auth import KeyCache
from api.main import create_app
from api.offload import CommandWorkers, reads_inline
from api.versions import APPLICATION_NAME, LoopVersions, loop_versions
from domain.application import RoundAudit
from domain.persistence import environment_for

ORDER = ["10H", "9S", "6D", "QD", "5C", "3H", "JC", "AH", "2S"]
NOTHING = UUID("00000000-0000-4000-8000-000000000000")


def test_only_a_file_sqlite_store_reads_on_the_event_loop(tmp_path: Path) -> None:
    on_file = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    in_memory_sqlite = RoundAudit(env=environment_for("sqlite:///:memory:"))
    popo = RoundAudit()
    try:
        assert reads_inline(on_file)  # WAL: a reader never waits for the writer
        assert not reads_inline(in_memory_sqlite)  # its readers wait for the writer
        assert not reads_inline(popo)
        assert not reads_inline(object())
    finally:
        for app in (on_file, in_memory_sqlite, popo):
            app.close()


@pytest.mark.postgres
def test_postgres_reads_in_the_thread_pool(postgres_url: str) -> None:
    from pg import fresh_database

    with fresh_database(postgres_url) as url:
        app = RoundAudit(env=environment_for(url))
        try:
            assert not reads_inline(app)  # a network round trip: never on the loop
        finally:
            app.close()


def _count_trips(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    trips: list[str] = []

    def counting(where: str, real: Callable[..., Any]) -> Callable[..., Any]:
        async def run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            trips.append(f"{where}:{getattr(fn, '__name__', fn)}")
            return await real(fn, *args, **kwargs)

        return run

    for where, module in (("offload", api.offload), ("rounds", api.routes.rounds)):
        monkeypatch.setattr(module, "run_in_threadpool", counting(where, module.run_in_threadpool))
    real_run = CommandWorkers.run  # the single commands' own pool (api.hotpath)

    async def command_trip(
        self: CommandWorkers, fn: Callable[..., Any], /, *a: Any, **k: Any
    ) -> Any:
        trips.append(f"hotpath:{getattr(fn, '__name__', fn)}")
        return await real_run(self, fn, *a, **k)

    monkeypatch.setattr(CommandWorkers, "run", command_trip)
    return trips


def _spy(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, note: Callable[..., Any]) -> None:
    """``owner.name`` replaced by a wrapper that calls ``note`` with each call's arguments, then
    the real one (a method's ``self`` included when ``owner`` is a class)."""
    real = getattr(owner, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        note(*args, **kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)


def _note_thread(checks: list[str]) -> Callable[..., None]:
    """A ``_spy`` note: the name of the thread each call runs in."""
    return lambda *_: checks.append(threading.current_thread().name)


def _note_loop_reads(monkeypatch: pytest.MonkeyPatch, note: Callable[[list[UUID]], Any]) -> None:
    """``note(ids)`` at each read of ``LoopVersions`` (the versions read on the event loop)."""
    real_loop = LoopVersions.read

    async def on_loop(self: LoopVersions, ids: Any) -> Any:
        note(list(ids))
        return await real_loop(self, ids)

    monkeypatch.setattr(LoopVersions, "read", on_loop)


def _kill_loop_connections(url: str) -> list[Any]:
    """Every service process's ``LoopVersions`` connections terminated by the server."""
    import psycopg
    from pg import libpq_url

    with psycopg.connect(libpq_url(url), autocommit=True) as admin:
        return admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            [APPLICATION_NAME],
        ).fetchall()


def test_a_kept_read_and_its_key_check_are_answered_on_the_loop_with_the_same_bytes(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept view and the key check make no thread-pool trip: on SQLite both read on the
    event loop, on PostgreSQL the key's and the round's versions are read there
    (``api.versions.LoopVersions``) and a refusal takes the trip that decides it. Either way:
    the bytes of an uncached read, a player key of another player refused, a key revoked
    through another process refused at once."""
    settings = service_settings(store_url)
    inline = store_url.startswith("sqlite")
    with TestClient(create_app(settings)) as one, TestClient(create_app(settings)) as two:
        a, b = Api(one), Api(two)
        a.wallet("ann", deposit="100.00")
        a.wallet("bob", deposit="100.00")
        rid = a.start("T1", "multihand", ORDER)
        ann, bob = a.key("player", player="ann"), a.key("player", player="bob")
        a.ok("POST", f"/rounds/{rid}/bets", key=ann,
             json={"player": "ann", "amount": "10.00", "spot": 1})  # fmt: skip
        assert reads_inline(two.app.state.audit) is inline  # type: ignore[attr-defined]
        uncached = b.request("GET", f"/rounds/{rid}", key=ann)  # a miss: kept from now on
        assert uncached.status_code == 200
        trips = _count_trips(monkeypatch)
        kept = b.request("GET", f"/rounds/{rid}", key=ann)
        assert kept.content == uncached.content
        assert trips == []
        check_problem(b.request("GET", f"/rounds/{rid}", key=bob), 403, "forbidden")
        a.ok("DELETE", f"/api-keys/{ann.split('_')[1]}?reason=leaked", key=ADMIN_TOKEN)
        trips.clear()
        check_problem(b.request("GET", f"/rounds/{rid}", key=ann), 401, "unauthenticated")
        assert trips == ([] if inline else ["rounds:_guarded_view"])
        # a command records through the commands' pool, a key not kept yet checked in the
        # same trip on every store (api.hotpath; on PostgreSQL at the version read on the loop)
        cashier = a.key("cashier")
        checks: list[str] = []
        _spy(monkeypatch, KeyCache, "authenticate", _note_thread(checks))
        trips.clear()
        moved = b.ok("POST", "/wallets/bob/deposits", key=cashier,
                     json={"amount": "1.00", "transaction_id": "t-1"})  # fmt: skip
        assert moved["balance"] == "101.00"
        assert trips == ["hotpath:_guarded_command"]
        assert len(checks) == 1
        assert checks[0].startswith("roundaudit-command-")
        # a command's key revoked through the other process: refused at once, nothing recorded
        a.ok("DELETE", f"/api-keys/{cashier.split('_')[1]}?reason=leaked", key=ADMIN_TOKEN)
        refused = b.request("POST", "/wallets/bob/deposits", key=cashier,
                            json={"amount": "1.00", "transaction_id": "t-2"})  # fmt: skip
        check_problem(refused, 401, "unauthenticated")
        assert a.ok("GET", "/wallets/bob", key=ADMIN_TOKEN)["balance"] == "101.00"


def test_a_miss_reads_the_rounds_version_once_before_and_once_after_its_view(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A view not kept yet: on SQLite the lookup runs on the loop and the thread-pool trip
    builds the view from what it read (``RoundViews.build``), on PostgreSQL the key's and the
    round's versions are read on the loop in one statement and one trip checks the key and
    makes the view from them (``RoundViews.view``); either way the round's last version is read
    once before the view and once after it (kept only if the round did not move), never twice
    before."""
    import api.roundviews

    inline = store_url.startswith("sqlite")
    with TestClient(create_app(service_settings(store_url))) as client:
        a = Api(client)
        a.wallet("ann", deposit="100.00")
        rid = a.start("T1", "multihand", ORDER)
        reads: list[object] = []
        together: list[list[object]] = []
        _spy(monkeypatch, api.roundviews, "last_version", lambda _, rid: reads.append(rid))
        _spy(monkeypatch, api.routes.rounds, "last_versions",
             lambda _, ids: together.append(list(ids)))  # fmt: skip
        _note_loop_reads(monkeypatch, together.append)
        trips = _count_trips(monkeypatch)
        missed = a.request("GET", f"/rounds/{rid}", key=ADMIN_TOKEN)
        assert missed.status_code == 200
        assert trips == (["rounds:build"] if inline else ["rounds:_guarded_view"])
        # before the view: on the loop (SQLite), or with the key's in one round trip
        key = KeyCache.stream(ADMIN_TOKEN)
        assert together == ([] if inline else [[key, UUID(rid)]])
        assert len(reads) == (2 if inline else 1)  # (the version after the view)
        reads.clear()
        together.clear()
        assert a.request("GET", f"/rounds/{rid}", key=ADMIN_TOKEN).content == missed.content
        assert len(reads) == (1 if inline else 0)  # kept: the version alone
        assert together == ([] if inline else [[key, UUID(rid)]])
        assert trips == (["rounds:build"] if inline else ["rounds:_guarded_view"])  # the miss's


@pytest.mark.postgres
def test_a_kept_read_on_postgres_is_one_statement(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL a kept ``GET /rounds/{id}`` reads the key's and the round's versions in
    one statement, on the event loop (``api.versions.LoopVersions``): no other query of the
    event table; a round moved and a key revoked by another process are seen by the very next
    read, a good key still answered; the loop's connections lost cost a thread-pool trip,
    never a wrong answer."""
    from pg import fresh_database

    with fresh_database(postgres_url) as url:
        settings = service_settings(url)
        with TestClient(create_app(settings)) as one, TestClient(create_app(settings)) as two:
            a, b = Api(one), Api(two)
            a.wallet("ann", deposit="100.00")
            rid = a.start("T1", "multihand", ORDER)
            ann = a.key("player", player="ann")
            investigator = a.key("investigator")
            a.ok("POST", f"/rounds/{rid}/bets", key=ann,
                 json={"player": "ann", "amount": "10.00", "spot": 1})  # fmt: skip
            first = b.request("GET", f"/rounds/{rid}", key=ann)  # a miss: kept from now on
            assert first.status_code == 200
            recorder = two.app.state.audit.recorder  # type: ignore[attr-defined]
            statements: list[str] = []
            _spy(monkeypatch, recorder, "select_events",
                 lambda *_, **__: statements.append("select_events"))  # fmt: skip
            _spy(monkeypatch, api.versions, "_pg_last_versions",
                 lambda *_: statements.append("last_versions"))  # fmt: skip
            _note_loop_reads(monkeypatch, lambda _: statements.append("on the loop"))
            trips = _count_trips(monkeypatch)
            assert b.request("GET", f"/rounds/{rid}", key=ann).content == first.content
            assert statements == ["on the loop"]
            assert trips == []  # answered on the loop
            # a bet recorded through the other process: the very next read shows it
            a.wallet("bob", deposit="100.00")
            a.bet(rid, "bob", "10.00", 2)
            trips.clear()
            moved = b.request("GET", f"/rounds/{rid}", key=ann)
            assert [w["player"] for w in moved.json()["wagers"]] == ["ann", "bob"]
            assert trips == ["rounds:_guarded_view"]  # the new version: made again
            a.ok("DELETE", f"/api-keys/{ann.split('_')[1]}?reason=leaked", key=ADMIN_TOKEN)
            check_problem(b.request("GET", f"/rounds/{rid}", key=ann), 401, "unauthenticated")
            assert b.request("GET", f"/rounds/{rid}", key=investigator).content == moved.content
            # the loop's connections killed by the server: the next read takes the trip (the
            # versions read there, the same answer), the one after is on the loop again
            assert _kill_loop_connections(url)  # the loop's connections of both processes
            for expected in (["rounds:_guarded_view"], []):
                trips.clear()
                again = b.request("GET", f"/rounds/{rid}", key=investigator)
                assert again.content == moved.content
                assert trips == expected


def test_last_versions_are_each_ids_last_version(store_url: str) -> None:
    """``api.versions.last_versions`` (one statement on PostgreSQL) and, on PostgreSQL, the
    same statement read on the event loop (``LoopVersions``; no such reader on any other
    store) read what the recorder's own point query reads, for stored ids, ids with nothing
    stored, and a repeated id; a write is seen by the next read."""
    from api.versions import last_version, last_versions

    with TestClient(create_app(service_settings(store_url))) as client:
        a = Api(client)
        wallet = UUID(a.wallet("ann", deposit="100.00")["wallet_id"])
        rid = UUID(a.start("T1", "multihand", ORDER))
        recorder = client.app.state.audit.recorder  # type: ignore[attr-defined]
        reader: LoopVersions | None = client.app.state.loop_versions  # type: ignore[attr-defined]
        assert (reader is None) is store_url.startswith("sqlite")
        assert client.portal is not None
        key = KeyCache.stream(ADMIN_TOKEN)
        assert key is not None
        nothing = NOTHING
        for ids in ([key, rid], [rid, key, nothing], [nothing, nothing], [rid], [wallet]):
            got = last_versions(recorder, ids)
            assert got == {i: last_version(recorder, i) for i in ids}
            if reader is not None:
                assert client.portal.call(reader.read, ids) == got
        assert last_versions(recorder, [key, rid])[rid] == last_version(recorder, rid) >= 1
        assert last_versions(recorder, [nothing, rid])[nothing] is None
        before = last_version(recorder, wallet)
        a.ok("POST", "/wallets/ann/deposits", json={"amount": "1.00", "transaction_id": "t-9"})
        after = last_version(recorder, wallet)
        assert before is not None
        assert after is not None
        assert after > before
        if reader is not None:
            assert client.portal.call(reader.read, [wallet, key]) == {
                wallet: after,
                key: last_version(recorder, key),
            }


@pytest.mark.postgres
def test_a_closed_reader_or_another_loop_reads_nothing(postgres_url: str) -> None:
    """:meth:`LoopVersions.read` answers None (its caller reads for itself) from another event
    loop than its connections', once closed, and when the server answers an error (the
    connection then dropped, the next read on a new one)."""
    from pg import fresh_database

    with fresh_database(postgres_url) as url:
        app = RoundAudit(env=environment_for(url))
        try:
            reader = loop_versions(app.recorder)
            assert reader is not None
            ids = [NOTHING]

            async def read_then_close() -> tuple[Any, Any]:
                got = await reader.read(ids)
                await reader.aclose()
                return got, await reader.read(ids)

            other = loop_versions(app.recorder)
            assert other is not None
            assert asyncio.run(other.read(ids)) == {NOTHING: None}
            assert asyncio.run(other.read(ids)) is None  # another loop
            assert asyncio.run(read_then_close()) == ({NOTHING: None}, None)
            asyncio.run(other.aclose())
            schema = app.recorder.datastore.schema
            wrong = LoopVersions(reader._connect, schema, "no_such_table", size=1)

            async def refused_then_read() -> tuple[Any, Any, int]:
                refused = await wrong.read(ids)  # an error result: its connection dropped
                wrong._table = app.recorder.events_table_name
                return refused, await wrong.read(ids), wrong._opened

            assert asyncio.run(refused_then_read()) == (None, {NOTHING: None}, 1)
            asyncio.run(wrong.aclose())
        finally:
            app.close()


def test_the_command_pool_runs_each_call_with_its_result_error_and_context() -> None:
    """``CommandWorkers.run``: the function's result, its own error, the caller's context
    variables (a copy: what the function sets does not leak back), a worker thread."""
    import asyncio
    import contextvars
    import threading

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    workers = CommandWorkers(2)

    def seen(x: int) -> tuple[int, str, str]:
        found = var.get()
        var.set("changed")
        return x * 2, found, threading.current_thread().name

    def fails() -> None:
        raise KeyError("the command's own")

    async def main() -> None:
        var.set("caller's")
        doubled, found, thread = await workers.run(seen, 21)
        assert (doubled, found) == (42, "caller's")
        assert thread.startswith("roundaudit-command")
        assert var.get() == "caller's"
        with pytest.raises(KeyError, match="the command's own"):
            await workers.run(fails)

    try:
        asyncio.run(main())
    finally:
        workers.close()
    assert not any(w.is_alive() for w in workers._workers)  # closed: its threads stopped


def test_the_command_pool_runs_at_most_its_threads_at_once() -> None:
    import asyncio
    import threading
    import time

    workers = CommandWorkers(3)
    lock = threading.Lock()
    running, peak = 0, 0

    def work() -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.02)
        with lock:
            running -= 1

    async def main() -> None:
        await asyncio.gather(*(workers.run(work) for _ in range(12)))

    try:
        asyncio.run(main())
    finally:
        workers.close()
    assert peak == 3


def test_a_cancelled_request_does_not_abandon_its_command() -> None:
    """A request cancelled while its command runs (the server shutting down) gets its
    cancellation once the command has finished, never before: no command is left half-seen
    (as with AnyIO's hand-over)."""
    import asyncio
    import threading

    workers = CommandWorkers(1)
    started, release = threading.Event(), threading.Event()
    finished: list[bool] = []

    def command() -> str:
        started.set()
        assert release.wait(10)
        finished.append(True)
        return "committed"

    async def main() -> None:
        task = asyncio.ensure_future(workers.run(command))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
        task.cancel()
        await asyncio.sleep(0.05)
        assert not task.done()  # still waiting for its command
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert finished == [True]

    try:
        asyncio.run(main())
    finally:
        workers.close()


@pytest.mark.postgres
def test_a_commands_key_is_checked_on_the_loop_on_postgres(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL a single command's key version is read on the event loop
    (``api.auth.authorize_loop``) and a key kept at it is checked there: the command's trip
    reads no version of the key. A key revoked through another process is refused at once
    (401, nothing recorded), a wrong secret on a kept key and a role that may not move money
    too (401, 403), a key not kept yet is checked in the trip at the version the loop read;
    the loop's connections killed by the server: the trip reads the key's version itself, as
    before, and the next command is checked on the loop again."""
    from pg import fresh_database

    with fresh_database(postgres_url) as url:
        settings = service_settings(url)
        with TestClient(create_app(settings)) as one, TestClient(create_app(settings)) as two:
            a, b = Api(one), Api(two)
            a.wallet("bob", deposit="100.00")
            cashier, ann = a.key("cashier"), a.key("player", player="ann")
            stream = KeyCache.stream(cashier)
            versions: list[UUID] = []
            loop_reads: list[list[UUID]] = []
            checks: list[str] = []
            _spy(monkeypatch, api.versions, "last_version", lambda _, oid: versions.append(oid))
            _note_loop_reads(monkeypatch, loop_reads.append)
            _spy(monkeypatch, KeyCache, "authenticate", _note_thread(checks))
            trips = _count_trips(monkeypatch)

            def deposit(token: str, tid: str) -> Any:
                return b.request("POST", "/wallets/bob/deposits", key=token,
                                 json={"amount": "1.00", "transaction_id": tid})  # fmt: skip

            def balance() -> str:
                found: str = a.ok("GET", "/wallets/bob", key=ADMIN_TOKEN)["balance"]
                return found

            # not kept yet in this process: checked in the trip, at the version read on the loop
            assert deposit(cashier, "t-1").json()["balance"] == "101.00"
            assert loop_reads == [[stream]]
            assert len(checks) == 1
            assert checks[0].startswith("roundaudit-command-")
            assert stream not in versions  # the trip did not read the key's version again
            assert trips == ["hotpath:_guarded_command"]
            # kept: checked on the loop, the trip reads no version of the key
            loop_reads.clear(), checks.clear(), versions.clear(), trips.clear()
            assert deposit(cashier, "t-2").json()["balance"] == "102.00"
            assert loop_reads == [[stream]]
            assert checks == []
            assert stream not in versions
            assert trips == ["hotpath:_guarded_command"]
            # a wrong secret on the kept key: 401, nothing recorded
            forged = cashier[: cashier.rindex("_") + 1] + "x" * (
                len(cashier) - cashier.rindex("_") - 1
            )
            check_problem(deposit(forged, "t-3"), 401, "unauthenticated")
            # a player's key may not move money: 403 decided on the loop once kept
            check_problem(deposit(ann, "t-4"), 403, "forbidden")
            trips.clear()
            check_problem(deposit(ann, "t-5"), 403, "forbidden")
            assert trips == []  # refused on the loop: no trip at all
            assert balance() == "102.00"
            # revoked through the other process: refused at once, nothing recorded
            a.ok("DELETE", f"/api-keys/{cashier.split('_')[1]}?reason=leaked", key=ADMIN_TOKEN)
            versions.clear()
            check_problem(deposit(cashier, "t-6"), 401, "unauthenticated")
            assert stream not in versions  # refused at the version the loop read
            assert balance() == "102.00"
            check_problem(deposit(cashier, "t-6"), 401, "unauthenticated")  # still
            assert balance() == "102.00"
            # the loop's connections killed: the trip reads the key's version, as before
            other = ADMIN_TOKEN
            assert deposit(other, "t-7").status_code == 200  # kept in this process from now on
            assert _kill_loop_connections(url)
            other_stream = KeyCache.stream(other)
            for tid, read_in_trip in (("t-8", True), ("t-9", False)):
                versions.clear()
                assert deposit(other, tid).status_code == 200
                assert (other_stream in versions) is read_in_trip
            assert balance() == "105.00"
