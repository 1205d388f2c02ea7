"""Verification by re-execution: replay a round's inputs through the rules, compare everything.

A round's stored events are split by kind (``domain.events``): the **inputs** (bets, cards,
decisions, timeouts, supervisor actions, each with the balance the player had when it was
checked) are decided again, in their stored order, by the same game core that decided them
live (``domain.game.table``: each input becomes the command it records,
``domain.game.commands.command_for``),
under the rules key the round was played under, on the core alone (the state a ``Round``
begins and evolves, no aggregate nor library event: :func:`reexecute` with ``facts``, what
:func:`verify_events` does), or on a fresh in-memory ``Round`` that records the library's
events. The rules then derive the consequences again. Every
re-derived event must equal the stored one at the same position: same class, same payload
(the server timestamp aside). :func:`verify_events` compares each kept fact as it is (its
name's ``Round`` event class, its payload dict: :func:`same_state`), no event made of it.
Any difference is a :class:`Discrepancy` naming the position, the field, the expected and
the recorded value, and the rule ID the stored event cites.

What this proves: given these inputs, the recorded consequences (hands, dealer play, every
settlement to the cent) are exactly what the rules produce, and no event was altered, removed,
inserted or reordered *relative to the inputs*. What it cannot prove alone: that the inputs
themselves are genuine; the hash chain and the shoe commitment cover that.

Only ``Round`` logs re-execute here. A boundless round is a ``SharedHand`` and one
``Participation`` per player, verified by ``replays.boundless``; ``Round.start`` refuses
shared-hand rules (BDL-1), so a ``Round`` log under boundless rules (the old model) is reported
as refused at its first event.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any
from uuid import UUID

from domain.errors import DomainError
from domain.game import table as T
from domain.game.commands import Start, command_for
from domain.game.facts import Fact
from domain.game.table_state import TableState
from domain.round import Round

_SKIP = frozenset({"originator_id", "originator_version", "timestamp", "originator_topic"})
_MISSING = object()
#: ``Round``'s event class of each fact name (what ``Recorder.as_events`` makes of a fact).
_ROUND_EVENTS: dict[str, type] = {
    name: getattr(Round, name)
    for name in dir(Round)
    if isinstance(getattr(Round, name), type) and issubclass(getattr(Round, name), Round.Event)
}


class Finding:
    """A verification record (a dataclass) as plain JSON: its fields, in order."""

    def as_json(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [v.as_json() if isinstance(v, Finding) else v for v in value]
    return value


@dataclass(frozen=True)
class Difference(Finding):
    """What re-execution found at a place: the event, its field, the value the rules give and
    the recorded one, the rule the recorded event cites, in words."""

    position: int | None  # the stored event's version (1-based), None for the round as a whole
    event: str
    field: str
    expected: Any
    recorded: Any
    rule: str | None
    message: str


@dataclass(frozen=True)
class Discrepancy(Difference):
    #: Which check found it: reexecution, storage, shoe, money, seal (see replays.verify).
    check: str = "reexecution"


@dataclass
class Findings(Finding):
    """A round's verdict: ``ok`` when nothing was found."""

    round_id: str
    events: int
    discrepancies: list[Any] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.discrepancies

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, **super().as_json()}


@dataclass
class Verdict(Findings):
    #: ``table#round`` when known.
    label: str = ""
    #: What could not be checked and why (not failures), e.g. a seed not yet revealed.
    notes: list[str] = field(default_factory=list)
    #: The checks that ran.
    checks: list[str] = field(default_factory=list)
    #: Whether the checkpoint proving the round is final (cosigned by a quorum of the
    #: trusted witnesses); None when no witness is trusted or nothing proves the round.
    final: bool | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "round_id": self.round_id,
            "label": self.label,
            "events": self.events,
            "ok": self.ok,
            "checks": list(self.checks),
            "final": self.final,
            "notes": list(self.notes),
            "discrepancies": [d.as_json() for d in self.discrepancies],
        }


def payload(event: Any) -> dict[str, Any]:
    """A stored event's payload: its fields without the library's."""
    return {k: v for k, v in event.__dict__.items() if k not in _SKIP}


def same_payload(expected: Any, recorded: Any) -> bool:
    """Whether two events' payloads are equal: ``payload(expected) == payload(recorded)``
    (the same fields, each value the same object or ``==``, as dict equality compares them),
    without building either payload (re-execution compares every event of every round)."""
    return same_state(expected.__dict__, recorded.__dict__)


def same_state(event: dict[str, Any], state: dict[str, Any], skip: frozenset[str] = _SKIP) -> bool:
    """Whether ``event`` (an event's ``__dict__``, or a kept fact's payload alone, none of the
    library's fields in it) has the payload of ``state`` (another event's ``__dict__``, or a
    stored state decoded: ``replays.bundle.Deferred.same_as``), ``skip`` being ``state``'s
    keys that are no payload field: each payload field of ``event`` the same object in
    ``state`` or ``==`` (the comparison dict equality makes, ``event``'s value first), and as
    many payload fields on each side. A kept fact's items are compared in C."""
    fields = len(state) - len(state.keys() & skip)  # ``state``'s payload fields
    if _SKIP.isdisjoint(event):  # a kept fact: its payload alone
        return len(event) == fields and event.items() <= state.items()
    for key, value in event.items():
        if key in _SKIP:
            continue
        found = state.get(key, _MISSING)
        if found is not value and (found is _MISSING or not value == found):  # noqa: SIM201
            return False
        fields -= 1
    return fields == 0


def differences(expected: Any, recorded: Any) -> Iterator[tuple[str, Any, Any]]:
    """(field, expected, recorded) for each payload field where two events differ."""
    if same_payload(expected, recorded):
        return
    yield from _differing(payload(expected), payload(recorded))


def _differing(pe: dict[str, Any], pr: dict[str, Any]) -> Iterator[tuple[str, Any, Any]]:
    """(field, expected, recorded) for each field where two payloads differ, by name."""
    for key in sorted(set(pe) | set(pr)):
        if pe.get(key) != pr.get(key):
            yield key, pe.get(key), pr.get(key)


def _apply_input(rnd: Round | None, e: Any) -> Round:
    """Decide one stored input again through the game core (raises DomainError if the rules
    refuse it): the command it records (:func:`domain.game.commands.command_for`), on the round
    as the inputs before it left it, recorded as the library's events."""
    command = command_for(type(e).__name__, e.__dict__)
    if isinstance(command, Start):
        return Round.opened_by(command)
    assert rnd is not None
    rnd.execute(command)
    return rnd


class _Core:
    """Re-execution on the game core alone: each input decided by ``domain.game.table.decide``
    on the state the facts before it left (what ``Round.execute`` records), a ``Started``
    opening the state as ``Round.begin`` does, with no aggregate and no library event; the
    facts decided are kept (``facts``), each ``Started`` one with the round's id it gives
    (``Round.create_id``, the id the library gives the round it opens: ``starts``)."""

    __slots__ = ("facts", "starts", "state")

    def __init__(self) -> None:
        self.state: TableState | None = None
        self.facts: list[Fact] = []
        #: (index in ``facts``, the round's id) of each ``Started`` fact
        self.starts: list[tuple[int, UUID]] = []

    def apply(self, e: Any) -> None:
        """Decide the input ``e`` (raises DomainError if the rules refuse it) and keep the
        facts it decides."""
        command = command_for(type(e).__name__, e.__dict__)
        if isinstance(command, Start):
            fact = T.start(command)
            round_id = Round.create_id(**fact.fields)
            self.state = Round.begin(fact.fields)
            self.starts.append((len(self.facts), round_id))
            self.facts.append(fact)
            return
        state = self.state
        assert state is not None
        decision = T.decide(state, command)
        self.state = decision.state
        if decision.facts:
            self.facts += decision.facts

    def events(self) -> list[Any]:
        """Each kept fact as its ``Round`` event class holding exactly its payload
        (``Recorder.as_events``), a ``Started`` one with the round's id."""
        out: list[Any] = []
        Round.as_events(self.facts, out)
        for at, round_id in self.starts:
            out[at].__dict__["originator_id"] = round_id
        return out

    def round_id(self) -> UUID | None:
        """The id of the round the first fact opens (None: no fact, or not a ``Started``)."""
        return self.starts[0][1] if self.starts and self.starts[0][0] == 0 else None


def reexecute(stored: Sequence[Any], *, facts: bool = False) -> tuple[list[Any], list[Discrepancy]]:
    """Re-execute the inputs of ``stored``; return the re-derived events and any refusal.

    ``facts``: the inputs are decided on the game core alone (:class:`_Core`), without an
    aggregate nor the library's events (as boundless verification keeps facts,
    ``Recorder.keep_facts``): each re-derived event is then an instance of its class holding
    exactly its payload, with no version or timestamp (to compare, as :func:`verify_events`
    does with the facts themselves; the first, ``Started``, carries the round's id). Without
    it, a ``Round`` records each input's facts as the library's events (what recording
    stores)."""
    core = _Core() if facts else None
    produced, problems = _reexecuted(stored, core)
    return (core.events() if core is not None else produced), problems


def _reexecuted(stored: Sequence[Any], core: _Core | None) -> tuple[list[Any], list[Discrepancy]]:
    """:func:`reexecute`'s work: with ``core``, the facts are kept there (and no event is
    returned); without, a ``Round`` records the library's events, returned."""
    from domain.events import Input

    rnd: Round | None = None
    produced: list[Any] = []
    problems: list[Discrepancy] = []
    for e in stored:
        if not isinstance(e, Input):
            continue
        version: int = getattr(e, "originator_version", 0)
        try:
            if core is not None:
                core.apply(e)
                continue
            rnd = _apply_input(rnd, e)
        except DomainError as exc:
            problems.append(
                Discrepancy(
                    version,
                    type(e).__qualname__,
                    "(command)",
                    "accepted",
                    f"refused: {exc.message}",
                    exc.rule,
                    f"the rules refuse the recorded input at position {version}",
                )
            )
            break
        except (ArithmeticError, KeyError, TypeError, ValueError, AttributeError) as exc:
            problems.append(
                Discrepancy(
                    version,
                    type(e).__qualname__,
                    "(command)",
                    "a well-formed input",
                    f"{type(exc).__name__}: {exc}",
                    None,
                    f"the recorded input at position {version} cannot be re-executed",
                )
            )
            break
        produced.extend(rnd.collect_events())
    return produced, problems


def verify_events(round_id: str, stored: Sequence[Any], *, facts: bool = True) -> Verdict:
    """Compare the stored events of one round with its re-execution, event by event.

    ``facts`` (the default): re-executed on a round that keeps its facts (:func:`reexecute`):
    the same verdict as with the library's events (``facts=False``), finding for finding,
    each re-derived event compared field by field with the stored one and every stored event's
    id with the round's (the id the re-executed round's events all carry)."""
    verdict = Verdict(round_id, len(stored))
    if not stored or not isinstance(stored[0], Round.Started):
        verdict.discrepancies.append(
            Discrepancy(
                1,
                "Round.Started",
                "(event)",
                "Round.Started",
                type(stored[0]).__qualname__ if stored else None,
                None,
                "a round's log must begin with Round.Started",
            )
        )
        return verdict
    for i, e in enumerate(stored, start=1):
        if e.originator_version != i:  # the first break is the finding; the rest follow from it
            verdict.discrepancies.append(
                Discrepancy(
                    i,
                    type(e).__qualname__,
                    "originator_version",
                    i,
                    e.originator_version,
                    None,
                    "the round's versions are not 1..N: an event is missing or out of place",
                )
            )
            break
    core = _Core() if facts else None
    produced, problems = _reexecuted(stored, core)
    verdict.discrepancies.extend(problems)
    # what the rules give, as (its event class, its payload) at each position: the kept facts
    # as they are (no event made of each, nor its payload copied), or the library's events
    expected: list[tuple[type, dict[str, Any]]]
    if core is not None:
        expected = [(_ROUND_EVENTS[f.name], f.fields) for f in core.facts]
        round_uuid = core.round_id()
    else:
        expected = [(type(e), payload(e)) for e in produced]
        round_uuid = produced[0].originator_id if produced else None
    # every re-derived event's id is the round's: its first event's (uuid5 of the table and
    # round number), which kept facts do not repeat
    if stored and round_uuid == stored[0].originator_id:
        round_uuid = stored[0].originator_id  # the same id, which the events read share
    # each position both sides hold, in turn; then, unless a position differs in class (all
    # after it shifted), the first position only one side holds
    common = min(len(expected), len(stored))
    shifted = False
    rec: Any
    for pos, (cls, want), rec in zip(range(1, common + 1), expected, stored, strict=False):
        kind = type(rec)  # (not narrowing ``rec`` for mypy)
        if cls is not kind:
            verdict.discrepancies.append(
                Discrepancy(
                    pos,
                    type(rec).__qualname__,
                    "(event)",
                    cls.__qualname__,
                    type(rec).__qualname__,
                    payload(rec).get("rule"),
                    "a different event stands at this position",
                )
            )
            shifted = True
            break  # everything after is shifted; the first difference is the finding
        if not same_state(want, rec.__dict__):
            rule = getattr(rec, "rule", None)
            for key, wanted, got in _differing(want, payload(rec)):
                verdict.discrepancies.append(
                    Discrepancy(
                        pos,
                        type(rec).__qualname__,
                        key,
                        wanted,
                        got,
                        rule if isinstance(rule, str) else None,
                        f"{key} differs from what the rules produce",
                    )
                )
        if rec.originator_id is not round_uuid and round_uuid != rec.originator_id:
            verdict.discrepancies.append(
                Discrepancy(
                    pos,
                    type(rec).__qualname__,
                    "originator_id",
                    str(round_uuid),
                    str(rec.originator_id),
                    None,
                    "the round id is not uuid5(table, round)",
                )
            )
    if not shifted and len(expected) != len(stored):
        exp = expected[common] if common < len(expected) else None
        rec = stored[common] if common < len(stored) else None
        pos = common + 1
        verdict.discrepancies.append(
            Discrepancy(
                pos,
                exp[0].__qualname__ if exp is not None else type(rec).__qualname__,
                "(event)",
                exp[0].__qualname__ if exp is not None else None,
                type(rec).__qualname__ if rec is not None else None,
                exp[1].get("rule") if exp is not None else payload(rec).get("rule"),
                (
                    "re-execution produced an event the store lacks"
                    if rec is None
                    else "the store holds an event the rules do not produce"
                )
                + (
                    f" (and {rest} more after it)"
                    if (rest := max(len(expected), len(stored)) - pos)
                    else ""
                ),
            )
        )
        # the rest is missing (or extra) too: the first one is the finding
    return verdict
