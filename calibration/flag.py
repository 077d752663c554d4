"""The revision flag: ``revise`` / ``ok`` / ``inconclusive``, each reason naming a figure, its bound
and its claims.

The rules themselves (the running rule's sequences and the final reading, the kappa rule, the human
ceiling's caps) are in `decisions`; the design-based estimates they read in `estimation`; this module
holds the lead's thresholds and turns the rules' results into the flag and its sentences (numbers in
`fmt`'s formats).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from . import decisions, estimation
from .agreement import POSITIVE, Direction, optional_float
from .fmt import ci, num, p_value, pct, plural, share


@dataclass(frozen=True, slots=True)
class Thresholds:
    """When the flag says revise / ok.  Defaults from the issue (seed 000: ~85% agreement)."""

    agreement_target: float = 0.85
    kappa_floor: float = 0.60
    alpha: float = 0.05
    # The alternative annotator test's margin: how much worse than a reviewer the lead accepts the
    # judge to be (decisions.ALT_EPSILON: the authors' value for skilled reviewers).
    alt_epsilon: float = decisions.ALT_EPSILON

    def __post_init__(self) -> None:
        if not 0.0 < self.agreement_target <= 1.0:
            raise ValueError(f"agreement_target must be in (0, 1], got {self.agreement_target}")
        if not -1.0 <= self.kappa_floor <= 1.0:
            raise ValueError(f"kappa_floor must be in [-1, 1], got {self.kappa_floor}")
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")
        if not 0.0 <= self.alt_epsilon < 1.0:
            raise ValueError(f"alt_epsilon must be in [0, 1), got {self.alt_epsilon}")

    def to_dict(self) -> dict[str, float]:
        return {
            "agreement_target": self.agreement_target,
            "kappa_floor": self.kappa_floor,
            "alpha": self.alpha,
            "alt_epsilon": self.alt_epsilon,
        }


FlagStatus = Literal["ok", "revise", "inconclusive"]


@dataclass(frozen=True, slots=True)
class Reason:
    """One line of the flag: what fired, the figure behind it, and the claims behind the figure."""

    code: str
    message: str
    value: float | None
    claim_ids: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "value": optional_float(self.value),
            "claim_ids": list(self.claim_ids),
        }


@dataclass(frozen=True, slots=True)
class Flag:
    """The flag; ``reading`` says which reading decided it: "running" (the rules read at every look,
    and so while nothing is decided) or "final" (the final reading once labeling ended)."""

    status: FlagStatus
    reasons: tuple[Reason, ...]
    claims_needed: int | None = None
    reading: decisions.Reading = "running"
    end: decisions.LabelingEnd | None = None  # why labeling ended, when the final reading was read

    @property
    def reading_sentence(self) -> str:
        """ "decided at the final reading ..." / "decided by the running rule" / "" (undecided)."""
        if self.status == "inconclusive":
            return ""
        if self.reading == "final":
            return (self.end or decisions.NOTHING_LEFT).sentence
        return "decided by the running rule (valid at every look)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reasons": [r.to_dict() for r in self.reasons],
            "claims_needed": self.claims_needed,
            "reading": self.reading,
            "reading_sentence": self.reading_sentence,
        }


def _end(rules: decisions.Decision) -> decisions.LabelingEnd | None:
    """Why labeling ended, where the final reading was read (the same for every rule)."""
    return next((r.end for r in rules.rules if r.end is not None), None)


def _final_words(rule: decisions.RuleResult, side: str, end: str, fmt_bound: Any = pct) -> str:
    """Why the final reading decided: why labeling ended, the fixed-sample bound that passed (``end``
    "lower" or "upper") at its one-sided level, and that side's error budget split between the two
    readings."""
    levels = rule.alpha_low if end == "lower" else rule.alpha_high
    running, final = levels if levels is not None else (0.0, 0.0)
    bound = rule.final_low if end == "lower" else rule.final_high
    ended = rule.end or decisions.NOTHING_LEFT
    of = "" if ended.n_claims is None else f" of the {plural(ended.n_claims, 'claim')} labeled at closing"
    return (
        f"at the final reading: {ended.why}, the running rule had not decided, and the "
        f"fixed-sample {end} bound {fmt_bound(bound)}{of} (one-sided {100 * (1 - final):g}%) lies {side} "
        f"(this side's error budget {running + final:g} = {running:g} running + {final:g} final)"
    )


@dataclass(frozen=True, slots=True)
class PopulationEstimates:
    """The flag's figures estimated for the population the labeled answers represent.

    ``population`` says which (e.g. "all 150 answers of the run"); with an equal-probability
    design the estimates repeat the raw figures.  See :mod:`calibration.estimation`.
    """

    population: str | None
    agreement: estimation.Estimate
    kappa: estimation.Estimate
    direction: estimation.DirectionEstimate
    equal_probability: bool


def decide_flag(
    *,
    rules: decisions.Decision,
    estimates: PopulationEstimates,
    raw_agreement: float | None,
    direction: Direction,
    thresholds: decisions.CappedThresholds,
    n_claims: int,
    more_target: decisions.MoreClaims,
    prob: float | None,
    disagreeing: Sequence[str],
    prob_withheld: str | None = None,
    ceiling: decisions.HumanCeiling | None = None,
    unit: str = "claims",
) -> Flag:
    """``revise`` / ``ok`` / ``inconclusive``, each with reasons that name a figure, its bound and its claims.

    The rules are those of :func:`decisions.decide`; none fires on a point estimate alone:
    * agreement_below_target / agreement_meets_target: the running rule's confidence sequence on
      agreement in labeling order (:func:`decisions.agreement_rule`) ends below / starts at or
      above the target, or, once nothing is left to label, the final reading's fixed-sample interval
      does (:func:`decisions.final_reading`); the fixed-sample interval is shown beside it;
    * judge_lenient / judge_strict: the running sequence on (lenient - strict)/n
      (:func:`decisions.direction_rule`) excludes 0, or the final reading's interval does; the exact
      McNemar p is shown beside it;
    * kappa_below_floor: the upper end of kappa's 95% interval (design-based,
      :func:`estimation.kappa_estimate`) is below the floor.
    ``thresholds`` are the lead's, capped by the human ceiling (:func:`decisions.capped_thresholds`):
    no rule asks the judge to agree more than reviewers do with each other.  Inconclusive says
    the one "how many more" of the agreement target (:func:`decisions.more_claims_to_decide`).
    A ``human_ceiling`` reason (information, never a rule) says whether the judge can stand in for
    a reviewer (the alternative annotator test), when several reviewers labeled the same claims.
    ``unit`` names what the direction counts count ("claims", or one verdict per claim and reviewer).
    """
    dis = tuple(disagreeing)
    t = thresholds
    ceiling_note: list[Reason] = []
    if ceiling is not None and ceiling.alt.verdict is not None:
        a = ceiling.alt
        ceiling_note.append(
            Reason(
                "human_ceiling",
                f"human ceiling: the judge is {a.verdict} (alternative annotator test, epsilon "
                f"{a.epsilon:g}, "
                f"{a.alignment}, winning rate {pct(a.winning_rate)}, {p_value(a.p_value)}"
                f"{'; ' + ceiling.comparison_sentence() if ceiling.comparisons else ''}); it agrees "
                f"{pct(ceiling.judge_vs_reviewers.value)} with "
                f"each reviewer where reviewers agree {pct(ceiling.reviewer_vs_reviewer.value)} with each "
                "other",
                a.winning_rate,
                (),
            )
        )
    capped = ""
    if t.capped_agreement or t.capped_kappa:
        capped = " (capped at what reviewers reach with each other)"
    est = estimates.agreement.value
    if n_claims == 0 or est is None:
        empty = Reason("no_data", "no claims with both a judge verdict and a final human label", None, ())
        return Flag("inconclusive", (empty,), None)
    what = "agreement"
    if not estimates.equal_probability:
        what = (
            f"agreement estimated for {estimates.population or 'the population'} (raw {pct(raw_agreement)})"
        )
    by_rule = {r.rule: r for r in rules.rules}
    ag = by_rule["agreement"]
    fixed = ci(estimates.agreement.ci_low, estimates.agreement.ci_high)
    chance = decisions.prob_sentence(prob, t.agreement_target, prob_withheld)
    reasons: list[Reason] = []

    def said(verb: str, side: str, end: str, bound: float | None) -> str:
        how = (
            _final_words(ag, side, end)
            if ag.reading == "final"
            else f"at any look: its running {end} bound is {pct(bound)} (fixed-sample {fixed})"
        )
        return (
            f"{what} {pct(est)} {verb} the {share(t.agreement_target)} target{capped} {how}; {chance}; "
            f"{plural(len(dis), 'disagreeing claim')}"
        )

    if ag.status == "revise":
        reasons.append(
            Reason(
                "agreement_below_target",
                said("is below", "below it", "upper", ag.bound_high),
                est,
                dis,
            )
        )
    kr = by_rule.get("kappa")
    kap = estimates.kappa
    if kr is not None and kr.status == "revise" and kap.value is not None:
        reasons.append(
            Reason(
                "kappa_below_floor",
                f"kappa {num(kap.value)} ({ci(kap.ci_low, kap.ci_high, num)}) is below the floor "
                f"{num(t.kappa_floor)}{capped} even at its upper bound; "
                f"{plural(len(dis), 'disagreeing claim')}",
                kap.value,
                dis,
            )
        )
    dr = by_rule.get("direction")
    if dr is not None and dr.status in ("lenient", "strict"):
        lenient = dr.status == "lenient"
        mc = direction.mcnemar
        if lenient:
            side = (
                f"it called {mc.b} {unit} {POSITIVE} that humans did not, against {mc.c} the other way round"
            )
            bound = f"running lower bound of (lenient − strict)/n {num(dr.bound_low, 3)} > 0"
        else:
            side = (
                f"it denied {POSITIVE} to {mc.c} {unit} humans supported, against {mc.b} the other way round"
            )
            bound = f"running upper bound of (lenient − strict)/n {num(dr.bound_high, 3)} < 0"
        if dr.reading == "final":
            bound = _final_words(
                dr, "above 0" if lenient else "below 0", "lower" if lenient else "upper", lambda x: num(x, 3)
            )
        d = estimates.direction
        pop = ""
        if not estimates.equal_probability and d.lenient.value is not None and d.strict.value is not None:
            pop = (
                f"; estimated for {estimates.population or 'the population'}: lenient "
                f"{pct(d.lenient.value)}, strict {pct(d.strict.value)} of claims"
            )
        reasons.append(
            Reason(
                f"judge_{dr.status}",
                f"judge is {dr.status}: {side} ({bound}; exact McNemar {p_value(mc.p_two_sided)} beside "
                f"it){pop}",
                d.difference.value,
                tuple(direction.lenient_claims if lenient else direction.strict_claims),
            )
        )
    if reasons:
        return Flag("revise", tuple(reasons + ceiling_note), None, rules.reading, _end(rules))
    if ag.status == "ok":
        notes = [
            Reason(
                "agreement_meets_target",
                said("reaches", "at or above it", "lower", ag.bound_low),
                est,
                dis,
            )
        ]
        if kap.value is None:
            notes.append(
                Reason(
                    "kappa_undefined",
                    "kappa is undefined: humans and judge used one and the same class only",
                    None,
                    (),
                )
            )
        return Flag("ok", tuple(notes + ceiling_note), None, rules.reading, _end(rules))
    return Flag(
        "inconclusive",
        (
            Reason(
                "agreement_undecided",
                f"{what} {pct(est)} is not yet shown above or below the {share(t.agreement_target)} "
                f"target{capped} "
                f"(running bounds {pct(ag.bound_low)}–{pct(ag.bound_high)}; fixed-sample {fixed}); {chance}; "
                f"{more_target.sentence}; {plural(len(dis), 'disagreeing claim')}",
                est,
                dis,
            ),
            *ceiling_note,
        ),
        more_target.more_claims,
    )
