"""Decisions a lead can act on: a flag that survives repeated looks, P(agreement >= target), one honest
"how many more", and the human ceiling (is the judge as good as a reviewer?).

Pure functions over arrays: numpy and scipy only (plus the Wilson interval of
:mod:`calibration.estimation`, which is pure too).  Nothing here reads the store.

The sampling unit
-----------------
Claims cluster in answers (one retrieval, one writer), so claims of one answer are not independent, and
a sequential test fed claim by claim would be invalid: its martingale argument needs each new
observation's conditional mean to be the estimand given the past, which fails inside an answer.  The
unit is therefore the **answer**: answer i contributes its rate x_i = y_i / m_i (agreeing claims over
labeled claims, in [0, 1]; for the direction, (lenient - strict)/m_i in [-1, 1]), answers in the
order they were labeled.  The estimand is the mean of the answers' rates.  It equals the claim-level
agreement the report prints when agreement does not depend on how many claims an answer has; where it
does, the two differ, and the flag then speaks for "a typical answer".  A bet on the claim-level
ratio (y_i - theta m_i) must survive an answer whose B claims are all wrong, which caps the bet near
1/(theta B) and, measured, left the rule without power at 200 claims (ok for a 95% judge in 3% of runs).

The guarantee also needs the order labels arrive in to say nothing about their outcome. Reviewers
work through shuffled cycle queues, so their labels qualify; labels imported from a file share one
import time, and answers labeled at the same time enter the rules in a seeded random order
(:func:`answer_sums`), never the file's, which a file sorted by outcome (every disagreement last,
say) would turn into an early firing.

The rule's estimand is the claim-level agreement the report prints: each answer's rate is weighted
by its claims (and its design weight), so the betting sequence tests sum y / sum m, not the mean of
the answers' rates, which differ when agreement depends on an answer's length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import numpy as np
from scipy.special import betainc, stdtr

from .agreement import kish_effective_n, optional_float
from .estimation import wilson_interval, z_value
from .fmt import pct, share
from .vocab import LABELS

# Bets are truncated at c / (distance to the end of the range), which keeps every factor of the capital
# at least 1 - c > 0; Waudby-Smith & Ramdas (2024, sec. 5.1) suggest c = 1/2 or 3/4.  3/4 was chosen on
# the unweighted rule (a judge at 95% reached ok by 200 claims in 86% of simulated runs, 75% with 1/2).
# The claim-level rule the report runs reaches 64% with 3/4, 77% with 0.9 (bench/sim_flag.py).
BET_TRUNCATION: Final = 0.75
# Past this many more claims the target is called undecidable: at about a minute a claim it is some
# 80 reviewer hours, more than a team spends calibrating one judge, and the projection it comes from
# assumes today's estimate holds, which a sample that far out would itself move.
PRACTICAL_MORE_CLAIMS: Final = 5_000
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
# 2^-34 of the range: far below any figure shown, at half the cost of 60 steps on 20k answers.
_BISECT_STEPS: Final = 34


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
# Betting confidence sequence for a ratio of bounded sums
# --------------------------------------------------------------------------------------------


def plugin_bets(u: np.ndarray, *, alpha: float) -> np.ndarray:
    """Predictable plug-in bet sizes lambda_t (before truncation) for observations u in [0, 1], time last.

    lambda_t = sqrt(2 log(1/alpha) / (sigma2_{t-1} t log(1 + t))),
    sigma2_t = (1/4 + sum_{i<=t} (u_i - mu_i)^2) / (t + 1),  mu_t = (1/2 + sum_{i<=t} u_i) / (t + 1),
    with sigma2_0 = 1/4.  Source: Waudby-Smith & Ramdas (2024), "Estimating means of bounded random
    variables by betting", JRSS B 86(1), eq. (26)-(27) (the predictable plug-in, PrPl, with
    log(1/alpha) for a one-sided sequence).  lambda_t uses u_1..u_{t-1} only (predictable), which
    the validity needs.
    """
    u = np.asarray(u, dtype=float)
    t_len = u.shape[-1]
    t = np.arange(1, t_len + 1, dtype=float)
    mu = (0.5 + np.cumsum(u, axis=-1)) / (t + 1)
    dev = np.cumsum((u - mu) ** 2, axis=-1)
    sigma2 = (0.25 + dev) / (t + 1)
    prev = np.concatenate([np.full((*u.shape[:-1], 1), 0.25), sigma2[..., :-1]], axis=-1)
    return np.sqrt(2 * math.log(1 / alpha) / (prev * t * np.log1p(t)))


def log_capital(
    u: np.ndarray,
    theta: float | np.ndarray,
    bets: np.ndarray,
    *,
    side: Literal["above", "below"],
    scale: np.ndarray | float = 1.0,
    c: float = BET_TRUNCATION,
) -> np.ndarray:
    """Cumulative log capital of the hedged bet against mean(u) = theta, u in [0, 1], time last.

    above (evidence that the mean > theta): K_t = prod_{i<=t} (1 + l_i s_i (u_i - theta)),
        l_i = min(lambda_i, c/theta);
    below (evidence that the mean < theta): K_t = prod_{i<=t} (1 - l_i s_i (u_i - theta)),
        l_i = min(lambda_i, c/(1 - theta));
    s_i in (0, 1] a known per-observation scale (w_i / max w for design weights, else 1).

    Under mean <= theta ("above") or >= theta ("below"), K_t is a nonnegative supermartingale (each
    factor >= 1 - c > 0 with conditional mean <= 1), so by Ville's inequality
    P(sup_t K_t >= 1/alpha) <= alpha.  Each factor is monotone in theta (decreasing for "above",
    increasing for "below", the truncation included: in the truncated region the "above" factor is
    1 - c s + c s u / theta), so the values not rejected form an interval.  Source: Waudby-Smith &
    Ramdas (2024), sec. 4 (capital process, Prop. 1) and sec. 5 (hedged capital, Thm. 3, truncation
    at c/theta, c/(1 - theta)); Ville (1939).
    """
    u = np.asarray(u, dtype=float)
    th = np.asarray(theta, dtype=float)
    x = np.asarray(scale, dtype=float) * (u - th)
    with np.errstate(divide="ignore"):
        if side == "above":
            lam = np.minimum(bets, np.where(th > 0, c / np.maximum(th, 1e-300), np.inf))
            f = 1 + lam * x
        else:
            lam = np.minimum(bets, np.where(th < 1, c / np.maximum(1 - th, 1e-300), np.inf))
            f = 1 - lam * x
    return np.cumsum(np.log(f), axis=-1)


@dataclass(frozen=True, slots=True)
class ConfidenceSequence:
    """One-sided anytime-valid bounds on the mean of per-answer rates after the last answer.

    ``lower``/``upper``: each a one-sided (1 - alpha) bound, running intersection over all looks;
    together a (1 - 2 alpha) two-sided sequence.  ``above``/``below``: whether mean > theta0 /
    mean < theta0 was established at some look (the running maximum of the capital reached 1/alpha).
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


def _rates(
    y: np.ndarray,
    m: np.ndarray,
    weights: np.ndarray | None,
    max_weight: float | None,
    claim_level: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-answer rates y/m and scales w / max w (ones without weights).

    ``claim_level``: the weight of an answer is its design weight times its claims m, so the weighted
    mean of the rates is the claim-level ratio sum w y / sum w m.
    """
    y = np.asarray(y, dtype=float).reshape(-1)
    m = np.asarray(m, dtype=float).reshape(-1)
    if y.shape != m.shape:
        raise ValueError("y and m must be of one length")
    if (m <= 0).any():
        raise ValueError("every answer needs at least one claim (m > 0)")
    if (weights is None and not claim_level) or y.size == 0:
        return y / m, np.ones_like(y)
    if weights is None:
        weights = np.ones_like(y)
    elif claim_level and max_weight is not None:
        max_weight = None  # the claims change the largest weight: the largest observed one is used
    w = np.asarray(weights, dtype=float).reshape(-1)
    if w.shape != y.shape or not (np.isfinite(w) & (w > 0)).all():
        raise ValueError("weights must be positive and finite, one per answer")
    if claim_level:
        w = w * m
    top = float(w.max()) if max_weight is None else float(max_weight)
    if w.max() > top * (1 + 1e-12):
        raise ValueError(f"max_weight {top} is below a weight {w.max()}")
    return y / m, w / top


def confidence_sequence(
    y: np.ndarray,
    m: np.ndarray,
    *,
    lo: float = 0.0,
    hi: float = 1.0,
    alpha: float = 0.05,
    theta0: float | None = None,
    weights: np.ndarray | None = None,
    max_weight: float | None = None,
    c: float = BET_TRUNCATION,
    claim_level: bool = False,
) -> ConfidenceSequence:
    """Anytime-valid one-sided bounds on the mean over answers of x_i = y_i / m_i in [lo, hi], in label order.

    Each answer is one observation, its rate x_i = y_i / m_i (agreeing claims / labeled claims), so
    the claims' dependence inside an answer does no harm; the estimand is the mean of the answers'
    rates, which equals the claim-level rate whenever agreement does not depend on an answer's size
    (the bench checks the flag on runs of 1-5 claims per answer).  The claim-level ratio was tried
    first: a bet on y_i - theta m_i must survive an answer of B claims all wrong, which caps the bet
    at 1/(theta B) per claim and left the rule without power at 200 claims.

    With u = (x - lo)/(hi - lo): lower_t = sup{theta : max_{s<=t} K^above_s(theta) >= 1/alpha},
    upper_t likewise with K^below (:func:`log_capital`, :func:`plugin_bets`), by bisection, since
    max_s K_s(theta) is monotone in theta.  With ``theta0``, whether mean > theta0 (``above``) or
    < theta0 (``below``) is established, from the capital at theta0 itself (no bisection tolerance).

    ``weights`` (1/inclusion probability per answer): bets scaled by w_i / ``max_weight`` (default the
    largest observed; pass the run's largest weight for exactness).  Valid for answers drawn with
    replacement with probabilities proportional to 1/w (then E[w (x - theta)] has the sign of the run
    mean minus theta); an approximation for draws without replacement.

    ``claim_level``: bets scaled by w_i m_i / max(w m) instead, which makes the estimand the claim-level
    ratio sum w y / sum w m (E[w m (x - theta)] has its sign), the figure the report prints; the price is
    smaller bets on short answers.

    Source: Waudby-Smith & Ramdas (2024), JRSS B 86(1): hedged-capital confidence sequence (Thm. 3)
    with predictable plug-in bets (eq. 26-27); running intersection (sec. 3); Howard, Ramdas,
    McAuliffe & Sekhon (2021), Ann. Statist. 49(2): time-uniform validity via Ville's inequality.
    """
    x, scale = _rates(y, m, weights, max_weight, claim_level)
    n = x.size
    if n == 0:
        return ConfidenceSequence(None, None, None, 0, alpha, theta0)
    if (x < lo - 1e-12).any() or (x > hi + 1e-12).any():
        raise ValueError(f"rates must lie in [{lo}, {hi}]")
    span = hi - lo
    u = np.clip((x - lo) / span, 0.0, 1.0)
    est = float((scale * x).sum() / scale.sum())
    bets = plugin_bets(u, alpha=alpha)
    goal = math.log(1 / alpha)

    def evidence(theta_u: float, side: Literal["above", "below"]) -> float:
        return float(log_capital(u, theta_u, bets, side=side, scale=scale, c=c).max())

    def crossing(side: Literal["above", "below"]) -> float:
        a, z = 0.0, 1.0
        for _ in range(_BISECT_STEPS):
            mid = (a + z) / 2
            rejected = evidence(mid, side) >= goal
            if side == "above":
                a, z = (mid, z) if rejected else (a, mid)
            else:
                a, z = (a, mid) if rejected else (mid, z)
        # A side that rejects nothing leaves its bisection at the end of the range.
        return a if side == "above" else z

    lower, upper = lo + span * crossing("above"), lo + span * crossing("below")
    above = below = False
    if theta0 is not None:
        t0 = (theta0 - lo) / span
        above = evidence(t0, "above") >= goal
        below = evidence(t0, "below") >= goal
    return ConfidenceSequence(est, lower, upper, n, alpha, theta0, above, below)


# --------------------------------------------------------------------------------------------
# The three rules and the flag
# --------------------------------------------------------------------------------------------

AGREEMENT_BOUND: Final = (
    "anytime-valid betting confidence sequence over answers in label order "
    "(Waudby-Smith & Ramdas 2024): revise if its one-sided upper bound < target, "
    "ok if its one-sided lower bound >= target, each at alpha"
)
DIRECTION_BOUND: Final = (
    "anytime-valid betting test on (lenient - strict) per claim over answers in "
    "label order: lenient if its lower bound > 0, strict if its upper bound < 0, "
    "alpha/2 each"
)
KAPPA_BOUND: Final = "fixed-sample upper bound of kappa's 95% interval < floor"


@dataclass(frozen=True, slots=True)
class RuleResult:
    """One rule of the flag: what it says, the bound it used, and the fixed-sample interval beside it."""

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
        }


def agreement_rule(
    y: np.ndarray,
    m: np.ndarray,
    target: float,
    *,
    alpha: float = 0.05,
    weights: np.ndarray | None = None,
    max_weight: float | None = None,
    confidence: float = 0.95,
    claim_level: bool = False,
) -> RuleResult:
    """revise / ok / inconclusive for the agreement target, from answers in label order.

    ``y`` agreeing claims and ``m`` labeled claims per answer (:func:`answer_sums`).  revise iff the
    anytime upper bound (one-sided, alpha) < target; ok iff the anytime lower bound (one-sided, alpha)
    >= target; else inconclusive (:func:`confidence_sequence`).  Because the bounds hold uniformly over
    looks, a judge whose true agreement is >= target gets revise at any look with probability <= alpha,
    and one below the target gets ok with probability <= alpha.  ``estimate`` is the sequence's own
    estimand (mean of the answers' rates).  Beside it, the fixed-sample Wilson interval on the claims
    (``confidence``; Wilson 1927, :func:`estimation.wilson_interval`), valid at one pre-planned look only;
    with weights it uses the Kish effective size n_eff and x = p_w n_eff (an approximation).
    """
    cs = confidence_sequence(
        y, m, alpha=alpha, theta0=target, weights=weights, max_weight=max_weight, claim_level=claim_level
    )
    if cs.estimate is None:
        return RuleResult("agreement", "inconclusive", None, None, None, None, None, target, AGREEMENT_BOUND)
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
    )


def ratio_interval(
    y: np.ndarray, m: np.ndarray, *, confidence: float = 0.95, clip: tuple[float, float] = (-1.0, 1.0)
) -> tuple[float, float] | None:
    """Fixed-sample normal interval of R = sum y / sum m with the answer-clustered (linearised) variance.

    V(R) = n/(n-1) sum_i (y_i - R m_i)^2 / (sum m)^2.  Source: Cochran (1977), Sampling Techniques,
    sec. 6.4 (ratio estimate, with replacement form).  None with fewer than 2 answers or zero spread.
    """
    y = np.asarray(y, dtype=float)
    m = np.asarray(m, dtype=float)
    n = y.size
    if n < 2 or m.sum() <= 0:
        return None
    r = y.sum() / m.sum()
    v = n / (n - 1) * float(((y - r * m) ** 2).sum()) / float(m.sum()) ** 2
    if v <= 1e-18:
        return None
    h = z_value(confidence) * math.sqrt(v)
    return max(clip[0], r - h), min(clip[1], r + h)


def direction_rule(
    diff: np.ndarray,
    m: np.ndarray,
    *,
    alpha: float = 0.05,
    weights: np.ndarray | None = None,
    max_weight: float | None = None,
    confidence: float = 0.95,
    claim_level: bool = False,
) -> RuleResult:
    """lenient / strict / none: does the judge say SUPPORTED more or less often than the humans?

    Per answer ``diff`` = lenient - strict claims (judge SUPPORTED where the human is not, minus the
    reverse) and ``m`` its claims; the observation is diff / m in [-1, 1] and the estimand the mean
    over answers of that per-answer bias index (Byrt, Bishop & Carlin 1993: BI = (lenient - strict)/n).
    lenient iff the anytime lower bound (one-sided, alpha/2) > 0, strict iff the upper bound < 0
    (:func:`confidence_sequence` on [-1, 1]): the rule, either way, fires on an unbiased judge with
    probability <= alpha at any look, the two-sided level the exact McNemar rule had.  Beside it the
    fixed-sample claim-level interval of (lenient - strict)/n, clustered by answer (:func:`ratio_interval`).
    """
    cs = confidence_sequence(
        diff,
        m,
        lo=-1.0,
        hi=1.0,
        alpha=alpha / 2,
        theta0=0.0,
        weights=weights,
        max_weight=max_weight,
        claim_level=claim_level,
    )
    if cs.estimate is None:
        return RuleResult("direction", "none", None, None, None, None, None, 0.0, DIRECTION_BOUND)
    yy = np.asarray(diff, dtype=float).reshape(-1)
    mm = np.asarray(m, dtype=float).reshape(-1)
    if weights is not None:
        w = np.asarray(weights, dtype=float).reshape(-1)
        yy, mm = yy * w, mm * w
    fixed = ratio_interval(yy, mm, confidence=confidence)
    status = "lenient" if cs.above else "strict" if cs.below else "none"
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
    status: FlagStatus
    codes: tuple[str, ...]
    rules: tuple[RuleResult, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "codes": list(self.codes), **{r.rule: r.to_dict() for r in self.rules}}


def decide(
    agreement: RuleResult, direction: RuleResult | None = None, kappa: RuleResult | None = None
) -> Decision:
    """The flag from the three rules: revise if any fires, ok if agreement is shown to meet the target
    and none fires, else inconclusive.  Codes as in :func:`flag.decide_flag`."""
    codes: list[str] = []
    if agreement.status == "revise":
        codes.append("agreement_below_target")
    if kappa is not None and kappa.status == "revise":
        codes.append("kappa_below_floor")
    if direction is not None and direction.status in ("lenient", "strict"):
        codes.append(f"judge_{direction.status}")
    rules = tuple(r for r in (agreement, direction, kappa) if r is not None)
    if codes:
        return Decision("revise", tuple(codes), rules)
    if agreement.status == "ok":
        return Decision("ok", ("agreement_meets_target",), rules)
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


def prob_at_least_target_design(value: float | None, se: float | None, target: float) -> float | None:
    """:func:`prob_at_least_target` at the design's effective sample size n_eff = p (1 - p) / V and
    x = p n_eff, V the design-based (answer-clustered, stratified) variance of p: the Jeffreys posterior of
    a binomial sample as informative as the design (Kish 1965, sec. 8.2's design effect; the effective
    size of the intervals, Korn & Graubard 1998).  An approximation; None where p is 0 or 1 or V is 0 or
    unknown (the caller falls back to the claim count)."""
    if value is None or se is None or not 0.0 < value < 1.0 or se <= _ZERO_SE:
        return None
    n_eff = value * (1 - value) / se**2
    return prob_at_least_target(value * n_eff, n_eff, target)


def prob_sentence(prob: float | None, target: float) -> str:
    """ "92% chance the judge meets the 85% target" (rounded; never 0% or 100% from a finite sample)."""
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
    c: float = BET_TRUNCATION,
    rule: RuleResult | None = None,
    claim_level: bool = False,
    available: int | None = None,
    labels_per_claim: float = 1.0,
    reps: int = 300,
    seed: int = 0,
) -> MoreClaims:
    """More claims for the anytime agreement rule (:func:`agreement_rule`) to decide the target: the
    rule's own stopping time, simulated under the posterior.

    Each of ``reps`` runs draws the agreement theta from the posterior Beta(p n_e + 1/2, (1 - p) n_e + 1/2)
    (Jeffreys prior at the effective size n_e = p (1 - p) / V, V the answer-clustered variance of the
    rule's estimate p, Cochran 1977 sec. 6.4), then future answers by resampling the labeled ones
    (their claims, weights and rates, each rate shifted by theta - p and clipped to [0, 1]: a bootstrap
    of the answers moved to theta, so the spread between answers is the observed one); the capital of
    :func:`confidence_sequence` runs on, bets and all, until one side reaches 1/alpha.  The stopping
    time's median is ``more_claims``, its 10% and 90% points ``low`` and ``high`` (in claims:
    ``labels_per_claim`` verdicts make one claim).  Runs are simulated up to what the run can give,
    ``available`` unlabeled claims (else ``limit``, 5,000): past it a run counts as undecided, and when
    half of them are, no number is given, only what the run can and cannot do.  A plan from today's
    data (Waudby-Smith & Ramdas 2024 for the rule; the posterior predictive simulation of the sample
    size, e.g. Gelman et al. 2013, Bayesian Data Analysis, 3rd ed., sec. 6.3), not a guarantee.
    """
    goal = f"to decide the {share(target)} target"
    x, scale = _rates(y, m, weights, None, claim_level)
    if x.size == 0:
        return MoreClaims("decide_target", None, False, f"no labeled claims yet {goal}", available=available)
    if rule is None:  # the caller may pass the agreement rule it already computed on the same data
        rule = agreement_rule(y, m, target, alpha=alpha, weights=weights, claim_level=claim_level)
    if rule.status in ("ok", "revise"):
        return MoreClaims(
            "decide_target", 0, True, f"the {share(target)} target is already decided", 0, 0, available
        )
    mm = np.asarray(m, dtype=float).reshape(-1)
    n = x.size
    p = float(rule.estimate if rule.estimate is not None else x.mean())
    # The estimate is sum s x / sum s (s the bets' scale); its linearised variance over answers.
    v = float(n / (n - 1) * ((scale * (x - p)) ** 2).sum() / scale.sum() ** 2) if n >= 2 else 0.25
    n_e = p * (1 - p) / v if v > 0 and 0 < p < 1 else float(n)
    horizon_claims = limit if available is None else min(limit, available)
    per_answer = float(mm.mean()) / labels_per_claim
    h = math.ceil(horizon_claims / max(per_answer, 1e-12))
    bounded = available is not None and available < limit
    if h <= 0:
        return MoreClaims(
            "decide_target",
            None,
            False,
            "the run has no unlabeled claims: import more answers, or read the fixed-sample result",
            None,
            None,
            available,
        )
    rng = np.random.default_rng(seed)
    theta = rng.beta(p * n_e + 0.5, (1 - p) * n_e + 0.5, size=reps)
    pick = rng.integers(0, n, size=(reps, h))
    fm = mm[pick]
    fu = np.clip(x[pick] + (theta - p)[:, None], 0.0, 1.0)
    # The labeled answers are the same in every simulated run: their capital and the bets' running sums
    # (plugin_bets' mu, deviations and sigma^2) are computed once, then carried on over each run's
    # future answers only.
    t_obs = np.arange(1, n + 1, dtype=float)
    dev_n = float(((x - (0.5 + np.cumsum(x)) / (t_obs + 1)) ** 2).sum())
    t_f = np.arange(n + 1, n + h + 1, dtype=float)
    mu_f = (0.5 + float(x.sum()) + np.cumsum(fu, axis=1)) / (t_f + 1)
    sigma2_f = (0.25 + dev_n + np.cumsum((fu - mu_f) ** 2, axis=1)) / (t_f + 1)
    prev = np.concatenate([np.full((reps, 1), (0.25 + dev_n) / (n + 1)), sigma2_f[:, :-1]], axis=1)
    bets_f = np.sqrt(2 * math.log(1 / alpha) / (prev * t_f * np.log1p(t_f)))
    bets_obs = plugin_bets(x, alpha=alpha)
    need = math.log(1 / alpha)

    def crossing(side: Literal["above", "below"]) -> np.ndarray:
        start = float(log_capital(x, target, bets_obs, side=side, scale=scale, c=c)[-1])
        hit = start + log_capital(fu, target, bets_f, side=side, scale=scale[pick], c=c) >= need
        return np.where(hit.any(axis=1), hit.argmax(axis=1), -1)

    t_up, t_dn = crossing("above"), crossing("below")
    t = np.where((t_up >= 0) & ((t_dn < 0) | (t_up <= t_dn)), t_up, t_dn)  # future answers used, minus 1
    claims_at = np.cumsum(fm, axis=1) / labels_per_claim
    more = np.where(t >= 0, claims_at[np.arange(reps), np.maximum(t, 0)], np.inf)
    decided = float(np.isfinite(more).mean())
    # Order statistics, no interpolation: runs that never decide are infinite.
    q10, q50, q90 = (float(np.quantile(more, qq, method="higher")) for qq in (0.1, 0.5, 0.9))

    def count(value: float) -> int | None:
        return None if not math.isfinite(value) else max(1, math.ceil(value))

    low, med, high = count(q10), count(q50), count(q90)
    within = f"the run's {available:,} unlabeled claims" if bounded else f"{limit:,} more claims"
    if med is None:
        first = (
            f"the run has {available:,} unlabeled claims: labeling all of them decides"
            if bounded
            else f"even {limit:,} more claims decide"
        )
        return MoreClaims(
            "decide_target",
            None,
            False,
            f"{first} the {share(target)} target in only {100 * decided:.0f}% of runs simulated at today's "
            f"agreement ({pct(p)}): import more answers, or read the fixed-sample result",
            low,
            None,
            available,
        )
    spread = (
        f"80% of simulated runs between {low:,} and {high:,}"
        if high is not None
        else f"at least {low:,} in 9 of 10 simulated runs; {100 * (1 - decided):.0f}% do not decide "
        f"within {within}"
    )
    return MoreClaims(
        "decide_target",
        med,
        True,
        f"label about {med:,} more claims {goal} (the anytime rule's median stopping time "
        f"simulated at today's agreement {pct(p)}; {spread})",
        low,
        high,
        available,
    )


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
