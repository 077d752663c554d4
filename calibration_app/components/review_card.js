// The review card: the current answer drawn, labeled, committed and reconciled in the browser.
//
// The page sends the answer's view (calibration/card.py `answer_view`: question, answer, claim
// spans, chunk ids, the reviewer's own labels; the judge only once the answer is committed) and
// the card's route (`data.route`). Every key that writes is one request to that route
// (calibration_app/card_route.py), sent one at a time in the order pressed: a verdict, skip or
// unclear with the claim's evidence and note, the commit, a reconcile choice, the next answer.
// A verdict draws the next claim at once; its claim shows "saving…" until the reply names the
// label event written ("saved"). Each request names the label events the card showed, so one
// made on a stale view (another tab) is refused with a sentence and the answer as it is now.
// The card draws the reviewer's progress and the answer's chunks too, so it moves from answer to
// answer on its route's replies alone. The page hears of the card only when it has something to
// draw: an event (a trigger, "event": a dialog asked for, the chunks in full, a token to renew),
// which names the answer the card shows and its move count, and the end of the queue (a state,
// "answer"); never a label.
//
// What a key does and where the card goes next are card_rules.js's (joined before this file,
// whose names the `global` comment below declares for the linter).
// Untrusted text (question, answer, claims, ids, notes, rationales) goes into the DOM only as
// textContent.
/* global VERDICTS, STATUS_TEXT, claimState, isComplete, afterLabel, forward, toggleEvidence,
   stepSelection, revealOrder, revealSummary, keyAction, evidencePrompt, liveProgress,
   progressText */

// One card per page; module state outlives the function's calls (one per data update).
const card = {
  data: null, // the page's data: route, definitions, colours, the view's JSON text
  seen: null, // the last view text taken from the page
  view: null, // the answer as the server last described it
  cursor: null, // claim index shown; null: the last look or the reveal
  entries: {}, // claim pk -> latest key press {kind, verdict, evidence, note, event, saved}
  drafts: {}, // claim pk -> {evidence, note} picked or typed, not yet sent
  picking: false, // after E the number keys pick evidence
  selected: null, // the reveal's disagreement K / J act on
  shownAt: 0,
  queue: [], // requests not yet answered, in order; the first is on its way when `sending`
  sending: false,
  message: null, // {text, failure}: why the last request did nothing; cleared by the next key
  moves: 0, // how often the card moved to another answer (or the queue's end) on its own
  cycle: null, // the cycle of the page's data last taken
  root: null,
  frame: null, // the root's parts: {top, grid, left, pane}
  setStateValue: null,
  setTriggerValue: null,
};

const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
};

const claims = () => (card.view && card.view.claims) || [];
const mode = () => (card.view ? card.view.mode : (card.data && card.data.mode) || "done");
const stateOf = (c) => claimState(c, card.entries[c.pk]);
const complete = () => isComplete(claims(), card.entries);
// A commit or N on its way: the claim keys wait for what it brings. The queue going on after a
// skip (`onward`) does not stop them: a key then acts on the claim still shown.
const busy = () => card.queue.some((r) => r.do === "commit" || (r.do === "next" && !r.onward));
const committing = () => card.queue.some((r) => r.do === "commit");
// The label event the card shows for a claim: its own last write, else the server's.
const eventOf = (c) => {
  const e = card.entries[c.pk];
  return e && e.event !== undefined ? e.event : c.event;
};

function draft(c) {
  if (!card.drafts[c.pk]) {
    const e = card.entries[c.pk];
    card.drafts[c.pk] = e ? { evidence: [...e.evidence], note: e.note || "" } : { evidence: [...c.evidence], note: c.note || "" };
  }
  return card.drafts[c.pk];
}

// An event for the page: a dialog asked for, the chunks in full, a token to renew, a name
// signed out; each names the answer shown and the card's moves, so the page follows the card.
function emit(what) {
  const where = { answer: card.view ? card.view.answer : null, move: card.moves };
  if (card.setTriggerValue) card.setTriggerValue("event", { ...what, ...where });
}

// The end of the queue: the page draws it. A state, so that no event pressed at the same
// moment takes its place.
function finished() {
  card.moves += 1;
  if (card.setStateValue) card.setStateValue("answer", { answer: null, move: card.moves });
}

// ------------------------------------------------------------------ requests

function send(request) {
  card.queue.push(request);
  if (!card.sending) pump();
}

// The request as it leaves, after the replies before it: the view it is based on (and for K
// or J the disagreement selected) is the card's by then. Null: nothing left to do (K or J
// with no disagreement to act on).
function body(request) {
  const { seq: _seq, onward: _onward, ...fields } = request; // the card's own marks, not sent
  const out = { answer: card.view.answer, ...fields };
  if (request.do === "reconcile") {
    if (card.view.mode !== "reveal" || card.selected === null) return null;
    out.claim = card.selected;
  }
  const c = claims().find((x) => x.pk === out.claim);
  if (request.do === "label" || request.do === "reconcile") out.base = c ? eventOf(c) : null;
  if (request.do === "commit") out.seen = Object.fromEntries(claims().map((x) => [x.pk, eventOf(x)]));
  return out;
}

// One request to the route: its status and reply (status 0: no reply, the request stays
// queued and goes again with the next key).
async function post(route, sent) {
  try {
    const reply = await fetch(route.url, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      credentials: "same-origin",
      body: JSON.stringify({ token: route.token, cycle: route.cycle, reviewer: route.reviewer, request: sent }),
    });
    // A short reply comes whole in a header (card_route.py `_reply`), a long one as the body.
    const head = reply.headers.get(route.reply_header);
    return { status: reply.status, out: head ? JSON.parse(head) : await reply.json() };
  } catch {
    return { status: 0, out: null };
  }
}

async function pump() {
  const route = card.data && card.data.route;
  if (card.sending || !card.queue.length || !route || !card.view) return;
  const request = card.queue[0];
  const sent = body(request);
  if (sent === null) {
    card.queue.shift();
    pump();
    return;
  }
  card.sending = true;
  const { status, out } = await post(route, sent);
  card.sending = false;
  if (status === 200 && out) {
    card.queue.shift();
    answered(sent, request.seq, out);
    pump();
  } else if (status === 403 && out && out.error === "token") {
    emit({ do: "token" }); // the page sends a fresh token; the queue goes on with it
  } else if (status === 403 && out && out.error === "signed out") {
    card.queue = [];
    emit({ do: "signed out", why: out.why || "" });
  } else if (status === 400 && out) {
    card.queue.shift(); // never sent again: it would be refused again
    card.message = { text: out.error, failure: false, title: "Not recorded: " };
    pump();
  } else {
    card.message = { text: (out && out.why) || "the server did not answer", failure: true };
  }
  draw();
}

function answered(request, seq, out) {
  if (!out.ok) {
    card.message = { text: out.refused, failure: false, title: request.do === "next" ? "" : "Not recorded: " };
    // What was queued on the refused view goes too: that claim's keys, a commit, the next answer.
    card.queue = card.queue.filter((r) => r.claim !== request.claim && r.do !== "commit" && r.do !== "next");
    if (out.view) take(out.view, { refused: request.claim });
    return;
  }
  const e = request.do === "label" ? card.entries[request.claim] : null;
  if (e) {
    e.event = out.event;
    if (e.sent === seq) e.saved = true;
  }
  if (out.done) {
    card.view = null;
    finished();
    return;
  }
  if (out.view) {
    if (out.view.answer !== card.view.answer) card.moves += 1;
    take(out.view, { select: request.do === "reconcile", reply: true });
  }
}

// ------------------------------------------------------------------ taking a view

// The answer as the server describes it. A new answer starts afresh; the same one keeps the
// card's cursor and the key presses the view does not hold yet. `refused`: go back to that
// claim, which now shows its current label; `select`: the reveal's selection is the server's
// (after a reconcile); `reply`: a route's reply, whose chunks are cut: the card keeps the
// chunks it shows (in full when the page sent them so).
function take(view, { refused, select, reply } = {}) {
  const same = card.view && view.answer === card.view.answer;
  if (same && reply) view.chunks = card.view.chunks;
  card.view = view;
  if (!same) {
    card.entries = {};
    card.drafts = {};
    card.cursor = view.index === undefined ? null : view.index;
    card.picking = false;
    card.shownAt = performance.now();
  }
  for (const c of view.claims) {
    const e = card.entries[c.pk];
    if (c.pk === refused || (e && e.saved && c.event !== null && c.event >= e.event)) {
      delete card.entries[c.pk];
      delete card.drafts[c.pk];
    }
  }
  if (view.mode === "reveal") {
    const rv = view.reveal;
    card.cursor = null;
    const keep = same && !select && rv.disagreements.includes(card.selected);
    card.selected = keep ? card.selected : rv.selected;
  } else if (refused !== undefined) {
    const at = view.claims.findIndex((c) => c.pk === refused);
    card.cursor = at >= 0 ? at : view.index;
  } else if (same && view.mode === "claim" && card.cursor === null && !complete()) {
    card.cursor = view.index; // the last look with a claim no longer settled
  }
}

// Whether the page's view of the card's answer was read before a write the card has had
// answered: the answer is committed here and not there, or a claim's label event is older.
function behind(view) {
  if (!card.view || view.answer !== card.view.answer) return false;
  if (card.view.mode === "reveal" && view.mode !== "reveal") return true;
  const mine = Object.fromEntries(claims().map((c) => [c.pk, eventOf(c)]));
  return view.claims.some((c) => (mine[c.pk] || 0) > (c.event || 0));
}

// ------------------------------------------------------------------ actions

let seq = 0;

function label(kind, verdict) {
  const c = claims()[card.cursor];
  if (!c) return;
  const d = draft(c);
  const note = d.note.trim() ? d.note : null;
  seq += 1;
  card.entries[c.pk] = { kind, verdict, evidence: [...d.evidence], note, event: eventOf(c), saved: false, sent: seq };
  delete card.drafts[c.pk];
  card.picking = false;
  const ms = Math.max(0, Math.round(performance.now() - card.shownAt));
  send({ do: "label", claim: c.pk, kind, verdict, evidence: [...d.evidence], note, ms, seq });
  const next = afterLabel(claims(), card.entries, card.cursor);
  if (next.queue) send({ do: "next", onward: true });
  else moveTo(next.index);
}

function moveTo(index) {
  card.cursor = index;
  card.picking = false;
  card.shownAt = performance.now();
}

function pick(number) {
  const c = claims()[card.cursor];
  const chunk = (card.view.chunks || [])[number - 1];
  if (!c || !chunk) return;
  const d = draft(c);
  d.evidence = toggleEvidence(d.evidence, chunk.id, card.view.chunks.map((ch) => ch.id));
}

function commit() {
  if (!busy() && complete()) send({ do: "commit" }); // the server checks the evidence asked for
}


// One action (card_rules.js `keyAction`, or a button): a refusal shown before clears, and a
// request a failure left queued goes again.
function act(a) {
  card.message = null;
  if (!card.sending && card.queue.length) pump();
  switch (a.do) {
    case "dialog": emit({ do: "dialog", which: a.which }); break;
    case "label": label(a.kind, a.verdict); break;
    case "pick": pick(a.number); break;
    case "noChunk": card.message = { text: `This answer has no chunk ${a.number}: its chunks are numbered 1 to ${card.view.chunks.length}.`, failure: false }; break;
    case "picking": card.picking = a.on; break;
    case "move": moveTo(a.to); break;
    case "commit": commit(); break;
    case "reconcile": send({ do: "reconcile", choice: a.choice }); break;
    case "select": card.selected = stepSelection(card.view.reveal.disagreements, card.selected, a.step); break;
    case "next": send({ do: "next" }); break;
    default: break;
  }
  draw();
}

// ------------------------------------------------------------------ drawing

// A verdict's badge ("You SUPPORTED"); without a verdict, gray with `prefix` alone
// ("Judge: hidden") or "unclear".
function badge(verdict, prefix) {
  const colours = card.data.colours || {};
  const text = verdict ? (prefix ? prefix + " " : "") + verdict : prefix || "unclear";
  const b = el("span", "rc-badge", text);
  const colour = colours[verdict] || "#6b7280";
  b.style.color = colour;
  b.style.borderColor = colour;
  return b;
}

function savedMark(c) {
  const e = card.entries[c.pk];
  if (!e) return el("span", "rc-saved", c.status === "todo" ? "" : "saved");
  if (e.saved) return el("span", "rc-saved", "saved");
  const failed = card.message && card.message.failure;
  return el("span", "rc-saved rc-unsaved", failed ? "not saved" : "saving…");
}

function drawAnswer(root, index) {
  const v = card.view;
  root.appendChild(el("div", "rc-question", v.question));
  if (!v.show_answer && index === null && v.mode !== "reveal") return;
  const box = el("div", "rc-answer");
  const span = index === null ? null : (v.spans || [])[index];
  if (span) {
    box.appendChild(document.createTextNode(v.answer_text.slice(0, span[0])));
    box.appendChild(el("mark", null, v.answer_text.slice(span[0], span[1])));
    box.appendChild(document.createTextNode(v.answer_text.slice(span[1])));
  } else {
    box.textContent = v.answer_text;
  }
  root.appendChild(box);
  for (const fact of v.facts || []) root.appendChild(el("div", "rc-fact", fact));
}

function button(text, cls, onClick, opts = {}) {
  const b = el("button", "rc-button " + (cls || ""), text);
  b.type = "button";
  if (opts.title) b.title = opts.title;
  if (opts.disabled) b.disabled = true;
  if (opts.primary) b.classList.add("rc-primary");
  b.addEventListener("click", (e) => {
    e.preventDefault();
    onClick();
  });
  return b;
}

function drawClaim(root, index) {
  const d = card.data, v = card.view, cs = claims(), c = cs[index], n = cs.length;
  const s = stateOf(c);
  const box = el("div", "rc-claim");
  box.dataset.pk = String(c.pk);
  box.dataset.picking = card.picking ? "yes" : "no";
  box.appendChild(el("div", "rc-title", `Claim ${c.number} of ${n}`));
  if (n > 1 || v.answer_text.trim() !== c.text.trim()) box.appendChild(el("div", "rc-text", c.text));
  const verdicts = el("div", "rc-row rc-verdicts");
  for (const verdict of VERDICTS) {
    const b = button(verdict, "rc-verdict", () => act({ do: "label", kind: "blind", verdict }), {
      title: (d.definitions || {})[verdict],
      primary: s.verdict === verdict,
    });
    b.dataset.verdict = verdict;
    b.style.borderLeftColor = (d.colours || {})[verdict] || "";
    if (s.verdict !== verdict) b.style.color = (d.colours || {})[verdict] || "";
    verdicts.appendChild(b);
  }
  box.appendChild(verdicts);
  const row = el("div", "rc-row rc-actions");
  row.appendChild(button("Skip", "rc-skip", () => act({ do: "label", kind: "skip", verdict: null }), {
    title: "Put it off: it comes back at the end of your queue until settled.",
  }));
  row.appendChild(button("Unclear", "rc-unclear", () => act({ do: "label", kind: "unclear", verdict: null }), {
    title: "Needs discussion: a lead decides this claim, and the judge's verdict on it stays hidden from you until then.",
  }));
  row.appendChild(button("Evidence (E)", "rc-evidence-key", () => act({ do: "picking", on: !card.picking }), {
    disabled: !(v.chunks || []).length,
    primary: card.picking,
    title: "E: the number keys pick evidence chunks until E, Esc or Enter.",
  }));
  const gap = el("span", "rc-gap");
  row.appendChild(gap);
  row.appendChild(button("← Back", "rc-back", () => act({ do: "move", to: index - 1 }), { disabled: index === 0 }));
  const ahead = forward(cs, card.entries, index);
  row.appendChild(button("Forward →", "rc-forward", () => act({ do: "move", to: ahead }), {
    disabled: ahead === undefined,
    title: ahead === null ? "Back to the last look" : undefined,
  }));
  box.appendChild(row);
  if (s.status !== "todo") {
    box.appendChild(el("div", "rc-muted rc-current", `Your current label: ${s.verdict || STATUS_TEXT[s.status]} (a new choice is added to the history)`));
  }
  const dr = draft(c);
  if ((v.chunks || []).length) {
    const ev = el("div", "rc-row rc-evidence");
    ev.appendChild(el("span", card.picking ? "rc-prompt rc-picking" : "rc-muted rc-prompt", evidencePrompt(card.picking, v.chunks.length, v.require_evidence)));
    for (const ch of v.chunks) {
      const on = dr.evidence.includes(ch.id);
      const chip = button(`[${ch.number}] ${ch.shown}`, "rc-chip", () => act({ do: "pick", number: ch.number }), { primary: on });
      chip.dataset.number = String(ch.number);
      chip.setAttribute("aria-pressed", on ? "true" : "false");
      ev.appendChild(chip);
    }
    box.appendChild(ev);
  }
  const note = el("textarea", "rc-note");
  note.setAttribute("aria-label", "Note (optional)");
  note.placeholder = "Note (optional): saved with the verdict";
  note.maxLength = 2000;
  note.rows = 1;
  note.value = dr.note;
  note.addEventListener("input", () => {
    dr.note = note.value;
  });
  box.appendChild(note);
  root.appendChild(box);
}

function drawList(root, index) {
  const cs = claims();
  if (index === null || cs.length < 2) return;
  const list = el("div", "rc-list");
  cs.forEach((c, i) => {
    const s = stateOf(c);
    const line = el("div", "rc-line");
    line.dataset.pk = String(c.pk);
    line.appendChild(el("span", null, (i === index ? "▶ " : "") + `${c.number}. [${s.verdict || STATUS_TEXT[s.status]}] `));
    line.appendChild(el("span", null, c.text));
    line.appendChild(savedMark(c));
    list.appendChild(line);
  });
  root.appendChild(list);
}

// The evidence and note a claim's label carries, as the card shows them (its own key press
// first).
function labelDetails(c) {
  const e = card.entries[c.pk];
  const evidence = e ? e.evidence : c.evidence;
  const note = e ? e.note || "" : c.note;
  const shown = new Map((card.view.chunks || []).map((ch) => [ch.id, ch.shown]));
  const parts = [];
  if (evidence.length) parts.push("Evidence: " + evidence.map((id) => shown.get(id) || id).join(", "));
  if (note && note.trim()) parts.push("Note: " + note);
  return parts;
}

function drawLastLook(root) {
  const v = card.view, cs = claims();
  const box = el("div", "rc-last-look");
  const head = el("div", "rc-row");
  const words = el("div", "rc-grow");
  words.appendChild(el("div", "rc-title", "Last look before the reveal"));
  words.appendChild(el("div", "rc-muted", "Your verdicts on this answer, with their evidence and notes. Change any of them now; after the commit the judge is shown and your blind verdicts are final."));
  head.appendChild(words);
  const allSaved = cs.every((c) => !card.entries[c.pk] || card.entries[c.pk].saved);
  const needed = allSaved ? v.evidence_needed : null;
  const committing = card.queue.some((r) => r.do === "commit");
  head.appendChild(button(committing ? "Committing…" : "Commit and reveal the judge (Enter)", "rc-commit", () => act({ do: "commit" }), {
    primary: true,
    disabled: !!needed || committing,
  }));
  box.appendChild(head);
  if (needed) box.appendChild(el("div", "rc-warning rc-evidence-needed", needed));
  cs.forEach((c, i) => {
    const s = stateOf(c);
    const line = el("div", "rc-row rc-look");
    line.dataset.pk = String(c.pk);
    line.appendChild(s.verdict ? badge(s.verdict) : badge(null));
    const text = el("div", "rc-grow");
    text.appendChild(el("div", null, `${c.number}. ${c.text}`));
    for (const part of labelDetails(c)) text.appendChild(el("div", "rc-muted rc-detail", part));
    line.appendChild(text);
    line.appendChild(savedMark(c));
    line.appendChild(button("Change", "rc-change", () => act({ do: "move", to: i })));
    box.appendChild(line);
  });
  root.appendChild(box);
}

function drawReveal(root) {
  const v = card.view, rv = v.reveal, cs = claims();
  const byPk = Object.fromEntries(cs.map((c) => [c.pk, c]));
  const numbers = Object.fromEntries(cs.map((c) => [c.pk, c.number]));
  const box = el("div", "rc-reveal");
  const head = el("div", "rc-row rc-reveal-head");
  const words = el("div", "rc-grow");
  words.appendChild(el("div", "rc-summary", revealSummary(rv)));
  if (card.selected !== null && card.selected !== undefined) {
    const more = rv.disagreements.length > 1 ? " · ← → choose another disagreement" : "";
    words.appendChild(el("div", "rc-muted", `K / J act on claim ${numbers[card.selected]}${more}`));
  }
  head.appendChild(words);
  const moving = card.queue.some((r) => r.do === "next");
  head.appendChild(button(moving ? "Opening…" : "Next answer (N)", "rc-next", () => act({ do: "next" }), {
    primary: true,
    disabled: moving,
    title: rv.why_not_next || "The next answer of your queue",
  }));
  box.appendChild(head);
  for (const r of revealOrder(rv.rows, numbers)) box.appendChild(revealRow(r, byPk[r.pk]));
  root.appendChild(box);
}

function revealRow(r, c) {
  const row = el("div", "rc-reveal-row" + (r.disagrees ? " rc-disagreement" : "") + (r.pk === card.selected ? " rc-selected" : ""));
  row.dataset.pk = String(r.pk);
  const head = el("div", "rc-row");
  head.appendChild(el("b", null, `Claim ${c.number}`));
  head.appendChild(r.blind ? badge(r.blind, "You") : badge(null, "You: unclear"));
  if (r.hidden) head.appendChild(badge(null, "Judge: hidden"));
  else if (r.judge) head.appendChild(badge(r.judge, "Judge"));
  if (r.pk === card.selected) head.appendChild(el("span", "rc-muted", "▶ K and J act on this claim"));
  row.appendChild(head);
  if (r.disagrees) {
    const choose = el("div", "rc-row rc-choose");
    choose.appendChild(button("I keep my verdict (K)", "rc-keep", () => { card.selected = r.pk; act({ do: "reconcile", choice: "keep" }); }, {
      primary: r.reconciled === "keep",
      title: "The judge is wrong on this claim.",
    }));
    choose.appendChild(button("The judge is right (J)", "rc-judge-right", () => { card.selected = r.pk; act({ do: "reconcile", choice: "judge_right" }); }, {
      primary: r.reconciled === "judge_right",
      title: "My first call was a slip; take the judge's verdict.",
    }));
    row.appendChild(choose);
    if (r.reconciled === "keep") row.appendChild(el("div", "rc-muted", `You kept your verdict: a judge error. Final label ${r.final}.`));
    if (r.reconciled === "judge_right") row.appendChild(el("div", "rc-muted", `The judge was right: your blind label stays in the history, the final label is ${r.final} (counted as a slip).`));
  }
  row.appendChild(el("div", "rc-text", c.text));
  if (r.adjudicated) row.appendChild(el("div", "rc-muted", `A lead decided ${r.adjudicated}.`));
  else if (r.hidden) row.appendChild(el("div", "rc-muted", "You marked this claim unclear: it waits for a lead's decision, and the judge's verdict stays hidden until then."));
  if (r.judge) {
    row.appendChild(el("div", "rc-line", "Judge's rationale: " + (r.rationale || "(none given)")));
    if (r.judge_evidence.length) row.appendChild(el("div", "rc-line", "Judge's evidence: " + r.judge_evidence.join(", ")));
  } else if (!r.hidden) {
    row.appendChild(el("div", "rc-muted", "The judge gave no verdict on this claim."));
  }
  for (const part of labelDetails(c)) row.appendChild(el("div", "rc-line", "Your " + part[0].toLowerCase() + part.slice(1)));
  return row;
}

function drawMessage(root) {
  const m = card.message;
  if (!m) return;
  const box = el("div", "rc-message");
  box.setAttribute("role", "alert");
  box.appendChild(el("div", "rc-title", (m.failure ? "Not saved: " : m.title || "") + m.text));
  if (m.failure) {
    box.appendChild(el("div", null, "Your verdicts stay on this card, marked “not saved”; they are sent again with the next key, or now:"));
    box.appendChild(button("Try again", "rc-retry", () => act({ do: "retry" })));
  }
  root.appendChild(box);
}

// The root's parts, made once per root: the progress line, then the card (left) beside the
// chunks (right). The chunks' pane is drawn again only for another answer, so that its scroll
// position stays while the reviewer labels.
function frame() {
  const f = card.frame;
  if (f && f.top.parentNode === card.root) return f;
  const top = el("div", "rc-top"), grid = el("div", "rc-grid"), left = el("div", "rc-left");
  const pane = el("div", "rc-chunks");
  pane.setAttribute("aria-label", "Retrieved chunks");
  grid.append(left, pane);
  card.root.replaceChildren(top, grid);
  card.frame = { top, grid, left, pane };
  return card.frame;
}

function drawTop(top) {
  const p = liveProgress(card.view.progress, claims(), card.entries);
  const pct = p.total ? (100 * (p.labeled + p.unclear)) / p.total : 100;
  const words = el("div", "rc-grow rc-progress");
  const bar = el("div", "rc-bar");
  bar.setAttribute("role", "progressbar");
  bar.setAttribute("aria-valuemin", "0");
  bar.setAttribute("aria-valuemax", "100");
  bar.setAttribute("aria-valuenow", String(Math.round(pct)));
  const fill = el("div");
  fill.style.width = `${Math.max(0, Math.min(100, pct)).toFixed(1)}%`;
  bar.appendChild(fill);
  words.append(bar, el("div", "rc-muted rc-progress-text", progressText(p)));
  top.replaceChildren(words);
  for (const [text, which] of [["Answers (L)", "answers"], ["Guidelines (G)", "guidelines"], ["Keys (H)", "keys"]]) {
    const b = button(text, "rc-dialog", () => act({ do: "dialog", which }));
    b.dataset.dialog = which;
    top.appendChild(b);
  }
}

function drawChunks(pane) {
  const chunks = card.view.chunks || [];
  const cut = chunks.map((ch) => ch.more).join(",");
  const another = pane.dataset.answer !== card.view.answer;
  if (another || pane.dataset.cut !== cut) {
    pane.dataset.answer = card.view.answer;
    pane.dataset.cut = cut;
    pane.replaceChildren();
    if (!chunks.length) pane.appendChild(el("div", "rc-muted", "This answer has no chunks."));
    for (const ch of chunks) {
      const box = el("div", "rc-chunk");
      box.dataset.id = ch.id;
      box.appendChild(el("div", "rc-chunk-head", `[${ch.number}] ${ch.shown}` + (ch.source ? ` · ${ch.source}` : "")));
      box.appendChild(el("div", "rc-chunk-text", ch.text));
      if (ch.more) box.appendChild(el("div", "rc-muted", `… ${ch.more.toLocaleString("en-US")} more characters (Show the chunks in full)`));
      pane.appendChild(box);
    }
    if (chunks.some((ch) => ch.long)) {
      const shortened = chunks.some((ch) => ch.more);
      pane.appendChild(button(shortened ? "Show the chunks in full" : "Cut the long chunks again", "rc-full", () => emit({ do: "chunks", full: shortened }), {
        title: "Long chunks are cut so that every key stays quick.",
      }));
    }
    if (another) pane.scrollTop = 0;
  }
  // The evidence picked for the claim shown is marked on its chunks.
  const c = mode() === "claim" && card.cursor !== null ? claims()[card.cursor] : null;
  const picked = c ? draft(c).evidence : [];
  for (const box of pane.querySelectorAll(".rc-chunk")) box.classList.toggle("rc-chunk-picked", picked.includes(box.dataset.id));
}

function draw() {
  const root = card.root;
  if (!root || !card.data) return;
  // A redraw (a reply, say) must not take the note away from the typist.
  const active = document.activeElement;
  const typing = active && active.classList && active.classList.contains("rc-note") && root.contains(active) ? [active.selectionStart, active.selectionEnd] : null;
  const f = frame();
  const m = mode();
  root.dataset.mode = m;
  root.dataset.pending = String(card.queue.length);
  f.left.replaceChildren();
  if (!card.view || !["claim", "last look", "reveal"].includes(m)) {
    f.top.replaceChildren();
    f.pane.replaceChildren();
    delete f.pane.dataset.answer;
    f.grid.hidden = true;
    return;
  }
  f.grid.hidden = false;
  drawTop(f.top);
  const index = m === "reveal" ? null : card.cursor;
  const view = el("div", "rc-card");
  view.dataset.answer = card.view.answer;
  drawAnswer(view, index);
  drawMessage(view);
  if (m === "reveal") drawReveal(view);
  else if (index === null) drawLastLook(view);
  else drawClaim(view, index);
  if (m !== "reveal") drawList(view, index);
  f.left.appendChild(view);
  drawChunks(f.pane);
  const note = view.querySelector(".rc-note");
  if (typing && note) {
    note.focus();
    note.setSelectionRange(typing[0], typing[1]);
  }
  const box = view.querySelector(".rc-answer"), mark = box && box.querySelector("mark");
  if (mark && box.scrollHeight > box.clientHeight) {
    const top = mark.offsetTop - box.offsetTop;
    if (top < box.scrollTop || top + mark.offsetHeight > box.scrollTop + box.clientHeight) box.scrollTop = Math.max(0, top - 8);
  }
}

// ------------------------------------------------------------------ keys

function onKey(e) {
  if (!card.data || !card.root || !card.root.isConnected) return;
  if (e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return;
  if (document.querySelector('[role="dialog"]')) return; // a dialog takes its own keys
  const t = e.target instanceof Element ? e.target : null;
  if (t && (t.tagName === "TEXTAREA" || t.isContentEditable || (t.tagName === "INPUT" && t.getAttribute("aria-expanded") !== "false"))) {
    if (e.key === "Escape" && t.classList.contains("rc-note")) t.blur();
    return; // typing; a closed pick list's box (aria-expanded "false") gives the keys back
  }
  const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
  const m = mode();
  const a = keyAction(key, {
    mode: m,
    cursor: card.cursor,
    claims: claims(),
    entries: card.entries,
    picking: card.picking,
    chunks: (card.view && card.view.chunks ? card.view.chunks : []).length,
    busy: busy(),
    committing: committing(),
  });
  if (!a) return;
  e.preventDefault();
  e.stopImmediatePropagation();
  if (t && t.tagName === "INPUT") t.blur();
  if (a.do !== "wait") act(a);
}

function unsaved() {
  if (card.queue.length) return true;
  return Object.values(card.drafts).some((dr) => dr.note && dr.note.trim());
}

if (!window.__calibrationReviewCard) {
  window.__calibrationReviewCard = true;
  window.addEventListener("keydown", onKey, true);
  window.addEventListener("beforeunload", (e) => {
    if (card.root && card.root.isConnected && unsaved()) {
      e.preventDefault();
      e.returnValue = "";
    }
  });
}

// ------------------------------------------------------------------ the page's data

export default function (component) {
  const { data, parentElement, setStateValue, setTriggerValue } = component;
  card.setStateValue = setStateValue;
  card.setTriggerValue = setTriggerValue;
  let root = parentElement.querySelector(".rc-root");
  if (!root) {
    root = el("div", "rc-root");
    parentElement.appendChild(root);
  }
  card.root = root;
  if (!data) return;
  card.data = data;
  // The view comes as one JSON text (pages/review.py); a page run that sends the same text
  // again leaves the card as it is, and so does one that began before the card's latest move
  // or write (`behind`): the page learns of the card's moves from its events.
  // Another cycle (the page's picker) is taken whatever the card's moves.
  const cycle = data.route ? data.route.cycle : null;
  const another = card.cycle !== null && cycle !== card.cycle;
  card.cycle = cycle;
  if (data.view !== card.seen || another) {
    card.seen = data.view;
    const view = data.view ? JSON.parse(data.view) : null;
    if ((data.move || 0) < card.moves && !another) return draw();
    if (!view) card.view = null;
    else if (!behind(view)) take(view);
  }
  pump(); // a request waiting for a fresh token goes now
  draw();
}
