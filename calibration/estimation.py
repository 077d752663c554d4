"""Design-based estimates for a judge run: what the labeled answers say about the whole run.

Pure functions over arrays (numpy and scipy only); no I/O.

Which population each estimate represents
-----------------------------------------
The sampling unit is the *answer*; its claims are correlated (one retrieval, one writer), so
every variance below is computed from answer-level sums, never from claims as if independent.

The run is cut into *design strata* that the judge's verdicts define for every answer of the
run, labeled or not: "all-SUPPORTED" (the judge called every claim of the answer SUPPORTED)
vs "not", crossed with the answer's category when some cycle stratified on it
(:func:`run_strata` builds these labels).  Every design the tool draws (random, stratified,
failures-first, and a later cycle that skips answers already labeled) samples uniformly
*within* each such stratum, and so does the union of all its cycles: k1 answers drawn
uniformly and then k2 more drawn uniformly from the rest are a uniform sample of k1 + k2.
Post-stratifying on these strata, with N_h answers of the run and n_h of them labeled,
therefore estimates the figure for *all answers of the run*, whichever cycles labeled them.

* :func:`ratio_estimate`, :func:`agreement_estimate`, :func:`direction_estimate`,
  :func:`kappa_estimate`: claim-level rates (agreement, lenient and strict shares, Cohen's
  kappa of the population confusion table) over the resolved claims of all answers of the run.
  Given only one cycle's answers and that cycle's pool as the population, they estimate the
  cycle's pool instead (e.g. "the answers not labeled before this cycle"): the population is
  whatever ``population`` counts.
* :func:`corrected_grounding`: the share of *all judged claims* of the run that humans would
  call SUPPORTED, from the judge's verdict on every claim and human labels on a sample.

Equal-probability designs (one stratum, or strata with equal weights N_h/n_h) give exactly the
raw, unweighted figures.

Intervals are withheld (``ci_low = ci_high = None`` with a ``reason``) rather than invented:
with fewer than two labeled answers, with a stratum of the run that has no labeled answer,
with zero estimated variance, or where the simulation in ``bench/sim_estimates.py`` showed the
interval does not hold its level (kappa with few claims outside the majority class).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

import numpy as np

# scipy.special rather than scipy.stats: the same distribution functions at a fraction of the
# import time (as in calibration.agreement).
from scipy.special import chdtrc, ndtri, stdtr, stdtrit

# Index of SUPPORTED in a k x k table (rows human, columns judge), as in agreement.LABELS.
POSITIVE_INDEX: Final = 0
# Fewest labeled answers for a bootstrap percentile interval (see bootstrap_interval).
MIN_BOOTSTRAP_ANSWERS: Final = 10
# Fewest claims outside the majority class, in each rater's margin, for a kappa interval
# (see kappa_estimate; the coverage simulation in bench/sim_estimates.py chose it).
MIN_MINORITY_CLAIMS: Final = 5
# Fewest labeled answers for a kappa interval (same simulation).
MIN_KAPPA_ANSWERS: Final = 15
_ZERO: Final = 1e-12
# At or below this many labeled answers the agreement interval is a bootstrap-t over answers
# (`bootstrap_t_draws`): with 12-30 answers of 10-30 claims the Wilson-at-effective-size interval
# covered 92-95%, its lower end above the truth in 4-6% of simulated runs (the answers' rates are
# skewed near 1, which a symmetric pivot misses); bench/sim_flag.py.
SMALL_SAMPLE_ANSWERS: Final = 60
# ... and whose answers average at least this many claims.  At 12-30 answers (600 runs a cell, truth
# 85% and 92%) the bootstrap-t covered 96.8-99.6% with answers of 1-5 claims, 95.2-99.0% with 4-10,
# 95.2-97.3% with 8-16 and 94.3-96.0% with 10-30; the Wilson form 95.0-97.7%, 93.2-95.6%, 92.2-96.0%
# and 90.7-95.2%: each where it holds its level better.
SMALL_SAMPLE_CLAIMS: Final = 10
BOOTSTRAP_T_RESAMPLES: Final = 1999

ArrayLike = np.ndarray | Sequence[Any]


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Estimate:
    """A design-based estimate.  ``ci_low``/``ci_high`` are None exactly when ``reason`` says why."""

    value: float | None
    se: float | None
    ci_low: float | None
    ci_high: float | None
    n_answers: int
    n_claims: int
    method: str
    reason: str | None = None
    # The t distribution's degrees of freedom behind the interval, for a test that must agree with
    # it (`direction_estimate`); None where no t interval was drawn.
    df: float | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "se": self.se,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "n_answers": self.n_answers,
            "n_claims": self.n_claims,
            "method": self.method,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class DirectionEstimate:
    """Lenient and strict shares of the population's claims, their difference and its one-sided tests.

    ``p_lenient`` tests H0: lenient share <= strict share against "the judge is lenient";
    ``p_strict`` the mirror.  None where the difference has no standard error.
    """

    lenient: Estimate
    strict: Estimate
    difference: Estimate
    p_lenient: float | None
    p_strict: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "lenient_share": self.lenient.to_dict(),
            "strict_share": self.strict.to_dict(),
            "difference": self.difference.to_dict(),
            "p_lenient": self.p_lenient,
            "p_strict": self.p_strict,
        }


@dataclass(frozen=True, slots=True)
class Interval:
    """An interval or, when ``reason`` is set, none."""

    ci_low: float | None
    ci_high: float | None
    reason: str | None
    resamples: int = 0
    undefined: int = 0


@dataclass(frozen=True, slots=True)
class GroundingEstimate:
    """The corrected grounding score beside the judge's own SUPPORTED rate."""

    estimate: Estimate
    judge_rate: float | None
    n_judged: int
    n_labeled: int
    lam: float | None = None  # PPI++ only: the power-tuning parameter used

    def to_dict(self) -> dict[str, Any]:
        e = self.estimate
        n_eff = None
        if e.value is not None and e.se and 0 < e.value < 1:
            n_eff = e.value * (1 - e.value) / e.se**2  # claims an independent sample would need
        return {
            "judge_supported_rate": self.judge_rate,
            "supported_rate": {
                "value": e.value,
                "ci_low": e.ci_low,
                "ci_high": e.ci_high,
                "se": e.se,
                "method": e.method,
                "reason": e.reason,
                "n_effective": n_eff,
            },
            "n_judged": self.n_judged,
            "n_labeled": self.n_labeled,
        }


@dataclass(frozen=True, slots=True)
class TransferTest:
    """Wald test that P(human SUPPORTED | judge verdict v) is equal in two versions, for each v."""

    statistic: float | None
    df: int
    p_value: float | None
    differences: tuple[float | None, float | None]  # (judge not SUPPORTED, judge SUPPORTED), A - B
    reason: str | None = None


# --------------------------------------------------------------------------------------------
# The design: strata, weights, variance groups
# --------------------------------------------------------------------------------------------


def run_strata(all_supported: ArrayLike, category: ArrayLike | None = None) -> np.ndarray:
    """Design-stratum label of every answer: "all-SUPPORTED"/"not", crossed with category if given.

    ``all_supported[i]`` is whether the judge called every claim of answer i SUPPORTED (the
    failures-first design's "passing" stratum).  Give ``category`` when some cycle of the run
    stratified on it; None categories form their own stratum, as in ``sampling.stratified_sample``.
    Returns an object array of strings, for ``np.unique`` and for ``population`` keys.
    """
    ok = np.asarray(all_supported, dtype=bool).reshape(-1)
    base = np.where(ok, "all-SUPPORTED", "not")
    if category is None:
        return base.astype(object)
    cat = list(category)
    if len(cat) != ok.size:
        raise ValueError("all_supported and category differ in length")
    return np.array([f"{b}|{'' if c is None else c}" for b, c in zip(base, cat, strict=True)], dtype=object)


def stratum_counts(labels: ArrayLike) -> dict[Hashable, int]:
    """N_h: how many answers of the run each stratum label holds (feed to ``population``)."""
    values, counts = np.unique(np.asarray(labels, dtype=object), return_counts=True)
    return {v: int(c) for v, c in zip(values.tolist(), counts.tolist(), strict=True)}


@dataclass(frozen=True, slots=True)
class _Design:
    weight: np.ndarray  # N_h / n_h per labeled answer (1.0 everywhere when all weights are equal)
    group: np.ndarray  # variance group of each labeled answer (strata after collapsing)
    fpc: np.ndarray  # 1 - n_g / N_g per group (0 where the group is a census; 1 with no fpc)
    n_groups: int
    reason: str | None  # why no variance can be estimated, if so
    collapsed: tuple[str, ...]

    @property
    def df(self) -> int:
        return int(self.weight.size - self.n_groups)


def _design(
    stratum: ArrayLike | None,
    population: Mapping[Hashable, int] | int | None,
    n_answers: int,
    *,
    weights: ArrayLike | None = None,
    fpc: bool = True,
) -> tuple[_Design | None, str | None]:
    """The labeled answers' design, or (None, reason) when the population cannot be estimated.

    Three ways to describe it:
    * ``stratum`` per labeled answer + ``population`` {label: N_h}: stratified without
      replacement, weights N_h/n_h, finite-population correction per stratum;
    * ``stratum`` None + ``population`` an int N: one stratum (simple random sample of n of N);
    * ``weights`` (1/pi per labeled answer): Hajek weighting with the with-replacement variance
      (no finite-population correction, which needs the strata), one variance group.

    Collapse rule for a stratum with one labeled answer and N_h > 1, or any N_h without the
    finite-population correction (its variance is not estimable, Cochran 1977 sec. 5A.12): it is
    pooled, for the variance only, with the stratum whose inclusion probability n_h/N_h is closest
    (ties: the one with more labeled answers, then the first label in sorted order); this repeats
    until no such singleton is left.  The
    point estimate keeps every stratum's own weight.  Pooling strata that the design sampled at
    the same rate keeps the collapsed variance's upward bias small, since those are the strata a
    design treats alike (the same judge status under failures-first).  When a single variance
    group with one answer remains, the interval is withheld.
    """
    if weights is not None:
        w = np.asarray(weights, dtype=float).reshape(-1)
        if w.size != n_answers:
            raise ValueError("give one weight per labeled answer")
        if w.size and not (np.isfinite(w) & (w > 0)).all():
            raise ValueError("weights must be positive and finite")
        if w.size and np.ptp(w) == 0:
            w = np.ones_like(w)
        reason = None if n_answers >= 2 else "fewer than two labeled answers"
        return _Design(w, np.zeros(n_answers, dtype=np.int64), np.ones(1), 1, reason, ()), None
    if stratum is None:
        if population is None:
            raise ValueError("give the population: N answers, or N_h per stratum with the strata")
        if not isinstance(population, int | np.integer):
            raise ValueError("with no strata, population is the number of answers N")
        labels = np.zeros(n_answers, dtype=object)
        pop: dict[Hashable, int] = {0: int(population)}
    else:
        labels = np.asarray(stratum, dtype=object).reshape(-1)
        if labels.size != n_answers:
            raise ValueError("give one stratum label per labeled answer")
        if not isinstance(population, Mapping):
            raise ValueError("with strata, population maps each stratum label to its N_h answers")
        pop = dict(population)
    keys = sorted(pop, key=str)
    index = {h: i for i, h in enumerate(keys)}
    # Code the labels through their few distinct values: one dict lookup per stratum, not per answer.
    _, first, inverse = np.unique(labels.astype(str), return_index=True, return_inverse=True)
    distinct = labels[first].tolist()
    unknown = {h for h in distinct if h not in index}
    if unknown:
        raise ValueError(f"strata not in the population: {', '.join(sorted(map(str, unknown)))}")
    lookup = np.array([index[h] for h in distinct], dtype=np.int64)
    code = lookup[inverse.reshape(-1)]
    big_n = np.array([pop[h] for h in keys], dtype=float)
    small_n = np.bincount(code, minlength=len(keys)).astype(float)
    if (small_n > big_n).any():
        bad = [str(keys[i]) for i in np.flatnonzero(small_n > big_n)]
        raise ValueError(f"more labeled answers than the population holds in: {', '.join(bad)}")
    empty = [str(keys[i]) for i in np.flatnonzero((small_n == 0) & (big_n > 0))]
    if n_answers == 0:
        return None, "no labeled answers"
    if empty:
        return None, (
            f"no labeled answer in stratum {', '.join(empty)}: the labels do not represent "
            "those answers of the population"
        )
    used = small_n > 0
    w_h = np.where(used, big_n / np.where(used, small_n, 1), 0.0)
    if np.ptp(w_h[used]) == 0:
        w_h = np.where(used, 1.0, 0.0)  # equal weights: compute on raw counts, bit for bit
    group_of = np.arange(len(keys))
    collapsed: list[str] = []
    while True:
        g_n = np.bincount(group_of[used], weights=small_n[used], minlength=len(keys))
        g_big = np.bincount(group_of[used], weights=big_n[used], minlength=len(keys))
        # Without the finite-population correction a one-answer stratum has a variance to estimate
        # even when it holds the stratum's only answer: pool it too.
        lonely = [g for g in np.flatnonzero((g_n == 1) & ((g_big > 1) | (not fpc)))]
        live = np.flatnonzero(g_n > 0)
        if not lonely or live.size < 2:
            break
        g = int(lonely[0])
        g_prob = g_n / np.where(g_big > 0, g_big, 1)
        others = [int(o) for o in live if o != g]
        target = min(others, key=lambda o: (abs(g_prob[o] - g_prob[g]), -g_n[o], o))
        collapsed.append(f"{keys[g]} -> {keys[target]}")
        group_of[group_of == g] = target
    live = np.unique(group_of[used])
    renumber = np.full(len(keys), -1, dtype=np.int64)
    renumber[live] = np.arange(live.size)
    group = renumber[group_of[code]]
    g_n = np.bincount(group, minlength=live.size).astype(float)
    g_big = np.array([big_n[group_of == g].sum() for g in live])
    # Without the finite-population correction the variance is that of the process that produced
    # the population (a superpopulation view: "how good is this judge", not "how good was it on
    # these answers"), which a census of the run still leaves uncertain.
    fpc_g = 1.0 - g_n / g_big if fpc else np.ones(live.size)
    reason = None
    if n_answers < 2:
        reason = "fewer than two labeled answers"
    elif ((g_n == 1) & (fpc_g > 0)).any():
        reason = "a stratum has a single labeled answer and nothing to collapse it with"
    return _Design(w_h[code], group, fpc_g, int(live.size), reason, tuple(collapsed)), None


def _group_parts(design: _Design, z: np.ndarray) -> list[tuple[np.ndarray, int]]:
    """Each variance group's part of :func:`_total_var` (a p x p matrix for z of shape (n, p))
    with its degrees of freedom n_g - 1; groups of one answer have none."""
    z2 = z.reshape(z.shape[0], -1)
    out = []
    for g in range(design.n_groups):
        zg = z2[design.group == g]
        ng = zg.shape[0]
        if ng < 2:
            continue
        d = zg - zg.mean(axis=0)
        out.append((design.fpc[g] * ng / (ng - 1) * (d.T @ d), ng - 1))
    return out


def _total_var(design: _Design, z: np.ndarray) -> np.ndarray:
    """Variance (or covariance matrix, for z of shape (n, p)) of the estimated total sum_i z_i.

    V = sum_g (1 - f_g) n_g / (n_g - 1) sum_{i in g} (z_i - zbar_g)(z_i - zbar_g)',
    z_i = w_i u_i.  For a stratum of equal weights this is N_h^2 (1 - f_h) s^2_u,h / n_h
    (Cochran 1977, eq. 5.6 with 6.11); for a collapsed group it is the collapsed-strata
    estimator (Cochran sec. 5A.12).  Groups of one answer that are a census contribute 0.
    """
    p = z.reshape(z.shape[0], -1).shape[1]
    out = np.zeros((p, p))
    for part, _dof in _group_parts(design, z):
        out += part
    return out if z.ndim > 1 else out[:1, :1].reshape(())


def _satterthwaite_df(design: _Design, z: np.ndarray) -> float:
    """Effective degrees of freedom of the variance of sum_i z_i, the variance groups' parts V_g:

    df = (sum_g V_g)^2 / sum_g V_g^2 / (n_g - 1),   V_g as in :func:`_total_var`.

    Satterthwaite (1946), Biometrics Bulletin 2:110; Cochran (1977) sec. 5.4, eq. 5.16 (the
    effective df of a stratified variance).  It is at most n - (number of groups) (Cauchy-Schwarz)
    and smaller when a few groups carry the variance: a planned design puts most labels where the
    variance is but weights its thinly labeled strata heavily, and their few answers are what the
    variance estimate then rests on.  Korn & Graubard (1999), Analysis of Health Surveys, sec. 5.2,
    use it for the t quantile of a stratified sample's interval.
    """
    parts = _group_parts(design, z)
    v = np.array([float(part[0, 0]) for part, _ in parts])
    dof = np.array([d for _, d in parts], dtype=float)
    spread = float((v**2 / dof).sum()) if v.size else 0.0
    return float(v.sum() ** 2 / spread) if spread > 0 else float(design.df)


def _quantile(confidence: float, df: float) -> float:
    """Student t quantile with the design degrees of freedom: n - (number of variance groups), or
    the Satterthwaite df of the variance (:func:`_satterthwaite_df`) where the caller has it.

    Design df: Korn & Graubard (1990), Am Stat 44:270; Valliant, Dever & Kreuter (2018),
    Practical Tools for Designing and Weighting Survey Samples, sec. 3.5.  Tends to the normal
    quantile as the sample grows; at 10-40 answers it widens the interval enough to hold 95%.
    """
    return float(stdtrit(max(df, 1), 0.5 + confidence / 2))


def _dot(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """sum_i w_i x_i (over the first axis of x): a product and a sum, not BLAS, whose vector dot
    products took 16 ms on 20k answers on a busy two-core machine against 0.03 ms for this."""
    w = np.asarray(w, dtype=float)
    x = np.asarray(x, dtype=float)
    return cast(np.ndarray, (w.reshape(w.shape + (1,) * (x.ndim - 1)) * x).sum(axis=0))


def _clip(x: float, lo: float, hi: float) -> float:
    return float(min(hi, max(lo, x)))


def z_value(confidence: float) -> float:
    """The two-sided standard normal quantile z = Phi^-1((1 + confidence) / 2): 1.96 at 95%.

    Source: the normal quantile function (scipy.special.ndtri); every normal-theory interval in
    the package calls this one, so a confidence level means the same thing everywhere.
    """
    return float(ndtri(0.5 + confidence / 2))


def wilson_interval(successes: float, n: float, *, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval for a binomial proportion.

    With p = x/n and z the normal quantile:
    centre = (p + z^2/2n) / (1 + z^2/n),
    half   = z / (1 + z^2/n) * sqrt(p(1-p)/n + z^2/4n^2).

    Source: Wilson (1927), JASA 22:209-212; Newcombe (1998), Stat Med 17:857-872, method 3.
    It is the inversion of the score test, so it stays inside [0, 1] and is not degenerate at
    x = 0 or x = n, which matters for the 40-150 claim samples this tool sees.  Returns None
    for n = 0.
    """
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes {successes} outside [0, {n}]")
    z = z_value(confidence)
    p = successes / n
    z2n = z * z / n
    centre = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(p * (1 - p) / n + z2n / (4 * n))
    # At x = 0 (x = n) the lower (upper) bound is exactly 0 (1); float arithmetic leaves a residue.
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return lo, hi


# --------------------------------------------------------------------------------------------
# 1. Ratio estimates of claim-level rates
# --------------------------------------------------------------------------------------------


def ratio_estimate(
    y: ArrayLike,
    m: ArrayLike,
    stratum: ArrayLike | None = None,
    population: Mapping[Hashable, int] | int | None = None,
    *,
    weights: ArrayLike | None = None,
    confidence: float = 0.95,
    bounds: tuple[float, float] = (0.0, 1.0),
    method: str = "stratified ratio",
    fpc: bool = True,
    small_sample: bool = False,
) -> Estimate:
    """Combined (post-)stratified ratio estimate of a claim-level rate R = sum y / sum M over the population.

    Per labeled answer i: y_i (e.g. claims where judge and human agree) and M_i (its resolved
    claims), its stratum h with N_h answers in the population and n_h labeled (see
    :func:`_design` for the three ways to give the design):

        R_hat = X_hat^-1 sum_h (N_h/n_h) sum_{i in s_h} y_i,   X_hat = sum_h (N_h/n_h) sum_{i in s_h} M_i,
        V_hat(R_hat) = X_hat^-2 sum_h N_h^2 (1 - n_h/N_h) s^2_{e,h} / n_h,   e_i = y_i - R_hat M_i,

    the linearised (Taylor) variance of the combined ratio estimate.  ``fpc=False`` drops the
    finite-population factors (1 - n_h/N_h): the variance of the process behind the population.
    Interval R_hat +- t se with
    the design degrees of freedom (:func:`_quantile`), clipped to ``bounds``.
    Sources: Cochran, Sampling Techniques (3rd ed., 1977), sec. 6.11-6.12 (combined ratio
    estimate) and sec. 5A.9-5A.12 (post-stratification, collapsed strata); Sarndal, Swensson &
    Wretman, Model Assisted Survey Sampling (1992), sec. 5.6 and ch. 7.

    ``small_sample`` (the agreement's figure): at most :data:`SMALL_SAMPLE_ANSWERS` labeled answers of
    :data:`SMALL_SAMPLE_CLAIMS` or more claims on average get the bootstrap-t interval over answers
    instead (:func:`bootstrap_t_draws`, 1,999 resamples, seed 0).

    Withheld: no estimate when no labeled answer has a resolved claim or a stratum of the
    population has no labeled answer; no interval with fewer than two answers, a singleton
    stratum that cannot be collapsed, or zero estimated variance.
    """
    yy = np.asarray(y, dtype=float).reshape(-1)
    mm = np.asarray(m, dtype=float).reshape(-1)
    if yy.shape != mm.shape:
        raise ValueError("y and m differ in length")
    if (mm < 0).any():
        raise ValueError("claim counts m must be non-negative")
    n, n_claims = int(yy.size), int(mm.sum())
    design, why = _design(stratum, population, n, weights=weights, fpc=fpc)
    if design is None:
        return Estimate(None, None, None, None, n, n_claims, method, why)
    x_hat = float(_dot(design.weight, mm))
    if x_hat <= 0:
        return Estimate(None, None, None, None, n, n_claims, method, "no resolved claims")
    r_hat = float(_dot(design.weight, yy)) / x_hat
    if design.reason is not None:
        return Estimate(r_hat, None, None, None, n, n_claims, method, design.reason)
    z = design.weight * (yy - r_hat * mm)
    v = float(_total_var(design, z)) / x_hat**2
    if small_sample and n <= SMALL_SAMPLE_ANSWERS and n_claims >= SMALL_SAMPLE_CLAIMS * n and v > _ZERO**2:
        _, se, t = bootstrap_t_draws(yy, mm, design.weight, design.group, design.fpc)
        tail = (1 - confidence) / 2
        t_hi = float(np.quantile(t, 1 - tail, method="higher"))
        t_lo = float(np.quantile(t, tail, method="lower"))
        return Estimate(
            r_hat,
            se,
            _clip(r_hat - t_hi * se, *bounds) if math.isfinite(t_hi) else bounds[0],
            _clip(r_hat - t_lo * se, *bounds) if math.isfinite(t_lo) else bounds[1],
            n,
            n_claims,
            f"{method}; bootstrap-t over answers ({n} answers, at most {SMALL_SAMPLE_ANSWERS})",
            df=float(design.df),
        )
    return _with_interval(
        r_hat,
        v,
        design,
        n,
        n_claims,
        method,
        confidence,
        bounds,
        proportion=bounds == (0.0, 1.0),
        linearised=z,
    )


def bootstrap_t_draws(
    y: np.ndarray,
    m: np.ndarray,
    weight: np.ndarray,
    group: np.ndarray,
    fpc: np.ndarray,
    *,
    resamples: int = BOOTSTRAP_T_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float, np.ndarray]:
    """(R, se, t*): the ratio R = sum w y / sum w m, its linearised standard error and the bootstrap
    distribution of the studentised ratio t*_b = (R*_b - R) / se*_b.

    Resample b draws n_g answers with replacement within each variance group g (strata after
    collapsing; counts c_bi), R*_b = sum c w y / sum c w m, and se*_b is the same linearised standard
    error as R's, on the resample: se*^2 = sum_g (1 - f_g) n_g/(n_g - 1) sum_{i in g} c_i (z_i - zbar_g)^2
    / (sum c w m)^2, z_i = w_i (y_i - R*_b m_i), zbar_g = sum_{i in g} c_i z_i / n_g (:func:`_total_var`).
    Groups of one answer are kept as they are.  A resample with se* = 0 (every resampled answer at one
    rate) gets t* = +-inf by the sign of R*_b - R (0 when equal), so it widens the tail it falls in.
    The interval R - t*_(1 - a/2) se, R - t*_(a/2) se is the bootstrap-t (studentised) interval, which
    follows a skewed sampling distribution that a symmetric t or normal pivot misses: Davison & Hinkley
    (1997), Bootstrap Methods and their Application, sec. 5.2.1 (eq. 5.7), and sec. 3.7 for resampling
    clusters within strata; Efron & Tibshirani (1993), An Introduction to the Bootstrap, ch. 12.
    """
    rng = np.random.default_rng(seed)
    n = y.size
    counts = np.ones((resamples, n))
    groups = [np.flatnonzero(group == g) for g in np.unique(group)]
    for idx in groups:
        if idx.size >= 2:
            counts[:, idx] = rng.multinomial(idx.size, np.full(idx.size, 1.0 / idx.size), size=resamples)
    wy, wm = weight * y, weight * m

    def ratio_se(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = c @ wm
        r = (c @ wy) / x
        z = wy[None, :] - r[:, None] * wm[None, :]
        var = np.zeros(c.shape[0])
        for g, idx in enumerate(groups):
            ng = idx.size
            if ng < 2:
                continue
            cz, zz = c[:, idx], z[:, idx]
            zbar = (cz * zz).sum(axis=1) / ng
            var += fpc[g] * ng / (ng - 1) * (cz * (zz - zbar[:, None]) ** 2).sum(axis=1)
        return r, np.sqrt(var) / x

    r0, se0 = ratio_se(np.ones((1, n)))
    rb, seb = ratio_se(counts)
    diff = rb - r0[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(seb > _ZERO, diff / np.where(seb > _ZERO, seb, 1.0), np.sign(diff) * np.inf)
    return float(r0[0]), float(se0[0]), t


def _with_interval(
    value: float,
    var: float,
    design: _Design,
    n: int,
    n_claims: int,
    method: str,
    confidence: float,
    bounds: tuple[float, float],
    *,
    proportion: bool = False,
    linearised: np.ndarray | None = None,
) -> Estimate:
    """The estimate with its interval: Wilson on the effective sample size for a proportion, else t.

    ``linearised`` (the w_i u_i whose total's variance is ``var``) gives the t quantile the Satterthwaite
    df (:func:`_satterthwaite_df`); without it the df is n - (number of variance groups).

    For a proportion p with design variance V: n_eff = p (1 - p) / V, scaled by (z / t_df)^2 for
    the design degrees of freedom, and the Wilson score interval of p at n_eff (the
    Korn-Graubard effective-sample-size construction with Wilson in place of Clopper-Pearson:
    Korn & Graubard 1998, Survey Methodology 24:193-201; Dean & Pagano 2015, J Surv Stat Methodol
    3:484-503, who found this form closest to nominal in clustered samples).  Unlike p +- t se it
    is asymmetric near 0 and 1, where a run's agreement usually sits: in bench/sim_estimates.py,
    at 11 answers (about 40 claims), p +- t se covered 88-93% and this form 95-97% for agreement.
    Otherwise value +- t se (:func:`_quantile`), clipped to ``bounds``.
    """
    if not var > _ZERO**2:
        census = bool((design.fpc <= _ZERO).all())
        return Estimate(
            value,
            0.0,
            None,
            None,
            n,
            n_claims,
            method,
            "every answer of the population is labeled: the figure is exact for it"
            if census
            else "zero estimated variance: every labeled answer gives the same rate",
        )
    se = math.sqrt(var)
    dof = design.df if linearised is None else _satterthwaite_df(design, linearised)
    q = _quantile(confidence, dof)
    note = method if not design.collapsed else f"{method}; collapsed {', '.join(design.collapsed)}"
    if proportion and 0.0 < value < 1.0:
        z = z_value(confidence)
        n_eff = value * (1 - value) / var * (z / q) ** 2
        z2n = z * z / n_eff
        centre = (value + z2n / 2) / (1 + z2n)
        half = z / (1 + z2n) * math.sqrt(value * (1 - value) / n_eff + z2n / (4 * n_eff))
        return Estimate(
            value,
            se,
            _clip(centre - half, 0, 1),
            _clip(centre + half, 0, 1),
            n,
            n_claims,
            f"{note}; Wilson at the effective sample size",
            df=dof,
        )
    return Estimate(
        value, se, _clip(value - q * se, *bounds), _clip(value + q * se, *bounds), n, n_claims, note, df=dof
    )


def answer_tables(
    answer: ArrayLike, human: ArrayLike, judge: ArrayLike, k: int = 3
) -> tuple[np.ndarray, np.ndarray]:
    """Per-answer k x k tables (rows human, columns judge) from claim columns.

    ``answer`` labels each claim's answer (any hashable values), ``human``/``judge`` are label
    indices (0 = SUPPORTED).  Returns (the distinct answers in sorted order, tables of shape
    (n_answers, k, k)), so strata can be aligned with the first array.
    """
    a = np.asarray(answer).reshape(-1)
    h = np.asarray(human, dtype=np.int64).reshape(-1)
    j = np.asarray(judge, dtype=np.int64).reshape(-1)
    if not (a.size == h.size == j.size):
        raise ValueError("answer, human and judge differ in length")
    if h.size and (min(h.min(), j.min()) < 0 or max(h.max(), j.max()) >= k):
        raise ValueError(f"verdict indices must lie in 0..{k - 1}")
    ids, inv = np.unique(a, return_inverse=True)
    flat = inv.reshape(-1) * k * k + h * k + j
    return ids, np.bincount(flat, minlength=ids.size * k * k).reshape(ids.size, k, k).astype(float)


def answer_counts(tables: np.ndarray) -> dict[str, np.ndarray]:
    """Per-answer counts from its tables: resolved claims, agreements, lenient and strict claims.

    lenient = judge SUPPORTED and human not; strict = human SUPPORTED and judge not: the
    ``direction`` of ``calibration.agreement`` (binary collapse on SUPPORTED vs the rest).
    """
    t = np.asarray(tables, dtype=float)
    pos = POSITIVE_INDEX
    neg = [i for i in range(t.shape[-1]) if i != pos]
    return {
        "resolved": t.sum(axis=(1, 2)),
        "agree": np.trace(t, axis1=1, axis2=2),
        "lenient": t[:, neg, pos].sum(axis=1),
        "strict": t[:, pos, neg].sum(axis=1),
    }


def agreement_estimate(
    tables: np.ndarray,
    stratum: ArrayLike | None = None,
    population: Mapping[Hashable, int] | int | None = None,
    *,
    weights: ArrayLike | None = None,
    confidence: float = 0.95,
    fpc: bool = True,
) -> Estimate:
    """Share of the population's resolved claims where judge and human agree: :func:`ratio_estimate`,
    with the bootstrap-t interval at small samples (``small_sample``).

    ``weights`` (1/pi per labeled answer) instead of strata: see :func:`_design`."""
    c = answer_counts(tables)
    return ratio_estimate(
        c["agree"],
        c["resolved"],
        stratum,
        population,
        weights=weights,
        confidence=confidence,
        method="stratified ratio, linearised",
        fpc=fpc,
        small_sample=True,
    )


def agreement_chance(
    tables: np.ndarray,
    target: float,
    stratum: ArrayLike | None = None,
    population: Mapping[Hashable, int] | int | None = None,
    *,
    weights: ArrayLike | None = None,
    fpc: bool = True,
) -> float | None:
    """P(agreement >= target) at small samples: the share of the bootstrap-t draws of
    :func:`agreement_estimate`'s interval with R - t*_b se >= target, i.e. t*_b <= (R - target) / se
    (the studentised bootstrap's confidence distribution, Efron & Tibshirani 1993, ch. 12; Davison &
    Hinkley 1997, sec. 5.2.1), so the chance and the interval rest on one distribution.  None where
    the interval is not the bootstrap-t (above :data:`SMALL_SAMPLE_ANSWERS` answers, or answers of
    fewer than :data:`SMALL_SAMPLE_CLAIMS` claims on average), or without a variance (the caller uses
    the t posterior, `decisions.prob_at_least_target_design`).
    """
    c = answer_counts(tables)
    n = int(c["agree"].size)
    if n > SMALL_SAMPLE_ANSWERS or c["resolved"].sum() < SMALL_SAMPLE_CLAIMS * n:
        return None
    design, _ = _design(stratum, population, n, weights=weights, fpc=fpc)
    if design is None or design.reason is not None or c["resolved"].sum() <= 0:
        return None
    r, se, t = bootstrap_t_draws(c["agree"], c["resolved"], design.weight, design.group, design.fpc)
    if not se > _ZERO:
        return None
    return float((t <= (r - target) / se).mean())


def direction_estimate(
    tables: np.ndarray,
    stratum: ArrayLike | None = None,
    population: Mapping[Hashable, int] | int | None = None,
    *,
    weights: ArrayLike | None = None,
    confidence: float = 0.95,
    fpc: bool = True,
) -> DirectionEstimate:
    """Lenient share, strict share and lenient - strict, each a :func:`ratio_estimate` over resolved claims.

    The difference D = (sum lenient - sum strict) / sum M is a ratio estimate with
    y_i = lenient_i - strict_i (the same denominator, so D_hat = L_hat - S_hat); its
    linearised variance accounts for the two shares being counted on the same answers.
    Direction test: one-sided design-based test of D against 0,
    p_lenient = 1 - F(D_hat / se), p_strict = F(D_hat / se), with F the Student t distribution on the
    design degrees of freedom (the normal for large samples) so that the test and the interval
    agree.  Source: Cochran (1977) sec. 6.11; Korn & Graubard (1990) for the df.  With no
    discordant claim at all p = 1 both ways (nothing points either way); with discordant claims
    but no standard error, None.
    """
    c = answer_counts(tables)
    m = c["resolved"]
    lenient = ratio_estimate(
        c["lenient"],
        m,
        stratum,
        population,
        weights=weights,
        confidence=confidence,
        method="stratified ratio, linearised",
        fpc=fpc,
    )
    strict = ratio_estimate(
        c["strict"],
        m,
        stratum,
        population,
        weights=weights,
        confidence=confidence,
        method="stratified ratio, linearised",
        fpc=fpc,
    )
    diff = ratio_estimate(
        c["lenient"] - c["strict"],
        m,
        stratum,
        population,
        weights=weights,
        confidence=confidence,
        bounds=(-1.0, 1.0),
        method="stratified ratio, linearised",
        fpc=fpc,
    )
    p_len: float | None = None
    p_str: float | None = None
    if diff.value is not None and c["lenient"].sum() + c["strict"].sum() == 0:
        p_len = p_str = 1.0
    elif diff.value is not None and diff.se:
        # The interval's own degrees of freedom (set wherever it has a standard error), so that
        # the test and the interval agree.
        df = max(1.0, diff.df or 1.0)
        tstat = diff.value / diff.se
        p_len, p_str = float(stdtr(df, -tstat)), float(stdtr(df, tstat))
    return DirectionEstimate(lenient, strict, diff, p_len, p_str)


# --------------------------------------------------------------------------------------------
# 2. Kappa of the estimated population table
# --------------------------------------------------------------------------------------------


def _kappa_of(p: np.ndarray) -> tuple[float | None, float, np.ndarray, np.ndarray]:
    """kappa, p_e and the margins of a k x k table of proportions (kappa None where p_e = 1)."""
    r, c = p.sum(axis=1), p.sum(axis=0)
    pe = float(r @ c)
    if 1 - pe <= _ZERO:
        return None, pe, r, c
    return (float(np.trace(p)) - pe) / (1 - pe), pe, r, c


def kappa_many(tables: np.ndarray) -> np.ndarray:
    """Cohen's kappa of each table in a stack (..., k, k); NaN where undefined.

    The formula of `agreement.cohens_kappa` (Cohen 1960), vectorised for bootstrap resamples.
    """
    t = np.asarray(tables, dtype=float)
    n = t.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        po = np.trace(t, axis1=-2, axis2=-1) / n
        pe = np.einsum("...i,...i->...", t.sum(axis=-1), t.sum(axis=-2)) / (n * n)
        kappa = (po - pe) / (1 - pe)
    return np.where((n > 0) & (1 - pe > _ZERO), kappa, np.nan)


def minority_claims(tables: np.ndarray) -> int:
    """Fewest claims outside the majority class in either rater's margin (raw labeled claims)."""
    t = np.asarray(tables, dtype=float).sum(axis=0)
    rows, cols = t.sum(axis=1), t.sum(axis=0)
    return int(min(rows.sum() - rows.max(), cols.sum() - cols.max()))


def kappa_estimate(
    tables: np.ndarray,
    stratum: ArrayLike | None = None,
    population: Mapping[Hashable, int] | int | None = None,
    *,
    weights: ArrayLike | None = None,
    confidence: float = 0.95,
    fpc: bool = True,
    interval: Literal["linearised", "bootstrap"] = "linearised",
    min_minority: int = MIN_MINORITY_CLAIMS,
    min_answers: int = MIN_KAPPA_ANSWERS,
    resamples: int = 2000,
    seed: int | None = 0,
) -> Estimate:
    """Design-weighted Cohen's kappa: kappa of the estimated population confusion table.

    T_hat = sum_h (N_h/n_h) sum_{i in s_h} T_i (T_i = answer i's k x k table), p = T_hat / X_hat,
    kappa = (p_o - p_e) / (1 - p_e) (Cohen 1960).  Variance by linearisation (Woodruff 1971,
    JASA 66:411; Binder 1983, Int Stat Rev 51:279): with the gradient
        d kappa / d p_ab = [1(a = b) - (c_a + r_b)(1 - kappa)] / (1 - p_e)
    (r = human margins, c = judge margins), each answer's linearised value is
    u_i = sum_ab g_ab (T_i,ab - p_ab M_i) / X_hat, and V = V_hat(sum_i w_i u_i) by the stratified
    formula of :func:`ratio_estimate`.  With one answer per claim and no finite-population
    correction this is the Fleiss-Cohen-Everitt (1969) variance times n/(n-1).

    ``weights`` (1/pi per labeled answer) instead of strata: see :func:`_design`.
    ``interval="bootstrap"`` uses the stratified rescaling bootstrap instead
    (:func:`stratified_bootstrap_tables`, percentile via :func:`bootstrap_interval`).
    Either interval is withheld when fewer than ``min_minority`` (5) labeled claims lie outside
    the majority class in the human or the judge margin, or fewer than ``min_answers`` (15)
    answers are labeled: there the sampling distribution of kappa is far from normal.  In the
    simulation (bench/sim_estimates.py) at 11 answers (about 40 claims) the linearised interval
    covered 85-94% and the bootstrap 81-93%, below 90% in the random designs whatever the
    minority threshold; from 29 answers on the linearised interval covered 91-94%.
    The linearised interval is the default: from 29 answers on it covered within 0.5 points of
    the stratified bootstrap or better in every cell of that simulation, at a fraction of the cost.
    """
    t = np.asarray(tables, dtype=float)
    n = int(t.shape[0])
    k = int(t.shape[-1]) if t.ndim == 3 else 3
    n_claims = int(t.sum())
    method = f"design-weighted kappa, {'linearised' if interval == 'linearised' else 'stratified bootstrap'}"
    if weights is not None and interval == "bootstrap":
        raise ValueError("the stratified bootstrap needs the strata, not weights")
    design, why = _design(stratum, population, n, weights=weights, fpc=fpc)
    if design is None:
        return Estimate(None, None, None, None, n, n_claims, method, why)
    flat = t.reshape(n, k * k)
    m = flat.sum(axis=1)
    x_hat = float(_dot(design.weight, m))
    if x_hat <= 0:
        return Estimate(None, None, None, None, n, n_claims, method, "no resolved claims")
    p = (_dot(design.weight, flat)).reshape(k, k) / x_hat
    kappa, pe, r, c = _kappa_of(p)
    if kappa is None:
        return Estimate(
            None,
            None,
            None,
            None,
            n,
            n_claims,
            method,
            "kappa is undefined: both raters used one and the same class",
        )
    if design.reason is not None:
        return Estimate(kappa, None, None, None, n, n_claims, method, design.reason)
    g = (np.eye(k) - (c[:, None] + r[None, :]) * (1 - kappa)) / (1 - pe)
    u = ((flat - np.outer(m, p.reshape(-1))) * g.reshape(-1)).sum(axis=1) / x_hat
    z = design.weight * u
    var = float(_total_var(design, z))
    se = math.sqrt(var) if var > 0 else 0.0
    few = minority_claims(t)
    if n < min_answers:
        return Estimate(
            kappa,
            se,
            None,
            None,
            n,
            n_claims,
            method,
            f"only {n} labeled answers (fewer than {min_answers}): a kappa interval would not hold its level",
        )
    if few < min_minority:
        return Estimate(
            kappa,
            se,
            None,
            None,
            n,
            n_claims,
            method,
            f"only {few} labeled claims outside the majority class (fewer than {min_minority}): "
            "a kappa interval would not hold its level",
        )
    if interval == "linearised":
        return _with_interval(kappa, var, design, n, n_claims, method, confidence, (-1.0, 1.0), linearised=z)
    boots = stratified_bootstrap_tables(t, stratum, population, resamples=resamples, seed=seed)
    iv = bootstrap_interval(kappa_many(boots), n, confidence=confidence)
    return Estimate(kappa, se, iv.ci_low, iv.ci_high, n, n_claims, method, iv.reason)


def stratified_bootstrap_tables(
    tables: np.ndarray,
    stratum: ArrayLike | None = None,
    population: Mapping[Hashable, int] | int | None = None,
    *,
    resamples: int = 2000,
    seed: int | None = 0,
) -> np.ndarray:
    """Estimated population tables under the rescaling bootstrap, shape (resamples, k, k).

    Within each variance group g (strata after collapsing, see :func:`_design`) draw
    m_g = n_g - 1 answers with replacement; answer i drawn m*_i times gets the weight
        w*_i = w_i (1 - lambda_g + lambda_g (n_g / m_g) m*_i),   lambda_g = sqrt(m_g (1 - f_g) / (n_g - 1)),
    so the bootstrap variance of a linear estimator equals the stratified without-replacement
    variance, finite-population correction included; weights stay >= 0.  Source: Rao & Wu
    (1988), JASA 83:231-241; Rao, Wu & Yue (1992), Survey Methodology 18:209-217.  Resampling
    answers (not claims) keeps each answer's claims together.  Same inputs and seed give the same
    resamples.
    """
    t = np.asarray(tables, dtype=float)
    n, k = int(t.shape[0]), int(t.shape[-1])
    design, why = _design(stratum, population, n)
    if design is None or n == 0:
        raise ValueError(f"no bootstrap: {why or 'no labeled answers'}")
    rng = np.random.default_rng(seed)
    w_star = np.repeat(design.weight[None, :], resamples, axis=0)
    for g in range(design.n_groups):
        idx = np.flatnonzero(design.group == g)
        ng = idx.size
        lam = math.sqrt(design.fpc[g]) if ng >= 2 else 0.0
        if lam == 0.0:
            continue
        mg = ng - 1
        times = rng.multinomial(mg, np.full(ng, 1.0 / ng), size=resamples)
        w_star[:, idx] *= 1 - lam + lam * (ng / mg) * times
    return np.asarray(w_star @ t.reshape(n, k * k)).reshape(resamples, k, k)


def bootstrap_interval(
    values: ArrayLike, n_answers: int, *, confidence: float = 0.95, min_answers: int = MIN_BOOTSTRAP_ANSWERS
) -> Interval:
    """Percentile interval of bootstrap resamples, or None with a reason: no invented intervals.

    Percentile interval: the (1-c)/2 and (1+c)/2 quantiles of the defined (non-NaN) resample
    values (Efron & Tibshirani 1993, An Introduction to the Bootstrap, ch. 13).  Withheld when
    * fewer than ``min_answers`` (default 10) answers were resampled: with n answers there are at
      most C(2n-1, n) distinct resamples (3 for n = 2, 126 for n = 5, 92,378 for n = 10), and the
      percentile interval of a mean is the z interval with divisor n and no t correction, which
      at n < 10 covers well under its level (about 85-89% for a nominal 95% at n = 5-9 for a
      normal mean: the bootstrap's narrowness bias, Hesterberg 2015, Am Stat 69:371, sec. 3);
    * the resamples have zero spread, or the quantiles coincide: every resample repeats the
      estimate, which says the data cannot show variation, not that there is none;
    * more than (1-c)/2 of the resamples are undefined: dropping them could remove a whole tail.
    """
    v = np.asarray(values, dtype=float).reshape(-1)
    ok = v[~np.isnan(v)]
    undefined = int(v.size - ok.size)
    tail = (1 - confidence) / 2
    if n_answers < min_answers:
        return Interval(
            None,
            None,
            f"only {n_answers} labeled answers (a bootstrap interval needs at least {min_answers})",
            int(v.size),
            undefined,
        )
    if ok.size == 0:
        return Interval(None, None, "every resample is undefined", int(v.size), undefined)
    if undefined > tail * v.size:
        return Interval(
            None, None, f"{undefined} of {v.size} resamples are undefined", int(v.size), undefined
        )
    lo, hi = (float(x) for x in np.quantile(ok, [tail, 1 - tail]))
    if np.ptp(ok) == 0 or hi - lo <= _ZERO:
        return Interval(None, None, "the resamples show no spread", int(v.size), undefined)
    return Interval(lo, hi, None, int(v.size), undefined)


# --------------------------------------------------------------------------------------------
# 3. The pipeline's corrected grounding score
# --------------------------------------------------------------------------------------------


def _claims_by_answer(answer: ArrayLike, cols: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct answers, per-answer sums of each column: shape (n_answers, len(cols)))."""
    a = np.asarray(answer).reshape(-1)
    ids, inv = np.unique(a, return_inverse=True)
    inv = inv.reshape(-1)
    sums = (
        np.column_stack([np.bincount(inv, weights=c, minlength=ids.size) for c in cols])
        if cols
        else np.zeros((ids.size, 0))
    )
    return ids, sums


def _labeled_design(
    answer_lab: np.ndarray,
    ids: np.ndarray,
    n_run_answers: int,
    weights: ArrayLike | None,
    stratum: ArrayLike | None,
    population: Mapping[Hashable, int] | None,
    fpc: bool = True,
) -> tuple[_Design | None, str | None]:
    """Design of the labeled answers from claim-level weights / strata (one value per answer)."""
    first = np.unique(answer_lab, return_index=True)[1]

    def per_answer(x: ArrayLike, name: str) -> np.ndarray:
        arr = np.asarray(x, dtype=object if name == "stratum" else float).reshape(-1)
        if arr.size != answer_lab.size:
            raise ValueError(f"give one {name} per labeled claim")
        out = arr[first]
        _, inv = np.unique(answer_lab, return_inverse=True)
        if (arr != out[inv.reshape(-1)]).any():
            raise ValueError(f"claims of one answer carry different {name} values")
        return out

    if weights is not None:
        return _design(None, None, ids.size, weights=per_answer(weights, "weight"))
    if stratum is not None:
        if population is None:
            raise ValueError("with strata, give the population N_h per stratum")
        return _design(per_answer(stratum, "stratum"), population, ids.size, fpc=fpc)
    return _design(None, n_run_answers, ids.size, fpc=fpc)


def _prepare(
    f_all: ArrayLike, answer_all: ArrayLike, y_lab: ArrayLike, f_lab: ArrayLike, answer_lab: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    fa = np.asarray(f_all, dtype=float).reshape(-1)
    aa = np.asarray(answer_all).reshape(-1)
    y = np.asarray(y_lab, dtype=float).reshape(-1)
    fl = np.asarray(f_lab, dtype=float).reshape(-1)
    al = np.asarray(answer_lab).reshape(-1)
    if fa.size != aa.size:
        raise ValueError("f_all and answer_all differ in length")
    if not (y.size == fl.size == al.size):
        raise ValueError("y_lab, f_lab and answer_lab differ in length")
    for name, x in (("f_all", fa), ("f_lab", fl)):
        if x.size and not np.isin(x, (0.0, 1.0)).all():
            raise ValueError(f"{name} must be 0/1 indicators")
    if y.size and not ((y >= 0) & (y <= 1)).all():
        raise ValueError("y_lab must lie in [0, 1] (a 0/1 label or a share of reviewers)")
    return fa, aa, y, fl, al


def grounding_two_phase(
    f_all: ArrayLike,
    answer_all: ArrayLike,
    y_lab: ArrayLike,
    f_lab: ArrayLike,
    answer_lab: ArrayLike,
    *,
    weights: ArrayLike | None = None,
    stratum: ArrayLike | None = None,
    population: Mapping[Hashable, int] | None = None,
    confidence: float = 0.95,
    fpc: bool = True,
    label: str | None = None,
) -> GroundingEstimate:
    """Stratified two-phase estimate of the share of the run's judged claims humans call SUPPORTED.

    ``y_lab`` is 0/1 (one final label per claim) or a soft label in [0, 1]: the share of the claim's
    reviewers whose verdict is SUPPORTED, so that the estimate is the share a random reviewer would
    call SUPPORTED, every blind verdict counting (the soft-label mean of Uma et al. 2021, JAIR 72,
    "Learning from disagreement", sec. 3; the formulas below hold for any y in [0, 1]).  ``label``
    names it in ``method``.  ``fpc=False`` drops the finite-population factors: the variance of the
    process behind the run, which labeling every answer still leaves (a reviewer's verdict is a
    draw, and an answer with some claims labeled is no census of its claims).

    Phase 1: the judge's verdict f on all N judged claims gives P_N(f = v), v in {0, 1}.
    Phase 2: the labeled claims estimate P(Y = 1 | f = v) within each verdict class by a
    design-weighted ratio over answers:
        R_hat_v = sum_i w_i y_iv / sum_i w_i m_iv     (y_iv: human-SUPPORTED claims of answer i
                                                        with judge verdict v; m_iv: its claims with v)
        P_hat(Y = 1) = sum_v P_N(f = v) R_hat_v.
    Variance by linearisation over answers: u_i = sum_v P_N(f = v)(y_iv - R_hat_v m_iv) / X_hat_v,
    V = V_hat(sum_i w_i u_i) by the stratified formula (:func:`ratio_estimate`).  The target is the
    run's finite population of judged claims, so P_N carries no sampling error.
    Sources: Neyman (1938), JASA 33:101 (double sampling for stratification); Cochran (1977)
    sec. 12.2-12.3; Sarndal, Swensson & Wretman (1992) sec. 9.4 (two-phase, post-stratified).

    The design of the labeled answers: ``weights`` (1/pi per labeled claim, its answer's),
    or ``stratum`` per labeled claim + ``population`` {stratum: N_h answers}, or neither
    (a simple random sample of the run's answers).  No estimate when a verdict class the judge
    used has no labeled claim.
    """
    fa, aa, y, fl, al = _prepare(f_all, answer_all, y_lab, f_lab, answer_lab)
    method = "two-phase (stratified on the judge's verdict)" + (f", {label}" if label else "")
    judge_rate = float(fa.mean()) if fa.size else None
    n_run_answers = int(np.unique(aa).size)
    ids, sums = _claims_by_answer(al, [y * (1 - fl), 1 - fl, y * fl, fl])
    n_ans = int(ids.size)
    if fa.size == 0 or y.size == 0:
        est = Estimate(None, None, None, None, n_ans, int(y.size), method, "no judged or no labeled claims")
        return GroundingEstimate(est, judge_rate, int(fa.size), int(y.size))
    design, why = _labeled_design(al, ids, n_run_answers, weights, stratum, population, fpc=fpc)
    if design is None:
        est = Estimate(None, None, None, None, n_ans, int(y.size), method, why)
        return GroundingEstimate(est, judge_rate, int(fa.size), int(y.size))
    share = np.array([1 - fa.mean(), fa.mean()])
    value = 0.0
    u = np.zeros(n_ans)
    for v in (0, 1):
        if share[v] == 0:
            continue
        yv, mv = sums[:, 2 * v], sums[:, 2 * v + 1]
        x_v = float(_dot(design.weight, mv))
        if x_v == 0:
            label = "SUPPORTED" if v else "not SUPPORTED"
            est = Estimate(
                None,
                None,
                None,
                None,
                n_ans,
                int(y.size),
                method,
                f"no labeled claim the judge called {label}",
            )
            return GroundingEstimate(est, judge_rate, int(fa.size), int(y.size))
        r_v = float(_dot(design.weight, yv)) / x_v
        value += share[v] * r_v
        u += share[v] * (yv - r_v * mv) / x_v
    if design.reason is not None:
        est = Estimate(value, None, None, None, n_ans, int(y.size), method, design.reason)
    else:
        z = design.weight * u
        est = _with_interval(
            value,
            float(_total_var(design, z)),
            design,
            n_ans,
            int(y.size),
            method,
            confidence,
            (0.0, 1.0),
            proportion=True,
            linearised=z,
        )
    return GroundingEstimate(est, judge_rate, int(fa.size), int(y.size))


def grounding_ppi(
    f_all: ArrayLike,
    answer_all: ArrayLike,
    y_lab: ArrayLike,
    f_lab: ArrayLike,
    answer_lab: ArrayLike,
    *,
    weights: ArrayLike | None = None,
    stratum: ArrayLike | None = None,
    population: Mapping[Hashable, int] | None = None,
    lam: float | None = None,
    confidence: float = 0.95,
) -> GroundingEstimate:
    """PPI++ estimate of P(Y = 1) with the power-tuned lambda and answer-clustered variances.

    theta_hat_lambda = Ybar_n + lambda (fbar_N - fbar_n), with Ybar_n, fbar_n the (design-weighted,
    Hajek) means over the n labeled claims and fbar_N the judge's rate over all N judged claims.
    Treating the labeled and the judged claims as independent samples (the paper's setting),
        Var = V_n(Y - lambda f) + lambda^2 V_N(f),
    where V_n, V_N are the variances of the means, here cluster-robust over answers:
    V_N(f) = A/(A-1) sum_a (F_a - fbar_N M_a)^2 / N^2 over the run's A answers, and V_n from the
    linearised answer values w_i [(Y_i - Ybar M_i) - lambda (f_i - fbar M_i)] / X_hat (one group,
    or the strata when given, without finite-population correction: a superpopulation variance).
    The lambda minimising it is
        lambda_hat = C_n(Y, f) / (V_n(f) + V_N(f)),
    which for independent claims is Cov(Y, f) / ((1 + n/N) Var(f)), the power-tuned lambda of
    Angelopoulos, Duchi & Zrnic (2023), "PPI++: Efficient Prediction-Powered Inference",
    arXiv:2311.01453, Example (mean estimation); lambda = 1 is the original PPI of Angelopoulos,
    Bates, Fannjiang, Jordan & Zrnic (2023), Science 382:669, and lambda = 0 the labels alone.
    Interval theta_hat +- t se (design df).  Since the labeled claims are also among the N
    judged ones, the independent-samples variance is slightly conservative (by 2 lambda^2 V_N(f)).
    """
    fa, aa, y, fl, al = _prepare(f_all, answer_all, y_lab, f_lab, answer_lab)
    method = "PPI++ (power-tuned)" if lam is None else f"PPI (lambda = {lam:g})"
    judge_rate = float(fa.mean()) if fa.size else None
    ids, sums = _claims_by_answer(al, [y, fl, np.ones_like(y)])
    n_ans = int(ids.size)
    if fa.size == 0 or y.size == 0:
        est = Estimate(None, None, None, None, n_ans, int(y.size), method, "no judged or no labeled claims")
        return GroundingEstimate(est, judge_rate, int(fa.size), int(y.size))
    design, why = _labeled_design(al, ids, int(np.unique(aa).size), weights, stratum, population)
    if design is None:
        est = Estimate(None, None, None, None, n_ans, int(y.size), method, why)
        return GroundingEstimate(est, judge_rate, int(fa.size), int(y.size))
    no_fpc = _Design(
        design.weight,
        design.group,
        np.ones(design.n_groups),
        design.n_groups,
        design.reason,
        design.collapsed,
    )
    w = design.weight
    ya, fla, ma = sums[:, 0], sums[:, 1], sums[:, 2]
    x_hat = float(_dot(w, ma))
    ybar, fbar = float(_dot(w, ya)) / x_hat, float(_dot(w, fla)) / x_hat
    uy, uf = w * (ya - ybar * ma) / x_hat, w * (fla - fbar * ma) / x_hat
    cov = _total_var(no_fpc, np.column_stack([uy, uf]))
    _, run_sums = _claims_by_answer(aa, [fa, np.ones_like(fa)])
    big_a, big_n = run_sums.shape[0], fa.size
    f_run = float(fa.mean())
    v_big = (
        big_a / (big_a - 1) * float(((run_sums[:, 0] - f_run * run_sums[:, 1]) ** 2).sum()) / big_n**2
        if big_a > 1
        else 0.0
    )
    if lam is None:
        denom = float(cov[1, 1]) + v_big
        lam = float(cov[0, 1]) / denom if denom > 0 else 0.0
    value = ybar + lam * (f_run - fbar)
    var = float(cov[0, 0] - 2 * lam * cov[0, 1] + lam * lam * cov[1, 1]) + lam * lam * v_big
    if design.reason is not None:
        est = Estimate(value, None, None, None, n_ans, int(y.size), method, design.reason)
    else:
        est = _with_interval(value, var, design, n_ans, int(y.size), method, confidence, (0.0, 1.0))
    return GroundingEstimate(est, judge_rate, int(fa.size), int(y.size), lam)


def corrected_grounding(
    f_all: ArrayLike,
    answer_all: ArrayLike,
    y_lab: ArrayLike,
    f_lab: ArrayLike,
    answer_lab: ArrayLike,
    *,
    method: Literal["two-phase", "ppi++"] = "two-phase",
    weights: ArrayLike | None = None,
    stratum: ArrayLike | None = None,
    population: Mapping[Hashable, int] | None = None,
    confidence: float = 0.95,
    fpc: bool = True,
    label: str | None = None,
) -> GroundingEstimate:
    """The pipeline's grounding score corrected by the judge's measured errors (default: two-phase).

    ``fpc`` and ``label`` (soft labels): see :func:`grounding_two_phase`; PPI++ has no fpc.

    Assumption: the judge's error rates measured on the labeled claims, P(Y = 1 | f = v), hold
    for the unlabeled claims of the same run (true by design for a probability sample of the
    run's answers; check it across versions with :func:`transfer_test`).

    Why two-phase is the default: for a 0/1 judge verdict, PPI++ with lambda equal to the
    regression slope Cov(Y, f)/Var(f) is algebraically Ybar + (R_1 - R_0)(F_N - fbar_n)
    = F_N R_1 + (1 - F_N) R_0, the two-phase estimate, so the two differ only by PPI++'s
    (1 + n/N) shrinkage of lambda; the two-phase form handles unequal-probability designs
    (failures-first) through its weights with the design's own variance, and estimates the run,
    as every other run-level figure does.  ``bench/sim_estimates.py`` measures both.
    """
    kwargs: dict[str, Any] = {
        "weights": weights,
        "stratum": stratum,
        "population": population,
        "confidence": confidence,
    }
    if method == "two-phase":
        return grounding_two_phase(
            f_all, answer_all, y_lab, f_lab, answer_lab, fpc=fpc, label=label, **kwargs
        )
    if method == "ppi++":
        return grounding_ppi(f_all, answer_all, y_lab, f_lab, answer_lab, **kwargs)
    raise ValueError(f"unknown method {method!r}; use 'two-phase' or 'ppi++'")


def grounding_difference(a: GroundingEstimate, b: GroundingEstimate, *, confidence: float = 0.95) -> Estimate:
    """Corrected grounding of version A minus version B, for two versions with disjoint answers.

    Disjoint answers make the two estimates independent: se = sqrt(se_A^2 + se_B^2), interval
    d +- z se (normal: the two design df do not combine into one t).  No interval when either
    side has none.
    """
    ea, eb = a.estimate, b.estimate
    n_ans, n_cl = ea.n_answers + eb.n_answers, ea.n_claims + eb.n_claims
    method = f"difference of two independent estimates ({ea.method})"
    if ea.value is None or eb.value is None:
        return Estimate(None, None, None, None, n_ans, n_cl, method, ea.reason or eb.reason)
    d = ea.value - eb.value
    if ea.se is None or eb.se is None or ea.ci_low is None or eb.ci_low is None:
        return Estimate(
            d,
            None,
            None,
            None,
            n_ans,
            n_cl,
            method,
            "one of the two versions has no interval: " + str(ea.reason or eb.reason),
        )
    se = math.sqrt(ea.se**2 + eb.se**2)
    z = z_value(confidence)
    return Estimate(d, se, _clip(d - z * se, -1, 1), _clip(d + z * se, -1, 1), n_ans, n_cl, method)


def _conditional_rates(
    y: np.ndarray,
    fl: np.ndarray,
    al: np.ndarray,
    n_run_answers: int,
    weights: ArrayLike | None,
    stratum: ArrayLike | None,
    population: Mapping[Hashable, int] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(R_hat_v for v = 0, 1 (NaN where no label), their 2x2 covariance, labeled claims per class)."""
    ids, sums = _claims_by_answer(al, [y * (1 - fl), 1 - fl, y * fl, fl])
    design, why = _labeled_design(al, ids, n_run_answers, weights, stratum, population)
    if design is None:
        raise ValueError(why or "no design")
    r = np.full(2, np.nan)
    u = np.zeros((ids.size, 2))
    counts = np.array([sums[:, 1].sum(), sums[:, 3].sum()])
    for v in (0, 1):
        yv, mv = sums[:, 2 * v], sums[:, 2 * v + 1]
        x_v = float(_dot(design.weight, mv))
        if x_v > 0:
            r[v] = float(_dot(design.weight, yv)) / x_v
            u[:, v] = design.weight * (yv - r[v] * mv) / x_v
    cov = _total_var(design, u) if design.reason is None else np.full((2, 2), np.nan)
    return r, cov, counts


def transfer_test(version_a: Mapping[str, Any], version_b: Mapping[str, Any]) -> TransferTest:
    """Do the judge's error rates transfer?  Wald test of equal P(Y = 1 | f = v) in two versions.

    Each version is a mapping with the labeled claims' ``y``, ``f``, ``answer`` and the number
    of answers of its run, ``n_run_answers``, plus optionally ``weights`` or ``stratum`` and
    ``population`` (as for :func:`grounding_two_phase`).  With d_v = R_hat_v(A) - R_hat_v(B) over
    the verdict classes labeled in both and Sigma = Cov_A + Cov_B (linearised, answers
    independent across versions):  X^2 = d' Sigma^+ d, df = rank(Sigma), p = P(chi2_df >= X^2)
    (a Wald test, e.g. Agresti 2013, Categorical Data Analysis, sec. 1.3.3).  A small p says the
    judge errs differently on the two versions, so correcting one version with error rates
    measured on the other would be wrong.
    """
    parts = []
    for v in (version_a, version_b):
        y = np.asarray(v["y"], dtype=float).reshape(-1)
        f = np.asarray(v["f"], dtype=float).reshape(-1)
        a = np.asarray(v["answer"]).reshape(-1)
        parts.append(
            _conditional_rates(
                y, f, a, int(v["n_run_answers"]), v.get("weights"), v.get("stratum"), v.get("population")
            )
        )
    (ra, ca, _), (rb, cb, _) = parts
    d = ra - rb
    diffs = (None if np.isnan(d[0]) else float(d[0]), None if np.isnan(d[1]) else float(d[1]))
    keep = ~np.isnan(d)
    if not keep.any():
        return TransferTest(None, 0, None, diffs, "no verdict class is labeled in both versions")
    sigma = (ca + cb)[np.ix_(keep, keep)]
    if np.isnan(sigma).any():
        return TransferTest(None, 0, None, diffs, "a version has too few labeled answers for a variance")
    df = int(np.linalg.matrix_rank(sigma, tol=1e-12))
    if df == 0:
        same = bool(np.allclose(d[keep], 0))
        return TransferTest(
            None,
            0,
            1.0 if same else None,
            diffs,
            "zero variance in both versions" + ("" if same else " but the rates differ"),
        )
    dk = d[keep]
    stat = float(dk @ np.linalg.pinv(sigma) @ dk)
    return TransferTest(stat, df, float(chdtrc(df, stat)), diffs)
