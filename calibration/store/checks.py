"""Stored answer checks (seed 003's script and CJK flags) and a lead's reference-answer edits."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .connection import now
from .database import Database

_CHECK_COLS = (
    "answer_id",
    "question_script",
    "answer_script",
    "script_mismatch",
    "cjk_chars",
    "unexpected_cjk",
    "check_version",
    "checked_at",
)


@dataclass(frozen=True, slots=True)
class StoredCheck:
    answer_id: str
    question_script: str | None
    answer_script: str | None
    script_mismatch: bool
    cjk_chars: int
    unexpected_cjk: bool

    @property
    def flagged(self) -> bool:
        return self.script_mismatch or self.unexpected_cjk


def put_checks(
    db: Database, rows: Iterable[tuple[str, str | None, str | None, bool, int, bool]], *, version: int
) -> int:
    """Store (answer id, question script, answer script, mismatch, CJK count, unexpected CJK)
    rows, replacing an answer's earlier row; the number written. Call inside a write."""
    ts = now()
    values = [(a, q, s, int(m), n, int(u), version, ts) for a, q, s, m, n, u in rows]
    if values:
        updates = ", ".join(f"{c} = excluded.{c}" for c in _CHECK_COLS if c != "answer_id")
        db.executemany(
            f"INSERT INTO answer_checks ({', '.join(_CHECK_COLS)}) "
            f"VALUES ({', '.join('?' * len(_CHECK_COLS))}) ON CONFLICT (answer_id) DO UPDATE SET {updates}",
            values,
        )
    return len(values)


def answers_without_checks(
    db: Database, answer_ids: Sequence[str] | None = None
) -> list[tuple[str, str, str]]:
    """(answer id, question, answer) of answers with no stored check (all, or among `answer_ids`)."""
    sql = (
        "SELECT a.id, a.question, a.answer FROM answers a "
        "WHERE NOT EXISTS (SELECT 1 FROM answer_checks k WHERE k.answer_id = a.id)"
    )
    if answer_ids is None:
        return [(r[0], r[1], r[2]) for r in db.execute(sql + " ORDER BY a.id")]
    out: list[tuple[str, str, str]] = []
    ids = list(answer_ids)
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        out += [
            (r[0], r[1], r[2]) for r in db.execute(sql + f" AND a.id IN ({', '.join('?' * len(part))})", part)
        ]
    return out


def answer_check(db: Database, answer_id: str) -> StoredCheck | None:
    """The stored check of one answer; None when it has none (imported before checks existed)."""
    row = db.execute(
        "SELECT answer_id, question_script, answer_script, script_mismatch, cjk_chars, "
        "unexpected_cjk FROM answer_checks WHERE answer_id = ?",
        [answer_id],
    ).fetchone()
    if row is None:
        return None
    return StoredCheck(row[0], row[1], row[2], bool(row[3]), int(row[4]), bool(row[5]))


def flagged_answers(db: Database) -> set[str]:
    """Ids of answers with any raised flag."""
    return {
        r[0]
        for r in db.execute(
            "SELECT answer_id FROM answer_checks WHERE script_mismatch = 1 OR unexpected_cjk = 1"
        )
    }


def checked_answers(db: Database) -> set[str]:
    """Ids of answers that have a stored check (flagged or not)."""
    return {r[0] for r in db.execute("SELECT answer_id FROM answer_checks")}


# ---------------------------------------------------------------- reference answers


@dataclass(frozen=True, slots=True)
class ReferenceEdit:
    answer_id: str
    text: str
    edited_by: str
    edited_at: str


def add_reference_edit(db: Database, answer_id: str, text: str, edited_by: str) -> ReferenceEdit:
    """Append a reference-answer edit (the newest one is the answer's reference). Call inside a write."""
    ts = now()
    db.execute(
        "INSERT INTO reference_edits (answer_id, text, edited_by, edited_at) VALUES (?, ?, ?, ?)",
        [answer_id, text, edited_by, ts],
    )
    return ReferenceEdit(answer_id, text, edited_by, ts)


def reference_edits(db: Database, answer_ids: Sequence[str] | None = None) -> dict[str, ReferenceEdit]:
    """The newest reference edit per answer (all answers, or those in `answer_ids`)."""
    sql = (
        "SELECT e.answer_id, e.text, e.edited_by, e.edited_at FROM reference_edits e "
        "WHERE e.id = (SELECT max(id) FROM reference_edits x WHERE x.answer_id = e.answer_id)"
    )
    rows: list[tuple[str, str, str, str]] = []
    if answer_ids is None:
        rows = [tuple(r) for r in db.execute(sql)]
    else:
        ids = list(answer_ids)
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            rows += [
                tuple(r)
                for r in db.execute(sql + f" AND e.answer_id IN ({', '.join('?' * len(part))})", part)
            ]
    return {r[0]: ReferenceEdit(*r) for r in rows}


def reference_history(db: Database, answer_id: str) -> list[ReferenceEdit]:
    """Every reference edit of an answer, oldest first."""
    return [
        ReferenceEdit(*r)
        for r in db.execute(
            "SELECT answer_id, text, edited_by, edited_at FROM reference_edits WHERE answer_id = ? ORDER "
            "BY id",
            [answer_id],
        )
    ]


def answer_exists(db: Database, answer_id: str) -> bool:
    return db.execute("SELECT 1 FROM answers WHERE id = ?", [answer_id]).fetchone() is not None


__all__ = [
    "ReferenceEdit",
    "StoredCheck",
    "add_reference_edit",
    "answer_check",
    "answer_exists",
    "answers_without_checks",
    "checked_answers",
    "flagged_answers",
    "put_checks",
    "reference_edits",
    "reference_history",
]
