"""RoundAudit's shoes: opening them (RNG with a sealed seed and its commitment, live, test), the
burn procedure (SHOE-2), the cut card (SHOE-1), retirement (the seed revealed; refused while a
round in play draws from the shoe), their view.

An RNG shoe's seed comes from the CSPRNG (:func:`domain.shuffle.new_seed`). A caller that must
reproduce its cards (the simulator, ``cli/simulate.py``) may name :attr:`Shoes.shoe_seeds`, a
function of the new shoe's id; the shoe is then sealed, committed, burned, drawn and verified
exactly as any other, only its seed is no secret to whoever knows that function."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from uuid import UUID

from domain.errors import AlreadyExists, ShoeInUse, WrongOrder
from domain.events import SYSTEM
from domain.services.base import MAX_DECKS, Json, check_id, check_number
from domain.services.in_play import InPlay
from domain.shoe import Shoe
from domain.shuffle import commitment, new_seed
from domain.side_rows import NONE, SealedSeed, SideRows


class Shoes(InPlay):
    """Shoes and their cards."""

    #: Where RNG shoes' seeds come from: None for the CSPRNG (production), or a function of the
    #: new shoe's id returning its seed (at least 16 bytes), for a reproducible simulation.
    shoe_seeds: Callable[[UUID], bytes] | None = None

    def open_shoe(
        self,
        *,
        table_id: str,
        shoe_number: int,
        kind: str,
        decks: int,
        production: bool,
        order: list[str] | None = None,
        burn_procedure: bool = False,
        cut_card_at: int | None = None,
        actor: Mapping[str, str] = SYSTEM,
    ) -> str:
        check_id(table_id, "table_id")
        check_number(shoe_number, "shoe_number")
        check_number(decks, "decks", MAX_DECKS)
        sid = Shoe.create_id(table_id, shoe_number)
        what = f"shoe {shoe_number} of table {table_id!r}"
        if sid in self.repository:
            raise AlreadyExists(f"{what} already exists")
        shoe, side = self._new_shoe(
            kind,
            table_id=table_id,
            shoe_number=shoe_number,
            decks=decks,
            production=production,
            order=order,
            burn_procedure=burn_procedure,
            cut_card_at=cut_card_at,
            actor=actor,
        )
        self._save_new(shoe, what=what, side=side)
        return str(shoe.id)

    def _new_shoe(
        self,
        kind: str,
        *,
        table_id: str,
        shoe_number: int,
        decks: int,
        production: bool,
        order: list[str] | None = None,
        burn_procedure: bool = False,
        cut_card_at: int | None = None,
        actor: Mapping[str, str] = SYSTEM,
    ) -> tuple[Shoe, SideRows]:
        """A new shoe of ``kind``, not saved yet, and the rows to save with it (an RNG shoe's
        sealed seed: ``domain.side_rows``)."""
        common: dict[str, Any] = {"table_id": table_id, "shoe_number": shoe_number}
        common |= {"decks": decks, "production": production, "burn_procedure": burn_procedure}
        common["actor"] = actor
        if kind == "rng":
            source = self.shoe_seeds
            seed = new_seed() if source is None else source(Shoe.create_id(table_id, shoe_number))
            shoe = Shoe.open_rng(commitment=commitment(seed), cut_card_at=cut_card_at, **common)
            sealed = SealedSeed(self.vault.sealed_row(shoe.id, seed), seed)
            return shoe, SideRows(sealed_seeds=(sealed,))
        if kind == "live":
            return Shoe.open_live(**common), NONE
        if kind == "test":
            return Shoe.open_test(order=order or [], cut_card_at=cut_card_at, **common), NONE
        raise WrongOrder(f"unknown shoe kind {kind!r}: rng, live or test")

    def burn(
        self,
        shoe_id: str,
        *,
        card: str | None = None,
        cards: list[str] | None = None,
        actor: Mapping[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> Json:
        def run() -> Json:
            shoe = self.shoe(shoe_id)
            shown, burned = shoe.burn(
                seed=self._sealed_seed(shoe),
                card=card,
                cards=cards,
                actor=actor,
                request_id=request_id,
                client_time=client_time,
            )
            self.save(shoe)
            return {"shown": shown.code, "burned": [c.code for c in burned]}

        return self._retry(run)

    def cut_card_out(
        self,
        shoe_id: str,
        *,
        round_id: str | None = None,
        actor: Mapping[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        def run() -> None:
            shoe = self.shoe(shoe_id)
            shoe.cut_card_out(
                round_id=round_id, actor=actor, request_id=request_id, client_time=client_time
            )
            self.save(shoe)

        self._retry(run)

    def retire_shoe(
        self,
        shoe_id: str,
        *,
        actor: Mapping[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> Json:
        """Retire the shoe (an RNG shoe reveals its seed). Refused while a round in play draws
        from it (:class:`~domain.errors.ShoeInUse`): the seed would tell its coming cards, and
        the round could draw no more."""

        def run() -> Json:
            shoe = self.shoe(shoe_id)
            in_play = self.rounds_in_play(shoe) if not shoe.retired else []
            if in_play:
                raise ShoeInUse(
                    f"shoe {shoe.shoe_number} of table {shoe.table_id!r} is in use by "
                    f"{len(in_play)} round(s) in play ({', '.join(map(str, in_play[:5]))}): "
                    "finish or cancel them before retiring it",
                    rule="SHOE-1",
                )
            shoe.retire(
                seed=self._sealed_seed(shoe),
                actor=actor,
                request_id=request_id,
                client_time=client_time,
            )
            self.save(shoe)
            return self.shoe_view(shoe)

        return self._retry(run)

    @staticmethod
    def shoe_view(shoe: Shoe) -> Json:
        return {
            "shoe_id": str(shoe.id),
            "table_id": shoe.table_id,
            "shoe_number": shoe.shoe_number,
            "kind": shoe.kind,
            "decks": shoe.decks,
            "test": shoe.is_test,
            "commitment": shoe.commitment,
            "algorithm": shoe.algorithm,
            "revealed_seed": shoe.revealed_seed,
            "position": shoe.position,
            "remaining": shoe.remaining,
            "last_round": shoe.is_last_round,
            "retired": shoe.retired,
            "drawn": [
                {"position": d.position, "card": d.card, "purpose": d.purpose} for d in shoe.drawn
            ],
        }


__all__ = ["Shoes"]
