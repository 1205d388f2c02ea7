"""The investigation page in a real browser (headless Chromium) against a real service process.

For a simulated round of each variant the page loads, steps from the first event to the last
(keyboard) and back (buttons), and at every step shows the event, rule and actor the round's
recorded events say, the card each routing event put on a hand with the hand's total, a card
back for a face-down dealer card; at the last step every wager's payout and each player's
net. Expectations come from the round's export (its stored events), never from constants.
The three classic complaints are played on test shoes through the HTTP API and must read at a
glance. A player key sees its own round and is refused another's. Screenshots of each variant's
last step (and of each complaint) are written to ``artifacts/screenshots/``.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from uikit import VARIANTS, Service

from domain.boundless.participation import participation_id
from domain.round import Round

Json = dict[str, Any]
NINE_UP = ["5H", "10C", "9S", "3C", "8C", "7D", "2D", "9C", "10H", "10D"]
"""multihand, two boxes: box 1 5+3 = 8, box 2 10+8 = 18, dealer 9 up (7 in the hole)."""
FUNDS_ORDER = ["5H", "9C", "6S", "7D", "KH", "2D", "3C", "4D", "8S"]
"""deluxe, one seat: 5+6 = 11, dealer 9 up (7 in the hole); the double's card KH."""

SNAPSHOT = """
const step = document.querySelector('#step-now article');
const badge = step ? step.querySelector('.badge') : null;
const cards = (root) => [...root.querySelectorAll('img.card')].map((i) => i.dataset.card);
const shared = document.querySelector('#felt .shared .cards');
return {
  count: document.getElementById('step-count').textContent,
  position: step ? Number(step.dataset.position) : null,
  event: step ? step.dataset.event : null,
  rule: step ? step.dataset.rule : null,
  actor: badge
    ? {kind: badge.dataset.actorKind, id: badge.dataset.actorId, key: badge.dataset.actorKey}
    : null,
  ruleLinks: step ? [...step.querySelectorAll('a.rule')].map((a) => a.dataset.rule) : [],
  dealer: cards(document.querySelector('#felt .dealer')),
  shared: shared ? cards(shared) : [],
  hands: [...document.querySelectorAll('#felt .hand')].map((h) => ({
    hand: h.dataset.hand, player: h.dataset.player, total: h.dataset.total, cards: cards(h)})),
  current: [...document.querySelectorAll('#timeline li.current')]
    .map((li) => Number(li.dataset.position)),
};
"""


# ------------------------------------------------------------------------------ the page
class Page:
    def __init__(self, driver: Any, service: Service) -> None:
        self.d = driver
        self.service = service

    def wait(self, condition: Any, timeout: float = 20) -> Any:
        from selenium.webdriver.support.ui import WebDriverWait

        return WebDriverWait(self.d, timeout).until(condition)

    def by_id(self, ident: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.d.find_element(By.ID, ident)

    def css(self, selector: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return list(self.d.find_elements(By.CSS_SELECTOR, selector))

    def sign_in(self, token: str) -> None:
        self.d.get(self.service.url + "/ui/")
        self.d.execute_script("sessionStorage.clear()")
        self.d.get(self.service.url + "/ui/")
        self.wait(lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))
        field = self.by_id("api-key")
        field.send_keys(token)
        self.css("#signin-form button")[0].click()
        self.wait(lambda d: self.by_id("find").is_displayed())

    def open(self, text: str, *, found: bool = True) -> None:
        self.by_id("f-round").clear()
        self.by_id("f-round").send_keys(text)
        self.by_id("find-go").click()
        if found:
            self.wait(lambda d: self.by_id("round").is_displayed())

    def wait_steps(self) -> None:
        self.wait(lambda d: self.by_id("step-count").text.startswith("Step 1 of"))

    def pick_player(self, player: str) -> None:
        box = self.by_id("player-q")
        box.clear()
        box.send_keys(player[:-1])  # a prefix: the service finds the rest
        self.css("#player-form button")[0].click()
        self.wait(lambda d: self.css(f'#player-list button[data-player="{player}"]'))
        self.css(f'#player-list button[data-player="{player}"]')[0].click()
        self.wait_steps()

    def snapshot(self) -> Json:
        found: Json = self.d.execute_script(SNAPSHOT)
        return found

    def press(self, key: str) -> None:
        from selenium.webdriver.common.action_chains import ActionChains

        ActionChains(self.d).send_keys(key).perform()

    def status(self) -> str:
        return str(self.by_id("status").text)

    def shot(self, folder: Path, name: str) -> Path:
        self.d.execute_script("window.scrollTo(0, 0)")
        path = folder / f"{name}.png"
        height = self.d.execute_script("return document.documentElement.scrollHeight")
        self.d.set_window_size(1400, min(max(int(height), 900), 4000))
        self.d.save_screenshot(str(path))
        self.d.set_window_size(1400, 1600)
        return path


@pytest.fixture(scope="module")
def page(browser: Any, service: Service) -> Page:
    return Page(browser, service)


# ------------------------------------------------------------------------------ expectations
def recorded(service: Service, rid: UUID, player: str | None = None) -> list[Json]:
    """The round's stored events (its export), in the order the page steps through them:
    a classic round's by version; a boundless round's shared hand and ``player``'s
    participation, each stream in version order (the merge is checked per stream)."""
    inv = service.key("investigator")
    text = service.api("GET", f"/rounds/{rid}/export", key=inv).text
    lines = [json.loads(ln) for ln in text.splitlines() if ln.strip()]
    events = [
        ln
        for ln in lines
        if ln.get("line") == "event"
        and str(ln.get("class", "")).startswith(("Round.", "SharedHand.", "Participation."))
    ]
    wanted = {str(rid)} if player is None else {str(rid), str(participation_id(rid, player))}
    mine = [e for e in events if e["originator_id"] in wanted]
    return sorted(mine, key=lambda e: (e["originator_id"] != str(rid), e["version"]))


def check_step(snap: Json, event: Json, total_steps: int, index: int) -> None:
    """What the page shows at one step against the recorded event of that step."""
    p = event["payload"]
    assert snap["event"] == event["class"], (index, snap, event["class"])
    assert snap["count"] == f"Step {index + 1} of {total_steps}"
    assert (snap["rule"] or None) == p.get("rule"), (index, snap["rule"], p.get("rule"))
    if p.get("rule"):
        assert p["rule"] in snap["ruleLinks"]
    actor = p.get("actor") or {"kind": "system", "key": ""}
    assert snap["actor"]["kind"] == actor["kind"], (index, snap["actor"], actor)
    assert snap["actor"]["key"] == (actor.get("key") or ""), (index, snap["actor"], actor)
    name = event["class"].split(".")[-1]
    if name == "CardToHand" and p["hand"] not in ("shared", "sequence"):
        hand = next(h for h in snap["hands"] if h["hand"] == p["hand"])
        assert hand["cards"][-1] == p["card"], (index, hand, p)
        assert int(hand["total"]) == p["total"], (index, hand, p)
    elif name == "CardToHand" and p["hand"] == "shared":
        assert snap["shared"][-1] == p["card"]
    elif name == "HandOpened" and p.get("cards"):
        hand = next(h for h in snap["hands"] if h["hand"] == p["hand"])
        assert hand["cards"] == p["cards"]
        assert int(hand["total"]) == p["total"]
    elif name == "CardToDealer":
        shown = snap["dealer"][-1]
        assert shown == (p["card"] if p["face_up"] else "back"), (index, snap["dealer"], p)
    elif name == "HoleCardRevealed":
        assert p["card"] in snap["dealer"]
        assert "back" not in snap["dealer"]


def check_results(page: Page, events: list[Json]) -> None:
    """The last step: every wager's payout and each player's net, as the events settled them."""
    settled = {
        e["payload"]["wager_id"]: e["payload"]
        for e in events
        if e["class"].endswith(".WagerSettled")
    }
    assert settled
    rows = page.d.execute_script(
        "return [...document.querySelectorAll('#wagers tbody tr')].map((r) => "
        "({wager: r.dataset.wager, payout: r.dataset.payout, result: r.dataset.result}))"
    )
    shown = {r["wager"]: r for r in rows}
    for wager, p in settled.items():
        assert shown[wager]["payout"] == p["payout"], (wager, shown[wager], p)
        assert shown[wager]["result"] == p["result"]
    nets: dict[str, Decimal] = {}
    for e in events:
        p = e["payload"]
        if e["class"].endswith(".WagerSettled"):
            nets[p["player"]] = nets.get(p["player"], Decimal(0)) + Decimal(p["net"])
    got = page.d.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('#nets tbody tr')]"
        ".map((r) => [r.dataset.player, r.dataset.net]))"
    )
    assert {k: Decimal(v) for k, v in got.items()} == nets


def boundless_player(service: Service, rid: UUID) -> str:
    doc = service.api("GET", f"/rounds/{rid}/players?limit=500", key=service.key("investigator"))
    assert doc["total"] >= 10
    # one in the middle of the list, which the page must find by a search, not a list
    return str(doc["players"][len(doc["players"]) // 2])


# ------------------------------------------------------------------------------ variants
@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_steps_from_first_to_last_and_back(
    page: Page, service: Service, shots: Path, variant: str
) -> None:
    from selenium.webdriver.common.keys import Keys

    rid = Round.create_id(f"sim-{variant}", 1)
    page.sign_in(service.key("investigator"))
    page.open(f"sim-{variant}#1")
    player = None
    if variant == "boundless":
        player = boundless_player(service, rid)
        page.pick_player(player)
    else:
        page.wait_steps()
    events = recorded(service, rid, player)
    total = len(events)
    # forward with the keyboard, from the first event to the last
    seen: list[Json] = []
    for i in range(total):
        snap = page.snapshot()
        seen.append(snap)
        if i < total - 1:
            page.press(Keys.ARROW_RIGHT)
    by_stream: dict[str, list[str]] = {}
    for snap, event in zip(seen, sorted_for_page(seen, events), strict=True):
        check_step(snap, event, total, seen.index(snap))
        by_stream.setdefault(event["originator_id"], []).append(event["class"])
    assert seen[-1]["count"] == f"Step {total} of {total}"
    assert seen[0]["hands"] == [] or all(not h["cards"] for h in seen[0]["hands"])
    assert seen[-1]["current"] == [seen[-1]["position"]]
    check_results(page, events)
    page.shot(shots, f"{variant}-final")
    # and back with the buttons
    for i in range(total - 1, -1, -1):
        snap = page.snapshot()
        assert snap == seen[i], (variant, i)
        if i > 0:
            page.by_id("prev").click()
    assert page.by_id("prev").get_attribute("disabled") is not None
    page.by_id("last").click()
    assert page.snapshot() == seen[-1]


def sorted_for_page(seen: list[Json], events: list[Json]) -> list[Json]:
    """The recorded events in the page's order: the page's steps carry their position in the
    round's merged log; a classic round's position is the event's version, a boundless
    round's steps interleave the shared hand and the player's participation, each stream in
    its own order (checked here)."""
    if len({e["originator_id"] for e in events}) == 1:
        assert [s["position"] for s in seen] == [e["version"] for e in events]
        return events
    shared = [e for e in events if e["originator_id"] == events[0]["originator_id"]]
    own = [e for e in events if e["originator_id"] != events[0]["originator_id"]]
    out = []
    for snap in seen:
        stream = shared if snap["event"].startswith("SharedHand.") else own
        out.append(stream.pop(0))
    assert not shared
    assert not own
    return out


# ------------------------------------------------------------------------------ complaints
def play_multihand(service: Service, table: str, then: str) -> UUID:
    """alice (8 on box 1) and bob (18 on box 2) on a test shoe; alice's hand is then played
    by the system: her decision timer expires (``timeout``) or she disconnects."""
    service.api(
        "POST", "/tables", json={"table_id": table, "variant": "multihand", "production": False}
    )
    for player in ("alice", "bob"):
        service.api(
            "POST", "/wallets", json={"player_id": f"{table}-{player}", "account_type": "test"}
        )
        service.api(
            "POST", f"/wallets/{table}-{player}/deposits",
            json={"amount": "100.00", "transaction_id": f"{table}-{player}-1"},
        )  # fmt: skip
    view = service.api(
        "POST", "/rounds",
        json={"table_id": table, "round_number": 1, "variant": "multihand", "test_order": NINE_UP},
    )  # fmt: skip
    rid = view["round_id"]
    for box, player in ((1, "alice"), (2, "bob")):
        service.api(
            "POST", f"/rounds/{rid}/bets",
            json={"player": f"{table}-{player}", "amount": "10.00", "spot": box},
        )  # fmt: skip
    service.api("POST", f"/rounds/{rid}/close-betting")
    if then == "timeout":
        service.api("POST", f"/rounds/{rid}/timeouts", json={"player": f"{table}-alice"})
    else:
        service.api("POST", f"/rounds/{rid}/disconnections", json={"player": f"{table}-alice"})
    bob = {"player": f"{table}-bob", "action": "stand", "client_time": "2026-01-01T12:00:05.250Z"}
    service.api("POST", f"/rounds/{rid}/decisions", json=bob)
    return UUID(rid)


def play_funds1(service: Service) -> UUID:
    """deluxe: ana holds 10.00, bets it all, has 11 and doubles: FUNDS-1 makes it a hit."""
    service.api(
        "POST", "/tables", json={"table_id": "C3", "variant": "deluxe", "production": False}
    )
    service.api("POST", "/wallets", json={"player_id": "C3-ana", "account_type": "test"})
    service.api(
        "POST", "/wallets/C3-ana/deposits", json={"amount": "10.00", "transaction_id": "C3-ana-1"}
    )
    service.api("POST", "/tables/C3/seats", json={"player": "C3-ana", "seat": 1})
    view = service.api(
        "POST", "/rounds",
        json={"table_id": "C3", "round_number": 1, "variant": "deluxe", "test_order": FUNDS_ORDER},
    )  # fmt: skip
    rid = view["round_id"]
    service.api(
        "POST", f"/rounds/{rid}/bets", json={"player": "C3-ana", "amount": "10.00", "spot": 1}
    )
    service.api("POST", f"/rounds/{rid}/close-betting")
    service.api(
        "POST", f"/rounds/{rid}/decisions",
        json={"player": "C3-ana", "action": "double", "client_time": "2026-01-01T12:00:07.500Z"},
    )  # fmt: skip
    return UUID(rid)


def glance(page: Page, kind: str) -> Any:
    page.wait(lambda d: page.css(f'#glance-list li[data-kind="{kind}"]'))
    return page.css(f'#glance-list li[data-kind="{kind}"]')[0]


def short_time(iso: str) -> str:
    """The page's way of writing a server time (UTC, milliseconds)."""
    from datetime import datetime

    t = datetime.fromisoformat(iso)
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{t.microsecond // 1000:03d} UTC"


def test_a_stand_that_became_a_hit_reads_at_a_glance(
    page: Page, service: Service, shots: Path
) -> None:
    rid = play_multihand(service, "C1", "timeout")
    events = recorded(service, rid)
    timeout = next(e for e in events if e["class"] == "Round.DecisionTimedOut")
    autos = [e["payload"] for e in events if e["class"] == "Round.AutoActed"]
    assert [a["action"] for a in autos] == ["hit", "hit", "stand"]
    page.sign_in(service.key("investigator"))
    page.open(str(rid))
    page.wait_steps()
    item = glance(page, "timeout")
    text = item.text
    assert short_time(timeout["timestamp"]) in text  # the decision timer's expiry
    assert "No decision from C1-alice on hand 1 was received" in text
    assert "hit on 8, hit on 10, stand on 19" in text
    assert item.get_attribute("data-rule") == "AUTO-1"
    item.find_element("css selector", "button").click()
    snap = page.snapshot()
    assert snap["event"] == "Round.DecisionTimedOut"
    assert snap["position"] == timeout["version"]
    assert snap["actor"]["key"] == timeout["payload"]["actor"]["key"]
    page.shot(shots, "complaint-timeout-auto1")


def test_a_disconnection_played_by_the_system_reads_at_a_glance(
    page: Page, service: Service, shots: Path
) -> None:
    rid = play_multihand(service, "C2", "disconnect")
    events = recorded(service, rid)
    gone = next(e for e in events if e["class"] == "Round.PlayerDisconnected")
    page.sign_in(service.key("compliance"))
    page.open(str(rid))
    page.wait_steps()
    item = glance(page, "disconnection")
    text = item.text
    assert short_time(gone["timestamp"]) in text
    assert "DISC-1" in text
    assert "AUTO-1" in text
    assert "hand 1: hit on 8; hand 1: hit on 10; hand 1: stand on 19" in text
    page.shot(shots, "complaint-disconnection-disc1")


def test_a_double_that_became_a_hit_reads_at_a_glance(
    page: Page, service: Service, shots: Path
) -> None:
    rid = play_funds1(service)
    events = recorded(service, rid)
    converted = next(e["payload"] for e in events if e["class"] == "Round.DecisionConverted")
    assert (converted["rule"], converted["requested"], converted["applied"]) == (
        "FUNDS-1",
        "double",
        "hit",
    )
    page.sign_in(service.key("investigator"))
    page.open("C3#1")
    page.wait_steps()
    item = glance(page, "funds")
    text = item.text
    assert f"balance seen when it executed was {converted['balance_seen']}" in text
    assert f"needed {converted['needed']}" in text
    assert "FUNDS-1" in text
    assert "client time 2026-01-01T12:00:07.500Z" in text
    item.find_element("css selector", "button").click()
    snap = page.snapshot()
    assert snap["event"] == "Round.DecisionConverted"
    page.shot(shots, "complaint-double-funds1")


# ------------------------------------------------------------------------------ player keys
def test_a_player_key_sees_its_own_round_and_is_refused_anothers(
    page: Page, service: Service, shots: Path
) -> None:
    rid = Round.create_id("C1", 1)
    if not service.api("GET", f"/rounds?round={rid}", key=service.key("investigator"))["rounds"]:
        play_multihand(service, "C1", "timeout")
    page.sign_in(service.key("player", "C1-bob"))
    page.open("C1#1")
    page.wait_steps()
    assert "following C1-bob" in page.status()
    page.by_id("last").click()
    # bob's own balance only: no other player's balance anywhere on the page
    body = page.d.find_element("tag name", "body").text
    alice_seen = [
        e["payload"]["balance_seen"]
        for e in recorded(service, rid)
        if e["payload"].get("player") == "C1-alice" and e["payload"].get("balance_seen")
    ]
    assert alice_seen
    steps = page.d.execute_script(
        "return [...document.querySelectorAll('#timeline li')].map((li) => li.textContent)"
    )
    assert not any("balance seen" in s and "C1-alice" in s for s in steps)
    assert "Verification and proof" not in body or not page.by_id("verify-box").is_displayed()
    page.shot(shots, "player-own-round")
    # another player's round: the search knows nothing of it for this key
    page.by_id("back-to-search").click()
    page.open("sim-multihand#1", found=False)
    page.wait(lambda d: "that this key may read" in page.status())
    assert not page.by_id("layout").is_displayed()
    # and its replay is refused over HTTP, with the key the page holds
    key = page.d.execute_script("return sessionStorage.getItem('roundaudit.api-key')")
    import httpx

    other = Round.create_id("sim-multihand", 1)
    r = httpx.get(
        f"{service.url}/rounds/{other}/players/C1-bob/replay",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert r.status_code == 403
