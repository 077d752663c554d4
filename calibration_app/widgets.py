"""What several lead pages draw alike: a decision's header, and a claim table's columns."""

from __future__ import annotations

from typing import Any

import streamlit as st

from calibration.dashboard import Decision
from calibration_app.untrusted import literal

AGREEMENT_HELP = (
    "the share of human verdicts the judge agrees with: each reviewer's blind verdict "
    "where several labeled a claim, else the claim's final label"
)


COUNTS_HELP = (
    "claims with a judge verdict and a final human label; disagreeing: the two differ; "
    "unresolved: reviewers disagree or marked it unclear and no lead has decided. Claims of "
    "the sealed holdout count in the figures but are listed nowhere until it is unsealed."
)


def decision_header(dec: Decision, *, run: str) -> None:
    """The decision header (`calibration.dashboard.decision`), drawn alike on the Dashboard and on a
    closed cycle: the verdict word in its one colour and the judge run it is about, the one
    agreement figure with its interval, then the direction, the ceiling and the plain sentence.
    Every piece but the run's name is numbers and constant words; the sentences and the name go
    through `literal`, as every built sentence does."""
    with st.container(border=True, key="decision"):
        word_col, fig_col, text_col = st.columns([3, 2, 5])
        word_col.markdown(f"### :{dec.colour}[{dec.word}]")
        word_col.caption(dec.about)
        with word_col:
            literal(run)
            if dec.reading:  # names the lead who closed labeling: literal text
                literal(dec.reading)
        fig_col.metric("Agreement", dec.figure, help=AGREEMENT_HELP)
        fig_col.caption(f"95% interval {dec.interval}")
        with text_col:
            literal(dec.sentence)
            st.caption(f"{dec.direction} {dec.ceiling}")
            if dec.counts is not None:
                # The same counts on every page that shows this report (`Assessment.counts`).
                st.caption(dec.counts.sentence(), help=COUNTS_HELP)


# A claim list's columns, sized so that the table with a selection column fits the main block
# at 1280×720 with the sidebar open (about 820 px): a long claim is cut at its column's edge,
# never the table at the page's; a row's full text is read on select or in an export. Space
# left over is shared among the columns.
CLAIM_COLUMN_ORDER = ("answer", "claim id", "claim", "human", "judge")
CLAIM_COLUMNS: dict[str, Any] = {
    name: st.column_config.TextColumn(width=width)
    for name, width in {"answer": 110, "claim id": 110, "claim": 230, "human": 190, "judge": 110}.items()
}
