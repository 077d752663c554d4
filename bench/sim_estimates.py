"""Coverage and bias of the design-based estimates in calibration.estimation, by simulation.

    python bench/sim_estimates.py [--reps 1000] [--bias-reps 1000] [--workers 2]

A simulated judge run: 3,000 answers in three categories (shares 50/30/20), 1-6 claims each
(about 10,500 claims).  Each answer has its own chance that a claim is SUPPORTED for humans
(a Beta random effect around a category mean), so claims of one answer are correlated; human
non-SUPPORTED claims split 30/70 CONTRADICTED/UNSUPPORTED.  The judge is lenient: it calls
SUPPORTED 95% of the human-SUPPORTED claims and 35% of the others (the rest it mostly gets right).
Two runs: "typical" (about 80% of claims SUPPORTED for humans) and "imbalanced" (about 90%).

Samples are drawn with the tool's own designs (calibration.sampling), in answers: n claims
means round(n / 3.5) answers.  The truth is the figure computed on every claim of the run.

1. Coverage of 95% intervals (random and failures-first designs, n = 40 / 100 / 150 claims):
   agreement (stratified ratio), kappa (linearised, withheld below MIN_MINORITY_CLAIMS; the
   withheld share is printed), corrected grounding (two-phase, and PPI++ beside it), with the
   judge's own rate for contrast.  A table of kappa coverage by withhold threshold shows why
   the threshold is what it is.
2. Bias of run-level agreement, kappa, lenient and strict shares (n = 150 claims) under random,
   stratified (by category), failures-first, and two cycles (a random one, then a
   failures-first one that skips answers already labeled), post-stratified on the design
   strata; the raw (unweighted) figure beside it.

Fixed seeds; prints tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibration import estimation as est  # noqa: E402
from calibration import sampling  # noqa: E402

CLAIMS_PER_ANSWER = 3.5
SIZES = (40, 100, 150)
CATEGORIES = ("finance", "health", "legal")


class Run:
    """One simulated judge run, with per-answer tables and claim columns."""

    def __init__(self, base: float, seed: int, n_answers: int = 3000) -> None:
        rng = np.random.default_rng(seed)
        self.ids = np.array([f"a{i:05d}" for i in range(n_answers)])
        cat = rng.choice(len(CATEGORIES), size=n_answers, p=[0.5, 0.3, 0.2])
        self.category = np.array(CATEGORIES)[cat]
        shift = np.array([0.0, -0.06, 0.04])[cat]
        mean = np.clip(base + shift, 0.05, 0.97)
        conc = 6.0
        p_sup = rng.beta(mean * conc, (1 - mean) * conc)
        sizes = rng.integers(1, 7, size=n_answers)
        answer = np.repeat(np.arange(n_answers), sizes)
        n = answer.size
        human_sup = rng.random(n) < p_sup[answer]
        human = np.where(human_sup, 0, np.where(rng.random(n) < 0.3, 1, 2))
        judge = human.copy()
        u = rng.random(n)
        judge[human_sup & (u >= 0.95)] = 2  # strict slips
        lenient = ~human_sup & (u < 0.35)
        judge[lenient] = 0
        other = ~human_sup & ~lenient & (rng.random(n) < 0.15)
        judge[other] = 3 - human[other]  # CONTRADICTED <-> UNSUPPORTED
        self.answer, self.human, self.judge = answer, human, judge
        k = 3
        self.tables = (
            np.bincount(answer * 9 + human * k + judge, minlength=n_answers * 9)
            .reshape(n_answers, 3, 3)
            .astype(float)
        )
        self.failing = self.tables[:, :, 1:].sum(axis=(1, 2)) > 0
        self.pool = [
            sampling.PoolAnswer(a, c, bool(f))
            for a, c, f in zip(self.ids, self.category, self.failing, strict=True)
        ]
        self.index = {a: i for i, a in enumerate(self.ids)}
        whole = self.tables.sum(axis=0)
        c = est.answer_counts(self.tables)
        self.truth = {
            "agreement": float(np.trace(whole) / whole.sum()),
            "kappa": float(est.kappa_many(whole)),
            "lenient": float(c["lenient"].sum() / whole.sum()),
            "strict": float(c["strict"].sum() / whole.sum()),
            "grounding": float((human == 0).mean()),
        }
        self.f_all = (judge == 0).astype(float)
        self.strata_status = est.run_strata(~self.failing)
        self.strata_cat = est.run_strata(~self.failing, self.category)
        # claim positions of each answer, for gathering a sample's claims
        self.start = np.concatenate([[0], np.cumsum(sizes)])

    def claims_of(self, rows: np.ndarray) -> np.ndarray:
        return np.concatenate([np.arange(self.start[r], self.start[r + 1]) for r in rows])


RUNS: dict[str, Run] = {}


def _run(name: str) -> Run:
    if name not in RUNS:
        base = {"typical": 0.80, "imbalanced": 0.90}[name]
        RUNS[name] = Run(base, seed={"typical": 11, "imbalanced": 12}[name])
    return RUNS[name]


def _rows(run: Run, ids: tuple[str, ...]) -> np.ndarray:
    return np.array([run.index[a] for a in ids], dtype=np.int64)


def _strata_for(run: Run, rows: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, dict[Any, int]]:
    return labels[rows], est.stratum_counts(labels)


def coverage_cell(args: tuple[str, str, int, int, int]) -> dict[str, Any]:
    name, design, n_claims, reps, seed = args
    run = _run(name)
    n_ans = round(n_claims / CLAIMS_PER_ANSWER)
    truth = run.truth
    hits: dict[str, list[float]] = {k: [] for k in ("agree", "kappa", "ground", "ppi", "judge")}
    kappa_rows: list[tuple[int, float, bool | None, bool | None]] = []
    widths: dict[str, list[float]] = {"ground": [], "ppi": [], "labels_only": []}
    withheld = {"agree": 0, "kappa": 0, "ground": 0}
    claims_seen = []
    for r in range(reps):
        s = sampling.draw(design, run.pool, n_ans, seed * 100_000 + r)
        rows = _rows(run, s.answer_ids)
        labels = run.strata_status if design != "stratified" else run.strata_cat
        st, pop = _strata_for(run, rows, labels)
        t = run.tables[rows]
        claims_seen.append(t.sum())
        a = est.agreement_estimate(t, st, pop)
        if a.ci_low is None:
            withheld["agree"] += 1
        else:
            hits["agree"].append(a.ci_low <= truth["agreement"] <= a.ci_high)
        k_def = est.kappa_estimate(t, st, pop)
        if k_def.ci_low is None:
            withheld["kappa"] += 1
        else:
            hits["kappa"].append(k_def.ci_low <= truth["kappa"] <= k_def.ci_high)
        k_lin = est.kappa_estimate(t, st, pop, min_minority=0, min_answers=0)
        k_boot = est.kappa_estimate(
            t, st, pop, min_minority=0, min_answers=0, interval="bootstrap", resamples=500, seed=r
        )
        cov_lin = None if k_lin.ci_low is None else bool(k_lin.ci_low <= truth["kappa"] <= k_lin.ci_high)
        cov_boot = None if k_boot.ci_low is None else bool(k_boot.ci_low <= truth["kappa"] <= k_boot.ci_high)
        kappa_rows.append((est.minority_claims(t), 0.0, cov_lin, cov_boot))
        cl = run.claims_of(rows)
        y = (run.human[cl] == 0).astype(float)
        f = run.f_all[cl]
        ans = run.answer[cl]
        g = est.corrected_grounding(run.f_all, run.answer, y, f, ans, stratum=labels[ans], population=pop)
        p = est.corrected_grounding(
            run.f_all, run.answer, y, f, ans, method="ppi++", weights=_claim_weights(s, rows, ans)
        )
        lab = est.ratio_estimate(*_ground_counts(run, rows), labels[rows], pop)
        if g.estimate.ci_low is None:
            withheld["ground"] += 1
        else:
            e = g.estimate
            hits["ground"].append(e.ci_low <= truth["grounding"] <= e.ci_high)
            widths["ground"].append(e.ci_high - e.ci_low)
        if p.estimate.ci_low is not None:
            hits["ppi"].append(p.estimate.ci_low <= truth["grounding"] <= p.estimate.ci_high)
            widths["ppi"].append(p.estimate.ci_high - p.estimate.ci_low)
        if lab.ci_low is not None:
            widths["labels_only"].append(lab.ci_high - lab.ci_low)
        hits["judge"].append(abs(float(run.f_all.mean()) - truth["grounding"]) < 1e-12)
    return {
        "run": name,
        "design": design,
        "n": n_claims,
        "n_answers": n_ans,
        "reps": reps,
        "claims": float(np.mean(claims_seen)),
        "hits": hits,
        "kappa": kappa_rows,
        "widths": widths,
        "withheld": withheld,
    }


def _claim_weights(s: sampling.Sample, rows: np.ndarray, ans: np.ndarray) -> np.ndarray:
    """1/pi of each labeled claim's answer."""
    pi = dict(zip(rows.tolist(), s.inclusion_probs, strict=True))
    return np.array([1.0 / pi[int(a)] for a in ans])


def _ground_counts(run: Run, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Human-SUPPORTED claims and claims per labeled answer: the labels-only estimate."""
    t = run.tables[rows]
    return t[:, 0, :].sum(axis=1), t.sum(axis=(1, 2))


def bias_cell(args: tuple[str, str, int, int, int]) -> dict[str, Any]:
    name, design, n_claims, reps, seed = args
    run = _run(name)
    n_ans = round(n_claims / CLAIMS_PER_ANSWER)
    figs = ("agreement", "kappa", "lenient", "strict")
    est_vals: dict[str, list[float]] = {k: [] for k in figs}
    raw_vals: dict[str, list[float]] = {k: [] for k in figs}
    for r in range(reps):
        sd = seed * 100_000 + r
        if design == "two cycles":
            first = sampling.random_sample(run.pool, n_ans // 2, sd)
            taken = set(first.answer_ids)
            rest = [a for a in run.pool if a.answer_id not in taken]
            second = sampling.failures_first_sample(rest, n_ans - n_ans // 2, sd + 1)
            ids = first.answer_ids + second.answer_ids
            labels = run.strata_status
        else:
            ids = sampling.draw(design, run.pool, n_ans, sd).answer_ids
            labels = run.strata_cat if design == "stratified" else run.strata_status
        rows = _rows(run, ids)
        st, pop = labels[rows], est.stratum_counts(labels)
        t = run.tables[rows]
        a = est.agreement_estimate(t, st, pop)
        k = est.kappa_estimate(t, st, pop)
        d = est.direction_estimate(t, st, pop)
        for key, e in (("agreement", a), ("kappa", k), ("lenient", d.lenient), ("strict", d.strict)):
            est_vals[key].append(np.nan if e.value is None else e.value)
        whole = t.sum(axis=0)
        c = est.answer_counts(t)
        raw_vals["agreement"].append(np.trace(whole) / whole.sum())
        raw_vals["kappa"].append(float(est.kappa_many(whole)))
        raw_vals["lenient"].append(c["lenient"].sum() / whole.sum())
        raw_vals["strict"].append(c["strict"].sum() / whole.sum())
    out = {}
    for key in figs:
        v = np.asarray(est_vals[key])
        raw = np.asarray(raw_vals[key])
        mc_se = float(np.nanstd(v) / np.sqrt(np.isfinite(v).sum()))
        out[key] = (float(np.nanmean(v) - run.truth[key]), mc_se, float(np.nanmean(raw) - run.truth[key]))
    return {"run": name, "design": design, "n": n_claims, "reps": reps, "bias": out}


def _pct(x: list[float] | list[bool]) -> str:
    return "   n/a" if not x else f"{100 * float(np.mean(x)):5.1f}%"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--bias-reps", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    t0 = time.perf_counter()
    cov_jobs = [
        (name, design, n, a.reps, 1 + i)
        for i, (name, design, n) in enumerate(
            (nm, d, n)
            for nm in ("typical", "imbalanced")
            for d in ("random", "failures-first")
            for n in SIZES
        )
    ]
    bias_jobs = [
        ("typical", d, 150, a.bias_reps, 50 + i)
        for i, d in enumerate(("random", "stratified", "failures-first", "two cycles"))
    ]
    with ProcessPoolExecutor(a.workers) as pool:
        cov_f = [pool.submit(coverage_cell, j) for j in cov_jobs]
        bias_f = [pool.submit(bias_cell, j) for j in bias_jobs]
        cov = [f.result() for f in cov_f]
        bias = [f.result() for f in bias_f]
    for name in ("typical", "imbalanced"):
        tr = _run(name).truth
        print(
            f"run {name}: "
            + ", ".join(f"{k} {v:.4f}" for k, v in tr.items())
            + f"; judge's own SUPPORTED rate {_run(name).f_all.mean():.4f}"
        )
    print()
    print(
        f"Coverage of 95% intervals ({a.reps} samples per row; kappa: linearised t interval, "
        f"withheld below {est.MIN_KAPPA_ANSWERS} answers or {est.MIN_MINORITY_CLAIMS} minority claims,"
        " k-wh = withheld share)"
    )
    print(
        f"{'run':<11}{'design':<15}{'n':>4}{'ans':>5}{'claims':>7}{'agree':>8}{'kappa':>8}{'k-wh':>7}"
        f"{'ground':>8}{'ppi++':>8}{'w-grd':>7}{'w-ppi':>7}{'w-lab':>7}{'judge':>7}"
    )
    for c in cov:
        shown = c["hits"]["kappa"]
        wh = c["withheld"]["kappa"] / c["reps"]
        w = c["widths"]
        print(
            f"{c['run']:<11}{c['design']:<15}{c['n']:>4}{c['n_answers']:>5}{c['claims']:>7.1f}"
            f"{_pct(c['hits']['agree']):>8}{_pct(shown):>8}{100 * wh:6.1f}%"
            f"{_pct(c['hits']['ground']):>8}{_pct(c['hits']['ppi']):>8}"
            f"{np.mean(w['ground']):7.3f}{np.mean(w['ppi']):7.3f}{np.mean(w['labels_only']):7.3f}"
            f"{_pct(c['hits']['judge']):>7}"
        )
    print(
        "  (w-grd / w-ppi / w-lab: mean interval width of two-phase, PPI++ and human labels alone;"
        " judge: share of samples where the judge's own rate, a point, hits the truth)"
    )
    print()
    print(
        "Kappa coverage by minority-claims threshold, no answer minimum "
        "(linearised t / stratified rescaling bootstrap; withheld share)"
    )
    thresholds = (0, 3, 5, 8)
    print(f"{'run':<11}{'design':<15}{'n':>4}" + "".join(f"{'k>=' + str(k):>22}" for k in thresholds))
    for c in cov:
        cells = []
        for k in thresholds:
            keep = [row for row in c["kappa"] if row[0] >= k]
            lin = [row[2] for row in keep if row[2] is not None]
            boot = [row[3] for row in keep if row[3] is not None]
            cells.append(f"{_pct(lin)}/{_pct(boot)} {100 * (1 - len(keep) / len(c['kappa'])):4.0f}%")
        print(f"{c['run']:<11}{c['design']:<15}{c['n']:>4}" + "".join(f"{x:>22}" for x in cells))
    print()
    print(
        f"Bias of run-level estimates, n = 150 claims ({a.bias_reps} samples per row): "
        "estimate - truth (Monte Carlo s.e.) [raw unweighted - truth]"
    )
    print(f"{'design':<16}" + "".join(f"{k:>28}" for k in ("agreement", "kappa", "lenient", "strict")))
    for b in bias:
        cells = [f"{m:+.4f} ({s:.4f}) [{r:+.4f}]" for m, s, r in b["bias"].values()]
        print(f"{b['design']:<16}" + "".join(f"{x:>28}" for x in cells))
    print()
    print(f"elapsed {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    from figures import recorded  # bench/ is the script's folder

    with recorded(__file__):
        main()
