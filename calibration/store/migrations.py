"""Numbered schema migrations, applied in order, each with the record of it in one transaction.

The record is the table sqlite-utils' Migrations kept (`_sqlite_migrations`: id, migration_set,
name, applied_at), read and written the same way, so a database made by an earlier release
replays only what it lacks, and the same list runs on every backend.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from .database import Database

MIGRATIONS_TABLE = "_sqlite_migrations"
Migration = Callable[[Database], None]


@dataclass(frozen=True, slots=True)
class Step:
    name: str
    fn: Migration


@dataclass(frozen=True, slots=True)
class Applied:
    name: str
    applied_at: str


class Migrations:
    """An ordered list of migrations (register with the `@migrations()` decorator)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._steps: list[Step] = []

    def __call__(self) -> Callable[[Migration], Migration]:
        def register(fn: Migration) -> Migration:
            if any(s.name == fn.__name__ for s in self._steps):
                raise ValueError(f"migration {fn.__name__} is registered twice")
            self._steps.append(Step(fn.__name__, fn))
            return fn

        return register

    def names(self) -> list[str]:
        """Every migration's name, in order."""
        return [s.name for s in self._steps]

    def applied(self, db: Database) -> list[Applied]:
        """The migrations this database has applied, in the order applied (read only)."""
        if MIGRATIONS_TABLE not in db.table_names():
            return []
        return [
            Applied(r[0], r[1])
            for r in db.execute(
                f"SELECT name, applied_at FROM {MIGRATIONS_TABLE} WHERE migration_set = ? ORDER BY id",
                [self.name],
            )
        ]

    def pending(self, db: Database) -> list[Step]:
        done = {a.name for a in self.applied(db)}
        return [s for s in self._steps if s.name not in done]

    def apply(self, db: Database, *, stop_before: str | Iterable[str] | None = None) -> None:
        """Apply the pending migrations in order, stopping before any named in `stop_before`."""
        stop = {stop_before} if isinstance(stop_before, str) else set(stop_before or ())
        done = stop.intersection(a.name for a in self.applied(db))
        if done:
            raise ValueError(f"cannot stop before {', '.join(sorted(done))}: already applied")
        with db.atomic():
            db.execute(f"""CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (
                id INTEGER PRIMARY KEY, migration_set TEXT, name TEXT, applied_at TEXT)""")
            db.execute(
                f"CREATE UNIQUE INDEX IF NOT EXISTS idx_{MIGRATIONS_TABLE}_migration_set_name "
                f"ON {MIGRATIONS_TABLE} (migration_set, name)"
            )
        for step in self.pending(db):
            if step.name in stop:
                return
            with db.atomic():
                step.fn(db)
                db.execute(
                    f"INSERT INTO {MIGRATIONS_TABLE} (migration_set, name, applied_at) VALUES (?, ?, ?)",
                    [self.name, step.name, str(datetime.now(UTC))],
                )
