"""Invariants of the agreement statistics over arbitrary tables (hypothesis)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa

from calibration.agreement import (
    LABELS,
    bowker,
    cohens_kappa,
    gwet_ac1,
    percent_agreement,
    stuart_maxwell,
)
from calibration.estimation import kappa_many
from calibration.report import agreement_report

tables = arrays(np.int64, (3, 3), elements=st.integers(0, 30))
EPS = 1e-9


@given(tables)
def test_kappa_at_most_kappa_max_and_within_bounds(t):
    k = cohens_kappa(t)
    if k.value is None:
        return
    assert -1 - EPS <= k.value <= k.kappa_max + EPS
    assert k.kappa_max <= 1 + EPS


@given(tables)
def test_kappa_symmetric_under_transpose(t):
    a, b = cohens_kappa(t), cohens_kappa(t.T)
    if a.value is None:
        assert b.value is None
        return
    assert math.isclose(a.value, b.value, abs_tol=1e-12)
    assert math.isclose(a.se, b.se, abs_tol=1e-12)
    assert math.isclose(a.kappa_max, b.kappa_max, abs_tol=1e-12)


@given(tables)
def test_intervals_contain_the_estimate(t):
    a = percent_agreement(t)
    if a.value is not None:
        assert a.ci_low - EPS <= a.value <= a.ci_high + EPS
        assert 0 <= a.ci_low <= a.ci_high <= 1
    k = cohens_kappa(t)
    if k.ci_low is not None:
        assert k.ci_low < k.value < k.ci_high
        assert k.se > 0
    else:
        # No interval means the SE really is zero or undefined, never a silent drop.
        assert k.se in (None, 0.0)


@given(tables)
def test_kappa_agrees_with_statsmodels_where_defined(t):
    k = cohens_kappa(t)
    if k.value is None or k.se == 0:
        return
    ref = sm_cohens_kappa(t)
    assert math.isclose(k.value, ref.kappa, abs_tol=1e-9)
    assert math.isclose(k.se, ref.std_kappa, rel_tol=1e-7, abs_tol=1e-9)


# sklearn agrees on the degenerate cases too: 0 when one rater uses one class, undefined (NaN,
# None here) when both use the same single class.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=1, max_size=60))
def test_kappa_agrees_with_sklearn_on_label_lists(pairs):
    h = [LABELS[a] for a, _ in pairs]
    j = [LABELS[b] for _, b in pairs]
    ref = cohen_kappa_score(h, j, labels=list(LABELS), replace_undefined_by=np.nan)
    table = np.zeros((3, 3), dtype=int)
    for a, b in pairs:
        table[a, b] += 1
    ours = cohens_kappa(table).value
    if math.isnan(ref):
        assert ours is None
    else:
        assert math.isclose(ours, ref, abs_tol=1e-9)


@given(tables)
def test_vectorised_kappa_equals_scalar(t):
    scalar = cohens_kappa(t).value
    many = kappa_many(t[None])[0]
    assert (scalar is None and math.isnan(many)) or math.isclose(scalar, many, abs_tol=1e-12)


@given(tables)
def test_symmetry_tests_invariant_under_transpose_and_ac1_bounded(t):
    for test in (stuart_maxwell, bowker):
        a, b = test(t), test(t.T)
        assert (a is None) == (b is None)
        if a is not None:
            assert math.isclose(a.statistic, b.statistic, rel_tol=1e-7, abs_tol=1e-9)
            assert a.df == b.df
            assert 0 <= a.p_value <= 1
    ac1 = gwet_ac1(t)
    if t.sum():
        assert -1 - EPS <= ac1 <= 1 + EPS


claims = st.lists(
    st.tuples(st.integers(0, 6), st.integers(0, len(LABELS) - 1), st.integers(0, len(LABELS) - 1)),
    max_size=40,
)


@pytest.mark.slow  # 60 whole reports: make test runs it, make test-fast leaves it out
@settings(max_examples=60, deadline=None)
@given(claims, st.integers(0, 2**32 - 1))
def test_report_never_crashes_and_serialises(rows, seed):
    keys = [f"k{i}" for i in range(len(rows))]
    r = agreement_report(
        [h for _, h, _ in rows],
        [j for _, _, j in rows],
        [a for a, _, _ in rows],
        keys,
        bootstrap=50,
        seed=seed,
    )
    d = r.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["n_claims"] == len(rows)
    assert sum(map(sum, d["confusion"]["matrix"])) == len(rows)
    assert d["flag"]["status"] in {"ok", "revise", "inconclusive"}
    kb = d["kappa_bootstrap"]
    if kb["ci_low"] is not None:
        assert -1 - EPS <= kb["ci_low"] <= kb["ci_high"] <= 1 + EPS
    for reason in d["flag"]["reasons"]:
        assert set(reason["claim_ids"]) <= set(keys)
