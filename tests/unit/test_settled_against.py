"""A boundless round's settlement made once a round where every player's is the same (branch
bver8): ``domain.game.settlement.SettledAgainst`` keeps the dealer's score and blackjack and
each side bet kind's outcome and paytable text for every wager settled against the same shared
initial hand and dealer's hand (BDL-1, BDL-3; BDL-PAIR, BDL-BUST, BDL-TRIO, BDL-POKER). Since
branch bver9 the round's engine holds it (``domain.game.player.settle_step``: the settle step
every player of the round is given, no module-level memo), and ``_settle`` takes it only when
it was made of the very cards and rules it settles against.

* At random (hypothesis): shared cards, a dealer's final hand, players with a main bet or
  none, side bets of every kind and stakes of their own, some hands played on: every
  player's settlement through the participation's decider (the round's settle step, and a
  stale one made of another round's cards) is
  fact for fact the one ``settle_all`` makes without it, and so is a second round's with other
  cards right after (nothing of the first round's kept); each fact's paytable is its own dict.
* ``decisions.cost`` sums a hand's stake only for a double, the same as before for every
  action.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.cards import RANKS, SUITS, Card
from domain.game import decisions, play
from domain.game import player as P
from domain.game import sequence as Q
from domain.game import settlement as S
from domain.game.commands import Step
from domain.game.dealer import DealerHand
from domain.game.facts import Decision
from domain.game.phases import DEALER, opening
from domain.game.shared import SharedState
from domain.game.state import replace
from domain.game.wagers import Wager, hand_stake
from domain.rules import get_rules

RULES = get_rules("boundless")
SIDES = sorted(RULES.side_bets)
CARDS = [Card(r, s) for r in RANKS for s in SUITS]

card = st.sampled_from(CARDS)
stake = st.sampled_from(["1.00", "2.50", "5.00", "10.00", "25.00"]).map(Decimal)


def _shared(initial: tuple[Card, ...], dealer: tuple[Card, ...]) -> SharedState:
    """A boundless round's shared hand in the dealer's phase, the dealer's hand final."""
    f = {
        "table_id": "t",
        "round_number": 1,
        "rules_key": RULES.key,
        "shoe_id": "s",
        "shoe_round": 1,
        "production": False,
    }
    s = SharedState(**opening(f))
    final = DealerHand(cards=dealer, hole_revealed=True, final=True)
    return replace(s, phase=DEALER, initial=initial, dealer_hand=final)


def _player(
    name: str, initial: tuple[Card, ...], main: Decimal | None, sides: dict[str, Decimal]
) -> P.PlayerState:
    wagers: dict[str, Wager] = {}
    if main is not None:
        wagers[f"{name}:main"] = Wager(f"{name}:main", name, "main", main, name, name)
    for kind, amount in sides.items():
        wid = f"{name}:{kind}:{name}"
        wagers[wid] = Wager(wid, name, kind, amount, name, None)
    hands = Q.opened(name, initial) if main is not None else None
    return P.PlayerState(
        rules=RULES,
        round_id="r",
        table_id="t",
        round_number=1,
        player=name,
        rules_key=RULES.key,
        shoe_round=1,
        wagers=wagers,
        hands=hands,
    )


def _by_hand(
    state: P.PlayerState, shared: SharedState
) -> tuple[list[tuple[str, dict[str, Any]]], P.PlayerState]:
    """The settlement ``settle_all`` makes on its own (no ``SettledAgainst`` given): its facts
    and the state they leave."""
    d = Decision(state, P.evolve)
    hands = state.hands
    S.settle_all(
        d,
        list(state.wagers.values()),
        hand=lambda hand_id: P._hand_of(hands, hand_id),
        dealer=shared.dealer,
        first_cards=lambda w: shared.initial,
        rules=state.rules,
    )
    return [(f.name, f.fields) for f in d.facts], d.state


players = st.lists(
    st.tuples(
        st.one_of(st.none(), stake),
        st.dictionaries(st.sampled_from(SIDES), stake, max_size=len(SIDES)),
    ),
    min_size=1,
    max_size=6,
)
hand_cards = st.lists(card, min_size=2, max_size=2).map(tuple)
dealer_cards = st.lists(card, min_size=2, max_size=6).map(tuple)


@settings(max_examples=300, deadline=None)
@given(hand_cards, dealer_cards, players, hand_cards, dealer_cards)
def test_every_players_settlement_is_the_one_settle_all_makes_alone(
    initial: tuple[Card, ...],
    dealer: tuple[Card, ...],
    bets: list[tuple[Decimal | None, dict[str, Decimal]]],
    initial2: tuple[Card, ...],
    dealer2: tuple[Card, ...],
) -> None:
    kept: Step | None = None  # the step the round's engine holds, from round to round
    for first, dealt in ((initial, dealer), (initial2, dealer2)):  # a round, then another
        shared = _shared(first, dealt)
        stale = kept  # made of the other round's cards (or none)
        kept = P.settle_step(shared, kept)
        assert kept.against is not None
        assert kept.against.first is shared.initial
        papers: list[dict[str, str]] = []
        for i, (main, sides) in enumerate(bets):
            if main is None and not sides:
                continue
            state = _player(f"p{i}", first, main, sides)
            expected = _by_hand(state, shared)
            for step in (kept, stale or Step(what="settle")):
                d = P.decide(state, shared, step)
                got = [(f.name, f.fields) for f in d.facts]
                assert (got, d.state) == expected
                papers += [f["paytable"] for _, f in got if f.get("paytable") is not None]
            assert P.settle_step(shared, kept) is kept  # one a round
        # each fact holds a paytable of its own (one made per round is copied, not shared)
        assert len({id(p) for p in papers}) == len(papers)


@pytest.mark.parametrize(
    "first", [(Card("8", "H"), Card("8", "S")), (Card("A", "D"), Card("K", "C"))]
)
def test_the_kept_cards_are_those_of_the_round_settled(first: tuple[Card, ...]) -> None:
    """The same cards' values in other tuples (another round) make their own outcomes: the
    round's settle step is kept only for the very tuples it was made of, and a step made of
    other tuples is not taken by the settlement."""
    dealer = (Card("10", "S"), Card("6", "H"), Card("9", "C"))
    kept: Step | None = None
    for cards in (first, tuple(first), (first[1], first[0])):
        shared = _shared(tuple(cards), dealer)
        state = _player("ana", tuple(cards), Decimal("10.00"), dict.fromkeys(SIDES, Decimal(1)))
        kept = _settles_alike(state, shared, kept)
        assert kept.against is not None
        assert kept.against.first is shared.initial
        assert kept.against.dealer is dealer


def _settles_alike(state: P.PlayerState, shared: SharedState, kept: Step | None) -> Step:
    """``state`` settled against ``shared`` with the step kept from the last round (or the
    last dealer's hand) and with the step made for ``shared`` give the facts and state that
    ``settle_all`` makes alone; returns the step made for ``shared``."""
    made = P.settle_step(shared, kept)
    for step in (kept, made):  # the last one's, then its own
        if step is None:
            continue
        got = P.decide(state, shared, step)
        assert ([(f.name, f.fields) for f in got.facts], got.state) == _by_hand(state, shared)
    return made


def test_the_same_first_cards_against_another_dealers_hand_make_their_own_outcomes() -> None:
    """The round's settle step is taken only for the very dealer's hand it was made of: the
    same shared first cards settled against another dealer's hand (a bust, then a blackjack:
    BDL-BUST, INS-1) give the facts ``settle_all`` makes alone, not the kept ones."""
    first = (Card("8", "H"), Card("8", "S"))
    kept: Step | None = None
    for dealer in (
        (Card("10", "S"), Card("6", "H"), Card("9", "C")),  # bust
        (Card("A", "S"), Card("K", "H")),  # blackjack
        (Card("10", "S"), Card("6", "H"), Card("9", "C")),  # bust again, another tuple
    ):
        shared = _shared(first, dealer)
        state = _player("ana", first, Decimal("10.00"), dict.fromkeys(SIDES, Decimal(1)))
        kept = _settles_alike(state, shared, kept)
        assert kept.against is not None
        assert kept.against.is_for(shared.dealer, RULES)
        other = (*dealer,)  # equal cards, another tuple
        assert other is not dealer
        assert not kept.against.is_for(other, RULES)


#: what each action stakes: a double the hand's stake (its main or split wager, DBL-1), a split
#: the main bet (SPLIT-1), insurance half of it (INS-1); nothing for the others
COSTS = {"double": Decimal("12.00"), "split": Decimal("10.00"), "insurance": Decimal("5.00")}


@pytest.mark.parametrize("action", [*sorted(play.ACTION_RULES), "stand", "hit"])
def test_a_hands_stake_is_what_a_double_costs(action: str) -> None:
    wagers = {
        "a:main": Wager("a:main", "a", "main", Decimal("10.00"), "a", "a.1"),
        "a.2:split": Wager("a.2:split", "a", "split", Decimal("12.00"), "a", "a.2"),
        "a:double": Wager("a:double", "a", "double", Decimal("7.00"), "a", "a.1"),
        "a:pair:a": Wager("a:pair:a", "a", "pair", Decimal("1.00"), "a", None),
    }
    args = {"main": Decimal("10.00"), "amount": None, "balance": Decimal(100), "rules": RULES}
    needed = decisions.cost(action, wagers=wagers, hand="a.2", **args)  # type: ignore[arg-type]
    assert needed == COSTS.get(action)
    if action == play.DOUBLE:
        assert needed == hand_stake(wagers, "a.2")
