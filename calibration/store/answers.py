"""Answers, chunks, claims and judge verdicts as imports write them, and the writes of a restore.

`AnswerWriter` is the bulk path of `import`: it checks each answer against what is stored
(same content, same claim texts, same verdict per run) and queues new rows, written in
batches inside the caller's transaction. The restore of an
export (`calibration.importing.restore_*`) writes row by row through the functions below,
since it must keep histories and timestamps exactly as exported.

Writes here are plain SQL rather than sqlite-utils' `insert` / `upsert` / `insert_all`: those
inspect the table's schema on every call and every value, which made a restore three to four
times slower and the bulk import twice as slow.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import Option, Problem
from .connection import now, write
from .database import Database
from .imports import MarkedStaging, next_claim_pk, pause_between_batches, reserve_claims
from .reveals import commit_imported

if TYPE_CHECKING:
    from ..models import JudgedAnswerIn

# Verdicts queued before the batch goes to SQLite: large enough that per-statement overhead
# vanishes, small enough that memory stays flat however big the file is.
FLUSH_EVERY = 5000
# Staged rows moved in per write transaction: a reviewer's label waits for at most one batch
# (measured: slowest label 235 ms during a 32 MB import on this machine).
PUBLISH_BATCH = 2000

_ANSWER_COLS = ("id", "question", "answer", "category", "metadata", "content_hash", "imported_at")
_CHUNK_COLS = ("answer_id", "position", "chunk_id", "text", "source")
_CLAIM_COLS = ("id", "answer_id", "claim_id", "position", "text")
_VERDICT_COLS = ("run_id", "claim_pk", "verdict", "raw_verdict", "rationale", "evidence")


class ImportCounts(Protocol):
    """What `AnswerWriter` counts as it goes (the import's report carries these fields)."""

    answers_new: int
    answers_existing: int
    answers_updated: int
    claims_new: int
    verdicts_new: int
    verdicts_existing: int


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def answer_hash(db: Database, answer_id: str) -> str | None:
    """The stored content hash of an answer; None when the answer is not in the database."""
    row = db.execute("SELECT content_hash FROM answers WHERE id = ?", [answer_id]).fetchone()
    return None if row is None else str(row[0])


class AnswerWriter:
    """Writes validated judged answers inside the caller's transaction, batching the inserts.

    `add` refuses (returns the reason) rather than overwrite: an answer whose text changed, a
    claim id whose text changed, or a run's verdict that changed, since stored claims may carry
    human labels. Call `flush` before the transaction ends.
    """

    def __init__(
        self, db: Database, counts: ImportCounts, *, update: bool = False, staging: Staging | None = None
    ) -> None:
        self.db = db
        self.counts = counts
        # With `staging`, rows go to its connection-private tables (no lock on the database) and
        # `Staging.publish` moves them in at the end; else straight into the tables.
        self.staging = staging
        self.update = update  # a changed category / metadata is written, not refused
        self.updates: list[tuple[Any, ...]] = []
        self.next_claim = int(db.execute("SELECT coalesce(max(id), 0) FROM claims").fetchone()[0]) + 1
        self.answers: list[tuple[Any, ...]] = []
        self.chunks: list[tuple[Any, ...]] = []
        self.claims: list[tuple[Any, ...]] = []
        self.verdicts: list[tuple[Any, ...]] = []
        self.ts = now()

    def add(self, rec: JudgedAnswerIn, digest: str, verdicts: Sequence[str], run: int) -> Problem | None:
        """Queue one answer's rows (its content hash `digest`, one verdict per claim, judged by
        run `run`); return the conflict (the caller adds file and line) instead of writing on conflict."""
        db = self.db
        stored_hash = answer_hash(db, rec.id)
        existing_claims: dict[str, tuple[int, str]] = {}
        by_text: dict[str, str] = {}
        if stored_hash is not None:
            if stored_hash != digest:
                return Problem(
                    f"answer {rec.id!r} is already in the database with different question, "
                    "answer or chunk text; refused, since its claims may carry human labels "
                    "(import it under a new id)"
                )
            self.counts.answers_existing += 1
            changed = self._described_differently(rec)
            if changed and not self.update:
                return Problem(
                    f"answer {rec.id!r} is already in the database with a different {changed}; "
                    "refused, since category drives stratified sampling",
                    hint=("to replace the stored category and metadata, import with ", Option.UPDATE),
                )
            if changed:
                self.updates.append((rec.category, _json(rec.metadata), rec.id))
                self.counts.answers_updated += 1
            for pk, cid, text in db.execute(
                "SELECT id, claim_id, text FROM claims WHERE answer_id = ?", [rec.id]
            ):
                existing_claims[cid] = (pk, text)
                by_text.setdefault(text, cid)
        else:
            self.counts.answers_new += 1
            self.answers.append(
                (rec.id, rec.question, rec.answer, rec.category, _json(rec.metadata), digest, self.ts)
            )
            self.chunks += [(rec.id, i, c.id, c.text, c.source) for i, c in enumerate(rec.chunks)]
        position = len(existing_claims)
        for i, (claim, verdict) in enumerate(zip(rec.claims, verdicts, strict=True)):
            cid = claim.id or by_text.get(claim.text)
            if cid is None:
                # Without an id, a claim is known by its text; a new text gets the next free id.
                n = position + 1
                while f"c{n}" in existing_claims:
                    n += 1
                cid = f"c{n}"
            if cid in existing_claims:
                pk, text = existing_claims[cid]
                if text != claim.text:
                    return Problem(
                        f"claim {cid!r} of answer {rec.id!r} already has different text; refused",
                        field=f"claims.{i}",
                    )
                old = judge_verdict(db, run, pk)
                if old is not None:
                    if old != verdict:
                        return Problem(
                            f"this judge run already gave claim {cid!r} the verdict {old}, "
                            f"not {verdict}; refused",
                            field=f"claims.{i}",
                        )
                    self.counts.verdicts_existing += 1
                    continue
            else:
                pk = self.next_claim
                self.next_claim += 1
                position += 1
                existing_claims[cid] = (pk, claim.text)
                by_text.setdefault(claim.text, cid)
                self.claims.append((pk, rec.id, cid, position - 1, claim.text))
                self.counts.claims_new += 1
            self.verdicts.append((run, pk, verdict, claim.verdict, claim.rationale, _json(claim.evidence)))
            self.counts.verdicts_new += 1
        if len(self.verdicts) >= FLUSH_EVERY:
            self.flush()
        return None

    def _described_differently(self, rec: JudgedAnswerIn) -> str | None:
        """'category', 'metadata' or 'category and metadata' when the stored answer's differ."""
        category, metadata = self.db.execute(
            "SELECT category, metadata FROM answers WHERE id = ?", [rec.id]
        ).fetchone()
        diff = [
            name
            for name, same in (
                ("category", category == rec.category),
                ("metadata", json.loads(metadata or "{}") == rec.metadata),
            )
            if not same
        ]
        return " and ".join(diff) or None

    def flush(self) -> None:
        """Write the queued rows, parents first (the foreign keys are checked per statement)."""
        prefix = "temp.s_" if self.staging is not None else ""
        if self.updates:
            if self.staging is not None:
                self.db.executemany("INSERT INTO temp.s_updates VALUES (?,?,?)", self.updates)
            else:
                self.db.executemany(
                    "UPDATE answers SET category = ?, metadata = ? WHERE id = ?", self.updates
                )
            self.updates = []
        for table, cols, rows in (
            ("answers", _ANSWER_COLS, self.answers),
            ("chunks", _CHUNK_COLS, self.chunks),
            ("claims", _CLAIM_COLS, self.claims),
            ("judge_verdicts", _VERDICT_COLS, self.verdicts),
        ):
            if rows:
                self.db.executemany(
                    f"INSERT INTO {prefix}{table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                    rows,
                )
        self.answers, self.chunks, self.claims, self.verdicts = [], [], [], []


class Staging(MarkedStaging):
    """Connection-private (TEMP) copies of the import tables, filled while the file is read.

    Writing them takes no lock on the database, so reviewers' labels go on while a large file
    is parsed and checked; `publish` then moves the rows in by short writes and `finish` lands
    the rest and makes them visible in one small write. Until then the import's marker
    (`imports`, id `import_id`) hides every row moved in from every reader, and says what to
    delete should the process die in the middle, so the file lands all or nothing for readers
    too. Judge runs new to the database get provisional negative ids until publish, and claim
    keys are shifted if another import took the ones reserved meanwhile.
    """

    TABLES = (
        ("answers", _ANSWER_COLS),
        ("chunks", _CHUNK_COLS),
        ("claims", _CLAIM_COLS),
        ("judge_verdicts", _VERDICT_COLS),
    )
    _LATE = (("claims", _CLAIM_COLS), ("judge_verdicts", _VERDICT_COLS))

    def __init__(self, db: Database) -> None:
        temp = [f"s_{t}" for t, _cols in self.TABLES] + [f"late_{t}" for t, _cols in self._LATE]
        super().__init__(db, [*temp, "s_updates"])
        self.first_claim = int(db.execute("SELECT coalesce(max(id), 0) FROM claims").fetchone()[0]) + 1
        for table, cols in self.TABLES:
            db.create_staging(f"s_{table}", table, cols)
        for table, cols in self._LATE:
            db.create_staging(f"late_{table}", table, cols)
        db.create_staging("s_updates", "answers", ("category", "metadata", "id"))

    def publish(self, runs: dict[int, int], *, batch: int = PUBLISH_BATCH) -> None:
        """Move the staged rows in, `batch` rows per write transaction, all hidden by the marker;
        `runs`: provisional run id -> real one (created by the caller, listed in the marker).

        Only rows the marker can hide move in here: new answers with their chunks, claims and
        verdicts, and the verdicts of runs this import created. Claims added to answers already
        stored, and verdicts of an older run on older claims, would be seen at once (a review
        card reads an answer's claims), so `finish` writes them; they are few in practice, a
        file adding claims to answers imported before. Parents go first, so every committed
        state is consistent; the write lock is released between batches, so a reviewer's label
        waits for one batch at most. On failure the caller takes everything back through the
        marker (`imports.remove`).
        """
        db = self.db
        with write(db):
            for provisional, real in runs.items():
                db.execute(
                    "UPDATE temp.s_judge_verdicts SET run_id = ? WHERE run_id = ?", [real, provisional]
                )
            # Past every stored claim and every range another unfinished import reserved.
            shift = max(0, next_claim_pk(db) - self.first_claim)
            if shift:  # another import took the claim keys reserved when reading began
                db.execute("UPDATE temp.s_claims SET id = id + ?", [shift])
                db.execute(
                    "UPDATE temp.s_judge_verdicts SET claim_pk = claim_pk + ? WHERE claim_pk >= ?",
                    [shift, self.first_claim],
                )
            lo, hi = db.execute("SELECT min(id), max(id) FROM temp.s_claims").fetchone()
            if self.import_id is not None:
                reserve_claims(db, self.import_id, lo, hi)
            self._set_late_aside(list(runs.values()))
        for table, cols in self.TABLES:
            names = ", ".join(cols)
            last = int(db.execute(f"SELECT coalesce(max(rowid), 0) FROM temp.s_{table}").fetchone()[0])
            for lo_row in range(1, last + 1, batch):
                with write(db):
                    db.execute(
                        f"INSERT INTO main.{table} ({names}) SELECT {names} FROM temp.s_{table} "
                        "WHERE rowid BETWEEN ? AND ?",
                        [lo_row, lo_row + batch - 1],
                    )
                # Copy the batch into the database file now, outside the write lock; else the
                # next small commit (a reviewer's label) would pay for the whole WAL.
                db.checkpoint()
                pause_between_batches()

    def _set_late_aside(self, new_runs: list[int]) -> None:
        """Move the rows only `finish` may write (see `publish`) to the late_ tables."""
        db = self.db
        db.execute("""INSERT INTO temp.late_claims SELECT * FROM temp.s_claims
                      WHERE answer_id NOT IN (SELECT id FROM temp.s_answers)""")
        db.execute("DELETE FROM temp.s_claims WHERE id IN (SELECT id FROM temp.late_claims)")
        # A verdict moves in early when its claim does, or when its run is new and its claim old.
        db.execute(
            """INSERT INTO temp.late_judge_verdicts SELECT * FROM temp.s_judge_verdicts v
                      WHERE NOT (v.claim_pk IN (SELECT id FROM temp.s_claims)
                                 OR (v.run_id IN (SELECT CAST(value AS INTEGER) FROM json_each(:runs))
                                     AND v.claim_pk NOT IN (SELECT id FROM temp.late_claims)))""",
            {"runs": json.dumps(new_runs)},
        )
        db.execute("""DELETE FROM temp.s_judge_verdicts WHERE rowid IN (
                          SELECT s.rowid FROM temp.s_judge_verdicts s JOIN temp.late_judge_verdicts l
                          ON l.run_id = s.run_id AND l.claim_pk = s.claim_pk)""")

    def finish(self) -> None:
        """The last write: the set-aside rows and the category / metadata updates, with the
        marker flipped to 'done' (`finishing`)."""
        with self.finishing() as db:
            for table, cols in self._LATE:
                names = ", ".join(cols)
                db.execute(f"INSERT INTO main.{table} ({names}) SELECT {names} FROM temp.late_{table}")
            db.execute(
                "UPDATE main.answers SET category = u.category, metadata = u.metadata "
                "FROM temp.s_updates u WHERE main.answers.id = u.id"
            )


def judge_verdict(db: Database, run_id: int, claim_pk: int) -> str | None:
    """The verdict run `run_id` gave claim `claim_pk`; None when it gave none."""
    row = db.execute(
        "SELECT verdict FROM judge_verdicts WHERE run_id = ? AND claim_pk = ?", [run_id, claim_pk]
    ).fetchone()
    return None if row is None else str(row[0])


def unknown_chunks(db: Database, answer_id: str, chunk_ids: Sequence[str]) -> list[str]:
    """The ids in `chunk_ids` that name no chunk of the answer, in the order given."""
    known = {r[0] for r in db.execute("SELECT chunk_id FROM chunks WHERE answer_id = ?", [answer_id])}
    return [c for c in chunk_ids if c not in known]


# ---------------------------------------------------------------- restore of an export


def insert_answer(
    db: Database,
    *,
    answer_id: str,
    question: str,
    answer: str,
    category: str | None,
    metadata: dict[str, Any],
    content_hash: str,
    holdout: bool,
    chunks: Sequence[tuple[str, str, str | None]],
) -> None:
    """Insert one answer with its chunks, given as (chunk id, text, source) in order."""
    db.execute(
        "INSERT INTO answers (id, question, answer, category, metadata, content_hash, holdout, "
        "imported_at) VALUES (?,?,?,?,?,?,?,?)",
        [answer_id, question, answer, category, _json(metadata), content_hash, int(holdout), now()],
    )
    db.executemany(
        "INSERT INTO chunks (answer_id, position, chunk_id, text, source) VALUES (?,?,?,?,?)",
        [(answer_id, i, cid, text, source) for i, (cid, text, source) in enumerate(chunks)],
    )


def find_claim(db: Database, answer_id: str, claim_id: str) -> tuple[int, str] | None:
    """(claim pk, text) of claim `claim_id` of an answer; None when there is no such claim."""
    row = db.execute(
        "SELECT id, text FROM claims WHERE answer_id = ? AND claim_id = ?", [answer_id, claim_id]
    ).fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


def insert_claim(db: Database, *, answer_id: str, claim_id: str, position: int, text: str) -> int:
    """Insert a claim; return its pk (past the ids an unfinished import has reserved)."""
    pk = next_claim_pk(db)
    db.execute(
        "INSERT INTO claims (id, answer_id, claim_id, position, text) VALUES (?,?,?,?,?)",
        [pk, answer_id, claim_id, position, text],
    )
    return pk


def insert_judge_verdict(
    db: Database,
    *,
    run_id: int,
    claim_pk: int,
    verdict: str,
    raw_verdict: str | None,
    rationale: str | None,
    evidence: Sequence[str],
) -> None:
    """Insert one run's verdict on one claim."""
    db.execute(
        "INSERT INTO judge_verdicts (run_id, claim_pk, verdict, raw_verdict, rationale, evidence) "
        "VALUES (?,?,?,?,?,?)",
        [run_id, claim_pk, verdict, raw_verdict, rationale, _json(list(evidence))],
    )


# The fields that identify a label event across databases (ids and run/cycle ids differ).
EVENT_KEY = ("reviewer", "kind", "verdict", "evidence", "note", "created_at")
# A reviewer's current label as restore compares and writes it.
LABEL_COLUMNS = (
    "status",
    "blind_verdict",
    "final_verdict",
    "reconciled",
    "slip",
    "evidence",
    "note",
    "cycle_id",
    "blind_at",
    "final_at",
    "updated_at",
)


def event_keys(db: Database, claim_pk: int) -> list[dict[str, Any]]:
    """A claim's label history, oldest first, as EVENT_KEY fields (evidence as stored JSON text)."""
    return [
        dict(zip(EVENT_KEY, r, strict=True))
        for r in db.execute(
            f"SELECT {', '.join(EVENT_KEY)} FROM label_events WHERE claim_pk = ? ORDER BY id", [claim_pk]
        )
    ]


def append_event(
    db: Database,
    *,
    claim_pk: int,
    reviewer: str,
    kind: str,
    verdict: str | None,
    evidence: Sequence[str],
    note: str | None,
    cycle_id: int | None,
    judge_run_id: int | None,
    created_at: str,
) -> None:
    """Append one label event with the time it was first given (restore keeps history as it was)."""
    db.execute(
        "INSERT INTO label_events (claim_pk, reviewer, kind, verdict, evidence, note, cycle_id, "
        "judge_run_id, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
        [claim_pk, reviewer, kind, verdict, _json(list(evidence)), note, cycle_id, judge_run_id, created_at],
    )


def current_label(db: Database, claim_pk: int, reviewer: str) -> tuple[Any, ...] | None:
    """A reviewer's current label on a claim as LABEL_COLUMNS values; None when there is none."""
    row = db.execute(
        f"SELECT {', '.join(LABEL_COLUMNS)} FROM human_labels WHERE claim_pk = ? AND reviewer = ?",
        [claim_pk, reviewer],
    ).fetchone()
    return None if row is None else tuple(row)


def put_label(db: Database, claim_pk: int, reviewer: str, values: dict[str, Any]) -> None:
    """Insert or replace a reviewer's current label; `values` maps every LABEL_COLUMNS name."""
    cols = ("claim_pk", "reviewer", *LABEL_COLUMNS)
    updates = ", ".join(f"{c} = excluded.{c}" for c in LABEL_COLUMNS)
    db.execute(
        f"INSERT INTO human_labels ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) "
        f"ON CONFLICT (claim_pk, reviewer) DO UPDATE SET {updates}",
        [claim_pk, reviewer, *(values[c] for c in LABEL_COLUMNS)],
    )
    commit_imported(db, [(claim_pk, reviewer)])


def adjudication(db: Database, claim_pk: int) -> tuple[str, str, str | None, str] | None:
    """(verdict, adjudicator, note, created_at) of a claim's adjudication; None when it has none."""
    row = db.execute(
        "SELECT verdict, adjudicator, note, created_at FROM adjudications WHERE claim_pk = ?", [claim_pk]
    ).fetchone()
    return None if row is None else (row[0], row[1], row[2], row[3])


def put_adjudication(
    db: Database, claim_pk: int, *, verdict: str, adjudicator: str, note: str | None, created_at: str
) -> None:
    """Insert or replace a claim's adjudication, keeping the time it was first given."""
    db.execute(
        "INSERT INTO adjudications (claim_pk, verdict, adjudicator, note, created_at) "
        "VALUES (?,?,?,?,?) ON CONFLICT (claim_pk) DO UPDATE SET verdict = excluded.verdict, "
        "adjudicator = excluded.adjudicator, note = excluded.note, created_at = excluded.created_at",
        [claim_pk, verdict, adjudicator, note, created_at],
    )
