"""A lab run against a baseline run on the claims both judged and humans labeled.

The final human label of each claim comes from the one reader, `store.claim_table`, and
the statistics from `agreement.compare_judge_runs` (each run's agreement and kappa,
and the paired exact McNemar test).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import store
from ..errors import Hint, Option
from ..fmt import num, p_value, pct, plural, points
from ..store import Database
from .paired import PairedDifference, claims_to_decide, paired_difference

if TYPE_CHECKING:
    from ..agreement import RunComparison


@dataclass(frozen=True, slots=True)
class BaselineOption:
    """A run that can serve as the baseline of `run`, and how many claims they share."""

    run: store.JudgeRun
    shared: int  # claims both runs judged with a final human label: what `compare_runs` compares

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
    cycle_run = store.cycles.cycle_judge_run_id(db, cycle_id) if cycle_id is not None else None
    shared = shared_labeled_claims(db, run, cycle_id)
    options = [BaselineOption(r, shared[r.id]) for r in store.judge_runs(db) if shared.get(r.id)]
    options.sort(
        key=lambda o: (o.shared, o.run.id == cycle_run, o.run.origin == "import", o.run.id), reverse=True
    )
    return options


def shared_labeled_claims(db: Database, run: store.JudgeRun, cycle_id: int | None = None) -> dict[int, int]:
    """Per other judge run: the claims both it and `run` judged that have a final human label
    (unanimous or adjudicated; `ClaimTable.agreed`), within the cycle if given. The one count
    of shared claims: exactly the claims `compare_runs` compares on, so the baseline's label and
    the comparison's "compared on" never differ. Claims reviewers still dispute are left out
    here as there (`compare_runs` counts them as unresolved)."""
    with store.read_snapshot(db):
        table = store.claim_table(db, run.id, cycle_id)
        labeled = table.claim_pk[table.agreed()]
        out = {}
        for other in store.judge_runs(db):
            if other.id == run.id or not labeled.size:
                continue
            n = int(np.isin(labeled, store.run_verdicts(db, other.id)[0], assume_unique=True).sum())
            if n:
                out[other.id] = n
    return out


def default_baseline(db: Database, run: store.JudgeRun, cycle: str | None = None) -> store.JudgeRun | None:
    """The run to compare against: the run `run` revises when it was recorded (a lab run made
    by this version), else the one sharing the most human-labeled claims (`baseline_options`);
    None when no run shares any. `baseline_choice` says how the choice was made."""
    return baseline_choice(db, run, cycle)[0]


def baseline_choice(
    db: Database, run: store.JudgeRun, cycle: str | None = None
) -> tuple[store.JudgeRun | None, Hint]:
    """(default baseline, why it was chosen, in words and the option that names another:
    `errors.phrase`). A tie on shared claims is said aloud, with the runs tied, never
    settled silently."""
    revised = store.lab.revised_run_id(db, run.id)
    options = baseline_options(db, run, cycle)
    if revised is not None:
        for o in options:
            if o.run.id == revised:
                return o.run, (f"the run this prompt revises ({o.run.name})",)
    if not options:
        return None, ("no other run shares a human-labeled claim with this one",)
    best = options[0]
    tied = [o.run.name for o in options[1:] if o.shared == best.shared]
    if tied:
        return best.run, (
            f"tie: {', '.join([best.run.name, *tied])} each share {best.shared} labeled "
            f"claims with this run; {best.run.name} taken as the most recent import — "
            "choose the baseline explicitly with ",
            Option.BASELINE,
        )
    return best.run, (f"the run sharing the most labeled claims ({best.shared})",)


@dataclass(frozen=True, slots=True)
class PartComparison:
    """The new run against the baseline on one part of the split (holdout or tuning)."""

    part: str  # "holdout" | "tuning"
    result: RunComparison
    difference: PairedDifference
    claims_to_decide: int | None  # labeled claims in all for p < ALPHA if the pattern held

    @property
    def p(self) -> float | None:
        return self.result.mcnemar.p_two_sided

    @property
    def decided(self) -> bool:
        return self.p is not None and self.p < ALPHA

    def sentence(self) -> str:
        """The plain-words reading of the paired test on this part."""
        r = self.result
        where = "the lead never saw" if self.part == "holdout" else "seen while revising the prompt"
        n_new, n_old = len(r.only_b_right), len(r.only_a_right)
        head = (
            f"On {plural(r.n_claims, 'claim')} {where}, the new prompt is right "
            f"{plural(n_new, 'time')} where the old was wrong, and wrong {plural(n_old, 'time')} "
            "where the old was right"
        )
        if self.p is None or n_new + n_old == 0:
            return head + ": no claim tells them apart, so the test has nothing to go on."
        if self.decided:
            verdict = "better" if n_new > n_old else "worse"
            return f"{head}: {verdict} beyond chance, {p_value(self.p)}."
        more = (
            ""
            if self.claims_to_decide is None
            else (
                f" About {plural(max(0, self.claims_to_decide - r.n_claims), 'more labeled claim')} "
                f"in this part would decide it if this pattern held."
            )
        )
        if self.claims_to_decide is None and n_new == n_old:
            more = " The two runs are tied here; more labels would not decide it at this pattern."
        return f"{head}: not distinguishable from chance ({p_value(self.p)}).{more}"

    def to_dict(self) -> dict[str, Any]:
        r, d = self.result, self.difference
        return {
            "n_claims": r.n_claims,
            "new_right_old_wrong": len(r.only_b_right),
            "old_right_new_wrong": len(r.only_a_right),
            "mcnemar_exact_p": r.mcnemar.p_two_sided,
            "agreement_new": r.agreement_b.value,
            "agreement_old": r.agreement_a.value,
            "kappa_new": r.kappa_b.value,
            "kappa_old": r.kappa_a.value,
            "difference": d.difference,
            "difference_ci_low": d.ci_low,
            "difference_ci_high": d.ci_high,
            "claims_to_decide": self.claims_to_decide,
            "sentence": self.sentence(),
        }


ALPHA = 0.05


@dataclass(frozen=True, slots=True)
class LabComparison:
    """The new run (b) against the baseline (a) on the claims both judged and humans labeled,
    and separately on the holdout and the tuning claims among them."""

    baseline: str
    run: str
    unresolved: int  # labeled claims left out: reviewers disagree or one marked it unclear
    result: RunComparison
    cycle: str | None = None  # the comparison is limited to this cycle's claims
    holdout: PartComparison | None = None  # None: no holdout claim in the comparison
    tuning: PartComparison | None = None
    holdout_used: bool = False  # the holdout was unsealed: it no longer proves a gain

    @property
    def scope_text(self) -> str:
        """On what the comparison was made, as a phrase: 'N human-labeled claims ...'."""
        where = f" in cycle {self.cycle}" if self.cycle is not None else ""
        return f"{plural(self.result.n_claims, 'human-labeled claim')} judged by both runs{where}"

    def headline(self) -> str:
        """The sentence at the top: about the holdout, or why it cannot say anything."""
        if self.holdout is None:
            return (
                "No holdout claim is among the claims both runs judged: the comparison below is "
                "on claims seen while revising only, and cannot show the new prompt generalises."
            )
        text = self.holdout.sentence()
        if self.holdout_used:
            text += (
                " The holdout was unsealed earlier, so its claims may have been read while "
                "revising; a fresh holdout needs new labels."
            )
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.result.to_dict(self.baseline, self.run),
            "unresolved_claims": self.unresolved,
            "cycle": self.cycle,
            "baseline": self.baseline,
            "headline": self.headline(),
            "holdout_used": self.holdout_used,
            "holdout": None if self.holdout is None else self.holdout.to_dict(),
            "tuning": None if self.tuning is None else self.tuning.to_dict(),
        }


def _part(
    part: str, human: np.ndarray, old: np.ndarray, new: np.ndarray, keys: list[str]
) -> PartComparison | None:
    from .. import agreement  # scipy: loaded only when a comparison is asked for

    if not len(keys):
        return None
    result = agreement.compare_judge_runs(human, old, new, keys)
    old_right, new_right = old == human, new == human
    a = int((old_right & new_right).sum())
    b = int((old_right & ~new_right).sum())
    c = int((~old_right & new_right).sum())
    d = int((~old_right & ~new_right).sum())
    return PartComparison(
        part, result, paired_difference(a, b, c, d), claims_to_decide(b, c, a + b + c + d, alpha=ALPHA)
    )


def compare_runs(
    db: Database, run: store.JudgeRun, baseline: store.JudgeRun, cycle: str | None = None
) -> LabComparison | None:
    """The paired comparison on the claims both runs judged that have a final human label
    (within `cycle`, if given), on all of them and on the holdout and tuning parts of the
    split (`calibration.split`); None when no such claim exists.

    Both runs' claim tables are read (`store.claim_table`) and matched on claim id. Claims
    reviewers disagree on or marked unclear, with no adjudication, are left out and counted.
    The claims are taken in answer-id order, then claim order within the answer (the order
    the claims were imported in, which is their claim-id order), so the lists of claims only
    one run got right read the same for a whole run and for a cycle.
    """
    from .. import agreement  # scipy: loaded only when a comparison is asked for
    from .. import split as splits

    cycle_id = store.cycle_id(db, cycle) if cycle is not None else None
    with store.read_snapshot(db):  # both tables and the split from one state of the store
        base = store.claim_table(db, baseline.id, cycle_id)
        new = store.claim_table(db, run.id, cycle_id)
        sp = splits.current(db)
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
    keys = [base.keys[i] for i in ia.tolist()]
    human, old, newj = base.human[ia], base.judge[ia], new.judge[ib]
    result = agreement.compare_judge_runs(human, old, newj, keys)
    # Pending answers (labeled after the split was last brought up to date) count as holdout:
    # while sealed nobody could read them, so they are as unseen as the holdout itself.
    held = set(sp.holdout) | set(sp.pending)
    in_holdout = np.array([k.split("/", 1)[0] in held for k in keys], dtype=bool)
    parts = {}
    for name, mask in (("holdout", in_holdout), ("tuning", ~in_holdout)):
        part_keys = [k for k, m in zip(keys, mask.tolist(), strict=True) if m]
        parts[name] = _part(name, human[mask], old[mask], newj[mask], part_keys)
    return LabComparison(
        baseline.name, run.name, unresolved, result, cycle, parts["holdout"], parts["tuning"], sp.used
    )


@dataclass(frozen=True, slots=True)
class ComparisonRow:
    """One row of the table against every run sharing labeled claims with a run."""

    baseline: str
    shared: int
    comparison: LabComparison | None


def compare_with_all(db: Database, run: store.JudgeRun, cycle: str | None = None) -> list[ComparisonRow]:
    """The run against every run sharing human-labeled claims with it, most shared first."""
    return [
        ComparisonRow(o.run.name, o.shared, compare_runs(db, run, o.run, cycle))
        for o in baseline_options(db, run, cycle)
    ]


def comparison_table(rows: list[ComparisonRow]) -> list[dict[str, Any]]:
    """Display rows: holdout first, then tuning, each with the paired counts and p."""
    out = []
    for row in rows:
        c = row.comparison
        rec: dict[str, Any] = {"baseline": row.baseline, "shared labeled claims": row.shared}
        for name in ("holdout", "tuning"):
            part = None if c is None else getattr(c, name)
            label = "holdout" if name == "holdout" else "tuning (seen)"
            rec[f"{label}: claims"] = None if part is None else part.result.n_claims
            rec[f"{label}: new right / old right"] = (
                "" if part is None else f"{len(part.result.only_b_right)} / {len(part.result.only_a_right)}"
            )
            rec[f"{label}: p"] = "" if part is None else p_value(part.p)
            rec[f"{label}: agreement old → new"] = (
                ""
                if part is None
                else (f"{pct(part.result.agreement_a.value)} → {pct(part.result.agreement_b.value)}")
            )
        out.append(rec)
    return out


def part_rows(comp: LabComparison) -> list[dict[str, str]]:
    """One row per figure, one column per part (the holdout first, then the tuning claims):
    every figure as text in the one format (percent with one decimal, p as in the dashboard).
    Figures down the side keep the table narrow; each part's sentence is `part_readings`."""
    parts = _parts(comp)
    figures = [k for k in parts[0] if k not in ("claims", "reading")]
    return [{"figure": f, **{p["claims"]: p[f] for p in parts}} for f in figures]


def part_readings(comp: LabComparison) -> list[str]:
    """Each part's plain sentence, named by its part."""
    return [f"{p['claims']}: {p['reading']}" for p in _parts(comp)]


def _parts(comp: LabComparison) -> list[dict[str, str]]:
    rows = []
    for part, title in (
        (comp.holdout, "holdout (never seen)"),
        (comp.tuning, "tuning (seen while revising)"),
    ):
        if part is None:
            rows.append(
                {
                    "claims": title,
                    "n": "0",
                    "agreement old": "",
                    "agreement new": "",
                    "difference (95% CI)": "",
                    "kappa old → new": "",
                    "new right, old wrong": "",
                    "old right, new wrong": "",
                    "paired test": "",
                    "reading": "no claims in this part",
                }
            )
            continue
        r, d = part.result, part.difference
        interval = (
            ""
            if d.ci_low is None or d.ci_high is None
            else (f" ({points(d.ci_low, unit='')} to {points(d.ci_high)})")
        )
        rows.append(
            {
                "claims": title,
                "n": f"{r.n_claims:,}",
                "agreement old": pct(r.agreement_a.value),
                "agreement new": pct(r.agreement_b.value),
                "difference (95% CI)": points(d.difference) + interval,
                "kappa old → new": f"{num(r.kappa_a.value)} → {num(r.kappa_b.value)}",
                "new right, old wrong": f"{len(r.only_b_right):,}",
                "old right, new wrong": f"{len(r.only_a_right):,}",
                "paired test": f"exact McNemar {p_value(part.p)}",
                "reading": part.sentence(),
            }
        )
    return rows
