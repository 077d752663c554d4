"""Claims as records, for tests that write their input claim by claim or read the store's arrays
back that way, and the functions that turn the records into the columns the statistics take."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from calibration import store
from calibration.agreement import (
    LABELS,
    HumanHumanAgreement,
    RunComparison,
    compare_judge_runs,
    human_human_agreement,
    label_index,
)
from calibration.flag import Thresholds
from calibration.report import Report, agreement_report

DEFAULTS = Thresholds()


class Claim(NamedTuple):
    """One claim with its final human label and the judge's verdict (``weight``: 1/pi, or None)."""

    answer_id: str
    claim_key: str
    human: str
    judge: str
    weight: float | None = None


class PairedClaim(NamedTuple):
    """One claim judged by two judge runs, with its final human label."""

    answer_id: str
    claim_key: str
    human: str
    judge_a: str
    judge_b: str


def report_of(items: list[Claim], thresholds: Thresholds = DEFAULTS, **kw: Any) -> Report:
    """`agreement_report` on the claims' columns, answers numbered in order of first appearance."""
    answers: dict[str, int] = {}
    cluster = [answers.setdefault(it.answer_id, len(answers)) for it in items]
    weights = None if not items or items[0].weight is None else np.array([it.weight for it in items])
    return agreement_report(
        [label_index(it.human) for it in items],
        [label_index(it.judge) for it in items],
        cluster,
        [it.claim_key for it in items],
        thresholds,
        weights=weights,
        **kw,
    )


def compare_of(items: list[PairedClaim]) -> RunComparison:
    """`compare_judge_runs` on the paired claims' columns."""

    def codes(field: str) -> list[int]:
        return [label_index(getattr(it, field)) for it in items]

    keys = [it.claim_key for it in items]
    return compare_judge_runs(codes("human"), codes("judge_a"), codes("judge_b"), keys)


def hh_of(labels: list[tuple[str, str, str]]) -> HumanHumanAgreement:
    """`human_human_agreement` on (claim_key, reviewer, verdict) records, turned into its columns."""
    claims: dict[str, int] = {}
    names = sorted({r for _, r, _ in labels})
    return human_human_agreement(
        [claims.setdefault(c, len(claims)) for c, _, _ in labels],
        [names.index(r) for _, r, _ in labels],
        [label_index(v) for _, _, v in labels],
        names,
    )


def table_of(human: Any, judge: Any, k: int = len(LABELS)) -> np.ndarray:
    """The k x k count table of two sequences of class indices, counted one pair at a time."""
    t = np.zeros((k, k), dtype=np.int64)
    for h, j in zip(human, judge, strict=True):
        t[h, j] += 1
    return t


@dataclass(frozen=True)
class StatsInput:
    items: list[Claim]
    reviewer_labels: list[tuple[str, str, str]]
    unresolved: tuple[str, ...]
    unlabeled: int


def stats_input(db, run_id: int, cycle_id: int | None = None) -> StatsInput:
    """One Claim per resolved claim (every reviewer label listed), from `store.claim_table`."""
    cols = store.claim_table(db, run_id, cycle_id).resolved(reviewer_labels="all")
    answers = [cols.answer_ids[i] for i in cols.cluster.tolist()]
    weights = [None] * len(cols) if cols.weight is None else cols.weight.tolist()
    items = [
        Claim(a, k, LABELS[h], LABELS[j], w)
        for a, k, h, j, w in zip(
            answers, cols.keys, cols.human.tolist(), cols.judge.tolist(), weights, strict=True
        )
    ]
    return StatsInput(items, cols.reviewer_labels, cols.unresolved, cols.unlabeled)
