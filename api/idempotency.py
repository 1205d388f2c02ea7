"""Idempotency over HTTP: the ``Idempotency-Key`` header (IETF httpapi draft), as payment APIs
do it.

Every state-changing route takes an idempotency key: the ``Idempotency-Key`` header (an id of
the grammar, ``domain.ids``; the draft's quoted form ``"..."`` is accepted too) or, without it,
the body's ``request_id`` (``transaction_id`` for cashier movements). A route runs its command
through :meth:`Command.run`::

    def place_bet(round_id: ..., body: BetPlace, audit: ..., command: Idempotent) -> Response:
        return command.run(
            lambda: audit.place_bet(round_id, ..., request_id=command.request_id(body.request_id)),
            key=body.request_id,
            render=round_render(round_id),
        )

and gets, for that key:

* **Scope**: the sender's API key (``principal.key_id``): two keys never share records.
* **Fingerprint**: SHA-256 of the method, the path, the query and the canonical body (keys
  sorted; ``api.limits``). The same key with another fingerprint is **422**
  ``idempotency-key-reused``; nothing is recorded.
* **Same transaction**: the record (fingerprint, status, headers and body bytes) is written
  with the command's events (``domain.idempotency``): ``render`` turns the aggregates that
  transaction commits into the answer. A repeat answers **exactly** those bytes, whatever
  happened since (the round settled, was cancelled), with ``Idempotent-Replayed: true``.
* **Refusals**: a command the domain refuses (a 4xx problem: 404, 409, 422) recorded nothing;
  its problem is stored as the key's answer all the same (as Stripe does) and replayed: the
  key means that refusal from then on. Not stored, so a retry runs again: malformed requests
  (validation, ``invalid-id``, ``413``: they never ran), 401/403, ``concurrent-update``,
  ``request-in-progress`` and every 5xx.
* **In progress**: a repeat that arrives while the first runs (in this process, or one whose
  claim is in the store) waits up to ``idempotency_wait`` seconds for its answer, then gets
  **409** ``request-in-progress`` (``Retry-After: 1``). Two processes running the same key at
  once: one transaction wins on the record's primary key, the other's command is rolled back
  whole and it answers the winner's record.
* **Later answers**: a boundless round's command commits a claim with its input and its
  answer after the automatic work; a claim older than ``idempotency_lease`` without an answer
  (its process died) is answered by the route's ``recover``, once, for good.

Retention: ``idempotency_window`` (7 days), pruned by the service and ``roundaudit idempotency
prune``. Responses that hold a secret (``secret=True``: the token of ``POST /api-keys``) are
stored sealed under the sender's own API key secret.
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Final, TypeVar
from urllib.parse import parse_qsl, urlencode
from uuid import UUID

import orjson
from fastapi import Depends, Header, Request
from fastapi.responses import Response
from pydantic import PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError
from starlette._utils import parse_host_header

from api.deps import state_value
from api.errors import PROBLEM_MEDIA_TYPE, problem
from api.wire import ID_ERROR
from domain.access import Forbidden, Unauthenticated
from domain.application import ConcurrentUpdate
from domain.errors import DomainError
from domain.idempotency import (
    CURRENT,
    Answer,
    IdempotencyStore,
    PendingCommand,
    Record,
    RecordedElsewhere,
    now_text,
    record_id,
    sealer,
)
from domain.ids import MAX_ID_LENGTH, is_id
from domain.store import read_ahead

T = TypeVar("T")
Json = dict[str, Any]
HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
KEY_PATTERN = rf'^([A-Za-z0-9._:-]{{1,{MAX_ID_LENGTH}}}|"[A-Za-z0-9._:-]{{1,{MAX_ID_LENGTH}}}")$'
JSON_MEDIA_TYPE = "application/json"
#: Answer headers kept with a record (and given again on a replay).
KEPT_HEADERS = ("content-type", "location", "www-authenticate", "retry-after")


class IdempotencyKeyReused(DomainError):
    """The key was used by this API key for another request (another method, path or body)."""

    code = "idempotency-key-reused"
    status = 422


class RequestInProgress(DomainError):
    """The first request with this key is still running."""

    code = "request-in-progress"
    status = 409


def _key(value: object) -> str:
    if not isinstance(value, str):
        raise PydanticCustomError(ID_ERROR, "an idempotency key is a string")
    text = value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value
    if not is_id(text):
        raise PydanticCustomError(
            ID_ERROR,
            f"an idempotency key is 1 to {MAX_ID_LENGTH} ASCII letters, digits and . _ : - "
            "(optionally in double quotes, the draft's sf-string)",
        )
    return text


KeyHeader = Annotated[
    str | None,
    PlainValidator(lambda v: None if v is None else _key(v)),
    WithJsonSchema({"type": "string", "pattern": KEY_PATTERN}),
    Header(
        alias=HEADER,
        description="The command's idempotency key, unique per command of your API key for "
        "the retention window (a UUID, say). A repeat with the same key and body gets the "
        "original answer; another body with the same key is 422 idempotency-key-reused. "
        "Without it, the body's request_id (transaction_id) is the key.",
    ),
]


class _InFlight:
    """Keys being run by this process now (a repeat waits for the first). A key's event is
    made by the first repeat that waits for it (None until then: most commands have no
    repeat while they run, and an event is a condition and two locks)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: dict[UUID, threading.Event | None] = {}

    def enter(self, rid: UUID) -> threading.Event | None:
        """None: ``rid`` is this caller's to run (until :meth:`leave`); else the event set
        when the one running it leaves."""
        with self.lock:
            if rid not in self.running:
                self.running[rid] = None
                return None
            event = self.running[rid]
            if event is None:
                event = self.running[rid] = threading.Event()
            return event

    def leave(self, rid: UUID) -> None:
        with self.lock:
            event = self.running.pop(rid, None)
        if event is not None:
            event.set()


def _inflight(request: Request) -> _InFlight:
    state = request.app.state
    found: _InFlight | None = state_value(state, "idempotency_inflight", None)
    if found is None:
        found = _InFlight()
        state.idempotency_inflight = found
    return found


def fingerprint(method: str, path: str, query: str, body: bytes) -> str:
    """SHA-256 (hex) of the method, path, sorted query and canonical body (an empty query is
    its own canonical form: ``parse_qsl`` finds nothing in it, ``urlencode`` of nothing is
    empty)."""
    q = urlencode(sorted(parse_qsl(query, keep_blank_values=True))) if query else ""
    parts = (method.upper().encode(), path.encode(), q.encode(), body)
    # each part's length (8 bytes, big-endian) then the part, hashed as one text: the digest
    # of the same bytes fed to the hash one by one
    return hashlib.sha256(b"".join(len(p).to_bytes(8, "big") + p for p in parts)).hexdigest()


#: A path that ``request.url.path`` gives back as it is (:func:`request_target`): a ``/``, not
#: two, then only characters that Starlette's ``URL`` does not escape (``?``, ``#``, ``\\``)
#: and ``urllib.parse.urlsplit`` neither removes (tab, CR, LF) nor splits at.
_PLAIN_PATH: Final = re.compile(
    r"/(?:[A-Za-z0-9._~!$&'()*+,;=:@%-][A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?", re.ASCII
)


@functools.lru_cache(maxsize=64)
def _plain_host(value: bytes) -> bool:
    """Whether a ``Host`` header is the authority Starlette's ``URL`` puts in the URL it
    builds (``parse_host_header``: a registered name or a checked IP literal, and a valid
    port), so none of ``/?#`` that ``urlsplit`` splits at."""
    parsed = parse_host_header(value.decode("latin-1"))
    return parsed is not None and parsed.is_valid_port


def request_target(request: Request) -> tuple[str, str]:
    """The path and query of ``request`` exactly as ``request.url.path`` and
    ``request.url.query`` give them (the request's fingerprint and its record's path are made
    of them, so a key recorded before still matches). Starlette builds ``request.url`` from
    the scope (the ``Host`` header's authority, the path with ``?#\\`` escaped, the query)
    and splits that URL again (``urlsplit``): 5 us more a command. For an ``http``(s)
    request without a query whose path is plain (:data:`_PLAIN_PATH`) and whose first ``Host``
    header is the URL's authority (:func:`_plain_host`), that URL splits back into the very
    path and an empty query: those are answered from the scope; any other request by
    ``request.url`` itself."""
    scope = request.scope
    path: str = scope["path"]
    if (
        not scope.get("query_string")
        and scope.get("scheme", "http") in ("http", "https")
        and _PLAIN_PATH.fullmatch(path) is not None
    ):
        for name, value in scope["headers"]:
            if name == b"host":
                if _plain_host(value):
                    return path, ""
                break
    url = request.url
    return url.path, url.query


def _storable(error: DomainError) -> bool:
    """Whether a refusal is the key's answer for good (see the module docstring)."""
    if isinstance(error, Unauthenticated | Forbidden | ConcurrentUpdate | RequestInProgress):
        return False
    return error.status < 500


class Reread:
    """An action's answer that costs a read again, made only if it is needed: when the command's
    transaction rendered no answer from what it committed (it recorded nothing, say, or runs
    without a key). A route whose ``render`` gives the answer returns one of these from its
    action instead of reading the aggregate again after the command."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


def _value(result: Any) -> Any:
    return result.make() if isinstance(result, Reread) else result


class Command:
    """The dependency of a state-changing route (see the module docstring)."""

    def __init__(self, request: Request, idempotency_key: KeyHeader = None) -> None:
        self.request = request
        self.header = idempotency_key

    def request_id(self, body_value: str | None) -> str | None:
        """The request id the command records: the body's, or else the header's key."""
        return body_value if body_value is not None else self.header

    # ------------------------------------------------------------------ answers
    def _answer(self, body: Any, status: int, location: Callable[[Any], str] | None) -> Answer:
        headers: list[tuple[str, str]] = [("content-type", JSON_MEDIA_TYPE)]
        if location is not None:
            headers.append(("location", location(body)))
        return Answer(status, orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS), tuple(headers))

    def _problem(self, error: DomainError) -> Answer:
        response = problem(
            self.request,
            status=error.status,
            code=error.code,
            detail=error.message,
            rule=error.rule,
            **error.extensions(),
        )
        return Answer(error.status, bytes(response.body), (("content-type", PROBLEM_MEDIA_TYPE),))

    @staticmethod
    def response(answer: Answer, *, replayed: bool = False) -> Response:
        headers = {k: v for k, v in answer.headers if k != "content-type"}
        if replayed:
            headers[REPLAYED] = "true"
        media = dict(answer.headers).get("content-type", JSON_MEDIA_TYPE)
        return Response(answer.body, status_code=answer.status, headers=headers, media_type=media)

    # ------------------------------------------------------------------ the command
    def run(self, action: Callable[[], Any], **options: Any) -> Response:
        """Run ``action`` once per idempotency key (:meth:`_run`), in the scope in which the
        store may read the log's tail for the command's catch-up with its idempotency record,
        in one round trip (``domain.store.read_ahead``)."""
        with read_ahead(state_value(self.request.app.state, "audit")):
            return self._run(action, **options)

    def _run(
        self,
        action: Callable[[], Any],
        *,
        key: str | None = None,
        render: Callable[[Mapping[UUID, Any]], Any] | None = None,
        status: int = 200,
        location: Callable[[Any], str] | None = None,
        secret: bool = False,
        recover: Callable[[], Any] | None = None,
    ) -> Response:
        """Run ``action`` once per idempotency key (the header's, or else ``key``) and answer
        the JSON it returns (or, for a repeat, the first answer)."""
        chosen = self.header if self.header is not None else key
        if chosen is None:
            return self.response(self._answer(_value(action()), status, location))
        request = self.request
        app_state, request_state = request.app.state, request.state
        app = state_value(app_state, "audit")
        settings = state_value(app_state, "settings")
        principal = state_value(request_state, "principal")
        rid = record_id(principal.key_id, chosen)
        body = state_value(request_state, "canonical_body", b"")
        path, query = request_target(request)
        fp = fingerprint(request.method, path, query, body)
        seal = unseal = None
        if secret:
            token = request.headers.get("authorization", "").partition(" ")[2].strip()
            seal, unseal = sealer(token.encode())
        store: IdempotencyStore = app.idempotency
        inflight = _inflight(request)
        deadline = time.monotonic() + settings.idempotency_wait

        def lookup() -> Response | Record | None:
            rows = store.get(rid, unseal)
            if not rows:
                return None
            first = rows[0]
            if first.fingerprint != fp:
                raise IdempotencyKeyReused(
                    f"idempotency key {chosen!r} was used by this API key for another request "
                    f"({first.method} {first.path}, another body or query): use a new key for a "
                    "new command; nothing was recorded"
                )
            answered = next((r.answer for r in reversed(rows) if r.answer is not None), None)
            if answered is not None:
                return self.response(answered, replayed=True)
            return first  # a claim: its answer is coming

        while True:
            found = lookup()
            if isinstance(found, Response):
                return found
            if isinstance(found, Record):  # claimed, not answered yet
                age = datetime.now(UTC) - _parse_time(found.created)
                if recover is not None and age.total_seconds() > settings.idempotency_lease:
                    answer = self._answer(recover(), status, location)
                    return self._finish(store, found, answer, seal, unseal)
                if time.monotonic() >= deadline:
                    raise RequestInProgress(_in_progress(chosen))
                time.sleep(0.05)
                continue
            running = inflight.enter(rid)
            if running is None:
                break
            if not running.wait(max(0.0, deadline - time.monotonic())):
                raise RequestInProgress(_in_progress(chosen))

        claim = Record(rid, principal.key_id, chosen, fp, request.method, path, now_text())

        def rendered(aggregates: Mapping[UUID, Any]) -> Answer | None:
            if render is None:
                return None
            value = render(aggregates)
            return None if value is None else self._answer(value, status, location)

        pending = PendingCommand(claim=claim, render=rendered, seal=seal)
        token_ = CURRENT.set(pending)
        try:
            try:
                result = action()
            except RecordedElsewhere:
                result = _ELSEWHERE
            except DomainError as error:
                if pending.committed is not None:  # its input is recorded: this is its answer
                    return self._finish(
                        store, pending.committed, self._problem(error), seal, unseal
                    )
                if not _storable(error):
                    if _recorded(store, rid):
                        result = _ELSEWHERE
                    else:
                        raise
                else:
                    answer = self._problem(error)
                    if store.put(replace_answer(claim, answer), seal):
                        return self.response(answer)
                    result = _ELSEWHERE
        finally:
            CURRENT.reset(token_)
            inflight.leave(rid)
        if result is _ELSEWHERE:  # another transaction holds this key: answer its record
            return self._await(lookup, chosen, deadline)
        committed = pending.committed
        if committed is not None and committed.answer is not None:
            return self.response(committed.answer)
        answer = self._answer(_value(result), status, location)
        if committed is not None:  # a claim: its answer now
            return self._finish(store, committed, answer, seal, unseal)
        if store.put(replace_answer(claim, answer), seal):
            return self.response(answer)
        return self._await(lookup, chosen, deadline)

    def _finish(
        self,
        store: Any,
        claim: Record,
        answer: Answer,
        seal: Callable[[UUID, bytes], bytes] | None,
        unseal: Callable[[UUID, bytes], bytes | None] | None,
    ) -> Response:
        """Store a claim's answer (version 2); when another process stored one first, that
        one is the answer."""
        from dataclasses import replace

        if store.put(replace(claim, version=2, answer=answer, check_first=False), seal):
            return self.response(answer)
        rows = store.get(claim.record_id, unseal)
        answered = next((r.answer for r in reversed(rows) if r.answer is not None), answer)
        return self.response(answered, replayed=True)

    def _await(
        self, lookup: Callable[[], Response | Record | None], key: str, deadline: float
    ) -> Response:
        while True:
            found = lookup()
            if isinstance(found, Response):
                return found
            if time.monotonic() >= deadline:
                raise RequestInProgress(_in_progress(key))
            time.sleep(0.05)


_ELSEWHERE = object()


def replace_answer(claim: Record, answer: Answer) -> Record:
    from dataclasses import replace

    return replace(claim, answer=answer)


def _recorded(store: Any, rid: UUID) -> bool:
    return bool(store.rows(rid))


def _parse_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def _in_progress(key: str) -> str:
    return f"a request with idempotency key {key!r} is still running: retry shortly for its answer"


async def command(request: Request, idempotency_key: KeyHeader = None) -> Command:
    """The :class:`Command` of a request: an ``async`` dependency, so that building it (no I/O)
    costs no trip to the thread pool (FastAPI runs a class or a plain function there)."""
    return Command(request, idempotency_key)


Idempotent = Annotated[Command, Depends(command)]

__all__ = [
    "HEADER",
    "REPLAYED",
    "Command",
    "IdempotencyKeyReused",
    "Idempotent",
    "RequestInProgress",
    "Reread",
    "fingerprint",
    "request_target",
]
