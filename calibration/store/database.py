"""The one store type every module outside the backends talks to: `Database`.

A `Database` is one open connection to the store, whichever engine holds it (SQLite, the
default, in `sqlite`; PostgreSQL in `postgres`): a SQLAlchemy connection (`sa`) from that
engine's Engine. The store's statements are built with SQLAlchemy Core (`run`) and compiled for
the engine, so each query has one home and no text is rewritten at run time. What the domain
needs beyond SQL is an operation of the object (`in_transaction`, `close`, `write`,
`snapshot`), never the driver's connection itself.

Transactions are SQLAlchemy's (`sa.begin()`, `begin_nested()` for a savepoint), opened by the
engine's `begin` event with the statements the backend names for a write (`begin_write`: the
write lock up front, where the engine has one) or a read snapshot (`begin_read`). A statement
outside any transaction runs on its own: the event opens nothing at the driver for
SQLAlchemy's autobegin.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from sqlalchemy import (
    ClauseElement,
    Connection,
    CursorResult,
    Dialect,
    Executable,
    Result,
    Select,
    Table,
    text,
)
from sqlalchemy import exc as sa_exc

from ..errors import ConflictError, StorageError

Params = Sequence[Any] | Mapping[str, Any]
Rows = Result[*tuple[Any, ...]]  # a Core statement's result, rows of any columns
NOTHING_WRITTEN = "nothing was written"
CLOSED = "the database connection was closed"
# Where `write` and `snapshot` leave the statements that open their transaction, for the
# engine's `begin` event (`begin_event`) in the SQLAlchemy connection's `info`.
_BEGIN = "calibration.begin"


def begin_event(conn: Connection) -> None:
    """The engines' `begin` event: open the transaction `write` or `snapshot` asked for; nothing
    for SQLAlchemy's autobegin of a lone statement, which then runs on its own."""
    for sql in conn.info.pop(_BEGIN, ()):
        conn.exec_driver_sql(sql)


@functools.lru_cache(maxsize=256)
def _compiled(
    statement: ClauseElement, dialect: Dialect
) -> tuple[str, tuple[str, ...] | None, dict[str, Any]]:
    """A statement's SQL for `dialect`; when the driver's placeholders are positional, the names
    of its parameters in order (None: the driver takes them by name); and the values its
    literals were bound to (`x == "publishing"`)."""
    done = statement.compile(dialect=dialect)
    order = getattr(done, "positiontup", None)
    return done.string, None if order is None else tuple(order), done.params


def _driver_params(
    order: tuple[str, ...] | None, bound: dict[str, Any], params: Mapping[str, Any]
) -> Sequence[Any] | Mapping[str, Any]:
    given = {**bound, **params} if bound else params
    return given if order is None else [given[n] for n in order]


def driver_error(exc: BaseException) -> BaseException:
    """The driver's own error inside SQLAlchemy's wrapper (itself when not wrapped)."""
    if isinstance(exc, sa_exc.DBAPIError) and isinstance(exc.orig, BaseException):
        return exc.orig
    return exc


class Cursor:
    """What `execute` gives back: its rows as a driver's cursor gives them, fetched at once (the
    statement is done: no cursor left half read holds a read snapshot open)."""

    def __init__(self, result: CursorResult[Any]) -> None:
        self.names: tuple[str, ...] = tuple(result.keys()) if result.returns_rows else ()
        rows = [tuple(r) for r in result] if result.returns_rows else []
        self._rows: Iterator[tuple[Any, ...]] = iter(rows)

    def fetchone(self) -> Any:
        return next(self._rows, None)

    def fetchall(self) -> list[Any]:
        return list(self._rows)

    def __iter__(self) -> Iterator[Any]:
        return self._rows


class Database(ABC):
    """One open connection to the store; not shared between threads."""

    dialect: ClassVar[str]
    # The driver's errors a broken constraint raises (a duplicate key, a CHECK), and SQLAlchemy's.
    integrity_errors: ClassVar[tuple[type[Exception], ...]]
    # Every error of the driver, and SQLAlchemy's wrapper of them.
    driver_errors: ClassVar[tuple[type[Exception], ...]]
    # What opens a write transaction (SQLite's write lock taken up front), and a read snapshot.
    begin_write: ClassVar[tuple[str, ...]]
    begin_read: ClassVar[tuple[str, ...]]
    sa: Connection

    def run(self, statement: Executable, params: Params | None = None) -> Rows:
        """Run a statement built with SQLAlchemy Core, compiled for this engine."""
        return self.sa.execute(statement, params)

    @abstractmethod
    def lock(self, rows: Select[Any], params: Mapping[str, Any] | None = None) -> None:
        """Run `rows`, a SELECT ... FOR NO KEY UPDATE or FOR SHARE (`with_for_update`), so that
        the rows it selects are held until this write ends, where writers run side by side;
        nothing where a write holds the whole store (SQLite's BEGIN IMMEDIATE). Call it inside
        the write, before the reads its check is based on."""

    @abstractmethod
    def lock_tables(self, *tables: Table) -> None:
        """Keep every other writer out of `tables` until this write ends, readers not (where
        writers run side by side): for the rare writes whose check reads a whole table."""

    def run_direct(self, statement: ClauseElement, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Run a Core statement, compiled once for this engine, on the driver's connection; its
        rows. For the statements an import runs once per record, where SQLAlchemy's work per
        execution (about 40 µs) would be most of the cost; their columns need no conversion."""
        sql, order, bound = _compiled(statement, self.sa.dialect)
        cur = self.sa.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        try:
            cur.execute(sql, _driver_params(order, bound, params))
            return [tuple(r) for r in cur.fetchall()] if cur.description else []
        finally:
            cur.close()

    def insert_direct(self, statement: ClauseElement, params: Mapping[str, Any]) -> int:
        """`run_direct` for an INSERT: the new row's rowid on SQLite (0 where the engine has none)."""
        sql, order, bound = _compiled(statement, self.sa.dialect)
        cur = self.sa.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        try:
            cur.execute(sql, _driver_params(order, bound, params))
            return int(getattr(cur, "lastrowid", 0) or 0)
        finally:
            cur.close()

    def run_direct_many(
        self, statement: ClauseElement, names: Sequence[str], rows: Sequence[Sequence[Any]]
    ) -> None:
        """`run_direct` once per row of `rows`, each holding the parameters `names` in order."""
        sql, order, _bound = _compiled(statement, self.sa.dialect)
        if order is None:
            values: Sequence[Any] = [dict(zip(names, r, strict=True)) for r in rows]
        elif order == tuple(names):
            values = rows
        else:
            at = [names.index(n) for n in order]
            values = [[r[i] for i in at] for r in rows]
        cur = self.sa.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        try:
            cur.executemany(sql, values)
        finally:
            cur.close()

    def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> Cursor:
        """Run one statement of SQL text as written for this engine, in the current transaction
        if one is open (else on its own): for tests and maintenance tools; the store's own
        statements are Core. Values are bound by name (`:name` in the text, `params` a mapping),
        by SQLAlchemy's `text()` for the engine's driver; a colon meant literally before a name
        is written `\\:`. A driver's error is raised as the driver's own; on a closed
        connection, StorageError on every engine."""
        if params is not None and not isinstance(params, Mapping):
            raise TypeError(
                "execute binds values by name: write `:name` in the SQL and pass a mapping "
                f"(positional `?` placeholders are not taken), not {type(params).__name__}"
            )
        if self.sa.closed:
            raise StorageError(CLOSED)
        try:
            return Cursor(self.sa.execute(text(sql), params))
        except sa_exc.DBAPIError as exc:
            raise driver_error(exc) from exc

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """The rows of a SELECT as dicts keyed by column name."""
        cur = self.execute(sql, params)
        for row in cur:
            yield dict(zip(cur.names, row, strict=True))

    @property
    @abstractmethod
    def in_transaction(self) -> bool:
        """A transaction is open on this connection."""

    @abstractmethod
    def close(self) -> None:
        """Close the connection (a pooled backend returns it to its pool)."""

    @abstractmethod
    def translated(self, exc: BaseException) -> BaseException:
        """The StorageError a known failure of the driver means; else the driver's error (a bug)."""

    @abstractmethod
    def refusal(self, exc: BaseException) -> str:
        """The driver's words for a broken constraint, for a message."""

    def _end_autobegun(self) -> None:
        """End the transaction SQLAlchemy began for a lone statement (none at the driver), so
        that the next write or snapshot begins its own."""
        if self.sa.in_transaction():
            self.sa.rollback()

    def _rollback(self) -> None:
        if self.sa.in_transaction():
            self.sa.rollback()

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """A nested unit inside the current transaction (a savepoint), or a transaction."""
        if not self.in_transaction:
            with self.write():
                yield
            return
        with self.sa.begin_nested():
            yield

    @contextmanager
    def write(self) -> Iterator[Database]:
        """One write transaction (SQLite: the write lock taken up front; PostgreSQL: each write
        locks what it reads, `lock`); rolled back on any error."""
        if self.in_transaction:
            with self.atomic():
                yield self
            return
        self._end_autobegun()
        self.sa.info[_BEGIN] = self.begin_write
        try:
            tx = self.sa.begin()
        except self.driver_errors as exc:
            self._rollback()
            raise self.translated(exc) from exc
        try:
            yield self
        except self.integrity_errors as exc:
            self._rollback()
            raise ConflictError(
                f"the database refused the write ({self.refusal(exc)}); {NOTHING_WRITTEN}"
            ) from exc
        except self.driver_errors as exc:
            self._rollback()
            raise self.translated(exc) from exc
        except BaseException:
            self._rollback()
            raise
        else:
            try:
                tx.commit()
            except self.driver_errors as exc:
                self._rollback()
                raise self.translated(exc) from exc

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside see one state of the store; writers elsewhere go on."""
        if self.in_transaction:
            yield
            return
        self._end_autobegun()
        self.sa.info[_BEGIN] = self.begin_read
        tx = self.sa.begin()
        try:
            yield
        finally:
            if tx.is_active:
                tx.commit()

    @abstractmethod
    def table_names(self) -> list[str]:
        """The store's tables, by name."""

    @abstractmethod
    def columns(self, table: str) -> list[str]:
        """A table's columns in order."""

    @abstractmethod
    def parents(self, table: str) -> set[str]:
        """The tables `table`'s foreign keys reference (itself left out)."""

    @abstractmethod
    def create_staging(self, name: str, like: str, columns: Sequence[str]) -> None:
        """A connection-private (TEMP) table `name` with `columns` of table `like` (dropped first if
        there), plus `rowid`, numbering its rows in the order written."""

    @abstractmethod
    def drop_staging(self, name: str) -> None:
        """Drop the connection-private table `name` of `create_staging`, if there."""

    @abstractmethod
    def row_order(self, table: str) -> tuple[str, ...]:
        """The columns that list `table`'s rows in a stable order (as written, where known)."""

    @abstractmethod
    def checkpoint(self) -> None:
        """After a bulk write: let the engine fold it in now, so the next small commit does not pay."""

    @abstractmethod
    def resume_numbering(self, tables: Iterable[str]) -> None:
        """After rows were written with the ids they hold (a restore, a copy, an import's claims):
        the next row of `tables` numbered by the engine takes an id past every stored one."""

    @abstractmethod
    def analyze(self) -> None:
        """After a bulk copy into empty tables: give the query planner the tables' statistics now,
        so the first reads are not planned for empty tables."""
