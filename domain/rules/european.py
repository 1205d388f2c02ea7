"""european: RNG, 2 decks (D2) reshuffled every round (D3), one box (D4), no hole card (ENHC).

Rules: RULES.md "Variant parameters" (european column), D8, D13.
"""

from domain.rules.base import Rules

RULES = Rules(
    key="european/1",
    variant="european",
    dealing="rng",
    decks=2,  # D2
    reshuffle_every_round=True,  # D3
    burn_procedure=False,
    max_spots=1,  # D4
    max_spots_per_player=1,
    card_routing="in_turn",
    hole_card="none",  # dealer's second card after the players
    surrender="not_vs_ace_no_bj",  # upcard not A, player not BJ
    double="hard_9_11",  # D13
    double_after_split=True,
    split_forbidden_values=frozenset({4, 5, 10}),  # never 4s, 5s or ten-values
    split_aces="one_card",
    double_split_aces=False,
    insurance=True,
    insurance_with_blackjack=False,
    even_money=True,
    even_money_or_insurance_with_bj=False,
    dealer_bj_takes="all_stakes",  # D8 (alternative: original_bets_only)
    dealer_draws="always",
    end_when_all_blackjack=False,
    double_funds="refuse",
    split_funds="refuse",
    pre_decisions=False,
)
