"""Facts: what the game core decides, and the one place they are made.

A *fact* is an event the core has decided and an aggregate is about to record: the name of its
event class (the same name in every aggregate that records such an event: ``CardToHand``,
``WagerSettled``...) and its payload. The core never builds stored events itself; an aggregate
records each fact as its own nested event class of that name (``Round.CardToHand``,
``Participation.CardToHand``), so topics and payloads stay what they were.

:class:`Decision` is where every fact is made, and the only place: a decider function takes the
state, the rules and one input, opens a :class:`Decision` on that state and adds to it

* the **input** itself, :meth:`Decision.input` (or :meth:`Decision.add_input`, the same fact
  from a payload dict: what ``domain.game.commands.record`` calls): it always carries
  ``actor``, ``request_id`` and ``client_time``;
* each **consequence** the rules derive from it, :meth:`Decision.consequence`: it always names
  the ``rule`` that produced it.

After each fact the decision's :attr:`~Decision.state` is the state evolved by it (the model's
``evolve``), so the next consequence is decided on the state the previous one left. A change to
what *every* consequence or *every* input records is a change to ``consequence`` and
``add_input`` (plus a ``class_version`` and an upcaster for the events whose payload grows: the
system actor of every consequence is ``domain.events.Derived``'s, stored format version 2).

>>> d = Decision(0, lambda n, name, fields: n + 1)
>>> d.consequence("HandStood", rule="HAND-1", hand="1", reason="21", total=21)
>>> d.facts[0].name, d.facts[0].fields["rule"], d.facts[0].fields["actor"], d.state
('HandStood', 'HAND-1', {'kind': 'system', 'id': 'roundaudit'}, 1)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, NamedTuple, TypeVar

from domain.events import SYSTEM

S = TypeVar("S")
Fields = Mapping[str, Any]
Evolve = Callable[[S, str, Fields], S]


class Fact(NamedTuple):
    """One decided event: its class name, its payload, and whether it is an input. A named
    tuple: immutable, and made for every fact the core decides in less than half the time of a
    frozen dataclass (a boundless round decides a dozen facts a player)."""

    name: str
    fields: dict[str, Any]
    input: bool = False


class Decision(Generic[S]):
    """The facts decided so far for one input, and the state they leave."""

    __slots__ = ("_evolve", "facts", "state")

    def __init__(self, state: S, evolve: Evolve[S]) -> None:
        self.state = state
        self.facts: list[Fact] = []
        self._evolve = evolve

    def input(
        self,
        name: str,
        *,
        actor: Mapping[str, str],
        request_id: str | None,
        client_time: str | None,
        **fields: Any,
    ) -> None:
        """The input fact (a bet, a card, a decision, a timer, a supervisor's action...)."""
        self.add_input(name, fields, actor, request_id, client_time)

    def add_input(
        self,
        name: str,
        fields: dict[str, Any],
        actor: Mapping[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        """:meth:`input` with its payload's own fields given as the dict they are in (which
        becomes the fact's payload; ``domain.game.commands.record`` passes its keyword dict, not
        unpacked and packed again): they come first, then ``actor``, ``request_id`` and
        ``client_time``."""
        fields["actor"] = dict(actor)
        fields["request_id"] = request_id
        fields["client_time"] = client_time
        self.facts.append(_fact(Fact, (name, fields, True)))
        self.state = self._evolve(self.state, name, fields)

    def consequence(self, name: str, *, rule: str, **fields: Any) -> None:
        """A consequence the rules derive; ``rule`` is the rule ID that produced it and the
        actor is the system (``domain.events.SYSTEM``, the field ``domain.events.Derived``
        declares)."""
        fields["rule"] = rule  # set one by one: no keyword dict made for ``update``
        fields["actor"] = dict(SYSTEM)
        # the fact made as the named tuple's own ``__new__`` makes it, without its Python
        # frame; folded here, not through a method of its own (every fact passes here)
        self.facts.append(_fact(Fact, (name, fields, False)))
        self.state = self._evolve(self.state, name, fields)


#: ``tuple.__new__``: a :class:`Fact` from its three values, as ``Fact(name, fields, input)``
#: makes it (the named tuple's generated ``__new__`` is a Python function calling this).
_fact = tuple.__new__


def creation() -> Decision[None]:
    """The decision of an aggregate's first fact (``Started``, ``Joined``): the aggregate's
    state begins when it records that fact, so the decision keeps none."""
    return Decision(None, _no_state)


def _no_state(state: None, name: str, fields: Fields) -> None:
    return None


__all__ = ["Decision", "Evolve", "Fact", "Fields", "creation"]
