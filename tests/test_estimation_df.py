"""The t quantile of a stratified interval: the Satterthwaite degrees of freedom of its variance."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from calibration import estimation as est


def _cochran_interval(y, m, strata, population, *, proportion: bool):
    """Combined ratio estimate, its variance (Cochran 1977 sec. 6.11) and its 95% interval with the
    effective df of Cochran's eq. 5.16, n_e = (sum g_h s_h^2)^2 / sum g_h^2 s_h^4 / (n_h - 1),
    g_h = N_h (N_h - n_h) / n_h, written as loops over the strata (no finite-population factor
    when `population` is None for a stratum's N_h: then g_h = N_h^2 / n_h)."""
    labels = sorted(set(strata))
    idx = {h: [i for i, s in enumerate(strata) if s == h] for h in labels}
    num = sum(population[h] / len(idx[h]) * sum(y[i] for i in idx[h]) for h in labels)
    den = sum(population[h] / len(idx[h]) * sum(m[i] for i in idx[h]) for h in labels)
    r = num / den
    parts, dof = [], []
    for h in labels:
        nh, big = len(idx[h]), population[h]
        e = [y[i] - r * m[i] for i in idx[h]]
        mean = sum(e) / nh
        s2 = sum((x - mean) ** 2 for x in e) / (nh - 1)
        parts.append(big * (big - nh) / nh * s2)
        dof.append(nh - 1)
    v = sum(parts) / den**2
    df = sum(parts) ** 2 / sum(p * p / d for p, d in zip(parts, dof, strict=True))
    t = stats.t.ppf(0.975, df)
    if not proportion:
        return r, v, df, (r - t * math.sqrt(v), r + t * math.sqrt(v))
    # Korn & Graubard's effective sample size at that t, then Wilson's interval at it.
    z = stats.norm.ppf(0.975)
    n_eff = r * (1 - r) / v * (z / t) ** 2
    centre = (r + z * z / (2 * n_eff)) / (1 + z * z / n_eff)
    half = z / (1 + z * z / n_eff) * math.sqrt(r * (1 - r) / n_eff + z * z / (4 * n_eff**2))
    return r, v, df, (centre - half, centre + half)


# Stratum a: many answers, little spread; b: few answers with most of the variance.
Y = [3, 3, 2, 3, 3, 3, 2, 3, 3, 3, 0, 3, 1, 3]
M = [3] * 14
STRATA = ["a"] * 10 + ["b"] * 4
POPULATION = {"a": 200, "b": 300}


@pytest.mark.parametrize("proportion", [False, True])
def test_the_interval_uses_the_satterthwaite_df_of_its_variance(proportion: bool) -> None:
    bounds = (0.0, 1.0) if proportion else (-10.0, 10.0)
    e = est.ratio_estimate(Y, M, STRATA, POPULATION, bounds=bounds)
    r, v, df, (lo, hi) = _cochran_interval(Y, M, STRATA, POPULATION, proportion=proportion)
    assert e.value == pytest.approx(r, rel=1e-12)
    assert e.se == pytest.approx(math.sqrt(v), rel=1e-12)
    # The variance sits in stratum b's 4 answers: far fewer df than n - H = 12.
    assert df < 5
    assert (e.ci_low, e.ci_high) == (pytest.approx(lo, rel=1e-9), pytest.approx(hi, rel=1e-9))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_satterthwaite_df_is_at_most_n_minus_the_strata_and_equal_for_equal_parts(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 60
    m = rng.integers(1, 6, size=n)
    y = rng.binomial(m, 0.85)
    strata = rng.choice(["a", "b", "c", "d"], size=n).tolist()
    population = {h: strata.count(h) * int(rng.integers(3, 40)) for h in "abcd"}
    e = est.ratio_estimate(y, m, strata, population, bounds=(-10.0, 10.0))
    _r, _v, df, (lo, hi) = _cochran_interval(list(y), list(m), strata, population, proportion=False)
    assert df <= n - 4
    assert (e.ci_low, e.ci_high) == (pytest.approx(lo, rel=1e-9), pytest.approx(hi, rel=1e-9))
    # Two strata of the same size, weight and residuals: the df is exactly n - H.
    twin_y, twin_m = [*y[:10], *y[:10]], [*m[:10], *m[:10]]
    twin = est.ratio_estimate(
        twin_y, twin_m, ["a"] * 10 + ["b"] * 10, {"a": 100, "b": 100}, bounds=(-10.0, 10.0)
    )
    t18 = stats.t.ppf(0.975, 18)
    assert twin.ci_high - twin.ci_low == pytest.approx(2 * t18 * twin.se, rel=1e-9)
