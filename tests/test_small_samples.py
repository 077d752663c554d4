"""Small samples of large answers: the agreement interval's bootstrap-t, against a recomputation by
hand and by a reduced simulation (the full one: bench/sim_flag.py)."""

from __future__ import annotations

import math

import numpy as np

from calibration import decisions, estimation
from calibration.report import collapse_empty_strata
from tests.bootstrap_oracle import bootstrap_t_by_hand


def _tables(y: np.ndarray, m: np.ndarray) -> np.ndarray:
    t = np.zeros((y.size, 3, 3))
    t[:, 0, 0] = y
    t[:, 0, 2] = m - y
    return t


def _estimates_of_runs(
    seed: int, reps: int, n: int, claims: tuple[int, int], p: float
) -> list[estimation.Estimate]:
    """The report's agreement estimate of each of ``reps`` runs of n answers of ``claims`` claims
    (uniform), each answer's agreement Beta(4p, 4(1 - p)) (intra-answer correlation 0.2)."""
    rng = np.random.default_rng(seed)
    m = rng.integers(claims[0], claims[1] + 1, size=(reps, n)).astype(float)
    y = rng.binomial(m.astype(int), rng.beta(p * 4, (1 - p) * 4, size=(reps, n))).astype(float)
    return [estimation.agreement_estimate(_tables(y[r], m[r]), population=n, fpc=False) for r in range(reps)]


def test_the_small_sample_interval_is_the_bootstrap_t_recomputed_resample_by_resample() -> None:
    rng = np.random.default_rng(4)
    m = rng.integers(10, 31, size=14).astype(float)
    y = rng.binomial(m.astype(int), rng.beta(3.4, 0.6, size=14)).astype(float)
    e = estimation.agreement_estimate(_tables(y, m), population=14, fpc=False)
    r0, se0, t = bootstrap_t_by_hand(y, m)
    t_sorted = np.sort(np.array(t))
    # method "higher"/"lower" quantiles of 1,999 draws: order statistics 1,950 and 50 (1-based).
    hi_q, lo_q = t_sorted[math.ceil(0.975 * 1998)], t_sorted[math.floor(0.025 * 1998)]
    assert e.value == r0 and e.se == np.float64(se0)
    assert e.ci_low == max(0.0, r0 - hi_q * se0)
    assert e.ci_high == min(1.0, r0 - lo_q * se0)
    assert "bootstrap-t over answers" in e.method
    # P(agreement >= 85%) reads the same draws: the share with R - t* se >= 85%.
    chance = estimation.agreement_chance(_tables(y, m), 0.85, population=14, fpc=False)
    assert chance == float((t <= (r0 - 0.85) / se0).mean())
    # Short answers (1-5 claims) keep the Wilson form and have no bootstrap chance.
    short = np.minimum(m, 5.0)
    assert (
        "bootstrap-t"
        not in estimation.agreement_estimate(
            _tables(np.minimum(y, short), short), population=14, fpc=False
        ).method
    )
    assert estimation.agreement_chance(_tables(np.minimum(y, short), short), 0.85, population=14) is None


def test_the_small_sample_interval_holds_its_level_by_simulation() -> None:
    # 600 runs of 15 answers of 10-30 claims, agreement 85%, intra-answer correlation 0.2: coverage
    # 93-97% (bench/sim_flag.py measured 95.4% at 1,000 runs) within 3 Monte Carlo SE (2.7 points).
    p = 0.85
    estimates = _estimates_of_runs(31, 600, 15, (10, 30), p)
    hits = [e.ci_low is not None and e.ci_high is not None and e.ci_low <= p <= e.ci_high for e in estimates]
    assert 0.93 - 0.027 <= float(np.mean(hits)) <= 0.97 + 0.027


def test_empty_post_strata_are_collapsed_into_their_base_then_the_run_and_said() -> None:
    strata = np.array(["not|a", "not|b", "all-SUPPORTED|a", "all-SUPPORTED|b", "not|a"], dtype=object)
    one_empty, said = collapse_empty_strata(strata, np.array([1, 0, 1, 1, 0], dtype=bool))
    assert one_empty.tolist() == ["not", "not", "all-SUPPORTED|a", "all-SUPPORTED|b", "not"]
    assert said == ["not|b into not"]
    base_empty, said = collapse_empty_strata(strata, np.array([1, 1, 0, 0, 0], dtype=bool))
    assert set(base_empty.tolist()) == {"the run"} and said[-1] == "all-SUPPORTED into the run"
    full, said = collapse_empty_strata(strata, np.ones(5, dtype=bool))
    assert full.tolist() == strata.tolist() and said == []


def test_the_chance_of_the_target_is_a_fair_test_at_the_target_by_simulation() -> None:
    # 1,500 runs of 20 answers of 1-5 claims whose truth is the 85% target (intra-answer correlation
    # 0.2): P(agreement >= target) is read as a one-sided test, so it passes 0.95 (or falls under 0.05)
    # in about 5% of runs; 3 Monte Carlo SE (1.7 points) of slack.  Read with the standard error at the
    # estimate instead, it passed 0.95 in 12% (docs/decisions.md).
    p = 0.85
    chances = [
        decisions.prob_at_least_target_design(e.value, e.se, p, e.df)
        for e in _estimates_of_runs(20, 1500, 20, (1, 5), p)
    ]
    stated = np.array([c for c in chances if c is not None])
    assert stated.size >= 1400
    assert (stated > 0.95).mean() <= 0.05 + 0.017
    assert (stated < 0.05).mean() <= 0.05 + 0.017
