"""The table simulator: bots play full rounds of a variant through ``RoundAudit``.

This module owns :func:`simulate` and its report, and the ``roundaudit simulate`` subcommand.
Everything goes through the application's public commands, exactly as a table feed would send
them (bets, close of betting, insurance decisions, player decisions, timeouts), so a simulated
store is an ordinary store: every round can be replayed and verified.

* **Bots** are players ``<table>-botNN`` with real wallets, opened and funded once (opening is
  skipped when the wallet exists; the first deposit has a fixed transaction id, so a rerun does
  not pay it twice) and topped up when their balance falls below a floor, with a transaction id
  naming the round, so each top-up is unique.
* **Shoes.** RNG variants (multihand, lucky7, european) start each round with
  ``production=True`` and get a fresh RNG shoe for the round (D3). Live variants (deluxe,
  boundless) are dealt from a shoe of the table: in this simulated studio an RNG shoe with the
  burn procedure (SHOE-2) and a cut card stands in for the card reader. It is reused round after
  round (``shoe_round`` counts them, for BDL-AVAIL) and replaced by a new shoe (number + 1) when
  the cut card has come out (SHOE-1) or too few cards remain; the old one is retired, which
  reveals its seed.
* **Round numbers** continue after the highest existing round of the table; a round left
  unfinished by an interrupted run is cancelled (ERR-1 refunds every stake) before play resumes.
* **Choices** (who bets, how much, side bets, the rare timeout that lets AUTO-1 play a hand) come
  from :class:`cli.strategy.BotStream` seeded by a label, and decisions from basic strategy
  (:func:`cli.strategy.choose`).
* **Shoes** come from the CSPRNG (``domain.shuffle.new_seed``) as in production, unless the run
  asks for **reproducible shoes** (``reproducible_shoes=True``, ``--reproducible-shoes``): then
  each RNG shoe's seed is drawn from the label's stream, forked by the shoe's id
  (``Shoes.shoe_seeds``, set for the run and restored after it), and shuffled by
  ``domain.shuffle`` like any other: committed, sealed, burned, revealed at retirement and
  verified. Two such runs with the same arguments on equal stores (two empty ones, say) record
  the same events (ids included: they are uuid5 of names) with the same cards, decisions,
  stakes, payouts and balances; only the events' times and the sealed seeds' ciphertexts
  differ. Whoever knows the label (the table id by default) knows every card of such a shoe:
  it is for a test bed, never a production store, hence off unless asked for.
* **Boundless bots answer in waves**: the hands due are read once a wave (``pending``) and
  answered in an order drawn from the stream, each command answering its player's part only;
  the whole round is read once, when it ends. A round costs its commands, whatever its size.
* **Step bound.** A round must finish within :func:`step_bound` commands after the close of
  betting, a bound that grows with its hands (a boundless round of 300 players takes several
  hundred decisions); a round that needs more, or where no hand has a decision open, is stuck
  and stops the run (:class:`SimulationError`).
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from uuid import UUID

from tqdm import tqdm

from cli.strategy import BotStream, bet_size, choose, side_bet_size
from domain.application import RoundAudit
from domain.errors import (
    AlreadyExists,
    BetLimit,
    DomainError,
    InsufficientFunds,
    RoundNotFound,
    ShoeExhausted,
    ShoeNotFound,
    SideBetUnavailable,
    TableNotFound,
)
from domain.money import money_str
from domain.round import Round
from domain.rules import VARIANTS, get_rules
from domain.rules.base import Rules
from domain.shoe import CARDS_PER_DECK, Shoe

if TYPE_CHECKING:
    from cli.main import Context

Json = dict[str, Any]

#: Players a variant's table seats when ``--players`` is not given.
DEFAULT_PLAYERS: dict[str, int] = {
    "multihand": 3,
    "lucky7": 3,
    "european": 2,
    "deluxe": 6,
    "boundless": 12,
}
#: Cards a live shoe must still hold to start another round (a generous bound on one round).
CARDS_PER_ROUND: dict[str, int] = {"deluxe": 60, "boundless": 40}
#: Each bot's first deposit; a bot whose balance falls below a tenth of it is topped up to it.
STARTING_BALANCE = Decimal("1000.00")
#: Chance, per mille, that a bot lets its decision timer run out (AUTO-1 then plays the hand),
#: that the insurance timer closes the window before anyone answers, and that a bot sits out.
TIMEOUT_PER_MILLE = 20
WINDOW_CLOSE_PER_MILLE = 100
SIT_OUT_PER_MILLE = 150
#: Chance, per mille, that a deluxe bot bets behind a seat of another bot (DLX-5).
BEHIND_PER_MILLE = 250
#: Commands one initial hand can take at most: its insurance answer, a split (no resplit,
#: SPLIT-2), and for each of the two hands at most 21 decisions (each card adds at least 1 to
#: the hard total, which starts at 2 and busts above 21: at most 20 hits, then a stand).
STEPS_PER_HAND = 1 + 1 + 2 * 21
FINISHED = ("settled", "cancelled")
SUPERVISOR = "simulator"
_TABLE_RE = re.compile(r"[A-Za-z0-9_-]{1,40}")


class SimulationError(DomainError):
    """The simulation could not go on (bad arguments, or a round the engine left stuck)."""

    code = "simulation-error"


@dataclass
class SimulationReport:
    """What one :func:`simulate` run did. Money as exact ``Decimal``."""

    variant: str
    table: str
    rounds: int = 0
    first_round: int | None = None
    last_round: int | None = None
    wagers: int = 0
    handle: Decimal = Decimal("0.00")
    payouts: Decimal = Decimal("0.00")
    deposits: Decimal = Decimal("0.00")
    elapsed: float = 0.0
    events: int = 0
    timeouts: int = 0
    #: Doubles/splits refused for want of balance, answered with the next-best move.
    fallbacks: int = 0
    shoes_opened: int = 0
    phases: Counter[str] = field(default_factory=Counter)
    round_ids: list[str] = field(default_factory=list)
    #: The bots' balances at the end, as the simulator tracked them from the rounds' wagers.
    balances: dict[str, Decimal] = field(default_factory=dict)

    @property
    def house_result(self) -> Decimal:
        """Handle minus payouts: what the house kept (negative when the players won)."""
        return self.handle - self.payouts

    def as_dict(self) -> Json:
        return {
            "variant": self.variant,
            "table": self.table,
            "rounds": self.rounds,
            "first_round": self.first_round,
            "last_round": self.last_round,
            "results": dict(self.phases),
            "wagers": self.wagers,
            "handle": money_str(self.handle),
            "payouts": money_str(self.payouts),
            "house_result": money_str(self.house_result),
            "deposits": money_str(self.deposits),
            "timeouts": self.timeouts,
            "fallbacks": self.fallbacks,
            "shoes_opened": self.shoes_opened,
            "events": self.events,
            "elapsed_seconds": round(self.elapsed, 3),
        }

    def lines(self) -> list[str]:
        rate = self.rounds / self.elapsed if self.elapsed else 0.0
        span = (
            f" (rounds {self.first_round}-{self.last_round})"
            if self.first_round is not None
            else ""
        )
        results = ", ".join(f"{k} {v}" for k, v in sorted(self.phases.items())) or "none"
        return [
            f"table {self.table} ({self.variant}): {self.rounds} rounds{span}: {results}",
            f"  wagers {self.wagers}, handle {money_str(self.handle)}, "
            f"payouts {money_str(self.payouts)}, house result {money_str(self.house_result)}",
            f"  deposits {money_str(self.deposits)}, timeouts {self.timeouts}, "
            f"fallbacks {self.fallbacks}, shoes opened {self.shoes_opened}",
            f"  {self.events} events in {self.elapsed:.1f}s ({rate:.1f} rounds/s)",
        ]


def bot_names(table: str, players: int) -> list[str]:
    """The bots of a table: ``<table>-bot01`` ...

    >>> bot_names("sim-deluxe", 2)
    ['sim-deluxe-bot01', 'sim-deluxe-bot02']
    """
    return [f"{table}-bot{i:02d}" for i in range(1, players + 1)]


def simulate(
    app: RoundAudit,
    *,
    variant: str,
    rounds: int,
    players: int | None = None,
    table: str | None = None,
    progress: bool = False,
    seed_label: str | None = None,
    bankroll: Decimal = STARTING_BALANCE,
    reproducible_shoes: bool = False,
) -> SimulationReport:
    """Play ``rounds`` full rounds of ``variant`` on ``table`` (default ``sim-<variant>``) with
    ``players`` bots (default per variant); see the module docstring."""
    rules = get_rules(variant)
    variant = rules.variant
    table = table or f"sim-{variant}"
    if not _TABLE_RE.fullmatch(table):
        raise SimulationError(
            f"table id {table!r}: 1-40 letters, digits, '-' or '_' (it names the bots too)"
        )
    if rounds < 0:
        raise SimulationError("rounds must be 0 or more")
    players = DEFAULT_PLAYERS[variant] if players is None else players
    if players < 1:
        raise SimulationError("players must be 1 or more")
    if not isinstance(bankroll, Decimal) or bankroll < rules.min_bet:
        raise SimulationError(f"bankroll must be a Decimal of at least {rules.min_bet}")
    sim = _Simulation(app, rules, table, players, seed_label or table, bankroll)
    return sim.run(rounds, progress=progress, reproducible_shoes=reproducible_shoes)


class _Simulation:
    def __init__(
        self, app: RoundAudit, rules: Rules, table: str, players: int, label: str, bankroll: Decimal
    ) -> None:
        self.app = app
        self.bankroll = bankroll.quantize(Decimal("0.01"))
        self.floor = (self.bankroll / 10).quantize(Decimal("0.01"))
        self.rules = rules
        self.variant = rules.variant
        self.table = table
        self.bots = bot_names(table, players)
        self.stream = BotStream(f"roundaudit-sim/{label}")
        self.report = SimulationReport(variant=self.variant, table=table)
        self.balances: dict[str, Decimal] = {}
        self.live = not rules.reshuffle_every_round
        self.shoe_id: str | None = None
        self.shoe_number = 0
        self.shoe_round = 0

    # ------------------------------------------------------------------------ the run
    def run(self, rounds: int, *, progress: bool, reproducible_shoes: bool) -> SimulationReport:
        started = time.perf_counter()
        before = self._max_notification_id()
        seeds = self.app.shoe_seeds
        if reproducible_shoes:
            self.app.shoe_seeds = self._shoe_seed
        try:
            return self._run(rounds, progress=progress, started=started, before=before)
        finally:
            self.app.shoe_seeds = seeds

    def _shoe_seed(self, shoe_id: UUID) -> bytes:
        """An RNG shoe's seed, from the run's label and the shoe's id (module docstring)."""
        return self.stream.fork("shoe-seed", shoe_id).seed()

    def _run(self, rounds: int, *, progress: bool, started: float, before: int) -> SimulationReport:
        self._open_wallets()
        next_number = self._resume()
        bar = tqdm(
            total=rounds,
            desc=f"{self.table}",
            unit="round",
            file=sys.stderr,
            disable=not progress,
            dynamic_ncols=True,
        )
        try:
            for _ in range(rounds):
                next_number = self._play_round(next_number) + 1
                bar.update(1)
        finally:
            bar.close()
            self.report.elapsed = time.perf_counter() - started
            self.report.events = self._max_notification_id() - before
        return self.report

    def _max_notification_id(self) -> int:
        return int(self.app.recorder.max_notification_id() or 0)

    # --------------------------------------------------------------------- wallets
    def _open_wallets(self) -> None:
        for bot in self.bots:
            with contextlib.suppress(AlreadyExists):
                self.app.open_wallet(bot)
            tid = f"sim/{bot}/initial"
            wallet = self.app.wallet(bot)
            if wallet.has_transaction(tid):  # funded by an earlier run
                self.balances[bot] = wallet.balance
                continue
            self.balances[bot] = self.app.deposit(bot, self.bankroll, transaction_id=tid)
            self.report.deposits += self.bankroll
        self.report.balances = dict(self.balances)

    def _top_up(self, round_number: int) -> None:
        for bot in self.bots:
            balance = self.balances[bot]
            if balance < self.floor:
                amount = self.bankroll - balance
                self.balances[bot] = self.app.deposit(
                    bot, amount, transaction_id=f"sim/{bot}/top-up/{self.table}/{round_number}"
                )
                self.report.deposits += amount

    # ---------------------------------------------------------------- resuming a table
    def _resume(self) -> int:
        """The next round number; an unfinished last round is cancelled (ERR-1), and a live
        table's open shoe is retired (the studio reshuffles at the start of a session)."""
        last = _highest(self._round_exists)
        if last:
            rnd = self.app.round(Round.create_id(self.table, last))
            if not rnd.finished:
                self.app.cancel(str(rnd.id), reason="simulation interrupted", supervisor=SUPERVISOR)
        if self.live:
            self.shoe_number = _highest(self._shoe_exists)
            if self.shoe_number:
                shoe = self.app.shoe(Shoe.create_id(self.table, self.shoe_number))
                if not shoe.retired:
                    self.app.retire_shoe(str(shoe.id))
        return last + 1

    def _round_exists(self, number: int) -> bool:
        try:
            self.app.round(Round.create_id(self.table, number))
        except RoundNotFound:
            return False
        return True

    def _shoe_exists(self, number: int) -> bool:
        try:
            self.app.shoe(Shoe.create_id(self.table, number))
        except ShoeNotFound:
            return False
        return True

    # ------------------------------------------------------------------- live shoes
    def _live_shoe(self) -> None:
        """Keep a live table's shoe usable: a new one after the cut card (SHOE-1) or when
        fewer cards remain than a round may need."""
        if self.shoe_id is not None:
            shoe = self.app.shoe(self.shoe_id)
            if (
                not shoe.retired
                and not shoe.is_last_round
                and shoe.remaining >= CARDS_PER_ROUND[self.variant]
            ):
                self.shoe_round += 1
                return
            if not shoe.retired:
                self.app.retire_shoe(self.shoe_id)
        self._open_shoe()

    def _open_shoe(self) -> None:
        size = self.rules.decks * CARDS_PER_DECK
        stream = self.stream.fork("shoe", self.shoe_number + 1)
        # Cut card at 70-80% of the shoe; what is left after it covers the last round.
        cut = size * 3 // 4 + stream.between(-size // 20, size // 20)
        while True:
            self.shoe_number += 1
            try:
                self.shoe_id = self.app.open_shoe(
                    table_id=self.table,
                    shoe_number=self.shoe_number,
                    kind="rng",
                    decks=self.rules.decks,
                    production=True,
                    burn_procedure=True,
                    cut_card_at=cut,
                )
            except AlreadyExists:
                continue
            break
        self.app.burn(self.shoe_id)  # SHOE-2
        self.shoe_round = 1
        self.report.shoes_opened += 1

    # ------------------------------------------------------------------------ rounds
    def _seat_bots(self, number: int) -> None:
        """deluxe: bots without a seat sit down on free seats, one or two each (DLX-1)."""
        try:
            table = self.app.table(self.table)
        except TableNotFound:
            self.app.open_table(self.table, production=True)
            table = self.app.table(self.table)
        stream = BotStream(f"{self.table}/seats/{number}")
        free = [s for s in range(1, 8) if s not in table.seats]
        for bot in self.bots:
            if not free:
                break
            if table.seats_of(bot):
                continue
            for _ in range(stream.between(1, min(2, len(free)))):
                seat = free.pop(0)
                try:
                    self.app.sit(self.table, player=bot, seat=seat)
                except DomainError:
                    break

    def _start(self, number: int) -> tuple[int, str]:
        if self.rules.bet_behind:
            self._seat_bots(number)
        while True:
            try:
                if self.live:
                    rid = self.app.start_round(
                        table_id=self.table,
                        round_number=number,
                        variant=self.variant,
                        shoe_id=self.shoe_id,
                        shoe_round=self.shoe_round,
                        production=True,
                    )
                else:
                    rid = self.app.start_round(
                        table_id=self.table,
                        round_number=number,
                        variant=self.variant,
                        production=True,
                    )
            except AlreadyExists:
                number += 1
                continue
            return number, rid

    def _play_round(self, number: int) -> int:
        if self.live:
            self._live_shoe()
        self._top_up(number)
        number, rid = self._start(number)
        before = dict(self.balances)
        rs = self.stream.fork("round", number)
        self._place_bets(rid, rs.fork("bets"))
        try:
            view = self._play(rid, rs.fork("play"))
        except ShoeExhausted as e:
            # ERR-1: the round cannot go on; refund it and let the next round take a new shoe.
            view = self.app.cancel(rid, reason=f"shoe exhausted: {e}", supervisor=SUPERVISOR)
            if self.shoe_id is not None:
                self.app.retire_shoe(self.shoe_id)
        self._account(view, before)
        report = self.report
        report.rounds += 1
        report.round_ids.append(rid)
        report.first_round = number if report.first_round is None else report.first_round
        report.last_round = number
        return number

    def _account(self, view: Json, before: dict[str, Decimal]) -> None:
        """Add the finished round to the report; the bots' balances become what they were
        before the round plus each wager's payout minus its stake (doubles, splits and
        insurance included), which is what the wallets hold."""
        report = self.report
        report.phases[view["phase"]] += 1
        balances = dict(before)
        for w in view["wagers"]:
            stake, payout = Decimal(w["stake"]), Decimal(w["payout"])
            report.wagers += 1
            report.handle += stake
            report.payouts += payout
            balances[w["player"]] += payout - stake
        self.balances = balances
        report.balances = dict(balances)

    # -------------------------------------------------------------------------- bets
    def _bet(self, rid: str, player: str, kind: str, amount: Decimal, spot: str | None) -> bool:
        if amount > self.balances[player]:
            return False
        try:
            self.app.place_bet(rid, player=player, kind=kind, amount=amount, spot=spot)
        except (InsufficientFunds, BetLimit, SideBetUnavailable):
            return False
        self.balances[player] -= amount
        return True

    def _main_amount(self, stream: BotStream) -> Decimal:
        return bet_size(stream, minimum=self.rules.min_bet, maximum=self.rules.max_bet)

    def _side_amount(self, stream: BotStream, kind: str) -> Decimal:
        maximum = self.rules.side_max_bet
        if kind == "lucky7" and self.rules.lucky7_max_stake is not None:
            maximum = min(maximum, self.rules.lucky7_max_stake)  # L7-1: one chip unit
        return side_bet_size(stream, minimum=self.rules.side_min_bet, maximum=maximum)

    def _side_open(self, kind: str) -> bool:
        limit = self.rules.side_bet_round_limits.get(kind)
        return limit is None or self.shoe_round <= limit  # BDL-AVAIL

    def _players_this_round(self, stream: BotStream) -> list[str]:
        order = stream.sample(self.bots, len(self.bots))
        playing = [b for b in order if not stream.chance(SIT_OUT_PER_MILLE)]
        return playing or order[:1]

    def _place_bets(self, rid: str, stream: BotStream) -> None:
        rules = self.rules
        if rules.shared_hand:
            self._bets_shared(rid, stream)
            return
        seated: dict[str, str] = {}
        if rules.bet_behind:  # deluxe: the table's seats; one bet covers a player's seats (DLX-2)
            seat_map = self.app.round(rid).seats
            for bot in sorted(set(seat_map.values())):
                if not stream.chance(950):
                    continue  # now and then a seated bot sits a round out (DLX-3/DLX-4)
                mine = sorted((s for s, p in seat_map.items() if p == bot), key=int)
                if self._bet(rid, bot, "main", self._main_amount(stream), mine[0]):
                    seated.update(dict.fromkeys(mine, bot))
        spots = [str(s) for s in range(1, rules.max_spots + 1)]
        free = [] if rules.bet_behind else stream.sample(spots, len(spots))
        for bot in self._players_this_round(stream):
            if not free:
                break
            want = stream.between(1, min(rules.max_spots_per_player, len(free)))
            mine, free = free[:want], free[want:]
            amount = self._main_amount(stream)  # DLX-2: the same bet on each seat of a player
            for spot in mine:
                if self._bet(rid, bot, "main", amount, spot):
                    seated[spot] = bot
        if "lucky7" in rules.side_bets:
            for spot, bot in sorted(seated.items()):
                if stream.chance(300):
                    self._bet(rid, bot, "lucky7", self._side_amount(stream, "lucky7"), spot)
        if rules.bet_behind and seated:
            self._bets_behind(rid, stream, seated)
        if "pair" in rules.side_bets and seated:
            occupied = sorted(seated)
            for bot in self.bots:
                if stream.chance(250):
                    self._bet(
                        rid, bot, "pair", self._side_amount(stream, "pair"), stream.pick(occupied)
                    )

    def _bets_behind(self, rid: str, stream: BotStream, seated: dict[str, str]) -> None:
        """deluxe: some bots bet behind a seat that is not theirs (DLX-5), each with its own
        follow-double and follow-split choices (DLX-7, DLX-8)."""
        for bot in self.bots:
            seats = sorted(s for s, owner in seated.items() if owner != bot)
            if not seats or not stream.chance(BEHIND_PER_MILLE):
                continue
            amount = self._main_amount(stream)
            seat = stream.pick(seats)
            follow_double, follow_split = stream.chance(500), stream.chance(500)
            if amount > self.balances[bot]:
                continue
            try:
                self.app.place_behind(
                    rid,
                    player=bot,
                    seat=seat,
                    amount=amount,
                    follow_double=follow_double,
                    follow_split=follow_split,
                )
            except (InsufficientFunds, BetLimit):
                continue
            self.balances[bot] -= amount

    def _bets_shared(self, rid: str, stream: BotStream) -> None:
        """boundless: a main bet each (BDL-1), side bets from half of the bots, some of them
        without a main bet."""
        kinds = [k for k in self.rules.side_bets if self._side_open(k)]
        for i, bot in enumerate(self._players_this_round(stream)):
            main = self._bet(rid, bot, "main", self._main_amount(stream), None)
            if i % 2 == 0 or not main:
                for kind in kinds:
                    if stream.chance(400):
                        self._bet(rid, bot, kind, self._side_amount(stream, kind), None)

    # ------------------------------------------------------------------------ play
    def _play(self, rid: str, stream: BotStream) -> Json:
        view = self.app.close_betting(rid)
        if self.rules.shared_hand:
            return self._play_shared(rid, stream, view)
        behind_decided: set[str] = set()
        bound = step_bound(view)
        for _ in range(bound):
            phase = view["phase"]
            if phase in FINISHED:
                return view
            due = [h for h in view["hands"] if h["options"]]
            behind: list[Json] = []
            if phase == "insurance":
                # DLX-6: each bet behind answers the insurance offer on its own. The view does
                # not say which are still open, so the simulator remembers what it answered.
                behind = [
                    w
                    for w in view["wagers"]
                    if w["kind"] == "behind" and w["wager_id"] not in behind_decided
                ]
            if phase not in ("insurance", "playing") or not (due or behind) or view["paused"]:
                raise _stuck(self.app, rid, view, "no hand has a decision open")
            if phase == "insurance" and stream.chance(WINDOW_CLOSE_PER_MILLE):
                view = self.app.close_insurance_window(rid)  # the window's timer ran out
                continue
            if behind and (not due or stream.chance(500)):
                w = behind[0]
                view = self.app.decide(
                    rid, player=w["player"], action="no_insurance", hand=w["hand"]
                )
                behind_decided.add(w["wager_id"])
                continue
            view = self._answer(rid, stream, view, due[0])
        raise _stuck(self.app, rid, view, f"still {view['phase']} after {bound} steps")

    def _play_shared(self, rid: str, stream: BotStream, view: Json) -> Json:
        """boundless: the bots answer in waves. A wave reads the hands due once
        (``pending``: the insurance window's answers, then the decisions) and answers each
        of them in an order drawn from the stream; a player's command answers with that
        player's part only (``Engine.players_view``), so a round costs its commands, not
        their number times the round's size. A wave ends early when the phase moves on (the
        insurance window closed): what it still held was read in the phase before. Returns
        the whole round as it ended (one read a round, for the report)."""
        bound = step_bound(view)
        steps = 0
        while view["phase"] not in FINISHED:
            due = [] if view["paused"] else self.app.boundless.pending(rid)
            if not due:
                view = self.app.round_view(rid)  # the last answer's phase may be behind
                if view["phase"] in FINISHED:
                    return view
                raise _stuck(self.app, rid, view, "no hand has a decision open")
            phase = view["phase"]
            for hand in stream.sample(due, len(due)):
                if steps == bound:
                    raise _stuck(self.app, rid, view, f"still {phase} after {bound} steps")
                steps += 1
                if phase == "insurance" and stream.chance(WINDOW_CLOSE_PER_MILLE):
                    view = self.app.close_insurance_window(rid)  # the window's timer ran out
                else:
                    view = self._answer(rid, stream, view, hand)
                if view["phase"] != phase:
                    break
        return self.app.round_view(rid)  # the whole round, for the report

    def _answer(self, rid: str, stream: BotStream, view: Json, hand: Json) -> Json:
        """One hand's answer: now and then the bot lets its timer run out (AUTO-1 plays the
        hand), otherwise basic strategy."""
        if stream.chance(TIMEOUT_PER_MILLE):
            self.report.timeouts += 1
            return self.app.time_out(rid, player=hand["player"], hand=hand["hand"])
        return self._decide(rid, view, hand)

    def _decide(self, rid: str, view: Json, hand: Json) -> Json:
        options = list(hand["options"])
        up = view["dealer"]["cards"][0]
        while options:
            action = choose(options, hand["cards"], up, self.variant)
            try:
                return self.app.decide(rid, player=hand["player"], action=action, hand=hand["hand"])
            except InsufficientFunds:
                self.report.fallbacks += 1
                options.remove(action)  # not enough balance: fall back to the next best move
        raise _stuck(self.app, rid, view, f"no affordable option for hand {hand['hand']}")


def step_bound(view: Json) -> int:
    """The most commands a round may take after the close of betting (``view``, the round as it
    closed): :data:`STEPS_PER_HAND` for each initial hand, one insurance answer for each bet
    behind (DLX-6), and the insurance window's close.

    >>> step_bound({"hands": [{}] * 300, "wagers": [{"kind": "main"}] * 300})
    13201
    >>> step_bound({"hands": [{}], "wagers": [{"kind": "main"}, {"kind": "behind"}]})
    46
    """
    behind = sum(1 for w in view["wagers"] if w["kind"] == "behind")
    return STEPS_PER_HAND * len(view["hands"]) + behind + 1


def _highest(exists: Callable[[int], bool]) -> int:
    """The highest n >= 1 with ``exists(n)`` assuming numbers are used from 1 without gaps
    (0 when none); galloping then binary search, O(log n) probes.

    >>> _highest(lambda n: n <= 37)
    37
    >>> _highest(lambda n: False)
    0
    """
    if not exists(1):
        return 0
    low, high = 1, 2
    while exists(high):
        low, high = high, high * 2
    while high - low > 1:
        mid = (low + high) // 2
        if exists(mid):
            low = mid
        else:
            high = mid
    return low


def _stuck(app: RoundAudit, rid: str, view: Json, why: str) -> SimulationError:
    events = app.round_events(rid)
    tail = ", ".join(e["type"] for e in events[-12:])
    return SimulationError(
        f"round {view['table_id']}#{view['round_number']} ({rid}) is stuck in phase "
        f"{view['phase']}: {why}; card_needed={view['card_needed']}; last events: {tail}"
    )


# ------------------------------------------------------------------------- the subcommand


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "simulate",
        help="bots play full rounds of a variant into the store",
        description=(
            "Bots play full rounds of a variant through the application, into the store named "
            "by ROUNDAUDIT_DATABASE_URL. Rerunning continues the table's round numbers. "
            "The seed label seeds the bots' choices; the shoes' seeds come from the CSPRNG, as "
            "in production, unless --reproducible-shoes seeds them from the label too: then "
            "the same arguments on equal stores (two empty ones, say) record the same cards, "
            "decisions, stakes, payouts and balances, only the events' times differing, and "
            "whoever knows the label knows every card (a test bed only)."
        ),
    )
    p.add_argument("--variant", required=True, choices=VARIANTS)
    p.add_argument("--rounds", required=True, type=_non_negative, help="rounds to play")
    p.add_argument(
        "--players",
        type=_positive,
        default=None,
        help="bots at the table (default per variant; boundless: any number)",
    )
    p.add_argument(
        "--seed-label",
        default=None,
        help=(
            "label seeding the bots' choices (default: the table id), and with "
            "--reproducible-shoes the shoes' seeds too"
        ),
    )
    p.add_argument(
        "--reproducible-shoes",
        action="store_true",
        help=(
            "seed the RNG shoes from the label, not the CSPRNG: the same arguments on equal "
            "stores then record the same rounds, cards and money (the events' times aside). "
            "Whoever knows the label knows every card: a test bed only, never a production store"
        ),
    )
    p.add_argument("--table", default=None, help="table id (default sim-<variant>)")
    p.add_argument(
        "--bankroll",
        type=_amount,
        default=STARTING_BALANCE,
        help=f"each bot's first deposit and top-up target (default {STARTING_BALANCE})",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def run(args: argparse.Namespace, ctx: Context) -> int:
    report = simulate(
        ctx.app(),
        variant=args.variant,
        rounds=args.rounds,
        players=args.players,
        table=args.table,
        progress=not args.no_progress and sys.stderr.isatty(),
        seed_label=args.seed_label,
        bankroll=args.bankroll,
        reproducible_shoes=args.reproducible_shoes,
    )
    _print(report.lines())
    return 0


def _print(lines: Iterable[str]) -> None:
    for line in lines:
        print(line)


def _amount(text: str) -> Decimal:
    try:
        value = Decimal(text)
    except ArithmeticError:
        raise argparse.ArgumentTypeError(f"not an amount: {text!r}") from None
    if not value.is_finite() or value <= 0:
        raise argparse.ArgumentTypeError("must be a positive amount")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


__all__ = [
    "STEPS_PER_HAND",
    "SimulationError",
    "SimulationReport",
    "add_parser",
    "bot_names",
    "run",
    "simulate",
    "step_bound",
]
