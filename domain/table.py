"""The Table aggregate: the record of a table an admin opened, and a deluxe table's seats.

Every table is opened by an admin with its variant and whether it is a **production** table
(real money, production shoes) or a test table (play money; stacked test shoes allowed). A
round or shoe started over HTTP takes that from here, never from the request
(``domain.guarded``).

A deluxe table also owns who sits where between rounds (seven seats that last across rounds and
shoes, DLX-1..4); each round is started with the seat map of the moment
(``Round.Started.seats``) and reports back which seats carried a seat bet. Tables of the other
variants have no seats.

Invariants:

* Seats are 1-7; a seat holds at most one player; a player holds at most two seats (DLX-1).
* Test and play-for-fun accounts never sit at a production table (DLX-1); a test table (not
  production) takes test and play-for-fun accounts only, seats included: DLX-1 is a rule of
  the production game, and a test table exists to play it with test accounts
  (``domain.wallet.check_money_kind``).
* A seated player with no valid seat bet when the countdown ends: a player who sat down for
  this round loses the seat(s) at once (DLX-3, "a player must bet per seat to occupy seats");
  a player who was already seated keeps the seat(s) for this one round and is removed at the
  start of the next (DLX-4's grace). Bets behind and Pair bets on a seat without a seat bet are
  refunded by the round either way (DLX-3). This reading of the two rows is recorded in
  docs/deluxe.md.
* At the start of a round, a seated player whose balance is below the minimum seat bet is
  removed (DLX-4).
* Every removal is a consequence event naming its rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.errors import IllegalAction, InvalidRequest, WrongOrder
from domain.events import SYSTEM, Consequence, Derived, Input
from domain.ids import stable_id
from domain.money import money_str
from domain.recorder import trigger
from domain.rules import get_rules
from domain.wallet import check_money_kind

SEATS = range(1, 8)
MAX_SEATS_PER_PLAYER = 2  # DLX-1


class Table(Aggregate):
    """A deluxe table's seats across rounds (see the module docstring)."""

    class Opened(Aggregate.Created, Input):
        table_id: str
        rules_key: str
        production: bool
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class SeatTaken(Aggregate.Event, Input):
        seat: int
        player: str
        account_type: str
        balance_seen: str
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class SeatLeft(Aggregate.Event, Input):
        seat: int
        player: str
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class RoundBegun(Aggregate.Event, Input):
        round_number: int
        balances_seen: dict[str, str]
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class SeatRemoved(Derived, Aggregate.Event, Consequence):
        seat: int
        player: str
        reason: str
        rule: str

    class SeatKeptForOneRound(Derived, Aggregate.Event, Consequence):
        seat: int
        player: str
        round_number: int
        rule: str

    class RoundBetsClosed(Aggregate.Event, Input):
        round_number: int
        seats_with_bets: list[int]
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    @staticmethod
    def create_id(table_id: str, **_: Any) -> UUID:
        return stable_id("table", table_id)

    @event(Opened)
    def __init__(
        self,
        table_id: str,
        rules_key: str,
        production: bool,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self.table_id = table_id
        self.rules_key = rules_key
        self.production = production
        self.seats: dict[int, str] = {}
        self.joined_round: dict[int, int | None] = {}  # seat -> first round it was part of
        self.idle_since: dict[int, int] = {}  # seat -> round in which it carried no seat bet
        self.current_round = 0

    @classmethod
    def open(
        cls,
        *,
        table_id: str,
        variant: str = "deluxe",
        production: bool = True,
        actor: dict[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> Table:
        rules = get_rules(variant)
        if not isinstance(production, bool):
            raise InvalidRequest("production must be a boolean")
        return cls(
            table_id=table_id,
            rules_key=rules.key,
            production=production,
            actor=actor,
            request_id=request_id,
            client_time=client_time,
        )

    # -------------------------------------------------------------------- queries
    @property
    def variant(self) -> str:
        return get_rules(self.rules_key).variant

    @property
    def seated(self) -> bool:
        """Whether the table has seats that last across rounds (deluxe, DLX-1)."""
        return get_rules(self.rules_key).bet_behind

    def seats_of(self, player: str) -> list[int]:
        return sorted(s for s, p in self.seats.items() if p == player)

    def seat_map(self) -> dict[str, str]:
        return {str(s): p for s, p in sorted(self.seats.items())}

    def view(self) -> dict[str, Any]:
        return {
            "table_id": self.table_id,
            "rules_key": self.rules_key,
            "variant": self.variant,
            "production": self.production,
            "seats": self.seat_map(),
            "current_round": self.current_round,
            "idle": {str(s): r for s, r in self.idle_since.items()},
        }

    # ------------------------------------------------------------------- commands
    def sit(
        self,
        *,
        player: str,
        seat: int,
        account_type: str,
        balance: Decimal,
        actor: dict[str, str] | None = None,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        """DLX-1: take a free seat; at most two per player; real accounts only (a test
        table: play-money accounts only)."""
        if not self.seated:
            raise IllegalAction(f"a {self.variant} table has boxes, not seats", rule="DLX-1")
        if seat not in SEATS:
            raise IllegalAction(f"deluxe has seats 1-7, not {seat}", rule="DLX-1")
        if self.production and account_type != "real":
            raise IllegalAction(
                f"{account_type} accounts may not sit (DLX-1): {player} may bet behind instead",
                rule="DLX-1",
            )
        check_money_kind(account_type, production=self.production, player=player)
        owner = self.seats.get(seat)
        if owner is not None:
            raise IllegalAction(f"seat {seat} is taken by {owner}", rule="DLX-1")
        if len(self.seats_of(player)) >= MAX_SEATS_PER_PLAYER:
            raise IllegalAction(
                f"{player} already occupies seats {self.seats_of(player)}: two at most",
                rule="DLX-1",
            )
        minimum = get_rules(self.rules_key).min_bet
        if balance < minimum:
            raise IllegalAction(
                f"{player}'s balance {money_str(balance)} is below the minimum seat bet "
                f"{money_str(minimum)}",
                rule="DLX-4",
            )
        trigger(
            self,
            "_seat_taken",
            seat=seat,
            player=player,
            account_type=account_type,
            balance_seen=money_str(balance),
            actor=actor or {"kind": "player", "id": player},
            request_id=request_id,
            client_time=client_time,
        )

    @event(SeatTaken)
    def _seat_taken(
        self,
        seat: int,
        player: str,
        account_type: str,
        balance_seen: str,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self.seats[seat] = player
        self.joined_round[seat] = None  # part of the next round that begins

    def leave(
        self,
        *,
        player: str,
        seat: int,
        actor: dict[str, str] | None = None,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        if self.seats.get(seat) != player:
            raise IllegalAction(f"{player} does not occupy seat {seat}")
        trigger(
            self,
            "_seat_left",
            seat=seat,
            player=player,
            actor=actor or {"kind": "player", "id": player},
            request_id=request_id,
            client_time=client_time,
        )

    @event(SeatLeft)
    def _seat_left(
        self,
        seat: int,
        player: str,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self._vacate(seat)

    def begin_round(
        self,
        *,
        round_number: int,
        balances: Mapping[str, Decimal],
        actor: dict[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> dict[str, str]:
        """Start round ``round_number``: apply DLX-4's removals, return the seat map."""
        if round_number <= self.current_round:
            raise WrongOrder(
                f"round {round_number} is not after the table's round {self.current_round}"
            )
        trigger(
            self,
            "_round_begun",
            round_number=round_number,
            balances_seen={p: money_str(b) for p, b in sorted(balances.items())},
            actor=actor,
            request_id=request_id,
            client_time=client_time,
        )
        minimum = get_rules(self.rules_key).min_bet
        for seat, player in sorted(self.seats.items()):
            idle = self.idle_since.get(seat)
            if idle is not None and idle < round_number:
                trigger(
                    self,
                    "_seat_removed",
                    seat=seat,
                    player=player,
                    reason=f"no seat bet in round {idle}",
                    rule="DLX-4",
                    actor=dict(SYSTEM),
                )
            elif balances.get(player, Decimal(0)) < minimum:
                trigger(
                    self,
                    "_seat_removed",
                    seat=seat,
                    player=player,
                    reason=f"balance below the minimum seat bet {money_str(minimum)}",
                    rule="DLX-4",
                    actor=dict(SYSTEM),
                )
        return self.seat_map()

    @event(RoundBegun)
    def _round_begun(
        self,
        round_number: int,
        balances_seen: dict[str, str],
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self.current_round = round_number
        for seat in self.seats:
            if self.joined_round.get(seat) is None:
                self.joined_round[seat] = round_number

    def bets_closed(
        self,
        *,
        round_number: int,
        seats_with_bets: list[int],
        actor: dict[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        """The countdown of the table's round ended: DLX-3 removals, DLX-4 grace. The ids are
        the round's close command's (``Round.BettingClosed``), recorded on the table too."""
        if round_number != self.current_round:
            raise WrongOrder(f"the table is in round {self.current_round}, not {round_number}")
        trigger(
            self,
            "_round_bets_closed",
            round_number=round_number,
            seats_with_bets=sorted(seats_with_bets),
            actor=actor,
            request_id=request_id,
            client_time=client_time,
        )
        for seat, player in sorted(self.seats.items()):
            joined = self.joined_round.get(seat)
            if seat in seats_with_bets or joined is None:
                continue  # it carried a bet, or its player sat down after the round began
            if joined == round_number:
                trigger(
                    self,
                    "_seat_removed",
                    seat=seat,
                    player=player,
                    reason="no valid seat bet",
                    rule="DLX-3",
                    actor=dict(SYSTEM),
                )
            elif seat not in self.idle_since:
                trigger(
                    self,
                    "_seat_kept_for_one_round",
                    seat=seat,
                    player=player,
                    round_number=round_number,
                    rule="DLX-4",
                    actor=dict(SYSTEM),
                )

    @event(RoundBetsClosed)
    def _round_bets_closed(
        self,
        round_number: int,
        seats_with_bets: list[int],
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        for seat in seats_with_bets:
            self.idle_since.pop(seat, None)

    @event(SeatKeptForOneRound)
    def _seat_kept_for_one_round(
        self, seat: int, player: str, round_number: int, rule: str, actor: dict[str, str]
    ) -> None:
        self.idle_since[seat] = round_number

    @event(SeatRemoved)
    def _seat_removed(
        self, seat: int, player: str, reason: str, rule: str, actor: dict[str, str]
    ) -> None:
        self._vacate(seat)

    def _vacate(self, seat: int) -> None:
        self.seats.pop(seat, None)
        self.joined_round.pop(seat, None)
        self.idle_since.pop(seat, None)
