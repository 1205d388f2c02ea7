"""D9 in a boundless verification when players share a decision log
(``domain.game.sequence.Replays``: each different log replayed once, the others' replays
renamed): the hands replayed for every player are that player's own, and a tampered hand of a
player whose log an earlier player had is reported under that player, with their hands."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from roundkit import Kit, stack

from domain.boundless.participation import Participation
from domain.game import sequence as H
from replays.boundless import verify_log

V = "boundless"


def same_logs() -> Kit:
    """A and B split their 8s and stand on both hands (the same log); C hits once."""
    order = stack(
        V, [["8H", "8D"]], up="6C", hole="9S", draws=["3C", "9D", "KH"], dealer_draws=["5S"]
    )
    kit = Kit(V, order, players=["A", "B", "C"])
    for p in "ABC":
        kit.bet(p, 10)
    kit.close()
    for p in "AB":
        kit.decide(p, "split")
    kit.decide("C", "hit")
    for p in "AB":
        kit.decide(p, "stand")
        kit.decide(p, "stand")
    if kit.phase == "playing":
        kit.decide("C", "stand")
    assert kit.phase == "settled"
    return kit


def test_players_with_the_same_log_verify_and_replay_once() -> None:
    kit = same_logs()
    log = kit.app.boundless.round_log(kit.rid)
    made: list[str] = []
    real_replay = H.replay

    def counting(player, *args, **kwargs):  # type: ignore[no-untyped-def]
        made.append(player)
        return real_replay(player, *args, **kwargs)

    H.replay = counting  # type: ignore[assignment]
    try:
        verdict = verify_log(log)
    finally:
        H.replay = real_replay  # type: ignore[assignment]
    assert verdict.ok, verdict.as_json()
    assert sorted(made) == ["A", "C"]  # B's hands: A's replay renamed


def _tampered(kit: Kit, hand: str) -> list:
    log = kit.app.boundless.round_log(kit.rid)
    i = next(
        i for i, e in enumerate(log) if isinstance(e, Participation.CardToHand) and e.hand == hand
    )
    log[i] = dataclasses.replace(log[i], card="AS")
    return log


def test_a_tampered_hand_of_a_player_sharing_an_earlier_log_is_named() -> None:
    kit = same_logs()
    verdict = verify_log(_tampered(kit, "B.2"))
    assert not verdict.ok
    d9 = [d for d in verdict.discrepancies if d.field == "hands"]
    assert [(d.aggregate, d.rule) for d in d9] == [("B", "D9")]
    (d,) = d9
    # the replay is B's own (its hands named after B), the recorded hands B's tampered ones
    assert d.expected == {"B.1": ["8H", "3C"], "B.2": ["8D", "9D"]}
    assert d.recorded == {"B.1": ["8H", "3C"], "B.2": ["8D", "AS"]}


def test_a_tampered_hand_of_the_first_player_of_a_log_is_named() -> None:
    kit = same_logs()
    verdict = verify_log(_tampered(kit, "A.1"))
    d9 = [
        (d.aggregate, d.expected, d.recorded) for d in verdict.discrepancies if d.field == "hands"
    ]
    assert d9 == [
        (
            "A",
            {"A.1": ["8H", "3C"], "A.2": ["8D", "9D"]},
            {"A.1": ["8H", "AS"], "A.2": ["8D", "9D"]},
        )
    ]
