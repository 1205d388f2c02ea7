"""The game core's shortcuts of branch corecpu3 against the plain readings they stand for.

* ``scoring.score`` (one loop over the cards) and ``scoring.is_blackjack`` (two cards read
  once) give what SCORE-1..4 say, computed plainly from each card's value, for any cards;
* ``table_state.evolve`` looks a fact's name up once in one table: every fact of every classic
  recording (pauses, cancellations, timeouts, splits, bets behind, insurance...) and of
  simulated rounds of every classic variant folds into the very state the chain it replaced
  gives (hand facts, then the facts every round records alike, then the table's own);
* ``Decision.add_input`` (what ``commands.record`` calls) makes the fact ``Decision.input``
  makes, payload keys in the same order (the stored JSON is written in that order), and a
  consequence's fact is the named tuple ``Fact`` would make.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.cards import CARD_VALUES, RANKS, SUITS, Card
from domain.game import dealer as D
from domain.game import hands as H
from domain.game import table_state as TS
from domain.game.facts import Decision, Fact
from domain.game.phases import DEALER, SETTLED, seen
from domain.game.state import replace
from domain.rules import VARIANTS
from domain.scoring import is_blackjack, score
from replays.verify import StoreVerifier

RECORDINGS = Path(__file__).resolve().parents[2] / "replays" / "recordings"
CLASSIC = [v for v in VARIANTS if v != "boundless"]
cards_st = st.lists(st.builds(Card, st.sampled_from(RANKS), st.sampled_from(SUITS)), max_size=8)


# ----------------------------------------------------------------------------- scoring
@settings(max_examples=500, deadline=None)
@given(cards=cards_st, as_tuple=st.booleans())
def test_score_is_score_1_and_2_read_plainly(cards: list[Card], as_tuple: bool) -> None:
    hard = sum(CARD_VALUES[c.rank] for c in cards)
    soft = any(c.rank == "A" for c in cards) and hard + 10 <= 21
    total = hard + 10 if soft else hard
    s = score(tuple(cards) if as_tuple else cards)
    assert (s.total, s.soft, s.hard_total, s.bust, s.count) == (
        total,
        soft,
        hard,
        total > 21,
        len(cards),
    )


def _plain_blackjack(cards: list[Card], split: bool) -> bool:
    return (
        not split
        and len(cards) == 2
        and any(c.is_ace for c in cards)
        and any(c.is_ten_value for c in cards)
    )


@settings(max_examples=500, deadline=None)
@given(cards=cards_st, split=st.booleans())
def test_is_blackjack_is_an_ace_and_a_ten_value_as_two_unsplit_cards(
    cards: list[Card], split: bool
) -> None:
    plain = _plain_blackjack(cards, split)
    assert is_blackjack(cards, split=split) is plain
    assert is_blackjack(tuple(cards), split=split) is plain


@pytest.mark.parametrize("split", [False, True])
def test_is_blackjack_on_every_two_ranks(split: bool) -> None:
    for first in RANKS:
        for second in RANKS:
            cards = [Card(first, "S"), Card(second, "H")]
            assert is_blackjack(cards, split=split) is _plain_blackjack(cards, split), cards


# ------------------------------------------------------------------------------ evolve
def _chained(s: TS.TableState, name: str, f: Any) -> TS.TableState:
    """The fold before branch corecpu3: a hand fact, then the facts every round records alike
    (spelled out as they were), then the table's own (``_TABLE_EVOLVE``)."""
    if name in H.HAND_FACTS:
        return replace(s, hands=H.put(s.hands, H.evolve_hand(s.hand(f["hand"]), name, f)))
    if name in D.DEALER_FACTS:
        return replace(s, dealer_hand=D.evolve_dealer(s.dealer_hand, name, f))
    if name == "CardDealt":
        return seen(s, f)
    if name in ("Paused", "Resumed"):
        return replace(seen(s, f), paused=name == "Paused")
    if name == "DealerTurnStarted":
        return replace(s, phase=DEALER)
    if name == "RoundSettled":
        return replace(s, phase=SETTLED)
    handler = TS._TABLE_EVOLVE.get(name)
    return s if handler is None else handler(s, f)


def _recorded_rounds() -> list[list[tuple[str, dict[str, Any]]]]:
    rounds = []
    for path in sorted(RECORDINGS.glob("*.jsonl")):
        if path.name.startswith("boundless"):
            continue
        lines = [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]
        rounds.append(
            [
                (str(x["class"]).rsplit(".", 1)[-1], x["payload"])
                for x in lines
                if x.get("line") == "event"
            ]
        )
    return rounds


def _simulated_rounds() -> list[list[tuple[str, dict[str, Any]]]]:
    app = RoundAudit()
    try:
        for variant in CLASSIC:
            simulate(app, variant=variant, rounds=6, players=3, table=f"c3-{variant}")
        store = app.repository.event_store
        return [
            [(type(e).__name__, dict(e.__dict__)) for e in store.get(rid)]
            for rid in StoreVerifier(app).round_ids()
        ]
    finally:
        app.close()


@pytest.fixture(scope="module")
def rounds() -> list[list[tuple[str, dict[str, Any]]]]:
    return _recorded_rounds() + _simulated_rounds()


def test_the_one_table_names_each_fact_once() -> None:
    from domain.game.phases import ROUND_EVOLVE

    parts = [set(H.HAND_FACTS), set(ROUND_EVOLVE), set(TS._TABLE_EVOLVE)]
    assert sum(len(p) for p in parts) == len(set().union(*parts))
    assert set(TS._EVOLVE) == set().union(*parts)


def test_every_fact_folds_as_the_chain_folded_it(
    rounds: list[list[tuple[str, dict[str, Any]]]],
) -> None:
    names: set[str] = set()
    assert len(rounds) >= 20
    for facts in rounds:
        assert facts[0][0] == "Started"
        fast = slow = TS.started(facts[0][1])
        for i, (name, stored) in enumerate(facts[1:]):
            f = stored
            if "request_id" in f and f["request_id"] is None:
                f = {**f, "request_id": f"rq-{i}"}  # every input's request id kept
            names.add(name)
            fast, slow = TS.evolve(fast, name, f), _chained(slow, name, f)
            assert fast == slow, name
            assert [h.score for h in fast.hands] == [h.score for h in slow.hands]
    # the recordings and the simulations reach every kind of fact the table folds
    for expected in ("CardToHand", "CardToDealer", "HandStood", "HandHit", "HandDoubled"):
        assert expected in names
    for expected in ("Paused", "Resumed", "RoundCancelled", "HandSplit", "WagerSettled"):
        assert expected in names


# ------------------------------------------------------------------------------ facts
def test_add_input_makes_the_fact_input_makes() -> None:
    log: list[tuple[str, dict[str, Any]]] = []

    def evolve(n: int, name: str, fields: Any) -> int:
        log.append((name, dict(fields)))
        return n + 1

    a, b = Decision(0, evolve), Decision(0, evolve)
    actor = {"kind": "player", "id": "ana"}
    a.input("BetPlaced", actor=actor, request_id="r1", client_time="t", player="ana", stake="5")
    b.add_input("BetPlaced", {"player": "ana", "stake": "5"}, actor, "r1", "t")
    assert a.facts == b.facts
    assert list(a.facts[0].fields) == list(b.facts[0].fields)
    assert list(b.facts[0].fields) == [
        "player",
        "stake",
        "actor",
        "request_id",
        "client_time",
    ]
    assert b.facts[0].fields["actor"] == actor
    assert b.facts[0].fields["actor"] is not actor
    assert type(b.facts[0]) is Fact
    assert b.facts[0].input is True
    assert a.state == b.state == 1
    assert log[0] == log[1]


def test_a_consequence_is_the_named_tuple_fact() -> None:
    d = Decision(0, lambda n, name, fields: n + 1)
    d.consequence("HandStood", rule="HAND-1", hand="1", reason="21", total=21)
    fact = d.facts[0]
    assert type(fact) is Fact
    assert fact == Fact("HandStood", dict(fact.fields), False)
    assert (fact.name, fact.input, d.state) == ("HandStood", False, 1)
    assert list(fact.fields) == ["hand", "reason", "total", "rule", "actor"]
