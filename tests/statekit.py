"""Hypothesis strategies for stored event states changed at random: the values and keys a
tampered or damaged record may hold, and :func:`change_state`, which edits a decoded state in
place. One home for them, shared by the deferred records' decoding and kept-fact tests
(``tests/replays/test_deferred_decoding.py``, ``test_deferred_kept_facts.py``)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

#: Values a stored state's field may be changed to: plain JSON, the transcoder's tagged values
#: (well formed, malformed, of an unknown type).
STORED_VALUES = st.sampled_from(
    [0, 1, -1, 2, "", "x", "2", None, True, False, 1.5, [], [1], {}, {"a": 1},
     {"_data_": "1", "_type_": "decimal_str"}, {"_data_": "0" * 32, "_type_": "uuid_hex"},
     {"_data_": "2026-01-01T00:00:00+00:00", "_type_": "datetime_iso"},
     {"_data_": "yesterday", "_type_": "datetime_iso"}, {"_data_": 1, "_type_": "nope"}]
)  # fmt: skip
#: The keys the library reads or sets besides the payload's, and one more.
LIBRARY_KEYS = st.sampled_from(
    ["class_version", "timestamp", "originator_topic", "originator_id", "originator_version", "zz"]
)


def change_state(data: Any, state: dict[str, Any], keys: Any = LIBRARY_KEYS) -> None:
    """Up to three random edits of ``state`` (drawn from ``data``, ``st.data()``): a field set
    to one of :data:`STORED_VALUES`, one removed, one of ``keys`` added, an integer bumped."""
    for op in data.draw(st.lists(st.sampled_from(["set", "pop", "add", "bump"]), max_size=3)):
        names = sorted(state)
        if op == "set" and names:
            state[data.draw(st.sampled_from(names))] = data.draw(STORED_VALUES)
        elif op == "pop" and names:
            state.pop(data.draw(st.sampled_from(names)))
        elif op == "add":
            state[data.draw(keys)] = data.draw(STORED_VALUES)
        elif op == "bump":
            numbers = [k for k in names if type(state[k]) is int]
            if numbers:
                state[data.draw(st.sampled_from(numbers))] += 1
