"""Review: label claims blind, take a last look, then see the judge and reconcile.

The page, top to bottom: one header line (cycle picker, cycle and judge), the guidelines'
summary, then the review card: its progress line with the Answers / Guidelines / Keys
buttons, the claim on the left and the retrieved chunks on the right, scrolling in their own
area. At 1280×720 the claim, its buttons and the marked answer are on screen without
scrolling.

The card is a component (`review_card`, calibration_app/components/review_card.js) that holds
the answer in the browser and takes every key itself: 1 / 2 / 3, S skip, U unclear, ← → move,
E picks evidence by number, Enter commits after the last look; after the commit it shows the
judge beside each claim (disagreements first), K / J settle the selected disagreement, ← →
choose another, N goes to the next answer. Every key that writes is one request to the card's
route (calibration_app/card_route.py → calibration.card), the one way this app writes a
reviewer's label; this page writes none. It draws what is not the card (header, dialogs,
the end of the queue) and follows the card when the card needs it: its events
(`_on_card_event`: a dialog asked for, the chunks in full, a fresh token, a sign-out the route
found), each naming the answer the card shows, and the end of the queue (`_on_card_answer`).
The card moves from answer to answer with what its route replies, without a run of the page.

Session state holds only the cursor (cycle and answer), the chosen cycle and the dialog asked
for; the database is the memory. Untrusted text goes through untrusted.literal / .body, or
to the card, which puts it in as text only; labels and captions are built from
constants and numbers; the lead's guidelines are the one markdown shown.
"""

from __future__ import annotations

import hashlib
import time
from contextlib import AbstractContextManager
from typing import Any

import streamlit as st

from calibration import card as card_view
from calibration import review, store
from calibration.fmt import plural
from calibration.store import PROJECT_SCOPE, Database, Guidelines
from calibration.vocab import LABELS, VERDICT_COLOURS
from calibration_app import access, card_route, failures, review_card, signin, untrusted

KEYS_HELP = [
    ("1 / 2 / 3", "SUPPORTED / CONTRADICTED / UNSUPPORTED"),
    ("S", "skip: the claim comes back at the end of your queue"),
    ("U", "unclear, needs discussion: a lead decides; the judge stays hidden for it"),
    ("E", "pick evidence: 1-9 then add or remove that chunk, until E, Esc or Enter"),
    ("← →", "previous / next claim (after the reveal: previous / next disagreement)"),
    ("Enter", "commit the answer after the last look: the judge is revealed"),
    ("K / J", "after the reveal: I keep my verdict / the judge is right"),
    ("N", "after the reveal: the next answer"),
    ("L", "your answers in this cycle"),
    ("G", "guidelines and verdict definitions"),
    ("H or ?", "this list of keys"),
]
CURSOR = "review_cursor"
# The cycle shown: {"reviewer", "id", "picked" (chosen in this tab, not by `default_cycle`)}.
# Not a widget key (see the picker); keyed by the reviewer, so a new sign-in starts afresh.
CYCLE_KEY = "review_cycle"
FULL_CHUNKS = "review_full_chunks"  # the answer whose chunks are shown in full, not cut
CARD_KEY = "review_card"  # the card component's key: its answer and events (`_on_card_answer`)
# The card's moves (answers it went to on its own) this page has heard of: a run that began
# before the card's latest move sends a view the card no longer shows (review_card.js).
MOVE_KEY = "review_card_move"
DIALOG = "review_dialog"  # the dialog a key asked for: "answers", "guidelines" or "keys"

# The look of the page's own text blocks (drawn as HTML by untrusted.draw, classes "cal-"): the
# chunk area scrolls on its own. Constant CSS; no data goes into it.
_CSS = (
    "<style>\n"
    + "\n".join(
        [
            ".st-key-cycle-name { min-width: 0; }",
            ".cal-cycle { font-size: 0.9rem; opacity: 0.85; white-space: nowrap; overflow: hidden;"
            " text-overflow: ellipsis; }",
            ".st-key-guideline-summary p { font-size: 0.875rem; opacity: 0.85; margin: 0; overflow-wrap: "
            "anywhere; }",
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


def _cursor(cycle_id: int, reviewer: str, place: review.QueuePlace) -> review.Position | None:
    cur = st.session_state.get(CURSOR)
    if not cur or cur["cycle"] != cycle_id or cur["reviewer"] != reviewer or cur["answer"] is None:
        _set_cursor(cycle_id, reviewer, place.position)
        return place.position
    return review.Position(cur["answer"], cur["claim"])


# ---------------------------------------------------------------- callbacks (run before the rerun)


def _choose_cycle(cycle_id: int, *, picked: bool) -> None:
    st.session_state[CYCLE_KEY] = {"reviewer": signin.current_reviewer(), "id": cycle_id, "picked": picked}


def _on_pick(widget_key: str) -> None:
    _choose_cycle(st.session_state[widget_key], picked=True)


def _on_switch_cycle(cycle_id: int) -> None:
    _choose_cycle(cycle_id, picked=True)


def _on_jump(cycle_id: int, answer_id: str) -> None:
    reviewer = signin.current_reviewer()
    if reviewer:
        _set_cursor(cycle_id, reviewer, review.Position(answer_id, None))


# ---------------------------------------------------------------- the card's events


def _card_state(name: str) -> Any:
    """A value the card set (its state or its latest event), if this session's reviewer is
    the one the cursor belongs to."""
    state = st.session_state.get(CARD_KEY)
    cur = st.session_state.get(CURSOR) or {}
    if state is None or cur.get("reviewer") != signin.current_reviewer():
        return None
    return state.get(name)


def _follow(told: Any) -> None:
    """The answer the card shows and its move count, as a state or an event of the card named
    them (`answer`: None, the queue is done). Never a label: the card's route wrote it."""
    cur = st.session_state.get(CURSOR) or {}
    if not isinstance(told, dict) or cur.get("cycle") is None or not isinstance(told.get("move"), int):
        return
    st.session_state[MOVE_KEY] = told["move"]
    answer = told.get("answer")
    if answer != cur.get("answer"):
        _set_cursor(
            cur["cycle"], cur["reviewer"], review.Position(answer, None) if isinstance(answer, str) else None
        )


def _on_card_answer() -> None:
    """The card reached the end of the queue: the page draws it."""
    _follow(_card_state("answer"))


def _on_card_event() -> None:
    """A key or button of the card for the page: a dialog (L, G, H), the chunks in full or cut
    again, a fresh token (this run sends it); a name the route found signed out ends the
    session."""
    event = _card_state("event")
    _follow(event)
    what = event.get("do") if isinstance(event, dict) else None
    if what == "dialog" and event.get("which") in ("answers", "guidelines", "keys"):
        st.session_state[DIALOG] = event["which"]
    elif what == "chunks":
        cur = st.session_state.get(CURSOR) or {}
        st.session_state[FULL_CHUNKS] = cur.get("answer") if event.get("full") else None
    elif what == "signed out":
        signin.signed_out(str(event.get("why") or ""))
        st.rerun()  # the app, not only the fragment: the sign-in replaces the page


def _card_data(
    cycle: review.CycleRef, reviewer: str, view: dict[str, Any] | None, definitions: dict[str, str]
) -> dict[str, Any]:
    """What the card is sent: the answer's view (`calibration.card.answer_view`: the judge only
    once committed), the verdicts' definitions and colours, and its route with a token."""
    return {
        "mode": view["mode"] if view else "done",
        "move": st.session_state.get(MOVE_KEY, 0),
        # One JSON text: Streamlit looks for a dataframe in every value at the top of a
        # component's data, a look that costs up to a millisecond for each list or dict.
        "view": card_view.view_text(view) if view else None,
        "definitions": definitions,
        "colours": VERDICT_COLOURS,
        "route": {
            "url": card_route.path(),
            "cycle": cycle.id,
            "reviewer": reviewer,
            "token": card_route.card_token(cycle.id, reviewer, time.time()),
            "reply_header": card_route.HEADER,
        },
    }


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


def _cycle_option(choice: review.CycleChoice, *, shown: bool = False) -> str:
    """A cycle as plain text (selectbox options and untrusted.literal never render markdown); the
    count is the progress bar's (claims with a verdict or unclear). The cycle `shown` has its
    count on the card's progress line, which follows every key: the picker would show it late."""
    p = choice.progress
    count = "" if shown else f" — {p.claims_done}/{p.claims_total} labeled"
    return f"{choice.cycle.name}{count}" + ("" if choice.has_work else " · done")


def _header(choices: list[review.CycleChoice], chosen: review.CycleChoice, why: str) -> None:
    """The one header line. `why`: why this cycle is shown (`review.why_this_cycle`). The
    progress and the dialogs' buttons are the card's (its first line)."""
    by_id = {c.cycle.id: c for c in choices}
    cyc = chosen.cycle
    with st.container(horizontal=True, vertical_alignment="center", key="review-header"):
        if len(choices) > 1:
            # The browser keeps showing a selected option's old text when only the text
            # changes, so the widget's key names the options' texts and the choice: a change
            # draws a fresh picker, set from CYCLE_KEY.
            ids = list(by_id)
            texts = [_cycle_option(by_id[cid], shown=cid == cyc.id) for cid in ids]
            digest = hashlib.sha256("\n".join([str(cyc.id), *texts]).encode()).hexdigest()[:16]
            pick_key = f"review_cycle_pick_{digest}"
            st.selectbox(
                "Cycle",
                options=ids,
                index=ids.index(cyc.id),
                key=pick_key,
                format_func=lambda cid: _cycle_option(by_id[cid], shown=cid == cyc.id),
                on_change=_on_pick,
                args=(pick_key,),
                label_visibility="collapsed",
                width=300,
            )
        with st.container(key="cycle-name", width="stretch"):
            # One line, cut with an ellipsis when long: the whole text is the tooltip too.
            line = untrusted.body(f"Cycle {cyc.name} · {why} · judge {cyc.judge_run}")
            untrusted.draw(f'<div class="cal-cycle" title="{line}">{line}</div>')


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


def _view(db: Database, cycle_id: int, reviewer: str) -> tuple[review.Card, dict[str, Any]] | None:
    """The answer at the reviewer's cursor, and as the card shows it; None when the queue is done."""
    place = review.queue_place(db, cycle_id, reviewer)
    pos = _cursor(cycle_id, reviewer, place)
    if pos is None:
        return None
    card = review.load_card(db, pos.answer_id, reviewer)
    full = st.session_state.get(FULL_CHUNKS) == pos.answer_id
    view = card_view.answer_view(
        db, cycle_id, reviewer, card, index=pos.claim_index, full_chunks=full, place=place
    )
    return card, view


@failures.fragment
def review_fragment() -> None:
    """The page's body: a card event reruns it, not the app around it."""
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
        shown, view = _view(db, cycle.id, reviewer) or (None, None)
        definitions = review.judge_definitions(db, cycle.judge_run_id)
        guidelines = review.guidelines_for(db, cycle.id)
    if view is not None:  # the cursor always names the answer drawn below
        _set_cursor(cycle.id, reviewer, review.Position(view["answer"], None))

    _header(choices, chosen, why)
    asked = st.session_state.pop(DIALOG, None)
    if asked == "answers":
        _answers_dialog(cycle.id, reviewer, view["answer"] if view else None)
    elif asked == "guidelines":
        _guidelines_dialog(definitions, guidelines)
    elif asked == "keys":
        _keys_dialog()
    summary = review.guideline_summary(guidelines[-1].markdown) if guidelines else ""
    if summary and shown is not None:
        # The lead's markdown, inert; after the prefix it is one line, so no block markup.
        with st.container(key="guideline-summary"):
            access.guidelines("Guidelines (G): " + summary)
    review_card.mount(
        key=CARD_KEY,
        data=_card_data(cycle, reviewer, view, definitions),
        on_answer_change=_on_card_answer,
        on_event_change=_on_card_event,
    )
    if shown is None:
        _done(cycle, choices, chosen.progress)


# ---------------------------------------------------------------- page

signin.require_reviewer()
st.html(_CSS)
review_fragment()
