"""The round's settle step (branch bver9): what settling reads of the cards (the dealer's
blackjack and score, each side bet kind's outcome and paytable text:
``domain.game.settlement.SettledAgainst``) is made once a boundless round and held by the
round's engine (``domain.boundless.engine.Engine``, ``domain.game.player.settle_step``), not by
a module-level memo: recording a round and verifying it each make one for every player
(BDL-1, BDL-3: one shared initial hand and one dealer's hand; BDL-PAIR, BDL-BUST, BDL-TRIO,
BDL-POKER read only those), and the round verifies."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from roundkit import Kit, stack

from domain.game import settlement as S
from replays.boundless import verify_log

V = "boundless"
PLAYERS = ["A", "B", "C", "D"]


def test_one_settlement_of_the_cards_a_round_recorded_and_verified(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[object] = []
    real_init = S.SettledAgainst.__init__

    def counting(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        made.append(self)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(S.SettledAgainst, "__init__", counting)
    order = stack(V, [["7H", "7D"]], up="6C", hole="9S", draws=["3C", "9D"], dealer_draws=["KH"])
    kit = Kit(V, order, players=PLAYERS)
    for p in PLAYERS:
        kit.bet(p, 10)
        for kind in ("pair", "bust", "trio", "poker"):
            kit.bet(p, 1, kind=kind)
    kit.close()
    for p in PLAYERS:
        kit.decide(p, "stand")
    assert kit.phase == "settled"
    assert len(made) == 1  # recording: one for the four players' settlements
    verdict = verify_log(kit.app.boundless.round_log(kit.rid))
    assert verdict.ok, verdict.as_json()
    assert len(made) == 2  # verification: one more, its own engine's
