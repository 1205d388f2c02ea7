// The table after a step, drawn from that step's `view` (the service's own view of the round at
// that moment): the dealer, the seats or boxes with their hands and totals, the bets on them
// (main, doubles, splits, bets behind, side bets), and the dealing order so far. The only thing
// added to the view is a card back where the dealer holds a card face down (the view leaves a
// hidden card out; the steps say when one was dealt face down).
import { cardImage } from "./cards.js";
import { el, eventName } from "./steps.js";

/** Facts of the whole replay the drawing needs at every step (computed once). */
export function prepare(steps) {
  const started = steps[0] || {};
  const payload = started.payload || {};
  const dealer = []; // per step: the dealer's cards so far, each {faceUp}
  const order = []; // per step: the dealing order so far
  let cards = [];
  let dealt = [];
  let pending = null;
  steps.forEach((step) => {
    const name = eventName(step);
    const p = step.payload || {};
    if (name === "CardDealt") {
      pending = { card: p.card, position: p.shoe_position, step: step.position };
    } else if ((name === "CardToHand" || name === "CardToDealer") && (step.event.startsWith("Round.") || step.event.startsWith("SharedHand."))) {
      let to;
      if (name === "CardToDealer") {
        to = p.face_up ? "dealer" : "dealer, face down";
        cards = [...cards, { faceUp: Boolean(p.face_up) }];
      } else if (p.hand === "shared") {
        to = "the shared hand";
      } else if (p.hand === "sequence") {
        to = `sequence card ${Number(p.index) + 1}`;
      } else {
        to = `hand ${p.hand}`;
      }
      const card = p.card || (pending && pending.card) || null;
      dealt = [...dealt, { card, faceDown: name === "CardToDealer" && !p.face_up, to, position: pending ? pending.position : null, step: step.position }];
      pending = null;
    }
    dealer.push(cards);
    order.push(dealt);
  });
  return {
    variant: (started.view && started.view.variant) || (payload.rules_key || "").split("/")[0],
    boundless: started.event === "SharedHand.Started",
    seats: payload.seats || {},
    dealer,
    order,
  };
}

function dealerCards(view, facts, index) {
  // the view's visible dealer cards, with a back (null) where a card is still face down
  const visible = [...((view.dealer && view.dealer.cards) || [])];
  const dealt = facts.dealer[index] || [];
  let hidden = dealt.length - visible.length;
  if (hidden <= 0) return visible;
  return dealt.map((c) => {
    if (!c.faceUp && hidden > 0) {
      hidden -= 1;
      return null;
    }
    return visible.shift() ?? null;
  });
}

function handBox(hand, focus) {
  const flags = [];
  if (hand.blackjack) flags.push("blackjack");
  if (hand.bust) flags.push("bust");
  if (hand.doubled) flags.push("doubled");
  if (hand.surrendered) flags.push("surrendered");
  const total = hand.cards.length ? `${hand.soft ? "soft " : ""}${hand.total}` : "–";
  const state = hand.finish_reason || (hand.finished ? "done" : hand.options && hand.options.length ? "to play" : "");
  return el(
    "div",
    {
      class: `hand${hand.player === focus ? " focus" : ""}${hand.options && hand.options.length ? " turn" : ""}`,
      dataset: { hand: hand.hand, player: hand.player, total: hand.cards.length ? hand.total : "", cards: hand.cards.join(" ") },
      role: "group",
      "aria-label": `hand ${hand.hand} of ${hand.player}: ${hand.cards.length ? `total ${total}` : "no card yet"}`,
    },
    el("div", { class: "cards" }, hand.cards.map((c) => cardImage(c))),
    el("p", { class: "hand-line" },
      hand.hand !== hand.player ? el("span", { class: "hand-id", text: `hand ${hand.hand} ` }) : null,
      el("span", { class: "total", dataset: { total: hand.total }, text: total }),
      flags.length ? el("span", { class: "flags", text: ` ${flags.join(", ")}` }) : null,
      state ? el("span", { class: "state", text: ` · ${state}` }) : null,
    ),
    hand.options && hand.options.length
      ? el("p", { class: "open-options", text: `open: ${hand.options.join(", ")}` })
      : null,
  );
}

function spotOfWager(w, hands) {
  if (w.hand) {
    const h = hands.find((x) => x.hand === w.hand);
    if (h) return String(h.spot);
    return String(w.hand).split(".")[0];
  }
  return String(w.wager_id).split(":")[0];
}

function chip(w, boundless) {
  const named = !boundless && (w.kind.startsWith("behind") || w.hand === null);
  const label = `${w.kind}${named ? ` · ${w.player}` : ""} ${w.stake}`;
  const result = w.settled ? ` → ${w.result}${w.result === "lose" ? "" : ` ${w.payout}`}` : "";
  return el("li", {
    class: `chip kind-${w.kind}${w.settled ? ` result-${w.result}` : ""}`,
    dataset: { wager: w.wager_id, kind: w.kind, player: w.player, stake: w.stake, payout: w.settled ? w.payout : "", result: w.settled ? w.result : "" },
    text: label + result,
  });
}

/** Draw the table of step `index` into `felt`. */
export function drawTable(felt, steps, index, facts, focus) {
  const step = steps[index];
  const view = step.view || {};
  const hands = view.hands || [];
  const wagers = view.wagers || [];
  felt.replaceChildren();
  const dealer = dealerCards(view, facts, index);
  const dealerTotal = view.dealer && view.dealer.cards && view.dealer.cards.length ? view.dealer.total : null;
  felt.append(el(
    "section", { class: "dealer", "aria-label": "the dealer", dataset: { cards: dealer.map((c) => c || "back").join(" "), total: dealerTotal ?? "" } },
    el("h4", { text: "Dealer" }),
    el("div", { class: "cards" }, dealer.map((c) => cardImage(c))),
    el("p", { class: "hand-line" }, dealerTotal === null
      ? (dealer.includes(null) ? "the other card is face down" : "–")
      : el("span", { class: "total", text: dealer.includes(null) ? `showing ${dealerTotal}` : String(dealerTotal) })),
  ));
  if (facts.boundless) {
    felt.append(el(
      "section", { class: "shared", "aria-label": "the shared hand and the sequence" },
      el("h4", { text: "Shared hand" }),
      el("div", { class: "cards", dataset: { cards: (view.shared || []).join(" ") } }, (view.shared || []).map((c) => cardImage(c))),
      (view.sequence || []).length
        ? el("div", {}, el("p", { class: "label", text: "Sequence (BDL-2)" }),
          el("div", { class: "cards" }, view.sequence.map((c) => cardImage(c, { small: true }))))
        : null,
    ));
  }
  // seats (deluxe: all seven), boxes or, in boundless, the player followed
  const spots = new Map();
  if (facts.variant === "deluxe") {
    for (let s = 1; s <= 7; s += 1) spots.set(String(s), { label: `Seat ${s}`, owner: facts.seats[String(s)] || "" });
  }
  for (const h of hands) {
    const spot = String(h.spot);
    if (!spots.has(spot)) spots.set(spot, { label: facts.boundless ? h.player : `Box ${spot}`, owner: h.player });
    else if (!spots.get(spot).owner) spots.get(spot).owner = h.player;
  }
  for (const w of wagers) {
    const spot = facts.boundless ? w.player : spotOfWager(w, hands);
    if (!spots.has(spot)) spots.set(spot, { label: facts.boundless ? w.player : `Box ${spot}`, owner: "" });
  }
  const row = el("div", { class: "spots" });
  for (const [spot, info] of spots) {
    const mine = hands.filter((h) => String(h.spot) === spot);
    const bets = wagers.filter((w) => (facts.boundless ? w.player : spotOfWager(w, hands)) === spot);
    row.append(el(
      "section", { class: `spot${mine.length || bets.length ? "" : " empty"}${info.owner && info.owner === focus ? " focus" : ""}`, dataset: { spot }, "aria-label": `${info.label}${info.owner ? `, ${info.owner}` : ", empty"}` },
      el("h4", {}, info.label, info.owner && !facts.boundless ? el("span", { class: "owner", text: ` · ${info.owner}` }) : null),
      mine.length ? el("div", { class: "hands" }, mine.map((h) => handBox(h, focus))) : el("p", { class: "none", text: info.owner ? "no hand" : "empty" }),
      bets.length ? el("ul", { class: "chips", "aria-label": "bets" }, bets.map((w) => chip(w, facts.boundless))) : null,
    ));
  }
  felt.append(row);
}

export function drawOrder(list, steps, facts, index) {
  // a card dealt face down is shown in the order only once the table shows it
  const view = steps[index].view || {};
  const shown = ((view.dealer && view.dealer.cards) || []).length >= (facts.dealer[index] || []).length;
  list.replaceChildren(...(facts.order[index] || []).map((d, n) => {
    const card = d.faceDown && !shown ? null : d.card;
    return el(
      "li", { dataset: { card: card || "back", to: d.to, step: d.step } },
      cardImage(card, { small: true }),
      ` ${card || "face down"} → ${d.to}${d.position !== null && d.position !== undefined ? ` (shoe position ${d.position})` : ""}`,
    );
  }));
}
