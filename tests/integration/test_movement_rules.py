"""Every wallet movement of a round cites the rule of the round event it books
(``domain.movements``): a settlement's OUT-x (and the like), a double's DBL-1 or a split's
SPLIT-1, a mirrored seat bet's DLX-2, a reversal's ERR-1; a placed bet's stake the rule of its
kind of bet (a classic main bet PHASE-1). The money check compares them, so a movement whose
rule was changed is named."""

from __future__ import annotations

import re
from pathlib import Path
from uuid import UUID

import pytest
from storekit import Store, sign

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from domain.round import Round
from domain.wallet import Wallet


def test_simulated_movements_cite_their_round_events_rules(tmp_path: Path) -> None:
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    try:
        ids = simulate(app, variant="european", rounds=6, players=3).round_ids
        seen = 0
        for rid in ids:
            events = list(app.events.get(UUID(rid)))
            settled = {e.wager_id: e for e in events if isinstance(e, Round.WagerSettled)}
            players = {e.player for e in settled.values()}
            for player in players:
                for m in app.events.get(Wallet.create_id(player)):
                    if getattr(m, "round_id", None) != rid:
                        continue
                    if isinstance(m, Wallet.PayoutCredited | Wallet.RefundCredited):
                        assert m.rule == settled[m.wager_id].rule
                        seen += 1
                    elif isinstance(m, Wallet.StakeDebited) and m.wager_id.endswith(":main"):
                        assert m.rule == "PHASE-1"
                        seen += 1
        assert seen > 0
    finally:
        app.close()


def test_a_movement_whose_rule_was_changed_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    app = RoundAudit(env=environment_for(url))
    # label-seeded shoes: the same rounds every run, with payouts (CSPRNG shoes left about one
    # run in 40 of 4 rounds without any winning hand, and this test without its movement)
    simulate(app, variant="european", rounds=4, players=3, reproducible_shoes=True)
    app.close()
    sign(url, tmp_path / "key.pem")
    store = Store(url, tmp_path / "key.pem", capsys)
    payouts = store.notifications("%Wallet.PayoutCredited")
    assert payouts, "the seeded rounds have winning hands"
    n, wid, version, _, state = payouts[0]
    store.set_state(wid, version, re.sub(rb'"rule":"[A-Z0-9-]+"', b'"rule":"OUT-9"', state))
    code, out = store.verify()
    assert code == 1, out
    assert re.search(
        r"\[money\] position \d+ Round.WagerSettled.wallet.rule: expected '[A-Z0-9-]+', "
        r"recorded 'OUT-9'",
        out,
    ), out
    assert n > 0


def test_a_stake_whose_rule_was_changed_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A main bet's stake booked as if it were a double's: the money check names it."""
    url = f"sqlite:///{tmp_path}/events.db"
    app = RoundAudit(env=environment_for(url))
    simulate(app, variant="european", rounds=2, players=2)
    app.close()
    sign(url, tmp_path / "key.pem")
    store = Store(url, tmp_path / "key.pem", capsys)
    stakes = [r for r in store.notifications("%Wallet.StakeDebited") if b'"rule":"PHASE-1"' in r[4]]
    _, wid, version, _, state = stakes[0]
    store.set_state(wid, version, state.replace(b'"rule":"PHASE-1"', b'"rule":"DBL-1"'))
    code, out = store.verify()
    assert code == 1, out
    assert re.search(
        r"\[money\] position \d+ Round.BetPlaced.wallet.rule: expected 'PHASE-1', "
        r"recorded 'DBL-1'",
        out,
    ), out
