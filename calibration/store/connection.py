"""Connections and transactions.

Connection strategy. Streamlit runs every rerun on a fresh thread and serves many
sessions at once, so no connection is shared between threads: every unit of work
opens its own short-lived connection (`session()`), which costs well under a
millisecond, and it is opened with `check_same_thread=True` so a connection that
strays to another thread fails loudly. Each connection gets WAL (readers never
block the writer), foreign keys on, and a busy timeout. A write that reads before
it writes starts with `BEGIN IMMEDIATE`, taking the write lock up front: a deferred
transaction that upgrades from read to write can fail at once with "database is
locked" whatever the busy timeout, an immediate one waits its turn.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from sqlite_utils import Database

from ..errors import ConflictError, DatabaseBusyError
from .schema import migrations

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# In a source checkout the database sits in its data/ folder (where `make run` looks); an
# installed package has no such folder, so it uses calibration.db in the working directory.
_CHECKOUT = (PROJECT_ROOT / "pyproject.toml").is_file() and (PROJECT_ROOT / "data").is_dir()
DEFAULT_DB = PROJECT_ROOT / "data" / "calibration.db" if _CHECKOUT else Path("calibration.db")
BUSY_TIMEOUT_MS = 30_000

_migrated: set[str] = set()
_migrate_lock = threading.Lock()


def default_db_path() -> Path:
    env = os.environ.get("CALIBRATION_DB")
    return Path(env) if env else DEFAULT_DB


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def connect(path: str | Path | None = None, *, migrate: bool = True) -> Database:
    """Open a new connection with the project's pragmas; apply pending migrations once per process."""
    path = Path(path) if path is not None else default_db_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    # isolation_level=None: Python issues no implicit BEGIN, so every transaction here
    # is the explicit one we chose (BEGIN IMMEDIATE for writes).
    conn = sqlite3.connect(
        str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=True
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    # FULL: a label the page has acknowledged must survive an OS crash or power cut too;
    # in WAL mode NORMAL may lose the last commits then. Labels are a few writes a minute.
    conn.execute("PRAGMA synchronous = FULL")
    db = Database(conn, execute_plugins=False)
    if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        conn.execute("PRAGMA journal_mode = WAL")
    key = str(path.resolve())
    if migrate and key not in _migrated:
        with _migrate_lock:
            if key not in _migrated:
                with write(db):
                    migrations.apply(db)
                _migrated.add(key)
    return db


@contextmanager
def session(path: str | Path | None = None) -> Iterator[Database]:
    """A connection for one unit of work, closed at the end."""
    db = connect(path)
    try:
        yield db
    finally:
        db.conn.close()


def _busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


@contextmanager
def write(db: Database) -> Iterator[Database]:
    """One write transaction started with BEGIN IMMEDIATE; rolled back on any error.

    Translated, because callers can act on them: a lock held past the busy timeout
    (DatabaseBusyError: try again) and a constraint the write broke (ConflictError).
    Any other sqlite3 error is a bug and propagates as itself, after the rollback.
    """
    if db.conn.in_transaction:
        with db.atomic():
            yield db
        return
    try:
        db.conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if not _busy(exc):
            raise
        raise DatabaseBusyError(f"the database is busy ({exc}); nothing was written, try again") from exc
    try:
        yield db
    except sqlite3.IntegrityError as exc:
        _rollback(db)
        raise ConflictError(f"the database refused the write ({exc}); nothing was written") from exc
    except sqlite3.OperationalError as exc:
        _rollback(db)
        if not _busy(exc):
            raise
        raise DatabaseBusyError(f"the database is busy ({exc}); nothing was written, try again") from exc
    except BaseException:
        _rollback(db)
        raise
    else:
        try:
            db.conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            _rollback(db)
            if not _busy(exc):
                raise
            raise DatabaseBusyError(f"the database is busy ({exc}); nothing was written, try again") from exc


def _rollback(db: Database) -> None:
    if db.conn.in_transaction:
        db.conn.execute("ROLLBACK")


@contextmanager
def read_snapshot(db: Database) -> Iterator[None]:
    """Reads inside see one state of the store (a read transaction; WAL lets writers go on)."""
    if db.conn.in_transaction:
        yield
        return
    db.conn.execute("BEGIN")
    try:
        yield
    finally:
        if db.conn.in_transaction:
            db.conn.execute("COMMIT")

