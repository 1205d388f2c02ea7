"""RoundAudit's rounds in play and what they hide: which rounds draw from a shoe and are not
finished (a shoe in use is not retired), and what the table has not shown yet (a hole card, a
test shoe's order, an RNG seed: ``domain.disclosure``), worked out for the read routes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from domain.disclosure import NOTHING, Secrets, finished, round_secrets, shoe_secrets
from domain.errors import RoundNotFound, ShoeNotFound
from domain.services.base import AuditBase, uuid_of, uuid_or_none
from domain.shoe import Shoe

_FINISHED_CACHE = 100_000


class InPlay(AuditBase):
    """The rounds in play (by the shoe -> rounds index each round's first save writes:
    ``domain.side_rows``), and their secrets."""

    def _round_stream(self, rid: UUID) -> list[Any]:
        """The events that say whether a round is finished and what its dealer holds: a
        Round's stream, or a boundless round's shared hand. A record that no longer decodes
        (a damaged store, which verification reports) is left out."""
        out: list[Any] = []
        for stored in self.recorder.select_events(rid):
            try:
                out.append(self.mapper.to_domain_event(stored))
            except Exception:  # noqa: S112 (any decoding failure: the record is skipped)
                continue
        return out

    def rounds_in_play(self, shoe: Shoe) -> list[UUID]:
        """The rounds started on ``shoe`` (or drawing from it) that are not finished."""
        ids = [UUID(bytes=bytes(s.state)) for s in self._shoe_rounds.select_events(shoe.id)]
        ids += [UUID(d.round_id) for d in shoe.drawn if d.round_id]
        out: list[UUID] = []
        for rid in dict.fromkeys(ids):
            if rid in self._finished:
                continue
            events = self._round_stream(rid)
            if not events or finished(events):
                self._remember_finished(rid, events)
                continue
            out.append(rid)
        return out

    def _remember_finished(self, rid: UUID, events: Sequence[Any]) -> None:
        started = events[0] if events else None
        self._finished_on(rid, uuid_or_none(getattr(started, "shoe_id", None)))

    def _finished_on(self, rid: UUID, shoe_id: UUID | None) -> None:
        """Round ``rid`` (of shoe ``shoe_id``) is finished in the store: it never changes back,
        so a shoe's rounds in play need not read it again (a command that finishes a round
        says so once its save has committed: ``Rounds._run``)."""
        if len(self._finished) >= _FINISHED_CACHE:
            self._finished.clear()
        self._finished[rid] = shoe_id

    def shoe_secrets(self, shoe: Shoe) -> Secrets:
        """What ``shoe`` hides now: a test shoe's order until it retires, and the face-down
        cards of the rounds in play that drew from it (``domain.disclosure``)."""
        out = shoe_secrets(
            shoe.id, kind=shoe.kind, retired=shoe.retired, order_known=shoe.kind == "test"
        )
        for rid in self.rounds_in_play(shoe):
            events = self._round_stream(rid)
            out = out.merge(round_secrets(events, shoe.id))
        return out

    def round_secrets(self, round_id: str | UUID) -> Secrets:
        """What round ``round_id`` hides now (its hole card while in play), and what its shoe
        hides (a test shoe's order, other rounds' face-down cards)."""
        rid = uuid_of(round_id, RoundNotFound)
        if rid in self._finished:
            own, shoe_id = NOTHING, self._finished[rid]
        else:
            events = self._round_stream(rid)
            if not events:
                return NOTHING
            shoe_id = uuid_or_none(getattr(events[0], "shoe_id", None))
            own = round_secrets(events, shoe_id)
            if finished(events):
                self._remember_finished(rid, events)
        if shoe_id is None:
            return own
        try:
            shoe = self.shoe(shoe_id)
        except ShoeNotFound:
            return own
        return own.merge(self.shoe_secrets(shoe))


__all__ = ["InPlay"]
