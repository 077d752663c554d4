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

from .connection import now, write
from .database import Database

_BATCH = 500  # below SQLite's bound on host parameters


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


_SPLIT_COLS = (
    "id, seed, holdout_share, stratify_run_id, created_by, created_at, unsealed_by, "
    "unsealed_at, unseal_reason"
)


def current_split(db: Database) -> SplitRecord | None:
    """The latest generation, or None when no split was ever made."""
    row = db.execute(f"SELECT {_SPLIT_COLS} FROM claim_splits ORDER BY id DESC LIMIT 1").fetchone()
    return None if row is None else SplitRecord(*row)


def create_split(
    db: Database, *, seed: int, holdout_share: float, stratify_run_id: int | None, created_by: str | None
) -> int:
    """A new generation; returns its id. The caller assigns answers to it."""
    with write(db):
        cur = db.execute(
            "INSERT INTO claim_splits (seed, holdout_share, stratify_run_id, created_by, "
            "created_at) VALUES (?, ?, ?, ?, ?) RETURNING id",
            [seed, holdout_share, stratify_run_id, created_by, now()],
        )
        return int(cur.fetchone()[0])


def unseal_split(db: Database, split_id: int, *, who: str, reason: str | None) -> bool:
    """Record that `who` unsealed the generation; False when it was unsealed already."""
    with write(db):
        cur = db.execute(
            "UPDATE claim_splits SET unsealed_by = ?, unsealed_at = ?, unseal_reason = ? "
            "WHERE id = ? AND unsealed_at IS NULL",
            [who, now(), reason, split_id],
        )
        return cur.rowcount > 0


def assign_answers(db: Database, split_id: int, rows: Iterable[tuple[str, str, str]]) -> int:
    """Store (answer id, part, stratum) rows under a generation; an answer already assigned
    keeps its part (another process may have assigned it first). Returns rows written."""
    ts = now()
    with write(db):
        cur = db.executemany(
            "INSERT INTO split_answers (answer_id, split_id, part, stratum, assigned_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (answer_id) DO NOTHING",
            [(a, split_id, part, stratum, ts) for a, part, stratum in rows],
        )
        return max(cur.rowcount, 0)


def assignments(db: Database) -> dict[str, tuple[int, str]]:
    """answer id -> (generation id, part) for every assigned answer."""
    return {a: (int(s), p) for a, s, p in db.execute("SELECT answer_id, split_id, part FROM split_answers")}


def labeled_answer_ids(db: Database) -> list[str]:
    """Answers with at least one claim carrying a human label (status 'labeled'), by id."""
    return [
        r[0]
        for r in db.execute(
            """SELECT DISTINCT c.answer_id FROM claims c
           JOIN human_labels h ON h.claim_pk = c.id AND h.status = 'labeled' ORDER BY c.answer_id"""
        )
    ]


def cycle_holdout_answer_ids(db: Database) -> set[str]:
    """Answers marked holdout for cycles (`holdout add`)."""
    return {r[0] for r in db.execute("SELECT id FROM answers WHERE holdout = 1")}


def answer_judge_verdicts(
    db: Database, run_id: int | None, answer_ids: Sequence[str]
) -> dict[str, list[str]]:
    """answer id -> the verdicts `run_id` gave its claims (empty when it judged none)."""
    out: dict[str, list[str]] = {a: [] for a in answer_ids}
    if run_id is None:
        return out
    for start in range(0, len(answer_ids), _BATCH):
        batch = list(answer_ids[start : start + _BATCH])
        marks = ",".join("?" * len(batch))
        for aid, verdict in db.execute(
            f"""SELECT c.answer_id, v.verdict FROM judge_verdicts v JOIN claims c ON c.id = v.claim_pk
                    WHERE v.run_id = ? AND c.answer_id IN ({marks})""",
            [run_id, *batch],
        ):
            out[aid].append(verdict)
    return out


def run_answer_ids(db: Database, run_id: int) -> set[str]:
    """Answers with a claim judged by the run."""
    return {
        r[0]
        for r in db.execute(
            "SELECT DISTINCT c.answer_id FROM judge_verdicts v JOIN claims c ON c.id = v.claim_pk "
            "WHERE v.run_id = ?",
            [run_id],
        )
    }


def claim_keys(db: Database, answer_ids: Iterable[str], run_id: int | None = None) -> set[str]:
    """ "ANSWER/CLAIM" keys of the answers' claims (only those `run_id` judged, if given)."""
    ids = sorted(set(answer_ids))
    out: set[str] = set()
    for start in range(0, len(ids), _BATCH):
        batch = ids[start : start + _BATCH]
        marks = ",".join("?" * len(batch))
        if run_id is None:
            sql = f"SELECT answer_id, claim_id FROM claims WHERE answer_id IN ({marks})"
            params: list[Any] = batch
        else:
            sql = (
                f"SELECT c.answer_id, c.claim_id FROM claims c JOIN judge_verdicts v ON v.claim_pk = c.id "
                f"AND v.run_id = ? WHERE c.answer_id IN ({marks})"
            )
            params = [run_id, *batch]
        out.update(f"{a}/{c}" for a, c in db.execute(sql, params))
    return out


def claim_texts(db: Database, answer_ids: Iterable[str]) -> dict[int, str]:
    """claim pk -> claim text for the answers' claims."""
    ids = sorted(set(answer_ids))
    out: dict[int, str] = {}
    for start in range(0, len(ids), _BATCH):
        batch = ids[start : start + _BATCH]
        marks = ",".join("?" * len(batch))
        out.update(
            (int(pk), t)
            for pk, t in db.execute(f"SELECT id, text FROM claims WHERE answer_id IN ({marks})", batch)
        )
    return out


def state_marker(db: Database) -> tuple[Any, ...]:
    """Changes whenever the split or its seal changes: part of a page cache's key."""
    gen = db.execute("SELECT max(id), count(unsealed_at) FROM claim_splits").fetchone()
    n = db.execute("SELECT count(*) FROM split_answers").fetchone()[0]
    return (gen[0], gen[1], n)


# ---------------------------------------------------------------- export / restore
