"""The reads and writes of a whole-database backup: every table, as the schema lists it.

The table list is read from the database, never written out by hand, so a table a later
migration adds is in every backup from that release on. Tables come in foreign-key order
(parents first). Statements are built with SQLAlchemy Core over the tables as read (`Table`),
so they run on either engine. A restore loads the backup into a scratch SQLite file first
(`calibration.backup`); what only that file needs is SQLite's own (`column_types` aside):
the foreign-key check, attaching it, and setting its triggers aside (`triggers_set_aside`): a
trigger that derives rows from others (m012's import commit, in the schema of a backup from
before m017) would otherwise add rows the backup already holds, or rows the source database
did not have.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    TableClause,
    column,
    delete,
    func,
    insert,
    inspect,
    literal_column,
    select,
    table,
)

from ..errors import ConflictError
from .core import insert_of
from .database import Database, Rows
from .migrations import MIGRATIONS_TABLE
from .revisions import VERSION_TABLE, current, known
from .revisions import upgrade as upgrade_schema
from .schema import migrations
from .settings import SECRET_SETTINGS
from .tables import imports, metadata

# Kept by sqlite-utils: which migrations ran and when; and Alembic's revision. A backup names its
# migrations in its header instead; the restored database records its own.
BOOKKEEPING = (MIGRATIONS_TABLE, VERSION_TABLE)


@dataclass(frozen=True, slots=True)
class Table:
    """A table of the schema: its name, its columns in order, the tables it references."""

    name: str
    columns: tuple[str, ...]
    parents: frozenset[str]

    def clause(self, schema: str | None = None) -> TableClause:
        """The table for a Core statement (its names quoted as each engine needs)."""
        return table(self.name, *(column(c) for c in self.columns), schema=schema)


def hold_all(db: Database) -> None:
    """Keep every other writer out of the store's tables until the write ends: a restore
    checks that the database is empty, then fills it (`Database.lock_tables`)."""
    db.lock_tables(*metadata.sorted_tables)


def tables(db: Database) -> list[Table]:
    """Every data table of the store, parents before the tables that reference them."""
    found = {
        name: Table(name, tuple(db.columns(name)), frozenset(db.parents(name)))
        for name in sorted(db.table_names())
        if not name.startswith("sqlite_") and name not in BOOKKEEPING
    }
    ordered: list[Table] = []
    done: set[str] = set()

    def visit(t: Table) -> None:
        if t.name in done:
            return
        done.add(t.name)
        for p in sorted(t.parents):
            if p in found:
                visit(found[p])
        ordered.append(t)

    for t in found.values():
        visit(t)
    return ordered


def column_types(db: Database, t: Table) -> dict[str, str]:
    """Each column's declared type (INTEGER, REAL, TEXT on SQLite), as the database states it."""
    return {c["name"]: str(c["type"]).upper() for c in inspect(db.sa).get_columns(t.name)}


def applied_migrations(db: Database) -> list[str]:
    """The names of the schema's migrations this database has applied, in order."""
    return [m.name for m in migrations.applied(db)]


def known_migrations() -> list[str]:
    """The names of every migration this release knows, in order."""
    return migrations.names()


def revision(db: Database) -> str | None:
    """The schema revision the database is at (None: an earlier release's, before revisions)."""
    return current(db)


def known_revisions() -> list[str]:
    """Every schema revision this release knows, oldest first."""
    return list(known())


def _kept(t: Table, clause: TableClause) -> Any:
    """The WHERE clause of the rows a backup holds: all but the secret settings."""
    return clause.c.key.not_in(sorted(SECRET_SETTINGS)) if t.name == "settings" else None


def _in_order(db: Database, t: Table, *, everything: bool) -> Rows:
    clause = t.clause()
    query = select(*clause.c).order_by(*(column(c) for c in db.row_order(t.name)))
    where = None if everything else _kept(t, clause)
    return db.run(query if where is None else query.where(where))


def row_count(db: Database, t: Table) -> int:
    """Rows of `t` a backup holds (the settings without the secrets)."""
    clause = t.clause()
    query = select(func.count()).select_from(clause)
    where = _kept(t, clause)
    return int(db.run(query if where is None else query.where(where)).scalar_one())


def rows(db: Database, t: Table) -> Iterator[tuple[Any, ...]]:
    """The rows of `t` a backup holds, in the order they were written in."""
    yield from (tuple(r) for r in _in_order(db, t, everything=False))


def all_rows(db: Database, t: Table) -> Iterator[tuple[Any, ...]]:
    """Every row of `t` (the secrets included), in a stable order."""
    yield from (tuple(r) for r in _in_order(db, t, everything=True))


def publishing_imports(db: Database) -> int:
    """How many imports are moving their rows in right now (their rows are half there)."""
    if imports.name not in db.table_names():
        return 0  # a schema from before staged imports
    query = select(func.count()).select_from(imports).where(imports.c.status == "publishing")
    return int(db.run(query).scalar_one())


def insert_row(db: Database, t: Table, row: Mapping[str, Any]) -> int:
    """Insert one backed-up row as it was (ids included); its rowid on SQLite. The columns must
    be the table's.

    ConflictError (the driver's words) when the row breaks a constraint; the transaction goes on."""
    try:
        return db.insert_direct(insert_of(t.name, tuple(row)), row)
    except db.integrity_errors as exc:
        raise ConflictError(db.refusal(exc)) from exc


def insert_rows(db: Database, t: Table, rows: Sequence[Sequence[Any]]) -> None:
    """Insert rows of `t` as they were (ids included), in its column order (inside a write)."""
    db.run_direct_many(insert_of(t.name, t.columns), t.columns, rows)


def forget_secrets(db: Database) -> int:
    """Delete the secret settings (inside a write); how many there were."""
    settings = table("settings", column("key"))
    done = db.run(delete(settings).where(settings.c.key.in_(sorted(SECRET_SETTINGS))))
    return int(getattr(done, "rowcount", 0))


def migrate(db: Database, upto: Sequence[str] | None = None, revision: str | None = None) -> list[str]:
    """Bring the schema to where a backup was written: the numbered migrations `upto`, then the
    schema revision `revision` when the backup names one; with neither, every migration and
    revision this release has. The numbered migrations applied."""
    before = set(applied_migrations(db))
    if upto is None or revision is not None:
        upgrade_schema(db, revision)
    else:
        rest = [m for m in known_migrations() if m not in set(upto)]
        migrations.apply(db, stop_before=rest[0] if rest else None)
    return [m for m in applied_migrations(db) if m not in before]


# ---------------------------------------------------------------- SQLite's own: the scratch file


def _sqlite(db: Database) -> Database:
    if db.dialect != "sqlite":
        raise ValueError("a restore's scratch database and its attaching are SQLite's")
    return db


def foreign_key_problems(db: Database) -> list[tuple[str, int, str]]:
    """(table, rowid, referenced table) of every row whose reference points at nothing (SQLite)."""
    return [(r[0], r[1], r[2]) for r in _sqlite(db).sa.exec_driver_sql("PRAGMA foreign_key_check")]


@contextmanager
def triggers_set_aside(db: Database) -> Iterator[None]:
    """Drop the SQLite file's triggers for the duration, then create them again as they were.

    Inside the caller's transaction, so a failure in between rolls the drop back too."""
    sa = _sqlite(db).sa
    master = table("sqlite_master", column("name"), column("sql"), column("type"))
    found = sa.execute(
        select(master.c.name, master.c.sql).where(master.c.type == "trigger").order_by(master.c.name)
    ).all()
    for name, _sql in found:
        sa.exec_driver_sql(f"DROP TRIGGER {sa.dialect.identifier_preparer.quote(name)}")
    yield
    for _name, sql in found:
        sa.exec_driver_sql(sql)


def copy_attached(db: Database, schema: str, order: Sequence[Table]) -> dict[str, int]:
    """Copy every table of the attached SQLite database `schema` into the store (same tables);
    rows per table. The caller holds the write transaction with the triggers set aside."""
    counts: dict[str, int] = {}
    for t in order:
        source = t.clause(schema)
        done = _sqlite(db).run(
            insert(t.clause()).from_select(t.columns, select(*source.c).order_by(literal_column("rowid")))
        )
        counts[t.name] = int(getattr(done, "rowcount", 0))
    return counts


def attach(db: Database, path: str, schema: str) -> None:
    """Attach the SQLite file at `path` to the SQLite store as `schema`."""
    sa = _sqlite(db).sa
    sa.exec_driver_sql(f"ATTACH DATABASE ? AS {sa.dialect.identifier_preparer.quote(schema)}", (path,))


def detach(db: Database, schema: str) -> None:
    # Not attached any more: the failure that brought us here is the one to report.
    sa = _sqlite(db).sa
    with contextlib.suppress(Exception):
        sa.exec_driver_sql(f"DETACH DATABASE {sa.dialect.identifier_preparer.quote(schema)}")
