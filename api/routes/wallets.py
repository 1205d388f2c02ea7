"""Wallets: open a player's wallet, cashier deposits and withdrawals, and the ledger."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response, status

from api.deps import AuditApp, IdempotencyKey, pick_request_id
from api.errors import MissingTransactionId
from api.schemas import CashierMovement, WalletOpen
from domain.application import RoundAudit
from domain.money import money_str

router = APIRouter(prefix="/wallets", tags=["wallets"])
Json = dict[str, Any]


def wallet_view(audit: RoundAudit, player_id: str) -> Json:
    w = audit.wallet(player_id)
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
def open_wallet(body: WalletOpen, audit: AuditApp, response: Response) -> Json:
    audit.open_wallet(body.player_id, account_type=body.account_type, currency=body.currency)
    response.headers["Location"] = f"/wallets/{body.player_id}"
    return wallet_view(audit, body.player_id)


@router.post("/{player_id}/deposits", summary="Cashier deposit")
def deposit(
    player_id: str, body: CashierMovement, audit: AuditApp, idempotency_key: IdempotencyKey = None
) -> Json:
    audit.deposit(player_id, body.amount, transaction_id=_transaction_id(body, idempotency_key))
    return wallet_view(audit, player_id)


@router.post("/{player_id}/withdrawals", summary="Cashier withdrawal")
def withdraw(
    player_id: str, body: CashierMovement, audit: AuditApp, idempotency_key: IdempotencyKey = None
) -> Json:
    audit.withdraw(player_id, body.amount, transaction_id=_transaction_id(body, idempotency_key))
    return wallet_view(audit, player_id)


@router.get("/{player_id}", summary="Balance and every movement of a wallet")
def get_wallet(player_id: str, audit: AuditApp) -> Json:
    return wallet_view(audit, player_id)
