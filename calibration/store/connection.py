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

Storage failures are errors of `calibration.errors`, one sentence each and without a path
(pages show them as they are; the CLI adds the path): a full disk (DiskFullError), a
read-only file, folder or filesystem (ReadOnlyError), a file that is not a database or is
damaged (NotADatabaseError), a lock held too long (DatabaseBusyError). A database file that
this process has opened before and that has since disappeared is never recreated: connecting
raises DatabaseMissingError until it is put back or the process restarts. A file replaced
under a running process (a restored backup) has its migrations checked again.
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

from ..errors import (
    ConflictError,
    DatabaseBusyError,
    DatabaseMissingError,
    DiskFullError,
    NotADatabaseError,
    ReadOnlyError,
    StorageError,
)
from .schema import migrations

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# In a source checkout the database sits in its data/ folder (where `make run` looks); an
# installed package has no such folder, so it uses calibration.db in the working directory.
_CHECKOUT = (PROJECT_ROOT / "pyproject.toml").is_file() and (PROJECT_ROOT / "data").is_dir()
DEFAULT_DB = PROJECT_ROOT / "data" / "calibration.db" if _CHECKOUT else Path("calibration.db")
BUSY_TIMEOUT_MS = 30_000

_migrated: dict[str, tuple[int, int]] = {}  # resolved path -> (device, inode) when migrated
_migrate_lock = threading.Lock()

NOTHING_WRITTEN = "nothing was written"
_BUSY_TEXT = f"the database is busy (another write held it too long); {NOTHING_WRITTEN}, try again"
# SQLite primary result codes (https://sqlite.org/rescode.html) and what each means to a user.
_BY_CODE: dict[int, tuple[type[StorageError], str]] = {
    5: (DatabaseBusyError, _BUSY_TEXT),  # SQLITE_BUSY
    6: (DatabaseBusyError, _BUSY_TEXT),  # SQLITE_LOCKED
    8: (ReadOnlyError, "the database cannot be written: its file, folder or disk is read-only; "
                       f"{NOTHING_WRITTEN}"),  # SQLITE_READONLY
    10: (StorageError, "the disk reported an error reading or writing the database; "
                       f"{NOTHING_WRITTEN}"),  # SQLITE_IOERR
    11: (NotADatabaseError, "the database file is damaged; restore it from a backup"),  # SQLITE_CORRUPT
    13: (DiskFullError, f"the disk holding the database is full; {NOTHING_WRITTEN}: free some space "
                        "and try again"),  # SQLITE_FULL
    14: (ReadOnlyError, "the database file cannot be opened (its folder is missing, read-only or "
                        "not accessible)"),  # SQLITE_CANTOPEN
    26: (NotADatabaseError, "the database file is not a calibration database (it was replaced by "
                            "another file, or is damaged)"),  # SQLITE_NOTADB
}


def storage_error(exc: sqlite3.Error) -> StorageError | None:
    """The StorageError a known SQLite failure means (full, read-only, damaged...), or None (a bug)."""
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


def _identity(path: Path) -> tuple[int, int]:
    st = path.stat()
    return (st.st_dev, st.st_ino)


def default_db_path() -> Path:
    env = os.environ.get("CALIBRATION_DB")
    return Path(env) if env else DEFAULT_DB


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def connect(path: str | Path | None = None, *, migrate: bool = True, create: bool = True) -> Database:
    """Open a new connection with the project's pragmas; apply pending migrations once per process.

    `create` False: DatabaseMissingError instead of creating a missing file. A file this process
    opened before is never recreated once it is gone (DatabaseMissingError, whatever `create`)."""
    path = Path(path) if path is not None else default_db_path()
    key = str(path.resolve())
    if not path.exists():
        if key in _migrated:
            raise DatabaseMissingError(
                "the database file has disappeared (deleted or moved while the app was running); it is "
                "not recreated empty: put it back, or restart to start a new database; "
                f"{NOTHING_WRITTEN}")
        if not create:
            raise DatabaseMissingError("there is no database file at the given path; check the path, "
                                       "or import judged answers to create one")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReadOnlyError(f"the database's folder cannot be created ({exc.strerror})") from exc
    try:
        return _open(path, key, migrate)
    except sqlite3.Error as exc:
        translated = storage_error(exc)
        if translated is None:
            raise
        raise translated from exc


def _open(path: Path, key: str, migrate: bool) -> Database:
    # isolation_level=None: Python issues no implicit BEGIN, so every transaction here
    # is the explicit one we chose (BEGIN IMMEDIATE for writes).
    conn = sqlite3.connect(
        str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=True
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        # FULL: a label the page has acknowledged must survive an OS crash or power cut too;
        # in WAL mode NORMAL may lose the last commits then. Labels are a few writes a minute.
        conn.execute("PRAGMA synchronous = FULL")
        db = Database(conn, execute_plugins=False)
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        ident = _identity(path)
        # A file replaced under a running process (a restored backup) is checked again.
        if migrate and _migrated.get(key) != ident:
            with _migrate_lock:
                if _migrated.get(key) != ident:
                    with write(db):
                        migrations.apply(db)
                    _migrated[key] = ident
    except BaseException:
        conn.close()
        raise
    return db


@contextmanager
def session(path: str | Path | None = None) -> Iterator[Database]:
    """A connection for one unit of work, closed at the end."""
    db = connect(path)
    try:
        yield db
    except sqlite3.Error as exc:
        # A read that meets a full, read-only or damaged database is a message, not a bug.
        translated = storage_error(exc)
        if translated is None:
            raise
        raise translated from exc
    finally:
        db.conn.close()


@contextmanager
def write(db: Database) -> Iterator[Database]:
    """One write transaction started with BEGIN IMMEDIATE; rolled back on any error.

    Translated, because callers can act on them: a lock held past the busy timeout
    (DatabaseBusyError: try again), a constraint the write broke (ConflictError), and a full,
    read-only or damaged database (`storage_error`). Any other sqlite3 error is a bug and
    propagates as itself, after the rollback.
    """
    if db.conn.in_transaction:
        with db.atomic():
            yield db
        return
    try:
        db.conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise _translated(exc) from exc
    try:
        yield db
    except sqlite3.IntegrityError as exc:
        _rollback(db)
        raise ConflictError(f"the database refused the write ({exc}); {NOTHING_WRITTEN}") from exc
    except sqlite3.Error as exc:
        _rollback(db)
        raise _translated(exc) from exc
    except BaseException:
        _rollback(db)
        raise
    else:
        try:
            db.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            _rollback(db)
            raise _translated(exc) from exc


def _translated(exc: sqlite3.Error) -> BaseException:
    """The StorageError for a known failure; else the SQLite error itself (a bug)."""
    return storage_error(exc) or exc


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

