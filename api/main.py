"""The web service: :func:`create_app` builds the FastAPI application.

Run it with ``uvicorn --factory api.main:get_app`` (settings from the environment, see
``api.settings``), or build one in a test with ``create_app(Settings(database_url=...))``.

The lifespan opens one :class:`~domain.application.RoundAudit` on the configured store and
closes it at shutdown; an application passed in by the caller is used as is and left open
(its owner closes it). Routes reach it through ``api.deps.AuditApp``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from api import errors
from api.responses import OrjsonResponse
from api.routes import audit, batches, health, reports, rounds, rules, shoes, tables, wallets
from api.settings import Settings, ensure_sqlite_folder, load_settings
from domain.application import RoundAudit
from domain.persistence import environment_for

DESCRIPTION = """\
An event-sourced audit service for casino blackjack rounds.

The table feed and the game server send **commands** (wallets, shoes, round starts, bets, cards
from the live shoe's reader, player decisions, timers, supervisor actions). Each command is
checked against the published rules of the round's variant (see `/rules`) and recorded as
append-only events: the inputs, and the consequences the rules derive from them, each naming
the rule ID (RULES.md) that produced it. Investigators read a round's view and its full event
history (`/rounds/{id}/events`).

Money is exact decimal (strings or integers; JSON floats are refused, MONEY-1). A refused
command records nothing and answers with an RFC 9457 problem document
(`application/problem+json`) whose `code` is stable and whose `rule` cites the rule applied.
Commands that carry a request id are idempotent: send `request_id` in the body or an
`Idempotency-Key` header. Boundless rounds (any number of players on one shared hand) also take
many players' bets or decisions in one request (`/rounds/{id}/bets/batch`, `/decisions/batch`),
each item checked, and answered, on its own.

Auditors replay a round step by step, verify it (re-execution, shoe, money, seal), export its
log and fetch its inclusion proof in the Merkle log's signed checkpoints (see `audit`).
"""

TAGS = [
    {"name": "wallets", "description": "Player wallets and cashier movements."},
    {"name": "shoes", "description": "Where cards come from (SHOE-1..3, D3)."},
    {"name": "rounds", "description": "Rounds: bets, cards, decisions, supervisor actions."},
    {"name": "rules", "description": "Published, versioned rule sets and their exact RTP."},
    {"name": "reports", "description": "Observed RTP against the theory."},
    {
        "name": "audit",
        "description": "Replay, verification, export and inclusion proof of a round; the Merkle "
        "log's checkpoints, consistency proofs and public key. Read only.",
    },
    {"name": "health", "description": "Service and store health."},
]


def create_app(settings: Settings | None = None, app: RoundAudit | None = None) -> FastAPI:
    """The FastAPI application on ``settings`` (default: from the environment), or on an
    already open ``app``."""
    settings = settings if settings is not None else load_settings()

    @asynccontextmanager
    async def lifespan(web: FastAPI) -> AsyncIterator[None]:
        if app is not None:
            web.state.audit = app
            yield
            return
        ensure_sqlite_folder(settings.database_url)
        audit = RoundAudit(env=environment_for(settings.database_url))
        web.state.audit = audit
        try:
            yield
        finally:
            audit.close()

    web = FastAPI(
        title="roundaudit",
        summary="Event-sourced audit of casino blackjack rounds",
        description=DESCRIPTION,
        version="0.1.0",
        openapi_tags=TAGS,
        default_response_class=OrjsonResponse,
        lifespan=lifespan,
    )
    web.state.settings = settings
    errors.install(web)
    for router in (
        wallets.router,
        tables.router,
        shoes.router,
        rounds.router,
        batches.router,
        audit.router,
        audit.merkle,
        rules.router,
        reports.router,
        health.router,
    ):
        web.include_router(router)
    return web


def get_app() -> FastAPI:
    """Factory for ``uvicorn --factory api.main:get_app``: settings from the environment."""
    return create_app()


__all__ = ["create_app", "get_app"]
