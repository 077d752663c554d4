"""The Streamlit app: `streamlit run app.py` (or `make run`).

One navigation over the screens in pages/. Lead pages are left out of a signed-in
reviewer's navigation when leads are configured (each lead page checks again). The
database is $CALIBRATION_DB or data/calibration.db; every page opens its own
short-lived connection per unit of work.
"""

from __future__ import annotations

import streamlit as st

import ui

# (file, title, icon, for leads only); the first is the default page.
PAGES: list[tuple[str, str, str, bool]] = [
    ("pages/home.py", "Home", ":material/home:", False),
    ("pages/review.py", "Review", ":material/rate_review:", False),
    ("pages/cycles.py", "Cycles", ":material/autorenew:", True),
    ("pages/dashboard.py", "Dashboard", ":material/monitoring:", True),
    ("pages/import.py", "Import", ":material/upload_file:", True),
    ("pages/judge_lab.py", "Judge lab", ":material/science:", True),
]

# An emoji favicon is drawn locally; a :material/...: favicon would be fetched from Google.
st.set_page_config(page_title="Judge calibration", page_icon="⚖️", layout="wide")

reviewer = ui.current_reviewer()
show_lead_pages = reviewer is None or ui.is_lead(reviewer)
pages = [
    st.Page(path, title=title, icon=icon, default=(i == 0))
    for i, (path, title, icon, lead_only) in enumerate(PAGES)
    if show_lead_pages or not lead_only
]
current = st.navigation(pages)
ui.sidebar_identity()
current.run()
