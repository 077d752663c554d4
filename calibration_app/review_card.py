"""The review page's card as a Streamlit component (Components v2): its script and style are
components/review_card.js and .css, read once when the app starts; no build step, nothing loaded
from elsewhere. What the card does and reports is described in the script's header."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

_HERE = Path(__file__).resolve().parent / "components"

# Mounted in the page's own DOM (not a shadow root): its classes all start with "rc-".
mount = st.components.v2.component(
    "calibration_review_card",
    js=(_HERE / "review_card.js").read_text(encoding="utf-8"),
    css=(_HERE / "review_card.css").read_text(encoding="utf-8"),
    isolate_styles=False,
)
