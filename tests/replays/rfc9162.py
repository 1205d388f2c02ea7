"""An independent RFC 9162 verifier, written from the RFC for the tests (it does not import
``replays``): Merkle Tree Hash (2.1.1), inclusion proof verification (2.1.3.2), consistency
proof verification (2.1.4.2), and the checks of C2SP checkpoints (signed-note,
tlog-checkpoint), tlog-proofs and roundaudit's proof documents (docs/spec) with the
``cryptography`` package's Ed25519.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def leaf(data: bytes) -> bytes:
    return h(b"\x00" + data)


def node(left: bytes, right: bytes) -> bytes:
    return h(b"\x01" + left + right)


def mth(entries: Sequence[bytes]) -> bytes:
    """MTH(D[n]) over the leaf *data* (2.1.1), straight from the definition."""
    n = len(entries)
    if n == 0:
        return h(b"")
    if n == 1:
        return leaf(entries[0])
    k = 1
    while k * 2 < n:
        k *= 2
    return node(mth(entries[:k]), mth(entries[k:]))


def verify_inclusion(
    leaf_index: int, tree_size: int, leaf_hash: bytes, path: Sequence[bytes], root: bytes
) -> bool:
    """RFC 9162 section 2.1.3.2, step by step."""
    if leaf_index >= tree_size:
        return False
    fn = leaf_index
    sn = tree_size - 1
    r = leaf_hash
    for p in path:
        if sn == 0:
            return False
        if fn % 2 == 1 or fn == sn:
            r = node(p, r)
            if fn % 2 == 0:
                while True:
                    fn //= 2
                    sn //= 2
                    if fn % 2 == 1 or fn == 0:
                        break
        else:
            r = node(r, p)
        fn //= 2
        sn //= 2
    return sn == 0 and r == root


def verify_consistency(
    first: int, second: int, first_hash: bytes, second_hash: bytes, path: Sequence[bytes]
) -> bool:
    """RFC 9162 section 2.1.4.2, step by step (for 0 < first < second; the trivial sizes as
    the RFC's PROOF definition implies: an empty proof)."""
    if first == second:
        return not path and first_hash == second_hash
    if first == 0:
        return not path
    if first > second or not path:
        return False
    path = list(path)
    if first & (first - 1) == 0:
        path = [first_hash, *path]
    fn = first - 1
    sn = second - 1
    while fn % 2 == 1:
        fn //= 2
        sn //= 2
    fr = path[0]
    sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn % 2 == 1 or fn == sn:
            fr = node(c, fr)
            sr = node(c, sr)
            if fn % 2 == 0:
                while True:
                    fn //= 2
                    sn //= 2
                    if fn % 2 == 1 or fn == 0:
                        break
        else:
            sr = node(sr, c)
        fn //= 2
        sn //= 2
    return fr == first_hash and sr == second_hash and sn == 0


def checkpoint_ok(cp: dict[str, Any], public_key_raw: bytes) -> bool:
    """A legacy (per-round seal) checkpoint's Ed25519 signature over its body."""
    body = f"{cp['origin']}\n{cp['size']}\n{cp['root']}\n{cp['timestamp']}\n".encode()
    key = Ed25519PublicKey.from_public_bytes(public_key_raw)
    if cp["key_id"] != hashlib.sha256(public_key_raw).hexdigest():
        return False
    try:
        key.verify(base64.b64decode(cp["signature"]), body)
    except (InvalidSignature, ValueError):
        return False
    return True


# ------------------------------------------------------------------------------ C2SP
def note_ok(note: str, origin: str, public_key_raw: bytes) -> tuple[int, bytes] | None:
    """A C2SP checkpoint (signed-note, tlog-checkpoint) signed by the Ed25519 key named
    ``origin``: (size, root) when it holds, else None."""
    text, sep, sigs = note.rpartition("\n\n")
    if not sep:
        return None
    text += "\n"
    lines = text[:-1].split("\n")
    if lines[0] != origin or len(lines) < 3:
        return None
    key_id = h(origin.encode() + b"\n\x01" + public_key_raw)[:4]
    key = Ed25519PublicKey.from_public_bytes(public_key_raw)
    for line in sigs.splitlines():
        dash, name, b64 = line.split(" ")
        raw = base64.b64decode(b64)
        if dash == "\u2014" and name == origin and raw[:4] == key_id:
            try:
                key.verify(raw[4:], text.encode())
            except InvalidSignature:
                return None
            return int(lines[1]), base64.b64decode(lines[2])
    return None


def tlog_proof_ok(proof: str, leaf_data: bytes, origin: str, public_key_raw: bytes) -> bool:
    """A C2SP tlog-proof of ``leaf_data`` in a checkpoint signed by the operator."""
    head, sep, note = proof.partition("\n\n")
    if not sep:
        return False
    lines = head.split("\n")
    if lines[0] != "c2sp.org/tlog-proof@v1" or not lines[1].startswith("index "):
        return False
    index = int(lines[1].removeprefix("index "))
    path = [base64.b64decode(x) for x in lines[2:]]
    tree = note_ok(note, origin, public_key_raw)
    if tree is None:
        return False
    size, root = tree
    return verify_inclusion(index, size, leaf(leaf_data), path, root)


def proof_document_ok(doc: dict[str, Any], origin: str, public_key_raw: bytes) -> bool:
    """``roundaudit proof ROUND``: every leaf's tlog-proof, all in the same checkpoint."""
    notes = {item["tlog_proof"].partition("\n\n")[2] for item in doc["leaves"]}
    return (
        len(notes) == 1
        and notes == {doc["checkpoint"]["note"]}
        and all(
            tlog_proof_ok(item["tlog_proof"], item["leaf"].encode(), origin, public_key_raw)
            and leaf(item["leaf"].encode()).hex() == item["leaf_hash"]
            for item in doc["leaves"]
        )
    )


def consistency_document_ok(doc: dict[str, Any], origin: str, public_key_raw: bytes) -> bool:
    a = note_ok(doc["first"]["note"], origin, public_key_raw)
    b = note_ok(doc["second"]["note"], origin, public_key_raw)
    if a is None or b is None:
        return False
    return verify_consistency(a[0], b[0], a[1], b[1], [base64.b64decode(x) for x in doc["proof"]])


def raw_public_key(pem: bytes) -> bytes:
    key = serialization.load_pem_private_key(pem, password=None)
    return key.public_key().public_bytes(  # type: ignore[union-attr]
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
