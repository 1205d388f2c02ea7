"""Tracked projections on SQLite and PostgreSQL.

* Followed live (a runner thread polling while bots play every variant, in small batches that
  cut rounds in pieces), the projections equal a rebuild from zero, row for row; every hand
  equals the round's own view; every wager and settlement of the log is there once.
* The ledger reconciles with the wallets to the cent (also through a cancelled round whose
  even-money payment is reversed, and DLX-3 refunds).
* A runner that dies between writing its rows and committing (an exception inside the
  transaction, or the process killed) resumes without losing or double-counting a wager.
* The feed cursor never skips or repeats an entry while several writers commit at once.
* Read-your-writes: ``wait_for`` a position; PostgreSQL id gaps after a refused save.
* The runner's own read and decode (``projections.recorded``) equals the library's: every
  notification field by field, every table row for row, and what it leaves to the library
  (an upcast, a tagged value in a payload) decoded as the library decodes it.

The simulated store is built once per module and backend (``simulated``); the default run
plays 30 rounds per variant on SQLite and 10 on PostgreSQL; ``-m slow`` plays 400 and 200.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote
from uuid import UUID, uuid4

import pytest
from eventsourcing.persistence import IntegrityError
from pg import fresh_database
from roundkit import Kit, stack

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from domain.rules import VARIANTS
from domain.wallet import Wallet
from projections import make, recorded
from projections.base import Projection, name_of
from projections.feed import Feed, FeedEntry, daily, last_cursor, read
from projections.hand_scores import HandScores, hands_of_round
from projections.ledger import Ledger, reconcile, round_totals, wagers
from projections.recorded import BatchReader, moment
from projections.runner import (
    DEFAULT_BATCH_SIZE,
    POSTGRES_BATCH_SIZE,
    PositionMoved,
    ProjectionOutdated,
    ProjectionRunner,
)
from projections.store import COPY_MIN_ROWS, ProjectionStore, Tx

ROUNDS = {"sqlite": 30, "postgres": 10}
SLOW_ROUNDS = {"sqlite": 400, "postgres": 200}
ZERO = Decimal("0.00")
ROOT = Path(__file__).resolve().parents[2]

Dump = dict[str, dict[str, list[tuple[Any, ...]]]]
PLACED = ("BetPlaced", "WagerAdded", "SeatBetMirrored")


# ------------------------------------------------------------------------------ helpers


@dataclass
class Simulated:
    url: str
    app: RoundAudit
    live: Dump
    round_ids: list[str]


def open_app(url: str, *, create_table: bool = True) -> RoundAudit:
    return RoundAudit(env=environment_for(url, create_table=create_table))


def log_events(app: RoundAudit) -> list[tuple[int, Any]]:
    out: list[tuple[int, Any]] = []
    start = 1
    while True:
        notes = app.recorder.select_notifications(start, 2000)
        out.extend((n.id, app.mapper.to_domain_event(n)) for n in notes)
        if len(notes) < 2000:
            return out
        start = notes[-1].id + 1


def rebuilt(app: RoundAudit, url: str) -> Dump:
    with ProjectionStore.open(url) as store:
        runner = ProjectionRunner(app, store, make())
        runner.rebuild()
        return runner.dump()


def simulate_with_live_runner(url: str, rounds: int, label: str) -> Simulated:
    """Bots play ``rounds`` of every variant while a runner thread follows the log."""
    app = open_app(url)
    done = threading.Event()
    errors: list[BaseException] = []

    def follow() -> None:
        try:
            reader = open_app(url, create_table=False)
            with ProjectionStore.open(url) as store:
                runner = ProjectionRunner(reader, store, make(), batch_size=97)
                runner.follow(interval=0.01, stop=done.is_set)
                runner.catch_up()
            reader.close()
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    thread = threading.Thread(target=follow, name="projection-runner")
    thread.start()
    round_ids: list[str] = []
    try:
        for variant in VARIANTS:
            report = simulate(app, variant=variant, rounds=rounds, table=f"{label}-{variant}")
            assert report.phases == {"settled": rounds}
            round_ids += report.round_ids
    finally:
        done.set()
        thread.join()
    assert not errors, errors
    with ProjectionStore.open(url) as store:
        runner = ProjectionRunner(app, store, make())
        assert runner.position == runner.head
        live = runner.dump()
    return Simulated(url, app, live, round_ids)


def check_against_log(sim: Simulated) -> None:
    """Every wager, settlement and card of the log is in the projections exactly once, and
    every hand equals the round's own view."""
    events = [e for _, e in log_events(sim.app)]
    placed = Counter((str(e.originator_id), e.wager_id) for e in events if name_of(e) in PLACED)
    settled = [e for e in events if name_of(e) == "WagerSettled"]
    assert placed
    assert max(placed.values()) == 1
    ledger = sim.live["ledger"]["ledger_wagers"]
    assert len(ledger) == len(placed)
    feed = sim.live["feed"]["feed_entries"]
    assert [row[0] for row in feed] == list(range(1, len(settled) + 1))  # gap-free, in order
    assert [row[1] for row in feed] == sorted(row[1] for row in feed)  # log order
    assert len(feed) == len(settled)

    with ProjectionStore.open(sim.url) as store, store.read() as tx:
        for rid in sim.round_ids:
            view = sim.app.round_view(rid)
            hands = {h["hand"]: h for h in hands_of_round(tx, rid)}
            for h in view["hands"]:
                row = hands[h["hand"]]
                assert row["cards"].split() == h["cards"], (rid, h)
                assert (row["total"], bool(row["blackjack"]), bool(row["bust"])) == (
                    h["total"],
                    h["blackjack"],
                    h["bust"],
                ), (rid, h)
                assert row["player"] == h["player"]
                assert bool(row["doubled"]) == h["doubled"]
            dealer = hands["dealer"]["cards"].split()
            assert dealer == view["dealer"]["cards"]  # all shown once the round is settled
            ledger_rows = {w["wager_id"]: w for w in wagers(tx, round_id=rid)}
            for w in view["wagers"]:
                assert ledger_rows[w["wager_id"]]["stake"] == Decimal(w["stake"])
                assert ledger_rows[w["wager_id"]]["payout"] == Decimal(w["payout"])
                assert ledger_rows[w["wager_id"]]["status"] == "settled"
            (total,) = round_totals(tx, rid)
            assert total.net == sum(
                (Decimal(w["payout"]) - Decimal(w["stake"]) for w in view["wagers"]), ZERO
            )


# ------------------------------------------------------------------------------ fixtures


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ],
)
def simulated(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Simulated]:
    """A store where bots played every variant while a runner followed it live."""
    backend: str = request.param
    if backend == "sqlite":
        path = tmp_path_factory.mktemp("projections") / "events.db"
        sim = simulate_with_live_runner("sqlite:///" + quote(str(path)), ROUNDS[backend], "sim")
        yield sim
        sim.app.close()
        return
    session_url: str = request.getfixturevalue("postgres_url")
    with fresh_database(session_url) as url:
        sim = simulate_with_live_runner(url, ROUNDS[backend], "sim")
        yield sim
        sim.app.close()


@pytest.fixture
def app(store_url: str) -> Iterator[RoundAudit]:
    application = open_app(store_url)
    yield application
    application.close()


@pytest.fixture
def store(store_url: str) -> Iterator[ProjectionStore]:
    with ProjectionStore.open(store_url) as s:
        yield s


# ---------------------------------------------------------------- incremental = rebuild


class TestFollowedLiveEqualsRebuild:
    def test_incremental_projection_equals_rebuild_from_zero(self, simulated: Simulated) -> None:
        again = rebuilt(simulated.app, simulated.url)
        for name, tables in simulated.live.items():
            for table, rows in tables.items():
                assert rows, f"{table} is empty"
                assert again[name][table] == rows, f"{table} differs after a rebuild"

    def test_every_wager_card_and_settlement_is_projected_once(self, simulated: Simulated) -> None:
        check_against_log(simulated)

    def test_ledger_reconciles_with_the_wallets_to_the_cent(self, simulated: Simulated) -> None:
        with ProjectionStore.open(simulated.url) as store, store.read() as tx:
            result = reconcile(tx, simulated.app.balance)
        assert result.ok, result.problems
        bots = [p for p in result.players if "-bot" in p]
        assert len(bots) == sum(
            {"deluxe": 6, "multihand": 3, "lucky7": 3, "european": 2, "boundless": 12}.values()
        )
        for player, line in result.players.items():
            assert line["balance"] == simulated.app.balance(player)

    def test_daily_aggregates_add_up_to_the_ledger(self, simulated: Simulated) -> None:
        with ProjectionStore.open(simulated.url) as store, store.read() as tx:
            days = daily(tx, _date("2000-01-01"), _date("2999-12-31"))
            ledger = wagers(tx)
        assert sum(d.wagers for d in days) == len(ledger)
        assert sum((d.handle for d in days), ZERO) == sum((w["stake"] for w in ledger), ZERO)
        assert sum((d.payouts for d in days), ZERO) == sum((w["paid"] for w in ledger), ZERO)
        assert {d.variant for d in days} == set(VARIANTS)
        for d in days:
            assert d.ggr == d.handle - d.payouts
            assert d.rtp is None or d.rtp == (d.payouts / d.handle).quantize(Decimal("1e-6"))


@pytest.mark.slow
@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_thousands_of_rounds_followed_live_equal_a_rebuild(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    def run(url: str) -> None:
        sim = simulate_with_live_runner(url, SLOW_ROUNDS[backend], "slow")
        try:
            assert rebuilt(sim.app, url) == sim.live
            check_against_log(sim)
            with ProjectionStore.open(url) as store, store.read() as tx:
                result = reconcile(tx, sim.app.balance)
            assert result.ok, result.problems
        finally:
            sim.app.close()

    if backend == "sqlite":
        run("sqlite:///" + quote(str(tmp_path / "events.db")))
        return
    with fresh_database(request.getfixturevalue("postgres_url")) as url:
        run(url)


# ------------------------------------------------------------------------ crash and resume


class SimulatedCrash(RuntimeError):
    pass


class CrashingLedger(Ledger):
    """The ledger, dying inside the transaction of its ``crash_on``-th batch, after its rows
    were written and before the commit."""

    def __init__(self, crash_on: int) -> None:
        super().__init__()
        self.crash_on = crash_on
        self.batches = 0

    def apply(self, tx: Tx, events: Any) -> None:
        super().apply(tx, events)
        self.batches += 1
        if self.batches == self.crash_on:
            (count,) = tx.one("SELECT COUNT(*) FROM ledger_wagers") or (0,)
            assert count > 0  # the rows are written in the open transaction
            raise SimulatedCrash("killed between writing rows and committing")


def caught_up(app: RoundAudit, store: ProjectionStore) -> tuple[ProjectionRunner, Dump]:
    """A runner of every projection caught up with ``app``'s log, and its rows."""
    runner = ProjectionRunner(app, store, make())
    runner.catch_up()
    return runner, runner.dump()


def small_store(app: RoundAudit) -> None:
    for variant in VARIANTS:
        simulate(app, variant=variant, rounds=2, table=f"crash-{variant}")


class TestCrashAndResume:
    @pytest.mark.parametrize("where", ["after-rows", "after-position"])
    def test_a_batch_that_dies_before_commit_leaves_nothing_and_is_redone(
        self,
        app: RoundAudit,
        store: ProjectionStore,
        store_url: str,
        monkeypatch: pytest.MonkeyPatch,
        where: str,
    ) -> None:
        small_store(app)
        crashing = CrashingLedger(crash_on=3 if where == "after-rows" else 0)
        projections: list[Projection] = [HandScores(), crashing, Feed()]
        runner = ProjectionRunner(app, store, projections, batch_size=150)
        assert runner.run_once()
        assert runner.run_once()
        before_positions = runner.positions()
        before = runner.dump()
        if where == "after-position":  # die after the tracking row moved, still uncommitted
            original = Tx.set_positions

            def dying(tx: Tx, moves: Sequence[tuple[str, int, int]]) -> None:
                original(tx, moves)
                if "feed" in {name for name, _, _ in moves}:
                    raise SimulatedCrash("killed after moving the positions")

            monkeypatch.setattr(Tx, "set_positions", dying)
        with pytest.raises(SimulatedCrash):
            runner.run_once()
        monkeypatch.undo()
        assert runner.positions() == before_positions
        assert runner.dump() == before  # nothing of the dead batch was kept

        # a restarted process: new connection, new projection objects
        with ProjectionStore.open(store_url) as fresh:
            restarted = ProjectionRunner(app, fresh, make(), batch_size=150)
            restarted.catch_up()
            resumed = restarted.dump()
        assert resumed == rebuilt(app, store_url)
        events = [e for _, e in log_events(app)]
        settled = sum(name_of(e) == "WagerSettled" for e in events)
        assert [r[0] for r in resumed["feed"]["feed_entries"]] == list(range(1, settled + 1))
        placed = sum(name_of(e) in PLACED for e in events)
        assert len(resumed["ledger"]["ledger_wagers"]) == placed
        with fresh_store(store_url) as s, s.read() as tx:
            assert reconcile(tx, app.balance).ok

    def test_a_killed_process_resumes_without_losing_or_doubling(
        self, app: RoundAudit, store_url: str
    ) -> None:
        small_store(app)
        script = (
            "import os, sys\n"
            "from domain.application import RoundAudit\n"
            "from domain.persistence import environment_for\n"
            "from projections import make\n"
            "from projections.ledger import Ledger\n"
            "from projections.runner import ProjectionRunner\n"
            "from projections.store import ProjectionStore\n"
            "url = sys.argv[1]\n"
            "n = 0\n"
            "real = Ledger.apply\n"
            "def apply(self, tx, events):\n"
            "    global n\n"
            "    real(self, tx, events)\n"
            "    n += 1\n"
            "    if n == 4:\n"
            "        os._exit(9)  # killed: no rollback, no commit, no cleanup\n"
            "Ledger.apply = apply\n"
            "app = RoundAudit(env=environment_for(url, create_table=False))\n"
            "runner = ProjectionRunner(app, ProjectionStore.open(url), make(), batch_size=120)\n"
            "runner.catch_up()\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script, store_url],
            check=False,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 9, done.stderr
        with fresh_store(store_url) as s:
            positions = s.positions()
            assert 0 < positions["ledger"][0] < app.recorder.max_notification_id()
            runner = ProjectionRunner(app, s, make(), batch_size=120)
            runner.catch_up()
            resumed = runner.dump()
        assert resumed == rebuilt(app, store_url)


def fresh_store(url: str) -> ProjectionStore:
    return ProjectionStore.open(url)


# ----------------------------------------------------------------------- money edge cases


class TestLedgerMoney:
    def test_reversed_even_money_and_dlx3_refunds_reconcile(
        self, app: RoundAudit, store: ProjectionStore
    ) -> None:
        # multihand: box 1 has BJ against an ace and takes even money (EVEN-1, paid at
        # once); box 2 is still to play when a supervisor cancels: ERR-1 refunds every
        # stake and reverses the even-money payment.
        cards = stack("multihand", [["AS", "KD"], ["9C", "7H"]], up="AH", hole="6S")
        kit = Kit("multihand", cards, players={"eve": "100", "ed": "100"}, app=app, table="em")
        kit.bet("eve", 10, spot=1)
        kit.bet("ed", 20, spot=2)
        kit.close()
        kit.decide("eve", "even_money")
        kit.decide("ed", "no_insurance")
        kit.cancel()
        assert kit.phase == "cancelled"
        # deluxe at a (test) table: sam sits on seat 2 but bets nothing there, so pat's Pair
        # bet on seat 2 is refunded when betting closes (DLX-3)
        for player in ("pat", "sam"):
            app.open_wallet(player, account_type="test")
            app.deposit(player, "100", transaction_id=f"dep-{player}")
        app.open_table("dl", production=False)
        app.sit("dl", player="pat", seat=1)
        app.sit("dl", player="sam", seat=2)
        deluxe = stack("deluxe", [["8C", "8D"]], up="6D", hole="10H", dealer_draws=["7C"])
        dk = Kit("deluxe", deluxe, players={"pat": "0", "sam": "0"}, app=app, table="dl")
        dk.bet("pat", 10, spot=1)
        dk.side("pat", "pair", 5, spot=2)
        dk.close()
        dk.decide("pat", "stand")
        assert dk.phase == "settled"

        runner = ProjectionRunner(app, store, make(), batch_size=7)
        runner.catch_up()
        with store.read() as tx:
            result = reconcile(tx, app.balance)
            rows = {(w["player"], w["wager_id"]): w for w in wagers(tx)}
            entries = read(tx, 0, 100)
            days = daily(tx, _date("2000-01-01"), _date("2999-12-31"), include_test=True)
            production_days = daily(tx, _date("2000-01-01"), _date("2999-12-31"))
        assert result.ok, result.problems
        em = rows[("eve", "1:main")]
        assert (em["status"], em["paid"], em["reversed"], em["refunded"], em["net"]) == (
            "refunded",
            Decimal("20.00"),
            Decimal("20.00"),
            Decimal("10.00"),
            ZERO,
        )
        assert rows[("ed", "2:main")]["status"] == "refunded"
        pair = rows[("pat", "2:pair:pat")]
        assert (pair["status"], pair["rule"], pair["net"]) == ("refunded", "DLX-3", ZERO)
        assert result.players["eve"]["balance"] == Decimal("100.00")
        assert [e.result for e in entries if e.player == "eve"] == ["even_money", "refund"]
        # the feed's seq: 1, 2, 3 ... in log order across batches of 7, a refund's entries
        # written mid-batch included (each batch reads the stored MAX(seq) when it first
        # writes, branch pgproj3)
        assert [e.seq for e in entries] == list(range(1, len(entries) + 1))
        assert [e.notification_id for e in entries] == sorted(e.notification_id for e in entries)
        em_days = [d for d in days if d.table_id == "em"]
        # the cancelled round counts nothing but its two refunds
        assert sum(d.wagers for d in em_days) == 0
        assert sum((d.handle for d in em_days), ZERO) == ZERO
        assert sum((d.payouts for d in em_days), ZERO) == ZERO
        assert sum(d.refunds for d in em_days) == 2
        dl_days = {d.kind: d for d in days if d.table_id == "dl"}
        assert (dl_days["main"].wagers, dl_days["main"].payouts) == (1, Decimal("20.00"))
        assert (dl_days["pair"].wagers, dl_days["pair"].refunds) == (0, 1)
        assert production_days == []  # test tables stay out of the production report

    def test_play_money_at_a_production_table_stays_out_of_revenue(
        self, app: RoundAudit, store: ProjectionStore
    ) -> None:
        """A production deluxe round (a live shoe): rae (real) sits and bets 10 and wins; fay
        (play-for-fun, DLX-1: she may not sit) bets 5 behind rae and wins with her. The
        report of revenue counts rae's wager only; fay's is in the feed, in its own rows."""
        app.open_wallet("rae")
        app.open_wallet("fay", account_type="fun")
        for p in ("rae", "fay"):
            app.deposit(p, "100", transaction_id=f"dep-{p}")
        app.open_table("prod", production=True)
        app.sit("prod", player="rae", seat=1)
        shoe = app.open_shoe(
            table_id="prod", shoe_number=1, kind="live", decks=8, production=True,
            burn_procedure=False,
        )  # fmt: skip
        rid = app.start_round(table_id="prod", round_number=1, variant="deluxe", shoe_id=shoe)
        app.place_bet(rid, player="rae", amount="10", spot=1)
        app.place_behind(rid, player="fay", seat=1, amount="5")
        app.close_betting(rid)
        for card in ("10H", "9D", "9C", "8C"):  # rae 19, dealer 17
            app.deal_card(rid, card)
        app.decide(rid, player="rae", action="stand")
        ProjectionRunner(app, store, make()).catch_up()
        with store.read() as tx:
            entries = {e.player: e for e in read(tx, 0, 100)}
            revenue = daily(tx, _date("2000-01-01"), _date("2999-12-31"))
            everything = daily(tx, _date("2000-01-01"), _date("2999-12-31"), include_test=True)
        assert (entries["rae"].account_type, entries["fay"].account_type) == ("real", "fun")
        assert [(d.kind, d.account_type, d.handle, d.payouts) for d in revenue] == [
            ("main", "real", Decimal("10.00"), Decimal("20.00"))
        ]
        assert sorted((d.kind, d.account_type, d.handle) for d in everything) == [
            ("behind", "fun", Decimal("5.00")),
            ("main", "real", Decimal("10.00")),
        ]

    def test_only_the_rebuilt_projection_is_touched(
        self, app: RoundAudit, store: ProjectionStore
    ) -> None:
        small_store(app)
        runner, before = caught_up(app, store)
        with store.transaction() as tx:
            tx.execute("DELETE FROM feed_entries WHERE seq > 3")
        assert runner.dump() != before
        ProjectionRunner(app, store, [Feed()]).rebuild()
        assert runner.dump() == before


# --------------------------------------------------------------- concurrency and the feed


class TestFeedUnderConcurrentWriters:
    def test_cursor_never_skips_or_repeats_while_writers_commit(
        self, store_url: str, app: RoundAudit
    ) -> None:
        rounds = 10 if store_url.startswith("sqlite") else 6
        variants = ["european", "multihand", "lucky7"]
        with ProjectionStore.open(store_url) as s:
            ProjectionRunner(app, s, make())  # create the tables once, before the workers
        stop = threading.Event()
        errors: list[BaseException] = []
        seen: list[FeedEntry] = []
        moved = Counter[str]()

        def writer(variant: str) -> None:
            try:
                mine = open_app(store_url, create_table=False)
                simulate(mine, variant=variant, rounds=rounds, table=f"conc-{variant}")
                mine.close()
            except BaseException as e:
                errors.append(e)

        def projector(name: str) -> None:
            try:
                mine = open_app(store_url, create_table=False)
                order = ["hand_scores", "ledger", "feed"]
                if name == "p2":  # locks are taken in name order: no deadlock either way
                    order.reverse()
                with ProjectionStore.open(store_url) as s:
                    runner = ProjectionRunner(mine, s, make(order), batch_size=40)
                    while not stop.is_set():
                        try:
                            if not runner.run_once():
                                time.sleep(0.005)
                        except PositionMoved:
                            moved[name] += 1
                mine.close()
            except BaseException as e:
                errors.append(e)

        def tail() -> None:
            try:
                cursor = 0
                with ProjectionStore.open(store_url) as s:
                    while True:
                        finished = stop.is_set()
                        with s.read() as tx:
                            batch = read(tx, cursor, 25)
                        for entry in batch:
                            assert entry.seq == cursor + 1, (cursor, entry.seq)  # no gap, no repeat
                            cursor = entry.seq
                            seen.append(entry)
                        if finished and not batch:
                            return
                        if not batch:
                            time.sleep(0.005)
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=writer, args=(v,)) for v in variants]
        helpers = [threading.Thread(target=projector, args=(f"p{i}",)) for i in (1, 2)]
        reader = threading.Thread(target=tail)
        for t in (*threads, *helpers, reader):
            t.start()
        for t in threads:
            t.join()
        with ProjectionStore.open(store_url) as s:
            final = ProjectionRunner(app, s, make())
            deadline = time.monotonic() + 60
            while final.position < final.head and time.monotonic() < deadline:
                time.sleep(0.02)
            stop.set()
            for t in (*helpers, reader):
                t.join()
            assert not errors, errors
            final.catch_up()
            with s.read() as tx:
                everything = read(tx, 0, 100_000)
                assert last_cursor(tx) == len(everything)
        settled = [
            (str(e.originator_id), int(e.originator_version))
            for _, e in log_events(app)
            if name_of(e) == "WagerSettled"
        ]
        assert [e.seq for e in seen] == list(range(1, len(settled) + 1))
        assert seen == everything
        by_event = {(e.round_id, e.wager_id) for e in seen}
        assert len(by_event) == len(settled)
        assert {e.table_id for e in seen} == {f"conc-{v}" for v in variants}
        followed = _feed_rows(store_url)
        assert rebuilt(app, store_url)["feed"]["feed_entries"] == followed

    def test_wait_for_gives_read_your_writes(self, app: RoundAudit, store_url: str) -> None:
        with ProjectionStore.open(store_url) as s:
            runner = ProjectionRunner(app, s, make())
            kit = Kit(
                "european",
                stack("european", [["10H", "9S"]], up="7D", hole="10C"),
                players={"rw": "50"},
                app=app,
                table="rw",
            )
            kit.bet("rw", 10, spot=1)
            position = app.recorder.max_notification_id()
            assert runner.wait_for(position, timeout=10)
            with s.read() as tx:
                (row,) = wagers(tx, player="rw")
            assert (row["stake"], row["status"]) == (Decimal("10.00"), "open")

            # a reader that does not drive waits for another process to catch up
            kit.close()
            kit.decide("rw", "stand")
            target = app.recorder.max_notification_id()
            with ProjectionStore.open(store_url) as other:
                watcher = ProjectionRunner(app, other, make())
                assert not watcher.wait_for(target, timeout=0.2, drive=False)
                helper = threading.Thread(target=runner.catch_up)
                helper.start()
                assert watcher.wait_for(target, timeout=20, drive=False)
                helper.join()
            with s.read() as tx:
                (row,) = wagers(tx, player="rw")
            assert (row["status"], row["result"], row["payout"]) == (
                "settled",
                "win",
                Decimal("20.00"),
            )

    def test_ids_after_a_refused_save_are_followed_not_waited_for(
        self, store_env: dict[str, str], store_url: str, app: RoundAudit
    ) -> None:
        """A refused multi-aggregate save leaves a gap in PostgreSQL ids: the runner must
        pass it and project what follows."""
        app.open_wallet("gap")
        app.deposit("gap", "10", transaction_id="d1")
        other = RoundAudit(env=store_env)
        stale = other.wallet("gap")
        other.close()
        app.deposit("gap", "5", transaction_id="d2")
        fresh = Wallet.open("newcomer")
        stale.deposit("1", transaction_id="d3")
        with pytest.raises(IntegrityError):
            app.save(fresh, stale)
        app.open_wallet("after")
        app.deposit("after", "7", transaction_id="d4")
        ids = [n for n, _ in log_events(app)]
        if store_url.startswith("postgres"):  # the refused insert used up sequence values
            assert ids != list(range(1, len(ids) + 1))
        else:
            assert ids == list(range(1, len(ids) + 1))
        with ProjectionStore.open(store_url) as s:
            runner = ProjectionRunner(app, s, [Ledger()])
            assert runner.wait_for(app.recorder.max_notification_id(), timeout=10)
            with s.read() as tx:
                result = reconcile(tx, app.balance)
        assert result.ok, result.problems
        assert result.players["gap"]["balance"] == Decimal("15.00")
        assert result.players["after"]["balance"] == Decimal("7.00")
        assert "newcomer" not in result.players

    def test_a_projection_of_another_version_asks_for_a_rebuild(
        self, app: RoundAudit, store: ProjectionStore
    ) -> None:
        small_store_one(app)
        ProjectionRunner(app, store, make()).catch_up()

        class NewLedger(Ledger):
            version = 2

        runner = ProjectionRunner(app, store, [NewLedger()])
        with pytest.raises(ProjectionOutdated, match="rebuild"):
            runner.run_once()
        runner.rebuild()
        assert runner.position == runner.head
        assert store.positions()["ledger"][1] == 2


def small_store_one(app: RoundAudit) -> None:
    simulate(app, variant="european", rounds=3, table="one")


def _feed_rows(url: str) -> list[tuple[Any, ...]]:
    with ProjectionStore.open(url) as s, s.read() as tx:
        return tx.query("SELECT * FROM feed_entries ORDER BY seq")


def _date(text: str) -> Any:
    import datetime as dt

    return dt.date.fromisoformat(text)


@pytest.mark.postgres
def test_postgres_schema_parameter_keeps_projection_tables_beside_the_events(
    postgres_url: str,
) -> None:
    import psycopg
    from pg import libpq_url

    with fresh_database(postgres_url) as base:
        with psycopg.connect(libpq_url(base), autocommit=True) as conn:
            conn.execute("CREATE SCHEMA audit")
        url = f"{base}?schema=audit"
        app = open_app(url)
        try:
            small_store_one(app)
            with ProjectionStore.open(url) as s:
                runner = ProjectionRunner(app, s, make())
                runner.catch_up()
                with s.read() as tx:
                    assert reconcile(tx, app.balance).ok
        finally:
            app.close()
        with psycopg.connect(libpq_url(base)) as conn:
            rows = conn.execute(
                "SELECT table_schema, table_name FROM information_schema.tables"
                " WHERE table_name IN ('projection_tracking', 'ledger_wagers', 'feed_entries')"
            ).fetchall()
        assert sorted(rows) == [
            ("audit", "feed_entries"),
            ("audit", "ledger_wagers"),
            ("audit", "projection_tracking"),
        ]


# ------------------------------------------------------------- the runner's own decoding


def _every_variant(app: RoundAudit, rounds: int, label: str) -> None:
    for variant in VARIANTS:
        simulate(app, variant=variant, rounds=rounds, table=f"{label}-{variant}")


def _stored(app: RoundAudit, topic_suffix: str) -> Any:
    """The first stored notification whose topic ends with ``topic_suffix``."""
    notes = app.recorder.select_notifications(1, 100_000)
    return next(n for n in notes if n.topic.endswith(topic_suffix))


class TestLightDecoding:
    """``projections.recorded.BatchReader``: the runner reads the event table and parses the
    payloads itself (no ``Notification``, UUID or ``datetime`` objects), and must give exactly
    what the library's ``select_notifications`` and ``mapper`` give."""

    def test_every_notification_is_decoded_as_the_library_decodes_it(self, app: RoundAudit) -> None:
        _every_variant(app, 2, "dec")
        light, library = BatchReader(app), BatchReader(app, light=False)
        assert light.light
        assert not library.light
        head = int(app.recorder.max_notification_id() or 0)
        got, want = light.read(1, 100_000, head, ()), library.read(1, 100_000, head, ())
        assert len(got) == len(want) > 300
        for (n, a), (m, b) in zip(got, want, strict=True):
            assert n == m
            assert vars(a) == vars(b)
            assert moment(a) == moment(b)
        topics = sorted({t for p in make() for t in p.topics()})
        for first, limit, stop in ((1, 100_000, head), (7, 50, head), (3, 100_000, head // 2)):
            ids = [n.id for n in app.recorder.select_notifications(first, limit, stop, topics)]
            assert [n for n, _ in light.read(first, limit, stop, topics)] == ids

    def test_a_read_in_many_small_chunks_is_the_librarys(
        self, app: RoundAudit, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """PostgreSQL reads a batch in chunks decoded as they arrive (``STREAM_ROWS``): chunk
        boundaries anywhere give the same records, in the same order, as one read."""
        _every_variant(app, 1, "chunk")
        head = int(app.recorder.max_notification_id() or 0)
        want = BatchReader(app, light=False).read(1, 100_000, head, ())
        monkeypatch.setattr(recorded, "STREAM_ROWS", 7)
        got = BatchReader(app).read(1, 100_000, head, ())
        assert [n for n, _ in got] == [n for n, _ in want]
        assert [vars(a) for _, a in got] == [vars(b) for _, b in want]

    def test_the_tables_equal_the_library_paths_row_for_row(
        self, app: RoundAudit, store: ProjectionStore
    ) -> None:
        _every_variant(app, 4, "rows")
        library = ProjectionRunner(app, store, make(), light=False)
        assert not library.reader.light
        library.rebuild()
        want = library.dump()
        for batch_size in (5000, 97):
            light = ProjectionRunner(app, store, make(), batch_size=batch_size)
            assert light.reader.light
            light.rebuild()
            assert light.dump() == want
        assert all(rows for tables in want.values() for rows in tables.values())

    def test_an_upcast_a_tagged_payload_value_and_another_offset_are_the_librarys(
        self, app: RoundAudit
    ) -> None:
        import orjson
        from eventsourcing.persistence import StoredEvent
        from eventsourcing.utils import get_topic

        from domain.round import Round
        from projections.base import utc_day

        _every_variant(app, 1, "odd")
        card = _stored(app, "Round.CardToHand")  # a consequence: class_version 2, an actor
        old = orjson.loads(card.state)
        del old["class_version"], old["actor"]  # as stored before version 2
        extra = orjson.loads(card.state)
        extra["odd_amount"] = {"_data_": "1.50", "_type_": "decimal_str"}
        extra["odd_id"] = {"_data_": uuid4().hex, "_type_": "uuid_hex"}
        at = "2026-01-02T00:30:00.250000+01:00"  # not the server's UTC
        extra["timestamp"] = {"_data_": at, "_type_": "datetime_iso"}
        topic = get_topic(Round.CardToHand)
        crafted = [
            StoredEvent(uuid4(), 1, topic, orjson.dumps(state, option=orjson.OPT_SORT_KEYS))
            for state in (old, extra)
        ]
        app.recorder.insert_events(crafted)
        head = int(app.recorder.max_notification_id() or 0)
        got = BatchReader(app).read(1, 100_000, head, [topic])[-2:]
        want = BatchReader(app, light=False).read(1, 100_000, head, [topic])[-2:]
        (_, upcast), (_, tagged) = got
        assert [vars(r) for _, r in got] == [vars(r) for _, r in want]
        assert "actor" not in old
        assert upcast.actor == {"kind": "system", "id": "roundaudit"}
        assert tagged.odd_amount == Decimal("1.50")
        assert tagged.odd_id == UUID(extra["odd_id"]["_data_"])
        assert tagged.at == at
        assert utc_day(tagged) == "2026-01-01"  # the UTC day of 00:30 at +01:00

    def test_a_lost_postgres_connection_is_retried_as_the_library_retries_it(
        self, app: RoundAudit, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        import contextlib

        from eventsourcing.persistence import OperationalError
        from eventsourcing.postgres import PostgresApplicationRecorder

        if not isinstance(app.recorder, PostgresApplicationRecorder):
            pytest.skip("PostgreSQL's reads are retried (as the library's select is)")
        small_store_one(app)
        head = int(app.recorder.max_notification_id() or 0)
        datastore = app.recorder.datastore
        real = datastore.get_connection
        lost: list[int] = []

        @contextlib.contextmanager
        def flaky() -> Iterator[Any]:
            if not lost:
                lost.append(1)
                raise OperationalError("connection lost")
            with real() as conn:
                yield conn

        monkeypatch.setattr(datastore, "get_connection", flaky)
        got = BatchReader(app).read(1, 100_000, head, ())
        assert lost == [1]
        assert [n for n, _ in got] == [
            n.id for n in app.recorder.select_notifications(1, 100_000, stop=head)
        ]

    def test_a_payload_field_named_like_a_records_own_is_refused(self) -> None:
        from projections.recorded import RESERVED, of_event

        class Named:
            pass

        e = Named()
        e.originator_id, e.originator_version = uuid4(), 1  # type: ignore[attr-defined]
        e.timestamp = datetime.now(UTC)  # type: ignore[attr-defined]
        e.name = "shadowing"  # type: ignore[attr-defined]
        assert "name" in RESERVED
        with pytest.raises(ValueError, match="named like"):
            of_event(e)


# ------------------------------------------------------------------ statements per batch


class TestBatchStatements:
    """Issue 15: a batch costs a handful of statements whatever its size (no query per event:
    round facts, wagers, wallets, hands, stakes and bet-behind types are read for the whole
    batch at once, and rows are written with one ``Tx.insert`` per table: an ``executemany``
    on SQLite, a ``COPY`` and at most one statement on PostgreSQL)."""

    @staticmethod
    def _statements(app: RoundAudit, store: ProjectionStore, batch_size: int) -> tuple[int, int]:
        counted: Counter[str] = Counter()
        statements = ("execute", "query", "executemany", "insert", "update")
        originals = {name: getattr(Tx, name) for name in statements}

        def counting(name: str) -> Any:
            def call(self: Tx, sql: str, *args: Any, **kwargs: Any) -> Any:
                counted[name] += 1
                return originals[name](self, sql, *args, **kwargs)

            return call

        runner = ProjectionRunner(app, store, make(), batch_size=batch_size)
        try:
            for name in originals:
                setattr(Tx, name, counting(name))
            read = runner.rebuild()
        finally:
            for name, original in originals.items():
                setattr(Tx, name, original)
        return read, sum(counted.values())

    def test_a_batch_costs_the_same_statements_for_four_times_the_rounds(
        self, app: RoundAudit, store: ProjectionStore
    ) -> None:
        for variant in ("european", "deluxe", "boundless"):
            simulate(app, variant=variant, rounds=1, players=3, table=f"few-{variant}")
        few, few_statements = self._statements(app, store, batch_size=100_000)
        for variant in ("european", "deluxe", "boundless"):
            simulate(app, variant=variant, rounds=3, players=3, table=f"more-{variant}")
        many, many_statements = self._statements(app, store, batch_size=100_000)
        assert many > 2 * few  # the second rebuild's single batch holds far more events
        assert many_statements == few_statements, (few, few_statements, many, many_statements)

    def test_small_batches_that_cut_rounds_equal_one_batch(
        self, app: RoundAudit, store: ProjectionStore
    ) -> None:
        for variant in ("european", "deluxe", "boundless"):
            simulate(app, variant=variant, rounds=2, players=3, table=f"cut-{variant}")
        runner = ProjectionRunner(app, store, make(), batch_size=100_000)
        runner.rebuild()
        whole = runner.dump()
        cut = ProjectionRunner(app, store, make(), batch_size=7)  # prefetches across batches
        cut.rebuild()
        assert cut.dump() == whole

    def test_a_rebuild_asks_nothing_stored_of_rounds_started_in_its_batch(
        self, app: RoundAudit, store: ProjectionStore
    ) -> None:
        """Rows of a round whose ``Started`` is in the batch cannot be stored yet: the hands
        and wagers of such rounds are not looked up (a rebuild in one batch asks for none),
        and the rows equal those of batches that cut the rounds (which do look them up)."""
        for variant in ("european", "deluxe", "boundless"):
            simulate(app, variant=variant, rounds=2, players=3, table=f"new-{variant}")
        asked: list[str] = []
        original = Tx.query

        def query(self: Tx, sql: str, *args: Any, **kwargs: Any) -> Any:
            asked.append(sql)
            return original(self, sql, *args, **kwargs)

        runner = ProjectionRunner(app, store, make(), batch_size=100_000)
        Tx.query = query  # type: ignore[method-assign]
        try:
            runner.rebuild()
        finally:
            Tx.query = original  # type: ignore[method-assign]
        looked_up = [q for q in asked if "FROM hand_scores_hands" in q or "FROM ledger_wagers" in q]
        assert looked_up == []
        # nor the round facts of anything: every round started in the batch, and a wallet's
        # events (the ledger's and the feed's) have none to ask for (branch pgproj3)
        facts = [q for q in asked if re.search(r"FROM \w+_rounds WHERE", q)]
        assert facts == []
        whole = runner.dump()
        cut = ProjectionRunner(app, store, make(), batch_size=13)
        cut.rebuild()
        assert cut.dump() == whole

    def test_a_catch_up_in_one_batch_reads_the_head_once(
        self, app: RoundAudit, store: ProjectionStore
    ) -> None:
        """The head a catch-up reads at its start is the one its first batch reads up to
        (branch ``pgproj2``: a round trip fewer), and every projection reaches it."""
        simulate(app, variant="european", rounds=2, players=3, table="head-once")
        runner = ProjectionRunner(app, store, make(), batch_size=100_000)
        recorder = app.recorder
        original = recorder.max_notification_id
        heads: list[int] = []

        def counted() -> Any:
            heads.append(int(original() or 0))
            return heads[-1]

        recorder.max_notification_id = counted
        try:
            read = runner.catch_up()
        finally:
            del recorder.max_notification_id  # the class's method again
        assert heads == [recorder.max_notification_id()]
        assert read > 0
        assert set(runner.positions().values()) == {heads[0]}

    def test_a_batch_given_a_head_reads_up_to_it_only(
        self, app: RoundAudit, store: ProjectionStore, store_url: str
    ) -> None:
        """``run_once(head=...)``: the batch reads the notifications up to that head, never
        past it, and the next batch (which reads the head itself) applies the rest: the rows
        equal a rebuild's."""
        simulate(app, variant="european", rounds=1, players=2, table="head-first")
        first = app.recorder.max_notification_id()
        simulate(app, variant="deluxe", rounds=1, players=2, table="head-then")
        runner = ProjectionRunner(app, store, make(), batch_size=100_000)
        assert runner.run_once(head=first) > 0
        assert set(runner.positions().values()) == {first}
        assert runner.run_once() > 0
        assert set(runner.positions().values()) == {runner.head}
        assert runner.dump() == rebuilt(app, store_url)

    def test_projections_at_different_positions_each_get_the_events_after_their_own(
        self, app: RoundAudit, store: ProjectionStore
    ) -> None:
        """One batch serves a projection rebuilt from zero and others already half-way: each
        applies only the events after its own position (nothing twice, nothing missed)."""
        for variant in ("european", "boundless"):
            simulate(app, variant=variant, rounds=2, players=3, table=f"half-{variant}")
        runner = ProjectionRunner(app, store, make(), batch_size=100_000)
        runner.catch_up()
        for variant in ("european", "boundless"):
            simulate(app, variant=variant, rounds=2, players=3, table=f"rest-{variant}")
        with store.transaction(ddl=True) as tx:  # feed and hand scores back to zero
            for p in runner.projections:
                if p.name in ("feed", "hand_scores"):
                    p.drop(tx)
                    tx.forget(p.name)
                    p.create(tx)
                    tx.set_position(p.name, 0, p.version)
        positions = runner.positions()
        assert positions["feed"] == 0 < positions["ledger"] < runner.head
        assert runner.run_once() > 0  # one batch for all of them
        assert set(runner.positions().values()) == {runner.head}
        mixed = runner.dump()
        runner.rebuild()
        assert runner.dump() == mixed


class TestBatchTracking:
    """A batch locks its projections' tracking rows with one statement and moves them with
    one (branch ``pgproj``: each was a statement a projection, a round trip each on
    PostgreSQL), in the batch's transaction."""

    def test_one_statement_locks_and_one_moves_every_tracking_row(
        self, app: RoundAudit, store: ProjectionStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        small_store_one(app)
        runner = ProjectionRunner(app, store, make())
        assert len(runner.projections) == 5
        sent: list[str] = []
        query, execute = Tx.query, Tx.execute

        def querying(tx: Tx, sql: str, params: Sequence[Any] = ()) -> Any:
            sent.append(sql)
            return query(tx, sql, params)

        def executing(tx: Tx, sql: str, params: Sequence[Any] = ()) -> Any:
            sent.append(sql)
            return execute(tx, sql, params)

        monkeypatch.setattr(Tx, "query", querying)
        monkeypatch.setattr(Tx, "execute", executing)
        assert runner.run_once() > 0
        monkeypatch.undo()
        tracking = [q for q in sent if "projection_tracking" in q]
        locks = [q for q in tracking if "WHERE" in q]
        moves = [q for q in tracking if q.startswith("INSERT INTO projection_tracking")]
        assert len(locks) == 1, tracking
        assert "FOR UPDATE" in locks[0] or store.dialect == "sqlite"
        assert len(moves) == 1, tracking
        assert set(runner.positions().values()) == {runner.head}

    def test_lock_positions_returns_the_tracked_ones_and_set_positions_moves_them_all(
        self, store: ProjectionStore
    ) -> None:
        with store.transaction() as tx:
            tx.set_positions([("a", 3, 1), ("b", 5, 2)])
        with store.transaction() as tx:
            assert tx.lock_positions(["b", "a", "never"]) == {"a": (3, 1), "b": (5, 2)}
            assert tx.lock_positions([]) == {}
            tx.set_positions([("b", 8, 2), ("a", 9, 1)])
        assert {k: v for k, v in store.positions().items() if k in "ab"} == {
            "a": (9, 1),
            "b": (8, 2),
        }

        def dying() -> None:
            with store.transaction() as tx:
                tx.set_positions([("a", 100, 1)])
                raise SimulatedCrash("killed before commit")

        with pytest.raises(SimulatedCrash):
            dying()
        assert store.positions()["a"] == (9, 1)  # and the connection goes on
        with store.read() as tx:
            assert tx.positions()["a"] == (9, 1)

    def test_the_default_batch_is_larger_on_postgres(
        self, app: RoundAudit, store: ProjectionStore
    ) -> None:
        runner = ProjectionRunner(app, store, make())
        want = POSTGRES_BATCH_SIZE if store.dialect == "postgres" else DEFAULT_BATCH_SIZE
        assert runner.batch_size == want
        assert ProjectionRunner(app, store, make(), batch_size=7).batch_size == 7


class TestKnownNewRows:
    """Rows whose keys a batch knows are not stored (their round started in the batch, or the
    batch's prefetch found nothing) are written as plain inserts (on PostgreSQL a ``COPY``
    straight into the table, no staging table and no conflict check); the others as
    upserts. A from-zero rebuild writes its hands, wagers, stakes and rounds that way, and a
    row thought new that is stored after all fails the batch: never overwritten, never
    counted twice."""

    def test_a_rebuild_in_one_batch_writes_its_rounds_hands_and_wagers_as_new_rows(
        self, app: RoundAudit, store: ProjectionStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        for variant in ("european", "deluxe", "boundless"):
            simulate(app, variant=variant, rounds=2, players=3, table=f"fresh-{variant}")
        written: list[tuple[str, str, int]] = []
        insert = Tx.insert

        def inserting(tx: Tx, table: str, columns: Any, rows: Any, conflict: str = "") -> None:
            written.append((table, conflict, len(rows)))
            insert(tx, table, columns, rows, conflict)

        runner = ProjectionRunner(app, store, make(), batch_size=100_000)
        monkeypatch.setattr(Tx, "insert", inserting)
        runner.rebuild()
        monkeypatch.undo()
        tables = (
            "hand_scores_hands",
            "ledger_wagers",
            "observed_rtp_wagers",
            "observed_rtp_round_stakes",
            "rounds_index",
            "rounds_index_players",
        )
        for table in tables:
            plain = sum(n for t, conflict, n in written if t == table and not conflict)
            upserted = sum(n for t, conflict, n in written if t == table and conflict)
            assert plain > 0, (table, written)
            assert upserted == 0, (table, written)
        whole = runner.dump()
        cut = ProjectionRunner(app, store, make(), batch_size=11)  # rounds cut: upserts too
        cut.rebuild()
        assert cut.dump() == whole

    def test_a_new_row_that_is_stored_after_all_fails_the_batch(
        self, app: RoundAudit, store: ProjectionStore
    ) -> None:
        small_store_one(app)
        runner, before = caught_up(app, store)
        with store.transaction() as tx:  # positions back to zero, rows kept
            for p in runner.projections:
                tx.set_position(p.name, 0, p.version)
        with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
            runner.run_once()
        assert set(runner.positions().values()) == {0}
        assert runner.dump() == before  # nothing overwritten, nothing added twice


class TestCollectorPaused:
    """A batch is read, decoded and applied with automatic garbage collection held off
    (``domain.collector.paused``: the collector otherwise walked the batch's thousands of
    live events again and again), and the collector is on again after it, also after a
    batch that failed."""

    def test_a_batch_runs_with_the_collector_held_off_and_on_again_after(
        self, app: RoundAudit, store: ProjectionStore
    ) -> None:
        import gc

        seen: list[bool] = []

        class Watching(Feed):
            def apply(self, tx: Tx, events: Any) -> None:
                seen.append(gc.isenabled())
                super().apply(tx, events)

        small_store_one(app)
        assert gc.isenabled()
        runner = ProjectionRunner(app, store, [Watching()], batch_size=3)
        runner.catch_up()
        assert len(seen) > 1
        assert not any(seen)
        assert gc.isenabled()
        assert runner.dump()["feed"]["feed_entries"] != []

    def test_the_collector_is_on_again_after_a_batch_that_failed(
        self, app: RoundAudit, store: ProjectionStore
    ) -> None:
        import gc

        small_store(app)
        runner = ProjectionRunner(app, store, [CrashingLedger(crash_on=1)])
        with pytest.raises(SimulatedCrash):
            runner.run_once()
        assert gc.isenabled()
        assert runner.position == 0


# ------------------------------------------------------------------------- bulk writes


class TestBulkWrites:
    """``Tx.insert`` / ``Tx.update``: one ``executemany`` on SQLite; on PostgreSQL a plain
    insert of ``COPY_MIN_ROWS`` rows or more is a ``COPY`` into the table, and an upsert or an
    update is one ``INSERT ... SELECT`` / ``UPDATE ... FROM`` the rows sent as one array a
    column (``unnest``, each cast to its column's type; branch ``pgproj2``: no staging table).
    Either way a row is written once, in the batch's transaction, and a rolled-back batch
    leaves nothing."""

    COLUMNS = ("k", "n", "note")
    UPSERT = "ON CONFLICT (k) DO UPDATE SET n = bulk_probe.n + excluded.n, note = excluded.note"

    @staticmethod
    def _rows(first: int, last: int) -> list[tuple[str, int, str | None]]:
        # text that COPY must escape: quotes, a backslash, a tab, a newline; and NULLs
        return [
            (f"k{i:03}", i, None if i % 3 else f"it's \\ {i}\t'q'\n") for i in range(first, last)
        ]

    @staticmethod
    def _table(store: ProjectionStore) -> None:
        with store.transaction(ddl=True) as tx:
            tx.execute(
                "CREATE TABLE IF NOT EXISTS bulk_probe"
                " (k TEXT PRIMARY KEY, n BIGINT NOT NULL, note TEXT)"
            )

    @staticmethod
    def _stored(url: str) -> list[tuple[Any, ...]]:
        with fresh_store(url) as other, other.read() as tx:  # another connection
            return tx.query("SELECT k, n, note FROM bulk_probe ORDER BY k")

    def test_a_table_upserted_twice_in_one_transaction_gets_each_row_once(
        self, store: ProjectionStore, store_url: str
    ) -> None:
        self._table(store)
        n = 2 * COPY_MIN_ROWS
        first, second = self._rows(0, n), self._rows(n // 2, n + n // 2)
        with store.transaction() as tx:
            tx.insert("bulk_probe", self.COLUMNS, first, "ON CONFLICT (k) DO NOTHING")
            tx.insert("bulk_probe", self.COLUMNS, second, self.UPSERT)
        expected = {k: (k, i, note) for k, i, note in first}
        for k, i, note in second:
            expected[k] = (k, expected[k][1] + i if k in expected else i, note)
        assert self._stored(store_url) == sorted(expected.values())

    def test_a_rolled_back_batch_leaves_nothing_and_its_connection_goes_on(
        self, store: ProjectionStore, store_url: str
    ) -> None:
        self._table(store)
        rows = self._rows(0, 3 * COPY_MIN_ROWS)

        def dying_batch() -> None:
            with store.transaction() as tx:
                tx.insert("bulk_probe", self.COLUMNS, rows)  # straight into the table
                tx.insert("bulk_probe", self.COLUMNS, rows, "ON CONFLICT (k) DO NOTHING")
                raise SimulatedCrash("killed before commit")

        with pytest.raises(SimulatedCrash):
            dying_batch()
        assert self._stored(store_url) == []
        with store.transaction() as tx:  # the same connection goes on
            tx.insert("bulk_probe", self.COLUMNS, rows[:COPY_MIN_ROWS])
            tx.insert("bulk_probe", self.COLUMNS, rows, self.UPSERT)
        doubled = [(k, 2 * i if i < COPY_MIN_ROWS else i, note) for k, i, note in rows]
        assert self._stored(store_url) == doubled

    def test_a_copy_is_answered_by_the_next_statement_or_the_commit(
        self, store: ProjectionStore, store_url: str
    ) -> None:
        """On PostgreSQL a ``COPY``'s answer is collected late (branch ``pgproj3``): the
        next statement of the transaction waits for it and sees its rows, and a ``COPY``
        last before the commit is committed."""
        self._table(store)
        rows = self._rows(0, 3 * COPY_MIN_ROWS)
        postgres = store.dialect == "postgres"
        with store.transaction() as tx:
            tx.insert("bulk_probe", self.COLUMNS, rows[:COPY_MIN_ROWS])
            assert store._unanswered is postgres  # sent, its answer not awaited
            assert tx.query("SELECT COUNT(*) FROM bulk_probe") == [(COPY_MIN_ROWS,)]
            assert store._unanswered is False
            tx.insert("bulk_probe", self.COLUMNS, rows[COPY_MIN_ROWS:])  # last: the commit's
        assert store._unanswered is False
        assert self._stored(store_url) == rows

    def test_a_copy_that_fails_fails_its_transaction_and_the_connection_goes_on(
        self, store: ProjectionStore, store_url: str
    ) -> None:
        """A ``COPY`` meeting a stored key fails its transaction whether its answer is
        collected by the next statement, by the commit or by the rollback of an error raised
        meanwhile: nothing of the transaction is kept, and the connection goes on."""
        self._table(store)
        rows = self._rows(0, 3 * COPY_MIN_ROWS)
        with store.transaction() as tx:
            tx.insert("bulk_probe", self.COLUMNS, rows[:1])
        clashing = rows[COPY_MIN_ROWS : 2 * COPY_MIN_ROWS] + rows[:1]  # the last one stored

        def next_statement() -> None:
            with store.transaction() as tx:
                tx.insert("bulk_probe", self.COLUMNS, clashing)
                tx.insert("bulk_probe", self.COLUMNS, rows[2 * COPY_MIN_ROWS :])

        def commit() -> None:
            with store.transaction() as tx:
                tx.insert("bulk_probe", self.COLUMNS, clashing)

        for failing in (next_statement, commit):
            with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
                failing()
            assert self._stored(store_url) == rows[:1]

        def crash() -> None:
            with store.transaction() as tx:
                tx.insert("bulk_probe", self.COLUMNS, rows[1:])
                raise SimulatedCrash("killed with the copy's answer pending")

        with pytest.raises(SimulatedCrash):
            crash()
        assert store._unanswered is False
        assert self._stored(store_url) == rows[:1]
        with store.transaction() as tx:  # the same connection goes on
            tx.insert("bulk_probe", self.COLUMNS, rows[1:])
        assert self._stored(store_url) == rows

    def test_update_sets_the_keyed_rows_only(self, store: ProjectionStore, store_url: str) -> None:
        self._table(store)
        rows = self._rows(0, 3 * COPY_MIN_ROWS)
        with store.transaction() as tx:
            tx.insert("bulk_probe", self.COLUMNS, rows)
        changed = {k: (-i, f"now {i}") for k, i, _ in rows[::2]}
        with store.transaction() as tx:
            tx.update("bulk_probe", ("k",), ("n", "note"), [(*v, k) for k, v in changed.items()])
        assert self._stored(store_url) == [
            (k, *changed[k]) if k in changed else (k, i, note) for k, i, note in rows
        ]

    @pytest.mark.parametrize("n", [1, COPY_MIN_ROWS - 1, 3 * COPY_MIN_ROWS])
    def test_upserts_and_updates_of_any_size_equal_row_by_row_statements(
        self, store: ProjectionStore, store_url: str, n: int
    ) -> None:
        """Every column type the projections use (text with characters ``COPY`` and arrays
        escape, 64-bit integers, integers, booleans), NULLs in each, and a column that is NULL
        in every row of the batch (no value to tell its array's type: the cast does), written
        by ``Tx.insert`` with a conflict clause and ``Tx.update``, equal the rows the same
        statements give one row at a time."""
        ddl = (
            "CREATE TABLE IF NOT EXISTS {name} (k TEXT PRIMARY KEY, big BIGINT, small INTEGER,"
            " flag BOOLEAN, note TEXT, never BIGINT)"
        )
        columns = ("k", "big", "small", "flag", "note", "never")
        upsert = (
            "ON CONFLICT (k) DO UPDATE SET big = {name}.big + excluded.big,"
            " flag = excluded.flag, note = excluded.note"
        )
        rows = [
            (
                f"k{i}",
                None if i % 4 == 1 else 3_000_000_000 * (i + 1) * (-1) ** i,
                None if i % 4 == 2 else i - 5,
                None if i % 4 == 3 else i % 2 == 0,
                None if i % 3 else f'it\'s {{"a", b}} \\ {i}\t\n\r NULL',
                None,
            )
            for i in range(n)
        ]
        again = [
            (k, 7, s, None if f is None else not f, f"again {k}", None) for k, _, s, f, *_ in rows
        ]
        changed = [(-i, f"now {i}" if i % 2 else None, f"k{i}") for i in range(0, n, 2)]

        def write(name: str, one_by_one: bool) -> None:
            with store.transaction(ddl=True) as tx:
                tx.execute(ddl.format(name=name))
            with store.transaction() as tx:
                for batch in (rows, again):
                    for part in [[r] for r in batch] if one_by_one else [batch]:
                        tx.insert(name, columns, part, upsert.format(name=name))
            with store.transaction() as tx:
                for part in [[r] for r in changed] if one_by_one else [changed]:
                    tx.update(name, ("k",), ("small", "note"), part)

        write("bulk_types", one_by_one=False)
        write("bulk_types_each", one_by_one=True)
        with fresh_store(store_url) as other, other.read() as tx:
            whole = tx.query(f"SELECT {', '.join(columns)} FROM bulk_types ORDER BY k")
            each = tx.query(f"SELECT {', '.join(columns)} FROM bulk_types_each ORDER BY k")
        assert whole == each
        assert len(whole) == n
        assert whole[0][1] == 3_000_000_000 + 7  # a 64-bit sum, exact
        assert whole[0][2] == 0  # updated by key
        assert whole[0][4] is None

    def test_a_table_made_again_with_other_column_types_is_written_with_them(
        self, store: ProjectionStore, store_url: str
    ) -> None:
        """PostgreSQL reads a table's column types once a connection; a schema change (a
        rebuild that drops and makes the tables again) forgets them."""
        self._table(store)
        rows = self._rows(0, 2)
        with store.transaction() as tx:
            tx.insert("bulk_probe", self.COLUMNS, rows, self.UPSERT)
        with store.transaction(ddl=True) as tx:
            tx.execute("DROP TABLE bulk_probe")
            tx.execute("CREATE TABLE bulk_probe (k TEXT PRIMARY KEY, n TEXT NOT NULL, note TEXT)")
        words = [("k1", "one", None), ("k2", "two", "b")]
        with store.transaction() as tx:
            tx.insert("bulk_probe", self.COLUMNS, words, self.UPSERT.replace("+", "||"))
            tx.update("bulk_probe", ("k",), ("n",), [("three", "k2")])
        assert self._stored(store_url) == [("k1", "one", None), ("k2", "three", "b")]

    def test_postgres_column_types_follow_the_search_path(
        self, store: ProjectionStore, store_url: str
    ) -> None:
        """The column types read for a table name are those of the table the name finds
        (unqualified: the first schema of the ``search_path`` that has it; qualified: that
        schema's): the rows go into each table with its own types, never a namesake's."""
        if store.dialect != "postgres":
            pytest.skip("PostgreSQL only")
        self._table(store)  # n BIGINT, in the first schema of the path
        with store.transaction(ddl=True) as tx:
            tx.execute("CREATE SCHEMA shadow_probe")
            tx.execute(
                "CREATE TABLE shadow_probe.bulk_probe (k TEXT PRIMARY KEY, n TEXT NOT NULL,"
                " note TEXT)"
            )
            path = tx.one("SHOW search_path")
            assert path is not None
            tx.execute(f"SET search_path = {path[0]}, shadow_probe")  # this connection's
        numbers, words = [("k1", 1, None), ("k2", 2, "b")], [("k1", "one", None)]
        with store.transaction() as tx:
            tx.insert("bulk_probe", self.COLUMNS, numbers, self.UPSERT)
            tx.insert(
                "shadow_probe.bulk_probe",
                self.COLUMNS,
                words,
                "ON CONFLICT (k) DO UPDATE SET n = excluded.n",
            )
            tx.update("shadow_probe.bulk_probe", ("k",), ("note",), [("w", "k1")])
            shadowed = tx.query("SELECT k, n, note FROM shadow_probe.bulk_probe")
        assert self._stored(store_url) == numbers
        assert shadowed == [("k1", "one", "w")]

    def test_postgres_upserts_make_no_table(self, store: ProjectionStore) -> None:
        """An upsert or an update is one statement from arrays: no temporary table is made
        on the connection (each cost a statement, a ``COPY`` and catalog work)."""
        if store.dialect != "postgres":
            pytest.skip("PostgreSQL only")
        self._table(store)
        rows = self._rows(0, 3 * COPY_MIN_ROWS)
        with store.transaction() as tx:
            tx.insert("bulk_probe", self.COLUMNS, rows, self.UPSERT)
            tx.update("bulk_probe", ("k",), ("n",), [(1, "k001")])
            made = tx.one("SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema()")
        assert made == (0,)

    def test_a_runner_whose_first_batch_dies_goes_on_on_the_same_connection(
        self, app: RoundAudit, store: ProjectionStore, store_url: str
    ) -> None:
        small_store(app)
        crashing = CrashingLedger(crash_on=1)  # column types first read in the dead batch
        runner = ProjectionRunner(app, store, [HandScores(), crashing, Feed()])
        with pytest.raises(SimulatedCrash):
            runner.run_once()
        assert set(runner.positions().values()) == {0}
        runner.catch_up()
        assert crashing.batches == 2
        assert runner.dump() == {
            name: tables
            for name, tables in rebuilt(app, store_url).items()
            if name in ("hand_scores", "ledger", "feed")
        }


# ------------------------------------------------------------------ the deposit limit


def test_a_wallet_at_the_deposit_limit_is_projected_and_refuses_more(
    app: RoundAudit, store: ProjectionStore
) -> None:
    """The attack a contract run found: a cashier key deposited 16-digit amounts until the
    ledger's 64-bit integers of cents overflowed, after which every batch of the ledger failed
    and each read of a player's history answered 500. Now a wallet takes at most
    WALLET_DEPOSIT_LIMIT over its life: the deposits up to it, a withdrawal of all of it and
    the refused deposits after it are projected, and the ledger reconciles to the cent."""
    from domain.errors import DepositLimitReached
    from domain.wallet_checks import WALLET_DEPOSIT_LIMIT

    app.open_wallet("whale", account_type="test")
    half = WALLET_DEPOSIT_LIMIT / 2
    app.deposit("whale", half, transaction_id="d1")
    app.deposit("whale", WALLET_DEPOSIT_LIMIT - half, transaction_id="d2")
    head = app.recorder.max_notification_id()
    with pytest.raises(DepositLimitReached, match="WALLET_DEPOSIT_LIMIT"):
        app.deposit("whale", "0.01", transaction_id="d3")
    app.withdraw("whale", WALLET_DEPOSIT_LIMIT, transaction_id="w1")
    # the room is over the wallet's life: a withdrawal gives none back
    with pytest.raises(DepositLimitReached):
        app.deposit("whale", "0.01", transaction_id="d4")
    assert app.recorder.max_notification_id() == head + 1  # the withdrawal only
    # the repeat of an applied deposit is still recognised, not refused
    app.deposit("whale", half, transaction_id="d1")
    assert app.balance("whale") == ZERO

    runner = ProjectionRunner(app, store, make(None))
    runner.catch_up()
    assert runner.position == app.recorder.max_notification_id()
    with store.read() as tx:
        result = reconcile(tx, app.balance)
    assert result.ok, result.problems
    line = result.players["whale"]
    assert line["deposits"] == WALLET_DEPOSIT_LIMIT
    assert line["withdrawals"] == WALLET_DEPOSIT_LIMIT
    assert line["balance"] == ZERO
