"""The single commands' own shortcuts (branch ``hcmd``), each against the reading it replaces:

* ``api.idempotency.request_target``: a command's path and query are ``request.url``'s, for
  plain and hostile paths, queries, ``Host`` headers, schemes and servers; a key recorded
  with the fingerprint ``request.url`` made still replays, and another request under it is
  still refused;
* ``domain.sqlite_reads.LeanReads.last_version`` (``api.versions.last_version`` on SQLite):
  the version of the last event ``select_events`` reads, for every stream of a store;
* ``api.deps.state_value``: what ``getattr`` gives of a Starlette ``State``, or its error.

``now_text`` against ``strftime`` and ``Record.answered``: in
``tests/unit/test_idempotency_fast_paths.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import orjson
import pytest
from apikit import ADMIN_TOKEN, Api, service_settings
from fastapi.testclient import TestClient
from starlette.datastructures import State
from starlette.requests import Request

from api.deps import state_value
from api.idempotency import HEADER, REPLAYED, fingerprint, request_target
from api.limits import canonical
from api.main import create_app
from api.versions import last_version
from domain.application import RoundAudit
from domain.idempotency import Answer, Record, now_text, record_id
from domain.keys import parse_token
from domain.sqlite_reads import LeanReads

PATHS = [
    "/wallets/p1/deposits",
    "/rounds/T1%231/bets",
    "/",
    "/a/b/c/",
    "//wallets/p1/deposits",
    "/wallets/a?b/deposits",
    "/wallets/a#b/deposits",
    "/wallets/a\\b/deposits",
    "/wallets/a b/deposits",
    "/wallets/a\tb/deposits",
    "/wallets/a\nb",
    "/wallets/a\rb",
    "/wallets/ä/deposits",
    "/wallets/%3F/deposits",
    "/?x",
    "/#",
    "/x:y@z/!$&'()*+,;=~",
    "",
    "wallets/p1",
    " /wallets",
]
HOSTS: list[list[bytes]] = [
    [b"testserver"],
    [b"127.0.0.1:8000"],
    [b"localhost:80"],
    [b"[::1]:8000"],
    [b"[::1]"],
    [b"[::zz]:8000"],
    [b"[v1.fe]"],
    [b"host:99999"],
    [b"host:00000080"],
    [b"a/b"],
    [b"a?b"],
    [b"a#b"],
    [b"a@b"],
    [b"ex ample"],
    [b"[::1"],
    [b""],
    [],
    [b"first", b"second/x"],
    [b"h\xe9te"],
]
SERVERS: list[Any] = [("127.0.0.1", 8000), ("::1", 80), None, ("/tmp/s.sock", None)]


def _scope(path: str, query: bytes, hosts: list[bytes], scheme: str, server: Any) -> dict[str, Any]:
    headers = [(b"host", h) for h in hosts] + [(b"content-type", b"application/json")]
    return {
        "type": "http",
        "method": "POST",
        "scheme": scheme,
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": headers,
        "server": server,
    }


def _by_url(scope: dict[str, Any]) -> tuple[str, str] | type[BaseException]:
    try:
        url = Request(scope).url
        return url.path, url.query
    except Exception as e:  # the same failure either way
        return type(e)


def _by_target(scope: dict[str, Any]) -> tuple[str, str] | type[BaseException]:
    try:
        return request_target(Request(scope))
    except Exception as e:
        return type(e)


@pytest.mark.parametrize("scheme", ["http", "https", "ws", "weird+x"])
def test_a_commands_target_is_request_urls(scheme: str) -> None:
    """Every combination of path, query, Host header(s) and server: the same path and query
    as ``request.url`` (or the same error), so a fingerprint is the text it was."""
    fast = 0
    for path in PATHS:
        for query in (b"", b"b=2&a=1", b"x"):
            for hosts in HOSTS:
                for server in SERVERS:
                    scope = _scope(path, query, hosts, scheme, server)
                    expected = _by_url(scope)
                    assert _by_target(scope) == expected, scope
                    fast += not query and scheme == "http" and hosts[:1] == [b"testserver"]
    assert fast or scheme != "http"  # the shortcut's own cases were among them


def _record_by_url(
    audit: RoundAudit, path: str, body: dict[str, Any], key: str, answer: bytes
) -> None:
    """A record of ``key`` as the code before ``request_target`` made it: its fingerprint of
    ``request.url``'s path and query for TestClient's request (``http://testserver``)."""
    url = Request(_scope(path, b"", [b"testserver"], "http", ("testserver", 80))).url
    fp = fingerprint("POST", url.path, url.query, canonical(body))
    parsed = parse_token(ADMIN_TOKEN)
    assert parsed is not None
    key_id = parsed[0]
    record = Record(
        record_id(key_id, key),
        key_id,
        key,
        fp,
        "POST",
        url.path,
        now_text(),
        answer=Answer(200, answer, (("content-type", "application/json"),)),
    )
    assert audit.idempotency.put(record)


def test_a_key_recorded_by_request_url_still_replays(tmp_path: Path) -> None:
    """A record whose fingerprint ``request.url`` made (the code before) answers its repeat
    byte for byte, as a replay, and nothing is deposited; another body under that key is
    still 422 ``idempotency-key-reused``; a new key's record holds that same path and
    fingerprint."""
    with TestClient(create_app(service_settings(f"sqlite:///{tmp_path}/a.db"))) as client:
        api = Api(client)
        api.wallet("p1", deposit="5.00")
        audit: RoundAudit = client.app.state.audit  # type: ignore[attr-defined]
        path, body = "/wallets/p1/deposits", {"amount": "1.00", "transaction_id": "t-old"}
        _record_by_url(audit, path, body, "k-old", b'{"recorded":"before"}')
        auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        again = client.post(path, json=body, headers={**auth, HEADER: "k-old"})
        assert again.status_code == 200
        assert again.content == b'{"recorded":"before"}'
        assert again.headers[REPLAYED] == "true"
        assert str(audit.balance("p1")) == "5.00"  # the repeat ran nothing
        other = client.post(
            path, json={**body, "amount": "2.00"}, headers={**auth, HEADER: "k-old"}
        )
        assert other.status_code == 422
        assert other.json()["code"] == "idempotency-key-reused"
        new = client.post(path, json={**body, "transaction_id": "t-new"}, headers=auth)
        assert new.status_code == 200
        parsed = parse_token(ADMIN_TOKEN)
        assert parsed is not None
        (row,) = audit.idempotency.get(record_id(parsed[0], "t-new"))
        url = Request(_scope(path, b"", [b"testserver"], "http", ("testserver", 80))).url
        fp = fingerprint(
            "POST", url.path, url.query, canonical({**body, "transaction_id": "t-new"})
        )
        assert (row.path, row.fingerprint) == (url.path, fp)


def test_last_version_is_the_librarys(tmp_path: Path) -> None:
    """``LeanReads.last_version`` (a UUID or its text) and ``api.versions.last_version`` on
    SQLite: the version of the last event ``select_events`` reads, for every stream of a store
    with keys, wallets of several movements and a round; None for an id with nothing."""
    with TestClient(create_app(service_settings(f"sqlite:///{tmp_path}/a.db"))) as client:
        api = Api(client)
        for i in range(3):
            api.wallet(f"p{i}", deposit="10.00")
            for n in range(i):
                api.ok(
                    "POST",
                    f"/wallets/p{i}/deposits",
                    json={"amount": "1.00", "transaction_id": f"d{i}-{n}"},
                )
        api.start("T1", "multihand", ["10H", "9S", "6D", "KC", "8D", "2C", "5S", "4H"])
        recorder = client.app.state.audit.recorder  # type: ignore[attr-defined]
        assert isinstance(recorder, LeanReads)
        ids = {n.originator_id for n in recorder.select_notifications(0, 10_000)}
        assert len(ids) > 5
        for oid in [*ids, uuid4()]:
            last = recorder.select_events(oid, desc=True, limit=1)
            expected = int(last[0].originator_version) if last else None
            assert recorder.last_version(oid) == expected
            assert recorder.last_version(UUID(str(oid)).hex) == expected
            assert last_version(recorder, oid) == expected
            if last:
                assert expected == max(e.originator_version for e in recorder.select_events(oid))


def test_state_value_is_getattr() -> None:
    """An entry, a default, and a missing entry's own ``AttributeError`` (its text)."""
    state = State()
    state.audit = audit = object()
    state.none = None
    assert state_value(state, "audit") is audit is state.audit
    assert state_value(state, "none", 1) is None
    assert state_value(state, "gone", b"") == b"" == getattr(state, "gone", b"")
    with pytest.raises(AttributeError) as ours:
        state_value(state, "gone")
    with pytest.raises(AttributeError) as theirs:
        _ = state.gone
    assert str(ours.value) == str(theirs.value)
    request = Request({"type": "http", "state": {"principal": 7}})
    assert state_value(request.state, "principal") == 7 == request.state.principal


def test_a_deposit_answers_the_same_with_every_shortcut(tmp_path: Path) -> None:
    """A deposit through the hot path: its answer is the wallet's view, and its record's
    created time is ``now_text``'s fixed-width text."""
    with TestClient(create_app(service_settings(f"sqlite:///{tmp_path}/a.db"))) as client:
        api = Api(client)
        api.wallet("p1", deposit="5.00")
        r = client.post(
            "/wallets/p1/deposits",
            json={"amount": "1.25", "transaction_id": "t-1"},
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        )
        assert r.status_code == 200
        assert orjson.loads(r.content)["balance"] == "6.25"
        audit: RoundAudit = client.app.state.audit  # type: ignore[attr-defined]
        parsed = parse_token(ADMIN_TOKEN)
        assert parsed is not None
        (row,) = audit.idempotency.get(record_id(parsed[0], "t-1"))
        assert len(row.created) == 27
        assert row.created.endswith("Z")
        assert row.answer is not None
        assert row.answer.body == r.content
