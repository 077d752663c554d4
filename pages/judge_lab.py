"""Judge lab: a lead edits the judge prompt, re-runs it over the human-labeled claims and
sees at once whether agreement with the humans improved.

All logic lives in calibration.judge (HTTP, runs, the comparison through
calibration.agreement) and its storage in calibration.store.lab; this page gathers the form
and shows results. Prompts, replies,
answer ids, run and cycle names, URLs and error messages are user, server or model text:
they are shown through st.code, st.dataframe or ui.literal, never in markdown-capable
labels or messages. The API key is never typed here: the page only names the environment
variable holding it.

State. Streamlit drops the state of a widget that is not drawn in a run, so leaving the page
would reset the form. The form's values and the template edits are therefore copied to
session-state keys no widget uses (SAVED, EDITS) and put back before the widgets are drawn.
"""

from __future__ import annotations

import streamlit as st

import ui
from calibration import judge, store
from calibration.errors import CalibrationError, EndpointRejected, EndpointUnreachable
from calibration.fmt import p_value, plural
from calibration.store import lab as lab_store

SUMMARY = "_judge_lab_summary"  # the last run's summary, kept across reruns
SAVED = "_judge_lab_saved"  # widget key -> last value: the choices survive a page switch
EDITS = "_judge_lab_edits"  # template name -> edited text (only while it differs from the file)
VERSIONS = "_judge_lab_versions"  # template name -> the version name typed for it
EDITING = "_judge_lab_editing"  # the template whose text is in the text area
TEXT = "lab_template_text"
PICK = "lab_template_pick"
VERSION = "lab_version"
BASELINE = "lab_cmp_baseline"
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
}
COMPARE_SCOPES = {"all": "Every human-labeled claim both runs judged",
                  "cycle": "The labeled claims of one cycle"}

st.title("Judge lab")
ui.require_reviewer()
ui.require_lead()
path = ui.db_path()


def _problems(exc: CalibrationError) -> list[str]:
    return list(getattr(exc, "problems", None) or [str(exc)])


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


def _switch_template() -> None:
    # Picking another template keeps the edits of the one left: picking it again brings them back.
    _remember_edit()
    _show_template(st.session_state[PICK])


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
        st.session_state[EDITING], st.session_state[EDITING])

with store.session(path) as db:
    labeled = judge.plan_run(db, "", "", "labeled")
    overview = lab_store.lab_run_overview(db)

st.markdown(
    "Re-run the judge with a revised prompt over the claims reviewers have **already labeled**, "
    "and see at once whether its agreement with the humans improved, against an earlier run on "
    "the same claims (paired McNemar test).\n\n"
    "**What is sent.** For every answer with a human-labeled claim, the stored question, its "
    "retrieved chunks, the answer and its claims (as stored, not re-split) are filled into the "
    "template below and sent to the chat-completions endpoint you name: one request per answer, "
    "plus one corrective request when a reply cannot be used. Nothing is sent until you press Run.\n\n"
    "**API key.** Never typed here: the server process reads it from the environment variable "
    f"named in the form (default `{judge.DEFAULT_API_KEY_ENV}`). Leave it unset for a local "
    "server without a key.\n\n"
    "**Cost.** A hosted endpoint bills every request, and each carries the whole prompt with the "
    "chunks. The tokens the endpoint reports are recorded per run. Answers already judged are "
    "never requested again, so re-running after a stop pays only for the rest."
)
if labeled.answers == 0:
    st.info("No human-labeled claims yet: the lab re-judges exactly the claims reviewers have "
            "labeled. Label some claims first (Review page, or python -m calibration import-labels).")
    st.stop()

st.caption(f"In scope: {plural(labeled.answers, 'answer')} with human labels, "
           f"{plural(labeled.claims, 'claim')}, so {plural(labeled.answers, 'request')} "
           "(a few more if replies need correcting). Each answer's claims are judged as given.")

# ---------------------------------------------------------------- the prompt

st.subheader("Prompt")
st.selectbox("Start from template", templates, key=PICK, on_change=_switch_template,
             help="Files in calibration/prompts. Your edits to each template are kept while you "
                  "switch between them (in this browser session).")
st.text_area("Template", key=TEXT, height=420,
             help="Placeholders {question}, {chunks}, {answer} and {claims} are filled in per "
                  "answer; every other brace is left as written.")
if st.session_state[TEXT] != _shipped_text(st.session_state[EDITING]):
    left, right = st.columns([4, 1], vertical_alignment="center")
    left.caption("Edited: this text differs from the shipped template. Your edits stay here when "
                 "you pick another template and come back. Give the edited prompt its own "
                 "version name below.")
    right.button("Revert to the shipped text", on_click=_revert_template, key="lab_revert")

# ---------------------------------------------------------------- the endpoint

st.subheader("Run")
with st.form("lab_run", enter_to_submit=False):
    left, right = st.columns(2)
    base_url = left.text_input("Base URL", key="lab_base_url",
                               help="Any OpenAI-compatible server: vLLM, Ollama, llama.cpp or hosted.")
    model = right.text_input("Model", key="lab_model", max_chars=200)
    version = left.text_input("Prompt version", key=VERSION, max_chars=100,
                              help="Names this prompt text. An edited prompt needs a new name; "
                                   "the same model and version resumes an interrupted run.")
    key_env = right.text_input("API key environment variable", key="lab_key_env",
                               help="The server process reads the key from this variable; "
                                    "leave it unset for local servers without a key.")
    concurrency = left.number_input("Concurrency", min_value=1, max_value=64, step=1,
                                    key="lab_concurrency", help="Requests in flight at once.")
    timeout = right.number_input("Timeout per request (s)", min_value=1.0, max_value=600.0,
                                 step=10.0, key="lab_timeout")
    submitted = st.form_submit_button("Run over the labeled claims", type="primary",
                                      key="lab_run_submit")
st.caption("The run blocks this page while it works; leaving or clicking elsewhere stops it. "
           "Every judged answer is stored at once, so running it again continues where it stopped. "
           "An endpoint that cannot be reached stops the run at once.")

# What survives a page switch: the form and the template being edited.
saved.update({key: st.session_state[key] for key in FORM_DEFAULTS})
_remember_edit()

if submitted:
    st.session_state.pop(SUMMARY, None)  # a failed attempt must not show the previous result
    try:
        config = judge.JudgeConfig(base_url=base_url.strip(), model=model.strip(),
                                   api_key_env=key_env.strip(), concurrency=int(concurrency),
                                   timeout=float(timeout))
        template = judge.template_from_text(version.strip(), st.session_state[TEXT])
    except CalibrationError as exc:
        st.error("The run cannot start:")
        for line in _problems(exc):
            ui.literal(line)
    else:
        with store.session(path) as db:
            plan = judge.plan_run(db, config.model, template.version, "labeled")
        bar = st.progress(0.0, text="Starting…")
        if plan.already_ok:
            st.caption(f"Resuming: {plan.already_ok} of {plural(plan.answers, 'answer')} already "
                       "judged; they are not requested again.")

        def _progress(p: judge.LabProgress) -> None:
            # Numbers only: the bar's text is markdown.
            bar.progress(p.fraction, text=f"{p.done} / {plural(p.total, 'answer')} · ok {p.ok} · "
                                          f"failed {p.failed} · {plural(p.claims, 'claim')}")

        try:
            summary = judge.run_lab(config, template, scope="labeled", db_path=path,
                                    progress=_progress)
        except (EndpointUnreachable, EndpointRejected) as exc:
            bar.empty()
            if exc.answers_stored:
                st.error("The run stopped: the endpoint can no longer be used. The answers judged "
                         "before the stop are stored; running again continues from there.")
            else:
                st.error("Nothing was judged and no run was stored: the endpoint cannot be used. "
                         "Check the base URL, that the server is running, the model name and the key.")
            ui.literal(str(exc))
        except CalibrationError as exc:
            bar.empty()
            st.error("The run stopped. Answers judged before the stop, if any, are stored; running "
                     "again continues from there.")
            for line in _problems(exc):
                ui.literal(line)
        else:
            bar.empty()
            st.session_state[SUMMARY] = summary
            # Show the run just made below: its comparison from the default baseline, its calls.
            st.session_state.pop(BASELINE, None)
            st.session_state[INSPECT_RUN] = summary.run.name
            st.session_state[INSPECT_FAILED] = False
            if summary.failures:
                st.session_state[INSPECT_ANSWER] = summary.failures[0][0]
            else:
                st.session_state.pop(INSPECT_ANSWER, None)
        with store.session(path) as db:
            overview = lab_store.lab_run_overview(db)

# ---------------------------------------------------------------- the result


def _show_comparison(run: store.JudgeRun) -> None:
    with store.session(path) as db:
        cycles = lab_store.cycle_names(db)
    kind = "all"
    if cycles:
        kind = st.radio("Compare on", list(COMPARE_SCOPES), format_func=COMPARE_SCOPES.__getitem__,
                        horizontal=True, key="lab_cmp_scope")
    cycle = st.selectbox("Cycle", cycles, key="lab_cmp_cycle") if kind == "cycle" else None
    with store.session(path) as db:
        options = judge.baseline_options(db, run, cycle)
    if not options:
        st.info("No other judge run shares a human-labeled claim with this run"
                + (" in this cycle." if cycle is not None else ", so there is nothing to compare."))
        return
    names = [o.run.name for o in options]
    labels = {o.run.name: o.label for o in options}
    if st.session_state.get(BASELINE) not in names:
        st.session_state[BASELINE] = names[0]  # the run sharing the most labeled claims
    pick = st.selectbox("Baseline", names, format_func=labels.__getitem__, key=BASELINE,
                        help="Runs that judged some of the same human-labeled claims, most shared "
                             "first. The comparison uses only the claims both runs judged.")
    base = next(o.run for o in options if o.run.name == pick)
    with store.session(path) as db:
        comp = judge.compare_runs(db, run, base, cycle)
    if comp is None:
        st.info("None of the shared claims has a final human label yet (reviewers disagree and "
                "nobody adjudicated).")
        return
    c = comp.result
    ui.literal(f"Compared on {comp.scope_text}.")

    def _row(name: str, est: object, kap: object) -> dict[str, object]:
        return {"run": name, "agreement": getattr(est, "value", None),
                "agreement CI low": getattr(est, "ci_low", None),
                "agreement CI high": getattr(est, "ci_high", None),
                "kappa": getattr(kap, "value", None)}

    st.dataframe([_row(comp.baseline, c.agreement_a, c.kappa_a),
                  _row(comp.run, c.agreement_b, c.kappa_b)], hide_index=True,
                 column_config={k: st.column_config.NumberColumn(format="percent")
                                for k in ("agreement", "agreement CI low", "agreement CI high")})
    cols = st.columns(3)
    cols[0].metric("Claims compared", c.n_claims)
    cols[1].metric("Only the new run right", len(c.only_b_right))
    cols[2].metric("Only the baseline right", len(c.only_a_right))
    p = c.mcnemar.p_two_sided
    st.caption("Exact McNemar test on the claims where exactly one run agrees with the humans: "
               + ("p not defined (no such claims)." if p is None else f"{p_value(p)}."))
    if c.n_claims < 30:
        st.caption(f"Only {plural(c.n_claims, 'claim')}: too few for the test to tell a real "
                   "difference from chance.")
    if comp.unresolved:
        st.caption(f"{plural(comp.unresolved, 'labeled claim')} left out: reviewers disagree and "
                   "nobody adjudicated.")


summary: judge.LabSummary | None = st.session_state.get(SUMMARY)
if summary is not None:
    st.subheader("Result")
    ui.literal(f"Run {summary.run.name} ({'resumed' if summary.resumed else 'new'})")
    cols = st.columns(4)
    cols[0].metric("Answers ok", summary.totals.answers_ok)
    cols[1].metric("Answers failed", summary.totals.answers_failed)
    cols[2].metric("Claims judged", summary.totals.claims_judged)
    cols[3].metric("Tokens", "not reported" if summary.totals.total_tokens is None
                   else f"{summary.totals.total_tokens:,}")
    if summary.failures:
        st.warning("Some answers failed and have no verdicts; running again retries only them.")
        st.dataframe([{"answers": len(aids), "answer ids": ", ".join(aids), "error": err}
                      for err, aids in judge.failure_groups(summary.failures)], hide_index=True)
    if summary.totals.claims_judged == 0:
        st.warning("This run has no verdicts yet, so there is nothing to compare. See the failed "
                   "calls below; running again retries them.")
    else:
        st.subheader("Comparison with another run")
        _show_comparison(summary.run)

# ---------------------------------------------------------------- past runs and their calls

if overview:
    st.subheader("Lab runs")
    st.dataframe(overview, hide_index=True)
    with st.expander("What the judge saw: one stored call", expanded=summary is not None):
        with store.session(path) as db:
            runs = lab_store.lab_runs(db)
        names = [r.name for r in reversed(runs)]
        if st.session_state.get(INSPECT_RUN) not in names:  # first visit, or back from another page
            just_made = summary.run.name if summary is not None else None
            st.session_state[INSPECT_RUN] = just_made if just_made in names else names[0]
        pick = st.selectbox("Lab run", names, key=INSPECT_RUN,
                            help="Defaults to the run just made.")
        failed_only = st.toggle("Failed answers only", key=INSPECT_FAILED)
        run = next(r for r in runs if r.name == pick)
        with store.session(path) as db:
            ids = lab_store.call_answer_ids(db, run.id, failed_only=failed_only)
        if not ids:
            st.caption("No calls to show.")
        else:
            if st.session_state.get(INSPECT_ANSWER) not in ids:
                st.session_state[INSPECT_ANSWER] = ids[0]
            aid = st.selectbox("Answer", ids, key=INSPECT_ANSWER)
            with store.session(path) as db:
                call = lab_store.get_call(db, run.id, aid)
            if call is not None:
                tokens = "not reported" if call["total_tokens"] is None else f"{call['total_tokens']:,}"
                ui.literal(f"status {call['status']} · {plural(call['attempts'], 'HTTP attempt')} · "
                           f"{call['latency_ms']} ms · tokens {tokens}")
                if call["error"]:
                    ui.literal(call["error"])
                st.caption("Prompt as sent")
                st.code(call["prompt"], language=None, wrap_lines=True)
                for ex in call["exchanges"]:
                    if ex.get("sent"):
                        st.caption(f"Round {ex['round']}: corrective message sent")
                        st.code(ex["sent"], language=None, wrap_lines=True)
                    st.caption(f"Round {ex['round']}: reply")
                    st.code(ex.get("response") or "(no reply)", language=None, wrap_lines=True)
                    if ex.get("error"):
                        ui.literal(f"round {ex['round']}: {ex['error']}")
