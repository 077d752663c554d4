// The review card: the current answer's claims drawn and labeled in the browser.
//
// The server sends the answer (question, text, claim spans, chunk ids, the reviewer's current
// labels: never a judge verdict or rationale before the commit). A key press draws the next
// claim at once, here; the card then reports the whole state of the answer (each claim's latest
// verdict with the sequence number of its key press, and the keys passed on to the server) as
// one state value, so a run of the server that comes after several presses still sees all of
// them. The server writes what is new (calibration.review.record_card) and acknowledges each
// claim's sequence number: the claim shows "saved". A write that fails keeps the verdicts here
// with a message; a claim refused (labeled in another tab) takes the server's label again.
//
// Two ways to the server. Verdicts go to the verdict route (card_route.py, `data.route`): a
// POST of the same report, written with no script run, one request at a time (keys pressed
// meanwhile go with the next one). Everything else goes as the component's state value, a run
// of the page: keys for the server (commit, Next, dialogs), cursor moves, and any report the
// route did not write cleanly (a refusal, a storage failure, no route), which the page then
// writes or explains as before. The page's report carries what the route wrote (`written`), so
// nothing is written twice.
//
// Untrusted text (question, answer, claims, ids, notes) goes into the DOM only as textContent.

const VERDICTS = ["SUPPORTED", "CONTRADICTED", "UNSUPPORTED"];
const VERDICT_KEYS = { "1": "SUPPORTED", "2": "CONTRADICTED", "3": "UNSUPPORTED" };
const DIALOG_KEYS = { l: "answers", g: "guidelines", h: "keys", "?": "keys" };
const STATUS_TEXT = { todo: "not labeled yet", skipped: "skipped", unclear: "unclear, needs discussion" };
const EVIDENCE_KEYS = 9;

// One card per page; module state outlives the function's calls (one per data update).
const card = {
  seq: Date.now(),     // a later key press always has a larger number, across reloads too
  entries: {},         // claim pk -> latest verdict {seq, kind, verdict, evidence, note, base, ms}
  drafts: {},          // claim pk -> {evidence: [ids], note} typed or picked, not yet sent
  actions: [],         // keys passed on to the server, not yet acknowledged
  answer: null,
  cursor: null,        // claim index shown; null: the last look
  waiting: false,      // only skipped claims left here: the server says where to go
  moved: -1,           // the server's last cursor override seen
  committing: false,
  picking: false,      // after E the number keys pick evidence
  shownAt: 0,
  retry: 0,
  routeAck: {},        // claim pk -> sequence number the route acknowledged
  written: {},         // claim pk -> [sequence number, label event] the route wrote
  posting: false,      // a POST to the route is on its way
  again: false,        // keys pressed while it was: post again when it is back
  pageAfter: false,    // a report for the page waits for the POST
  viaPage: false,      // a report went through the page: its run must come back before a POST
  data: null,
  root: null,
  setStateValue: null,
};

const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
};

const claims = () => (card.data && card.data.claims) || [];
const entryOf = (pk) => card.entries[pk];
const ackOf = (pk) => Math.max((card.data.ack || {})[pk] || 0, card.routeAck[pk] || 0);
const acked = (pk) => {
  const e = entryOf(pk);
  return !e || ackOf(pk) >= e.seq;
};

// A claim's state as the card shows it: its latest key press, else the server's label.
function status(c) {
  const e = entryOf(c.pk);
  if (!e) return { status: c.status, verdict: c.verdict };
  if (e.kind === "blind") return { status: "labeled", verdict: e.verdict };
  return { status: e.kind === "skip" ? "skipped" : "unclear", verdict: null };
}
const settled = (c) => { const s = status(c); return s.verdict !== null || s.status === "unclear"; };
const complete = () => claims().length > 0 && claims().every(settled);

function draft(c) {
  if (!card.drafts[c.pk]) {
    const e = entryOf(c.pk);
    card.drafts[c.pk] = e ? { evidence: [...e.evidence], note: e.note || "" }
                          : { evidence: [...c.evidence], note: c.note || "" };
  }
  return card.drafts[c.pk];
}

// Where the card goes after a verdict on claim `index` (calibration.review.position_after_label):
// the next never-seen claim after it, wrapping; else the last look when every claim is settled;
// else (only skipped claims left) the server decides, after the write.
function afterLabel(index) {
  const cs = claims(), n = cs.length;
  for (let k = 1; k <= n; k++) {
    const i = (index + k) % n;
    if (status(cs[i]).status === "todo") return { index: i };
  }
  return complete() ? { index: null } : { wait: true };
}

function body(viaPage) {
  const claimsNow = {}, written = {};
  for (const [pk, e] of Object.entries(card.entries)) {
    claimsNow[pk] = e;
    if (card.written[pk]) written[pk] = card.written[pk];
  }
  return {
    answer: card.answer, index: card.cursor, waiting: viaPage && card.waiting, claims: claimsNow,
    actions: viaPage ? card.actions : [], retry: viaPage ? card.retry : 0, written,
  };
}

// A report: to the route when it is only verdicts, else (or when the route fails) to the page.
function report(viaPage) {
  if (!card.setStateValue) return;
  const d = card.data || {}, route = d.route;
  // The page's own way when it has more to say than "saved": writes failing (it says when they
  // work again), or a cycle that asks for evidence (its commit waits on what the page counts).
  const pageSays = d.failure || d.require_evidence;
  if (viaPage || !route || card.actions.length || card.waiting || card.viaPage || pageSays) {
    toPage();
    return;
  }
  if (card.posting) { card.again = true; return; }
  post(route);
}

function toPage() {
  // Never beside a POST: the page would write the same claims on a base the route has moved.
  if (card.posting) { card.pageAfter = true; return; }
  card.viaPage = true;
  card.setStateValue("report", body(true));
}

async function post(route) {
  card.posting = true;
  const sent = body(false);
  let ok = false;
  try {
    const reply = await fetch(route.url, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      credentials: "same-origin",
      body: JSON.stringify({ token: route.token, cycle: route.cycle, reviewer: route.reviewer, report: sent }),
    });
    if (reply.ok) {
      // A short reply comes whole in a header (card_route.py `_reply`), a long one as the body.
      const head = reply.headers.get(route.reply_header);
      const out = head ? JSON.parse(head) : await reply.json();
      for (const [pk, w] of Object.entries(out.written || {})) card.written[pk] = w;
      for (const [pk, seq] of Object.entries(out.ack || {})) {
        card.routeAck[pk] = Math.max(card.routeAck[pk] || 0, seq);
      }
      ok = !out.failure && !(out.refused || []).length;
    }
  } catch (err) {
    ok = false;  // no route (an older server, a proxy that does not pass it): the page writes
  }
  card.posting = false;
  if (card.pageAfter || !ok) {  // keys for the page came meanwhile, or the route did not write
    card.pageAfter = card.again = false;
    toPage();
  } else if (card.again) {
    card.again = false;
    report();
  }
  draw();
}

function act(what) {
  card.actions.push({ seq: ++card.seq, do: what });
  report();
}

function label(kind, verdict) {
  const c = claims()[card.cursor];
  if (!c) return;
  const d = draft(c);
  const server = c.event === undefined ? null : c.event;
  card.entries[c.pk] = {
    seq: ++card.seq, kind, verdict: kind === "blind" ? verdict : null,
    evidence: [...d.evidence], note: d.note.trim() ? d.note : null, base: server,
    ms: Math.max(0, Math.round(performance.now() - card.shownAt)),
  };
  delete card.drafts[c.pk];
  card.picking = false;
  const next = afterLabel(card.cursor);
  if (next.wait) card.waiting = true; else moveTo(next.index);
  draw();
  report();
}

function moveTo(index) {
  card.cursor = index;
  card.picking = false;
  card.shownAt = performance.now();
}

function move(to) {
  moveTo(to);
  draw();
  report(true);  // the page keeps the cursor
}

function toggleEvidence(number) {
  const c = claims()[card.cursor];
  const chunk = (card.data.chunks || [])[number - 1];
  if (!c || !chunk) return;
  const d = draft(c);
  d.evidence = d.evidence.includes(chunk.id) ? d.evidence.filter((x) => x !== chunk.id)
                                              : [...d.evidence, chunk.id];
  const order = (card.data.chunks || []).map((ch) => ch.id);
  d.evidence.sort((a, b) => order.indexOf(a) - order.indexOf(b));
}

// ------------------------------------------------------------------ drawing

function badge(verdict, prefix) {
  const colours = card.data.colours || {};
  const b = el("span", "rc-badge", (prefix ? prefix + " " : "") + (verdict || "unclear"));
  const colour = colours[verdict] || "#6b7280";
  b.style.color = colour;
  b.style.borderColor = colour;
  return b;
}

function savedMark(c) {
  const e = entryOf(c.pk);
  if (!e) return el("span", "rc-saved", c.status === "todo" ? "" : "saved");
  if (acked(c.pk)) return el("span", "rc-saved", "saved");
  return el("span", "rc-saved rc-unsaved", card.data.failure ? "not saved" : "saving…");
}

function drawAnswer(root, index) {
  const d = card.data;
  root.appendChild(el("div", "rc-question", d.question));
  if (!d.show_answer && index === null) return;
  const box = el("div", "rc-answer");
  const span = index === null ? null : (d.spans || [])[index];
  if (span) {
    box.appendChild(document.createTextNode(d.answer_text.slice(0, span[0])));
    box.appendChild(el("mark", null, d.answer_text.slice(span[0], span[1])));
    box.appendChild(document.createTextNode(d.answer_text.slice(span[1])));
  } else {
    box.textContent = d.answer_text;
  }
  root.appendChild(box);
  for (const fact of d.facts || []) root.appendChild(el("div", "rc-fact", fact));
}

function button(text, cls, onClick, opts = {}) {
  const b = el("button", "rc-button " + (cls || ""), text);
  b.type = "button";
  if (opts.title) b.title = opts.title;
  if (opts.disabled) b.disabled = true;
  if (opts.primary) b.classList.add("rc-primary");
  b.addEventListener("click", (e) => { e.preventDefault(); onClick(); });
  return b;
}

function drawClaim(root, index) {
  const d = card.data, cs = claims(), c = cs[index], n = cs.length;
  const s = status(c);
  const box = el("div", "rc-claim");
  box.dataset.pk = String(c.pk);
  box.dataset.picking = card.picking ? "yes" : "no";
  box.appendChild(el("div", "rc-title", `Claim ${c.number} of ${n}`));
  if (n > 1 || d.answer_text.trim() !== c.text.trim()) box.appendChild(el("div", "rc-text", c.text));
  const verdicts = el("div", "rc-row rc-verdicts");
  for (const v of VERDICTS) {
    const b = button(v, "rc-verdict", () => label("blind", v),
                     { title: (d.definitions || {})[v], primary: s.verdict === v });
    b.dataset.verdict = v;
    b.style.borderLeftColor = (d.colours || {})[v] || "";
    if (s.verdict !== v) b.style.color = (d.colours || {})[v] || "";
    verdicts.appendChild(b);
  }
  box.appendChild(verdicts);
  const row = el("div", "rc-row rc-actions");
  row.appendChild(button("Skip", "rc-skip", () => label("skip", null),
                         { title: "Put it off: it comes back at the end of your queue until settled." }));
  row.appendChild(button("Unclear", "rc-unclear", () => label("unclear", null),
                         { title: "Needs discussion: a lead decides this claim, and the judge's verdict on it stays hidden from you until then." }));
  row.appendChild(button("Evidence (E)", "rc-evidence-key", () => { card.picking = !card.picking; draw(); },
                         { disabled: !(d.chunks || []).length, primary: card.picking,
                           title: "E, then a chunk's number: adds that chunk to the evidence, or removes it." }));
  if (s.status !== "todo") {
    row.appendChild(el("span", "rc-muted rc-current",
                       `Your current label: ${s.verdict || STATUS_TEXT[s.status]} (a new choice is added to the history)`));
  }
  const gap = el("span", "rc-gap");
  row.appendChild(gap);
  row.appendChild(button("← Back", "rc-back", () => move(index - 1), { disabled: index === 0 }));
  const ahead = index + 1 < n ? index + 1 : (complete() ? null : undefined);
  row.appendChild(button("Forward →", "rc-forward", () => move(ahead), {
    disabled: ahead === undefined, title: ahead === null ? "Back to the last look" : undefined }));
  box.appendChild(row);
  const dr = draft(c);
  if ((d.chunks || []).length) {
    const ev = el("div", "rc-row rc-evidence");
    ev.appendChild(el("span", "rc-muted", (d.require_evidence ? "Evidence chunks (required for SUPPORTED)"
                                                              : "Evidence chunks (optional)")
                                          + (card.picking ? ": press a chunk's number (E again: back to verdicts)" : ":")));
    for (const ch of d.chunks) {
      const on = dr.evidence.includes(ch.id);
      const chip = button(`[${ch.number}] ${ch.shown}`, "rc-chip", () => { toggleEvidence(ch.number); draw(); },
                          { primary: on });
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
  note.addEventListener("input", () => { dr.note = note.value; });
  box.appendChild(note);
  root.appendChild(box);
}

function drawList(root, index) {
  const cs = claims();
  if (index === null || cs.length < 2) return;
  const list = el("div", "rc-list");
  cs.forEach((c, i) => {
    const s = status(c);
    const line = el("div", "rc-line");
    line.dataset.pk = String(c.pk);
    line.appendChild(el("span", null, (i === index ? "▶ " : "") + `${c.number}. [${s.verdict || STATUS_TEXT[s.status]}] `));
    line.appendChild(el("span", null, c.text));
    line.appendChild(savedMark(c));
    list.appendChild(line);
  });
  root.appendChild(list);
}

function drawLastLook(root) {
  const d = card.data, cs = claims();
  const box = el("div", "rc-last-look");
  const head = el("div", "rc-row");
  const words = el("div", "rc-grow");
  words.appendChild(el("div", "rc-title", "Last look before the reveal"));
  words.appendChild(el("div", "rc-muted", "Your verdicts on this answer. Change any of them now; after the commit the judge is shown and your blind verdicts are final."));
  head.appendChild(words);
  const allAcked = cs.every((c) => acked(c.pk));
  const needed = allAcked ? d.evidence_needed : null;
  head.appendChild(button(card.committing ? "Committing…" : "Commit and reveal the judge (Enter)", "rc-commit",
                          commit, { primary: true, disabled: !!needed || card.committing }));
  box.appendChild(head);
  if (needed) box.appendChild(el("div", "rc-warning rc-evidence-needed", needed));
  cs.forEach((c, i) => {
    const s = status(c);
    const line = el("div", "rc-row rc-look");
    line.dataset.pk = String(c.pk);
    line.appendChild(s.verdict ? badge(s.verdict) : badge(null));
    line.appendChild(el("span", "rc-grow", `${c.number}. ${c.text}`));
    line.appendChild(savedMark(c));
    line.appendChild(button("Change", "rc-change", () => move(i)));
    box.appendChild(line);
  });
  root.appendChild(box);
}

function commit() {
  const d = card.data, cs = claims();
  if (card.committing || !complete()) return;
  if (cs.every((c) => acked(c.pk)) && d.evidence_needed) return;
  card.committing = true;
  draw();
  act("commit");
}

function drawMessage(root) {
  const d = card.data;
  if (!d.failure) return;
  const box = el("div", "rc-message");
  box.setAttribute("role", "alert");
  box.appendChild(el("div", "rc-title", "Not saved: " + d.failure));
  box.appendChild(el("div", null, "Your verdicts stay on this card, marked “not saved”; they are sent again with the next key, or now:"));
  box.appendChild(button("Try again", "rc-retry", () => { card.retry += 1; report(); }));
  root.appendChild(box);
}

function draw() {
  const root = card.root, d = card.data;
  if (!root || !d) return;
  // A redraw (the server's acknowledgement, say) must not take the note away from the typist.
  const typing = document.activeElement && document.activeElement.classList
    && document.activeElement.classList.contains("rc-note") && root.contains(document.activeElement)
    ? [document.activeElement.selectionStart, document.activeElement.selectionEnd] : null;
  root.replaceChildren();
  root.dataset.mode = d.mode;
  if (d.mode !== "claim" && d.mode !== "last look") return;
  const index = card.cursor;
  const view = el("div", "rc-card");
  view.dataset.answer = d.answer;
  drawAnswer(view, index);
  drawMessage(view);
  if (card.waiting) view.appendChild(el("div", "rc-muted rc-waiting", "Saving… the queue goes on after this answer."));
  if (index === null) drawLastLook(view);
  else drawClaim(view, index);
  drawList(view, index);
  root.appendChild(view);
  const note = view.querySelector(".rc-note");
  if (typing && note) { note.focus(); note.setSelectionRange(typing[0], typing[1]); }
  const box = view.querySelector(".rc-answer"), mark = box && box.querySelector("mark");
  if (mark && box.scrollHeight > box.clientHeight) {
    const top = mark.offsetTop - box.offsetTop;
    if (top < box.scrollTop || top + mark.offsetHeight > box.scrollTop + box.clientHeight) {
      box.scrollTop = Math.max(0, top - 8);
    }
  }
}

// ------------------------------------------------------------------ keys

function onKey(e) {
  const d = card.data;
  if (!d || !card.root || !card.root.isConnected) return;
  if (e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return;
  if (document.querySelector('[role="dialog"]')) return;  // a dialog takes its own keys
  const t = e.target instanceof Element ? e.target : null;
  if (t && (t.tagName === "TEXTAREA" || t.isContentEditable
            || (t.tagName === "INPUT" && t.getAttribute("aria-expanded") !== "false"))) {
    if (e.key === "Escape" && t.classList.contains("rc-note")) t.blur();
    return;  // typing; a closed pick list's box (aria-expanded "false") gives the keys back
  }
  const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
  const handled = handle(key, d);
  if (handled) {
    e.preventDefault();
    e.stopImmediatePropagation();
    if (t && t.tagName === "INPUT") t.blur();
  }
}

function handle(key, d) {
  if (DIALOG_KEYS[key]) { act(DIALOG_KEYS[key]); return true; }
  if (d.mode === "reveal" || card.committing) {
    // Pressed before the reveal is drawn, a key still counts: the server does it after the commit.
    const map = { k: "keep", j: "judge_right", n: "next", ArrowLeft: "previous", ArrowRight: "following" };
    if (!map[key]) return key === "Enter" || !!VERDICT_KEYS[key];
    act(map[key]);
    return true;
  }
  if (d.mode !== "claim" && d.mode !== "last look") return false;
  if (card.waiting) return ["1", "2", "3", "s", "u", "e", "Enter", "ArrowLeft", "ArrowRight"].includes(key);
  const n = claims().length;
  if (card.cursor === null) {
    if (key === "Enter") { commit(); return true; }
    if (key === "ArrowLeft" && n) { move(n - 1); return true; }
    return false;
  }
  if (card.picking && /^[1-9]$/.test(key)) {
    if (Number(key) <= Math.min(EVIDENCE_KEYS, (d.chunks || []).length)) toggleEvidence(Number(key));
    card.picking = false;
    draw();
    return true;
  }
  if (VERDICT_KEYS[key]) { label("blind", VERDICT_KEYS[key]); return true; }
  if (key === "s") { label("skip", null); return true; }
  if (key === "u") { label("unclear", null); return true; }
  if (key === "e") { if ((d.chunks || []).length) { card.picking = !card.picking; draw(); } return true; }
  if (key === "ArrowLeft") { if (card.cursor > 0) move(card.cursor - 1); return true; }
  if (key === "ArrowRight") {
    if (card.cursor + 1 < n) move(card.cursor + 1);
    else if (complete()) move(null);
    return true;
  }
  return false;
}

function unsaved() {
  if (Object.keys(card.entries).some((pk) => !acked(pk))) return true;
  return Object.values(card.drafts).some((dr) => dr.note && dr.note.trim());
}

if (!window.__calibrationReviewCard) {
  window.__calibrationReviewCard = true;
  window.addEventListener("keydown", onKey, true);
  window.addEventListener("beforeunload", (e) => {
    if (card.root && card.root.isConnected && unsaved()) { e.preventDefault(); e.returnValue = ""; }
  });
}

// ------------------------------------------------------------------ the server's data

function take(d) {
  const newAnswer = d.answer !== card.answer;
  if (newAnswer || d.moved !== card.moved) {
    card.answer = d.answer;
    card.cursor = d.index === undefined ? null : d.index;
    card.moved = d.moved;
    card.waiting = false;
    card.picking = false;
    card.shownAt = performance.now();
  }
  if (newAnswer) card.drafts = {};
  card.viaPage = false;  // the page's run is back: verdicts may take the route again
  card.actions = card.actions.filter((a) => a.seq > (d.actions_done || 0));
  // Committing ends with the reveal, or with the commit done and refused (the page says why).
  if (!card.actions.some((a) => a.do === "commit") || d.failure) card.committing = false;
  const ack = d.ack || {}, refused = d.refused || {};
  const here = new Set((d.claims || []).map((c) => String(c.pk)));
  for (const [pk, e] of Object.entries(card.entries)) {
    if (refused[pk] === e.seq) { delete card.entries[pk]; delete card.drafts[pk]; continue; }
    const seen = Math.max(ack[pk] || 0, card.routeAck[pk] || 0);
    if (seen >= e.seq && !here.has(pk)) delete card.entries[pk];
  }
  for (const pk of Object.keys(card.written)) {
    if (!card.entries[pk] && !here.has(pk)) { delete card.written[pk]; delete card.routeAck[pk]; }
  }
}

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  card.setStateValue = setStateValue;
  let root = parentElement.querySelector(".rc-root");
  if (!root) { root = el("div", "rc-root"); parentElement.appendChild(root); }
  card.root = root;
  if (!data) return;
  // The answer's part comes as one JSON text, "card" (pages/review.py `_card_data`).
  const d = data.card ? { ...data, ...JSON.parse(data.card) } : data;
  take(d);
  card.data = d;
  draw();
}
