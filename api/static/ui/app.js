// The investigation page: sign in with an API key, find a round, step through it.
// Everything shown comes from the service's routes (docs/api.md); the key decides what.
import { ApiError, enc, forgetKey, get, getKey, query, setKey } from "./api.js";
import { cents, show } from "./money.js";
import {
  complaints, el, eventName, glanceItem, isDecision, ruleLink, setRulebook, stepPanel, timelineItem,
} from "./steps.js";
import { drawOrder, drawTable, prepare } from "./table.js";

const $ = (id) => document.getElementById(id);
const state = {
  session: null,
  steps: [],
  facts: null,
  index: 0,
  round: null, // the round's row of the search (GET /rounds?round=)
  player: "", // the player followed (boundless, player keys, supervisors)
  next: null, // the search's next page
  lastSearch: null,
};

function say(text, { error = false } = {}) {
  const status = $("status");
  status.textContent = text;
  status.classList.toggle("error", error);
}

function problemText(err) {
  if (err instanceof ApiError) {
    if (err.status === 401) return "The service does not know this key (or it was revoked): sign in again.";
    if (err.status === 403) return `This key may not read that (${err.problem.detail || "forbidden"}).`;
    return `${err.problem.title || "Error"}: ${err.problem.detail || err.message}`;
  }
  return `Something went wrong: ${err.message}`;
}

function may(action) {
  return Boolean(state.session && state.session.may && state.session.may[action]);
}

// ------------------------------------------------------------------------------ sign in
async function signIn(token) {
  setKey(token);
  try {
    state.session = await get("/session");
  } catch (err) {
    forgetKey();
    state.session = null;
    say(problemText(err), { error: true });
    return false;
  }
  const s = state.session;
  const binding = s.player ? ` for player ${s.player}` : s.tables.length ? ` on ${s.tables.join(", ")}` : "";
  $("whoami-text").textContent = `Signed in: ${s.role}${binding}${s.label ? ` (${s.label})` : ""}, key ${s.key_id}`;
  $("whoami").hidden = false;
  $("signin").hidden = true;
  $("find").hidden = false;
  if (s.player) {
    $("f-player").value = s.player;
    $("f-player").readOnly = true;
  }
  try {
    const book = await get("/rulebook");
    setRulebook(book.rules);
    drawRulebook(book.rules);
  } catch {
    /* the rule book is a help, not a must */
  }
  say("");
  return true;
}

function signOut() {
  forgetKey();
  state.session = null;
  history.replaceState(null, "", "/ui/");
  location.reload();
}

function drawRulebook(rules) {
  const dl = $("rules");
  dl.replaceChildren();
  for (const [id, entry] of Object.entries(rules)) {
    dl.append(el("dt", { id: `rule-${id}`, tabindex: "-1", text: id }), el("dd", {}, entry.text, el("span", { class: "section", text: ` (${entry.section})` })));
  }
  $("rulebook").hidden = false;
}

function openRule(id) {
  const book = $("rulebook");
  book.open = true;
  const target = document.getElementById(`rule-${id}`);
  if (target) {
    target.scrollIntoView({ block: "center" });
    target.focus();
    target.classList.add("flash");
    setTimeout(() => target.classList.remove("flash"), 1500);
  }
}

// ------------------------------------------------------------------------------ search
function searchParams() {
  const f = $("find-form").elements;
  const params = {
    table: f.table.value.trim(),
    number: f.number.value.trim(),
    player: f.player.value.trim(),
    variant: f.variant.value,
    state: f.state.value,
    limit: 25,
  };
  for (const name of ["from", "to"]) {
    if (f[name].value) params[name] = new Date(f[name].value).toISOString();
  }
  return params;
}

async function search(params, { more = false } = {}) {
  try {
    const page = await get(`/rounds${query(params)}`);
    state.lastSearch = params;
    state.next = page.next;
    const body = $("results-table").tBodies[0];
    if (!more) body.replaceChildren();
    for (const r of page.rounds) {
      body.append(el(
        "tr", { dataset: { round: r.round_id } },
        el("td", {}, el("span", { class: "round-name", text: `${r.table_id}#${r.round_number}` }), el("br"), el("code", { class: "uuid", text: r.round_id })),
        el("td", { text: r.variant + (r.production ? "" : " (test table)") }),
        el("td", { text: r.state + (r.paused ? ", paused" : "") }),
        el("td", { text: r.started_at.replace("T", " ").slice(0, 19) }),
        el("td", { class: "num", text: r.players }),
        el("td", {}, el("button", { type: "button", class: "open", onclick: () => openRound(r.round_id), "aria-label": `Open round ${r.table_id}#${r.round_number}`, text: "Open" })),
      ));
    }
    $("results").hidden = false;
    $("more").hidden = !page.next;
    const lag = page.projection.lag ? ` (the index is ${page.projection.lag} events behind the log)` : "";
    say(page.rounds.length || more ? `${body.rows.length} round(s) shown${lag}.` : `No round found${lag}.`);
  } catch (err) {
    say(problemText(err), { error: true });
  }
}

async function onFind(event) {
  event.preventDefault();
  const text = $("f-round").value.trim();
  if (text) {
    await openRound(text);
    return;
  }
  await search(searchParams());
}

// ------------------------------------------------------------------------------ a round
async function openRound(id, { player = "", step = null } = {}) {
  say("Loading the round…");
  let found;
  try {
    found = await get(`/rounds${query({ round: id, limit: 1 })}`);
  } catch (err) {
    say(problemText(err), { error: true });
    return;
  }
  if (!found.rounds.length) {
    say(`No round ${id} that this key may read${found.projection.lag ? " (the index is still catching up)" : ""}.`, { error: true });
    return;
  }
  const round = found.rounds[0];
  state.round = round;
  state.player = player || (state.session.player || "");
  $("find").hidden = true;
  $("round").hidden = false;
  $("round-title").textContent = `Round ${round.table_id}#${round.round_number}`;
  $("round-meta").replaceChildren(
    el("span", { text: `${round.variant} · rules ${round.rules_key} · ${round.state}${round.paused ? " (paused)" : ""} · ${round.production ? "production table" : "test table"} · started ${round.started_at.replace("T", " ").slice(0, 19)} UTC · ${round.players} player(s) · ` }),
    el("code", { text: round.round_id }),
  );
  $("round-title").focus();
  const full = may("audit.read") && !round.boundless;
  $("player-pick").hidden = full || Boolean(state.session.player);
  $("player-list").replaceChildren();
  clearRound();
  if (full) {
    await loadSteps(`/rounds/${enc(round.round_id)}/replay`, step);
  } else if (state.player) {
    await loadPlayer(state.player, step);
  } else if (may("dispute.read")) {
    say(round.boundless
      ? `This boundless round has ${round.players} players: find the one to follow.`
      : "Choose the player whose part of the round to follow.");
    $("player-q").focus();
    if (!round.boundless) await findPlayers("");
  } else {
    say("This key may not read this round's steps (its role reads no replay).", { error: true });
  }
  loadVerification(round.round_id);
}

function clearRound() {
  state.steps = [];
  $("layout").hidden = true;
  $("glance").hidden = true;
  $("results-box").hidden = true;
  $("verify-box").hidden = true;
}

async function findPlayers(prefix) {
  try {
    const doc = await get(`/rounds/${enc(state.round.round_id)}/players${query({ prefix, limit: 20 })}`);
    $("player-list").replaceChildren(...doc.players.map((p) => el(
      "li", {}, el("button", { type: "button", class: "quiet", dataset: { player: p }, onclick: () => loadPlayer(p), text: p }),
    )));
    say(doc.players.length ? `${doc.players.length}${doc.next ? "+" : ""} of ${doc.total} players match.` : "No player of this round starts so.");
  } catch (err) {
    say(problemText(err), { error: true });
  }
}

async function loadPlayer(player, step = null) {
  state.player = player;
  await loadSteps(`/rounds/${enc(state.round.round_id)}/players/${enc(player)}/replay`, step);
}

async function loadSteps(url, step) {
  let doc;
  try {
    doc = await get(url);
  } catch (err) {
    say(problemText(err), { error: true });
    return;
  }
  state.steps = doc.steps;
  if (!state.steps.length) {
    say("The round has no step to show.", { error: true });
    return;
  }
  state.facts = prepare(state.steps);
  drawTimeline();
  drawGlance();
  drawResults();
  $("slider").max = String(state.steps.length);
  $("layout").hidden = false;
  const start = step !== null && step !== undefined ? Math.min(Math.max(Number(step) - 1, 0), state.steps.length - 1) : 0;
  go(start);
  say(`${state.steps.length} steps${state.player ? `, following ${state.player}` : ""}.${doc.stopped ? ` The replay stopped early: ${doc.stopped}` : ""}`, { error: Boolean(doc.stopped) });
}

function drawTimeline() {
  const list = $("timeline");
  list.replaceChildren(...state.steps.map((s, i) => timelineItem(s, i, go)));
  const players = new Set();
  for (const s of state.steps) {
    const p = (s.payload || {}).player;
    if (p) players.add(p);
  }
  $("tl-player").replaceChildren(el("option", { value: "", text: "everyone" }), ...[...players].sort().map((p) => el("option", { value: p, text: p })));
  if (state.player && players.has(state.player)) $("tl-player").value = state.player;
  filterTimeline();
}

function filterTimeline() {
  const onlyDecisions = $("only-decisions").checked;
  const player = $("tl-player").value;
  const last = state.steps.length ? state.steps[state.steps.length - 1].view || {} : {};
  const hands = new Set((last.hands || []).filter((h) => h.player === player).map((h) => h.hand));
  [...$("timeline").children].forEach((li, i) => {
    const s = state.steps[i];
    const p = s.payload || {};
    let shown = !onlyDecisions || isDecision(s);
    if (shown && player) {
      const involved = p.player === player || s.owner === player || (p.hand && hands.has(p.hand));
      const roundWide = !p.player && !p.hand && (!s.owner || s.owner === "shared");
      shown = involved || roundWide;
    }
    li.hidden = !shown;
  });
}

function drawGlance() {
  const found = complaints(state.steps);
  $("glance-list").replaceChildren(...found.map((c) => glanceItem(c, go)));
  $("glance").hidden = !found.length;
}

function drawResults() {
  const last = state.steps[state.steps.length - 1];
  const wagers = (last.view && last.view.wagers) || [];
  const settlements = new Map();
  const nets = new Map();
  for (const s of state.steps) {
    const p = s.payload || {};
    if (eventName(s) === "WagerSettled") {
      settlements.set(p.wager_id, p);
      nets.set(p.player, (nets.get(p.player) || 0n) + (cents(p.net) || 0n));
    } else if (eventName(s) === "PaymentReversed") {
      nets.set(p.player, (nets.get(p.player) || 0n) - (cents(p.amount) || 0n));
    }
  }
  $("wagers").tBodies[0].replaceChildren(...wagers.map((w) => {
    const settled = settlements.get(w.wager_id);
    return el(
      "tr", { dataset: { wager: w.wager_id, player: w.player, payout: w.settled ? w.payout : "", result: w.settled ? w.result : "" } },
      el("td", {}, el("code", { text: w.wager_id })),
      el("td", { text: w.player }),
      el("td", { text: w.kind }),
      el("td", { text: w.hand || "–" }),
      el("td", { class: "num", text: w.stake }),
      el("td", { text: w.settled ? w.result : "open" }),
      el("td", { class: "num", text: w.settled ? w.payout : "–" }),
      el("td", {}, settled ? ruleLink(settled.rule) : "–"),
    );
  }));
  $("nets").tBodies[0].replaceChildren(...[...nets.entries()].sort().map(([player, net]) => el(
    "tr", { dataset: { player, net: show(net) } },
    el("td", { text: player }),
    el("td", { class: `num ${net < 0n ? "loss" : net > 0n ? "gain" : ""}`, text: show(net) }),
  )));
  $("results-box").hidden = false;
}

async function loadVerification(roundId) {
  const box = $("verify-box");
  const verdictBox = $("verdict");
  const proofBox = $("proof");
  verdictBox.replaceChildren();
  proofBox.replaceChildren();
  if (!may("audit.read") && !may("audit.proof")) return;
  box.hidden = false;
  if (may("audit.read")) {
    try {
      const v = await get(`/rounds/${enc(roundId)}/verification`);
      verdictBox.append(
        el("p", { class: `verdict ${v.ok ? "ok" : "fail"}`, dataset: { ok: String(v.ok) } },
          el("strong", { text: v.ok ? "Verified" : "Verification FAILED" }),
          ` · ${v.events} events · checks: ${v.checks.join(", ")}${v.final === null || v.final === undefined ? "" : v.final ? " · final (witnessed)" : " · not final yet"}`),
        v.notes.length ? el("ul", { class: "notes" }, v.notes.map((n) => el("li", { text: n }))) : null,
      );
      if (v.discrepancies.length) {
        verdictBox.append(el(
          "table", { class: "grid discrepancies" },
          el("caption", { text: "Discrepancies" }),
          el("thead", {}, el("tr", {}, ["Position", "Event", "Field", "Expected", "Recorded", "Rule", "Check"].map((h) => el("th", { scope: "col", text: h })))),
          el("tbody", {}, v.discrepancies.map((d) => el(
            "tr", { dataset: { position: d.position ?? "" } },
            el("td", { text: d.position ?? "–" }), el("td", { text: d.event ?? "–" }), el("td", { text: d.field ?? "–" }),
            el("td", {}, el("code", { text: JSON.stringify(d.expected) })), el("td", {}, el("code", { text: JSON.stringify(d.recorded) })),
            el("td", {}, d.rule ? ruleLink(d.rule) : "–"), el("td", { text: d.check ?? "" }),
          ))),
        ));
      } else {
        verdictBox.append(el("p", { class: "help", text: "No discrepancy: every consequence, card and amount is what the rules give for the recorded inputs." }));
      }
    } catch (err) {
      verdictBox.append(el("p", { class: "error", text: problemText(err) }));
    }
  }
  if (may("audit.proof")) {
    try {
      const proof = await get(`/rounds/${enc(roundId)}/proof`);
      const cp = proof.checkpoint || {};
      proofBox.append(
        el("p", { dataset: { checkpoint: cp.number ?? "" } }, el("strong", { text: "Inclusion proof" }),
          ` in checkpoint #${cp.number} of ${cp.origin} (tree size ${cp.size}, root `, el("code", { text: cp.root }), `): ${proof.leaves.length} leaves.`),
        el("details", {}, el("summary", { text: "The signed checkpoint" }), el("pre", { text: cp.note || "" })),
      );
    } catch (err) {
      proofBox.append(el("p", { class: "help", dataset: { proof: "none" }, text: err instanceof ApiError && err.status === 409 ? `No inclusion proof yet: ${err.problem.detail}` : problemText(err) }));
    }
  }
}

// ------------------------------------------------------------------------------ stepping
function go(index) {
  if (!state.steps.length) return;
  state.index = Math.min(Math.max(index, 0), state.steps.length - 1);
  const step = state.steps[state.index];
  $("step-now").replaceChildren(stepPanel(step, state.index, state.steps.length));
  drawTable($("felt"), state.steps, state.index, state.facts, state.player);
  drawOrder($("deal-order"), state.steps, state.facts, state.index);
  $("slider").value = String(state.index + 1);
  $("step-count").textContent = `Step ${state.index + 1} of ${state.steps.length}`;
  $("first").disabled = $("prev").disabled = state.index === 0;
  $("last").disabled = $("next").disabled = state.index === state.steps.length - 1;
  for (const li of $("timeline").children) {
    const current = Number(li.dataset.index) === state.index;
    li.classList.toggle("current", current);
    if (current) li.setAttribute("aria-current", "step");
    else li.removeAttribute("aria-current");
  }
  const current = $("timeline").children[state.index];
  if (current && !current.hidden) current.scrollIntoView({ block: "nearest" });
  const params = new URLSearchParams({ round: state.round.round_id, step: String(state.index + 1) });
  if (state.player) params.set("player", state.player);
  history.replaceState(null, "", `/ui/?${params}`);
}

function onKey(event) {
  if (!state.steps.length || $("layout").hidden) return;
  const tag = (event.target && event.target.tagName) || "";
  if (["INPUT", "SELECT", "TEXTAREA"].includes(tag) && event.target.id !== "slider") return;
  const moves = { ArrowRight: state.index + 1, ArrowLeft: state.index - 1, Home: 0, End: state.steps.length - 1 };
  if (event.key in moves) {
    event.preventDefault();
    go(moves[event.key]);
  }
}

function printSummary() {
  if (state.steps.length) go(state.steps.length - 1);
  const book = $("rulebook");
  const wasOpen = book.open;
  book.open = true;
  window.print();
  book.open = wasOpen;
}

// ------------------------------------------------------------------------------ wiring
function wire() {
  $("signin-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const token = $("api-key").value.trim();
    $("api-key").value = "";
    if (await signIn(token)) $("f-round").focus();
  });
  $("sign-out").addEventListener("click", signOut);
  $("find-form").addEventListener("submit", onFind);
  $("more").addEventListener("click", () => search({ ...state.lastSearch, cursor: state.next }, { more: true }));
  $("player-form").addEventListener("submit", (event) => {
    event.preventDefault();
    findPlayers($("player-q").value.trim());
  });
  $("back-to-search").addEventListener("click", () => {
    $("round").hidden = true;
    $("find").hidden = false;
    history.replaceState(null, "", "/ui/");
    $("f-round").focus();
  });
  $("print").addEventListener("click", printSummary);
  $("first").addEventListener("click", () => go(0));
  $("prev").addEventListener("click", () => go(state.index - 1));
  $("next").addEventListener("click", () => go(state.index + 1));
  $("last").addEventListener("click", () => go(state.steps.length - 1));
  $("slider").addEventListener("input", () => go(Number($("slider").value) - 1));
  $("only-decisions").addEventListener("change", filterTimeline);
  $("tl-player").addEventListener("change", filterTimeline);
  document.addEventListener("keydown", onKey);
  document.addEventListener("click", (event) => {
    const link = event.target.closest && event.target.closest("a.rule");
    if (link) {
      event.preventDefault();
      openRule(link.dataset.rule);
    }
  });
}

async function start() {
  wire();
  const token = getKey();
  if (token && (await signIn(token))) {
    const params = new URLSearchParams(location.search);
    if (params.get("round")) {
      await openRound(params.get("round"), { player: params.get("player") || "", step: params.get("step") });
    }
  } else {
    $("api-key").focus();
  }
  document.body.dataset.ready = "true";
}

start();
