"""The seed vault: RNG shoes' seeds, sealed at rest with a key the database does not hold.

An RNG shoe records only the SHA-256 commitment of its seed; the seed itself is kept here,
outside the notification log (table ``stored_sealed_seeds`` / ``roundaudit_sealed_seeds``),
until the shoe retires and reveals it as an event (``Shoe.SeedRevealed``). Anyone who could read
a seed before then would know every card still to come, so each one is **encrypted with
AES-256-GCM** under the seed key (:class:`SeedKeyRing`), which lives in a file named by
``ROUNDAUDIT_SEED_KEY`` (read by the web layer and the command line; the application receives
the keys as an argument). A database reader sees commitments and ciphertexts only.

**Sealed format** (72 bytes for a 32-byte seed): ``b"RAS\\x01"`` | key id (8 bytes) | nonce
(12 bytes) | ciphertext and tag. The additional data is the shoe's id, so a ciphertext moved
to another shoe's row does not open. The key id is the first 8 bytes of SHA-256 over a label
and the key: a row names the key that sealed it, and a missing key is named in the error.

**Several keys** (rotation): a key file may hold more than one key, one per line; the first
seals, all of them open. Rotation: put the new key first (the old one after it) on every
service, then ``roundaudit seed-key rotate`` re-seals every seed under the new key in one
transaction, then drop the old line (docs/operations.md).

**Plaintext seeds** of a store written before seeds were encrypted are refused when read
(:class:`SeedNotEncrypted`, naming the command that fixes it) and make the service refuse to
start; ``roundaudit seed-key migrate`` seals them in place.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from uuid import UUID

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from eventsourcing.persistence import AggregateRecorder, StoredEvent

from domain.errors import DomainError

MAGIC: Final = b"RAS\x01"
KEY_BYTES: Final = 32
KEY_ID_BYTES: Final = 8
NONCE_BYTES: Final = 12
PLAINTEXT_SEED_BYTES: Final = 32
SEED_TOPIC: Final = "roundaudit:sealed-seed"
_KEY_ID_LABEL: Final = b"roundaudit seed key\x00"
_AAD_LABEL: Final = b"roundaudit sealed seed\x00"
_HEADER: Final = len(MAGIC) + KEY_ID_BYTES + NONCE_BYTES

KEY_FILE_HEADER: Final = (
    "# roundaudit seed key (AES-256-GCM): keep it out of the database and of its backups.\n"
    "# The first key seals new seeds; keys on further lines still open older ones (rotation:\n"
    "# docs/operations.md). One key per line, 32 bytes in URL-safe base64.\n"
)


class SeedVaultError(DomainError):
    """A sealed seed cannot be opened with the configured keys (a service configuration
    problem, not the client's: HTTP 503)."""

    code = "seed-vault-error"
    status = 503


class SeedKeyMissing(SeedVaultError):
    code = "seed-key-missing"


class SeedNotEncrypted(SeedVaultError):
    code = "seed-not-encrypted"


class SeedKeyError(ValueError):
    """A seed key file that does not hold usable keys."""


def key_id(key: bytes) -> str:
    """The 16-hex-digit id of a seed key (first 8 bytes of SHA-256 over a label and it)."""
    return hashlib.sha256(_KEY_ID_LABEL + key).digest()[:KEY_ID_BYTES].hex()


@dataclass(frozen=True)
class SeedKeyRing:
    """The seed keys: the first seals, every one opens."""

    keys: tuple[bytes, ...]

    def __post_init__(self) -> None:
        for k in self.keys:
            if len(k) != KEY_BYTES:
                raise SeedKeyError(f"a seed key is {KEY_BYTES} bytes, not {len(k)}")

    @classmethod
    def locked(cls) -> SeedKeyRing:
        """No key at all: sealing and opening are refused with a message that names the
        setting (a command line run without ``ROUNDAUDIT_SEED_KEY``'s file)."""
        return cls(())

    @classmethod
    def generate(cls) -> SeedKeyRing:
        return cls((secrets.token_bytes(KEY_BYTES),))

    @classmethod
    def parse(cls, text: str) -> SeedKeyRing:
        """Keys from a key file's text: one URL-safe base64 key per line, ``#`` comments.

        >>> ring = SeedKeyRing.generate()
        >>> SeedKeyRing.parse(ring.render()) == ring
        True
        """
        keys: list[bytes] = []
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            try:
                key = base64.urlsafe_b64decode(line + "=" * (-len(line) % 4))
            except ValueError:
                raise SeedKeyError(f"line {number} is not URL-safe base64") from None
            if len(key) != KEY_BYTES:
                raise SeedKeyError(f"line {number} holds {len(key)} bytes, not {KEY_BYTES}")
            keys.append(key)
        if not keys:
            raise SeedKeyError("the seed key file holds no key")
        return cls(tuple(keys))

    def render(self) -> str:
        """The key file's text (the header, then one key per line)."""
        lines = [base64.urlsafe_b64encode(k).decode().rstrip("=") for k in self.keys]
        return KEY_FILE_HEADER + "\n".join(lines) + "\n"

    @property
    def current_id(self) -> str:
        self._require()
        return key_id(self.keys[0])

    def _require(self) -> None:
        if not self.keys:
            raise SeedKeyMissing(
                "no seed key is configured: ROUNDAUDIT_SEED_KEY names the key file that seals "
                "RNG seeds (roundaudit serve creates it on first start; docs/operations.md)"
            )

    def ids(self) -> list[str]:
        return [key_id(k) for k in self.keys]

    def with_new_key(self) -> SeedKeyRing:
        """A ring whose first key is new and which still opens with every current key."""
        return SeedKeyRing((secrets.token_bytes(KEY_BYTES), *self.keys))

    def __repr__(self) -> str:  # never print key material
        return f"SeedKeyRing(ids={self.ids()})"

    # --------------------------------------------------------------------- sealing
    def seal(self, shoe_id: UUID, seed: bytes) -> bytes:
        self._require()
        key = self.keys[0]
        nonce = secrets.token_bytes(NONCE_BYTES)
        sealed = AESGCM(key).encrypt(nonce, seed, _AAD_LABEL + shoe_id.bytes)
        return MAGIC + bytes.fromhex(key_id(key)) + nonce + sealed

    def open(self, shoe_id: UUID, state: bytes) -> bytes:
        kind = classify(state)
        if kind == "plaintext":
            raise SeedNotEncrypted(
                f"the seed of shoe {shoe_id} is stored in plaintext (a store from before seeds "
                "were encrypted): run `roundaudit seed-key migrate` (docs/operations.md)"
            )
        if kind != "sealed":
            raise SeedVaultError(f"the sealed seed of shoe {shoe_id} is damaged")
        self._require()
        wanted = state[len(MAGIC) : len(MAGIC) + KEY_ID_BYTES].hex()
        nonce = state[len(MAGIC) + KEY_ID_BYTES : _HEADER]
        for key in self.keys:
            if key_id(key) == wanted:
                try:
                    return AESGCM(key).decrypt(nonce, state[_HEADER:], _AAD_LABEL + shoe_id.bytes)
                except InvalidTag:
                    raise SeedVaultError(
                        f"the sealed seed of shoe {shoe_id} does not open with key {wanted}: "
                        "it was altered or moved from another shoe"
                    ) from None
        raise SeedKeyMissing(
            f"the seed of shoe {shoe_id} is sealed with seed key {wanted}, which the configured "
            f"key file does not hold (it holds {', '.join(self.ids())}): restore that key"
        )


def classify(state: bytes) -> str:
    """``sealed``, ``plaintext`` (a 32-byte seed stored as it is) or ``damaged``."""
    if state.startswith(MAGIC) and len(state) > _HEADER + 16:
        return "sealed"
    if len(state) == PLAINTEXT_SEED_BYTES:
        return "plaintext"
    return "damaged"


@dataclass
class Inventory:
    """What the vault holds: sealed seeds per key id, plaintext and damaged rows."""

    sealed: dict[str, int] = field(default_factory=dict)
    plaintext: int = 0
    damaged: int = 0

    @property
    def total(self) -> int:
        return sum(self.sealed.values()) + self.plaintext + self.damaged

    def as_json(self) -> dict[str, Any]:
        return {
            "sealed": dict(self.sealed),
            "plaintext": self.plaintext,
            "damaged": self.damaged,
            "total": self.total,
        }


#: A process-wide key for applications given none (tests, throwaway in-memory stores): a
#: store sealed with it cannot be opened by another process. The service and the command
#: line always pass the key of ``ROUNDAUDIT_SEED_KEY``.
_EPHEMERAL: list[SeedKeyRing] = []


def ephemeral_ring() -> SeedKeyRing:
    if not _EPHEMERAL:
        _EPHEMERAL.append(SeedKeyRing.generate())
    return _EPHEMERAL[0]


class SeedVault:
    """The sealed-seed table of one store, opened with one key ring."""

    def __init__(self, recorder: AggregateRecorder, ring: SeedKeyRing) -> None:
        self.recorder = recorder
        self.ring = ring

    def sealed_row(self, shoe_id: UUID, seed: bytes) -> StoredEvent:
        """The vault's row of a new shoe's seed, sealed: written by the transaction that
        records the shoe (``domain.side_rows``), never on its own."""
        return StoredEvent(
            originator_id=shoe_id,
            originator_version=1,
            topic=SEED_TOPIC,
            state=self.ring.seal(shoe_id, seed),
        )

    def open(self, shoe_id: UUID) -> bytes | None:
        """The seed of ``shoe_id`` (None when the vault has none)."""
        found = self.recorder.select_events(shoe_id)
        if not found:
            return None
        return self.ring.open(shoe_id, bytes(found[-1].state))

    # --------------------------------------------------------------------- the table
    def inventory(self) -> Inventory:
        inv = Inventory()
        for _, _, state in _rows(self.recorder):
            kind = classify(state)
            if kind == "sealed":
                kid = state[len(MAGIC) : len(MAGIC) + KEY_ID_BYTES].hex()
                inv.sealed[kid] = inv.sealed.get(kid, 0) + 1
            elif kind == "plaintext":
                inv.plaintext += 1
            else:
                inv.damaged += 1
        return inv

    def problems(self) -> list[str]:
        """Why a service must not start on this vault with this ring (empty: it may)."""
        inv = self.inventory()
        out: list[str] = []
        if inv.plaintext:
            out.append(
                f"the seed vault holds {inv.plaintext} plaintext seed(s) (a store from before "
                "seeds were encrypted): run `roundaudit seed-key migrate` first"
            )
        unknown = sorted(set(inv.sealed) - set(self.ring.ids()))
        if unknown and not self.ring.keys:
            out.append(
                f"the seed vault holds {sum(inv.sealed.values())} sealed seed(s) but no seed key "
                "is configured (ROUNDAUDIT_SEED_KEY): restore the key file"
            )
        elif unknown:
            out.append(
                f"the seed vault holds seeds sealed with seed key(s) {', '.join(unknown)}, which "
                f"the key file does not hold (it holds {', '.join(self.ring.ids())}): restore "
                "the key file"
            )
        return out

    def reseal(self) -> dict[str, int]:
        """Re-seal every seed not sealed with the ring's first key (plaintext ones included)
        under it, all in one transaction. Returns how many were re-sealed and kept."""
        changes: list[tuple[UUID, int, bytes]] = []
        kept = 0
        current = self.ring.current_id
        for oid, version, state in _rows(self.recorder):
            kind = classify(state)
            if kind == "sealed" and state[len(MAGIC) : len(MAGIC) + KEY_ID_BYTES].hex() == current:
                kept += 1
                continue
            seed = state if kind == "plaintext" else self.ring.open(oid, state)
            changes.append((oid, version, self.ring.seal(oid, seed)))
        _update(self.recorder, changes)
        return {"resealed": len(changes), "kept": kept}


def _rows(recorder: AggregateRecorder) -> Iterator[tuple[UUID, int, bytes]]:
    table = getattr(recorder, "events_table_name", None)
    datastore: Any = getattr(recorder, "datastore", None)
    if table is not None and type(recorder).__module__ == "eventsourcing.sqlite":
        with datastore.transaction(commit=False) as c:
            c.execute(f"SELECT originator_id, originator_version, state FROM {table}")
            rows = c.fetchall()
        for r in rows:
            yield UUID(str(r[0])), int(r[1]), bytes(r[2])
        return
    if table is not None and type(recorder).__module__ == "eventsourcing.postgres":
        from psycopg.sql import SQL, Identifier

        statement = SQL("SELECT originator_id, originator_version, state FROM {}.{}").format(
            Identifier(datastore.schema), Identifier(table)
        )
        with datastore.transaction(commit=False) as c:
            c.execute(statement)
            rows = c.fetchall()
        for r in rows:
            yield UUID(str(r["originator_id"])), int(r["originator_version"]), bytes(r["state"])
        return
    stored: list[StoredEvent] = getattr(recorder, "_stored_events", [])  # in-memory store
    for s in stored:
        yield UUID(str(s.originator_id)), int(s.originator_version), bytes(s.state)


def _update(recorder: AggregateRecorder, changes: Sequence[tuple[UUID, int, bytes]]) -> None:
    """Replace the state of the given rows, in one transaction."""
    if not changes:
        return
    table = getattr(recorder, "events_table_name", None)
    datastore: Any = getattr(recorder, "datastore", None)
    if table is not None and type(recorder).__module__ == "eventsourcing.sqlite":
        with datastore.transaction(commit=True) as c:
            c.executemany(
                f"UPDATE {table} SET state = ? WHERE originator_id = ? AND originator_version = ?",
                [(state, oid.hex, version) for oid, version, state in changes],
            )
        return
    if table is not None and type(recorder).__module__ == "eventsourcing.postgres":
        from psycopg.sql import SQL, Identifier

        statement = SQL(
            "UPDATE {}.{} SET state = %s WHERE originator_id = %s AND originator_version = %s"
        ).format(Identifier(datastore.schema), Identifier(table))
        with datastore.transaction(commit=True) as c:
            for oid, version, state in changes:
                c.execute(statement, (state, oid, version))
        return
    stored: list[StoredEvent] = getattr(recorder, "_stored_events", [])
    where = {(str(oid), version): state for oid, version, state in changes}
    for i, s in enumerate(stored):
        new = where.get((str(s.originator_id), int(s.originator_version)))
        if new is not None:
            stored[i] = StoredEvent(s.originator_id, s.originator_version, s.topic, new)


__all__ = [
    "KEY_FILE_HEADER",
    "SEED_TOPIC",
    "Inventory",
    "SeedKeyError",
    "SeedKeyMissing",
    "SeedKeyRing",
    "SeedNotEncrypted",
    "SeedVault",
    "SeedVaultError",
    "classify",
    "ephemeral_ring",
    "key_id",
]
