"""What the lead's dashboard shows, gathered from the store and computed here; the page only draws.

`build(db, run=..., cycle=..., compare_with=...)` returns a `Dashboard`: the agreement report of
one judge run in a scope (one cycle, or every labeled claim of the run) with its flag, and the
pieces around it — the claims behind each reason, the direction in words, the trend over the
run's closed cycles, the breakdown by category, reviewer slips, human–human agreement, the
paired comparison with a second run and the disagreement table.

Cost on 100k labeled claims: two index-driven reads of the run's claims and labels, fetched as
arrays (`store.claim_table`, about 0.25 s); the report from those arrays (`report.scope_report`,
the one pipeline CLI `stats` and cycle close use too), its 2,000-resample
answer bootstrap dominating (about 0.25 s); reviewer counts, human-human agreement and the
category tables from the same arrays; for a comparison one more read of the other run's
verdicts; and index lookups for at most `DETAIL_ROWS` disagreeing claims: the table a person
reads is capped, the export has them all. No per-claim Python object is built on the way.
`fingerprint` is what a page keys its cache on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import agreement, cycles, estimation, flag, fmt, planning, store
from . import assessment as assessments
from . import report as reports
from . import split as splits
from .agreement import (
    POSITIVE,
    HumanHumanAgreement,
    RunComparison,
)
from .assessment import Assessment, ClaimCounts
from .fmt import cell_num as _num
from .fmt import cell_pct as _pct
from .fmt import cell_range as _range
from .fmt import plural
from .report import Report
from .store import Database
from .vocab import LABELS

# Rows of claim detail (claim text, chunks, rationale, notes) fetched for the tables: a lead
# reads tens of them; beyond this the export is the tool.
DETAIL_ROWS = 500
# Unresolved claims listed for a lead's decision, each with its own control; the CLI
# (`adjudicate`) and the export cover the rest.
PENDING_ROWS = 100
UNCLEAR = "unclear, needs discussion"

# Short constant titles per reason code; the page may render these as markdown.
REASON_TITLES: dict[str, str] = {
    "agreement_below_target": "agreement below target",
    "kappa_below_floor": "kappa below floor",
    "judge_lenient": "judge is lenient",
    "judge_strict": "judge is strict",
    "agreement_meets_target": "agreement meets target",
    "kappa_undefined": "kappa undefined",
    "agreement_undecided": "agreement undecided",
    "no_data": "no labeled claims",
}


@dataclass(frozen=True, slots=True)
class ClaimDetail:
    """One claim as the tables show it; every text field is untrusted and shown literally."""

    key: str  # ANSWER/CLAIM, the key the statistics use
    answer_id: str
    claim_id: str
    category: str | None
    claim: str
    human: str
    judge: str
    rationale: str
    notes: str  # "reviewer: note" lines
    chunks: str  # "[id] text" blocks: the cited chunks, or every chunk when none was cited


@dataclass(frozen=True, slots=True)
class ReasonView:
    code: str
    title: str  # constant text
    message: str  # built by the statistics module from numbers and constant words
    claim_keys: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TrendPoint:
    number: int  # 1, 2, ... in closing order: the chart's axis carries numbers only
    cycle: str
    closed_at: str | None
    n_claims: int | None
    agreement: float | None
    agreement_low: float | None
    agreement_high: float | None
    kappa: float | None
    kappa_low: float | None
    kappa_high: float | None


@dataclass(frozen=True, slots=True)
class CategoryRow:
    category: str | None
    n_claims: int
    agreement: float | None
    agreement_low: float | None
    agreement_high: float | None
    kappa: float | None
    lenient: int
    strict: int


@dataclass(frozen=True, slots=True)
class ReviewerRow:
    """Slip figures count only labels given on the review page (blind, then reconciled with the
    judge revealed); imported labels never saw the judge and count in `labeled` only."""

    reviewer: str
    labeled: int
    reviewed: int  # labels reconciled on the review page: the slip rate's denominator
    disagreed_blind: int  # reviewed labels whose blind verdict differed from this run's judge
    kept: int  # reconciled with keep: a judge error the reviewer stood by
    judge_right: int  # reconciled by adopting the judge's verdict
    slips: int  # judge_right that changed the verdict: the reviewer's own slip
    slip_rate: float | None  # None: no reviewed label yet
    slip_low: float | None
    slip_high: float | None


@dataclass(frozen=True, slots=True)
class PendingClaim:
    """An unresolved claim a lead must decide: text fields untrusted, shown literally."""

    claim_pk: int
    key: str
    answer_id: str
    claim_id: str
    claim: str
    chunks: str
    judge: str  # this run's verdict
    rationale: str
    reviewers: tuple[dict[str, str], ...]  # {"reviewer", "verdict", "note"}; verdict may be "unclear…"


@dataclass(frozen=True, slots=True)
class Comparison:
    run_a: str
    run_b: str
    result: RunComparison
    unresolved: int  # claims both runs judged whose reviewers disagree, not adjudicated
    text: str
    better: str | None  # the run better beyond chance (`RunComparison.better`), else None


@dataclass(frozen=True, slots=True)
class Dashboard:
    run: str
    cycle: str | None  # None: every labeled claim of the run
    report: Report
    assessment: Assessment  # the scope's figures, as every screen shows them (`assessment.assess`)
    thresholds: flag.Thresholds
    n_unlabeled: int
    oversampled: bool  # the cycle drew answers with unequal probabilities: weighted figure shown
    reasons: tuple[ReasonView, ...]
    direction_text: str
    sample_size_text: str
    confusion: tuple[dict[str, Any], ...]  # (human, judge, count) cells, every pair present
    per_class: tuple[dict[str, Any], ...]
    trend: tuple[TrendPoint, ...]
    categories: tuple[CategoryRow, ...]
    reviewers: tuple[ReviewerRow, ...]
    human_human: HumanHumanAgreement | None
    # claim key -> (human, judge) for every claim a table may list (`report.listed_verdicts`):
    # the disagreeing ones and each reason's; the report holds the counts of the rest.
    verdicts: dict[str, tuple[str, str]]
    details: dict[str, ClaimDetail]  # the first DETAIL_ROWS disagreeing claims, and of each reason
    comparison: Comparison | None
    pending: tuple[PendingClaim, ...] = ()  # the first PENDING_ROWS unresolved claims
    # Keys of the sealed holdout claims (`split.sealed_claim_keys`): no claim list shows them.
    sealed: frozenset[str] = frozenset()
    decision: Decision | None = None  # the header; None only for a Dashboard built by hand
    open_cycle: bool = False  # the scope is a cycle still open
    next_cycle: cycles.NextCycle | None = None  # what a next cycle of the run can do (`cycles.next_cycle`)

    @property
    def disagreements(self) -> list[ClaimDetail]:
        return self.claims([k for k in self.report.disagreeing_claims if k not in self.sealed][:DETAIL_ROWS])

    def claims(self, keys: Sequence[str]) -> list[ClaimDetail]:
        """The fetched claims among `keys`, in order: each has its text and verdict cells."""
        return [self.details[k] for k in keys if k in self.details]


# ---------------------------------------------------------------- choices for the page


def run_names(db: Database) -> list[str]:
    return [r.name for r in store.judge_runs(db)]


def default_run(db: Database) -> str:
    """The run the page opens on: the run the team reviewed last (the run of the cycle with the
    most recent label), else the most recently imported run with human-labeled claims, else
    `store.find_judge_run(db, None)` (the most recently imported run)."""
    run_id = store.dashboard.latest_active_cycle_run(db)
    if run_id is None:
        run_id = store.dashboard.latest_labeled_import(db)
    if run_id is not None:
        for r in store.judge_runs(db):
            if r.id == run_id:
                return r.name
    return store.find_judge_run(db, None).name


def cycle_names(db: Database, run: str) -> list[str]:
    """Cycles of one run, oldest first."""
    return store.dashboard.cycle_names(db, store.find_judge_run(db, run).id)


def fingerprint(db: Database) -> tuple[Any, ...]:
    """What a page keys its cache on: changes whenever anything the dashboard shows could have
    changed (`store.dashboard.fingerprint`, and the split's seal); cheap, index ends only."""
    return (*store.dashboard.fingerprint(db), *splits.fingerprint(db))


# ---------------------------------------------------------------- build


def build(
    db: Database,
    *,
    run: str,
    cycle: str | None = None,
    compare_with: str | None = None,
    bootstrap: int | None = None,
    seed: int = 0,
) -> Dashboard:
    """Everything the dashboard shows for `run` within `cycle` (None: every labeled claim).

    `bootstrap` None draws `report.BOOTSTRAP` resamples; 0 skips the bootstrap.
    """
    judge_run = store.find_judge_run(db, run)
    cycle_id = None if cycle is None else store.cycle_id(db, cycle)
    thresholds = store.load_thresholds(db)
    # The one pipeline for a scope's report and its assessment (CLI stats and cycle close use it
    # too); the rest of the page is read from the same claim table.
    scope, assessed = reports.assess(db, judge_run, cycle_id, cycle=cycle, bootstrap=bootstrap, seed=seed)
    data, report, oversampled = scope.data, scope.report, scope.oversampled
    hh = report.human_human

    # Verdicts of the claims a table can list, on the figures' basis: with several reviewers a
    # reason also lists claims whose final label agrees with the judge, or that have none yet.
    listed = [*report.disagreeing_claims, *(k for r in report.flag.reasons for k in r.claim_ids)]
    verdicts = reports.listed_verdicts(scope.table, listed)
    categories = _categories(db, data, assessed)
    # The disagreement table's first rows and each reason's first rows: the claims a page lists,
    # never a sealed holdout claim (the figures above still count them).
    sealed = scope.sealed  # read once, by the report pipeline
    wanted = dict.fromkeys([k for k in report.disagreeing_claims if k not in sealed][:DETAIL_ROWS])
    for reason in report.flag.reasons:
        wanted.update(dict.fromkeys([k for k in reason.claim_ids if k not in sealed][:DETAIL_ROWS]))
    details = _details(db, judge_run.id, list(wanted), verdicts)
    open_cycle = cycle_id is not None and any(
        r.status == "open" for r in store.cycles.cycle_records(db, cycle_id=cycle_id)
    )
    comparison = None
    if compare_with is not None and compare_with != judge_run.name:
        comparison = compare(
            db, judge_run.name, compare_with, cycle_id=cycle_id, data_a=data, thresholds=thresholds
        )
    nxt = cycles.next_cycle(db, judge_run.name)
    return Dashboard(
        run=judge_run.name,
        cycle=cycle,
        report=report,
        assessment=assessed,
        thresholds=thresholds,
        n_unlabeled=data.unlabeled,
        oversampled=oversampled,
        reasons=tuple(
            ReasonView(
                r.code,
                REASON_TITLES.get(r.code, r.code.replace("_", " ")),
                r.message,
                # The claims a table can list: never sealed, each with its verdict cells.
                tuple(k for k in r.claim_ids if k not in sealed and k in verdicts),
            )
            for r in report.flag.reasons
        ),
        direction_text=direction_text(assessed),
        sample_size_text=sample_size_text(report),
        confusion=tuple(
            {"human": h, "judge": j, "count": int(report.confusion[i][k])}
            for i, h in enumerate(LABELS)
            for k, j in enumerate(LABELS)
        ),
        per_class=tuple(
            {"class": label, "precision": m.precision, "recall": m.recall, "f1": m.f1, "support": m.support}
            for label, m in report.per_class.items()
        ),
        trend=tuple(trend(db, judge_run.id)),
        categories=tuple(categories),
        reviewers=tuple(reviewer_rows_of(data.labels)),
        human_human=hh,
        verdicts={k: v for k, v in verdicts.items() if k not in sealed},
        details=details,
        comparison=comparison,
        pending=tuple(
            c
            for c in pending_claims(db, judge_run.id, data.unresolved_pk[:PENDING_ROWS].tolist())
            if c.key not in sealed
        ),
        sealed=sealed,
        decision=decision(assessed, open_cycle=open_cycle, next_cycle=nxt, cycle_scope=cycle_id is not None),
        next_cycle=nxt,
        open_cycle=open_cycle,
    )


def pending_claims(db: Database, run_id: int, claim_pks: Sequence[int]) -> list[PendingClaim]:
    """The claims behind `claim_pks` (in that order) as a lead reads them to adjudicate:
    text, chunks, each reviewer's verdict or unclear mark with the note, the run's verdict."""
    by_pk = {}
    for row in store.dashboard.pending_rows(db, run_id, claim_pks):
        cited: set[str] = set(row.judge_evidence)
        reviewers = []
        for reviewer, status, final, note, evidence in row.labels:
            cited.update(evidence or [])
            verdict = final if status == "labeled" and final else UNCLEAR if status == "unclear" else status
            reviewers.append({"reviewer": reviewer, "verdict": verdict, "note": note or ""})
        by_pk[row.claim_pk] = PendingClaim(
            row.claim_pk,
            f"{row.answer_id}/{row.claim_id}",
            row.answer_id,
            row.claim_id,
            row.text,
            _chunk_text(row.chunks, cited),
            row.judge or "",
            row.rationale or "",
            tuple(reviewers),
        )
    return [by_pk[pk] for pk in claim_pks if pk in by_pk]


# ---------------------------------------------------------------- words


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n:,} times"


def direction_text(a: Assessment) -> str:
    """The Direction section's words: the counts, the header's answer (`Assessment.direction`)
    and, labelled with its basis, the exact McNemar test on the labeled claims as one look."""
    if a.counts.labeled == 0:
        return "No claim has both a judge verdict and a final human label yet."
    answer = a.direction
    return (
        f"The judge calls {POSITIVE} where reviewers did not: {_times(a.lenient)}; "
        f"the reverse (reviewers {POSITIVE}, judge not): {_times(a.strict)}. "
        f"Estimated for the claims the labels represent: {answer.figures}. "
        + (answer.clause or "It errs neither way.")
        + f" (Exact McNemar on the labeled claims alone, one look: {fmt.p_value(a.mcnemar_p)}.)"
    )


def sample_size_text(report: Report) -> str:
    s = report.sample_size
    t = report.thresholds
    if report.n_claims == 0:
        return "Label claims to get figures."
    if s.more_claims_for_kappa is None:
        kappa = "kappa has no standard error to plan from"
    elif s.more_claims_for_kappa == 0:
        kappa = f"the kappa interval is already within ±{s.kappa_half_width:.2f}"
    else:
        kappa = (
            f"label about {plural(s.more_claims_for_kappa, 'more claim')} for a kappa interval of "
            f"±{s.kappa_half_width:.2f}"
        )
    goal = f"{100 * t.agreement_target:g}%"
    if s.more_claims_for_target is None:
        target = s.target_sentence or f"no sample size decides the {goal} target at this agreement"
    elif s.more_claims_for_target == 0:
        # The flag's own words (`stats` prints them too): "the 85% target is already decided".
        target = s.target_sentence or f"the {goal} target is already decided"
    else:
        target = f"about {s.more_claims_for_target:,} more to decide the {goal} target at this agreement"
    return f"{plural(report.n_claims, 'claim')} in {plural(report.n_answers, 'answer')}: {kappa}; {target}."


# ---------------------------------------------------------------- pieces


def _categories(db: Database, data: store.StatsColumns, whole: Assessment) -> list[CategoryRow]:
    """One row per category: its labeled claims' raw figures (`BREAKDOWN_BASIS`). With one
    category its row is the whole scope, so it shows the scope's assessment, not a second figure."""
    if not len(data):
        return []
    category = store.dashboard.answer_categories(db, data.answer_ids)
    names = sorted(set(category.values()), key=lambda c: (c is None, c or ""))
    if len(names) == 1:
        a = whole.agreement
        return [
            CategoryRow(
                names[0],
                whole.counts.labeled,
                a.value,
                a.low,
                a.high,
                whole.kappa.value,
                whole.lenient,
                whole.strict,
            )
        ]
    index = {c: i for i, c in enumerate(names)}
    k = len(LABELS)
    # One 3x3 table per category from a single bincount, then the statistics per table.
    of_cluster = np.array([index[category[a]] for a in data.answer_ids], dtype=np.int64)
    cells = (of_cluster[data.cluster] * k + data.human) * k + data.judge
    tables = np.bincount(cells, minlength=len(names) * k * k).reshape(len(names), k, k)
    pos = agreement.label_index(POSITIVE)
    out = []
    for name, table in zip(names, tables, strict=True):
        pct = agreement.percent_agreement(table)
        kap = agreement.cohens_kappa(table)
        two = agreement.binary_collapse(table, pos)
        out.append(
            CategoryRow(
                name,
                int(table.sum()),
                _f(pct.value),
                _f(pct.ci_low),
                _f(pct.ci_high),
                _f(kap.value),
                lenient=int(two[1, 0]),
                strict=int(two[0, 1]),
            )
        )
    return [row for row in out if row.n_claims]


BREAKDOWN_BASIS = (
    "Basis: each row's claims with a final human label (unanimous or adjudicated), raw agreement "
    "with its Wilson interval, claims counted as independent; the header's figure is the "
    "design-based estimate for the whole scope, so a row may differ from it."
)
TREND_BASIS = (
    "Each closed cycle's figures as frozen when it closed: the design-based estimate for the "
    "cycle's scope, the figures its own header shows on the Cycles page."
)
ONE_CATEGORY = (
    "Every labeled claim is in one category: its row is the whole scope, with the header's "
    "figures and counts."
)


def confusion_caption(d: Dashboard) -> str:
    """What the confusion matrix counts, its total said as its cells sum."""
    total = sum(c["count"] for c in d.confusion)
    a = d.assessment
    if a.basis == "per_reviewer":
        claims = plural(a.counts.labeled, "labeled claim")
        return f"{total:,} verdicts: each reviewer's verdict (blind where given) on the {claims}."
    return f"{plural(total, 'labeled claim')}: the final human label against the judge's verdict."


def _f(x: float | None) -> float | None:
    return None if x is None else float(x)


def _details(
    db: Database, run_id: int, keys: Sequence[str], verdicts: dict[str, tuple[str, str]]
) -> dict[str, ClaimDetail]:
    out: dict[str, ClaimDetail] = {}
    # Keys are "ANSWER/CLAIM" and ids may hold "/" themselves: the store looks up every split;
    # only claims whose key is in the report are kept.
    for row in store.dashboard.claim_details(db, run_id, keys):
        key = f"{row.answer_id}/{row.claim_id}"
        if key not in verdicts:
            continue
        cited: set[str] = set(row.judge_evidence)
        for ev in row.reviewer_evidence:
            cited.update(ev)
        human, judge = verdicts[key]
        out[key] = ClaimDetail(
            key,
            row.answer_id,
            row.claim_id,
            row.category,
            row.text,
            human,
            judge,
            row.rationale or "",
            row.notes or "",
            _chunk_text(row.chunks, cited),
        )
    return out


def _chunk_text(chunks: Sequence[tuple[int, str, str]], cited: set[str]) -> str:
    """ "[id] text" blocks: the cited chunks, or every chunk when none was cited."""
    shown = [c for c in chunks if c[1] in cited] or chunks
    return "\n\n".join(f"[{c[1]}] {c[2]}" for c in shown)


def trend(db: Database, run_id: int) -> list[TrendPoint]:
    """Figures frozen when each closed cycle of the run closed, in closing order."""
    out = []
    for i, (name, closed_at, snap) in enumerate(store.dashboard.closed_snapshots(db, run_id), start=1):
        # The closed cycle's own assessment: what its page shows, not a second reading.
        a = assessments.of_snapshot(snap)
        if a is None:
            out.append(TrendPoint(i, name, closed_at, None, None, None, None, None, None, None))
            continue
        ag, k = a.agreement, a.kappa
        out.append(
            TrendPoint(
                i, name, closed_at, a.counts.labeled, ag.value, ag.low, ag.high, k.value, k.low, k.high
            )
        )
    return out


def reviewer_rows_of(labels: store.ReviewerColumns) -> list[ReviewerRow]:
    """Per reviewer, on the claims the run judged (within the cycle): labels, reconciles, slips,
    from the labels the stats columns already hold: one bincount per figure."""
    r, m = labels.reviewer, len(labels.reviewers)

    def count(mask: np.ndarray) -> list[int]:
        return [int(v) for v in np.bincount(r[mask], minlength=m)]

    every = np.ones(r.size, dtype=bool)
    reviewed = labels.reconciled > 0  # blind, then reconciled on the review page; never an import
    slips = np.zeros(m, dtype=np.int64)
    np.add.at(slips, r, labels.slip)
    changed = reviewed & (labels.blind >= 0) & (labels.blind != labels.judge)
    columns = (
        count(every),
        count(reviewed),
        count(changed),
        count(labels.reconciled == 1),
        count(labels.reconciled == 2),
        slips.tolist(),
    )
    return [_reviewer_row(name, *figures) for name, *figures in zip(labels.reviewers, *columns, strict=True)]


def _reviewer_row(
    reviewer: str, labeled: int, reviewed: int, disagreed: int, kept: int, right: int, slips: int
) -> ReviewerRow:
    ci = estimation.wilson_interval(slips, reviewed) if reviewed else None
    return ReviewerRow(
        reviewer,
        labeled,
        reviewed,
        disagreed,
        kept,
        right,
        slips,
        slips / reviewed if reviewed else None,
        ci[0] if ci else None,
        ci[1] if ci else None,
    )


def compare(
    db: Database,
    run_a: str,
    run_b: str,
    *,
    cycle_id: int | None = None,
    data_a: store.StatsColumns | None = None,
    thresholds: flag.Thresholds | None = None,
) -> Comparison | None:
    """Two runs on the claims both judged and humans labeled: agreement each, paired exact McNemar.

    `data_a`: run A's stats columns when the caller already read them (the dashboard has). A
    claim's final human label does not depend on the run, so run B adds only its verdicts.
    """
    a = store.find_judge_run(db, run_a)
    b = store.find_judge_run(db, run_b)
    if data_a is None:
        data_a = store.stats_columns(db, a.id, cycle_id, reviewer_labels="none")
    b_pk, b_judge = store.run_verdicts(db, b.id)
    at = np.searchsorted(b_pk, data_a.claim_pk)
    at[at == b_pk.size] = 0
    both = (b_pk[at] == data_a.claim_pk) if b_pk.size else np.zeros(len(data_a), dtype=bool)
    unresolved = int(np.isin(data_a.unresolved_pk, b_pk).sum())
    if not both.any():
        return None
    keep = np.flatnonzero(both)
    keys = data_a.keys if keep.size == len(data_a) else [data_a.keys[i] for i in keep.tolist()]
    result = agreement.compare_judge_runs(data_a.human[keep], data_a.judge[keep], b_judge[at[keep]], keys)
    alpha = (thresholds or store.load_thresholds(db)).alpha
    better = {"a": a.name, "b": b.name, None: None}[result.better(alpha)]
    return Comparison(
        a.name, b.name, result, unresolved, comparison_text(a.name, b.name, result, alpha), better
    )


def comparison_text(run_a: str, run_b: str, r: RunComparison, alpha: float) -> str:
    only_a, only_b = len(r.only_a_right), len(r.only_b_right)
    p = r.mcnemar.p_two_sided
    text = (
        f"On {plural(r.n_claims, 'claim')} both runs judged and humans labeled: {run_a} alone was right "
        f"{_times(only_a)}, {run_b} alone {_times(only_b)} (exact McNemar {fmt.p_value(p)})."
    )
    better = r.better(alpha)
    if better is not None:
        return text + f" {run_a if better == 'a' else run_b} is better beyond chance."
    return text + " The difference could be noise."


# ---------------------------------------------------------------- rows and figures for the page


@dataclass(frozen=True, slots=True)
class Figure:
    """One headline number: constant label, the value as text, and its interval or note."""

    label: str
    value: str
    note: str


DASH = fmt.DASH  # a figure that is undefined: never "None" or "nan" in a cell


def readable_time(ts: str | None) -> str:
    """An ISO timestamp as '29 Nov 2026, 14:02 UTC'; '–' for none, the text itself if unparsable."""
    from datetime import UTC, datetime

    if not ts:
        return DASH
    try:
        t = datetime.fromisoformat(ts)
    except ValueError:
        return ts
    if t.tzinfo is not None:
        t = t.astimezone(UTC)
    return t.strftime("%-d %b %Y, %H:%M") + (" UTC" if t.tzinfo is not None else "")


def per_class_rows(d: Dashboard) -> list[dict[str, Any]]:
    return [
        {
            "class": c["class"],
            "precision": _pct(c["precision"]),
            "recall": _pct(c["recall"]),
            "F1": _pct(c["f1"]),
            "support": c["support"],
        }
        for c in d.per_class
    ]


def trend_rows(d: Dashboard) -> list[dict[str, Any]]:
    return [
        {
            "cycle #": t.number,
            "cycle": t.cycle,
            "closed": readable_time(t.closed_at),
            "claims": DASH if t.n_claims is None else f"{t.n_claims:,}",
            "agreement": _pct(t.agreement),
            "agreement 95% CI": _range(t.agreement_low, t.agreement_high),
            "kappa": _num(t.kappa),
            "kappa 95% CI": _range(t.kappa_low, t.kappa_high, _num),
        }
        for t in d.trend
    ]


def category_rows(d: Dashboard) -> list[dict[str, Any]]:
    return [
        {
            "category": c.category or "(none)",
            "claims": c.n_claims,
            "agreement": _pct(c.agreement),
            "agreement 95% CI": _range(c.agreement_low, c.agreement_high),
            "kappa": _num(c.kappa),
            "judge lenient": c.lenient,
            "judge strict": c.strict,
        }
        for c in d.categories
    ]


NO_REVIEWED = "no reviewed labels yet"


def reviewer_times(db: Database, run: str, cycle: str | None = None) -> dict[str, float]:
    """Reviewer -> median seconds per claim (review-page card shown to verdict or unclear) on the
    run's claims, within the cycle when given; reviewers without a recorded time are absent."""
    cycle_pk = store.cycle_id(db, cycle) if cycle is not None else None
    times = store.review.label_durations(db, store.find_judge_run(db, run).id, cycle_pk)
    return {who: float(np.median(ms)) / 1000 for who, ms in times.items() if ms}


def reviewer_table(d: Dashboard, times: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """Slip figures over the labels reviewed on the review page only; imports are not 0% slips.
    `times` (`reviewer_times`) adds the median time per claim."""
    out = []
    for r in d.reviewers:
        none = r.reviewed == 0
        extra = (
            {}
            if times is None
            else {"median time per claim": f"{times[r.reviewer]:.1f} s" if r.reviewer in times else DASH}
        )
        out.append(
            {
                "reviewer": r.reviewer,
                "labeled": r.labeled,
                "reviewed (blind, then reconciled)": r.reviewed,
                "blind ≠ judge": DASH if none else f"{r.disagreed_blind:,}",
                "kept (judge error)": DASH if none else f"{r.kept:,}",
                "adopted judge": DASH if none else f"{r.judge_right:,}",
                "slips": DASH if none else f"{r.slips:,}",
                "slip rate": NO_REVIEWED if none else _pct(r.slip_rate),
                "slip rate 95% CI": DASH if none else _range(r.slip_low, r.slip_high),
                **extra,
            }
        )
    return out


def comparison_rows(agr: agreement.Estimate, kap: agreement.KappaResult) -> list[dict[str, str]]:
    """One run's figures on the claims both runs judged: raw, on another basis than the header."""
    return [
        {
            "figure": "agreement (raw, shared claims)",
            "value": _pct(agr.value),
            "95% CI": _range(agr.ci_low, agr.ci_high),
        },
        {
            "figure": "kappa (raw, shared claims)",
            "value": _num(kap.value),
            "95% CI": _range(kap.ci_low, kap.ci_high, _num),
        },
    ]


def pending_rows(d: Dashboard) -> list[dict[str, str]]:
    """The unresolved claims as one table: ids, claim, each reviewer's verdict, the judge's."""
    return [
        {
            "answer": p.answer_id,
            "claim id": p.claim_id,
            "claim": p.claim,
            "reviewers": "; ".join(f"{r['reviewer']}: {r['verdict']}" for r in p.reviewers),
            "judge": p.judge or DASH,
        }
        for p in d.pending
    ]


def left_out_text(d: Dashboard) -> str:
    """What the figures leave out, in words; '' when nothing is."""
    parts = []
    unresolved = len(d.report.unresolved_claims)
    # On the per-reviewer basis a disputed claim is in the figures, once per reviewer's verdict.
    counted = d.report.basis == "per_reviewer"
    if unresolved and not counted:
        parts.append(
            f"{plural(unresolved, 'unresolved claim')} (reviewers disagree or "
            "marked it unclear, and no lead has decided: see “Needs a lead's decision”)"
        )
    if d.n_unlabeled:
        parts.append(f"{plural(d.n_unlabeled, 'judged claim')} with no human label yet")
    text = ("Left out of the figures: " + "; ".join(parts) + ".") if parts else ""
    if unresolved and counted:
        text += (" " if text else "") + (
            f"{plural(unresolved, 'unresolved claim')} (reviewers disagree or marked it unclear) "
            "counted with each reviewer's verdict where one was given; a lead's decision settles "
            "it for the final-label view (see “Needs a lead's decision”)."
        )
    return text


def headline(d: Dashboard) -> list[Figure]:
    """Agreement and kappa with intervals, AC1, PABAK and, for an oversampled cycle, the weighted figure."""
    r = d.report
    k, ab, kb = r.kappa, r.agreement_bootstrap, r.kappa_bootstrap
    boot_a = (
        ""
        if ab.ci_low is None
        else (f"; answer bootstrap {_range(ab.ci_low, ab.ci_high)} ({ab.resamples:,} resamples)")
    )
    boot_k = (
        ""
        if kb.ci_low is None
        else (f"; answer bootstrap {_range(kb.ci_low, kb.ci_high, _num)} ({kb.resamples:,} resamples)")
    )
    kmax = "" if k.kappa_max is None else f"; highest possible with these margins {_num(k.kappa_max)}"
    # The header's figures (`Assessment`): the design-based estimate first, the labeled claims'
    # raw figure beside it, named, where they differ.
    a = d.assessment
    out = [
        Figure("Agreement", _pct(a.agreement.value), f"{a.agreement_note()}{boot_a}"),
        Figure("Cohen's kappa", _num(a.kappa.value), f"{a.kappa_note()}{boot_k}{kmax}"),
        Figure("Gwet's AC1", _num(r.ac1), "beside kappa, stable when one class dominates"),
        Figure(
            "PABAK",
            _num(r.direction.prevalence_bias.pabak),
            f"{POSITIVE} vs not, prevalence- and bias-adjusted",
        ),
    ]
    if d.oversampled and r.weighted is not None:
        w = r.weighted
        n_eff = "" if w.n_effective is None else f"; effective n {w.n_effective:.0f}"
        out.append(
            Figure(
                "Re-weighted agreement",
                _pct(w.value),
                f"{fmt.ci(w.ci_low, w.ci_high)} (answer bootstrap); raw {_pct(w.raw)}{n_eff}; "
                "the flag reads this figure, re-weighted to the run",
            )
        )
    return out


def human_human_text(d: Dashboard) -> str:
    hh = d.human_human
    if hh is None or hh.n_claims == 0:
        return "No claim in this scope was labeled by more than one reviewer."
    kappa = "" if hh.kappa is None or hh.kappa.value is None else f", Cohen's kappa {hh.kappa.value:.2f}"
    ci = fmt.ci(hh.agreement.ci_low, hh.agreement.ci_high)
    return (
        f"On {plural(hh.n_claims, 'claim')} labeled by several reviewers "
        f"({len(hh.reviewers)} reviewers): "
        f"pairwise agreement {_pct(hh.agreement.value)} ({ci}){kappa}, "
        f"Krippendorff's alpha {_num(hh.alpha)}."
    )


def claim_rows(d: Dashboard, keys: Sequence[str], limit: int = DETAIL_ROWS) -> list[dict[str, Any]]:
    """Table rows for claim keys, each with its claim, human and judge cells (a claim without
    them is not listed)."""
    return [
        {
            "answer": det.answer_id,
            "claim id": det.claim_id,
            "claim": det.claim,
            "human": det.human,
            "judge": det.judge,
        }
        for det in d.claims(keys[:limit])
    ]


def human_cell_note(d: Dashboard) -> str:
    """What a claim list's human cell holds when it is not simply the final label; '' when it is."""
    if d.report.basis != "per_reviewer":
        return ""
    return (
        "Human: each reviewer's verdict on the claim (blind where given), as the figures count them; "
        "two verdicts (A / B) where the reviewers differ."
    )


def disagreement_rows(d: Dashboard) -> list[dict[str, Any]]:
    return [
        {
            "answer": c.answer_id,
            "claim id": c.claim_id,
            "claim": c.claim,
            "human": c.human,
            "judge": c.judge,
            "judge rationale": c.rationale,
            "reviewer notes": c.notes,
            "chunks": c.chunks,
            "category": c.category or "",
        }
        for c in d.disagreements
    ]


# ---------------------------------------------------------------- seed 003's answer checks as a slice


CHECK_GROUPS = ("flagged", "not flagged", "not checked")


@dataclass(frozen=True, slots=True)
class CheckSliceRow:
    """Labeled claims of one group of answers: flagged by an answer check, not flagged, or never checked."""

    group: str
    n_answers: int
    n_claims: int
    agreement: float | None
    ci_low: float | None
    ci_high: float | None
    judge_grounding: float | None  # share of the claims the judge called SUPPORTED
    human_grounding: float | None  # the same share by the final human labels: the corrected score


def check_slices(
    human: np.ndarray,
    judge: np.ndarray,
    cluster: np.ndarray,
    answer_ids: Sequence[str],
    flagged: set[str],
    checked: set[str],
) -> list[CheckSliceRow]:
    """Agreement and grounding score per answer-check group (pure; numpy only).

    `human`, `judge`: verdict indices into LABELS, one per labeled claim; `cluster`: the claim's
    index into `answer_ids`. Agreement is observed agreement trace(T)/n with its Wilson
    interval on claims, as in the category table (`agreement.percent_agreement`); the grounding
    score is seed 000's share of SUPPORTED claims, by the judge and by the final human label
    (the judge's score corrected by the reviewers, on the claims they labeled). Groups with no
    labeled claim are left out.
    """
    k = len(LABELS)
    pos = agreement.label_index(POSITIVE)
    group_of_answer = np.array(
        [0 if a in flagged else (1 if a in checked else 2) for a in answer_ids], dtype=np.int64
    )
    group = group_of_answer[cluster] if len(cluster) else np.zeros(0, dtype=np.int64)
    out: list[CheckSliceRow] = []
    for g, name in enumerate(CHECK_GROUPS):
        mask = group == g
        n = int(mask.sum())
        if not n:
            continue
        table = np.bincount(human[mask] * k + judge[mask], minlength=k * k).reshape(k, k)
        pct = agreement.percent_agreement(table)
        out.append(
            CheckSliceRow(
                name,
                int(np.unique(cluster[mask]).size),
                n,
                _f(pct.value),
                _f(pct.ci_low),
                _f(pct.ci_high),
                float(np.mean(judge[mask] == pos)),
                float(np.mean(human[mask] == pos)),
            )
        )
    return out


def answer_check_slices(db: Database, *, run: str, cycle: str | None = None) -> list[CheckSliceRow]:
    """`check_slices` for the labeled claims of `run` (within `cycle`), from the stored checks."""

    judge_run = store.find_judge_run(db, run)
    cycle_id = None if cycle is None else store.cycle_id(db, cycle)
    data = store.claim_table(db, judge_run.id, cycle_id).resolved(reviewer_labels="none")
    return check_slices(
        data.human,
        data.judge,
        data.cluster,
        data.answer_ids,
        store.checks.flagged_answers(db),
        store.checks.checked_answers(db),
    )


def check_slice_rows(rows: Sequence[CheckSliceRow]) -> list[dict[str, Any]]:
    """The slice as table rows for the page."""
    return [
        {
            "answers": r.group,
            "answers n": r.n_answers,
            "labeled claims": r.n_claims,
            "agreement": _pct(r.agreement),
            "95% interval": _range(r.ci_low, r.ci_high),
            "grounding (judge)": _pct(r.judge_grounding),
            "grounding (human, corrected)": _pct(r.human_grounding),
        }
        for r in rows
    ]


# ---------------------------------------------------------------- the pipeline's grounding score


def _corrected(g: dict[str, Any]) -> str:
    s = g["supported_rate"]
    if s["value"] is None:
        return fmt.DASH
    if s["ci_low"] is None or s["ci_high"] is None:
        return fmt.pct(s["value"])
    return f"{fmt.pct(s['value'])} ({fmt.ci(s['ci_low'], s['ci_high'])})"


def _points(x: float | None) -> str:
    return fmt.MISSING if x is None else f"{x * 100:+.1f}"


def pipeline_text(d: Dashboard) -> list[str]:
    """The grounding score in sentences: the judge's own rate, the corrected one, the assumption."""
    p = d.report.pipeline
    if not p:
        return ["The grounding score is computed for a whole judge run: choose all labeled claims."]
    s = p["supported_rate"]
    lines = [
        f"The judge calls {fmt.pct(p['judge_supported_rate'])} of the run's "
        f"{plural(p['n_judged'], 'judged claim')} SUPPORTED; corrected by its errors measured on "
        f"{plural(p['n_labeled'], 'labeled claim')}, the share people would call SUPPORTED is "
        f"{_corrected(p)}."
    ]
    if s.get("reason"):
        lines.append(f"({s['reason']}.)")
    lines.append(f"Assumes {p['assumption']}.")
    for diff in p.get("pipeline_differences", []):
        if diff.get("value") is None:
            continue
        line = (
            f"Pipeline {diff['a']} against {diff['b']}: {diff['value'] * 100:+.1f} points "
            f"({fmt.ci(diff.get('ci_low'), diff.get('ci_high'), _points)})"
        )
        t = diff.get("transfer_test")
        if t and t.get("p_value") is not None:
            line += (
                f"; the judge's error rates differ between the two ({fmt.p_value(t['p_value'])})"
                if t["p_value"] < 0.05
                else f"; no sign that the judge errs differently on them ({fmt.p_value(t['p_value'])})"
            )
        lines.append(line + ".")
    return lines


def pipeline_rows(d: Dashboard) -> list[dict[str, Any]]:
    """One row per category and per pipeline version: judged and labeled claims, the judge's own
    SUPPORTED rate and the corrected one with its interval."""
    p = d.report.pipeline
    if not p:
        return []
    rows = []
    for kind, key in (("category", "by_category"), ("pipeline version", "by_pipeline_version")):
        for name, g in p.get(key, {}).items():
            rows.append(
                {
                    "slice": f"{kind}: {name}",
                    "judged claims": g["n_judged"],
                    "labeled claims": g["n_labeled"],
                    "judge's own": fmt.pct(g["judge_supported_rate"], missing=fmt.DASH),
                    "corrected": _corrected(g),
                }
            )
    return rows


# ---------------------------------------------------------------- the decision header


# The verdict word per flag status, and its one colour: the Dashboard and a closed cycle on the
# Cycles page draw a verdict only through these (Streamlit's markdown colour names).
VERDICT_WORDS = assessments.STATUS_WORDS
VERDICT_COLOURS: dict[str, str] = {"ok": "green", "revise": "red", "inconclusive": "orange"}
VERDICT_ADVICE: dict[str, str] = {
    "ok": "Keep it running.",
    "revise": "Revise the prompt.",
    "inconclusive": "Label more claims to decide.",
}


@dataclass(frozen=True, slots=True)
class NextStep:
    """One button under the verdict: `kind` says where it leads, `label` is constant words and numbers."""

    kind: str  # "plan" | "judge_lab" | "settle" | "close"
    label: str


def sealed_text(a: Assessment, *, unresolved: bool = False) -> str:
    """Claims a list leaves out because they are in the sealed holdout, in words; '' for none.
    The disagreeing ones, or with `unresolved` the ones waiting for a lead's decision."""
    counts = a.counts
    n = counts.unresolved_sealed if unresolved else counts.sealed
    if not n:
        return ""
    what = f" unresolved {'claim' if n == 1 else 'claims'}" if unresolved else ""
    return (
        f"{n:,} more{what} {'is' if n == 1 else 'are'} in the sealed holdout "
        "(counted in the figures, not listed)."
    )


@dataclass(frozen=True, slots=True)
class Decision:
    """The decision header: every text is numbers and constant words (no user text)."""

    status: str  # the flag's status: ok / revise / inconclusive
    word: str  # VERDICT_WORDS[status]
    colour: str  # VERDICT_COLOURS[status]
    figure: str  # the one agreement figure, "77%"
    interval: str  # its one interval, "74–79%"
    direction: str  # the direction in words
    ceiling: str  # the judge beside the reviewers, one line
    sentence: str  # the plain sentence a lead reads
    steps: tuple[NextStep, ...]
    counts: ClaimCounts | None = None  # the claims behind the figures (`Assessment.counts`)
    about: str = "verdict on the judge run"  # what the verdict word is about: the run or one cycle
    # Which reading decided, where it is the final one: "final reading (labeling closed by X on
    # DATE)" names the lead who closed, so it is shown as literal text; "" otherwise.
    reading: str = ""


def _ceiling_line(report: Mapping[str, Any]) -> tuple[str, float | None]:
    """(line, reviewer-vs-reviewer agreement) from the human ceiling, else human-human agreement."""
    ceiling = report.get("human_ceiling") or {}
    people = (ceiling.get("reviewer_vs_reviewer") or {}).get("value")
    if people is None:
        people = ((report.get("human_human") or {}).get("agreement") or {}).get("value")
    if people is None:
        return "No claim was labeled by two reviewers yet: no judge-vs-people ceiling.", None
    alt = ceiling.get("alt_test") or {}
    verdict = alt.get("verdict")
    stand_in = ""
    if verdict:
        stand_in = f"; the alternative annotator test (margin {alt.get('epsilon')}) finds the judge {verdict}"
    compared = len(alt.get("per_reviewer") or [])
    if compared:
        stand_in += (
            f"; the judge is below {alt.get('below_reviewers', 0)} of {compared} reviewers, "
            f"significantly for {alt.get('below_reviewers_significantly', 0)}"
        )
    line = f"Reviewers agree with each other on {_pct(people)}: the most a judge can be asked{stand_in}."
    return line, people


def _direction_words(a: Assessment) -> tuple[str, str]:
    """(direction line, the sentence's direction clause): the counts and `Assessment.direction`."""
    line = (
        f"Missed hallucinations (judge {POSITIVE}, reviewers not): {a.lenient:,}; "
        f"false alarms (reviewers {POSITIVE}, judge not): {a.strict:,}; {a.direction.figures}."
    )
    return line, a.direction.clause


FEW_CYCLES = 3  # "plan the next cycle" is offered for an open decision its plan expects within these


def _plan_step(status: str, target: str, nxt: cycles.NextCycle | None) -> tuple[NextStep | None, str | None]:
    """The "plan the next cycle" step, or None with the sentence that replaces the advice when more
    labels are not expected to decide: nothing is left to draw, the agreement decision is still
    open and its plan needs more answers than the run has left, or more than FEW_CYCLES full
    cycles. Without `nxt` (a frozen report) the step is offered as before."""
    if nxt is None:
        return NextStep("plan", "Plan the next cycle"), None
    if nxt.closed is not None:
        return None, f"{nxt.closed}."
    if not nxt.answers_left:
        return None, (
            "Every answer of this run is labeled or held out, so no cycle can draw more: "
            "import more judged answers to label more."
        )
    if status != "inconclusive" or nxt.goal != "agreement":
        return NextStep("plan", "Plan the next cycle"), None
    if nxt.answers_needed is not None and nxt.answers_needed > nxt.answers_left:
        return None, (
            f"More labels from this run are not expected to decide: the plan needs about "
            f"{nxt.answers_needed:,} answers and {plural(nxt.answers_left, 'answer')} can still be "
            "drawn. Import more judged answers to label more."
        )
    if nxt.cycles_needed is not None and nxt.cycles_needed <= FEW_CYCLES:
        size = min(nxt.full, nxt.answers_left)  # a run with fewer answers left gives a smaller cycle
        cycles_text = plural(nxt.cycles_needed, f"cycle of {size} answers", f"cycles of {size} answers")
        return NextStep("plan", f"Plan the next cycle (about {cycles_text} should decide)"), None
    need = (
        f"more than {planning.MAX_CYCLES} cycles"
        if nxt.cycles_needed is None
        else f"about {nxt.cycles_needed:,} cycles"
    )
    return None, (
        f"More labels are not expected to decide soon: the plan needs {need} of {nxt.full} answers "
        f"to tell whether the judge reaches the {target} target. Read the figures as they stand: "
        "the interval says how close to the target the judge is."
    )


# A cycle's report has no final reading (its pool has no end), so with nothing left to draw its
# flag can stay open where the run's scope, the same claims and more, is decided (docs/decisions.md).
CYCLE_READING_WORDS = (
    "A cycle's figures have no final reading: the scope All labeled claims of the run takes it."
)

FINAL_READING_WORDS = (
    "Decided at the final reading: nothing is left to label, so the fixed-sample interval decided "
    "what the running rule had left open."
)


# What closing labeling does, read in the confirmation before anything is written (constant words).
CLOSE_LABELING_WORDS = (
    "Closing labeling is the last look, and it is one way: nothing here undoes it.\n\n"
    "- The final reading is taken now, from the labels given so far: it decides what the running "
    "rule has left open.\n"
    "- No new cycle is drawn from this run.\n"
    "- Reviewers may still finish the cycles already drawn: their labels count in the figures and "
    "the running rule, not in the final reading."
)

CLOSED_UNDECIDED_WORDS = (
    "The final reading taken at closing did not decide either: its fixed-sample interval holds the "
    "target. Read the figures as they stand."
)


def final_reading_words(a: Assessment) -> str:
    """Why the final reading decided: nothing is left to label, or a lead closed labeling (whose
    reading was taken at closing)."""
    if a.closed is None:
        return FINAL_READING_WORDS
    return (
        f"Decided at the final reading ({a.closed}): the fixed-sample interval taken at closing "
        "decided what the running rule had left open."
    )


def _labels_cannot_decide(a: Assessment, target: str) -> str | None:
    """The sentence that replaces the advice when the flag's own arithmetic (the running rule's
    simulated stopping time, `decisions.more_claims_to_decide`) expects no decision from every
    claim the run has left; None when it does, or does not say."""
    if a.status != "inconclusive" or a.labels_decide is not False or not a.counts.labeled:
        return None
    within = (
        "More labels"
        if a.claims_left is None
        else f"Labeling all {plural(a.claims_left, 'unlabeled claim')} the run has left"
    )
    return (
        f"{within} is not expected to decide the {target} target (the flag's running rule and final "
        "reading, simulated from today's labels). Import more judged answers, or read the figures as "
        "they stand: the interval says how close to the target the judge is."
    )


def decision(
    a: Assessment,
    *,
    open_cycle: bool = False,
    next_cycle: cycles.NextCycle | None = None,
    cycle_scope: bool = False,
) -> Decision:
    """The decision header of an assessment (live, or a closed cycle's frozen one): the verdict
    word, its one agreement figure with one interval, the direction, the judge-vs-people
    ceiling, one plain sentence and the next steps. `open_cycle`: the scope is an open cycle, so
    closing it is a next step. `next_cycle`: what a next cycle of the run can do
    (`cycles.next_cycle`), so that the header offers only a next step that can work.
    `cycle_scope`: the figures are one cycle's, which the header says beside the verdict."""
    status = a.status
    value = a.agreement.value
    interval = _range(a.agreement.low, a.agreement.high)
    direction, clause = _direction_words(a)
    ceiling, people = _ceiling_line(a.source)
    n_claims = a.counts.labeled
    if n_claims == 0 or value is None:
        sentence = "No claim has both a judge verdict and a final human label yet. Label claims to decide."
    else:
        parts = [
            f"The judge agrees with reviewers on {_pct(value)} of claims"
            + (f" ({interval})" if interval != DASH else "")
            + ("" if people is None else f"; reviewers agree with each other on {_pct(people)}")
            + "."
        ]
        if clause:
            parts.append(clause)
    target = a.target
    target_words = DASH if target is None else fmt.share(target)
    plan, instead = _plan_step(status, target_words, next_cycle)
    undecidable = _labels_cannot_decide(a, target_words)
    if undecidable is not None and (next_cycle is None or next_cycle.answers_left):
        plan, instead = None, undecidable
    if n_claims and value is not None:
        advice = VERDICT_ADVICE[status]
        needed = a.claims_needed
        if status == "inconclusive" and needed:
            advice = f"Label about {needed:,} more claims to decide."
        if status == "inconclusive" and instead:
            advice = instead
            if cycle_scope and next_cycle is not None and not next_cycle.answers_left:
                advice = f"{advice} {CYCLE_READING_WORDS}"
        if status == "inconclusive" and a.closed is not None and not cycle_scope:
            advice = f"{instead or ''} {CLOSED_UNDECIDED_WORDS}".strip()
        if status != "inconclusive" and a.reading == "final":
            # Which reading decided: the running rule had not, and labeling has ended.
            parts.append(final_reading_words(a))
        parts.append(advice)
        sentence = " ".join(parts)
    elif instead:
        sentence = f"{sentence} {instead}"
    steps = [] if plan is None else [plan]
    counts = a.counts
    if counts.listed:
        steps.append(NextStep("judge_lab", "Open the Judge lab on this run"))
    # The claims the settle link leads to: a sealed holdout claim is counted in the figures but not
    # listed for a decision, so it is not offered here either.
    unresolved = counts.unresolved_listed
    if unresolved:
        steps.append(NextStep("settle", f"Settle the {plural(unresolved, 'unclear claim')}"))
    if open_cycle:
        steps.append(NextStep("close", "Close the cycle"))
    ended = next_cycle is not None and not next_cycle.answers_left and next_cycle.closed is None
    if ended or (undecidable is not None and a.closed is None):
        steps.append(NextStep("import", "Import more judged answers"))
    return Decision(
        status,
        VERDICT_WORDS[status],
        VERDICT_COLOURS[status],
        _pct(value),
        interval,
        direction,
        ceiling,
        sentence,
        tuple(steps),
        counts,
        "verdict on the cycle" if cycle_scope else "verdict on the judge run",
        _reading_line(a, cycle_scope),
    )


def _reading_line(a: Assessment, cycle_scope: bool) -> str:
    """The header's line on the reading once a lead closed labeling (the run's scope only)."""
    if a.closed is None or cycle_scope:
        return ""
    return f"final reading ({a.closed})" if a.reading == "final" else a.closed
