"""What a shoe knows of its cards: its record, the queries on it, and the checks of every card
(SHOE-1..3).

:class:`ShoeRecord` is the state of a :class:`~domain.shoe.Shoe` (the attributes its events'
bodies set) with everything that only reads it: the kind, decks and commitment, where the next
card is and how many are left, every card that left (:attr:`ShoeRecord.drawn`), the card
accounting (SHOE-3) a command checks before it records anything (:meth:`ShoeRecord._take`),
the checks of a draw, the burn (SHOE-2) and a retirement, the re-derivation of an RNG shoe's
cards from its revealed seed, and the plain actor every shoe event records
(:func:`actor_json`). The aggregate (``domain.shoe``) holds the events and the commands after
the opening; the opening commands and their checks are :mod:`domain.shoe_opening`'s.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Final, Literal, NamedTuple, cast, get_args

from domain.cards import Card
from domain.errors import (
    CardAccountingError,
    InvalidCard,
    InvalidSeed,
    InvalidShoe,
    ShoeExhausted,
    ShoeRetired,
    WrongBurnCount,
    WrongOrder,
)
from domain.shuffle import (
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


def actor_json(actor: Mapping[str, str]) -> dict[str, str]:
    """The actor every shoe event records: a plain dict of strings."""
    return {str(k): str(v) for k, v in actor.items()}


def _refuse_seed(kind: str, seed: bytes | None) -> None:
    if seed is not None:
        raise InvalidSeed(f"a {kind} shoe has no seed; none may be given")


class ShoeRecord:
    """A shoe's state and what reads it (see the module docstring)."""

    _table_id: str
    _shoe_number: int
    _kind: str
    _decks: int
    _production: bool
    _burn_procedure: bool
    _cut_card_at: int | None
    _algorithm: str | None
    _commitment: str | None
    _order: list[str] | None
    _test: bool
    _cards: list[str]
    _purposes: list[str]
    _round_ids: list[str | None]
    _burn_done: bool
    _burn_left: int
    _cut_card_out: bool
    _cut_position: int | None
    _last_round_id: str | None
    _seed_hex: str | None
    _retired: bool

    def _nothing_out(self) -> None:
        """The state of a shoe just opened (``Shoe.Opened``): nothing drawn, burned or cut."""
        self._cards = []
        self._purposes = []
        self._round_ids = []
        self._burn_done = False
        self._burn_left = 0
        self._cut_card_out = False
        self._cut_position = None
        self._last_round_id = None
        self._seed_hex = None
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
            self._algorithm or "",
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
            assert self._algorithm is not None  # an rng shoe names its algorithm
            return shuffled_order(seed, self._decks, self._algorithm)
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
        counts: Counter[str] | None = None  # the cards out so far: only to check a live card
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
                raise WrongOrder(  # the shoe's kind decides (a live one), not the form: 409
                    f"a live shoe needs the card the reader read (position {position})",
                    rule="SHOE-3",
                )
            card = Card.parse(code)
            if counts is None:
                counts = Counter(self._cards)
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

    def _draw_card(
        self, purpose: str, seed: bytes | None, card: str | None, round_id: str | None
    ) -> list[Card]:
        """The card a draw takes, checked: after the burn (SHOE-2), for a purpose of its own,
        in the shoe's last round once the cut card is out (SHOE-1), accounted (SHOE-3)."""
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
        return self._take([card], seed)

    def _check_reveal(self, seed: bytes | None) -> None:
        """An RNG shoe retires by revealing the seed of its commitment; the others have none."""
        if self._kind == "rng":
            self._check_seed(seed)
        else:
            _refuse_seed(self._kind, seed)

    def _burn_cards(
        self, seed: bytes | None, card: str | None, cards: Sequence[str] | None
    ) -> list[Card]:
        """SHOE-2's cards, checked: the shown card, then exactly as many burned cards as its
        value, first out of the shoe, once. Records nothing."""
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
        return self._take(given, seed)

    def _append(self, card: str, purpose: str, round_id: str | None) -> None:
        self._cards.append(card)
        self._purposes.append(purpose)
        self._round_ids.append(round_id)
        if self._cut_card_out and self._last_round_id is None and round_id is not None:
            self._last_round_id = round_id


__all__ = [
    "BURNED",
    "BURN_SHOWN",
    "CARDS_PER_DECK",
    "KINDS",
    "RESERVED_PURPOSES",
    "DrawnCard",
    "ShoeKind",
    "ShoeRecord",
    "actor_json",
    "burn_count",
]
