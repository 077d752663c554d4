"""Label writes and reads: the append-only history and each reviewer's current label."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from sqlite_utils import Database

from ..errors import ConflictError, InputError, NotFoundError, StaleLabelError
from ..vocab import LABEL_KINDS, Verdict
from .connection import now, write


def claim_pk(db: Database, answer_id: str, claim_id: str) -> int:
    row = db.execute(
        "SELECT id FROM claims WHERE answer_id = ? AND claim_id = ?", [answer_id, claim_id]
    ).fetchone()
    if row is None:
        if db.execute("SELECT 1 FROM answers WHERE id = ?", [answer_id]).fetchone() is None:
            raise NotFoundError(f"no answer {answer_id!r} in the database")
        raise NotFoundError(f"no claim {claim_id!r} in answer {answer_id!r}")
    return row[0]




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
LATEST_EVENT = ("(SELECT e.id FROM label_events e WHERE e.claim_pk = {claim} "
                "AND e.reviewer = {reviewer} AND e.kind <> 'adjudicate' ORDER BY e.id DESC LIMIT 1)")


@dataclass(frozen=True, slots=True)
class BasedOn:
    """The label state a write was based on (what the card showed): the reviewer's latest event
    on the claim then (`LabelState.event_id`), None when they had no label on it."""

    event_id: int | None


def _label_state(row: sqlite3.Row | tuple | None, claim: int, reviewer: str) -> LabelState | None:
    if row is None:
        return None
    status, blind, final, reconciled, slip, evidence, note, event_id = row
    return LabelState(claim, reviewer, status, blind, final, reconciled, bool(slip),
                      json.loads(evidence), note, event_id)


def label_state(db: Database, claim: int, reviewer: str) -> LabelState | None:
    row = db.execute(
        f"""SELECT status, blind_verdict, final_verdict, reconciled, slip, evidence, note,
                  {LATEST_EVENT.format(claim='h.claim_pk', reviewer='h.reviewer')}
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
        [claim, reviewer]).fetchone()
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
    based_on: BasedOn | None = None,
) -> LabelState:
    """Append one label event and update the reviewer's current label, in one transaction.

    kinds: `blind` (a verdict given before the judge is revealed; a change is a new
    event), `skip` / `unclear` (no verdict; recorded so the queue can show them),
    `keep` (after the reveal, the reviewer keeps the blind verdict: a judge error),
    `judge_right` (after the reveal, the reviewer adopts the judge's verdict of
    `judge_run_id`: a reviewer slip, counted), `import` (a label from a file: blind and
    final at once). `duration_ms`: the time from the card shown to this label (review page
    verdicts), kept on the event and, for a blind verdict, on the current label. `based_on`:
    the state the writer saw; the write is refused (StaleLabelError) when the label changed
    since (`check_based_on`, in this transaction). Returns the new state.
    """
    if kind not in LABEL_KINDS or kind == "adjudicate":
        raise InputError(f"unknown label kind {kind!r}")
    if not reviewer:
        raise InputError("a label needs a reviewer")
    with write(db):
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
            """INSERT INTO label_events
               (claim_pk, reviewer, kind, verdict, evidence, note, cycle_id, judge_run_id,
                created_at, duration_ms) VALUES (?,?,?,?,?,?,?,?,?,?)""",
            [claim, reviewer, kind, verdict, ev_json, note, cycle_id, judge_run_id, ts, duration_ms],
        )
        if kind in ("blind", "import"):
            new = dict(status="labeled", blind_verdict=verdict, final_verdict=verdict,
                       reconciled=None, slip=0, blind_at=ts, final_at=ts, duration_ms=duration_ms)
        elif kind in ("skip", "unclear"):
            new = dict(status="skipped" if kind == "skip" else "unclear", blind_verdict=None,
                       final_verdict=None, reconciled=None, slip=0, blind_at=ts, final_at=None,
                       duration_ms=duration_ms)
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

