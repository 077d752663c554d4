"""Numbered schema migrations, applied in order, each with the record of it in one transaction.

The record is the table sqlite-utils' Migrations kept (`_sqlite_migrations`: id, migration_set,
name, applied_at), read and written the same way, so a database made by an earlier release
replays only what it lacks. A migration is SQL text as SQLite runs it; another engine runs the
text written once for it (`Frozen`, e.g. `schema_postgresql`), never a rewrite made at run time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import insert, select

from .database import Database
from .tables import migrations_record

MIGRATIONS_TABLE = migrations_record.name
Migration = Callable[[Database], None]
# The record's table as SQLite's first migration run made it (its text in `sqlite_master`).
_RECORD = (
    f"""CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (
                id INTEGER PRIMARY KEY, migration_set TEXT, name TEXT, applied_at TEXT)""",
    f"CREATE UNIQUE INDEX IF NOT EXISTS idx_{MIGRATIONS_TABLE}_migration_set_name "
    f"ON {MIGRATIONS_TABLE} (migration_set, name)",
)
_r = migrations_record.c


@dataclass(frozen=True, slots=True)
class Step:
    name: str
    fn: Migration


@dataclass(frozen=True, slots=True)
class Applied:
    name: str
    applied_at: str


@dataclass(frozen=True, slots=True)
class Frozen:
    """The migrations as an engine other than SQLite runs them: `prelude` first (what the
    statements rely on and the record's table), then each migration's statements by name."""

    prelude: tuple[str, ...]
    steps: Mapping[str, tuple[str, ...]]


def run_text(db: Database, statements: Iterable[str]) -> None:
    """Run SQL text as written, on the engine it was written for (no parameters: a `%` is the
    text's own)."""
    for sql in statements:
        db.sa.exec_driver_sql(sql, execution_options={"no_parameters": True})


class Migrations:
    """An ordered list of migrations (register with the `@migrations()` decorator)."""

    def __init__(self, name: str, frozen: Mapping[str, Frozen]) -> None:
        self.name = name
        self._steps: list[Step] = []
        self._frozen = frozen  # by dialect, for every engine but SQLite

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
        query = select(_r.name, _r.applied_at).where(_r.migration_set == self.name).order_by(_r.id)
        return [Applied(r[0], r[1]) for r in db.run(query)]

    def pending(self, db: Database) -> list[Step]:
        done = {a.name for a in self.applied(db)}
        return [s for s in self._steps if s.name not in done]

    def apply(self, db: Database, *, stop_before: str | Iterable[str] | None = None) -> None:
        """Apply the pending migrations in order, stopping before any named in `stop_before`."""
        stop = {stop_before} if isinstance(stop_before, str) else set(stop_before or ())
        done = stop.intersection(a.name for a in self.applied(db))
        if done:
            raise ValueError(f"cannot stop before {', '.join(sorted(done))}: already applied")
        frozen = None if db.dialect == "sqlite" else self._frozen[db.dialect]
        with db.atomic():
            run_text(db, _RECORD if frozen is None else frozen.prelude)
        for step in self.pending(db):
            if step.name in stop:
                return
            with db.atomic():
                if frozen is None:
                    step.fn(db)
                else:
                    run_text(db, frozen.steps[step.name])
                db.run(
                    insert(migrations_record).values(
                        migration_set=self.name, name=step.name, applied_at=str(datetime.now(UTC))
                    )
                )
