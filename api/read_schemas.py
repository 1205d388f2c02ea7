"""Response models of the read side (searches, histories, disputes, feed, reports, rule book).

They document, in the OpenAPI document, every 2xx body of the read routes (``api/routes/
search.py``, ``disputes.py``, ``reporting.py``, ``rulebook.py``). Money is a decimal string
(MONEY-1); times are ISO 8601 in UTC; cursors are opaque strings to pass back as they are.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Json = dict[str, Any]
RoundState = Literal["betting", "playing", "cancelling", "settled", "cancelled"]


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Freshness(Model):
    """How current the projection read was: its lowest position in the notification log, the
    log's head when the request arrived, and the difference (0: every event was counted)."""

    position: int
    head: int
    lag: int


# ------------------------------------------------------------------------------ searches
class RoundSummary(Model):
    round_id: str
    table_id: str
    round_number: int
    variant: str
    rules_key: str
    production: bool
    boundless: bool
    shoe_id: str | None
    state: RoundState
    paused: bool
    started_at: str
    ended_at: str | None
    players: int = Field(description="How many players had a bet in the round.")


class RoundPage(Model):
    rounds: list[RoundSummary]
    next: str | None = Field(description="Cursor of the next page (null: this is the last).")
    projection: Freshness


class PlayerMoney(Model):
    """The player's wagers in the round (the payouts ledger): stakes, money paid back, net."""

    wagers: int
    open: int
    staked: str
    paid: str
    refunded: str
    reversed: str
    net: str


class PlayerRound(RoundSummary):
    money: PlayerMoney | None = Field(description="null while the ledger has none of its wagers")


class PlayerRoundPage(Model):
    player: str
    rounds: list[PlayerRound]
    next: str | None
    projection: Freshness


class RoundPlayers(Model):
    round_id: str
    prefix: str
    players: list[str]
    total: int = Field(description="Players in the round (whatever the prefix).")
    next: str | None
    projection: Freshness


# ------------------------------------------------------------------------------ disputes
class TimelineEntryModel(Model):
    seq: int
    event: str
    kind: str
    scope: Literal["player", "hand", "round"]
    actor: dict[str, str]
    server_time: str
    client_time: str | None = None
    request_id: str | None = None
    caused_by: int | None = None
    player: str | None = None
    hand: str | None = None
    wager_id: str | None = None
    options: list[str] | None = None
    action: str | None = None
    amount: str | None = None
    balance_seen: str | None = None
    balance_after: str | None = None
    rule: str | None = None
    result: str | None = None
    card: str | None = None
    total: int | None = None
    shoe_position: int | None = None
    detail: str
    cards_led_to: list[str]
    led_to: list[str]
    source: str
    version: int
    redacted: list[str] | None = None


class TimelineModel(Model):
    round_id: str
    table_id: str
    round_number: int
    rules_key: str
    production: bool
    player: str
    entries: list[TimelineEntryModel]


class ReplayStep(Model):
    """One step of a replay: the event and the table after it (``replays.steps``)."""

    model_config = ConfigDict(extra="allow")

    position: int
    event: str
    kind: str
    rule: str | None
    summary: str
    view: Json
    dealer_hole: list[str]
    balances: dict[str, str]
    movements: list[str]
    server_time: str | None
    payload: Json | None
    owner: str | None = None
    changed: list[str] | None = None


class ReplayDocument(Model):
    round_id: str
    steps: list[ReplayStep]
    stopped: str | None


# ------------------------------------------------------------------------------ reporting
class FeedEntryModel(Model):
    seq: int
    notification_id: int
    round_id: str
    table_id: str
    round_number: int
    variant: str
    production: bool
    wager_id: str
    player: str
    account_type: str
    kind: str
    hand: str | None
    stake: str
    result: str
    ratio: str | None
    payout: str
    net: str
    rule: str
    rounding: str
    pattern: str | None
    settled_at: str
    day: str


class FeedPage(Model):
    entries: list[FeedEntryModel]
    next: int = Field(description="The cursor after this page: pass it as `after` next time.")
    projection: Freshness


class DailyRow(Model):
    day: str
    variant: str
    table_id: str
    kind: str
    production: bool
    account_type: str
    wagers: int
    handle: str
    payouts: str
    ggr: str
    rtp: str | None
    refunds: int
    refunded: str


class DailyReport(Model):
    date_from: str = Field(alias="from")
    date_to: str = Field(alias="to")
    include_test: bool
    variant: str | None
    rows: list[DailyRow]
    projection: Freshness

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ProjectionState(Model):
    name: str
    version: int
    stored_version: int | None
    position: int | None
    head: int
    lag: int
    outdated: bool


class ProjectionsModel(Model):
    head: int
    projections: list[ProjectionState]


# ------------------------------------------------------------------------------ session
class SessionModel(Model):
    key_id: str
    role: str
    tables: list[str]
    player: str | None
    label: str
    may: dict[str, str] = Field(description="Each action the key's role may do, and how far.")


# ------------------------------------------------------------------------------ rule book
class RuleEntry(Model):
    id: str
    section: str
    text: str


class RuleBookModel(Model):
    source: str
    sha256: str
    rules: dict[str, RuleEntry]


__all__ = [
    "DailyReport",
    "DailyRow",
    "FeedEntryModel",
    "FeedPage",
    "Freshness",
    "PlayerMoney",
    "PlayerRound",
    "PlayerRoundPage",
    "ProjectionState",
    "ProjectionsModel",
    "ReplayDocument",
    "ReplayStep",
    "RoundPage",
    "RoundPlayers",
    "RoundState",
    "RoundSummary",
    "RuleBookModel",
    "RuleEntry",
    "SessionModel",
    "TimelineEntryModel",
    "TimelineModel",
]
