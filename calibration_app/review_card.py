"""The review page's card as a Streamlit component (Components v2): its rules, script and style
are components/card_rules.js, review_card.js and review_card.css, read once when the app starts;
nothing is loaded from elsewhere. What the card does and sends is described in the script's
header.

The component's script is one module, so the rules module's exports become plain declarations
ahead of the card's script (the tests import the rules module as it is: tests/js/)."""

from __future__ import annotations

import re
from pathlib import Path

import streamlit as st

_HERE = Path(__file__).resolve().parent / "components"


def script() -> str:
    """card_rules.js without its `export` keywords, then review_card.js."""
    rules = (_HERE / "card_rules.js").read_text(encoding="utf-8")
    return (
        re.sub(r"^export (?=const|function)", "", rules, flags=re.M)
        + "\n"
        + (_HERE / "review_card.js").read_text(encoding="utf-8")
    )


# Mounted in the page's own DOM (not a shadow root): its classes all start with "rc-".
mount = st.components.v2.component(
    "calibration_review_card",
    js=script(),
    css=(_HERE / "review_card.css").read_text(encoding="utf-8"),
    isolate_styles=False,
)
