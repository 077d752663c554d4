"""The dashboard's reads beyond the report: run and cycle choices, the cache fingerprint, the
trend of closed cycles, answer categories, claim details and the claims awaiting a lead.

The claims and labels behind the figures come from `claims.claim_table`; these are the
capped lookups around them (a page lists tens of claims, the export has them all).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, exists, func, literal, literal_column, select, tuple_

from .core import ONE, json_list, json_row, json_value, text_list
from .database import Database
from .imports import hidden
from .tables import (
    adjudications,
    answer_reveals,
    answers,
    assignments,
    chunks,
    claims,
    cycle_answers,
    cycles,
    human_labels,
    imports,
    judge_calls,
    judge_runs,
    judge_verdicts,
    label_events,
    labeling_closures,
    settings,
)


def latest_labeled_import(db: Database) -> int | None:
    """The most recently imported run with at least one human-labeled claim; None if none is."""
    r, v, h = judge_runs.c, judge_verdicts.c, human_labels.c
    labeled = (
        select(ONE)
        .select_from(judge_verdicts.join(human_labels, h.claim_pk == v.claim_pk))
        .where(v.run_id == r.id, h.status == "labeled", hidden(db, label=h.import_id))
    )
    found = db.run(
        select(r.id).where(r.origin == "import", exists(labeled)).order_by(r.id.desc()).limit(ONE)
    ).scalar()
    return None if found is None else int(found)


def latest_active_cycle_run(db: Database) -> int | None:
    """The run of the cycle that took the most recent label (verdict, skip, unclear, reconcile);
    None before any cycle took one. Reads only cycle labels (the `label_events_cycle` index)."""
    e = label_events.c
    last = (
        select(e.cycle_id, func.max(e.id).label("last"))
        .where(e.cycle_id.is_not(None))
        .group_by(e.cycle_id)
        .subquery("e")
    )
    found = db.run(
        select(cycles.c.judge_run_id)
        .select_from(cycles.join(last, last.c.cycle_id == cycles.c.id))
        .order_by(last.c.last.desc())
        .limit(ONE)
    ).scalar()
    return None if found is None else int(found)


def cycle_names(db: Database, run_id: int) -> list[str]:
    """Names of the run's cycles, oldest first."""
    c = cycles.c
    return list(db.run(select(c.name).where(c.judge_run_id == run_id).order_by(c.id)).scalars())


def fingerprint(db: Database) -> tuple[Any, ...]:
    """Changes whenever anything the dashboard shows could have changed; cheap (index ends).

    Every label write and adjudication appends a label event; imports add claims and
    verdicts, and a staged import's rows appear when it finishes; closing a cycle sets
    closed_at, and closing a run's labeling adds its closure; thresholds live in settings; a judge-lab call
    can rewrite a verdict in place; holdout marks change which answers count.
    """
    # SQLite's rowid end is free; PostgreSQL has none, and counts (an import's verdicts only add).
    verdicts = func.max(literal_column("rowid")) if db.dialect == "sqlite" else func.count()
    k, jc = settings.c, judge_calls.c
    parts = (
        select(func.max(label_events.c.id)),
        select(func.max(claims.c.id)),
        select(verdicts).select_from(judge_verdicts),
        select(func.count()).select_from(judge_runs),
        select(func.max(cycles.c.id)),
        select(func.max(cycles.c.closed_at)),
        select(text_list(k.key + "=" + k.value, literal(","))).where(k.key.like("stats.%")),
        select(func.max(adjudications.c.created_at)),
        select(func.max(jc.created_at)),
        select(func.count()).where(jc.status == "ok"),
        select(func.count()).where(answers.c.holdout == 1),
        select(func.max(imports.c.finished_at)),
        select(func.max(labeling_closures.c.closed_at)),
    )
    return tuple(db.run(select(*(p.scalar_subquery() for p in parts))).one())


def closed_snapshots(db: Database, run_id: int) -> list[tuple[str, str | None, dict[str, Any]]]:
    """(name, closed_at, snapshot) of the run's closed cycles, in closing order."""
    c = cycles.c
    rows = db.run(
        select(c.name, c.closed_at, c.snapshot)
        .where(c.judge_run_id == run_id, c.status == "closed")
        .order_by(c.closed_at, c.id)
    ).all()
    return [(name, closed_at, json.loads(snap) if snap else {}) for name, closed_at, snap in rows]


def answer_categories(db: Database, answer_ids: Sequence[str]) -> dict[str, str | None]:
    """Answer id -> category (None where it has none), for the given answers."""
    if not answer_ids:
        return {}
    a = answers.c
    ids, cats = db.run(select(json_list(a.id), json_list(a.category)).where(a.id.in_(list(answer_ids)))).one()
    return dict(zip(json.loads(ids), json.loads(cats), strict=True))


@dataclass(frozen=True, slots=True)
class DetailRow:
    """What a claim table shows of one claim, beside the run's verdict."""

    answer_id: str
    claim_id: str
    category: str | None
    text: str
    rationale: str | None
    judge_evidence: list[str]
    notes: str | None  # "reviewer: note" lines
    reviewer_evidence: list[list[str]]  # each reviewer's cited chunk ids
    chunks: list[tuple[int, str, str]]  # (position, chunk id, text), in order


def _all_splits(keys: Sequence[str]) -> list[list[str]]:
    out = []
    for k in keys:
        parts = k.split("/")
        out += [["/".join(parts[:i]), "/".join(parts[i:])] for i in range(1, len(parts))]
    return out


def _chunk_rows() -> Any:
    """The claim's answer's chunks as one JSON array of [position, chunk id, text]."""
    ch = chunks.c
    return select(json_list(json_row(ch.position, ch.chunk_id, ch.text))).where(
        ch.answer_id == claims.c.answer_id
    )


def claim_details(db: Database, run_id: int, keys: Sequence[str]) -> list[DetailRow]:
    """Details of the claims with keys "ANSWER/CLAIM" (ids may hold "/" themselves: every split
    is looked up, an index hit each, so a caller keeps the rows whose key it asked for)."""
    if not keys:
        return []
    c, a, v, h = claims.c, answers.c, judge_verdicts.c, human_labels.c
    shown = hidden(db, label=h.import_id)
    notes = select(text_list(h.reviewer + ": " + h.note, literal("\n"))).where(
        h.claim_pk == c.id, h.note.is_not(None), h.note != "", shown
    )
    evidence = select(json_list(json_value(h.evidence))).where(h.claim_pk == c.id, shown)
    c2 = claims.alias("c2").c
    asked = select(c2.id).where(tuple_(c2.answer_id, c2.claim_id).in_([tuple(k) for k in _all_splits(keys)]))
    rows = db.run(
        select(
            c.answer_id,
            c.claim_id,
            a.category,
            c.text,
            v.rationale,
            v.evidence,
            notes.scalar_subquery(),
            evidence.scalar_subquery(),
            _chunk_rows().scalar_subquery(),
        )
        .select_from(
            claims.join(answers, a.id == c.answer_id).outerjoin(
                judge_verdicts, and_(v.claim_pk == c.id, v.run_id == run_id)
            )
        )
        .where(c.id.in_(asked))
    ).all()
    return [
        DetailRow(
            aid,
            cid,
            cat,
            text,
            rationale,
            json.loads(judge_ev or "[]"),
            notes,
            json.loads(human_ev),
            sorted(tuple(c) for c in json.loads(chunks_j)),
        )
        for aid, cid, cat, text, rationale, judge_ev, notes, human_ev, chunks_j in rows
    ]


@dataclass(frozen=True, slots=True)
class PendingRow:
    """An unresolved claim with every reviewer's label on it and the run's verdict."""

    claim_pk: int
    answer_id: str
    claim_id: str
    text: str
    judge: str | None
    rationale: str | None
    judge_evidence: list[str]
    labels: list[tuple[str, str, str | None, str | None, list[str] | None]]  # reviewer, status, final,
    # note, evidence; sorted
    chunks: list[tuple[int, str, str]]  # (position, chunk id, text), in order


def pending_rows(db: Database, run_id: int, claim_pks: Sequence[int]) -> list[PendingRow]:
    """The claims behind `claim_pks` (any order) as a lead reads them to adjudicate."""
    if not claim_pks:
        return []
    c, v, h = claims.c, judge_verdicts.c, human_labels.c
    labels = select(
        json_list(json_row(h.reviewer, h.status, h.final_verdict, h.note, json_value(h.evidence)))
    ).where(h.claim_pk == c.id, hidden(db, label=h.import_id))
    rows = db.run(
        select(
            c.id,
            c.answer_id,
            c.claim_id,
            c.text,
            v.verdict,
            v.rationale,
            v.evidence,
            labels.scalar_subquery(),
            _chunk_rows().scalar_subquery(),
        )
        .select_from(claims.outerjoin(judge_verdicts, and_(v.claim_pk == c.id, v.run_id == run_id)))
        .where(c.id.in_([int(pk) for pk in claim_pks]))
    ).all()
    return [
        PendingRow(
            pk,
            aid,
            cid,
            text,
            judge,
            rationale,
            json.loads(judge_ev or "[]"),
            sorted(tuple(x) for x in json.loads(labels_j)),
            sorted(tuple(c) for c in json.loads(chunks_j)),
        )
        for pk, aid, cid, text, judge, rationale, judge_ev, labels_j, chunks_j in rows
    ]


# ---------------------------------------------------------------- open work (the blind rule's facts)


@dataclass(frozen=True, slots=True)
class OpenCycleWork:
    """What an open cycle asks of its reviewers, as `roles.open_work` reads it.

    Reviewer names are as stored (assignments, label events, reveals); the rule compares them
    by comparison key, so a lead signed in as "ANNA" finds the work of "anna"."""

    name: str
    answers: tuple[str, ...]  # the cycle's answers that have claims, in cycle order
    assigned: tuple[tuple[str, str], ...]  # (answer id, reviewer); empty: open to every reviewer
    started: tuple[str, ...]  # reviewers with a label event (verdict, skip, unclear...) in the cycle
    revealed: tuple[tuple[str, str], ...]  # (answer id, reviewer) of its answers committed, in any cycle


def open_cycle_work(db: Database) -> list[OpenCycleWork]:
    """Every open cycle with its answers, assignments, who started on it and what is committed.

    Closed cycles take no more labels, so they hold no open work. A handful of index reads per
    open cycle (cycles hold tens of answers)."""
    out = []
    c, ca, asg, e, rv = cycles.c, cycle_answers.c, assignments.c, label_events.c, answer_reveals.c
    open_cycles = db.run(select(c.id, c.name).where(c.status == "open").order_by(c.id)).all()
    for cycle_id, name in open_cycles:
        with_claims = exists(select(ONE).where(claims.c.answer_id == ca.answer_id))
        drawn = tuple(
            db.run(
                select(ca.answer_id).where(ca.cycle_id == cycle_id, with_claims).order_by(ca.position)
            ).scalars()
        )
        assigned = tuple(
            (a, r)
            for a, r in db.run(
                select(asg.answer_id, asg.reviewer)
                .where(asg.cycle_id == cycle_id)
                .order_by(asg.answer_id, asg.reviewer)
            )
        )
        started = tuple(
            db.run(select(e.reviewer).distinct().where(e.cycle_id == cycle_id).order_by(e.reviewer)).scalars()
        )
        revealed = tuple(
            (a, r)
            for a, r in db.run(
                select(rv.answer_id, rv.reviewer)
                .select_from(
                    answer_reveals.join(
                        cycle_answers, and_(ca.answer_id == rv.answer_id, ca.cycle_id == cycle_id)
                    )
                )
                .where(hidden(db, label=rv.import_id))
                .order_by(rv.answer_id, rv.reviewer)
            )
        )
        out.append(OpenCycleWork(name, drawn, assigned, started, revealed))
    return out


def answers_in_scope(db: Database, run_id: int, cycle_id: int | None, answer_ids: Sequence[str]) -> set[str]:
    """Those of `answer_ids` a dashboard scope holds: the cycle's answers when a cycle is given,
    else every answer with a claim the run judged (the run-level views and exports draw on them)."""
    if not answer_ids:
        return set()
    ids = list(answer_ids)
    if cycle_id is not None:
        ca = cycle_answers.c
        query = select(ca.answer_id).where(ca.cycle_id == cycle_id, ca.answer_id.in_(ids))
    else:
        c, v = claims.c, judge_verdicts.c
        query = (
            select(c.answer_id)
            .distinct()
            .select_from(claims.join(judge_verdicts, and_(v.claim_pk == c.id, v.run_id == run_id)))
            .where(c.answer_id.in_(ids))
        )
    return set(db.run(query).scalars())
