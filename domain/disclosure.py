"""What the table has not shown yet, and how every read hides it.

No reader, an admin included, may learn a card before the table shows it. This module owns
the one policy, as pure functions over recorded events; the read model applies it on every
route (``domain.guarded`` for views, events and shoes; ``replays.disclosure`` for replays,
exports and verification details; the dispute timeline):

* **The hole card** of a round in play: the card a ``CardDealt`` sent to the dealer face down
  (the ``CardToDealer`` with ``face_up`` false that follows it) stays hidden until the round
  records ``HoleCardRevealed`` or ends (settled or cancelled). Hidden are those two events'
  ``card`` and the shoe's ``CardDrawn`` at the same shoe position.
* **Undealt positions**: a test shoe's stacked ``order`` (in its ``Opened`` event) stays hidden
  until the shoe retires; an RNG shoe's order follows from its seed, which the vault keeps
  sealed until the shoe retires (``domain.vault``), and a live shoe's is known to nobody.
* After the reveal, everything is shown: a finished round hides nothing, a retired shoe
  hides nothing.

Burned cards (SHOE-2) are out of play and shown: they take part in no later deal.

:class:`Secrets` is what one round, or one shoe, hides now; its ``redact_*`` helpers return
copies with the hidden values replaced by ``None`` and the names of what was hidden listed
under ``redacted``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from uuid import UUID

Json = dict[str, Any]
#: Event class names (the last part of their qualname) that end what a round hides.
REVEALING: Final = frozenset({"HoleCardRevealed", "RoundSettled", "RoundCancelled"})
FINISHING: Final = frozenset({"RoundSettled", "RoundCancelled"})
HIDDEN_MARK: Final = "redacted"


@dataclass(frozen=True)
class Secrets:
    """What a round (and the shoes it draws from) hides now.

    ``records``: (stream id, version) of the round's events whose ``card`` is hidden;
    ``shoe_positions``: shoe positions whose card is hidden (per shoe id);
    ``orders``: shoe ids whose stacked order is hidden."""

    records: frozenset[tuple[UUID, int]] = frozenset()
    shoe_positions: Mapping[UUID, frozenset[int]] = field(default_factory=dict)
    orders: frozenset[UUID] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.records or any(self.shoe_positions.values()) or self.orders)

    def merge(self, other: Secrets) -> Secrets:
        positions = {k: set(v) for k, v in self.shoe_positions.items()}
        for k, v in other.shoe_positions.items():
            positions.setdefault(k, set()).update(v)
        return Secrets(
            self.records | other.records,
            {k: frozenset(v) for k, v in positions.items()},
            self.orders | other.orders,
        )

    def hides_record(self, originator_id: UUID, version: int) -> bool:
        return (originator_id, version) in self.records

    def hides_position(self, shoe_id: UUID, position: int) -> bool:
        return position in self.shoe_positions.get(shoe_id, frozenset())

    # ----------------------------------------------------------------- redaction
    def redact_round_event(self, originator_id: UUID, event: Json) -> Json:
        """An ``event_json`` entry of a round event (``version``, ``payload``)."""
        if not self.hides_record(originator_id, int(event["version"])):
            return event
        return _hide(event, "payload", ("card",))

    def redact_shoe_event(self, shoe_id: UUID, name: str, payload: Json) -> tuple[Json, list[str]]:
        """A shoe event's payload, and the names of the fields hidden in it."""
        hidden: list[str] = []
        out = payload
        if name.endswith("Opened") and shoe_id in self.orders and payload.get("order"):
            out = {**out, "order": None}
            hidden.append("order")
        position = payload.get("position")
        if (
            name.endswith("CardDrawn")
            and isinstance(position, int)
            and self.hides_position(shoe_id, position)
        ):
            out = {**out, "card": None}
            hidden.append("card")
        return out, hidden

    def redact_drawn(self, shoe_id: UUID, drawn: Iterable[Json]) -> list[Json]:
        """A shoe view's ``drawn`` list."""
        out: list[Json] = []
        for d in drawn:
            if self.hides_position(shoe_id, int(d["position"])):
                out.append({**d, "card": None, HIDDEN_MARK: ["card"]})
            else:
                out.append(d)
        return out


NOTHING: Final = Secrets()


def _hide(event: Json, part: str, names: Iterable[str]) -> Json:
    inner = dict(event[part])
    hidden = [n for n in names if inner.get(n) is not None]
    for n in hidden:
        inner[n] = None
    return {**event, part: inner, HIDDEN_MARK: hidden}


def _name(e: Any) -> str:
    return type(e).__qualname__.rpartition(".")[2]


def round_secrets(events: Iterable[Any], shoe_id: UUID | None) -> Secrets:
    """What a round hides now, from its events in order (a ``Round``'s stream, or a boundless
    round's shared hand; participation events never carry the dealer's cards).

    Each event needs ``originator_id``, ``originator_version`` and its payload attributes."""
    dealt: Any = None
    records: set[tuple[UUID, int]] = set()
    positions: set[int] = set()
    for e in events:
        name = _name(e)
        if name in REVEALING:
            return NOTHING
        if name == "CardDealt":
            dealt = e
            continue
        if name == "CardToDealer" and not e.face_up and dealt is not None:
            records.add((_uuid(dealt.originator_id), int(dealt.originator_version)))
            records.add((_uuid(e.originator_id), int(e.originator_version)))
            if dealt.shoe_position is not None:
                positions.add(int(dealt.shoe_position))
        dealt = None
    if not records:
        return NOTHING
    shoe = {shoe_id: frozenset(positions)} if shoe_id is not None and positions else {}
    return Secrets(frozenset(records), shoe)


def shoe_secrets(shoe_id: UUID, *, kind: str, retired: bool, order_known: bool) -> Secrets:
    """What a shoe itself hides: a test shoe's stacked order until it retires."""
    if kind == "test" and not retired and order_known:
        return Secrets(orders=frozenset({shoe_id}))
    return NOTHING


def finished(events: Iterable[Any]) -> bool:
    return any(_name(e) in FINISHING for e in events)


def _uuid(value: Any) -> UUID:
    return value if isinstance(value, UUID) else UUID(str(value))


__all__ = [
    "HIDDEN_MARK",
    "NOTHING",
    "Secrets",
    "finished",
    "round_secrets",
    "shoe_secrets",
]
