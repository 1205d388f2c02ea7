"""The game core (domain/game) on its own: no aggregate, no store.

A round of a classic variant is played by ``table.decide`` alone, input after input; each
decision is pure (the state it was given is unchanged), folding its facts with ``evolve`` gives
the state it reports, and a refused input decides nothing."""

from __future__ import annotations

import doctest
from decimal import Decimal
from functools import reduce

import pytest

from domain.cards import Card
from domain.errors import BetLimit, RequestIdReused, RoundClosed, UnknownPlayer, refuse_reused
from domain.game import facts, hands, phases, table, wagers
from domain.game import table_state as TS
from domain.game.facts import Fact
from domain.game.state import replace
from domain.rules import get_rules

D = Decimal


def fold(state: TS.TableState, decided: list[Fact]) -> TS.TableState:
    return reduce(lambda s, f: TS.evolve(s, f.name, f.fields), decided, state)


def opened(variant: str = "multihand") -> TS.TableState:
    fact = table.start(
        table.Start(table_id="t", round_number=1, rules_key=variant, shoe_id="s", production=False)
    )
    assert (fact.name, fact.input) == ("Started", True)
    return TS.started(fact.fields)


def run(state: TS.TableState, command: table.Command) -> tuple[TS.TableState, list[Fact]]:
    decision = table.decide(state, command)
    assert fold(state, decision.facts) == decision.state
    return decision.state, decision.facts


def test_doctests() -> None:
    for module in (facts, hands, phases, wagers):
        assert doctest.testmod(module).failed == 0


def test_a_round_is_played_by_the_core_alone() -> None:
    s = opened()
    s, f = run(s, table.PlaceBet(player="ana", kind="main", amount="10", balance=D(100), spot="1"))
    assert [x.name for x in f] == ["BetPlaced"]
    s, f = run(s, table.CloseBetting())
    assert [x.name for x in f] == ["BettingClosed", "HandOpened"]
    for code in ("10H", "9S", "7D"):  # box 1, dealer up, box 1: the hole card follows
        s, _ = run(s, table.Deal(card=Card.parse(code)))
    s, f = run(s, table.Deal(card=Card.parse("8C")))  # the hole card: 17 v 9 up, no check
    assert [x.name for x in f] == ["CardDealt", "CardToDealer", "PlayStarted"]
    s, f = run(s, table.Decide(player="ana", action="stand", balance=D(90)))
    names = [x.name for x in f]
    assert names[:3] == ["DecisionMade", "HandStood", "DealerTurnStarted"]
    assert names[-2:] == ["WagerSettled", "RoundSettled"]  # 9+8 = 17 stands: no card
    settled = next(x for x in f if x.name == "WagerSettled").fields
    assert (settled["result"], settled["payout"], settled["rule"]) == ("push", "10.00", "OUT-4")
    assert s.phase == "settled"


def test_decide_is_pure_and_its_facts_fold_to_its_state() -> None:
    s = opened()
    before = s
    d = facts.Decision(s, TS.evolve)
    table._place_bet(
        d, table.PlaceBet(player="ana", kind="main", amount="5", balance=D(9), spot="2")
    )
    assert s is before
    assert not s.wagers
    assert fold(s, d.facts) == d.state
    assert d.state.wagers["2:main"].stake == D("5.00")


def test_a_refused_input_decides_nothing() -> None:
    s = opened()
    s, _ = run(s, table.PlaceBet(player="ana", kind="main", amount="5", balance=D(9), spot="1"))
    kept = s
    with pytest.raises(UnknownPlayer):  # betting is still open: no hand to play yet
        table.decide(s, table.Decide(player="ana", action="hit", balance=D(4)))
    assert s is kept
    assert s.phase == "betting"


def test_a_reused_request_id_is_refused_by_the_core() -> None:
    """A request id names one input of its round: the core refuses a second input under it
    (request-id-reused), never drops it in silence."""
    s = opened()
    bet = table.PlaceBet(
        player="ana", kind="main", amount="5", balance=D(9), spot="1", request_id="r1"
    )
    s, decided = run(s, bet)
    assert decided
    other = table.PlaceBet(
        player="bea", kind="main", amount="5", balance=D(9), spot="2", request_id="r1"
    )
    with pytest.raises(RequestIdReused, match=rf"'r1' is already recorded in round {s.label}:"):
        table.decide(s, other)


def test_a_closed_round_refuses_inputs_naming_itself() -> None:
    """ERR-1, PHASE-*: the refusals name the round (its label, written only when refusing)."""
    s = opened()
    bet = table.PlaceBet(player="ana", kind="main", amount="5", balance=D(9), spot="1")
    with pytest.raises(RoundClosed, match=rf"^round {s.label} is paused \(ERR-1\)"):
        table.decide(replace(s, paused=True), bet)
    with pytest.raises(RoundClosed, match=rf"^round {s.label} is settled$"):
        table.decide(replace(s, phase="settled"), bet)
    with pytest.raises(RoundClosed, match=rf"^round {s.label} is being cancelled \(ERR-1\)"):
        phases.check_open(s, cancelling=True)
    phases.check_open(s)  # open: passes


def test_a_reused_request_id_is_refused_naming_its_scope_given_or_named_late() -> None:
    named: list[str] = []

    def scope() -> str:
        named.append("asked")
        return "the scope"

    refuse_reused("r1", frozenset({"r2"}), scope)
    refuse_reused(None, frozenset({"r2"}), scope)
    assert named == []  # no refusal: the scope is never named
    with pytest.raises(RequestIdReused, match="'r2' is already recorded in the scope:"):
        refuse_reused("r2", frozenset({"r2"}), scope)
    with pytest.raises(RequestIdReused, match="'r2' is already recorded in a text:"):
        refuse_reused("r2", frozenset({"r2"}), "a text")


def test_every_consequence_names_its_rule_and_every_input_its_actor() -> None:
    s = opened("european")
    s, f1 = run(s, table.PlaceBet(player="a", kind="main", amount="10", balance=D(50), spot="1"))
    s, f2 = run(s, table.CloseBetting())
    for code in ("5H", "9S", "6D"):
        s, _ = run(s, table.Deal(card=Card.parse(code)))
    s, f3 = run(s, table.Decide(player="a", action="double", balance=D(40)))
    s, f4 = run(s, table.Deal(card=Card.parse("KC")))
    for x in [*f1, *f2, *f3, *f4]:
        if x.input:
            assert {"actor", "request_id", "client_time"} <= set(x.fields), x.name
        else:
            assert isinstance(x.fields["rule"], str), x.name
            assert x.fields["rule"], x.name


@pytest.mark.parametrize(
    ("kind", "amount", "setting"),
    [
        ("main", "0.99", "min_bet"),
        ("main", "5000.01", "max_bet"),
        ("pair", "0.49", "side_min_bet"),
        ("pair", "1000.01", "side_max_bet"),
    ],
)
def test_d18_a_limit_refusal_names_the_limit_and_its_setting(kind, amount, setting) -> None:
    rules = get_rules("deluxe")
    with pytest.raises(BetLimit) as info:
        wagers.check_stake(rules, kind, D(amount))
    assert info.value.setting == f"deluxe/1:{setting}"
    assert f"setting {setting} of rules deluxe/1" in info.value.message
