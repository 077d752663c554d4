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

from ..errors import ConflictError
from .claims import human_labeled_sql
from .connection import now, write
from .database import Database
from .runs import JudgeRun, run_id

LAB_ORIGIN = "lab"

_RUN_COLUMNS = "id, judge_model, prompt_version, origin, created_at"


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
    if cycle_id is not None:
        sql = """SELECT ca.answer_id FROM cycle_answers ca WHERE ca.cycle_id = ?
                 AND EXISTS (SELECT 1 FROM claims c WHERE c.answer_id = ca.answer_id)
                 ORDER BY ca.position"""
        return [r[0] for r in db.execute(sql, [cycle_id])]
    if labeled_only:
        sql = """SELECT DISTINCT c.answer_id FROM claims c
                 JOIN human_labels h ON h.claim_pk = c.id AND h.status = 'labeled'
                 ORDER BY c.answer_id"""
        return [r[0] for r in db.execute(sql)]
    return [r[0] for r in db.execute("SELECT DISTINCT answer_id FROM claims ORDER BY answer_id")]


def claim_count(db: Database, answer_ids: Sequence[str]) -> int:
    """How many claims the given answers have."""
    total = 0
    for start in range(0, len(answer_ids), 500):  # below SQLite's bound on host parameters
        batch = list(answer_ids[start : start + 500])
        marks = ",".join("?" * len(batch))
        total += db.execute(f"SELECT count(*) FROM claims WHERE answer_id IN ({marks})", batch).fetchone()[0]
    return total


def answer_texts(db: Database, answer_ids: Sequence[str]) -> list[AnswerText]:
    """The stored question, answer, chunks and claims of each answer, in `answer_ids` order."""
    out = []
    for aid in answer_ids:
        question, answer = db.execute("SELECT question, answer FROM answers WHERE id = ?", [aid]).fetchone()
        chunks = tuple(
            (r[0], r[1], r[2])
            for r in db.execute(
                "SELECT chunk_id, text, source FROM chunks WHERE answer_id = ? ORDER BY position", [aid]
            )
        )
        claims = tuple(
            (r[0], r[1], r[2])
            for r in db.execute(
                "SELECT id, claim_id, text FROM claims WHERE answer_id = ? ORDER BY position, id", [aid]
            )
        )
        out.append(AnswerText(aid, question, answer, chunks, claims))
    return out


# ---------------------------------------------------------------- lab runs


def _run(db: Database, run_id: int) -> JudgeRun:
    row = db.execute(f"SELECT {_RUN_COLUMNS} FROM judge_runs WHERE id = ?", [run_id]).fetchone()
    return JudgeRun(*row)


def resumable_run_id(db: Database, model: str, version: str, template_sha256: str) -> int | None:
    """The id of the lab run MODEL@VERSION if it exists and may be resumed with this template;
    None if there is no such run; ConflictError if the name is taken otherwise.

    A version name stands for one template text: resuming with an edited template would
    mix two prompts in one run, so it is refused.
    """
    found = run_id(db, model, version, create=False)
    if found is None:
        return None
    origin = db.execute("SELECT origin FROM judge_runs WHERE id = ?", [found]).fetchone()[0]
    lab = db.execute("SELECT template_sha256 FROM judge_lab_runs WHERE run_id = ?", [found]).fetchone()
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
            db.execute(
                "UPDATE judge_lab_runs SET base_url = ?, params = ?, scope = ?, "
                "finished_at = NULL WHERE run_id = ?",
                [base_url, json.dumps(params), scope, found],
            )
            return _run(db, found), True
        ts = now()
        new = run_id(db, model, version, origin=LAB_ORIGIN, created_at=ts)
        if new is None:  # not reached: create=True always gives an id
            raise AssertionError("run_id returned no id")
        db.execute(
            """INSERT INTO judge_lab_runs (run_id, template, template_sha256, base_url,
                      params, scope, started_at) VALUES (?, ?, ?, ?, ?, ?, ?)""",
            [new, template, template_sha256, base_url, json.dumps(params), scope, ts],
        )
        return _run(db, new), False


def finish_lab_run(db: Database, run_id: int) -> None:
    """Mark the run finished (an invocation went through all its answers)."""
    with write(db):
        db.execute("UPDATE judge_lab_runs SET finished_at = ? WHERE run_id = ?", [now(), run_id])


def ok_answer_ids(db: Database, run_id: int) -> set[str]:
    """Answers the run has judged successfully: a resume does not request them again."""
    return {
        r[0]
        for r in db.execute("SELECT answer_id FROM judge_calls WHERE run_id = ? AND status = 'ok'", [run_id])
    }


def record_call(db: Database, run_id: int, call: CallRecord) -> int:
    """Store one answer's call and, if ok, its verdicts, in one transaction; returns the
    number of verdicts written (0 when another process had already stored an ok call)."""
    with write(db):
        # Never downgrade: if another process already stored an ok call, keep it.
        cur = db.execute(
            """INSERT INTO judge_calls (run_id, answer_id, status, prompt, response, exchanges,
                   attempts, error, prompt_tokens, completion_tokens, total_tokens, latency_ms,
                   created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)
               ON CONFLICT (run_id, answer_id) DO UPDATE SET status = excluded.status,
                   prompt = excluded.prompt, response = excluded.response,
                   exchanges = excluded.exchanges, attempts = excluded.attempts,
                   error = excluded.error, prompt_tokens = excluded.prompt_tokens,
                   completion_tokens = excluded.completion_tokens,
                   total_tokens = excluded.total_tokens, latency_ms = excluded.latency_ms,
                   created_at = excluded.created_at
               WHERE judge_calls.status != 'ok'""",
            [
                run_id,
                call.answer_id,
                call.status,
                call.prompt,
                call.response,
                json.dumps(call.exchanges, ensure_ascii=False),
                call.attempts,
                call.error,
                call.prompt_tokens,
                call.completion_tokens,
                call.total_tokens,
                call.latency_ms,
                now(),
            ],
        )
        # Every call was paid for, a failed one too: its tokens count towards the run.
        db.execute(
            # A call without a count leaves the total as it was (the sum with NULL is NULL).
            """UPDATE judge_lab_runs SET
                 prompt_tokens = coalesce(coalesce(prompt_tokens, 0) + ?1, prompt_tokens),
                 completion_tokens = coalesce(coalesce(completion_tokens, 0) + ?2, completion_tokens),
                 total_tokens = coalesce(coalesce(total_tokens, 0) + ?3, total_tokens)
               WHERE run_id = ?4""",
            [call.prompt_tokens, call.completion_tokens, call.total_tokens, run_id],
        )
        if call.status != "ok" or cur.rowcount == 0:
            return 0
        db.executemany(
            """INSERT INTO judge_verdicts (run_id, claim_pk, verdict, raw_verdict, rationale,
                   evidence) VALUES (?,?,?,?,?,?)
               ON CONFLICT (run_id, claim_pk) DO UPDATE SET verdict = excluded.verdict,
                   raw_verdict = excluded.raw_verdict, rationale = excluded.rationale,
                   evidence = excluded.evidence""",
            [
                (
                    run_id,
                    v.claim_pk,
                    v.verdict,
                    v.raw_verdict,
                    v.rationale,
                    json.dumps(list(v.evidence), ensure_ascii=False),
                )
                for v in call.verdicts
            ],
        )
        return len(call.verdicts)


# ---------------------------------------------------------------- reads for the UI


def run_totals(db: Database, run_id: int) -> RunTotals:
    """Calls ok and failed, verdicts and tokens of a lab run, over all its invocations."""
    ok, failed = db.execute(
        "SELECT count(CASE WHEN status = 'ok' THEN 1 END), count(CASE WHEN status = 'failed' "
        "THEN 1 END) FROM judge_calls WHERE run_id = ?",
        [run_id],
    ).fetchone()
    claims = db.execute("SELECT count(*) FROM judge_verdicts WHERE run_id = ?", [run_id]).fetchone()[0]
    tok = db.execute(
        "SELECT prompt_tokens, completion_tokens, total_tokens FROM judge_lab_runs WHERE run_id = ?", [run_id]
    ).fetchone() or (None, None, None)
    return RunTotals(ok, failed, claims, *tok)


def lab_runs(db: Database) -> list[JudgeRun]:
    """Every lab run, oldest first, including one whose calls all failed so far.

    `store.judge_runs` leaves such a run out (nothing to show or compare); the lab lists it
    so that its failed calls can be inspected and the run resumed.
    """
    rows = db.execute(
        f"SELECT {_RUN_COLUMNS} FROM judge_runs WHERE origin = ? ORDER BY id", [LAB_ORIGIN]
    ).fetchall()
    return [JudgeRun(*r) for r in rows]


def lab_run_overview(db: Database) -> list[dict[str, Any]]:
    """One row per lab run, newest first: its counts, tokens and endpoint."""
    rows = []
    for run in reversed(lab_runs(db)):
        t = run_totals(db, run.id)
        base_url, scope, started, finished = db.execute(
            "SELECT base_url, scope, started_at, finished_at FROM judge_lab_runs WHERE run_id = ?", [run.id]
        ).fetchone()
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
    sql = "SELECT answer_id FROM judge_calls WHERE run_id = ?"
    if failed_only:
        sql += " AND status = 'failed'"
    return [r[0] for r in db.execute(sql + " ORDER BY answer_id", [run_id])]


def get_call(db: Database, run_id: int, answer_id: str) -> dict[str, Any] | None:
    """The stored call: the prompt exactly as sent, the raw reply, every round and attempt."""
    rows = list(db.query("SELECT * FROM judge_calls WHERE run_id = ? AND answer_id = ?", [run_id, answer_id]))
    if not rows:
        return None
    call = rows[0]
    call["exchanges"] = json.loads(call["exchanges"])
    return call


# ---------------------------------------------------------------- baselines


def cycle_names(db: Database) -> list[str]:
    """Names of the cycles, newest first: the scopes a comparison can be limited to."""
    return [r[0] for r in db.execute("SELECT name FROM cycles ORDER BY id DESC")]


def cycle_judge_run_id(db: Database, cycle_id: int) -> int:
    """The judge run a cycle was sampled from."""
    return int(db.execute("SELECT judge_run_id FROM cycles WHERE id = ?", [cycle_id]).fetchone()[0])


# ---------------------------------------------------------------- revisions and few-shot examples


def revised_run_id(db: Database, run_id: int) -> int | None:
    """The run a lab run revises (its default baseline), when recorded."""
    row = db.execute("SELECT revises_run_id FROM judge_lab_revisions WHERE run_id = ?", [run_id]).fetchone()
    return None if row is None else int(row[0])


def set_revised_run(db: Database, run_id: int, revises_run_id: int) -> None:
    """Record (once) which run a lab run revises; a resumed run keeps its first record."""
    with write(db):
        db.execute(
            "INSERT INTO judge_lab_revisions (run_id, revises_run_id) VALUES (?, ?) "
            "ON CONFLICT (run_id) DO NOTHING",
            [run_id, revises_run_id],
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
        if db.execute("SELECT 1 FROM judge_lab_examples WHERE run_id = ? LIMIT 1", [run_id]).fetchone():
            return
        db.executemany(
            "INSERT INTO judge_lab_examples (run_id, position, claim_pk, kind, text) VALUES (?, ?, ?, ?, ?)",
            [(run_id, i, e.claim_pk, e.kind, e.text) for i, e in enumerate(examples)],
        )


def run_examples(db: Database, run_id: int) -> list[ExampleRecord]:
    """The examples stored with a lab run, in prompt order."""
    return [
        ExampleRecord(int(pk), kind, text)
        for pk, kind, text in db.execute(
            "SELECT claim_pk, kind, text FROM judge_lab_examples WHERE run_id = ? ORDER BY position", [run_id]
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
    for pk in claim_pks:
        row = db.execute(
            """SELECT c.answer_id, a.question, c.text, v.evidence FROM claims c
                            JOIN answers a ON a.id = c.answer_id
                            LEFT JOIN judge_verdicts v ON v.claim_pk = c.id AND v.run_id = ?
                            WHERE c.id = ?""",
            [run_id, pk],
        ).fetchone()
        if row is None:
            continue
        aid, question, text, judge_ev = row
        chunks = tuple(
            (r[0], r[1])
            for r in db.execute(
                "SELECT chunk_id, text FROM chunks WHERE answer_id = ? ORDER BY position", [aid]
            )
        )
        notes, cited = [], []
        for note, evidence in db.execute(
            "SELECT note, evidence FROM human_labels WHERE claim_pk = ? AND status = 'labeled' "
            "ORDER BY reviewer",
            [pk],
        ):
            if note and note.strip():
                notes.append(note.strip())
            cited += json.loads(evidence or "[]")
        if not cited:
            cited = json.loads(judge_ev or "[]")
        out.append(
            ExampleMaterial(int(pk), aid, question, text, chunks, tuple(dict.fromkeys(cited)), tuple(notes))
        )
    return out


def call_sizes(db: Database, run_id: int, answer_ids: Sequence[str]) -> dict[str, tuple[str, int, int]]:
    """answer id -> (status, prompt characters, reply characters) without loading the texts:
    the page lists calls by these and loads one call only when asked."""
    out: dict[str, tuple[str, int, int]] = {}
    for start in range(0, len(answer_ids), 500):
        batch = list(answer_ids[start : start + 500])
        marks = ",".join("?" * len(batch))
        for aid, status, lp, lr in db.execute(
            f"SELECT answer_id, status, length(prompt), coalesce(length(response), 0) FROM judge_calls "
            f"WHERE run_id = ? AND answer_id IN ({marks})",
            [run_id, *batch],
        ):
            out[aid] = (status, int(lp), int(lr))
    return out


def labeled_claim_counts(db: Database) -> dict[int, int]:
    """Per judge run: how many of the claims it judged carry a human label."""
    return {
        int(r): int(n)
        for r, n in db.execute(
            f"SELECT v.run_id, count(*) FROM judge_verdicts v WHERE {human_labeled_sql(db, 'v.claim_pk')} "
            "GROUP BY v.run_id"
        )
    }


def claim_answer_ids(db: Database, claim_pks: Sequence[int]) -> dict[int, str]:
    """claim pk -> its answer id."""
    out: dict[int, str] = {}
    for pk in claim_pks:
        row = db.execute("SELECT answer_id FROM claims WHERE id = ?", [pk]).fetchone()
        if row is not None:
            out[int(pk)] = row[0]
    return out
