"""Test support for the Dask pieces (``replays.distributed``, ``projections.daily_dask``).

This module owns :func:`closes_not_finishing`: the ``distributed.Client`` closes of a block
made to stop half-way, as a close that timed out leaves a client (``closing``: Dask still
picks such a client as the process's default for a bare ``compute``), and really closed after
the block.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest


@contextmanager
def closes_not_finishing(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Within the block, ``Client.close`` only marks its client ``closing``; yields the list
    of the clients so left, closed for real when the block ends."""
    from distributed import Client

    real_close, half_closed = Client.close, []

    def close_that_does_not_finish(self: Client, *args: object, **kwargs: object) -> None:
        half_closed.append(self)
        self.status = "closing"

    monkeypatch.setattr(Client, "close", close_that_does_not_finish)
    try:
        yield half_closed
    finally:
        monkeypatch.undo()
        for client in half_closed:
            if client.loop.asyncio_loop.is_closed():
                continue  # its loop ran on a runner another close stopped: nothing runs on it
            real_close(client)
