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
from sqlalchemy import literal_column

from ..errors import NotFoundError
from ..final_label import UNLABELED_CODE
from .claims import ClaimTable, claim_table
from .connection import now
from .core import as_text
from .database import Database
from .imports import hide_sql
from .labels import settled_in
from .settings import set_setting

# Where the failures-first share of a cycle is recorded (the cycles table has no column for
# it): one settings key per cycle id.
SHARE_KEY = "cycle.{}.failing_share"


def cycle_id(db: Database, name: str) -> int:
    """The id of the cycle called `name`; NotFoundError (one wording everywhere) when there is none."""
    row = db.execute("SELECT id FROM cycles WHERE name = ?", [name]).fetchone()
    if row is None:
        known = [r[0] for r in db.execute("SELECT name FROM cycles ORDER BY id")]
        hint = f"; known cycles: {', '.join(known)}" if known else "; no cycles yet"
        raise NotFoundError(f"no cycle named {name!r}{hint}")
    return int(row[0])


def name_taken(db: Database, name: str) -> bool:
    """Whether a cycle is already called `name`."""
    return db.execute("SELECT 1 FROM cycles WHERE name = ?", [name]).fetchone() is not None


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


_CYCLE_COLS = """c.id, c.name, r.judge_model || '@' || r.prompt_version, c.judge_run_id,
    c.strategy, c.seed, c.size, c.overlap, c.holdout, c.include_labeled, c.status,
    c.created_by, c.created_at, c.closed_at, c.snapshot, c.require_evidence"""

_OPEN_FOR = """WHERE c.status = 'open' AND (
    NOT EXISTS (SELECT 1 FROM assignments s WHERE s.cycle_id = c.id)
    OR EXISTS (SELECT 1 FROM assignments s WHERE s.cycle_id = c.id AND s.reviewer = ?))"""


def cycle_records(
    db: Database, *, cycle_id: int | None = None, open_for: str | None = None
) -> list[CycleRecord]:
    """Cycles, oldest first: every one; the one with `cycle_id`; or the open cycles reviewer
    `open_for` may label (open to all, or assigning them answers)."""
    params: list[object]
    if cycle_id is not None:
        where, params = "WHERE c.id = ?", [cycle_id]
    elif open_for is not None:
        where, params = _OPEN_FOR, [open_for]
    else:
        where, params = "", []
    rows = db.execute(
        f"SELECT {_CYCLE_COLS} FROM cycles c JOIN judge_runs r ON r.id = c.judge_run_id "
        f"{where} ORDER BY c.id",
        params,
    ).fetchall()
    if not rows:
        return []
    ids = [r[0] for r in rows]
    marks = ",".join("?" for _ in ids)
    answers: dict[int, list[str]] = {i: [] for i in ids}
    for cid, aid in db.execute(
        f"SELECT cycle_id, answer_id FROM cycle_answers WHERE cycle_id IN ({marks}) "
        "ORDER BY cycle_id, position",
        ids,
    ):
        answers[cid].append(aid)
    reviewers: dict[int, list[str]] = {i: [] for i in ids}
    for cid, rev in db.execute(
        f"SELECT DISTINCT cycle_id, reviewer FROM assignments WHERE cycle_id IN ({marks}) "
        "ORDER BY cycle_id, reviewer",
        ids,
    ):
        reviewers[cid].append(rev)
    shares = dict(
        db.execute(
            f"SELECT key, value FROM settings WHERE key IN ({marks})", [SHARE_KEY.format(i) for i in ids]
        ).fetchall()
    )
    plans = {
        cid: json.loads(p)
        for cid, p in db.execute(f"SELECT cycle_id, plan FROM cycle_plans WHERE cycle_id IN ({marks})", ids)
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
            reviewers=tuple(reviewers[r[0]]),
            require_evidence=bool(r[15]),
            failing_share=shares.get(SHARE_KEY.format(r[0])),
            plan=plans.get(r[0]),
        )
        for r in rows
    ]


def run_ids_with_verdicts(db: Database) -> set[int]:
    """The judge runs that gave at least one verdict."""
    return {r[0] for r in db.execute("SELECT DISTINCT run_id FROM judge_verdicts")}


def answer_facts(db: Database, answer_ids: Sequence[str]) -> dict[str, tuple[str | None, bool]]:
    """Category and holdout flag of the given answers."""
    rows = db.execute(
        "SELECT id, category, holdout FROM answers WHERE id IN (SELECT value FROM json_each(?))",
        [json.dumps(list(answer_ids))],
    ).fetchall()
    return {aid: (category, bool(holdout)) for aid, category, holdout in rows}


def assignment_pairs(db: Database, cycle_id: int) -> list[tuple[str, str]]:
    """(answer id, reviewer) of every assignment of the cycle, by reviewer."""
    return [
        (a, r)
        for a, r in db.execute(
            "SELECT answer_id, reviewer FROM assignments WHERE cycle_id = ? ORDER BY reviewer, answer_id",
            [cycle_id],
        )
    ]


def cycle_answer_rows(db: Database, cycle_id: int, run_id: int) -> list[tuple[int, str, float, int]]:
    """(position, answer id, inclusion probability, claims the run judged) per answer, in order."""
    return [
        tuple(r)
        for r in db.execute(
            """SELECT ca.position, ca.answer_id, ca.inclusion_prob,
                  (SELECT count(*) FROM claims c JOIN judge_verdicts v
                     ON v.claim_pk = c.id AND v.run_id = ?
                   WHERE c.answer_id = ca.answer_id)
           FROM cycle_answers ca WHERE ca.cycle_id = ? ORDER BY ca.position""",
            [run_id, cycle_id],
        ).fetchall()
    ]


def inclusion_probs(db: Database, cycle_id: int) -> dict[str, float]:
    """Each answer of the cycle: its inclusion probability, as stored."""
    return dict(
        db.execute(
            "SELECT answer_id, inclusion_prob FROM cycle_answers WHERE cycle_id = ?", [cycle_id]
        ).fetchall()
    )


def queue_answers(db: Database, cycle_id: int, reviewer: str) -> list[str]:
    """The answers of the cycle in cycle order: every one when nobody is assigned (an open
    cycle), else those assigned to `reviewer`."""
    assigned = db.execute("SELECT 1 FROM assignments WHERE cycle_id = ? LIMIT 1", [cycle_id]).fetchone()
    if assigned is None:
        sql = "SELECT answer_id FROM cycle_answers WHERE cycle_id = ? ORDER BY position"
        params: list[object] = [cycle_id]
    else:
        sql = """SELECT ca.answer_id FROM cycle_answers ca
                 JOIN assignments s ON s.cycle_id = ca.cycle_id AND s.answer_id = ca.answer_id
                 WHERE ca.cycle_id = ? AND s.reviewer = ? ORDER BY ca.position"""
        params = [cycle_id, reviewer]
    return [r[0] for r in db.execute(sql, params)]


# ---------------------------------------------------------------- progress reads

# The store half of the one progress rule (`calibration.cycles.claim_done`): `labels.settled_in`
# as SQL text, `{h}` naming the `human_labels` row.
SETTLED_IN = as_text(settled_in(literal_column("{h}.claim_pk"), literal_column("{h}.reviewer")))

# Every claim of the cycle's answers: the work a reviewer does (a commit needs each of them
# settled, judged by the cycle's run or not).
_CYCLE_CLAIMS = """
    SELECT ca.answer_id, cl.id AS claim_pk, ca.position AS answer_position, cl.position AS claim_position
    FROM cycle_answers ca JOIN claims cl ON cl.answer_id = ca.answer_id
    WHERE ca.cycle_id = :cycle"""


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
    claims = [
        (a, pk)
        for a, pk, _, _ in db.execute(f"{_CYCLE_CLAIMS} ORDER BY ca.position, cl.position, cl.id", params)
    ]
    labels = [
        (pk, reviewer, status, bool(here))
        for pk, reviewer, status, here in db.execute(
            f"""WITH cc AS ({_CYCLE_CLAIMS})
            SELECT h.claim_pk, h.reviewer, h.status, {SETTLED_IN.format(h="h")} IS :cycle
            FROM human_labels h JOIN cc ON cc.claim_pk = h.claim_pk
            WHERE 1{hide_sql(db, label="h.import_id")}""",
            params,
        )
    ]
    adjudicated = {
        r[0]
        for r in db.execute(
            f"WITH cc AS ({_CYCLE_CLAIMS}) SELECT d.claim_pk FROM adjudications d "
            "JOIN cc ON cc.claim_pk = d.claim_pk",
            params,
        )
    }
    participants = [
        r[0]
        for r in db.execute(
            """SELECT reviewer FROM label_events WHERE cycle_id = :cycle
           UNION SELECT reviewer FROM answer_reveals WHERE cycle_id = :cycle ORDER BY 1""",
            params,
        )
    ]
    committed = {
        (a, r)
        for a, r in db.execute(
            f"""SELECT r.answer_id, r.reviewer FROM cycle_answers ca
           JOIN answer_reveals r ON r.answer_id = ca.answer_id
           WHERE ca.cycle_id = :cycle{hide_sql(db, label="r.import_id")}""",
            params,
        )
    }
    return CycleWork(claims, labels, adjudicated, participants, committed)


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
    # A number only: a confidence given as text or anything else counts as none.
    confidence = (
        "CASE WHEN json_type(a.metadata, '$.judge_confidence') IN ('real', 'integer') "
        "THEN json_extract(a.metadata, '$.judge_confidence') END"
        if db.dialect == "sqlite"
        else "CASE WHEN json_typeof(CAST(a.metadata AS json) -> 'judge_confidence') = 'number' "
        "THEN CAST(CAST(a.metadata AS json) ->> 'judge_confidence' AS double precision) END"
    )
    rows = db.execute(
        f"""SELECT a.id, a.category, json_group_array(v.verdict), length(a.answer),
                  coalesce(k.script_mismatch, 0) + coalesce(k.unexpected_cjk, 0) > 0,
                  {confidence}
           FROM (SELECT c.answer_id, v.verdict FROM judge_verdicts v JOIN claims c ON c.id = v.claim_pk
                 WHERE v.run_id = ? ORDER BY c.answer_id, c.position) v
           JOIN answers a ON a.id = v.answer_id
           LEFT JOIN answer_checks k ON k.answer_id = a.id
           GROUP BY a.id, k.script_mismatch, k.unexpected_cjk ORDER BY a.id""",
        [run_id],
    ).fetchall()
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
    db.execute(
        "INSERT INTO cycle_plans (cycle_id, goal, plan) VALUES (?, ?, ?)",
        [cycle_id, goal, json.dumps(plan, ensure_ascii=False)],
    )


def run_plan_strata(db: Database, run_id: int) -> list[dict[str, str]]:
    """Per planned cycle of the run, oldest first: its pool answers' strata (answer id -> stratum)."""
    return [
        dict(json.loads(s))
        for (s,) in db.execute(
            """SELECT json_extract(p.plan, '$.answer_strata') FROM cycle_plans p
           JOIN cycles c ON c.id = p.cycle_id WHERE c.judge_run_id = ? ORDER BY c.id""",
            [run_id],
        )
    ]


# ---------------------------------------------------------------- writes (inside store.write)


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
    cur = db.execute(
        """INSERT INTO cycles (name, judge_run_id, strategy, seed, size, overlap, holdout,
               include_labeled, created_by, created_at, status, require_evidence)
           VALUES (?,?,?,?,?,?,?,?,?,?, 'open', ?) RETURNING id""",
        [
            name,
            run_id,
            strategy,
            seed,
            size,
            overlap,
            int(holdout),
            int(include_labeled),
            created_by,
            now(),
            int(require_evidence),
        ],
    )
    new_id = int(cur.fetchone()[0])
    if failing_share is not None:
        set_setting(db, SHARE_KEY.format(new_id), repr(float(failing_share)))
    db.executemany(
        "INSERT INTO cycle_answers (cycle_id, answer_id, position, inclusion_prob) VALUES (?,?,?,?)",
        [(new_id, aid, pos, prob) for pos, (aid, prob) in enumerate(answers)],
    )
    db.executemany(
        "INSERT INTO assignments (cycle_id, answer_id, reviewer) VALUES (?,?,?)",
        [(new_id, aid, r) for aid, rs in assignments.items() for r in rs],
    )
    return int(new_id)


def mark_closed(db: Database, cycle_id: int, snapshot: dict[str, Any]) -> None:
    """Set the cycle closed now, with its frozen snapshot."""
    db.execute(
        "UPDATE cycles SET status = 'closed', closed_at = ?, snapshot = ? WHERE id = ?",
        [now(), json.dumps(snapshot, ensure_ascii=False), cycle_id],
    )


# ---------------------------------------------------------------- holdout


def known_answers(db: Database, answer_ids: Sequence[str]) -> set[str]:
    """Those of `answer_ids` that exist."""
    return {
        r[0]
        for r in db.execute(
            "SELECT id FROM answers WHERE id IN (SELECT value FROM json_each(?))",
            [json.dumps(list(answer_ids))],
        )
    }


def ordinary_cycles_of(db: Database, answer_ids: Sequence[str]) -> list[tuple[str, str]]:
    """(answer id, names of the non-holdout cycles it was sampled for), for those of
    `answer_ids` ever in one; by answer id."""
    return [
        (a, names)
        for a, names in db.execute(
            """SELECT ca.answer_id, group_concat(DISTINCT c.name) FROM cycle_answers ca
           JOIN cycles c ON c.id = ca.cycle_id
           WHERE c.holdout = 0 AND ca.answer_id IN (SELECT value FROM json_each(?))
           GROUP BY ca.answer_id ORDER BY ca.answer_id""",
            [json.dumps(list(answer_ids))],
        )
    ]


def set_holdout(db: Database, answer_ids: Iterable[str], flag: bool) -> int:
    """Set the holdout flag of the answers; returns how many changed."""
    cur = db.execute(
        "UPDATE answers SET holdout = ? WHERE id IN (SELECT value FROM json_each(?)) AND holdout != ?",
        [int(flag), json.dumps(list(answer_ids)), int(flag)],
    )
    return cur.rowcount


def holdout_answer_ids(db: Database) -> list[str]:
    """The answers marked holdout, by id."""
    return [r[0] for r in db.execute("SELECT id FROM answers WHERE holdout = 1 ORDER BY id")]


# ---------------------------------------------------------------- reviewers: sign-ins and reassignment


def record_sign_in(db: Database, name_key: str, name: str) -> bool:
    """Remember that the reviewer `name` (comparison key `name_key`) signed in; True if new.

    The first spelling is kept. Runs in its own write when the caller holds none."""
    if db.execute("SELECT 1 FROM sign_ins WHERE name_key = ?", [name_key]).fetchone():
        return False
    db.execute(
        "INSERT INTO sign_ins (name_key, name, first_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        [name_key, name, now()],
    )
    return True


def signed_in_names(db: Database) -> list[str]:
    """Every reviewer name that ever signed in (first spelling), oldest first."""
    return [r[0] for r in db.execute("SELECT name FROM sign_ins ORDER BY first_at, name_key")]


def known_reviewer_names(db: Database) -> list[str]:
    """Every reviewer spelling the database knows: with a label, assigned in a cycle, signed in,
    or on the roster."""
    return [
        r[0]
        for r in db.execute(
            """SELECT reviewer FROM human_labels UNION SELECT reviewer FROM assignments
           UNION SELECT name FROM sign_ins UNION SELECT name FROM reviewers ORDER BY 1"""
        )
    ]


def open_assigned_answers(db: Database, cycle_id: int, reviewer: str) -> list[str]:
    """Answers of the cycle assigned to `reviewer` with a claim (judged by the cycle's run) that
    the reviewer has not labeled, skipped or marked unclear; in cycle order."""
    return [
        r[0]
        for r in db.execute(
            f"""SELECT ca.answer_id FROM cycle_answers ca
           JOIN cycles cy ON cy.id = ca.cycle_id
           JOIN assignments s ON s.cycle_id = ca.cycle_id AND s.answer_id = ca.answer_id
           WHERE ca.cycle_id = ? AND s.reviewer = ? AND EXISTS (
               SELECT 1 FROM claims cl JOIN judge_verdicts v
                   ON v.claim_pk = cl.id AND v.run_id = cy.judge_run_id
               WHERE cl.answer_id = ca.answer_id AND NOT EXISTS (
                   SELECT 1 FROM human_labels h WHERE h.claim_pk = cl.id AND h.reviewer = s.reviewer
                   {hide_sql(db, label="h.import_id")}))
           ORDER BY ca.position""",
            [cycle_id, reviewer],
        )
    ]


def assigned_to(db: Database, cycle_id: int, reviewer: str) -> set[str]:
    """The answers of the cycle assigned to `reviewer`."""
    return {
        r[0]
        for r in db.execute(
            "SELECT answer_id FROM assignments WHERE cycle_id = ? AND reviewer = ?", [cycle_id, reviewer]
        )
    }


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
    db.executemany(
        "UPDATE assignments SET reviewer = ? WHERE cycle_id = ? AND answer_id = ? AND reviewer = ?",
        [(to_reviewer, cycle_id, a, from_reviewer) for a in answer_ids],
    )
    db.execute(
        """INSERT INTO reassignments (cycle_id, from_reviewer, to_reviewer, answers, reassigned_by,
                      created_at) VALUES (?,?,?,?,?,?)""",
        [cycle_id, from_reviewer, to_reviewer, json.dumps(list(answer_ids), ensure_ascii=False), by, now()],
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
    return [
        Reassignment(f, t, tuple(json.loads(a)), b, c)
        for f, t, a, b, c in db.execute(
            """SELECT from_reviewer, to_reviewer, answers, reassigned_by, created_at FROM reassignments
           WHERE cycle_id = ? ORDER BY id""",
            [cycle_id],
        )
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
