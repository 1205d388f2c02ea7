"""``roundaudit projections``: status, rebuild, run and reconcile the tracked projections.

* ``status``: each projection's position in the notification log against the head.
* ``rebuild [NAME]``: drop a projection's tables and tracking (default: all) and replay the log
  from zero, with a progress bar on stderr.
* ``run [--follow]``: catch up with the log once, or keep following it (a projection worker).
* ``reconcile``: catch the ledger up, then compare its totals per player with the wallets to
  the cent (exit 1 when anything disagrees).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from projections import PROJECTIONS, make
from projections.ledger import Ledger, reconcile
from projections.runner import (
    DEFAULT_BATCH_SIZE,
    POSTGRES_BATCH_SIZE,
    ProjectionRunner,
    ProjectionStatus,
    projection_status,
)
from projections.store import ProjectionStore, ProjectionStoreError

if TYPE_CHECKING:
    from cli.main import Context


_BATCH_HELP = (
    f"notifications a batch reads at most (default {DEFAULT_BATCH_SIZE:,} on SQLite,"
    f" {POSTGRES_BATCH_SIZE:,} on PostgreSQL)"
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "projections",
        help="status, rebuild and run the projections (hand scores, ledger, feed, observed RTP)",
        description="Operate the tracked projections kept in the event store's database.",
    )
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    sub.add_parser("status", help="position of each projection against the head of the log")
    rebuild = sub.add_parser("rebuild", help="drop a projection and replay the log from zero")
    rebuild.add_argument(
        "name", nargs="?", choices=list(PROJECTIONS), help="projection (default: all)"
    )
    rebuild.add_argument("--no-progress", action="store_true", help="no progress bar")
    rebuild.add_argument("--batch-size", type=_positive, default=None, help=_BATCH_HELP)
    run = sub.add_parser("run", help="catch up with the log (or keep following it)")
    run.add_argument("--follow", action="store_true", help="keep polling the log")
    run.add_argument("--interval", type=float, default=0.5, help="seconds between polls")
    run.add_argument("--batch-size", type=_positive, default=None, help=_BATCH_HELP)
    sub.add_parser("reconcile", help="compare the ledger with the wallets, to the cent")
    return p


def run(args: argparse.Namespace, ctx: Context) -> int:
    app = ctx.app()
    try:
        with ProjectionStore.from_env(ctx.environment()) as store:
            if args.action == "status":
                _print_status(projection_status(app, store, make()))
                return 0
            if args.action == "rebuild":
                return _rebuild(app, store, args)
            if args.action == "run":
                runner = ProjectionRunner(app, store, make(), batch_size=args.batch_size)
                if args.follow:
                    runner.follow(interval=args.interval)
                    return 0
                n = runner.catch_up()
                print(f"caught up: {n} notifications read, position {runner.position}")
                return 0
            runner = ProjectionRunner(app, store, [Ledger()])
            runner.catch_up()
            with store.read() as tx:
                result = reconcile(tx, app.balance)
            for problem in result.problems:
                print(problem)
            print(
                f"{len(result.players)} players reconciled: "
                + ("ok" if result.ok else f"{len(result.problems)} problem(s)")
            )
            return 0 if result.ok else 1
    except ProjectionStoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


def _rebuild(app: Any, store: ProjectionStore, args: argparse.Namespace) -> int:
    names = [args.name] if args.name else list(PROJECTIONS)
    runner = ProjectionRunner(app, store, make(names), batch_size=args.batch_size)
    bar = tqdm(
        total=runner.head,
        desc=f"rebuild {', '.join(names)}",
        unit="notif",
        file=sys.stderr,
        disable=args.no_progress or not sys.stderr.isatty(),
        dynamic_ncols=True,
    )

    def progress(position: int, head: int) -> None:
        bar.total = head
        bar.n = position
        bar.refresh()

    try:
        n = runner.rebuild(names, progress=progress)
    finally:
        bar.close()
    print(f"rebuilt {', '.join(names)}: {n} notifications read, position {runner.position}")
    return 0


def _print_status(rows: list[ProjectionStatus]) -> None:
    print(f"{'projection':<12} {'version':>7} {'position':>10} {'head':>10} {'behind':>8}  state")
    for s in rows:
        if s.position is None:
            state = "never run"
        elif s.outdated:
            state = f"rebuild needed (tables v{s.stored_version}, code v{s.version})"
        elif s.lag:
            state = "behind"
        else:
            state = "up to date"
        position = "-" if s.position is None else str(s.position)
        print(f"{s.name:<12} {s.version:>7} {position:>10} {s.head:>10} {s.lag:>8}  {state}")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


__all__ = ["add_parser", "run"]
