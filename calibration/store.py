"""The SQLite store: connections, the schema (as sqlite-utils migrations) and the writes.

Connection strategy. Streamlit runs every rerun on a fresh thread and serves many
sessions at once, so no connection is shared between threads: every unit of work
opens its own short-lived connection (`session()`), which costs well under a
millisecond. Each connection gets WAL (readers never block the writer), foreign
keys on, and a busy timeout. A write that reads before it writes starts with
`BEGIN IMMEDIATE`, taking the write lock up front: a deferred transaction that
upgrades from read to write can fail at once with "database is locked" whatever
the busy timeout, an immediate one waits its turn.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

from .errors import ConflictError, InputError, NotFoundError
from .models import LABELS, Verdict

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DB = PROJECT_ROOT / "data" / "calibration.db"
BUSY_TIMEOUT_MS = 30_000

migrations = Migrations("calibration")

_VERDICT_CHECK = "({col} IN ('SUPPORTED','CONTRADICTED','UNSUPPORTED'))"


def _run(db: Database, statements: Sequence[str]) -> None:
    for sql in statements:
        db.execute(sql)


@migrations()
def m001_create_answers(db: Database) -> None:
    _run(db, [
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
    ])


@migrations()
def m002_create_judge_runs(db: Database) -> None:
    _run(db, [
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
            verdict TEXT NOT NULL CHECK {_VERDICT_CHECK.format(col='verdict')},
            raw_verdict TEXT,
            rationale TEXT,
            evidence TEXT NOT NULL DEFAULT '[]',
            PRIMARY KEY (run_id, claim_pk)
        )""",
        "CREATE INDEX judge_verdicts_claim ON judge_verdicts(claim_pk)",
    ])


@migrations()
def m003_create_labels(db: Database) -> None:
    # label_events is the append-only history; human_labels is its current state per
    # (claim, reviewer), written in the same transaction so reads stay cheap.
    _run(db, [
        f"""CREATE TABLE label_events (
            id INTEGER PRIMARY KEY,
            claim_pk INTEGER NOT NULL REFERENCES claims(id),
            reviewer TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN
                ('blind','skip','unclear','keep','judge_right','import','adjudicate')),
            verdict TEXT CHECK (verdict IS NULL OR {_VERDICT_CHECK.format(col='verdict')}),
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
                {_VERDICT_CHECK.format(col='blind_verdict')}),
            final_verdict TEXT CHECK (final_verdict IS NULL OR
                {_VERDICT_CHECK.format(col='final_verdict')}),
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
            verdict TEXT NOT NULL CHECK {_VERDICT_CHECK.format(col='verdict')},
            adjudicator TEXT NOT NULL,
            note TEXT,
            created_at TEXT NOT NULL
        )""",
        "CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ])


@migrations()
def m004_create_cycles(db: Database) -> None:
    _run(db, [
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
    ])


# ---------------------------------------------------------------- m005 judge lab


@migrations()
def m005_judge_lab(db: Database) -> None:
    # judge_lab_runs sits beside judge_runs (1:1) instead of altering it, so imported runs
    # keep their shape. Token totals are cumulative here rather than summed from
    # judge_calls: a failed call that is later re-run replaces its row, yet was paid for.
    _run(db, [
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
    ])


@migrations()
def m006_index_label_events_cycle(db: Database) -> None:
    # Cycle progress asks which reviewers labeled within a cycle; without this index that
    # is a scan of the whole label history for every cycle on the Cycles page.
    db.execute("CREATE INDEX label_events_cycle ON label_events(cycle_id, reviewer)")


# ---------------------------------------------------------------- connections

_migrated: set[str] = set()
_migrate_lock = threading.Lock()


def default_db_path() -> Path:
    env = os.environ.get("CALIBRATION_DB")
    return Path(env) if env else DEFAULT_DB


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def connect(path: str | Path | None = None, *, migrate: bool = True) -> Database:
    """Open a new connection with the project's pragmas; apply pending migrations once per process."""
    path = Path(path) if path is not None else default_db_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    # isolation_level=None: Python issues no implicit BEGIN, so every transaction here
    # is the explicit one we chose (BEGIN IMMEDIATE for writes).
    conn = sqlite3.connect(
        str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    # FULL: a label the page has acknowledged must survive an OS crash or power cut too;
    # in WAL mode NORMAL may lose the last commits then. Labels are a few writes a minute.
    conn.execute("PRAGMA synchronous = FULL")
    db = Database(conn, execute_plugins=False)
    if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        conn.execute("PRAGMA journal_mode = WAL")
    key = str(path.resolve())
    if migrate and key not in _migrated:
        with _migrate_lock:
            if key not in _migrated:
                with write(db):
                    migrations.apply(db)
                _migrated.add(key)
    return db


@contextmanager
def session(path: str | Path | None = None) -> Iterator[Database]:
    """A connection for one unit of work, closed at the end."""
    db = connect(path)
    try:
        yield db
    finally:
        db.conn.close()


@contextmanager
def write(db: Database) -> Iterator[Database]:
    """One write transaction started with BEGIN IMMEDIATE; rolled back on any error."""
    if db.conn.in_transaction:
        with db.atomic():
            yield db
        return
    try:
        db.conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise ConflictError(f"the database is busy ({exc}); nothing was written, try again") from exc
    try:
        yield db
    except sqlite3.Error as exc:
        if db.conn.in_transaction:
            db.conn.execute("ROLLBACK")
        # Callers (pages, CLI) handle one error family; a raw sqlite3 error would be a traceback.
        raise ConflictError(f"the database refused the write ({exc}); nothing was written") from exc
    except BaseException:
        if db.conn.in_transaction:
            db.conn.execute("ROLLBACK")
        raise
    else:
        try:
            db.conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if db.conn.in_transaction:
                db.conn.execute("ROLLBACK")
            raise ConflictError(f"the database is busy ({exc}); nothing was written, try again") from exc


# ---------------------------------------------------------------- reads


@dataclass(frozen=True, slots=True)
class JudgeRun:
    id: int
    judge_model: str
    prompt_version: str
    origin: str
    created_at: str

    @property
    def name(self) -> str:
        return f"{self.judge_model}@{self.prompt_version}"


def judge_runs(db: Database) -> list[JudgeRun]:
    """The judge runs, oldest first. A judge-lab run (origin 'lab') without a single verdict
    yet (every call failed so far) is left out: it has nothing to show or compare."""
    rows = db.execute(
        "SELECT id, judge_model, prompt_version, origin, created_at FROM judge_runs r "
        "WHERE r.origin != 'lab' OR EXISTS (SELECT 1 FROM judge_verdicts v WHERE v.run_id = r.id) "
        "ORDER BY id"
    ).fetchall()
    return [JudgeRun(*r) for r in rows]


def find_judge_run(db: Database, name: str | None = None) -> JudgeRun:
    """Resolve `MODEL@VERSION`, or `VERSION` when unique; None means the most recently imported run."""
    runs = judge_runs(db)
    if not runs:
        raise NotFoundError("no judge runs yet: import judged answers first")
    if name is None:
        imported = [r for r in runs if r.origin == "import"]
        return (imported or runs)[-1]
    if "@" in name:
        model, _, version = name.rpartition("@")
        hits = [r for r in runs if r.judge_model == model and r.prompt_version == version]
    else:
        hits = [r for r in runs if r.prompt_version == name]
        if not hits:
            hits = [r for r in runs if r.judge_model == name]
    if len(hits) == 1:
        return hits[0]
    known = ", ".join(r.name for r in runs)
    if not hits:
        raise NotFoundError(f"unknown judge run {name!r}; known runs: {known}")
    raise NotFoundError(f"judge run {name!r} is ambiguous; use MODEL@VERSION: {known}")


@dataclass(frozen=True, slots=True)
class RunInfo:
    run: JudgeRun
    answers: int
    claims: int
    verdicts: dict[str, int]
    labeled_claims: int


def info(db: Database) -> dict[str, object]:
    """Counts for the overview: totals and, per judge run, answers, claims, verdicts, labels."""
    totals = {
        "answers": db.execute("SELECT count(*) FROM answers").fetchone()[0],
        "claims": db.execute("SELECT count(*) FROM claims").fetchone()[0],
        "label_events": db.execute("SELECT count(*) FROM label_events").fetchone()[0],
        "labeled_claims": db.execute(
            "SELECT count(DISTINCT claim_pk) FROM human_labels WHERE status = 'labeled'"
        ).fetchone()[0],
        "reviewers": db.execute("SELECT count(DISTINCT reviewer) FROM human_labels").fetchone()[0],
    }
    per_run: list[RunInfo] = []
    for run in judge_runs(db):
        counts = dict.fromkeys(LABELS, 0)
        for verdict, n in db.execute(
            "SELECT verdict, count(*) FROM judge_verdicts WHERE run_id = ? GROUP BY verdict",
            [run.id],
        ):
            counts[verdict] = n
        answers, claims, labeled = db.execute(
            # EXISTS, not a join: a claim labeled by several reviewers still counts once.
            """SELECT count(DISTINCT c.answer_id), count(*),
                      coalesce(sum(EXISTS (SELECT 1 FROM human_labels h
                                           WHERE h.claim_pk = c.id AND h.status = 'labeled')), 0)
               FROM judge_verdicts v JOIN claims c ON c.id = v.claim_pk
               WHERE v.run_id = ?""",
            [run.id],
        ).fetchone()
        per_run.append(RunInfo(run, answers, claims, counts, labeled))
    return {"totals": totals, "runs": per_run}


def claim_pk(db: Database, answer_id: str, claim_id: str) -> int:
    row = db.execute(
        "SELECT id FROM claims WHERE answer_id = ? AND claim_id = ?", [answer_id, claim_id]
    ).fetchone()
    if row is None:
        if db.execute("SELECT 1 FROM answers WHERE id = ?", [answer_id]).fetchone() is None:
            raise NotFoundError(f"no answer {answer_id!r} in the database")
        raise NotFoundError(f"no claim {claim_id!r} in answer {answer_id!r}")
    return row[0]


# ---------------------------------------------------------------- label writes

def _verdict(value: Verdict | str) -> str:
    try:
        return Verdict(value).value
    except ValueError:
        raise InputError(f"unknown verdict {value!r}: use SUPPORTED, CONTRADICTED or UNSUPPORTED") from None


LABEL_KINDS = ("blind", "skip", "unclear", "keep", "judge_right", "import", "adjudicate")


@dataclass(frozen=True, slots=True)
class LabelState:
    claim_pk: int
    reviewer: str
    status: str
    blind_verdict: str | None
    final_verdict: str | None
    reconciled: str | None
    slip: bool
    evidence: list[str]
    note: str | None


def _label_state(row: sqlite3.Row | tuple | None, claim: int, reviewer: str) -> LabelState | None:
    if row is None:
        return None
    status, blind, final, reconciled, slip, evidence, note = row
    return LabelState(claim, reviewer, status, blind, final, reconciled, bool(slip),
                      json.loads(evidence), note)


def label_state(db: Database, claim: int, reviewer: str) -> LabelState | None:
    row = db.execute(
        """SELECT status, blind_verdict, final_verdict, reconciled, slip, evidence, note
           FROM human_labels WHERE claim_pk = ? AND reviewer = ?""",
        [claim, reviewer],
    ).fetchone()
    return _label_state(row, claim, reviewer)


def record_label(
    db: Database,
    *,
    claim: int,
    reviewer: str,
    kind: str,
    verdict: Verdict | str | None = None,
    evidence: Sequence[str] = (),
    note: str | None = None,
    cycle_id: int | None = None,
    judge_run_id: int | None = None,
) -> LabelState:
    """Append one label event and update the reviewer's current label, in one transaction.

    kinds: `blind` (a verdict given before the judge is revealed; a change is a new
    event), `skip` / `unclear` (no verdict; recorded so the queue can show them),
    `keep` (after the reveal, the reviewer keeps the blind verdict: a judge error),
    `judge_right` (after the reveal, the reviewer adopts the judge's verdict of
    `judge_run_id`: a reviewer slip, counted), `import` (a label from a file: blind and
    final at once). Returns the new state.
    """
    if kind not in LABEL_KINDS or kind == "adjudicate":
        raise InputError(f"unknown label kind {kind!r}")
    if not reviewer:
        raise InputError("a label needs a reviewer")
    with write(db):
        state = label_state(db, claim, reviewer)
        if kind in ("blind", "import"):
            if verdict is None:
                raise InputError(f"a {kind} label needs a verdict")
            verdict = _verdict(verdict)
        elif kind in ("keep", "judge_right"):
            if state is None or state.blind_verdict is None:
                raise ConflictError("reconcile needs a blind verdict first")
            if kind == "keep":
                verdict = state.blind_verdict
            else:
                row = db.execute(
                    "SELECT verdict FROM judge_verdicts WHERE run_id = ? AND claim_pk = ?",
                    [judge_run_id, claim],
                ).fetchone()
                if row is None:
                    raise NotFoundError("the judge gave no verdict on this claim")
                verdict = row[0]
        else:
            verdict = None
        ts = now()
        ev_json = json.dumps(list(evidence), ensure_ascii=False)
        db.execute(
            """INSERT INTO label_events
               (claim_pk, reviewer, kind, verdict, evidence, note, cycle_id, judge_run_id,
                created_at) VALUES (?,?,?,?,?,?,?,?,?)""",
            [claim, reviewer, kind, verdict, ev_json, note, cycle_id, judge_run_id, ts],
        )
        if kind in ("blind", "import"):
            new = dict(status="labeled", blind_verdict=verdict, final_verdict=verdict,
                       reconciled=None, slip=0, blind_at=ts, final_at=ts)
        elif kind in ("skip", "unclear"):
            new = dict(status="skipped" if kind == "skip" else "unclear", blind_verdict=None,
                       final_verdict=None, reconciled=None, slip=0, blind_at=ts, final_at=None)
        else:
            assert state is not None
            new = dict(status="labeled", blind_verdict=state.blind_verdict,
                       final_verdict=verdict, reconciled=kind,
                       slip=int(kind == "judge_right" and verdict != state.blind_verdict),
                       final_at=ts)
        keep_ev = state.evidence if state and kind in ("keep", "judge_right") else list(evidence)
        keep_note = state.note if state and kind in ("keep", "judge_right") and note is None else note
        row = {"claim_pk": claim, "reviewer": reviewer, "evidence": json.dumps(
            keep_ev, ensure_ascii=False), "note": keep_note, "cycle_id": cycle_id,
            "updated_at": ts, **new}
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        updates = ", ".join(f"{c} = excluded.{c}" for c in row if c not in ("claim_pk", "reviewer"))
        db.execute(
            f"INSERT INTO human_labels ({cols}) VALUES ({marks}) "
            f"ON CONFLICT (claim_pk, reviewer) DO UPDATE SET {updates}",
            list(row.values()),
        )
        result = label_state(db, claim, reviewer)
    assert result is not None
    return result


def adjudicate(db: Database, *, claim: int, adjudicator: str, verdict: Verdict | str,
               note: str | None = None) -> None:
    """Record the adjudicated human label of a claim (overrides disagreeing reviewers)."""
    verdict = _verdict(verdict)
    ts = now()
    with write(db):
        db.execute(
            """INSERT INTO label_events (claim_pk, reviewer, kind, verdict, note, created_at)
               VALUES (?,?,?,?,?,?)""",
            [claim, adjudicator, "adjudicate", verdict, note, ts],
        )
        db.execute(
            """INSERT INTO adjudications (claim_pk, verdict, adjudicator, note, created_at)
               VALUES (?,?,?,?,?) ON CONFLICT (claim_pk) DO UPDATE SET verdict = excluded.verdict,
               adjudicator = excluded.adjudicator, note = excluded.note,
               created_at = excluded.created_at""",
            [claim, verdict, adjudicator, note, ts],
        )


def label_history(db: Database, claim: int, reviewer: str | None = None) -> list[dict[str, object]]:
    sql = "SELECT * FROM label_events WHERE claim_pk = ?"
    params: list[object] = [claim]
    if reviewer is not None:
        sql += " AND reviewer = ?"
        params.append(reviewer)
    return list(db.query(sql + " ORDER BY id", params))


# ---------------------------------------------------------------- statistics
# Settings, the flag's thresholds, and the judge/human pairs the agreement report reads.
# The statistics module (scipy) is imported inside the functions that need it, so pages
# that only read or write labels do not pay for it.


if TYPE_CHECKING:
    import numpy as np

    from .agreement import LabeledClaim, Thresholds

THRESHOLD_SETTINGS: dict[str, str] = {
    "agreement_target": "stats.agreement_target",
    "kappa_floor": "stats.kappa_floor",
    "alpha": "stats.alpha",
}


def get_setting(db: Database, key: str) -> str | None:
    row = db.execute("SELECT value FROM settings WHERE key = ?", [key]).fetchone()
    return None if row is None else row[0]


def set_setting(db: Database, key: str, value: str) -> None:
    with write(db):
        db.execute(
            "INSERT INTO settings (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [key, value],
        )


def load_thresholds(db: Database) -> Thresholds:
    """The flag's thresholds: stored values where set, the defaults elsewhere."""
    from .agreement import Thresholds

    values: dict[str, float] = {}
    for name, key in THRESHOLD_SETTINGS.items():
        raw = get_setting(db, key)
        if raw is None:
            continue
        try:
            values[name] = float(raw)
        except ValueError:
            raise ConflictError(f"setting {key} holds {raw!r}, not a number") from None
    try:
        return Thresholds(**values)
    except ValueError as exc:
        raise ConflictError(f"stored thresholds are invalid: {exc}") from None


def save_thresholds(db: Database, **changes: float) -> Thresholds:
    """Change some thresholds (agreement_target, kappa_floor, alpha); returns all of them."""
    from dataclasses import replace

    from .errors import InputError

    unknown = set(changes) - set(THRESHOLD_SETTINGS)
    if unknown:
        raise InputError(f"unknown threshold(s): {', '.join(sorted(unknown))}")
    with write(db):
        try:
            new = replace(load_thresholds(db), **changes)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        for name, key in THRESHOLD_SETTINGS.items():
            set_setting(db, key, repr(getattr(new, name)))
    return new


@dataclass(frozen=True, slots=True)
class StatsInput:
    """What the agreement report of one judge run reads, with the claims it leaves out."""

    items: list[LabeledClaim]  # claims with a final human label; claim key "ANSWER/CLAIM"
    reviewer_labels: list[tuple[str, str, str]]  # (claim key, reviewer, verdict) for human-human
    unresolved: tuple[str, ...]  # reviewers disagree and nobody adjudicated
    unlabeled: int  # judged claims no reviewer has labelled yet


@dataclass(frozen=True, slots=True)
class ReviewerColumns:
    """The labels with status 'labeled' on the judged claims in scope, one entry per (claim, reviewer).

    Verdicts are indices into `agreement.LABELS`, -1 where there is none.
    """

    claim_pk: np.ndarray  # int64
    claim: np.ndarray  # int64 position of the claim among the judged claims in scope, report order
    reviewers: list[str]  # distinct reviewer names, sorted
    reviewer: np.ndarray  # int64 index into reviewers
    final: np.ndarray  # the reviewer's current final verdict (after reconcile)
    blind: np.ndarray  # the verdict given before the judge was revealed
    reconciled: np.ndarray  # 0 not reconciled, 1 keep, 2 judge_right
    slip: np.ndarray  # int64, as stored
    judge: np.ndarray  # the run's verdict on the claim


@dataclass(frozen=True, slots=True)
class StatsColumns:
    """The same input as columns, one entry per claim with a final human label, in report order.

    Order: claim id for a whole run; the cycle's answer order, then claim position, within a
    cycle. Verdicts are indices into `agreement.LABELS`; `cluster` numbers the answers in order
    of first appearance, as `agreement.agreement_report` does, so both give the same resamples.
    """

    claim_pk: np.ndarray  # int64
    keys: list[str]  # "ANSWER/CLAIM"
    cluster: np.ndarray  # int64 index into answer_ids
    answer_ids: list[str]  # one per cluster
    human: np.ndarray  # int64, the final human label
    judge: np.ndarray  # int64
    weight: np.ndarray | None  # 1 / inclusion probability within a cycle, else None
    reviewer_labels: list[tuple[str, str, str]]  # (claim key, reviewer, verdict); see stats_columns
    unresolved: tuple[str, ...]  # reviewers disagree or one marked it unclear; nobody adjudicated
    unresolved_pk: np.ndarray  # int64, the same claims
    unlabeled: int  # judged claims no reviewer has labelled yet
    labels: ReviewerColumns

    def __len__(self) -> int:
        return len(self.keys)


@contextmanager
def _snapshot(db: Database) -> Iterator[None]:
    """Reads inside see one state of the store (a read transaction; WAL lets writers go on)."""
    if db.conn.in_transaction:
        yield
        return
    db.conn.execute("BEGIN")
    try:
        yield
    finally:
        if db.conn.in_transaction:
            db.conn.execute("COMMIT")


def _verdict_code(col: str) -> str:
    """SQL for a verdict's index in LABELS: -1 for NULL, NULL for anything else (the CHECKs forbid it)."""
    from .agreement import LABELS as labels

    return (f"CASE WHEN {col} IS NULL THEN -1 ELSE CASE {col}"
            + "".join(f" WHEN '{v}' THEN {i}" for i, v in enumerate(labels)) + " END END")


def _json_ints(text: str) -> np.ndarray:
    """A JSON array of integers from SQLite (no spaces) as int64, parsed in C."""
    import numpy as np

    if "null" in text:  # a CASE fell through: a value the schema's CHECKs forbid
        raise ValueError("a verdict or reconcile in the store is not one the schema allows")
    if any(mark in text for mark in '.eE"'):  # a real or a text where an integer belongs
        raise ValueError("a non-integer value in an integer column")
    if text == "[]":
        return np.zeros(0, dtype=np.int64)
    values = np.fromstring(text[1:-1], dtype=np.int64, sep=",")
    if values.size != text.count(",") + 1:
        raise ValueError("a non-integer value in an integer column")
    return values


# Two queries, each folded into one row of JSON arrays (one fetch, no Python object per row;
# every aggregate of a query sees its rows in the same order). {source} names the judged claims
# in scope as v (and c, ca where needed). Small codes travel packed into one integer per row:
# judge + 4 * (adjudicated + 1) for a claim; (final + 1) + 4 * (blind + 1) + 16 * reconciled
# + 64 * slip for a label, reconciled being 0 (not), 1 (keep) or 2 (judge_right). A value the
# schema's CHECKs forbid turns the whole code NULL, which `_json_ints` refuses.
_CLAIMS_SQL = """
    SELECT json_group_array(v.claim_pk), json_group_array(c.answer_id),
           json_group_array(c.answer_id || '/' || c.claim_id),
           json_group_array({judge} + 4 * ({adjudicated} + 1)),
           json_group_array({answer_position}), json_group_array(c.position)
    FROM {source}
    LEFT JOIN adjudications d ON d.claim_pk = v.claim_pk
    WHERE v.run_id = :run"""

_LABELS_SQL = """
    SELECT json_group_array(h.claim_pk), json_group_array(h.reviewer),
           json_group_array(({final} + 1) + 4 * ({blind} + 1) + 64 * h.slip + 16 * CASE
               WHEN h.reconciled IS NULL THEN 0 WHEN h.reconciled = 'keep' THEN 1
               WHEN h.reconciled = 'judge_right' THEN 2 END)
    FROM {source}
    JOIN human_labels h ON h.claim_pk = v.claim_pk AND h.status = 'labeled'
    WHERE v.run_id = :run"""


def stats_columns(db: Database, run_id: int, cycle_id: int | None = None, *,
                  reviewer_labels: str = "shared") -> StatsColumns:
    """Judge verdicts of a run beside the final human labels, as arrays; optionally within one cycle.

    Two index-driven reads, the judged claims (with any adjudication) and the reviewers' labels
    on them, then the final label per claim with array operations: the adjudicated one if any;
    else none when a reviewer marked the claim unclear ("needs discussion"); else the reviewers'
    unanimous final verdict (`agreement.final_human_label`); skipped labels carry none. Claims
    whose reviewers disagree or that a reviewer marked unclear, and nobody adjudicated, are
    unresolved, claims with neither a reviewer's final verdict nor an adjudication unlabeled;
    both are left out and counted. (Resolving in SQL needs a GROUP BY per claim, which costs
    SQLite twice the two plain reads on 100k claims.) Within a cycle each claim carries its
    answer's weight 1 / inclusion probability, so the report can re-weight to the whole run.

    `reviewer_labels`: "shared" lists (claim key, reviewer, final verdict) for the claims two or
    more reviewers labeled (all that human-human agreement reads), "all" for every labeled
    claim, "none" nothing; claim order, then reviewer.
    """
    import numpy as np

    from .agreement import LABELS as names

    at_least = {"shared": 2, "all": 1, "none": 0}.get(reviewer_labels)
    if at_least is None:
        raise ValueError(f"reviewer_labels must be shared, all or none, not {reviewer_labels!r}")
    params = {"run": run_id, "cycle": cycle_id}
    if cycle_id is None:
        claims_source, labels_source, answer_position = (
            "judge_verdicts v JOIN claims c ON c.id = v.claim_pk", "judge_verdicts v", "0")
    else:
        # From the cycle's answers down: without statistics the planner would walk every verdict
        # of the run and probe the cycle for each.
        claims_source = labels_source = (
            "cycle_answers ca"
            " CROSS JOIN claims c ON ca.cycle_id = :cycle AND c.answer_id = ca.answer_id"
            " CROSS JOIN judge_verdicts v ON v.run_id = :run AND v.claim_pk = c.id")
        answer_position = "ca.position"
    with _snapshot(db):  # both reads, and the weights, from one state of the store
        pk_j, answer_j, key_j, claim_code_j, apos_j, cpos_j = db.execute(_CLAIMS_SQL.format(
            source=claims_source, judge=_verdict_code("v.verdict"), adjudicated=_verdict_code("d.verdict"),
            answer_position=answer_position), params).fetchone()
        lpk_j, reviewer_j, label_code_j = db.execute(_LABELS_SQL.format(
            source=labels_source, final=_verdict_code("h.final_verdict"),
            blind=_verdict_code("h.blind_verdict")), params).fetchone()
        # Claims some reviewer marked unclear ("needs discussion"): few, so one plain read.
        unclear_j = db.execute(
            "SELECT json_group_array(claim_pk) FROM human_labels WHERE status = 'unclear'").fetchone()[0]
        prob = {} if cycle_id is None else dict(db.execute(
            "SELECT answer_id, inclusion_prob FROM cycle_answers WHERE cycle_id = ?", [cycle_id]).fetchall())

    # Claims in report order: claim id for a run; the cycle's answer order, then claim position.
    pk = _json_ints(pk_j)
    if cycle_id is None:
        order = np.argsort(pk, kind="stable")
    else:
        order = np.lexsort((pk, _json_ints(cpos_j), _json_ints(apos_j)))
    pk = pk[order]
    claim_code = _json_ints(claim_code_j)[order]
    judge, adjudicated = claim_code & 3, (claim_code >> 2) - 1
    if (judge > 2).any():
        raise ValueError("a judge verdict in the store is empty")
    n = pk.size

    # Labels, each pointing at its claim's position in that order.
    by_pk = np.argsort(pk, kind="stable")
    label_pk = _json_ints(lpk_j)
    at = by_pk[np.searchsorted(pk[by_pk], label_pk)] if n else np.zeros(0, dtype=np.int64)
    reviewer_names: list[str] = json.loads(reviewer_j)
    reviewers = sorted(set(reviewer_names))
    rank = {name: i for i, name in enumerate(reviewers)}
    reviewer = np.fromiter((rank[r] for r in reviewer_names), dtype=np.int64, count=len(reviewer_names))
    label_code = _json_ints(label_code_j)
    final = (label_code & 3) - 1
    labels = ReviewerColumns(label_pk, at, reviewers, reviewer, final, ((label_code >> 2) & 3) - 1,
                             (label_code >> 4) & 3, label_code >> 6, judge[at])

    # The final label: count each verdict per claim; adjudicated, else none (3) when a reviewer
    # marked the claim unclear, else unanimous, else none.
    given = final >= 0
    per_verdict = np.stack([np.bincount(at[final == k], minlength=n) for k in range(len(names))])
    n_labels = per_verdict.sum(axis=0)
    unclear = np.isin(pk, _json_ints(unclear_j))
    unanimous = np.where(((per_verdict > 0).sum(axis=0) == 1) & ~unclear, per_verdict.argmax(axis=0), 3)
    human = np.where(adjudicated >= 0, adjudicated, unanimous)
    has = human < 3
    idx = np.flatnonzero(has)
    loose = ~has & ((n_labels > 0) | unclear)

    keys_all = np.array(json.loads(key_j), dtype=object)[order]
    answers = np.array(json.loads(answer_j), dtype=object)[order][idx].tolist()
    numbering: dict[str, int] = {}
    cluster = np.fromiter((numbering.setdefault(a, len(numbering)) for a in answers),
                          dtype=np.int64, count=len(answers))
    weight = None
    if cycle_id is not None:
        weight = np.array([1 / prob[a] for a in numbering], dtype=float)[cluster]

    pairs: list[tuple[str, str, str]] = []
    if at_least:
        pick = np.flatnonzero(given & (n_labels[at] >= at_least))
        pick = pick[np.lexsort((reviewer[pick], at[pick]))]
        pairs = [(keys_all[c], reviewers[r], names[v]) for c, r, v in
                 zip(at[pick].tolist(), reviewer[pick].tolist(), final[pick].tolist(), strict=True)]
    return StatsColumns(
        claim_pk=pk[idx],
        keys=keys_all[idx].tolist(),
        cluster=cluster,
        answer_ids=list(numbering),
        human=human[idx],
        judge=judge[idx],
        weight=weight,
        reviewer_labels=pairs,
        unresolved=tuple(keys_all[loose].tolist()),
        unresolved_pk=pk[loose],
        unlabeled=int((~has & (n_labels == 0) & ~unclear).sum()),
        labels=labels,
    )


def run_verdicts(db: Database, run_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Claim ids a run judged, ascending (int64), and its verdicts as indices into LABELS."""
    import numpy as np

    pk_j, verdict_j = db.execute(
        f"SELECT json_group_array(claim_pk), json_group_array({_verdict_code('verdict')}) "
        "FROM judge_verdicts WHERE run_id = ?", [run_id]).fetchone()
    pk = np.array(json.loads(pk_j), dtype=np.int64)
    order = np.argsort(pk, kind="stable")
    return pk[order], _json_ints(verdict_j)[order]


def stats_input(db: Database, run_id: int, cycle_id: int | None = None) -> StatsInput:
    """Judge verdicts of a run beside the final human labels, optionally within one cycle.

    The per-claim form of `stats_columns` (every reviewer label included): the human side is
    the claim's final label, the adjudicated one if any, else none when a reviewer marked it
    unclear, else the reviewers' unanimous final verdict (`agreement.final_human_label`). Within a
    cycle each claim carries its answer's weight 1 / inclusion probability.
    """
    from .agreement import LABELS as labels
    from .agreement import LabeledClaim

    cols = stats_columns(db, run_id, cycle_id, reviewer_labels="all")
    answers = [cols.answer_ids[i] for i in cols.cluster.tolist()]
    weights = [None] * len(cols) if cols.weight is None else cols.weight.tolist()
    items = [LabeledClaim(a, k, labels[h], labels[j], w) for a, k, h, j, w in zip(
        answers, cols.keys, cols.human.tolist(), cols.judge.tolist(), weights, strict=True)]
    return StatsInput(items, cols.reviewer_labels, cols.unresolved, cols.unlabeled)


