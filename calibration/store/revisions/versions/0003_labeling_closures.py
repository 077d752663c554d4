"""Labeling of a judge run can be closed: who closed it, when, and the final reading taken then.

A lead closes labeling for a run once (one way): from then on no cycle is drawn from it, and the
run's decision is the final fixed-sample reading taken at closing (`reading`, JSON: the final
reading's intervals and the labels they were read from), beside the running rule. One row per
closed run; a run without a row is open.

Both engines: one new table, nothing else changes.

Shipped: this file never changes (tests/test_revisions.py holds its hash).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

SQLITE = """CREATE TABLE labeling_closures (
            run_id INTEGER PRIMARY KEY REFERENCES judge_runs(id),
            closed_by TEXT NOT NULL,
            closed_at TEXT NOT NULL,
            reading TEXT NOT NULL
        )"""

POSTGRESQL = """CREATE TABLE labeling_closures (
    run_id BIGINT,
    closed_by TEXT NOT NULL,
    closed_at TEXT NOT NULL,
    reading TEXT NOT NULL,
    PRIMARY KEY (run_id),
    FOREIGN KEY(run_id) REFERENCES judge_runs (id)
)"""


def upgrade() -> None:
    bind = op.get_bind()
    bind.exec_driver_sql(POSTGRESQL if bind.dialect.name == "postgresql" else SQLITE)


def downgrade() -> None:
    raise NotImplementedError("a revision is not undone: restore a backup made before it instead")
