"""The application as one principal may use it: :class:`GuardedAudit`.

The web layer authenticates the API key (``domain.keys.KeyRing.authenticate``) and hands the
application a :class:`~domain.access.Principal`; every route then works through a
``GuardedAudit(app, principal)``, whose methods are the routes' commands and queries. Each one:

1. **checks the permission** of the action it performs against the permission table
   (``domain.access.PERMISSIONS``), on the resource it concerns: the round's, shoe's or
   table's table for a table-bound key, the player for a player key. For a bound key, a
   resource that does not exist is refused exactly like one outside its binding (403
   ``forbidden``), so a key learns nothing about the tables and players it is not bound to;
   an unbound key gets the usual 404;
2. **records the actor from the key**: every command passes ``principal.actor(...)`` (the
   player the table feed relays, the dealer, the system or the supervisor, with the key's id
   and role) to the :class:`~domain.application.RoundAudit` command; a player key acts only as
   its own player;
3. **takes production from the table record** an admin opened (``open_table``): a round or a
   shoe is production or not as its table is, never as a request says;
4. **reads through the disclosure policy** (``domain.disclosure``): round events and shoe views
   hide what the table has not shown (a face-down hole card, a test shoe's order); views hide
   the hole card themselves. Replays, exports and verification details are redacted by
   ``replays.disclosure`` with :meth:`GuardedAudit.round_secrets`.

A refusal raises before anything is recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar
from uuid import UUID

from domain.access import Action, Principal, Scope, authorize, forbidden, narrow_search
from domain.application import RoundAudit, event_json
from domain.boundless.service import Bet, Decision
from domain.disclosure import Secrets
from domain.errors import DomainError, NotFound, PlayerNotInRound
from domain.events import SYSTEM
from domain.keys import IssuedKey
from domain.rules import get_rules
from domain.shoe import Shoe
from domain.wallet import Wallet

Json = dict[str, Any]
T = TypeVar("T")


@dataclass(frozen=True)
class RoundFacts:
    """What the permission check needs to know about a round."""

    round_id: UUID
    table_id: str
    rules_key: str
    boundless: bool
    finished: bool
    players: frozenset[str] = field(default_factory=frozenset)


class GuardedAudit:
    """``RoundAudit`` for one principal (see the module docstring)."""

    def __init__(self, app: RoundAudit, principal: Principal) -> None:
        self.app = app
        self.principal = principal

    # ------------------------------------------------------------------ checks
    def require(self, action: Action) -> None:
        """The role may do ``action`` somewhere (the web layer calls it before reading the
        request's body; the methods below check again on the resource)."""
        if not self.principal.may(action):
            raise forbidden(action)

    @contextmanager
    def _hidden(self, action: Action) -> Iterator[None]:
        """For a key whose permission is bound (own tables, self), a missing resource is a
        403 like any other: nothing tells it exists or not."""
        try:
            yield
        except NotFound:
            if self.principal.scope(action) in (Scope.OWN_TABLES, Scope.SELF):
                raise forbidden(action) from None
            raise

    def _actor(self, kind: str, ident: str) -> dict[str, str]:
        return self.principal.actor(kind, ident)

    @property
    def _system(self) -> dict[str, str]:
        return self._actor(SYSTEM["kind"], SYSTEM["id"])

    def round_facts(self, round_id: str | UUID) -> RoundFacts:
        """The round's table, rules, players and whether it is finished (RoundNotFound)."""
        app = self.app
        if app.boundless.owns(round_id):
            shared = app.boundless.shared(round_id)
            player = self.principal.player
            players: frozenset[str] = frozenset()
            if player is not None:
                try:
                    app.boundless.participation(round_id, player)
                    players = frozenset({player})
                except DomainError:
                    players = frozenset()
            return RoundFacts(
                shared.id, shared.table_id, shared.rules_key, True, shared.finished, players
            )
        rnd = app.round(round_id)
        everyone = {*rnd.players, *(w.player for w in rnd.wagers.values()), *rnd.seats.values()}
        return RoundFacts(
            rnd.id, rnd.table_id, rnd.rules_key, False, rnd.finished, frozenset(everyone)
        )

    def authorize_round(
        self, action: Action, round_id: str | UUID, *, player: str | None = None
    ) -> RoundFacts:
        """Check ``action`` on round ``round_id`` (as ``player``, when the command acts for
        one); returns what it learned of the round."""
        self.require(action)
        with self._hidden(action):
            facts = self.round_facts(round_id)
        return self.authorize_facts(action, facts, player=player)

    def authorize_facts(
        self, action: Action, facts: RoundFacts, *, player: str | None = None
    ) -> RoundFacts:
        """Check ``action`` on a round whose facts are known (``api.roundviews`` keeps them
        with the round's version)."""
        self.require(action)
        # a command for a player is checked as that player (a player key acts only as itself;
        # its first bet may be what makes it one of the round's players); a read, as the
        # round's players
        players = facts.players if player is None else frozenset({player})
        authorize(
            self.principal, action, table=facts.table_id, players=players, settled=facts.finished
        )
        return facts

    def authorize_audit(self, action: Action, round_id: UUID) -> None:
        """Check an audit read (replay, verification, export, proof) of a round the store
        holds records of. A key whose permission reaches every round needs nothing loaded (so
        a damaged round is still examined); one limited to settled rounds is refused unless
        the round reads as finished."""
        self.require(action)
        scope = self.principal.scope(action)
        if scope is Scope.ALL:
            return
        try:
            facts: RoundFacts | None = self.round_facts(round_id)
        except Exception:  # a round that no longer loads is not known to be settled
            facts = None
        authorize(
            self.principal,
            action,
            table=facts.table_id if facts else None,
            players=facts.players if facts else (),
            settled=bool(facts and facts.finished),
        )

    def _authorize_table(self, action: Action, table_id: str) -> None:
        self.require(action)
        authorize(self.principal, action, table=table_id)

    def _shoe(self, action: Action, shoe_id: str) -> Shoe:
        self.require(action)
        with self._hidden(action):
            shoe = self.app.shoe(shoe_id)
        authorize(self.principal, action, table=shoe.table_id)
        return shoe

    def round_secrets(self, round_id: str | UUID) -> Secrets:
        """What the round (and its shoe) hides now: for redacting replays and exports."""
        return self.app.round_secrets(round_id)

    # ------------------------------------------------------------------ keys
    def create_key(
        self,
        *,
        role: str,
        tables: Sequence[str] = (),
        player: str | None = None,
        label: str = "",
        token: str | None = None,
        **ids: str | None,
    ) -> IssuedKey:
        """Issue a key (``token``: the token to issue, made by the caller beforehand so that
        its answer can be recorded with it; default a fresh one; ``ids``: the request id and
        client time it was sent with)."""
        self.require(Action.KEYS_MANAGE)
        return self.app.keys.create(
            role=role,
            tables=tables,
            player=player,
            label=label,
            actor=self._system,
            token=token,
            **ids,
        )

    def list_keys(self) -> list[Json]:
        self.require(Action.KEYS_MANAGE)
        return [k.view() for k in self.app.keys.all()]

    def revoke_key(self, key_id: str, *, reason: str | None = None, **ids: str | None) -> Json:
        self.require(Action.KEYS_MANAGE)
        return self.app.keys.revoke(key_id, actor=self._system, reason=reason, **ids)

    # ------------------------------------------------------------------ tables
    def open_table(self, table_id: str, *, variant: str, production: bool) -> Json:
        self._authorize_table(Action.TABLE_OPEN, table_id)
        return self.app.open_table(
            table_id, variant=variant, production=production, actor=self._system
        )

    def table_view(self, table_id: str) -> Json:
        self._authorize_table(Action.TABLE_READ, table_id)
        return self.app.table(table_id).view()

    def sit(self, table_id: str, *, player: str, seat: int, request_id: str | None) -> Json:
        self._authorize_table(Action.TABLE_SEAT, table_id)
        return self.app.sit(
            table_id,
            player=player,
            seat=seat,
            request_id=request_id,
            actor=self._actor("player", player),
        )

    def leave(self, table_id: str, *, player: str, seat: int) -> Json:
        self._authorize_table(Action.TABLE_SEAT, table_id)
        return self.app.leave(
            table_id, player=player, seat=seat, actor=self._actor("player", player)
        )

    # ------------------------------------------------------------------ shoes
    def open_shoe(
        self,
        *,
        table_id: str,
        shoe_number: int,
        kind: str,
        decks: int,
        order: list[str] | None,
        burn_procedure: bool,
        cut_card_at: int | None,
    ) -> Json:
        """A shoe for a recorded table, production as the table is."""
        self._authorize_table(Action.SHOE_OPEN, table_id)
        table = self.app.table(table_id)
        shoe_id = self.app.open_shoe(
            table_id=table_id,
            shoe_number=shoe_number,
            kind=kind,
            decks=decks,
            production=table.production,
            order=order,
            burn_procedure=burn_procedure,
            cut_card_at=cut_card_at,
            actor=self._system,
        )
        return self._shoe_view(self.app.shoe(shoe_id))

    def burn(
        self, shoe_id: str, *, card: str | None, cards: list[str] | None, **ids: str | None
    ) -> Json:
        """``ids``: the ``request_id`` and ``client_time`` the command was sent with."""
        shoe = self._shoe(Action.SHOE_OPERATE, shoe_id)
        result = self.app.burn(
            shoe_id, card=card, cards=cards, actor=self._actor("dealer", shoe.table_id), **ids
        )
        return {**result, "shoe": self._shoe_view(self.app.shoe(shoe_id))}

    def cut_card(self, shoe_id: str, *, round_id: str | None, **ids: str | None) -> Json:
        shoe = self._shoe(Action.SHOE_OPERATE, shoe_id)
        self.app.cut_card_out(
            shoe_id, round_id=round_id, actor=self._actor("dealer", shoe.table_id), **ids
        )
        return self._shoe_view(self.app.shoe(shoe_id))

    def retire_shoe(self, shoe_id: str, **ids: str | None) -> Json:
        self._shoe(Action.SHOE_RETIRE, shoe_id)
        self.app.retire_shoe(shoe_id, actor=self._system, **ids)
        return self._shoe_view(self.app.shoe(shoe_id))

    def shoe_view(self, shoe_id: str) -> Json:
        return self._shoe_view(self._shoe(Action.SHOE_READ, shoe_id))

    def shoe_answer(self, shoe: Shoe) -> Json:
        """A command's answer about ``shoe`` (its view, what it hides hidden)."""
        return self._shoe_view(shoe)

    def _shoe_view(self, shoe: Shoe) -> Json:
        """The shoe's view, the face-down cards of rounds in play hidden."""
        view = self.app.shoe_view(shoe)
        view["drawn"] = self.app.shoe_secrets(shoe).redact_drawn(shoe.id, view["drawn"])
        return view

    # ------------------------------------------------------------------ rounds
    def start_round(
        self,
        *,
        table_id: str,
        round_number: int,
        variant: str,
        shoe_id: str | None,
        shoe_round: int,
        test_order: list[str] | None,
    ) -> Json:
        """Start a round on a recorded table, production as the table is (a test order is
        refused on a production table: ``test-shoe-refused``)."""
        self._authorize_table(Action.ROUND_START, table_id)
        get_rules(variant)  # an unknown variant is the request's fault, whatever the table
        table = self.app.table(table_id)
        round_id = self.app.start_round(
            table_id=table_id,
            round_number=round_number,
            variant=variant,
            shoe_id=shoe_id,
            shoe_round=shoe_round,
            production=table.production,
            test_order=test_order,
            actor=self._system,
        )
        return self.app.round_view(round_id)

    def _as_player(self, action: Action, round_id: str, player: str) -> RoundFacts:
        return self.authorize_round(action, round_id, player=player)

    def place_bet(self, round_id: str, *, player: str, **bet: Any) -> Json:
        self._as_player(Action.ROUND_BET, round_id, player)
        return self.app.place_bet(
            round_id, player=player, actor=self._actor("player", player), **bet
        )

    def decide(self, round_id: str, *, player: str, **decision: Any) -> Json:
        self._as_player(Action.ROUND_DECIDE, round_id, player)
        return self.app.decide(
            round_id, player=player, actor=self._actor("player", player), **decision
        )

    def preselect(self, round_id: str, *, player: str, **choice: Any) -> Json:
        self._as_player(Action.ROUND_DECIDE, round_id, player)
        return self.app.preselect(
            round_id, player=player, actor=self._actor("player", player), **choice
        )

    def close_betting(
        self, round_id: str, *, request_id: str | None, client_time: str | None = None
    ) -> Json:
        self.authorize_round(Action.ROUND_DEAL, round_id)
        return self.app.close_betting(
            round_id, request_id=request_id, client_time=client_time, actor=self._system
        )

    def deal_card(
        self, round_id: str, card: str, *, request_id: str | None, client_time: str | None
    ) -> Json:
        facts = self.authorize_round(Action.ROUND_DEAL, round_id)
        return self.app.deal_card(
            round_id,
            card,
            request_id=request_id,
            client_time=client_time,
            actor=self._actor("dealer", facts.table_id),
        )

    def time_out(self, round_id: str, *, player: str, hand: str | None, **ids: str | None) -> Json:
        """``ids``: the ``request_id`` and ``client_time`` the timer's source sent."""
        self.authorize_round(Action.ROUND_TIMER, round_id)
        return self.app.time_out(round_id, player=player, hand=hand, actor=self._system, **ids)

    def disconnect(self, round_id: str, *, player: str, **ids: str | None) -> Json:
        self.authorize_round(Action.ROUND_TIMER, round_id)
        return self.app.disconnect(round_id, player=player, actor=self._system, **ids)

    def close_insurance_window(self, round_id: str, **ids: str | None) -> Json:
        self.authorize_round(Action.ROUND_TIMER, round_id)
        return self.app.close_insurance_window(round_id, actor=self._system, **ids)

    def _supervise(
        self,
        command: Callable[..., Json],
        round_id: str,
        reason: str,
        supervisor: str | None,
        ids: dict[str, str | None],
    ) -> Json:
        self.authorize_round(Action.ROUND_SUPERVISE, round_id)
        who = supervisor or self.principal.label or self.principal.key_id
        return command(
            round_id, reason=reason, supervisor=who, actor=self._actor("supervisor", who), **ids
        )

    def pause(
        self, round_id: str, *, reason: str, supervisor: str | None, **ids: str | None
    ) -> Json:
        return self._supervise(self.app.pause, round_id, reason, supervisor, ids)

    def resume(
        self, round_id: str, *, reason: str, supervisor: str | None, **ids: str | None
    ) -> Json:
        return self._supervise(self.app.resume, round_id, reason, supervisor, ids)

    def cancel(
        self, round_id: str, *, reason: str, supervisor: str | None, **ids: str | None
    ) -> Json:
        return self._supervise(self.app.cancel, round_id, reason, supervisor, ids)

    def round_view(self, round_id: str) -> Json:
        self.authorize_round(Action.ROUND_READ, round_id)
        return self.app.round_view(round_id)

    def round_events(self, round_id: str) -> list[Json]:
        """The round's events, what the table has not shown hidden (``domain.disclosure``)."""
        facts = self.authorize_round(Action.ROUND_EVENTS, round_id)
        log = self.app.round_log(facts.round_id)
        secrets = self.app.round_secrets(facts.round_id)
        return [secrets.redact_round_event(e.originator_id, event_json(e)) for e in log]

    # ------------------------------------------------------------------ boundless batches
    def batch_round(self, round_id: str) -> RoundFacts:
        """Check a batch on round ``round_id`` (its table's feed, or an admin)."""
        return self.authorize_round(Action.ROUND_BATCH, round_id)

    def batch_view(self, round_id: str, players: Iterable[str]) -> Json:
        """The round with only ``players``' hands and wagers: a batch's answer."""
        self.batch_round(round_id)
        return self.app.boundless.players_view(round_id, players)

    def place_bets(self, round_id: str, bets: Sequence[Bet]) -> list[DomainError | None]:
        self.batch_round(round_id)
        stamped = [replace(b, actor=self._actor("player", b.player)) for b in bets]
        return self.app.boundless.place_bets(round_id, stamped)

    def decide_many(
        self, round_id: str, decisions: Sequence[Decision], *, advance: bool = True
    ) -> list[DomainError | None]:
        self.batch_round(round_id)
        stamped = [
            replace(
                d,
                actor=self._system
                if d.action in ("timeout", "disconnect")
                else self._actor("player", d.player),
            )
            for d in decisions
        ]
        return self.app.boundless.decide_many(round_id, stamped, advance=advance)

    def advance(self, round_id: str) -> None:
        self.batch_round(round_id)
        self.app.boundless.advance(round_id)

    def catch_up(self, round_id: str) -> None:
        """Finish what a boundless round's last command left undone (its automatic work: a
        process that stopped mid-way); nothing for a seated round, whose commands are one
        transaction each."""
        if self.app.boundless.owns(round_id):
            self.app.boundless.advance(round_id)

    def seen_request(self, round_id: str, player: str, request_id: str) -> bool:
        """Whether ``player``'s part of boundless round ``round_id`` recorded ``request_id``."""
        try:
            return self.app.boundless.participation(round_id, player).has_seen(request_id)
        except DomainError:
            return False

    def check_batch_open(self, round_id: str) -> None:
        """RoundClosed when the boundless round is paused, being cancelled or finished."""
        self.app.boundless.shared(round_id).check_open()

    # ------------------------------------------------------------------ wallets
    def open_wallet(self, player_id: str, *, account_type: str, currency: str) -> Wallet:
        self.require(Action.WALLET_OPEN)
        authorize(self.principal, Action.WALLET_OPEN, players=player_id)
        self.app.open_wallet(
            player_id, account_type=account_type, currency=currency, actor=self._system
        )
        return self.app.wallet(player_id)

    def deposit(self, player_id: str, amount: object, *, transaction_id: str) -> None:
        """A cashier deposit (the wallet after it: :meth:`moved_wallet`)."""
        self._may_move(player_id)
        self.app.deposit(player_id, amount, transaction_id=transaction_id, actor=self._system)

    def withdraw(self, player_id: str, amount: object, *, transaction_id: str) -> None:
        """A cashier withdrawal (the wallet after it: :meth:`moved_wallet`)."""
        self._may_move(player_id)
        self.app.withdraw(player_id, amount, transaction_id=transaction_id, actor=self._system)

    def moved_wallet(self, player_id: str) -> Wallet:
        """The wallet as it stands, for the key that may move money in it (the answer to a
        deposit or withdrawal; read apart so that a caller with the committed wallet at hand
        need not read it again)."""
        self._may_move(player_id)
        return self.app.wallet(player_id)

    def _may_move(self, player_id: str) -> None:
        self.require(Action.WALLET_MOVE)
        authorize(self.principal, Action.WALLET_MOVE, players=player_id)

    def wallet(self, player_id: str) -> Wallet:
        self.require(Action.WALLET_READ)
        authorize(self.principal, Action.WALLET_READ, players=player_id)
        return self.app.wallet(player_id)

    # ------------------------------------------------------------------ the read side
    def search_filters(
        self, action: Action, *, tables: Sequence[str] = (), player: str | None = None
    ) -> tuple[tuple[str, ...], str | None]:
        """The table and player filters a search may run with (``domain.access.narrow_search``:
        a bound key's search is held to its tables or its player)."""
        self.require(action)
        return narrow_search(self.principal, action, tables=tables, player=player)

    def authorize_player(self, action: Action, player_id: str) -> None:
        """A read about one player (its round history)."""
        self.require(action)
        authorize(self.principal, action, players=player_id)

    def player_in_round(self, action: Action, round_id: str | UUID, player: str) -> RoundFacts:
        """Check a read of ``player``'s part of round ``round_id`` (its dispute timeline, its
        replay). A player key reads only its own part of its own rounds; for a bound key a
        player the round does not have is refused like a round that does not exist (403), for
        the others it is :class:`~domain.errors.PlayerNotInRound` (404)."""
        self.require(action)
        if self.principal.scope(action) is Scope.SELF and player != self.principal.player:
            raise forbidden(action)
        facts = self.authorize_round(action, round_id)
        with self._hidden(action):
            if not self._plays(facts, player):
                raise PlayerNotInRound(f"player {player!r} has no bet in round {facts.round_id}")
        return facts

    def _plays(self, facts: RoundFacts, player: str) -> bool:
        if facts.players and player in facts.players:
            return True
        if not facts.boundless:
            return False
        try:
            self.app.boundless.participation(facts.round_id, player)
        except DomainError:
            return False
        return True

    # ------------------------------------------------------------------ anything else
    def allow(self, action: Action) -> None:
        """An action on no particular resource (the rules, the Merkle log)."""
        self.require(action)
        authorize(self.principal, action)


__all__ = ["GuardedAudit", "RoundFacts"]
