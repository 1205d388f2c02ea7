"""Conventions shared by every stored event (see docs/events.md).

* Every event class is nested in its aggregate and named in the past tense.
* Every event is either an **input** (a fact that came from outside: a card from the shoe, a
  bet, a decision, a timeout, a supervisor action) or a **consequence** (derived by the rules
  from inputs; it names the rule ID that produced it in its ``rule`` field). The marker mixins
  below say which: verification re-executes the inputs and requires the same consequences.
* Every event carries ``actor``: ``{"kind": "player"|"system"|"dealer"|"supervisor", "id": ...}``,
  and for a command sent with an API key also ``key`` (the key's id) and ``role``
  (``domain.access.Principal.actor``).
  Inputs also carry ``client_time`` and ``request_id`` (``None`` when the source has none).
* Payloads are plain JSON: cards as codes, money as decimal strings, ids as strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar, Literal
from uuid import UUID

ActorKind = Literal["player", "system", "dealer", "supervisor"]


class Input:
    """Marker: the event records a fact that came from outside the rules."""

    KIND: ClassVar[str] = "input"


class Consequence:
    """Marker: the event is derived by the rules; its payload has ``rule``."""

    KIND: ClassVar[str] = "consequence"


@dataclass(frozen=True)
class Requested:
    """The fields every input of a round records (declared once, a base of each input event
    class of ``Round``, ``SharedHand`` and ``Participation``): who sent it, the request id that
    makes it idempotent (``None`` when the source has none) and the client's time."""

    actor: dict[str, str]
    request_id: str | None
    client_time: str | None


@dataclass(frozen=True, kw_only=True)
class Derived:
    """The field every consequence of a round records (declared once, a base of each
    consequence class of ``Round``, ``SharedHand``, ``Participation`` and ``Table``): who
    caused it, always the system (:data:`SYSTEM`), beside the ``rule`` that produced it.

    Stored format version 2 (``class_version``): version 1 of these classes recorded no
    actor; :meth:`upcast_v1_v2` gives an event stored before it the system actor, so every
    event stored before still decodes (the stored bytes are never rewritten)."""

    actor: dict[str, str]

    class_version: ClassVar[int] = 2

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        """A consequence stored before it recorded its actor: the system caused it.

        >>> state = {"rule": "HAND-1"}
        >>> Derived.upcast_v1_v2(state)
        >>> state["actor"]
        {'kind': 'system', 'id': 'roundaudit'}
        """
        state["actor"] = dict(SYSTEM)


@dataclass(frozen=True)
class Decided:
    """The fields every player's decision records (``Round.DecisionMade``,
    ``Participation.DecisionMade``, with ``balance_seen`` and, in a classic round, the others'
    balances beside them): the hand, the action, its amount, the options open."""

    player: str
    hand: str
    action: str
    amount: str | None
    options: list[str]


def actor(kind: ActorKind, ident: str = "") -> dict[str, str]:
    """The plain-JSON actor of an event.

    >>> actor("player", "alice")
    {'kind': 'player', 'id': 'alice'}
    """
    return {"kind": kind, "id": ident}


SYSTEM = actor("system", "roundaudit")
#: What an actor says of the API key that sent the command (besides ``kind`` and ``id``).
KEY_FIELDS = ("key", "role")


def copied(actor: Mapping[str, str] | None) -> dict[str, str] | None:
    """A plain copy of an actor (None stays None: the event records its default)."""
    return dict(actor) if actor is not None else None


def supervisor(ident: str, sent_by: Mapping[str, str] | None = None) -> dict[str, str]:
    """The actor of a supervisor's pause, resume or cancel: the supervisor named, and the key
    that sent it when one did.

    >>> supervisor("sue", {"kind": "supervisor", "id": "x", "key": "k1", "role": "supervisor"})
    {'kind': 'supervisor', 'id': 'sue', 'key': 'k1', 'role': 'supervisor'}
    """
    who = actor("supervisor", ident)
    if sent_by is not None:
        who.update({k: sent_by[k] for k in KEY_FIELDS if k in sent_by})
    return who


def event_kind(event: Any) -> str:
    """'input' or 'consequence' (or 'lifecycle' for events that are neither)."""
    if isinstance(event, Input):
        return "input"
    if isinstance(event, Consequence):
        return "consequence"
    return "lifecycle"


_LIBRARY = ("originator_id", "originator_version", "timestamp", "originator_topic")


def event_json(e: Any) -> dict[str, Any]:
    """One stored event as plain JSON: class, kind (input/consequence), version and payload."""
    payload = {
        k: (str(v) if isinstance(v, UUID | Decimal) else v)
        for k, v in e.__dict__.items()
        if k not in _LIBRARY
    }
    return {
        "version": e.originator_version,
        "type": type(e).__qualname__,
        "kind": event_kind(e),
        "timestamp": e.timestamp.isoformat(),
        "payload": payload,
    }
