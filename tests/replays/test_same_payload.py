"""``replays.reexecute.same_payload`` (the comparison re-execution makes of every event before
it looks for the fields that differ) says two events' payloads are equal exactly when
``payload(a) == payload(b)`` does: for the events of real rounds compared with themselves, with
their re-execution, with the other events of the round, and with copies changed in one field,
missing one, holding one more, or holding a value equal without being the same object; and
the same with the first event of each pair a kept fact (its payload alone)."""

from __future__ import annotations

import copy
import itertools
from decimal import Decimal
from typing import Any

from cli.simulate import simulate
from domain.application import RoundAudit
from replays.reexecute import differences, payload, reexecute, same_payload


def _events() -> list[Any]:
    app = RoundAudit()
    out: list[Any] = []
    for variant in ("european", "deluxe"):
        for rid in simulate(app, variant=variant, rounds=2, players=2).round_ids:
            out += list(app.events.get(app.round(rid).id))
    return out


def _variants(e: Any) -> list[Any]:
    """Copies of ``e`` changed in one way each."""
    out = []
    for key in list(e.__dict__):
        for value in (None, "x", Decimal("NaN"), copy.deepcopy(e.__dict__[key])):
            changed = copy.copy(e)
            object.__setattr__(changed, "__dict__", {**e.__dict__, key: value})
            out.append(changed)
        missing = copy.copy(e)
        object.__setattr__(missing, "__dict__", {k: v for k, v in e.__dict__.items() if k != key})
        out.append(missing)
    extra = copy.copy(e)
    object.__setattr__(extra, "__dict__", {**e.__dict__, "extra_field": 1})
    out.append(extra)
    return out


def _payload_only(e: Any) -> Any:
    """``e`` as a kept fact: an instance of its class holding its payload alone."""
    kept = object.__new__(type(e))
    kept.__dict__.update(payload(e))
    return kept


def test_same_payload_agrees_with_payload_equality() -> None:
    events = _events()
    produced, problems = reexecute(events[:40])
    assert not problems
    pairs = [(a, a) for a in events]
    pairs += list(zip(produced, events[:40], strict=False))
    pairs += list(itertools.pairwise(events))
    for e in events[:60]:
        pairs += [(e, v) for v in _variants(e)] + [(v, e) for v in _variants(e)]
    # kept facts (their payload alone, compared by the other branch): re-executed ones, and
    # a copy of every event and variant above holding only its payload
    kept, problems = reexecute(events[:40], facts=True)
    assert not problems
    pairs += list(zip(kept[1:], events[1:40], strict=False))
    pairs += [(_payload_only(a), b) for a, b in list(pairs)]
    verdicts = [same_payload(a, b) for a, b in pairs]
    assert verdicts == [payload(a) == payload(b) for a, b in pairs]
    assert True in verdicts
    assert False in verdicts
    # and re-execution's comparison: no difference named where the payloads are equal
    assert all(
        not list(differences(a, b)) for (a, b), same in zip(pairs, verdicts, strict=True) if same
    )
