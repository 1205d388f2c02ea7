"""RFC 9162 proofs from replays.merkle, checked by the independent verifier in rfc9162.py, and
refused on any altered byte; the chain and the checkpoint format."""

from __future__ import annotations

import base64
from uuid import UUID

import pytest
import rfc9162

from replays import merkle
from replays.chain import Record, chain_values, element, head

DATA = [f"leaf {i}".encode() for i in range(70)]


def tree(n: int) -> merkle.MerkleTree:
    return merkle.MerkleTree(merkle.leaf_hash(d) for d in DATA[:n])


def flips(values: list[bytes]) -> list[list[bytes]]:
    """Every single-bit flip of every byte of every value (one changed copy each)."""
    out = []
    for i, v in enumerate(values):
        for j in range(len(v)):
            for bit in (0, 7):
                changed = bytearray(v)
                changed[j] ^= 1 << bit
                out.append([*values[:i], bytes(changed), *values[i + 1 :]])
    return out


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 31, 64, 70])
def test_root_is_rfc_mth(n: int) -> None:
    assert tree(n).root() == rfc9162.mth(DATA[:n])
    assert merkle.MerkleTree().root() == rfc9162.h(b"")


def test_roots_of_every_prefix_match_the_definition() -> None:
    t = tree(70)
    for m in range(71):
        assert t.root(m) == rfc9162.mth(DATA[:m]), m


def test_every_inclusion_proof_verifies_independently() -> None:
    t = tree(40)
    for n in range(1, 41):
        root = rfc9162.mth(DATA[:n])
        for i in range(n):
            path = t.inclusion_proof(i, n)
            assert rfc9162.verify_inclusion(i, n, rfc9162.leaf(DATA[i]), path, root), (i, n)
            assert merkle.verify_inclusion(i, n, merkle.leaf_hash(DATA[i]), path, root)
            # a proof for another index, size or leaf fails
            assert not rfc9162.verify_inclusion(i, n, rfc9162.leaf(DATA[i] + b"x"), path, root)
            if n > 1:
                assert not rfc9162.verify_inclusion(
                    (i + 1) % n, n, rfc9162.leaf(DATA[i]), path, root
                )


def test_every_consistency_proof_verifies_independently() -> None:
    t = tree(40)
    for n in range(1, 41):
        for m in range(0, n + 1):
            proof = t.consistency_proof(m, n)
            a, b = rfc9162.mth(DATA[:m]), rfc9162.mth(DATA[:n])
            assert rfc9162.verify_consistency(m, n, a, b, proof), (m, n)
            assert merkle.verify_consistency(m, n, a, b, proof), (m, n)
            if 0 < m < n:
                other = rfc9162.mth([*DATA[: m - 1], b"forged", *DATA[m:n]])
                assert not rfc9162.verify_consistency(m, n, a, other, proof), (m, n)


@pytest.mark.parametrize(("i", "n"), [(0, 1), (0, 2), (3, 7), (6, 7), (12, 13), (0, 17), (16, 17)])
def test_inclusion_fails_on_any_altered_byte(i: int, n: int) -> None:
    t = tree(n)
    root, lh = t.root(n), merkle.leaf_hash(DATA[i])
    path = t.inclusion_proof(i, n)
    assert rfc9162.verify_inclusion(i, n, lh, path, root)
    for changed in flips(path):
        assert not rfc9162.verify_inclusion(i, n, lh, changed, root)
        assert not merkle.verify_inclusion(i, n, lh, changed, root)
    for (changed_root,) in flips([root]):
        assert not rfc9162.verify_inclusion(i, n, lh, path, changed_root)
    for (changed_leaf,) in flips([lh]):
        assert not merkle.verify_inclusion(i, n, changed_leaf, path, root)


@pytest.mark.parametrize(("m", "n"), [(1, 2), (3, 7), (4, 7), (6, 8), (7, 13), (8, 17), (16, 17)])
def test_consistency_fails_on_any_altered_byte(m: int, n: int) -> None:
    t = tree(n)
    a, b = t.root(m), t.root(n)
    proof = t.consistency_proof(m, n)
    for changed in flips(proof):
        assert not rfc9162.verify_consistency(m, n, a, b, changed)
        assert not merkle.verify_consistency(m, n, a, b, changed)
    for (ca,) in flips([a]):
        assert not rfc9162.verify_consistency(m, n, ca, b, proof)
    for (cb,) in flips([b]):
        assert not merkle.verify_consistency(m, n, a, cb, proof)
    assert not rfc9162.verify_consistency(m, n, a, b, proof[:-1])


def test_checkpoint_signature_checks_independently_and_fails_on_any_change() -> None:
    key = merkle.generate_key()
    raw = merkle.raw_public(key.public_key())
    cp = merkle.sign_checkpoint(
        key, number=1, size=7, root=tree(7).root(), timestamp="2026-01-01T00:00:00+00:00"
    )
    data = cp.as_json()
    assert rfc9162.checkpoint_ok(data, raw)
    assert merkle.checkpoint_signature_ok(cp, key.public_key())
    for fld, value in (
        ("size", 8),
        ("root", "00" * 32),
        ("timestamp", "2026-01-01T00:00:01+00:00"),
        ("origin", "another-log"),
    ):
        assert not rfc9162.checkpoint_ok({**data, fld: value}, raw), fld
        assert not merkle.checkpoint_signature_ok(
            merkle.Checkpoint.from_json({**data, fld: value}), key.public_key()
        )
    sig = bytearray(base64.b64decode(data["signature"]))
    sig[5] ^= 1
    assert not rfc9162.checkpoint_ok({**data, "signature": base64.b64encode(sig).decode()}, raw)
    other = merkle.generate_key()
    assert not merkle.checkpoint_signature_ok(cp, other.public_key())


def test_public_key_formats_round_trip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "k.pem"
    key, created = merkle.load_private_key(path, create=True)
    assert created
    assert (path.stat().st_mode & 0o777) == 0o600
    again, created = merkle.load_private_key(path)
    assert not created
    pub = key.public_key()
    assert merkle.key_id(again.public_key()) == merkle.key_id(pub)
    for text in (merkle.public_pem(pub), merkle.raw_public(pub).hex(), path.read_text()):
        assert merkle.key_id(merkle.parse_public_key(text)) == merkle.key_id(pub)


def test_chain_covers_every_byte_and_the_order() -> None:
    rid = UUID(int=7)
    records = [Record(rid, i, f"t:{i}", f'{{"n":{i}}}'.encode()) for i in range(1, 6)]
    values = chain_values("round", rid, records)
    assert len(values) == 5
    assert values[-1] == head("round", rid, records)
    for i, r in enumerate(records):
        for j in range(len(r.state)):
            changed = bytearray(r.state)
            changed[j] ^= 1
            other = [
                *records[:i],
                Record(rid, r.version, r.topic, bytes(changed)),
                *records[i + 1 :],
            ]
            now = chain_values("round", rid, other)
            assert now[:i] == values[:i]
            assert now[i] != values[i]
    swapped = [records[1], records[0], *records[2:]]
    assert head("round", rid, swapped) != values[-1]
    assert head("round", rid, records[:-1]) != values[-1]
    assert head("cards", rid, records) != values[-1]
    assert element(records[0])[:16] == rid.bytes
