"""Reports: the observed RTP of settled wagers against the theory (``projections.observed_rtp``).

``GET /reports/rtp`` catches the observed-RTP projection up with the log, then returns one
observation per UTC day, table and bet type (or per period with ``by_day=false``): handle,
stakes, payouts, observed RTP, the theoretical RTP of the round's rules key, and the 99% and
99.9% intervals its exact variance allows, with the findings for observations outside them.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from fastapi import APIRouter, Query

from api.auth import acting
from api.deps import AppSettings
from api.errors import BadReportPeriod, UnknownVariant
from api.openapi import problems
from api.params import Variant
from api.wire import Id
from domain.access import Action
from domain.guarded import GuardedAudit
from domain.persistence import environment_for
from domain.rules import VARIANTS
from projections.observed_rtp import ObservedRtp, findings, observed
from projections.runner import ProjectionRunner
from projections.store import ProjectionStore

router = APIRouter(prefix="/reports", tags=["reports"])
Json = dict[str, Any]
MAX_DAYS = 366


@router.get(
    "/rtp",
    summary="Observed RTP per day, table and bet type, against the theoretical interval",
    response_model=dict[str, Any],
    responses=problems(401, 403, 422),
)
def observed_rtp(
    guard: Annotated[GuardedAudit, acting(Action.REPORTS_READ)],
    settings: AppSettings,
    date_from: Annotated[dt.date, Query(alias="from", description="first UTC day")],
    date_to: Annotated[dt.date, Query(alias="to", description="last UTC day (included)")],
    variant: Annotated[Variant | None, Query(description="one variant only")] = None,
    table: Annotated[Id | None, Query(description="one table only")] = None,
    include_test: Annotated[bool, Query(description="include test tables")] = False,
    by_day: Annotated[bool, Query(description="one observation per day (else per period)")] = True,
) -> Json:
    if date_to < date_from:
        raise BadReportPeriod(f"'to' ({date_to}) is before 'from' ({date_from})")
    if (date_to - date_from).days >= MAX_DAYS:
        raise BadReportPeriod(f"a report covers at most {MAX_DAYS} days")
    if variant is not None and variant not in VARIANTS:
        raise UnknownVariant(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
    with ProjectionStore.from_env(environment_for(settings.database_url)) as store:
        ProjectionRunner(guard.app, store, [ObservedRtp()]).catch_up()
        with store.read() as tx:
            rows = observed(
                tx,
                date_from,
                date_to,
                include_test=include_test,
                variant=variant,
                table_id=table,
                by_day=by_day,
            )
    return {
        "from": date_from.isoformat(),
        "to": date_to.isoformat(),
        "observations": [o.as_json() for o in rows],
        "findings": [f.as_json() for f in findings(rows)],
    }
