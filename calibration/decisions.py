"""Decisions a lead can act on: a flag that survives repeated looks, P(agreement >= target), one honest
"how many more", and the human ceiling (is the judge as good as a reviewer?).

Pure functions over arrays: numpy and scipy only (plus the Wilson interval of
:mod:`calibration.estimation`, which is pure too).  Nothing here reads the store.

The sampling unit
-----------------
Claims cluster in answers (one retrieval, one writer), so claims of one answer are not independent, and
a sequential rule fed claim by claim would be invalid.  The unit is therefore the **answer**: answer i
brings y_i (its agreeing claims, or lenient - strict for the direction) over m_i labeled claims, and
answers come in the order they were labeled.  The estimand is the claim-level ratio the report prints,
sum y / sum m (design-weighted where the design has weights): each answer's residual y_i - theta m_i
carries all its claims, so the claims' correlation sits inside one observation.

The guarantee also needs the order labels arrive in to say nothing about their outcome. Reviewers
work through shuffled cycle queues, so their labels qualify; labels imported from a file share one
import time, and answers labeled at the same time enter the rules in a seeded random order
(:func:`answer_sums`), never the file's, which a file sorted by outcome (every disagreement last,
say) would turn into an early firing.

Two readings
------------
Each side of a decision (agreement ok, agreement revise, each direction) spends its error budget twice
(:func:`error_split`): the running rule (:func:`confidence_sequence`) at alpha_running, valid whenever
it is read, and one final fixed-sample reading at alpha_final when labeling ends (:func:`final_reading`),
alpha_running + alpha_final = the side's budget.  docs/decisions.md gives the choice, its simulation
and sources.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

import numpy as np
from scipy.special import betainc, ndtr, stdtr, stdtrit

from .agreement import kish_effective_n, optional_float
from .estimation import wilson_interval, z_value
from .fmt import closed_words, pct, plural, share
from .vocab import LABELS

# The share of each side's error budget alpha the running rule spends; the final reading spends the
# rest (`error_split`).  "revise" (the agreement's upper bound) and the direction: half, so the final
# reading at alpha/2 is exactly "the report's 95% interval excludes the target" at alpha 0.05, and a
# fully labeled run whose interval lies below the target is revised.  "ok" (the lower bound): 0.9, as
# at half no rule valid at every look called a 90% judge ok by 200 claims in a third of simulated runs
# (even a bet tuned to it with the variance known reached 31%); at 0.9 the rule does in 33-34%, and the
# final reading still calls ok a run whose one-sided 99.5% lower bound clears the target
# (bench/sim_flag.py, docs/decisions.md).
Side = Literal["ok", "revise", "direction"]
RUNNING_SHARE: Final[dict[str, float]] = {"ok": 0.9, "revise": 0.5, "direction": 0.5}
# t*: the running rule's boundary is tightest near this many labeled answers (a few cycles' worth; 200
# claims of 1-5-claim answers are about 67), and its mixing spread as a share of the bet centred there
# (`mixture_boundary`).  Chosen by simulation (bench/sim_flag.py, docs/decisions.md): a narrower spread
# or a later t* gained power for a 90% judge only by bringing the one-sided miss near its 2.5%.
MIXTURE_ANSWERS: Final = 60
MIXTURE_SPREAD: Final = 0.5
# Pseudo-answers of the largest variance a claim can have, added to the running rule's variance
# (`running_bounds`).  With one, a judge at 95% in answers of 10-30 claims crossed its lower bound in
# 3.2% of simulated runs at alpha 0.025; with two, at most 1.9% in every case simulated, for about
# one point of power (bench/sim_flag.py).
PRIOR_ANSWERS: Final = 2
# Past this many more claims the target is called undecidable: at about a minute a claim it is some
# 80 reviewer hours, more than a team spends calibrating one judge, and the projection it comes from
# assumes today's estimate holds, which a sample that far out would itself move.
PRACTICAL_MORE_CLAIMS: Final = 5_000
# The concentration a of the Dirichlet(a, ..., a) weights "how many more" draws over the labeled
# answers (`more_claims_to_decide`).  a = 1 is Rubin's Bayesian bootstrap; its 80% range held the
# realised stopping time in 86% of simulated runs of 1-5-claim answers (too wide); at 1.5, 83% and 77%
# with 10-30-claim answers; at 2, 79% and 74% (600 runs each, bench/sim_flag.py, docs/decisions.md).
PLAN_CONCENTRATION: Final = 1.5
# Alt-test defaults from Calderon, Reichart & Dror (2025, App. A, "How do I select the epsilon
# value?"): epsilon 0.2 for experts, 0.15 for skilled annotators (trained workers), 0.1 for crowd
# workers, smaller where reviewers agree little.  Reviewers here work to a written guideline after a
# calibration round, the authors' "skilled" profile, so 0.15; the lead sets it (thresholds
# --alt-epsilon).  FDR level 0.05, at least 30 instances per annotator for the t-test.
ALT_EPSILON: Final = 0.15
ALT_ALIGNMENT: Final = "balanced accuracy"
ALT_Q: Final = 0.05
ALT_MIN_INSTANCES: Final = 30
# A standard error below this is rounding noise around an exact zero (as agreement._ZERO_VAR).
_ZERO_SE: Final = 1e-9


# --------------------------------------------------------------------------------------------
# Per-answer sums, in label order
# --------------------------------------------------------------------------------------------


def answer_sums(
    cluster: np.ndarray, values: np.ndarray, *, label_rank: np.ndarray | None = None, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Per-answer (sum of ``values``, number of claims), answers in the order they were labeled.

    ``cluster`` labels each claim's answer (any integers), ``values`` is the per-claim quantity
    (1 where judge and human agree, or lenient - strict in {-1, 0, 1}).  With ``label_rank`` (any
    sortable per-claim time of labeling) an answer counts as observed when its last claim was
    labeled, and answers observed at the same time (an imported file) come in a random order drawn
    with ``seed``, so a file's own order cannot steer the sequential rules; without ``label_rank``
    answers come in order of first appearance.
    """
    c = np.asarray(cluster).reshape(-1)
    v = np.asarray(values, dtype=float).reshape(-1)
    if c.shape != v.shape:
        raise ValueError("cluster and values must be of one length")
    if c.size == 0:
        return np.zeros(0), np.zeros(0)
    _, first, inv = np.unique(c, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    y = np.bincount(inv, weights=v)
    m = np.bincount(inv).astype(float)
    if label_rank is None:
        order = np.argsort(first, kind="stable")
    else:
        r = np.asarray(label_rank, dtype=float).reshape(-1)
        if r.shape != c.shape:
            raise ValueError("label_rank must give one rank per claim")
        last = np.full(first.size, -np.inf)
        np.maximum.at(last, inv, r)
        tie = np.random.default_rng(seed).permutation(first.size)
        order = np.lexsort((tie, last))
    return y[order], m[order]


# --------------------------------------------------------------------------------------------
# The running rule: a normal-mixture confidence sequence for a claim-level ratio over answers
# --------------------------------------------------------------------------------------------


def error_split(alpha: float, side: Side) -> tuple[float, float]:
    """(alpha_running, alpha_final) of one side of a decision: its error budget split between the running
    rule (read at every look) and the one final reading when labeling ends, alpha_running + alpha_final
    = alpha (:data:`RUNNING_SHARE`).  A false decision on that side needs the running rule or the final
    reading to err, so by the union bound (Bonferroni) its chance is at most alpha whenever the lead
    stops (Jennison & Turnbull 2000, Group Sequential Methods with Applications to Clinical Trials,
    sec. 1.3 and ch. 7 on error spending, where the two sides of a test may spend differently).
    """
    running = alpha * RUNNING_SHARE[side]
    return running, alpha - running


def mixture_boundary(
    t: np.ndarray, alpha: float, t_star: float = MIXTURE_ANSWERS, spread: float = MIXTURE_SPREAD
) -> np.ndarray:
    """B_t: the standardised one-sided boundary of a normal mixture of bets centred on the bet that is
    best at t* answers.

    For a standardised sum S_t (increments of mean 0 and variance 1 under the tested value) each bet
    lambda gives the martingale exp(lambda S_t - lambda^2 t / 2); mixed over lambda ~ N(lambda_0, rho^2),
        M_t(S) = (1 + rho^2 t)^(-1/2) exp((rho^2 S^2 + 2 lambda_0 S - lambda_0^2 t) / (2 (1 + rho^2 t))),
    and by Ville's inequality P(exists t: M_t >= 1/alpha) <= alpha.  M_t = 1/alpha at
        S_t* = (-lambda_0 + sqrt(lambda_0^2 + rho^2 (lambda_0^2 t + 2 (1 + rho^2 t) L_t))) / rho^2,
        L_t = log(sqrt(1 + rho^2 t) / alpha),
    and B_t = S_t* / t, so P(exists t: mean_t - mu >= sigma B_t) <= alpha (M_t grows with S for S > 0).
    lambda_0 = sqrt(2 log(1/alpha) / t*) is the single bet whose boundary log(1/alpha)/lambda +
    lambda t/2 is lowest at t = t*, rho = ``spread`` lambda_0 keeps the bound shrinking (as
    sqrt(log t / t)) far from t*.  The normal mixture of Robbins (1970) and Howard, Ramdas, McAuliffe &
    Sekhon (2021), Ann. Statist. 49(2), sec. 3.2 (there centred at 0); with an estimated variance the
    asymptotic confidence sequence of Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas (2024), Ann.
    Statist. 52(6).  Centred at 0 (half-normal, the boundary shipped before) it called a 90% judge ok
    by 200 claims in about a fifth of simulated runs at alpha 0.025; centred, in about a quarter.
    """
    tt = np.asarray(t, dtype=float)
    lam0 = math.sqrt(2 * math.log(1 / alpha) / t_star)
    rho2 = (spread * lam0) ** 2
    x = 1 + rho2 * tt
    big_l = np.log(np.sqrt(x) / alpha)
    s = (-lam0 + np.sqrt(lam0 * lam0 + rho2 * (lam0 * lam0 * tt + 2 * x * big_l))) / rho2
    return np.asarray(s / tt)


def running_bounds(
    y: np.ndarray,
    m: np.ndarray,
    *,
    lo: float = 0.0,
    hi: float = 1.0,
    alpha: float = 0.025,
    t_star: float = MIXTURE_ANSWERS,
    binary: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per look t (after each answer, time last): the estimate R_t and the one-sided bounds L_t, U_t.

    Answers are the unit; answer i brings y_i (a claim-level sum, each claim's value in [lo, hi]) over
    m_i claims (design weights already multiplied into both).  After t answers, R_t = sum y / sum m,
    mbar_t = sum m / t, f_t = t / (t - 1) (the with-replacement factor of a clustered ratio's variance,
    Cochran 1977, sec. 6.4), k = :data:`PRIOR_ANSWERS`, and for a tested value theta the score-form
    variance
        a_t(theta) = k (theta - lo)(hi - theta) + f_t sum_{i<=t} (y_i - theta m_i)^2 / mbar_t^2,
        sigma_t^2(theta) = a_t(theta) / (t + k):
    the answers' linearised ratio residuals taken at theta itself (as Wilson's score interval takes the
    variance at the tested value, which keeps a run of early all-agreeing answers from looking certain),
    plus k pseudo-answers with the largest variance a claim with mean theta can have (Bhatia & Davis
    2000).  theta is rejected from below ("the figure is above theta") when R_t - theta >=
    B_t sigma_t(theta), from above when theta - R_t >= B_t sigma_t(theta) (:func:`mixture_boundary`).
    Both say (R_t - theta)^2 >= c_t a_t(theta), c_t = B_t^2 / (t + k): a quadratic
    q(theta) = A theta^2 + B theta + C <= 0 keeps theta, with (S the sums of y^2, y m, m^2, and
    d = mbar^2 / f_t)
        A = 1 + c_t k - c_t S_mm / d,  B = -2 R - c_t (k (lo + hi) - 2 S_ym / d),
        C = R^2 - c_t (S_yy / d - k lo hi).
    For A > 0 the kept values are the roots' interval [L_t, U_t] (clipped to [lo, hi]); otherwise (the
    first few answers) nothing is rejected: [lo, hi].

    ``binary`` (claims worth lo or hi, as agreement): the variance is also floored at that of
    independent claims, a_t(theta) >= (theta - lo)(hi - theta)(k + sum m / d), claims of one answer
    being correlated positively if at all; theta is kept when either variance keeps it (the union of
    the two roots' intervals).  Without it a run of early answers with no disagreement (likely for a
    judge near 95%) made the residual variance near 0: the lower bound passed the truth in 5-11% of
    simulated runs at alpha 0.025 (2.7% at 85%); with it, at most 1.9% (docs/decisions.md).
    """
    yy = np.asarray(y, dtype=float)
    mm = np.asarray(m, dtype=float)
    t = np.arange(1, yy.shape[-1] + 1, dtype=float)
    sums = [np.cumsum(v, axis=-1) for v in (yy, mm, yy * yy, yy * mm, mm * mm)]
    return _bounds_from_sums(t, *sums, lo=lo, hi=hi, alpha=alpha, t_star=t_star, binary=binary)


def _bounds_from_sums(
    t: np.ndarray,
    s_y: np.ndarray,
    s_m: np.ndarray,
    s_yy: np.ndarray,
    s_ym: np.ndarray,
    s_mm: np.ndarray,
    *,
    lo: float,
    hi: float,
    alpha: float,
    t_star: float,
    binary: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`running_bounds` from the running sums after t answers (the roots of its quadratic)."""
    r = s_y / s_m
    # The residuals' sums carry the with-replacement factor t / (t - 1) of a clustered ratio's variance.
    mbar2 = (s_m / t) ** 2 * (np.maximum(t - 1, 1) / t)
    k0 = PRIOR_ANSWERS
    c = mixture_boundary(t, alpha, t_star) ** 2 / (t + k0)
    low, high = _roots(
        1 + c * k0 - c * s_mm / mbar2,
        -2 * r - c * (k0 * (lo + hi) - 2 * s_ym / mbar2),
        r * r - c * (s_yy / mbar2 - k0 * lo * hi),
        lo,
        hi,
    )
    if binary:
        # Claims of value lo or hi: each claim's variance at theta is (theta - lo)(hi - theta), so the
        # answers' variance is at least that of independent claims (the binomial floor).
        k = c * (k0 + s_m / mbar2)
        low2, high2 = _roots(1 + k, -2 * r - k * (lo + hi), r * r + k * lo * hi, lo, hi)
        low, high = np.minimum(low, low2), np.maximum(high, high2)
    return r, low, high


def _roots(
    a: np.ndarray, b: np.ndarray, k: np.ndarray, lo: float, hi: float
) -> tuple[np.ndarray, np.ndarray]:
    """The interval where a x^2 + b x + k <= 0, clipped to [lo, hi]; all of [lo, hi] where a <= 0."""
    ok = a > 1e-12
    disc = np.sqrt(np.maximum(b * b - 4 * a * k, 0.0))
    safe = np.where(ok, a, 1.0)
    low = np.where(ok, (-b - disc) / (2 * safe), lo)
    high = np.where(ok, (-b + disc) / (2 * safe), hi)
    return np.clip(low, lo, hi), np.clip(high, lo, hi)


@dataclass(frozen=True, slots=True)
class ConfidenceSequence:
    """One-sided bounds on a claim-level ratio after the last answer, valid at every look.

    ``lower``/``upper``: each a one-sided (1 - alpha) bound, the running intersection over all looks;
    ``above``/``below``: whether the figure was shown > theta0 / < theta0 at some look.
    """

    estimate: float | None
    lower: float | None
    upper: float | None
    n_answers: int
    alpha: float
    theta0: float | None = None
    above: bool = False
    below: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": optional_float(self.estimate),
            "ci_low": optional_float(self.lower),
            "ci_high": optional_float(self.upper),
            "n_answers": self.n_answers,
            "alpha_each_side": self.alpha,
        }


def _weighted(y: np.ndarray, m: np.ndarray, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(w y, w m) per answer, validated (ones without weights)."""
    y = np.asarray(y, dtype=float).reshape(-1)
    m = np.asarray(m, dtype=float).reshape(-1)
    if y.shape != m.shape:
        raise ValueError("y and m must be of one length")
    if (m <= 0).any():
        raise ValueError("every answer needs at least one claim (m > 0)")
    if weights is None:
        return y, m
    w = np.asarray(weights, dtype=float).reshape(-1)
    if w.shape != y.shape or not (np.isfinite(w) & (w > 0)).all():
        raise ValueError("weights must be positive and finite, one per answer")
    return w * y, w * m


def confidence_sequence(
    y: np.ndarray,
    m: np.ndarray,
    *,
    lo: float = 0.0,
    hi: float = 1.0,
    alpha: float = 0.025,
    theta0: float | None = None,
    weights: np.ndarray | None = None,
    binary: bool = True,
) -> ConfidenceSequence:
    """Bounds on the claim-level ratio sum w y / sum w m that hold at every look, answers in label order.

    The running intersection of :func:`running_bounds`: lower = max_t L_t, upper = min_t U_t, each a
    one-sided bound at ``alpha``.  ``above`` iff lower >= theta0, ``below`` iff upper < theta0.  The
    claims' dependence inside an answer does no harm: the unit is the answer, and its residual
    y_i - theta m_i carries every claim of it.  ``weights`` (1/inclusion probability per answer) make
    it the design-weighted (Hajek) ratio, answers treated as drawn with replacement (an approximation).
    ``binary``: each claim is worth lo or hi (:func:`running_bounds`).

    Why this rule (docs/decisions.md, bench/sim_flag.py): betting sequences (Waudby-Smith & Ramdas
    2024, JRSS B 86(1)) are exact but must survive an answer whose claims all disagree, which caps
    their bets; at half the error budget they called a 90% judge (target 85%) ok by 200 claims in
    under 15% of simulated runs.  This sequence is valid as the number of answers grows (Waudby-Smith
    et al. 2024, Ann. Statist.); its level at the sizes this tool sees is checked by simulation, where
    the score-form variance held it.
    """
    yw, mw = _weighted(y, m, weights)
    n = yw.size
    if n == 0:
        return ConfidenceSequence(None, None, None, 0, alpha, theta0)
    if (yw < lo * mw - 1e-9).any() or (yw > hi * mw + 1e-9).any():
        raise ValueError(f"rates must lie in [{lo}, {hi}]")
    r, low, high = running_bounds(yw, mw, lo=lo, hi=hi, alpha=alpha, binary=binary)
    lower, upper = float(low.max()), float(high.min())
    above = below = False
    if theta0 is not None:
        above, below = lower >= theta0, upper < theta0
    return ConfidenceSequence(float(r[-1]), lower, upper, n, alpha, theta0, above, below)


# --------------------------------------------------------------------------------------------
# The three rules and the flag
# --------------------------------------------------------------------------------------------

AGREEMENT_BOUND: Final = (
    "running rule: normal-mixture confidence sequence on the claim-level agreement over answers in "
    "label order (score-form variance; Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas 2024) at "
    "alpha/2 for revise (upper bound < target) and 0.9 alpha for ok (lower bound >= target); final "
    "reading when labeling ends (closed by a lead, or nothing left to label): the fixed-sample bounds "
    "at the rest of each side's alpha"
)
DIRECTION_BOUND: Final = (
    "running rule: normal-mixture confidence sequence on (lenient - strict) per claim over answers "
    "in label order at alpha/4 a side: lenient if its lower bound > 0, strict if its upper bound < 0; "
    "final reading when labeling ends (closed by a lead, or nothing left to label): the fixed-sample "
    "interval at alpha/4 a side"
)
KAPPA_BOUND: Final = "fixed-sample upper bound of kappa's 95% interval < floor"

Reading = Literal["running", "final"]

Bounds = tuple[float | None, float | None]


@dataclass(frozen=True, slots=True)
class LabelingEnd:
    """Why the run's labeling ended, which takes the final reading (:func:`final_reading`).

    Either a lead closed it (``closed_by``, ``closed_at``, an ISO time) and the final reading was
    taken then, once: ``agreement`` and ``direction`` are its bounds at the final levels (as
    :func:`final_reading` reads them) over the ``n_claims`` labeled at closing; labels given later
    move the running rule, never this reading, so the final look stays one look at alpha_final.
    Or nothing is left a cycle could draw (no ``closed_by``): the final reading is that of the labels
    as they stand."""

    closed_by: str | None = None
    closed_at: str | None = None
    agreement: Bounds | None = None
    direction: Bounds | None = None
    n_claims: int | None = None

    @property
    def why(self) -> str:
        """ "labeling closed by Lena on 2026-12-07" / "nothing is left to label"."""
        if self.closed_by is None:
            return "nothing is left to label"
        return closed_words(self.closed_by, self.closed_at)

    @property
    def sentence(self) -> str:
        """What decided, beside the flag's word."""
        if self.closed_by is None:
            return "decided at the final reading: nothing was left to label"
        return f"decided at the final reading: {self.why}"

    def reading_dict(self) -> dict[str, Any]:
        """The reading taken at closing, as stored (:meth:`from_closure` reads it back)."""

        def listed(bounds: Bounds | None) -> list[float | None] | None:
            return None if bounds is None else list(bounds)

        return {
            "agreement": listed(self.agreement),
            "direction": listed(self.direction),
            "n_claims": self.n_claims,
        }

    @classmethod
    def from_closure(cls, closed_by: str, closed_at: str, reading: dict[str, Any]) -> LabelingEnd:
        def bounds(value: Any) -> Bounds | None:
            return None if value is None else (value[0], value[1])

        return cls(
            closed_by,
            closed_at,
            bounds(reading.get("agreement")),
            bounds(reading.get("direction")),
            reading.get("n_claims"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "closed_by": self.closed_by,
            "closed_at": self.closed_at,
            "why": self.why,
            "final_reading": None if self.closed_by is None else self.reading_dict(),
        }


NOTHING_LEFT: Final = LabelingEnd()


@dataclass(frozen=True, slots=True)
class RuleResult:
    """One rule of the flag: what it says, the bound it used, and the fixed-sample interval beside it.

    ``reading``: "running" (the running rule decided, or nothing did) or "final" (the final reading
    decided: labeling had ended and the running rule had not); ``final_low``/``final_high`` the final
    reading's interval when it was read; ``alpha_low``/``alpha_high`` the one-sided levels (running,
    final) of the lower bound (ok, lenient) and of the upper bound (revise, strict) (:func:`error_split`).
    """

    rule: Literal["agreement", "direction", "kappa"]
    # agreement: revise/ok/inconclusive; direction: lenient/strict/none; kappa: revise/pass/undefined
    status: str
    estimate: float | None
    bound_low: float | None
    bound_high: float | None
    fixed_low: float | None
    fixed_high: float | None
    threshold: float
    bound_used: str
    n_answers: int = 0
    reading: Reading = "running"
    final_low: float | None = None
    final_high: float | None = None
    alpha_low: tuple[float, float] | None = None
    alpha_high: tuple[float, float] | None = None
    end: LabelingEnd | None = None  # why labeling ended, when the final reading was read

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "value": optional_float(self.estimate),
            "bound_low": optional_float(self.bound_low),
            "bound_high": optional_float(self.bound_high),
            "fixed_ci_low": optional_float(self.fixed_low),
            "fixed_ci_high": optional_float(self.fixed_high),
            "threshold": self.threshold,
            "bound_used": self.bound_used,
            "n_answers": self.n_answers,
            "reading": self.reading,
            "final_ci_low": optional_float(self.final_low),
            "final_ci_high": optional_float(self.final_high),
            **_levels("low", self.alpha_low),
            **_levels("high", self.alpha_high),
            "labeling_ended": None if self.end is None else self.end.why,
        }


def _levels(end: str, levels: tuple[float, float] | None) -> dict[str, float | None]:
    running, final = (None, None) if levels is None else levels
    return {f"alpha_running_{end}": running, f"alpha_final_{end}": final}


def agreement_rule(
    y: np.ndarray,
    m: np.ndarray,
    target: float,
    *,
    alpha: float = 0.05,
    weights: np.ndarray | None = None,
    confidence: float = 0.95,
) -> RuleResult:
    """The running reading of the agreement target: revise / ok / inconclusive from answers in label order.

    ``y`` agreeing claims and ``m`` labeled claims per answer (:func:`answer_sums`).  Revise iff the
    sequence's upper bound < target (:func:`confidence_sequence` at the "revise" side's alpha_running,
    :func:`error_split`), ok iff its lower bound >= target (at the "ok" side's), else inconclusive.
    ``estimate`` is the claim-level ratio.  Beside it, the fixed-sample Wilson interval on the claims
    (``confidence``; Wilson 1927, :func:`estimation.wilson_interval`), valid at one pre-planned look only;
    with weights it uses the Kish effective size n_eff and x = p_w n_eff (an approximation).
    """
    low_side, high_side = error_split(alpha, "ok"), error_split(alpha, "revise")
    cs = confidence_sequence(y, m, alpha=high_side[0], theta0=target, weights=weights)
    if low_side[0] != high_side[0] and cs.estimate is not None:
        above = confidence_sequence(y, m, alpha=low_side[0], theta0=target, weights=weights)
        cs = replace(cs, lower=above.lower, above=above.above)
    if cs.estimate is None:
        return RuleResult(
            "agreement",
            "inconclusive",
            None,
            None,
            None,
            None,
            None,
            target,
            AGREEMENT_BOUND,
            0,
            "running",
            None,
            None,
            low_side,
            high_side,
        )
    yy = np.asarray(y, dtype=float).reshape(-1)
    mm = np.asarray(m, dtype=float).reshape(-1)
    if weights is None:
        n_fixed, p_claims = float(mm.sum()), float(yy.sum() / mm.sum())
    else:
        w = np.asarray(weights, dtype=float).reshape(-1)
        wc = np.repeat(w, mm.astype(int))
        n_fixed = float(wc.sum() ** 2 / (wc * wc).sum())
        p_claims = float((w * yy).sum() / (w * mm).sum())
    wil = wilson_interval(p_claims * n_fixed, n_fixed, confidence=confidence)
    status = "revise" if cs.below else "ok" if cs.above else "inconclusive"
    return RuleResult(
        "agreement",
        status,
        cs.estimate,
        cs.lower,
        cs.upper,
        None if wil is None else wil[0],
        None if wil is None else wil[1],
        target,
        AGREEMENT_BOUND,
        cs.n_answers,
        alpha_low=low_side,
        alpha_high=high_side,
    )


def final_reading(
    rule: RuleResult, ci_low: float | None, ci_high: float | None, end: LabelingEnd = NOTHING_LEFT
) -> RuleResult:
    """The rule after the final reading: labeling has ended (`end`: a lead closed it, or nothing is
    left a cycle could draw).

    A rule the running reading already decided keeps its status (reading "running"); otherwise the
    fixed-sample bounds at the final levels decide (:func:`final_levels`: ci_low a one-sided bound at
    the lower side's alpha_final, ci_high at the upper side's): for the agreement, revise iff
    ci_high < target, ok iff ci_low >= target; for the direction, lenient iff ci_low > 0, strict iff
    ci_high < 0.  Together with the running rule a false decision on either side has chance <= that
    side's alpha_running + alpha_final (:func:`error_split`).  The end must be declared by something
    other than the labels' outcome: a lead's closing, which takes the reading once
    (:class:`LabelingEnd`), or nothing left to label.  Source: Jennison & Turnbull (2000), sec. 1.3
    (a final analysis beside interim ones) with the Bonferroni split; the intervals are the report's
    own design-based ones (:func:`estimation.agreement_estimate`, :func:`estimation.direction_estimate`).
    """
    read = replace(rule, final_low=ci_low, final_high=ci_high, end=end)
    undecided = rule.status in ("inconclusive", "none")
    if not undecided or ci_low is None or ci_high is None:
        return read
    if rule.rule == "agreement":
        status = "revise" if ci_high < rule.threshold else "ok" if ci_low >= rule.threshold else rule.status
    elif rule.rule == "direction":
        status = (
            "lenient" if ci_low > rule.threshold else "strict" if ci_high < rule.threshold else rule.status
        )
    else:
        raise ValueError(f"no final reading for the {rule.rule} rule")
    return replace(read, status=status, reading="final" if status != rule.status else "running")


def final_levels(alpha: float, rule: Literal["agreement", "direction"]) -> tuple[float, float]:
    """The two-sided levels of the intervals whose lower and upper ends the final reading reads
    (:func:`final_reading`): 1 - 2 alpha_final of each side, the agreement's lower end at the "ok"
    side's (0.99 at alpha 0.05) and its upper end at the "revise" side's (0.95), the direction's both
    at half the "direction" side's (0.975: each way of the direction has half its budget)."""
    if rule == "agreement":
        return 1 - 2 * error_split(alpha, "ok")[1], 1 - 2 * error_split(alpha, "revise")[1]
    level = 1 - error_split(alpha, "direction")[1]
    return level, level


def ratio_interval(
    y: np.ndarray, m: np.ndarray, *, confidence: float = 0.95, clip: tuple[float, float] = (-1.0, 1.0)
) -> tuple[float, float] | None:
    """Fixed-sample normal interval of R = sum y / sum m with the answer-clustered (linearised) variance.

    R +- z se, se from :func:`_ratio_se` (V(R) = n/(n-1) sum_i (y_i - R m_i)^2 / (sum m)^2).  Source:
    Cochran (1977), Sampling Techniques, sec. 6.4 (ratio estimate, with replacement form).  None with
    fewer than 2 answers or zero spread.
    """
    y = np.asarray(y, dtype=float)
    m = np.asarray(m, dtype=float)
    if y.size < 2 or m.sum() <= 0:
        return None
    r = float(y.sum() / m.sum())
    se = _ratio_se(y, m)
    if se <= 1e-9:
        return None
    h = z_value(confidence) * se
    return max(clip[0], r - h), min(clip[1], r + h)


def direction_rule(
    diff: np.ndarray,
    m: np.ndarray,
    *,
    alpha: float = 0.05,
    weights: np.ndarray | None = None,
    confidence: float = 0.95,
) -> RuleResult:
    """The running reading of the direction: does the judge say SUPPORTED more or less often than humans?

    Per answer ``diff`` = lenient - strict claims (judge SUPPORTED where the human is not, minus the
    reverse) and ``m`` its claims; the estimand is the claim-level bias index (lenient - strict)/n
    (Byrt, Bishop & Carlin 1993), design-weighted with ``weights``.  With alpha_running =
    :func:`error_split` (alpha, "direction")[0]: lenient iff the sequence's lower bound > 0, strict iff
    its upper bound < 0, each side at alpha_running / 2 (:func:`confidence_sequence` on [-1, 1]), so an
    unbiased judge is called either with chance <= alpha_running at any look.  Beside it the fixed-sample
    claim-level interval of (lenient - strict)/n, clustered by answer (:func:`ratio_interval`).
    """
    running, final = error_split(alpha, "direction")
    each_side = (running / 2, final / 2)
    # Each claim is worth -1, 0 or 1: no independent-claims floor (it would take 1 at 0, far above a
    # claim's variance when most claims agree).
    cs = confidence_sequence(
        diff, m, lo=-1.0, hi=1.0, alpha=running / 2, theta0=0.0, weights=weights, binary=False
    )
    if cs.estimate is None:
        return RuleResult(
            "direction",
            "none",
            None,
            None,
            None,
            None,
            None,
            0.0,
            DIRECTION_BOUND,
            0,
            "running",
            None,
            None,
            each_side,
            each_side,
        )
    yy = np.asarray(diff, dtype=float).reshape(-1)
    mm = np.asarray(m, dtype=float).reshape(-1)
    if weights is not None:
        w = np.asarray(weights, dtype=float).reshape(-1)
        yy, mm = yy * w, mm * w
    fixed = ratio_interval(yy, mm, confidence=confidence)
    above = cs.lower is not None and cs.lower > 0
    status = "lenient" if above else "strict" if cs.below else "none"
    return RuleResult(
        "direction",
        status,
        cs.estimate,
        cs.lower,
        cs.upper,
        None if fixed is None else fixed[0],
        None if fixed is None else fixed[1],
        0.0,
        DIRECTION_BOUND,
        cs.n_answers,
        alpha_low=each_side,
        alpha_high=each_side,
    )


def kappa_rule(kappa: float | None, kappa_ci_high: float | None, floor: float) -> RuleResult:
    """revise when kappa's fixed-sample upper bound is below the floor; never on the point estimate alone.

    An upper bound of None (SE zero: perfect agreement, or one rater on one class) cannot show kappa
    below the floor, so the rule passes; an undefined kappa says "undefined".
    """
    if kappa is None:
        return RuleResult("kappa", "undefined", None, None, None, None, None, floor, KAPPA_BOUND)
    status = "revise" if kappa_ci_high is not None and kappa_ci_high < floor else "pass"
    return RuleResult("kappa", status, kappa, None, kappa_ci_high, None, kappa_ci_high, floor, KAPPA_BOUND)


FlagStatus = Literal["ok", "revise", "inconclusive"]


@dataclass(frozen=True, slots=True)
class Decision:
    """The flag's status, its codes, the rules behind it and which reading decided ("running" or
    "final"; "running" too while nothing is decided)."""

    status: FlagStatus
    codes: tuple[str, ...]
    rules: tuple[RuleResult, ...] = field(default=())
    reading: Reading = "running"

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "codes": list(self.codes),
            "reading": self.reading,
            **{r.rule: r.to_dict() for r in self.rules},
        }


def decide(
    agreement: RuleResult, direction: RuleResult | None = None, kappa: RuleResult | None = None
) -> Decision:
    """The flag from the three rules: revise if any fires, ok if agreement is shown to meet the target
    and none fires, else inconclusive.  Codes as in :func:`flag.decide_flag`; ``reading`` "final" when
    a rule the flag rests on was decided by the final reading."""
    codes: list[str] = []
    fired: list[RuleResult] = []
    if agreement.status == "revise":
        codes.append("agreement_below_target")
        fired.append(agreement)
    if kappa is not None and kappa.status == "revise":
        codes.append("kappa_below_floor")
        fired.append(kappa)
    if direction is not None and direction.status in ("lenient", "strict"):
        codes.append(f"judge_{direction.status}")
        fired.append(direction)
    rules = tuple(r for r in (agreement, direction, kappa) if r is not None)

    def reading(used: list[RuleResult]) -> Reading:
        return "final" if any(r.reading == "final" for r in used) else "running"

    if codes:
        return Decision("revise", tuple(codes), rules, reading(fired))
    if agreement.status == "ok":
        return Decision("ok", ("agreement_meets_target",), rules, reading([agreement]))
    if agreement.estimate is None:
        return Decision("inconclusive", ("no_data",), rules)
    return Decision("inconclusive", ("agreement_undecided",), rules)


# --------------------------------------------------------------------------------------------
# P(agreement >= target)
# --------------------------------------------------------------------------------------------


def prob_at_least_target(successes: float, n: float, target: float) -> float | None:
    """P(p >= target | data) under the Jeffreys prior: 1 - I_target(x + 1/2, n - x + 1/2).

    Posterior Beta(x + 1/2, n - x + 1/2); I_t(a, b) is the regularised incomplete beta function
    (``scipy.special.betainc(a, b, t)``).  Source: Jeffreys (1946); Brown, Cai & DasGupta (2001),
    Statistical Science 16(2):101-133, sec. 4.1.2 (the Jeffreys interval is this posterior's
    quantiles).  None for n = 0 (the posterior is the prior, and a "chance" from it says nothing).
    """
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes {successes} outside [0, {n}]")
    if not 0.0 <= target <= 1.0:
        raise ValueError("target must be in [0, 1]")
    return float(1.0 - betainc(successes + 0.5, n - successes + 0.5, target))


def prob_at_least_target_weighted(agree: np.ndarray, weights: np.ndarray, target: float) -> float | None:
    """:func:`prob_at_least_target` with design weights, an approximation: n_eff = (sum w)^2 / sum w^2
    (Kish) and x = p_w n_eff, p_w = sum w a / sum w (Hajek).  It treats the weighted sample as n_eff
    independent claims, ignoring the variance the strata remove and the clustering they add."""
    a = np.asarray(agree, dtype=float)
    w = np.asarray(weights, dtype=float)
    if a.shape != w.shape:
        raise ValueError("agree and weights differ in length")
    ne = kish_effective_n(w)
    if a.size == 0 or ne is None:
        return None
    p = float((w * a).sum() / w.sum())
    return prob_at_least_target(p * ne, ne, target)


def prob_at_least_target_design(
    value: float | None, se: float | None, target: float, df: float | None = None
) -> float | None:
    """P(agreement >= target) from the design-based estimate p, its standard error se and the df of its
    variance, read at the target as the Wilson interval beside it is: F_df((p - target) / se_target),
        se_target = se sqrt(target (1 - target) / (p (1 - p))),
    F_df the Student t distribution function.

    se_target is the standard error the design's effective size n_eff = p (1 - p) / se^2 gives a
    proportion at the target, so the chance is the one-sided score test of "agreement = target" at
    n_eff, the test the report's Wilson interval at the effective size inverts (Wilson 1927; Korn &
    Graubard 1998 for n_eff): P >= 1/2 exactly when the estimate is at or above the target, and the
    chance and the interval rest on one distribution.  The t with the variance's df carries the few
    answers the variance rests on (the flat-prior posterior of a mean with estimated variance, Gelman
    et al. 2013, Bayesian Data Analysis, 3rd ed., sec. 3.2).  The standard error at p itself said
    0.9-1 where about 0.8 of simulated runs of 12 answers of 1-5 claims met the target: a few short
    answers that happen to agree give a high p and a small se together; at the target an answer of m
    claims that agrees fully still has the spread ((1 - target) m)^2 (docs/decisions.md).  ``df``
    None: the normal.  None where se is missing or 0 (the caller falls back to the claim count,
    :func:`prob_at_least_target`).
    """
    if value is None or se is None or se <= _ZERO_SE:
        return None
    spread = value * (1 - value)
    at_target = se * math.sqrt(target * (1 - target) / spread) if spread > 0 else se
    z = (value - target) / max(at_target, _ZERO_SE)
    return float(stdtr(max(df, 1.0), z)) if df is not None else float(ndtr(z))


# Where P(agreement >= target) holds its level (bench/sim_flag.py, docs/decisions.md): calibrated
# within 0.05 from 20 labeled answers of 1-5 claims and from 12 answers of 10-30 claims; at 12-15
# answers of 1-5 claims it was off by 0.056-0.070, and fewer answers were not simulated.
CHANCE_MIN_ANSWERS: Final = 20
CHANCE_MIN_LONG_ANSWERS: Final = 12
CHANCE_LONG_CLAIMS: Final = 10  # claims per answer, on average, for the smaller count


def chance_withheld(answers: int, claims: int) -> str | None:
    """Why P(agreement >= target) is not given for `answers` labeled answers holding `claims`
    claims, or None when it is: from CHANCE_MIN_ANSWERS answers, or from CHANCE_MIN_LONG_ANSWERS
    answers of CHANCE_LONG_CLAIMS or more claims each on average. Below that the simulated chance
    strayed from the share of runs that met the target by more than 0.05 (like kappa's interval,
    it is withheld rather than shown off its level)."""
    if answers >= CHANCE_MIN_ANSWERS:
        return None
    if answers >= CHANCE_MIN_LONG_ANSWERS and claims >= CHANCE_LONG_CLAIMS * answers:
        return None
    return (
        f"{plural(answers, 'labeled answer')} are too few for it (it is given from "
        f"{CHANCE_MIN_ANSWERS} answers, or from {CHANCE_MIN_LONG_ANSWERS} answers of "
        f"{CHANCE_LONG_CLAIMS} or more claims each)"
    )


def prob_sentence(prob: float | None, target: float, withheld: str | None = None) -> str:
    """ "92% chance the judge meets the 85% target" (rounded; never 0% or 100% from a finite sample);
    `withheld`: why no chance is given (`chance_withheld`)."""
    if withheld is not None:
        return f"no chance of meeting the {share(target)} target is given yet: {withheld}"
    if prob is None:
        return f"no labeled claims yet: no chance can be given for the {share(target)} target"
    percent = 100 * prob
    shown = "<1" if percent < 1 else ">99" if percent > 99 else f"{percent:.0f}"
    return f"{shown}% chance the judge meets the {share(target)} target"


# --------------------------------------------------------------------------------------------
# How many more
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MoreClaims:
    """Claims still to label for one goal, with the sentence saying what they buy.

    For the target, ``more_claims`` is the median of the simulated stopping time, ``low``/``high`` its
    10% and 90% points (None: beyond what was simulated), ``available`` the run's unlabeled claims.
    """

    goal: Literal["decide_target", "kappa_half_width"]
    more_claims: int | None  # None: cannot be said (no spread to plan from) or beyond what the run gives
    decidable: bool
    sentence: str
    low: int | None = None
    high: int | None = None
    available: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "goal": self.goal,
            "more_claims": self.more_claims,
            "decidable": self.decidable,
            "sentence": self.sentence,
            "median": self.more_claims,
            "low": self.low,
            "high": self.high,
            "available": self.available,
        }


def more_claims_to_decide(
    y: np.ndarray,
    m: np.ndarray,
    target: float,
    *,
    alpha: float = 0.05,
    weights: np.ndarray | None = None,
    limit: int = PRACTICAL_MORE_CLAIMS,
    rule: RuleResult | None = None,
    available: int | None = None,
    labels_per_claim: float = 1.0,
    reps: int = 400,
    seed: int = 0,
) -> MoreClaims:
    """More claims until the agreement target is decided: the running rule's stopping time (or the final
    reading's, when the run runs out), simulated from today's labels.

    Each of ``reps`` simulated continuations draws weights g ~ Dirichlet(a, ..., a) over the n labeled
    answers, a = :data:`PLAN_CONCENTRATION` (a = 1 is the Bayesian bootstrap, Rubin 1981, Ann.
    Statist. 9(1):130: the posterior of the answers' distribution under a flat Dirichlet prior; a > 1
    narrows it, each weight's variance (n - 1) / (n^2 (n a + 1)), chosen by simulation so that the 80%
    range holds about 80% of realised stopping times), which carries both the agreement's
    uncertainty, through the weighted mean, and the answers' spread, and draws the future answers from
    them; then runs the running rule (:func:`running_bounds`, carried on from today's sums) over them
    until a bound crosses the target.  Runs are simulated up to what the run can give, ``available`` unlabeled
    claims (else ``limit``, 5,000); when the run runs out first, the final reading decides if the
    fixed-sample bound p - t_{n-1, 1 - alpha_final,ok} se or p + t_{n-1, 1 - alpha_final,revise} se of
    all its labels passes the target
    (:func:`final_reading`), else the run counts as undecided.  ``more_claims`` is the median stopping
    time in claims (``labels_per_claim`` verdicts make one claim), ``low``/``high`` its 10% and 90%
    points; below half the runs deciding, no number is given: "not decidable with what this run can
    give".  A plan from today's data (the posterior predictive simulation of a sample size), not a
    guarantee; bench/sim_flag.py measures how often the 80% range holds the realised stopping time.
    """
    goal = f"to decide the {share(target)} target"
    yw, mw = _weighted(y, m, weights)
    n = yw.size
    if n == 0:
        return MoreClaims("decide_target", None, False, f"no labeled claims yet {goal}", available=available)
    if rule is None:  # the caller may pass the agreement rule it already computed on the same data
        rule = agreement_rule(y, m, target, alpha=alpha, weights=weights)
    if rule.status in ("ok", "revise"):
        return MoreClaims(
            "decide_target", 0, True, f"the {share(target)} target is already decided", 0, 0, available
        )
    (run_ok, final_ok), (run_revise, final_revise) = error_split(alpha, "ok"), error_split(alpha, "revise")
    p = float(yw.sum() / mw.sum())
    horizon_claims = limit if available is None else min(limit, available)
    per_answer = float(np.asarray(m, dtype=float).mean()) / labels_per_claim
    h = math.ceil(horizon_claims / max(per_answer, 1e-12))
    bounded = available is not None and available < limit
    if h <= 0:
        return MoreClaims(
            "decide_target",
            None,
            False,
            f"not decidable with what this run can give: it has no unlabeled claims {goal}; import more "
            "answers",
            None,
            None,
            available,
        )
    rng = np.random.default_rng(seed)
    g = rng.dirichlet(np.full(n, PLAN_CONCENTRATION), size=reps)
    pick = np.stack([rng.choice(n, size=h, p=row) for row in g])
    fm, fy = mw[pick], yw[pick]
    t = np.arange(n + 1, n + h + 1, dtype=float)
    sums = [
        float(base.sum()) + np.cumsum(fut, axis=1)
        for base, fut in ((yw, fy), (mw, fm), (yw * yw, fy * fy), (yw * mw, fy * fm), (mw * mw, fm * fm))
    ]
    _, _, high = _bounds_from_sums(
        t, *sums, lo=0.0, hi=1.0, alpha=run_revise, t_star=MIXTURE_ANSWERS, binary=True
    )
    _, low, _ = _bounds_from_sums(t, *sums, lo=0.0, hi=1.0, alpha=run_ok, t_star=MIXTURE_ANSWERS, binary=True)
    low = np.maximum(np.maximum.accumulate(low, axis=1), rule.bound_low or 0.0)
    high = np.minimum(
        np.minimum.accumulate(high, axis=1), 1.0 if rule.bound_high is None else rule.bound_high
    )
    hit = (low >= target) | (high < target)
    step = np.where(hit.any(axis=1), hit.argmax(axis=1), -1)
    claims_at = np.cumsum(np.asarray(m, dtype=float)[pick], axis=1) / labels_per_claim
    more = np.where(step >= 0, claims_at[np.arange(reps), np.maximum(step, 0)], np.inf)
    if bounded:
        # The run runs out: the final reading of all its labels, at the final level.
        end_p = sums[0][:, -1] / sums[1][:, -1]
        end_se = (
            np.sqrt(
                (t[-1] / max(t[-1] - 1, 1))
                * (sums[2][:, -1] - 2 * end_p * sums[3][:, -1] + end_p**2 * sums[4][:, -1]).clip(0)
            )
            / sums[1][:, -1]
        )
        df = max(t[-1] - 1, 1)
        q_ok, q_revise = float(stdtrit(df, 1 - final_ok)), float(stdtrit(df, 1 - final_revise))
        at_end = (end_p - q_ok * end_se >= target) | (end_p + q_revise * end_se < target)
        more = np.where(np.isinf(more) & at_end, claims_at[:, -1], more)
    decided = float(np.isfinite(more).mean())
    # Order statistics, no interpolation: runs that never decide are infinite.
    q10, q50, q90 = (float(np.quantile(more, qq, method="higher")) for qq in (0.1, 0.5, 0.9))

    def count(value: float) -> int | None:
        return None if not math.isfinite(value) else max(1, math.ceil(value))

    low_c, med, high_c = count(q10), count(q50), count(q90)
    within = f"the run's {available:,} unlabeled claims" if bounded else f"{limit:,} more claims"
    if med is None:
        first = (
            f"not decidable with what this run can give: labeling all its {available:,} unlabeled claims "
            "decides"
            if bounded
            else f"even {limit:,} more claims decide"
        )
        return MoreClaims(
            "decide_target",
            None,
            False,
            f"{first} the {share(target)} target in only {100 * decided:.0f}% of runs simulated from "
            f"today's labels (agreement {pct(p)}): import more answers",
            low_c,
            None,
            available,
        )
    spread = (
        f"80% of simulated runs between {low_c:,} and {high_c:,}"
        if high_c is not None
        else f"at least {low_c:,} in 9 of 10 simulated runs; {100 * (1 - decided):.0f}% do not decide "
        f"within {within}"
    )
    return MoreClaims(
        "decide_target",
        med,
        True,
        f"label about {med:,} more claims {goal} (the median stopping time simulated from today's "
        f"labels, agreement {pct(p)}; {spread})",
        low_c,
        high_c,
        available,
    )


def _ratio_se(y: np.ndarray, m: np.ndarray) -> float:
    """sqrt(n/(n - 1) sum (y_i - R m_i)^2) / sum m, R = sum y / sum m: the answer-clustered linearised
    standard error of a ratio (Cochran 1977, sec. 6.4); with one answer, that of one claim at R."""
    n = y.size
    r = float(y.sum() / m.sum())
    if n < 2:
        return math.sqrt(max(r * (1 - r), 0.0) / float(m.sum()))
    return math.sqrt(n / (n - 1) * float(((y - r * m) ** 2).sum())) / float(m.sum())


def more_claims_for_kappa(
    se: float | None,
    n: int,
    *,
    half_width: float = 0.10,
    confidence: float = 0.95,
    design_effect: float = 1.0,
    limit: int = PRACTICAL_MORE_CLAIMS,
    withheld: str | None = None,
) -> MoreClaims:
    """More claims for a kappa interval of +-half_width, from the unclipped FCE standard error.

    N = ceil(deff z^2 n SE^2 / h^2) total claims (the FCE variance is V/n, V = n SE^2; Fleiss, Levin &
    Paik 2003, Statistical Methods for Rates and Proportions, sec. 18.1); more = N - n.  ``design_effect``
    multiplies it (Kish n / n_eff for weights, or an answer-bootstrap variance ratio for clustering).
    The SE is the unclipped one: the interval's clipped upper end (at 1) would understate it.
    ``withheld``: why the kappa interval is not shown, if it is not; then it is never "already within".
    An SE below ``_ZERO_SE`` counts as zero.
    """
    goal = f"for a kappa interval of ±{half_width:.2f}"
    # A standard error within rounding of 0 is an exact zero that float sums left a residue on.
    if se is None or not math.isfinite(se) or se <= _ZERO_SE or n <= 0:
        return MoreClaims(
            "kappa_half_width",
            None,
            False,
            f"no standard error to plan from {goal} (kappa undefined or without spread)",
        )
    z = z_value(confidence)
    total = math.ceil(design_effect * z * z * n * se * se / (half_width * half_width) - 1e-9)
    more = max(0, total - n)
    if more == 0 and withheld is not None:
        return MoreClaims(
            "kappa_half_width",
            None,
            False,
            f"kappa's interval is withheld ({withheld}): label more claims before it is shown",
        )
    if more == 0:
        return MoreClaims(
            "kappa_half_width", 0, True, f"kappa's interval is already within ±{half_width:.2f}"
        )
    if more > limit:
        return MoreClaims(
            "kappa_half_width",
            None,
            False,
            f"more than {limit:,} more claims {goal}: beyond a practical labeling effort",
        )
    return MoreClaims("kappa_half_width", more, True, f"label {more:,} more claims {goal}")


# --------------------------------------------------------------------------------------------
# The human ceiling
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Interval:
    value: float | None
    ci_low: float | None
    ci_high: float | None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "value": optional_float(self.value),
            "ci_low": optional_float(self.ci_low),
            "ci_high": optional_float(self.ci_high),
        }
        if self.reason:
            d["reason"] = self.reason
        return d


def _ratio_estimate(y: np.ndarray, m: np.ndarray, confidence: float) -> Interval:
    """Pooled ratio with the unit-clustered linearised interval (:func:`ratio_interval`), in [0, 1]."""
    if m.sum() <= 0:
        return Interval(None, None, None, "no pairs")
    value = float(y.sum() / m.sum())
    ci = ratio_interval(y, m, confidence=confidence, clip=(0.0, 1.0))
    if ci is None:
        why = "fewer than 2 units" if y.size < 2 else "no spread between units"
        return Interval(value, None, None, why)
    return Interval(value, ci[0], ci[1])


def benjamini_yekutieli(p_values: np.ndarray) -> np.ndarray:
    """Benjamini-Yekutieli adjusted p-values (FDR under arbitrary dependence).

    p~_(k) = min_{j>=k} min(1, m c(m) p_(j) / j), c(m) = sum_{i=1}^m 1/i; rejecting p~ <= q is the BY
    step-up procedure at level q.  Source: Benjamini & Yekutieli (2001), Ann. Statist. 29(4):1165-1188,
    Thm. 1.3; as statsmodels ``multipletests(method="fdr_by")``.
    """
    p = np.asarray(p_values, dtype=float)
    k = p.size
    if k == 0:
        return p
    order = np.argsort(p)
    cm = float((1.0 / np.arange(1, k + 1)).sum())
    scaled = p[order] * k * cm / np.arange(1, k + 1)
    adj = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    out = np.empty(k)
    out[order] = adj
    return out


@dataclass(frozen=True, slots=True)
class AltTest:
    """The alternative annotator test (leave one reviewer out)."""

    winning_rate: float | None
    p_value: float | None  # the ceil(k/2)-th smallest BY-adjusted p: passes iff <= q
    passes: bool
    advantage_probability: float | None
    epsilon: float
    q: float
    reviewers: tuple[int, ...]  # reviewers tested
    p_values: tuple[float, ...]
    p_adjusted: tuple[float, ...]
    n_instances: tuple[int, ...]
    skipped: tuple[int, ...]  # reviewers with too few shared claims
    verdict: str | None
    reason: str | None = None
    alignment: str = ALT_ALIGNMENT

    def to_dict(self) -> dict[str, Any]:
        return {
            "winning_rate": optional_float(self.winning_rate),
            "p_value": optional_float(self.p_value),
            "passes": self.passes,
            "advantage_probability": optional_float(self.advantage_probability),
            "epsilon": self.epsilon,
            "alignment": self.alignment,
            "q": self.q,
            "verdict": self.verdict,
            "reason": self.reason,
            "n_reviewers_tested": len(self.reviewers),
            "n_reviewers_skipped": len(self.skipped),
        }


def _per_claim_counts(
    claim: np.ndarray, reviewer: np.ndarray, verdict: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Valid labels (verdict >= 0), deduplicated per (claim, reviewer), with per-claim verdict counts."""
    keep = verdict >= 0
    c, r, v = claim[keep], reviewer[keep], verdict[keep]
    key = c * (int(r.max(initial=0)) + 1) + r
    _, first = np.unique(key, return_index=True)
    if first.size != key.size:
        raise ValueError("a reviewer has two verdicts on one claim")
    n_claims = int(claim.max(initial=-1)) + 1
    cnt = np.bincount(c * k + v, minlength=n_claims * k).reshape(n_claims, k)
    return c, r, v, cnt


def _leave_one_out(
    cnt: np.ndarray, total: np.ndarray, ci: np.ndarray, vi: np.ndarray, jd: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per instance of one reviewer: S_j, S_f (share of the other reviewers agreeing with the reviewer,
    with the judge) and the others' majority class as fractions over the classes (ties split evenly)."""
    others = total[ci] - 1
    s_j = (cnt[ci, vi] - 1) / others
    jv = jd[ci]
    s_f = (cnt[ci, jv] - (jv == vi)) / others
    rest = cnt[ci].astype(float)
    rest[np.arange(ci.size), vi] -= 1
    top = rest == rest.max(axis=1, keepdims=True)
    return s_j, s_f, top / top.sum(axis=1, keepdims=True)


def balancing_weights(majority: np.ndarray) -> np.ndarray:
    """Inverse-probability weights of instances by their leave-one-out majority class.

    pi_y = 1 / (L p_y), p_y the share of the reviewer's instances whose majority vote (of the other
    reviewers) is y, L the number of classes that occur; an instance's weight is sum_y frac_y pi_y
    (frac: its majority class, split evenly over ties).  Each class then weighs the same in a weighted
    mean.  Source: Calderon, Reichart & Dror (2025), App. C.1 "Handling imbalanced labels".
    """
    p = majority.mean(axis=0)
    present = p > 0
    pi = np.where(present, 1.0 / np.where(present, p * present.sum(), 1.0), 0.0)
    return majority @ pi


def _weighted_t(d: np.ndarray, w: np.ndarray, epsilon: float) -> tuple[float, float]:
    """One-sided p of H0: mean_w(d) >= epsilon, and mean_w(d); t on the Kish effective size.

    d_bar = sum w d / sum w, n_w = (sum w)^2 / sum w^2, s_w^2 = n_w / (n_w - 1) sum w (d - d_bar)^2 / sum w,
    t = (d_bar - epsilon) / (s_w / sqrt(n_w)), p = T_{n_w - 1}(t) (Calderon et al. 2025, App. C.1; with
    equal weights the paper's one-sample t-test).  With s_w = 0 the sign of d_bar - epsilon decides.
    """
    sw = float(w.sum())
    mean = float((w * d).sum() / sw)
    n_w = sw * sw / float((w * w).sum())
    var = float((w * (d - mean) ** 2).sum() / sw) * n_w / max(n_w - 1, 1e-12)
    if var <= 1e-30:
        return (0.0 if mean < epsilon else 1.0), mean
    return float(stdtr(max(n_w - 1, 1.0), (mean - epsilon) / math.sqrt(var / n_w))), mean


def alt_test(
    claim: np.ndarray,
    reviewer: np.ndarray,
    verdict: np.ndarray,
    judge: np.ndarray,
    *,
    epsilon: float = ALT_EPSILON,
    q: float = ALT_Q,
    min_instances: int = ALT_MIN_INSTANCES,
    alignment: Literal["balanced accuracy", "accuracy"] = ALT_ALIGNMENT,
) -> AltTest:
    """Can the judge stand in for a reviewer?  Calderon, Reichart & Dror (ACL 2025, arXiv:2501.10970).

    For each reviewer j and each claim i that j and at least one other reviewer labeled, with H_i^-j
    the other reviewers' verdicts: S_f = share of H_i^-j equal to the judge's verdict, S_j = share equal
    to j's verdict (the paper's accuracy alignment); W_f = [S_f >= S_j], W_j = [S_j >= S_f] (ties count
    for both).  d_i = W_j - W_f; one-sided t-test of H0: mean(d) >= epsilon against mean(d) < epsilon
    (the paper's test of rho_f >= rho_j - epsilon).  ``alignment`` "balanced accuracy" (the default)
    weights each instance by the inverse probability of its leave-one-out majority class
    (:func:`balancing_weights`, the paper's App. C.1) and tests the weighted mean on the Kish effective
    size (:func:`_weighted_t`): with 90% of claims SUPPORTED, plain accuracy lets a judge that says
    SUPPORTED everywhere tie with every reviewer on nine claims in ten; "accuracy" is the paper's
    unweighted test.  The k p-values are corrected by Benjamini-Yekutieli at level q (the paper's
    choice); the winning rate omega = share of tested reviewers whose H0 is rejected; the judge passes
    at omega >= 0.5.  Reviewers with fewer than ``min_instances`` shared claims are skipped (the
    paper's 30, for the t-test's normal approximation), and counted.  ``p_value`` = the ceil(k/2)-th
    smallest adjusted p, the smallest q at which the judge would pass.  The advantage probability rho
    = mean over reviewers of the (weighted) mean of W_f.

    ``epsilon`` is the lead's margin (:data:`ALT_EPSILON`, the authors' guidance for skilled
    reviewers).  The claims of one answer are treated as independent instances, as the paper treats
    its instances.

    Verdict: "as good as a typical reviewer" (passes), "not shown to be as good as any reviewer"
    (omega = 0: no reviewer's test rejects; failing the test means replacing a reviewer is not
    justified, not that the judge is worse, Calderon, Reichart & Dror 2025), otherwise "as good
    as some reviewers (j of k)". Whether the judge is worse than a reviewer is the paired
    comparisons' to say (the human ceiling's per-reviewer tests), never this verdict's.
    """
    c = np.asarray(claim, dtype=np.int64).reshape(-1)
    r = np.asarray(reviewer, dtype=np.int64).reshape(-1)
    v = np.asarray(verdict, dtype=np.int64).reshape(-1)
    jd = np.asarray(judge, dtype=np.int64).reshape(-1)
    if not (c.shape == r.shape == v.shape):
        raise ValueError("claim, reviewer and verdict must be of one length")
    if alignment not in ("balanced accuracy", "accuracy"):
        raise ValueError(f"unknown alignment {alignment!r}")
    k = len(LABELS)
    c, r, v, cnt = _per_claim_counts(c, r, v, k)
    if c.size and jd.size <= int(c.max()):
        raise ValueError("judge must give a verdict for every claim index")
    tested: list[int] = []
    pvals: list[float] = []
    sizes: list[int] = []
    skipped: list[int] = []
    adv: list[float] = []
    total = cnt.sum(axis=1)
    for j in np.unique(r).tolist():
        mine = r == j
        ci, vi = c[mine], v[mine]
        ok = (total[ci] >= 2) & (jd[ci] >= 0)
        ci, vi = ci[ok], vi[ok]
        if ci.size < min_instances:
            skipped.append(j)
            continue
        s_j, s_f, majority = _leave_one_out(cnt, total, ci, vi, jd)
        w_f = (s_f >= s_j).astype(float)
        w_j = (s_j >= s_f).astype(float)
        w = balancing_weights(majority) if alignment == "balanced accuracy" else np.ones(ci.size)
        p, _ = _weighted_t(w_j - w_f, w, epsilon)
        tested.append(j)
        pvals.append(p)
        sizes.append(int(ci.size))
        adv.append(float((w * w_f).sum() / w.sum()))
    if not tested:
        return AltTest(
            None,
            None,
            False,
            None,
            epsilon,
            q,
            (),
            (),
            (),
            (),
            tuple(skipped),
            None,
            f"no reviewer shares {min_instances} or more claims with another reviewer",
            alignment,
        )
    adj = benjamini_yekutieli(np.array(pvals))
    wins = int((adj <= q).sum())
    omega = wins / len(tested)
    p_pass = float(np.sort(adj)[math.ceil(len(tested) / 2) - 1])
    passes = omega >= 0.5
    if passes:
        verdict_s = "as good as a typical reviewer"
    elif wins == 0:
        verdict_s = "not shown to be as good as any reviewer"
    else:
        verdict_s = f"as good as some reviewers ({wins} of {len(tested)}), not a typical one"
    return AltTest(
        omega,
        p_pass,
        passes,
        float(np.mean(adv)),
        epsilon,
        q,
        tuple(tested),
        tuple(pvals),
        tuple(adj.tolist()),
        tuple(sizes),
        tuple(skipped),
        verdict_s,
        None,
        alignment,
    )


@dataclass(frozen=True, slots=True)
class ReviewerComparison:
    """The judge against one reviewer, both read against the other reviewers on that reviewer's claims."""

    reviewer: str
    judge: float  # share of the other reviewers' verdicts equal to the judge's
    reviewer_value: float  # share equal to this reviewer's
    p_value: float | None  # one-sided: the judge agrees less with the others than this reviewer does
    p_adjusted: float | None
    n_claims: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "reviewer": self.reviewer,
            "judge": self.judge,
            "reviewer_value": self.reviewer_value,
            "p_value": optional_float(self.p_value),
            "p_adjusted": optional_float(self.p_adjusted),
            "n_claims": self.n_claims,
        }


def reviewer_comparisons(
    claim: np.ndarray,
    reviewer: np.ndarray,
    verdict: np.ndarray,
    judge: np.ndarray,
    names: list[str],
    *,
    cluster: np.ndarray | None = None,
    min_instances: int = ALT_MIN_INSTANCES,
) -> tuple[ReviewerComparison, ...]:
    """Per reviewer j: how often the other reviewers agree with the judge vs with j, on j's shared claims.

    On each claim i that j and another reviewer labeled, S_f,i and S_j,i as in :func:`alt_test`;
    judge = mean S_f, reviewer_value = mean S_j, and the paired difference D_i = S_j,i - S_f,i is tested
    one-sided (H1: the judge agrees less) with the answer-clustered variance of its mean,
    V = A/(A - 1) sum_a (D_a - D_bar m_a)^2 / n^2 over the A answers (D_a, m_a: sums and counts of
    answer a; Cochran 1977, sec. 6.4, claims of one answer being correlated), and t on A - 1 df.  The
    p-values are Benjamini-Yekutieli adjusted over the reviewers (as the alt-test's).  Reviewers with
    fewer than ``min_instances`` such claims are left out.  No margin: this says where the judge stands,
    the alt-test whether the lead's margin covers it.
    """
    c = np.asarray(claim, dtype=np.int64).reshape(-1)
    r = np.asarray(reviewer, dtype=np.int64).reshape(-1)
    v = np.asarray(verdict, dtype=np.int64).reshape(-1)
    jd = np.asarray(judge, dtype=np.int64).reshape(-1)
    c, r, v, cnt = _per_claim_counts(c, r, v, len(LABELS))
    total = cnt.sum(axis=1)
    unit = (
        np.arange(cnt.shape[0])
        if cluster is None
        else np.unique(np.asarray(cluster).reshape(-1), return_inverse=True)[1].reshape(-1)
    )
    found: list[tuple[int, float, float, float | None, int]] = []
    for j in np.unique(r).tolist():
        mine = r == j
        ci, vi = c[mine], v[mine]
        ok = (total[ci] >= 2) & (jd[ci] >= 0)
        ci, vi = ci[ok], vi[ok]
        if ci.size < max(min_instances, 2):
            continue
        s_j, s_f, _ = _leave_one_out(cnt, total, ci, vi, jd)
        d = s_j - s_f
        n = d.size
        _, a_inv = np.unique(unit[ci], return_inverse=True)
        d_a = np.bincount(a_inv, weights=d)
        m_a = np.bincount(a_inv).astype(float)
        big_a = d_a.size
        mean = float(d.mean())
        p: float | None = None
        if big_a >= 2:
            var = big_a / (big_a - 1) * float(((d_a - mean * m_a) ** 2).sum()) / n**2
            # No spread between answers: the sign of the mean difference is all the data says.
            p = float(stdtr(big_a - 1, -mean / math.sqrt(var))) if var > 1e-30 else float(mean <= 0)
        found.append((j, float(s_f.mean()), float(s_j.mean()), p, n))
    known = [i for i, f in enumerate(found) if f[3] is not None]
    adj: dict[int, float] = {}
    if known:
        adjusted = benjamini_yekutieli(np.array([found[i][3] for i in known], dtype=float))
        adj = dict(zip(known, adjusted.tolist(), strict=True))
    return tuple(
        ReviewerComparison(names[j] if 0 <= j < len(names) else str(j), jf, jr, p, adj.get(i), n)
        for i, (j, jf, jr, p, n) in enumerate(found)
    )


@dataclass(frozen=True, slots=True)
class HumanCeiling:
    n_claims: int  # claims with two or more reviewers
    judge_vs_reviewers: Interval
    reviewer_vs_reviewer: Interval
    per_reviewer: tuple[tuple[int, float, int], ...]  # (reviewer, judge agreement with them, claims)
    reviewer_kappa: Interval
    alt: AltTest
    unit: str
    comparisons: tuple[ReviewerComparison, ...] = ()
    q: float = ALT_Q

    @property
    def below_reviewers(self) -> int:
        """Reviewers the other reviewers agree with more than with the judge."""
        return sum(c.judge < c.reviewer_value for c in self.comparisons)

    @property
    def below_significantly(self) -> int:
        return sum(
            c.judge < c.reviewer_value and c.p_adjusted is not None and c.p_adjusted <= self.q
            for c in self.comparisons
        )

    def comparison_sentence(self) -> str:
        """ "below 13 of 13 reviewers, significantly for 9" (empty without comparisons)."""
        if not self.comparisons:
            return ""
        return (
            f"below {self.below_reviewers} of {len(self.comparisons)} reviewers, significantly for "
            f"{self.below_significantly}"
        )

    def to_dict(self) -> dict[str, Any]:
        alt = self.alt.to_dict()
        alt["per_reviewer"] = [c.to_dict() for c in self.comparisons]
        alt["below_reviewers"] = self.below_reviewers
        alt["below_reviewers_significantly"] = self.below_significantly
        return {
            "n_claims": self.n_claims,
            "judge_vs_reviewers": self.judge_vs_reviewers.to_dict(),
            "reviewer_vs_reviewer": self.reviewer_vs_reviewer.to_dict(),
            "reviewer_kappa": self.reviewer_kappa.to_dict(),
            "alt_test": alt,
            "unit": self.unit,
        }


def _pooled_kappa(pair_counts: np.ndarray, agree_pairs: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Kappa of pooled reviewer pairs (Fleiss 1971 form): (p_o - p_e) / (1 - p_e), p_e = sum_k pi_k^2,
    pi_k = share of category k over the labels in pairs (each label weighted by its claim's m - 1)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        po = agree_pairs / pairs
        pi = pair_counts / pair_counts.sum(axis=-1, keepdims=True)
        pe = (pi * pi).sum(axis=-1)
        return np.where(1 - pe > 1e-12, (po - pe) / (1 - pe), np.nan)


def human_ceiling(
    claim: np.ndarray,
    reviewer: np.ndarray,
    verdict: np.ndarray,
    judge: np.ndarray,
    *,
    cluster: np.ndarray | None = None,
    confidence: float = 0.95,
    epsilon: float = ALT_EPSILON,
    q: float = ALT_Q,
    min_instances: int = ALT_MIN_INSTANCES,
    resamples: int = 1000,
    seed: int = 0,
    names: list[str] | None = None,
) -> HumanCeiling | None:
    """The judge beside the reviewers, on the claims two or more reviewers labeled (unresolved included).

    Input as :class:`calibration.store.ReviewerColumns` holds it: one entry per (claim, reviewer) with
    ``claim`` the claim's position, ``reviewer`` an index, ``verdict`` an index into LABELS (-1 none;
    pass the blind verdicts for human-human agreement), and ``judge`` the judge's verdict per claim
    position.  ``cluster`` (answer per claim position) makes answers the unit of the intervals;
    without it claims are.

    * judge_vs_reviewers: sum over (claim, reviewer) of [judge = reviewer] / number of such labels, on
      the claims with >= 2 reviewers, so every reviewer's every such claim counts (nothing dropped for
      reviewers disagreeing);
    * reviewer_vs_reviewer: the share of agreeing reviewer pairs within a claim, sum_c sum_k C(n_ck, 2) /
      sum_c C(m_c, 2), on the same claims;
    * both with the unit-clustered linearised ratio interval (:func:`ratio_interval`; Cochran 1977,
      sec. 6.4): pairs and labels of one claim, and claims of one answer, are not independent;
    * reviewer_kappa: kappa of the pooled pairs (:func:`_pooled_kappa`), with a percentile bootstrap
      over units (Davison & Hinkley 1997, sec. 3.8), withheld when fewer than 10 units or no spread;
    * the alternative annotator test (:func:`alt_test`) with the lead's ``epsilon``, and beside it the
      per-reviewer paired comparison (:func:`reviewer_comparisons`; ``names`` the reviewers' names).
    None when no claim has two reviewers.
    """
    c0 = np.asarray(claim, dtype=np.int64).reshape(-1)
    r0 = np.asarray(reviewer, dtype=np.int64).reshape(-1)
    v0 = np.asarray(verdict, dtype=np.int64).reshape(-1)
    jd = np.asarray(judge, dtype=np.int64).reshape(-1)
    k = len(LABELS)
    c, r, v, cnt = _per_claim_counts(c0, r0, v0, k)
    mc = cnt.sum(axis=1)
    shared = mc >= 2
    if not shared.any():
        return None
    n_claims = int(shared.sum())
    if cluster is None:
        unit = np.arange(cnt.shape[0])
        unit_name = "claim"
    else:
        unit = np.unique(np.asarray(cluster).reshape(-1), return_inverse=True)[1].reshape(-1)
        if unit.size < cnt.shape[0]:
            raise ValueError("cluster must label every claim position")
        unit = unit[: cnt.shape[0]]
        unit_name = "answer"
    n_units = int(unit.max()) + 1
    on = shared[c]
    cj = c[on]
    hit = (jd[cj] == v[on]).astype(float)
    jy = np.bincount(unit[cj], weights=hit, minlength=n_units)
    jm = np.bincount(unit[cj], minlength=n_units).astype(float)
    agree_pairs = (cnt * (cnt - 1) // 2).sum(axis=1) * shared
    pairs = (mc * (mc - 1) // 2) * shared
    ry = np.bincount(unit, weights=agree_pairs.astype(float), minlength=n_units)
    rm = np.bincount(unit, weights=pairs.astype(float), minlength=n_units)
    used = rm > 0
    jvr = _ratio_estimate(jy[used], jm[used], confidence)
    rvr = _ratio_estimate(ry[used], rm[used], confidence)

    per: list[tuple[int, float, int]] = []
    for j in np.unique(r[on]).tolist():
        sel = r[on] == j
        per.append((j, float(hit[sel].mean()), int(sel.sum())))

    # Pooled kappa: labels in pairs weighted by (m_c - 1), the number of pairs each label is in.
    wlab = (cnt * (mc - 1)[:, None]) * shared[:, None]
    uc = np.zeros((n_units, k))
    np.add.at(uc, unit, wlab)
    uc, ua, up = uc[used], ry[used], rm[used]
    kap_value = float(_pooled_kappa(uc.sum(axis=0), ua.sum(), up.sum()))
    kap = Interval(optional_float(kap_value), None, None, "fewer than 10 units")
    nu = int(used.sum())
    if nu >= 10 and resamples > 0 and math.isfinite(kap_value):
        rng = np.random.default_rng(seed)
        draws = rng.integers(0, nu, size=(resamples, nu))
        mult = np.zeros((resamples, nu))
        np.add.at(mult, (np.repeat(np.arange(resamples), nu), draws.ravel()), 1.0)
        bk = _pooled_kappa(mult @ uc, mult @ ua, mult @ up)
        bk = bk[np.isfinite(bk)]
        tail = (1 - confidence) / 2
        if bk.size and np.ptp(bk) > 0:
            lo, hi = np.quantile(bk, [tail, 1 - tail])
            kap = Interval(kap_value, float(lo), float(hi))
        else:
            kap = Interval(optional_float(kap_value), None, None, "the resamples have no spread")
    alt = alt_test(c0, r0, v0, jd, epsilon=epsilon, q=q, min_instances=min_instances)
    comparisons = reviewer_comparisons(
        c0, r0, v0, jd, names or [], cluster=cluster, min_instances=min_instances
    )
    return HumanCeiling(n_claims, jvr, rvr, tuple(per), kap, alt, unit_name, comparisons, q)


@dataclass(frozen=True, slots=True)
class CappedThresholds:
    agreement_target: float
    kappa_floor: float
    capped_agreement: bool
    capped_kappa: bool
    rule: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "agreement_target": self.agreement_target,
            "kappa_floor": self.kappa_floor,
            "capped_agreement": self.capped_agreement,
            "capped_kappa": self.capped_kappa,
            "rule": self.rule,
        }


CAP_RULE: Final = (
    "effective target = min(target, reviewer-vs-reviewer agreement); "
    "effective floor = min(floor, reviewer-vs-reviewer kappa), both their point estimates; "
    f"only with {ALT_MIN_INSTANCES} or more claims labeled by several reviewers"
)


def capped_thresholds(
    agreement_target: float,
    kappa_floor: float,
    ceiling: HumanCeiling | None,
    *,
    min_claims: int = ALT_MIN_INSTANCES,
) -> CappedThresholds:
    """No threshold asks the judge for more than reviewers reach with each other.

    target' = min(target, A_rr), floor' = min(floor, K_rr), A_rr and K_rr the point estimates of
    reviewer-vs-reviewer agreement and kappa: a judge at the reviewers' own level is not flagged for
    falling short of the nominal target.  The point estimate, not a lower confidence bound: a bound
    falls as human data gets scarcer, so less data would make "ok" easier.  Without a ceiling the
    thresholds stay as given; so they do with fewer than ``min_claims`` (30, the alt-test's minimum)
    claims with several reviewers, where the ceiling itself is too uncertain to move a threshold.
    """
    t, f = agreement_target, kappa_floor
    capped_a = capped_k = False
    if ceiling is not None and ceiling.n_claims >= min_claims:
        a = ceiling.reviewer_vs_reviewer.value
        if a is not None and a < t:
            t, capped_a = a, True
        kv = ceiling.reviewer_kappa.value
        if kv is not None and kv < f:
            f, capped_k = kv, True
    return CappedThresholds(t, f, capped_a, capped_k, CAP_RULE)
