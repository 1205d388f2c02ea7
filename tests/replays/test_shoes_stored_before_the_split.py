"""Shoes stored before ``domain/shoe.py`` was split (its opening commands and their checks moved
to ``domain/shoe_opening.py``) still load, re-record and verify with today's code.

The store ``tests/fixtures/store-shoes-11204d1.db.gz`` was written once by the code on ``main``
at ``11204d1`` (``tests/fixtures/make-store/shoes.py``, see the fixtures' README): rng shoes with
and without the burn, with a cut card reached in the burn, live and test shoes, a dealer's cut
card, every shoe retired (an rng shoe's seed revealed), and the rounds dealt from them. Every
stored shoe event names the class it names today (``domain.shoe:Shoe.CardDrawn``, the
aggregate's own topic ``domain.shoe:Shoe`` in ``Opened``); every shoe, rebuilt from its stored
events, has the state the same inputs give today's commands, and those commands record the
very bytes stored (the time aside: each new event takes the stored one's); every round dealt
from those shoes verifies (the shoe check included), and every rng shoe re-derives its cards
from its revealed seed.
"""

from __future__ import annotations

import dataclasses
import gzip
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import get_topic, resolve_topic

from domain.application import RoundAudit
from domain.persistence import environment_for
from domain.shoe import Shoe
from replays.verify import StoreVerifier

STORE = Path(__file__).resolve().parents[1] / "fixtures" / "store-shoes-11204d1.db.gz"
EVENTS = (
    "Opened",
    "CardDrawn",
    "BurnCardShown",
    "CardBurned",
    "CutCardCameOut",
    "CutCardReached",
    "SeedRevealed",
    "Retired",
)
#: The library's attributes of an aggregate; every other one is the shoe's record.
_LIBRARY = {"_id", "_version", "_created_on", "_modified_on", "_pending_events"}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RoundAudit]:
    path = tmp_path_factory.mktemp("shoes-store") / "store.db"
    with gzip.open(STORE, "rb") as src, path.open("wb") as out:
        shutil.copyfileobj(src, out)
    app = RoundAudit(env=environment_for(f"sqlite:///{path}", create_table=False))
    yield app
    app.close()


def _shoe(app: RoundAudit, sid: UUID) -> Shoe:
    shoe: Shoe = app.repository.get(sid)
    return shoe


@pytest.fixture(scope="module")
def stored(app: RoundAudit) -> dict[UUID, list[StoredEvent]]:
    """Every shoe's stored events, in order."""
    shoes: dict[UUID, list[StoredEvent]] = {}
    for n in app.recorder.select_notifications(start=1, limit=1_000_000):
        if n.topic.startswith("domain.shoe"):
            shoes.setdefault(UUID(str(n.originator_id)), []).append(n)
    return shoes


def test_the_store_holds_every_kind_of_shoe_and_every_shoe_event(
    app: RoundAudit, stored: dict[UUID, list[StoredEvent]]
) -> None:
    topics = {e.topic for events in stored.values() for e in events}
    assert topics == {f"domain.shoe:Shoe.{name}" for name in EVENTS}
    kinds = {_shoe(app, sid).kind for sid in stored}
    assert kinds == {"rng", "live", "test"}


def test_every_stored_topic_names_todays_class(stored: dict[UUID, list[StoredEvent]]) -> None:
    for events in stored.values():
        for e in events:
            name = e.topic.partition(":Shoe.")[2]
            assert resolve_topic(e.topic) is getattr(Shoe, name)
            assert get_topic(getattr(Shoe, name)) == e.topic
    assert get_topic(Shoe) == "domain.shoe:Shoe"


def _rerecorded(app: RoundAudit, events: list[Any]) -> Shoe:
    """A new shoe given the inputs of a stored shoe's events, through today's commands."""
    opened, *rest = events
    seed = next((bytes.fromhex(e.seed) for e in rest if isinstance(e, Shoe.SeedRevealed)), None)
    live = opened.kind == "live"
    ids = {"actor": opened.actor, "request_id": opened.request_id}
    ids["client_time"] = opened.client_time
    common = {"table_id": opened.table_id, "shoe_number": opened.shoe_number}
    common |= {"decks": opened.decks, "production": opened.production}
    common["burn_procedure"] = opened.burn_procedure
    if opened.kind == "rng":
        shoe = Shoe.open_rng(
            commitment=opened.commitment,
            cut_card_at=opened.cut_card_at,
            algorithm=opened.algorithm,
            **common,
            **ids,
        )
    elif live:
        shoe = Shoe.open_live(**common, **ids)
    else:
        shoe = Shoe.open_test(order=opened.order, cut_card_at=opened.cut_card_at, **common, **ids)
    for i, e in enumerate(rest):
        ids = {"actor": e.actor}
        if not isinstance(e, Shoe.CutCardReached):
            ids |= {"request_id": e.request_id, "client_time": e.client_time}
        if isinstance(e, Shoe.CardDrawn):
            card = e.card if live else None
            shoe.draw(purpose=e.purpose, seed=seed, card=card, round_id=e.round_id, **ids)
        elif isinstance(e, Shoe.BurnCardShown):
            burned = [b.card for b in rest[i + 1 :] if isinstance(b, Shoe.CardBurned)]
            assert len(burned) == e.burn_count
            shown = e.card if live else None
            shoe.burn(seed=seed, card=shown, cards=burned if live else None, **ids)
        elif isinstance(e, Shoe.CutCardCameOut):
            shoe.cut_card_out(e.round_id, **ids)
        elif isinstance(e, Shoe.Retired):
            shoe.retire(seed=seed, reason=e.reason, **ids)
        # CardBurned, CutCardReached and SeedRevealed are made by the commands above
    return shoe


def test_every_stored_shoe_loads_and_is_re_recorded_to_the_same_bytes(
    app: RoundAudit, stored: dict[UUID, list[StoredEvent]]
) -> None:
    for sid, records in stored.items():
        events: list[Any] = [app.mapper.to_domain_event(r) for r in records]
        loaded = _shoe(app, sid)
        assert loaded.version == len(records)
        assert loaded.retired
        fresh = _rerecorded(app, events)
        made: list[Any] = list(fresh.collect_events())
        assert len(made) == len(records)
        for new, old, was in zip(made, records, events, strict=True):
            timed = dataclasses.replace(new, timestamp=was.timestamp)
            again = app.mapper.to_stored_event(timed)
            assert (again.topic, again.originator_version) == (old.topic, old.originator_version)
            assert again.state == old.state, old.topic
        state = {k: v for k, v in vars(loaded).items() if k not in _LIBRARY}
        assert state == {k: v for k, v in vars(fresh).items() if k not in _LIBRARY}
        if loaded.kind == "rng":
            assert loaded.verify() == []


def test_every_round_dealt_from_the_stored_shoes_verifies(app: RoundAudit) -> None:
    verifier = StoreVerifier(app)
    ids = verifier.round_ids()
    assert len(ids) == 10  # deluxe 6, european 3, the cancelled multihand round
    for verdict in verifier.verify_many(ids):
        assert verdict.ok, verdict.as_json()["discrepancies"][:2]
        assert {"reexecution", "shoe", "commit"} <= set(verdict.checks), verdict.checks
