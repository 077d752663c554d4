"""The reads of an export: which claims are in scope, and everything stored about each one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, exists, select

from .core import ONE, json_as_text, json_list, json_row, json_value
from .database import Database
from .imports import hidden
from .tables import (
    adjudications,
    answers,
    chunks,
    claims,
    cycle_answers,
    cycles,
    human_labels,
    judge_runs,
    judge_verdicts,
    label_events,
)


def _judged_by(run: object) -> ColumnElement[bool]:
    v = judge_verdicts.c
    return exists(select(ONE).where(v.claim_pk == claims.c.id, v.run_id == run))


def claim_ids_in_scope(
    db: Database, *, run_id: int | None = None, cycle_id: int | None = None, cycle_run_id: int | None = None
) -> list[int]:
    """Claim pks ordered by answer id, claim position, pk: all claims, or those run `run_id`
    judged, or those of cycle `cycle_id` (sampled answers the cycle's run `cycle_run_id` judged)."""
    # Only the integer keys are sorted up front: sorting the full rows would make SQLite
    # materialise every claim with its subqueries before the first line could be written.
    c = claims.c
    query = select(c.id).where(hidden(db, claim=c.id))  # unfinished imports
    if run_id is not None:
        query = query.where(_judged_by(run_id))
    if cycle_id is not None:
        # A claim belongs to a cycle when its answer was sampled and the cycle's run judged it.
        ca = cycle_answers.c
        sampled = exists(select(ONE).where(ca.cycle_id == cycle_id, ca.answer_id == c.answer_id))
        query = query.where(sampled, _judged_by(cycle_run_id))
    return list(db.run(query.order_by(c.answer_id, c.position, c.id)).scalars())


def _details(db: Database, run_id: int | None) -> Any:
    """One row per claim; what a claim has many of (chunks, labels, events, verdicts, cycles)
    comes folded into JSON arrays, so a batch of claims is one query however much each carries."""
    c, a = claims.c, answers.c
    ch = chunks.c
    chunk_rows = select(json_list(json_row(ch.position, ch.chunk_id, ch.text, ch.source))).where(
        ch.answer_id == c.answer_id
    )
    h, cy = human_labels.c, cycles.alias("cy")
    label_rows = (
        select(
            json_list(
                json_row(
                    h.reviewer,
                    h.status,
                    h.blind_verdict,
                    h.blind_at,
                    h.final_verdict,
                    h.final_at,
                    h.reconciled,
                    h.slip,
                    json_value(h.evidence),
                    h.note,
                    cy.c.name,
                    h.updated_at,
                )
            )
        )
        .select_from(human_labels.outerjoin(cy, cy.c.id == h.cycle_id))
        .where(h.claim_pk == c.id, hidden(db, label=h.import_id))
    )
    e, ecy, r = label_events.c, cycles.alias("ecy"), judge_runs.alias("r")
    event_rows = (
        select(
            json_list(
                json_row(
                    e.id,
                    e.reviewer,
                    e.kind,
                    e.verdict,
                    json_value(e.evidence),
                    e.note,
                    ecy.c.name,
                    r.c.judge_model,
                    r.c.prompt_version,
                    e.created_at,
                )
            )
        )
        .select_from(
            label_events.outerjoin(ecy, ecy.c.id == e.cycle_id).outerjoin(r, r.c.id == e.judge_run_id)
        )
        .where(e.claim_pk == c.id, hidden(db, label=e.import_id))
    )
    v, vr = judge_verdicts.c, judge_runs.alias("vr")
    verdict_rows = (
        select(
            json_list(
                json_row(
                    vr.c.id,
                    vr.c.judge_model,
                    vr.c.prompt_version,
                    v.verdict,
                    v.raw_verdict,
                    v.rationale,
                    json_value(v.evidence),
                )
            )
        )
        .select_from(judge_verdicts.join(vr, vr.c.id == v.run_id))
        .where(v.claim_pk == c.id, hidden(db, run=v.run_id))
    )
    if run_id is not None:
        verdict_rows = verdict_rows.where(v.run_id == run_id)
    d = adjudications.c
    adjudication = select(json_as_text(json_row(d.verdict, d.adjudicator, d.note, d.created_at))).where(
        d.claim_pk == c.id
    )
    ca, ccy, v2 = cycle_answers.c, cycles.alias("ccy"), judge_verdicts.alias("v2")
    cycle_rows = (
        select(json_list(json_row(ccy.c.id, ccy.c.name)))
        .select_from(cycle_answers.join(ccy, ccy.c.id == ca.cycle_id))
        .where(
            ca.answer_id == c.answer_id,
            exists(select(ONE).where(v2.c.claim_pk == c.id, v2.c.run_id == ccy.c.judge_run_id)),
        )
    )
    return select(
        c.id,
        c.answer_id,
        c.claim_id,
        c.position,
        c.text,
        a.question,
        a.answer,
        a.category,
        a.metadata,
        a.holdout,
        *(
            q.scalar_subquery()
            for q in (chunk_rows, label_rows, event_rows, verdict_rows, adjudication, cycle_rows)
        ),
    ).select_from(claims.join(answers, a.id == c.answer_id))


@dataclass(frozen=True, slots=True)
class ClaimDetail:
    """Everything stored about one claim, as read; the JSON columns are JSON arrays as text.

    chunks: [position, chunk id, text, source]; labels: [reviewer, status, blind verdict,
    blind at, final verdict, final at, reconciled, slip, evidence, note, cycle name, updated
    at]; events: [event id, reviewer, kind, verdict, evidence, note, cycle name, judge model,
    prompt version, created at]; verdicts: [run id, judge model, prompt version, verdict, raw
    verdict, rationale, evidence]; adjudication: [verdict, adjudicator, note, created at] or
    None; cycles: [cycle id, name] of the cycles that sampled the claim's answer with a run
    that judged it.
    """

    claim_pk: int
    answer_id: str
    claim_id: str
    position: int
    text: str
    question: str
    answer: str
    category: str | None
    metadata: str | None
    holdout: int
    chunks_json: str
    labels_json: str
    events_json: str
    verdicts_json: str
    adjudication_json: str | None
    cycles_json: str


def claim_details(
    db: Database, claim_pks: Sequence[int], *, run_id: int | None = None
) -> dict[int, ClaimDetail]:
    """The details of the given claims (one query; pass a batch), keyed by pk. With `run_id`, only
    that run's judge verdicts are included."""
    # Verdicts of a run an unfinished import created are not there yet (store.imports).
    found = db.run(_details(db, run_id).where(claims.c.id.in_(list(claim_pks))))
    return {row[0]: ClaimDetail(*row) for row in found}
