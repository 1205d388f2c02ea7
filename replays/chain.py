"""Per-round hash chains of the legacy per-round seal (chain v1), and canonical JSON.

This module owns the hashing of stored records into chains and the **round leaf** that the
per-round seal of earlier versions put into the Merkle log (``replays.log``); stores sealed that
way keep being checked with it. Every transaction now seals its own events at commit
(``domain.commit_leaf``). It is pure: records in, hex digests out;
it imports nothing from the domain, so a third party can copy it (hashlib and orjson only).

What a record is: one stored event exactly as the event store holds it, i.e. its originator id,
its version, its topic and its **state bytes** (the transcoder's canonical JSON, keys sorted;
decrypted and decompressed first if the store ever configures a cipher or compressor). The
state includes the event's server timestamp: a changed timestamp, a changed client time or
request id, or a byte changed anywhere is a changed record, even where re-execution (which
reads only decoded payloads, and takes inputs as given) could not see it. Hashing the stored
bytes rather than a re-canonicalised payload leaves nothing to interpretation: no JSON
canonicalisation to agree on, and two byte strings that decode to the same payload are still
different records.

Chain v1, for a sequence of records ``r_1 .. r_n`` anchored at a 16-byte UUID ``anchor``::

    element(r) = originator_id (16 bytes) || version (8 bytes, big-endian, unsigned)
                 || len(topic) (4 bytes BE) || topic (UTF-8) || len(state) (4 bytes BE) || state
    h_0 = SHA-256("roundaudit/chain/v1/" || tag || 0x00 || anchor)
    h_i = SHA-256(h_{i-1} || element(r_i))            head = h_n

Three chains describe a finished round (``tag`` / anchor / records, in this order):

* ``round`` / the round id / every stored event of the round, by version;
* ``cards`` / the round id / the shoe's ``CardDrawn`` records whose ``round_id`` is the round,
  by shoe version (the shoe outlives the round in a live studio, so only its cards);
* ``money`` / the round id / the wallet movements whose ``round_id`` is the round, sorted by
  (wallet id, version).

The **leaf** of the round is the canonical JSON (orjson, sorted keys, no whitespace) of::

    {"v": 1, "round_id": str, "table_id": str, "round_number": int, "outcome": str,
     "finished_at": ISO-8601 str, "events": n, "head": hex,
     "cards": {"count": k, "head": hex}, "money": {"count": m, "head": hex}}

>>> from uuid import UUID
>>> rid = UUID(int=1)
>>> r = Record(rid, 1, "domain.round:Round.Started", b'{"a":1}')
>>> len(chain_values("round", rid, [r])) == 1 and head("round", rid, []) != head("round", rid, [r])
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from uuid import UUID

import orjson

CHAIN_VERSION: Final = "roundaudit-chain-v1"
LEAF_VERSION: Final = 1
ROUND, CARDS, MONEY = "round", "cards", "money"


@dataclass(frozen=True, slots=True)
class Record:
    """One stored event as the store holds it (state = plaintext transcoded bytes; ``stored``
    = the bytes exactly as stored when the store compresses or encrypts them, else None).
    Slotted: a boundless round's verification holds hundreds of thousands of them."""

    originator_id: UUID
    version: int
    topic: str
    state: bytes
    stored: bytes | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> tuple[UUID, int]:
        return (self.originator_id, self.version)

    @property
    def as_stored(self) -> bytes:
        """The state exactly as stored: what a Merkle leaf commits to (docs/spec/leaf.md)."""
        return self.state if self.stored is None else self.stored


def element(record: Record) -> bytes:
    """The bytes of one record that a chain hashes (see the module docstring)."""
    topic = record.topic.encode("utf-8")
    return b"".join(
        (
            record.originator_id.bytes,
            record.version.to_bytes(8, "big", signed=False),
            len(topic).to_bytes(4, "big"),
            topic,
            len(record.state).to_bytes(4, "big"),
            record.state,
        )
    )


def start(tag: str, anchor: UUID) -> bytes:
    """h_0 of a chain."""
    return hashlib.sha256(f"roundaudit/chain/v1/{tag}".encode() + b"\x00" + anchor.bytes).digest()


def chain_values(tag: str, anchor: UUID, records: Iterable[Record]) -> list[str]:
    """h_1 .. h_n as hex (empty for no records): the value after each record."""
    h = start(tag, anchor)
    out = []
    for r in records:
        h = hashlib.sha256(h + element(r)).digest()
        out.append(h.hex())
    return out


def head(tag: str, anchor: UUID, records: Sequence[Record]) -> str:
    """h_n as hex (h_0 for no records)."""
    values = chain_values(tag, anchor, records)
    return values[-1] if values else start(tag, anchor).hex()


def canonical(obj: Any) -> bytes:
    """Canonical JSON bytes: orjson, keys sorted, no whitespace.

    >>> canonical({"b": 1, "a": [True, None]})
    b'{"a":[true,null],"b":1}'
    """
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


def leaf_data(
    *,
    round_id: UUID,
    table_id: str,
    round_number: int,
    outcome: str,
    finished_at: str,
    events: Sequence[Record],
    cards: Sequence[Record],
    money: Sequence[Record],
) -> dict[str, Any]:
    """The leaf of a finished round (see the module docstring)."""
    return {
        "v": LEAF_VERSION,
        "round_id": str(round_id),
        "table_id": table_id,
        "round_number": round_number,
        "outcome": outcome,
        "finished_at": finished_at,
        "events": len(events),
        "head": head(ROUND, round_id, events),
        "cards": {"count": len(cards), "head": head(CARDS, round_id, cards)},
        "money": {"count": len(money), "head": head(MONEY, round_id, money)},
    }


__all__ = [
    "CARDS",
    "CHAIN_VERSION",
    "MONEY",
    "ROUND",
    "Record",
    "canonical",
    "chain_values",
    "element",
    "head",
    "leaf_data",
    "start",
]
