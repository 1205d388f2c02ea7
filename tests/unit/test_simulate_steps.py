"""The simulator's step bound (``cli.simulate.STEPS_PER_HAND``, ``step_bound``) holds for
every hand the rules allow: a round of any size finishes within it, so 'stuck' means stuck."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cli.simulate import STEPS_PER_HAND, step_bound
from domain.cards import Card, decks
from domain.game import play
from domain.rules import VARIANTS, get_rules
from domain.scoring import score

#: Every card of the largest shoe (8 decks): a hand's cards are a sample of it.
SHOE = [c.code for c in decks(8)]


def decisions_hitting_to_the_end(cards: list[str], variant: str) -> int:
    """Decisions a hand takes when its player hits whenever the rules let it (the longest
    way a hand can be played): the hits, then the stand, until HAND-1 or a bust ends it."""
    rules = get_rules(variant)
    hand = [Card.parse(c) for c in cards[:2]]
    rest = iter(cards[2:])
    taken = 0
    while True:
        facts = play.HandFacts(tuple(hand), actions_taken=taken)
        if score(hand).bust or play.stands_automatically(facts, rules, doubled=False):
            return taken
        if not play.can_hit(facts, rules):
            return taken + 1  # the stand
        taken += 1
        hand.append(Card.parse(next(rest)))


@settings(max_examples=300)
@given(
    cards=st.permutations(SHOE).map(lambda order: order[:24]),
    variant=st.sampled_from(VARIANTS),
)
def test_a_hand_takes_at_most_21_decisions(cards: list[str], variant: str) -> None:
    """HAND-1 and SCORE-1: each card adds at least 1 to the hard total (aces as 1), which
    starts at 2 and busts above 21, so at most 20 hits and a stand; with an insurance answer
    and a split (SPLIT-2: no resplit, so two hands) an initial hand needs at most 44."""
    assert decisions_hitting_to_the_end(cards, variant) <= 21
    assert STEPS_PER_HAND >= 1 + 1 + 2 * 21


def test_a_run_of_aces_stops_at_soft_21_and_a_bust_ends_a_hand() -> None:
    """A A A ... (soft 12, 13, ...) reaches 21 at the 11th card: HAND-1 stands it after 9
    hits. 2 2 2 2 K 9 (4, 6, 8, 18, 27): a bust ends the hand after 4 hits."""
    assert decisions_hitting_to_the_end(["AS"] * 24, "boundless") == 9
    assert decisions_hitting_to_the_end(["2S", "2D", "2H", "2C", "KS", "9S"], "boundless") == 4


@given(hands=st.integers(0, 2000), behind=st.integers(0, 50), sides=st.integers(0, 2000))
def test_the_round_bound_grows_with_its_hands(hands: int, behind: int, sides: int) -> None:
    wagers = [{"kind": "main"}] * hands + [{"kind": "behind"}] * behind
    wagers += [{"kind": "pair"}] * sides
    view = {"hands": [{}] * hands, "wagers": wagers}
    assert step_bound(view) == STEPS_PER_HAND * hands + behind + 1


def test_doctests_of_the_simulator_and_its_bots() -> None:
    import doctest

    import cli.simulate
    import cli.strategy

    for module in (cli.simulate, cli.strategy):
        assert doctest.testmod(module).failed == 0
