"""Wagers: their state, which bets a table takes, its limits, and what a decision costs.

* :class:`Wager`: one wager (main, split, double, insurance, side bet, bet behind), immutable;
  :func:`money_value`: the amount a fact's text names, one shared ``Decimal`` a text.
* :func:`check_stake`: the table limits of a bet type (D18): each limit is a setting of the
  rules key (``min_bet``/``max_bet`` for main bets and bets behind, ``side_min_bet``/
  ``side_max_bet`` for side bets, ``lucky7_max_stake`` for L7-1, and ``bet_limits`` to set any
  bet type's own minimum and maximum); a refusal names the limit and the setting.
* :func:`seat_split`: DLX-2 for a two-seat player, with D17 (an odd minor unit left by an
  equal split stays in the wallet).
* :func:`insurance_cost`, :func:`funds_policy`: what an insurance, a double or a split costs
  and what a decision does when the balance does not cover it (FUNDS-1, FUNDS-2).

>>> from domain.rules import get_rules
>>> seat_split(Decimal("10.01"), Decimal("12.00"), get_rules("deluxe"))  # D17: 0.01 stays
(Decimal('5.00'), 'split', 'D17')
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal
from typing import Any

from domain.errors import (
    BetLimit,
    IllegalAction,
    InsufficientFunds,
    SideBetUnavailable,
    UnknownPlayer,
)
from domain.game.state import fast_init
from domain.kept import KeptValues
from domain.money import ZERO, half_down, money_str, parse_money
from domain.rules.base import Rules

MAIN_KINDS = ("main", "split")
BEHIND_KINDS = ("behind", "behind_double", "behind_split")
#: Wagers settled with a hand's result against the dealer's (OUT-1..4, SURR-1, D8).
HAND_KINDS = (*MAIN_KINDS, "double", *BEHIND_KINDS)
_CENT = Decimal("0.01")

#: The rule under which a bet of each kind is placed: the rule its stake's wallet debit cites
#: (``domain.movements``). A classic round's main bet is placed in the bets phase (PHASE-1),
#: a boundless player's main bet seats the player (BDL-1); a side bet of a kind not named here
#: (a variant defined as data only) cites the bets phase, PHASE-1.
CLASSIC_BET_RULES: dict[str, str] = {
    "main": "PHASE-1",
    "behind": "DLX-5",
    "pair": "DLX-PAIR",
    "lucky7": "L7-1",
}
BOUNDLESS_BET_RULES: dict[str, str] = {
    "main": "BDL-1",
    "pair": "BDL-PAIR",
    "bust": "BDL-BUST",
    "trio": "BDL-TRIO",
    "poker": "BDL-POKER",
}
BET_PHASE_RULE = "PHASE-1"


def bet_rule(kind: str, rules_by_kind: dict[str, str]) -> str:
    """The rule a bet of ``kind`` is placed under.

    >>> bet_rule("behind", CLASSIC_BET_RULES), bet_rule("pair", BOUNDLESS_BET_RULES)
    ('DLX-5', 'BDL-PAIR')
    >>> bet_rule("jackpot", CLASSIC_BET_RULES)
    'PHASE-1'
    """
    return rules_by_kind.get(kind, BET_PHASE_RULE)


#: The amounts :func:`money_value` made, by their text (at most :data:`VALUES_KEPT`).
VALUES_KEPT = 4096
_VALUES: KeptValues[str, str, Decimal] = KeptValues(Decimal, most=VALUES_KEPT)


def money_value(text: str) -> Decimal:
    """``Decimal(text)``: the amount of a fact's stake or payout (a decimal string), one
    ``Decimal`` for every fact of the same text while kept (a ``Decimal`` is immutable, and
    equal texts give equal values of the same exponent; :data:`VALUES_KEPT` at most,
    ``domain.kept``). A round's stakes and payouts are a few amounts said again and again: a
    ``Decimal`` of its own for each wager was about 100 bytes of every stake and payout a
    boundless round holds for each player until it ends (docs/performance-history.md
    ``bwmem``).

    >>> money_value("10.00") is money_value("10.00"), money_value("1.50")
    (True, Decimal('1.50'))
    """
    return _VALUES.kept(text, text)


@fast_init
@dataclass(frozen=True, slots=True)
class Wager:
    """One wager of one player (state only)."""

    id: str
    player: str
    kind: str
    stake: Decimal
    spot: str | None
    hand: str | None
    settled: bool = False
    payout: Decimal = ZERO
    result: str | None = None
    follow_double: bool = False  # DLX-7 (a bet behind)
    follow_split: bool = False  # DLX-8 (a bet behind)
    window_decided: bool = False  # DLX-6: a bet behind's own insurance decision is in

    def __deepcopy__(self, memo: dict[int, Any]) -> Wager:
        return self  # immutable


def wager_json(w: Wager) -> dict[str, Any]:
    """A wager as the round's view shows it (every kind of round alike)."""
    return {
        "wager_id": w.id,
        "player": w.player,
        "kind": w.kind,
        "stake": money_str(w.stake),
        "hand": w.hand,
        "settled": w.settled,
        "result": w.result,
        "payout": money_str(w.payout),
    }


def check_player_id(player: object, reserved: frozenset[str]) -> str:
    """A usable player id: a non-empty string of at most 200 characters, no '.' (hand ids
    extend it) and no ':' (wager ids join with it), not a reserved name."""
    if (
        not isinstance(player, str)
        or not player.strip()
        or player in reserved
        or "." in player
        or ":" in player
        or len(player) > 200
    ):
        raise UnknownPlayer(
            f"player id {player!r} is not usable: non-empty, no '.' or ':', "
            f"not one of {', '.join(sorted(reserved))}"
        )
    return player


def check_kind(rules: Rules, kind: str, shoe_round: int, *, offered: tuple[str, ...]) -> None:
    """The variant takes this bet type: a main bet, a bet behind where DLX-5 allows it, or one
    of its side bets while the shoe still offers it (BDL-AVAIL)."""
    if kind == "main":
        return
    if kind == "behind":
        if not rules.bet_behind:
            raise IllegalAction(f"{rules.variant} has no bet behind", rule="DLX-5")
        return
    if kind not in rules.side_bets:
        raise IllegalAction(f"{rules.variant} takes no {kind!r} bet; it takes {', '.join(offered)}")
    limit = rules.side_bet_round_limits.get(kind)
    if limit is not None and shoe_round > limit:
        raise SideBetUnavailable(
            f"the {kind} side bet is withdrawn after round {limit} of the shoe; "
            f"this is round {shoe_round}",
            rule="BDL-AVAIL",
        )


def check_funds(stake: Decimal, balance: Decimal) -> None:
    if stake > balance:
        raise InsufficientFunds(
            f"stake {money_str(stake)} is more than the balance {money_str(balance)}"
        )


# ------------------------------------------------------------------------ limits (D18)
@fast_init
@dataclass(frozen=True, slots=True)
class Limit:
    """One limit of one bet type: the amount and the setting of the rules key that sets it."""

    amount: Decimal
    setting: str


def limits(rules: Rules, kind: str) -> tuple[Limit, Limit]:
    """The (minimum, maximum) stake of a bet type under ``rules`` (D18)."""
    own = rules.bet_limits.get(kind)
    if own is not None:
        return Limit(own[0], f"bet_limits[{kind}][0]"), Limit(own[1], f"bet_limits[{kind}][1]")
    if kind in ("main", "behind"):
        return Limit(rules.min_bet, "min_bet"), Limit(rules.max_bet, "max_bet")
    low = Limit(rules.side_min_bet, "side_min_bet")
    high = Limit(rules.side_max_bet, "side_max_bet")
    chip = rules.lucky7_max_stake
    if kind == "lucky7" and chip is not None and chip <= high.amount:
        high = Limit(chip, "lucky7_max_stake")  # L7-1: one chip unit
    return low, high


_BET_NAMES = {"main": "main bet", "behind": "bet behind"}


def check_stake(rules: Rules, kind: str, stake: Decimal) -> None:
    """D18: refuse a stake outside its bet type's limits, naming the limit and its setting
    (L7-1 when the Lucky 7 stake passes one chip unit)."""
    own = rules.bet_limits.get(kind)
    if own is None and kind == "main" and rules.min_bet <= stake <= rules.max_bet:
        return  # the common case, without building the limits
    low, high = limits(rules, kind)
    if low.amount <= stake <= high.amount:
        return
    limit, which = (low, "minimum") if stake < low.amount else (high, "maximum")
    rule = "L7-1" if limit.setting == "lucky7_max_stake" else None
    what = _BET_NAMES.get(kind, f"{kind} bet")
    raise BetLimit(
        f"{what} {money_str(stake)} is {'below' if which == 'minimum' else 'above'} the "
        f"{which} {money_str(limit.amount)}"
        + (" (one chip unit, L7-1)" if rule else "")
        + f": outside the limits {money_str(low.amount)}-{money_str(high.amount)} "
        f"(D18: setting {limit.setting} of rules {rules.key})",
        rule=rule,
        setting=f"{rules.key}:{limit.setting}",
    )


def seat_split(stake: Decimal, balance: Decimal, rules: Rules) -> tuple[Decimal, str, str]:
    """DLX-2: a two-seat player's seat bet on both seats: mirrored (the same stake on each)
    when the balance allows, else split equally; D17: each seat then gets half rounded down to
    the minor unit and an odd unit left over stays in the wallet. Returns (stake on each seat,
    mode, rule). Refused only when even that half is below the table's minimum."""
    if stake * 2 <= balance:
        return stake, "mirrored", "DLX-2"
    half = (stake / 2).quantize(_CENT, rounding=ROUND_DOWN)
    low, _ = limits(rules, "main")
    if half < low.amount:
        raise BetLimit(
            f"the balance {money_str(balance)} does not cover {money_str(stake)} on both "
            f"seats, and half of it, {money_str(half)}, is below the minimum seat bet "
            f"{money_str(low.amount)} (DLX-2; D18: setting {low.setting} of rules {rules.key})",
            rule="DLX-2",
            setting=f"{rules.key}:{low.setting}",
        )
    return half, "split", "D17" if half * 2 != stake else "DLX-2"


# ------------------------------------------------------------------- decision costs
def insurance_cost(stake: Decimal, amount: object, balance: Decimal, what: str) -> Decimal:
    """INS-1: insurance costs exactly half the stake (rounded down) and needs the balance."""
    needed = half_down(stake)
    if amount is not None and parse_money(amount, field="insurance") != needed:
        raise IllegalAction(f"insurance {what}: {money_str(needed)}", rule="INS-1")
    if needed > balance:
        raise InsufficientFunds(
            f"insurance needs {money_str(needed)}, balance is {money_str(balance)}",
            rule="INS-1",
        )
    return needed


def funds_policy(rules: Rules, action: str) -> str:
    """What a double or split finds when the balance does not cover it (FUNDS-1, FUNDS-2)."""
    return rules.double_funds if action == "double" else rules.split_funds


def hand_stake(wagers: Any, hand_id: str) -> Decimal:
    """The main stake on a hand (its main or split wager): what a double costs (DBL-1)."""
    return sum(
        (w.stake for w in wagers.values() if w.hand == hand_id and w.kind in MAIN_KINDS), ZERO
    )


__all__ = [
    "BEHIND_KINDS",
    "BET_PHASE_RULE",
    "BOUNDLESS_BET_RULES",
    "CLASSIC_BET_RULES",
    "HAND_KINDS",
    "MAIN_KINDS",
    "Limit",
    "Wager",
    "bet_rule",
    "check_funds",
    "check_kind",
    "check_player_id",
    "check_stake",
    "funds_policy",
    "hand_stake",
    "insurance_cost",
    "limits",
    "seat_split",
    "wager_json",
]
