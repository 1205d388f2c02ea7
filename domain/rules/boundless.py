"""boundless: live studio, 8 decks with cut card and burn, any number of players on one shared
hand, side bets Pair, Bust Bonus, Lucky Trio and Poker Trio.

Rules: RULES.md "Variant parameters" (boundless column), BDL-1..3, BDL-PAIR, BDL-BUST,
BDL-TRIO, BDL-POKER, BDL-AVAIL, D9-D12, FUNDS-2.
"""

from decimal import Decimal

from domain.rules.base import Rules
from domain.sidebets import (
    BOUNDLESS_PAIR_PAYTABLE,
    BUST_BONUS_PAYTABLE,
    LUCKY_TRIO_PAYTABLE,
    POKER_TRIO_PAYTABLE,
)

RULES = Rules(
    key="boundless/1",
    variant="boundless",
    dealing="live",
    decks=8,
    reshuffle_every_round=False,
    burn_procedure=True,  # SHOE-1..3
    max_spots=0,  # unlimited players (BDL-1)
    max_spots_per_player=1,
    card_routing="per_player_sequence",  # BDL-2, D9
    hole_card="peek",  # D5
    surrender="not_vs_ace_or_ten",
    double="any_two",
    double_after_split=True,
    split_forbidden_values=frozenset(),
    split_aces="one_card",
    double_split_aces=False,
    insurance=True,
    insurance_with_blackjack=True,
    even_money=False,
    even_money_or_insurance_with_bj=False,
    dealer_bj_takes="peek",
    dealer_draws="always",  # D10
    end_when_all_blackjack=False,
    double_funds="hit_if_11_or_less_else_stand",  # FUNDS-2 (boundless: the same for a double)
    split_funds="hit_if_11_or_less_else_stand",  # FUNDS-2
    pre_decisions=False,
    side_bets={
        "pair": BOUNDLESS_PAIR_PAYTABLE,  # BDL-PAIR, D11
        "bust": BUST_BONUS_PAYTABLE,  # BDL-BUST
        "trio": LUCKY_TRIO_PAYTABLE,  # BDL-TRIO, D12
        "poker": POKER_TRIO_PAYTABLE,  # BDL-POKER
    },
    side_bet_round_limits={"pair": 40, "bust": 45, "trio": 45, "poker": 45},  # BDL-AVAIL
    pair_rule="BDL-PAIR",
    min_bet=Decimal("1.00"),
    max_bet=Decimal("5000.00"),
    published_rtp="99.46",
)
