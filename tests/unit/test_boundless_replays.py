"""``domain.game.sequence.Replays``: D9's replay of many players of one round, each different
log (its hands read relative to the player) replayed once and renamed for the others, equals
:func:`~domain.game.sequence.replay` of each player alone, whatever the logs and names (names
that begin with another player's name and a dot included), and raises where it raises."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from domain.cards import decks
from domain.game import sequence as H
from domain.rules import get_rules

RULES = get_rules("boundless")
NAMES = ["A", "A.1", "A.2", "B", "AB", "A.1.1"]
SUFFIXES = ["", ".1", ".2", ".1.1", ".1.2", ".x"]
ACTIONS = sorted(H.ACTIONS)
DECK = decks(1)


@st.composite
def logs(draw: Any) -> list[tuple[str | None, str, str]]:
    """(action, hand relative to its player or another player's hand, rule) entries."""
    out: list[tuple[str | None, str, str]] = []
    for _ in range(draw(st.integers(0, 6))):
        action = draw(st.sampled_from(ACTIONS))
        how = draw(st.integers(0, 9))
        hand: str = draw(st.sampled_from(SUFFIXES)) if how else "!" + draw(st.sampled_from(NAMES))
        rule = draw(st.sampled_from(["PHASE-4", "FUNDS-2"]))
        out.append((action, hand, rule))
    return out


def _entries(player: str, log: list[tuple[str | None, str, str]]) -> list[H.Entry]:
    out = []
    for action, hand, rule in log:
        if action == H.DISCONNECT:
            out.append(H.Entry(action))
            continue
        named = hand[1:] if hand.startswith("!") else player + hand  # "!X": X's own hand
        out.append(H.Entry(action, named, rule))
    return out


def _outcome(f: Any, *args: Any, **kwargs: Any) -> Any:
    """``f(*args, **kwargs)``, or the exception it raised (its type and message)."""
    try:
        return f(*args, **kwargs)
    except Exception as exc:  # the same exception, or the same hands
        return (type(exc), str(exc))


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    initial=st.lists(st.sampled_from(DECK), min_size=2, max_size=2),
    sequence=st.lists(st.sampled_from(DECK), max_size=8),
    played=st.booleans(),
)
def test_replays_equal_each_players_own_replay(
    data: Any, initial: list, sequence: list, played: bool
) -> None:
    # a few logs shared by several players, so that most players' hands are a renamed replay
    shared_logs = data.draw(st.lists(logs(), min_size=1, max_size=3))
    r = H.Replays(tuple(initial), tuple(sequence), RULES, played=played)
    for name in data.draw(st.permutations(NAMES)):
        log = _entries(name, data.draw(st.sampled_from(shared_logs)))
        got = _outcome(r.of, name, log)
        want = _outcome(H.replay, name, tuple(initial), tuple(sequence), log, RULES, played=played)
        assert got == want, (name, log)
        if isinstance(got, H.PlayerHands):
            assert got.player == name
            assert all(h.player == name and h.spot == name for h in got.hands)


def test_a_log_replays_once_for_every_player_who_has_it() -> None:
    initial, sequence = tuple(DECK[7:9]), tuple(DECK[20:26])
    r = H.Replays(initial, sequence, RULES)
    for name in NAMES:
        assert r.of(name, [H.Entry("hit", name)]) == H.replay(
            name, initial, sequence, [H.Entry("hit", name)], RULES
        )
    assert len(r._done) == 1
