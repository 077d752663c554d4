"""Record views of the store's arrays, for tests that compare a column pipeline with the
record-based statistics (`agreement.agreement_report` on `LabeledClaim`s)."""

from __future__ import annotations

from dataclasses import dataclass

from calibration import store
from calibration.agreement import LABELS, LabeledClaim


@dataclass(frozen=True)
class StatsInput:
    items: list[LabeledClaim]
    reviewer_labels: list[tuple[str, str, str]]
    unresolved: tuple[str, ...]
    unlabeled: int


def stats_input(db, run_id: int, cycle_id: int | None = None) -> StatsInput:
    """One LabeledClaim per resolved claim (every reviewer label listed), from `store.claim_table`."""
    cols = store.claim_table(db, run_id, cycle_id).resolved(reviewer_labels="all")
    answers = [cols.answer_ids[i] for i in cols.cluster.tolist()]
    weights = [None] * len(cols) if cols.weight is None else cols.weight.tolist()
    items = [LabeledClaim(a, k, LABELS[h], LABELS[j], w) for a, k, h, j, w in zip(
        answers, cols.keys, cols.human.tolist(), cols.judge.tolist(), weights, strict=True)]
    return StatsInput(items, cols.reviewer_labels, cols.unresolved, cols.unlabeled)
