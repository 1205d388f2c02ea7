"""An independent verifier written from ``docs/spec/`` alone: it imports nothing of the project
(``test_spec.py`` checks its imports), only the standard library and ``cryptography`` for the
Ed25519 primitive. It implements the shuffle (shuffle.md), the leaf and its hash (leaf.md), the
RFC 6962 tree and proofs (proofs.md), C2SP notes, checkpoints and cosignatures
(checkpoint.md), inclusion paths from the stored interior nodes (nodes.md), and checks a round's
export (proofs.md) with them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from uuid import UUID, uuid5

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

SUITS = "DCHS"
RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]


# ------------------------------------------------------------------------------ shuffle.md
def commitment(seed: bytes) -> str:
    return hashlib.sha256(seed).hexdigest()


class Words:
    def __init__(self, seed: bytes, tag: bytes = b"roundaudit/shuffle/v1") -> None:
        self.seed, self.block, self.buf, self.tag = seed, 0, b"", tag

    def next(self) -> int:
        while len(self.buf) < 4:
            msg = self.tag + self.block.to_bytes(8, "big")
            self.buf += hmac.new(self.seed, msg, hashlib.sha256).digest()
            self.block += 1
        word, self.buf = self.buf[:4], self.buf[4:]
        return int.from_bytes(word, "big")


def uniform(words: Words, n: int) -> int:
    limit = (2**32 // n) * n
    while True:
        w = words.next()
        if w < limit:
            return w % n


def starting_order(decks: int) -> list[str]:
    return [RANKS[k % 13] + SUITS[(k % 52) // 13] for k in range(52 * decks)]


def shoe(seed: bytes, decks: int) -> list[str]:
    a = starting_order(decks)
    words = Words(seed)
    for i in range(len(a) - 1, 0, -1):
        j = uniform(words, i + 1)
        a[i], a[j] = a[j], a[i]
    return a


def shoe_v2(seed: bytes, decks: int) -> list[str]:
    """``hmac-sha256-ctr-fisher-yates-v2``: its own stream's tag, Fisher-Yates bottom up."""
    a = starting_order(decks)
    words = Words(seed, b"roundaudit/shuffle/v2")
    for i in range(len(a) - 1):
        j = i + uniform(words, len(a) - i)
        a[i], a[j] = a[j], a[i]
    return a


# ------------------------------------------------------------------------------ leaf.md
def leaf_text(kind: str, events: Iterable[tuple[int, str, int, str, bytes]]) -> bytes:
    """(notification id, originator id, version, topic, state) in insertion order."""
    lines = [f"roundaudit/leaf/v2 {kind}\n"]
    for n, oid, version, topic, state in events:
        lines.append(f"{n} {oid} {version} {hashlib.sha256(state).hexdigest()} {topic}\n")
    return "".join(lines).encode()


def leaf_entries(leaf: bytes) -> list[tuple[int, str, int, str, str]]:
    """(notification id, originator id, version, sha256 hex, topic) of each line."""
    lines = leaf.decode().split("\n")
    assert lines[0].startswith("roundaudit/leaf/v2 ")
    assert lines[-1] == ""
    out = []
    for line in lines[1:-1]:
        n, oid, version, digest, topic = line.split(" ", 4)
        out.append((int(n), oid, int(version), digest, topic))
    return out


# ------------------------------------------------------------------------------ proofs.md
def h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def leaf_hash(data: bytes) -> bytes:
    return h(b"\x00" + data)


def node(left: bytes, right: bytes) -> bytes:
    return h(b"\x01" + left + right)


def mth(leaves: Sequence[bytes]) -> bytes:
    n = len(leaves)
    if n == 0:
        return h(b"")
    if n == 1:
        return leaf_hash(leaves[0])
    k = 1
    while k * 2 < n:
        k *= 2
    return node(mth(leaves[:k]), mth(leaves[k:]))


def verify_inclusion(index: int, size: int, lh: bytes, path: Sequence[bytes], root: bytes) -> bool:
    """RFC 9162 2.1.3.2."""
    if index >= size:
        return False
    fn, sn, r = index, size - 1, lh
    for p in path:
        if sn == 0:
            return False
        if fn % 2 == 1 or fn == sn:
            r = node(p, r)
            if fn % 2 == 0:
                while fn % 2 == 0 and fn != 0:
                    fn //= 2
                    sn //= 2
        else:
            r = node(r, p)
        fn //= 2
        sn //= 2
    return sn == 0 and r == root


def verify_consistency(m: int, n: int, a: bytes, b: bytes, proof: Sequence[bytes]) -> bool:
    """RFC 9162 2.1.4.2 (size 0: empty proof; equal sizes: equal roots, empty proof)."""
    if m == 0:
        return not proof
    if m == n:
        return not proof and a == b
    if m > n or not proof:
        return False
    path = list(proof)
    if m & (m - 1) == 0:
        path = [a, *path]
    fn, sn = m - 1, n - 1
    while fn % 2 == 1:
        fn //= 2
        sn //= 2
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn % 2 == 1 or fn == sn:
            fr, sr = node(c, fr), node(c, sr)
            if fn % 2 == 0:
                while fn % 2 == 0 and fn != 0:
                    fn //= 2
                    sn //= 2
        else:
            sr = node(sr, c)
        fn //= 2
        sn //= 2
    return fr == a and sr == b and sn == 0


# ------------------------------------------------------------------------------ checkpoint.md
def key_id(name: str, sig_type: int, public: bytes) -> bytes:
    return h(name.encode() + b"\n" + bytes([sig_type]) + public)[:4]


def vkey(text: str) -> tuple[str, int, bytes]:
    """(name, signature type, public key) of a vkey, its key ID checked."""
    name, hex_id, material = text.split("+", 2)
    raw = base64.b64decode(material)
    assert key_id(name, raw[0], raw[1:]) == bytes.fromhex(hex_id)
    return name, raw[0], raw[1:]


def split_note(note: str) -> tuple[str, list[tuple[str, bytes]]]:
    text, _, sigs = note.rpartition("\n\n")
    out = []
    for line in sigs.splitlines():
        dash, name, b64 = line.split(" ")
        assert dash == "\u2014"
        out.append((name, base64.b64decode(b64)))
    return text + "\n", out


def signed_by(note: str, key: tuple[str, int, bytes]) -> int | None:
    """Whether ``key`` signed ``note``: the cosignature's time (or 0 for a log's signature)
    when it did, None when no line of that key verifies."""
    name, sig_type, public = key
    text, sigs = split_note(note)
    kid = key_id(name, sig_type, public)
    pub = Ed25519PublicKey.from_public_bytes(public)
    for line_name, raw in sigs:
        if line_name != name or raw[:4] != kid:
            continue
        body = raw[4:]
        try:
            if sig_type == 0x04:
                t = int.from_bytes(body[:8], "big")
                pub.verify(body[8:], f"cosignature/v1\ntime {t}\n".encode() + text.encode())
                return t
            pub.verify(body, text.encode())
            return 0
        except InvalidSignature:
            return None
    return None


def checkpoint(note: str) -> tuple[str, int, bytes]:
    text, _ = split_note(note)
    origin, size, root = text.split("\n")[:3]
    return origin, int(size), base64.b64decode(root)


# ------------------------------------------------------------------------------ an export
def check_export(lines: Iterable[bytes], operator: str, witnesses: Sequence[str] = ()) -> Any:
    """Check a round export (format 2) against the pinned operator vkey (and witnesses): every
    record in a leaf with the SHA-256 of its bytes, every leaf included in the checkpoint, the
    checkpoint signed; and the RNG shoe's cards recomputed from its revealed seed. Returns a
    summary dict; raises AssertionError at the first thing that does not hold."""
    objs = [json.loads(line) for line in lines if line.strip()]
    header = objs[0]
    assert header["format"] == "roundaudit-round-log"
    assert header["format_version"] == 2
    records = [o for o in objs if o["line"] == "event"]
    leaves = {o["index"]: o for o in objs if o["line"] == "leaf"}
    (cp_line,) = [o for o in objs if o["line"] == "checkpoint"]
    note = cp_line["note"]
    origin, size, root = checkpoint(note)
    assert signed_by(note, vkey(operator)) == 0, "the checkpoint is not signed by the operator"
    cosigned = [w for w in witnesses if signed_by(note, vkey(w))]
    listed: dict[tuple[str, int], tuple[int, str, str]] = {}
    for index, leaf in leaves.items():
        data = leaf["leaf"].encode()
        path = [base64.b64decode(x) for x in leaf["inclusion"] or []]
        if index < size:
            assert verify_inclusion(index, size, leaf_hash(data), path, root), index
        for _, oid, version, digest, topic in leaf_entries(data):
            listed[(oid, version)] = (index, digest, topic)
    for r in records:
        found = listed.get((r["originator_id"], r["version"]))
        assert found is not None, f"{r['topic']} {r['version']} is in no leaf"
        state = base64.b64decode(r["state"])
        assert found[1] == hashlib.sha256(state).hexdigest(), f"{r['topic']} changed"
        assert found[2] == r["topic"]
    shoe_lines = [json.loads(base64.b64decode(r["state"])) | {"_topic": r["topic"]}
                  for r in records if r["stream"] == "shoe"]  # fmt: skip
    opened = next(s for s in shoe_lines if s["_topic"].endswith("Shoe.Opened"))
    revealed = [s for s in shoe_lines if s["_topic"].endswith("Shoe.SeedRevealed")]
    cards = 0
    if opened["kind"] == "rng" and revealed:
        seed = bytes.fromhex(revealed[0]["seed"])
        assert commitment(seed) == opened["commitment"]
        shuffles = {
            "hmac-sha256-ctr-fisher-yates-v1": shoe,
            "hmac-sha256-ctr-fisher-yates-v2": shoe_v2,
        }
        order = shuffles[opened["algorithm"]](seed, opened["decks"])
        for s in shoe_lines:
            if "position" in s and "card" in s:
                assert order[s["position"]] == s["card"], s
                cards += 1
    return {
        "origin": origin,
        "size": size,
        "records": len(records),
        "leaves": len(leaves),
        "cosigned": cosigned,
        "cards": cards,
    }


# ------------------------------------------------------------------------------ nodes.md
NS = UUID("6f1d2b1e-5b0a-4c43-9d7e-2d1c6e0b8a11")
#: A stream's rows of the log table as (version, topic, state), in version order.
Rows = Callable[[UUID], Sequence[tuple[int, str, bytes]]]


def stored_node(rows: Rows, level: int, index: int) -> bytes | None:
    """Node ``index`` of ``level`` from its block's rows (None: not stored, or a row that does
    not follow the one before it)."""
    block, hashes = index // 256, b""
    for version, topic, state in rows(uuid5(NS, f"merkle-log:nodes:{level}:{block}")):
        data = json.loads(state)
        start = block * 256 + len(hashes) // 32
        if (topic, data["level"], data["start"], version) != (
            "roundaudit:merkle-nodes/v1", level, start, start - block * 256 + 1,
        ):  # fmt: skip
            break
        hashes += base64.b64decode(data["hashes"])
    at = (index - block * 256) * 32
    return hashes[at : at + 32] if at + 32 <= len(hashes) else None


def path_from_nodes(rows: Rows, m: int, n: int) -> list[bytes] | None:
    """RFC 9162 PATH(m, D[n]) with each complete aligned subtree read from the stored nodes
    (None when one is missing)."""

    def tree(a: int, b: int) -> bytes | None:
        size = b - a
        if size & (size - 1) == 0 and a % size == 0:
            return stored_node(rows, size.bit_length() - 1, a // size)
        k = 1
        while k * 2 < size:
            k *= 2
        left, right = tree(a, a + k), tree(a + k, b)
        return None if left is None or right is None else node(left, right)

    def path(m: int, a: int, b: int) -> list[bytes] | None:
        if b - a == 1:
            return []
        k = 1
        while k * 2 < b - a:
            k *= 2
        rest, other = (path(m, a, a + k), tree(a + k, b)) if m < a + k else (
            path(m, a + k, b), tree(a, a + k)
        )  # fmt: skip
        return None if rest is None or other is None else [*rest, other]

    return path(m, 0, n) if 0 <= m < n else None
