"""An independent RFC 9162 verifier, written from the RFC for the tests (it does not import
``replays``): Merkle Tree Hash (2.1.1), inclusion proof verification (2.1.3.2), consistency
proof verification (2.1.4.2), and the checks of roundaudit's proof documents and checkpoints
(docs/verification.md) with the ``cryptography`` package's Ed25519.
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
    """A checkpoint's Ed25519 signature over its body (docs/verification.md)."""
    body = f"{cp['origin']}\n{cp['size']}\n{cp['root']}\n{cp['timestamp']}\n".encode()
    key = Ed25519PublicKey.from_public_bytes(public_key_raw)
    if cp["key_id"] != hashlib.sha256(public_key_raw).hexdigest():
        return False
    try:
        key.verify(base64.b64decode(cp["signature"]), body)
    except (InvalidSignature, ValueError):
        return False
    return True


def inclusion_document_ok(doc: dict[str, Any], public_key_raw: bytes) -> bool:
    cp = doc["checkpoint"]
    lh = leaf(doc["leaf"].encode())
    return (
        lh.hex() == doc["leaf_hash"]
        and doc["tree_size"] == cp["size"]
        and verify_inclusion(
            doc["leaf_index"],
            cp["size"],
            lh,
            [bytes.fromhex(x) for x in doc["audit_path"]],
            bytes.fromhex(cp["root"]),
        )
        and checkpoint_ok(cp, public_key_raw)
    )


def consistency_document_ok(doc: dict[str, Any], public_key_raw: bytes) -> bool:
    a, b = doc["first"], doc["second"]
    return (
        verify_consistency(
            a["size"],
            b["size"],
            bytes.fromhex(a["root"]),
            bytes.fromhex(b["root"]),
            [bytes.fromhex(x) for x in doc["proof"]],
        )
        and checkpoint_ok(a, public_key_raw)
        and checkpoint_ok(b, public_key_raw)
    )


def raw_public_key(pem: bytes) -> bytes:
    key = serialization.load_pem_private_key(pem, password=None)
    return key.public_key().public_bytes(  # type: ignore[union-attr]
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
