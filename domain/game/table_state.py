"""The state of a classic round (seats or boxes dealt in turn), how each fact evolves it, and
what it shows.

:class:`TableState` is immutable: :func:`evolve` returns a new one for each fact (the same
function folds a ``Round``'s stored events and the facts :mod:`domain.game.table` decides), so
an aggregate's copy shares it. The queries (:func:`card_needed`, :func:`options_for`,
:func:`due_hands`, :func:`view`...) are pure functions of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from domain.cards import Card
from domain.game import dealer as D
from domain.game import hands as H
from domain.game import play
from domain.game.hands import Hand
from domain.game.phases import (
    CANCELLED,
    DEALER,
    DEALING,
    INSURANCE,
    PLAYING,
    ROUND_EVOLVE,
    RoundBase,
    evolve_table,
    opening,
    seen,
    seen_ids,
    view_head,
)
from domain.game.state import fast_init, replace
from domain.game.wagers import Wager, money_value, wager_json
from domain.money import ZERO

DEALER_TARGET = "dealer"
Json = dict[str, Any]
Fields = Mapping[str, Any]


@fast_init
@dataclass(frozen=True)
class TableState(RoundBase):
    """One classic round: its seats or boxes, hands, wagers, dealer and phase."""

    seats: Mapping[str, str] = field(default_factory=dict)  # deluxe: seat -> player (DLX-1)
    hands: tuple[Hand, ...] = ()  # in play order (seat/box order; SPLIT-1)
    wagers: Mapping[str, Wager] = field(default_factory=dict)
    spot_owner: Mapping[str, str] = field(default_factory=dict)
    players: tuple[str, ...] = ()
    deal_plan: tuple[str, ...] = ()
    first_cards: Mapping[str, tuple[Card, ...]] = field(default_factory=dict)  # L7-3
    disconnected: frozenset[str] = frozenset()
    window_hands: tuple[str, ...] = ()
    preselected: Mapping[str, str] = field(default_factory=dict)  # PRE-1: hand -> choice

    def hand(self, hand_id: str) -> Hand:
        return H.find(self.hands, hand_id)

    def has_hand(self, hand_id: str) -> bool:
        return any(h.id == hand_id for h in self.hands)


# ------------------------------------------------------------------------------ evolve
def started(f: Fields) -> TableState:
    """The state a ``Started`` fact opens (a round's request id is not kept: it has none)."""
    return TableState(**opening(f), seats=dict(f["seats"]))


def evolve(s: TableState, name: str, f: Fields) -> TableState:
    """The state after one fact (a stored event's payload, or a fact just decided): its
    name looked up once in :data:`_EVOLVE` (a fact that only records, ``DecisionConverted``
    or ``BehindFollowed``, changes nothing)."""
    handler = _EVOLVE.get(name)
    return s if handler is None else handler(s, f)


def _hand_fact(name: str) -> Any:
    """The evolve of one of the hand facts every round records alike (``H.HAND_FACTS``) on
    the hand it names."""

    def evolve(s: TableState, f: Fields) -> TableState:
        new = H.evolve_hand(s.hand(f["hand"]), name, f)
        assert new is not None, name
        return replace(s, hands=H.put(s.hands, new))

    return evolve


def _hand(s: TableState, hand_id: str, change: Any) -> TableState:
    return replace(s, hands=H.put(s.hands, change(s.hand(hand_id))))


def _wager(s: TableState, wager_id: str, **changes: Any) -> TableState:
    return replace(s, wagers={**s.wagers, wager_id: replace(s.wagers[wager_id], **changes)})


def _bet_placed(s: TableState, f: Fields) -> TableState:
    player, kind, spot = f["player"], f["kind"], f["spot"]
    w = Wager(
        f["wager_id"],
        player,
        kind,
        money_value(f["stake"]),
        spot,
        None,
        follow_double=f["follow_double"],
        follow_split=f["follow_split"],
    )
    owners = {**s.spot_owner, spot: player} if kind == "main" and spot is not None else s.spot_owner
    players = s.players if player in s.players else (*s.players, player)
    return replace(
        s,
        request_ids=seen_ids(s, f),
        wagers={**s.wagers, w.id: w},
        spot_owner=owners,
        players=players,
    )


def _seat_bet_mirrored(s: TableState, f: Fields) -> TableState:
    w = Wager(f["wager_id"], f["player"], "main", money_value(f["stake"]), f["spot"], None)
    owners = {**s.spot_owner, f["spot"]: f["player"]}
    return replace(s, wagers={**s.wagers, w.id: w}, spot_owner=owners)


def _preselected(s: TableState, f: Fields) -> TableState:
    preselected = {**s.preselected, f["hand"]: f["action"]}
    return replace(s, request_ids=seen_ids(s, f), preselected=preselected)


def main_spots(s: TableState) -> list[str]:
    """The seats/boxes with a main bet, in seat/box order."""
    spots = [w.spot for w in s.wagers.values() if w.kind == "main" and w.spot is not None]
    return sorted(spots, key=int)


def _betting_closed(s: TableState, f: Fields) -> TableState:
    first = main_spots(s)
    plan = [*first, DEALER_TARGET, *first]
    if s.rules.hole_card != "none":
        plan.append(DEALER_TARGET)
    return replace(s, request_ids=seen_ids(s, f), phase=DEALING, deal_plan=tuple(plan))


def _hand_opened(s: TableState, f: Fields) -> TableState:
    hand, spot = f["hand"], f["spot"]
    wagers = {
        k: (replace(w, hand=hand) if w.spot == spot and w.kind in ("main", "behind") else w)
        for k, w in s.wagers.items()
    }
    return replace(s, hands=(*s.hands, Hand(hand, f["player"], spot)), wagers=wagers)


def _card_to_hand(s: TableState, f: Fields) -> TableState:
    c = Card.parse(f["card"])
    h = s.hand(f["hand"])
    new = H.give(h, c)
    first = s.first_cards.get(h.spot, ())
    firsts = s.first_cards
    if len(first) < 3 and h.id in (h.spot, f"{h.spot}.1"):
        firsts = {**firsts, h.spot: (*first, c)}
    return replace(s, hands=H.put(s.hands, new), first_cards=firsts)


def _window_opened(s: TableState, f: Fields) -> TableState:
    window = tuple(f["hands"])
    hands = tuple(  # DISC-1: a disconnected player takes no insurance
        replace(h, window_decided=True) if h.id in window and h.player in s.disconnected else h
        for h in s.hands
    )
    wagers = {
        k: (
            replace(w, window_decided=True)
            if w.kind == "behind" and w.player in s.disconnected
            else w
        )
        for k, w in s.wagers.items()
    }
    return replace(s, phase=INSURANCE, window_hands=window, hands=hands, wagers=wagers)


def _close_window(s: TableState, f: Fields) -> TableState:
    hands = tuple(replace(h, window_decided=True) if h.id in s.window_hands else h for h in s.hands)
    wagers = {
        k: (replace(w, window_decided=True) if w.kind == "behind" else w)
        for k, w in s.wagers.items()
    }
    return replace(s, request_ids=seen_ids(s, f), hands=hands, wagers=wagers)


def _decision_made(s: TableState, f: Fields) -> TableState:
    s = seen(s, f)
    hand, action, player = f["hand"], f["action"], f["player"]
    if action in play.PLAY_ACTIONS and hand in s.preselected:
        s = replace(s, preselected={k: v for k, v in s.preselected.items() if k != hand})
    if action in play.WINDOW_ACTIONS:
        h = s.hand(hand)
        if player == h.player:
            return _hand(s, hand, lambda x: replace(x, window_decided=True))
        return _wager(s, f"{h.spot}:behind:{player}", window_decided=True)  # DLX-6
    return s


def _wager_added(s: TableState, f: Fields) -> TableState:
    hand, player, kind = f["hand"], f["player"], f["kind"]
    spot = s.hand(hand).spot
    w = Wager(f["wager_id"], player, kind, money_value(f["stake"]), spot, hand)
    if kind == "behind_split":  # it keeps the choices of the bet behind it came from
        origin = s.wagers[f"{spot}:behind:{player}"]
        w = replace(w, follow_double=origin.follow_double, follow_split=origin.follow_split)
    return replace(s, wagers={**s.wagers, w.id: w})


def _hand_split(s: TableState, f: Fields) -> TableState:
    hand, into = f["hand"], f["into"]
    hands = H.split(s.hands, hand, into, split_aces=s.rules.split_aces)
    wagers = {k: (replace(w, hand=into[0]) if w.hand == hand else w) for k, w in s.wagers.items()}
    return replace(s, hands=hands, wagers=wagers)


def _timed_out(s: TableState, f: Fields) -> TableState:
    s = seen(s, f)
    if s.phase == INSURANCE:  # no decision in time: no insurance
        return _hand(s, f["hand"], lambda h: replace(h, window_decided=True))
    return _hand(s, f["hand"], lambda h: replace(h, auto=True))


def _disconnected(s: TableState, f: Fields) -> TableState:
    player = f["player"]
    hands = s.hands
    if s.phase == INSURANCE:
        hands = tuple(
            replace(h, window_decided=True) if h.player == player and h.id in s.window_hands else h
            for h in hands
        )
    disconnected = s.disconnected | {player}
    return replace(s, request_ids=seen_ids(s, f), disconnected=disconnected, hands=hands)


def _wager_settled(s: TableState, f: Fields) -> TableState:
    s = _wager(s, f["wager_id"], settled=True, result=f["result"], payout=money_value(f["payout"]))
    if f["result"] == "even_money" and f["hand"] is not None:
        return _hand(s, f["hand"], lambda h: replace(h, even_money=True))
    return s


#: Each fact's evolve by its name (``handler(state, fields) -> state``): the hand facts every
#: round records alike (``H.HAND_FACTS``), the facts every model of a round records alike on
#: its table (``phases.ROUND_EVOLVE``), and the classic round's own (none named twice:
#: :func:`phases.evolve_table`).
_TABLE_EVOLVE: dict[str, Any] = {
    "BetPlaced": _bet_placed,
    "SeatBetMirrored": _seat_bet_mirrored,
    "DecisionPreselected": _preselected,
    "BettingClosed": _betting_closed,
    "HandOpened": _hand_opened,
    "CardToHand": _card_to_hand,
    "InsuranceWindowOpened": _window_opened,
    "InsuranceWindowCompleted": _close_window,
    "InsuranceWindowClosed": _close_window,
    "PlayStarted": lambda s, f: replace(s, phase=PLAYING),
    "DecisionMade": _decision_made,
    "WagerAdded": _wager_added,
    "HandSplit": _hand_split,
    "DecisionTimedOut": _timed_out,
    "PlayerDisconnected": _disconnected,
    "WagerSettled": _wager_settled,
    "PaymentReversed": lambda s, f: _wager(s, f["wager_id"], settled=False, payout=ZERO),
    "CancelRequested": seen,
    "RoundCancelled": lambda s, f: replace(s, phase=CANCELLED, paused=False),
}


_EVOLVE = evolve_table(
    {name: _hand_fact(name) for name in sorted(H.HAND_FACTS)}, ROUND_EVOLVE, _TABLE_EVOLVE
)


# ----------------------------------------------------------------------------- queries
def player_hands(s: TableState, player: str) -> list[Hand]:
    return [h for h in s.hands if h.player == player]


def due_hands(s: TableState) -> list[Hand]:
    """The hand whose turn it is (at most one: hands play one at a time in seat/box order)."""
    if s.phase != PLAYING:
        return []
    due = H.due(s.hands)
    return [] if due is None else [due]


def initial_cards_dealt(s: TableState) -> int:
    main = 0
    for h in s.hands:  # a loop, not sum() of a generator: asked twice a card dealt
        n = len(h.cards)
        main += n if n < 2 else 2
    return main + min(len(s.dealer), 1 if s.rules.hole_card == "none" else 2)


def dealer_wants_card(s: TableState) -> bool:
    return s.phase == DEALER and D.wants_card(s.dealer, s.rules)


def card_needed(s: TableState) -> dict[str, str] | None:
    """What the next card from the shoe is for, or None when the round needs no card."""
    target = card_target(s)
    return None if target is None else {"for": target}


def card_target(s: TableState) -> str | None:
    """The hand (or :data:`DEALER_TARGET`) the next card from the shoe goes to, or None when
    the round needs no card (:func:`card_needed` as the view shows it; a card dealt reads
    this, every card)."""
    if s.paused or s.finished:
        return None
    phase = s.phase
    if phase == DEALING:
        dealt = initial_cards_dealt(s)
        return s.deal_plan[dealt] if len(s.deal_plan) > dealt else None
    if phase == PLAYING:
        due = H.due(s.hands)
        return due.id if due is not None and due.owed else None
    if dealer_wants_card(s):
        return DEALER_TARGET
    return None


def options_for(s: TableState, hand: Hand) -> list[str]:
    """The decisions open on ``hand`` now (empty when none)."""
    if s.phase == INSURANCE and hand.id in s.window_hands and not hand.window_decided:
        return play.window_options(hand.facts(), s.rules)
    if s.phase == PLAYING and not hand.owed and hand in due_hands(s):
        return play.play_options(hand.facts(), s.dealer, s.rules)
    return []


def wager_options(s: TableState, w: Wager) -> list[str]:
    """A bet behind owes its own insurance decision while the window is open (DLX-6)."""
    if (
        s.phase == INSURANCE
        and w.kind == "behind"
        and w.hand in s.window_hands
        and not w.window_decided
    ):
        return [play.INSURANCE, play.NO_INSURANCE]
    return []


def preselection_due(s: TableState) -> tuple[str, str, str] | None:
    """(player, hand, action) of a PRE-1 choice whose hand's turn has just started."""
    if s.phase != PLAYING or s.paused:
        return None
    for h in due_hands(s):
        action = s.preselected.get(h.id)
        if action and not h.owed and not h.actions and action in options_for(s, h):
            return h.player, h.id, action
    return None


def seats_with_bets(s: TableState) -> list[int]:
    """Seats of the table's seat map that carry a seat bet (reported back to the Table)."""
    return sorted(int(spot) for spot in main_spots(s) if spot in s.seats)


def view(s: TableState, round_id: str) -> Json:
    """A plain-JSON picture of the table now (for the API, the CLI and replays)."""
    return {
        **view_head(s, round_id, card_needed(s)),
        "hands": [H.hand_json(h, options_for(s, h)) for h in s.hands],
        "wagers": [{**wager_json(w), "options": wager_options(s, w)} for w in s.wagers.values()],
    }


__all__ = [
    "DEALER_TARGET",
    "TableState",
    "card_needed",
    "card_target",
    "due_hands",
    "evolve",
    "main_spots",
    "options_for",
    "player_hands",
    "preselection_due",
    "seats_with_bets",
    "started",
    "view",
]
