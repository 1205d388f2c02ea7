"""Wire models: the JSON bodies the service accepts, and the bodies it answers.

**Requests** are strict: unknown fields are refused (a typo must not silently drop part of a
command), no value is coerced (``"7"`` is not an integer, ``"yes"`` not a boolean), ids,
amounts, cards, times and text are the exact types of ``api.wire`` (their patterns are in the
OpenAPI document), and ``api.limits`` has refused repeated keys and oversized bodies before a
model sees them. The domain still checks the *meaning* (limits, whose turn it is) and names the
rule it applies.

**Responses** (:class:`RoundView`, :class:`WalletView`, :class:`ShoeView`...) describe the
domain's plain-JSON views field by field, so the OpenAPI document states every 2xx body; a test
and schemathesis hold the service to them. :class:`Problem` is every refusal's body (RFC 9457).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from api.wire import (
    MAX_WIRE_NUMBER,
    CardCode,
    ClientTime,
    Id,
    LabelId,
    Money,
    PlayerId,
    Reason,
    RoundId,
    ShoeId,
    enum_schema,
    one_of,
)
from domain.rules import CURRENT, PUBLISHED

RequestId = Annotated[
    Id | None,
    Field(
        description="The command's request id, recorded with its input; unique in the round "
        "(a boundless round: per player). Without an Idempotency-Key header it is also the "
        "command's idempotency key.",
    ),
]
OptionalTime = Annotated[ClientTime | None, Field(description="The client's clock (RFC 3339).")]
_KEYS = {*CURRENT, *PUBLISHED}
VariantOrKey = Annotated[
    str, one_of(_KEYS), enum_schema(_KEYS, "A variant (its current rules) or a rules key.")
]
Variant = Annotated[str, one_of(CURRENT), enum_schema(CURRENT, "A variant.")]
Number = Annotated[int, Field(ge=1, le=MAX_WIRE_NUMBER)]
Spot = Annotated[int, Field(ge=1, le=7)]
MAX_ORDER = 16 * 52


class Body(BaseModel):
    """Unknown fields refused, nothing coerced."""

    model_config = ConfigDict(extra="forbid", strict=True)


class Sent(Body):
    """What every command body may say of its sending (recorded in the input event; null when
    not sent): the request id and the client's time."""

    request_id: RequestId = None
    client_time: OptionalTime = None


# --------------------------------------------------------------------------------- wallets
class WalletOpen(Body):
    player_id: PlayerId
    account_type: Literal["real", "test", "fun"] = Field(
        default="real", description="test and play-for-fun accounts may not take seats (DLX-1)."
    )
    currency: Annotated[str, Field(pattern="^[A-Z]{3}$")] = Field(
        default="EUR",
        description="ISO 4217 code in capitals; amounts have two decimals (the minor unit).",
    )


class CashierMovement(Body):
    amount: Money
    transaction_id: Id = Field(
        description="The cashier's transaction id: recorded with the movement; the same id "
        "with the same amount is the same movement (recorded once), with another amount "
        "refused (duplicate-transaction). Without an Idempotency-Key header it is also the "
        "request's idempotency key."
    )


# ----------------------------------------------------------------------------------- shoes
class ShoeOpen(Body):
    table_id: Id
    shoe_number: Number
    kind: Literal["rng", "live", "test"] = Field(
        description="rng: a sealed, committed shuffle; live: cards read by the studio's reader; "
        "test: an explicit stacked order, never on a production table."
    )
    decks: Annotated[int, Field(ge=1, le=16)]
    order: Annotated[list[CardCode], Field(max_length=MAX_ORDER)] | None = Field(
        default=None,
        description="test shoes: the card order (a test shoe only on a table opened as not "
        "production; production comes from the table, never from the request).",
    )
    burn_procedure: bool = Field(default=False, description="SHOE-2: show and burn first.")
    cut_card_at: Annotated[int, Field(ge=1, le=MAX_ORDER)] | None = Field(
        default=None, description="Position of the cut card."
    )


class Burn(Sent):
    card: CardCode | None = Field(default=None, description="The shown card (live shoes).")
    cards: Annotated[list[CardCode], Field(max_length=10)] | None = Field(
        default=None, description="The burned cards (live shoes)."
    )


class CutCard(Sent):
    round_id: RoundId | None = Field(default=None, description="The round in progress (SHOE-1).")


class ShoeRetire(Sent):
    """A shoe's retirement (every field optional)."""


# ---------------------------------------------------------------------------------- rounds
class RoundStart(Body):
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={"not": {"required": ["shoe_id", "test_order"]}},
    )

    table_id: Id
    round_number: Number
    variant: VariantOrKey = Field(description="Variant name (its current rules) or a rules key.")
    shoe_id: ShoeId | None = Field(
        default=None, description="The table's live shoe; RNG variants get a fresh one (D3)."
    )
    shoe_round: Number = Field(default=1, description="Number of this round within the shoe.")
    test_order: Annotated[list[CardCode], Field(max_length=MAX_ORDER)] | None = Field(
        default=None,
        description="Deal from a test shoe with this card order (refused on production tables; "
        "whether the table is production comes from its record, POST /tables). Not with shoe_id.",
    )

    @model_validator(mode="after")
    def _one_source(self) -> RoundStart:
        if self.shoe_id is not None and self.test_order is not None:
            raise ValueError("give either shoe_id or test_order, not both")
        return self


BetKind = Literal["main", "behind", "pair", "lucky7", "bust", "trio", "poker"]


class BetPlace(Body):
    player: PlayerId
    kind: BetKind = Field(
        default="main",
        description="main, behind (deluxe bet behind the seat in `spot`, DLX-5), or a side bet "
        "the variant offers (pair, lucky7, bust, trio, poker).",
    )
    amount: Money
    spot: Spot | None = Field(default=None, description="Seat or box number.")
    follow_double: bool = Field(default=False, description="Bet behind follows a double (DLX-7).")
    follow_split: bool = Field(default=False, description="Bet behind follows a split (DLX-8).")
    request_id: RequestId = None
    client_time: OptionalTime = None


class CardDeal(Body):
    card: CardCode = Field(description="Card code read from the shoe, e.g. AS, 10H, QD.")
    request_id: RequestId = None
    client_time: OptionalTime = None


Action = Literal[
    "hit", "stand", "double", "split", "surrender", "insurance", "no_insurance", "even_money"
]
HandId = Annotated[Id, Field(description="Hand id; default: the player's due hand.")]


class DecisionMake(Body):
    player: PlayerId
    action: Action = Field(
        description="hit, stand, double, split, surrender; in the insurance window: "
        "insurance, no_insurance, even_money."
    )
    hand: HandId | None = None
    amount: Money | None = Field(default=None, description="Insurance: must be half the stake.")
    request_id: RequestId = None
    client_time: OptionalTime = None


class TimeOut(Sent):
    player: PlayerId
    hand: HandId | None = None


class Disconnection(Sent):
    player: PlayerId


class InsuranceWindowClose(Sent):
    """The insurance timer's end (every field optional)."""


class Supervision(Sent):
    reason: Reason = Field(description="Reason code (ERR-1): at most 1,000 characters.")
    supervisor: Id | None = Field(
        default=None,
        description="The supervisor's id (default: the key's label); recorded beside the key.",
    )


class CloseBetting(Sent):
    """The betting countdown's end (every field optional)."""


# ------------------------------------------------------------------- boundless batches
MAX_BATCH = 5000
"""Most items in one batch request (``api/routes/batches.py``); more is a 422."""


class BatchBet(Body):
    """One bet of ``POST /rounds/{id}/bets/batch`` (boundless has no seats, BDL-1: no
    ``spot``, no bet behind)."""

    player: PlayerId
    amount: Money
    kind: BetKind = Field(
        default="main",
        description="main, or a side bet boundless offers: pair, bust, trio, poker "
        "(BDL-AVAIL); another kind is refused for the item alone.",
    )
    request_id: RequestId = None
    client_time: OptionalTime = None


class BetBatch(Body):
    bets: list[BatchBet] = Field(
        min_length=1,
        max_length=MAX_BATCH,
        description=f"The bets, applied in order; 1 to {MAX_BATCH} of them.",
    )


class BatchDecision(Body):
    """One decision of ``POST /rounds/{id}/decisions/batch``."""

    player: PlayerId
    action: Literal[
        "hit",
        "stand",
        "double",
        "split",
        "surrender",
        "insurance",
        "no_insurance",
        "timeout",
        "disconnect",
    ] = Field(
        description="hit, stand, double, split, surrender; in the insurance window: "
        "insurance, no_insurance; also timeout (the player's decision timer expired, AUTO-1) "
        "and disconnect (DISC-1)."
    )
    hand: HandId | None = None
    amount: Money | None = Field(default=None, description="Insurance: must be half the stake.")
    request_id: RequestId = None
    client_time: OptionalTime = None


class DecisionBatch(Body):
    decisions: list[BatchDecision] = Field(
        min_length=1,
        max_length=MAX_BATCH,
        description=f"The decisions, applied in order; 1 to {MAX_BATCH} of them.",
    )


# ---------------------------------------------------------------------------------- tables
class TableOpen(Body):
    table_id: Id = Field(examples=["deluxe-1"])
    variant: Variant = Field(
        default="deluxe", description="The variant its rounds play (deluxe tables have seats)."
    )
    production: bool = Field(
        default=True,
        description="Production tables take real and play-money accounts and refuse test "
        "shoes; test tables take test and play-for-fun accounts only.",
    )


class SeatTake(Body):
    player: PlayerId
    seat: Spot = Field(description="Seat 1-7 (DLX-1).")
    request_id: RequestId = None


class SeatLeave(Body):
    player: PlayerId
    seat: Spot


class Preselection(Body):
    player: PlayerId
    action: Literal["hit", "stand", "double", "split", "surrender"] = Field(
        description="hit, stand, double, split or surrender (PRE-1)."
    )
    hand: HandId | None = None
    request_id: RequestId = None
    client_time: OptionalTime = None


# ---------------------------------------------------------------------------------- keys
Label = Annotated[
    LabelId, Field(description="Who holds the key (an id, or empty: recorded as the actor).")
]
Tables = Annotated[list[Id], Field(min_length=1, max_length=1000)]


NoTables = Annotated[list[Id], Field(max_length=0, description="None for this role.")]


class KeyPlain(Sent):
    """A key bound to nothing."""

    role: Literal["admin", "cashier", "investigator", "compliance", "reporting"]
    tables: NoTables = []
    player: None = None
    label: Label = ""


class KeyForTables(Sent):
    """A table-feed or supervisor key, bound to the tables it acts on."""

    role: Literal["table-feed", "supervisor"]
    tables: Tables
    player: None = None
    label: Label = ""


class KeyForPlayer(Sent):
    """A player key, bound to one player."""

    role: Literal["player"]
    tables: NoTables = []
    player: PlayerId
    label: Label = ""


KeyCreate = Annotated[
    KeyPlain | KeyForTables | KeyForPlayer,
    Field(discriminator="role", description="The key's role and binding (docs/api.md)."),
]


# =============================================================================== answers
class Answer(BaseModel):
    """A response body (more fields may come in later versions)."""

    model_config = ConfigDict(extra="allow")


class Problem(Answer):
    """An RFC 9457 problem document (``application/problem+json``)."""

    type: str = Field(description="urn:roundaudit:problem:<code>, or about:blank")
    title: str
    status: int
    detail: str
    instance: str = Field(description="The request's path.")
    code: str = Field(description="The stable code of the refusal.")
    rule: str | None = Field(default=None, description="The rule ID behind the refusal.")
    field: str | None = Field(default=None, description="The field an invalid-id names.")
    errors: list[dict[str, Any]] | None = Field(default=None, description="Malformed fields.")
    incident: str | None = Field(default=None, description="For a 500: the server log's id.")


class DealerView(Answer):
    cards: list[str]
    total: int | None


class HandView(Answer):
    hand: str
    player: str
    spot: str | None
    cards: list[str]
    total: int
    soft: bool
    blackjack: bool
    bust: bool
    doubled: bool
    surrendered: bool
    finished: bool
    finish_reason: str | None
    options: list[str]


class WagerView(Answer):
    wager_id: str
    player: str
    kind: str
    stake: str
    hand: str | None
    settled: bool
    result: str | None
    payout: str


class RoundView(Answer):
    """A round now (every hand and wager; the hole card hidden until it is turned)."""

    round_id: str
    table_id: str
    round_number: int
    rules_key: str
    variant: str
    phase: str
    paused: bool
    card_needed: dict[str, Any] | None = Field(
        description="What the next card is for (a live round waits for it), or null."
    )
    dealer: DealerView
    hands: list[HandView]
    wagers: list[WagerView]


class RoundEvents(Answer):
    round_id: str
    events: list[dict[str, Any]]


class WalletView(Answer):
    wallet_id: str
    player_id: str
    balance: str
    currency: str
    account_type: str
    movement_count: int = Field(description="How many movements the wallet holds.")
    movements: list[dict[str, Any]] = Field(
        description="The latest movements (at most 50), oldest first; every movement, a page "
        "at a time: `GET /wallets/{player_id}/movements`."
    )


class WalletMovements(Answer):
    player_id: str
    movement_count: int = Field(description="How many movements the wallet holds.")
    offset: int = Field(description="The position of this page's first movement (0: the first).")
    movements: list[dict[str, Any]] = Field(description="The page's movements, in recorded order.")
    next: str | None = Field(
        description="The next page's path, or null after the last movement.",
    )


class TableView(Answer):
    table_id: str
    rules_key: str | None
    variant: str
    production: bool
    seats: dict[str, str]
    current_round: int | None
    idle: dict[str, Any]


class DrawnView(Answer):
    position: int
    card: str | None
    purpose: str


class ShoeView(Answer):
    shoe_id: str
    table_id: str
    shoe_number: int
    kind: str
    decks: int
    test: bool
    commitment: str | None
    algorithm: str | None
    revealed_seed: str | None
    position: int
    remaining: int
    last_round: bool
    retired: bool
    drawn: list[DrawnView]


class BurnView(Answer):
    shown: str
    burned: list[str]
    shoe: ShoeView


class KeyView(Answer):
    key_id: str
    role: str
    tables: list[str]
    player: str | None
    label: str
    created_at: str
    created_by: dict[str, Any]
    revoked: bool
    revoked_at: str | None
    revoked_by: dict[str, Any] | None
    revoke_reason: str | None


class KeyIssued(Answer):
    token: str = Field(description="The key's token: in this answer only.")
    key: KeyView


class KeyList(Answer):
    keys: list[KeyView]


class ItemResult(Answer):
    index: int
    ok: bool
    problem: Problem | None = None


class BatchAnswer(Answer):
    results: list[ItemResult]
    accepted: int
    refused: int
    round: RoundView


__all__ = [
    "MAX_BATCH",
    "BatchAnswer",
    "BatchBet",
    "BatchDecision",
    "BetBatch",
    "BetPlace",
    "Burn",
    "BurnView",
    "CardDeal",
    "CashierMovement",
    "CheckpointView",
    "CloseBetting",
    "ConsistencyView",
    "CutCard",
    "DecisionBatch",
    "DecisionMake",
    "Disconnection",
    "HealthView",
    "KeyCreate",
    "KeyIssued",
    "KeyList",
    "KeyView",
    "Preselection",
    "Problem",
    "ProofView",
    "PublicKeyView",
    "ReplayView",
    "RoundEvents",
    "RoundStart",
    "RoundView",
    "RulesIndex",
    "SeatLeave",
    "SeatTake",
    "ShoeOpen",
    "ShoeView",
    "Supervision",
    "TableOpen",
    "TableView",
    "TimeOut",
    "VerificationView",
    "WalletMovements",
    "WalletOpen",
    "WalletView",
]


# ---------------------------------------------------------------------------- audit, rules
class ReplayView(Answer):
    """``roundaudit replay --json``: the table after each stored event."""

    round_id: str
    steps: list[dict[str, Any]]
    stopped: dict[str, Any] | None


class VerificationView(Answer):
    """``roundaudit verify``'s verdict (200 whether the round passed or not: read ``ok``)."""

    round_id: str
    ok: bool
    checks: list[str]
    discrepancies: list[dict[str, Any]]
    notes: list[str]


class ProofView(Answer):
    type: str
    round_id: str
    checkpoint: dict[str, Any]
    leaves: list[dict[str, Any]]


class CheckpointView(Answer):
    number: int
    origin: str
    size: int
    root: str
    note: str


class ConsistencyView(Answer):
    first: dict[str, Any]
    second: dict[str, Any]


class PublicKeyView(Answer):
    vkey: str
    origin: str
    raw: str
    key_id: str
    pem: str


class RulesIndex(Answer):
    current: dict[str, str]
    rules: dict[str, dict[str, Any]]


class HealthView(Answer):
    status: str
    store: str
    last_notification_id: int | None
