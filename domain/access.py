"""Who may do what: roles, principals and the permission table.

This module owns the service's access rules, as data and two small functions:

* :class:`Role`: the kinds of API key (``admin``, ``table-feed``, ``supervisor``, ``cashier``,
  ``investigator``, ``compliance``, ``reporting``, ``player``);
* :class:`Principal`: who is asking, as the web layer hands it to the application after it
  authenticated the key (``domain.keys``): the key id, its role, the tables it is bound to
  (``table-feed`` and ``supervisor`` keys) or the player it is bound to (``player`` keys);
* :class:`Action` and :data:`PERMISSIONS`, **the permission table**: for each action, the roles
  that may do it and how far (:class:`Scope`): anywhere, on the key's own tables, as the key's
  own player, or on settled rounds only. ``docs/api.md`` prints the same table, route by route,
  and a test compares the two;
* :func:`authorize`: the one check, raising :class:`Forbidden` (403) when the table says no.

A refusal says the same thing whether the resource exists or not: a key bound to table T1
that asks for a round of T2, and one that asks for a round nobody started, get the same
``forbidden`` problem (the application turns "not found" into ``forbidden`` for bound keys,
see ``domain.guarded``). Nothing here touches the store; nothing is recorded on a refusal.

>>> feed = Principal("k1", Role.TABLE_FEED, tables=frozenset({"T1"}))
>>> authorize(feed, Action.ROUND_BET, table="T1")
>>> authorize(feed, Action.ROUND_BET, table="T2")  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
Forbidden: ...
>>> feed.actor("player", "alice")["role"]
'table-feed'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from domain.errors import DomainError


class Role(StrEnum):
    """The role of an API key (see the permission table in ``docs/api.md``)."""

    ADMIN = "admin"
    TABLE_FEED = "table-feed"
    SUPERVISOR = "supervisor"
    CASHIER = "cashier"
    INVESTIGATOR = "investigator"
    COMPLIANCE = "compliance"
    REPORTING = "reporting"
    PLAYER = "player"


#: Roles whose keys are bound to table ids (and act on those tables only).
TABLE_BOUND: Final = frozenset({Role.TABLE_FEED, Role.SUPERVISOR})
#: Roles whose keys are bound to one player id (and act and read as that player only).
PLAYER_BOUND: Final = frozenset({Role.PLAYER})


class Scope(StrEnum):
    """How far a role's permission for an action reaches (a cell of the permission table)."""

    ALL = "all"  # any resource
    OWN_TABLES = "own tables"  # resources of the tables the key is bound to
    SELF = "self"  # the key's own player: its wallet, its rounds, its bets and decisions
    SETTLED = "settled"  # finished rounds only


class Action(StrEnum):
    """Everything a key may be allowed to do; each HTTP route performs exactly one."""

    KEYS_MANAGE = "keys.manage"
    TABLE_OPEN = "table.open"
    TABLE_READ = "table.read"
    TABLE_SEAT = "table.seat"
    SHOE_OPEN = "shoe.open"
    SHOE_OPERATE = "shoe.operate"
    SHOE_RETIRE = "shoe.retire"
    SHOE_READ = "shoe.read"
    ROUND_START = "round.start"
    ROUND_BET = "round.bet"
    ROUND_BATCH = "round.batch"
    ROUND_DEAL = "round.deal"
    ROUND_DECIDE = "round.decide"
    ROUND_TIMER = "round.timer"
    ROUND_SUPERVISE = "round.supervise"
    ROUND_READ = "round.read"
    ROUND_EVENTS = "round.events"
    AUDIT_READ = "audit.read"
    AUDIT_EXPORT = "audit.export"
    AUDIT_PROOF = "audit.proof"
    LOG_READ = "log.read"
    RULES_READ = "rules.read"
    REPORTS_READ = "reports.read"
    WALLET_OPEN = "wallet.open"
    WALLET_MOVE = "wallet.move"
    WALLET_READ = "wallet.read"
    ROUND_SEARCH = "round.search"
    ROUND_PLAYERS = "round.players"
    PLAYER_ROUNDS = "player.rounds"
    DISPUTE_READ = "dispute.read"
    FEED_READ = "feed.read"
    REPORT_READ = "report.read"
    PROJECTIONS_READ = "projections.read"
    SESSION_READ = "session.read"


R, S = Role, Scope
_READERS: Final = {R.INVESTIGATOR: S.ALL, R.COMPLIANCE: S.ALL}
_EVERYONE: Final = dict.fromkeys(Role, S.ALL)

#: THE permission table: action -> {role: scope}. A role absent from an action's row may not
#: do it. ``docs/api.md`` shows it per route, and ``tests/api/test_permissions.py`` holds the
#: two together and walks every route with every role.
PERMISSIONS: Final[Mapping[Action, Mapping[Role, Scope]]] = {
    Action.KEYS_MANAGE: {R.ADMIN: S.ALL},
    Action.TABLE_OPEN: {R.ADMIN: S.ALL},
    Action.TABLE_READ: {
        R.ADMIN: S.ALL,
        R.TABLE_FEED: S.OWN_TABLES,
        R.SUPERVISOR: S.OWN_TABLES,
        **_READERS,
    },
    Action.TABLE_SEAT: {R.ADMIN: S.ALL, R.TABLE_FEED: S.OWN_TABLES},
    Action.SHOE_OPEN: {R.ADMIN: S.ALL, R.TABLE_FEED: S.OWN_TABLES},
    Action.SHOE_OPERATE: {R.ADMIN: S.ALL, R.TABLE_FEED: S.OWN_TABLES},
    Action.SHOE_RETIRE: {R.ADMIN: S.ALL, R.TABLE_FEED: S.OWN_TABLES},
    Action.SHOE_READ: {
        R.ADMIN: S.ALL,
        R.TABLE_FEED: S.OWN_TABLES,
        R.SUPERVISOR: S.OWN_TABLES,
        **_READERS,
    },
    Action.ROUND_START: {R.ADMIN: S.ALL, R.TABLE_FEED: S.OWN_TABLES},
    Action.ROUND_BET: {R.ADMIN: S.ALL, R.TABLE_FEED: S.OWN_TABLES, R.PLAYER: S.SELF},
    Action.ROUND_BATCH: {R.ADMIN: S.ALL, R.TABLE_FEED: S.OWN_TABLES},
    Action.ROUND_DEAL: {R.ADMIN: S.ALL, R.TABLE_FEED: S.OWN_TABLES},
    Action.ROUND_DECIDE: {R.ADMIN: S.ALL, R.TABLE_FEED: S.OWN_TABLES, R.PLAYER: S.SELF},
    Action.ROUND_TIMER: {R.ADMIN: S.ALL, R.TABLE_FEED: S.OWN_TABLES},
    Action.ROUND_SUPERVISE: {R.ADMIN: S.ALL, R.SUPERVISOR: S.OWN_TABLES},
    Action.ROUND_READ: {
        R.ADMIN: S.ALL,
        R.TABLE_FEED: S.OWN_TABLES,
        R.SUPERVISOR: S.OWN_TABLES,
        **_READERS,
        R.PLAYER: S.SELF,
    },
    Action.ROUND_EVENTS: {R.ADMIN: S.ALL, R.SUPERVISOR: S.OWN_TABLES, **_READERS},
    Action.AUDIT_READ: {R.ADMIN: S.ALL, **_READERS},
    Action.AUDIT_EXPORT: {R.ADMIN: S.ALL, **_READERS, R.REPORTING: S.SETTLED},
    Action.AUDIT_PROOF: {R.ADMIN: S.ALL, **_READERS, R.REPORTING: S.ALL},
    Action.LOG_READ: _EVERYONE,
    Action.RULES_READ: _EVERYONE,
    Action.REPORTS_READ: {R.ADMIN: S.ALL, **_READERS, R.REPORTING: S.ALL},
    Action.WALLET_OPEN: {R.ADMIN: S.ALL, R.CASHIER: S.ALL},
    Action.WALLET_MOVE: {R.ADMIN: S.ALL, R.CASHIER: S.ALL},
    Action.WALLET_READ: {R.ADMIN: S.ALL, R.CASHIER: S.ALL, **_READERS, R.PLAYER: S.SELF},
    # the read side (issue 16): searches, histories, dispute timelines, the reporting feed
    Action.ROUND_SEARCH: {
        R.ADMIN: S.ALL,
        R.TABLE_FEED: S.OWN_TABLES,
        R.SUPERVISOR: S.OWN_TABLES,
        **_READERS,
        R.PLAYER: S.SELF,
    },
    Action.ROUND_PLAYERS: {
        R.ADMIN: S.ALL,
        R.TABLE_FEED: S.OWN_TABLES,
        R.SUPERVISOR: S.OWN_TABLES,
        **_READERS,
    },
    Action.PLAYER_ROUNDS: {R.ADMIN: S.ALL, **_READERS, R.PLAYER: S.SELF},
    Action.DISPUTE_READ: {
        R.ADMIN: S.ALL,
        R.SUPERVISOR: S.OWN_TABLES,
        **_READERS,
        R.PLAYER: S.SELF,
    },
    Action.FEED_READ: {R.ADMIN: S.ALL, **_READERS, R.REPORTING: S.ALL},
    Action.REPORT_READ: {R.ADMIN: S.ALL, **_READERS, R.REPORTING: S.ALL},
    Action.PROJECTIONS_READ: {R.ADMIN: S.ALL, **_READERS, R.REPORTING: S.ALL},
    Action.SESSION_READ: _EVERYONE,
}

#: What each action is, in words (the permission table's legend in docs/api.md).
DESCRIPTIONS: Final[Mapping[Action, str]] = {
    Action.KEYS_MANAGE: "create, list and revoke API keys",
    Action.TABLE_OPEN: "open a table (production or not)",
    Action.TABLE_READ: "read a table",
    Action.TABLE_SEAT: "seat a player or free a seat",
    Action.SHOE_OPEN: "open a shoe for a table",
    Action.SHOE_OPERATE: "burn (SHOE-2), cut card (SHOE-1)",
    Action.SHOE_RETIRE: "retire a shoe (an RNG shoe reveals its seed)",
    Action.SHOE_READ: "read a shoe",
    Action.ROUND_START: "start a round",
    Action.ROUND_BET: "place a bet",
    Action.ROUND_BATCH: "send a boundless batch",
    Action.ROUND_DEAL: "close betting, deal a live card",
    Action.ROUND_DECIDE: "send a player's decision",
    Action.ROUND_TIMER: "timers, disconnections, the insurance window",
    Action.ROUND_SUPERVISE: "pause, resume, cancel (ERR-1)",
    Action.ROUND_READ: "read a round's view",
    Action.ROUND_EVENTS: "read a round's events",
    Action.AUDIT_READ: "replay and verify a round",
    Action.AUDIT_EXPORT: "export a round",
    Action.AUDIT_PROOF: "a round's inclusion proof",
    Action.LOG_READ: "the Merkle log's consistency proofs",
    Action.RULES_READ: "read the published rules and their RTP",
    Action.REPORTS_READ: "read the observed-RTP report",
    Action.WALLET_OPEN: "open a wallet",
    Action.WALLET_MOVE: "deposit, withdraw",
    Action.WALLET_READ: "read a wallet",
    Action.ROUND_SEARCH: "search rounds",
    Action.ROUND_PLAYERS: "list a round's players",
    Action.PLAYER_ROUNDS: "read a player's round history",
    Action.DISPUTE_READ: "read a player's dispute timeline and replay",
    Action.FEED_READ: "read the reporting feed",
    Action.REPORT_READ: "read the daily reports",
    Action.PROJECTIONS_READ: "read the projections' positions",
    Action.SESSION_READ: "read what this key is and may do",
}


class Unauthenticated(DomainError):
    """No API key, an unknown one, a malformed one or a revoked one (HTTP 401)."""

    code = "unauthenticated"
    status = 401


class Forbidden(DomainError):
    """The key may not do this here (HTTP 403). The message never says whether the resource
    exists: see the module docstring."""

    code = "forbidden"
    status = 403


class InvalidKeyRequest(DomainError):
    """A key's role, tables, player or label do not fit together (HTTP 422)."""

    code = "invalid-key-request"


def forbidden(action: Action) -> Forbidden:
    """The one refusal of ``action``: the same words whatever the reason."""
    return Forbidden(f"this API key may not {DESCRIPTIONS[action]} here ({action})")


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is asking: an authenticated API key (or the operator's command line)."""

    key_id: str
    role: Role
    tables: frozenset[str] = field(default_factory=frozenset)
    player: str | None = None
    label: str = ""

    def scope(self, action: Action) -> Scope | None:
        """How far this key's permission for ``action`` reaches; None: not at all."""
        return PERMISSIONS[action].get(self.role)

    def may(self, action: Action) -> bool:
        return self.scope(action) is not None

    @property
    def bound(self) -> bool:
        """Whether the key is bound to tables or to a player (it then learns nothing about
        resources outside them, not even whether they exist)."""
        return self.role in TABLE_BOUND or self.role in PLAYER_BOUND

    def actor(self, kind: str, ident: str) -> dict[str, str]:
        """The actor an event records for a command this key sent: who acted (``kind``,
        ``id``: the player the table feed relays, the dealer, the system, a supervisor) and
        the key that sent it (``key``: its id, ``role``).

        >>> Principal("k9", Role.CASHIER).actor("system", "cashier")
        {'kind': 'system', 'id': 'cashier', 'key': 'k9', 'role': 'cashier'}
        """
        return {"kind": kind, "id": ident, "key": self.key_id, "role": str(self.role)}

    def as_json(self) -> dict[str, object]:
        return {
            "key_id": self.key_id,
            "role": str(self.role),
            "tables": sorted(self.tables),
            "player": self.player,
            "label": self.label,
        }


#: The operator at the command line (``roundaudit keys ...``): direct store access, admin.
OPERATOR: Final = Principal("cli", Role.ADMIN, label="command line")


def authorize(
    principal: Principal,
    action: Action,
    *,
    table: str | None = None,
    players: Iterable[str] | str | None = None,
    settled: bool | None = None,
) -> Scope:
    """Check ``action`` on a resource of ``table`` that concerns ``players`` (a round's
    players, a wallet's owner, the player a command acts for) and is ``settled`` or not.
    Returns the scope that allowed it; raises :class:`Forbidden` otherwise."""
    scope = principal.scope(action)
    if scope is None:
        raise forbidden(action)
    if scope is Scope.OWN_TABLES:
        if table is None or table not in principal.tables:
            raise forbidden(action)
    elif scope is Scope.SELF:
        named = {players} if isinstance(players, str) else set(players or ())
        if principal.player is None or principal.player not in named:
            raise forbidden(action)
    elif scope is Scope.SETTLED and not settled:
        raise forbidden(action)
    return scope


def narrow_search(
    principal: Principal,
    action: Action,
    *,
    tables: Iterable[str] = (),
    player: str | None = None,
) -> tuple[tuple[str, ...], str | None]:
    """The filters a search (a list of rounds) may run with: a bound key's search is held to
    its binding instead of answering about resources outside it. Returns ``(tables, player)``
    (``()``: any table; ``None``: any player); raises :class:`Forbidden` when the search names
    a table or player outside the key's binding.

    >>> feed = Principal("k1", Role.TABLE_FEED, tables=frozenset({"T1", "T2"}))
    >>> narrow_search(feed, Action.ROUND_SEARCH)
    (('T1', 'T2'), None)
    >>> narrow_search(Principal("k2", Role.PLAYER, player="p1"), Action.ROUND_SEARCH)
    ((), 'p1')
    >>> narrow_search(feed, Action.ROUND_SEARCH, tables=["T3"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    domain.access.Forbidden: ...
    """
    asked = tuple(dict.fromkeys(tables))
    scope = principal.scope(action)
    if scope is None:
        raise forbidden(action)
    if scope is Scope.OWN_TABLES:
        if any(t not in principal.tables for t in asked):
            raise forbidden(action)
        return (asked or tuple(sorted(principal.tables))), player
    if scope is Scope.SELF:
        if principal.player is None or (player is not None and player != principal.player):
            raise forbidden(action)
        return asked, principal.player
    return asked, player


def check_binding(role: Role, tables: Iterable[str], player: str | None) -> None:
    """A key's binding must fit its role: table ids for ``table-feed`` and ``supervisor``, one
    player id for ``player``, nothing for the others (they are not bound)."""
    tables = list(tables)
    if role in TABLE_BOUND:
        if not tables:
            raise InvalidKeyRequest(f"a {role} key is bound to tables: give at least one table id")
        if player is not None:
            raise InvalidKeyRequest(f"a {role} key is bound to tables, not to a player")
    elif role in PLAYER_BOUND:
        if player is None or not player.strip():
            raise InvalidKeyRequest("a player key is bound to one player: give its player id")
        if tables:
            raise InvalidKeyRequest("a player key is bound to its player, not to tables")
    elif tables or player is not None:
        raise InvalidKeyRequest(f"a {role} key is not bound: give neither tables nor player")


__all__ = [
    "DESCRIPTIONS",
    "OPERATOR",
    "PERMISSIONS",
    "PLAYER_BOUND",
    "TABLE_BOUND",
    "Action",
    "Forbidden",
    "InvalidKeyRequest",
    "Principal",
    "Role",
    "Scope",
    "Unauthenticated",
    "authorize",
    "check_binding",
    "forbidden",
    "narrow_search",
]
