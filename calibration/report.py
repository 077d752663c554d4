"""The agreement report of one scope (a judge run, optionally one cycle), computed one way.

CLI `stats`, the dashboard and a cycle's frozen snapshot all call `scope_report`: the claims
come from the one final-label reader (`store.claim_table`), the figures from
`agreement.agreement_report_arrays`, human–human agreement and the human ceiling from the
reviewers' blind labels, the pipeline's corrected grounding score from `estimation`.

Which population the figures estimate (`scope.population`):
* a judge run: all answers of the run.  The labeled answers are post-stratified on the design
  strata the judge's verdicts define for every answer (all claims SUPPORTED or not), crossed with
  the answer's category when some cycle of the run was stratified on it (`estimation.run_strata`):
  every design the tool draws samples uniformly within these strata, whichever cycles labeled them.
  A planned cycle samples uniformly within its own strata, which the run's are crossed with
  (`planning.run_strata_with_plans`).
* one cycle: the pool the cycle drew from (for a cycle that skipped labeled answers, the answers
  not labeled before it), from the cycle's own inclusion probabilities: answers drawn with the
  same probability pi form a stratum with N_h = n_h / pi_h pool answers.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from . import agreement, decisions, estimation, final_label, planning, split, store
from .agreement import HumanHumanAgreement, Report, Thresholds
from .store import Database
from .store import lab as lab_store
from .store import scope as store_scope

# Answer-bootstrap resamples at every size: the interval's Monte Carlo error at 2,000 is
# about 0.01 on a 95% bound, well below the figures' own uncertainty.
BOOTSTRAP = 2000

GROUNDING_ASSUMPTION = ("the judge's error rates measured on the labeled claims hold for the unlabeled "
                        "claims of the same run (true by design for answers sampled from the run; "
                        "checked between pipeline versions that both have labels)")


@dataclass(frozen=True, slots=True)
class ScopeReport:
    run: store.JudgeRun
    cycle_id: int | None
    table: store.ClaimTable  # every judged claim in scope
    data: store.StatsColumns  # the resolved ones, as the statistics took them
    report: Report
    oversampled: bool  # the cycle's answers had unequal inclusion probabilities
    population: str | None = None  # what the estimates are for ("all 150 answers of the run")
    sealed: frozenset[str] = frozenset()  # keys of the sealed holdout claims, left out of claim lists

    @property
    def n_unlabeled(self) -> int:
        return self.data.unlabeled


def human_human(labels: store.ReviewerColumns, basis: str = "blind") -> HumanHumanAgreement | None:
    """Agreement among reviewers on the claims two or more of them labeled; None when none is.

    ``basis`` "blind": the verdicts given before the judge was revealed (what people say on their
    own); "post-reveal": the final ones, which a reviewer may have changed to the judge's.
    """
    verdict = labels.blind if basis == "blind" else labels.final
    # The reviewers' verdicts in claim order, then reviewer: the order of the records
    # `agreement.human_human_agreement` would read.
    given = np.flatnonzero(verdict >= 0)
    claim = labels.claim[given]
    if claim.size == 0 or np.bincount(claim).max() < 2:
        return None
    given = given[np.lexsort((labels.reviewer[given], claim))]
    hh = agreement.human_human_agreement_arrays(labels.claim[given], labels.reviewer[given],
                                                verdict[given], labels.reviewers)
    return replace(hh, basis=basis)


def _all_supported(table: store.ClaimTable) -> np.ndarray:
    """Per answer of the table: did the judge call every one of its claims SUPPORTED?"""
    pos = agreement.label_index(agreement.POSITIVE)
    not_supported = np.bincount(table.answer, weights=(table.judge != pos).astype(float),
                                minlength=len(table.answer_ids))
    return not_supported == 0


def _represented(strata: np.ndarray, labeled: np.ndarray) -> tuple[dict[Hashable, int], list[str]]:
    """N_h of the strata that hold a labeled answer, and the names of those that hold none."""
    population = estimation.stratum_counts(strata)
    have = set(strata[labeled].tolist())
    missing = sorted(str(h) for h in population if h not in have)
    return {h: n for h, n in population.items() if h in have}, missing


def _run_design(db: Database, run: store.JudgeRun, table: store.ClaimTable, facts: store_scope.AnswerFacts,
                labeled_answer: np.ndarray) -> tuple[np.ndarray, dict[Hashable, int], str]:
    """Stratum per answer of the run, N_h per stratum with labels, and the population sentence."""
    stratified = store_scope.run_was_stratified(db, run.id)
    strata = estimation.run_strata(_all_supported(table), facts.category if stratified else None)
    plans = store.cycles.run_plan_strata(db, run.id)
    strata = planning.run_strata_with_plans(strata, table.answer_ids, plans)
    population, missing = _represented(strata, labeled_answer)
    n_all = len(table.answer_ids)
    if not missing:
        text = f"all {n_all:,} answers of the run"
    else:
        # A stratum without a labeled answer cannot be estimated; the figures speak for the rest.
        text = (f"the {sum(population.values()):,} of the run's {n_all:,} answers in strata with labeled "
                f"answers (none labeled in: {', '.join(missing)})")
    return strata, population, text


def _cycle_design(db: Database, cycle_id: int, table: store.ClaimTable, labeled_answer: np.ndarray
                  ) -> tuple[np.ndarray, dict[Hashable, int], str]:
    """Stratum per answer of the cycle (its inclusion probability), N_h = n_h / pi_h, and the sentence."""
    cd = store_scope.cycle_design(db, cycle_id)
    prob = dict(zip(cd.answer_ids, cd.inclusion_prob.tolist(), strict=True))
    pi = np.array([prob[a] for a in table.answer_ids], dtype=float)
    strata = np.array([f"pi={p:.12g}" for p in pi.tolist()], dtype=object)
    drawn = estimation.stratum_counts(strata)
    pi_of = dict(zip(strata.tolist(), pi.tolist(), strict=True))
    population: dict[Hashable, int] = {h: max(n, round(n / pi_of[str(h)])) for h, n in drawn.items()}
    represented, missing = _represented(strata, labeled_answer)
    pool = sum(population.values())
    if cd.include_labeled:
        text = f"the {pool:,} answers of the pool cycle {cd.name} drew from"
    else:
        text = f"the {pool:,} answers not labeled before cycle {cd.name}"
    if cd.holdout:
        text += " (holdout answers)"
    if missing:
        text += (f"; only its {sum(population[h] for h in represented):,} answers in strata with labeled "
                 f"answers are represented (none labeled in: {', '.join(missing)})")
    return strata, {h: population[h] for h in represented}, text


def _grounding(f_all: np.ndarray, answer_all: np.ndarray, labeled: np.ndarray, y_lab: np.ndarray,
               strata: np.ndarray, mask: np.ndarray | None = None,
               label: str | None = None) -> estimation.GroundingEstimate:
    """Corrected grounding over the claims in ``mask`` (all if None), post-stratified as the run."""
    if mask is None:
        mask = np.ones(f_all.size, dtype=bool)
    lab = labeled[mask[labeled]]
    answers = np.unique(answer_all[mask])
    population, _ = _represented(strata[answers], np.isin(answers, answer_all[lab]))
    if not population:
        population = estimation.stratum_counts(strata[answers])
    keep = np.isin(strata[answer_all[lab]], np.array(list(population), dtype=object))
    lab = lab[keep]
    # No finite-population correction: an answer with labeled claims is no census of its claims,
    # nor a reviewer's verdict of what reviewers would say (see estimation.grounding_two_phase).
    return estimation.corrected_grounding(
        f_all[mask], answer_all[mask], y_lab[lab], f_all[lab], answer_all[lab],
        stratum=strata[answer_all[lab]], population=population, fpc=False, label=label)


def _grounding_dict(g: estimation.GroundingEstimate) -> dict[str, Any]:
    out = g.to_dict()
    out["supported_rate"]["n_answers"] = g.estimate.n_answers
    return out


def pipeline_report(table: store.ClaimTable, facts: store_scope.AnswerFacts,
                    strata: np.ndarray) -> dict[str, Any]:
    """The pipeline's grounding score: the judge's own SUPPORTED rate over all its judged claims and the
    share humans would call SUPPORTED (two-phase, `estimation.corrected_grounding`), overall, per
    category and per pipeline version, with the differences between versions and the transfer check."""
    pos = agreement.label_index(agreement.POSITIVE)
    f_all = (table.judge == pos).astype(float)
    rows = _reviewer_rows(table)
    label = None
    if rows is None:
        y_all = (table.human == pos).astype(float)
        labeled = np.flatnonzero(table.agreed())
    else:
        # Every blind verdict counts: a claim's soft label is the share of its reviewers saying SUPPORTED.
        claim, _, verdict = rows
        n_rows = np.bincount(claim, minlength=len(table))
        said = np.bincount(claim, weights=(verdict == pos).astype(float), minlength=len(table))
        labeled = np.flatnonzero(n_rows > 0)
        y_all = np.divide(said, n_rows, out=np.zeros(len(table)), where=n_rows > 0)
        label = "soft labels (share of each claim's reviewers saying SUPPORTED)"
    answer_all = table.answer
    overall = _grounding(f_all, answer_all, labeled, y_all, strata, label=label)
    out = _grounding_dict(overall)
    out["assumption"] = GROUNDING_ASSUMPTION

    def split(values: list[str | None]) -> dict[str, estimation.GroundingEstimate]:
        per_claim = np.array(["(none)" if v is None else str(v) for v in values], dtype=object)[answer_all]
        return {str(v): _grounding(f_all, answer_all, labeled, y_all, strata, per_claim == v, label)
                for v in sorted(set(per_claim.tolist()))}

    out["by_category"] = {k: _grounding_dict(g) for k, g in split(facts.category).items()}
    versions: dict[str, estimation.GroundingEstimate] = {}
    if any(v is not None for v in facts.pipeline_version):
        versions = split(facts.pipeline_version)
    out["by_pipeline_version"] = {k: _grounding_dict(g) for k, g in versions.items()}
    diffs = []
    names = [k for k in versions if k != "(none)"]
    for a, b in zip(names[1:], names[:-1], strict=True):
        d = estimation.grounding_difference(versions[a], versions[b])
        item: dict[str, Any] = {"a": a, "b": b, **d.to_dict()}
        item["transfer_test"] = _transfer(table, facts.pipeline_version, a, b, strata)
        diffs.append(item)
    out["pipeline_differences"] = diffs
    return out


def _transfer(table: store.ClaimTable, versions: list[str | None], a: str, b: str,
              strata: np.ndarray) -> dict[str, Any] | None:
    """Do the judge's error rates measured on version a hold on version b? (`estimation.transfer_test`)."""
    pos = agreement.label_index(agreement.POSITIVE)
    per_claim = np.array([None if v is None else str(v) for v in versions], dtype=object)[table.answer]
    sides = []
    for v in (a, b):
        lab = np.flatnonzero(table.agreed() & (per_claim == v))
        if lab.size == 0:
            return None
        answers = np.unique(table.answer[per_claim == v])
        population, _ = _represented(strata[answers], np.isin(answers, table.answer[lab]))
        sides.append({"y": (table.human[lab] == pos).astype(float),
                      "f": (table.judge[lab] == pos).astype(float),
                      "answer": table.answer[lab], "n_run_answers": int(answers.size),
                      "stratum": strata[table.answer[lab]], "population": population})
    t = estimation.transfer_test(sides[0], sides[1])
    return {"statistic": t.statistic, "df": t.df, "p_value": t.p_value,
            "differences": {"judge_not_supported": t.differences[0], "judge_supported": t.differences[1]},
            "reason": t.reason}


def scope_report(db: Database, run: store.JudgeRun, cycle_id: int | None = None, *,
                 thresholds: Thresholds | None = None, bootstrap: int = BOOTSTRAP,
                 seed: int = 0) -> ScopeReport:
    """The agreement report of `run` over every labeled claim, or within one cycle.

    The raw figures are those of the labeled claims; beside them every figure the flag uses is
    estimated for the population the scope represents (see the module docstring), and the flag's
    rules read the answers in the order they were labeled.  Within a cycle drawn with unequal
    inclusion probabilities the Hajek-weighted agreement (1 / pi per answer) is shown as well.
    """
    if thresholds is None:
        thresholds = store.load_thresholds(db)
    table = store.claim_table(db, run.id, cycle_id)
    data = table.resolved(reviewer_labels="none")
    rows = _reviewer_rows(table)
    if rows is None:
        idx = np.flatnonzero(table.agreed())
        human, judge, cluster, keys = data.human, data.judge, data.cluster, data.keys
        weight = data.weight
    else:
        idx, _, human = rows
        judge, cluster, keys = table.judge[idx], table.answer[idx], [table.keys[i] for i in idx.tolist()]
        weight = None if table.weight is None else table.weight[idx]
    oversampled = weight is not None and np.unique(weight).size > 1
    labeled_answer = np.zeros(len(table.answer_ids), dtype=bool)
    labeled_answer[table.answer[idx]] = True
    facts: store_scope.AnswerFacts | None = None
    strata: np.ndarray
    population: Mapping[Hashable, int]
    if cycle_id is None:
        facts = store_scope.answer_facts(db, table.answer_ids)
        strata, population, text = _run_design(db, run, table, facts, labeled_answer)
    else:
        strata, population, text = _cycle_design(db, cycle_id, table, labeled_answer)
    claims_used = np.unique(idx)
    claim_rank = store_scope.label_order(db, run.id, table.claim_pk[claims_used])
    rank = claim_rank[np.searchsorted(claims_used, idx)]
    labels = table.labels
    ceiling = decisions.human_ceiling(labels.claim, labels.reviewer, labels.blind, table.judge,
                                      cluster=table.answer, seed=seed, epsilon=thresholds.alt_epsilon,
                                      names=labels.reviewers)
    report = agreement.agreement_report_arrays(
        human, judge, cluster, keys, thresholds,
        weights=weight if oversampled else None, bootstrap=max(0, bootstrap), seed=seed,
        label_rank=rank, stratum=strata[table.answer[idx]], population=population,
        population_text=text, ceiling=ceiling, per_reviewer=rows is not None, available=data.unlabeled)
    view = _final_label_view(table, data, strata, population, thresholds, report if rows is None else None)
    pipeline = pipeline_report(table, facts, strata) if facts is not None else None
    report = replace(report, unresolved_claims=data.unresolved, human_human=human_human(labels, "blind"),
                     human_human_post_reveal=human_human(labels, "post-reveal"), pipeline=pipeline,
                     final_label_view=view)
    sealed = frozenset(split.sealed_claim_keys(db, run))
    report = _hide_sealed(report, sealed)
    return ScopeReport(run, cycle_id, table, data, report, oversampled, text, sealed)


def _reviewer_rows(table: store.ClaimTable) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(claim, reviewer, verdict) per reviewer's verdict (`final_label.per_reviewer`) where some claim in
    scope has several reviewers; None where none has (the final label is then each claim's one verdict)."""
    lab = table.labels
    verdict = np.where(lab.blind >= 0, lab.blind, lab.final)
    if not final_label.several_reviewers(lab.claim, verdict):
        return None
    adjudicated = np.where(table.status == final_label.ADJUDICATED_CODE, table.human, -1)
    return final_label.per_reviewer(len(table), lab.claim, lab.reviewer, lab.blind, lab.final, adjudicated)


def _final_label_view(table: store.ClaimTable, data: store.StatsColumns, strata: np.ndarray,
                      population: Mapping[Hashable, int], thresholds: Thresholds,
                      report: Report | None) -> dict[str, Any]:
    """The unanimous-or-adjudicated view: agreement, kappa and direction on the claims with a final label.

    ``report`` is the headline report when that already is this view (one reviewer per claim).  Else
    it is computed on the final labels (no bootstrap; the population is that of the headline, its
    strata without a final-labeled answer left out), a secondary figure that leaves out the disputed
    claims and so favours the judge.
    """
    if report is None:
        idx = np.flatnonzero(table.agreed())
        answers = table.answer[idx]
        have = set(strata[answers].tolist())
        pop = {h: n for h, n in population.items() if h in have}
        report = agreement.agreement_report_arrays(
            data.human, data.judge, data.cluster, data.keys, thresholds, bootstrap=0,
            stratum=strata[answers] if pop else None, population=pop or None)
    est = report.estimates
    return {"basis": "final_label", "n_claims": report.n_claims, "n_left_out": len(data.unresolved),
            "agreement": report.agreement.to_dict(),
            "agreement_estimated": None if est is None else est.agreement.to_dict(),
            "kappa": report.kappa.value,
            "direction": {"lenient": report.direction.lenient, "strict": report.direction.strict},
            "note": "claims with a unanimous or adjudicated label only: disputed claims are left out, "
                    "which favours the judge"}


def _hide_sealed(report: Report, sealed: frozenset[str]) -> Report:
    """The report without a claim id of the sealed holdout: the flag's reasons, the disagreement
    list, the lenient and strict claims and the unresolved ones (counted, ids withheld).

    The one filter every output of a report goes through (`stats`, `stats --json`, the API's
    `stats()`, the dashboard, a cycle's snapshot). The figures still count every claim: only
    the ids a lead could read while revising the judge prompt are withheld, so the holdout
    stays a fair test of the revision.
    """
    if not sealed:
        return report

    def kept(keys: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(k for k in keys if k not in sealed)

    reasons = tuple(replace(r, claim_ids=kept(r.claim_ids)) for r in report.flag.reasons)
    unresolved = kept(report.unresolved_claims)
    direction = replace(report.direction, lenient_claims=kept(report.direction.lenient_claims),
                        strict_claims=kept(report.direction.strict_claims))
    return replace(report, flag=replace(report.flag, reasons=reasons), direction=direction,
                   disagreeing_claims=kept(report.disagreeing_claims), unresolved_claims=unresolved,
                   sealed_unresolved=report.sealed_unresolved + len(report.unresolved_claims)
                   - len(unresolved))


def inspectable_calls(db: Database, run_id: int, *, failed_only: bool = False,
                      hidden: Collection[str] = ()) -> list[str]:
    """Answers of lab run `run_id` whose stored call (prompt with the claims, the reply with
    verdicts) a lead may open: never one of the sealed holdout (`split.sealed_answer_ids`),
    nor one of `hidden` (the lead's own open work, `roles.open_work`). By id; only the failed
    calls when `failed_only`."""
    sealed = split.sealed_answer_ids(db)
    return [a for a in lab_store.call_answer_ids(db, run_id, failed_only=failed_only)
            if a not in sealed and a not in hidden]
