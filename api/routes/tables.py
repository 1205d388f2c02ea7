"""Tables: the record an admin opens (variant, production or test) and deluxe seats (DLX-1..4).

A round or shoe on a table is production exactly when the table is: that comes from this
record, never from a request (``domain.guarded``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Response, status

from api.auth import acting
from api.deps import IdempotencyKey, pick_request_id
from api.schemas import SeatLeave, SeatTake, TableOpen
from domain.access import Action
from domain.guarded import GuardedAudit

router = APIRouter(prefix="/tables", tags=["tables"])
Json = dict[str, Any]


@router.post(
    "", status_code=status.HTTP_201_CREATED, summary="Open a table (admin: production or test)"
)
def open_table(
    body: TableOpen, audit: Annotated[GuardedAudit, acting(Action.TABLE_OPEN)], response: Response
) -> Json:
    view = audit.open_table(body.table_id, variant=body.variant, production=body.production)
    response.headers["Location"] = f"/tables/{body.table_id}"
    return view


@router.get("/{table_id}", summary="The table: variant, production, who sits where")
def get_table(table_id: str, audit: Annotated[GuardedAudit, acting(Action.TABLE_READ)]) -> Json:
    return audit.table_view(table_id)


@router.post("/{table_id}/seats", summary="Take a seat (DLX-1: two at most, real accounts)")
def sit(
    table_id: str,
    body: SeatTake,
    audit: Annotated[GuardedAudit, acting(Action.TABLE_SEAT)],
    idempotency_key: IdempotencyKey = None,
) -> Json:
    return audit.sit(
        table_id,
        player=body.player,
        seat=body.seat,
        request_id=pick_request_id(body.request_id, idempotency_key),
    )


@router.post("/{table_id}/seats/leave", summary="Leave a seat")
def leave(
    table_id: str, body: SeatLeave, audit: Annotated[GuardedAudit, acting(Action.TABLE_SEAT)]
) -> Json:
    return audit.leave(table_id, player=body.player, seat=body.seat)
