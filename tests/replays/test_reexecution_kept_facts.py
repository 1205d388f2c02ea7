"""Verification re-executes a classic round on the game core alone, keeping its facts
instead of recording the library's events on a ``Round`` (``replays.reexecute.verify_events``,
``reexecute(..., facts=True)``): the verdict is the very one re-executing with events gives
(``verify_events(..., facts=False)``), finding for finding, positions included, on untouched
rounds of every classic variant and on logs tampered with (a consequence's field altered, a
consequence deleted, one added, two swapped, an input altered so that it is refused, one that
cannot be decided (a malformed balance, a missing field), the round started again midway, an
event's round id changed, every event's, the round's start moved to another table, the
versions broken), and the kept facts are the events, field for field."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.events import Consequence, Input
from domain.round import Round
from replays.reexecute import payload, reexecute, verify_events

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


def _first(log: list[Any], kind: type, after: int = 1) -> int:
    return next(i for i, e in enumerate(log) if i >= after and isinstance(e, kind))


def _field_changed(log: list[Any]) -> list[Any]:
    i = _first(log, Round.CardToHand)
    return [*log[:i], dataclasses.replace(log[i], total=log[i].total + 1), *log[i + 1 :]]


def _settlement_changed(log: list[Any]) -> list[Any]:
    i = _first(log, Round.WagerSettled)
    return [*log[:i], dataclasses.replace(log[i], payout="999999.00", rule="OUT-0"), *log[i + 1 :]]


def _consequence_deleted(log: list[Any]) -> list[Any]:
    i = _first(log, Consequence)
    return log[:i] + log[i + 1 :]


def _consequence_added(log: list[Any]) -> list[Any]:
    i = _first(log, Round.CardToHand)
    return [*log[: i + 1], log[i], *log[i + 1 :]]


def _swapped(log: list[Any]) -> list[Any]:
    i = _first(log, Consequence)
    return [*log[:i], log[i + 1], log[i], *log[i + 2 :]]


def _input_refused(log: list[Any]) -> list[Any]:
    i = _first(log, Round.BetPlaced)
    return [*log[:i], dataclasses.replace(log[i], stake="-5.00"), *log[i + 1 :]]


def _other_round_id(log: list[Any]) -> list[Any]:
    i = _first(log, Consequence)
    other = Round.create_id("elsewhere", 1)
    return [*log[:i], dataclasses.replace(log[i], originator_id=other), *log[i + 1 :]]


def _other_table(log: list[Any]) -> list[Any]:
    return [dataclasses.replace(log[0], table_id="another-table"), *log[1:]]


def _version_gap(log: list[Any]) -> list[Any]:
    i = _first(log, Input, after=2)
    later = dataclasses.replace(log[i], originator_version=log[i].originator_version + 1)
    return [*log[:i], later, *log[i + 1 :]]


def _no_start(log: list[Any]) -> list[Any]:
    return log[1:]


def _started_again(log: list[Any]) -> list[Any]:
    i = _first(log, Round.CardDealt)
    return [*log[:i], log[0], *log[i:]]


def _malformed_input(log: list[Any]) -> list[Any]:
    i = _first(log, Round.BetPlaced)
    return [*log[:i], dataclasses.replace(log[i], balance_seen="lots"), *log[i + 1 :]]


def _input_missing_field(log: list[Any]) -> list[Any]:
    i = _first(log, Round.CardDealt)
    broken = dataclasses.replace(log[i])
    del broken.__dict__["card"]
    return [*log[:i], broken, *log[i + 1 :]]


def _every_id_other(log: list[Any]) -> list[Any]:
    other = Round.create_id("elsewhere", 1)
    return [dataclasses.replace(e, originator_id=other) for e in log]


TAMPERS: dict[str, Callable[[list[Any]], list[Any]]] = {
    "untouched": lambda log: log,
    "field changed": _field_changed,
    "settlement changed": _settlement_changed,
    "consequence deleted": _consequence_deleted,
    "consequence added": _consequence_added,
    "swapped": _swapped,
    "input refused": _input_refused,
    "other round id": _other_round_id,
    "other table": _other_table,
    "version gap": _version_gap,
    "no start": _no_start,
    "started again": _started_again,
    "malformed input": _malformed_input,
    "input missing a field": _input_missing_field,
    "every id another round's": _every_id_other,
}


def _findings(log: list[Any], *, facts: bool) -> list[dict[str, Any]]:
    return [d.as_json() for d in verify_events("r", log, facts=facts).discrepancies]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("tamper", list(TAMPERS))
def test_kept_facts_give_the_verdict_events_give(
    logs: dict[str, list[list[Any]]], variant: str, tamper: str
) -> None:
    for log in logs[variant]:
        changed = TAMPERS[tamper](log)
        kept = _findings(changed, facts=True)
        assert kept == _findings(changed, facts=False)
        assert bool(kept) == (tamper != "untouched"), kept  # every tamper is found


@pytest.mark.parametrize("variant", VARIANTS)
def test_kept_facts_are_the_events_field_for_field(
    logs: dict[str, list[list[Any]]], variant: str
) -> None:
    for log in logs[variant]:
        with_events, refused = reexecute(log)
        with_facts, refused_too = reexecute(log, facts=True)
        assert not refused
        assert not refused_too
        assert (
            [type(e) for e in with_facts]
            == [type(e) for e in with_events]
            == [type(e) for e in log]
        )
        assert [payload(e) for e in with_facts] == [payload(e) for e in with_events]
        # the first carries the round's id (the one the library gives the round it opens),
        # which the other kept facts lack
        assert with_facts[0].originator_id == log[0].originator_id
        assert all("originator_id" not in e.__dict__ for e in with_facts[1:])
