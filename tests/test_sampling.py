from __future__ import annotations

import random
from collections import Counter

import pytest

from calibration import sampling
from calibration.sampling import PoolAnswer


def make_pool(sizes: dict[str | None, int], failing: int = 0) -> list[PoolAnswer]:
    """Answers a000, a001, ... grouped by category; the first `failing` ones are failing."""
    out: list[PoolAnswer] = []
    for category, n in sizes.items():
        for _ in range(n):
            i = len(out)
            out.append(PoolAnswer(f"a{i:03d}", category, i < failing))
    return out


@pytest.fixture
def pool_of_40() -> list[PoolAnswer]:
    """40 answers in three categories (20/12/8); the first 6 are failing."""
    return make_pool({"cat-a": 20, "cat-b": 12, "cat-c": 8}, failing=6)


@pytest.mark.parametrize("strategy", sampling.STRATEGIES)
def test_same_seed_same_sample_whatever_the_pool_order(strategy: str, pool_of_40: list[PoolAnswer]) -> None:
    first = sampling.draw(strategy, pool_of_40, 20, seed=11)
    shuffled = pool_of_40[:]
    random.Random(3).shuffle(shuffled)
    again = sampling.draw(strategy, shuffled, 20, seed=11)
    assert again == first
    assert len(set(first.answer_ids)) == 20


@pytest.mark.parametrize("strategy", sampling.STRATEGIES)
def test_different_seeds_give_different_samples(strategy: str, pool_of_40: list[PoolAnswer]) -> None:
    samples = {sampling.draw(strategy, pool_of_40, 20, seed=s).answer_ids for s in range(5)}
    assert len(samples) == 5


@pytest.mark.parametrize("strategy", sampling.STRATEGIES)
def test_inclusion_probabilities_sum_to_the_sample_size(strategy: str, pool_of_40: list[PoolAnswer]) -> None:
    sample = sampling.draw(strategy, pool_of_40, 17, seed=2)
    # Over the population: every answer of stratum h has pi = n_h / N_h.
    assert sum(s.population * s.prob for s in sample.strata) == pytest.approx(17)
    assert sum(s.sampled for s in sample.strata) == 17
    assert len(sample.inclusion_probs) == sample.size == 17


def test_random_gives_every_answer_n_over_N(pool_of_40: list[PoolAnswer]) -> None:
    sample = sampling.random_sample(pool_of_40, 20, seed=5)
    assert set(sample.inclusion_probs) == {0.5}


def test_stratified_shares_match_the_categories(pool_of_40: list[PoolAnswer]) -> None:
    sample = sampling.stratified_sample(pool_of_40, 20, seed=4)
    category = {a.answer_id: a.category for a in pool_of_40}
    drawn = Counter(category[a] for a in sample.answer_ids)
    assert drawn == {"cat-a": 10, "cat-b": 6, "cat-c": 4}
    for aid, prob in zip(sample.answer_ids, sample.inclusion_probs, strict=True):
        assert prob == pytest.approx({"cat-a": 10 / 20, "cat-b": 6 / 12, "cat-c": 4 / 8}[category[aid]])


def test_stratified_gives_every_category_one_where_size_allows() -> None:
    pool = make_pool({"big": 90, "mid": 9, "tiny": 1, None: 2})
    sample = sampling.stratified_sample(pool, 15, seed=0)
    assert {s.name: s.sampled for s in sample.strata} == {None: 1, "big": 12, "mid": 1, "tiny": 1}
    assert {s.name: s.prob for s in sample.strata}["tiny"] == 1.0


def test_allocation_is_largest_remainder() -> None:
    # Quotas 4.5, 3.3, 2.2 -> floors 4, 3, 2; the one slot left goes to the largest remainder.
    assert sampling.allocate({"a": 45, "b": 33, "c": 22}, 10) == {"a": 5, "b": 3, "c": 2}
    # Fewer slots than strata: pure proportional, the smallest stratum gets none.
    assert sampling.allocate({"a": 50, "b": 30, "c": 20}, 2) == {"a": 1, "b": 1, "c": 0}


def test_failures_first_takes_every_failing_answer_in_a_shuffled_queue(pool_of_40: list[PoolAnswer]) -> None:
    sample = sampling.failures_first_sample(pool_of_40, 20, seed=8)
    failing = {a.answer_id for a in pool_of_40 if a.failing}
    assert failing <= set(sample.answer_ids)  # all six failing
    prob = dict(zip(sample.answer_ids, sample.inclusion_probs, strict=True))
    assert [prob[a] for a in failing] == [1.0] * 6
    assert [p for a, p in prob.items() if a not in failing] == pytest.approx([14 / 34] * 14)
    # Not failing first: the sequential flag must not see every judge error at once.
    positions = sorted(sample.answer_ids.index(a) for a in failing)
    assert positions != list(range(6))


def test_failures_first_oversamples_and_keeps_every_pi_positive() -> None:
    # 80% failing: the passing stratum still gets one slot, so re-weighting stays possible.
    assert sampling.failures_first_allocation(99, 1, 20) == (19, 1)
    # Failing are rare: they get half the sample, far above their 10% share.
    assert sampling.failures_first_allocation(30, 270, 20) == (10, 10)
    # Not enough failing answers, or none at all: the passing stratum fills the rest.
    assert sampling.failures_first_allocation(3, 97, 20) == (3, 17)
    assert sampling.failures_first_allocation(0, 40, 20) == (0, 20)
    assert sampling.failures_first_allocation(40, 0, 20) == (20, 0)


def test_failures_first_probabilities_match_the_design() -> None:
    # 25 failing, 15 passing, n = 20: n_F = max(ceil(10), ceil(12.5)) = 13, n_P = 7.
    pool = make_pool({"x": 40}, failing=25)
    first = sampling.failures_first_sample(pool, 20, seed=0)
    expected = {s.name: s.prob for s in first.strata}
    assert expected == pytest.approx({"failing": 13 / 25, "passing": 7 / 15})
    # The recorded pi is what the design does: inclusion frequencies over many seeds.
    runs = 3000
    hits: Counter[str] = Counter()
    for seed in range(runs):
        hits.update(sampling.failures_first_sample(pool, 20, seed).answer_ids)
    for a in pool:
        want = expected["failing" if a.failing else "passing"]
        assert hits[a.answer_id] / runs == pytest.approx(want, abs=0.04)


def test_bad_requests_are_refused(pool_of_40: list[PoolAnswer]) -> None:
    with pytest.raises(ValueError, match="empty"):
        sampling.random_sample([], 5, seed=1)
    with pytest.raises(ValueError, match="between 1 and"):
        sampling.stratified_sample(pool_of_40, 41, seed=1)
    with pytest.raises(ValueError, match="twice"):
        sampling.random_sample(pool_of_40 + pool_of_40[:1], 5, seed=1)
    with pytest.raises(ValueError, match="non-negative"):
        sampling.random_sample(pool_of_40, 5, seed=-1)
    with pytest.raises(ValueError, match="unknown strategy"):
        sampling.draw("cluster", pool_of_40, 5, seed=1)


def test_draw_passes_the_failing_share_to_failures_first() -> None:
    pool = make_pool({"x": 100}, failing=20)
    assert sampling.draw("failures-first", pool, 20, seed=1).strata[0].sampled == 10
    assert sampling.draw("failures-first", pool, 20, seed=1, failing_share=0.75).strata[0].sampled == 15
    # Other designs ignore it.
    assert sampling.draw("random", pool, 20, seed=1, failing_share=0.9) == sampling.draw(
        "random", pool, 20, seed=1
    )


def test_describe_states_the_split_and_warns_when_hardly_oversampled() -> None:
    rare = sampling.failures_first_sample(make_pool({"x": 100}, failing=20), 20, seed=0)
    assert sampling.describe(rare) == (
        [
            (
                "failing answers: 10 of 20 slots, passing 10; "
                "answers with a failing verdict were drawn 4.0× as often; figures are re-weighted"
            )
        ],
        [],
    )
    assert sampling.oversampling_factor(rare) == pytest.approx(0.5 / 0.125)
    # 63% failing (WiCE): the share of 0.5 is below their proportional share, so the
    # design is proportional in all but rounding.
    common = sampling.failures_first_sample(make_pool({"x": 100}, failing=63), 20, seed=0)
    notes, warnings = sampling.describe(common)
    assert notes == [
        (
            "failing answers: 13 of 20 slots, passing 7; "
            "answers with a failing verdict were drawn 1.1× as often; figures are re-weighted"
        )
    ]
    assert warnings == [
        "hardly oversampled: failures are already the majority (63 of 100 eligible "
        "answers), so a failing answer is only 1.09× as likely to be drawn as a "
        "passing one; raise the failing share to oversample them"
    ]
    # Not the majority, but already near the asked share.
    near = sampling.failures_first_sample(make_pool({"x": 100}, failing=48), 20, seed=0)
    assert sampling.describe(near)[1][0].startswith(
        "hardly oversampled: failures already make up 48% of the eligible answers (48 of 100)"
    )
    # A stratum without answers: nothing to compare.
    none = sampling.failures_first_sample(make_pool({"x": 30}), 20, seed=0)
    assert sampling.describe(none)[1] == [
        "no eligible answer has a non-SUPPORTED verdict: failures-first drew a plain random sample"
    ]
    assert sampling.oversampling_factor(none) is None
    every = sampling.failures_first_sample(make_pool({"x": 30}, failing=30), 20, seed=0)
    assert sampling.describe(every)[1][0].startswith("every eligible answer is failing")
    assert sampling.describe(sampling.random_sample(make_pool({"x": 30}), 20, seed=0)) == ([], [])


def test_plural() -> None:
    assert [sampling.plural(n, "answer") for n in (0, 1, 2)] == ["0 answers", "1 answer", "2 answers"]
    assert sampling.plural(1, "query", "queries") == "1 query"
    assert sampling.plural(3, "query", "queries") == "3 queries"


# ---------------------------------------------------------------- the planned design


def planned_pool(sizes: dict[str, int]) -> list[PoolAnswer]:
    """Answers p000, p001, ... in the given planned strata."""
    out: list[PoolAnswer] = []
    for stratum, n in sizes.items():
        out += [PoolAnswer(f"p{len(out) + i:03d}", None, False, stratum) for i in range(n)]
    return out


@pytest.mark.parametrize(
    ("sizes", "spread", "n", "want"),
    [
        # Neyman: n_h = n N_h S_h / sum N_k S_k = 20 * 150 / 200 and 20 * 50 / 200.
        ({"a": 50, "b": 50}, {"a": 3.0, "b": 1.0}, 20, {"a": 15, "b": 5}),
        # A spread 100 times larger: the floor ceil(0.2 * 20 * 50 / 100) = 2 holds b up.
        ({"a": 50, "b": 50}, {"a": 100.0, "b": 1.0}, 20, {"a": 18, "b": 2}),
        # A stratum with no measured spread still gets its floor.
        ({"a": 90, "b": 10}, {"a": 0.0, "b": 1.0}, 20, {"a": 10, "b": 10}),
        # The cap: a stratum cannot give more answers than it holds; the rest goes by N_h S_h.
        ({"a": 4, "b": 60, "c": 36}, {"a": 50.0, "b": 1.0, "c": 2.0}, 20, {"a": 4, "b": 7, "c": 9}),
    ],
)
def test_neyman_allocation_known_answers(
    sizes: dict[str, int], spread: dict[str, float], n: int, want: dict[str, int]
) -> None:
    assert sampling.neyman_allocate(sizes, spread, n) == want


@pytest.mark.parametrize("seed", range(40))
def test_planned_floor_holds_for_any_spreads(seed: int) -> None:
    rnd = random.Random(seed)
    sizes = {f"s{i}": rnd.randint(1, 80) for i in range(rnd.randint(1, 6))}
    spread = {h: rnd.choice([0.0, 1e-6, 0.3, 1.0, 50.0, 1e6]) for h in sizes}
    total = sum(sizes.values())
    n = rnd.randint(len(sizes), min(total, 40))
    alloc = sampling.neyman_allocate(sizes, spread, n)
    assert sum(alloc.values()) == n
    for h, n_h in alloc.items():
        assert 1 <= n_h <= sizes[h]
        # pi_h = n_h / N_h never below PLANNED_FLOOR times the proportional rate n / N.
        assert n_h / sizes[h] >= sampling.PLANNED_FLOOR * n / total - 1e-12


def test_planned_with_equal_spreads_is_the_stratified_design(pool_of_40: list[PoolAnswer]) -> None:
    # Nothing measured yet (one spread for all): the stratified draw, answer for answer.
    stratified = sampling.stratified_sample(pool_of_40, 20, seed=9)
    planned = sampling.draw("planned", pool_of_40, 20, seed=9)
    assert planned.answer_ids == stratified.answer_ids
    assert planned.inclusion_probs == stratified.inclusion_probs
    as_strata = [PoolAnswer(a.answer_id, None, False, a.category) for a in pool_of_40]
    same = sampling.planned_sample(as_strata, 20, seed=9, spread={"cat-a": 2.0, "cat-b": 2.0, "cat-c": 2.0})
    assert same.answer_ids == stratified.answer_ids
    sizes = {"x": 45, "y": 33, "z": 22}
    assert sampling.neyman_allocate(sizes, dict.fromkeys(sizes, 0.7), 10) == sampling.allocate(sizes, 10)


def test_planned_probabilities_match_the_design() -> None:
    pool = planned_pool({"judge-UNSUPPORTED": 12, "all-SUPPORTED": 48})
    spread = {"judge-UNSUPPORTED": 4.0, "all-SUPPORTED": 1.0}
    first = sampling.planned_sample(pool, 16, seed=0, spread=spread)
    # N_h S_h = 48 and 48: eight answers each.
    expected = {s.name: s.prob for s in first.strata}
    assert expected == pytest.approx({"judge-UNSUPPORTED": 8 / 12, "all-SUPPORTED": 8 / 48})
    stratum = {a.answer_id: a.stratum for a in pool}
    for aid, prob in zip(first.answer_ids, first.inclusion_probs, strict=True):
        assert prob == expected[stratum[aid]]
    # The recorded pi is what the design does: inclusion frequencies over many seeds.
    runs = 3000
    hits: Counter[str] = Counter()
    for seed in range(runs):
        hits.update(sampling.planned_sample(pool, 16, seed, spread).answer_ids)
    for a in pool:
        assert hits[a.answer_id] / runs == pytest.approx(expected[str(a.stratum)], abs=0.04)


def test_planned_refuses_more_strata_than_slots() -> None:
    with pytest.raises(ValueError, match="3 strata for 2 slots"):
        sampling.neyman_allocate({"a": 5, "b": 5, "c": 5}, {"a": 1.0, "b": 2.0, "c": 3.0}, 2)
    with pytest.raises(ValueError, match="no spread for strata: b"):
        sampling.planned_sample(planned_pool({"a": 5, "b": 5}), 4, seed=0, spread={"a": 1.0})


def _variance_after(
    population: dict[str, int], spread: dict[str, float], labeled: dict[str, int], alloc: dict[str, int]
) -> float:
    """sum_h P_h^2 S_h^2 / (n0_h + n_h): the stratified variance (no fpc) after the cycle."""
    return sum(population[h] ** 2 * spread[h] ** 2 / (labeled[h] + alloc[h]) for h in population)


def _greedy_allocation(
    pool: dict[str, int],
    lo: dict[str, int],
    population: dict[str, int],
    spread: dict[str, float],
    labeled: dict[str, int],
    n: int,
) -> dict[str, int]:
    """The integer optimum of the separable convex variance above, independently: from the
    floors, each slot goes to the stratum whose next answer lowers it most (marginal
    allocation, exact for a separable convex objective: Fox 1966, Management Science 13:210)."""
    alloc = dict(lo)
    for _ in range(n - sum(lo.values())):

        def gain(h: str) -> float:
            a = population[h] ** 2 * spread[h] ** 2
            return a / (labeled[h] + alloc[h]) - a / (labeled[h] + alloc[h] + 1)

        h = max((h for h in pool if alloc[h] < pool[h]), key=gain)
        alloc[h] += 1
    return alloc


@pytest.mark.parametrize("seed", range(30))
def test_neyman_allocation_completes_earlier_labels_as_the_integer_optimum(seed: int) -> None:
    rnd = random.Random(seed)
    population = {f"s{i}": rnd.randint(10, 200) for i in range(rnd.randint(2, 6))}
    labeled = {h: rnd.randint(0, p // 3) for h, p in population.items()}
    pool = {h: population[h] - labeled[h] for h in population}
    spread = {h: rnd.choice([0.1, 0.3, 1.0, 2.5]) for h in population}
    n = rnd.randint(len(pool) + 5, 40)
    alloc = sampling.neyman_allocate(pool, spread, n, labeled=labeled, population=population)
    lo = sampling.floor_sizes(pool, n)
    assert sum(alloc.values()) == n
    assert all(lo[h] <= alloc[h] <= pool[h] for h in pool)
    best = _greedy_allocation(pool, lo, population, spread, labeled, n)
    # Largest-remainder rounding of the continuous optimum: within 1% of the integer optimum.
    assert _variance_after(population, spread, labeled, alloc) <= 1.01 * _variance_after(
        population, spread, labeled, best
    )


def test_a_stratum_the_earlier_labels_over_served_gets_only_its_floor() -> None:
    # 60 of stratum a (spread 1) are labeled already, none of b (spread 1): Neyman over the run's
    # 100 + 100 answers wants 50 + 50 after the cycle, so all 20 go to b but a's floor of
    # ceil(0.2 * 20 * 40 / 140) = 2; ignoring the labels would split them 6 / 14 by N_h S_h.
    alloc = sampling.neyman_allocate(
        {"a": 40, "b": 100},
        {"a": 1.0, "b": 1.0},
        20,
        labeled={"a": 60, "b": 0},
        population={"a": 100, "b": 100},
    )
    assert alloc == {"a": 2, "b": 18}


def test_planned_sample_draws_the_allocation_it_is_given() -> None:
    pool = planned_pool({"x": 10, "y": 30})
    sample = sampling.planned_sample(pool, 12, seed=4, allocation={"x": 2, "y": 10})
    stratum = {a.answer_id: a.stratum for a in pool}
    assert Counter(stratum[a] for a in sample.answer_ids) == {"x": 2, "y": 10}
    prob = {"x": 2 / 10, "y": 10 / 30}
    assert sample.inclusion_probs == pytest.approx([prob[str(stratum[a])] for a in sample.answer_ids])
    assert sampling.draw("planned", pool, 12, seed=4, allocation={"x": 2, "y": 10}) == sample
    with pytest.raises(ValueError, match="12 in all"):
        sampling.planned_sample(pool, 12, seed=4, allocation={"x": 11, "y": 1})
