"""The log's read chooses how to index a leaf from its span of notification ids
(``MerkleLog._index_all``: a span of at most ``replays.log._RUNS_MAX`` ids from the leaf's
runs, made and kept; a wider one entry by entry, no run made), not from its count of entries:
a transaction's ids are consecutive, so the two agree for every leaf a store writes, and for a
forged leaf whose ids are not (a gap, a repeat, ids going back) the index and the rounds are
still those its entries give one by one, whichever way it was indexed."""

from __future__ import annotations

from uuid import UUID

import pytest
from leafkit import kept_parses, read_by_a_log
from leafkit import leaf_entry as _entry

import replays.log
from domain.commit_leaf import FORMAT, parse_leaf
from replays.log import ROUND_STARTED_TOPICS

_STARTED = sorted(ROUND_STARTED_TOPICS)[0]


def _leaves() -> list[bytes]:
    a, b = UUID(int=20), UUID(int=21)
    texts = [
        # 3 entries, ids spanning 500: entry by entry
        _entry(1, a, 1, _STARTED) + _entry(2, a, 2) + _entry(501, b, 1),
        # 5 entries, ids spanning 1 (repeated): from its runs
        _entry(600, a, 3)
        + _entry(600, a, 4)
        + _entry(601, b, 2)
        + _entry(601, b, 4)
        + _entry(601, a, 2),
        # 2 entries, ids going back: from its runs
        _entry(700, b, 3) + _entry(650, b, 1, _STARTED),
        # 3 consecutive ids: from its runs
        _entry(800, a, 6) + _entry(801, a, 7) + _entry(802, b, 5),
        # 4 consecutive ids: entry by entry
        _entry(900, a, 5) + _entry(901, a, 8) + _entry(902, b, 6) + _entry(903, b, 7),
    ]
    return [f"{FORMAT} commit\n{text}".encode() for text in texts]


def test_the_log_s_read_chooses_by_the_leaf_s_span(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replays.log, "_RUNS_MAX", 3)
    datas = _leaves()
    with read_by_a_log(datas) as (_log, where, _, spans):
        assert where[UUID(int=20)] == [0, 0, 1, 1, 4, 3, 3, 4]
        assert where[UUID(int=21)] == [0, 1, 2, 1, 3, 4, 4]
        made = [p is not None and p._runs is not None for p in kept_parses(datas)]  # by hash
        assert made == [False, True, True, True, False]
        # not the count: the first leaf has 3 entries, the second 5
        assert [parse_leaf(data).count() for data in datas] == [3, 5, 2, 3, 4]
        assert spans == [(1, 501), (600, 601), (700, 650), (800, 802), (900, 903)]
