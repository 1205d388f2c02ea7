"""Hand scores, card by card, on test-shoe rounds (a SQLite file store per test).

Splits move the pair's cards into ``X.1`` and ``X.2``; soft and hard totals follow every card;
blackjack, 21 and bust are flagged; ``played_by`` says whether the player or AUTO-1 decided;
boundless's shared cards are on every player's hand and the ``shared``/``sequence``
pseudo-hands are not rows.
"""

from __future__ import annotations

import doctest
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from roundkit import Kit, stack

import projections.base
import projections.hand_scores
import projections.ledger
import projections.recorded
from cli import dispute_cmd
from domain.application import RoundAudit
from domain.persistence import environment_for
from projections.hand_scores import HandScores, hands_of_round
from projections.runner import ProjectionRunner
from projections.store import ProjectionStore


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/events.db"


@pytest.fixture
def app(url: str) -> Iterator[RoundAudit]:
    application = RoundAudit(env=environment_for(url))
    yield application
    application.close()


def hands(app: RoundAudit, url: str, rid: str) -> dict[str, dict[str, Any]]:
    with ProjectionStore.open(url) as store:
        ProjectionRunner(app, store, [HandScores()], batch_size=5).catch_up()
        with store.read() as tx:
            return {h["hand"]: h for h in hands_of_round(tx, rid)}


def cards(hand: dict[str, Any], *fields: str) -> list[tuple[Any, ...]]:
    return [tuple(c[f] for f in fields) for c in hand["card_rows"]]


def test_a_split_moves_the_pair_into_two_hands_with_totals_after_every_card(
    app: RoundAudit, url: str
) -> None:
    deck = stack(
        "deluxe", [["8C", "8D"]], up="6D", hole="10H", draws=["3S", "KC", "AH"], dealer_draws=["5C"]
    )
    kit = Kit("deluxe", deck, players={"ann": "100"}, app=app)
    kit.bet("ann", 10, spot=1)
    kit.close()
    kit.decide("ann", "split")
    kit.decide("ann", "hit", hand="1.1")
    kit.decide("ann", "stand", hand="1.2")
    assert kit.phase == "settled"

    h = hands(app, url, kit.rid)
    assert set(h) == {"1", "1.1", "1.2", "dealer"}
    pair = h["1"]
    assert (pair["cards"], pair["status"], pair["split"], pair["finish_rule"]) == (
        "8C 8D",
        "split",
        1,
        "SPLIT-1",
    )
    first = h["1.1"]
    assert (first["player"], first["split_from"], first["cards"]) == ("ann", "1", "8C 3S KC")
    assert cards(first, "card", "total", "rule", "decided_by") == [
        ("8C", 8, "SPLIT-1", "player"),
        ("3S", 11, "SPLIT-1", "player"),
        ("KC", 21, "PHASE-4", "player"),
    ]
    assert (first["twenty_one"], first["blackjack"], first["finish_rule"]) == (1, 0, "HAND-1")
    second = h["1.2"]
    assert cards(second, "card", "total", "hard_total", "soft_total") == [
        ("8D", 8, 8, None),
        ("AH", 19, 9, 19),  # soft 19: the ace counts 11
    ]
    assert (second["finish_reason"], second["played_by"], second["decisions"]) == (
        "stand",
        "player",
        1,
    )
    dealer = h["dealer"]
    assert dealer["player"] is None
    assert cards(dealer, "card", "total", "face_up", "rule") == [
        ("6D", 6, 1, "PHASE-2"),
        ("10H", 16, 0, "PHASE-2"),
        ("5C", 21, 1, "DEALER-1"),
    ]
    assert (dealer["played_by"], dealer["finish_rule"], dealer["twenty_one"]) == (
        "dealer",
        "DEALER-1",
        1,
    )


def test_blackjack_bust_and_who_played_each_hand(app: RoundAudit, url: str) -> None:
    deck = stack(
        "multihand",
        [["AS", "KD"], ["5H", "4D"], ["10C", "6S"]],
        up="9S",
        hole="7C",
        draws=["2S", "8D", "QH"],
        dealer_draws=["2C"],
    )
    kit = Kit("multihand", deck, players={"bo": "100", "cy": "100"}, app=app)
    kit.bet("bo", 10, spot=1)
    kit.bet("bo", 10, spot=2)
    kit.bet("cy", 10, spot=3)
    kit.close()
    kit.timeout("bo", hand="2")  # AUTO-1 hits 9 -> 11 -> 19 and stands
    kit.decide("cy", "hit")
    assert kit.phase == "settled"

    h = hands(app, url, kit.rid)
    bj = h["1"]
    assert (bj["blackjack"], bj["twenty_one"], bj["finish_reason"], bj["played_by"]) == (
        1,
        1,
        "blackjack",
        "",
    )
    auto = h["2"]
    assert (auto["played_by"], auto["auto_actions"], auto["decisions"]) == ("system", 3, 0)
    assert cards(auto, "card", "total", "rule", "decided_by")[2:] == [
        ("2S", 11, "AUTO-1", "system"),
        ("8D", 19, "AUTO-1", "system"),
    ]
    assert auto["finish_rule"] == "AUTO-1"
    bust = h["3"]
    assert (bust["total"], bust["bust"], bust["finish_reason"], bust["finish_rule"]) == (
        26,
        1,
        "bust",
        "SCORE-2",
    )
    assert cards(bust, "card", "bust")[-1] == ("QH", 1)
    assert bust["played_by"] == "player"


def test_boundless_shared_cards_are_on_every_players_hand(app: RoundAudit, url: str) -> None:
    deck = stack("boundless", [["10H", "6C"]], up="9S", hole="8D", draws=["5D"])
    kit = Kit("boundless", deck, players={"p1": "100", "p2": "100"}, app=app)
    kit.bet("p1", 10)
    kit.bet("p2", 10)
    kit.close()
    kit.decide("p1", "hit")
    kit.decide("p2", "stand")
    assert kit.phase == "settled"

    h = hands(app, url, kit.rid)
    assert set(h) == {"p1", "p2", "dealer"}  # no "shared" or "sequence" rows
    assert cards(h["p1"], "card", "total", "rule", "decided_by") == [
        ("10H", 10, "BDL-1", "deal"),
        ("6C", 16, "BDL-1", "deal"),
        ("5D", 21, "BDL-2", "player"),
    ]
    assert cards(h["p2"], "card", "rule") == [("10H", "BDL-1"), ("6C", "BDL-1")]
    assert (h["p2"]["spot"], h["p2"]["finish_reason"]) == ("p2", "stand")


@pytest.mark.parametrize(
    "module",
    [
        projections.base,
        projections.hand_scores,
        projections.ledger,
        projections.recorded,
        dispute_cmd,
    ],
)
def test_doctests_pass(module: Any) -> None:
    result = doctest.testmod(module)
    assert result.failed == 0
