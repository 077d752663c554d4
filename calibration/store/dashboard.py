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

from .database import Database
from .imports import hide_sql


def latest_labeled_import(db: Database) -> int | None:
    """The most recently imported run with at least one human-labeled claim; None if none is."""
    row = db.execute(
        f"""SELECT r.id FROM judge_runs r WHERE r.origin = 'import' AND EXISTS (
               SELECT 1 FROM judge_verdicts v JOIN human_labels h ON h.claim_pk = v.claim_pk
               WHERE v.run_id = r.id AND h.status = 'labeled'{hide_sql(db, label="h.import_id")})
           ORDER BY r.id DESC LIMIT 1"""
    ).fetchone()
    return None if row is None else int(row[0])


def latest_active_cycle_run(db: Database) -> int | None:
    """The run of the cycle that took the most recent label (verdict, skip, unclear, reconcile);
    None before any cycle took one. Reads only cycle labels (the `label_events_cycle` index)."""
    row = db.execute(
        """SELECT c.judge_run_id FROM cycles c JOIN (
               SELECT cycle_id, MAX(id) AS last FROM label_events WHERE cycle_id IS NOT NULL GROUP BY cycle_id
           ) e ON e.cycle_id = c.id
           ORDER BY e.last DESC LIMIT 1"""
    ).fetchone()
    return None if row is None else int(row[0])


def cycle_names(db: Database, run_id: int) -> list[str]:
    """Names of the run's cycles, oldest first."""
    return [
        name for (name,) in db.execute("SELECT name FROM cycles WHERE judge_run_id = ? ORDER BY id", [run_id])
    ]


def fingerprint(db: Database) -> tuple[Any, ...]:
    """Changes whenever anything the dashboard shows could have changed; cheap (index ends).

    Every label write and adjudication appends a label event; imports add claims and
    verdicts, and a staged import's rows appear when it finishes; closing a cycle sets
    closed_at; thresholds live in settings; a judge-lab call
    can rewrite a verdict in place; holdout marks change which answers count.
    """
    # SQLite's rowid end is free; PostgreSQL has none, and counts (an import's verdicts only add).
    verdicts = "max(rowid)" if db.dialect == "sqlite" else "count(*)"
    return tuple(
        db.execute(
            f"""SELECT (SELECT max(id) FROM label_events), (SELECT max(id) FROM claims),
                  (SELECT {verdicts} FROM judge_verdicts), (SELECT count(*) FROM judge_runs),
                  (SELECT max(id) FROM cycles), (SELECT max(closed_at) FROM cycles),
                  (SELECT group_concat(key || '=' || value) FROM settings WHERE key LIKE 'stats.%'),
                  (SELECT max(created_at) FROM adjudications),
                  (SELECT max(created_at) FROM judge_calls),
                  (SELECT count(*) FROM judge_calls WHERE status = 'ok'),
                  (SELECT count(*) FROM answers WHERE holdout = 1),
                  (SELECT max(finished_at) FROM imports)"""
        ).fetchone()
    )


def closed_snapshots(db: Database, run_id: int) -> list[tuple[str, str | None, dict[str, Any]]]:
    """(name, closed_at, snapshot) of the run's closed cycles, in closing order."""
    rows = db.execute(
        "SELECT name, closed_at, snapshot FROM cycles WHERE judge_run_id = ? AND status = 'closed' "
        "ORDER BY closed_at, id",
        [run_id],
    ).fetchall()
    return [(name, closed_at, json.loads(snap) if snap else {}) for name, closed_at, snap in rows]


def answer_categories(db: Database, answer_ids: Sequence[str]) -> dict[str, str | None]:
    """Answer id -> category (None where it has none), for the given answers."""
    if not answer_ids:
        return {}
    ids, cats = db.execute(
        "SELECT json_group_array(id), json_group_array(category) FROM answers "
        "WHERE id IN (SELECT value FROM json_each(?))",
        [json.dumps(list(answer_ids))],
    ).fetchone()
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


def claim_details(db: Database, run_id: int, keys: Sequence[str]) -> list[DetailRow]:
    """Details of the claims with keys "ANSWER/CLAIM" (ids may hold "/" themselves: every split
    is looked up, an index hit each, so a caller keeps the rows whose key it asked for)."""
    if not keys:
        return []
    hide = hide_sql(db, label="h.import_id")
    rows = db.execute(
        f"""SELECT c.answer_id, c.claim_id, a.category, c.text, v.rationale, v.evidence,
                  (SELECT group_concat(h.reviewer || ': ' || h.note, char(10)) FROM human_labels h
                   WHERE h.claim_pk = c.id AND h.note IS NOT NULL AND h.note != ''{hide}),
                  (SELECT json_group_array(json(h.evidence)) FROM human_labels h
                   WHERE h.claim_pk = c.id{hide}),
                  (SELECT json_group_array(json_array(ch.position, ch.chunk_id, ch.text))
                   FROM chunks ch WHERE ch.answer_id = c.answer_id)
           FROM claims c
           JOIN answers a ON a.id = c.answer_id
           LEFT JOIN judge_verdicts v ON v.claim_pk = c.id AND v.run_id = :run
           WHERE c.id IN (SELECT c2.id FROM json_each(:keys) k JOIN claims c2
                          ON c2.answer_id = json_extract(k.value, '$[0]')
                          AND c2.claim_id = json_extract(k.value, '$[1]'))""",
        {"run": run_id, "keys": json.dumps(_all_splits(keys))},
    ).fetchall()
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
    rows = db.execute(
        f"""SELECT c.id, c.answer_id, c.claim_id, c.text, v.verdict, v.rationale, v.evidence,
                  (SELECT json_group_array(json_array(h.reviewer, h.status, h.final_verdict, h.note,
                                                      json(h.evidence)))
                   FROM human_labels h WHERE h.claim_pk = c.id{hide_sql(db, label="h.import_id")}),
                  (SELECT json_group_array(json_array(ch.position, ch.chunk_id, ch.text))
                   FROM chunks ch WHERE ch.answer_id = c.answer_id)
           FROM claims c LEFT JOIN judge_verdicts v ON v.claim_pk = c.id AND v.run_id = :run
           WHERE c.id IN (SELECT CAST(value AS INTEGER) FROM json_each(:pks))""",
        {"run": run_id, "pks": json.dumps([int(pk) for pk in claim_pks])},
    ).fetchall()
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
    open_cycles = db.execute("SELECT id, name FROM cycles WHERE status = 'open' ORDER BY id").fetchall()
    for cycle_id, name in open_cycles:
        answers = tuple(
            r[0]
            for r in db.execute(
                """SELECT ca.answer_id FROM cycle_answers ca WHERE ca.cycle_id = ?
               AND EXISTS (SELECT 1 FROM claims c WHERE c.answer_id = ca.answer_id)
               ORDER BY ca.position""",
                [cycle_id],
            )
        )
        assigned = tuple(
            (a, r)
            for a, r in db.execute(
                "SELECT answer_id, reviewer FROM assignments WHERE cycle_id = ? ORDER BY answer_id, reviewer",
                [cycle_id],
            )
        )
        started = tuple(
            r[0]
            for r in db.execute(
                "SELECT DISTINCT reviewer FROM label_events WHERE cycle_id = ? ORDER BY reviewer", [cycle_id]
            )
        )
        revealed = tuple(
            (a, r)
            for a, r in db.execute(
                f"""SELECT v.answer_id, v.reviewer FROM answer_reveals v
               JOIN cycle_answers ca ON ca.answer_id = v.answer_id AND ca.cycle_id = ?
               WHERE 1{hide_sql(db, label="v.import_id")}
               ORDER BY v.answer_id, v.reviewer""",
                [cycle_id],
            )
        )
        out.append(OpenCycleWork(name, answers, assigned, started, revealed))
    return out


def answers_in_scope(db: Database, run_id: int, cycle_id: int | None, answer_ids: Sequence[str]) -> set[str]:
    """Those of `answer_ids` a dashboard scope holds: the cycle's answers when a cycle is given,
    else every answer with a claim the run judged (the run-level views and exports draw on them)."""
    if not answer_ids:
        return set()
    ids = json.dumps(list(answer_ids))
    if cycle_id is not None:
        rows = db.execute(
            "SELECT answer_id FROM cycle_answers WHERE cycle_id = ? "
            "AND answer_id IN (SELECT value FROM json_each(?))",
            [cycle_id, ids],
        )
    else:
        rows = db.execute(
            """SELECT DISTINCT c.answer_id FROM claims c
               JOIN judge_verdicts v ON v.claim_pk = c.id AND v.run_id = ?
               WHERE c.answer_id IN (SELECT value FROM json_each(?))""",
            [run_id, ids],
        )
    return {r[0] for r in rows}
