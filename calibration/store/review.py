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

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Select,
    and_,
    bindparam,
    case,
    exists,
    func,
    null,
    or_,
    select,
    true,
)
from sqlalchemy.sql.elements import True_

from ..errors import NotFoundError
from .connection import now
from .core import ONE, upsert
from .database import Database
from .imports import hidden
from .labels import LabelState, latest_event, settled_in
from .roster import check_writer
from .tables import (
    adjudications,
    answer_reveals,
    answers,
    assignments,
    chunks,
    claims,
    cycles,
    human_labels,
    imports,
    judge_runs,
    judge_verdicts,
    label_events,
)


@dataclass(frozen=True, slots=True)
class CycleRow:
    id: int
    name: str
    judge_run_id: int
    judge_run: str  # MODEL@VERSION
    status: str
    open_to_all: bool  # no assignments: every signed-in reviewer may label
    require_evidence: bool = False  # every SUPPORTED verdict must name its evidence (the commit)


# The reads every key of the review card makes are built once, with bound parameters: building
# a statement cost SQLAlchemy about ten times what SQLite takes to run it. A read that must
# leave out an unfinished import's rows (`hidden` is then more than true) is built afresh.


def _shows_all(*conditions: ColumnElement[bool]) -> bool:
    return all(isinstance(cond, True_) for cond in conditions)


def _cycle_row_stmt() -> Select[tuple[object, ...]]:
    c, r = cycles.c, judge_runs.c
    return (
        select(
            c.id,
            c.name,
            c.judge_run_id,
            r.judge_model + "@" + r.prompt_version,
            c.status,
            ~exists(select(ONE).where(assignments.c.cycle_id == c.id)),
            c.require_evidence,
        )
        .select_from(cycles.join(judge_runs, r.id == c.judge_run_id))
        .where(c.id == bindparam("cycle_id"))
    )


_CYCLE_ROW = _cycle_row_stmt()


def cycle_row(db: Database, cycle_id: int) -> CycleRow:
    """The cycle with `cycle_id`; NotFoundError when there is none."""
    row = db.run(_CYCLE_ROW, {"cycle_id": cycle_id}).first()
    if row is None:
        raise NotFoundError(f"no cycle with id {cycle_id}")
    return CycleRow(row[0], row[1], row[2], row[3], row[4], bool(row[5]), bool(row[6]))


# ---------------------------------------------------------------- the card (no judge data)


def card_answer(db: Database, answer_id: str) -> tuple[str, str]:
    """(question, answer) of an answer; NotFoundError when there is none."""
    row = db.run(select(answers.c.question, answers.c.answer).where(answers.c.id == answer_id)).first()
    if row is None:
        raise NotFoundError(f"no answer {answer_id!r}")
    return row[0], row[1]


def questions(db: Database, answer_ids: Sequence[str]) -> dict[str, str]:
    """Answer id -> its question, for the given answers (one queue: by primary key)."""
    found = db.run(select(answers.c.id, answers.c.question).where(answers.c.id.in_(list(answer_ids))))
    return {a: q for a, q in found}


def card_chunks(db: Database, answer_id: str) -> list[tuple[str, str, str | None]]:
    """(chunk id, text, source) of the answer's chunks, in order."""
    k = chunks.c
    return [
        (c, t, s)
        for c, t, s in db.run(
            select(k.chunk_id, k.text, k.source).where(k.answer_id == answer_id).order_by(k.position)
        )
    ]


def _card_claims_stmt(shown: ColumnElement[bool]) -> Select[tuple[object, ...]]:
    c, h = claims.c, human_labels.c
    return (
        select(
            c.id,
            c.claim_id,
            c.text,
            h.status,
            h.blind_verdict,
            h.final_verdict,
            h.reconciled,
            h.slip,
            h.evidence,
            h.note,
            case((h.status.is_(None), null()), else_=latest_event(c.id, h.reviewer)),
        )
        .select_from(
            claims.outerjoin(
                human_labels, and_(h.claim_pk == c.id, h.reviewer == bindparam("reviewer"), shown)
            )
        )
        .where(c.answer_id == bindparam("answer_id"))
        .order_by(c.position, c.id)
    )


_CARD_CLAIMS = _card_claims_stmt(true())


def card_claims(db: Database, answer_id: str, reviewer: str) -> list[tuple[int, str, str, LabelState | None]]:
    """(claim pk, claim id, text, the reviewer's current label or None) per claim, in order."""
    shown = hidden(db, label=human_labels.c.import_id)
    stmt = _CARD_CLAIMS if _shows_all(shown) else _card_claims_stmt(shown)
    rows = db.run(stmt, {"answer_id": answer_id, "reviewer": reviewer}).all()
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
    return set(db.run(select(chunks.c.chunk_id).where(chunks.c.answer_id == answer_id)).scalars())


def claim_answer(db: Database, claim_pk: int) -> str:
    """The answer a claim belongs to; NotFoundError when there is no such claim."""
    found = db.run(select(claims.c.answer_id).where(claims.c.id == claim_pk)).scalar()
    if found is None:
        raise NotFoundError(f"no claim {claim_pk}")
    return str(found)


# The reviewer's current labels on an answer, held until the write ends (`Database.lock`).
_HOLD_ANSWER_LABELS = (
    select(human_labels.c.claim_pk)
    .select_from(human_labels.join(claims, claims.c.id == human_labels.c.claim_pk))
    .where(claims.c.answer_id == bindparam("answer"), human_labels.c.reviewer == bindparam("reviewer"))
    .order_by(human_labels.c.claim_pk)
    .with_for_update(key_share=True, of=human_labels)
)


def hold_answer_labels(db: Database, answer_id: str, reviewer: str) -> None:
    """Hold the reviewer's current labels on the answer's claims until the write ends: a commit
    checks them all (settled, their evidence), and a verdict or reconcile of one of them holds
    it first (`labels.hold_label`), so the two never interleave; other reviewers' labels on the
    answer stay free."""
    db.lock(_HOLD_ANSWER_LABELS, {"answer": answer_id, "reviewer": reviewer})


def answer_settled(db: Database, answer_id: str, reviewer: str) -> bool:
    """Every claim of the answer has the reviewer's verdict or their unclear mark (and it has
    claims): the answer is revealed to them."""
    c, h = claims.c, human_labels.c
    settled = or_(and_(h.status == "labeled", h.blind_verdict.is_not(None)), h.status == "unclear")
    joined = claims.outerjoin(
        human_labels, and_(h.claim_pk == c.id, h.reviewer == reviewer, settled, hidden(db, label=h.import_id))
    )
    row = db.run(
        select(func.count(), func.count(h.claim_pk)).select_from(joined).where(c.answer_id == answer_id)
    ).one()
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
    settled_here: bool = False  # the verdict or unclear mark was given in this cycle (`labels.settled_in`)


def _queue_rows_stmt(
    label_shown: ColumnElement[bool], reveal_shown: ColumnElement[bool]
) -> Select[tuple[object, ...]]:
    c, h, r, v, e = claims.c, human_labels.c, answer_reveals.c, judge_verdicts.c, label_events.c
    cycle_id: BindParameter[int] = bindparam("cycle_id")
    reviewer: BindParameter[str] = bindparam("reviewer")
    skips = (
        select(func.count())
        .where(e.claim_pk == c.id, e.reviewer == h.reviewer, e.kind == "skip", e.cycle_id == cycle_id)
        .scalar_subquery()
    )
    here = settled_in(h.claim_pk, h.reviewer).is_not_distinct_from(cycle_id)
    joined = (
        claims.outerjoin(human_labels, and_(h.claim_pk == c.id, h.reviewer == reviewer, label_shown))
        .outerjoin(answer_reveals, and_(r.answer_id == c.answer_id, r.reviewer == reviewer, reveal_shown))
        .outerjoin(judge_verdicts, and_(v.run_id == bindparam("run_id"), v.claim_pk == c.id))
    )
    return (
        select(
            c.answer_id,
            h.status,
            h.blind_verdict,
            h.reconciled,
            case((r.answer_id.is_(None), null()), else_=v.verdict),
            case((h.status == "skipped", skips), else_=0),
            r.answer_id.is_not(None),
            case((h.status.is_(None), 0), (here, 1), else_=0),
        )
        .select_from(joined)
        .where(c.answer_id.in_(bindparam("answers", expanding=True)))
        .order_by(c.answer_id, c.position, c.id)
    )


_QUEUE_ROWS = _queue_rows_stmt(true(), true())


def queue_rows(
    db: Database, cycle_id: int, run_id: int, answers: Sequence[str], reviewer: str
) -> list[QueueRow]:
    """One row per claim of the answers, in the given answer order, then claim order.

    The judge verdict is compared only for revealed answers (committed by the reviewer).
    """
    if not answers:
        return []
    label_shown = hidden(db, label=human_labels.c.import_id)
    reveal_shown = hidden(db, label=answer_reveals.c.import_id)
    stmt = (
        _QUEUE_ROWS if _shows_all(label_shown, reveal_shown) else _queue_rows_stmt(label_shown, reveal_shown)
    )
    params = {"cycle_id": cycle_id, "run_id": run_id, "reviewer": reviewer, "answers": list(answers)}
    place = {a: i for i, a in enumerate(answers)}
    rows = sorted(db.run(stmt, params).all(), key=lambda row: place[row[0]])  # stable: claim order kept
    out: list[QueueRow] = []
    index: dict[str, int] = {}
    for answer_id, status, blind, reconciled, judge, skips_here, revealed, settled_here in rows:
        i = index.get(answer_id, 0)
        index[answer_id] = i + 1
        differs = bool(revealed and status == "labeled" and judge is not None and judge != blind)
        out.append(
            QueueRow(
                answer_id,
                i,
                status or "todo",
                differs and reconciled is None,
                int(skips_here or 0),
                bool(revealed),
                differs and reconciled is not None,
                bool(settled_here),
            )
        )
    return out


def answer_revealed(db: Database, answer_id: str, reviewer: str) -> bool:
    """The reviewer committed the answer's blind verdicts: its judge data is shown to them."""
    r = answer_reveals.c
    found = select(ONE).where(r.answer_id == answer_id, r.reviewer == reviewer, hidden(db, label=r.import_id))
    return db.run(found).first() is not None


def record_reveal(db: Database, answer_id: str, reviewer: str, cycle_id: int | None) -> None:
    """Mark the answer revealed to the reviewer (the first commit counts; a repeat is a no-op).

    A commit that an unfinished label import recorded (hidden, and taken back should that import
    die) becomes the reviewer's own. Refused (SignedOutError) for a name a lead deactivated or
    renamed (`roster.check_writer`): call it inside the write's transaction."""
    check_writer(db, reviewer)
    stmt = upsert(db.dialect, answer_reveals).values(
        answer_id=answer_id, reviewer=reviewer, cycle_id=cycle_id, revealed_at=now()
    )
    publishing = select(imports.c.id).where(imports.c.status == "publishing")
    db.run(
        stmt.on_conflict_do_update(
            index_elements=[answer_reveals.c.answer_id, answer_reveals.c.reviewer],
            set_={
                "cycle_id": stmt.excluded.cycle_id,
                "revealed_at": stmt.excluded.revealed_at,
                "import_id": None,
            },
            where=answer_reveals.c.import_id.in_(publishing),
        )
    )


def label_durations(db: Database, run_id: int, cycle_id: int | None = None) -> dict[str, list[int]]:
    """Reviewer -> the recorded times (ms, card shown to verdict) of their blind verdicts and
    unclear marks on claims the run judged, within the cycle when given."""
    e, v = label_events.c, judge_verdicts.c
    query = (
        select(e.reviewer, e.duration_ms)
        .select_from(label_events.join(judge_verdicts, and_(v.claim_pk == e.claim_pk, v.run_id == run_id)))
        .where(e.duration_ms.is_not(None), e.kind.in_(["blind", "unclear"]))
    )
    if cycle_id is not None:
        query = query.where(e.cycle_id == cycle_id)
    out: dict[str, list[int]] = {}
    for who, ms in db.run(query):
        out.setdefault(who, []).append(int(ms))
    return out


def supported_without_evidence(db: Database, cycle_id: int) -> dict[str, int]:
    """Reviewer -> how many of their labels given in the cycle have the final verdict SUPPORTED
    and name no evidence chunk (a golden set's expected sources would lack them), for the
    reviewers with any (index human_labels_cycle)."""
    h = human_labels.c
    found = db.run(
        select(h.reviewer, func.count())
        .where(
            h.cycle_id == cycle_id, h.status == "labeled", h.final_verdict == "SUPPORTED", h.evidence == "[]"
        )
        .group_by(h.reviewer)
        .order_by(h.reviewer)
    )
    return {who: int(n) for who, n in found}


# ---------------------------------------------------------------- the reveal


JudgedClaim = tuple[str, str | None, tuple[str, ...]]  # verdict, rationale, evidence (chunk ids)


def reveal_verdicts(db: Database, run_id: int, answer_id: str) -> dict[int, JudgedClaim]:
    """Claim pk -> (verdict, rationale, evidence) of the run on the answer's claims."""
    c, v = claims.c, judge_verdicts.c
    found = db.run(
        select(v.claim_pk, v.verdict, v.rationale, v.evidence)
        .select_from(claims.join(judge_verdicts, and_(v.claim_pk == c.id, v.run_id == run_id)))
        .where(c.answer_id == answer_id)
    )
    return {pk: (verdict, rationale, tuple(json.loads(ev))) for pk, verdict, rationale, ev in found}


def reveal_adjudications(db: Database, answer_id: str) -> dict[int, str]:
    """Claim pk -> a lead's verdict, for the answer's adjudicated claims."""
    d = adjudications.c
    found = db.run(
        select(d.claim_pk, d.verdict)
        .select_from(claims.join(adjudications, d.claim_pk == claims.c.id))
        .where(claims.c.answer_id == answer_id)
    )
    return {pk: verdict for pk, verdict in found}


def judge_verdict(db: Database, run_id: int, claim_pk: int) -> str | None:
    """The run's verdict on one claim; None when it gave none."""
    v = judge_verdicts.c
    found = db.run(select(v.verdict).where(v.run_id == run_id, v.claim_pk == claim_pk)).scalar()
    return None if found is None else str(found)


# ---------------------------------------------------------------- reviewer names


def reviewer_names(db: Database) -> dict[str, int]:
    """Every known reviewer (with a label, or assigned in a cycle) -> how many labels they have."""
    counts: dict[str, int] = {}
    h = human_labels.c
    for who, n in db.run(
        select(h.reviewer, func.count()).where(hidden(db, label=h.import_id)).group_by(h.reviewer)
    ):
        counts[who] = n
    for who in db.run(select(assignments.c.reviewer).distinct()).scalars():
        counts.setdefault(who, 0)
    return counts
