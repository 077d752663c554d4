"""Label writes and reads: the append-only history and each reviewer's current label."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Insert, Row, and_, bindparam, func, insert, literal, select
from sqlalchemy.sql.elements import KeyedColumnElement

from ..errors import ConflictError, InputError, NotFoundError, StaleLabelError
from ..vocab import LABEL_KINDS, Verdict
from .connection import now, write
from .core import ONE, staging, upsert
from .database import Database
from .imports import MarkedStaging, pause_between_batches
from .reveals import SETTLING_KINDS, commit_imported
from .roster import check_writer
from .tables import adjudications, answers, claims, human_labels, judge_verdicts, label_events

Col = ColumnElement[Any] | KeyedColumnElement[Any]

# Labels moved in per write transaction (`record_new_imports`): tens of milliseconds, the commits
# they complete included (a few hundred on a machine busy with other work), so a reviewer's
# verdict waits for about one batch at most.
LABEL_BATCH = 500


def claim_pk(db: Database, answer_id: str, claim_id: str) -> int:
    found = db.run(
        select(claims.c.id).where(claims.c.answer_id == answer_id, claims.c.claim_id == claim_id)
    ).scalar()
    if found is None:
        if db.run(select(ONE).where(answers.c.id == answer_id)).first() is None:
            raise NotFoundError(f"no answer {answer_id!r} in the database")
        raise NotFoundError(f"no claim {claim_id!r} in answer {answer_id!r}")
    return int(found)


def _verdict(value: Verdict | str) -> str:
    try:
        return Verdict(value).value
    except ValueError:
        raise InputError(f"unknown verdict {value!r}: use SUPPORTED, CONTRADICTED or UNSUPPORTED") from None


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
    event_id: int | None = None  # the reviewer's latest label event on the claim: the version


def latest_event(
    claim: ColumnElement[int] | KeyedColumnElement[int],
    reviewer: ColumnElement[str] | KeyedColumnElement[str],
) -> ColumnElement[int]:
    """The version of a reviewer's label on a claim: their latest event on it (label_events_claim);
    a lead's adjudication, recorded under the lead's name, is not a label of theirs. Newest first
    along the index, so the read stops at the first match however long the history."""
    e = label_events.alias("e")
    return (
        select(e.c.id)
        .where(e.c.claim_pk == claim, e.c.reviewer == reviewer, e.c.kind != "adjudicate")
        .order_by(e.c.id.desc())
        .limit(ONE)
        .scalar_subquery()
    )


def settled_in(claim: Col, reviewer: Col) -> ColumnElement[int]:
    """The cycle where the reviewer's verdict or unclear mark on the claim was given: their
    latest blind, unclear or import event's (a reconcile or a skip settles nothing). NULL: an
    import, or a label without history. The lead's table and the reviewer's queue both read it,
    so they tell a label made here from a reused one alike."""
    e = label_events.alias("e")
    return (
        select(e.c.cycle_id)
        .where(
            e.c.claim_pk == claim,
            e.c.reviewer == reviewer,
            e.c.kind.in_([literal(k) for k in SETTLING_KINDS]),
        )
        .order_by(e.c.id.desc())
        .limit(ONE)
        .scalar_subquery()
    )


@dataclass(frozen=True, slots=True)
class BasedOn:
    """The label state a write was based on (what the card showed): the reviewer's latest event
    on the claim then (`LabelState.event_id`), None when they had no label on it."""

    event_id: int | None


def _label_state(row: Sequence[Any] | Row[Any] | None, claim: int, reviewer: str) -> LabelState | None:
    if row is None:
        return None
    status, blind, final, reconciled, slip, evidence, note, event_id = row
    return LabelState(
        claim, reviewer, status, blind, final, reconciled, bool(slip), json.loads(evidence), note, event_id
    )


_h = human_labels.c
_STATE = select(
    _h.status,
    _h.blind_verdict,
    _h.final_verdict,
    _h.reconciled,
    _h.slip,
    _h.evidence,
    _h.note,
    latest_event(_h.claim_pk, _h.reviewer),
).where(_h.claim_pk == bindparam("claim"), _h.reviewer == bindparam("reviewer"))


# The reviewer's current label held until the write ends, where writers run side by side
# (`Database.lock`; SQLite's compiler leaves FOR ... out).
_HELD_STATE = _STATE.with_for_update(key_share=True, of=human_labels)


def label_state(db: Database, claim: int, reviewer: str, *, held: bool = False) -> LabelState | None:
    """The reviewer's current label on the claim (None: they have none). `held`: the row is held
    until the write ends: another write of the same label waits, and then reads this one's."""
    row = db.run(_HELD_STATE if held else _STATE, {"claim": claim, "reviewer": reviewer}).first()
    return _label_state(row, claim, reviewer)


def hold_all_labels(db: Database) -> None:
    """Keep every writer of labels out until the write ends (`Database.lock_tables`), readers
    not: a reading taken inside it over many statements (closing a run's labeling) sees one
    state of every label, as on SQLite, where the write holds the whole file."""
    db.lock_tables(label_events, human_labels, adjudications)


def hold_label(db: Database, claim: int, reviewer: str) -> None:
    """Hold the reviewer's current label on the claim until the write ends, when they have one
    (`label_state`'s `held`; `Database.lock`): before a write reads anything its check is based on."""
    db.lock(_HELD_STATE, {"claim": claim, "reviewer": reviewer})


_LATEST = select(label_events.c.id, label_events.c.created_at).where(
    label_events.c.id == latest_event(bindparam("claim"), bindparam("reviewer"))
)


def check_based_on(db: Database, claim: int, reviewer: str, based_on: BasedOn) -> None:
    """Refuse (StaleLabelError) a write based on a state of the reviewer's label on the claim
    that is no longer the current one: another tab (or client) wrote a label since. Call it
    inside the write's transaction, so nothing can come between the check and the write."""
    row = db.run(_LATEST, {"claim": claim, "reviewer": reviewer}).first()
    if (None if row is None else row[0]) != based_on.event_id:
        at = "an unknown time" if row is None else f"{row[1][11:16]} UTC"
        raise StaleLabelError(f"this claim was labeled in another tab at {at} — showing it now")


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
    duration_ms: int | None = None,
    import_id: int | None = None,
    based_on: BasedOn | None = None,
) -> LabelState:
    """Append one label event and update the reviewer's current label, in one transaction.

    kinds: `blind` (a verdict given before the judge is revealed; a change is a new
    event), `skip` / `unclear` (no verdict; recorded so the queue can show them),
    `keep` (after the reveal, the reviewer keeps the blind verdict: a judge error),
    `judge_right` (after the reveal, the reviewer adopts the judge's verdict of
    `judge_run_id`: a reviewer slip, counted), `import` (a label from a file: blind and
    final at once). `duration_ms`: the time from the card shown to this label (review page
    verdicts), kept on the event and, for a blind verdict, on the current label. `import_id`: the
    staged label import writing this label (`LabelStaging`), which hides it until that import is
    done; any other write clears it, so a reviewer's own verdict is never hidden or taken back
    with an import. `based_on`: the state the writer saw; the write is refused (StaleLabelError)
    when the label changed since (`check_based_on`, in this transaction). A reviewer's own
    write is refused (SignedOutError) once a lead deactivated or renamed the name
    (`roster.check_writer`, in this transaction); an import is a lead's, and is not. Returns
    the new state.
    """
    if kind not in LABEL_KINDS or kind == "adjudicate":
        raise InputError(f"unknown label kind {kind!r}")
    if not reviewer:
        raise InputError("a label needs a reviewer")
    with write(db):
        if kind != "import":
            check_writer(db, reviewer)
        for _ in range(2):
            args = (kind, verdict, evidence, note, cycle_id, judge_run_id, duration_ms, import_id, based_on)
            if _write_current(db, claim, reviewer, *args):
                break
        else:  # the label was written and taken back (an import's) between two tries: rare
            raise ConflictError("the label changed while it was written; try again")
        if kind == "import":
            commit_imported(db, [(claim, reviewer)], import_id)
        result = label_state(db, claim, reviewer)
    assert result is not None
    return result


def _write_current(
    db: Database,
    claim: int,
    reviewer: str,
    kind: str,
    verdict: Verdict | str | None,
    evidence: Sequence[str],
    note: str | None,
    cycle_id: int | None,
    judge_run_id: int | None,
    duration_ms: int | None,
    import_id: int | None,
    based_on: BasedOn | None,
) -> bool:
    """`record_label`'s event and current label; False, writing nothing, when another write gave
    the reviewer's first label on the claim since it was read (the caller tries again, and the
    stale check or the update then sees that label).

    The current label is held before anything is read (`label_state`'s `held`), so a second
    write of it waits for this one. A first label has no row to hold: it goes in with ON
    CONFLICT DO NOTHING on the table's key, which waits for a first label another write is
    committing and then tells it was there."""
    state = label_state(db, claim, reviewer, held=True)
    if based_on is not None:
        check_based_on(db, claim, reviewer, based_on)
    verdict = _new_verdict(db, claim, kind, verdict, state, judge_run_id)
    ts = now()
    row = _current_label(
        claim, reviewer, kind, verdict, list(evidence), note, cycle_id, ts, duration_ms, import_id, state
    )
    if state is not None:
        db.run(label_upsert(db.dialect, tuple(row)), row)
    elif not insert_first_labels(db, [row]):
        return False
    ev_json = json.dumps(list(evidence), ensure_ascii=False)
    event = _event(
        claim, reviewer, kind, verdict, ev_json, note, cycle_id, judge_run_id, ts, duration_ms, import_id
    )
    db.run(insert(label_events), event)
    return True


def _new_verdict(
    db: Database,
    claim: int,
    kind: str,
    verdict: Verdict | str | None,
    state: LabelState | None,
    judge_run_id: int | None,
) -> str | None:
    """The verdict an event of `kind` records (`state`: the current label before it)."""
    if kind in ("blind", "import"):
        if verdict is None:
            raise InputError(f"a {kind} label needs a verdict")
        return _verdict(verdict)
    if kind not in ("keep", "judge_right"):
        return None
    if state is None or state.blind_verdict is None:
        raise ConflictError("reconcile needs a blind verdict first")
    if kind == "keep":
        return state.blind_verdict
    found = db.run(
        select(judge_verdicts.c.verdict).where(
            judge_verdicts.c.run_id == judge_run_id, judge_verdicts.c.claim_pk == claim
        )
    ).scalar()
    if found is None:
        raise NotFoundError("the judge gave no verdict on this claim")
    return str(found)


def _event(
    claim: int,
    reviewer: str,
    kind: str,
    verdict: str | None,
    evidence: str,
    note: str | None,
    cycle_id: int | None,
    judge_run_id: int | None,
    created_at: str,
    duration_ms: int | None,
    import_id: int | None,
) -> dict[str, object]:
    """One label_events row (its id the engine's)."""
    return {
        "claim_pk": claim,
        "reviewer": reviewer,
        "kind": kind,
        "verdict": verdict,
        "evidence": evidence,
        "note": note,
        "cycle_id": cycle_id,
        "judge_run_id": judge_run_id,
        "created_at": created_at,
        "duration_ms": duration_ms,
        "import_id": import_id,
    }


def _current_label(
    claim: int,
    reviewer: str,
    kind: str,
    verdict: str | None,
    evidence: list[str],
    note: str | None,
    cycle_id: int | None,
    ts: str,
    duration_ms: int | None,
    import_id: int | None,
    state: LabelState | None,
) -> dict[str, object]:
    """The reviewer's current label after an event of `kind` (`state`: the one before it)."""
    new: dict[str, object]
    if kind in ("blind", "import"):
        new = dict(
            status="labeled",
            blind_verdict=verdict,
            final_verdict=verdict,
            reconciled=None,
            slip=0,
            blind_at=ts,
            final_at=ts,
            duration_ms=duration_ms,
        )
    elif kind in ("skip", "unclear"):
        new = dict(
            status="skipped" if kind == "skip" else "unclear",
            blind_verdict=None,
            final_verdict=None,
            reconciled=None,
            slip=0,
            blind_at=ts,
            final_at=None,
            duration_ms=duration_ms,
        )
    else:
        assert state is not None
        new = dict(
            status="labeled",
            blind_verdict=state.blind_verdict,
            final_verdict=verdict,
            reconciled=kind,
            slip=int(kind == "judge_right" and verdict != state.blind_verdict),
            final_at=ts,
        )
    keep_ev = state.evidence if state and kind in ("keep", "judge_right") else evidence
    keep_note = state.note if state and kind in ("keep", "judge_right") and note is None else note
    return {
        "claim_pk": claim,
        "reviewer": reviewer,
        "evidence": json.dumps(keep_ev, ensure_ascii=False),
        "note": keep_note,
        "cycle_id": cycle_id,
        "updated_at": ts,
        "import_id": import_id,
        **new,
    }


@functools.cache
def label_upsert(dialect: str, cols: tuple[str, ...]) -> Insert:
    """Write the current label's `cols` (its key among them), over the one there."""
    stmt = upsert(dialect, human_labels).values({c: bindparam(c) for c in cols})
    return stmt.on_conflict_do_update(
        index_elements=[_h.claim_pk, _h.reviewer],
        set_={c: stmt.excluded[c] for c in cols if c not in ("claim_pk", "reviewer")},
    )


@functools.cache
def _first_insert(dialect: str, cols: tuple[str, ...]) -> Insert:
    """Write current labels of `cols` where the reviewer has none; the keys written."""
    stmt = upsert(dialect, human_labels).values({c: bindparam(c) for c in cols})
    return stmt.on_conflict_do_nothing(index_elements=[_h.claim_pk, _h.reviewer]).returning(
        _h.claim_pk, _h.reviewer
    )


def insert_first_labels(db: Database, rows: Sequence[dict[str, object]]) -> set[tuple[int, str]]:
    """Insert current labels (`_current_label` rows) the reviewers have none of yet; the
    (claim pk, reviewer) keys written. A key already there is left out, also one another write
    is committing at this moment: ON CONFLICT DO NOTHING waits for it, then tells."""
    if not rows:
        return set()
    found = db.run(_first_insert(db.dialect, tuple(rows[0])), list(rows))
    return {(int(claim), str(reviewer)) for claim, reviewer in found}


Imported = tuple[int, str, str, str, str | None]  # claim pk, reviewer, verdict, evidence JSON, note


def record_new_imports(db: Database, labels: Sequence[Imported], import_id: int | None) -> list[Imported]:
    """`record_label(kind="import")` for many labels at once, none of which the reviewer had a
    current label for when the caller read (inside the caller's write); returns those the
    reviewer was given meanwhile by another write, written here not at all.

    The current labels go first (`insert_first_labels`), then the events of those written and
    the commits they complete (`reveals.commit_imported`), which carry `import_id` like them."""
    ts = now()
    rows = [
        _current_label(
            claim, reviewer, "import", verdict, json.loads(evidence), note, None, ts, None, import_id, None
        )
        for claim, reviewer, verdict, evidence, note in labels
    ]
    written = insert_first_labels(db, rows)
    mine = [lab for lab in labels if (lab[0], lab[1]) in written]
    if mine:
        events = [
            _event(claim, reviewer, "import", verdict, evidence, note, None, None, ts, None, import_id)
            for claim, reviewer, verdict, evidence, note in mine
        ]
        db.run(insert(label_events), events)
        commit_imported(db, [(claim, reviewer) for claim, reviewer, *_ in mine], import_id)
    return [lab for lab in labels if (lab[0], lab[1]) not in written]


def adjudicate(
    db: Database, *, claim: int, adjudicator: str, verdict: Verdict | str, note: str | None = None
) -> None:
    """Record the adjudicated human label of a claim (overrides disagreeing reviewers)."""
    verdict = _verdict(verdict)
    ts = now()
    with write(db):
        db.run(
            insert(label_events).values(
                claim_pk=claim,
                reviewer=adjudicator,
                kind="adjudicate",
                verdict=verdict,
                note=note,
                created_at=ts,
            )
        )
        put_adjudication(db, claim, verdict=verdict, adjudicator=adjudicator, note=note, created_at=ts)


def put_adjudication(
    db: Database, claim_pk: int, *, verdict: str, adjudicator: str, note: str | None, created_at: str
) -> None:
    """Insert or replace a claim's adjudication (inside the caller's write)."""
    stmt = upsert(db.dialect, adjudications).values(
        claim_pk=claim_pk, verdict=verdict, adjudicator=adjudicator, note=note, created_at=created_at
    )
    db.run(
        stmt.on_conflict_do_update(
            index_elements=[adjudications.c.claim_pk],
            set_={c: stmt.excluded[c] for c in ("verdict", "adjudicator", "note", "created_at")},
        )
    )


def import_unchanged(
    state: LabelState | None, verdict: str, evidence: Sequence[str], note: str | None
) -> bool:
    """Whether importing this label over the reviewer's current one would change nothing."""
    return (
        state is not None
        and state.status == "labeled"
        and state.final_verdict == verdict
        and (note or None) == state.note
        and list(evidence) == state.evidence
    )


class LabelStaging(MarkedStaging):
    """A label file's rows, staged in a connection-private (TEMP) table while the file is read,
    then moved in by short writes that readers cannot see until the last one.

    Why the import's marker (`imports`, rows carrying its id in `import_id`) rather than a
    staging table published by a final transaction: moving 120,000 labels in, even as one
    INSERT ... SELECT, holds the write lock for seconds (the import-commit rule runs per
    label), longer the bigger the file, while a reviewer's verdict must wait at most one short
    write. So `publish` writes `LABEL_BATCH` labels per transaction (`record_new_imports`, which
    builds each event and current label as `record_label` does and records the commits they
    complete), each row tagged with the import's id; readers add `hidden(label=...)` and see
    none of them until `finish` flips the marker. Only a label the reviewer has no current label
    for moves in early: one that replaces a stored label cannot be hidden (the stored one would
    vanish meanwhile), so it is set aside and written by `finish`, in the flipping transaction;
    few in practice, since labels that would not change are not staged at all. A process killed
    in the middle leaves its marker behind, and the next import's `imports.recover` deletes
    every tagged row. A reviewer's verdict written meanwhile goes through `record_label`
    without an id: it is visible at once, clears the tag of a row it replaces, and stays.
    """

    _COLS = ("claim_pk", "reviewer", "verdict", "evidence", "note")
    _STAGED = staging("s_labels", _COLS)
    _LATE = staging("late_labels", _COLS)

    def __init__(self, db: Database) -> None:
        super().__init__(db, ("s_labels", "late_labels"))
        self.rows: list[dict[str, object]] = []
        self.staged = 0
        for table in ("s_labels", "late_labels"):
            db.create_staging(table, "label_events", self._COLS)

    def add(self, claim: int, reviewer: str, verdict: str, evidence: Sequence[str], note: str | None) -> None:
        """Stage one label (no lock on the database is taken)."""
        evidence_json = json.dumps(list(evidence), ensure_ascii=False)
        self.rows.append(dict(zip(self._COLS, (claim, reviewer, verdict, evidence_json, note), strict=True)))
        self.staged += 1
        if len(self.rows) >= 5000:
            self.flush()

    def flush(self) -> None:
        """Write the queued rows to the staging table."""
        if self.rows:
            self.db.run(insert(self._STAGED), self.rows)
        self.rows = []

    def publish(self, *, batch: int = LABEL_BATCH) -> None:
        """Move the staged labels in, `batch` per write transaction, hidden by the marker.

        After each write the import waits as long as that write took: a reviewer's verdict
        waiting for the lock polls for it (SQLite's busy handler sleeps between tries), and
        would miss a lock taken again at once, batch after batch."""
        db = self.db
        self.flush()
        s = self._STAGED.c
        last = int(db.run(select(func.coalesce(func.max(s.rowid), 0))).scalar_one())
        for lo in range(1, last + 1, batch):
            started = time.monotonic()
            with write(db):
                rows = db.run(
                    select(s.claim_pk, s.reviewer, s.verdict, s.evidence, s.note, _h.claim_pk.is_not(None))
                    .select_from(
                        self._STAGED.outerjoin(
                            human_labels, and_(_h.claim_pk == s.claim_pk, _h.reviewer == s.reviewer)
                        )
                    )
                    .where(s.rowid.between(lo, lo + batch - 1))
                    .order_by(s.rowid)
                ).all()
                # A label the reviewer has (given meanwhile, or stored before) is set aside.
                late = [tuple(r[:5]) for r in rows if r[5]]
                late += record_new_imports(db, [tuple(r[:5]) for r in rows if not r[5]], self.import_id)
                if late:
                    db.run(insert(self._LATE), [dict(zip(self._COLS, r, strict=True)) for r in late])
            held = time.monotonic() - started
            # As in `answers.Staging.publish`: the next small commit should not pay for the WAL.
            db.checkpoint()
            time.sleep(held)
            pause_between_batches()

    def finish(self) -> None:
        """The last write: the labels set aside (see the class), with the marker flipped to
        'done' (`finishing`)."""
        with self.finishing() as db:
            for row in db.run(select(*(self._LATE.c[c] for c in self._COLS))).all():
                claim, reviewer, verdict, evidence, note = row
                state = label_state(db, claim, reviewer)
                if not import_unchanged(state, verdict, json.loads(evidence), note):
                    record_label(
                        db,
                        claim=claim,
                        reviewer=reviewer,
                        kind="import",
                        verdict=verdict,
                        evidence=json.loads(evidence),
                        note=note,
                    )


def label_history(db: Database, claim: int, reviewer: str | None = None) -> list[dict[str, object]]:
    query = select(label_events).where(label_events.c.claim_pk == claim)
    if reviewer is not None:
        query = query.where(label_events.c.reviewer == reviewer)
    return [dict(r) for r in db.run(query.order_by(label_events.c.id)).mappings()]
