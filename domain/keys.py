"""API keys: the :class:`ApiKey` aggregate (key changes are events) and :class:`KeyRing`.

**Tokens.** A key's token is ``rak_<key id>_<secret>``: the key id is 16 hex digits (64 random
bits; an identifier, listed and recorded on events), the secret 43 URL-safe base64 characters
(256 random bits from :mod:`secrets`). The token carries its key id, so authentication loads
exactly one key by id instead of comparing against every key.

**At rest.** Only a hash of the secret is stored: SHA-256 over a domain-separation label, the
key id and the secret (``hash_scheme`` ``sha256/1``). The secret has 256 bits of entropy, so a
slow password hash would add nothing but latency; the hash is compared with
:func:`hmac.compare_digest` (constant time), and an unknown key id costs the same hash and
comparison as a wrong secret.

**Revocation** is an event (``ApiKey.Revoked``). :meth:`KeyRing.authenticate` reads the key's
events from the store on every call (one query by originator id; no in-process cache), so a
revocation recorded by any process sharing the store takes effect on the very next request
of every other process.

**The first admin key** comes from ``ROUNDAUDIT_ADMIN_KEY`` (the web layer and the CLI read it;
:meth:`KeyRing.ensure_admin` records it), or is generated once by :meth:`KeyRing.ensure_admin`
when the store has no usable admin key and the caller asks for one (``make run``); the
command line (``roundaudit keys create``) is the operator's recovery path.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from uuid import UUID

from eventsourcing.domain import Aggregate, event
from eventsourcing.persistence import IntegrityError
from eventsourcing.utils import get_topic

from domain.access import (
    InvalidKeyRequest,
    Principal,
    Role,
    Unauthenticated,
    check_binding,
)
from domain.errors import Conflict, NotFound, check_text
from domain.events import Input
from domain.ids import check_id, check_player_id, stable_id

if TYPE_CHECKING:
    from eventsourcing.application import Application

TOKEN_PREFIX: Final = "rak"  # noqa: S105 (the token's prefix, not a secret)
HASH_SCHEME: Final = "sha256/1"
_HASH_LABEL: Final = b"roundaudit-api-key/1\x00"
KEY_ID_HEX: Final = 16
SECRET_BYTES: Final = 32
MAX_LABEL: Final = 200
MAX_TABLES: Final = 1000
_KEY_ID = re.compile(r"[0-9a-f]{16}")
_SECRET = re.compile(r"[A-Za-z0-9_-]{43}")
_PAGE = 1000


class KeyNotFound(NotFound):
    code = "key-not-found"


class AdminKeyUnusable(Conflict):
    """``ROUNDAUDIT_ADMIN_KEY`` names a key that is revoked, or whose id holds another
    secret or role."""

    code = "admin-key-unusable"


def new_token() -> str:
    """A fresh token ``rak_<16 hex>_<43 base64url>`` (64-bit id, 256-bit secret)."""
    return f"{TOKEN_PREFIX}_{secrets.token_hex(KEY_ID_HEX // 2)}_{secrets.token_urlsafe(32)}"


def parse_token(token: str) -> tuple[str, str] | None:
    """(key id, secret) of a well-formed token, else None.

    >>> parse_token("rak_0123456789abcdef_" + "A" * 43)
    ('0123456789abcdef', 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')
    >>> parse_token("rak_nothex_x") is None
    True
    """
    prefix, _, rest = token.partition("_")
    key_id, _, secret = rest.partition("_")
    if prefix != TOKEN_PREFIX or not _KEY_ID.fullmatch(key_id) or not _SECRET.fullmatch(secret):
        return None
    return key_id, secret


def secret_hash(key_id: str, secret: str) -> str:
    """The stored hash of a key's secret (``sha256/1``)."""
    return hashlib.sha256(_HASH_LABEL + key_id.encode() + b"\x00" + secret.encode()).hexdigest()


_DUMMY_HASH: Final = secret_hash("0" * KEY_ID_HEX, "0" * 43)


class ApiKey(Aggregate):
    """One API key: its role and binding, the hash of its secret, and whether it is revoked.

    Invariants: the binding fits the role (``domain.access.check_binding``); the secret is
    never stored, only its hash; a revoked key stays revoked (revoking again records nothing).
    """

    class Issued(Aggregate.Created, Input):
        """An API key was issued (its secret is answered once and never stored)."""

        key_id: str
        role: str
        tables: list[str]
        player: str | None
        label: str
        secret_hash: str
        hash_scheme: str
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class Revoked(Aggregate.Event, Input):
        """An API key was revoked: it authenticates nothing from now on."""

        reason: str | None
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    @staticmethod
    def create_id(key_id: str, **_: Any) -> UUID:
        """uuid5 of the roundaudit namespace and ``api-key:<key id>``."""
        return stable_id("api-key", key_id)

    @event(Issued)
    def __init__(
        self,
        *,
        key_id: str,
        role: str,
        tables: list[str],
        player: str | None,
        label: str,
        secret_hash: str,
        hash_scheme: str,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self.key_id = key_id
        self.role = role
        self.tables = list(tables)
        self.player = player
        self.label = label
        self.secret_hash = secret_hash
        self.hash_scheme = hash_scheme
        self.created_by = dict(actor)
        self.revoked = False
        self.revoked_at: str | None = None
        self.revoked_by: dict[str, str] | None = None
        self.revoke_reason: str | None = None

    @classmethod
    def issue(
        cls,
        *,
        key_id: str,
        secret: str,
        role: Role,
        tables: Iterable[str] = (),
        player: str | None = None,
        label: str = "",
        actor: Mapping[str, str],
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> ApiKey:
        """Issue a key (validates the binding and the label first)."""
        tables = sorted(set(tables))
        check_binding(role, tables, player)
        if len(tables) > MAX_TABLES:
            raise InvalidKeyRequest(f"a key is bound to at most {MAX_TABLES} tables")
        for table in tables:
            check_id(table, "tables")
        if player is not None:
            check_player_id(player, "player")
        if label != "":
            check_id(label, "label")  # a label stands for the holder in actors (supervisor)
        return cls(
            key_id=key_id,
            role=str(role),
            tables=tables,
            player=player,
            label=label,
            secret_hash=secret_hash(key_id, secret),
            hash_scheme=HASH_SCHEME,
            actor=dict(actor),
            request_id=request_id,
            client_time=client_time,
        )

    def revoke(
        self,
        *,
        actor: Mapping[str, str],
        reason: str | None = None,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> bool:
        """Revoke the key; False (nothing recorded) when it already is."""
        if self.revoked:
            return False
        check_text(reason, "reason")
        self._revoked(
            reason=reason, actor=dict(actor), request_id=request_id, client_time=client_time
        )
        return True

    @event(Revoked)
    def _revoked(
        self,
        *,
        reason: str | None,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self.revoked = True
        self.revoked_by = dict(actor)
        self.revoke_reason = reason

    def matches(self, secret: str) -> bool:
        """Whether ``secret`` is this key's (constant-time comparison of the hashes)."""
        return hmac.compare_digest(secret_hash(self.key_id, secret), self.secret_hash)

    def principal(self) -> Principal:
        return Principal(
            key_id=self.key_id,
            role=Role(self.role),
            tables=frozenset(self.tables),
            player=self.player,
            label=self.label,
        )

    def view(self) -> dict[str, Any]:
        """The key as listed (never its secret, nor the hash of it)."""
        return {
            "key_id": self.key_id,
            "role": self.role,
            "tables": list(self.tables),
            "player": self.player,
            "label": self.label,
            "created_at": self.created_on.isoformat(),
            "created_by": dict(self.created_by),
            "revoked": self.revoked,
            "revoked_at": self.modified_on.isoformat() if self.revoked else None,
            "revoked_by": self.revoked_by,
            "revoke_reason": self.revoke_reason,
        }


CREATED_TOPIC: Final = get_topic(ApiKey.Issued)


@dataclass(frozen=True)
class IssuedKey:
    """A key just issued: its token (shown once, never stored) and its listing."""

    token: str
    key: dict[str, Any]


class KeyRing:
    """API keys in an application's event store (``RoundAudit.keys``)."""

    def __init__(self, app: Application[UUID]) -> None:
        self.app = app

    # ------------------------------------------------------------------ reading
    def load(self, key_id: str) -> ApiKey | None:
        """The key, straight from its stored events (no cache: see the module docstring)."""
        if not _KEY_ID.fullmatch(key_id):
            return None
        agg: Any = None
        e: Any
        for e in self.app.events.get(ApiKey.create_id(key_id)):
            agg = e.mutate(agg)
        return agg if isinstance(agg, ApiKey) else None

    def get(self, key_id: str) -> ApiKey:
        key = self.load(key_id)
        if key is None:
            raise KeyNotFound(f"API key {key_id!r} not found")
        return key

    def _key_ids(self) -> Iterator[str]:
        position = 0
        while True:
            page = self.app.recorder.select_notifications(
                start=position, limit=_PAGE, topics=(CREATED_TOPIC,), inclusive_of_start=False
            )
            for n in page:
                position = n.id
                e = self.app.mapper.to_domain_event(n)
                if isinstance(e, ApiKey.Issued):
                    yield e.key_id
            if len(page) < _PAGE:
                return

    def all(self) -> list[ApiKey]:
        """Every key ever issued, oldest first (revoked ones included)."""
        out = [self.load(kid) for kid in dict.fromkeys(self._key_ids())]
        return [k for k in out if k is not None]

    def usable_admin(self) -> bool:
        """Whether some admin key is not revoked."""
        return any(k.role == Role.ADMIN and not k.revoked for k in self.all())

    # ------------------------------------------------------------------ authentication
    def authenticate(self, token: str | None) -> Principal:
        """The principal of a bearer token; :class:`Unauthenticated` for a missing, malformed,
        unknown or revoked key or a wrong secret (one message for all, so a caller learns
        nothing about which keys exist)."""
        return self.authenticated_key(token).principal()

    def authenticated_key(self, token: str | None) -> ApiKey:
        """The key a bearer token proves, as stored now; refused as :meth:`authenticate`
        words it (the one home of that decision)."""
        parsed = parse_token(token) if token else None
        key = self.load(parsed[0]) if parsed is not None else None
        if parsed is None or key is None:
            hmac.compare_digest(_DUMMY_HASH, secret_hash("0" * KEY_ID_HEX, "0" * 43))
            raise _refused(token)
        if not key.matches(parsed[1]) or key.revoked:
            raise _refused(token)
        return key

    # ------------------------------------------------------------------ commands
    def create(
        self,
        *,
        role: Role | str,
        tables: Iterable[str] = (),
        player: str | None = None,
        label: str = "",
        actor: Mapping[str, str],
        token: str | None = None,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> IssuedKey:
        """Issue a key (a fresh token unless ``token`` is given, as ``ROUNDAUDIT_ADMIN_KEY``
        is) and record it; the token is in the answer only."""
        try:
            role = Role(role)
        except ValueError:
            raise InvalidKeyRequest(
                f"unknown role {role!r}: one of {', '.join(r.value for r in Role)}"
            ) from None
        token = token or new_token()
        parsed = parse_token(token)
        if parsed is None:
            raise InvalidKeyRequest("a token has the form rak_<16 hex digits>_<43 base64url>")
        key = ApiKey.issue(
            key_id=parsed[0],
            secret=parsed[1],
            role=role,
            tables=tables,
            player=player,
            label=label,
            actor=actor,
            request_id=request_id,
            client_time=client_time,
        )
        self.app.save(key)  # a key id taken already is an IntegrityError: nothing recorded
        return IssuedKey(token, key.view())

    def revoke(
        self,
        key_id: str,
        *,
        actor: Mapping[str, str],
        reason: str | None = None,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> dict[str, Any]:
        key = self.get(key_id)
        if key.revoke(actor=actor, reason=reason, request_id=request_id, client_time=client_time):
            self.app.save(key)
        return key.view()

    def ensure_admin(
        self, token: str | None, *, generate: bool, actor: Mapping[str, str]
    ) -> str | None:
        """Make the store hold a usable admin key. With ``token`` (``ROUNDAUDIT_ADMIN_KEY``):
        record it as an admin key unless it is recorded already; refuse (:class:`
        AdminKeyUnusable`) when its id is revoked or holds another secret or role. Without
        one: when ``generate`` and no admin key is usable, issue one and return its token
        (to be shown once); else None."""
        if token:
            parsed = parse_token(token)
            if parsed is None:
                raise InvalidKeyRequest(
                    "ROUNDAUDIT_ADMIN_KEY is not a token: it has the form "
                    "rak_<16 hex digits>_<43 base64url> (make one: roundaudit keys new-token)"
                )
            key = self.load(parsed[0])
            if key is None:
                try:
                    self.create(
                        role=Role.ADMIN, label="ROUNDAUDIT_ADMIN_KEY", actor=actor, token=token
                    )
                except IntegrityError:  # another process recorded it at the same moment
                    key = self.load(parsed[0])
                else:
                    return None
            if key is None or not key.matches(parsed[1]) or key.role != Role.ADMIN:
                raise AdminKeyUnusable(
                    f"ROUNDAUDIT_ADMIN_KEY names key {parsed[0]}, which the store holds with "
                    "another secret or role: give another token"
                )
            if key.revoked:
                raise AdminKeyUnusable(
                    f"ROUNDAUDIT_ADMIN_KEY names key {parsed[0]}, which was revoked: give a new "
                    "token (roundaudit keys new-token) or create one with roundaudit keys create"
                )
            return None
        if not generate or self.usable_admin():
            return None
        issued = self.create(role=Role.ADMIN, label="generated-at-first-start", actor=actor)
        return issued.token


def _refused(token: str | None) -> Unauthenticated:
    if not token:
        return Unauthenticated("an API key is required: send Authorization: Bearer <key>")
    return Unauthenticated("the API key is not valid (unknown, malformed or revoked)")


__all__ = [
    "CREATED_TOPIC",
    "HASH_SCHEME",
    "AdminKeyUnusable",
    "ApiKey",
    "IssuedKey",
    "KeyNotFound",
    "KeyRing",
    "new_token",
    "parse_token",
    "secret_hash",
]
