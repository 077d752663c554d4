"""Dashboard: may the judge keep running unattended, or must its prompt be revised?

Every figure comes from calibration.dashboard; this page only picks the scope and draws.
Untrusted text (claims, chunks, rationales, notes, ids, run and cycle names) goes through
st.dataframe, untrusted.literal or selectbox options (plain text), never markdown. Sentences built
by the domain from numbers are shown through untrusted.literal too, since some name a judge run.
Charts carry verdict labels and numbers only: the trend's axis is the cycle's number, and
the table beside it names the cycles.

The blind rule holds for a lead who also reviews (`calibration.roles.open_work`): a scope that
holds an answer the lead may still label in an open cycle (a cycle scope, or the whole run,
which holds every answer the run judged) is refused in one sentence that names the cycle;
figures, claim lists and the export are drawn only for scopes free of the lead's open work.
Refusing the scope, rather than drawing it without those answers, keeps every figure on the
page the one the report computes for that scope.
"""

from __future__ import annotations

from datetime import UTC, datetime

import altair as alt
import pandas as pd
import streamlit as st

from calibration import closing, commands, dashboard, export, frameworks, roles, split, store
from calibration.errors import CalibrationError
from calibration.store import Database
from calibration.text import check_text, visible
from calibration.vocab import LABELS
from calibration_app import access, navigation, signin, untrusted, widgets

ALL_CLAIMS = "All labeled claims of the run"
NO_COMPARISON = "No comparison"
REASON_ROWS = 500  # claims listed under one reason; the disagreement table and export hold the rest
PENDING_PAGE = 10  # unresolved claims drawn with their adjudication controls at once
BLIND_NOTE = "This view is hidden from you until you finish your own labels in it."
CHOSEN_RUN_KEY = "_dash_chosen_run"  # session state only: the run chosen last, kept across pages
DONE_KEY = "dash_done"  # the sentence a callback leaves for the toast of the next run
CLOSE_ERROR_KEY = "dash_close_error"  # why closing labeling was refused, for the next run


@st.cache_resource(show_spinner="Computing agreement…", max_entries=32)
def _load(path: str, stamp: tuple, run: str, cycle: str | None, compare: str | None) -> dashboard.Dashboard:
    # cache_resource, not cache_data: the result is immutable and shared, so no pickle round
    # trip of 100k verdicts per rerun. `stamp` (the database fingerprint) invalidates it.
    del stamp
    with store.session(path) as db:
        return dashboard.build(db, run=run, cycle=cycle, compare_with=compare)


@st.cache_data(show_spinner=False, max_entries=16)
def _framework_counts(
    path: str, stamp: tuple, fmt: str, run: str, cycle: str | None, only_final: bool
) -> frameworks.FrameworkCounts:
    """What the framework export would hold: read once per database state, not at every rerun."""
    del stamp
    with store.session(path) as db:
        return export.framework_counts(db, fmt, judge_run=run, cycle=cycle, only_final=only_final)


def _hidden_scopes(
    db: Database, work: roles.OpenWork, run: str, scopes: list[str | None]
) -> dict[int, tuple[roles.BlindSpot, ...]]:
    """Position of each scope that holds the lead's open work -> the blind spots it holds."""
    if not work:
        return {}
    run_id = store.find_judge_run(db, run).id
    out = {}
    for i, name in enumerate(scopes):
        cycle_id = None if name is None else store.cycles.cycle_id(db, name)
        spots = roles.hidden_in_scope(db, work, run_id=run_id, cycle_id=cycle_id)
        if spots:
            out[i] = spots
    return out


@access.lead_action
def _adjudicate(path: str, claim_pk: int, lead: str) -> None:
    """The button's callback: the write happens here, before the rerun draws the page."""
    verdict = st.session_state.get(f"dash_adj_verdict_{claim_pk}")
    note = str(st.session_state.get(f"dash_adj_note_{claim_pk}") or "").strip() or None
    if verdict not in LABELS:
        st.session_state["dash_adj_error"] = claim_pk
        return
    try:
        if note is not None:
            check_text(note, "note")
        with store.session(path) as db:
            store.adjudicate(db, claim=claim_pk, adjudicator=lead, verdict=verdict, note=note)
    except CalibrationError as exc:
        st.session_state["dash_adj_error"] = claim_pk
        st.session_state["dash_adj_message"] = str(exc)
        return
    st.session_state.pop("dash_adj_error", None)
    st.session_state.pop("dash_adj_message", None)
    st.session_state["dash_adj_done"] = st.session_state.get("dash_adj_done", 0) + 1
    st.session_state[DONE_KEY] = "Adjudication recorded: the figures include it now."


@access.lead_action
def _close_labeling(path: str, run: str, lead: str) -> None:
    """The confirmation's callback: the closure and its final reading are written here."""
    try:
        with store.session(path) as db:
            closing.close_labeling(db, run, closed_by=lead)
    except CalibrationError as exc:
        st.session_state[CLOSE_ERROR_KEY] = str(exc)
        return
    st.session_state.pop(CLOSE_ERROR_KEY, None)
    st.session_state[DONE_KEY] = "Labeling closed: the final reading is taken, and no new cycle is drawn."


@st.dialog("Close labeling for this run?")
@access.lead_action  # a dialog reruns alone, without the page's own lead check
def _confirm_close(path: str, run: str, lead: str) -> None:
    # A dialog: what closing does is read, in view, before anything is written.
    untrusted.literal(f"Run {run}, closed by {lead}.")
    st.markdown(dashboard.CLOSE_LABELING_WORDS)
    left, right = st.columns(2)
    if left.button(
        "Close labeling",
        type="primary",
        key="dash_close_confirm",
        on_click=_close_labeling,
        args=(path, run, lead),
    ):
        st.rerun()
    if right.button("Cancel", key="dash_close_cancel"):
        st.rerun()


@access.lead_action
def _remember_run() -> None:
    """The run picked, kept for this session: a widget's own state ends when the page is left."""
    st.session_state[CHOSEN_RUN_KEY] = st.session_state.get("dash_run")


st.title("Dashboard", anchor="decision")
lead = access.require_lead()
path = signin.db_path()
with store.session(path) as db:
    runs = dashboard.run_names(db)
    default = dashboard.default_run(db) if runs else None
if not runs:
    st.info(
        "No judge runs yet: import judged answers first, on the Import page or from the command "
        f"line (`{commands.command('import FILE')}`)."
    )
    access.import_link()
    st.stop()

# A link from the Cycles page names the run and cycle to open on (`?run=&cycle=`); else the run
# this person chose last in this session; else the run the team reviewed last.
wanted_run = st.query_params.get("run") or st.session_state.get(CHOSEN_RUN_KEY)
default = wanted_run if wanted_run in runs else default
left, mid, right = st.columns(3)
run = left.selectbox(
    "Judge run",
    runs,
    index=runs.index(default) if default in runs else len(runs) - 1,
    key="dash_run",
    on_change=_remember_run,
)
work = access.open_work(lead)
with store.session(path) as db:
    scopes: list[str | None] = [None, *dashboard.cycle_names(db, run)]
    stamp = dashboard.fingerprint(db)
    hidden = _hidden_scopes(db, work, run, scopes)
others: list[str | None] = [None, *(r for r in runs if r != run)]
first_shown = next((i for i in range(len(scopes)) if i not in hidden), 0)
if st.query_params.get("cycle") in scopes:
    first_shown = scopes.index(st.query_params.get("cycle"))


def _scope_words(i: int) -> str:
    words = ALL_CLAIMS if scopes[i] is None else str(scopes[i])
    return f"{words} (hidden: your open work)" if i in hidden else words


# Options are positions, not names: a None option would read as "nothing chosen" and offer a
# clear button. Keyed by run: another run has other cycles, and a stale choice must not carry over.
scope_at = mid.selectbox(
    "Scope", range(len(scopes)), index=first_shown, key=f"dash_scope_{run}", format_func=_scope_words
)
compare_at = right.selectbox(
    "Compare with",
    range(len(others)),
    key=f"dash_compare_{run}",
    format_func=lambda i: NO_COMPARISON if others[i] is None else others[i],
)
scope_at = scope_at if scope_at is not None and scope_at < len(scopes) else 0
cycle = scopes[scope_at]
compare = others[compare_at] if compare_at is not None and compare_at < len(others) else None

if scope_at in hidden:
    # Checked on the server at every run: a stale or crafted choice is refused alike.
    # The alert is markdown, so it holds constant text; cycle names and ids go through literal.
    st.info(BLIND_NOTE, icon=":material/visibility_off:")
    untrusted.literal(roles.blind_refusal(hidden[scope_at]))
    todo = [visible(a) for spot in hidden[scope_at] for a in spot.answers]
    more = f" and {len(todo) - 12} more" if len(todo) > 12 else ""
    untrusted.literal("To finish: " + ", ".join(todo[:12]) + more)
    if len(hidden) < len(scopes):
        st.caption("Scopes without your open work stay available under Scope.")
    st.stop()

try:
    data = _load(str(path), stamp, run, cycle, compare)
except CalibrationError as exc:
    st.error("The dashboard could not be computed.")
    untrusted.literal(str(exc))
    st.stop()
report = data.report
assessed = data.assessment  # every figure and count below, as Cycles, the Judge lab and stats read them
tally = assessed.counts
nxt = data.next_cycle
plan_link = {"plan": "1", "run": run}
if nxt is not None and nxt.answers_left:  # what "plan the next cycle" prefills on the Cycles page
    plan_link |= {"goal": nxt.goal, "size": str(nxt.size)}

# ---------------------------------------------------------------- the decision first

# The section menu: constant words, links to the subheaders' anchors below.
SECTIONS = (
    ("Decision", "decision"),
    ("Settle unclear claims", "settle"),
    ("Figures", "figures"),
    ("Confusion and direction", "confusion"),
    ("Trend", "trend"),
    ("Breakdowns", "breakdowns"),
    ("Reviewers", "reviewers"),
    ("Compare runs", "compare"),
    ("Disagreements", "disagreements"),
    ("Export", "export"),
)
with st.sidebar:
    st.caption("On this page")
    st.markdown("\n".join(f"- [{words}](#{anchor})" for words, anchor in SECTIONS))

if done := st.session_state.pop(DONE_KEY, None):
    st.toast(done, icon=":material/check_circle:")  # in view wherever the lead clicked

dec = data.decision
if dec is not None:
    widgets.decision_header(dec, run=run)
    step_cols = st.columns(max(1, len(dec.steps)))  # no step at all: the sentence said why
    for col, step in zip(step_cols, dec.steps, strict=False):
        with col:
            if step.kind == "plan":
                navigation.page_link(
                    "pages/cycles.py",
                    label=step.label,
                    icon=":material/event_upcoming:",
                    query_params=plan_link,
                )
            elif step.kind == "judge_lab":
                navigation.page_link(
                    "pages/judge_lab.py",
                    label=step.label,
                    icon=":material/science:",
                    query_params={"run": run, "focus": "disagreements"},
                )
            elif step.kind == "import":
                access.import_link(step.label)
            elif step.kind == "settle":
                st.markdown(f"[:material/gavel: {step.label}](#settle)")
            elif step.kind == "close" and cycle is not None:
                navigation.page_link(
                    "pages/cycles.py", label=step.label, icon=":material/lock:", query_params={"cycle": cycle}
                )
# The last look: closing is one way, so the button (the run's scope, still open) only opens a
# confirmation.
if (
    cycle is None
    and assessed.closed is None
    and st.button("Close labeling for this run…", key="dash_close_labeling", icon=":material/lock:")
):
    _confirm_close(str(path), run, lead)
if refused := st.session_state.pop(CLOSE_ERROR_KEY, None):
    st.error("Labeling was not closed.")
    untrusted.literal(refused)
sealed_note = dashboard.sealed_text(assessed)
if sealed_note:
    untrusted.literal(sealed_note)
with store.session(path) as db:
    holdout = split.summary(db)
if holdout.made or holdout.answers:  # named and counted as on the Judge lab and Cycles pages
    untrusted.literal(holdout.sentence())
left_out = dashboard.left_out_text(data)
if left_out:
    untrusted.literal(left_out)

with st.expander("How this is computed: the flag's rules, bounds and every coefficient"):
    st.caption(
        f"The flag's rules ({dashboard.VERDICT_WORDS[assessed.status]}), each with its bound and claims"
    )
    for reason in data.reasons:
        untrusted.literal(f"• {reason.message}")
    for reason in data.reasons:
        if not reason.claim_keys:
            continue
        n = len(reason.claim_keys)
        st.caption(f"Claims behind: {reason.title} ({n:,})")
        if n > REASON_ROWS:
            st.caption(f"The first {REASON_ROWS:,} of {n:,}; export for all of them.")
        st.dataframe(
            dashboard.claim_rows(data, reason.claim_keys, REASON_ROWS),
            hide_index=True,
            column_order=widgets.CLAIM_COLUMN_ORDER,
            column_config=widgets.CLAIM_COLUMNS,
        )
        if note := dashboard.human_cell_note(data):
            st.caption(note)
    st.caption("Every figure, with what it is for")
    for fig in dashboard.headline(data):
        untrusted.literal(f"{fig.label}: {fig.value} — {fig.note}")
    untrusted.literal(data.sample_size_text)

# ---------------------------------------------------------------- the pipeline's grounding score

st.subheader("Pipeline grounding score", anchor="figures")
for line in dashboard.pipeline_text(data):
    untrusted.literal(line)
slices = dashboard.pipeline_rows(data)
if len(slices) > 1:
    st.dataframe(slices, hide_index=True)

# ---------------------------------------------------------------- unresolved claims

st.subheader("Needs a lead's decision", anchor="settle")
if st.session_state.get("dash_adj_done"):
    st.success("Adjudication recorded: the figures include it now.", icon=":material/gavel:")
    st.session_state.pop("dash_adj_done", None)
if not data.pending and not tally.unresolved:
    st.caption("No unresolved claim: every labeled claim has a unanimous or adjudicated verdict.")
elif data.pending:
    n_pending = len(report.unresolved_claims)
    if n_pending > len(data.pending):
        st.caption(
            f"The first {len(data.pending):,} of {n_pending:,} unresolved claims; the rest from the "
            f"command line: `{commands.command('adjudicate ANSWER_ID CLAIM_ID VERDICT --by NAME')}`."
        )
    # One table for every listed claim; the controls a page at a time (the page stays fast).
    # The claim list's widths, the reviewers' verdicts where the final one would be; each claim
    # is in full in its box below.
    st.dataframe(
        dashboard.pending_rows(data),
        hide_index=True,
        column_config={**widgets.CLAIM_COLUMNS, "reviewers": widgets.CLAIM_COLUMNS["human"]},
    )
    n_pages = -(-len(data.pending) // PENDING_PAGE)
    page = 0
    if n_pages > 1:
        page = (
            st.selectbox(
                "Decide on",
                range(n_pages),
                key=f"dash_adj_page_{run}",
                format_func=lambda i: (
                    f"claims {i * PENDING_PAGE + 1}–{min((i + 1) * PENDING_PAGE, len(data.pending))}"
                ),
            )
            or 0
        )
    for item in data.pending[page * PENDING_PAGE : (page + 1) * PENDING_PAGE]:
        with st.container(border=True):
            untrusted.literal(f"{item.answer_id} / {item.claim_id}")
            untrusted.literal(item.claim)
            st.dataframe(
                list(item.reviewers),
                hide_index=True,
                column_config={"note": st.column_config.TextColumn(width="large")},
            )
            untrusted.literal(f"Judge ({data.run}): {item.judge or '–'}")
            with st.expander("Chunks and judge rationale"):
                untrusted.literal(item.chunks or "–")
                st.caption("Judge rationale")
                untrusted.literal(item.rationale or "–")
            v_col, n_col, b_col = st.columns([2, 4, 1], vertical_alignment="bottom")
            v_col.selectbox(
                "Verdict", LABELS, index=None, placeholder="Choose…", key=f"dash_adj_verdict_{item.claim_pk}"
            )
            n_col.text_input("Note", key=f"dash_adj_note_{item.claim_pk}", max_chars=2000)
            b_col.button(
                "Adjudicate",
                key=f"dash_adj_button_{item.claim_pk}",
                on_click=_adjudicate,
                args=(str(path), item.claim_pk, lead),
            )
            if st.session_state.get("dash_adj_error") == item.claim_pk:
                message = st.session_state.get("dash_adj_message")
                st.error("Not recorded." if message else "Choose a verdict first.")
                if message:
                    untrusted.literal(message)
if sealed_unresolved := dashboard.sealed_text(assessed, unresolved=True):
    untrusted.literal(sealed_unresolved)

# ---------------------------------------------------------------- headline figures


# ---------------------------------------------------------------- confusion and direction

st.subheader("Confusion matrix", anchor="confusion")
st.caption(dashboard.confusion_caption(data))
cm_col, pc_col = st.columns([1, 1])
cells = pd.DataFrame(data.confusion)
peak = max(1, int(cells["count"].max()))
base = alt.Chart(cells).encode(
    x=alt.X("judge:N", sort=list(LABELS), title="judge", axis=alt.Axis(labelAngle=0, orient="top")),
    y=alt.Y("human:N", sort=list(LABELS), title="human"),
)
heat = base.mark_rect().encode(
    color=alt.Color("count:Q", scale=alt.Scale(scheme="blues", domain=[0, peak]), legend=None),
    tooltip=[alt.Tooltip("human:N"), alt.Tooltip("judge:N"), alt.Tooltip("count:Q")],
)
counts = base.mark_text(fontSize=16).encode(
    text="count:Q",
    color=alt.condition(alt.datum.count > peak / 2, alt.value("white"), alt.value("black")),
)
cm_col.altair_chart((heat + counts).properties(height=260), width="stretch")
with pc_col:
    st.caption("Per class (humans as reference)")
    st.dataframe(dashboard.per_class_rows(data), hide_index=True)
st.subheader("Direction")
untrusted.literal(data.direction_text)

# ---------------------------------------------------------------- trend

st.subheader("Trend over closed cycles", anchor="trend")
if data.trend:
    points = pd.DataFrame(
        [
            {"cycle #": t.number, "metric": m, "value": v, "low": lo, "high": hi}
            for t in data.trend
            for m, v, lo, hi in (
                ("agreement", t.agreement, t.agreement_low, t.agreement_high),
                ("kappa", t.kappa, t.kappa_low, t.kappa_high),
            )
        ]
    )
    enc = alt.Chart(points).encode(
        x=alt.X("cycle #:O", title="closed cycle", axis=alt.Axis(labelAngle=0)),
        xOffset=alt.XOffset("metric:N"),
        color=alt.Color("metric:N", title=None),
    )
    bars = enc.mark_rule(strokeWidth=2).encode(y=alt.Y("low:Q", title="value with 95% interval"), y2="high:Q")
    dots = enc.mark_point(filled=True, size=70).encode(
        y="value:Q",
        tooltip=[
            "cycle #:O",
            "metric:N",
            alt.Tooltip("value:Q", format=".3f"),
            alt.Tooltip("low:Q", format=".3f"),
            alt.Tooltip("high:Q", format=".3f"),
        ],
    )
    st.altair_chart((bars + dots).properties(height=260), width="stretch")
    st.dataframe(dashboard.trend_rows(data), hide_index=True)
    st.caption(dashboard.TREND_BASIS)
else:
    st.caption("No closed cycle of this run yet: figures are frozen when a cycle closes.")

# ---------------------------------------------------------------- breakdowns

st.subheader("By category", anchor="breakdowns")
st.caption(dashboard.BREAKDOWN_BASIS)
if len(data.categories) == 1:
    st.caption(dashboard.ONE_CATEGORY)
st.dataframe(dashboard.category_rows(data), hide_index=True)

# ---- answer checks (seed 003): one section, computed in calibration.dashboard.check_slices
st.subheader("By answer check")
st.caption(
    "Answers written in another script than their question, or holding CJK characters the "
    "question lacks, flagged at import; grounding is the share of SUPPORTED claims. "
    + dashboard.BREAKDOWN_BASIS
)
with store.session(path) as db:
    check_rows = dashboard.check_slice_rows(dashboard.answer_check_slices(db, run=run, cycle=cycle))
if check_rows:
    st.dataframe(check_rows, hide_index=True)
else:
    st.caption("No labeled claims yet.")
# ---- end of answer checks

st.subheader("Reviewers", anchor="reviewers")
st.caption(
    "Slips count only labels given on the review page (blind, then reconciled with the judge "
    "revealed); imported labels never saw the judge."
)
with store.session(path) as db:
    times = dashboard.reviewer_times(db, run, cycle)
reviewer_rows = dashboard.reviewer_table(data, times)
# The columns that fit 1280 px; the reconcile counts behind the slips in the expander.
st.dataframe(
    reviewer_rows,
    hide_index=True,
    column_order=(
        "reviewer",
        "labeled",
        "reviewed (blind, then reconciled)",
        "slips",
        "slip rate",
        "slip rate 95% CI",
        "median time per claim",
    ),
    column_config={
        "reviewer": st.column_config.TextColumn(width=160),
        "reviewed (blind, then reconciled)": st.column_config.Column(
            "reviewed", help="labels given blind, then reconciled with the judge revealed"
        ),
        "median time per claim": st.column_config.Column("median time"),
    },
)
with st.expander("The reconcile counts behind the slips"):
    st.dataframe(
        reviewer_rows,
        hide_index=True,
        column_order=("reviewer", "blind ≠ judge", "kept (judge error)", "adopted judge", "slips"),
    )
untrusted.literal(dashboard.human_human_text(data))

# ---------------------------------------------------------------- two runs

st.subheader("Compare two judge runs", anchor="compare")
cmp = data.comparison
if compare is None:
    st.caption(
        "Pick a run under “Compare with” to see whether it is really better or the difference is noise."
    )
elif cmp is None:
    st.caption("No claim was judged by both runs and has a final human label.")
else:
    res = cmp.result
    a_col, b_col = st.columns(2)
    for col, name, agr, kap in (
        (a_col, cmp.run_a, res.agreement_a, res.kappa_a),
        (b_col, cmp.run_b, res.agreement_b, res.kappa_b),
    ):
        with col:
            untrusted.literal(name)
            st.dataframe(dashboard.comparison_rows(agr, kap), hide_index=True)
    untrusted.literal(cmp.text)
    if cmp.unresolved:
        st.caption(f"{cmp.unresolved:,} unresolved {'claim' if cmp.unresolved == 1 else 'claims'} left out.")

# ---------------------------------------------------------------- disagreements

st.subheader("Disagreements", anchor="disagreements")
rows = dashboard.disagreement_rows(data)
if not tally.disagreeing:
    st.caption("No claim where the judge and the final human label differ.")
elif tally.listed:
    untrusted.literal(
        f"{tally.listed:,} disagreeing {'claim' if tally.listed == 1 else 'claims'} listed."
        + (f" {sealed_note}" if sealed_note else "")
    )
elif sealed_note:
    untrusted.literal(f"No disagreeing claim outside the sealed holdout: {sealed_note}")
if rows:
    if tally.listed > len(rows):
        st.caption(f"The first {len(rows):,} of {tally.listed:,} disagreeing claims; export for all of them.")
    st.caption(" ".join(filter(None, ["Select a row to read it in full.", dashboard.human_cell_note(data)])))
    # The columns a lead scans fit 1280 px; category, rationale, notes and chunks open on select.
    picked = st.dataframe(
        rows,
        hide_index=True,
        on_select="rerun",
        selection_mode="single-row",
        key="dash_disagreements",
        column_order=widgets.CLAIM_COLUMN_ORDER,
        column_config=widgets.CLAIM_COLUMNS,
    )
    chosen = picked.selection.rows if picked is not None else []
    if chosen:
        row = rows[chosen[0]]
        for label, key in (
            ("Claim", "claim"),
            ("Category", "category"),
            ("Judge rationale", "judge rationale"),
            ("Reviewer notes", "reviewer notes"),
            ("Chunks", "chunks"),
        ):
            st.caption(label)
            untrusted.literal(row[key] or "—")

# ---------------------------------------------------------------- export

st.subheader("Export", anchor="export")
e1, e2 = st.columns(2)
fmt = e1.selectbox(
    "Format",
    export.FORMATS,
    key="dash_export_format",
    format_func={
        "jsonl": "JSONL (lossless, restores with import)",
        "golden": "Golden set JSONL (RAG tests)",
        "csv": "CSV (Excel)",
        "deepeval": "Golden set for DeepEval (JSON goldens)",
        "ragas": "Golden set for Ragas (JSONL samples)",
        "langfuse": "Golden set for Langfuse (dataset items)",
    }.__getitem__,
)
only_final = e2.checkbox("Only claims with a final human label", key="dash_export_final")


if fmt in frameworks.FORMATS:
    held = _framework_counts(str(path), stamp, fmt, run, cycle, only_final)
    # Constant words and numbers: the items and negatives, then the items without evidence.
    first, *warnings = held.lines()
    st.caption(first.strip())
    for line in warnings:
        st.warning(line.removeprefix("warning: "), icon=":material/warning:")

if fmt == "golden":
    with store.session(path) as db:
        golden = export.golden_counts(db, judge_run=run, cycle=cycle, only_final=only_final)
    if golden.warning():
        st.warning(golden.warning(), icon=":material/warning:")
    # ---- reference answers of the golden set (issue 15): a lead rewrites one before export
    if st.toggle("Edit reference answers", key="dash_ref_edit"):
        with store.session(path) as db:
            items = export.golden_items(db, judge_run=run, cycle=cycle, only_final=only_final)
        if not items:
            st.caption("No golden items in this scope: no claim has a final human SUPPORTED label.")
        else:
            at = st.selectbox(
                "Item",
                range(len(items)),
                key="dash_ref_item",
                format_func=lambda i: f"{items[i]['id']}: {items[i]['question'][:90]}",
            )
            golden_item = items[at if at is not None else 0]
            st.caption("Question")
            untrusted.literal(golden_item["question"])
            st.caption("Key facts (claims humans found SUPPORTED)")
            untrusted.literal("\n".join(f"• {f}" for f in golden_item["key_facts"]))
            text = st.text_area(
                "Reference answer",
                value=golden_item["reference_answer"],
                key=f"dash_ref_text_{golden_item['id']}",
            )
            if st.button("Save reference answer", key="dash_ref_save"):
                try:
                    with store.session(path) as db:
                        export.set_reference_answer(db, golden_item["id"], text, edited_by=lead)
                    st.success("Saved: the golden export uses it from now on.", icon=":material/check:")
                except CalibrationError as exc:
                    untrusted.literal(str(exc))
            with store.session(path) as db:
                history = export.reference_history(db, golden_item["id"])
            if history:
                last = history[-1]
                untrusted.literal(
                    f"Edited by {last.edited_by} at {dashboard.readable_time(last.edited_at)}"
                    f" ({len(history)} edit{'s' if len(history) != 1 else ''})"
                )
    # ---- end of reference answers


def _export_file() -> bytes:
    with store.session(path) as db:
        return export.export_bytes(db, fmt=fmt, judge_run=run, cycle=cycle, only_final=only_final)


@access.lead_action
def _downloaded(name: str) -> None:
    st.session_state[DONE_KEY] = f"Export downloaded: {name}"


download_name = export.file_name(fmt, judge_run=run, cycle=cycle, day=datetime.now(UTC).strftime("%Y-%m-%d"))
st.download_button(
    "Download",
    data=_export_file,
    file_name=download_name,
    mime={"csv": "text/csv", "deepeval": "application/json"}.get(fmt, "application/jsonl"),
    icon=":material/download:",
    on_click=_downloaded,
    args=(download_name,),
)
st.caption(f"Large exports are quicker from the command line: `{commands.command('export --out FILE')}`.")
