"""A small builder for rule tests: one round of one variant, dealt from a stacked test shoe.

Given/when/then in three lines::

    kit = Kit("deluxe", ["10H", "9S", "6D", "8D"], players={"A": 100})
    kit.bet("A", 10, spot=1)
    kit.close()                                  # given: the history
    new = kit.decide("A", "surrender")           # when: one command; ``new`` = its events only
    assert settled(new)["1:main"]["payout"] == "5.00"   # then

Every command method returns only the round events that this command recorded (the history
before it is discarded). :meth:`Kit.refused` runs a command that must be refused with a named
domain error and checks that it recorded nothing: neither round events nor wallet movements.

Cards are dealt in the order of RULES.md "Round phases": first card to each hand (seat/box
order), dealer's first card, second card to each hand, dealer's second card (european: none),
then the cards the round asks for, one after another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import pytest

from domain.application import RoundAudit
from domain.boundless.shared import SharedHand
from domain.errors import DomainError
from domain.events import SYSTEM
from domain.round import Round

Json = dict[str, Any]
SUPERVISOR = "sup-1"


class Kit:
    """One test-shoe round of ``variant`` in a fresh in-memory :class:`RoundAudit`."""

    def __init__(
        self,
        variant: str,
        cards: Sequence[str],
        *,
        players: Mapping[str, object] | Iterable[str] = ("A",),
        deposit: object = "1000",
        app: RoundAudit | None = None,
        table: str = "t1",
        round_number: int = 1,
        shoe_round: int = 1,
    ) -> None:
        self.app = app if app is not None else RoundAudit()
        self.variant = variant
        self.cards = list(cards)
        self._start: dict[str, Decimal] = {}
        self._deposits = 0
        amounts = dict(players) if isinstance(players, Mapping) else dict.fromkeys(players, deposit)
        for player, amount in amounts.items():
            self.fund(player, amount)
        self.rid = self.app.start_round(
            table_id=table,
            round_number=round_number,
            variant=variant,
            production=False,
            test_order=self.cards,
            shoe_round=shoe_round,
        )

    # ------------------------------------------------------------------ money
    def fund(self, player: str, amount: object) -> None:
        """Open the player's wallet (if needed) and deposit ``amount`` (may be 0: no deposit)."""
        try:
            self.app.wallet(player)
        except DomainError:  # the Kit's rounds are on test tables: play-money accounts only
            self.app.open_wallet(player, account_type="test")
        if Decimal(str(amount)) > 0:
            self._deposits += 1
            self.app.deposit(player, str(amount), transaction_id=f"dep-{player}-{self._deposits}")
        self._start[player] = self.app.balance(player)

    @property
    def start_balances(self) -> dict[str, Decimal]:
        return dict(self._start)

    def balance(self, player: str) -> Decimal:
        return self.app.balance(player)

    def balances(self) -> dict[str, Decimal]:
        return {p: self.app.balance(p) for p in self.start_balances}

    def net(self, player: str) -> Decimal:
        """The player's wallet movement in this round (balance now minus at funding)."""
        return self.app.balance(player) - self.start_balances[player]

    def nets(self) -> dict[str, Decimal]:
        return {p: self.net(p) for p in self.start_balances}

    # ---------------------------------------------------------------- history
    def events(self) -> list[Json]:
        return self.app.round_events(self.rid)

    def run(self, command: Callable[[], object]) -> list[Json]:
        """Run one command; return only the round events it recorded."""
        before = len(self.events())
        command()
        return self.events()[before:]

    def refused(self, error: type[DomainError], command: Callable[[], object]) -> DomainError:
        """The command must raise ``error`` and record nothing: round events and every wallet
        balance unchanged. Returns the error for further checks (code, rule)."""
        before = self.events()
        balances = self.balances()
        with pytest.raises(error) as info:
            command()
        assert self.events() == before, "a refused command recorded round events"
        assert self.balances() == balances, "a refused command moved money"
        return info.value

    # --------------------------------------------------------------- commands
    def bet(
        self, player: str, amount: object, spot: object = None, *, kind: str = "main"
    ) -> list[Json]:
        return self.run(
            lambda: self.app.place_bet(
                self.rid,
                player=player,
                kind=kind,
                amount=str(amount),
                spot=None if spot is None else str(spot),
            )
        )

    def side(self, player: str, kind: str, amount: object, spot: object = None) -> list[Json]:
        return self.bet(player, amount, spot, kind=kind)

    def close(self) -> list[Json]:
        return self.run(lambda: self.app.close_betting(self.rid))

    def decide(
        self, player: str, action: str, *, hand: str | None = None, amount: object = None
    ) -> list[Json]:
        return self.run(
            lambda: self.app.decide(
                self.rid,
                player=player,
                action=action,
                hand=hand,
                amount=None if amount is None else str(amount),
            )
        )

    def timeout(self, player: str, *, hand: str | None = None) -> list[Json]:
        return self.run(lambda: self.app.time_out(self.rid, player=player, hand=hand))

    def disconnect(self, player: str) -> list[Json]:
        return self.run(lambda: self.app.disconnect(self.rid, player=player))

    def close_window(self) -> list[Json]:
        return self.run(lambda: self.app.close_insurance_window(self.rid))

    def pause(self, reason: str = "card-reader-fault") -> list[Json]:
        return self.run(lambda: self.app.pause(self.rid, reason=reason, supervisor=SUPERVISOR))

    def resume(self, reason: str = "fault-cleared") -> list[Json]:
        return self.run(lambda: self.app.resume(self.rid, reason=reason, supervisor=SUPERVISOR))

    def cancel(self, reason: str = "unrecoverable-fault") -> list[Json]:
        return self.run(lambda: self.app.cancel(self.rid, reason=reason, supervisor=SUPERVISOR))

    # ---------------------------------------------------------------- queries
    def view(self) -> Json:
        return self.app.round_view(self.rid)

    @property
    def phase(self) -> str:
        return str(self.view()["phase"])

    def round(self) -> Round:
        """A fresh Round aggregate at the stored state (no pending events)."""
        return self.app.round(self.rid)

    def hand(self, hand_id: str) -> Json:
        for h in self.view()["hands"]:
            if h["hand"] == hand_id:
                return dict(h)
        raise KeyError(hand_id)

    def options(self, hand_id: str) -> list[str]:
        return list(self.hand(hand_id)["options"])

    def _cards_holder(self) -> Round | SharedHand:
        """boundless: the round's SharedHand (its players' hands are Participations)."""
        if self.app.boundless.owns(self.rid):
            return self.app.boundless.shared(self.rid)
        return self.round()

    def dealer(self) -> list[str]:
        return [c.code for c in self._cards_holder().dealer]

    def drawn(self) -> list[str]:
        """Cards taken from the test shoe so far, in order."""
        return [d.card for d in self.app.shoe(self._cards_holder().shoe_id).drawn]

    def assert_all_cards_used(self) -> None:
        assert self.drawn() == self.cards, "the round used exactly the stacked cards"


# -------------------------------------------------------------------- event helpers
def kind(e: Json) -> str:
    """``Round.CardToHand`` -> ``CardToHand``."""
    return str(e["type"]).rsplit(".", 1)[-1]


def kinds(events: Iterable[Json]) -> list[str]:
    return [kind(e) for e in events]


#: The aggregates whose consequences record the system actor (``domain.events.Derived``).
_DERIVED = ("Round", "SharedHand", "Participation", "Table")


def of(events: Iterable[Json], name: str) -> list[Json]:
    """Payloads of the events of one type. A round's consequence records the system actor
    (``domain.events.Derived``): checked here, then left out, so that a test states what the
    rules decided."""
    found = []
    for e in events:
        if kind(e) != name:
            continue
        p = e["payload"]
        if e.get("kind") == "consequence" and str(e["type"]).split(".")[0] in _DERIVED:
            p = dict(p)
            assert p.pop("actor") == SYSTEM, e
        found.append(p)
    return found


def one(events: Iterable[Json], name: str) -> Json:
    found = of(events, name)
    assert len(found) == 1, f"expected exactly one {name}, got {len(found)}: {found}"
    return found[0]


def settled(events: Iterable[Json]) -> dict[str, Json]:
    """WagerSettled payloads by wager id."""
    return {p["wager_id"]: p for p in of(events, "WagerSettled")}


def settlement(events: Iterable[Json], wager_id: str) -> tuple[Any, ...]:
    """(result, ratio, payout, net, rule) of one wager."""
    p = settled(events)[wager_id]
    return (p["result"], p["ratio"], p["payout"], p["net"], p["rule"])


def cards_to(events: Iterable[Json], hand: str) -> list[str]:
    return [p["card"] for p in of(events, "CardToHand") if p["hand"] == hand]


def dealer_cards(events: Iterable[Json]) -> list[str]:
    return [p["card"] for p in of(events, "CardToDealer")]


def stood(events: Iterable[Json]) -> dict[str, tuple[str, int, str]]:
    """HandStood by hand: (reason, total, rule)."""
    return {p["hand"]: (p["reason"], p["total"], p["rule"]) for p in of(events, "HandStood")}


def D(text: object) -> Decimal:
    return Decimal(str(text))


# ----------------------------------------------------------------------- stacking
VARIANTS = ("deluxe", "multihand", "lucky7", "european", "boundless")


def stack(
    variant: str,
    hands: Sequence[Sequence[str]],
    *,
    up: str,
    hole: str | None = None,
    draws: Sequence[str] = (),
    dealer_draws: Sequence[str] = (),
) -> list[str]:
    """A test-shoe order that deals ``hands`` (two cards each, seat/box order; boundless: one
    shared hand) and gives the dealer ``up`` face up and ``hole`` as the other card, in the
    variant's own deal order, followed by the players' ``draws`` and the ``dealer_draws``.

    * deluxe, multihand, boundless: firsts, up, seconds, hole (checked by the peek, D5);
    * lucky7: firsts, hole (the covered first card), seconds, up;
    * european: firsts, up, seconds; the dealer's second card (``hole``) comes after the
      players' draws (no hole card, ENHC).
    """
    firsts = [h[0] for h in hands]
    seconds = [h[1] for h in hands]
    if variant == "european":
        tail = [hole] if hole is not None else []
        return [*firsts, up, *seconds, *draws, *tail, *dealer_draws]
    assert hole is not None, "peek variants need the dealer's second card"
    if variant == "lucky7":
        return [*firsts, hole, *seconds, up, *draws, *dealer_draws]
    return [*firsts, up, *seconds, hole, *draws, *dealer_draws]


def hand_id(variant: str, player: str, spot: int = 1) -> str:
    """The id of a player's initial hand: the seat/box number, or the player (boundless)."""
    return player if variant == "boundless" else str(spot)


def main_wager(variant: str, player: str, spot: int = 1) -> str:
    return f"{hand_id(variant, player, spot)}:main"


def without_sequence(events: Iterable[Json]) -> list[Json]:
    """The events minus boundless's ``CardToHand(hand="sequence")`` records (BDL-2), so that
    one expected event list fits every variant."""
    return [
        e for e in events if not (kind(e) == "CardToHand" and e["payload"]["hand"] == "sequence")
    ]


def dealer_hand(variant: str, up: str, hole: str, draws: Sequence[str] = ()) -> list[str]:
    """The dealer's final cards in dealing order (lucky7: the covered card comes first)."""
    first_two = [hole, up] if variant == "lucky7" else [up, hole]
    return [*first_two, *draws]
