"""``RoundBundle.players``: the players a round's decodable events of a player-naming kind
name, in order of first appearance; the same list as the formula over ``RoundBundle.events``
it replaced (kept here), for classic and boundless rounds, and with records that do not decode
and events of other kinds that carry a ``player`` field."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.boundless.shared import SharedHand
from domain.round import Round
from replays.bundle import PLAYER_EVENTS, Decoded, RoundBundle, StoreReader


def _reference(b: RoundBundle) -> list[str]:
    seen: dict[str, None] = {}
    for e in b.events:
        player = getattr(e, "player", None)
        if isinstance(player, str) and type(e).__name__ in PLAYER_EVENTS:
            seen.setdefault(player)
    return list(seen)


class _Other:
    """An event of a kind that names no player, though it has a ``player`` field."""

    def __init__(self, player: Any) -> None:
        self.player = player


def test_players_is_the_formula_over_the_events() -> None:
    app = RoundAudit()
    try:
        simulate(app, variant="boundless", rounds=2, players=5)
        simulate(app, variant="deluxe", rounds=2, players=3)
        reader = StoreReader(app)
        ids: list[UUID] = [SharedHand.create_id("sim-boundless", n) for n in (1, 2)]
        ids += [Round.create_id("sim-deluxe", n) for n in (1, 2)]
        bundles = [reader.round_bundle(rid) for rid in ids]
    finally:
        app.close()
    checked = 0
    for b in bundles:
        assert b.players() == _reference(b)
        assert b.players()
        first = b.round[1]
        extra = [
            Decoded(first.record, None, "unreadable: test"),
            Decoded(first.record, _Other("zz-not-a-player")),
            Decoded(first.record, _Other(None)),
        ]
        for at in (0, len(b.round) // 2, len(b.round)):
            b.round[at:at] = extra
            assert b.players() == _reference(b)
            assert "zz-not-a-player" not in b.players()
            del b.round[at : at + len(extra)]
            checked += 1
    assert checked >= 6
