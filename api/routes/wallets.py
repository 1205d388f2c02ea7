"""Wallets: open a player's wallet, cashier deposits and withdrawals, and the ledger.

Opening and moving money: cashier (and admin) keys; reading: also investigators, compliance,
and a player key for its own wallet only (never another player's balance). Every command is
idempotent (``api.idempotency``): by the ``Idempotency-Key`` header, or else by the movement's
``transaction_id`` (which the wallet also keeps: the same id with another amount is refused).
A movement's answer is the wallet its transaction commits (``wallet_render``), not a second read.

A wallet's view shows its balance, how many movements it holds and the latest
:data:`VIEW_MOVEMENTS` of them, never its whole history: a command's answer (rendered, kept in
its idempotency record and sent) costs the same on a wallet of ten movements or a million. The
whole ledger is read a page at a time (``GET /wallets/{player_id}/movements``). A command
answers the same view's bytes made from each movement's JSON rendered once per process
(``wallet_answer``), not from 50 copies rendered again for every answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any
from uuid import UUID

import orjson
from fastapi import APIRouter, Path, Query, Response

from api.auth import acting
from api.idempotency import Idempotent, Reread
from api.openapi import problems
from api.schemas import CashierMovement, WalletMovements, WalletOpen, WalletView
from api.wire import PlayerId
from domain.access import Action
from domain.guarded import GuardedAudit
from domain.money import money_str
from domain.wallet import Wallet

router = APIRouter(prefix="/wallets", tags=["wallets"])
Json = dict[str, Any]
Player = Annotated[PlayerId, Path(description="The player's id.")]


#: The latest movements a wallet's view shows (every command's answer, ``GET /wallets/{id}``).
VIEW_MOVEMENTS = 50
#: Movements a page of ``GET /wallets/{player_id}/movements`` holds at most, and by default.
MAX_MOVEMENTS_PAGE = 500
DEFAULT_MOVEMENTS_PAGE = 100
#: The largest offset a page may ask for (a wallet holds at most a few million movements).
MAX_MOVEMENT_OFFSET = 10**9


def _wallet_head(w: Wallet) -> Json:
    return {
        "wallet_id": str(w.id),
        "player_id": w.player_id,
        "balance": money_str(w.balance),
        "currency": w.currency,
        "account_type": w.account_type,
        "movement_count": w.movement_count,
    }


def wallet_view(w: Wallet) -> Json:
    """A wallet's view: its balance, how many movements it holds and the latest
    :data:`VIEW_MOVEMENTS` of them (copies)."""
    view = _wallet_head(w)
    view["movements"] = w.recent_movements(VIEW_MOVEMENTS)
    return view


def wallet_answer(w: Wallet) -> Json:
    """:func:`wallet_view` as a command answers it (``orjson``, ``api.idempotency``): the
    same JSON bytes, its movements spliced in as the array each movement's bytes make, every
    movement rendered once per process (``Wallet.recent_movements_json``) rather than copied
    and rendered again for every answer. Only for an answer that ``orjson`` renders."""
    view = _wallet_head(w)
    view["movements"] = orjson.Fragment(w.recent_movements_json(VIEW_MOVEMENTS))
    return view


def wallet_render(player_id: str) -> Any:
    """The answer from the wallet a transaction commits (``api.idempotency``)."""
    wid = Wallet.create_id(player_id)

    def render(aggregates: Mapping[UUID, Any]) -> Json | None:
        w = aggregates.get(wid)
        return wallet_answer(w) if isinstance(w, Wallet) else None

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
        lambda: wallet_answer(
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
        return Reread(lambda: wallet_answer(audit.moved_wallet(player_id)))

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
        return Reread(lambda: wallet_answer(audit.moved_wallet(player_id)))

    return command.run(
        run,
        key=body.transaction_id,
        render=wallet_render(player_id),
    )


@router.get(
    "/{player_id}",
    summary="Balance and latest movements of a wallet",
    response_model=WalletView,
    responses=problems(401, 403, 404, 422),
)
def get_wallet(
    player_id: Player, audit: Annotated[GuardedAudit, acting(Action.WALLET_READ)]
) -> Json:
    return wallet_view(audit.wallet(player_id))


@router.get(
    "/{player_id}/movements",
    summary="A page of a wallet's movements, in recorded order",
    response_model=WalletMovements,
    responses=problems(401, 403, 404, 422),
)
def get_wallet_movements(
    player_id: Player,
    audit: Annotated[GuardedAudit, acting(Action.WALLET_READ)],
    offset: Annotated[
        int, Query(ge=0, le=MAX_MOVEMENT_OFFSET, description="Position of the first (0: first).")
    ] = 0,
    limit: Annotated[
        int, Query(ge=1, le=MAX_MOVEMENTS_PAGE, description="Movements per page (1-500).")
    ] = DEFAULT_MOVEMENTS_PAGE,
) -> Json:
    w = audit.wallet(player_id)
    page = w.movements_window(offset, limit)
    end = offset + len(page)
    more = len(page) == limit and end < w.movement_count
    return {
        "player_id": w.player_id,
        "movement_count": w.movement_count,
        "offset": offset,
        "movements": page,
        "next": f"/wallets/{w.player_id}/movements?offset={end}&limit={limit}" if more else None,
    }
