"""SQLite: the log's end known without a query, when nothing was committed since this store's
own last commit.

This module owns :class:`LogWatch`, which an application's SQLite file store
(``domain.sqlite_pool.plain_checkouts``) keeps beside its pool. Each command catches the
repository's cache up with the log (``domain.store.Watched.catch_up``): one query of the ids
written after its mark (7 % of a recorded round's samples outside the commit, with the pool's
checkout around it). A process writing alone already knows those ids: every save it commits
moves the mark past its own events (``Watched.saved``). What it cannot know without a read is
whether **another** writer committed since: another process, or another application of this
process on the same file (each has its own pool and connections). SQLite's ``PRAGMA
data_version`` is a connection's own (this store's other connections' commits count as
another's), so it cannot tell.

The database's write-ahead log can. In WAL mode every connection to the file, in any process,
finds the latest commit through the wal-index header at the start of the ``-shm`` file (the
file format: https://www.sqlite.org/walformat.html, section 2.2.1): 48 bytes, written twice
(the second copy first), whose ``iChange`` is incremented by every write transaction's commit,
with ``mxFrame``, the salts and the checksum of the last committed frame. Any commit by anyone
rewrites it (so does a WAL restart or a truncating checkpoint, which commits nothing: a
change all the same, so a read). So:

* **at a commit of this store** (:class:`domain.sqlite_pool.Transaction`, the only way its
  recorder commits events): inside the transaction, after its inserts (this connection holds
  the database's write lock: no one else can commit), the header is read (``before``); once
  the commit has returned it is read again (``after``). If ``after``'s ``iChange`` is
  ``before``'s plus one, exactly one transaction committed between the two reads: this one,
  and nothing after it yet. Then ``after`` is the header of a log whose last notification id
  is the last this transaction inserted (``inserted``, noted by the recorder's insert,
  ``domain.sqlite_reads.LeanReads._insert_events``). Anything else (no events inserted, a
  header not readable or its copies different, a count other than one, a failed commit or a
  rollback) forgets what was known. (The one case the count does not rule out: SQLite rebuilds
  the header, its counter from zero, when a writer died while writing it; between the two
  reads, the microseconds of this ``COMMIT``'s return, another process would have to commit,
  die writing the header, and the rebuilt counter land on exactly one more. Not guarded
  further.);
* **at a catch-up** (:meth:`LogWatch.log_end`): the header read again; if it is byte for
  byte the one known, nothing was committed since that commit by any connection of any
  process, and the log ends at its id. The repository skips its query only when its mark is
  that very id (its own saves reported up to it): then its query would have returned no row.
  Any other header, or no known one, and the query runs as before.

The header is read from a read-only mapping of the ``-shm`` file's first page (as SQLite's own
connections read it: no system call a read), made once a process and closed only once SQLite
has deleted the file (as the database's last connection, of any process, closes): closing any
descriptor of a file (the mapping holds one) drops every POSIX lock the process holds on it,
SQLite's own locks on the wal-index among them. A connection of its own (``pin``,
opened at the store's first commit, closed with the pool) keeps the wal-index mapped, so no
other process can delete or reinitialise the ``-shm`` file under the descriptor (SQLite does so
only as the file's last connection). A store in memory, not in WAL mode or not in the normal
locking mode has no watch: its catch-ups read. ``tests/integration/test_log_watch.py``: a
second writer (another application, another process) is seen, and a process alone reads no
tail.
"""

from __future__ import annotations

import mmap
import os
import sqlite3
import sys
import threading
from typing import Final

#: The wal-index header: two copies of 48 bytes at the start of the ``-shm`` file.
HEADER: Final = 48
#: The header's fields this module reads, in the machine's byte order: ``iVersion`` (bytes
#: 0-3, 3007000), ``iChange`` (8-11, the commits' counter), ``isInit`` (12, 1 once initialised).
VERSION: Final = (3007000).to_bytes(4, sys.byteorder)
#: The ``-shm`` files' descriptors and mappings of this process, by device and inode: made
#: once, closed only once SQLite has deleted the file (:func:`_sweep`).
_VIEWS: dict[tuple[int, int], tuple[int, mmap.mmap]] = {}
_VIEWS_LOCK = threading.Lock()
#: The bytes mapped: the first page (the wal-index is at least 32 KiB once initialised).
MAPPED: Final = mmap.PAGESIZE


def _ichange(header: bytes) -> int:
    return int.from_bytes(header[8:12], sys.byteorder)


class LogWatch:
    """What one SQLite file store knows of its log's end without a query (see the module
    docstring). Its writes are made one transaction at a time (the pool's writer lock): the
    transaction's steps (:meth:`begin`, ``inserted``, :meth:`committing`, :meth:`committed`,
    :meth:`forget`) are never concurrent; :meth:`log_end` may run in any thread."""

    __slots__ = ("_before", "_db", "_known", "_pin", "_started", "_view", "inserted")

    def __init__(self, db_name: str) -> None:
        self._db = db_name
        self._started = False  # at the store's first commit
        self._view: mmap.mmap | None = None  # the -shm file's first page (None: not watched)
        self._pin: sqlite3.Connection | None = None
        self._known: tuple[bytes, int] | None = None  # a header and the log's end under it
        self._before: bytes | None = None
        #: the last notification id the write transaction in progress inserted (None: none)
        self.inserted: int | None = None

    def header(self) -> bytes | None:
        """The wal-index header now (96 bytes), or None when not watched or not readable as
        one (its two copies different: a commit writing it)."""
        view = self._view
        if view is None:
            return None
        try:
            raw = view[: 2 * HEADER]
        except ValueError:  # closed by _sweep: the file was deleted (the pool closed)
            return None
        if len(raw) != 2 * HEADER or raw[:HEADER] != raw[HEADER:] or raw[12] != 1:
            return None
        return raw

    def log_end(self) -> int | None:
        """The log's last notification id, if nothing was committed to the database since
        this store's last commit whose end is known; else None (read the log)."""
        known, view = self._known, self._view
        if known is None or view is None:
            return None
        try:  # the known header is a whole one (checked when it was read): equal bytes suffice
            same = view[: 2 * HEADER] == known[0]
        except ValueError:  # closed by _sweep
            return None
        return known[1] if same else None

    # ------------------------------------------------------------ a write transaction
    def begin(self) -> None:
        """A write transaction of this store begins: nothing inserted yet."""
        self.inserted = self._before = None

    def committing(self) -> None:
        """Its inserts are done and it is about to commit (it holds the write lock)."""
        self._before = self.header() if self.inserted is not None else None

    def committed(self) -> None:
        """It has committed: the header after it is known with its last id when exactly this
        commit happened since :meth:`committing`."""
        before, last = self._before, self.inserted
        self._before = self.inserted = None
        self._known = None
        try:  # never raises: the transaction has committed
            if not self._started:
                self._start()
            after = self.header()
        except Exception:
            return
        if (
            before is None
            or after is None
            or last is None
            or (_ichange(after) - _ichange(before)) & 0xFFFFFFFF != 1
        ):
            return  # (nothing known: emptied above)
        self._known = (after, last)

    def forget(self) -> None:
        """It failed or rolled back: nothing is known until the next commit."""
        self._known = self._before = self.inserted = None

    # ------------------------------------------------------------ the -shm file
    def _start(self) -> None:
        """Open the pin and map the ``-shm`` file (at the store's first commit, when the file
        exists); a store that cannot be watched is not (``_view`` None)."""
        self._started = True
        try:
            pin = sqlite3.connect(self._db, uri=True, check_same_thread=False, isolation_level=None)
        except sqlite3.Error:
            return
        try:
            journal = str(pin.execute("PRAGMA journal_mode").fetchone()[0]).lower()
            locking = str(pin.execute("PRAGMA locking_mode").fetchone()[0]).lower()
            pin.execute("SELECT count(*) FROM sqlite_master").fetchone()  # maps the wal-index
            main = [str(r[2]) for r in pin.execute("PRAGMA database_list") if r[1] == "main"]
            if journal != "wal" or locking != "normal" or not main or not main[0]:
                raise OSError("not a file in WAL mode")
            view = _shm_view(main[0] + "-shm")
        except (sqlite3.Error, OSError, ValueError):
            pin.close()
            return
        self._pin, self._view = pin, view
        head = self.header()
        if head is None or head[:4] != VERSION:
            self.close()

    def close(self) -> None:
        """No more watching (the pool closes): the pin closed; the mappings of the ``-shm``
        files SQLite has deleted meanwhile closed (:func:`_sweep`)."""
        self._started, self._view, self._known = True, None, None
        pin, self._pin = self._pin, None
        if pin is not None:
            pin.close()
        _sweep()


def _shm_view(path: str) -> mmap.mmap:
    """This process's read-only mapping of the ``-shm`` file ``path``'s first page (made once,
    with its descriptor, until :func:`_sweep` finds the file deleted)."""
    st = os.stat(path)
    key = (st.st_dev, st.st_ino)
    with _VIEWS_LOCK:
        held = _VIEWS.get(key)
        if held is None:
            fd = os.open(path, os.O_RDONLY)  # once kept, closed only by _sweep (module docstring)
            try:
                opened = os.fstat(fd)
                if (opened.st_dev, opened.st_ino) != key or opened.st_size < MAPPED:
                    raise OSError(f"{path} changed while opened")
                held = (fd, mmap.mmap(fd, MAPPED, access=mmap.ACCESS_READ))
            except BaseException:  # not kept: nothing else would close it
                os.close(fd)
                raise
            _VIEWS[key] = held
    return held[1]


def _sweep() -> None:
    """Close the descriptors and mappings of the ``-shm`` files SQLite has deleted: it deletes
    one only as the last connection to its database (of any process) closes, so no connection
    of this process holds a lock on it any more and closing drops none (a store's watch sweeps
    as its pool closes: a process opening many stores keeps no descriptor of each).

    Never waits for the lock: a store closed by a finalizer (an unreachable application's
    ``__del__``, run by a garbage collection that may start inside :func:`_shm_view`, which
    holds the lock, in the very same thread) would wait for itself for ever. Skipped when the
    lock is taken, the sweep is left to the next store's close: a descriptor kept a little
    longer, never one closed early."""
    if not _VIEWS_LOCK.acquire(blocking=False):
        return
    try:
        for key, (fd, view) in list(_VIEWS.items()):
            try:
                gone = os.fstat(fd).st_nlink == 0
            except OSError:
                continue
            if gone:
                del _VIEWS[key]
                view.close()
                os.close(fd)
    finally:
        _VIEWS_LOCK.release()


__all__ = ["LogWatch"]
