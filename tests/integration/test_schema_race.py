"""Applications starting at once on one PostgreSQL store (service processes, ``seal
--follow`` workers started together) do not fail on their schema statements.

The library's application recorder runs ``CREATE OR REPLACE FUNCTION`` at every start (its
``es_insert_events_uuid``, even with database functions off): two sessions replacing the same
function at once make PostgreSQL refuse one with ``tuple concurrently updated`` (stop 40's CI:
one of two signers started together died of it). The hooked recorder runs its schema
statements under a transaction-level advisory lock (``domain.commits``), so
starts on a store whose schema exists take turns and none fails.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from pg import fresh_database

from domain.application import RoundAudit
from domain.persistence import environment_for

pytestmark = pytest.mark.postgres

STARTS, ROUNDS = 6, 8


def _at_once(n: int, fn: Callable[[], None]) -> list[BaseException]:
    """``fn`` in ``n`` threads released together; the exceptions they raised."""
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def run() -> None:
        barrier.wait()
        try:
            fn()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_applications_starting_at_once_on_an_existing_schema_all_start(
    postgres_url: str,
) -> None:
    with fresh_database(postgres_url) as url:
        RoundAudit(env=environment_for(url)).close()  # the schema, once (docs/operations.md)

        def start() -> None:
            RoundAudit(env=environment_for(url)).close()

        for _ in range(ROUNDS):
            errors = _at_once(STARTS, start)
            assert not errors, [repr(e) for e in errors]
