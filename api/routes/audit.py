"""Audit reads: a round's replay, verification, export and inclusion proof; the Merkle log.

The HTTP face of ``replays/`` (the same documents ``roundaudit replay --json``, ``verify``,
``export`` and ``proof`` give), for a dispute page or a regulator's tool. Every route only reads.

A ``round_id`` is a UUID or ``TABLE#NUMBER`` (:func:`replays.verify.round_id_of`); a client
must send the ``#`` as ``%23`` (``/rounds/T1%2342/replay``), or it ends the path. A malformed id
is a 422 problem (``invalid-id``, naming the field); an id the store holds no round under is a 404
(``round-not-found``), also when the id is another aggregate's (a shoe, a wallet). For the
verification, a round whose records are all gone but which the Merkle log holds is not "not
found": it is a failing verdict.

The service's :class:`~domain.application.RoundAudit` is shared by the request threads, and so
is one :class:`~replays.log.MerkleLog` per process (:func:`merkle_log`): the log only grows, so
each request brings it up to date with one query for the leaves sealed since the last (its
leaves and tree are appended under the log's lock; readers read what is there), instead of
reading every leaf again. With a verifier state (``ROUNDAUDIT_VERIFIER_STATE``,
``replays.logstate.long_lived_log``) the process's first read is only the log's new leaves
too, and a log cut back or forked since the state was saved fails every verification. The
:class:`~replays.bundle.StoreReader` a request uses is made for it and dropped after it.

The key that checks checkpoint signatures, carried by exports and published here, is the
service's setting (``api.settings``: ``ROUNDAUDIT_PUBLIC_KEY``, else the public half of
``ROUNDAUDIT_SIGNING_KEY``).

Access: replay and verification for admins, investigators and compliance; exports also for
reporting keys, of finished rounds only; proofs also for reporting; consistency proofs for any
key; the latest checkpoint and the public key for anyone (``domain.access``). A round in play
is redacted (``replays.disclosure``): no step, export line or discrepancy shows a card the
table has not turned.
"""

from __future__ import annotations

import logging
import threading
from typing import Annotated, Any
from uuid import UUID

import orjson
from eventsourcing.utils import TopicError, resolve_topic
from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import Response, StreamingResponse
from starlette.responses import JSONResponse

from api.auth import acting
from api.deps import AppSettings
from api.openapi import problems
from api.replica import AuditReader
from api.schemas import (
    CheckpointView,
    ConsistencyView,
    ProofView,
    PublicKeyView,
    ReplayView,
    VerificationView,
)
from api.wire import MAX_WIRE_NUMBER, RoundId
from domain.access import Action
from domain.application import RoundAudit
from domain.boundless.shared import SharedHand
from domain.errors import Conflict, DomainError, NotFound, RoundNotFound
from domain.guarded import GuardedAudit
from domain.ids import round_uuid
from domain.round import Round
from replays.bundle import StoreReader
from replays.disclosure import hidden_positions, redact_steps, redact_verdict
from replays.export import export_round
from replays.log import (
    DEFAULT_ORIGIN,
    LogError,
    MerkleLog,
    consistency_document,
    round_proof_document,
)
from replays.logstate import STATE_ENV, StateError, long_lived_log
from replays.merkle import key_id, public_pem, raw_public
from replays.note import operator_key
from replays.steps import iter_bundle, json_chunks
from replays.verify import StoreVerifier

router = APIRouter(prefix="/rounds", tags=["audit"])
merkle = APIRouter(prefix="/merkle", tags=["audit"])
Json = dict[str, Any]
NDJSON = "application/x-ndjson"


_LOG_LOCK = threading.Lock()
logger = logging.getLogger("roundaudit.api")


def merkle_log(request: Request, audit: AuditReader, settings: AppSettings) -> MerkleLog:
    """The process's Merkle log, made on first use (through the verifier's state when the
    settings name one: ``replays.logstate.long_lived_log``) and brought up to date for each
    request (on the read replica when there is one, once it holds the primary's head)."""
    state = request.app.state
    try:
        with _LOG_LOCK:
            log: MerkleLog | None = getattr(state, "merkle_log", None)
            if log is None:
                log = long_lived_log(audit, settings.verifier_state, settings.trust)
                state.merkle_log = log
        return log.refresh()
    except StateError as exc:
        logger.error("the verifier state is refused: %s", exc)  # names the file
        raise VerifierStateRefused.of(exc, settings.verifier_state) from None


SharedLog = Annotated[MerkleLog, Depends(merkle_log)]
RoundIdPath = Annotated[RoundId, Path(description="A UUID, or TABLE#NUMBER ('#' as %23).")]
Reader = Annotated[GuardedAudit, acting(Action.AUDIT_READ)]


# ------------------------------------------------------------------------------ problems
class VerifierStateRefused(DomainError):
    """The service's verifier state (``ROUNDAUDIT_VERIFIER_STATE``) cannot be used: of another
    log, damaged, or replaced by an older copy while the service ran. Nothing is verified
    against a state the service cannot trust, and the state is never reset by itself: the
    operator looks (the server log names the file), then gives the right file or a new one."""

    code = "verifier-state-refused"
    status = 503

    @classmethod
    def of(cls, exc: StateError, path: object) -> VerifierStateRefused:
        """The refusal of ``exc``, its reason without the server's path."""
        reason = str(exc) if path is None else str(exc).replace(str(path), "the state file")
        return cls(
            f"the service's verifier state of the log ({STATE_ENV}) is refused, so nothing is "
            f"verified against it: {reason}; the operator must give this store's state file, "
            "or a new one (the server log names the file)"
        )


class ProofUnavailable(Conflict):
    """The round has no inclusion proof yet (not sealed, or no checkpoint covers its leaf), or
    the log cannot give the proof asked for."""

    code = "proof-unavailable"


class CheckpointNotFound(NotFound):
    code = "checkpoint-not-found"


class InvalidCheckpoints(Conflict):
    """A consistency proof between checkpoint numbers the log does not have, or in the wrong
    order (the log's state decides: 409)."""

    code = "invalid-checkpoints"


class PublicKeyNotConfigured(NotFound):
    code = "public-key-not-configured"


def _problems(*statuses: int, public: bool = False) -> dict[int | str, dict[str, Any]]:
    """OpenAPI: the problem answers a route gives (RFC 9457, ``api.openapi``): a keyed route
    also answers 401 and 403."""
    return problems(*((() if public else (401, 403)) + statuses))


class _JsonDocument(JSONResponse):
    """JSON by orjson, values it does not know (a verdict's ``Decimal``, ``bytes``...) as
    ``str``: the bytes ``roundaudit verify --json`` writes for them."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS, default=str)


# ------------------------------------------------------------------------------ round ids
def parse_round_id(text: str) -> UUID:
    """The round id of a path segment, which the route's ``RoundIdPath`` already checked and
    made a UUID (``api.wire``; ``TABLE#NUMBER`` names the round's deterministic id)."""
    return round_uuid(text)


def _other_aggregate(topic: str) -> bool:
    """Whether a stored topic names an event of something other than a round (a ``Round`` or a
    boundless ``SharedHand``). A topic that resolves to nothing is not taken as proof: it may
    be a round's record whose topic was tampered with, which verification reports."""
    try:
        cls = resolve_topic(topic)
    except (TopicError, ImportError, AttributeError):
        return False
    return not (isinstance(cls, type) and issubclass(cls, Round.Event | SharedHand.Event))


def _stored_round(audit: RoundAudit, rid: UUID, text: str) -> bool:
    """Whether the store holds records under ``rid``; :class:`RoundNotFound` when what it holds
    is not a round (a shoe, a wallet, a participation)."""
    first = audit.recorder.select_events(rid, limit=1)
    if not first:
        return False
    if _other_aggregate(first[0].topic):
        raise RoundNotFound(f"{text} is not a round")
    return True


def _sealed(log: MerkleLog, rid: UUID) -> bool:
    """Whether the Merkle log knows the round (its first record is in a leaf)."""
    return log.knows_round(rid)


def _round(audit: RoundAudit, log: MerkleLog, text: str) -> UUID:
    """A round the store holds records of (replay, export), or the problem to answer."""
    rid = parse_round_id(text)
    if not _stored_round(audit, rid, text):
        if _sealed(log, rid):
            raise RoundNotFound(
                f"the store holds no event of round {text}, but the Merkle log holds its "
                "records' leaves: its verification names what is missing"
            )
        raise RoundNotFound(f"round {text} not found")
    return rid


# ------------------------------------------------------------------------------ rounds
@router.get(
    "/{round_id}/replay",
    summary="The round step by step: the table after each stored event",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "`{round_id, steps: [...], stopped}`, as `roundaudit replay --json`",
            "model": ReplayView,
        },
        **_problems(404, 422, 503),
    },
)
def replay(
    round_id: RoundIdPath, guard: Reader, audit: AuditReader, log: SharedLog
) -> StreamingResponse:
    """Every stored event of the round applied in order, each step with what the event records
    and the table after it (``replays.steps``). ``stopped`` is null when every event applied,
    else the position and reason where the replay had to stop (a damaged log). The steps are
    sent as they are replayed, so a boundless round of thousands of players is never held
    whole as JSON."""
    rid = _round(audit, log, round_id)
    guard.authorize_audit(Action.AUDIT_READ, rid)
    bundle = StoreReader(audit).round_bundle(rid)
    secrets = guard.round_secrets(rid)
    steps = iter_bundle(bundle)
    shown = redact_steps(steps, hidden_positions(bundle, secrets), secrets)
    return StreamingResponse(
        json_chunks(steps.round_id, shown, lambda: steps.stopped), media_type="application/json"
    )


@router.get(
    "/{round_id}/verification",
    summary="Verify the round: storage, re-execution, shoe, money, seal",
    response_class=_JsonDocument,
    response_model=VerificationView,
    responses=_problems(404, 422, 503),
)
def verification(
    round_id: RoundIdPath, guard: Reader, audit: AuditReader, settings: AppSettings, log: SharedLog
) -> Response:
    """The verdict of every check on the round (``replays.verify``), as ``roundaudit verify``
    gives it: ``ok``, the ``checks`` that ran, ``notes`` (what could not be checked) and the
    ``discrepancies``, each naming the position, the field, the expected and recorded values,
    the rule and the check. 200 whether the round passed or failed: the body says which."""
    rid = parse_round_id(round_id)
    # a sealed round is verified whatever its store holds now: its verdict names the damage
    if not _sealed(log, rid) and not _stored_round(audit, rid, round_id):
        raise RoundNotFound(
            f"round {round_id} not found: neither the store nor the Merkle log holds it"
        )
    guard.authorize_audit(Action.AUDIT_READ, rid)
    verdict = StoreVerifier(audit, policy=settings.trust, log=log).verify(rid)
    return _JsonDocument(redact_verdict(verdict.as_json(), guard.round_secrets(rid)))


@router.get(
    "/{round_id}/export",
    summary="The round's log as canonical JSON lines",
    response_class=Response,
    responses={
        200: {
            "description": "The export (`roundaudit-round-log` version 1), one canonical JSON "
            "object per line: header, the round's events, its shoe, its wallet movements, "
            "its seal.",
            "content": {NDJSON: {"schema": {"type": "string", "description": "JSON lines"}}},
        },
        **_problems(404, 422, 503),
    },
)
def export(
    round_id: RoundIdPath,
    guard: Annotated[GuardedAudit, acting(Action.AUDIT_EXPORT)],
    audit: AuditReader,
    settings: AppSettings,
    log: SharedLog,
) -> Response:
    """What ``roundaudit export`` writes; ``roundaudit verify --file`` (or a third party, see
    docs/verification.md) checks it without the service. A round that still hides a card
    (in play, or its shoe's later cards) is exported redacted (header ``redacted``), and such
    a file does not verify: export it again once the round has ended."""
    rid = _round(audit, log, round_id)
    guard.authorize_audit(Action.AUDIT_EXPORT, rid)
    secrets = guard.round_secrets(rid)
    data = export_round(
        audit, rid, log=log, public_key=settings.public_key, policy=settings.trust, secrets=secrets
    )
    return Response(
        data,
        media_type=NDJSON,
        headers={"Content-Disposition": f'attachment; filename="round-{rid}.jsonl"'},
    )


@router.get(
    "/{round_id}/proof",
    summary="The round's inclusion proof in a signed checkpoint (RFC 9162)",
    response_model=ProofView,
    responses=_problems(404, 409, 422, 503),
)
def proof(
    round_id: RoundIdPath,
    guard: Annotated[GuardedAudit, acting(Action.AUDIT_PROOF)],
    audit: AuditReader,
    log: SharedLog,
    checkpoint: Annotated[
        int | None,
        Query(
            ge=1,
            le=MAX_WIRE_NUMBER,
            description="In this checkpoint (default: the latest covering the round).",
        ),
    ] = None,
) -> Json:
    """The round's leaf, its index, the audit path and the checkpoint, as ``roundaudit proof``
    gives them: a third party checks it with RFC 9162 and the published key alone. 409 while
    the round is not sealed or no checkpoint covers it yet."""
    rid = parse_round_id(round_id)
    if not _sealed(log, rid) and not _stored_round(audit, rid, round_id):
        raise RoundNotFound(f"round {round_id} not found")
    guard.authorize_audit(Action.AUDIT_PROOF, rid)
    try:
        doc: Json = round_proof_document(audit, log, rid, checkpoint=checkpoint)
    except LogError as exc:
        raise ProofUnavailable(str(exc)) from None
    except (KeyError, TypeError, ValueError) as exc:  # an unreadable seal row
        raise ProofUnavailable(
            f"the Merkle log cannot prove round {rid} ({type(exc).__name__}: {exc}); its "
            "verification names what is wrong"
        ) from None
    return doc


# ------------------------------------------------------------------------------ the log
@merkle.get(
    "/checkpoints/latest",
    summary="The latest signed checkpoint (tree head) of the Merkle log",
    response_model=CheckpointView,
    responses=_problems(404, 503, public=True),
)
def latest_checkpoint(log: SharedLog) -> Json:
    cp = log.latest_checkpoint()
    if cp is None:
        raise CheckpointNotFound("the Merkle log has no checkpoint yet")
    out: Json = cp.as_json()
    return out


@merkle.get(
    "/consistency",
    summary="Consistency proof between two checkpoints (RFC 9162)",
    response_model=ConsistencyView,
    responses=_problems(409, 422, 503),
)
def consistency(
    guard: Annotated[GuardedAudit, acting(Action.LOG_READ)],
    log: SharedLog,
    first: Annotated[
        int, Query(ge=1, le=MAX_WIRE_NUMBER, description="The earlier checkpoint's number.")
    ],
    second: Annotated[
        int, Query(ge=1, le=MAX_WIRE_NUMBER, description="The later checkpoint's number.")
    ],
) -> Json:
    """Both checkpoints and the proof that the later tree extends the earlier one: no leaf was
    changed or removed between them."""
    count = log.last_checkpoint_number()  # the last row alone: checkpoints grow with time
    if not count:
        raise InvalidCheckpoints("the Merkle log has no checkpoint yet")
    if first > count or second > count:
        raise InvalidCheckpoints(f"the Merkle log has checkpoints 1..{count}")
    try:
        doc: Json = consistency_document(log, first, second)
    except LogError as exc:
        raise InvalidCheckpoints(str(exc)) from None
    except ValueError as exc:  # a checkpoint larger than the stored log: leaves were removed
        raise ProofUnavailable(f"the Merkle log cannot prove it: {exc}") from None
    return doc


@merkle.get(
    "/public-key",
    summary="The public key that checks the checkpoints",
    response_model=PublicKeyView,
    responses=_problems(404, public=True),
)
def public_key(settings: AppSettings) -> Json:
    """The Ed25519 key configured for the service: ``raw`` (64 hex digits), ``key_id`` (hex
    SHA-256 of the raw key, as checkpoints name it) and ``pem``. Compare it with the operator's
    published key before trusting it."""
    key = settings.public_key
    if key is None:
        raise PublicKeyNotConfigured(
            "no public key is configured (ROUNDAUDIT_PUBLIC_KEY or ROUNDAUDIT_SIGNING_KEY)"
        )
    origin = settings.origin or DEFAULT_ORIGIN
    return {
        "vkey": operator_key(origin, key).vkey(),
        "origin": origin,
        "raw": raw_public(key).hex(),
        "key_id": key_id(key),
        "pem": public_pem(key),
    }


__all__ = [
    "CheckpointNotFound",
    "InvalidCheckpoints",
    "ProofUnavailable",
    "PublicKeyNotConfigured",
    "merkle",
    "parse_round_id",
    "router",
]
