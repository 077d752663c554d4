"""The numbered migrations (`schema`) as PostgreSQL runs them: static text, written once.

SQLite runs each migration's own text. PostgreSQL runs the statements below instead, which are
what that text meant on PostgreSQL when the numbered migrations were its schema too: 64-bit
INTEGER, DOUBLE PRECISION for REAL, `id INTEGER PRIMARY KEY` numbered by a trigger (the largest
plus one), the append-only rule of label_events in trigger functions, `INSERT OR IGNORE` as
`ON CONFLICT DO NOTHING`, and none of m012's triggers (their rule lives in Python since m017).
`PRELUDE` runs first on every database the numbered migrations touch: what those statements
rely on, and the record of the migrations.

Only a database made by the numbered migrations runs these (an earlier release's; a new one
starts at the first Alembic revision, whose text holds the same schema). Frozen like the
migrations themselves: a shipped statement never changes.
"""

# ruff: noqa: E501

PRELUDE = (
    """CREATE OR REPLACE FUNCTION calibration_next_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id IS NULL THEN
        EXECUTE format('SELECT coalesce(max(id), 0) + 1 FROM %I.%I', TG_TABLE_SCHEMA, TG_TABLE_NAME)
            INTO NEW.id;
    END IF;
    RETURN NEW;
END $$""",
    """CREATE OR REPLACE FUNCTION calibration_count_true(bigint, boolean) RETURNS bigint LANGUAGE sql IMMUTABLE AS 'SELECT $1 + CASE WHEN $2 THEN 1 ELSE 0 END'""",
    """CREATE OR REPLACE AGGREGATE sum(boolean) (SFUNC = calibration_count_true, STYPE = bigint, INITCOND = '0')""",
    """CREATE TABLE IF NOT EXISTS _sqlite_migrations (
                id BIGINT PRIMARY KEY, migration_set TEXT, name TEXT, applied_at TEXT)""",
    """CREATE OR REPLACE TRIGGER _sqlite_migrations_next_id BEFORE INSERT ON _sqlite_migrations FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",
    """CREATE UNIQUE INDEX IF NOT EXISTS idx__sqlite_migrations_migration_set_name ON _sqlite_migrations (migration_set, name)""",
)

STEPS: dict[str, tuple[str, ...]] = {
    "m001_create_answers": (
        """CREATE TABLE answers (
            id TEXT PRIMARY KEY,
            question TEXT NOT NULL,
            answer TEXT NOT NULL,
            category TEXT,
            metadata TEXT NOT NULL DEFAULT '{}',
            content_hash TEXT NOT NULL,
            holdout BIGINT NOT NULL DEFAULT 0,
            imported_at TEXT NOT NULL
        )""",
        """CREATE INDEX answers_category ON answers(category)""",
        """CREATE TABLE chunks (
            answer_id TEXT NOT NULL REFERENCES answers(id),
            position BIGINT NOT NULL,
            chunk_id TEXT NOT NULL,
            text TEXT NOT NULL,
            source TEXT,
            PRIMARY KEY (answer_id, chunk_id)
        )""",
        """CREATE TABLE claims (
            id BIGINT PRIMARY KEY,
            answer_id TEXT NOT NULL REFERENCES answers(id),
            claim_id TEXT NOT NULL,
            position BIGINT NOT NULL,
            text TEXT NOT NULL,
            UNIQUE (answer_id, claim_id)
        )""",
        """CREATE OR REPLACE TRIGGER claims_next_id BEFORE INSERT ON claims FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",
    ),
    "m002_create_judge_runs": (
        """CREATE TABLE judge_runs (
            id BIGINT PRIMARY KEY,
            judge_model TEXT NOT NULL,
            prompt_version TEXT NOT NULL,
            origin TEXT NOT NULL DEFAULT 'import',
            created_at TEXT NOT NULL,
            UNIQUE (judge_model, prompt_version)
        )""",
        """CREATE OR REPLACE TRIGGER judge_runs_next_id BEFORE INSERT ON judge_runs FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",
        """CREATE TABLE judge_verdicts (
            run_id BIGINT NOT NULL REFERENCES judge_runs(id),
            claim_pk BIGINT NOT NULL REFERENCES claims(id),
            verdict TEXT NOT NULL CHECK (verdict IN ('SUPPORTED','CONTRADICTED','UNSUPPORTED')),
            raw_verdict TEXT,
            rationale TEXT,
            evidence TEXT NOT NULL DEFAULT '[]',
            PRIMARY KEY (run_id, claim_pk)
        )""",
        """CREATE INDEX judge_verdicts_claim ON judge_verdicts(claim_pk)""",
    ),
    "m003_create_labels": (
        """CREATE TABLE label_events (
            id BIGINT PRIMARY KEY,
            claim_pk BIGINT NOT NULL REFERENCES claims(id),
            reviewer TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN
                ('blind','skip','unclear','keep','judge_right','import','adjudicate')),
            verdict TEXT CHECK (verdict IS NULL OR (verdict IN ('SUPPORTED','CONTRADICTED','UNSUPPORTED'))),
            evidence TEXT NOT NULL DEFAULT '[]',
            note TEXT,
            cycle_id BIGINT,
            judge_run_id BIGINT,
            created_at TEXT NOT NULL
        )""",
        """CREATE OR REPLACE TRIGGER label_events_next_id BEFORE INSERT ON label_events FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",
        """CREATE INDEX label_events_claim ON label_events(claim_pk, reviewer)""",
        """CREATE OR REPLACE FUNCTION label_events_no_update_fn() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'label_events is append-only' USING ERRCODE = 'integrity_constraint_violation'; END $$""",
        """CREATE OR REPLACE TRIGGER label_events_no_update BEFORE UPDATE ON label_events FOR EACH ROW EXECUTE FUNCTION label_events_no_update_fn()""",
        """CREATE OR REPLACE FUNCTION label_events_no_delete_fn() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'label_events is append-only' USING ERRCODE = 'integrity_constraint_violation'; END $$""",
        """CREATE OR REPLACE TRIGGER label_events_no_delete BEFORE DELETE ON label_events FOR EACH ROW EXECUTE FUNCTION label_events_no_delete_fn()""",
        """CREATE TABLE human_labels (
            claim_pk BIGINT NOT NULL REFERENCES claims(id),
            reviewer TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('labeled','skipped','unclear')),
            blind_verdict TEXT CHECK (blind_verdict IS NULL OR
                (blind_verdict IN ('SUPPORTED','CONTRADICTED','UNSUPPORTED'))),
            final_verdict TEXT CHECK (final_verdict IS NULL OR
                (final_verdict IN ('SUPPORTED','CONTRADICTED','UNSUPPORTED'))),
            reconciled TEXT CHECK (reconciled IS NULL OR reconciled IN ('keep','judge_right')),
            slip BIGINT NOT NULL DEFAULT 0,
            evidence TEXT NOT NULL DEFAULT '[]',
            note TEXT,
            cycle_id BIGINT,
            blind_at TEXT,
            final_at TEXT,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (claim_pk, reviewer)
        )""",
        """CREATE INDEX human_labels_reviewer ON human_labels(reviewer)""",
        """CREATE TABLE adjudications (
            claim_pk BIGINT PRIMARY KEY REFERENCES claims(id),
            verdict TEXT NOT NULL CHECK (verdict IN ('SUPPORTED','CONTRADICTED','UNSUPPORTED')),
            adjudicator TEXT NOT NULL,
            note TEXT,
            created_at TEXT NOT NULL
        )""",
        """CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    ),
    "m004_create_cycles": (
        """CREATE TABLE cycles (
            id BIGINT PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            judge_run_id BIGINT NOT NULL REFERENCES judge_runs(id),
            strategy TEXT NOT NULL,
            seed BIGINT NOT NULL,
            size BIGINT NOT NULL,
            overlap DOUBLE PRECISION NOT NULL DEFAULT 0,
            holdout BIGINT NOT NULL DEFAULT 0,
            include_labeled BIGINT NOT NULL DEFAULT 0,
            created_by TEXT,
            created_at TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open','closed')),
            closed_at TEXT,
            snapshot TEXT
        )""",
        """CREATE OR REPLACE TRIGGER cycles_next_id BEFORE INSERT ON cycles FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",
        """CREATE TABLE cycle_answers (
            cycle_id BIGINT NOT NULL REFERENCES cycles(id),
            answer_id TEXT NOT NULL REFERENCES answers(id),
            position BIGINT NOT NULL,
            inclusion_prob DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (cycle_id, answer_id)
        )""",
        """CREATE TABLE assignments (
            cycle_id BIGINT NOT NULL REFERENCES cycles(id),
            answer_id TEXT NOT NULL REFERENCES answers(id),
            reviewer TEXT NOT NULL,
            PRIMARY KEY (cycle_id, answer_id, reviewer)
        )""",
        """CREATE INDEX assignments_reviewer ON assignments(reviewer, cycle_id)""",
    ),
    "m005_judge_lab": (
        """CREATE TABLE judge_lab_runs (
            run_id BIGINT PRIMARY KEY REFERENCES judge_runs(id),
            template TEXT NOT NULL,
            template_sha256 TEXT NOT NULL,
            base_url TEXT NOT NULL,
            params TEXT NOT NULL DEFAULT '{}',
            scope TEXT NOT NULL,
            prompt_tokens BIGINT,
            completion_tokens BIGINT,
            total_tokens BIGINT,
            started_at TEXT NOT NULL,
            finished_at TEXT
        )""",
        """CREATE TABLE judge_calls (
            run_id BIGINT NOT NULL REFERENCES judge_runs(id),
            answer_id TEXT NOT NULL REFERENCES answers(id),
            status TEXT NOT NULL CHECK (status IN ('ok','failed')),
            prompt TEXT NOT NULL,
            response TEXT,
            exchanges TEXT NOT NULL DEFAULT '[]',
            attempts BIGINT NOT NULL,
            error TEXT,
            prompt_tokens BIGINT,
            completion_tokens BIGINT,
            total_tokens BIGINT,
            latency_ms DOUBLE PRECISION,
            created_at TEXT NOT NULL,
            PRIMARY KEY (run_id, answer_id)
        )""",
    ),
    "m006_index_label_events_cycle": (
        """CREATE INDEX label_events_cycle ON label_events(cycle_id, reviewer)""",
    ),
    "m007_review_day": (
        """CREATE TABLE answer_reveals (
            answer_id TEXT NOT NULL REFERENCES answers(id),
            reviewer TEXT NOT NULL,
            cycle_id BIGINT REFERENCES cycles(id),
            revealed_at TEXT NOT NULL,
            PRIMARY KEY (answer_id, reviewer)
        )""",
        """INSERT INTO answer_reveals (answer_id, reviewer, cycle_id, revealed_at)
           SELECT c.answer_id, h.reviewer, NULL, max(h.updated_at)
           FROM claims c JOIN human_labels h ON h.claim_pk = c.id
           WHERE (h.status = 'labeled' AND h.blind_verdict IS NOT NULL) OR h.status = 'unclear'
           GROUP BY c.answer_id, h.reviewer
           HAVING count(*) = (SELECT count(*) FROM claims c2 WHERE c2.answer_id = c.answer_id)""",
        """ALTER TABLE label_events ADD COLUMN duration_ms BIGINT""",
        """ALTER TABLE human_labels ADD COLUMN duration_ms BIGINT""",
        """CREATE TABLE guidelines (
            scope TEXT PRIMARY KEY,
            markdown TEXT NOT NULL,
            author TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )""",
    ),
    "m008_tuning_holdout": (
        """CREATE TABLE claim_splits (
            id BIGINT PRIMARY KEY,
            seed BIGINT NOT NULL,
            holdout_share DOUBLE PRECISION NOT NULL CHECK (holdout_share > 0 AND holdout_share < 1),
            stratify_run_id BIGINT REFERENCES judge_runs(id),
            created_by TEXT,
            created_at TEXT NOT NULL,
            unsealed_by TEXT,
            unsealed_at TEXT,
            unseal_reason TEXT
        )""",
        """CREATE OR REPLACE TRIGGER claim_splits_next_id BEFORE INSERT ON claim_splits FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",
        """CREATE TABLE split_answers (
            answer_id TEXT PRIMARY KEY REFERENCES answers(id),
            split_id BIGINT NOT NULL REFERENCES claim_splits(id),
            part TEXT NOT NULL CHECK (part IN ('tuning','holdout')),
            stratum TEXT NOT NULL,
            assigned_at TEXT NOT NULL
        )""",
        """CREATE INDEX split_answers_part ON split_answers(split_id, part)""",
        """CREATE TABLE judge_lab_examples (
            run_id BIGINT NOT NULL REFERENCES judge_runs(id),
            position BIGINT NOT NULL,
            claim_pk BIGINT NOT NULL REFERENCES claims(id),
            kind TEXT NOT NULL,
            text TEXT NOT NULL,
            PRIMARY KEY (run_id, position)
        )""",
        """CREATE TABLE judge_lab_revisions (
            run_id BIGINT PRIMARY KEY REFERENCES judge_runs(id),
            revises_run_id BIGINT NOT NULL REFERENCES judge_runs(id)
        )""",
    ),
    "m009_answer_checks": (
        """CREATE TABLE answer_checks (
            answer_id TEXT PRIMARY KEY REFERENCES answers(id),
            question_script TEXT,
            answer_script TEXT,
            script_mismatch BIGINT NOT NULL CHECK (script_mismatch IN (0, 1)),
            cjk_chars BIGINT NOT NULL,
            unexpected_cjk BIGINT NOT NULL CHECK (unexpected_cjk IN (0, 1)),
            check_version BIGINT NOT NULL,
            checked_at TEXT NOT NULL
        )""",
        """CREATE TABLE reference_edits (
            id BIGINT PRIMARY KEY,
            answer_id TEXT NOT NULL REFERENCES answers(id),
            text TEXT NOT NULL,
            edited_by TEXT NOT NULL,
            edited_at TEXT NOT NULL
        )""",
        """CREATE OR REPLACE TRIGGER reference_edits_next_id BEFORE INSERT ON reference_edits FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",
        """CREATE INDEX reference_edits_answer ON reference_edits(answer_id, id)""",
    ),
    "m010_security": (
        """CREATE TABLE sign_ins (
            name_key TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            first_at TEXT NOT NULL
        )""",
        """CREATE TABLE reassignments (
            id BIGINT PRIMARY KEY,
            cycle_id BIGINT NOT NULL REFERENCES cycles(id),
            from_reviewer TEXT NOT NULL,
            to_reviewer TEXT NOT NULL,
            answers TEXT NOT NULL DEFAULT '[]',
            reassigned_by TEXT,
            created_at TEXT NOT NULL
        )""",
        """CREATE OR REPLACE TRIGGER reassignments_next_id BEFORE INSERT ON reassignments FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",
        """CREATE INDEX reassignments_cycle ON reassignments(cycle_id)""",
    ),
    "m011_imports": (
        """CREATE TABLE imports (
            id BIGINT PRIMARY KEY,
            status TEXT NOT NULL CHECK (status IN ('publishing','done')),
            source TEXT,
            stamp TEXT NOT NULL UNIQUE,
            new_runs TEXT NOT NULL DEFAULT '[]',
            claim_lo BIGINT,
            claim_hi BIGINT,
            pid BIGINT NOT NULL,
            host TEXT NOT NULL,
            process_start TEXT,
            started_at TEXT NOT NULL,
            finished_at TEXT
        )""",
        """CREATE OR REPLACE TRIGGER imports_next_id BEFORE INSERT ON imports FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",
        """CREATE INDEX imports_status ON imports(status)""",
    ),
    "m012_imported_labels_commit": (
        """INSERT INTO answer_reveals (answer_id, reviewer, cycle_id, revealed_at)
           SELECT c.answer_id, h.reviewer, NULL, max(h.updated_at)
           FROM claims c JOIN human_labels h ON h.claim_pk = c.id
           WHERE h.status = 'labeled' AND h.blind_verdict IS NOT NULL
             AND (SELECT e.kind FROM label_events e
                  WHERE e.claim_pk = h.claim_pk AND e.reviewer = h.reviewer
                    AND e.kind IN ('blind', 'unclear', 'import')
                  ORDER BY e.id DESC LIMIT 1) = 'import'
           GROUP BY c.answer_id, h.reviewer
           HAVING count(*) = (SELECT count(*) FROM claims c2 WHERE c2.answer_id = c.answer_id) ON CONFLICT DO NOTHING""",
    ),
    "m013_cycle_plans": (
        """CREATE TABLE cycle_plans (
            cycle_id BIGINT PRIMARY KEY REFERENCES cycles(id),
            goal TEXT NOT NULL CHECK (goal IN ('agreement', 'grounding')),
            plan TEXT NOT NULL
        )""",
    ),
    "m014_label_import_marker": (
        """ALTER TABLE label_events ADD COLUMN import_id BIGINT""",
        """ALTER TABLE human_labels ADD COLUMN import_id BIGINT""",
        """ALTER TABLE answer_reveals ADD COLUMN import_id BIGINT""",
        """DROP TRIGGER IF EXISTS label_events_no_delete ON label_events""",
        """CREATE OR REPLACE FUNCTION label_events_no_delete_fn() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
            IF OLD.import_id IS NULL OR NOT EXISTS (
                SELECT 1 FROM imports WHERE id = OLD.import_id AND status = 'publishing') THEN
                RAISE EXCEPTION 'label_events is append-only' USING ERRCODE = 'integrity_constraint_violation';
            END IF;
            RETURN OLD;
        END $$""",
        """CREATE OR REPLACE TRIGGER label_events_no_delete BEFORE DELETE ON label_events FOR EACH ROW EXECUTE FUNCTION label_events_no_delete_fn()""",
    ),
    "m015_reviewer_roster": (
        """CREATE TABLE reviewers (
            name_key TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            active BIGINT NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
            added_at TEXT NOT NULL
        )""",
        """CREATE TABLE reviewer_events (
            id BIGINT PRIMARY KEY,
            at TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('add', 'rename', 'deactivate', 'reactivate')),
            name TEXT NOT NULL,
            new_name TEXT,
            labels_moved BIGINT,
            "by" TEXT
        )""",
        """CREATE OR REPLACE TRIGGER reviewer_events_next_id BEFORE INSERT ON reviewer_events FOR EACH ROW EXECUTE FUNCTION calibration_next_id()""",
        """DROP TRIGGER IF EXISTS label_events_no_update ON label_events""",
        """CREATE OR REPLACE FUNCTION label_events_no_update_fn() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
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
                RAISE EXCEPTION 'label_events is append-only' USING ERRCODE = 'integrity_constraint_violation';
            END IF;
            RETURN NEW;
        END $$""",
        """CREATE OR REPLACE TRIGGER label_events_no_update BEFORE UPDATE ON label_events FOR EACH ROW EXECUTE FUNCTION label_events_no_update_fn()""",
    ),
    "m016_cycle_requires_evidence": (
        """ALTER TABLE cycles ADD COLUMN require_evidence BIGINT NOT NULL DEFAULT 0""",
        """CREATE INDEX human_labels_cycle ON human_labels(cycle_id)""",
    ),
    "m017_import_commit_in_python": (
        """DROP TRIGGER IF EXISTS human_labels_import_commit_insert ON human_labels""",
        """DROP TRIGGER IF EXISTS human_labels_import_commit_update ON human_labels""",
    ),
    "m018_reviewer_identities": (
        """CREATE TABLE reviewer_identities (
            issuer TEXT NOT NULL,
            subject TEXT NOT NULL,
            name_key TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL,
            bound_at TEXT NOT NULL,
            signed_out_iat BIGINT,
            PRIMARY KEY (issuer, subject)
        )""",
    ),
}
