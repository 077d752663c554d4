// The review card's rules: what the next claim is and what a key does in each state. Pure
// functions of plain data (no DOM, no server), so that `node --test` checks them
// (tests/js/card_rules.test.mjs); review_card.js draws and sends what they decide. The
// component's script is this file and review_card.js joined (calibration_app/review_card.py).

export const VERDICTS = ["SUPPORTED", "CONTRADICTED", "UNSUPPORTED"];
export const VERDICT_KEYS = { 1: "SUPPORTED", 2: "CONTRADICTED", 3: "UNSUPPORTED" };
export const DIALOG_KEYS = { l: "answers", g: "guidelines", h: "keys", "?": "keys" };
export const EVIDENCE_KEYS = 9; // chunks 1-9 are picked by key; the buttons pick any of them
export const STATUS_TEXT = {
  todo: "not labeled yet",
  skipped: "skipped",
  unclear: "unclear, needs discussion",
};

// A claim as the card shows it: the reviewer's latest key press on it (`entry`), else the
// label the server sent.
export function claimState(claim, entry) {
  if (!entry) return { status: claim.status, verdict: claim.verdict };
  if (entry.kind === "blind") return { status: "labeled", verdict: entry.verdict };
  return { status: entry.kind === "skip" ? "skipped" : "unclear", verdict: null };
}

// Settled before the commit: a verdict, or marked unclear (a lead decides it).
export function isSettled(state) {
  return state.verdict !== null || state.status === "unclear";
}

export function states(claims, entries) {
  return claims.map((c) => claimState(c, entries[c.pk]));
}

export function isComplete(claims, entries) {
  return claims.length > 0 && states(claims, entries).every(isSettled);
}

// Where the card goes after a verdict, skip or unclear on claim `index`: the next claim never
// seen after it, wrapping; else the last look (index null) once every claim is settled; else
// (only skipped claims are left) the queue goes on after this answer (`queue`).
export function afterLabel(claims, entries, index) {
  const all = states(claims, entries);
  const n = claims.length;
  for (let k = 1; k <= n; k += 1) {
    const i = (index + k) % n;
    if (all[i].status === "todo") return { index: i };
  }
  return all.every(isSettled) ? { index: null } : { queue: true };
}

// Where → goes from claim `index`: the next claim; from the last one, the last look once
// every claim is settled (so a Change there is no dead end); undefined: nowhere.
export function forward(claims, entries, index) {
  if (index + 1 < claims.length) return index + 1;
  return isComplete(claims, entries) ? null : undefined;
}

// The evidence after picking chunk `id`: added, or removed when it was there; in the chunks'
// order.
export function toggleEvidence(evidence, id, chunkIds) {
  const picked = evidence.includes(id) ? evidence.filter((x) => x !== id) : [...evidence, id];
  return picked.filter((x) => chunkIds.includes(x)).sort((a, b) => chunkIds.indexOf(a) - chunkIds.indexOf(b));
}

// The disagreement ← or → selects in the reveal (`step` -1 or 1), wrapping.
export function stepSelection(disagreements, selected, step) {
  if (!disagreements.length) return null;
  const at = disagreements.indexOf(selected);
  if (at < 0) return disagreements[0];
  return disagreements[(at + step + disagreements.length) % disagreements.length];
}

// The reveal's rows in the order they are drawn: disagreements still to decide first, then
// the other disagreements, then the rest; each group in answer order.
export function revealOrder(rows, numbers) {
  const rank = (r) => (r.pending ? 0 : r.disagrees ? 1 : 2);
  return [...rows].sort((a, b) => rank(a) - rank(b) || numbers[a.pk] - numbers[b.pk]);
}

// The reveal's summary line. With no claim to compare (every claim marked unclear) it says
// that the judge stays hidden rather than "0 of 0".
export function revealSummary(reveal) {
  const unclear = reveal.unclear === 1 ? "1 claim" : `${reveal.unclear} claims`;
  if (!reveal.compared && reveal.unclear) {
    return `You marked ${reveal.unclear === 1 ? "the claim" : `all ${unclear}`} unclear: the judge's verdict stays hidden until a lead decides.`;
  }
  const hidden = reveal.unclear ? ` ${unclear} marked unclear: the judge stays hidden for them until a lead decides.` : "";
  const compared = reveal.compared === 1 ? "the 1 claim" : `${reveal.compared} claims`;
  return `The judge agrees with you on ${reveal.agree} of ${compared} you labeled.${hidden}`;
}

// What a key does. `s` is the card as it stands: mode ("claim", "last look", "reveal",
// "done"), cursor (the claim shown), claims, entries, picking (after E), chunks (their
// count), busy (a commit or the next answer on its way), committing (a commit on its way:
// K, J and N pressed before the reveal is drawn act after it). The answer is an action:
//   {do: "dialog", which} | {do: "label", kind, verdict} | {do: "pick", number}
//   | {do: "noChunk", number} | {do: "picking", on} | {do: "move", to} | {do: "commit"}
//   | {do: "reconcile", choice} | {do: "select", step} | {do: "next"} | {do: "wait"}
// or null: the key is not the card's (the browser keeps it).
export function keyAction(key, s) {
  if (DIALOG_KEYS[key]) return { do: "dialog", which: DIALOG_KEYS[key] };
  if (s.mode === "reveal" || s.committing) return revealKey(key, s);
  if (s.mode !== "claim" && s.mode !== "last look") return null;
  if (s.busy) return ["1", "2", "3", "s", "u", "e", "Enter", "ArrowLeft", "ArrowRight"].includes(key) ? { do: "wait" } : null;
  if (s.cursor === null) return lastLookKey(key, s);
  if (s.picking) {
    // Picking evidence: a number is a chunk, never a verdict, until E, Escape or Enter.
    if (/^[1-9]$/.test(key)) {
      const number = Number(key);
      return number <= Math.min(EVIDENCE_KEYS, s.chunks) ? { do: "pick", number } : { do: "noChunk", number };
    }
    if (key === "e" || key === "Escape" || key === "Enter") return { do: "picking", on: false };
  }
  return claimKey(key, s);
}

function claimKey(key, s) {
  if (VERDICT_KEYS[key]) return { do: "label", kind: "blind", verdict: VERDICT_KEYS[key] };
  if (key === "s") return { do: "label", kind: "skip", verdict: null };
  if (key === "u") return { do: "label", kind: "unclear", verdict: null };
  if (key === "e") return s.chunks ? { do: "picking", on: !s.picking } : { do: "wait" };
  if (key === "ArrowLeft") return s.cursor > 0 ? { do: "move", to: s.cursor - 1 } : { do: "wait" };
  if (key === "ArrowRight") {
    const to = forward(s.claims, s.entries, s.cursor);
    return to === undefined ? { do: "wait" } : { do: "move", to };
  }
  return null;
}

function lastLookKey(key, s) {
  if (key === "Enter") return { do: "commit" };
  if (key === "ArrowLeft" && s.claims.length) return { do: "move", to: s.claims.length - 1 };
  return null;
}

// After the reveal, and while the commit is on its way: K, J and N are sent in the order
// pressed (each acts on the answer as the server has it by then); the arrows choose a
// disagreement once the reveal is drawn.
function revealKey(key, s) {
  if (key === "k") return { do: "reconcile", choice: "keep" };
  if (key === "j") return { do: "reconcile", choice: "judge_right" };
  if (key === "n") return { do: "next" };
  const drawn = s.mode === "reveal";
  if (key === "ArrowLeft") return drawn ? { do: "select", step: -1 } : { do: "wait" };
  if (key === "ArrowRight") return drawn ? { do: "select", step: 1 } : { do: "wait" };
  if (!drawn && (key === "Enter" || VERDICT_KEYS[key] || ["s", "u", "e"].includes(key))) return { do: "wait" };
  return null;
}

// What the evidence row says, so that a key's effect is never a guess.
export function evidencePrompt(picking, chunks, required) {
  const what = required ? "Evidence chunks (required for SUPPORTED)" : "Evidence chunks (optional)";
  if (!picking) return `${what}: E picks them by number.`;
  const top = Math.min(EVIDENCE_KEYS, chunks);
  const keys = top === 1 ? "1" : `1–${top}`;
  return `Picking evidence: ${keys} add or remove that chunk; E, Esc or Enter: back to verdicts (numbers give verdicts again).`;
}

// The reviewer's progress in the cycle as the card shows it: the server's counts as of the
// view (`progress`, calibration/card.py `_progress`) plus what the card's own keys changed on
// this answer's claims since (`entries` against the claims' statuses in the view).
export function liveProgress(progress, claims, entries) {
  const out = { ...progress };
  for (const c of claims) {
    const now = claimState(c, entries[c.pk]).status;
    if (now === c.status) continue;
    for (const status of ["labeled", "unclear", "skipped"]) {
      out[status] += Number(now === status) - Number(c.status === status);
    }
  }
  return out;
}

// The progress line: claims settled (a verdict or unclear) of the queue, then what else
// there is to say. The words are the ones the lead's table uses.
export function progressText(p) {
  const parts = [`${p.labeled + p.unclear} of ${p.total} claims labeled`];
  if (p.reused) parts.push(p.reused);
  if (p.unclear) parts.push(`${p.unclear} unclear`);
  if (p.skipped) parts.push(`${p.skipped} skipped`);
  parts.push(`${p.answers_done} of ${p.answers_total} answers done`);
  if (p.number) parts.push(`answer ${p.number} of ${p.answers}`);
  return parts.join(" · ");
}
