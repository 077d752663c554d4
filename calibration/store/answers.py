"""Answers, chunks, claims and judge verdicts as imports write them, and the writes of a restore.

`AnswerWriter` is the bulk path of `import`: it checks each answer against what is stored
(same content, same claim texts, same verdict per run) and queues new rows, written in
batches inside the caller's transaction. The restore of an
export (`calibration.importing.restore_*`) writes row by row through the functions below,
since it must keep histories and timestamps exactly as exported.

The statements a row-by-row path runs many times are built once (module constants with bound
parameters), so each call pays for running them, not for building and compiling them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from sqlalchemy import Table, TableClause, bindparam, exists, func, insert, select, update

from ..errors import Option, Problem
from .connection import now, write
from .core import insert_of, staging
from .database import Database
from .imports import MarkedStaging, hold_numbering, next_claim_pk, pause_between_batches, reserve_claims
from .labels import label_upsert
from .labels import put_adjudication as put_adjudication  # the restore writes it too
from .reveals import commit_imported
from .tables import adjudications, answers, chunks, claims, human_labels, judge_verdicts, label_events

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
_UPDATE_COLS = ("category", "metadata", "id")
_RESTORED_ANSWER_COLS = (
    "id",
    "question",
    "answer",
    "category",
    "metadata",
    "content_hash",
    "holdout",
    "imported_at",
)
_EVENT_COLS = (
    "claim_pk",
    "reviewer",
    "kind",
    "verdict",
    "evidence",
    "note",
    "cycle_id",
    "judge_run_id",
    "created_at",
)

_a, _c, _v = answers.c, claims.c, judge_verdicts.c
_chunk_table = chunks  # `insert_answer` takes the answer's chunks under that name
_HASH = select(_a.content_hash).where(_a.id == bindparam("id"))
_DESCRIBED = select(_a.category, _a.metadata).where(_a.id == bindparam("id"))
_CLAIMS_OF = select(_c.id, _c.claim_id, _c.text).where(_c.answer_id == bindparam("answer"))
_CLAIM = select(_c.id, _c.text).where(_c.answer_id == bindparam("answer"), _c.claim_id == bindparam("claim"))
_VERDICT = select(_v.verdict).where(_v.run_id == bindparam("run"), _v.claim_pk == bindparam("claim"))
_CHUNK_IDS = select(chunks.c.chunk_id).where(chunks.c.answer_id == bindparam("answer"))
_LAST_CLAIM = select(func.coalesce(func.max(_c.id), 0))
_RECATEGORISE = (
    update(answers)
    .where(_a.id == bindparam("id"))
    .values(category=bindparam("category"), metadata=bindparam("metadata"))
)


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
    found = db.run_direct(_HASH, {"id": answer_id})
    return None if not found else str(found[0][0])


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
        if staging is None:  # claims go in with the ids given here: past every reserved range too
            hold_numbering(db)
            self.next_claim = next_claim_pk(db)
        else:  # shifted at publish should another import take these meanwhile
            self.next_claim = int(db.run(_LAST_CLAIM).scalar_one()) + 1
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
            for pk, cid, text in db.run_direct(_CLAIMS_OF, {"answer": rec.id}):
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
        category, metadata = self.db.run(_DESCRIBED, {"id": rec.id}).one()
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
        if self.updates:
            change = _STAGE_UPDATES if self.staging is not None else _RECATEGORISE
            self.db.run_direct_many(change, _UPDATE_COLS, self.updates)
            self.updates = []
        for (table, cols), rows in zip(
            Staging.TABLES, (self.answers, self.chunks, self.claims, self.verdicts), strict=True
        ):
            if rows:
                into = Staging.STAGED[table.name] if self.staging is not None else table
                self.db.run_direct_many(insert_of(into, cols), cols, rows)
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

    TABLES: tuple[tuple[Table, tuple[str, ...]], ...] = (
        (answers, _ANSWER_COLS),
        (chunks, _CHUNK_COLS),
        (claims, _CLAIM_COLS),
        (judge_verdicts, _VERDICT_COLS),
    )
    _LATE_TABLES = ((claims, _CLAIM_COLS), (judge_verdicts, _VERDICT_COLS))
    STAGED: ClassVar[dict[str, TableClause]] = {t.name: staging(f"s_{t.name}", cols) for t, cols in TABLES}
    LATE: ClassVar[dict[str, TableClause]] = {
        t.name: staging(f"late_{t.name}", cols) for t, cols in _LATE_TABLES
    }
    UPDATES = staging("s_updates", _UPDATE_COLS)

    def __init__(self, db: Database) -> None:
        temp = [t.name for t in (*self.STAGED.values(), *self.LATE.values())]
        super().__init__(db, [*temp, self.UPDATES.name])
        self.first_claim = int(db.run(_LAST_CLAIM).scalar_one()) + 1
        for table, cols in self.TABLES:
            db.create_staging(self.STAGED[table.name].name, table.name, cols)
        for table, cols in self._LATE_TABLES:
            db.create_staging(self.LATE[table.name].name, table.name, cols)
        db.create_staging(self.UPDATES.name, "answers", _UPDATE_COLS)

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
        sc, sv = self.STAGED["claims"].c, self.STAGED["judge_verdicts"].c
        with write(db):
            for provisional, real in runs.items():
                db.run(
                    update(self.STAGED["judge_verdicts"]).where(sv.run_id == provisional).values(run_id=real)
                )
            # Past every stored claim and every range another unfinished import reserved.
            hold_numbering(db)
            shift = max(0, next_claim_pk(db) - self.first_claim)
            if shift:  # another import took the claim keys reserved when reading began
                db.run(update(self.STAGED["claims"]).values(id=sc.id + shift))
                db.run(
                    update(self.STAGED["judge_verdicts"])
                    .where(sv.claim_pk >= self.first_claim)
                    .values(claim_pk=sv.claim_pk + shift)
                )
            lo, hi = db.run(select(func.min(sc.id), func.max(sc.id))).one()
            if self.import_id is not None:
                reserve_claims(db, self.import_id, lo, hi)
            self._set_late_aside(list(runs.values()))
        for table, cols in self.TABLES:
            staged = self.STAGED[table.name]
            last = int(db.run(select(func.coalesce(func.max(staged.c.rowid), 0))).scalar_one())
            for lo_row in range(1, last + 1, batch):
                with write(db):
                    db.run(
                        insert(table).from_select(
                            cols,
                            select(*(staged.c[c] for c in cols)).where(
                                staged.c.rowid.between(lo_row, lo_row + batch - 1)
                            ),
                        )
                    )
                # Copy the batch into the database file now, outside the write lock; else the
                # next small commit (a reviewer's label) would pay for the whole WAL.
                db.checkpoint()
                pause_between_batches()

    def _set_late_aside(self, new_runs: list[int]) -> None:
        """Move the rows only `finish` may write (see `publish`) to the late_ tables."""
        db = self.db
        s_answers, s_claims, s_verdicts = (self.STAGED[t] for t in ("answers", "claims", "judge_verdicts"))
        late_claims, late_verdicts = self.LATE["claims"], self.LATE["judge_verdicts"]
        db.run(
            insert(late_claims).from_select(
                _CLAIM_COLS,
                select(*(s_claims.c[c] for c in _CLAIM_COLS)).where(
                    s_claims.c.answer_id.not_in(select(s_answers.c.id))
                ),
            )
        )
        db.run(s_claims.delete().where(s_claims.c.id.in_(select(late_claims.c.id))))
        # A verdict moves in early when its claim does, or when its run is new and its claim old.
        v = s_verdicts.c
        early = v.claim_pk.in_(select(s_claims.c.id)) | (
            v.run_id.in_(new_runs) & v.claim_pk.not_in(select(late_claims.c.id))
        )
        db.run(
            insert(late_verdicts).from_select(
                _VERDICT_COLS, select(*(v[c] for c in _VERDICT_COLS)).where(~early)
            )
        )
        lv = late_verdicts.c
        db.run(s_verdicts.delete().where(exists().where(lv.run_id == v.run_id, lv.claim_pk == v.claim_pk)))

    def finish(self) -> None:
        """The last write: the set-aside rows and the category / metadata updates, with the
        marker flipped to 'done' (`finishing`)."""
        with self.finishing() as db:
            for table, cols in self._LATE_TABLES:
                late = self.LATE[table.name]
                db.run(insert(table).from_select(cols, select(*(late.c[c] for c in cols))))
            u = self.UPDATES.c
            db.run(update(answers).where(_a.id == u.id).values(category=u.category, metadata=u.metadata))
            db.resume_numbering((claims.name,))  # the claims came with the ids reserved for them


_STAGE_UPDATES = insert_of(Staging.UPDATES, _UPDATE_COLS)


def judge_verdict(db: Database, run_id: int, claim_pk: int) -> str | None:
    """The verdict run `run_id` gave claim `claim_pk`; None when it gave none."""
    found = db.run_direct(_VERDICT, {"run": run_id, "claim": claim_pk})
    return None if not found else str(found[0][0])


def unknown_chunks(db: Database, answer_id: str, chunk_ids: Sequence[str]) -> list[str]:
    """The ids in `chunk_ids` that name no chunk of the answer, in the order given."""
    known = set(db.run(_CHUNK_IDS, {"answer": answer_id}).scalars())
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
    row = (answer_id, question, answer, category, _json(metadata), content_hash, int(holdout), now())
    db.run_direct_many(insert_of(answers, _RESTORED_ANSWER_COLS), _RESTORED_ANSWER_COLS, [row])
    if chunks:
        rows = [(answer_id, i, cid, text, source) for i, (cid, text, source) in enumerate(chunks)]
        db.run_direct_many(insert_of(_chunk_table, _CHUNK_COLS), _CHUNK_COLS, rows)


def find_claim(db: Database, answer_id: str, claim_id: str) -> tuple[int, str] | None:
    """(claim pk, text) of claim `claim_id` of an answer; None when there is no such claim."""
    found = db.run_direct(_CLAIM, {"answer": answer_id, "claim": claim_id})
    return None if not found else (int(found[0][0]), str(found[0][1]))


def insert_claim(db: Database, *, answer_id: str, claim_id: str, position: int, text: str) -> int:
    """Insert a claim; return its pk (past the ids an unfinished import has reserved)."""
    pk = next_claim_pk(db)
    row = (pk, answer_id, claim_id, position, text)
    db.run_direct_many(insert_of(claims, _CLAIM_COLS), _CLAIM_COLS, [row])
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
    row = (run_id, claim_pk, verdict, raw_verdict, rationale, _json(list(evidence)))
    db.run_direct_many(insert_of(judge_verdicts, _VERDICT_COLS), _VERDICT_COLS, [row])


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
_e, _h, _d = label_events.c, human_labels.c, adjudications.c
_EVENTS = select(*(_e[c] for c in EVENT_KEY)).where(_e.claim_pk == bindparam("claim")).order_by(_e.id)
_LABEL = select(*(_h[c] for c in LABEL_COLUMNS)).where(
    _h.claim_pk == bindparam("claim"), _h.reviewer == bindparam("reviewer")
)
_ADJUDICATION = select(_d.verdict, _d.adjudicator, _d.note, _d.created_at).where(
    _d.claim_pk == bindparam("claim")
)


_HOLD_CLAIM = select(claims.c.id).where(claims.c.id == bindparam("claim")).with_for_update(key_share=True)


def event_keys(db: Database, claim_pk: int) -> list[dict[str, Any]]:
    """A claim's label history, oldest first, as EVENT_KEY fields (evidence as stored JSON text);
    the claim held until the write ends (`Database.lock`), so that a second restore of the same
    file waits and appends no event twice."""
    db.lock(_HOLD_CLAIM, {"claim": claim_pk})
    return [dict(zip(EVENT_KEY, r, strict=True)) for r in db.run_direct(_EVENTS, {"claim": claim_pk})]


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
    row = (claim_pk, reviewer, kind, verdict, _json(list(evidence)), note, cycle_id, judge_run_id, created_at)
    db.run_direct_many(insert_of(label_events, _EVENT_COLS), _EVENT_COLS, [row])


def current_label(db: Database, claim_pk: int, reviewer: str) -> tuple[Any, ...] | None:
    """A reviewer's current label on a claim as LABEL_COLUMNS values; None when there is none."""
    found = db.run_direct(_LABEL, {"claim": claim_pk, "reviewer": reviewer})
    return found[0] if found else None


def put_label(db: Database, claim_pk: int, reviewer: str, values: dict[str, Any]) -> None:
    """Insert or replace a reviewer's current label; `values` maps every LABEL_COLUMNS name."""
    cols = ("claim_pk", "reviewer", *LABEL_COLUMNS)
    db.run(
        label_upsert(db.dialect, cols),
        {"claim_pk": claim_pk, "reviewer": reviewer, **{c: values[c] for c in LABEL_COLUMNS}},
    )
    commit_imported(db, [(claim_pk, reviewer)])


def adjudication(db: Database, claim_pk: int) -> tuple[str, str, str | None, str] | None:
    """(verdict, adjudicator, note, created_at) of a claim's adjudication; None when it has none."""
    found = db.run_direct(_ADJUDICATION, {"claim": claim_pk})
    return None if not found else (found[0][0], found[0][1], found[0][2], found[0][3])
