"""Step-by-step replay: the table after each stored event of a round (the dispute view).

This module owns :func:`replay_steps` and its text rendering. The stored events are applied one
by one to a ``Round`` exactly as the event store rebuilds it (``event.mutate(round)``), and after
each one the round's own :meth:`~domain.round.Round.view` is taken: every hand with its cards and
total, its stake(s), the options the rules allowed at that moment, the dealer's visible cards
(the hole card is shown apart, marked, for the auditor). Balances are the ones the events
recorded as seen (a bet's ``balance_seen``, a decision's) and, where the round's wallet movements
are given, the wallet balance after each movement the step caused.

A step whose event cannot be applied (a tampered or missing event) ends the replay with the
reason: the state after it would be fiction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from domain.events import event_kind
from domain.round import Round
from replays.bundle import Decoded, RoundBundle, payload_json

Json = dict[str, Any]


@dataclass
class Step:
    position: int
    event: str
    kind: str
    rule: str | None
    summary: str
    view: Json
    hole: list[str]
    balances: dict[str, str]
    movements: list[str] = field(default_factory=list)

    def as_json(self) -> Json:
        return {
            "position": self.position,
            "event": self.event,
            "kind": self.kind,
            "rule": self.rule,
            "summary": self.summary,
            "view": self.view,
            "dealer_hole": self.hole,
            "balances": self.balances,
            "movements": self.movements,
        }


@dataclass
class Replay:
    round_id: str
    steps: list[Step]
    stopped: str | None = None  # why the replay ended early

    def as_json(self) -> Json:
        return {
            "round_id": self.round_id,
            "steps": [s.as_json() for s in self.steps],
            "stopped": self.stopped,
        }


def summarize(e: Any) -> str:
    """One line saying what an event records.

    >>> class Fake: pass
    >>> summarize(Fake())
    ''
    """
    p = payload_json(e) if hasattr(e, "__dict__") else {}
    if isinstance(e, Round.Started):
        return f"round {p['round_number']} of table {p['table_id']} under {p['rules_key']}"
    if isinstance(e, Round.BetPlaced):
        return (
            f"{p['player']} bets {p['stake']} ({p['kind']}) on {p['spot']}, balance seen "
            f"{p['balance_seen']}"
        )
    if isinstance(e, Round.CardDealt):
        return f"card {p['card']} out of the shoe (position {p['shoe_position']})"
    if isinstance(e, Round.CardToHand):
        return f"{p['card']} to hand {p['hand']} (total {p['total']}{' soft' if p['soft'] else ''})"
    if isinstance(e, Round.CardToDealer):
        return f"{p['card'] if p['face_up'] else 'hole card'} to the dealer"
    if isinstance(e, Round.DecisionMade):
        extra = f" {p['amount']}" if p.get("amount") else ""
        return (
            f"{p['player']} on hand {p['hand']}: {p['action']}{extra} (open: "
            f"{', '.join(p['options'])}; balance seen {p['balance_seen']})"
        )
    if isinstance(e, Round.WagerSettled):
        return (
            f"{p['wager_id']} ({p['player']}): {p['result']}, stake {p['stake']}, payout "
            f"{p['payout']}"
        )
    if isinstance(e, Round.HandStood):
        return f"hand {p['hand']} stands on {p['total']} ({p['reason']})"
    if isinstance(e, Round.DealerStood):
        return f"dealer stands on {p['total']} ({p['reason']})"
    keys = [k for k in p if k not in ("actor", "request_id", "client_time", "rule")]
    return ", ".join(f"{k}={p[k]}" for k in keys[:6])


def replay_steps(
    decoded: Sequence[Decoded], *, movements: Iterable[Decoded] = (), round_id: str = ""
) -> Replay:
    """The table after each event (see the module docstring)."""
    by_tid: dict[str, Any] = {
        str(m.event.transaction_id): m.event for m in movements if m.event is not None
    }
    out = Replay(round_id, [])
    rnd: Any = None
    seen: dict[str, str] = {}
    for d in decoded:
        e = d.event
        if e is None:
            out.stopped = f"position {d.version}: the stored event does not decode ({d.error})"
            break
        try:
            rnd = e.mutate(rnd)
            view = rnd.view()
        except Exception as exc:  # a tampered log: report where the replay had to stop
            out.stopped = f"position {d.version}: {type(e).__qualname__} cannot be applied ({exc})"
            break
        p = payload_json(e)
        player = p.get("player")
        if isinstance(player, str) and isinstance(p.get("balance_seen"), str):
            seen[player] = p["balance_seen"]
        for other, bal in (p.get("others_balance") or {}).items():
            seen[other] = bal
        moved = []
        for tid in _transactions(str(d.record.originator_id), e):
            m = by_tid.get(tid)
            if m is not None:
                moved.append(
                    f"{m.transaction_id}: {type(m).__name__} {m.amount}, balance after "
                    f"{m.balance_after}"
                )
        hole = _hidden(rnd)
        rule = p.get("rule")
        out.steps.append(
            Step(
                position=d.version,
                event=f"Round.{type(e).__name__}",
                kind=event_kind(e),
                rule=rule if isinstance(rule, str) else None,
                summary=summarize(e),
                view=view,
                hole=hole,
                balances=dict(seen),
                movements=moved,
            )
        )
    return out


def _hidden(rnd: Any) -> list[str]:
    """The dealer's cards the table does not see yet (as ``Round.view`` hides them)."""
    if rnd.hole_revealed or rnd.finished or not rnd.rules.peeks:
        return []
    hole = 1 - rnd.rules.upcard_index
    return [c.code for i, c in enumerate(rnd.dealer) if i == hole]


def _transactions(rid: str, e: Any) -> list[str]:
    """The wallet transaction ids the application gives the movements ``e`` causes."""
    if isinstance(e, Round.BetPlaced | Round.WagerAdded | Round.SeatBetMirrored):
        return [f"{rid}/{e.wager_id}/stake"]
    if isinstance(e, Round.WagerSettled):
        return [f"{rid}/{e.wager_id}/{e.result}"]
    if isinstance(e, Round.PaymentReversed):
        return [f"{rid}/{e.wager_id}/reverse"]
    return []


def replay_bundle(bundle: RoundBundle) -> Replay:
    return replay_steps(bundle.round, movements=bundle.money, round_id=str(bundle.round_id))


# ------------------------------------------------------------------------------ text
def _hand_line(h: Json, stakes: dict[str, list[str]]) -> str:
    cards = " ".join(h["cards"]) or "-"
    flags = [
        name
        for name, on in (
            ("BJ", h["blackjack"]),
            ("bust", h["bust"]),
            ("doubled", h["doubled"]),
            ("surrendered", h["surrendered"]),
        )
        if on
    ]
    total = f"{h['total']}{' soft' if h['soft'] else ''}" if h["cards"] else "-"
    state = h["finish_reason"] or ("done" if h["finished"] else "")
    options = ", ".join(h["options"]) or "-"
    return (
        f"    hand {h['hand']:<6} {h['player']:<14} {cards:<22} = {total:<8} "
        f"{' '.join(flags):<12} stakes {', '.join(stakes.get(h['hand'], [])) or '-':<26} "
        f"{state:<10} options: {options}"
    )


def step_lines(step: Step) -> list[str]:
    v = step.view
    rule = f" [{step.rule}]" if step.rule else ""
    said = f": {step.summary}" if step.summary else ""
    out = [f"#{step.position:<3} {step.kind:<11} {step.event}{rule}{said}"]
    dealer = " ".join(v["dealer"]["cards"]) or "-"
    if step.hole:
        dealer += " [" + " ".join(step.hole) + " face down]"
    total = v["dealer"]["total"]
    out.append(
        f"    phase {v['phase']}{' (paused)' if v['paused'] else ''}; dealer {dealer}"
        + (f" = {total}" if total is not None else "")
        + (f"; sequence {' '.join(v['sequence'])}" if v.get("sequence") else "")
    )
    stakes: dict[str, list[str]] = {}
    loose: list[str] = []
    for w in v["wagers"]:
        text = f"{w['kind']} {w['stake']}" + (
            f" -> {w['result']} {w['payout']}" if w["settled"] else ""
        )
        if w["hand"] is not None and w["kind"] in (
            "main",
            "split",
            "double",
            "behind",
            "behind_double",
            "behind_split",
        ):
            stakes.setdefault(w["hand"], []).append(
                text if w["player"] == _owner(v, w["hand"]) else f"{w['player']}: {text}"
            )
        else:
            loose.append(f"{w['player']} {text} ({w['wager_id']})")
    out += [_hand_line(h, stakes) for h in v["hands"]]
    if loose:
        out.append("    other wagers: " + "; ".join(loose))
    if step.balances:
        out.append(
            "    balances seen: " + ", ".join(f"{p} {b}" for p, b in sorted(step.balances.items()))
        )
    out += [f"    wallet: {m}" for m in step.movements]
    return out


def _owner(view: Json, hand: str) -> str | None:
    for h in view["hands"]:
        if h["hand"] == hand:
            return str(h["player"])
    return None


def replay_text(replay: Replay) -> str:
    lines = [f"round {replay.round_id}: {len(replay.steps)} events"]
    for s in replay.steps:
        lines += step_lines(s)
    if replay.stopped:
        lines.append(f"REPLAY STOPPED at {replay.stopped}")
    return "\n".join(lines) + "\n"


__all__ = [
    "Replay",
    "Step",
    "replay_bundle",
    "replay_steps",
    "replay_text",
    "step_lines",
    "summarize",
]
