"""Stored answer checks (seed 003's script and CJK flags) and a lead's reference-answer edits."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import func, insert, or_, select

from .connection import now
from .core import ONE, upsert
from .database import Database
from .tables import answer_checks, answers
from .tables import reference_edits as reference_edits_table

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
    values = [
        dict(zip(_CHECK_COLS, (a, q, s, int(m), n, int(u), version, ts), strict=True))
        for a, q, s, m, n, u in rows
    ]
    if values:
        new = upsert(db.dialect, answer_checks)
        db.run(
            new.on_conflict_do_update(
                index_elements=[answer_checks.c.answer_id],
                set_={c: new.excluded[c] for c in _CHECK_COLS if c != "answer_id"},
            ),
            values,
        )
    return len(values)


def answers_without_checks(
    db: Database, answer_ids: Sequence[str] | None = None
) -> list[tuple[str, str, str]]:
    """(answer id, question, answer) of answers with no stored check (all, or among `answer_ids`)."""
    a = answers.c
    unchecked = select(a.id, a.question, a.answer).where(
        ~select(ONE).where(answer_checks.c.answer_id == a.id).exists()
    )
    if answer_ids is None:
        return [(r[0], r[1], r[2]) for r in db.run(unchecked.order_by(a.id))]
    out: list[tuple[str, str, str]] = []
    ids = list(answer_ids)
    for i in range(0, len(ids), 500):
        out += [(r[0], r[1], r[2]) for r in db.run(unchecked.where(a.id.in_(ids[i : i + 500])))]
    return out


def answer_check(db: Database, answer_id: str) -> StoredCheck | None:
    """The stored check of one answer; None when it has none (imported before checks existed)."""
    k = answer_checks.c
    row = db.run(
        select(
            k.answer_id, k.question_script, k.answer_script, k.script_mismatch, k.cjk_chars, k.unexpected_cjk
        ).where(k.answer_id == answer_id)
    ).first()
    if row is None:
        return None
    return StoredCheck(row[0], row[1], row[2], bool(row[3]), int(row[4]), bool(row[5]))


def flagged_answers(db: Database) -> set[str]:
    """Ids of answers with any raised flag."""
    k = answer_checks.c
    return set(
        db.run(select(k.answer_id).where(or_(k.script_mismatch == 1, k.unexpected_cjk == 1))).scalars()
    )


def checked_answers(db: Database) -> set[str]:
    """Ids of answers that have a stored check (flagged or not)."""
    return set(db.run(select(answer_checks.c.answer_id)).scalars())


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
    db.run(
        insert(reference_edits_table).values(
            answer_id=answer_id, text=text, edited_by=edited_by, edited_at=ts
        )
    )
    return ReferenceEdit(answer_id, text, edited_by, ts)


def reference_edits(db: Database, answer_ids: Sequence[str] | None = None) -> dict[str, ReferenceEdit]:
    """The newest reference edit per answer (all answers, or those in `answer_ids`)."""
    e, x = reference_edits_table.c, reference_edits_table.alias("x").c
    newest = select(e.answer_id, e.text, e.edited_by, e.edited_at).where(
        e.id == select(func.max(x.id)).where(x.answer_id == e.answer_id).scalar_subquery()
    )
    found: list[ReferenceEdit] = []
    if answer_ids is None:
        found = [ReferenceEdit(*r) for r in db.run(newest)]
    else:
        ids = list(answer_ids)
        for i in range(0, len(ids), 500):
            found += [ReferenceEdit(*r) for r in db.run(newest.where(e.answer_id.in_(ids[i : i + 500])))]
    return {r.answer_id: r for r in found}


def reference_history(db: Database, answer_id: str) -> list[ReferenceEdit]:
    """Every reference edit of an answer, oldest first."""
    e = reference_edits_table.c
    return [
        ReferenceEdit(*r)
        for r in db.run(
            select(e.answer_id, e.text, e.edited_by, e.edited_at)
            .where(e.answer_id == answer_id)
            .order_by(e.id)
        )
    ]


def answer_exists(db: Database, answer_id: str) -> bool:
    return db.run(select(ONE).where(answers.c.id == answer_id)).first() is not None


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
