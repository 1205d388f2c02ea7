"""The reporting pipeline over HTTP: the feed from a position, the daily reports, the
projections' positions.

* ``GET /feed?after=N&limit=L``: the settled wagers after cursor ``N`` in the feed's global,
  gap-free order (``projections.feed.read``); a consumer keeps the returned ``next`` and asks
  again. As JSON (a page of at most 5,000 entries), or with ``Accept: application/x-ndjson`` as
  one entry per line, streamed in batches, up to ``limit`` entries (at most 1,000,000).
* ``GET /reports/daily?from=DAY&to=DAY[&variant=V][&include_test=true]``: the daily aggregates
  (``projections.feed.daily``: wagers, handle, payouts, GGR, RTP, refunds per UTC day,
  variant, table, bet type and kind of money; real money on production tables unless
  ``include_test``) as JSON, CSV or Parquet, chosen by ``format=json|csv|parquet`` or else
  by the ``Accept`` header (``application/json``, ``text/csv``,
  ``application/vnd.apache.parquet``). At most 366 days.
* ``GET /projections``: each projection's position, the log's head and the lag.

Each read catches the projection up first (``api.readside``); the JSON answers say how current
they are (``projection``: position, head, lag), CSV and Parquet in the ``X-Projection-Position``
and ``X-Projection-Head`` headers.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
from collections.abc import Iterator
from decimal import Decimal
from typing import Annotated, Any, Final, Literal

import orjson
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response, StreamingResponse

from api.auth import acting
from api.params import InvalidQuery, Variant, only_parameters, problems
from api.read_schemas import DailyReport, FeedPage, ProjectionsModel
from api.readside import ReadSide
from api.routes.search import Reads
from api.wire import MAX_WIRE_NUMBER
from domain.access import Action
from domain.errors import DomainError
from domain.guarded import GuardedAudit
from domain.rules import VARIANTS
from projections import feed

router = APIRouter(tags=["reporting"])
Json = dict[str, Any]
NDJSON: Final = "application/x-ndjson"
CSV: Final = "text/csv"
PARQUET: Final = "application/vnd.apache.parquet"
MAX_PAGE: Final = 5000
MAX_STREAM: Final = 1_000_000
STREAM_BATCH: Final = 1000
MAX_DAYS: Final = 366
_FORMATS: Final = {"json": "application/json", "csv": CSV, "parquet": PARQUET}


class NotAcceptable(DomainError):
    code = "not-acceptable"
    status = 406


def _entry(e: feed.FeedEntry) -> Json:
    return {k: (str(v) if isinstance(v, Decimal) else v) for k, v in dataclasses.asdict(e).items()}


def _wants(request: Request, offered: tuple[str, ...]) -> str:
    """The first of ``offered`` the ``Accept`` header takes (q > 0), in the header's order of
    preference; ``offered[0]`` without a header or for ``*/*``; 406 otherwise."""
    header = request.headers.get("accept", "").strip()
    if not header:
        return offered[0]
    ranked: list[tuple[float, int, str]] = []
    for i, part in enumerate(header.split(",")):
        kind, *options = (p.strip() for p in part.split(";"))
        q = 1.0
        for option in options:
            name, _, value = option.partition("=")
            if name.strip() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if q > 0:
            ranked.append((-q, i, kind.lower()))
    for _, _, kind in sorted(ranked):
        if kind == "*/*":
            return offered[0]
        for media in offered:
            if kind == media or (kind.endswith("/*") and media.startswith(kind[:-1])):
                return media
    raise NotAcceptable(f"this route answers {', '.join(offered)}; the request accepts {header!r}")


@router.get(
    "/feed",
    summary="The reporting feed: settled wagers after a cursor, in one gap-free order",
    response_model=FeedPage,
    responses={
        200: {"content": {NDJSON: {}}, "description": "A page (JSON) or entries (NDJSON)."},
        **problems(401, 403, 406, 422, 503),
    },
    dependencies=[Depends(only_parameters("after", "limit"))],
)
def read_feed(
    request: Request,
    guard: Annotated[GuardedAudit, acting(Action.FEED_READ)],
    reads: Reads,
    after: Annotated[
        int, Query(ge=0, le=MAX_WIRE_NUMBER, description="The last `seq` already read (0: all).")
    ] = 0,
    limit: Annotated[
        int | None,
        Query(ge=1, le=MAX_STREAM, description="At most this many (JSON: 1-5000, default 1000)."),
    ] = None,
) -> Any:
    media = _wants(request, ("application/json", NDJSON))
    if media == NDJSON:
        count = limit or MAX_STREAM
        with reads.reading("feed") as r:
            head, position = r.head, r.position
        return StreamingResponse(
            _stream_feed(reads, after, count),
            media_type=NDJSON,
            headers={"X-Projection-Position": str(position), "X-Projection-Head": str(head)},
        )
    count = 1000 if limit is None else limit
    if count > MAX_PAGE:
        raise InvalidQuery(
            f"a JSON page holds at most {MAX_PAGE} entries; ask for {NDJSON} to stream more"
        )
    with reads.reading("feed") as r:
        entries = feed.read(r.tx, after_cursor=after, limit=count)
        return {
            "entries": [_entry(e) for e in entries],
            "next": entries[-1].seq if entries else after,
            "projection": r.freshness(),
        }


def _stream_feed(reads: ReadSide, after: int, count: int) -> Iterator[bytes]:
    """Entries after ``after``, a batch per read, one JSON object per line."""
    cursor, left = after, count
    while left > 0:
        with reads.reading("feed") as r:
            entries = feed.read(r.tx, after_cursor=cursor, limit=min(STREAM_BATCH, left))
        if not entries:
            return
        yield b"".join(orjson.dumps(_entry(e)) + b"\n" for e in entries)
        cursor, left = entries[-1].seq, left - len(entries)


@router.get(
    "/reports/daily",
    summary="Daily aggregates (handle, payouts, GGR, RTP) as JSON, CSV or Parquet",
    response_model=DailyReport,
    responses={
        200: {
            "description": "The report (JSON), or its rows as CSV or Parquet.",
            "content": {CSV: {}, PARQUET: {}},
        },
        **problems(401, 403, 406, 422, 503),
    },
    dependencies=[Depends(only_parameters("from", "to", "variant", "include_test", "format"))],
)
def daily_report(
    request: Request,
    guard: Annotated[GuardedAudit, acting(Action.REPORT_READ)],
    reads: Reads,
    date_from: Annotated[dt.date, Query(alias="from", description="First UTC day.")],
    date_to: Annotated[dt.date, Query(alias="to", description="Last UTC day (included).")],
    variant: Annotated[Variant | None, Query(description="One variant only.")] = None,
    include_test: Annotated[
        bool, Query(description="Also test tables and play-money accounts (rows of their own).")
    ] = False,
    format: Annotated[
        Literal["json", "csv", "parquet"] | None,
        Query(description="Instead of the Accept header."),
    ] = None,
) -> Any:
    if date_to < date_from:
        raise InvalidQuery(f"'to' ({date_to}) is before 'from' ({date_from})")
    if (date_to - date_from).days >= MAX_DAYS:
        raise InvalidQuery(f"a report covers at most {MAX_DAYS} days")
    if variant is not None and variant not in VARIANTS:
        raise InvalidQuery(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
    media = _FORMATS[format] if format else _wants(request, ("application/json", CSV, PARQUET))
    with reads.reading("feed") as r:
        rows = feed.daily(r.tx, date_from, date_to, include_test=include_test, variant=variant)
        fresh = r.freshness()
    name = f"daily-{date_from}-{date_to}"
    headers = {
        "X-Projection-Position": str(fresh["position"]),
        "X-Projection-Head": str(fresh["head"]),
    }
    if media == CSV:
        text = io.StringIO()
        feed.write_csv(rows, text)
        headers["Content-Disposition"] = f'attachment; filename="{name}.csv"'
        return Response(text.getvalue(), media_type="text/csv; charset=utf-8", headers=headers)
    if media == PARQUET:
        data = io.BytesIO()
        feed.write_parquet(rows, data)
        headers["Content-Disposition"] = f'attachment; filename="{name}.parquet"'
        return Response(data.getvalue(), media_type=PARQUET, headers=headers)
    return {
        "from": date_from.isoformat(),
        "to": date_to.isoformat(),
        "include_test": include_test,
        "variant": variant,
        "rows": [_daily(row) for row in rows],
        "projection": fresh,
    }


def _daily(row: feed.DailyAggregate) -> Json:
    out: Json = {}
    for k, v in row.as_record().items():
        if isinstance(v, dt.date):
            out[k] = v.isoformat()
        elif k in ("handle", "payouts", "ggr", "refunded"):
            out[k] = str(v)
        elif k == "rtp":
            out[k] = None if v is None else str(v)
        else:
            out[k] = v
    return out


@router.get(
    "/projections",
    summary="Each projection's position in the log, the head and the lag",
    response_model=ProjectionsModel,
    responses=problems(401, 403, 503),
    dependencies=[Depends(only_parameters())],
)
def projections_status(
    guard: Annotated[GuardedAudit, acting(Action.PROJECTIONS_READ)], reads: Reads
) -> Json:
    found = reads.status()
    head = max((s.head for s in found), default=0)
    return {
        "head": head,
        "projections": [
            {
                "name": s.name,
                "version": s.version,
                "stored_version": s.stored_version,
                "position": s.position,
                "head": s.head,
                "lag": s.lag,
                "outdated": s.outdated,
            }
            for s in found
        ],
    }


__all__ = ["router"]
