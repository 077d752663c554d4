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

The figures are assembled into one report by `report.agreement_report`; the flag's rule is
`flag.decide_flag`, the report's text `reporttext.format_report`.  Companion entries here:
:func:`compare_judge_runs`, :func:`human_human_agreement`.  The final human label of a claim is
`final_label.resolve`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np

# scipy.special rather than scipy.stats: the same distribution functions (bdtr/bdtrc =
# binomial cdf/sf, chdtrc = chi-square sf) at a third of the import time, which every CLI
# command and page that touches this module pays.
from scipy.special import bdtr, bdtrc, chdtrc

# The Wilson interval lives with the design-based estimates (which, like the flag's rules in
# decisions.py, need it without importing this module); it is re-exported here.
from .estimation import wilson_interval, z_value
from .vocab import LABELS

POSITIVE: Final = "SUPPORTED"
_INDEX: Final = {label: i for i, label in enumerate(LABELS)}

# A variance n*Var(kappa) or a 1 - p_e below this is rounding noise around an exact zero:
# degenerate tables give 0 analytically, but float sums leave ~1e-17 residues.
_ZERO_VAR: Final = 1e-12
# Bootstrap draws are generated in blocks of about this many cluster indices so that
# memory stays near 32 MB whatever the number of answers.
_BLOCK_DRAWS: Final = 4_000_000


def optional_float(x: float | None) -> float | None:
    """Python float or None, so results serialise to JSON without NaN or numpy scalars."""
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Estimate:
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        return {
            "value": optional_float(self.value),
            "ci_low": optional_float(self.ci_low),
            "ci_high": optional_float(self.ci_high),
        }


@dataclass(frozen=True, slots=True)
class KappaResult:
    value: float | None
    se: float | None
    ci_low: float | None
    ci_high: float | None
    kappa_max: float | None

    def to_dict(self) -> dict[str, float | None]:
        return {
            "value": optional_float(self.value),
            "se": optional_float(self.se),
            "ci_low": optional_float(self.ci_low),
            "ci_high": optional_float(self.ci_high),
            "kappa_max": optional_float(self.kappa_max),
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
            "ci_low": optional_float(self.ci_low),
            "ci_high": optional_float(self.ci_high),
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
            "precision": optional_float(self.precision),
            "recall": optional_float(self.recall),
            "f1": optional_float(self.f1),
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
            "mcnemar_exact_p": optional_float(self.mcnemar.p_two_sided),
            "lenient_p": optional_float(self.mcnemar.p_b_greater),
            "strict_p": optional_float(self.mcnemar.p_c_greater),
            "prevalence_index": optional_float(self.prevalence_bias.prevalence_index),
            "bias_index": optional_float(self.prevalence_bias.bias_index),
            "pabak": optional_float(self.prevalence_bias.pabak),
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
            "more_claims_for_target": {
                "median": self.more_claims_for_target,
                "low": self.target_low,
                "high": self.target_high,
                "available": self.available,
            },
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
            "value": optional_float(self.value),
            "ci_low": optional_float(self.ci_low),
            "ci_high": optional_float(self.ci_high),
            "raw": optional_float(self.raw),
            "n_effective": optional_float(self.n_effective),
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
# 2. Cohen's kappa, its large-sample SE, kappa_max, the answer bootstrap's tables
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
    z = z_value(confidence)
    return KappaResult(kappa, se, max(-1.0, kappa - z * se), min(1.0, kappa + z * se), kmax)


def agreement_many(tables: np.ndarray) -> np.ndarray:
    """Observed agreement trace/total of each table in a stack; NaN for empty tables."""
    t = np.asarray(tables, dtype=float)
    n = t.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, np.trace(t, axis1=-2, axis2=-1) / n, np.nan)


def cluster_tables(
    cluster_index: np.ndarray,
    human: np.ndarray,
    judge: np.ndarray,
    n_clusters: int,
    weights: np.ndarray | None = None,
    k: int = len(LABELS),
) -> np.ndarray:
    """Per-cluster k x k tables as an (n_clusters, k*k) array, optionally summing weights.

    The bootstrap works on these: a resample's table is a weighted sum of cluster rows.
    """
    flat = cluster_index.astype(np.int64) * (k * k) + human.astype(np.int64) * k + judge.astype(np.int64)
    counts = np.bincount(flat, weights=weights, minlength=n_clusters * k * k)
    return counts.reshape(n_clusters, k * k).astype(float)


def bootstrap_tables(
    per_cluster: Sequence[np.ndarray], *, resamples: int = 2000, seed: int | None = 0
) -> list[np.ndarray]:
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
            outs[0][start : start + m] = times @ tables
            continue
        # Offsetting each row by row*n lets a single bincount count draws per (row, cluster).
        draws += (np.arange(m, dtype=draws.dtype) * n)[:, None]
        multiplicity = np.bincount(draws.ravel(), minlength=m * n).reshape(m, n).astype(float)
        for out, c in zip(outs, per_cluster, strict=True):
            out[start : start + m] = multiplicity @ c
    return [o.reshape(-1, k, k) for o in outs]


def _count_patterns(c: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Distinct rows of a tensor of counts and each row's index among them, when they are few.

    None when the tensor is not made of non-negative integers below 2^53 (weights: every sum
    must stay exact for both branches of :func:`bootstrap_tables` to agree), when a row key
    would not fit in 63 bits, or when distinct rows are more than half of all.
    """
    if c.size == 0 or not (c >= 0).all() or not (c == np.floor(c)).all() or c.max() >= 2.0**53:
        return None
    ints = c.astype(np.int64)
    base = [int(x) + 1 for x in ints.max(axis=0)]
    if math.prod(base) >= 2**62:
        return None
    place = np.array([math.prod(base[:i]) for i in range(len(base))], dtype=np.int64)
    _, first, which = np.unique(ints @ place, return_index=True, return_inverse=True)
    if 2 * first.size > c.shape[0]:
        return None
    return c[first], which.reshape(-1)


# --------------------------------------------------------------------------------------------
# 3. Per-class precision / recall / F1
# --------------------------------------------------------------------------------------------


def per_class_metrics(
    table: np.ndarray | Sequence[Sequence[float]], labels: Sequence[str] = LABELS
) -> dict[str, ClassMetrics]:
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
        out[label] = ClassMetrics(
            optional_float(precision), optional_float(recall), optional_float(f1), int(rows[i])
        )
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
    return np.array(
        [
            [t[positive, positive], t[positive, neg].sum()],
            [t[neg, positive].sum(), t[np.ix_(neg, neg)].sum()],
        ]
    )


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


def direction(
    table: np.ndarray | Sequence[Sequence[float]],
    *,
    positive: str = POSITIVE,
    lenient_claims: Sequence[str] = (),
    strict_claims: Sequence[str] = (),
) -> Direction:
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
# 5. Human-human agreement
# --------------------------------------------------------------------------------------------


def alpha_from_counts(counts: np.ndarray) -> float | None:
    """Krippendorff's alpha for nominal data, any number of coders, missing values allowed.

    ``counts`` is the units x values table of how often each unit got each value.  From the
    coincidence matrix o_ck = sum_u (number of c-k pairs of distinct coders in u) / (m_u - 1), with
    n_c = sum_k o_ck and n = sum_c n_c:
        alpha = 1 - (n - 1) sum_{c != k} o_ck / sum_{c != k} n_c n_k.
    Units with fewer than two values are not pairable and are left out.
    Source: Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", Annenberg School
    for Communication, sec. C (nominal example: alpha = 0.743).  Computed by the `krippendorff`
    package; None when fewer than two pairable values or every value is the same category
    (expected disagreement 0), where the package gives NaN or refuses.
    """
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
            "krippendorff_alpha": optional_float(self.alpha),
        }


def human_human_agreement(
    claim: np.ndarray | Sequence[int],
    reviewer: np.ndarray | Sequence[int],
    verdict: np.ndarray | Sequence[int],
    reviewers: Sequence[str],
) -> HumanHumanAgreement:
    """Agreement among reviewers on the claims that more than one of them labelled.

    One entry per (claim, reviewer) label: ``claim`` identifies the claim (any integers),
    ``reviewer`` indexes ``reviewers`` (distinct names), ``verdict`` indexes ``LABELS``; a
    reviewer's verdict given twice on a claim counts once, the later one.
    ``agreement`` is the share of reviewer pairs within a claim that agree,
    sum_u sum_c C(n_uc, 2) / sum_u C(m_u, 2) (n_uc labels of value c on claim u, m_u its labels),
    with a Wilson CI on pairs (pairs of one claim are not independent when a claim has three or
    more reviewers).  Cohen's kappa (rows = first reviewer in sorted order) when exactly two
    reviewers overlap; Krippendorff's nominal alpha (:func:`alpha_from_counts`) always, as it
    handles any number of reviewers and reviewer pairs that change from claim to claim.
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
    _, last = np.unique((unit * len(names) + r)[::-1], return_index=True)
    if last.size < n:
        once = np.sort(n - 1 - last)
        unit, r, v = unit[once], r[once], v[once]
    m = np.bincount(unit)
    shared = m >= 2
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
# 6. Weighted (population) agreement
# --------------------------------------------------------------------------------------------


def weighted_agreement(
    agree: Sequence[bool] | np.ndarray, weights: Sequence[float] | np.ndarray
) -> float | None:
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

    def better(self, alpha: float) -> Literal["a", "b"] | None:
        """The run right more often on the claims where exactly one is right, when the paired
        exact McNemar test says so at level `alpha`; None when the difference could be noise."""
        p, a, b = self.mcnemar.p_two_sided, len(self.only_a_right), len(self.only_b_right)
        if p is None or p >= alpha or a == b:
            return None
        return "a" if a > b else "b"

    def to_dict(self, run_a: str | None = None, run_b: str | None = None) -> dict[str, Any]:
        return {
            "run_a": run_a,
            "run_b": run_b,
            "n_claims": self.n_claims,
            "a": {"agreement": self.agreement_a.to_dict(), "kappa": self.kappa_a.to_dict()},
            "b": {"agreement": self.agreement_b.to_dict(), "kappa": self.kappa_b.to_dict()},
            "only_a_right": len(self.only_a_right),
            "only_b_right": len(self.only_b_right),
            "mcnemar_exact_p": optional_float(self.mcnemar.p_two_sided),
            "only_a_right_claims": list(self.only_a_right),
            "only_b_right_claims": list(self.only_b_right),
        }


def compare_judge_runs(
    human: np.ndarray | Sequence[int],
    judge_a: np.ndarray | Sequence[int],
    judge_b: np.ndarray | Sequence[int],
    keys: Sequence[str],
    *,
    confidence: float = 0.95,
) -> RunComparison:
    """Two judge runs on the same claims: each run's agreement and kappa, and a paired exact McNemar.

    Columns of ``LABELS`` indices, one entry per claim, with the claims' ``keys``.  The paired test
    asks whether one run is right (equal to the human label) more often than the other on the
    claims where exactly one of them is right; p = 2 P(X <= min(b, c)), X ~ Bin(b + c, 1/2)
    (McNemar 1947, exact form).  Comparing the two agreement intervals instead would ignore the
    pairing and lose most of the power.
    """
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
