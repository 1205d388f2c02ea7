"""Settlement: every wager against the dealer's final hand, refunds, and reversals.

One settlement for every kind of round:

* a hand's wagers (main, split, double, bets behind) by OUT-1..4, SCORE-3/4 and SURR-1
  (:func:`domain.game.play.main_outcome`), with D8 when the dealer's late blackjack takes every
  stake (european: ``all_stakes``; ``original_bets_only`` refunds doubles and splits);
* insurance (INS-1: 2:1 on a dealer blackjack, lost otherwise);
* side bets by their evaluators (:mod:`domain.sidebets`) on the cards they read:
  :class:`SideCards` (the box's first cards, or the boundless shared initial hand; the dealer's),
  each outcome made once for every wager read on the same cards (:class:`SettledAgainst`: a
  boundless round's players share their first cards, BDL-1);
* refunds (ERR-1 on a cancellation, DLX-3 for bets on a seat left without a seat bet, PHASE-1
  for a bet recorded after betting closed) and ERR-1 reversals of payments already made.

Each settlement is a ``WagerSettled`` fact, and :func:`wager_settled_fields` is the one
construction of its payload for every kind of round (a classic ``Round`` and a boundless
``Participation`` each declare their own ``WagerSettled`` class, under their own topics, with
these fields): the stake, payout and net as money strings, the ratio as text, the rounding the
payout absorbed (MONEY-1: payouts are rounded down to the minor unit).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from domain.cards import Card
from domain.game import play
from domain.game.facts import Decision
from domain.game.hands import Hand
from domain.game.state import fast_init
from domain.game.wagers import HAND_KINDS, Wager
from domain.money import ZERO, Ratio, money_str, pay
from domain.rules.base import Rules
from domain.scoring import Score, is_blackjack, score
from domain.sidebets import (
    SideBetOutcome,
    evaluate_bust_bonus,
    evaluate_lucky7,
    evaluate_lucky_trio,
    evaluate_pair,
    evaluate_poker_trio,
)

HALF = Ratio(1, 2)


class SettledWager(Protocol):
    """What a settlement reads of a wager (both aggregates' wager states have it)."""

    @property
    def id(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def hand(self) -> str | None: ...

    @property
    def stake(self) -> Decimal: ...


def wager_settled_fields(
    w: SettledWager,
    player: str,
    result: str,
    ratio: Ratio | None,
    payout: Decimal,
    rounding: Decimal,
    rule: str,
    pattern: str | None = None,
    paytable: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The ``WagerSettled`` fields of ``w`` settled as ``result`` paying ``payout`` (stake
    included) under ``rule``.

    >>> from types import SimpleNamespace as W
    >>> f = wager_settled_fields(W(id="1:main", kind="main", hand="1", stake=Decimal("10")),
    ...                          "ana", "win", None, Decimal("20"), Decimal("0"), "OUT-2")
    >>> (f["stake"], f["payout"], f["net"], f["ratio"])
    ('10.00', '20.00', '10.00', None)
    """
    return {
        "wager_id": w.id,
        "player": player,
        "kind": w.kind,
        "hand": w.hand,
        "stake": money_str(w.stake),
        "result": result,
        "ratio": str(ratio) if ratio is not None else None,
        "payout": money_str(payout),
        "net": money_str(payout - w.stake),
        "rounding": str(rounding),
        "pattern": pattern,
        "paytable": paytable,
        "rule": rule,
    }


@fast_init
@dataclass(frozen=True, slots=True)
class SideCards:
    """The cards a side bet reads: the first cards of its box (a classic round: up to three,
    in the order received, L7-3) or the shared initial hand (boundless), and the dealer's."""

    first: Sequence[Card]
    dealer: Sequence[Card]
    dealer_blackjack: bool


class SettledAgainst:
    """What settling a wager reads of the cards every wager is settled against, made once for
    all of them: whether the dealer's final hand is a blackjack and its score, and, for side
    bets read on one first hand (``first``: a boundless round's shared initial hand, which is
    every player's first cards, BDL-1), each kind's outcome and paytable text. A boundless
    round settles thousands of players against the same shared initial hand and dealer's hand
    (BDL-1, BDL-3): their Pair, Lucky Trio and Poker Trio read those first two cards and the
    dealer's first card (BDL-PAIR, BDL-TRIO, BDL-POKER), the Bust Bonus the dealer's hand
    alone (BDL-BUST), so one outcome of each kind is every player's; a wager's own stake is
    paid by it as before (:func:`settle_all`). Side bets read on other first cards (a classic
    box's, L7-3) are evaluated for each wager, as before."""

    __slots__ = ("_sides", "dealer", "dealer_bj", "dealer_score", "first", "rules")

    def __init__(
        self, dealer: Sequence[Card], rules: Rules, first: Sequence[Card] | None = None
    ) -> None:
        self.dealer = dealer
        self.rules = rules
        self.first = first
        self.dealer_bj = len(dealer) == 2 and is_blackjack(dealer, split=False)
        self.dealer_score = score(dealer)  # one dealer's hand for every wager
        self._sides: dict[str, tuple[SideBetOutcome, dict[str, str]]] = {}

    def is_for(self, dealer: Sequence[Card], rules: Rules) -> bool:
        """Whether this was made of this very ``dealer``'s hand and ``rules`` (the objects)."""
        return self.dealer is dealer and self.rules is rules

    def side(self, kind: str, first: Sequence[Card]) -> tuple[SideBetOutcome, dict[str, str]]:
        """The outcome of a side bet of ``kind`` on ``first`` and the dealer's hand, and its
        paytable as text (each fact takes a copy of it): kept by kind when ``first`` is the
        first hand this was made for."""
        if first is not self.first:
            return self._side(kind, first)
        kept = self._sides.get(kind)
        if kept is None:
            kept = self._sides[kind] = self._side(kind, first)
        return kept

    def _side(self, kind: str, first: Sequence[Card]) -> tuple[SideBetOutcome, dict[str, str]]:
        rules = self.rules
        outcome = side_outcome(kind, SideCards(first, self.dealer, self.dealer_bj), rules)
        return outcome, {k: str(v) for k, v in rules.side_bets[kind].items()}


def side_outcome(kind: str, cards: SideCards, rules: Rules) -> SideBetOutcome:
    """The outcome of a side bet of ``kind`` under the variant's paytable."""
    paytable = rules.side_bets[kind]
    first, dealer = cards.first, cards.dealer
    if kind == "pair":
        d1 = dealer[0] if dealer else None
        return evaluate_pair(first[0], first[1], d1, paytable=paytable, rule=rules.pair_rule)
    if kind == "lucky7":
        return evaluate_lucky7(
            first[:3], dealer_blackjack=cards.dealer_blackjack, paytable=paytable
        )
    if kind == "bust":
        return evaluate_bust_bonus(dealer, paytable=paytable)
    if kind == "trio":
        return evaluate_lucky_trio(first[0], first[1], dealer[0], paytable=paytable)
    if kind == "poker":
        return evaluate_poker_trio(first[0], first[1], dealer[0], paytable=paytable)
    raise ValueError(f"no side bet {kind!r}")


def settle_one(
    d: Decision[Any],
    w: Wager,
    result: str,
    ratio: Ratio | None,
    payout: Decimal,
    rounding: Decimal,
    rule: str,
    pattern: str | None = None,
    paytable: dict[str, str] | None = None,
) -> None:
    """One ``WagerSettled``: ``payout`` is what the player gets back, stake included."""
    fields = wager_settled_fields(
        w, w.player, result, ratio, payout, rounding, rule, pattern, paytable
    )
    del fields["rule"]
    d.consequence("WagerSettled", rule=rule, **fields)


def settle_win(d: Decision[Any], w: Wager, result: str, ratio: Ratio, rule: str) -> None:
    p = pay(w.stake, ratio)
    settle_one(d, w, result, ratio, w.stake + p.amount, p.rounding, rule)


def refund(d: Decision[Any], w: Wager, rule: str) -> None:
    settle_one(d, w, "refund", None, w.stake, ZERO, rule)


def settle_all(
    d: Decision[Any],
    wagers: Iterable[Wager],
    *,
    hand: Callable[[str], Hand],
    dealer: Sequence[Card],
    first_cards: Callable[[Wager], Sequence[Card]],
    rules: Rules,
    against: SettledAgainst | None = None,
) -> None:
    """Settle every unsettled wager of ``wagers`` against the dealer's final hand.
    ``against``: what the caller made already of these cards for other wagers (a boundless
    round's players: :class:`SettledAgainst`), used when it was made of this very
    ``dealer`` and ``rules``."""
    if against is None or not against.is_for(dealer, rules):
        against = SettledAgainst(dealer, rules)
    dealer_bj, dealer_score = against.dealer_bj, against.dealer_score
    for w in wagers:
        if w.settled:
            continue
        if w.kind in HAND_KINDS:
            assert w.hand is not None
            _settle_hand_wager(d, w, hand(w.hand), dealer, dealer_bj, dealer_score, rules)
        elif w.kind == "insurance":
            if dealer_bj:
                settle_win(d, w, "win", rules.insurance_pays, "INS-1")
            else:
                settle_one(d, w, "lose", None, ZERO, ZERO, "INS-1")
        else:
            outcome, kept_table = against.side(w.kind, first_cards(w))
            table = dict(kept_table)  # each fact's own
            if outcome.ratio is None:
                settle_one(d, w, "lose", None, ZERO, ZERO, outcome.rule, outcome.pattern, table)
            else:
                p = pay(w.stake, outcome.ratio)
                settle_one(
                    d, w, "win", outcome.ratio, w.stake + p.amount, p.rounding, outcome.rule,
                    outcome.pattern, table,
                )  # fmt: skip


def _settle_hand_wager(
    d: Decision[Any],
    w: Wager,
    h: Hand,
    dealer: Sequence[Card],
    dealer_bj: bool,
    dealer_score: Score,
    rules: Rules,
) -> None:
    out = play.main_outcome(
        h.facts(),
        surrendered=h.surrendered,
        dealer=dealer,
        dealer_blackjack=dealer_bj,
        rules=rules,
        dealer_score=dealer_score,
    )
    if (
        dealer_bj
        and rules.dealer_bj_takes == "original_bets_only"
        and w.kind
        in (
            "double",
            "split",
        )
    ):
        refund(d, w, "D8")
        return
    rule = out.rule
    if (
        dealer_bj
        and out.result == "lose"
        and out.rule == "OUT-1"
        and rules.dealer_bj_takes == "all_stakes"
    ):
        rule = "D8"
    if out.result == "surrender":
        p = pay(w.stake, HALF)
        settle_one(d, w, "surrender", None, p.amount, p.rounding, rule)
    elif out.ratio is None:
        settle_one(d, w, out.result, None, ZERO, ZERO, rule)
    else:
        settle_win(d, w, out.result, out.ratio, rule)


def even_money(d: Decision[Any], w: Wager) -> None:
    """EVEN-1: a blackjack against an ace takes 1:1 at once."""
    settle_win(d, w, "even_money", play.WIN, "EVEN-1")


def refund_all(
    d: Decision[Any],
    wagers: Iterable[Wager],
    *,
    rule: str,
    reversal: Callable[[Wager], dict[str, Any]],
) -> None:
    """ERR-1: every stake back; a payment already made is taken back first
    (``reversal(w)``: the ``PaymentReversed`` fields the aggregate records besides the wager,
    the player and the amount)."""
    for w in wagers:
        if w.result == "refund":
            continue  # already returned (DLX-3, PHASE-1): the stake is back with its owner
        if w.settled and w.payout > 0:
            d.consequence(
                "PaymentReversed",
                rule=rule,
                wager_id=w.id,
                player=w.player,
                amount=money_str(w.payout),
                **reversal(w),
            )
        refund(d, w, rule)


__all__ = [
    "SettledAgainst",
    "SettledWager",
    "SideCards",
    "even_money",
    "refund",
    "refund_all",
    "settle_all",
    "settle_one",
    "settle_win",
    "side_outcome",
    "wager_settled_fields",
]
