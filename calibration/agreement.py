"""Agreement statistics: the LLM judge against human reviewers, each figure with its uncertainty.

Pure functions over counts: no I/O, no database, numpy and scipy only.

Conventions used throughout:

* A contingency table has rows = human (the reference) and columns = judge.
* The label order is ``LABELS``; classes nobody used are kept as empty rows/columns, so a
  table is always 3x3 and figures from different runs line up.
* "Undefined" is ``None``: never NaN, never a zero-width interval invented from a degenerate
  table.  A standard error of exactly zero (perfect agreement, or a rater who used a single
  category) also gives ``None`` for the interval: a normal interval of width zero would claim a
  certainty the data cannot give.

Main entry: :func:`agreement_report`.  Companion entries: :func:`compare_judge_runs`,
:func:`human_human_agreement`. The final human label of a claim is `final_label.resolve`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

import numpy as np

# scipy.special rather than scipy.stats: the same distribution functions (ndtri = normal
# quantile, bdtr/bdtrc = binomial cdf/sf, chdtrc = chi-square sf) at a third of the import
# time, which every CLI command and page that touches this module pays.
from scipy.special import bdtr, bdtrc, chdtrc, ndtri

# The Wilson interval lives with the design-based estimates (which, like the flag's rules in
# decisions.py, need it without importing this module); it is re-exported here.
from . import decisions, estimation
from .estimation import kappa_many, wilson_interval
from .vocab import LABELS

POSITIVE: Final = "SUPPORTED"
_INDEX: Final = {label: i for i, label in enumerate(LABELS)}

# A variance n*Var(kappa) or a 1 - p_e below this is rounding noise around an exact zero:
# degenerate tables give 0 analytically, but float sums leave ~1e-17 residues.
_ZERO_VAR: Final = 1e-12
# Bootstrap draws are generated in blocks of about this many cluster indices so that
# memory stays near 32 MB whatever the number of answers.
_BLOCK_DRAWS: Final = 4_000_000


def _z(confidence: float) -> float:
    return float(ndtri(0.5 + confidence / 2))


def _opt(x: float | None) -> float | None:
    """Python float or None, so results serialise to JSON without NaN or numpy scalars."""
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


# --------------------------------------------------------------------------------------------
# Records and results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LabeledClaim:
    """One claim with its final human label and the judge's verdict.

    ``weight`` is the answer's inverse inclusion probability 1/pi when the sample was drawn
    with unequal probabilities; give it for every claim or for none.
    """

    answer_id: str
    claim_key: str
    human: str
    judge: str
    weight: float | None = None


@dataclass(frozen=True, slots=True)
class PairedClaim:
    """One claim judged by two judge runs, with its final human label."""

    answer_id: str
    claim_key: str
    human: str
    judge_a: str
    judge_b: str


@dataclass(frozen=True, slots=True)
class Estimate:
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        return {"value": _opt(self.value), "ci_low": _opt(self.ci_low), "ci_high": _opt(self.ci_high)}


@dataclass(frozen=True, slots=True)
class KappaResult:
    value: float | None
    se: float | None
    ci_low: float | None
    ci_high: float | None
    kappa_max: float | None

    def to_dict(self) -> dict[str, float | None]:
        return {
            "value": _opt(self.value),
            "se": _opt(self.se),
            "ci_low": _opt(self.ci_low),
            "ci_high": _opt(self.ci_high),
            "kappa_max": _opt(self.kappa_max),
        }


@dataclass(frozen=True, slots=True)
class BootstrapInterval:
    ci_low: float | None
    ci_high: float | None
    resamples: int
    undefined: int
    seed: int | None
    reason: str | None = None  # why there is no interval, exactly when ci_low is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "ci_low": _opt(self.ci_low),
            "ci_high": _opt(self.ci_high),
            "resamples": self.resamples,
            "undefined_resamples": self.undefined,
            "seed": self.seed,
            "unit": "answer",
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class ClassMetrics:
    precision: float | None
    recall: float | None
    f1: float | None
    support: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "precision": _opt(self.precision),
            "recall": _opt(self.recall),
            "f1": _opt(self.f1),
            "support": self.support,
        }


@dataclass(frozen=True, slots=True)
class McNemarExact:
    """Exact (binomial) McNemar test on the discordant counts b and c."""

    b: int
    c: int
    p_two_sided: float | None
    p_b_greater: float | None
    p_c_greater: float | None


@dataclass(frozen=True, slots=True)
class ChiSquareTest:
    statistic: float
    df: int
    p_value: float

    def to_dict(self) -> dict[str, float | int]:
        return {"statistic": float(self.statistic), "df": int(self.df), "p_value": float(self.p_value)}


@dataclass(frozen=True, slots=True)
class PrevalenceBias:
    prevalence_index: float | None
    bias_index: float | None
    pabak: float | None


@dataclass(frozen=True, slots=True)
class Direction:
    lenient: int
    strict: int
    mcnemar: McNemarExact
    prevalence_bias: PrevalenceBias
    stuart_maxwell: ChiSquareTest | None
    bowker: ChiSquareTest | None
    lenient_claims: tuple[str, ...] = ()
    strict_claims: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "positive_class": POSITIVE,
            "lenient": self.lenient,
            "strict": self.strict,
            "mcnemar_exact_p": _opt(self.mcnemar.p_two_sided),
            "lenient_p": _opt(self.mcnemar.p_b_greater),
            "strict_p": _opt(self.mcnemar.p_c_greater),
            "prevalence_index": _opt(self.prevalence_bias.prevalence_index),
            "bias_index": _opt(self.prevalence_bias.bias_index),
            "pabak": _opt(self.prevalence_bias.pabak),
            "stuart_maxwell_p": None if self.stuart_maxwell is None else float(self.stuart_maxwell.p_value),
            "stuart_maxwell": None if self.stuart_maxwell is None else self.stuart_maxwell.to_dict(),
            "bowker_p": None if self.bowker is None else float(self.bowker.p_value),
            "bowker": None if self.bowker is None else self.bowker.to_dict(),
            "lenient_claims": list(self.lenient_claims),
            "strict_claims": list(self.strict_claims),
        }


@dataclass(frozen=True, slots=True)
class SampleSize:
    """Claims still needed, holding the current estimates and class mix fixed."""

    kappa_half_width: float
    more_claims_for_kappa: int | None
    more_claims_for_target: int | None
    # What each number buys, as the flag and the dashboard say it (decisions.MoreClaims).
    kappa_sentence: str = ""
    target_sentence: str = ""
    # The stopping time's 10% and 90% points and the run's unlabeled claims (decisions.MoreClaims).
    target_low: int | None = None
    target_high: int | None = None
    available: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kappa_half_width": self.kappa_half_width,
            "more_claims_for_kappa": self.more_claims_for_kappa,
            "more_claims_for_target": {"median": self.more_claims_for_target, "low": self.target_low,
                                       "high": self.target_high, "available": self.available},
            "for_kappa": self.kappa_sentence,
            "for_target": self.target_sentence,
        }


@dataclass(frozen=True, slots=True)
class WeightedAgreement:
    """Population-weighted agreement (Hajek) with the unweighted figure beside it."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    raw: float | None
    n_effective: float | None

    def to_dict(self) -> dict[str, float | None]:
        return {
            "value": _opt(self.value),
            "ci_low": _opt(self.ci_low),
            "ci_high": _opt(self.ci_high),
            "raw": _opt(self.raw),
            "n_effective": _opt(self.n_effective),
        }


@dataclass(frozen=True, slots=True)
class Thresholds:
    """When the flag says revise / ok.  Defaults from the issue (seed 000: ~85% agreement)."""

    agreement_target: float = 0.85
    kappa_floor: float = 0.60
    alpha: float = 0.05
    # The alternative annotator test's margin: how much worse than a reviewer the lead accepts the
    # judge to be (decisions.ALT_EPSILON: the authors' value for skilled reviewers).
    alt_epsilon: float = decisions.ALT_EPSILON

    def __post_init__(self) -> None:
        if not 0.0 < self.agreement_target <= 1.0:
            raise ValueError(f"agreement_target must be in (0, 1], got {self.agreement_target}")
        if not -1.0 <= self.kappa_floor <= 1.0:
            raise ValueError(f"kappa_floor must be in [-1, 1], got {self.kappa_floor}")
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")
        if not 0.0 <= self.alt_epsilon < 1.0:
            raise ValueError(f"alt_epsilon must be in [0, 1), got {self.alt_epsilon}")

    def to_dict(self) -> dict[str, float]:
        return {
            "agreement_target": self.agreement_target,
            "kappa_floor": self.kappa_floor,
            "alpha": self.alpha,
            "alt_epsilon": self.alt_epsilon,
        }


FlagStatus = Literal["ok", "revise", "inconclusive"]


@dataclass(frozen=True, slots=True)
class Reason:
    """One line of the flag: what fired, the figure behind it, and the claims behind the figure."""

    code: str
    message: str
    value: float | None
    claim_ids: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "value": _opt(self.value),
            "claim_ids": list(self.claim_ids),
        }


@dataclass(frozen=True, slots=True)
class Flag:
    status: FlagStatus
    reasons: tuple[Reason, ...]
    claims_needed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reasons": [r.to_dict() for r in self.reasons],
            "claims_needed": self.claims_needed,
        }


# --------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------


def label_index(label: str) -> int:
    """Position of a verdict in ``LABELS``; anything else is a caller bug, so it raises."""
    try:
        return _INDEX[label]
    except KeyError:
        raise ValueError(f"unknown verdict {label!r}; expected one of {', '.join(LABELS)}") from None


def confusion_matrix(human: Sequence[str], judge: Sequence[str]) -> np.ndarray:
    """3x3 count table, rows = human, columns = judge, in ``LABELS`` order (empty classes kept)."""
    if len(human) != len(judge):
        raise ValueError("human and judge verdict sequences differ in length")
    h = np.fromiter((label_index(x) for x in human), dtype=np.int64, count=len(human))
    j = np.fromiter((label_index(x) for x in judge), dtype=np.int64, count=len(judge))
    k = len(LABELS)
    return np.bincount(h * k + j, minlength=k * k).reshape(k, k)


def _square(table: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    t = np.asarray(table, dtype=float)
    if t.ndim != 2 or t.shape[0] != t.shape[1]:
        raise ValueError(f"expected a square table, got shape {t.shape}")
    if (t < 0).any():
        raise ValueError("table counts must be non-negative")
    return t


# --------------------------------------------------------------------------------------------
# 1. Percent agreement, Wilson interval
# --------------------------------------------------------------------------------------------


def percent_agreement(table: np.ndarray | Sequence[Sequence[float]], *, confidence: float = 0.95) -> Estimate:
    """Observed agreement p_o = trace(T)/n with its Wilson interval (None for an empty table)."""
    t = _square(table)
    n = t.sum()
    if n == 0:
        return Estimate(None)
    x = float(np.trace(t))
    lo, hi = wilson_interval(x, n, confidence=confidence)  # type: ignore[misc]
    return Estimate(x / n, lo, hi)


# --------------------------------------------------------------------------------------------
# 2. Cohen's kappa, its large-sample SE, kappa_max, cluster bootstrap
# --------------------------------------------------------------------------------------------


def kappa_max(table: np.ndarray | Sequence[Sequence[float]]) -> float | None:
    """Largest kappa the two raters' margins allow.

    kappa_max = (sum_i min(p_i., p_.i) - p_e) / (1 - p_e), p_e = sum_i p_i. p_.i.
    Source: Cohen (1960), Educ Psychol Meas 20:37-46; Sim & Wright (2005), Phys Ther 85:257.
    None where kappa itself is undefined (empty table, or p_e = 1).
    """
    t = _square(table)
    n = t.sum()
    if n == 0:
        return None
    r, c = t.sum(axis=1) / n, t.sum(axis=0) / n
    pe = float(r @ c)
    if 1 - pe <= _ZERO_VAR:
        return None
    return (float(np.minimum(r, c).sum()) - pe) / (1 - pe)


def cohens_kappa(table: np.ndarray | Sequence[Sequence[float]], *, confidence: float = 0.95) -> KappaResult:
    """Cohen's kappa with the Fleiss-Cohen-Everitt large-sample standard error and normal CI.

    kappa = (p_o - p_e) / (1 - p_e), p_o = sum_i p_ii, p_e = sum_i p_i. p_.i, and

    Var(kappa) = [ sum_i p_ii (1 - (p_i. + p_.i)(1 - kappa))^2
                   + (1 - kappa)^2 sum_{i != j} p_ij (p_.i + p_j.)^2
                   - (kappa - p_e (1 - kappa))^2 ] / (n (1 - p_e)^2).

    Source: Fleiss, Cohen & Everitt (1969), Psychol Bull 72:323-327; the "ASE" of SAS PROC FREQ
    (AGREE option) and ``statsmodels.stats.inter_rater.cohens_kappa``.

    Degenerate tables, as the formula gives them:
    * empty table, or both raters using one and the same category (p_e = 1): kappa is 0/0, so
      value, SE and interval are None;
    * one rater using a single category: kappa = 0 exactly and Var = 0, so the interval is None;
    * perfect agreement: kappa = 1 and Var = 0, so the interval is None.

    The interval is clipped to [-1, 1]: kappa cannot leave that range, but the normal
    approximation kappa +- z SE can (near-perfect agreement on few claims gives an upper bound
    above 1).
    """
    t = _square(table)
    n = t.sum()
    if n == 0:
        return KappaResult(None, None, None, None, None)
    p = t / n
    r, c = p.sum(axis=1), p.sum(axis=0)
    po = float(np.trace(p))
    pe = float(r @ c)
    if 1 - pe <= _ZERO_VAR:
        return KappaResult(None, None, None, None, None)
    kappa = (po - pe) / (1 - pe)
    diag = np.diag(p)
    a = float(diag @ (1 - (r + c) * (1 - kappa)) ** 2)
    # Cell (i, j) off the diagonal is weighted by (p_.i + p_j.)^2: column margin of its row
    # label plus row margin of its column label.
    cross = (c[:, None] + r[None, :]) ** 2
    off = p * cross
    b = (1 - kappa) ** 2 * float(off.sum() - np.trace(off))
    d = (kappa - pe * (1 - kappa)) ** 2
    var_n = (a + b - d) / (1 - pe) ** 2
    kmax = (float(np.minimum(r, c).sum()) - pe) / (1 - pe)
    if var_n <= _ZERO_VAR:
        return KappaResult(kappa, 0.0, None, None, kmax)
    se = math.sqrt(var_n / n)
    z = _z(confidence)
    return KappaResult(kappa, se, max(-1.0, kappa - z * se), min(1.0, kappa + z * se), kmax)


def agreement_many(tables: np.ndarray) -> np.ndarray:
    """Observed agreement trace/total of each table in a stack; NaN for empty tables."""
    t = np.asarray(tables, dtype=float)
    n = t.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, np.trace(t, axis1=-2, axis2=-1) / n, np.nan)


def cluster_tables(cluster_index: np.ndarray, human: np.ndarray, judge: np.ndarray,
                   n_clusters: int, weights: np.ndarray | None = None, k: int = len(LABELS)) -> np.ndarray:
    """Per-cluster k x k tables as an (n_clusters, k*k) array, optionally summing weights.

    The bootstrap works on these: a resample's table is a weighted sum of cluster rows.
    """
    flat = cluster_index.astype(np.int64) * (k * k) + human.astype(np.int64) * k + judge.astype(np.int64)
    counts = np.bincount(flat, weights=weights, minlength=n_clusters * k * k)
    return counts.reshape(n_clusters, k * k).astype(float)


def bootstrap_tables(per_cluster: Sequence[np.ndarray], *, resamples: int = 2000,
                     seed: int | None = 0) -> list[np.ndarray]:
    """Cluster-bootstrap resamples of one or more per-cluster tensors, sharing the same draws.

    Each resample draws the n clusters (answers) with replacement; cluster j drawn m_j times
    contributes m_j times its table, so a resampled table is M @ C with M the (B, n) matrix of
    draw counts and C the (n, k*k) per-cluster tensor.  That turns 2,000 resamples of 100k
    claims into a few matrix products instead of 2,000 Python loops.

    Resampling answers rather than claims is the cluster (two-stage, first stage only)
    bootstrap: claims of one answer share a retrieval and a writer, so they are not
    independent.  Source: Davison & Hinkley (1997), Bootstrap Methods, sec. 3.8; Field & Welsh
    (2007), JRSS B 69:369-390.

    Returns one (resamples, k, k) array per input tensor.  Same inputs + same seed give the
    same resamples.
    """
    if not per_cluster:
        return []
    n = per_cluster[0].shape[0]
    kk = per_cluster[0].shape[1]
    k = math.isqrt(kk)
    if any(c.shape != (n, kk) for c in per_cluster):
        raise ValueError("per-cluster tensors must share their shape")
    outs = [np.empty((resamples, kk)) for _ in per_cluster]
    if n == 0 or resamples <= 0:
        return [o.reshape(-1, k, k) for o in outs]
    patterns = _count_patterns(per_cluster[0]) if len(per_cluster) == 1 else None
    rng = np.random.default_rng(seed)
    block = max(1, min(resamples, _BLOCK_DRAWS // n))
    for start in range(0, resamples, block):
        m = min(block, resamples - start)
        draws = rng.integers(0, n, size=(m, n))
        if patterns is not None:
            # Few distinct cluster tables (answers of a few claims repeat the same counts): count
            # draws per (row, table) and multiply the small matrix. Integer counts add exactly
            # in floating point, so the tables are those of the general branch, only sooner.
            tables, which = patterns
            p = tables.shape[0]
            drawn = which[draws]
            drawn += (np.arange(m, dtype=drawn.dtype) * p)[:, None]
            times = np.bincount(drawn.ravel(), minlength=m * p).reshape(m, p).astype(float)
            outs[0][start:start + m] = times @ tables
            continue
        # Offsetting each row by row*n lets a single bincount count draws per (row, cluster).
        draws += (np.arange(m, dtype=draws.dtype) * n)[:, None]
        multiplicity = np.bincount(draws.ravel(), minlength=m * n).reshape(m, n).astype(float)
        for out, c in zip(outs, per_cluster, strict=True):
            out[start:start + m] = multiplicity @ c
    return [o.reshape(-1, k, k) for o in outs]


def _count_patterns(c: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Distinct rows of a tensor of counts and each row's index among them, when they are few.

    None when the tensor is not made of non-negative integers below 2^53 (weights: every sum
    must stay exact for both branches of :func:`bootstrap_tables` to agree), when a row key
    would not fit in 63 bits, or when distinct rows are more than half of all.
    """
    if c.size == 0 or not (c >= 0).all() or not (c == np.floor(c)).all() or c.max() >= 2.0 ** 53:
        return None
    ints = c.astype(np.int64)
    base = [int(x) + 1 for x in ints.max(axis=0)]
    if math.prod(base) >= 2 ** 62:
        return None
    place = np.array([math.prod(base[:i]) for i in range(len(base))], dtype=np.int64)
    _, first, which = np.unique(ints @ place, return_index=True, return_inverse=True)
    if 2 * first.size > c.shape[0]:
        return None
    return c[first], which.reshape(-1)


def percentile_interval(values: np.ndarray, *,
                        confidence: float = 0.95) -> tuple[float | None, float | None, int]:
    """Percentile bootstrap interval over the defined (non-NaN) resample values.

    Returns (low, high, number of undefined resamples).  Source: Efron & Tibshirani (1993),
    An Introduction to the Bootstrap, ch. 13.
    """
    v = np.asarray(values, dtype=float)
    ok = v[~np.isnan(v)]
    undefined = int(v.size - ok.size)
    if ok.size == 0:
        return None, None, undefined
    tail = (1 - confidence) / 2
    lo, hi = np.quantile(ok, [tail, 1 - tail])
    return float(lo), float(hi), undefined


def cluster_bootstrap_kappa(per_cluster: np.ndarray, *, resamples: int = 2000, seed: int | None = 0,
                            confidence: float = 0.95) -> BootstrapInterval:
    """Percentile CI of Cohen's kappa from a cluster bootstrap over answers.

    ``per_cluster`` is (n_answers, k*k) as built by :func:`cluster_tables`.  Resamples where
    kappa is undefined (both raters on one category) are left out and counted.  No interval
    (None) when there are fewer than two answers, or when the full-sample standard error is
    zero or undefined: the resamples of a degenerate table are degenerate too, and a
    zero-width interval would be invented precision.
    """
    k = math.isqrt(per_cluster.shape[1])
    full = cohens_kappa(per_cluster.sum(axis=0).reshape(k, k))
    if per_cluster.shape[0] < 2 or full.ci_low is None or resamples <= 0:
        return BootstrapInterval(None, None, 0, 0, seed)
    (tables,) = bootstrap_tables([per_cluster], resamples=resamples, seed=seed)
    lo, hi, undefined = percentile_interval(kappa_many(tables), confidence=confidence)
    return BootstrapInterval(lo, hi, resamples, undefined, seed)


# --------------------------------------------------------------------------------------------
# 3. Per-class precision / recall / F1
# --------------------------------------------------------------------------------------------


def per_class_metrics(table: np.ndarray | Sequence[Sequence[float]],
                      labels: Sequence[str] = LABELS) -> dict[str, ClassMetrics]:
    """Precision, recall, F1 and support of the judge per class, humans as gold.

    precision_k = T_kk / T_.k, recall_k = T_kk / T_k., F1_k = 2 T_kk / (T_.k + T_k.),
    support_k = T_k..  Source: van Rijsbergen (1979), Information Retrieval, ch. 7; the same
    definitions as ``sklearn.metrics.precision_recall_fscore_support``.  A ratio with a zero
    denominator is None (sklearn's ``zero_division=nan``).
    """
    t = _square(table)
    if t.shape[0] != len(labels):
        raise ValueError("labels do not match the table size")
    tp = np.diag(t)
    rows, cols = t.sum(axis=1), t.sum(axis=0)
    out: dict[str, ClassMetrics] = {}
    for i, label in enumerate(labels):
        precision = tp[i] / cols[i] if cols[i] > 0 else None
        recall = tp[i] / rows[i] if rows[i] > 0 else None
        f1 = 2 * tp[i] / (cols[i] + rows[i]) if cols[i] + rows[i] > 0 else None
        out[label] = ClassMetrics(_opt(precision), _opt(recall), _opt(f1), int(rows[i]))
    return out


# --------------------------------------------------------------------------------------------
# 4. Direction: binary collapse, McNemar, prevalence/bias, Stuart-Maxwell, Bowker, AC1
# --------------------------------------------------------------------------------------------


def binary_collapse(table: np.ndarray | Sequence[Sequence[float]], positive: int = 0) -> np.ndarray:
    """2x2 table, positive class vs the rest, rows human.

    [[both positive, human positive & judge not], [judge positive & human not, both not]].
    """
    t = _square(table)
    neg = [i for i in range(t.shape[0]) if i != positive]
    return np.array([
        [t[positive, positive], t[positive, neg].sum()],
        [t[neg, positive].sum(), t[np.ix_(neg, neg)].sum()],
    ])


def mcnemar_exact(b: int, c: int) -> McNemarExact:
    """Exact McNemar test: under H0 the discordant count b ~ Binomial(b + c, 1/2).

    two-sided p = min(1, 2 P(X <= min(b, c))); one-sided p_b = P(X >= b), p_c = P(X >= c).
    Source: McNemar (1947), Psychometrika 12:153-157; exact form as in R ``exact2x2::mcnemar.exact``
    and ``statsmodels.stats.contingency_tables.mcnemar(exact=True)``.  With no discordant
    pairs the only possible outcome was observed, so every p is 1.
    """
    if b < 0 or c < 0:
        raise ValueError("discordant counts must be non-negative")
    m = b + c
    if m == 0:
        return McNemarExact(b, c, 1.0, 1.0, 1.0)
    two = min(1.0, 2 * float(bdtr(min(b, c), m, 0.5)))
    # P(X >= b) is the survival function at b - 1; bdtrc(-1, m, p) = 1 covers b = 0.
    return McNemarExact(b, c, two, float(bdtrc(b - 1, m, 0.5)), float(bdtrc(c - 1, m, 0.5)))


def prevalence_bias_pabak(table2: np.ndarray | Sequence[Sequence[float]]) -> PrevalenceBias:
    """Prevalence index, bias index and PABAK of a 2x2 table [[a, b], [c, d]] (rows human).

    PI = (a - d)/n, BI = (c - b)/n (judge-positive minus human-positive share: > 0 means the
    judge says SUPPORTED more often than humans, i.e. lenient), PABAK = 2 p_o - 1.
    Source: Byrt, Bishop & Carlin (1993), J Clin Epidemiol 46:423-429.  None for an empty table.
    """
    t = _square(table2)
    if t.shape != (2, 2):
        raise ValueError("prevalence/bias indices need a 2x2 table")
    n = t.sum()
    if n == 0:
        return PrevalenceBias(None, None, None)
    (a, b), (c, d) = t
    return PrevalenceBias((a - d) / n, (c - b) / n, 2 * (a + d) / n - 1)


def stuart_maxwell(table: np.ndarray | Sequence[Sequence[float]]) -> ChiSquareTest | None:
    """Stuart-Maxwell test of marginal homogeneity (humans and judge use classes equally often).

    X^2 = d' S^+ d with d_i = n_i. - n_.i, S_ii = n_i. + n_.i - 2 n_ii, S_ij = -(n_ij + n_ji),
    df = rank(S).  Source: Stuart (1955), Biometrika 42:412-416; Maxwell (1970), Br J Psychiatry
    116:651-655; as R ``coin::mh_test`` and statsmodels ``SquareTable.homogeneity``.

    No 0.5 is added to zero cells.  The usual form drops one category and inverts S; with the
    pseudo-inverse and df = rank(S) the statistic is the same whenever that S is invertible,
    and it stays defined when a class is empty in both raters (WiCE has no CONTRADICTED):
    the empty class then contributes neither to the statistic nor to the df.  None when there
    are no off-diagonal counts (S = 0).
    """
    t = _square(table)
    s = -(t + t.T)
    np.fill_diagonal(s, t.sum(axis=1) + t.sum(axis=0) - 2 * np.diag(t))
    df = int(np.linalg.matrix_rank(s))
    if df == 0:
        return None
    d = t.sum(axis=1) - t.sum(axis=0)
    stat = float(d @ np.linalg.pinv(s) @ d)
    return ChiSquareTest(stat, df, float(chdtrc(df, stat)))


def bowker(table: np.ndarray | Sequence[Sequence[float]]) -> ChiSquareTest | None:
    """Bowker's test of symmetry (n_ij = n_ji for all pairs).

    X^2 = sum_{i<j} (n_ij - n_ji)^2 / (n_ij + n_ji), df = number of pairs in the sum.
    Source: Bowker (1948), JASA 43:572-574; R ``mcnemar.test(correct = FALSE)`` for k > 2.

    No 0.5 is added to zero cells: a pair with n_ij + n_ji = 0 carries no information and is left
    out of both the sum and the df (R would return NaN).  None when no pair is left.
    """
    t = _square(table)
    iu, ju = np.triu_indices(t.shape[0], k=1)
    upper, lower = t[iu, ju], t[ju, iu]
    keep = upper + lower > 0
    df = int(keep.sum())
    if df == 0:
        return None
    stat = float((((upper - lower) ** 2)[keep] / (upper + lower)[keep]).sum())
    return ChiSquareTest(stat, df, float(chdtrc(df, stat)))


def gwet_ac1(table: np.ndarray | Sequence[Sequence[float]]) -> float | None:
    """Gwet's AC1 for two raters over the full label scale (q = table size, empty classes kept).

    AC1 = (p_o - p_e) / (1 - p_e), p_e = 1/(q-1) sum_k pi_k (1 - pi_k), pi_k = (p_k. + p_.k)/2.
    Source: Gwet (2008), Br J Math Stat Psychol 61:29-48; Gwet (2014), Handbook of Inter-Rater
    Reliability, 4th ed., ch. 4 (R irrCAC ``gwet.ac1.table``).  Shown beside kappa, because AC1
    stays high when one class dominates; it is never a replacement for kappa.
    None for an empty table.
    """
    t = _square(table)
    n = t.sum()
    q = t.shape[0]
    if n == 0 or q < 2:
        return None
    pi = (t.sum(axis=1) + t.sum(axis=0)) / (2 * n)
    pe = float((pi * (1 - pi)).sum() / (q - 1))
    po = float(np.trace(t) / n)
    # sum pi(1 - pi) <= 1 - 1/q, so pe <= 1/q < 1: unlike kappa, AC1 is never 0/0.
    return (po - pe) / (1 - pe)


def direction(table: np.ndarray | Sequence[Sequence[float]], *, positive: str = POSITIVE,
              lenient_claims: Sequence[str] = (), strict_claims: Sequence[str] = ()) -> Direction:
    """Which way the judge errs: collapse to positive vs rest and test the discordant pairs.

    lenient = judge positive, human not; strict = human positive, judge not.  The exact McNemar
    test on (lenient, strict) says whether the skew is more than chance.  The 3x3 tests
    (Stuart-Maxwell, Bowker) are reported on the full table.
    """
    t = _square(table)
    two = binary_collapse(t, label_index(positive))
    strict, lenient = int(two[0, 1]), int(two[1, 0])
    # With no claims at all there is no test to speak of (with claims but no discordant
    # pair, p = 1 is the exact answer).
    test = mcnemar_exact(lenient, strict) if t.sum() > 0 else McNemarExact(0, 0, None, None, None)
    return Direction(
        lenient=lenient,
        strict=strict,
        mcnemar=test,
        prevalence_bias=prevalence_bias_pabak(two),
        stuart_maxwell=stuart_maxwell(t),
        bowker=bowker(t),
        lenient_claims=tuple(lenient_claims),
        strict_claims=tuple(strict_claims),
    )


# --------------------------------------------------------------------------------------------
# 5. Sample size
# --------------------------------------------------------------------------------------------


def claims_for_kappa_half_width(kappa: KappaResult, n: int, *, half_width: float = 0.10,
                                confidence: float = 0.95) -> int | None:
    """Total claims for a kappa CI half-width, holding kappa and the class mix at their estimates.

    The FCE variance is V/n with V fixed by the cell proportions, so N = ceil(z^2 V / h^2),
    V = n SE^2.  Source: Fleiss, Cohen & Everitt (1969); Fleiss, Levin & Paik (2003),
    Statistical Methods for Rates and Proportions, sec. 18.1.  Clustering of claims in answers
    is ignored here (the bootstrap interval shows its effect).  None where the SE is 0 or
    undefined: there is no variance to plan from.
    """
    if kappa.se is None or kappa.se <= 0 or n <= 0:
        return None
    if half_width <= 0:
        raise ValueError("half_width must be positive")
    z = _z(confidence)
    v = n * kappa.se ** 2
    return math.ceil(z * z * v / (half_width * half_width) - 1e-9)


def claims_to_decide_target(p_hat: float | None, target: float, *, confidence: float = 0.95) -> int | None:
    """Total claims for the Wilson interval to exclude ``target``, holding agreement at p_hat.

    The Wilson interval is the inversion of the score test, so it excludes t exactly when
    |p_hat - t| >= z sqrt(t (1 - t) / N), i.e. N >= z^2 t (1 - t) / (p_hat - t)^2.
    Source: Wilson (1927); Newcombe (1998).  None when p_hat is None or equals the target (no
    sample size decides a tie) or when no N can (target 1 with p_hat = 1).
    """
    if p_hat is None or p_hat == target:
        return None
    z = _z(confidence)
    if target >= 1.0:
        return 1 if p_hat < 1.0 else None
    n_needed = max(1, math.ceil(z * z * target * (1 - target) / (p_hat - target) ** 2 - 1e-9))
    # The closed form sits on the boundary; step until the interval really excludes the target
    # the way the flag reads it (lower >= target for ok, upper < target for revise).
    while True:
        lo, hi = wilson_interval(p_hat * n_needed, n_needed, confidence=confidence)  # type: ignore[misc]
        if (p_hat > target and lo >= target) or (p_hat < target and hi < target):
            return n_needed
        n_needed += 1


def sample_size(kappa: KappaResult, p_hat: float | None, n: int, target: float, *,
                half_width: float = 0.10, confidence: float = 0.95) -> SampleSize:
    """More claims needed (beyond the n labelled) for the kappa half-width and for the target."""
    nk = claims_for_kappa_half_width(kappa, n, half_width=half_width, confidence=confidence)
    nt = claims_to_decide_target(p_hat, target, confidence=confidence)
    return SampleSize(
        half_width,
        None if nk is None else max(0, nk - n),
        None if nt is None else max(0, nt - n),
    )


# --------------------------------------------------------------------------------------------
# 6. Human-human agreement and the final human label
# --------------------------------------------------------------------------------------------


def krippendorff_alpha_nominal(units: Iterable[Sequence[str]]) -> float | None:
    """Krippendorff's alpha for nominal data, any number of coders, missing values allowed.

    Each unit lists the values it received (missing ones simply absent).  From the coincidence
    matrix o_ck = sum_u (number of c-k pairs of distinct coders in u) / (m_u - 1), with
    n_c = sum_k o_ck and n = sum_c n_c:
        alpha = 1 - (n - 1) sum_{c != k} o_ck / sum_{c != k} n_c n_k.
    Units with fewer than two values are not pairable and are left out.
    Source: Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", Annenberg School
    for Communication, sec. C (nominal example: alpha = 0.743).  Computed by the `krippendorff`
    package from the units-by-value count table; None when fewer than two pairable values or
    every value is the same category (expected disagreement 0), where the package gives NaN or
    refuses.
    """
    rows = [list(u) for u in units]
    # Verdicts in LABELS order, as the column form counts them, so both sum alike.
    domain = sorted({v for row in rows for v in row}, key=lambda v: (_INDEX.get(v, len(LABELS)), v))
    index = {v: i for i, v in enumerate(domain)}
    counts = np.zeros((len(rows), len(domain)), dtype=np.int64)
    for i, row in enumerate(rows):
        for v in row:
            counts[i, index[v]] += 1
    return alpha_from_counts(counts)


def alpha_from_counts(counts: np.ndarray) -> float | None:
    """Krippendorff's nominal alpha from a units x values table of how often each unit got each
    value (see :func:`krippendorff_alpha_nominal`); None where it is undefined."""
    import krippendorff  # imported here: only human-human agreement needs it

    counts = np.asarray(counts, dtype=np.int64)
    pairable = counts[counts.sum(axis=1) >= 2] if counts.ndim == 2 else counts[:0]
    if pairable.size == 0 or int((pairable.sum(axis=0) > 0).sum()) < 2:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        value = krippendorff.alpha(value_counts=pairable, level_of_measurement="nominal")
    return float(value) if np.isfinite(value) else None


@dataclass(frozen=True, slots=True)
class HumanHumanAgreement:
    n_claims: int
    reviewers: tuple[str, ...]
    agreement: Estimate
    kappa: KappaResult | None
    alpha: float | None
    # Which verdicts: "blind" (given before the judge was revealed) or "post-reveal" (the final
    # ones, which a reviewer may have changed to the judge's); None when the caller did not say.
    basis: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "basis": self.basis,
            "n_claims": self.n_claims,
            "reviewers": list(self.reviewers),
            "agreement": self.agreement.to_dict(),
            "kappa": None if self.kappa is None else self.kappa.to_dict(),
            "krippendorff_alpha": _opt(self.alpha),
        }


def human_human_agreement(labels: Iterable[tuple[str, str, str]]) -> HumanHumanAgreement:
    """Agreement among reviewers on the claims that more than one of them labelled.

    ``labels`` holds (claim_key, reviewer, verdict).  Cohen's kappa (rows = first reviewer in
    sorted order) when exactly two reviewers overlap; Krippendorff's nominal alpha always, as it
    handles any number of reviewers and reviewer pairs that change from claim to claim.
    ``agreement`` is the share of reviewer pairs within a claim that agree (Wilson CI on pairs;
    pairs of one claim are not independent when a claim has three or more reviewers).
    """
    by_claim: dict[str, dict[str, str]] = defaultdict(dict)
    for claim, reviewer, verdict in labels:
        label_index(verdict)
        by_claim[claim][reviewer] = verdict
    multi = {c: r for c, r in by_claim.items() if len(r) >= 2}
    reviewers = tuple(sorted({rev for r in multi.values() for rev in r}))
    pairs = agree = 0
    for r in multi.values():
        vals = list(r.values())
        for i in range(len(vals)):
            for j in range(i + 1, len(vals)):
                pairs += 1
                agree += vals[i] == vals[j]
    if pairs:
        lo, hi = wilson_interval(agree, pairs)  # type: ignore[misc]
        pct = Estimate(agree / pairs, lo, hi)
    else:
        pct = Estimate(None)
    kappa = None
    if len(reviewers) == 2:
        a, b = reviewers
        kappa = cohens_kappa(confusion_matrix([r[a] for r in multi.values()], [r[b] for r in multi.values()]))
    alpha = krippendorff_alpha_nominal(list(r.values()) for r in multi.values())
    return HumanHumanAgreement(len(multi), reviewers, pct, kappa, alpha)


def human_human_agreement_arrays(claim: np.ndarray | Sequence[int], reviewer: np.ndarray | Sequence[int],
                                 verdict: np.ndarray | Sequence[int],
                                 reviewers: Sequence[str]) -> HumanHumanAgreement:
    """:func:`human_human_agreement` on columns, one entry per (claim, reviewer) label.

    ``claim`` identifies the claim (any integers), ``reviewer`` indexes ``reviewers`` (distinct
    names), ``verdict`` indexes ``LABELS``.  The result equals that of the records in the same
    order.  Counted with arrays when every shared claim has two or three labels: alpha's
    coincidences are then sums of halves, exact in floating point whatever the order of
    addition; otherwise (or with a (claim, reviewer) pair twice) the records' path runs.
    """
    c, r, v = (np.asarray(x, dtype=np.int64).reshape(-1) for x in (claim, reviewer, verdict))
    n, k, names = c.size, len(LABELS), list(reviewers)
    if r.size != n or v.size != n:
        raise ValueError("claim, reviewer and verdict must be of one length")
    if len(set(names)) != len(names):
        raise ValueError("reviewer names must be distinct")
    if n and (v.min() < 0 or v.max() >= k or r.min() < 0 or r.max() >= len(names)):
        raise ValueError("verdict or reviewer index out of range")
    if n == 0 or (c.min() >= 0 and c.max() < 4 * n):
        unit = c  # small ids (positions, say) number the claims already; unused ones count 0 labels
    else:
        unit = np.unique(c, return_inverse=True)[1].reshape(-1)
    m = np.bincount(unit)
    shared = m >= 2
    pair = np.sort(unit * len(names) + r)
    unique_pairs = not (pair[1:] == pair[:-1]).any()
    if not unique_pairs or (m[shared] > 3).any() or n >= 2 ** 25:
        # Integer claim ids serve as keys as well as strings would: only equality is used.
        return human_human_agreement(zip(cast(list[str], c.tolist()), [names[i] for i in r.tolist()],
                                         [LABELS[i] for i in v.tolist()], strict=True))
    keep = shared[unit]
    compact = np.cumsum(shared) - 1
    u, r, v = compact[unit[keep]], r[keep], v[keep]
    mm = m[shared]
    n_units = mm.size
    cnt = np.bincount(u * k + v, minlength=n_units * k).reshape(n_units, k)
    pairs = int((mm * (mm - 1) // 2).sum())
    agree = int((cnt * (cnt - 1) // 2).sum())
    if pairs:
        lo, hi = wilson_interval(agree, pairs)  # type: ignore[misc]
        pct = Estimate(agree / pairs, lo, hi)
    else:
        pct = Estimate(None)
    used = np.flatnonzero(np.bincount(r, minlength=len(names))).tolist()
    seen = tuple(sorted(names[i] for i in used))
    kappa = None
    if len(seen) == 2:
        first, second = (names.index(x) for x in seen)
        rows, cols = np.full(n_units, -1), np.full(n_units, -1)
        rows[u[r == first]] = v[r == first]
        cols[u[r == second]] = v[r == second]
        kappa = cohens_kappa(np.bincount(rows * k + cols, minlength=k * k).reshape(k, k))
    return HumanHumanAgreement(n_units, seen, pct, kappa, alpha_from_counts(cnt))


# --------------------------------------------------------------------------------------------
# 7. Weighted (population) agreement
# --------------------------------------------------------------------------------------------


def weighted_agreement(agree: Sequence[bool] | np.ndarray,
                       weights: Sequence[float] | np.ndarray) -> float | None:
    """Hajek estimate of population agreement: sum_i w_i a_i / sum_i w_i, w_i = 1/pi_i.

    Source: Horvitz & Thompson (1952), JASA 47:663-685 (w = 1/pi); Hajek (1971) ratio form,
    which divides by the estimated population size rather than the true one and is the usual
    choice when pi varies (Sarndal, Swensson & Wretman 1992, Model Assisted Survey Sampling,
    sec. 5.7).  None when there are no claims.
    """
    a = np.asarray(agree, dtype=float)
    w = np.asarray(weights, dtype=float)
    if a.shape != w.shape:
        raise ValueError("agree and weights differ in length")
    total = w.sum()
    if a.size == 0 or total <= 0:
        return None
    return float((w * a).sum() / total)


def kish_effective_n(weights: Sequence[float] | np.ndarray) -> float | None:
    """Kish's effective sample size (sum w)^2 / sum w^2: how many equal-weight claims the weights are worth.

    Source: Kish (1965), Survey Sampling, sec. 11.7.
    """
    w = np.asarray(weights, dtype=float)
    s2 = float((w * w).sum())
    return None if s2 == 0 else float(w.sum() ** 2 / s2)


# --------------------------------------------------------------------------------------------
# 8. The flag
# --------------------------------------------------------------------------------------------


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _p(x: float | None) -> str:
    """'p = 0.034' or 'p < 0.001'."""
    return "p n/a" if x is None else (f"p = {x:.2g}" if x >= 0.001 else "p < 0.001")


def _share(x: float) -> str:
    """A threshold as typed: 85% rather than 85.0%."""
    return f"{100 * x:g}%"


def _ci_pct(lo: float | None, hi: float | None) -> str:
    return "no interval" if lo is None or hi is None else f"95% CI {_pct(lo)}–{_pct(hi)}"


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


def _count(n: int, word: str) -> str:
    """'1 disagreeing claim', '3 disagreeing claims'."""
    return f"{n:,} {_plural(n, word)}"


def _bound(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


@dataclass(frozen=True, slots=True)
class PopulationEstimates:
    """The flag's figures estimated for the population the labeled answers represent.

    ``population`` says which (e.g. "all 150 answers of the run"); with an equal-probability
    design the estimates repeat the raw figures.  See :mod:`calibration.estimation`.
    """

    population: str | None
    agreement: estimation.Estimate
    kappa: estimation.Estimate
    direction: estimation.DirectionEstimate
    equal_probability: bool


def decide_flag(*, rules: decisions.Decision, estimates: PopulationEstimates, raw_agreement: float | None,
                direction: Direction, thresholds: decisions.CappedThresholds, n_claims: int,
                more_target: decisions.MoreClaims, prob: float | None, disagreeing: Sequence[str],
                ceiling: decisions.HumanCeiling | None = None, unit: str = "claims") -> Flag:
    """``revise`` / ``ok`` / ``inconclusive``, each with reasons that name a figure, its bound and its claims.

    The rules are those of :func:`decisions.decide`; none fires on a point estimate alone:
    * agreement_below_target / agreement_meets_target: the anytime-valid confidence sequence on
      agreement in labeling order (:func:`decisions.agreement_rule`) ends below / starts at or
      above the target; its fixed-sample interval is shown beside it;
    * judge_lenient / judge_strict: the anytime-valid sequence on (lenient - strict)/n
      (:func:`decisions.direction_rule`) excludes 0; the exact McNemar p is shown beside it;
    * kappa_below_floor: the upper end of kappa's 95% interval (design-based,
      :func:`estimation.kappa_estimate`) is below the floor.
    ``thresholds`` are the lead's, capped by the human ceiling (:func:`decisions.capped_thresholds`):
    no rule asks the judge to agree more than reviewers do with each other.  Inconclusive says
    the one "how many more" of the agreement target (:func:`decisions.more_claims_to_decide`).
    A ``human_ceiling`` reason (information, never a rule) says whether the judge can stand in for
    a reviewer (the alternative annotator test), when several reviewers labeled the same claims.
    ``unit`` names what the direction counts count ("claims", or one verdict per claim and reviewer).
    """
    dis = tuple(disagreeing)
    t = thresholds
    ceiling_note: list[Reason] = []
    if ceiling is not None and ceiling.alt.verdict is not None:
        a = ceiling.alt
        ceiling_note.append(Reason(
            "human_ceiling",
            f"human ceiling: the judge is {a.verdict} (alternative annotator test, epsilon {a.epsilon:g}, "
            f"{a.alignment}, winning rate {_pct(a.winning_rate)}, {_p(a.p_value)}"
            f"{'; ' + ceiling.comparison_sentence() if ceiling.comparisons else ''}); it agrees "
            f"{_pct(ceiling.judge_vs_reviewers.value)} with "
            f"each reviewer where reviewers agree {_pct(ceiling.reviewer_vs_reviewer.value)} with each other",
            a.winning_rate, ()))
    capped = ""
    if t.capped_agreement or t.capped_kappa:
        capped = " (capped at what reviewers reach with each other)"
    est = estimates.agreement.value
    if n_claims == 0 or est is None:
        empty = Reason("no_data", "no claims with both a judge verdict and a final human label", None, ())
        return Flag("inconclusive", (empty,), None)
    what = "agreement"
    if not estimates.equal_probability:
        what = (f"agreement estimated for {estimates.population or 'the population'} "
                f"(raw {_pct(raw_agreement)})")
    by_rule = {r.rule: r for r in rules.rules}
    ag = by_rule["agreement"]
    fixed = _ci_pct(estimates.agreement.ci_low, estimates.agreement.ci_high)
    chance = decisions.prob_sentence(prob, t.agreement_target)
    reasons: list[Reason] = []
    if ag.status == "revise":
        reasons.append(Reason(
            "agreement_below_target",
            f"{what} {_pct(est)} is below the {_share(t.agreement_target)} target{capped} at any look: "
            f"its anytime upper bound is {_bound(ag.bound_high)} (fixed-sample {fixed}); {chance}; "
            f"{_count(len(dis), 'disagreeing claim')}",
            est, dis))
    kr = by_rule.get("kappa")
    kap = estimates.kappa
    if kr is not None and kr.status == "revise" and kap.value is not None:
        reasons.append(Reason(
            "kappa_below_floor",
            f"kappa {kap.value:.2f} (95% CI {kap.ci_low:.2f}–{kap.ci_high:.2f}) is below the floor "
            f"{t.kappa_floor:.2f}{capped} even at its upper bound; {_count(len(dis), 'disagreeing claim')}",
            kap.value, dis))
    dr = by_rule.get("direction")
    if dr is not None and dr.status in ("lenient", "strict"):
        lenient = dr.status == "lenient"
        mc = direction.mcnemar
        if lenient:
            side = (f"it called {mc.b} {unit} {POSITIVE} that humans did not, "
                    f"against {mc.c} the other way round")
            bound = f"anytime lower bound of (lenient − strict)/n {dr.bound_low:.3f} > 0"
        else:
            side = (f"it denied {POSITIVE} to {mc.c} {unit} humans supported, "
                    f"against {mc.b} the other way round")
            bound = f"anytime upper bound of (lenient − strict)/n {dr.bound_high:.3f} < 0"
        d = estimates.direction
        pop = ""
        if not estimates.equal_probability and d.lenient.value is not None and d.strict.value is not None:
            pop = (f"; estimated for {estimates.population or 'the population'}: lenient "
                   f"{_pct(d.lenient.value)}, strict {_pct(d.strict.value)} of claims")
        reasons.append(Reason(
            f"judge_{dr.status}",
            f"judge is {dr.status}: {side} ({bound}; exact McNemar {_p(mc.p_two_sided)} beside it){pop}",
            d.difference.value, tuple(direction.lenient_claims if lenient else direction.strict_claims)))
    if reasons:
        return Flag("revise", tuple(reasons + ceiling_note), None)
    if ag.status == "ok":
        notes = [Reason(
            "agreement_meets_target",
            f"{what} {_pct(est)} reaches the {_share(t.agreement_target)} target{capped} at any look: "
            f"its anytime lower bound is {_bound(ag.bound_low)} (fixed-sample {fixed}); {chance}; "
            f"{_count(len(dis), 'disagreeing claim')}",
            est, dis)]
        if kap.value is None:
            notes.append(Reason("kappa_undefined",
                                "kappa is undefined: humans and judge used one and the same class only",
                                None, ()))
        return Flag("ok", tuple(notes + ceiling_note), None)
    return Flag("inconclusive", (Reason(
        "agreement_undecided",
        f"{what} {_pct(est)} is not yet shown above or below the {_share(t.agreement_target)} target{capped} "
        f"(anytime bounds {_bound(ag.bound_low)}–{_bound(ag.bound_high)}; fixed-sample {fixed}); {chance}; "
        f"{more_target.sentence}; {_count(len(dis), 'disagreeing claim')}",
        est, dis), *ceiling_note), more_target.more_claims)


# --------------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------------


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
    effective_thresholds: decisions.CappedThresholds | None = None
    human_ceiling: decisions.HumanCeiling | None = None
    # Filled by the caller: human-human agreement on the final (post-reveal) verdicts, shown beside
    # the blind one; the pipeline's corrected grounding score (calibration.report).
    human_human_post_reveal: HumanHumanAgreement | None = None
    pipeline: dict[str, Any] | None = None
    # Unresolved claims of the sealed holdout: counted, their ids withheld (`report._hide_sealed`).
    sealed_unresolved: int = 0

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
        target = self.thresholds.agreement_target if self.effective_thresholds is None \
            else self.effective_thresholds.agreement_target
        for part, name, est_dict in (
                (agreement, "agreement", None if est is None else est.agreement.to_dict()),
                (kappa, "kappa", None if est is None else est.kappa.to_dict()),
                (dirn, "direction", None if est is None else est.direction.to_dict())):
            rule = self._rule(name)
            part["estimated"] = est_dict
            part["bound_used"] = None if rule is None else rule.bound_used
            part["rule"] = None if rule is None else rule.to_dict()
        agreement["basis"] = self.basis
        agreement["prob_at_least_target"] = _opt(self.prob_at_least_target)
        agreement["prob_sentence"] = decisions.prob_sentence(self.prob_at_least_target, target)
        hh = None if self.human_human is None else self.human_human.to_dict()
        post = self.human_human_post_reveal
        return {
            "judge_run": judge_run,
            "scope": {"population": None if est is None else est.population,
                      "equal_probability": None if est is None else est.equal_probability},
            "n_claims": self.n_claims,
            "n_answers": self.n_answers,
            "n_labels": self.n_claims if self.n_labels is None else self.n_labels,
            "n_unresolved": self.n_unresolved,
            "unresolved_claims": list(self.unresolved_claims),
            "pipeline": self.pipeline,
            "agreement": agreement,
            "agreement_final_label": self.final_label_view,
            "agreement_bootstrap": self.agreement_bootstrap.to_dict(),
            "agreement_weighted": None if self.weighted is None else self.weighted.to_dict(),
            "kappa": kappa,
            "kappa_bootstrap": self.kappa_bootstrap.to_dict(),
            "ac1": _opt(self.ac1),
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
            "thresholds_used": (None if self.effective_thresholds is None
                                else self.effective_thresholds.to_dict()),
            "flag": {**self.flag.to_dict(), "rules": None if self.rules is None else self.rules.to_dict()},
        }

    def to_text(self, judge_run: str | None = None, *, notes: Sequence[str] = (), max_ids: int = 12) -> str:
        """A plain report a lead can paste into a message; ``notes`` go under the title."""
        return format_report(self, judge_run, notes=notes, max_ids=max_ids)


def _pipeline_lines(p: Mapping[str, Any]) -> list[str]:
    """The pipeline's grounding score first: the judge's own rate, then the corrected one."""
    sr = p["supported_rate"]
    ci = _ci_pct(sr["ci_low"], sr["ci_high"]) if sr["ci_low"] is not None else (sr["reason"] or "no interval")
    lines = [f"Grounding score (share of claims SUPPORTED): judge's own {_pct(p['judge_supported_rate'])} "
             f"on {p['n_judged']:,} judged claims; corrected {_pct(sr['value'])} ({ci}; {sr['method']}, "
             f"{p['n_labeled']:,} labeled claims)"]
    for title, key in (("category", "by_category"), ("pipeline version", "by_pipeline_version")):
        parts = p.get(key) or {}
        if len(parts) < 2:
            continue
        for name, g in parts.items():
            s = g["supported_rate"]
            gci = _ci_pct(s["ci_low"], s["ci_high"]) if s["ci_low"] is not None else "no interval"
            lines.append(f"  {title} {name}: judge's own {_pct(g['judge_supported_rate'])}, corrected "
                         f"{_pct(s['value'])} ({gci})")
    for d in p.get("pipeline_differences") or ():
        dci = ("no interval" if d["ci_low"] is None
               else f"95% CI {100 * d['ci_low']:+.1f}–{100 * d['ci_high']:+.1f}")
        val = "n/a" if d["value"] is None else f"{100 * d['value']:+.1f} points"
        lines.append(f"  {d['a']} − {d['b']}: {val} ({dci})")
    lines.append(f"  assumes {p['assumption']}")
    lines.append("")
    return lines


def _ids(ids: Sequence[str], limit: int) -> str:
    if not ids:
        return "none"
    shown = ", ".join(ids[:limit])
    return shown if len(ids) <= limit else f"{shown} … and {len(ids) - limit} more"


def _num(x: float | None, fmt: str = ".2f") -> str:
    return "n/a" if x is None else format(x, fmt)


def _chi2(test: ChiSquareTest | None) -> str:
    return "n/a" if test is None else f"X2 = {test.statistic:.2f}, df {test.df}, {_p(test.p_value)}"


def format_report(report: Report, judge_run: str | None = None, *, notes: Sequence[str] = (),
                  max_ids: int = 12) -> str:
    """Plain-text rendering of a :class:`Report` (figures with intervals, confusion matrix, flag)."""
    r = report
    lines: list[str] = []
    title = "Judge vs human agreement" + (f" — judge run {judge_run}" if judge_run else "")
    lines += [title, "=" * len(title), *notes]
    if r.pipeline is not None:
        lines += _pipeline_lines(r.pipeline)
    t = r.thresholds
    lines.append(f"Thresholds: agreement target {_share(t.agreement_target)}, kappa floor "
                 f"{t.kappa_floor:.2f}, alpha {t.alpha:g}")
    e = r.effective_thresholds
    if e is not None and (e.capped_agreement or e.capped_kappa):
        lines.append(f"  capped by the human ceiling: target {_pct(e.agreement_target)}, floor "
                     f"{e.kappa_floor:.2f} ({e.rule})")
    if r.basis == "per_reviewer":
        unresolved = (f"; {r.n_unresolved} of them unresolved (reviewers disagree), each "
                      "reviewer's verdict counted") if r.n_unresolved else ""
        lines.append(f"Claims: {r.n_claims} in {r.n_answers} answers, compared with each reviewer's blind "
                     f"verdict ({r.n_labels} verdicts){unresolved}")
    else:
        unresolved = (f"; {r.n_unresolved} claims left out (reviewers disagree, not adjudicated), "
                      "which favours the judge: they are the hard ones") if r.n_unresolved else ""
        lines.append(f"Claims: {r.n_claims} in {r.n_answers} answers{unresolved}")
    if r.estimates is not None and r.estimates.population:
        lines.append(f"Estimates for: {r.estimates.population}")
    lines.append("")
    if r.n_claims == 0:
        lines.append(f"Flag: {r.flag.status.upper()}")
        lines += [f"  - {reason.message}" for reason in r.flag.reasons]
        return "\n".join(lines) + "\n"
    a, k = r.agreement, r.kappa
    ab, kb = r.agreement_bootstrap, r.kappa_bootstrap
    boot_a = "" if ab.ci_low is None else f"; answer bootstrap {_pct(ab.ci_low)}–{_pct(ab.ci_high)}"
    # The first interval is the design-based one (answers as clusters), withheld where it is.
    a_ci = f"{_ci_pct(a.ci_low, a.ci_high)} (Wilson)"
    ek_ci: str | None = None
    if r.estimates is not None:
        ea, ek = r.estimates.agreement, r.estimates.kappa
        a_ci = (f"{_ci_pct(ea.ci_low, ea.ci_high)} (design-based, answers as clusters)"
                if ea.ci_low is not None else f"no interval ({ea.reason})")
        ek_ci = (f"95% CI {ek.ci_low:.2f}–{ek.ci_high:.2f} (design-based)" if ek.ci_low is not None
                 else f"no interval ({ek.reason})")
    lines.append(f"Agreement      {_pct(a.value):>7}   {a_ci}{boot_a}")
    if k.value is None:
        lines.append("Cohen's kappa      n/a   undefined (both used one and the same class)")
    else:
        kci = "no interval (SE is 0)" if k.ci_low is None else f"95% CI {k.ci_low:.2f}–{k.ci_high:.2f}"
        kci = ek_ci or kci
        kboot = "" if kb.ci_low is None else f"; answer bootstrap {kb.ci_low:.2f}–{kb.ci_high:.2f}"
        lines.append(f"Cohen's kappa  {k.value:>7.2f}   {kci}{kboot}; max possible {_num(k.kappa_max)}")
    lines.append(f"Gwet's AC1     {_num(r.ac1):>7}   (beside kappa, not instead of it)")
    ag_rule = r._rule("agreement")
    if ag_rule is not None:
        chance = decisions.prob_sentence(r.prob_at_least_target, ag_rule.threshold)
        bounds = f"{_bound(ag_rule.bound_low)}–{_bound(ag_rule.bound_high)}"
        lines.append(f"  anytime bounds on agreement {bounds} "
                     f"(what the flag reads); {chance}")
    if r.estimates is not None and not r.estimates.equal_probability:
        ea, ek = r.estimates.agreement, r.estimates.kappa
        ekci = "no interval" if ek.ci_low is None else f"95% CI {ek.ci_low:.2f}–{ek.ci_high:.2f}"
        lines.append(f"Estimated agr. {_pct(ea.value):>7}   {_ci_pct(ea.ci_low, ea.ci_high)} (design-based); "
                     f"kappa {_num(ek.value)} ({ekci})")
    if r.weighted is not None:
        w = r.weighted
        lines.append(f"Weighted agr.  {_pct(w.value):>7}   {_ci_pct(w.ci_low, w.ci_high)} "
                     f"(answer bootstrap); raw {_pct(w.raw)}, effective n {_num(w.n_effective, '.0f')}")
    fl = r.final_label_view
    if r.basis == "per_reviewer" and fl is not None:
        fa = fl["agreement"]
        lines.append(f"Final label    {_pct(fa['value']):>7}   secondary view: {fl['n_claims']} claims "
                     f"with a unanimous or adjudicated label only ({fl['n_left_out']} disputed left out)")
    if r.human_human is not None and r.human_human.n_claims:
        hh = r.human_human
        kk = "" if hh.kappa is None or hh.kappa.value is None else f", kappa {hh.kappa.value:.2f}"
        post = r.human_human_post_reveal
        beside = "" if post is None else f"; after the reveal {_pct(post.agreement.value)}"
        lines.append(f"Human–human    {_pct(hh.agreement.value):>7}   on {hh.n_claims} claims with "
                     f"several reviewers, blind verdicts{kk}, Krippendorff's alpha {_num(hh.alpha)}{beside}")
    if r.human_ceiling is not None:
        c = r.human_ceiling
        jv, rv = c.judge_vs_reviewers, c.reviewer_vs_reviewer
        lines.append(f"Human ceiling  judge vs each reviewer {_pct(jv.value)} "
                     f"({_ci_pct(jv.ci_low, jv.ci_high)}), "
                     f"reviewer vs reviewer {_pct(rv.value)} ({_ci_pct(rv.ci_low, rv.ci_high)}) on "
                     f"{c.n_claims} claims, unresolved included; "
                     f"{c.alt.verdict or c.alt.reason or 'no alternative annotator test'} "
                     f"(epsilon {c.alt.epsilon:g}, {c.alt.alignment})")
        if c.comparisons:
            lines.append(f"  the judge is {c.comparison_sentence()} (share of the other reviewers agreeing):")
            for cmp in c.comparisons:
                lines.append(f"    {cmp.reviewer}: judge {_pct(cmp.judge)}, reviewer "
                             f"{_pct(cmp.reviewer_value)}, {_p(cmp.p_value)} on {cmp.n_claims} claims")
    lines.append("")
    lines.append("Confusion matrix (rows human, columns judge)")
    width = max(len(x) for x in r.labels) + 2
    lines.append(" " * width + "".join(f"{x:>{width}}" for x in r.labels))
    for label, row in zip(r.labels, r.confusion, strict=True):
        lines.append(f"{label:<{width}}" + "".join(f"{int(v):>{width}}" for v in row))
    lines.append("")
    lines.append(f"{'Per class (judge)':<{width}}{'precision':>11}{'recall':>9}{'F1':>7}{'support':>9}")
    for label, m in r.per_class.items():
        lines.append(f"{label:<{width}}{_num(m.precision):>11}{_num(m.recall):>9}{_num(m.f1):>7}{m.support:>9}")
    lines.append("")
    d = r.direction
    lines.append(f"Direction ({POSITIVE} vs not): lenient {d.lenient} (judge {POSITIVE}, human not), "
                 f"strict {d.strict}")
    mc = d.mcnemar
    lines.append(f"  exact McNemar {_p(mc.p_two_sided)} (one-sided: lenient {_p(mc.p_b_greater)}, "
                 f"strict {_p(mc.p_c_greater)})")
    pb = d.prevalence_bias
    lines.append(f"  prevalence index {_num(pb.prevalence_index)}, bias index {_num(pb.bias_index)}, "
                 f"PABAK {_num(pb.pabak)}")
    lines.append(f"  Stuart–Maxwell (marginal homogeneity): {_chi2(d.stuart_maxwell)}")
    lines.append(f"  Bowker (symmetry): {_chi2(d.bowker)}")
    lines.append("")
    s = r.sample_size
    lines.append("More claims:")
    lines.append(f"  - {s.target_sentence}")
    lines.append(f"  - {s.kappa_sentence}")
    lines.append("")
    if r.rules is not None:
        lines.append("Rules of the flag (each with the bound it reads)")
        for rule in r.rules.rules:
            lines.append(f"  {rule.rule}: {rule.status} — {rule.bound_used}")
        lines.append("")
    lines.append(f"Flag: {r.flag.status.upper()}")
    shown: tuple[str, ...] = ()
    for reason in r.flag.reasons:
        lines.append(f"  - {reason.message}")
        if reason.claim_ids and reason.claim_ids == shown:
            lines.append("    claims: the same as above")
        elif reason.claim_ids:
            lines.append(f"    claims: {_ids(reason.claim_ids, max_ids)}")
            shown = reason.claim_ids
    return "\n".join(lines) + "\n"


def _validate(items: Sequence[LabeledClaim]) -> bool:
    """Check verdicts, unique claim keys and all-or-none weights; return whether weights are given."""
    seen: set[str] = set()
    with_w = sum(it.weight is not None for it in items)
    if with_w not in (0, len(items)):
        raise ValueError("give a weight for every claim or for none")
    for it in items:
        if it.claim_key in seen:
            raise ValueError(f"claim {it.claim_key!r} appears twice")
        seen.add(it.claim_key)
        if it.weight is not None and not (math.isfinite(it.weight) and it.weight > 0):
            raise ValueError(f"claim {it.claim_key!r}: weight must be positive and finite, got {it.weight}")
    return with_w > 0 and len(items) > 0


def agreement_report(items: Sequence[LabeledClaim], thresholds: Thresholds = Thresholds(), *,
                     bootstrap: int = 2000, seed: int | None = 0, confidence: float = 0.95,
                     kappa_half_width: float = 0.10) -> Report:
    """Every judge-vs-human figure for one judge run, and the flag.

    ``items`` are claims with a final human label (see :func:`resolve_final_labels`).  Answers
    are the clusters of the bootstrap.  ``bootstrap`` = 0 skips the resampling.  The same
    computation as :func:`agreement_report_arrays`, fed from records.
    """
    items = list(items)
    weighted = _validate(items)
    n = len(items)
    human = np.fromiter((label_index(it.human) for it in items), dtype=np.int64, count=n)
    judge = np.fromiter((label_index(it.judge) for it in items), dtype=np.int64, count=n)
    answer_ids: dict[str, int] = {}
    cluster = np.fromiter((answer_ids.setdefault(it.answer_id, len(answer_ids)) for it in items),
                          dtype=np.int64, count=n)
    w = np.fromiter((it.weight for it in items), dtype=float, count=n) if weighted else None
    return _report(human, judge, cluster, len(answer_ids), [it.claim_key for it in items], w, thresholds,
                   bootstrap=bootstrap, seed=seed, confidence=confidence, kappa_half_width=kappa_half_width)


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


def agreement_report_arrays(human: np.ndarray | Sequence[int], judge: np.ndarray | Sequence[int],
                            cluster: np.ndarray | Sequence[int], keys: Sequence[str],
                            thresholds: Thresholds = Thresholds(), *, weights: np.ndarray | None = None,
                            bootstrap: int = 2000, seed: int | None = 0, confidence: float = 0.95,
                            kappa_half_width: float = 0.10, label_rank: np.ndarray | None = None,
                            stratum: np.ndarray | Sequence[Any] | None = None,
                            population: Mapping[Any, int] | None = None, population_text: str | None = None,
                            ceiling: decisions.HumanCeiling | None = None,
                            per_reviewer: bool = False, available: int | None = None) -> Report:
    """:func:`agreement_report` on columns: the same figures without a record per claim.

    ``per_reviewer``: each entry is one reviewer's verdict on a claim (`final_label.per_reviewer`),
    so a claim's key repeats once per reviewer; every figure is then over (claim, reviewer) pairs,
    clustered by answer like claims are, and the claim lists name each claim once.  ``available``: the
    scope's claims without a label, the most "how many more" can ask for.

    ``human`` and ``judge`` are indices into ``LABELS``; ``cluster`` labels each claim's answer
    (any integers: they are numbered in order of first appearance, as :func:`agreement_report`
    numbers answer ids, so the same claims in the same order give the same resamples);
    ``keys`` are the claim keys; ``weights`` (1/pi per claim) or None.

    The design-based estimates (:class:`PopulationEstimates`) use ``stratum`` (per claim, constant
    within an answer) with ``population`` {stratum: N_h answers} when given, described by
    ``population_text``; else the ``weights`` (with-replacement variance); else the labeled
    answers as a simple random sample.  ``label_rank`` (per claim, any sortable time of labeling)
    orders the answers for the flag's anytime rules; without it, order of first appearance.
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
    return _report(h, j, c, n_answers, keys, w, thresholds, bootstrap=bootstrap, seed=seed,
                   confidence=confidence, kappa_half_width=kappa_half_width, label_rank=rank,
                   stratum=strata, population=population, population_text=population_text,
                   ceiling=ceiling, per_reviewer=per_reviewer, available=available)


def _report(human: np.ndarray, judge: np.ndarray, cluster: np.ndarray, n_answers: int, keys: Sequence[str],
            w: np.ndarray | None, thresholds: Thresholds, *, bootstrap: int, seed: int | None,
            confidence: float, kappa_half_width: float, label_rank: np.ndarray | None = None,
            stratum: np.ndarray | None = None, population: Mapping[Any, int] | None = None,
            population_text: str | None = None, ceiling: decisions.HumanCeiling | None = None,
            per_reviewer: bool = False, available: int | None = None) -> Report:
    """The report from validated columns (clusters numbered 0.. in order of first appearance)."""
    n = human.size
    k = len(LABELS)
    per_cluster = cluster_tables(cluster, human, judge, n_answers, k=k)
    table = per_cluster.sum(axis=0).reshape(k, k).astype(np.int64)
    agree = human == judge
    pos = label_index(POSITIVE)
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

    pct = percent_agreement(table, confidence=confidence)
    kap = cohens_kappa(table, confidence=confidence)
    dirn = direction(table, lenient_claims=lenient_claims, strict_claims=strict_claims)

    # Answer bootstrap: below estimation.MIN_BOOTSTRAP_ANSWERS answers its interval is withheld
    # (estimation.bootstrap_interval says why), so the resamples are not even drawn.
    tensors = [per_cluster]
    if w is not None:
        tensors.append(cluster_tables(cluster, human, judge, n_answers, weights=w, k=k))
    use_boot = bootstrap > 0 and n_answers >= estimation.MIN_BOOTSTRAP_ANSWERS
    boots = bootstrap_tables(tensors, resamples=bootstrap, seed=seed) if use_boot else []

    def interval(stat: Callable[[np.ndarray], np.ndarray], idx: int,
                 why_not: str | None) -> BootstrapInterval:
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
    agree_why = ("no claims" if n == 0 else "every claim agrees" if n_agree == n
                 else "no claim agrees" if n_agree == 0 else None)
    agree_boot = interval(agreement_many, 0, agree_why)
    kappa_boot = interval(kappa_many, 0, None if kap.ci_low is not None else
                          "kappa has no analytic interval (undefined, or a standard error of 0)")

    wres = None
    if w is not None:
        wi = interval(agreement_many, 1, agree_why)
        wres = WeightedAgreement(weighted_agreement(agree, w), wi.ci_low, wi.ci_high, pct.value,
                                 kish_effective_n(w))

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
        answer_w is None)

    # The flag's rules on the answers in labeling order (decisions.py), weights aligned to that order.
    ys, ms = decisions.answer_sums(cluster, agree.astype(float), label_rank=label_rank)
    ds, _ = decisions.answer_sums(cluster, is_lenient.astype(float) - is_strict, label_rank=label_rank)
    wo = None
    claim_w = None
    if answer_w is not None:
        claim_w = answer_w[cluster]
        wo = decisions.answer_sums(cluster, claim_w, label_rank=label_rank)[0] / ms
    top = None if wo is None else float(wo.max())
    capped = decisions.capped_thresholds(thresholds.agreement_target, thresholds.kappa_floor, ceiling)
    target = capped.agreement_target
    # claim_level: the rules test the claim-level figures the report prints (sum y / sum m), each
    # answer's rate weighted by its claims, not the mean of the answers' rates.
    ar = decisions.agreement_rule(ys, ms, target, alpha=thresholds.alpha, weights=wo, max_weight=top,
                                  confidence=confidence, claim_level=True)
    dr = decisions.direction_rule(ds, ms, alpha=thresholds.alpha, weights=wo, max_weight=top,
                                  confidence=confidence, claim_level=True)
    ek = estimates.kappa
    kr = decisions.kappa_rule(ek.value, ek.ci_high, capped.kappa_floor)
    rules = decisions.decide(ar, dr, kr)
    prob = decisions.prob_at_least_target_design(estimates.agreement.value, estimates.agreement.se, target)
    if prob is None:
        prob = (decisions.prob_at_least_target(n_agree, n, target) if claim_w is None
                else decisions.prob_at_least_target_weighted(agree.astype(float), claim_w, target))
    more_target = decisions.more_claims_to_decide(
        ys, ms, target, alpha=thresholds.alpha, weights=wo, rule=ar, claim_level=True, available=available,
        labels_per_claim=n / max(len(set(keys)) if per_reviewer else n, 1), seed=0 if seed is None else seed)
    more_kappa = decisions.more_claims_for_kappa(ek.se, n, half_width=kappa_half_width, confidence=confidence,
                                                 withheld=ek.reason if ek.ci_low is None else None)
    size = SampleSize(kappa_half_width, more_kappa.more_claims, more_target.more_claims,
                      more_kappa.sentence, more_target.sentence, more_target.low, more_target.high,
                      more_target.available)
    flag = decide_flag(rules=rules, estimates=estimates, raw_agreement=pct.value, direction=dirn,
                       thresholds=capped, n_claims=n, more_target=more_target, prob=prob,
                       disagreeing=disagreeing, ceiling=ceiling,
                       unit="(claim, reviewer) verdicts" if per_reviewer else "claims")
    return Report(
        n_claims=len(set(keys)) if per_reviewer else n,
        n_answers=n_answers,
        confusion=table,
        agreement=pct,
        agreement_bootstrap=agree_boot,
        kappa=kap,
        kappa_bootstrap=kappa_boot,
        per_class=per_class_metrics(table),
        direction=dirn,
        ac1=gwet_ac1(table) if n else None,
        sample_size=size,
        weighted=wres,
        thresholds=thresholds,
        flag=flag,
        disagreeing_claims=disagreeing,
        estimates=estimates,
        rules=rules,
        prob_at_least_target=prob,
        effective_thresholds=capped,
        human_ceiling=ceiling,
        basis="per_reviewer" if per_reviewer else "final_label",
        n_labels=n,
    )


# --------------------------------------------------------------------------------------------
# Two judge runs on the same claims
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunComparison:
    n_claims: int
    agreement_a: Estimate
    agreement_b: Estimate
    kappa_a: KappaResult
    kappa_b: KappaResult
    mcnemar: McNemarExact
    only_a_right: tuple[str, ...]
    only_b_right: tuple[str, ...]

    def to_dict(self, run_a: str | None = None, run_b: str | None = None) -> dict[str, Any]:
        return {
            "run_a": run_a,
            "run_b": run_b,
            "n_claims": self.n_claims,
            "a": {"agreement": self.agreement_a.to_dict(), "kappa": self.kappa_a.to_dict()},
            "b": {"agreement": self.agreement_b.to_dict(), "kappa": self.kappa_b.to_dict()},
            "only_a_right": len(self.only_a_right),
            "only_b_right": len(self.only_b_right),
            "mcnemar_exact_p": _opt(self.mcnemar.p_two_sided),
            "only_a_right_claims": list(self.only_a_right),
            "only_b_right_claims": list(self.only_b_right),
        }


def compare_judge_runs(items: Sequence[PairedClaim], *, confidence: float = 0.95) -> RunComparison:
    """Two judge runs on the same claims: each run's agreement and kappa, and a paired exact McNemar.

    The paired test asks whether one run is right (equal to the human label) more often than the
    other on the claims where exactly one of them is right; p = 2 P(X <= min(b, c)),
    X ~ Bin(b + c, 1/2) (McNemar 1947, exact form).  Comparing the two agreement intervals instead
    would ignore the pairing and lose most of the power.
    """
    items = list(items)
    n = len(items)
    keys = [it.claim_key for it in items]
    if len(set(keys)) != n:
        raise ValueError("a claim appears twice")
    codes = [np.fromiter((label_index(getattr(it, f)) for it in items), dtype=np.int64, count=n)
             for f in ("human", "judge_a", "judge_b")]
    return compare_judge_runs_arrays(codes[0], codes[1], codes[2], keys, confidence=confidence)


def compare_judge_runs_arrays(human: np.ndarray | Sequence[int], judge_a: np.ndarray | Sequence[int],
                              judge_b: np.ndarray | Sequence[int], keys: Sequence[str], *,
                              confidence: float = 0.95) -> RunComparison:
    """:func:`compare_judge_runs` on columns of ``LABELS`` indices, one entry per claim."""
    h, a, b = (np.asarray(x, dtype=np.int64) for x in (human, judge_a, judge_b))
    n = h.size
    if h.ndim != 1 or a.shape != h.shape or b.shape != h.shape or len(keys) != n:
        raise ValueError("human, judge_a, judge_b and keys must be one-dimensional and of one length")
    k = len(LABELS)
    if len(set(keys)) != n:
        raise ValueError("a claim appears twice")
    if n and any(x.min() < 0 or x.max() >= k for x in (h, a, b)):
        raise ValueError(f"verdict indices must lie in 0..{k - 1}")
    ta = np.bincount(h * k + a, minlength=k * k).reshape(k, k)
    tb = np.bincount(h * k + b, minlength=k * k).reshape(k, k)
    key_array = np.empty(n, dtype=object)
    key_array[:] = keys
    only_a = tuple(key_array[(a == h) & (b != h)].tolist())
    only_b = tuple(key_array[(b == h) & (a != h)].tolist())
    return RunComparison(
        n_claims=n,
        agreement_a=percent_agreement(ta, confidence=confidence),
        agreement_b=percent_agreement(tb, confidence=confidence),
        kappa_a=cohens_kappa(ta, confidence=confidence),
        kappa_b=cohens_kappa(tb, confidence=confidence),
        mcnemar=mcnemar_exact(len(only_a), len(only_b)),
        only_a_right=only_a,
        only_b_right=only_b,
    )
