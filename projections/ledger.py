"""The payouts ledger: one row per wager, and the wallets' movements to reconcile it with.

Tables (rebuild with ``roundaudit projections rebuild ledger``); money is integer cents:

``ledger_wagers`` (key ``round_id, wager_id``)
    Every wager of every round: main, double, split, insurance, each side bet, each bet behind
    (and its followed double or split). From ``BetPlaced``/``SeatBetMirrored``/``WagerAdded``:
    round, table, variant, player, ``kind``, spot, hand, ``stake``, ``balance_seen``,
    ``requested`` (the amount asked for; DLX-2 may split it over two seats), ``placed_rule``
    (the rule that added it: ``DLX-2``, ``DBL-1``, ``SPLIT-1``, ``INS-1``, ``DLX-6..8``; NULL
    for a bet) and ``placed_detail`` (DLX-2 ``mirrored``/``split``; a bet behind's follow
    choices).
    From ``WagerSettled``: ``result`` (``win``, ``blackjack``, ``push``, ``lose``,
    ``surrender``, ``even_money``, ``refund``), ``ratio``, ``payout`` (stake included),
    ``rule``, ``rounding`` (what MONEY-1 rounded off), side-bet ``pattern`` and ``paytable``.
    Money that moved: ``paid`` (payouts credited), ``refunded`` (ERR-1/D8 refunds),
    ``reversed`` (ERR-1: a payment taken back when its round was cancelled), and
    ``net = paid + refunded - reversed - stake``. ``status`` is ``open`` until settled,
    then ``settled`` or ``refunded``.

``ledger_wallets`` (key ``wallet_id``)
    Per wallet, from the ``Wallet`` events: the player, deposits, withdrawals and the
    round-linked stakes, payouts, refunds and reversals, the number of movements and the
    balance after the last one.

Queries: :func:`player_totals`, :func:`round_totals`, :func:`wagers`, and
:func:`reconcile`, which checks, per player and to the cent, that the wagers' stakes,
payouts, refunds and reversals equal the wallet's round movements, and that deposits -
withdrawals - stakes + payouts + refunds - reversals equals the wallet's balance. Both tables
are written in the same transactions at the same log position, so they agree at every position
(a round's events and its wallet movements are saved together).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from operator import itemgetter
from typing import Any

from domain.wallet import Wallet
from projections.base import (
    Projection,
    RoundIndex,
    Table,
    Tracked,
    cents,
    money,
    round_events,
    rows_by_keys,
    upsert,
)
from projections.recorded import Recorded
from projections.store import Tx

NAME = "ledger"
WAGERS = "ledger_wagers"
WALLETS = "ledger_wallets"

_WAGER_COLUMNS = (
    "round_id",
    "wager_id",
    "table_id",
    "round_number",
    "variant",
    "production",
    "player",
    "kind",
    "spot",
    "hand",
    "stake",
    "balance_seen",
    "requested",
    "placed_rule",
    "placed_detail",
    "placed_at",
    "status",
    "result",
    "ratio",
    "payout",
    "rule",
    "rounding",
    "pattern",
    "paytable",
    "paid",
    "refunded",
    "reversed",
    "net",
    "settled_at",
)
_WALLET_COLUMNS = (
    "wallet_id",
    "player",
    "currency",
    "account_type",
    "deposits",
    "withdrawals",
    "stakes",
    "payouts",
    "refunds",
    "reversals",
    "movements",
    "balance",
    "version",
)

#: A wager's / a wallet's values as a row of its table, in column order (one C call).
_wager_row: Callable[[dict[str, Any]], tuple[Any, ...]] = itemgetter(*_WAGER_COLUMNS)
_wallet_row: Callable[[dict[str, Any]], tuple[Any, ...]] = itemgetter(*_WALLET_COLUMNS)


@dataclass
class _Wager:
    values: dict[str, Any]

    def row(self) -> tuple[Any, ...]:
        v = self.values
        v["net"] = v["paid"] + v["refunded"] - v["reversed"] - v["stake"]
        return _wager_row(v)


@dataclass
class _Wallet:
    values: dict[str, Any]

    def row(self) -> tuple[Any, ...]:
        return _wallet_row(self.values)


_WALLET_EVENTS = (
    Wallet.Opened,
    Wallet.Deposited,
    Wallet.Withdrawn,
    Wallet.StakeDebited,
    Wallet.PayoutCredited,
    Wallet.RefundCredited,
    Wallet.PaymentReversed,
)

#: The ``ledger_wallets`` column each wallet movement adds to.
_MOVEMENT_COLUMNS: dict[type, str] = {
    Wallet.Deposited: "deposits",
    Wallet.Withdrawn: "withdrawals",
    Wallet.StakeDebited: "stakes",
    Wallet.PayoutCredited: "payouts",
    Wallet.RefundCredited: "refunds",
    Wallet.PaymentReversed: "reversals",
}


class Ledger(Projection):
    """See the module docstring."""

    name = NAME
    version = 1
    handles = (
        *round_events(
            "Started",
            "Joined",
            "BetPlaced",
            "SeatBetMirrored",
            "WagerAdded",
            "WagerSettled",
            "PaymentReversed",
        ),
        *_WALLET_EVENTS,
    )

    def __init__(self) -> None:
        self.rounds = RoundIndex(NAME)
        self._wagers: dict[tuple[str, str], _Wager] = {}
        self._wallets: dict[str, _Wallet] = {}
        self._absent: set[tuple[str, str]] = set()

    def tables(self) -> Sequence[Table]:
        return (
            Table(self.rounds.table, self.rounds.ddl(), "originator_id"),
            Table(
                WAGERS,
                f"CREATE TABLE IF NOT EXISTS {WAGERS} ("
                " round_id TEXT NOT NULL, wager_id TEXT NOT NULL, table_id TEXT NOT NULL,"
                " round_number BIGINT NOT NULL, variant TEXT NOT NULL,"
                " production INTEGER NOT NULL, player TEXT NOT NULL, kind TEXT NOT NULL,"
                " spot TEXT, hand TEXT, stake BIGINT NOT NULL, balance_seen BIGINT,"
                " requested BIGINT, placed_rule TEXT, placed_detail TEXT,"
                " placed_at TEXT NOT NULL, status TEXT NOT NULL,"
                " result TEXT, ratio TEXT, payout BIGINT, rule TEXT, rounding TEXT,"
                " pattern TEXT, paytable TEXT, paid BIGINT NOT NULL, refunded BIGINT NOT NULL,"
                " reversed BIGINT NOT NULL, net BIGINT NOT NULL, settled_at TEXT,"
                " PRIMARY KEY (round_id, wager_id))",
                "round_id, wager_id",
                (f"CREATE INDEX IF NOT EXISTS {WAGERS}_player ON {WAGERS} (player)",),
            ),
            Table(
                WALLETS,
                f"CREATE TABLE IF NOT EXISTS {WALLETS} ("
                " wallet_id TEXT PRIMARY KEY, player TEXT NOT NULL, currency TEXT NOT NULL,"
                " account_type TEXT NOT NULL, deposits BIGINT NOT NULL,"
                " withdrawals BIGINT NOT NULL, stakes BIGINT NOT NULL, payouts BIGINT NOT NULL,"
                " refunds BIGINT NOT NULL, reversals BIGINT NOT NULL,"
                " movements BIGINT NOT NULL, balance BIGINT NOT NULL, version BIGINT NOT NULL)",
                "wallet_id",
                (f"CREATE INDEX IF NOT EXISTS {WALLETS}_player ON {WALLETS} (player)",),
            ),
        )

    # ---------------------------------------------------------------- batch
    def apply(self, tx: Tx, events: Sequence[Tracked]) -> None:
        self.rounds.begin(tx, events)
        self._wagers = {}
        self._wallets = {}
        self._absent = set()
        try:
            self._prefetch(tx, events)
            for _nid, e in events:
                if e.cls in _WALLET_EVENTS:
                    self._wallet_event(tx, e)
                else:
                    self._round_event(tx, e)
            self.rounds.flush(tx)
            self._flush(tx)
        finally:
            self._wagers = {}
            self._wallets = {}
            self._absent = set()

    def _prefetch(self, tx: Tx, events: Sequence[Tracked]) -> None:
        """Read, in a few ``IN (...)`` queries, the stored wagers and wallets the batch's
        events touch (issue 15: no query per event); the keys asked for and not found are
        remembered as absent, so a new wager costs no query either; the wagers of a round
        started in this batch are not asked for (none can be stored yet)."""
        wanted: dict[str, dict[str, None]] = {}
        wallets: dict[str, None] = {}
        opened: set[str] = set()
        for _nid, e in events:
            if e.cls in _WALLET_EVENTS:
                wid = e.originator_id
                if e.cls is Wallet.Opened:
                    opened.add(wid)
                elif wid not in opened:
                    wallets[wid] = None
                continue
            wager_id = getattr(e, "wager_id", None)
            if wager_id is None or e.name in ("Started", "Joined"):
                continue
            rid = self.rounds.round_id_in_batch(e.originator_id)
            if rid is not None and not self.rounds.started_in_batch(rid):
                # (nothing of a round started in this batch is stored: no query)
                wanted.setdefault(rid, {})[str(wager_id)] = None
        keys = [(rid, w) for rid, ids in wanted.items() for w in ids]
        self._absent.update(keys)
        for row in rows_by_keys(tx, WAGERS, ("round_id", "wager_id"), _WAGER_COLUMNS, keys):
            wager = _Wager(dict(zip(_WAGER_COLUMNS, row, strict=True)))
            key = (str(wager.values["round_id"]), str(wager.values["wager_id"]))
            self._wagers[key] = wager
            self._absent.discard(key)
        for row in rows_by_keys(tx, WALLETS, ("wallet_id",), _WALLET_COLUMNS, wallets):
            wallet = _Wallet(dict(zip(_WALLET_COLUMNS, row, strict=True)))
            self._wallets[str(wallet.values["wallet_id"])] = wallet

    def _round_event(self, tx: Tx, e: Recorded) -> None:
        name = e.name
        if name in ("Started", "Joined"):
            self.rounds.record(tx, e)
            return
        facts = self.rounds.of(tx, e)
        rid = facts.round_id
        if name in ("BetPlaced", "WagerAdded", "SeatBetMirrored"):
            spot: str | None
            hand: str | None = None
            rule: str | None = None
            detail: str | None = None
            seen: int | None = None
            requested: int | None = None
            if name == "WagerAdded":
                spot, hand, rule = e.hand.split(".")[0], e.hand, e.rule
                seen = cents(e.balance_seen)
            elif name == "SeatBetMirrored":
                spot, rule, detail = e.spot, e.rule, e.mode
            else:  # a boundless participation's bets have no spot: the player is the spot
                spot, seen = getattr(e, "spot", e.player), cents(e.balance_seen)
                requested = cents(getattr(e, "requested", e.stake))
                if e.kind == "behind":
                    detail = (
                        f"follow_double={'yes' if e.follow_double else 'no'},"
                        f" follow_split={'yes' if e.follow_split else 'no'}"
                    )
            kind = "main" if name == "SeatBetMirrored" else e.kind
            key = (rid, e.wager_id)
            if key in self._wagers or self._load_wager(tx, rid, e.wager_id):
                raise ValueError(f"wager {e.wager_id} of round {rid} placed twice in the log")
            self._wagers[key] = _Wager(
                {
                    "round_id": rid,
                    "wager_id": e.wager_id,
                    "table_id": facts.table_id,
                    "round_number": facts.round_number,
                    "variant": facts.variant,
                    "production": int(facts.production),
                    "player": e.player,
                    "kind": kind,
                    "spot": spot,
                    "hand": hand,
                    "stake": cents(e.stake),
                    "balance_seen": seen,
                    "requested": requested,
                    "placed_rule": rule,
                    "placed_detail": detail,
                    "placed_at": e.at,
                    "status": "open",
                    "result": None,
                    "ratio": None,
                    "payout": None,
                    "rule": None,
                    "rounding": None,
                    "pattern": None,
                    "paytable": None,
                    "paid": 0,
                    "refunded": 0,
                    "reversed": 0,
                    "net": 0,
                    "settled_at": None,
                }
            )
            return
        if name == "WagerSettled":
            v = self._wager(tx, rid, e.wager_id).values
            payout = cents(e.payout)
            v.update(
                status="refunded" if e.result == "refund" else "settled",
                result=e.result,
                ratio=e.ratio,
                payout=payout,
                rule=e.rule,
                rounding=e.rounding,
                pattern=e.pattern,
                paytable=None
                if e.paytable is None
                else json.dumps(e.paytable, sort_keys=True, separators=(",", ":")),
                hand=e.hand if e.hand is not None else v["hand"],
                settled_at=e.at,
            )
            if e.result == "refund":
                v["refunded"] += payout
            else:
                v["paid"] += payout
            return
        if name == "PaymentReversed":
            v = self._wager(tx, rid, e.wager_id).values
            v["reversed"] += cents(e.amount)

    def _wallet_event(self, tx: Tx, e: Recorded) -> None:
        wid = e.originator_id
        if e.cls is Wallet.Opened:
            self._wallets[wid] = _Wallet(
                {
                    "wallet_id": wid,
                    "player": e.player_id,
                    "currency": e.currency,
                    "account_type": e.account_type,
                    "deposits": 0,
                    "withdrawals": 0,
                    "stakes": 0,
                    "payouts": 0,
                    "refunds": 0,
                    "reversals": 0,
                    "movements": 0,
                    "balance": 0,
                    "version": int(e.originator_version),
                }
            )
            return
        w = self._wallet(tx, wid).values
        column = _MOVEMENT_COLUMNS.get(e.cls)
        if column is None:
            return
        w[column] += cents(e.amount)
        w["movements"] += 1
        w["balance"] = cents(e.balance_after)
        w["version"] = int(e.originator_version)

    # ----------------------------------------------------------------- state
    def _wager(self, tx: Tx, rid: str, wager_id: str) -> _Wager:
        key = (rid, wager_id)
        if key not in self._wagers and not self._load_wager(tx, rid, wager_id):
            raise LookupError(f"wager {wager_id} of round {rid} settled before it was placed")
        return self._wagers[key]

    def _load_wager(self, tx: Tx, rid: str, wager_id: str) -> bool:
        if (rid, wager_id) in self._absent or self.rounds.started_in_batch(rid):
            return False  # asked for by the batch's prefetch, or of a new round: not stored
        row = tx.one(
            f"SELECT {', '.join(_WAGER_COLUMNS)} FROM {WAGERS} WHERE round_id = ? AND wager_id = ?",
            (rid, wager_id),
        )
        if row is None:
            return False
        self._wagers[(rid, wager_id)] = _Wager(dict(zip(_WAGER_COLUMNS, row, strict=True)))
        return True

    def _wallet(self, tx: Tx, wid: str) -> _Wallet:
        if wid not in self._wallets:
            row = tx.one(
                f"SELECT {', '.join(_WALLET_COLUMNS)} FROM {WALLETS} WHERE wallet_id = ?", (wid,)
            )
            if row is None:
                raise LookupError(f"wallet {wid} moved money before it was opened")
            self._wallets[wid] = _Wallet(dict(zip(_WALLET_COLUMNS, row, strict=True)))
        return self._wallets[wid]

    def _flush(self, tx: Tx) -> None:
        new: list[tuple[Any, ...]] = []
        other: list[tuple[Any, ...]] = []
        started = self.rounds.started_in_batch
        for wager, w in self._wagers.items():
            # not stored: asked for and absent, or of a round started in this batch
            (new if wager in self._absent or started(wager[0]) else other).append(w.row())
        wallets = [w.row() for w in self._wallets.values()]
        # the wagers last: from zero they are a COPY, whose answer the next projection's
        # first statement collects (``Tx._copy``), so the server writes them meanwhile
        for table, columns, key, fresh, rows in (
            (WALLETS, _WALLET_COLUMNS, "wallet_id", [], wallets),
            (WAGERS, _WAGER_COLUMNS, "round_id, wager_id", new, other),
        ):
            skip = len(key.split(","))
            updates = ", ".join(f"{c} = excluded.{c}" for c in columns[skip:])
            upsert(tx, table, columns, fresh, rows, f"ON CONFLICT ({key}) DO UPDATE SET {updates}")


# ------------------------------------------------------------------------------ queries


@dataclass(frozen=True, slots=True)
class Totals:
    """Money of a group of wagers (a player's, a round's). Exact decimals."""

    key: str
    wagers: int
    open: int
    staked: Decimal
    paid: Decimal
    refunded: Decimal
    reversed: Decimal
    net: Decimal

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "wagers": self.wagers,
            "open": self.open,
            "staked": str(self.staked),
            "paid": str(self.paid),
            "refunded": str(self.refunded),
            "reversed": str(self.reversed),
            "net": str(self.net),
        }


def _totals(tx: Tx, by: str, where: str = "", params: Sequence[Any] = ()) -> list[Totals]:
    rows = tx.query(
        f"SELECT {by}, COUNT(*), SUM(CASE WHEN status = 'open' THEN 1 ELSE 0 END),"
        " SUM(stake), SUM(paid), SUM(refunded), SUM(reversed), SUM(net)"
        f" FROM {WAGERS} {where} GROUP BY {by} ORDER BY {by}",
        params,
    )
    return [
        Totals(
            key=str(r[0]),
            wagers=int(r[1]),
            open=int(r[2] or 0),
            staked=money(r[3]),
            paid=money(r[4]),
            refunded=money(r[5]),
            reversed=money(r[6]),
            net=money(r[7]),
        )
        for r in rows
    ]


def player_totals(tx: Tx, player: str | None = None) -> list[Totals]:
    """Per player: wagers, open wagers, staked, paid, refunded, reversed, net."""
    if player is None:
        return _totals(tx, "player")
    return _totals(tx, "player", "WHERE player = ?", (player,))


def round_totals(tx: Tx, round_id: str | None = None) -> list[Totals]:
    """Per round: the same totals (``key`` is the round id)."""
    if round_id is None:
        return _totals(tx, "round_id")
    return _totals(tx, "round_id", "WHERE round_id = ?", (round_id,))


def player_round_totals(tx: Tx, player: str, round_ids: Sequence[str]) -> dict[str, Totals]:
    """One player's totals in each of ``round_ids`` (round id -> totals; a round where the
    ledger holds no wager of the player is absent)."""
    if not round_ids:
        return {}
    marks = ", ".join("?" for _ in round_ids)
    found = _totals(
        tx, "round_id", f"WHERE player = ? AND round_id IN ({marks})", (player, *round_ids)
    )
    return {t.key: t for t in found}


def wagers(
    tx: Tx, *, round_id: str | None = None, player: str | None = None
) -> list[dict[str, Any]]:
    """Ledger rows as dicts (money as Decimal), filtered by round and/or player."""
    clauses: list[str] = []
    params: list[Any] = []
    if round_id is not None:
        clauses.append("round_id = ?")
        params.append(round_id)
    if player is not None:
        clauses.append("player = ?")
        params.append(player)
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = tx.query(
        f"SELECT {', '.join(_WAGER_COLUMNS)} FROM {WAGERS}{where} ORDER BY round_id, placed_at,"
        " wager_id",
        params,
    )
    out = []
    for r in rows:
        d = dict(zip(_WAGER_COLUMNS, r, strict=True))
        for k in ("stake", "paid", "refunded", "reversed", "net"):
            d[k] = money(d[k])
        for k in ("payout", "balance_seen", "requested"):
            d[k] = None if d[k] is None else money(d[k])
        d["production"] = bool(d["production"])
        out.append(d)
    return out


@dataclass
class Reconciliation:
    """The result of :func:`reconcile`: one line per player, and what disagrees."""

    players: dict[str, dict[str, Decimal]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def reconcile(tx: Tx, wallet_balance: Callable[[str], Decimal] | None = None) -> Reconciliation:
    """Compare, per player and to the cent, the ledger's wagers with the wallet movements.

    For each player: stakes of the wagers = stakes debited; paid = payouts credited;
    refunded = refunds credited; reversed = payments reversed; and deposits - withdrawals -
    stakes + payouts + refunds - reversals = the balance after the wallet's last movement.
    With ``wallet_balance`` (e.g. ``lambda p: app.balance(p)``) the projected balance must
    also equal the live wallet's, which holds when the projection has caught up with the log.
    """
    result = Reconciliation()
    ledger = {t.key: t for t in player_totals(tx)}
    rows = tx.query(
        "SELECT player, SUM(deposits), SUM(withdrawals), SUM(stakes), SUM(payouts),"
        f" SUM(refunds), SUM(reversals), SUM(balance) FROM {WALLETS} GROUP BY player"
    )
    wallets = {str(r[0]): [money(x) for x in r[1:]] for r in rows}
    zero = Decimal("0.00")
    for player in sorted(set(ledger) | set(wallets)):
        t = ledger.get(player)
        staked, paid, refunded, reversed_ = (
            (t.staked, t.paid, t.refunded, t.reversed) if t else (zero, zero, zero, zero)
        )
        if player not in wallets:
            result.problems.append(f"{player}: wagers in the ledger but no wallet")
            continue
        dep, wd, stakes, payouts, refunds, reversals, balance = wallets[player]
        line = {
            "staked": staked,
            "paid": paid,
            "refunded": refunded,
            "reversed": reversed_,
            "deposits": dep,
            "withdrawals": wd,
            "balance": balance,
        }
        result.players[player] = line
        for label, mine, theirs in (
            ("stakes", staked, stakes),
            ("payouts", paid, payouts),
            ("refunds", refunded, refunds),
            ("reversals", reversed_, reversals),
        ):
            if mine != theirs:
                result.problems.append(f"{player}: ledger {label} {mine} != wallet {theirs}")
        expected = dep - wd - staked + paid + refunded - reversed_
        if expected != balance:
            result.problems.append(
                f"{player}: deposits - withdrawals + ledger net = {expected} != wallet balance "
                f"{balance}"
            )
        if wallet_balance is not None:
            live = wallet_balance(player)
            if live != balance:
                result.problems.append(
                    f"{player}: projected balance {balance} != live wallet balance {live}"
                )
    return result


__all__ = [
    "WAGERS",
    "WALLETS",
    "Ledger",
    "Reconciliation",
    "Totals",
    "player_round_totals",
    "player_totals",
    "reconcile",
    "round_totals",
    "wagers",
]
