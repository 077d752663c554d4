"""The store's schema revisions (Alembic), run programmatically on every open.

The numbered migrations (`schema`, m001..m018) made the schema up to this release; from there
Alembic holds it, one revision per change in `versions/`, the first of which (0001) is the
schema at m018. Opening a database:

- new (no table): Alembic creates it, from its first revision on;
- made by the numbered migrations (an earlier release's, at any of them): the ones it lacks are
  applied, then it is stamped with the first revision and Alembic applies the rest;
- Alembic's already (`alembic_version`): the revisions it lacks are applied.

Each runs inside the caller's write transaction: a failure leaves the database as it was.
"""

from __future__ import annotations

import functools
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from ..database import Database
from ..schema import migrations

BASELINE = "0001"  # the schema at m018, where the numbered migrations end
VERSION_TABLE = "alembic_version"
_HERE = Path(__file__).resolve().parent


def _config(db: Database) -> Config:
    config = Config()
    config.set_main_option("script_location", str(_HERE))
    config.attributes["connection"] = db.sa
    return config


@functools.cache
def head() -> str:
    """The newest revision this release knows."""
    config = Config()
    config.set_main_option("script_location", str(_HERE))
    found = ScriptDirectory.from_config(config).get_current_head()
    assert found is not None
    return found


@functools.cache
def known() -> tuple[str, ...]:
    """Every revision this release knows, oldest first."""
    config = Config()
    config.set_main_option("script_location", str(_HERE))
    return tuple(reversed([r.revision for r in ScriptDirectory.from_config(config).walk_revisions()]))


def current(db: Database) -> str | None:
    """The revision the database is at; None before Alembic holds it."""
    return MigrationContext.configure(db.sa).get_current_revision()


def upgrade(db: Database, to: str | None = None) -> None:
    """Bring the database to revision `to` (default: the newest), inside the caller's write
    transaction."""
    to = head() if to is None else to
    names = db.table_names()
    if VERSION_TABLE in names and current(db) == to:
        return
    if VERSION_TABLE not in names and names:
        migrations.apply(db)
        command.stamp(_config(db), BASELINE)
    command.upgrade(_config(db), to)
