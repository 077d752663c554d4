"""Cycles: a lead creates a calibration cycle, follows its progress and closes it.

All logic lives in calibration.cycles; this page only gathers the form and shows
results. Names of cycles, runs, reviewers and answer ids are user text: they are shown
through st.dataframe, st.json, untrusted.literal or as selectbox options (plain text, unlike
radio options), never in markdown-capable labels or messages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, tzinfo
from zoneinfo import ZoneInfo

import streamlit as st

from calibration import commands, cycles, dashboard, fmt, planning, review, roster, sampling, split, store
from calibration.errors import CalibrationError, Option
from calibration.fmt import plural
from calibration.text import visible
from calibration_app import access, navigation, signin, untrusted, widgets

# Session state: what the last create / close / holdout change did, for the next run.
CREATED = "_cycles_create_outcome"
OUTCOME = "_cycles_close_outcome"
HELD = "_cycles_holdout_outcome"
PLANNED = "_cycles_plan_outcome"
ROSTERED = "_cycles_roster_outcome"

RESERVED = "Answers reserved for holdout cycles"
FORCE_LABEL = f"Force a size outside {cycles.MIN_SIZE}–{cycles.MAX_SIZE}"
INCLUDE_LABEL = "Include already-labeled answers"
HOLDOUT_LABEL = "Holdout cycle: sample only answers reserved for holdout cycles"
# The options this page's errors name, as its form controls (the CLI names its flags).
CONTROLS: Mapping[Option, str] = {
    Option.FORCE: f"the box '{FORCE_LABEL}'",
    Option.INCLUDE_LABELED: f"the box '{INCLUDE_LABEL}'",
    Option.HOLDOUT: f"the box '{HOLDOUT_LABEL}'",
    Option.MARK_HOLDOUT: f"{RESERVED}, at the bottom of this page",
    Option.FORCE_CLOSE: "the box 'Close anyway' under the cycle",
}
DATE_FORMAT = "D MMM YYYY, HH:mm"  # momentJS, for st.column_config.DatetimeColumn

st.title("Cycles")
lead = signin.require_reviewer()  # recorded as the creator; from the sign-in, never from a field
access.require_lead()
path = signin.db_path()


def _show(kind: str, head: str, lines: list[str], details: list[str] | None = None) -> None:
    """A constant headline in a coloured box, the user-derived details as literal text; the
    statistics behind them, when given, under a toggle."""
    {"error": st.error, "warning": st.warning, "success": st.success}[kind](head)
    for line in lines:
        untrusted.literal(line)
    if details:
        with st.expander("The statistics behind the plan"):
            for line in details:
                untrusted.literal(line)


def _problems(exc: CalibrationError) -> list[str]:
    return exc.lines(CONTROLS)


def _viewer_tz() -> tzinfo | None:
    """The browser's timezone when it told us; None: the server's local time."""
    try:
        name = st.context.timezone
        return ZoneInfo(name) if name else None
    except Exception:  # an unknown zone name: fall back to the server's
        return None


def _local(ts: str | None) -> datetime | None:
    """A stored UTC ISO timestamp as a datetime in the viewer's timezone."""
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts).astimezone(_viewer_tz())
    except ValueError:
        return None


def _local_text(ts: str | None) -> str:
    when = _local(ts)
    return "unknown" if when is None else f"{when:%d %b %Y, %H:%M}"


# ---------------------------------------------------------------- create


def _form_reviewers() -> list[str]:
    """The cycle form's reviewers: picked from the roster when it holds anyone, else typed."""
    picked = st.session_state.get("cycle_reviewer_pick")
    if picked is not None:
        return [str(n) for n in picked]
    return cycles.typed_reviewers(str(st.session_state.get("cycle_reviewers") or ""))


@access.lead_action
def _create() -> None:
    """The form's submit: create the cycle; on success clear the name and the seed."""
    state = st.session_state
    creator = signin.current_reviewer()
    if not creator:
        state[CREATED] = ("error", "The cycle was not created.", ["sign in first"])
        return
    seed_text = str(state.get("cycle_seed") or "").strip()
    try:
        seed = int(seed_text) if seed_text else None
    except ValueError:
        state[CREATED] = (
            "error",
            "The cycle was not created.",
            ["seed: must be a whole number, or blank to draw one"],
        )
        return
    try:
        with store.session(path) as db:
            made = cycles.create_cycle(
                db,
                name=state.get("cycle_name") or "",
                judge_run=state.get("cycle_run"),
                size=int(state["cycle_size"]),
                seed=seed,
                strategy=state["cycle_strategy"],
                reviewers=_form_reviewers(),
                overlap=float(state["cycle_overlap"]),
                failing_share=float(state["cycle_failing_share"]),
                goal=state["cycle_goal"],
                holdout=bool(state.get("cycle_holdout")),
                include_labeled=bool(state.get("cycle_include_labeled")),
                force=bool(state.get("cycle_force")),
                created_by=creator,
                require_evidence=bool(state.get("cycle_require_evidence")),
            )
    except CalibrationError as exc:
        state[CREATED] = ("error", "The cycle was not created.", _problems(exc))
        return
    drawn = " (drawn: enter it as the seed to draw this sample again)" if seed is None else ""
    summary = (
        f"{made.name}: {plural(made.size, 'answer')} of {made.judge_run}, "
        f"{made.strategy}, seed {made.seed}{drawn}"
    )
    if made.warnings:
        state[CREATED] = ("warning", "Cycle created, with warnings.", [summary, *made.notes, *made.warnings])
    else:
        state[CREATED] = ("success", "Cycle created.", [summary, *made.notes])
    # A fresh form for the next cycle: a kept name would clash, a kept seed would be
    # reused silently.
    state["cycle_name"] = ""
    state["cycle_seed"] = ""
    state["cycle_detail"] = made.name  # show the new cycle's details below


@access.lead_action
def _plan() -> None:
    """The form's second button: what a planned cycle with these choices would draw, drawing nothing."""
    state = st.session_state
    try:
        with store.session(path) as db:
            plan = cycles.plan_next(
                db,
                judge_run=state.get("cycle_run"),
                goal=state["cycle_goal"],
                size=int(state["cycle_size"]),
                holdout=bool(state.get("cycle_holdout")),
                include_labeled=bool(state.get("cycle_include_labeled")),
            )
    except CalibrationError as exc:
        state[PLANNED] = ("error", "No plan.", _problems(exc))
        return
    state[PLANNED] = (
        "success",
        "The plan of a planned cycle with these choices (nothing drawn yet):",
        plan.summary(),
        plan.lines(),
    )


with store.session(path) as db:
    runs = [r.name for r in cycles.sampleable_runs(db)]
    default = cycles.default_run(db)
    listed = roster.active_names(db)
if not runs:
    st.info(
        "No judge runs with verdicts yet: import judged answers first, on the Import page or "
        f"from the command line (`{commands.command('import FILE')}`)."
    )
    access.import_link()
    st.stop()

# The Dashboard's "plan the next cycle" link (`?plan=1&run=&goal=&size=`) prefills the form: the
# widgets take these as their first values (the link opens a fresh page, no widget state yet).
asked = st.query_params.to_dict() if st.query_params.get("plan") else {}
if asked.get("run") in runs:
    default_name = asked["run"]
else:
    default_name = default.name if default and default.name in runs else runs[-1]
linked_size = cycles.size_from_link(asked.get("size"))
asked_goal = asked.get("goal") if asked.get("goal") in planning.GOALS else planning.GOALS[0]
asked_strategy = "planned" if asked else sampling.STRATEGIES[0]

st.subheader("New cycle")
if asked:
    st.caption(
        "Prefilled from the Dashboard: a planned cycle for the goal the labels so far leave "
        "open; “Show the plan” says what it would draw."
    )
    if asked.get("size") and linked_size is None:
        st.caption(
            f"The link's size is not a whole number from 1 to {cycles.SIZE_LIMIT}; "
            f"the form starts at {cycles.DEFAULT_SIZE}."
        )
with st.form("new_cycle", enter_to_submit=False):
    left, right = st.columns(2)
    left.text_input(
        "Name", max_chars=cycles.NAME_LIMIT, key="cycle_name", placeholder="e.g. prompt v3, week 12"
    )
    right.selectbox(
        "Judge run",
        runs,
        key="cycle_run",
        index=runs.index(default_name),
        help="runs that gave verdicts; the default is the most recently imported run",
    )
    left.number_input(
        "Answers to sample",
        min_value=1,
        max_value=cycles.SIZE_LIMIT,
        value=linked_size or cycles.DEFAULT_SIZE,
        step=1,
        key="cycle_size",
        help=f"{cycles.MIN_SIZE}–{cycles.MAX_SIZE} unless forced",
    )
    right.text_input("Seed", key="cycle_seed", placeholder="blank: draw one and record it")
    left.selectbox(
        "Strategy",
        sampling.STRATEGIES,
        key="cycle_strategy",
        index=sampling.STRATEGIES.index(asked_strategy),
        help="random: uniform; stratified: proportional by category; failures-first: "
        "oversample answers the judge did not call SUPPORTED, rest at random; planned: "
        "more labels where earlier cycles found people disagreeing with the judge, for the goal",
    )
    right.number_input(
        "Overlap share",
        min_value=0.0,
        max_value=1.0,
        value=cycles.DEFAULT_OVERLAP,
        step=0.05,
        key="cycle_overlap",
        help="share of answers given to two reviewers",
    )
    if listed:
        left.multiselect(
            "Reviewers",
            listed,
            key="cycle_reviewer_pick",
            format_func=visible,
            placeholder="from the roster; none: open to every reviewer",
        )
    else:
        left.text_input(
            "Reviewers", key="cycle_reviewers", placeholder="comma-separated; blank: open to every reviewer"
        )
    right.number_input(
        "Failing share (failures-first)",
        min_value=0.0,
        max_value=1.0,
        value=sampling.DEFAULT_FAILING_SHARE,
        step=0.05,
        key="cycle_failing_share",
        help="the least share of the slots given to answers with a non-SUPPORTED "
        "verdict; more when they are a larger share of the pool",
    )
    left.selectbox(
        "Goal (planned)",
        planning.GOALS,
        key="cycle_goal",
        format_func=planning.GOAL_NAMES.__getitem__,
        index=planning.GOALS.index(asked_goal),
        help="what a planned cycle spends its labels on; 'Show the plan' says how before drawing",
    )
    st.checkbox(HOLDOUT_LABEL, key="cycle_holdout")
    st.checkbox(
        INCLUDE_LABEL,
        key="cycle_include_labeled",
        help="answers whose claims all have a final human label are left out by default",
    )
    st.checkbox(
        "Require evidence for SUPPORTED",
        key="cycle_require_evidence",
        help="reviewers name the chunks behind every SUPPORTED verdict before an answer's "
        "commit, so a golden set exported from the cycle has its expected sources",
    )
    st.checkbox(FORCE_LABEL, key="cycle_force")
    create_col, plan_col = st.columns(2)
    create_col.form_submit_button("Create cycle", type="primary", on_click=_create)
    plan_col.form_submit_button("Show the plan", on_click=_plan)

if created := st.session_state.pop(CREATED, None):
    # The form is tall: the toast keeps the outcome in view, the box below keeps its details.
    st.toast(created[1], icon=":material/check_circle:" if created[0] == "success" else ":material/error:")
    _show(*created)
if planned := st.session_state.pop(PLANNED, None):
    _show(*planned)


# ---------------------------------------------------------------- list and progress


@access.lead_action
def _close(cycle_name: str, force: bool) -> None:
    try:
        with store.session(path) as db:
            cycles.close_cycle(db, cycle_name, force=force)
    except CalibrationError as exc:
        st.session_state[OUTCOME] = ("error", "The cycle was not closed.", _problems(exc))
    else:
        st.session_state[OUTCOME] = ("success", "Cycle closed; its figures are frozen.", [cycle_name])


def _ci(bounds: tuple[float, float] | None, show: Callable[[float | None], str] = fmt.pct) -> str:
    lo, hi = bounds or (None, None)
    return fmt.ci(lo, hi, show)


def _frozen(cycle: cycles.Cycle) -> None:
    """The figures frozen at close, readable; the raw snapshot behind an expander."""
    st.caption(f"Figures frozen at close, {_local_text(cycle.closed_at)}")
    fig = cycles.frozen_figures(cycle.snapshot)
    if fig is None:
        st.info("This cycle was closed without a snapshot.")
        return
    a = fig.assessment
    if a is None:
        st.info(
            "No claim had a final human label when the cycle closed, so no agreement figures were frozen."
        )
    else:
        # The decision header as the Dashboard draws it, from the assessment frozen at close: the
        # figures Trend shows for this cycle.
        widgets.decision_header(dashboard.decision(a, cycle_scope=True), run=cycle.judge_run)
        with st.expander("How this is computed: the flag's rules, bounds and raw figures"):
            for reason in fig.flag_reasons:
                untrusted.literal(f"• {reason}")  # reasons may quote claim ids
            cols = st.columns(2)
            cols[0].metric(
                "Cohen's kappa", fmt.num(a.kappa.value), help="agreement beyond what chance alone would give"
            )
            cols[0].caption(a.kappa_note())
            cols[1].metric(
                "Raw agreement",
                fmt.pct(a.raw_agreement.value),
                help="judge vs human label on the labeled claims, unweighted: another basis than "
                "the header's estimate",
            )
            cols[1].caption(a.raw_agreement.interval())
        st.metric("Claims in the figures", f"{a.counts.labeled:,}")
        # An older snapshot kept no progress: then the sentence says nothing of it (never "None").
        progress_at_close = (
            ""
            if fig.labeled is None
            else (
                f" Labeled for this cycle at close: {fig.labeled} of {plural(fig.total or 0, 'claim')}"
                + (f" ({fig.reused} reused)" if fig.reused else "")
            )
        )
        st.caption(
            f"{plural(a.n_answers, 'answer')}; labels from outside the cycle count too.{progress_at_close}"
        )
        if fig.weighted_agreement is not None:
            st.caption(
                "Some answers were drawn more often than others. Weighted by 1/π per answer (another "
                f"basis, answer bootstrap): agreement {fmt.pct(fig.weighted_agreement)}, "
                + _ci(fig.weighted_ci)
            )
    if fig.plan is not None:
        st.caption(cycles.plan_sentence(fig.plan))  # numbers and constant words only
    with st.expander("Raw snapshot (JSON)"):
        st.json(cycle.snapshot, expanded=False)


@access.lead_action
def _reassign(cycle_name: str) -> None:
    """The reassign button's callback: move the open work, then say what moved."""
    state = st.session_state
    try:
        with store.session(path) as db:
            done = cycles.reassign(
                db,
                cycle_name,
                str(state.get("reassign_from") or ""),
                str(state.get("reassign_to") or ""),
                by=signin.current_reviewer(),
            )
    except CalibrationError as exc:
        state[OUTCOME] = ("error", "Nothing was reassigned.", _problems(exc))
        return
    lines = [
        f"{plural(len(done.moved), 'answer')} moved from {visible(done.from_reviewer)} to "
        f"{visible(done.to_reviewer)}",
        *done.warnings,
    ]
    state[OUTCOME] = ("warning" if done.warnings else "success", "Work reassigned.", lines)
    state["reassign_to"] = ""


def _reassign_form(cycle: cycles.Cycle) -> None:
    """Move a reviewer's open work in this cycle to another reviewer (recorded in the history)."""
    with st.expander("Reassign open work"):
        with st.form("reassign", enter_to_submit=False, border=False):
            left, right = st.columns(2)
            left.selectbox("From", list(cycle.reviewers), key="reassign_from", format_func=visible)
            right.text_input(
                "To",
                key="reassign_to",
                max_chars=80,
                placeholder="a reviewer's name (matched ignoring case and spacing)",
            )
            st.form_submit_button("Reassign", on_click=_reassign, args=(cycle.name,))
        with store.session(path) as db:
            history = store.cycles.reassignments(db, cycle.id)
        if history:
            st.dataframe(
                [
                    {
                        "From": visible(h.from_reviewer),
                        "To": visible(h.to_reviewer),
                        "Answers": len(h.answers),
                        "By": visible(h.reassigned_by or ""),
                        "When": _local(h.created_at),
                    }
                    for h in history
                ],
                hide_index=True,
            )


# What "Claims finished" counts: a work count, not the figures' labeled claims (a claim one of two
# reviewers labeled is in the figures, not finished); the one rule the queue uses (cycles.claim_done).
LABELED_HELP = (
    "claims every assigned reviewer has finished (a verdict or an unclear mark, given in "
    "this cycle or reused from another cycle or an import); in a cycle open to all, "
    "claims labeled by a reviewer who worked in it. The Dashboard's figures count every claim "
    "with a final label, so they can count more"
)


def _claims_cell(p: cycles.CycleProgress) -> str:
    """`9 / 9 (7 reused)`: the table's progress cell."""
    return f"{p.labeled} / {p.total}" + (f" ({p.reused} reused)" if p.reused else "")


def _cycles_section() -> None:
    with store.session(path) as db:
        listed = [(c, cycles.progress(db, c.id)) for c in reversed(cycles.list_cycles(db))]

    st.subheader("Cycles")
    if outcome := st.session_state.pop(OUTCOME, None):
        _show(*outcome)  # the outcome of a close, set by its callback before this rerun
    if not listed:
        st.info("No cycles yet.")
        return

    # What a lead scans for (name, status, progress, who, when), in widths that sum to less than
    # the page beside the sidebar at 1280 px, so nothing scrolls sideways; the design (run,
    # strategy, seed, size, holdout, creator, close) is the chosen cycle's, in full below. (No pinned
    # column: Streamlit greys pinned text.)
    text = st.column_config.TextColumn
    st.dataframe(
        [
            {
                "Name": visible(c.name),
                "Status": c.status,
                "Claims finished": _claims_cell(p),
                "Done": p.fraction,
                "Labeled outside": p.labeled_elsewhere,
                "Reviewers": ", ".join(map(visible, c.reviewers)) or "open to all",
                "Created": _local(c.created_at),
            }
            for c, p in listed
        ],
        hide_index=True,
        column_config={
            "Name": text("Name", width=150),
            "Status": text("Status", width=65),
            "Claims finished": text("Claims finished", width=115, help=LABELED_HELP),
            "Done": st.column_config.ProgressColumn(
                "Done", format="percent", min_value=0.0, max_value=1.0, width=80
            ),
            "Labeled outside": st.column_config.NumberColumn(
                "Labeled outside",
                width=120,
                help="claims none of this cycle's reviewers has labeled that already have a final "
                "human label from someone else (another reviewer, an adjudication); the "
                "reviewers' own earlier labels count as done instead",
            ),
            "Reviewers": text("Reviewers", width=135),
            "Created": st.column_config.DatetimeColumn("Created", format=DATE_FORMAT, width=135),
        },
        key="cycles_table",
    )
    st.caption(
        "Choose a cycle below for its design: judge run, strategy, seed, size, holdout, who "
        "created it and when it closed."
    )

    by_name = {c.name: (c, p) for c, p in listed}
    names = list(by_name)
    asked_cycle = st.query_params.get("cycle")  # the Dashboard's "close the cycle" link
    chosen = st.selectbox(
        "Cycle",
        names,
        key="cycle_detail",
        format_func=visible,
        index=names.index(asked_cycle) if asked_cycle in names else 0,
    )
    cycle, prog = by_name[chosen]

    # The chosen cycle in full, as literal text: names and reviewers are user text, and
    # the table above may cut long ones.
    untrusted.literal(
        f"{visible(cycle.name)} · {visible(cycle.judge_run)} · {cycle.strategy}"
        + (f" (failing share {cycle.failing_share:g})" if cycle.failing_share is not None else "")
        + f" · seed {cycle.seed}"
        + (" · holdout" if cycle.holdout else "")
        + (" · evidence required for SUPPORTED" if cycle.require_evidence else "")
    )
    untrusted.literal(
        f"Created {_local_text(cycle.created_at)} by {visible(cycle.created_by or 'unknown')}"
        + (f" · closed {_local_text(cycle.closed_at)}" if cycle.closed_at else "")
    )
    untrusted.literal("Reviewers: " + (", ".join(map(visible, cycle.reviewers)) or "open to every reviewer"))
    cols = st.columns(3)
    cols[0].metric("Claims finished", f"{prog.labeled} / {prog.total}", help=LABELED_HELP)
    cols[1].metric("Answers", cycle.size)
    cols[2].metric("Status", cycle.status)
    if prog.reused:
        st.caption(
            f"Of these, {prog.reused} {cycles.REUSED_WORDS}: the reviewers' own labels, given "
            "before this cycle, count as done"
        )
    if prog.unclear:
        st.caption(f"{plural(prog.unclear, 'claim')} marked unclear, waiting for a lead's decision")
        navigation.page_link(
            "pages/dashboard.py",
            label="Settle them on the Dashboard",
            icon=":material/gavel:",
            query_params={"run": cycle.judge_run, "cycle": cycle.name},
        )
    if prog.labeled_elsewhere:
        st.caption(
            f"Already labeled outside this cycle: {plural(prog.labeled_elsewhere, 'claim')} "
            "(not counted above)"
        )

    st.caption(
        "Per reviewer (claims labeled / assigned; reused: labeled before this cycle, counted as "
        "done, as in the reviewer's own queue)"
    )
    if prog.reviewers:
        with store.session(path) as db:
            gaps = review.evidence_gaps(db, cycle.id)
        st.dataframe(
            [
                {
                    "Reviewer": visible(r.reviewer),
                    "Labeled": r.labeled,
                    "Claims": r.total,
                    "Done": r.fraction,
                    "Reused": r.reused,
                    "Unclear": r.unclear,
                    "Answers committed": f"{r.answers_done} / {r.answers_total}",
                    "SUPPORTED without evidence": gaps.get(r.reviewer, 0),
                }
                for r in prog.reviewers
            ],
            hide_index=True,
            # Widths (and short headers, said in full in their help) that fit the page
            # beside the sidebar at 1280 px.
            column_config={
                "Reviewer": st.column_config.TextColumn("Reviewer", width=150),
                "Labeled": st.column_config.NumberColumn("Labeled", width=75),
                "Claims": st.column_config.NumberColumn("Claims", width=65),
                "Done": st.column_config.ProgressColumn(
                    "Done", format="percent", min_value=0.0, max_value=1.0, width=90
                ),
                "Reused": st.column_config.NumberColumn("Reused", width=70),
                "Unclear": st.column_config.NumberColumn("Unclear", width=70),
                "Answers committed": st.column_config.TextColumn(
                    "Committed", width=100, help="answers committed / answers assigned"
                ),
                "SUPPORTED without evidence": st.column_config.NumberColumn(
                    "No evidence", width=105, help="SUPPORTED verdicts that name no supporting chunk"
                ),
            },
        )
    else:
        st.text("Nobody has labeled a claim for this cycle yet.")

    with st.expander("Answers in cycle order"):
        with store.session(path) as db:
            items = cycles.cycle_answers(db, cycle.id)
        st.dataframe(
            [
                {
                    "#": i.position + 1,
                    "Answer": visible(i.answer_id),
                    "Claims": i.claims,
                    "Chance of being drawn": fmt.pct(i.inclusion_prob),
                    "Reviewers": ", ".join(map(visible, i.reviewers)) or "anyone",
                }
                for i in items
            ],
            hide_index=True,
            column_config={  # widths that fit the expander beside the sidebar at 1280 px
                "#": st.column_config.NumberColumn("#", width=50),
                "Answer": st.column_config.TextColumn("Answer", width=200),
                "Claims": st.column_config.NumberColumn("Claims", width=70),
                "Chance of being drawn": st.column_config.TextColumn("Chance of being drawn", width=170),
                "Reviewers": st.column_config.TextColumn("Reviewers", width=240),
            },
        )

    if cycle.status == "open":
        left = prog.outstanding()
        if left:
            st.warning(f"Work remains: {left}.")  # numbers and constant words only
            label = (
                "Close anyway: the outstanding labels will be missing from the frozen figures, "
                "and labels given later do not change them."
            )
        else:
            label = "Closing freezes this cycle's figures; labels given later do not change them."
        # Keyed by cycle: a confirmation ticked for one cycle never closes another.
        confirm = st.checkbox(label, key=f"cycle_close_confirm_{cycle.id}")
        st.button(
            "Close cycle",
            type="primary",
            disabled=not confirm,
            on_click=_close,
            args=(cycle.name, bool(left)),
            key="cycle_close",
        )
        if cycle.reviewers:
            _reassign_form(cycle)
    else:
        _frozen(cycle)


_cycles_section()


# ---------------------------------------------------------------- holdout


@access.lead_action
def _holdout(flag: bool) -> None:
    """Reserve (or release) the pasted answer ids for holdout cycles; on success clear the box."""
    ids = [line.strip() for line in str(st.session_state.get("holdout_ids") or "").splitlines()]
    ids = [a for a in ids if a]
    if not ids:
        st.session_state[HELD] = ("error", "Nothing changed.", ["paste answer ids, one per line"])
        return
    try:
        with store.session(path) as db:
            changed = cycles.mark_holdout(db, ids, flag)
    except CalibrationError as exc:
        st.session_state[HELD] = ("error", "Nothing changed.", _problems(exc))
        return
    same = len(set(ids)) - changed
    done = "reserved for holdout cycles" if flag else "no longer reserved"
    already = f" ({plural(same, 'answer')} already {'was' if same == 1 else 'were'})" if same else ""
    st.session_state[HELD] = (
        "success",
        "Reservation updated.",
        [f"{plural(changed, 'answer')} {done}{already}"],
    )
    st.session_state["holdout_ids"] = ""


# Two notions, two names: answers reserved for holdout cycles (here, `holdout add`) and the
# Judge lab's sealed holdout (`calibration.split`), which takes the reserved ones once labeled.
st.subheader(RESERVED)
st.caption(
    "Reserved answers are never sampled by an ordinary cycle (one that tunes the judge); only "
    "a holdout cycle samples them, so they stay an independent check. An answer already "
    "sampled by an ordinary cycle cannot be reserved. Once labeled, a reserved answer is in the "
    f"Judge lab's {split.HOLDOUT_NAME}, which is sealed on the Judge lab page:"
)
with store.session(path) as db:
    held = cycles.holdout_answers(db)
    untrusted.literal(split.summary(db).sentence())
st.metric("Reserved answers", len(held))
with st.form("holdout_form", enter_to_submit=False):
    st.text_area("Answer ids, one per line", key="holdout_ids", height=120)
    mark, unmark = st.columns(2)
    mark.form_submit_button("Reserve for holdout cycles", on_click=_holdout, args=(True,))
    unmark.form_submit_button("Clear the reservation", on_click=_holdout, args=(False,))
if held_outcome := st.session_state.pop(HELD, None):
    _show(*held_outcome)
if held:
    with st.expander(f"The {plural(len(held), 'reserved answer')}"):
        st.dataframe(
            [{"Answer": a} for a in held],
            hide_index=True,
            column_config={"Answer": st.column_config.TextColumn("Answer", width="large")},
        )


# ---------------------------------------------------------------- the reviewer roster


@access.lead_action
def _roster_change(action: str) -> None:
    """The roster forms' submit: add, rename, deactivate or reactivate (recorded with the lead)."""
    state = st.session_state
    by = signin.current_reviewer()
    try:
        with store.session(path) as db:
            if action == "add":
                done = f"added {roster.add(db, str(state.get('roster_add') or ''), by=by)}"
                state["roster_add"] = ""
            elif action == "rename":
                new, moved = roster.rename(
                    db, str(state.get("roster_who") or ""), str(state.get("roster_new") or ""), by=by
                )
                done = f"renamed to {new}: {plural(moved, 'label')} moved along"
                state["roster_new"] = ""
            else:
                name = roster.set_active(
                    db, str(state.get("roster_who") or ""), action == "reactivate", by=by
                )
                done = f"{action}d {name}"
    except CalibrationError as exc:
        state[ROSTERED] = ("error", "The roster did not change.", _problems(exc))
        return
    state[ROSTERED] = ("success", "Roster updated.", [done])


st.subheader("Reviewers")
st.caption(
    "The roster: the reviewers cycles are assigned to and typed-name sign-in offers. Once it "
    "holds anyone, cycles take only its active reviewers. A rename carries the reviewer's "
    "labels along; a deactivated reviewer keeps their labels but cannot sign in."
)
with store.session(path) as db:
    everyone = roster.entries(db)
    changes = roster.history(db)
with st.form("roster_add_form", enter_to_submit=True, border=False):
    st.text_input(
        "Add a reviewer",
        key="roster_add",
        max_chars=80,
        width=360,
        placeholder="a name; near-duplicates of known names are refused",
    )
    st.form_submit_button("Add", on_click=_roster_change, args=("add",))
if everyone:
    with st.form("roster_edit_form", enter_to_submit=False, border=False):
        left, right = st.columns(2)
        left.selectbox("Reviewer", [e.name for e in everyone], key="roster_who", format_func=visible)
        right.text_input("New name", key="roster_new", max_chars=80)
        rename, off, on = st.columns(3)
        rename.form_submit_button("Rename", on_click=_roster_change, args=("rename",))
        off.form_submit_button("Deactivate", on_click=_roster_change, args=("deactivate",))
        on.form_submit_button("Reactivate", on_click=_roster_change, args=("reactivate",))
if rostered := st.session_state.pop(ROSTERED, None):
    _show(*rostered)
if everyone:
    st.dataframe(
        [{"Reviewer": visible(e.name), "Active": e.active, "Added": _local(e.added_at)} for e in everyone],
        hide_index=True,
        column_config={"Added": st.column_config.DatetimeColumn("Added", format=DATE_FORMAT)},
    )
if changes:
    with st.expander(f"Roster history ({plural(len(changes), 'change')})"):
        st.dataframe(
            [
                {
                    "When": _local(c.at),
                    "Change": c.kind,
                    "Reviewer": visible(c.name),
                    "New name": visible(c.new_name or ""),
                    "Labels moved": c.labels_moved,
                    "By": visible(c.by or ""),
                }
                for c in changes
            ],
            hide_index=True,
            column_config={"When": st.column_config.DatetimeColumn("When", format=DATE_FORMAT)},
        )
