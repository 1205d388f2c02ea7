"""A classic round's kept facts compared with its stored events over the whole round at once
(``replays.reexecute._all_same``, branch ``vcpu6``): when it says the round is the one the
rules give, the loop comparing event by event finds nothing; a round it does not pass goes
through that loop, whose findings are the verdict. On every classic variant, untouched rounds
pass without the loop; rounds tampered with in ways only a field count or an id catches (a
payload field added to a stored event, one removed, an input's field dropped, an event read
with an equal round id in another object, a library field missing, a value changed) give the
loop's verdict, and every change to what the rules give is found."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest

import replays.reexecute as reexecute
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.events import Consequence, Input
from domain.round import Round
from replays.reexecute import verify_events

VARIANTS = ("deluxe", "multihand", "lucky7", "european")


@pytest.fixture(scope="module")
def logs() -> dict[str, list[list[Any]]]:
    app = RoundAudit()
    try:
        out: dict[str, list[list[Any]]] = {}
        for variant in VARIANTS:
            report = simulate(app, variant=variant, rounds=4, players=3)
            out[variant] = [
                list(app.events.get(Round.create_id(f"sim-{variant}", n)))
                for n in range(1, len(report.round_ids) + 1)
            ]
        return out
    finally:
        app.close()


def _at(log: list[Any], kind: type, change: Callable[[Any], Any]) -> list[Any]:
    i = next(i for i, e in enumerate(log) if i > 0 and isinstance(e, kind))
    return [*log[:i], change(dataclasses.replace(log[i])), *log[i + 1 :]]


def _put(name: str, value: Any) -> Callable[[Any], Any]:
    def change(e: Any) -> Any:
        e.__dict__[name] = value
        return e

    return change


def _drop(name: str) -> Callable[[Any], Any]:
    def change(e: Any) -> Any:
        del e.__dict__[name]
        return e

    return change


def _same_ids(log: list[Any]) -> list[Any]:
    """Every event read with the round's id, each in an object of its own (equal ids)."""
    return [dataclasses.replace(e, originator_id=UUID(str(e.originator_id))) for e in log]


#: each tamper, and whether the verdict finds something
TAMPERS: dict[str, tuple[Callable[[list[Any]], list[Any]], bool]] = {
    "untouched": (lambda log: log, False),
    "a payload field added to a consequence": (
        lambda log: _at(log, Consequence, _put("extra", 1)),
        True,
    ),
    "a payload field added to an input": (lambda log: _at(log, Input, _put("note", "x")), True),
    "a consequence's rule removed": (lambda log: _at(log, Consequence, _drop("rule")), True),
    "an input's request id removed": (lambda log: _at(log, Input, _drop("request_id")), True),
    "a consequence's actor changed": (
        lambda log: _at(log, Consequence, _put("actor", {"kind": "system", "id": "other"})),
        True,
    ),
    "the ids equal, other objects": (_same_ids, False),
    "a timestamp missing": (lambda log: _at(log, Consequence, _drop("timestamp")), False),
}


def _findings(log: list[Any]) -> list[dict[str, Any]]:
    return [d.as_json() for d in verify_events("r", log).discrepancies]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("tamper", list(TAMPERS))
def test_the_whole_round_check_gives_the_loops_verdict(
    logs: dict[str, list[list[Any]]],
    variant: str,
    tamper: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    change, found = TAMPERS[tamper]
    passed: list[bool] = []
    whole = reexecute._all_same

    def spied(core: Any, stored: Any) -> bool:
        passed.append(whole(core, stored))
        return passed[-1]

    for log in logs[variant]:
        changed = change(log)
        monkeypatch.setattr(reexecute, "_all_same", spied)
        with_it = _findings(changed)
        monkeypatch.setattr(reexecute, "_all_same", lambda core, stored: False)
        assert with_it == _findings(changed)  # the loop's own verdict
        assert bool(with_it) == found, with_it
    # untouched rounds pass without the loop (a library field is not compared); every other
    # one went through it (an input refused is not compared at all)
    assert bool(passed and all(passed)) == (tamper in ("untouched", "a timestamp missing"))
