"""The checkpoint signer: signs the log's tree as a C2SP checkpoint and has it witnessed.

This module owns what ``roundaudit seal`` does, once or as a worker (``--follow``, every
second by default): nothing is sealed here any more (every transaction seals its own events at
commit, ``domain.commit_leaf``); the signer

1. runs the one-time migration of a store written before seal-at-commit (backfill leaves,
   ``domain.leaf_writer.migrate``), at its first run;
2. when the log has grown since the last checkpoint, signs a ``tlog-checkpoint`` of the whole
   tree (origin, size, base64 root) as a ``signed-note`` with the operator's Ed25519 key, whose
   key name is the origin;
3. sends it to every configured witness (``tlog-witness`` add-checkpoint, with the RFC 6962
   consistency proof from the size that witness cosigned last; a ``409`` tells that size, and
   the request is made again from it), and adds the valid cosignatures it gets back;
4. stores the checkpoint, cosignatures included, in the log's table, with what each witness
   answered, and in the same transaction the tree's interior nodes completed since the last
   checkpoint (``replays.nodes``: every node, the first time), from which a verifier proves
   a round's leaves without reading the whole log.

It reads the log's tree alone (``replays.log.TreeLog``: the leaves hashed a page at a time,
never parsed or indexed), so a signer that follows a store holds two hashes a leaf, not an
index of every event; a caller that also verifies in the same process may give it its
``MerkleLog`` instead (the same tree).

It refuses to sign a tree that does not extend the last checkpoint (a log must never sign two
inconsistent checkpoints) and reports it; it reports a witness that has cosigned a larger tree
than the log now holds (the log was rolled back) or that refuses the tree as a fork.

The window in which an edit of stored events could go unseen is the time from a commit to the
next checkpoint a witness holds: the interval, plus signing and the witnesses' round trip
(measured in ``benchmarks/seal_window.py``, stated in docs/verification.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from domain.leaf_writer import migrate
from replays.coordination import signer_lock
from replays.log import MerkleLog, StoredCheckpoint, TreeLog, WitnessKey
from replays.nodes import node_rows, nodes_head
from replays.note import Note, NoteError, checkpoint_text, parse_note, sign, verify
from replays.witness import submit

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from eventsourcing.persistence import StoredEvent

    from domain.application import RoundAudit

__all__ = ["SignReport", "Signer"]


@dataclass
class SignReport:
    checkpoint: StoredCheckpoint | None = None
    size: int = 0
    migrated: int = 0  # backfill leaves written by the migration (first run only)
    witnessed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = []
        if self.migrated:
            out.append(f"migrated: {self.migrated} backfill leaves seal the events recorded before")
        cp = self.checkpoint
        if cp is not None:
            who = f"; cosigned by {', '.join(self.witnessed)}" if self.witnessed else ""
            out.append(
                f"checkpoint #{cp.number}: {cp.origin} size {cp.size} root {cp.root_b64}{who}"
            )
        return out


class Signer:
    """Signs and witnesses checkpoints of one store's log (see the module docstring)."""

    def __init__(
        self,
        app: RoundAudit,
        *,
        key: Ed25519PrivateKey,
        origin: str,
        witnesses: Sequence[WitnessKey] = (),
        timeout: float = 5.0,
        log: MerkleLog | None = None,
    ) -> None:
        self.app = app
        self.key = key
        self.origin = origin
        self.witnesses = tuple(witnesses)
        self.timeout = timeout
        self.log = log or TreeLog(app)
        self._sizes: dict[str, int] = {}
        self._migrated = False

    def run_once(self) -> SignReport:
        """One run, holding the store's signer lock (``replays.coordination``): signers of one
        store in several processes or on several hosts take turns, never interleave."""
        with signer_lock(self.app):
            return self._run_once()

    def _run_once(self) -> SignReport:
        report = SignReport()
        if not self._migrated:
            before = self.log.refresh().size
            after = migrate(self.app.commit_hook)
            report.migrated = max(0, after - before)
            self._migrated = True
        log = self.log.refresh()
        report.size = log.size
        latest = log.latest_checkpoint()
        if latest is not None:
            if latest.size > log.size:
                report.problems.append(
                    f"checkpoint #{latest.number} covers {latest.size} leaves but the log holds "
                    f"{log.size}: the log was rolled back; nothing is signed"
                )
                return report
            if log.tree.root(latest.size) != latest.root:
                report.problems.append(
                    f"the log's tree at size {latest.size} is not checkpoint #{latest.number}'s: "
                    "the log was rewritten; nothing is signed"
                )
                return report
            if latest.size == log.size and latest.origin == self.origin:
                return report  # nothing new: no checkpoint while the log does not grow
        text = checkpoint_text(self.origin, log.size, log.tree.root(log.size))
        note = Note(text, (sign(text, self.origin, self.key),))
        outcomes: dict[str, str] = {}
        for w in self.witnesses:
            if w.url is None:
                continue
            note, outcomes[w.name] = self._witness(w, note, log.size, report)
            if outcomes[w.name] == "cosigned":
                report.witnessed.append(w.name)
        report.checkpoint = log.add_checkpoint(
            note, witnesses=outcomes, with_rows=self._node_rows(log, report)
        )
        return report

    def _node_rows(self, log: MerkleLog, report: SignReport) -> list[StoredEvent]:
        """The interior nodes the checkpoint adds (``replays.nodes``): those completed since
        the size the stored nodes reach (all of them, the first time)."""
        head, stored = nodes_head(log.table)
        if stored > log.size:
            report.problems.append(
                f"nodes are stored up to size {stored}; the log holds {log.size}: none stored"
            )
            return []
        if stored == log.size:
            return []
        return node_rows(log.tree, stored, log.size, head)

    def _last_cosigned(self, w: WitnessKey) -> int:
        if w.name not in self._sizes:
            seen = [
                c.size
                for c in self.log.checkpoints()
                if c.note is not None and verify(c.note, w.key) == "valid"
            ]
            self._sizes[w.name] = max(seen, default=0)
        return self._sizes[w.name]

    def _witness(
        self, w: WitnessKey, note: Note, size: int, report: SignReport
    ) -> tuple[Note, str]:
        assert w.url is not None
        old = self._last_cosigned(w)
        for _ in range(2):
            if old > size:
                report.problems.append(
                    f"witness {w.name} has cosigned a tree of {old} leaves; the log holds "
                    f"{size}: the log was rolled back"
                )
                return note, f"rollback: the witness holds size {old}"
            try:
                proof = self.log.tree.consistency_proof(old, size) if old else []
                answer = submit(w.url, old, proof, note, timeout=self.timeout)
            except (OSError, ValueError) as exc:
                report.problems.append(f"witness {w.name} at {w.url} is unreachable ({exc})")
                return note, f"unreachable: {exc}"
            if answer.status == 409:
                try:
                    old = int(answer.body.decode().strip())
                except ValueError:
                    break
                self._sizes[w.name] = old
                continue
            if answer.status != 200:
                why = answer.body.decode(errors="replace").strip()
                report.problems.append(f"witness {w.name} refused: {answer.status} {why}")
                return note, f"refused {answer.status}: {why}"
            try:
                lines = parse_note(note.text + "\n" + answer.body.decode()).signatures
            except (NoteError, UnicodeDecodeError) as exc:
                report.problems.append(f"witness {w.name} answered no cosignature ({exc})")
                return note, "no cosignature"
            mine = [s for s in lines if s.name == w.key.name and s.key_id == w.key.id]
            signed = note.with_signatures(*mine)
            if verify(signed, w.key) != "valid":
                report.problems.append(f"witness {w.name} answered a cosignature that fails")
                return note, "bad cosignature"
            self._sizes[w.name] = size
            return signed, "cosigned"
        report.problems.append(f"witness {w.name} answered 409 with no usable size")
        return note, "refused 409"
