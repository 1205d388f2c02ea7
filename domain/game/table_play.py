"""The classic round in play: cards, the insurance window, decisions, automatic play, the
dealer, settlement and the supervisor's actions (the second half of ``domain.game.table``).

Each function decides the facts of one input on a :class:`~domain.game.facts.Decision` of a
:class:`~domain.game.table_state.TableState`; :func:`progress` then derives every consequence
the rules allow before the round needs its next input: the end of the initial deal, the
insurance window and the dealer's check (INS-1, D5, END-1), automatic play (HAND-1, AUTO-1),
the dealer's turn (PHASE-5, D15, END-2, DEALER-1, H17) and settlement (PHASE-6).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from domain.errors import HandComplete, IllegalAction, OutOfTurn, UnknownPlayer, WrongOrder
from domain.events import SYSTEM
from domain.game import dealer as D
from domain.game import decisions, phases, play
from domain.game import hands as H
from domain.game import settlement as S
from domain.game import wagers as W
from domain.game.commands import (
    CloseWindow,
    Deal,
    Decide,
    Disconnect,
    Supervise,
    TimeOut,
    record,
)
from domain.game.facts import Decision
from domain.game.hands import Hand
from domain.game.phases import DEALER, DEALING, INSURANCE, PLAYING
from domain.game.table_state import (
    DEALER_TARGET,
    TableState,
    card_target,
    dealer_wants_card,
    due_hands,
    initial_cards_dealt,
    options_for,
    player_hands,
)
from domain.game.wagers import Wager
from domain.money import money_str
from domain.scoring import score

Actor = Mapping[str, str]


def player_actor(player: str) -> Actor:
    return {"kind": "player", "id": player}


# ------------------------------------------------------------------------------ cards
def deal(d: Decision[TableState], c: Deal) -> None:
    s = d.state
    target = card_target(s)
    if target is None:
        raise WrongOrder(
            f"the round needs no card now (phase {s.phase}); {c.card.code} was not recorded"
        )
    dealer_actor = {"kind": "dealer", "id": s.table_id}
    record(d, "CardDealt", c, dealer_actor, card=c.card.code, shoe_position=c.shoe_position)
    s = d.state
    if target == DEALER_TARGET:
        D.card_to_dealer(d, s.dealer, c.card, s.rules, dealing=s.phase == DEALING)
    else:
        h = H.find(s.hands, target)
        rule = "PHASE-2" if s.phase == DEALING else H.card_rule(h, s.rules)
        total = score([*h.cards, c.card])
        d.consequence(
            "CardToHand", rule=rule, hand=h.id, card=c.card.code, total=total.total, soft=total.soft
        )
    progress(d)


# -------------------------------------------------------------------------- the engine
def progress(d: Decision[TableState]) -> None:
    """Derive every consequence the rules allow until an outside input is needed."""
    while not d.state.finished and not d.state.paused:
        s = d.state
        if s.phase == DEALING:
            if initial_cards_dealt(s) < len(s.deal_plan):
                return
            _after_initial_deal(d)
        elif s.phase == INSURANCE:
            if not _window_complete(s):
                return
            d.consequence("InsuranceWindowCompleted", rule="INS-1")
            _after(d, D.after_window(d, d.state.dealer, s.rules))
        elif s.phase == PLAYING:
            if _play_step(d):
                continue
            if not all(h.finished for h in s.hands):
                return
            _to_dealer(d)
        elif s.phase == DEALER:
            if dealer_wants_card(s):
                return
            D.stand(d, s.dealer)
            _settle(d)
        else:
            return


def _window_complete(s: TableState) -> bool:
    window = s.window_hands
    return all(s.hand(h).window_decided for h in window) and all(
        w.window_decided for w in s.wagers.values() if w.kind == "behind" and w.hand in window
    )


def _after_initial_deal(d: Decision[TableState]) -> None:
    s = d.state
    eligible = [h.id for h in s.hands if h.player in s.players]
    outcome = D.after_deal(d, s.dealer, s.rules, window=bool(eligible))
    if outcome == D.WINDOW:
        d.consequence("InsuranceWindowOpened", rule="INS-1", hands=eligible)
        return
    _after(d, outcome)


def _after(d: Decision[TableState], outcome: str) -> None:
    """After the dealer's check: END-1 settles at once; else play starts (PHASE-4) and every
    blackjack stands (HAND-1)."""
    if outcome == D.CHECKED_BLACKJACK:
        _settle(d)
        return
    d.consequence("PlayStarted", rule="PHASE-4")
    for h in d.state.hands:
        if not h.finished and h.blackjack:
            d.consequence("HandStood", rule="HAND-1", hand=h.id, reason="blackjack", total=21)


def _play_step(d: Decision[TableState]) -> bool:
    """One automatic step for the due hand (HAND-1, AUTO-1); a hand owed a card waits for it.
    True when something was decided."""
    s = d.state
    h = H.due(s.hands)  # the due hand (``due_hands``: the phase is PLAYING here)
    if h is None or h.owed:
        return False
    auto = (h.auto or h.player in s.disconnected) and h.id not in s.preselected
    return H.play_automatically(d, h, s.rules, auto=auto)


def _live_hands(s: TableState) -> list[Hand]:
    """Hands whose result still depends on the dealer (D15)."""
    return [
        h
        for h in s.hands
        if not (h.surrendered or h.even_money or h.finish_reason == "even_money")
        and not h.score.bust
        and not h.blackjack
    ]


def _to_dealer(d: Decision[TableState]) -> None:
    s = d.state
    rules = s.rules
    D.turn(d, s.dealer, rules, reveal=False)
    if rules.dealer_draws == "while_result_depends" and not _live_hands(s):
        all_bj = bool(s.hands) and all(h.blackjack for h in s.hands)
        rule = "END-2" if all_bj and rules.end_when_all_blackjack else "D15"
        total = score(s.dealer).total
        d.consequence("DealerStood", rule=rule, total=total, reason="result decided")
        _settle(d)
        return
    D.reveal_hole(d, s.dealer, rules)


def _settle(d: Decision[TableState]) -> None:
    s = d.state
    S.settle_all(
        d,
        list(s.wagers.values()),
        hand=s.hand,
        dealer=s.dealer,
        first_cards=lambda w: s.first_cards.get(w.spot or "", ()),
        rules=s.rules,
    )
    dealer = d.state.dealer
    d.consequence(
        "RoundSettled",
        rule="PHASE-6",
        dealer=[c.code for c in dealer],
        dealer_total=score(dealer).total,
    )


# -------------------------------------------------------------------------- decisions
def resolve_hand(s: TableState, player: str, hand_id: str | None) -> Hand:
    if player not in s.players:
        raise UnknownPlayer(f"player {player!r} has no bet in this round")
    mine = player_hands(s, player)
    if not mine:
        raise UnknownPlayer(f"player {player!r} has no hand in this round")
    if hand_id is not None:
        if not s.has_hand(hand_id) or s.hand(hand_id).player != player:
            raise IllegalAction(f"hand {hand_id!r} is not {player}'s")
        return s.hand(hand_id)
    if s.phase == INSURANCE:
        for h in mine:
            if h.id in s.window_hands and not h.window_decided:
                return h
        raise IllegalAction(f"{player} has no insurance decision open")
    due = [h for h in due_hands(s) if h.player == player]
    if due:
        return due[0]
    open_hands = [h for h in mine if not h.finished]
    if open_hands:
        return open_hands[0]
    raise HandComplete(f"every hand of {player} is complete")


def decide_play(d: Decision[TableState], c: Decide) -> None:
    s = d.state
    behind = _behind_window_wager(s, c.player, c.hand, c.action)
    if behind is not None:
        _decide_behind_window(d, c, behind)
        progress(d)
        return
    decisions.check_action(c.action)
    h = resolve_hand(s, c.player, c.hand)
    rules = s.rules
    if c.action in play.WINDOW_ACTIONS:
        in_window = s.phase == INSURANCE and h.id in s.window_hands
        decisions.check_window(c.action, h, open_=in_window, decided=h.window_decided)
    else:
        decisions.check_turn(c.action, s.phase, h, H.due(s.hands))
    options = options_for(s, h)
    decisions.check_option(c.action, h, options)
    main = s.wagers.get(f"{h.spot}:main")
    needed = decisions.cost(
        c.action,
        main=main.stake if main is not None else Decimal(0),
        wagers=s.wagers,
        hand=h.id,
        amount=c.amount,
        balance=c.balance,
        rules=rules,
    )
    others: dict[str, str] = {}
    if c.action in (play.DOUBLE, play.SPLIT) and c.balance_of is not None:
        others = {
            w.player: money_str(c.balance_of(w.player))
            for w in s.wagers.values()
            if w.kind in ("behind", "behind_split") and w.hand == h.id
        }
    decisions.record_decision(d, c, h.id, options, needed, others_balance=others)
    decisions.apply(d, h, c.action, balance=c.balance, needed=needed, main=main, rules=rules)
    if c.action in (play.DOUBLE, play.SPLIT) and needed is not None and needed <= c.balance:
        balances = {p: Decimal(b) for p, b in others.items()}
        decisions.follow_behind(d, h, c.action, d.state.wagers, balances)
    progress(d)


def _behind_window_wager(s: TableState, player: str, hand: str | None, action: str) -> Wager | None:
    """DLX-6: the bet behind whose insurance decision this is, if it is one."""
    if action not in (play.INSURANCE, play.NO_INSURANCE) or s.phase != INSURANCE:
        return None
    if hand is not None and s.has_hand(hand) and s.hand(hand).player == player:
        return None
    if hand is None and any(
        h.id in s.window_hands and not h.window_decided for h in player_hands(s, player)
    ):
        return None
    for w in s.wagers.values():
        if (
            w.kind == "behind"
            and w.player == player
            and w.hand in s.window_hands
            and not w.window_decided
            and (hand is None or w.hand == hand)
        ):
            return w
    return None


def _decide_behind_window(d: Decision[TableState], c: Decide, w: Wager) -> None:
    assert w.hand is not None
    needed = None
    if c.action == play.INSURANCE:
        needed = W.insurance_cost(
            w.stake, c.amount, c.balance, "on a bet behind costs half its stake"
        )
    options = [play.INSURANCE, play.NO_INSURANCE]
    decisions.record_decision(d, c, w.hand, options, needed, others_balance={})
    if needed is not None:
        decisions.behind_insurance(d, w, needed, c.balance)


def time_out(d: Decision[TableState], c: TimeOut) -> None:
    s = d.state
    h = resolve_hand(s, c.player, c.hand)
    if s.phase == INSURANCE:
        if h.id not in s.window_hands or h.window_decided:
            raise IllegalAction(f"hand {h.id} has no insurance decision open")
    elif s.phase != PLAYING or h not in due_hands(s) or h.owed:
        raise OutOfTurn(f"hand {h.id} is not waiting for a decision")
    record(d, "DecisionTimedOut", c, SYSTEM, player=c.player, hand=h.id)
    progress(d)


def disconnect(d: Decision[TableState], c: Disconnect) -> None:
    s = d.state
    if c.player not in s.players:
        raise UnknownPlayer(f"player {c.player!r} has no bet in this round")
    if c.player in s.disconnected:
        return
    record(d, "PlayerDisconnected", c, SYSTEM, player=c.player)
    progress(d)


def close_window(d: Decision[TableState], c: CloseWindow) -> None:
    """The insurance timer ran out: every undecided hand declines (INS-1)."""
    if d.state.phase != INSURANCE:
        raise WrongOrder("no insurance window is open")
    record(d, "InsuranceWindowClosed", c, SYSTEM)
    _after(d, D.after_window(d, d.state.dealer, d.state.rules))
    progress(d)


# ------------------------------------------------------------ supervisor (ERR-1)
def supervise(d: Decision[TableState], c: Supervise) -> None:
    """ERR-1: a pause, a resume (play goes on as it was), or a cancellation that refunds every
    stake of the round and reverses any payment already made."""
    phases.supervise(d, c, paused=d.state.paused)
    if c.what == "resume":
        progress(d)
    elif c.what == "cancel":
        S.refund_all(d, list(d.state.wagers.values()), rule="ERR-1", reversal=_reverses)
        d.consequence("RoundCancelled", rule="ERR-1", reason=c.reason)


def _reverses(w: Wager) -> dict[str, Any]:
    return {"reverses": w.result or ""}
