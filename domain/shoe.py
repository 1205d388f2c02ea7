"""The shoe: where the cards of a table come from, in one order, every one accounted for.

This module owns the :class:`Shoe` aggregate (SHOE-1..3, D3): its events (their classes are
the stored topics, ``domain.shoe:Shoe.CardDrawn``), what each applies, its identity, and its
commands after the opening: draw, burn, cut card, retire. Its state, the queries on it and the
checks of every card are :mod:`domain.shoe_record`'s; the opening commands
(:meth:`Shoe.open_rng`, :meth:`Shoe.open_live`, :meth:`Shoe.open_test`) and the checks of what
they record are :mod:`domain.shoe_opening`'s. A shoe is opened for one table with a number,
and is one of three kinds:

``"rng"``
    The order is :func:`domain.shuffle.shuffled_order` of a secret seed. The shoe records the
    algorithm and the seed's *commitment* only; the application keeps the seed in a sealed vault
    and passes it to every command that needs the order (the shoe checks it against the
    commitment). Retiring the shoe reveals the seed (``SeedRevealed``), after which anyone can
    re-derive every card with :func:`domain.shuffle.verify_order` (or :meth:`Shoe.verify`).
    RNG variants use one shoe per round (D3); ``cut_card_at`` may still place a cut card.
``"live"``
    Cards are what the studio's card reader read; the dealer signals the cut card with
    :meth:`Shoe.cut_card_out`. Every card is checked by card accounting (SHOE-3).
``"test"``
    An explicit, recorded order (a stacked shoe) for tests and demonstrations. Never on a
    production table; every one of its events says ``test: True``.

Invariants:

1. Cards leave in one order: the card at position ``p`` is the ``p``-th card drawn, positions run
   0, 1, 2... without gaps, and ``position == len(drawn)`` (SHOE-3).
2. No card code is drawn more often than ``decks`` times (SHOE-3); an rng shoe's cards are its
   shuffle's, a test shoe's are its recorded order's.
3. With ``burn_procedure`` (SHOE-2), the first thing out of the shoe is the burn: the shown card at
   position 0, then exactly :func:`burn_count` burned cards. Nothing is dealt before the burn and
   there is one burn per shoe.
4. The cut card comes out at most once (SHOE-1). After it, ``is_last_round`` is true and only the
   round in progress may draw; then the shoe is retired.
5. A retired shoe accepts nothing more. An rng shoe retires only by revealing the seed that matches
   its commitment, and the seed appears in no event before that.
6. A test shoe is never opened on a production table.

Every command validates first and raises a :class:`domain.errors.DomainError` having recorded
nothing; the ``@event`` bodies only apply state, and every event after ``Opened`` is made by
:func:`domain.recorder.trigger` (the library's event, for less). Payloads are plain JSON (cards
as codes).

>>> shoe = Shoe.open_test(table_id="t", shoe_number=1, decks=1, order=["AS", "KD"],
...                       production=False)
>>> shoe.draw().code, shoe.remaining
('AS', 1)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.cards import Card
from domain.errors import WrongOrder
from domain.events import SYSTEM, Consequence, Input
from domain.ids import stable_id
from domain.recorder import trigger
from domain.shoe_opening import ShoeOpening
from domain.shoe_record import (
    BURN_SHOWN,
    BURNED,
    CARDS_PER_DECK,
    KINDS,
    DrawnCard,
    ShoeKind,
    ShoeRecord,
    actor_json,
    burn_count,
)


class Shoe(ShoeOpening, ShoeRecord, Aggregate):
    """One shoe of one table (see the module docstring for kinds and invariants).

    Open it with :meth:`open_rng`, :meth:`open_live` or :meth:`open_test`, never by calling the
    class: those commands validate; ``__init__`` is the body of the ``Opened`` event.
    """

    # ----------------------------------------------------------------------------- events

    class Opened(Aggregate.Created, Input):
        """A shoe was opened: for rng the commitment (never the seed); for test the order."""

        table_id: str
        shoe_number: int
        kind: str
        decks: int
        production: bool
        burn_procedure: bool
        cut_card_at: int | None
        algorithm: str | None
        commitment: str | None
        order: list[str] | None
        test: bool
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class CardDrawn(Aggregate.Event, Input):
        """A card left the shoe to be dealt (``purpose``) at ``position``."""

        position: int
        card: str
        purpose: str
        round_id: str | None
        kind: str
        test: bool
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class BurnCardShown(Aggregate.Event, Input):
        """SHOE-2: the first card after the shuffle was taken and shown; it burns ``burn_count``."""

        position: int
        card: str
        burn_count: int
        rule: str
        test: bool
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class CardBurned(Aggregate.Event, Input):
        """SHOE-2: one card was burned face down at ``position``."""

        position: int
        card: str
        rule: str
        test: bool
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class CutCardCameOut(Aggregate.Event, Input):
        """The dealer of a live shoe signalled the cut card before the card at ``position``."""

        position: int
        round_id: str | None
        test: bool
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class CutCardReached(Aggregate.Event, Consequence):
        """SHOE-1: the cut card is out; round ``round_id`` is the shoe's last."""

        position: int
        round_id: str | None
        rule: str
        test: bool
        actor: dict[str, str]

    class SeedRevealed(Aggregate.Event, Input):
        """An rng shoe's vault seed (hex), revealed at retirement; it matches ``commitment``."""

        seed: str
        commitment: str
        algorithm: str
        test: bool
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class Retired(Aggregate.Event, Input):
        """The shoe is finished after ``position`` cards; nothing more leaves it."""

        position: int
        cut_card_out: bool
        reason: str | None
        test: bool
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    # ----------------------------------------------------------------------------- identity

    @staticmethod
    def create_id(table_id: str, shoe_number: int) -> UUID:
        """uuid5(ROUNDAUDIT_NAMESPACE, f"shoe:{table_id}:{shoe_number}")."""
        return stable_id("shoe", table_id, shoe_number)

    @event(Opened)
    def __init__(
        self,
        *,
        table_id: str,
        shoe_number: int,
        kind: str,
        decks: int,
        production: bool,
        burn_procedure: bool,
        cut_card_at: int | None,
        algorithm: str | None,
        commitment: str | None,
        order: list[str] | None,
        test: bool,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self._table_id = table_id
        self._shoe_number = shoe_number
        self._kind = kind
        self._decks = decks
        self._production = production
        self._burn_procedure = burn_procedure
        self._cut_card_at = cut_card_at
        self._algorithm = algorithm
        self._commitment = commitment
        self._order = list(order) if order is not None else None
        self._test = test
        self._nothing_out()

    # ----------------------------------------------------------------------------- commands

    def draw(
        self,
        *,
        purpose: str = "deal",
        seed: bytes | None = None,
        card: str | None = None,
        round_id: str | None = None,
        actor: Mapping[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> Card:
        """Take the next card. rng: computed from ``seed``; live: ``card`` as the reader read it;
        test: the next card of the order (``card``, if given, must be it)."""
        (taken,) = self._draw_card(purpose, seed, card, round_id)
        position = self.position
        trigger(
            self,
            "_card_drawn",
            position=position,
            card=taken.code,
            purpose=purpose,
            round_id=round_id,
            kind=self._kind,
            test=self._test,
            actor=actor_json(actor),
            request_id=request_id,
            client_time=client_time,
        )
        self._maybe_cut_card(position, round_id)
        return taken

    def burn(
        self,
        *,
        seed: bytes | None = None,
        card: str | None = None,
        cards: Sequence[str] | None = None,
        actor: Mapping[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> tuple[Card, tuple[Card, ...]]:
        """SHOE-2: take and show the first card, then burn as many cards as its value.

        Live shoes give the shown ``card`` and the burned ``cards`` as the reader read them;
        ``cards`` must number exactly the shown card's burn count. rng and test shoes compute
        them (``card``/``cards``, if given, must match). Returns (shown card, burned cards).
        """
        taken = self._burn_cards(seed, card, cards)
        shown, count = taken[0], burn_count(taken[0])
        start = self.position
        acting = actor_json(actor)
        trigger(
            self,
            "_burn_card_shown",
            position=start,
            card=shown.code,
            burn_count=count,
            rule="SHOE-2",
            test=self._test,
            actor=acting,
            request_id=request_id,
            client_time=client_time,
        )
        self._maybe_cut_card(start, None)
        for offset, burned in enumerate(taken[1:], start=1):
            trigger(
                self,
                "_card_burned",
                position=start + offset,
                card=burned.code,
                rule="SHOE-2",
                test=self._test,
                actor=acting,
                request_id=request_id,
                client_time=client_time,
            )
            self._maybe_cut_card(start + offset, None)
        return shown, tuple(taken[1:])

    def cut_card_out(
        self,
        round_id: str | None,
        *,
        actor: Mapping[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        """SHOE-1, live shoes: the dealer signals that the cut card came out during ``round_id``."""
        self._check_open()
        if self._kind != "live":
            raise WrongOrder(
                f"a {self._kind} shoe reaches its cut card by itself (cut_card_at); "
                "only a live dealer signals it",
                rule="SHOE-1",
            )
        if self._cut_card_out:
            raise WrongOrder("SHOE-1: the cut card is already out", rule="SHOE-1")
        if self._burn_procedure and not self._burn_done:
            raise WrongOrder("SHOE-2: the cut card cannot come out before the burn", rule="SHOE-2")
        position = self.position
        trigger(
            self,
            "_cut_card_came_out",
            position=position,
            round_id=round_id,
            test=self._test,
            actor=actor_json(actor),
            request_id=request_id,
            client_time=client_time,
        )
        self._maybe_cut_card(position, round_id, signalled=True)

    def retire(
        self,
        *,
        seed: bytes | None = None,
        reason: str | None = None,
        actor: Mapping[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        """Finish the shoe. An rng shoe must reveal its seed, which must match the commitment."""
        self._check_open()
        self._check_reveal(seed)
        acting = actor_json(actor)
        if self._kind == "rng" and seed is not None:
            assert self._algorithm is not None
            assert self._commitment is not None
            trigger(
                self,
                "_seed_revealed",
                seed=seed.hex(),
                commitment=self._commitment,
                algorithm=self._algorithm,
                test=self._test,
                actor=acting,
                request_id=request_id,
                client_time=client_time,
            )
        trigger(
            self,
            "_shoe_retired",
            position=self.position,
            cut_card_out=self._cut_card_out,
            reason=reason,
            test=self._test,
            actor=acting,
            request_id=request_id,
            client_time=client_time,
        )

    def _maybe_cut_card(
        self, position: int, round_id: str | None, *, signalled: bool = False
    ) -> None:
        """SHOE-1: the cut card is out before the card at ``position`` when a live dealer
        ``signalled`` it, or (rng/test) when the card at ``cut_card_at`` has just been drawn."""
        at = self._cut_card_at
        if signalled or (at is not None and not self._cut_card_out and position == at):
            trigger(
                self,
                "_cut_card_reached",
                position=position,
                round_id=round_id,
                rule="SHOE-1",
                test=self._test,
                actor=dict(SYSTEM),
            )

    # ----------------------------------------------------------------------------- event bodies

    @event(CardDrawn)
    def _card_drawn(
        self,
        *,
        position: int,
        card: str,
        purpose: str,
        round_id: str | None,
        kind: str,
        test: bool,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self._append(card, purpose, round_id)

    @event(BurnCardShown)
    def _burn_card_shown(
        self,
        *,
        position: int,
        card: str,
        burn_count: int,
        rule: str,
        test: bool,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self._append(card, BURN_SHOWN, None)
        self._burn_left = burn_count

    @event(CardBurned)
    def _card_burned(
        self,
        *,
        position: int,
        card: str,
        rule: str,
        test: bool,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self._append(card, BURNED, None)
        self._burn_left -= 1
        if self._burn_left == 0:
            self._burn_done = True

    @event(CutCardCameOut)
    def _cut_card_came_out(
        self,
        *,
        position: int,
        round_id: str | None,
        test: bool,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self._cut_position = position

    @event(CutCardReached)
    def _cut_card_reached(
        self,
        *,
        position: int,
        round_id: str | None,
        rule: str,
        test: bool,
        actor: dict[str, str],
    ) -> None:
        self._cut_card_out = True
        self._cut_position = position
        self._last_round_id = round_id

    @event(SeedRevealed)
    def _seed_revealed(
        self,
        *,
        seed: str,
        commitment: str,
        algorithm: str,
        test: bool,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self._seed_hex = seed

    @event(Retired)
    def _shoe_retired(
        self,
        *,
        position: int,
        cut_card_out: bool,
        reason: str | None,
        test: bool,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self._retired = True


__all__ = [
    "BURNED",
    "BURN_SHOWN",
    "CARDS_PER_DECK",
    "KINDS",
    "DrawnCard",
    "Shoe",
    "ShoeKind",
    "burn_count",
]
