"""Sampling designs for calibration cycles: pure, seeded, reproducible.

Every strategy takes the eligible pool, the sample size `n` and a seed, and returns a
`Sample`: the chosen answer ids in a fixed order and, for each, its first-order
inclusion probability pi_i = P(answer i is in the sample) under the design. Those
probabilities are exact for the design as run here, so agreement measured on the
sample can be re-weighted to the whole pool (Horvitz-Thompson: an answer counts
1 / pi_i times); they always satisfy sum over the pool of pi_i = n.

Reproducibility: the pool is sorted by answer id before any draw and the only source
of randomness is `numpy.random.Generator(PCG64(seed))`, so the same pool and the same
seed give the same sample. PCG64's bit stream is fixed; `Generator.permutation`, the
one method used, could in principle change between numpy releases, so the promise is
for the same numpy version.

Designs (N = pool size, n = sample size):

- random: simple random sampling without replacement; pi_i = n / N.
- stratified: strata are the answers' categories (None is its own stratum). The
  allocation n_h is proportional to N_h by largest remainder, with every stratum given
  at least one answer when n >= number of strata; then SRS of n_h within each stratum;
  pi_i = n_h / N_h for i in stratum h.
- failures-first: two strata, "failing" (at least one non-SUPPORTED judge verdict) and
  "passing". The failing stratum gets n_F = max(ceil(share * n), its proportional
  share) slots, capped at N_F; the passing stratum keeps at least one slot when it has
  answers (so pi_i > 0 everywhere and re-weighting to the whole run stays possible),
  and any slot one stratum cannot fill goes to the other. SRS within each;
  pi_i = n_F / N_F or n_P / N_P. The queue order is shuffled (see below).
- planned: strata given with the pool (`PoolAnswer.stratum`, chosen by `calibration.planning`),
  each with a spread S_h; Neyman allocation n_h proportional to N_h * S_h with a floor and a
  cap, completing the labels of earlier cycles (`neyman_allocate`), SRS within each stratum,
  the queue shuffled; pi_i = n_h / N_h.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .fmt import plural

STRATEGIES: tuple[str, ...] = ("random", "stratified", "failures-first", "planned")
FAILING, PASSING = "failing", "passing"
DEFAULT_FAILING_SHARE = 0.5
# The planned design's floor: no answer of the pool is less likely to be drawn than this share
# of the proportional rate n / N, so design-based estimates stay unbiased with bounded weights.
PLANNED_FLOOR = 0.2


@dataclass(frozen=True, slots=True)
class PoolAnswer:
    """One eligible answer as the designs see it."""

    answer_id: str
    category: str | None = None
    failing: bool = False  # the judge gave at least one non-SUPPORTED verdict
    stratum: str | None = None  # the planned design's stratum (`calibration.planning`)


@dataclass(frozen=True, slots=True)
class Stratum:
    """One stratum of a design: its name, population N_h, sample n_h and pi = n_h / N_h."""

    name: str | None
    population: int
    sampled: int

    @property
    def prob(self) -> float:
        return self.sampled / self.population if self.population else 0.0


@dataclass(frozen=True, slots=True)
class Sample:
    strategy: str
    seed: int
    answer_ids: tuple[str, ...]
    inclusion_probs: tuple[float, ...]  # aligned with answer_ids
    strata: tuple[Stratum, ...]

    @property
    def size(self) -> int:
        return len(self.answer_ids)


def rng_for(seed: int) -> np.random.Generator:
    if seed < 0:
        raise ValueError("seed must be a non-negative integer")
    return np.random.Generator(np.random.PCG64(seed))


def _sorted_pool(pool: Iterable[PoolAnswer]) -> list[PoolAnswer]:
    items = sorted(pool, key=lambda a: a.answer_id)
    ids = [a.answer_id for a in items]
    if len(set(ids)) != len(ids):
        raise ValueError("the pool lists an answer twice")
    return items


def _check_size(n: int, population: int) -> None:
    if population == 0:
        raise ValueError("the pool is empty")
    if not 1 <= n <= population:
        raise ValueError(f"sample size must be between 1 and the pool size {population}, got {n}")


def _srs(rng: np.random.Generator, items: Sequence[PoolAnswer], n: int) -> list[str]:
    """n items without replacement, in draw order."""
    return [items[i].answer_id for i in rng.permutation(len(items))[:n]]


def random_sample(pool: Iterable[PoolAnswer], n: int, seed: int) -> Sample:
    """Simple random sample without replacement: pi_i = n / N for every answer."""
    items = _sorted_pool(pool)
    _check_size(n, len(items))
    chosen = _srs(rng_for(seed), items, n)
    stratum = Stratum(None, len(items), n)
    return Sample("random", seed, tuple(chosen), (stratum.prob,) * n, (stratum,))


def allocate(sizes: Mapping[str | None, int], n: int, *, at_least_one: bool = True) -> dict[str | None, int]:
    """Proportional allocation of n over strata of the given sizes, largest remainder.

    Quotas q_h = n * N_h / N. Each stratum starts at floor(q_h), raised to 1 when
    `at_least_one` and n >= number of strata; then single slots go to the strata with
    the largest remainder q_h - n_h (or are taken back from the smallest remainder when
    the minimum of one over-allocated), never beyond N_h. Ties go to the stratum that
    sorts first, so the allocation is deterministic.
    """
    total = sum(sizes.values())
    if not 1 <= n <= total:
        raise ValueError(f"sample size must be between 1 and the pool size {total}, got {n}")
    keys = sorted(sizes, key=_stratum_key)
    quota = {h: n * sizes[h] / total for h in keys}
    floor_one = at_least_one and n >= sum(1 for h in keys if sizes[h])
    alloc = {h: min(sizes[h], max(math.floor(quota[h]), int(floor_one and sizes[h] > 0))) for h in keys}
    while (short := n - sum(alloc.values())) != 0:
        if short > 0:
            open_ = [h for h in keys if alloc[h] < sizes[h]]
            h = max(open_, key=lambda h: quota[h] - alloc[h])  # max keeps the first on ties
            alloc[h] += 1
        else:
            floor = 1 if floor_one else 0
            open_ = [h for h in keys if alloc[h] > floor]
            h = min(open_, key=lambda h: quota[h] - alloc[h])
            alloc[h] -= 1
    return alloc


def _stratum_key(h: str | None) -> tuple[bool, str]:
    return (h is not None, h or "")


def stratified_sample(pool: Iterable[PoolAnswer], n: int, seed: int) -> Sample:
    """Proportional stratified sample by category: pi_i = n_h / N_h (see `allocate`).

    The strata are drawn in sorted order from one generator; the combined sample is
    then shuffled with the same generator, so a reviewer who stops early has still seen
    a mix of categories.
    """
    items = _sorted_pool(pool)
    _check_size(n, len(items))
    groups: dict[str | None, list[PoolAnswer]] = {}
    for a in items:
        groups.setdefault(a.category, []).append(a)
    alloc = allocate({h: len(g) for h, g in groups.items()}, n)
    rng = rng_for(seed)
    strata = tuple(Stratum(h, len(groups[h]), alloc[h]) for h in sorted(groups, key=_stratum_key))
    prob_of: dict[str, float] = {}
    for s in strata:
        for aid in _srs(rng, groups[s.name], s.sampled):
            prob_of[aid] = s.prob
    chosen = list(prob_of)
    order = rng.permutation(len(chosen))
    ids = tuple(chosen[i] for i in order)
    return Sample("stratified", seed, ids, tuple(prob_of[a] for a in ids), strata)


def failures_first_allocation(
    n_failing: int, n_passing: int, n: int, share: float = DEFAULT_FAILING_SHARE
) -> tuple[int, int]:
    """(n_F, n_P) for the failures-first design; see the module docstring."""
    total = n_failing + n_passing
    if not 1 <= n <= total:
        raise ValueError(f"sample size must be between 1 and the pool size {total}, got {n}")
    if not 0 <= share <= 1:
        raise ValueError("failing share must be between 0 and 1")
    n_f = max(math.ceil(share * n), math.ceil(n * n_failing / total))
    if n_passing and n >= 2:
        n_f = min(n_f, n - 1)  # keep one passing answer: pi > 0 for every answer
    n_f = min(n_f, n_failing)
    n_f = max(n_f, n - n_passing)  # the passing stratum cannot fill its slots
    return n_f, n - n_f


def failures_first_sample(
    pool: Iterable[PoolAnswer], n: int, seed: int, share: float = DEFAULT_FAILING_SHARE
) -> Sample:
    """Oversample failing answers, fill the rest at random: pi = n_F / N_F or n_P / N_P."""
    items = _sorted_pool(pool)
    _check_size(n, len(items))
    failing = [a for a in items if a.failing]
    passing = [a for a in items if not a.failing]
    n_f, n_p = failures_first_allocation(len(failing), len(passing), n, share)
    rng = rng_for(seed)
    s_f = Stratum(FAILING, len(failing), n_f)
    s_p = Stratum(PASSING, len(passing), n_p)
    chosen = _srs(rng, failing, n_f) + _srs(rng, passing, n_p)
    probs = [s_f.prob] * n_f + [s_p.prob] * n_p
    # Reviewers work in queue order, and the flag's sequential rules assume labels arrive in
    # an order unrelated to their outcome: failing answers first would feed them every judge
    # error at once. So the queue is shuffled, as in the other designs.
    order = rng.permutation(len(chosen)).tolist()
    return Sample(
        "failures-first", seed, tuple(chosen[i] for i in order), tuple(probs[i] for i in order), (s_f, s_p)
    )


def floor_sizes(sizes: Mapping[str, int], n: int, floor_share: float = PLANNED_FLOOR) -> dict[str, int]:
    """lo_h = min(N_h, max(1, ceil(floor_share * n * N_h / N))): the planned design's least n_h."""
    total = sum(sizes.values())
    return {
        h: min(sizes[h], max(1, math.ceil(floor_share * n * sizes[h] / total - 1e-9)))
        for h in sorted(h for h in sizes if sizes[h] > 0)
    }


def neyman_allocate(
    sizes: Mapping[str, int],
    spread: Mapping[str, float],
    n: int,
    floor_share: float = PLANNED_FLOOR,
    *,
    labeled: Mapping[str, int] | None = None,
    population: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Neyman allocation of n over strata with a floor: n_h proportional to N_h * S_h.

    Neyman (1934), JRSS 97:558; Cochran, Sampling Techniques (3rd ed., 1977), sec. 5.5: for a
    stratified estimate of a total, V = sum_h N_h^2 (1 - n_h / N_h) S_h^2 / n_h is smallest at
    fixed n for n_h = n N_h S_h / sum_k N_k S_k.  Here with bounds lo_h <= n_h <= N_h,
    lo_h = max(1, ceil(floor_share * n * N_h / N)), so pi_h = n_h / N_h >= floor_share * n / N
    and no answer is impossible to draw: the continuous quotas are q_h = clip(c N_h S_h, lo_h, N_h)
    with c chosen so that sum q_h = n (Neyman allocation capped at N_h, Cochran 1977, ch. 5), then
    rounded by largest remainder within the bounds.  When every S_h is equal (nothing measured
    yet) it is exactly the proportional allocation of the stratified design (`allocate`).

    A later cycle completes the labels already there: with n0_h answers of stratum h labeled
    before (`labeled`) and P_h answers of it in the run (`population`; default N_h + n0_h, N_h
    the pool's), the cycle minimises the variance after it, sum_h P_h^2 S_h^2 / (n0_h + n_h),
    so the quotas are q_h = clip(c P_h S_h - n0_h, lo_h, N_h): the Lagrange condition
    S_h^2 P_h^2 / (n0_h + n_h)^2 = const with its box constraints (Gabler, Ganninger & Münnich
    2012, "Optimal allocation of the sample size to strata under box constraints", Metrika
    75:151).  Strata the earlier labels over-served get their floor, and the run's labels after
    the cycle are the Neyman allocation of all of them wherever the bounds allow.
    """
    keys = sorted(h for h in sizes if sizes[h] > 0)
    total = sum(sizes[h] for h in keys)
    if not 1 <= n <= total:
        raise ValueError(f"sample size must be between 1 and the pool size {total}, got {n}")
    if len(keys) > n:
        raise ValueError(f"{len(keys)} strata for {n} slots: every stratum needs at least one")
    if any(not math.isfinite(spread[h]) or spread[h] < 0 for h in keys):
        raise ValueError("spreads must be finite and non-negative")
    before = {h: (labeled or {}).get(h, 0) for h in keys}
    if len({spread[h] for h in keys}) <= 1 and not any(before.values()):
        out = allocate({h: sizes[h] for h in keys}, n)
        return {h: out[h] for h in keys}
    lo = floor_sizes(sizes, n, floor_share)
    if sum(lo.values()) > n:
        raise ValueError("the floor takes more slots than the sample has")

    big = np.array([sizes[h] for h in keys], dtype=float)
    least = np.array([lo[h] for h in keys], dtype=float)
    whole = np.array([(population or {}).get(h, sizes[h] + before[h]) for h in keys], dtype=float)
    weight = whole * np.array([spread[h] for h in keys], dtype=float)
    done = np.array([before[h] for h in keys], dtype=float)

    def quotas(c: float) -> np.ndarray:
        return np.asarray(np.minimum(big, np.maximum(least, c * weight - done)))

    low, high = 0.0, 1.0
    while quotas(high).sum() < n and high < 1e18:
        high *= 2
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if quotas(mid).sum() < n else (low, mid)
    quota = dict(zip(keys, quotas(high).tolist(), strict=True))
    alloc = {h: max(lo[h], min(sizes[h], math.floor(quota[h]))) for h in keys}
    while (short := n - sum(alloc.values())) != 0:
        if short > 0:
            h = max((h for h in keys if alloc[h] < sizes[h]), key=lambda h: quota[h] - alloc[h])
            alloc[h] += 1
        else:
            h = min((h for h in keys if alloc[h] > lo[h]), key=lambda h: quota[h] - alloc[h])
            alloc[h] -= 1
    return alloc


def planned_sample(
    pool: Iterable[PoolAnswer],
    n: int,
    seed: int,
    spread: Mapping[str, float] | None = None,
    floor_share: float = PLANNED_FLOOR,
    *,
    allocation: Mapping[str, int] | None = None,
) -> Sample:
    """The planned design: Neyman allocation over the pool's strata (`neyman_allocate`), or the
    plan's `allocation` n_h when given (`planning.Plan.allocation`, which also counts the labels
    before the cycle), SRS in each, the queue shuffled as in the stratified design; pi_i = n_h / N_h.

    An answer without a planned stratum stands in its category's, and `spread` None is one
    spread for all: then the draw is the stratified design's, answer for answer.
    """
    items = _sorted_pool(pool)
    _check_size(n, len(items))
    groups: dict[str, list[PoolAnswer]] = {}
    for a in items:
        groups.setdefault(a.stratum if a.stratum is not None else a.category or "", []).append(a)
    if spread is None:
        spread = dict.fromkeys(groups, 1.0)
    if missing := sorted(set(groups) - set(spread)):
        raise ValueError(f"no spread for strata: {', '.join(missing)}")
    if allocation is not None:
        alloc = {h: allocation.get(h, 0) for h in groups}
        if sum(alloc.values()) != n or any(not 0 <= alloc[h] <= len(groups[h]) for h in groups):
            raise ValueError(f"the allocation must give each stratum between 0 and its size, {n} in all")
    else:
        alloc = neyman_allocate({h: len(g) for h, g in groups.items()}, spread, n, floor_share)
    rng = rng_for(seed)
    strata = tuple(Stratum(h, len(groups[h]), alloc[h]) for h in sorted(groups))
    prob_of: dict[str, float] = {}
    for s in strata:
        for aid in _srs(rng, groups[str(s.name)], s.sampled):
            prob_of[aid] = s.prob
    chosen = list(prob_of)
    order = rng.permutation(len(chosen))
    ids = tuple(chosen[i] for i in order)
    return Sample("planned", seed, ids, tuple(prob_of[a] for a in ids), strata)


def draw(
    strategy: str,
    pool: Iterable[PoolAnswer],
    n: int,
    seed: int,
    failing_share: float = DEFAULT_FAILING_SHARE,
    spread: Mapping[str, float] | None = None,
    allocation: Mapping[str, int] | None = None,
) -> Sample:
    """Run the named strategy (`failing_share` is read by failures-first only, `spread` and
    `allocation` by planned)."""
    match strategy:
        case "random":
            return random_sample(pool, n, seed)
        case "stratified":
            return stratified_sample(pool, n, seed)
        case "failures-first":
            return failures_first_sample(pool, n, seed, failing_share)
        case "planned":
            return planned_sample(pool, n, seed, spread, allocation=allocation)
    raise ValueError(f"unknown strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")


# ---------------------------------------------------------------- what a design did

# Below this ratio of inclusion probabilities (failing / passing) failures-first is
# effectively a proportional sample, and the lead should know it.
MIN_OVERSAMPLING = 1.2


def oversampling_factor(sample: Sample) -> float | None:
    """How many times likelier a failing answer is drawn than a passing one (failures-first).

    None for other designs, or when a stratum is empty (nothing to compare).
    """
    if sample.strategy != "failures-first":
        return None
    fail, ok = sample.strata
    if not fail.population or not ok.population or not ok.prob:
        return None
    return fail.prob / ok.prob


def describe(sample: Sample) -> tuple[list[str], list[str]]:
    """(notes, warnings) stating what the design did, for the lead who created the cycle.

    failures-first: how the slots split between the strata and their inclusion
    probabilities, and a warning when failing answers are hardly oversampled (a ratio of
    probabilities under MIN_OVERSAMPLING), e.g. because they are already the majority.
    """
    if sample.strategy != "failures-first":
        return [], []
    fail, ok = sample.strata
    # Plain words, not inclusion probabilities: how much likelier a failing answer was drawn.
    ratio = oversampling_factor(sample)
    drawn = "" if ratio is None else f"; answers with a failing verdict were drawn {ratio:.1f}× as often"
    notes = [
        f"failing answers: {fail.sampled} of {plural(sample.size, 'slot')}, passing {ok.sampled}"
        f"{drawn}; figures are re-weighted"
    ]
    pool = fail.population + ok.population
    if not fail.population:
        return notes, [
            "no eligible answer has a non-SUPPORTED verdict: failures-first drew a plain random sample"
        ]
    if not ok.population:
        return notes, ["every eligible answer is failing: there is nothing to oversample them against"]
    factor = oversampling_factor(sample)
    if factor is None or factor >= MIN_OVERSAMPLING:
        return notes, []
    if 2 * fail.population > pool:
        why = f"failures are already the majority ({fail.population} of {pool} eligible answers)"
    else:
        why = (
            f"failures already make up {fail.population / pool:.0%} of the eligible answers "
            f"({fail.population} of {pool})"
        )
    return notes, [
        f"hardly oversampled: {why}, so a failing answer is only {factor:.2f}× as likely "
        "to be drawn as a passing one; raise the failing share to oversample them"
    ]
