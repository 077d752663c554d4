"""The agreement report of one scope (a judge run, optionally one cycle), computed one way.

CLI `stats`, the dashboard and a cycle's frozen snapshot all call `scope_report`: the claims
come from the one final-label reader (`store.claim_table`), the figures from
`agreement.agreement_report_arrays`, human–human agreement from the reviewers' labels.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from sqlite_utils import Database

from . import agreement, store
from .agreement import HumanHumanAgreement, Report, Thresholds

# Answer-bootstrap resamples at every size: the interval's Monte Carlo error at 2,000 is
# about 0.01 on a 95% bound, well below the figures' own uncertainty.
BOOTSTRAP = 2000


@dataclass(frozen=True, slots=True)
class ScopeReport:
    run: store.JudgeRun
    cycle_id: int | None
    table: store.ClaimTable  # every judged claim in scope
    data: store.StatsColumns  # the resolved ones, as the statistics took them
    report: Report
    oversampled: bool  # the cycle's answers had unequal inclusion probabilities

    @property
    def n_unlabeled(self) -> int:
        return self.data.unlabeled


def human_human(labels: store.ReviewerColumns) -> HumanHumanAgreement | None:
    """Agreement among reviewers on the claims two or more of them labeled; None when none is."""
    # The reviewers' final verdicts in claim order, then reviewer: the order of the records
    # `agreement.human_human_agreement` would read.
    given = np.flatnonzero(labels.final >= 0)
    claim = labels.claim[given]
    if claim.size == 0 or np.bincount(claim).max() < 2:
        return None
    given = given[np.lexsort((labels.reviewer[given], claim))]
    return agreement.human_human_agreement_arrays(labels.claim[given], labels.reviewer[given],
                                                  labels.final[given], labels.reviewers)


def scope_report(db: Database, run: store.JudgeRun, cycle_id: int | None = None, *,
                 thresholds: Thresholds | None = None, bootstrap: int = BOOTSTRAP,
                 seed: int = 0) -> ScopeReport:
    """The agreement report of `run` over every labeled claim, or within one cycle.

    Within a cycle drawn with unequal inclusion probabilities the report is re-weighted to
    the run (1 / pi per answer); with equal ones the weighted figure would repeat the raw one,
    so it is left out.
    """
    if thresholds is None:
        thresholds = store.load_thresholds(db)
    table = store.claim_table(db, run.id, cycle_id)
    data = table.resolved(reviewer_labels="none")
    weight = data.weight
    oversampled = weight is not None and np.unique(weight).size > 1
    report = agreement.agreement_report_arrays(
        data.human, data.judge, data.cluster, data.keys, thresholds,
        weights=weight if oversampled else None, bootstrap=max(0, bootstrap), seed=seed)
    report = replace(report, unresolved_claims=data.unresolved, human_human=human_human(data.labels))
    return ScopeReport(run, cycle_id, table, data, report, oversampled)
