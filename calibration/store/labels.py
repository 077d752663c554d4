"""Label writes and reads: the append-only history and each reviewer's current label."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConflictError, InputError, NotFoundError, StaleLabelError
from ..vocab import LABEL_KINDS, Verdict
from .connection import now, write
from .database import Database
from .imports import MarkedStaging, pause_between_batches
from .reveals import commit_imported
from .roster import check_writer

# Labels moved in per write transaction (`record_new_imports`): tens of milliseconds, the commits
# they complete included (a few hundred on a machine busy with other work), so a reviewer's
# verdict waits for about one batch at most.
LABEL_BATCH = 500


def claim_pk(db: Database, answer_id: str, claim_id: str) -> int:
    row = db.execute(
        "SELECT id FROM claims WHERE answer_id = ? AND claim_id = ?", [answer_id, claim_id]
    ).fetchone()
    if row is None:
        if db.execute("SELECT 1 FROM answers WHERE id = ?", [answer_id]).fetchone() is None:
            raise NotFoundError(f"no answer {answer_id!r} in the database")
        raise NotFoundError(f"no claim {claim_id!r} in answer {answer_id!r}")
    return int(row[0])


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


# The version of a reviewer's label on a claim: their latest event on it (label_events_claim);
# a lead's adjudication, recorded under the lead's name, is not a label of theirs.
# Newest first along the index, so the read stops at the first match however long the history.
LATEST_EVENT = (
    "(SELECT e.id FROM label_events e WHERE e.claim_pk = {claim} "
    "AND e.reviewer = {reviewer} AND e.kind <> 'adjudicate' ORDER BY e.id DESC LIMIT 1)"
)


@dataclass(frozen=True, slots=True)
class BasedOn:
    """The label state a write was based on (what the card showed): the reviewer's latest event
    on the claim then (`LabelState.event_id`), None when they had no label on it."""

    event_id: int | None


def _label_state(row: Sequence[Any] | None, claim: int, reviewer: str) -> LabelState | None:
    if row is None:
        return None
    status, blind, final, reconciled, slip, evidence, note, event_id = row
    return LabelState(
        claim, reviewer, status, blind, final, reconciled, bool(slip), json.loads(evidence), note, event_id
    )


def label_state(db: Database, claim: int, reviewer: str) -> LabelState | None:
    row = db.execute(
        f"""SELECT status, blind_verdict, final_verdict, reconciled, slip, evidence, note,
                  {LATEST_EVENT.format(claim="h.claim_pk", reviewer="h.reviewer")}
           FROM human_labels h WHERE h.claim_pk = ? AND h.reviewer = ?""",
        [claim, reviewer],
    ).fetchone()
    return _label_state(row, claim, reviewer)


def check_based_on(db: Database, claim: int, reviewer: str, based_on: BasedOn) -> None:
    """Refuse (StaleLabelError) a write based on a state of the reviewer's label on the claim
    that is no longer the current one: another tab (or client) wrote a label since. Call it
    inside the write's transaction, so nothing can come between the check and the write."""
    row = db.execute(
        f"SELECT id, created_at FROM label_events WHERE id = {LATEST_EVENT.format(claim='?', reviewer='?')}",
        [claim, reviewer],
    ).fetchone()
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
        if based_on is not None:
            check_based_on(db, claim, reviewer, based_on)
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
            _EVENT_SQL,
            [
                claim,
                reviewer,
                kind,
                verdict,
                ev_json,
                note,
                cycle_id,
                judge_run_id,
                ts,
                duration_ms,
                import_id,
            ],
        )
        row = _current_label(
            claim, reviewer, kind, verdict, list(evidence), note, cycle_id, ts, duration_ms, import_id, state
        )
        db.execute(_upsert_sql(row), list(row.values()))
        if kind == "import":
            commit_imported(db, [(claim, reviewer)], import_id)
        result = label_state(db, claim, reviewer)
    assert result is not None
    return result


_EVENT_SQL = """INSERT INTO label_events
    (claim_pk, reviewer, kind, verdict, evidence, note, cycle_id, judge_run_id, created_at, duration_ms,
     import_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)"""


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


def _upsert_sql(row: dict[str, object]) -> str:
    cols = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    updates = ", ".join(f"{c} = excluded.{c}" for c in row if c not in ("claim_pk", "reviewer"))
    return (
        f"INSERT INTO human_labels ({cols}) VALUES ({marks}) "
        f"ON CONFLICT (claim_pk, reviewer) DO UPDATE SET {updates}"
    )


def record_new_imports(
    db: Database, labels: Sequence[tuple[int, str, str, str, str | None]], import_id: int | None
) -> None:
    """`record_label(kind="import")` for many (claim pk, reviewer, verdict, evidence JSON, note)
    at once, none of which the reviewer has a current label for (inside the caller's write).

    The events and current labels go first, all of them, then the commits they complete
    (`reveals.commit_imported`), which carry `import_id` like the labels."""
    ts = now()
    events = [
        (claim, reviewer, "import", verdict, evidence, note, None, None, ts, None, import_id)
        for claim, reviewer, verdict, evidence, note in labels
    ]
    db.executemany(_EVENT_SQL, events)
    rows = [
        _current_label(
            claim, reviewer, "import", verdict, json.loads(evidence), note, None, ts, None, import_id, None
        )
        for claim, reviewer, verdict, evidence, note in labels
    ]
    if rows:
        db.executemany(_upsert_sql(rows[0]), [list(r.values()) for r in rows])
        commit_imported(db, [(claim, reviewer) for claim, reviewer, *_ in labels], import_id)


def adjudicate(
    db: Database, *, claim: int, adjudicator: str, verdict: Verdict | str, note: str | None = None
) -> None:
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
    complete), each row tagged with the import's id; readers add `hide_sql(label=...)` and see
    none of them until `finish` flips the marker. Only a label the reviewer has no current label
    for moves in early: one that replaces a stored label cannot be hidden (the stored one would
    vanish meanwhile), so it is set aside and written by `finish`, in the flipping transaction;
    few in practice, since labels that would not change are not staged at all. A process killed
    in the middle leaves its marker behind, and the next import's `imports.recover` deletes
    every tagged row. A reviewer's verdict written meanwhile goes through `record_label`
    without an id: it is visible at once, clears the tag of a row it replaces, and stays.
    """

    _COLS = ("claim_pk", "reviewer", "verdict", "evidence", "note")

    def __init__(self, db: Database) -> None:
        super().__init__(db, ("s_labels", "late_labels"))
        self.rows: list[tuple[int, str, str, str, str | None]] = []
        self.staged = 0
        for table in ("s_labels", "late_labels"):
            db.create_staging(table, "label_events", self._COLS)

    def add(self, claim: int, reviewer: str, verdict: str, evidence: Sequence[str], note: str | None) -> None:
        """Stage one label (no lock on the database is taken)."""
        self.rows.append((claim, reviewer, verdict, json.dumps(list(evidence), ensure_ascii=False), note))
        self.staged += 1
        if len(self.rows) >= 5000:
            self.flush()

    def flush(self) -> None:
        """Write the queued rows to the staging table."""
        self.db.executemany("INSERT INTO temp.s_labels VALUES (?,?,?,?,?)", self.rows)
        self.rows = []

    def publish(self, *, batch: int = LABEL_BATCH) -> None:
        """Move the staged labels in, `batch` per write transaction, hidden by the marker.

        After each write the import waits as long as that write took: a reviewer's verdict
        waiting for the lock polls for it (SQLite's busy handler sleeps between tries), and
        would miss a lock taken again at once, batch after batch."""
        db = self.db
        self.flush()
        last = int(db.execute("SELECT coalesce(max(rowid), 0) FROM temp.s_labels").fetchone()[0])
        for lo in range(1, last + 1, batch):
            started = time.monotonic()
            with write(db):
                rows = db.execute(
                    """SELECT s.claim_pk, s.reviewer, s.verdict, s.evidence, s.note, h.claim_pk IS NOT NULL
                       FROM temp.s_labels s LEFT JOIN human_labels h
                       ON h.claim_pk = s.claim_pk AND h.reviewer = s.reviewer
                       WHERE s.rowid BETWEEN ? AND ? ORDER BY s.rowid""",
                    [lo, lo + batch - 1],
                ).fetchall()
                # A label the reviewer has (given meanwhile, or stored before) is set aside.
                db.executemany(
                    "INSERT INTO temp.late_labels VALUES (?,?,?,?,?)", [r[:5] for r in rows if r[5]]
                )
                record_new_imports(db, [r[:5] for r in rows if not r[5]], self.import_id)
            held = time.monotonic() - started
            # As in `answers.Staging.publish`: the next small commit should not pay for the WAL.
            db.checkpoint()
            time.sleep(held)
            pause_between_batches()

    def finish(self) -> None:
        """The last write: the labels set aside (see the class), with the marker flipped to
        'done' (`finishing`)."""
        with self.finishing() as db:
            for row in db.execute(f"SELECT {', '.join(self._COLS)} FROM temp.late_labels").fetchall():
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
    sql = "SELECT * FROM label_events WHERE claim_pk = ?"
    params: list[object] = [claim]
    if reviewer is not None:
        sql += " AND reviewer = ?"
        params.append(reviewer)
    return list(db.query(sql + " ORDER BY id", params))
