"""``domain.layered.LayeredMap`` against a plain dict: every version of the map, old and new,
reads as the dict of the same history would, whatever the order of writes (hypothesis)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from domain.layered import TOP, LayeredMap, LayeredMapAsDict

writes = st.lists(st.tuples(st.integers(0, 3 * TOP), st.integers()), max_size=12 * TOP)


@given(writes)
def test_every_version_reads_as_the_dict_of_its_history(history: list[tuple[int, int]]) -> None:
    versions: list[tuple[LayeredMap[int, int], dict[int, int]]] = [(LayeredMap(), {})]
    for key, value in history:
        m, d = versions[-1]
        versions.append((m.set(key, value), {**d, key: value}))
    for m, d in versions[:: max(1, len(versions) // 20)] + versions[-1:]:
        assert list(m.items()) == list(d.items())  # the order first set, the latest value
        assert len(m) == len(d)
        assert all(m.get(k) == v and m[k] == v and k in m for k, v in d.items())
        assert m.get(-1) is None
        assert -1 not in m
        levels = [len(level) for level in m.levels]
        assert levels == sorted(levels, reverse=True)  # a binary counter's digits
        assert len(m.top) < TOP


@given(writes)
def test_a_snapshot_encoding_round_trips(history: list[tuple[int, int]]) -> None:
    m: LayeredMap[int, int] = LayeredMap()
    for key, value in history:
        m = m.set(key, value)
    t = LayeredMapAsDict()
    back = t.decode(t.encode(m))
    assert list(back.items()) == list(m.items())
    assert back.set(-1, 0).get(-1) == 0


@given(st.lists(st.integers(), max_size=12 * TOP, unique=True), st.integers(-2, 14 * TOP))
def test_newest_of_keys_each_set_once_reads_as_a_slice_of_the_values(
    keys: list[int], n: int
) -> None:
    """``newest(n)`` of a map whose keys were each set once (a wallet's movements: the read
    that walks no part twice) is the same slice of ``values()``, before and after a key is
    set again (which takes the general walk)."""
    m: LayeredMap[int, int] = LayeredMap()
    for i, key in enumerate(keys):
        m = m.set(key, i)
    values = list(m.values())
    assert values == list(range(len(keys)))
    assert m.newest(n) == (values[-n:] if n > 0 else [])
    if keys:
        again = m.set(keys[0], -1)
        values = list(again.values())
        assert again.newest(n) == (values[-n:] if n > 0 else [])


@given(writes, st.integers(-2, 14 * TOP), st.integers(-2, 14 * TOP))
def test_newest_and_window_read_as_slices_of_the_values(
    history: list[tuple[int, int]], n: int, start: int
) -> None:
    """``newest(n)`` and ``window`` are slices of ``values()`` (keys set again included)."""
    m: LayeredMap[int, int] = LayeredMap()
    for key, value in history:
        m = m.set(key, value)
    values = list(m.values())
    assert m.newest(n) == (values[-n:] if n > 0 else [])
    assert m.window(start, start + 7) == values[max(start, 0) : max(start + 7, 0)]
