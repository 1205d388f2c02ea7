"""The verifier's own state of a store's Merkle log: what it already checked (a monitor's).

This module owns the **state file** a verifier keeps between runs (``StoreVerifier(app,
state=PATH)``, ``roundaudit verify --state PATH``), and the log that reads through it
(:class:`StatefulLog`, a :class:`~replays.log.MerkleLog` whose tree and index come from the
state instead of from reading every leaf of the store again). It is what a Certificate
Transparency monitor keeps: the verifier's own record, outside the audited database, of the
log it has seen.

**What the state keeps** (one SQLite file, format :data:`FORMAT`):

* ``meta``: the format, the log's origin (the key name of its checkpoints, when it had one),
  the size and root of the tree the verifier holds;
* ``nodes``: every complete aligned subtree hash of that tree (level 0: each leaf's hash), so
  the tree can be extended by new leaves (its frontier is the right edge of these) and any
  root, inclusion or consistency proof up to its size costs O(log n) look-ups;
* ``leaves``: each leaf's kind (a transaction's, a backfill, a legacy round leaf, ``other``);
* ``entries``: the verifier's **own** index of which (stream, version) each leaf commits to,
  made from leaves whose hashes are those in ``nodes``;
* ``rounds`` and ``round_leaves``: the rounds the leaves start (in log order) and the legacy
  round leaves;
* ``checkpoints``: each checkpoint it checked (number, size, final or not, the SHA-256 of its
  stored row), and in ``meta`` the number of the last one, of the last final one, and the
  trust policy they were checked under (:func:`policy_digest`).

**Why it is trusted.** Everything in it was computed by the verifier from leaves it read and
hashed itself; nothing in it comes from the operator's word. A later run reads only the log's
**new tail** and extends the kept tree with it: the old tree is a prefix of the new one by
construction (its frontier is extended, never recomputed), so a checkpoint whose root is not
this tree's at its size is a fork or a rewrite (the checks of ``replays.verify`` say so).
Each leaf a round needs is read again from the store and compared with the hash kept here (a
rewritten old leaf is found), and the index here says which records a round must have (a
record deleted together with any index row of the operator's is still found: the index is the
verifier's). The last leaf the state holds and the first one are read again at every run: a
store whose log is shorter than the state's is a ``rollback`` finding, another leaf there a
``fork`` finding, never a silent reset (the state is not saved while the log has a finding).
A state file of another log's origin, or one that does not read as this format, is refused
with :class:`StateError`. The file is as trustworthy as the machine that keeps it: keep it
where the operator cannot write (the auditor's own machine).

**Checkpoints.** A run reads only the checkpoints after the last one the state checked
(:meth:`StatefulLog.unchecked_checkpoints`; ``replays.log.check_checkpoints`` checks each one
against the kept tree and the one before it) and marks as checked those that pass, up to the
first that does not. It reads the last checked one again and compares its row with the hash
kept (changed, deleted or re-signed under its number: a finding, the state not saved); the
checkpoint a round's evidence uses is the last (final) one checked when no newer one covers
the round (checked sizes never go down), read alone and compared the same way; ``reread``
compares every one checked. Checkpoints checked under another trust policy count as not
checked (all are checked again under the new one).

**When it is saved.** After every refresh that found nothing wrong with the kept part of the
log: the new leaves' nodes, kinds and entries are appended in one SQLite transaction. A
verifier with no state (an empty or new file) reads the whole log once, as without state, and
saves all of it; ``reread=True`` (``verify --all`` / ``--since``) does so too and checks that
the store's log still extends the kept tree, naming every leaf that differs.

**Long-lived verifiers** (:func:`long_lived_log`: the web service's log, one per process) are
opened through the state like a run, then save what they read since at a refresh at most every
:data:`KEEP_EVERY` seconds (:meth:`StatefulLog.keep`), the checkpoints that pass included (they
count as checked from then on). A reader that never saves (:func:`read_log`: a worker of
``verify --workers``) opens the state the driver saved.

**Several verifiers** may keep one file (the processes of ``serve --workers N``): each has its
own connection, shared by its threads under a lock; every save is one ``BEGIN IMMEDIATE``
transaction that reads the file's size and root again first (:meth:`VerifierState._may_save`):
a file another verifier brought further is extended when its tree is a prefix of this log
(the same leaves written again, unchanged), left alone when this log is a prefix of its, and
anything else is a ``fork`` finding (the two read different logs; the file is kept). The
checkpoint marks never go down, and a checkpoint kept keeps the hash it was first checked with.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from array import array
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from hashlib import sha256
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from uuid import UUID

from domain.commit_leaf import LEAVES_ID, ParsedLeaf
from replays.log import (
    CHECKPOINTS_ID,
    KeptCheckpoint,
    MerkleLog,
    StoredCheckpoint,
    TrustPolicy,
    check_checkpoints,
    checkpoint_digest,
    checkpoint_row,
)
from replays.merkle import EMPTY_ROOT, MerkleTree, leaf_hash, node_hash

if TYPE_CHECKING:
    from domain.application import RoundAudit

FORMAT: Final = "roundaudit-verifier-state/1"
#: Seconds a verifier waits for another's transaction on the same file before it gives up.
_BUSY: Final = 30.0

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE nodes (level INTEGER NOT NULL, idx INTEGER NOT NULL, hash BLOB NOT NULL,
                    PRIMARY KEY (level, idx)) WITHOUT ROWID;
CREATE TABLE leaves (idx INTEGER PRIMARY KEY, kind TEXT NOT NULL);
CREATE TABLE entries (stream BLOB NOT NULL, version INTEGER NOT NULL, leaf INTEGER NOT NULL,
                      PRIMARY KEY (stream, version)) WITHOUT ROWID;
CREATE TABLE rounds (seq INTEGER PRIMARY KEY, round_id BLOB NOT NULL UNIQUE);
CREATE TABLE round_leaves (round_id BLOB PRIMARY KEY, leaf INTEGER NOT NULL) WITHOUT ROWID;
"""
_TABLES: Final = ("meta", "nodes", "leaves", "entries", "rounds", "round_leaves")
#: The checkpoints the verifier checked (a table a state made before it kept them gets at
#: its first opening: such a state has checked none yet). ``final``: cosigned by the quorum
#: of the witness policy it was checked under.
_CHECKPOINTS = """
CREATE TABLE IF NOT EXISTS checkpoints (number INTEGER PRIMARY KEY, size INTEGER NOT NULL,
                                        digest BLOB NOT NULL, final INTEGER NOT NULL);
"""

__all__ = [
    "FORMAT",
    "KEEP_EVERY",
    "NO_STATE",
    "STATE_ENV",
    "StateError",
    "StatefulLog",
    "VerifierState",
    "default_state_path",
    "holds",
    "long_lived_log",
    "open_log",
    "read_log",
    "state_path",
]

#: Seconds between two saves of a long-lived log's new leaves (:func:`long_lived_log`).
KEEP_EVERY: Final = 10.0


class StateError(RuntimeError):
    """The state file is refused: unreadable, of another format, of another log, or damaged."""


#: The environment variable naming the verifier's state file, for ``roundaudit verify`` and
#: the web service alike; :data:`NO_STATE` keeps none.
STATE_ENV: Final = "ROUNDAUDIT_VERIFIER_STATE"
NO_STATE: Final = "none"


def state_path(given: str | None, database_url: str, state_home: str | None) -> Path | None:
    """The state file a setting names: ``given`` (a path; ``none``: no state, None); when
    ``given`` is empty or None, :func:`default_state_path` of the store."""
    if given is not None and given.strip():
        return None if given.strip().lower() == NO_STATE else Path(given.strip())
    return default_state_path(database_url, state_home)


def default_state_path(database_url: str, state_home: str | None = None) -> Path:
    """The CLI's state file of a store when none is given: one file per database URL under
    ``<state_home>/roundaudit/verifier/`` (the CLI passes ``$XDG_STATE_HOME``;
    ``~/.local/state`` when unset)."""
    home = Path(state_home) if state_home else Path.home() / ".local" / "state"
    name = sha256(database_url.encode()).hexdigest()[:16]
    return home / "roundaudit" / "verifier" / f"{name}.sqlite"


# ------------------------------------------------------------------------------ the file
class VerifierState:
    """One state file (see the module docstring), opened or created."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        #: One connection, shared by the threads of a process (the web service's requests
        #: read the kept tree through it): every use holds this lock, a transaction for its
        #: whole length. Other processes open their own (the module's "Several verifiers").
        self._lock = threading.RLock()
        try:
            self.db = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=_BUSY
            )
            with self._transaction():  # two verifiers may create the file at once
                tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master")}
                if not tables:
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            self.db.execute(statement)
                    self._put({"format": FORMAT, "size": "0", "root": EMPTY_ROOT.hex()})
                meta = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
                if "checkpoints" not in tables and meta.get("format") == FORMAT:
                    self.db.execute(_CHECKPOINTS)
        except sqlite3.Error as exc:
            raise StateError(f"{self.path} is not a verifier state file ({exc})") from exc
        if (tables and not set(_TABLES) <= tables) or meta.get("format") != FORMAT:
            raise StateError(
                f"{self.path} is not a verifier state file of format {FORMAT} "
                f"(format {meta.get('format')!r})"
            )
        self.size, self.root = self._tree_mark(meta)
        self.origin: str | None = meta.get("origin")
        try:
            #: The number of the last checkpoint checked, of the last final one among them
            #: (0: none), and the policy they were checked under (:func:`policy_digest`).
            self.checkpoint = int(meta.get("checkpoint", "0"))
            self.final = int(meta.get("final", "0"))
        except ValueError as exc:
            raise StateError(f"{self.path}: its checkpoint mark is unreadable ({exc})") from exc
        self.policy = meta.get("policy", "")

    def _tree_mark(self, meta: dict[str, str]) -> tuple[int, bytes]:
        """The size and root of the tree ``meta`` names, checked."""
        try:
            size, root = int(meta["size"]), bytes.fromhex(meta["root"])
        except (KeyError, ValueError) as exc:
            raise StateError(f"{self.path}: its size or root is unreadable ({exc})") from exc
        if size < 0 or len(root) != 32:
            raise StateError(f"{self.path}: size {size} or its root is damaged")
        return size, root

    def _meta(self) -> dict[str, str]:
        """The meta rows as the file holds them now (another verifier may have saved)."""
        return dict(self._all("SELECT key, value FROM meta"))

    def close(self) -> None:
        with self._lock:
            self.db.close()

    def _put(self, values: dict[str, str]) -> None:
        self.db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", values.items())

    # ------------------------------------------------------------------ reads
    def _all(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        with self._lock:
            return self.db.execute(sql, params).fetchall()

    def _one(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        with self._lock:
            return self.db.execute(sql, params).fetchone()

    def node(self, level: int, idx: int) -> bytes:
        row = self._one("SELECT hash FROM nodes WHERE level = ? AND idx = ?", (level, idx))
        if row is None or len(row[0]) != 32:
            raise StateError(f"{self.path}: the node {level}/{idx} of its tree is missing")
        return bytes(row[0])

    def leaf_hashes(self) -> list[bytes]:
        return [bytes(r[0]) for r in self._all("SELECT hash FROM nodes WHERE level = 0")]

    def kind(self, idx: int) -> str:
        row = self._one("SELECT kind FROM leaves WHERE idx = ?", (idx,))
        if row is None:
            raise StateError(f"{self.path}: the kind of leaf {idx} is missing")
        return str(row[0])

    def kinds(self) -> list[str]:
        return [str(r[0]) for r in self._all("SELECT kind FROM leaves ORDER BY idx")]

    def leaves_of_kind(self, kind: str) -> list[int]:
        return [int(r[0]) for r in self._all("SELECT idx FROM leaves WHERE kind = ?", (kind,))]

    def entries_of(self, stream: UUID) -> list[tuple[int, int]]:
        return self._all(
            "SELECT version, leaf FROM entries WHERE stream = ? ORDER BY version", (stream.bytes,)
        )

    def has_round(self, round_id: UUID) -> bool:
        return self._one("SELECT 1 FROM rounds WHERE round_id = ?", (round_id.bytes,)) is not None

    def round_ids(self) -> list[UUID]:
        rows = self._all("SELECT round_id FROM rounds ORDER BY seq")
        return [UUID(bytes=bytes(r[0])) for r in rows]

    def round_leaf(self, round_id: UUID) -> int | None:
        row = self._one("SELECT leaf FROM round_leaves WHERE round_id = ?", (round_id.bytes,))
        return None if row is None else int(row[0])

    def kept_checkpoints(self) -> list[tuple[int, bytes]]:
        """(number, digest) of every checkpoint checked."""
        rows = self._all("SELECT number, digest FROM checkpoints ORDER BY number")
        return [(int(n), bytes(d)) for n, d in rows]

    def checkpoint_size(self, number: int) -> int:
        row = self._one("SELECT size FROM checkpoints WHERE number = ?", (number,))
        if row is None:
            raise StateError(f"{self.path}: the checkpoint #{number} it checked is missing")
        return int(row[0])

    def checkpoint_digest(self, number: int) -> bytes | None:
        row = self._one("SELECT digest FROM checkpoints WHERE number = ?", (number,))
        return None if row is None else bytes(row[0])

    # ------------------------------------------------------------------ writes
    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")  # waits for another process's (``_BUSY``)
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    def _may_save(self, log: MerkleLog) -> bool:
        """Inside a saving transaction: whether ``log`` may be written into the file as it is
        now. Another verifier of the same file (another service process) may have saved since
        this one read it: its tree must be a prefix of ``log``'s (then ``log`` is written over
        it, the same leaves again and the new ones), or ``log``'s of its (then the file is
        ahead and keeps what it holds: nothing is written). Anything else is a ``fork``
        finding on ``log``: the two verifiers read different logs, and the file is kept."""
        size, root = self._tree_mark(self._meta())
        if size == self.size and root == self.root:
            return True
        if size < self.size:  # no verifier's save shortens the file: it was replaced
            raise StateError(
                f"{self.path} holds {size} leaves, fewer than the {self.size} it held when this "
                "verifier opened it: the file was replaced or damaged"
            )
        ahead = size > log.size
        theirs = StateTree(self, size).root(log.size) if ahead else root
        ours = log.tree.root() if ahead else log.tree.root(size)
        if theirs != ours:
            at = min(size, log.size)
            log.findings.append(
                (
                    "fork",
                    f"leaf {at - 1}",
                    f"the verifier's state holds {size} leaves (root {root.hex()}), saved by "
                    f"another verifier of {self.path} since this one read it; the store's log "
                    f"read here is not that tree at {at} leaves: the log was rewritten, or "
                    "the two read different logs",
                )
            )
            return False
        if ahead:
            return False
        self.size, self.root = size, root
        return True

    def save_full(self, log: MerkleLog, origin: str | None) -> bool:
        """Replace the state by what ``log`` (a log read whole) holds (False: not saved, see
        :meth:`_may_save`)."""
        tree = log.tree
        with self._transaction() as db:
            if not self._may_save(log):
                return False
            for table in _TABLES[1:]:
                db.execute(f"DELETE FROM {table}")  # the module's own table names
            db.executemany(
                "INSERT INTO nodes VALUES (?, ?, ?)",
                ((lv, i, h) for lv, row in enumerate(tree.levels) for i, h in enumerate(row)),
            )
            db.executemany("INSERT INTO leaves VALUES (?, ?)", enumerate(log.kinds))
            db.executemany(
                "INSERT INTO entries VALUES (?, ?, ?)",
                (
                    (oid.bytes, v, leaf)
                    for oid, versions in log._where.items()
                    for v, leaf in enumerate(versions, start=1)
                    if leaf >= 0
                ),
            )
            db.executemany(
                "INSERT INTO rounds (round_id) VALUES (?)", ((r.bytes,) for r in log._rounds)
            )
            db.executemany(
                "INSERT INTO round_leaves VALUES (?, ?)",
                ((r.bytes, i) for r, i in log._round_leaf.items()),
            )
            self._finish(log, origin)
        return True

    def save_tail(self, log: StatefulLog, origin: str | None) -> bool:
        """Append what ``log`` read after the state's size (False: not saved, see
        :meth:`_may_save`; the leaves another verifier saved meanwhile are the same: written
        again, unchanged)."""
        with self._transaction() as db:
            if not self._may_save(log):
                return False
            tree = log.tree
            db.executemany(
                "INSERT OR REPLACE INTO nodes VALUES (?, ?, ?)",
                ((lv, i, h) for (lv, i), h in tree.new.items()),
            )
            db.executemany(
                "INSERT OR IGNORE INTO leaves VALUES (?, ?)",
                ((log.kinds.base + n, k) for n, k in enumerate(log.kinds.new)),
            )
            db.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?, ?)", log.new_entries)
            db.executemany(
                "INSERT OR IGNORE INTO rounds (round_id) VALUES (?)",
                ((r.bytes,) for r in dict.__iter__(log._rounds)),
            )
            db.executemany(
                "INSERT OR REPLACE INTO round_leaves VALUES (?, ?)",
                ((r.bytes, i) for r, i in dict.items(log._round_leaf)),
            )
            self._finish(log, origin)
        return True

    def save_checkpoints(
        self,
        rows: list[tuple[int, int, bytes, bool]],
        *,
        policy: str,
        final: int,
        replace: bool,
    ) -> None:
        """Record checkpoints checked: (number, size, digest, final) each, in number order
        (``replace``: instead of those kept, checked under another policy; kept when none
        passes under it, so that the last one checked is still compared at every run)."""
        if not rows:
            return
        with self._transaction() as db:
            # another verifier of the file may have checked more under the same policy since
            # this one read it: the marks never go down, and a checkpoint kept stays as it was
            # first checked (a row changed since is then a finding at the next run)
            now = self._meta()
            mark = last_final = 0
            if now.get("policy") == policy:
                replace = False
                mark, last_final = int(now.get("checkpoint", "0")), int(now.get("final", "0"))
            if replace:
                db.execute("DELETE FROM checkpoints")
            db.executemany(
                "INSERT OR IGNORE INTO checkpoints VALUES (?, ?, ?, ?)",
                ((n, size, digest, int(final)) for n, size, digest, final in rows),
            )
            self.checkpoint = max(mark, rows[-1][0])
            self.policy, self.final = policy, max(last_final, final)
            self._put(
                {"checkpoint": str(self.checkpoint), "policy": policy, "final": str(self.final)}
            )

    def _finish(self, log: MerkleLog, origin: str | None) -> None:
        self.size, self.root = log.size, log.tree.root()
        self.origin = origin or self.origin
        values = {"size": str(self.size), "root": self.root.hex()}
        if self.origin:
            values["origin"] = self.origin
        self._put(values)


# ------------------------------------------------------------------------------ the log
class StateTree(MerkleTree):
    """The tree the state keeps, read node by node (cached), extended in memory by new leaves
    (``new``: the nodes to append to the state)."""

    def __init__(self, state: VerifierState, size: int | None = None) -> None:
        self.state = state
        self.size = state.size if size is None else size
        self.new: dict[tuple[int, int], bytes] = {}
        self._seen: dict[tuple[int, int], bytes] = {}

    def __len__(self) -> int:
        return self.size

    def _node(self, level: int, idx: int) -> bytes:
        key = (level, idx)
        found = self.new.get(key) or self._seen.get(key)
        if found is None:
            found = self._seen[key] = self.state.node(level, idx)
        return found

    def extend(self, hashes: Iterable[bytes]) -> None:
        for h in hashes:  # the kept nodes are read one by one: no pass over a whole level
            self.append(h)

    def append(self, h: bytes) -> int:
        index = i = self.size
        level = 0
        self.new[(0, i)] = h
        while i & 1:  # a left sibling completes the subtree above
            h = node_hash(self._node(level, i - 1), h)
            level, i = level + 1, i >> 1
            self.new[(level, i)] = h
        self.size += 1
        return index

    def leaf(self, index: int) -> bytes:
        if not 0 <= index < self.size:
            raise IndexError(index)
        return self._node(0, index)


class _Kinds:
    """The leaves' kinds: the state's, then the new leaves' (a list's reads and ``append``)."""

    def __init__(self, state: VerifierState) -> None:
        self.state, self.base, self.new = state, state.size, list[str]()
        self._seen: dict[int, str] = {}

    def __len__(self) -> int:
        return self.base + len(self.new)

    def __getitem__(self, index: int) -> str:
        if index >= self.base:
            return self.new[index - self.base]
        if index < 0:
            raise IndexError(index)
        found = self._seen.get(index)
        if found is None:
            found = self._seen[index] = self.state.kind(index)
        return found

    def __iter__(self) -> Iterator[str]:
        yield from self.state.kinds()[: self.base]
        yield from self.new

    def __eq__(self, other: object) -> bool:
        return list(self) == other

    __hash__ = None  # type: ignore[assignment]

    def append(self, kind: str) -> None:
        self.new.append(kind)


class _Where(dict[UUID, "array[int]"]):
    """Per stream, the leaf of each version: read from the state's index on first use."""

    def __init__(self, state: VerifierState) -> None:
        super().__init__()
        self.state = state
        self._absent: set[UUID] = set()

    def get(self, oid: UUID, default: None = None) -> array[int] | None:  # type: ignore[override]
        found = super().get(oid)
        if found is not None or oid in self._absent:
            return found
        rows = self.state.entries_of(oid)
        if not rows:
            self._absent.add(oid)
            return None
        versions = array("q", [-1]) * rows[-1][0]
        for version, leaf in rows:
            versions[version - 1] = leaf
        self[oid] = versions
        return versions

    def __setitem__(self, oid: UUID, versions: array[int]) -> None:
        self._absent.discard(oid)
        super().__setitem__(oid, versions)


class _Rounds(dict[UUID, None]):
    """The rounds the leaves start: the state's, then the new ones (held here)."""

    def __init__(self, state: VerifierState) -> None:
        super().__init__()
        self.state = state

    def __contains__(self, rid: object) -> bool:
        return super().__contains__(rid) or (isinstance(rid, UUID) and self.state.has_round(rid))

    def setdefault(self, rid: UUID, default: None = None) -> None:
        if not self.__contains__(rid):
            super().__setitem__(rid, None)

    def __iter__(self) -> Iterator[UUID]:
        known = self.state.round_ids()
        yield from known
        seen = set(known)
        yield from (r for r in super().__iter__() if r not in seen)


class _RoundLeaf(dict[UUID, int]):
    """Legacy round leaves: the state's, then the new ones (held here)."""

    def __init__(self, state: VerifierState) -> None:
        super().__init__()
        self.state = state

    def get(self, rid: UUID, default: None = None) -> int | None:  # type: ignore[override]
        found = super().get(rid)
        return found if found is not None else self.state.round_leaf(rid)


class StatefulLog(MerkleLog):
    """A store's log read through a verifier's state: the kept tree and index, and the leaves
    appended since (see the module docstring)."""

    def __init__(
        self, app: RoundAudit, state: VerifierState, policy: TrustPolicy | None = None
    ) -> None:
        super().__init__(app)
        self.state = state
        #: The checkpoints checked before (through #``mark``) count only when they were
        #: checked under this run's policy; else every stored one is checked again.
        self.mark = state.checkpoint if state.policy == policy_digest(policy) else 0
        self._final = state.final if self.mark else 0
        self._fresh: list[tuple[StoredCheckpoint, bytes]] | None = None
        self._kept: KeptCheckpoint | None = None
        self._kept_rows: dict[int, StoredCheckpoint | None] = {}
        self.tree: StateTree = StateTree(state)
        self.kinds: _Kinds = _Kinds(state)  # type: ignore[assignment]
        self._where = _Where(state)
        self._rounds = _Rounds(state)
        self._round_leaf = _RoundLeaf(state)
        #: (stream, version, leaf) of the entries of the new leaves, to append to the state.
        self.new_entries: list[tuple[bytes, int, int]] = []
        self._checked = False
        #: A long-lived log (:func:`long_lived_log`) saves its new leaves at a refresh at most
        #: every ``keep_every`` seconds; None: only when told (:meth:`keep`).
        self.keep_every: float | None = None
        self.policy, self.pinned = policy, policy.origin if policy is not None else None
        self._kept_at = time.monotonic()

    def _index_all(self, leaf: ParsedLeaf, index: int, span: tuple[int, int]) -> None:
        super()._index_all(leaf, index, span)
        get = self._where.get
        for oid, version, _ in leaf.located():
            versions = get(oid)
            if (
                versions is not None
                and 0 < version <= len(versions)
                and versions[version - 1] == index
            ):
                self.new_entries.append((oid.bytes, version, index))

    def refresh(self) -> MerkleLog:
        """Check the kept part's ends against the store (once), then read the new tail."""
        if not self._checked:
            self._checked = True
            self._check_kept()
            self._check_kept_checkpoint()
            if self.findings:
                return self  # a log that does not extend the kept one: nothing more is read
        self._fresh = None
        every = self.keep_every
        if every is not None:  # a long-lived log compares its kept checkpoints' rows again
            self._kept_rows = {}
        super().refresh()
        if every is not None and time.monotonic() - self._kept_at >= every:
            self._kept_at = time.monotonic()
            if self.kinds.new:
                # the file busy past _BUSY (another process's save): saved the next time
                with suppress(sqlite3.OperationalError):
                    self.keep(self.state.origin or store_origin(self, self.pinned), self.policy)
        return self

    # ------------------------------------------------------------------ checkpoints
    def _read_checkpoint(self, number: int) -> tuple[StoredCheckpoint, bytes] | None:
        row = self.checkpoint_row_at(number)
        return None if row is None else (checkpoint_row(row), bytes(row.state))

    def _kept_row_problem(self, number: int) -> StoredCheckpoint | None:
        """Checkpoint #``number`` read again from the store, when it is still the one the
        state checked; else None and a finding (deleted, or changed since)."""
        if number in self._kept_rows:
            return self._kept_rows[number]
        found = self._read_checkpoint(number)
        digest = self.state.checkpoint_digest(number)
        cp = None
        if found is None:
            self._find(
                (
                    "rollback",
                    f"checkpoint #{number}",
                    f"the verifier checked checkpoint #{number}; the store no longer holds "
                    "it: it was deleted (the checkpoints were cut back)",
                )
            )
        elif digest is None or checkpoint_digest(found[1]) != digest:
            self._find(
                (
                    "consistency",
                    f"checkpoint #{number}",
                    f"the store's checkpoint #{number} is not the one the verifier checked: "
                    "it was changed since",
                )
            )
        else:
            cp = found[0]
        self._kept_rows[number] = cp
        return cp

    def _find(self, finding: tuple[str, str, str]) -> None:
        if finding not in self.findings:  # a long-lived log reads a kept row again
            self.findings.append(finding)

    def _check_kept_checkpoint(self) -> None:
        """The store still holds the last checkpoint the state checked, the same."""
        if self.state.checkpoint:
            self._kept_row_problem(self.state.checkpoint)

    def fresh_checkpoints(self) -> list[tuple[StoredCheckpoint, bytes]]:
        """The checkpoints after the ones checked (#``mark``), with their rows' bytes."""
        if self._fresh is None:
            rows = self.table.select_events(CHECKPOINTS_ID, gt=self.mark)
            self._fresh = [(checkpoint_row(r), bytes(r.state)) for r in rows]
        return self._fresh

    def unchecked_checkpoints(self) -> list[StoredCheckpoint]:
        return [cp for cp, _ in self.fresh_checkpoints()]

    def kept_checkpoint(self) -> KeptCheckpoint | None:
        if not self.mark:
            return None
        if self._kept is None:
            size = self.state.checkpoint_size(self.mark)
            if size > self.state.size:
                raise StateError(
                    f"{self.state.path}: checkpoint #{self.mark} is larger than its tree"
                )
            final = self.state.checkpoint_size(self._final) if self._final else None
            self._kept = KeptCheckpoint(
                self.mark, size, self.tree.root(size), self.state.origin, final
            )
        return self._kept

    def kept_covering(self, last_leaf: int, final: TrustPolicy | None) -> StoredCheckpoint | None:
        # the checked checkpoints' sizes never go down: the last (final) one checked covers
        # the leaf when any (final) one checked does; no checkpoint is searched. Which were
        # final is known only under the policy they were checked under.
        if final is not None and policy_digest(final) != self.state.policy:
            return None
        number = self._final if final is not None else self.mark
        if not number or self.state.checkpoint_size(number) <= last_leaf:
            return None
        return self._kept_row_problem(number)

    def save_checkpoints(self, policy: TrustPolicy | None) -> None:
        """Record the new checkpoints that pass every check (up to the first that does not:
        it and those after it are read and checked again at the next run)."""
        if self.findings:
            return
        _save_checkpoints(
            self.state, self, policy, self.fresh_checkpoints(), self.kept_checkpoint()
        )

    def _check_kept(self) -> None:
        """The store still holds the first and the last leaf the state keeps, the same."""
        size = self.state.size
        if size == 0:
            return
        for index in sorted({0, size - 1}):
            rows = self.table.select_events(LEAVES_ID, gt=index, lte=index + 1)
            if not rows:
                self.findings.append(
                    (
                        "rollback",
                        f"leaf {index}",
                        f"the verifier's state holds {size} leaves (root "
                        f"{self.state.root.hex()}), the store's log no leaf {index}: "
                        "it was cut back (or the leaf deleted)",
                    )
                )
                return
            if leaf_hash(bytes(rows[0].state)) != self.tree.leaf(index):
                self.findings.append(
                    (
                        "fork",
                        f"leaf {index}",
                        f"the store's leaf {index} is not the one the verifier's state "
                        f"checked (its tree of {size} leaves, root {self.state.root.hex()}): "
                        "the log was rewritten or is another log",
                    )
                )
                return

    def missing_leaf_row(self) -> int | None:
        """A leaf row stored after the contiguous tail (the kept part's rows are checked
        against the state's hashes when a round reads them, and all by ``verify --all``)."""
        if self.findings:
            return None
        beyond = self.table.select_events(LEAVES_ID, gt=self.size, limit=1)
        return self.size if beyond else None

    def other_leaves(self) -> list[int]:
        kinds = self.kinds
        return self.state.leaves_of_kind("other") + [
            kinds.base + n for n, k in enumerate(kinds.new) if k == "other"
        ]

    def keep(self, origin: str | None, policy: TrustPolicy | None) -> bool:
        """Save what a long-lived log (the web service's) read since it was opened or last
        kept, and the checkpoints checked since, as :func:`open_log` does at opening; the
        checkpoints saved then count as checked (False: nothing saved: a finding, or another
        verifier of the file is ahead)."""
        with self._lock:
            if self.findings or not _checkpoints_match(self, self.state.size):
                return False
            if not self.save(origin):
                return False
            self.save_checkpoints(policy)
            if self.state.policy == policy_digest(policy):
                self.mark, self._final = self.state.checkpoint, self.state.final
                self._kept, self._fresh = None, None
            return True

    def save(self, origin: str | None) -> bool:
        """Append the new tail to the state (not when the log has a finding)."""
        if self.findings or not self.state.save_tail(self, origin):
            return False
        self.tree._seen.update(self.tree.new)
        self.tree.new = {}
        self.kinds = _Kinds(self.state)
        self.new_entries = []
        dict.clear(self._rounds)
        dict.clear(self._round_leaf)
        return True


# ------------------------------------------------------------------------------ checkpoints
def policy_digest(policy: TrustPolicy | None) -> str:
    """What names a trust policy in the state: its operator key, origin, witnesses, quorum
    (checkpoints checked under another policy are checked again)."""
    policy = policy or TrustPolicy()
    parts = [
        policy.operator.vkey() if policy.operator is not None else "",
        policy.origin or "",
        str(policy.quorum),
        *sorted(w.key.vkey() for w in policy.witnesses),
    ]
    return sha256("\n".join(parts).encode()).hexdigest()


def _save_checkpoints(
    state: VerifierState,
    log: MerkleLog,
    policy: TrustPolicy | None,
    fresh: list[tuple[StoredCheckpoint, bytes]],
    kept: KeptCheckpoint | None,
) -> None:
    """Record in ``state`` the checkpoints of ``fresh`` (read after ``kept``) that pass every
    check of :func:`replays.log.check_checkpoints`, up to the first that does not."""
    policy = policy or TrustPolicy()
    digests = {cp.number: row for cp, row in fresh}
    origin = kept.origin if kept is not None else None
    last_final = state.final if kept is not None else 0
    rows: list[tuple[int, int, bytes, bool]] = []
    checks = check_checkpoints(log, policy, (cp for cp, _ in fresh), previous=kept, origin=origin)
    for cp, problems in checks:
        if problems or cp.size > log.size:
            break
        final = cp.note is not None and policy.final(cp)
        if final:
            last_final = cp.number
        rows.append((cp.number, cp.size, checkpoint_digest(digests[cp.number]), final))
    state.save_checkpoints(
        rows, policy=policy_digest(policy), final=last_final, replace=kept is None
    )


def _compare_checkpoints(
    log: MerkleLog, state: VerifierState, fresh: list[tuple[StoredCheckpoint, bytes]]
) -> None:
    """Findings for checkpoints the state checked that the store (read whole) no longer holds
    or holds changed."""
    stored = {cp.number: checkpoint_digest(row) for cp, row in fresh}
    for number, digest in state.kept_checkpoints():
        found = stored.get(number)
        if found is None:
            log.findings.append(
                (
                    "rollback",
                    f"checkpoint #{number}",
                    f"the verifier checked checkpoint #{number}; the store no longer holds "
                    "it: it was deleted",
                )
            )
        elif found != digest:
            log.findings.append(
                (
                    "consistency",
                    f"checkpoint #{number}",
                    f"the store's checkpoint #{number} is not the one the verifier checked: "
                    "it was changed since",
                )
            )


# ------------------------------------------------------------------------------ opening
def store_origin(log: MerkleLog, pinned: str | None) -> str | None:
    """The log's origin: the pinned one, else its latest C2SP checkpoint's (None: unknown)."""
    return pinned or log.latest_origin()


def open_log(
    app: RoundAudit,
    path: str | os.PathLike[str],
    *,
    origin: str | None = None,
    reread: bool = False,
    policy: TrustPolicy | None = None,
    keep_every: float | None = None,
) -> MerkleLog:
    """The store's log through the verifier's state at ``path`` (created when missing), brought
    up to date and the state saved when nothing is wrong with the part it kept. With no state
    yet, or ``reread``, the whole log is read (and, with a state, compared with it).
    ``keep_every``: a long-lived :class:`StatefulLog` (also with no state yet) that saves again
    at its refreshes (:attr:`StatefulLog.keep_every`). :class:`StateError` for a state file
    that is refused."""
    state = VerifierState(path)
    try:
        log: MerkleLog
        if (state.size == 0 and keep_every is None) or reread:
            log = MerkleLog(app).refresh()
            rows = log.table.select_events(CHECKPOINTS_ID)
            fresh = [(checkpoint_row(r), bytes(r.state)) for r in rows]
            log._checkpoints = [cp for cp, _ in fresh]  # read once, with their rows' bytes
            found = store_origin(log, origin)
            _same_origin(state, found)
            if state.size:
                _compare(log, state)
            _compare_checkpoints(log, state, fresh)
            if (
                not log.findings
                and _checkpoints_match(log, state.size)
                and state.save_full(log, found)
            ):
                _save_checkpoints(state, log, policy, fresh, None)
            state.close()
            return log
        stateful = StatefulLog(app, state, policy)
        found = store_origin(stateful, origin)
        _same_origin(state, found)
        stateful.refresh()
        if keep_every is not None:  # its checkpoints saved count as checked from now on
            stateful.keep(found, policy)
            stateful.keep_every = keep_every
        elif _checkpoints_match(stateful, state.size) and stateful.save(found):
            stateful.save_checkpoints(policy)
        return stateful
    except BaseException:
        state.close()
        raise


def read_log(
    app: RoundAudit, path: str | os.PathLike[str], policy: TrustPolicy | None = None
) -> StatefulLog:
    """The store's log through the state at ``path`` for a reader that never saves (a worker
    of ``verify --workers``: the driver saved the state): its ends checked, its new tail
    read. :class:`StateError` when the file holds no state."""
    state = VerifierState(path)
    if state.size == 0:
        state.close()
        raise StateError(f"{path}: the state holds no log")
    log = StatefulLog(app, state, policy)
    log.refresh()
    return log


def holds(path: str | os.PathLike[str], log: MerkleLog) -> bool:
    """Whether the state at ``path`` holds exactly ``log``'s tree (its size and root)."""
    state = VerifierState(path)
    try:
        return state.size == log.size and state.root == log.tree.root()
    finally:
        state.close()


def long_lived_log(
    app: RoundAudit, path: str | os.PathLike[str] | None, policy: TrustPolicy | None = None
) -> MerkleLog:
    """The log a long-lived verifier keeps (the web service, one per process): through the
    state at ``path`` (None: none, the whole log read), saving its new leaves and the
    checkpoints checked at a refresh at most every :data:`KEEP_EVERY` seconds. With no state
    yet, the whole log is read once and saved, then opened through the state. Several
    processes may keep the same file (:meth:`VerifierState._may_save`)."""
    if path is None:
        return MerkleLog(app).refresh()
    origin = policy.origin if policy is not None else None
    return open_log(app, path, origin=origin, policy=policy, keep_every=KEEP_EVERY)


def _checkpoints_match(log: MerkleLog, kept: int) -> bool:
    """Whether every stored checkpoint over the leaves read after the state's ``kept`` ones is
    the tree's at its size: a tail that a checkpoint contradicts is not kept (``verify_log``
    reports the checkpoint; the next run reads that tail again)."""
    return all(
        log.tree.root(c.size) == c.root
        for c in log.unchecked_checkpoints()
        if c.error is None and kept < c.size <= log.size
    )


def _same_origin(state: VerifierState, origin: str | None) -> None:
    if state.origin and origin and state.origin != origin:
        raise StateError(
            f"{state.path} is the state of the log {state.origin!r}; this store's log is "
            f"{origin!r}: give the state file of this log (or a new file)"
        )


def _compare(log: MerkleLog, state: VerifierState) -> None:
    """Findings for a log read whole that does not extend the state's tree."""
    if log.size < state.size:
        log.findings.append(
            (
                "rollback",
                f"leaf {log.size}",
                f"the verifier's state holds {state.size} leaves (root {state.root.hex()}), "
                f"the store's log {log.size}: it was cut back",
            )
        )
    if log.size >= state.size and log.tree.root(state.size) == state.root:
        return
    kept = state.leaf_hashes()
    for index in range(min(log.size, state.size)):
        if log.tree.leaf(index) != kept[index]:
            log.findings.append(
                (
                    "fork",
                    f"leaf {index}",
                    f"the store's leaf {index} is not the one the verifier's state checked: "
                    "the log was rewritten",
                )
            )
