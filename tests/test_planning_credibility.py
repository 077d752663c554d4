"""How far the plan trusts a stratum's own labels: the empirical credibility of its variance."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calibration import planning

# Residuals per stratum, the prior variances, and K worked by hand from the Bühlmann-Straub
# moments. Strata a = (0, 0, 3) and b = (0, 3, 3) both have s^2 = 3; the x_hi are
# 3/2 (e - ebar)^2 = (1.5, 1.5, 6) and (6, 1.5, 1.5), so v = (13.5 + 13.5) / (2 + 2) = 6.75.
CASES = [
    # priors 1 and 5: sum w (s^2 - S0^2)^2 = 2 * 4 + 2 * 4 = 16, tau^2 = (16 - 2 * 6.75) / 4 = 0.625,
    # K = 6.75 / 0.625 = 10.8
    ({"a": (0, 0, 3), "b": (0, 3, 3)}, {"a": 1.0, "b": 5.0}, 10.8),
    # priors equal to the strata's own variances: no difference beyond noise, K infinite
    ({"a": (0, 0, 3), "b": (0, 3, 3)}, {"a": 3.0, "b": 3.0}, math.inf),
    # priors 0 and 10: 2 * 9 + 2 * 49 = 116, tau^2 = (116 - 13.5) / 4 = 25.625, v / tau^2 < 5
    ({"a": (0, 0, 3), "b": (0, 3, 3)}, {"a": 0.0, "b": 10.0}, planning.SHRINK_ANSWERS),
    # one stratum with two labels or more: nothing to measure the strata's differences on
    ({"a": (0, 0, 3), "b": (1,)}, {"a": 1.0, "b": 5.0}, planning.SHRINK_ANSWERS),
]


@pytest.mark.parametrize(("residuals", "prior", "expected"), CASES)
def test_credibility_answers_match_the_worked_moments(
    residuals: dict[str, tuple[float, ...]], prior: dict[str, float], expected: float
) -> None:
    own = {h: np.asarray(e, dtype=float) for h, e in residuals.items()}
    assert planning.credibility_answers(own, prior) == pytest.approx(expected)


def _direct(own: dict[str, np.ndarray], prior: dict[str, float]) -> float:
    """Bühlmann-Straub's K by the textbook sums over a long table of (stratum, x) rows."""
    rows = [
        (h, len(e) / (len(e) - 1) * (x - np.mean(e)) ** 2) for h, e in own.items() if len(e) >= 2 for x in e
    ]
    strata = sorted({h for h, _ in rows})
    xs = {h: [x for g, x in rows if g == h] for h in strata}
    means = {h: sum(xs[h]) / len(xs[h]) for h in strata}
    dof = sum(len(xs[h]) - 1 for h in strata)
    v = sum((x - means[h]) ** 2 for h in strata for x in xs[h]) / dof
    tau2 = (sum((len(xs[h]) - 1) * (means[h] - prior[h]) ** 2 for h in strata) - len(strata) * v) / dof
    return max(planning.SHRINK_ANSWERS, v / tau2) if tau2 > 0 else math.inf


@pytest.mark.parametrize("seed", range(5))
def test_credibility_answers_match_a_direct_computation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    own = {f"h{i}": rng.poisson(1.0, size=rng.integers(2, 12)).astype(float) for i in range(6)}
    prior = {h: float(rng.uniform(0.2, 2.0)) for h in own}
    assert planning.credibility_answers(own, prior) == pytest.approx(_direct(own, prior))


def test_strata_of_one_spread_are_shrunk_all_the_way_and_distinct_ones_are_not() -> None:
    # By simulation: six strata with Poisson(1) residuals (variance 1) and the true prior 1 are
    # mostly judged alike (K large or infinite); with variances 0.25 and 4 (prior 1) the labels count.
    rng = np.random.default_rng(7)
    prior = dict.fromkeys((f"h{i}" for i in range(6)), 1.0)
    alike = [
        planning.credibility_answers({h: rng.poisson(1.0, size=8).astype(float) for h in prior}, prior)
        for _ in range(200)
    ]
    apart = [
        planning.credibility_answers(
            {h: rng.poisson(0.25 if i % 2 else 4.0, size=8).astype(float) for i, h in enumerate(prior)},
            prior,
        )
        for _ in range(200)
    ]
    # The weight a stratum's own 8 labels get, (n - 1) / (n - 1 + K): 0.58 at the fixed K = 5.
    weight = {name: np.mean([7 / (7 + k) for k in ks]) for name, ks in (("alike", alike), ("apart", apart))}
    assert weight["alike"] < 0.3
    assert weight["apart"] > 0.5
