"""RoundAudit's rounds: starting them, and the classic round's commands as transactions.

Every command loads the round (a :class:`~domain.round.Round`: a recorder of what the game core
decides), has it decide the command (``Round.execute``), then everything the rules make due
without new input (cards an RNG or test shoe owes, PRE-1 choices whose turn came, the table's
DLX-3/4 bookkeeping), turns the round's new stake and settlement events into wallet movements,
and saves round, shoe, table and wallets **in one transaction**, so a crash can neither lose
nor double a movement. Wallet movements are idempotent by deterministic transaction ids as a
second guard. A concurrent writer's conflict runs the command again on fresh state.

A round command given a boundless round's id goes, with the same arguments, to the boundless
service (:func:`domain.boundless.service.dispatch`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from uuid import UUID

from domain.boundless.service import BoundlessService, dispatch
from domain.cards import Card
from domain.errors import (
    AlreadyExists,
    DomainError,
    InvalidRequest,
    RoundNotFound,
    ShoeNotFound,
    TableNotFound,
    WrongOrder,
)
from domain.events import SYSTEM, copied, event_json
from domain.events import supervisor as supervisor_of
from domain.game import commands as C
from domain.movements import WalletBook
from domain.round import Round
from domain.rules import get_rules
from domain.services.base import Json, ShoeOf, caught_up, check_id, check_number, uuid_of
from domain.services.players import Players
from domain.services.shoes import Shoes
from domain.shoe import Shoe
from domain.side_rows import NONE, SideRows
from domain.table import Table
from domain.vault import SeedKeyRing
from domain.wallet import check_money_kind

PRE_1 = {"kind": "system", "id": "PRE-1"}


class Rounds(Players, Shoes):
    """Rounds of every variant: classic ones here, boundless ones by the boundless service."""

    def __init__(
        self, env: Mapping[str, str] | None = None, *, seed_key: SeedKeyRing | None = None
    ) -> None:
        super().__init__(env, seed_key=seed_key)
        self.boundless = BoundlessService(self)  # rounds with rules.shared_hand

    def round(self, round_id: str | UUID) -> Round:
        rid = uuid_of(round_id, RoundNotFound)
        return self._get(Round, rid, RoundNotFound, f"round {round_id}")

    @caught_up
    def start_round(
        self,
        *,
        table_id: str,
        round_number: int,
        variant: str,
        shoe_id: str | None = None,
        shoe_round: int = 1,
        production: bool = True,
        test_order: list[str] | None = None,
        actor: Mapping[str, str] = SYSTEM,
    ) -> str:
        """Start a round. RNG variants get a fresh shoe for the round (D3) unless a test order
        is given (a test shoe, refused on production tables). When the table has a record
        (``open_table``), the round must be of its variant and agree with it on production;
        a production deluxe round needs its table (the seats, DLX-1)."""
        rules = get_rules(variant)
        check_id(table_id, "table_id")
        check_number(round_number, "round_number")
        check_number(shoe_round, "shoe_round")
        if shoe_id is not None and test_order is not None:
            raise InvalidRequest("give either shoe_id or test_order, not both")
        rid = Round.create_id(table_id, round_number)
        what = f"round {round_number} of table {table_id!r}"
        # No query asks first whether the round or its new shoe exists: the save of a new
        # aggregate conflicts when one does (AuditBase._save_new), and any refusal is then told
        # as those checks told it, in their order (_refuse_existing). A new shoe's
        # (table, number) once it is made:
        shoe_key: tuple[str, int] | None = None
        try:
            new_shoe: Shoe | None = None
            side = NONE
            if shoe_id is None:
                if test_order is None and not rules.reshuffle_every_round:
                    raise WrongOrder(
                        f"{rules.variant} is dealt from a live shoe: open one and name it"
                    )
                shoe_key = (table_id, round_number)
                new_shoe, side = self._round_shoe(
                    table_id, round_number, rules.decks, production, test_order
                )
                shoe = new_shoe
            else:
                shoe = self.shoe(shoe_id)
                if shoe.table_id != table_id:
                    raise WrongOrder(f"shoe {shoe_id} belongs to table {shoe.table_id!r}")
                if shoe.retired:
                    raise WrongOrder(f"shoe {shoe_id} is retired")
                if shoe.production != production:
                    raise WrongOrder(
                        "the shoe and the round disagree on whether the table is production"
                    )
            seats: dict[str, str] = {}
            table = self._get_or_none(Table, Table.create_id(table_id))
            if table is not None:
                if table.variant != rules.variant:
                    raise WrongOrder(
                        f"table {table_id!r} is a {table.variant} table, not a {rules.variant} one"
                    )
                if table.production != production:
                    raise WrongOrder("the table and the round disagree on production")
                if table.seated:  # deluxe: the table's seats (DLX-1..4)
                    balances = {p: self.balance(p) for p in set(table.seats.values())}
                    seats = table.begin_round(round_number=round_number, balances=balances)
                else:
                    table = None  # nothing of the round is recorded on a table without seats
            elif production and rules.bet_behind:
                raise TableNotFound(
                    f"a production deluxe round needs its table: open table {table_id!r} and "
                    "seat the players first"
                )
            # the round's index row, in the save that records the round (domain.side_rows)
            side += SideRows(shoe_rounds=((shoe.id, rid),))
            start = C.Start(
                table_id=table_id,
                round_number=round_number,
                rules_key=rules.key,
                shoe_id=str(shoe.id),
                shoe_round=shoe_round,
                production=production,
                seats=seats,
                actor=dict(actor),
            )
            if rules.shared_hand:  # boundless: a SharedHand and one Participation per player
                return self.boundless.start(start, new_shoe=new_shoe, what=what, side=side)
            rnd = Round.opened_by(start)
            self._save_new(rnd, new_shoe, table, what=what, side=side)
            self.boundless.recorded_classic(rnd.id)  # its commands need not ask the store
            return str(rnd.id)
        except DomainError:
            self._refuse_existing(rid, what, shoe_key)
            raise

    def _refuse_existing(self, rid: UUID, what: str, shoe_key: tuple[str, int] | None) -> None:
        """Raise :class:`AlreadyExists` when the round ``rid`` exists (``what`` names it), else
        when the new shoe of ``shoe_key`` (table, number) does: what ``start_round`` told, in
        this order, before anything else, when it asked the store first. The store is read,
        not the cache: only on the way out of a refused start."""
        if self.recorder.select_events(rid, limit=1):
            raise AlreadyExists(f"{what} already exists") from None
        if shoe_key is not None:
            table_id, number = shoe_key
            if self.recorder.select_events(Shoe.create_id(table_id, number), limit=1):
                raise AlreadyExists(f"shoe {number} of table {table_id!r} already exists") from None

    def _round_shoe(
        self,
        table_id: str,
        shoe_number: int,
        decks: int,
        production: bool,
        test_order: list[str] | None,
    ) -> tuple[Shoe, SideRows]:
        """A round's own shoe (D3): a test shoe of ``test_order``, or a fresh RNG shoe (with
        its sealed seed, to save with it)."""
        return self._new_shoe(
            "rng" if test_order is None else "test",
            table_id=table_id,
            shoe_number=shoe_number,
            decks=decks,
            production=production,
            order=test_order,
        )

    # --------------------------------------------------------------- transactions
    def _command(self, round_id: str | UUID, command: C.Command) -> Json:
        """Decide ``command`` on the round (see :meth:`_run`)."""
        return self._run(round_id, lambda rnd, book, shoe: rnd.execute(command))

    def _run(self, round_id: str | UUID, fn: Callable[[Round, WalletBook, ShoeOf], object]) -> Json:
        """Run ``fn`` on fresh state, then everything the rules make due without new input,
        settle the money, and save round, shoe, table and wallets atomically. The round's shoe
        is read (from the same caught-up cache) only when something asks for it: ``fn`` (a live
        card), a card owed, a finished round's shoe to retire (D3)."""

        def run() -> Json:
            rnd = self.round(round_id)
            book = WalletBook(self.player_wallet)
            shoe = ShoeOf(self.shoe, rnd.shoe_id)
            fn(rnd, book, shoe)
            closing = next(
                (e for e in rnd.pending_events if isinstance(e, Round.BettingClosed)), None
            )
            while True:
                if rnd.card_needed is not None:
                    self._draw_owed(rnd, shoe())
                due = rnd.preselection_due()
                if due is None:
                    break
                player, hand, action = due
                book.apply(str(rnd.id), rnd.pending_events)  # balances after this command's
                rnd.execute(
                    C.Decide(
                        player=player,
                        action=action,
                        hand=hand,
                        balance=book.balance(player),
                        balance_of=book.balance,
                        actor=PRE_1,
                    )
                )
            if rnd.finished and rnd.rules.reshuffle_every_round and not shoe().retired:
                shoe().retire(seed=self._sealed_seed(shoe()))  # D3: one shoe per round; reveal it
            table = None
            if closing is not None and rnd.seats:
                table = self.table(rnd.table_id)
                table.bets_closed(  # the table records the close command's ids beside the round
                    round_number=rnd.round_number,
                    seats_with_bets=rnd.seats_with_bets(),
                    request_id=closing.request_id,
                    client_time=closing.client_time,
                )
            book.apply(str(rnd.id), rnd.pending_events)
            self.save(rnd, shoe.touched(), table, *book.changed())
            if rnd.finished:  # committed: the shoe's rounds in play need not read it again
                self._finished_on(rnd.id, uuid_of(rnd.shoe_id, ShoeNotFound))
            return rnd.view()

        return self._retry(run)

    def _draw_owed(self, rnd: Round, shoe: Shoe) -> None:
        """Draw the cards an RNG or test shoe owes the round (live shoes wait for the reader)."""
        if shoe.kind not in ("rng", "test"):
            return
        seed = self._sealed_seed(shoe)
        while rnd.card_needed is not None:
            card = shoe.draw(seed=seed, round_id=str(rnd.id))
            rnd.deal(card, shoe_position=shoe.position - 1, actor=SYSTEM)

    # ------------------------------------------------------------------- commands
    @dispatch
    def preselect(
        self,
        round_id: str,
        *,
        player: str,
        action: str,
        hand: str | None = None,
        request_id: str | None = None,
        client_time: str | None = None,
        actor: Mapping[str, str] | None = None,
    ) -> Json:
        """PRE-1 (deluxe): choose or change a decision before the hand's turn."""
        command = C.Preselect(
            player=player,
            action=action,
            hand=hand,
            actor=copied(actor),
            request_id=request_id,
            client_time=client_time,
        )
        return self._command(round_id, command)

    @dispatch
    def place_bet(
        self,
        round_id: str,
        *,
        player: str,
        kind: str = "main",
        amount: object,
        spot: str | int | None = None,
        follow_double: bool = False,
        follow_split: bool = False,
        request_id: str | None = None,
        client_time: str | None = None,
        actor: Mapping[str, str] | None = None,
    ) -> Json:
        """A bet; a test table refuses a real account's (``check_money_kind``)."""

        def fn(rnd: Round, book: WalletBook, _: ShoeOf) -> object:
            wallet = book.get(player)
            check_money_kind(wallet.account_type, production=rnd.production, player=player)
            return rnd.execute(
                C.PlaceBet(
                    player=player,
                    kind=kind,
                    amount=amount,
                    balance=wallet.balance,
                    spot=None if spot is None else str(spot),
                    follow_double=follow_double,
                    follow_split=follow_split,
                    actor=copied(actor),
                    request_id=request_id,
                    client_time=client_time,
                )
            )

        return self._run(round_id, fn)

    @dispatch
    def place_behind(
        self,
        round_id: str,
        *,
        player: str,
        seat: str | int,
        amount: object,
        follow_double: bool = False,
        follow_split: bool = False,
        request_id: str | None = None,
        client_time: str | None = None,
        actor: Mapping[str, str] | None = None,
    ) -> Json:
        """DLX-5: a bet behind a seated player (deluxe), with its DLX-7/DLX-8 choices."""
        return self.place_bet(
            round_id,
            player=player,
            kind="behind",
            amount=amount,
            spot=seat,
            follow_double=follow_double,
            follow_split=follow_split,
            request_id=request_id,
            client_time=client_time,
            actor=actor,
        )

    @dispatch
    def close_betting(
        self,
        round_id: str,
        *,
        request_id: str | None = None,
        client_time: str | None = None,
        actor: Mapping[str, str] | None = None,
    ) -> Json:
        return self._command(
            round_id,
            C.CloseBetting(actor=copied(actor), request_id=request_id, client_time=client_time),
        )

    @dispatch
    def deal_card(
        self,
        round_id: str,
        card: str,
        *,
        request_id: str | None = None,
        client_time: str | None = None,
        actor: Mapping[str, str] | None = None,
    ) -> Json:
        """A live card from the studio's reader: checked by the shoe's card accounting
        (SHOE-3), then routed by the round. Refused whole when either refuses."""

        def fn(rnd: Round, _: WalletBook, shoe_of: ShoeOf) -> object:
            if rnd.card_needed is None:
                raise WrongOrder(
                    f"round needs no card now (phase {rnd.phase}); {card} not recorded"
                )
            shoe = shoe_of()
            if shoe.kind != "live":
                raise WrongOrder(f"this round is dealt from a {shoe.kind} shoe; cards come from it")
            taken: Card = shoe.draw(
                card=card,
                round_id=str(rnd.id),
                actor=copied(actor) or SYSTEM,
                request_id=request_id,
                client_time=client_time,
            )
            return rnd.execute(
                C.Deal(
                    card=taken,
                    shoe_position=shoe.position - 1,
                    actor=copied(actor),
                    request_id=request_id,
                    client_time=client_time,
                )
            )

        return self._run(round_id, fn)

    @dispatch
    def decide(
        self,
        round_id: str,
        *,
        player: str,
        action: str,
        hand: str | None = None,
        amount: object = None,
        request_id: str | None = None,
        client_time: str | None = None,
        actor: Mapping[str, str] | None = None,
    ) -> Json:
        def fn(rnd: Round, book: WalletBook, _: ShoeOf) -> object:
            return rnd.execute(
                C.Decide(
                    player=player,
                    action=action,
                    hand=hand,
                    amount=amount,
                    balance=book.balance(player),
                    balance_of=book.balance,
                    actor=copied(actor),
                    request_id=request_id,
                    client_time=client_time,
                )
            )

        return self._run(round_id, fn)

    @dispatch
    def time_out(
        self,
        round_id: str,
        *,
        player: str,
        hand: str | None = None,
        request_id: str | None = None,
        client_time: str | None = None,
        actor: Mapping[str, str] | None = None,
    ) -> Json:
        return self._command(
            round_id,
            C.TimeOut(
                player=player,
                hand=hand,
                actor=copied(actor),
                request_id=request_id,
                client_time=client_time,
            ),
        )

    @dispatch
    def disconnect(
        self,
        round_id: str,
        *,
        player: str,
        request_id: str | None = None,
        client_time: str | None = None,
        actor: Mapping[str, str] | None = None,
    ) -> Json:
        return self._command(
            round_id,
            C.Disconnect(
                player=player, actor=copied(actor), request_id=request_id, client_time=client_time
            ),
        )

    @dispatch
    def close_insurance_window(
        self,
        round_id: str,
        *,
        request_id: str | None = None,
        client_time: str | None = None,
        actor: Mapping[str, str] | None = None,
    ) -> Json:
        return self._command(
            round_id,
            C.CloseWindow(actor=copied(actor), request_id=request_id, client_time=client_time),
        )

    @dispatch
    def pause(
        self,
        round_id: str,
        *,
        reason: str,
        supervisor: str,
        request_id: str | None = None,
        client_time: str | None = None,
        actor: Mapping[str, str] | None = None,
    ) -> Json:
        return self._supervise(
            round_id, "pause", reason, supervisor_of(supervisor, actor), request_id, client_time
        )

    @dispatch
    def resume(
        self,
        round_id: str,
        *,
        reason: str,
        supervisor: str,
        request_id: str | None = None,
        client_time: str | None = None,
        actor: Mapping[str, str] | None = None,
    ) -> Json:
        return self._supervise(
            round_id, "resume", reason, supervisor_of(supervisor, actor), request_id, client_time
        )

    @dispatch
    def cancel(
        self,
        round_id: str,
        *,
        reason: str,
        supervisor: str,
        request_id: str | None = None,
        client_time: str | None = None,
        actor: Mapping[str, str] | None = None,
    ) -> Json:
        return self._supervise(
            round_id, "cancel", reason, supervisor_of(supervisor, actor), request_id, client_time
        )

    def _supervise(
        self,
        round_id: str,
        what: str,
        reason: str,
        who: Json,
        request_id: str | None,
        client_time: str | None,
    ) -> Json:
        return self._command(
            round_id,
            C.supervisor_action(what, reason, who, request_id=request_id, client_time=client_time),
        )

    # -------------------------------------------------------------------- queries
    @dispatch
    def round_view(self, round_id: str) -> Json:
        return self.round(round_id).view()

    @dispatch
    def round_log(self, round_id: str | UUID) -> list[Any]:
        """The round's stored events (domain objects), in order."""
        rid = uuid_of(round_id, RoundNotFound)
        events = list(self.events.get(rid))
        if not events or not isinstance(events[0], Round.Started):
            raise RoundNotFound(f"round {round_id} not found")
        return events

    def round_events(self, round_id: str | UUID) -> list[Json]:
        """The round's stored events as plain JSON, in order (as recorded: the read model for
        API keys hides what the table has not shown, see ``domain.guarded``)."""
        return [event_json(e) for e in self.round_log(round_id)]


__all__ = ["Rounds"]
