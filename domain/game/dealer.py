"""The dealer: the upcard, the insurance window and the check, the turn, the draws, the stand.

Every model of a round asks these functions the same questions and records the same facts:

* after the initial deal, :func:`after_deal`: an ace up opens the insurance window (INS-1)
  when some hand can take it; a ten-value up is checked at once (D5); else play starts;
* :func:`peek` (D5): the dealer checks the hole card; a blackjack is shown and ends the round
  (END-1);
* :func:`card_to_dealer`: where a card to the dealer goes, face up or not (PHASE-2), and the
  rule of a draw (DEALER-1, or H17 on a soft 17 under ``dealer_hits_soft_17``);
* :func:`wants_card` (DEALER-1, H17): whether the dealer draws now;
* :func:`turn` (PHASE-5): the dealer's turn starts and the hole card is shown;
* :func:`stand`: the dealer's hand is complete.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from domain.cards import Card
from domain.game import play
from domain.game.facts import Decision
from domain.game.state import fast_init, replace
from domain.rules.base import Rules
from domain.scoring import is_blackjack, score

WINDOW, CHECKED_BLACKJACK, PLAY = "window", "blackjack", "play"


@fast_init
@dataclass(frozen=True, slots=True)
class DealerHand:
    """The dealer's cards and what is known of them (state only)."""

    cards: tuple[Card, ...] = ()
    hole_revealed: bool = False
    blackjack: bool = False
    final: bool = False  # complete: settlement may begin

    def __deepcopy__(self, memo: dict[int, Any]) -> DealerHand:
        return self  # immutable


DEALER_FACTS = frozenset({"CardToDealer", "DealerChecked", "HoleCardRevealed", "DealerStood"})


def evolve_dealer(dh: DealerHand, name: str, f: Mapping[str, Any]) -> DealerHand:
    """The effect of a dealer fact (one of :data:`DEALER_FACTS`) on the dealer's hand."""
    if name == "CardToDealer":
        return replace(dh, cards=(*dh.cards, Card.parse(f["card"])))
    if name == "DealerChecked":  # D5; END-1: a blackjack ends the dealer's hand
        return replace(dh, blackjack=f["blackjack"], final=f["blackjack"])
    if name == "HoleCardRevealed":
        return replace(dh, hole_revealed=True)
    assert name == "DealerStood", name
    bj = len(dh.cards) == 2 and is_blackjack(dh.cards, split=False)
    return replace(dh, final=True, blackjack=dh.blackjack or bj)


def hole(dealer: Sequence[Card], rules: Rules) -> Card:
    """The dealer's covered card (lucky7: the first; the others: the second)."""
    return dealer[1 - rules.upcard_index]


def after_deal(d: Decision[Any], dealer: Sequence[Card], rules: Rules, *, window: bool) -> str:
    """The initial deal is complete. ``window``: some hand may take insurance. Returns
    ``"window"`` (the caller opens it), ``"blackjack"`` (checked at once: END-1) or ``"play"``
    (the caller starts play, PHASE-4)."""
    up = play.upcard(dealer, rules)
    assert up is not None
    if up.is_ace and rules.insurance and window:
        return WINDOW
    if rules.peeks and up.is_ten_value and peek(d, dealer, rules):
        return CHECKED_BLACKJACK
    return PLAY


def after_window(d: Decision[Any], dealer: Sequence[Card], rules: Rules) -> str:
    """The insurance window closed: the dealer checks (D5) where it has a hole card."""
    if rules.peeks and peek(d, dealer, rules):
        return CHECKED_BLACKJACK
    return PLAY


def peek(d: Decision[Any], dealer: Sequence[Card], rules: Rules) -> bool:
    """D5: the dealer checks the hole card; END-1: a blackjack is shown and ends the round."""
    bj = is_blackjack(dealer[:2], split=False)
    d.consequence("DealerChecked", rule="D5", blackjack=bj)
    if bj:
        d.consequence("HoleCardRevealed", rule="END-1", card=hole(dealer, rules).code, total=21)
    return bj


def card_to_dealer(
    d: Decision[Any], dealer: Sequence[Card], card: Card, rules: Rules, *, dealing: bool
) -> None:
    """A card to the dealer: in the initial deal face up or covered (PHASE-2); in the
    dealer's turn face up, by DEALER-1 (H17 when it is the hit of a soft 17)."""
    if dealing:
        face_up = rules.hole_card == "none" or len(dealer) == rules.upcard_index
        d.consequence("CardToDealer", rule="PHASE-2", card=card.code, face_up=face_up)
        return
    d.consequence("CardToDealer", rule=draw_rule(dealer, rules), card=card.code, face_up=True)


def draw_rule(dealer: Sequence[Card], rules: Rules) -> str:
    """DEALER-1, or H17 when the dealer hits a soft 17 (``dealer_hits_soft_17``)."""
    if rules.dealer_hits_soft_17 and len(dealer) >= 2:
        s = score(dealer)
        if s.total == 17 and s.soft:
            return "H17"
    return "DEALER-1"


def wants_card(dealer: Sequence[Card], rules: Rules) -> bool:
    """In the dealer's turn: the dealer draws (DEALER-1, H17); european's second card comes
    after the players; a dealer blackjack draws nothing."""
    if len(dealer) < 2:
        return True
    if is_blackjack(dealer[:2], split=False):
        return False
    return play.dealer_must_draw(dealer, hits_soft_17=rules.dealer_hits_soft_17)


def turn(d: Decision[Any], dealer: Sequence[Card], rules: Rules, *, reveal: bool = True) -> None:
    """PHASE-5: the dealer's turn; the hole card is shown (``reveal``) where there is one."""
    d.consequence("DealerTurnStarted", rule="PHASE-5")
    if reveal:
        reveal_hole(d, dealer, rules)


def reveal_hole(d: Decision[Any], dealer: Sequence[Card], rules: Rules) -> None:
    if rules.peeks:
        total = score(dealer).total
        d.consequence(
            "HoleCardRevealed", rule="PHASE-5", card=hole(dealer, rules).code, total=total
        )


def stand(d: Decision[Any], dealer: Sequence[Card]) -> None:
    """The dealer's hand is complete by DEALER-1 (BDL-3 / D10: whatever the players did)."""
    s = score(dealer)
    bj = is_blackjack(dealer, split=False)
    reason = "blackjack" if bj else ("bust" if s.bust else "stands")
    d.consequence("DealerStood", rule="DEALER-1", total=s.total, reason=reason)


def visible(dealer: Sequence[Card], rules: Rules, *, shown: bool) -> list[str]:
    """The dealer's cards a player sees: all once ``shown``, else all but the hole card."""
    covered = 1 - rules.upcard_index
    return [c.code for i, c in enumerate(dealer) if shown or not (rules.peeks and i == covered)]


__all__ = [
    "DEALER_FACTS",
    "DealerHand",
    "after_deal",
    "after_window",
    "card_to_dealer",
    "draw_rule",
    "evolve_dealer",
    "hole",
    "peek",
    "reveal_hole",
    "stand",
    "turn",
    "visible",
    "wants_card",
]
