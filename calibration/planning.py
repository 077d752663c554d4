"""Planned cycles: put the next human labels where they do the most for the lead's decision.

The planned design (`sampling.planned_sample`) is a stratified sample with a Neyman allocation;
this module chooses its strata, estimates each stratum's spread from the run's earlier labels,
and says before the cycle is drawn what it should buy. Pure functions over the facts the store
reads (`store.cycles.planning_facts`, `store.claim_table`); no I/O of its own.

Strata. Each answer of the run gets a stratum from what is known of every answer, labeled or not:
its judge verdict pattern ("all-SUPPORTED", "CONTRADICTED": some claim contradicted, else
"UNSUPPORTED"), its category, the seed-003 answer-check flag and, for the grounding goal, whether
the judge's uncertainty signals call it more or less certain than the median of its verdict
pattern (`uncertainty`). When those strata outnumber `MAX_STRATA` (two thirds of the slots of a
smaller cycle) they are coarsened level by level (`LEVELS`:
the flag goes first, then the certainty split, then the category, down to "all-SUPPORTED"/"not", which
every other design's strata also refine), so the allocation keeps slots to move.

Spreads. For the agreement goal the spread S_h of stratum h is the standard deviation of the
answers' linearised residuals e_i = a_i - R m_i (a_i agreements among m_i resolved claims, R the
labeled answers' agreement), the quantity whose stratified variance the ratio estimate has
(`estimation.ratio_estimate`), so n_h proportional to N_h S_h minimises it (Cochran 1977, sec. 5.5).
For the grounding goal the residual is e_i = sum over the answer's resolved claims of
(Y_c - R_f(c)), Y_c = 1 if people call the claim SUPPORTED and R_f the labeled share among claims
the judge gave verdict f: the two-phase estimate's linearised value (`estimation.grounding_two_phase`).
A stratum's own variance s_h^2 (from n_h >= 2 labeled answers) is shrunk toward a prior S0_h^2:
S_h^2 = ((n_h - 1) s_h^2 + K S0_h^2) / (n_h - 1 + K), a credibility-weighted mean (Bühlmann 1967,
ASTIN Bulletin 4:199) with K pseudo-answers estimated from the labels (`credibility_answers`,
Bühlmann-Straub): the noise of the strata's own variances against how far they truly differ from
S0_h, at least `SHRINK_ANSWERS`. A fixed K let the plan chase noise where the strata do not
differ: a stratum whose first labels happened to show few disagreements got few more labels and
kept its low s_h, so the run's variance estimate ran low (planned intervals covered about 93% in
bench/sim_planned.py's even run, estimated variance about 0.8 of the true); when the strata's
variances differ no more than their noise, K is infinite and the plan follows S0_h.
S0_h follows the judge's own uncertainty, in the manner of active inference (Zrnic & Candès 2024,
"Active Statistical Inference", ICML, arXiv:2403.03208: label with known probability, more where
the model is less sure): each claim's chance q that a person disagrees with the verdict (1 - the
judge's confidence where the import gave one, else the labeled error rate of that verdict, else
`PRIOR_ERROR`; doubled for a flagged answer and scaled by the square root of the answer's length
against the run's median), and the answer's predicted residual variance u_i = sum_c q_c (1 - q_c);
S0_h^2 is the mean u_i of the stratum, scaled to the labels' pooled variance once there are labels.
Both residuals are a count of disagreements less its expectation, so u_i predicts both: the
verdicts' error rates pool the labels of every stratum, which a stratum's own two or three labels
cannot match. With nothing labeled the agreement plan is the stratified design's proportional
allocation (no spread is measured yet); the grounding plan follows the judge's signals. Unlike
Zrnic & Candès's per-item probabilities, the probability here is constant within a stratum: the
uncertainty enters through the certainty split and the spreads. That keeps every design of the
tool uniform within the strata, so the run's figures post-stratify on them
(`run_strata_with_plans`) and the cycles of a run combine, while a floor (`FLOOR`, at least
`sampling.PLANNED_FLOOR`) bounds every weight as the mix with the uniform rule does in the paper.

Allocation. A cycle completes the run's labels so far (`sampling.neyman_allocate` with the
labels before it): the n_h minimise the variance after the cycle, so a stratum that earlier
cycles (a proportional first one, say) over-served gets only its floor, and the run's labels
after the cycle are as close to the Neyman allocation of all of them as the bounds allow.

What the plan expects. With N_h answers of the run in stratum h, n0_h labeled before and n_h drawn,
the stratified variance of the goal's figure after the cycle is
V = sum_h N_h^2 (1 - n1_h / N_h) S_h^2 / n1_h / X^2, n1_h = min(N_h, n0_h + n_h), X the run's
judged claims (Cochran 1977, eq. 5.6 for a ratio with eq. 6.11), without the factors
(1 - n1_h / N_h) for the agreement, whose report interval has none; the expected 95% half-width
is 1.96 sqrt(V). The cycles the decision should take: the agreement goal is decided when the interval
excludes the target, so the smallest k with 1.96 sqrt(V_k) < |R - target| for k such cycles; the
grounding goal when the half-width reaches `GROUNDING_HALF_WIDTH`. These are planning figures
(normal approximation, spreads as estimated), not the report's intervals.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import numpy as np

from . import estimation, fmt, sampling
from .fmt import plural
from .store import ClaimTable, PlanningFacts
from .vocab import LABELS

Goal = Literal["agreement", "grounding"]
GOALS: Final[tuple[str, ...]] = ("agreement", "grounding")
GOAL_NAMES: Final[dict[str, str]] = {
    "agreement": "the agreement decision (revise the judge or not)",
    "grounding": "the corrected grounding score",
}
# The fewest pseudo-answers a stratum's own variance is shrunk with (`credibility_answers`).
SHRINK_ANSWERS: Final = 5
# The least share of the proportional rate n / N any answer of the pool gets, per goal
# (`sampling.neyman_allocate`). The grounding goal's residuals in the all-SUPPORTED strata are
# rare disagreements, whose stratum variance a few labels mostly miss: at 0.2 its intervals
# covered 89-92% in bench/sim_planned.py, at 0.5 (each answer at least half as likely to be
# drawn as in a random cycle) 92-95%, for about the same labels saved.
FLOOR: Final[dict[str, float]] = {"agreement": sampling.PLANNED_FLOOR, "grounding": 0.5}
# Chance a person disagrees with a verdict before any label says otherwise: seed 000's "85%+"
# agreement, with errors likelier on the verdicts that are not SUPPORTED.
PRIOR_ERROR: Final[dict[str, float]] = {"SUPPORTED": 0.1, "CONTRADICTED": 0.3, "UNSUPPORTED": 0.3}
# Labeled claims of a verdict before its labeled error rate replaces the prior.
MIN_RATE_CLAIMS: Final = 20
ASSUMED_AGREEMENT: Final = 0.85
GROUNDING_HALF_WIDTH: Final = 0.05
# At most this many strata, so a cycle of 15 (cycles.MIN_SIZE) still has slots to move once
# every stratum has its floor of one.
MAX_STRATA: Final = 9
MAX_CYCLES: Final = 20
# A planned cycle's size, what "plan the next cycle" prefills: each plan rests on the labels
# before it, and smaller cycles plan more often from fewer labels and chase their noise. In
# bench/sim_planned.py (1,000 replicates each) cycles of 30 kept every interval at 93.5% or
# more; cycles of 20 and 15 saved fewer labels, and some of their grounding intervals covered
# 91.8-92.7% (docs/statistics.md: Planned cycles).
CYCLE_SIZE: Final = 30
_SUPPORTED = LABELS.index("SUPPORTED")
_CONTRADICTED = LABELS.index("CONTRADICTED")

PATTERN, CATEGORY, FLAG, CERTAINTY, BASE = "pattern", "category", "flag", "certainty", "base"
LEVELS: Final[dict[str, tuple[tuple[str, ...], ...]]] = {
    "agreement": ((PATTERN, CATEGORY, FLAG), (PATTERN, CATEGORY), (PATTERN, FLAG), (PATTERN,), (BASE,)),
    "grounding": (
        (PATTERN, CERTAINTY, CATEGORY, FLAG),
        (PATTERN, CERTAINTY, CATEGORY),
        (PATTERN, CATEGORY),
        (PATTERN, CERTAINTY),
        (PATTERN,),
        (BASE,),
    ),
}


def verdict_pattern(verdicts: Sequence[str]) -> str:
    """ "all-SUPPORTED", "CONTRADICTED" (some claim contradicted) or "UNSUPPORTED" (the rest)."""
    if all(v == "SUPPORTED" for v in verdicts):
        return "all-SUPPORTED"
    return "CONTRADICTED" if "CONTRADICTED" in verdicts else "UNSUPPORTED"


def uncertainty(facts: Sequence[PlanningFacts], error_rate: Mapping[str, float] | None = None) -> np.ndarray:
    """u_i = sum_c q_c (1 - q_c) per answer: its predicted residual variance (module docstring)."""
    rate = {**PRIOR_ERROR, **(error_rate or {})}
    n_claims = np.array([len(f.verdicts) for f in facts], dtype=np.int64)
    owner = np.repeat(np.arange(len(facts)), n_claims)
    lengths = np.array([max(f.length, 1) for f in facts], dtype=float)
    median = float(np.median(lengths)) if lengths.size else 1.0
    scale = np.clip(np.sqrt(lengths / median), 0.5, 2.0) * np.where([f.flagged for f in facts], 2.0, 1.0)
    by_verdict = np.array([rate.get(v, PRIOR_ERROR["UNSUPPORTED"]) for f in facts for v in f.verdicts])
    conf = np.array(
        [f.confidence if f.confidence is not None and 0 <= f.confidence <= 1 else np.nan for f in facts],
        dtype=float,
    )[owner]
    q = np.clip(np.where(np.isnan(conf), by_verdict, 1.0 - conf) * scale[owner], 0.005, 0.5)
    return np.bincount(owner, weights=q * (1 - q), minlength=len(facts))


def less_certain(facts: Sequence[PlanningFacts]) -> np.ndarray:
    """Per answer: is its u_i per claim, under the prior error rates, above the median of its
    verdict pattern? It reads the judge's signals only, never the labels, so every cycle of the
    run splits the run alike."""
    per_claim = uncertainty(facts) / np.maximum(1, [len(f.verdicts) for f in facts])
    pattern = np.array([verdict_pattern(f.verdicts) for f in facts], dtype=object)
    less = np.zeros(len(facts), dtype=bool)
    for p in set(pattern.tolist()):
        on = pattern == p
        less[on] = per_claim[on] > np.median(per_claim[on])
    return less


def answer_strata(
    facts: Sequence[PlanningFacts], less: np.ndarray
) -> Callable[[Sequence[str]], dict[str, str]]:
    """The strata of every answer, as a function of the level of detail (`less`: `less_certain`)."""
    pattern = [verdict_pattern(f.verdicts) for f in facts]
    words = {
        BASE: ["all-SUPPORTED" if p == "all-SUPPORTED" else "not" for p in pattern],
        PATTERN: pattern,
        CATEGORY: [f"category {f.category}" if f.category is not None else "no category" for f in facts],
        FLAG: ["flagged" if f.flagged else "unflagged" for f in facts],
        CERTAINTY: ["less certain" if x else "more certain" for x in less.tolist()],
    }
    ids = [f.answer_id for f in facts]

    def at(parts: Sequence[str]) -> dict[str, str]:
        labels = (" · ".join(t) for t in zip(*(words[p] for p in parts), strict=True))
        return dict(zip(ids, labels, strict=True))

    return at


@dataclass(frozen=True, slots=True)
class PlannedStratum:
    """One stratum of a plan: why it gets the answers it gets."""

    name: str
    pool: int  # N_h: eligible answers of the stratum
    run: int  # answers of the run in the stratum
    labeled_before: int  # of `run`: answers with a final human label on some claim
    sampled: int  # n_h the cycle draws
    spread: float  # S_h, on the residual scale of the goal
    source: str  # where S_h comes from

    @property
    def prob(self) -> float:
        return self.sampled / self.pool if self.pool else 0.0


@dataclass(frozen=True, slots=True)
class Plan:
    """What a planned cycle will draw, why, and what it should buy (see the module docstring)."""

    goal: str
    size: int
    level: tuple[str, ...]
    strata: tuple[PlannedStratum, ...]
    answer_strata: dict[str, str] = field(repr=False)  # every answer of the run -> its stratum
    current: float | None  # the goal's figure from the labels so far (None: no labels)
    current_half_width: float | None  # its planning half-width now (None: not estimable)
    expected_half_width: float | None  # after this cycle
    target: float | None  # agreement goal: the flag's target
    cycles_needed: int | None  # such cycles until the decision; None: more than MAX_CYCLES
    assumed: bool  # the spreads are assumptions (nothing labeled yet)

    @property
    def spread(self) -> dict[str, float]:
        return {s.name: s.spread for s in self.strata}

    @property
    def allocation(self) -> dict[str, int]:
        """n_h per stratum: what `sampling.planned_sample` draws."""
        return {s.name: s.sampled for s in self.strata}

    def summary(self) -> list[str]:
        """The plan in a lead's words: what the cycle draws, how sure the figure is now and after
        it, and how many such cycles the decision should take (the statistics: `lines`)."""
        what = "agreement" if self.goal == "agreement" else "corrected grounding score"
        out = [
            f"A planned cycle of {plural(self.size, 'answer')} for {GOAL_NAMES[self.goal]}: it draws more "
            "of the answers where reviewers and the judge are likeliest to disagree, and re-weights "
            "the figures so that they still speak for the whole run."
        ]
        if self.current_half_width is not None and self.expected_half_width is not None:
            out.append(
                f"The run's {what} is known to within ±{fmt.pct(self.current_half_width)} today, and to "
                f"within about ±{fmt.pct(self.expected_half_width)} after this cycle."
            )
        if self.goal == "agreement" and self.target is not None:
            aim = f"whether the judge reaches the {fmt.share(self.target)} target"
        else:
            aim = f"the grounding score to within ±{fmt.pct(GROUNDING_HALF_WIDTH)}"
        if self.cycles_needed is None:
            out.append(f"More than {MAX_CYCLES} cycles like it would be needed to tell {aim}.")
        elif self.cycles_needed == 0:
            out.append(f"The labels so far already tell {aim}.")
        else:
            out.append(f"About {plural(self.cycles_needed, 'cycle')} like it should tell {aim}.")
        return out

    def lines(self) -> list[str]:
        """The plan's statistics, line by line (strata, chances, spreads, planning half-widths)."""
        out = [
            f"planned for {GOAL_NAMES[self.goal]}: {plural(self.size, 'answer')} over "
            f"{plural(len(self.strata), 'stratum', 'strata')} ({' × '.join(self.level)})"
        ]
        pool = sum(s.pool for s in self.strata)
        for s in self.strata:
            # Plain words: a chance and how it compares with a random cycle's, not a symbol.
            ratio = s.prob / (self.size / pool) if pool else 0.0
            out.append(
                f"  {s.name}: {s.sampled} of {s.pool} eligible (a {fmt.pct(s.prob)} chance of being "
                f"drawn, {ratio:.1f}× a random cycle's; {s.labeled_before} of {s.run} labeled before; "
                f"spread {s.spread:.2f}, {s.source})"
            )
        out.append(
            "the run's figures are re-weighted by each answer's chance of being drawn, so they stay unbiased"
        )
        what = "agreement" if self.goal == "agreement" else "corrected grounding score"
        now = "not estimable yet" if self.current_half_width is None else f"±{self.current_half_width:.3f}"
        value = "" if self.current is None else f" at {self.current:.3f}"
        after = "unknown" if self.expected_half_width is None else f"±{self.expected_half_width:.3f}"
        out.append(
            f"expected 95% interval of the run's {what}{value}: {now} now, {after} after this cycle"
            + (" (assumed spreads: nothing is labeled yet)" if self.assumed else "")
        )
        out.append(self.cycles_sentence())
        if self.size < CYCLE_SIZE and self.cycles_needed != 1:
            out.append(
                f"a planned cycle does best with {CYCLE_SIZE} answers: smaller ones plan from fewer "
                "labels each time, and in simulation some of their 95% intervals covered only 92-93%"
            )
        return out

    def cycles_sentence(self) -> str:
        if self.goal == "agreement":
            aim = f"an interval that excludes the target {self.target:.0%}" if self.target is not None else ""
        else:
            aim = f"a half-width of ±{GROUNDING_HALF_WIDTH:.2f}"
        if self.cycles_needed is None:
            return f"the decision needs more than {MAX_CYCLES} such cycles to reach {aim}"
        if self.cycles_needed == 0:
            return f"the labels so far already reach {aim}"
        return f"about {plural(self.cycles_needed, 'such cycle')} to reach {aim}"

    def record(self) -> dict[str, Any]:
        """The plan as stored with the cycle (`store.cycles.insert_plan`)."""
        return {
            "goal": self.goal,
            "size": self.size,
            "level": list(self.level),
            "strata": [
                {
                    "name": s.name,
                    "pool": s.pool,
                    "run": s.run,
                    "labeled_before": s.labeled_before,
                    "sampled": s.sampled,
                    "prob": s.prob,
                    "spread": s.spread,
                    "source": s.source,
                }
                for s in self.strata
            ],
            "answer_strata": self.answer_strata,
            "current": self.current,
            "current_half_width": self.current_half_width,
            "expected_half_width": self.expected_half_width,
            "target": self.target,
            "cycles_needed": self.cycles_needed,
            "assumed": self.assumed,
        }


# ---------------------------------------------------------------- residuals of the labels


@dataclass(frozen=True, slots=True)
class _Labeled:
    ids: list[str]  # answers with a final human label on some claim
    resid: np.ndarray  # e_i per such answer, for the goal
    value: float | None  # the goal's figure from the labels (unweighted; planning only)
    error_rate: dict[str, float]  # labeled share of claims people disagree with, per verdict


def _labeled(table: ClaimTable, goal: str) -> _Labeled:
    agreed = table.agreed()
    idx = np.flatnonzero(agreed)
    rate: dict[str, float] = {}
    for v, name in enumerate(LABELS):
        on = idx[table.judge[idx] == v]
        if on.size >= MIN_RATE_CLAIMS:
            # Jeffreys-smoothed: never exactly 0 or 1.
            rate[name] = (float((table.human[on] != v).sum()) + 0.5) / (on.size + 1)
    if idx.size == 0:
        return _Labeled([], np.zeros(0), None, rate)
    ans = table.answer[idx]
    n_ans = len(table.answer_ids)
    has = np.bincount(ans, minlength=n_ans) > 0
    ids = [table.answer_ids[i] for i in np.flatnonzero(has)]
    if goal == "agreement":
        a = np.bincount(ans, weights=(table.human[idx] == table.judge[idx]).astype(float), minlength=n_ans)
        m = np.bincount(ans, minlength=n_ans).astype(float)
        r = float(a.sum() / m.sum())
        resid = (a - r * m)[has]
        return _Labeled(ids, resid, r, rate)
    y = (table.human[idx] == _SUPPORTED).astype(float)
    f = (table.judge[idx] == _SUPPORTED).astype(float)
    r_f = {v: float(y[f == v].mean()) if (f == v).any() else 0.0 for v in (0.0, 1.0)}
    fitted = np.where(f == 1.0, r_f[1.0], r_f[0.0])
    resid = np.bincount(ans, weights=y - fitted, minlength=n_ans).astype(float)[has]
    # The two-phase figure: the judge's shares over every judged claim times the labeled rates.
    share = float((table.judge == _SUPPORTED).mean()) if len(table) else 0.0
    value = share * r_f[1.0] + (1 - share) * r_f[0.0] if (f == 1).any() and (f == 0).any() else None
    return _Labeled(ids, resid, value, rate)


def _half_width(
    strata: Sequence[PlannedStratum], labeled: Mapping[str, int], claims: float, *, fpc: bool
) -> float | None:
    """1.96 sqrt(sum_h N_h^2 (1 - n_h / N_h) S_h^2 / n_h) / X for the given labeled counts, without
    the factors (1 - n_h / N_h) when not `fpc`, as the report's agreement interval."""
    if claims <= 0:
        return None
    var = 0.0
    for s in strata:
        n = min(s.run, labeled.get(s.name, 0))
        if s.run == 0:
            continue
        if n == 0:
            return None
        var += s.run**2 * ((1 - n / s.run) if fpc else 1.0) * s.spread**2 / n
    return estimation.z_value(0.95) * math.sqrt(var) / claims


# ---------------------------------------------------------------- the plan


def credibility_answers(own: Mapping[str, np.ndarray], prior: Mapping[str, float]) -> float:
    """K, the pseudo-answers a stratum's own variance is shrunk with, at least `SHRINK_ANSWERS`.

    Empirical Bühlmann-Straub credibility (Bühlmann & Straub 1970; Bühlmann & Gisler 2005, A Course
    in Credibility Theory, sec. 4.8), applied to the strata's variances: stratum h's n_h residuals
    give x_hi = n_h / (n_h - 1) (e_hi - ebar_h)^2, whose mean is s_h^2, with weight w_h = n_h - 1.
        v     = sum_h sum_i (x_hi - s_h^2)^2 / sum_h w_h          (the noise of one x: within)
        tau^2 = max(0, (sum_h w_h (s_h^2 - S0_h^2)^2 - H v) / sum_h w_h)   (true S_h^2 around S0_h^2)
    over the H strata with n_h >= 2, and K = v / tau^2 (infinite when tau^2 = 0). With fewer than
    two such strata it is `SHRINK_ANSWERS`.
    """
    used = [h for h, e in own.items() if e.size >= 2]
    if len(used) < 2:
        return float(SHRINK_ANSWERS)
    within = between = weight = 0.0
    for h in used:
        e = own[h]
        x = e.size / (e.size - 1) * (e - e.mean()) ** 2
        s2 = float(x.mean())
        within += float(((x - s2) ** 2).sum())
        between += (e.size - 1) * (s2 - prior[h]) ** 2
        weight += e.size - 1
    v = within / weight
    tau2 = (between - len(used) * v) / weight
    return max(float(SHRINK_ANSWERS), v / tau2) if tau2 > 0 else math.inf


def make_plan(
    facts: Sequence[PlanningFacts],
    table: ClaimTable,
    pool: Collection[str],
    goal: str,
    size: int,
    *,
    target: float | None = None,
) -> Plan:
    """Plan a cycle of `size` answers drawn from `pool` (eligible answer ids) of the run whose
    answers `facts` lists and whose judged claims and labels `table` holds (module docstring)."""
    if goal not in GOALS:
        raise ValueError(f"unknown goal {goal!r}; use one of {', '.join(GOALS)}")
    pool_set = set(pool)
    in_pool = [f for f in facts if f.answer_id in pool_set]
    if not in_pool:
        raise ValueError("the pool is empty")
    if not 1 <= size <= len(in_pool):
        raise ValueError(f"sample size must be between 1 and the pool size {len(in_pool)}, got {size}")
    lab = _labeled(table, goal)
    u = uncertainty(facts, lab.error_rate)
    u_of = dict(zip((f.answer_id for f in facts), u.tolist(), strict=True))
    # The level depends on the run and the usual cycle size only, so the cycles of a run cut it
    # alike and their strata combine into one partition (`run_strata_with_plans`).
    room = max(1, min(MAX_STRATA, size * 2 // 3))
    levels = LEVELS[goal]
    strata_at = answer_strata(facts, less_certain(facts))
    level, strata_of = levels[-1], strata_at(levels[-1])
    for parts in levels:
        candidate = strata_at(parts)
        if len(set(candidate.values())) <= room:
            level, strata_of = parts, candidate
            break

    names = sorted({strata_of[f.answer_id] for f in in_pool})
    run_count = {h: 0 for h in names}
    for f in facts:
        if strata_of[f.answer_id] in run_count:
            run_count[strata_of[f.answer_id]] += 1
    pool_count = {h: sum(1 for f in in_pool if strata_of[f.answer_id] == h) for h in names}
    resid_of = dict(zip(lab.ids, lab.resid.tolist(), strict=True))
    before = {h: [resid_of[a] for a in lab.ids if strata_of.get(a) == h] for h in names}
    mean_claims = float(np.mean([len(f.verdicts) for f in facts]))
    pooled = float(np.var(lab.resid, ddof=1)) if lab.resid.size >= 2 else None
    assumed = pooled is None
    if goal == "agreement" and pooled is None:
        prior = dict.fromkeys(names, ASSUMED_AGREEMENT * (1 - ASSUMED_AGREEMENT) * mean_claims)
        prior_source = "assumed (no labels: proportional)"
    else:
        u_h = {
            h: float(np.mean([u_of[f.answer_id] for f in facts if strata_of[f.answer_id] == h]))
            for h in names
        }
        scale = 1.0
        if pooled is not None:
            u_lab = float(np.mean([u_of[a] for a in lab.ids]))
            scale = pooled / u_lab if u_lab > 0 else 1.0
        prior = {h: u_h[h] * scale for h in names}
        prior_source = "the judge's uncertainty signals"
    spreads: dict[str, float] = {}
    sources: dict[str, str] = {}
    k = credibility_answers({h: np.asarray(before[h], dtype=float) for h in names}, prior)
    for h in names:
        own = before[h]
        if len(own) >= 2 and math.isfinite(k):
            df = len(own) - 1
            spreads[h] = math.sqrt((df * float(np.var(own, ddof=1)) + k * prior[h]) / (df + k))
            sources[h] = f"from {plural(len(own), 'labeled answer')}, shrunk toward {prior_source}"
        elif len(own) >= 2:
            spreads[h] = math.sqrt(prior[h])
            sources[h] = f"{prior_source}: the strata's labels differ no more than by chance"
        else:
            spreads[h] = math.sqrt(prior[h])
            sources[h] = prior_source
    labeled_count = {h: len(before[h]) for h in names}
    # The cycle completes the labels so far, so the run's labels after it are Neyman-allocated.
    floor = FLOOR[goal]
    if sum(sampling.floor_sizes(pool_count, size, floor).values()) > size:
        floor = sampling.PLANNED_FLOOR  # a small cycle over many strata: the floor that fits
    alloc = sampling.neyman_allocate(
        pool_count, spreads, size, floor, labeled=labeled_count, population=run_count
    )
    strata = tuple(
        PlannedStratum(h, pool_count[h], run_count[h], labeled_count[h], alloc[h], spreads[h], sources[h])
        for h in names
    )
    claims = float(sum(len(f.verdicts) for f in facts if strata_of[f.answer_id] in run_count))

    def after(k: int) -> float | None:
        return _half_width(
            strata,
            {s.name: s.labeled_before + k * s.sampled for s in strata},
            claims,
            fpc=goal == "grounding",
        )

    now, expected = after(0), after(1)
    value = lab.value
    centre = value if value is not None else ASSUMED_AGREEMENT
    gap = abs(centre - target) if target is not None else 0.0

    def reached(hw: float) -> bool:
        # The agreement decision: the interval excludes the target (never, at the target itself).
        return hw < gap and gap > 0.005 if goal == "agreement" else hw <= GROUNDING_HALF_WIDTH

    needed: int | None = None
    for k in range(0, MAX_CYCLES + 1):
        hw = after(k)
        if hw is not None and reached(hw):
            needed = k
            break
    return Plan(
        goal,
        size,
        tuple(level),
        strata,
        strata_of,
        value,
        now,
        expected,
        target if goal == "agreement" else None,
        needed,
        assumed,
    )


def run_strata_with_plans(
    base: np.ndarray, answer_ids: Sequence[str], plans: Sequence[Mapping[str, str]]
) -> np.ndarray:
    """The run's design strata crossed with every planned cycle's strata.

    Each design samples uniformly within its own strata, so within a cell of their product every
    cycle's draw is uniform too, and so is the union of the cycles' labels: the run's figures
    post-stratify on the cells. Each plan gives every answer of the run a stratum (labeled before
    the cycle or not: the union argument needs the strata of the whole run); an answer a plan does
    not know (imported after it) is in that plan's stratum "-".
    """
    distinct = [p for i, p in enumerate(plans) if p not in plans[:i]]  # a repeated cut adds nothing
    if not distinct:
        return base
    cells = [
        str(b) + "".join(f" | {p.get(a, '-')}" for p in distinct)
        for b, a in zip(base.tolist(), answer_ids, strict=True)
    ]
    return np.array(cells, dtype=object)


def default_goal_and_size(
    plan_agreement: Plan | None,
    plan_grounding: Plan | None,
    *,
    min_size: int,
    max_size: int,
) -> tuple[str, int]:
    """What the Dashboard's "plan the next cycle" prefills: the agreement decision while it is
    open, else the grounding score; cycles of `CYCLE_SIZE` (within the cycle bounds) until what
    the decision still needs fits in one smaller cycle."""
    plan = plan_agreement
    goal = "agreement"
    if plan is not None and plan.cycles_needed == 0 and plan_grounding is not None:
        plan, goal = plan_grounding, "grounding"
    full = min(max_size, max(min_size, CYCLE_SIZE))
    if plan is None or plan.cycles_needed in (None, 0):
        return goal, full
    return goal, min(full, max(min_size, plan.cycles_needed * plan.size))
