"""deluxe: live studio, 8 decks with cut card and burn, 7 seats, bet behind, Pair side bet.

Rules: RULES.md "Variant parameters" (deluxe column), DLX-1..8, DLX-PAIR, END-2, FUNDS-1/2,
PRE-1, D5, D15.
"""

from decimal import Decimal

from domain.rules.base import Rules
from domain.sidebets import DELUXE_PAIR_PAYTABLE

RULES = Rules(
    key="deluxe/1",
    variant="deluxe",
    dealing="live",
    decks=8,
    reshuffle_every_round=False,
    burn_procedure=True,  # SHOE-1..3
    max_spots=7,
    max_spots_per_player=2,  # DLX-1
    card_routing="in_turn",
    hole_card="peek",  # D5
    surrender="not_vs_ace_or_ten",  # SURR-1 and dealer's first card not A or ten
    double="any_two",
    double_after_split=True,
    split_forbidden_values=frozenset(),
    split_aces="one_card",  # SPLIT-3
    double_split_aces=False,
    insurance=True,
    insurance_with_blackjack=True,  # "yes, even with BJ"
    even_money=False,  # "no (insurance with BJ instead)"
    even_money_or_insurance_with_bj=False,
    dealer_bj_takes="peek",
    dealer_draws="while_result_depends",  # D15
    end_when_all_blackjack=True,  # END-2
    double_funds="double_becomes_hit",  # FUNDS-1
    split_funds="hit_if_11_or_less_else_stand",  # FUNDS-2
    pre_decisions=True,  # PRE-1
    side_bets={"pair": DELUXE_PAIR_PAYTABLE},  # DLX-PAIR
    bet_behind=True,  # DLX-5..8
    min_bet=Decimal("1.00"),
    max_bet=Decimal("5000.00"),
    published_rtp="99.53",
)
