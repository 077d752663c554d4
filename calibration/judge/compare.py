"""A lab run against a baseline run on the claims both judged and humans labeled.

The final human label of each claim comes from the one reader, `store.claim_table`, and
the statistics from `agreement.compare_judge_runs_arrays` (each run's agreement and kappa,
and the paired exact McNemar test).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlite_utils import Database

from .. import store
from ..fmt import plural
from ..store import lab as lab_store

if TYPE_CHECKING:
    from ..agreement import RunComparison


@dataclass(frozen=True, slots=True)
class BaselineOption:
    """A run that can serve as the baseline of `run`, and how many claims they share."""

    run: store.JudgeRun
    shared: int  # human-labeled claims judged by both runs (within the cycle, if one is given)

    @property
    def label(self) -> str:
        return f"{self.run.name} · {plural(self.shared, 'shared labeled claim')}"


def baseline_options(db: Database, run: store.JudgeRun, cycle: str | None = None) -> list[BaselineOption]:
    """The runs sharing human-labeled claims with `run` (within `cycle`), best baseline first.

    Best: the most shared labeled claims, since a comparison on a handful of claims says
    nothing. Ties go to the cycle's own judge run (within a cycle), then to the most recently
    imported run (the pipeline's judge, as `store.find_judge_run` defaults to), then to the
    most recent lab run.
    """
    cycle_id = store.cycle_id(db, cycle) if cycle is not None else None
    cycle_run = lab_store.cycle_judge_run_id(db, cycle_id) if cycle_id is not None else None
    shared = lab_store.shared_labeled_claims(db, run.id, cycle_id)
    options = [BaselineOption(r, shared[r.id]) for r in store.judge_runs(db) if shared.get(r.id)]
    options.sort(key=lambda o: (o.shared, o.run.id == cycle_run, o.run.origin == "import", o.run.id),
                 reverse=True)
    return options


def default_baseline(db: Database, run: store.JudgeRun, cycle: str | None = None) -> store.JudgeRun | None:
    """The run to compare against: the one sharing the most human-labeled claims with `run`
    (see `baseline_options`); None when no run shares any."""
    options = baseline_options(db, run, cycle)
    return options[0].run if options else None


@dataclass(frozen=True, slots=True)
class LabComparison:
    """The new run (b) against the baseline (a) on the claims both judged and humans labeled."""

    baseline: str
    run: str
    unresolved: int  # labeled claims left out: reviewers disagree or one marked it unclear
    result: RunComparison
    cycle: str | None = None  # the comparison is limited to this cycle's claims

    @property
    def scope_text(self) -> str:
        """On what the comparison was made, as a phrase: 'N human-labeled claims ...'."""
        where = f" in cycle {self.cycle}" if self.cycle is not None else ""
        return f"{plural(self.result.n_claims, 'human-labeled claim')} judged by both runs{where}"

    def to_dict(self) -> dict[str, Any]:
        return {**self.result.to_dict(self.baseline, self.run), "unresolved_claims": self.unresolved,
                "cycle": self.cycle}


def compare_runs(db: Database, run: store.JudgeRun, baseline: store.JudgeRun,
                 cycle: str | None = None) -> LabComparison | None:
    """The paired comparison on the claims both runs judged that have a final human label
    (within `cycle`, if given); None when no such claim exists.

    Both runs' claim tables are read (`store.claim_table`) and matched on claim id. Claims
    reviewers disagree on or marked unclear, with no adjudication, are left out and counted.
    The claims are taken in answer-id order, then claim order within the answer (the order
    the claims were imported in, which is their claim-id order), so the lists of claims only
    one run got right read the same for a whole run and for a cycle.
    """
    from .. import agreement  # scipy: loaded only when a comparison is asked for

    cycle_id = store.cycle_id(db, cycle) if cycle is not None else None
    with store.read_snapshot(db):  # both tables from one state of the store
        base = store.claim_table(db, baseline.id, cycle_id)
        new = store.claim_table(db, run.id, cycle_id)
    _, ia, ib = np.intersect1d(base.claim_pk, new.claim_pk, assume_unique=True, return_indices=True)
    # The human label is the claim's, whichever run's table it is read from.
    unresolved = int(base.unresolved()[ia].sum())
    keep = base.agreed()[ia]
    ia, ib = ia[keep], ib[keep]
    if not ia.size:
        return None
    answer_ids = [base.answer_ids[a] for a in base.answer[ia].tolist()]
    rank = {a: i for i, a in enumerate(sorted(set(answer_ids)))}
    order = np.lexsort((base.claim_pk[ia], np.array([rank[a] for a in answer_ids], dtype=np.int64)))
    ia, ib = ia[order], ib[order]
    result = agreement.compare_judge_runs_arrays(base.human[ia], base.judge[ia], new.judge[ib],
                                                 [base.keys[i] for i in ia.tolist()])
    return LabComparison(baseline.name, run.name, unresolved, result, cycle)
