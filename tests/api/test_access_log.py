"""``api.accesslog``: uvicorn's access line made directly, written once per loop step.

The line equals what uvicorn's own logging configuration writes, for every status and a path
with a query; the stand-in is used only for that configuration (colours, a filter, another
format or handler keep uvicorn's logger); level, ``logging.disable`` and a disabled logger are
honoured at every line; the lines of one loop step go out in one write, in order. End to end,
two real servers, one on uvicorn's own protocol and one on ``api.server.OneWriteProtocol``,
write the same access lines for the same requests (the client's port aside).
"""

from __future__ import annotations

import asyncio
import copy
import io
import logging
import logging.config
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apikit import ADMIN_TOKEN
from test_server_protocol import exchange, request, server
from uvicorn.config import LOGGING_CONFIG
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from api import accesslog
from api.accesslog import AccessLine, access_line, line
from api.server import OneWriteProtocol

FMT = '%s - "%s %s HTTP/%s" %d'


@pytest.fixture
def access_logger() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """``uvicorn.access`` as uvicorn configures it (no colours), writing to a string."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["access"]["use_colors"] = False
    logging.config.dictConfig(config)
    logger = logging.getLogger("uvicorn.access")
    stream = io.StringIO()
    logger.handlers[0].setStream(stream)  # type: ignore[attr-defined]
    yield logger, stream
    logging.disable(logging.NOTSET)
    logger.setLevel(logging.INFO)
    logger.disabled = False


def ours(
    configured: tuple[logging.Logger, io.StringIO],
) -> tuple[logging.Logger, io.StringIO]:
    """The configured logger without the capture handlers pytest adds to it for a test."""
    logger = configured[0]
    logger.handlers[1:] = []
    return configured


def test_the_line_is_uvicorns_line_for_every_status(
    access_logger: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, stream = ours(access_logger)
    args = [("127.0.0.1:5000", "POST", "/wallets/p/deposits", "1.1", s) for s in range(100, 600)]
    args.append(("", "GET", "/rounds?table=T1&x=%20", "1.0", 200))  # no client, a query
    for a in args:
        logger.info(FMT, *a)
    assert stream.getvalue() == "".join(line(*a) + "\n" for a in args)
    expected = 'INFO:     127.0.0.1:5000 - "POST /wallets/p/deposits HTTP/1.1" 200 OK'
    assert line(*args[100]) == expected
    assert line(*args[499]).endswith(" 599 ")  # no phrase: as uvicorn's


def test_lines_of_one_loop_step_are_one_write_in_order(
    access_logger: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, stream = ours(access_logger)
    fast = access_line(logger)
    assert isinstance(fast, AccessLine)
    writes: list[str] = []
    original = stream.write

    def write(text: str) -> int:
        writes.append(text)
        return original(text)

    stream.write = write  # type: ignore[method-assign]
    args = [("127.0.0.1:1", "GET", f"/p{i}", "1.1", 200 + i) for i in range(3)]

    async def step() -> None:
        for a in args:
            fast.info(FMT, *a)
        assert writes == []  # kept until the step ends
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    asyncio.run(step())
    assert writes == ["".join(line(*a) + "\n" for a in args)]
    fast.info(FMT, *args[0])  # no running loop: written at once
    assert writes[-1] == line(*args[0]) + "\n"


def test_level_disable_and_a_disabled_logger_hold_at_every_line(
    access_logger: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, stream = ours(access_logger)
    fast = access_line(logger)
    assert fast is not None
    a = ("127.0.0.1:1", "GET", "/health", "1.1", 200)
    logger.setLevel(logging.WARNING)
    fast.info(FMT, *a)
    logger.setLevel(logging.INFO)
    logging.disable(logging.INFO)
    fast.info(FMT, *a)
    logging.disable(logging.NOTSET)
    logger.disabled = True
    fast.info(FMT, *a)
    logger.disabled = False
    logger.handlers[0].setLevel(logging.ERROR)
    fast.info(FMT, *a)
    logger.handlers[0].setLevel(logging.NOTSET)
    assert stream.getvalue() == ""
    fast.info(FMT, *a)
    assert stream.getvalue() == line(*a) + "\n"


def test_any_other_configuration_keeps_uvicorns_logger(
    access_logger: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, _ = ours(access_logger)
    handler: Any = logger.handlers[0]
    assert access_line(logger) is not None
    handler.formatter.use_colors = True
    assert access_line(logger) is None
    handler.formatter.use_colors = False
    handler.addFilter(lambda r: True)
    assert access_line(logger) is None
    handler.filters.clear()
    logger.addFilter(lambda r: True)
    assert access_line(logger) is None
    logger.filters.clear()
    logger.propagate = True
    assert access_line(logger) is None
    logger.propagate = False
    logger.addHandler(logging.StreamHandler(io.StringIO()))
    assert access_line(logger) is None
    logger.removeHandler(logger.handlers[-1])
    handler.setFormatter(logging.Formatter("%(message)s"))
    assert access_line(logger) is None


def served_lines(
    url: str, protocol: type[HttpToolsProtocol], capsys: pytest.CaptureFixture[str]
) -> list[str]:
    """The access lines a real server on ``protocol`` (uvicorn's own logging configuration,
    access log on) writes for a few requests, the client's port masked."""
    import time

    key = f"Bearer {ADMIN_TOKEN}"
    with server(url, protocol, access_log=True) as port:
        capsys.readouterr()
        for method, path, body, headers in (
            ("GET", "/health", b"", {}),
            ("GET", "/health?x=1", b"", {}),
            ("POST", "/wallets", b'{"player_id": "al"}', {"Authorization": key}),
            ("POST", "/wallets/al/deposits", b'{"amount": "1.00", "transaction_id": "a1"}',
             {"Authorization": key}),
            ("POST", "/wallets/al/deposits", b'{"amount": 1.5}', {"Authorization": key}),
            ("GET", "/rounds/nope", b"", {}),
            ("GET", "/nowhere", b"", {"Authorization": key}),
        ):  # fmt: skip
            exchange(port, request(port, method, path, body, Connection="close", **headers))
        time.sleep(0.2)  # the last loop step's lines
    out = capsys.readouterr().out
    return [re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", x) for x in out.splitlines()]


def test_a_real_server_writes_uvicorns_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[AccessLine] = []
    real = accesslog.access_line

    def spy(logger: logging.Logger) -> AccessLine | None:
        found = real(logger)
        if found is not None:
            made.append(found)
        return found

    monkeypatch.setattr("api.server.access_line", spy)
    plain = served_lines(f"sqlite:///{tmp_path}/a.db", HttpToolsProtocol, capsys)
    assert made == []
    fast = served_lines(f"sqlite:///{tmp_path}/b.db", OneWriteProtocol, capsys)
    assert made  # the stand-in wrote them
    assert fast == plain
    assert len(plain) == 7
    assert plain[3] == 'INFO:     127.0.0.1:PORT - "POST /wallets/al/deposits HTTP/1.1" 200 OK'
    assert plain[1] == 'INFO:     127.0.0.1:PORT - "GET /health?x=1 HTTP/1.1" 200 OK'
