"""Error rates of the flag read once at 200 claims and read after every 20 claims up to 200.

    python bench/sim_flag.py [--reps 10000] [--seed 11]

Synthetic runs: answers of 1-5 claims (uniform), each answer with its own agreement probability
p_i ~ Beta(p kappa, (1 - p) kappa) (intra-answer correlation 1 / (kappa + 1) = 0.2), claims' human
classes 60/10/30 (SUPPORTED/CONTRADICTED/UNSUPPORTED) where judge and human agree; disagreements
lenient (judge SUPPORTED, human not) / strict (the reverse) / neither (CONTRADICTED <-> UNSUPPORTED) in
shares 0.45/0.45/0.10 without skew and 0.75/0.15/0.10 with lenient skew.  Looks after the answer that
brings the claims to 20, 40, ..., 200.  The flag is :func:`calibration.decisions.decide`'s rule:
revise if the agreement confidence sequence's upper bound < 85%, or kappa's 95% upper bound < 0.60,
or the direction test fires; ok if the lower bound >= 85% and nothing fired.  The rules are evaluated
with the module's own functions on all replicates at once.  For contrast, "Wilson any look" is the
old fixed-sample rule's agreement part (Wilson 95% upper < target) read at every look.

Prints a table; asserts nothing.
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

from calibration.decisions import BET_TRUNCATION, kappa_se_many, log_capital, plugin_bets  # noqa: E402

TARGET, FLOOR, ALPHA = 0.85, 0.60, 0.05
MAX_CLAIMS, STEP, M_MAX = 200, 20, 5
C = BET_TRUNCATION
ICC_KAPPA = 4.0  # Beta concentration: intra-answer correlation 1 / (4 + 1) = 0.2
MIX = np.array([0.6, 0.1, 0.3])
# Off-diagonal cells (human, judge) in LABELS order S=0, C=1, U=2.
LENIENT_CELLS = [(1, 0, 0.25), (2, 0, 0.75)]
STRICT_CELLS = [(0, 1, 0.25), (0, 2, 0.75)]
NEITHER_CELLS = [(1, 2, 0.5), (2, 1, 0.5)]


def simulate(p: float, skew: bool, reps: int, rng: np.random.Generator) -> dict[str, float]:
    n_ans = MAX_CLAIMS  # more answers than 200 claims can need
    m = rng.integers(1, M_MAX + 1, size=(reps, n_ans))
    pi = rng.beta(p * ICC_KAPPA, (1 - p) * ICC_KAPPA, size=(reps, n_ans))
    y = rng.binomial(m, pi)
    shares = (0.75, 0.15, 0.10) if skew else (0.45, 0.45, 0.10)
    cells = np.zeros((reps, n_ans, 9))
    cells[..., [0, 4, 8]] = rng.multinomial(y, MIX)
    groups = (LENIENT_CELLS, STRICT_CELLS, NEITHER_CELLS)
    off = [(h, j, s * w) for s, group in zip(shares, groups, strict=True) for h, j, w in group]
    drawn = rng.multinomial(m - y, [w for _, _, w in off])
    for col, (h, j, _) in enumerate(off):
        cells[..., h * 3 + j] = drawn[..., col]
    lenient = cells[..., 3] + cells[..., 6]
    strict = cells[..., 1] + cells[..., 2]

    rate = y / m
    bets = plugin_bets(rate, alpha=ALPHA)
    cap_below = np.maximum.accumulate(log_capital(rate, TARGET, bets, side="below", c=C), axis=-1)
    cap_above = np.maximum.accumulate(log_capital(rate, TARGET, bets, side="above", c=C), axis=-1)
    # The direction rule on [-1, 1] mapped to [0, 1]: u = (d/m + 1)/2, tested at 1/2.
    du = ((lenient - strict) / m + 1) / 2
    dbets = plugin_bets(du, alpha=ALPHA / 2)
    dir_len = np.maximum.accumulate(log_capital(du, 0.5, dbets, side="above", c=C), axis=-1)
    dir_str = np.maximum.accumulate(log_capital(du, 0.5, dbets, side="below", c=C), axis=-1)

    # Look k: the first answer at which the cumulative claims reach 20 k.
    cum = np.cumsum(m, axis=1)
    looks = np.stack([(cum < k * STEP).sum(axis=1) for k in range(1, MAX_CLAIMS // STEP + 1)], axis=1)
    rows = np.arange(reps)[:, None]
    goal = math.log(1 / ALPHA)
    goal_d = math.log(2 / ALPHA)
    revise_a = cap_below[rows, looks] >= goal
    ok_a = cap_above[rows, looks] >= goal
    direction = (dir_len[rows, looks] >= goal_d) | (dir_str[rows, looks] >= goal_d)
    tables = np.cumsum(cells, axis=1)[rows, looks].reshape(reps, looks.shape[1], 3, 3)
    _, _, k_high = kappa_se_many(tables)
    kappa_rev = np.isfinite(k_high) & (k_high < FLOOR)
    revise = revise_a | kappa_rev | direction
    ok = ok_a & ~revise

    # The old fixed-sample agreement rule at every look: Wilson 95% upper bound < target.
    x = np.cumsum(y, axis=1)[rows, looks].astype(float)
    n = cum[rows, looks].astype(float)
    z = 1.959963984540054
    ph = x / n
    centre = (ph + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(ph * (1 - ph) / n + z * z / (4 * n * n))
    wilson_rev = centre + half < TARGET

    return {
        "revise@200": revise[:, -1].mean(),
        "ok@200": ok[:, -1].mean(),
        "revise any": revise.any(axis=1).mean(),
        "ok any": ok.any(axis=1).mean(),
        "agr revise any": revise_a.any(axis=1).mean(),
        "kappa revise any": kappa_rev.any(axis=1).mean(),
        "direction any": direction.any(axis=1).mean(),
        "wilson revise any": wilson_rev.any(axis=1).mean(),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--c", type=float, default=BET_TRUNCATION, help="bet truncation (tuning only)")
    args = ap.parse_args()
    global C
    C = args.c
    start = time.perf_counter()
    cols = [
        "revise@200",
        "ok@200",
        "revise any",
        "ok any",
        "agr revise any",
        "kappa revise any",
        "direction any",
        "wilson revise any",
    ]
    print(
        f"Flag error rates, {args.reps:,} runs per row, seed {args.seed}; looks every {STEP} claims "
        f"up to {MAX_CLAIMS}; bet truncation c = {C}; target {TARGET:.0%}, kappa floor {FLOOR}, "
        f"alpha {ALPHA}"
    )
    print(f"{'true agr':>8} {'skew':>8} " + " ".join(f"{c:>17}" for c in cols))
    for i, (p, skew) in enumerate((p, s) for s in (False, True) for p in (0.80, 0.85, 0.90, 0.95)):
        rng = np.random.default_rng([args.seed, i])
        res = simulate(p, skew, args.reps, rng)
        print(f"{p:>8.2f} {'lenient' if skew else 'none':>8} " + " ".join(f"{res[c]:>17.4f}" for c in cols))
    print(
        "targets: true 0.90 no skew 'revise any' <= 0.05; true 0.80 'ok any' <= 0.05; "
        "true 0.95 no skew 'ok@200' >= 0.80; 'direction any' with no skew = its false alarm rate"
    )
    print(f"elapsed {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
