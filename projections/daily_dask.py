"""Daily reports over Parquet exports with ``dask.dataframe``: many stores, one report.

This module owns the report that outgrows one store or one process: the daily aggregates of
several stores (one per studio: the shards of docs/scaling.md), or of a year of one, read from
the Parquet files ``roundaudit report --format parquet --include-test`` writes
(:func:`projections.feed.write_parquet`), reduced on a Dask cluster. The rows and their money
are those of :func:`projections.feed.daily` run on each store: the same key (UTC day of
settlement, variant, table, kind of money, production flag, account type), the same sums, the
same filters (production tables and real money only unless ``include_test``; one variant), in
the same order, as :class:`~projections.feed.DailyAggregate` values.

Money stays exact: the files hold ``decimal128(18, 2)``; each partition turns it into integer
minor units (cents) before the sums, and the result back into ``Decimal``: no float touches an
amount. Each export must hold **whole days** of its store (an export taken mid-day and another
of the same day would count that day's wagers twice); one file per store and period, as the
command writes, is.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from projections.base import money
from projections.feed import DailyAggregate

__all__ = ["KEY", "SUMS", "daily_from_parquet"]

KEY = ("day", "variant", "table_id", "kind", "production", "account_type")
MONEY = ("handle", "payouts", "refunded")
SUMS = ("wagers", "handle", "payouts", "refunds", "refunded")


def _to_cents(part: Any) -> Any:
    """A partition with its money as int64 minor units (exact: decimal128 scale 2)."""
    out = part[[*KEY, *SUMS]].copy()
    for column in MONEY:
        out[column] = [int(d.scaleb(2)) for d in out[column].tolist()]
        out[column] = out[column].astype("int64")
    out["day"] = out["day"].astype(str)
    return out


def daily_from_parquet(
    paths: Sequence[str | Path],
    date_from: dt.date,
    date_to: dt.date,
    *,
    include_test: bool = False,
    variant: str | None = None,
    scheduler: str | None = None,
) -> list[DailyAggregate]:
    """The daily aggregates of every export in ``paths`` from ``date_from`` to ``date_to``
    inclusive, as :func:`projections.feed.daily` gives them for one store.

    Runs on the Dask cluster at ``scheduler`` (``tcp://HOST:8786``), or on Dask's local
    threads without one.
    """
    import dask.dataframe as dd
    import pandas as pd

    if not paths:
        return []
    frame = dd.read_parquet([str(p) for p in paths])
    meta = pd.DataFrame(
        {
            **{c: pd.Series(dtype=object if c != "production" else bool) for c in KEY},
            **{c: pd.Series(dtype="int64") for c in SUMS},
        }
    )
    cents = frame.map_partitions(_to_cents, meta=meta)
    lo, hi = date_from.isoformat(), date_to.isoformat()
    cents = cents[(cents["day"] >= lo) & (cents["day"] <= hi)]
    if not include_test:
        cents = cents[cents["production"] & (cents["account_type"] == "real")]
    if variant is not None:
        cents = cents[cents["variant"] == variant]
    grouped = cents.groupby(list(KEY), dropna=False)[list(SUMS)].sum()
    if scheduler is not None:
        from distributed import Client

        # never the process's default client: nothing else computes on it, and a client that
        # failed to close cannot capture a later computation (see below)
        with Client(scheduler, timeout="30s", set_as_default=False) as client:
            result = client.compute(grouped).result()
    else:
        # Dask's local threads, named: left to itself, ``compute`` runs on the process's
        # default ``distributed`` client when there is one (any open client made elsewhere in
        # the process, or one whose close timed out), and on one whose cluster is gone it
        # waits for ever
        result = grouped.compute(scheduler="threads")
    rows = []
    for key, sums in result.reset_index().set_index(list(KEY)).iterrows():
        day, var, table_id, kind, production, account_type = key
        wagers, refunds = int(sums["wagers"]), int(sums["refunds"])
        if not (wagers or refunds):
            continue
        rows.append(
            DailyAggregate(
                day=dt.date.fromisoformat(str(day)),
                variant=str(var),
                table_id=str(table_id),
                kind=str(kind),
                production=bool(production),
                account_type=str(account_type),
                wagers=wagers,
                handle=money(sums["handle"]),
                payouts=money(sums["payouts"]),
                refunds=refunds,
                refunded=money(sums["refunded"]),
            )
        )
    rows.sort(key=lambda r: (r.day, r.variant, r.table_id, r.kind, r.production, r.account_type))
    return rows
