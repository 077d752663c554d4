"""Review: label claims blind, take a last look, then see the judge and reconcile.

The page, top to bottom: one header line (cycle picker, cycle and judge, progress, and the
Answers / Guidelines / Keys buttons), then the card: on the left the question, the answer
with the current claim marked and the claim with its verdict buttons, evidence and note;
on the right the retrieved chunks, scrolling in their own area. At 1280×720 the claim, its
buttons and the marked answer are on screen without scrolling.

The card before the commit (the claims, the last look) is a component (`review_card`,
components/review_card.js) that holds the answer's claims in the browser and takes every key
itself: 1 / 2 / 3, S skip, U unclear, ← → move, E then a chunk's number picks evidence; the
next claim is drawn on the key press. It reports the whole answer's state (each claim's latest
verdict with a sequence number) and the keys meant for the server (Enter commit, K / J, ← →
between disagreements, N, L / G / H / ?). Verdicts go to the card's verdict route
(card_route.py, served beside the page by calibration_app/server.py), which writes them with no run of this
page; everything else, and any report the route did not write cleanly, comes here:
`_on_card_report` writes what is new once (`review.record_card`, which knows what the route
wrote) and the card marks each acknowledged claim "saved". A write that fails leaves the
verdicts on the card with the message. When every claim is settled the reviewer takes
a last look at all their verdicts, may change any, and commits with Enter; only then are the
judge's verdicts and rationales read and shown (drawn by the page, never sent to the card),
disagreements first; each is settled with K ("I keep my verdict", a judge error) or J ("the
judge is right", a slip) on the selected disagreement (← → choose another). A claim marked
unclear shows no judge verdict until a lead settles it. N: the next answer (the page says why
not, when a disagreement is still open). A skipped claim comes back until it is settled.

Session state holds only the cursor (cycle, answer, claim, selected disagreement), the chosen
cycle, what the card's reports have written (sequence numbers and label events, so nothing is
written twice), pending messages and the dialog asked for; the database is the memory. The page
body is a fragment, and the card a fragment inside it: a report here reruns only the card (the
header's counts follow with the page's next run, at the commit), and a report that changes
what the page draws around the card runs the page's fragment. The page's runs and write
callbacks take turns, one at a time per server process (`turns.turn`), so that the verdict
route, which does not, never waits behind a crowd of them. Rules (what comes next, what is
shown, what a key may do) are pure functions in `calibration.review`. Untrusted text goes through
untrusted.literal / .body / .ident, or to the card, which puts it in as text only; toasts,
labels and captions are built from constants and numbers; the lead's guidelines are the one markdown
shown.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from contextlib import AbstractContextManager
from typing import Any

import streamlit as st

from calibration import review, store
from calibration.errors import CalibrationError, SignedOutError, StorageError
from calibration.fmt import plural
from calibration.store import Database
from calibration.store.guidelines import PROJECT_SCOPE, Guidelines
from calibration.text import neutralise_body as neutral
from calibration.text import visible
from calibration.vocab import LABELS, VERDICT_COLOURS
from calibration_app import access, card_route, failures, review_card, signin, turns, untrusted, uploads

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
# The cycle shown: {"reviewer", "id", "picked" (chosen in this tab, not by `default_cycle`)}.
# Not a widget key (see the picker); keyed by the reviewer, so a new sign-in starts afresh.
CYCLE_KEY = "review_cycle"
FULL_CHUNKS = "review_full_chunks"  # the answer whose chunks are shown in full, not cut
CARD_KEY = "review_card"  # the card component's state: its latest report
# What the card's reports did: claim pk -> (sequence number, label event) written, the last
# action's sequence number done, claims refused (pk -> sequence number), a storage failure.
CARD_DONE = "review_card_done"
CARD_ACTIONS = "review_card_actions"
CARD_REFUSED = "review_card_refused"
CARD_FAILURE = "review_card_failure"
CARD_MOVED = "review_card_moved"  # counts the cursor moves the server made on the card's behalf
DIALOG = "review_dialog"  # the dialog a key asked for: "answers", "guidelines" or "keys"
# Characters of a chunk drawn at first. A chunk of a megabyte made every redraw of the
# chunks take over a second; the rest is shown on request.
CHUNK_CHARS = 10_000

# The look of the page's own text blocks (drawn as HTML by untrusted.draw, classes "cal-"): the
# answer and chunk areas scroll on their own. Constant CSS; no data goes into it.
_MUTED = "font-size: 0.875rem; opacity: 0.75;"
_CSS = (
    "<style>\n"
    + "\n".join(
        [
            ".cal-question { font-weight: 600; white-space: pre-wrap; overflow-wrap: anywhere; }",
            ".cal-answer { white-space: pre-wrap; overflow-wrap: anywhere; line-height: 1.6; margin-top: "
            "0.5rem;"
            " max-height: 10em; overflow-y: auto; position: relative; padding: 0.5rem 0.75rem;"
            " border: 1px solid rgba(128, 128, 128, 0.3); border-radius: 0.5rem; }",
            f".cal-fact, .cal-muted, .cal-progress {{ {_MUTED} white-space: pre-wrap; }}",
            ".st-key-cycle-name { min-width: 0; }",
            ".cal-cycle { font-size: 0.9rem; opacity: 0.85; white-space: nowrap; overflow: hidden;"
            " text-overflow: ellipsis; }",
            ".cal-bar { height: 6px; border-radius: 3px; background: rgba(128, 128, 128, 0.2); margin: 3px "
            "0; }",
            ".cal-bar > div { height: 100%; border-radius: 3px; background: #3f5f8a; }",
            ".cal-chunks { max-height: calc(100vh - 12rem); overflow-y: auto; padding-right: 4px; }",
            ".cal-chunk { border: 1px solid rgba(128, 128, 128, 0.3); border-radius: 0.5rem;"
            " padding: 0.5rem 0.75rem; margin-bottom: 0.5rem; }",
            f".cal-chunk-head {{ {_MUTED} font-weight: 600; overflow-wrap: anywhere; }}",
            ".cal-chunk-text, .cal-claim, .cal-line, .cal-rationale { white-space: pre-wrap;"
            " overflow-wrap: anywhere; }",
            ".st-key-guideline-summary p { font-size: 0.875rem; opacity: 0.85; margin: 0; overflow-wrap: "
            "anywhere; }",
            "[class*='st-key-disagreement-'] { border-left: 4px solid #3f5f8a; padding-left: 6px;"
            " border-radius: 4px; }",
        ]
    )
    + "\n</style>"
)


def _db() -> AbstractContextManager[Database]:
    return store.session(signin.db_path())


# ---------------------------------------------------------------- cursor


def _set_cursor(
    cycle_id: int, reviewer: str, pos: review.Position | None, selected: int | None = None
) -> None:
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
    if not cur or cur["cycle"] != cycle_id or cur["reviewer"] != reviewer or cur["answer"] is None:
        pos = review.resume(db, cycle_id, reviewer)
        _set_cursor(cycle_id, reviewer, pos)
        return pos
    return review.Position(cur["answer"], cur["claim"])


# ---------------------------------------------------------------- callbacks (run before the rerun)


def _flash(exc: Exception) -> None:
    if isinstance(exc, SignedOutError):
        raise exc  # not a message beside the card: the session ends (`turns.write_callback`)
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


@turns.write_callback
def _on_commit(cycle_id: int, answer_id: str) -> None:
    reviewer = signin.current_reviewer()
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
    reviewer = signin.current_reviewer()
    if reviewer and _is_current(cycle_id, answer_id, None):
        _set_cursor(cycle_id, reviewer, review.Position(answer_id, None), claim_pk)


@turns.write_callback
def _on_reconcile(cycle_id: int, answer_id: str, claim_pk: int, choice: str, based_on: int | None) -> None:
    """Record the choice, then select the next disagreement still pending (if any), so K / J
    walk through them; with none left the selection stays, and K / J change the choice."""
    reviewer = signin.current_reviewer()
    if not reviewer or not _is_current(cycle_id, answer_id, None):
        return
    try:
        with _db() as db:
            state = review.reconcile(
                db,
                cycle_id=cycle_id,
                reviewer=reviewer,
                claim_pk=claim_pk,
                choice=choice,
                based_on=store.BasedOn(based_on),
            )
            rows = review.reveal(db, cycle_id=cycle_id, answer_id=answer_id, reviewer=reviewer)
    except CalibrationError as exc:
        _flash(exc)
        return
    selected = review.selection_after_reconcile(rows, claim_pk)
    number = next((r.claim.number for r in rows if r.claim.pk == claim_pk), 1)
    _toast(
        f"Saved: {RECONCILE_TEXT[choice]} · claim {number} of {len(rows)} · final label {state.final_verdict}"
    )
    _set_cursor(cycle_id, reviewer, review.Position(answer_id, None), selected)


def _choose_cycle(cycle_id: int, *, picked: bool) -> None:
    st.session_state[CYCLE_KEY] = {"reviewer": signin.current_reviewer(), "id": cycle_id, "picked": picked}


def _on_pick(widget_key: str) -> None:
    _choose_cycle(st.session_state[widget_key], picked=True)


def _on_switch_cycle(cycle_id: int) -> None:
    _choose_cycle(cycle_id, picked=True)


@turns.write_callback
def _on_next_answer(cycle_id: int, answer_id: str, why_not: str | None) -> None:
    reviewer = signin.current_reviewer()
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
    reviewer = signin.current_reviewer()
    if reviewer:
        _set_cursor(cycle_id, reviewer, review.Position(answer_id, None))


# ---------------------------------------------------------------- the card's reports


def _card_done() -> dict[int, tuple[int, int]]:
    done = st.session_state.get(CARD_DONE)
    if not isinstance(done, dict):
        done = st.session_state[CARD_DONE] = {}
    return done


def _move_card(cycle_id: int, reviewer: str, pos: review.Position | None) -> None:
    """The server moves the card's cursor (a refused claim, the queue going on): the card
    follows it, where it otherwise keeps its own."""
    _set_cursor(cycle_id, reviewer, pos)
    st.session_state[CARD_MOVED] = int(st.session_state.get(CARD_MOVED) or 0) + 1


def _selected(db: Database, cycle_id: int, answer_id: str, reviewer: str) -> review.RevealView:
    rows = review.reveal(db, cycle_id=cycle_id, answer_id=answer_id, reviewer=reviewer)
    return review.reveal_view(rows, (st.session_state.get(CURSOR) or {}).get("selected"))


def _card_action(cycle_id: int, reviewer: str, answer_id: str, do: str) -> None:
    """One key the card passed on, as its button would act (the same callbacks)."""
    if do in ("answers", "guidelines", "keys"):
        st.session_state[DIALOG] = do
        return
    if do == "commit":
        _on_commit(cycle_id, answer_id)
        return
    cur = st.session_state.get(CURSOR) or {}
    if cur.get("answer") != answer_id or cur.get("claim") is not None:
        return  # not in the reveal view: K, J, N and the arrows have nothing to act on
    with _db() as db:
        card = review.load_card(db, answer_id, reviewer)
        if not card.revealed:
            return
        view = _selected(db, cycle_id, answer_id, reviewer)
        numbers = {c.pk: c.number for c in card.claims}
        # The key acts on the label as it is now: the selection it sees is the server's.
        events = {c.pk: c.label.event_id if c.label else None for c in card.claims}
    if do in ("keep", "judge_right") and view.selected is not None:
        _on_reconcile(cycle_id, answer_id, view.selected, do, events.get(view.selected))
    elif do == "previous" and view.previous is not None:
        _on_select(cycle_id, answer_id, view.previous)
    elif do == "following" and view.following is not None:
        _on_select(cycle_id, answer_id, view.following)
    elif do == "next":
        before = st.session_state.get(CURSOR)
        _on_next_answer(cycle_id, answer_id, review.why_not_next(view, numbers))
        if st.session_state.get(CURSOR) != before:
            st.session_state[CARD_MOVED] = int(st.session_state.get(CARD_MOVED) or 0) + 1


def _page_view() -> tuple[Any, ...]:
    """What of the session state the page draws around the card: the answer, the dialog asked
    for, the messages, the keys done. A report that changes none of it needs only the card."""
    cur = st.session_state.get(CURSOR) or {}
    return (
        cur.get("cycle"),
        cur.get("answer"),
        cur.get("selected"),
        st.session_state.get(CARD_ACTIONS),
        *(st.session_state.get(k) is not None for k in (FLASH, TOAST, DIALOG, NOTICE)),
    )


@turns.write_callback
def _on_card_report() -> None:
    """The card reported: write it (`_write_card_report`). By default only the card's fragment
    runs again: a verdict within the answer, the last look included, changes nothing else the
    page draws. When the report changed what the page draws around the card (another answer,
    a key passed on, a message, a dialog), the page's fragment runs instead, the header's
    counts with it."""
    before = _page_view()
    _write_card_report()
    if _page_view() != before:
        st.rerun(REVIEW_FRAGMENT)


def _write_card_report() -> None:
    """The card reported (a key press, or several): write the claims' new verdicts once, follow
    its cursor, then do the keys it passed on, in order. A storage failure writes nothing more
    and does no key: the card keeps the verdicts and says so, and sends them again."""
    reviewer = signin.current_reviewer()
    cur = st.session_state.get(CURSOR) or {}
    state = st.session_state.get(CARD_KEY)
    raw = state.get("report") if isinstance(state, dict) else None
    if not reviewer or cur.get("cycle") is None or cur.get("reviewer") != reviewer:
        return
    cycle_id = cur["cycle"]
    try:
        report = review.parse_card_report(raw)
    except CalibrationError as exc:
        _flash(exc)
        return
    if report is None:
        return
    done = _card_done()
    try:
        with _db() as db:
            out = review.record_card(db, cycle_id=cycle_id, reviewer=reviewer, report=report, done=done)
    except StorageError as exc:  # the database could not even be opened
        out = review.CardWrite({}, {}, {}, str(exc))
    done.update(out.written)
    st.session_state[CARD_FAILURE] = None if out.failure is None else failures.storage_sentence(out.failure)
    refused = st.session_state.setdefault(CARD_REFUSED, {})
    for pk, (seq, why) in out.refused.items():
        done.pop(pk, None)
        refused[pk] = seq
        st.session_state[FLASH] = why
    if out.failure is not None:
        return
    try:
        if out.refused:
            with _db() as db:  # back to the refused claim, now showing its current label
                card = review.load_card(db, report.answer, reviewer)
            _move_card(cycle_id, reviewer, review.Position(report.answer, card.index_of(min(out.refused))))
        elif report.answer == cur.get("answer"):
            if report.waiting:  # only skipped claims are left in the answer: the queue goes on
                with _db() as db:
                    _move_card(cycle_id, reviewer, review.resume(db, cycle_id, reviewer, after=report.answer))
            else:
                _set_cursor(
                    cycle_id, reviewer, review.Position(report.answer, report.index), cur.get("selected")
                )
        last = int(st.session_state.get(CARD_ACTIONS) or 0)
        for action in report.actions:
            if action.seq > last:
                st.session_state[CARD_ACTIONS] = action.seq
                now = st.session_state.get(CURSOR) or {}
                _card_action(cycle_id, reviewer, now.get("answer") or report.answer, action.do)
    except StorageError as exc:
        st.session_state[CARD_FAILURE] = failures.storage_sentence(exc)


def _card_data(
    mode: str,
    cycle: review.CycleRef,
    reviewer: str,
    card: review.Card | None,
    index: int | None,
    definitions: dict[str, str],
) -> dict[str, Any]:
    """What the card is sent: before the commit the answer, its claims with the reviewer's own
    labels and the chunks' ids; never anything of the judge. After it only the mode: the page
    draws the reveal."""
    done = _card_done()
    data: dict[str, Any] = {
        "mode": mode,
        "answer": card.answer_id if card else None,
        "index": index,
        "moved": int(st.session_state.get(CARD_MOVED) or 0),
        "actions_done": int(st.session_state.get(CARD_ACTIONS) or 0),
        "failure": st.session_state.get(CARD_FAILURE),
    }
    if card is None or mode not in ("claim", "last look"):
        return data
    pks = {c.pk for c in card.claims}
    missing = review.missing_evidence(card) if cycle.require_evidence else []
    # The answer's part as one JSON text: Streamlit looks for a dataframe in every value at the
    # top of a component's data, a look that costs up to a millisecond for each list or dict.
    data["card"] = json.dumps(
        {
            "question": neutral(card.question),
            "answer_text": neutral(card.answer),
            "show_answer": len(card.claims) != 1 or card.answer.strip() != card.claims[0].text.strip(),
            "spans": review.claim_spans(neutral(card.answer), [neutral(c.text) for c in card.claims]),
            "facts": review.answer_facts(card),
            "claims": [
                {
                    "pk": c.pk,
                    "number": c.number,
                    "text": neutral(c.text),
                    "status": c.status,
                    "verdict": c.verdict,
                    "event": c.label.event_id if c.label else None,
                    "evidence": list(c.label.evidence) if c.label else [],
                    "note": (c.label.note or "") if c.label else "",
                }
                for c in card.claims
            ],
            # The id is sent back as evidence, never shown: the card shows `shown`.
            "chunks": [
                {"number": ch.number, "id": ch.chunk_id, "shown": visible(ch.chunk_id)} for ch in card.chunks
            ],
            "definitions": definitions,
            "colours": VERDICT_COLOURS,
            "require_evidence": cycle.require_evidence,
            "evidence_needed": review.evidence_needed(missing) if missing else None,
            "ack": {pk: seq for pk, (seq, _event) in done.items() if pk in pks},
            "refused": {
                pk: seq for pk, seq in (st.session_state.get(CARD_REFUSED) or {}).items() if pk in pks
            },
        }
    )
    data["route"] = {  # the verdict route (card_route.py): the card's fast way to write
        "url": card_route.path(),
        "cycle": cycle.id,
        "reviewer": reviewer,
        "token": card_route.card_token(cycle.id, reviewer, time.time()),
        "reply_header": card_route.HEADER,
    }
    return data


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
            untrusted.verdict_badge(verdict)
            untrusted.literal(definitions.get(verdict, ""))
    if not guidelines:
        st.caption("No guidelines written yet: a lead writes them on the Guidelines page.")
    for g in guidelines:
        st.divider()
        st.caption("For every cycle" if g.scope == PROJECT_SCOPE else "For this cycle")
        access.guidelines(g.markdown)  # a lead's markdown, rendered so that it loads nothing


@st.dialog("Your answers in this cycle", width="large")
def _answers_dialog(cycle_id: int, reviewer: str, current: str | None) -> None:
    with _db() as db:  # read only when the list is open: a key press does not pay for it
        statuses = review.answer_statuses(db, cycle_id, reviewer)
    for a in statuses:
        with st.container(horizontal=True, vertical_alignment="center", key=f"answer-row-{a.number}"):
            untrusted.literal(
                f"{'▶' if a.answer_id == current else ' '} {a.number}. {a.answer_id} · "
                f"{a.question} · {plural(a.claims, 'claim')} · {a.status}"
            )
            st.space("stretch")
            if st.button(
                f"Open answer {a.number}",
                key=f"jump-{a.number}",
                on_click=_on_jump,
                args=(cycle_id, a.answer_id),
            ):
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
    """A cycle as plain text (selectbox options and untrusted.literal never render markdown); the
    count is the progress bar's (claims with a verdict or unclear)."""
    p = choice.progress
    return f"{choice.cycle.name} — {p.claims_done}/{p.claims_total} labeled" + (
        "" if choice.has_work else " · done"
    )


def _header(
    choices: list[review.CycleChoice], chosen: review.CycleChoice, why: str, k: int, n: int
) -> tuple[bool, bool, bool]:
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
            st.selectbox(
                "Cycle",
                options=ids,
                index=ids.index(cyc.id),
                key=pick_key,
                format_func=lambda cid: _cycle_option(by_id[cid]),
                on_change=_on_pick,
                args=(pick_key,),
                label_visibility="collapsed",
                width=230,
            )
        with st.container(key="cycle-name", width="stretch"):
            # One line, cut with an ellipsis when long: the whole text is the tooltip too.
            line = untrusted.body(f"Cycle {cyc.name} · {why} · judge {cyc.judge_run}")
            untrusted.draw(f'<div class="cal-cycle" title="{line}">{line}</div>')
        # L, G, H and ? are the card's keys (`_on_card_report`), so that they act whatever the focus.
        answers = st.button("Answers (L)", key="answers-list", icon=":material/list:")
        guide = st.button("Guidelines (G)", key="guidelines", icon=":material/menu_book:")
        keys = st.button("Keys (H)", key="keys-help", icon=":material/keyboard:")
    # Bar and progress as one element (a key press redraws them).
    untrusted.draw(
        _bar(prog.fraction), untrusted.div("cal-progress", untrusted.body(_progress_text(prog, k, n)))
    )
    return answers, guide, keys


def _bar(fraction: float) -> str:
    """The progress bar (constant markup and a number)."""
    pct = max(0.0, min(1.0, fraction)) * 100
    return (
        f'<div class="cal-bar" role="progressbar" aria-valuenow="{pct:.0f}" aria-valuemin="0" '
        f'aria-valuemax="100"><div style="width: {pct:.1f}%"></div></div>'
    )


def _question_and_answer(card: review.Card, index: int | None, mode: str) -> None:
    blocks = [untrusted.div("cal-question", untrusted.body(card.question))]
    if mode == "claim" or len(card.claims) != 1 or card.answer.strip() != card.claims[0].text.strip():
        # (else the answer is its one claim, shown in the panel below)
        spans = review.claim_spans(card.answer, [c.text for c in card.claims])
        span = spans[index] if index is not None else None
        blocks.append(untrusted.highlighted_html(*review.split_highlight(card.answer, span)))
        blocks += [untrusted.div("cal-fact", untrusted.body(fact)) for fact in review.answer_facts(card)]
    untrusted.draw(*blocks)


def _on_full_chunks(answer_id: str | None) -> None:
    st.session_state[FULL_CHUNKS] = answer_id


def _chunk_text(text: str, full: bool) -> str:
    """A chunk's text as HTML: all of it when `full`, else its first `CHUNK_CHARS` characters
    and a line saying how many more there are."""
    shown, left_out = (text, 0) if full else uploads.cut(text, CHUNK_CHARS)
    text_html = untrusted.div("cal-chunk-text", untrusted.body(shown))
    if not left_out:
        return text_html
    return text_html + untrusted.div("cal-muted", f"… {left_out:,} more characters (Show the chunks in full)")


def _chunks(card: review.Card) -> None:
    if not card.chunks:
        untrusted.draw(untrusted.div("cal-chunks", untrusted.div("cal-muted", "This answer has no chunks.")))
        return
    full = st.session_state.get(FULL_CHUNKS) == card.answer_id
    untrusted.draw(
        untrusted.div(
            "cal-chunks",
            "".join(
                untrusted.div(
                    "cal-chunk",
                    untrusted.div(
                        "cal-chunk-head",
                        f"[{ch.number}] "
                        + untrusted.ident(ch.chunk_id)
                        + (" · " + untrusted.ident(ch.source) if ch.source else ""),
                    )
                    + _chunk_text(ch.text, full),
                )
                for ch in card.chunks
            ),
        )
    )
    if any(len(ch.text) > CHUNK_CHARS for ch in card.chunks):
        st.button(
            "Cut the long chunks again" if full else "Show the chunks in full",
            key="chunks-full",
            icon=":material/unfold_less:" if full else ":material/unfold_more:",
            help="Long chunks are cut so that every key stays quick; in full, every key on "
            "this answer sends them again.",
            on_click=_on_full_chunks,
            args=(None if full else card.answer_id,),
        )


def _reveal_row(cycle: review.CycleRef, card: review.Card, r: review.Revealed, selected: int | None) -> None:
    pk = r.claim.pk
    base = r.claim.label.event_id if r.claim.label else None
    with st.container(border=True, key=f"reveal-{pk}"):
        # The verdicts and (for a disagreement) the K / J choice come before the long texts,
        # so the decision is on screen whatever the claim's length.
        you = untrusted.gray_badge("You: unclear") if r.unclear else untrusted.badge(r.blind, prefix="You")
        judge = (
            untrusted.gray_badge("Judge: hidden")
            if r.unclear and not r.adjudicated
            else untrusted.badge(r.judge_verdict, prefix="Judge")
        )
        head = [untrusted.div("cal-reveal-head", f"<b>Claim {r.claim.number}</b> {you} {judge}")]
        if r.disagrees:
            here = pk == selected
            if r.reconciled == "keep":
                head.append(
                    untrusted.div(
                        "cal-muted", f"You kept your verdict: a judge error. Final label {r.final}."
                    )
                )
            elif r.reconciled == "judge_right":
                head.append(
                    untrusted.div(
                        "cal-muted",
                        f"The judge was right: your blind label stays in "
                        f"the history, the final label is {r.final} "
                        "(counted as a slip).",
                    )
                )
            if here:
                head.append(untrusted.div("cal-muted", "▶ K and J act on this claim"))
        untrusted.draw(*head)
        if r.disagrees:
            with st.container(horizontal=True):
                st.button(
                    "I keep my verdict",
                    key=f"keep-{pk}",
                    width="stretch",
                    type="primary" if r.reconciled == "keep" else "secondary",
                    help="The judge is wrong on this claim.",
                    on_click=_on_reconcile,
                    args=(cycle.id, card.answer_id, pk, "keep", base),
                )
                st.button(
                    "The judge is right",
                    key=f"judge-right-{pk}",
                    width="stretch",
                    type="primary" if r.reconciled == "judge_right" else "secondary",
                    help="My first call was a slip; take the judge's verdict.",
                    on_click=_on_reconcile,
                    args=(cycle.id, card.answer_id, pk, "judge_right", base),
                )
        text = [untrusted.div("cal-claim", untrusted.body(r.claim.text))]
        if r.unclear:
            if r.adjudicated:
                text.append(untrusted.div("cal-muted", "A lead decided " + untrusted.badge(r.adjudicated)))
            else:
                text.append(
                    untrusted.div(
                        "cal-muted",
                        "You marked this claim unclear: it waits for a lead's "
                        "decision, and the judge's verdict stays hidden until then.",
                    )
                )
        if r.judge_verdict is not None:
            text.append(
                untrusted.div(
                    "cal-rationale",
                    "Judge's rationale: " + (untrusted.body(r.rationale) if r.rationale else "(none given)"),
                )
            )
            if r.judge_evidence:
                text.append(
                    untrusted.div(
                        "cal-line",
                        "Judge's evidence: " + ", ".join(untrusted.ident(e) for e in r.judge_evidence),
                    )
                )
        if r.claim.label and r.claim.label.evidence:
            text.append(
                untrusted.div(
                    "cal-line",
                    "Your evidence: " + ", ".join(untrusted.ident(e) for e in r.claim.label.evidence),
                )
            )
        if r.claim.label and r.claim.label.note:
            text.append(untrusted.div("cal-line", "Your note: " + untrusted.body(r.claim.label.note)))
        if not r.disagrees and not r.unclear and r.judge_verdict is None:
            text.append(untrusted.div("cal-muted", "The judge gave no verdict on this claim."))
        untrusted.draw(*text)


def _reveal_panel(
    cycle: review.CycleRef, card: review.Card, rows: list[review.Revealed], view: review.RevealView
) -> None:
    selected = view.selected
    by_pk = {r.claim.pk: r for r in rows}
    why_not = review.why_not_next(view, {r.claim.pk: r.claim.number for r in rows})
    with st.container(key="reveal"):
        with st.container(horizontal=True, vertical_alignment="center", key="reveal-keys", wrap=False):
            lines = [
                untrusted.div(
                    "cal-summary",
                    f"The judge agrees with you on {view.agree} of "
                    f"{view.compared} claims you labeled."
                    + (
                        f" {plural(view.unclear, 'claim')} marked unclear: hidden until a lead decides."
                        if view.unclear
                        else ""
                    ),
                )
            ]
            if selected is not None:
                lines.append(
                    untrusted.div(
                        "cal-muted",
                        f"K / J act on claim {by_pk[selected].claim.number}"
                        + (" · ← → choose another disagreement" if view.following is not None else ""),
                    )
                )
            untrusted.draw(*lines)
            if view.previous is not None and view.following is not None:
                st.button(
                    "Previous",
                    key="sel-prev",
                    icon=":material/arrow_back:",
                    help="The previous disagreement",
                    on_click=_on_select,
                    args=(cycle.id, card.answer_id, view.previous),
                )
                st.button(
                    "Next",
                    key="sel-next",
                    icon=":material/arrow_forward:",
                    icon_position="right",
                    help="The next disagreement",
                    on_click=_on_select,
                    args=(cycle.id, card.answer_id, view.following),
                )
            st.button(
                "Next answer",
                key="next-answer",
                type="primary",
                icon=":material/arrow_forward:",
                icon_position="right",
                help=why_not,
                on_click=_on_next_answer,
                args=(cycle.id, card.answer_id, why_not),
            )
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
        st.success(
            "Your queue in this cycle is done: every claim is settled, every answer "
            "committed and every disagreement reconciled. Thank you!",
            icon=":material/task_alt:",
        )
        if prog.claims_unclear:
            awaits = "awaits" if prog.claims_unclear == 1 else "await"
            st.info(
                f"{plural(prog.claims_unclear, 'claim')} marked unclear {awaits} a lead's decision.",
                icon=":material/forum:",
            )
        nxt = review.next_cycle_with_work(choices, cycle.id)
        if nxt is not None:
            st.caption("Next cycle with work for you")
            untrusted.literal(_cycle_option(nxt))
            st.button(
                "Go to the next cycle",
                key="next-cycle",
                type="primary",
                icon=":material/arrow_forward:",
                on_click=_on_switch_cycle,
                args=(nxt.cycle.id,),
            )


# The page body's fragment, named so that the card's callback can run it (`_on_card_report`),
# and the card's own inside it: what a view with a card draws, as (answer, revealed); None
# when the queue is done.
REVIEW_FRAGMENT = "review"
Drawn = tuple[str, bool] | None
CardRead = tuple[review.Card | None, int | None, str]  # the card, the claim shown, the view


def _read_card(db: Database, cycle_id: int, reviewer: str) -> CardRead:
    """The card at the reviewer's cursor, the claim it shows and its view ("done": no card)."""
    pos = _cursor(db, cycle_id, reviewer)
    card = review.load_card(db, pos.answer_id, reviewer) if pos else None
    index = review.shown_claim(card, pos.claim_index) if card is not None and pos else None
    return card, index, review.card_view(card, index) if card is not None else "done"


def _drawn(card: review.Card | None, mode: str) -> Drawn:
    return None if card is None else (card.answer_id, mode == "reveal")


# The card the page's run has just read, handed to the card's fragment within the same run
# (one thread). As an argument it would be deep-copied: Streamlit keeps a fragment's arguments
# for its reruns, and copying the card with its chunks cost more than drawing it.
_HANDED = threading.local()


def _hand_over(read: CardRead) -> None:
    _HANDED.read = read


@turns.fragment
def card_fragment(cycle: review.CycleRef, drawn: Drawn, definitions: dict[str, str]) -> None:
    """The card, a fragment inside the page's: a report reruns only this, so a verdict costs its
    write and the card's data, not the header, the chunks and the guidelines. Should the card
    read here not be the view the page drew around it (`drawn`), the whole page is drawn again.

    The card comes from the page's run when it runs with it (`_hand_over`); a rerun of the card
    alone reads it anew."""
    reviewer = signin.current_reviewer()
    if not reviewer:
        st.rerun()
    read: CardRead | None = getattr(_HANDED, "read", None)
    _HANDED.read = None
    if read is not None:
        card, index, mode = read
    else:
        with _db() as db:
            card, index, mode = _read_card(db, cycle.id, reviewer)
        if _drawn(card, mode) != drawn:
            st.rerun()
        if card is not None and mode != "reveal":  # (the reveal's selection is the page's)
            _set_cursor(cycle.id, reviewer, review.Position(card.answer_id, index))
    data = _card_data(mode, cycle, reviewer, card, index, definitions)
    review_card.mount(key=CARD_KEY, data=data, on_report_change=_on_card_report)


@turns.fragment(key=REVIEW_FRAGMENT)
def review_fragment() -> None:
    reviewer = signin.current_reviewer()
    if not reviewer:
        st.rerun()  # signed out: redraw the whole page (the sign-in)
    with _db() as db:
        choices = review.cycle_choices(db, reviewer)
        if not choices:
            st.info(
                "No open cycle has answers for you. A lead creates one on the Cycles page.",
                icon=":material/inbox:",
            )
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
        answers = review.queue(db, cycle.id, reviewer)
        card, index, mode = _read_card(db, cycle.id, reviewer)
        # The judge's data is read here and nowhere else, only once the answer is committed.
        rows = (
            review.reveal(db, cycle_id=cycle.id, answer_id=card.answer_id, reviewer=reviewer)
            if card is not None and mode == "reveal"
            else None
        )
        definitions = review.judge_definitions(db, cycle.judge_run_id)
        guidelines = review.guidelines_for(db, cycle.id)
    wanted = (st.session_state.get(CURSOR) or {}).get("selected")
    view = None if rows is None else review.reveal_view(rows, wanted)
    if card is not None:  # the cursor always names the card drawn below
        _set_cursor(
            cycle.id, reviewer, review.Position(card.answer_id, index), view.selected if view else None
        )

    k = answers.index(card.answer_id) + 1 if card is not None and card.answer_id in answers else 0
    open_answers, open_guide, open_keys = _header(choices, chosen, why, k, len(answers))
    asked = st.session_state.pop(DIALOG, None)
    if open_answers or asked == "answers":
        _answers_dialog(cycle.id, reviewer, card.answer_id if card else None)
    elif open_guide or asked == "guidelines":
        _guidelines_dialog(definitions, guidelines)
    elif open_keys or asked == "keys":
        _keys_dialog()
    if (msg := st.session_state.pop(TOAST, None)) is not None:
        st.toast(msg, icon=":material/check:")
    if (msg := st.session_state.pop(FLASH, None)) is not None:
        with st.container(border=True, key="flash"):
            st.error("Not recorded:", icon=":material/error:")
            untrusted.literal(msg)
    drawn = _drawn(card, mode)
    if card is None:
        _hand_over((card, index, mode))
        card_fragment(cycle, drawn, definitions)
        _done(cycle, choices, chosen.progress)
        return

    summary = review.guideline_summary(guidelines[-1].markdown) if guidelines else ""
    left, right = st.columns([5, 3], gap="medium")
    with left:
        # First in every view: a fragment's id is its place on the page, and a report sent
        # while the page is drawn again (keys pressed at once) must find the card's fragment.
        _hand_over((card, index, mode))
        card_fragment(cycle, drawn, definitions)
        if mode == "reveal":
            assert rows is not None and view is not None
            _question_and_answer(card, None, mode)
            _reveal_panel(cycle, card, rows, view)
        elif summary:
            # The lead's markdown, inert; after the prefix it is one line, so no block markup.
            with st.container(key="guideline-summary"):
                access.guidelines("Guidelines (G): " + summary)
    with right:
        _chunks(card)


# ---------------------------------------------------------------- page

signin.require_reviewer()
st.html(_CSS)
review_fragment()
