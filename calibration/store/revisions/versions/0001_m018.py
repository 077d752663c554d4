"""The schema at m018: the store as the numbered migrations m001..m018 left it, on each engine.

A new database starts here. One the numbered migrations made (an earlier release's) is brought
to m018 by them and stamped with this revision instead (`calibration.store.revisions`), so both
hold the same schema and the same record of the numbered migrations. The statements are the
schema as each engine stores it: SQLite's text as `sqlite_master` holds it, PostgreSQL's as the
numbered migrations left it (BIGINT and DOUBLE PRECISION; ids numbered by a trigger, the largest
plus one; the append-only rule of label_events in two trigger functions; the sum of booleans).

Shipped: this file never changes (tests/test_revisions.py holds its hash); a change of the
schema is a new revision.

Revision ID: 0001
Revises: (none)
"""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

SQLITE = (
    """CREATE TABLE _sqlite_migrations (
                id INTEGER PRIMARY KEY, migration_set TEXT, name TEXT, applied_at TEXT)""",
    """CREATE UNIQUE INDEX idx__sqlite_migrations_migration_set_name ON _sqlite_migrations (migration_set, name)""",  # noqa: E501
    """CREATE TABLE answers (
            id TEXT PRIMARY KEY,
            question TEXT NOT NULL,
            answer TEXT NOT NULL,
            category TEXT,
            metadata TEXT NOT NULL DEFAULT '{}',
            content_hash TEXT NOT NULL,
            holdout INTEGER NOT NULL DEFAULT 0,
            imported_at TEXT NOT NULL
        )""",
    """CREATE INDEX answers_category ON answers(category)""",
    """CREATE TABLE chunks (
            answer_id TEXT NOT NULL REFERENCES answers(id),
            position INTEGER NOT NULL,
            chunk_id TEXT NOT NULL,
            text TEXT NOT NULL,
            source TEXT,
            PRIMARY KEY (answer_id, chunk_id)
        )""",
    """CREATE TABLE claims (
            id INTEGER PRIMARY KEY,
            answer_id TEXT NOT NULL REFERENCES answers(id),
            claim_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            text TEXT NOT NULL,
            UNIQUE (answer_id, claim_id)
        )""",
    """CREATE TABLE judge_runs (
            id INTEGER PRIMARY KEY,
            judge_model TEXT NOT NULL,
            prompt_version TEXT NOT NULL,
            origin TEXT NOT NULL DEFAULT 'import',
            created_at TEXT NOT NULL,
            UNIQUE (judge_model, prompt_version)
        )""",
    """CREATE TABLE judge_verdicts (
            run_id INTEGER NOT NULL REFERENCES judge_runs(id),
            claim_pk INTEGER NOT NULL REFERENCES claims(id),
            verdict TEXT NOT NULL CHECK (verdict IN ('SUPPORTED','CONTRADICTED','UNSUPPORTED')),
            raw_verdict TEXT,
            rationale TEXT,
            evidence TEXT NOT NULL DEFAULT '[]',
            PRIMARY KEY (run_id, claim_pk)
        )""",
    """CREATE INDEX judge_verdicts_claim ON judge_verdicts(claim_pk)""",
    """CREATE TABLE label_events (
            id INTEGER PRIMARY KEY,
            claim_pk INTEGER NOT NULL REFERENCES claims(id),
            reviewer TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN
                ('blind','skip','unclear','keep','judge_right','import','adjudicate')),
            verdict TEXT CHECK (verdict IS NULL OR (verdict IN ('SUPPORTED','CONTRADICTED','UNSUPPORTED'))),
            evidence TEXT NOT NULL DEFAULT '[]',
            note TEXT,
            cycle_id INTEGER,
            judge_run_id INTEGER,
            created_at TEXT NOT NULL
        , duration_ms INTEGER, import_id INTEGER)""",
    """CREATE INDEX label_events_claim ON label_events(claim_pk, reviewer)""",
    """CREATE TABLE human_labels (
            claim_pk INTEGER NOT NULL REFERENCES claims(id),
            reviewer TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('labeled','skipped','unclear')),
            blind_verdict TEXT CHECK (blind_verdict IS NULL OR
                (blind_verdict IN ('SUPPORTED','CONTRADICTED','UNSUPPORTED'))),
            final_verdict TEXT CHECK (final_verdict IS NULL OR
                (final_verdict IN ('SUPPORTED','CONTRADICTED','UNSUPPORTED'))),
            reconciled TEXT CHECK (reconciled IS NULL OR reconciled IN ('keep','judge_right')),
            slip INTEGER NOT NULL DEFAULT 0,
            evidence TEXT NOT NULL DEFAULT '[]',
            note TEXT,
            cycle_id INTEGER,
            blind_at TEXT,
            final_at TEXT,
            updated_at TEXT NOT NULL, duration_ms INTEGER, import_id INTEGER,
            PRIMARY KEY (claim_pk, reviewer)
        )""",
    """CREATE INDEX human_labels_reviewer ON human_labels(reviewer)""",
    """CREATE TABLE adjudications (
            claim_pk INTEGER PRIMARY KEY REFERENCES claims(id),
            verdict TEXT NOT NULL CHECK (verdict IN ('SUPPORTED','CONTRADICTED','UNSUPPORTED')),
            adjudicator TEXT NOT NULL,
            note TEXT,
            created_at TEXT NOT NULL
        )""",
    """CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    """CREATE TABLE cycles (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            judge_run_id INTEGER NOT NULL REFERENCES judge_runs(id),
            strategy TEXT NOT NULL,
            seed INTEGER NOT NULL,
            size INTEGER NOT NULL,
            overlap REAL NOT NULL DEFAULT 0,
            holdout INTEGER NOT NULL DEFAULT 0,
            include_labeled INTEGER NOT NULL DEFAULT 0,
            created_by TEXT,
            created_at TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open','closed')),
            closed_at TEXT,
            snapshot TEXT
        , require_evidence INTEGER NOT NULL DEFAULT 0)""",
    """CREATE TABLE cycle_answers (
            cycle_id INTEGER NOT NULL REFERENCES cycles(id),
            answer_id TEXT NOT NULL REFERENCES answers(id),
            position INTEGER NOT NULL,
            inclusion_prob REAL NOT NULL,
            PRIMARY KEY (cycle_id, answer_id)
        )""",
    """CREATE TABLE assignments (
            cycle_id INTEGER NOT NULL REFERENCES cycles(id),
            answer_id TEXT NOT NULL REFERENCES answers(id),
            reviewer TEXT NOT NULL,
            PRIMARY KEY (cycle_id, answer_id, reviewer)
        )""",
    """CREATE INDEX assignments_reviewer ON assignments(reviewer, cycle_id)""",
    """CREATE TABLE judge_lab_runs (
            run_id INTEGER PRIMARY KEY REFERENCES judge_runs(id),
            template TEXT NOT NULL,
            template_sha256 TEXT NOT NULL,
            base_url TEXT NOT NULL,
            params TEXT NOT NULL DEFAULT '{}',
            scope TEXT NOT NULL,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            total_tokens INTEGER,
            started_at TEXT NOT NULL,
            finished_at TEXT
        )""",
    """CREATE TABLE judge_calls (
            run_id INTEGER NOT NULL REFERENCES judge_runs(id),
            answer_id TEXT NOT NULL REFERENCES answers(id),
            status TEXT NOT NULL CHECK (status IN ('ok','failed')),
            prompt TEXT NOT NULL,
            response TEXT,
            exchanges TEXT NOT NULL DEFAULT '[]',
            attempts INTEGER NOT NULL,
            error TEXT,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            total_tokens INTEGER,
            latency_ms REAL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (run_id, answer_id)
        )""",
    """CREATE INDEX label_events_cycle ON label_events(cycle_id, reviewer)""",
    """CREATE TABLE answer_reveals (
            answer_id TEXT NOT NULL REFERENCES answers(id),
            reviewer TEXT NOT NULL,
            cycle_id INTEGER REFERENCES cycles(id),
            revealed_at TEXT NOT NULL, import_id INTEGER,
            PRIMARY KEY (answer_id, reviewer)
        )""",
    """CREATE TABLE guidelines (
            scope TEXT PRIMARY KEY,
            markdown TEXT NOT NULL,
            author TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )""",
    """CREATE TABLE claim_splits (
            id INTEGER PRIMARY KEY,
            seed INTEGER NOT NULL,
            holdout_share REAL NOT NULL CHECK (holdout_share > 0 AND holdout_share < 1),
            stratify_run_id INTEGER REFERENCES judge_runs(id),
            created_by TEXT,
            created_at TEXT NOT NULL,
            unsealed_by TEXT,
            unsealed_at TEXT,
            unseal_reason TEXT
        )""",
    """CREATE TABLE split_answers (
            answer_id TEXT PRIMARY KEY REFERENCES answers(id),
            split_id INTEGER NOT NULL REFERENCES claim_splits(id),
            part TEXT NOT NULL CHECK (part IN ('tuning','holdout')),
            stratum TEXT NOT NULL,
            assigned_at TEXT NOT NULL
        )""",
    """CREATE INDEX split_answers_part ON split_answers(split_id, part)""",
    """CREATE TABLE judge_lab_examples (
            run_id INTEGER NOT NULL REFERENCES judge_runs(id),
            position INTEGER NOT NULL,
            claim_pk INTEGER NOT NULL REFERENCES claims(id),
            kind TEXT NOT NULL,
            text TEXT NOT NULL,
            PRIMARY KEY (run_id, position)
        )""",
    """CREATE TABLE judge_lab_revisions (
            run_id INTEGER PRIMARY KEY REFERENCES judge_runs(id),
            revises_run_id INTEGER NOT NULL REFERENCES judge_runs(id)
        )""",
    """CREATE TABLE answer_checks (
            answer_id TEXT PRIMARY KEY REFERENCES answers(id),
            question_script TEXT,
            answer_script TEXT,
            script_mismatch INTEGER NOT NULL CHECK (script_mismatch IN (0, 1)),
            cjk_chars INTEGER NOT NULL,
            unexpected_cjk INTEGER NOT NULL CHECK (unexpected_cjk IN (0, 1)),
            check_version INTEGER NOT NULL,
            checked_at TEXT NOT NULL
        )""",
    """CREATE TABLE reference_edits (
            id INTEGER PRIMARY KEY,
            answer_id TEXT NOT NULL REFERENCES answers(id),
            text TEXT NOT NULL,
            edited_by TEXT NOT NULL,
            edited_at TEXT NOT NULL
        )""",
    """CREATE INDEX reference_edits_answer ON reference_edits(answer_id, id)""",
    """CREATE TABLE sign_ins (
            name_key TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            first_at TEXT NOT NULL
        )""",
    """CREATE TABLE reassignments (
            id INTEGER PRIMARY KEY,
            cycle_id INTEGER NOT NULL REFERENCES cycles(id),
            from_reviewer TEXT NOT NULL,
            to_reviewer TEXT NOT NULL,
            answers TEXT NOT NULL DEFAULT '[]',
            reassigned_by TEXT,
            created_at TEXT NOT NULL
        )""",
    """CREATE INDEX reassignments_cycle ON reassignments(cycle_id)""",
    """CREATE TABLE imports (
            id INTEGER PRIMARY KEY,
            status TEXT NOT NULL CHECK (status IN ('publishing','done')),
            source TEXT,
            stamp TEXT NOT NULL UNIQUE,
            new_runs TEXT NOT NULL DEFAULT '[]',
            claim_lo INTEGER,
            claim_hi INTEGER,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            process_start TEXT,
            started_at TEXT NOT NULL,
            finished_at TEXT
        )""",
    """CREATE INDEX imports_status ON imports(status)""",
    """CREATE TABLE cycle_plans (
            cycle_id INTEGER PRIMARY KEY REFERENCES cycles(id),
            goal TEXT NOT NULL CHECK (goal IN ('agreement', 'grounding')),
            plan TEXT NOT NULL
        )""",
    """CREATE TRIGGER label_events_no_delete BEFORE DELETE ON label_events
           WHEN OLD.import_id IS NULL OR NOT EXISTS (
               SELECT 1 FROM imports WHERE id = OLD.import_id AND status = 'publishing')
           BEGIN SELECT RAISE(ABORT, 'label_events is append-only'); END""",
    """CREATE TABLE reviewers (
            name_key TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
            added_at TEXT NOT NULL
        )""",
    """CREATE TABLE reviewer_events (
            id INTEGER PRIMARY KEY,
            at TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('add', 'rename', 'deactivate', 'reactivate')),
            name TEXT NOT NULL,
            new_name TEXT,
            labels_moved INTEGER,
            by TEXT
        )""",
    """CREATE TRIGGER label_events_no_update BEFORE UPDATE ON label_events
           WHEN NOT (NEW.id = OLD.id AND NEW.claim_pk = OLD.claim_pk AND NEW.kind = OLD.kind
                     AND NEW.verdict IS OLD.verdict AND NEW.evidence = OLD.evidence
                     AND NEW.note IS OLD.note AND NEW.cycle_id IS OLD.cycle_id
                     AND NEW.judge_run_id IS OLD.judge_run_id AND NEW.created_at = OLD.created_at
                     AND NEW.duration_ms IS OLD.duration_ms AND NEW.import_id IS OLD.import_id
                     AND EXISTS (SELECT 1 FROM reviewer_events r
                                 WHERE r.kind = 'rename' AND r.new_name = NEW.reviewer))
           BEGIN SELECT RAISE(ABORT, 'label_events is append-only'); END""",
    """CREATE INDEX human_labels_cycle ON human_labels(cycle_id)""",
    """CREATE TABLE reviewer_identities (
            issuer TEXT NOT NULL,
            subject TEXT NOT NULL,
            name_key TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL,
            bound_at TEXT NOT NULL,
            signed_out_iat INTEGER,
            PRIMARY KEY (issuer, subject)
        )""",
)

POSTGRESQL = (
    """CREATE OR REPLACE FUNCTION calibration_next_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id IS NULL THEN
        EXECUTE format('SELECT coalesce(max(id), 0) + 1 FROM %I.%I', TG_TABLE_SCHEMA, TG_TABLE_NAME)
            INTO NEW.id;
    END IF;
    RETURN NEW;
END $$""",
    """CREATE OR REPLACE FUNCTION calibration_count_true(bigint, boolean) RETURNS bigint LANGUAGE sql IMMUTABLE AS 'SELECT $1 + CASE WHEN $2 THEN 1 ELSE 0 END'""",  # noqa: E501
    """CREATE OR REPLACE AGGREGATE sum(boolean) (SFUNC = calibration_count_true, STYPE = bigint, INITCOND = '0')""",  # noqa: E501
    """CREATE TABLE _sqlite_migrations (
    id BIGINT,
    migration_set TEXT,
    name TEXT,
    applied_at TEXT,
    PRIMARY KEY (id)
)""",
    """CREATE UNIQUE INDEX idx__sqlite_migrations_migration_set_name ON _sqlite_migrations (migration_set, name)""",  # noqa: E501
    """CREATE TRIGGER _sqlite_migrations_next_id BEFORE INSERT ON _sqlite_migrations FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",  # noqa: E501
    """CREATE TABLE answers (
    id TEXT,
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    category TEXT,
    metadata TEXT DEFAULT '{}' NOT NULL,
    content_hash TEXT NOT NULL,
    holdout BIGINT DEFAULT 0 NOT NULL,
    imported_at TEXT NOT NULL,
    PRIMARY KEY (id)
)""",
    """CREATE INDEX answers_category ON answers (category)""",
    """CREATE TABLE guidelines (
    scope TEXT,
    markdown TEXT NOT NULL,
    author TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (scope)
)""",
    """CREATE TABLE imports (
    id BIGINT,
    status TEXT NOT NULL,
    source TEXT,
    stamp TEXT NOT NULL,
    new_runs TEXT DEFAULT '[]' NOT NULL,
    claim_lo BIGINT,
    claim_hi BIGINT,
    pid BIGINT NOT NULL,
    host TEXT NOT NULL,
    process_start TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    PRIMARY KEY (id),
    CHECK (status IN ('publishing','done')),
    UNIQUE (stamp)
)""",
    """CREATE INDEX imports_status ON imports (status)""",
    """CREATE TRIGGER imports_next_id BEFORE INSERT ON imports FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",  # noqa: E501
    """CREATE TABLE judge_runs (
    id BIGINT,
    judge_model TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    origin TEXT DEFAULT 'import' NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (id),
    UNIQUE (judge_model, prompt_version)
)""",
    """CREATE TRIGGER judge_runs_next_id BEFORE INSERT ON judge_runs FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",  # noqa: E501
    """CREATE TABLE reviewer_events (
    id BIGINT,
    at TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    new_name TEXT,
    labels_moved BIGINT,
    by TEXT,
    PRIMARY KEY (id),
    CHECK (kind IN ('add', 'rename', 'deactivate', 'reactivate'))
)""",
    """CREATE TRIGGER reviewer_events_next_id BEFORE INSERT ON reviewer_events FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",  # noqa: E501
    """CREATE TABLE reviewer_identities (
    issuer TEXT NOT NULL,
    subject TEXT NOT NULL,
    name_key TEXT NOT NULL,
    name TEXT NOT NULL,
    bound_at TEXT NOT NULL,
    signed_out_iat BIGINT,
    PRIMARY KEY (issuer, subject),
    UNIQUE (name_key)
)""",
    """CREATE TABLE reviewers (
    name_key TEXT,
    name TEXT NOT NULL,
    active BIGINT DEFAULT 1 NOT NULL,
    added_at TEXT NOT NULL,
    PRIMARY KEY (name_key),
    CHECK (active IN (0, 1))
)""",
    """CREATE TABLE settings (
    key TEXT,
    value TEXT NOT NULL,
    PRIMARY KEY (key)
)""",
    """CREATE TABLE sign_ins (
    name_key TEXT,
    name TEXT NOT NULL,
    first_at TEXT NOT NULL,
    PRIMARY KEY (name_key)
)""",
    """CREATE TABLE answer_checks (
    answer_id TEXT,
    question_script TEXT,
    answer_script TEXT,
    script_mismatch BIGINT NOT NULL,
    cjk_chars BIGINT NOT NULL,
    unexpected_cjk BIGINT NOT NULL,
    check_version BIGINT NOT NULL,
    checked_at TEXT NOT NULL,
    PRIMARY KEY (answer_id),
    CHECK (script_mismatch IN (0, 1)),
    CHECK (unexpected_cjk IN (0, 1)),
    FOREIGN KEY(answer_id) REFERENCES answers (id)
)""",
    """CREATE TABLE chunks (
    answer_id TEXT NOT NULL,
    position BIGINT NOT NULL,
    chunk_id TEXT NOT NULL,
    text TEXT NOT NULL,
    source TEXT,
    PRIMARY KEY (answer_id, chunk_id),
    FOREIGN KEY(answer_id) REFERENCES answers (id)
)""",
    """CREATE TABLE claim_splits (
    id BIGINT,
    seed BIGINT NOT NULL,
    holdout_share DOUBLE PRECISION NOT NULL,
    stratify_run_id BIGINT,
    created_by TEXT,
    created_at TEXT NOT NULL,
    unsealed_by TEXT,
    unsealed_at TEXT,
    unseal_reason TEXT,
    PRIMARY KEY (id),
    CHECK (holdout_share > 0 AND holdout_share < 1),
    FOREIGN KEY(stratify_run_id) REFERENCES judge_runs (id)
)""",
    """CREATE TRIGGER claim_splits_next_id BEFORE INSERT ON claim_splits FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",  # noqa: E501
    """CREATE TABLE claims (
    id BIGINT,
    answer_id TEXT NOT NULL,
    claim_id TEXT NOT NULL,
    position BIGINT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (id),
    UNIQUE (answer_id, claim_id),
    FOREIGN KEY(answer_id) REFERENCES answers (id)
)""",
    """CREATE TRIGGER claims_next_id BEFORE INSERT ON claims FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",  # noqa: E501
    """CREATE TABLE cycles (
    id BIGINT,
    name TEXT NOT NULL,
    judge_run_id BIGINT NOT NULL,
    strategy TEXT NOT NULL,
    seed BIGINT NOT NULL,
    size BIGINT NOT NULL,
    overlap DOUBLE PRECISION DEFAULT 0 NOT NULL,
    holdout BIGINT DEFAULT 0 NOT NULL,
    include_labeled BIGINT DEFAULT 0 NOT NULL,
    created_by TEXT,
    created_at TEXT NOT NULL,
    status TEXT DEFAULT 'open' NOT NULL,
    closed_at TEXT,
    snapshot TEXT,
    require_evidence BIGINT DEFAULT 0 NOT NULL,
    PRIMARY KEY (id),
    CHECK (status IN ('open','closed')),
    UNIQUE (name),
    FOREIGN KEY(judge_run_id) REFERENCES judge_runs (id)
)""",
    """CREATE TRIGGER cycles_next_id BEFORE INSERT ON cycles FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",  # noqa: E501
    """CREATE TABLE judge_calls (
    run_id BIGINT NOT NULL,
    answer_id TEXT NOT NULL,
    status TEXT NOT NULL,
    prompt TEXT NOT NULL,
    response TEXT,
    exchanges TEXT DEFAULT '[]' NOT NULL,
    attempts BIGINT NOT NULL,
    error TEXT,
    prompt_tokens BIGINT,
    completion_tokens BIGINT,
    total_tokens BIGINT,
    latency_ms DOUBLE PRECISION,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, answer_id),
    CHECK (status IN ('ok','failed')),
    FOREIGN KEY(run_id) REFERENCES judge_runs (id),
    FOREIGN KEY(answer_id) REFERENCES answers (id)
)""",
    """CREATE TABLE judge_lab_revisions (
    run_id BIGINT,
    revises_run_id BIGINT NOT NULL,
    PRIMARY KEY (run_id),
    FOREIGN KEY(run_id) REFERENCES judge_runs (id),
    FOREIGN KEY(revises_run_id) REFERENCES judge_runs (id)
)""",
    """CREATE TABLE judge_lab_runs (
    run_id BIGINT,
    template TEXT NOT NULL,
    template_sha256 TEXT NOT NULL,
    base_url TEXT NOT NULL,
    params TEXT DEFAULT '{}' NOT NULL,
    scope TEXT NOT NULL,
    prompt_tokens BIGINT,
    completion_tokens BIGINT,
    total_tokens BIGINT,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    PRIMARY KEY (run_id),
    FOREIGN KEY(run_id) REFERENCES judge_runs (id)
)""",
    """CREATE TABLE reference_edits (
    id BIGINT,
    answer_id TEXT NOT NULL,
    text TEXT NOT NULL,
    edited_by TEXT NOT NULL,
    edited_at TEXT NOT NULL,
    PRIMARY KEY (id),
    FOREIGN KEY(answer_id) REFERENCES answers (id)
)""",
    """CREATE INDEX reference_edits_answer ON reference_edits (answer_id, id)""",
    """CREATE TRIGGER reference_edits_next_id BEFORE INSERT ON reference_edits FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",  # noqa: E501
    """CREATE TABLE adjudications (
    claim_pk BIGINT,
    verdict TEXT NOT NULL,
    adjudicator TEXT NOT NULL,
    note TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (claim_pk),
    CHECK (verdict IN ('SUPPORTED','CONTRADICTED','UNSUPPORTED')),
    FOREIGN KEY(claim_pk) REFERENCES claims (id)
)""",
    """CREATE TABLE answer_reveals (
    answer_id TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    cycle_id BIGINT,
    revealed_at TEXT NOT NULL,
    import_id BIGINT,
    PRIMARY KEY (answer_id, reviewer),
    FOREIGN KEY(answer_id) REFERENCES answers (id),
    FOREIGN KEY(cycle_id) REFERENCES cycles (id)
)""",
    """CREATE TABLE assignments (
    cycle_id BIGINT NOT NULL,
    answer_id TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    PRIMARY KEY (cycle_id, answer_id, reviewer),
    FOREIGN KEY(cycle_id) REFERENCES cycles (id),
    FOREIGN KEY(answer_id) REFERENCES answers (id)
)""",
    """CREATE INDEX assignments_reviewer ON assignments (reviewer, cycle_id)""",
    """CREATE TABLE cycle_answers (
    cycle_id BIGINT NOT NULL,
    answer_id TEXT NOT NULL,
    position BIGINT NOT NULL,
    inclusion_prob DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (cycle_id, answer_id),
    FOREIGN KEY(cycle_id) REFERENCES cycles (id),
    FOREIGN KEY(answer_id) REFERENCES answers (id)
)""",
    """CREATE TABLE cycle_plans (
    cycle_id BIGINT,
    goal TEXT NOT NULL,
    plan TEXT NOT NULL,
    PRIMARY KEY (cycle_id),
    CHECK (goal IN ('agreement', 'grounding')),
    FOREIGN KEY(cycle_id) REFERENCES cycles (id)
)""",
    """CREATE TABLE human_labels (
    claim_pk BIGINT NOT NULL,
    reviewer TEXT NOT NULL,
    status TEXT NOT NULL,
    blind_verdict TEXT,
    final_verdict TEXT,
    reconciled TEXT,
    slip BIGINT DEFAULT 0 NOT NULL,
    evidence TEXT DEFAULT '[]' NOT NULL,
    note TEXT,
    cycle_id BIGINT,
    blind_at TEXT,
    final_at TEXT,
    updated_at TEXT NOT NULL,
    duration_ms BIGINT,
    import_id BIGINT,
    PRIMARY KEY (claim_pk, reviewer),
    CHECK (status IN ('labeled','skipped','unclear')),
    CHECK (blind_verdict IS NULL OR (blind_verdict IN ('SUPPORTED','CONTRADICTED','UNSUPPORTED'))),
    CHECK (final_verdict IS NULL OR (final_verdict IN ('SUPPORTED','CONTRADICTED','UNSUPPORTED'))),
    CHECK (reconciled IS NULL OR reconciled IN ('keep','judge_right')),
    FOREIGN KEY(claim_pk) REFERENCES claims (id)
)""",
    """CREATE INDEX human_labels_cycle ON human_labels (cycle_id)""",
    """CREATE INDEX human_labels_reviewer ON human_labels (reviewer)""",
    """CREATE TABLE judge_lab_examples (
    run_id BIGINT NOT NULL,
    position BIGINT NOT NULL,
    claim_pk BIGINT NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (run_id, position),
    FOREIGN KEY(run_id) REFERENCES judge_runs (id),
    FOREIGN KEY(claim_pk) REFERENCES claims (id)
)""",
    """CREATE TABLE judge_verdicts (
    run_id BIGINT NOT NULL,
    claim_pk BIGINT NOT NULL,
    verdict TEXT NOT NULL,
    raw_verdict TEXT,
    rationale TEXT,
    evidence TEXT DEFAULT '[]' NOT NULL,
    PRIMARY KEY (run_id, claim_pk),
    CHECK (verdict IN ('SUPPORTED','CONTRADICTED','UNSUPPORTED')),
    FOREIGN KEY(run_id) REFERENCES judge_runs (id),
    FOREIGN KEY(claim_pk) REFERENCES claims (id)
)""",
    """CREATE INDEX judge_verdicts_claim ON judge_verdicts (claim_pk)""",
    """CREATE TABLE label_events (
    id BIGINT,
    claim_pk BIGINT NOT NULL,
    reviewer TEXT NOT NULL,
    kind TEXT NOT NULL,
    verdict TEXT,
    evidence TEXT DEFAULT '[]' NOT NULL,
    note TEXT,
    cycle_id BIGINT,
    judge_run_id BIGINT,
    created_at TEXT NOT NULL,
    duration_ms BIGINT,
    import_id BIGINT,
    PRIMARY KEY (id),
    CHECK (kind IN ('blind','skip','unclear','keep','judge_right','import','adjudicate')),
    CHECK (verdict IS NULL OR (verdict IN ('SUPPORTED','CONTRADICTED','UNSUPPORTED'))),
    FOREIGN KEY(claim_pk) REFERENCES claims (id)
)""",
    """CREATE INDEX label_events_claim ON label_events (claim_pk, reviewer)""",
    """CREATE INDEX label_events_cycle ON label_events (cycle_id, reviewer)""",
    """CREATE TRIGGER label_events_next_id BEFORE INSERT ON label_events FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",  # noqa: E501
    """CREATE TABLE reassignments (
    id BIGINT,
    cycle_id BIGINT NOT NULL,
    from_reviewer TEXT NOT NULL,
    to_reviewer TEXT NOT NULL,
    answers TEXT DEFAULT '[]' NOT NULL,
    reassigned_by TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (id),
    FOREIGN KEY(cycle_id) REFERENCES cycles (id)
)""",
    """CREATE INDEX reassignments_cycle ON reassignments (cycle_id)""",
    """CREATE TRIGGER reassignments_next_id BEFORE INSERT ON reassignments FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",  # noqa: E501
    """CREATE TABLE split_answers (
    answer_id TEXT,
    split_id BIGINT NOT NULL,
    part TEXT NOT NULL,
    stratum TEXT NOT NULL,
    assigned_at TEXT NOT NULL,
    PRIMARY KEY (answer_id),
    CHECK (part IN ('tuning','holdout')),
    FOREIGN KEY(answer_id) REFERENCES answers (id),
    FOREIGN KEY(split_id) REFERENCES claim_splits (id)
)""",
    """CREATE INDEX split_answers_part ON split_answers (split_id, part)""",
    """CREATE FUNCTION label_events_no_delete_fn() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
            IF OLD.import_id IS NULL OR NOT EXISTS (
                SELECT 1 FROM imports WHERE id = OLD.import_id AND status = 'publishing') THEN
                RAISE EXCEPTION 'label_events is append-only'
                    USING ERRCODE = 'integrity_constraint_violation';
            END IF;
            RETURN OLD;
        END $$""",
    """CREATE TRIGGER label_events_no_delete BEFORE DELETE ON label_events FOR EACH ROW EXECUTE FUNCTION label_events_no_delete_fn()""",  # noqa: E501
    """CREATE FUNCTION label_events_no_update_fn() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
            IF NOT (NEW.id = OLD.id AND NEW.claim_pk = OLD.claim_pk AND NEW.kind = OLD.kind
                    AND NEW.verdict IS NOT DISTINCT FROM OLD.verdict AND NEW.evidence = OLD.evidence
                    AND NEW.note IS NOT DISTINCT FROM OLD.note
                    AND NEW.cycle_id IS NOT DISTINCT FROM OLD.cycle_id
                    AND NEW.judge_run_id IS NOT DISTINCT FROM OLD.judge_run_id
                    AND NEW.created_at = OLD.created_at
                    AND NEW.duration_ms IS NOT DISTINCT FROM OLD.duration_ms
                    AND NEW.import_id IS NOT DISTINCT FROM OLD.import_id
                    AND EXISTS (SELECT 1 FROM reviewer_events r
                                WHERE r.kind = 'rename' AND r.new_name = NEW.reviewer)) THEN
                RAISE EXCEPTION 'label_events is append-only'
                    USING ERRCODE = 'integrity_constraint_violation';
            END IF;
            RETURN NEW;
        END $$""",
    """CREATE TRIGGER label_events_no_update BEFORE UPDATE ON label_events FOR EACH ROW EXECUTE FUNCTION label_events_no_update_fn()""",  # noqa: E501
)

# The numbered migrations this schema holds, recorded as applied (backups name them).
NUMBERED = (
    "m001_create_answers",
    "m002_create_judge_runs",
    "m003_create_labels",
    "m004_create_cycles",
    "m005_judge_lab",
    "m006_index_label_events_cycle",
    "m007_review_day",
    "m008_tuning_holdout",
    "m009_answer_checks",
    "m010_security",
    "m011_imports",
    "m012_imported_labels_commit",
    "m013_cycle_plans",
    "m014_label_import_marker",
    "m015_reviewer_roster",
    "m016_cycle_requires_evidence",
    "m017_import_commit_in_python",
    "m018_reviewer_identities",
)


def upgrade() -> None:
    bind = op.get_bind()
    for sql in POSTGRESQL if bind.dialect.name == "postgresql" else SQLITE:
        # As written: no parameters, so a `%` is the function body's, not a placeholder.
        bind.exec_driver_sql(sql, execution_options={"no_parameters": True})
    at = str(datetime.now(UTC))
    for name in NUMBERED:
        bind.exec_driver_sql(
            "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
            f"VALUES ('calibration', '{name}', '{at}')"
        )


def downgrade() -> None:
    raise NotImplementedError("the first revision is not undone: restore a backup instead")
