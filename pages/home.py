"""Home: what the database holds, per judge run.

Anyone who opens the app, reviewers included, sees this page, so it shows no judge
verdicts: a count of the judge's SUPPORTED / CONTRADICTED / UNSUPPORTED per run would tell
a reviewer what the judge said before they label blind. Verdict figures live on the
Dashboard (leads only).
"""

from __future__ import annotations

import streamlit as st

import ui
from calibration import store

st.title("Judge calibration")
st.write(
    "Reviewers label the claims of judged answers blind; then the judge's verdicts are "
    "revealed and every disagreement is reconciled."
)

path = ui.db_path()
with store.session(path) as db:
    summary = store.info(db)
totals = summary["totals"]
runs = summary["runs"]

st.caption("Database")
ui.literal(str(path))

cols = st.columns(4)
cols[0].metric("Answers", f"{totals['answers']:,}")
cols[1].metric("Claims", f"{totals['claims']:,}")
cols[2].metric("Claims with a human label", f"{totals['labeled_claims']:,}")
cols[3].metric("Reviewers", f"{totals['reviewers']:,}")

st.subheader("Judge runs")
if not runs:
    st.info("Nothing loaded yet. Load the demo with `python -m calibration demo`, or import "
            "judged answers with `python -m calibration import FILE.jsonl`.")
else:
    # st.dataframe draws cell text literally (no markdown), so run names are safe here.
    # No verdict counts (see the docstring).
    st.dataframe(
        [
            {
                "judge run": r.run.name,
                "answers": r.answers,
                "claims": r.claims,
                "human-labeled claims": r.labeled_claims,
            }
            for r in runs
        ],
        hide_index=True,
        width="stretch",
    )

if (ui.ROOT / "pages" / "review.py").is_file():
    st.page_link("pages/review.py", label="Start reviewing", icon=":material/rate_review:")
