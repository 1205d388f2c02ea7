"""Verification of a boundless round by re-execution: SharedHand and every Participation.

The round's stored events, in the order of the notification log, are split by kind
(:mod:`domain.events`). Every **input** (the round's start, the end of betting, each card with
its shoe position, each bet and decision with the balance the player had when it was checked,
expired timers, disconnections, the insurance timer, supervisor actions) is decided again, in
that order, by the same game core that decided it live (``domain.game.shared`` and
``domain.game.player``: each input becomes the command it records), on fresh in-memory
aggregates under the round's rules key, and after each input the round's automatic work is done
again (:meth:`Engine.step`: opening hands, taking revealed
cards, the dealer, settlement, refunds). The rules then derive the consequences again, and
**each aggregate's** re-derived events must equal its stored ones, event by event (class and
payload; the server timestamp aside). Comparing per aggregate makes the check independent of
how the application grouped its transactions. Each re-derived event is compared with the stored
one at its position soon after it is derived (the aggregates that the inputs and the automatic
work changed are compared every couple of thousand inputs) and then dropped
(:class:`_Comparison`): the round's re-derived events are never all held at once (a step of the
automatic work, ``_STEP`` participations' settlements or hands, is compared as soon as it is
done), and the findings are those of
comparing each aggregate's whole streams, in the same order. A stored consequence may come
undecoded (``replays.bundle.Deferred``, from the verifier's reader): it is compared from its
bytes (``Deferred.same_as``), and decoded (``replays.bundle.real``) where it differs or where a
check needs its event; so may a participation's decision (an input that neither moves money nor
names a player): it is decoded when it is fed, and its decoded event let go once compared equal
to the re-derived one (held meanwhile for at most a window of inputs).

Two further checks:

* D9: every player's hands recomputed from the shared initial cards, the shared sequence and
  the player's decision log alone (:func:`domain.game.sequence.replay`) equal the hands their
  stored events record, and the sequence cards each player holds are a prefix of the sequence.
* Completeness: a settled round settled every wager of every player exactly once, a cancelled
  one refunded every stake.

What this proves and what it cannot are as for :mod:`replays.reexecute`: given these inputs,
the recorded consequences are exactly what the rules produce; the inputs themselves are covered
by the shoe's accounting and commitment.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from uuid import UUID

from eventsourcing.domain import Aggregate

from domain.boundless.engine import Engine
from domain.boundless.participation import Participation
from domain.boundless.shared import BETTING, SharedHand
from domain.errors import DomainError
from domain.events import Input
from domain.game import sequence as H
from domain.game.commands import Join, Start, command_for
from domain.game.facts import Fact
from domain.recorder import Recorder
from replays.bundle import Deferred, real
from replays.reexecute import Difference, Findings, differences, payload, same_payload

if TYPE_CHECKING:
    from domain.application import RoundAudit

_UNLIMITED = 10**9
#: Inputs re-executed between two comparisons of what they derived (what is held meanwhile:
#: their consequences, a few each, and their decoded stored events, whatever the number of
#: players). 2,048: the window of the round's first bets is the verification's peak once the
#: records compared equal are let go (8,192 held 11 MiB more at 10,000 players).
_WINDOW = 2048
#: Participations the automatic work takes a step (opening hands, taking revealed cards,
#: settling, refunding); a step that takes that many is compared at once, so what one step
#: derives is what is held before it is compared, not a whole settlement.
_STEP = 1024


@dataclass(frozen=True)
class Discrepancy(Difference):
    aggregate: str = ""  # "shared" or the player


@dataclass
class Verdict(Findings):
    players: int = 0


def _found(
    aggregate: str,
    position: int | None,
    event: str,
    field: str,
    expected: Any,
    recorded: Any,
    rule: str | None,
    message: str,
) -> Discrepancy:
    """A discrepancy of ``aggregate``'s stream at ``position``."""
    return Discrepancy(position, event, field, expected, recorded, rule, message, aggregate)


def verify_round(app: RoundAudit, round_id: str | UUID) -> Verdict:
    """Re-execute a stored boundless round of ``app`` and compare (see the module docstring)."""
    return verify_log(app.boundless.round_log(round_id))


def verify_log(log: Sequence[Any], *, facts: bool = True) -> Verdict:
    """Re-execute a boundless round from its events in log order. ``facts=False`` re-executes
    it building the library's event for every fact, as recording does (the same verdict,
    slower: kept to show that it is the same)."""
    if not log or not isinstance(log[0], SharedHand.Started):
        d = _found(
            "shared",
            1,
            "",
            "type",
            "SharedHand.Started",
            _name(log[0]) if log else None,
            None,
            "a boundless round's log must begin with SharedHand.Started",
        )
        return Verdict("", len(log), [d])
    rid = log[0].originator_id
    verdict = Verdict(str(rid), len(log))
    # grouped by each id's integer (a ``UUID`` hashes in Python, its ``int`` in C: equal ids,
    # equal integers), then keyed by the ids, one look-up a stream and not one a record
    streams: dict[int, tuple[UUID, list[Any]]] = {}
    get = streams.get
    numbered = True  # every stream's versions 1..N so far
    for stored_event in log:  # no empty list made for each record (``setdefault``'s)
        if type(stored_event) is Deferred:  # its record's (what its properties read)
            record = stored_event.record
            oid, version = record.originator_id, record.version
        else:
            oid, version = stored_event.originator_id, stored_event.originator_version
        found = get(oid.int)
        if found is None:
            found = streams[oid.int] = (oid, [])
        stream = found[1]
        stream.append(stored_event)
        if numbered and version != len(stream):
            numbered = False
    stored: dict[UUID, list[Any]] = dict(streams.values())
    del get, streams  # not held through re-execution (a tuple a stream: memory)
    if not _check_streams(verdict, rid, stored, numbered=numbered):
        return verdict
    # each aggregate's re-derived events are compared with its stored ones as soon as they
    # are derived (after each input and the automatic work it allows), then dropped: the
    # round's re-derived events are never all held at once
    # by the ids' integers (a ``UUID`` hashes in Python: each aggregate is compared after
    # each piece of bulk work that changed it, and once more at the end)
    compared: dict[int, _Comparison] = {}

    def compare(agg: Recorder) -> None:
        oid = agg.id  # (a property: read once)
        key = oid.int
        c = compared.get(key)
        if c is None:
            c = compared[key] = _Comparison(stored.get(oid, []))
        c.feed(agg.derived())

    # the re-executed aggregates are only compared, never saved: they keep their facts
    # without building the library's events (``domain.recorder``: ``Recorder.keep_facts``)
    aggregates, refused = _reexecuted(log, facts=facts, compare=compare)
    verdict.discrepancies.extend(refused)
    if refused:
        return verdict
    verdict.players = len(aggregates) - 1
    # an aggregate whose re-derived events equal its stored ones, field by field, is in the
    # state its stored events rebuild (the same facts folded by the same ``evolve``): D9 then
    # checks it as re-executed instead of rebuilding it from the stored events again
    same: dict[UUID, Aggregate] = {}
    for oid, agg in aggregates.items():
        compare(agg)  # what it derived since its last comparison
        if compared[oid.int].finish(verdict, "shared" if oid == rid else None):
            same[oid] = agg

    for pid in stored:
        if pid not in aggregates:
            verdict.discrepancies.append(
                _found(
                    str(pid),
                    None,
                    "",
                    "aggregate",
                    None,
                    "recorded",
                    None,
                    "events of a participation that re-execution never created",
                )
            )
    _check_hands(verdict, rid, stored, same)
    return verdict


def reexecute(log: Sequence[Any]) -> tuple[dict[UUID, list[Any]], list[Discrepancy]]:
    """The events the rules derive from the round's inputs (``log``: the stored events in log
    order, beginning with ``SharedHand.Started``), per aggregate (the shared hand first, then
    the participations in the order they joined); and the inputs the rules refused (at most
    one: nothing after a refused input is re-executed)."""
    aggregates, refused = _reexecuted(log)
    return {oid: list(agg.collect_events()) for oid, agg in aggregates.items()}, refused


def _reexecuted(
    log: Sequence[Any],
    *,
    facts: bool = False,
    compare: Callable[[Recorder], None] | None = None,
) -> tuple[dict[UUID, Recorder], list[Discrepancy]]:
    """:func:`reexecute`'s aggregates, their events not yet collected (``facts``: kept as
    facts, :meth:`Recorder.derived` gives them). ``compare``: called every ``_WINDOW``
    inputs with each aggregate of the round's engine that they or the automatic work changed
    (the shared hand or the participation fed, those the engine's steps changed), to collect
    what they derived so far (the caller compares every aggregate once more at the end)."""
    rid = log[0].originator_id
    eng: Engine | None = None
    joined: dict[UUID, Participation] = {}
    touched: dict[int, Recorder] = {}  # changed since their last comparison, by id's integer
    inputs = 0  # fed since then
    for event in log:
        if type(event) is Deferred:
            cls = event.cls
            if cls is None or not issubclass(cls, Input):
                continue
            # a deferred input (a decision): decoded to be fed (Undecodable if it does not
            # decode: ``replays.verify.verify_bundle`` starts again with every record decoded)
            # and let go once compared equal to its re-derived event (``Deferred.same_as``)
            e: Any = real(event)
        elif not isinstance(event, Input):
            continue
        else:
            e = event
        try:
            eng, fed = _feed(eng, joined, e, facts)
        except DomainError as err:
            return {}, [
                _found(_who(e, rid), e.originator_version, _name(e), "input", "accepted",
                            f"refused: {err.code}: {err}", err.rule,
                            "a stored input is refused when re-executed")
            ]  # fmt: skip
        except (KeyError, AssertionError) as err:
            return {}, [
                _found(_who(e, rid), e.originator_version, _name(e), "input", "accepted",
                            f"{type(err).__name__}: {err}", None,
                            "a stored input cannot be applied to the re-executed round")
            ]  # fmt: skip
        assert eng is not None
        if compare is None:
            while eng.step(_UNLIMITED) is not None:
                pass
            continue
        # the aggregates the inputs and the automatic work changed are compared every
        # ``_WINDOW`` inputs, each once (not after every input: asking an aggregate for its
        # events and resuming its comparison cost about a call each). The automatic work is
        # done ``_STEP`` participations a step (the engine sorts a group once a phase, so a
        # step costs no more the more players there are), and a step that took that many is
        # compared at once: what is held before it is compared is one step's consequences,
        # not a whole phase's (every settlement of the round)
        if fed is not None:
            touched[e.originator_id.int] = fed  # its id
        while (step := eng.step(_STEP)) is not None:
            for agg in step:
                touched[agg.id.int] = cast(Recorder, agg)
            if len(step) >= _STEP:  # a piece of bulk work (hands opened, wagers settled)
                for agg in touched.values():
                    compare(agg)
                touched.clear()
        inputs += 1
        if inputs >= _WINDOW:
            for agg in touched.values():
                compare(agg)
            touched.clear()
            inputs = 0
    assert eng is not None
    aggregates: list[Recorder] = [eng.shared, *eng.parts.values()]
    return {agg.id: agg for agg in aggregates}, []


def _check_streams(
    verdict: Verdict, rid: UUID, stored: dict[UUID, list[Any]], *, numbered: bool = False
) -> bool:
    """Every stream's versions are 1..N and a participation's begins with its ``Joined``;
    False (each break reported) when re-execution cannot be fed these streams. ``numbered``:
    the caller found every stream's versions 1..N as it grouped them (then not walked again)."""
    whole = True
    joined = Participation.Joined
    for oid, events in stored.items():
        # the versions walked only when the caller did not find them 1..N already
        for i, e in enumerate(() if numbered else events, start=1):
            if e.originator_version != i:
                verdict.discrepancies.append(
                    _found(_stream_owner(oid, rid, events), e.originator_version, _name(e),
                                "originator_version", i, e.originator_version, None,
                                "the stream's versions are not 1..N: an event is missing or "
                                "out of place")
                )  # fmt: skip
                whole = False
                break
        first = events[0]  # a deferred record: its class, known without decoding it
        cls = first.cls if type(first) is Deferred else type(first)
        if oid != rid and not (cls is not None and issubclass(cls, joined)):
            verdict.discrepancies.append(
                _found(_stream_owner(oid, rid, events), events[0].originator_version,
                            _name(events[0]), "type",
                            "Participation.Joined", _name(events[0]), "BDL-1",
                            "a participation must begin with the player joining the round")
            )  # fmt: skip
            whole = False
    return whole


def _stream_owner(oid: UUID, rid: UUID, events: list[Any]) -> str:
    """Who a stream of the round is, as a finding names it: the shared hand, or the player
    its participation names."""
    return "shared" if oid == rid else _player_of(events)


def _player_of(events: list[Any]) -> str:
    named = _named(events)
    if named is not None:
        return named
    return str(events[0].originator_id) if events else "?"


def _named(events: list[Any]) -> str | None:
    """The first player ``events`` name (None: none does)."""
    for e in events:
        player = getattr(real(e), "player", None)
        if isinstance(player, str):
            return player
    return None


def _feed(
    eng: Engine | None, joined: dict[UUID, Participation], e: Any, facts: bool = False
) -> tuple[Engine, Recorder | None]:
    """Decide one stored input again through the game core: the command it records
    (``domain.game.commands.command_for``), on the shared
    hand or the participation it belongs to (``facts``: each new aggregate keeps its facts).
    Returns the engine and the aggregate fed, if the engine holds it (a participation is
    the engine's from its first bet on: not when it joins)."""
    # the command is made from the payload's own keys, read by name (``command_for`` reads
    # none of the library's: the event's ``__dict__`` gives what ``payload(e)`` would, without
    # copying it for every input); a fact recorded as it is gets the payload alone
    p = e.__dict__
    name = type(e).__name__
    if isinstance(e, SharedHand.Started):
        shared = SharedHand.opened_by(cast(Start, command_for(name, p)))
        if facts:
            shared.keep_facts()
        eng = Engine(shared)
        return eng, shared
    assert eng is not None, "the round starts first"
    shared = eng.shared
    if isinstance(e, SharedHand.Event):
        shared.execute(command_for(name, p, demand=eng.demand()))
        return eng, shared
    if isinstance(e, Participation.Joined):
        command = cast(Join, command_for(name, p))
        joined[e.originator_id] = (
            Participation.opened_kept(shared, command)
            if facts
            else Participation.opened_by(shared, command)
        )
        return eng, None
    oid = e.originator_id
    part = eng.parts.get(oid) or joined.pop(oid)
    if isinstance(e, Participation.BetPlaced) and shared.phase != BETTING and not shared.finished:
        # recorded after betting closed (a race between processes): re-record it as it was
        # accepted; the engine refunds it (PHASE-1) as the application did
        part.record_input(Fact(name, payload(e), True))
        eng.late.setdefault(part.id, set()).add(p["wager_id"])
    else:
        part.execute(shared, command_for(name, p))
    eng.add(part)
    return eng, part


class _Comparison:
    """One aggregate's re-derived events compared with its stored ones (``recorded``) as they
    come: :meth:`feed` takes the events re-execution derived since the last call (then
    dropped by the caller), :meth:`finish` reports where the whole streams differ, exactly as
    comparing them whole would: each position both have (a different class ends the
    comparison there; a different payload is reported field by field), then the first
    position only one side has. What it keeps between calls: the position reached, the
    first re-derived event (and the first beyond ``recorded``), the player they name, and
    its findings (as arguments, their aggregate named when it is known)."""

    __slots__ = ("extra", "first", "found", "recorded", "seen", "stopped", "who")

    def __init__(self, recorded: list[Any]) -> None:
        self.recorded = recorded
        self.seen = 0  # re-derived events fed so far
        self.stopped = False  # a different class met: nothing after it is compared
        self.first: Any = None
        self.extra: Any = None  # the first re-derived event beyond ``recorded``
        self.who: str | None = None
        self.found: list[tuple[Any, ...]] = []

    def feed(self, redone: list[Any]) -> None:
        """Compare the next re-derived events (in the order the aggregate recorded them)."""
        if not redone:
            return
        if self.who is None:
            self.who = _named(redone)
        if self.seen == 0:
            self.first = redone[0]
        if self.stopped:
            self.seen += len(redone)
            return
        recorded = self.recorded
        found = self.found
        i = self.seen
        self.seen += len(redone)
        n = len(recorded)
        for exp in redone:
            i += 1  # the position of ``exp`` (1-based)
            if i > n:
                if self.extra is None:
                    self.extra = exp
                return
            stored = recorded[i - 1]
            # a stored consequence not decoded yet, the same event as decoding it would
            # show: left undecoded
            if type(stored) is Deferred and stored.same_as(exp):
                continue
            got = real(stored)
            if type(exp) is not type(got):
                found.append((i, _name(got), "type", _name(exp), _name(got),
                              getattr(got, "rule", None),
                              "a different event at this position"))  # fmt: skip
                self.stopped = True
                return
            if same_payload(exp, got):  # nearly every event: no generator made for it
                continue
            for key, want, have in differences(exp, got):
                found.append((i, _name(got), key, want, have, getattr(got, "rule", None),
                              "the recorded value differs from the rules'"))  # fmt: skip

    def finish(self, verdict: Verdict, who: str | None = None) -> bool:
        """Report the findings under ``who`` (by default the player the re-derived events
        name, as :func:`_player_of`); True when the streams are the same."""
        if who is None:
            who = self.who or (str(self.first.originator_id) if self.seen else "?")
        add = verdict.discrepancies.append
        for args in self.found:
            add(_found(who, *args))
        recorded = self.recorded
        if self.stopped or self.seen == len(recorded):
            return not self.found
        # the first position one side has and the other has not
        i = min(self.seen, len(recorded))
        exp = self.extra if self.seen > len(recorded) else None
        got = real(recorded[i]) if i < len(recorded) else None
        e = exp or got
        add(
            _found(
                who,
                i + 1,
                _name(e),
                "event",
                _name(exp) if exp is not None else None,
                _name(got) if got is not None else None,
                getattr(e, "rule", None),
                "re-execution derives this event but it is not recorded"
                if got is None
                else "this recorded event is not derived by re-execution",
            )
        )
        return False


def _compare(verdict: Verdict, who: str, redone: list[Any], recorded: list[Any]) -> bool:
    """Report where ``redone`` and ``recorded`` differ; True when they do not."""
    compared = _Comparison(recorded)
    compared.feed(redone)
    return compared.finish(verdict, who)


def _check_hands(
    verdict: Verdict,
    rid: UUID,
    stored: dict[UUID, list[Any]],
    same: dict[UUID, Aggregate] | None = None,
) -> None:
    """D9: recorded hands = hands replayed from the sequence and the decision log alone. An
    aggregate in ``same`` (its stored events equal its re-derived ones) is taken as it is;
    any other is rebuilt from its stored events."""
    same = same or {}
    shared = same.get(rid) or _rebuild(verdict, "shared", stored[rid])
    if not isinstance(shared, SharedHand):
        return

    # the shared hand's cards, read once for every player (each a read of its state); each
    # different log replayed once, the players who share it given that replay renamed
    # (``H.Replays``: a few dozen logs among thousands of players)
    initial, sequence, played = shared.initial, shared.sequence, shared.played
    replays: dict[int, H.Replays] = {}  # by the rules object's id (each player's own rules)
    for pid, events in stored.items():
        if pid == rid:
            continue
        part = same.get(pid) or _rebuild(
            verdict, str(getattr(real(events[0]), "player", pid)), events
        )
        if not isinstance(part, Participation) or part.state is None:
            continue
        rules = part.rules
        r = replays.get(id(rules))
        if r is None or r.rules is not rules:
            r = replays[id(rules)] = H.Replays(initial, sequence, rules, played=played)
        replayed = r.of(part.player, part.log)
        recorded = part.state
        if replayed.hands != recorded.hands:
            verdict.discrepancies.append(
                _found(
                    part.player,
                    None,
                    "",
                    "hands",
                    _codes(replayed),
                    _codes(part.state),
                    "D9",
                    "recorded hands differ from the hands replayed from the "
                    "sequence and the decision log",
                )
            )
        taken = H.consumed(part.state)
        if taken != sequence[: len(taken)]:
            verdict.discrepancies.append(
                _found(
                    part.player,
                    None,
                    "",
                    "sequence",
                    [c.code for c in taken],
                    [c.code for c in sequence],
                    "D9",
                    "the player's cards after the shared ones are not a prefix of the sequence",
                )
            )


def _rebuild(verdict: Verdict, who: str, events: list[Any]) -> Aggregate | None:
    """The aggregate from its stored events, or None (reported) if they do not rebuild it."""
    agg: Any = None
    events = [real(e) for e in events]  # deferred records decoded (outside the try: see real)
    try:
        for e in events:
            agg = e.mutate(agg)
    except Exception as exc:  # a gap or a foreign event: the record itself is broken
        verdict.discrepancies.append(
            _found(who, getattr(e, "originator_version", None), _name(e), "sequence",
                        None, str(exc), None, "the stored events do not rebuild the aggregate")
        )  # fmt: skip
        return None
    return agg if isinstance(agg, Aggregate) else None


def _codes(state: H.PlayerHands) -> dict[str, list[str]]:
    return {h.id: [c.code for c in h.cards] for h in state.hands}


def _name(e: Any) -> str:
    if type(e) is Deferred:
        return e.name  # its topic's class, which it decodes to
    return type(e).__qualname__ if e is not None else ""


def _who(e: Any, rid: UUID) -> str:
    if e.originator_id == rid:
        return "shared"
    return str(getattr(e, "player", e.originator_id))


__all__ = ["Discrepancy", "Verdict", "reexecute", "verify_log", "verify_round"]
