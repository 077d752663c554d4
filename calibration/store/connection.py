"""Opening the store, and its transactions.

Connection strategy. Streamlit runs every rerun on a fresh thread and serves many
sessions at once, so no connection is shared between threads: every unit of work
opens its own short-lived connection (`session()`), which costs well under a
millisecond on SQLite (a pooled connection on PostgreSQL). The store is named by a URL:
a file path or `sqlite:///path` (the default engine, `calibration.store.sqlite`), or
`postgresql://...` (`calibration.store.postgres`). Everything outside the backends holds the
one `Database` type and uses `write` (one write transaction, the write lock taken up front)
and `read_snapshot`.

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
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from ..errors import DatabaseMissingError, ReadOnlyError, StorageError
from .database import Database
from .schema import migrations
from .sqlite import BUSY_TIMEOUT_MS, NOTHING_WRITTEN, open_file
from .sqlite import storage_error as sqlite_storage_error

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# In a source checkout the database sits in its data/ folder (where `make run` looks); an
# installed package has no such folder, so it uses calibration.db in the working directory.
_CHECKOUT = (PROJECT_ROOT / "pyproject.toml").is_file() and (PROJECT_ROOT / "data").is_dir()
DEFAULT_DB = PROJECT_ROOT / "data" / "calibration.db" if _CHECKOUT else Path("calibration.db")
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
SQLITE_SCHEME = "sqlite:///"

__all__ = [
    "BUSY_TIMEOUT_MS",
    "NOTHING_WRITTEN",
    "Database",
    "connect",
    "exists",
    "is_postgres",
    "read_snapshot",
    "session",
    "shown",
    "storage_error",
    "write",
]

_migrated: dict[str, tuple[int, int]] = {}  # resolved path -> (device, inode) when migrated
_migrate_lock = threading.Lock()


def storage_error(exc: BaseException) -> StorageError | None:
    """The StorageError a known storage failure means (full, read-only, damaged...), or None (a bug)."""
    found = sqlite_storage_error(exc)
    if found is None and type(exc).__module__.startswith("psycopg"):
        from .postgres import storage_error as pg_storage_error

        found = pg_storage_error(exc)
    return found


def _identity(path: Path) -> tuple[int, int]:
    st = path.stat()
    return (st.st_dev, st.st_ino)


def is_postgres(url: str | Path) -> bool:
    """The URL names a PostgreSQL database (else it is an SQLite file)."""
    return isinstance(url, str) and url.startswith(POSTGRES_SCHEMES)


def sqlite_path(url: str | Path) -> Path:
    """The file an SQLite URL or path names."""
    text = str(url)
    return Path(text[len(SQLITE_SCHEME) :] if text.startswith(SQLITE_SCHEME) else text)


def exists(url: str | Path) -> bool:
    """The store is there to read: an SQLite file that exists, or any PostgreSQL database (the
    server says when it is not)."""
    return is_postgres(url) or sqlite_path(url).exists()


def shown(url: str | Path) -> str:
    """The URL or path as a message may show it: a PostgreSQL URL without its password."""
    if not is_postgres(url):
        return str(url)
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(str(url))
    if parts.password is None:
        return str(url)
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def default_db_path() -> Path:
    env = os.environ.get("CALIBRATION_DB")
    return Path(env) if env else DEFAULT_DB


def default_db_url() -> str | Path:
    """The store this process uses when none is named: $CALIBRATION_DB (a path or a URL)."""
    env = os.environ.get("CALIBRATION_DB")
    if env and is_postgres(env):
        return env
    return default_db_path()


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def connect(url: str | Path | None = None, *, migrate: bool = True, create: bool = True) -> Database:
    """Open a new connection to the store; apply pending migrations once per process.

    `url`: a path, `sqlite:///path` or `postgresql://...` (default: $CALIBRATION_DB). `create`
    False: DatabaseMissingError instead of creating a missing SQLite file. A file this process
    opened before is never recreated once it is gone (DatabaseMissingError, whatever `create`)."""
    url = default_db_url() if url is None else url
    if is_postgres(url):
        from .postgres import connect as pg_connect

        return pg_connect(str(url), migrate=migrate)
    path = sqlite_path(url)
    key = str(path.resolve())
    if not path.exists():
        if key in _migrated:
            raise DatabaseMissingError(
                "the database file has disappeared (deleted or moved while the app was running); it is "
                "not recreated empty: put it back, or restart to start a new database; "
                f"{NOTHING_WRITTEN}"
            )
        if not create:
            raise DatabaseMissingError(
                "there is no database file at the given path; check the path, "
                "or import judged answers to create one"
            )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReadOnlyError(f"the database's folder cannot be created ({exc.strerror})") from exc
    try:
        return _open(path, key, migrate)
    except Exception as exc:
        translated = sqlite_storage_error(exc)
        if translated is None:
            raise
        raise translated from exc


def _open(path: Path, key: str, migrate: bool) -> Database:
    db = open_file(path)
    try:
        ident = _identity(path)
        # A file replaced under a running process (a restored backup) is checked again.
        if migrate and _migrated.get(key) != ident:
            with _migrate_lock:
                if _migrated.get(key) != ident:
                    with write(db):
                        migrations.apply(db)
                    _migrated[key] = ident
    except BaseException:
        db.close()
        raise
    return db


@contextmanager
def session(url: str | Path | None = None) -> Iterator[Database]:
    """A connection for one unit of work, closed at the end."""
    db = connect(url)
    try:
        yield db
    except Exception as exc:
        # A read that meets a full, read-only or damaged database is a message, not a bug.
        translated = storage_error(exc)
        if translated is None:
            raise
        raise translated from exc
    finally:
        db.close()


@contextmanager
def write(db: Database) -> Iterator[Database]:
    """One write transaction that takes the write lock up front; rolled back on any error.

    Translated, because callers can act on them: a lock held past the busy timeout
    (DatabaseBusyError: try again), a constraint the write broke (ConflictError), and a full,
    read-only or damaged database (`storage_error`). Any other driver error is a bug and
    propagates as itself, after the rollback. Nested, it is a savepoint of the outer one.
    """
    with db.write():
        yield db


@contextmanager
def read_snapshot(db: Database) -> Iterator[None]:
    """Reads inside see one state of the store (a read transaction; writers go on)."""
    with db.snapshot():
        yield
