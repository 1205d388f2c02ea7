"""Verification of rounds: every check the service can make on a round, in one verdict.

This module owns :func:`verify_bundle` (one round's evidence, from the store or from an export)
and :class:`StoreVerifier` (rounds of a store: one, a date range, or all, plus the log itself),
and the text and JSON reports. Each finding is a :class:`~replays.reexecute.Discrepancy` naming
the round position of the event concerned, the expected and recorded values, the rule ID, and
the check that found it:

``storage``
    Every stored record of the round decodes to an event with all its fields.
``reexecution``
    ``replays.reexecute``: the inputs, re-executed under the stored rules key, give exactly the
    stored consequences, event by event.
``shoe``
    The round's shoe (SHOE-1..3): positions 0, 1, 2... without gap; no card more often than the
    decks hold; the burn (SHOE-2) first, with as many burned cards as the shown card's value; an
    RNG shoe's every card (dealt and burned) equal to the order its revealed seed gives, and the
    seed equal to the commitment published when the shoe opened; a test shoe's cards equal its
    recorded order. Each ``CardDealt`` of the round names a shoe position whose ``CardDrawn``
    holds the same card for this round, and every card the shoe drew for the round is dealt.
``money``
    Every movement the application makes for the round's events (``apply_movements`` run over
    the stored events, so the mapping is the application's own) is in the player's wallet with the
    deterministic transaction id ``<round>/<wager>/stake|<result>|refund|reverse`` and the same
    amount, and the wallets hold no other movement for the round. A bet's recorded
    ``balance_seen`` is the wallet's balance before its stake.
``seal``
    For a sealed round: the stored bytes still give the round's sealed chain head (the first
    changed position is named from the per-event chain values), its cards and money chains, and
    the leaf is included in the latest signed checkpoint (inclusion proof, Ed25519 signature).
"""

from __future__ import annotations

import base64
import os
from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, Final, cast
from uuid import UUID

import orjson
from eventsourcing.utils import get_topic

from domain.boundless.shared import SharedHand
from domain.cards import Card
from domain.collector import paused
from domain.commit_leaf import (
    COMMIT,
    LeafEntry,
    LeafFormatError,
    ParsedLeaf,
    kept_first,
    parse_leaf,
    state_digest,
)
from domain.errors import DomainError
from domain.movements import apply_movements
from domain.round import Round
from domain.shoe import BURN_SHOWN, BURNED, Shoe, burn_count
from domain.shuffle import ALGORITHMS, verify_order
from domain.wallet import Wallet
from replays.bundle import (
    MOVING_EVENTS,
    SHARED_STARTED_TOPIC,
    CommitEvidence,
    Decoded,
    Deferred,
    DroppedState,
    RoundBundle,
    StoreReader,
    Undecodable,
    originator_uuid,
    stored_digest,
    stored_sha256,
    wallet_id,
)
from replays.chain import ROUND, Record, chain_values
from replays.log import (
    MerkleLog,
    StoredCheckpoint,
    TrustPolicy,
    check_checkpoints,
    observed_leaf,
)
from replays.merkle import (
    checkpoint_signature_ok,
    key_id,
    leaf_hash,
    parse_public_key,
    unhex,
    verify_inclusion,
)
from replays.note import verify
from replays.reexecute import Discrepancy, Verdict, verify_events

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from domain.application import RoundAudit

Json = dict[str, Any]
ROUND_TOPICS = tuple(
    get_topic(cls)
    for cls in vars(Round).values()
    if isinstance(cls, type) and issubclass(cls, Round.Event)
)
#: The first record of a boundless round (a shared hand and one participation per player).
SHARED_STARTS = (SHARED_STARTED_TOPIC,)
#: The events that take a card out of the shoe into a round.
CARD_DEALT = (Round.CardDealt, SharedHand.CardDealt)

#: An event class's part in the shoe and money checks (:func:`_role`, bits): a card dealt
#: (``CARD_DEALT``), an event that moves money (``MOVING_EVENTS``: ``_expected``), a bet (its
#: class's name ends in ``BetPlaced``), which may record the balance its player saw.
_CARD, _MOVING, _BET = 1, 2, 4
_ROLES: dict[type, int] = {}


def _role(cls: type) -> int:
    """The part of the event class ``cls`` in the shoe and money checks (0: none), found once
    a class (:data:`_ROLES`)."""
    role = _ROLES.get(cls)
    if role is None:
        role = _ROLES[cls] = (
            (_CARD if issubclass(cls, CARD_DEALT) else 0)
            | (_MOVING if cls.__name__ in MOVING_EVENTS else 0)
            | (_BET if cls.__qualname__.endswith("BetPlaced") else 0)
        )
    return role


@dataclass(slots=True)
class _Walked:
    """A round's records that the shoe and money checks read, each in the round's order: the
    cards dealt, the events that move money, and the balance each bet saw (by the bet's
    position, when its event records one)."""

    cards: list[Decoded]
    moving: list[Decoded]
    balance_seen: dict[int, Any]


def _walk(records: Sequence[Decoded], *, bets: bool = True) -> _Walked:
    """One walk over a round's ``records`` for the shoe and money checks (:class:`_Walked`),
    each record's class read once (``Decoded.cls``: a deferred record's too, not decoded for
    this; a plain record's from its event, without the property's call) and its part looked
    up by class (:func:`_role`); a bet's event is read only with ``bets`` (the money check's
    walk, before re-execution lets go of what it compared)."""
    cards: list[Decoded] = []
    moving: list[Decoded] = []
    balance_seen: dict[int, Any] = {}
    roles = _ROLES
    cls: type | None
    for d in records:
        if type(d) is Decoded:  # (``Decoded.cls``, without its property's call)
            event = d.event
            if event is None:
                continue
            cls = type(event)
        else:  # a deferred record's: its slot
            cls = d.cls
            if cls is None:
                continue
        role = roles.get(cls)
        if role is None:
            role = _role(cls)
        if not role:
            continue
        if role & _CARD:
            cards.append(d)
        if role & _MOVING:
            moving.append(d)
        if role & _BET and bets:
            event = d.event
            if hasattr(event, "balance_seen"):
                balance_seen[d.position] = event.balance_seen
    return _Walked(cards, moving, balance_seen)


# ------------------------------------------------------------------------------ the shoe
@dataclass
class _Draw:
    position: int
    card: str
    purpose: str
    round_id: str | None


@dataclass
class _ShoeProblem:
    shoe_position: int | None
    owner: str | None  # the round the card belongs to; None: the whole shoe
    event: str
    field: str
    expected: Any
    recorded: Any
    rule: str | None
    message: str


@dataclass
class ShoeFacts:
    """What the shoe's records say, checked once per shoe (and per growth of its stream)."""

    opened: Any | None = None
    draws: dict[int, _Draw] = field(default_factory=dict)
    #: The draws by the round they name (``round_id``), each round's by position: what a
    #: round's check reads of them (a live shoe's hundreds of draws, not walked a round).
    by_round: dict[str | None, list[_Draw]] = field(default_factory=dict)
    revealed: Any | None = None
    problems: list[_ShoeProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str | None:
        return None if self.opened is None else str(self.opened.kind)


#: The shoe's events that take a card out of it (a tuple made once: ``A | B | C`` in the loop
#: made a new union a record).
_SHOE_DRAWS: Final = (Shoe.BurnCardShown, Shoe.CardBurned, Shoe.CardDrawn)


def shoe_facts(shoe_id: UUID, decoded: Sequence[Decoded]) -> ShoeFacts:
    f = ShoeFacts()
    problems = f.problems

    def shoe_wide(event: str, fld: str, exp: Any, rec: Any, rule: str | None, msg: str) -> None:
        problems.append(_ShoeProblem(None, None, event, fld, exp, rec, rule, msg))

    for i, d in enumerate(decoded, start=1):
        if d.record.version != i:  # (``Decoded.version``, without its property's call)
            shoe_wide(
                d.name,
                "originator_version",
                i,
                d.version,
                "SHOE-3",
                f"shoe {shoe_id}: record {i} is missing (versions are not 1..N)",
            )
            break
    for d in decoded:
        if d.error is not None:
            shoe_wide(
                d.name,
                "(bytes)",
                "a readable event",
                d.error,
                "SHOE-3",
                f"shoe {shoe_id}: the record at version {d.version} does not decode",
            )
    events = [d.event for d in decoded if d.event is not None]
    if not events or not isinstance(events[0], Shoe.Opened):
        shoe_wide(
            "Shoe.Opened",
            "(event)",
            "Shoe.Opened",
            None,
            "SHOE-3",
            f"shoe {shoe_id} has no Opened record",
        )
        return f
    f.opened = opened = events[0]
    decks = int(opened.decks)
    counts: dict[str, int] = {}  # each card's draws (a dict: a Counter's miss is a Python call)
    draws = f.draws
    burn_left: int | None = None
    burn_done = not opened.burn_procedure
    cut_position: int | None = None
    last_round: str | None = None
    for e in events[1:]:
        if isinstance(e, Shoe.CutCardReached):
            cut_position = e.position
            last_round = e.round_id
            continue
        if isinstance(e, Shoe.SeedRevealed):
            f.revealed = e
            continue
        if not isinstance(e, _SHOE_DRAWS):
            continue
        name = f"Shoe.{type(e).__name__}"
        expected_position = len(draws)
        if e.position != expected_position:
            shoe_wide(
                name,
                "position",
                expected_position,
                e.position,
                "SHOE-3",
                "the shoe's positions are not 0, 1, 2... without gap",
            )
        if isinstance(e, Shoe.BurnCardShown):
            purpose, owner = BURN_SHOWN, None
            if not opened.burn_procedure or f.draws:
                shoe_wide(
                    name,
                    "position",
                    None,
                    e.position,
                    "SHOE-2",
                    "a burn outside the shoe's procedure: it must come first, once",
                )
            try:
                need = burn_count(Card.parse(e.card))
            except DomainError:
                need = -1
            if e.burn_count != need:
                shoe_wide(
                    name,
                    "burn_count",
                    need,
                    e.burn_count,
                    "SHOE-2",
                    f"the shown {e.card} burns {need} card(s)",
                )
            burn_left = need
            burn_done = need == 0
        elif isinstance(e, Shoe.CardBurned):
            purpose, owner = BURNED, None
            if burn_left is None or burn_left <= 0:
                shoe_wide(
                    name,
                    "position",
                    None,
                    e.position,
                    "SHOE-2",
                    "a burned card beyond the shown card's burn count",
                )
            else:
                burn_left -= 1
                burn_done = burn_left == 0
        else:
            purpose, owner = str(e.purpose), e.round_id
            if not burn_done:
                shoe_wide(
                    name,
                    "position",
                    "after the burn",
                    e.position,
                    "SHOE-2",
                    "a card was dealt before the burn procedure was complete",
                )
                burn_done = True  # said once
            if cut_position is not None and e.position > cut_position:
                if last_round is None:
                    last_round = owner
                elif owner != last_round:
                    problems.append(
                        _ShoeProblem(
                            e.position,
                            owner,
                            name,
                            "round_id",
                            last_round,
                            owner,
                            "SHOE-1",
                            f"the cut card came out in round {last_round}, the shoe's last; "
                            "no later round may draw from it",
                        )
                    )
        if e.position not in draws:  # the first draw at a position is the shoe's
            draws[e.position] = _Draw(e.position, e.card, purpose, owner)
        card = e.card
        count = counts[card] = counts.get(card, 0) + 1
        if count > decks:
            problems.append(
                _ShoeProblem(
                    e.position,
                    owner,
                    name,
                    "card",
                    f"at most {decks}",
                    count,
                    "SHOE-3",
                    f"{card} has left the shoe {count} times; {decks} deck(s) hold {decks}",
                )
            )
    if opened.burn_procedure and f.draws and not burn_done:
        shoe_wide(
            "Shoe.CardBurned",
            "(event)",
            "the full burn",
            "fewer burned cards",
            "SHOE-2",
            "the burn procedure is incomplete",
        )
    in_order = sorted(f.draws.items())
    drawn = [(p, d.card) for p, d in in_order]
    for _, each in in_order:
        f.by_round.setdefault(each.round_id, []).append(each)
    if opened.kind == "rng":
        if f.revealed is None:
            f.notes.append(
                f"shoe {shoe_id}: its seed is not revealed yet (the shoe is still in use); the "
                "cards are checked against the shoe's log, not yet against the shuffle"
            )
        else:
            if f.revealed.commitment != opened.commitment:
                shoe_wide(
                    "Shoe.SeedRevealed",
                    "commitment",
                    opened.commitment,
                    f.revealed.commitment,
                    "SHOE-3",
                    "the reveal names another commitment than the shoe's",
                )
            found = []
            if opened.algorithm not in ALGORITHMS:  # a shoe deals by the one it opened with
                shoe_wide(
                    "Shoe.Opened",
                    "algorithm",
                    " or ".join(ALGORITHMS),
                    str(opened.algorithm),
                    "SHOE-3",
                    "the shoe names no shuffle algorithm: its cards cannot be re-derived",
                )
            else:
                try:
                    found = verify_order(
                        str(opened.commitment),
                        bytes.fromhex(f.revealed.seed),
                        decks,
                        drawn,
                        opened.algorithm,
                    )
                except (ValueError, TypeError) as exc:
                    shoe_wide(
                        "Shoe.SeedRevealed",
                        "seed",
                        "the committed seed",
                        str(exc),
                        "SHOE-3",
                        "the revealed seed is not usable",
                    )
            for x in found:
                draw = f.draws.get(x.position) if x.position is not None else None
                problems.append(
                    _ShoeProblem(
                        x.position,
                        draw.round_id if draw else None,
                        "Shoe.SeedRevealed" if x.position is None else "Shoe.CardDrawn",
                        "seed" if x.position is None else "card",
                        x.expected,
                        x.recorded,
                        x.rule,
                        x.message,
                    )
                )
    elif opened.kind == "test":
        order = list(opened.order or [])
        for p, card in drawn:
            want = order[p] if p < len(order) else None
            if want != card:
                draw = f.draws[p]
                problems.append(
                    _ShoeProblem(
                        p,
                        draw.round_id,
                        "Shoe.CardDrawn",
                        "card",
                        want,
                        card,
                        "SHOE-3",
                        f"position {p}: the test shoe's recorded order has {want}, not {card}",
                    )
                )
    return f


def _check_shoe(
    b: RoundBundle, facts: ShoeFacts | None, v: Verdict, cards: list[Decoded] | None = None
) -> None:
    """The shoe check of a round; ``cards``: its cards dealt (:func:`_walk`), else found now."""
    rid = b.round_text
    started = b.started
    add = v.discrepancies.append
    if started is None:
        return
    started_name = b.round[0].name
    if facts is None or facts.opened is None:
        add(
            Discrepancy(
                1,
                started_name,
                "shoe_id",
                "an existing shoe",
                started.shoe_id,
                "SHOE-3",
                "the round's shoe is not in the store",
                "shoe",
            )
        )
        if facts is None:
            return
    dealt_at: dict[int, int] = {}
    for d in cards if cards is not None else _walk(b.round, bets=False).cards:
        e = d.event
        p = e.shoe_position
        if p is None:
            add(
                Discrepancy(
                    d.position,
                    d.name,
                    "shoe_position",
                    "a shoe position",
                    None,
                    "SHOE-3",
                    "the card names no shoe position",
                    "shoe",
                )
            )
            continue
        if p in dealt_at:
            add(
                Discrepancy(
                    d.position,
                    d.name,
                    "shoe_position",
                    "a new position",
                    p,
                    "SHOE-3",
                    f"shoe position {p} was already dealt at position {dealt_at[p]}",
                    "shoe",
                )
            )
        dealt_at.setdefault(p, d.position)
        draw = facts.draws.get(p)
        if draw is None:
            add(
                Discrepancy(
                    d.position,
                    d.name,
                    "shoe_position",
                    "a card the shoe drew",
                    p,
                    "SHOE-3",
                    f"the shoe has no card at position {p}",
                    "shoe",
                )
            )
            continue
        if draw.card != e.card:
            add(
                Discrepancy(
                    d.position,
                    d.name,
                    "card",
                    draw.card,
                    e.card,
                    "SHOE-3",
                    f"the shoe drew {draw.card} at position {p}",
                    "shoe",
                )
            )
        if draw.round_id != rid or draw.purpose != "deal":
            add(
                Discrepancy(
                    d.position,
                    d.name,
                    "round_id",
                    rid,
                    draw.round_id,
                    "SHOE-3",
                    f"the shoe drew position {p} for "
                    f"{draw.round_id or draw.purpose}, not for this round",
                    "shoe",
                )
            )
    for draw in facts.by_round.get(rid, ()):  # by position, as the shoe's draws sorted
        p = draw.position
        if p not in dealt_at:
            add(
                Discrepancy(
                    None,
                    "Shoe.CardDrawn",
                    "position",
                    "dealt in the round",
                    p,
                    "SHOE-3",
                    f"the shoe drew {draw.card} at position {p} for this round but the "
                    "round's log has no CardDealt for it",
                    "shoe",
                )
            )
    if facts.opened is not None and facts.opened.table_id != started.table_id:
        add(
            Discrepancy(
                1,
                started_name,
                "shoe_id",
                started.table_id,
                facts.opened.table_id,
                "SHOE-3",
                "the shoe belongs to another table",
                "shoe",
            )
        )
    for x in facts.problems:
        if x.owner is not None and x.owner != rid:
            continue
        pos = dealt_at.get(x.shoe_position) if x.shoe_position is not None else None
        where = f" (shoe position {x.shoe_position})" if x.shoe_position is not None else ""
        add(
            Discrepancy(
                pos, x.event, x.field, x.expected, x.recorded, x.rule, x.message + where, "shoe"
            )
        )
    v.notes.extend(facts.notes)


# ------------------------------------------------------------------------------ money
@dataclass
class _Expected:
    position: int
    event: str
    rule: str | None
    kind: type
    player: str
    amount: Decimal
    transaction_id: str
    wager_id: str | None
    reversed: str | None = None
    #: The rule the application books the movement with (``domain.movements``).
    rule_booked: str | None = None


class _Sink:
    """Stands in for a Wallet: records the movements ``apply_movements`` asks for."""

    def __init__(self, player: str, out: list[_Expected], current: list[Any]) -> None:
        self.player, self.out, self.current = player, out, current

    def _add(
        self, kind: type, amount: object, tid: str, wager: str | None, booked: Any, **kw: Any
    ) -> bool:
        position, event = self.current[0], self.current[1]
        rule = getattr(event, "rule", None)
        self.out.append(
            _Expected(
                position,
                f"Round.{type(event).__name__}",
                rule,
                kind,
                self.player,
                Decimal(str(amount)),
                tid,
                wager,
                rule_booked=booked if isinstance(booked, str) else None,
                **kw,
            )
        )
        return True

    def debit_stake(
        self, amount: object, round_id: str, wager_id: str | None, transaction_id: str, **kw: Any
    ) -> bool:
        return self._add(Wallet.StakeDebited, amount, transaction_id, wager_id, kw.get("rule"))

    def credit_payout(
        self, amount: object, round_id: str, wager_id: str | None, transaction_id: str, **kw: Any
    ) -> bool:
        return self._add(Wallet.PayoutCredited, amount, transaction_id, wager_id, kw.get("rule"))

    def credit_refund(
        self,
        amount: object,
        round_id: str,
        wager_id: str | None,
        transaction_id: str,
        reason: str = "",
        **kw: Any,
    ) -> bool:
        return self._add(Wallet.RefundCredited, amount, transaction_id, wager_id, kw.get("rule"))

    def reverse_payment(
        self,
        amount: object,
        round_id: str,
        wager_id: str | None,
        transaction_id: str,
        reversed_transaction_id: str,
        reason: str = "",
        **kw: Any,
    ) -> bool:
        return self._add(
            Wallet.PaymentReversed,
            amount,
            transaction_id,
            wager_id,
            kw.get("rule"),
            reversed=reversed_transaction_id,
        )


def expected_movements(round_id: UUID, decoded: Sequence[Decoded]) -> list[_Expected]:
    """The movements the round's events ``decoded`` call for, in their order."""
    return list(_expected(round_id, decoded))


def _expected(round_id: UUID, decoded: Sequence[Decoded]) -> Iterator[_Expected]:
    """:func:`expected_movements` one record at a time (the money check holds none but the
    one it checks: a boundless round's are tens of thousands)."""
    expected: list[_Expected] = []
    current: list[Any] = [0, None]
    rid = str(round_id)
    for d in decoded:
        cls = d.cls  # a deferred record's too (never one that moves money)
        if cls is None or cls.__name__ not in MOVING_EVENTS:
            continue  # ``apply_movements`` moves nothing for it
        event = d.event
        current[:] = [d.position, event]
        try:  # the application's own mapping, with sinks for wallets: what it *would* move
            apply_movements(
                rid,
                [event],
                lambda player: cast(Wallet, _Sink(player, expected, current)),
            )
        except (ArithmeticError, AttributeError, TypeError, ValueError):
            if not expected:  # a malformed event: re-execution reports it
                continue  # (what it called for before, if anything, is kept)
        if expected:
            yield from expected
            expected.clear()


def _movement_checks(
    x: _Expected, found: Decoded, rid: str, *, quick: bool = True
) -> list[tuple[str, Any, Any]]:
    """What the wallet movement ``found`` is checked against for the round's event ``x``: each
    (field, what the event books, what the movement holds), the money check reporting those that
    differ. ``quick``: none when every one is the same, found without building the list (nearly
    every movement; ``tests/replays/test_money_check.py`` compares it with the list)."""
    m = found.event
    wallet_of = wallet_id(x.player)
    oid = found.record.originator_id
    kind = x.kind.__name__
    round_id, wager_id, rule = m.round_id, m.wager_id, getattr(m, "rule", None)
    try:
        amount: Any = Decimal(m.amount)
    except (InvalidOperation, TypeError):
        amount = m.amount
    reversed_id = getattr(m, "reversed_transaction_id", None) if x.reversed is not None else None
    if (
        quick
        and kind == type(m).__name__
        and wallet_of == oid  # both UUIDs: equal as their text is
        and rid == round_id
        and x.wager_id == wager_id
        and x.amount == amount
        and (x.reversed is None or x.reversed == reversed_id)
        and (rule is None or x.rule_booked == rule)
    ):
        return []
    checks: list[tuple[str, Any, Any]] = [
        ("(movement)", kind, type(m).__name__),
        ("wallet", str(wallet_of), str(oid)),
        ("round_id", rid, round_id),
        ("wager_id", x.wager_id, wager_id),
        ("amount", x.amount, amount),
    ]
    if x.reversed is not None:
        checks.append(("reversed_transaction_id", x.reversed, reversed_id))
    if rule is not None:  # booked before they cited it: None, as read
        checks.append(("rule", x.rule_booked, rule))
    return checks


def _check_money(b: RoundBundle, walked: _Walked | None = None) -> list[Discrepancy]:
    """The money check's findings: every movement the round's events call for is in the
    named wallet as booked, and the wallets hold no other movement for the round.
    ``walked``: the round's records the check reads (:func:`_walk`), else found now."""
    out: list[Discrepancy] = []
    add = out.append
    rid = b.round_text
    held: dict[str, Decoded] = {}
    for m in b.money:
        held[str(m.event.transaction_id)] = m
    matched: set[str] = set()
    if walked is None:
        walked = _walk(b.round)
    balance_seen = walked.balance_seen
    for x in _expected(b.round_id, walked.moving):  # the others move nothing
        kind = x.kind.__name__
        found = held.get(x.transaction_id)
        if found is None:
            add(
                Discrepancy(
                    x.position,
                    x.event,
                    "wallet",
                    f"{kind} {x.amount} to {x.player} ({x.transaction_id})",
                    None,
                    x.rule,
                    f"the wallet of {x.player} has no movement {x.transaction_id}",
                    "money",
                )
            )
            continue
        m = found.event
        matched.add(str(m.transaction_id))  # the wallet's text (``held``'s key), not a copy
        checks = _movement_checks(x, found, rid)
        for fld, exp, rec in checks:
            if exp != rec:
                add(
                    Discrepancy(
                        x.position,
                        x.event,
                        f"wallet.{fld}",
                        _plain(exp),
                        _plain(rec),
                        x.rule,
                        f"movement {x.transaction_id} in the wallet of "
                        f"{x.player} differs from the round's event",
                        "money",
                    )
                )
        seen = balance_seen.get(x.position)
        if seen is not None and isinstance(m, Wallet.StakeDebited):
            try:
                before = Decimal(m.balance_after) + Decimal(m.amount)
                if before != Decimal(seen):
                    add(
                        Discrepancy(
                            x.position,
                            x.event,
                            "balance_seen",
                            str(before),
                            seen,
                            x.rule,
                            f"the wallet of {x.player} held {before} before this stake, "
                            f"not the balance the bet records",
                            "money",
                        )
                    )
            except (InvalidOperation, TypeError):
                pass
    for tid, d in sorted(held.items()):
        if tid not in matched:
            m = d.event
            add(
                Discrepancy(
                    None,
                    f"Wallet.{type(m).__name__}",
                    "transaction_id",
                    None,
                    tid,
                    None,
                    f"the wallet holds movement {tid} ({m.amount}) for this round, but "
                    "no event of the round's log calls for it",
                    "money",
                )
            )
    return out


def _plain(value: Any) -> Any:
    return str(value) if isinstance(value, Decimal | UUID) else value


# ------------------------------------------------------------------------------ the seal
def _check_seal(b: RoundBundle, v: Verdict, key: Ed25519PublicKey | None, key_note: str) -> None:
    seal = b.seal
    add = v.discrepancies.append
    if seal is None:
        if b.evidence is None and b.finishing is not None:
            v.notes.append("not sealed yet: no tamper evidence beyond re-execution")
        return
    v.checks.append("seal")
    for p in seal.problems:
        add(Discrepancy(None, "(merkle log)", "seal", None, None, None, p, "seal"))
    if not seal.leaf_bytes:
        return
    try:
        sealed = seal.leaf
    except (orjson.JSONDecodeError, AssertionError):
        add(
            Discrepancy(
                None,
                "(merkle log)",
                "leaf",
                "canonical JSON",
                seal.leaf_bytes[:80],
                None,
                "the round's leaf in the log is unreadable",
                "seal",
            )
        )
        return
    records = [d.record for d in b.round]
    now = chain_values(ROUND, b.round_id, records)
    chain = seal.chain
    if chain and sealed.get("head") != chain[-1]:
        add(
            Discrepancy(
                None,
                "(merkle log)",
                "chain",
                sealed.get("head"),
                chain[-1],
                None,
                "the seal's chain values do not end at the leaf's head",
                "seal",
            )
        )
    located = False
    for i in range(max(len(now), len(chain))):
        a = chain[i] if i < len(chain) else None
        c = now[i] if i < len(now) else None
        if a == c:
            continue
        d = b.round[i] if i < len(b.round) else None
        rule = getattr(d.event, "rule", None) if d is not None and d.event is not None else None
        if c is None:
            msg = f"{len(chain) - len(now)} sealed event(s) from this position on are gone"
        elif a is None:
            msg = f"{len(now) - len(chain)} event(s) from this position on were added after sealing"
        elif b.shared:  # a merged log: a removed or moved record shifts what follows
            msg = (
                "the record at this position is not the one sealed: its stored bytes changed "
                "after sealing, or a record before it was removed, added or moved"
            )
        else:
            msg = "the stored bytes of the event at this position changed after sealing"
        add(
            Discrepancy(
                i + 1,
                d.name if d is not None else "(missing)",
                "(bytes)",
                a,
                c,
                rule if isinstance(rule, str) else None,
                msg,
                "seal",
            )
        )
        located = True
        break
    current = observed_leaf(b)
    fields = ["round_id", "table_id", "round_number", "outcome", "finished_at", "cards", "money"]
    if not located:
        fields += ["events", "head"]
    for fld in fields:
        if sealed.get(fld) != current.get(fld):
            what = {
                "cards": "the shoe's records of this round's cards changed after sealing",
                "money": "the round's wallet movements changed after sealing",
            }.get(fld, f"{fld} differs from the sealed leaf")
            add(
                Discrepancy(
                    None,
                    "(merkle log)",
                    f"leaf.{fld}",
                    sealed.get(fld),
                    current.get(fld),
                    None,
                    what,
                    "seal",
                )
            )
    cp = seal.checkpoint
    if cp is None:
        v.notes.append(f"sealed as leaf {seal.leaf_index}, not yet covered by a checkpoint")
        return
    if seal.inclusion is not None:
        ok = verify_inclusion(
            seal.leaf_index,
            cp.size,
            leaf_hash(seal.leaf_bytes),
            unhex(seal.inclusion),
            bytes.fromhex(cp.root),
        )
        if not ok:
            add(
                Discrepancy(
                    None,
                    "(merkle log)",
                    "inclusion",
                    cp.root,
                    None,
                    None,
                    f"leaf {seal.leaf_index} is not included in checkpoint #{cp.number} "
                    f"(size {cp.size}): the log's leaves changed after it was signed",
                    "seal",
                )
            )
    if key is None:
        v.notes.append("checkpoint signature not checked: no public key given")
    elif not checkpoint_signature_ok(cp, key):
        add(
            Discrepancy(
                None,
                "(merkle log)",
                "signature",
                key_id(key),
                cp.key_id,
                None,
                f"checkpoint #{cp.number} is not signed by the given key",
                "seal",
            )
        )
    elif key_note:
        v.notes.append(key_note)


# ------------------------------------------------------------------------------ the log
def aggregate_of(topic: str, originator_id: UUID) -> str:
    """How a finding names a stored event's aggregate: its class and id.

    >>> aggregate_of("domain.wallet:Wallet.StakeDebited", UUID(int=1))
    'Wallet 00000000-0000-0000-0000-000000000001'
    """
    name = topic.rpartition(":")[2].split(".")[0] or topic
    return f"{name} {originator_id}"


#: An event's key in :class:`CommitCache` and :func:`_check_commit`: its stream id's integer
#: and its version (a ``UUID`` hashes in Python: a round's check hashes each key several
#: times), in one integer, ``oid << 64 | version``, for a version in ``[0, 2**64)``: an
#: integer is no object the garbage collector tracks, a tuple is (a boundless round's leaves
#: name tens of thousands of events, each key kept by the verifier's cache and walked by the
#: collector). Any other version (only a forged leaf's) keeps the pair, never equal to an
#: integer: two events have the same key exactly when they have the same stream and version.
_Key = int | tuple[int, int]
_VERSIONS = 1 << 64


def _key(originator_id: UUID, version: int) -> _Key:
    return _key_of(originator_id.int, version)


def _key_of(oid: int, version: int) -> _Key:
    """:func:`_key` of a stream id's integer.

    >>> _key_of(3, 5) == 3 << 64 | 5 and _key_of(3, 2**64) == (3, 2**64)
    True
    """
    return oid << 64 | version if 0 <= version < _VERSIONS else (oid, version)


#: A leaf entry's place in :attr:`CommitCache.located`: ``index << 32 | position`` (the leaf's
#: index, the entry's position among its entries).
_AT = 32
_POSITION = (1 << _AT) - 1


def _run_keys(oid: int, first: int, count: int) -> range | None:
    """The keys (:func:`_key_of`) of the ``count`` versions from ``first`` (>= 1: a run's,
    :meth:`ParsedLeaf.runs`) of the stream ``oid``, as one range of integers; None when a
    version reaches 2**64 (its key is a pair: then each is made by :func:`_key_of`).

    >>> list(_run_keys(3, 5, 2)) == [_key_of(3, 5), _key_of(3, 6)], _run_keys(3, 2**64 - 1, 2)
    (True, None)
    """
    end = first + count
    return None if end > _VERSIONS else range((oid << 64) + first, (oid << 64) + end)


@dataclass
class _ShoeChecked:
    """A shoe's records already checked against their leaves by one verifier: how many (the
    first ``count`` of its stream, the last of them ``last``), their keys, and the findings."""

    count: int = 0
    last: Any = None
    keys: set[_Key] = field(default_factory=set)
    findings: list[Discrepancy] = field(default_factory=list)
    #: The shoe's leaves they were checked against, and those known then but not in the
    #: round's evidence (for the results to stand, a round's evidence must hold every leaf of
    #: ``scope`` and none of ``excluded``).
    scope: set[int] = field(default_factory=set)
    excluded: set[int] = field(default_factory=set)


#: The most leaf bytes a :class:`CommitCache` holds before it starts again (its parsed leaves
#: take a few times that in memory).
COMMIT_CACHE_BYTES = 32 * 1024 * 1024


class CommitCache:
    """What :func:`_check_commit` keeps between the rounds one verifier checks: each leaf
    parsed once (by index, with its bytes) and indexed by the events it commits to and by
    stream, and per shoe the result of checking its records against their leaves (a live shoe
    serves many rounds: its records are checked once, and again only as it grows), no leaf's
    text held (each leaf by its tree hash and its parse). A shoe's
    results stand for a round whose evidence holds every leaf they were checked against (a
    round's evidence holds every leaf of its shoe, ``MerkleLog.evidence``); a new leaf
    committing to a record already checked forgets its shoe's results, and a leaf whose hash
    differs from the one parsed before (other bytes) forgets everything."""

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        self.held = 0  # bytes of the leaves held (their text's length: ``ParsedLeaf.size``)
        #: by index, the leaf's tree hash and its parse
        self.leaves: dict[int, tuple[bytes, ParsedLeaf]] = {}
        #: where the leaf entries committing to each event (``_key``) are, each as one
        #: integer (``index << 32 | position``: the entry is ``self.leaves[index]``'s): that
        #: one, or a list of them by index when several leaves name the event (tampering, a
        #: backfill beside a commit). No list and no tuple is made for the tens of thousands
        #: of events that one leaf names (nothing the garbage collector walks)
        self.located: dict[_Key, int | list[int]] = {}
        #: leaf indexes by stream (the stream id's integer)
        self.by_stream: dict[int, set[int]] = {}
        #: by shoe (its id's integer)
        self.shoes: dict[int, _ShoeChecked] = {}

    def parsed(self, index: int, data: bytes, tree_hash: bytes | None = None) -> ParsedLeaf:
        """The leaf ``index`` holding ``data`` (whose tree hash is ``tree_hash``: computed when
        not given), parsed (:class:`LeafFormatError` if it is not a leaf), and indexed
        (:meth:`indexed`)."""
        known = self.leaves.get(index)
        if known is not None:
            return known[1]
        if tree_hash is None:
            tree_hash = leaf_hash(data)
        return self.indexed(index, tree_hash, parse_leaf(data, tree_hash))

    def indexed(self, index: int, tree_hash: bytes, parsed: ParsedLeaf) -> ParsedLeaf:
        """The leaf ``index``, whose tree hash is ``tree_hash`` and parse ``parsed`` (the log's:
        ``CommitEvidence.parsed``), held and indexed: each entry's place in :attr:`located`,
        the leaf in its streams' :attr:`by_stream`, and a shoe's results forgotten when the
        leaf names a record they checked.

        The leaf is indexed a run of entries at a time (:meth:`ParsedLeaf.runs`, which the
        log's read made and kept with the leaf: consecutive versions of one stream, a
        transaction's records of it): a run whose keys no leaf named yet goes into
        :attr:`located` in one ``dict.update``. Any entry a leaf named before (tampering, a
        backfill beside a commit), and a leaf with an entry in no run (a version below 1),
        are indexed an entry at a time (:meth:`_locate_entry`), as every entry was before."""
        known = self.leaves.get(index)
        if known is not None:
            return known[1]
        self.leaves[index] = (tree_hash, parsed)
        self.held += parsed.size
        runs = parsed.whole_runs()
        if runs is None:  # an entry in no run
            self._index_entries(index, parsed)
            return parsed
        at = index << _AT
        shoes = self.shoes
        located = self.located
        by_stream = self.by_stream
        for stream_id, first, count, _ in runs:
            oid = stream_id.int
            stream = by_stream.get(oid)
            if stream is None:
                by_stream[oid] = {index}
            else:
                stream.add(index)
            if count == 1:
                key: _Key = _key_of(oid, first)
                if key in located:
                    self._locate_entry(key, at)
                else:
                    located[key] = at
                keys: Iterable[_Key] = (key,)
            else:
                run = _run_keys(oid, first, count)
                if run is not None and located.keys().isdisjoint(run):
                    located.update(zip(run, range(at, at + count), strict=True))
                    keys = run
                else:  # an event a leaf named before (or beyond the integer keys)
                    keys = [_key_of(oid, v) for v in range(first, first + count)]
                    for position, key in enumerate(keys, start=at):
                        self._locate_entry(key, position)
            if shoes:
                checked = shoes.get(oid)
                if checked is not None and not checked.keys.isdisjoint(keys):
                    del shoes[oid]  # its leaf may be another now
            at += count
        return parsed

    def _index_entries(self, index: int, parsed: ParsedLeaf) -> None:
        """:meth:`parsed`'s indexing of the leaf ``index``, an entry at a time."""
        shoes = self.shoes
        by_stream = self.by_stream
        at = index << _AT
        last: UUID | None = None  # the stream of the entry before
        oid = 0
        for position, (_, stream_id, version, _, _) in enumerate(parsed.entries, start=at):
            if stream_id is not last:
                last = stream_id
                oid = last.int
                by_stream.setdefault(oid, set()).add(index)
            key = _key_of(oid, version)
            self._locate_entry(key, position)
            if shoes:
                checked = shoes.get(oid)
                if checked is not None and key in checked.keys:
                    del shoes[oid]  # its leaf may be another now

    def _locate_entry(self, key: _Key, at: int) -> None:
        """Add the leaf entry at ``at`` (``index << 32 | position``) to those naming ``key``
        in :attr:`located`."""
        located = self.located
        found = located.get(key)
        if found is None:
            located[key] = at
        else:
            many = [found] if isinstance(found, int) else found
            many.append(at)
            many.sort()  # by index (then position: one leaf's are in order already)
            located[key] = many

    def keep_within(self, limit: int) -> None:
        """Forget everything once the leaves held pass ``limit`` bytes: a verifier of a whole
        store (``verify --all``) holds at most that much, whatever the store's size (what is
        forgotten is parsed and checked again when a round needs it)."""
        if self.held > limit:
            self.forget()

    def parse_all(
        self, ev: CommitEvidence
    ) -> tuple[dict[int, ParsedLeaf], dict[int, LeafFormatError], dict[int, bytes]]:
        """Each leaf of ``ev`` (by index) parsed, or why it is not a leaf, and each leaf's
        tree hash (those given parsed with theirs; those given as text hashed here, once).
        Everything is forgotten first if one of them has another hash than when it was parsed
        (other bytes); a leaf held is then answered by one look-up, those given parsed are
        indexed as given (:meth:`indexed`), those given as text parsed (:meth:`parsed`) in
        :func:`kept_first`'s order. A live shoe's round names every leaf of its shoe, nearly
        all of them held already."""
        known = self.leaves
        keys = {index: key for index, (key, _) in ev.parsed.items()}
        for index, data in ev.leaves.items():
            keys[index] = leaf_hash(data)
        readable: dict[int, ParsedLeaf] = {}
        for index, key in keys.items():
            was = known.get(index)
            if was is not None and was[0] != key:
                # other bytes than those parsed: everything forgotten, all parsed again
                self.forget()
                known = self.leaves
                break
        new: list[tuple[int, bytes]] = []
        for index, (key, parsed) in ev.parsed.items():
            readable[index] = self.indexed(index, key, parsed)
        for index in ev.leaves:
            was = known.get(index)
            if was is None:
                new.append((index, keys[index]))
            else:
                readable[index] = was[1]
        unreadable: dict[int, LeafFormatError] = {}
        # those the log's read left parsed first: none of them is parsed again (``kept_first``)
        for index, key in kept_first(new):
            try:
                readable[index] = self.parsed(index, ev.leaves[index], key)
            except LeafFormatError as exc:
                unreadable[index] = exc
        return readable, unreadable, keys

    def locate(self, key: _Key, leaves: set[int]) -> tuple[int, LeafEntry] | None:
        """The first of ``leaves`` (by index) that commits to the event ``key``
        (:func:`_key`)."""
        found = self.located.get(key)
        if found is None:
            return None
        for at in (found,) if isinstance(found, int) else found:
            index = at >> _AT
            if index in leaves:
                return index, self.leaves[index][1].entries[at & _POSITION]
        return None

    def check_records(
        self, records: Sequence[Decoded], stream: str, leaves: set[int], keys: set[_Key]
    ) -> list[Discrepancy]:
        """Each of ``records`` (of the round, its shoe or a wallet: ``stream``) checked
        against the leaf entry committing to it, the first of ``leaves`` that holds one
        (:meth:`locate`); its key (:func:`_key`) added to ``keys``. The findings
        (:func:`_record_finding`) of those that are not the record their entry committed to
        (:func:`_committed`), in the records' order.

        Every record is located, hashed and compared (every record a verification reads: the
        keys, the look-up and the usual case of one leaf naming the event are done here, a
        record at a time, without a call a step; any other case is :meth:`locate`'s)."""
        located = self.located
        held = self.leaves
        out: list[Discrepancy] = []
        for d in records:
            r = d.record
            key = _key_of(r.originator_id.int, r.version)
            keys.add(key)
            at = located.get(key)
            if type(at) is int:  # one leaf names the event (the usual case)
                index = at >> _AT
                if index in leaves:
                    parsed = held[index][1]
                    position = at & _POSITION
                    # compared from the leaf's columns: its entries are not made
                    if parsed.committed(position, r.topic, stored_sha256(r)):
                        continue
                    found: tuple[int, LeafEntry] | None = (index, parsed.entries[position])
                else:
                    found = None
            else:
                found = self.locate(key, leaves)
            finding = _record_finding(d, stream, found)
            if finding is not None:
                out.append(finding)
        return out


def _committed(r: Record, entry: LeafEntry) -> bool:
    """Whether ``r`` is the record the leaf entry ``entry`` committed to: the same topic and
    the SHA-256 of the same stored bytes."""
    return entry.topic == r.topic and entry.sha256 == stored_digest(r)


def _record_finding(
    d: Decoded, stream: str, found: tuple[int, LeafEntry] | None
) -> Discrepancy | None:
    """What is wrong with the record ``d`` (of the round, its shoe or a wallet) against the
    leaf entry ``found`` for it (None: no leaf holds it); None when it is the bytes its leaf
    committed to."""
    r = d.record
    if found is not None and _committed(r, found[1]):
        return None
    position = d.position if stream == "round" else None
    where = f"{aggregate_of(r.topic, r.originator_id)} version {r.version}"
    if found is None:
        return Discrepancy(
            position,
            d.name,
            "(commit)",
            "a leaf committing to it",
            None,
            None,
            f"{where} is in no leaf of the log: it was recorded outside a sealed "
            "transaction (or its leaf is gone)",
            "commit",
        )
    index, entry = found
    return Discrepancy(
        position,
        d.name,
        "(bytes)",
        entry.sha256,
        stored_digest(r),
        None,
        f"{where}: the stored bytes are not those leaf {index} committed to "
        f"(notification {entry.notification_id}): changed after commit",
        "commit",
    )


def _check_commit(
    b: RoundBundle,
    v: Verdict,
    policy: TrustPolicy,
    key_note: str,
    cache: CommitCache | None = None,
) -> None:
    """Seal at commit: every record of the round (its streams, its shoe, its wallet
    movements) is the one its transaction's leaf committed to, byte for byte; every event the
    round's own transactions committed to is still there; and the leaves are included in one
    checkpoint signed by the operator's key, final when a quorum of witnesses cosigned it.

    With ``cache`` (one verifier's, :class:`CommitCache`), the shoe's records already checked
    for an earlier round are not checked again: their findings are reported again as they
    were, so a round's verdict is the same verified alone or after others of its shoe."""
    ev = b.evidence
    if ev is None:
        return
    if cache is None:
        cache = CommitCache()
    v.checks.append("commit")
    add = v.discrepancies.append
    cache.keep_within(COMMIT_CACHE_BYTES)
    readable, unreadable, keys = cache.parse_all(ev)  # each leaf parsed once
    for index in ev.indexes() if unreadable else ():  # reported in the leaves' order
        error = unreadable.get(index)
        if error is not None:
            add(
                Discrepancy(
                    None,
                    "(merkle log)",
                    f"leaf {index}",
                    "a roundaudit/leaf/v2 leaf",
                    str(error),
                    None,
                    "a leaf of this round's records is unreadable",
                    "commit",
                )
            )
    indexes = set(readable)
    held: set[_Key] = set()
    streams = {b.round_id.int}
    last: UUID | None = None  # a round's records share their stream's id object
    for d in b.round:
        stream_id = d.record.originator_id
        if stream_id is not last:
            streams.add(stream_id.int)
            last = stream_id
    v.discrepancies += cache.check_records(b.round, "round", indexes, held)
    shoe_keys: set[_Key] = set()
    if b.shoe_id is not None and b.shoe:
        checked = cache.shoes.get(b.shoe_id.int)
        if (
            checked is None
            or checked.count > len(b.shoe)
            or (checked.count and b.shoe[checked.count - 1] is not checked.last)
            or not checked.scope <= indexes
            or not checked.excluded.isdisjoint(indexes)
        ):
            checked = cache.shoes[b.shoe_id.int] = _ShoeChecked()
        # only the records not checked yet
        checked.findings += cache.check_records(
            b.shoe[checked.count :], "shoe", indexes, checked.keys
        )
        checked.count, checked.last = len(b.shoe), b.shoe[-1]
        seen = cache.by_stream.get(b.shoe_id.int, set())
        checked.scope |= seen & indexes
        checked.excluded |= seen - indexes
        v.discrepancies.extend(checked.findings)
        shoe_keys = checked.keys
    v.discrepancies += cache.check_records(b.money, "wallet", indexes, held)
    wallets = {wallet_id(p).int for p in b.players()}
    # a transaction's leaf: what it moved in the players' wallets was this round's money
    # (a backfill leaf only lists events recorded before seal-at-commit, of anything)
    backfilled = streams | ({b.shoe_id.int} if b.shoe_id is not None else set())
    committed = backfilled | wallets
    own: set[int] = set()
    for oid in streams:
        own |= cache.by_stream.get(oid, set()) & indexes
    for index in sorted(own):  # the round's own transactions (not its shoe's other rounds)
        parsed = readable[index]
        mine = committed if parsed.kind == COMMIT else backfilled
        v.discrepancies += _deleted_from(parsed, index, mine, held, shoe_keys)
    for problem in ev.problems:
        add(Discrepancy(None, "(merkle log)", "checkpoint", None, None, None, problem, "commit"))
    _check_checkpoint(v, ev, own, policy, key_note, keys)


def _deleted_from(
    parsed: ParsedLeaf, index: int, mine: set[int], held: set[_Key], shoe: set[_Key]
) -> list[Discrepancy]:
    """:func:`_deleted` of every entry of the round's own leaf ``index`` (``parsed``), a run
    of entries at a time (a stream's consecutive versions, :meth:`ParsedLeaf.runs`): one test
    in C that the records hold every event of a run, entry by entry only for a run they do
    not (or a version beyond the integer keys), every entry so for a leaf with an entry in
    no run. The same findings in the same order as :func:`_deleted` of all the entries."""
    runs = parsed.whole_runs()
    if runs is None:  # an entry in no run
        return _deleted(parsed.entries, index, mine, held, shoe)
    out: list[Discrepancy] = []
    at = 0
    for stream_id, first, count, _ in runs:
        oid = stream_id.int
        if oid in mine:
            keys = _run_keys(oid, first, count)
            if keys is None or not (held.issuperset(keys) or shoe.issuperset(keys)):
                out += _deleted(parsed.entries[at : at + count], index, mine, held, shoe)
        at += count
    return out


def _deleted(
    entries: Iterable[LeafEntry], index: int, mine: set[int], held: set[_Key], shoe: set[_Key]
) -> list[Discrepancy]:
    """A finding for each of ``entries`` (of the round's own leaf ``index``) of a stream of
    ``mine`` whose event the round's records (``held``) and its shoe's (``shoe``) do not
    hold: committed with the round, deleted since."""
    out: list[Discrepancy] = []
    for e in entries:
        _, stream_id, version, _, _ = e
        oid = stream_id.int
        if oid not in mine:
            continue
        key = _key_of(oid, version)
        if key not in held and key not in shoe:
            out.append(
                Discrepancy(
                    None,
                    e.topic.rpartition(":")[2],
                    "(commit)",
                    e.sha256,
                    None,
                    None,
                    f"{aggregate_of(e.topic, e.originator_id)} version {e.version} "
                    f"(notification {e.notification_id}) was committed in leaf {index} with "
                    "this round but the records no longer hold it: deleted",
                    "commit",
                )
            )
    return out


def _check_checkpoint(
    v: Verdict,
    ev: CommitEvidence,
    own: set[int],
    policy: TrustPolicy,
    key_note: str,
    keys: dict[int, bytes],
) -> None:
    """The checkpoint's signature and origin, and each leaf of ``ev`` proven in it by its
    inclusion path from its tree hash (``keys``, by index: the tree's hash of the text whose
    parse was checked, or the hash of the text given)."""
    add = v.discrepancies.append
    cp = ev.checkpoint
    if cp is None:
        if own:
            v.notes.append(
                f"the round's leaves {min(own)}..{max(own)} are not yet covered by a checkpoint"
            )
        if policy.witnesses:
            v.final = False
        return
    v.checks.append("checkpoint")
    for index, key in sorted(keys.items()):
        if index >= cp.size:
            if index in own:
                v.notes.append(f"leaf {index} is not yet covered by checkpoint #{cp.number}")
            continue
        path = ev.inclusion.get(index)
        if path is None or not verify_inclusion(index, cp.size, key, path, cp.root):
            add(
                Discrepancy(
                    None,
                    "(merkle log)",
                    "inclusion",
                    cp.root_b64,
                    None,
                    None,
                    f"leaf {index} is not included in checkpoint #{cp.number} (size {cp.size}): "
                    "the log's leaves changed after it was signed",
                    "checkpoint",
                )
            )
    signed = cp.signed_by(policy)
    if signed == "unchecked":
        v.notes.append("checkpoint signature not checked: no operator key pinned")
    elif signed != "valid":
        pinned = policy.operator_for(cp.origin)
        add(
            Discrepancy(
                None,
                "(merkle log)",
                "signature",
                pinned.vkey() if pinned else None,
                [s.name for s in cp.note.signatures] if cp.note else None,
                None,
                f"checkpoint #{cp.number} is not signed by the pinned operator key "
                f"({'a signature fails' if signed == 'invalid' else 'no signature of it'})",
                "checkpoint",
            )
        )
    elif key_note:
        v.notes.append(key_note)
    if policy.origin is not None and cp.origin != policy.origin:
        add(
            Discrepancy(
                None,
                "(merkle log)",
                "origin",
                policy.origin,
                cp.origin,
                None,
                f"checkpoint #{cp.number} is of another log",
                "checkpoint",
            )
        )
    if not policy.witnesses:
        return
    v.checks.append("witness")
    for name in policy.bad_cosigners(cp):
        add(
            Discrepancy(
                None,
                "(merkle log)",
                "cosignature",
                name,
                None,
                None,
                f"checkpoint #{cp.number} carries a cosignature of witness {name} that fails",
                "witness",
            )
        )
    cosigners = policy.cosigners(cp)
    v.final = policy.final(cp) and not any(i >= cp.size for i in own)
    if not v.final:
        v.notes.append(
            f"not final: checkpoint #{cp.number} is cosigned by {len(cosigners)} of the "
            f"{policy.quorum} trusted witnesses required"
            + ("" if cp.size > max(own, default=-1) else "; the round's last leaves are newer")
        )


# ------------------------------------------------------------------------------ one round
def verify_bundle(
    b: RoundBundle,
    *,
    policy: TrustPolicy | None = None,
    key_note: str = "",
    shoe: ShoeFacts | None = None,
    commits: CommitCache | None = None,
) -> Verdict:
    """Every check on one round's evidence (see the module docstring). ``shoe`` and
    ``commits``: what a verifier already knows of the round's shoe and leaves.

    A bundle with deferred records (``replays.bundle.Deferred``: a boundless round's
    consequences, read undecoded) is verified deferring them: re-execution compares each with
    the event it derives, decoding those that differ, and every one not compared equal is
    decoded after it. If one of them does not decode, the round is verified again with every
    record decoded first, so the verdict is the one a bundle without them gets."""
    if b.deferring:
        try:
            return _verify_bundle(b, policy, key_note, shoe, commits)
        except Undecodable:
            b.decode_all()
    return _verify_bundle(b, policy, key_note, shoe, commits)


def _verify_bundle(
    b: RoundBundle,
    policy: TrustPolicy | None,
    key_note: str,
    shoe: ShoeFacts | None,
    commits: CommitCache | None,
) -> Verdict:
    v = Verdict(b.round_text, len(b.round), label=b.label)
    add = v.discrepancies.append
    v.checks.append("storage")
    for d in b.round:
        if d.deferred:
            continue  # decoded, or compared equal, by re-execution (below)
        if type(d) is Deferred and d.cls is not None:
            continue  # decoded to an event of its class (held: ``Deferred.holding``)
        if d.error is not None:
            add(
                Discrepancy(
                    d.position,
                    d.name,
                    "(bytes)",
                    "a readable event",
                    d.error,
                    None,
                    "the stored bytes do not decode",
                    "storage",
                )
            )
    if not b.round:
        add(
            Discrepancy(
                None,
                "(round)",
                "(events)",
                "a round's log",
                None,
                None,
                "the store holds no event of this round",
                "storage",
            )
        )
    # the money check reads every event that moves money (bets, settlements, refunds), which
    # re-execution lets go once it compares them equal to their re-derived events (a boundless
    # round's participations', ``replays.bundle.Deferred.holding``): it is done first, its
    # findings reported in their place, after the shoe's (re-execution changes nothing it reads)
    # the records both checks read, found in one walk (a round that defers nothing: a
    # deferring round's shoe check walks its records again after re-execution, as it reads
    # them then)
    walked = _walk(b.round) if b.started is not None else None
    money = _check_money(b, walked) if walked is not None else []
    b.money_checked()  # what it read of the movements let go, if kept by digest (the commit's)
    if b.deferring:
        walked = None  # its shoe check walks again: nothing held through re-execution for it
    events = b.log_events() if b.deferring else b.events
    if events:
        v.checks.append("reexecution")
        if b.shared:
            _reexecute_shared(b, v, events)
        else:
            v.discrepancies.extend(verify_events(b.round_text, events).discrepancies)
    if b.deferring:
        for d in b.round:  # what re-execution did not compare equal: decoded now
            if type(d) is Deferred and not d.matched and d.error is not None:
                raise Undecodable(d.error)
    if b.started is not None:
        v.checks.append("shoe")
        facts = (
            shoe
            if shoe is not None
            else (shoe_facts(b.shoe_id, b.shoe) if b.shoe_id is not None and b.shoe else None)
        )
        _check_shoe(b, facts, v, walked.cards if walked is not None else None)
        v.checks.append("money")
        v.discrepancies += money
    policy = policy or TrustPolicy()
    public_key = policy.operator.ed25519() if policy.operator is not None else None
    _check_seal(b, v, public_key, key_note)
    _check_commit(b, v, policy, key_note, commits)
    return v


def _reexecute_shared(b: RoundBundle, v: Verdict, events: list[Any]) -> None:
    """A boundless round: the domain's own re-execution (``replays.boundless``: the shared
    hand and every participation, event by event, and D9's hands) of ``events`` (the bundle's,
    deferred records standing for theirs), its findings placed at their positions in the
    merged log."""
    from replays.boundless import verify_log as verify_shared_log

    try:
        found = verify_shared_log(events)
    except Undecodable:
        raise  # a deferred record that does not decode: verify_bundle starts again
    except DroppedState:
        raise  # a record let go once compared equal, read again: StoreVerifier reads again
    except Exception as exc:  # the model's verifier failed: say so, never pass silently
        v.discrepancies.append(
            Discrepancy(
                None,
                "(round)",
                "(reexecution)",
                "a verdict",
                f"{type(exc).__name__}: {exc}",
                None,
                "the boundless round could not be re-executed",
            )
        )
        return
    at: dict[tuple[str, int], Decoded] = {}
    if found.discrepancies:  # where each finding is in the merged log
        owners = b.owners()
        for d in b.round:
            at[(owners[d.record.originator_id], d.version)] = d
    for x in found.discrepancies:
        where = at.get((x.aggregate, x.position)) if x.position is not None else None
        v.discrepancies.append(
            Discrepancy(
                where.position if where is not None else None,
                f"{x.aggregate}: {x.event or (where.name if where is not None else '')}",
                x.field,
                x.expected,
                x.recorded,
                x.rule,
                x.message
                + (f" ({x.aggregate}'s event {x.position})" if x.position is not None else ""),
            )
        )


# ------------------------------------------------------------------------------ a store
@dataclass(frozen=True)
class LogFinding:
    """One failed check of the log as a whole: which check, which aggregate (class and id, or
    the log itself), where (version, notification id, leaf or checkpoint) and what."""

    check: str  # commit, leaves, signature, consistency, rollback, fork, witness
    aggregate: str
    position: str
    message: str

    def line(self) -> str:
        return f"[{self.check}] {self.aggregate} {self.position}: {self.message}"

    def as_json(self) -> Json:
        return {
            "check": self.check,
            "aggregate": self.aggregate,
            "position": self.position,
            "message": self.message,
        }


@dataclass
class LogVerdict:
    """The log as a whole: every stored event in exactly one leaf with its stored bytes, the
    leaves in commit order, every checkpoint signed by the operator and consistent with the
    leaves and with each other, and the log consistent with what the witnesses cosigned."""

    size: int = 0
    checkpoints: int = 0
    events: int = 0
    findings: list[LogFinding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    #: The largest checkpoint cosigned by a quorum of the trusted witnesses (None: none).
    final_size: int | None = None
    #: Findings beyond this many per check are counted, not listed.
    limit: int = 50
    _counts: Counter[str] = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        return not self.findings and not self._counts

    @property
    def failed_checks(self) -> list[str]:
        return sorted({f.check for f in self.findings} | set(self._counts))

    @property
    def problems(self) -> list[str]:
        out = [f.line() for f in self.findings]
        out += [
            f"[{c}] {n} more finding(s) of this check not listed" for c, n in self._counts.items()
        ]
        return out

    def add(self, check: str, aggregate: str, position: str, message: str) -> None:
        if sum(f.check == check for f in self.findings) >= self.limit:
            self._counts[check] += 1
            return
        self.findings.append(LogFinding(check, aggregate, position, message))

    def as_json(self) -> Json:
        return {
            "size": self.size,
            "checkpoints": self.checkpoints,
            "events": self.events,
            "ok": self.ok,
            "checks": self.checks,
            "final_size": self.final_size,
            "failed_checks": self.failed_checks,
            "findings": [f.as_json() for f in self.findings],
            "unlisted": dict(self._counts),
            "problems": self.problems,
            "notes": self.notes,
        }


LOG = "(merkle log)"


def verify_log(
    log: MerkleLog,
    policy: TrustPolicy | None = None,
    *,
    app: RoundAudit | None = None,
    timeout: float = 5.0,
) -> LogVerdict:
    """Check the log as a whole (see :class:`LogVerdict`); with ``app``, also that every event
    of its store is in exactly one leaf with the same bytes, and every leaf's events in the
    store; with witnesses that have a URL, that the log extends what each of them cosigned."""
    policy = policy or TrustPolicy()
    log.refresh()
    out = LogVerdict(size=log.size)
    out.checks.append("leaves")
    for check, position, message in log.findings:  # against what the verifier kept
        out.add(check, LOG, position, message)
    missing = log.missing_leaf_row()
    if missing is not None:
        out.add(
            "leaves",
            LOG,
            f"leaf {missing}",
            "the log's leaf rows are not 1..N: a leaf was removed",
        )
    for index in log.other_leaves():
        out.add(
            "leaves",
            LOG,
            f"leaf {index}",
            "the leaf is neither a transaction's leaf "
            "nor a round leaf of the per-round seal (unreadable or forged)",
        )
    _check_checkpoints(log, policy, out)
    _check_witnesses(log, policy, out, timeout)
    if app is not None:
        out.checks.append("commit")
        _check_coverage(app, log, out)
        if not any(k in ("commit", "backfill") for k in log.kinds) and out.events:
            out.notes.append(
                "no event of this store is in a transaction's leaf: it was written before "
                "seal-at-commit; `roundaudit seal` migrates it once (backfill leaves)"
            )
    return out


def _check_checkpoints(log: MerkleLog, policy: TrustPolicy, out: LogVerdict) -> None:
    """Every stored checkpoint, or with a verifier's state only those it has not checked yet
    (after the last it checked, whose row must still be the same: ``replays.logstate``)."""
    kept = log.kept_checkpoint()
    cps = log.unchecked_checkpoints()
    out.checkpoints = (kept.number if kept is not None else 0) + len(cps)
    out.checks.append("checkpoints")
    if policy.operator is None and out.checkpoints:
        out.notes.append("checkpoint signatures not checked: no operator key pinned")
    out.final_size = kept.final_size if kept is not None else None
    origin = kept.origin if kept is not None else None
    for cp, problems in check_checkpoints(log, policy, cps, previous=kept, origin=origin):
        for check, message in problems:
            out.add(check, LOG, f"checkpoint #{cp.number}", message)
        if cp.error is None and cp.note is not None and cp.size <= log.size and policy.final(cp):
            out.final_size = max(out.final_size or 0, cp.size)
    if policy.witnesses and out.final_size is None:
        out.notes.append("no stored checkpoint is cosigned by the witnesses' quorum")


def _check_witnesses(log: MerkleLog, policy: TrustPolicy, out: LogVerdict, timeout: float) -> None:
    """Ask each witness with a URL for the last checkpoint it cosigned: the log must hold that
    tree (a larger one is a rollback; another root at that size, a fork)."""
    from replays.note import NoteError
    from replays.witness import fetch_checkpoint

    online = [w for w in policy.witnesses if w.url]
    if not online:
        return
    out.checks.append("witness")
    origin = policy.origin or log.latest_origin()
    if origin is None:
        out.notes.append("no C2SP checkpoint and no origin given: the witnesses were not asked")
        return
    for w in online:
        assert w.url is not None
        where = f"witness {w.name}"
        try:
            note = fetch_checkpoint(w.url, origin, timeout=timeout)
        except (OSError, NoteError) as exc:
            out.add("witness", LOG, where, f"could not be asked at {w.url} ({exc})")
            continue
        if note is None:
            out.notes.append(f"witness {w.name} has cosigned no checkpoint of {origin}")
            continue
        try:
            cp = StoredCheckpoint.from_note(0, note)
        except (NoteError, ValueError) as exc:
            out.add("witness", LOG, where, f"answered what is not a checkpoint ({exc})")
            continue
        if verify(note, w.key) != "valid":
            out.add("witness", LOG, where, "its checkpoint does not carry its valid cosignature")
            continue
        if policy.operator is not None and cp.signed_by(policy) != "valid":
            out.add(
                "witness", LOG, where, "its checkpoint is not signed by the pinned operator key"
            )
            continue
        if cp.size > log.size:
            out.add(
                "rollback",
                LOG,
                where,
                f"it cosigned a tree of {cp.size} leaves (root "
                f"{cp.root_b64}); the log holds {log.size}: the log was cut back after it",
            )
        elif log.tree.root(cp.size) != cp.root:
            out.add(
                "fork",
                LOG,
                where,
                f"it cosigned root {cp.root_b64} at size {cp.size}; the "
                f"log's tree at that size is {base64.b64encode(log.tree.root(cp.size)).decode()}"
                ": the log was rewritten after it",
            )
        else:
            out.notes.append(f"witness {w.name} cosigned size {cp.size}: the log extends it")


def _notifications(app: RoundAudit) -> Iterator[Any]:
    position = 0
    while True:
        page = app.recorder.select_notifications(
            start=position, limit=1000, inclusive_of_start=False
        )
        if not page:
            return
        yield from page
        position = page[-1].id


def _check_coverage(app: RoundAudit, log: MerkleLog, out: LogVerdict) -> None:
    """Every stored event is in exactly one leaf, with the notification id, topic and SHA-256
    of its stored bytes the leaf says, and the leaves list events in commit order."""
    stored = _notifications(app)
    listed = log.iter_entries()
    n = next(stored, None)
    item = next(listed, None)
    last = 0
    while n is not None or item is not None:
        if item is not None:
            index, e = item
            if e.notification_id <= last:
                out.add(
                    "commit",
                    aggregate_of(e.topic, e.originator_id),
                    f"leaf {index}",
                    f"lists notification {e.notification_id} after {last}: the leaves are "
                    "not in commit order",
                )
                item = next(listed, None)
                continue
        if n is not None and (item is None or n.id < item[1].notification_id):
            oid = originator_uuid(n)
            out.events += 1
            out.add(
                "commit",
                aggregate_of(n.topic, oid),
                f"version {n.originator_version}, notification {n.id}",
                "in no leaf of the log: recorded outside a sealed transaction",
            )
            n = next(stored, None)
            continue
        assert item is not None
        index, e = item
        last = e.notification_id
        where = f"version {e.version}, notification {e.notification_id}, leaf {index}"
        if n is None or n.id > e.notification_id:
            out.add(
                "commit",
                aggregate_of(e.topic, e.originator_id),
                where,
                "committed in the leaf but no longer in the store: deleted",
            )
        else:
            out.events += 1
            oid = originator_uuid(n)
            if (oid, n.originator_version) != e.key:
                out.add(
                    "commit",
                    aggregate_of(e.topic, e.originator_id),
                    where,
                    f"the store holds {aggregate_of(n.topic, oid)} version "
                    f"{n.originator_version} at this notification instead",
                )
            elif n.topic != e.topic:
                out.add(
                    "commit",
                    aggregate_of(e.topic, e.originator_id),
                    where,
                    f"the stored topic is {n.topic}, not the {e.topic} the leaf committed to: "
                    "changed after commit",
                )
            elif state_digest(n.state) != e.sha256:
                out.add(
                    "commit",
                    aggregate_of(e.topic, e.originator_id),
                    where,
                    "the stored bytes are not those the leaf committed to: changed after commit",
                )
            n = next(stored, None)
        item = next(listed, None)


def parse_when(text: str, *, end: bool = False) -> datetime:
    """A date or date-time (ISO 8601; UTC when no offset). A bare date as an upper bound means
    the end of that day."""
    from datetime import UTC, timedelta

    value = datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    if end and len(text) == 10:
        value += timedelta(days=1)
    return value


#: Rounds read together by :meth:`StoreVerifier.verify_many`.
AHEAD = 100


class StoreVerifier:
    """Verify rounds of a store; shoes and wallets are read once and kept up to date."""

    def __init__(
        self,
        app: RoundAudit,
        *,
        policy: TrustPolicy | None = None,
        log: MerkleLog | None = None,
        state: str | os.PathLike[str] | None = None,
        reread: bool = False,
        later: Callable[[], MerkleLog] | None = None,
        deferred: bool = False,
    ) -> None:
        """``log``: a long-lived log of the same store to bring up to date and use (the web
        service keeps one), instead of reading the whole log again. ``state``: the verifier's
        own state file of this store's log (``replays.logstate``; created when missing): the
        log is read from it and only its new leaves from the store, and it is saved again;
        with ``reread`` the whole log is read anyway and checked against it (a whole-store
        verification). Without either, the whole log is read once. ``later``: the log is
        another's, still on its way (a fan-out's worker, ``replays.distributed``): called once,
        when the log is first needed (after :meth:`verify_many`'s first read-ahead, which
        needs none; before anything else), it gives the log, used as it is (not refreshed).
        ``deferred``: the log (from ``log``, ``state`` or the store, as without it) is read only
        then too (a fan-out's driver, ``replays.distributed.verify_store``: it lists the
        store's rounds, :meth:`store_round_ids`, and sends them out first)."""
        self.app = app
        self.policy = policy or TrustPolicy()
        if sum(x is not None for x in (log, state, later)) > 1:
            raise ValueError("a verifier takes a long-lived log, a state file or a later log")

        def read_log() -> MerkleLog:
            if state is not None:
                from replays.logstate import open_log

                return open_log(
                    app, state, origin=self.policy.origin, reread=reread, policy=self.policy
                )
            return (log or MerkleLog(app)).refresh()

        if deferred and later is None:
            later = read_log
        self._later = later
        read: MerkleLog | None = None  # the reader's log: none yet when it is to come
        if later is None:
            self.log = read = read_log()
        self.reader = StoreReader(app, log=read, policy=self.policy, defer=True)
        self._shoes: dict[UUID, tuple[int, ShoeFacts]] = {}
        self._commits = CommitCache()

    def _arrived(self, read_ahead: Sequence[UUID] = ()) -> None:
        """The ``later`` log, now: taken and given to the reader, with the legacy seals of the
        rounds ``read_ahead`` (read by the reader without a log) held as its read-ahead holds
        them (``MerkleLog.hold_seals``: the same records, one query)."""
        later, self._later = self._later, None
        if later is None:
            return
        self.log = self.reader.log = later()
        if read_ahead:
            self.log.hold_seals(list(dict.fromkeys(read_ahead)), self.reader._select_many)

    def verify(self, round_id: UUID) -> Verdict:
        self._arrived()
        if not self.reader.is_ahead(round_id) and self.app.boundless.owns(round_id):
            # no automatic collection while the round's records are read and verified: they
            # are hundreds of thousands of objects, all alive until the verdict, which the
            # full collections walked again and again (a fifth of the CPU at 3,000 players;
            # reading makes no cycle, verifying a handful): domain.collector
            # and its records decoded on reading are kept by their bytes' digest, not the
            # bytes (``replays.bundle.Digested``: the commit check reads nothing else of
            # them), and so are its deferred records once compared equal to their re-derived
            # events; a
            # check that reads one of those again (only when the round fails: a finding's
            # owner, a failing aggregate rebuilt) raises ``DroppedState``, and the round is
            # read again and verified keeping every record's bytes
            with paused():
                try:
                    return self._verify(self.reader.round_bundle(round_id, digest=True))
                except DroppedState:
                    pass
                return self._verify(self.reader.round_bundle(round_id))
        return self._verify(self.reader.round_bundle(round_id))

    def _verify(self, b: RoundBundle) -> Verdict:
        facts = None
        if b.shoe_id is not None and b.shoe:
            # one entry per shoe, the facts of its stream as long as it was read (a live shoe
            # grows): O(1) per round however many shoes the store holds
            known = self._shoes.get(b.shoe_id)
            if known is None or known[0] != len(b.shoe):
                known = self._shoes[b.shoe_id] = (len(b.shoe), shoe_facts(b.shoe_id, b.shoe))
            facts = known[1]
        return verify_bundle(b, policy=self.policy, shoe=facts, commits=self._commits)

    def round_ids(
        self, *, since: datetime | None = None, until: datetime | None = None
    ) -> list[UUID]:
        """Every round the store or the log knows, in order of first appearance; with a date
        range, the rounds started in [since, until) (a round whose start is unknown, e.g. its
        Started record was deleted, is always included): the store's
        (:meth:`store_round_ids`), then the log's only (:meth:`log_round_ids`)."""
        listed, seen = self.store_round_ids(since=since, until=until)
        return [*listed, *self.log_round_ids(seen)]

    def log_round_ids(self, seen: Container[UUID]) -> list[UUID]:
        """The rounds the log knows that are not in ``seen`` (every round the store's list
        met, filtered out or not: :meth:`store_round_ids`), in the log's order: a round whose
        records were deleted. Reads the log when it is still to come."""
        self._arrived()
        return [rid for rid in dict.fromkeys(self.log.round_ids()) if rid not in seen]

    def store_round_ids(
        self, *, since: datetime | None = None, until: datetime | None = None
    ) -> tuple[list[UUID], Container[UUID]]:
        """The rounds the store holds records of, in order of first appearance (with a date
        range, those started in [since, until), or whose start is unknown), and every round
        met (also those the range left out); no log needed (a ``deferred`` verifier's stays
        to come)."""
        seen: dict[UUID, datetime | None] = {}
        ids = None
        if since is None and until is None:
            # no date to read: the ids alone, in the order of their first record, from one
            # query on SQLite and PostgreSQL (the same list the walk below gives)
            ids = self.reader.first_appearances((*ROUND_TOPICS, *SHARED_STARTS))
            if ids is not None:
                seen = dict.fromkeys(ids)
        position = 0
        recorder = self.app.recorder
        started = get_topic(Round.Started)
        while ids is None:
            page = recorder.select_notifications(
                start=position,
                limit=1000,
                topics=(*ROUND_TOPICS, *SHARED_STARTS),
                inclusive_of_start=False,
            )
            if not page:
                break
            for n in page:
                position = n.id
                oid = originator_uuid(n)
                if oid in seen and seen[oid] is not None:
                    continue
                when = None
                first = n.originator_version == 1 and n.topic in (started, *SHARED_STARTS)
                if first and (since or until):
                    try:
                        stamp = orjson.loads(n.state)["timestamp"]["_data_"]
                        when = datetime.fromisoformat(stamp)
                    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                        when = None
                seen.setdefault(oid, when)
                if when is not None:
                    seen[oid] = when
        out = []
        for rid, when in seen.items():
            if when is not None:
                if since is not None and when < since:
                    continue
                if until is not None and when >= until:
                    continue
            out.append(rid)
        return out, seen

    def verify_many(
        self, round_ids: Sequence[UUID], *, on_verdict: Callable[[Verdict], None] | None = None
    ) -> Iterator[Verdict]:
        """Verify ``round_ids`` in turn, reading them ``AHEAD`` rounds at a time
        (``StoreReader.read_ahead``: their records, shoes and wallets in a few queries, the
        same records each round's own reads would give on a store not written meanwhile);
        each round is then verified exactly as :meth:`verify` does. A batch is verified whole
        with automatic garbage collection held off (``domain.collector.paused``), then its
        verdicts are handed over in order (``on_verdict``, then yielded), the collector as it
        was; an error verifying a round is raised after the verdicts of the batch before it.
        A verifier whose log comes ``later`` reads its first batch ahead before it waits for
        the log."""
        ids = list(round_ids)
        try:
            for at in range(0, len(ids), AHEAD):
                chunk = ids[at : at + AHEAD]
                done: list[Verdict] = []
                failure: Exception | None = None
                # no automatic collection while a batch is read and verified: its records are
                # tens of thousands of objects alive until the batch ends, which collections
                # triggered by the allocations walked again and again (domain.collector)
                with paused():
                    self.reader.read_ahead(chunk)
                    # a later log is waited for only now: the first batch was read meanwhile
                    self._arrived(chunk)
                    try:
                        for rid in chunk:
                            done.append(self.verify(rid))
                    except Exception as exc:  # raised after the verdicts before it
                        failure = exc
                for verdict in done:  # handed over with the collector as it was
                    if on_verdict is not None:
                        on_verdict(verdict)
                    yield verdict
                if failure is not None:
                    raise failure
        finally:
            self.reader.read_ahead(())


def round_id_of(text: str) -> UUID:
    """A round id from a UUID, or from ``TABLE#NUMBER`` (the deterministic id of that round)."""
    if "#" in text:
        table, _, number = text.rpartition("#")
        return Round.create_id(table, int(number))
    return UUID(text)


# ------------------------------------------------------------------------------ reports
def _show(value: Any) -> str:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, str):
        return repr(value)
    return orjson.dumps(value, default=str).decode()


def verdict_lines(v: Verdict, *, verbose: bool = False) -> list[str]:
    """A verdict as readable text: one line for the round, one per discrepancy."""
    status = "ok" if v.ok else "FAIL"
    head = f"{status} {v.round_id} {v.label} ({v.events} events"
    head += ")" if v.ok else f", {len(v.discrepancies)} discrepancies)"
    out = [head]
    for d in v.discrepancies:
        where = f"position {d.position}" if d.position is not None else "round"
        fld = f".{d.field}" if not d.field.startswith("(") else f" {d.field}"
        rule = f" [rule {d.rule}]" if d.rule else ""
        out.append(
            f"  [{d.check}] {where} {d.event}{fld}: expected {_show(d.expected)}, recorded "
            f"{_show(d.recorded)}{rule}: {d.message}"
        )
    if verbose or not v.ok:
        out += [f"  note: {n}" for n in dict.fromkeys(v.notes)]
    return out


def summary_line(
    passed: int, failed: int, *, not_final: int = 0, log: LogVerdict | None = None
) -> str:
    """The last line of ``roundaudit verify``: rounds passed and failed, how many of the passed
    are not final yet (with a witness policy), and the checks the log failed, if any.

    >>> summary_line(3, 0)
    '3 passed, 0 failed'
    >>> failed = LogVerdict(findings=[LogFinding("rollback", "", "", "")])
    >>> summary_line(2, 1, not_final=1, log=failed)
    '2 passed, 1 failed, 1 not final; the log failed: rollback'
    """
    line = f"{passed} passed, {failed} failed"
    if not_final:
        line += f", {not_final} not final"
    if log is not None and not log.ok:
        line += f"; the log failed: {', '.join(log.failed_checks)}"
    return line


def public_key_from(text: str | None) -> Ed25519PublicKey | None:
    return parse_public_key(text) if text else None


__all__ = [
    "LogFinding",
    "LogVerdict",
    "ShoeFacts",
    "StoreVerifier",
    "aggregate_of",
    "expected_movements",
    "parse_when",
    "public_key_from",
    "round_id_of",
    "shoe_facts",
    "summary_line",
    "verdict_lines",
    "verify_bundle",
    "verify_log",
]
