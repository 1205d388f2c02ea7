"""Tables (deluxe): seats that last across rounds (DLX-1..4)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response, status

from api.deps import AuditApp, IdempotencyKey, pick_request_id
from api.schemas import SeatLeave, SeatTake, TableOpen

router = APIRouter(prefix="/tables", tags=["tables"])
Json = dict[str, Any]


@router.post("", status_code=status.HTTP_201_CREATED, summary="Open a deluxe table")
def open_table(body: TableOpen, audit: AuditApp, response: Response) -> Json:
    view = audit.open_table(body.table_id, variant=body.variant, production=body.production)
    response.headers["Location"] = f"/tables/{body.table_id}"
    return view


@router.get("/{table_id}", summary="Who sits where")
def get_table(table_id: str, audit: AuditApp) -> Json:
    return audit.table(table_id).view()


@router.post("/{table_id}/seats", summary="Take a seat (DLX-1: two at most, real accounts)")
def sit(
    table_id: str, body: SeatTake, audit: AuditApp, idempotency_key: IdempotencyKey = None
) -> Json:
    return audit.sit(
        table_id,
        player=body.player,
        seat=body.seat,
        request_id=pick_request_id(body.request_id, idempotency_key),
    )


@router.post("/{table_id}/seats/leave", summary="Leave a seat")
def leave(table_id: str, body: SeatLeave, audit: AuditApp) -> Json:
    return audit.leave(table_id, player=body.player, seat=body.seat)
