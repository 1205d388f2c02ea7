"""``roundaudit simulate``: bots play full rounds of every variant into a SQLite store.

Each round must end settled, and money must be conserved: what the bots hold plus what the house
kept (handle - payouts, from the rounds' own wager views) equals what was deposited. A boundless
round of hundreds of players finishes and verifies, and a run is reproducible from its label:
two runs with the same arguments on empty stores record the same events (times aside).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from uuid import UUID

import orjson
import pytest

from cli.main import main
from cli.simulate import DEFAULT_PLAYERS, SimulationError, SimulationReport, bot_names, simulate
from cli.strategy import BotStream
from domain.application import RoundAudit
from domain.persistence import environment_for
from domain.round import Round
from domain.rules import VARIANTS, get_rules
from domain.shoe import Shoe
from domain.shuffle import commitment
from replays.verify import StoreVerifier, verdict_lines

ZERO = Decimal("0.00")


@pytest.fixture
def app(tmp_path: Path) -> Iterator[RoundAudit]:
    application = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/sim.db"))
    yield application
    application.close()


def check_store(
    app: RoundAudit, report: SimulationReport, players: int, *, reread: bool = True
) -> None:
    """Every round settled, every wager settled, money conserved overall and per bot.

    With ``reread`` every round's view is read again from the store; without, the wager views
    the simulator received when each round ended (``report``) are used. A boundless view of an
    old round catches up from that round's position to the head of the log, so rereading a
    thousand of them costs minutes: the slow test leaves it out."""
    handle, payouts = report.handle, report.payouts
    per_player: dict[str, Decimal] | None = None
    if reread:
        handle = payouts = ZERO
        per_player = {}
        for rid in report.round_ids:
            view = app.round_view(rid)
            assert view["phase"] == "settled", (rid, view["phase"])
            for w in view["wagers"]:
                assert w["settled"], (rid, w)
                stake, payout = Decimal(w["stake"]), Decimal(w["payout"])
                handle += stake
                payouts += payout
                per_player[w["player"]] = per_player.get(w["player"], ZERO) + payout - stake
        assert handle == report.handle
        assert payouts == report.payouts

    deposits = balances = ZERO
    for bot in bot_names(report.table, players):
        wallet = app.wallet(bot)
        deposited = sum(
            (Decimal(m["amount"]) for m in wallet.movements if m["kind"] == "deposit"), ZERO
        )
        if per_player is not None:
            assert wallet.balance == deposited + per_player.get(bot, ZERO), bot
        assert wallet.balance == report.balances[bot], bot  # the simulator's own tracking
        deposits += deposited
        balances += wallet.balance
    assert balances + (handle - payouts) == deposits
    assert deposits == report.deposits


def check_reexecution(app: RoundAudit, report: SimulationReport) -> None:
    """Every simulated round verifies: its inputs re-execute to the same consequences (and,
    for the ``Round`` model, its shoe and money checks pass too: ``replays.verify``)."""
    if get_rules(report.variant).shared_hand:  # boundless: a shared hand and participations
        from replays.boundless import verify_round

        for rid in report.round_ids:
            boundless_verdict = verify_round(app, rid)
            assert boundless_verdict.ok, boundless_verdict.as_json()
        return
    verifier = StoreVerifier(app)
    for rid in report.round_ids:
        verdict = verifier.verify(UUID(rid))
        assert verdict.ok, verdict_lines(verdict, verbose=True)


def check_shoes(app: RoundAudit, report: SimulationReport) -> None:
    """Live tables: every shoe burned first and, once retired, re-derives from its seed."""
    if get_rules(report.variant).reshuffle_every_round:
        return
    for number in range(1, report.shoes_opened + 1):
        shoe = app.shoe(Shoe.create_id(report.table, number))
        assert shoe.burn_done
        if shoe.retired:
            assert shoe.verify() == []


@pytest.mark.parametrize("variant", VARIANTS)
def test_thirty_rounds_settle_and_conserve_money(app: RoundAudit, variant: str) -> None:
    report = simulate(app, variant=variant, rounds=30, players=None, table=None, progress=False)
    assert report.rounds == 30
    assert report.phases == {"settled": 30}
    assert (report.first_round, report.last_round) == (1, 30)
    assert report.wagers >= 30
    assert report.events > 0
    check_store(app, report, players=DEFAULT_PLAYERS[variant])
    check_shoes(app, report)
    check_reexecution(app, report)


def test_rerun_continues_the_table_and_funds_once(app: RoundAudit) -> None:
    first = simulate(app, variant="deluxe", rounds=4, players=3, table="t1", progress=False)
    second = simulate(app, variant="deluxe", rounds=3, players=3, table="t1", progress=False)
    assert (second.first_round, second.last_round) == (5, 7)
    assert first.deposits == Decimal("3000.00")
    assert second.deposits == ZERO  # the initial deposits are not paid twice
    assert second.shoes_opened >= 1  # the studio reshuffles at the start of a session
    merged = SimulationReport(
        variant="deluxe",
        table="t1",
        handle=first.handle + second.handle,
        payouts=first.payouts + second.payouts,
        deposits=first.deposits + second.deposits,
        round_ids=first.round_ids + second.round_ids,
        balances=second.balances,
    )
    check_store(app, merged, players=3)


def test_short_bankrolls_convert_or_fall_back_and_still_conserve_money(app: RoundAudit) -> None:
    """Bots with little money: doubles and splits meet FUNDS-1/FUNDS-2 (deluxe, boundless) or
    a refusal the bot answers with its next-best move (other variants); bets behind may not
    follow (DLX-7/DLX-8). Money is conserved all the same."""
    scarce = 0
    for variant in VARIANTS:
        report = simulate(
            app, variant=variant, rounds=30, table=f"poor-{variant}", bankroll=Decimal("12.00")
        )
        assert report.phases == {"settled": 30}
        check_store(app, report, players=DEFAULT_PLAYERS[variant])
        check_reexecution(app, report)
        scarce += report.fallbacks
        for rid in report.round_ids:
            scarce += sum(
                e["payload"].get("rule") in ("FUNDS-1", "FUNDS-2") for e in app.round_events(rid)
            )
    # The cards come from the label's shoes: the same every run; ~20 such moves are typical.
    assert scarce > 0


def test_boundless_blackjack_against_dealer_blackjack_verifies(app: RoundAudit) -> None:
    """Found by the simulator: shared hand and dealer both blackjack (ten up, END-1 at the
    peek) was reported as a D9 hands discrepancy for every participation."""
    from replays.boundless import verify_round

    app.open_wallet("p1", account_type="test")
    app.deposit("p1", "100.00", transaction_id="p1/initial")
    shoe = app.open_shoe(
        table_id="bj",
        shoe_number=1,
        kind="test",
        decks=8,
        production=False,
        order=["JH", "JD", "AC", "AD", "5S", "6S"],  # shared J A; dealer J up, A in the hole
    )
    rid = app.start_round(
        table_id="bj", round_number=1, variant="boundless", shoe_id=shoe, production=False
    )
    app.place_bet(rid, player="p1", amount="5.00")
    assert app.close_betting(rid)["phase"] == "settled"  # END-1: both blackjack, push
    verdict = verify_round(app, rid)
    assert verdict.ok, verdict.as_json()


def test_players_and_table_are_honoured(app: RoundAudit) -> None:
    report = simulate(app, variant="multihand", rounds=5, players=1, table="solo", progress=False)
    seen = {w["player"] for rid in report.round_ids for w in app.round_view(rid)["wagers"]}
    assert seen == {"solo-bot01"}
    check_store(app, report, players=1)


def test_cli_simulate_exits_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROUNDAUDIT_DATABASE_URL", f"sqlite:///{tmp_path}/cli/sim.db")
    assert main(["simulate", "--variant", "european", "--rounds", "5"]) == 0
    out = capsys.readouterr().out
    assert "5 rounds" in out
    assert (tmp_path / "cli" / "sim.db").exists()  # the folder was created


def test_cli_domain_error_exits_two(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROUNDAUDIT_DATABASE_URL", f"sqlite:///{tmp_path}/sim.db")
    code = main(["simulate", "--variant", "european", "--rounds", "1", "--table", "bad:id"])
    assert code == 2
    # the last line is the refusal (a first run may note the seed key file it created)
    assert capsys.readouterr().err.splitlines()[-1].startswith("error: ")


def test_cli_bad_database_url_exits_two(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROUNDAUDIT_DATABASE_URL", "mysql://db/x")
    assert main(["simulate", "--variant", "european", "--rounds", "1"]) == 2
    assert "error: unsupported database URL scheme" in capsys.readouterr().err


def test_cli_serve_runs_uvicorn_on_the_api_factory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    calls: list[tuple[tuple[object, ...], dict[str, object]]] = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: calls.append((a, k)))
    url = f"sqlite:///{tmp_path}/served/s.db"
    monkeypatch.setenv("ROUNDAUDIT_DATABASE_URL", url)
    assert main(["serve", "--port", "8123"]) == 0
    assert calls == [
        (
            ("api.main:get_app",),
            {
                "factory": True,
                "host": "127.0.0.1",
                "port": 8123,
                "reload": False,
                "workers": None,
                "access_log": True,
                "http": "api.server:OneWriteProtocol",
            },
        )
    ]
    assert (tmp_path / "served").is_dir()


def test_cli_help_and_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "serve" in out
    assert "simulate" in out
    assert main(["simulate", "--variant", "nope", "--rounds", "1"]) == 2
    assert main([]) == 2


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_thousand_rounds_of_each_variant(tmp_path: Path, variant: str) -> None:
    """The issue's acceptance run: 1,000 rounds of each variant fill a SQLite store."""
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/sim.db"))
    try:
        started = time.perf_counter()
        report = simulate(
            app, variant=variant, rounds=1000, players=None, table=None, progress=False
        )
        elapsed = time.perf_counter() - started
        assert report.phases == {"settled": 1000}, report.as_dict()
        check_store(app, report, players=DEFAULT_PLAYERS[variant], reread=False)
        check_reexecution(app, report)
        print(f"{variant}: 1000 rounds in {elapsed:.1f}s, {report.events} events")
    finally:
        app.close()


# ----------------------------------------------------------- many players, reproducible runs


def stored_events(app: RoundAudit) -> list[tuple[str, int, str, object]]:
    """Every stored event in log order, without its time: (aggregate id, version, topic, state).
    The ids are deterministic (uuid5), so two equal runs give equal lists."""
    events = []
    for n in app.recorder.select_notifications(start=1, limit=10**9):
        state = orjson.loads(n.state)
        state.pop("timestamp", None)
        events.append((str(n.originator_id), n.originator_version, n.topic, state))
    return events


def test_boundless_round_of_three_hundred_players_finishes_settles_and_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reported defect: 300 boundless players stopped with 'still playing after 400
    steps'. Every round now finishes, every wager settles, money is conserved, and
    ``roundaudit verify --all`` passes every round."""
    monkeypatch.setenv("ROUNDAUDIT_DATABASE_URL", f"sqlite:///{tmp_path}/many.db")
    args = ["simulate", "--variant", "boundless", "--rounds", "2", "--players", "300"]
    assert main([*args, "--no-progress"]) == 0
    assert "2 rounds (rounds 1-2): settled 2" in capsys.readouterr().out
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/many.db"))
    try:
        ids = [str(Round.create_id("sim-boundless", n)) for n in (1, 2)]
        views = [app.round_view(rid) for rid in ids]
        assert all(v["phase"] == "settled" for v in views)
        seated = {w["player"] for v in views for w in v["wagers"] if w["kind"] == "main"}
        assert len(seated) > 250  # most of the 300 bots bet (some sit a round out)
        report = SimulationReport(variant="boundless", table="sim-boundless", round_ids=ids)
        for view in views:
            for w in view["wagers"]:
                report.handle += Decimal(w["stake"])
                report.payouts += Decimal(w["payout"])
        report.deposits = Decimal("300000.00")
        report.balances = {b: app.wallet(b).balance for b in bot_names("sim-boundless", 300)}
        check_store(app, report, players=300)
        check_reexecution(app, report)
    finally:
        app.close()
    assert main(["verify", "--all", "--no-progress"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "2 passed, 0 failed"


def test_boundless_bots_read_the_whole_round_once_a_round_not_once_a_command(
    app: RoundAudit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bots of a boundless round answer the hands due in waves (``pending`` once a wave)
    and read the whole round once at its end, for the report: the round costs its commands,
    not the commands times the players (whole-round reads after every command made 1,000 bots
    cost the square of 1,000). Counted, not timed: the whole-round reads and the waves."""
    whole_reads: list[str] = []
    waves: list[int] = []
    round_view, pending = app.round_view, app.boundless.pending

    def counting_view(rid: str) -> dict[str, object]:
        whole_reads.append(rid)
        return round_view(rid)

    def counting_pending(rid: str) -> list[dict[str, object]]:
        due = pending(rid)
        waves.append(len(due))
        return due

    monkeypatch.setattr(app, "round_view", counting_view)
    monkeypatch.setattr(app.boundless, "pending", counting_pending)
    report = simulate(app, variant="boundless", rounds=3, players=120, reproducible_shoes=True)
    assert report.phases == {"settled": 3}
    answered = ("Participation.DecisionMade", "Participation.DecisionTimedOut")
    decisions = sum(
        1 for rid in report.round_ids for e in app.round_events(rid) if e["type"] in answered
    )
    assert decisions > 3 * 80  # most of the 120 bots bet and decide every round
    assert len(whole_reads) <= 2 * 3  # the report's read, and one more when no hand is due
    assert len(waves) <= 3 * 25  # a wave answers every hand due: a few waves a round
    assert sum(waves) >= decisions  # every decision was answered from a wave


@pytest.mark.slow
def test_boundless_rounds_of_a_thousand_players_finish_and_verify(app: RoundAudit) -> None:
    report = simulate(app, variant="boundless", rounds=3, players=1000)
    assert report.phases == {"settled": 3}
    check_store(app, report, players=1000)
    check_reexecution(app, report)


@pytest.mark.parametrize("variant", VARIANTS)
def test_same_label_records_the_same_events(tmp_path: Path, variant: str) -> None:
    """Two runs with the same arguments on empty stores: the same cards (shoe commitments,
    draws, burns, revealed seeds), decisions, stakes, payouts and balances, event by event."""
    runs = []
    for name in ("one", "two"):
        app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/{name}.db"))
        try:
            report = simulate(app, variant=variant, rounds=12, players=8, reproducible_shoes=True)
            assert app.shoe_seeds is None  # the run's seed source is the run's only
            runs.append((report.as_dict(), report.balances, stored_events(app)))
        finally:
            app.close()
    (first, balances1, events1), (second, balances2, events2) = runs
    first.pop("elapsed_seconds")
    second.pop("elapsed_seconds")
    assert first == second
    assert balances1 == balances2
    assert len(events1) > 12
    assert events1 == events2


def test_same_label_gives_the_same_events_on_every_store(app_on_every_store: RoundAudit) -> None:
    """The store plays no part in what is dealt: a boundless run on memory, SQLite or
    PostgreSQL records what the same run records on the in-memory store."""
    reference = RoundAudit()
    try:
        simulate(reference, variant="boundless", rounds=6, players=20, reproducible_shoes=True)
        expected = stored_events(reference)
    finally:
        reference.close()
    simulate(app_on_every_store, variant="boundless", rounds=6, players=20, reproducible_shoes=True)
    assert stored_events(app_on_every_store) == expected


def test_the_label_seeds_the_shoes(app: RoundAudit) -> None:
    """Each RNG shoe's seed comes from the label's stream forked by the shoe's id: committed
    when the shoe opens, revealed when it retires; another label deals other cards."""
    run = {"variant": "boundless", "players": 4, "table": "t", "reproducible_shoes": True}
    simulate(app, rounds=2, seed_label="L", **run)  # type: ignore[arg-type]
    simulate(app, rounds=1, seed_label="L", **run)  # type: ignore[arg-type]
    first = app.shoe(Shoe.create_id("t", 1))  # retired when the second run resumed the table
    assert first.retired
    assert first.verify() == []
    seed = BotStream("roundaudit-sim/L").fork("shoe-seed", first.id).seed()
    assert first.commitment == commitment(seed)
    other = RoundAudit()
    try:
        simulate(other, rounds=1, seed_label="M", **run)  # type: ignore[arg-type]
        assert other.shoe(Shoe.create_id("t", 1)).commitment != first.commitment
    finally:
        other.close()


def test_without_reproducible_shoes_the_cards_come_from_the_csprng(tmp_path: Path) -> None:
    """By default a simulated shoe is an ordinary RNG shoe: its seed comes from the CSPRNG, not
    from the label (the table id by default, which anyone may know), so two runs with the same
    arguments deal other cards; the bots' choices still follow the label."""
    commitments = []
    for name in ("one", "two"):
        app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/{name}.db"))
        try:
            simulate(app, variant="boundless", rounds=1, players=4, table="t")
            assert app.shoe_seeds is None
            shoe = app.shoe(Shoe.create_id("t", 1))
            assert shoe.commitment != commitment(
                BotStream("roundaudit-sim/t").fork("shoe-seed", shoe.id).seed()
            )
            commitments.append(shoe.commitment)
        finally:
            app.close()
    assert commitments[0] != commitments[1]


def test_a_stuck_round_stops_the_run_and_restores_the_seed_source(
    app: RoundAudit, monkeypatch: pytest.MonkeyPatch
) -> None:
    def own(shoe_id: UUID) -> bytes:
        return bytes(32)

    app.shoe_seeds = own
    monkeypatch.setattr("cli.simulate.step_bound", lambda view: 0)
    with pytest.raises(SimulationError, match="after 0 steps"):
        simulate(app, variant="boundless", rounds=1, players=3, reproducible_shoes=True)
    assert app.shoe_seeds is own
