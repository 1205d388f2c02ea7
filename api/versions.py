"""The last stored versions of several aggregates read in one round trip.

A request that checks its API key and then reads a kept answer (``GET /rounds/{id}``) needs
two versions from the store: the key's (``api.auth.KeyCache``: a revocation by any process
holds at once) and the round's (``api.roundviews``). On PostgreSQL each point query is a
network round trip; :func:`last_versions` reads both in **one statement** (one indexed
``ORDER BY originator_version DESC LIMIT 1`` per id, joined by ``UNION ALL``), in the same
snapshot, when the request is served. Every other store (SQLite, in memory) reads each id
with the recorder's own ``select_events``: a local point query costs no round trip.

:class:`Known` carries what was read to the checks that need it, which read for themselves
any id it does not hold: what is decided is the same either way, only the number of round
trips changes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

#: Versions read for a request: id -> its last stored version (None: nothing stored).
Known = Mapping[UUID, int | None]
NOTHING: Known = {}


def last_version(recorder: Any, originator_id: UUID) -> int | None:
    """The version of the last event stored for ``originator_id`` (None: nothing stored)."""
    last = recorder.select_events(originator_id, desc=True, limit=1)
    return int(last[0].originator_version) if last else None


def version_of(recorder: Any, originator_id: UUID, known: Known) -> int | None:
    """``originator_id``'s last version: from ``known`` when it holds it, else read."""
    if originator_id in known:
        return known[originator_id]
    return last_version(recorder, originator_id)


def last_versions(recorder: Any, ids: Sequence[UUID]) -> dict[UUID, int | None]:
    """Each id's last stored version: one statement on PostgreSQL, one point query per id
    elsewhere."""
    wanted = list(dict.fromkeys(ids))
    if len(wanted) > 1 and _is_postgres(recorder):
        return _pg_last_versions(recorder, wanted)
    return {i: last_version(recorder, i) for i in wanted}


def _is_postgres(recorder: Any) -> bool:
    from eventsourcing.postgres import PostgresAggregateRecorder

    return isinstance(recorder, PostgresAggregateRecorder)


_STATEMENTS: dict[tuple[int, str, str], Any] = {}


def _statement(recorder: Any, n: int) -> Any:
    from psycopg.sql import SQL, Identifier

    schema, table = recorder.datastore.schema, recorder.events_table_name
    key = (n, schema, table)
    found = _STATEMENTS.get(key)
    if found is None:
        one = SQL(
            "(SELECT originator_id, originator_version FROM {schema}.{table} "
            "WHERE originator_id = %s ORDER BY originator_version DESC LIMIT 1)"
        ).format(schema=Identifier(schema), table=Identifier(table))
        found = _STATEMENTS[key] = SQL(" UNION ALL ").join([one] * n)
    return found


def _pg_last_versions(recorder: Any, ids: list[UUID]) -> dict[UUID, int | None]:
    out: dict[UUID, int | None] = dict.fromkeys(ids)
    with recorder.datastore.get_connection() as conn, conn.cursor() as curs:
        curs.execute(_statement(recorder, len(ids)), ids, prepare=True)
        for row in curs.fetchall():
            rid = row["originator_id"]
            out[rid if isinstance(rid, UUID) else UUID(str(rid))] = int(row["originator_version"])
    return out


__all__ = ["NOTHING", "Known", "last_version", "last_versions", "version_of"]
