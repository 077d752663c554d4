"""Review: label claims blind, take a last look, then see the judge and reconcile.

The page, top to bottom: one header line (cycle picker, cycle and judge, progress, and the
Answers / Guidelines / Keys buttons), then the card: on the left the question, the answer
with the current claim marked and the claim with its verdict buttons, note and evidence;
on the right the retrieved chunks, scrolling in their own area. At 1280×720 the claim, its
buttons and the marked answer are on screen without scrolling.

Per answer: a verdict per claim from the keyboard (1 / 2 / 3, S skip, U unclear, ← →
move; E then a chunk's number picks evidence). Every verdict is written to SQLite in the
button's callback, before the card is drawn again, with the time from card shown to verdict.
When every claim is settled the reviewer takes a last look at all their verdicts, may change
any, and commits with Enter;
only then are the judge's verdicts and rationales read and shown, disagreements first;
each is settled with K ("I keep my verdict", a judge error) or J ("the judge is right",
a slip) on the selected disagreement (← → choose another). A claim marked unclear shows
no judge verdict until a lead settles it. N: the next answer (the page says why not, when
a disagreement is still open). A skipped claim comes back until it is settled.

Session state holds only the cursor (cycle, answer, claim, selected disagreement), the
chosen cycle, whether the number keys pick evidence (after E), when the current claim was
shown, pending messages and the widgets' values; the database is the memory. The page body
is a fragment, so a key press reruns only it. Rules (what comes next, what is shown, what a
key may do) are pure functions in `calibration.review`. Untrusted text goes through
ui.literal / ui.body / ui.ident only; toasts, labels and captions are built from constants
and numbers; the lead's guidelines are the one markdown shown.
"""

from __future__ import annotations

import hashlib
import time
from contextlib import AbstractContextManager

import streamlit as st

import ui
from calibration import review, store
from calibration.errors import CalibrationError, StaleLabelError
from calibration.fmt import plural
from calibration.store import Database
from calibration.store.guidelines import PROJECT_SCOPE, Guidelines
from calibration.vocab import LABELS, VERDICT_COLOURS

VERDICT_KEYS = {"SUPPORTED": "1", "CONTRADICTED": "2", "UNSUPPORTED": "3"}
STATUS_TEXT = {"todo": "not labeled yet", "skipped": "skipped", "unclear": "unclear, needs discussion"}
KIND_TEXT = {"skip": "skipped", "unclear": "unclear"}
RECONCILE_TEXT = {"keep": "you keep your verdict", "judge_right": "the judge's verdict"}
KEYS_HELP = [
    ("1 / 2 / 3", "SUPPORTED / CONTRADICTED / UNSUPPORTED"),
    ("S", "skip: the claim comes back at the end of your queue"),
    ("U", "unclear, needs discussion: a lead decides; the judge stays hidden for it"),
    ("E, then 1-9", "add that chunk to the claim's evidence, or remove it"),
    ("← →", "previous / next claim (after the reveal: previous / next disagreement)"),
    ("Enter", "commit the answer after the last look: the judge is revealed"),
    ("K / J", "after the reveal: I keep my verdict / the judge is right"),
    ("N", "next answer"),
    ("L", "your answers in this cycle"),
    ("G", "guidelines and verdict definitions"),
    ("H or ?", "this list of keys"),
]
CURSOR = "review_cursor"
FLASH = "review_flash"  # an error from the last callback: nothing was recorded
NOTICE = "review_notice"  # why a key could not act
TOAST = "review_toast"  # what the last callback recorded, shown once as a toast
SHOWN = "review_shown"  # (claim pk, monotonic time) the current claim was first drawn
# The cycle shown: {"reviewer", "id", "picked" (chosen in this tab, not by `default_cycle`)}.
# Not a widget key (see the picker); keyed by the reviewer, so a new sign-in starts afresh.
CYCLE_KEY = "review_cycle"
PICKING = "review_evidence_pick"  # the claim (pk) whose evidence the number keys pick, after E
FULL_CHUNKS = "review_full_chunks"  # the answer whose chunks are shown in full, not cut
# Characters of a chunk drawn at first. Every key press redraws the card, chunks included, and
# a chunk of a megabyte made each key take over a second; the rest is shown on request.
CHUNK_CHARS = 10_000

# Layout for one screen: compact top padding, the answer and chunk areas scroll on their own,
# verdict colours only on verdict buttons, and the look of the card's text blocks (drawn as
# HTML by ui.draw). Constant CSS; no data goes into it.
_MUTED = "font-size: 0.875rem; opacity: 0.75;"
_CSS = "<style>\n" + "\n".join([
    ".stMainBlockContainer { padding-top: 2.6rem; padding-bottom: 1rem; }",
    "[data-testid='stMainBlockContainer'] [data-testid='stVerticalBlock'] { gap: 0.6rem; }",
    ".cal-question { font-weight: 600; white-space: pre-wrap; overflow-wrap: anywhere; }",
    ".cal-answer { white-space: pre-wrap; overflow-wrap: anywhere; line-height: 1.6; margin-top: 0.5rem;"
    " max-height: 10em; overflow-y: auto; position: relative; padding: 0.5rem 0.75rem;"
    " border: 1px solid rgba(128, 128, 128, 0.3); border-radius: 0.5rem; }",
    f".cal-fact, .cal-muted, .cal-progress {{ {_MUTED} white-space: pre-wrap; }}",
    ".st-key-cycle-name { min-width: 0; }",
    ".cal-cycle { font-size: 0.9rem; opacity: 0.85; white-space: nowrap; overflow: hidden;"
    " text-overflow: ellipsis; }",
    ".cal-bar { height: 6px; border-radius: 3px; background: rgba(128, 128, 128, 0.2); margin: 3px 0; }",
    ".cal-bar > div { height: 100%; border-radius: 3px; background: #3f5f8a; }",
    ".cal-chunks { max-height: calc(100vh - 12rem); overflow-y: auto; padding-right: 4px; }",
    ".cal-chunk { border: 1px solid rgba(128, 128, 128, 0.3); border-radius: 0.5rem;"
    " padding: 0.5rem 0.75rem; margin-bottom: 0.5rem; }",
    f".cal-chunk-head {{ {_MUTED} font-weight: 600; overflow-wrap: anywhere; }}",
    ".cal-chunk-text, .cal-claim, .cal-line, .cal-rationale, .cal-look { white-space: pre-wrap;"
    " overflow-wrap: anywhere; }",
    ".cal-claim-title { font-weight: 600; }",
    ".cal-claim-list .cal-line, .st-key-guideline-summary p { font-size: 0.875rem; opacity: 0.85; }",
    ".st-key-guideline-summary p { margin: 0; overflow-wrap: anywhere; }",
    ".cal-claim-list { margin-top: 0.25rem; }",
    "[class*='st-key-v-'] button { padding-left: 6px; padding-right: 6px; }",
    "[class*='st-key-disagreement-'] { border-left: 4px solid #3f5f8a; padding-left: 6px;"
    " border-radius: 4px; }",
    *(f"[class*='st-key-v-{v}-'] button {{ border-left: 6px solid {c}; }}"
      for v, c in VERDICT_COLOURS.items()),
    *(f"[class*='st-key-v-{v}-'] button[kind='secondary'] p {{ color: {c}; font-weight: 600; }}"
      for v, c in VERDICT_COLOURS.items()),
]) + "\n</style>"


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


def _elapsed_ms(claim_pk: int) -> int | None:
    shown = st.session_state.get(SHOWN)
    if not shown or shown[0] != claim_pk:
        return None
    return int((time.monotonic() - shown[1]) * 1000)


def _forget_inputs(claim_pk: int) -> None:
    """Drop the note and evidence typed for the claim: drawn again from its current label."""
    for key in (f"ev_{claim_pk}", f"note_{claim_pk}"):
        st.session_state.pop(key, None)


@ui.write_callback
def _on_label(cycle_id: int, answer_id: str, claim_pk: int, index: int, kind: str,
              verdict: str | None, chunk_ids: tuple[str, ...], based_on: int | None) -> None:
    """`based_on`: the label event the card showed for the claim (`LabelState.event_id`)."""
    reviewer = ui.current_reviewer()
    if not reviewer or not _is_current(cycle_id, answer_id, index):
        return
    picked = st.session_state.get(f"ev_{claim_pk}") or []
    evidence = [chunk_ids[n - 1] for n in picked if 0 < n <= len(chunk_ids)]
    note = st.session_state.get(f"note_{claim_pk}") or None
    try:
        with _db() as db:
            review.label(db, cycle_id=cycle_id, reviewer=reviewer, claim_pk=claim_pk,
                         kind=kind, verdict=verdict, evidence=evidence, note=note,
                         duration_ms=_elapsed_ms(claim_pk), based_on=store.BasedOn(based_on))
            card = review.load_card(db, answer_id, reviewer)
            pos = review.position_after_label(card, index)
            if pos is None:  # only skipped claims left here: go on with the queue
                pos = review.resume(db, cycle_id, reviewer, after=answer_id)
    except StaleLabelError as exc:  # the card stays on the claim, now with its current label
        _flash(exc)
        _forget_inputs(claim_pk)
        return
    except CalibrationError as exc:
        _flash(exc)
        return
    what = verdict if kind == "blind" else KIND_TEXT[kind]
    tail = " · comes back at the end" if kind == "skip" else ""
    tail += " · last look before the reveal" if card.complete else ""
    _toast(f"Saved: {what} · claim {index + 1} of {len(card.claims)}{tail}")
    st.session_state.pop(SHOWN, None)
    _set_cursor(cycle_id, reviewer, pos)


def _on_evidence_keys(claim_pk: int) -> None:
    """E: the number keys pick evidence chunks for the claim (again: they give verdicts)."""
    if st.session_state.get(PICKING) == claim_pk:
        st.session_state.pop(PICKING, None)
    else:
        st.session_state[PICKING] = claim_pk


def _on_evidence_key(claim_pk: int, number: int, chunks: int) -> None:
    """After E, a number: that chunk is added to the evidence (or removed); the number keys
    give verdicts again."""
    ev_key = f"ev_{claim_pk}"
    st.session_state[ev_key] = review.toggle_evidence(st.session_state.get(ev_key) or [], number,
                                                      chunks)
    st.session_state.pop(PICKING, None)


def _on_move(cycle_id: int, answer_id: str, index: int | None, to: int | None) -> None:
    """`to`: a claim index, or None for the answer-wide view (the last look)."""
    reviewer = ui.current_reviewer()
    if reviewer and _is_current(cycle_id, answer_id, index):
        _set_cursor(cycle_id, reviewer, review.Position(answer_id, to))


@ui.write_callback
def _on_commit(cycle_id: int, answer_id: str) -> None:
    reviewer = ui.current_reviewer()
    if not reviewer or not _is_current(cycle_id, answer_id, None):
        return
    try:
        with _db() as db:
            review.commit(db, cycle_id=cycle_id, reviewer=reviewer, answer_id=answer_id)
    except CalibrationError as exc:
        _flash(exc)
        return
    _toast("Committed · the judge is revealed")
    _set_cursor(cycle_id, reviewer, review.Position(answer_id, None))


def _on_select(cycle_id: int, answer_id: str, claim_pk: int) -> None:
    reviewer = ui.current_reviewer()
    if reviewer and _is_current(cycle_id, answer_id, None):
        _set_cursor(cycle_id, reviewer, review.Position(answer_id, None), claim_pk)


@ui.write_callback
def _on_reconcile(cycle_id: int, answer_id: str, claim_pk: int, choice: str,
                  based_on: int | None) -> None:
    """Record the choice, then select the next disagreement still pending (if any), so K / J
    walk through them; with none left the selection stays, and K / J change the choice."""
    reviewer = ui.current_reviewer()
    if not reviewer or not _is_current(cycle_id, answer_id, None):
        return
    try:
        with _db() as db:
            state = review.reconcile(db, cycle_id=cycle_id, reviewer=reviewer, claim_pk=claim_pk,
                                     choice=choice, based_on=store.BasedOn(based_on))
            rows = review.reveal(db, cycle_id=cycle_id, answer_id=answer_id, reviewer=reviewer)
    except CalibrationError as exc:
        _flash(exc)
        return
    selected = review.selection_after_reconcile(rows, claim_pk)
    number = next((r.claim.number for r in rows if r.claim.pk == claim_pk), 1)
    _toast(f"Saved: {RECONCILE_TEXT[choice]} · claim {number} of {len(rows)} · "
           f"final label {state.final_verdict}")
    _set_cursor(cycle_id, reviewer, review.Position(answer_id, None), selected)


def _choose_cycle(cycle_id: int, *, picked: bool) -> None:
    st.session_state[CYCLE_KEY] = {"reviewer": ui.current_reviewer(), "id": cycle_id,
                                   "picked": picked}


def _on_pick(widget_key: str) -> None:
    _choose_cycle(st.session_state[widget_key], picked=True)


def _on_switch_cycle(cycle_id: int) -> None:
    _choose_cycle(cycle_id, picked=True)


@ui.write_callback
def _on_next_answer(cycle_id: int, answer_id: str, why_not: str | None) -> None:
    reviewer = ui.current_reviewer()
    if not reviewer or not _is_current(cycle_id, answer_id, None):
        return
    if why_not is not None:
        st.session_state[NOTICE] = why_not
        return
    try:
        with _db() as db:
            _set_cursor(cycle_id, reviewer, review.resume(db, cycle_id, reviewer, after=answer_id))
    except CalibrationError as exc:
        _flash(exc)


def _on_jump(cycle_id: int, answer_id: str) -> None:
    reviewer = ui.current_reviewer()
    if reviewer:
        _set_cursor(cycle_id, reviewer, review.Position(answer_id, None))


# ---------------------------------------------------------------- dialogs


@st.dialog("Keys", width="medium")
def _keys_dialog() -> None:
    for keys, what in KEYS_HELP:
        st.markdown(f"`{keys}` {what}")  # constants only
    st.caption("Keys act whenever the focus is outside a text field; Escape leaves a field.")


@st.dialog("Guidelines", width="large")
def _guidelines_dialog(definitions: dict[str, str], guidelines: list[Guidelines]) -> None:
    st.markdown("**Verdicts, as the judge's prompt defines them**")
    for verdict in LABELS:
        with st.container(horizontal=True, vertical_alignment="center"):
            ui.verdict_badge(verdict)
            ui.literal(definitions.get(verdict, ""))
    if not guidelines:
        st.caption("No guidelines written yet: a lead writes them on the Guidelines page.")
    for g in guidelines:
        st.divider()
        st.caption("For every cycle" if g.scope == PROJECT_SCOPE else "For this cycle")
        ui.guidelines(g.markdown)  # a lead's markdown, rendered so that it loads nothing


@st.dialog("Your answers in this cycle", width="large")
def _answers_dialog(cycle_id: int, reviewer: str, current: str | None) -> None:
    with _db() as db:  # read only when the list is open: a key press does not pay for it
        statuses = review.answer_statuses(db, cycle_id, reviewer)
    for a in statuses:
        with st.container(horizontal=True, vertical_alignment="center", key=f"answer-row-{a.number}"):
            ui.literal(f"{'▶' if a.answer_id == current else ' '} {a.number}. {a.answer_id} · "
                       f"{a.question} · {plural(a.claims, 'claim')} · {a.status}")
            st.space("stretch")
            if st.button(f"Open answer {a.number}", key=f"jump-{a.number}", on_click=_on_jump,
                         args=(cycle_id, a.answer_id)):
                st.rerun()


# ---------------------------------------------------------------- drawing


def _progress_text(prog: review.QueueProgress, k: int, n: int) -> str:
    parts = [f"{prog.claims_done} of {prog.claims_total} claims labeled"]
    if (reused := prog.reused_note()) is not None:
        parts.append(reused)
    if prog.claims_unclear:
        parts.append(f"{prog.claims_unclear} unclear")
    if prog.claims_skipped:
        parts.append(f"{prog.claims_skipped} skipped")
    parts.append(f"{prog.answers_done} of {prog.answers_total} answers done")
    if k:
        parts.append(f"answer {k} of {n}")
    return " · ".join(parts)


def _cycle_option(choice: review.CycleChoice) -> str:
    """A cycle as plain text (selectbox options and ui.literal never render markdown); the
    count is the progress bar's (claims with a verdict or unclear)."""
    p = choice.progress
    return (f"{choice.cycle.name} — {p.claims_done}/{p.claims_total} labeled"
            + ("" if choice.has_work else " · done"))


def _header(choices: list[review.CycleChoice], chosen: review.CycleChoice, why: str,
            k: int, n: int) -> tuple[bool, bool, bool]:
    """The one header line; returns which dialog button was pressed (answers, guidelines, keys).
    `why`: why this cycle is shown (`review.why_this_cycle`)."""
    by_id = {c.cycle.id: c for c in choices}
    cyc = chosen.cycle
    prog = chosen.progress
    with st.container(horizontal=True, vertical_alignment="center", key="review-header", wrap=False):
        if len(choices) > 1:
            # The browser keeps showing a selected option's old text when only the text
            # changes, so the widget's key names the options' texts and the choice: a change
            # draws a fresh picker, set from CYCLE_KEY.
            ids = list(by_id)
            texts = [_cycle_option(by_id[cid]) for cid in ids]
            digest = hashlib.sha256("\n".join([str(cyc.id), *texts]).encode()).hexdigest()[:16]
            pick_key = f"review_cycle_pick_{digest}"
            st.selectbox("Cycle", options=ids, index=ids.index(cyc.id), key=pick_key,
                         format_func=lambda cid: _cycle_option(by_id[cid]), on_change=_on_pick,
                         args=(pick_key,), label_visibility="collapsed", width=230)
        with st.container(key="cycle-name", width="stretch"):
            # One line, cut with an ellipsis when long: the whole text is the tooltip too.
            line = ui.body(f"Cycle {cyc.name} · {why} · judge {cyc.judge_run}")
            ui.draw(f'<div class="cal-cycle" title="{line}">{line}</div>')
        answers = st.button("Answers", key="answers-list", shortcut="L", icon=":material/list:")
        guide = st.button("Guidelines", key="guidelines", shortcut="G", icon=":material/menu_book:")
        keys = st.button("Keys", key="keys-help", shortcut="H", icon=":material/keyboard:")
    # Bar and progress as one element (a key press redraws them).
    ui.draw(_bar(prog.fraction), ui.div("cal-progress", ui.body(_progress_text(prog, k, n))))
    return answers, guide, keys


def _bar(fraction: float) -> str:
    """The progress bar (constant markup and a number)."""
    pct = max(0.0, min(1.0, fraction)) * 100
    return (f'<div class="cal-bar" role="progressbar" aria-valuenow="{pct:.0f}" aria-valuemin="0" '
            f'aria-valuemax="100"><div style="width: {pct:.1f}%"></div></div>')


def _question_and_answer(card: review.Card, index: int | None, mode: str) -> None:
    blocks = [ui.div("cal-question", ui.body(card.question))]
    if mode == "claim" or len(card.claims) != 1 or card.answer.strip() != card.claims[0].text.strip():
        # (else the answer is its one claim, shown in the panel below)
        spans = review.claim_spans(card.answer, [c.text for c in card.claims])
        span = spans[index] if index is not None else None
        blocks.append(ui.highlighted_html(*review.split_highlight(card.answer, span)))
        blocks += [ui.div("cal-fact", ui.body(fact)) for fact in review.answer_facts(card)]
    ui.draw(*blocks)


def _on_full_chunks(answer_id: str | None) -> None:
    st.session_state[FULL_CHUNKS] = answer_id


def _chunk_text(text: str, full: bool) -> str:
    """A chunk's text as HTML: all of it when `full`, else its first `CHUNK_CHARS` characters
    and a line saying how many more there are."""
    shown, left_out = (text, 0) if full else ui.cut(text, CHUNK_CHARS)
    text_html = ui.div("cal-chunk-text", ui.body(shown))
    if not left_out:
        return text_html
    return text_html + ui.div("cal-muted", f"… {left_out:,} more characters (Show the chunks in full)")


def _chunks(card: review.Card) -> None:
    if not card.chunks:
        ui.draw(ui.div("cal-chunks", ui.div("cal-muted", "This answer has no chunks.")))
        return
    full = st.session_state.get(FULL_CHUNKS) == card.answer_id
    ui.draw(ui.div("cal-chunks", "".join(
        ui.div("cal-chunk", ui.div("cal-chunk-head", f"[{ch.number}] " + ui.ident(ch.chunk_id)
                                   + (" · " + ui.ident(ch.source) if ch.source else ""))
               + _chunk_text(ch.text, full))
        for ch in card.chunks)))
    if any(len(ch.text) > CHUNK_CHARS for ch in card.chunks):
        st.button("Cut the long chunks again" if full else "Show the chunks in full", key="chunks-full",
                  icon=":material/unfold_less:" if full else ":material/unfold_more:",
                  help="Long chunks are cut so that every key stays quick; in full, every key on "
                       "this answer sends them again.",
                  on_click=_on_full_chunks, args=(None if full else card.answer_id,))


def _claim_list(card: review.Card, index: int) -> str:
    return ui.div("cal-claim-list", "".join(
        ui.div("cal-line", ("▶ " if i == index else "") + f"{c.number}. "
               f"[{c.verdict or STATUS_TEXT[c.status]}] " + ui.body(c.text))
        for i, c in enumerate(card.claims)))


def _claim_panel(cycle: review.CycleRef, card: review.Card, index: int,
                 definitions: dict[str, str], summary: str) -> None:
    claim = card.claims[index]
    pk = claim.pk
    base = claim.label.event_id if claim.label else None  # what a write here is based on
    n = len(card.claims)
    picking = st.session_state.get(PICKING) == pk and bool(card.chunks)  # after E
    if (st.session_state.get(SHOWN) or (None,))[0] != pk:
        st.session_state[SHOWN] = (pk, time.monotonic())  # time per claim starts here
    with st.container(border=True, key=f"claim-{pk}"):
        head = [ui.div("cal-claim-title", f"Claim {claim.number} of {n}")]
        # A one-claim answer that is the claim is already shown, marked, just above.
        if n > 1 or card.answer.strip() != claim.text.strip():
            head.append(ui.div("cal-claim", ui.body(claim.text)))
        ui.draw(*head)
        with st.container(horizontal=True, key="verdicts"):
            for verdict in LABELS:
                st.button(
                    verdict, key=f"v-{verdict}-{pk}", shortcut=None if picking else VERDICT_KEYS[verdict],
                    help=definitions.get(verdict), width="stretch",
                    type="primary" if claim.verdict == verdict else "secondary",
                    on_click=_on_label,
                    args=(cycle.id, card.answer_id, pk, index, "blind", verdict, card.chunk_ids, base),
                )
        with st.container(horizontal=True, vertical_alignment="center", key="claim-actions"):
            st.button("Skip", key=f"skip-{pk}", shortcut="S",
                      help="Put it off: it comes back at the end of your queue until settled.",
                      on_click=_on_label,
                      args=(cycle.id, card.answer_id, pk, index, "skip", None, card.chunk_ids, base))
            st.button("Unclear", key=f"unclear-{pk}", shortcut="U",
                      help="Needs discussion: a lead decides this claim, and the judge's verdict "
                           "on it stays hidden from you until then.",
                      on_click=_on_label,
                      args=(cycle.id, card.answer_id, pk, index, "unclear", None, card.chunk_ids,
                            base))
            st.button("Evidence", key=f"evidence-{pk}", shortcut="E",
                      icon=":material/format_list_numbered:", disabled=not card.chunks,
                      type="primary" if picking else "secondary",
                      help="E, then a chunk's number: adds that chunk to the evidence, or removes it.",
                      on_click=_on_evidence_keys, args=(pk,))
            if claim.label is not None:
                st.caption(f"Your current label: {claim.verdict or STATUS_TEXT[claim.status]} "
                           "(a new choice is added to the history)")
            st.space("stretch")
            st.button("Back", key=f"back-{pk}", shortcut="Left", icon=":material/arrow_back:",
                      disabled=index == 0, on_click=_on_move,
                      args=(cycle.id, card.answer_id, index, index - 1))
            ahead = review.forward(card, index)
            st.button("Forward", key=f"fwd-{pk}", shortcut="Right",
                      icon=":material/arrow_forward:", icon_position="right",
                      help="Back to the last look" if ahead and ahead.claim_index is None else None,
                      disabled=ahead is None, on_click=_on_move,
                      args=(cycle.id, card.answer_id, index, ahead.claim_index if ahead else None))

        if picking:
            chosen = st.session_state.get(f"ev_{pk}") or []
            with st.container(horizontal=True, vertical_alignment="center", key="evidence-keys"):
                st.caption("Evidence: press a chunk's number (E again: back to verdicts)")
                for num in range(1, min(len(card.chunks), review.EVIDENCE_KEYS) + 1):
                    st.button(f"[{num}]", key=f"ev-key-{num}-{pk}", shortcut=str(num),
                              type="primary" if num in chosen else "secondary",
                              on_click=_on_evidence_key, args=(pk, num, len(card.chunks)))
        ev_key, note_key = f"ev_{pk}", f"note_{pk}"
        by_id = {ch.chunk_id: ch.number for ch in card.chunks}
        if ev_key not in st.session_state:
            st.session_state[ev_key] = [by_id[e] for e in (claim.label.evidence if claim.label else [])
                                        if e in by_id]
        if note_key not in st.session_state:
            st.session_state[note_key] = (claim.label.note if claim.label else None) or ""
        # The note comes first: Tab from it reaches the evidence list (a text field).
        with st.container(horizontal=True, key="claim-inputs"):
            # Multi-line: Enter starts a new line; the note is read when a verdict key is pressed.
            st.text_area("Note (optional)", key=note_key, max_chars=2000, height="content",
                         placeholder="Saved with the verdict", width="stretch")
            # Options are chunk numbers; the shown name is "[n] id" as plain text.
            st.multiselect("Evidence chunks (required for SUPPORTED)" if cycle.require_evidence
                           else "Evidence chunks (optional)", options=[ch.number for ch in card.chunks],
                           format_func=lambda num: f"[{num}] {card.chunks[num - 1].chunk_id}",
                           key=ev_key, placeholder="Chunks that decide it", select_all=False,
                           width="stretch")
        if summary:
            # The lead's markdown, inert; after the prefix it is one line, so no block markup.
            with st.container(key="guideline-summary"):
                ui.guidelines("Guidelines (G): " + summary)
        if n > 1:
            ui.draw(_claim_list(card, index))


def _last_look(cycle: review.CycleRef, card: review.Card) -> None:
    with st.container(border=True, key="last-look"):
        with st.container(horizontal=True, vertical_alignment="center", wrap=False):
            ui.draw(ui.div("cal-claim-title", "Last look before the reveal"),
                    ui.div("cal-muted", "Your verdicts on this answer. Change any of them now; after "
                                        "the commit the judge is shown and your blind verdicts are final."))
            missing = review.missing_evidence(card) if cycle.require_evidence else []
            st.button("Commit and reveal the judge", key="commit", type="primary", shortcut="Enter",
                      icon=":material/visibility:", on_click=_on_commit, disabled=bool(missing),
                      args=(cycle.id, card.answer_id))
        if missing:
            with st.container(key="evidence-needed"):
                st.warning(review.evidence_needed(missing), icon=":material/format_list_numbered:")
        for i, c in enumerate(card.claims):
            with st.container(horizontal=True, vertical_alignment="center", key=f"look-{c.pk}",
                              wrap=False):
                mark = ui.badge(c.verdict) if c.verdict else ui.gray_badge("unclear")
                ui.draw(ui.div("cal-look", mark + " " + ui.body(f"{c.number}. {c.text}")))
                st.button("Change", key=f"change-{c.pk}", icon=":material/edit:",
                          shortcut="Left" if i == len(card.claims) - 1 else None,
                          on_click=_on_move, args=(cycle.id, card.answer_id, None, i))


def _reveal_row(cycle: review.CycleRef, card: review.Card, r: review.Revealed, selected: int | None
                ) -> None:
    pk = r.claim.pk
    base = r.claim.label.event_id if r.claim.label else None
    with st.container(border=True, key=f"reveal-{pk}"):
        # The verdicts and (for a disagreement) the K / J choice come before the long texts,
        # so the decision is on screen whatever the claim's length.
        you = ui.gray_badge("You: unclear") if r.unclear else ui.badge(r.blind, prefix="You")
        judge = (ui.gray_badge("Judge: hidden") if r.unclear and not r.adjudicated
                 else ui.badge(r.judge_verdict, prefix="Judge"))
        head = [ui.div("cal-reveal-head", f"<b>Claim {r.claim.number}</b> {you} {judge}")]
        if r.disagrees:
            here = pk == selected
            if r.reconciled == "keep":
                head.append(ui.div("cal-muted", f"You kept your verdict: a judge error. "
                                                f"Final label {r.final}."))
            elif r.reconciled == "judge_right":
                head.append(ui.div("cal-muted", f"The judge was right: your blind label stays in "
                                                f"the history, the final label is {r.final} "
                                                "(counted as a slip)."))
            if here:
                head.append(ui.div("cal-muted", "▶ K and J act on this claim"))
        ui.draw(*head)
        if r.disagrees:
            with st.container(horizontal=True):
                st.button("I keep my verdict", key=f"keep-{pk}", width="stretch",
                          shortcut="K" if here else None,
                          type="primary" if r.reconciled == "keep" else "secondary",
                          help="The judge is wrong on this claim.",
                          on_click=_on_reconcile, args=(cycle.id, card.answer_id, pk, "keep", base))
                st.button("The judge is right", key=f"judge-right-{pk}", width="stretch",
                          shortcut="J" if here else None,
                          type="primary" if r.reconciled == "judge_right" else "secondary",
                          help="My first call was a slip; take the judge's verdict.",
                          on_click=_on_reconcile,
                          args=(cycle.id, card.answer_id, pk, "judge_right", base))
        text = [ui.div("cal-claim", ui.body(r.claim.text))]
        if r.unclear:
            if r.adjudicated:
                text.append(ui.div("cal-muted", "A lead decided " + ui.badge(r.adjudicated)))
            else:
                text.append(ui.div("cal-muted", "You marked this claim unclear: it waits for a lead's "
                                                "decision, and the judge's verdict stays hidden until then."))
        if r.judge_verdict is not None:
            text.append(ui.div("cal-rationale", "Judge's rationale: "
                               + (ui.body(r.rationale) if r.rationale else "(none given)")))
            if r.judge_evidence:
                text.append(ui.div("cal-line", "Judge's evidence: "
                                   + ", ".join(ui.ident(e) for e in r.judge_evidence)))
        if r.claim.label and r.claim.label.evidence:
            text.append(ui.div("cal-line", "Your evidence: "
                               + ", ".join(ui.ident(e) for e in r.claim.label.evidence)))
        if r.claim.label and r.claim.label.note:
            text.append(ui.div("cal-line", "Your note: " + ui.body(r.claim.label.note)))
        if not r.disagrees and not r.unclear and r.judge_verdict is None:
            text.append(ui.div("cal-muted", "The judge gave no verdict on this claim."))
        ui.draw(*text)


def _reveal_panel(cycle: review.CycleRef, card: review.Card, rows: list[review.Revealed],
                  view: review.RevealView) -> None:
    selected = view.selected
    by_pk = {r.claim.pk: r for r in rows}
    why_not = review.why_not_next(view, {r.claim.pk: r.claim.number for r in rows})
    with st.container(key="reveal"):
        with st.container(horizontal=True, vertical_alignment="center", key="reveal-keys",
                          wrap=False):
            lines = [ui.div("cal-summary", f"The judge agrees with you on {view.agree} of "
                                           f"{view.compared} claims you labeled."
                            + (f" {plural(view.unclear, 'claim')} marked unclear: hidden until a "
                               "lead decides." if view.unclear else ""))]
            if selected is not None:
                lines.append(ui.div("cal-muted", f"K / J act on claim {by_pk[selected].claim.number}"
                                    + (" · ← → choose another disagreement"
                                       if view.following is not None else "")))
            ui.draw(*lines)
            if view.previous is not None and view.following is not None:
                st.button("Previous", key="sel-prev", shortcut="Left", icon=":material/arrow_back:",
                          help="The previous disagreement", on_click=_on_select,
                          args=(cycle.id, card.answer_id, view.previous))
                st.button("Next", key="sel-next", shortcut="Right", icon=":material/arrow_forward:",
                          icon_position="right", help="The next disagreement", on_click=_on_select,
                          args=(cycle.id, card.answer_id, view.following))
            st.button("Next answer", key="next-answer", type="primary", shortcut="N",
                      icon=":material/arrow_forward:", icon_position="right",
                      help=why_not, on_click=_on_next_answer,
                      args=(cycle.id, card.answer_id, why_not))
        if (msg := st.session_state.pop(NOTICE, None)) is not None and why_not is not None:
            with st.container(key="notice"):
                st.info(msg, icon=":material/info:")
        # Disagreements first (the only rows needing a decision), in answer order; then the rest.
        ordered = sorted(rows, key=lambda r: (not r.pending, not r.disagrees, r.claim.number))
        for r in ordered:
            if r.disagrees:
                with st.container(key=f"disagreement-{r.claim.pk}"):
                    _reveal_row(cycle, card, r, selected)
            else:
                _reveal_row(cycle, card, r, selected)


def _done(cycle: review.CycleRef, choices: list[review.CycleChoice], prog: review.QueueProgress) -> None:
    with st.container(key="queue-done"):
        st.success("Your queue in this cycle is done: every claim is settled, every answer "
                   "committed and every disagreement reconciled. Thank you!",
                   icon=":material/task_alt:")
        if prog.claims_unclear:
            awaits = "awaits" if prog.claims_unclear == 1 else "await"
            st.info(f"{plural(prog.claims_unclear, 'claim')} marked unclear {awaits} a lead's "
                    "decision.", icon=":material/forum:")
        nxt = review.next_cycle_with_work(choices, cycle.id)
        if nxt is not None:
            st.caption("Next cycle with work for you")
            ui.literal(_cycle_option(nxt))
            st.button("Go to the next cycle", key="next-cycle", type="primary",
                      icon=":material/arrow_forward:", on_click=_on_switch_cycle,
                      args=(nxt.cycle.id,))


@ui.fragment
def review_fragment() -> None:
    reviewer = ui.current_reviewer()
    if not reviewer:
        st.rerun()  # signed out: redraw the whole page (the sign-in)
    with _db() as db:
        choices = review.cycle_choices(db, reviewer)
        if not choices:
            st.info("No open cycle has answers for you. A lead creates one on the Cycles page "
                    "(or `.venv/bin/calibration cycle create`).", icon=":material/inbox:")
            return
        by_id = {c.cycle.id: c for c in choices}
        kept = st.session_state.get(CYCLE_KEY) or {}
        if kept.get("reviewer") != reviewer or kept.get("id") not in by_id:
            # Sign-in, reload, a new tab, or the cycle was closed: the reviewer's own work first.
            default = review.default_cycle(choices)
            assert default is not None
            _choose_cycle(default.cycle.id, picked=False)
            kept = st.session_state[CYCLE_KEY]
        chosen = by_id[kept["id"]]
        why = review.why_this_cycle(choices, chosen, picked=kept["picked"])
        cycle = chosen.cycle
        pos = _cursor(db, cycle.id, reviewer)
        answers = review.queue(db, cycle.id, reviewer)
        card = review.load_card(db, pos.answer_id, reviewer) if pos else None
        index = review.shown_claim(card, pos.claim_index) if card is not None and pos else None
        mode = review.card_view(card, index) if card is not None else "done"
        # The judge's data is read here and nowhere else, only once the answer is committed.
        rows = review.reveal(db, cycle_id=cycle.id, answer_id=card.answer_id,
                             reviewer=reviewer) if card is not None and mode == "reveal" else None
        definitions = review.judge_definitions(db, cycle.judge_run_id)
        guidelines = review.guidelines_for(db, cycle.id)
    wanted = (st.session_state.get(CURSOR) or {}).get("selected")
    view = None if rows is None else review.reveal_view(rows, wanted)
    if card is not None:  # the cursor always names the card drawn below
        _set_cursor(cycle.id, reviewer, review.Position(card.answer_id, index),
                    view.selected if view else None)

    k = answers.index(card.answer_id) + 1 if card is not None and card.answer_id in answers else 0
    open_answers, open_guide, open_keys = _header(choices, chosen, why, k, len(answers))
    if open_answers:
        _answers_dialog(cycle.id, reviewer, card.answer_id if card else None)
    elif open_guide:
        _guidelines_dialog(definitions, guidelines)
    elif open_keys:
        _keys_dialog()
    if (msg := st.session_state.pop(TOAST, None)) is not None:
        st.toast(msg, icon=":material/check:")
    if (msg := st.session_state.pop(FLASH, None)) is not None:
        with st.container(border=True, key="flash"):
            st.error("Not recorded:", icon=":material/error:")
            ui.literal(msg)
    if card is None:
        _done(cycle, choices, chosen.progress)
        return

    summary = review.guideline_summary(guidelines[-1].markdown) if guidelines else ""
    left, right = st.columns([5, 3], gap="medium")
    with left:
        _question_and_answer(card, index, mode)
        if mode == "claim":
            assert index is not None
            _claim_panel(cycle, card, index, definitions, summary)
        elif mode == "last look":
            _last_look(cycle, card)
        else:
            assert rows is not None and view is not None
            _reveal_panel(cycle, card, rows, view)
    with right:
        _chunks(card)


# ---------------------------------------------------------------- page

ui.require_reviewer()
st.html(_CSS)
ui.shortcut_guard()
review_fragment()
