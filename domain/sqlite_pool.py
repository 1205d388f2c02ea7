"""The SQLite connection pool of a RoundAudit store: which idle connection a read or a
transaction gets, and how many stay open.

This module owns :func:`newest_first`, which the hooked SQLite recorder
(``domain.commits.HookedSQLiteApplicationRecorder``) applies to its store's pool (the
library's ``SQLiteConnectionPool``): idle connections are taken newest first
(:class:`NewestFirst`) and up to :data:`SQLITE_IDLE_CONNECTIONS` of them stay open. SQLite
drops a connection's whole page cache when it finds the database changed by another
connection since its last read, so a read on a connection idle since the latest commit pays
to read its pages again (a point read 20-40 us against 7 on a current cache); the connection
returned last is the most likely to have a current cache. What a read sees does not depend
on the connection: every read is a snapshot of the committed database.
"""

from __future__ import annotations

from collections import deque
from typing import Any

#: Idle connections the SQLite pool keeps open (the library's default 5, its overflow 10
#: beyond it): a command's worker threads (8) and the event loop's reads use more at once,
#: and a connection returned above the pool's size was closed and, soon after, opened again
#: (a new connection reads the schema and every page it needs anew).
SQLITE_IDLE_CONNECTIONS = 16


class NewestFirst(deque[Any]):
    """The SQLite pool's idle connections, the one returned last taken first: the library's
    pool takes them oldest first (``popleft``), so a read got the connection that had been
    idle longest, whose page cache another connection's commit had most likely made stale
    (SQLite drops a connection's whole cache when it finds the database changed by another
    connection since its last read: a point read then costs 2-4x its time on a warm cache).
    The connection returned last is most often the one whose cache is current: the group
    commit's own, or the one a read used just before, with no commit since."""

    def popleft(self) -> Any:
        return self.pop()


def newest_first(pool: Any) -> None:
    """Make ``pool`` (the library's SQLite connection pool) take its idle connections newest
    first (:class:`NewestFirst`) and keep up to :data:`SQLITE_IDLE_CONNECTIONS` of them."""
    pool._pool = NewestFirst(pool._pool)
    pool.pool_size = max(pool.pool_size, SQLITE_IDLE_CONNECTIONS)


__all__ = ["SQLITE_IDLE_CONNECTIONS", "NewestFirst", "newest_first"]
