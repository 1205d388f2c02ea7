"""The web service: :func:`create_app` builds the FastAPI application.

Run it with ``uvicorn --factory api.main:get_app`` (settings from the environment, see
``api.settings``), or build one in a test with ``create_app(Settings(database_url=...))``.

The lifespan opens one :class:`~domain.application.RoundAudit` on the configured store (with
the seed key of the settings) and closes it at shutdown; an application passed in by the
caller is used as is and left open (its owner closes it). At start it refuses a seed vault the
key cannot open (``domain.vault``), records ``ROUNDAUDIT_ADMIN_KEY`` or, when asked, generates
and prints a first admin key (``domain.keys.KeyRing.ensure_admin``). The service process's
own factory (:func:`get_app`) then tunes the garbage collector (:func:`tune_collector`).

Routes reach the application through ``api.auth.acting`` (the API key's
:class:`~domain.guarded.GuardedAudit`); only the public routes (``api.auth.PUBLIC``) use
``api.deps.AuditApp`` directly. ``api.security`` checks the Host header and adds the security
headers; CORS only for ``ROUNDAUDIT_CORS_ORIGINS``. The application is ``api.front.Service``:
FastAPI's, with a front that answers the hot paths' requests (``api.hotpath``) through those
same checks without the middleware stack (``front=False``: every request through the stack).
"""

from __future__ import annotations

import gc
import logging
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

from anyio import to_thread
from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from api import errors, openapi
from api.front import Service
from api.hotpath import HotCommands, HotReads
from api.limits import BodyGate
from api.offload import CommandWorkers
from api.readside import ReadSide
from api.replica import ReplicaReadSide, open_reader
from api.responses import OrjsonResponse
from api.roundviews import RoundViews
from api.routes import (
    audit,
    batches,
    disputes,
    docs,
    health,
    keys,
    reporting,
    reports,
    rounds,
    rulebook,
    rules,
    search,
    session,
    shoes,
    tables,
    ui,
    wallets,
)
from api.security import HostAndHeaders
from api.settings import Settings, SettingsError, ensure_sqlite_folder, load_settings
from api.versions import LoopVersions, loop_versions
from domain.application import RoundAudit
from domain.persistence import environment_for

log = logging.getLogger("roundaudit.api")
STARTUP_ACTOR = {"kind": "system", "id": "startup"}

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
Every state-changing command is idempotent: send an `Idempotency-Key` header (or, without
it, the body's `request_id`/`transaction_id` is the key): a repeat answers the first answer
byte for byte; the same key with another body is 422 `idempotency-key-reused`. Ids are 1 to 64
ASCII letters, digits and `._:-` (422 `invalid-id` otherwise); bodies at most 1 MiB (batches
8 MiB; 413 beyond). Boundless rounds (any number of players on one shared hand) also take
many players' bets or decisions in one request (`/rounds/{id}/bets/batch`, `/decisions/batch`),
each item checked, and answered, on its own.

Auditors replay a round step by step, verify it (re-execution, shoe, money, seal), export its
log and fetch its inclusion proof in the Merkle log's signed checkpoints (see `audit`).
Investigators search rounds, read a player's dispute timeline and the reporting feed and
reports (see `search`, `disputes`, `reporting`); the investigation page is at `/ui/`.

**Access.** Every route except `/health`, this page, `/openapi.json`, `/merkle/public-key` and
`/merkle/checkpoints/latest` needs an API key: `Authorization: Bearer <key>` (the Authorize
button). No key, or an unknown or revoked one: 401 `unauthenticated`; a key whose role may not
do it, or not on that table or player: 403 `forbidden`, whether the resource exists or not.
Each route's role requirements are in docs/api.md (the permission table). No key reads a card
the table has not shown: the hole card until it is turned, a test shoe's order, a seed until
its shoe retires.
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
    {"name": "keys", "description": "API keys (admin): create, list, revoke."},
    {"name": "tables", "description": "Tables: production or test, and deluxe seats."},
    {
        "name": "search",
        "description": "Find rounds: by table, player, variant, state and time; a player's "
        "history; a round's players (the round index projection).",
    },
    {
        "name": "disputes",
        "description": "A player's part of a round: the dispute timeline, the round replayed "
        "as the player saw it.",
    },
    {
        "name": "reporting",
        "description": "The reporting feed, daily reports (JSON, CSV, Parquet), the "
        "projections' positions.",
    },
]


def create_app(
    settings: Settings | None = None,
    app: RoundAudit | None = None,
    *,
    tune_gc: bool = False,
    front: bool = True,
) -> FastAPI:
    """The FastAPI application on ``settings`` (default: from the environment), or on an
    already open ``app``. ``tune_gc``: once started, tune the process's garbage collector
    (:func:`tune_collector`; the service process's factory :func:`get_app` does).
    ``front``: the hot routes answered by the application's front (``api.front``); False:
    every request through FastAPI's stack (the same answers)."""
    settings = settings if settings is not None else load_settings()

    @asynccontextmanager
    async def lifespan(web: FastAPI) -> AsyncIterator[None]:
        if app is not None:
            web.state.audit = app
            prepare(app, settings)
            web.state.read_side = read_side(app, settings)
            web.state.command_workers = command_workers(settings)
            web.state.loop_versions = loop_versions(app.recorder)  # api.versions
            try:
                yield
            finally:
                await _close_loop_versions(web)
                web.state.command_workers.close()
                web.state.read_side.close()
            return
        ensure_sqlite_folder(settings.database_url)
        if settings.threads is not None:
            to_thread.current_default_thread_limiter().total_tokens = settings.threads
        env = environment_for(settings.database_url, create_table=settings.create_table)
        audit = RoundAudit(env=env, seed_key=settings.seed_key)
        try:
            prepare(audit, settings)
        except BaseException:
            audit.close()
            raise
        web.state.audit = audit
        web.state.reader = open_reader(settings)
        web.state.read_side = read_side(audit, settings)
        web.state.command_workers = command_workers(settings)
        web.state.loop_versions = loop_versions(audit.recorder)  # api.versions
        pruner = Pruner(audit, settings)
        pruner.start()
        if tune_gc:
            tune_collector()
        try:
            yield
        finally:
            pruner.stop()
            await _close_loop_versions(web)
            web.state.command_workers.close()
            web.state.read_side.close()
            if web.state.reader is not None:
                web.state.reader.close()
            audit.close()

    web = Service(  # FastAPI with the hot routes' front (api.front)
        title="roundaudit",
        summary="Event-sourced audit of casino blackjack rounds",
        description=DESCRIPTION,
        version="0.1.0",
        openapi_tags=TAGS,
        default_response_class=OrjsonResponse,
        lifespan=lifespan,
        docs_url=None,  # api.routes.docs serves its own page, assets included
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
        generate_unique_id_function=lambda route: route.name,  # operation ids: route names
    )
    web.front_on = front
    web.state.settings = settings
    web.state.round_views = RoundViews()  # GET /rounds/{id} (api.roundviews)
    errors.install(web)
    web.add_middleware(HotReads, web=web)  # GET /rounds/{id}'s own path (api.hotpath)
    web.add_middleware(HotCommands, web=web)  # the single commands' own path (api.hotpath)
    if settings.cors_origins:
        web.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "Idempotency-Key"],
            allow_credentials=False,
            max_age=600,
        )
    web.add_middleware(BodyGate, routes=lambda: web.routes)  # sizes, exact JSON (api.limits)
    web.add_middleware(HostAndHeaders, allowed_hosts=settings.allowed_hosts)
    for router in (
        keys.router,
        session.router,
        wallets.router,
        tables.router,
        shoes.router,
        rounds.router,
        batches.router,
        audit.router,
        audit.merkle,
        rulebook.router,
        rules.router,
        reports.router,
        search.router,
        disputes.router,
        reporting.router,
        health.router,
        docs.router,
        ui.router,
    ):
        web.include_router(router)
    openapi.install(web)
    return web


def read_side(audit: RoundAudit, settings: Settings) -> ReadSide:
    """The read side of the service (``api.readside``) on the application's store, or on the
    read replica's projection tables (``api.replica``)."""
    if settings.read_database_url:
        env = environment_for(settings.read_database_url, create_table=False)
        return ReplicaReadSide(audit, env, wait=settings.read_wait)
    return ReadSide(
        audit,
        environment_for(settings.database_url),
        wait=settings.read_wait,
        drive=settings.read_drive,
    )


async def _close_loop_versions(web: FastAPI) -> None:
    """Close the reads of versions on the event loop (``api.versions.LoopVersions``)."""
    found: LoopVersions | None = web.state.loop_versions
    if found is not None:
        await found.aclose()


def command_workers(settings: Settings) -> CommandWorkers:
    """The single commands' thread pool (``api.offload``): as many threads as the routes'
    (``ROUNDAUDIT_THREADS``, else AnyIO's default limit)."""
    threads = settings.threads
    if threads is None:
        threads = int(to_thread.current_default_thread_limiter().total_tokens)
    return CommandWorkers(threads)


def prepare(audit: RoundAudit, settings: Settings) -> None:
    """What the service checks and does before it answers: the seed vault opens with the
    configured key (plaintext seeds and unknown keys stop it), and an admin key exists
    (``ROUNDAUDIT_ADMIN_KEY``, or one generated and printed once)."""
    problems = audit.vault.problems()
    if problems:
        raise SettingsError("; ".join(problems))
    token = audit.keys.ensure_admin(
        settings.admin_key, generate=settings.generate_admin_key, actor=STARTUP_ACTOR
    )
    if token is not None:
        announce_admin_key(token)


def announce_admin_key(token: str) -> None:
    """Show a generated admin key once (stderr), with what to do with it."""
    line = "=" * 78
    print(
        f"\n{line}\n roundaudit: no admin API key was set (ROUNDAUDIT_ADMIN_KEY), so one was "
        f"generated.\n It is shown this once and stored only as a hash:\n\n    {token}\n\n"
        " Use it in /docs (Authorize) or as `Authorization: Bearer <key>`; create other keys\n"
        " with POST /api-keys or `roundaudit keys create`.\n"
        f"{line}\n",
        file=sys.stderr,
        flush=True,
    )
    log.warning("generated a first admin API key (printed once on stderr)")


class Pruner:
    """The worker that deletes idempotency records older than the window (every
    ``idempotency_prune_every`` seconds; never one younger than the window)."""

    def __init__(self, audit: RoundAudit, settings: Settings) -> None:
        self.audit, self.settings = audit, settings
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.settings.idempotency_prune_every > 0:
            self._thread = threading.Thread(target=self._run, name="idempotency-prune", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                gone = self.audit.idempotency.prune(window=self.settings.idempotency_window)
                if gone:
                    log.info("pruned %d idempotency records", gone)
            except Exception:
                log.exception("pruning idempotency records failed; trying again later")
            self._stop.wait(self.settings.idempotency_prune_every)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


#: The collector's thresholds in a service process (gen0 raised from Python's 700; gen1 and
#: gen2 as Python's): see :func:`tune_collector`.
SERVICE_GC_THRESHOLDS: Final = (10_000, 10, 10)


def tune_collector() -> None:
    """Collect, freeze what is alive after start-up, and raise the youngest generation's
    threshold (:data:`SERVICE_GC_THRESHOLDS`): what the service process does once started.

    Measured under the HTTP benchmark's deposits (SQLite, the collector's own callbacks timing
    each pass): 4,000 deposits made about 650 young, 60 middle and 5 full collections, the
    full ones 40-75 ms each, every request of the process paused meanwhile (the latency's
    tail). Objects alive after start-up (modules, FastAPI's routes and models, the
    application) live as long as the process: frozen (``gc.freeze``), no collection walks them
    again. A request's objects mostly die by reference counting, so the young generation
    rarely reaches 10,000 net allocations: 3 young collections and no full one in the same
    4,000 deposits. Objects made later are collected as before; a frozen object that became
    garbage would only never be freed (start-up makes little after the collection that
    precedes the freeze)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVICE_GC_THRESHOLDS)


def get_app() -> FastAPI:
    """Factory for ``uvicorn --factory api.main:get_app``: settings from the environment, the
    collector tuned (:func:`tune_collector`)."""
    return create_app(tune_gc=True)


__all__ = ["SERVICE_GC_THRESHOLDS", "create_app", "get_app", "tune_collector"]
