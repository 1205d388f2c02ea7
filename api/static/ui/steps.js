// What the replay's steps say, shown: actor badges, times, rule links, the step panel, the
// decision timeline and the three classic complaints "at a glance". Nothing here replays the
// round: every figure is read from a step (its event's payload, or the table after it).
import { cardName } from "./cards.js";

export const AUTOMATIC = new Set(["AUTO-1", "FUNDS-1", "FUNDS-2", "DLX-7", "DLX-8", "HAND-1", "PRE-1", "DISC-1"]);
const DECISIONS = new Set([
  "DecisionMade", "DecisionPreselected", "DecisionTimedOut", "PlayerDisconnected", "AutoActed",
  "DecisionConverted", "BehindFollowed", "InsuranceWindowClosed",
]);
const RULES_ACTOR = { kind: "system", id: "rules" };

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function eventName(step) {
  return step.event.split(".").pop();
}

export function actorOf(step) {
  const actor = step.payload && step.payload.actor;
  return actor && actor.kind ? actor : RULES_ACTOR;
}

export function actorBadge(step) {
  const a = actorOf(step);
  const who = a.id ? `${a.kind} ${a.id}` : a.kind;
  const key = a.key ? `key ${a.key}${a.role ? ` (${a.role})` : ""}` : "";
  return el(
    "span",
    { class: `badge actor-${a.kind}`, dataset: { actorKind: a.kind, actorId: a.id || "", actorKey: a.key || "" },
      title: key ? `${who}, sent with ${key}` : who },
    el("span", { class: "who", text: who }),
    key ? el("span", { class: "key", text: key }) : null,
  );
}

let RULEBOOK = {};
export function setRulebook(rules) {
  RULEBOOK = rules || {};
}

export function ruleLink(rule) {
  if (!rule) return null;
  const entry = RULEBOOK[rule];
  return el("a", {
    class: "rule", href: `#rule-${rule}`, dataset: { rule },
    title: entry ? `${rule}: ${entry.text}` : rule, text: rule,
  });
}

export function shortTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toISOString().replace("T", " ").replace("Z", " UTC");
}

export function isDecision(step) {
  return DECISIONS.has(eventName(step)) || (step.rule && AUTOMATIC.has(step.rule));
}

function times(step) {
  const p = step.payload || {};
  return el(
    "span", { class: "times" },
    el("time", { datetime: step.server_time || "", text: `server ${shortTime(step.server_time)}` }),
    p.client_time ? el("span", { class: "client", text: ` · client ${p.client_time}` }) : null,
  );
}

function facts(step) {
  const p = step.payload || {};
  const list = el("dl", { class: "facts" });
  const add = (term, value) => {
    if (value === undefined || value === null || value === "") return;
    list.append(el("dt", { text: term }), el("dd", {}, value));
  };
  if (p.player) add("Player", p.player);
  if (p.hand && eventName(step) !== "CardDealt") add("Hand", p.hand);
  if (Array.isArray(p.options)) {
    add("Options open", el("span", { class: "options" }, p.options.map((o) => el(
      "span", { class: o === p.action ? "option taken" : "option", text: o === p.action ? `${o} (taken)` : o },
    ))));
  }
  if (p.action && !Array.isArray(p.options)) add("Action", p.action);
  if (p.requested) add("Asked for", `${p.requested} → ${p.applied}`);
  if (p.needed) add("It needed", p.needed);
  if (p.balance_seen !== undefined && p.balance_seen !== null) add("Balance seen", el("strong", { class: "balance", text: p.balance_seen }));
  if (p.stake && eventName(step) !== "WagerSettled") add("Stake", p.stake);
  if (eventName(step) === "WagerSettled") {
    add("Result", `${p.result}${p.ratio ? ` at ${p.ratio}` : ""}${p.pattern ? ` (${p.pattern})` : ""}`);
    add("Stake", p.stake);
    add("Payout", el("strong", { text: p.payout }));
    add("Net", p.net);
  }
  if (p.reason) add("Reason", p.reason);
  if (p.shoe_position !== undefined && p.shoe_position !== null) add("Shoe position", p.shoe_position);
  if (p.request_id) add("Request id", p.request_id);
  return list;
}

/** The panel of the current step: what happened, who did it, when, under which rule. */
export function stepPanel(step, index, total) {
  return el(
    "article", { class: "step", dataset: { position: step.position, event: step.event, rule: step.rule || "" } },
    el("header", {},
      el("span", { class: "pos", text: `Step ${index + 1} of ${total}` }),
      " · ",
      el("span", { class: "event", text: step.event }),
      el("span", { class: `kind kind-${step.kind}`, text: step.kind }),
      step.rule ? ruleLink(step.rule) : null,
    ),
    el("p", { class: "summary", text: step.summary }),
    el("p", { class: "who-when" }, actorBadge(step), " ", times(step)),
    facts(step),
    step.payload && step.payload.redacted ? el("p", { class: "hidden-note", text: "A card the table had not shown is withheld." }) : null,
  );
}

/** One line of the decision timeline per step. */
export function timelineItem(step, index, onPick) {
  const decision = isDecision(step);
  return el(
    "li",
    { class: decision ? "tl decision" : "tl", dataset: { index, position: step.position, event: eventName(step), player: (step.payload && step.payload.player) || step.owner || "" } },
    el("button", { type: "button", class: "tl-go", onclick: () => onPick(index), "aria-label": `Go to step ${index + 1}: ${step.summary}` },
      el("span", { class: "tl-pos", text: `#${step.position}` }),
      actorBadge(step),
      el("span", { class: "tl-text", text: step.summary }),
    ),
    el("span", { class: "tl-meta" }, step.rule ? ruleLink(step.rule) : null, " ", times(step)),
  );
}

function handCards(steps, from, hand) {
  // the cards the hand (or its split hands) received after step `from`, until its next decision
  const out = [];
  for (let i = from + 1; i < steps.length; i += 1) {
    const s = steps[i];
    const p = s.payload || {};
    const name = eventName(s);
    const ours = p.hand === hand || (p.hand && String(p.hand).startsWith(`${hand}.`));
    if (!ours) continue;
    if (name === "DecisionMade" || name === "DecisionTimedOut") break;
    if (name === "CardToHand" && p.card) out.push(`${p.card} (${cardName(p.card)}), total ${p.total}`);
  }
  return out;
}

function autoAfter(steps, from, hands) {
  // the automatic actions on those hands after step `from` (AUTO-1), in order
  const out = [];
  for (let i = from + 1; i < steps.length; i += 1) {
    const p = steps[i].payload || {};
    const name = eventName(steps[i]);
    if (name === "AutoActed" && hands.has(p.hand)) out.push({ index: i, action: p.action, total: p.total, hand: p.hand });
    if (name === "RoundSettled" || name === "RoundCancelled") break;
  }
  return out;
}

function handsOf(steps, player) {
  const last = steps[steps.length - 1].view || {};
  return new Set((last.hands || []).filter((h) => h.player === player).map((h) => h.hand));
}

/** The classic complaints, found in the steps: a timeout played by AUTO-1, a disconnection
 * played by the system (DISC-1, AUTO-1), a double or split short of funds (FUNDS-1/2). */
export function complaints(steps) {
  const found = [];
  steps.forEach((step, i) => {
    const p = step.payload || {};
    const name = eventName(step);
    const who = p.player || (step.owner && step.owner !== "shared" ? step.owner : "");
    if (name === "DecisionTimedOut" && !p.window) {
      const autos = autoAfter(steps, i, new Set([p.hand]));
      const pressed = steps.slice(0, i).filter((s) => eventName(s) === "DecisionMade" && (s.payload || {}).player === who && (s.payload || {}).hand === p.hand);
      found.push({
        kind: "timeout", index: i, rule: "AUTO-1", player: who,
        title: `No decision in time: the system played ${who}'s hand ${p.hand}`,
        lines: [
          `The decision timer expired: recorded at ${shortTime(step.server_time)}${p.client_time ? ` (client time ${p.client_time})` : ""}, sent by ${actorText(step)}.`,
          pressed.length
            ? `Decisions received from ${who} on hand ${p.hand} before it: ${pressed.map((s) => s.payload.action).join(", ")}.`
            : `No decision from ${who} on hand ${p.hand} was received before the timer expired (no stand was recorded).`,
          `AUTO-1 then played it: ${autos.map((a) => `${a.action} on ${a.total}`).join(", ") || "nothing left to play"}.`,
          ...handCards(steps, i, p.hand).map((c) => `Card dealt to it: ${c}.`),
        ],
      });
    } else if (name === "PlayerDisconnected") {
      const autos = autoAfter(steps, i, handsOf(steps, who));
      found.push({
        kind: "disconnection", index: i, rule: "DISC-1", player: who,
        title: `${who} disconnected: the round went on and the system played for them`,
        lines: [
          `Disconnection recorded at ${shortTime(step.server_time)}, sent by ${actorText(step)}. DISC-1: the bets stay valid and are settled at the end.`,
          autos.length
            ? `AUTO-1 played ${autos.map((a) => `hand ${a.hand}: ${a.action} on ${a.total}`).join("; ")}.`
            : "No hand of theirs was left to play.",
        ],
      });
    } else if (name === "DecisionConverted") {
      const asked = steps.slice(0, i).reverse().find((s) => eventName(s) === "DecisionMade" && (s.payload || {}).hand === p.hand);
      const player = (asked && asked.payload.player) || who;
      found.push({
        kind: "funds", index: i, rule: p.rule, player,
        title: `${player}'s ${p.requested} on hand ${p.hand} became a ${p.applied} (${p.rule})`,
        lines: [
          `${player} asked to ${p.requested}${asked ? ` at ${shortTime(asked.server_time)}${asked.payload.client_time ? ` (client time ${asked.payload.client_time})` : ""}` : ""}.`,
          `The balance seen when it executed was ${p.balance_seen}; the ${p.requested} needed ${p.needed}: too little, so ${p.rule} made it a ${p.applied}.`,
          ...handCards(steps, i, p.hand).map((c) => `Card dealt to it: ${c}.`),
        ],
      });
    }
  });
  return found;
}

function actorText(step) {
  const a = actorOf(step);
  return `${a.kind}${a.id ? ` ${a.id}` : ""}${a.key ? ` with key ${a.key}${a.role ? ` (${a.role})` : ""}` : ""}`;
}

export function glanceItem(c, onPick) {
  return el(
    "li", { class: `glance-item glance-${c.kind}`, dataset: { kind: c.kind, index: c.index, rule: c.rule || "" } },
    el("h4", {}, c.title, " ", ruleLink(c.rule), c.kind === "disconnection" ? [" ", ruleLink("AUTO-1")] : null),
    el("ul", {}, c.lines.map((line) => el("li", { text: line }))),
    el("button", { type: "button", class: "quiet", onclick: () => onPick(c.index), text: `Show step ${c.index + 1}` }),
  );
}
