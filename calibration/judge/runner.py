"""Running the judge: one answer per call, many answers concurrently, and lab runs in the store.

`judge_answer` and `judge_items` need no database: a call, one corrective round for a bad
reply, results handed to a callback. `run_lab` makes (or resumes) a lab run: a judge run with
origin 'lab', one stored call per answer, committed as each answer is judged.

Why asyncio rather than threads: one event loop keeps N requests in flight without a
thread each; cancellation (Ctrl-C, Streamlit's stop button) reaches the requests that are
in flight; `asyncio.timeout` gives each request a hard wall-clock deadline; and the
progress callback runs on the caller's own thread, which Streamlit requires of `st.*`
calls. SQLite writes are blocking, so they go to one writer thread (an executor).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
from sqlite_utils import Database

from .. import store
from ..errors import CallFailed, EndpointRejected, EndpointUnreachable, InputError, JudgeError, ReplyError
from ..store import lab as lab_store
from ..store.lab import RunTotals
from .client import ChatClient, JudgeConfig, Usage
from .compare import LabComparison, compare_runs, default_baseline
from .prompts import AnswerInput, ChunkText, ClaimText, PromptTemplate, render_prompt
from .replies import ClaimVerdict, correction_message, parse_reply


@dataclass(slots=True)
class AnswerResult:
    """One answer's outcome: ok with a verdict per claim, or failed with the error; every
    round and HTTP attempt in `exchanges`."""

    answer_id: str
    status: Literal["ok", "failed"]
    prompt: str
    response: str | None
    exchanges: list[dict[str, Any]]
    attempts: int
    error: str | None
    usage: Usage
    latency_ms: float
    verdicts: list[ClaimVerdict] = field(default_factory=list)


async def judge_answer(client: ChatClient, template: PromptTemplate | str,
                       item: AnswerInput) -> AnswerResult:
    """Judge one answer's fixed claims: a call, and one corrective call if the reply is bad.

    A bad second reply, or a request that fails for good, is a failed result with no
    verdicts. EndpointRejected and EndpointUnreachable propagate: they are the run's problem,
    not this answer's.
    """
    t0 = time.perf_counter()
    prompt = render_prompt(template, item)
    claim_ids = [c.claim_id for c in item.claims]
    chunk_ids = [c.chunk_id for c in item.chunks]
    messages: list[dict[str, str]] = [{"role": "user", "content": prompt}]
    exchanges: list[dict[str, Any]] = []
    usage = Usage()
    attempts = 0
    response: str | None = None

    def result(status: Literal["ok", "failed"], error: str | None,
               verdicts: list[ClaimVerdict] | None = None) -> AnswerResult:
        return AnswerResult(item.answer_id, status, prompt, response, exchanges, attempts, error,
                            usage, round((time.perf_counter() - t0) * 1000, 1), verdicts or [])

    for round_no in (1, 2):
        sent = messages[-1]["content"] if round_no > 1 else None
        try:
            comp = await client.complete(messages)
        except CallFailed as exc:
            attempts += exc.attempts
            exchanges.append({"round": round_no, "sent": sent, "http": exc.log, "error": str(exc)})
            return result("failed", str(exc))
        attempts += comp.attempts
        usage.add(comp.usage)
        response = comp.content
        entry: dict[str, Any] = {"round": round_no, "sent": sent, "http": comp.log,
                                 "response": comp.content, "finish_reason": comp.finish_reason}
        exchanges.append(entry)
        try:
            verdicts = parse_reply(comp.content, claim_ids, chunk_ids)
        except ReplyError as exc:
            entry["error"] = str(exc)
            if round_no == 1:
                messages += [{"role": "assistant", "content": comp.content or ""},
                             {"role": "user", "content": correction_message(exc)}]
                continue
            return result("failed", f"invalid reply after a corrective retry: {exc}")
        return result("ok", None, verdicts)
    raise AssertionError("unreachable")


async def judge_items(client: ChatClient, template: PromptTemplate | str, items: Iterable[AnswerInput],
                      on_result: Callable[[AnswerInput, AnswerResult], Awaitable[None]]) -> None:
    """Judge every item with `client.config.concurrency` workers, awaiting `on_result` for each.

    Workers pull from one iterator, so prompts are rendered only when a slot frees up. An
    exception from a worker or from `on_result` (including Streamlit's stop, a
    BaseException) cancels the rest and is re-raised; results already handed over stay.
    """
    it = iter(items)

    async def worker() -> None:
        for item in it:
            res = await judge_answer(client, template, item)
            await on_result(item, res)

    tasks = [asyncio.create_task(worker()) for _ in range(client.config.concurrency)]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for t in done:
        if not t.cancelled() and (exc := t.exception()) is not None:
            raise exc



# ---------------------------------------------------------------- lab runs


@dataclass(frozen=True, slots=True)
class LabScope:
    """Which answers a lab run judges: those with a human-labeled claim, a cycle's, or all."""

    kind: Literal["labeled", "cycle", "all"]
    cycle: str | None = None

    def __str__(self) -> str:
        return f"cycle:{self.cycle}" if self.kind == "cycle" else self.kind


def parse_scope(text: str) -> LabScope:
    """'labeled', 'all' or 'cycle:NAME' as a LabScope; InputError otherwise."""
    text = text.strip()
    if text == "labeled":
        return LabScope("labeled")
    if text == "all":
        return LabScope("all")
    if text.startswith("cycle:") and text[6:].strip():
        return LabScope("cycle", text[6:].strip())
    raise InputError(f"scope {text!r}: use labeled, all or cycle:NAME")


def scope_answer_ids(db: Database, scope: LabScope) -> list[str]:
    """Answers in scope that have claims. Each answer is judged on all its claims: a call
    is keyed by answer, so its prompt must not depend on which scope asked for it."""
    if scope.kind == "cycle" and scope.cycle is not None:
        return lab_store.scope_answer_ids(db, cycle_id=store.cycle_id(db, scope.cycle))
    return lab_store.scope_answer_ids(db, labeled_only=scope.kind == "labeled")


def load_inputs(db: Database, answer_ids: Sequence[str]) -> list[AnswerInput]:
    """What the judge is shown for each answer, as stored."""
    return [AnswerInput(a.answer_id, a.question, a.answer, tuple(ChunkText(*c) for c in a.chunks),
                        tuple(ClaimText(*c) for c in a.claims))
            for a in lab_store.answer_texts(db, answer_ids)]


def call_record(item: AnswerInput, res: AnswerResult) -> lab_store.CallRecord:
    """An answer's result as the store keeps it: claim ids resolved to their stored claims."""
    pks = {c.claim_id: c.claim_pk for c in item.claims}
    u = res.usage
    return lab_store.CallRecord(
        answer_id=item.answer_id, status=res.status, prompt=res.prompt, response=res.response,
        exchanges=res.exchanges, attempts=res.attempts, error=res.error,
        prompt_tokens=u.prompt_tokens, completion_tokens=u.completion_tokens,
        total_tokens=u.total_tokens, latency_ms=res.latency_ms,
        verdicts=tuple(lab_store.VerdictRecord(pks[v.claim_id], v.verdict.value, v.raw_verdict,
                                               v.rationale, v.evidence) for v in res.verdicts))


@dataclass(frozen=True, slots=True)
class LabProgress:
    """Handed to the progress callback after each answer is stored."""

    done: int
    total: int
    ok: int
    failed: int
    claims: int
    tokens: int | None
    elapsed_s: float

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


@dataclass(frozen=True, slots=True)
class LabSummary:
    """What one invocation of `run_lab` did, and where the whole run stands."""

    run: store.JudgeRun
    resumed: bool
    scope: str
    answers_in_scope: int
    answers_skipped: int  # already judged ok by an earlier invocation: not requested again
    answers_ok: int
    answers_failed: int
    claims_judged: int
    usage: Usage  # this invocation
    totals: RunTotals  # the whole run
    elapsed_s: float
    failures: list[tuple[str, str]]  # (answer id, error) of this invocation
    baseline: store.JudgeRun | None = None  # None: the run has no verdicts, or no run shares any
    comparison: LabComparison | None = None  # None: no claim judged by both and labeled


def failure_groups(failures: Sequence[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """(error, sorted answer ids) with the answers that failed alike grouped, most frequent
    first: a hundred answers failing with one error is one line, not a hundred."""
    groups: dict[str, list[str]] = {}
    for aid, err in failures:
        groups.setdefault(err, []).append(aid)
    return sorted(((err, sorted(aids)) for err, aids in groups.items()), key=lambda g: -len(g[1]))


class _Invocation:
    """The state of one `arun_lab` call while its answers are judged and stored.

    The writer thread owns one connection for the whole invocation: connections are never
    shared between threads (the store's rule), and reopening one per answer is what costs:
    closing the last connection of a WAL database checkpoints it (milliseconds per answer).
    `write` and `close` run on that thread only; `on_result` runs on the event loop.
    """

    def __init__(self, db_path: Path, config: JudgeConfig, template: PromptTemplate, scope: LabScope,
                 total: int, progress: Callable[[LabProgress], None] | None, t0: float) -> None:
        self.db_path, self.config, self.template, self.scope = db_path, config, template, scope
        self.total = total
        self.progress = progress
        self.t0 = t0
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge-writer")
        self.writer_db: Database | None = None
        self.run: store.JudgeRun | None = None  # set once the first result is stored
        self.stored = 0  # answers stored by this invocation, counted by the writer itself
        self.usage = Usage()
        self.ok = self.failed = self.claims = 0
        self.failures: list[tuple[str, str]] = []

    def write(self, item: AnswerInput, res: AnswerResult) -> int:
        if self.writer_db is None:
            self.writer_db = store.connect(self.db_path)
        db = self.writer_db
        with store.write(db):  # the run is created in the transaction storing its first call
            if self.run is None:
                cfg, tpl = self.config, self.template
                self.run = lab_store.open_lab_run(
                    db, model=cfg.model, version=tpl.version, template=tpl.text,
                    template_sha256=tpl.sha256, base_url=cfg.base_url, params=cfg.params(),
                    scope=str(self.scope))[0]
            written = lab_store.record_call(db, self.run.id, call_record(item, res))
        self.stored += 1
        return written

    def close(self) -> None:
        if self.writer_db is not None:
            self.writer_db.conn.close()

    def report(self) -> None:
        if self.progress is not None:
            self.progress(LabProgress(self.ok + self.failed, self.total, self.ok, self.failed,
                                      self.claims, self.usage.total_tokens, time.perf_counter() - self.t0))

    async def on_result(self, item: AnswerInput, res: AnswerResult) -> None:
        loop = asyncio.get_running_loop()
        written = await loop.run_in_executor(self.writer, self.write, item, res)
        self.usage.add(res.usage)
        if res.status == "ok":
            self.ok += 1
        else:
            self.failed += 1
        self.claims += written
        if res.error:
            self.failures.append((item.answer_id, res.error))
        self.report()

    def shutdown(self) -> None:
        # Waits for a write already handed over, so an interrupted run keeps it.
        self.writer.submit(self.close)
        self.writer.shutdown(wait=True)


async def arun_lab(config: JudgeConfig, template: PromptTemplate, *, scope: LabScope | str = "labeled",
                   db_path: str | Path | None = None,
                   progress: Callable[[LabProgress], None] | None = None,
                   baseline: str | None = None,
                   transport: httpx.AsyncBaseTransport | None = None) -> LabSummary:
    """Run (or resume) the lab run MODEL@VERSION over the answers in scope.

    Answers that already have an ok call in this run are not requested again; failed ones
    are. Each answer is committed as soon as it is judged, so an interruption loses at most
    the calls in flight. `progress` runs on the caller's thread after each answer; an
    exception from it stops the run (that is how a UI cancels).

    An endpoint that cannot be reached (EndpointUnreachable, after a short retry) or that
    refuses the requests (EndpointRejected) stops the whole run; what was stored stays. The
    run is created only when its first result is stored, so a run stopped before that leaves
    no empty judge run behind. The comparison (default baseline: `default_baseline`) is made
    only when the run has verdicts.
    """
    t0 = time.perf_counter()
    scope = parse_scope(scope) if isinstance(scope, str) else scope
    db_path = Path(db_path) if db_path is not None else store.default_db_path()
    with store.session(db_path) as db:
        # Checked before any request, so a typo in the scope or a taken name costs nothing.
        answer_ids = scope_answer_ids(db, scope)
        if not answer_ids:
            hint = " (no claim has a human label yet)" if scope.kind == "labeled" else ""
            raise InputError(f"scope {scope} holds no answers with claims{hint}; nothing to judge")
        base_run = store.find_judge_run(db, baseline) if baseline else None
        existing = lab_store.find_lab_run(db, config.model, template.version, template.sha256)
        if base_run is not None and existing is not None and base_run.id == existing.id:
            raise InputError(f"the baseline {baseline!r} is the run itself; name another run")
        done_before = lab_store.ok_answer_ids(db, existing.id) if existing is not None else set()
        pending = [a for a in answer_ids if a not in done_before]
        items = load_inputs(db, pending)

    state = _Invocation(db_path, config, template, scope, len(items), progress, t0)
    state.report()
    stop: EndpointUnreachable | EndpointRejected | None = None
    try:
        if items:
            async with ChatClient(config, transport=transport) as client:
                await judge_items(client, template, items, state.on_result)
    except (EndpointUnreachable, EndpointRejected) as exc:
        stop = exc
        raise
    finally:
        state.shutdown()
        if stop is not None:  # counted only now: the last write may still have been under way
            stop.answers_stored = state.stored

    run = state.run or existing
    if run is None:  # not reached: a new run has pending answers, and each stores a result
        raise JudgeError("no answer was judged")
    with store.session(db_path) as db:
        lab_store.finish_lab_run(db, run.id)
        totals = lab_store.run_totals(db, run.id)
        comparison = None
        if totals.claims_judged == 0:
            base_run = None  # every call failed: there is nothing to compare
        else:
            cycle = scope.cycle if scope.kind == "cycle" else None
            if base_run is None:
                base_run = default_baseline(db, run, cycle)
            if base_run is not None and base_run.id != run.id:
                comparison = compare_runs(db, run, base_run, cycle)
    return LabSummary(run, existing is not None, str(scope), len(answer_ids),
                      len(answer_ids) - len(pending), state.ok, state.failed, state.claims, state.usage,
                      totals, time.perf_counter() - t0, state.failures, base_run, comparison)


def run_lab(config: JudgeConfig, template: PromptTemplate, **kwargs: Any) -> LabSummary:
    """Blocking `arun_lab` for the CLI and Streamlit (whose script thread has no event loop)."""
    return asyncio.run(arun_lab(config, template, **kwargs))


@dataclass(frozen=True, slots=True)
class RunPlan:
    """What a run over a scope would request, before anything is sent."""

    answers: int  # answers in scope
    claims: int  # their claims (each answer is judged on all of them)
    already_ok: int  # answers the run MODEL@VERSION has judged already: not requested again


def plan_run(db: Database, model: str, version: str, scope: LabScope | str = "labeled") -> RunPlan:
    """How many answers and claims the run MODEL@VERSION would judge over `scope`."""
    scope = parse_scope(scope) if isinstance(scope, str) else scope
    ids = scope_answer_ids(db, scope)
    claims = lab_store.claim_count(db, ids) if ids else 0
    found = store.run_id(db, model, version, create=False)
    done = len(lab_store.ok_answer_ids(db, found) & set(ids)) if found is not None else 0
    return RunPlan(len(ids), claims, done)
