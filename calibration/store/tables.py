"""Every table of the store, defined once: SQLAlchemy Core metadata, the schema at the newest revision.

Statements are built from these tables and compiled for each engine. The types are the ones the
shipped migrations gave each engine: SQLite's INTEGER (so that `id INTEGER PRIMARY KEY` stays the
rowid) and REAL; PostgreSQL's BIGINT and DOUBLE PRECISION. Flags are integers (0/1) and JSON is
text, on both engines, as the migrations wrote them. `tests/test_tables.py` compares this
metadata with a migrated database on both engines.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    Double,
    ForeignKey,
    Identity,
    Index,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects import sqlite
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.schema import CreateColumn
from sqlalchemy.sql.compiler import DDLCompiler
from sqlalchemy.types import TypeEngine

metadata = MetaData()

# A one-column primary key is declared as the migrations declared it, without NOT NULL: SQLite
# then keeps its own rule for it (an INTEGER one is the rowid); PostgreSQL's is NOT NULL anyway.

Int: TypeEngine[int] = BigInteger().with_variant(sqlite.INTEGER(), "sqlite")
Real: TypeEngine[float] = Double().with_variant(sqlite.REAL(), "sqlite")
VERDICTS = "('SUPPORTED','CONTRADICTED','UNSUPPORTED')"
ZERO = text("0")
EMPTY_LIST = text("'[]'")


def _numbered_id() -> Column[int]:
    """`id INTEGER PRIMARY KEY`: SQLite's rowid; on PostgreSQL a BIGINT identity column (by
    default, so a restore writes the ids it holds; revision 0002)."""
    return Column("id", Int, Identity(), primary_key=True, nullable=True)


def _identity_column(element: CreateColumn, compiler: DDLCompiler, **kw: Any) -> str | None:
    # Declared nullable for SQLite's rule (above); an identity column is NOT NULL by itself, and
    # PostgreSQL refuses one declared NULL.
    spec: str | None = compiler.visit_create_column(element, **kw)  # type: ignore[no-untyped-call]
    return spec.removesuffix(" NULL") if spec and element.element.identity is not None else spec


compiles(CreateColumn, "postgresql")(_identity_column)


def _verdict(col: str, *, nullable: bool) -> CheckConstraint:
    rule = f"{col} IN {VERDICTS}"
    return CheckConstraint(f"{col} IS NULL OR ({rule})" if nullable else rule)


def _flag(col: str) -> CheckConstraint:
    return CheckConstraint(f"{col} IN (0, 1)")


migrations_record = Table(
    "_sqlite_migrations",
    metadata,
    _numbered_id(),
    Column("migration_set", Text),
    Column("name", Text),
    Column("applied_at", Text),
    Index("idx__sqlite_migrations_migration_set_name", "migration_set", "name", unique=True),
)

answers = Table(
    "answers",
    metadata,
    Column("id", Text, primary_key=True, nullable=True),
    Column("question", Text, nullable=False),
    Column("answer", Text, nullable=False),
    Column("category", Text),
    Column("metadata", Text, nullable=False, server_default=text("'{}'")),
    Column("content_hash", Text, nullable=False),
    Column("holdout", Int, nullable=False, server_default=ZERO),
    Column("imported_at", Text, nullable=False),
    Index("answers_category", "category"),
)

chunks = Table(
    "chunks",
    metadata,
    Column("answer_id", Text, ForeignKey("answers.id"), nullable=False),
    Column("position", Int, nullable=False),
    Column("chunk_id", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("source", Text),
    PrimaryKeyConstraint("answer_id", "chunk_id"),
)

claims = Table(
    "claims",
    metadata,
    _numbered_id(),
    Column("answer_id", Text, ForeignKey("answers.id"), nullable=False),
    Column("claim_id", Text, nullable=False),
    Column("position", Int, nullable=False),
    Column("text", Text, nullable=False),
    UniqueConstraint("answer_id", "claim_id"),
)

judge_runs = Table(
    "judge_runs",
    metadata,
    _numbered_id(),
    Column("judge_model", Text, nullable=False),
    Column("prompt_version", Text, nullable=False),
    Column("origin", Text, nullable=False, server_default=text("'import'")),
    Column("created_at", Text, nullable=False),
    UniqueConstraint("judge_model", "prompt_version"),
)

judge_verdicts = Table(
    "judge_verdicts",
    metadata,
    Column("run_id", Int, ForeignKey("judge_runs.id"), nullable=False),
    Column("claim_pk", Int, ForeignKey("claims.id"), nullable=False),
    Column("verdict", Text, nullable=False),
    Column("raw_verdict", Text),
    Column("rationale", Text),
    Column("evidence", Text, nullable=False, server_default=EMPTY_LIST),
    PrimaryKeyConstraint("run_id", "claim_pk"),
    _verdict("verdict", nullable=False),
    Index("judge_verdicts_claim", "claim_pk"),
)

label_events = Table(
    "label_events",
    metadata,
    _numbered_id(),
    Column("claim_pk", Int, ForeignKey("claims.id"), nullable=False),
    Column("reviewer", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("verdict", Text),
    Column("evidence", Text, nullable=False, server_default=EMPTY_LIST),
    Column("note", Text),
    Column("cycle_id", Int),
    Column("judge_run_id", Int),
    Column("created_at", Text, nullable=False),
    Column("duration_ms", Int),
    Column("import_id", Int),
    CheckConstraint(
        "kind IN ('blind','skip','unclear','keep','judge_right','import','adjudicate')",
    ),
    _verdict("verdict", nullable=True),
    Index("label_events_claim", "claim_pk", "reviewer"),
    Index("label_events_cycle", "cycle_id", "reviewer"),
)

human_labels = Table(
    "human_labels",
    metadata,
    Column("claim_pk", Int, ForeignKey("claims.id"), nullable=False),
    Column("reviewer", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("blind_verdict", Text),
    Column("final_verdict", Text),
    Column("reconciled", Text),
    Column("slip", Int, nullable=False, server_default=ZERO),
    Column("evidence", Text, nullable=False, server_default=EMPTY_LIST),
    Column("note", Text),
    Column("cycle_id", Int),
    Column("blind_at", Text),
    Column("final_at", Text),
    Column("updated_at", Text, nullable=False),
    Column("duration_ms", Int),
    Column("import_id", Int),
    PrimaryKeyConstraint("claim_pk", "reviewer"),
    CheckConstraint("status IN ('labeled','skipped','unclear')"),
    _verdict("blind_verdict", nullable=True),
    _verdict("final_verdict", nullable=True),
    CheckConstraint("reconciled IS NULL OR reconciled IN ('keep','judge_right')"),
    Index("human_labels_reviewer", "reviewer"),
    Index("human_labels_cycle", "cycle_id"),
)

adjudications = Table(
    "adjudications",
    metadata,
    Column("claim_pk", Int, ForeignKey("claims.id"), primary_key=True, nullable=True, autoincrement=False),
    Column("verdict", Text, nullable=False),
    Column("adjudicator", Text, nullable=False),
    Column("note", Text),
    Column("created_at", Text, nullable=False),
    _verdict("verdict", nullable=False),
)

settings = Table(
    "settings",
    metadata,
    Column("key", Text, primary_key=True, nullable=True),
    Column("value", Text, nullable=False),
)

cycles = Table(
    "cycles",
    metadata,
    _numbered_id(),
    Column("name", Text, nullable=False, unique=True),
    Column("judge_run_id", Int, ForeignKey("judge_runs.id"), nullable=False),
    Column("strategy", Text, nullable=False),
    Column("seed", Int, nullable=False),
    Column("size", Int, nullable=False),
    Column("overlap", Real, nullable=False, server_default=ZERO),
    Column("holdout", Int, nullable=False, server_default=ZERO),
    Column("include_labeled", Int, nullable=False, server_default=ZERO),
    Column("created_by", Text),
    Column("created_at", Text, nullable=False),
    Column("status", Text, nullable=False, server_default=text("'open'")),
    Column("closed_at", Text),
    Column("snapshot", Text),
    Column("require_evidence", Int, nullable=False, server_default=ZERO),
    CheckConstraint("status IN ('open','closed')"),
)

cycle_answers = Table(
    "cycle_answers",
    metadata,
    Column("cycle_id", Int, ForeignKey("cycles.id"), nullable=False),
    Column("answer_id", Text, ForeignKey("answers.id"), nullable=False),
    Column("position", Int, nullable=False),
    Column("inclusion_prob", Real, nullable=False),
    PrimaryKeyConstraint("cycle_id", "answer_id"),
)

assignments = Table(
    "assignments",
    metadata,
    Column("cycle_id", Int, ForeignKey("cycles.id"), nullable=False),
    Column("answer_id", Text, ForeignKey("answers.id"), nullable=False),
    Column("reviewer", Text, nullable=False),
    PrimaryKeyConstraint("cycle_id", "answer_id", "reviewer"),
    Index("assignments_reviewer", "reviewer", "cycle_id"),
)

judge_lab_runs = Table(
    "judge_lab_runs",
    metadata,
    Column("run_id", Int, ForeignKey("judge_runs.id"), primary_key=True, nullable=True, autoincrement=False),
    Column("template", Text, nullable=False),
    Column("template_sha256", Text, nullable=False),
    Column("base_url", Text, nullable=False),
    Column("params", Text, nullable=False, server_default=text("'{}'")),
    Column("scope", Text, nullable=False),
    Column("prompt_tokens", Int),
    Column("completion_tokens", Int),
    Column("total_tokens", Int),
    Column("started_at", Text, nullable=False),
    Column("finished_at", Text),
)

judge_calls = Table(
    "judge_calls",
    metadata,
    Column("run_id", Int, ForeignKey("judge_runs.id"), nullable=False),
    Column("answer_id", Text, ForeignKey("answers.id"), nullable=False),
    Column("status", Text, nullable=False),
    Column("prompt", Text, nullable=False),
    Column("response", Text),
    Column("exchanges", Text, nullable=False, server_default=EMPTY_LIST),
    Column("attempts", Int, nullable=False),
    Column("error", Text),
    Column("prompt_tokens", Int),
    Column("completion_tokens", Int),
    Column("total_tokens", Int),
    Column("latency_ms", Real),
    Column("created_at", Text, nullable=False),
    PrimaryKeyConstraint("run_id", "answer_id"),
    CheckConstraint("status IN ('ok','failed')"),
)

answer_reveals = Table(
    "answer_reveals",
    metadata,
    Column("answer_id", Text, ForeignKey("answers.id"), nullable=False),
    Column("reviewer", Text, nullable=False),
    Column("cycle_id", Int, ForeignKey("cycles.id")),
    Column("revealed_at", Text, nullable=False),
    Column("import_id", Int),
    PrimaryKeyConstraint("answer_id", "reviewer"),
)

guidelines = Table(
    "guidelines",
    metadata,
    Column("scope", Text, primary_key=True, nullable=True),
    Column("markdown", Text, nullable=False),
    Column("author", Text, nullable=False),
    Column("updated_at", Text, nullable=False),
)

claim_splits = Table(
    "claim_splits",
    metadata,
    _numbered_id(),
    Column("seed", Int, nullable=False),
    Column("holdout_share", Real, nullable=False),
    Column("stratify_run_id", Int, ForeignKey("judge_runs.id")),
    Column("created_by", Text),
    Column("created_at", Text, nullable=False),
    Column("unsealed_by", Text),
    Column("unsealed_at", Text),
    Column("unseal_reason", Text),
    CheckConstraint("holdout_share > 0 AND holdout_share < 1"),
)

split_answers = Table(
    "split_answers",
    metadata,
    Column("answer_id", Text, ForeignKey("answers.id"), primary_key=True, nullable=True),
    Column("split_id", Int, ForeignKey("claim_splits.id"), nullable=False),
    Column("part", Text, nullable=False),
    Column("stratum", Text, nullable=False),
    Column("assigned_at", Text, nullable=False),
    CheckConstraint("part IN ('tuning','holdout')"),
    Index("split_answers_part", "split_id", "part"),
)

judge_lab_examples = Table(
    "judge_lab_examples",
    metadata,
    Column("run_id", Int, ForeignKey("judge_runs.id"), nullable=False),
    Column("position", Int, nullable=False),
    Column("claim_pk", Int, ForeignKey("claims.id"), nullable=False),
    Column("kind", Text, nullable=False),
    Column("text", Text, nullable=False),
    PrimaryKeyConstraint("run_id", "position"),
)

judge_lab_revisions = Table(
    "judge_lab_revisions",
    metadata,
    Column("run_id", Int, ForeignKey("judge_runs.id"), primary_key=True, nullable=True, autoincrement=False),
    Column("revises_run_id", Int, ForeignKey("judge_runs.id"), nullable=False),
)

answer_checks = Table(
    "answer_checks",
    metadata,
    Column("answer_id", Text, ForeignKey("answers.id"), primary_key=True, nullable=True),
    Column("question_script", Text),
    Column("answer_script", Text),
    Column("script_mismatch", Int, nullable=False),
    Column("cjk_chars", Int, nullable=False),
    Column("unexpected_cjk", Int, nullable=False),
    Column("check_version", Int, nullable=False),
    Column("checked_at", Text, nullable=False),
    _flag("script_mismatch"),
    _flag("unexpected_cjk"),
)

reference_edits = Table(
    "reference_edits",
    metadata,
    _numbered_id(),
    Column("answer_id", Text, ForeignKey("answers.id"), nullable=False),
    Column("text", Text, nullable=False),
    Column("edited_by", Text, nullable=False),
    Column("edited_at", Text, nullable=False),
    Index("reference_edits_answer", "answer_id", "id"),
)

sign_ins = Table(
    "sign_ins",
    metadata,
    Column("name_key", Text, primary_key=True, nullable=True),
    Column("name", Text, nullable=False),
    Column("first_at", Text, nullable=False),
)

reassignments = Table(
    "reassignments",
    metadata,
    _numbered_id(),
    Column("cycle_id", Int, ForeignKey("cycles.id"), nullable=False),
    Column("from_reviewer", Text, nullable=False),
    Column("to_reviewer", Text, nullable=False),
    Column("answers", Text, nullable=False, server_default=EMPTY_LIST),
    Column("reassigned_by", Text),
    Column("created_at", Text, nullable=False),
    Index("reassignments_cycle", "cycle_id"),
)

imports = Table(
    "imports",
    metadata,
    _numbered_id(),
    Column("status", Text, nullable=False),
    Column("source", Text),
    Column("stamp", Text, nullable=False, unique=True),
    Column("new_runs", Text, nullable=False, server_default=EMPTY_LIST),
    Column("claim_lo", Int),
    Column("claim_hi", Int),
    Column("pid", Int, nullable=False),
    Column("host", Text, nullable=False),
    Column("process_start", Text),
    Column("started_at", Text, nullable=False),
    Column("finished_at", Text),
    CheckConstraint("status IN ('publishing','done')"),
    Index("imports_status", "status"),
)

cycle_plans = Table(
    "cycle_plans",
    metadata,
    Column("cycle_id", Int, ForeignKey("cycles.id"), primary_key=True, nullable=True, autoincrement=False),
    Column("goal", Text, nullable=False),
    Column("plan", Text, nullable=False),
    CheckConstraint("goal IN ('agreement', 'grounding')"),
)

reviewers = Table(
    "reviewers",
    metadata,
    Column("name_key", Text, primary_key=True, nullable=True),
    Column("name", Text, nullable=False),
    Column("active", Int, nullable=False, server_default=text("1")),
    Column("added_at", Text, nullable=False),
    _flag("active"),
)

reviewer_events = Table(
    "reviewer_events",
    metadata,
    _numbered_id(),
    Column("at", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("new_name", Text),
    Column("labels_moved", Int),
    Column("by", Text),
    CheckConstraint("kind IN ('add', 'rename', 'deactivate', 'reactivate')"),
)

reviewer_identities = Table(
    "reviewer_identities",
    metadata,
    Column("issuer", Text, nullable=False),
    Column("subject", Text, nullable=False),
    Column("name_key", Text, nullable=False, unique=True),
    Column("name", Text, nullable=False),
    Column("bound_at", Text, nullable=False),
    Column("signed_out_iat", Int),
    PrimaryKeyConstraint("issuer", "subject"),
)

labeling_closures = Table(
    "labeling_closures",
    metadata,
    Column("run_id", Int, ForeignKey("judge_runs.id"), primary_key=True, nullable=True, autoincrement=False),
    Column("closed_by", Text, nullable=False),
    Column("closed_at", Text, nullable=False),
    Column("reading", Text, nullable=False),
)

# The tables with an `id INTEGER PRIMARY KEY` the store numbers (SQLite's rowid; on PostgreSQL
# an identity column, whose sequence must be moved past ids written as they were).
NUMBERED = tuple(
    t.name
    for t in metadata.sorted_tables
    if "id" in t.c and t.c.id.primary_key and t.c.id.type.python_type is int
)
