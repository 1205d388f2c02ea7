"""What every model of a round has: its phases (RULES.md "Round phases"), the state common to
its table, and the guards every input passes.

Phase names are stored nowhere (they are state), but every model of a round moves through the
same ones: betting, the initial deal, the insurance window, play, the dealer, and the end
(settled, or cancelled under ERR-1). :class:`RoundBase` is the state a classic round's table
(``domain.game.table_state``) and a boundless shared hand (``domain.game.shared``) both have,
and :func:`evolve_round` the effect of the facts both record alike. :func:`check_open` is the
guard of every input while a round is open; the supervisor's pause, resume and cancel (ERR-1)
have theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from domain.cards import Card
from domain.errors import RoundClosed, WrongOrder, require_reason
from domain.events import SYSTEM
from domain.game import dealer as D
from domain.game.commands import Start, Supervise, record
from domain.game.facts import Decision, Fact, creation
from domain.game.state import fast_init, replace
from domain.rules import get_rules
from domain.rules.base import Rules
from domain.scoring import score

BETTING, DEALING, INSURANCE, PLAYING, DEALER, SETTLED, CANCELLED = (
    "betting",
    "dealing",
    "insurance",
    "playing",
    "dealer",
    "settled",
    "cancelled",
)
FINISHED = frozenset({SETTLED, CANCELLED})
R = TypeVar("R", bound="RoundBase")


@fast_init
@dataclass(frozen=True)
class RoundBase:
    """A round's table: its identity, its phase, the dealer's hand, the request ids seen."""

    rules: Rules
    table_id: str
    round_number: int
    rules_key: str
    shoe_id: str
    shoe_round: int
    production: bool
    phase: str = BETTING
    paused: bool = False
    dealer_hand: D.DealerHand = field(default_factory=D.DealerHand)
    request_ids: frozenset[str] = frozenset()

    def __deepcopy__(self, memo: dict[int, Any]) -> RoundBase:
        return self  # immutable: never changed in place

    @property
    def label(self) -> str:
        return f"{self.table_id}#{self.round_number}"

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED

    @property
    def dealer(self) -> tuple[Card, ...]:
        return self.dealer_hand.cards

    @property
    def hole_revealed(self) -> bool:
        return self.dealer_hand.hole_revealed

    @property
    def dealer_blackjack(self) -> bool:
        return self.dealer_hand.blackjack


def start_fact(c: Start, rules: Rules, **fields: Any) -> Fact:
    """The ``Started`` fact of a new round under ``rules`` (``fields``: the model's own)."""
    d = creation()
    record(
        d,
        "Started",
        c,
        SYSTEM,
        table_id=c.table_id,
        round_number=c.round_number,
        rules_key=rules.key,
        shoe_id=c.shoe_id,
        shoe_round=c.shoe_round,
        production=c.production,
        **fields,
    )
    return d.facts[0]


def view_head(s: RoundBase, round_id: str, card_needed: object) -> dict[str, Any]:
    """The part of a round's view every model shows alike: the round, its phase, the card it
    needs, and the dealer (the hole card and the total only once shown)."""
    shown = s.hole_revealed or s.finished
    return {
        "round_id": round_id,
        "table_id": s.table_id,
        "round_number": s.round_number,
        "rules_key": s.rules_key,
        "variant": s.rules.variant,
        "phase": s.phase,
        "paused": s.paused,
        "card_needed": card_needed,
        "dealer": {
            "cards": D.visible(s.dealer, s.rules, shown=shown),
            "total": score(s.dealer).total if shown else None,
        },
    }


def opening(f: Mapping[str, Any]) -> dict[str, Any]:
    """The :class:`RoundBase` fields a ``Started`` fact opens a round with."""
    keys = ("table_id", "round_number", "rules_key", "shoe_id", "shoe_round", "production")
    return {"rules": get_rules(f["rules_key"]), **{k: f[k] for k in keys}}


def seen(s: R, f: Mapping[str, Any]) -> R:
    """An input's request id is kept: the same request is never applied twice."""
    return s if f.get("request_id") is None else replace(s, request_ids=seen_ids(s, f))


def seen_ids(s: Any, f: Mapping[str, Any]) -> frozenset[str]:
    """The request ids ``s`` keeps once the input ``f`` is recorded (:func:`seen`'s): for an
    input whose state changes otherwise too, passed with those changes to one ``replace``
    (one copy of the state, not two)."""
    rid = f.get("request_id")
    ids: frozenset[str] = s.request_ids
    return ids if rid is None else ids | {rid}


def evolve_table(*parts: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """One model's evolve table (a fact's name -> ``handler(state, fields) -> state``) made of
    ``parts``; ``AssertionError`` when two of them name the same fact (which one applied would
    depend on their order).

    >>> sorted(evolve_table({"A": id}, {"B": id}))
    ['A', 'B']
    >>> evolve_table({"A": id}, {"A": id})
    Traceback (most recent call last):
    ...
    AssertionError: facts evolved twice: ['A']
    """
    table: dict[str, Callable[..., Any]] = {}
    for part in parts:
        twice = table.keys() & part.keys()
        if twice:
            raise AssertionError(f"facts evolved twice: {sorted(twice)}")
        table.update(part)
    return table


def _dealer_fact(name: str) -> Callable[[Any, Mapping[str, Any]], Any]:
    def evolve(s: Any, f: Mapping[str, Any]) -> Any:
        return replace(s, dealer_hand=D.evolve_dealer(s.dealer_hand, name, f))

    return evolve


#: The effect of each fact every model of a round records alike on its table, by the fact's
#: name (``handler(state, fields) -> state``): the dealer's facts (:data:`D.DEALER_FACTS`),
#: a card taken from the shoe (its request id kept), a pause or resume (ERR-1), the dealer's
#: turn (PHASE-5) and the round's settlement (PHASE-6). A model's ``evolve`` looks a fact's
#: name up once in a table of its own that includes this one (``table_state.evolve``), rather
#: than asking its kind in turn (the core folds every fact it decides or reads).
ROUND_EVOLVE: dict[str, Callable[[Any, Mapping[str, Any]], Any]] = {
    **{name: _dealer_fact(name) for name in sorted(D.DEALER_FACTS)},
    "CardDealt": seen,
    "Paused": lambda s, f: replace(seen(s, f), paused=True),
    "Resumed": lambda s, f: replace(seen(s, f), paused=False),
    "DealerTurnStarted": lambda s, f: replace(s, phase=DEALER),
    "RoundSettled": lambda s, f: replace(s, phase=SETTLED),
}


def evolve_round(s: R, name: str, f: Mapping[str, Any]) -> R | None:
    """The effect of the facts every model of a round records alike on its table (None for
    a fact that is not one of them: :data:`ROUND_EVOLVE`)."""
    handler = ROUND_EVOLVE.get(name)
    return None if handler is None else handler(s, f)


def check_open(r: RoundBase, *, cancelling: bool = False) -> None:
    """An input reaches only an open round: not finished, not being cancelled, not paused
    (the round's label is written only into a refusal: every input passes here)."""
    phase = r.phase
    if phase in FINISHED:
        raise RoundClosed(f"round {r.label} is {phase}")
    if cancelling:
        raise RoundClosed(f"round {r.label} is being cancelled (ERR-1)", rule="ERR-1")
    if r.paused:
        raise RoundClosed(f"round {r.label} is paused (ERR-1): resume or cancel", rule="ERR-1")


def check_pause(phase: str, reason: str, *, paused: bool, cancelling: bool = False) -> None:
    """ERR-1: a supervisor pauses an open round, naming a reason code."""
    if phase in FINISHED or cancelling:
        raise RoundClosed(f"round is {phase}")
    if paused:
        raise WrongOrder("round is already paused")
    require_reason(reason)


def check_resume(phase: str, reason: str, *, paused: bool, cancelling: bool = False) -> None:
    """ERR-1: a paused round resumes as it was."""
    if phase in FINISHED or cancelling:
        raise RoundClosed(f"round is {phase}")
    if not paused:
        raise WrongOrder("round is not paused")
    require_reason(reason)


def supervise(d: Decision[Any], c: Supervise, *, paused: bool, cancelling: bool = False) -> None:
    """ERR-1: check a supervisor's pause, resume or cancel and decide its input fact."""
    phase = d.state.phase
    assert c.actor is not None, "a supervisor's action names the supervisor"
    if c.what == "pause":
        check_pause(phase, c.reason, paused=paused, cancelling=cancelling)
        name = "Paused"
    elif c.what == "resume":
        check_resume(phase, c.reason, paused=paused, cancelling=cancelling)
        name = "Resumed"
    else:
        check_cancel(phase, c.reason, cancelling=cancelling)
        name = "CancelRequested"
    record(d, name, c, c.actor, reason=c.reason)


def check_cancel(phase: str, reason: str, *, cancelling: bool = False) -> None:
    """ERR-1: an unfinished round may be cancelled (once), naming a reason code."""
    if phase in FINISHED:
        raise RoundClosed(f"round is {phase}: it can no longer be cancelled")
    if cancelling:
        raise WrongOrder("the round is already being cancelled", rule="ERR-1")
    require_reason(reason)


__all__ = [
    "BETTING",
    "CANCELLED",
    "DEALER",
    "DEALING",
    "FINISHED",
    "INSURANCE",
    "PLAYING",
    "ROUND_EVOLVE",
    "SETTLED",
    "RoundBase",
    "check_cancel",
    "check_open",
    "check_pause",
    "check_resume",
    "evolve_round",
    "evolve_table",
    "opening",
    "seen",
    "seen_ids",
    "start_fact",
    "supervise",
    "view_head",
]
