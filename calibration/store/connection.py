"""Opening the store, and its transactions.

Connection strategy. Streamlit runs every rerun on a fresh thread and serves many
sessions at once, so no connection is shared by two units of work at once: each one takes a
connection for itself (`session()`) and gives it up at the end. A command closes it there;
the app server (`keep_idle_connections`) keeps a SQLite connection that ended cleanly for the
next unit of work, on whatever thread, since opening one costs about 1 ms (PostgreSQL has
its pool). The store is named by a URL:
a file path or `sqlite:///path` (the default engine, `calibration.store.sqlite`), or
`postgresql://...` (`calibration.store.postgres`). Everything outside the backends holds the
one `Database` type and uses `write` (one write transaction: SQLite's write lock up front, on
PostgreSQL the locks each write takes on what it read, see `postgres`)
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

import atexit
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from ..errors import DatabaseMissingError, ReadOnlyError, StorageError
from .database import NOTHING_WRITTEN, Database
from .revisions import upgrade as upgrade_schema
from .sqlite import BUSY_TIMEOUT_MS, SQLiteDatabase, open_file
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
    "close_idle_connections",
    "connect",
    "exists",
    "is_postgres",
    "keep_idle_connections",
    "read_snapshot",
    "remove_new",
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
    """The URL or path as a message, a page or a log may show it: a PostgreSQL URL with its
    password masked, in the user part and in a `password=` query parameter alike. The one
    place a database location is made printable."""
    if not is_postgres(url):
        return str(url)
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(str(url))
    netloc = parts.netloc
    if "@" in netloc:
        user, at, host = netloc.rpartition("@")
        if ":" in user:
            user = user.partition(":")[0] + ":***"
        netloc = user + at + host
    query = "&".join(
        f"{piece.partition('=')[0]}=***" if unquote(piece.partition("=")[0]) == "password" else piece
        for piece in parts.query.split("&")
    )
    # Put together by hand: urlunsplit drops the empty host of postgresql:///db.
    return (
        f"{parts.scheme}://{netloc}{parts.path}"
        + (f"?{query}" if parts.query else "")
        + (f"#{parts.fragment}" if parts.fragment else "")
    )


def remove_new(url: str | Path) -> None:
    """Remove the SQLite file a refused command has just created (and its -wal and -shm), so that
    no empty database is left to be mistaken for a copy; this process may create it again. A
    PostgreSQL database is the server's: left as it is."""
    if is_postgres(url):
        return
    path = sqlite_path(url)
    _migrated.pop(str(path.resolve()), None)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


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


def connect(
    url: str | Path | None = None, *, migrate: bool = True, create: bool = True, shared: bool = False
) -> Database:
    """Open a new connection to the store; apply pending migrations once per process.

    `url`: a path, `sqlite:///path` or `postgresql://...` (default: $CALIBRATION_DB). `create`
    False: DatabaseMissingError instead of creating a missing SQLite file. A file this process
    opened before is never recreated once it is gone (DatabaseMissingError, whatever `create`).
    `shared`: a SQLite connection another thread may use next (`session`'s idle ones)."""
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
        return _open(path, key, migrate, shared)
    except Exception as exc:
        translated = sqlite_storage_error(exc)
        if translated is None:
            raise
        raise translated from exc


def _open(path: Path, key: str, migrate: bool, shared: bool) -> Database:
    db = open_file(path, shared=shared)
    try:
        ident = _identity(path)
        # A file replaced under a running process (a restored backup) is checked again.
        if migrate and _migrated.get(key) != ident:
            with _migrate_lock:
                if _migrated.get(key) != ident:
                    with write(db):
                        upgrade_schema(db)
                    _migrated[key] = ident
    except BaseException:
        db.close()
        raise
    return db


# Idle SQLite connections, by file (path, device, inode), newest last. A new connection costs
# about 1 ms (SQLite reads the schema again, the pragmas run) against microseconds for a query,
# and a page run opens several: a connection whose unit of work is over waits here for the next
# one, on whatever thread it runs. Bounded, so that a process opening many files (the tests)
# keeps few of them open.
IDLE_PER_FILE = 8
IDLE_FILES = 4
_idle: OrderedDict[tuple[str, int, int], list[SQLiteDatabase]] = OrderedDict()
_idle_lock = threading.Lock()
_keep_idle = False


def keep_idle_connections(keep: bool = True) -> None:
    """Whether `session` keeps SQLite connections for the next unit of work (the app server
    does, see app.py); off, the idle ones are closed now.

    Off by default: while a connection is open SQLite keeps recent commits in the `-wal` file
    beside the database, and a short command should leave one complete file behind (the last
    connection to close writes the WAL into it). The kept ones are closed at exit."""
    global _keep_idle
    _keep_idle = keep
    if not keep:
        close_idle_connections()


def close_idle_connections() -> None:
    with _idle_lock:
        idle = [db for dbs in _idle.values() for db in dbs]
        _idle.clear()
    for db in idle:
        db.close()


atexit.register(close_idle_connections)


def _idle_key(url: str | Path) -> tuple[str, int, int] | None:
    """The file's key among the idle connections; None when none may serve it now: missing (a
    new connection says why), or not writable by this process (made read-only since: a new
    connection opens it read-only, so that a write is refused as it should be)."""
    if is_postgres(url):
        return None
    path = sqlite_path(url)
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not os.access(path, os.W_OK):
        return None
    return (str(path), st.st_dev, st.st_ino)


def _take_idle(key: tuple[str, int, int] | None) -> SQLiteDatabase | None:
    if key is None:
        return None
    with _idle_lock:
        idle = _idle.get(key)
        return idle.pop() if idle else None


def _give_back(db: Database, url: str | Path) -> bool:
    """Keep `db` for the next unit of work on the same file; False: the caller closes it."""
    if not _keep_idle or not isinstance(db, SQLiteDatabase) or not db.shared:
        return False
    key = _idle_key(url)
    if key is None or not db.end_unit_of_work():
        return False
    with _idle_lock:
        idle = _idle.setdefault(key, [])
        _idle.move_to_end(key)
        if len(idle) >= IDLE_PER_FILE:
            return False
        idle.append(db)
        while len(_idle) > IDLE_FILES:
            for old in _idle.popitem(last=False)[1]:
                old.close()
    return True


def _forget_idle() -> None:
    """In a forked child: the parent's connections are not the child's to use (nor to close)."""
    _idle.clear()


os.register_at_fork(after_in_child=_forget_idle)


@contextmanager
def session(url: str | Path | None = None) -> Iterator[Database]:
    """A connection for one unit of work; afterwards closed, or on SQLite kept for the next one
    when it ended cleanly (no transaction open, nothing attached or staged)."""
    url = default_db_url() if url is None else url
    db: Database | None = _take_idle(_idle_key(url)) if _keep_idle else None
    if db is None:
        db = connect(url, shared=True)
    done = False
    try:
        yield db
        done = True
    except Exception as exc:
        # A read that meets a full, read-only or damaged database is a message, not a bug.
        translated = storage_error(exc)
        if translated is None:
            raise
        raise translated from exc
    finally:
        if not (done and _give_back(db, url)):
            db.close()


@contextmanager
def write(db: Database) -> Iterator[Database]:
    """One write transaction (`Database.write`); rolled back on any error.

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
