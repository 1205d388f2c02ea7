"""A shoe's facts (``replays.verify.shoe_facts``, counted in a plain dict since branch
``vcore2``): a card leaving the shoe more often than its decks hold is a SHOE-3 problem at each
draw beyond them, with the count so far; a position drawn twice keeps its first draw (the one a
round's card is checked against) and is a position problem."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from domain.shoe import Shoe
from replays.bundle import Decoded
from replays.chain import Record
from replays.verify import shoe_facts

SHOE = UUID(int=77)


def _event(cls: type, version: int, **fields: Any) -> Decoded:
    e = object.__new__(cls)
    e.__dict__.update(originator_id=SHOE, originator_version=version, **fields)
    return Decoded(Record(SHOE, version, f"domain.shoe:Shoe.{cls.__name__}", b"{}"), e)


def _shoe(cards: list[tuple[int, str]]) -> list[Decoded]:
    opened = _event(
        Shoe.Opened,
        1,
        table_id="t",
        shoe_number=1,
        kind="live",
        decks=1,
        production=True,
        burn_procedure=False,
        cut_card_at=None,
        algorithm=None,
        commitment=None,
        order=None,
        test=False,
        actor={},
    )
    draws = [
        _event(
            Shoe.CardDrawn,
            v,
            position=p,
            card=c,
            purpose="deal",
            round_id="r",
            kind="live",
            test=False,
            actor={},
            request_id=None,
            client_time=None,
        )
        for v, (p, c) in enumerate(cards, start=2)
    ]
    return [opened, *draws]


def test_a_card_beyond_its_decks_is_found_at_each_draw_with_its_count() -> None:
    f = shoe_facts(SHOE, _shoe([(0, "AS"), (1, "KD"), (2, "AS"), (3, "AS"), (4, "2C")]))
    found = [(x.shoe_position, x.field, x.recorded, x.rule) for x in f.problems]
    assert found == [(2, "card", 2, "SHOE-3"), (3, "card", 3, "SHOE-3")]
    assert [x.message for x in f.problems] == [
        "AS has left the shoe 2 times; 1 deck(s) hold 1",
        "AS has left the shoe 3 times; 1 deck(s) hold 1",
    ]
    assert [(p, d.card) for p, d in sorted(f.draws.items())] == [
        (0, "AS"),
        (1, "KD"),
        (2, "AS"),
        (3, "AS"),
        (4, "2C"),
    ]


def test_a_position_drawn_twice_keeps_its_first_draw() -> None:
    f = shoe_facts(SHOE, _shoe([(0, "AS"), (1, "KD"), (1, "QH")]))
    assert f.draws[1].card == "KD"
    assert [(x.field, x.expected, x.recorded) for x in f.problems] == [("position", 2, 1)]
    assert [(p, d.card) for p, d in sorted(f.draws.items())] == [(0, "AS"), (1, "KD")]
