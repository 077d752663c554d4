"""Planned cycles against the other designs at equal numbers of labeled answers, by simulation.

    python bench/sim_planned.py [--reps 1000] [--workers 2] [--runs concentrated,even]
        [--set NAME=VALUE ...]

Simulated judge runs of 1,500 answers in three categories (shares 50/30/20), 1-4 claims each
(about 3,750 claims), 5% of the answers flagged by an answer check. The judge calls a claim
SUPPORTED with probability 0.8 (else UNSUPPORTED 80%, CONTRADICTED 20%); a person agrees with
the judge with a probability that depends on the run, shifted per answer by a normal random
effect on the logit scale (sd 0.6), so the claims of one answer are correlated:

- "concentrated": 99.5% on SUPPORTED verdicts, 50% on the others, and at most 75% on every
  verdict in one category ("legal") and on flagged answers: the disagreement sits in the
  judge-UNSUPPORTED answers and one category;
- "even": 88% on every verdict in every category: nothing to concentrate on;
- "lenient" (with `--runs`): 75% on SUPPORTED verdicts, 97% on the others: the disagreement
  sits in the judge's SUPPORTED verdicts, as in the WiCE labels of data/wice (the gpt-4
  judge's SUPPORTED claims disputed 19 times in 37, its UNSUPPORTED ones 4 in 63), against the
  planner's prior (`planning.PRIOR_ERROR`), which expects more errors on the other verdicts.

Each replicate labels 120 answers in cycles of 30 (each skipping the answers labeled before it),
the way a lead works (`--cycle 15` or 20 for smaller cycles), and the figures are read after
every cycle (30, 60, 90, 120):
random, stratified (by category), failures-first (share 0.5) in every cycle, and planned: the
first planned cycle of the agreement goal has no labels to go on (so it is the stratified
allocation over the planned strata), the grounding goal's follows the judge's signals, each later
one plans from the labels so far and completes them ("planned-agr": the agreement decision;
"planned-grd": the corrected grounding score). The run-level figures are computed as the report
computes them: post-stratified on the design strata (all-SUPPORTED or not, crossed with category
after a stratified cycle and with the planned cycles' strata, `planning.run_strata_with_plans`),
agreement by `estimation.agreement_estimate` (no finite-population correction, as the report)
and the grounding score by the two-phase estimator.

Printed per run, design and n (`SIZES`): coverage of the 95% intervals (agreement, corrected
grounding), |bias| of the point estimates, mean interval widths, and the labels a design saves
against random for the same width, two ways. The formula 1 - (w_design / w_random)^2 reads
random's width curve, which goes as 1/sqrt(n): it is 1 - n / n_r, n_r the labels random needs
for the design's width at n. Measured, 1 - n* / n: n* the labeled answers at which the design's
own mean width reaches random's width at n, interpolated on the design's curve over the cycles
(log width against log n). A planned design's curve is no power of n: its first cycle is spent
before there are labels to plan from, so between 30 and 60 the interpolation is coarse. Both
read the intervals; the third, 1 - MSE_design / MSE_random over the replicates' point estimates,
reads what the estimates do (against the run's own figure), so an interval that understates its
variance does not count as labels saved; its Monte Carlo s.e. is about 6 points at 1,000
replicates.
1,000 replicates put a coverage's Monte Carlo s.e.
near 0.7 points. Fixed seeds; asserts nothing.
"""

from __future__ import annotations

import argparse
import ast
import math
import resource
import sys
import time
from collections.abc import Hashable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibration import estimation as est  # noqa: E402
from calibration import planning, sampling  # noqa: E402
from calibration.store import ClaimTable, PlanningFacts, ReviewerColumns  # noqa: E402
from calibration.vocab import LABELS  # noqa: E402

CATEGORIES = ("finance", "health", "legal")
KINDS = ("concentrated", "even", "lenient")  # the simulated runs; the last only with --runs
DESIGNS = ("random", "stratified", "failures-first", "planned-agr", "planned-grd")
SIZES = (60, 120)  # the rows printed
LABELED = 120  # labeled answers at a replicate's end, read after each cycle: the curve "measured" reads
REPS = 1000
CYCLE = 30  # answers per cycle by default: the largest ordinary cycle (cycles.MAX_SIZE); --cycle
SUP, CON, UNS = LABELS.index("SUPPORTED"), LABELS.index("CONTRADICTED"), LABELS.index("UNSUPPORTED")


def _logit(p: np.ndarray) -> np.ndarray:
    return np.log(p / (1 - p))


class Run:
    """One simulated judge run: claims, answers, the facts the planner reads, and the truths."""

    def __init__(self, kind: str, seed: int, n_answers: int = 1500) -> None:
        rng = np.random.default_rng(seed)
        self.ids = [f"a{i:05d}" for i in range(n_answers)]
        self.index = {a: i for i, a in enumerate(self.ids)}
        cat = rng.choice(len(CATEGORIES), size=n_answers, p=[0.5, 0.3, 0.2])
        self.category = [CATEGORIES[c] for c in cat]
        flagged = rng.random(n_answers) < 0.05
        sizes = rng.integers(1, 5, size=n_answers)
        answer = np.repeat(np.arange(n_answers), sizes)
        n = answer.size
        judge = np.where(rng.random(n) < 0.8, SUP, np.where(rng.random(n) < 0.8, UNS, CON))
        if kind == "concentrated":
            p_agree = np.where(judge == SUP, 0.995, 0.50)
            hard = (cat[answer] == CATEGORIES.index("legal")) | flagged[answer]
            p_agree = np.where(hard, np.minimum(p_agree, 0.75), p_agree)
        elif kind == "lenient":
            p_agree = np.where(judge == SUP, 0.75, 0.97)
        else:
            p_agree = np.full(n, 0.88)
        effect = rng.normal(0, 0.6, size=n_answers)[answer]
        agree = rng.random(n) < 1 / (1 + np.exp(-(_logit(p_agree) + effect)))
        other = np.where(
            judge == SUP,
            np.where(rng.random(n) < 0.8, UNS, CON),
            np.where(rng.random(n) < 0.8, SUP, CON + UNS - judge),
        )
        human = np.where(agree, judge, other)
        self.answer, self.judge, self.human = answer, judge, human
        self.start = np.concatenate([[0], np.cumsum(sizes)])
        self.tables = (
            np.bincount(answer * 9 + human * 3 + judge, minlength=n_answers * 9)
            .reshape(n_answers, 3, 3)
            .astype(float)
        )
        self.failing = np.bincount(answer, weights=(judge != SUP).astype(float), minlength=n_answers) > 0
        self.pool = [
            sampling.PoolAnswer(a, c, bool(f))
            for a, c, f in zip(self.ids, self.category, self.failing, strict=True)
        ]
        lengths = rng.integers(200, 2000, size=n_answers)
        verdicts = [
            tuple(LABELS[v] for v in judge[self.start[i] : self.start[i + 1]]) for i in range(n_answers)
        ]
        self.facts = [
            PlanningFacts(a, self.category[i], verdicts[i], bool(flagged[i]), int(lengths[i]), None)
            for i, a in enumerate(self.ids)
        ]
        whole = self.tables.sum(axis=0)
        self.truth = {
            "agreement": float(np.trace(whole) / whole.sum()),
            "grounding": float((human == SUP).mean()),
        }
        self.f_all = (judge == SUP).astype(float)
        self.base = est.run_strata(~self.failing)
        self.with_category = est.run_strata(~self.failing, self.category)

    def rows_of(self, ids: tuple[str, ...] | list[str]) -> np.ndarray:
        return np.array([self.index[a] for a in ids], dtype=np.int64)

    def claims_of(self, rows: np.ndarray) -> np.ndarray:
        return np.concatenate([np.arange(self.start[r], self.start[r + 1]) for r in rows])

    def table(self, labeled_rows: np.ndarray) -> ClaimTable:
        """The run's claim table with human labels on the labeled answers' claims only."""
        human = np.full(self.answer.size, -1, dtype=np.int64)
        if labeled_rows.size:
            cl = self.claims_of(labeled_rows)
            human[cl] = self.human[cl]
        n = self.answer.size
        empty = np.zeros(0, dtype=np.int64)
        labels = ReviewerColumns(
            claim=empty,
            claim_pk=empty,
            reviewers=[],
            reviewer=empty,
            final=empty,
            blind=empty,
            reconciled=empty,
            slip=empty,
            judge=empty,
        )
        return ClaimTable(
            claim_pk=np.arange(n),
            keys=[""] * n,
            answer=self.answer,
            answer_ids=self.ids,
            judge=self.judge,
            human=human,
            status=np.zeros(n, dtype=np.int64),
            weight=None,
            labels=labels,
        )


RUNS: dict[str, Run] = {}


def _run(kind: str) -> Run:
    if kind not in RUNS:
        RUNS[kind] = Run(kind, seed=21 + KINDS.index(kind))
    return RUNS[kind]


def _represented(strata: np.ndarray, rows: np.ndarray) -> dict[Hashable, int]:
    """N_h of the strata holding a labeled answer (as `report._represented`)."""
    have = set(strata[rows].tolist())
    return {h: n for h, n in est.stratum_counts(strata).items() if h in have}


def _figures(run: Run, rows: np.ndarray, strata: np.ndarray) -> list[tuple[float, float, float, float]]:
    """(error, covered, width, estimated variance) of the run's agreement and grounding figures
    from the labeled rows, as the report computes them; NaN where an interval is withheld."""
    pop = _represented(strata, rows)
    a = est.agreement_estimate(run.tables[rows], strata[rows], pop, fpc=False)
    cl = run.claims_of(rows)
    ans = run.answer[cl]
    y = (run.human[cl] == SUP).astype(float)
    g = est.corrected_grounding(
        run.f_all, run.answer, y, run.f_all[cl], ans, stratum=strata[ans], population=pop
    ).estimate
    out = []
    for e, truth in ((a, run.truth["agreement"]), (g, run.truth["grounding"])):
        err = np.nan if e.value is None else e.value - truth
        if e.ci_low is None or e.ci_high is None or e.se is None:
            out.append((err, np.nan, np.nan, np.nan))
        else:
            out.append((err, float(e.ci_low <= truth <= e.ci_high), e.ci_high - e.ci_low, e.se**2))
    return out


def trajectory(
    run: Run, design: str, seed: int, cycle: int = CYCLE
) -> dict[int, list[tuple[float, float, float, float]]]:
    """The run's figures after each cycle of `cycle` answers of the design, up to LABELED
    answers: {labeled answers: `_figures`}."""
    labeled: list[str] = []
    plans: list[dict[str, str]] = []
    out = {}
    base = run.with_category if design == "stratified" else run.base
    for k in range(LABELED // cycle):
        taken = set(labeled)
        pool = [a for a in run.pool if a.answer_id not in taken]
        s_seed = seed * 10 + k
        if design.startswith("planned"):
            goal = "agreement" if design == "planned-agr" else "grounding"
            plan = planning.make_plan(
                run.facts,
                run.table(run.rows_of(labeled)),
                [a.answer_id for a in pool],
                goal,
                cycle,
                target=0.85,
            )
            pool = [
                sampling.PoolAnswer(a.answer_id, a.category, a.failing, plan.answer_strata[a.answer_id])
                for a in pool
            ]
            sample = sampling.planned_sample(pool, cycle, s_seed, allocation=plan.allocation)
            plans.append(plan.answer_strata)
        else:
            sample = sampling.draw(design, pool, cycle, s_seed)
        labeled += list(sample.answer_ids)
        strata = planning.run_strata_with_plans(base, run.ids, plans)
        out[len(labeled)] = _figures(run, run.rows_of(labeled), strata)
    return out


def cell(args: tuple[str, str, int, int, int]) -> tuple[str, str, dict[int, np.ndarray]]:
    """Replicates of one design on one run: {labeled answers: array (reps, figure, `_figures` field)}."""
    kind, design, reps, seed, cycle = args
    run = _run(kind)
    got: dict[int, list[list[tuple[float, float, float, float]]]] = {}
    for r in range(reps):
        for n, figures in trajectory(run, design, seed * 100_000 + r, cycle).items():
            got.setdefault(n, []).append(figures)
    return kind, design, {n: np.array(v, dtype=float) for n, v in got.items()}


def labels_needed(widths: dict[int, float], target: float) -> float:
    """Labeled answers at which a design's mean width reaches `target`: linear interpolation of
    log width against log n between the grid points around it (width goes about as 1/sqrt(n)),
    extended from the first or last two points outside the grid."""
    ns = sorted(widths)
    x, y = np.log(ns), np.log([widths[n] for n in ns])
    i = int(np.clip(np.searchsorted(-y, -np.log(target)), 1, len(ns) - 1))
    slope = (y[i] - y[i - 1]) / (x[i] - x[i - 1])
    return float(np.exp(x[i - 1] + (np.log(target) - y[i - 1]) / slope))


def _change_planning(settings: list[tuple[str, object]]) -> None:
    """Set planning's constants for an experiment (`--set`), in this process and each worker."""
    for name, value in settings:
        setattr(planning, name, value)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=REPS)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="run with one of planning's constants changed, e.g. MAX_STRATA=6 or "
        "\"FLOOR={'agreement': 0.1, 'grounding': 0.5}\" (a Python literal; repeatable)",
    )
    ap.add_argument("--runs", default="concentrated,even", help=f"comma-separated, of {', '.join(KINDS)}")
    ap.add_argument(
        "--cycle",
        type=int,
        default=CYCLE,
        help=f"answers per cycle, a divisor of {SIZES[0]} (the Cycles page takes 15-30)",
    )
    args = ap.parse_args()
    if args.cycle < 1 or any(n % args.cycle for n in SIZES):
        ap.error(f"--cycle {args.cycle}: the figures are read at {' and '.join(map(str, SIZES))} answers")
    kinds = [k for k in args.runs.split(",") if k]
    if not kinds or any(k not in KINDS for k in kinds):
        ap.error(f"--runs {args.runs}: each run is one of {', '.join(KINDS)}")
    settings = []
    for item in args.set:
        name, _, text = item.partition("=")
        if not (name.isupper() and hasattr(planning, name)):
            ap.error(f"--set {item}: planning has no constant {name!r}")
        try:
            settings.append((name, ast.literal_eval(text)))
        except (ValueError, SyntaxError):
            ap.error(f"--set {item}: {text!r} is not a Python literal")
    _change_planning(settings)
    if settings:
        print("planning changed: " + ", ".join(f"{n}={v!r}" for n, v in settings))
    t0, c0 = time.perf_counter(), time.process_time()
    # A cell's seed depends on its run and design alone, so --runs changes no other cell.
    jobs = [
        (k, d, args.reps, 1 + KINDS.index(k) * len(DESIGNS) + DESIGNS.index(d), args.cycle)
        for k in kinds
        for d in DESIGNS
    ]
    with ProcessPoolExecutor(
        max_workers=args.workers, initializer=_change_planning, initargs=(settings,)
    ) as pool:
        by = {(kind, d): res for kind, d, res in pool.map(cell, jobs)}
    mc = 100 * math.sqrt(0.95 * 0.05 / args.reps)
    for kind in kinds:
        run = _run(kind)
        print(
            f"\nrun {kind}: agreement {run.truth['agreement']:.3f}, grounding {run.truth['grounding']:.3f} "
            f"(cycles of {args.cycle}; {args.reps} replicates per row; a coverage near 95% has a "
            f"Monte Carlo s.e. of {mc:.1f} points)"
        )
        print(
            "| design | n answers | agreement coverage | agreement |bias| | agreement width "
            "| grounding coverage | grounding |bias| | grounding width "
            "| labels saved vs random, width formula (agr / grd) | labels saved, measured (agr / grd) "
            "| labels saved, squared error (agr / grd) |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for n in SIZES:
            ref = by[(kind, "random")][n]
            for d in DESIGNS:
                r = by[(kind, d)][n]
                formula = measured = by_error = ""
                if d != "random":
                    ratio = [np.nanmean(r[:, j, 2]) / np.nanmean(ref[:, j, 2]) for j in (0, 1)]
                    formula = " / ".join(f"{1 - q**2:+.0%}" for q in ratio)
                    curve = by[(kind, d)]
                    needed = [
                        labels_needed(
                            {m: float(np.nanmean(v[:, j, 2])) for m, v in curve.items()},
                            float(np.nanmean(ref[:, j, 2])),
                        )
                        for j in (0, 1)
                    ]
                    measured = " / ".join(f"{1 - m / n:+.0%}" for m in needed)
                    # What the estimates do rather than what their intervals say: 1 - MSE / MSE_random.
                    mse = [np.nanmean(r[:, j, 0] ** 2) / np.nanmean(ref[:, j, 0] ** 2) for j in (0, 1)]
                    by_error = " / ".join(f"{1 - q:+.0%}" for q in mse)
                cols = []
                for j in (0, 1):
                    cols += [
                        f"{np.nanmean(r[:, j, 1]):.1%}",
                        f"{abs(np.nanmean(r[:, j, 0])):.4f}",
                        f"{np.nanmean(r[:, j, 2]):.4f}",
                    ]
                print(f"| {d} | {n} | " + " | ".join(cols) + f" | {formula} | {measured} | {by_error} |")
                withheld = int(np.isnan(r[:, :, 2]).sum())
                if withheld:
                    print(f"|   ({d}, n {n}: {withheld} intervals withheld) |")
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - c0 + children.ru_utime + children.ru_stime
    print(f"\n{time.perf_counter() - t0:.0f} s, {cpu:.0f} s of CPU")


if __name__ == "__main__":
    from figures import recorded  # bench/ is the script's folder

    with recorded(__file__):
        main()
