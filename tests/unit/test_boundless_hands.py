"""D9 (domain/game/sequence.py): a player's hands from the shared cards and their own log.

Pure examples first, then the property the design rests on: in random boundless rounds with
many players (random decisions, splits, doubles, surrenders, timeouts, disconnections, FUNDS-2,
the insurance window), every player's hands recomputed from the shared sequence and their
decision log alone equal the hands their events record; the sequence cards each player holds
are a prefix of the sequence; the round re-executes to the same events; money is conserved.
"""

from __future__ import annotations

import random
from collections import Counter
from decimal import Decimal
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from domain.application import RoundAudit
from domain.boundless.service import Decision
from domain.cards import decks, parse_cards
from domain.errors import InsufficientFunds
from domain.game import play as play_rules
from domain.game import player as P
from domain.game import sequence as H
from domain.game.phases import PLAYING
from domain.rules import get_rules
from replays.boundless import verify_round

RULES = get_rules("boundless")
Json = dict[str, Any]


def cards(*codes: str) -> tuple:
    return parse_cards(codes)


def hand_cards(state: H.PlayerHands) -> dict[str, list[str]]:
    return {h.id: [c.code for c in h.cards] for h in state.hands}


# --------------------------------------------------------------------------- examples
def test_d9_every_player_starts_at_the_first_card_of_the_sequence():
    seq = cards("2C", "KH")
    a = H.replay("A", cards("5H", "6D"), seq, [H.Entry("hit", "A")], RULES)
    b = H.replay("B", cards("5H", "6D"), seq, [H.Entry("hit", "B"), H.Entry("hit", "B")], RULES)
    assert hand_cards(a) == {"A": ["5H", "6D", "2C"]}
    assert hand_cards(b) == {"B": ["5H", "6D", "2C", "KH"]}
    assert (a.cursor, b.cursor) == (1, 2)


def test_d9_a_split_plays_the_first_hand_to_completion_then_the_second():
    seq = cards("3C", "9D", "KH")
    log = [H.Entry("split", "A"), H.Entry("double", "A.1")]
    state = H.replay("A", cards("8H", "8D"), seq, log, RULES)
    assert hand_cards(state) == {"A.1": ["8H", "3C", "9D"], "A.2": ["8D", "KH"]}
    assert state.hand("A.1").finish_reason == "double"
    assert state.demand is None
    assert H.consumed(state) == list(seq)


def test_d9_split_aces_take_one_card_each_and_stand():
    state = H.replay("A", cards("AH", "AD"), cards("9C", "KH"), [H.Entry("split", "A")], RULES)
    assert hand_cards(state) == {"A.1": ["AH", "9C"], "A.2": ["AD", "KH"]}
    assert [h.finish_reason for h in state.hands] == ["split_ace", "21"]  # HAND-1 either way
    assert not state.hand("A.2").blackjack  # SCORE-4


def test_bdl_2_a_hand_waits_for_an_unrevealed_card():
    state = H.replay("A", cards("5H", "6D"), (), [H.Entry("hit", "A")], RULES)
    assert state.demand == 0
    assert H.next_step(state, (), RULES) is None
    step = H.next_step(state, cards("2C"), RULES)
    assert step == H.Take("A", parse_cards(["2C"])[0], 0, 13, False, "BDL-2")


def test_auto_1_a_timed_out_hand_hits_to_12_then_stands():
    seq = cards("4C", "3D", "KS")
    state = H.replay("A", cards("2H", "3C"), seq, [H.Entry("timeout", "A")], RULES)
    assert hand_cards(state) == {"A": ["2H", "3C", "4C", "3D"]}
    assert state.hand("A").finish_reason == "auto"
    assert state.cursor == 2


def test_disc_1_a_disconnected_player_is_played_for_on_every_hand():
    seq = cards("2C", "KD", "3S")
    log = [H.Entry("split", "A"), H.Entry("disconnect")]
    state = H.replay("A", cards("4H", "4D"), seq, log, RULES)
    # A.1: 4,2 = 6 -> hit K = 16 stand; A.2: 4,3 = 7 -> hit (no card yet): waits
    assert hand_cards(state) == {"A.1": ["4H", "2C", "KD"], "A.2": ["4D", "3S"]}
    assert state.demand == 3


def test_funds_2_entries_replay_as_the_rules_applied_them():
    log = [H.Entry("hit", "A", "FUNDS-2")]
    state = H.replay("A", cards("5H", "5D"), cards("2D"), log, RULES)
    assert hand_cards(state) == {"A": ["5H", "5D", "2D"]}
    stood = H.replay("A", cards("9H", "9D"), (), [H.Entry("funds_stand", "A")], RULES)
    assert stood.hand("A").finish_reason == "funds"


def test_blackjack_stands_at_once_and_takes_nothing():
    state = H.replay("A", cards("AH", "KD"), cards("2C"), [], RULES)
    assert state.hand("A").finish_reason == "blackjack"
    assert state.cursor == 0


def test_end_1_no_hand_is_played_when_play_never_started():
    """A dealer blackjack at the check (END-1): a disconnected player's hand is not played."""
    log = [H.Entry("disconnect")]
    state = H.replay("A", cards("10S", "KH"), (), log, RULES, played=False)
    assert not state.hand("A").finished
    assert state.auto
    played = H.replay("A", cards("10S", "KH"), (), log, RULES)
    assert played.hand("A").finish_reason == "auto"


def test_unknown_log_entry_is_refused():
    with pytest.raises(ValueError, match="unknown log entry"):
        H.apply(H.opened("A", cards("2H", "3C")), H.Entry("fold", "A"))


# ---------------------------------------------------------------------- the property
def hands_from_events(events: list[Json]) -> dict[str, list[str]]:
    """Hand id -> cards, folded from the recorded Participation events alone."""
    out: dict[str, list[str]] = {}
    for e in events:
        t, p = e["type"], e["payload"]
        if t == "Participation.HandOpened":
            out[p["hand"]] = list(p["cards"])
        elif t == "Participation.HandSplit":
            first, second = out.pop(p["hand"])
            out[p["into"][0]], out[p["into"][1]] = [first], [second]
        elif t == "Participation.CardToHand":
            out[p["hand"]].append(p["card"])
    return out


@st.composite
def rounds(draw: st.DrawFn) -> Json:
    rng = draw(st.randoms(use_true_random=False))
    pair = draw(st.booleans())
    shoe = [c.code for c in decks(8)]
    rng.shuffle(shoe)
    if pair:  # a pair in the shared hand: splits become possible
        rank = rng.choice(["A", "8", "9", "5", "K", "3"])
        firsts = [f"{rank}H", f"{rank}D"]
        for c in firsts:
            shoe.remove(c)
        shoe = [firsts[0], shoe[0], firsts[1], *shoe[1:]]
    return {
        "order": shoe[:120],
        "players": draw(st.integers(2, 30)),
        "poor": draw(st.sets(st.integers(0, 29), max_size=6)),
        "seed": draw(st.integers(0, 2**32)),
        "batch": draw(st.sampled_from([1, 3, 7, 500])),
    }


def play(r: Json) -> tuple[RoundAudit, str, dict[str, Decimal]]:
    rng = random.Random(r["seed"])
    app = RoundAudit()
    app.boundless.batch_size = r["batch"]
    players = [f"P{i}" for i in range(r["players"])]
    deposits = {}
    for i, p in enumerate(players):
        app.open_wallet(p, account_type="test")
        amount = Decimal("15") if i in r["poor"] else Decimal("500")
        app.deposit(p, amount, transaction_id=f"dep-{p}")
        deposits[p] = amount
    rid = app.start_round(
        table_id="prop", round_number=1, variant="boundless", production=False,
        test_order=r["order"],
    )  # fmt: skip
    for i, p in enumerate(players):
        if i % 5 != 4:
            app.place_bet(rid, player=p, amount="10")
        if i % 3 == 0:
            app.place_bet(
                rid, player=p, kind=rng.choice(["pair", "bust", "trio", "poker"]), amount="1"
            )
        if (i % 5 != 4 or i % 3 == 0) and rng.random() < 0.05:
            app.disconnect(rid, player=p)  # DISC-1 during betting
    app.close_betting(rid)
    for _ in range(400):
        view = app.round_view(rid)
        if view["phase"] not in ("insurance", "playing"):
            break
        pending = app.boundless.pending(rid)
        if not pending:
            assert view["phase"] == "insurance", view
            app.close_insurance_window(rid)
            continue
        if view["phase"] == "insurance" and rng.random() < 0.1:
            app.close_insurance_window(rid)
            continue
        chosen = [p for p in pending if rng.random() < 0.6] or pending[:1]
        decisions = []
        for p in chosen:
            roll = rng.random()
            opts = p["options"]
            action = (
                "timeout" if roll < 0.05
                else "disconnect" if roll < 0.07
                else "split" if "split" in opts and roll < 0.6
                else "hit" if "hit" in opts and roll < 0.55
                else rng.choice(opts)
            )  # fmt: skip
            decisions.append(Decision(p["player"], action, hand=p["hand"]))
        if len(decisions) == 1 and rng.random() < 0.5:
            d = decisions[0]
            try:
                if d.action == "timeout":
                    app.time_out(rid, player=d.player, hand=d.hand)
                elif d.action == "disconnect":
                    app.disconnect(rid, player=d.player)
                else:
                    app.decide(rid, player=d.player, action=d.action, hand=d.hand)
            except InsufficientFunds:  # insurance without the balance: refused, nothing kept
                pass
        else:
            for res in app.boundless.decide_many(rid, decisions):
                assert res is None or res.code == "insufficient-funds", res
    return app, rid, deposits


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(r=rounds())
def test_d9_recomputed_hands_equal_recorded_hands_for_every_player(r: Json) -> None:
    app, rid, deposits = play(r)
    view = app.round_view(rid)
    assert view["phase"] == "settled", view["phase"]
    shared = app.boundless.shared(rid)
    events = app.round_events(rid)
    recorded = hands_from_events(events)
    counts: Counter[str] = Counter()
    for part in app.boundless.participations(rid):
        if part.state is None:
            continue
        replayed = H.replay(
            part.player, shared.initial, shared.sequence, part.log, RULES, played=shared.played
        )
        mine = {h: c for h, c in recorded.items() if h.split(".")[0] == part.player}
        assert hand_cards(replayed) == mine, part.player
        assert replayed.hands == part.state.hands
        taken = H.consumed(replayed)
        assert taken == shared.sequence[: len(taken)], "D9: a prefix of the sequence"
        counts.update(e.action for e in part.log)
        counts["split hands"] += sum(h.is_split for h in replayed.hands)
    for name in ("split", "double", "hit", "stand", "surrender", "timeout", "disconnect",
                 "funds_stand", "split hands"):  # fmt: skip
        if counts[name]:
            event(name)
    event(f"{len(shared.sequence)} sequence cards")
    # every card of the sequence was needed by some hand (BDL-2)
    longest = max(
        (len(H.consumed(p.state)) for p in app.boundless.participations(rid) if p.state), default=0
    )
    assert longest == len(shared.sequence)
    verdict = verify_round(app, rid)
    assert verdict.ok, verdict.as_json()["discrepancies"][:3]
    balances = {p: app.balance(p) for p in deposits}
    staked = Decimal(0)
    paid = Decimal(0)
    for e in events:
        if e["type"] in ("Participation.BetPlaced", "Participation.WagerAdded"):
            staked += Decimal(e["payload"]["stake"])
        elif e["type"] == "Participation.WagerSettled":
            paid += Decimal(e["payload"]["payout"])
    assert sum(balances.values()) == sum(deposits.values()) - staked + paid, "money conserved"


# ------------------------------------------------- needs and options, their plain reading
def plain_need(s: P.PlayerState, shared: Any) -> P.Need:
    """What a participation waits for in play, read step by step (``next_step``, then the
    due hand's demand, then whether every hand is complete): what ``need`` answers with one
    look-up of the due hand."""
    if s.hands is None:
        return P.NOTHING
    if H.next_step(s.hands, shared.sequence, s.rules) is not None:
        return ("auto", 0)
    if s.hands.demand is not None:
        return ("card", s.hands.demand)
    return ("decision", 0) if not s.hands.complete else P.NOTHING


def plain_options(s: P.PlayerState, hand: Any, shared: Any) -> list[str]:
    """The options of ``hand`` in play, its facts scored from its cards."""
    assert s.hands is not None
    if hand.owed or hand.finished or H.next_step(s.hands, shared.sequence, s.rules) is not None:
        return []
    due = s.hands.due()
    if due is None or due.id != hand.id:
        return []
    facts = play_rules.HandFacts(hand.cards, hand.is_split, hand.split_aces, hand.actions)
    return play_rules.play_options(facts, shared.dealer, s.rules)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(r=rounds())
def test_needs_and_options_equal_their_plain_reading_in_random_rounds(r: Json) -> None:
    """Every need and option list the engine and the views ask for while the round is played
    (PLAYING: HAND-1, AUTO-1, BDL-2's waits for a card, D9) equals its plain reading."""
    need, options_for = P.need, P.options_for
    compared = [0, 0]

    def checked_need(s: P.PlayerState, shared: Any) -> P.Need:
        got = need(s, shared)
        if shared.phase == PLAYING and not shared.finished and not shared.cancelling:
            assert got == plain_need(s, shared)
            compared[0] += 1
        return got

    def checked_options(s: P.PlayerState, hand: Any, shared: Any) -> list[str]:
        got = options_for(s, hand, shared)
        plain = not (shared.paused or shared.finished or shared.cancelling or s.hands is None)
        if plain and shared.phase == PLAYING:
            assert got == plain_options(s, hand, shared)
            compared[1] += 1
        return got

    with (
        mock.patch.object(P, "need", checked_need),
        mock.patch.object(P, "options_for", checked_options),
    ):
        app, rid, _ = play(r)
    assert app.round_view(rid)["phase"] == "settled"
    if app.boundless.shared(rid).played:  # not after END-1 at the dealer's check
        assert compared[0] > 0
    event("options compared" if compared[1] else "no options asked in play")
