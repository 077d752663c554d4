"""Judge lab: a lead revises the judge prompt on the tuning claims and proves it on the
holdout claims nobody read while revising.

Top to bottom, as drawn: the split (sizes, seal, unseal), the prompt, the run form (endpoint,
scope, the run revised), the confirm step with the cost (a dialog: Run sends nothing), the run with
its progress (also in a toast, always in view) and Stop button, the verdict on the holdout
first, the comparison with the baseline and every other run, past runs and one stored call.

All logic lives in calibration.judge and calibration.split (the rules, the statistics, the
sentences and table rows); this page gathers the form and shows results. Prompts, replies,
answer ids, run and cycle names, URLs and error messages are user, server or model text: they
are shown through st.code, st.dataframe or untrusted.literal, never in markdown-capable labels or
messages. The API key is never typed here: the page names the environment variable holding it,
and only variables the operator allowed are accepted (calibration.judge.policy).

Blind spots. A lead who also reviews must not read the judge's verdicts on answers they may still
label (`calibration.roles.open_work`): the cycles holding such answers are not offered as a scope,
and a stored call is not shown when its answer is one of them or its prompt carried a few-shot
example (which states a judge's verdict) from one of them. Nor is a call on an answer of the sealed
holdout (`calibration.report.inspectable_calls`): its prompt states the holdout's claims. The
figures (counts, agreement, McNemar) are sums over many claims and name no claim's verdict, so they stay.

State. Streamlit drops the state of a widget that is not drawn in a run, so leaving the page
would reset the form. The form's values and the template edits are therefore copied to
session-state keys no widget uses (SAVED, EDITS) and put back before the widgets are drawn.
A run in progress is noted in RUNNING: clicking Stop reruns the script, which interrupts the
run after the calls in flight (each judged answer is already stored), and the next script run
finds RUNNING set and says where the run stopped.
"""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from calibration import dashboard, judge, report, split, store
from calibration.errors import (
    CalibrationError,
    EndpointRejected,
    EndpointUnreachable,
    InputError,
    Option,
    phrase,
)
from calibration.fmt import plural
from calibration.store import SplitRecord
from calibration_app import access, settings, signin, untrusted, widgets

SUMMARY = "_judge_lab_summary"  # the last run's summary, kept across reruns
SAVED = "_judge_lab_saved"  # widget key -> last value: the choices survive a page switch
EDITS = "_judge_lab_edits"  # template name -> edited text (only while it differs from the file)
VERSIONS = "_judge_lab_versions"  # template name -> the version name typed for it
EDITING = "_judge_lab_editing"  # the template whose text is in the text area
RUNNING = "_judge_lab_running"  # (run name, answers to judge) while a run is under way
LOADED = "_judge_lab_loaded_call"  # (run id, answer id) of the stored call shown, loaded on demand
CONFIRMED = "_judge_lab_confirmed"  # set by the confirm step's Send button: the next script run runs
TEXT = "lab_template_text"
PICK = "lab_template_pick"
VERSION = "lab_version"
BASELINE = "lab_cmp_baseline"
# The options this page's messages name, as its controls (the CLI names its flags); the lab
# sends no token limit and no JSON mode, which only the command line sets.
CONTROLS: Mapping[Option, str] = {
    Option.BASELINE: "the Baseline choice under the comparison",
    Option.REVISES: "the choice 'This prompt revises the run'",
    Option.PROMPT_FILE: "the Template box",
    Option.MAX_TOKENS: "the token limit (the command line's judge run --max-tokens; the lab sets none)",
    Option.JSON_MODE: "JSON mode (the command line's judge run --json-mode; the lab leaves it off)",
}
# The columns of a part in the table against every run: label -> width (px).
PART_COLUMNS = {"claims": 80, "new right / old right": 150, "p": 80, "agreement old → new": 150}
INSPECT_RUN = "lab_inspect_run"
INSPECT_ANSWER = "lab_inspect_answer"
INSPECT_FAILED = "lab_inspect_failed"

# The form: widget key -> default. The template pick and text are restored separately.
FORM_DEFAULTS: dict[str, object] = {
    "lab_base_url": "http://localhost:8000/v1",
    "lab_model": "",
    "lab_key_env": judge.DEFAULT_API_KEY_ENV,
    "lab_concurrency": 4,
    "lab_timeout": 120.0,
    "lab_scope": "labeled",
}
SCOPE_WORDS = {
    "labeled": "All human-labeled claims (tuning and holdout)",
    "tuning": "Tuning claims only (seen while revising)",
    "holdout": "Holdout claims only",
}

st.title("Judge lab")
reviewer = signin.require_reviewer()
access.require_lead()
path = signin.db_path()
work = access.open_work(reviewer)  # the lead's own open answers: never shown with a verdict here


def _scope_words(key: str) -> str:
    if key.startswith("run:"):
        return "The labeled claims judged by " + key.removeprefix("run:")
    if key.startswith("cycle:"):
        return "The labeled claims of cycle " + key.removeprefix("cycle:")
    return SCOPE_WORDS[key]


policy = judge.EndpointPolicy.from_sources(secrets=settings.calibration_secrets())


def _problems(exc: CalibrationError) -> list[str]:
    return exc.lines(CONTROLS)


def _shipped_text(name: str) -> str:
    return judge.load_template(name).text


def _remember_edit() -> None:
    """Keep the text area's text (and version name) for the template it belongs to."""
    name = st.session_state.get(EDITING)
    if name is None or TEXT not in st.session_state:
        return
    text = st.session_state[TEXT]
    edits = st.session_state.setdefault(EDITS, {})
    if text != _shipped_text(name):
        edits[name] = text
    else:
        edits.pop(name, None)
    if VERSION in st.session_state:
        st.session_state.setdefault(VERSIONS, {})[name] = st.session_state[VERSION]


def _show_template(name: str) -> None:
    st.session_state[TEXT] = st.session_state.get(EDITS, {}).get(name) or _shipped_text(name)
    st.session_state[VERSION] = st.session_state.get(VERSIONS, {}).get(name, name)
    st.session_state[EDITING] = name


@access.lead_action
def _switch_template() -> None:
    # Picking another template keeps the edits of the one left: picking it again brings them back.
    _remember_edit()
    _show_template(st.session_state[PICK])


@access.lead_action
def _revert_template() -> None:
    name = st.session_state[EDITING]
    st.session_state.get(EDITS, {}).pop(name, None)
    st.session_state[TEXT] = _shipped_text(name)


templates = judge.available_templates()
if not templates:
    st.error("No prompt templates found in calibration/prompts.")
    st.stop()

# Put back what a page switch dropped (see the module docstring).
saved: dict[str, object] = st.session_state.setdefault(SAVED, {})
for key, default in FORM_DEFAULTS.items():
    if key not in st.session_state:
        st.session_state[key] = saved.get(key, default)
if st.session_state.get(EDITING) not in templates:
    first = judge.DEFAULT_TEMPLATE if judge.DEFAULT_TEMPLATE in templates else templates[0]
    st.session_state.pop(TEXT, None)
    st.session_state[EDITING] = first
if PICK not in st.session_state:
    st.session_state[PICK] = st.session_state[EDITING]
if TEXT not in st.session_state:
    _show_template(st.session_state[EDITING])
elif VERSION not in st.session_state:
    st.session_state[VERSION] = st.session_state.get(VERSIONS, {}).get(
        st.session_state[EDITING], st.session_state[EDITING]
    )

with store.session(path) as db:
    # Read only: opening the page seals nothing (the Seal button or a confirmed run does).
    current_split = split.current(db)
    split_claims = split.claim_counts(db, current_split)
    holdout = split.summary(db)
    labeled = judge.plan_run(db, "", "", "labeled")
    overview = store.lab.lab_run_overview(db)
    all_cycles = store.lab.cycle_names(db)
cycles = [c for c in all_cycles if c not in work.cycles]

st.caption(
    "Revise the judge prompt on the tuning claims; the verdict on it comes from the holdout "
    "claims nobody read while revising."
)
with st.expander("How the lab works: what is sent, the API key, the cost"):
    st.markdown(
        "Revise the judge prompt while reading the **tuning** claims, then re-run it over the labeled "
        "claims: the verdict on the revised prompt comes from the **holdout** claims, which stay sealed "
        "(hidden from the dashboard's claim lists and from the few-shot examples) until a lead unseals "
        "them. A prompt that only fixes the claims you read shows up as better on tuning and not on the "
        "holdout.\n\n"
        "**What is sent.** For every answer in scope, the stored question, its retrieved chunks, the "
        "answer and its claims are filled into the template below and sent to the chat-completions "
        "endpoint you name: one request per answer, plus one corrective request when a reply cannot be "
        "used. Nothing is sent until you press Run and confirm the cost; a holdout claim's text is "
        "never put into another answer's prompt.\n\n"
        "**API key.** Never typed here: the server process reads it from an environment variable the "
        f"operator allowed (`{judge.DEFAULT_API_KEY_ENV}`, or one listed in `CALIBRATION_JUDGE_KEY_ENVS`). "
        "Leave the field empty for a local server without a key.\n\n"
        "**Cost.** A hosted endpoint bills every request. Run first shows the requests and the "
        "estimated prompt tokens and sends nothing until you confirm; the tokens used are shown "
        "after the run. A run stops by itself when the endpoint refuses "
        "the requests or the first answers' replies cannot be read; answers already judged are never "
        "requested again."
    )
if labeled.answers == 0:
    st.info(
        "No human-labeled claims yet: the lab re-judges exactly the claims reviewers have "
        "labeled. Label some claims first on the Review page (once judged answers are imported)."
    )
    access.import_link()
    st.stop()


@access.lead_action
def _seal() -> None:
    with store.session(path) as db:
        split.seal(db, created_by=reviewer)


@access.lead_action
def _assign_pending() -> None:
    with store.session(path) as db:
        split.ensure_split(db, created_by=reviewer)


def _seal_section() -> None:
    """No holdout yet: the one button that seals it, in words saying what it does."""
    with store.session(path) as db:
        words = split.seal_words(db)
    st.caption(
        "No holdout is sealed: every labeled claim is a tuning claim you may read. Seal one before "
        "revising the prompt, so that a revised prompt can be proved on claims nobody read. The "
        "first lab run seals one too, and says so before it sends anything."
    )
    st.button(words, key="lab_seal", on_click=_seal, icon=":material/lock:")


def _split_section(gen: SplitRecord) -> None:
    """The sealed (or used) holdout: sizes, unseal, a fresh holdout."""
    cols = st.columns(3)
    cols[0].metric(
        "Tuning claims (you may read them)",
        f"{split_claims['tuning']:,}",
        help=f"{plural(len(current_split.tuning), 'answer')}",
    )
    cols[1].metric(
        f"Claims in the {split.HOLDOUT_NAME}" if gen.sealed else "Holdout claims (used)",
        f"{holdout.claims if gen.sealed else split_claims['holdout']:,}",
        help=plural(holdout.answers if gen.sealed else len(current_split.holdout), "answer"),
    )
    cols[2].metric("Holdout", "sealed" if gen.sealed else "unsealed: used")
    st.caption(
        "The split is made per answer (all claims of an answer in one part), seeded and stratified "
        "by the judge's verdict, and stored. Answers reserved for holdout cycles (Cycles page) are "
        "in the holdout."
    )
    if not gen.sealed:
        st.warning(
            "The holdout was unsealed, so its claims may have been read: it can no longer prove "
            "that a revised prompt generalises. A fresh holdout needs new labels."
        )
        untrusted.literal(
            f"Unsealed by {gen.unsealed_by or 'an unrecorded person'} at "
            f"{dashboard.readable_time(gen.unsealed_at)}."
        )
        if st.button("Start a fresh holdout from answers labeled from now on", key="lab_new_holdout"):
            with store.session(path) as db:
                split.new_holdout(db, created_by=reviewer)
            st.rerun()
        return
    if holdout.pending:
        st.button(
            f"Assign the {plural(holdout.pending, 'answer')} labeled since the seal: about half join "
            "the holdout, the rest become tuning claims",
            key="lab_assign",
            on_click=_assign_pending,
        )
    with st.expander("Unseal the holdout"):
        st.caption(
            "Unsealing shows the holdout claims everywhere. It is recorded with your name and "
            "the time, and the holdout is marked used from then on."
        )
        sure = st.checkbox("I understand the holdout will no longer count as unseen", key="lab_unseal_sure")
        if st.button("Unseal the holdout", key="lab_unseal", disabled=not sure):
            with store.session(path) as db:
                split.unseal(db, who=reviewer, reason="unsealed on the judge lab page")
            st.rerun()


# ---------------------------------------------------------------- the split

st.subheader("Tuning and holdout claims")
untrusted.literal(holdout.sentence())
gen = current_split.generation
if gen is None:
    _seal_section()
else:
    _split_section(gen)

# ---------------------------------------------------------------- the Dashboard's link

# "Open the Judge lab on this run" names the run (`?run=`), and asks for its disagreements
# (`focus=disagreements`): the claims a lead reads while revising the prompt.
with store.session(path) as db:
    run_names = dashboard.run_names(db)
linked_run = st.query_params.get("run")
linked_run = linked_run if linked_run in run_names else None


@st.cache_resource(show_spinner="Reading the run's disagreements…", max_entries=8)
def _disagreements(db_file: str, stamp: tuple, run_name: str) -> dashboard.Dashboard:
    # The Dashboard's own build over the whole run: the same counts and the same listed claims.
    del stamp
    with store.session(db_file) as db:
        return dashboard.build(db, run=run_name, bootstrap=0)


if linked_run is not None and st.query_params.get("focus") == "disagreements":
    with store.session(path) as db:
        stamp = dashboard.fingerprint(db)
    focus = _disagreements(str(path), stamp, linked_run)
    st.subheader("Where the run disagrees with reviewers")
    untrusted.literal(f"{linked_run}, {focus.assessment.scope}: {focus.assessment.line()}")
    rows = [r for r in dashboard.disagreement_rows(focus) if r["answer"] not in work.answers]
    hidden = len(focus.disagreements) - len(rows)
    if hidden:
        st.caption(f"{plural(hidden, 'claim')} of answers you still have to label not shown.")
    if rows:
        # The Dashboard's columns, which fit 1280 px; the rationale and chunks are there on select.
        st.dataframe(
            rows,
            hide_index=True,
            key="lab_disagreements",
            height="auto" if len(rows) <= 6 else 260,  # no empty rows under a short list
            column_order=widgets.CLAIM_COLUMN_ORDER,
            column_config=widgets.CLAIM_COLUMNS,
        )

# ---------------------------------------------------------------- the prompt

st.subheader("Prompt")
st.selectbox(
    "Start from template",
    templates,
    key=PICK,
    on_change=_switch_template,
    help="Files in calibration/prompts. Your edits to each template, as of the last "
    "press of Run, are kept while you switch between them (in this browser session).",
)
# The text area is in the run form: pressing Run applies an edit and runs it in one go (outside
# the form, leaving the text area reran the page first and the press was lost). So the text
# compared here is the one as of the last Run (or switch); the row is drawn either way, so it never moves
# the form.
edited = st.session_state[TEXT] != _shipped_text(st.session_state[EDITING])
# The button's column holds its whole label at 1280 px with the sidebar open.
left, right = st.columns([3, 1], vertical_alignment="center")
left.caption(
    "Edited: this text differs from the shipped template. Your edits stay here when "
    "you pick another template and come back. Give the edited prompt its own "
    "version name below."
    if edited
    else "The shipped text of this template."
)
right.button("Revert to the shipped text", on_click=_revert_template, key="lab_revert", disabled=not edited)

with store.session(path) as db:
    labeled_runs = judge.revised_run_options(db, "")[0]
# Tuning and holdout scopes mean something once a holdout is sealed.
parts = SCOPE_WORDS if current_split.generation is not None else ["labeled"]
scope_keys = [*parts, *(f"run:{r}" for r in labeled_runs), *(f"cycle:{c}" for c in cycles)]
if st.session_state.get("lab_scope") not in scope_keys:
    st.session_state["lab_scope"] = "labeled"
with store.session(path) as db:
    revise_names, revise_default, revise_why = judge.revised_run_options(
        db, str(st.session_state.get("lab_model") or "")
    )
# The run the Dashboard's link names, else the default; no preselection on a tie: the lead must
# choose (index None shows the placeholder).
if linked_run in revise_names:
    revise_default = linked_run
revise_index = revise_names.index(revise_default) if revise_default in revise_names else None
# Said in the box itself, so the note goes as soon as a run is chosen (a form commits on submit only).
tie = revise_default is None and len(revise_names) > 1
with st.form("lab_run", enter_to_submit=False):
    st.text_area(
        "Template",
        key=TEXT,
        height=420,
        help="Placeholders {question}, {chunks}, {answer} and {claims} are filled in per "
        "answer; {examples}, if present, gets few-shot examples from tuning claims the "
        "judge got wrong (and a few it got right). Every other brace is left as written.",
    )
    st.subheader("Run")
    left, right = st.columns(2)
    base_url = left.text_input(
        "Base URL",
        key="lab_base_url",
        help="Any OpenAI-compatible server: vLLM, Ollama, llama.cpp or hosted. "
        "It must end in a path (no ? or #).",
    )
    model = right.text_input("Model", key="lab_model", max_chars=200)
    version = left.text_input(
        "Prompt version",
        key=VERSION,
        max_chars=100,
        help="Names this prompt text. An edited prompt needs a new name; "
        "the same model and version resumes an interrupted run.",
    )
    key_env = right.text_input(
        "API key environment variable",
        key="lab_key_env",
        help="Allowed: " + ", ".join(policy.key_envs) + ". Empty: no key.",
    )
    scope = left.selectbox("Claims to judge", scope_keys, key="lab_scope", format_func=_scope_words)
    revises = right.selectbox(
        "This prompt revises the run",
        revise_names,
        key="lab_revises",
        index=revise_index,
        placeholder=(
            "Several runs could be the one this prompt revises: choose one (never settled by a tie-break)"
        )
        if tie
        else "Choose the run this prompt revises",
        help="The default baseline, and where the few-shot examples' judge errors come from.",
    )
    concurrency = left.number_input(
        "Concurrency",
        min_value=1,
        max_value=64,
        step=1,
        key="lab_concurrency",
        help="Requests in flight at once.",
    )
    timeout = right.number_input(
        "Timeout per request (s)", min_value=1.0, max_value=600.0, step=10.0, key="lab_timeout"
    )
    submitted = st.form_submit_button("Run", type="primary", key="lab_run_submit")
seal_first = current_split.generation is None  # the first run seals the holdout
if seal_first:
    with store.session(path) as db:
        seal_words = split.seal_words(db)
    st.caption(
        "No holdout is sealed yet: the first run seals one before it sends anything (its confirm "
        "step says how many answers it sets aside)."
    )
if len(cycles) < len(all_cycles):
    st.caption(
        "Cycles where you still have answers to label are not offered as a scope until you "
        "commit them on the Review page."
    )
st.caption(
    "Every judged answer is stored at once: Stop, or leaving the page, ends the run after the "
    "calls in flight, and running it again continues where it stopped."
)

# What survives a page switch: the form and the template being edited.
saved.update({key: st.session_state[key] for key in FORM_DEFAULTS})
_remember_edit()

confirmed = st.session_state.pop(CONFIRMED, False)
running = st.session_state.pop(RUNNING, None)
if running is not None and not (submitted or confirmed):
    # The previous script run was interrupted mid-run (Stop, or another click).
    run_name, total = running
    with store.session(path) as db:
        found = next((r for r in store.lab.lab_runs(db) if r.name == run_name), None)
        done = store.lab.run_totals(db, found.id) if found is not None else None
    st.warning(
        "The run was stopped. Every answer judged before the stop is stored; press Run again "
        "with the same model and version to continue from there."
    )
    if done is not None:
        untrusted.literal(
            f"{run_name}: {done.answers_ok} answers judged, {done.answers_failed} failed so far."
        )


def _requested(settle: bool) -> tuple[judge.JudgeConfig, judge.PromptTemplate, judge.LabPlan]:
    """The run the form asks for (no request sent); raises on a bad field.

    Called when Run is pressed and again when the confirm step's Send is: the form keeps its
    submitted values between the two, so both plan the same run. Only the confirmed one
    (`settle`) writes the split: a first run seals the holdout then, as its confirm step says."""
    config = judge.JudgeConfig(
        base_url=base_url.strip(),
        model=model.strip(),
        api_key_env=key_env.strip(),
        concurrency=int(concurrency),
        timeout=float(timeout),
        policy=policy,
    )
    template = judge.template_from_text(version.strip(), st.session_state[TEXT])
    if revises is None and len(revise_names) > 1:
        raise InputError("choose the run this prompt revises")
    with store.session(path) as db:
        plan = judge.prepare_lab(
            db, config, template, scope=scope, revises=revises, created_by=reviewer, write_split=settle
        )
    return config, template, plan


@access.lead_action
def _confirm_send() -> None:
    st.session_state[CONFIRMED] = True


@st.dialog("Send the requests?")
@access.lead_action  # a dialog reruns alone, without the page's own lead check
def _confirm(plan: judge.LabPlan) -> None:
    # A dialog: the cost is read, in view, before anything is sent (Run itself sends nothing).
    untrusted.literal("Before the run: " + plan.cost_line())
    if plan.revises is not None:
        untrusted.literal(f"Revises {plan.revises.name} ({plan.revises_reason}).")
    if seal_first:
        untrusted.literal(f"Send seals a holdout first. {seal_words}.")
    st.caption("A hosted endpoint bills every request. Nothing has been sent yet.")
    left, right = st.columns(2)
    if left.button(
        f"Send {plural(len(plan.items), 'request')}",
        type="primary",
        key="lab_confirm",
        on_click=_confirm_send,
    ):
        st.rerun()
    if right.button("Cancel", key="lab_cancel"):
        st.rerun()


def _verdict_words(run: store.JudgeRun) -> str:
    """The holdout verdict against the default baseline, for the note shown when a run ends."""
    with store.session(path) as db:
        default, _why = judge.baseline_choice(db, run)
        comp = judge.compare_runs(db, run, default) if default is not None else None
    if comp is None:
        return "The run is done; nothing to compare it with yet."
    return "The run is done. " + comp.headline()


def _start(config: judge.JudgeConfig, template: judge.PromptTemplate, plan: judge.LabPlan) -> None:
    untrusted.literal("Before the run: " + plan.cost_line())
    if plan.revises is not None:
        untrusted.literal(f"Revises {plan.revises.name} ({plan.revises_reason}).")
    stop_slot = st.empty()  # the Stop button, only while the run is under way
    stop_slot.button("Stop", key="lab_stop", help="Ends the run after the calls in flight; Run continues it.")
    bar = st.progress(0.0, text="Starting…")
    # The bar is under the form, maybe below the fold: the toast (top right) is always in view.
    note = st.toast("Starting the run…", icon=":material/hourglass_top:", duration="long")
    st.session_state[RUNNING] = (f"{config.model}@{template.version}", len(plan.items))

    def _progress(p: judge.LabProgress) -> None:
        # Numbers only: the bar's and the toast's text is markdown.
        tokens = "tokens not reported" if p.tokens is None else f"{p.tokens:,} tokens"
        text = f"{p.done} / {plural(p.total, 'answer')} done · {p.failed} failed · {tokens}"
        bar.progress(p.fraction, text=text)
        note.toast(text, icon=":material/hourglass_top:", duration="long")

    try:
        summary = judge.run_lab(config, template, db_path=path, progress=_progress, plan=plan)
    finally:
        # Reached on an error too; not on Stop (the script is interrupted before this line).
        st.session_state.pop(RUNNING, None)
        stop_slot.empty()
    bar.empty()
    # Fixed words and figures only (no run name: user text), as the toast renders markdown.
    note.toast(
        _verdict_words(summary.run)
        if summary.totals.claims_judged
        else "The run is done, with no verdicts yet: see the failed calls below.",
        icon=":material/check_circle:",
        duration="long",
    )
    st.session_state[SUMMARY] = summary
    st.session_state.pop(BASELINE, None)  # show the default baseline of the run just made
    st.session_state[INSPECT_RUN] = summary.run.name
    st.session_state[INSPECT_FAILED] = False
    st.session_state.pop(LOADED, None)
    if summary.failures:
        st.session_state[INSPECT_ANSWER] = summary.failures[0][0]
    else:
        st.session_state.pop(INSPECT_ANSWER, None)


if submitted or confirmed:
    try:
        config, template, plan = _requested(settle=confirmed)
    except CalibrationError as exc:
        st.session_state.pop(SUMMARY, None)  # a failed attempt must not show the previous result
        st.error("The run cannot start:")
        for line in _problems(exc):
            untrusted.literal(line)
    else:
        if submitted and plan.items:
            _confirm(plan)  # the previous result stays until the requests are sent
        else:  # confirmed, or nothing left to request (nothing billed)
            st.session_state.pop(SUMMARY, None)
            try:
                _start(config, template, plan)
            except (EndpointUnreachable, EndpointRejected) as exc:
                if exc.answers_stored:
                    st.error(
                        "The run stopped: the endpoint cannot be used this way. The answers judged "
                        "before the stop are stored; running again continues from there."
                    )
                else:
                    st.error(
                        "Nothing was judged and no run was stored: the endpoint cannot be used. "
                        "Check the base URL, that the server is running, the model name and the key."
                    )
                for line in _problems(exc):
                    untrusted.literal(line)
            except CalibrationError as exc:
                st.error(
                    "The run did not go through. Answers judged before the stop, if any, are stored; "
                    "running again continues from there."
                )
                for line in _problems(exc):
                    untrusted.literal(line)
    with store.session(path) as db:
        overview = store.lab.lab_run_overview(db)

# ---------------------------------------------------------------- the result


def _show_comparison(run: store.JudgeRun) -> None:
    with store.session(path) as db:
        options = judge.baseline_options(db, run)
        default, why = judge.baseline_choice(db, run)
    if not options or default is None:
        st.info(
            "No other judge run shares a human-labeled claim with this run, so there is nothing to compare."
        )
        return
    st.subheader("Verdict on the holdout")
    names = [o.run.name for o in options]
    labels = {o.run.name: o.label for o in options}
    if st.session_state.get(BASELINE) not in names:
        st.session_state[BASELINE] = default.name
    pick = st.selectbox(
        "Baseline",
        names,
        format_func=labels.__getitem__,
        key=BASELINE,
        help="The default is the run this prompt revises. The comparison uses only "
        "the claims both runs judged.",
    )
    if pick == default.name:
        untrusted.literal(f"Default baseline: {phrase(why, CONTROLS)}.")
    base = next(o.run for o in options if o.run.name == pick)
    with store.session(path) as db:
        comp = judge.compare_runs(db, run, base)
    if comp is None:
        st.info(
            "None of the shared claims has a final human label yet (reviewers disagree and "
            "nobody adjudicated)."
        )
        return
    untrusted.literal(comp.headline())
    st.dataframe(judge.compare.part_rows(comp), hide_index=True)
    for line in judge.compare.part_readings(comp):
        untrusted.literal(line)
    st.caption(
        "Agreement: share of the claims both runs judged where the run gives the human verdict (raw, "
        "not the Dashboard's estimate for a whole run). Difference: new minus "
        "old, with a paired 95% interval (Newcombe). Paired test: exact McNemar on the claims "
        "where exactly one run is right. Tuning claims were seen while revising, so a gain there "
        "alone is no evidence."
    )
    untrusted.literal(
        f"Compared on {comp.scope_text}"
        + (f"; {plural(comp.unresolved, 'unresolved labeled claim')} left out." if comp.unresolved else ".")
    )
    st.subheader("Against every run sharing labeled claims")
    with store.session(path) as db:
        rows = judge.comparison_table(judge.compare_with_all(db, run))
    # One table per part, so that each fits 1280 px: the same rows, their part's columns.
    for part, title in (
        ("holdout", "On the holdout"),
        ("tuning (seen)", "On the tuning claims (seen while revising)"),
    ):
        st.caption(title)
        st.dataframe(
            rows,
            hide_index=True,
            column_order=("baseline", "shared labeled claims", *(f"{part}: {c}" for c in PART_COLUMNS)),
            column_config={
                "baseline": st.column_config.TextColumn(width=230),
                "shared labeled claims": st.column_config.NumberColumn("shared claims", width=100),
                **{
                    f"{part}: {c}": st.column_config.Column(c, width=width)
                    for c, width in PART_COLUMNS.items()
                },
            },
        )
    st.caption(
        "One row per run: the new run's counts right where that run was wrong / wrong where it "
        "was right, the exact McNemar p and the raw agreement of each on the claims both judged "
        "(not the Dashboard's estimate for a whole run), on the holdout and on the tuning claims."
    )


summary: judge.LabSummary | None = st.session_state.get(SUMMARY)
if summary is not None:
    st.subheader("Result")
    untrusted.literal(
        f"Run {summary.run.name} ({'resumed' if summary.resumed else 'new'}), scope {summary.scope}"
        + (f", {plural(summary.examples, 'few-shot example')}" if summary.examples else "")
    )
    if summary.totals.claims_judged == 0:
        st.warning(
            "This run has no verdicts yet, so there is nothing to compare. See the failed "
            "calls below; running again retries them."
        )
    else:
        _show_comparison(summary.run)
    st.subheader("The run")
    run_cols = st.columns(4)
    run_cols[0].metric("Answers ok", f"{summary.totals.answers_ok:,}")
    run_cols[1].metric("Answers failed", f"{summary.totals.answers_failed:,}")
    run_cols[2].metric("Claims judged", f"{summary.totals.claims_judged:,}")
    run_cols[3].metric(
        "Tokens used (run)",
        "not reported" if summary.totals.total_tokens is None else f"{summary.totals.total_tokens:,}",
    )
    untrusted.literal("After the run: " + summary.cost_line())
    if summary.failures:
        st.warning("Some answers failed and have no verdicts; running again retries only them.")
        st.dataframe(
            [
                {"answers": len(aids), "answer ids": ", ".join(aids), "error": err}
                for err, aids in judge.failure_groups(summary.failures)
            ],
            hide_index=True,
            # Fits 1280 px; each call's whole error is under "What the judge saw".
            column_config={
                "answers": st.column_config.NumberColumn(width=80),
                "answer ids": st.column_config.TextColumn(width=240),
                "error": st.column_config.TextColumn(width=420),
            },
        )

# ---------------------------------------------------------------- past runs and their calls

if overview:
    st.subheader("Lab runs")
    st.dataframe(
        overview,
        hide_index=True,
        column_order=("run", "answers ok", "answers failed", "claims judged", "tokens", "scope"),
        column_config={"run": st.column_config.TextColumn(width=230)},
    )
    with st.expander("Endpoint and times of each run"):
        st.dataframe(
            [
                {
                    "run": r["run"],
                    "endpoint": r["endpoint"],
                    "started": dashboard.readable_time(r["started"]),
                    "finished": dashboard.readable_time(r["finished"]),
                }
                for r in overview
            ],
            hide_index=True,
            column_config={
                "run": st.column_config.TextColumn(width=200),
                "endpoint": st.column_config.TextColumn(width=220),
            },
        )
    with st.expander("What the judge saw: one stored call", expanded=summary is not None):
        with store.session(path) as db:
            runs = store.lab.lab_runs(db)
        names = [r.name for r in reversed(runs)]
        if st.session_state.get(INSPECT_RUN) not in names:  # first visit, or back from another page
            just_made = summary.run.name if summary is not None else None
            st.session_state[INSPECT_RUN] = just_made if just_made in names else names[0]
        pick = st.selectbox("Lab run", names, key=INSPECT_RUN, help="Defaults to the run just made.")
        failed_only = st.toggle("Failed answers only", key=INSPECT_FAILED)
        run = next(r for r in runs if r.name == pick)
        with store.session(path) as db:
            # A prompt states its claims and a reply the judge's verdicts: no sealed holdout
            # answer and none of the lead's open answers.
            ids = report.inspectable_calls(db, run.id, failed_only=failed_only, hidden=work.answers)
            sizes = store.lab.call_sizes(db, run.id, ids)
            examples_blind = bool(work) and any(
                store.review.claim_answer(db, e.claim_pk) in work.answers
                for e in store.lab.run_examples(db, run.id)
            )
        if examples_blind:
            st.caption(
                "This run's prompts carry a few-shot example, with a judge's verdict, from an "
                "answer you still have to label: its calls are shown once you commit it."
            )
        elif not ids:
            st.caption("No calls to show.")
        else:
            if st.session_state.get(INSPECT_ANSWER) not in ids:
                st.session_state[INSPECT_ANSWER] = ids[0]
            aid = st.selectbox(
                "Answer",
                ids,
                key=INSPECT_ANSWER,
                format_func=lambda a: (
                    f"{a} · {sizes[a][0]} · prompt {sizes[a][1]:,} chars · reply {sizes[a][2]:,} chars"
                ),
            )
            # Loaded only on request: a page visit never ships every stored prompt and reply.
            if st.button("Show this call", key="lab_load_call"):
                st.session_state[LOADED] = (run.id, aid)
            if st.session_state.get(LOADED) == (run.id, aid):
                with store.session(path) as db:
                    call = store.lab.get_call(db, run.id, aid)
                if call is not None:
                    tokens = "not reported" if call["total_tokens"] is None else f"{call['total_tokens']:,}"
                    untrusted.literal(
                        f"status {call['status']} · {plural(call['attempts'], 'HTTP attempt')} · "
                        f"{call['latency_ms']:,.0f} ms · tokens {tokens}"
                    )
                    if call["error"]:
                        untrusted.literal(call["error"])
                    st.caption("Prompt as sent")
                    st.code(call["prompt"], language=None, wrap_lines=True)
                    for ex in call["exchanges"]:
                        if ex.get("sent"):
                            st.caption(f"Round {ex['round']}: corrective message sent")
                            st.code(ex["sent"], language=None, wrap_lines=True)
                        st.caption(f"Round {ex['round']}: reply")
                        reply = call["response"] if ex.get("response_in_call") else ex.get("response")
                        st.code(reply or "(no reply)", language=None, wrap_lines=True)
                        if ex.get("error"):
                            untrusted.literal(f"round {ex['round']}: {ex['error']}")
