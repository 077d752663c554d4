"""Cycles: lookup by name, and the reads and writes of sampling, assignment, progress and close.

The rules (eligibility, assignment, what counts as done) live in `calibration.cycles`; this
module only reads and writes the rows they act on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import ColumnElement, bindparam, exists, func, insert, literal, select, union, update

from ..errors import NotFoundError
from ..final_label import UNLABELED_CODE
from .claims import ClaimTable, claim_table
from .connection import now
from .core import ONE, batches, json_list, json_number, json_text, text_list, upsert
from .database import Database
from .imports import hidden
from .labels import settled_in
from .settings import set_setting
from .tables import (
    adjudications,
    answer_checks,
    answer_reveals,
    answers,
    assignments,
    claims,
    cycle_answers,
    cycle_plans,
    cycles,
    human_labels,
    judge_runs,
    judge_verdicts,
    label_events,
    reviewers,
    settings,
    sign_ins,
)
from .tables import reassignments as reassignment_log

# Where the failures-first share of a cycle is recorded (the cycles table has no column for
# it): one settings key per cycle id.
SHARE_KEY = "cycle.{}.failing_share"


def cycle_id(db: Database, name: str) -> int:
    """The id of the cycle called `name`; NotFoundError (one wording everywhere) when there is none."""
    found = db.run(select(_c.id).where(_c.name == name)).scalar()
    if found is None:
        known = list(db.run(select(_c.name).order_by(_c.id)).scalars())
        hint = f"; known cycles: {', '.join(known)}" if known else "; no cycles yet"
        raise NotFoundError(f"no cycle named {name!r}{hint}")
    return int(found)


def lock_cycle(db: Database, cycle_id: int) -> None:
    """Hold the cycle until the write ends (`Database.lock`)."""
    db.lock(select(cycles.c.id).where(cycles.c.id == cycle_id).with_for_update(key_share=True))


def hold_membership(db: Database) -> None:
    """Keep every other writer of cycle membership out until the write ends (`Database.lock_tables`):
    a new cycle samples answers that are not holdout, and marking answers holdout checks that no
    ordinary cycle holds them; each reads what the other writes, over many answers."""
    db.lock_tables(cycle_answers)


def cycle_judge_run_id(db: Database, cycle_id: int) -> int:
    """The judge run a cycle was sampled from."""
    return int(db.run(select(_c.judge_run_id).where(_c.id == cycle_id)).scalar_one())


def name_taken(db: Database, name: str) -> bool:
    """Whether a cycle is already called `name`."""
    return db.run(select(ONE).where(_c.name == name)).first() is not None


@dataclass(frozen=True, slots=True)
class CycleRecord:
    """A cycle as stored, with its answers (cycle order) and assigned reviewers (sorted)."""

    id: int
    name: str
    judge_run: str  # MODEL@VERSION
    judge_run_id: int
    strategy: str
    seed: int
    size: int
    overlap: float
    holdout: bool
    include_labeled: bool
    status: str
    created_by: str | None
    created_at: str
    closed_at: str | None
    snapshot: dict[str, Any] | None
    answers: tuple[str, ...]
    reviewers: tuple[str, ...]
    require_evidence: bool  # every SUPPORTED verdict in the cycle must name its evidence
    failing_share: str | None  # the stored setting, as text; None when none was stored
    plan: dict[str, Any] | None = None  # a planned cycle's recorded plan


_c, _ca, _s = cycles.c, cycle_answers.c, assignments.c
_CYCLES = select(
    _c.id,
    _c.name,
    judge_runs.c.judge_model + "@" + judge_runs.c.prompt_version,
    _c.judge_run_id,
    _c.strategy,
    _c.seed,
    _c.size,
    _c.overlap,
    _c.holdout,
    _c.include_labeled,
    _c.status,
    _c.created_by,
    _c.created_at,
    _c.closed_at,
    _c.snapshot,
    _c.require_evidence,
).select_from(cycles.join(judge_runs, judge_runs.c.id == _c.judge_run_id))


def _open_for(reviewer: str) -> ColumnElement[bool]:
    """Open cycles `reviewer` may label: open to all (nobody assigned), or assigning them answers."""
    anyone = select(ONE).where(_s.cycle_id == _c.id)
    return (_c.status == "open") & (~exists(anyone) | exists(anyone.where(_s.reviewer == reviewer)))


def cycle_records(
    db: Database, *, cycle_id: int | None = None, open_for: str | None = None
) -> list[CycleRecord]:
    """Cycles, oldest first: every one; the one with `cycle_id`; or the open cycles reviewer
    `open_for` may label (open to all, or assigning them answers)."""
    query = _CYCLES
    if cycle_id is not None:
        query = query.where(_c.id == cycle_id)
    elif open_for is not None:
        query = query.where(_open_for(open_for))
    rows = db.run(query.order_by(_c.id)).all()
    if not rows:
        return []
    ids = [r[0] for r in rows]
    answers: dict[int, list[str]] = {i: [] for i in ids}
    for cid, aid in db.run(
        select(_ca.cycle_id, _ca.answer_id).where(_ca.cycle_id.in_(ids)).order_by(_ca.cycle_id, _ca.position)
    ):
        answers[cid].append(aid)
    assigned: dict[int, list[str]] = {i: [] for i in ids}
    for cid, rev in db.run(
        select(_s.cycle_id, _s.reviewer)
        .distinct()
        .where(_s.cycle_id.in_(ids))
        .order_by(_s.cycle_id, _s.reviewer)
    ):
        assigned[cid].append(rev)
    k = settings.c
    shares: dict[str, str] = dict(
        db.run(select(k.key, k.value).where(k.key.in_([SHARE_KEY.format(i) for i in ids]))).all()
    )
    p = cycle_plans.c
    plans = {
        cid: json.loads(plan) for cid, plan in db.run(select(p.cycle_id, p.plan).where(p.cycle_id.in_(ids)))
    }
    return [
        CycleRecord(
            id=r[0],
            name=r[1],
            judge_run=r[2],
            judge_run_id=r[3],
            strategy=r[4],
            seed=r[5],
            size=r[6],
            overlap=r[7],
            holdout=bool(r[8]),
            include_labeled=bool(r[9]),
            status=r[10],
            created_by=r[11],
            created_at=r[12],
            closed_at=r[13],
            snapshot=json.loads(r[14]) if r[14] else None,
            answers=tuple(answers[r[0]]),
            reviewers=tuple(assigned[r[0]]),
            require_evidence=bool(r[15]),
            failing_share=shares.get(SHARE_KEY.format(r[0])),
            plan=plans.get(r[0]),
        )
        for r in rows
    ]


def run_ids_with_verdicts(db: Database) -> set[int]:
    """The judge runs that gave at least one verdict."""
    return set(db.run(select(judge_verdicts.c.run_id).distinct()).scalars())


def answer_facts(db: Database, answer_ids: Sequence[str]) -> dict[str, tuple[str | None, bool]]:
    """Category and holdout flag of the given answers."""
    a = answers.c
    return {
        aid: (category, bool(holdout))
        for batch in batches(answer_ids)
        for aid, category, holdout in db.run(select(a.id, a.category, a.holdout).where(a.id.in_(batch)))
    }


def assignment_pairs(db: Database, cycle_id: int) -> list[tuple[str, str]]:
    """(answer id, reviewer) of every assignment of the cycle, by reviewer."""
    query = (
        select(_s.answer_id, _s.reviewer).where(_s.cycle_id == cycle_id).order_by(_s.reviewer, _s.answer_id)
    )
    return [(a, r) for a, r in db.run(query)]


def cycle_answer_rows(db: Database, cycle_id: int, run_id: int) -> list[tuple[int, str, float, int]]:
    """(position, answer id, inclusion probability, claims the run judged) per answer, in order."""
    v = judge_verdicts.c
    judged = (
        select(func.count())
        .select_from(claims.join(judge_verdicts, (v.claim_pk == claims.c.id) & (v.run_id == run_id)))
        .where(claims.c.answer_id == _ca.answer_id)
        .scalar_subquery()
    )
    query = select(_ca.position, _ca.answer_id, _ca.inclusion_prob, judged).where(_ca.cycle_id == cycle_id)
    return [(p, a, prob, n) for p, a, prob, n in db.run(query.order_by(_ca.position))]


def inclusion_probs(db: Database, cycle_id: int) -> dict[str, float]:
    """Each answer of the cycle: its inclusion probability, as stored."""
    return dict(db.run(select(_ca.answer_id, _ca.inclusion_prob).where(_ca.cycle_id == cycle_id)).all())


def queue_answers(db: Database, cycle_id: int, reviewer: str) -> list[str]:
    """The answers of the cycle in cycle order: every one when nobody is assigned (an open
    cycle), else those assigned to `reviewer`."""
    assigned = db.run(select(ONE).where(_s.cycle_id == cycle_id).limit(ONE)).first()
    query = select(_ca.answer_id).where(_ca.cycle_id == cycle_id)
    if assigned is not None:
        query = query.join(
            assignments, (_s.cycle_id == _ca.cycle_id) & (_s.answer_id == _ca.answer_id)
        ).where(_s.reviewer == reviewer)
    return list(db.run(query.order_by(_ca.position)).scalars())


# ---------------------------------------------------------------- progress reads

# Every claim of the cycle's answers: the work a reviewer does (a commit needs each of them
# settled, judged by the cycle's run or not).
_CYCLE_CLAIMS = (
    select(_ca.answer_id, claims.c.id.label("claim_pk"))
    .select_from(cycle_answers.join(claims, claims.c.answer_id == _ca.answer_id))
    .where(_ca.cycle_id == bindparam("cycle"))
)


@dataclass(frozen=True, slots=True)
class CycleWork:
    """What the progress of a cycle is computed from."""

    claims: list[tuple[str, int]]  # (answer id, claim pk) of every claim of its answers, cycle order
    labels: list[tuple[int, str, str, bool]]  # (claim pk, reviewer, status, settled in this cycle)
    adjudicated: set[int]  # claim pks with an adjudication
    participants: list[str]  # reviewers with a label event or a commit in this cycle, sorted
    committed: set[tuple[str, str]]  # (answer id, reviewer) of the answers each reviewer committed


def cycle_work(db: Database, cycle_id: int) -> CycleWork:
    """The claims of the cycle, every reviewer's current label on them (with whether it was
    settled in this cycle), the adjudications, who took part in the cycle and the commits."""
    params = {"cycle": cycle_id}
    ordered = _CYCLE_CLAIMS.order_by(_ca.position, claims.c.position, claims.c.id)
    work = [(a, pk) for a, pk in db.run(ordered, params)]
    cc = _CYCLE_CLAIMS.cte("cc")
    h = human_labels.c
    here = settled_in(h.claim_pk, h.reviewer).is_not_distinct_from(bindparam("cycle"))
    labels = [
        (pk, reviewer, status, bool(settled))
        for pk, reviewer, status, settled in db.run(
            select(h.claim_pk, h.reviewer, h.status, here)
            .select_from(human_labels.join(cc, cc.c.claim_pk == h.claim_pk))
            .where(hidden(db, label=h.import_id)),
            params,
        )
    ]
    d = adjudications.c
    adjudicated = set(db.run(select(d.claim_pk).join(cc, cc.c.claim_pk == d.claim_pk), params).scalars())
    e, r = label_events.c, answer_reveals.c
    took_part = union(
        select(e.reviewer).where(e.cycle_id == bindparam("cycle")),
        select(r.reviewer).where(r.cycle_id == bindparam("cycle")),
    ).order_by(ONE)  # the first column
    participants = list(db.run(took_part, params).scalars())
    commits = (
        select(r.answer_id, r.reviewer)
        .select_from(cycle_answers.join(answer_reveals, r.answer_id == _ca.answer_id))
        .where(_ca.cycle_id == bindparam("cycle"), hidden(db, label=r.import_id))
    )
    committed = {(a, who) for a, who in db.run(commits, params)}
    return CycleWork(work, labels, adjudicated, participants, committed)


# ---------------------------------------------------------------- planned cycles


@dataclass(frozen=True, slots=True)
class PlanningFacts:
    """What the planned design reads of one answer of a run (`planning_facts`)."""

    answer_id: str
    category: str | None
    verdicts: tuple[str, ...]  # the run's verdict on each judged claim, claim order
    flagged: bool  # an answer check (script mismatch, unexpected CJK) flagged it
    length: int  # characters of the answer text
    confidence: float | None  # metadata.judge_confidence when the import carried a number


def planning_facts(db: Database, run_id: int) -> list[PlanningFacts]:
    """Every answer the run judged, by id, with its verdicts, check flag, length and confidence."""
    jv, cl, a, k = judge_verdicts.c, claims.c, answers.c, answer_checks.c
    v = (
        select(cl.answer_id, jv.verdict)
        .select_from(judge_verdicts.join(claims, cl.id == jv.claim_pk))
        .where(jv.run_id == run_id)
        .order_by(cl.answer_id, cl.position)
        .subquery("v")
    )
    flagged = func.coalesce(k.script_mismatch, 0) + func.coalesce(k.unexpected_cjk, 0) > 0
    rows = db.run(
        select(
            a.id,
            a.category,
            json_list(v.c.verdict),
            func.length(a.answer),
            flagged,
            json_number(a.metadata, literal("judge_confidence")),
        )
        .select_from(v.join(answers, a.id == v.c.answer_id).outerjoin(answer_checks, k.answer_id == a.id))
        .group_by(a.id, k.script_mismatch, k.unexpected_cjk)
        .order_by(a.id)
    ).all()
    return [
        PlanningFacts(
            aid,
            cat,
            tuple(json.loads(vs)),
            bool(flag),
            int(length or 0),
            None if conf is None else float(conf),
        )
        for aid, cat, vs, length, flag, conf in rows
    ]


def insert_plan(db: Database, cycle_id: int, goal: str, plan: Mapping[str, Any]) -> None:
    """Record a planned cycle's plan (inside the caller's write)."""
    db.run(
        insert(cycle_plans).values(cycle_id=cycle_id, goal=goal, plan=json.dumps(plan, ensure_ascii=False))
    )


def run_plan_strata(db: Database, run_id: int) -> list[dict[str, str]]:
    """Per planned cycle of the run, oldest first: its pool answers' strata (answer id -> stratum)."""
    p = cycle_plans.c
    strata = (
        select(json_text(p.plan, literal("answer_strata")))
        .select_from(cycle_plans.join(cycles, _c.id == p.cycle_id))
        .where(_c.judge_run_id == run_id)
        .order_by(_c.id)
    )
    return [dict(json.loads(s)) for s in db.run(strata).scalars()]


# ---------------------------------------------------------------- writes (inside store.write)

_SAMPLE, _ASSIGN = insert(cycle_answers), insert(assignments)


def insert_cycle(
    db: Database,
    *,
    name: str,
    run_id: int,
    strategy: str,
    seed: int,
    size: int,
    overlap: float,
    holdout: bool,
    include_labeled: bool,
    created_by: str | None,
    answers: Sequence[tuple[str, float]],
    assignments: Mapping[str, Sequence[str]],
    failing_share: float | None = None,
    require_evidence: bool = False,
) -> int:
    """Write a new open cycle with its answers (id, inclusion probability; in cycle order) and
    assignments (answer id -> reviewers); `failing_share` recorded when given. Returns its id."""
    new = insert(cycles).values(
        name=name,
        judge_run_id=run_id,
        strategy=strategy,
        seed=seed,
        size=size,
        overlap=overlap,
        holdout=int(holdout),
        include_labeled=int(include_labeled),
        created_by=created_by,
        created_at=now(),
        status="open",
        require_evidence=int(require_evidence),
    )
    new_id = int(db.run(new.returning(_c.id)).scalar_one())
    if failing_share is not None:
        set_setting(db, SHARE_KEY.format(new_id), repr(float(failing_share)))
    sampled = [
        {"cycle_id": new_id, "answer_id": aid, "position": pos, "inclusion_prob": prob}
        for pos, (aid, prob) in enumerate(answers)
    ]
    if sampled:
        db.run(_SAMPLE, sampled)
    given = [
        {"cycle_id": new_id, "answer_id": aid, "reviewer": r} for aid, rs in assignments.items() for r in rs
    ]
    if given:
        db.run(_ASSIGN, given)
    return new_id


def mark_closed(db: Database, cycle_id: int, snapshot: dict[str, Any]) -> None:
    """Set the cycle closed now, with its frozen snapshot."""
    db.run(
        update(cycles)
        .where(_c.id == cycle_id)
        .values(status="closed", closed_at=now(), snapshot=json.dumps(snapshot, ensure_ascii=False))
    )


# ---------------------------------------------------------------- holdout


def known_answers(db: Database, answer_ids: Sequence[str]) -> set[str]:
    """Those of `answer_ids` that exist."""
    a = answers.c
    return {
        aid for batch in batches(answer_ids) for aid in db.run(select(a.id).where(a.id.in_(batch))).scalars()
    }


def ordinary_cycles_of(db: Database, answer_ids: Sequence[str]) -> list[tuple[str, str]]:
    """(answer id, names of the non-holdout cycles it was sampled for), for those of
    `answer_ids` ever in one; by answer id."""
    found: list[tuple[str, str]] = []
    for batch in batches(answer_ids):
        used = (
            select(_ca.answer_id, _c.name)
            .distinct()
            .select_from(cycle_answers.join(cycles, _c.id == _ca.cycle_id))
            .where(_c.holdout == 0, _ca.answer_id.in_(batch))
            .subquery("u")
        )
        query = select(used.c.answer_id, text_list(used.c.name, literal(","))).group_by(used.c.answer_id)
        found += [(a, names) for a, names in db.run(query)]
    return sorted(found)


def set_holdout(db: Database, answer_ids: Iterable[str], flag: bool) -> int:
    """Set the holdout flag of the answers; returns how many changed."""
    a, changed = answers.c, 0
    for batch in batches(list(answer_ids)):
        marked = update(answers).where(a.id.in_(batch), a.holdout != int(flag)).values(holdout=int(flag))
        changed += int(db.run(marked).rowcount)  # type: ignore[attr-defined]
    return changed


def holdout_answer_ids(db: Database) -> list[str]:
    """The answers marked holdout, by id."""
    return list(db.run(select(answers.c.id).where(answers.c.holdout == 1).order_by(answers.c.id)).scalars())


# ---------------------------------------------------------------- reviewers: sign-ins and reassignment


def record_sign_in(db: Database, name_key: str, name: str) -> bool:
    """Remember that the reviewer `name` (comparison key `name_key`) signed in; True if new.

    The first spelling is kept. Runs in its own write when the caller holds none."""
    if db.run(select(ONE).where(sign_ins.c.name_key == name_key)).first():
        return False
    db.run(
        upsert(db.dialect, sign_ins)
        .values(name_key=name_key, name=name, first_at=now())
        .on_conflict_do_nothing()
    )
    return True


def signed_in_names(db: Database) -> list[str]:
    """Every reviewer name that ever signed in (first spelling), oldest first."""
    g = sign_ins.c
    return list(db.run(select(g.name).order_by(g.first_at, g.name_key)).scalars())


def known_reviewer_names(db: Database) -> list[str]:
    """Every reviewer spelling the database knows: with a label, assigned in a cycle, signed in,
    or on the roster."""
    spellings = union(
        select(human_labels.c.reviewer),
        select(_s.reviewer),
        select(sign_ins.c.name),
        select(reviewers.c.name),
    ).order_by(ONE)  # the first column
    return list(db.run(spellings).scalars())


def open_assigned_answers(db: Database, cycle_id: int, reviewer: str) -> list[str]:
    """Answers of the cycle assigned to `reviewer` with a claim (judged by the cycle's run) that
    the reviewer has not labeled, skipped or marked unclear; in cycle order."""
    cl, v, h = claims.c, judge_verdicts.c, human_labels.c
    labeled = select(ONE).where(h.claim_pk == cl.id, h.reviewer == _s.reviewer, hidden(db, label=h.import_id))
    open_claim = (
        select(ONE)
        .select_from(claims.join(judge_verdicts, (v.claim_pk == cl.id) & (v.run_id == _c.judge_run_id)))
        .where(cl.answer_id == _ca.answer_id, ~exists(labeled))
    )
    query = (
        select(_ca.answer_id)
        .select_from(
            cycle_answers.join(cycles, _c.id == _ca.cycle_id).join(
                assignments, (_s.cycle_id == _ca.cycle_id) & (_s.answer_id == _ca.answer_id)
            )
        )
        .where(_ca.cycle_id == cycle_id, _s.reviewer == reviewer, exists(open_claim))
        .order_by(_ca.position)
    )
    return list(db.run(query).scalars())


def assigned_to(db: Database, cycle_id: int, reviewer: str) -> set[str]:
    """The answers of the cycle assigned to `reviewer`."""
    return set(db.run(select(_s.answer_id).where(_s.cycle_id == cycle_id, _s.reviewer == reviewer)).scalars())


_MOVE = (
    update(assignments)
    .where(
        _s.cycle_id == bindparam("cycle"),
        _s.answer_id == bindparam("answer"),
        _s.reviewer == bindparam("from"),
    )
    .values(reviewer=bindparam("to"))
)


def move_assignments(
    db: Database,
    cycle_id: int,
    answer_ids: Sequence[str],
    from_reviewer: str,
    to_reviewer: str,
    by: str | None,
) -> None:
    """Move the assignments of `answer_ids` from one reviewer to another and record it in the
    reassignment history (inside the caller's write)."""
    if answer_ids:
        db.run(
            _MOVE,
            [{"cycle": cycle_id, "answer": a, "from": from_reviewer, "to": to_reviewer} for a in answer_ids],
        )
    db.run(
        insert(reassignment_log).values(
            cycle_id=cycle_id,
            from_reviewer=from_reviewer,
            to_reviewer=to_reviewer,
            answers=json.dumps(list(answer_ids), ensure_ascii=False),
            reassigned_by=by,
            created_at=now(),
        )
    )


@dataclass(frozen=True, slots=True)
class Reassignment:
    """One entry of a cycle's reassignment history."""

    from_reviewer: str
    to_reviewer: str
    answers: tuple[str, ...]
    reassigned_by: str | None
    created_at: str


def reassignments(db: Database, cycle_id: int) -> list[Reassignment]:
    """The cycle's reassignment history, oldest first."""
    m = reassignment_log.c
    query = select(m.from_reviewer, m.to_reviewer, m.answers, m.reassigned_by, m.created_at)
    return [
        Reassignment(f, t, tuple(json.loads(a)), b, c)
        for f, t, a, b, c in db.run(query.where(m.cycle_id == cycle_id).order_by(m.id))
    ]


def claims_left(db: Database, run_id: int, table: ClaimTable | None = None) -> int:
    """The run's judged claims no reviewer has labeled, in answers a cycle may draw (holdout
    answers left out): all the labels a next cycle can add. `table`: the run's claim table when
    the caller already read it."""
    table = claim_table(db, run_id) if table is None else table
    unlabeled = table.status == UNLABELED_CODE
    held = set(holdout_answer_ids(db))
    if held:
        held_answer = np.fromiter(
            (a in held for a in table.answer_ids), dtype=bool, count=len(table.answer_ids)
        )
        unlabeled &= ~held_answer[table.answer]
    return int(unlabeled.sum())
