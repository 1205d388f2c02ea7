"""Hand scores: every hand of every round, card by card, with its totals and who played it.

Tables (rebuild with ``roundaudit projections rebuild hand_scores``):

``hand_scores_hands`` (one row per round and hand, key ``round_id, hand``)
    The round's table, number and variant; the hand id (``1``, ``1.1`` after a split, a
    player id in boundless, ``dealer`` for the dealer's hand); its owner (``player``, NULL for
    the dealer) and spot; ``split_from`` for a split hand; the cards in order
    (space-separated codes); the totals now (``total``, ``hard_total`` with every ace 1,
    ``soft_total`` when an ace counts 11, else NULL); the flags ``blackjack`` (SCORE-3: an
    unsplit two-card ace and ten), ``bust``, ``twenty_one``, ``doubled``, ``surrendered``,
    ``split``; ``status`` (``open``, ``stood``, ``split``) with the ``finish_reason`` and
    ``finish_rule`` of its HandStood/DealerStood; and who played it: ``decisions`` (the
    owner's play decisions, including a PRE-1 choice played when the turn came),
    ``auto_actions`` (AUTO-1 steps), ``played_by`` (``player``, ``system``, ``player+system``,
    ``dealer``, or empty when nobody had to decide).

``hand_scores_cards`` (one row per card of a hand, key ``round_id, hand, n``)
    The card, the totals and flags *after* it, the rule that routed it (``PHASE-2`` initial
    deal, ``PHASE-4`` a hit, ``DBL-1``, ``SPLIT-1``/``SPLIT-3``/``D7``, ``AUTO-1``,
    ``FUNDS-1``/``FUNDS-2``, ``BDL-1``/``BDL-2``/``D9``, ``DEALER-1``), ``decided_by`` (``deal``
    for the initial cards, ``player``/``system`` for the decision that asked for it, ``dealer``
    for the dealer's hand), and for the dealer whether it was dealt face up.

Boundless (a ``SharedHand`` and one ``Participation`` per player, or a ``Round`` in older
stores): the shared initial cards are on every seated player's hand (a participation's
``HandOpened`` carries them), cards revealed into the ``sequence`` reach a hand by its own
``CardToHand``, and the pseudo-hands ``shared`` and ``sequence`` are not rows.

A split moves the pair's cards into ``X.1`` and ``X.2`` (one card each, rule of the split)
and marks ``X`` as ``split``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from domain.cards import Card
from domain.scoring import is_blackjack, score
from projections.base import (
    Projection,
    RoundFacts,
    RoundIndex,
    Table,
    Tracked,
    round_events,
    rows_by_keys,
    upsert,
)
from projections.recorded import Recorded
from projections.store import Tx

NAME = "hand_scores"
HANDS = "hand_scores_hands"
CARDS = "hand_scores_cards"
DEALER = "dealer"
PSEUDO_HANDS = frozenset({"shared", "sequence"})
PLAY_ACTIONS = frozenset({"hit", "stand", "double", "split", "surrender"})
DEAL_RULES = frozenset({"PHASE-2", "BDL-1"})

_HAND_COLUMNS = (
    "round_id",
    "hand",
    "table_id",
    "round_number",
    "variant",
    "player",
    "spot",
    "split_from",
    "cards",
    "card_count",
    "total",
    "hard_total",
    "soft_total",
    "blackjack",
    "bust",
    "twenty_one",
    "doubled",
    "surrendered",
    "split",
    "status",
    "finish_reason",
    "finish_rule",
    "decisions",
    "auto_actions",
    "played_by",
    "last_decider",
    "updated_at",
)
_CARD_COLUMNS = (
    "round_id",
    "hand",
    "n",
    "card",
    "total",
    "hard_total",
    "soft_total",
    "blackjack",
    "bust",
    "twenty_one",
    "rule",
    "decided_by",
    "face_up",
    "notification_id",
    "dealt_at",
)


@dataclass
class _Hand:
    round_id: str
    hand: str
    table_id: str
    round_number: int
    variant: str
    player: str | None
    spot: str
    split_from: str | None = None
    cards: list[str] = field(default_factory=list)
    doubled: bool = False
    surrendered: bool = False
    split: bool = False
    status: str = "open"
    finish_reason: str | None = None
    finish_rule: str | None = None
    decisions: int = 0
    auto_actions: int = 0
    last_decider: str = "player"
    updated_at: str = ""

    @property
    def is_split_hand(self) -> bool:
        return self.split_from is not None

    def flags(self) -> tuple[int, int, int | None, bool, bool, bool]:
        return _flags(self.cards, split=self.is_split_hand)

    def played_by(self) -> str:
        if self.player is None:
            return DEALER
        who = []
        if self.decisions:
            who.append("player")
        if self.auto_actions:
            who.append("system")
        return "+".join(who)

    def row(self) -> tuple[Any, ...]:
        total, hard, soft_total, bj, bust, twenty_one = self.flags()
        return (
            self.round_id,
            self.hand,
            self.table_id,
            self.round_number,
            self.variant,
            self.player,
            self.spot,
            self.split_from,
            " ".join(self.cards),
            len(self.cards),
            total,
            hard,
            soft_total,
            int(bj),
            int(bust),
            int(twenty_one),
            int(self.doubled),
            int(self.surrendered),
            int(self.split),
            self.status,
            self.finish_reason,
            self.finish_rule,
            self.decisions,
            self.auto_actions,
            self.played_by(),
            self.last_decider,
            self.updated_at,
        )


def _flags(codes: Sequence[str], *, split: bool) -> tuple[int, int, int | None, bool, bool, bool]:
    """(total, hard total, soft total or None, blackjack, bust, 21) of some card codes.

    >>> _flags(["AS", "6H"], split=False)
    (17, 7, 17, False, False, False)
    >>> _flags(["AS", "KD"], split=False)
    (21, 11, 21, True, False, True)
    >>> _flags(["AS", "KD"], split=True)
    (21, 11, 21, False, False, True)
    >>> _flags(["10S", "6H", "9C"], split=False)
    (25, 25, None, False, True, False)
    """
    return _scored(tuple(codes), split)


@lru_cache(maxsize=8192)
def _scored(codes: tuple[str, ...], split: bool) -> tuple[int, int, int | None, bool, bool, bool]:
    """:func:`_flags`, remembered: a rebuild scores the same few thousand hands again and
    again (a hand is scored after each of its cards)."""
    cards = [Card.parse(c) for c in codes]
    s = score(cards)
    bj = is_blackjack(cards, split=split)
    return s.total, s.hard_total, s.total if s.soft else None, bj, s.bust, s.total == 21


_STORED_HAND_COLUMNS = (
    "table_id", "round_number", "variant", "player", "spot", "split_from", "cards", "doubled",
    "surrendered", "split", "status", "finish_reason", "finish_rule", "decisions",
    "auto_actions", "last_decider", "updated_at",
)  # fmt: skip


def _stored_hand(rid: str, hand: str, row: Sequence[Any]) -> _Hand:
    """A hand as stored (``row``: :data:`_STORED_HAND_COLUMNS`)."""
    return _Hand(
        round_id=rid,
        hand=hand,
        table_id=str(row[0]),
        round_number=int(row[1]),
        variant=str(row[2]),
        player=None if row[3] is None else str(row[3]),
        spot=str(row[4]),
        split_from=None if row[5] is None else str(row[5]),
        cards=str(row[6]).split(),
        doubled=bool(row[7]),
        surrendered=bool(row[8]),
        split=bool(row[9]),
        status=str(row[10]),
        finish_reason=None if row[11] is None else str(row[11]),
        finish_rule=None if row[12] is None else str(row[12]),
        decisions=int(row[13]),
        auto_actions=int(row[14]),
        last_decider=str(row[15]),
        updated_at=str(row[16]),
    )


class HandScores(Projection):
    """See the module docstring."""

    name = NAME
    version = 1
    handles = round_events(
        "Started",
        "Joined",
        "HandOpened",
        "CardToHand",
        "CardToDealer",
        "HandSplit",
        "HandDoubled",
        "HandSurrendered",
        "HandStood",
        "DealerStood",
        "DecisionMade",
        "AutoActed",
    )

    def __init__(self) -> None:
        self.rounds = RoundIndex(NAME)
        self._hands: dict[tuple[str, str], _Hand] = {}
        self._cards: list[tuple[Any, ...]] = []
        self._absent: set[tuple[str, str]] = set()

    def tables(self) -> Sequence[Table]:
        return (
            Table(self.rounds.table, self.rounds.ddl(), "originator_id"),
            Table(
                HANDS,
                f"CREATE TABLE IF NOT EXISTS {HANDS} ("
                " round_id TEXT NOT NULL, hand TEXT NOT NULL, table_id TEXT NOT NULL,"
                " round_number BIGINT NOT NULL, variant TEXT NOT NULL, player TEXT,"
                " spot TEXT NOT NULL, split_from TEXT, cards TEXT NOT NULL,"
                " card_count INTEGER NOT NULL, total INTEGER NOT NULL,"
                " hard_total INTEGER NOT NULL, soft_total INTEGER,"
                " blackjack INTEGER NOT NULL, bust INTEGER NOT NULL, twenty_one INTEGER NOT NULL,"
                " doubled INTEGER NOT NULL, surrendered INTEGER NOT NULL, split INTEGER NOT NULL,"
                " status TEXT NOT NULL, finish_reason TEXT, finish_rule TEXT,"
                " decisions INTEGER NOT NULL, auto_actions INTEGER NOT NULL,"
                " played_by TEXT NOT NULL, last_decider TEXT NOT NULL, updated_at TEXT NOT NULL,"
                " PRIMARY KEY (round_id, hand))",
                "round_id, hand",
                (f"CREATE INDEX IF NOT EXISTS {HANDS}_player ON {HANDS} (player, round_id)",),
            ),
            Table(
                CARDS,
                f"CREATE TABLE IF NOT EXISTS {CARDS} ("
                " round_id TEXT NOT NULL, hand TEXT NOT NULL, n INTEGER NOT NULL,"
                " card TEXT NOT NULL, total INTEGER NOT NULL, hard_total INTEGER NOT NULL,"
                " soft_total INTEGER, blackjack INTEGER NOT NULL, bust INTEGER NOT NULL,"
                " twenty_one INTEGER NOT NULL, rule TEXT NOT NULL, decided_by TEXT NOT NULL,"
                " face_up INTEGER, notification_id BIGINT NOT NULL, dealt_at TEXT NOT NULL,"
                " PRIMARY KEY (round_id, hand, n))",
                "round_id, hand, n",
            ),
        )

    # ---------------------------------------------------------------- batch
    def apply(self, tx: Tx, events: Sequence[Tracked]) -> None:
        self.rounds.begin(tx, events)
        self._hands = {}
        self._cards = []
        self._absent = set()
        try:
            self._prefetch(tx, events)
            for nid, e in events:
                self._one(tx, nid, e)
            self.rounds.flush(tx)
            self._flush(tx)
        finally:
            self._hands = {}
            self._cards = []
            self._absent = set()

    def _prefetch(self, tx: Tx, events: Sequence[Tracked]) -> None:
        """Read the stored hands the batch's events touch (the dealer's of each round, and
        each hand an event names) in a few queries (issue 15: no query per event); what is
        not stored is remembered as absent, so a new hand costs no query either, and nothing
        is asked of a round started in this batch (none of its rows can be stored yet)."""
        keys: dict[tuple[str, str], None] = {}
        rounds = self.rounds
        for _nid, e in events:
            if e.name in ("Started", "Joined"):
                continue
            rid = rounds.round_id_in_batch(e.originator_id)
            if rid is None:
                continue
            if rounds.started_in_batch(rid):
                continue  # nothing of a round started in this batch is stored: no query
            keys[(rid, DEALER)] = None
            hand = getattr(e, "hand", None)
            if isinstance(hand, str) and hand not in PSEUDO_HANDS:
                keys[(rid, hand)] = None
        self._absent.update(keys)
        columns = ("round_id", "hand", *_STORED_HAND_COLUMNS)
        for row in rows_by_keys(tx, HANDS, ("round_id", "hand"), columns, keys):
            key = (str(row[0]), str(row[1]))
            self._hands[key] = _stored_hand(key[0], key[1], row[2:])
            self._absent.discard(key)

    def _one(self, tx: Tx, nid: int, e: Recorded) -> None:
        name = e.name
        at = e.at
        if name in ("Started", "Joined"):
            self.rounds.record(tx, e)
            return
        facts = self.rounds.of(tx, e)
        rid = facts.round_id
        if name == "HandOpened":
            h = _Hand(
                rid,
                e.hand,
                facts.table_id,
                facts.round_number,
                facts.variant,
                e.player,
                getattr(e, "spot", e.player),  # boundless: the player is the spot
                updated_at=at,
            )
            self._hands[(rid, e.hand)] = h
            for card in getattr(e, "cards", ()):  # boundless: opened with the shared cards
                self._add_card(h, card, e.rule, "deal", None, nid, at)
            return
        if name == "CardToHand":
            if e.hand in PSEUDO_HANDS:
                return
            h = self._hand(tx, rid, e.hand)
            decided_by = "deal" if e.rule in DEAL_RULES else h.last_decider
            self._add_card(h, e.card, e.rule, decided_by, None, nid, at)
            return
        if name == "CardToDealer":
            h = self._dealer(tx, facts, at)
            self._add_card(h, e.card, e.rule, DEALER, bool(e.face_up), nid, at)
            return
        if name == "HandSplit":
            self._split(tx, rid, e, nid, at)
            return
        if name == "DealerStood":
            h = self._dealer(tx, facts, at)
            h.status, h.finish_reason, h.finish_rule = "stood", e.reason, e.rule
            h.updated_at = at
            return
        if name == "DecisionMade":
            if e.action not in PLAY_ACTIONS:
                return  # insurance window: no card, maybe not even the owner (DLX-6)
            h = self._hand(tx, rid, e.hand)
            h.decisions += 1  # the player's choice, made at the turn or ahead of it (PRE-1)
            h.last_decider = "player"
            h.updated_at = at
            return
        h = self._hand(tx, rid, e.hand)
        h.updated_at = at
        if name == "AutoActed":
            h.auto_actions += 1
            h.last_decider = "system"
        elif name == "HandDoubled":
            h.doubled = True
        elif name == "HandSurrendered":
            h.surrendered = True
        elif name == "HandStood":
            h.status, h.finish_reason, h.finish_rule = "stood", e.reason, e.rule

    def _add_card(
        self,
        h: _Hand,
        card: str,
        rule: str,
        decided_by: str,
        face_up: bool | None,
        nid: int,
        at: str,
    ) -> None:
        h.cards.append(card)
        h.updated_at = at
        total, hard, soft_total, bj, bust, twenty_one = h.flags()
        self._cards.append(
            (
                h.round_id,
                h.hand,
                len(h.cards),
                card,
                total,
                hard,
                soft_total,
                int(bj),
                int(bust),
                int(twenty_one),
                rule,
                decided_by,
                None if face_up is None else int(face_up),
                nid,
                at,
            )
        )

    def _split(self, tx: Tx, rid: str, e: Recorded, nid: int, at: str) -> None:
        parent = self._hand(tx, rid, e.hand)
        parent.split = True
        parent.status = "split"
        parent.finish_reason = "split"
        parent.finish_rule = e.rule
        parent.updated_at = at
        for child_id, card in zip(e.into, parent.cards, strict=False):
            child = _Hand(
                rid,
                child_id,
                parent.table_id,
                parent.round_number,
                parent.variant,
                parent.player,
                parent.spot,
                split_from=parent.hand,
                decisions=0,
                last_decider=parent.last_decider,
                updated_at=at,
            )
            self._hands[(rid, child_id)] = child
            self._add_card(child, card, e.rule, parent.last_decider, None, nid, at)

    # ----------------------------------------------------------------- state
    def _dealer(self, tx: Tx, facts: RoundFacts, at: str) -> _Hand:
        rid = facts.round_id
        key = (rid, DEALER)
        if key not in self._hands and not self._load(tx, rid, DEALER):
            self._hands[key] = _Hand(
                rid,
                DEALER,
                facts.table_id,
                facts.round_number,
                facts.variant,
                None,
                DEALER,
                last_decider=DEALER,
                updated_at=at,
            )
        return self._hands[key]

    def _hand(self, tx: Tx, rid: str, hand: str) -> _Hand:
        key = (rid, hand)
        if key not in self._hands and not self._load(tx, rid, hand):
            raise LookupError(f"hand {hand} of round {rid} was never opened")
        return self._hands[key]

    def _load(self, tx: Tx, rid: str, hand: str) -> bool:
        if (rid, hand) in self._absent or self.rounds.started_in_batch(rid):
            return False  # asked for by the batch's prefetch, or of a new round: not stored
        row = tx.one(
            f"SELECT {', '.join(_STORED_HAND_COLUMNS)} FROM {HANDS}"
            " WHERE round_id = ? AND hand = ?",
            (rid, hand),
        )
        if row is None:
            return False
        self._hands[(rid, hand)] = _stored_hand(rid, hand, row)
        return True

    def _flush(self, tx: Tx) -> None:
        updates = ", ".join(f"{c} = excluded.{c}" for c in _HAND_COLUMNS[2:])
        new: list[tuple[Any, ...]] = []
        other: list[tuple[Any, ...]] = []
        started = self.rounds.started_in_batch
        for key, h in self._hands.items():
            # not stored: asked for and absent, or of a round started in this batch
            (new if key in self._absent or started(key[0]) else other).append(h.row())
        upsert(
            tx,
            HANDS,
            _HAND_COLUMNS,
            new,
            other,
            f"ON CONFLICT (round_id, hand) DO UPDATE SET {updates}",
        )
        tx.insert(CARDS, _CARD_COLUMNS, self._cards)


# ------------------------------------------------------------------------------ queries


def hands_of_round(tx: Tx, round_id: str) -> list[dict[str, Any]]:
    """Every hand of a round (dealer last), each with its cards in order."""
    rows = tx.query(
        f"SELECT {', '.join(_HAND_COLUMNS)} FROM {HANDS} WHERE round_id = ?"
        " ORDER BY CASE WHEN hand = 'dealer' THEN 1 ELSE 0 END, hand",
        (round_id,),
    )
    cards = tx.query(
        f"SELECT {', '.join(_CARD_COLUMNS)} FROM {CARDS} WHERE round_id = ? ORDER BY hand, n",
        (round_id,),
    )
    by_hand: dict[str, list[dict[str, Any]]] = {}
    for c in cards:
        by_hand.setdefault(str(c[1]), []).append(dict(zip(_CARD_COLUMNS, c, strict=True)))
    out = []
    for r in rows:
        hand = dict(zip(_HAND_COLUMNS, r, strict=True))
        hand["card_rows"] = by_hand.get(str(hand["hand"]), [])
        out.append(hand)
    return out


__all__ = ["CARDS", "HANDS", "HandScores", "hands_of_round"]
