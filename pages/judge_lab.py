"""Judge lab: a lead edits the judge prompt, re-runs it over the human-labeled claims and
sees at once whether agreement with the humans improved.

All logic lives in calibration.judge (HTTP, storage, the comparison through
calibration.agreement); this page gathers the form and shows results. Prompts, replies,
answer ids, run names and error messages are user or model text: they are shown through
st.code, st.dataframe or ui.literal, never in markdown-capable labels or messages. The
API key is never typed here: the page only names the environment variable holding it.
"""

from __future__ import annotations

import streamlit as st

import ui
from calibration import judge, store
from calibration.errors import CalibrationError

SUMMARY = "_judge_lab_summary"  # session state: the last run's summary, kept across reruns
TEXT = "lab_template_text"
PICK = "lab_template_pick"

st.title("Judge lab")
ui.require_reviewer()
path = ui.db_path()


def _problems(exc: CalibrationError) -> list[str]:
    return list(getattr(exc, "problems", None) or [str(exc)])


def _load_pick() -> None:
    # Picking a template replaces the text being edited (and suggests its version name).
    name = st.session_state[PICK]
    st.session_state[TEXT] = judge.load_template(name).text
    st.session_state["lab_version"] = name


templates = judge.available_templates()
if not templates:
    st.error("No prompt templates found in calibration/prompts.")
    st.stop()
if TEXT not in st.session_state:
    first = judge.DEFAULT_TEMPLATE if judge.DEFAULT_TEMPLATE in templates else templates[0]
    st.session_state[PICK] = first
    st.session_state[TEXT] = judge.load_template(first).text
    st.session_state["lab_version"] = first

with store.session(path) as db:
    labeled = judge.plan_run(db, "", "", "labeled")
    overview = judge.lab_run_overview(db)
if labeled.answers == 0:
    st.info("No human-labeled claims yet: the lab re-judges exactly the claims reviewers have "
            "labeled. Label some claims first (Review page, or python -m calibration import-labels).")
    st.stop()

st.caption(f"In scope: {labeled.answers} answers with human labels, {labeled.claims} claims. "
           "Each answer is one call; its claims are judged as given, not re-split.")

# ---------------------------------------------------------------- the prompt

st.subheader("Prompt")
st.selectbox("Start from template", templates, key=PICK, on_change=_load_pick,
             help="Files in calibration/prompts. Picking one replaces the text below.")
st.text_area("Template", key=TEXT, height=420,
             help="Placeholders {question}, {chunks}, {answer} and {claims} are filled in per "
                  "answer; every other brace is left as written.")

# ---------------------------------------------------------------- the endpoint

st.subheader("Run")
with st.form("lab_run", enter_to_submit=False):
    left, right = st.columns(2)
    base_url = left.text_input("Base URL", value="http://localhost:8000/v1", key="lab_base_url",
                               help="Any OpenAI-compatible server: vLLM, Ollama, llama.cpp or hosted.")
    model = right.text_input("Model", key="lab_model", max_chars=200)
    version = left.text_input("Prompt version", key="lab_version", max_chars=100,
                              help="Names this prompt text. An edited prompt needs a new name; "
                                   "the same model and version resumes an interrupted run.")
    key_env = right.text_input("API key environment variable", value=judge.DEFAULT_API_KEY_ENV,
                               key="lab_key_env",
                               help="The server process reads the key from this variable; "
                                    "leave it unset for local servers without a key.")
    concurrency = left.number_input("Concurrency", min_value=1, max_value=64, value=4, step=1,
                                    key="lab_concurrency", help="Requests in flight at once.")
    timeout = right.number_input("Timeout per request (s)", min_value=1.0, max_value=600.0,
                                 value=120.0, step=10.0, key="lab_timeout")
    submitted = st.form_submit_button("Run over the labeled claims", type="primary")
st.caption("The run blocks this page while it works; leaving or clicking elsewhere stops it. "
           "Every judged answer is stored at once, so running it again continues where it stopped.")

if submitted:
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
            st.caption(f"Resuming: {plan.already_ok} of {plan.answers} answers are already judged "
                       "and will not be requested again.")

        def _progress(p: judge.Progress) -> None:
            # Numbers only: the bar's text is markdown.
            bar.progress(p.fraction, text=f"{p.done} / {p.total} answers · ok {p.ok} · "
                                          f"failed {p.failed} · {p.claims} claims")

        try:
            st.session_state[SUMMARY] = judge.run_lab(config, template, scope="labeled",
                                                      db_path=path, progress=_progress)
        except CalibrationError as exc:
            bar.empty()
            st.error("The run stopped. Answers judged before the stop are stored.")
            for line in _problems(exc):
                ui.literal(line)
        else:
            bar.empty()
            with store.session(path) as db:
                overview = judge.lab_run_overview(db)

# ---------------------------------------------------------------- the result

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
        st.dataframe([{"answer": a, "error": e} for a, e in summary.failures], hide_index=True)
    comp = summary.comparison
    if comp is not None:
        c = comp.result
        st.markdown("**Against the previous run, on the same human-labeled claims**")

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
        cols[2].metric("Only the previous run right", len(c.only_a_right))
        p = c.mcnemar.p_two_sided
        st.caption("Exact McNemar test on the claims where exactly one run agrees with the humans: "
                   + ("p not defined (no such claims)." if p is None else f"p = {p:.3g}."))
        if comp.unresolved:
            st.caption(f"{comp.unresolved} labeled claims left out: reviewers disagree and "
                       "nobody adjudicated.")
    elif summary.baseline is not None:
        st.info("No human-labeled claim was judged by both this run and the previous one.")
    else:
        st.info("No earlier judge run to compare with.")

# ---------------------------------------------------------------- past runs and their calls

if overview:
    st.subheader("Lab runs")
    st.dataframe(overview, hide_index=True)
    with st.expander("What the judge saw: one stored call"):
        with store.session(path) as db:
            runs = judge.lab_runs(db)
        names = [r.name for r in reversed(runs)]
        pick = st.selectbox("Lab run", names, key="lab_inspect_run")
        failed_only = st.toggle("Failed answers only", key="lab_inspect_failed")
        run = next(r for r in runs if r.name == pick)
        with store.session(path) as db:
            ids = judge.call_answer_ids(db, run, failed_only=failed_only)
        if not ids:
            st.caption("No calls to show.")
        else:
            aid = st.selectbox("Answer", ids, key="lab_inspect_answer")
            with store.session(path) as db:
                call = judge.get_call(db, run, aid)
            if call is not None:
                ui.literal(f"status {call['status']} · {call['attempts']} HTTP attempts · "
                           f"{call['latency_ms']} ms · tokens {call['total_tokens']}")
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
