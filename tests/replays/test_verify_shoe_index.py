"""Two shortcuts of a verifier reading a store, each giving what the long way gives:

* a shoe's ``CardDrawn`` records are indexed by the round they name as the store reader reads
  the shoe (``RoundBundle.cards``), instead of a walk of the whole shoe for every round: the
  same records, and the same verdicts, for every round of a live shoe, also when a card record
  names another round or does not decode (memory, SQLite, PostgreSQL);
* a leaf the verifier's log hashed into its tree is not hashed again while the very bytes it
  hashed are the ones cached (``MerkleLog.kept_leaf_problem``): a leaf rewritten in the table
  after the log read it (record and leaf together, as an insider would) is still found once
  the verifier reads it again.

And ``verify_many`` holds the automatic garbage collector off while it reads a batch of rounds
and verifies them (``domain.collector.paused``), never while the caller handles a verdict, and
leaves it as it found it (on, or off when the host turned it off), also when the caller stops
early; an error verifying a round comes after the verdicts of the rounds before it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from storekit import Store

import replays.log
import replays.verify
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from domain.shoe import Shoe
from replays.bundle import RoundBundle
from replays.chain import Record
from replays.verify import StoreVerifier

_walk = RoundBundle.card_records


def _walked(b: RoundBundle) -> list[Record]:
    """``card_records`` the long way: a walk of the bundle's whole shoe."""
    kept, b.cards = b.cards, None
    try:
        return _walk(b)
    finally:
        b.cards = kept


def _verdicts(app: RoundAudit, ids: list[UUID]) -> list[list[dict[str, Any]]]:
    return [[d.as_json() for d in v.discrepancies] for v in StoreVerifier(app).verify_many(ids)]


def _deluxe(app: RoundAudit) -> tuple[list[UUID], UUID]:
    ids = [UUID(r) for r in simulate(app, variant="deluxe", rounds=5, players=2).round_ids]
    shoes = {UUID(app.round(str(r)).shoe_id) for r in ids}
    assert len(shoes) == 1, "the deluxe rounds were not dealt from one live shoe"
    return ids, shoes.pop()


def _bundles_agree(app: RoundAudit, ids: list[UUID]) -> None:
    """Every round's indexed card records are the walk's, read ahead and read alone."""
    verifier = StoreVerifier(app)
    verifier.reader.read_ahead(ids)
    for rid in ids:
        b = verifier.reader.round_bundle(rid)
        assert b.cards is not None
        assert b.card_records() == _walked(b)
    verifier.reader.read_ahead(())
    alone = StoreVerifier(app).reader.round_bundle(ids[-1])
    assert alone.card_records() == _walked(alone)


def test_indexed_card_records_are_the_walks_on_every_store(app: RoundAudit) -> None:
    ids, _ = _deluxe(app)
    ids += [UUID(r) for r in simulate(app, variant="european", rounds=2, players=2).round_ids]
    _bundles_agree(app, ids)
    assert all(not found for found in _verdicts(app, ids))


@contextlib.contextmanager
def _opened(store_url: str) -> Iterator[RoundAudit]:
    app = RoundAudit(env=environment_for(store_url))
    try:
        yield app
    finally:
        app.close()


def test_a_card_naming_another_round_or_unreadable_gives_the_walks_verdicts(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    with _opened(store_url) as app:
        ids, shoe_id = _deluxe(app)
        drawn = [
            (e.originator_version, UUID(e.round_id))
            for e in app.events.get(shoe_id)
            if isinstance(e, Shoe.CardDrawn)
        ]
    store = Store(store_url, tmp_path / "unused.pem", capsys)
    states = {v: s for v, _, s in store.rows(shoe_id)}
    # a card of the second round said to be the third's; a card of the fourth unreadable
    moved = next(v for v, r in drawn if r == ids[1])
    other = states[moved].replace(str(ids[1]).encode(), str(ids[2]).encode())
    store.set_state(shoe_id, moved, other)
    broken = next(v for v, r in drawn if r == ids[3])
    store.set_state(shoe_id, broken, b"not json")

    monkeypatch.setattr(replays.verify, "AHEAD", 2)  # the shoe's rounds across batches
    with _opened(store_url) as app:
        _bundles_agree(app, ids)
        indexed = _verdicts(app, ids)
        assert all(indexed), "every round of the changed shoe fails"
        shoe_found = [f for f in indexed[1] if f["check"] == "shoe"]
        assert shoe_found, indexed[1]
        monkeypatch.setattr(RoundBundle, "card_records", _walked)
        assert indexed == _verdicts(app, ids)


def test_a_leaf_rewritten_after_the_log_read_it_is_found_when_read_again(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setattr(replays.log, "_CACHE", 2)  # the first round's leaves leave the cache
    with _opened(store_url) as app:
        ids = [UUID(r) for r in simulate(app, variant="european", rounds=3, players=2).round_ids]
        verifier = StoreVerifier(app)  # reads the whole log: every leaf hashed into its tree
        assert verifier.verify(ids[0]).ok  # its leaves read again, hashed, kept
        assert verifier.verify(ids[0]).ok  # the same bytes: not hashed again
        store = Store(store_url, tmp_path / "unused.pem", capsys)
        state = store.rows(ids[0])[1][2]
        assert state.startswith(b"{")
        store.rewrite_with_leaf(ids[0], 2, b"{ " + state[1:])  # the same event, other bytes
        for rid in ids[1:]:  # the rewritten leaf leaves the cache
            verifier.verify(rid)
        found = [d.message for d in verifier.verify(ids[0]).discrepancies]
        assert any("rewritten since" in m for m in found), found


def test_verify_many_pauses_the_collector_only_while_it_works(
    app: RoundAudit, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [UUID(r) for r in simulate(app, variant="european", rounds=3, players=2).round_ids]
    inside: list[bool] = []
    verify_bundle = replays.verify.verify_bundle

    def watched(*args: Any, **kwargs: Any) -> Any:
        inside.append(gc.isenabled())
        return verify_bundle(*args, **kwargs)

    monkeypatch.setattr(replays.verify, "verify_bundle", watched)
    assert gc.isenabled()
    outside = [gc.isenabled() for v in StoreVerifier(app).verify_many(ids) if v.ok]
    assert inside == [False] * 3
    assert outside == [True] * 3
    assert gc.isenabled()
    stopped = StoreVerifier(app).verify_many(ids)
    assert next(stopped).ok
    stopped.close()  # the caller stops after one verdict
    assert gc.isenabled()
    gc.disable()  # a host that turned it off: left off
    try:
        assert all(v.ok for v in StoreVerifier(app).verify_many(ids))
        assert not gc.isenabled()
    finally:
        gc.enable()

    inside.clear()

    def failing(*args: Any, **kwargs: Any) -> Any:
        if len(inside) == 2:
            raise RuntimeError("the third round")
        return watched(*args, **kwargs)

    monkeypatch.setattr(replays.verify, "verify_bundle", failing)
    handed: list[bool] = []
    verdicts = StoreVerifier(app).verify_many(ids, on_verdict=lambda v: handed.append(v.ok))
    first = [next(verdicts).ok, next(verdicts).ok]
    with pytest.raises(RuntimeError, match="the third round"):
        next(verdicts)
    assert first == handed == [True, True]
    assert gc.isenabled()
