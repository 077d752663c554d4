// The review card's rules (calibration_app/components/card_rules.js): `node --test tests/js/`.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  afterLabel,
  claimState,
  evidencePrompt,
  forward,
  isComplete,
  keyAction,
  liveProgress,
  progressText,
  revealOrder,
  revealSummary,
  stepSelection,
  toggleEvidence,
} from "../../calibration_app/components/card_rules.js";

const claim = (pk, status = "todo", verdict = null) => ({ pk, status, verdict });
const blind = (verdict) => ({ kind: "blind", verdict });
const card = (over = {}) => ({
  mode: "claim",
  cursor: 0,
  claims: [claim(1), claim(2), claim(3)],
  entries: {},
  picking: false,
  chunks: 3,
  busy: false,
  ...over,
});

test("a key press on a claim is what the claim shows, before the server's label", () => {
  assert.deepEqual(claimState(claim(1, "labeled", "SUPPORTED"), undefined), { status: "labeled", verdict: "SUPPORTED" });
  assert.deepEqual(claimState(claim(1, "labeled", "SUPPORTED"), { kind: "skip" }), { status: "skipped", verdict: null });
  assert.deepEqual(claimState(claim(1), { kind: "unclear" }), { status: "unclear", verdict: null });
});

test("after a verdict the next claim never seen comes, wrapping", () => {
  const claims = [claim(1), claim(2, "labeled", "SUPPORTED"), claim(3)];
  assert.deepEqual(afterLabel(claims, { 3: blind("SUPPORTED") }, 2), { index: 0 });
  assert.deepEqual(afterLabel(claims, { 1: blind("SUPPORTED") }, 0), { index: 2 });
});

test("after the last verdict the last look comes; with only skipped claims left the queue goes on", () => {
  const claims = [claim(1), claim(2)];
  assert.deepEqual(afterLabel(claims, { 1: blind("SUPPORTED"), 2: blind("CONTRADICTED") }, 1), { index: null });
  assert.deepEqual(afterLabel(claims, { 1: blind("SUPPORTED"), 2: { kind: "skip" } }, 1), { queue: true });
  assert.deepEqual(afterLabel(claims, { 1: { kind: "unclear" }, 2: blind("SUPPORTED") }, 1), { index: null });
});

test("forward from the last claim is the last look only once every claim is settled", () => {
  const claims = [claim(1), claim(2)];
  assert.equal(forward(claims, {}, 0), 1);
  assert.equal(forward(claims, {}, 1), undefined);
  assert.equal(forward(claims, { 1: blind("SUPPORTED"), 2: blind("SUPPORTED") }, 1), null);
  assert.equal(isComplete([], {}), false);
});

test("picking evidence toggles a chunk and keeps the chunks' order", () => {
  const ids = ["a", "b", "c"];
  assert.deepEqual(toggleEvidence([], "c", ids), ["c"]);
  assert.deepEqual(toggleEvidence(["c"], "a", ids), ["a", "c"]);
  assert.deepEqual(toggleEvidence(["a", "c"], "a", ids), ["c"]);
  assert.deepEqual(toggleEvidence(["gone"], "b", ids), ["b"]);
});

test("the number keys give verdicts on a claim", () => {
  assert.deepEqual(keyAction("1", card()), { do: "label", kind: "blind", verdict: "SUPPORTED" });
  assert.deepEqual(keyAction("3", card()), { do: "label", kind: "blind", verdict: "UNSUPPORTED" });
  assert.deepEqual(keyAction("s", card()), { do: "label", kind: "skip", verdict: null });
  assert.deepEqual(keyAction("u", card()), { do: "label", kind: "unclear", verdict: null });
  assert.equal(keyAction("x", card()), null);
});

test("while picking evidence a number is a chunk, never a verdict, until E, Escape or Enter", () => {
  const picking = card({ picking: true });
  assert.deepEqual(keyAction("2", picking), { do: "pick", number: 2 });
  assert.deepEqual(keyAction("3", picking), { do: "pick", number: 3 });
  assert.deepEqual(keyAction("4", picking), { do: "noChunk", number: 4 });
  for (const key of ["e", "Escape", "Enter"]) assert.deepEqual(keyAction(key, picking), { do: "picking", on: false });
  assert.deepEqual(keyAction("e", card()), { do: "picking", on: true });
  assert.deepEqual(keyAction("e", card({ chunks: 0 })), { do: "wait" });
});

test("the arrows move between claims and to the last look", () => {
  assert.deepEqual(keyAction("ArrowRight", card()), { do: "move", to: 1 });
  assert.deepEqual(keyAction("ArrowLeft", card()), { do: "wait" });
  const done = card({ cursor: 2, entries: { 1: blind("SUPPORTED"), 2: blind("SUPPORTED"), 3: blind("SUPPORTED") } });
  assert.deepEqual(keyAction("ArrowRight", done), { do: "move", to: null });
  assert.deepEqual(keyAction("ArrowLeft", card({ mode: "last look", cursor: null })), { do: "move", to: 2 });
});

test("Enter commits at the last look only", () => {
  assert.deepEqual(keyAction("Enter", card({ mode: "last look", cursor: null })), { do: "commit" });
  assert.equal(keyAction("Enter", card()), null);
});

test("after the reveal K, J, N and the arrows act; verdict keys do nothing", () => {
  const reveal = card({ mode: "reveal", cursor: null });
  assert.deepEqual(keyAction("k", reveal), { do: "reconcile", choice: "keep" });
  assert.deepEqual(keyAction("j", reveal), { do: "reconcile", choice: "judge_right" });
  assert.deepEqual(keyAction("n", reveal), { do: "next" });
  assert.deepEqual(keyAction("ArrowRight", reveal), { do: "select", step: 1 });
  assert.equal(keyAction("1", reveal), null);
});

test("dialog keys act in every state, the end of the queue too", () => {
  for (const mode of ["claim", "last look", "reveal", "done"]) {
    assert.deepEqual(keyAction("l", card({ mode })), { do: "dialog", which: "answers" });
    assert.deepEqual(keyAction("?", card({ mode })), { do: "dialog", which: "keys" });
  }
  assert.equal(keyAction("n", card({ mode: "done" })), null);
});

test("while the next answer is on its way the claim keys wait", () => {
  assert.deepEqual(keyAction("1", card({ busy: true })), { do: "wait" });
  assert.deepEqual(keyAction("ArrowRight", card({ busy: true })), { do: "wait" });
});

test("K, J and N pressed while the commit is on its way act after it, in order", () => {
  const committing = card({ mode: "last look", cursor: null, busy: true, committing: true });
  assert.deepEqual(keyAction("k", committing), { do: "reconcile", choice: "keep" });
  assert.deepEqual(keyAction("n", committing), { do: "next" });
  assert.deepEqual(keyAction("1", committing), { do: "wait" });
  assert.deepEqual(keyAction("ArrowLeft", committing), { do: "wait" });
  assert.deepEqual(keyAction("k", card({ mode: "reveal", busy: true })), { do: "reconcile", choice: "keep" });
});

test("the arrows walk through the disagreements, wrapping", () => {
  assert.equal(stepSelection([4, 7, 9], 7, 1), 9);
  assert.equal(stepSelection([4, 7, 9], 9, 1), 4);
  assert.equal(stepSelection([4, 7, 9], 4, -1), 9);
  assert.equal(stepSelection([], null, 1), null);
});

test("the reveal draws the disagreements to decide first", () => {
  const rows = [
    { pk: 1, pending: false, disagrees: false },
    { pk: 2, pending: false, disagrees: true },
    { pk: 3, pending: true, disagrees: true },
  ];
  assert.deepEqual(revealOrder(rows, { 1: 1, 2: 2, 3: 3 }).map((r) => r.pk), [3, 2, 1]);
});

test("an unclear-only reveal says the judge stays hidden, not 0 of 0", () => {
  const text = revealSummary({ agree: 0, compared: 0, unclear: 2 });
  assert.match(text, /stays hidden until a lead decides/);
  assert.doesNotMatch(text, /0 of 0/);
  assert.match(revealSummary({ agree: 1, compared: 2, unclear: 0 }), /agrees with you on 1 of 2/);
  assert.match(revealSummary({ agree: 0, compared: 1, unclear: 0 }), /agrees with you on 0 of the 1 claim you labeled\./);
});

test("the evidence prompt says what the number keys do", () => {
  assert.match(evidencePrompt(false, 3, false), /E picks them/);
  assert.match(evidencePrompt(true, 3, false), /1–3 add or remove/);
  assert.match(evidencePrompt(true, 12, true), /1–9/);
});

const progress = (over = {}) => ({
  labeled: 4, unclear: 0, skipped: 0, total: 10, answers_done: 1, answers_total: 4, reused: null, number: 2, answers: 4,
  ...over,
});

test("the progress line counts the card's own keys on this answer, before the server does", () => {
  const claims = [claim(1), claim(2, "labeled", "SUPPORTED"), claim(3, "skipped")];
  const live = liveProgress(progress({ skipped: 1 }), claims, { 1: blind("SUPPORTED"), 2: { kind: "unclear" }, 3: blind("CONTRADICTED") });
  assert.deepEqual([live.labeled, live.unclear, live.skipped], [5, 1, 0]);
  assert.equal(progressText(live), "6 of 10 claims labeled · 1 unclear · 1 of 4 answers done · answer 2 of 4");
  assert.deepEqual(liveProgress(progress(), claims, {}), progress());
});

test("the progress line names reused and skipped claims, and no answer number off the queue", () => {
  const p = progress({ reused: "3 reused from other cycles or imports", skipped: 2, number: 0 });
  assert.equal(progressText(p), "4 of 10 claims labeled · 3 reused from other cycles or imports · 2 skipped · 1 of 4 answers done");
});
