"""Several reviewers per claim: does the tool conclude what the per-reviewer truth says?

    python bench/sim_reviewers.py [--reps 200] [--seed 5]

Synthetic runs of 600 answers (1-8 claims each, 15% of claims hallucinated, an answer effect on
difficulty); 300 of them labeled, each answer by 2-3 of 13 reviewers (every reviewer of an answer
labels all its claims, blind).  Reviewers miss a hallucination with probability 0.12 on an easy claim
and 0.45 on a hard one (a third of the hallucinations are hard), and call a supported claim a
hallucination with probability 0.03.  The judge misses hallucinations more often than a reviewer
(0.55 easy, 0.90 hard: disputes are informative, a claim is disputed more often where the judge said
SUPPORTED and a reviewer found a hallucination) and rejects supported claims with probability 0.06: it
agrees with a reviewer about 7 points less often than reviewers agree with each other.

Per run, with the project's functions on the claims' columns (the same calls `report.scope_report`
makes): the alternative annotator test (default epsilon and alignment), the direction rule on the
per-reviewer basis, the corrected grounding score from soft labels (two-phase, no finite-population
factor) against the run's per-reviewer truth (the mean over its claims of the chance that a random
reviewer calls the claim SUPPORTED), and "how many more" claims at an early look (60 answers) against
the stopping time the rule then realises on the run's further answers.  Prints a table; asserts
nothing.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibration import decisions, estimation, final_label, report  # noqa: E402

N_RUN, N_LABELED, N_REVIEWERS = 600, 300, 13
P_HALLUCINATED, P_HARD = 0.15, 1 / 3
REVIEWER_MISS = (0.12, 0.45)  # easy, hard hallucination
REVIEWER_FALSE = 0.03
JUDGE_MISS = (0.55, 0.90)
JUDGE_FALSE = 0.06
S, U = 0, 2  # SUPPORTED, UNSUPPORTED in LABELS order


def reviewer_says_supported(hallucinated: np.ndarray, hard: np.ndarray) -> np.ndarray:
    """P(a random reviewer calls the claim SUPPORTED): the per-reviewer truth of one claim."""
    miss = np.where(hard, REVIEWER_MISS[1], REVIEWER_MISS[0])
    return np.where(hallucinated, miss, 1 - REVIEWER_FALSE)


def make_run(rng: np.random.Generator, n_answers: int) -> dict[str, np.ndarray]:
    sizes = rng.integers(1, 9, size=n_answers)
    answer = np.repeat(np.arange(n_answers), sizes)
    # An answer effect: some answers hallucinate more, and their hallucinations are harder.
    risk = rng.beta(1.5, 1.5 * (1 - P_HALLUCINATED) / P_HALLUCINATED, size=n_answers)[answer]
    hallucinated = rng.uniform(size=answer.size) < risk
    hard = hallucinated & (rng.uniform(size=answer.size) < P_HARD)
    miss = np.where(hard, JUDGE_MISS[1], JUDGE_MISS[0])
    judge_s = np.where(
        hallucinated, rng.uniform(size=answer.size) < miss, rng.uniform(size=answer.size) >= JUDGE_FALSE
    )
    return {
        "answer": answer,
        "hallucinated": hallucinated,
        "hard": hard,
        "judge": np.where(judge_s, S, U).astype(np.int64),
    }


def label(
    rng: np.random.Generator, run: dict[str, np.ndarray], answers: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(claim, reviewer, verdict) rows: 2-3 of the 13 reviewers label every claim of each answer."""
    rows_c, rows_r = [], []
    claims_of = {a: np.flatnonzero(run["answer"] == a) for a in answers.tolist()}
    for a in answers.tolist():
        who = rng.choice(N_REVIEWERS, size=int(rng.integers(2, 4)), replace=False)
        for r in who.tolist():
            rows_c.append(claims_of[a])
            rows_r.append(np.full(claims_of[a].size, r))
    c = np.concatenate(rows_c)
    r = np.concatenate(rows_r)
    p_s = reviewer_says_supported(run["hallucinated"][c], run["hard"][c])
    v = np.where(rng.uniform(size=c.size) < p_s, S, U).astype(np.int64)
    return c, r, v


def one_run(rng: np.random.Generator, pipeline_truth: float) -> dict[str, float]:
    run = make_run(rng, N_RUN)
    order = rng.permutation(N_RUN)
    lab_answers = order[:N_LABELED]
    c, r, v = label(rng, run, lab_answers)
    n_claims = run["answer"].size
    rc, _, rv = final_label.per_reviewer(n_claims, c, r, v, v, np.full(n_claims, -1))
    judge, cluster = run["judge"][rc], run["answer"][rc]
    keys = [f"{a}/{i}" for a, i in zip(cluster.tolist(), rc.tolist(), strict=True)]
    # Label order: answers in the order drawn (a shuffled queue).
    rank = np.argsort(order)[cluster].astype(float)
    rep = report.agreement_report(rv, judge, cluster, keys, bootstrap=0, label_rank=rank, per_reviewer=True)
    ceiling = decisions.human_ceiling(c, r, v, run["judge"], cluster=run["answer"], resamples=0)
    assert ceiling is not None
    # Grounding from soft labels, post-stratified on the all-SUPPORTED strata, as the report does.
    f_all = (run["judge"] == S).astype(float)
    n_rows = np.bincount(rc, minlength=n_claims)
    soft = np.bincount(rc, weights=(rv == S).astype(float), minlength=n_claims)
    lab = np.flatnonzero(n_rows > 0)
    y = soft[lab] / n_rows[lab]
    not_s = np.bincount(run["answer"], weights=1 - f_all, minlength=N_RUN)
    strata = estimation.run_strata(not_s == 0)
    pop = estimation.stratum_counts(strata)
    g = estimation.corrected_grounding(
        f_all,
        run["answer"],
        y,
        f_all[lab],
        run["answer"][lab],
        stratum=strata[run["answer"][lab]],
        population=pop,
        fpc=False,
    )
    truth = float(reviewer_says_supported(run["hallucinated"], run["hard"]).mean())
    e = g.estimate
    covered = e.ci_low is not None and e.ci_low <= truth <= e.ci_high
    covers_pipeline = e.ci_low is not None and e.ci_low <= pipeline_truth <= e.ci_high
    d = rep.estimates.direction
    return {
        "alt_fails": float(not ceiling.alt.passes),
        "direction": rep._rule("direction").status,
        "sign": float(np.sign(d.difference.value or 0.0)),
        "p_lenient": d.p_lenient,
        "p_strict": d.p_strict,
        "covered": float(covered),
        "covers_pipeline": float(covers_pipeline),
        "grounding_error": float(e.value - truth),
        "below": ceiling.below_reviewers,
        "tested": len(ceiling.comparisons),
        "agreement": float(rep.agreement.value),
        "rr": float(ceiling.reviewer_vs_reviewer.value),
    }


def process_truth(rng: np.random.Generator) -> tuple[float, float]:
    """Under the model, by a large simulation: E[(lenient - strict)] per (claim, reviewer) pair, and the
    share of claims a random reviewer calls SUPPORTED (what a run's figures estimate without the
    finite-population factor: the pipeline, not the run)."""
    run = make_run(rng, 400_000)
    p_s = reviewer_says_supported(run["hallucinated"], run["hard"])
    judge_s = run["judge"] == S
    return float(np.mean(np.where(judge_s, 1 - p_s, -p_s))), float(p_s.mean())


def plan_check(rng: np.random.Generator, reps: int, target: float) -> tuple[list[float], list[float], float]:
    """Predicted median 'how many more' at 60 answers vs the stopping time the rule then realises."""
    predicted, realised, inside = [], [], 0
    n0 = 60
    for _ in range(reps):
        run = make_run(rng, 1500)
        c, r, v = label(rng, run, np.arange(1500))
        rc, _, rv = final_label.per_reviewer(run["answer"].size, c, r, v, v, np.full(run["answer"].size, -1))
        agree = (rv == run["judge"][rc]).astype(float)
        ys, ms = decisions.answer_sums(run["answer"][rc], agree)
        per_claim = rc.size / run["answer"].size
        rule = decisions.agreement_rule(ys[:n0], ms[:n0], target)
        if rule.status != "inconclusive":
            continue
        plan = decisions.more_claims_to_decide(
            ys[:n0], ms[:n0], target, rule=rule, labels_per_claim=per_claim
        )
        if plan.more_claims is None:
            continue
        # Realised: the first look after which the running rule decides, on the run's further answers.
        _, low, _ = decisions.running_bounds(ys, ms, alpha=decisions.error_split(0.05, "ok")[0])
        _, _, high = decisions.running_bounds(ys, ms, alpha=decisions.error_split(0.05, "revise")[0])
        hit = (np.maximum.accumulate(low) >= target) | (np.minimum.accumulate(high) < target)
        after = np.flatnonzero(hit[n0:])
        t = int(after[0]) if after.size else None
        if t is None:
            continue
        more = float(ms[n0 : n0 + t + 1].sum() / per_claim)
        predicted.append(plan.more_claims)
        realised.append(more)
        inside += (plan.low or 0) <= more <= (plan.high or math.inf)
    return predicted, realised, inside / max(len(predicted), 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--plan-reps", type=int, default=60)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    truth_dir, truth_supported = process_truth(rng)
    want = "lenient" if truth_dir > 0 else "strict"
    out = [one_run(rng, truth_supported) for _ in range(args.reps)]
    alt = np.mean([o["alt_fails"] for o in out])
    calls = [o["direction"] for o in out]
    cover = np.mean([o["covered"] for o in out])
    gap = np.mean([o["rr"] - o["agreement"] for o in out])
    print(
        f"{args.reps} runs of {N_RUN} answers, {N_LABELED} labeled by 2-3 of {N_REVIEWERS} reviewers; "
        f"judge {100 * gap:.1f} points below reviewer-vs-reviewer agreement"
    )
    print("| check | result | required |")
    print("|---|---|---|")
    print(
        f"| alt-test fails (epsilon {decisions.ALT_EPSILON}, {decisions.ALT_ALIGNMENT}) | "
        f"{100 * alt:.1f}% of runs | >= 95% |"
    )
    below = np.mean([o["below"] == o["tested"] for o in out])
    print(f"| judge below every reviewer in the paired comparison | {100 * below:.1f}% of runs | |")
    right = calls.count(want) / len(calls)
    wrong = calls.count("strict" if want == "lenient" else "lenient") / len(calls)
    print(
        f"| direction call (per-reviewer truth: {want}, (lenient - strict)/n = {truth_dir:+.3f}) | "
        f"{want} in {100 * right:.1f}%, the other way in {100 * wrong:.1f}% | matches the truth |"
    )
    sign = np.mean([o["sign"] == (1.0 if want == "lenient" else -1.0) for o in out])
    p_key = "p_lenient" if want == "lenient" else "p_strict"
    p_other = "p_strict" if want == "lenient" else "p_lenient"
    fixed_right = np.mean([(o[p_key] or 1.0) < 0.05 for o in out])
    fixed_wrong = np.mean([(o[p_other] or 1.0) < 0.05 for o in out])
    print(
        f"| direction, design-based estimate (fixed-sample, one look) | sign {want} in {100 * sign:.1f}%; "
        f"significant {want} in {100 * fixed_right:.1f}%, the other way in {100 * fixed_wrong:.1f}% | "
        "matches the truth |"
    )
    err = np.array([o["grounding_error"] for o in out])
    cover_p = np.mean([o["covers_pipeline"] for o in out])
    print(
        f"| grounding 95% interval covers the per-reviewer truth of the pipeline "
        f"({100 * truth_supported:.1f}%) | {100 * cover_p:.1f}% | 93-97% |"
    )
    print(
        f"| ... and of the run itself (half its answers labeled: conservative without the fpc) | "
        f"{100 * cover:.1f}% (mean error {100 * err.mean():+.2f} points) | |"
    )
    pred, real, inside = plan_check(rng, args.plan_reps, 0.80)
    if pred:
        ratio = float(np.median(pred)) / float(np.median(real))
        print(
            f"| 'how many more' median vs realised stopping time (target 80%, look at 60 answers, "
            f"{len(pred)} undecided runs) | median predicted {np.median(pred):.0f}, realised "
            f"{np.median(real):.0f} claims (ratio {ratio:.2f}); realised inside the 80% range in "
            f"{100 * inside:.0f}% | within ±30% |"
        )
    print(f"({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    from figures import recorded  # bench/ is the script's folder

    with recorded(__file__):
        status = main()
    raise SystemExit(status)
