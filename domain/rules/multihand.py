"""multihand: RNG, 4 decks reshuffled every round (D3), up to 5 boxes (D4).

Rules: RULES.md "Variant parameters" (multihand column), D5, D6, D7, D16.
"""

from domain.rules.base import Rules

RULES = Rules(
    key="multihand/1",
    variant="multihand",
    dealing="rng",
    decks=4,
    reshuffle_every_round=True,  # D3
    burn_procedure=False,
    max_spots=5,  # D4
    max_spots_per_player=5,
    card_routing="in_turn",
    hole_card="peek",  # D5 "multihand says nothing: same check"
    surrender="none",
    double="any_two",
    double_after_split=True,
    split_forbidden_values=frozenset(),
    split_aces="play_on",  # D7: split aces may be hit, not doubled
    double_split_aces=False,
    insurance=True,
    insurance_with_blackjack=True,  # D16
    even_money=True,
    even_money_or_insurance_with_bj=True,  # D16
    dealer_bj_takes="peek",
    dealer_draws="always",
    end_when_all_blackjack=False,
    double_funds="refuse",
    split_funds="refuse",
    pre_decisions=False,
)
