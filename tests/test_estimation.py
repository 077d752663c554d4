"""Design-based estimates: known answers, independent oracles, edge cases, coverage by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from calibration import agreement
from calibration import estimation as est

# --------------------------------------------------------------------------- helpers (oracles)


def _tables(seed: int, n: int, *, p_sup: float = 0.8, max_claims: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.zeros((n, 3, 3))
    for i in range(n):
        for _ in range(int(rng.integers(1, max_claims + 1))):
            h = int(rng.choice(3, p=[p_sup, (1 - p_sup) / 2, (1 - p_sup) / 2]))
            j = h if rng.random() < 0.8 else int(rng.integers(0, 3))
            t[i, h, j] += 1
    return t


def _cochran_ratio(y, m, strata, population):
    """Combined ratio estimate and its variance written as loops, from Cochran (1977) sec. 6.11."""
    labels = sorted(set(strata))
    num = den = 0.0
    for h in labels:
        idx = [i for i, s in enumerate(strata) if s == h]
        w = population[h] / len(idx)
        num += w * sum(y[i] for i in idx)
        den += w * sum(m[i] for i in idx)
    r = num / den
    v = 0.0
    for h in labels:
        idx = [i for i, s in enumerate(strata) if s == h]
        nh, big = len(idx), population[h]
        e = [y[i] - r * m[i] for i in idx]
        mean = sum(e) / nh
        s2 = sum((x - mean) ** 2 for x in e) / (nh - 1)
        v += big * big * (1 - nh / big) * s2 / nh
    return r, v / den**2


def ppi_from_paper(f_all, y_lab, f_lab):
    """Prediction-powered mean, Angelopoulos et al. (Science 2023), written from the paper.

    theta = mean_N(f) - mean_n(f - Y); se = sqrt(var_f / N + var_{f - Y} / n) (sample variances).
    """
    f_all, y_lab, f_lab = (np.asarray(x, dtype=float) for x in (f_all, y_lab, f_lab))
    rect = f_lab - y_lab
    theta = f_all.mean() - rect.mean()
    se = math.sqrt(f_all.var(ddof=1) / f_all.size + rect.var(ddof=1) / rect.size)
    return theta, se


def ppi_plus_from_paper(f_all, y_lab, f_lab):
    """PPI++ for a mean (Angelopoulos, Duchi & Zrnic 2023): theta_l = Ybar + l (fbar_N - fbar_n).

    Var = Var(Y - l f)/n + l^2 Var_N(f)/N; its minimiser l = Cov(Y, f) / (Var_n(f) + (n/N) Var_N(f)),
    i.e. Cov / ((1 + n/N) Var(f)) when the two variance estimates coincide.
    """
    f_all, y, f = (np.asarray(x, dtype=float) for x in (f_all, y_lab, f_lab))
    n, big = y.size, f_all.size
    cov = np.cov(y, f, ddof=1)[0, 1]
    lam = cov / (f.var(ddof=1) + n / big * f_all.var(ddof=1))
    theta = y.mean() + lam * (f_all.mean() - f.mean())
    se = math.sqrt((y - lam * f).var(ddof=1) / n + lam * lam * f_all.var(ddof=1) / big)
    return theta, se, lam


# --------------------------------------------------------------------------- ratio estimate


def test_ratio_known_answer_by_hand():
    # Stratum A: N = 10, answers (y, M) = (2, 3), (1, 2), (3, 3); stratum B: N = 4, (0, 1), (1, 2).
    # Y_hat = 10/3 * 6 + 2 * 1 = 22, X_hat = 10/3 * 8 + 2 * 3 = 98/3, R_hat = 66/98 = 33/49.
    y, m = [2, 1, 3, 0, 1], [3, 2, 3, 1, 2]
    strata = ["A", "A", "A", "B", "B"]
    pop = {"A": 10, "B": 4}
    e = est.ratio_estimate(y, m, strata, pop)
    assert e.value == pytest.approx(33 / 49, abs=1e-15)
    _r, v = _cochran_ratio(y, m, strata, pop)
    assert e.se == pytest.approx(math.sqrt(v), rel=1e-12)
    assert e.n_answers == 5 and e.n_claims == 11 and e.reason is None
    assert e.ci_low < e.value < e.ci_high


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ratio_matches_loop_oracle_on_random_strata(seed):
    rng = np.random.default_rng(seed)
    n = 40
    m = rng.integers(1, 7, size=n)
    y = rng.binomial(m, 0.8)
    strata = rng.choice(["a", "b", "c"], size=n).tolist()
    pop = {h: strata.count(h) * int(rng.integers(2, 30)) for h in "abc"}
    e = est.ratio_estimate(y, m, strata, pop)
    r, v = _cochran_ratio(list(y), list(m), strata, pop)
    assert e.value == pytest.approx(r, rel=1e-12)
    assert e.se == pytest.approx(math.sqrt(v), rel=1e-10)


def test_equal_probability_reduces_exactly_to_raw():
    t = _tables(5, 30)
    raw = agreement.percent_agreement(t.sum(axis=0)).value
    one = est.agreement_estimate(t, None, 600)
    assert one.value == raw
    # proportional allocation: every stratum sampled at 1 in 20, so every weight is 20
    strata = np.array(["x"] * 10 + ["y"] * 20)
    prop = est.agreement_estimate(t, strata, {"x": 200, "y": 400})
    assert prop.value == raw
    kappa = est.kappa_estimate(t, strata, {"x": 200, "y": 400})
    assert kappa.value == pytest.approx(agreement.cohens_kappa(t.sum(axis=0)).value, abs=1e-15)
    d = est.direction_estimate(t, strata, {"x": 200, "y": 400})
    raw_dir = agreement.direction(t.sum(axis=0))
    total = t.sum()
    assert d.lenient.value == raw_dir.lenient / total
    assert d.strict.value == raw_dir.strict / total


def test_srs_variance_is_cochran_ratio_variance_with_fpc():
    t = _tables(7, 25)
    c = est.answer_counts(t)
    y, m = c["agree"], c["resolved"]
    big_n = 100
    e = est.agreement_estimate(t, None, big_n)
    r = y.sum() / m.sum()
    # Cochran (1977) eq. 6.13: v(R) = (1 - f) / (n xbar^2) * s^2 of y - R x
    v = (1 - 25 / big_n) / (25 * m.mean() ** 2) * np.var(y - r * m, ddof=1)
    assert e.se == pytest.approx(math.sqrt(v), rel=1e-12)


def test_counts_follow_agreement_direction_definitions():
    t = _tables(9, 50)
    c = est.answer_counts(t)
    d = agreement.direction(t.sum(axis=0))
    assert c["lenient"].sum() == d.lenient and c["strict"].sum() == d.strict


def test_answer_tables_from_claim_columns():
    ids, t = est.answer_tables(["b", "a", "b", "a"], [0, 0, 2, 1], [0, 2, 0, 1])
    assert ids.tolist() == ["a", "b"]
    assert t[0, 0, 2] == 1 and t[0, 1, 1] == 1 and t[1, 0, 0] == 1 and t[1, 2, 0] == 1
    assert t.sum() == 4


# --------------------------------------------------------------------------- edge cases


def test_empty_sample_has_no_estimate():
    e = est.ratio_estimate([], [], [], {"a": 5})
    assert e.value is None and e.ci_low is None and e.reason == "no labeled answers"


def test_one_answer_gives_value_without_interval():
    e = est.ratio_estimate([2], [3], None, 50)
    assert e.value == pytest.approx(2 / 3)
    assert e.ci_low is None and e.ci_high is None and "fewer than two" in e.reason


def test_stratum_without_labels_withholds_the_estimate():
    e = est.ratio_estimate([1, 2], [2, 2], ["a", "a"], {"a": 10, "b": 5})
    assert e.value is None and "no labeled answer in stratum b" in e.reason


def test_census_stratum_contributes_no_variance():
    # stratum "a" fully labeled (n_h = N_h): only "b" carries variance
    y, m = [1, 2, 0, 3, 1], [2, 2, 1, 3, 2]
    strata = ["a", "a", "b", "b", "b"]
    e = est.ratio_estimate(y, m, strata, {"a": 2, "b": 30})
    _r, v = _cochran_ratio(y, m, strata, {"a": 2, "b": 30})
    assert e.se == pytest.approx(math.sqrt(v), rel=1e-12)
    census = est.ratio_estimate(y, m, strata, {"a": 2, "b": 3})
    assert census.ci_low is None and "every answer of the population is labeled" in census.reason
    assert census.value == pytest.approx(sum(y) / sum(m))


def test_singleton_stratum_is_collapsed_with_the_nearest_sampling_rate():
    y, m = [1, 2, 0, 3, 1, 2], [2, 2, 1, 3, 2, 2]
    strata = ["a", "a", "b", "b", "b", "c"]
    pop = {"a": 20, "b": 300, "c": 100}  # rates: a 0.10, b 0.01, c 0.01 -> c joins b
    e = est.ratio_estimate(y, m, strata, pop)
    assert "collapsed c -> b" in e.method and e.ci_low is not None
    # the point estimate keeps c's own weight
    num = 10 * 3 + 100 * 4 + 100 * 2
    den = 10 * 4 + 100 * 6 + 100 * 2
    assert e.value == pytest.approx(num / den)


def test_single_answer_with_nothing_to_collapse_withholds():
    e = est.ratio_estimate([1], [2], ["a"], {"a": 9})
    assert e.ci_low is None and e.reason


@pytest.mark.parametrize(
    "kwargs",
    [
        {"stratum": ["a", "z"], "population": {"a": 3}},
        {"stratum": ["a", "a"], "population": {"a": 1}},
        {"stratum": None, "population": None},
    ],
)
def test_bad_designs_raise(kwargs):
    with pytest.raises(ValueError):
        est.ratio_estimate([1, 1], [1, 2], **kwargs)


# --------------------------------------------------------------------------- kappa


def test_weighted_kappa_matches_sklearn_with_sample_weights():
    t = _tables(11, 40)
    strata = np.array(["p"] * 25 + ["q"] * 15)
    pop = {"p": 1000, "q": 60}
    e = est.kappa_estimate(t, strata, pop)
    human, judge, weight = [], [], []
    for i, tab in enumerate(t):
        w = pop[strata[i]] / (strata == strata[i]).sum()
        for h in range(3):
            for j in range(3):
                for _ in range(int(tab[h, j])):
                    human.append(h)
                    judge.append(j)
                    weight.append(w)
    assert e.value == pytest.approx(cohen_kappa_score(human, judge, sample_weight=weight), abs=1e-12)


def test_kappa_linearised_variance_is_fce_for_independent_claims():
    # one claim per answer and a population so large that the fpc vanishes
    rng = np.random.default_rng(3)
    n = 200
    h = rng.choice(3, size=n, p=[0.7, 0.1, 0.2])
    j = np.where(rng.random(n) < 0.75, h, rng.integers(0, 3, size=n))
    t = np.zeros((n, 3, 3))
    t[np.arange(n), h, j] = 1
    e = est.kappa_estimate(t, None, 10**12)
    fce = agreement.cohens_kappa(t.sum(axis=0))
    assert e.value == pytest.approx(fce.value, abs=1e-12)
    assert e.se == pytest.approx(fce.se * math.sqrt(n / (n - 1)), rel=1e-6)


def test_kappa_withheld_with_few_minority_claims_or_answers():
    t = np.zeros((20, 3, 3))
    t[:, 0, 0] = 3
    t[0, 1, 1] = t[1, 2, 0] = 1  # two claims outside SUPPORTED
    e = est.kappa_estimate(t, None, 200)
    assert e.value is not None and e.ci_low is None and "outside the majority class" in e.reason
    few = est.kappa_estimate(_tables(1, 12), None, 200)
    assert few.ci_low is None and "12 labeled answers" in few.reason


def test_kappa_undefined_when_both_raters_use_one_class():
    t = np.zeros((20, 3, 3))
    t[:, 0, 0] = 2
    e = est.kappa_estimate(t, None, 100)
    assert e.value is None and "undefined" in e.reason


def test_rescaling_bootstrap_reproduces_the_stratified_variance():
    # Rao-Wu-Yue weights: the bootstrap variance of a linear statistic equals the design variance
    t = _tables(21, 60)
    strata = np.array(["a"] * 30 + ["b"] * 30)
    pop = {"a": 90, "b": 3000}
    boots = est.stratified_bootstrap_tables(t, strata, pop, resamples=20000, seed=1)
    agree = np.trace(boots, axis1=1, axis2=2) / boots.sum(axis=(1, 2))
    e = est.agreement_estimate(t, strata, pop)
    assert np.std(agree) == pytest.approx(e.se, rel=0.05)


def test_kappa_bootstrap_interval_brackets_the_estimate():
    t = _tables(4, 60, p_sup=0.6)
    e = est.kappa_estimate(t, None, 500, interval="bootstrap", resamples=1000)
    assert e.ci_low is not None and e.ci_low < e.value < e.ci_high


# --------------------------------------------------------------------------- no invented intervals


def test_bootstrap_interval_is_the_percentile_interval():
    v = np.random.default_rng(0).normal(size=2000)
    iv = est.bootstrap_interval(v, 30)
    lo, hi = np.quantile(v, [0.025, 0.975])
    assert iv.reason is None
    assert (iv.ci_low, iv.ci_high) == pytest.approx((lo, hi), abs=1e-12)


@pytest.mark.parametrize(
    ("values", "n_answers", "why"),
    [
        (np.linspace(0, 1, 100), 2, "only 2 labeled answers"),
        (np.linspace(0, 1, 100), 9, "only 9 labeled answers"),
        (np.full(100, 0.667), 50, "no spread"),
        (np.r_[np.full(98, 0.5), 0.4, 0.6], 50, "no spread"),
        (np.r_[np.full(10, np.nan), np.linspace(0, 1, 90)], 50, "undefined"),
        (np.full(10, np.nan), 50, "every resample is undefined"),
    ],
)
def test_bootstrap_interval_withheld(values, n_answers, why):
    iv = est.bootstrap_interval(values, n_answers)
    assert iv.ci_low is None and iv.ci_high is None and why in iv.reason


# --------------------------------------------------------------------------- direction


def test_direction_difference_and_one_sided_tests():
    t = _tables(13, 80)
    t[:, 0, 0] = np.maximum(t[:, 0, 0] - 1, 0)
    t[:40, 1, 0] += 1  # make the judge lenient on 40 answers
    d = est.direction_estimate(t, None, 2000)
    assert d.difference.value == pytest.approx(d.lenient.value - d.strict.value, abs=1e-15)
    assert d.p_lenient < 0.01 and d.p_strict > 0.99
    assert d.p_lenient + d.p_strict == pytest.approx(1.0)


def test_direction_test_and_interval_share_one_df():
    # Strata of unequal spread: the interval's Satterthwaite df is well below n - (strata).
    t = _tables(13, 60)
    t[:30, 1, 0] += 1
    t[:5, 0, 2] += 3
    stratum = np.repeat([0, 1, 2], 20)
    d = est.direction_estimate(t, stratum, {0: 500, 1: 500, 2: 500})
    diff = d.difference
    assert diff.df is not None and diff.df < len(t) - 3
    q = (diff.ci_high - diff.ci_low) / (2 * diff.se)  # the interval's t quantile
    assert q == pytest.approx(float(stats.t.ppf(0.975, diff.df)))
    assert d.p_lenient == pytest.approx(float(stats.t.sf(diff.value / diff.se, diff.df)))
    # So the interval excludes 0 exactly when the one-sided test rejects at 2.5%.
    assert (diff.ci_low > 0) == (d.p_lenient < 0.025)


def test_direction_without_discordant_claims_is_p_one():
    t = np.zeros((15, 3, 3))
    t[:, 0, 0] = 2
    t[:5, 2, 2] = 1
    d = est.direction_estimate(t, None, 100)
    assert d.p_lenient == 1.0 and d.p_strict == 1.0 and d.lenient.value == 0.0


# --------------------------------------------------------------------------- grounding


def test_ppi_worked_example_by_hand():
    # N = 10 judged claims with f-bar 0.7 (var 7/30); n = 5 labeled with f - Y = (0, 1, 0, -1, 0):
    # theta = 0.7 - 0 = 0.7, se = sqrt((7/30)/10 + 0.5/5) = sqrt(0.1233...) = 0.35119
    f_all = [1, 1, 1, 1, 1, 1, 1, 0, 0, 0]
    y, f = [1, 0, 1, 1, 0], [1, 1, 1, 0, 0]
    theta, se = ppi_from_paper(f_all, y, f)
    assert theta == pytest.approx(0.7)
    assert se == pytest.approx(math.sqrt(7 / 300 + 0.1), rel=1e-12)
    assert se == pytest.approx(0.351188, abs=1e-6)
    g = est.grounding_ppi(f_all, np.arange(10), y, f, np.arange(5), weights=np.ones(5), lam=1.0)
    assert g.estimate.value == pytest.approx(theta, abs=1e-12)
    assert g.estimate.se == pytest.approx(se, rel=1e-12)
    assert g.judge_rate == pytest.approx(0.7)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ppi_plus_matches_the_from_scratch_version(seed):
    rng = np.random.default_rng(seed)
    big = 500
    y_all = (rng.random(big) < 0.75).astype(float)
    f_all = np.where(rng.random(big) < 0.85, y_all, 1 - y_all)
    lab = rng.choice(big, size=60, replace=False)
    g = est.grounding_ppi(f_all, np.arange(big), y_all[lab], f_all[lab], lab, weights=np.ones(60))
    theta, se, lam = ppi_plus_from_paper(f_all, y_all[lab], f_all[lab])
    assert g.lam == pytest.approx(lam, rel=1e-10)
    assert g.estimate.value == pytest.approx(theta, rel=1e-10)
    assert g.estimate.se == pytest.approx(se, rel=1e-10)


def test_two_phase_equals_the_ols_regression_estimator():
    # With a 0/1 verdict, sum_v P_N(f = v) R_v is the regression of Y on f evaluated at fbar_N.
    rng = np.random.default_rng(4)
    big = 800
    y_all = (rng.random(big) < 0.7).astype(float)
    f_all = np.where(rng.random(big) < 0.8, y_all, 1 - y_all)
    lab = rng.choice(big, size=90, replace=False)
    g = est.grounding_two_phase(f_all, np.arange(big), y_all[lab], f_all[lab], lab)
    fit = sm.OLS(y_all[lab], sm.add_constant(f_all[lab])).fit()
    assert g.estimate.value == pytest.approx(fit.params[0] + fit.params[1] * f_all.mean(), abs=1e-12)


def test_two_phase_matches_a_loop_with_strata_and_clusters():
    rng = np.random.default_rng(8)
    n_ans = 300
    sizes = rng.integers(1, 6, size=n_ans)
    answer = np.repeat(np.arange(n_ans), sizes)
    y_all = (rng.random(answer.size) < 0.75).astype(float)
    f_all = np.where(rng.random(answer.size) < 0.85, y_all, 1 - y_all)
    stratum_of = np.where(rng.random(n_ans) < 0.3, "fail", "pass")
    pop = {"fail": int((stratum_of == "fail").sum()), "pass": int((stratum_of == "pass").sum())}
    chosen = np.r_[
        rng.choice(np.flatnonzero(stratum_of == "fail"), 20, replace=False),
        rng.choice(np.flatnonzero(stratum_of == "pass"), 15, replace=False),
    ]
    lab = np.flatnonzero(np.isin(answer, chosen))
    g = est.grounding_two_phase(
        f_all, answer, y_all[lab], f_all[lab], answer[lab], stratum=stratum_of[answer[lab]], population=pop
    )
    # the loop: weight N_h / n_h per answer, ratio within each verdict class, then mix
    w = {"fail": pop["fail"] / 20, "pass": pop["pass"] / 15}
    value = 0.0
    for v in (0.0, 1.0):
        num = sum(w[stratum_of[answer[i]]] * y_all[i] for i in lab if f_all[i] == v)
        den = sum(w[stratum_of[answer[i]]] for i in lab if f_all[i] == v)
        value += float((f_all == v).mean()) * num / den
    assert g.estimate.value == pytest.approx(value, rel=1e-12)
    assert g.estimate.ci_low < value < g.estimate.ci_high


def test_grounding_census_is_the_truth_with_no_interval():
    f_all = np.array([1, 1, 0, 1, 0, 1.0])
    y = np.array([1, 0, 0, 1, 1, 1.0])
    g = est.corrected_grounding(f_all, np.arange(6), y, f_all, np.arange(6))
    assert g.estimate.value == pytest.approx(y.mean()) and g.estimate.ci_low is None


def test_grounding_without_labels_in_a_verdict_class_is_withheld():
    f_all = np.array([1, 1, 0, 0, 1.0])
    g = est.corrected_grounding(f_all, np.arange(5), [1, 0], [1, 1], [0, 1])
    assert g.estimate.value is None and "not SUPPORTED" in g.estimate.reason


def test_grounding_difference_adds_variances():
    rng = np.random.default_rng(5)
    gs = []
    for p in (0.7, 0.8):
        y_all = (rng.random(1000) < p).astype(float)
        f_all = np.where(rng.random(1000) < 0.85, y_all, 1 - y_all)
        lab = rng.choice(1000, 100, replace=False)
        gs.append(est.corrected_grounding(f_all, np.arange(1000), y_all[lab], f_all[lab], lab))
    d = est.grounding_difference(gs[0], gs[1])
    assert d.value == pytest.approx(gs[0].estimate.value - gs[1].estimate.value)
    assert d.se == pytest.approx(math.hypot(gs[0].estimate.se, gs[1].estimate.se))
    assert d.ci_high - d.ci_low == pytest.approx(2 * 1.959963984540054 * d.se)


def test_transfer_test_against_the_two_proportion_formula():
    # all claims the judge called SUPPORTED, one claim per answer, with-replacement weights:
    # X^2 = d^2 / (Ra(1-Ra)/(na-1) + Rb(1-Rb)/(nb-1))
    ya = np.array([1, 1, 1, 0, 1, 1, 0, 1, 1, 1.0])
    yb = np.array([1, 0, 0, 1, 0, 1, 0, 1.0])
    va = {"y": ya, "f": np.ones(10), "answer": np.arange(10), "n_run_answers": 100, "weights": np.ones(10)}
    vb = {"y": yb, "f": np.ones(8), "answer": np.arange(8), "n_run_answers": 100, "weights": np.ones(8)}
    t = est.transfer_test(va, vb)
    ra, rb = ya.mean(), yb.mean()
    stat = (ra - rb) ** 2 / (ra * (1 - ra) / 9 + rb * (1 - rb) / 7)
    assert t.df == 1 and t.statistic == pytest.approx(stat, rel=1e-12)
    assert t.differences[0] is None and t.differences[1] == pytest.approx(ra - rb)


def test_transfer_test_flags_different_error_rates_only_when_they_differ():
    def version(p_sup_given_f1: float, seed: int) -> dict:
        r = np.random.default_rng(seed)
        f = (r.random(400) < 0.8).astype(float)
        y = np.where(f == 1, r.random(400) < p_sup_given_f1, r.random(400) < 0.3).astype(float)
        return {"y": y, "f": f, "answer": np.arange(400), "n_run_answers": 4000}

    same = est.transfer_test(version(0.9, 1), version(0.9, 2))
    differ = est.transfer_test(version(0.9, 3), version(0.7, 4))
    assert same.df == 2 and same.p_value > 0.01
    assert differ.p_value < 1e-4


def test_run_strata_cross_status_and_category():
    labels = est.run_strata([True, False, True], ["x", None, "x"])
    assert labels.tolist() == ["all-SUPPORTED|x", "not|", "all-SUPPORTED|x"]
    assert est.stratum_counts(labels) == {"all-SUPPORTED|x": 2, "not|": 1}


# --------------------------------------------------------------------------- coverage (simulation)


def _population(seed: int, n_answers: int = 1500):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 7, size=n_answers)
    p = rng.beta(4.8, 1.2, size=n_answers)
    answer = np.repeat(np.arange(n_answers), sizes)
    y = (rng.random(answer.size) < p[answer]).astype(float)
    f = np.where(y == 1, rng.random(y.size) < 0.95, rng.random(y.size) < 0.35).astype(float)
    return answer, y, f


@pytest.mark.slow
def test_agreement_and_grounding_intervals_cover_under_failures_first():
    answer, y, f = _population(1)
    n_ans = answer.max() + 1
    agree = (y == f).astype(float)
    failing = np.bincount(answer, weights=1 - f, minlength=n_ans) > 0
    m = np.bincount(answer, minlength=n_ans).astype(float)
    a_sum = np.bincount(answer, weights=agree, minlength=n_ans)
    truth_agree, truth_ground = agree.mean(), y.mean()
    labels = est.run_strata(~failing)
    pop = est.stratum_counts(labels)
    rng = np.random.default_rng(2)
    hits_a = hits_g = 0
    reps = 400
    for _ in range(reps):
        rows = np.r_[
            rng.choice(np.flatnonzero(failing), 20, replace=False),
            rng.choice(np.flatnonzero(~failing), 10, replace=False),
        ]
        e = est.ratio_estimate(a_sum[rows], m[rows], labels[rows], pop)
        hits_a += e.ci_low <= truth_agree <= e.ci_high
        lab = np.flatnonzero(np.isin(answer, rows))
        g = est.corrected_grounding(
            f, answer, y[lab], f[lab], answer[lab], stratum=labels[answer[lab]], population=pop
        ).estimate
        hits_g += g.ci_low <= truth_ground <= g.ci_high
    # 400 replicates: a 95% interval covers within about +-2.2 points (1 s.e. ~1.1)
    assert 0.91 <= hits_a / reps <= 0.99
    assert 0.91 <= hits_g / reps <= 0.99


def test_singleton_census_stratum_is_pooled_without_the_fpc():
    # Stratum "one" holds the run's only answer of its category, labeled; without the finite-population
    # correction its variance is unknown, so it is pooled with its neighbour (as documented), not left
    # to withhold every interval.
    y = [3, 2, 4, 1, 2, 3]
    m = [4, 3, 4, 2, 3, 4]
    strata = ["a", "a", "a", "b", "b", "one"]
    pop = {"a": 40, "b": 30, "one": 1}
    got = est.ratio_estimate(y, m, strata, pop, fpc=False)
    assert got.ci_low is not None and got.reason is None
    assert "collapsed one -> " in got.method
    # The collapsed variance by hand: "one" (rate 1/1) joins the stratum whose rate n/N is closest
    # ("a", 3/40, over "b", 2/30).
    w = np.array([40 / 3] * 3 + [15.0] * 2 + [1.0])
    yy, mm = np.array(y, float), np.array(m, float)
    r = (w * yy).sum() / (w * mm).sum()
    z = w * (yy - r * mm)
    var = sum(len(g) / (len(g) - 1) * ((z[g] - z[g].mean()) ** 2).sum() for g in ([0, 1, 2, 5], [3, 4]))
    assert got.se == pytest.approx(math.sqrt(var) / (w * mm).sum())


def test_singleton_category_stratum_keeps_every_design_interval(fresh_db, tmp_path):
    """A 200-answer run where one category has a single answer, and a 30-answer stratified cycle."""
    import json

    from calibration import cycles, report, store
    from calibration.importing import import_answers

    rng = np.random.default_rng(1)
    src = tmp_path / "run.jsonl"
    verdicts = ("SUPPORTED", "CONTRADICTED", "UNSUPPORTED")
    with src.open("w", encoding="utf-8") as fh:
        for a in range(200):
            category = "rare" if a == 0 else ("numeric", "refusal")[a % 2]
            fh.write(
                json.dumps(
                    {
                        "id": f"q{a:03d}",
                        "question": "q",
                        "answer": "a",
                        "category": category,
                        "judge_model": "m",
                        "judge_prompt_version": "v1",
                        "chunks": [{"id": "S1", "text": "t"}],
                        "claims": [
                            {
                                "id": f"c{i}",
                                "claim": "x",
                                "verdict": verdicts[int(rng.choice(3, p=[0.7, 0.1, 0.2]))],
                            }
                            for i in range(1, 4)
                        ],
                    }
                )
                + "\n"
            )
    import_answers(fresh_db, src)
    cycle = cycles.create_cycle(fresh_db, name="s", judge_run="m@v1", size=30, seed=4, strategy="stratified")
    assert "q000" in cycle.answers  # the stratified draw takes the rare category's one answer
    for a in cycle.answers:
        for i in range(1, 4):
            pk = store.claim_pk(fresh_db, a, f"c{i}")
            verdict = verdicts[int(rng.choice(3, p=[0.8, 0.05, 0.15]))]
            store.record_label(fresh_db, claim=pk, reviewer="ann", kind="blind", verdict=verdict)
    run = store.find_judge_run(fresh_db, "m@v1")
    r = report.scope_report(fresh_db, run, bootstrap=0).report
    for e in (r.estimates.agreement, r.estimates.direction.difference):
        assert e.ci_low is not None, e.reason
    assert r.pipeline["supported_rate"]["ci_low"] is not None
