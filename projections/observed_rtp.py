"""Observed RTP: settled wagers per day, variant, rules key, table and bet type, watched
against the theory (``domain.rtp``).

Tables (rebuild with ``roundaudit projections rebuild observed_rtp``); money is integer cents:

``observed_rtp_daily`` (key ``day, variant, rules_key, table_id, bet_type, production``)
    ``wagers`` (initial wagers settled), ``handle`` (their initial stakes), ``staked`` (every
    stake of the bet type: doubles and splits included), ``paid`` (paid back, stakes
    included), ``square_sum`` (sum over rounds of the round's initial stakes squared, for the
    variance bound of ``domain.rtp.interval``) and ``refunds`` (voided wagers).
    Observed RTP is ``1 + (paid - staked) / handle``: the return per unit of initial stake,
    the way the theoretical RTP is stated.

Bet types: ``main`` (a main bet with its doubles, splits, even money and surrender),
``behind_follow_both|double|split|none`` (deluxe bets behind, by the follow choices of
DLX-7/8 made when the bet was placed), ``insurance``, and each side bet by name. A refunded
wager (ERR-1, D8) is void: it counts in ``refunds`` and takes back whatever it had added
(a cancelled round after even money), on the day of the refund.

``observed_rtp_wagers`` (one row per settled wager: its day, bet type and contribution),
``observed_rtp_round_stakes`` (initial stakes per round, bet type and day) and
``observed_rtp_behind`` (a bet behind's follow choices) keep what a later refund or wager of
the same round needs; ``observed_rtp_rounds`` is the projection's round index.

:func:`observed` reads the daily rows with their theoretical RTP and the 99% and 99.9%
intervals; :func:`findings` lists the observations outside them (``RTP-OBSERVED-OUTSIDE-99``,
``RTP-OBSERVED-OUTSIDE-99.9``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import Any

from domain.errors import DomainError
from domain.rtp.interval import Interval, effective_n, intervals
from domain.rtp.report import BetTheory, load, theory
from projections.base import (
    Projection,
    RoundFacts,
    RoundIndex,
    Table,
    Tracked,
    cents,
    money,
    period_filter,
    round_events,
    rows_by_keys,
    upsert,
    utc_day,
)
from projections.recorded import Recorded
from projections.store import Tx

NAME = "observed_rtp"
DAILY = "observed_rtp_daily"
WAGERS = "observed_rtp_wagers"
ROUND_STAKES = "observed_rtp_round_stakes"
BEHIND = "observed_rtp_behind"
CODE_99 = "RTP-OBSERVED-OUTSIDE-99"
CODE_999 = "RTP-OBSERVED-OUTSIDE-99.9"

_KEY = ("day", "variant", "rules_key", "table_id", "bet_type", "production")
_SUMS = ("wagers", "handle", "staked", "paid", "square_sum", "refunds")
_EXTRA_KINDS = {"double": "main", "split": "main"}
_BEHIND_EXTRA = ("behind_double", "behind_split")


def behind_type(follow_double: bool, follow_split: bool) -> str:
    """The bet type of a bet behind by its DLX-7/8 choices.

    >>> behind_type(True, False), behind_type(False, False)
    ('behind_follow_double', 'behind_follow_none')
    """
    if follow_double and follow_split:
        return "behind_follow_both"
    if follow_double:
        return "behind_follow_double"
    if follow_split:
        return "behind_follow_split"
    return "behind_follow_none"


class ObservedRtp(Projection):
    """See the module docstring."""

    name = NAME
    version = 1
    handles = round_events("Started", "Joined", "BetPlaced", "WagerSettled")

    def __init__(self) -> None:
        self.rounds = RoundIndex(NAME)

    def tables(self) -> Sequence[Table]:
        return (
            Table(self.rounds.table, self.rounds.ddl(), "originator_id"),
            Table(
                BEHIND,
                f"CREATE TABLE IF NOT EXISTS {BEHIND} ("
                " round_id TEXT NOT NULL, wager_id TEXT NOT NULL, bet_type TEXT NOT NULL,"
                " PRIMARY KEY (round_id, wager_id))",
                "round_id, wager_id",
            ),
            Table(
                WAGERS,
                f"CREATE TABLE IF NOT EXISTS {WAGERS} ("
                " round_id TEXT NOT NULL, wager_id TEXT NOT NULL, day TEXT NOT NULL,"
                " bet_type TEXT NOT NULL, initial INTEGER NOT NULL, stake BIGINT NOT NULL,"
                " paid BIGINT NOT NULL, PRIMARY KEY (round_id, wager_id))",
                "round_id, wager_id",
            ),
            Table(
                ROUND_STAKES,
                f"CREATE TABLE IF NOT EXISTS {ROUND_STAKES} ("
                " round_id TEXT NOT NULL, bet_type TEXT NOT NULL, day TEXT NOT NULL,"
                " stakes BIGINT NOT NULL, PRIMARY KEY (round_id, bet_type, day))",
                "round_id, bet_type, day",
            ),
            Table(
                DAILY,
                f"CREATE TABLE IF NOT EXISTS {DAILY} ("
                " day TEXT NOT NULL, variant TEXT NOT NULL, rules_key TEXT NOT NULL,"
                " table_id TEXT NOT NULL, bet_type TEXT NOT NULL, production INTEGER NOT NULL,"
                " wagers BIGINT NOT NULL, handle BIGINT NOT NULL, staked BIGINT NOT NULL,"
                " paid BIGINT NOT NULL, square_sum BIGINT NOT NULL, refunds BIGINT NOT NULL,"
                " PRIMARY KEY (day, variant, rules_key, table_id, bet_type, production))",
                ", ".join(_KEY),
            ),
        )

    # ---------------------------------------------------------------- batch
    def apply(self, tx: Tx, events: Sequence[Tracked]) -> None:
        self.rounds.begin(tx, events)
        batch = _Batch(tx)
        batch.prefetch(self.rounds, events)
        for _nid, e in events:
            name = e.name
            if name in ("Started", "Joined"):
                self.rounds.record(tx, e)
            elif name == "BetPlaced":
                if e.kind == "behind":
                    facts = self.rounds.of(tx, e)
                    kind = behind_type(bool(e.follow_double), bool(e.follow_split))
                    batch.behind[(facts.round_id, e.wager_id)] = kind
            elif name == "WagerSettled":
                batch.settle(self.rounds, e)
        self.rounds.flush(tx)
        batch.flush(self.rounds.started_in_batch)


class _Batch:
    """One batch's changes, written at the end with one statement per table."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx
        self.behind: dict[tuple[str, str], str] = {}
        self.wagers: dict[tuple[str, str], tuple[Any, ...]] = {}
        self.stakes: dict[tuple[str, str, str], int] = {}
        self.daily: dict[tuple[Any, ...], list[int]] = {}
        self.known_rounds: set[str] = set()  # rounds whose stored rows were prefetched

    def prefetch(self, rounds: RoundIndex, events: Sequence[Tracked]) -> None:
        """Read the stored bet-behind types and round stakes of the rounds whose wagers the
        batch settles, in a few queries (issue 15: no query per event)."""
        rids: dict[str, None] = {}
        for _nid, e in events:
            if e.name != "WagerSettled":
                continue
            rid = rounds.round_id_in_batch(e.originator_id)
            if rid is None:
                continue
            if rounds.started_in_batch(rid):
                self.known_rounds.add(rid)  # started in this batch: nothing stored for it
            else:
                rids[rid] = None
        if not rids:
            return
        for rid, wager_id, kind in rows_by_keys(
            self.tx, BEHIND, ("round_id",), ("round_id", "wager_id", "bet_type"), rids
        ):
            self.behind.setdefault((str(rid), str(wager_id)), str(kind))
        for rid, bet_type, day, stakes in rows_by_keys(
            self.tx, ROUND_STAKES, ("round_id",), ("round_id", "bet_type", "day", "stakes"), rids
        ):
            self.stakes.setdefault((str(rid), str(bet_type), str(day)), int(stakes))
        self.known_rounds.update(rids)

    def _behind_type(self, round_id: str, wager_id: str) -> str:
        kind = self.behind.get((round_id, wager_id))
        if kind is None and round_id in self.known_rounds:
            kind = "behind_follow_both"  # prefetched: no stored type (as below)
            self.behind[(round_id, wager_id)] = kind
        if kind is None:
            row = self.tx.one(
                f"SELECT bet_type FROM {BEHIND} WHERE round_id = ? AND wager_id = ?",
                (round_id, wager_id),
            )
            kind = str(row[0]) if row else "behind_follow_both"
            self.behind[(round_id, wager_id)] = kind
        return kind

    def _bet_type(self, round_id: str, e: Recorded) -> tuple[str, bool]:
        kind = str(e.kind)
        if kind in _EXTRA_KINDS:
            return _EXTRA_KINDS[kind], False
        if kind == "behind":
            return self._behind_type(round_id, e.wager_id), True
        if kind in _BEHIND_EXTRA:  # "<spot>[.n]:behind_double:<player>"
            spot = str(e.hand or e.wager_id.split(":", 1)[0]).split(".", 1)[0]
            return self._behind_type(round_id, f"{spot}:behind:{e.player}"), False
        return kind, True

    def _round_stake(self, round_id: str, bet_type: str, day: str) -> int:
        key = (round_id, bet_type, day)
        if key not in self.stakes and round_id in self.known_rounds:
            self.stakes[key] = 0  # prefetched: nothing stored for it
        if key not in self.stakes:
            row = self.tx.one(
                f"SELECT stakes FROM {ROUND_STAKES} WHERE round_id = ? AND bet_type = ?"
                " AND day = ?",
                key,
            )
            self.stakes[key] = int(row[0]) if row else 0
        return self.stakes[key]

    def _wager(self, round_id: str, wager_id: str) -> tuple[Any, ...] | None:
        key = (round_id, wager_id)
        if key in self.wagers:
            return self.wagers[key]
        row = self.tx.one(
            f"SELECT day, bet_type, initial, stake, paid FROM {WAGERS}"
            " WHERE round_id = ? AND wager_id = ?",
            key,
        )
        return None if row is None else tuple(row)

    def settle(self, rounds: RoundIndex, e: Recorded) -> None:
        facts = rounds.of(self.tx, e)
        rid = facts.round_id
        day = utc_day(e)
        bet_type, initial = self._bet_type(rid, e)
        if e.result == "refund":
            before = self._wager(rid, e.wager_id)
            self._sums(facts, day, bet_type)[5] += 1
            if before is not None:
                self._count(
                    facts,
                    before[0],
                    before[1],
                    bool(before[2]),
                    -int(before[3]),
                    -int(before[4]),
                    rid,
                )
                self.wagers[(rid, e.wager_id)] = (before[0], before[1], before[2], 0, 0)
            return
        stake, paid = cents(e.stake), cents(e.payout)
        self._count(facts, day, bet_type, initial, stake, paid, rid)
        self.wagers[(rid, e.wager_id)] = (day, bet_type, int(initial), stake, paid)

    def _count(
        self,
        facts: RoundFacts,
        day: str,
        bet_type: str,
        initial: bool,
        stake: int,
        paid: int,
        rid: str,
    ) -> None:
        sums = self._sums(facts, day, bet_type)
        sign = 1 if stake >= 0 else -1
        sums[2] += stake
        sums[3] += paid
        if initial:
            sums[0] += sign
            sums[1] += stake
            before = self._round_stake(rid, bet_type, day)
            after = before + stake
            sums[4] += after * after - before * before
            self.stakes[(rid, bet_type, day)] = after

    def _sums(self, facts: RoundFacts, day: str, bet_type: str) -> list[int]:
        """The batch's running sums of one daily row."""
        key = (day, facts.variant, facts.rules_key, facts.table_id, bet_type)
        return self.daily.setdefault((*key, int(facts.production)), [0] * len(_SUMS))

    def flush(self, started: Callable[[str], bool]) -> None:
        """Write the batch's rows; those of rounds ``started`` in this batch are not stored
        yet and go as plain inserts (:func:`~projections.base.upsert`)."""
        tx = self.tx
        tx.insert(
            BEHIND,
            ("round_id", "wager_id", "bet_type"),
            [(*k, v) for k, v in self.behind.items()],
            "ON CONFLICT (round_id, wager_id) DO UPDATE SET bet_type = excluded.bet_type",
        )
        wagers: tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]] = ([], [])
        for k, v in self.wagers.items():
            wagers[started(k[0])].append((*k, *v))
        upsert(
            tx,
            WAGERS,
            ("round_id", "wager_id", "day", "bet_type", "initial", "stake", "paid"),
            wagers[True],
            wagers[False],
            "ON CONFLICT (round_id, wager_id) DO UPDATE SET"
            " day = excluded.day, bet_type = excluded.bet_type, initial = excluded.initial,"
            " stake = excluded.stake, paid = excluded.paid",
        )
        stakes: tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]] = ([], [])
        for sk, sv in self.stakes.items():
            stakes[started(sk[0])].append((*sk, sv))
        upsert(
            tx,
            ROUND_STAKES,
            ("round_id", "bet_type", "day", "stakes"),
            stakes[True],
            stakes[False],
            "ON CONFLICT (round_id, bet_type, day) DO UPDATE SET stakes = excluded.stakes",
        )
        adds = ", ".join(f"{c} = {DAILY}.{c} + excluded.{c}" for c in _SUMS)
        tx.insert(
            DAILY,
            (*_KEY, *_SUMS),
            [(*k, *v) for k, v in self.daily.items()],
            f"ON CONFLICT ({', '.join(_KEY)}) DO UPDATE SET {adds}",
        )


# ------------------------------------------------------------------------------ reading


@cache
def _theory(rules_key: str) -> dict[str, BetTheory]:
    try:
        return theory(load(rules_key))
    except DomainError:  # an unknown or uncomputed key: observed, without a theory
        return {}


@dataclass(frozen=True, slots=True)
class Observation:
    """Observed RTP of one bet type at one table over a day (or a period), with its theory."""

    day_from: dt.date
    day_to: dt.date
    variant: str
    rules_key: str
    table_id: str
    bet_type: str
    production: bool
    wagers: int
    handle: Decimal
    staked: Decimal
    paid: Decimal
    square_sum: int
    refunds: int

    @property
    def observed_rtp(self) -> Decimal | None:
        if not self.handle:
            return None
        return (1 + (self.paid - self.staked) / self.handle).quantize(Decimal("0.000001"))

    @property
    def theory(self) -> BetTheory | None:
        return _theory(self.rules_key).get(self.bet_type)

    def intervals(self) -> list[Interval]:
        t = self.theory
        if t is None or not self.handle or self.square_sum <= 0:
            return []
        return intervals(t.rtp, t.variance, cents(self.handle), self.square_sum)

    @property
    def effective_rounds(self) -> Decimal | None:
        if not self.handle or self.square_sum <= 0:
            return None
        return effective_n(cents(self.handle), self.square_sum)

    @property
    def interval_applies(self) -> bool:
        """Enough effective rounds for the normal interval (Cochran's rule for the bet)."""
        t, n = self.theory, self.effective_rounds
        return t is not None and n is not None and n >= t.min_rounds

    def outside(self) -> list[str]:
        """The levels (``99%``, ``99.9%``) whose interval the observation is outside; none
        while the sample is too small for the interval to apply."""
        rtp = self.observed_rtp
        if rtp is None or not self.interval_applies:
            return []
        return [i.level for i in self.intervals() if not i.contains(rtp)]

    def as_json(self) -> dict[str, Any]:
        t = self.theory
        rtp = self.observed_rtp
        return {
            "day_from": self.day_from.isoformat(),
            "day_to": self.day_to.isoformat(),
            "variant": self.variant,
            "rules_key": self.rules_key,
            "table_id": self.table_id,
            "bet_type": self.bet_type,
            "production": self.production,
            "wagers": self.wagers,
            "handle": str(self.handle),
            "staked": str(self.staked),
            "paid": str(self.paid),
            "observed_rtp": None if rtp is None else str(rtp),
            "theoretical_rtp": None if t is None else str(t.rtp),
            "effective_rounds": None
            if self.effective_rounds is None
            else str(self.effective_rounds),
            "min_effective_rounds": None if t is None else t.min_rounds,
            "interval_applies": self.interval_applies,
            "intervals": {
                i.level: {"low": str(i.low), "high": str(i.high)} for i in self.intervals()
            },
            "outside": self.outside(),
            "refunds": self.refunds,
        }


def observed(
    tx: Tx,
    date_from: dt.date,
    date_to: dt.date,
    *,
    include_test: bool = False,
    variant: str | None = None,
    table_id: str | None = None,
    by_day: bool = True,
) -> list[Observation]:
    """Observations from ``date_from`` to ``date_to`` (UTC days of settlement), production
    tables only unless ``include_test``; one per day, or with ``by_day=False`` one per
    period (sums over the days; the square sum of a round that straddles midnight is then a
    slight overestimate, the safe side)."""
    where, params = period_filter(
        date_from.isoformat(),
        date_to.isoformat(),
        include_test=include_test,
        variant=variant,
        table_id=table_id,
    )
    rows = tx.query(
        f"SELECT {', '.join((*_KEY, *_SUMS))} FROM {DAILY} WHERE {where}"
        " ORDER BY day, variant, rules_key, table_id, bet_type, production",
        params,
    )
    found: dict[tuple[Any, ...], list[Any]] = {}
    for r in rows:
        day = dt.date.fromisoformat(str(r[0]))
        key = tuple(r[:6]) if by_day else tuple(r[1:6])
        acc = found.setdefault(key, [day, day, 0, 0, 0, 0, 0, 0])
        acc[0], acc[1] = min(acc[0], day), max(acc[1], day)
        for i in range(6):
            acc[2 + i] += int(r[6 + i])
    out = []
    for key, acc in found.items():
        variant_, rules_key, table, bet_type, production = key[-5:]
        if not acc[2] and not acc[7]:
            continue
        out.append(
            Observation(
                day_from=acc[0],
                day_to=acc[1],
                variant=str(variant_),
                rules_key=str(rules_key),
                table_id=str(table),
                bet_type=str(bet_type),
                production=bool(production),
                wagers=int(acc[2]),
                handle=money(acc[3]),
                staked=money(acc[4]),
                paid=money(acc[5]),
                square_sum=int(acc[6]),
                refunds=int(acc[7]),
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class ObservedFinding:
    code: str
    message: str
    observation: Observation

    def as_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.observation.as_json()}


def findings(observations: Iterable[Observation]) -> list[ObservedFinding]:
    """One finding per observation outside its 99% interval (``RTP-OBSERVED-OUTSIDE-99``),
    or outside its 99.9% interval (``RTP-OBSERVED-OUTSIDE-99.9``, which replaces it)."""
    out = []
    for o in observations:
        levels = o.outside()
        if not levels:
            continue
        level = "99.9%" if "99.9%" in levels else "99%"
        interval = next(i for i in o.intervals() if i.level == level)
        t = o.theory
        assert t is not None
        when = (
            o.day_from.isoformat()
            if o.day_from == o.day_to
            else f"{o.day_from.isoformat()}..{o.day_to.isoformat()}"
        )
        out.append(
            ObservedFinding(
                CODE_999 if level == "99.9%" else CODE_99,
                f"{when} {o.table_id} ({o.rules_key}) {o.bet_type}: observed RTP "
                f"{o.observed_rtp} over {o.wagers} wagers (handle {o.handle}) is outside the "
                f"{level} interval [{interval.low}, {interval.high}] around the theoretical "
                f"{t.rtp}",
                o,
            )
        )
    return out


__all__ = [
    "CODE_99",
    "CODE_999",
    "DAILY",
    "Observation",
    "ObservedFinding",
    "ObservedRtp",
    "behind_type",
    "findings",
    "observed",
]
