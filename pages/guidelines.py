"""Guidelines: the lead writes the labeling guidelines reviewers open with G on the Review page.

Top to bottom: the scope (every cycle, or one cycle), the markdown editor, a preview, and the
verdict definitions reviewers see beside them (those of the judge's prompt, not editable
here). The guidelines are markdown written by a lead, the one place the app renders markdown
that is not a constant (imported text never reaches it), and even that through
`access.guidelines`: text formatting only, nothing that loads an image or a page. Saving happens
in the button's callback, before the rerun, which checks the lead again (`access.lead_action`).
"""

from __future__ import annotations

import streamlit as st

from calibration import cycles, review, store
from calibration.errors import InputError
from calibration.text import check_text
from calibration.vocab import LABELS
from calibration_app import access, signin, untrusted

EDITOR = "guidelines_text"
SAVED = "guidelines_saved"
REFUSED = "guidelines_refused"


@access.lead_action
def _on_save(scope: str, editor_key: str, lead: str) -> None:
    try:
        markdown = check_text(str(st.session_state.get(editor_key) or ""), "guidelines")
    except InputError as exc:
        st.session_state[REFUSED] = str(exc)
        return
    with store.session(signin.db_path()) as db:
        store.guidelines.save_guidelines(db, scope, markdown, lead)
    st.session_state[SAVED] = True


st.title("Guidelines")
lead = access.require_lead()
path = signin.db_path()
with store.session(path) as db:
    all_cycles = cycles.list_cycles(db)
scopes = [store.guidelines.PROJECT_SCOPE, *(store.guidelines.cycle_scope(c.id) for c in all_cycles)]
names = {
    store.guidelines.PROJECT_SCOPE: "Every cycle (project)",
    **{store.guidelines.cycle_scope(c.id): f"Cycle {c.name} (shown after the project's)" for c in all_cycles},
}
scope = st.selectbox("For", scopes, format_func=lambda s: names[s], key="guidelines_scope")
with store.session(path) as db:
    current = store.guidelines.get_guidelines(db, scope)
editor_key = f"{EDITOR}_{scope}"
if editor_key not in st.session_state:
    st.session_state[editor_key] = current.markdown if current else ""
st.text_area(
    "Guidelines (markdown)",
    key=editor_key,
    height=260,
    placeholder="The first paragraph is shown under the verdict buttons; the whole text opens with G.",
)
st.button("Save", type="primary", on_click=_on_save, args=(scope, editor_key, lead))
if st.session_state.pop(SAVED, False):
    st.success("Saved. Reviewers see it on their next key press.", icon=":material/check:")
if refused := st.session_state.pop(REFUSED, None):
    st.error("Not saved.")
    untrusted.literal(refused)
if current is not None:
    st.caption(f"Last saved {current.updated_at[:16].replace('T', ' ')} UTC by")
    untrusted.literal(current.author)

text = str(st.session_state.get(editor_key) or "")
st.subheader("Preview")
with st.container(border=True, key="guidelines-preview"):
    if text.strip():
        untrusted.literal("Under the buttons: " + review.guideline_summary(text))
        st.divider()
        access.guidelines(text)  # a lead's markdown, rendered so that it loads nothing
    else:
        st.caption("Nothing written for this scope.")

st.subheader("Verdict definitions reviewers see")
st.caption("From the judge's prompt (calibration/prompts), so people and the judge use the same words.")
by_scope = {store.guidelines.cycle_scope(c.id): c for c in all_cycles}
shown_cycle = by_scope.get(scope) or (all_cycles[-1] if all_cycles else None)
with store.session(path) as db:
    shipped = review.judge_definitions(db, shown_cycle.judge_run_id) if shown_cycle else {}
for verdict in LABELS:
    with st.container(horizontal=True, vertical_alignment="center"):
        untrusted.verdict_badge(verdict)
        untrusted.literal(shipped.get(verdict, ""))
