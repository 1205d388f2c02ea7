"""A round's command reads the round's shoe only when it needs it (``Rounds._run`` through
``domain.services.base.ShoeOf``), on memory, SQLite and PostgreSQL: a bet draws no card and
reads no shoe; a command that owes the round cards reads it once and draws them; the command
that finishes a round dealt from its own RNG shoe (D3) reads it and retires it; a refusal
that needs no shoe reads none and records nothing."""

from __future__ import annotations

from uuid import UUID

import pytest

from domain.application import RoundAudit
from domain.errors import WrongOrder
from tests.integration.test_cache_current import calls_of


def test_a_round_reads_its_shoe_only_when_a_command_needs_it(
    app_on_every_store: RoundAudit, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = app_on_every_store
    app.open_wallet("p", account_type="test")
    app.deposit("p", "100.00", transaction_id="d")
    rid = app.start_round(table_id="t", round_number=1, variant="european", production=False)
    sid = app.round(rid).shoe_id
    stored = app.recorder.select_events

    reads = calls_of(monkeypatch, app, "shoe")
    app.place_bet(rid, player="p", amount="10.00", spot=1)
    assert reads == []  # a bet draws no card
    assert len(stored(UUID(sid))) == 1  # the shoe: opened, nothing drawn

    version = app.recorder.select_events(UUID(rid))[-1].originator_version
    with pytest.raises(WrongOrder, match="round needs no card now"):
        app.deal_card(rid, "AS")  # an RNG round in betting: refused before the shoe is asked
    assert reads == []
    assert app.recorder.select_events(UUID(rid))[-1].originator_version == version

    app.close_betting(rid)
    assert reads == [sid]  # read once, the initial deal drawn from it
    drawn = [e for e in stored(UUID(sid)) if e.topic.endswith("CardDrawn")]
    assert len(drawn) >= 3  # european: two to the box, one to the dealer (no hole card)

    while not app.round(rid).finished:
        reads.clear()
        if app.round(rid).phase == "insurance":  # an ace up: the window closes, declined
            app.close_insurance_window(rid)
        else:
            app.decide(rid, player="p", action="stand")
    assert reads == [sid]  # the command that finished the round: the dealer's cards drawn
    shoe = app.shoe(sid)
    assert shoe.retired  # D3: its own shoe retired, the seed revealed
    topics = [e.topic.rsplit(".", 1)[-1] for e in stored(UUID(sid))]
    assert topics[-2:] == ["SeedRevealed", "Retired"]
