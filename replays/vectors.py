"""The test vectors of the open specification: ``python -m replays.vectors`` writes
``docs/spec/vectors/*.json``.

This module owns how the vectors are made, from the project's own code (the shuffle, the leaf
format, the RFC 6962 tree, the C2SP notes), so that a third party can check an independent
implementation against them, and the test suite checks that they still are what the code
produces (``tests/spec/``). Everything is deterministic: fixed seeds, fixed event bytes, fixed
Ed25519 keys (Ed25519 signatures are deterministic) and a fixed cosignature time.

* ``shuffle.json``: seed (hex) -> commitment and the first 52 cards of an 8-deck shoe (and a
  whole 1-deck shoe) under ``hmac-sha256-ctr-fisher-yates-v1``; ``shuffle-v2.json`` the same
  under ``hmac-sha256-ctr-fisher-yates-v2`` (the shoes opened since session 26);
* ``leaves.json``: events as stored (notification id, originator id, version, topic, state in
  base64) -> the leaf text and its RFC 6962 leaf hash, for a transaction and a backfill;
* ``trees.json``: leaf data -> the root of every size, inclusion proofs and consistency proofs;
* ``checkpoint.json``: keys (Ed25519 private key seeds) -> vkeys, a checkpoint note signed by
  the operator and cosigned by a witness, and the signed-note example of the C2SP
  specification itself.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from domain.commit_leaf import BACKFILL, COMMIT, leaf_bytes
from domain.commits import CommittedEvent
from domain.shuffle import ALGORITHM_V1, ALGORITHM_V2, commitment, shuffled_order
from replays.merkle import MerkleTree, leaf_hash
from replays.note import (
    Note,
    checkpoint_text,
    cosign,
    operator_key,
    sign,
    witness_key,
)

VECTORS = Path(__file__).resolve().parents[1] / "docs" / "spec" / "vectors"
Json = dict[str, Any]

SEEDS = (
    bytes(32),
    bytes(range(32)),
    hashlib.sha256(b"roundaudit test vector").digest(),
    b"sixteen byte key",
)
TREE_LEAVES = [f"leaf {i}".encode() for i in range(13)]
OPERATOR_SEED = hashlib.sha256(b"roundaudit vector operator key").digest()
WITNESS_SEED = hashlib.sha256(b"roundaudit vector witness key").digest()
ORIGIN = "casino.example/roundaudit/vectors"
WITNESS = "witness.example/vectors"
COSIGNED_AT = 1_767_225_600  # 2026-01-01T00:00:00Z
#: The example of c2sp.org/signed-note (a vkey and the note it verifies).
C2SP_EXAMPLE = {
    "vkey": "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k",
    "note": "This is an example message.\n\n\u2014 example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1Y"
    "Eq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n",
}


def shuffle_vectors(algorithm: str = ALGORITHM_V1) -> Json:
    """The shuffle's vectors under ``algorithm`` (``shuffle.json``: v1, ``shuffle-v2.json``)."""
    cases = []
    for seed in SEEDS:
        order = shuffled_order(seed, 8, algorithm)
        cases.append(
            {
                "seed": seed.hex(),
                "commitment": commitment(seed),
                "decks": 8,
                "first_52": [c.code for c in order[:52]],
            }
        )
    whole = shuffled_order(SEEDS[2], 1, algorithm)
    cases.append(
        {
            "seed": SEEDS[2].hex(),
            "commitment": commitment(SEEDS[2]),
            "decks": 1,
            "first_52": [c.code for c in whole],
        }
    )
    return {"algorithm": algorithm, "cases": cases}


def _events(recording: Path) -> list[CommittedEvent]:
    """The first records of a reference recording, as a transaction would have stored them."""
    out = []
    for n, line in enumerate(recording.read_bytes().splitlines()[1:5], start=41):
        obj = orjson.loads(line)
        out.append(
            CommittedEvent(
                n,
                UUID(obj["originator_id"]),
                int(obj["version"]),
                obj["topic"],
                base64.b64decode(obj["state"]),
            )
        )
    return out


def leaf_vectors(recording: Path) -> Json:
    real = _events(recording)
    small = [
        CommittedEvent(1, UUID(int=1), 1, "domain.wallet:Wallet.Opened", b'{"a":1}'),
        CommittedEvent(2, UUID(int=2), 7, "domain.shoe:Shoe.CardDrawn", b""),
    ]
    cases = []
    for kind, events in ((COMMIT, real), (COMMIT, small[:1]), (BACKFILL, small)):
        data = leaf_bytes(kind, events)
        cases.append(
            {
                "kind": kind,
                "events": [
                    {
                        "notification_id": e.notification_id,
                        "originator_id": str(e.originator_id),
                        "version": e.originator_version,
                        "topic": e.topic,
                        "state": base64.b64encode(e.state).decode(),
                    }
                    for e in events
                ],
                "leaf": data.decode(),
                "leaf_hash": leaf_hash(data).hex(),
            }
        )
    return {"format": "roundaudit/leaf/v2", "cases": cases}


def tree_vectors() -> Json:
    tree = MerkleTree(leaf_hash(d) for d in TREE_LEAVES)
    n = len(TREE_LEAVES)
    return {
        "leaves": [d.decode() for d in TREE_LEAVES],
        "roots": [tree.root(size).hex() for size in range(n + 1)],
        "inclusion": [
            {"index": i, "size": size, "path": [h.hex() for h in tree.inclusion_proof(i, size)]}
            for size in (1, 2, 3, 5, 7, 8, 13)
            for i in range(size)
        ],
        "consistency": [
            {
                "first": m,
                "second": size,
                "proof": [h.hex() for h in tree.consistency_proof(m, size)],
            }
            for size in (3, 8, 13)
            for m in range(size + 1)
        ],
    }


def checkpoint_vectors() -> Json:
    operator = Ed25519PrivateKey.from_private_bytes(OPERATOR_SEED)
    witness = Ed25519PrivateKey.from_private_bytes(WITNESS_SEED)
    tree = MerkleTree(leaf_hash(d) for d in TREE_LEAVES)
    text = checkpoint_text(ORIGIN, len(TREE_LEAVES), tree.root())
    signed = Note(text, (sign(text, ORIGIN, operator),))
    cosigned = signed.with_signatures(cosign(text, WITNESS, witness, COSIGNED_AT))
    return {
        "operator": {
            "name": ORIGIN,
            "private_seed": OPERATOR_SEED.hex(),
            "vkey": operator_key(ORIGIN, operator.public_key()).vkey(),
        },
        "witness": {
            "name": WITNESS,
            "private_seed": WITNESS_SEED.hex(),
            "vkey": witness_key(WITNESS, witness.public_key()).vkey(),
        },
        "checkpoint_text": text,
        "signed": signed.encode().decode(),
        "cosigned_at": COSIGNED_AT,
        "cosigned": cosigned.encode().decode(),
        "c2sp_signed_note_example": C2SP_EXAMPLE,
    }


def vectors(recording: Path | None = None) -> dict[str, Json]:
    recording = recording or (
        Path(__file__).resolve().parent / "recordings" / "european-even-money.jsonl"
    )
    return {
        "shuffle.json": shuffle_vectors(ALGORITHM_V1),
        "shuffle-v2.json": shuffle_vectors(ALGORITHM_V2),
        "leaves.json": leaf_vectors(recording),
        "trees.json": tree_vectors(),
        "checkpoint.json": checkpoint_vectors(),
    }


def render(data: Json) -> bytes:
    return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m replays.vectors", description=__doc__)
    parser.add_argument("--out", type=Path, default=VECTORS)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, data in vectors().items():
        (args.out / name).write_bytes(render(data))
        print(args.out / name)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
