"""The base of the aggregates that record what the game core decides.

A :class:`Recorder` holds its state as the core's immutable state object (``_state``) and
nothing else of its own. :meth:`Recorder.record` records a decision: each fact becomes the
nested event class of the same name (its topic and payload are the stored format), and the
state becomes the decision's state. Rebuilding the aggregate from its stored events folds them
through the same ``evolve`` the decision used (:meth:`Recorder.Event.apply`), so a command is
always decided on exactly the state its events record.

While a decision is recorded its events are not folded a second time: the decision has
evolved the state fact by fact already.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from eventsourcing.domain import Aggregate

from domain.cards import Card
from domain.game.facts import Decision, Fact
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


class Recorder(Aggregate):
    """An aggregate that records the game core's facts (see the module docstring)."""

    if TYPE_CHECKING:
        _state: Any
    _recording = False

    class Event(Aggregate.Event):
        """An event of a recorder: applying it folds its payload into the state."""

        def apply(self, aggregate: Any) -> None:
            if not aggregate._recording:
                aggregate._state = type(aggregate).evolve(
                    aggregate._state, type(self).__name__, self.__dict__
                )

    @staticmethod
    def evolve(state: Any, name: str, fields: Mapping[str, Any], /) -> Any:
        """The model's ``evolve(state, fact name, fields) -> state`` (set by each subclass)."""
        raise NotImplementedError

    def record(self, decision: Decision[Any]) -> list[Fact]:
        """Record every fact of ``decision`` as this aggregate's events; returns them."""
        if not decision.facts:
            return []
        self._recording = True
        try:
            for fact in decision.facts:
                self.trigger_event(getattr(type(self), fact.name), **fact.fields)
        finally:
            del self._recording
        self._state = decision.state
        return decision.facts


class RoundRecorder(Recorder):
    """A recorder of one round's table (a classic ``Round``, a boundless ``SharedHand``): what
    every model of a round has, read from its state."""

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


__all__ = ["Delegated", "Recorder", "RoundRecorder"]
