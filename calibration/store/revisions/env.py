"""Alembic's environment for the store, run by `calibration.store.revisions` (never by a command
line, so no alembic.ini): on the connection handed over in `config.attributes["connection"]`,
inside that connection's write transaction, which commits the revisions and their record at once.
"""

from __future__ import annotations

from alembic import context

from calibration.store.tables import metadata

context.configure(connection=context.config.attributes["connection"], target_metadata=metadata)
with context.begin_transaction():
    context.run_migrations()
