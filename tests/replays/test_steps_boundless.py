"""The step-by-step replay of a boundless round (``replays.steps``): one SharedHand and one
Participation per player, merged in commit order, folded event by event into the view the
application gives, with each step's balances and wallet movements; a tampered list stops the
replay at the position that cannot be applied; ``roundaudit replay`` prints it.

The round of most tests (three players on the shared hand 8H 8D against 6C, hole 9S; the
sequence 3C 9D KH, the dealer's draw 5S): A splits, A.1 takes 3C (D9), doubles and takes 9D,
A.2 takes KH and stands; B hits (3C: B's own first card of the sequence) and stands, with a Pair
side bet; C doubles on 3C. The dealer makes 6 9 5 = 20.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
import pytest
from eventsourcing.utils import get_topic

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from roundkit import Kit, stack

from cli.main import main
from domain.application import RoundAudit
from domain.boundless.service import Bet, Decision
from domain.persistence import environment_for
from domain.wallet import Wallet
from replays.bundle import MONEY_EVENTS, Decoded, RoundBundle, StoreReader
from replays.chain import Record
from replays.steps import (
    Replay,
    Step,
    iter_bundle,
    json_chunks,
    replay_bundle,
    replay_text,
    step_lines,
)

V = "boundless"
CARDS = stack(V, [["8H", "8D"]], up="6C", hole="9S", draws=["3C", "9D", "KH"], dealer_draws=["5S"])


def bundle_of(app: RoundAudit, rid: str, *, money: bool = True) -> RoundBundle:
    """The round as ``replay_bundle`` receives it: every stream merged in log order, and the
    players' wallet movements of this round."""
    decoded = [
        Decoded(Record(e.originator_id, e.originator_version, get_topic(type(e)), b""), e)
        for e in app.boundless.round_log(rid)
    ]
    b = RoundBundle(UUID(rid), decoded)
    if money:
        reader = StoreReader(app)
        for player in b.players():
            b.money += [
                d
                for d in reader.stream(Wallet.create_id(player))
                if isinstance(d.event, MONEY_EVENTS) and str(d.event.round_id) == rid
            ]
    return b


@dataclass
class Played:
    app: RoundAudit
    rid: str
    bundle: RoundBundle
    replay: Replay

    def steps(self, event: str, owner: str | None = None) -> list[Step]:
        return [s for s in self.replay.steps if s.event == event and owner in (None, s.owner)]

    def step(self, event: str, owner: str | None = None, **payload: Any) -> Step:
        """The one step of ``event`` (of ``owner``) whose stored event has ``payload``."""
        found = [
            s
            for s in self.steps(event, owner)
            if all(
                getattr(self.bundle.round[s.position - 1].event, k) == v for k, v in payload.items()
            )
        ]
        assert len(found) == 1, (event, owner, payload, [s.summary for s in found])
        return found[0]


def hands(step: Step, player: str | None = None) -> dict[str, list[str]]:
    return {
        h["hand"]: h["cards"] for h in step.view["hands"] if player is None or h["player"] == player
    }


def wagers(step: Step) -> dict[str, tuple[str, bool, str | None, str]]:
    """(stake, settled, result, payout) by wager id."""
    return {
        w["wager_id"]: (w["stake"], w["settled"], w["result"], w["payout"])
        for w in step.view["wagers"]
    }


@pytest.fixture(scope="module")
def played() -> Iterator[Played]:
    app = RoundAudit(env=environment_for("sqlite:///:memory:"))
    kit = Kit(V, CARDS, players=["A", "B", "C"], app=app)
    for p in "ABC":
        kit.bet(p, 10)
    kit.side("B", "pair", 5)
    kit.close()
    kit.decide("A", "split")
    kit.decide("B", "hit")
    kit.decide("C", "double")
    kit.decide("B", "stand")
    kit.decide("A", "double")
    kit.decide("A", "stand")
    assert kit.phase == "settled"
    bundle = bundle_of(app, kit.rid)
    yield Played(app, kit.rid, bundle, replay_bundle(bundle))
    app.close()


# ---------------------------------------------------------------------------- the steps
def test_every_event_is_a_step_at_its_place_in_the_merged_list(played: Played) -> None:
    r = played.replay
    assert r.stopped is None
    assert [s.position for s in r.steps] == list(range(1, len(played.bundle.round) + 1))
    assert r.steps[0].event == "SharedHand.Started"
    assert r.steps[0].owner == "shared"
    assert {s.event.partition(".")[0] for s in r.steps} == {"SharedHand", "Participation"}
    decision = played.step("Participation.DecisionMade", "B", action="hit")
    assert decision.kind == "input"
    assert decision.summary.startswith("B: hit on hand B (open: hit, stand, double, split")
    assert played.step("Participation.HandStood", "C").summary == "C: hand C stands on 19 (double)"
    assert all(s.view["round_id"] == played.rid for s in r.steps)


def test_after_the_bets_the_stakes_and_balances_are_shown(played: Played) -> None:
    rid = played.rid
    pair = played.step("Participation.BetPlaced", "B", kind="pair")
    assert wagers(pair) == {
        "A:main": ("10.00", False, None, "0.00"),
        "B:main": ("10.00", False, None, "0.00"),
        "C:main": ("10.00", False, None, "0.00"),
        "B:pair:B": ("5.00", False, None, "0.00"),
    }
    assert pair.balances == {"A": "1000.00", "B": "990.00", "C": "1000.00"}
    assert pair.movements == [f"{rid}/B:pair:B/stake: StakeDebited 5.00, balance after 985.00"]
    assert pair.view["phase"] == "betting"
    assert pair.view["hands"] == []
    assert pair.summary == "B: bets 5.00 (pair), balance seen 990.00"
    closed = played.step("SharedHand.BettingClosed")
    assert (closed.view["phase"], closed.changed, closed.movements) == ("dealing", [], [])


def test_after_the_deal_every_player_holds_the_shared_cards(played: Played) -> None:
    opened = played.step("SharedHand.HandsOpened")
    assert opened.view["shared"] == ["8H", "8D"]
    assert hands(opened) == {"A": ["8H", "8D"], "B": ["8H", "8D"], "C": ["8H", "8D"]}
    assert {h["total"] for h in opened.view["hands"]} == {16}
    assert opened.view["dealer"] == {"cards": ["6C"], "total": None}
    assert opened.hole == ["9S"]  # shown apart to the auditor, hidden in the view
    started = played.step("SharedHand.PlayStarted")
    assert started.changed == ["A", "B", "C"]  # everyone's options opened
    assert {h["player"]: h["options"] for h in started.view["hands"]} == {
        p: ["hit", "stand", "double", "split", "surrender"] for p in "ABC"
    }


def test_a_split_takes_the_players_next_sequence_cards_d9(played: Played) -> None:
    split = played.step("Participation.HandSplit", "A")
    assert hands(split, "A") == {"A.1": ["8H"], "A.2": ["8D"]}
    added = played.step("Participation.WagerAdded", "A", kind="split")
    assert wagers(added)["A.2:split"] == ("10.00", False, None, "0.00")
    assert added.movements == [
        f"{played.rid}/A.2:split/stake: StakeDebited 10.00, balance after 980.00"
    ]
    first = played.step("Participation.CardToHand", "A", card="3C")
    assert first.rule == "D9"
    assert hands(first, "A") == {"A.1": ["8H", "3C"], "A.2": ["8D"]}
    assert first.view["sequence"] == ["3C"]
    a1 = {h["hand"]: h for h in first.view["hands"]}["A.1"]
    assert (a1["total"], a1["options"]) == (11, ["hit", "stand", "double"])
    # B starts the sequence from its own first card: the same 3C, not 9D
    assert hands(played.step("Participation.CardToHand", "B"), "B") == {"B": ["8H", "8D", "3C"]}
    # A.1 doubles and takes 9D to completion, then A.2 takes KH
    a2 = played.step("Participation.CardToHand", "A", card="KH")
    assert a2.rule == "D9"
    assert hands(a2, "A") == {"A.1": ["8H", "3C", "9D"], "A.2": ["8D", "KH"]}
    assert a2.view["sequence"] == ["3C", "9D", "KH"]
    states = {h["hand"]: (h["doubled"], h["finished"], h["options"]) for h in a2.view["hands"]}
    assert states["A.1"] == (True, True, [])
    assert states["A.2"] == (False, False, ["hit", "stand", "double"])


def test_the_last_step_shows_the_settled_wagers_with_the_rules_payouts(played: Played) -> None:
    last = played.replay.steps[-1]
    assert last.event == "SharedHand.RoundSettled"
    assert last.view["phase"] == "settled"
    assert last.view["dealer"] == {"cards": ["6C", "9S", "5S"], "total": 20}
    assert last.hole == []
    # BDL-PAIR: 8H 8D are the same rank and colour (both red) in different suits, a coloured
    # pair paid 10:1: 5.00 x 10 = 50.00 won, plus the stake back = 55.00
    assert wagers(last) == {
        "A:main": ("10.00", True, "push", "10.00"),  # A.1 8 3 9 = 20 vs 20 (OUT-4)
        "A.2:split": ("10.00", True, "lose", "0.00"),  # 8 K = 18 vs 20 (OUT-3)
        "A.1:double": ("10.00", True, "push", "10.00"),
        "B:main": ("10.00", True, "lose", "0.00"),  # 19 vs 20
        "B:pair:B": ("5.00", True, "win", "55.00"),
        "C:main": ("10.00", True, "lose", "0.00"),
        "C:double": ("10.00", True, "lose", "0.00"),
    }
    pair = played.step("Participation.WagerSettled", "B", wager_id="B:pair:B")
    assert pair.rule == "BDL-PAIR"
    assert pair.summary == ("B: B:pair:B: win (coloured_pair) at 10:1, stake 5.00, payout 55.00")
    # 1000 - 10 (main) - 5 (pair) + 55 (pair payout) = 1040
    assert pair.movements == [
        f"{played.rid}/B:pair:B/win: PayoutCredited 55.00, balance after 1040.00"
    ]
    assert played.step("Participation.WagerSettled", "B", wager_id="B:main").movements == []
    assert played.app.balance("B") == 1040


# ---------------------------------------------------------------------------- tampering
def test_an_event_missing_from_a_participation_stream_stops_the_replay_there(
    played: Played,
) -> None:
    events = played.bundle.round
    hit = played.step("Participation.HandHit", "B").position
    tampered = RoundBundle(played.bundle.round_id, events[: hit - 1] + events[hit:])
    r = replay_bundle(tampered)
    assert len(r.steps) == hit - 1
    assert r.stopped == (
        f"position {hit}: Participation.CardToHand cannot be applied: it is event 7 of B's "
        "participation, where event 6 comes next (an event is missing or out of order)"
    )
    assert f"REPLAY STOPPED at position {hit}: " in replay_text(r)


def test_an_undecodable_record_stops_the_replay_there(played: Played) -> None:
    events = list(played.bundle.round)
    events[11] = Decoded(events[11].record, None, "unreadable: ValueError: bad bytes")
    r = replay_bundle(RoundBundle(played.bundle.round_id, events))
    assert len(r.steps) == 11
    assert r.stopped == "position 12: the stored event does not decode (unreadable: " + (
        "ValueError: bad bytes)"
    )


def test_a_participation_of_another_round_stops_the_replay(played: Played) -> None:
    app = played.app
    other = Kit(V, CARDS, players=["A"], app=app, round_number=2)
    other.bet("A", 10)
    stranger = bundle_of(app, other.rid, money=False).round[1]  # its Participation.Joined
    events = [*played.bundle.round[:3], stranger, *played.bundle.round[3:]]
    r = replay_bundle(RoundBundle(played.bundle.round_id, events))
    assert r.stopped is not None
    joins = f"position 4: Participation.Joined cannot be applied: it joins round {other.rid}"
    assert r.stopped.startswith(joins)


# ---------------------------------------------------------------------------- rendering
def test_text_groups_each_players_hands_and_shows_the_whole_table_at_the_end(
    played: Played,
) -> None:
    text = replay_text(played.replay)
    lines = text.splitlines()
    assert lines[0] == f"round {played.rid}: {len(played.bundle.round)} events"
    split = step_lines(played.step("Participation.HandSplit", "A"))
    assert split[0].startswith("#24  consequence Participation.HandSplit [SPLIT-1]: A: hand A")
    assert split[1] == "    phase playing; dealer 6C [9S face down]; shared 8H 8D"
    assert split[2] == "    A (balance seen 990.00)"
    assert split[3].split()[:5] == ["hand", "A.1", "8H", "=", "8"]
    assert split[4].split()[:5] == ["hand", "A.2", "8D", "=", "8"]
    assert split[5] == "    (2 other players unchanged)"
    end = text[text.index(f"#{len(played.bundle.round)} ") :].splitlines()
    assert [line.strip() for line in end if not line.startswith("      ")][2:] == [
        "A (balance seen 970.00)",
        "B (balance seen 985.00)",
        "C (balance seen 990.00)",
    ]
    assert "      other wagers: pair 5.00 -> win 55.00 (B:pair:B)" in end


def test_json_is_serialisable_and_streams_to_the_same_bytes(played: Played) -> None:
    whole = orjson.dumps(played.replay.as_json(), option=orjson.OPT_INDENT_2, default=str)
    stream = iter_bundle(played.bundle)
    assert b"".join(json_chunks(played.rid, stream, lambda: stream.stopped)) == whole
    doc = orjson.loads(whole)
    assert doc["stopped"] is None
    step = doc["steps"][-1]
    assert (step["event"], step["owner"], step["changed"]) == (
        "SharedHand.RoundSettled",
        "shared",
        [],
    )
    assert step["view"]["phase"] == "settled"


def test_a_cancelled_round_shows_every_refund(played: Played) -> None:
    kit = Kit(V, CARDS, players=["D", "E"], app=played.app, round_number=3)
    kit.bet("D", 10)
    kit.side("E", "pair", 5)
    kit.close()
    kit.pause()
    kit.cancel()
    r = replay_bundle(bundle_of(played.app, kit.rid))
    assert r.stopped is None
    assert r.steps[-1].view["phase"] == "cancelled"
    refunds = [m for s in r.steps for m in s.movements if "RefundCredited" in m]
    assert refunds == [
        f"{kit.rid}/D:main/refund: RefundCredited 10.00, balance after 1000.00",
        f"{kit.rid}/E:pair:E/refund: RefundCredited 5.00, balance after 1000.00",
    ]
    assert wagers(r.steps[-1]) == {
        "D:main": ("10.00", True, "refund", "10.00"),
        "E:pair:E": ("5.00", True, "refund", "5.00"),
    }


def test_fifty_players_replay_quickly() -> None:
    app = RoundAudit(env=environment_for("sqlite:///:memory:"))
    players = [f"p{i:02d}" for i in range(50)]
    for p in players:
        app.open_wallet(p, account_type="test")
        app.deposit(p, "100", transaction_id=f"dep-{p}")
    draws = ["3C", "9D", "KH", "2S"]
    cards = stack(V, [["8H", "8D"]], up="6C", hole="9S", draws=draws, dealer_draws=["5S"])
    rid = app.start_round(
        table_id="t50", round_number=1, variant=V, production=False, test_order=cards
    )
    app.boundless.place_bets(rid, [Bet(p, "10") for p in players])
    app.close_betting(rid)
    actions = ("split", "hit", "double", "stand")
    app.boundless.decide_many(rid, [Decision(p, actions[i % 4]) for i, p in enumerate(players)])
    while pending := app.boundless.pending(rid):
        app.boundless.decide_many(
            rid, [Decision(h["player"], "stand", hand=h["hand"]) for h in pending]
        )
    bundle = bundle_of(app, rid)
    began = time.perf_counter()
    r = replay_bundle(bundle)
    text = replay_text(r)
    took = time.perf_counter() - began
    app.close()
    assert r.stopped is None
    assert len(r.steps) == len(bundle.round) > 400
    assert r.steps[-1].view["phase"] == "settled"
    assert {h["player"] for h in r.steps[-1].view["hands"]} == set(players)
    assert text.count("\n") > len(bundle.round)
    assert took < 3, f"{len(bundle.round)} steps of 50 players took {took:.2f}s"


# ---------------------------------------------------------------------------- the CLI
def test_roundaudit_replay_prints_a_boundless_round(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    app = RoundAudit(env=environment_for(url))
    try:
        kit = Kit(V, CARDS, players=["A", "B"], app=app)
        kit.bet("A", 10)
        kit.bet("B", 10)
        kit.close()
        kit.decide("A", "split")
        kit.decide("B", "stand")
        kit.decide("A", "stand")
        kit.decide("A", "stand")
        assert kit.phase == "settled"
        expected = replay_bundle(bundle_of(app, kit.rid))
    finally:
        app.close()
    capsys.readouterr()
    assert main(["--database-url", url, "replay", kit.rid]) == 0
    text = capsys.readouterr().out
    assert text == replay_text(expected)
    assert "#1   input       SharedHand.Started: boundless round 1 of table t1" in text
    assert main(["--database-url", url, "replay", "t1#1", "--json"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    assert doc == orjson.loads(orjson.dumps(expected.as_json()))
