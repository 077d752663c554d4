"""Judge runs: lookup by name, get-or-create, counts, a run's verdicts, and the closure of its labeling."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import case, exists, func, insert, or_, select

from ..errors import NotFoundError
from ..vocab import LABELS
from .claims import human_labeled, json_ints, verdict_index
from .connection import now, read_snapshot, write
from .core import ONE, json_list, upsert
from .database import Database
from .imports import hidden
from .tables import answers, claims, human_labels, judge_verdicts, label_events, labeling_closures
from .tables import judge_runs as judge_runs_table

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
    r = judge_runs_table.c
    rows = db.run(
        select(r.id, r.judge_model, r.prompt_version, r.origin, r.created_at)
        .where(
            or_(r.origin != "lab", exists(select(ONE).where(judge_verdicts.c.run_id == r.id))),
            hidden(db, run=r.id),
        )
        .order_by(r.id)
    )
    return [JudgeRun(*row) for row in rows]


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
    def count(table: Any, *where: Any, of: Any = None) -> int:
        counted = func.count() if of is None else func.count(of)
        return int(db.run(select(counted).select_from(table).where(*where)).scalar_one())

    c, v, h = claims.c, judge_verdicts.c, human_labels.c
    labeled = human_labeled(db, c.id)
    totals = {
        "answers": count(answers, hidden(db, answer_stamp=answers.c.imported_at)),
        "claims": count(claims, hidden(db, claim=c.id)),
        "label_events": count(label_events, hidden(db, label=label_events.c.import_id)),
        "labeled_claims": count(claims, labeled, hidden(db, claim=c.id)),
        "reviewers": count(human_labels, hidden(db, label=h.import_id), of=h.reviewer.distinct()),
    }
    per_run: list[RunInfo] = []
    for run in judge_runs(db):
        counts = dict.fromkeys(LABELS, 0)
        for verdict, n in db.run(
            select(v.verdict, func.count())
            .where(v.run_id == run.id, hidden(db, claim=v.claim_pk))
            .group_by(v.verdict)
        ):
            counts[verdict] = n
        answer_count, claim_count, labeled_count = db.run(
            # EXISTS, not a join: a claim labeled by several reviewers still counts once.
            select(
                func.count(c.answer_id.distinct()),
                func.count(),
                func.coalesce(func.sum(case((labeled, 1), else_=0)), 0),
            )
            .select_from(judge_verdicts.join(claims, c.id == v.claim_pk))
            .where(v.run_id == run.id, hidden(db, claim=v.claim_pk))
        ).one()
        per_run.append(RunInfo(run, answer_count, claim_count, counts, int(labeled_count)))
    return {"totals": totals, "runs": per_run}


def run_verdicts(db: Database, run_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Claim ids a run judged, ascending (int64), and its verdicts as indices into LABELS."""
    import numpy as np

    v = judge_verdicts.c
    pk_j, verdict_j = db.run(
        select(json_list(v.claim_pk), json_list(verdict_index(v.verdict))).where(
            v.run_id == run_id, hidden(db, claim=v.claim_pk)
        )
    ).one()
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
    r = judge_runs_table.c
    found = db.run(
        select(r.id).where(r.judge_model == judge_model, r.prompt_version == prompt_version)
    ).scalar()
    if found is not None or not create:
        return None if found is None else int(found)
    new = upsert(db.dialect, judge_runs_table).values(
        judge_model=judge_model, prompt_version=prompt_version, origin=origin, created_at=created_at or now()
    )
    # Another writer may be creating the same run at this moment: the UNIQUE pair decides, the
    # insert waiting for it, and the run it made is the one returned.
    made = db.run(
        new.on_conflict_do_nothing(index_elements=[r.judge_model, r.prompt_version]).returning(r.id)
    ).scalar()
    return run_id(db, judge_model, prompt_version, create=False) if made is None else int(made)


@dataclass(frozen=True, slots=True)
class LabelingClosure:
    """Labeling of a run is closed (one way): by whom, when, and the final reading taken then
    (`calibration.closing`, which writes and reads its JSON)."""

    run_id: int
    closed_by: str
    closed_at: str
    reading: dict[str, Any]


def labeling_closure(db: Database, run_id: int) -> LabelingClosure | None:
    """The closure of the run's labeling; None while it is open."""
    c = labeling_closures.c
    row = db.run(select(c.closed_by, c.closed_at, c.reading).where(c.run_id == run_id)).one_or_none()
    return None if row is None else LabelingClosure(run_id, row[0], row[1], json.loads(row[2]))


def close_labeling(db: Database, run_id: int, closed_by: str, reading: dict[str, Any]) -> LabelingClosure:
    """Record that the run's labeling is closed now, with the final reading taken at closing. One
    row per run: a second close breaks the primary key (ConflictError), so one reading stands."""
    at = now()
    with write(db):
        db.run(
            insert(labeling_closures).values(
                run_id=run_id, closed_by=closed_by, closed_at=at, reading=json.dumps(reading, sort_keys=True)
            )
        )
    return LabelingClosure(run_id, closed_by, at, reading)
