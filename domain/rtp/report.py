"""The RTP report of a rules key: its figures, cached as data, and the findings they raise.

* :func:`compute` runs the analyses (``domain.rtp.main_game``, ``domain.rtp.side_bets``) on a
  published rules object and returns a plain-JSON report: the main game (RTP, variance,
  strategy, strategy chart, bets behind, what-if figures that may explain a published RTP),
  every side bet and insurance, and the sheet's published RTP.
* A published key never changes (DESIGN.md), so neither does its RTP: the reports are stored
  as data in this package (``domain/rtp/reports/<variant>-<n>.json``) and read by :func:`load`.
  ``roundaudit rtp --write-cache`` writes them; a test holds every published key to having
  one and recomputation to giving the same figures.
* :func:`findings` judges a report against the rule book: ``RTP-PUBLISHED-MISMATCH`` when the
  sheet's published RTP is more than 0.01 percentage points from the computed one (with the
  computed figure and what would explain it), ``RTP-BELOW-FLOOR`` for every bet whose RTP is
  below the jurisdiction's floor (a setting, default 85%).
* :func:`theory` gives what the observed-RTP monitor needs per bet type: RTP and variance per
  unit of initial stake.

Figures are decimal strings: ``rtp`` is the fraction of the stake returned (``0.995168...``),
never a float in JSON; side bets also carry the exact rational (``rtp_exact``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from decimal import Decimal
from importlib import resources
from typing import Any

from domain.errors import DomainError
from domain.rtp.main_game import BEHIND_FOLLOW, GameRules, MainGameResult, analyse
from domain.rtp.side_bets import analyse_side_bets, insurance_result
from domain.rules import PUBLISHED, get_rules
from domain.rules.base import Rules

FORMAT = 1
DEFAULT_FLOOR = Decimal("0.85")
#: A published RTP further than this from the computed one is a finding (0.01 pp).
PUBLISHED_TOLERANCE = Decimal("0.0001")
CODE_PUBLISHED = "RTP-PUBLISHED-MISMATCH"
CODE_FLOOR = "RTP-BELOW-FLOOR"
#: The main-game figures of a variant with a published RTP under one changed rule each: what
#: a sheet's figure may have been computed with.
WHAT_IF: tuple[str, ...] = ("hits_soft_17", "no_surrender", "6_decks", "4_decks", "CDZ-")

Json = dict[str, Any]


class RtpNotComputed(DomainError):
    """A published rules key has no stored RTP report (a deployment without its data)."""

    code = "rtp-not-computed"
    status = 500


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    message: str
    bet: str | None = None

    def as_json(self) -> dict[str, str]:
        out = {"code": self.code, "message": self.message}
        if self.bet is not None:
            out["bet"] = self.bet
        return out


def parse_floor(text: str) -> Decimal:
    """The RTP floor setting: a fraction above 0 and at most 1 (``0.85`` is 85%).

    >>> parse_floor("0.9")
    Decimal('0.9')
    >>> parse_floor("85")
    Traceback (most recent call last):
    ...
    ValueError: RTP floor '85' must be a fraction above 0 and at most 1 (0.85 for 85%)
    """
    try:
        value = Decimal(text.strip())
    except ArithmeticError:
        raise ValueError(f"RTP floor {text!r} is not a number (0.85 for 85%)") from None
    if not value.is_finite() or not 0 < value <= 1:
        raise ValueError(
            f"RTP floor {text!r} must be a fraction above 0 and at most 1 (0.85 for 85%)"
        )
    return value


def _f(x: float, places: int = 10) -> str:
    return f"{x:.{places}f}"


def _main_json(result: MainGameResult, rules: Rules) -> Json:
    main: Json = {
        "rtp": _f(result.rtp),
        "rtp_percent": _f(result.rtp * 100, 6),
        "house_edge_percent": _f(-result.ev * 100, 6),
        "variance": _f(result.variance, 6),
        "precision": "binary64 probabilities; error below 1e-10 of the stake",
        "strategy": strategy_statement(result),
        "rules": result.rules.describe(),
        "chart": result.chart(),
        "frequency": {k: _f(v) for k, v in sorted(result.frequencies().items())},
        "cpu_seconds": round(result.cpu_seconds, 2),
    }
    if rules.bet_behind:
        main["behind"] = {
            k: {"rtp": _f(1 + m), "variance": _f(s - m * m, 6)}
            for k, (m, s) in result.behind.items()
        }
    return main


def strategy_statement(result: MainGameResult) -> Json:
    return {
        "name": result.split_play,
        "composition_dependent": (
            "every decision uses the exact cards of the hand being played, the dealer's "
            "upcard and, on a split hand, the pair card given to the other hand"
        ),
        "not_used": (
            "other spots' cards, the other split hand's draws, earlier rounds of the shoe"
        ),
        "splits": (
            "once (SPLIT-2); each split hand played optimally for its own cards; a split is "
            "worth exactly twice its first hand"
            if result.split_play == "CDP1"
            else "split hands played as the same cards unsplit (CDZ-)"
        ),
        "insurance": "taken only when its exact expectation is positive (never here)",
        "even_money": "taken only when it beats the blackjack's expectation (never here)",
        "shoe": "one hand alone off the top of a full shoe (no cut-card effect)",
        "cost": (
            "the exact optimum also lets the second split hand use the first hand's cards; "
            "published single-deck figures put that refinement below 0.001 percentage "
            "points, less with more decks (docs/rtp.md); CDZ- (no post-split composition) "
            "gives the figure in what_if where computed"
        ),
    }


def compute(rules: Rules, *, what_if: bool = True) -> Json:
    """The full RTP report of one rules object (see the module docstring)."""
    result = analyse(rules)
    actions = {(min(h.cards), max(h.cards), h.up): h.action for h in result.hands}

    def decide(a: int, b: int, up: int) -> str:
        return actions[(min(a, b), max(a, b), up)]

    side = analyse_side_bets(rules, decide if "lucky7" in rules.side_bets else None)
    side_json: Json = {name: r.as_json() for name, r in side.items()}
    if result.insurance_probability is not None:
        ins = insurance_result(result.insurance_probability, result.rules.insurance_pays)
        side_json["insurance"] = ins.as_json()
    report: Json = {
        "format": FORMAT,
        "variant": rules.variant,
        "rules_key": rules.key,
        "main": _main_json(result, rules),
        "side_bets": side_json,
        "published": published_json(rules),
    }
    if what_if and rules.published_rtp is not None:
        report["main"]["what_if"] = what_if_figures(rules, result)
    return report


def published_json(rules: Rules) -> Json | None:
    if rules.published_rtp is None:
        return None
    return {
        "main_rtp_percent": rules.published_rtp,
        "wording": f"max {rules.published_rtp}%",
        "source": f"../shared/rules-sources/{rules.variant}-blackjack.es.txt (Suplementario)",
    }


def what_if_figures(rules: Rules, result: MainGameResult) -> Json:
    game = result.rules
    out: Json = {}
    for name in WHAT_IF:
        if name == "CDZ-":
            other = analyse(game, split_play="CDZ-")
        elif name == "hits_soft_17":
            other = analyse(replace(game, hits_soft_17=True))
        elif name == "no_surrender":
            if game.surrender == "none":
                continue
            other = analyse(replace(game, surrender="none"))
        else:
            decks = int(name.split("_")[0])
            if decks == game.decks:
                continue
            other = analyse(replace(game, decks=decks))
        out[name] = _f(other.rtp)
    return out


# ------------------------------------------------------------------------- the cache


def cache_name(rules_key: str) -> str:
    """``deluxe/1`` -> ``deluxe-1.json``.

    >>> cache_name("lucky7/1")
    'lucky7-1.json'
    """
    return rules_key.replace("/", "-") + ".json"


def load(key_or_variant: str) -> Json:
    """The stored report of a published key (or of a variant's current key)."""
    rules = get_rules(key_or_variant)
    path = resources.files("domain.rtp") / "reports" / cache_name(rules.key)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RtpNotComputed(
            f"no RTP report is stored for rules {rules.key}: run "
            f"`roundaudit rtp {rules.variant} --write-cache`"
        ) from None
    report: Json = json.loads(text)
    if report.get("rules_key") != rules.key or report.get("format") != FORMAT:
        raise RtpNotComputed(
            f"the stored RTP report {cache_name(rules.key)} is not for {rules.key}"
        )
    return report


def dumps(report: Json) -> str:
    return json.dumps(report, indent=1) + "\n"


# ---------------------------------------------------------------------- the findings


def bet_rtps(report: Json) -> dict[str, Decimal]:
    """Every bet's RTP in a report: ``main``, bets behind, side bets, insurance."""
    out = {"main": Decimal(report["main"]["rtp"])}
    for follow, fig in report["main"].get("behind", {}).items():
        out[f"behind_{follow}"] = Decimal(fig["rtp"])
    for name, fig in report["side_bets"].items():
        out[name] = Decimal(fig["rtp"])
    return out


def findings(report: Json, *, floor: Decimal = DEFAULT_FLOOR) -> list[Finding]:
    """The findings a report raises against the rule book (see the module docstring)."""
    out: list[Finding] = []
    published = report.get("published")
    main = Decimal(report["main"]["rtp"])
    if published is not None:
        stated = Decimal(published["main_rtp_percent"]) / 100
        diff = stated - main
        if abs(diff) > PUBLISHED_TOLERANCE:
            out.append(
                Finding(
                    CODE_PUBLISHED,
                    _mismatch_message(report, stated, main, diff),
                    "main",
                )
            )
    for bet, rtp in bet_rtps(report).items():
        if rtp < floor:
            extra = ""
            if bet == "lucky7":
                extra = (
                    "; the sheet gives no paytable: D14's default (the unsuited rows of Super "
                    "Sevens, without its suited rows, under L7-3 where no third card is "
                    "guaranteed) is the paytable that falls short"
                )
            out.append(
                Finding(
                    CODE_FLOOR,
                    f"{report['rules_key']} {bet}: RTP {_pct(rtp)} is below the floor "
                    f"{_pct(floor)}{extra}",
                    bet,
                )
            )
    return out


def _mismatch_message(report: Json, stated: Decimal, main: Decimal, diff: Decimal) -> str:
    key = report["rules_key"]
    parts = [
        f"{key}: the sheet publishes a main-game RTP of {_pct(stated)} "
        f"({report['published']['wording']}); its rules give {_pct(main)} with the "
        f"composition-dependent optimal strategy (difference {_pp(diff)})."
    ]
    if diff > 0:
        parts.append(
            "No strategy reaches the published figure under these rules, so a maximum above "
            "the optimum must come from other rules."
        )
    else:
        parts.append(
            "A figure below the optimum fits a weaker strategy (total-dependent basic "
            "strategy, cut-card effect) or other rules."
        )
    near = [
        f"{name} gives {_pct(Decimal(v))}"
        for name, v in report["main"].get("what_if", {}).items()
        if abs(Decimal(v) - stated) <= PUBLISHED_TOLERANCE * 5
    ]
    if near:
        parts.append("Within 0.05 pp of the published figure: " + "; ".join(near) + ".")
    twins = same_main_rules(key)
    for twin in twins:
        other = PUBLISHED[twin]
        if (
            other.published_rtp is not None
            and other.published_rtp != report["published"]["main_rtp_percent"]
        ):
            parts.append(
                f"{twin} states the same main-game rules and publishes {other.published_rtp}%:"
                " both sheets cannot be right."
            )
    return " ".join(parts)


def same_main_rules(rules_key: str) -> list[str]:
    """The other published keys whose main game is the same game (same analysis inputs)."""
    mine = GameRules.of(PUBLISHED[rules_key])
    return sorted(k for k, r in PUBLISHED.items() if k != rules_key and GameRules.of(r) == mine)


def _pct(x: Decimal) -> str:
    return f"{(x * 100).quantize(Decimal('0.0001'))}%"


def _pp(x: Decimal) -> str:
    return f"{(x * 100).quantize(Decimal('0.0001')):+} pp"


# ---------------------------------------------------------------- for the monitor


#: Fewest effective rounds for the normal interval of a main bet (its return is bounded by
#: four stakes and barely skewed); side bets need Cochran's ``25 * skewness**2`` at least.
MIN_ROUNDS_MAIN = 100


@dataclass(frozen=True, slots=True)
class BetTheory:
    """What one unit of initial stake of a bet type returns: mean and variance, and the
    effective number of rounds the normal interval needs (Cochran's rule, n > 25 g1^2)."""

    rtp: Decimal
    variance: Decimal
    min_rounds: int = MIN_ROUNDS_MAIN


def theory(report: Json) -> dict[str, BetTheory]:
    """Bet type -> RTP and variance per unit of initial stake (``domain.rtp.interval``)."""
    main = report["main"]
    out = {"main": BetTheory(Decimal(main["rtp"]), Decimal(main["variance"]))}
    for follow in BEHIND_FOLLOW:
        fig = main.get("behind", {}).get(follow)
        if fig is not None:
            out[f"behind_{follow}"] = BetTheory(Decimal(fig["rtp"]), Decimal(fig["variance"]))
    for name, fig in report["side_bets"].items():
        skew = Decimal(fig["skewness"])
        need = max(
            MIN_ROUNDS_MAIN, int((25 * skew * skew).to_integral_value(rounding="ROUND_CEILING"))
        )
        out[name] = BetTheory(Decimal(fig["rtp"]), Decimal(fig["variance"]), need)
    return out


def summary(report: Json, *, floor: Decimal = DEFAULT_FLOOR) -> Json:
    """The report as ``roundaudit rtp --json`` and ``GET /rules/{key}/rtp`` give it."""
    main = report["main"]
    side = {
        name: {
            "rtp": fig["rtp"],
            "rtp_exact": fig["rtp_exact"],
            "variance": fig["variance"],
            "skewness": fig["skewness"],
            "hit_frequency": fig["hit_frequency"],
            "paytable": fig["paytable"],
            "rule": fig["rule"],
        }
        for name, fig in report["side_bets"].items()
    }
    out: Json = {
        "variant": report["variant"],
        "rules_key": report["rules_key"],
        "main": {
            "rtp": main["rtp"],
            "rtp_percent": main["rtp_percent"],
            "house_edge_percent": main["house_edge_percent"],
            "variance": main["variance"],
            "strategy": main["strategy"],
            "rules": main["rules"],
            "chart": main["chart"],
            "frequency": main["frequency"],
        },
        "side_bets": side,
        "published": report["published"],
        "findings": [f.as_json() for f in findings(report, floor=floor)],
        "floor": str(floor),
    }
    for extra in ("behind", "what_if"):
        if extra in main:
            out["main"][extra] = main[extra]
    return out


__all__ = [
    "CODE_FLOOR",
    "CODE_PUBLISHED",
    "DEFAULT_FLOOR",
    "PUBLISHED_TOLERANCE",
    "BetTheory",
    "Finding",
    "RtpNotComputed",
    "cache_name",
    "compute",
    "dumps",
    "findings",
    "load",
    "parse_floor",
    "same_main_rules",
    "summary",
    "theory",
]
