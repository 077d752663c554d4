"""The agreement report: every figure of the judge against humans, and the flag, computed one way.

`agreement_report` assembles it from columns (one entry per claim, or per reviewer's verdict):
the figures of `agreement`, the design-based estimates of `estimation`, the flag's rules of
`decisions` and the flag of `flag`; pure, no store.  Its text is `reporttext.format_report`.

The report of one scope (a judge run, optionally one cycle) is `scope_report`, which CLI `stats`,
the dashboard and a cycle's frozen snapshot all call: the claims come from the one final-label
reader (`store.claim_table`), human–human agreement and the human ceiling from the reviewers'
blind labels, the pipeline's corrected grounding score from `estimation`.

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

from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from . import agreement, decisions, estimation, final_label, planning, split, store
from . import assessment as assessments
from .agreement import (
    POSITIVE,
    BootstrapInterval,
    ClassMetrics,
    Direction,
    Estimate,
    HumanHumanAgreement,
    KappaResult,
    SampleSize,
    WeightedAgreement,
    optional_float,
)
from .assessment import Assessment
from .flag import Flag, PopulationEstimates, Thresholds, decide_flag
from .reporttext import format_report
from .store import Database
from .vocab import LABELS

DEFAULT_THRESHOLDS = Thresholds()


@dataclass(frozen=True, slots=True)
class Report:
    n_claims: int
    n_answers: int
    confusion: np.ndarray
    agreement: Estimate
    agreement_bootstrap: BootstrapInterval
    kappa: KappaResult
    kappa_bootstrap: BootstrapInterval
    per_class: dict[str, ClassMetrics]
    direction: Direction
    ac1: float | None
    sample_size: SampleSize
    weighted: WeightedAgreement | None
    thresholds: Thresholds
    flag: Flag
    disagreeing_claims: tuple[str, ...]
    # Filled by the caller, who knows the store: claims left out for lack of a final human
    # label, and the reviewers' agreement among themselves.
    unresolved_claims: tuple[str, ...] = ()
    human_human: HumanHumanAgreement | None = None
    labels: tuple[str, ...] = field(default=LABELS)
    # The design-based estimates, the flag's rules with their bounds, P(agreement >= target) and
    # the thresholds as the rules used them (capped by the human ceiling).
    estimates: PopulationEstimates | None = None
    rules: decisions.Decision | None = None
    prob_at_least_target: float | None = None
    prob_withheld: str | None = None  # why no chance is given (`decisions.chance_withheld`)
    effective_thresholds: decisions.CappedThresholds | None = None
    human_ceiling: decisions.HumanCeiling | None = None
    # Filled by the caller: human-human agreement on the final (post-reveal) verdicts, shown beside
    # the blind one; the pipeline's corrected grounding score (calibration.report).
    human_human_post_reveal: HumanHumanAgreement | None = None
    pipeline: dict[str, Any] | None = None
    # Unresolved and disagreeing claims of the sealed holdout: counted, their ids withheld
    # (`report._hide_sealed`).
    sealed_unresolved: int = 0
    sealed_disagreeing: int = 0

    @property
    def n_unresolved(self) -> int:
        return len(self.unresolved_claims) + self.sealed_unresolved

    # What the figures compare the judge with: "per_reviewer" (every reviewer's blind verdict, one
    # row per (claim, reviewer), where claims have several reviewers) or "final_label" (the
    # unanimous or adjudicated label per claim); n_labels counts the rows.  With the per-reviewer
    # basis the caller adds the final-label view beside it (a secondary figure).
    basis: str = "final_label"
    n_labels: int | None = None
    final_label_view: dict[str, Any] | None = None
    # Why labeling ended, so the final reading was taken (a lead's closing, or nothing left to label).
    labeling_end: decisions.LabelingEnd | None = None

    def _rule(self, name: str) -> decisions.RuleResult | None:
        return None if self.rules is None else next((r for r in self.rules.rules if r.rule == name), None)

    def to_dict(self, judge_run: str | None = None) -> dict[str, Any]:
        """Every figure as JSON.  The raw (unweighted) figures keep the keys they always had; the
        design-based estimate of each sits beside it as ``estimated``, the flag's rule as ``rule``
        with the ``bound_used``."""
        est = self.estimates
        agreement: dict[str, Any] = self.agreement.to_dict()
        kappa: dict[str, Any] = self.kappa.to_dict()
        dirn: dict[str, Any] = self.direction.to_dict()
        target = (
            self.thresholds.agreement_target
            if self.effective_thresholds is None
            else self.effective_thresholds.agreement_target
        )
        for part, name, est_dict in (
            (agreement, "agreement", None if est is None else est.agreement.to_dict()),
            (kappa, "kappa", None if est is None else est.kappa.to_dict()),
            (dirn, "direction", None if est is None else est.direction.to_dict()),
        ):
            rule = self._rule(name)
            part["estimated"] = est_dict
            part["bound_used"] = None if rule is None else rule.bound_used
            part["rule"] = None if rule is None else rule.to_dict()
        agreement["basis"] = self.basis
        agreement["prob_at_least_target"] = optional_float(self.prob_at_least_target)
        agreement["prob_withheld"] = self.prob_withheld
        agreement["prob_sentence"] = decisions.prob_sentence(
            self.prob_at_least_target, target, self.prob_withheld
        )
        hh = None if self.human_human is None else self.human_human.to_dict()
        post = self.human_human_post_reveal
        return {
            "judge_run": judge_run,
            "scope": {
                "population": None if est is None else est.population,
                "equal_probability": None if est is None else est.equal_probability,
            },
            "n_claims": self.n_claims,
            "n_answers": self.n_answers,
            "n_labels": self.n_claims if self.n_labels is None else self.n_labels,
            "n_unresolved": self.n_unresolved,
            "n_disagreeing": len(self.disagreeing_claims) + self.sealed_disagreeing,
            "unresolved_claims": list(self.unresolved_claims),
            "pipeline": self.pipeline,
            "agreement": agreement,
            "agreement_final_label": self.final_label_view,
            "agreement_bootstrap": self.agreement_bootstrap.to_dict(),
            "agreement_weighted": None if self.weighted is None else self.weighted.to_dict(),
            "kappa": kappa,
            "kappa_bootstrap": self.kappa_bootstrap.to_dict(),
            "ac1": optional_float(self.ac1),
            "confusion": {
                "labels": list(self.labels),
                "rows": "human",
                "columns": "judge",
                "matrix": [[int(x) for x in row] for row in self.confusion],
            },
            "per_class": {k: v.to_dict() for k, v in self.per_class.items()},
            "direction": dirn,
            "sample_size": self.sample_size.to_dict(),
            "human_human": hh,
            "human_human_post_reveal": None if post is None else post.to_dict(),
            "human_ceiling": None if self.human_ceiling is None else self.human_ceiling.to_dict(),
            "disagreeing_claims": list(self.disagreeing_claims),
            "thresholds": self.thresholds.to_dict(),
            "thresholds_used": (
                None if self.effective_thresholds is None else self.effective_thresholds.to_dict()
            ),
            "flag": {**self.flag.to_dict(), "rules": None if self.rules is None else self.rules.to_dict()},
            "labeling_closed": (
                None
                if self.labeling_end is None or self.labeling_end.closed_by is None
                else self.labeling_end.to_dict()
            ),
        }

    def to_text(
        self,
        judge_run: str | None = None,
        *,
        notes: Sequence[str] = (),
        max_ids: int = 12,
        assessed: Assessment | None = None,
    ) -> str:
        """A plain report a lead can paste into a message; ``notes`` go under the title."""
        return format_report(self, judge_run, notes=notes, max_ids=max_ids, assessed=assessed)


def _first_seen(cluster: np.ndarray) -> tuple[np.ndarray, int]:
    """Cluster labels renumbered 0, 1, ... in order of first appearance, and their number."""
    if cluster.size == 0:
        return cluster, 0
    top = np.maximum.accumulate(cluster)
    if cluster[0] == 0 and (np.diff(top) <= 1).all():
        return cluster, int(top[-1]) + 1  # already so numbered (every label in 0..top used)
    _, first, inverse = np.unique(cluster, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inverse.reshape(-1)], int(first.size)


def agreement_report(
    human: np.ndarray | Sequence[int],
    judge: np.ndarray | Sequence[int],
    cluster: np.ndarray | Sequence[int],
    keys: Sequence[str],
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    *,
    weights: np.ndarray | None = None,
    bootstrap: int = 2000,
    seed: int | None = 0,
    confidence: float = 0.95,
    kappa_half_width: float = 0.10,
    label_rank: np.ndarray | None = None,
    stratum: np.ndarray | Sequence[Any] | None = None,
    population: Mapping[Any, int] | None = None,
    population_text: str | None = None,
    ceiling: decisions.HumanCeiling | None = None,
    per_reviewer: bool = False,
    available: int | None = None,
    closed: bool = False,
    end: decisions.LabelingEnd | None = None,
) -> Report:
    """Every judge-vs-human figure of the labeled claims, the design-based estimates and the flag.

    Answers are the clusters of the bootstrap; ``bootstrap`` = 0 skips the resampling.

    ``per_reviewer``: each entry is one reviewer's verdict on a claim (`final_label.per_reviewer`),
    so a claim's key repeats once per reviewer; every figure is then over (claim, reviewer) pairs,
    clustered by answer like claims are, and the claim lists name each claim once.  ``available``: the
    scope's claims without a label, the most "how many more" can ask for.  ``closed``: labeling has
    ended (nothing is left a cycle could draw), so the final reading is taken
    (`decisions.final_reading`); ``end``: why it ended, a lead's closing with the reading taken then
    (`decisions.LabelingEnd`; implies ``closed``).

    ``human`` and ``judge`` are indices into ``LABELS``; ``cluster`` labels each claim's answer
    (any integers: they are numbered in order of first appearance, so the same claims in the same
    order give the same resamples);
    ``keys`` are the claim keys; ``weights`` (1/pi per claim) or None.

    The design-based estimates (:class:`PopulationEstimates`) use ``stratum`` (per claim, constant
    within an answer) with ``population`` {stratum: N_h answers} when given, described by
    ``population_text``; else the ``weights`` (with-replacement variance); else the labeled
    answers as a simple random sample.  ``label_rank`` (per claim, any sortable time of labeling)
    orders the answers for the flag's running rules; without it, order of first appearance.
    ``ceiling`` (:func:`decisions.human_ceiling`) caps the thresholds.
    """
    h = np.asarray(human, dtype=np.int64)
    j = np.asarray(judge, dtype=np.int64)
    c = np.asarray(cluster, dtype=np.int64)
    n = h.size
    if h.ndim != 1 or j.shape != h.shape or c.shape != h.shape or len(keys) != n:
        raise ValueError("human, judge, cluster and keys must be one-dimensional and of one length")
    k = len(LABELS)
    for name, codes in (("human", h), ("judge", j)):
        if n and (codes.min() < 0 or codes.max() >= k):
            raise ValueError(f"{name} verdict indices must lie in 0..{k - 1}")
    if not per_reviewer and len(set(keys)) != n:
        seen: set[str] = set()
        dup = next(key for key in keys if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        raise ValueError(f"claim {dup!r} appears twice")
    w = None
    if weights is not None:
        w = np.asarray(weights, dtype=float)
        if w.shape != h.shape:
            raise ValueError("give a weight for every claim or for none")
        bad = ~(np.isfinite(w) & (w > 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"claim {keys[i]!r}: weight must be positive and finite, got {w[i]}")
        if n == 0:
            w = None
    rank = None
    if label_rank is not None:
        rank = np.asarray(label_rank, dtype=float).reshape(-1)
        if rank.shape != h.shape:
            raise ValueError("give a label rank for every claim or for none")
    strata = None
    if stratum is not None:
        strata = np.asarray(stratum, dtype=object).reshape(-1)
        if strata.shape != h.shape or population is None:
            raise ValueError("give a stratum for every claim, and the population N_h of each stratum")
    c, n_answers = _first_seen(c)
    return _report(
        h,
        j,
        c,
        n_answers,
        keys,
        w,
        thresholds,
        bootstrap=bootstrap,
        seed=seed,
        confidence=confidence,
        kappa_half_width=kappa_half_width,
        label_rank=rank,
        stratum=strata,
        population=population,
        population_text=population_text,
        ceiling=ceiling,
        per_reviewer=per_reviewer,
        available=available,
        end=end if end is not None else decisions.NOTHING_LEFT if closed else None,
    )


def _final_readings(
    ar: decisions.RuleResult,
    dr: decisions.RuleResult,
    estimates: PopulationEstimates,
    tabs: np.ndarray,
    design: dict[str, Any],
    alpha: float,
    confidence: float,
    end: decisions.LabelingEnd,
) -> tuple[decisions.RuleResult, decisions.RuleResult]:
    """The agreement and direction rules after the final reading (`decisions.final_reading`): the
    design-based intervals at the final levels, the lower end of one and the upper end of the other
    (`decisions.final_levels`; the report's own interval where a level is the report's), or the
    bounds taken when a lead closed labeling (`end`)."""
    if end.agreement is not None and end.direction is not None:
        return (
            decisions.final_reading(ar, *end.agreement, end),
            decisions.final_reading(dr, *end.direction, end),
        )

    def agreement(level: float) -> estimation.Estimate:
        if abs(level - confidence) <= 1e-12:
            return estimates.agreement
        return estimation.agreement_estimate(tabs, confidence=level, fpc=False, **design)

    low_level, high_level = decisions.final_levels(alpha, "agreement")
    level = decisions.final_levels(alpha, "direction")[0]
    ed = estimation.direction_estimate(tabs, confidence=level, fpc=False, **design).difference
    return (
        decisions.final_reading(ar, agreement(low_level).ci_low, agreement(high_level).ci_high, end),
        decisions.final_reading(dr, ed.ci_low, ed.ci_high, end),
    )


def _report(
    human: np.ndarray,
    judge: np.ndarray,
    cluster: np.ndarray,
    n_answers: int,
    keys: Sequence[str],
    w: np.ndarray | None,
    thresholds: Thresholds,
    *,
    bootstrap: int,
    seed: int | None,
    confidence: float,
    kappa_half_width: float,
    label_rank: np.ndarray | None = None,
    stratum: np.ndarray | None = None,
    population: Mapping[Any, int] | None = None,
    population_text: str | None = None,
    ceiling: decisions.HumanCeiling | None = None,
    per_reviewer: bool = False,
    available: int | None = None,
    end: decisions.LabelingEnd | None = None,
) -> Report:
    """The report from validated columns (clusters numbered 0.. in order of first appearance);
    ``end``: labeling ended, so the final reading is taken."""
    n = human.size
    k = len(LABELS)
    per_cluster = agreement.cluster_tables(cluster, human, judge, n_answers, k=k)
    table = per_cluster.sum(axis=0).reshape(k, k).astype(np.int64)
    agree = human == judge
    pos = agreement.label_index(POSITIVE)
    key_array = np.empty(n, dtype=object)
    key_array[:] = keys
    is_lenient = (judge == pos) & (human != pos)
    is_strict = (human == pos) & (judge != pos)

    def claims(mask: np.ndarray) -> tuple[str, ...]:
        picked = key_array[mask].tolist()
        return tuple(dict.fromkeys(picked)) if per_reviewer else tuple(picked)

    disagreeing = claims(~agree)
    lenient_claims = claims(is_lenient)
    strict_claims = claims(is_strict)

    pct = agreement.percent_agreement(table, confidence=confidence)
    kap = agreement.cohens_kappa(table, confidence=confidence)
    dirn = agreement.direction(table, lenient_claims=lenient_claims, strict_claims=strict_claims)

    # Answer bootstrap: below estimation.MIN_BOOTSTRAP_ANSWERS answers its interval is withheld
    # (estimation.bootstrap_interval says why), so the resamples are not even drawn.
    tensors = [per_cluster]
    if w is not None:
        tensors.append(agreement.cluster_tables(cluster, human, judge, n_answers, weights=w, k=k))
    use_boot = bootstrap > 0 and n_answers >= estimation.MIN_BOOTSTRAP_ANSWERS
    boots = agreement.bootstrap_tables(tensors, resamples=bootstrap, seed=seed) if use_boot else []

    def interval(
        stat: Callable[[np.ndarray], np.ndarray], idx: int, why_not: str | None
    ) -> BootstrapInterval:
        if bootstrap <= 0:
            return BootstrapInterval(None, None, 0, 0, seed, "no resamples asked for (bootstrap 0)")
        if why_not is not None:
            return BootstrapInterval(None, None, 0, 0, seed, why_not)
        if not use_boot:
            iv = estimation.bootstrap_interval(np.zeros(0), n_answers, confidence=confidence)
            return BootstrapInterval(None, None, 0, 0, seed, iv.reason)
        iv = estimation.bootstrap_interval(stat(boots[idx]), n_answers, confidence=confidence)
        return BootstrapInterval(iv.ci_low, iv.ci_high, bootstrap, iv.undefined, seed, iv.reason)

    # No resampling interval where the full-sample figure is degenerate: every resample repeats it.
    n_agree = int(agree.sum())
    agree_why = (
        "no claims"
        if n == 0
        else "every claim agrees"
        if n_agree == n
        else "no claim agrees"
        if n_agree == 0
        else None
    )
    agree_boot = interval(agreement.agreement_many, 0, agree_why)
    kappa_boot = interval(
        estimation.kappa_many,
        0,
        None
        if kap.ci_low is not None
        else "kappa has no analytic interval (undefined, or a standard error of 0)",
    )

    wres = None
    if w is not None:
        wi = interval(agreement.agreement_many, 1, agree_why)
        wres = WeightedAgreement(
            agreement.weighted_agreement(agree, w),
            wi.ci_low,
            wi.ci_high,
            pct.value,
            agreement.kish_effective_n(w),
        )

    # The design of the labeled answers, one value per answer (the first claim's: constant within).
    first = np.zeros(n_answers, dtype=np.int64)
    first[cluster[::-1]] = np.arange(n)[::-1]
    _, tabs = estimation.answer_tables(cluster, human, judge, k)
    answer_w: np.ndarray | None = None
    design: dict[str, Any]
    if stratum is not None and population is not None:
        answer_stratum = np.asarray(stratum, dtype=object)[first]
        design = {"stratum": answer_stratum, "population": population}
        labels_h, counts_h = np.unique(answer_stratum.astype(str), return_counts=True)
        n_h = dict(zip(labels_h.tolist(), counts_h.tolist(), strict=True))
        answer_w = np.array([population[h] / n_h[str(h)] for h in answer_stratum.tolist()], dtype=float)
    else:
        answer_w = None if w is None else w[first]
        design = {"weights": answer_w if answer_w is not None else np.ones(n_answers)}
    if answer_w is not None and (answer_w.size == 0 or np.ptp(answer_w) == 0):
        answer_w = None  # equal probabilities: the raw figures are the estimates
    # No finite-population correction: the flag asks how good the judge is, which labeling every
    # answer of a run still leaves uncertain (the estimates are those of the run; their variance is
    # that of the process behind it).
    estimates = PopulationEstimates(
        population_text,
        estimation.agreement_estimate(tabs, confidence=confidence, fpc=False, **design),
        estimation.kappa_estimate(tabs, confidence=confidence, fpc=False, **design),
        estimation.direction_estimate(tabs, confidence=confidence, fpc=False, **design),
        answer_w is None,
    )

    # The flag's rules on the answers in labeling order (decisions.py), weights aligned to that order.
    ys, ms = decisions.answer_sums(cluster, agree.astype(float), label_rank=label_rank)
    ds, _ = decisions.answer_sums(cluster, is_lenient.astype(float) - is_strict, label_rank=label_rank)
    wo = None
    claim_w = None
    if answer_w is not None:
        claim_w = answer_w[cluster]
        wo = decisions.answer_sums(cluster, claim_w, label_rank=label_rank)[0] / ms
    capped = decisions.capped_thresholds(thresholds.agreement_target, thresholds.kappa_floor, ceiling)
    target = capped.agreement_target
    # The rules test the claim-level figures the report prints (sum y / sum m), answers the unit.
    alpha = thresholds.alpha
    ar = decisions.agreement_rule(ys, ms, target, alpha=alpha, weights=wo, confidence=confidence)
    dr = decisions.direction_rule(ds, ms, alpha=alpha, weights=wo, confidence=confidence)
    if end is not None and n:
        ar, dr = _final_readings(ar, dr, estimates, tabs, design, alpha, confidence, end)
    ek = estimates.kappa
    kr = decisions.kappa_rule(ek.value, ek.ci_high, capped.kappa_floor)
    rules = decisions.decide(ar, dr, kr)
    ea = estimates.agreement
    prob = estimation.agreement_chance(tabs, target, fpc=False, **design)
    if prob is None:
        prob = decisions.prob_at_least_target_design(ea.value, ea.se, target, ea.df)
    if prob is None:
        prob = (
            decisions.prob_at_least_target(n_agree, n, target)
            if claim_w is None
            else decisions.prob_at_least_target_weighted(agree.astype(float), claim_w, target)
        )
    withheld = decisions.chance_withheld(len(ms), int(sum(ms))) if n else None
    if withheld is not None:
        prob = None
    more_target = decisions.more_claims_to_decide(
        ys,
        ms,
        target,
        alpha=alpha,
        weights=wo,
        rule=ar,
        available=available,
        labels_per_claim=n / max(len(set(keys)) if per_reviewer else n, 1),
        seed=0 if seed is None else seed,
    )
    more_kappa = decisions.more_claims_for_kappa(
        ek.se,
        n,
        half_width=kappa_half_width,
        confidence=confidence,
        withheld=ek.reason if ek.ci_low is None else None,
    )
    size = SampleSize(
        kappa_half_width,
        more_kappa.more_claims,
        more_target.more_claims,
        more_kappa.sentence,
        more_target.sentence,
        more_target.low,
        more_target.high,
        more_target.available,
    )
    flag = decide_flag(
        rules=rules,
        estimates=estimates,
        raw_agreement=pct.value,
        direction=dirn,
        thresholds=capped,
        n_claims=n,
        more_target=more_target,
        prob=prob,
        prob_withheld=withheld,
        disagreeing=disagreeing,
        ceiling=ceiling,
        unit="(claim, reviewer) verdicts" if per_reviewer else "claims",
    )
    return Report(
        n_claims=len(set(keys)) if per_reviewer else n,
        n_answers=n_answers,
        confusion=table,
        agreement=pct,
        agreement_bootstrap=agree_boot,
        kappa=kap,
        kappa_bootstrap=kappa_boot,
        per_class=agreement.per_class_metrics(table),
        direction=dirn,
        ac1=agreement.gwet_ac1(table) if n else None,
        sample_size=size,
        weighted=wres,
        thresholds=thresholds,
        flag=flag,
        disagreeing_claims=disagreeing,
        estimates=estimates,
        rules=rules,
        prob_at_least_target=prob,
        prob_withheld=withheld,
        effective_thresholds=capped,
        human_ceiling=ceiling,
        basis="per_reviewer" if per_reviewer else "final_label",
        n_labels=n,
        labeling_end=end,
    )


# --------------------------------------------------------------------------------------------
# The report of a scope
# --------------------------------------------------------------------------------------------

# Answer-bootstrap resamples at every size: the interval's Monte Carlo error at 2,000 is
# about 0.01 on a 95% bound, well below the figures' own uncertainty.
BOOTSTRAP = 2000

GROUNDING_ASSUMPTION = (
    "the judge's error rates measured on the labeled claims hold for the unlabeled "
    "claims of the same run (true by design for answers sampled from the run; "
    "checked between pipeline versions that both have labels)"
)


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
    # `agreement.human_human_agreement` reads.
    given = np.flatnonzero(verdict >= 0)
    claim = labels.claim[given]
    if claim.size == 0 or np.bincount(claim).max() < 2:
        return None
    given = given[np.lexsort((labels.reviewer[given], claim))]
    hh = agreement.human_human_agreement(
        labels.claim[given], labels.reviewer[given], verdict[given], labels.reviewers
    )
    return replace(hh, basis=basis)


def _all_supported(table: store.ClaimTable) -> np.ndarray:
    """Per answer of the table: did the judge call every one of its claims SUPPORTED?"""
    pos = agreement.label_index(agreement.POSITIVE)
    not_supported = np.bincount(
        table.answer, weights=(table.judge != pos).astype(float), minlength=len(table.answer_ids)
    )
    return np.asarray(not_supported == 0)


def _represented(strata: np.ndarray, labeled: np.ndarray) -> tuple[dict[Hashable, int], list[str]]:
    """N_h of the strata that hold a labeled answer, and the names of those that hold none."""
    population = estimation.stratum_counts(strata)
    have = set(strata[labeled].tolist())
    missing = sorted(str(h) for h in population if h not in have)
    return {h: n for h, n in population.items() if h in have}, missing


def collapse_empty_strata(strata: np.ndarray, labeled: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The run's post-strata with every stratum that holds no labeled answer collapsed, and what was.

    A stratum's label starts with its base ("all-SUPPORTED" or "not", before the first "|"); an empty
    stratum is merged with every stratum of its base into the base itself, and when a whole base has no
    labeled answer, everything into one stratum, "the run".  Collapsing post-strata that hold no
    sample keeps the estimate one for the whole run, at the price of a small bias where the merged
    strata were sampled at different rates (Kalton & Flores-Cervantes 2003, J Off Stat 19(2):81,
    sec. 3.1 on collapsing cells; Cochran 1977, sec. 5A.12).  Returns the strata unchanged and no
    sentence when none is empty.
    """
    out = np.asarray(strata, dtype=object).copy()
    said: list[str] = []
    for level in ("base", "run"):
        have = set(out[labeled].tolist())
        empty = sorted({str(h) for h in out.tolist() if h not in have})
        if not empty or not have:
            break
        if level == "base":
            bases = {h.split("|")[0].strip() for h in empty}
            on = np.array([str(h).split("|")[0].strip() in bases for h in out.tolist()], dtype=bool)
            new = np.array([str(h).split("|")[0].strip() for h in out[on].tolist()], dtype=object)
        else:
            on, new = np.ones(out.size, dtype=bool), np.full(int(out.size), "the run", dtype=object)
        said.append(f"{', '.join(empty)} into {', '.join(sorted(set(new.tolist())))}")
        out[on] = new
    return out, said


def _run_design(
    db: Database,
    run: store.JudgeRun,
    table: store.ClaimTable,
    facts: store.scope.AnswerFacts,
    labeled_answer: np.ndarray,
) -> tuple[np.ndarray, dict[Hashable, int], str]:
    """Stratum per answer of the run, N_h per stratum with labels, and the population sentence."""
    stratified = store.scope.run_was_stratified(db, run.id)
    strata = estimation.run_strata(_all_supported(table), facts.category if stratified else None)
    plans = store.cycles.run_plan_strata(db, run.id)
    strata = planning.run_strata_with_plans(strata, table.answer_ids, plans)
    strata, collapsed = collapse_empty_strata(strata, labeled_answer)
    population, missing = _represented(strata, labeled_answer)
    n_all = len(table.answer_ids)
    if not missing:
        text = f"all {n_all:,} answers of the run"
        if collapsed:
            text += f" (strata with no labeled answer collapsed: {'; '.join(collapsed)})"
    else:
        # A stratum without a labeled answer cannot be estimated; the figures speak for the rest.
        text = (
            f"the {sum(population.values()):,} of the run's {n_all:,} answers in strata with labeled "
            f"answers (none labeled in: {', '.join(missing)})"
        )
    return strata, population, text


def _cycle_design(
    db: Database, cycle_id: int, table: store.ClaimTable, labeled_answer: np.ndarray
) -> tuple[np.ndarray, dict[Hashable, int], str]:
    """Stratum per answer of the cycle (its inclusion probability), N_h = n_h / pi_h, and the sentence."""
    cd = store.scope.cycle_design(db, cycle_id)
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
        text += (
            f"; only its {sum(population[h] for h in represented):,} answers in strata with labeled "
            f"answers are represented (none labeled in: {', '.join(missing)})"
        )
    return strata, {h: population[h] for h in represented}, text


def _grounding(
    f_all: np.ndarray,
    answer_all: np.ndarray,
    labeled: np.ndarray,
    y_lab: np.ndarray,
    strata: np.ndarray,
    mask: np.ndarray | None = None,
    label: str | None = None,
) -> estimation.GroundingEstimate:
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
        f_all[mask],
        answer_all[mask],
        y_lab[lab],
        f_all[lab],
        answer_all[lab],
        stratum=strata[answer_all[lab]],
        population=population,
        fpc=False,
        label=label,
    )


def _grounding_dict(g: estimation.GroundingEstimate) -> dict[str, Any]:
    out = g.to_dict()
    out["supported_rate"]["n_answers"] = g.estimate.n_answers
    return out


def pipeline_report(
    table: store.ClaimTable, facts: store.scope.AnswerFacts, strata: np.ndarray
) -> dict[str, Any]:
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
        return {
            str(v): _grounding(f_all, answer_all, labeled, y_all, strata, per_claim == v, label)
            for v in sorted(set(per_claim.tolist()))
        }

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


def _transfer(
    table: store.ClaimTable, versions: list[str | None], a: str, b: str, strata: np.ndarray
) -> dict[str, Any] | None:
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
        sides.append(
            {
                "y": (table.human[lab] == pos).astype(float),
                "f": (table.judge[lab] == pos).astype(float),
                "answer": table.answer[lab],
                "n_run_answers": int(answers.size),
                "stratum": strata[table.answer[lab]],
                "population": population,
            }
        )
    t = estimation.transfer_test(sides[0], sides[1])
    return {
        "statistic": t.statistic,
        "df": t.df,
        "p_value": t.p_value,
        "differences": {"judge_not_supported": t.differences[0], "judge_supported": t.differences[1]},
        "reason": t.reason,
    }


def scope_report(
    db: Database,
    run: store.JudgeRun,
    cycle_id: int | None = None,
    *,
    thresholds: Thresholds | None = None,
    bootstrap: int = BOOTSTRAP,
    seed: int = 0,
    closing: decisions.LabelingEnd | None = None,
) -> ScopeReport:
    """The agreement report of `run` over every labeled claim, or within one cycle.

    `closing`: the lead closing labeling now (`closing.close_labeling` takes the final reading from
    this report), in place of the stored closure.

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
    facts: store.scope.AnswerFacts | None = None
    strata: np.ndarray
    population: Mapping[Hashable, int]
    if cycle_id is None:
        facts = store.scope.answer_facts(db, table.answer_ids)
        strata, population, text = _run_design(db, run, table, facts, labeled_answer)
    else:
        strata, population, text = _cycle_design(db, cycle_id, table, labeled_answer)
    claims_used = np.unique(idx)
    claim_rank = store.scope.label_order(db, run.id, table.claim_pk[claims_used])
    rank = claim_rank[np.searchsorted(claims_used, idx)]
    labels = table.labels
    ceiling = decisions.human_ceiling(
        labels.claim,
        labels.reviewer,
        labels.blind,
        table.judge,
        cluster=table.answer,
        seed=seed,
        epsilon=thresholds.alt_epsilon,
        names=labels.reviewers,
    )
    left = store.cycles.claims_left(db, run.id, table if cycle_id is None else None)
    end = _labeling_end(db, run, cycle_id, left, closing)
    report = agreement_report(
        human,
        judge,
        cluster,
        keys,
        thresholds,
        weights=weight if oversampled else None,
        bootstrap=max(0, bootstrap),
        seed=seed,
        label_rank=rank,
        stratum=strata[table.answer[idx]],
        population=population,
        population_text=text,
        ceiling=ceiling,
        per_reviewer=rows is not None,
        # "How many more" counts on what a next cycle can draw from the run, whatever the scope
        # (nothing, once its labeling is closed).
        available=0 if end is not None and end.closed_by is not None else left,
        end=end,
    )
    view = _final_label_view(table, data, strata, population, thresholds, report if rows is None else None)
    pipeline = pipeline_report(table, facts, strata) if facts is not None else None
    report = replace(
        report,
        unresolved_claims=data.unresolved,
        human_human=human_human(labels, "blind"),
        human_human_post_reveal=human_human(labels, "post-reveal"),
        pipeline=pipeline,
        final_label_view=view,
    )
    sealed = frozenset(split.sealed_claim_keys(db, run))
    report = _hide_sealed(report, sealed)
    return ScopeReport(run, cycle_id, table, data, report, oversampled, text, sealed)


def _labeling_end(
    db: Database, run: store.JudgeRun, cycle_id: int | None, left: int, closing: decisions.LabelingEnd | None
) -> decisions.LabelingEnd | None:
    """Why the run's labeling ended, so the run's report takes the final reading: a lead closed it
    (the reading taken then), or nothing is left a cycle could draw; None while it goes on, and
    always within a cycle (its figures speak for its own pool, which has no such end)."""
    if cycle_id is not None:
        return None
    if closing is not None:
        return closing
    closure = store.labeling_closure(db, run.id)
    if closure is not None:
        return decisions.LabelingEnd.from_closure(closure.closed_by, closure.closed_at, closure.reading)
    return decisions.NOTHING_LEFT if left == 0 else None


def _reviewer_rows(table: store.ClaimTable) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(claim, reviewer, verdict) per reviewer's verdict (`final_label.per_reviewer`) where some claim in
    scope has several reviewers; None where none has (the final label is then each claim's one verdict)."""
    lab = table.labels
    verdict = np.where(lab.blind >= 0, lab.blind, lab.final)
    if not final_label.several_reviewers(lab.claim, verdict):
        return None
    adjudicated = np.where(table.status == final_label.ADJUDICATED_CODE, table.human, -1)
    return final_label.per_reviewer(len(table), lab.claim, lab.reviewer, lab.blind, lab.final, adjudicated)


def listed_verdicts(table: store.ClaimTable, keys: Collection[str]) -> dict[str, tuple[str, str]]:
    """(human, judge) cells of the claims a list shows, on the basis the figures count: the final
    human label; where claims in scope have several reviewers (`_reviewer_rows`), every reviewer's
    verdict on the claim, distinct, joined by ' / ' (so a claim a reviewer disputed, or reconciled,
    is listed with the verdicts behind it). A claim with no human verdict gets no cells."""
    wanted = set(keys)
    at = {k: i for i, k in enumerate(table.keys) if k in wanted}
    rows = _reviewer_rows(table)
    if rows is None:
        claim, verdict = np.flatnonzero(table.human >= 0), table.human[table.human >= 0]
    else:
        claim, _reviewer, verdict = rows
    humans: dict[int, list[str]] = {}
    listed = set(at.values())
    for c, v in zip(claim.tolist(), verdict.tolist(), strict=True):
        if c in listed:
            humans.setdefault(c, []).append(LABELS[v])
    return {
        k: (" / ".join(dict.fromkeys(humans[i])), LABELS[int(table.judge[i])])
        for k, i in at.items()
        if i in humans
    }


def _final_label_view(
    table: store.ClaimTable,
    data: store.StatsColumns,
    strata: np.ndarray,
    population: Mapping[Hashable, int],
    thresholds: Thresholds,
    report: Report | None,
) -> dict[str, Any]:
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
        report = agreement_report(
            data.human,
            data.judge,
            data.cluster,
            data.keys,
            thresholds,
            bootstrap=0,
            stratum=strata[answers] if pop else None,
            population=pop or None,
        )
    est = report.estimates
    return {
        "basis": "final_label",
        "n_claims": report.n_claims,
        "n_left_out": len(data.unresolved),
        "agreement": report.agreement.to_dict(),
        "agreement_estimated": None if est is None else est.agreement.to_dict(),
        "kappa": report.kappa.value,
        "direction": {"lenient": report.direction.lenient, "strict": report.direction.strict},
        "note": "claims with a unanimous or adjudicated label only: disputed claims are left out, "
        "which favours the judge",
    }


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
    disagreeing = kept(report.disagreeing_claims)
    direction = replace(
        report.direction,
        lenient_claims=kept(report.direction.lenient_claims),
        strict_claims=kept(report.direction.strict_claims),
    )
    return replace(
        report,
        flag=replace(report.flag, reasons=reasons),
        direction=direction,
        disagreeing_claims=disagreeing,
        unresolved_claims=unresolved,
        sealed_unresolved=report.sealed_unresolved + len(report.unresolved_claims) - len(unresolved),
        sealed_disagreeing=report.sealed_disagreeing + len(report.disagreeing_claims) - len(disagreeing),
    )


def inspectable_calls(
    db: Database, run_id: int, *, failed_only: bool = False, hidden: Collection[str] = ()
) -> list[str]:
    """Answers of lab run `run_id` whose stored call (prompt with the claims, the reply with
    verdicts) a lead may open: never one of the sealed holdout (`split.sealed_answer_ids`),
    nor one of `hidden` (the lead's own open work, `roles.open_work`). By id; only the failed
    calls when `failed_only`."""
    sealed = split.sealed_answer_ids(db)
    return [
        a
        for a in store.lab.call_answer_ids(db, run_id, failed_only=failed_only)
        if a not in sealed and a not in hidden
    ]


def assess(
    db: Database,
    run: store.JudgeRun,
    cycle_id: int | None = None,
    *,
    cycle: str | None = None,
    bootstrap: int | None = None,
    seed: int = 0,
) -> tuple[ScopeReport, Assessment]:
    """The scope's report (`scope_report`) and its assessment (`assessment.of_report`), computed
    once: what every screen and command shows for `run` within `cycle` (None: the whole run)."""
    scoped = scope_report(
        db, run, cycle_id, bootstrap=BOOTSTRAP if bootstrap is None else bootstrap, seed=seed
    )
    assessed = assessments.of_report(
        scoped.report.to_dict(run.name), scope=assessments.scope_words(cycle), run=run.name
    )
    return scoped, assessed


def stats_json(scoped: ScopeReport, a: Assessment, cycle: str | None) -> dict[str, Any]:
    """What `stats --json` prints and the API's `stats()` returns: every figure of the report,
    the scope, and the assessment the screens show (`assessment`)."""
    out = dict(a.source)
    out["cycle"] = cycle
    out["n_unlabeled"] = scoped.n_unlabeled
    out["assessment"] = a.to_dict()
    return out
