"""Judge runs: lookup by name, get-or-create, counts, and a run's verdicts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import NotFoundError
from ..vocab import LABELS
from .claims import human_labeled_sql, json_ints, verdict_code
from .connection import read_snapshot
from .database import Database
from .imports import hide_sql

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True, slots=True)
class JudgeRun:
    id: int
    judge_model: str
    prompt_version: str
    origin: str
    created_at: str

    @property
    def name(self) -> str:
        return f"{self.judge_model}@{self.prompt_version}"


def judge_runs(db: Database) -> list[JudgeRun]:
    """The judge runs, oldest first. A judge-lab run (origin 'lab') without a single verdict
    yet (every call failed so far) is left out: it has nothing to show or compare."""
    # A run an unfinished import created is not there yet (store.imports).
    rows = db.execute(
        "SELECT id, judge_model, prompt_version, origin, created_at FROM judge_runs r "
        "WHERE (r.origin != 'lab' OR EXISTS (SELECT 1 FROM judge_verdicts v WHERE v.run_id = r.id))"
        f"{hide_sql(db, run='r.id')} ORDER BY id"
    ).fetchall()
    return [JudgeRun(*r) for r in rows]


def find_judge_run(db: Database, name: str | None = None) -> JudgeRun:
    """Resolve `MODEL@VERSION`, or `VERSION` when unique; None means the most recently imported run."""
    runs = judge_runs(db)
    if not runs:
        raise NotFoundError("no judge runs yet: import judged answers first")
    if name is None:
        imported = [r for r in runs if r.origin == "import"]
        return (imported or runs)[-1]
    if "@" in name:
        model, _, version = name.rpartition("@")
        hits = [r for r in runs if r.judge_model == model and r.prompt_version == version]
    else:
        hits = [r for r in runs if r.prompt_version == name]
        if not hits:
            hits = [r for r in runs if r.judge_model == name]
    if len(hits) == 1:
        return hits[0]
    known = ", ".join(r.name for r in runs)
    if not hits:
        raise NotFoundError(f"unknown judge run {name!r}; known runs: {known}")
    raise NotFoundError(f"judge run {name!r} is ambiguous; use MODEL@VERSION: {known}")


@dataclass(frozen=True, slots=True)
class RunInfo:
    run: JudgeRun
    answers: int
    claims: int
    verdicts: dict[str, int]
    labeled_claims: int


def info(db: Database) -> dict[str, Any]:
    """Counts for the overview: totals and, per judge run, answers, claims, verdicts, labels."""
    with read_snapshot(db):
        return _info(db)


def _info(db: Database) -> dict[str, Any]:
    hide_answers = hide_sql(db, answer_stamp="imported_at")
    hide_claims = hide_sql(db, claim="id")
    hide_verdicts = hide_sql(db, claim="claim_pk")
    hide_labels = hide_sql(db, label="import_id")
    totals = {
        "answers": db.execute(f"SELECT count(*) FROM answers WHERE 1{hide_answers}").fetchone()[0],
        "claims": db.execute(f"SELECT count(*) FROM claims WHERE 1{hide_claims}").fetchone()[0],
        "label_events": db.execute(f"SELECT count(*) FROM label_events WHERE 1{hide_labels}").fetchone()[0],
        "labeled_claims": db.execute(
            f"SELECT count(*) FROM claims c WHERE {human_labeled_sql(db, 'c.id')}{hide_claims}"
        ).fetchone()[0],
        "reviewers": db.execute(
            f"SELECT count(DISTINCT reviewer) FROM human_labels WHERE 1{hide_labels}"
        ).fetchone()[0],
    }
    per_run: list[RunInfo] = []
    for run in judge_runs(db):
        counts = dict.fromkeys(LABELS, 0)
        for verdict, n in db.execute(
            f"SELECT verdict, count(*) FROM judge_verdicts WHERE run_id = ?{hide_verdicts} GROUP BY verdict",
            [run.id],
        ):
            counts[verdict] = n
        answers, claims, labeled = db.execute(
            # EXISTS, not a join: a claim labeled by several reviewers still counts once.
            f"""SELECT count(DISTINCT c.answer_id), count(*),
                      coalesce(sum(CASE WHEN {human_labeled_sql(db, "c.id")} THEN 1 ELSE 0 END), 0)
               FROM judge_verdicts v JOIN claims c ON c.id = v.claim_pk
               WHERE v.run_id = ?{hide_sql(db, claim="v.claim_pk")}""",
            [run.id],
        ).fetchone()
        per_run.append(RunInfo(run, answers, claims, counts, labeled))
    return {"totals": totals, "runs": per_run}


def run_verdicts(db: Database, run_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Claim ids a run judged, ascending (int64), and its verdicts as indices into LABELS."""
    import numpy as np

    pk_j, verdict_j = db.execute(
        f"SELECT json_group_array(claim_pk), json_group_array({verdict_code('verdict')}) "
        f"FROM judge_verdicts WHERE run_id = ?{hide_sql(db, claim='claim_pk')}",
        [run_id],
    ).fetchone()
    pk = np.array(json.loads(pk_j), dtype=np.int64)
    order = np.argsort(pk, kind="stable")
    return pk[order], json_ints(verdict_j)[order]


def run_id(
    db: Database,
    judge_model: str,
    prompt_version: str,
    *,
    origin: str = "import",
    created_at: str | None = None,
    create: bool = True,
) -> int | None:
    """The id of judge run MODEL@VERSION, created (with `origin`) when missing and `create`.

    A get-or-create on the UNIQUE pair; call it inside the caller's write transaction.
    """
    from .connection import now

    row = db.execute(
        "SELECT id FROM judge_runs WHERE judge_model = ? AND prompt_version = ?",
        [judge_model, prompt_version],
    ).fetchone()
    if row is not None or not create:
        return None if row is None else int(row[0])
    cur = db.execute(
        "INSERT INTO judge_runs (judge_model, prompt_version, origin, created_at) "
        "VALUES (?, ?, ?, ?) RETURNING id",
        [judge_model, prompt_version, origin, created_at or now()],
    )
    return int(cur.fetchone()[0])
