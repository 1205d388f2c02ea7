"""The observed-RTP projection on SQLite and PostgreSQL, and simulated play against theory.

* Its sums agree with the ledger (another projection of the same log) for every table and
  bet type; rebuilt from zero in small batches that cut rounds apart, it gives the same rows.
* A refunded wager is void, even after it was paid (even money, then ERR-1).
* An observation outside its interval is a finding in ``roundaudit report``.
* Simulated play through the service converges to the theory: every bet type whose normal
  interval applies lies inside its 99.9% interval (main games only in the default run, with
  100 rounds per variant; 1,000 rounds of each variant in a store of its own and every bet
  type whose interval applies under ``-m slow``).
  Shuffle seeds are fixed for these runs so that the outcome is reproducible.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from roundkit import Kit, stack

from cli.main import main
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from domain.rtp.interval import intervals
from domain.rules import VARIANTS
from projections.ledger import Ledger
from projections.observed_rtp import CODE_999, ObservedRtp, behind_type, findings, observed
from projections.runner import ProjectionRunner
from projections.store import ProjectionStore

EVER = (dt.date(2000, 1, 1), dt.date(2999, 12, 31))
ZERO = Decimal("0.00")


@pytest.fixture
def fixed_seeds(monkeypatch: pytest.MonkeyPatch) -> None:
    """RNG shoes from a fixed seed sequence (SHA-256 of a counter): reproducible rounds."""
    counter = iter(range(1, 10**9))

    def seed() -> bytes:
        return hashlib.sha256(f"rtp-test-seed/{next(counter)}".encode()).digest()

    monkeypatch.setattr("domain.services.shoes.new_seed", seed)  # the shoes service makes them


@pytest.fixture
def app(store_url: str) -> Iterator[RoundAudit]:
    application = RoundAudit(env=environment_for(store_url))
    yield application
    application.close()


@pytest.fixture
def store(store_url: str) -> Iterator[ProjectionStore]:
    with ProjectionStore.open(store_url) as s:
        yield s


def rows(store: ProjectionStore, **kwargs: Any) -> list[Any]:
    with store.read() as tx:
        return observed(tx, *EVER, **kwargs)


def test_observed_sums_agree_with_the_ledger_and_a_rebuild(
    app: RoundAudit, store: ProjectionStore, fixed_seeds: None
) -> None:
    rounds = 12 if "postgres" in str(store.dialect) else 20
    for variant in VARIANTS:
        simulate(app, variant=variant, rounds=rounds)
    runner = ProjectionRunner(app, store, [ObservedRtp(), Ledger()], batch_size=29)
    runner.catch_up()
    live = runner.dump()["observed_rtp"]
    found = {(o.table_id, o.bet_type): o for o in rows(store, by_day=False)}
    with store.read() as tx:
        ledger = tx.query(
            "SELECT table_id, kind, round_id || '/' || wager_id, player, placed_detail, stake, paid"
            " FROM ledger_wagers WHERE status = 'settled'"
        )
    expected: dict[tuple[str, str], list[Decimal]] = {}
    behind: dict[tuple[str, str], str] = {}
    for table, kind, wager_id, _player, detail, _stake, _paid in ledger:
        if kind == "behind":
            fd, fs = ("follow_double=yes" in detail), ("follow_split=yes" in detail)
            behind[(table, f"{wager_id}")] = behind_type(fd, fs)
    for table, kind, wager_id, player, _detail, stake, paid in ledger:
        initial = kind not in ("double", "split", "behind_double", "behind_split")
        if kind in ("double", "split"):
            bet_type = "main"
        elif kind.startswith("behind"):
            round_id, wager = wager_id.split("/", 1)
            spot = wager.split(":", 1)[0].split(".", 1)[0]
            bet_type = behind[(table, f"{round_id}/{spot}:behind:{player}")]
        else:
            bet_type = kind
        sums = expected.setdefault((table, bet_type), [ZERO, ZERO, ZERO, Decimal(0)])
        sums[1] += Decimal(stake) / 100
        sums[2] += Decimal(paid) / 100
        if initial:
            sums[0] += Decimal(stake) / 100
            sums[3] += 1
    assert set(found) == set(expected)
    for key, (handle, staked, paid, n) in expected.items():
        o = found[key]
        assert (o.handle, o.staked, o.paid, o.wagers) == (handle, staked, paid, n), key
        assert o.square_sum >= (o.handle * 100) ** 2 / max(1, o.wagers)  # rounds group wagers
    assert {o.bet_type for o in found.values()} >= {
        "main",
        "pair",
        "lucky7",
        "bust",
    }  # bots never insure
    runner.rebuild(["observed_rtp"])
    assert runner.dump()["observed_rtp"] == live


def test_a_refunded_wager_is_void_even_after_even_money(
    app: RoundAudit, store: ProjectionStore
) -> None:
    cards = stack("multihand", [["AS", "KD"], ["9C", "7H"]], up="AH", hole="6S")
    kit = Kit("multihand", cards, players={"eve": "100", "ed": "100"}, app=app, table="em")
    kit.bet("eve", 10, spot=1)
    kit.bet("ed", 20, spot=2)
    kit.close()
    kit.decide("eve", "even_money")  # paid at once (EVEN-1) ...
    kit.decide("ed", "no_insurance")
    kit.cancel()  # ... and reversed with every stake refunded (ERR-1)
    ProjectionRunner(app, store, [ObservedRtp()], batch_size=3).catch_up()
    (main,) = [o for o in rows(store, include_test=True, by_day=False) if o.table_id == "em"]
    assert (main.bet_type, main.wagers, main.handle, main.staked, main.paid) == (
        "main",
        0,
        ZERO,
        ZERO,
        ZERO,
    )
    assert (main.square_sum, main.refunds, main.observed_rtp) == (0, 2, None)
    assert findings([main]) == []


def blackjack_every_round(app: RoundAudit, rounds: int) -> None:
    """A test table whose stacked shoes give the player a blackjack every round."""
    for n in range(1, rounds + 1):
        cards = stack("multihand", [["AS", "KD"]], up="9H", hole="7C", dealer_draws=["10D"])
        kit = Kit(
            "multihand",
            cards,
            players={"lucky": "0"} if n > 1 else {"lucky": "500"},
            app=app,
            table="bj",
            round_number=n,
        )
        kit.bet("lucky", 2, spot=1)
        kit.close()
        assert kit.phase == "settled"


def test_an_observation_outside_its_interval_is_a_finding(
    app: RoundAudit, store: ProjectionStore, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    blackjack_every_round(app, 120)
    ProjectionRunner(app, store, [ObservedRtp()]).catch_up()
    (o,) = rows(store, include_test=True, by_day=False)
    assert (o.bet_type, o.wagers, o.observed_rtp) == ("main", 120, Decimal("2.5"))
    assert o.interval_applies
    assert o.outside() == ["99%", "99.9%"]
    (f,) = findings([o])
    assert f.code == CODE_999
    assert "outside the 99.9% interval" in f.message
    assert rows(store) == []  # a test table stays out of the production report
    today = dt.datetime.now(dt.UTC).date().isoformat()
    code = main(
        ["--database-url", store_url, "report", "--from", today, "--to", today, "--include-test"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "observed RTP findings (1)" in out
    assert CODE_999 in out
    assert " bj (multihand/1) main" in out


def play_and_observe(app: RoundAudit, store: ProjectionStore, rounds: int) -> list[Any]:
    for variant in VARIANTS:
        report = simulate(app, variant=variant, rounds=rounds)
        assert report.phases == {"settled": rounds}
    ProjectionRunner(app, store, [ObservedRtp()]).catch_up()
    return rows(store, by_day=False)


def inside(o: Any) -> bool:
    assert o.theory is not None, o
    (_, widest) = intervals(o.theory.rtp, o.theory.variance, int(o.handle * 100), o.square_sum)
    assert widest.level == "99.9%"
    return widest.contains(o.observed_rtp)


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_simulated_main_games_converge_to_the_theory(
    app: RoundAudit, store: ProjectionStore, fixed_seeds: None
) -> None:
    found = play_and_observe(app, store, 100)
    mains = {o.variant: o for o in found if o.bet_type == "main"}
    assert set(mains) == set(VARIANTS)
    for variant, o in mains.items():
        assert inside(o), (variant, o.as_json())
    assert [f.message for f in findings(found)] == []


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_thousands_of_simulated_rounds_converge_to_the_theory(
    variant: str, tmp_path: Path, fixed_seeds: None
) -> None:
    """1,000 rounds of one variant in a store of its own (a store's size slows a boundless
    round's view, so the variants do not share one)."""
    url = f"sqlite:///{tmp_path}/{variant}.db"
    app = RoundAudit(env=environment_for(url))
    try:
        report = simulate(app, variant=variant, rounds=1000)
        assert report.phases == {"settled": 1000}
        with ProjectionStore.open(url) as store:
            ProjectionRunner(app, store, [ObservedRtp()]).catch_up()
            found = rows(store, by_day=False)
    finally:
        app.close()
    applying = [o for o in found if o.interval_applies]
    assert "main" in {o.bet_type for o in applying}
    for o in applying:
        assert inside(o), o.as_json()
    assert [f.message for f in findings(found)] == []


def test_report_without_observations_prints_no_findings(
    store_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(
        ["--database-url", store_url, "report", "--from", "2026-01-01", "--to", "2026-01-02"]
    )
    assert code == 0
    assert "observed RTP findings" not in capsys.readouterr().out


def test_adding_the_monitor_to_a_store_whose_projections_are_up_to_date(
    app: RoundAudit, store: ProjectionStore, store_url: str
) -> None:
    """Deploying this projection: a runner whose other projections are far ahead catches the
    new one up in small batches without moving theirs back or applying anything twice."""
    for variant in ("multihand", "deluxe"):
        simulate(app, variant=variant, rounds=4)
    ProjectionRunner(app, store, [Ledger()]).catch_up()
    ahead = ProjectionRunner(app, store, [Ledger()]).positions()["ledger"]
    runner = ProjectionRunner(app, store, [Ledger(), ObservedRtp()], batch_size=11)
    seen = []
    while runner.position < runner.head:
        runner.run_once()
        seen.append(runner.positions()["ledger"])
    assert seen
    assert set(seen) == {ahead}
    assert runner.dump()["observed_rtp"] == _rebuilt_monitor(app, store_url)


def _rebuilt_monitor(app: RoundAudit, url: str) -> Any:
    with ProjectionStore.open(url) as s:
        runner = ProjectionRunner(app, s, [ObservedRtp()])
        runner.rebuild()
        return runner.dump()["observed_rtp"]
