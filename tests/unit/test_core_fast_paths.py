"""The game core's shortcuts (branches corecpu, vcpu3) against the plain readings they stand for.

* ``Card.parse`` hands out one shared card per canonical code (``domain.cards._BY_CODE``) and
  checks everything else as before: same card, same refusal (CARD-1);
* the rules read a hand's own score (``HandFacts.scored``, a ``Hand`` passed to HAND-1 as it
  is, the dealer's score computed once a settlement): the same options (DBL-1, D13, SPLIT-1,
  SURR-1), automatic stands (HAND-1, SCORE-2) and outcomes (OUT-1..4, SCORE-3/4) as facts
  scored from their cards.

The boundless participation's needs and options, now read with one look-up of the due hand,
are compared with their plain reading in random rounds in ``test_boundless_hands.py``; the
question they ask of the due hand (branch corecpu2: ``sequence.has_step``, no step made) is
compared here with whether ``sequence.step_of`` makes one; and a classic round's count of
the initial cards dealt (a loop since branch vcpu3) with the plain count.
"""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain import cards as card_module
from domain.cards import RANKS, SUITS, Card
from domain.errors import InvalidCard
from domain.game import play
from domain.game import sequence as Q
from domain.game.hands import Hand
from domain.game.play import HandFacts
from domain.rules import VARIANTS, get_rules
from domain.scoring import score

CODES = [r + s for s in SUITS for r in RANKS]
cards_st = st.lists(st.builds(Card, st.sampled_from(RANKS), st.sampled_from(SUITS)), max_size=7)


def _parsed(code: object) -> Card | str:
    try:
        return Card.parse(code)  # type: ignore[arg-type]
    except InvalidCard as e:
        return f"InvalidCard: {e}"


@settings(max_examples=300, deadline=None)
@given(
    code=st.one_of(
        st.sampled_from(CODES),
        st.text(max_size=4),
        st.sampled_from(["as", "10h", "T S", "1OH", "AS ", " AS", "10", "", "AX", "0S"]),
        st.integers(),
        st.none(),
    )
)
def test_card_parse_shares_canonical_cards_and_checks_the_rest(code: object) -> None:
    fast = _parsed(code)
    with mock.patch.object(card_module, "_BY_CODE", {}):  # every code through the checks
        plain = _parsed(code)
    assert fast == plain
    if isinstance(fast, Card):
        assert fast.code == code
        assert Card.parse(fast.code) is fast


def test_every_canonical_code_is_shared_and_nothing_else() -> None:
    assert sorted(card_module._BY_CODE) == sorted(CODES)
    for code, card in card_module._BY_CODE.items():
        assert card == Card(code[:-1], code[-1])
        assert card.code == code


@pytest.mark.parametrize("variant", VARIANTS)
@settings(max_examples=200, deadline=None)
@given(
    hand=cards_st,
    dealer=cards_st,
    is_split=st.booleans(),
    split_aces=st.booleans(),
    actions=st.integers(0, 2),
    doubled=st.booleans(),
    surrendered=st.booleans(),
)
def test_rules_read_a_hands_own_score_as_they_score_its_cards(
    variant: str,
    hand: list[Card],
    dealer: list[Card],
    is_split: bool,
    split_aces: bool,
    actions: int,
    doubled: bool,
    surrendered: bool,
) -> None:
    rules = get_rules(variant)
    cards = tuple(hand)
    plain = HandFacts(cards, is_split, split_aces, actions)  # scored from its cards
    h = Hand("1", "ana", "1", cards, is_split=is_split, split_aces=split_aces, actions=actions)
    kept = h.facts()
    assert kept.scored is h.score
    assert kept.score == score(cards) == plain.score
    assert kept == plain  # the score is not part of what the facts are
    assert play.play_options(kept, dealer, rules) == play.play_options(plain, dealer, rules)
    assert play.can_double(kept, rules) == play.can_double(plain, rules)
    assert play.can_hit(kept, rules) == play.can_hit(plain, rules)
    reason = play.stands_automatically(plain, rules, doubled=doubled)
    assert play.stands_automatically(kept, rules, doubled=doubled) == reason
    assert play.stands_automatically(h, rules, doubled=doubled) == reason
    if not dealer:
        return
    dealer_bj = len(dealer) == 2 and score(dealer).total == 21
    args = {"surrendered": surrendered, "dealer": dealer, "dealer_blackjack": dealer_bj}
    out = play.main_outcome(plain, rules=rules, **args)  # type: ignore[arg-type]
    fast = play.main_outcome(
        kept,
        rules=rules,
        dealer_score=score(dealer),
        **args,  # type: ignore[arg-type]
    )
    assert fast == out


@settings(max_examples=300, deadline=None)
@pytest.mark.parametrize("variant", sorted(VARIANTS))
@given(
    hand=cards_st,
    sequence=cards_st,
    cursor=st.integers(0, 8),
    flags=st.lists(st.booleans(), min_size=6, max_size=6),
)
def test_has_step_is_whether_step_of_makes_a_step(
    variant: str, hand: list[Card], sequence: list[Card], cursor: int, flags: list[bool]
) -> None:
    """``sequence.has_step`` (what ``need`` and ``options_for`` ask) answers exactly whether
    ``step_of`` makes a step: a revealed card for an owed hand (BDL-2, D9), HAND-1 / SCORE-2,
    AUTO-1 (the hand's own timer or the player's disconnection)."""
    rules = get_rules(variant)
    owed, auto, doubled, is_split, split_aces, disconnected = flags
    h = Hand(
        "p", "p", "p", tuple(hand), is_split=is_split, split_aces=split_aces,
        doubled=doubled, owed=owed, auto=auto,
    )  # fmt: skip
    state = Q.PlayerHands("p", (h,), cursor=cursor, auto=disconnected)
    step = Q.step_of(state, h, sequence, rules)
    assert Q.has_step(state, h, sequence, rules) is (step is not None)


@settings(max_examples=200, deadline=None)
@given(
    variant=st.sampled_from([v for v in VARIANTS if v != "boundless"]),
    hands=st.lists(cards_st, max_size=6),
    dealer=cards_st,
)
def test_initial_cards_dealt_counts_two_a_hand_and_the_dealers_at_most(
    variant: str, hands: list[list[Card]], dealer: list[Card]
) -> None:
    """``table_state.initial_cards_dealt`` (a loop since branch vcpu3) is the plain count: at
    most two cards a hand, and the dealer's first one or two (one without a hole card)."""
    from domain.game.dealer import DealerHand
    from domain.game.state import replace
    from domain.game.table_state import initial_cards_dealt, started

    rules = get_rules(variant)
    s = started(
        {"table_id": "t", "round_number": 1, "rules_key": rules.key, "shoe_id": "s",
         "shoe_round": 1, "production": True, "seats": {}}
    )  # fmt: skip
    s = replace(
        s,
        hands=tuple(Hand(str(i), "p", str(i), tuple(c)) for i, c in enumerate(hands, start=1)),
        dealer_hand=replace(DealerHand(), cards=tuple(dealer)),
    )
    dealer_initial = 1 if rules.hole_card == "none" else 2
    plain = sum(min(len(c), 2) for c in hands) + min(len(dealer), dealer_initial)
    assert initial_cards_dealt(s) == plain
