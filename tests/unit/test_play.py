"""domain/game/play.py, exhaustively: DEALER-1 over every hand, can_double / can_split /
can_surrender per variant against the "Variant parameters" table, the option lists, HAND-1,
AUTO-1, FUNDS-2 and the OUT-1..4 outcome table. The expectations are computed by an
independent reading of RULES.md in this file, never by domain.scoring."""

from __future__ import annotations

import itertools

import pytest

from domain.cards import RANKS, Card
from domain.game import play
from domain.game.play import HandFacts
from domain.money import Ratio
from domain.rules import VARIANTS, get_rules

RANK_VALUES = {r: (1 if r == "A" else 10 if r in ("J", "Q", "K") else int(r)) for r in RANKS}
TEN_VALUES = ("10", "J", "Q", "K")


def cards(*ranks: str, suit: str = "S") -> tuple[Card, ...]:
    return tuple(Card(r, suit) for r in ranks)


def ref_total(ranks) -> tuple[int, bool]:
    """SCORE-1 read independently: (best total, soft)."""
    hard = sum(RANK_VALUES[r] for r in ranks)
    if "A" in ranks and hard + 10 <= 21:
        return hard + 10, True
    return hard, False


def ref_blackjack(ranks, split=False) -> bool:
    return not split and len(ranks) == 2 and "A" in ranks and any(r in TEN_VALUES for r in ranks)


# ------------------------------------------------------------------------------ DEALER-1
def _dealer_hands(max_cards: int = 5):
    seen = set()
    for n in range(2, max_cards + 1):
        for combo in itertools.combinations_with_replacement(RANKS, n):
            key = tuple(sorted(RANK_VALUES[r] for r in combo))
            if key in seen:
                continue
            seen.add(key)
            yield combo


DEALER_HANDS = list(_dealer_hands())


def test_dealer_1_must_draw_over_every_hand_of_up_to_five_cards():
    assert len(DEALER_HANDS) > 1000
    for ranks in DEALER_HANDS:
        total, _ = ref_total(ranks)
        assert play.dealer_must_draw(cards(*ranks)) is (total <= 16), ranks


@pytest.mark.parametrize("total", range(4, 17))
def test_dealer_1_hits_every_hard_total_16_or_less(total):
    a = min(total - 2, 10)
    b = total - a
    assert play.dealer_must_draw(cards(str(a) if a > 1 else "A", str(b)))


@pytest.mark.parametrize(
    ("ranks", "draws"),
    [
        (("A", "6"), False),  # soft 17 stands
        (("A", "2", "4"), False),  # soft 17 with three cards
        (("A", "A", "5"), False),  # soft 17
        (("A", "5"), True),  # soft 16
        (("A", "A"), True),  # soft 12
        (("A", "6", "10"), False),  # hard 17
        (("A", "7"), False),
        (("10", "7"), False),
        (("10", "6"), True),
        (("10", "6", "K"), False),  # bust: no more cards
        (("A", "10"), False),  # BJ
    ],
)
def test_dealer_1_soft_totals(ranks, draws):
    total, _ = ref_total(ranks)
    assert play.dealer_must_draw(cards(*ranks)) is draws is (total <= 16)


# ----------------------------------------------------------------------- reference table
def ref_can_double(variant, ranks, *, is_split=False, split_aces=False, actions=0) -> bool:
    if len(ranks) != 2 or actions:
        return False
    if split_aces:  # every variant: split aces never double (one card each, or D7)
        return False
    if ref_blackjack(ranks, is_split):
        return False
    if variant == "european":  # D13
        hard = sum(RANK_VALUES[r] for r in ranks)
        _, soft = ref_total(ranks)
        return not soft and 9 <= hard <= 11
    return True  # any two cards, also after split


def ref_can_split(variant, ranks, *, is_split=False, actions=0) -> bool:
    if len(ranks) != 2 or is_split or actions:
        return False
    a, b = (RANK_VALUES[r] for r in ranks)
    if a != b:
        return False
    return not (variant == "european" and a in (4, 5, 10))


def ref_can_surrender(variant, ranks, up, *, is_split=False, actions=0) -> bool:
    if variant in ("multihand", "lucky7") or is_split or actions or len(ranks) != 2:
        return False
    if variant == "european":
        return up != "A" and not ref_blackjack(ranks)
    return up != "A" and up not in TEN_VALUES


PAIRS = list(itertools.combinations_with_replacement(RANKS, 2))


@pytest.mark.parametrize("variant", VARIANTS)
def test_can_double_every_first_two_cards(variant):
    rules = get_rules(variant)
    for ranks in PAIRS:
        for is_split, split_aces, actions in [
            (False, False, 0), (True, False, 0), (True, True, 0), (False, False, 1),
            (True, False, 1),
        ]:  # fmt: skip
            if split_aces and "A" not in ranks:
                continue
            facts = HandFacts(cards(*ranks), is_split, split_aces, actions)
            expected = ref_can_double(
                variant, ranks, is_split=is_split, split_aces=split_aces, actions=actions
            )
            assert play.can_double(facts, rules) is expected, (ranks, is_split, actions)


@pytest.mark.parametrize("variant", VARIANTS)
def test_can_double_never_on_three_cards(variant):
    rules = get_rules(variant)
    for combo in itertools.combinations_with_replacement(RANKS, 3):
        assert not play.can_double(HandFacts(cards(*combo)), rules)


def test_d13_european_double_table():
    rules = get_rules("european")
    allowed = sorted(
        {tuple(sorted(p)) for p in PAIRS if play.can_double(HandFacts(cards(*p)), rules)}
    )
    hard_9_11 = sorted(
        tuple(sorted(p))
        for p in PAIRS
        if "A" not in p and 9 <= RANK_VALUES[p[0]] + RANK_VALUES[p[1]] <= 11
    )
    assert allowed == hard_9_11
    assert not play.can_double(HandFacts(cards("A", "8")), rules)  # soft 19
    assert not play.can_double(HandFacts(cards("A", "9")), rules)
    assert not play.can_double(HandFacts(cards("A", "10")), rules)  # BJ


@pytest.mark.parametrize("variant", VARIANTS)
def test_can_split_every_first_two_cards(variant):
    rules = get_rules(variant)
    for ranks in PAIRS:
        for is_split, actions in [(False, 0), (True, 0), (False, 1)]:
            facts = HandFacts(cards(*ranks), is_split, is_split and ranks[0] == "A", actions)
            expected = ref_can_split(variant, ranks, is_split=is_split, actions=actions)
            assert play.can_split(facts, rules) is expected, (ranks, is_split, actions)


@pytest.mark.parametrize("variant", VARIANTS)
def test_split_ten_values_of_different_faces(variant):
    ok = variant != "european"  # D6 multihand; deluxe/lucky7/boundless: equal value
    assert play.can_split(HandFacts(cards("J", "Q")), get_rules(variant)) is ok
    assert play.can_split(HandFacts(cards("10", "K")), get_rules(variant)) is ok


@pytest.mark.parametrize("variant", VARIANTS)
def test_can_surrender_every_hand_and_upcard(variant):
    rules = get_rules(variant)
    for ranks in PAIRS:
        for up in RANKS:
            dealer = (Card(up, "H"), Card("5", "C"))
            if rules.upcard_index == 1:
                dealer = (Card("5", "C"), Card(up, "H"))
            for is_split, actions in [(False, 0), (True, 0), (False, 1)]:
                facts = HandFacts(cards(*ranks), is_split, False, actions)
                expected = ref_can_surrender(variant, ranks, up, is_split=is_split, actions=actions)
                assert play.can_surrender(facts, dealer, rules) is expected, (ranks, up)


@pytest.mark.parametrize("variant", VARIANTS)
def test_can_surrender_needs_an_upcard(variant):
    rules = get_rules(variant)
    assert not play.can_surrender(HandFacts(cards("10", "6")), (), rules)


def test_can_surrender_never_on_three_cards():
    for variant in ("deluxe", "european", "boundless"):
        assert not play.can_surrender(
            HandFacts(cards("2", "3", "4")), cards("9", "5"), get_rules(variant)
        )


@pytest.mark.parametrize("variant", VARIANTS)
def test_upcard_per_variant(variant):
    rules = get_rules(variant)
    dealer = cards("9", "K")
    expected = "K" if variant == "lucky7" else "9"
    assert play.upcard(dealer, rules).rank == expected
    assert play.upcard((), rules) is None
    assert (play.upcard(cards("9"), rules) is None) is (variant == "lucky7")


# ------------------------------------------------------------------------ option lists
@pytest.mark.parametrize("variant", VARIANTS)
def test_play_options_are_the_union_of_the_rules_in_a_stable_order(variant):
    rules = get_rules(variant)
    for ranks in PAIRS:
        for up in ("5", "10", "A"):
            dealer = (Card(up, "H"), Card("5", "C"))
            if rules.upcard_index == 1:
                dealer = (Card("5", "C"), Card(up, "H"))
            facts = HandFacts(cards(*ranks))
            total, _ = ref_total(ranks)
            expected = [
                *(["hit"] if total < 21 else []),
                "stand",
                *(["double"] if ref_can_double(variant, ranks) else []),
                *(["split"] if ref_can_split(variant, ranks) else []),
                *(["surrender"] if ref_can_surrender(variant, ranks, up) else []),
            ]
            assert play.play_options(facts, dealer, rules) == expected, (ranks, up)


@pytest.mark.parametrize("variant", VARIANTS)
def test_split_aces_may_hit_only_in_multihand_d7(variant):
    rules = get_rules(variant)
    facts = HandFacts(cards("A", "5"), is_split=True, split_aces=True)
    assert play.can_hit(facts, rules) is (variant == "multihand")
    assert not play.can_double(facts, rules)


@pytest.mark.parametrize(
    ("variant", "with_bj", "without_bj"),
    [
        ("deluxe", ["insurance", "no_insurance"], ["insurance", "no_insurance"]),
        ("multihand", ["even_money", "insurance", "no_insurance"], ["insurance", "no_insurance"]),
        ("lucky7", ["even_money", "no_insurance"], ["insurance", "no_insurance"]),
        ("european", ["even_money", "no_insurance"], ["insurance", "no_insurance"]),
        ("boundless", ["insurance", "no_insurance"], ["insurance", "no_insurance"]),
    ],
)
def test_window_options_per_variant_ins_1_even_1_d16(variant, with_bj, without_bj):
    rules = get_rules(variant)
    assert play.window_options(HandFacts(cards("A", "K")), rules) == with_bj
    assert play.window_options(HandFacts(cards("10", "9")), rules) == without_bj


# ------------------------------------------------------------------- HAND-1, AUTO, FUNDS
@pytest.mark.parametrize("variant", VARIANTS)
def test_hand_1_stands_automatically(variant):
    rules = get_rules(variant)
    f = play.stands_automatically
    assert f(HandFacts(cards("A", "K")), rules, doubled=False) == "blackjack"
    assert f(HandFacts(cards("A", "K"), is_split=True), rules, doubled=False) == "21"
    assert f(HandFacts(cards("7", "7", "7")), rules, doubled=False) == "21"
    assert f(HandFacts(cards("10", "6", "9")), rules, doubled=False) == "bust"
    assert f(HandFacts(cards("5", "6", "2")), rules, doubled=True) == "double"
    assert f(HandFacts(cards("5", "6")), rules, doubled=True) is None  # the card is owed
    assert f(HandFacts(cards("10", "6")), rules, doubled=False) is None
    aces = HandFacts(cards("A", "5"), is_split=True, split_aces=True)
    assert f(aces, rules, doubled=False) == (None if variant == "multihand" else "split_ace")
    assert f(HandFacts(cards("A"), is_split=True, split_aces=True), rules, doubled=False) is None


def test_auto_1_hits_while_11_or_less_every_hand():
    for ranks in DEALER_HANDS:
        total, _ = ref_total(ranks)
        expected = "hit" if total <= 11 else "stand"
        assert play.auto_play_action(cards(*ranks)) == expected, ranks
        assert play.funds_fallback(cards(*ranks)) == expected, ranks


@pytest.mark.parametrize(
    ("ranks", "action"),
    [(("A", "5"), "stand"), (("5", "6"), "hit"), (("A", "A"), "stand"), (("2", "3"), "hit"),
     (("6", "6"), "stand"), (("5", "6", "A"), "stand"), (("A", "A", "9"), "stand")],
)  # fmt: skip
def test_auto_1_aces_count_eleven_unless_that_busts(ranks, action):
    assert play.auto_play_action(cards(*ranks)) == action


# ------------------------------------------------------------------------- OUT-1..4
PLAYER_CASES = {
    "bj": HandFacts(cards("A", "K")),
    "split21": HandFacts(cards("A", "K"), is_split=True),
    "21x3": HandFacts(cards("7", "7", "7")),
    "20": HandFacts(cards("10", "Q")),
    "17": HandFacts(cards("10", "7")),
    "bust": HandFacts(cards("10", "6", "K")),
}
DEALER_CASES = {
    "bj": cards("A", "Q"),
    "21x3": cards("6", "5", "10"),
    "20": cards("10", "K"),
    "17": cards("A", "6"),
    "bust": cards("10", "6", "9"),
}
# (player, dealer) -> (result, ratio, rule)
OUTCOMES = {
    ("bj", "bj"): ("push", Ratio(0, 1), "OUT-1"),
    ("bj", "21x3"): ("blackjack", Ratio(3, 2), "OUT-1"),
    ("bj", "20"): ("blackjack", Ratio(3, 2), "OUT-1"),
    ("bj", "17"): ("blackjack", Ratio(3, 2), "OUT-1"),
    ("bj", "bust"): ("blackjack", Ratio(3, 2), "OUT-1"),
    ("split21", "bj"): ("lose", None, "OUT-1"),
    ("split21", "21x3"): ("push", Ratio(0, 1), "OUT-4"),
    ("split21", "20"): ("win", Ratio(1, 1), "OUT-2"),
    ("split21", "17"): ("win", Ratio(1, 1), "OUT-2"),
    ("split21", "bust"): ("win", Ratio(1, 1), "OUT-2"),
    ("21x3", "bj"): ("lose", None, "OUT-1"),
    ("21x3", "21x3"): ("push", Ratio(0, 1), "OUT-4"),
    ("21x3", "20"): ("win", Ratio(1, 1), "OUT-2"),
    ("21x3", "17"): ("win", Ratio(1, 1), "OUT-2"),
    ("21x3", "bust"): ("win", Ratio(1, 1), "OUT-2"),
    ("20", "bj"): ("lose", None, "OUT-1"),
    ("20", "21x3"): ("lose", None, "OUT-3"),
    ("20", "20"): ("push", Ratio(0, 1), "OUT-4"),
    ("20", "17"): ("win", Ratio(1, 1), "OUT-2"),
    ("20", "bust"): ("win", Ratio(1, 1), "OUT-2"),
    ("17", "bj"): ("lose", None, "OUT-1"),
    ("17", "21x3"): ("lose", None, "OUT-3"),
    ("17", "20"): ("lose", None, "OUT-3"),
    ("17", "17"): ("push", Ratio(0, 1), "OUT-4"),
    ("17", "bust"): ("win", Ratio(1, 1), "OUT-2"),
    ("bust", "bj"): ("lose", None, "OUT-3"),
    ("bust", "21x3"): ("lose", None, "OUT-3"),
    ("bust", "20"): ("lose", None, "OUT-3"),
    ("bust", "17"): ("lose", None, "OUT-3"),
    ("bust", "bust"): ("lose", None, "OUT-3"),
}


@pytest.mark.parametrize(("player", "dealer"), list(OUTCOMES))
def test_out_main_outcome_table(player, dealer):
    rules = get_rules("deluxe")
    out = play.main_outcome(
        PLAYER_CASES[player],
        surrendered=False,
        dealer=DEALER_CASES[dealer],
        dealer_blackjack=dealer == "bj",
        rules=rules,
    )
    assert (out.result, out.ratio, out.rule) == OUTCOMES[(player, dealer)]
    assert out.returns_stake is (out.result in ("blackjack", "win", "push"))


def test_out_main_outcome_every_total_against_every_dealer_total():
    rules = get_rules("multihand")
    player_hands = [cards("10", r) for r in ("2", "6", "7", "8", "9", "K")]
    for p_cards in player_hands:
        for d_cards in DEALER_HANDS:
            d_total, _ = ref_total(d_cards)
            if d_total < 17:
                continue
            p_total, _ = ref_total([c.rank for c in p_cards])
            d_bj = ref_blackjack(d_cards)
            out = play.main_outcome(
                HandFacts(p_cards), surrendered=False, dealer=cards(*d_cards),
                dealer_blackjack=d_bj, rules=rules,
            )  # fmt: skip
            if d_bj:
                expected = "lose"
            elif d_total > 21 or p_total > d_total:
                expected = "win"
            elif p_total < d_total:
                expected = "lose"
            else:
                expected = "push"
            assert out.result == expected, (p_cards, d_cards)


def test_surr_1_main_outcome_surrender():
    out = play.main_outcome(
        HandFacts(cards("10", "6")), surrendered=True, dealer=cards("9", "8"),
        dealer_blackjack=False, rules=get_rules("deluxe"),
    )  # fmt: skip
    assert (out.result, out.ratio, out.rule, out.returns_stake) == (
        "surrender", None, "SURR-1", False
    )  # fmt: skip


def test_out_1_blackjack_pays_the_rules_ratio():
    for variant in VARIANTS:
        rules = get_rules(variant)
        out = play.main_outcome(
            HandFacts(cards("A", "J")), surrendered=False, dealer=cards("9", "8"),
            dealer_blackjack=False, rules=rules,
        )  # fmt: skip
        assert out.ratio == rules.blackjack_pays == Ratio(3, 2)
