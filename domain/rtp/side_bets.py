"""Side bets' exact return, by enumeration of the shoe with the variant's own evaluators.

Every figure here is an exact rational (:class:`fractions.Fraction`): each way the bet's cards
can come out of a full shoe of ``rules.decks`` decks is weighted by its exact number of
orderings and judged by the evaluator that settles real wagers (``domain.sidebets``), with the
variant's own paytable. Nothing here knows a pay rule; this module only enumerates.

* ``pair`` (DLX-PAIR, BDL-PAIR/D11): the hand's first two cards and, where the paytable has
  suited trips (deluxe), the dealer's first card: every ordered triple of the 52 card types.
* ``trio`` (BDL-TRIO/D12) and ``poker`` (BDL-POKER): the player's first two cards and the
  dealer's first card, every ordered triple.
* ``bust`` (BDL-BUST) with the dealer's play: every finished dealer hand (DEALER-1 from each
  upcard, ``domain.rtp.dealer``), blackjacks included. The players' draws come between the
  dealer's hole card and the dealer's draws, but whatever they take is a stopping time of the
  shuffled shoe, so the dealer's draws have the law of draws from the top (optional skipping).
* ``lucky7`` (L7-2/L7-3/D14): the box's first two cards, the dealer's upcard and covered card,
  and the third card when the box takes one. Whether it does is the main-game strategy's
  decision for those two cards against that upcard (hit, double or split draw a third card;
  stand and blackjack do not); a dealer blackjack ends the round first (L7-3).
* ``insurance`` (INS-1): taken on every hand it is offered to (upcard an ace): it returns
  ``1 + insurance_pays`` when the hole card makes a blackjack.

For each bet: ``rtp = E[R]`` and ``variance = E[R^2] - E[R]^2`` of ``R``, what one unit staked
returns (``1 + ratio`` on a win, 0 on a loss), and ``hit_frequency``: the probability of each
pattern (and of ``lose``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from math import gcd, prod

from domain.cards import RANKS as CARD_RANKS
from domain.cards import Card, full_deck
from domain.money import Ratio
from domain.rtp.dealer import RANKS, TEN, dealer_sequences
from domain.rules.base import Rules
from domain.sidebets import (
    LUCKY7_PATTERNS,
    SideBetOutcome,
    evaluate_bust_bonus,
    evaluate_lucky7,
    evaluate_lucky_trio,
    evaluate_pair,
    evaluate_poker_trio,
)

LOSE = "lose"
#: The rule each bet name settles under.
BET_RULES = {
    "pair": "DLX-PAIR / BDL-PAIR",
    "bust": "BDL-BUST",
    "trio": "BDL-TRIO",
    "poker": "BDL-POKER",
    "lucky7": "L7-2 / L7-3",
    "insurance": "INS-1",
}


@dataclass(frozen=True)
class SideBetResult:
    """The exact figures of one bet under one rules key."""

    bet: str
    rule: str
    paytable: Mapping[str, str]
    rtp: Fraction
    variance: Fraction
    hit_frequency: Mapping[str, Fraction]
    third_central_moment: Fraction = Fraction(0)
    cpu_seconds: float = 0.0

    @property
    def skewness(self) -> float:
        if not self.variance:
            return 0.0
        # float ok: a statistic of the return's distribution, not money
        third = float(self.third_central_moment)  # float ok
        return third / float(float(self.variance) ** 1.5)  # float ok

    def as_json(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "paytable": dict(self.paytable),
            "rtp": decimal_text(self.rtp),
            "rtp_exact": f"{self.rtp.numerator}/{self.rtp.denominator}",
            "variance": decimal_text(self.variance),
            "variance_exact": f"{self.variance.numerator}/{self.variance.denominator}",
            "skewness": f"{self.skewness:.6f}",
            "hit_frequency": {k: decimal_text(v) for k, v in self.hit_frequency.items()},
            "hit_frequency_exact": {
                k: f"{v.numerator}/{v.denominator}" for k, v in self.hit_frequency.items()
            },
        }


def decimal_text(x: Fraction, places: int = 12) -> str:
    """A fraction as a decimal string, rounded half-even to ``places`` decimals.

    >>> decimal_text(Fraction(1, 3)), decimal_text(Fraction(-1, 8), 2)
    ('0.333333333333', '-0.12')
    """
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 60
        value = Decimal(x.numerator) / Decimal(x.denominator)
        return str(value.quantize(Decimal(1).scaleb(-places)))


def _result(
    bet: str, paytable: Mapping[str, Ratio], weights: Mapping[str, int], total: int, t0: float
) -> SideBetResult:
    freq = {p: Fraction(w, total) for p, w in weights.items() if w}
    returns = {p: 1 + Fraction(r.numerator, r.denominator) for p, r in paytable.items()}
    rtp = sum((f * returns.get(p, 0) for p, f in freq.items()), Fraction(0))
    second = sum((f * returns.get(p, 0) ** 2 for p, f in freq.items()), Fraction(0))
    third = sum((f * (returns.get(p, 0) - rtp) ** 3 for p, f in freq.items()), Fraction(0))
    ordered = {p: freq[p] for p in (*paytable, LOSE) if p in freq}
    return SideBetResult(
        bet=bet,
        rule=BET_RULES[bet],
        paytable={p: str(r) for p, r in paytable.items()},
        rtp=rtp,
        variance=second - rtp * rtp,
        hit_frequency=ordered,
        third_central_moment=third,
        cpu_seconds=time.process_time() - t0,
    )


def _pattern(outcome: SideBetOutcome) -> str:
    return outcome.pattern if outcome.pattern is not None else LOSE


def enumerate_three_cards(
    decks: int, judge: Callable[[Card, Card, Card], SideBetOutcome]
) -> tuple[dict[str, int], int]:
    """Weight of each pattern over every ordered triple of distinct shoe cards (three cards
    taken one after another from a full shoe), and the number of such triples."""
    types = full_deck()
    m = decks
    weights: dict[str, int] = {}
    for i, a in enumerate(types):
        for j, b in enumerate(types):
            wb = m - (j == i)
            if wb <= 0:
                continue
            for k, c in enumerate(types):
                wc = m - (k == i) - (k == j)
                if wc <= 0:
                    continue
                p = _pattern(judge(a, b, c))
                weights[p] = weights.get(p, 0) + m * wb * wc
    n = 52 * m
    return weights, n * (n - 1) * (n - 2)


def analyse_pair(rules: Rules) -> SideBetResult:
    t0 = time.process_time()
    table = rules.side_bets["pair"]
    rule = "DLX-PAIR" if "suited_trips" in table else "BDL-PAIR"
    if "suited_trips" in table:
        weights, total = enumerate_three_cards(
            rules.decks, lambda a, b, c: evaluate_pair(a, b, c, paytable=table, rule=rule)
        )
    else:
        weights, total = _enumerate_two_cards(
            rules.decks, lambda a, b: evaluate_pair(a, b, paytable=table, rule=rule)
        )
    return _result("pair", table, weights, total, t0)


def _enumerate_two_cards(
    decks: int, judge: Callable[[Card, Card], SideBetOutcome]
) -> tuple[dict[str, int], int]:
    types = full_deck()
    weights: dict[str, int] = {}
    for i, a in enumerate(types):
        for j, b in enumerate(types):
            wb = decks - (j == i)
            if wb <= 0:
                continue
            p = _pattern(judge(a, b))
            weights[p] = weights.get(p, 0) + decks * wb
    n = 52 * decks
    return weights, n * (n - 1)


def analyse_trio(rules: Rules) -> SideBetResult:
    t0 = time.process_time()
    table = rules.side_bets["trio"]
    weights, total = enumerate_three_cards(
        rules.decks, lambda a, b, c: evaluate_lucky_trio(a, b, c, paytable=table)
    )
    return _result("trio", table, weights, total, t0)


def analyse_poker(rules: Rules) -> SideBetResult:
    t0 = time.process_time()
    table = rules.side_bets["poker"]
    weights, total = enumerate_three_cards(
        rules.decks, lambda a, b, c: evaluate_poker_trio(a, b, c, paytable=table)
    )
    return _result("poker", table, weights, total, t0)


#: One card of each value index (ace = 0 ... ten-value = 9), for evaluators that read values.
_BY_VALUE = tuple(Card(r, "S") for r in ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10"))


def analyse_bust(rules: Rules, *, hits_soft_17: bool = False) -> SideBetResult:
    """BDL-BUST with the dealer's play (D10: the dealer always completes, except a BJ)."""
    t0 = time.process_time()
    table = rules.side_bets["bust"]
    d = rules.decks
    full = [d * (16 if r == TEN else 4) for r in range(RANKS)]
    n = sum(full)
    weights: dict[str, Fraction] = {}
    for up in range(RANKS):
        left = list(full)
        left[up] -= 1
        for seq in dealer_sequences(up, hits_soft_17=hits_soft_17):
            k = sum(seq.drawn)
            ways = seq.orders * prod(_falling(left[r], c) for r, c in enumerate(seq.drawn))
            if not ways:
                continue
            cards = [_BY_VALUE[up]] + [
                _BY_VALUE[r] for r, c in enumerate(seq.drawn) for _ in range(c)
            ]
            p = _pattern(evaluate_bust_bonus(cards, paytable=table))
            weights[p] = weights.get(p, Fraction(0)) + Fraction(
                full[up] * ways, n * _falling(n - 1, k)
            )
    # Blackjacks (left out of the sequences) never bust: they lose.
    weights[LOSE] = 1 - sum((w for p, w in weights.items() if p != LOSE), Fraction(0))
    denominator = 1
    for w in weights.values():
        denominator = denominator * w.denominator // gcd(denominator, w.denominator)
    ints = {p: int(w * denominator) for p, w in weights.items()}
    return _result("bust", table, ints, denominator, t0)


Decision = Callable[[int, int, int], str]
"""The main-game action for two cards (value indices) against an upcard (value index)."""


def analyse_lucky7(rules: Rules, decide: Decision) -> SideBetResult:
    """L7-2/L7-3 (D14) on a box's first cards; ``decide`` is the main-game strategy."""
    t0 = time.process_time()
    table = rules.side_bets["lucky7"]
    if set(table) - set(LUCKY7_PATTERNS):
        raise ValueError("a suited Lucky 7 paytable needs an enumeration over suits")
    d = rules.decks
    ranks = [Card(r, "S") for r in CARD_RANKS]  # the patterns read ranks only
    counts = [4 * d] * len(ranks)
    value = [min(i, 9) for i in range(len(ranks))]  # A=0 ... 9=8, 10/J/Q/K=9
    n = sum(counts)
    weights: dict[str, int] = {}
    total = n * (n - 1) * (n - 2) * (n - 3) * (n - 4)
    left = list(counts)

    def take(i: int) -> int:
        w = left[i]
        left[i] -= 1
        return w

    for b1 in range(len(ranks)):
        w1 = take(b1)
        for b2 in range(len(ranks)):
            if not left[b2]:
                continue
            w2 = take(b2)
            for up in range(len(ranks)):
                if not left[up]:
                    continue
                wu = take(up)
                for hole in range(len(ranks)):
                    if not left[hole]:
                        continue
                    wh = take(hole)
                    w = w1 * w2 * wu * wh
                    rest = n - 4
                    box = [ranks[b1], ranks[b2]]
                    if {value[up], value[hole]} == {0, 9}:  # dealer BJ: no third card
                        p = _pattern(evaluate_lucky7(box, dealer_blackjack=True, paytable=table))
                        _add(weights, p, w * rest)
                    elif decide(value[b1], value[b2], value[up]) in ("stand", "blackjack"):
                        p = _pattern(evaluate_lucky7(box, dealer_blackjack=False, paytable=table))
                        _add(weights, p, w * rest)
                    else:
                        for b3 in range(len(ranks)):
                            if left[b3]:
                                p = _pattern(
                                    evaluate_lucky7(
                                        [*box, ranks[b3]], dealer_blackjack=False, paytable=table
                                    )
                                )
                                _add(weights, p, w * left[b3])
                    left[hole] += 1
                left[up] += 1
            left[b2] += 1
        left[b1] += 1
    return _result("lucky7", table, weights, total, t0)


def insurance_result(probability: Fraction, pays: Fraction) -> SideBetResult:
    """INS-1 taken on every offer: wins ``pays`` when the hole card makes a blackjack."""
    freq = {"dealer_blackjack": probability, LOSE: 1 - probability}
    back = 1 + pays
    rtp = probability * back
    return SideBetResult(
        bet="insurance",
        rule=BET_RULES["insurance"],
        paytable={"dealer_blackjack": f"{pays.numerator}:{pays.denominator}"},
        rtp=rtp,
        variance=probability * back * back - rtp * rtp,
        hit_frequency=freq,
        third_central_moment=probability * (back - rtp) ** 3 + (1 - probability) * (-rtp) ** 3,
    )


def analyse_side_bets(rules: Rules, decide: Decision | None = None) -> dict[str, SideBetResult]:
    """Every side bet of ``rules`` (insurance is added by the caller from the main game)."""
    out: dict[str, SideBetResult] = {}
    for bet in rules.side_bets:
        if bet == "pair":
            out[bet] = analyse_pair(rules)
        elif bet == "trio":
            out[bet] = analyse_trio(rules)
        elif bet == "poker":
            out[bet] = analyse_poker(rules)
        elif bet == "bust":
            out[bet] = analyse_bust(rules)
        elif bet == "lucky7":
            if decide is None:
                raise ValueError("lucky7 needs the main game's strategy (L7-3)")
            out[bet] = analyse_lucky7(rules, decide)
        else:
            raise ValueError(f"no RTP analysis for side bet {bet!r}")
    return out


def _add(weights: dict[str, int], pattern: str, w: int) -> None:
    weights[pattern] = weights.get(pattern, 0) + w


def _falling(x: int, k: int) -> int:
    out = 1
    for i in range(k):
        out *= x - i
    return out


__all__ = [
    "BET_RULES",
    "LOSE",
    "SideBetResult",
    "analyse_bust",
    "analyse_lucky7",
    "analyse_pair",
    "analyse_poker",
    "analyse_side_bets",
    "analyse_trio",
    "decimal_text",
    "enumerate_three_cards",
    "insurance_result",
]
