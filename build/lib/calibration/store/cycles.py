"""Cycles: lookup by name, and (below) the reads and writes of sampling, assignment and close."""

from __future__ import annotations

from sqlite_utils import Database

from ..errors import NotFoundError


def cycle_id(db: Database, name: str) -> int:
    """The id of the cycle called `name`; NotFoundError (one wording everywhere) when there is none."""
    row = db.execute("SELECT id FROM cycles WHERE name = ?", [name]).fetchone()
    if row is None:
        known = [r[0] for r in db.execute("SELECT name FROM cycles ORDER BY id")]
        hint = f"; known cycles: {', '.join(known)}" if known else "; no cycles yet"
        raise NotFoundError(f"no cycle named {name!r}{hint}")
    return int(row[0])
