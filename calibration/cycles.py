"""Calibration cycles: sample judged answers of one run, assign them, track and close.

A cycle is the unit a lead plans (name, judge run, strategy, seed, size), reviewers
work through (their queue) and the dashboard trends over (the snapshot frozen at
close). Sampling designs live in `sampling`; this module reads the pool from the store,
applies the eligibility rules and writes the cycle, its answers with their inclusion
probabilities, and the assignments in one transaction.

Eligibility of an answer for a cycle on run R (the pool):
- R gave a verdict on at least one of its claims;
- its holdout flag equals the cycle's: holdout answers are never sampled for an
  ordinary (tuning) cycle, and a holdout cycle samples only holdout answers;
- not every one of its judged claims already has a final human label (`final_label`:
  adjudicated, or every reviewer's final verdict the same), unless `include_labeled`:
  labels are reused across cycles and runs, so labeling a claim twice is wasted effort. A
  claim reviewers disagree on, or one marked unclear, is unresolved: its answer stays
  eligible, since it needs more eyes or a lead.

Errors that point at an option (force, include labeled answers, ...) name it as an
`errors.Option`: the CLI words it as its flag, the page as its form control.
"""

from __future__ import annotations

import math
import secrets
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from . import closing, planning, roles, roster, sampling, store
from .assessment import Assessment, of_snapshot
from .errors import ConflictError, Hint, InputError, NotFoundError, Option, Problem, WorkOutstandingError
from .fmt import plural
from .models import MAX_STORED_INT
from .store import Database
from .text import id_problem, visible
from .text import normalise_name as name_key
from .vocab import LABELS, ClaimStatus

MIN_SIZE, MAX_SIZE = 15, 30
DEFAULT_SIZE = 20
# Bounds of what a lead types, checked here for the CLI and the page alike: the most answers one
# cycle samples (forced past MAX_SIZE: a cycle is a round of human review), the seed's range (the
# engines' integer, `models.MAX_STORED_INT`; numpy's PCG64 takes any of them), and a name's
# length (a name is shown in lists, tables and every line of `cycle list`).
SIZE_LIMIT = 1000
SEED_LIMIT = MAX_STORED_INT
NAME_LIMIT = 200
DEFAULT_OVERLAP = 0.2
# The agreement a healthy judge shows (seed 000: "85%+"): the interval width warned about
# for an out-of-bounds size is computed there.
EXPECTED_AGREEMENT = 0.85
_SUPPORTED = LABELS.index("SUPPORTED")


@dataclass(frozen=True, slots=True)
class Cycle:
    id: int
    name: str
    judge_run: str  # MODEL@VERSION
    judge_run_id: int
    strategy: str
    seed: int
    size: int  # answers actually sampled
    overlap: float
    holdout: bool
    include_labeled: bool
    status: str  # 'open' | 'closed'
    created_by: str | None
    created_at: str
    closed_at: str | None
    answers: tuple[str, ...]  # in cycle order
    reviewers: tuple[str, ...]  # empty: an open cycle, any signed-in reviewer may label
    snapshot: dict[str, Any] | None = None
    failing_share: float | None = None  # failures-first only: the share asked for the failing stratum
    plan: dict[str, Any] | None = field(default=None, compare=False)  # planned only: `Plan.record`
    require_evidence: bool = False  # every SUPPORTED verdict in the cycle must name its evidence
    # Filled by create_cycle only (not stored): what the design did, and what the lead
    # should be warned about.
    notes: tuple[str, ...] = field(default=(), compare=False)
    warnings: tuple[str, ...] = field(default=(), compare=False)

    @property
    def is_open_to_all(self) -> bool:
        return not self.reviewers


@dataclass(frozen=True, slots=True)
class CycleAnswer:
    position: int
    answer_id: str
    inclusion_prob: float
    claims: int  # claims the cycle's run judged in this answer
    reviewers: tuple[str, ...]


# ---------------------------------------------------------------- the one progress rule

# Statuses of a reviewer's current label that settle a claim for them: a verdict, or "unclear"
# (done for the reviewer, it waits for a lead). A skip, or no label, leaves the claim to do.
DONE_STATUSES = ("labeled", "unclear")
REUSED_WORDS = "reused from other cycles or imports"


def claim_done(status: str | None) -> bool:
    """The one rule for "claim done for reviewer R in cycle C": R's current label on the claim
    has a verdict or is marked unclear, wherever it was given: in C, in an earlier cycle with
    the same claim, or by `import-labels`. The lead's progress (`progress`) and the reviewer's
    queue (`review.progress`) both count by it, so they give the same numbers."""
    return status in DONE_STATUSES


def label_reused(status: str | None, settled_here: bool) -> bool:
    """A done label (`claim_done`) that was not settled in this cycle: the verdict or unclear
    mark came from another cycle or an import (`store.labels.settled_in` says where it was
    settled). Counted as done, and counted again as reused so nobody mistakes it for new work."""
    return claim_done(status) and not settled_here


@dataclass(frozen=True, slots=True)
class WorkCount:
    """One reviewer's work in a cycle, by the one rule (`count_work`)."""

    done: int  # claims done (`claim_done`): a verdict or an unclear mark
    total: int
    unclear: int  # of `done`: marked unclear
    reused: int  # of `done`: settled outside this cycle (`label_reused`)
    answers_done: int  # committed (the last look) with every claim done
    answers_total: int


def count_work(
    claims: Iterable[tuple[str, str | None, bool]], answers: Iterable[str], committed: Collection[str]
) -> WorkCount:
    """Count one reviewer's work: `claims` gives (answer id, status of their current label or
    None, settled in this cycle) for every claim of their answers, `answers` those answers and
    `committed` the ones they committed. An answer is done when it is committed and each of its
    claims is done; an answer without claims has nothing to do and is done."""
    done = unclear = reused = total = 0
    with_claims: set[str] = set()
    open_answers: set[str] = set()
    for answer_id, status, here in claims:
        total += 1
        with_claims.add(answer_id)
        if claim_done(status):
            done += 1
            unclear += status == "unclear"
            reused += label_reused(status, here)
        else:
            open_answers.add(answer_id)
    listed = list(dict.fromkeys(answers))
    answers_done = sum(a not in with_claims or (a in committed and a not in open_answers) for a in listed)
    return WorkCount(done, total, unclear, reused, answers_done, len(listed))


def progress_headline(labeled: int, total: int, reused: int = 0, elsewhere: int = 0) -> str:
    """`9/9 claims finished (7 reused from other cycles or imports)`: a cycle's progress in one
    line, with the reused claims and the claims labeled by others outside the cycle when any."""
    notes = [f"{reused} {REUSED_WORDS}"] if reused else []
    if elsewhere:
        notes.append(f"already labeled outside this cycle: {elsewhere}")
    return f"{labeled}/{total} claims finished" + (f" ({'; '.join(notes)})" if notes else "")


@dataclass(frozen=True, slots=True)
class ReviewerProgress:
    reviewer: str
    labeled: int  # claims done by the one rule (`claim_done`): a verdict or an unclear mark
    total: int
    unclear: int = 0  # of `labeled`: marked unclear, waiting for a lead
    reused: int = 0  # of `labeled`: settled outside this cycle (another cycle, an import)
    answers_done: int = 0  # committed, every claim done
    answers_total: int = 0

    @property
    def fraction(self) -> float:
        return self.labeled / self.total if self.total else 0.0

    def counts(self) -> str:
        """`9/9 (7 reused)`: the reviewer's claims done, with the reused ones when there are any."""
        return f"{self.labeled}/{self.total}" + (f" ({self.reused} reused)" if self.reused else "")


@dataclass(frozen=True, slots=True)
class CycleProgress:
    """The work of a cycle: see `progress` for what counts as labeled."""

    labeled: int  # claims done for this cycle (`progress`)
    total: int  # claims of the cycle's answers
    reviewers: tuple[ReviewerProgress, ...]
    labeled_elsewhere: int = 0  # not done here, but with a final human label from someone else
    assigned: bool = True  # False: an open cycle, anyone may label
    reused: int = 0  # of `labeled`: done on labels settled outside this cycle only
    unclear: int = 0  # of `labeled`: marked unclear by a reviewer, no lead's decision yet

    @property
    def fraction(self) -> float:
        return self.labeled / self.total if self.total else 0.0

    @property
    def missing(self) -> int:
        """Labels still owed: per assigned reviewer, else claims without a label."""
        if self.assigned:
            return sum(r.total - r.labeled for r in self.reviewers)
        return self.total - self.labeled

    def headline(self) -> str:
        """`9/9 claims finished (7 reused from other cycles or imports)` (`progress_headline`)."""
        return progress_headline(self.labeled, self.total, self.reused, self.labeled_elsewhere)

    def outstanding(self) -> str | None:
        """What work remains, in a sentence; None when there is none. A claim marked unclear is
        done for its reviewer but waits for a lead's decision, so it is work outstanding too."""
        parts: list[str] = []
        if self.assigned:
            behind = [r for r in self.reviewers if r.labeled < r.total]
            if behind:
                verb = "has" if len(behind) == 1 else "have"
                # Labels owed and claims not done are two counts (with overlap a claim owes a label
                # per reviewer): both said, the claims as the progress cell counts them.
                parts.append(
                    f"{len(behind)} of {plural(len(self.reviewers), 'reviewer')} {verb} labels "
                    f"outstanding: {plural(self.missing, 'label')} on {self.total - self.labeled:,} "
                    f"of {plural(self.total, 'claim')}"
                )
        elif self.labeled < self.total:
            verb = "has" if self.missing == 1 else "have"
            parts.append(f"{self.missing} of {plural(self.total, 'claim')} {verb} no label yet")
        if self.unclear:
            verb = "waits" if self.unclear == 1 else "wait"
            parts.append(f"{plural(self.unclear, 'claim')} marked unclear {verb} for a lead's decision")
        return "; ".join(parts) or None

    def as_dict(self) -> dict[str, Any]:
        return {
            "labeled": self.labeled,
            "total": self.total,
            "reused": self.reused,
            "unclear": self.unclear,
            "labeled_elsewhere": self.labeled_elsewhere,
            "reviewers": {
                r.reviewer: {
                    "labeled": r.labeled,
                    "total": r.total,
                    "reused": r.reused,
                    "unclear": r.unclear,
                    "answers_done": r.answers_done,
                    "answers_total": r.answers_total,
                }
                for r in self.reviewers
            },
        }


@dataclass(frozen=True, slots=True)
class FrozenFigures:
    """The readable part of a closed cycle's snapshot (see `frozen_figures`)."""

    frozen_at: str | None
    labeled: int | None  # progress when the cycle closed (see `progress`)
    total: int | None
    labeled_elsewhere: int | None
    # The figures frozen at close, read as Trend and the Dashboard read them
    # (`assessment.of_snapshot`); None when no claim had a final human label.
    assessment: Assessment | None
    weighted_agreement: float | None  # re-weighted to the whole run by 1 / pi
    weighted_ci: tuple[float, float] | None
    flag_reasons: tuple[str, ...]
    note: str | None
    reused: int | None = None  # of `labeled`: on labels settled outside the cycle (older snapshots: None)
    plan: dict[str, Any] | None = None  # planned cycles: `plan_outcome`, what was expected and reached


# ---------------------------------------------------------------- pure helpers


def size_warning(size: int, claims: int) -> str:
    """The warning shown when a cycle is forced outside the default size bounds."""
    # Imported here: the statistics module pulls in scipy, which only this path needs.
    from .estimation import wilson_interval

    interval = wilson_interval(EXPECTED_AGREEMENT * claims, claims)
    width = "undefined" if interval is None else f"about ±{(interval[1] - interval[0]) * 50:.1f} points"
    return (
        f"size {size} is outside {MIN_SIZE}-{MAX_SIZE}: with {plural(claims, 'claim')} the 95% Wilson "
        f"interval around an agreement of {EXPECTED_AGREEMENT:.0%} is {width} (claims of "
        "one answer are correlated, so the real interval is wider)"
    )


def overlap_positions(n: int, overlap: float) -> set[int]:
    """Which cycle positions go to two reviewers: round(overlap * n) of them, evenly spread.

    Evenly spread over the cycle order rather than drawn: the order is already random
    within each stratum, and spreading keeps both strata of failures-first represented.
    """
    k = min(n, math.floor(overlap * n + 0.5))
    return {math.floor(i * n / k) for i in range(k)} if k else set()


def assign(answer_ids: Sequence[str], reviewers: Sequence[str], overlap: float) -> dict[str, tuple[str, ...]]:
    """Assign each answer to one reviewer, an `overlap` share to two distinct reviewers.

    Round-robin, balanced: every slot goes to the least-loaded reviewer, ties broken by
    the round-robin turn, so loads never differ by more than one. Deterministic.
    """
    if not reviewers:
        return {}
    if len(set(reviewers)) != len(reviewers):
        raise ValueError("reviewers must be distinct")
    doubled = overlap_positions(len(answer_ids), overlap) if len(reviewers) > 1 else set()
    load = dict.fromkeys(reviewers, 0)
    paired: Counter[frozenset[str]] = Counter()
    turn = 0
    out: dict[str, tuple[str, ...]] = {}

    def rank(i: int, first: str | None = None) -> tuple[int, int, int]:
        r = reviewers[i]
        # Among equally loaded reviewers, a second reviewer is preferably one rarely
        # paired with the first, so human-human agreement covers every pair.
        pairs = paired[frozenset((first, r))] if first else 0
        return load[r], pairs, (i - turn) % len(reviewers)

    for pos, aid in enumerate(answer_ids):
        first = reviewers[min(range(len(reviewers)), key=rank)]
        picked = [first]
        if pos in doubled:
            others = [i for i, r in enumerate(reviewers) if r != first]
            picked.append(reviewers[min(others, key=lambda i: rank(i, first))])
            paired[frozenset(picked)] += 1
        for r in picked:
            load[r] += 1
        turn = (reviewers.index(picked[-1]) + 1) % len(reviewers)
        out[aid] = tuple(picked)
    return out


# ---------------------------------------------------------------- reads


@dataclass(frozen=True, slots=True)
class _PoolRow:
    answer_id: str
    category: str | None
    holdout: bool
    claims: int
    failing: bool
    fully_labeled: bool


def _eligible(rows: Iterable[_PoolRow], holdout: bool, include_labeled: bool) -> list[_PoolRow]:
    """The pool: the rows a cycle with these options may sample (module docstring)."""
    return [r for r in rows if r.holdout == holdout and (include_labeled or not r.fully_labeled)]


def _pool_rows(db: Database, run_id: int) -> list[_PoolRow]:
    """Every answer the run judged, by id, with what eligibility and the designs read.

    "Fully labeled" is the one final-label rule (`store.claim_table`): every judged claim of
    the answer is agreed (unanimous or adjudicated). A claim whose reviewers disagree, or
    one marked unclear, is unresolved, so its answer stays in the pool.
    """
    table = store.claim_table(db, run_id)
    n_answers = len(table.answer_ids)
    claims = np.bincount(table.answer, minlength=n_answers)
    failing = np.bincount(table.answer[table.judge != _SUPPORTED], minlength=n_answers)
    agreed = table.answer_fully_agreed()
    facts = store.cycles.answer_facts(db, table.answer_ids)
    rows = [
        _PoolRow(aid, facts[aid][0], facts[aid][1], int(claims[i]), bool(failing[i]), agreed[aid])
        for i, aid in enumerate(table.answer_ids)
    ]
    return sorted(rows, key=lambda r: r.answer_id)


def _cycle_of(rec: store.cycles.CycleRecord) -> Cycle:
    share = None
    if rec.strategy == "failures-first":
        # Cycles made before the share was configurable used the default.
        share = float(rec.failing_share) if rec.failing_share is not None else sampling.DEFAULT_FAILING_SHARE
    return Cycle(
        id=rec.id,
        name=rec.name,
        judge_run=rec.judge_run,
        judge_run_id=rec.judge_run_id,
        strategy=rec.strategy,
        seed=rec.seed,
        size=rec.size,
        overlap=rec.overlap,
        holdout=rec.holdout,
        include_labeled=rec.include_labeled,
        status=rec.status,
        created_by=rec.created_by,
        created_at=rec.created_at,
        closed_at=rec.closed_at,
        snapshot=rec.snapshot,
        answers=rec.answers,
        reviewers=rec.reviewers,
        failing_share=share,
        plan=rec.plan,
        require_evidence=rec.require_evidence,
    )


def list_cycles(db: Database) -> list[Cycle]:
    """Every cycle, oldest first."""
    return [_cycle_of(r) for r in store.cycles.cycle_records(db)]


def get_cycle(db: Database, name: str) -> Cycle:
    """The cycle called `name`; NotFoundError (`store.cycle_id`'s wording) when there is none."""
    return _cycle_by_id(db, store.cycle_id(db, name))


def _held_cycle(db: Database, name: str) -> Cycle:
    """`get_cycle`, the cycle held until the write ends (a lead's change of it is based on its
    status and work as read here; a second lead's waits)."""
    cycle_id = store.cycle_id(db, name)
    store.cycles.lock_cycle(db, cycle_id)
    return _cycle_by_id(db, cycle_id)


def sampleable_runs(db: Database) -> list[store.JudgeRun]:
    """Judge runs that gave at least one verdict, oldest first: the runs a cycle can sample.

    A judge-lab run that failed on every answer has no verdicts and is left out.
    """
    with_verdicts = store.cycles.run_ids_with_verdicts(db)
    return [r for r in store.judge_runs(db) if r.id in with_verdicts]


def default_run(db: Database) -> store.JudgeRun | None:
    """The run a new cycle samples unless told otherwise: the most recently imported one
    (`store.find_judge_run(db, None)`), when it has verdicts; else the newest that has."""
    runs = sampleable_runs(db)
    if not runs:
        return None
    preferred = store.find_judge_run(db, None)
    return preferred if preferred.id in {r.id for r in runs} else runs[-1]


def _cycle_by_id(db: Database, cycle_id: int) -> Cycle:
    found = store.cycles.cycle_records(db, cycle_id=cycle_id)
    if not found:
        raise NotFoundError(f"no cycle with id {cycle_id}")
    return _cycle_of(found[0])


def cycle_answers(db: Database, cycle_id: int) -> list[CycleAnswer]:
    """The cycle's answers in order, with inclusion probability, claim count and reviewers."""
    cycle = _cycle_by_id(db, cycle_id)
    who: dict[str, list[str]] = {}
    for aid, rev in store.cycles.assignment_pairs(db, cycle_id):
        who.setdefault(aid, []).append(rev)
    return [
        CycleAnswer(pos, aid, prob, n, tuple(who.get(aid, ())))
        for pos, aid, prob, n in store.cycles.cycle_answer_rows(db, cycle_id, cycle.judge_run_id)
    ]


def queue(db: Database, cycle_id: int, reviewer: str) -> list[str]:
    """The answer ids a reviewer works through, in cycle order.

    In an open cycle (no assignments) that is every answer; otherwise the reviewer's
    assigned answers, and nothing for a reviewer not assigned in it.
    """
    return store.cycles.queue_answers(db, cycle_id, reviewer)


def open_cycles_for(db: Database, reviewer: str) -> list[Cycle]:
    """Open cycles the reviewer may label: open-to-all ones and those assigning them answers."""
    return [_cycle_of(r) for r in store.cycles.cycle_records(db, open_for=reviewer)]


def progress(db: Database, cycle_id: int) -> CycleProgress:
    """The cycle's work: claims done / total, overall and per reviewer, by the one rule
    (`claim_done`, counted per reviewer by `count_work`, as the reviewer's queue counts it).

    The claims are every claim of the cycle's answers (a reviewer settles each before the
    commit). Only the cycle's reviewers count, so a cycle that includes answers labeled by
    others starts at 0, not at 100%; a reviewer's own label counts wherever it was given (this
    cycle, an earlier one, an import), and is counted again as reused when it was not settled
    in this cycle:

    - assigned cycle: the reviewers are those assigned; a claim is done when every reviewer
      assigned its answer has it done, so the cycle reaches 100% exactly when no reviewer has
      labels left to give;
    - open cycle: the reviewers are those who took part in it (a label event or a commit made
      in it), each over every claim; a claim is done when one of them has it done. A reviewer
      who never worked in the cycle is not listed, though their own queue counts their labels.

    A done claim is `reused` when no label making it done was settled in this cycle, and
    `unclear` when one of them is an unclear mark with no lead's decision (adjudication) yet:
    work for a lead, so `outstanding` names it. `labeled_elsewhere` counts the claims not done
    and with no label of the cycle's reviewers that still have a final human label from
    someone else (a verdict or an adjudication).
    """
    cycle = _cycle_by_id(db, cycle_id)
    work = store.cycles.cycle_work(db, cycle_id)
    label_of: dict[int, dict[str, tuple[str, bool]]] = {}  # claim -> reviewer -> (status, settled here)
    for pk, reviewer, status, here in work.labels:
        label_of.setdefault(pk, {})[reviewer] = (status, here)
    answers = list(cycle.answers)
    if cycle.reviewers:
        who: dict[str, set[str]] = {}
        for aid, rev in store.cycles.assignment_pairs(db, cycle_id):
            who.setdefault(aid, set()).add(rev)
        team = list(cycle.reviewers)
    else:
        team = work.participants
        who = {aid: set(team) for aid in answers}

    per: dict[str, ReviewerProgress] = {}
    for r in team:
        mine = [aid for aid in answers if r in who.get(aid, ())]
        items = [
            (aid, *label_of.get(pk, {}).get(r, (None, False)))
            for aid, pk in work.claims
            if r in who.get(aid, ())
        ]
        n = count_work(items, mine, {a for a, rev in work.committed if rev == r})
        per[r] = ReviewerProgress(r, n.done, n.total, n.unclear, n.reused, n.answers_done, n.answers_total)

    done = reused = unclear = elsewhere = 0
    for aid, pk in work.claims:
        need = who.get(aid, set())
        labels = label_of.get(pk, {})
        by_team = [labels[r] for r in need if r in labels and claim_done(labels[r][0])]
        complete = len(by_team) == len(need) if cycle.reviewers else bool(by_team)
        if need and complete:
            done += 1
            reused += not any(here for _, here in by_team)
            unclear += any(status == "unclear" for status, _ in by_team) and pk not in work.adjudicated
        elif not by_team:
            others = any(status == "labeled" for r, (status, _) in labels.items() if r not in need)
            elsewhere += others or pk in work.adjudicated
    return CycleProgress(
        done,
        len(work.claims),
        tuple(per[r] for r in sorted(per)),
        labeled_elsewhere=elsewhere,
        assigned=bool(cycle.reviewers),
        reused=reused,
        unclear=unclear,
    )


# ---------------------------------------------------------------- writes


def create_cycle(
    db: Database,
    *,
    name: str,
    judge_run: str | None = None,
    size: int = DEFAULT_SIZE,
    seed: int | None = None,
    strategy: str = "random",
    reviewers: Sequence[str] = (),
    overlap: float = DEFAULT_OVERLAP,
    holdout: bool = False,
    include_labeled: bool = False,
    force: bool = False,
    created_by: str | None = None,
    failing_share: float = sampling.DEFAULT_FAILING_SHARE,
    goal: str = "agreement",
    require_evidence: bool = False,
) -> Cycle:
    """Sample a new cycle from a judge run (None: the most recently imported run) and assign it.

    `seed` None draws one, which is recorded so the sample can be redrawn. An empty
    `reviewers` list makes an open cycle: every signed-in reviewer's queue is every
    answer; reviewer names are normalised and duplicates refused (`roles.match_reviewers`), and
    once the roster holds anyone they must be its active reviewers (`roster.check_on_roster`).
    `size` must be within 15-30 unless `force`, in which case the returned cycle carries a
    warning about the interval width; a pool smaller than `size` is an error unless
    `force`, which then takes the whole pool. `failing_share` is the least share of slots
    failures-first gives the failing stratum; `goal` ("agreement" or "grounding") is what the
    planned design allocates for (`plan_next`). The returned cycle's `notes` state what the
    design did (failures-first: the split of slots and the inclusion probabilities; planned:
    the plan, `planning.Plan.lines`).
    `require_evidence`: the lead's choice that every SUPPORTED verdict in the cycle names the
    chunks that support it (the commit of an answer is refused until it does).
    """
    name = (name or "").strip()
    problems: list[str | Problem] = []
    if name_problem := _name_problem(name):
        problems.append(name_problem)
    if strategy not in sampling.STRATEGIES:
        problems.append(f"strategy: unknown {strategy!r}; use one of {', '.join(sampling.STRATEGIES)}")
    if size_problem := _size_problem(size):
        problems.append(size_problem)
    elif not force and not MIN_SIZE <= size <= MAX_SIZE:
        problems.append(
            Problem(
                f"{size} is outside {MIN_SIZE}-{MAX_SIZE}",
                field="size",
                hint=("use ", Option.FORCE, " to create the cycle anyway"),
            )
        )
    if not 0 <= overlap <= 1:
        problems.append(f"overlap: must be between 0 and 1, got {overlap}")
    if not 0 <= failing_share <= 1:
        problems.append(f"failing share: must be between 0 and 1, got {failing_share}")
    if strategy == "planned" and goal not in planning.GOALS:
        problems.append(f"goal: unknown {goal!r}; use one of {', '.join(planning.GOALS)}")
    if seed is not None and not 0 <= seed <= SEED_LIMIT:
        problems.append(f"seed: must be a whole number from 0 to {SEED_LIMIT}, or none to draw one")
    matched = roles.match_reviewers(reviewers, store.cycles.known_reviewer_names(db))
    team = matched.names
    problems += matched.problems + roster.check_on_roster(db, team)
    if reviewers and not team and not matched.problems:
        # ",,," is a list naming nobody, not "no list": opening the cycle to every reviewer
        # is said by giving none.
        problems.append(
            "reviewers: the list names nobody; name the reviewers, or give none to open the cycle "
            "to every reviewer"
        )
    if problems:
        raise InputError(problems)
    warnings: list[str] = []
    unknown = roles.unknown_warning(matched.unknown)
    if unknown:
        warnings.append(f"reviewers: {unknown}")
    if len(team) == 1 and overlap > 0:
        warnings.append(
            "overlap needs at least two reviewers: every answer goes to the one "
            "reviewer, so no human-human agreement can be measured"
        )
    if seed is None:
        seed = secrets.randbelow(2**31)

    with store.write(db):
        store.cycles.hold_membership(db)  # the pool read below stays as read until the commit
        run = store.find_judge_run(db, judge_run)
        closing.refuse_if_closed(db, run)
        if store.cycles.name_taken(db, name):
            raise ConflictError(f"a cycle named {name!r} already exists")
        rows = _pool_rows(db, run.id)
        pool = _eligible(rows, holdout, include_labeled)
        if not pool:
            raise InputError(_empty_pool_problem(run.name, rows, holdout, include_labeled))
        n = size
        if len(pool) < size:
            if not force:
                raise InputError(
                    Problem(
                        f"only {plural(len(pool), 'eligible answer')} in run {run.name} for a cycle of "
                        f"{size}",
                        field="size",
                        hint=(
                            f"lower the size (to go below {MIN_SIZE}, use ",
                            Option.FORCE,
                            ")",
                            *(() if include_labeled else (" or use ", Option.INCLUDE_LABELED)),
                        ),
                    )
                )
            n = len(pool)
            warnings.append(f"only {plural(len(pool), 'eligible answer')}: the cycle takes all of them")
        plan = _plan(db, run.id, [r.answer_id for r in pool], goal, n) if strategy == "planned" else None
        stratum_of = plan.answer_strata if plan is not None else {}
        sample = sampling.draw(
            strategy,
            [
                sampling.PoolAnswer(r.answer_id, r.category, r.failing, stratum_of.get(r.answer_id))
                for r in pool
            ],
            n,
            seed,
            failing_share,
            allocation=None if plan is None else plan.allocation,
        )
        notes, design_warnings = sampling.describe(sample)
        if plan is not None:
            notes = plan.lines() + notes
        warnings += design_warnings
        claims_of = {r.answer_id: r.claims for r in pool}
        if not MIN_SIZE <= n <= MAX_SIZE:
            warnings.append(size_warning(n, sum(claims_of[a] for a in sample.answer_ids)))
        stored_overlap = overlap if len(team) > 1 else 0.0
        cycle_id = store.cycles.insert_cycle(
            db,
            name=name,
            run_id=run.id,
            strategy=strategy,
            seed=seed,
            size=n,
            overlap=stored_overlap,
            holdout=holdout,
            include_labeled=include_labeled,
            created_by=created_by,
            answers=list(zip(sample.answer_ids, sample.inclusion_probs, strict=True)),
            assignments=assign(sample.answer_ids, team, overlap),
            # Part of the design: the seed alone does not redraw a failures-first sample.
            failing_share=failing_share if strategy == "failures-first" else None,
            require_evidence=require_evidence,
        )
        if plan is not None:
            # The plan is part of the design: its strata and allocation, with the seed, redraw the sample.
            store.cycles.insert_plan(db, cycle_id, plan.goal, plan.record())
        cycle = _cycle_by_id(db, cycle_id)
    return replace(cycle, notes=tuple(notes), warnings=tuple(warnings))


def _name_problem(name: str) -> str | None:
    """Why a cycle name (stripped) is refused, or None: empty, longer than NAME_LIMIT, or holding
    a control character (a line break would add a line to `cycle list`) or a bidirectional
    control (`text.id_problem`, the rule for ids)."""
    if not name:
        return "name: a cycle needs a name"
    if len(name) > NAME_LIMIT:
        return f"name: {len(name):,} characters is too long; a cycle name has at most {NAME_LIMIT}"
    reason = id_problem(name)
    return None if reason is None else f"name: {visible(name)!r} {reason}; type the name without it"


def _size_problem(size: int) -> str | None:
    """Why a cycle size is refused, or None: it is 1 to SIZE_LIMIT answers."""
    if not 1 <= size <= SIZE_LIMIT:
        return f"size: must be at least 1 and at most {SIZE_LIMIT} (answers in one cycle)"
    return None


def typed_reviewers(text: str) -> list[str]:
    """The reviewers typed as one comma-separated text (the CLI's `--reviewers`, the page's
    field): blank text is no list (an open cycle); any other is split at the commas, and
    `create_cycle` refuses one that names nobody (",,,")."""
    return text.split(",") if text.strip() else []


def size_from_link(raw: str | None) -> int | None:
    """The size a link asks for (the Dashboard's `?plan=1&size=`), or None when it gives none or
    one that is not a whole number from 1 to SIZE_LIMIT (ASCII digits only: "²" is a digit to
    `str.isdigit`, not to `int`)."""
    text = (raw or "").strip()
    if not (text.isascii() and text.isdigit()) or len(text) > len(str(SIZE_LIMIT)):
        return None
    return int(text) if _size_problem(int(text)) is None else None


def _plan(db: Database, run_id: int, pool: Sequence[str], goal: str, size: int) -> planning.Plan:
    """The planned design for a cycle of `size` from `pool` on the run (`planning.make_plan`)."""
    try:
        return planning.make_plan(
            store.cycles.planning_facts(db, run_id),
            store.claim_table(db, run_id),
            pool,
            goal,
            size,
            target=store.load_thresholds(db).agreement_target,
        )
    except ValueError as exc:  # too many strata for the slots, and the like: a sentence for the lead
        raise InputError(f"size: {exc}") from exc


def plan_next(
    db: Database,
    *,
    judge_run: str | None = None,
    goal: str = "agreement",
    size: int = DEFAULT_SIZE,
    holdout: bool = False,
    include_labeled: bool = False,
) -> planning.Plan:
    """The plan a planned cycle with these options would follow now, before anything is drawn:
    per stratum how many answers and why, the expected interval and the cycles the decision takes.
    A pool smaller than `size` is planned whole."""
    if goal not in planning.GOALS:
        raise InputError(f"goal: unknown {goal!r}; use one of {', '.join(planning.GOALS)}")
    if size_problem := _size_problem(size):
        raise InputError(size_problem)
    with store.read_snapshot(db):
        run = store.find_judge_run(db, judge_run)
        closing.refuse_if_closed(db, run)
        rows = _pool_rows(db, run.id)
        pool = _eligible(rows, holdout, include_labeled)
        if not pool:
            raise InputError(_empty_pool_problem(run.name, rows, holdout, include_labeled))
        return _plan(db, run.id, [r.answer_id for r in pool], goal, min(size, len(pool)))


@dataclass(frozen=True, slots=True)
class NextCycle:
    """What the next planned cycle of a run can do: the goal and size "plan the next cycle"
    prefills, how many cycles of `full` answers its plan expects that goal to take (None: more
    than `planning.MAX_CYCLES` of the plan's size), and the answers a cycle could still draw."""

    goal: str
    size: int
    cycles_needed: int | None
    full: int  # a full planned cycle's size (`planning.CYCLE_SIZE` within the size bounds)
    answers_left: int  # 0: every answer of the run is labeled or held out, or its labeling closed
    answers_needed: int | None = None  # what the plan's cycles hold (None: not planned)
    closed: str | None = None  # the sentence why no cycle is drawn: the run's labeling is closed


def next_cycle(db: Database, judge_run: str | None = None) -> NextCycle:
    """The next cycle's goal and size (`planning.default_goal_and_size`: the agreement decision
    while the labels so far do not settle it, else the grounding score; planned cycles of
    `planning.CYCLE_SIZE` within MIN_SIZE-MAX_SIZE, smaller when that finishes the decision), and
    what its plan expects. The plan's cycles are counted again in cycles of the full size, from
    the answers they hold."""
    full = min(MAX_SIZE, max(MIN_SIZE, planning.CYCLE_SIZE))
    run = store.find_judge_run(db, judge_run)
    found = store.labeling_closure(db, run.id)
    if found is not None:
        return NextCycle("agreement", 0, None, full, 0, closed=closing.closed_sentence(run, found))
    try:
        plans = {g: plan_next(db, judge_run=judge_run, goal=g) for g in planning.GOALS}
    except InputError:  # nothing left for a cycle to draw (`_empty_pool_problem`)
        return NextCycle("agreement", 0, None, full, 0)
    goal, size = planning.default_goal_and_size(
        plans["agreement"], plans["grounding"], min_size=MIN_SIZE, max_size=MAX_SIZE
    )
    plan = plans[goal]
    answers = None if plan.cycles_needed is None else plan.cycles_needed * plan.size
    needed = None if answers is None else math.ceil(answers / full)
    return NextCycle(goal, size, needed, full, sum(s.pool for s in plan.strata), answers)


@dataclass(frozen=True, slots=True)
class ReassignResult:
    """What `reassign` did."""

    cycle: str
    from_reviewer: str
    to_reviewer: str
    moved: tuple[str, ...]  # answers now assigned to `to_reviewer`
    kept: tuple[str, ...]  # open answers left with `from_reviewer`: `to_reviewer` already has them
    warnings: tuple[str, ...] = ()


def reassign(
    db: Database, cycle_name: str, from_reviewer: str, to_reviewer: str, *, by: str | None = None
) -> ReassignResult:
    """Move a reviewer's open work in a cycle to another reviewer, recorded in the history.

    Names follow the one name rule (`roles.accept_name`: "Vera" is the known "vera"). Open work
    is every answer assigned to `from_reviewer` with a claim they have not labeled, skipped or
    marked unclear; their labels so far stay theirs (and in the label history), the answer's
    assignment moves. An answer `to_reviewer` already holds stays where it is (`kept`). Refused:
    a closed cycle, a cycle open to every reviewer (nothing is assigned), one reviewer given twice,
    a `from_reviewer` with no open work there. The move is one entry of `store.cycles.reassignments`.
    """
    known = store.cycles.known_reviewer_names(db)
    source = roles.accept_name(from_reviewer, known, field="from")
    target = roles.accept_name(to_reviewer, known, field="to")
    if name_key(source) == name_key(target):
        raise InputError(f"to: {source!r} is the reviewer the work comes from; name another reviewer")
    off_roster = roster.check_on_roster(db, [target], field="to")
    if off_roster:
        raise InputError(off_roster)
    with store.write(db):
        cycle = _held_cycle(db, cycle_name)
        if cycle.status != "open":
            raise ConflictError(f"cycle {cycle.name!r} is closed; its work cannot be reassigned")
        if cycle.is_open_to_all:
            raise InputError(f"cycle {cycle.name!r} is open to every reviewer: nobody holds work to reassign")
        open_work = store.cycles.open_assigned_answers(db, cycle.id, source)
        if not open_work:
            held = store.cycles.assigned_to(db, cycle.id, source)
            why = "has labeled every claim assigned" if held else "is not assigned any answer"
            raise InputError(f"from: {source!r} {why} in cycle {cycle.name!r}; nothing to reassign")
        theirs = store.cycles.assigned_to(db, cycle.id, target)
        moved = [a for a in open_work if a not in theirs]
        kept = [a for a in open_work if a in theirs]
        if moved:
            store.cycles.move_assignments(db, cycle.id, moved, source, target, by)
    warnings: list[str] = []
    unknown = roles.unknown_warning([target] if name_key(target) not in {name_key(k) for k in known} else [])
    if unknown:
        warnings.append(f"to: {unknown}")
    if kept:
        warnings.append(
            f"{plural(len(kept), 'answer')} stay with {source!r}: {target!r} is already "
            "assigned them (an overlap answer)"
        )
    return ReassignResult(cycle.name, source, target, tuple(moved), tuple(kept), tuple(warnings))


def _empty_pool_problem(run: str, rows: list[_PoolRow], holdout: bool, include_labeled: bool) -> Problem:
    if not rows:
        return Problem(f"run {run} has no judged answers")
    kind = "holdout" if holdout else "non-holdout"
    same = [r for r in rows if r.holdout == holdout]
    if not same:
        hint: Hint = (
            ("mark answers as holdout first (", Option.MARK_HOLDOUT, ")")
            if holdout
            else ("every answer is holdout; create a holdout cycle (", Option.HOLDOUT, ")")
        )
        return Problem(f"no {kind} answers in run {run} ({plural(len(rows), 'answer')} in all)", hint=hint)
    every = "the one" if len(same) == 1 else f"all {len(same)}"
    msg = (
        f"no eligible answers in run {run}: {every} {kind} {'answer' if len(same) == 1 else 'answers'} "
        f"already {'has' if len(same) == 1 else 'have'} a final human label on every claim"
    )
    return Problem(
        msg, hint=() if include_labeled else ("use ", Option.INCLUDE_LABELED, " to sample them anyway")
    )


def mark_holdout(db: Database, answer_ids: Iterable[str], flag: bool = True) -> int:
    """Set or clear the holdout flag of answers; returns how many changed.

    Refuses to mark an answer that has already been in an ordinary cycle: it was seen
    while tuning, so it can no longer serve as an independent check.
    """
    ids = sorted({a.strip() for a in answer_ids if a.strip()})
    if not ids:
        raise InputError("no answer ids given")
    with store.write(db):
        store.cycles.hold_membership(db)  # no cycle samples these answers while they change
        known = store.cycles.known_answers(db, ids)
        if missing := [a for a in ids if a not in known]:
            raise NotFoundError(f"unknown answer id(s): {', '.join(missing)}")
        if flag:
            used = store.cycles.ordinary_cycles_of(db, ids)
            if used:
                listed = "; ".join(f"{a} (in {cs})" for a, cs in used)
                raise ConflictError(
                    "these answers were already sampled for a non-holdout "
                    f"cycle and cannot become holdout: {listed}"
                )
        return store.cycles.set_holdout(db, ids, flag)


def holdout_answers(db: Database) -> list[str]:
    """The answers marked holdout, by id."""
    return store.cycles.holdout_answer_ids(db)


def close_cycle(
    db: Database, name: str, snapshot: dict[str, Any] | None = None, *, force: bool = False
) -> Cycle:
    """Close an open cycle and freeze its figures (`snapshot`, or `build_snapshot`).

    Refused (`WorkOutstandingError`) while work remains (`CycleProgress.outstanding`) unless
    `force`: closing freezes the figures, and labels given later do not change them.
    """
    with store.write(db):
        cycle = _held_cycle(db, name)
        if cycle.status == "closed":
            raise ConflictError(f"cycle {name!r} is already closed (at {cycle.closed_at})")
        if not force:
            prog = progress(db, cycle.id)
            if (left := prog.outstanding()) is not None:
                raise WorkOutstandingError(
                    (
                        f"cycle {name!r} still has work: {left}; use ",
                        Option.FORCE_CLOSE,
                        " to close it anyway (its figures are frozen at close)",
                    ),
                    prog,
                )
        frozen = snapshot if snapshot is not None else build_snapshot(db, cycle)
        store.cycles.mark_closed(db, cycle.id, frozen)
        return _cycle_by_id(db, cycle.id)


def build_snapshot(db: Database, cycle: Cycle) -> dict[str, Any]:
    """The figures frozen when a cycle closes.

    The raw material is frozen claim by claim (judge verdict, each reviewer's final
    verdict, adjudication, the answer's inclusion probability, the final label), so any
    figure can be recomputed from the snapshot alone after labels change. On top: progress,
    counts against the final human label and the agreement report of the cycle with its
    assessment (`assessment.assess`, re-weighted by 1 / pi when the cycle oversampled). Both
    read the claims through the one final-label reader (`store.claim_table`).
    """
    # Imported here: the report pulls in the statistics (scipy), which only closing needs.
    from .report import assess

    # A cycle's run has verdicts (they were sampled), so `judge_runs` lists it.
    run = next(r for r in store.judge_runs(db) if r.id == cycle.judge_run_id)
    scope, assessed = assess(db, run, cycle.id, cycle=cycle.name)
    table = scope.table
    probs = store.cycles.inclusion_probs(db, cycle.id)
    lab = table.labels
    per_claim: list[dict[str, str | None]] = [{} for _ in range(len(table))]
    # Reviewer order within a claim: by name, as the labels' primary key stores them.
    for j in np.lexsort((lab.reviewer, lab.claim)).tolist():
        v = int(lab.final[j])
        per_claim[int(lab.claim[j])][lab.reviewers[int(lab.reviewer[j])]] = LABELS[v] if v >= 0 else None
    counts = dict.fromkeys(("agree", "disagree", "reviewers_disagree", "unlabeled"), 0)
    claims: list[dict[str, Any]] = []
    for i, status in enumerate(table.statuses()):
        aid = table.answer_ids[int(table.answer[i])]
        judge = LABELS[int(table.judge[i])]
        human = int(table.human[i])
        final = LABELS[human] if human >= 0 else None
        if status.group == "agreed":
            counts["agree" if final == judge else "disagree"] += 1
        elif status.group == "unresolved":
            counts["reviewers_disagree"] += 1
        else:
            counts["unlabeled"] += 1
        claims.append(
            {
                "answer_id": aid,
                "claim_id": table.keys[i][len(aid) + 1 :],
                "inclusion_prob": probs[aid],
                "judge": judge,
                "labels": per_claim[i],
                "adjudication": final if status is ClaimStatus.ADJUDICATED else None,
                "final": final,
            }
        )
    figures = assessed.source if scope.report.n_claims else None
    snap: dict[str, Any] = {
        "version": 1,
        "cycle": cycle.name,
        "judge_run": cycle.judge_run,
        "strategy": cycle.strategy,
        "seed": cycle.seed,
        "frozen_at": store.now(),
        "progress": progress(db, cycle.id).as_dict(),
        "counts": counts,
        "agreement": figures,
        "claims": claims,
    }
    if figures is None:
        snap["note"] = "no claim had a final human label when the cycle closed"
    if cycle.plan is not None:
        snap["plan"] = plan_outcome(db, run, cycle.plan)
    return snap


def plan_outcome(db: Database, run: store.JudgeRun, plan: Mapping[str, Any]) -> dict[str, Any]:
    """What a planned cycle's plan expected of the run's figure for its goal, and what the run's
    report reaches now (its 95% interval: the report's own, where the plan used a normal
    approximation)."""
    from .report import assess

    scoped, assessed = assess(db, run, bootstrap=0)
    pipeline = scoped.report.pipeline
    part: Mapping[str, Any] = {}
    if plan["goal"] == "agreement":
        part = assessed.agreement.to_dict()
    elif plan["goal"] == "grounding" and pipeline is not None:
        part = pipeline["supported_rate"]
    low, high = part.get("ci_low"), part.get("ci_high")
    return {
        "goal": plan["goal"],
        "expected_half_width": plan.get("expected_half_width"),
        "expected_from": plan.get("current"),
        "reached_value": part.get("value"),
        "reached_half_width": None if low is None or high is None else (high - low) / 2,
    }


def plan_sentence(outcome: Mapping[str, Any]) -> str:
    """`plan: expected ±0.041 on the agreement, reached ±0.038 (at 0.871)`."""

    def hw(x: float | None) -> str:
        return "no interval" if x is None else f"±{x:.3f}"

    what = "agreement" if outcome.get("goal") == "agreement" else "corrected grounding score"
    value = outcome.get("reached_value")
    return (
        f"plan: expected {hw(outcome.get('expected_half_width'))} on the run's {what}, reached "
        f"{hw(outcome.get('reached_half_width'))}" + ("" if value is None else f" (at {value:.3f})")
    )


def frozen_figures(snapshot: dict[str, Any] | None) -> FrozenFigures | None:
    """The figures a lead reads from a closed cycle's snapshot; None without a snapshot.

    Tolerant of snapshots written by hand (`close_cycle(..., snapshot)`) or by an older
    version: a missing figure is None.
    """
    if not snapshot:
        return None
    report = snapshot.get("agreement") or {}
    prog = snapshot.get("progress") or {}

    def figure(key: str) -> tuple[float | None, tuple[float, float] | None]:
        part = report.get(key) or {}
        low, high = part.get("ci_low"), part.get("ci_high")
        return part.get("value"), (low, high) if low is not None and high is not None else None

    weighted, weighted_ci = figure("agreement_weighted")
    flag = report.get("flag") or {}
    return FrozenFigures(
        frozen_at=snapshot.get("frozen_at"),
        labeled=prog.get("labeled"),
        total=prog.get("total"),
        labeled_elsewhere=prog.get("labeled_elsewhere"),
        assessment=of_snapshot(snapshot),
        weighted_agreement=weighted,
        weighted_ci=weighted_ci,
        flag_reasons=tuple(r.get("message", "") for r in flag.get("reasons") or ()),
        note=snapshot.get("note"),
        reused=prog.get("reused"),
        plan=snapshot.get("plan"),
    )
