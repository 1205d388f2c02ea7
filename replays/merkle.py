"""RFC 9162 Merkle trees, inclusion and consistency proofs, keys, and legacy checkpoints.

This module owns the pure tree cryptography of the store's Merkle log (the storage is in
``replays.log``; the C2SP checkpoints the log signs now are ``replays.note``'s; the signed tree
heads below are the legacy format of the per-round seal, still checked). It imports nothing
from the domain or the event store, so it can be handed to a third party as it is (hashlib,
base64 and the ``cryptography`` package only).

Hashing (RFC 9162, section 2.1.1), SHA-256:

* leaf hash ``= SHA-256(0x00 || leaf data)``; node hash ``= SHA-256(0x01 || left || right)``;
* ``MTH({}) = SHA-256("")``; for ``n > 1`` leaves, with ``k`` the largest power of two smaller
  than ``n``, ``MTH(D[n]) = node(MTH(D[0:k]), MTH(D[k:n]))``.

Proofs are the RFC's ``PATH(m, D[n])`` (2.1.3.1) and ``PROOF(m, D[n])`` (2.1.4.1); their
verification follows 2.1.3.2 and 2.1.4.2 literally (:func:`verify_inclusion`,
:func:`verify_consistency`).

A **legacy checkpoint** (a signed tree head of the per-round seal) says: the log named
``origin`` had ``size`` leaves with root ``root`` at ``timestamp``. It is signed with Ed25519
over its *body*, a short text in the style of C2SP checkpoints (every line ends with a
newline)::

    roundaudit/merkle-log/v1
    <size in decimal>
    <root, 64 lowercase hex digits>
    <timestamp, ISO 8601 UTC>

``key_id`` is the lowercase hex SHA-256 of the raw 32-byte public key. The signature is base64.

>>> leaf_hash(b"").hex()[:16]
'6e340b9cffb37a98'
>>> t = MerkleTree([leaf_hash(bytes([i])) for i in range(7)])
>>> p = t.inclusion_proof(3, 7)
>>> verify_inclusion(3, 7, leaf_hash(bytes([3])), p, t.root(7))
True
>>> verify_consistency(3, 7, t.root(3), t.root(7), t.consistency_proof(3, 7))
True
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

ORIGIN: Final = "roundaudit/merkle-log/v1"
EMPTY_ROOT: Final = hashlib.sha256(b"").digest()


# ------------------------------------------------------------------------------ RFC 9162 hashing
def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def leaf_hashes(leaves: Iterable[bytes]) -> list[bytes]:
    """:func:`leaf_hash` of each leaf, in one pass (a whole log's read hashes every leaf).

    >>> leaf_hashes([b"", b"a"]) == [leaf_hash(b""), leaf_hash(b"a")]
    True
    """
    sha = hashlib.sha256
    return [sha(b"\x00" + data).digest() for data in leaves]


def _split(n: int) -> int:
    """The largest power of two smaller than ``n`` (n >= 2).

    >>> [_split(n) for n in (2, 3, 4, 5, 8, 9)]
    [1, 2, 2, 4, 4, 8]
    """
    return 1 << ((n - 1).bit_length() - 1)


class MerkleTree:
    """An append-only RFC 9162 tree over leaf *hashes*, with every complete aligned subtree kept.

    ``levels[l][i]`` is the hash of leaves ``[i * 2**l, (i + 1) * 2**l)``; every subtree the RFC
    recursion visits is such a subtree or ends at the tree's right edge, so roots and proofs for
    any size cost O(log n) hashes after the O(n) build.
    """

    def __init__(self, leaf_hashes: Iterable[bytes] = ()) -> None:
        self.levels: list[list[bytes]] = [[]]
        for h in leaf_hashes:
            self.append(h)

    def __len__(self) -> int:
        return len(self.levels[0])

    def append(self, h: bytes) -> int:
        """Add a leaf hash; return its index."""
        self.levels[0].append(h)
        level = 0
        while len(self.levels[level]) % 2 == 0:
            if level + 1 == len(self.levels):
                self.levels.append([])
            row = self.levels[level]
            self.levels[level + 1].append(node_hash(row[-2], row[-1]))
            level += 1
        return len(self.levels[0]) - 1

    def extend(self, hashes: Iterable[bytes]) -> None:
        """Add many leaf hashes: the same tree as :meth:`append` of each, its new nodes hashed
        level by level in one pass each (a whole log's read adds every leaf at once).

        >>> a, b = MerkleTree(), MerkleTree()
        >>> hs = [leaf_hash(bytes([i])) for i in range(11)]
        >>> for h in hs:
        ...     _ = a.append(h)
        >>> b.extend(hs[:3]); b.extend(hs[3:])
        >>> a.levels == b.levels
        True
        """
        levels, sha = self.levels, hashlib.sha256
        levels[0].extend(hashes)
        level = 0
        # level l + 1 holds len(levels[l]) // 2 nodes, and exists once level l holds two
        while len(levels[level]) >= 2:
            if level + 1 == len(levels):
                levels.append([])
            row, above = levels[level], levels[level + 1]
            have, want = len(above), len(row) // 2
            if have == want:
                break  # no new node here: none above either
            lefts, rights = row[2 * have : 2 * want : 2], row[2 * have + 1 : 2 * want : 2]
            above.extend(
                [sha(b"\x01" + lt + rt).digest() for lt, rt in zip(lefts, rights, strict=True)]
            )
            level += 1

    def leaf(self, index: int) -> bytes:
        return self.levels[0][index]

    def _mth(self, a: int, b: int) -> bytes:
        """MTH of leaves [a, b)."""
        n = b - a
        if n == 0:
            return EMPTY_ROOT
        if n & (n - 1) == 0 and a % n == 0:
            level = n.bit_length() - 1
            return self._node(level, a >> level)
        k = _split(n)
        return node_hash(self._mth(a, a + k), self._mth(a + k, b))

    def _node(self, level: int, idx: int) -> bytes:
        """The hash of the complete subtree of leaves [idx * 2**level, (idx + 1) * 2**level)."""
        return self.levels[level][idx]

    def root(self, size: int | None = None) -> bytes:
        size = len(self) if size is None else size
        self._check_size(size)
        return self._mth(0, size)

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        """PATH(index, D[0:size]) of RFC 9162 2.1.3.1."""
        size = len(self) if size is None else size
        self._check_size(size)
        if not 0 <= index < size:
            raise ValueError(f"leaf {index} is not in a tree of size {size}")
        return self._path(index, 0, size)

    def _path(self, m: int, a: int, b: int) -> list[bytes]:
        n = b - a
        if n == 1:
            return []
        k = _split(n)
        if m < k:
            return [*self._path(m, a, a + k), self._mth(a + k, b)]
        return [*self._path(m - k, a + k, b), self._mth(a, a + k)]

    def consistency_proof(self, first: int, second: int | None = None) -> list[bytes]:
        """PROOF(first, D[0:second]) of RFC 9162 2.1.4.1 (empty when first is 0 or equal)."""
        second = len(self) if second is None else second
        self._check_size(second)
        if not 0 <= first <= second:
            raise ValueError(f"no consistency proof from size {first} to size {second}")
        if first in (0, second):
            return []
        return self._subproof(first, 0, second, True)

    def _subproof(self, m: int, a: int, b: int, whole: bool) -> list[bytes]:
        n = b - a
        if m == n:
            return [] if whole else [self._mth(a, b)]
        k = _split(n)
        if m <= k:
            return [*self._subproof(m, a, a + k, whole), self._mth(a + k, b)]
        return [*self._subproof(m - k, a + k, b, False), self._mth(a, a + k)]

    def _check_size(self, size: int) -> None:
        if not 0 <= size <= len(self):
            raise ValueError(f"the tree has {len(self)} leaves, not {size}")


# ------------------------------------------------------------------------------ verification
def verify_inclusion(
    index: int, size: int, leaf: bytes, path: Sequence[bytes], root: bytes
) -> bool:
    """RFC 9162 2.1.3.2: is the leaf hash ``leaf`` at ``index`` of the tree with ``root``?"""
    if not 0 <= index < size:
        return False
    fn, sn = index, size - 1
    r = leaf
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def verify_consistency(
    first: int, second: int, first_root: bytes, second_root: bytes, proof: Sequence[bytes]
) -> bool:
    """RFC 9162 2.1.4.2: is the tree of size ``second`` an append-only extension of ``first``?

    Size 0 is consistent with any tree (an empty proof); equal sizes need equal roots.
    """
    if not 0 <= first <= second:
        return False
    if first == 0:
        return not proof
    if first == second:
        return not proof and first_root == second_root
    if not proof:
        return False
    path = list(proof)
    if first & (first - 1) == 0:  # an exact power of two
        path.insert(0, first_root)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == first_root and sr == second_root and sn == 0


# ------------------------------------------------------------------------------ keys
def generate_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def load_private_key(path: Path, *, create: bool = False) -> tuple[Ed25519PrivateKey, bool]:
    """The Ed25519 private key in the PEM (PKCS#8) file ``path``; with ``create``, a new key is
    generated and written there (mode 0600) when the file does not exist. Returns
    (key, created)."""
    if not path.exists():
        if not create:
            raise FileNotFoundError(f"no signing key at {path}")
        key = generate_key()
        path.parent.mkdir(parents=True, exist_ok=True)
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        return key, True
    loaded = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(loaded, Ed25519PrivateKey):
        raise ValueError(f"{path} holds a {type(loaded).__name__}, not an Ed25519 private key")
    return loaded, False


def raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def public_pem(key: Ed25519PublicKey) -> str:
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()


def key_id(key: Ed25519PublicKey) -> str:
    return hashlib.sha256(raw_public(key)).hexdigest()


def parse_public_key(text: str | bytes) -> Ed25519PublicKey:
    """A public key from PEM text, a PEM private key (its public half) or 64 hex digits (raw)."""
    data = text.encode() if isinstance(text, str) else text
    stripped = data.strip()
    if b"PRIVATE KEY" in stripped:
        priv = serialization.load_pem_private_key(stripped, password=None)
        if not isinstance(priv, Ed25519PrivateKey):
            raise ValueError("not an Ed25519 private key")
        return priv.public_key()
    if stripped.startswith(b"-----BEGIN"):
        pub = serialization.load_pem_public_key(stripped)
        if not isinstance(pub, Ed25519PublicKey):
            raise ValueError("not an Ed25519 public key")
        return pub
    raw = bytes.fromhex(stripped.decode())
    return Ed25519PublicKey.from_public_bytes(raw)


def load_public_key(path: Path) -> Ed25519PublicKey:
    return parse_public_key(path.read_bytes())


# ------------------------------------------------------------------------------ checkpoints
@dataclass(frozen=True)
class Checkpoint:
    """A signed tree head (see the module docstring)."""

    number: int  # 1, 2, 3... in the order the log wrote them (not signed: a storage index)
    size: int
    root: str
    timestamp: str
    key_id: str
    signature: str
    origin: str = ORIGIN

    def body(self) -> bytes:
        return checkpoint_body(self.origin, self.size, self.root, self.timestamp)

    def as_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "origin": self.origin,
            "size": self.size,
            "root": self.root,
            "timestamp": self.timestamp,
            "key_id": self.key_id,
            "signature": self.signature,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Checkpoint:
        return cls(
            number=int(data.get("number", 0)),
            size=int(data["size"]),
            root=str(data["root"]),
            timestamp=str(data["timestamp"]),
            key_id=str(data["key_id"]),
            signature=str(data["signature"]),
            origin=str(data.get("origin", ORIGIN)),
        )


def checkpoint_body(origin: str, size: int, root: str, timestamp: str) -> bytes:
    """The signed text of a checkpoint.

    >>> checkpoint_body("o", 2, "ab", "2024-01-01T00:00:00+00:00")
    b'o\\n2\\nab\\n2024-01-01T00:00:00+00:00\\n'
    """
    return f"{origin}\n{size}\n{root}\n{timestamp}\n".encode()


def sign_checkpoint(
    key: Ed25519PrivateKey, *, number: int, size: int, root: bytes, timestamp: str
) -> Checkpoint:
    body = checkpoint_body(ORIGIN, size, root.hex(), timestamp)
    return Checkpoint(
        number=number,
        size=size,
        root=root.hex(),
        timestamp=timestamp,
        key_id=key_id(key.public_key()),
        signature=base64.b64encode(key.sign(body)).decode(),
    )


def checkpoint_signature_ok(cp: Checkpoint, key: Ed25519PublicKey) -> bool:
    """Whether ``cp`` is signed by ``key`` (and names it by its key id)."""
    if cp.key_id != key_id(key):
        return False
    try:
        key.verify(base64.b64decode(cp.signature, validate=True), cp.body())
    except (InvalidSignature, ValueError):
        return False
    return True


# ------------------------------------------------------------------------------ proof documents
INCLUSION_TYPE: Final = "roundaudit-inclusion-proof"
CONSISTENCY_TYPE: Final = "roundaudit-consistency-proof"


def check_inclusion_document(doc: dict[str, Any], key: Ed25519PublicKey | None) -> list[str]:
    """Check an inclusion proof document (``roundaudit proof ROUND``) on its own: the leaf's
    hash, the audit path to the checkpoint's root, and (with ``key``) the signature. Returns the
    problems found (empty: it holds)."""
    problems = []
    try:
        leaf = str(doc["leaf"]).encode("utf-8")
        cp = Checkpoint.from_json(doc["checkpoint"])
        index, size = int(doc["leaf_index"]), int(doc["tree_size"])
        path = unhex(doc["audit_path"])
        stated = bytes.fromhex(str(doc["leaf_hash"]))
    except (KeyError, TypeError, ValueError) as exc:
        return [f"not an inclusion proof document ({exc})"]
    if doc.get("type") != INCLUSION_TYPE:
        problems.append(f"type is {doc.get('type')!r}, not {INCLUSION_TYPE!r}")
    if leaf_hash(leaf) != stated:
        problems.append("leaf_hash is not SHA-256(0x00 || leaf)")
    if size != cp.size:
        problems.append(f"tree_size {size} is not the checkpoint's size {cp.size}")
    if not verify_inclusion(index, cp.size, leaf_hash(leaf), path, bytes.fromhex(cp.root)):
        problems.append("the audit path does not lead from the leaf to the checkpoint's root")
    if key is not None and not checkpoint_signature_ok(cp, key):
        problems.append("the checkpoint is not signed by the given key")
    return problems


def check_consistency_document(doc: dict[str, Any], key: Ed25519PublicKey | None) -> list[str]:
    """Check a consistency proof document between two checkpoints on its own."""
    problems = []
    try:
        first = Checkpoint.from_json(doc["first"])
        second = Checkpoint.from_json(doc["second"])
        proof = unhex(doc["proof"])
    except (KeyError, TypeError, ValueError) as exc:
        return [f"not a consistency proof document ({exc})"]
    if doc.get("type") != CONSISTENCY_TYPE:
        problems.append(f"type is {doc.get('type')!r}, not {CONSISTENCY_TYPE!r}")
    if not verify_consistency(
        first.size, second.size, bytes.fromhex(first.root), bytes.fromhex(second.root), proof
    ):
        problems.append("the second checkpoint's tree does not extend the first's")
    if key is not None:
        for cp in (first, second):
            if not checkpoint_signature_ok(cp, key):
                problems.append(f"checkpoint #{cp.number} is not signed by the given key")
    return problems


def hexes(hashes: Iterable[bytes]) -> list[str]:
    return [h.hex() for h in hashes]


def unhex(values: Iterable[str]) -> list[bytes]:
    return [bytes.fromhex(v) for v in values]


__all__ = [
    "CONSISTENCY_TYPE",
    "EMPTY_ROOT",
    "INCLUSION_TYPE",
    "ORIGIN",
    "Checkpoint",
    "MerkleTree",
    "check_consistency_document",
    "check_inclusion_document",
    "checkpoint_body",
    "checkpoint_signature_ok",
    "generate_key",
    "hexes",
    "key_id",
    "leaf_hash",
    "leaf_hashes",
    "load_private_key",
    "load_public_key",
    "node_hash",
    "parse_public_key",
    "public_pem",
    "raw_public",
    "sign_checkpoint",
    "unhex",
    "verify_consistency",
    "verify_inclusion",
]
