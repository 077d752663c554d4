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
- not every one of its judged claims already has a final human label (a reviewer's
  label with status 'labeled', or an adjudication), unless `include_labeled`: labels
  are reused across cycles and runs, so labeling a claim twice is wasted effort.

Errors that point at an option (force, include labeled answers, ...) name it through
`ui_names`: the CLI's flags by default (`CLI_NAMES`); the page passes its form controls.
"""

from __future__ import annotations

import json
import math
import re
import secrets
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlite_utils import Database

from . import sampling, store
from .errors import ConflictError, InputError, NotFoundError, WorkOutstandingError
from .fmt import plural

MIN_SIZE, MAX_SIZE = 15, 30
DEFAULT_SIZE = 20
DEFAULT_OVERLAP = 0.2
# The agreement a healthy judge shows (seed 000: "85%+"): the interval width warned about
# for an out-of-bounds size is computed there.
EXPECTED_AGREEMENT = 0.85
# Where the failures-first share of a cycle is recorded (the cycles table has no column
# for it): settings key per cycle id.
_SHARE_KEY = "cycle.{}.failing_share"

# How an error message tells the caller to act on an option, keyed by option. The CLI's
# wording is the default; the page passes its own (`ui_names`) naming its form controls.
CLI_NAMES: dict[str, str] = {
    "force": "use --force",
    "include_labeled": "use --include-labeled",
    "holdout_cycle": "create a holdout cycle (--holdout)",
    "mark_holdout": "mark answers as holdout first (holdout add ANSWER_ID ...)",
    "force_close": "use --force",
}


def _how(ui_names: Mapping[str, str] | None, option: str) -> str:
    return {**CLI_NAMES, **(ui_names or {})}[option]


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


@dataclass(frozen=True, slots=True)
class ReviewerProgress:
    reviewer: str
    labeled: int
    total: int

    @property
    def fraction(self) -> float:
        return self.labeled / self.total if self.total else 0.0


@dataclass(frozen=True, slots=True)
class Progress:
    """The work of a cycle: see `progress` for what counts as labeled."""

    labeled: int  # claims done for this cycle
    total: int  # claims of the cycle (judged by its run)
    reviewers: tuple[ReviewerProgress, ...]
    labeled_elsewhere: int = 0  # not done here, but with a final human label from outside the cycle
    assigned: bool = True  # False: an open cycle, anyone may label

    @property
    def fraction(self) -> float:
        return self.labeled / self.total if self.total else 0.0

    @property
    def missing(self) -> int:
        """Labels still owed: per assigned reviewer, else claims without a label for this cycle."""
        if self.assigned:
            return sum(r.total - r.labeled for r in self.reviewers)
        return self.total - self.labeled

    def headline(self) -> str:
        """`3/40 claims labeled`, with the claims labeled outside the cycle when there are any."""
        line = f"{self.labeled}/{self.total} claims labeled"
        if self.labeled_elsewhere:
            line += f" (already labeled outside this cycle: {self.labeled_elsewhere})"
        return line

    def outstanding(self) -> str | None:
        """What work remains, in a sentence; None when there is none."""
        if self.assigned:
            behind = [r for r in self.reviewers if r.labeled < r.total]
            if not behind:
                return None
            verb = "has" if len(behind) == 1 else "have"
            return (f"{len(behind)} of {plural(len(self.reviewers), 'reviewer')} {verb} labels "
                    f"outstanding: {plural(self.missing, 'claim')} unlabeled")
        if self.labeled >= self.total:
            return None
        verb = "has" if self.missing == 1 else "have"
        return (f"{self.missing} of {plural(self.total, 'claim')} {verb} no label made for this "
                "cycle")

    def as_dict(self) -> dict[str, Any]:
        return {"labeled": self.labeled, "total": self.total,
                "labeled_elsewhere": self.labeled_elsewhere,
                "reviewers": {r.reviewer: {"labeled": r.labeled, "total": r.total}
                              for r in self.reviewers}}


@dataclass(frozen=True, slots=True)
class FrozenFigures:
    """The readable part of a closed cycle's snapshot (see `frozen_figures`)."""

    frozen_at: str | None
    labeled: int | None  # progress when the cycle closed (see `progress`)
    total: int | None
    labeled_elsewhere: int | None
    n_claims: int  # claims with a final human label that the figures rest on
    n_answers: int
    agreement: float | None
    agreement_ci: tuple[float, float] | None  # 95% Wilson
    weighted_agreement: float | None  # re-weighted to the whole run by 1 / pi
    weighted_ci: tuple[float, float] | None
    kappa: float | None
    kappa_ci: tuple[float, float] | None
    flag: str | None  # 'ok' | 'revise' | 'inconclusive'; None without figures
    flag_reasons: tuple[str, ...]
    note: str | None


# ---------------------------------------------------------------- pure helpers


def size_warning(size: int, claims: int) -> str:
    """The warning shown when a cycle is forced outside the default size bounds."""
    # Imported here: the statistics module pulls in scipy, which only this path needs.
    from .agreement import wilson_interval

    interval = wilson_interval(EXPECTED_AGREEMENT * claims, claims)
    width = "undefined" if interval is None else f"about ±{(interval[1] - interval[0]) * 50:.1f} points"
    return (f"size {size} is outside {MIN_SIZE}-{MAX_SIZE}: with {plural(claims, 'claim')} the 95% Wilson "
            f"interval around an agreement of {EXPECTED_AGREEMENT:.0%} is {width} (claims of "
            "one answer are correlated, so the real interval is wider)")


def overlap_positions(n: int, overlap: float) -> set[int]:
    """Which cycle positions go to two reviewers: round(overlap * n) of them, evenly spread.

    Evenly spread over the cycle order rather than drawn: the order is already random
    within each stratum, and spreading keeps both strata of failures-first represented.
    """
    k = min(n, math.floor(overlap * n + 0.5))
    return {math.floor(i * n / k) for i in range(k)} if k else set()


def assign(answer_ids: Sequence[str], reviewers: Sequence[str], overlap: float
           ) -> dict[str, tuple[str, ...]]:
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


def normalise_reviewers(reviewers: Iterable[str]) -> tuple[list[str], list[str]]:
    """(reviewers, problems): whitespace collapsed, blanks dropped, duplicates refused.

    Names that differ only in case or spacing ("a", " a", "A") are the same person
    typed twice; assigning both would split one reviewer's work over two queues.
    """
    out: list[str] = []
    seen: dict[str, list[str]] = {}
    for raw in reviewers:
        name = re.sub(r"\s+", " ", raw).strip()
        if not name:
            continue
        if name.casefold() not in seen:
            out.append(name)
        seen.setdefault(name.casefold(), []).append(name)
    dupes = [names for names in seen.values() if len(names) > 1]
    if not dupes:
        return out, []
    listed = "; ".join(", ".join(repr(n) for n in names) for names in dupes)
    return out, [f"reviewers: each reviewer may be listed once (names are compared ignoring case "
                 f"and spacing), but these are the same: {listed}"]


# ---------------------------------------------------------------- reads


@dataclass(frozen=True, slots=True)
class _PoolRow:
    answer_id: str
    category: str | None
    holdout: bool
    claims: int
    failing: bool
    fully_labeled: bool


def _pool_rows(db: Database, run_id: int) -> list[_PoolRow]:
    rows = db.execute(
        """SELECT a.id, a.category, a.holdout, count(*),
                  max(v.verdict != 'SUPPORTED'),
                  min(EXISTS (SELECT 1 FROM human_labels h
                              WHERE h.claim_pk = c.id AND h.status = 'labeled')
                      OR EXISTS (SELECT 1 FROM adjudications d WHERE d.claim_pk = c.id))
           FROM judge_verdicts v
           JOIN claims c ON c.id = v.claim_pk
           JOIN answers a ON a.id = c.answer_id
           WHERE v.run_id = ?
           GROUP BY a.id ORDER BY a.id""",
        [run_id],
    ).fetchall()
    return [_PoolRow(r[0], r[1], bool(r[2]), r[3], bool(r[4]), bool(r[5])) for r in rows]


_CYCLE_COLS = """c.id, c.name, r.judge_model || '@' || r.prompt_version, c.judge_run_id,
    c.strategy, c.seed, c.size, c.overlap, c.holdout, c.include_labeled, c.status,
    c.created_by, c.created_at, c.closed_at, c.snapshot"""


def _cycles(db: Database, where: str = "", params: Sequence[object] = ()) -> list[Cycle]:
    rows = db.execute(
        f"SELECT {_CYCLE_COLS} FROM cycles c JOIN judge_runs r ON r.id = c.judge_run_id "
        f"{where} ORDER BY c.id",
        list(params),
    ).fetchall()
    if not rows:
        return []
    ids = [r[0] for r in rows]
    marks = ",".join("?" for _ in ids)
    answers: dict[int, list[str]] = {i: [] for i in ids}
    for cid, aid in db.execute(
        f"SELECT cycle_id, answer_id FROM cycle_answers WHERE cycle_id IN ({marks}) "
        "ORDER BY cycle_id, position", ids
    ):
        answers[cid].append(aid)
    reviewers: dict[int, list[str]] = {i: [] for i in ids}
    for cid, rev in db.execute(
        f"SELECT DISTINCT cycle_id, reviewer FROM assignments WHERE cycle_id IN ({marks}) "
        "ORDER BY cycle_id, reviewer", ids
    ):
        reviewers[cid].append(rev)
    shares = dict(db.execute(
        f"SELECT key, value FROM settings WHERE key IN ({marks})", [_SHARE_KEY.format(i) for i in ids]
    ).fetchall())

    def share(cycle_id: int, strategy: str) -> float | None:
        if strategy != "failures-first":
            return None
        stored = shares.get(_SHARE_KEY.format(cycle_id))
        # Cycles made before the share was configurable used the default.
        return float(stored) if stored is not None else sampling.DEFAULT_FAILING_SHARE

    return [
        Cycle(id=r[0], name=r[1], judge_run=r[2], judge_run_id=r[3], strategy=r[4], seed=r[5],
              size=r[6], overlap=r[7], holdout=bool(r[8]), include_labeled=bool(r[9]),
              status=r[10], created_by=r[11], created_at=r[12], closed_at=r[13],
              snapshot=json.loads(r[14]) if r[14] else None,
              answers=tuple(answers[r[0]]), reviewers=tuple(reviewers[r[0]]),
              failing_share=share(r[0], r[4]))
        for r in rows
    ]


def list_cycles(db: Database) -> list[Cycle]:
    """Every cycle, oldest first."""
    return _cycles(db)


def get_cycle(db: Database, name: str) -> Cycle:
    found = _cycles(db, "WHERE c.name = ?", [name])
    if not found:
        known = ", ".join(c.name for c in list_cycles(db)) or "none yet"
        raise NotFoundError(f"no cycle named {name!r}; cycles: {known}")
    return found[0]


def sampleable_runs(db: Database) -> list[store.JudgeRun]:
    """Judge runs that gave at least one verdict, oldest first: the runs a cycle can sample.

    A judge-lab run that failed on every answer has no verdicts and is left out.
    """
    with_verdicts = {r[0] for r in db.execute("SELECT DISTINCT run_id FROM judge_verdicts")}
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
    found = _cycles(db, "WHERE c.id = ?", [cycle_id])
    if not found:
        raise NotFoundError(f"no cycle with id {cycle_id}")
    return found[0]


def cycle_answers(db: Database, cycle_id: int) -> list[CycleAnswer]:
    """The cycle's answers in order, with inclusion probability, claim count and reviewers."""
    cycle = _cycle_by_id(db, cycle_id)
    who: dict[str, list[str]] = {}
    for aid, rev in db.execute(
        "SELECT answer_id, reviewer FROM assignments WHERE cycle_id = ? ORDER BY reviewer",
        [cycle_id],
    ):
        who.setdefault(aid, []).append(rev)
    rows = db.execute(
        """SELECT ca.position, ca.answer_id, ca.inclusion_prob,
                  (SELECT count(*) FROM claims c JOIN judge_verdicts v
                     ON v.claim_pk = c.id AND v.run_id = ?
                   WHERE c.answer_id = ca.answer_id)
           FROM cycle_answers ca WHERE ca.cycle_id = ? ORDER BY ca.position""",
        [cycle.judge_run_id, cycle_id],
    ).fetchall()
    return [CycleAnswer(pos, aid, prob, n, tuple(who.get(aid, ()))) for pos, aid, prob, n in rows]


def queue(db: Database, cycle_id: int, reviewer: str) -> list[str]:
    """The answer ids a reviewer works through, in cycle order.

    In an open cycle (no assignments) that is every answer; otherwise the reviewer's
    assigned answers, and nothing for a reviewer not assigned in it.
    """
    assigned = db.execute("SELECT 1 FROM assignments WHERE cycle_id = ? LIMIT 1",
                          [cycle_id]).fetchone()
    if assigned is None:
        sql = "SELECT answer_id FROM cycle_answers WHERE cycle_id = ? ORDER BY position"
        params: list[object] = [cycle_id]
    else:
        sql = """SELECT ca.answer_id FROM cycle_answers ca
                 JOIN assignments s ON s.cycle_id = ca.cycle_id AND s.answer_id = ca.answer_id
                 WHERE ca.cycle_id = ? AND s.reviewer = ? ORDER BY ca.position"""
        params = [cycle_id, reviewer]
    return [r[0] for r in db.execute(sql, params)]


def open_cycles_for(db: Database, reviewer: str) -> list[Cycle]:
    """Open cycles the reviewer may label: open-to-all ones and those assigning them answers."""
    return _cycles(
        db,
        """WHERE c.status = 'open' AND (
             NOT EXISTS (SELECT 1 FROM assignments s WHERE s.cycle_id = c.id)
             OR EXISTS (SELECT 1 FROM assignments s WHERE s.cycle_id = c.id AND s.reviewer = ?))""",
        [reviewer],
    )


_CYCLE_CLAIMS = """
    SELECT ca.answer_id, cl.id AS claim_pk FROM cycle_answers ca
    JOIN cycles cy ON cy.id = ca.cycle_id
    JOIN claims cl ON cl.answer_id = ca.answer_id
    JOIN judge_verdicts v ON v.claim_pk = cl.id AND v.run_id = cy.judge_run_id
    WHERE ca.cycle_id = :cycle"""


def progress(db: Database, cycle_id: int) -> Progress:
    """The cycle's own work: claims done / total, overall and per reviewer.

    Only labels of the cycle's reviewers count, so a cycle that includes already-labeled
    answers starts at 0, not at 100%:

    - assigned cycle: a reviewer has labeled a claim when their current label on it has
      status 'labeled' (given in whichever cycle: their own label is reused, and the review
      queue treats it as done); a claim is done when every reviewer assigned its answer has
      labeled it, so the cycle reaches 100% exactly when no reviewer has work left;
    - open cycle: a claim is done when some reviewer's current label on it has status
      'labeled' and was made for this cycle (a label event with this cycle id); the
      reviewers listed are those who made any label event for the cycle, each over every
      claim.

    `labeled_elsewhere` counts the claims not done and not labeled by any of the cycle's
    reviewers that nonetheless have a final human label (from another cycle, an import
    or an adjudication).
    """
    cycle = _cycle_by_id(db, cycle_id)
    params = {"cycle": cycle_id}
    claims = db.execute(f"{_CYCLE_CLAIMS} ORDER BY ca.position, cl.position", params).fetchall()
    labeled_by: dict[int, dict[str, bool]] = {}  # claim -> {reviewer: label made for this cycle}
    for pk, reviewer, here in db.execute(
        f"""WITH cc AS ({_CYCLE_CLAIMS})
            SELECT h.claim_pk, h.reviewer,
                   EXISTS (SELECT 1 FROM label_events e WHERE e.claim_pk = h.claim_pk
                           AND e.reviewer = h.reviewer AND e.cycle_id = :cycle)
            FROM human_labels h JOIN cc ON cc.claim_pk = h.claim_pk
            WHERE h.status = 'labeled'""", params,
    ):
        labeled_by.setdefault(pk, {})[reviewer] = bool(here)
    adjudicated = {r[0] for r in db.execute(
        f"WITH cc AS ({_CYCLE_CLAIMS}) SELECT d.claim_pk FROM adjudications d "
        "JOIN cc ON cc.claim_pk = d.claim_pk", params)}

    done = elsewhere = 0
    per: dict[str, list[int]] = {}  # reviewer -> [labeled, total]
    if cycle.reviewers:
        assigned: dict[str, set[str]] = {}
        for aid, rev in db.execute("SELECT answer_id, reviewer FROM assignments WHERE cycle_id = ?",
                                   [cycle_id]):
            assigned.setdefault(aid, set()).add(rev)
        per = {r: [0, 0] for r in cycle.reviewers}
        for aid, pk in claims:
            need = assigned.get(aid, set())
            got = need & set(labeled_by.get(pk, {}))
            for r in need:
                per[r][1] += 1
                per[r][0] += r in got
            done += bool(need) and got == need
            elsewhere += not got and (pk in labeled_by or pk in adjudicated)
    else:
        workers = [r[0] for r in db.execute(
            "SELECT DISTINCT reviewer FROM label_events WHERE cycle_id = ? ORDER BY reviewer",
            [cycle_id])]
        per = {r: [0, len(claims)] for r in workers}
        for _aid, pk in claims:
            here = [r for r, made_here in labeled_by.get(pk, {}).items() if made_here]
            for r in here:
                if r in per:
                    per[r][0] += 1
            done += bool(here)
            elsewhere += not here and (pk in labeled_by or pk in adjudicated)
    return Progress(done, len(claims),
                    tuple(ReviewerProgress(r, n, t) for r, (n, t) in sorted(per.items())),
                    labeled_elsewhere=elsewhere, assigned=bool(cycle.reviewers))


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
    ui_names: Mapping[str, str] | None = None,
) -> Cycle:
    """Sample a new cycle from a judge run (None: the most recently imported run) and assign it.

    `seed` None draws one, which is recorded so the sample can be redrawn. An empty
    `reviewers` list makes an open cycle: every signed-in reviewer's queue is every
    answer; reviewer names are normalised and duplicates refused (`normalise_reviewers`).
    `size` must be within 15-30 unless `force`, in which case the returned cycle carries a
    warning about the interval width; a pool smaller than `size` is an error unless
    `force`, which then takes the whole pool. `failing_share` is the least share of slots
    failures-first gives the failing stratum. The returned cycle's `notes` state what the
    design did (failures-first: the split of slots and the inclusion probabilities).
    """
    name = (name or "").strip()
    problems: list[str] = []
    if not name:
        problems.append("name: a cycle needs a name")
    if strategy not in sampling.STRATEGIES:
        problems.append(f"strategy: unknown {strategy!r}; use one of {', '.join(sampling.STRATEGIES)}")
    if size < 1:
        problems.append(f"size: must be at least 1, got {size}")
    elif not force and not MIN_SIZE <= size <= MAX_SIZE:
        problems.append(f"size: {size} is outside {MIN_SIZE}-{MAX_SIZE}; "
                        f"{_how(ui_names, 'force')} to create the cycle anyway")
    if not 0 <= overlap <= 1:
        problems.append(f"overlap: must be between 0 and 1, got {overlap}")
    if not 0 <= failing_share <= 1:
        problems.append(f"failing share: must be between 0 and 1, got {failing_share}")
    if seed is not None and seed < 0:
        problems.append(f"seed: must be a non-negative integer, got {seed}")
    team, team_problems = normalise_reviewers(reviewers)
    problems += team_problems
    if problems:
        raise InputError(problems)
    warnings: list[str] = []
    if len(team) == 1 and overlap > 0:
        warnings.append("overlap needs at least two reviewers: every answer goes to the one "
                        "reviewer, so no human-human agreement can be measured")
    if seed is None:
        seed = secrets.randbelow(2**31)

    with store.write(db):
        run = store.find_judge_run(db, judge_run)
        if db.execute("SELECT 1 FROM cycles WHERE name = ?", [name]).fetchone():
            raise ConflictError(f"a cycle named {name!r} already exists")
        rows = _pool_rows(db, run.id)
        pool = [r for r in rows if r.holdout == holdout
                and (include_labeled or not r.fully_labeled)]
        if not pool:
            raise InputError(_empty_pool_message(run.name, rows, holdout, include_labeled, ui_names))
        n = size
        if len(pool) < size:
            if not force:
                raise InputError(
                    f"size: only {plural(len(pool), 'eligible answer')} in run {run.name} for a "
                    f"cycle of {size}; lower the size (to go below {MIN_SIZE}, "
                    f"{_how(ui_names, 'force')})"
                    + ("" if include_labeled else f" or {_how(ui_names, 'include_labeled')}"))
            n = len(pool)
            warnings.append(f"only {plural(len(pool), 'eligible answer')}: the cycle takes all of them")
        sample = sampling.draw(
            strategy,
            [sampling.PoolAnswer(r.answer_id, r.category, r.failing) for r in pool],
            n, seed, failing_share)
        notes, design_warnings = sampling.describe(sample)
        warnings += design_warnings
        claims_of = {r.answer_id: r.claims for r in pool}
        if not MIN_SIZE <= n <= MAX_SIZE:
            warnings.append(size_warning(n, sum(claims_of[a] for a in sample.answer_ids)))
        stored_overlap = overlap if len(team) > 1 else 0.0
        cur = db.execute(
            """INSERT INTO cycles (name, judge_run_id, strategy, seed, size, overlap, holdout,
                   include_labeled, created_by, created_at, status)
               VALUES (?,?,?,?,?,?,?,?,?,?, 'open')""",
            [name, run.id, strategy, seed, n, stored_overlap, int(holdout),
             int(include_labeled), created_by, store.now()],
        )
        cycle_id = cur.lastrowid
        if strategy == "failures-first":  # part of the design: the seed alone does not redraw it
            store.set_setting(db, _SHARE_KEY.format(cycle_id), repr(float(failing_share)))
        db.conn.executemany(
            "INSERT INTO cycle_answers (cycle_id, answer_id, position, inclusion_prob) "
            "VALUES (?,?,?,?)",
            [(cycle_id, aid, pos, prob) for pos, (aid, prob)
             in enumerate(zip(sample.answer_ids, sample.inclusion_probs, strict=True))],
        )
        db.conn.executemany(
            "INSERT INTO assignments (cycle_id, answer_id, reviewer) VALUES (?,?,?)",
            [(cycle_id, aid, r) for aid, rs in assign(sample.answer_ids, team, overlap).items()
             for r in rs],
        )
        cycle = _cycle_by_id(db, cycle_id)
    return replace(cycle, notes=tuple(notes), warnings=tuple(warnings))


def _empty_pool_message(run: str, rows: list[_PoolRow], holdout: bool, include_labeled: bool,
                        ui_names: Mapping[str, str] | None = None) -> str:
    if not rows:
        return f"run {run} has no judged answers"
    kind = "holdout" if holdout else "non-holdout"
    same = [r for r in rows if r.holdout == holdout]
    if not same:
        hint = (_how(ui_names, "mark_holdout") if holdout
                else f"every answer is holdout; {_how(ui_names, 'holdout_cycle')}")
        return f"no {kind} answers in run {run} ({plural(len(rows), 'answer')} in all): {hint}"
    every = "the one" if len(same) == 1 else f"all {len(same)}"
    msg = (f"no eligible answers in run {run}: {every} {kind} {'answer' if len(same) == 1 else 'answers'} "
           f"already {'has' if len(same) == 1 else 'have'} a final human label on every claim")
    return msg if include_labeled else f"{msg}; {_how(ui_names, 'include_labeled')} to sample them anyway"


def mark_holdout(db: Database, answer_ids: Iterable[str], flag: bool = True) -> int:
    """Set or clear the holdout flag of answers; returns how many changed.

    Refuses to mark an answer that has already been in an ordinary cycle: it was seen
    while tuning, so it can no longer serve as an independent check.
    """
    ids = sorted({a.strip() for a in answer_ids if a.strip()})
    if not ids:
        raise InputError("no answer ids given")
    marks = ",".join("?" for _ in ids)
    with store.write(db):
        known = {r[0] for r in db.execute(f"SELECT id FROM answers WHERE id IN ({marks})", ids)}
        if missing := [a for a in ids if a not in known]:
            raise NotFoundError(f"unknown answer id(s): {', '.join(missing)}")
        if flag:
            used = db.execute(
                f"""SELECT ca.answer_id, group_concat(DISTINCT c.name) FROM cycle_answers ca
                    JOIN cycles c ON c.id = ca.cycle_id
                    WHERE c.holdout = 0 AND ca.answer_id IN ({marks})
                    GROUP BY ca.answer_id ORDER BY ca.answer_id""",
                ids,
            ).fetchall()
            if used:
                listed = "; ".join(f"{a} (in {cs})" for a, cs in used)
                raise ConflictError("these answers were already sampled for a non-holdout "
                                    f"cycle and cannot become holdout: {listed}")
        cur = db.execute(f"UPDATE answers SET holdout = ? WHERE id IN ({marks}) AND holdout != ?",
                         [int(flag), *ids, int(flag)])
        return cur.rowcount


def holdout_answers(db: Database) -> list[str]:
    return [r[0] for r in db.execute("SELECT id FROM answers WHERE holdout = 1 ORDER BY id")]


def close_cycle(db: Database, name: str, snapshot: dict[str, Any] | None = None, *,
                force: bool = False, ui_names: Mapping[str, str] | None = None) -> Cycle:
    """Close an open cycle and freeze its figures (`snapshot`, or `build_snapshot`).

    Refused (`WorkOutstandingError`) while work remains (`Progress.outstanding`) unless
    `force`: closing freezes the figures, and labels given later do not change them.
    """
    with store.write(db):
        cycle = get_cycle(db, name)
        if cycle.status == "closed":
            raise ConflictError(f"cycle {name!r} is already closed (at {cycle.closed_at})")
        if not force:
            prog = progress(db, cycle.id)
            if (left := prog.outstanding()) is not None:
                raise WorkOutstandingError(
                    f"cycle {name!r} still has work: {left}; {_how(ui_names, 'force_close')} to "
                    "close it anyway (its figures are frozen at close)", prog)
        frozen = snapshot if snapshot is not None else build_snapshot(db, cycle)
        db.execute("UPDATE cycles SET status = 'closed', closed_at = ?, snapshot = ? WHERE id = ?",
                   [store.now(), json.dumps(frozen, ensure_ascii=False), cycle.id])
        return _cycle_by_id(db, cycle.id)


def build_snapshot(db: Database, cycle: Cycle) -> dict[str, Any]:
    """The figures frozen when a cycle closes.

    The raw material is frozen claim by claim (judge verdict, each reviewer's final
    verdict, adjudication, the answer's inclusion probability), so any figure can be
    recomputed from the snapshot alone after labels change. On top: progress, counts
    against the final human label (the adjudication, else the reviewers' unanimous
    verdict) and the statistics module's agreement report, weighted by 1 / pi.
    """
    # Imported here: the statistics module pulls in scipy, which only closing needs.
    from . import agreement

    rows = db.execute(
        """SELECT ca.answer_id, cl.claim_id, ca.inclusion_prob, v.verdict,
                  (SELECT json_group_object(h.reviewer, h.final_verdict) FROM human_labels h
                   WHERE h.claim_pk = cl.id AND h.status = 'labeled'),
                  (SELECT d.verdict FROM adjudications d WHERE d.claim_pk = cl.id),
                  EXISTS (SELECT 1 FROM human_labels u WHERE u.claim_pk = cl.id AND u.status = 'unclear')
           FROM cycle_answers ca
           JOIN claims cl ON cl.answer_id = ca.answer_id
           JOIN judge_verdicts v ON v.claim_pk = cl.id AND v.run_id = :run
           WHERE ca.cycle_id = :cycle
           ORDER BY ca.position, cl.position""",
        {"cycle": cycle.id, "run": cycle.judge_run_id},
    ).fetchall()
    claims: list[dict[str, Any]] = []
    counts = dict.fromkeys(("agree", "disagree", "reviewers_disagree", "unlabeled"), 0)
    items: list[agreement.LabeledClaim] = []
    reviewer_labels: list[tuple[str, str, str]] = []
    unresolved: list[str] = []
    for aid, cid, prob, judge, labels_json, adjudicated, unclear in rows:
        labels: dict[str, str] = json.loads(labels_json) if labels_json else {}
        key = f"{aid}/{cid}"
        final = agreement.final_human_label(list(labels.values()), adjudicated, unclear=bool(unclear))
        if final is not None:
            counts["agree" if final == judge else "disagree"] += 1
            items.append(agreement.LabeledClaim(aid, key, final, judge, weight=1 / prob))
        elif labels or unclear:
            counts["reviewers_disagree"] += 1
            unresolved.append(key)
        else:
            counts["unlabeled"] += 1
        reviewer_labels += [(key, r, v) for r, v in labels.items()]
        claims.append({"answer_id": aid, "claim_id": cid, "inclusion_prob": prob,
                       "judge": judge, "labels": labels, "adjudication": adjudicated,
                       "final": final})
    report = None
    if items:
        report = replace(agreement.agreement_report(items, store.load_thresholds(db)),
                         unresolved_claims=tuple(unresolved),
                         human_human=agreement.human_human_agreement(reviewer_labels))
    snap: dict[str, Any] = {
        "version": 1,
        "cycle": cycle.name,
        "judge_run": cycle.judge_run,
        "strategy": cycle.strategy,
        "seed": cycle.seed,
        "frozen_at": store.now(),
        "progress": progress(db, cycle.id).as_dict(),
        "counts": counts,
        "agreement": None if report is None else report.to_dict(cycle.judge_run),
        "claims": claims,
    }
    if report is None:
        snap["note"] = "no claim had a final human label when the cycle closed"
    return snap


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

    agree, agree_ci = figure("agreement")
    weighted, weighted_ci = figure("agreement_weighted")
    kappa, kappa_ci = figure("kappa")
    flag = report.get("flag") or {}
    return FrozenFigures(
        frozen_at=snapshot.get("frozen_at"), labeled=prog.get("labeled"), total=prog.get("total"),
        labeled_elsewhere=prog.get("labeled_elsewhere"),
        n_claims=report.get("n_claims") or 0, n_answers=report.get("n_answers") or 0,
        agreement=agree, agreement_ci=agree_ci, weighted_agreement=weighted, weighted_ci=weighted_ci,
        kappa=kappa, kappa_ci=kappa_ci, flag=flag.get("status"),
        flag_reasons=tuple(r.get("message", "") for r in flag.get("reasons") or ()),
        note=snapshot.get("note"))
