"""What a verifier finds once and reads many times, each giving what the long way gives:

* a shoe's draws by the round they name (``ShoeFacts.by_round``, made once per shoe with its
  facts), which a round's shoe check reads for "a card drawn for this round and never dealt"
  instead of walking every draw of the shoe: the same draws, in position order, and the same
  verdicts as the walk, on a live shoe whose records say a card was drawn for another round or
  no longer decode, and whose round's card names another position (SQLite, PostgreSQL);
* a round's players (``RoundBundle.players``), found once for the records they are found in
  (reading ahead, reading the round and its commit check each ask): the same list as a walk
  of the round's records, after reading ahead or not, and again after the round's records
  were changed in place (a record replaced by one naming another player, or by an equal one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from storekit import Store
from test_verify_shoe_index import _opened, _verdicts

import replays.verify
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.round import Round
from domain.shoe import Shoe
from replays.bundle import Decoded, RoundBundle
from replays.verify import ShoeFacts, StoreVerifier, shoe_facts

_players = RoundBundle.players


def _walked_players(b: RoundBundle) -> list[str]:
    """``RoundBundle.players`` the long way: a walk of the records, nothing kept."""
    b._players = None
    try:
        return _players(b)
    finally:
        b._players = None


class _Walk(dict[str | None, list[Any]]):
    """``ShoeFacts.by_round`` the long way: every draw of the shoe walked, in position order,
    for each round asked."""

    def __init__(self, facts: ShoeFacts) -> None:
        super().__init__()
        self.facts = facts

    def get(self, rid: Any, default: Any = None) -> Any:
        return [d for _, d in sorted(self.facts.draws.items()) if d.round_id == rid]


def _walking(shoe_id: UUID, decoded: Any) -> ShoeFacts:
    facts = shoe_facts(shoe_id, decoded)
    facts.by_round = _Walk(facts)
    return facts


def test_a_shoes_draws_by_round_are_the_walks_in_position_order(app: RoundAudit) -> None:
    ids = [UUID(r) for r in simulate(app, variant="deluxe", rounds=6, players=2).round_ids]
    shoe_id = UUID(app.round(str(ids[0])).shoe_id)
    b = StoreVerifier(app).reader.round_bundle(ids[-1])
    assert b.shoe_id == shoe_id
    facts = shoe_facts(shoe_id, b.shoe)
    walk = _Walk(facts)
    owners = {d.round_id for d in facts.draws.values()}
    assert {str(r) for r in ids} <= owners
    for owner in owners:
        assert facts.by_round.get(owner) == walk.get(owner), owner
        assert facts.by_round[owner], owner
    assert sum(len(v) for v in facts.by_round.values()) == len(facts.draws)


def test_a_card_drawn_for_the_round_and_not_dealt_gives_the_walks_verdicts(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    with _opened(store_url) as app:
        ids = [UUID(r) for r in simulate(app, variant="deluxe", rounds=5, players=2).round_ids]
        shoe_id = UUID(app.round(str(ids[0])).shoe_id)
        drawn = [
            (e.originator_version, UUID(e.round_id))
            for e in app.events.get(shoe_id)
            if isinstance(e, Shoe.CardDrawn)
        ]
        dealt = [
            e.originator_version for e in app.events.get(ids[2]) if isinstance(e, Round.CardDealt)
        ]
    store = Store(store_url, tmp_path / "unused.pem", capsys)
    shoe_states = {v: s for v, _, s in store.rows(shoe_id)}
    # a card of the second round said to be the fourth's; a card of the fifth unreadable
    moved = next(v for v, r in drawn if r == ids[1])
    store.set_state(
        shoe_id, moved, shoe_states[moved].replace(str(ids[1]).encode(), str(ids[3]).encode())
    )
    broken = next(v for v, r in drawn if r == ids[4])
    store.set_state(shoe_id, broken, b"not json")
    # the third round's second card dealt names another shoe position: the card the shoe drew
    # for it at its own position is not dealt in the round
    round_states = {v: s for v, _, s in store.rows(ids[2])}
    state = round_states[dealt[1]]
    assert b'"shoe_position":' in state
    head, _, tail = state.partition(b'"shoe_position":')
    number = tail.split(b",", 1)[0].split(b"}", 1)[0]
    store.set_state(ids[2], dealt[1], head + b'"shoe_position":9999' + tail[len(number) :])

    monkeypatch.setattr(replays.verify, "AHEAD", 2)  # the shoe's rounds across batches
    with _opened(store_url) as app:
        indexed = _verdicts(app, ids)
        assert all(indexed[1:]), "every changed round fails"
        undealt = [
            f for f in indexed[2] if f["check"] == "shoe" and "has no CardDealt" in f["message"]
        ]
        assert undealt, indexed[2]
        assert any(f["check"] == "shoe" for f in indexed[1]), indexed[1]
        monkeypatch.setattr(replays.verify, "shoe_facts", _walking)
        assert indexed == _verdicts(app, ids)


def test_players_found_once_are_the_walks_also_after_a_change_in_place(app: RoundAudit) -> None:
    ids = [UUID(r) for r in simulate(app, variant="deluxe", rounds=3, players=3).round_ids]
    ids += [UUID(r) for r in simulate(app, variant="european", rounds=2, players=2).round_ids]
    verifier = StoreVerifier(app)
    verifier.reader.read_ahead(ids)
    ahead = [verifier.reader.round_bundle(rid) for rid in ids]
    verifier.reader.read_ahead(())
    alone = [StoreVerifier(app).reader.round_bundle(rid) for rid in ids]
    for a, b in zip(ahead, alone, strict=True):
        assert a.players() == _walked_players(a) == b.players() == _walked_players(b)
        assert a.players()

    b = alone[0]
    assert b.players() == _walked_players(b)
    b.players()  # kept
    at = next(i for i, d in enumerate(b.round) if type(d.event).__name__ == "BetPlaced")
    d = b.round[at]
    # an equal record (another object): the answer stands, and is the walk's
    b.round[at] = Decoded(d.record, d.event, d.error, d.at)
    assert b.players() == _walked_players(b)
    # a record naming another player, in place of the first bet
    e = d.event
    other = object.__new__(type(e))
    other.__dict__.update(e.__dict__, player="zz-someone-else")
    b.players()
    b.round[at] = Decoded(d.record, other)
    found = b.players()
    assert found == _walked_players(b)
    assert "zz-someone-else" in found
    # removed, then put back
    b.players()
    del b.round[at]
    assert b.players() == _walked_players(b)
    assert "zz-someone-else" not in b.players()
    b.round.insert(at, d)
    assert b.players() == _walked_players(b) == alone[0].players()
