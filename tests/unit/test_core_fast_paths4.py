"""The game core's fast paths of branch ``vcore``: a round's table copied as its ``__dict__``
(``domain.game.state._dict_replacer``), the stored inputs' readers (``command_for``), and the
card a round needs read as its target (``table_state.card_target``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest

from domain.game import commands, shared, table_state
from domain.game.commands import SUPERVISOR_ACTIONS, command_for
from domain.game.phases import RoundBase
from domain.game.state import replace
from domain.game.table_state import TableState
from domain.rules import get_rules


@dataclass(frozen=True)
class _Derived:
    """A class without slots whose ``total`` is derived from ``c`` alone."""

    a: int
    c: tuple[int, ...] = ()
    total: int = field(init=False, default=0)
    DERIVED_FROM: ClassVar[tuple[str, ...]] = ("c",)
    made: ClassVar[list[int]] = []

    def __post_init__(self) -> None:
        _Derived.made.append(self.a)
        object.__setattr__(self, "total", self.a + sum(self.c))


def test_a_round_s_table_is_copied_as_its_dict() -> None:
    """The classes copied by two dict updates: their fields live in the instance's dict."""
    for cls in (RoundBase, TableState, shared.SharedState):
        assert "__slots__" not in vars(cls), cls.__qualname__
    s = TableState(get_rules("european"), "t1", 3, "european", "shoe", 2, True)
    copy = replace(s, phase="dealing", players=("ana",))
    want = {**{f.name: getattr(s, f.name) for f in dataclasses.fields(s)}}
    want.update(phase="dealing", players=("ana",))
    assert {f.name: getattr(copy, f.name) for f in dataclasses.fields(copy)} == want
    assert copy == dataclasses.replace(s, phase="dealing", players=("ana",))
    assert copy.__dict__ is not s.__dict__
    assert s.phase == "betting"
    assert s.players == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        copy.phase = "x"  # type: ignore[misc]


def test_a_dict_copy_derives_again_only_from_its_sources() -> None:
    obj = _Derived(1, (2, 3))
    _Derived.made.clear()
    kept = replace(obj, a=5)
    assert kept.total == obj.total == 6
    assert _Derived.made == []
    derived = replace(obj, c=(10,))
    assert derived.total == 11
    assert _Derived.made == [1]
    assert derived == dataclasses.replace(obj, c=(10,))


_INPUTS: dict[str, dict[str, Any]] = {
    "Started": {
        "table_id": "t1",
        "round_number": 2,
        "rules_key": "european",
        "shoe_id": "s1",
        "shoe_round": 1,
        "production": True,
    },
    "Joined": {"round_id": "r", "player": "ana"},
    "BetPlaced": {"player": "ana", "kind": "main", "stake": "10", "balance_seen": "100"},
    "DecisionPreselected": {"player": "ana", "action": "hit", "hand": "1"},
    "BettingClosed": {},
    "CardDealt": {"card": "AS", "shoe_position": 7},
    "DecisionMade": {
        "player": "ana",
        "action": "double",
        "hand": "1",
        "amount": None,
        "balance_seen": "50",
        "others_balance": {"bo": "20"},
    },
    "DecisionTimedOut": {"player": "ana", "hand": "1"},
    "PlayerDisconnected": {"player": "ana"},
    "InsuranceWindowClosed": {},
    **{name: {"reason": "R1"} for name in SUPERVISOR_ACTIONS},
}
_SENT = {"actor": {"kind": "player", "id": "ana"}, "request_id": "q1", "client_time": "t"}


def test_every_stored_input_has_a_reader() -> None:
    assert set(commands._READERS) == set(_INPUTS)


@pytest.mark.parametrize("name", sorted(_INPUTS))
def test_each_reader_reads_the_sender_first_then_the_input(name: str) -> None:
    """The command carries the sender's fields and the input's own; a payload without the
    sender's fields is refused for them first, whatever else it lacks."""
    c = command_for(name, {**_INPUTS[name], **_SENT}, demand=4)
    assert (c.actor, c.request_id, c.client_time) == (
        _SENT["actor"],
        _SENT["request_id"],
        _SENT["client_time"],
    )
    for missing in _SENT:
        with pytest.raises(KeyError) as refused:
            command_for(name, {k: v for k, v in _SENT.items() if k != missing})
        assert refused.value.args == (missing,)


def test_the_readers_read_the_input_s_fields() -> None:
    card = command_for("CardDealt", {**_INPUTS["CardDealt"], **_SENT}, demand=4)
    assert isinstance(card, commands.Deal)
    assert (card.card.code, card.shoe_position, card.demand) == ("AS", 7, 4)
    bet = command_for("BetPlaced", {**_INPUTS["BetPlaced"], **_SENT, "requested": "12"})
    assert isinstance(bet, commands.PlaceBet)
    assert (bet.player, bet.kind, bet.amount, str(bet.balance), bet.spot) == (
        "ana",
        "main",
        "12",
        "100",
        None,
    )
    decision = command_for("DecisionMade", {**_INPUTS["DecisionMade"], **_SENT})
    assert isinstance(decision, commands.Decide)
    assert decision.balance_of is not None
    assert (decision.action, str(decision.balance), decision.amount) == ("double", "50", None)
    assert (str(decision.balance_of("bo")), str(decision.balance_of("x"))) == ("20", "0")
    pause = command_for("Paused", {**_INPUTS["Paused"], **_SENT})
    assert isinstance(pause, commands.Supervise)
    assert (pause.what, pause.reason) == ("pause", "R1")
    with pytest.raises(TypeError, match="no command re-executes HandStood"):
        command_for("HandStood", _SENT)


def test_card_needed_is_the_card_target_as_the_view_shows_it() -> None:
    s = TableState(get_rules("european"), "t1", 3, "european", "shoe", 2, True)
    assert table_state.card_target(s) is None
    assert table_state.card_needed(s) is None
    dealing = replace(s, phase="dealing", deal_plan=("1", "dealer", "1"))
    assert table_state.card_target(dealing) == "1"
    assert table_state.card_needed(dealing) == {"for": "1"}
