"""Wallets: open a player's wallet, cashier deposits and withdrawals, and the ledger.

Opening and moving money: cashier (and admin) keys; reading: also investigators, compliance,
and a player key for its own wallet only (never another player's balance).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Response, status

from api.auth import acting
from api.deps import IdempotencyKey, pick_request_id
from api.errors import MissingTransactionId
from api.schemas import CashierMovement, WalletOpen
from domain.access import Action
from domain.guarded import GuardedAudit
from domain.money import money_str
from domain.wallet import Wallet

router = APIRouter(prefix="/wallets", tags=["wallets"])
Json = dict[str, Any]


def wallet_view(w: Wallet) -> Json:
    return {
        "wallet_id": str(w.id),
        "player_id": w.player_id,
        "balance": money_str(w.balance),
        "currency": w.currency,
        "account_type": w.account_type,
        "movements": w.movements,
    }


def _transaction_id(body: CashierMovement, header: str | None) -> str:
    tid = pick_request_id(body.transaction_id, header)
    if tid is None:
        raise MissingTransactionId(
            "a cashier movement needs a transaction_id (in the body or the Idempotency-Key header)"
        )
    return tid


@router.post("", status_code=status.HTTP_201_CREATED, summary="Open a player's wallet")
def open_wallet(
    body: WalletOpen,
    audit: Annotated[GuardedAudit, acting(Action.WALLET_OPEN)],
    response: Response,
) -> Json:
    w = audit.open_wallet(body.player_id, account_type=body.account_type, currency=body.currency)
    response.headers["Location"] = f"/wallets/{body.player_id}"
    return wallet_view(w)


@router.post("/{player_id}/deposits", summary="Cashier deposit")
def deposit(
    player_id: str,
    body: CashierMovement,
    audit: Annotated[GuardedAudit, acting(Action.WALLET_MOVE)],
    idempotency_key: IdempotencyKey = None,
) -> Json:
    tid = _transaction_id(body, idempotency_key)
    return wallet_view(audit.deposit(player_id, body.amount, transaction_id=tid))


@router.post("/{player_id}/withdrawals", summary="Cashier withdrawal")
def withdraw(
    player_id: str,
    body: CashierMovement,
    audit: Annotated[GuardedAudit, acting(Action.WALLET_MOVE)],
    idempotency_key: IdempotencyKey = None,
) -> Json:
    tid = _transaction_id(body, idempotency_key)
    return wallet_view(audit.withdraw(player_id, body.amount, transaction_id=tid))


@router.get("/{player_id}", summary="Balance and every movement of a wallet")
def get_wallet(player_id: str, audit: Annotated[GuardedAudit, acting(Action.WALLET_READ)]) -> Json:
    return wallet_view(audit.wallet(player_id))
