"""Error rates of the flag read once at 200 claims and read after every 20 claims up to 200.

    python bench/sim_flag.py [--reps 10000] [--seed 11]

Synthetic runs: answers of 1-5 claims (uniform), each answer with its own agreement probability
p_i ~ Beta(p kappa, (1 - p) kappa) (intra-answer correlation 1 / (kappa + 1) = 0.2), claims' human
classes 60/10/30 (SUPPORTED/CONTRADICTED/UNSUPPORTED) where judge and human agree; disagreements
lenient (judge SUPPORTED, human not) / strict (the reverse) / neither (CONTRADICTED <-> UNSUPPORTED) in
shares 0.45/0.45/0.10 without skew and 0.75/0.15/0.10 with lenient skew.  Looks after the answer that
brings the claims to 20, 40, ..., 200.

The flag is the one the report computes (`report.py`: :func:`calibration.decisions.decide` over
`agreement_rule`, `direction_rule` and `kappa_rule`), on random samples: revise if the agreement
confidence sequence's upper bound < 85%, or the design-based kappa's 95% upper bound < 0.60 (its
linearised interval, withheld below 15 answers or 5 minority claims, so it cannot fire there), or
the direction rule fires; ok if the lower bound >= 85% and nothing fired.  Both betting rules are
claim-level, as the report's: each answer's bet is scaled by its claims over the most claims of an
answer so far, so the sequences test sum y / sum m.  The rules are evaluated on all replicates at
once with the module's own capital and bet functions; before the table, the first replicates of
every row are checked look by look against the report's own functions (`_check`), so the
vectorised copy cannot drift from the shipped rule.  For contrast, "wilson revise any" is the old
fixed-sample rule's agreement part (Wilson 95% upper < target) read at every look.

Prints a table; asserts nothing about the figures.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy.special import stdtrit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibration import decisions, estimation  # noqa: E402
from calibration.decisions import BET_TRUNCATION, log_capital, plugin_bets  # noqa: E402

TARGET, FLOOR, ALPHA = 0.85, 0.60, 0.05
MAX_CLAIMS, STEP, M_MAX = 200, 20, 5
C = BET_TRUNCATION
ICC_KAPPA = 4.0  # Beta concentration: intra-answer correlation 1 / (4 + 1) = 0.2
MIX = np.array([0.6, 0.1, 0.3])
# Off-diagonal cells (human, judge) in LABELS order S=0, C=1, U=2.
LENIENT_CELLS = [(1, 0, 0.25), (2, 0, 0.75)]
STRICT_CELLS = [(0, 1, 0.25), (0, 2, 0.75)]
NEITHER_CELLS = [(1, 2, 0.5), (2, 1, 0.5)]


def _draw(p: float, skew: bool, reps: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Claims per answer m (reps, answers) and each answer's 3x3 table (reps, answers, 9),
    cells human * 3 + judge."""
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
    return m, cells


def _claim_level_capital(
    u: np.ndarray, m: np.ndarray, theta: float, alpha: float, side: str, top: np.ndarray, looks: np.ndarray
) -> np.ndarray:
    """max over t <= look of the log capital, each answer's bet scaled by m_i / (the most claims
    of an answer up to the look): what `decisions.confidence_sequence(claim_level=True)` computes
    at every look, (reps, looks)."""
    bets = plugin_bets(u, alpha=alpha)
    rows = np.arange(u.shape[0])[:, None]
    out = np.full(looks.shape, -np.inf)
    for biggest in range(1, M_MAX + 1):
        # A scale above 1 (an answer bigger than `biggest`) is never read: those looks have a larger top.
        with np.errstate(invalid="ignore", divide="ignore"):
            cap = log_capital(u, theta, bets, side=side, scale=m / biggest, c=C)  # type: ignore[arg-type]
        best = np.maximum.accumulate(cap, axis=-1)[rows, looks]
        out = np.where(top == biggest, best, out)
    return out


def _kappa_high(cells: np.ndarray, n_at: np.ndarray) -> np.ndarray:
    """The upper end of the report's kappa interval (`estimation.kappa_estimate`, one stratum, no
    fpc: linearised, t with n - 1 df) over the first n_at answers, NaN where it is withheld or
    kappa is undefined; (reps, looks)."""
    reps, n_ans, _ = cells.shape
    out = np.full(n_at.shape, np.nan)
    m_i = cells.sum(axis=-1)
    for k in range(n_at.shape[1]):
        n = n_at[:, k]
        on = (np.arange(n_ans)[None, :] < n[:, None]).astype(float)
        t_i = cells * on[..., None]
        total = t_i.sum(axis=1).reshape(reps, 3, 3)
        x = total.sum(axis=(1, 2))
        prob = total / x[:, None, None]
        r, c = prob.sum(axis=2), prob.sum(axis=1)  # human (rows), judge (columns) margins
        po = np.trace(prob, axis1=1, axis2=2)
        pe = (r * c).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            kappa = (po - pe) / (1 - pe)
            g = (np.eye(3)[None] - (c[:, :, None] + r[:, None, :]) * (1 - kappa)[:, None, None]) / (1 - pe)[
                :, None, None
            ]
            u = (
                (t_i - m_i[..., None] * on[..., None] * prob.reshape(reps, 1, 9)) * g.reshape(reps, 1, 9)
            ).sum(axis=-1) / x[:, None]
            ubar = u.sum(axis=1) / n
            var = n / (n - 1) * (((u - ubar[:, None]) ** 2) * on).sum(axis=1)
            high = np.minimum(1.0, kappa + stdtrit(n - 1, 0.975) * np.sqrt(var))
        minority = np.minimum(x - total.sum(axis=2).max(axis=1), x - total.sum(axis=1).max(axis=1))
        held = (n < estimation.MIN_KAPPA_ANSWERS) | (minority < estimation.MIN_MINORITY_CLAIMS)
        out[:, k] = np.where(held | ~np.isfinite(kappa) | (1 - pe <= 1e-12), np.nan, high)
    return out


def _flags(m: np.ndarray, cells: np.ndarray) -> dict[str, np.ndarray]:
    """The flag's parts at every look, (reps, looks) booleans, as `report.py` computes them."""
    reps = m.shape[0]
    y = cells[..., [0, 4, 8]].sum(axis=-1)
    lenient = cells[..., 3] + cells[..., 6]
    strict = cells[..., 1] + cells[..., 2]
    # Look k: the first answer at which the cumulative claims reach 20 k.
    cum = np.cumsum(m, axis=1)
    looks = np.stack([(cum < k * STEP).sum(axis=1) for k in range(1, MAX_CLAIMS // STEP + 1)], axis=1)
    rows = np.arange(reps)[:, None]
    top = np.maximum.accumulate(m, axis=1)[rows, looks]
    goal, goal_d = math.log(1 / ALPHA), math.log(2 / ALPHA)
    rate = y / m
    revise_a = _claim_level_capital(rate, m, TARGET, ALPHA, "below", top, looks) >= goal
    ok_a = _claim_level_capital(rate, m, TARGET, ALPHA, "above", top, looks) >= goal
    # The direction rule on [-1, 1] mapped to [0, 1]: u = (d/m + 1)/2, tested at 1/2, alpha/2 a side.
    du = ((lenient - strict) / m + 1) / 2
    direction = (_claim_level_capital(du, m, 0.5, ALPHA / 2, "above", top, looks) >= goal_d) | (
        _claim_level_capital(du, m, 0.5, ALPHA / 2, "below", top, looks) >= goal_d
    )
    high = _kappa_high(cells, looks + 1)
    kappa_rev = np.isfinite(high) & (high < FLOOR)
    revise = revise_a | kappa_rev | direction

    # The old fixed-sample agreement rule at every look: Wilson 95% upper bound < target.
    x = np.cumsum(y, axis=1)[rows, looks].astype(float)
    n = cum[rows, looks].astype(float)
    z = estimation.z_value(0.95)
    ph = x / n
    centre = (ph + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(ph * (1 - ph) / n + z * z / (4 * n * n))
    return {
        "looks": looks,
        "revise": revise,
        "ok": ok_a & ~revise,
        "agreement": revise_a,
        "kappa": kappa_rev,
        "direction": direction,
        "wilson": centre + half < TARGET,
    }


def _check(m: np.ndarray, cells: np.ndarray, flags: dict[str, np.ndarray]) -> None:
    """The vectorised flag equals the report's rules (decisions.py, estimation.kappa_estimate) at
    every look of these replicates; a difference stops the run."""
    for r in range(m.shape[0]):
        for k, last in enumerate(flags["looks"][r]):
            mm, tab = m[r, : last + 1].astype(float), cells[r, : last + 1]
            ys = tab[:, [0, 4, 8]].sum(axis=1)
            ds = tab[:, 3] + tab[:, 6] - tab[:, 1] - tab[:, 2]
            ar = decisions.agreement_rule(ys, mm, TARGET, alpha=ALPHA, claim_level=True)
            dr = decisions.direction_rule(ds, mm, alpha=ALPHA, claim_level=True)
            ek = estimation.kappa_estimate(tab.reshape(-1, 3, 3), population=10**6, fpc=False)
            kr = decisions.kappa_rule(ek.value, ek.ci_high, FLOOR)
            shipped = decisions.decide(ar, dr, kr)
            mine = "revise" if flags["revise"][r, k] else "ok" if flags["ok"][r, k] else "inconclusive"
            parts = (ar.status == "revise", kr.status == "revise", dr.status in ("lenient", "strict"))
            ours = (flags["agreement"][r, k], flags["kappa"][r, k], flags["direction"][r, k])
            if shipped.status != mine or parts != ours:
                sys.exit(
                    f"sim_flag: replicate {r}, look {k}: the report says {shipped.status} {parts}, "
                    f"this copy {mine} {ours}"
                )


def simulate(p: float, skew: bool, reps: int, rng: np.random.Generator, check: int = 0) -> dict[str, float]:
    m, cells = _draw(p, skew, reps, rng)
    f = _flags(m, cells)
    if check:
        _check(m[:check], cells[:check], {k: v[:check] for k, v in f.items()})
    revise, ok = f["revise"], f["ok"]
    return {
        "revise@200": revise[:, -1].mean(),
        "ok@200": ok[:, -1].mean(),
        "revise any": revise.any(axis=1).mean(),
        "ok any": ok.any(axis=1).mean(),
        "agr revise any": f["agreement"].any(axis=1).mean(),
        "kappa revise any": f["kappa"].any(axis=1).mean(),
        "direction any": f["direction"].any(axis=1).mean(),
        "wilson revise any": f["wilson"].any(axis=1).mean(),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--c", type=float, default=BET_TRUNCATION, help="bet truncation (tuning only)")
    ap.add_argument(
        "--check", type=int, default=40, help="replicates per row checked against the report's rules"
    )
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
        res = simulate(p, skew, args.reps, rng, check=args.check if C == BET_TRUNCATION else 0)
        print(f"{p:>8.2f} {'lenient' if skew else 'none':>8} " + " ".join(f"{res[c]:>17.4f}" for c in cols))
    print(
        "targets: true 0.90 no skew 'revise any' <= 0.05; true 0.80 'ok any' <= 0.05; "
        "true 0.95 no skew 'ok@200' >= 0.80; 'direction any' with no skew = its false alarm rate"
    )
    print(f"elapsed {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    from figures import recorded  # bench/ is the script's folder

    with recorded(__file__):
        main()
