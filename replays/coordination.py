"""Work that one process at a time may do on a store, whichever machine it runs on.

This module owns the locks through which several service and worker processes on one store
take turns, so that every process can stay stateless:

* :func:`signer_lock`: the checkpoint signer (``replays.signer``). Signing reads the log's
  size and the last checkpoint, signs, asks the witnesses, then stores the checkpoint under the
  next number: two signers interleaving could store a checkpoint smaller than the one before
  it, or two of the same tree. On PostgreSQL the lock is a session-level advisory lock
  (``pg_advisory_lock``) held on one pooled connection for the run: another process, on any
  host, waits for it; a process that dies releases it with its session. On SQLite (one
  machine) it is an ``flock`` on ``<database>.signer.lock`` beside the file; in memory, a
  thread lock.

The Merkle log's *leaves* need no lock of their own: each transaction writes its leaf under
the events table's lock (``LOCK TABLE ... IN EXCLUSIVE MODE``, ``domain.commits``), which
already orders every writer of the database, in any process.
"""

from __future__ import annotations

import contextlib
import fcntl
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

__all__ = ["SIGNER_LOCK_KEY", "signer_lock"]

#: The advisory lock key of the checkpoint signer (a stable 32-bit number).
SIGNER_LOCK_KEY: Final = zlib.crc32(b"roundaudit-checkpoint-signer")
_memory_lock = threading.Lock()


@contextlib.contextmanager
def signer_lock(app: Any) -> Iterator[None]:
    """Hold the store's signer lock for the block (waits for another holder)."""
    from eventsourcing.postgres import PostgresDatastore
    from eventsourcing.sqlite import SQLiteDatastore

    datastore = getattr(app.recorder, "datastore", None)
    if isinstance(datastore, PostgresDatastore):
        with datastore.get_connection() as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (SIGNER_LOCK_KEY,))
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (SIGNER_LOCK_KEY,))
        return
    if isinstance(datastore, SQLiteDatastore) and not datastore.pool.db_name.startswith("file:"):
        path = Path(datastore.pool.db_name + ".signer.lock")
        with path.open("a+b") as f:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)
        return
    with _memory_lock:
        yield
