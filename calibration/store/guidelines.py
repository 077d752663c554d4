"""The lead's labeling guidelines (markdown written by a lead, per project or per cycle), and
the judge prompt a cycle's run was made with, whose verdict definitions the review page shows."""

from __future__ import annotations

from dataclasses import dataclass

from .connection import now, write
from .database import Database

PROJECT_SCOPE = "project"


def cycle_scope(cycle_id: int) -> str:
    """The scope name of one cycle's guidelines."""
    return f"cycle:{int(cycle_id)}"


@dataclass(frozen=True, slots=True)
class Guidelines:
    scope: str
    markdown: str
    author: str
    updated_at: str


def get_guidelines(db: Database, scope: str) -> Guidelines | None:
    """The guidelines of a scope (`PROJECT_SCOPE` or `cycle_scope(id)`); None if none written."""
    row = db.execute(
        "SELECT scope, markdown, author, updated_at FROM guidelines WHERE scope = ?", [scope]
    ).fetchone()
    return None if row is None else Guidelines(*row)


def save_guidelines(db: Database, scope: str, markdown: str, author: str) -> Guidelines:
    """Write (or replace) the guidelines of a scope; an empty text removes them."""
    ts = now()
    with write(db):
        if not markdown.strip():
            db.execute("DELETE FROM guidelines WHERE scope = ?", [scope])
        else:
            db.execute(
                "INSERT INTO guidelines (scope, markdown, author, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (scope) DO UPDATE SET markdown = excluded.markdown, "
                "author = excluded.author, updated_at = excluded.updated_at",
                [scope, markdown, author, ts],
            )
    return Guidelines(scope, markdown, author, ts)


def run_template(db: Database, run_id: int) -> str | None:
    """The prompt template a judge-lab run used; None for an imported run."""
    row = db.execute("SELECT template FROM judge_lab_runs WHERE run_id = ?", [run_id]).fetchone()
    return None if row is None else row[0]
