"""Tables: the record an admin opens (variant, production or test) and deluxe seats (DLX-1..4).

A round or shoe on a table is production exactly when the table is: that comes from this
record, never from a request (``domain.guarded``). Every command is idempotent
(``api.idempotency``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Path, Response

from api.auth import acting
from api.idempotency import Idempotent
from api.openapi import problems
from api.schemas import SeatLeave, SeatTake, TableOpen, TableView
from api.wire import Id
from domain.access import Action
from domain.guarded import GuardedAudit
from domain.table import Table

router = APIRouter(prefix="/tables", tags=["tables"])
Json = dict[str, Any]
TableIdPath = Annotated[Id, Path(description="The table's id.")]


def table_render(table_id: str) -> Any:
    tid = Table.create_id(table_id)

    def render(aggregates: Mapping[UUID, Any]) -> Json | None:
        t = aggregates.get(tid)
        return t.view() if isinstance(t, Table) else None

    return render


@router.post(
    "",
    status_code=201,
    summary="Open a table (admin: production or test)",
    response_model=TableView,
    responses=problems(
        401,
        403,
        409,
        413,
        422,
        links={"GetTable": ("get_table", {"table_id": "$response.body#/table_id"})},
    ),
)
def open_table(
    body: TableOpen,
    audit: Annotated[GuardedAudit, acting(Action.TABLE_OPEN)],
    command: Idempotent,
) -> Response:
    return command.run(
        lambda: audit.open_table(body.table_id, variant=body.variant, production=body.production),
        render=table_render(body.table_id),
        status=201,
        location=lambda view: f"/tables/{view['table_id']}",
    )


@router.get(
    "/{table_id}",
    summary="The table: variant, production, who sits where",
    response_model=TableView,
    responses=problems(401, 403, 404, 422),
)
def get_table(
    table_id: TableIdPath, audit: Annotated[GuardedAudit, acting(Action.TABLE_READ)]
) -> Json:
    return audit.table_view(table_id)


@router.post(
    "/{table_id}/seats",
    summary="Take a seat (DLX-1: two at most, real accounts)",
    response_model=TableView,
    responses=problems(401, 403, 404, 409, 413, 422),
)
def sit(
    table_id: TableIdPath,
    body: SeatTake,
    audit: Annotated[GuardedAudit, acting(Action.TABLE_SEAT)],
    command: Idempotent,
) -> Response:
    return command.run(
        lambda: audit.sit(
            table_id,
            player=body.player,
            seat=body.seat,
            request_id=command.request_id(body.request_id),
        ),
        key=body.request_id,
        render=table_render(table_id),
    )


@router.post(
    "/{table_id}/seats/leave",
    summary="Leave a seat",
    response_model=TableView,
    responses=problems(401, 403, 404, 409, 413, 422),
)
def leave(
    table_id: TableIdPath,
    body: SeatLeave,
    audit: Annotated[GuardedAudit, acting(Action.TABLE_SEAT)],
    command: Idempotent,
) -> Response:
    return command.run(
        lambda: audit.leave(table_id, player=body.player, seat=body.seat),
        render=table_render(table_id),
    )
