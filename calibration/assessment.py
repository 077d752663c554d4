"""One assessment per question: what a judge run's figures say in one scope, computed once.

`report.assess(db, run, cycle_id)` reads the scope's agreement report (`report.scope_report`)
and returns an `Assessment`: THE agreement figure and its interval, kappa, the direction, the flag,
the counts behind them. `of_report` builds the same object from a report's JSON form
(`Report.to_dict`), live or as a closed cycle's snapshot keeps it, so that a frozen cycle reads
exactly what Trend shows for it. Every screen and command that shows these figures reads them
from here: the Dashboard's header and sections, Trend, a closed cycle, the Judge lab's header,
`stats` and its JSON. A figure on another basis carries that basis (`Figure.basis`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .fmt import ci, num, pct, plural, points

DESIGN_BASED = "design-based, answers as clusters"
RAW_AGREEMENT = "the labeled claims as they are, Wilson interval"
RAW_CLAIMS = "the labeled claims as they are"
PER_REVIEWER = "each reviewer's blind verdict"


@dataclass(frozen=True, slots=True)
class Figure:
    """A figure with its 95% interval and the basis it is computed on, said wherever it is shown."""

    value: float | None
    low: float | None
    high: float | None
    basis: str
    reason: str | None = None  # why there is no interval

    def interval(self, show: Any = pct) -> str:
        """'74.1%–79.0% (basis)', or 'no interval (why)'."""
        if self.low is None or self.high is None:
            return f"no interval ({self.reason or 'SE is 0'})"
        return f"{ci(self.low, self.high, show)} ({self.basis})"

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "ci_low": self.low, "ci_high": self.high, "basis": self.basis}


def _figure(part: Mapping[str, Any], basis: str) -> Figure:
    return Figure(part.get("value"), part.get("ci_low"), part.get("ci_high"), basis, part.get("reason"))


@dataclass(frozen=True, slots=True)
class DirectionAnswer:
    """The one answer to "which way does the judge err?", for every screen and the CLI alike."""

    side: str | None  # "lenient" (misses hallucinations), "strict" (invents them), or None
    figures: str  # the shares, their difference and its interval, in words
    clause: str  # the answer in one sentence; "" when the judge erred neither way


def direction_answer(direction: Mapping[str, Any]) -> DirectionAnswer:
    """The direction of a report's JSON form (`Report.to_dict()["direction"]`, live or frozen).

    Described by its size: the design-based lenient and strict shares and their difference
    D = lenient - strict with its 95% interval (`estimation.direction_estimate`). The side is
    the flag's direction rule when it fired (`decisions.direction_rule`), else the side the
    interval lies on; "within chance" only when the interval holds 0. A frozen report without
    the design-based estimate says the counts and the rule alone."""
    lenient, strict = int(direction.get("lenient") or 0), int(direction.get("strict") or 0)
    rule = (direction.get("rule") or {}).get("status")
    est = direction.get("estimated") or {}
    diff = est.get("difference") or {}
    value, lo, hi = diff.get("value"), diff.get("ci_low"), diff.get("ci_high")
    side = rule if rule in ("lenient", "strict") else None
    if value is None:
        figures = f"{lenient:,} missed hallucinations against {strict:,} false alarms (no interval)"
    else:
        shares = [(est.get(k) or {}).get("value") for k in ("lenient_share", "strict_share")]
        interval = (
            "" if lo is None or hi is None else f", 95% CI {points(lo, unit='')} to {points(hi, unit='')}"
        )
        figures = f"misses {pct(shares[0])}, invents {pct(shares[1])} of claims: {points(value)}{interval}"
        if side is None and lo is not None and hi is not None and (lo > 0 or hi < 0):
            side = "lenient" if lo > 0 else "strict"
    if not lenient and not strict:
        return DirectionAnswer(None, figures, "")
    if side == "lenient":
        clause = "It misses hallucinations more often than it invents them."
    elif side == "strict":
        clause = "It invents hallucinations more often than it misses them."
    elif value is None or lo is None or hi is None:
        clause = "Whether it errs more one way than the other is not known: the difference has no interval."
    else:
        clause = "Its misses and false alarms are within chance of each other."
    return DirectionAnswer(side, figures, clause)


@dataclass(frozen=True, slots=True)
class ClaimCounts:
    """The claim counts pages show beside the figures, from one report: the one source the
    Dashboard, a closed cycle and the Judge lab read them from (`claim_counts`)."""

    labeled: int  # claims in the figures: a judge verdict and a human label to compare it with
    disagreeing: int  # every claim where the judge and the final human label differ
    listed: int  # of those, the ones a list may show
    sealed: int  # of those, the ones in the sealed holdout: counted, never listed
    unresolved: int  # reviewers disagree or marked it unclear, no lead decided (sealed included)
    unresolved_listed: int  # of those, the ones a list may show (the rest are sealed)
    verdicts: int = 0  # on the per-reviewer basis: the reviewers' verdicts compared (the matrix's sum)

    @property
    def unresolved_sealed(self) -> int:
        return self.unresolved - self.unresolved_listed

    def sentence(self) -> str:
        """The counts in one line: constant words and numbers. On the per-reviewer basis the
        figures compare each reviewer's verdict, so the line counts verdicts as the matrix does."""
        text = f"On {plural(self.labeled, 'labeled claim')}: {self.disagreeing:,} disagreeing"
        if self.sealed:
            text += f" ({self.sealed:,} of them in the sealed holdout, not listed)"
        if self.unresolved:
            text += f"; {self.unresolved:,} unresolved"
            if self.unresolved_sealed:
                text += f" ({self.unresolved_sealed:,} in the sealed holdout)"
        text += "."
        if self.verdicts:
            text += f" The figures compare each reviewer's verdict: {self.verdicts:,} verdicts in the matrix."
        return text


def claim_counts(data: Mapping[str, Any]) -> ClaimCounts:
    """The counts of a report's JSON form (`Report.to_dict`, live or as a closed cycle's snapshot
    keeps it), so a live report and a frozen one are counted by the same rule. The lists hold the
    disagreeing claims not sealed (`report._hide_sealed` withholds the sealed ids and counts them)."""
    matrix = np.asarray((data.get("confusion") or {}).get("matrix") or [[0]], dtype=np.int64)
    listed = len(data.get("disagreeing_claims") or [])
    per_reviewer = (data.get("agreement") or {}).get("basis") == "per_reviewer"
    # Claims, whatever the basis: the report counts its disagreeing claims, the sealed ones
    # included. A snapshot older than that count: the matrix's off-diagonal counts claims on the
    # final-label basis, but verdicts on the per-reviewer one, where only the list is known.
    if data.get("n_disagreeing") is not None:
        total = int(data["n_disagreeing"])
    else:
        total = listed if per_reviewer else int(matrix.sum() - np.trace(matrix))
    sealed = max(0, total - listed)
    unresolved = int(data.get("n_unresolved") or 0)
    unresolved_ids = data.get("unresolved_claims")
    unresolved_listed = len(unresolved_ids) if isinstance(unresolved_ids, list) else unresolved
    return ClaimCounts(
        int(data.get("n_claims") or 0),
        total,
        min(listed, total),
        sealed,
        unresolved,
        min(unresolved_listed, unresolved),
        int(matrix.sum()) if per_reviewer else 0,
    )


# The flag's status in a lead's words: every screen says a verdict through these.
STATUS_WORDS: dict[str, str] = {"ok": "ok", "revise": "revise", "inconclusive": "not yet decided"}
# Beside the verdict: which reading decided it (nothing for the running rule, the usual one).
_READING_WORDS: dict[str, str] = {"running": "", "final": " at the final reading"}


@dataclass(frozen=True, slots=True)
class Assessment:
    """A judge run's figures in one scope: the one value of each, with its basis."""

    run: str | None
    scope: str  # "every labeled claim of the run", "cycle week 1", "closed cycle week 1 (frozen at close)"
    status: str  # the flag: ok / revise / inconclusive
    agreement: Figure  # THE agreement figure: the estimate the flag reads
    kappa: Figure  # Cohen's kappa, on the same basis
    raw_agreement: Figure  # the labeled claims' own figure, beside it on its basis
    raw_kappa: Figure
    direction: DirectionAnswer
    lenient: int  # missed hallucinations: judge SUPPORTED, humans not
    strict: int  # false alarms: humans SUPPORTED, judge not
    mcnemar_p: float | None  # exact McNemar on the labeled claims alone, one look (not the flag's rule)
    counts: ClaimCounts
    n_answers: int
    basis: str  # "final_label" or "per_reviewer": what the judge is compared with
    population: str | None  # what the estimates are for
    target: float | None  # the agreement target the flag used (capped by the human ceiling)
    claims_needed: int | None  # the flag's "label about N more claims", when it says so
    # Whether labeling the claims the run has left is expected to decide the target (the flag's
    # simulated stopping time); None where the report does not say. `claims_left`: those claims.
    labels_decide: bool | None
    claims_left: int | None
    # Which reading decided the flag: "running" (valid at every look; also while undecided) or
    # "final" (once nothing was left to label, `decisions.final_reading`).
    reading: str = "running"
    # "labeling closed by X on DATE" once a lead closed the run's labeling (the final reading is
    # then the one taken at closing); None while it is open.
    closed: str | None = None
    # The report's JSON form it was read from: the sections that show more than these figures.
    source: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def agreement_note(self) -> str:
        """The headline agreement's interval and basis, with the raw figure beside it, named,
        where it differs: one figure per question, a second one on its basis."""
        text = self.agreement.interval()
        raw = self.raw_agreement.value
        if (
            self.agreement is not self.raw_agreement
            and raw is not None
            and pct(raw) != pct(self.agreement.value)
        ):
            text += f"; raw {pct(raw)} on {RAW_CLAIMS}"
        return text + (f"; {PER_REVIEWER}" if self.basis == "per_reviewer" else "")

    def kappa_note(self) -> str:
        text = self.kappa.interval(num)
        raw = self.raw_kappa.value
        if self.kappa is not self.raw_kappa and raw is not None and num(raw) != num(self.kappa.value):
            text += f"; raw {num(raw)} on {RAW_CLAIMS}"
        return text

    def reading_words(self) -> str:
        """ " at the final reading (labeling closed by X on DATE)" beside the verdict; "" for the
        running rule, the usual one."""
        said = _READING_WORDS[self.reading]
        return f"{said} ({self.closed})" if said and self.closed else said

    def line(self) -> str:
        """The assessment in one line: constant words and numbers (the Judge lab's header)."""
        if not self.counts.labeled or self.agreement.value is None:
            return "No claim has both a judge verdict and a final human label yet."
        return (
            f"verdict {STATUS_WORDS[self.status]}{self.reading_words()}; "
            f"agreement {pct(self.agreement.value)}, "
            f"{self.agreement.interval()}; Cohen's kappa {num(self.kappa.value)}. {self.counts.sentence()}"
        )

    def to_dict(self) -> dict[str, Any]:
        c = self.counts
        return {
            "run": self.run,
            "scope": self.scope,
            "flag": self.status,
            "reading": self.reading,
            "labeling_closed": self.closed,
            "agreement": self.agreement.to_dict(),
            "kappa": self.kappa.to_dict(),
            "raw_agreement": self.raw_agreement.to_dict(),
            "raw_kappa": self.raw_kappa.to_dict(),
            "direction": {
                "side": self.direction.side,
                "figures": self.direction.figures,
                "clause": self.direction.clause,
                "lenient": self.lenient,
                "strict": self.strict,
                "mcnemar_exact_p": self.mcnemar_p,
            },
            "basis": self.basis,
            "population": self.population,
            "n_claims": c.labeled,
            "n_answers": self.n_answers,
            "n_disagreeing": c.disagreeing,
            "n_unresolved": c.unresolved,
            "claims_needed": self.claims_needed,
            "labels_decide": self.labels_decide,
        }


def of_report(data: Mapping[str, Any], *, scope: str, run: str | None = None) -> Assessment:
    """The assessment of a report in its JSON form (`Report.to_dict`, as `assess` makes it, `stats
    --json` prints it and a closed cycle's snapshot keeps it): the design-based estimate the flag
    reads where the report has one, else (an older snapshot) the raw figure."""
    agreement = data.get("agreement") or {}
    kappa = data.get("kappa") or {}
    raw_a = _figure(agreement, RAW_AGREEMENT)
    raw_k = _figure(kappa, RAW_CLAIMS)
    est_a, est_k = agreement.get("estimated"), kappa.get("estimated")
    thresholds = data.get("thresholds_used") or data.get("thresholds") or {}
    flag = data.get("flag") or {}
    status = str(flag.get("status"))
    direction = data.get("direction") or {}
    needed = flag.get("claims_needed")
    more = (data.get("sample_size") or {}).get("more_claims_for_target")
    more = more if isinstance(more, dict) else {}
    return Assessment(
        run=run if run is not None else data.get("judge_run"),
        scope=scope,
        status=status if status in STATUS_WORDS else "inconclusive",
        agreement=raw_a if not est_a else _figure(est_a, DESIGN_BASED),
        kappa=raw_k if not est_k else _figure(est_k, "design-based"),
        raw_agreement=raw_a,
        raw_kappa=raw_k,
        direction=direction_answer(direction),
        lenient=int(direction.get("lenient") or 0),
        strict=int(direction.get("strict") or 0),
        mcnemar_p=direction.get("mcnemar_exact_p"),
        counts=claim_counts(data),
        n_answers=int(data.get("n_answers") or 0),
        basis=str(agreement.get("basis") or "final_label"),
        population=(data.get("scope") or {}).get("population"),
        target=thresholds.get("agreement_target"),
        claims_needed=int(needed) if needed else None,
        labels_decide=None if not more else more.get("median") is not None,
        claims_left=more.get("available"),
        reading="final" if flag.get("reading") == "final" else "running",
        closed=(data.get("labeling_closed") or {}).get("why"),
        source=data,
    )


def scope_words(cycle: str | None, *, closed: bool = False) -> str:
    """The scope an assessment is for, in words."""
    if cycle is None:
        return "every labeled claim of the run"
    return f"closed cycle {cycle} (frozen at close)" if closed else f"cycle {cycle}"


def of_snapshot(snapshot: Mapping[str, Any] | None) -> Assessment | None:
    """A closed cycle's frozen assessment; None when it froze no figures (or has no snapshot)."""
    report = (snapshot or {}).get("agreement")
    if not report:
        return None
    return of_report(report, scope=scope_words(snapshot.get("cycle") if snapshot else None, closed=True))
