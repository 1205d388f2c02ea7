"""The shoe: where the cards of a table come from, in one order, every one accounted for.

This module owns the :class:`Shoe` aggregate (SHOE-1..3, D3) and the pure helper
:func:`burn_count`. A shoe is opened for one table with a number, and is one of three kinds:

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
nothing; the ``@event`` bodies only apply state. Payloads are plain JSON (cards as codes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Final, Literal, NamedTuple, cast, get_args
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.cards import Card
from domain.errors import (
    CardAccountingError,
    InvalidCard,
    InvalidSeed,
    InvalidShoe,
    ProductionRefusesTestShoe,
    ShoeExhausted,
    ShoeRetired,
    WrongBurnCount,
    WrongOrder,
)
from domain.events import SYSTEM, Consequence, Input
from domain.ids import stable_id
from domain.shuffle import (
    ALGORITHM,
    Discrepancy,
    commitment,
    matches_commitment,
    shuffled_order,
    verify_order,
)

ShoeKind = Literal["rng", "live", "test"]
KINDS: Final[tuple[str, ...]] = get_args(ShoeKind)
CARDS_PER_DECK: Final = 52
BURN_SHOWN: Final = "burn-shown"
BURNED: Final = "burn"
RESERVED_PURPOSES: Final = frozenset({BURN_SHOWN, BURNED})


def burn_count(card: Card) -> int:
    """SHOE-2: how many cards the shown card burns: A = 1, 2-10 face value, J/Q/K = 10.

    >>> [burn_count(Card.parse(c)) for c in ("AS", "2D", "9C", "10H", "JS", "QD", "KC")]
    [1, 2, 9, 10, 10, 10, 10]
    """
    return card.value


class DrawnCard(NamedTuple):
    """A card that left the shoe: where, which, why (deal, burn-shown, burn), in which round."""

    position: int
    card: str
    purpose: str
    round_id: str | None


def _actor(actor: Mapping[str, str]) -> dict[str, str]:
    return {str(k): str(v) for k, v in actor.items()}


def _refuse_seed(kind: str, seed: bytes | None) -> None:
    if seed is not None:
        raise InvalidSeed(f"a {kind} shoe has no seed; none may be given")


class Shoe(Aggregate):
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

    # ----------------------------------------------------------------------------- creation

    @classmethod
    def open_rng(
        cls,
        *,
        table_id: str,
        shoe_number: int,
        decks: int,
        commitment: str,
        production: bool,
        burn_procedure: bool = False,
        cut_card_at: int | None = None,
        algorithm: str = ALGORITHM,
        actor: Mapping[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> Shoe:
        """Open an RNG shoe committed to a seed (``commitment`` = SHA-256 hex of the seed)."""
        cls._check_common(table_id, shoe_number, decks, production, burn_procedure)
        if algorithm != ALGORITHM:
            raise InvalidShoe(f"unknown shuffle algorithm {algorithm!r}; supported: {ALGORITHM!r}")
        text = commitment.strip().lower() if isinstance(commitment, str) else ""
        if len(text) != 64 or any(ch not in "0123456789abcdef" for ch in text):
            raise InvalidShoe(f"commitment {commitment!r} is not a SHA-256 hex digest")
        cls._check_cut_card_at(cut_card_at, decks * CARDS_PER_DECK)
        return cls._open(
            table_id=table_id,
            shoe_number=shoe_number,
            kind="rng",
            decks=decks,
            production=production,
            burn_procedure=burn_procedure,
            cut_card_at=cut_card_at,
            algorithm=algorithm,
            commitment=text,
            order=None,
            actor=actor,
            request_id=request_id,
            client_time=client_time,
        )

    @classmethod
    def open_live(
        cls,
        *,
        table_id: str,
        shoe_number: int,
        decks: int,
        production: bool,
        burn_procedure: bool = True,
        actor: Mapping[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> Shoe:
        """Open a live studio shoe; its cards come from the reader, its cut card from the dealer."""
        cls._check_common(table_id, shoe_number, decks, production, burn_procedure)
        return cls._open(
            table_id=table_id,
            shoe_number=shoe_number,
            kind="live",
            decks=decks,
            production=production,
            burn_procedure=burn_procedure,
            cut_card_at=None,
            algorithm=None,
            commitment=None,
            order=None,
            actor=actor,
            request_id=request_id,
            client_time=client_time,
        )

    @classmethod
    def open_test(
        cls,
        *,
        table_id: str,
        shoe_number: int,
        decks: int,
        order: Sequence[str],
        production: bool,
        burn_procedure: bool = False,
        cut_card_at: int | None = None,
        actor: Mapping[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> Shoe:
        """Open a stacked test shoe with an explicit order (refused on a production table)."""
        if production:
            raise ProductionRefusesTestShoe(
                f"table {table_id!r} is a production table: it refuses a test shoe"
            )
        cls._check_common(table_id, shoe_number, decks, production, burn_procedure)
        if isinstance(order, str) or not order:
            raise InvalidShoe("a test shoe needs a non-empty list of card codes")
        cards = [Card.parse(code) for code in order]
        if len(cards) > decks * CARDS_PER_DECK:
            raise CardAccountingError(
                f"a test order of {len(cards)} cards does not fit {decks} deck(s) "
                f"({decks * CARDS_PER_DECK} cards)",
                rule="SHOE-3",
            )
        for code, count in Counter(card.code for card in cards).items():
            if count > decks:
                raise CardAccountingError(
                    f"the test order has {code} {count} times but a {decks}-deck shoe holds "
                    f"{decks}",
                    rule="SHOE-3",
                )
        cls._check_cut_card_at(cut_card_at, len(cards))
        return cls._open(
            table_id=table_id,
            shoe_number=shoe_number,
            kind="test",
            decks=decks,
            production=production,
            burn_procedure=burn_procedure,
            cut_card_at=cut_card_at,
            algorithm=None,
            commitment=None,
            order=[card.code for card in cards],
            actor=actor,
            request_id=request_id,
            client_time=client_time,
        )

    @staticmethod
    def _check_common(
        table_id: str, shoe_number: int, decks: int, production: bool, burn_procedure: bool
    ) -> None:
        if not isinstance(table_id, str) or not table_id.strip() or ":" in table_id:
            raise InvalidShoe(f"table id {table_id!r} must be a non-empty string without ':'")
        if isinstance(shoe_number, bool) or not isinstance(shoe_number, int) or shoe_number < 1:
            raise InvalidShoe(f"shoe number {shoe_number!r} must be an integer >= 1")
        if isinstance(decks, bool) or not isinstance(decks, int) or decks < 1:
            raise InvalidShoe(f"decks {decks!r} must be an integer >= 1")
        if not isinstance(production, bool) or not isinstance(burn_procedure, bool):
            raise InvalidShoe("production and burn_procedure must be booleans")

    @staticmethod
    def _check_cut_card_at(cut_card_at: int | None, total: int) -> None:
        if cut_card_at is None:
            return
        if isinstance(cut_card_at, bool) or not isinstance(cut_card_at, int):
            raise InvalidShoe(f"cut_card_at {cut_card_at!r} must be an integer or None")
        if not 1 <= cut_card_at < total:
            raise InvalidShoe(
                f"cut_card_at {cut_card_at} must lie inside the shoe (1..{total - 1})",
                rule="SHOE-1",
            )

    @classmethod
    def _open(
        cls,
        *,
        table_id: str,
        shoe_number: int,
        kind: ShoeKind,
        decks: int,
        production: bool,
        burn_procedure: bool,
        cut_card_at: int | None,
        algorithm: str | None,
        commitment: str | None,
        order: list[str] | None,
        actor: Mapping[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> Shoe:
        return cls(
            table_id=table_id,
            shoe_number=shoe_number,
            kind=kind,
            decks=decks,
            production=production,
            burn_procedure=burn_procedure,
            cut_card_at=cut_card_at,
            algorithm=algorithm,
            commitment=commitment,
            order=order,
            test=kind == "test",
            actor=_actor(actor),
            request_id=request_id,
            client_time=client_time,
        )

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
        self._cards: list[str] = []
        self._purposes: list[str] = []
        self._round_ids: list[str | None] = []
        self._burn_done = False
        self._burn_left = 0
        self._cut_card_out = False
        self._cut_position: int | None = None
        self._last_round_id: str | None = None
        self._seed_hex: str | None = None
        self._retired = False

    # ----------------------------------------------------------------------------- queries

    @property
    def table_id(self) -> str:
        return self._table_id

    @property
    def shoe_number(self) -> int:
        return self._shoe_number

    @property
    def kind(self) -> ShoeKind:
        return cast(ShoeKind, self._kind)

    @property
    def decks(self) -> int:
        return self._decks

    @property
    def production(self) -> bool:
        return self._production

    @property
    def is_test(self) -> bool:
        return self._test

    @property
    def burn_procedure(self) -> bool:
        return self._burn_procedure

    @property
    def burn_done(self) -> bool:
        return self._burn_done

    @property
    def cut_card_at(self) -> int | None:
        return self._cut_card_at

    @property
    def algorithm(self) -> str | None:
        return self._algorithm

    @property
    def commitment(self) -> str | None:
        return self._commitment

    @property
    def revealed_seed(self) -> str | None:
        """The seed (hex) once an rng shoe has retired; ``None`` before."""
        return self._seed_hex

    @property
    def size(self) -> int:
        """How many cards the shoe holds in all (a test shoe: its order's length)."""
        if self._order is not None:
            return len(self._order)
        return self._decks * CARDS_PER_DECK

    @property
    def position(self) -> int:
        """The position of the next card, i.e. how many cards have left the shoe."""
        return len(self._cards)

    @property
    def remaining(self) -> int:
        return self.size - self.position

    @property
    def drawn(self) -> tuple[DrawnCard, ...]:
        """Every card that left the shoe, dealt or burned, in position order."""
        return tuple(
            DrawnCard(p, card, purpose, round_id)
            for p, (card, purpose, round_id) in enumerate(
                zip(self._cards, self._purposes, self._round_ids, strict=True)
            )
        )

    @property
    def is_last_round(self) -> bool:
        """SHOE-1: the cut card is out, so the round in progress is the shoe's last."""
        return self._cut_card_out

    @property
    def last_round_id(self) -> str | None:
        return self._last_round_id

    @property
    def retired(self) -> bool:
        return self._retired

    def accounting(self) -> dict[str, int]:
        """SHOE-3: card code -> how many times it has left the shoe (dealt or burned)."""
        return dict(Counter(self._cards))

    def verify(self) -> list[Discrepancy]:
        """Re-derive every card of a retired rng shoe from its revealed seed (empty: all good)."""
        if self._kind != "rng":
            raise WrongOrder(f"only an rng shoe is verified from a seed; this one is {self._kind}")
        if self._seed_hex is None or self._commitment is None:
            raise WrongOrder("the seed is revealed only when the shoe retires", rule="SHOE-3")
        return verify_order(
            self._commitment,
            bytes.fromhex(self._seed_hex),
            self._decks,
            [(d.position, d.card) for d in self.drawn],
        )

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
        self._check_open()
        if self._burn_procedure and not self._burn_done:
            raise WrongOrder(
                "SHOE-2: the burn comes first after a shuffle; nothing may be dealt before it",
                rule="SHOE-2",
            )
        if not isinstance(purpose, str) or not purpose.strip():
            raise InvalidShoe("a draw needs a purpose, e.g. 'deal'")
        if purpose in RESERVED_PURPOSES:
            raise WrongOrder(f"purpose {purpose!r} belongs to the burn (SHOE-2): use burn()")
        self._check_round(round_id)
        (taken,) = self._take([card], seed)
        position = self.position
        self._card_drawn(
            position=position,
            card=taken.code,
            purpose=purpose,
            round_id=round_id,
            kind=self._kind,
            test=self._test,
            actor=_actor(actor),
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
        self._check_open()
        if not self._burn_procedure:
            raise WrongOrder("this shoe has no burn procedure (SHOE-2 is off)", rule="SHOE-2")
        if self._burn_done:
            raise WrongOrder(
                "SHOE-2: this shoe has already burned; one burn per shuffle", rule="SHOE-2"
            )
        if self.position:
            raise WrongOrder(
                f"SHOE-2: the burn must come first, but {self.position} card(s) already left",
                rule="SHOE-2",
            )
        if isinstance(cards, str):
            raise InvalidCard("cards must be a list of card codes, not one string")
        (shown,) = self._take([card], seed)
        count = burn_count(shown)
        if cards is None and self._kind == "live":
            raise WrongBurnCount(
                f"SHOE-2: the shown {shown.code} burns {count} card(s) but the reader gave none",
                rule="SHOE-2",
            )
        if cards is not None and len(cards) != count:
            raise WrongBurnCount(
                f"SHOE-2: the shown {shown.code} burns {count} card(s) but {len(cards)} were given",
                rule="SHOE-2",
            )
        given: list[str | None] = [card, *(cards if cards is not None else [None] * count)]
        taken = self._take(given, seed)
        start = self.position
        acting = _actor(actor)
        self._burn_card_shown(
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
            self._card_burned(
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
        self._cut_card_came_out(
            position=position,
            round_id=round_id,
            test=self._test,
            actor=_actor(actor),
            request_id=request_id,
            client_time=client_time,
        )
        self._cut_card_reached(
            position=position, round_id=round_id, rule="SHOE-1", test=self._test, actor=dict(SYSTEM)
        )

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
        if self._kind == "rng":
            self._check_seed(seed)
            assert seed is not None
        else:
            _refuse_seed(self._kind, seed)
        acting = _actor(actor)
        if self._kind == "rng" and seed is not None:
            assert self._algorithm is not None
            assert self._commitment is not None
            self._seed_revealed(
                seed=seed.hex(),
                commitment=self._commitment,
                algorithm=self._algorithm,
                test=self._test,
                actor=acting,
                request_id=request_id,
                client_time=client_time,
            )
        self._shoe_retired(
            position=self.position,
            cut_card_out=self._cut_card_out,
            reason=reason,
            test=self._test,
            actor=acting,
            request_id=request_id,
            client_time=client_time,
        )

    # ----------------------------------------------------------------------------- checks

    def _check_open(self) -> None:
        if self._retired:
            raise ShoeRetired(
                f"shoe {self._shoe_number} of table {self._table_id} is retired", rule="SHOE-1"
            )

    def _check_seed(self, seed: bytes | None) -> None:
        if seed is None:
            raise InvalidSeed("an rng shoe needs its seed from the vault for this command")
        if not isinstance(seed, bytes):
            raise InvalidSeed(f"a seed is bytes, got {type(seed).__name__}")
        assert self._commitment is not None
        if not matches_commitment(self._commitment, seed):
            raise InvalidSeed(
                f"the seed does not match the shoe's commitment {self._commitment} "
                f"(its SHA-256 is {commitment(seed)})",
                rule="SHOE-3",
            )

    def _check_round(self, round_id: str | None) -> None:
        last = self._last_round_id
        if self._cut_card_out and last is not None and round_id is not None and round_id != last:
            raise WrongOrder(
                f"SHOE-1: the cut card came out in round {last}, the shoe's last; "
                f"round {round_id} needs a new shoe",
                rule="SHOE-1",
            )

    def _known_order(self, seed: bytes | None) -> Sequence[Card] | None:
        if self._kind == "rng":
            self._check_seed(seed)
            assert seed is not None
            return shuffled_order(seed, self._decks)
        _refuse_seed(self._kind, seed)
        if self._order is not None:
            return [Card.parse(code) for code in self._order]
        return None

    def _take(self, given: Sequence[str | None], seed: bytes | None) -> list[Card]:
        """The next ``len(given)`` cards, validated; ``None`` entries are not checked (rng, test).
        Records nothing."""
        if len(given) > self.remaining:
            raise ShoeExhausted(
                f"the shoe has {self.remaining} card(s) left; {len(given)} needed", rule="SHOE-3"
            )
        known = self._known_order(seed)
        counts = Counter(self._cards)
        out: list[Card] = []
        for offset, code in enumerate(given):
            position = self.position + offset
            if known is not None:
                expected = known[position]
                if code is not None and Card.parse(code) != expected:
                    # never name the expected card: it is a position not dealt yet
                    raise WrongOrder(
                        f"position {position}: {Card.parse(code).code} is not the shoe's next "
                        "card (an rng or test shoe deals its own order; give no card)",
                        rule="SHOE-3",
                    )
                out.append(expected)
                continue
            if code is None:
                raise InvalidCard(
                    f"a live shoe needs the card the reader read (position {position})"
                )
            card = Card.parse(code)
            counts[card.code] += 1
            if counts[card.code] > self._decks:
                raise CardAccountingError(
                    f"SHOE-3: {card.code} at position {position} would be the "
                    f"{counts[card.code]}th {card.code} out of the shoe, but {self._decks} "
                    f"deck(s) hold only {self._decks}",
                    rule="SHOE-3",
                )
            out.append(card)
        return out

    def _maybe_cut_card(self, position: int, round_id: str | None) -> None:
        """rng/test: SHOE-1 when the card at ``cut_card_at`` has just been drawn."""
        at = self._cut_card_at
        if at is not None and not self._cut_card_out and position == at:
            self._cut_card_reached(
                position=position,
                round_id=round_id,
                rule="SHOE-1",
                test=self._test,
                actor=dict(SYSTEM),
            )

    # ----------------------------------------------------------------------------- event bodies

    def _append(self, card: str, purpose: str, round_id: str | None) -> None:
        self._cards.append(card)
        self._purposes.append(purpose)
        self._round_ids.append(round_id)
        if self._cut_card_out and self._last_round_id is None and round_id is not None:
            self._last_round_id = round_id

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
