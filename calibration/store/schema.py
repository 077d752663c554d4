"""The schema as the numbered migrations made it, applied in order (SQLite's text here;
PostgreSQL's in `schema_postgresql`).

A shipped migration is never edited: a database made by an earlier release replays only the
migrations it lacks, so each one is literal DDL, frozen as shipped (the verdict list is spelled
out here, not read from `calibration.vocab`; `tests/test_layering.py` checks that the CHECK
constraints and the Python constants still agree).
"""

from __future__ import annotations

from collections.abc import Sequence

from .database import Database
from .migrations import Frozen, Migrations, run_text
from .schema_postgresql import PRELUDE, STEPS

migrations = Migrations("calibration", {"postgresql": Frozen(PRELUDE, STEPS)})

# Frozen with m002/m003: later migrations write their own literal lists.
_VERDICT_CHECK = "({col} IN ('SUPPORTED','CONTRADICTED','UNSUPPORTED'))"


def _run(db: Database, statements: Sequence[str]) -> None:
    run_text(db, statements)


@migrations()
def m001_create_answers(db: Database) -> None:
    _run(
        db,
        [
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
            "CREATE INDEX answers_category ON answers(category)",
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
        ],
    )


@migrations()
def m002_create_judge_runs(db: Database) -> None:
    _run(
        db,
        [
            """CREATE TABLE judge_runs (
            id INTEGER PRIMARY KEY,
            judge_model TEXT NOT NULL,
            prompt_version TEXT NOT NULL,
            origin TEXT NOT NULL DEFAULT 'import',
            created_at TEXT NOT NULL,
            UNIQUE (judge_model, prompt_version)
        )""",
            f"""CREATE TABLE judge_verdicts (
            run_id INTEGER NOT NULL REFERENCES judge_runs(id),
            claim_pk INTEGER NOT NULL REFERENCES claims(id),
            verdict TEXT NOT NULL CHECK {_VERDICT_CHECK.format(col="verdict")},
            raw_verdict TEXT,
            rationale TEXT,
            evidence TEXT NOT NULL DEFAULT '[]',
            PRIMARY KEY (run_id, claim_pk)
        )""",
            "CREATE INDEX judge_verdicts_claim ON judge_verdicts(claim_pk)",
        ],
    )


@migrations()
def m003_create_labels(db: Database) -> None:
    # label_events is the append-only history; human_labels is its current state per
    # (claim, reviewer), written in the same transaction so reads stay cheap.
    _run(
        db,
        [
            f"""CREATE TABLE label_events (
            id INTEGER PRIMARY KEY,
            claim_pk INTEGER NOT NULL REFERENCES claims(id),
            reviewer TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN
                ('blind','skip','unclear','keep','judge_right','import','adjudicate')),
            verdict TEXT CHECK (verdict IS NULL OR {_VERDICT_CHECK.format(col="verdict")}),
            evidence TEXT NOT NULL DEFAULT '[]',
            note TEXT,
            cycle_id INTEGER,
            judge_run_id INTEGER,
            created_at TEXT NOT NULL
        )""",
            "CREATE INDEX label_events_claim ON label_events(claim_pk, reviewer)",
            """CREATE TRIGGER label_events_no_update BEFORE UPDATE ON label_events
           BEGIN SELECT RAISE(ABORT, 'label_events is append-only'); END""",
            """CREATE TRIGGER label_events_no_delete BEFORE DELETE ON label_events
           BEGIN SELECT RAISE(ABORT, 'label_events is append-only'); END""",
            f"""CREATE TABLE human_labels (
            claim_pk INTEGER NOT NULL REFERENCES claims(id),
            reviewer TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('labeled','skipped','unclear')),
            blind_verdict TEXT CHECK (blind_verdict IS NULL OR
                {_VERDICT_CHECK.format(col="blind_verdict")}),
            final_verdict TEXT CHECK (final_verdict IS NULL OR
                {_VERDICT_CHECK.format(col="final_verdict")}),
            reconciled TEXT CHECK (reconciled IS NULL OR reconciled IN ('keep','judge_right')),
            slip INTEGER NOT NULL DEFAULT 0,
            evidence TEXT NOT NULL DEFAULT '[]',
            note TEXT,
            cycle_id INTEGER,
            blind_at TEXT,
            final_at TEXT,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (claim_pk, reviewer)
        )""",
            "CREATE INDEX human_labels_reviewer ON human_labels(reviewer)",
            f"""CREATE TABLE adjudications (
            claim_pk INTEGER PRIMARY KEY REFERENCES claims(id),
            verdict TEXT NOT NULL CHECK {_VERDICT_CHECK.format(col="verdict")},
            adjudicator TEXT NOT NULL,
            note TEXT,
            created_at TEXT NOT NULL
        )""",
            "CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        ],
    )


@migrations()
def m004_create_cycles(db: Database) -> None:
    _run(
        db,
        [
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
        )""",
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
            "CREATE INDEX assignments_reviewer ON assignments(reviewer, cycle_id)",
        ],
    )


# ---------------------------------------------------------------- m005 judge lab


@migrations()
def m005_judge_lab(db: Database) -> None:
    # judge_lab_runs sits beside judge_runs (1:1) instead of altering it, so imported runs
    # keep their shape. Token totals are cumulative here rather than summed from
    # judge_calls: a failed call that is later re-run replaces its row, yet was paid for.
    _run(
        db,
        [
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
        ],
    )


@migrations()
def m006_index_label_events_cycle(db: Database) -> None:
    # Cycle progress asks which reviewers labeled within a cycle; without this index that
    # is a scan of the whole label history for every cycle on the Cycles page.
    _run(db, ["CREATE INDEX label_events_cycle ON label_events(cycle_id, reviewer)"])


@migrations()
def m007_review_day(db: Database) -> None:
    # answer_reveals: the reviewer's explicit commit of an answer's blind verdicts (the "last
    # look" before the reveal). Before it, every claim of an answer settled meant revealed, so
    # those answers are backfilled as revealed. Per (answer, reviewer), like the labels.
    # duration_ms: time from the card shown to the verdict, per event and on the current label.
    # guidelines: the lead's markdown, one row per scope ('project' or 'cycle:<id>').
    _run(
        db,
        [
            """CREATE TABLE answer_reveals (
            answer_id TEXT NOT NULL REFERENCES answers(id),
            reviewer TEXT NOT NULL,
            cycle_id INTEGER REFERENCES cycles(id),
            revealed_at TEXT NOT NULL,
            PRIMARY KEY (answer_id, reviewer)
        )""",
            """INSERT INTO answer_reveals (answer_id, reviewer, cycle_id, revealed_at)
           SELECT c.answer_id, h.reviewer, NULL, max(h.updated_at)
           FROM claims c JOIN human_labels h ON h.claim_pk = c.id
           WHERE (h.status = 'labeled' AND h.blind_verdict IS NOT NULL) OR h.status = 'unclear'
           GROUP BY c.answer_id, h.reviewer
           HAVING count(*) = (SELECT count(*) FROM claims c2 WHERE c2.answer_id = c.answer_id)""",
            "ALTER TABLE label_events ADD COLUMN duration_ms INTEGER",
            "ALTER TABLE human_labels ADD COLUMN duration_ms INTEGER",
            """CREATE TABLE guidelines (
            scope TEXT PRIMARY KEY,
            markdown TEXT NOT NULL,
            author TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )""",
        ],
    )


# ---------------------------------------------------------------- m008 tuning / holdout split


@migrations()
def m008_tuning_holdout(db: Database) -> None:
    # The split is answer-level: a claim's part is its answer's. `claim_splits` holds one row
    # per holdout generation (the latest is current); unsealing is recorded on it and never
    # undone, so a used holdout stays marked used. `split_answers` is written once per answer:
    # an answer never moves between parts, whatever is labeled later.
    # `judge_lab_examples` keeps the few-shot examples a lab run's prompts carried, and
    # `judge_lab_revisions` the run each lab run revises (its default baseline).
    _run(
        db,
        [
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
            "CREATE INDEX split_answers_part ON split_answers(split_id, part)",
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
        ],
    )


# ---------------------------------------------------------------- m009 answer checks, reference edits


@migrations()
def m009_answer_checks(db: Database) -> None:
    # answer_checks: seed 003's code checks, one row per answer, computed at import
    # (calibration.checks); check_version says which rules made the row, so a later change of
    # the rules can tell stale rows apart. reference_edits: a lead's reference answer for the
    # golden export, append-only so who changed it and when stays known; the newest row wins.
    _run(
        db,
        [
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
            "CREATE INDEX reference_edits_answer ON reference_edits(answer_id, id)",
        ],
    )


# ---------------------------------------------------------------- m010 security


@migrations()
def m010_security(db: Database) -> None:
    # sign_ins: one row per reviewer name that ever signed in, keyed by the name's comparison key
    # (calibration.text.normalise_name) and keeping the first display spelling; it is what tells
    # single-user use (one name) from a team. reassignments: the history of open work moved from
    # one reviewer to another (assignments itself is current state only).
    _run(
        db,
        [
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
            "CREATE INDEX reassignments_cycle ON reassignments(cycle_id)",
        ],
    )


# ---------------------------------------------------------------- m011 unfinished imports


@migrations()
def m011_imports(db: Database) -> None:
    # One row per staged import. While its status is 'publishing' its rows are moving in by short
    # writes and every reader hides them (calibration.store.imports); a row left 'publishing' by a
    # process that is gone marks leftovers to delete. What it adds is known without listing rows:
    # its answers carry imported_at = stamp, its claims have ids claim_lo..claim_hi (reserved
    # before the first row moves in), and new_runs holds the judge runs it created (JSON ids).
    _run(
        db,
        [
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
            "CREATE INDEX imports_status ON imports(status)",
        ],
    )


# ---------------------------------------------------------------- m012 imported labels are committed


# An answer every claim of which carries a reviewer's imported label (`import-labels`, kind
# 'import': blind and final at once) is committed for that reviewer, as if they had taken the
# last look: the verdicts were given outside the tool and are final, so the review queue and
# the lead's progress count such an answer alike, and the reviewer goes on to reconcile, not
# to re-confirm a spreadsheet. The commit is written by the database when the import completes
# the answer (a trigger on the current label, whichever importer writes it); answers imported
# before this migration are backfilled. An answer also holding the reviewer's own blind labels
# from the review page is left to their explicit commit.
@migrations()
def m012_imported_labels_commit(db: Database) -> None:
    # One body for both triggers (after an insert and after an update of the current label).
    body = """
           WHEN NEW.status = 'labeled' AND (SELECT e.kind FROM label_events e
               WHERE e.claim_pk = NEW.claim_pk AND e.reviewer = NEW.reviewer
               ORDER BY e.id DESC LIMIT 1) = 'import'
           BEGIN
               INSERT OR IGNORE INTO answer_reveals (answer_id, reviewer, cycle_id, revealed_at)
               SELECT c.answer_id, NEW.reviewer, NULL, NEW.updated_at FROM claims c
               WHERE c.id = NEW.claim_pk AND NOT EXISTS (
                   SELECT 1 FROM claims c2
                   LEFT JOIN human_labels h2 ON h2.claim_pk = c2.id AND h2.reviewer = NEW.reviewer
                   WHERE c2.answer_id = c.answer_id AND (
                       h2.claim_pk IS NULL OR h2.status != 'labeled' OR h2.blind_verdict IS NULL
                       OR (SELECT e.kind FROM label_events e
                           WHERE e.claim_pk = h2.claim_pk AND e.reviewer = h2.reviewer
                             AND e.kind IN ('blind', 'unclear', 'import')
                           ORDER BY e.id DESC LIMIT 1) IS NOT 'import'));
           END"""
    _run(
        db,
        [
            "CREATE TRIGGER human_labels_import_commit_insert AFTER INSERT ON human_labels" + body,
            "CREATE TRIGGER human_labels_import_commit_update AFTER UPDATE ON human_labels" + body,
            """INSERT OR IGNORE INTO answer_reveals (answer_id, reviewer, cycle_id, revealed_at)
           SELECT c.answer_id, h.reviewer, NULL, max(h.updated_at)
           FROM claims c JOIN human_labels h ON h.claim_pk = c.id
           WHERE h.status = 'labeled' AND h.blind_verdict IS NOT NULL
             AND (SELECT e.kind FROM label_events e
                  WHERE e.claim_pk = h.claim_pk AND e.reviewer = h.reviewer
                    AND e.kind IN ('blind', 'unclear', 'import')
                  ORDER BY e.id DESC LIMIT 1) = 'import'
           GROUP BY c.answer_id, h.reviewer
           HAVING count(*) = (SELECT count(*) FROM claims c2 WHERE c2.answer_id = c.answer_id)""",
        ],
    )


# ---------------------------------------------------------------- m013 planned cycles


# A planned cycle's plan: the goal it allocated for and, as JSON, every pool answer's stratum,
# each stratum's spread and allocation, and the interval the plan expected. The answers' strata
# are kept because the run's figures post-stratify on them later, for answers never drawn too.
@migrations()
def m013_cycle_plans(db: Database) -> None:
    _run(
        db,
        [
            """CREATE TABLE cycle_plans (
            cycle_id INTEGER PRIMARY KEY REFERENCES cycles(id),
            goal TEXT NOT NULL CHECK (goal IN ('agreement', 'grounding')),
            plan TEXT NOT NULL
        )""",
        ],
    )


# ---------------------------------------------------------------- m014 staged label imports


@migrations()
def m014_label_import_marker(db: Database) -> None:
    # A label import moves its rows in by short writes, like an answer import (m011): the label
    # events and current labels it adds, and the commits its labels complete, carry its `imports`
    # id, and readers hide them while that import is 'publishing'. The history stays append-only
    # except for the rows of an import that never finished, which recovery deletes again.
    _run(
        db,
        [
            "ALTER TABLE label_events ADD COLUMN import_id INTEGER",
            "ALTER TABLE human_labels ADD COLUMN import_id INTEGER",
            "ALTER TABLE answer_reveals ADD COLUMN import_id INTEGER",
            "DROP TRIGGER label_events_no_delete",
            """CREATE TRIGGER label_events_no_delete BEFORE DELETE ON label_events
           WHEN OLD.import_id IS NULL OR NOT EXISTS (
               SELECT 1 FROM imports WHERE id = OLD.import_id AND status = 'publishing')
           BEGIN SELECT RAISE(ABORT, 'label_events is append-only'); END""",
        ],
    )


# ---------------------------------------------------------------- m015 the reviewer roster
# reviewers: the lead's list of reviewers, keyed by the name's comparison key
# (calibration.text.normalise_name), in the spelling the lead gave; a deactivated reviewer
# keeps their labels but is offered nowhere and cannot sign in. reviewer_events: every add,
# rename and deactivation, with who did it and, for a rename, how many labels moved.
@migrations()
def m015_reviewer_roster(db: Database) -> None:
    _run(
        db,
        [
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
            # label_events stays append-only, except that a recorded rename carries its reviewer
            # column along: only `reviewer` may change, and only to a name a rename event names.
            "DROP TRIGGER label_events_no_update",
            """CREATE TRIGGER label_events_no_update BEFORE UPDATE ON label_events
           WHEN NOT (NEW.id = OLD.id AND NEW.claim_pk = OLD.claim_pk AND NEW.kind = OLD.kind
                     AND NEW.verdict IS OLD.verdict AND NEW.evidence = OLD.evidence
                     AND NEW.note IS OLD.note AND NEW.cycle_id IS OLD.cycle_id
                     AND NEW.judge_run_id IS OLD.judge_run_id AND NEW.created_at = OLD.created_at
                     AND NEW.duration_ms IS OLD.duration_ms AND NEW.import_id IS OLD.import_id
                     AND EXISTS (SELECT 1 FROM reviewer_events r
                                 WHERE r.kind = 'rename' AND r.new_name = NEW.reviewer))
           BEGIN SELECT RAISE(ABORT, 'label_events is append-only'); END""",
        ],
    )


# ---------------------------------------------------------------- m016 cycles that require evidence


@migrations()
def m016_cycle_requires_evidence(db: Database) -> None:
    # The lead's choice at creation: every SUPPORTED verdict in the cycle names its evidence;
    # the index serves the per-reviewer count of SUPPORTED labels without evidence in a cycle.
    _run(
        db,
        [
            "ALTER TABLE cycles ADD COLUMN require_evidence INTEGER NOT NULL DEFAULT 0",
            "CREATE INDEX human_labels_cycle ON human_labels(cycle_id)",
        ],
    )


# ---------------------------------------------------------------- m017 the import commit in Python


@migrations()
def m017_import_commit_in_python(db: Database) -> None:
    # m012's rule (an answer whose every claim holds the reviewer's imported label is committed
    # for them) moves to the store's write path (`calibration.store.reveals`), where every
    # backend runs it; the triggers that held it go. Commits already recorded stay.
    _run(
        db,
        [
            "DROP TRIGGER IF EXISTS human_labels_import_commit_insert",
            "DROP TRIGGER IF EXISTS human_labels_import_commit_update",
        ],
    )


# ---------------------------------------------------------------- m018 provider identities


@migrations()
def m018_reviewer_identities(db: Database) -> None:
    # With OIDC a reviewer is bound, at their first sign-in, to the provider's (issuer,
    # subject): the name is unique, so two provider accounts never share one reviewer.
    # signed_out_iat: the issue time (the ID token's iat) of the newest sign-in that pressed
    # Log out; an identity cookie issued no later than that is refused.
    _run(
        db,
        [
            """CREATE TABLE reviewer_identities (
            issuer TEXT NOT NULL,
            subject TEXT NOT NULL,
            name_key TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL,
            bound_at TEXT NOT NULL,
            signed_out_iat INTEGER,
            PRIMARY KEY (issuer, subject)
        )""",
        ],
    )
