"""A player's decision on a hand: whether the rules allow it now, and what it does.

One decision for every kind of round. :func:`check_action` and :func:`check_turn` refuse a
decision out of place (the insurance window, INS-1; the hand's turn, PHASE-4); :func:`check_open`
refuses one the hand's options do not include (DBL-1, SPLIT-1, SURR-1, HAND-1...);
:func:`cost` says what it costs (INS-1, DBL-1, SPLIT-1) and refuses it without the balance
where the variant refuses (FUNDS-1/2 turn it into a hit or a stand instead). :func:`apply`
decides its consequences:

* ``insurance`` adds the insurance wager (INS-1); ``even_money`` pays 1:1 and ends the hand
  (EVEN-1); ``stand``, ``hit``, ``surrender`` (SURR-1);
* ``double`` adds the double wager and owes the hand one card (DBL-1); ``split`` makes two
  hands and adds the second hand's wager (SPLIT-1);
* a double or split the balance does not cover when it executes becomes a hit (FUNDS-1
  deluxe's double) or a hit at 11 or less, else a stand (FUNDS-2).

A classic round's bets behind follow a double or a split with :func:`follow_behind`
(DLX-7, DLX-8).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from domain.errors import HandComplete, IllegalAction, InsufficientFunds, OutOfTurn
from domain.game import play
from domain.game.commands import Decide, record
from domain.game.facts import Decision
from domain.game.hands import Hand, split_ids
from domain.game.settlement import even_money
from domain.game.wagers import Wager, funds_policy, hand_stake, insurance_cost
from domain.money import ZERO, money_str
from domain.rules.base import Rules

PLAYING, INSURANCE = "playing", "insurance"


def check_action(action: str) -> None:
    if action not in play.PLAY_ACTIONS and action not in play.WINDOW_ACTIONS:
        raise IllegalAction(f"unknown action {action!r}")


def check_window(action: str, hand: Hand, *, open_: bool, decided: bool) -> None:
    """INS-1 / EVEN-1 decisions belong to the insurance window, once per hand."""
    if not open_:
        raise IllegalAction(
            f"{action} needs the insurance window (dealer's upcard an ace)", rule="INS-1"
        )
    if decided:
        raise IllegalAction(f"hand {hand.id} already made its insurance decision", rule="INS-1")


def check_turn(action: str, phase: str, hand: Hand, due: Hand | None) -> None:
    """A play decision is for the hand whose turn it is, once it holds its cards."""
    if phase != PLAYING:
        raise OutOfTurn(f"{action} is not open in phase {phase}")
    if hand.finished:
        raise HandComplete(f"hand {hand.id} is complete ({hand.finish_reason})")
    if due is None or due.id != hand.id:
        raise OutOfTurn(
            f"it is not hand {hand.id}'s turn"
            + (f"; hand {due.id} of {due.player} is due" if due is not None else "")
        )
    if hand.owed:
        raise OutOfTurn(f"hand {hand.id} is waiting for a card")


def check_option(action: str, hand: Hand, options: Sequence[str]) -> None:
    if action not in options:
        raise IllegalAction(
            f"{action} is not allowed on hand {hand.id} now; open: {', '.join(options) or 'none'}",
            rule=play.ACTION_RULES.get(action),
        )


def record_decision(
    d: Decision[Any],
    c: Decide,
    hand: str,
    options: Sequence[str],
    needed: Decimal | None,
    **fields: Any,
) -> None:
    """The ``DecisionMade`` input of decision ``c`` on ``hand``: the options open at that
    moment, what it costs, the balance seen (``fields``: a model's own, e.g. the balances of
    the bets behind that may follow it)."""
    record(
        d,
        "DecisionMade",
        c,
        {"kind": "player", "id": c.player},
        player=c.player,
        hand=hand,
        action=c.action,
        amount=money_str(needed) if needed is not None else None,
        options=list(options),
        balance_seen=money_str(c.balance),
        **fields,
    )


def cost(
    action: str,
    *,
    main: Decimal,
    wagers: Mapping[str, Wager],
    hand: str,
    amount: object,
    balance: Decimal,
    rules: Rules,
) -> Decimal | None:
    """What ``action`` stakes: insurance half the hand's main bet (INS-1, exactly, and only
    with the balance); a double the stake of the hand ``hand`` among ``wagers``
    (:func:`~domain.game.wagers.hand_stake`, DBL-1, summed only for a double); a split the
    main bet (SPLIT-1), refused without the balance where the variant's funds policy is
    ``refuse``."""
    if action == play.INSURANCE:
        return insurance_cost(main, amount, balance, "costs exactly half the stake")
    if action not in (play.DOUBLE, play.SPLIT):
        return None
    needed = hand_stake(wagers, hand) if action == play.DOUBLE else main
    if needed > balance and funds_policy(rules, action) == "refuse":
        raise InsufficientFunds(
            f"{action} needs {money_str(needed)}, balance is {money_str(balance)}"
        )
    return needed


def apply(
    d: Decision[Any],
    hand: Hand,
    action: str,
    *,
    balance: Decimal,
    needed: Decimal | None,
    main: Wager | None,
    rules: Rules,
) -> None:
    """The consequences of an accepted decision on ``hand`` (``main``: its main wager)."""
    if action == play.NO_INSURANCE:
        return
    h = hand.id
    if action == play.INSURANCE:
        assert needed is not None
        _wager_added(d, f"{h}:insurance", hand, "insurance", needed, balance, "INS-1")
        return
    if action == play.EVEN_MONEY:
        assert main is not None
        even_money(d, main)
        d.consequence("HandStood", rule="EVEN-1", hand=h, reason="even_money", total=21)
        return
    total = hand.score.total
    if action == play.STAND:
        d.consequence("HandStood", rule="PHASE-4", hand=h, reason="stand", total=total)
        return
    if action == play.HIT:
        d.consequence("HandHit", rule="PHASE-4", hand=h)
        return
    if action == play.SURRENDER:
        d.consequence("HandSurrendered", rule="SURR-1", hand=h)
        d.consequence("HandStood", rule="SURR-1", hand=h, reason="surrender", total=total)
        return
    assert needed is not None
    if needed > balance:
        policy = funds_policy(rules, action)
        applied = play.HIT if policy == "double_becomes_hit" else play.funds_fallback(hand.cards)
        rule = "FUNDS-1" if policy == "double_becomes_hit" else "FUNDS-2"
        d.consequence(
            "DecisionConverted",
            rule=rule,
            hand=h,
            requested=action,
            applied=applied,
            balance_seen=money_str(balance),
            needed=money_str(needed),
        )
        if applied == play.HIT:
            d.consequence("HandHit", rule=rule, hand=h)
        else:
            d.consequence("HandStood", rule=rule, hand=h, reason="funds", total=total)
        return
    if action == play.DOUBLE:
        _wager_added(d, f"{h}:double", hand, "double", needed, balance, "DBL-1")
        d.consequence("HandDoubled", rule="DBL-1", hand=h)
        return
    first, second = split_ids(h)
    d.consequence("HandSplit", rule="SPLIT-1", hand=h, into=[first, second])
    _wager_added(d, f"{second}:split", hand, "split", needed, balance, "SPLIT-1", on=second)


def _wager_added(
    d: Decision[Any],
    wager_id: str,
    hand: Hand,
    kind: str,
    stake: Decimal,
    balance: Decimal,
    rule: str,
    *,
    on: str | None = None,
) -> None:
    d.consequence(
        "WagerAdded",
        rule=rule,
        wager_id=wager_id,
        player=hand.player,
        kind=kind,
        hand=on or hand.id,
        stake=money_str(stake),
        balance_seen=money_str(balance),
    )


def follow_behind(
    d: Decision[Any],
    hand: Hand,
    action: str,
    wagers: Mapping[str, Wager],
    balances: Mapping[str, Decimal],
) -> None:
    """DLX-7 / DLX-8: each bet behind on the hand follows the seat's double or split, or not
    (its follow choice is No, or its player's balance is too little)."""
    rule = "DLX-7" if action == play.DOUBLE else "DLX-8"
    hand_now = f"{hand.id}.1" if action == play.SPLIT else hand.id
    second = f"{hand.id}.2"
    following = [
        w for w in wagers.values() if w.kind in ("behind", "behind_split") and w.hand == hand_now
    ]
    for w in following:
        wants = w.follow_double if action == play.DOUBLE else w.follow_split
        seen = balances.get(w.player, ZERO)
        if not wants:
            followed, reason = False, f"follow {action} is No"
        elif w.stake > seen:
            followed, reason = False, "too little balance"
        else:
            followed, reason = True, f"follow {action} is Yes"
        d.consequence(
            "BehindFollowed",
            rule=rule,
            wager_id=w.id,
            player=w.player,
            hand=hand_now,
            seat_action=action,
            followed=followed,
            reason=reason,
            balance_seen=money_str(seen),
            needed=money_str(w.stake),
        )
        if followed:
            kind = "behind_double" if action == play.DOUBLE else "behind_split"
            target = hand.id if action == play.DOUBLE else second
            d.consequence(
                "WagerAdded",
                rule=rule,
                wager_id=f"{target}:{kind}:{w.player}",
                player=w.player,
                kind=kind,
                hand=target,
                stake=money_str(w.stake),
                balance_seen=money_str(seen),
            )


def behind_insurance(d: Decision[Any], w: Wager, needed: Decimal, balance: Decimal) -> None:
    """DLX-6: a bet behind buys its own insurance, independently of the seated player."""
    assert w.hand is not None
    d.consequence(
        "WagerAdded",
        rule="DLX-6",
        wager_id=f"{w.hand}:insurance:{w.player}",
        player=w.player,
        kind="insurance",
        hand=w.hand,
        stake=money_str(needed),
        balance_seen=money_str(balance),
    )


__all__ = [
    "apply",
    "behind_insurance",
    "check_action",
    "check_option",
    "check_turn",
    "check_window",
    "cost",
    "follow_behind",
    "record_decision",
]
