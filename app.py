"""The Streamlit app: `streamlit run app.py` (or `make run`).

One navigation over the screens in pages/; a page is listed only when its file exists,
so screens arrive one issue at a time. The database is $CALIBRATION_DB or
data/calibration.db; every page opens its own short-lived connection per unit of work.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

import ui

ROOT = Path(__file__).resolve().parent

# (file, title, icon); the first is the default page.
PAGES: list[tuple[str, str, str]] = [
    ("pages/home.py", "Home", ":material/home:"),
    ("pages/review.py", "Review", ":material/rate_review:"),
    ("pages/cycles.py", "Cycles", ":material/autorenew:"),
    ("pages/dashboard.py", "Dashboard", ":material/monitoring:"),
    ("pages/judge_lab.py", "Judge lab", ":material/science:"),
]

# An emoji favicon is drawn locally; a :material/...: favicon would be fetched from Google.
st.set_page_config(page_title="Judge calibration", page_icon="⚖️", layout="wide")

pages = [
    st.Page(path, title=title, icon=icon, default=(i == 0))
    for i, (path, title, icon) in enumerate(PAGES)
    if (ROOT / path).is_file()
]
current = st.navigation(pages)
ui.sidebar_identity()
current.run()
