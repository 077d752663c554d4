"""The agreement's small-sample bootstrap-t written out by hand, for the tests to check
`estimation.bootstrap_t_draws` and what reads it against."""

from __future__ import annotations

import math

import numpy as np


def bootstrap_t_by_hand(
    y: np.ndarray, m: np.ndarray, resamples: int = 1999
) -> tuple[float, float, np.ndarray]:
    """(R, se, t*) of the agreement's small-sample interval written out resample by resample: one
    stratum, equal weights, no finite-population factor, the draws of seed 0 (as
    `estimation.bootstrap_t_draws`); t* = (R* - R) / se*, +-inf where se* = 0."""
    n = y.size

    def ratio_se(c: np.ndarray) -> tuple[float, float]:
        r = float((c * y).sum() / (c * m).sum())
        z = y - r * m
        zbar = float((c * z).sum()) / n
        return r, math.sqrt(n / (n - 1) * float((c * (z - zbar) ** 2).sum())) / float((c * m).sum())

    r0, se0 = ratio_se(np.ones(n))
    t = []
    for c in np.random.default_rng(0).multinomial(n, np.full(n, 1 / n), size=resamples):
        r, se = ratio_se(c.astype(float))
        t.append((r - r0) / se if se > 1e-12 else math.copysign(math.inf, r - r0) if r != r0 else 0.0)
    return r0, se0, np.array(t)
