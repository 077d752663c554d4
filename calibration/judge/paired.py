"""Paired statistics for two judge runs on the same claims: the difference in agreement with a
paired interval, and how many more labeled claims a paired test would need to decide.

Pure functions (scipy imported only when a p-value is computed: the judge package is imported
by every lab run, and scipy alone costs some 60 MB). Counts follow the 2x2 table of
(old right?, new right?) over n claims: both right `a`, only the old right `b`, only the new
right `c`, neither `d`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def _wilson(x: int, n: int, confidence: float) -> tuple[float, float]:
    from ..estimation import wilson_interval  # scipy: loaded only when an interval is asked for

    bounds = wilson_interval(x, n, confidence=confidence)
    assert bounds is not None  # n > 0 here
    return bounds


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """new agreement - old agreement on the same claims, with its paired interval."""

    difference: float | None
    ci_low: float | None
    ci_high: float | None


def paired_difference(a: int, b: int, c: int, d: int, *, confidence: float = 0.95) -> PairedDifference:
    """Difference of two paired proportions, p_new - p_old = (c - b) / n, with Newcombe's
    hybrid score interval (Newcombe 1998, "Improved confidence intervals for the difference
    between binomial proportions based on paired data", Stat Med 17:2635-2650, method 10).

    With Wilson intervals (l1, u1) for p_new = (a + c) / n and (l2, u2) for p_old = (a + b) / n,
    and the correlation phi = (ad - bc) / sqrt((a+b)(c+d)(a+c)(b+d)) (0 when a margin is empty;
    when ad > bc, ad - bc is first reduced by n/2, not below 0, as in method 10):

        delta   = sqrt((p1 - l1)^2 - 2 phi (p1 - l1)(u2 - p2) + (u2 - p2)^2)
        epsilon = sqrt((u1 - p1)^2 - 2 phi (u1 - p1)(p2 - l2) + (p2 - l2)^2)
        interval = [theta - delta, theta + epsilon],  theta = p1 - p2.

    No claims: every field None.
    """
    n = a + b + c + d
    if n == 0:
        return PairedDifference(None, None, None)
    p1, p2 = (a + c) / n, (a + b) / n
    l1, u1 = _wilson(a + c, n, confidence)
    l2, u2 = _wilson(a + b, n, confidence)
    denom = (a + b) * (c + d) * (a + c) * (b + d)
    num = float(a * d - b * c)
    if num > 0:
        num = max(num - n / 2, 0.0)
    phi = num / math.sqrt(denom) if denom > 0 else 0.0
    theta = p1 - p2
    delta = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    eps = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return PairedDifference(theta, max(-1.0, theta - delta), min(1.0, theta + eps))


def mcnemar_exact_p(b: int, c: int) -> float | None:
    """Two-sided exact McNemar p: 2 P(X <= min(b, c)), X ~ Bin(b + c, 1/2), capped at 1
    (McNemar 1947, exact conditional form); None with no discordant claim."""
    from scipy import stats

    if b + c == 0:
        return None
    return float(min(1.0, 2 * stats.binom.cdf(min(b, c), b + c, 0.5)))


def claims_to_decide(b: int, c: int, n: int, *, alpha: float = 0.05, max_factor: int = 50) -> int | None:
    """How many labeled claims in all the paired test would need to reach p < alpha, if the
    share of claims only the old run gets right (b / n) and only the new run gets right (c / n)
    held as more claims were labeled: the smallest N >= n with
    `mcnemar_exact_p(round(b N / n), round(c N / n)) < alpha`.

    A projection of the observed pattern, not a power calculation: it answers "how many more
    labels before this pattern, if real, would show". None when no N up to max_factor * n
    would (b == c: the runs are tied, or no discordant claim at all).
    """
    if n <= 0 or b == c:
        return None
    p = mcnemar_exact_p(b, c)
    if p is not None and p < alpha:
        return n
    lo, hi = n, n * max_factor

    def decides(m: int) -> bool:
        q = mcnemar_exact_p(round(b * m / n), round(c * m / n))
        return q is not None and q < alpha

    if not decides(hi):
        return None
    # p falls (not strictly: rounding) as N grows; bisect, then step down past any wobble.
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if decides(mid):
            hi = mid
        else:
            lo = mid
    return hi
