"""What statements built with SQLAlchemy Core need beyond the tables: the engine's own INSERT
(for `ON CONFLICT ... DO UPDATE / DO NOTHING`, which both engines spell alike but SQLAlchemy
builds per dialect), constants written into a statement, and constructs each engine compiles
in its own words (the JSON functions)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from sqlalchemy import (
    ColumnClause,
    ColumnElement,
    FromClause,
    Insert,
    Join,
    Table,
    TableClause,
    Text,
    bindparam,
    column,
    insert,
    literal_column,
    table,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

_T = TypeVar("_T")
Upsert = sqlite.Insert | postgresql.Insert
# LIMIT 1 written into the statement: SQLAlchemy's own limit(1) is a parameter rendered at run
# time, which a statement run once per row of parameters (executemany) may not hold.
ONE: ColumnClause[Any] = literal_column("1")
# Values per IN list, below SQLite's bound on host parameters.
BATCH = 500


def batches(items: Sequence[_T], size: int = BATCH) -> Iterator[list[_T]]:
    """`items` in lists of at most `size`, in order: for statements that take them as an IN list."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def upsert(dialect: str, table: Table) -> Upsert:
    """An INSERT into `table` that can say what a conflict does (`on_conflict_do_update`,
    `on_conflict_do_nothing`, `.excluded`), for the engine named `dialect` (`Database.dialect`)."""
    return postgresql.insert(table) if dialect == "postgresql" else sqlite.insert(table)


@functools.cache
def insert_of(into: TableClause | str, columns: tuple[str, ...]) -> Insert:
    """An INSERT of `columns` into `into` (a table, or a table's name), one bound parameter per
    column named after it; built once per table and columns, for `Database.run_direct_many`
    and `insert_direct`, which the bulk and row-by-row writers run."""
    target = table(into, *(column(c) for c in columns)) if isinstance(into, str) else into
    return insert(target).values({c: bindparam(c) for c in columns})


def staging(name: str, columns: tuple[str, ...]) -> TableClause:
    """A connection-private table of `Database.create_staging` (found before any table of the
    schema by its bare name, on both engines), with its `rowid`, the order rows were written in."""
    return table(name, *(column(c) for c in (*columns, "rowid")))


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
# text_list(value, separator): a group's values as text joined by `separator` (NULL for none).
text_list = _engine_function("text_list", "group_concat({0}, {1})", "string_agg(CAST({0} AS text), {1})")
# json_number(column, key): the value of `key` in the JSON object held as text in `column` when
# it is a number, else NULL (text or anything else counts as none).
json_number = _engine_function(
    "json_number",
    "CASE WHEN json_type({0}, '$.' || {1}) IN ('real', 'integer') THEN json_extract({0}, '$.' || {1}) END",
    "CASE WHEN json_typeof(CAST({0} AS json) -> {1}) = 'number' "
    "THEN CAST(CAST({0} AS json) ->> {1} AS double precision) END",
)


def _sqlite_cross_join(element: Join, compiler: SQLCompiler, **kw: Any) -> str:
    kw["asfrom"] = True
    assert element.onclause is not None
    return (
        f"{compiler.process(element.left, **kw)} CROSS JOIN {compiler.process(element.right, **kw)}"
        f" ON {compiler.process(element.onclause, **kw)}"
    )


# A Join compiled as SQLite's CROSS JOIN there, as a Join elsewhere.
_CrossJoin: type[Join] = type("_CrossJoin", (Join,), {"inherit_cache": True})
compiles(_CrossJoin, "sqlite")(_sqlite_cross_join)


def cross_join(left: FromClause, right: FromClause, on: ColumnElement[bool]) -> Join:
    """An inner join whose tables SQLite's planner must visit in the order written (its CROSS
    JOIN); other engines' planners choose for themselves, so it is a plain JOIN there."""
    return _CrossJoin(left, right, on)
