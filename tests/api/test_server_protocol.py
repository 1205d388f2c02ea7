"""``api.server``: uvicorn's httptools protocol with one socket write per answer.

Two real uvicorn servers on one SQLite store, one on uvicorn's own protocol and one on
:class:`~api.server.OneWriteProtocol`, answer the same raw requests with the same bytes (the
``date`` header aside): plain and streamed (chunked) answers, refusals, a command's
idempotent replay, two requests pipelined on one connection, ``Connection: close``. Each
answer of the one-write protocol reaches the socket in one write (two on uvicorn's own: the
test would fail if the coalescing did nothing); the transport keeps order, flushes before it
closes and drops nothing it was given.
"""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from apikit import ADMIN_TOKEN, service_settings
from storekit import free_port
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from api.main import create_app
from api.server import PROTOCOL, CoalescingTransport, OneWriteProtocol
from benchmarks.http_load import start_test_round

HOST = "127.0.0.1"


class Recorder:
    """A transport that records each write it is given, then passes it on."""

    def __init__(self, transport: Any, writes: list[bytes]) -> None:
        self._transport, self.writes = transport, writes

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self._transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def recording(base: type[HttpToolsProtocol], writes: list[bytes]) -> type[HttpToolsProtocol]:
    class Recording(base):  # type: ignore[misc, valid-type]
        def connection_made(self, transport: Any) -> None:
            super().connection_made(Recorder(transport, writes))

    return Recording


@contextmanager
def server(
    url: str, protocol: type[HttpToolsProtocol], *, access_log: bool = False
) -> Iterator[int]:
    """A real uvicorn server on ``protocol`` (uvicorn's own logging configuration) in a
    thread: its port; stopped after."""
    port = free_port()
    settings = service_settings(url, allowed_hosts=(f"{HOST}:{port}", HOST))
    config = uvicorn.Config(
        create_app(settings), host=HOST, port=port, http=protocol, access_log=access_log
    )
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield port
    finally:
        srv.should_exit = True
        thread.join(timeout=15)


def exchange(port: int, raw: bytes) -> bytes:
    """Send ``raw`` on a new connection and read until the server closes it."""
    with socket.create_connection((HOST, port), timeout=15) as s:
        s.sendall(raw)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def no_date(answer: bytes) -> bytes:
    return re.sub(rb"\r\ndate: [^\r]*", b"", answer)


def request(port: int, method: str, path: str, body: bytes = b"", **headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {HOST}:{port}"]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    if body:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@pytest.fixture
def round_id(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(the store's URL, a round's id) with a wallet ``pw`` of the admin."""
    url = f"sqlite:///{tmp_path}/one-write.db"
    with server(url, HttpToolsProtocol) as port:
        auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        with httpx.Client(base_url=f"http://{HOST}:{port}", headers=auth) as http:
            assert http.post("/wallets", json={"player_id": "pw"}).status_code == 201
            yield url, start_test_round(http, "W1")


def test_every_answer_is_the_same_bytes_in_one_write(round_id: tuple[str, str]) -> None:
    url, rid = round_id
    key = f"Bearer {ADMIN_TOKEN}"
    deposit = b'{"amount": "2.00", "transaction_id": "ow-1"}'
    cases = [
        ("GET", "/health", b"", {}),
        ("GET", f"/rounds/{rid}", b"", {"Authorization": key}),
        ("GET", f"/rounds/{rid}", b"", {}),  # 401
        ("GET", f"/rounds/{rid}", b"", {"Authorization": "Bearer rak_nope"}),  # 401
        ("GET", "/rounds/00000000-0000-0000-0000-000000000000", b"", {"Authorization": key}),
        ("GET", "/rounds/not%20an%20id", b"", {"Authorization": key}),  # 422
        ("HEAD", f"/rounds/{rid}", b"", {"Authorization": key}),  # 405
        ("POST", "/wallets/pw/deposits", deposit, {"Authorization": key}),  # replayed
        ("POST", "/wallets/pw/deposits", b'{"amount": 1.5}', {"Authorization": key}),  # 422
        ("GET", f"/rounds/{rid}/replay", b"", {"Authorization": key}),  # streamed, chunked
    ]
    answers: dict[str, list[bytes]] = {"uvicorn": [], "one-write": []}
    writes: dict[str, list[list[bytes]]] = {"uvicorn": [], "one-write": []}
    seen: dict[str, list[bytes]] = {"uvicorn": [], "one-write": []}
    with (
        server(url, recording(HttpToolsProtocol, seen["uvicorn"])) as plain,
        server(url, recording(OneWriteProtocol, seen["one-write"])) as one,
    ):
        first = request(plain, "POST", "/wallets/pw/deposits", deposit, Connection="close",
                        Authorization=key)  # fmt: skip
        assert exchange(plain, first).startswith(b"HTTP/1.1 200 OK\r\n")  # then replays only
        for method, path, body, headers in cases:  # each to both, one after the other
            for name, port in (("uvicorn", plain), ("one-write", one)):
                before = len(seen[name])
                raw = request(port, method, path, body, Connection="close", **headers)
                answers[name].append(no_date(exchange(port, raw)))
                writes[name].append(seen[name][before:])
    assert answers["one-write"] == answers["uvicorn"]
    statuses = [a.split(b" ", 2)[1] for a in answers["uvicorn"]]
    assert statuses == [b"200", b"200", b"401", b"401", b"404", b"422", b"405",
                        b"200", b"422", b"200"]  # fmt: skip
    for i, (method, _, _, _) in enumerate(cases[:-1]):
        assert len(writes["one-write"][i]) == 1, (i, method)  # status line, headers, body
        assert len(writes["uvicorn"][i]) == (1 if method == "HEAD" else 2), i
    assert b"transfer-encoding: chunked" in answers["uvicorn"][-1]
    # the one write is uvicorn's two, joined
    assert no_date(writes["one-write"][1][0]) == no_date(b"".join(writes["uvicorn"][1]))


def test_pipelined_requests_on_one_connection_answer_in_order(round_id: tuple[str, str]) -> None:
    url, rid = round_id
    key = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    got = {}
    with server(url, HttpToolsProtocol) as plain, server(url, OneWriteProtocol) as one:
        for name, port in (("uvicorn", plain), ("one-write", one)):
            raw = (
                request(port, "GET", f"/rounds/{rid}", **key)
                + request(port, "GET", "/health")
                + request(port, "GET", f"/rounds/{rid}", Connection="close", **key)
            )
            got[name] = no_date(exchange(port, raw))
    assert got["one-write"] == got["uvicorn"]
    assert got["uvicorn"].count(b"HTTP/1.1 200 OK") == 3


class FakeTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        assert not self.closed
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> Any:
        return ("peer", name)


def test_writes_of_one_loop_step_go_out_in_one_write_in_order() -> None:
    async def scenario() -> FakeTransport:
        fake = FakeTransport()
        t = CoalescingTransport(fake, asyncio.get_running_loop())  # type: ignore[arg-type]
        t.write(b"head ")
        t.write(b"")
        t.write(bytearray(b"body"))
        assert fake.writes == []  # kept until the step ends
        await asyncio.sleep(0)
        assert fake.writes == [b"head body"]
        t.write(b"next")
        t.close()  # flushed before the close, never lost
        assert fake.writes == [b"head body", b"next"]
        assert fake.closed
        await asyncio.sleep(0)
        assert fake.writes == [b"head body", b"next"]  # nothing sent twice
        assert t.get_extra_info("peername") == ("peer", "peername")  # the rest: the transport's
        return fake

    asyncio.run(scenario())


def test_nothing_is_written_to_a_transport_already_closing() -> None:
    async def scenario() -> None:
        fake = FakeTransport()
        t = CoalescingTransport(fake, asyncio.get_running_loop())  # type: ignore[arg-type]
        t.write(b"late")
        fake.closed = True  # the peer went away meanwhile
        await asyncio.sleep(0)
        assert fake.writes == []

    asyncio.run(scenario())


def test_serve_names_the_protocol() -> None:
    named = f"{OneWriteProtocol.__module__}:{OneWriteProtocol.__qualname__}"
    assert named == PROTOCOL
