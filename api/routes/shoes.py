"""Shoes: open (rng, live or test), burn (SHOE-2), cut card (SHOE-1), retire, view.

A shoe is production as its table's record says (a test shoe only on a test table). Views
hide the face-down cards of rounds in play; an RNG shoe's seed shows only once it retires,
and retiring one that a round in play draws from is refused (409 ``shoe-in-use``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Response, status

from api.auth import acting
from api.schemas import Burn, CutCard, ShoeOpen
from domain.access import Action
from domain.guarded import GuardedAudit

router = APIRouter(prefix="/shoes", tags=["shoes"])
Json = dict[str, Any]


@router.post("", status_code=status.HTTP_201_CREATED, summary="Open a shoe for a table")
def open_shoe(
    body: ShoeOpen, audit: Annotated[GuardedAudit, acting(Action.SHOE_OPEN)], response: Response
) -> Json:
    view = audit.open_shoe(
        table_id=body.table_id,
        shoe_number=body.shoe_number,
        kind=body.kind,
        decks=body.decks,
        order=body.order,
        burn_procedure=body.burn_procedure,
        cut_card_at=body.cut_card_at,
    )
    response.headers["Location"] = f"/shoes/{view['shoe_id']}"
    return view


@router.post("/{shoe_id}/burn", summary="Show the first card and burn its value (SHOE-2)")
def burn(
    shoe_id: str, body: Burn, audit: Annotated[GuardedAudit, acting(Action.SHOE_OPERATE)]
) -> Json:
    return audit.burn(shoe_id, card=body.card, cards=body.cards)


@router.post("/{shoe_id}/cut-card", summary="The cut card came out (SHOE-1, live shoes)")
def cut_card(
    shoe_id: str,
    audit: Annotated[GuardedAudit, acting(Action.SHOE_OPERATE)],
    body: CutCard | None = None,
) -> Json:
    return audit.cut_card(shoe_id, round_id=body.round_id if body is not None else None)


@router.post(
    "/{shoe_id}/retire",
    summary="Retire the shoe (an rng shoe reveals its seed); 409 while a round in play uses it",
)
def retire(shoe_id: str, audit: Annotated[GuardedAudit, acting(Action.SHOE_RETIRE)]) -> Json:
    return audit.retire_shoe(shoe_id)


@router.get("/{shoe_id}", summary="The shoe and every card that left it (face-down ones hidden)")
def get_shoe(shoe_id: str, audit: Annotated[GuardedAudit, acting(Action.SHOE_READ)]) -> Json:
    return audit.shoe_view(shoe_id)
