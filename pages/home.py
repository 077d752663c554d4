"""Home: what the database holds, per judge run.

Anyone who opens the app, reviewers included, sees this page, so it shows no judge
verdicts: a count of the judge's SUPPORTED / CONTRADICTED / UNSUPPORTED per run would tell
a reviewer what the judge said before they label blind. Verdict figures live on the
Dashboard (leads only). The database's location on the server is shown to a signed-in lead
only: a path tells others about the server's layout and nothing they need.
"""

from __future__ import annotations

import streamlit as st

from calibration import commands, store
from calibration.errors import CalibrationError
from calibration.text import visible
from calibration_app import APP_DIR, access, signin, untrusted

st.title("Judge calibration")
st.write(
    "Reviewers label the claims of judged answers blind; then the judge's verdicts are "
    "revealed and every disagreement is reconciled."
)

path = signin.db_path()
try:
    with store.session(path) as db:
        summary = store.info(db)
except CalibrationError as exc:  # storage failures are one sentence (calibration.errors)
    st.error(str(exc).replace(str(path), "the database file"), icon=":material/error:")
    st.stop()
totals = summary["totals"]
runs = summary["runs"]

viewer = signin.current_reviewer()
if viewer is not None and access.is_lead(viewer):
    st.caption("Database")
    untrusted.literal(store.shown(path))

cols = st.columns(4)
cols[0].metric("Answers", f"{totals['answers']:,}")
cols[1].metric("Claims", f"{totals['claims']:,}")
cols[2].metric("Claims with a human label", f"{totals['labeled_claims']:,}")
cols[3].metric("Reviewers", f"{totals['reviewers']:,}")

st.subheader("Judge runs")
if not runs:
    if viewer is not None and access.is_lead(viewer):  # commands are for leads, as this install runs them
        st.info(
            "Nothing loaded yet. Import judged answers on the Import page, load the demo with "
            f"`{commands.command('demo')}`, or import with `{commands.command('import FILE.jsonl')}`."
        )
    else:
        st.info("Nothing loaded yet: a lead imports judged answers on the Import page.")
    access.import_link()
else:
    # st.dataframe draws cell text literally (no markdown), so run names are safe here.
    # No verdict counts (see the docstring).
    st.dataframe(
        [
            {
                "judge run": visible(r.run.name),
                "answers": r.answers,
                "claims": r.claims,
                "human-labeled claims": r.labeled_claims,
            }
            for r in runs
        ],
        hide_index=True,
        width="stretch",
    )

if (APP_DIR / "pages" / "review.py").is_file():
    st.page_link("pages/review.py", label="Start reviewing", icon=":material/rate_review:")
