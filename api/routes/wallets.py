"""Wallets: open a player's wallet, cashier deposits and withdrawals, and the ledger.

Opening and moving money: cashier (and admin) keys; reading: also investigators, compliance,
and a player key for its own wallet only (never another player's balance). Every command is
idempotent (``api.idempotency``): by the ``Idempotency-Key`` header, or else by the movement's
``transaction_id`` (which the wallet also keeps: the same id with another amount is refused).
A movement's answer is the wallet its transaction commits (``wallet_render``), not a second read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Path, Response

from api.auth import acting
from api.idempotency import Idempotent, Reread
from api.openapi import problems
from api.schemas import CashierMovement, WalletOpen, WalletView
from api.wire import PlayerId
from domain.access import Action
from domain.guarded import GuardedAudit
from domain.money import money_str
from domain.wallet import Wallet

router = APIRouter(prefix="/wallets", tags=["wallets"])
Json = dict[str, Any]
Player = Annotated[PlayerId, Path(description="The player's id.")]


def wallet_view(w: Wallet) -> Json:
    return {
        "wallet_id": str(w.id),
        "player_id": w.player_id,
        "balance": money_str(w.balance),
        "currency": w.currency,
        "account_type": w.account_type,
        "movements": w.movements,
    }


def wallet_render(player_id: str) -> Any:
    """The answer from the wallet a transaction commits (``api.idempotency``)."""
    wid = Wallet.create_id(player_id)

    def render(aggregates: Mapping[UUID, Any]) -> Json | None:
        w = aggregates.get(wid)
        return wallet_view(w) if isinstance(w, Wallet) else None

    return render


def _location(body: Json) -> str:
    return f"/wallets/{body['player_id']}"


@router.post(
    "",
    status_code=201,
    summary="Open a player's wallet",
    response_model=WalletView,
    responses=problems(
        401,
        403,
        409,
        413,
        422,
        links={"GetWallet": ("get_wallet", {"player_id": "$response.body#/player_id"})},
    ),
)
def open_wallet(
    body: WalletOpen,
    audit: Annotated[GuardedAudit, acting(Action.WALLET_OPEN)],
    command: Idempotent,
) -> Response:
    return command.run(
        lambda: wallet_view(
            audit.open_wallet(
                body.player_id, account_type=body.account_type, currency=body.currency
            )
        ),
        render=wallet_render(body.player_id),
        status=201,
        location=_location,
    )


@router.post(
    "/{player_id}/deposits",
    summary="Cashier deposit",
    response_model=WalletView,
    responses=problems(401, 403, 404, 409, 413, 422),
)
def deposit(
    player_id: Player,
    body: CashierMovement,
    audit: Annotated[GuardedAudit, acting(Action.WALLET_MOVE)],
    command: Idempotent,
) -> Response:
    def run() -> Reread:
        audit.deposit(player_id, body.amount, transaction_id=body.transaction_id)
        return Reread(lambda: wallet_view(audit.moved_wallet(player_id)))

    return command.run(
        run,
        key=body.transaction_id,
        render=wallet_render(player_id),
    )


@router.post(
    "/{player_id}/withdrawals",
    summary="Cashier withdrawal",
    response_model=WalletView,
    responses=problems(401, 403, 404, 409, 413, 422),
)
def withdraw(
    player_id: Player,
    body: CashierMovement,
    audit: Annotated[GuardedAudit, acting(Action.WALLET_MOVE)],
    command: Idempotent,
) -> Response:
    def run() -> Reread:
        audit.withdraw(player_id, body.amount, transaction_id=body.transaction_id)
        return Reread(lambda: wallet_view(audit.moved_wallet(player_id)))

    return command.run(
        run,
        key=body.transaction_id,
        render=wallet_render(player_id),
    )


@router.get(
    "/{player_id}",
    summary="Balance and every movement of a wallet",
    response_model=WalletView,
    responses=problems(401, 403, 404, 422),
)
def get_wallet(
    player_id: Player, audit: Annotated[GuardedAudit, acting(Action.WALLET_READ)]
) -> Json:
    return wallet_view(audit.wallet(player_id))
