"""Several reviewers per claim: the per-reviewer basis, the alternative annotator test's balanced
alignment and margin, and the per-reviewer paired comparison, each against a computation written
out from its definition."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from calibration import final_label
from calibration.decisions import alt_test, balancing_weights, human_ceiling, reviewer_comparisons

LABEL = {"SUPPORTED": 0, "CONTRADICTED": 1, "UNSUPPORTED": 2}


def _columns(labels: dict[str, dict[int, str]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = [(i, r, LABEL[v]) for r, (_, lab) in enumerate(sorted(labels.items())) for i, v in lab.items()]
    a = np.array(rows)
    return a[:, 0], a[:, 1], a[:, 2]


def _balanced_from_scratch(
    labels: dict[str, dict[int, str]], judge: dict[int, str], eps: float
) -> list[float]:
    """App. C.1 of Calderon, Reichart & Dror (2025), instance by instance: weight pi_y = 1 / (L p_y) by
    the others' majority class (ties split), weighted mean of d, t on the Kish effective size."""
    pvals = []
    for j, mine in sorted(labels.items()):
        items = []
        for i, v in mine.items():
            others = [lab[i] for h, lab in labels.items() if h != j and i in lab]
            if not others:
                continue
            s_h = sum(o == v for o in others) / len(others)
            s_f = sum(o == judge[i] for o in others) / len(others)
            top = max(others.count(c) for c in LABEL)
            tied = [c for c in LABEL if others.count(c) == top]
            items.append((float(s_h >= s_f) - float(s_f >= s_h), {c: 1 / len(tied) for c in tied}))
        share = {c: sum(m.get(c, 0.0) for _, m in items) / len(items) for c in LABEL}
        present = [c for c in LABEL if share[c] > 0]
        w = np.array([sum(f / (len(present) * share[c]) for c, f in m.items()) for _, m in items])
        d = np.array([x for x, _ in items])
        mean = (w * d).sum() / w.sum()
        n_w = w.sum() ** 2 / (w**2).sum()
        var = (w * (d - mean) ** 2).sum() / w.sum() * n_w / (n_w - 1)
        pvals.append(float(stats.t.cdf((mean - eps) / math.sqrt(var / n_w), n_w - 1)))
    return pvals


def _reviewers(
    n: int,
    truth: np.ndarray,
    err: float,
    rng: np.random.Generator,
    names: tuple[str, ...] = ("r0", "r1", "r2"),
) -> dict[str, dict[int, str]]:
    inv = {v: k for k, v in LABEL.items()}
    out = {}
    for name in names:
        lab = np.where(rng.uniform(size=n) < err, rng.integers(0, 3, size=n), truth)
        out[name] = {i: inv[int(x)] for i, x in enumerate(lab) if rng.uniform() < 0.9}
    return out


def test_balanced_alt_test_agrees_with_scratch() -> None:
    rng = np.random.default_rng(11)
    n = 150
    truth = rng.choice(3, size=n, p=[0.8, 0.05, 0.15])
    labels = _reviewers(n, truth, 0.15, rng)
    jd = np.where(rng.uniform(size=n) < 0.2, rng.integers(0, 3, size=n), truth)
    inv = {v: k for k, v in LABEL.items()}
    c, r, v = _columns(labels)
    out = alt_test(c, r, v, jd, epsilon=0.1)
    assert out.alignment == "balanced accuracy" and out.epsilon == 0.1
    expected = _balanced_from_scratch(labels, {i: inv[int(x)] for i, x in enumerate(jd)}, 0.1)
    np.testing.assert_allclose(out.p_values, expected, atol=1e-10)
    adj = multipletests(expected, alpha=0.05, method="fdr_by")[1]
    assert out.winning_rate == pytest.approx(float((adj <= 0.05).mean()))


def test_balancing_weights_give_each_class_the_same_weight() -> None:
    # Four instances with majority S, one with U, one tied S/U: p_S = 4.5/6, p_U = 1.5/6.
    majority = np.array([[1, 0, 0]] * 4 + [[0, 0, 1], [0.5, 0, 0.5]])
    w = balancing_weights(majority)
    assert (w[:4] == pytest.approx(6 / (2 * 4.5))) and w[4] == pytest.approx(6 / (2 * 1.5))
    # A tie takes the mean of its classes' weights; each class then holds n / L = 3 of the total.
    assert w[5] == pytest.approx(0.5 * 6 / 9 + 0.5 * 6 / 3)
    assert majority.sum(axis=0)[[0, 2]] * w[[0, 4]] == pytest.approx([3.0, 3.0])


def test_a_judge_that_always_says_supported_passes_on_accuracy_but_not_balanced() -> None:
    # 90% SUPPORTED, reviewers who agree well: plain accuracy lets the constant judge tie on nine claims
    # in ten and pass; weighted by the majority class, its misses on the hallucinations count.
    rng = np.random.default_rng(5)
    n = 300
    truth = np.where(rng.uniform(size=n) < 0.9, 0, 2)
    labels = _reviewers(n, truth, 0.08, rng)
    c, r, v = _columns(labels)
    jd = np.zeros(n, dtype=np.int64)
    assert alt_test(c, r, v, jd, epsilon=0.15, alignment="accuracy").passes
    assert not alt_test(c, r, v, jd, epsilon=0.15).passes


def test_epsilon_is_the_leads_margin() -> None:
    rng = np.random.default_rng(8)
    n = 300
    truth = rng.choice(3, size=n, p=[0.7, 0.1, 0.2])
    labels = _reviewers(n, truth, 0.1, rng)
    jd = np.where(rng.uniform(size=n) < 0.18, rng.integers(0, 3, size=n), truth)
    c, r, v = _columns(labels)
    wide, tight = alt_test(c, r, v, jd, epsilon=0.5), alt_test(c, r, v, jd, epsilon=0.0)
    assert wide.passes and not tight.passes
    assert (wide.epsilon, tight.epsilon) == (0.5, 0.0)


def _comparison_from_scratch(
    labels: dict[str, dict[int, str]], judge: dict[int, str], answer: dict[int, int]
) -> dict[str, tuple[float, float, float]]:
    """Mean S_f, mean S_j and the one-sided clustered p of mean(S_j - S_f) > 0, answer by answer."""
    out = {}
    for j, mine in sorted(labels.items()):
        per: dict[int, list[float]] = {}
        sf, sj = [], []
        for i, v in mine.items():
            others = [lab[i] for h, lab in labels.items() if h != j and i in lab]
            if not others:
                continue
            a, b = sum(o == judge[i] for o in others) / len(others), sum(o == v for o in others) / len(others)
            sf.append(a)
            sj.append(b)
            per.setdefault(answer[i], []).append(b - a)
        n = len(sf)
        mean = (sum(sj) - sum(sf)) / n
        groups = list(per.values())
        k = len(groups)
        var = k / (k - 1) * sum((sum(g) - mean * len(g)) ** 2 for g in groups) / n**2
        out[j] = (float(np.mean(sf)), float(np.mean(sj)), float(stats.t.sf(mean / math.sqrt(var), k - 1)))
    return out


def test_reviewer_comparisons_agree_with_scratch_and_count_the_reviewers_above_the_judge() -> None:
    rng = np.random.default_rng(3)
    n = 240
    answer = rng.integers(0, 80, size=n)
    truth = rng.choice(3, size=n, p=[0.7, 0.1, 0.2])
    labels = _reviewers(n, truth, 0.1, rng, ("a", "b", "c", "d"))
    jd = np.where(rng.uniform(size=n) < 0.3, rng.integers(0, 3, size=n), truth)
    inv = {v: k for k, v in LABEL.items()}
    c, r, v = _columns(labels)
    got = reviewer_comparisons(c, r, v, jd, ["a", "b", "c", "d"], cluster=answer)
    want = _comparison_from_scratch(
        labels, {i: inv[int(x)] for i, x in enumerate(jd)}, {i: int(a) for i, a in enumerate(answer)}
    )
    assert [g.reviewer for g in got] == ["a", "b", "c", "d"]
    for g in got:
        jf, jr, p = want[g.reviewer]
        assert (g.judge, g.reviewer_value, g.p_value) == pytest.approx((jf, jr, p), abs=1e-12)
    hc = human_ceiling(c, r, v, jd, cluster=answer, names=["a", "b", "c", "d"])
    assert hc is not None
    assert hc.below_reviewers == sum(jf < jr for jf, jr, _ in want.values()) == 4
    d = hc.to_dict()["alt_test"]
    assert d["below_reviewers"] == 4 and d["epsilon"] == 0.15 and d["alignment"] == "balanced accuracy"
    assert {row["reviewer"] for row in d["per_reviewer"]} == {"a", "b", "c", "d"}
    assert set(d["per_reviewer"][0]) >= {"reviewer", "judge", "reviewer_value", "p_value"}
    assert hc.comparison_sentence().startswith("below 4 of 4 reviewers, significantly for ")


@pytest.mark.parametrize(
    ("blind", "final", "adjudicated", "expected"),
    [
        # Blind verdicts count, not the final ones a reviewer may have changed after the reveal.
        ([0, 2, 2], [0, 0, 2], [-1, -1, -1], [(0, 0, 0), (0, 1, 2), (1, 0, 2)]),
        # No blind verdict recorded: the final one; no verdict at all: no row.
        ([-1, -1, 2], [1, -1, 2], [-1, -1, -1], [(0, 0, 1), (1, 0, 2)]),
        # An adjudicated claim: the lead's verdict on every row; adjudicated without a label: one row.
        ([0, 2, 2], [0, 2, 2], [1, 0, 0], [(0, 0, 1), (0, 1, 1), (1, 0, 0), (2, -1, 0)]),
    ],
)
def test_per_reviewer_rows(
    blind: list[int], final: list[int], adjudicated: list[int], expected: list[tuple[int, int, int]]
) -> None:
    # Labels: claim 0 by reviewers 0 and 1, claim 1 by reviewer 0; nobody labeled claim 2.
    claim, reviewer = np.array([0, 0, 1]), np.array([0, 1, 0])
    c, r, v = final_label.per_reviewer(
        3, claim, reviewer, np.array(blind), np.array(final), np.array(adjudicated)
    )
    assert list(zip(c.tolist(), r.tolist(), v.tolist(), strict=True)) == expected
    assert final_label.several_reviewers(claim, np.array(blind)) == (blind[1] >= 0 or final[1] >= 0)
