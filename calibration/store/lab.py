"""The judge lab's storage: lab runs, their calls, and the reads the lab's page and runner need.

A lab run is a judge run (origin 'lab') with a row in `judge_lab_runs` beside it (template,
endpoint, parameters, token totals) and one row per answer in `judge_calls` (the prompt as
sent, every round and HTTP attempt). Functions take plain values, never the judge package's
types, so this module does not import `calibration.judge` (which imports it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import and_, case, exists, func, insert, select, update

from ..errors import ConflictError
from .claims import human_labeled
from .connection import now, write
from .core import ONE, batches, upsert
from .database import Database
from .runs import JudgeRun, run_id
from .tables import (
    answers,
    chunks,
    claims,
    cycle_answers,
    cycles,
    human_labels,
    judge_calls,
    judge_lab_examples,
    judge_lab_revisions,
    judge_lab_runs,
    judge_runs,
    judge_verdicts,
)

LAB_ORIGIN = "lab"

_r = judge_runs.c
_RUN = select(_r.id, _r.judge_model, _r.prompt_version, _r.origin, _r.created_at)
_lab = judge_lab_runs.c
_call = judge_calls.c


@dataclass(frozen=True, slots=True)
class AnswerText:
    """One answer as the judge is shown it: question, answer, chunks and claims in stored order."""

    answer_id: str
    question: str
    answer: str
    chunks: tuple[tuple[str, str, str | None], ...]  # (chunk id, text, source)
    claims: tuple[tuple[int, str, str], ...]  # (claim pk, claim id, text)


@dataclass(frozen=True, slots=True)
class VerdictRecord:
    """One verdict of a call, as stored in judge_verdicts."""

    claim_pk: int
    verdict: str
    raw_verdict: str
    rationale: str | None
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One answer's call, as stored in judge_calls; `verdicts` only when the status is ok."""

    answer_id: str
    status: Literal["ok", "failed"]
    prompt: str
    response: str | None
    exchanges: list[dict[str, Any]]
    attempts: int
    error: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None
    latency_ms: float
    verdicts: tuple[VerdictRecord, ...] = ()


@dataclass(frozen=True, slots=True)
class RunTotals:
    """State of a lab run over all its invocations."""

    answers_ok: int
    answers_failed: int
    claims_judged: int
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None


# ---------------------------------------------------------------- what to judge


def scope_answer_ids(db: Database, *, labeled_only: bool = False, cycle_id: int | None = None) -> list[str]:
    """Answers that have claims: all of them (by id), those with a human-labeled claim
    (`labeled_only`, by id), or a cycle's (in the cycle's order)."""
    c = claims.c
    if cycle_id is not None:
        ca = cycle_answers.c
        with_claims = exists(select(ONE).where(c.answer_id == ca.answer_id))
        drawn = select(ca.answer_id).where(ca.cycle_id == cycle_id, with_claims).order_by(ca.position)
        return list(db.run(drawn).scalars())
    query = select(c.answer_id).distinct().order_by(c.answer_id)
    if labeled_only:
        h = human_labels.c
        query = query.select_from(claims.join(human_labels, and_(h.claim_pk == c.id, h.status == "labeled")))
    return list(db.run(query).scalars())


def claim_count(db: Database, answer_ids: Sequence[str]) -> int:
    """How many claims the given answers have."""
    total = 0
    for batch in batches(answer_ids):
        total += int(db.run(select(func.count()).where(claims.c.answer_id.in_(batch))).scalar_one())
    return total


def answer_texts(db: Database, answer_ids: Sequence[str]) -> list[AnswerText]:
    """The stored question, answer, chunks and claims of each answer, in `answer_ids` order."""
    out = []
    for aid in answer_ids:
        question, answer = db.run(
            select(answers.c.question, answers.c.answer).where(answers.c.id == aid)
        ).one()
        k, c = chunks.c, claims.c
        shown = tuple(
            (r[0], r[1], r[2])
            for r in db.run(
                select(k.chunk_id, k.text, k.source).where(k.answer_id == aid).order_by(k.position)
            )
        )
        claimed = tuple(
            (r[0], r[1], r[2])
            for r in db.run(
                select(c.id, c.claim_id, c.text).where(c.answer_id == aid).order_by(c.position, c.id)
            )
        )
        out.append(AnswerText(aid, question, answer, shown, claimed))
    return out


# ---------------------------------------------------------------- lab runs


def _run(db: Database, run_id: int) -> JudgeRun:
    return JudgeRun(*db.run(_RUN.where(_r.id == run_id)).one())


def resumable_run_id(db: Database, model: str, version: str, template_sha256: str) -> int | None:
    """The id of the lab run MODEL@VERSION if it exists and may be resumed with this template;
    None if there is no such run; ConflictError if the name is taken otherwise.

    A version name stands for one template text: resuming with an edited template would
    mix two prompts in one run, so it is refused.
    """
    found = run_id(db, model, version, create=False)
    if found is None:
        return None
    origin = db.run(select(_r.origin).where(_r.id == found)).scalar_one()
    lab = db.run(select(_lab.template_sha256).where(_lab.run_id == found)).first()
    if origin != LAB_ORIGIN or lab is None:
        raise ConflictError(
            f"judge run {model}@{version} already exists (origin "
            f"{origin!r}) and was not made by the judge lab; choose another prompt version"
        )
    if lab[0] != template_sha256:
        raise ConflictError(
            f"judge run {model}@{version} was made with a different "
            "prompt text; an edited prompt needs a new version name"
        )
    return found


def find_lab_run(db: Database, model: str, version: str, template_sha256: str) -> JudgeRun | None:
    """The lab run MODEL@VERSION to resume, or None; writes nothing (see `resumable_run_id`)."""
    found = resumable_run_id(db, model, version, template_sha256)
    return None if found is None else _run(db, found)


def open_lab_run(
    db: Database,
    *,
    model: str,
    version: str,
    template: str,
    template_sha256: str,
    base_url: str,
    params: dict[str, Any],
    scope: str,
) -> tuple[JudgeRun, bool]:
    """Create the lab run MODEL@VERSION, or take it up again. Returns (run, resumed).

    The runner calls this when the first result is stored, not before the first request:
    a run that gets nothing back (an unreachable endpoint) leaves no judge run behind.
    """
    with write(db):
        found = resumable_run_id(db, model, version, template_sha256)
        if found is not None:
            # The latest endpoint and parameters are kept: resuming after moving the server
            # is legitimate, and the template (what matters for the verdicts) is unchanged.
            db.run(
                update(judge_lab_runs)
                .where(_lab.run_id == found)
                .values(base_url=base_url, params=json.dumps(params), scope=scope, finished_at=None)
            )
            return _run(db, found), True
        ts = now()
        new = run_id(db, model, version, origin=LAB_ORIGIN, created_at=ts)
        if new is None:  # not reached: create=True always gives an id
            raise AssertionError("run_id returned no id")
        db.run(
            insert(judge_lab_runs).values(
                run_id=new,
                template=template,
                template_sha256=template_sha256,
                base_url=base_url,
                params=json.dumps(params),
                scope=scope,
                started_at=ts,
            )
        )
        return _run(db, new), False


def finish_lab_run(db: Database, run_id: int) -> None:
    """Mark the run finished (an invocation went through all its answers)."""
    with write(db):
        db.run(update(judge_lab_runs).where(_lab.run_id == run_id).values(finished_at=now()))


def ok_answer_ids(db: Database, run_id: int) -> set[str]:
    """Answers the run has judged successfully: a resume does not request them again."""
    return set(db.run(select(_call.answer_id).where(_call.run_id == run_id, _call.status == "ok")).scalars())


def record_call(db: Database, run_id: int, call: CallRecord) -> int:
    """Store one answer's call and, if ok, its verdicts, in one transaction; returns the
    number of verdicts written (0 when another process had already stored an ok call)."""
    with write(db):
        # Never downgrade: if another process already stored an ok call, keep it.
        stored = upsert(db.dialect, judge_calls).values(
            run_id=run_id,
            answer_id=call.answer_id,
            status=call.status,
            prompt=call.prompt,
            response=call.response,
            exchanges=json.dumps(call.exchanges, ensure_ascii=False),
            attempts=call.attempts,
            error=call.error,
            prompt_tokens=call.prompt_tokens,
            completion_tokens=call.completion_tokens,
            total_tokens=call.total_tokens,
            latency_ms=call.latency_ms,
            created_at=now(),
        )
        kept = ("run_id", "answer_id")
        # RETURNING says whether the row was written: psycopg counts no rows of an INSERT.
        written = db.run(
            stored.on_conflict_do_update(
                index_elements=[_call.run_id, _call.answer_id],
                set_={col.name: stored.excluded[col.name] for col in judge_calls.c if col.name not in kept},
                where=_call.status != "ok",
            ).returning(_call.run_id)
        ).first()
        # Every call was paid for, a failed one too: its tokens count towards the run. A call
        # without a count leaves the total as it was (the sum with NULL is NULL).
        paid = {
            "prompt_tokens": call.prompt_tokens,
            "completion_tokens": call.completion_tokens,
            "total_tokens": call.total_tokens,
        }
        db.run(
            update(judge_lab_runs)
            .where(_lab.run_id == run_id)
            .values({k: func.coalesce(func.coalesce(_lab[k], 0) + n, _lab[k]) for k, n in paid.items()})
        )
        if call.status != "ok" or written is None:
            return 0
        if call.verdicts:
            v = upsert(db.dialect, judge_verdicts)
            db.run(
                v.on_conflict_do_update(
                    index_elements=[judge_verdicts.c.run_id, judge_verdicts.c.claim_pk],
                    set_={c: v.excluded[c] for c in ("verdict", "raw_verdict", "rationale", "evidence")},
                ),
                [
                    {
                        "run_id": run_id,
                        "claim_pk": r.claim_pk,
                        "verdict": r.verdict,
                        "raw_verdict": r.raw_verdict,
                        "rationale": r.rationale,
                        "evidence": json.dumps(list(r.evidence), ensure_ascii=False),
                    }
                    for r in call.verdicts
                ],
            )
        return len(call.verdicts)


# ---------------------------------------------------------------- reads for the UI


def run_totals(db: Database, run_id: int) -> RunTotals:
    """Calls ok and failed, verdicts and tokens of a lab run, over all its invocations."""
    ok, failed = db.run(
        select(
            func.count(case((_call.status == "ok", 1))), func.count(case((_call.status == "failed", 1)))
        ).where(_call.run_id == run_id)
    ).one()
    judged = db.run(select(func.count()).where(judge_verdicts.c.run_id == run_id)).scalar_one()
    tok = db.run(
        select(_lab.prompt_tokens, _lab.completion_tokens, _lab.total_tokens).where(_lab.run_id == run_id)
    ).first() or (None, None, None)
    return RunTotals(ok, failed, judged, *tok)


def lab_runs(db: Database) -> list[JudgeRun]:
    """Every lab run, oldest first, including one whose calls all failed so far.

    `store.judge_runs` leaves such a run out (nothing to show or compare); the lab lists it
    so that its failed calls can be inspected and the run resumed.
    """
    return [JudgeRun(*r) for r in db.run(_RUN.where(_r.origin == LAB_ORIGIN).order_by(_r.id))]


def lab_run_overview(db: Database) -> list[dict[str, Any]]:
    """One row per lab run, newest first: its counts, tokens and endpoint."""
    rows = []
    for run in reversed(lab_runs(db)):
        t = run_totals(db, run.id)
        base_url, scope, started, finished = db.run(
            select(_lab.base_url, _lab.scope, _lab.started_at, _lab.finished_at).where(_lab.run_id == run.id)
        ).one()
        rows.append(
            {
                "run": run.name,
                "answers ok": t.answers_ok,
                "answers failed": t.answers_failed,
                "claims judged": t.claims_judged,
                "tokens": t.total_tokens,
                "scope": scope,
                "endpoint": base_url,
                "started": started,
                "finished": finished,
            }
        )
    return rows


def call_answer_ids(db: Database, run_id: int, *, failed_only: bool = False) -> list[str]:
    """Answers the run has a stored call for (only the failed ones, if asked), by id."""
    query = select(_call.answer_id).where(_call.run_id == run_id)
    if failed_only:
        query = query.where(_call.status == "failed")
    return list(db.run(query.order_by(_call.answer_id)).scalars())


def get_call(db: Database, run_id: int, answer_id: str) -> dict[str, Any] | None:
    """The stored call: the prompt exactly as sent, the raw reply, every round and attempt."""
    row = (
        db.run(select(judge_calls).where(_call.run_id == run_id, _call.answer_id == answer_id))
        .mappings()
        .first()
    )
    if row is None:
        return None
    call = dict(row)
    call["exchanges"] = json.loads(call["exchanges"])
    return call


# ---------------------------------------------------------------- baselines


def cycle_names(db: Database) -> list[str]:
    """Names of the cycles, newest first: the scopes a comparison can be limited to."""
    return list(db.run(select(cycles.c.name).order_by(cycles.c.id.desc())).scalars())


# ---------------------------------------------------------------- revisions and few-shot examples


def revised_run_id(db: Database, run_id: int) -> int | None:
    """The run a lab run revises (its default baseline), when recorded."""
    rv = judge_lab_revisions.c
    found = db.run(select(rv.revises_run_id).where(rv.run_id == run_id)).scalar()
    return None if found is None else int(found)


def set_revised_run(db: Database, run_id: int, revises_run_id: int) -> None:
    """Record (once) which run a lab run revises; a resumed run keeps its first record."""
    with write(db):
        db.run(
            upsert(db.dialect, judge_lab_revisions)
            .values(run_id=run_id, revises_run_id=revises_run_id)
            .on_conflict_do_nothing(index_elements=[judge_lab_revisions.c.run_id])
        )


@dataclass(frozen=True, slots=True)
class ExampleRecord:
    """One few-shot example a lab run's prompts carried."""

    claim_pk: int
    kind: str
    text: str


def record_examples(db: Database, run_id: int, examples: Sequence[ExampleRecord]) -> None:
    """Store the examples of a new lab run (a run's examples never change: a resume reuses them)."""
    with write(db):
        if db.run(select(ONE).where(judge_lab_examples.c.run_id == run_id).limit(ONE)).first():
            return
        if examples:
            db.run(  # a second process storing them at the same moment stores nothing more
                upsert(db.dialect, judge_lab_examples).on_conflict_do_nothing(),
                [
                    {"run_id": run_id, "position": i, "claim_pk": e.claim_pk, "kind": e.kind, "text": e.text}
                    for i, e in enumerate(examples)
                ],
            )


def run_examples(db: Database, run_id: int) -> list[ExampleRecord]:
    """The examples stored with a lab run, in prompt order."""
    x = judge_lab_examples.c
    return [
        ExampleRecord(int(pk), kind, text)
        for pk, kind, text in db.run(
            select(x.claim_pk, x.kind, x.text).where(x.run_id == run_id).order_by(x.position)
        )
    ]


@dataclass(frozen=True, slots=True)
class ExampleMaterial:
    """What an example shows of one labeled claim: its answer's question and chunks, the claim,
    reviewers' notes and the chunks they (or the judge) cited."""

    claim_pk: int
    answer_id: str
    question: str
    claim: str
    chunks: tuple[tuple[str, str], ...]  # (chunk id, text), stored order
    cited: tuple[str, ...]  # chunk ids cited by reviewers, else by the judge run
    notes: tuple[str, ...]  # reviewers' notes, non-empty ones


def example_material(db: Database, run_id: int, claim_pks: Sequence[int]) -> list[ExampleMaterial]:
    """The material of each claim in `claim_pks` (in that order) for few-shot examples."""
    out = []
    c, a, v, k, h = claims.c, answers.c, judge_verdicts.c, chunks.c, human_labels.c
    joined = claims.join(answers, a.id == c.answer_id).outerjoin(
        judge_verdicts, and_(v.claim_pk == c.id, v.run_id == run_id)
    )
    for pk in claim_pks:
        row = db.run(
            select(c.answer_id, a.question, c.text, v.evidence).select_from(joined).where(c.id == pk)
        ).first()
        if row is None:
            continue
        aid, question, text, judge_ev = row
        shown = tuple(
            (r[0], r[1])
            for r in db.run(select(k.chunk_id, k.text).where(k.answer_id == aid).order_by(k.position))
        )
        notes, cited = [], []
        for note, evidence in db.run(
            select(h.note, h.evidence).where(h.claim_pk == pk, h.status == "labeled").order_by(h.reviewer)
        ):
            if note and note.strip():
                notes.append(note.strip())
            cited += json.loads(evidence or "[]")
        if not cited:
            cited = json.loads(judge_ev or "[]")
        out.append(
            ExampleMaterial(int(pk), aid, question, text, shown, tuple(dict.fromkeys(cited)), tuple(notes))
        )
    return out


def call_sizes(db: Database, run_id: int, answer_ids: Sequence[str]) -> dict[str, tuple[str, int, int]]:
    """answer id -> (status, prompt characters, reply characters) without loading the texts:
    the page lists calls by these and loads one call only when asked."""
    out: dict[str, tuple[str, int, int]] = {}
    for batch in batches(answer_ids):
        for aid, status, lp, lr in db.run(
            select(
                _call.answer_id,
                _call.status,
                func.length(_call.prompt),
                func.coalesce(func.length(_call.response), 0),
            ).where(_call.run_id == run_id, _call.answer_id.in_(batch))
        ):
            out[aid] = (status, int(lp), int(lr))
    return out


def labeled_claim_counts(db: Database) -> dict[int, int]:
    """Per judge run: how many of the claims it judged carry a human label."""
    v = judge_verdicts.c
    found = db.run(select(v.run_id, func.count()).where(human_labeled(db, v.claim_pk)).group_by(v.run_id))
    return {int(r): int(n) for r, n in found}


def claim_answer_ids(db: Database, claim_pks: Sequence[int]) -> dict[int, str]:
    """claim pk -> its answer id."""
    out: dict[int, str] = {}
    for pk in claim_pks:
        found = db.run(select(claims.c.answer_id).where(claims.c.id == pk)).scalar()
        if found is not None:
            out[int(pk)] = found
    return out
