"""The view of a finished boundless round, asked of an instance that never saw it (an API
worker started later, a dispute page opened weeks after), reads the log from the round's start
to its end, not to the end of the log: however much was played since, the answer costs the
same (it reads at most one page past the round's end). SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from cli.simulate import simulate
from domain.application import RoundAudit


def test_an_old_round_view_stops_reading_at_the_round_end(store_env: dict[str, str]) -> None:
    app = RoundAudit(store_env)
    try:
        old = simulate(app, variant="boundless", rounds=1, players=3, table="old").round_ids[0]
        expected = app.round_view(old)
        simulate(app, variant="boundless", rounds=3, players=3, table="later")
        simulate(app, variant="european", rounds=3, players=2)
        last = int(app.recorder.max_notification_id() or 0)
    finally:
        app.close()
    fresh = RoundAudit(store_env)
    try:
        read: list[int] = []
        select = fresh.recorder.select_notifications

        def counting(*args: Any, **kwargs: Any) -> Any:
            notes = select(*args, **kwargs)
            read.extend(n.id for n in notes)
            return notes

        fresh.recorder.select_notifications = counting  # type: ignore[method-assign]
        fresh.boundless.page_size = 20  # pages smaller than what was played after the round
        view = fresh.round_view(old)
        assert view == expected
        assert view["phase"] == "settled"
        assert read
        assert max(read) < last  # stopped at the old round's end, long before the log's
        again = len(read)
        assert fresh.round_view(old) == expected
        assert len(read) == again  # a finished round's index reads nothing more
    finally:
        fresh.close()
