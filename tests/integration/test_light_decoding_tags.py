"""``projections.recorded.at_most_one_tag``: the projections' reader restores a payload's
tagged values only when its bytes may hold one besides the timestamp's, so the test must never say
"at most one" of bytes that hold two, whether ``encode`` wrote them or a hand rewrote them (a
tag's key spelled with a ``\\u`` escape, which the byte count alone missed). And the reader
then decodes such a rewritten row as the library does."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.application import RoundAudit
from domain.persistence import OrjsonTranscoder, environment_for
from domain.wallet import Wallet
from projections.recorded import BatchReader, at_most_one_tag

T = OrjsonTranscoder()


def tag_keys(obj: Any) -> int:
    """How many dicts in ``obj`` have the key a tag has."""
    if isinstance(obj, dict):
        return ("_type_" in obj) + sum(tag_keys(v) for v in obj.values())
    if isinstance(obj, list):
        return sum(tag_keys(v) for v in obj)
    return 0


values = st.recursive(
    st.one_of(
        st.none(),
        st.integers(min_value=-(2**63), max_value=2**63 - 1),
        st.text(max_size=10),
        st.sampled_from(["_type_", '"_type_"', "\\u005ftype_", "\x01"]),
        st.decimals(allow_nan=False, allow_infinity=False, places=2),
        st.uuids(),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b", "_type_"]), inner, max_size=3),
    ),
    max_leaves=10,
)
keys = st.sampled_from(['"_type_"', '"\\u005ftype_"', '"_typ\\u0065_"', '"\\u005f\\u0074ype_"'])


# nested payloads are slow to generate on a loaded machine: the health check, not the property
@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["amount", "player", "x"]), values), st.lists(keys))
def test_at_most_one_tag_is_never_said_of_two(payload: dict[str, Any], forged: list[str]) -> None:
    data = T.encode({**payload, "timestamp": datetime(2026, 12, 5, tzinfo=UTC)})
    for i, key in enumerate(forged):  # tags added by hand, their keys spelled in any way
        data = data[:-1] + f',"f{i}":{{{key}:"decimal_str","_data_":"1"}}}}'.encode()
    if at_most_one_tag(data):
        assert tag_keys(orjson.loads(data)) <= 1


def test_a_rewritten_row_with_an_escaped_tag_reads_as_the_library_reads_it(
    tmp_path: Path,
) -> None:
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    try:
        reader = BatchReader(app)
        assert reader.light
        wid = Wallet.create_id("p1")
        state = T.encode(
            {"amount": "5.00", "timestamp": datetime(2026, 12, 5, tzinfo=UTC), "note": None}
        )
        # the amount rewritten as a tagged Decimal whose key is spelled with an escape
        forged = state.replace(
            b'"amount":"5.00"', b'"amount":{"\\u005ftype_":"decimal_str","_data_":"5.00"}'
        )
        assert b"\\u005f" in forged
        row = (1, str(wid), 1, "domain.wallet:Wallet.Deposited", forged)
        _, light = reader._decode(row, str(wid))
        library = reader._by_library(row)
        assert vars(light) == vars(library)
        assert str(light.amount) == "5.00"
        assert not isinstance(light.amount, dict)
    finally:
        app.close()
