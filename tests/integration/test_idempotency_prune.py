"""Idempotency records are pruned after the window, never before (SQLite, PostgreSQL, and the
``roundaudit idempotency prune`` command)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cli.main import main
from domain.application import RoundAudit
from domain.idempotency import Answer, Record, now_text, record_id


def put(app: RoundAudit, key: str, at: datetime) -> Record:
    r = Record(
        record_id("k1", key), "k1", key, "fp", "POST", "/x", now_text(at), answer=Answer(200, b"{}")
    )
    assert app.idempotency.put(r)
    return r


def test_prune_keeps_every_record_younger_than_the_window(store_env: dict[str, str]) -> None:
    now = datetime.now(UTC)
    with RoundAudit(env=store_env) as app:
        old = put(app, "old", now - timedelta(days=7, seconds=1))
        edge = put(app, "edge", now - timedelta(days=7) + timedelta(seconds=5))
        young = put(app, "young", now - timedelta(hours=1))
        assert app.idempotency.prune(now=now) == 1
        assert app.idempotency.get(old.record_id) == []
        assert app.idempotency.get(edge.record_id)
        assert app.idempotency.get(young.record_id)
        assert app.idempotency.prune(window=timedelta(minutes=30), now=now) == 2
        assert app.idempotency.get(young.record_id) == []
        # a pruned key is free again
        assert app.idempotency.put(young)


def test_the_prune_command(store_url: str, capsys: object) -> None:
    from domain.persistence import environment_for

    with RoundAudit(env=environment_for(store_url)) as app:
        put(app, "a", datetime.now(UTC) - timedelta(days=8))
        put(app, "b", datetime.now(UTC))
    assert main(["--database-url", store_url, "idempotency", "prune"]) == 0
    assert main(["--database-url", store_url, "idempotency", "prune", "--window", "0s"]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "pruned 1 idempotency record(s)" in out
