"""The one store type every module outside the backends talks to: `Database`.

A `Database` is one open connection to the store, whichever engine holds it (SQLite, the
default, in `sqlite`; PostgreSQL in `postgres`). Store modules write their SQL once, in SQLite's
spelling with `?` placeholders; a backend that speaks another dialect translates it
(`postgres.translate`), so each query has one home. What the domain needs beyond SQL is an
operation of the object (`in_transaction`, `close`, `write`, `snapshot`), never the driver's
connection itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Protocol

Params = Sequence[Any] | Mapping[str, Any]


class Cursor(Protocol):
    """What a statement gives back: its rows, the rows it changed, the id it inserted."""

    @property
    def rowcount(self) -> int: ...

    @property
    def lastrowid(self) -> int | None: ...

    @property
    def description(self) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Database(ABC):
    """One open connection to the store; not shared between threads."""

    dialect: ClassVar[str]
    # The driver's errors a broken constraint raises (a duplicate key, a CHECK).
    integrity_errors: ClassVar[tuple[type[Exception], ...]]

    @abstractmethod
    def execute(self, sql: str, params: Params = ()) -> Cursor:
        """Run one statement (SQLite spelling, `?` placeholders)."""

    @abstractmethod
    def executemany(self, sql: str, rows: Sequence[Params]) -> Cursor:
        """Run one statement once per parameter row."""

    def query(self, sql: str, params: Params = ()) -> Iterator[dict[str, Any]]:
        """The rows of a SELECT as dicts keyed by column name."""
        cur = self.execute(sql, params)
        names = [d[0] for d in cur.description]
        for row in cur:
            yield dict(zip(names, row, strict=True))

    @property
    @abstractmethod
    def in_transaction(self) -> bool:
        """A transaction is open on this connection."""

    @abstractmethod
    def close(self) -> None:
        """Close the connection (a pooled backend returns it to its pool)."""

    @abstractmethod
    def write(self) -> AbstractContextManager[Database]:
        """One write transaction, taking the write lock up front; rolled back on any error."""

    @abstractmethod
    def snapshot(self) -> AbstractContextManager[None]:
        """Reads inside see one state of the store; writers elsewhere go on."""

    @abstractmethod
    def atomic(self) -> AbstractContextManager[None]:
        """A nested unit inside the current transaction (a savepoint), or a transaction."""

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
    def row_order(self, table: str) -> str:
        """An ORDER BY expression listing `table`'s rows in a stable order (as written, where known)."""

    @abstractmethod
    def checkpoint(self) -> None:
        """After a bulk write: let the engine fold it in now, so the next small commit does not pay."""

    @abstractmethod
    def analyze(self) -> None:
        """After a bulk copy into empty tables: give the query planner the tables' statistics now,
        so the first reads are not planned for empty tables."""
