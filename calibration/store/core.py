"""What statements built with SQLAlchemy Core need beyond the tables: the engine's own INSERT
(for `ON CONFLICT ... DO UPDATE / DO NOTHING`, which both engines spell alike but SQLAlchemy
builds per dialect), constants written into a statement, and constructs each engine compiles
in its own words (`json_list`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnClause, ColumnElement, Table, TableClause, Text, column, literal_column, table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

Upsert = sqlite.Insert | postgresql.Insert
_SQLITE = sqlite.dialect()
# LIMIT 1 written into the statement: SQLAlchemy's own limit(1) is a parameter rendered at run
# time, which a statement run once per row of parameters (executemany) may not hold.
ONE: ColumnClause[Any] = literal_column("1")


def upsert(dialect: str, table: Table) -> Upsert:
    """An INSERT into `table` that can say what a conflict does (`on_conflict_do_update`,
    `on_conflict_do_nothing`, `.excluded`), for the engine named `dialect` (`Database.dialect`)."""
    return postgresql.insert(table) if dialect == "postgresql" else sqlite.insert(table)


def staging(name: str, columns: tuple[str, ...]) -> TableClause:
    """A connection-private table of `Database.create_staging` (found before any table of the
    schema by its bare name, on both engines), with its `rowid`, the order rows were written in."""
    return table(name, *(column(c) for c in (*columns, "rowid")))


def as_text(expression: ColumnElement[Any]) -> str:
    """A Core expression as SQL text in the store's spelling (SQLite's, values written in), for
    the queries still written as text, so that a rule has its one home in Core."""
    return str(expression.compile(dialect=_SQLITE, compile_kwargs={"literal_binds": True}))


class json_list(FunctionElement[str]):
    """An aggregate: the group's values as one JSON array, as text ('[]' for none); the reads
    that fold many rows into one fetch use it (json_group_array on SQLite, json_agg on
    PostgreSQL)."""

    type = Text()
    name = "json_list"
    inherit_cache = True


@compiles(json_list, "sqlite")
def _json_list_sqlite(element: json_list, compiler: SQLCompiler, **kw: Any) -> str:
    return f"json_group_array({compiler.process(element.clauses, **kw)})"


@compiles(json_list, "postgresql")
def _json_list_postgresql(element: json_list, compiler: SQLCompiler, **kw: Any) -> str:
    return f"coalesce(CAST(json_agg({compiler.process(element.clauses, **kw)}) AS text), '[]')"
