"""``domain.recorder.trigger`` makes what the library's ``@event`` methods make.

Every event of a shoe after its opening (draws, burn, cut card, retirement) and the table's
events are triggered by :func:`trigger`, which builds each event as the library rebuilds a
stored one instead of going through the decorated method. With the clock fixed, the same
commands give the same events (class, ``__dict__``, stored bytes) and the same aggregates as
the library's own path (``_decorated_as_stored`` returning None), a refused command records
nothing either way, and a body that raises leaves the aggregate as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import eventsourcing.domain as domain_module
import pytest
from eventsourcing.domain import Aggregate, event

import domain.recorder as recorder
from domain.application import RoundAudit
from domain.persistence import environment_for
from domain.recorder import trigger
from domain.shoe import Shoe
from domain.shuffle import commitment
from domain.table import Table

FIXED_TIME = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
DECK = ["7S", "AS", "KD", "5H", "9C", "2D", "QS", "3C", "4H", "8D", "6C", "JH", "10S"]


def _live_shoe() -> Shoe:
    shoe = Shoe.open_live(table_id="t", shoe_number=1, decks=1, production=False)
    shoe.burn(card=DECK[0], cards=DECK[1:8])  # 7 shown, 7 burned (SHOE-2)
    shoe.draw(card=DECK[8], round_id="r1")
    shoe.cut_card_out(round_id="r1")
    shoe.draw(card=DECK[9], round_id="r1")
    shoe.retire(reason="end")
    return shoe


def _test_shoe() -> Shoe:
    shoe = Shoe.open_test(
        table_id="t", shoe_number=2, decks=1, order=DECK, production=False, cut_card_at=2
    )
    for _ in range(4):
        shoe.draw(round_id="r2")
    shoe.retire()
    return shoe


def _rng_shoe() -> Shoe:
    seed = bytes(range(32))
    shoe = Shoe.open_rng(
        table_id="t", shoe_number=3, decks=2, production=False, commitment=commitment(seed)
    )
    for _ in range(3):
        shoe.draw(seed=seed, round_id="r3")
    shoe.retire(seed=seed)
    return shoe


def _table() -> Table:
    table = Table.open(table_id="dlx-1", variant="deluxe", production=False)
    table.sit(player="a", seat=1, balance=Decimal(100), account_type="test")
    table.sit(player="b", seat=2, balance=Decimal(100), account_type="test")
    table.sit(player="b", seat=3, balance=Decimal(100), account_type="test")
    table.leave(player="b", seat=3)
    table.begin_round(round_number=1, balances={"a": Decimal(100), "b": Decimal(5)})
    table.bets_closed(round_number=1, seats_with_bets=[1], request_id="c1", client_time=None)
    # DLX-3: seat 2 removed; round 2: c sits and bets, round 3: c bets nothing (DLX-4: kept)
    table.sit(player="c", seat=4, balance=Decimal(100), account_type="test")
    balances = {"a": Decimal(100), "b": Decimal(5), "c": Decimal(100)}
    table.begin_round(round_number=2, balances=balances)
    table.bets_closed(round_number=2, seats_with_bets=[1, 4], request_id=None, client_time=None)
    table.begin_round(round_number=3, balances=balances)
    table.bets_closed(round_number=3, seats_with_bets=[1], request_id=None, client_time=None)
    return table


BUILDERS: list[Callable[[], Aggregate]] = [_live_shoe, _test_shoe, _rng_shoe, _table]
#: The ``@event`` methods each builder's commands trigger the short way: every one but the
#: opening (the burn and the cut card too: SHOE-1, SHOE-2).
SHORT = {
    "_live_shoe": {
        "_burn_card_shown",
        "_card_burned",
        "_card_drawn",
        "_cut_card_came_out",
        "_cut_card_reached",
        "_shoe_retired",
    },
    "_test_shoe": {"_card_drawn", "_cut_card_reached", "_shoe_retired"},
    "_rng_shoe": {"_card_drawn", "_seed_revealed", "_shoe_retired"},
}


def _made(build: Callable[[], Aggregate]) -> tuple[Aggregate, list[Any]]:
    aggregate = build()
    return aggregate, aggregate.collect_events()


@pytest.mark.parametrize("build", BUILDERS, ids=lambda b: b.__name__)
def test_trigger_makes_the_events_and_the_state_the_library_makes(
    build: Callable[[], Aggregate], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(domain_module, "datetime_now_with_tzinfo", lambda: FIXED_TIME)
    taken: list[str] = []
    real = recorder._decorated_as_stored

    def seen(model: type, name: str) -> Any:
        found = real(model, name)
        if found is not None:
            taken.append(name)
        return found

    monkeypatch.setattr(recorder, "_decorated_as_stored", seen)
    ours, our_events = _made(build)
    assert taken  # the short way was taken
    if build.__name__ in SHORT:
        assert set(taken) == SHORT[build.__name__]
    monkeypatch.setattr(recorder, "_decorated_as_stored", lambda model, name: None)
    theirs, their_events = _made(build)

    assert [type(e) for e in our_events] == [type(e) for e in their_events]
    assert [e.__dict__ for e in our_events] == [e.__dict__ for e in their_events]
    mapper = RoundAudit(env=environment_for("sqlite:///:memory:")).mapper
    assert [mapper.to_stored_event(e) for e in our_events] == [
        mapper.to_stored_event(e) for e in their_events
    ]
    assert ours.__dict__.keys() == theirs.__dict__.keys()
    for key, value in ours.__dict__.items():
        if key != "_pending_events":
            assert value == theirs.__dict__[key], key
    # rebuilt from its events, the aggregate is the one the commands left
    rebuilt = None
    for e in our_events:
        rebuilt = e.mutate(rebuilt)
    assert rebuilt is not None
    assert rebuilt.version == ours.version


class _Counter(Aggregate):
    class Added(Aggregate.Event):
        n: int

    @event(Added)
    def _added(self, *, n: int) -> None:
        if n < 0:
            raise ValueError("negative")
        self.total = getattr(self, "total", 0) + n

    class Noted(Aggregate.Event):
        text: str

    @event(Noted)
    def _noted(self, text: str = "x") -> None:  # a default: the library fills it
        self.text = text


def test_a_body_that_raises_leaves_the_aggregate_as_it_was() -> None:
    counter = _Counter()
    trigger(counter, "_added", n=2)
    version, pending = counter.version, list(counter.pending_events)
    with pytest.raises(ValueError, match="negative"):
        trigger(counter, "_added", n=-1)
    assert counter.version == version
    assert counter.pending_events == pending
    assert counter.total == 2


def test_fields_other_than_the_bodys_go_the_librarys_way() -> None:
    counter = _Counter()
    trigger(counter, "_noted")  # the library fills the default
    assert counter.text == "x"
    assert counter.pending_events[-1].text == "x"
    with pytest.raises(TypeError):
        trigger(counter, "_added", n=1, m=2)  # the library refuses an unknown keyword
