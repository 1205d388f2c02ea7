"""The garbage collector held off while a large batch of commands runs.

A boundless round keeps every participation and wallet of its players in memory (the round
index), so the heap holds hundreds of thousands of long-lived objects, and recording a batch
of a thousand players' decisions or settlements allocates tens of thousands more (events,
stored events, recordings). CPython's automatic collections are triggered by allocation
counts, not by garbage, so they run again and again during a batch and walk what the batch
allocated, all of it alive until the transaction commits: measured on a 6,000-player round
(SQLite), 0.94 s of the decision phase's 3.6 s of CPU and 0.55 s of the settlement's 1.8 s were
spent in the collector. Recording makes (almost) no reference cycles, so nothing piles up while
the collector waits; automatic collection resumes when the last batch in the process ends.

:func:`paused` is re-entrant and safe across threads: the first holder turns automatic
collection off (only if it was on), the last one to leave turns it back on. A host that turned
the collector off itself keeps it off.

A frozen heap (``gc.freeze``) is held off all the same: the service process freezes its
start-up heap (``api.main.tune_collector``), but what a batch allocates is not frozen and the
collections would walk it as before. Until branch ``gcleak`` a frozen heap was left alone,
which made :func:`paused` do nothing in the service process, and asking
(``gc.get_freeze_count`` walks every frozen object) cost about 1.5 ms of CPU a call there (the
service's 109,000 frozen objects). Tests ran with a heap left frozen by an earlier test (the
service's factory ``api.main.get_app``) then found the collector on during a pause: the
tests' ``conftest`` now fails a test that leaves the collector otherwise than it found it.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _Holders:
    """How many blocks hold the collector off, and whether the first one turned it off."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0
        self.turned_off = False


_held = _Holders()


@contextmanager
def paused() -> Iterator[None]:
    """No automatic garbage collection while the block runs (see the module docstring)."""
    h = _held
    with h.lock:
        if h.count == 0 and gc.isenabled():
            gc.disable()
            h.turned_off = True
        h.count += 1
    try:
        yield
    finally:
        with h.lock:
            h.count -= 1
            if h.count == 0 and h.turned_off:
                h.turned_off = False
                gc.enable()


__all__ = ["paused"]
