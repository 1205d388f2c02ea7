"""Wire models: the JSON bodies the service accepts.

The models check the *shape* of a request (types, required fields, no unknown fields); the
domain checks its *meaning* (card codes, amounts, limits, whose turn it is) and names the rule it
applies. Responses are the domain's plain-JSON views (``Round.view()``, ``RoundAudit.shoe_view``)
and are not modelled here.

Money (MONEY-1) is an exact decimal: a JSON string (``"10.50"``) or integer (``10``). A JSON
float (``10.5``) is refused with a 422 naming MONEY-1, even when it looks whole (``10.0``),
because a binary float is not an exact amount; :func:`domain.money.parse_money` then checks
the value itself (positive, at most the minor unit's digits).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictInt, StrictStr


def _refuse_float(value: Any) -> Any:
    if isinstance(value, bool | float):
        kind = "a boolean" if isinstance(value, bool) else f"the JSON number {value!r}"
        raise ValueError(
            f'money must be an exact decimal string such as "10.50" or an integer, '
            f"not {kind} (MONEY-1)"
        )
    return value


Money = Annotated[
    StrictStr | StrictInt,
    BeforeValidator(_refuse_float),
    Field(
        description='Exact decimal amount in the table currency: a string ("10.50") or an '
        "integer. JSON floats are refused (MONEY-1).",
        examples=["10.00"],
    ),
]
RequestId = Annotated[
    str | None,
    Field(
        description="Idempotency key of this command; a repeat records nothing. The "
        "`Idempotency-Key` header may be used instead.",
    ),
]
ClientTime = Annotated[
    str | None, Field(description="The client's clock when the player acted (ISO 8601).")
]
Spot = StrictStr | StrictInt


class Body(BaseModel):
    """Unknown fields are refused: a typo must not silently drop part of a command."""

    model_config = ConfigDict(extra="forbid")


# --------------------------------------------------------------------------------- wallets
class WalletOpen(Body):
    player_id: str = Field(description="The player's id (no ':').", examples=["alice"])
    account_type: Literal["real", "test", "fun"] = Field(
        default="real", description="test and play-for-fun accounts may not take seats (DLX-1)."
    )
    currency: str = Field(default="EUR", description="ISO 4217 code in capitals.")


class CashierMovement(Body):
    amount: Money
    transaction_id: str | None = Field(
        default=None,
        description="The cashier's transaction id (or the `Idempotency-Key` header); a repeat "
        "with the same amount records nothing, with another amount is refused.",
    )


# ----------------------------------------------------------------------------------- shoes
class ShoeOpen(Body):
    table_id: str = Field(examples=["T1"])
    shoe_number: int = Field(examples=[1])
    kind: Literal["rng", "live", "test"] = Field(
        description="rng: a sealed, committed shuffle; live: cards read by the studio's reader; "
        "test: an explicit stacked order, never on a production table."
    )
    decks: int = Field(examples=[8])
    order: list[str] | None = Field(
        default=None,
        description="test shoes: the card order (a test shoe only on a table opened as not "
        "production; production comes from the table, never from the request).",
    )
    burn_procedure: bool = Field(default=False, description="SHOE-2: show and burn first.")
    cut_card_at: int | None = Field(default=None, description="Position of the cut card.")


class Burn(Body):
    card: str | None = Field(default=None, description="The shown card (live shoes).")
    cards: list[str] | None = Field(default=None, description="The burned cards (live shoes).")


class CutCard(Body):
    round_id: str | None = Field(default=None, description="The round in progress (SHOE-1).")


# ---------------------------------------------------------------------------------- rounds
class RoundStart(Body):
    table_id: str = Field(examples=["T1"])
    round_number: int = Field(examples=[1])
    variant: str = Field(
        description="Variant name (its current rules) or a published rules key.",
        examples=["lucky7"],
    )
    shoe_id: str | None = Field(
        default=None, description="The table's live shoe; RNG variants get a fresh one (D3)."
    )
    shoe_round: int = Field(default=1, description="Number of this round within the shoe.")
    test_order: list[str] | None = Field(
        default=None,
        description="Deal from a test shoe with this card order (refused on production tables; "
        "whether the table is production comes from its record, POST /tables).",
    )


class BetPlace(Body):
    player: str
    kind: str = Field(
        default="main",
        description="main, behind (deluxe bet behind the seat in `spot`, DLX-5), or a side bet "
        "the variant offers (pair, lucky7, bust, trio, poker).",
    )
    amount: Money
    spot: Spot | None = Field(default=None, description="Seat or box number.")
    follow_double: bool = Field(default=False, description="Bet behind follows a double (DLX-7).")
    follow_split: bool = Field(default=False, description="Bet behind follows a split (DLX-8).")
    request_id: RequestId = None
    client_time: ClientTime = None


class CardDeal(Body):
    card: str = Field(description="Card code read from the shoe, e.g. AS, 10H, QD.")
    request_id: RequestId = None
    client_time: ClientTime = None


class DecisionMake(Body):
    player: str
    action: str = Field(
        description="hit, stand, double, split, surrender; in the insurance window: "
        "insurance, no_insurance, even_money."
    )
    hand: str | None = Field(default=None, description="Hand id; default: the player's due hand.")
    amount: Money | None = Field(default=None, description="Insurance: must be half the stake.")
    request_id: RequestId = None
    client_time: ClientTime = None


class TimeOut(Body):
    player: str
    hand: str | None = None


class Disconnection(Body):
    player: str


class Supervision(Body):
    reason: str = Field(description="Reason code (ERR-1).")
    supervisor: str | None = Field(
        default=None,
        description="The supervisor's id (default: the key's label); recorded beside the key.",
    )


class CloseBetting(Body):
    request_id: RequestId = None


# ------------------------------------------------------------------- boundless batches
MAX_BATCH = 5000
"""Most items in one batch request (``api/routes/batches.py``); more is a 422."""


class BatchBet(Body):
    """One bet of ``POST /rounds/{id}/bets/batch`` (boundless has no seats, BDL-1: no
    ``spot``, no bet behind)."""

    player: str
    amount: Money
    kind: str = Field(
        default="main", description="main, or a side bet: pair, bust, trio, poker (BDL-AVAIL)."
    )
    request_id: RequestId = None
    client_time: ClientTime = None


class BetBatch(Body):
    bets: list[BatchBet] = Field(
        min_length=1,
        max_length=MAX_BATCH,
        description=f"The bets, applied in order; 1 to {MAX_BATCH} of them.",
    )


class BatchDecision(Body):
    """One decision of ``POST /rounds/{id}/decisions/batch``."""

    player: str
    action: str = Field(
        description="hit, stand, double, split, surrender; in the insurance window: "
        "insurance, no_insurance; also timeout (the player's decision timer expired, AUTO-1) "
        "and disconnect (DISC-1)."
    )
    hand: str | None = Field(default=None, description="Hand id; default: the player's due hand.")
    amount: Money | None = Field(default=None, description="Insurance: must be half the stake.")
    request_id: RequestId = None
    client_time: ClientTime = None


class DecisionBatch(Body):
    decisions: list[BatchDecision] = Field(
        min_length=1,
        max_length=MAX_BATCH,
        description=f"The decisions, applied in order; 1 to {MAX_BATCH} of them.",
    )


__all__ = [
    "MAX_BATCH",
    "BatchBet",
    "BatchDecision",
    "BetBatch",
    "BetPlace",
    "Burn",
    "CardDeal",
    "CashierMovement",
    "CloseBetting",
    "CutCard",
    "DecisionBatch",
    "DecisionMake",
    "Disconnection",
    "KeyCreate",
    "Money",
    "RoundStart",
    "ShoeOpen",
    "Supervision",
    "TimeOut",
    "WalletOpen",
]


# ---------------------------------------------------------------------------------- tables
class TableOpen(Body):
    table_id: str = Field(description="The table's id (no ':' or '#').", examples=["deluxe-1"])
    variant: str = Field(
        default="deluxe", description="The variant its rounds play (deluxe tables have seats)."
    )
    production: bool = Field(
        default=True,
        description="Production tables take real and play-money accounts and refuse test "
        "shoes; test tables take test and play-for-fun accounts only.",
    )


class KeyCreate(Body):
    role: Literal[
        "admin",
        "table-feed",
        "supervisor",
        "cashier",
        "investigator",
        "compliance",
        "reporting",
        "player",
    ] = Field(description="The key's role (the permission table in docs/api.md).")
    tables: list[str] = Field(
        default_factory=list,
        description="table-feed and supervisor keys: the table ids they act on.",
        max_length=1000,
    )
    player: str | None = Field(default=None, description="player keys: the player id.")
    label: str = Field(default="", max_length=200, description="Who holds the key, in words.")


class SeatTake(Body):
    player: str
    seat: int = Field(ge=1, le=7, description="Seat 1-7 (DLX-1).")
    request_id: RequestId = None


class SeatLeave(Body):
    player: str
    seat: int = Field(ge=1, le=7)


class Preselection(Body):
    player: str
    action: str = Field(description="hit, stand, double, split or surrender (PRE-1).")
    hand: str | None = Field(default=None, description="Hand id; default: the player's first.")
    request_id: RequestId = None
    client_time: ClientTime = None
