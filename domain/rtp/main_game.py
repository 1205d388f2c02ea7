"""The exact return of a variant's main game, from its rules object alone.

What is computed
    The expected net result of one initial main bet (stake 1) played alone off the top of a
    freshly shuffled shoe of ``rules.decks`` decks (a finite shoe: every card seen changes the
    odds of the next), summed over every initial deal (player's two cards, dealer's upcard)
    with its exact probability. ``rtp = 1 + expected net``, the return per unit of initial
    stake, the way a published RTP is stated.

The player's strategy (``CDP1``, the standard of exact combinatorial analyses)
    * Every decision is the one with the highest expectation given the exact cards of the hand
      being played (its *composition*, not only its total), the dealer's upcard and, after a
      split, the pair card given to the other hand. Cards of other spots and of the other
      split hand's draws are not used: it is the exact optimum for a hand that knows only its
      own cards.
    * A split hand is played with the strategy that is optimal for it; with one split and no
      resplit (SPLIT-2) the two hands are exchangeable, so the split is worth exactly twice
      the first hand (linearity of expectation and the optional-skipping property of a shuffled
      shoe: the cards after any stopping point are distributed as a fresh draw).
    * Insurance and even money are taken only when their exact expectation is positive (never
      under these rules: a ten is less likely than 1/3 after any two player cards).
    * ``CDZ-`` (split hands played as the same cards unsplit) is available for comparison:
      the difference is what post-split composition is worth. The exact optimum would also
      let the second split hand use the first hand's cards; that refinement is not computed
      (docs/rtp.md estimates it from published single-deck figures: under 0.001 pp).

Method
    A hand's value depends on the multiset of cards removed from the shoe (its own cards, the
    upcard, the other pair card after a split). Dealer probabilities for every such shoe are
    computed at once (``domain.rtp.dealer``); the player's values follow by recursion over
    hands (stand, hit, double, split, surrender). In a peek game (D5) the hole card is treated
    as drawn after the player's cards, which by exchangeability gives the same joint law, and
    every value is ``E[net * 1(no dealer BJ)]``; the dealer-BJ rounds are added at the root. In
    a no-hole-card game (ENHC) the dealer's blackjack is settled against the stakes the hand
    has at risk (D8: all stakes, or the original bet only).

Precision
    Probabilities are binary64; the figure is correct to better than 1e-10 of a unit (money is
    never computed here). The variance is exact except for split hands, whose covariance is
    bounded by Cauchy-Schwarz (``Var(X1 + X2) <= 4 E[X1^2]``): an upper bound, the safe side
    for an observed-RTP interval.

Dealer rule: DEALER-1 (stand on soft 17). A rules object may carry ``dealer_hits_soft_17``
(or ``dealer_soft_17 == "hit"``): the analysis then hits soft 17 (``GameRules.of``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

import numpy as np

from domain.rtp.dealer import (
    ACE,
    RANKS,
    TEN,
    Counts,
    DealerTable,
    blackjack_probability,
    hand_total,
)
from domain.rules.base import Rules

SplitPlay = Literal["CDP1", "CDZ-"]
STAND, HIT, DOUBLE, SPLIT, SURRENDER = "stand", "hit", "double", "split", "surrender"
ACTION_CODES = {STAND: "S", HIT: "H", DOUBLE: "D", SPLIT: "P", SURRENDER: "R", "blackjack": "B"}
RANK_NAMES = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "T")
#: Upcards in the order a strategy chart shows them: 2..9, T, A.
CHART_UPCARDS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 0)


@dataclass(frozen=True, slots=True)
class GameRules:
    """The settings of a :class:`~domain.rules.base.Rules` that decide the main game's value."""

    decks: int
    hits_soft_17: bool
    peek: bool  # D5 (a hole card checked for BJ) or ENHC
    dealer_bj_takes: str  # "peek" | "all_stakes" | "original_bets_only" (D8)
    surrender: str  # "none" | "not_vs_ace_or_ten" | "not_vs_ace_no_bj"
    double: str  # "any_two" | "any_two_not_bj" | "hard_9_11" (D13)
    double_after_split: bool
    split_forbidden_values: frozenset[int]
    split_aces_one_card: bool  # SPLIT-3, or D7 play on
    double_split_aces: bool
    insurance: bool
    insurance_with_blackjack: bool
    even_money: bool
    blackjack_pays: Fraction
    insurance_pays: Fraction

    @classmethod
    def of(cls, rules: Rules, *, decks: int | None = None) -> GameRules:
        """Read a rules object. Extension point for the dealer rule: a ``dealer_hits_soft_17``
        flag (or ``dealer_soft_17 == "hit"``) on the rules object selects H17."""
        h17 = bool(getattr(rules, "dealer_hits_soft_17", False)) or (
            getattr(rules, "dealer_soft_17", "stand") == "hit"
        )
        return cls(
            decks=rules.decks if decks is None else decks,
            hits_soft_17=h17,
            peek=rules.peeks,
            dealer_bj_takes=rules.dealer_bj_takes,
            surrender=rules.surrender,
            double=rules.double,
            double_after_split=rules.double_after_split,
            split_forbidden_values=frozenset(rules.split_forbidden_values),
            split_aces_one_card=rules.split_aces == "one_card",
            double_split_aces=rules.double_split_aces,
            insurance=rules.insurance,
            insurance_with_blackjack=rules.insurance_with_blackjack,
            even_money=rules.even_money,
            blackjack_pays=Fraction(
                rules.blackjack_pays.numerator, rules.blackjack_pays.denominator
            ),
            insurance_pays=Fraction(
                rules.insurance_pays.numerator, rules.insurance_pays.denominator
            ),
        )

    def describe(self) -> dict[str, object]:
        return {
            "decks": self.decks,
            "dealer": "hits soft 17" if self.hits_soft_17 else "stands on soft 17 (DEALER-1)",
            "hole_card": "peek (D5)" if self.peek else f"none (ENHC, D8: {self.dealer_bj_takes})",
            "surrender": self.surrender,
            "double": self.double,
            "double_after_split": self.double_after_split,
            "split": "once (SPLIT-2)",
            "split_forbidden_values": sorted(self.split_forbidden_values),
            "split_aces": "one card each" if self.split_aces_one_card else "may hit (D7)",
            "blackjack_pays": str(self.blackjack_pays),
        }


@dataclass(frozen=True, slots=True)
class _V:
    """A value of a hand: mean and second moment of its net result (in initial-stake units),
    and the same when every double is made at single stake (a bet behind that does not follow
    the double, DLX-7). In a peek game all are ``E[... * 1(no dealer BJ)]``."""

    ev: float
    e2: float
    ev1: float
    e21: float
    action: str = STAND

    def halved_double(self) -> _V:
        return _V(self.ev, self.e2, self.ev / 2, self.e2 / 4, DOUBLE)


@dataclass
class InitialHand:
    """One initial deal's analysis: cards, upcard, probability and the best play."""

    cards: tuple[int, int]
    up: int
    probability: Fraction
    action: str
    ev: float
    e2: float
    values: dict[str, float]
    behind: dict[str, tuple[float, float]] = field(default_factory=dict)
    dealer_blackjack: float = 0.0  # P(the hole card makes a dealer BJ | these cards)


@dataclass
class MainGameResult:
    rules: GameRules
    split_play: SplitPlay
    ev: float
    e2: float
    behind: dict[str, tuple[float, float]]
    hands: list[InitialHand]
    insurance_rtp: Fraction | None
    insurance_probability: Fraction | None
    cpu_seconds: float

    @property
    def rtp(self) -> float:
        return 1.0 + self.ev

    def frequencies(self) -> dict[str, float]:
        """How often each first decision is taken (``blackjack`` for a natural, which takes
        none), and how often the dealer has a blackjack (which ends a peek round, END-1)."""
        out: dict[str, float] = {}
        dealer_bj = 0.0
        for h in self.hands:
            p = float(h.probability)  # float ok: a probability, not money
            out[h.action] = out.get(h.action, 0.0) + p
            dealer_bj += p * h.dealer_blackjack
        out["dealer_blackjack"] = dealer_bj
        return out

    @property
    def variance(self) -> float:
        return self.e2 - self.ev * self.ev

    def chart(self) -> dict[str, str]:
        """The initial-hand decisions as a strategy chart: ``"T6": "SSSSSHHRRR"`` (upcards
        2..9, T, A; S stand, H hit, D double, P split, R surrender, B blackjack)."""
        table: dict[str, dict[int, str]] = {}
        for h in self.hands:
            a, b = sorted(h.cards, key=lambda r: (r == ACE, r), reverse=True)
            name = RANK_NAMES[a] + RANK_NAMES[b]
            table.setdefault(name, {})[h.up] = ACTION_CODES[h.action]
        return {
            name: "".join(row.get(u, "-") for u in CHART_UPCARDS) for name, row in table.items()
        }


def analyse(
    rules: Rules | GameRules,
    *,
    split_play: SplitPlay = "CDP1",
    upcards: tuple[int, ...] = tuple(range(RANKS)),
) -> MainGameResult:
    """The exact main-game analysis of ``rules`` (see the module docstring)."""
    started = time.process_time()
    game = rules if isinstance(rules, GameRules) else GameRules.of(rules)
    full = tuple(game.decks * (16 if r == TEN else 4) for r in range(RANKS))
    total_cards = sum(full)
    ev = e2 = 0.0
    behind = dict.fromkeys(BEHIND_FOLLOW, (0.0, 0.0))
    hands: list[InitialHand] = []
    ins_num = Fraction(0)
    ins_den = Fraction(0)
    for up in upcards:
        if full[up] == 0:
            continue
        solver = _UpcardSolver(game, full, up, split_play)
        p_up = Fraction(full[up], total_cards)
        for hand in solver.initial_hands(p_up):
            hands.append(hand)
            p = float(hand.probability)  # float ok: a probability, not money
            ev += p * hand.ev
            e2 += p * hand.e2
            for k, (m, s) in hand.behind.items():
                bm, bs = behind[k]
                behind[k] = (bm + p * m, bs + p * s)
            if up == ACE and game.insurance and solver.offers_insurance(hand.cards):
                q = solver.exact_blackjack_probability(hand.cards)
                ins_num += hand.probability * q
                ins_den += hand.probability
    insurance_rtp = insurance_p = None
    if ins_den:
        insurance_p = ins_num / ins_den  # P(dealer BJ | insurance offered and taken)
        insurance_rtp = insurance_p * (1 + game.insurance_pays)
    return MainGameResult(
        rules=game,
        split_play=split_play,
        ev=ev,
        e2=e2,
        behind=behind,
        hands=hands,
        insurance_rtp=insurance_rtp,
        insurance_probability=insurance_p,
        cpu_seconds=time.process_time() - started,
    )


#: Bets behind (DLX-5): which of the seat's doubles and splits the bet follows (DLX-7/8).
BEHIND_FOLLOW = ("follow_both", "follow_double", "follow_split", "follow_none")


class _UpcardSolver:
    """All hands against one upcard: the dealer table for every shoe the player can leave,
    and the player's values by recursion."""

    def __init__(self, game: GameRules, full: Counts, up: int, split_play: SplitPlay) -> None:
        self.game = game
        self.up = up
        self.split_play = split_play
        self.shoe = tuple(c - (1 if r == up else 0) for r, c in enumerate(full))
        removals = sorted(self._needed_removals())
        shoes = np.array(
            [[s - r for s, r in zip(self.shoe, rem, strict=True)] for rem in removals],
            dtype=np.int64,
        )
        table = DealerTable(up, hits_soft_17=game.hits_soft_17, max_count=sum(full))
        probs = table.outcomes(shoes) if removals else np.zeros((0, 6))
        # stand[t]: player total t (16 means 16 or less) against each outcome 17..21, bust.
        cmp = np.array(
            [[(t > 17 + o) - (t < 17 + o) for o in range(5)] + [1] for t in range(16, 22)],
            dtype=np.float64,
        )
        self._stand = dict(zip(removals, (probs @ cmp.T).tolist(), strict=True))
        self._decided = dict(zip(removals, (probs @ np.abs(cmp).T).tolist(), strict=True))
        self._memo: dict[tuple[Counts, int], _V] = {}
        self._zminus: dict[Counts, str] = {}

    # ---------------------------------------------------------------- shoes
    def _feasible(self, removed: Counts) -> bool:
        return all(r <= s for r, s in zip(removed, self.shoe, strict=True))

    def _needed_removals(self) -> set[Counts]:
        """Every set of removed cards whose dealer distribution a stand may need."""
        out: set[Counts] = set()
        for h in _hands_up_to_21():
            if self._feasible(h) and sum(h) >= 2:
                out.add(h)
            for c in range(RANKS):
                if h[c]:
                    r = _add(h, c)
                    if self._feasible(r) and sum(h) >= 2:
                        out.add(r)
        return out

    def _next(self, removed: Counts) -> Iterator[tuple[int, float]]:
        left = [s - r for s, r in zip(self.shoe, removed, strict=True)]
        n = sum(left)
        for r in range(RANKS):
            if left[r]:
                yield r, left[r] / n

    def _p_bj(self, removed: Counts) -> float:
        return blackjack_probability(
            self.up, [s - r for s, r in zip(self.shoe, removed, strict=True)]
        )

    def exact_blackjack_probability(self, cards: tuple[int, int]) -> Fraction:
        left = list(self.shoe)
        for c in cards:
            left[c] -= 1
        n = sum(left)
        if self.up == ACE:
            return Fraction(left[TEN], n)
        if self.up == TEN:
            return Fraction(left[ACE], n)
        return Fraction(0)

    def offers_insurance(self, cards: tuple[int, int]) -> bool:
        bj = makes_bj(cards)
        return self.game.insurance_with_blackjack or not bj

    # ------------------------------------------------------ terminal values
    def _bj_loss(self, stake: float, *, split: bool) -> float:
        """What a dealer blackjack takes from this hand (ENHC only; a peek game ended the
        round before, END-1)."""
        g = self.game
        if g.peek:
            return 0.0
        if g.dealer_bj_takes == "original_bets_only":
            return -0.5 if split else -1.0  # doubles and the split stake are refunded (D8)
        return -stake

    def _terminal(self, removed: Counts, total: int, stake: float, *, split: bool) -> _V:
        loss = self._bj_loss(stake, split=split)
        pbj = self._p_bj(removed)
        if total > 21:
            ev = -stake * (1 - pbj) + loss * pbj
            e2 = stake * stake * (1 - pbj) + loss * loss * pbj
        else:
            t = max(total, 16) - 16
            ev = stake * self._stand[removed][t] + loss * pbj
            e2 = stake * stake * self._decided[removed][t] + loss * loss * pbj
        return _V(ev, e2, ev, e2, STAND)

    # ------------------------------------------------------------ recursion
    def _hit_stand(self, hand: Counts, partner: int) -> _V:
        """Best of stand and hit for a hand that may only hit or stand (three cards or more,
        or two after an action); ``partner`` is the other split hand's pair card or -1."""
        key = (hand, partner)
        found = self._memo.get(key)
        if found is not None:
            return found
        removed = hand if partner < 0 else _add(hand, partner)
        total = _total(hand)
        split = partner >= 0
        stand = self._terminal(removed, total, 1.0, split=split)
        if total >= 21:
            best = stand
        else:
            hit = self._hit(hand, partner, removed)
            best = hit if hit.ev > stand.ev else stand
            if split and self.split_play == "CDZ-":
                best = hit if self._unsplit_choice(hand) == HIT else stand
        self._memo[key] = best
        return best

    def _hit(self, hand: Counts, partner: int, removed: Counts) -> _V:
        ev = e2 = ev1 = e21 = 0.0
        for r, p in self._next(removed):
            v = self._hit_stand(_add(hand, r), partner)
            ev += p * v.ev
            e2 += p * v.e2
            ev1 += p * v.ev1
            e21 += p * v.e21
        return _V(ev, e2, ev1, e21, HIT)

    def _double(self, hand: Counts, partner: int, removed: Counts) -> _V:
        ev = e2 = 0.0
        split = partner >= 0
        for r, p in self._next(removed):
            new = _add(hand, r)
            v = self._terminal(_add(removed, r), _total(new), 2.0, split=split)
            ev += p * v.ev
            e2 += p * v.e2
        return _V(ev, e2, ev, e2).halved_double()

    def _unsplit_choice(self, hand: Counts) -> str:
        """CDZ-: the action the same cards would take unsplit (hit or stand)."""
        if hand not in self._zminus:
            self._zminus[hand] = self._hit_stand(hand, -1).action
        return self._zminus[hand]

    def _can_double(self, hand: Counts, *, split: bool, split_aces: bool) -> bool:
        g = self.game
        if split and (not g.double_after_split or (split_aces and not g.double_split_aces)):
            return False
        if g.double == "hard_9_11":
            total, soft = _total_soft(hand)
            return not soft and 9 <= total <= 11
        return True

    def _split_hand(self, hand: Counts, pair: int) -> _V:
        """A split hand's first decision, on its two cards (one pair card and one drawn)."""
        g = self.game
        removed = _add(hand, pair)
        total = _total(hand)
        aces = pair == ACE
        stand = self._terminal(removed, total, 1.0, split=True)
        if total == 21 or (aces and g.split_aces_one_card):
            return stand  # HAND-1, SPLIT-3
        options = [stand, self._hit(hand, pair, removed)]
        if self._can_double(hand, split=True, split_aces=aces):
            options.append(self._double(hand, pair, removed))
        if self.split_play == "CDZ-":
            ranked = self._two_card_options(hand)
            for action in ranked:
                for v in options:
                    if v.action == action:
                        return v
        return max(options, key=lambda v: v.ev)

    def _two_card_options(self, hand: Counts) -> list[str]:
        """CDZ-: the actions of the same two cards unsplit, best first."""
        values = {
            STAND: self._terminal(hand, _total(hand), 1.0, split=False).ev,
            HIT: self._hit(hand, -1, hand).ev,
        }
        if self._can_double(hand, split=False, split_aces=False):
            values[DOUBLE] = self._double(hand, -1, hand).ev
        return sorted(values, key=lambda a: -values[a])

    def _split(self, pair: int) -> tuple[_V, _V]:
        """(both hands, first hand only) of splitting a pair of ``pair``."""
        start = _one(pair)
        removed = _add(start, pair)
        ev = e2 = ev1 = e21 = 0.0
        for r, p in self._next(removed):
            v = self._split_hand(_add(start, r), pair)
            ev += p * v.ev
            e2 += p * v.e2
            ev1 += p * v.ev1
            e21 += p * v.e21
        both = _V(2 * ev, 4 * e2, 2 * ev1, 4 * e21, SPLIT)
        first = _V(ev, e2, ev1, e21, SPLIT)
        return both, first

    # ------------------------------------------------------------------ root
    def initial_hands(self, p_up: Fraction) -> Iterator[InitialHand]:
        shoe = self.shoe
        n = sum(shoe)
        for a in range(RANKS):
            for b in range(a, RANKS):
                if shoe[a] == 0 or shoe[b] - (a == b) <= 0:
                    continue
                ways = shoe[a] * (shoe[b] - (a == b)) * (1 if a == b else 2)
                prob = p_up * Fraction(ways, n * (n - 1))
                yield self._initial(a, b, prob)

    def _initial(self, a: int, b: int, prob: Fraction) -> InitialHand:
        g = self.game
        hand = _add(_one(a), b)
        q = self._p_bj(hand)
        if makes_bj((a, b)):
            win = float(g.blackjack_pays)  # float ok: a payout ratio in an expectation, not money
            ev = win * (1 - q)
            e2 = win * win * (1 - q)
            values = {"blackjack": ev}
            if g.even_money and self.up == ACE and ev < 1.0:
                ev, e2, values["even_money"] = 1.0, 1.0, 1.0
            behind = dict.fromkeys(BEHIND_FOLLOW, (ev, e2))
            return InitialHand((a, b), self.up, prob, "blackjack", ev, e2, values, behind, q)
        options: dict[str, tuple[_V, _V]] = {}
        stand = self._terminal(hand, _total(hand), 1.0, split=False)
        options[STAND] = (stand, stand)
        if _total(hand) < 21:
            hit = self._hit(hand, -1, hand)
            options[HIT] = (hit, hit)
        if g.double != "hard_9_11" or self._can_double(hand, split=False, split_aces=False):
            d = self._double(hand, -1, hand)
            options[DOUBLE] = (d, d)
        if a == b and (a + 1) not in g.split_forbidden_values:
            options[SPLIT] = self._split(a)
        if self._can_surrender():
            loss = 0.0 if g.peek else -0.5
            s = _V(-0.5 * (1 - q) + loss * q, 0.25 * (1 - q) + loss * loss * q, 0, 0, SURRENDER)
            s = _V(s.ev, s.e2, s.ev, s.e2, SURRENDER)
            options[SURRENDER] = (s, s)
        action = max(options, key=lambda k: options[k][0].ev)
        best, first = options[action]
        root = -q if g.peek else 0.0  # peek: a dealer BJ took the stake (END-1)
        root2 = q if g.peek else 0.0
        values = {k: v[0].ev + root for k, v in options.items()}
        if self.up == ACE and g.insurance:
            # INS-1: half the stake on the hole card; taken only when it gains (never under
            # these rules, so the variance needs no cross term for it).
            insure = 0.5 * (q * float(1 + g.insurance_pays) - 1)  # float ok: an expectation
            values["insurance"] = insure
            if insure > 0:
                root += insure
        behind = {
            "follow_both": (best.ev + root, best.e2 + root2),
            "follow_double": (first.ev + root, first.e2 + root2),
            "follow_split": (best.ev1 + root, best.e21 + root2),
            "follow_none": (first.ev1 + root, first.e21 + root2),
        }
        return InitialHand(
            (a, b), self.up, prob, action, best.ev + root, best.e2 + root2, values, behind, q
        )

    def _can_surrender(self) -> bool:
        g = self.game
        if g.surrender == "not_vs_ace_or_ten":
            return self.up not in (ACE, TEN)
        if g.surrender == "not_vs_ace_no_bj":
            return self.up != ACE
        return False


def makes_bj(cards: tuple[int, int]) -> bool:
    return set(cards) == {ACE, TEN}


def _one(r: int) -> Counts:
    return tuple(1 if i == r else 0 for i in range(RANKS))


def _add(h: Counts, r: int) -> Counts:
    return (*h[:r], h[r] + 1, *h[r + 1 :])


def _hard(h: Counts) -> int:
    return sum((i + 1) * c for i, c in enumerate(h))


def _total_soft(h: Counts) -> tuple[int, bool]:
    return hand_total(_hard(h), h[ACE] > 0)


def _total(h: Counts) -> int:
    return _total_soft(h)[0]


def _hands_up_to_21() -> Iterator[Counts]:
    """Every multiset of ranks with a hard total of 21 or less (at least one card)."""

    def rec(start: int, counts: list[int], hard: int) -> Iterator[Counts]:
        for r in range(start, RANKS):
            if hard + r + 1 > 21:
                break
            counts[r] += 1
            yield tuple(counts)
            yield from rec(r, counts, hard + r + 1)
            counts[r] -= 1

    yield from rec(0, [0] * RANKS, 0)


__all__ = [
    "ACTION_CODES",
    "BEHIND_FOLLOW",
    "GameRules",
    "InitialHand",
    "MainGameResult",
    "SplitPlay",
    "analyse",
    "makes_bj",
]
