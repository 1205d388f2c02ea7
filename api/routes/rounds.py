"""Rounds: start, bets, the live card reader, decisions, timers, supervisor actions, views.

Every command answers with the round's view after it (``Round.view()``, the hole card hidden
until it is turned), the cards an RNG or test shoe owed the round already dealt. Commands that
carry a request id (bets, close betting, cards, decisions) take it in the body or the
``Idempotency-Key`` header; a repeat records nothing and answers with the current view.

Who may send what is the permission table (docs/api.md): the table's feed relays bets,
decisions, cards, timers and disconnections of its own tables; a player key bets and decides
as its own player only; supervisors pause, resume and cancel on their tables. The actor every
event records comes from the key (``domain.guarded``).
"""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Response, status

from api.auth import acting
from api.deps import IdempotencyKey, pick_request_id
from api.schemas import (
    BetPlace,
    CardDeal,
    CloseBetting,
    DecisionMake,
    Disconnection,
    Preselection,
    RoundStart,
    Supervision,
    TimeOut,
)
from domain.access import Action
from domain.guarded import GuardedAudit

router = APIRouter(prefix="/rounds", tags=["rounds"])
Json = dict[str, Any]


@router.post("", status_code=status.HTTP_201_CREATED, summary="Start a round")
def start_round(
    body: RoundStart, audit: Annotated[GuardedAudit, acting(Action.ROUND_START)], response: Response
) -> Json:
    view = audit.start_round(
        table_id=body.table_id,
        round_number=body.round_number,
        variant=body.variant,
        shoe_id=body.shoe_id,
        shoe_round=body.shoe_round,
        test_order=body.test_order,
    )
    response.headers["Location"] = f"/rounds/{view['round_id']}"
    return view


@router.post("/{round_id}/bets", summary="Place a bet (main or side) during betting")
def place_bet(
    round_id: str,
    body: BetPlace,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_BET)],
    idempotency_key: IdempotencyKey = None,
) -> Json:
    return audit.place_bet(
        round_id,
        player=body.player,
        kind=body.kind,
        amount=body.amount,
        spot=body.spot,
        follow_double=body.follow_double,
        follow_split=body.follow_split,
        request_id=pick_request_id(body.request_id, idempotency_key),
        client_time=body.client_time,
    )


@router.post("/{round_id}/close-betting", summary="End the betting countdown; deal")
def close_betting(
    round_id: str,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_DEAL)],
    body: CloseBetting | None = None,
    idempotency_key: IdempotencyKey = None,
) -> Json:
    body_id = body.request_id if body is not None else None
    return audit.close_betting(round_id, request_id=pick_request_id(body_id, idempotency_key))


@router.post("/{round_id}/cards", summary="A card from the live shoe's reader")
def deal_card(
    round_id: str,
    body: CardDeal,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_DEAL)],
    idempotency_key: IdempotencyKey = None,
) -> Json:
    return audit.deal_card(
        round_id,
        body.card,
        request_id=pick_request_id(body.request_id, idempotency_key),
        client_time=body.client_time,
    )


@router.post("/{round_id}/decisions", summary="A player's decision on a hand")
def decide(
    round_id: str,
    body: DecisionMake,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_DECIDE)],
    idempotency_key: IdempotencyKey = None,
) -> Json:
    return audit.decide(
        round_id,
        player=body.player,
        action=body.action,
        hand=body.hand,
        amount=body.amount,
        request_id=pick_request_id(body.request_id, idempotency_key),
        client_time=body.client_time,
    )


@router.post("/{round_id}/timeouts", summary="A decision timer expired (AUTO-1)")
def time_out(
    round_id: str, body: TimeOut, audit: Annotated[GuardedAudit, acting(Action.ROUND_TIMER)]
) -> Json:
    return audit.time_out(round_id, player=body.player, hand=body.hand)


@router.post("/{round_id}/disconnections", summary="A player disconnected (DISC-1)")
def disconnect(
    round_id: str, body: Disconnection, audit: Annotated[GuardedAudit, acting(Action.ROUND_TIMER)]
) -> Json:
    return audit.disconnect(round_id, player=body.player)


@router.post("/{round_id}/insurance-window/close", summary="The insurance timer ran out")
def close_insurance_window(
    round_id: str, audit: Annotated[GuardedAudit, acting(Action.ROUND_TIMER)]
) -> Json:
    return audit.close_insurance_window(round_id)


@router.post("/{round_id}/pause", summary="Supervisor: pause the round (ERR-1)")
def pause(
    round_id: str,
    body: Supervision,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_SUPERVISE)],
) -> Json:
    return audit.pause(round_id, reason=body.reason, supervisor=body.supervisor)


@router.post("/{round_id}/resume", summary="Supervisor: resume the round as it was (ERR-1)")
def resume(
    round_id: str,
    body: Supervision,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_SUPERVISE)],
) -> Json:
    return audit.resume(round_id, reason=body.reason, supervisor=body.supervisor)


@router.post("/{round_id}/cancel", summary="Supervisor: cancel and refund every stake (ERR-1)")
def cancel(
    round_id: str,
    body: Supervision,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_SUPERVISE)],
) -> Json:
    return audit.cancel(round_id, reason=body.reason, supervisor=body.supervisor)


@router.get("/{round_id}", summary="The round now (the hole card hidden until it is turned)")
def get_round(round_id: str, audit: Annotated[GuardedAudit, acting(Action.ROUND_READ)]) -> Json:
    return audit.round_view(round_id)


@router.get(
    "/{round_id}/events",
    summary="The round's stored events, in order (cards the table has not shown hidden)",
)
def round_events(
    round_id: str, audit: Annotated[GuardedAudit, acting(Action.ROUND_EVENTS)]
) -> Json:
    events = audit.round_events(round_id)  # RoundNotFound (or forbidden) for a bad id
    return {"round_id": str(UUID(round_id)), "events": events}


@router.post(
    "/{round_id}/preselections",
    summary="Choose or change a decision before the hand's turn (deluxe, PRE-1)",
)
def preselect(
    round_id: str,
    body: Preselection,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_DECIDE)],
    idempotency_key: IdempotencyKey = None,
) -> Json:
    return audit.preselect(
        round_id,
        player=body.player,
        action=body.action,
        hand=body.hand,
        request_id=pick_request_id(body.request_id, idempotency_key),
        client_time=body.client_time,
    )
