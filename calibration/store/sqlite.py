"""The SQLite backend: the default store, one file, one short-lived connection per unit of work.

Connections come from a SQLAlchemy Engine per file (no pool of its own: `connection` keeps
idle ones). The engine's `connect` event gives each connection WAL (readers never block the
writer), foreign keys on, and a busy timeout; it is opened with `check_same_thread=True` unless
it is to be handed between threads, so a connection that strays to another thread fails loudly.
The engine's `begin` event starts a write with `BEGIN IMMEDIATE`, taking the write lock up
front: a deferred transaction that upgrades from read to write can fail at once with "database
is locked" whatever the busy timeout, an immediate one waits its turn. A statement outside a
transaction runs on its own (the driver's autocommit), holding no read snapshot open.
Known SQLite failures become errors of `calibration.errors` (`storage_error`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from sqlalchemy import Connection, Engine, Select, Table, create_engine, event
from sqlalchemy import exc as sa_exc
from sqlalchemy.pool import NullPool

from ..errors import (
    DatabaseBusyError,
    DiskFullError,
    NotADatabaseError,
    ReadOnlyError,
    StorageError,
)
from .database import NOTHING_WRITTEN, Database, begin_event, driver_error

BUSY_TIMEOUT_MS = 30_000
_BUSY_TEXT = f"the database is busy (another write held it too long); {NOTHING_WRITTEN}, try again"
# SQLite primary result codes (https://sqlite.org/rescode.html) and what each means to a user.
_BY_CODE: dict[int, tuple[type[StorageError], str]] = {
    5: (DatabaseBusyError, _BUSY_TEXT),  # SQLITE_BUSY
    6: (DatabaseBusyError, _BUSY_TEXT),  # SQLITE_LOCKED
    8: (
        ReadOnlyError,
        f"the database cannot be written: its file, folder or disk is read-only; {NOTHING_WRITTEN}",
    ),  # SQLITE_READONLY
    10: (
        StorageError,
        f"the disk reported an error reading or writing the database; {NOTHING_WRITTEN}",
    ),  # SQLITE_IOERR
    11: (NotADatabaseError, "the database file is damaged; restore it from a backup"),  # SQLITE_CORRUPT
    13: (
        DiskFullError,
        f"the disk holding the database is full; {NOTHING_WRITTEN}: free some space and try again",
    ),  # SQLITE_FULL
    14: (
        ReadOnlyError,
        "the database file cannot be opened (its folder is missing, read-only or not accessible)",
    ),  # SQLITE_CANTOPEN
    26: (
        NotADatabaseError,
        "the database file is not a calibration database (it was replaced by another file, or is damaged)",
    ),  # SQLITE_NOTADB
}


def storage_error(exc: BaseException) -> StorageError | None:
    """The StorageError a known SQLite failure means (full, read-only, damaged...), or None (a bug)."""
    exc = driver_error(exc)
    if not isinstance(exc, sqlite3.Error):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        text = str(exc)
        if "locked" in text or "busy" in text:
            code = 5
        elif "disk is full" in text:
            code = 13
        elif "readonly" in text:
            code = 8
        elif "not a database" in text:
            code = 26
        else:
            return None
    found = _BY_CODE.get(int(code) & 0xFF)
    return None if found is None else found[0](found[1])


class SQLiteDatabase(Database):
    """A connection to one SQLite file. `conn` is the driver's connection, for SQLite-only code."""

    dialect: ClassVar[str] = "sqlite"
    integrity_errors: ClassVar[tuple[type[Exception], ...]] = (sqlite3.IntegrityError, sa_exc.IntegrityError)
    driver_errors: ClassVar[tuple[type[Exception], ...]] = (sqlite3.Error, sa_exc.DBAPIError)
    begin_write: ClassVar[tuple[str, ...]] = ("BEGIN IMMEDIATE",)
    begin_read: ClassVar[tuple[str, ...]] = ("BEGIN",)

    def __init__(self, sa: Connection, path: Path | None = None, *, shared: bool = False) -> None:
        self.sa = sa
        raw = sa.connection.dbapi_connection
        assert isinstance(raw, sqlite3.Connection)
        self.conn: sqlite3.Connection = raw  # the driver's connection, for SQLite's own statements
        self.path = path
        self.shared: bool = shared  # opened for use by one thread after another

    def lock(self, rows: Select[Any], params: Mapping[str, Any] | None = None) -> None:
        pass  # BEGIN IMMEDIATE holds the whole file for the write: nothing finer to take

    def lock_tables(self, *tables: Table) -> None:
        pass  # as `lock`

    @property
    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    def close(self) -> None:
        try:
            self.sa.close()
        except sa_exc.DBAPIError:
            self.conn.close()  # already closed under SQLAlchemy (a test closes the driver's)

    def end_unit_of_work(self) -> bool:
        """True when the connection is as a new one is (no transaction, nothing attached, no
        temporary table), so the next unit of work may have it."""
        if self.conn.in_transaction:
            return False
        self._end_autobegun()
        if any(r[1] not in ("main", "temp") for r in self.conn.execute("PRAGMA database_list")):
            return False
        return self.conn.execute("SELECT 1 FROM temp.sqlite_master LIMIT 1").fetchone() is None

    def table_names(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]

    def columns(self, table: str) -> list[str]:
        return [r[1] for r in self.conn.execute("SELECT * FROM pragma_table_info(?)", [table])]

    def parents(self, table: str) -> set[str]:
        found = {r[2] for r in self.conn.execute("SELECT * FROM pragma_foreign_key_list(?)", [table])}
        return found - {table}

    def create_staging(self, name: str, like: str, columns: Sequence[str]) -> None:
        # Untyped columns: the rows keep the types they are given until they move into `like`.
        self.drop_staging(name)
        self.conn.execute(f"CREATE TEMP TABLE {name} ({', '.join(columns)})")

    def drop_staging(self, name: str) -> None:
        self.conn.execute(f"DROP TABLE IF EXISTS temp.{name}")

    def row_order(self, table: str) -> tuple[str, ...]:
        return ("rowid",)

    def checkpoint(self) -> None:
        self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def resume_numbering(self, tables: Iterable[str]) -> None:
        pass  # a rowid is numbered from the largest stored one, whoever wrote it

    def analyze(self) -> None:
        pass  # SQLite plans from the schema's indexes: the store keeps no statistics to refresh

    def translated(self, exc: BaseException) -> BaseException:
        return storage_error(exc) or driver_error(exc)

    def refusal(self, exc: BaseException) -> str:
        return str(driver_error(exc))

    def _rollback(self) -> None:
        super()._rollback()
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")


def _pragmas(read_only: bool) -> Any:
    def on_connect(conn: sqlite3.Connection, _record: object) -> None:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        # FULL: a label the page has acknowledged must survive an OS crash or power cut too;
        # in WAL mode NORMAL may lose the last commits then. Labels are a few writes a minute.
        conn.execute("PRAGMA synchronous = FULL")
        if not read_only and conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode = WAL")

    return on_connect


# Engines by (file, read-only, shared); an engine holds no connection (NullPool), so a bounded
# few are kept for the files opened last.
_ENGINES = 16
_engines: OrderedDict[tuple[str, bool, bool], Engine] = OrderedDict()
_engines_lock = threading.Lock()


def engine(path: Path, *, read_only: bool = False, shared: bool = False) -> Engine:
    """The SQLAlchemy Engine of the file at `path` (its connections with the project's pragmas)."""
    key = (str(path), read_only, shared)
    with _engines_lock:
        found = _engines.get(key)
        if found is not None:
            _engines.move_to_end(key)
            return found
    target = f"file:{path}?mode=ro" if read_only else str(path)

    def creator() -> sqlite3.Connection:
        # isolation_level=None: Python issues no implicit BEGIN, so every transaction here
        # is the explicit one the `begin` event chose (BEGIN IMMEDIATE for writes).
        return sqlite3.connect(
            target,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=not shared,
            uri=read_only,
        )

    # No rollback when a connection goes back: NullPool closes it, which ends any transaction.
    made = create_engine("sqlite+pysqlite://", creator=creator, poolclass=NullPool, pool_reset_on_return=None)
    event.listen(made, "connect", _pragmas(read_only))
    event.listen(made, "begin", begin_event)
    with _engines_lock:
        found = _engines.setdefault(key, made)
        while len(_engines) > _ENGINES:
            _engines.popitem(last=False)
    return found


def open_file(path: Path, *, read_only: bool = False, shared: bool = False) -> SQLiteDatabase:
    """A new connection to the file at `path` with the project's pragmas (no migrations).

    `shared`: the connection may be handed from one thread to another (the idle connections
    `connection.session` keeps), one unit of work at a time."""
    try:
        sa = engine(path, read_only=read_only, shared=shared).connect()
    except sa_exc.DBAPIError as exc:
        raise driver_error(exc) from exc
    return SQLiteDatabase(sa, path, shared=shared)
