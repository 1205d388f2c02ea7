"""The phases of a round (RULES.md "Round phases") and the guards every input passes.

Phase names are stored nowhere (they are state), but every model of a round moves through the
same ones: betting, the initial deal, the insurance window, play, the dealer, and the end
(settled, or cancelled under ERR-1). :func:`check_open` is the guard of every input while a
round is open; the supervisor's pause, resume and cancel (ERR-1) have theirs.
"""

from __future__ import annotations

from domain.errors import RoundClosed, WrongOrder, require_reason

BETTING, DEALING, INSURANCE, PLAYING, DEALER, SETTLED, CANCELLED = (
    "betting",
    "dealing",
    "insurance",
    "playing",
    "dealer",
    "settled",
    "cancelled",
)
FINISHED = frozenset({SETTLED, CANCELLED})


def check_open(label: str, phase: str, *, paused: bool, cancelling: bool = False) -> None:
    """An input reaches only an open round: not finished, not being cancelled, not paused."""
    if phase in FINISHED:
        raise RoundClosed(f"round {label} is {phase}")
    if cancelling:
        raise RoundClosed(f"round {label} is being cancelled (ERR-1)", rule="ERR-1")
    if paused:
        raise RoundClosed(f"round {label} is paused (ERR-1): resume or cancel", rule="ERR-1")


def check_pause(phase: str, reason: str, *, paused: bool, cancelling: bool = False) -> None:
    """ERR-1: a supervisor pauses an open round, naming a reason code."""
    if phase in FINISHED or cancelling:
        raise RoundClosed(f"round is {phase}")
    if paused:
        raise WrongOrder("round is already paused")
    require_reason(reason)


def check_resume(phase: str, reason: str, *, paused: bool, cancelling: bool = False) -> None:
    """ERR-1: a paused round resumes as it was."""
    if phase in FINISHED or cancelling:
        raise RoundClosed(f"round is {phase}")
    if not paused:
        raise WrongOrder("round is not paused")
    require_reason(reason)


def check_cancel(phase: str, reason: str, *, cancelling: bool = False) -> None:
    """ERR-1: an unfinished round may be cancelled (once), naming a reason code."""
    if phase in FINISHED:
        raise RoundClosed(f"round is {phase}: it can no longer be cancelled")
    if cancelling:
        raise WrongOrder("the round is already being cancelled", rule="ERR-1")
    require_reason(reason)


__all__ = [
    "BETTING",
    "CANCELLED",
    "DEALER",
    "DEALING",
    "FINISHED",
    "INSURANCE",
    "PLAYING",
    "SETTLED",
    "check_cancel",
    "check_open",
    "check_pause",
    "check_resume",
]
