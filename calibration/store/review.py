"""The review queue: a cycle as the review page sees it, the card, the queue rows, the reveal.

Every read goes by primary key or index, over one answer or one queue (a cycle's 15-30
answers). The blind rule is kept here too: `card_*` reads never touch `judge_verdicts`;
only `queue_rows` (which compares on the server and returns no verdict) and the `reveal_*`
reads do.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import NotFoundError
from .connection import now
from .cycles import SETTLED_IN
from .database import Database
from .imports import hide_sql
from .labels import LATEST_EVENT, LabelState
from .roster import check_writer


@dataclass(frozen=True, slots=True)
class CycleRow:
    id: int
    name: str
    judge_run_id: int
    judge_run: str  # MODEL@VERSION
    status: str
    open_to_all: bool  # no assignments: every signed-in reviewer may label
    require_evidence: bool = False  # every SUPPORTED verdict must name its evidence (the commit)


def cycle_row(db: Database, cycle_id: int) -> CycleRow:
    """The cycle with `cycle_id`; NotFoundError when there is none."""
    row = db.execute(
        """SELECT c.id, c.name, c.judge_run_id, r.judge_model || '@' || r.prompt_version,
                  c.status,
                  NOT EXISTS (SELECT 1 FROM assignments a WHERE a.cycle_id = c.id),
                  c.require_evidence
           FROM cycles c JOIN judge_runs r ON r.id = c.judge_run_id WHERE c.id = ?""",
        [cycle_id],
    ).fetchone()
    if row is None:
        raise NotFoundError(f"no cycle with id {cycle_id}")
    return CycleRow(row[0], row[1], row[2], row[3], row[4], bool(row[5]), bool(row[6]))


# ---------------------------------------------------------------- the card (no judge data)


def card_answer(db: Database, answer_id: str) -> tuple[str, str]:
    """(question, answer) of an answer; NotFoundError when there is none."""
    row = db.execute("SELECT question, answer FROM answers WHERE id = ?", [answer_id]).fetchone()
    if row is None:
        raise NotFoundError(f"no answer {answer_id!r}")
    return row[0], row[1]


def questions(db: Database, answer_ids: Sequence[str]) -> dict[str, str]:
    """Answer id -> its question, for the given answers (one queue: by primary key)."""
    return dict(
        db.execute(
            "SELECT id, question FROM answers WHERE id IN (SELECT value FROM json_each(?))",
            [json.dumps(list(answer_ids))],
        ).fetchall()
    )


def card_chunks(db: Database, answer_id: str) -> list[tuple[str, str, str | None]]:
    """(chunk id, text, source) of the answer's chunks, in order."""
    return [
        (c, t, s)
        for c, t, s in db.execute(
            "SELECT chunk_id, text, source FROM chunks WHERE answer_id = ? ORDER BY position", [answer_id]
        )
    ]


def card_claims(db: Database, answer_id: str, reviewer: str) -> list[tuple[int, str, str, LabelState | None]]:
    """(claim pk, claim id, text, the reviewer's current label or None) per claim, in order."""
    rows = db.execute(
        f"""SELECT c.id, c.claim_id, c.text, h.status, h.blind_verdict, h.final_verdict,
                  h.reconciled, h.slip, h.evidence, h.note,
                  CASE WHEN h.status IS NULL THEN NULL
                       ELSE {LATEST_EVENT.format(claim="c.id", reviewer="h.reviewer")} END
           FROM claims c LEFT JOIN human_labels h ON h.claim_pk = c.id AND h.reviewer = ?
                {hide_sql(db, label="h.import_id")}
           WHERE c.answer_id = ? ORDER BY c.position, c.id""",
        [reviewer, answer_id],
    ).fetchall()
    out: list[tuple[int, str, str, LabelState | None]] = []
    for pk, cid, text, status, blind, final, rec, slip, ev, note, event_id in rows:
        label = None
        if status is not None:
            label = LabelState(
                pk, reviewer, status, blind, final, rec, bool(slip), json.loads(ev), note, event_id
            )
        out.append((pk, cid, text, label))
    return out


def chunk_ids(db: Database, answer_id: str) -> set[str]:
    """The chunk ids of an answer."""
    return {r[0] for r in db.execute("SELECT chunk_id FROM chunks WHERE answer_id = ?", [answer_id])}


def claim_answer(db: Database, claim_pk: int) -> str:
    """The answer a claim belongs to; NotFoundError when there is no such claim."""
    row = db.execute("SELECT answer_id FROM claims WHERE id = ?", [claim_pk]).fetchone()
    if row is None:
        raise NotFoundError(f"no claim {claim_pk}")
    return str(row[0])


def answer_settled(db: Database, answer_id: str, reviewer: str) -> bool:
    """Every claim of the answer has the reviewer's verdict or their unclear mark (and it has
    claims): the answer is revealed to them."""
    row = db.execute(
        f"""SELECT count(*), count(h.claim_pk) FROM claims c
           LEFT JOIN human_labels h ON h.claim_pk = c.id AND h.reviewer = ?
                AND ((h.status = 'labeled' AND h.blind_verdict IS NOT NULL)
                     OR h.status = 'unclear'){hide_sql(db, label="h.import_id")}
           WHERE c.answer_id = ?""",
        [reviewer, answer_id],
    ).fetchone()
    return bool(row[0] > 0 and row[0] == row[1])


# ---------------------------------------------------------------- the queue


@dataclass(frozen=True, slots=True)
class QueueRow:
    """One claim of a reviewer's queue; `disagrees` is computed here, the verdict never leaves."""

    answer_id: str
    index: int  # position of the claim within its answer, 0-based
    status: str  # todo / labeled / skipped / unclear
    disagrees: bool  # answer revealed, labeled, judge verdict differs from the blind one, not reconciled
    skips: int  # skip events of this reviewer on this claim in this cycle
    revealed: bool = False  # the reviewer committed the answer: the judge is shown to them
    reconciled: bool = False  # revealed, labeled, judge differs, and a reconcile was recorded
    settled_here: bool = False  # the verdict or unclear mark was given in this cycle (`SETTLED_IN`)


def queue_rows(
    db: Database, cycle_id: int, run_id: int, answers: Sequence[str], reviewer: str
) -> list[QueueRow]:
    """One row per claim of the answers, in the given answer order, then claim order.

    The judge verdict is compared only for revealed answers (committed by the reviewer).
    """
    rows = db.execute(
        f"""SELECT q.key, c.answer_id, c.position, c.id, h.status, h.blind_verdict,
                  h.reconciled, CASE WHEN r.answer_id IS NULL THEN NULL ELSE v.verdict END,
                  CASE WHEN h.status = 'skipped' THEN
                      (SELECT count(*) FROM label_events e
                       WHERE e.claim_pk = c.id AND e.reviewer = h.reviewer
                         AND e.kind = 'skip' AND e.cycle_id = ?) ELSE 0 END,
                  r.answer_id IS NOT NULL,
                  CASE WHEN h.status IS NULL THEN 0 WHEN {SETTLED_IN.format(h="h")} IS ? THEN 1 ELSE 0 END
           FROM json_each(?) q
           JOIN claims c ON c.answer_id = q.value
           LEFT JOIN human_labels h ON h.claim_pk = c.id AND h.reviewer = ?{hide_sql(db, label="h.import_id")}
           LEFT JOIN answer_reveals r ON r.answer_id = c.answer_id AND r.reviewer = ?
                {hide_sql(db, label="r.import_id")}
           LEFT JOIN judge_verdicts v ON v.run_id = ? AND v.claim_pk = c.id
           ORDER BY q.key, c.position, c.id""",
        [cycle_id, cycle_id, json.dumps(list(answers)), reviewer, reviewer, run_id],
    ).fetchall()
    out: list[QueueRow] = []
    index: dict[str, int] = {}
    for _, answer_id, _, _, status, blind, reconciled, judge, skips, revealed, here in rows:
        i = index.get(answer_id, 0)
        index[answer_id] = i + 1
        differs = bool(revealed and status == "labeled" and judge is not None and judge != blind)
        out.append(
            QueueRow(
                answer_id,
                i,
                status or "todo",
                differs and reconciled is None,
                int(skips or 0),
                bool(revealed),
                differs and reconciled is not None,
                bool(here),
            )
        )
    return out


def answer_revealed(db: Database, answer_id: str, reviewer: str) -> bool:
    """The reviewer committed the answer's blind verdicts: its judge data is shown to them."""
    return (
        db.execute(
            "SELECT 1 FROM answer_reveals WHERE answer_id = ? AND reviewer = ?"
            + hide_sql(db, label="import_id"),
            [answer_id, reviewer],
        ).fetchone()
        is not None
    )


def record_reveal(db: Database, answer_id: str, reviewer: str, cycle_id: int | None) -> None:
    """Mark the answer revealed to the reviewer (the first commit counts; a repeat is a no-op).

    A commit that an unfinished label import recorded (hidden, and taken back should that import
    die) becomes the reviewer's own. Refused (SignedOutError) for a name a lead deactivated or
    renamed (`roster.check_writer`): call it inside the write's transaction."""
    check_writer(db, reviewer)
    db.execute(
        "INSERT INTO answer_reveals (answer_id, reviewer, cycle_id, revealed_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (answer_id, reviewer) DO UPDATE SET cycle_id = excluded.cycle_id, "
        "revealed_at = excluded.revealed_at, import_id = NULL WHERE answer_reveals.import_id IN "
        "(SELECT id FROM imports WHERE status = 'publishing')",
        [answer_id, reviewer, cycle_id, now()],
    )


def label_durations(db: Database, run_id: int, cycle_id: int | None = None) -> dict[str, list[int]]:
    """Reviewer -> the recorded times (ms, card shown to verdict) of their blind verdicts and
    unclear marks on claims the run judged, within the cycle when given."""
    sql = """SELECT e.reviewer, e.duration_ms FROM label_events e
             JOIN judge_verdicts v ON v.claim_pk = e.claim_pk AND v.run_id = ?
             WHERE e.duration_ms IS NOT NULL AND e.kind IN ('blind', 'unclear')"""
    params: list[object] = [run_id]
    if cycle_id is not None:
        sql += " AND e.cycle_id = ?"
        params.append(cycle_id)
    out: dict[str, list[int]] = {}
    for who, ms in db.execute(sql, params):
        out.setdefault(who, []).append(int(ms))
    return out


def supported_without_evidence(db: Database, cycle_id: int) -> dict[str, int]:
    """Reviewer -> how many of their labels given in the cycle have the final verdict SUPPORTED
    and name no evidence chunk (a golden set's expected sources would lack them), for the
    reviewers with any (index human_labels_cycle)."""
    return dict(
        db.execute(
            """SELECT reviewer, count(*) FROM human_labels
           WHERE cycle_id = ? AND status = 'labeled' AND final_verdict = 'SUPPORTED'
             AND evidence = '[]' GROUP BY reviewer ORDER BY reviewer""",
            [cycle_id],
        ).fetchall()
    )


# ---------------------------------------------------------------- the reveal


JudgedClaim = tuple[str, str | None, tuple[str, ...]]  # verdict, rationale, evidence (chunk ids)


def reveal_verdicts(db: Database, run_id: int, answer_id: str) -> dict[int, JudgedClaim]:
    """Claim pk -> (verdict, rationale, evidence) of the run on the answer's claims."""
    return {
        pk: (verdict, rationale, tuple(json.loads(ev)))
        for pk, verdict, rationale, ev in db.execute(
            """SELECT v.claim_pk, v.verdict, v.rationale, v.evidence
           FROM claims c JOIN judge_verdicts v ON v.claim_pk = c.id AND v.run_id = ?
           WHERE c.answer_id = ?""",
            [run_id, answer_id],
        )
    }


def reveal_adjudications(db: Database, answer_id: str) -> dict[int, str]:
    """Claim pk -> a lead's verdict, for the answer's adjudicated claims."""
    return dict(
        db.execute(
            """SELECT d.claim_pk, d.verdict FROM claims c JOIN adjudications d ON d.claim_pk = c.id
           WHERE c.answer_id = ?""",
            [answer_id],
        ).fetchall()
    )


def judge_verdict(db: Database, run_id: int, claim_pk: int) -> str | None:
    """The run's verdict on one claim; None when it gave none."""
    row = db.execute(
        "SELECT verdict FROM judge_verdicts WHERE run_id = ? AND claim_pk = ?", [run_id, claim_pk]
    ).fetchone()
    return None if row is None else row[0]


# ---------------------------------------------------------------- reviewer names


def reviewer_names(db: Database) -> dict[str, int]:
    """Every known reviewer (with a label, or assigned in a cycle) -> how many labels they have."""
    counts: dict[str, int] = {}
    for who, n in db.execute(
        "SELECT reviewer, count(*) FROM human_labels WHERE 1"
        f"{hide_sql(db, label='import_id')} GROUP BY reviewer"
    ):
        counts[who] = n
    for (who,) in db.execute("SELECT DISTINCT reviewer FROM assignments"):
        counts.setdefault(who, 0)
    return counts
