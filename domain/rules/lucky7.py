"""lucky7: RNG, 6 decks (D1) reshuffled every round (D3), 3 boxes, Lucky 7 side bet.

The dealer's first card is the covered one and the second the upcard; peek on ten or ace.
Rules: RULES.md "Variant parameters" (lucky7 column), L7-1..4, D14.
"""

from decimal import Decimal

from domain.rules.base import Rules
from domain.sidebets import LUCKY7_DEFAULT_PAYTABLE

RULES = Rules(
    key="lucky7/1",
    variant="lucky7",
    dealing="rng",
    decks=6,  # D1
    reshuffle_every_round=True,  # D3
    burn_procedure=False,
    max_spots=3,  # left, centre, right
    max_spots_per_player=3,
    card_routing="in_turn",
    hole_card="covered_first",
    surrender="none",
    double="any_two_not_bj",  # first two cards only, not on BJ, also after split
    double_after_split=True,
    split_forbidden_values=frozenset(),
    split_aces="one_card",
    double_split_aces=False,
    insurance=True,
    insurance_with_blackjack=False,  # only without BJ
    even_money=True,
    even_money_or_insurance_with_bj=False,
    dealer_bj_takes="peek",
    dealer_draws="always",
    end_when_all_blackjack=False,
    double_funds="refuse",
    split_funds="refuse",
    pre_decisions=False,
    side_bets={"lucky7": LUCKY7_DEFAULT_PAYTABLE},  # L7-4 / D14
    lucky7_max_stake=Decimal("1.00"),  # L7-1 one chip unit, a setting
)
