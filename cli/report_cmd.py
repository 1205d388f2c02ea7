"""``roundaudit report``: daily aggregates of the reporting feed, printed or exported.

Per UTC day of settlement, variant, table and bet type: wagers, handle, payouts, gross gaming
revenue (handle - payouts) and observed RTP (payouts / handle), production rounds only unless
``--include-test``. The feed projection is caught up with the log first (``--no-catch-up``
reads it as it is). Formats: ``table`` (default, on stdout), ``csv`` (stdout or ``--output``),
``parquet`` (needs ``--output``).

``--parquet EXPORT...`` reports over Parquet exports instead (several stores, the shards of
docs/scaling.md, or several periods), reduced with ``dask.dataframe``
(``projections.daily_dask``; ``--scheduler tcp://HOST:8786`` for a Dask cluster): the rows
the single-process report gives for each store.

The observed-RTP monitor (``projections.observed_rtp``) is caught up too: every day, table and
bet type whose observed RTP is outside the interval its exact variance allows is a finding
(``RTP-OBSERVED-OUTSIDE-99``, ``RTP-OBSERVED-OUTSIDE-99.9``), printed after the table (on
stderr for CSV and Parquet, so that the data stays clean).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from domain.rules import VARIANTS
from projections.feed import DailyAggregate, Feed, daily, write_csv, write_parquet
from projections.observed_rtp import ObservedFinding, ObservedRtp, findings, observed
from projections.runner import ProjectionRunner
from projections.store import ProjectionStore, ProjectionStoreError

if TYPE_CHECKING:
    from cli.main import Context


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "report",
        help="daily aggregates per variant, table and bet type (table, CSV, Parquet)",
        description=(
            "Daily aggregates of settled wagers from the reporting feed: wagers, handle, "
            "payouts, GGR and observed RTP per UTC day, variant, table and bet type."
        ),
    )
    p.add_argument("--from", dest="date_from", required=True, type=_date, help="first day")
    p.add_argument("--to", dest="date_to", required=True, type=_date, help="last day (included)")
    p.add_argument("--format", choices=("table", "csv", "parquet"), default="table")
    p.add_argument("--output", type=Path, default=None, help="file to write (default stdout)")
    p.add_argument("--variant", choices=VARIANTS, default=None)
    p.add_argument("--include-test", action="store_true", help="include test tables")
    p.add_argument(
        "--no-catch-up", action="store_true", help="report the feed as it is, without updating"
    )
    p.add_argument(
        "--parquet",
        nargs="+",
        type=Path,
        default=None,
        metavar="EXPORT",
        help="report over these Parquet exports (of several stores or periods) with Dask, "
        "not over the store (exports written with --include-test; no RTP findings)",
    )
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="URL",
        help="with --parquet: the Dask scheduler (tcp://HOST:8786; default local threads)",
    )
    return p


def run(args: argparse.Namespace, ctx: Context) -> int:
    if args.date_to < args.date_from:
        print("error: --to is before --from", file=sys.stderr)
        return 2
    if args.format == "parquet" and args.output is None:
        print("error: --format parquet needs --output FILE", file=sys.stderr)
        return 2
    if args.scheduler and not args.parquet:
        print("error: --scheduler goes with --parquet", file=sys.stderr)
        return 2
    rtp_findings: list[ObservedFinding] = []
    if args.parquet:
        from projections.daily_dask import daily_from_parquet

        missing = [str(f) for f in args.parquet if not f.is_file()]
        if missing:
            print(f"error: no such export: {', '.join(missing)}", file=sys.stderr)
            return 2
        rows = daily_from_parquet(
            args.parquet,
            args.date_from,
            args.date_to,
            include_test=args.include_test,
            variant=args.variant,
            scheduler=args.scheduler,
        )
        return _write(args, rows, rtp_findings)
    try:
        with ProjectionStore.from_env(ctx.environment()) as store:
            if not args.no_catch_up:
                ProjectionRunner(ctx.app(), store, [Feed(), ObservedRtp()]).catch_up()
            elif not store.table_exists("feed_daily"):
                print("error: the feed projection has never run on this store", file=sys.stderr)
                return 1
            monitored = store.table_exists("observed_rtp_daily")
            with store.read() as tx:
                rows = daily(
                    tx,
                    args.date_from,
                    args.date_to,
                    include_test=args.include_test,
                    variant=args.variant,
                )
                if monitored:
                    rtp_findings = findings(
                        observed(
                            tx,
                            args.date_from,
                            args.date_to,
                            include_test=args.include_test,
                            variant=args.variant,
                        )
                    )
    except ProjectionStoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return _write(args, rows, rtp_findings)


def _write(args: argparse.Namespace, rows: list[DailyAggregate], rtp_findings: Any) -> int:
    if args.format == "parquet":
        n = write_parquet(rows, args.output)
        print(f"{n} rows written to {args.output}")
        _findings(rtp_findings, sys.stderr)
        return 0
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        with args.output.open("w", newline="", encoding="utf-8") as out:
            n = write_csv(rows, out) if args.format == "csv" else _table(rows, out)
            if args.format == "table":
                _findings(rtp_findings, out)
        print(f"{n} rows written to {args.output}")
        if args.format == "csv":
            _findings(rtp_findings, sys.stderr)
        return 0
    if args.format == "csv":
        write_csv(rows, sys.stdout)
        _findings(rtp_findings, sys.stderr)
    else:
        _table(rows, sys.stdout)
        _findings(rtp_findings, sys.stdout)
    return 0


def _findings(found: list[ObservedFinding], out: Any) -> None:
    """The observed-RTP findings of the period (nothing when there are none)."""
    if not found:
        return
    print(f"\nobserved RTP findings ({len(found)}):", file=out)
    for f in found:
        print(f"  {f.code}: {f.message}", file=out)


def _table(rows: list[DailyAggregate], out: Any) -> int:
    header = (
        f"{'day':<10} {'variant':<10} {'table':<16} {'bet type':<13} {'wagers':>7} "
        f"{'handle':>12} {'payouts':>12} {'GGR':>12} {'RTP':>8}"
    )
    print(header, file=out)
    print("-" * len(header), file=out)
    wagers = 0
    handle = payouts = Decimal("0.00")
    for r in rows:
        test = "" if r.production else " (test)"
        print(
            f"{r.day.isoformat():<10} {r.variant:<10} {r.table_id + test:<16} {r.kind:<13} "
            f"{r.wagers:>7} {r.handle:>12} {r.payouts:>12} {r.ggr:>12} {_pct(r.rtp):>8}",
            file=out,
        )
        wagers += r.wagers
        handle += r.handle
        payouts += r.payouts
    print("-" * len(header), file=out)
    rtp = (payouts / handle) if handle else None
    print(
        f"{'total':<53} {wagers:>7} {handle:>12} {payouts:>12} {handle - payouts:>12} "
        f"{_pct(rtp):>8}",
        file=out,
    )
    return len(rows)


def _pct(value: Decimal | None) -> str:
    if value is None:
        return "-"
    return f"{(value * 100).quantize(Decimal('0.01'))}%"


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


__all__ = ["add_parser", "run"]
