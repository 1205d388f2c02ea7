"""The bases of the aggregates that record what the game core decides.

A :class:`Recorder` holds its state as the core's immutable state object (``_state``) and
nothing else of its own. :meth:`Recorder.record` records a decision: each fact becomes the
nested event class of the same name (its topic and payload are the stored format), and the
state becomes the decision's state. Rebuilding the aggregate from its stored events folds them
through the same ``evolve`` the decision used (:meth:`Recorder.Event.apply`), so a command is
always decided on exactly the state its events record.

While a decision is recorded its events are not folded a second time: the decision has
evolved the state fact by fact already. Nor are they made by the library's ``trigger_event``
(keyword copies, the frozen dataclass's ``__init__``, ``mutate``'s checks: 5 % of a recorded
round's CPU outside the commit): each is made as the library makes one it reads from the store
(its fields set as its ``__dict__``), then the aggregate's version, modified time and pending
events are set as ``mutate`` sets them, for every event class whose fields its ``__init__``
sets from arguments of their own (:func:`_built_as_stored`; any other goes through
``trigger_event``). The stored bytes are the same (``tests/integration/test_record_paths.py``).
The aggregates that are no recorder (a shoe's draws and retirement, a table's events) trigger
their ``@event`` methods' events the same short way by :func:`trigger`, which this module owns
too (``tests/unit/test_trigger.py``). Both read internals of ``eventsourcing.domain``
(``decorated_func_callers``, ``decorated_funcs``, ``DecoratedFuncCaller``,
``CommandMethodDecorator``), checked on 9.5.6 only, so ``pyproject.toml`` pins the library to
9.5.x from 9.5.6 (``~=9.5.6``): a release that renamed them would fail at import, one that
changed what they mean the byte-equality tests.

Verification re-executes a round on fresh aggregates that are never saved, then compares what
they recorded with the stored events (``replays.boundless``). After :meth:`Recorder.keep_facts`
an aggregate records each fact as it is, without building the library's event (its id,
version and timestamp, the checks of ``mutate``): :meth:`Recorder.derived` then gives each
fact as an instance of its event class holding exactly its payload (the fields of its event:
no event class of a recorder has a field with a default). The state evolves as it would have.

The event classes several aggregates record alike are declared once, here:
:class:`RoundRecorder` (a round's table: ``Round`` and ``SharedHand``) and
:class:`HandsRecorder` (players' hands and wagers: ``Round`` and ``Participation``). Each
aggregate still has its own class of each (``Round.Paused``, ``SharedHand.Paused``), defined
by the library in the aggregate's module under the aggregate's name: the stored topics
(``domain.round:Round.Paused``) are what they always were.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar, overload
from uuid import UUID

from eventsourcing.domain import (
    Aggregate,
    CanMutateAggregate,
    CommandMethodDecorator,
    DecoratedFuncCaller,
    DomainEvent,
    decorated_func_callers,
    decorated_funcs,
)

from domain.cards import Card
from domain.event_store import frozen
from domain.events import SYSTEM, Consequence, Derived, Input, Requested
from domain.game.commands import CloseBetting, CloseWindow, Command, Deal, Start, Supervise
from domain.game.facts import Decision, Fact
from domain.ids import stable_id
from domain.rules.base import Rules

T = TypeVar("T")


class Delegated(Generic[T]):
    """A read-only attribute of a recorder: the attribute of the same name of its state.

    (No class annotation declares these, nor ``_state``: the library would make an annotated
    aggregate class a dataclass.)"""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type) -> Delegated[T]: ...

    @overload
    def __get__(self, obj: object, owner: type) -> T: ...

    def __get__(self, obj: object, owner: type) -> Any:
        if obj is None:
            return self
        return getattr(obj._state, self.name)  # type: ignore[attr-defined]


#: The library's fields of every event, which ``Recorder.record`` sets itself.
_HEADER = frozenset({"originator_id", "originator_version", "timestamp"})
#: Event class -> the names of its payload fields when ``Recorder.record`` may build it as the
#: library rebuilds a stored event (None: the library's ``trigger_event`` builds it).
_AS_STORED: dict[type, frozenset[str] | None] = {}


def _plain_payload(cls: type) -> frozenset[str] | None:
    """The payload field names of the event class ``cls`` if an instance made by setting its
    ``__dict__`` is the one its dataclass ``__init__`` would make: every field set by
    ``__init__`` from an argument of its own (no default), no ``__post_init__`` but the
    library's (which checks that the originator id is a UUID: the short ways below build
    only for an aggregate whose id is one), and the library's ``mutate``; else None."""
    if not (
        dataclasses.is_dataclass(cls)
        and getattr(cls, "mutate", None) is CanMutateAggregate.mutate
        and getattr(cls, "__post_init__", None) in (None, DomainEvent.__post_init__)
    ):
        return None
    fields = dataclasses.fields(cls)
    plain = all(
        f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        for f in fields
    )
    all_names = frozenset(f.name for f in fields)
    if plain and all_names >= _HEADER:
        return all_names - _HEADER
    return None


def _built_as_stored(cls: type) -> frozenset[str] | None:
    """The payload field names of the event class ``cls`` (:func:`_plain_payload`) if, besides,
    its ``apply`` is a recorder's (nothing of its own to run); else None."""
    try:
        return _AS_STORED[cls]
    except KeyError:
        pass
    names: frozenset[str] | None = None
    if getattr(cls, "apply", None) is Recorder.Event.apply:
        names = _plain_payload(cls)
    _AS_STORED[cls] = names
    return names


#: (aggregate class, name of an ``@event`` method) -> its event class, the method's body and
#: the event's payload field names when :func:`trigger` may build the event as stored (else
#: None: the library's decorated method triggers it).
_DECORATED: dict[tuple[type, str], tuple[type, Callable[..., None], frozenset[str]] | None] = {}


def _decorated_as_stored(
    model: type, name: str
) -> tuple[type, Callable[..., None], frozenset[str]] | None:
    """What :func:`trigger` needs to build the event of ``model``'s ``@event`` method ``name``
    as stored: its event class has a plain payload (:func:`_plain_payload`), its ``apply`` is
    the library's call of the method's body followed by nothing (``CanMutateAggregate.apply``
    next in its bases), and the body's parameters are exactly the payload's fields, each one
    a keyword may give (so the library passes the body every field as it is); else None."""
    key = (model, name)
    try:
        return _DECORATED[key]
    except KeyError:
        pass
    found: tuple[type, Callable[..., None], frozenset[str]] | None = None
    decorator = next((k.__dict__[name] for k in model.__mro__ if name in k.__dict__), None)
    cls = (
        decorated_func_callers.get(decorator)
        if isinstance(decorator, CommandMethodDecorator)
        else None
    )
    if isinstance(cls, type) and getattr(cls, "apply", None) is DecoratedFuncCaller.apply:
        body = decorated_funcs.get(cls)
        names = _plain_payload(cls)
        mro = cls.__mro__
        after = mro[mro.index(DecoratedFuncCaller) + 1 :]
        then = next((k.__dict__["apply"] for k in after if "apply" in k.__dict__), None)
        if body is not None and names is not None and then is CanMutateAggregate.apply:
            params = list(inspect.signature(body).parameters.values())[1:]  # after self
            keywords = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            if all(p.kind in keywords for p in params) and {p.name for p in params} == names:
                found = (cls, body, names)
    _DECORATED[key] = found
    return found


def trigger(aggregate: Aggregate, name: str, /, **fields: Any) -> None:
    """Trigger the event of ``aggregate``'s ``@event`` method ``name`` with ``fields``, as
    calling the method would (``aggregate.name(**fields)``: the library's ``trigger_event``,
    the event's ``mutate`` running the method's body), without the library's keyword copies,
    signature filtering and dataclass ``__init__`` (7.3 -> 1.8 us an event): the event is made as
    the library makes one it reads from the store (its ``__dict__`` the fields and the
    header), the body runs on the fields, then the aggregate's version, modified time and
    pending events are set as ``mutate`` and ``trigger_event`` set them. A body that raises
    leaves the aggregate as it was, as the library's path does. Any method or call
    :func:`_decorated_as_stored` does not vouch for (fields other than the body's, an
    aggregate whose id is no UUID) goes the library's way. The stored bytes are the same
    (``tests/integration/test_record_paths.py``)."""
    found = _decorated_as_stored(type(aggregate), name)
    if found is None or type(aggregate.id) is not UUID or not _exactly(found[2], fields):
        getattr(aggregate, name)(**fields)
        return
    cls, body, _ = found
    made = _as_stored(aggregate, cls, fields)
    body(aggregate, **fields)
    _mutated(aggregate, made)


def _as_stored(aggregate: Aggregate, cls: type, fields: Mapping[str, Any]) -> Any:
    """The next event of ``aggregate``, of class ``cls`` with payload ``fields``, made as the
    library makes one it reads from the store (its ``__dict__`` the payload and the header:
    the aggregate's id, its next version, the class's timestamp)."""
    state = dict(fields)
    state["originator_id"] = aggregate.id
    state["originator_version"] = aggregate.version + 1
    state["timestamp"] = cls.create_timestamp()  # type: ignore[attr-defined]
    return frozen(cls, state)


def _mutated(aggregate: Aggregate, made: Any) -> None:
    """What the library's ``mutate`` and ``trigger_event`` do to ``aggregate`` after the event
    ``made`` (of :func:`_as_stored`) applied: its version, modified time, pending events."""
    aggregate.version = made.originator_version
    aggregate.modified_on = made.timestamp
    aggregate.pending_events.append(made)


def _exactly(names: frozenset[str], fields: Mapping[str, Any]) -> bool:
    """Whether ``fields`` names every payload field of ``names`` and nothing else."""
    return len(fields) == len(names) and names.issuperset(fields)


class Recorder(Aggregate):
    """An aggregate that records the game core's facts (see the module docstring)."""

    if TYPE_CHECKING:
        _state: Any
        _facts: list[Fact] | None
    _recording = False
    _facts = None  # a list after :meth:`keep_facts`: the facts recorded since, in order

    class Event(Aggregate.Event):
        """An event of a recorder: applying it folds its payload into the state."""

        def apply(self, aggregate: Any) -> None:
            model = type(aggregate)
            if isinstance(self, Aggregate.Created):  # the first event: the state begins
                aggregate._state = model.begin(self.__dict__)
            elif not aggregate._recording:
                aggregate._state = model.evolve(
                    aggregate._state, type(self).__name__, self.__dict__
                )

    @staticmethod
    def begin(fields: Mapping[str, Any], /) -> Any:
        """The model's state from its first event's fields (set by each subclass)."""
        raise NotImplementedError

    @staticmethod
    def evolve(state: Any, name: str, fields: Mapping[str, Any], /) -> Any:
        """The model's ``evolve(state, fact name, fields) -> state`` (set by each subclass)."""
        raise NotImplementedError

    def record(self, decision: Decision[Any]) -> list[Fact]:
        """Record every fact of ``decision`` as this aggregate's events; returns them."""
        if not decision.facts:
            return []
        if self._facts is not None:
            self._facts.extend(decision.facts)
            self._state = decision.state
            return decision.facts
        self._recording = True
        try:
            model = type(self)
            for fact in decision.facts:
                cls = getattr(model, fact.name)
                names = _built_as_stored(cls)
                if names is None or not _exactly(names, fact.fields) or type(self.id) is not UUID:
                    self.trigger_event(cls, **fact.fields)
                    continue
                # the library's trigger_event, without its keyword copies and the dataclass
                # __init__: the event made as the library makes one it reads from the store
                # (its __dict__ the fields), then mutate's effects (apply folds nothing while
                # a decision is recorded: its state is the decision's)
                _mutated(self, _as_stored(self, cls, fact.fields))
        finally:
            del self._recording
        self._state = decision.state
        return decision.facts

    def record_fact(self, fact: Fact) -> None:
        """Record one fact as it is, undecided (its event folded into the state as when the
        aggregate is rebuilt)."""
        if self._facts is not None:
            self._facts.append(fact)
            self._state = type(self).evolve(self._state, fact.name, fact.fields)
            return
        self.trigger_event(getattr(type(self), fact.name), **fact.fields)

    def keep_facts(self) -> None:
        """From now on record facts without building their events (see the module docstring:
        an aggregate that is never saved, re-executed to be compared)."""
        self._facts = []

    def derived(self) -> list[Any]:
        """Every event recorded so far, collected: the pending events, then (after
        :meth:`keep_facts`) each fact kept as an instance of its event class holding exactly
        its payload, with no id, version or timestamp (to compare, never to store)."""
        out: list[Any] = list(self.collect_events())
        if self._facts:
            # the facts are let go here: each event takes its fact's payload dict as its own
            type(self).as_events(self._facts, out, shared=True)
            self._facts = []
        return out

    @classmethod
    def as_events(cls, facts: list[Fact], out: list[Any], *, shared: bool = False) -> None:
        """Append to ``out`` each of ``facts`` as an instance of this model's event class of
        its name holding exactly its payload, with no id, version or timestamp (to compare,
        never to store: :meth:`derived`, and re-execution on the core alone). ``shared``: the
        event's ``__dict__`` is the fact's payload dict itself, not a copy (for facts let go
        once their events are made, whose events nothing changes: a boundless round's
        comparison; a copy of tens of thousands of payloads cost about a third of this)."""
        new, add = object.__new__, out.append
        if shared:
            own = object.__setattr__
            for fact in facts:
                e = new(getattr(cls, fact.name))
                own(e, "__dict__", fact.fields)
                add(e)
            return
        for fact in facts:
            e = new(getattr(cls, fact.name))
            e.__dict__.update(fact.fields)
            add(e)


@dataclass(frozen=True)
class Opening:
    """The fields a round's first event records in every model of a round (declared once, a
    base of ``Round.Started`` and ``SharedHand.Started``)."""

    table_id: str
    round_number: int
    rules_key: str
    shoe_id: str
    shoe_round: int
    production: bool


class RoundRecorder(Recorder):
    """A recorder of one round's table (a classic ``Round``, a boundless ``SharedHand``): the
    events both record alike, and what every model of a round has, read from its state."""

    # ------------------------------------------------------------------ events: inputs
    class BettingClosed(Requested, Aggregate.Event, Input):
        """The betting countdown ended (PHASE-1)."""

    class CardDealt(Requested, Aggregate.Event, Input):
        card: str
        shoe_position: int | None

    class InsuranceWindowClosed(Requested, Aggregate.Event, Input):
        """The insurance timer ran out: undecided hands decline (INS-1)."""

    class Paused(Requested, Aggregate.Event, Input):
        reason: str

    class Resumed(Requested, Aggregate.Event, Input):
        reason: str

    class CancelRequested(Requested, Aggregate.Event, Input):
        reason: str

    # ------------------------------------------------------------ events: consequences
    class CardToDealer(Derived, Aggregate.Event, Consequence):
        card: str
        face_up: bool
        rule: str

    class InsuranceWindowCompleted(Derived, Aggregate.Event, Consequence):
        """Every hand in the window decided (every seated player, boundless): it closes without
        waiting for the timer."""

        rule: str

    class DealerChecked(Derived, Aggregate.Event, Consequence):
        blackjack: bool
        rule: str

    class HoleCardRevealed(Derived, Aggregate.Event, Consequence):
        card: str
        total: int
        rule: str

    class PlayStarted(Derived, Aggregate.Event, Consequence):
        rule: str

    class DealerTurnStarted(Derived, Aggregate.Event, Consequence):
        rule: str

    class DealerStood(Derived, Aggregate.Event, Consequence):
        total: int
        reason: str
        rule: str

    class RoundSettled(Derived, Aggregate.Event, Consequence):
        dealer: list[str]
        dealer_total: int
        rule: str

    class RoundCancelled(Derived, Aggregate.Event, Consequence):
        reason: str
        rule: str

    # --------------------------------------------------------------------------- state

    @staticmethod
    def create_id(table_id: str, round_number: int, **_: Any) -> UUID:
        """The round's id: uuid5 of table and round number, the same whichever model plays
        it, so a re-executed round has the same id."""
        return stable_id("round", table_id, round_number)

    @classmethod
    def start(
        cls,
        *,
        table_id: str,
        round_number: int,
        rules_key: str,
        shoe_id: str,
        shoe_round: int = 1,
        production: bool = True,
        seats: Mapping[str, str] | None = None,
        actor: dict[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> Self:
        """Open a round (refused by the rules of the other model: a classic ``Round`` is
        never a shared hand, a ``SharedHand`` only is). ``seats``: a deluxe table's seat map
        (seat -> player) when the round began; without it a main bet claims its seat/box."""
        return cls.opened_by(
            Start(
                table_id=table_id,
                round_number=round_number,
                rules_key=rules_key,
                shoe_id=shoe_id,
                shoe_round=shoe_round,
                production=production,
                seats=seats,
                actor=actor,
                request_id=request_id,
                client_time=client_time,
            )
        )

    @classmethod
    def opened_by(cls, command: Start) -> Self:
        """The round ``command`` opens (its ``Started`` fact decided by the model's core)."""
        raise NotImplementedError

    rules = Delegated[Rules]()
    table_id = Delegated[str]()
    round_number = Delegated[int]()
    rules_key = Delegated[str]()
    shoe_id = Delegated[str]()
    shoe_round = Delegated[int]()
    production = Delegated[bool]()
    phase = Delegated[str]()
    paused = Delegated[bool]()
    finished = Delegated[bool]()
    dealer = Delegated[tuple[Card, ...]]()
    hole_revealed = Delegated[bool]()
    dealer_blackjack = Delegated[bool]()

    @property
    def state(self) -> Any:
        """The round's state (the core's immutable state object)."""
        return self._state

    # ----------------------------------------------------------------------- commands
    def execute(self, command: Command) -> list[Fact]:
        """Decide ``command`` with the model's decider and record its facts (none when it
        is a repeat); a refused command raises and records nothing."""
        raise NotImplementedError

    def deal(
        self,
        card: str | Card,
        *,
        demand: int | None = None,
        shoe_position: int | None = None,
        actor: dict[str, str] | None = None,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> str:
        """Record the next card out of the shoe and route it where the rules say; returns
        where it went (a hand, ``dealer``; boundless: ``shared``, ``sequence``), or nothing for
        a repeated request id. ``demand`` (boundless): the sequence index a player's hand waits
        for, known from the players' state (BDL-2)."""
        c = card if isinstance(card, Card) else Card.parse(card)
        facts = self.execute(
            Deal(
                card=c,
                demand=demand,
                shoe_position=shoe_position,
                actor=actor,
                request_id=request_id,
                client_time=client_time,
            )
        )
        if not facts:
            return ""
        placed = facts[1]
        return str(placed.fields["hand"]) if placed.name == "CardToHand" else "dealer"

    def close_betting(
        self,
        *,
        actor: dict[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        """The betting countdown ended (PHASE-1)."""
        self.execute(CloseBetting(actor=actor, request_id=request_id, client_time=client_time))

    def close_insurance_window(
        self,
        *,
        actor: dict[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        """The insurance timer ran out: every undecided hand declines (INS-1)."""
        self.execute(CloseWindow(actor=actor, request_id=request_id, client_time=client_time))

    def pause(self, *, reason: str, actor: dict[str, str], **ids: str | None) -> None:
        """ERR-1: a supervisor pauses the round, naming a reason code."""
        self.execute(Supervise(what="pause", reason=reason, actor=actor, **ids))

    def resume(self, *, reason: str, actor: dict[str, str], **ids: str | None) -> None:
        """ERR-1: the round resumes as it was."""
        self.execute(Supervise(what="resume", reason=reason, actor=actor, **ids))

    def cancel(self, *, reason: str, actor: dict[str, str], **ids: str | None) -> None:
        """ERR-1: every stake of the round is refunded and any payment made reversed (a
        boundless round's participations are refunded by the engine's steps, then it closes)."""
        self.execute(Supervise(what="cancel", reason=reason, actor=actor, **ids))


class HandsRecorder(Recorder):
    """A recorder of players' hands (a classic ``Round``, a boundless ``Participation``): the
    hand and wager events both record alike."""

    class WagerAdded(Derived, Aggregate.Event, Consequence):
        wager_id: str
        player: str
        kind: str
        hand: str
        stake: str
        balance_seen: str
        rule: str

    class HandSplit(Derived, Aggregate.Event, Consequence):
        hand: str
        into: list[str]
        rule: str

    class HandDoubled(Derived, Aggregate.Event, Consequence):
        hand: str
        rule: str

    class HandSurrendered(Derived, Aggregate.Event, Consequence):
        hand: str
        rule: str

    class DecisionConverted(Derived, Aggregate.Event, Consequence):
        hand: str
        requested: str
        applied: str
        balance_seen: str
        needed: str
        rule: str

    class AutoActed(Derived, Aggregate.Event, Consequence):
        hand: str
        action: str
        total: int
        rule: str

    class HandStood(Derived, Aggregate.Event, Consequence):
        hand: str
        reason: str
        total: int
        rule: str

    class WagerSettled(Derived, Aggregate.Event, Consequence):
        wager_id: str
        player: str
        kind: str
        hand: str | None
        stake: str
        result: str
        ratio: str | None
        payout: str
        net: str
        rounding: str
        pattern: str | None
        paytable: dict[str, str] | None
        rule: str

    class HandHit(Derived, Aggregate.Event, Consequence):
        hand: str
        rule: str


__all__ = ["Delegated", "HandsRecorder", "Opening", "Recorder", "RoundRecorder"]
