"""Shoes: open (rng, live or test), burn (SHOE-2), cut card (SHOE-1), retire, view."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response, status

from api.deps import AuditApp
from api.schemas import Burn, CutCard, ShoeOpen

router = APIRouter(prefix="/shoes", tags=["shoes"])
Json = dict[str, Any]


@router.post("", status_code=status.HTTP_201_CREATED, summary="Open a shoe for a table")
def open_shoe(body: ShoeOpen, audit: AuditApp, response: Response) -> Json:
    shoe_id = audit.open_shoe(
        table_id=body.table_id,
        shoe_number=body.shoe_number,
        kind=body.kind,
        decks=body.decks,
        production=body.production,
        order=body.order,
        burn_procedure=body.burn_procedure,
        cut_card_at=body.cut_card_at,
    )
    response.headers["Location"] = f"/shoes/{shoe_id}"
    return audit.shoe_view(audit.shoe(shoe_id))


@router.post("/{shoe_id}/burn", summary="Show the first card and burn its value (SHOE-2)")
def burn(shoe_id: str, body: Burn, audit: AuditApp) -> Json:
    result = audit.burn(shoe_id, card=body.card, cards=body.cards)
    return {**result, "shoe": audit.shoe_view(audit.shoe(shoe_id))}


@router.post("/{shoe_id}/cut-card", summary="The cut card came out (SHOE-1, live shoes)")
def cut_card(shoe_id: str, audit: AuditApp, body: CutCard | None = None) -> Json:
    audit.cut_card_out(shoe_id, round_id=body.round_id if body is not None else None)
    return audit.shoe_view(audit.shoe(shoe_id))


@router.post("/{shoe_id}/retire", summary="Retire the shoe (an rng shoe reveals its seed)")
def retire(shoe_id: str, audit: AuditApp) -> Json:
    return audit.retire_shoe(shoe_id)


@router.get("/{shoe_id}", summary="The shoe and every card that left it")
def get_shoe(shoe_id: str, audit: AuditApp) -> Json:
    return audit.shoe_view(audit.shoe(shoe_id))
