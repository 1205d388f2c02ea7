"""A single command's shortcuts (branch `hdep2`), each against what it replaces:

* ``api.security.with_security_headers``' API answer tail is what the general steps
  (``general_headers``) add, for
  every path (pages, their assets, near misses) and every answer's own headers;
* ``api.limits.parse_exact``'s kept decoder decodes and refuses as ``json.loads`` with the same
  options, its words included (a leading byte order mark among them);
* ``api.idempotency.fingerprint`` of an empty query is that of its canonical form;
* ``domain.idempotency.compress`` (a smaller zlib memory level) reads back with
  ``zlib.decompress``, and a record compressed as before reads the same;
* ``api.offload.CommandWorkers.run`` without ``asyncio.shield``: a request cancelled once or
  more while its command runs, or after the command finished but before it resumed, gets its
  cancellation only once the command has finished, and the command runs once.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import threading
import zlib
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl, urlencode
from uuid import uuid4

import orjson
import pytest

import api.offload
from api.idempotency import fingerprint
from api.limits import BadJson, _constant, _exact, _pairs, parse_exact
from api.offload import CommandWorkers
from api.security import general_headers, with_security_headers
from domain.idempotency import Answer, Record, compress, now_text

PATHS = [
    "/wallets/h1/deposits", "/rounds/x", "", "/", "/docs", "/docs/", "/docs/assets/app.js",
    "/docsx", "/docs2/assets/a", "/ui", "/ui/", "/ui/assets/a.css", "/uix", "/u", "/api/docs",
]  # fmt: skip
HEADERS: list[list[tuple[bytes, bytes]] | None] = [
    None,
    [],
    [(b"content-length", b"12"), (b"content-type", b"application/json")],
    [(b"content-type", b"application/json"), (b"Cache-Control", b"max-age=5")],
    [(b"x-frame-options", b"SAMEORIGIN")],
    [(b"X-Content-Type-Options", b"nosniff"), (b"location", b"/x")],
    [(b"content-security-policy", b"default-src 'self'")],
    [(b"referrer-policy", b"origin"), (b"cross-origin-resource-policy", b"cross-origin")],
]


def test_security_headers_are_the_general_steps_headers() -> None:
    for path in PATHS:
        for headers in HEADERS:
            message: dict[str, Any] = {"type": "http.response.start", "status": 200}
            if headers is not None:
                message["headers"] = headers
            assert with_security_headers(message, path) == general_headers(message, path), (
                path,
                headers,
            )
            assert message.get("headers") == headers  # the answer's own list is not changed


def _json_loads(text: str) -> Any:
    return _exact(
        json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant, parse_float=Decimal)
    )


BODIES = [
    '{"amount": "1.00", "transaction_id": "t-1"}', "[1.5, 2.0, 1e2, -0.0, 10]", "3", '"s"',
    '{"a": {"b": [1, {"c": 2.50}]}}', "\ufeff{}", "\ufeff", "", " ", "{", '{"a": 1, "a": 2}',
    "NaN", '{"x": -Infinity}', "[1, 2", '{"a" 1}', "nul", '"\\ud800"', "1 2",
]  # fmt: skip


def test_parse_exact_decodes_and_refuses_as_json_loads() -> None:
    for text in BODIES:
        try:
            expected: Any = ("value", _json_loads(text))
        except BadJson as exc:
            expected = ("refused", str(exc))
        except ValueError as exc:
            expected = ("refused", f"the body is not JSON ({str(exc)[:80]})")
        try:
            found: Any = ("value", parse_exact(text.encode("utf-8", "surrogatepass")))
        except BadJson as exc:
            found = ("refused", str(exc))
        assert found == expected, text
        assert repr(found) == repr(expected), text  # the types too (int, float, Decimal)


def test_an_empty_querys_fingerprint_is_its_canonical_forms() -> None:
    body = b'{"amount":"1.00","transaction_id":"t-1"}'
    h = hashlib.sha256()
    for part in (b"POST", b"/wallets/h1/deposits", urlencode(sorted(parse_qsl(""))).encode(), body):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    assert fingerprint("post", "/wallets/h1/deposits", "", body) == h.hexdigest()
    assert fingerprint("POST", "/p", "b=2&a=1", body) == fingerprint("POST", "/p", "a=1&b=2", body)
    assert fingerprint("POST", "/p", "a=", body) != fingerprint("POST", "/p", "", body)


MOVEMENT = {"kind": "deposit", "amount": "1.00", "balance_after": "123.00", "rule": None}
ANSWERS = [
    b"",
    b"x",
    orjson.dumps({"movements": [{**MOVEMENT, "transaction_id": f"t-{i}"} for i in range(50)]}),
    orjson.dumps({"movements": [{**MOVEMENT, "transaction_id": f"t-{i}"} for i in range(900)]}),
    b"\x00" + os.urandom(70_000),  # incompressible; never starts with "{" (the JSON check's)
]


def test_a_compressed_answer_reads_back_and_an_old_one_reads_the_same() -> None:
    for body in ANSWERS:
        packed = compress(body)
        assert zlib.decompress(packed) == body
        if len(body) > 10_000 and body[:1] == b"{":
            assert len(packed) < len(body) // 10
    body = ANSWERS[2]
    record = Record(
        uuid4(), "k1", "key", "fp", "POST", "/wallets/h1/deposits", now_text(),
        answer=Answer(200, body, (("content-type", "application/json"),)),
    )  # fmt: skip
    stored = record.stored()
    doc = orjson.loads(stored.state)
    assert doc["answer"]["encoding"] == "zlib"
    assert base64.b64decode(doc["answer"]["body"]) == compress(body)
    for old in (zlib.compress(body, 1), zlib.compress(body, 6)):  # as main wrote them
        doc["answer"]["body"] = base64.b64encode(old).decode()
        row = type(stored)(stored.originator_id, 1, stored.topic, orjson.dumps(doc))
        assert Record.parse(row).answer == record.answer


def _cancelled_run(
    monkeypatch: pytest.MonkeyPatch, cancels: int, after_finish: bool
) -> tuple[list[str], bool]:
    """A command run through the pool whose request is cancelled ``cancels`` times while it
    runs (or once right after the worker's answer reached the loop, before the caller
    resumed): what ran, and whether the caller's task was done before the command was let
    finish."""
    workers = CommandWorkers(1)
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []
    early = False

    def command() -> str:
        started.set()
        assert release.wait(10)
        ran.append("committed")
        return "answer"

    async def main() -> None:
        nonlocal early
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(workers.run(command))
        await loop.run_in_executor(None, started.wait, 10)
        if after_finish:
            settle = api.offload._settle

            def settled_then_cancelled(*args: Any) -> None:
                settle(*args)  # the answer set: the caller's wake-up is scheduled
                task.cancel()  # and its request cancelled before it runs

            monkeypatch.setattr(api.offload, "_settle", settled_then_cancelled)
            release.set()
        else:
            for _ in range(cancels):
                task.cancel()
                await asyncio.sleep(0.02)
            early = task.done()
            release.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(main())
    finally:
        workers.close()
    return ran, early


@pytest.mark.parametrize(("cancels", "after_finish"), [(1, False), (3, False), (1, True)])
def test_a_cancelled_request_gets_its_cancellation_once_its_command_finished(
    monkeypatch: pytest.MonkeyPatch, cancels: int, after_finish: bool
) -> None:
    ran, early = _cancelled_run(monkeypatch, cancels, after_finish)
    assert ran == ["committed"]
    assert not early


def test_a_key_in_flight_is_awaited_by_its_repeats_and_then_free() -> None:
    """``api.idempotency._InFlight``: the first to enter a key runs it; every repeat while it
    runs gets the same event, set when the first leaves; then the key is free again. An
    event is made only for a key a repeat waits for."""
    from api.idempotency import _InFlight

    inflight = _InFlight()
    rid, other = uuid4(), uuid4()
    assert inflight.enter(rid) is None
    assert inflight.enter(other) is None
    assert inflight.running == {rid: None, other: None}  # no repeat yet: no event made
    first = inflight.enter(rid)
    assert first is not None
    assert not first.is_set()
    assert inflight.enter(rid) is first
    waited: list[bool] = []
    waiter = threading.Thread(target=lambda: waited.append(first.wait(10)))
    waiter.start()
    inflight.leave(rid)
    waiter.join(10)
    assert waited == [True]
    assert inflight.enter(rid) is None  # free again: this caller's
    inflight.leave(other)
    inflight.leave(rid)
    assert inflight.running == {}
