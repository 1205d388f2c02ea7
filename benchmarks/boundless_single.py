"""Benchmark: one player's single command in a boundless round, as the round grows.

Run on demand (not part of the test suite)::

    python -m benchmarks.boundless_single                      # 500 and 2,000 players, SQLite
    python -m benchmarks.boundless_single --players 500,4000 --store postgres

For each round size: a boundless round of that many funded players is opened from the
boundless benchmark's test shoe (``benchmarks.boundless``), all but ``--commands`` players bet
in batches, then the CPU time (``time.process_time``) of ``--commands`` single bets
(``RoundAudit.place_bet``, one player each, as ``POST /rounds/{id}/bets`` runs it) is taken;
betting closes, and the CPU of as many single decisions (``RoundAudit.decide``, a stand each,
as ``POST /rounds/{id}/decisions``) is taken. Printed: milliseconds of CPU a command at each
size and the ratio of the largest size's to the smallest's, against issue 15's flat-cost
target (< 1.10x: a command's cost must not grow with the round).

Each command answers the round's head with its player's hands only
(``domain.boundless.engine.Engine.player_view``); the whole round in each answer made a
command cost as much as the round (47 ms of CPU a decision at 4,000 players, 0.5 ms after).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from benchmarks.boundless import _chunks, _store, open_wallets, shoe_order
from domain.application import RoundAudit
from domain.boundless.service import Bet
from domain.persistence import environment_for

TARGET = 1.10


@dataclass
class Figure:
    players: int
    bet_ms: float
    decision_ms: float
    answered_hands: int  # hands in the last decision's answer (1: the player's own)


def measure(players: int, store_url: str, commands: int = 50, batch: int = 1000) -> Figure:
    """One round of ``players`` on ``store_url`` (see the module docstring)."""
    if not 1 <= commands <= players:
        raise ValueError("commands must be 1 to players")
    app = RoundAudit(environment_for(store_url))
    try:
        names = [f"p{i:06d}" for i in range(players)]
        open_wallets(app, names, batch)
        rid = app.start_round(
            table_id=f"single-{players}",
            round_number=1,
            variant="boundless",
            production=False,
            test_order=shoe_order(),
        )
        early, late = names[: players - commands], names[players - commands :]
        for chunk in _chunks([Bet(n, "10.00") for n in early], batch):
            assert not [e for e in app.boundless.place_bets(rid, chunk) if e is not None]
        c0 = time.process_time()
        for name in late:
            app.place_bet(rid, player=name, amount="10.00")
        bet_cpu = time.process_time() - c0
        app.close_betting(rid)
        due = app.boundless.pending(rid)[:commands]
        answer: dict[str, object] = {}
        c0 = time.process_time()
        for p in due:
            answer = app.decide(rid, player=p["player"], action="stand", hand=p["hand"])
        decision_cpu = time.process_time() - c0
        hands = answer.get("hands")
        return Figure(
            players,
            bet_cpu * 1000 / commands,
            decision_cpu * 1000 / len(due),
            len(hands) if isinstance(hands, list) else -1,
        )
    finally:
        app.close()


def run(sizes: Sequence[int], store: str, commands: int) -> Iterator[Figure]:
    for players in sizes:
        with _store(store, None) as url:
            yield measure(players, url, commands)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.boundless_single")
    parser.add_argument("--players", default="500,2000", help="round sizes, comma-separated")
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--commands", type=int, default=50, help="single commands timed")
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.players.split(","))
    figures = []
    for f in run(sizes, args.store, args.commands):
        figures.append(f)
        print(
            f"{args.store} {f.players:>6} players: single bet {f.bet_ms:.2f} ms CPU, single "
            f"decision {f.decision_ms:.2f} ms CPU (hands in an answer: {f.answered_hands})"
        )
    first, last = figures[0], figures[-1]
    ok = True
    for what, a, b in (
        ("bet", first.bet_ms, last.bet_ms),
        ("decision", first.decision_ms, last.decision_ms),
    ):
        ratio = b / a if a else float("inf")
        met = ratio < TARGET
        ok &= met
        print(
            f"single {what}: {last.players} / {first.players} players = {ratio:.2f}x "
            f"(target < {TARGET:.2f}x: {'met' if met else 'NOT met'})"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
