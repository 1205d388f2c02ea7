"""Opening a shoe: the commands that open one of each kind, and every check of what an opening
records.

This module owns how a :class:`~domain.shoe.Shoe` comes to be: :meth:`ShoeOpening.open_rng`
(committed to a seed: only the commitment is recorded), :meth:`ShoeOpening.open_live` (cards
from the studio's reader) and :meth:`ShoeOpening.open_test` (an explicit, recorded order,
refused on a production table: invariant 6 of :mod:`domain.shoe`), and the checks of their
fields: the table id and shoe number, the decks, an rng shoe's commitment and algorithm, a test
shoe's order (SHOE-3: no card more often than the decks hold) and the cut card's place (SHOE-1).
Each command checks everything first and raises a :class:`domain.errors.DomainError` having
recorded nothing, then makes the shoe's ``Opened`` event, whose body (``Shoe.__init__``) and
class stay with the aggregate in :mod:`domain.shoe` (its stored topic is
``domain.shoe:Shoe.Opened``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

from domain.cards import Card
from domain.errors import CardAccountingError, InvalidShoe, ProductionRefusesTestShoe
from domain.events import SYSTEM
from domain.shoe_record import CARDS_PER_DECK, ShoeKind, actor_json
from domain.shuffle import ALGORITHM, tag_of

#: The opening fields only some kinds of shoe have: None unless given (``ShoeOpening._open``).
_BY_KIND: dict[str, Any] = dict.fromkeys(("cut_card_at", "algorithm", "commitment", "order"))


def checked_commitment(commitment: object, algorithm: str) -> str:
    """An RNG shoe's commitment (SHA-256 hex of its seed, lower case) under one of the
    shuffle's algorithms (``domain.shuffle.ALGORITHMS``: a shoe keeps the one it opened with)."""
    try:
        tag_of(algorithm)  # the shuffle's own refusal of an algorithm no shoe may name
    except ValueError as exc:
        raise InvalidShoe(str(exc)) from None
    text = commitment.strip().lower() if isinstance(commitment, str) else ""
    if len(text) != 64 or any(ch not in "0123456789abcdef" for ch in text):
        raise InvalidShoe(f"commitment {commitment!r} is not a SHA-256 hex digest")
    return text


def checked_order(order: Sequence[str], decks: int) -> list[Card]:
    """A test shoe's explicit order: card codes that ``decks`` decks can hold (SHOE-3)."""
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
                f"the test order has {code} {count} times but a {decks}-deck shoe holds {decks}",
                rule="SHOE-3",
            )
    return cards


def common_fields(
    table_id: str,
    shoe_number: int,
    decks: int,
    production: bool,
    burn_procedure: bool,
    actor: Mapping[str, str],
    request_id: str | None,
    client_time: str | None,
) -> dict[str, Any]:
    """The fields every kind of shoe opens with, checked."""
    if not isinstance(table_id, str) or not table_id.strip() or ":" in table_id:
        raise InvalidShoe(f"table id {table_id!r} must be a non-empty string without ':'")
    if isinstance(shoe_number, bool) or not isinstance(shoe_number, int) or shoe_number < 1:
        raise InvalidShoe(f"shoe number {shoe_number!r} must be an integer >= 1")
    if isinstance(decks, bool) or not isinstance(decks, int) or decks < 1:
        raise InvalidShoe(f"decks {decks!r} must be an integer >= 1")
    if not isinstance(production, bool) or not isinstance(burn_procedure, bool):
        raise InvalidShoe("production and burn_procedure must be booleans")
    return {
        "table_id": table_id,
        "shoe_number": shoe_number,
        "decks": decks,
        "production": production,
        "burn_procedure": burn_procedure,
        "actor": actor,
        "request_id": request_id,
        "client_time": client_time,
    }


def check_cut_card_at(cut_card_at: int | None, total: int) -> None:
    """SHOE-1: a cut card placed by position (rng, test) lies inside a shoe of ``total`` cards."""
    if cut_card_at is None:
        return
    if isinstance(cut_card_at, bool) or not isinstance(cut_card_at, int):
        raise InvalidShoe(f"cut_card_at {cut_card_at!r} must be an integer or None")
    if not 1 <= cut_card_at < total:
        raise InvalidShoe(
            f"cut_card_at {cut_card_at} must lie inside the shoe (1..{total - 1})",
            rule="SHOE-1",
        )


class ShoeOpening:
    """The opening commands of :class:`~domain.shoe.Shoe` (see the module docstring): open a
    shoe with one of them, never by calling the class (``__init__`` is the body of the
    ``Opened`` event)."""

    if TYPE_CHECKING:

        def __init__(self, **fields: Any) -> None: ...  # the aggregate's: its Opened event

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
    ) -> Self:
        """Open an RNG shoe committed to a seed (``commitment`` = SHA-256 hex of the seed)."""
        common = common_fields(
            table_id, shoe_number, decks, production, burn_procedure, actor, request_id, client_time
        )
        text = checked_commitment(commitment, algorithm)
        check_cut_card_at(cut_card_at, decks * CARDS_PER_DECK)
        return cls._open(
            "rng", common, cut_card_at=cut_card_at, algorithm=algorithm, commitment=text
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
    ) -> Self:
        """Open a live studio shoe; its cards come from the reader, its cut card from the dealer."""
        common = common_fields(
            table_id, shoe_number, decks, production, burn_procedure, actor, request_id, client_time
        )
        return cls._open("live", common)

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
    ) -> Self:
        """Open a stacked test shoe with an explicit order (refused on a production table)."""
        if production:
            raise ProductionRefusesTestShoe(
                f"table {table_id!r} is a production table: it refuses a test shoe"
            )
        common = common_fields(
            table_id, shoe_number, decks, production, burn_procedure, actor, request_id, client_time
        )
        cards = checked_order(order, decks)
        check_cut_card_at(cut_card_at, len(cards))
        order_codes = [card.code for card in cards]
        return cls._open("test", common, cut_card_at=cut_card_at, order=order_codes)

    @classmethod
    def _open(cls, kind: ShoeKind, common: dict[str, Any], **fields: Any) -> Self:
        """The ``Opened`` event of checked opening fields: ``common`` (:func:`common_fields`)
        and those of the kind (a test shoe says so on every event; a field a kind does not
        have is None)."""
        opened = _BY_KIND | common | fields
        opened["actor"] = actor_json(opened["actor"])
        return cls(kind=kind, test=kind == "test", **opened)


__all__ = [
    "ShoeOpening",
    "check_cut_card_at",
    "checked_commitment",
    "checked_order",
    "common_fields",
]
