"""What the report of a scope needs besides the final labels: answer facts, label order, designs.

Reads only; `report.scope_report` is the caller.  Each function folds its rows into JSON arrays
(one fetch, no Python object per row), as `claims.claim_table` does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
from sqlalchemy import and_, func, literal, select

from .claims import json_ints
from .core import ONE, json_list, json_text
from .database import Database
from .imports import hidden
from .tables import adjudications, answers, cycle_answers, cycles, human_labels, imports, judge_verdicts


@dataclass(frozen=True, slots=True)
class AnswerFacts:
    """Per answer of a list: its category and the pipeline version that produced it (None if absent)."""

    category: list[str | None]
    pipeline_version: list[str | None]


def answer_facts(db: Database, answer_ids: list[str]) -> AnswerFacts:
    """Category and pipeline version of each answer, in the order given.

    The pipeline version is the answer's ``pipeline_version`` if the import stored one in its
    metadata, else ``metadata.pipeline`` (an import shape may give either); numbers are read as text.
    """
    if not answer_ids:
        return AnswerFacts([], [])
    a = answers.c
    pipeline = func.coalesce(
        json_text(a.metadata, literal("pipeline_version")), json_text(a.metadata, literal("pipeline"))
    )
    row = db.run(
        select(json_list(a.id), json_list(a.category), json_list(pipeline)).where(a.id.in_(answer_ids))
    ).one()
    ids: list[str] = json.loads(row[0])
    cats: list[str | None] = json.loads(row[1])
    pipes: list[str | None] = json.loads(row[2])
    cat_of = dict(zip(ids, cats, strict=True))
    pipe_of = dict(zip(ids, pipes, strict=True))
    return AnswerFacts([cat_of.get(a) for a in answer_ids], [pipe_of.get(a) for a in answer_ids])


def label_order(db: Database, run_id: int, claim_pks: np.ndarray) -> np.ndarray:
    """When each claim got its final human label, as a rank (0 first; ties share a rank).

    The time is the latest of its reviewers' final verdicts (``final_at``, else ``blind_at``,
    else ``updated_at``) and its adjudication, if any; claims without any come last. A label a
    file import wrote takes that import's one start time, whichever of the import's short writes
    stored it: every label of one file ties, and the rules' seeded shuffle of ties
    (`decisions.answer_sums`) decides their order, never the file's order or its batches.
    ISO 8601 times in one zone sort as text, so the rank is the position among the distinct times.
    """
    pks = np.asarray(claim_pks, dtype=np.int64).reshape(-1)
    v, h, i, d = judge_verdicts.c, human_labels.c, imports.c, adjudications.c
    labeled = judge_verdicts.join(
        human_labels, and_(h.claim_pk == v.claim_pk, h.status == "labeled")
    ).outerjoin(imports, i.id == h.import_id)
    row = db.run(
        select(
            json_list(h.claim_pk),
            json_list(func.coalesce(i.started_at, h.final_at, h.blind_at, h.updated_at)),
        )
        .select_from(labeled)
        .where(v.run_id == run_id, hidden(db, label=h.import_id))
    ).one()
    adj = db.run(
        select(json_list(d.claim_pk), json_list(d.created_at))
        .select_from(judge_verdicts.join(adjudications, d.claim_pk == v.claim_pk))
        .where(v.run_id == run_id)
    ).one()
    at_pk = np.concatenate([json_ints(row[0]), json_ints(adj[0])])
    times = np.array(json.loads(row[1]) + json.loads(adj[1]), dtype=str)  # fixed-width text sorts in C
    if at_pk.size == 0 or pks.size == 0:
        return np.zeros(pks.size)
    distinct, code = np.unique(times, return_inverse=True)
    code = code.reshape(-1).astype(float)
    latest = np.full(pks.size, float(distinct.size))  # no label time: after every labeled claim
    order = np.argsort(pks, kind="stable")
    pos = np.searchsorted(pks[order], at_pk)
    found = (pos < pks.size) & (pks[order][np.minimum(pos, pks.size - 1)] == at_pk)
    idx = order[pos[found]]
    seen = np.full(pks.size, -1.0)
    np.maximum.at(seen, idx, code[found])
    return np.where(seen >= 0, seen, latest)


def run_was_stratified(db: Database, run_id: int) -> bool:
    """Did some cycle of the run draw its answers stratified by category?"""
    c = cycles.c
    found = select(ONE).where(c.judge_run_id == run_id, c.strategy == "stratified").limit(ONE)
    return db.run(found).first() is not None


@dataclass(frozen=True, slots=True)
class CycleDesign:
    """How a cycle drew its answers: what its own figures can say about its pool."""

    name: str
    strategy: str
    include_labeled: bool
    holdout: bool
    answer_ids: list[str]
    inclusion_prob: np.ndarray  # float, aligned with answer_ids


def cycle_design(db: Database, cycle_id: int) -> CycleDesign:
    """The cycle's strategy, eligibility rules and each of its answers' inclusion probability."""
    c, ca = cycles.c, cycle_answers.c
    name, strategy, include_labeled, holdout = db.run(
        select(c.name, c.strategy, c.include_labeled, c.holdout).where(c.id == cycle_id)
    ).one()
    drawn = (
        select(ca.answer_id, ca.inclusion_prob)
        .where(ca.cycle_id == cycle_id)
        .order_by(ca.position)
        .subquery("d")
    )
    ids_j, prob_j = db.run(select(json_list(drawn.c.answer_id), json_list(drawn.c.inclusion_prob))).one()
    return CycleDesign(
        name,
        strategy,
        bool(include_labeled),
        bool(holdout),
        json.loads(ids_j),
        np.array(json.loads(prob_j), dtype=float),
    )
