"""A command's idempotency record and its catch-up's read of the log in one round trip on
PostgreSQL, on one connection on SQLite (``domain.store.Watched.ahead``,
``domain.idempotency.IdempotencyStore.rows``, ``domain.log_tail.PostgresTail.rows_and_tail``,
``SQLiteTail.rows_and_tail``).

The tail read ahead serves the command's first catch-up only, within the request's scope:
it is as current as the read it replaces (made after the request arrived), so another
process's write is seen by the very next command, the answers are the same, a repeat answers
the first answer, and a conflict between two processes still has one winner.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from apikit import ADMIN_TOKEN, Api, service_settings
from eventsourcing.persistence import StoredEvent
from fastapi.testclient import TestClient

from api.main import create_app
from domain.application import RoundAudit
from domain.log_tail import PostgresTail, SQLiteTail
from domain.store import TAIL_PAGE, Watched, read_ahead
from domain.wallet import Wallet


def _repository(app: RoundAudit) -> Watched:
    repository = app.repository
    assert isinstance(repository, Watched)
    return repository


class CountingLog:
    """The repository's log, counting the tails it reads."""

    def __init__(self, real: Any) -> None:
        self.real, self.reads = real, 0

    def log_tail(self, after: int, limit: int) -> Sequence[tuple[int, Any, int]]:
        self.reads += 1
        rows: Sequence[tuple[int, Any, int]] = self.real.log_tail(after, limit)
        return rows

    def max_notification_id(self) -> int | None:
        found: int | None = self.real.max_notification_id()
        return found


def _written_behind(app: RoundAudit, player: str) -> None:
    """A wallet's opening stored without the repository seeing it (as another process's)."""
    events = Wallet.open(player, account_type="test").collect_events()
    app.recorder.insert_events([app.mapper.to_stored_event(e) for e in events])


def test_a_tail_read_ahead_serves_the_scopes_first_catch_up_only() -> None:
    app = RoundAudit()
    repository = _repository(app)
    app.open_wallet("ann", account_type="test")
    repository.catch_up()
    log = CountingLog(repository._log)
    repository._log = log
    assert repository.tail_wanted() is None  # outside a scope: nothing is read ahead
    repository.offer_tail(0, [])  # and nothing offered is kept
    repository.catch_up()
    assert log.reads == 1
    _written_behind(app, "bob")
    with read_ahead(app):
        after = repository.tail_wanted()
        assert after is not None
        repository.offer_tail(after, log.real.log_tail(after, TAIL_PAGE))
        repository.catch_up()
        assert log.reads == 1  # the tail read ahead, not read again
        assert app.balance("bob") == 0
        _written_behind(app, "cat")
        repository.catch_up()  # a second attempt in the scope reads for itself
        assert log.reads == 2
    with read_ahead(app):  # a full page is not kept: more may follow it
        after = repository.tail_wanted()
        assert after is not None
        full = [(after + 1 + i, app.repository.cache, 1) for i in range(TAIL_PAGE)]
        repository.offer_tail(after, full)  # type: ignore[arg-type]
        repository.catch_up()
        assert log.reads == 3
    app.close()


@pytest.mark.postgres
def test_a_postgres_command_reads_its_record_and_tail_in_one_round_trip(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two services on one store: each deposit's catch-up comes from the record's round trip,
    sees the other service's deposit at once, and answers as before; a repeat answers the
    first answer without recording; a conflict on one transaction id has one winner."""
    from pg import fresh_database

    with fresh_database(postgres_url) as url:
        _two_services(url, PostgresTail, monkeypatch)


def test_a_sqlite_command_reads_its_record_and_tail_on_one_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same on SQLite (two services on one database file): the record and the tail in
    one checkout of a connection, the catch-up reading nothing more."""
    _two_services(f"sqlite:///{tmp_path}/two.db", SQLiteTail, monkeypatch)


def _two_services(url: str, tail: type[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    with (
        TestClient(create_app(service_settings(url))) as one,
        TestClient(create_app(service_settings(url))) as two,
    ):
        a, b = Api(one), Api(two)
        a.wallet("ann", deposit="100.00")
        cashier = a.key("cashier")
        assert b.balance("ann") == "100.00"  # b's cache holds ann's wallet from here on
        together: list[int] = []
        real = tail.rows_and_tail

        def counted(self: Any, *args: Any) -> tuple[list[StoredEvent], Any]:
            if args[2] is not None:  # a tail asked for with the record
                together.append(1)
            return real(self, *args)  # type: ignore[no-any-return]

        monkeypatch.setattr(tail, "rows_and_tail", counted)
        audit_b: RoundAudit = two.app.state.audit  # type: ignore[attr-defined]
        log = CountingLog(_repository(audit_b)._log)
        _repository(audit_b)._log = log
        for n, (first, second) in enumerate([(a, b), (b, a), (a, b)]):
            first.ok("POST", "/wallets/ann/deposits", key=cashier,
                     json={"amount": "1.00", "transaction_id": f"a-{n}"})  # fmt: skip
            moved = second.ok("POST", "/wallets/ann/deposits", key=cashier,
                              json={"amount": "1.00", "transaction_id": f"b-{n}"})  # fmt: skip
            assert moved["balance"] == f"{102 + 2 * n}.00"  # the other's deposit seen at once
        assert log.reads == 0  # b's catch-ups all came with its idempotency records
        # the commands that follow the other service's write read the tail with their record
        # (b's first had no mark: it read the log's end); the two that follow their own
        # service's commit know the log ends at their mark and read none (domain.sqlite_watch)
        assert len(together) == (3 if tail is SQLiteTail else 5)
        again = b.ok("POST", "/wallets/ann/deposits", key=cashier,
                     json={"amount": "1.00", "transaction_id": "b-2"})  # fmt: skip
        assert again["balance"] == "106.00"  # the first answer, nothing recorded
        assert a.balance("ann") == "106.00"
        answers: list[Any] = []

        def send(api: Api) -> None:
            answers.append(api.ok("POST", "/wallets/ann/deposits", key=cashier,
                                  json={"amount": "5.00", "transaction_id": "both"}))  # fmt: skip

        threads = [threading.Thread(target=send, args=(x,)) for x in (a, b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(answers) == 2
        assert answers[0]["balance"] == answers[1]["balance"] == "111.00"
        assert a.ok("GET", "/wallets/ann", key=ADMIN_TOKEN)["balance"] == "111.00"
