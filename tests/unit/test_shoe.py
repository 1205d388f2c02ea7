"""The Shoe aggregate (SHOE-1..3): rng, live and test shoes.

Given/when/then: build the history, discard its events (collect_events), then assert only on the
events the command under test records. A refused command records nothing: same version, no
pending events.
"""

from __future__ import annotations

import doctest
import functools
import json
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from eventsourcing.application import Application
from hypothesis import given, settings
from hypothesis import strategies as st

import domain.shoe
import domain.shoe_record
from domain.cards import RANKS, Card, decks
from domain.errors import (
    CardAccountingError,
    DomainError,
    InvalidCard,
    InvalidSeed,
    InvalidShoe,
    ProductionRefusesTestShoe,
    ShoeExhausted,
    ShoeRetired,
    WrongBurnCount,
    WrongOrder,
)
from domain.events import Consequence, Input, actor, event_kind
from domain.ids import ROUNDAUDIT_NAMESPACE
from domain.shoe import DrawnCard, Shoe, burn_count
from domain.shuffle import commitment, new_seed, shuffled_order, verify_order

DEALER = actor("dealer", "d-17")


# ----------------------------------------------------------------------------- helpers


def rng_shoe(
    seed: bytes, *, decks_: int = 8, burn: bool = False, cut_card_at: int | None = None
) -> Shoe:
    return Shoe.open_rng(
        table_id="T1",
        shoe_number=1,
        decks=decks_,
        commitment=commitment(seed),
        production=True,
        burn_procedure=burn,
        cut_card_at=cut_card_at,
    )


def live_shoe(*, decks_: int = 8, burn: bool = True) -> Shoe:
    return Shoe.open_live(
        table_id="LIVE1", shoe_number=7, decks=decks_, production=True, burn_procedure=burn
    )


def stacked_shoe(
    order: list[str], *, decks_: int = 1, burn: bool = False, cut_card_at: int | None = None
) -> Shoe:
    return Shoe.open_test(
        table_id="DEV1",
        shoe_number=1,
        decks=decks_,
        order=order,
        production=False,
        burn_procedure=burn,
        cut_card_at=cut_card_at,
    )


def fillers(n: int, *, avoid: str = "") -> list[str]:
    """``n`` distinct card codes from one deck, skipping ``avoid``."""
    return [c.code for c in decks(1) if c.code != avoid][:n]


def refused(shoe: Shoe, error: type[DomainError], command: Callable[[], object]) -> DomainError:
    """Run a command that must be refused with ``error`` and must record nothing."""
    version = shoe.version
    pending = len(shoe.pending_events)
    state = dict(vars(shoe))
    with pytest.raises(error) as info:
        command()
    assert shoe.version == version
    assert len(shoe.pending_events) == pending
    assert dict(vars(shoe)) == state
    return info.value


def names(events: Any) -> list[str]:
    return [type(e).__name__ for e in events]


def payloads(events: Any) -> Iterator[dict[str, Any]]:
    for e in events:
        yield {k: v for k, v in vars(e).items() if k not in ("originator_id", "timestamp")}


# ----------------------------------------------------------------------------- basics


@pytest.mark.parametrize("module", [domain.shoe, domain.shoe_record], ids=lambda m: m.__name__)
def test_doctests_pass(module: Any) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0


def test_create_id_is_uuid5_of_table_and_shoe_number() -> None:
    seed = new_seed()
    shoe = rng_shoe(seed)
    assert shoe.id == uuid.uuid5(ROUNDAUDIT_NAMESPACE, "shoe:T1:1")
    assert Shoe.create_id("T1", 1) == shoe.id
    assert Shoe.create_id("T1", 2) != shoe.id


def test_every_event_is_an_input_or_a_consequence_with_a_rule() -> None:
    seed = new_seed()
    shoe = rng_shoe(seed, decks_=1, burn=True, cut_card_at=20)
    shoe.burn(seed=seed)
    while not shoe.is_last_round:
        shoe.draw(seed=seed, round_id="r1")
    shoe.retire(seed=seed)
    live = live_shoe()
    live.burn(card="2S", cards=["3S", "4S"])
    live.cut_card_out("r9", actor=DEALER)
    live.retire()
    events: list[Any] = [*shoe.collect_events(), *live.collect_events()]

    assert set(names(events)) == {
        "Opened",
        "BurnCardShown",
        "CardBurned",
        "CardDrawn",
        "CutCardCameOut",
        "CutCardReached",
        "SeedRevealed",
        "Retired",
    }
    for e in events:
        assert event_kind(e) in ("input", "consequence")
        assert isinstance(e.actor, dict)
        assert e.test is False
        if isinstance(e, Consequence):
            assert vars(e)["rule"].startswith("SHOE-")
        if isinstance(e, Input):
            assert "request_id" in vars(e)
            assert "client_time" in vars(e)
        json.dumps({k: v for k, v in vars(e).items() if k not in ("originator_id", "timestamp")})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"decks": 0}, "decks"),
        ({"shoe_number": 0}, "shoe number"),
        ({"table_id": "a:b"}, "table id"),
        ({"commitment": "nothex"}, "commitment"),
        ({"algorithm": "mersenne"}, "algorithm"),
        ({"cut_card_at": 52}, "cut_card_at"),
        ({"cut_card_at": 0}, "cut_card_at"),
    ],
)
def test_invalid_rng_shoe_parameters_are_refused(kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {
        "table_id": "T1",
        "shoe_number": 1,
        "decks": 1,
        "commitment": commitment(new_seed()),
        "production": True,
    }
    with pytest.raises(InvalidShoe, match=message):
        Shoe.open_rng(**{**args, **kwargs})


# ----------------------------------------------------------------------------- rng shoes


def test_rng_draw_follows_the_shuffle_of_the_vault_seed() -> None:
    seed = new_seed()
    shoe = rng_shoe(seed, decks_=2)
    order = shuffled_order(seed, 2)

    cards = [shoe.draw(seed=seed, round_id="r1") for _ in range(10)]

    assert cards == list(order[:10])
    assert shoe.position == 10
    assert shoe.remaining == 94
    assert shoe.drawn[3] == DrawnCard(3, order[3].code, "deal", "r1")
    assert shoe.accounting() == dict(Counter(c.code for c in order[:10]))


def test_rng_shoe_records_only_the_commitment_until_retirement() -> None:
    seed = new_seed()
    shoe = rng_shoe(seed, decks_=1, cut_card_at=5)
    for _ in range(8):
        shoe.draw(seed=seed, round_id="r1")
    before = json.dumps(list(payloads(shoe.collect_events())), default=str)

    assert seed.hex() not in before
    assert commitment(seed) in before

    shoe.retire(seed=seed)
    revealed, retired = shoe.collect_events()
    assert isinstance(revealed, Shoe.SeedRevealed)
    assert revealed.seed == seed.hex()
    assert revealed.commitment == commitment(seed)
    assert isinstance(retired, Shoe.Retired)
    assert retired.position == 8
    assert shoe.revealed_seed == seed.hex()


def test_rng_draw_with_a_seed_that_does_not_match_the_commitment_is_refused() -> None:
    seed = new_seed()
    shoe = rng_shoe(seed)
    shoe.collect_events()

    error = refused(shoe, InvalidSeed, lambda: shoe.draw(seed=new_seed()))
    assert "commitment" in error.message
    refused(shoe, InvalidSeed, shoe.draw)
    assert shoe.position == 0


def test_rng_draw_with_a_reader_card_that_differs_is_refused_never_naming_the_next_card() -> None:
    seed = new_seed()
    shoe = rng_shoe(seed)
    first = shuffled_order(seed, 8)[0]
    other = "AS" if first.code != "AS" else "KD"

    error = refused(shoe, WrongOrder, lambda: shoe.draw(seed=seed, card=other))

    assert first.code not in error.message  # a card not dealt yet is never told
    assert other in error.message
    assert error.rule == "SHOE-3"
    assert shoe.draw(seed=seed, card=first.code) == first


def test_shoe_3_revealed_seed_reproduces_every_dealt_and_burned_card() -> None:
    seed = new_seed()
    shoe = rng_shoe(seed, decks_=6, burn=True, cut_card_at=60)
    shoe.burn(seed=seed)
    rounds = 0
    while not shoe.is_last_round:
        rounds += 1
        for _ in range(5):
            shoe.draw(seed=seed, round_id=f"r{rounds}")
    shoe.retire(seed=seed)
    events = shoe.collect_events()
    revealed = next(e for e in events if isinstance(e, Shoe.SeedRevealed))
    opened = events[0]
    assert isinstance(opened, Shoe.Opened)
    assert opened.commitment is not None
    record = [
        (e.position, e.card)
        for e in events
        if isinstance(e, Shoe.CardDrawn | Shoe.BurnCardShown | Shoe.CardBurned)
    ]

    assert len(record) == shoe.position > 60
    assert verify_order(opened.commitment, bytes.fromhex(revealed.seed), 6, record) == []
    assert shoe.verify() == []


def test_shoe_3_tampered_recorded_card_fails_verification_naming_the_position() -> None:
    seed = new_seed()
    shoe = rng_shoe(seed, decks_=1)
    for _ in range(10):
        shoe.draw(seed=seed)
    shoe.retire(seed=seed)
    record = [(d.position, d.card) for d in shoe.drawn]
    record[4] = (4, record[5][1])

    found = verify_order(commitment(seed), seed, 1, record)

    assert [d.position for d in found] == [4]
    assert found[0].recorded == record[5][1]


def test_rng_retire_must_reveal_the_committed_seed() -> None:
    seed = new_seed()
    shoe = rng_shoe(seed)
    shoe.collect_events()

    refused(shoe, InvalidSeed, shoe.retire)
    refused(shoe, InvalidSeed, lambda: shoe.retire(seed=new_seed()))
    assert not shoe.retired
    shoe.retire(seed=seed)
    assert shoe.retired


def test_shoe_3_rng_shoe_runs_out_after_all_its_cards() -> None:
    seed = new_seed()
    shoe = rng_shoe(seed, decks_=1)
    dealt = [shoe.draw(seed=seed) for _ in range(52)]
    assert Counter(dealt) == Counter(decks(1))

    refused(shoe, ShoeExhausted, lambda: shoe.draw(seed=seed))


# ----------------------------------------------------------------------------- SHOE-2 burn


def test_shoe_2_burn_count_helper_for_every_rank() -> None:
    expected = {"A": 1, "J": 10, "Q": 10, "K": 10} | {str(v): v for v in range(2, 11)}
    assert {rank: burn_count(Card(rank, "S")) for rank in RANKS} == expected


@pytest.mark.parametrize("rank", RANKS)
def test_shoe_2_burn_count_for_every_first_card(rank: str) -> None:
    first = rank + "H"
    rest = fillers(20, avoid=first)
    shoe = stacked_shoe([first, *rest], burn=True)
    shoe.collect_events()
    count = 1 if rank == "A" else 10 if rank in "JQK" else int(rank)

    shown, burned = shoe.burn()

    events: list[Any] = list(shoe.collect_events())
    assert shown == Card.parse(first)
    assert [c.code for c in burned] == rest[:count]
    assert names(events) == ["BurnCardShown"] + ["CardBurned"] * count
    head = events[0]
    assert isinstance(head, Shoe.BurnCardShown)
    assert (head.position, head.card, head.burn_count, head.rule) == (0, first, count, "SHOE-2")
    assert [(e.position, e.card, e.rule) for e in events[1:]] == [
        (i + 1, code, "SHOE-2") for i, code in enumerate(rest[:count])
    ]
    assert shoe.burn_done
    assert shoe.position == 1 + count
    assert shoe.draw() == Card.parse(rest[count])
    assert [d.purpose for d in shoe.drawn] == ["burn-shown"] + ["burn"] * count + ["deal"]


def test_shoe_2_deal_before_the_burn_is_refused() -> None:
    shoe = live_shoe()
    shoe.collect_events()

    error = refused(shoe, WrongOrder, lambda: shoe.draw(card="AS", round_id="r1"))

    assert error.rule == "SHOE-2"


def test_shoe_2_burning_twice_is_refused() -> None:
    shoe = live_shoe()
    shoe.burn(card="AS", cards=["KD"])
    shoe.collect_events()

    error = refused(shoe, WrongOrder, lambda: shoe.burn(card="2C", cards=["3C", "4C"]))

    assert "already burned" in error.message


def test_shoe_2_burn_on_a_shoe_without_the_procedure_is_refused() -> None:
    seed = new_seed()
    shoe = rng_shoe(seed, burn=False)
    refused(shoe, WrongOrder, lambda: shoe.burn(seed=seed))


@pytest.mark.parametrize("given_cards", [[], ["2C"], ["2C", "3C", "4C", "5C"]])
def test_shoe_2_live_burn_needs_exactly_burn_count_cards(given_cards: list[str]) -> None:
    shoe = live_shoe()
    shoe.collect_events()

    error = refused(shoe, WrongBurnCount, lambda: shoe.burn(card="3S", cards=given_cards))

    assert "burns 3 card(s)" in error.message
    assert f"{len(given_cards)} were given" in error.message
    assert not shoe.burn_done


def test_shoe_2_live_burn_without_reader_cards_is_refused() -> None:
    shoe = live_shoe()
    refused(shoe, WrongBurnCount, lambda: shoe.burn(card="3S"))
    # the shoe's kind refuses it (a live shoe deals what the reader read): a 409, SHOE-3
    assert refused(shoe, WrongOrder, lambda: shoe.burn(cards=["2C"])).rule == "SHOE-3"


def test_shoe_2_test_shoe_burn_with_wrong_card_is_refused() -> None:
    shoe = stacked_shoe(["2S", "3S", "4S", "5S"], burn=True)
    error = refused(shoe, WrongOrder, lambda: shoe.burn(card="2S", cards=["3S", "9S"]))
    assert "position 2" in error.message
    assert "9S" in error.message
    assert "4S" not in error.message  # the stacked order stays hidden


# ----------------------------------------------------------------------------- SHOE-1 cut card


def test_shoe_1_cut_card_ends_the_shoe_after_the_current_round() -> None:
    order = fillers(12)
    shoe = stacked_shoe(order, cut_card_at=5)
    for _ in range(4):
        shoe.draw(round_id="r1")
    shoe.draw(round_id="r2")  # position 4
    shoe.collect_events()
    assert not shoe.is_last_round

    shoe.draw(round_id="r2")  # position 5: the cut card comes out before this card

    drawn, reached = shoe.collect_events()
    assert isinstance(drawn, Shoe.CardDrawn)
    assert drawn.position == 5
    assert isinstance(reached, Shoe.CutCardReached)
    assert (reached.position, reached.round_id, reached.rule) == (5, "r2", "SHOE-1")
    assert event_kind(reached) == "consequence"
    assert shoe.is_last_round

    # the round in progress completes; the next round needs a new shoe
    shoe.draw(round_id="r2")
    error = refused(shoe, WrongOrder, lambda: shoe.draw(round_id="r3"))
    assert error.rule == "SHOE-1"

    shoe.retire(reason="cut card round finished")
    assert shoe.retired
    refused(shoe, ShoeRetired, lambda: shoe.draw(round_id="r2"))


def test_shoe_1_rng_cut_card_comes_out_once() -> None:
    seed = new_seed()
    shoe = rng_shoe(seed, decks_=1, cut_card_at=3)
    for _ in range(10):
        shoe.draw(seed=seed, round_id="r1")
    reached = [e for e in shoe.collect_events() if isinstance(e, Shoe.CutCardReached)]
    assert [(e.position, e.round_id) for e in reached] == [(3, "r1")]


def test_shoe_1_live_dealer_signals_the_cut_card() -> None:
    shoe = live_shoe()
    shoe.burn(card="AS", cards=["KD"])
    shoe.draw(card="5H", round_id="r1")
    shoe.collect_events()

    shoe.cut_card_out("r1", actor=DEALER, request_id="req-1", client_time="2024-05-01T10:00:00Z")

    came_out, reached = shoe.collect_events()
    assert isinstance(came_out, Shoe.CutCardCameOut)
    assert event_kind(came_out) == "input"
    assert (came_out.position, came_out.round_id, came_out.actor) == (3, "r1", DEALER)
    assert (came_out.request_id, came_out.client_time) == ("req-1", "2024-05-01T10:00:00Z")
    assert isinstance(reached, Shoe.CutCardReached)
    assert (reached.rule, reached.round_id) == ("SHOE-1", "r1")
    assert shoe.is_last_round
    refused(shoe, WrongOrder, lambda: shoe.cut_card_out("r1"))
    refused(shoe, WrongOrder, lambda: shoe.draw(card="6H", round_id="r2"))
    shoe.draw(card="6H", round_id="r1")
    shoe.retire()
    assert shoe.retired


def test_shoe_1_only_a_live_dealer_signals_the_cut_card() -> None:
    shoe = stacked_shoe(fillers(5))
    refused(shoe, WrongOrder, lambda: shoe.cut_card_out("r1"))


def test_draw_burn_cut_and_retire_after_retirement_are_refused() -> None:
    shoe = live_shoe(burn=False)
    shoe.draw(card="AS")
    shoe.retire()
    shoe.collect_events()

    refused(shoe, ShoeRetired, lambda: shoe.draw(card="KS"))
    refused(shoe, ShoeRetired, lambda: shoe.burn(card="KS", cards=["2S"] * 10))
    refused(shoe, ShoeRetired, lambda: shoe.cut_card_out("r1"))
    refused(shoe, ShoeRetired, shoe.retire)
    assert issubclass(ShoeRetired, WrongOrder)


# ----------------------------------------------------------------------------- SHOE-3 live


def test_shoe_3_live_refuses_the_ninth_ace_of_spades_in_an_8_deck_shoe() -> None:
    shoe = live_shoe(decks_=8, burn=False)
    for _ in range(8):
        shoe.draw(card="AS", round_id="r1")
    shoe.collect_events()
    version = shoe.version

    error = refused(shoe, CardAccountingError, lambda: shoe.draw(card="AS", round_id="r1"))

    assert error.rule == "SHOE-3"
    assert "AS" in error.message
    assert "9th" in error.message
    assert "8 deck(s)" in error.message
    assert shoe.version == version
    assert len(shoe.collect_events()) == 0
    assert shoe.accounting() == {"AS": 8}
    assert shoe.position == 8


def test_shoe_3_live_burn_counts_toward_the_accounting() -> None:
    shoe = live_shoe(decks_=1)
    refused(shoe, CardAccountingError, lambda: shoe.burn(card="2S", cards=["3S", "2S"]))
    shoe.burn(card="2S", cards=["3S", "4S"])
    refused(shoe, CardAccountingError, lambda: shoe.draw(card="4S"))
    assert shoe.accounting() == {"2S": 1, "3S": 1, "4S": 1}


def test_live_draw_needs_a_readable_card() -> None:
    shoe = live_shoe(burn=False)
    assert refused(shoe, WrongOrder, shoe.draw).rule == "SHOE-3"
    refused(shoe, InvalidCard, lambda: shoe.draw(card="1X"))
    refused(shoe, InvalidSeed, lambda: shoe.draw(card="AS", seed=new_seed()))


@settings(max_examples=60, deadline=None)
@given(
    n_decks=st.integers(min_value=1, max_value=2),
    codes=st.lists(st.sampled_from(["AS", "AD", "10H", "KC"]), max_size=12),
)
def test_shoe_3_live_no_card_more_often_than_the_decks_allow(
    n_decks: int, codes: list[str]
) -> None:
    shoe = live_shoe(decks_=n_decks, burn=False)
    accepted: Counter[str] = Counter()
    for code in codes:
        if accepted[code] < n_decks:
            shoe.draw(card=code)
            accepted[code] += 1
        else:
            refused(shoe, CardAccountingError, functools.partial(shoe.draw, card=code))
        assert max(shoe.accounting().values(), default=0) <= n_decks
    assert shoe.accounting() == dict(accepted)


# ----------------------------------------------------------------------------- test shoes


def test_a_test_shoe_on_a_production_table_is_refused() -> None:
    with pytest.raises(ProductionRefusesTestShoe, match="production"):
        Shoe.open_test(table_id="T1", shoe_number=1, decks=8, order=["AS", "KD"], production=True)


def test_shoe_3_test_order_is_refused_when_a_card_exceeds_the_decks() -> None:
    with pytest.raises(CardAccountingError, match="AS 2 times"):
        stacked_shoe(["AS", "KD", "AS"], decks_=1)
    assert stacked_shoe(["AS", "KD", "AS"], decks_=2).size == 3


def test_every_event_of_a_test_shoe_says_test() -> None:
    shoe = stacked_shoe(["2S", "3S", "4S", *fillers(6, avoid="2S")[2:]], burn=True, cut_card_at=4)
    shoe.burn()
    shoe.draw(round_id="r1")
    shoe.draw(round_id="r1")
    shoe.retire()
    events: list[Any] = list(shoe.collect_events())

    assert "CutCardReached" in names(events)
    assert all(e.test is True for e in events)
    opened = events[0]
    assert isinstance(opened, Shoe.Opened)
    assert opened.order is not None
    assert opened.order[:3] == ["2S", "3S", "4S"]
    assert opened.commitment is None


def test_test_shoe_deals_its_order_and_refuses_another_card_naming_only_the_given_one() -> None:
    shoe = stacked_shoe(["10H", "AS", "KD"])
    assert shoe.draw(card="10H") == Card("10", "H")

    error = refused(shoe, WrongOrder, lambda: shoe.draw(card="QS"))

    assert "AS" not in error.message  # the next card of the stacked order stays hidden
    assert "QS" in error.message
    assert shoe.draw() == Card("A", "S")
    assert shoe.draw() == Card("K", "D")
    refused(shoe, ShoeExhausted, shoe.draw)


def test_draw_purposes_of_the_burn_are_reserved() -> None:
    shoe = stacked_shoe(fillers(3))
    refused(shoe, WrongOrder, lambda: shoe.draw(purpose="burn"))
    refused(shoe, InvalidShoe, lambda: shoe.draw(purpose=""))


# ----------------------------------------------------------------------------- replay


def test_a_shoe_rebuilt_from_its_stored_events_equals_the_live_one() -> None:
    seed = new_seed()
    shoe = rng_shoe(seed, decks_=2, burn=True, cut_card_at=30)
    shoe.burn(seed=seed)
    rounds = 0
    while not shoe.is_last_round:
        rounds += 1
        for _ in range(4):
            shoe.draw(seed=seed, round_id=f"r{rounds}", actor=DEALER, request_id=f"q{rounds}")
    shoe.retire(seed=seed)
    app: Application[uuid.UUID] = Application()
    app.save(shoe)

    rebuilt: Shoe = app.repository.get(shoe.id)

    assert isinstance(rebuilt, Shoe)
    assert rebuilt == shoe
    assert rebuilt.version == shoe.version
    assert rebuilt.position == shoe.position
    assert rebuilt.drawn == shoe.drawn
    assert rebuilt.accounting() == shoe.accounting()
    assert rebuilt.is_last_round
    assert rebuilt.retired
    assert rebuilt.last_round_id == shoe.last_round_id
    assert rebuilt.verify() == []


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_replay_equals_live_state_for_any_live_sequence(data: st.DataObject) -> None:
    pool = [c.code for c in decks(1)]
    codes = data.draw(st.lists(st.sampled_from(pool), unique=True, min_size=1, max_size=20))
    shoe = live_shoe(decks_=1, burn=False)
    for i, code in enumerate(codes):
        shoe.draw(card=code, round_id=f"r{i // 5}")
    app: Application[uuid.UUID] = Application()
    app.save(shoe)

    rebuilt: Shoe = app.repository.get(shoe.id)

    assert rebuilt == shoe
    assert [d.card for d in rebuilt.drawn] == codes
