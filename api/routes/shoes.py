"""Shoes: open (rng, live or test), burn (SHOE-2), cut card (SHOE-1), retire, view.

A shoe is production as its table's record says (a test shoe only on a test table). Views
hide the face-down cards of rounds in play; an RNG shoe's seed shows only once it retires,
and retiring one that a round in play draws from is refused (409 ``shoe-in-use``). Every
command is idempotent (``api.idempotency``): a repeat never moves the shoe.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Path, Response

from api.auth import acting
from api.idempotency import Idempotent
from api.openapi import problems
from api.schemas import Burn, BurnView, CutCard, ShoeOpen, ShoeRetire, ShoeView
from api.wire import ShoeId
from domain.access import Action
from domain.guarded import GuardedAudit
from domain.shoe import BURN_SHOWN, Shoe

router = APIRouter(prefix="/shoes", tags=["shoes"])
Json = dict[str, Any]
ShoeIdPath = Annotated[ShoeId, Path(description="The shoe's id (its UUID).")]
Operator = Annotated[GuardedAudit, acting(Action.SHOE_OPERATE)]


def _shoe_in(aggregates: Mapping[UUID, Any], shoe_id: UUID | None) -> Shoe | None:
    found = [a for a in aggregates.values() if isinstance(a, Shoe)]
    if shoe_id is not None:
        found = [a for a in found if a.id == shoe_id]
    return found[0] if len(found) == 1 else None


def shoe_render(audit: GuardedAudit, shoe_id: str | None) -> Any:
    sid = UUID(shoe_id) if shoe_id is not None else None

    def render(aggregates: Mapping[UUID, Any]) -> Json | None:
        shoe = _shoe_in(aggregates, sid)
        return audit.shoe_answer(shoe) if shoe is not None else None

    return render


def burn_answer(audit: GuardedAudit, shoe: Shoe) -> Json:
    """What a burn answers: the shown card, the burned ones, and the shoe."""
    drawn = shoe.drawn
    start = max(i for i, d in enumerate(drawn) if d.purpose == BURN_SHOWN)
    return {
        "shown": str(drawn[start].card),
        "burned": [str(d.card) for d in drawn[start + 1 :] if d.purpose == "burn"],
        "shoe": audit.shoe_answer(shoe),
    }


@router.post(
    "",
    status_code=201,
    summary="Open a shoe for a table",
    response_model=ShoeView,
    responses=problems(
        401,
        403,
        404,
        409,
        413,
        422,
        links={"GetShoe": ("get_shoe", {"shoe_id": "$response.body#/shoe_id"})},
    ),
)
def open_shoe(
    body: ShoeOpen, audit: Annotated[GuardedAudit, acting(Action.SHOE_OPEN)], command: Idempotent
) -> Response:
    return command.run(
        lambda: audit.open_shoe(
            table_id=body.table_id,
            shoe_number=body.shoe_number,
            kind=body.kind,
            decks=body.decks,
            order=body.order,
            burn_procedure=body.burn_procedure,
            cut_card_at=body.cut_card_at,
        ),
        render=shoe_render(audit, None),
        status=201,
        location=lambda view: f"/shoes/{view['shoe_id']}",
    )


@router.post(
    "/{shoe_id}/burn",
    summary="Show the first card and burn its value (SHOE-2)",
    response_model=BurnView,
    responses=problems(401, 403, 404, 409, 413, 422),
)
def burn(shoe_id: ShoeIdPath, body: Burn, audit: Operator, command: Idempotent) -> Response:
    def render(aggregates: Mapping[UUID, Any]) -> Json | None:
        shoe = _shoe_in(aggregates, UUID(shoe_id))
        return burn_answer(audit, shoe) if shoe is not None else None

    return command.run(
        lambda: audit.burn(
            shoe_id,
            card=body.card,
            cards=body.cards,
            request_id=command.request_id(body.request_id),
            client_time=body.client_time,
        ),
        render=render,
    )


@router.post(
    "/{shoe_id}/cut-card",
    summary="The cut card came out (SHOE-1, live shoes)",
    response_model=ShoeView,
    responses=problems(401, 403, 404, 409, 413, 422),
)
def cut_card(
    shoe_id: ShoeIdPath, audit: Operator, command: Idempotent, body: CutCard | None = None
) -> Response:
    return command.run(
        lambda: audit.cut_card(
            shoe_id,
            round_id=body.round_id if body is not None else None,
            request_id=command.request_id(body.request_id if body is not None else None),
            client_time=body.client_time if body is not None else None,
        ),
        render=shoe_render(audit, shoe_id),
    )


@router.post(
    "/{shoe_id}/retire",
    summary="Retire the shoe (an rng shoe reveals its seed); 409 while a round in play uses it",
    response_model=ShoeView,
    responses=problems(401, 403, 404, 409, 422),
)
def retire(
    shoe_id: ShoeIdPath,
    audit: Annotated[GuardedAudit, acting(Action.SHOE_RETIRE)],
    command: Idempotent,
    body: ShoeRetire | None = None,
) -> Response:
    return command.run(
        lambda: audit.retire_shoe(
            shoe_id,
            request_id=command.request_id(body.request_id if body is not None else None),
            client_time=body.client_time if body is not None else None,
        ),
        render=shoe_render(audit, shoe_id),
    )


@router.get(
    "/{shoe_id}",
    summary="The shoe and every card that left it (face-down ones hidden)",
    response_model=ShoeView,
    responses=problems(401, 403, 404, 422),
)
def get_shoe(shoe_id: ShoeIdPath, audit: Annotated[GuardedAudit, acting(Action.SHOE_READ)]) -> Json:
    return audit.shoe_view(shoe_id)
