"""Review: label claims blind, then see the judge and reconcile each disagreement.

Flow per answer: the question, the numbered chunks and the answer with the current claim
marked; a verdict per claim from the keyboard (1 / 2 / 3, S skip, U unclear, arrow keys
to move within the answer). Every verdict is written to SQLite in the button's callback,
before the card is drawn again, so a reload or a restart loses nothing acknowledged, and
a toast names what was recorded on which claim, so a stray key press is seen at once
(and fixed with the arrow keys before the reveal).
When every claim of the answer has the reviewer's verdict or is marked unclear, and only
then, the judge's verdicts and rationales are read from the database and shown beside the
reviewer's; each disagreement is settled as "I keep my verdict" (judge error) or "the
judge is right" (reviewer slip), by K / J on the selected disagreement (arrow keys choose
another; a choice can be changed). Unclear claims wait for a lead. N: the next answer.

Session state holds only the cursor (cycle, answer, claim, selected disagreement), the
chosen cycle, a pending message and the widgets' values; the database is the memory. The
card is a fragment, so a verdict reruns only the card.
Untrusted text goes through ui.literal / ui.highlighted only (see ui.py); toasts and
captions are built from constants and numbers.
"""

from __future__ import annotations

import hashlib
from contextlib import AbstractContextManager

import streamlit as st
from sqlite_utils import Database

import ui
from calibration import review, store
from calibration.errors import CalibrationError
from calibration.fmt import plural
from calibration.vocab import LABELS

VERDICT_KEYS = {"SUPPORTED": "1", "CONTRADICTED": "2", "UNSUPPORTED": "3"}
VERDICT_COLORS = {"SUPPORTED": "green", "CONTRADICTED": "red", "UNSUPPORTED": "orange"}
VERDICT_HELP = {
    "SUPPORTED": "The chunks state this claim.",
    "CONTRADICTED": "The chunks state the opposite.",
    "UNSUPPORTED": "The chunks do not settle it either way.",
}
STATUS_TEXT = {"todo": "not labeled yet", "skipped": "skipped", "unclear": "unclear, needs discussion"}
KIND_TEXT = {"skip": "SKIP", "unclear": "UNCLEAR (needs discussion)"}
RECONCILE_TEXT = {"keep": "I KEEP MY VERDICT (a judge error)",
                  "judge_right": "THE JUDGE IS RIGHT (your slip)"}
CURSOR = "review_cursor"
FLASH = "review_flash"
TOAST = "review_toast"  # what the last callback recorded, shown once as a toast
CYCLE_KEY = "review_cycle"  # the chosen cycle's id (not a widget key: see the picker)
DONE_SEEN = "review_done_seen"  # the cycle whose done screen was last drawn by a full run


def _db() -> AbstractContextManager[Database]:
    return store.session(ui.db_path())


# ---------------------------------------------------------------- cursor


def _set_cursor(cycle_id: int, reviewer: str, pos: review.Position | None,
                selected: int | None = None) -> None:
    """`selected`: in the reveal view, the claim (pk) the K / J keys act on."""
    st.session_state[CURSOR] = {
        "cycle": cycle_id,
        "reviewer": reviewer,
        "answer": pos.answer_id if pos else None,
        "claim": pos.claim_index if pos else None,
        "selected": selected,
    }


def _cursor(db: Database, cycle_id: int, reviewer: str) -> review.Position | None:
    cur = st.session_state.get(CURSOR)
    if (not cur or cur["cycle"] != cycle_id or cur["reviewer"] != reviewer
            or cur["answer"] is None):
        pos = review.resume(db, cycle_id, reviewer)
        _set_cursor(cycle_id, reviewer, pos)
        return pos
    return review.Position(cur["answer"], cur["claim"])


# ---------------------------------------------------------------- callbacks (run before the rerun)


def _flash(exc: Exception) -> None:
    st.session_state[FLASH] = str(exc)


def _toast(message: str) -> None:
    """Say what was recorded (constants and numbers only: a toast renders markdown)."""
    st.session_state[TOAST] = message


def _is_current(cycle_id: int, answer_id: str, index: int | None) -> bool:
    """Whether the button pressed belongs to the card on screen now.

    A key pressed twice quickly can reach a button of the previous card while the new one
    is being drawn; such a press is dropped rather than recorded on the wrong claim.
    """
    cur = st.session_state.get(CURSOR) or {}
    return (cur.get("cycle"), cur.get("answer"), cur.get("claim")) == (cycle_id, answer_id, index)


def _on_label(cycle_id: int, answer_id: str, claim_pk: int, index: int, kind: str,
              verdict: str | None, chunk_ids: tuple[str, ...]) -> None:
    reviewer = ui.current_reviewer()
    if not reviewer or not _is_current(cycle_id, answer_id, index):
        return
    picked = st.session_state.get(f"ev_{claim_pk}") or []
    evidence = [chunk_ids[n - 1] for n in picked if 0 < n <= len(chunk_ids)]
    note = st.session_state.get(f"note_{claim_pk}") or None
    try:
        with _db() as db:
            review.label(db, cycle_id=cycle_id, reviewer=reviewer, claim_pk=claim_pk,
                         kind=kind, verdict=verdict, evidence=evidence, note=note)
            card = review.load_card(db, answer_id, reviewer)
            pos = review.position_after_label(card, index)
            if pos is None:  # only skipped claims left here: go on with the queue
                pos = review.resume(db, cycle_id, reviewer, after=answer_id)
    except CalibrationError as exc:
        _flash(exc)
        return
    what = verdict if kind == "blind" else KIND_TEXT[kind]
    _toast(f"Recorded {what} for claim {index + 1} of {len(card.claims)}"
           + (" · the judge is revealed" if card.complete else ""))
    _set_cursor(cycle_id, reviewer, pos)


def _on_move(cycle_id: int, answer_id: str, index: int, to: int) -> None:
    reviewer = ui.current_reviewer()
    if reviewer and _is_current(cycle_id, answer_id, index):
        _set_cursor(cycle_id, reviewer, review.Position(answer_id, to))


def _on_select(cycle_id: int, answer_id: str, claim_pk: int) -> None:
    reviewer = ui.current_reviewer()
    if reviewer and _is_current(cycle_id, answer_id, None):
        _set_cursor(cycle_id, reviewer, review.Position(answer_id, None), claim_pk)


def _on_reconcile(cycle_id: int, answer_id: str, claim_pk: int, choice: str) -> None:
    """Record the choice, then select the next disagreement still pending (if any), so K / J
    walk through them; with none left the selection stays, and K / J change the choice."""
    reviewer = ui.current_reviewer()
    if not reviewer or not _is_current(cycle_id, answer_id, None):
        return
    try:
        with _db() as db:
            state = review.reconcile(db, cycle_id=cycle_id, reviewer=reviewer, claim_pk=claim_pk,
                                     choice=choice)
            rows = review.reveal(db, cycle_id=cycle_id, answer_id=answer_id, reviewer=reviewer)
    except CalibrationError as exc:
        _flash(exc)
        return
    selected = review.selection_after_reconcile(rows, claim_pk)
    number = next((r.claim.number for r in rows if r.claim.pk == claim_pk), 1)
    _toast(f"Recorded {RECONCILE_TEXT[choice]} for claim {number} of {len(rows)}: "
           f"final label {state.final_verdict}")
    _set_cursor(cycle_id, reviewer, review.Position(answer_id, None), selected)


def _on_switch_cycle(cycle_id: int) -> None:
    st.session_state[CYCLE_KEY] = cycle_id


def _on_pick(widget_key: str) -> None:
    st.session_state[CYCLE_KEY] = st.session_state[widget_key]


def _on_next_answer(cycle_id: int, answer_id: str) -> None:
    reviewer = ui.current_reviewer()
    if not reviewer or not _is_current(cycle_id, answer_id, None):
        return
    try:
        with _db() as db:
            _set_cursor(cycle_id, reviewer, review.resume(db, cycle_id, reviewer, after=answer_id))
    except CalibrationError as exc:
        _flash(exc)


# ---------------------------------------------------------------- drawing


def _badge(verdict: str | None) -> None:
    # Verdicts come from a CHECK-constrained column: one of three constants.
    if verdict in VERDICT_COLORS:
        st.badge(verdict, color=VERDICT_COLORS[verdict])
    else:
        st.badge("no verdict", color="gray")


def _question_and_answer(card: review.Card, index: int | None) -> None:
    st.markdown("**Question**")
    with st.container(key="question"):
        ui.literal(card.question)
    st.markdown("**Answer**")
    spans = review.claim_spans(card.answer, [c.text for c in card.claims])
    span = spans[index] if index is not None else None
    with st.container(border=True, key="answer"):
        ui.highlighted(*review.split_highlight(card.answer, span))


def _chunks(card: review.Card) -> None:
    st.markdown("**Retrieved chunks**")
    if not card.chunks:
        st.write("This answer has no chunks.")
    for ch in card.chunks:
        with st.container(border=True, key=f"chunk-{ch.number}"):
            head = f"[{ch.number}] {ch.chunk_id}" + (f" · {ch.source}" if ch.source else "")
            ui.literal(head)
            ui.literal(ch.text)


def _claim_list(card: review.Card, index: int) -> None:
    with st.container(key="claim-list"):
        for i, c in enumerate(card.claims):
            mark = "▶" if i == index else " "
            state = c.verdict or STATUS_TEXT[c.status]
            ui.literal(f"{mark} {c.number}. [{state}] {c.text}")


def _claim_panel(cycle: review.CycleRef, card: review.Card, index: int) -> None:
    claim = card.claims[index]
    pk = claim.pk
    n = len(card.claims)
    with st.container(border=True, key=f"claim-{pk}"):
        with st.container(horizontal=True, vertical_alignment="center"):
            st.markdown(f"**Claim {claim.number} of {n}**")
            st.space("stretch")
            st.button("Back", key=f"back-{pk}", shortcut="Left", icon=":material/arrow_back:",
                      disabled=index == 0, on_click=_on_move,
                      args=(cycle.id, card.answer_id, index, index - 1))
            st.button("Forward", key=f"fwd-{pk}", shortcut="Right",
                      icon=":material/arrow_forward:", icon_position="right",
                      disabled=index >= n - 1, on_click=_on_move,
                      args=(cycle.id, card.answer_id, index, index + 1))
        with st.container(key="claim-text"):
            ui.literal(claim.text)
        if claim.label is not None:
            st.caption(f"Your current label: {claim.verdict or STATUS_TEXT[claim.status]} "
                       "(a new choice is added to the history)")

        ev_key, note_key = f"ev_{pk}", f"note_{pk}"
        by_id = {ch.chunk_id: ch.number for ch in card.chunks}
        if ev_key not in st.session_state:
            st.session_state[ev_key] = [by_id[e] for e in (claim.label.evidence if claim.label else [])
                                        if e in by_id]
        if note_key not in st.session_state:
            st.session_state[note_key] = (claim.label.note if claim.label else None) or ""
        # The note comes first: Tab from it reaches the evidence list (a text field, so keys
        # type there), never the list's "Clear all" button (see ui.shortcut_guard).
        c1, c2 = st.columns([3, 2])
        c1.text_input("Note (optional)", key=note_key, max_chars=2000)
        # Options are chunk numbers; the shown name is "[n] id" as plain text.
        c2.multiselect("Evidence chunks (optional)", options=[ch.number for ch in card.chunks],
                       format_func=lambda num: f"[{num}] {card.chunks[num - 1].chunk_id}",
                       key=ev_key, placeholder="Chunks that decide it", select_all=False)

        chunk_ids = card.chunk_ids
        cols = st.columns(3)
        for col, verdict in zip(cols, LABELS, strict=True):
            col.button(
                verdict, key=f"v-{verdict}-{pk}", shortcut=VERDICT_KEYS[verdict],
                help=VERDICT_HELP[verdict], width="stretch",
                type="primary" if claim.verdict == verdict else "secondary",
                on_click=_on_label,
                args=(cycle.id, card.answer_id, pk, index, "blind", verdict, chunk_ids),
            )
        with st.container(horizontal=True, key="claim-actions"):
            st.button("Skip", key=f"skip-{pk}", shortcut="S",
                      help="Put it off: it comes back once at the end of your queue.",
                      on_click=_on_label,
                      args=(cycle.id, card.answer_id, pk, index, "skip", None, chunk_ids))
            st.button("Unclear, needs discussion", key=f"unclear-{pk}", shortcut="U",
                      help="Done for you: a lead decides this claim. Once every claim of the "
                           "answer is labeled or unclear, the judge is revealed.",
                      on_click=_on_label,
                      args=(cycle.id, card.answer_id, pk, index, "unclear", None, chunk_ids))
    _claim_list(card, index)


def _reveal_panel(cycle: review.CycleRef, card: review.Card, rows: list[review.Revealed],
                  view: review.RevealView) -> None:
    selected = view.selected
    by_pk = {r.claim.pk: r for r in rows}
    with st.container(key="reveal"):
        st.markdown(f"**The judge is revealed:** it agrees with you on {view.agree} of {view.compared} "
                    "claims you labeled."
                    + (f" {view.unclear} marked unclear {'waits' if view.unclear == 1 else 'wait'} for a "
                       "lead." if view.unclear else ""))
        if selected is not None:
            with st.container(horizontal=True, vertical_alignment="center", key="reveal-keys"):
                st.caption(f"K / J act on claim {by_pk[selected].claim.number}"
                           + (" · ← → choose another disagreement" if view.following is not None else ""))
                if view.previous is not None and view.following is not None:
                    st.space("stretch")
                    st.button("Previous disagreement", key="sel-prev", shortcut="Left",
                              icon=":material/arrow_back:", on_click=_on_select,
                              args=(cycle.id, card.answer_id, view.previous))
                    st.button("Next disagreement", key="sel-next", shortcut="Right",
                              icon=":material/arrow_forward:", icon_position="right",
                              on_click=_on_select, args=(cycle.id, card.answer_id, view.following))
        for r in rows:
            pk = r.claim.pk
            with st.container(border=True, key=f"reveal-{pk}"):
                text, you, judge = st.columns([3, 2, 2])
                with text:
                    st.markdown(f"**Claim {r.claim.number}**")
                    ui.literal(r.claim.text)
                with you:
                    st.caption("You (blind)")
                    if r.unclear:
                        st.badge("Unclear", icon=":material/help:", color="gray")
                    else:
                        _badge(r.blind)
                with judge:
                    st.caption("Judge")
                    _badge(r.judge_verdict)
                if r.judge_verdict is not None:
                    st.caption("Judge's rationale")
                    with st.container(key=f"rationale-{pk}"):
                        ui.literal(r.rationale or "(none given)")
                    if r.judge_evidence:
                        ui.literal("Judge's evidence: " + ", ".join(r.judge_evidence))
                if r.claim.label and r.claim.label.evidence:
                    ui.literal("Your evidence: " + ", ".join(r.claim.label.evidence))
                if r.claim.label and r.claim.label.note:
                    st.caption("Your note")
                    ui.literal(r.claim.label.note)
                if r.unclear:
                    if r.adjudicated:
                        st.caption("A lead decided")
                        _badge(r.adjudicated)
                    else:
                        st.caption("You marked this claim unclear: it waits for a lead's decision. "
                                   "The judge's verdict is shown for information; there is "
                                   "nothing to reconcile.")
                    continue
                if not r.disagrees:
                    if r.judge_verdict:
                        st.badge("Agreement", icon=":material/check:", color="green")
                    else:
                        st.badge("The judge gave no verdict on this claim", color="gray")
                    continue
                if r.reconciled == "keep":
                    st.info(f"You kept your verdict: a judge error. Final label {r.final}.",
                            icon=":material/gavel:")
                elif r.reconciled == "judge_right":
                    st.warning(f"The judge was right: your blind label stays in the history, "
                               f"the final label is {r.final} (counted as a slip).",
                               icon=":material/undo:")
                else:
                    st.write("You disagree. Who is right?")
                here = pk == selected
                if here:
                    st.caption("▶ K and J act on this claim")
                k_col, j_col = st.columns(2)
                k_col.button("I keep my verdict", key=f"keep-{pk}", width="stretch",
                             shortcut="K" if here else None,
                             type="primary" if r.reconciled == "keep" else "secondary",
                             help="The judge is wrong on this claim.",
                             on_click=_on_reconcile, args=(cycle.id, card.answer_id, pk, "keep"))
                j_col.button("The judge is right", key=f"judge-right-{pk}", width="stretch",
                             shortcut="J" if here else None,
                             type="primary" if r.reconciled == "judge_right" else "secondary",
                             help="My first call was a slip; take the judge's verdict.",
                             on_click=_on_reconcile,
                             args=(cycle.id, card.answer_id, pk, "judge_right"))
        st.button("Next answer", key="next-answer", type="primary", shortcut="N",
                  icon=":material/arrow_forward:", disabled=not view.can_move_on,
                  help=None if view.can_move_on else "Reconcile every disagreement first.",
                  on_click=_on_next_answer, args=(cycle.id, card.answer_id))


def _done(cycle: review.CycleRef, reviewer: str, prog: review.QueueProgress) -> None:
    with st.container(key="queue-done"):
        st.success("Your queue in this cycle is done: every claim is settled and every "
                   "disagreement is reconciled. Thank you!", icon=":material/task_alt:")
        if prog.claims_unclear or prog.claims_skipped:
            awaits = "awaits" if prog.claims_unclear == 1 else "await"
            st.info(f"{plural(prog.claims_unclear, 'claim', 'claims')} marked unclear {awaits} "
                    f"a lead's decision; {prog.claims_skipped} skipped.", icon=":material/forum:")
        with _db() as db:
            nxt = review.next_cycle_with_work(review.cycle_choices(db, reviewer), cycle.id)
        if nxt is not None:
            st.caption("Next cycle with work for you")
            ui.literal(_cycle_option(nxt))
            st.button("Go to the next cycle", key="next-cycle", type="primary",
                      icon=":material/arrow_forward:", on_click=_on_switch_cycle,
                      args=(nxt.cycle.id,))


def _progress_text(prog: review.QueueProgress) -> str:
    parts = [f"{prog.claims_labeled} of {prog.claims_total} claims labeled"]
    if prog.claims_unclear:
        parts.append(f"{prog.claims_unclear} unclear")
    if prog.claims_skipped:
        parts.append(f"{prog.claims_skipped} skipped")
    parts.append(f"{prog.answers_done} of {prog.answers_total} answers done")
    return " · ".join(parts)


@st.fragment
def card_fragment(cycle: review.CycleRef) -> None:
    reviewer = ui.current_reviewer()
    if not reviewer or st.session_state.get(CYCLE_KEY, cycle.id) != cycle.id:
        st.rerun()  # signed out, or another cycle chosen from here: redraw the whole page
    with _db() as db:
        pos = _cursor(db, cycle.id, reviewer)
        prog = review.progress(db, cycle.id, reviewer)
        answers = review.queue(db, cycle.id, reviewer)
        card = review.load_card(db, pos.answer_id, reviewer) if pos else None
        index = review.shown_claim(card, pos.claim_index) if card is not None and pos else None
        # The judge's data is read here and nowhere else, only once every claim is settled.
        rows = review.reveal(db, cycle_id=cycle.id, answer_id=card.answer_id,
                             reviewer=reviewer) if card is not None and index is None else None
    wanted = (st.session_state.get(CURSOR) or {}).get("selected")
    view = None if rows is None else review.reveal_view(rows, wanted)
    selected = view.selected if view else None
    if card is not None:  # the cursor always names the card drawn below
        _set_cursor(cycle.id, reviewer, review.Position(card.answer_id, index), selected)
        st.session_state.pop(DONE_SEEN, None)
    elif st.session_state.get(DONE_SEEN) != cycle.id:
        # Just finished (in a fragment run): once, redraw the whole page so the cycle
        # picker's progress is current beside the done screen. Before any output, so the
        # pending toast is shown by that run.
        st.session_state[DONE_SEEN] = cycle.id
        st.rerun()

    st.progress(prog.fraction, text=_progress_text(prog))
    if (msg := st.session_state.pop(TOAST, None)) is not None:
        st.toast(msg, icon=":material/check_circle:")
    if (msg := st.session_state.pop(FLASH, None)) is not None:
        with st.container(border=True, key="flash"):
            st.error("Not recorded:", icon=":material/error:")
            ui.literal(msg)
    if card is None:
        _done(cycle, reviewer, prog)
        return

    k = answers.index(card.answer_id) + 1 if card.answer_id in answers else 0
    head, _ = st.columns([3, 2])
    with head:
        ui.literal(f"Answer {k} of {len(answers)} · id {card.answer_id}")
    left, right = st.columns([3, 2], gap="large")
    with left:
        _question_and_answer(card, index)
        if rows is None:
            assert index is not None
            _claim_panel(cycle, card, index)
        else:
            assert view is not None
            _reveal_panel(cycle, card, rows, view)
    with right:
        _chunks(card)


# ---------------------------------------------------------------- page


def _cycle_option(choice: review.CycleChoice) -> str:
    """A cycle as plain text (selectbox options and ui.literal never render markdown)."""
    p = choice.progress
    return (f"{choice.cycle.name} — {p.claims_labeled}/{p.claims_total} labeled"
            + ("" if choice.has_work else " · done"))


reviewer = ui.require_reviewer()
st.title("Review")
ui.shortcut_guard()

with _db() as db:
    choices = review.cycle_choices(db, reviewer)
if not choices:
    st.info("No open cycle has answers for you. A lead creates one on the Cycles page "
            "(or `python -m calibration cycle create`).", icon=":material/inbox:")
    st.stop()

by_id = {c.cycle.id: c for c in choices}
if st.session_state.get(CYCLE_KEY) not in by_id:
    # First visit, or the cycle was closed: the first cycle with work left for this reviewer.
    default = review.default_cycle(choices)
    assert default is not None
    st.session_state[CYCLE_KEY] = default.cycle.id
chosen = by_id[st.session_state[CYCLE_KEY]].cycle
if len(choices) > 1:
    # Progress in the options is as of this page run (the bar below follows every verdict;
    # finishing a cycle redraws the page). The browser keeps showing a selected option's
    # old text when only the text changes, so the widget's key names the options' texts
    # and the choice: a change draws a fresh picker, set from CYCLE_KEY.
    ids = list(by_id)
    texts = [_cycle_option(by_id[cid]) for cid in ids]
    digest = hashlib.sha256("\n".join([str(chosen.id), *texts]).encode()).hexdigest()[:16]
    pick_key = f"review_cycle_pick_{digest}"
    st.selectbox("Cycle", options=ids, index=ids.index(chosen.id), key=pick_key,
                 format_func=lambda cid: _cycle_option(by_id[cid]), on_change=_on_pick,
                 args=(pick_key,))
with st.container(key="cycle-name"):
    ui.literal(f"Cycle {chosen.name} · judge {chosen.judge_run}"
               + (" · open to every reviewer" if chosen.open_to_all else ""))
st.caption("Keys: 1 SUPPORTED · 2 CONTRADICTED · 3 UNSUPPORTED · S skip · U unclear · "
           "← → move within the answer · after the reveal K keep · J judge right "
           "(on the selected disagreement; ← → choose it) · N next answer")

card_fragment(chosen)
