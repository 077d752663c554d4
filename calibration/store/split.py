"""Storage of the tuning / holdout split: its generations, each answer's part, and the seal.

A generation (`claim_splits` row) is made once, with its seed and holdout share; answers are
assigned to it as they get human labels (`split_answers`, one row per answer, never moved).
The latest generation is the current one. Unsealing writes who and when on that generation,
and is never undone. The rules (which answers, stratified how) live in `calibration.split`;
this module only reads and writes rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, func, insert, select, update

from .connection import now, write
from .core import ONE, batches, upsert
from .database import Database
from .tables import answers, claim_splits, claims, human_labels, judge_verdicts, split_answers

_JUDGED = judge_verdicts.join(claims, claims.c.id == judge_verdicts.c.claim_pk)


@dataclass(frozen=True, slots=True)
class SplitRecord:
    """One holdout generation as stored."""

    id: int
    seed: int
    holdout_share: float
    stratify_run_id: int | None
    created_by: str | None
    created_at: str
    unsealed_by: str | None
    unsealed_at: str | None
    unseal_reason: str | None

    @property
    def sealed(self) -> bool:
        return self.unsealed_at is None


_s = claim_splits.c


def current_split(db: Database) -> SplitRecord | None:
    """The latest generation, or None when no split was ever made."""
    row = db.run(select(claim_splits).order_by(_s.id.desc()).limit(ONE)).first()
    return None if row is None else SplitRecord(*row)


def create_split(
    db: Database,
    *,
    after: int | None,
    seed: int,
    holdout_share: float,
    stratify_run_id: int | None,
    created_by: str | None,
) -> int:
    """A new generation after `after`, the one the caller read as current (None: none); returns
    the current generation's id. Nothing is made when another process made one since (two
    servers making the first split at once make one). The caller assigns answers to it."""
    with write(db):
        db.lock_tables(claim_splits)  # the current generation stays the one read below
        latest = current_split(db)
        if latest is not None and latest.id != after:
            return latest.id
        new = insert(claim_splits).values(
            seed=seed,
            holdout_share=holdout_share,
            stratify_run_id=stratify_run_id,
            created_by=created_by,
            created_at=now(),
        )
        return int(db.run(new.returning(_s.id)).scalar_one())


def unseal_split(db: Database, split_id: int, *, who: str, reason: str | None) -> bool:
    """Record that `who` unsealed the generation; False when it was unsealed already."""
    with write(db):
        unsealed = (
            update(claim_splits)
            .where(_s.id == split_id, _s.unsealed_at.is_(None))
            .values(unsealed_by=who, unsealed_at=now(), unseal_reason=reason)
        )
        return int(db.run(unsealed).rowcount) > 0  # type: ignore[attr-defined]


def assign_answers(db: Database, split_id: int, rows: Iterable[tuple[str, str, str]]) -> int:
    """Store (answer id, part, stratum) rows under a generation; an answer already assigned
    keeps its part (another process may have assigned it first). Returns rows written."""
    ts = now()
    values = [
        {"answer_id": a, "split_id": split_id, "part": part, "stratum": stratum, "assigned_at": ts}
        for a, part, stratum in rows
    ]
    if not values:
        return 0
    # The rows written come back by RETURNING: psycopg counts none for a many-row INSERT (-1).
    new = (
        upsert(db.dialect, split_answers)
        .on_conflict_do_nothing(index_elements=[split_answers.c.answer_id])
        .returning(split_answers.c.answer_id)
    )
    with write(db):
        return len(db.run(new, values).all())


def assignments(db: Database) -> dict[str, tuple[int, str]]:
    """answer id -> (generation id, part) for every assigned answer."""
    a = split_answers.c
    return {answer: (int(s), p) for answer, s, p in db.run(select(a.answer_id, a.split_id, a.part))}


def labeled_answer_ids(db: Database) -> list[str]:
    """Answers with at least one claim carrying a human label (status 'labeled'), by id."""
    c, h = claims.c, human_labels.c
    labeled = claims.join(human_labels, and_(h.claim_pk == c.id, h.status == "labeled"))
    return list(db.run(select(c.answer_id).distinct().select_from(labeled).order_by(c.answer_id)).scalars())


def cycle_holdout_answer_ids(db: Database) -> set[str]:
    """Answers marked holdout for cycles (`holdout add`)."""
    return set(db.run(select(answers.c.id).where(answers.c.holdout == 1)).scalars())


def answer_judge_verdicts(
    db: Database, run_id: int | None, answer_ids: Sequence[str]
) -> dict[str, list[str]]:
    """answer id -> the verdicts `run_id` gave its claims (empty when it judged none)."""
    out: dict[str, list[str]] = {a: [] for a in answer_ids}
    if run_id is None:
        return out
    for batch in batches(answer_ids):
        for aid, verdict in db.run(
            select(claims.c.answer_id, judge_verdicts.c.verdict)
            .select_from(_JUDGED)
            .where(judge_verdicts.c.run_id == run_id, claims.c.answer_id.in_(batch))
        ):
            out[aid].append(verdict)
    return out


def run_answer_ids(db: Database, run_id: int) -> set[str]:
    """Answers with a claim judged by the run."""
    judged = (
        select(claims.c.answer_id).distinct().select_from(_JUDGED).where(judge_verdicts.c.run_id == run_id)
    )
    return set(db.run(judged).scalars())


def claim_keys(db: Database, answer_ids: Iterable[str], run_id: int | None = None) -> set[str]:
    """ "ANSWER/CLAIM" keys of the answers' claims (only those `run_id` judged, if given)."""
    ids = sorted(set(answer_ids))
    out: set[str] = set()
    for batch in batches(ids):
        query = select(claims.c.answer_id, claims.c.claim_id).where(claims.c.answer_id.in_(batch))
        if run_id is not None:
            query = query.select_from(_JUDGED).where(judge_verdicts.c.run_id == run_id)
        out.update(f"{a}/{c}" for a, c in db.run(query))
    return out


def claim_texts(db: Database, answer_ids: Iterable[str]) -> dict[int, str]:
    """claim pk -> claim text for the answers' claims."""
    ids = sorted(set(answer_ids))
    out: dict[int, str] = {}
    for batch in batches(ids):
        found = db.run(select(claims.c.id, claims.c.text).where(claims.c.answer_id.in_(batch)))
        out.update((int(pk), t) for pk, t in found)
    return out


def state_marker(db: Database) -> tuple[Any, ...]:
    """Changes whenever the split or its seal changes: part of a page cache's key."""
    gen = db.run(select(func.max(_s.id), func.count(_s.unsealed_at))).one()
    n = db.run(select(func.count()).select_from(split_answers)).scalar_one()
    return (gen[0], gen[1], n)


# ---------------------------------------------------------------- export / restore
