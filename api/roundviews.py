"""Round views without the aggregate's fast-forward lock: what ``GET /rounds/{id}`` answers.

Fifty clients reading one round used to go through the library's repository twice a request
(the permission check, then the view), each time fast-forwarding the cached round under the
round's own lock, a store query held inside it: the readers queued on that lock.

:class:`RoundViews` keeps, per round, the view and the round's facts (table, players,
finished: what the permission check needs, ``domain.guarded.RoundFacts``) with the round's
**version**. A request (already authenticated against the store by ``api.auth``):

1. reads the round's last stored version: one indexed query by the round's id (the stored
   record only, nothing decoded, no lock of this process; on PostgreSQL in one statement with
   the key's version, ``api.versions``), so a version recorded by **any** process sharing the
   store is seen at once;
2. when the cache holds that very version: checks the key's permission on the cached facts
   (:meth:`~domain.guarded.GuardedAudit.authorize_facts`, the rule an uncached read applies)
   and answers the cached view;
3. otherwise reads the round as before (:meth:`~domain.guarded.GuardedAudit.round_view`:
   the check, then the view) and keeps the view only when the round's version, read again
   afterwards, has not moved: what is kept is exactly that version's.

What is kept is what an uncached read answers for that version: the round's own picture
(``Round.view``, the same for every key; the hole card hidden until the table turns it,
``domain.disclosure``), so a cached answer shows nothing an uncached one would not, and a
refusal (401, 403, 404) is never cached. Boundless rounds (views built from many aggregates)
are read as before. Steps 1 and 2 are store reads only (:meth:`RoundViews.lookup`), which the
route runs on the event loop where the store allows it (``api.offload``); on PostgreSQL step 1
is read on the loop asynchronously (``api.versions.LoopVersions``) and step 2 decided there
(:meth:`RoundViews.kept`), the rest in a thread-pool trip. At most
:data:`MAX_ROUNDS` rounds are kept (least recently read first out).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Final
from uuid import UUID

from api import versions
from api.versions import NOTHING, Known
from domain.access import Action
from domain.guarded import GuardedAudit, RoundFacts

Json = dict[str, Any]
MAX_ROUNDS: Final = 1024


@dataclass(frozen=True, slots=True)
class Kept:
    version: int
    facts: RoundFacts
    view: Json
    body: bytes


def last_version(audit: GuardedAudit, rid: UUID) -> int | None:
    """The version of the last event stored for ``rid`` (None: nothing stored)."""
    return versions.last_version(audit.app.recorder, rid)


#: What :meth:`RoundViews.lookup` found: None (a round read as before), or the round's last
#: version (None: no such round) and the kept answer at that version (None: not kept).
Lookup = tuple[int | None, bytes | None] | None


class RoundViews:
    """See the module docstring."""

    def __init__(self, maxsize: int = MAX_ROUNDS) -> None:
        self.maxsize = maxsize
        self._kept: OrderedDict[UUID, Kept] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def _get(self, rid: UUID, version: int) -> Kept | None:
        with self._lock:
            kept = self._kept.get(rid)
            if kept is None or kept.version != version:
                return None
            self._kept.move_to_end(rid)
            return kept

    def _put(self, rid: UUID, kept: Kept) -> None:
        with self._lock:
            self._kept[rid] = kept
            self._kept.move_to_end(rid)
            while len(self._kept) > self.maxsize:
                self._kept.popitem(last=False)

    def lookup(self, audit: GuardedAudit, round_id: str, known: Known = NOTHING) -> Lookup:
        """Steps 1 and 2 alone, store reads only: None for a round read as before (an id that
        is not a UUID, a boundless round); else the round's last version and the kept answer
        for ``audit``'s key at that version (None: not kept; a refusal raises as in
        :meth:`view`). ``GET /rounds/{id}`` runs it on the event loop where the store allows
        (``api.offload``), then hands it to :meth:`build` on a miss, which does not read it
        again. The round's version is taken from ``known`` when it holds it (read in one
        round trip with the key's, when the request was served: ``api.versions``)."""
        try:
            rid = UUID(round_id)
        except ValueError:
            return None
        if audit.app.boundless.owns(rid):
            return None
        version = known[rid] if rid in known else last_version(audit, rid)
        return version, self._answer(audit, rid, version)

    def kept(self, audit: GuardedAudit, round_id: str, known: Known) -> bytes | None:
        """Step 2 alone, with no store read: the kept answer for ``audit``'s key when the
        round is kept at the version ``known`` holds for it (read when the request was served,
        ``api.versions.LoopVersions``); None for anything else, which :meth:`view` answers (a
        refusal on the kept facts raises as there). For a caller on the event loop: a kept
        round is never a boundless one, so nothing else is read to know it."""
        try:
            rid = UUID(round_id)
        except ValueError:
            return None
        return self._answer(audit, rid, known[rid]) if rid in known else None

    def _answer(self, audit: GuardedAudit, rid: UUID, version: int | None) -> bytes | None:
        kept = self._get(rid, version) if version is not None else None
        if kept is None:
            return None
        self.hits += 1  # a refusal below is decided on the kept facts too
        audit.authorize_facts(Action.ROUND_READ, kept.facts)
        return kept.body

    def view(
        self, audit: GuardedAudit, round_id: str, render: Any, known: Known = NOTHING
    ) -> bytes:
        """The view of round ``round_id`` for ``audit``'s key, as ``render`` encodes it."""
        return self.build(audit, round_id, render, self.lookup(audit, round_id, known))

    def build(self, audit: GuardedAudit, round_id: str, render: Any, found: Lookup) -> bytes:
        """:meth:`view` after its :meth:`lookup` (``found``): the kept answer, or the view made
        (and kept when the round did not move meanwhile)."""
        if found is None:
            return bytes(render(audit.round_view(round_id)))
        before, body = found
        if body is not None:
            return body
        rid = UUID(round_id)
        self.misses += 1
        view = audit.round_view(round_id)  # the check, then the view (raises on a refusal)
        body = bytes(render(view))
        facts = audit.round_facts(rid)
        if before is not None and last_version(audit, rid) == before:
            self._put(rid, Kept(before, facts, view, body))
        return body


__all__ = ["MAX_ROUNDS", "RoundViews", "last_version"]
