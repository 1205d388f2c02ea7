"""The shape of a variant's rules: frozen, versioned data (see RULES.md, "Variant parameters").

A :class:`Rules` object is pure data. Every decision of RULES.md on a silent sheet (D1-D16) is a
named field here, never a hidden constant. Published rule sets are never edited in place: a
change gets a new ``key`` (``"deluxe/2"``) and every round stores the key it was played under.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Literal

from domain.money import Ratio

Dealing = Literal["live", "rng"]
HoleCard = Literal["peek", "covered_first", "none"]
"""``peek``: dealer's second card face down, checked (D5); ``covered_first``: lucky7, the
dealer's first card is the covered one, the second is the upcard; ``none``: european (ENHC)."""
Surrender = Literal["none", "not_vs_ace_or_ten", "not_vs_ace_no_bj"]
DoublePolicy = Literal["any_two", "any_two_not_bj", "hard_9_11"]
SplitAces = Literal["one_card", "play_on"]
DealerBJStakes = Literal["peek", "all_stakes", "original_bets_only"]
DealerDraws = Literal["always", "while_result_depends"]
CardRouting = Literal["in_turn", "per_player_sequence"]
FundsPolicy = Literal["refuse", "double_becomes_hit", "hit_if_11_or_less_else_stand"]


def frozen_map(data: Mapping[str, Ratio]) -> Mapping[str, Ratio]:
    return MappingProxyType(dict(data))


@dataclass(frozen=True)
class Rules:
    """One published, versioned rule set of one variant."""

    key: str  # "deluxe/1"; stored on every round
    variant: str
    dealing: Dealing
    decks: int
    # Shoe: SHOE-1..3 (cut card and burn) for the live variants; D3 a fresh shuffle each round.
    reshuffle_every_round: bool
    burn_procedure: bool
    # Hands
    max_spots: (
        int  # seats (deluxe 7) or boxes (D4: multihand 5, lucky7 3, european 1); 0 = unlimited
    )
    max_spots_per_player: int  # deluxe DLX-1: 2; multihand 5; lucky7 3; european 1; boundless 1
    card_routing: CardRouting  # boundless BDL-2/D9: per-player cursors over one shared sequence
    hole_card: HoleCard
    # Decisions
    surrender: Surrender
    double: DoublePolicy
    double_after_split: bool
    split_forbidden_values: frozenset[int]  # european: never 4s, 5s or ten-values
    split_aces: SplitAces  # D7 multihand: play_on (may hit, may not double)
    double_split_aces: bool
    insurance: bool
    insurance_with_blackjack: bool  # deluxe, boundless: yes; lucky7, european: only without BJ
    even_money: bool  # EVEN-1 where listed
    even_money_or_insurance_with_bj: bool  # D16 multihand: either, the sheet restricts neither
    dealer_bj_takes: (
        DealerBJStakes  # D8 european: all_stakes (setting; alternative original_bets_only)
    )
    dealer_draws: DealerDraws  # D15 deluxe: while_result_depends; others: always (D10 boundless)
    end_when_all_blackjack: bool  # END-2 deluxe
    double_funds: FundsPolicy  # FUNDS-1 deluxe: becomes hit; FUNDS-2 boundless: hit<=11 else stand
    split_funds: FundsPolicy  # FUNDS-2 deluxe and boundless
    pre_decisions: bool  # PRE-1 deluxe
    # Side bets: name -> paytable (pattern -> ratio)
    side_bets: Mapping[str, Mapping[str, Ratio]] = field(default_factory=dict)
    side_bet_round_limits: Mapping[str, int] = field(default_factory=dict)  # BDL-AVAIL
    lucky7_max_stake: Decimal | None = None  # L7-1 "one chip unit", a setting
    bet_behind: bool = False  # DLX-5
    # Table limits (D18: settings of the rules key; a refusal names the limit and the setting):
    # main bets and bets behind, side bets, and any bet type's own (minimum, maximum)
    min_bet: Decimal = Decimal("1.00")
    max_bet: Decimal = Decimal("5000.00")
    side_min_bet: Decimal = Decimal("0.50")
    side_max_bet: Decimal = Decimal("1000.00")
    bet_limits: Mapping[str, tuple[Decimal, Decimal]] = field(default_factory=dict)
    # DEALER-1 stands on every 17; H17 (not in the rule book: a variant setting) hits soft 17
    dealer_hits_soft_17: bool = False
    pair_rule: str = "DLX-PAIR"  # the rule a Pair side bet cites (boundless: BDL-PAIR, D11)
    blackjack_pays: Ratio = Ratio(3, 2)  # noqa: RUF009 (frozen value) OUT-1
    insurance_pays: Ratio = Ratio(2, 1)  # noqa: RUF009 (frozen value) INS-1
    published_rtp: str | None = None

    @property
    def shared_hand(self) -> bool:
        return self.card_routing == "per_player_sequence"

    @property
    def upcard_index(self) -> int:
        """Index of the dealer's face-up card among the dealer's first two."""
        return 1 if self.hole_card == "covered_first" else 0

    @property
    def peeks(self) -> bool:
        """D5: the dealer checks for BJ (every variant with a hole card)."""
        return self.hole_card != "none"

    def describe(self) -> dict[str, object]:
        """Plain-JSON description of every setting (for the API and the docs)."""
        out: dict[str, object] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, Ratio | Decimal):
                out[name] = str(value)
            elif isinstance(value, frozenset):
                out[name] = sorted(value)
            elif isinstance(value, Mapping):
                out[name] = {k: _plain(v) for k, v in value.items()}
            else:
                out[name] = value
        return out


def _plain(value: object) -> object:
    """A setting's value as plain JSON (ratios and amounts as strings)."""
    if isinstance(value, Mapping):
        return {k: str(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [str(v) for v in value]
    return value
