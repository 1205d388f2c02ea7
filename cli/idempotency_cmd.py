"""``roundaudit idempotency prune [--window 7d] [--follow SECONDS]``: delete the idempotency
records older than the retention window (``domain.idempotency``), never a younger one.

The service prunes every hour by itself; this is the same worker for an operator (once, or
as a process of its own with ``--follow``). The window defaults to
``ROUNDAUDIT_IDEMPOTENCY_WINDOW`` (7 days).
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cli.main import Context

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    s: argparse.ArgumentParser = subparsers.add_parser(
        "idempotency", help="idempotency records: prune those older than the window"
    )
    sub = s.add_subparsers(dest="idempotency_command", metavar="ACTION", required=True)
    prune = sub.add_parser("prune", help="delete the records older than the window")
    prune.add_argument(
        "--window",
        help="how long records are kept (e.g. 7d, 12h, 90s; default ROUNDAUDIT_IDEMPOTENCY_WINDOW "
        "or 7d)",
    )
    prune.add_argument(
        "--follow", type=float, metavar="SECONDS", help="prune again every SECONDS until stopped"
    )
    s.set_defaults(handler=run)
    return s


def run(args: argparse.Namespace, ctx: Context) -> int:
    from api.settings import IDEMPOTENCY_WINDOW_ENV, parse_duration
    from domain.idempotency import DEFAULT_WINDOW

    window = parse_duration(
        "--window", args.window or os.environ.get(IDEMPOTENCY_WINDOW_ENV), DEFAULT_WINDOW
    )
    app = ctx.app()
    stop = threading.Event()
    if args.follow:
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    while True:
        gone = app.idempotency.prune(window=window)
        print(f"pruned {gone} idempotency record(s) older than {window}", flush=True)
        if not args.follow or stop.wait(args.follow):
            return 0
