"""The flag's decisions by simulation: power and false decisions of the running rule and the final
reading, coverage of the fixed-sample interval, calibration of P(agreement >= target), and how often
the 80% range of "how many more" holds the stopping time.

    python bench/sim_flag.py [--reps 4000] [--small-reps 2000] [--plan-runs 300] [--seed 11]

Synthetic runs: answers of 1-5 claims (uniform) or of 10-30 claims, each answer with its own
agreement p_i ~ Beta(p kappa, (1 - p) kappa), kappa = 4 (intra-answer correlation 1 / (kappa + 1) =
0.2), claims' agreement Binomial(m_i, p_i); the claim-level truth is p.  Target 85%, alpha 0.05 split
per side by `decisions.error_split` (ok: 0.045 running, 0.005 final; revise: 0.025 and 0.025).

1. Power and false decisions (`decisions.running_bounds`, the function the report's rule runs),
   read after every answer: ok / revise by 200 claims, and for runs labeled to the end (600 claims of
   1-5-claim answers, or 40 answers of 10-30 claims) any false decision of the running rule or of the
   final reading at the end (the report's design-based 95% interval, `estimation.agreement_estimate`).
   Beside it the rules considered (`--compare`): the boundary centred at 0 (the rule before), this
   rule without the independent-claims floor, this rule with the ok side's share at 0.5 (the split
   before) and at 0.8, the single bet best at 200 claims with the answers' variance
   known (a bound no rule reaches: it knows sigma), the betting sequence the report ran before that
   (Waudby-Smith & Ramdas 2024, predictable plug-in bets, each answer's bet scaled by its claims over
   the most claims seen), and betting on the answers' rates (the mean of the rates, not the
   claim-level figure).
2. Coverage of the report's fixed-sample 95% agreement interval at 12, 15, 20 and 30 answers of 10-30
   claims (and 1-5), and calibration of P(agreement >= target) (`decisions.prob_at_least_target_design`)
   over runs whose truth is drawn uniformly from 0.75-0.95: per bin of the stated chance, the share of
   runs at or above the target (and over truths uniform on 0.65-0.99: a chance from a flat prior is
   calibrated for a population of judges only as far as the data outweigh the population's spread);
   and, read as a test, how often it passes 0.95 (or falls under 0.05)
   in runs whose truth is the target (about 5% each).
3. "How many more" (`decisions.more_claims_to_decide`) at 20 labeled answers, truth drawn uniformly
   from 0.75-0.97, up to 1,500 more claims: how often the realised stopping time (the running rule on
   the run's own further answers, or the final reading when the claims run out) falls in its 80% range.

Prints the tables (docs/figures/sim_flag.md keeps them, with the date, the machine and the command:
bench/figures.py).  Fixed seeds;
asserts nothing (tests/test_decisions.py holds reduced versions with stated Monte Carlo slack).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibration import decisions, estimation  # noqa: E402

TARGET, ALPHA = 0.85, 0.05
(RUN_OK, FINAL_OK), (RUNNING, FINAL) = (
    decisions.error_split(ALPHA, "ok"),
    decisions.error_split(ALPHA, "revise"),
)
SHARES = {"ok share 0.5 (before)": 0.5, "ok share 0.8": 0.8}


def ok_low(y: np.ndarray, m: np.ndarray) -> float | None:
    """The final reading's lower bound (the ok side's level) of one run."""
    return fixed_interval(y, m, decisions.final_levels(ALPHA, "agreement")[0]).ci_low


def revise_high(y: np.ndarray, m: np.ndarray) -> float | None:
    """The final reading's upper bound (the revise side's level) of one run."""
    return fixed_interval(y, m, decisions.final_levels(ALPHA, "agreement")[1]).ci_high


ICC_KAPPA = 4.0
SIZES = {"1-5": (1, 5), "4-10": (4, 10), "8-16": (8, 16), "10-30": (10, 30)}


def draw(p: np.ndarray | float, size: str, reps: int, n_ans: int, rng: np.random.Generator):
    """Claims m and agreeing claims y per answer, (reps, n_ans); p per run (array) or one value."""
    lo, hi = SIZES[size]
    m = rng.integers(lo, hi + 1, size=(reps, n_ans)).astype(float)
    pr = np.broadcast_to(np.asarray(p, dtype=float).reshape(-1, 1), (reps, 1))
    pi = rng.beta(pr * ICC_KAPPA, (1 - pr) * ICC_KAPPA, size=(reps, n_ans))
    return m, rng.binomial(m.astype(int), pi).astype(float)


def fixed_interval(y: np.ndarray, m: np.ndarray, confidence: float = 0.95) -> estimation.Estimate:
    """The report's design-based agreement estimate of one run (one stratum, no fpc)."""
    tables = np.zeros((y.size, 3, 3))
    tables[:, 0, 0] = y
    tables[:, 0, 2] = m - y
    return estimation.agreement_estimate(tables, population=y.size, confidence=confidence, fpc=False)


# ---------------------------------------------------------------- the rules compared


def _betting(x: np.ndarray, scale: np.ndarray, theta: float, side: str) -> np.ndarray:
    """Running max of the log capital of the predictable plug-in betting sequence (Waudby-Smith &
    Ramdas 2024, eq. 26-27, truncation 0.75), each bet times ``scale``: the rule the report ran before."""
    t = np.arange(1, x.shape[1] + 1, dtype=float)
    mu = (0.5 + np.cumsum(x, axis=1)) / (t + 1)
    sig = (0.25 + np.cumsum((x - mu) ** 2, axis=1)) / (t + 1)
    prev = np.concatenate([np.full((x.shape[0], 1), 0.25), sig[:, :-1]], axis=1)
    lam = np.sqrt(2 * math.log(1 / RUNNING) / (prev * t * np.log1p(t)))
    if side == "above":
        f = 1 + np.minimum(lam, 0.75 / theta) * scale * (x - theta)
    else:
        f = 1 - np.minimum(lam, 0.75 / (1 - theta)) * scale * (x - theta)
    return np.maximum.accumulate(np.cumsum(np.log(f), axis=1), axis=1)


def _centred_at_zero(t: np.ndarray, alpha: float, t_star: float = 50, spread: float = 0.0) -> np.ndarray:
    """The boundary the running rule had before: the one-sided normal mixture centred at 0 (Howard et
    al. 2021, half-normal mixing, rho^2 = (-2 log alpha + log(-2 log alpha + 1)) / 50)."""
    la = -2 * math.log(alpha)
    rho2 = (la + math.log(la + 1)) / t_star
    x = t * rho2 + 1
    return np.sqrt(2 * x / (t * t * rho2) * np.log(np.sqrt(x) / (2 * alpha) + 1))


@contextlib.contextmanager
def boundary(fn):
    """The running rule with another boundary, for the comparison only."""
    shipped = decisions.mixture_boundary
    decisions.mixture_boundary = fn
    try:
        yield
    finally:
        decisions.mixture_boundary = shipped


def _oracle(y: np.ndarray, m: np.ndarray, p: float, alpha: float) -> np.ndarray:
    """ok at every answer for the single bet best at 67 answers (200 claims) against the target, the
    answers' true variance known: exp(lam S - lam^2 V / 2) >= 1/alpha, S = sum (y - target m), V = t
    sigma^2, lam = sqrt(2 log(1/alpha) / (67 sigma^2)).  A bound on what a rule valid at every look
    can reach; no rule knows sigma."""
    lo, hi = SIZES["1-5"]
    sizes = np.arange(lo, hi + 1, dtype=float)
    em, em2 = sizes.mean(), (sizes**2).mean()
    var = p * (1 - p) * (em + (em2 - em) / (ICC_KAPPA + 1)) + (p - TARGET) ** 2 * (em2 - em * em)
    lam = math.sqrt(2 * math.log(1 / alpha) / (67 * var))
    t = np.arange(1, y.shape[1] + 1, dtype=float)
    s = np.cumsum(y - TARGET * m, axis=1)
    return np.maximum.accumulate(lam * s - lam * lam * t * var / 2 >= math.log(1 / alpha), axis=1)


def rule_paths(rule: str, y: np.ndarray, m: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray]:
    """(ok, revise) at every answer, (reps, n), for the named rule at each side's alpha_running."""
    goal = math.log(1 / RUNNING)  # the betting rules as they ran, at the split before
    alpha = SHARES.get(rule, RUN_OK / ALPHA) * ALPHA
    if rule == "known variance, one bet (bound)":
        return _oracle(y, m, p, RUN_OK), np.zeros_like(y, dtype=bool)
    if rule in ("shipped", "no floor") or rule in SHARES:
        _, low, _ = decisions.running_bounds(y, m, alpha=alpha, binary=rule != "no floor")
        _, _, high = decisions.running_bounds(y, m, alpha=RUNNING, binary=rule != "no floor")
        return np.maximum.accumulate(low, axis=1) >= TARGET, np.minimum.accumulate(high, axis=1) < TARGET
    if rule == "centred at 0 (before)":  # the rule as it ran, at the split before
        with boundary(_centred_at_zero):
            _, low, high = decisions.running_bounds(y, m, alpha=RUNNING)
        return np.maximum.accumulate(low, axis=1) >= TARGET, np.minimum.accumulate(high, axis=1) < TARGET
    x = y / m
    scale = m / np.maximum.accumulate(m, axis=1) if rule == "betting, claim-level" else np.ones_like(m)
    return _betting(x, scale, TARGET, "above") >= goal, _betting(x, scale, TARGET, "below") >= goal


def power_rows(reps: int, rng: np.random.Generator, rules: list[str]) -> list[str]:
    out = [
        "| rule | true agreement | ok by 200 claims | revise by 200 claims |",
        "|---|---|---|---|",
    ]
    for p in (0.80, 0.85, 0.90, 0.95):
        m, y = draw(p, "1-5", reps, 200, rng)
        at = (np.cumsum(m, axis=1) < 200).sum(axis=1)
        rows = np.arange(reps)
        for rule in rules:
            ok, rev = rule_paths(rule, y, m, p)
            out.append(f"| {rule} | {p:.2f} | {ok[rows, at].mean():.3f} | {rev[rows, at].mean():.3f} |")
    return out


def false_rows(reps: int, rng: np.random.Generator) -> list[str]:
    """False decisions over every look of a fully labeled run plus its final reading."""
    out = [
        "| answers | truth = target | running ok | running revise | final ok | final revise "
        "| false ok, all | false revise, all |",
        "|---|---|---|---|---|---|---|---|",
    ]
    cases = [("1-5", 180, 0.85), ("1-5", 180, 0.90), ("1-5", 180, 0.95), ("10-30", 40, 0.85)]
    cases += [("10-30", 40, 0.90), ("10-30", 40, 0.95), ("10-30", 15, 0.85)]
    for size, n_ans, p in cases:
        m, y = draw(p, size, reps, n_ans, rng)
        _, low, _ = decisions.running_bounds(y, m, alpha=RUN_OK)
        _, _, high = decisions.running_bounds(y, m, alpha=RUNNING)
        run_ok, run_rev = low.max(axis=1) >= p, high.min(axis=1) < p
        fin_ok = np.zeros(reps, dtype=bool)
        fin_rev = np.zeros(reps, dtype=bool)
        for r in np.flatnonzero(~run_ok & ~run_rev):
            lo_b, hi_b = ok_low(y[r], m[r]), revise_high(y[r], m[r])
            fin_ok[r] = lo_b is not None and lo_b >= p
            fin_rev[r] = hi_b is not None and hi_b < p
        out.append(
            f"| {n_ans} of {size} claims | {p:.2f} | {run_ok.mean():.4f} | {run_rev.mean():.4f} | "
            f"{fin_ok.mean():.4f} | {fin_rev.mean():.4f} | {(run_ok | fin_ok).mean():.4f} | "
            f"{(run_rev | fin_rev).mean():.4f} |"
        )
    return out


# ---------------------------------------------------------------- small samples


def coverage_rows(reps: int, rng: np.random.Generator) -> list[str]:
    out = [
        "| answers | claims per answer | truth | coverage of the 95% interval | withheld | "
        "P(>= 85%) above 0.95 / below 0.05 at truth = target | "
        "P(>= 85%) calibration, truth uniform on 75-95%: mean / largest gap over tenths | "
        "the same, truth uniform on 65-99% |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for size in ("10-30", "1-5"):
        for n_ans in (12, 15, 20, 30):
            for p in (0.85, 0.92):
                m, y = draw(p, size, reps, n_ans, rng)
                hit, held = [], 0
                for r in range(reps):
                    e = fixed_interval(y[r], m[r])
                    if e.ci_low is None:
                        held += 1
                        continue
                    hit.append(e.ci_low <= p <= e.ci_high)
                cov = float(np.mean(hit)) if hit else float("nan")
                gap = wide = tails = ""
                if p == TARGET:
                    gap = calibration_gap(size, n_ans, reps, rng)
                    wide = calibration_gap(size, n_ans, reps, rng, (0.65, 0.99))
                if p == TARGET:
                    stated = np.array([chance(y[r], m[r]) for r in range(reps)])
                    stated = stated[np.isfinite(stated)]
                    tails = f"{(stated > 0.95).mean():.3f} / {(stated < 0.05).mean():.3f}"
                out.append(
                    f"| {n_ans} | {size} | {p:.2f} | {cov:.3f} | {held / reps:.3f} | {tails} | {gap} "
                    f"| {wide} |"
                )
    return out


def chance(y: np.ndarray, m: np.ndarray) -> float:
    """The report's P(agreement >= target): the bootstrap-t draws at small samples, else the t posterior."""
    tables = np.zeros((y.size, 3, 3))
    tables[:, 0, 0] = y
    tables[:, 0, 2] = m - y
    p = estimation.agreement_chance(tables, TARGET, population=y.size, fpc=False)
    if p is None:
        e = fixed_interval(y, m)
        p = decisions.prob_at_least_target_design(e.value, e.se, TARGET, e.df)
    return np.nan if p is None else p


def calibration_gap(
    size: str, n_ans: int, reps: int, rng: np.random.Generator, truths: tuple[float, float] = (0.75, 0.95)
) -> str:
    """Over tenths of the stated P(>= target) with 40 or more runs: |mean stated - share of runs at or
    above the target|, weighted by the runs in the bin, and its largest (a bin of 100 runs has a
    Monte Carlo s.e. near 0.05, so the largest of ten is mostly noise)."""
    truth = rng.uniform(*truths, size=reps)
    m, y = draw(truth, size, reps, n_ans, rng)
    stated = np.full(reps, np.nan)
    for r in range(reps):
        stated[r] = chance(y[r], m[r])
    ok = np.isfinite(stated)
    bins = np.minimum((stated[ok] * 10).astype(int), 9)
    met = (truth[ok] >= TARGET).astype(float)
    gaps = [
        (abs(float(stated[ok][bins == b].mean() - met[bins == b].mean())), int((bins == b).sum()))
        for b in range(10)
        if (bins == b).sum() >= 40
    ]
    if not gaps:
        return "n/a"
    mean_gap = sum(g * k for g, k in gaps) / sum(k for _, k in gaps)
    return f"{mean_gap:.3f} / {max(g for g, _ in gaps):.3f}"


# ---------------------------------------------------------------- how many more


def plan_rows(runs: int, rng: np.random.Generator) -> list[str]:
    out = [
        "| answers | runs with a range | 80% range holds the realised stopping time | "
        "'not decidable' said | median predicted / realised |",
        "|---|---|---|---|---|",
    ]
    for size, available in (("1-5", 1500), ("10-30", 1500)):
        n0 = 20
        inside, ranged, undecidable, ratio = 0, 0, 0, []
        for _ in range(runs):
            p = float(rng.uniform(0.75, 0.97))
            per = float(np.mean(SIZES[size]))
            n_more = math.ceil(available / per) + 10
            m, y = draw(p, size, 1, n0 + n_more, rng)
            m, y = m[0], y[0]
            keep = np.cumsum(m[n0:]) <= available
            m, y = np.concatenate([m[:n0], m[n0:][keep]]), np.concatenate([y[:n0], y[n0:][keep]])
            rule = decisions.agreement_rule(y[:n0], m[:n0], TARGET)
            if rule.status != "inconclusive":
                continue
            plan = decisions.more_claims_to_decide(
                y[:n0], m[:n0], TARGET, rule=rule, available=int(m[n0:].sum()), reps=300
            )
            _, low, _ = decisions.running_bounds(y, m, alpha=RUN_OK)
            _, _, high = decisions.running_bounds(y, m, alpha=RUNNING)
            hit = (np.maximum.accumulate(low) >= TARGET) | (np.minimum.accumulate(high) < TARGET)
            after = np.flatnonzero(hit[n0:])
            realised = float(m[n0 : n0 + after[0] + 1].sum()) if after.size else math.inf
            if not after.size:
                lo_b, hi_b = ok_low(y, m), revise_high(y, m)
                if lo_b is not None and hi_b is not None and (lo_b >= TARGET or hi_b < TARGET):
                    realised = float(m[n0:].sum())
            if plan.more_claims is None:
                undecidable += 1
                continue
            ranged += 1
            lo_c = plan.low or 0
            hi_c = math.inf if plan.high is None else plan.high
            inside += lo_c <= realised <= hi_c
            if math.isfinite(realised):
                ratio.append(plan.more_claims / max(realised, 1.0))
        med = f"{np.median(ratio):.2f}" if ratio else "n/a"
        out.append(
            f"| {n0} labeled of {size} claims | {ranged} | {inside / max(ranged, 1):.3f} | "
            f"{undecidable} | {med} |"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=4000)
    ap.add_argument("--small-reps", type=int, default=2000)
    ap.add_argument("--plan-runs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--compare", action="store_true", help="also run the rules considered")
    a = ap.parse_args()
    start = time.perf_counter()
    considered = [
        "centred at 0 (before)",
        "no floor",
        *SHARES,
        "known variance, one bet (bound)",
        "betting, claim-level",
        "betting, answer rates",
    ]
    rules = ["shipped"] + (considered if a.compare else [])
    sections = [
        (
            "Power: ok / revise by 200 claims, answers of 1-5 claims, read after every answer",
            a.reps,
            lambda rng: power_rows(a.reps, rng, rules),
        ),
        (
            "False decisions over every look of a fully labeled run plus the final reading",
            a.reps,
            lambda rng: false_rows(a.reps, rng),
        ),
        (
            "Small samples: the fixed-sample 95% interval and P(agreement >= target)",
            a.small_reps,
            lambda rng: coverage_rows(a.small_reps, rng),
        ),
        (
            "How many more: the 80% range against the realised stopping time",
            a.plan_runs,
            lambda rng: plan_rows(a.plan_runs, rng),
        ),
    ]
    print(
        f"Flag simulation, seed {a.seed}; target {TARGET:.0%}, alpha {ALPHA} a side: ok {RUN_OK:g} running "
        f"+ {FINAL_OK:g} final, revise {RUNNING:g} + {FINAL:g}; intra-answer correlation 0.2."
    )
    for i, (title, n, make) in enumerate(sections):
        t0 = time.perf_counter()
        rows = make(np.random.default_rng([a.seed, i]))
        print("\n".join(["", f"## {title} ({n:,} replicates)", "", *rows, ""]), flush=True)
        print(f"({time.perf_counter() - t0:.0f} s)")
    print(f"\nTotal {time.perf_counter() - start:.0f} s.")


if __name__ == "__main__":
    from figures import recorded  # bench/ is the script's folder

    with recorded(__file__):
        main()
