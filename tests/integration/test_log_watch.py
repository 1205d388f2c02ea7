"""A SQLite file store's catch-up without a query (``domain.sqlite_watch.LogWatch``).

A command's catch-up skips its query of the log's tail only when the store knows the log ends
at the repository's mark: nothing committed to the database, by any connection of any process,
since the store's own last commit, whose last notification id is the mark. These tests hold it
to being exactly as right as the query it replaces:

* a process writing alone catches up reading no tail, and its cache stays current;
* **another writer** (another ``RoundAudit`` on the file in this process, or another process)
  committing anything makes the next catch-up read, and the command decides on what it wrote
  (a withdrawal a stale balance would refuse): with the watch's header check switched off
  the stale copy decides (the test fails), so the scenario needs it;
* a commit of another writer between this store's commit and its reading of the header
  after it (so the header is not this commit's alone) leaves the end unknown;
* a header changed without a commit (a truncating checkpoint), a failed or rolled back
  transaction, a store in memory: the end is unknown, the catch-up reads;
* a boundless round's index (``RoundIndex._catch_up``) asks the same: alone it reads no
  notification, and another application's bet is read and seen.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from roundkit import stack

from domain.application import RoundAudit
from domain.boundless.service import Bet
from domain.errors import InsufficientFunds
from domain.persistence import environment_for
from domain.sqlite_pool import LOG_WATCH
from domain.sqlite_watch import LogWatch
from domain.store import TAIL_PAGE, Watched, read_ahead

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/events.db"


def _tails(app: RoundAudit) -> list[int]:
    """From now on: the after-mark of each query of the log's tail."""
    recorder: Any = app.recorder
    real = recorder.log_tail
    calls: list[int] = []

    def tail(after: int, limit: int) -> Any:
        calls.append(after)
        return real(after, limit)

    recorder.log_tail = tail
    return calls


def _watch(app: RoundAudit) -> LogWatch:
    watch = getattr(app.recorder.datastore, LOG_WATCH)  # type: ignore[attr-defined]
    assert isinstance(watch, LogWatch)
    return watch


def _mark(app: RoundAudit) -> int | None:
    repository = app.repository
    assert isinstance(repository, Watched)
    return repository._mark


def test_a_process_alone_catches_up_without_a_query(url: str) -> None:
    app = RoundAudit(env=environment_for(url))
    app.open_wallet("p", account_type="test")
    app.deposit("p", "5.00", transaction_id="d1")
    tails = _tails(app)
    for n in range(4):
        assert app.deposit("p", "1.00", transaction_id=f"n{n}") == Decimal(6 + n)
    assert tails == []
    assert app.recorder.log_end() == _mark(app)  # type: ignore[attr-defined]
    assert app.balance("p") == Decimal("9.00")
    app.close()


def test_another_application_writing_is_seen(url: str) -> None:
    one, other = RoundAudit(env=environment_for(url)), RoundAudit(env=environment_for(url))
    one.open_wallet("p", account_type="test")
    one.deposit("p", "5.00", transaction_id="d1")
    tails = _tails(one)
    other.deposit("p", "100.00", transaction_id="d2")
    assert one.recorder.log_end() is None  # type: ignore[attr-defined]
    # refused on the stale 5.00 if the catch-up did not read (nothing saved: no conflict)
    assert one.withdraw("p", "50.00", transaction_id="w1") == Decimal("55.00")
    assert len(tails) == 1
    assert one.deposit("p", "1.00", transaction_id="d3") == Decimal("56.00")
    assert len(tails) == 1  # its own commit known again
    one.close()
    other.close()


def _deposit_in_another_process(url: str, wallet: str, amounts: list[str]) -> None:
    script = (
        "import sys\n"
        "from domain.application import RoundAudit\n"
        "from domain.persistence import environment_for\n"
        "app = RoundAudit(env=environment_for(sys.argv[1]))\n"
        "for n, amount in enumerate(sys.argv[3:]):\n"
        "    app.deposit(sys.argv[2], amount, transaction_id=f'other-{n}-{amount}')\n"
        "app.close()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", script, url, wallet, *amounts], check=True, env=env)


def test_another_process_writing_is_seen(url: str) -> None:
    one = RoundAudit(env=environment_for(url))
    one.open_wallet("p", account_type="test")
    one.deposit("p", "5.00", transaction_id="d1")
    assert one.recorder.log_end() == _mark(one)  # type: ignore[attr-defined]
    _deposit_in_another_process(url, "p", ["100.00"])
    assert one.recorder.log_end() is None  # type: ignore[attr-defined]
    assert one.withdraw("p", "50.00", transaction_id="w1") == Decimal("55.00")
    one.close()


def test_without_the_header_check_the_stale_copy_decides(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scenario above needs the header's comparison: an end taken as known whatever was
    committed since decides on the stale balance."""
    one = RoundAudit(env=environment_for(url))
    one.open_wallet("p", account_type="test")
    one.deposit("p", "5.00", transaction_id="d1")
    known = _watch(one)._known
    assert known is not None
    monkeypatch.setattr(LogWatch, "log_end", lambda self: known[1])
    _deposit_in_another_process(url, "p", ["100.00"])
    with pytest.raises(InsufficientFunds):
        one.withdraw("p", "50.00", transaction_id="w1")
    one.close()


def test_a_commit_of_another_writer_right_after_this_ones_leaves_the_end_unknown(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between this store's commit and its reading of the header after it, another writer
    commits: the header then counts two commits since the one read before, so it is not
    taken as this commit's (the next catch-up reads, and sees the other's deposit)."""
    one, other = RoundAudit(env=environment_for(url)), RoundAudit(env=environment_for(url))
    one.open_wallet("p", account_type="test")
    one.deposit("p", "5.00", transaction_id="d1")
    other.balance("p")
    real = LogWatch.committed
    watch = _watch(one)
    raced: list[bool] = []

    def other_first(self: LogWatch) -> None:
        if self is watch and not raced:
            raced.append(True)
            other.deposit("p", "100.00", transaction_id="d2")
        real(self)

    monkeypatch.setattr(LogWatch, "committed", other_first)
    one.deposit("p", "1.00", transaction_id="d3")
    monkeypatch.undo()
    assert raced == [True]
    assert one.recorder.log_end() is None  # type: ignore[attr-defined]
    tails = _tails(one)
    assert one.withdraw("p", "50.00", transaction_id="w1") == Decimal("56.00")
    assert len(tails) == 1
    one.close()
    other.close()


def test_a_header_changed_without_a_commit_is_not_taken_as_known(url: str) -> None:
    app = RoundAudit(env=environment_for(url))
    app.open_wallet("p", account_type="test")
    app.deposit("p", "5.00", transaction_id="d1")
    assert app.recorder.log_end() is not None  # type: ignore[attr-defined]
    path = url.removeprefix("sqlite:///")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    conn.close()
    assert app.recorder.log_end() is None  # type: ignore[attr-defined]
    tails = _tails(app)
    assert app.deposit("p", "1.00", transaction_id="d2") == Decimal("6.00")
    assert len(tails) == 1
    app.close()


def test_a_failed_transaction_forgets_the_end(url: str) -> None:
    app = RoundAudit(env=environment_for(url))
    app.open_wallet("p", account_type="test")
    app.deposit("p", "5.00", transaction_id="d1")
    watch = _watch(app)
    assert watch.log_end() is not None
    datastore: Any = app.recorder.datastore  # type: ignore[attr-defined]

    def failing() -> None:
        with datastore.transaction(commit=True) as c:
            c.execute("CREATE TABLE scratch (x)")
            raise RuntimeError("refused")

    with pytest.raises(RuntimeError):
        failing()
    assert watch.log_end() is None
    app.deposit("p", "1.00", transaction_id="d2")
    assert watch.log_end() == _mark(app)
    app.close()
    assert watch.log_end() is None  # closed with the pool


def test_a_store_in_memory_has_no_watch() -> None:
    app = RoundAudit(env=environment_for("sqlite:///:memory:"))
    assert getattr(app.recorder.datastore, LOG_WATCH) is None  # type: ignore[attr-defined]
    assert app.recorder.log_end() is None  # type: ignore[attr-defined]
    app.close()


def test_two_processes_writing_at_once_leave_every_balance_right(url: str) -> None:
    """This process deposits to its wallet from threads while another process deposits to
    the other wallet; each of this process's commands reads the other wallet's balance
    through a refusal-free withdrawal of 0.01 at the end: every deposit of both is seen."""
    one = RoundAudit(env=environment_for(url))
    one.open_wallet("mine", account_type="test")
    one.open_wallet("theirs", account_type="test")
    other = threading.Thread(
        target=_deposit_in_another_process, args=(url, "theirs", ["1.00"] * 40)
    )
    other.start()
    for n in range(40):
        one.deposit("mine", "1.00", transaction_id=f"m{n}")
    other.join()
    assert one.withdraw("theirs", "40.00", transaction_id="all") == Decimal("0.00")
    assert one.balance("mine") == Decimal("40.00")
    one.close()


def test_a_scope_wants_no_tail_read_ahead_when_the_end_is_known(url: str) -> None:
    """A request's scope (``Watched.ahead``: the idempotency record read with the tail) asks
    for no tail when the log is known to end at the mark, and for one once another writer
    committed; the catch-up then reads none, or uses the tail offered."""
    one, other = RoundAudit(env=environment_for(url)), RoundAudit(env=environment_for(url))
    one.open_wallet("p", account_type="test")
    one.deposit("p", "5.00", transaction_id="d1")
    repository = one.repository
    assert isinstance(repository, Watched)
    tails = _tails(one)
    with read_ahead(one):
        assert repository.tail_wanted() is None
        repository.catch_up()
    assert tails == []
    other.deposit("p", "100.00", transaction_id="d2")
    with read_ahead(one):
        after = repository.tail_wanted()
        assert after == _mark(one)
        rows = one.recorder.log_tail(after, TAIL_PAGE)  # type: ignore[attr-defined]
        repository.offer_tail(after, rows)
        repository.catch_up()
    assert len(tails) == 1  # the one read ahead, not another
    assert one.balance("p") == Decimal("105.00")
    one.close()
    other.close()


def test_a_group_commit_of_many_threads_leaves_the_end_known(url: str) -> None:
    """Saves of many threads committed together (``domain.sqlite_group``): once they are all
    told, the end is the mark, and every balance is right."""
    app = RoundAudit(env=environment_for(url))
    for n in range(8):
        app.open_wallet(f"w{n}", account_type="test")
    barrier = threading.Barrier(8)

    def deposits(n: int) -> None:
        barrier.wait()
        for k in range(5):
            app.deposit(f"w{n}", "1.00", transaction_id=f"w{n}-{k}")

    threads = [threading.Thread(target=deposits, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert app.recorder.log_end() == _mark(app)  # type: ignore[attr-defined]
    tails = _tails(app)
    assert [app.balance(f"w{n}") for n in range(8)] == [Decimal("5.00")] * 8
    assert app.deposit("w0", "1.00", transaction_id="last") == Decimal("6.00")
    assert tails == []
    app.close()


def test_stores_opened_and_closed_keep_no_descriptor(tmp_path: Path) -> None:
    """The ``-shm`` file's descriptor and mapping are closed once SQLite deleted the file (the
    database's last connection closed), never before: a process opening many stores one
    after the other does not keep a descriptor of each."""
    before = len(os.listdir("/proc/self/fd"))
    for n in range(20):
        app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/s{n}.db"))
        app.open_wallet("p", account_type="test")
        app.deposit("p", "1.00", transaction_id=f"d{n}")
        assert app.recorder.log_end() is not None  # type: ignore[attr-defined]
        app.close()
    assert len(os.listdir("/proc/self/fd")) < before + 5


def test_a_file_refused_for_a_mapping_keeps_no_descriptor(tmp_path: Path) -> None:
    """A ``-shm`` file that cannot be mapped (shorter than the header's page, or replaced
    between its ``stat`` and its ``open``) is refused with its descriptor closed: the refusal
    is not kept, so nothing else would ever close it."""
    from domain.sqlite_watch import _shm_view

    short = tmp_path / "short.db-shm"
    short.write_bytes(b"\0" * 16)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(5):
        with pytest.raises(OSError, match="changed while opened"):
            _shm_view(str(short))
    assert len(os.listdir("/proc/self/fd")) == before


#: Run in a process of its own (a regression would wait for ever: the timeout ends it): a
#: mapping made while a store closes from inside it, as a garbage collection starting in
#: ``_shm_view`` (under its lock) runs an unreachable application's ``__del__`` in the same
#: thread (``Application.close -> LogWatch.close -> _sweep``: stop 39's CI hang and a hung
#: ``tests/replays/test_signer.py`` in session 25, py-spy's stack).
_SWEEP_INSIDE_A_MAPPING = """
import os, sqlite3, sys
import domain.sqlite_watch as w
db = sys.argv[1]
keep = sqlite3.connect(db)
keep.execute("PRAGMA journal_mode=WAL")
keep.execute("CREATE TABLE t (x)")
keep.execute("INSERT INTO t VALUES (1)")
keep.commit()
real_open = os.open
def open_while_a_store_closes(*args, **kwargs):
    w._sweep()  # what the finalizer runs
    return real_open(*args, **kwargs)
w.os.open = open_while_a_store_closes
view = w._shm_view(db + "-shm")
w.os.open = real_open
assert view[:4] == w.VERSION, view[:4]
w._sweep()  # the lock is free again: a later sweep runs
print("mapped")
"""


def test_a_store_closed_by_a_finalizer_inside_a_mapping_does_not_wait_for_itself(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _SWEEP_INSIDE_A_MAPPING, str(tmp_path / "f.db")],
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "mapped"


def test_a_mapping_is_kept_while_another_application_has_the_file_open(url: str) -> None:
    """One application closing leaves the other's watch working (the file is not deleted
    while a connection to it is open, so its descriptor is kept)."""
    one, other = RoundAudit(env=environment_for(url)), RoundAudit(env=environment_for(url))
    one.open_wallet("p", account_type="test")
    other.deposit("p", "1.00", transaction_id="d1")
    one.close()
    tails = _tails(other)
    other.deposit("p", "1.00", transaction_id="d2")
    assert other.recorder.log_end() == _mark(other)  # type: ignore[attr-defined]
    assert other.deposit("p", "1.00", transaction_id="d3") == Decimal("3.00")
    assert len(tails) <= 1
    other.close()


def _notification_reads(app: RoundAudit) -> list[int]:
    """From now on: the start of each read of the notification log (the boundless index's
    catch-up, ``domain.boundless.index.RoundIndex._catch_up``)."""
    recorder: Any = app.recorder
    real = recorder.select_notifications
    calls: list[int] = []

    def select(start: int, *args: Any, **kwargs: Any) -> Any:
        calls.append(start)
        return real(start, *args, **kwargs)

    recorder.select_notifications = select
    return calls


def _boundless_round(app: RoundAudit, players: tuple[str, ...]) -> str:
    order = stack("boundless", [["10H", "9D"]], up="9C", hole="8S")
    rid = app.start_round(
        table_id="watch", round_number=1, variant="boundless", production=False, test_order=order
    )
    for p in players:
        app.open_wallet(p, account_type="test")
        app.deposit(p, "30", transaction_id=f"dep-{p}")
    assert app.boundless.place_bets(rid, [Bet(p, "8") for p in players]) == [None] * len(players)
    return rid


def _bettors(view: Any) -> set[str]:
    return {w["player"] for w in view["wagers"]}


def test_a_boundless_round_written_by_this_process_alone_is_read_without_a_query(
    url: str,
) -> None:
    """The round's index moved past its own writes and the store knows its log ends there:
    the round's view reads no notification (BDL: what the round holds is current)."""
    app = RoundAudit(env=environment_for(url))
    rid = _boundless_round(app, ("A", "B"))
    reads = _notification_reads(app)
    assert _bettors(app.boundless.round_view(rid)) == {"A", "B"}
    assert reads == []
    app.close()


def test_a_boundless_bet_of_another_application_is_seen_by_the_round_index(url: str) -> None:
    """Another writer on the file (another application: as another process) places a bet:
    the next catch-up of this process's index reads the log and the round's view has it
    (with the end taken as known, the view would miss the bet: the test fails)."""
    one, other = RoundAudit(env=environment_for(url)), RoundAudit(env=environment_for(url))
    rid = _boundless_round(one, ("A",))
    other.open_wallet("B", account_type="test")
    other.deposit("B", "30", transaction_id="dep-B")
    assert other.boundless.place_bets(rid, [Bet("B", "8")]) == [None]
    reads = _notification_reads(one)
    assert one.recorder.log_end() is None  # type: ignore[attr-defined]
    assert _bettors(one.boundless.round_view(rid)) == {"A", "B"}
    assert reads != []
    one.close()
    other.close()
