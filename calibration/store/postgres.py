"""The PostgreSQL backend: the same store on a server, for several app servers on one database.

Install with `pip install -e .[postgres]` (psycopg 3) and name the store by URL:
`CALIBRATION_DB=postgresql://user@host/db` or `--db postgresql://...`.

Guarantees, as on SQLite, by PostgreSQL's own means. A write transaction is READ COMMITTED
and takes no lock up front: writers of unrelated rows run side by side, readers never wait.
Each write holds what its check is based on (`Database.lock`: SELECT ... FOR NO KEY UPDATE, or
FOR SHARE; `lock_tables`: SHARE ROW EXCLUSIVE, for the rare write whose check reads a whole
table), or lets a unique key decide (INSERT ... ON CONFLICT):
- a label (verdict, skip, unclear, reconcile, an import's): the reviewer's current label on
  the claim, read FOR NO KEY UPDATE before the stale-tab check (`labels.label_state`, held), so
  a second write of it waits and is then refused as stale or based on the first; a first label
  has no row yet: it goes in with ON CONFLICT DO NOTHING on (claim, reviewer), which waits for
  another first label being committed and then says so (`insert_first_labels`): one event, the
  other tab refused. Other reviewers' labels on the claim never wait. An import's batch of
  labels goes in the same way and sets aside the labels a reviewer gave meanwhile; a restore
  of label history holds each claim before reading its events (`answers.event_keys`);
- the card's verdict and reconcile hold that label before their checks (`labels.hold_label`);
  a commit holds the reviewer's labels on the whole answer (`review.hold_answer_labels`), which
  it checks, so a change of one of them and the commit never interleave;
- a reviewer's write holds their roster entry shared (`roster.check_writer`); a deactivation
  updates it, a rename holds it and keeps writers out of the tables of reviewers' work
  (`hold_for_rename`), so neither interleaves with a write of that reviewer;
- get-or-create: a judge run (`runs.run_id`), a provider binding (`roster.bind`), the sign-in
  secret (`settings.setting_or_new`), a sign-in, a commit, a split assignment, a lab run's
  examples and calls: ON CONFLICT on the table's key, the insert waiting for a concurrent one;
  a cycle's or roster entry's name: its UNIQUE key refuses a second (ConflictError, nothing
  written);
- a lead's change of a cycle (close, reassign): its row; a new cycle and holdout marks: cycle
  membership (`cycles.hold_membership`), since each reads what the other writes over many
  answers; closing a run's labeling: the label tables, so its final reading sees one state
  (`labels.hold_all_labels`); thresholds: the settings table; a new split generation:
  `claim_splits` (made only when the current one is still the one read); a restore into an
  empty database: every table;
- claim ids an import reserves or a restore writes: the `imports` table (`hold_numbering`), so
  two imports never take the same range; other ids are identity columns;
- an import stays all or nothing through its marker (`imports`), each batch a transaction; a
  leftover is removed once (its marker row held); upserts with no check before them
  (thresholds' single setting, guidelines, a check's row, an adjudication) need nothing more.
No write needs SERIALIZABLE and its retries: every check above has a row, a key or a table to
hold, and the keys it needs all exist. Locks are taken in one order (a reviewer's roster entry,
then their labels by claim; a lead's row, then its tables), so writers do not wait for each
other in a circle; a lock waited for past the busy timeout, or a deadlock PostgreSQL breaks,
fails with DatabaseBusyError, nothing written.

SQL. The store's statements are built with SQLAlchemy Core and compiled for PostgreSQL by
SQLAlchemy; nothing rewrites SQL text at run time. The numbered migrations that made the schema
before Alembic have their PostgreSQL text written once (`schema_postgresql`). `execute` runs SQL
text as written for PostgreSQL (tests and maintenance tools; the store runs none) through
SQLAlchemy's `text()`, its values bound by name (`:name`) as on SQLite. Ids of a table whose
primary key is `id` are identity columns (revision 0002): two transactions inserting at once
take different ids; where rows are written with the ids they hold (a restore, a copy, an
import's claims), the writer moves the sequence past them (`resume_numbering`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, ClassVar

import psycopg
from psycopg import errors as pg_errors
from sqlalchemy import (
    Connection,
    Engine,
    Select,
    Table,
    cast,
    column,
    create_engine,
    event,
    func,
    select,
    table,
)
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects.postgresql import REGCLASS

from ..errors import DatabaseBusyError, DiskFullError, ReadOnlyError, StorageError
from .database import CLOSED, NOTHING_WRITTEN, Database, begin_event, driver_error
from .revisions import upgrade as upgrade_schema
from .sqlite import BUSY_TIMEOUT_MS
from .tables import NUMBERED

POOL_SIZE = 8
# The session-level advisory lock a schema upgrade takes: one app server migrates, the others
# wait. The key is the one earlier releases took it by ("cali" + 1), so that a server of an
# earlier release starting at the same time waits too.
_MIGRATE_LOCK = 0x63616C69 + 1
_engines: dict[str, Engine] = {}
_migrated: set[str] = set()
_lock = threading.Lock()

_UNREACHABLE = (
    "the database server cannot be reached or refused the connection (check the "
    f"URL, the server and the credentials); {NOTHING_WRITTEN}"
)
_BUSY_TEXT = f"the database is busy (another write held it too long); {NOTHING_WRITTEN}, try again"


def storage_error(exc: BaseException) -> StorageError | None:
    """The StorageError a known PostgreSQL failure means, or None (a bug)."""
    exc = driver_error(exc)
    if isinstance(exc, pg_errors.DiskFull):
        return DiskFullError(f"the disk holding the database is full; {NOTHING_WRITTEN}")
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction | pg_errors.InsufficientPrivilege):
        return ReadOnlyError(
            f"the database cannot be written (read-only or not permitted); {NOTHING_WRITTEN}"
        )
    if isinstance(exc, pg_errors.LockNotAvailable | pg_errors.DeadlockDetected | pg_errors.QueryCanceled):
        return DatabaseBusyError(_BUSY_TEXT)
    if isinstance(exc, psycopg.OperationalError):
        return StorageError(_UNREACHABLE)
    return None


# ---------------------------------------------------------------- the connection


@lru_cache(maxsize=32)
def _resumed(name: str) -> Select[tuple[Any]]:
    """Move the identity sequence of table `name` to its largest id when that is past the
    sequence's last value; never back (a concurrent writer may hold a later value)."""
    numbered = table(name, column("id"))
    sequence = cast(func.pg_get_serial_sequence(name, "id"), REGCLASS)
    largest = func.max(numbered.c.id)
    return (
        select(func.setval(sequence, largest))
        .select_from(numbered)
        .having(largest > func.coalesce(func.pg_sequence_last_value(sequence), 0))
    )


class PostgresDatabase(Database):
    """A pooled connection to one PostgreSQL database (returned to the pool by `close`).

    `sa` is SQLAlchemy's connection, in its AUTOCOMMIT mode: transactions are the explicit
    statements `write` and `snapshot` run (the isolation level) on the driver's connection
    beneath it, so a statement outside them commits on its own."""

    dialect: ClassVar[str] = "postgresql"
    integrity_errors: ClassVar[tuple[type[Exception], ...]] = (psycopg.IntegrityError, sa_exc.IntegrityError)
    driver_errors: ClassVar[tuple[type[Exception], ...]] = (psycopg.Error, sa_exc.DBAPIError)
    begin_write: ClassVar[tuple[str, ...]] = ("BEGIN",)
    begin_read: ClassVar[tuple[str, ...]] = ("BEGIN ISOLATION LEVEL REPEATABLE READ",)

    def __init__(self, sa: Connection, url: str) -> None:
        self.sa = sa
        raw = sa.connection.dbapi_connection
        assert isinstance(raw, psycopg.Connection)
        self._conn: psycopg.Connection[Any] | None = raw
        self.url = url

    @property
    def _c(self) -> psycopg.Connection[Any]:
        if self._conn is None:
            raise StorageError(CLOSED)
        return self._conn

    def lock(self, rows: Select[Any], params: Mapping[str, Any] | None = None) -> None:
        self.run(rows, params)

    def lock_tables(self, *tables: Table) -> None:
        # SHARE ROW EXCLUSIVE: taken by one transaction at a time, it waits for every write
        # already in these tables (ROW EXCLUSIVE) and holds new ones off; reads go on.
        names = ", ".join(self.sa.dialect.identifier_preparer.format_table(t) for t in tables)
        self._c.execute(f"LOCK TABLE {names} IN SHARE ROW EXCLUSIVE MODE")

    @property
    def in_transaction(self) -> bool:
        return self._c.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    def close(self) -> None:
        if self._conn is not None:
            self._conn = None
            self.sa.close()

    def table_names(self) -> list[str]:
        return [
            r[0]
            for r in self._c.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
            )
        ]

    def columns(self, table: str) -> list[str]:
        return [
            r[0]
            for r in self._c.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = %s ORDER BY ordinal_position",
                [table],
            )
        ]

    def parents(self, table: str) -> set[str]:
        return {
            r[0]
            for r in self._c.execute(
                "SELECT DISTINCT confrelid::regclass::text FROM pg_constraint "
                "WHERE contype = 'f' AND conrelid = CAST(%s AS regclass)",
                [table],
            )
        } - {table}

    def create_staging(self, name: str, like: str, columns: Sequence[str]) -> None:
        self.drop_staging(name)
        self._c.execute(f"CREATE TEMP TABLE {name} AS SELECT {', '.join(columns)} FROM {like} WHERE false")
        self._c.execute(f"ALTER TABLE pg_temp.{name} ADD COLUMN rowid BIGSERIAL")

    def drop_staging(self, name: str) -> None:
        self._c.execute(f"DROP TABLE IF EXISTS pg_temp.{name}")

    def row_order(self, table: str) -> tuple[str, ...]:
        keys = [
            r[0]
            for r in self._c.execute(
                "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = CAST(%s AS regclass) AND i.indisprimary "
                "ORDER BY array_position(i.indkey, a.attnum)",
                [table],
            )
        ]
        return tuple(keys) or tuple(self.columns(table))

    def checkpoint(self) -> None:
        pass  # the server checkpoints on its own

    def resume_numbering(self, tables: Iterable[str]) -> None:
        for name in tables:
            if name in NUMBERED:
                self.run(_resumed(name))

    def analyze(self) -> None:
        # Autovacuum would get to it in a minute or more; until then an export of 100,000 claims
        # copied by migrate-db reads about three times slower (bench/bench_migrate.py).
        self._c.execute("ANALYZE")

    def translated(self, exc: BaseException) -> BaseException:
        return storage_error(exc) or driver_error(exc)

    def refusal(self, exc: BaseException) -> str:
        return _first_line(driver_error(exc))

    def _rollback(self) -> None:
        if self._conn is not None:
            super()._rollback()


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


class _NumberLoader(psycopg.adapt.Loader):
    """numeric (what sum() of integers gives) as SQLite gives it: an int when whole, else a float."""

    def load(self, data: Any) -> int | float:
        text = bytes(data).decode()
        return int(text) if text.lstrip("-").isdigit() else float(text)


def _configure(conn: psycopg.Connection[Any], _record: object) -> None:
    conn.adapters.register_loader("numeric", _NumberLoader)
    conn.execute(f"SET lock_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("SET client_min_messages = warning")


def _reset(conn: psycopg.Connection[Any], _record: object, _state: object) -> None:
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        conn.execute("ROLLBACK")  # a unit of work that ended inside its transaction (an error)
    conn.execute("DISCARD TEMP")  # a pooled connection starts without the last user's staging


def engine_url(url: str) -> str:
    """`url` as SQLAlchemy names it with the driver this backend uses (psycopg 3)."""
    scheme, sep, rest = url.partition("://")
    return f"postgresql+psycopg{sep}{rest}" if scheme in ("postgresql", "postgres") else url


def engine(url: str) -> Engine:
    """The process's SQLAlchemy Engine for `url`, its pool of up to POOL_SIZE connections."""
    with _lock:
        found = _engines.get(url)
        if found is None:
            # AUTOCOMMIT: SQLAlchemy begins nothing itself; `write` and `snapshot` do.
            found = create_engine(
                engine_url(url),
                pool_size=POOL_SIZE,
                max_overflow=0,
                pool_timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level="AUTOCOMMIT",
                pool_reset_on_return=None,
                connect_args={"connect_timeout": 10},
            )
            event.listen(found, "connect", _configure)
            event.listen(found, "begin", begin_event)
            event.listen(found, "reset", _reset)
            _engines[url] = found
        return found


def close_pool(url: str) -> None:
    """Close the pool of `url` (its connections end), so the database can be dropped."""
    with _lock:
        found = _engines.pop(url, None)
        _migrated.discard(url)
    if found is not None:
        found.dispose()


def connect(url: str, *, migrate: bool = True) -> PostgresDatabase:
    """A pooled connection to `url`; pending migrations applied once per process."""
    try:
        sa = engine(url).connect()
    except (sa_exc.DBAPIError, sa_exc.TimeoutError) as exc:
        raise StorageError(_UNREACHABLE) from exc
    db = PostgresDatabase(sa, url)
    try:
        if migrate and url not in _migrated:
            with _lock:
                if url not in _migrated:
                    # Several app servers may start at once: one migrates, the others wait.
                    db._c.execute("SELECT pg_advisory_lock(%s)", [_MIGRATE_LOCK])
                    try:
                        with db.write():
                            upgrade_schema(db)
                    finally:
                        db._c.execute("SELECT pg_advisory_unlock(%s)", [_MIGRATE_LOCK])
                    _migrated.add(url)
    except BaseException:
        db.close()
        raise
    return db
