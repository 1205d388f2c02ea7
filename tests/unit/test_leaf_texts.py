"""``domain.commit_leaf.leaf_bytes`` keeps the text of each originator id it wrote
(``_TEXTS``): the leaves are the same as the ids written out each time, under the cache's
bound and after it is emptied, and what it keeps is each id's canonical text."""

from __future__ import annotations

from uuid import UUID, uuid4, uuid5

import pytest
from leafkit import expected_leaf

import domain.commit_leaf as commit_leaf
from domain.commit_leaf import COMMIT, forget_parsed, leaf_bytes
from domain.commits import CommittedEvent


@pytest.mark.parametrize("bound", [3, 1 << 16])
def test_leaves_name_each_id_by_its_text_whatever_is_kept(
    bound: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commit_leaf, "_IDS_MAX", bound)
    forget_parsed()
    ids = [uuid4() for _ in range(5)] + [uuid5(UUID(int=7), "t"), UUID(int=1)]
    n = 0
    for round_ in range(4):
        events = []
        for i, oid in enumerate(ids[round_:] + ids[:round_]):
            n += 1
            events.append(CommittedEvent(n, oid, i + 1, "domain.shoe:Shoe.Drawn", bytes([i])))
        assert leaf_bytes(COMMIT, events) == expected_leaf(events)
        assert all(text == str(oid) for oid, text in commit_leaf._TEXTS.items())
        assert len(commit_leaf._TEXTS) <= max(bound, len(ids))
    forget_parsed()
    assert not commit_leaf._TEXTS
