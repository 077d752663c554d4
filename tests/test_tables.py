"""The tables defined once (`calibration.store.tables`) are the schema the numbered migrations
made, on each engine: columns and their types, nullability and defaults, keys, indexes, checks."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, inspect, text

from calibration import store
from calibration.store import postgres, sqlite, tables
from tests.pg_server import Cluster


def engine_of(url: str | Path) -> Engine:
    return postgres.engine(url) if isinstance(url, str) else sqlite.engine(url)


def schema_of(engine: Engine, *, triggers: bool = True) -> dict[str, Any]:
    """The schema as the engine's catalogue states it (sqlite_master, information_schema)."""
    found = inspect(engine)
    out: dict[str, Any] = {}
    for t in sorted(found.get_table_names()):
        if t == "alembic_version":
            continue
        checks = found.get_check_constraints(t)
        out[t] = {
            "columns": [
                (
                    c["name"],
                    type(c["type"]).__name__,
                    c["nullable"],
                    re.sub(r"::\w+", "", str(c["default"])),
                    # numbered by the engine (PostgreSQL's identity), and whether an id may be given
                    None if "identity" not in c else c["identity"]["always"],
                )
                for c in found.get_columns(t)
            ],
            "primary key": found.get_pk_constraint(t)["constrained_columns"],
            "foreign keys": sorted(
                (tuple(f["constrained_columns"]), f["referred_table"], tuple(f["referred_columns"]))
                for f in found.get_foreign_keys(t)
            ),
            "unique": sorted(tuple(u["column_names"]) for u in found.get_unique_constraints(t)),
            "indexes": sorted(
                (i["name"], tuple(str(c) for c in i["column_names"]), bool(i["unique"]))
                for i in found.get_indexes(t)
            ),
            # SQLite keeps a check's text as written; PostgreSQL rewrites it and names it.
            "checks": sorted(
                " ".join(c["sqltext"].split()) if engine.dialect.name == "sqlite" else c["name"]
                for c in checks
            ),
        }
    if triggers:
        query = (
            "SELECT name FROM sqlite_master WHERE type = 'trigger'"
            if engine.dialect.name == "sqlite"
            else "SELECT DISTINCT trigger_name FROM information_schema.triggers"
        )
        with engine.connect() as conn:
            out["triggers"] = sorted(r[0] for r in conn.execute(text(query)))
            if engine.dialect.name == "postgresql":  # functions and aggregates
                out["routines"] = sorted(r[0] for r in conn.execute(text(_ROUTINES)))
    return out


_ROUTINES = (
    "SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' FROM pg_proc p "
    "WHERE p.pronamespace = CAST(current_schema() AS regnamespace)"
)


def empty_database(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, name: str = "empty"
) -> str | Path:
    """A database with no table at all (PostgreSQL's copied from template0), named `name`."""
    if backend == "sqlite":
        return tmp_path / f"{name}.db"
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    url = cluster.url(f"{name}_{abs(hash(request.node.nodeid))}")
    cluster.create(url, template="template0")
    request.addfinalizer(lambda: cluster.drop_database(url))
    return url


def test_the_tables_are_the_schema_the_migrations_made(
    db_url: str | Path, backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    with store.session(db_url):
        pass
    empty = empty_database(backend, tmp_path, request)
    tables.metadata.create_all(engine_of(empty))
    made = schema_of(engine_of(empty), triggers=False)
    migrated = schema_of(engine_of(db_url), triggers=False)
    assert set(made) == set(migrated)
    for name in migrated:
        assert made[name] == migrated[name], name
