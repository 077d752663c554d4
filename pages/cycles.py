"""Cycles: a lead creates a calibration cycle, follows its progress and closes it.

All logic lives in calibration.cycles; this page only gathers the form and shows
results. Names of cycles, runs and reviewers are user text: they are shown through
st.dataframe, st.json, ui.literal or as selectbox options (plain text, unlike radio
options), never in markdown-capable labels or messages.
"""

from __future__ import annotations

import streamlit as st

import ui
from calibration import cycles, sampling, store
from calibration.errors import CalibrationError

OUTCOME = "_cycles_close_outcome"  # session state: what the last close did, for the next run

st.title("Cycles")
lead = ui.require_reviewer()  # recorded as the creator; from the sign-in, never from a field
path = ui.db_path()


def _show(kind: str, head: str, lines: list[str]) -> None:
    """A constant headline in a coloured box, the user-derived details as literal text."""
    {"error": st.error, "warning": st.warning, "success": st.success}[kind](head)
    for line in lines:
        ui.literal(line)


def _problems(exc: CalibrationError) -> list[str]:
    return list(getattr(exc, "problems", None) or [str(exc)])


# ---------------------------------------------------------------- create

with store.session(path) as db:
    runs = [r.name for r in store.judge_runs(db)]
if not runs:
    st.info("No judge runs yet: import judged answers first (python -m calibration import FILE).")
    st.stop()

st.subheader("New cycle")
with st.form("new_cycle", enter_to_submit=False):
    left, right = st.columns(2)
    name = left.text_input("Name", max_chars=100, key="cycle_name",
                           placeholder="e.g. prompt v3, week 12")
    run = right.selectbox("Judge run", runs, index=len(runs) - 1, key="cycle_run")
    size = left.number_input("Answers to sample", min_value=1, max_value=1000,
                             value=cycles.DEFAULT_SIZE, step=1, key="cycle_size",
                             help=f"{cycles.MIN_SIZE}–{cycles.MAX_SIZE} unless forced")
    seed_text = right.text_input("Seed", key="cycle_seed",
                                 placeholder="blank: draw one and record it")
    strategy = left.selectbox(
        "Strategy", sampling.STRATEGIES, key="cycle_strategy",
        help="random: uniform; stratified: proportional by category; failures-first: "
             "oversample answers the judge did not call SUPPORTED, rest at random")
    overlap = right.number_input("Overlap share", min_value=0.0, max_value=1.0,
                                 value=cycles.DEFAULT_OVERLAP, step=0.05, key="cycle_overlap",
                                 help="share of answers given to two reviewers")
    reviewers_text = st.text_input("Reviewers", key="cycle_reviewers",
                                   placeholder="comma-separated; blank: open to every reviewer")
    holdout = st.checkbox("Holdout cycle: sample only holdout answers", key="cycle_holdout")
    include_labeled = st.checkbox("Include answers whose claims all have a final human label",
                                  key="cycle_include_labeled")
    force = st.checkbox(f"Force a size outside {cycles.MIN_SIZE}–{cycles.MAX_SIZE}",
                        key="cycle_force")
    submitted = st.form_submit_button("Create cycle", type="primary")

if submitted:
    try:
        seed = int(seed_text) if seed_text.strip() else None
    except ValueError:
        _show("error", "The cycle was not created.", ["seed: must be a whole number, or blank"])
    else:
        try:
            with store.session(path) as db:
                made = cycles.create_cycle(
                    db, name=name, judge_run=run, size=int(size), seed=seed, strategy=strategy,
                    reviewers=reviewers_text.split(","), overlap=float(overlap),
                    holdout=holdout, include_labeled=include_labeled, force=force,
                    created_by=lead)
        except CalibrationError as exc:
            _show("error", "The cycle was not created.", _problems(exc))
        else:
            st.session_state["cycle_detail"] = made.name  # show the new cycle's details below
            summary = (f"{made.name}: {made.size} answers of {made.judge_run}, "
                       f"{made.strategy}, seed {made.seed}")
            if made.warnings:
                _show("warning", "Cycle created, with warnings.", [summary, *made.warnings])
            else:
                _show("success", "Cycle created.", [summary])


# ---------------------------------------------------------------- list and progress


def _close(cycle_name: str) -> None:
    try:
        with store.session(path) as db:
            cycles.close_cycle(db, cycle_name)
    except CalibrationError as exc:
        st.session_state[OUTCOME] = ("error", "The cycle was not closed.", _problems(exc))
    else:
        st.session_state[OUTCOME] = ("success", "Cycle closed; its figures are frozen.",
                                     [cycle_name])


with store.session(path) as db:
    listed = [(c, cycles.progress(db, c.id)) for c in reversed(cycles.list_cycles(db))]

st.subheader("Cycles")
if outcome := st.session_state.pop(OUTCOME, None):
    _show(*outcome)  # the outcome of a close, set by its callback before this rerun
if not listed:
    st.info("No cycles yet.")
    st.stop()

st.dataframe(
    [{"Name": c.name, "Status": c.status, "Judge run": c.judge_run, "Strategy": c.strategy,
      "Seed": c.seed, "Answers": c.size,
      "Claims labeled": f"{p.labeled} / {p.total}",
      "Done": p.labeled / p.total if p.total else 0.0,
      "Reviewers": ", ".join(c.reviewers) or "open to all",
      "Holdout": c.holdout, "Created by": c.created_by or "", "Created at": c.created_at}
     for c, p in listed],
    hide_index=True,
    column_config={"Done": st.column_config.ProgressColumn(
        "Done", format="percent", min_value=0.0, max_value=1.0)},
    key="cycles_table",
)

by_name = {c.name: (c, p) for c, p in listed}
chosen = st.selectbox("Cycle", list(by_name), key="cycle_detail")
cycle, prog = by_name[chosen]

cols = st.columns(3)
cols[0].metric("Claims labeled", f"{prog.labeled} / {prog.total}",
               help="claims with a final human label from anyone: labels are reused across cycles")
cols[1].metric("Answers", cycle.size)
cols[2].metric("Status", cycle.status)

st.caption("Per reviewer (claims labeled / assigned)")
if prog.reviewers:
    st.dataframe([{"Reviewer": r.reviewer, "Labeled": r.labeled, "Claims": r.total,
                   "Done": r.labeled / r.total if r.total else 0.0} for r in prog.reviewers],
                 hide_index=True,
                 column_config={"Done": st.column_config.ProgressColumn(
                     "Done", format="percent", min_value=0.0, max_value=1.0)})
else:
    st.text("Nobody has labeled a claim of this cycle yet.")

with st.expander("Answers in cycle order"):
    with store.session(path) as db:
        items = cycles.cycle_answers(db, cycle.id)
    st.dataframe([{"#": i.position + 1, "Answer": i.answer_id, "Claims": i.claims,
                   "Inclusion probability": round(i.inclusion_prob, 4),
                   "Reviewers": ", ".join(i.reviewers) or "anyone"} for i in items],
                 hide_index=True)

if cycle.status == "open":
    confirm = st.checkbox("Closing freezes this cycle's figures; labels given later do not "
                          "change them.", key="cycle_close_confirm")
    st.button("Close cycle", type="primary", disabled=not confirm, on_click=_close,
              args=(cycle.name,), key="cycle_close")
elif cycle.snapshot:
    st.caption("Figures frozen at close")
    st.json({k: cycle.snapshot.get(k) for k in ("frozen_at", "progress", "counts")},
            expanded=False)
