"""The lead's labeling guidelines (markdown written by a lead, per project or per cycle), and
the judge prompt a cycle's run was made with, whose verdict definitions the review page shows."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, select

from .connection import now, write
from .core import upsert
from .database import Database
from .tables import guidelines, judge_lab_runs

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
    g = guidelines.c
    row = db.run(select(g.scope, g.markdown, g.author, g.updated_at).where(g.scope == scope)).first()
    return None if row is None else Guidelines(*row)


def save_guidelines(db: Database, scope: str, markdown: str, author: str) -> Guidelines:
    """Write (or replace) the guidelines of a scope; an empty text removes them."""
    ts = now()
    with write(db):
        if not markdown.strip():
            db.run(delete(guidelines).where(guidelines.c.scope == scope))
        else:
            new = upsert(db.dialect, guidelines).values(
                scope=scope, markdown=markdown, author=author, updated_at=ts
            )
            db.run(
                new.on_conflict_do_update(
                    index_elements=[guidelines.c.scope],
                    set_={c: new.excluded[c] for c in ("markdown", "author", "updated_at")},
                )
            )
    return Guidelines(scope, markdown, author, ts)


def run_template(db: Database, run_id: int) -> str | None:
    """The prompt template a judge-lab run used; None for an imported run."""
    found = db.run(select(judge_lab_runs.c.template).where(judge_lab_runs.c.run_id == run_id)).scalar()
    return None if found is None else str(found)
