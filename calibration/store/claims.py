"""The one final-label reader: a run's judged claims beside their final human labels.

Everything that needs "the human label of a claim" (CLI `stats`, the dashboard, cycle close
snapshots, the judge-lab comparison, exports, the sampling pool) reads it here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import ColumnElement, FromClause, Select, bindparam, case, exists, literal_column, or_, select

from ..final_label import UNLABELED_CODE, UNRESOLVED_CODES, resolve
from ..vocab import CLAIM_STATUSES, LABELS, ClaimStatus
from .connection import read_snapshot
from .core import ONE, batches, cross_join, json_list
from .database import Database
from .imports import hidden
from .tables import adjudications, claims, cycle_answers, human_labels, judge_verdicts


def human_labeled(db: Database, claim: ColumnElement[Any]) -> ColumnElement[bool]:
    """The claim in column `claim` has a human label to compare with, a reviewer's verdict or a
    lead's adjudication (an unclear mark a lead settled counts). The one "labeled claim" of the
    counts (Home, `info`, the Judge lab), as the reports count them."""
    h, a = human_labels.alias("h"), adjudications.alias("a")
    return or_(
        exists(
            select(ONE).where(h.c.claim_pk == claim, h.c.status == "labeled", hidden(db, label=h.c.import_id))
        ),
        exists(select(ONE).where(a.c.claim_pk == claim)),
    )


@dataclass(frozen=True, slots=True)
class ReviewerColumns:
    """The labels with status 'labeled' on the judged claims in scope, one entry per (claim, reviewer).

    Verdicts are indices into `agreement.LABELS`, -1 where there is none.
    """

    claim_pk: np.ndarray  # int64
    claim: np.ndarray  # int64 position of the claim among the judged claims in scope, report order
    reviewers: list[str]  # distinct reviewer names, sorted
    reviewer: np.ndarray  # int64 index into reviewers
    final: np.ndarray  # the reviewer's current final verdict (after reconcile)
    blind: np.ndarray  # the verdict given before the judge was revealed
    reconciled: np.ndarray  # 0 not reconciled, 1 keep, 2 judge_right
    slip: np.ndarray  # int64, as stored
    judge: np.ndarray  # the run's verdict on the claim


@dataclass(frozen=True, slots=True)
class StatsColumns:
    """The same input as columns, one entry per claim with a final human label, in report order.

    Order: claim id for a whole run; the cycle's answer order, then claim position, within a
    cycle. Verdicts are indices into `agreement.LABELS`; `cluster` numbers the answers in order
    of first appearance, as `report.agreement_report` does, so both give the same resamples.
    """

    claim_pk: np.ndarray  # int64
    keys: list[str]  # "ANSWER/CLAIM"
    cluster: np.ndarray  # int64 index into answer_ids
    answer_ids: list[str]  # one per cluster
    human: np.ndarray  # int64, the final human label
    judge: np.ndarray  # int64
    weight: np.ndarray | None  # 1 / inclusion probability within a cycle, else None
    reviewer_labels: list[tuple[str, str, str]]  # (claim key, reviewer, verdict); see stats_columns
    unresolved: tuple[str, ...]  # reviewers disagree or one marked it unclear; nobody adjudicated
    unresolved_pk: np.ndarray  # int64, the same claims
    unlabeled: int  # judged claims no reviewer has labelled yet
    labels: ReviewerColumns

    def __len__(self) -> int:
        return len(self.keys)


def verdict_index(col: ColumnElement[Any]) -> ColumnElement[int]:
    """A verdict's index in LABELS: -1 for NULL, NULL for anything else (the CHECKs forbid it)."""
    known = case({literal_column(f"'{v}'"): literal_column(str(i)) for i, v in enumerate(LABELS)}, value=col)
    return case((col.is_(None), literal_column("-1")), else_=known)


def json_ints(text: str) -> np.ndarray:
    """A JSON array of integers from SQLite (no spaces) as int64, parsed in C."""
    if "null" in text:  # a CASE fell through: a value the schema's CHECKs forbid
        raise ValueError("a verdict or reconcile in the store is not one the schema allows")
    if any(mark in text for mark in '.eE"'):  # a real or a text where an integer belongs
        raise ValueError("a non-integer value in an integer column")
    if text == "[]":
        return np.zeros(0, dtype=np.int64)
    values = np.fromstring(text[1:-1], dtype=np.int64, sep=",")
    if values.size != text.count(",") + 1:
        raise ValueError("a non-integer value in an integer column")
    return values


# Two queries, each folded into one row of JSON arrays (one fetch, no Python object per row;
# every aggregate of a query sees its rows in the same order), over `source`, the judged claims
# in scope. Small codes travel packed into one integer per row: judge + 4 * (adjudicated + 1)
# for a claim; (final + 1) + 4 * (blind + 1) + 16 * reconciled + 64 * slip for a label,
# reconciled being 0 (not), 1 (keep) or 2 (judge_right). A value the schema's CHECKs forbid
# turns the whole code NULL, which `json_ints` refuses.
_v, _c, _ca, _d, _h = judge_verdicts.c, claims.c, cycle_answers.c, adjudications.c, human_labels.c
_RECONCILED = case(
    (_h.reconciled.is_(None), literal_column("0")),
    (_h.reconciled == literal_column("'keep'"), literal_column("1")),
    (_h.reconciled == literal_column("'judge_right'"), literal_column("2")),
)


def _n(value: int) -> ColumnElement[Any]:
    """An integer written into the statement."""
    return literal_column(str(value))


def _claims_query(
    db: Database, source: FromClause, answer_position: ColumnElement[Any]
) -> Select[*tuple[Any, ...]]:
    code = verdict_index(_v.verdict) + _n(4) * (verdict_index(_d.verdict) + _n(1))
    return (
        select(
            json_list(_v.claim_pk),
            json_list(_c.answer_id),
            json_list(_c.answer_id + "/" + _c.claim_id),
            json_list(code),
            json_list(answer_position),
            json_list(_c.position),
        )
        .select_from(source.outerjoin(adjudications, _d.claim_pk == _v.claim_pk))
        .where(_v.run_id == bindparam("run"), hidden(db, claim=_v.claim_pk, run=_v.run_id))
    )


def _labels_query(db: Database, source: FromClause) -> Select[*tuple[Any, ...]]:
    code = (
        (verdict_index(_h.final_verdict) + _n(1))
        + _n(4) * (verdict_index(_h.blind_verdict) + _n(1))
        + _n(64) * _h.slip
        + _n(16) * _RECONCILED
    )
    labeled = (_h.claim_pk == _v.claim_pk) & (_h.status == "labeled")
    return (
        select(json_list(_h.claim_pk), json_list(_h.reviewer), json_list(code))
        .select_from(source.join(human_labels, labeled))
        .where(
            _v.run_id == bindparam("run"),
            hidden(db, claim=_v.claim_pk, run=_v.run_id),
            hidden(db, label=_h.import_id),
        )
    )


@dataclass(frozen=True, slots=True)
class ClaimTable:
    """Every judged claim of a run in scope (the whole run, or one cycle), in report order.

    Order: claim id for a whole run; the cycle's answer order, then claim position, within a
    cycle. `human` is the final human label (`final_label.resolve`), -1 where there is none;
    `status` indexes `vocab.CLAIM_STATUSES`. `labels` holds every reviewer's label with a
    verdict (status 'labeled') on these claims, blind and final.
    """

    claim_pk: np.ndarray  # int64
    keys: list[str]  # "ANSWER/CLAIM"
    answer: np.ndarray  # int64 index into answer_ids
    answer_ids: list[str]  # distinct answers, in order of first appearance
    judge: np.ndarray  # int64 index into LABELS
    human: np.ndarray  # int64 index into LABELS, -1 where none
    status: np.ndarray  # int64 index into vocab.CLAIM_STATUSES
    weight: np.ndarray | None  # per claim: 1 / its answer's inclusion probability in the cycle
    labels: ReviewerColumns

    def __len__(self) -> int:
        return len(self.keys)

    def statuses(self) -> list[ClaimStatus]:
        return [CLAIM_STATUSES[i] for i in self.status.tolist()]

    def agreed(self) -> np.ndarray:
        """Mask of the claims with a final human label (unanimous or adjudicated)."""
        return self.human >= 0

    def unresolved(self) -> np.ndarray:
        """Mask of the claims reviewers disagree on or marked unclear, with no adjudication."""
        return np.isin(self.status, UNRESOLVED_CODES)

    def answer_fully_agreed(self) -> dict[str, bool]:
        """Per answer: does every one of its claims have a final human label?"""
        missing = np.bincount(self.answer[~self.agreed()], minlength=len(self.answer_ids))
        return {a: not missing[i] for i, a in enumerate(self.answer_ids)}

    def reviewer_pairs(self, at_least: int = 2) -> list[tuple[str, str, str]]:
        """(claim key, reviewer, final verdict) for the labeled claims with at least `at_least`
        reviewers' verdicts (2: all that human-human agreement reads); claim order, then reviewer."""
        lab = self.labels
        if not at_least or not len(lab.claim):
            return []
        given = lab.final >= 0
        n_labels = np.bincount(lab.claim[given], minlength=len(self))
        pick = np.flatnonzero(given & (n_labels[lab.claim] >= at_least))
        pick = pick[np.lexsort((lab.reviewer[pick], lab.claim[pick]))]
        return [
            (self.keys[c], lab.reviewers[r], LABELS[v])
            for c, r, v in zip(
                lab.claim[pick].tolist(), lab.reviewer[pick].tolist(), lab.final[pick].tolist(), strict=True
            )
        ]

    def resolved(self, reviewer_labels: str = "shared") -> StatsColumns:
        """The claims with a final human label, as the statistics take them."""
        at_least = {"shared": 2, "all": 1, "none": 0}.get(reviewer_labels)
        if at_least is None:
            raise ValueError(f"reviewer_labels must be shared, all or none, not {reviewer_labels!r}")
        idx = np.flatnonzero(self.agreed())
        loose = self.unresolved()
        # Clusters are renumbered over the resolved claims in order of first appearance, as
        # `report.agreement_report` numbers them, so both give the same resamples.
        numbering: dict[int, int] = {}
        cluster = np.fromiter(
            (numbering.setdefault(a, len(numbering)) for a in self.answer[idx].tolist()),
            dtype=np.int64,
            count=idx.size,
        )
        return StatsColumns(
            claim_pk=self.claim_pk[idx],
            keys=[self.keys[i] for i in idx.tolist()],
            cluster=cluster,
            answer_ids=[self.answer_ids[a] for a in numbering],
            human=self.human[idx],
            judge=self.judge[idx],
            weight=None if self.weight is None else self.weight[idx],
            reviewer_labels=self.reviewer_pairs(at_least),
            unresolved=tuple(self.keys[i] for i in np.flatnonzero(loose).tolist()),
            unresolved_pk=self.claim_pk[loose],
            unlabeled=int((self.status == UNLABELED_CODE).sum()),
            labels=self.labels,
        )


def claim_table(db: Database, run_id: int, cycle_id: int | None = None) -> ClaimTable:
    """A run's judged claims beside their final human labels, as arrays; optionally one cycle's.

    Two index-driven reads, the judged claims (with any adjudication) and the reviewers' labels
    on them, then the final label per claim by `final_label.resolve`. (Resolving in SQL needs a
    GROUP BY per claim, which costs SQLite twice the two plain reads on 100k claims.) Within a
    cycle each claim carries its answer's weight 1 / inclusion probability, so a report can
    re-weight to the whole run.
    """
    params = {"run": run_id, "cycle": cycle_id}
    claims_source: FromClause
    labels_source: FromClause
    answer_position: ColumnElement[Any]
    if cycle_id is None:
        claims_source = judge_verdicts.join(claims, _c.id == _v.claim_pk)
        labels_source, answer_position = judge_verdicts, _n(0)
    else:
        # From the cycle's answers down: without statistics the planner would walk every verdict
        # of the run and probe the cycle for each.
        claims_source = labels_source = cross_join(
            cross_join(
                cycle_answers, claims, (_ca.cycle_id == bindparam("cycle")) & (_c.answer_id == _ca.answer_id)
            ),
            judge_verdicts,
            (_v.run_id == bindparam("run")) & (_v.claim_pk == _c.id),
        )
        answer_position = _ca.position
    with read_snapshot(db):  # both reads, and the weights, from one state of the store
        # Claims an unfinished import is still moving in are not there yet for any reader.
        pk_j, answer_j, key_j, claim_code_j, apos_j, cpos_j = db.run(
            _claims_query(db, claims_source, answer_position), params
        ).one()
        lpk_j, reviewer_j, label_code_j = db.run(_labels_query(db, labels_source), params).one()
        # Claims some reviewer marked unclear ("needs discussion"): few, so one plain read.
        unclear_j = db.run(select(json_list(_h.claim_pk)).where(_h.status == "unclear")).scalar_one()
        prob: dict[str, float] = (
            {}
            if cycle_id is None
            else dict(db.run(select(_ca.answer_id, _ca.inclusion_prob).where(_ca.cycle_id == cycle_id)).all())
        )

    pk = json_ints(pk_j)
    if cycle_id is None:
        order = np.argsort(pk, kind="stable")
    else:
        order = np.lexsort((pk, json_ints(cpos_j), json_ints(apos_j)))
    pk = pk[order]
    claim_code = json_ints(claim_code_j)[order]
    judge, adjudicated = claim_code & 3, (claim_code >> 2) - 1
    if (judge > 2).any():
        raise ValueError("a judge verdict in the store is empty")
    n = pk.size

    # Labels, each pointing at its claim's position in that order.
    by_pk = np.argsort(pk, kind="stable")
    label_pk = json_ints(lpk_j)
    at = by_pk[np.searchsorted(pk[by_pk], label_pk)] if n else np.zeros(0, dtype=np.int64)
    reviewer_names: list[str] = json.loads(reviewer_j)
    reviewers = sorted(set(reviewer_names))
    rank = {name: i for i, name in enumerate(reviewers)}
    reviewer = np.fromiter((rank[r] for r in reviewer_names), dtype=np.int64, count=len(reviewer_names))
    label_code = json_ints(label_code_j)
    final = (label_code & 3) - 1
    labels = ReviewerColumns(
        label_pk,
        at,
        reviewers,
        reviewer,
        final,
        ((label_code >> 2) & 3) - 1,
        (label_code >> 4) & 3,
        label_code >> 6,
        judge[at],
    )

    human, status = resolve(n, at, final, adjudicated, np.isin(pk, json_ints(unclear_j)))
    answers_all: list[str] = np.array(json.loads(answer_j), dtype=object)[order].tolist()
    numbering: dict[str, int] = {}
    answer = np.fromiter(
        (numbering.setdefault(a, len(numbering)) for a in answers_all), dtype=np.int64, count=n
    )
    weight = None
    if cycle_id is not None:
        weight = np.array([1 / prob[a] for a in numbering], dtype=float)[answer]
    return ClaimTable(
        claim_pk=pk,
        keys=np.array(json.loads(key_j), dtype=object)[order].tolist(),
        answer=answer,
        answer_ids=list(numbering),
        judge=judge,
        human=human,
        status=status,
        weight=weight,
        labels=labels,
    )


def stats_columns(
    db: Database, run_id: int, cycle_id: int | None = None, *, reviewer_labels: str = "shared"
) -> StatsColumns:
    """`claim_table(...).resolved(reviewer_labels)`: the resolved claims, as the statistics take them."""
    return claim_table(db, run_id, cycle_id).resolved(reviewer_labels)


def _claim_labels(db: Database) -> Select[*tuple[Any, ...]]:
    """Per claim of the list `batch` (a parameter): its id, adjudicated verdict, whether one
    marked it unclear, and the reviewers' final verdicts as a JSON array."""
    u = human_labels.alias("u")
    unclear = exists(select(ONE).where(u.c.claim_pk == _c.id, u.c.status == "unclear"))
    finals = select(json_list(verdict_index(_h.final_verdict))).where(
        _h.claim_pk == _c.id, _h.status == "labeled", hidden(db, label=_h.import_id)
    )
    return (
        select(_c.id, verdict_index(_d.verdict), unclear, finals.scalar_subquery())
        .select_from(claims.outerjoin(adjudications, _d.claim_pk == _c.id))
        .where(_c.id.in_(bindparam("batch", expanding=True)))
    )


def final_labels(db: Database, claim_pks: list[int]) -> dict[int, tuple[str | None, ClaimStatus]]:
    """Final human label and status of the given claims, whatever run judged them (for exports).

    The same rule as `claim_table` (`final_label.resolve`), read per claim.
    """
    out: dict[int, tuple[str | None, ClaimStatus]] = {}
    query = _claim_labels(db)
    for batch in batches(claim_pks):
        rows = db.run(query, {"batch": batch}).all()
        pks = [r[0] for r in rows]
        finals = [json_ints(r[3]) for r in rows]
        at = np.concatenate(
            [np.full(f.size, i, dtype=np.int64) for i, f in enumerate(finals)]
            or [np.zeros(0, dtype=np.int64)]
        )
        final = np.concatenate(finals or [np.zeros(0, dtype=np.int64)])
        human, status = resolve(
            len(rows),
            at,
            final,
            np.array([r[1] for r in rows], dtype=np.int64),
            np.array([bool(r[2]) for r in rows]),
        )
        for pk, h, s in zip(pks, human.tolist(), status.tolist(), strict=True):
            out[pk] = (LABELS[h] if h >= 0 else None, CLAIM_STATUSES[s])
    return out
