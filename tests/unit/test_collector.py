"""``domain.collector.paused``: automatic collection waits while commands run, and the
collector is left as the block found it (re-entrant, across threads, after an error, and a
host that turned it off keeps it off); a frozen heap is held off too."""

from __future__ import annotations

import gc
import threading

import pytest

from domain.collector import paused


def test_paused_turns_collection_off_and_back_on() -> None:
    assert gc.isenabled()
    with paused():
        assert not gc.isenabled()
        with paused():  # re-entrant: the inner block does not turn it back on
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_collection_resumes_after_an_error() -> None:
    with pytest.raises(RuntimeError), paused():
        raise RuntimeError("refused")
    assert gc.isenabled()


def test_a_host_that_turned_the_collector_off_keeps_it_off() -> None:
    gc.disable()
    try:
        with paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_frozen_heap_is_held_off_too() -> None:
    """The service process freezes its start-up heap (``api.main.tune_collector``): what a
    batch allocates is not frozen, so the collector waits all the same."""
    gc.freeze()
    try:
        assert gc.get_freeze_count() > 0
        with paused():
            assert not gc.isenabled()
        assert gc.isenabled()
    finally:
        gc.unfreeze()


def test_the_last_thread_to_leave_turns_it_back_on() -> None:
    inside, leave = threading.Event(), threading.Event()

    def hold() -> None:
        with paused():
            inside.set()
            leave.wait(5)

    other = threading.Thread(target=hold)
    other.start()
    assert inside.wait(5)
    with paused():
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other thread still runs its block
    leave.set()
    other.join(5)
    assert gc.isenabled()
