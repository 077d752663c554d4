"""The reads and writes of a whole-database backup: every table, as the schema lists it.

The table list is read from `sqlite_master`, never written out by hand, so a table a later
migration adds is in every backup from that release on. Tables come in foreign-key order
(parents first). A restore writes rows with the triggers set aside (`triggers_set_aside`): a
trigger that derives rows from others (m012's import commit) would otherwise add rows the
backup already holds, or rows the source database did not have.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import ConflictError
from .database import Database
from .revisions import VERSION_TABLE
from .revisions import upgrade as upgrade_schema
from .schema import migrations
from .settings import SECRET_SETTINGS

# Kept by sqlite-utils: which migrations ran and when; and Alembic's revision. A backup names its
# migrations in its header instead; the restored database records its own.
MIGRATIONS_TABLE = "_sqlite_migrations"
BOOKKEEPING = (MIGRATIONS_TABLE, VERSION_TABLE)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True, slots=True)
class Table:
    """A table of the schema: its name, its columns in order, the tables it references."""

    name: str
    columns: tuple[str, ...]
    parents: frozenset[str]


def _quoted(name: str) -> str:
    if not _NAME.match(name):  # names come from the schema or are checked against it first
        raise ValueError(f"unexpected table or column name {name!r}")
    return f'"{name}"'


def tables(db: Database, schema: str = "main") -> list[Table]:
    """Every data table of the schema, parents before the tables that reference them.

    `schema`: an attached SQLite database's name; "main" is the store itself, on any backend."""
    found: dict[str, Table] = {}
    if schema == "main":
        for name in sorted(db.table_names()):
            if not name.startswith("sqlite_") and name not in BOOKKEEPING:
                found[name] = Table(name, tuple(db.columns(name)), frozenset(db.parents(name)))
    else:
        names = [
            r[0]
            for r in db.execute(
                f"SELECT name FROM {_quoted(schema)}.sqlite_master WHERE type = 'table' "
                f"AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT IN (?, ?) ORDER BY name",
                list(BOOKKEEPING),
            )
        ]
        for name in names:
            cols = tuple(r[1] for r in db.execute(f"PRAGMA {_quoted(schema)}.table_info({_quoted(name)})"))
            parents = frozenset(
                r[2]
                for r in db.execute(f"PRAGMA {_quoted(schema)}.foreign_key_list({_quoted(name)})")
                if r[2] != name
            )
            found[name] = Table(name, cols, parents)
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


def column_types(db: Database, table: Table) -> dict[str, str]:
    """Each column's declared type (INTEGER, REAL, TEXT), as an SQLite schema states it."""
    return {r[1]: str(r[2]).upper() for r in db.execute(f"PRAGMA table_info({_quoted(table.name)})")}


def applied_migrations(db: Database) -> list[str]:
    """The names of the schema's migrations this database has applied, in order."""
    return [m.name for m in migrations.applied(db)]


def known_migrations() -> list[str]:
    """The names of every migration this release knows, in order."""
    return migrations.names()


def _secret_filter(table: str) -> tuple[str, list[Any]]:
    if table != "settings":
        return "", []
    return f" WHERE key NOT IN ({','.join('?' * len(SECRET_SETTINGS))})", sorted(SECRET_SETTINGS)


def row_count(db: Database, table: Table) -> int:
    """Rows of `table` a backup holds (the settings without the secrets)."""
    where, params = _secret_filter(table.name)
    return int(db.execute(f"SELECT count(*) FROM {_quoted(table.name)}{where}", params).fetchone()[0])


def rows(db: Database, table: Table) -> Iterator[tuple[Any, ...]]:
    """The rows of `table` a backup holds, in rowid order (the order they were written in)."""
    where, params = _secret_filter(table.name)
    cols = ", ".join(_quoted(c) for c in table.columns)
    yield from db.execute(
        f"SELECT {cols} FROM {_quoted(table.name)}{where} ORDER BY {db.row_order(table.name)}", params
    )


def publishing_imports(db: Database) -> int:
    """How many imports are moving their rows in right now (their rows are half there)."""
    if "imports" not in db.table_names():
        return 0  # a schema from before staged imports
    return int(db.execute("SELECT count(*) FROM imports WHERE status = 'publishing'").fetchone()[0])


def insert_row(db: Database, table: Table, row: Mapping[str, Any]) -> int:
    """Insert one backed-up row as it was (ids included); its rowid. The columns must be the table's.

    ConflictError (the driver's words) when the row breaks a constraint; the transaction goes on."""
    cols = list(row)
    names = ", ".join(_quoted(c) for c in cols)
    try:
        cur = db.execute(
            f"INSERT INTO {_quoted(table.name)} ({names}) VALUES ({','.join('?' * len(cols))})",
            [row[c] for c in cols],
        )
    except db.integrity_errors as exc:
        raise ConflictError(str(exc)) from exc
    return int(cur.lastrowid or 0)


def foreign_key_problems(db: Database) -> list[tuple[str, int, str]]:
    """(table, rowid, referenced table) of every row whose reference points at nothing."""
    return [(r[0], r[1], r[2]) for r in db.execute("PRAGMA foreign_key_check")]


@contextmanager
def triggers_set_aside(db: Database, schema: str = "main") -> Iterator[None]:
    """Drop the schema's triggers for the duration, then create them again as they were.

    Inside the caller's transaction, so a failure in between rolls the drop back too."""
    found = db.execute(
        f"SELECT name, sql FROM {_quoted(schema)}.sqlite_master WHERE type = 'trigger' ORDER BY name"
    ).fetchall()
    for name, _sql in found:
        db.execute(f"DROP TRIGGER {_quoted(schema)}.{_quoted(name)}")
    yield
    for _name, sql in found:
        db.execute(sql)


def copy_attached(db: Database, schema: str, order: Sequence[Table]) -> dict[str, int]:
    """Copy every table of the attached database `schema` into main (same tables); rows per table.

    The caller holds the write transaction with the triggers set aside."""
    counts: dict[str, int] = {}
    for t in order:
        cols = ", ".join(_quoted(c) for c in t.columns)
        cur = db.execute(
            f"INSERT INTO main.{_quoted(t.name)} ({cols}) "
            f"SELECT {cols} FROM {_quoted(schema)}.{_quoted(t.name)} ORDER BY rowid"
        )
        counts[t.name] = cur.rowcount
    return counts


def attach(db: Database, path: str, schema: str) -> None:
    db.execute(f"ATTACH DATABASE ? AS {_quoted(schema)}", [path])


def detach(db: Database, schema: str) -> None:
    # Not attached any more: the failure that brought us here is the one to report.
    with contextlib.suppress(Exception):
        db.execute(f"DETACH DATABASE {_quoted(schema)}")


def migrate(db: Database, upto: Sequence[str] | None = None) -> list[str]:
    """Apply the pending migrations (only the first `upto` names of them when given, else every
    one and then the schema's revisions); the numbered ones applied."""
    before = set(applied_migrations(db))
    if upto is None:
        upgrade_schema(db)
    else:
        rest = [m for m in known_migrations() if m not in set(upto)]
        migrations.apply(db, stop_before=rest[0] if rest else None)
    return [m for m in applied_migrations(db) if m not in before]


def insert_rows(db: Database, table: Table, rows: Sequence[Sequence[Any]]) -> None:
    """Insert rows of `table` as they were (ids included), in its column order (inside a write)."""
    cols = ", ".join(_quoted(c) for c in table.columns)
    marks = ",".join("?" * len(table.columns))
    db.executemany(f"INSERT INTO {_quoted(table.name)} ({cols}) VALUES ({marks})", rows)


def all_rows(db: Database, table: Table) -> Iterator[tuple[Any, ...]]:
    """Every row of `table` (the secrets included), in a stable order."""
    cols = ", ".join(_quoted(c) for c in table.columns)
    yield from db.execute(f"SELECT {cols} FROM {_quoted(table.name)} ORDER BY {db.row_order(table.name)}")


def forget_secrets(db: Database) -> int:
    """Delete the secret settings (inside a write); how many there were."""
    cur = db.execute(
        f"DELETE FROM settings WHERE key IN ({','.join('?' * len(SECRET_SETTINGS))})", sorted(SECRET_SETTINGS)
    )
    return int(cur.rowcount)
