"""What statements built with SQLAlchemy Core need beyond the tables: the engine's own INSERT
(for `ON CONFLICT ... DO UPDATE / DO NOTHING`, which both engines spell alike but SQLAlchemy
builds per dialect), constants written into a statement, and constructs each engine compiles
in its own words (the JSON functions)."""

from __future__ import annotations

from collections.abc import Callable
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


def _engine_function(name: str, sqlite: str, postgresql: str) -> type[FunctionElement[str]]:
    """A SQL function each engine spells in its own words: `sqlite` and `postgresql` are format
    strings over the compiled arguments ({0}, {1}, ...; {all}: all of them, comma separated)."""

    def spelled(template: str) -> Callable[..., str]:
        def compile_(element: FunctionElement[str], compiler: SQLCompiler, **kw: Any) -> str:
            args = [compiler.process(arg, **kw) for arg in element.clauses]
            return template.format(*args, all=", ".join(args))

        return compile_

    made: type[FunctionElement[str]] = type(
        name, (FunctionElement,), {"type": Text(), "name": name, "inherit_cache": True}
    )
    compiles(made, "sqlite")(spelled(sqlite))
    compiles(made, "postgresql")(spelled(postgresql))
    return made


# An aggregate: the group's values as one JSON array, as text ('[]' for none); the reads that
# fold many rows into one fetch use it.
json_list = _engine_function(
    "json_list", "json_group_array({all})", "coalesce(CAST(json_agg({all}) AS text), '[]')"
)
# json_text(column, key): the value of `key` in the JSON object held as text in `column`, as
# text (NULL when absent).
json_text = _engine_function(
    "json_text", "CAST(json_extract({0}, '$.' || {1}) AS TEXT)", "(CAST({0} AS json) ->> {1})"
)
# A JSON array of the given values, to aggregate with json_list or read through json_as_text.
json_row = _engine_function("json_row", "json_array({all})", "json_build_array({all})")
# JSON held as text, as a JSON value inside a json_row (nested, not quoted).
json_value = _engine_function("json_value", "json({0})", "CAST({0} AS json)")
# A json_row read as JSON text (SQLite's already is).
json_as_text = _engine_function("json_as_text", "{0}", "CAST({0} AS text)")
