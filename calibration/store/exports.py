"""The reads of an export: which claims are in scope, and everything stored about each one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .database import Database
from .imports import hide_sql


def cycle_judge_run_id(db: Database, cycle_id: int) -> int:
    """The judge run a cycle was sampled from."""
    return int(db.execute("SELECT judge_run_id FROM cycles WHERE id = ?", [cycle_id]).fetchone()[0])


def claim_ids_in_scope(
    db: Database, *, run_id: int | None = None, cycle_id: int | None = None, cycle_run_id: int | None = None
) -> list[int]:
    """Claim pks ordered by answer id, claim position, pk: all claims, or those run `run_id`
    judged, or those of cycle `cycle_id` (sampled answers the cycle's run `cycle_run_id` judged)."""
    # Only the integer keys are sorted up front: sorting the full rows would make SQLite
    # materialise every claim with its subqueries before the first line could be written.
    where: list[str] = []
    params: dict[str, object] = {}
    if run_id is not None:
        where.append("EXISTS (SELECT 1 FROM judge_verdicts v WHERE v.claim_pk = c.id AND v.run_id = :run)")
        params["run"] = run_id
    if cycle_id is not None:
        # A claim belongs to a cycle when its answer was sampled and the cycle's run judged it.
        where.append(
            "EXISTS (SELECT 1 FROM cycle_answers ca WHERE ca.cycle_id = :cycle "
            "AND ca.answer_id = c.answer_id)"
        )
        where.append(
            "EXISTS (SELECT 1 FROM judge_verdicts v WHERE v.claim_pk = c.id AND v.run_id = :cycle_run)"
        )
        params |= {"cycle": cycle_id, "cycle_run": cycle_run_id}
    sql = "SELECT c.id FROM claims c WHERE 1" + hide_sql(db, claim="c.id")  # unfinished imports
    if where:
        sql += " AND " + " AND ".join(where)
    return [r[0] for r in db.execute(sql + " ORDER BY c.answer_id, c.position, c.id", params)]


# One row per claim; what a claim has many of (chunks, labels, events, verdicts, cycles) comes
# folded into JSON arrays, so a batch of claims is one query however much each one carries.
_DETAIL_SQL = """
SELECT c.id, c.answer_id, c.claim_id, c.position, c.text,
       a.question, a.answer, a.category, a.metadata, a.holdout,
       (SELECT json_group_array(json_array(ch.position, ch.chunk_id, ch.text, ch.source))
          FROM chunks ch WHERE ch.answer_id = c.answer_id),
       (SELECT json_group_array(json_array(h.reviewer, h.status, h.blind_verdict, h.blind_at,
                   h.final_verdict, h.final_at, h.reconciled, h.slip, json(h.evidence), h.note,
                   cy.name, h.updated_at))
          FROM human_labels h LEFT JOIN cycles cy ON cy.id = h.cycle_id WHERE h.claim_pk = c.id{hide_h}),
       (SELECT json_group_array(json_array(e.id, e.reviewer, e.kind, e.verdict, json(e.evidence),
                   e.note, cy.name, r.judge_model, r.prompt_version, e.created_at))
          FROM label_events e LEFT JOIN cycles cy ON cy.id = e.cycle_id
          LEFT JOIN judge_runs r ON r.id = e.judge_run_id WHERE e.claim_pk = c.id{hide_e}),
       (SELECT json_group_array(json_array(r.id, r.judge_model, r.prompt_version, v.verdict,
                   v.raw_verdict, v.rationale, json(v.evidence)))
          FROM judge_verdicts v JOIN judge_runs r ON r.id = v.run_id
          WHERE v.claim_pk = c.id {run_filter}),
       (SELECT json_array(d.verdict, d.adjudicator, d.note, d.created_at)
          FROM adjudications d WHERE d.claim_pk = c.id),
       (SELECT json_group_array(json_array(cy.id, cy.name)) FROM cycle_answers ca
          JOIN cycles cy ON cy.id = ca.cycle_id
          WHERE ca.answer_id = c.answer_id AND EXISTS (SELECT 1 FROM judge_verdicts v2
                WHERE v2.claim_pk = c.id AND v2.run_id = cy.judge_run_id))
FROM claims c JOIN answers a ON a.id = c.answer_id
WHERE c.id IN ({marks})
"""


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
    run_filter = ("AND v.run_id = ?" if run_id is not None else "") + hide_sql(db, run="v.run_id")
    sql = _DETAIL_SQL.format(
        run_filter=run_filter,
        marks=",".join("?" * len(claim_pks)),
        hide_h=hide_sql(db, label="h.import_id"),
        hide_e=hide_sql(db, label="e.import_id"),
    )
    params: list[Any] = ([run_id] if run_id is not None else []) + list(claim_pks)
    return {row[0]: ClaimDetail(*row) for row in db.execute(sql, params)}
